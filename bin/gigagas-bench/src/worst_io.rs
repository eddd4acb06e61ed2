//! `gigagas worst-io`: the worst case for BAL-hinted I/O. A contract `SLOAD`s
//! keccak256(seed + k) for k = 0, 1, … until its gas runs out, over a RocksDB holding millions of
//! its slots at exactly those keys; blocks of 16M-gas transactions with random seeds
//! (64M gas = 4 transactions, 640M = 40). Each block runs the sequential reference over the
//! database (it builds the BAL, whose storage reads list every slot read), then the parallel
//! executor with `batch` I/O (every listed slot multi-get before execution) and `parallel` I/O
//! (workers read on demand through the shared cache), warm and cold, and compares each with the
//! reference.

use crate::util::{bar, median, pool};
use alloy_consensus::{Header, SignableTransaction, TxEip1559, TxEnvelope};
use alloy_primitives::{keccak256, Address, Bytes, Signature, TxKind, B256, U256};
use clap::Args;
use gigagas_executor::{
    compare_outcomes,
    parallel::{execute_parallel, ParallelBlock, ParallelConfig},
    sequential::execute_sequential,
    Scheduler,
};
use gigagas_primitives::{BlockInput, ChainSpec};
use gigagas_state::PreState;
use gigagas_storage::{AccountRecord, BlockWriter, MetadataProvider, StateWriter, Storage};
use rayon::prelude::*;
use serde::Serialize;
use std::{path::PathBuf, process::ExitCode, sync::Arc, time::Instant};

/// The contract: `counter = calldata[0..32]; loop { mem[0..32] = counter;
/// SLOAD(keccak256(mem[0..32])); counter += 1 }` — 2,171 gas per read when the slot is cold.
const CODE: [u8; 21] = [
    0x60, 0x00, 0x35, // PUSH1 0 CALLDATALOAD
    0x5b, // JUMPDEST (pc 3)
    0x80, 0x60, 0x00, 0x52, // DUP1 PUSH1 0 MSTORE
    0x60, 0x20, 0x60, 0x00, 0x20, // PUSH1 32 PUSH1 0 KECCAK256
    0x54, 0x50, // SLOAD POP
    0x60, 0x01, 0x01, // PUSH1 1 ADD
    0x60, 0x03, 0x56, // PUSH1 3 JUMP
];
const CONTRACT: Address = Address::repeat_byte(0xc0);
const TX_GAS: u64 = 16_000_000;
/// A Cancun-era mainnet block (number and timestamp pick the fork rules).
const NUMBER: u64 = 20_000_000;
const TIMESTAMP: u64 = 1_717_000_000;

/// Arguments of `gigagas worst-io`.
#[derive(Debug, Args)]
pub(crate) struct WorstIoArgs {
    /// Storage slots of the contract in the database (written once, then reused).
    #[arg(long, default_value_t = 10_000_000)]
    slots: u64,
    /// Block gas sizes, comma-separated (multiples of 16M: one 16M-gas transaction each).
    #[arg(long, value_delimiter = ',', default_value = "64000000,640000000")]
    gas: Vec<u64>,
    /// Worker thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2")]
    threads: Vec<usize>,
    /// Timed repetitions; medians are reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Also run cold (page cache dropped, database reopened before each timed run; root).
    #[arg(long)]
    cold: bool,
    /// Database folder [default: target/worst-io-db].
    #[arg(long)]
    db: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

fn slot_key(i: u64) -> U256 {
    U256::from_be_bytes(keccak256(B256::from(U256::from(i))).0)
}

fn sender(j: usize) -> Address {
    let mut a = [0x5e; 20];
    a[16..].copy_from_slice(&(j as u32).to_be_bytes());
    Address::from(a)
}

/// Writes the contract, `slots` slots (value i + 1 at keccak256(i)) and 64 funded senders.
fn build_db(path: &std::path::Path, slots: u64) -> Result<Storage, String> {
    let store = Storage::open(path).map_err(|e| e.to_string())?;
    let marker = slots.to_be_bytes();
    if store.meta(b"worst-io-slots").map_err(|e| e.to_string())?.as_deref() == Some(&marker[..]) {
        return Ok(store);
    }
    let code_hash = keccak256(CODE);
    let mut accounts = vec![(CONTRACT, AccountRecord { nonce: 1, balance: U256::ZERO, code_hash })];
    let funded = U256::from(10).pow(U256::from(21));
    accounts.extend((0..64).map(|j| {
        (
            sender(j),
            AccountRecord { nonce: 0, balance: funded, code_hash: revm::primitives::KECCAK_EMPTY },
        )
    }));
    store.write_state(&accounts, &[], &[(code_hash, &CODE[..])]).map_err(|e| e.to_string())?;
    let chunk = 250_000u64;
    let pb = bar(slots.div_ceil(chunk), "slots");
    for start in (0..slots).step_by(chunk as usize) {
        let batch: Vec<(Address, U256, U256)> = (start..(start + chunk).min(slots))
            .into_par_iter()
            .map(|i| (CONTRACT, slot_key(i), U256::from(i + 1)))
            .collect();
        store.write_state(&[], &batch, &[]).map_err(|e| e.to_string())?;
        pb.inc(1);
    }
    pb.finish_and_clear();
    store.flush().map_err(|e| e.to_string())?;
    store.put_meta(b"worst-io-slots", &marker).map_err(|e| e.to_string())?;
    Ok(store)
}

/// A block of `gas / 16M` transactions calling the contract with random seeds.
fn block(gas: u64, slots: u64, seed: u64) -> (BlockInput, Vec<Address>) {
    let n = (gas / TX_GAS) as usize;
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let signature = Signature::new(U256::from(1), U256::from(1), false);
    let transactions: Vec<TxEnvelope> = (0..n)
        .map(|_| {
            let start = next() % slots.saturating_sub(10_000).max(1);
            let tx = TxEip1559 {
                chain_id: 1,
                nonce: 0,
                gas_limit: TX_GAS,
                max_fee_per_gas: 100,
                max_priority_fee_per_gas: 1,
                to: TxKind::Call(CONTRACT),
                value: U256::ZERO,
                access_list: Default::default(),
                input: Bytes::from(B256::from(U256::from(start)).to_vec()),
            };
            TxEnvelope::Eip1559(tx.into_signed(signature))
        })
        .collect();
    let header = Header {
        number: NUMBER,
        timestamp: TIMESTAMP,
        gas_limit: gas,
        base_fee_per_gas: Some(7),
        beneficiary: Address::repeat_byte(0xfe),
        parent_beacon_block_root: Some(B256::ZERO),
        blob_gas_used: Some(0),
        excess_blob_gas: Some(0),
        withdrawals_root: Some(alloy_trie::EMPTY_ROOT_HASH),
        ..Default::default()
    };
    let senders = (0..n).map(sender).collect();
    let input = BlockInput {
        hash: header.hash_slow(),
        header,
        transactions,
        claimed_senders: Vec::new(),
        withdrawals: Some(Default::default()),
        ommers: Vec::new(),
    };
    (input, senders)
}

#[derive(Debug, Serialize)]
struct WorstRun {
    gas: u64,
    io: &'static str,
    cache: &'static str,
    threads: usize,
    seconds: f64,
    mgas_per_s: f64,
    io_seconds: f64,
    db_reads: u64,
}

#[derive(Debug, Serialize)]
struct WorstBlock {
    gas: u64,
    transactions: usize,
    gas_used: u64,
    slots_read: usize,
    sequential_seconds: f64,
    bal_bytes_full: usize,
    bal_bytes_batch: usize,
    bal_bytes_parallel: usize,
}

#[derive(Debug, Serialize)]
struct WorstReport {
    slots_in_db: u64,
    blocks: Vec<WorstBlock>,
    runs: Vec<WorstRun>,
    failures: Vec<String>,
}

pub(crate) fn run(args: WorstIoArgs) -> Result<ExitCode, String> {
    let chain = ChainSpec::mainnet();
    let path = args.db.clone().unwrap_or_else(|| PathBuf::from("target/worst-io-db"));
    let t = Instant::now();
    let mut store = Arc::new(build_db(&path, args.slots)?);
    if !args.json {
        eprintln!(
            "database: {} slots at {} ({:.1} s)",
            args.slots,
            path.display(),
            t.elapsed().as_secs_f64()
        );
    }
    let repeat = args.repeat.max(1);
    let caches: &[&'static str] = if args.cold { &["warm", "cold"] } else { &["warm"] };
    let mut report = WorstReport {
        slots_in_db: args.slots,
        blocks: Vec::new(),
        runs: Vec::new(),
        failures: Vec::new(),
    };
    for (k, &gas) in args.gas.iter().enumerate() {
        if gas < TX_GAS {
            return Err(format!("--gas {gas}: at least one 16M-gas transaction"));
        }
        let (input, senders) = block(gas, args.slots, k as u64 + 1);
        let reference_state = PreState::backed(store.clone());
        let t = Instant::now();
        let reference = execute_sequential(&chain, &input, &senders, &reference_state)
            .map_err(|e| e.to_string())?;
        let sequential_seconds = t.elapsed().as_secs_f64();
        let bal = reference.bal.clone().unwrap_or_default();
        let slots_read: usize =
            bal.iter().map(|a| a.storage_reads.len() + a.storage_changes.len()).sum();
        let sizes = crate::bench_io::bal_sizes(NUMBER, &bal, &reference_state);
        report.blocks.push(WorstBlock {
            gas,
            transactions: input.transactions.len(),
            gas_used: reference.gas_used,
            slots_read,
            sequential_seconds,
            bal_bytes_full: sizes.full,
            bal_bytes_batch: sizes.batch,
            bal_bytes_parallel: sizes.parallel,
        });
        let keys = crate::bench_io::keys(&bal);
        // Cold runs reopen the database: nothing may keep it open.
        drop(reference_state);
        for &cache in caches {
            for io in ["batch", "parallel"] {
                for &threads in &args.threads {
                    let io_pool = pool(threads);
                    let (mut times, mut io_times, mut reads) = (Vec::new(), Vec::new(), Vec::new());
                    let passes = if cache == "warm" { repeat + 1 } else { repeat };
                    for pass in 0..passes {
                        if cache == "cold" {
                            drop(store);
                            crate::bench_io::drop_page_cache()?;
                            store = Arc::new(Storage::open(&path).map_err(|e| e.to_string())?);
                        }
                        let state = PreState::backed(store.clone());
                        let start = Instant::now();
                        if io == "batch" {
                            io_pool
                                .install(|| {
                                    // Split the multi-get over the pool's threads.
                                    let per = keys.slots.len().div_ceil(threads.max(1)).max(1);
                                    keys.slots
                                        .par_chunks(per)
                                        .try_for_each(|c| state.prefetch(&keys.accounts, c))
                                })
                                .map_err(|e| e.to_string())?;
                        }
                        let io_time = start.elapsed();
                        let inputs = [ParallelBlock {
                            block: &input,
                            senders: (&senders).into(),
                            pre_state: &state,
                            bal: &bal,
                            gas_used_hint: Some(&reference.tx_gas_used),
                        }];
                        let config =
                            ParallelConfig { threads, scheduler: Scheduler::Ols, batch: 1 };
                        let mut run = execute_parallel(&chain, &inputs, config);
                        let total = io_time + run.wall;
                        match run.outcomes.pop() {
                            Some(Ok(o)) => {
                                if let Err(e) = compare_outcomes(&reference, &o, &bal) {
                                    report.failures.push(format!("{gas} gas {io}/{cache}: {e}"));
                                }
                            }
                            Some(Err(e)) => {
                                report.failures.push(format!("{gas} gas {io}/{cache}: {e}"))
                            }
                            None => {
                                report.failures.push(format!("{gas} gas {io}/{cache}: no outcome"))
                            }
                        }
                        if cache == "warm" && pass == 0 {
                            continue;
                        }
                        times.push(total);
                        io_times.push(io_time);
                        reads.push(state.cache_stats().misses);
                    }
                    reads.sort_unstable();
                    let secs = median(times).as_secs_f64();
                    report.runs.push(WorstRun {
                        gas,
                        io,
                        cache,
                        threads,
                        seconds: secs,
                        mgas_per_s: reference.gas_used as f64 / secs / 1e6,
                        io_seconds: median(io_times).as_secs_f64(),
                        db_reads: reads[reads.len() / 2],
                    });
                }
            }
        }
    }
    report.failures.sort();
    report.failures.dedup();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        println!("worst-case I/O: {} slots in the database; 16M-gas transactions of cold SLOADs at random keys", report.slots_in_db);
        println!("| block gas | txs | gas used | slots read | sequential (s) | BAL full / batch / parallel (KiB) |");
        println!("|---:|---:|---:|---:|---:|---|");
        for b in &report.blocks {
            println!(
                "| {} | {} | {} | {} | {:.3} | {:.0} / {:.0} / {:.1} |",
                b.gas,
                b.transactions,
                b.gas_used,
                b.slots_read,
                b.sequential_seconds,
                b.bal_bytes_full as f64 / 1024.0,
                b.bal_bytes_batch as f64 / 1024.0,
                b.bal_bytes_parallel as f64 / 1024.0
            );
        }
        println!();
        println!("| block gas | io | cache | threads | Mgas/s | time (ms) | I/O before execution (ms) | DB reads |");
        println!("|---:|---|---|---:|---:|---:|---:|---:|");
        for r in &report.runs {
            println!(
                "| {} | {} | {} | {} | {:.0} | {:.1} | {:.1} | {} |",
                r.gas,
                r.io,
                r.cache,
                r.threads,
                r.mgas_per_s,
                r.seconds * 1e3,
                r.io_seconds * 1e3,
                r.db_reads
            );
        }
        for f in &report.failures {
            println!("FAILED: {f}");
        }
    }
    Ok(if report.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
