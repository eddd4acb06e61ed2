//! `gigagas bench --state rocksdb`: the parallel executor over pre-states stored in RocksDB,
//! with the three BAL-hinted I/O designs, cold and warm, each against the in-memory run of the
//! same blocks in the same process; and the BAL size each design implies.

use crate::{
    bench_args::{BenchArgs, BenchError},
    util::{bar, median, pool, recover_all},
};
use alloy_eip7928::AccountChanges;
use alloy_primitives::{Address, B256, U256};
use alloy_rlp::Encodable;
use gigagas_executor::{
    compare_outcomes,
    parallel::{execute_parallel, ParallelBlock, ParallelConfig},
    sequential::execute_sequential,
    validate_header, BlockOutcome, Scheduler,
};
use gigagas_primitives::ChainSpec;
use gigagas_state::{mainnet, PreState};
use gigagas_storage::{AccountRecord, BlockWriter, MetadataProvider, StateWriter, Storage};
use rayon::prelude::*;
use revm::{state::AccountInfo, DatabaseRef};
use serde::Serialize;
use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::Instant,
};

/// Keys and pre-block values a block's BAL names.
pub(crate) struct BlockKeys {
    pub(crate) accounts: Vec<Address>,
    pub(crate) slots: Vec<(Address, U256)>,
}

pub(crate) fn keys(bal: &[AccountChanges]) -> BlockKeys {
    let accounts = bal.iter().map(|a| a.address).collect();
    let slots = gigagas_bal::storage_keys(bal).collect();
    BlockKeys { accounts, slots }
}

/// RLP size (bytes) of a block's BAL in each design.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct BalSizes {
    number: u64,
    /// Writes and read keys, pre-block values of every account and slot listed.
    pub(crate) full: usize,
    /// EIP-7928 as specified: writes and read keys.
    pub(crate) batch: usize,
    /// Writes only (no storage reads, no read-only accounts).
    pub(crate) parallel: usize,
}

fn list_len(payload: usize) -> usize {
    alloy_rlp::length_of_length(payload) + payload
}

pub(crate) fn bal_sizes(number: u64, bal: &Vec<AccountChanges>, pre: &PreState) -> BalSizes {
    let batch = alloy_rlp::encode(bal).len();
    let writes_only: Vec<AccountChanges> = bal
        .iter()
        .filter(|a| {
            !(a.storage_changes.is_empty()
                && a.balance_changes.is_empty()
                && a.nonce_changes.is_empty()
                && a.code_changes.is_empty())
        })
        .map(|a| AccountChanges { storage_reads: Vec::new(), ..a.clone() })
        .collect();
    let parallel = alloy_rlp::encode(&writes_only).len();
    // The read values: per account [address, nonce, balance, code hash, [[slot, value]...]].
    let mut values = 0;
    for a in bal {
        let info = pre.basic_ref(a.address).ok().flatten().unwrap_or_default();
        let slots: usize = a
            .storage_changes
            .iter()
            .map(|s| s.slot)
            .chain(a.storage_reads.iter().copied())
            .map(|slot| {
                let v = pre.slot(&a.address, &slot).unwrap_or_default();
                list_len(slot.length() + v.length())
            })
            .sum();
        let payload = a.address.length()
            + info.nonce.length()
            + info.balance.length()
            + info.code_hash.length()
            + list_len(slots);
        values += list_len(payload);
    }
    BalSizes { number, full: batch + list_len(values), batch, parallel }
}

/// Copies each block's in-memory pre-state into its own RocksDB under `dir` (once: a block whose
/// database is marked loaded is skipped).
fn load_dbs(dir: &Path, data: &[mainnet::MainnetBlock]) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pb = bar(data.len() as u64, "rocksdb");
    let paths = data
        .par_iter()
        .map(|b| {
            let path = dir.join(b.block.number().to_string());
            let store = Storage::open(&path).map_err(|e| e.to_string())?;
            if store.meta(b"loaded").map_err(|e| e.to_string())?.as_deref()
                != Some(b.block.hash.as_slice())
            {
                let mut accounts = Vec::new();
                let mut slots = Vec::new();
                let mut codes = Vec::new();
                for (address, info, storage) in b.pre_state.held_accounts() {
                    let record = AccountRecord {
                        nonce: info.nonce,
                        balance: info.balance,
                        code_hash: info.code_hash,
                    };
                    accounts.push((*address, record));
                    slots.extend(storage.iter().map(|(k, v)| (*address, *k, *v)));
                    if let Some(code) = &info.code {
                        if !code.is_empty() {
                            codes.push((info.code_hash, code.original_bytes()));
                        }
                    }
                }
                let codes: Vec<(B256, &[u8])> = codes.iter().map(|(h, c)| (*h, &c[..])).collect();
                store.write_state(&accounts, &slots, &codes).map_err(|e| e.to_string())?;
                store.flush().map_err(|e| e.to_string())?;
                store.put_meta(b"loaded", b.block.hash.as_slice()).map_err(|e| e.to_string())?;
            }
            pb.inc(1);
            Ok(path)
        })
        .collect();
    pb.finish_and_clear();
    paths
}

fn open_all(paths: &[PathBuf]) -> Result<Vec<Arc<Storage>>, String> {
    paths.iter().map(|p| Storage::open(p).map(Arc::new).map_err(|e| e.to_string())).collect()
}

/// Drops the OS page cache (root only).
pub(crate) fn drop_page_cache() -> Result<(), String> {
    let status = std::process::Command::new("sh")
        .args(["-c", "sync && echo 3 > /proc/sys/vm/drop_caches"])
        .status()
        .map_err(|e| e.to_string())?;
    status.success().then_some(()).ok_or_else(|| "cannot drop the page cache (not root?)".into())
}

#[derive(Debug, Serialize)]
struct IoRun {
    io: String,
    cache: &'static str,
    threads: usize,
    batch: usize,
    gas: u64,
    seconds: f64,
    mgas_per_s: f64,
    /// In-memory run of the same blocks, threads and batch, same process.
    memory_seconds: f64,
    /// `memory_seconds / seconds`.
    ratio_to_memory: f64,
    /// Seconds spent fetching (batch) or seeding (full) before execution, median run.
    io_seconds: f64,
    /// Reads that reached RocksDB, median run.
    db_reads: u64,
    cache_hits: u64,
}

#[derive(Debug, Serialize)]
struct IoReport {
    blocks_validated: usize,
    gas: u64,
    bal_sizes: Vec<BalSizes>,
    runs: Vec<IoRun>,
    failures: Vec<String>,
}

/// Values the "full" design carries with each block: every listed account and slot as it was
/// before the block, and the code of every listed account.
type FullValues = (
    Vec<(Address, Option<AccountInfo>)>,
    Vec<((Address, U256), U256)>,
    Vec<(B256, revm::state::Bytecode)>,
    Vec<(Address, bool)>,
);

fn full_values(store: &Storage, k: &BlockKeys) -> Result<FullValues, String> {
    let accounts = store.accounts(&k.accounts).map_err(|e| e.to_string())?;
    let slots = store.slots(&k.slots).map_err(|e| e.to_string())?;
    let mut codes = Vec::new();
    let accounts: Vec<(Address, Option<AccountInfo>)> = k
        .accounts
        .iter()
        .zip(accounts)
        .map(|(a, r)| {
            let info = r.map(|r| AccountInfo {
                nonce: r.nonce,
                balance: r.balance,
                code_hash: r.code_hash,
                code: None,
                ..Default::default()
            });
            if let Some(i) = &info {
                if i.code_hash != revm::primitives::KECCAK_EMPTY {
                    if let Ok(Some(code)) = store.bytecode(&i.code_hash) {
                        codes.push((i.code_hash, revm::state::Bytecode::new_raw(code.into())));
                    }
                }
            }
            (*a, info)
        })
        .collect();
    // EIP-7610's question (does a codeless, nonce-0 account hold storage?) travels with the
    // values too: the executor asks it of such accounts.
    let mut has_storage = Vec::new();
    for (a, info) in &accounts {
        if info
            .as_ref()
            .is_some_and(|i| i.nonce == 0 && i.code_hash == revm::primitives::KECCAK_EMPTY)
        {
            has_storage.push((*a, store.has_storage(a).map_err(|e| e.to_string())?));
        }
    }
    Ok((accounts, k.slots.iter().copied().zip(slots).collect(), codes, has_storage))
}

pub(crate) fn run(args: BenchArgs) -> Result<ExitCode, BenchError> {
    let chain = ChainSpec::mainnet();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if args.threads.is_empty() { vec![cores] } else { args.threads.clone() };
    let repeat = args.repeat.max(1);
    for io in &args.io {
        if !["full", "batch", "parallel", "prewarm"].contains(&io.as_str()) {
            return Err(BenchError::Args(format!(
                "--io: `{io}` is not full, batch, parallel or prewarm"
            )));
        }
    }
    let only = (!args.blocks.is_empty()).then_some(args.blocks.as_slice());
    let data = mainnet::load(&args.data, only, &|| {})?;
    let hashes = Arc::new(mainnet::load_block_hashes(&args.data.join("block_hashes.json"))?);
    let n = data.len();
    let batches: Vec<usize> = args
        .batch
        .iter()
        .map(|b| {
            if b == "all" {
                Ok(n.max(1))
            } else {
                b.parse().map_err(|_| BenchError::Args(format!("--batch: `{b}`")))
            }
        })
        .collect::<Result<_, _>>()?;
    let gas: u64 = data.iter().map(|b| b.block.header.gas_used).sum();
    let senders =
        recover_all(&pool(cores), &chain, &data).map_err(|e| BenchError::Args(e.to_string()))?;
    let mut failures = Vec::new();
    let reference: Vec<BlockOutcome> = data
        .iter()
        .zip(&senders)
        .map(|(b, s)| {
            let o = execute_sequential(&chain, &b.block, s, &b.pre_state)?;
            validate_header(&chain, &b.block, &o, o.bal.as_deref().unwrap_or_default())?;
            Ok(o)
        })
        .collect::<Result<_, gigagas_executor::ExecutionError>>()
        .map_err(|e| BenchError::Args(format!("sequential reference: {e}")))?;
    let empty = Vec::new();
    let bals: Vec<&Vec<AccountChanges>> =
        reference.iter().map(|r| r.bal.as_ref().unwrap_or(&empty)).collect();
    let sizes: Vec<BalSizes> = data
        .iter()
        .zip(&bals)
        .map(|(b, bal)| bal_sizes(b.block.number(), bal, &b.pre_state))
        .collect();
    let block_keys: Vec<BlockKeys> = bals.iter().map(|b| keys(b)).collect();

    let dir = args.db.clone().unwrap_or_else(|| PathBuf::from("target/bench-db"));
    let paths = load_dbs(&dir, &data).map_err(BenchError::Args)?;
    let mut stores = open_all(&paths).map_err(BenchError::Args)?;
    let full: Vec<FullValues> = stores
        .iter()
        .zip(&block_keys)
        .map(|(s, k)| full_values(s, k))
        .collect::<Result<_, _>>()
        .map_err(BenchError::Args)?;

    let caches: &[&'static str] = if args.cold { &["warm", "cold"] } else { &["warm"] };
    let total = (args.io.len() * caches.len() * threads.len() * batches.len() * repeat) as u64;
    let progress = bar(total, "rocksdb");
    let mut runs = Vec::new();
    for io in &args.io {
        for &cache in caches {
            for &t in &threads {
                for &k in &batches {
                    let config = ParallelConfig { threads: t, scheduler: Scheduler::Ols, batch: k };
                    let io_pool = pool(t);
                    let (mut db_times, mut mem_times, mut io_times, mut reads, mut hits) =
                        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
                    // Warm: one untimed pass fills the page cache and RocksDB's block cache.
                    let passes = if cache == "warm" { repeat + 1 } else { repeat };
                    for pass in 0..passes {
                        if cache == "cold" {
                            drop(std::mem::take(&mut stores));
                            drop_page_cache().map_err(BenchError::Args)?;
                            stores = open_all(&paths).map_err(BenchError::Args)?;
                        }
                        let states: Vec<PreState> = stores
                            .iter()
                            .map(|s| PreState::backed(s.clone()).with_block_hashes(hashes.clone()))
                            .collect();
                        let start = Instant::now();
                        io_pool
                            .install(|| {
                                states.par_iter().zip(&block_keys).zip(&full).try_for_each(
                                    |((st, k), f)| match io.as_str() {
                                        "batch" => st.prefetch(&k.accounts, &k.slots),
                                        "full" => {
                                            st.seed(&f.0, &f.1, &f.2, &f.3);
                                            Ok(())
                                        }
                                        _ => Ok(()),
                                    },
                                )
                            })
                            .map_err(|e| BenchError::Args(e.to_string()))?;
                        let io_time = start.elapsed();
                        let inputs: Vec<ParallelBlock<'_>> = data
                            .iter()
                            .zip(&senders)
                            .zip(&states)
                            .zip(&bals)
                            .zip(&reference)
                            .map(|((((b, s), st), bal), r)| ParallelBlock {
                                block: &b.block,
                                senders: s.into(),
                                pre_state: st,
                                bal,
                                gas_used_hint: Some(&r.tx_gas_used),
                            })
                            .collect();
                        // Prewarming: one more thread fetches every key the BALs name, block
                        // by block, while the workers execute (and read on demand what it has
                        // not fetched yet).
                        let exec_start = Instant::now();
                        let run = std::thread::scope(|scope| {
                            if io == "prewarm" {
                                scope.spawn(|| {
                                    for (st, k) in states.iter().zip(&block_keys) {
                                        let _ = st.prefetch(&k.accounts, &k.slots);
                                    }
                                });
                            }
                            execute_parallel(&chain, &inputs, config)
                        });
                        let db_time =
                            io_time + if io == "prewarm" { exec_start.elapsed() } else { run.wall };
                        for ((o, r), (b, bal)) in
                            run.outcomes.iter().zip(&reference).zip(data.iter().zip(&bals))
                        {
                            let checked = o.as_ref().map_err(Clone::clone).and_then(|o| {
                                compare_outcomes(r, o, bal)?;
                                validate_header(&chain, &b.block, o, bal).map(|_| ())
                            });
                            if let Err(e) = checked {
                                failures.push(format!("{io}/{cache}: {e}"));
                            }
                        }
                        let stats = states
                            .iter()
                            .map(PreState::cache_stats)
                            .fold((0, 0), |a, s| (a.0 + s.misses, a.1 + s.hits));
                        // The in-memory run of the same configuration, interleaved.
                        let mem_inputs: Vec<ParallelBlock<'_>> = inputs
                            .iter()
                            .zip(&data)
                            .map(|(i, b)| ParallelBlock { pre_state: &b.pre_state, ..*i })
                            .collect();
                        let mem = execute_parallel(&chain, &mem_inputs, config);
                        if cache == "warm" && pass == 0 {
                            continue;
                        }
                        db_times.push(db_time);
                        io_times.push(io_time);
                        mem_times.push(mem.wall);
                        reads.push(stats.0);
                        hits.push(stats.1);
                        progress.inc(1);
                    }
                    let (db, mem) = (median(db_times), median(mem_times));
                    reads.sort_unstable();
                    hits.sort_unstable();
                    runs.push(IoRun {
                        io: io.clone(),
                        cache,
                        threads: t,
                        batch: k,
                        gas,
                        seconds: db.as_secs_f64(),
                        mgas_per_s: gas as f64 / db.as_secs_f64() / 1e6,
                        memory_seconds: mem.as_secs_f64(),
                        ratio_to_memory: mem.as_secs_f64() / db.as_secs_f64(),
                        io_seconds: median(io_times).as_secs_f64(),
                        db_reads: reads[reads.len() / 2],
                        cache_hits: hits[hits.len() / 2],
                    });
                }
            }
        }
    }
    progress.finish_and_clear();
    failures.sort();
    failures.dedup();
    let report = IoReport { blocks_validated: n, gas, bal_sizes: sizes, runs, failures };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| BenchError::Args(e.to_string()))?
        );
    } else {
        print_report(&report);
    }
    Ok(if report.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn print_report(r: &IoReport) {
    let kb = |f: fn(&BalSizes) -> usize, recent: bool| {
        let xs: Vec<usize> =
            r.bal_sizes.iter().filter(|s| !recent || s.number >= 19_000_000).map(f).collect();
        xs.iter().sum::<usize>() as f64 / xs.len().max(1) as f64 / 1024.0
    };
    let recent = r.bal_sizes.iter().filter(|s| s.number >= 19_000_000).count();
    println!("BAL size per design (RLP, mean per block):");
    println!(
        "| design | all {} blocks (KiB) | {recent} blocks ≥ 19,000,000 (KiB) |",
        r.bal_sizes.len()
    );
    println!("|---|---:|---:|");
    println!(
        "| full (writes, read keys and read values) | {:.1} | {:.1} |",
        kb(|s| s.full, false),
        kb(|s| s.full, true)
    );
    println!(
        "| batch (writes and read keys: EIP-7928) | {:.1} | {:.1} |",
        kb(|s| s.batch, false),
        kb(|s| s.batch, true)
    );
    println!(
        "| parallel (writes only) | {:.1} | {:.1} |",
        kb(|s| s.parallel, false),
        kb(|s| s.parallel, true)
    );
    println!();
    println!("| io | cache | threads | batch | Mgas/s | × in-memory | I/O before execution (ms) | DB reads | cache hits | time (ms) | in-memory (ms) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for x in &r.runs {
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.2} | {:.1} | {} | {} | {:.1} | {:.1} |",
            x.io,
            x.cache,
            x.threads,
            x.batch,
            x.mgas_per_s,
            x.ratio_to_memory,
            x.io_seconds * 1e3,
            x.db_reads,
            x.cache_hits,
            x.seconds * 1e3,
            x.memory_seconds * 1e3
        );
    }
    println!(
        "{} blocks validated in every run (parallel == sequential reference == header)",
        r.blocks_validated
    );
    for f in &r.failures {
        println!("FAILED: {f}");
    }
}
