//! `gigagas init` and `gigagas import`: a datadir on RocksDB from a genesis file, then blocks
//! from an RLP file, every block executed and its state root verified before it is committed.

use alloy_primitives::B256;
use clap::{builder::TypedValueParser as _, Args};
use gigagas_engine::import::{import_blocks_with, FileBal, ImportOptions};
use gigagas_executor::Scheduler;
use gigagas_storage::{FullProvider, Storage};
use gigagas_validation::{init_genesis, merge_updates, BalIo, ImportError, ImportedBlock};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::{path::PathBuf, process::ExitCode, sync::Arc, time::Instant};

/// Arguments of `gigagas init`.
#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// Geth-format genesis file (`config`, `alloc`, header fields), or a chain's name:
    /// `mainnet`, `sepolia`, `hoodi`, `dev` (geth 1.17.10's files, built in). `--chain` is
    /// the same flag, as `gigagas node` names it.
    #[arg(long, alias = "chain")]
    genesis: gigagas_chainspec::ChainArg,
    /// Data directory (created when missing).
    #[arg(long)]
    datadir: PathBuf,
}

/// Arguments of `gigagas import`.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// RLP file of blocks back to back (geth `export` format).
    file: PathBuf,
    /// Data directory initialized by `gigagas init`.
    #[arg(long)]
    datadir: PathBuf,
    /// Print one JSON object (totals, one entry per block committed or skipped, and the block
    /// that failed with its typed error) instead of the summary.
    #[arg(long)]
    json: bool,
    /// After the import, also compute the state root once per megablock of K consecutive
    /// imported blocks (their diffs merged, applied to the stored trie nodes of the state before
    /// the first), check it against the last block's `stateRoot`, and time it against the
    /// blocks' own state-root stages. Comma-separated sizes.
    #[arg(long, value_delimiter = ',')]
    megablock: Vec<usize>,
    /// Prewarm blocks that carry no BAL: while the sequential reference runs a block, the other
    /// cores execute its transactions speculatively ahead of it so that the state it reads is
    /// cached (reth's prewarming). `false` runs the reference alone.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    prewarm: bool,
    /// With `--prewarm`, commit what a prewarming worker executed instead of executing the
    /// transaction again when every value it read still holds at that point of the block
    /// (optimistic execution validated as in Block-STM). `false` (the default: it measured no
    /// faster on 2 cores, docs/benchmarks.md) only warms the cache.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    optimistic: bool,
    /// The EIP-7928 BALs the file carries after Amsterdam blocks (geth's `export` writes them):
    /// `use` runs each such block on the parallel executor driven by its BAL; `ignore` runs
    /// every block on the sequential reference, whose BAL must hash to the header's.
    #[arg(long, default_value = "use", value_parser = ["use", "ignore"])]
    bal: String,
    /// Threads of the parallel executor (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// The parallel executor's order: `gas-limit` (heaviest first) or `ols` (block order).
    #[arg(long, default_value = "gas-limit", value_parser = ["gas-limit", "ols"])]
    scheduler: String,
    /// How the parallel executor reads the keys a block's BAL names: `prefetch-parallel` (all
    /// before execution, split over threads), `prefetch` (all before execution, on one thread),
    /// `on-demand` (each when a transaction first needs it: one read at a time per worker) or
    /// `prefetch-beside` (on the `--io-depth` threads beside execution, in the order the
    /// transactions first change them).
    #[arg(
        long,
        default_value = "prefetch-parallel",
        value_parser = clap::builder::PossibleValuesParser::new(BalIo::ALL.map(BalIo::name))
            .map(|s| BalIo::ALL.into_iter().find(|d| d.name() == s).expect("a possible value"))
    )]
    io: BalIo,
    /// Threads of their own for `--io prefetch-parallel`'s and `prefetch-beside`'s reads, each
    /// one batched read at a time, whose blocks of one table file reach the disk together
    /// through io_uring (one at a time without it: the threads are then the queue depth); 0
    /// splits them over the executor's threads.
    #[arg(long, default_value_t = 0)]
    io_depth: usize,
    /// Threads reading a state root's missing trie nodes level by level before the root's
    /// walk, as many reads in flight at once (as the node's `--engine.trie-read-threads`); 0:
    /// the walk reads each where it meets it, one at a time.
    #[arg(long, default_value_t = gigagas_trie::DEFAULT_TRIE_READ_THREADS)]
    trie_read_threads: usize,
    /// Prune the trie nodes no state of the last `--prune-trie-keep` blocks reaches every this
    /// many imported blocks, while importing (as the node's `--prune.trie.interval`; 0: never).
    #[arg(long, default_value_t = 0)]
    prune_trie_interval: u64,
    /// Blocks whose state a prune keeps (the node's `--prune.trie.keep`).
    #[arg(long, default_value_t = gigagas_engine::TriePruneConfig::DEFAULT.keep)]
    prune_trie_keep: u64,
    /// Batches of keys read with one RocksDB multi-get (default; through io_uring where the
    /// kernel allows it), or `false`: one lookup a key, one `pread` a block, the same blocks
    /// read — what `strace -e pread64` sees in full (io_uring's reads it does not see).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, hide = true)]
    batched_reads: bool,
}

/// Runs `init`.
pub(crate) fn init(args: InitArgs) -> Result<ExitCode, String> {
    let json = args.genesis.genesis_json().map_err(|e| e.to_string())?;
    let store = Storage::open(&args.datadir).map_err(|e| e.to_string())?;
    let init = init_genesis(&store, &json).map_err(|e| e.to_string())?;
    let verb = if init.already_initialized { "already initialized with" } else { "initialized:" };
    println!(
        "{} {verb} genesis {} (block {}, state root {}, {} accounts, {} slots)",
        args.datadir.display(),
        init.hash,
        init.header.number,
        init.header.state_root,
        init.accounts,
        init.slots
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Serialize)]
struct BlockJson {
    number: u64,
    hash: String,
    imported: bool,
    transactions: usize,
    gas_used: u64,
    execution_ms: f64,
    /// Of `execution_ms`, sender recovery (rayon, all cores).
    recovery_ms: f64,
    /// Of `execution_ms`, the BAL-hinted reads before a parallel run (0 on the sequential path);
    /// with `--io prefetch-beside`, how long the read-ahead beside execution ran.
    io_ms: f64,
    /// Time spent in the state's reads from the store (flat state and code), summed over the
    /// threads that made them: the prefetch's and those made while executing.
    read_ms: f64,
    /// Of `read_ms`, the prefetch's (the rest: the reads execution made itself).
    ahead_read_ms: f64,
    /// The state root's own time when computed from the BAL beside execution (`state_root_ms`
    /// is then only what the block waited for it).
    state_root_beside_ms: Option<f64>,
    state_root_ms: f64,
    commit_ms: f64,
    cache_hits: u64,
    cache_misses: u64,
    accounts_changed: usize,
    slots_changed: usize,
    /// Transactions the prewarming workers executed speculatively ahead of the in-order run.
    prewarmed: u64,
    /// Of those, the ones whose result the in-order run committed (`--optimistic`).
    reused: u64,
    /// And the ones it found stale and executed again (a value they read had changed).
    stale: u64,
    /// Which executor ran the block: `parallel` (driven by the file's BAL) or `sequential`
    /// (the reference, building the block's BAL); `-` for a block already stored.
    executor: &'static str,
    /// Where the block's BAL came from: `file` (written after the block, as geth's `export`
    /// does) or `built` (recorded by the sequential run; for an Amsterdam block checked
    /// against the header's `blockAccessListHash`).
    bal: &'static str,
}

/// The block an import stopped at.
#[derive(Debug, Serialize)]
struct FailedJson {
    /// Its number, when the error is about a block.
    number: Option<u64>,
    /// Its hash, when the file holds a block of that number.
    hash: Option<String>,
    /// The error's kind (`ImportError` variant: `Invalid`, `Execution`, `StateRoot`, …).
    kind: &'static str,
    /// An internal fault (disk, missing trie node) rather than a verdict on the block.
    internal: bool,
    /// The error, naming block, transaction, account or slot.
    error: String,
}

#[derive(Debug, Serialize)]
struct ImportJson {
    blocks_imported: usize,
    blocks_skipped: usize,
    gas: u64,
    seconds: f64,
    blocks_per_s: f64,
    mgas_per_s: f64,
    execution_s: f64,
    state_root_s: f64,
    commit_s: f64,
    /// Trie nodes read from the store over the import (not found in its node cache); with the
    /// blocks' `cache_misses`, the reads a cold disk serves.
    trie_node_reads: u64,
    /// The store's multi-gets read their blocks through io_uring: batched reads on, RocksDB
    /// built with io_uring and the kernel allowing it; `false`: one `pread` at a time.
    batched_reads_io_uring: bool,
    head: Option<u64>,
    error: Option<String>,
    failed: Option<FailedJson>,
    megablocks: Vec<MegablockJson>,
    blocks: Vec<BlockJson>,
}

#[derive(Debug, Serialize)]
struct MegablockJson {
    /// Blocks per megablock.
    size: usize,
    /// Megablocks computed (whole chunks of `size` imported blocks).
    count: usize,
    /// How many roots equal the last block's `stateRoot`.
    roots_matching: usize,
    /// Mean state-root time per megablock (ms).
    mean_ms: f64,
    /// Mean of the summed per-block state-root times of the same blocks (ms).
    per_block_sum_ms: f64,
}

fn megablock_roots(
    store: &dyn FullProvider,
    imported: &[&ImportedBlock],
    size: usize,
) -> Result<MegablockJson, String> {
    let (mut times, mut sums, mut matching) = (Vec::new(), Vec::new(), 0);
    for chunk in imported.chunks_exact(size) {
        let merged = merge_updates(chunk.iter().map(|b| b.updates.as_deref().unwrap_or_default()));
        let start = Instant::now();
        let root = gigagas_trie::update_state_root(chunk[0].parent_state_root, &merged, &store)
            .map_err(|e| format!("megablock from block {}: {e}", chunk[0].number))?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        sums.push(chunk.iter().map(|b| b.state_root.as_secs_f64() * 1e3).sum::<f64>());
        matching += usize::from(root.root == chunk[size - 1].post_state_root);
    }
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    Ok(MegablockJson {
        size,
        count: times.len(),
        roots_matching: matching,
        mean_ms: mean(&times),
        per_block_sum_ms: mean(&sums),
    })
}

/// The payloads of the blocks of a geth-export RLP file (each block's list, unparsed), up to
/// the first entry that is not a whole RLP list (the import reports that one).
fn block_payloads(rlp: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut buf = rlp;
    std::iter::from_fn(move || {
        let mut item = buf;
        let list = alloy_rlp::Header::decode(&mut item).ok()?;
        if !list.list || item.len() < list.payload_length {
            return None;
        }
        let (payload, rest) = item.split_at(list.payload_length);
        buf = rest;
        Some(payload)
    })
}

/// The hash of the file's block `number`, read from its header.
fn block_hash(rlp: &[u8], number: u64) -> Option<B256> {
    use alloy_rlp::Decodable;
    block_payloads(rlp).find_map(|mut payload| {
        let header = alloy_consensus::Header::decode(&mut payload).ok()?;
        (header.number == number).then(|| header.hash_slow())
    })
}

fn block_json(b: &ImportedBlock) -> BlockJson {
    BlockJson {
        number: b.number,
        hash: b.hash.to_string(),
        imported: b.imported,
        transactions: b.transactions,
        gas_used: b.gas_used,
        execution_ms: b.execution.as_secs_f64() * 1e3,
        recovery_ms: b.recovery.as_secs_f64() * 1e3,
        io_ms: b.io.as_secs_f64() * 1e3,
        read_ms: b.cache.read_nanos as f64 / 1e6,
        ahead_read_ms: b.cache.ahead_read_nanos as f64 / 1e6,
        state_root_beside_ms: b.state_root_beside.map(|d| d.as_secs_f64() * 1e3),
        state_root_ms: b.state_root.as_secs_f64() * 1e3,
        commit_ms: b.commit.as_secs_f64() * 1e3,
        cache_hits: b.cache.hits,
        cache_misses: b.cache.misses,
        accounts_changed: b.accounts_changed,
        slots_changed: b.slots_changed,
        prewarmed: b.prewarmed,
        reused: b.reused,
        stale: b.stale,
        executor: match (b.imported, b.parallel) {
            (false, _) => "-",
            (true, true) => "parallel",
            (true, false) => "sequential",
        },
        bal: match (b.imported, b.parallel) {
            (false, _) => "-",
            (true, true) => "file",
            (true, false) => "built",
        },
    }
}

fn failed_json(e: &ImportError, rlp: &[u8]) -> FailedJson {
    let number = e.block_number();
    let hash = number.and_then(|n| block_hash(rlp, n)).map(|h| h.to_string());
    FailedJson { number, hash, kind: e.kind(), internal: e.is_internal(), error: e.to_string() }
}

/// Runs `import`: exit code 0 when every block imported, 1 when one failed (the blocks before it
/// stay committed).
pub(crate) fn import(args: ImportArgs) -> Result<ExitCode, String> {
    let rlp = std::fs::read(&args.file).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let not_initialized = || {
        format!(
            "{}: datadir not initialized: run `gigagas init --genesis FILE --datadir DIR` first",
            args.datadir.display()
        )
    };
    if !args.datadir.is_dir() {
        return Err(not_initialized());
    }
    let storage = Arc::new(
        Storage::open(&args.datadir)
            .map_err(|e| e.to_string())?
            .with_batched_reads(args.batched_reads),
    );
    let store: Arc<dyn FullProvider> = storage.clone();
    if store.best_block().map_err(|e| e.to_string())?.is_none() {
        return Err(not_initialized());
    }
    // On a terminal: blocks done of the file's, Mgas/s and the time left.
    let bar = ProgressBar::new(block_payloads(&rlp).count() as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {elapsed} [{bar:30}] {pos}/{len} blocks  {msg}  ETA {eta}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let start = Instant::now();
    let mut gas = 0u64;
    let mut done = 0u64;
    let keep = !args.megablock.is_empty();
    // Every block committed or skipped, as it happens: the report has them even when a later
    // block fails.
    let mut rows = Vec::new();
    let options = ImportOptions {
        file_bal: if args.bal == "ignore" { FileBal::Ignore } else { FileBal::Use },
        threads: args.threads,
        scheduler: if args.scheduler == "ols" { Scheduler::Ols } else { Scheduler::GasLimit },
        keep_updates: keep,
        prewarm: args.prewarm,
        optimistic: args.optimistic,
        io: args.io,
        io_depth: args.io_depth,
        trie_read_threads: args.trie_read_threads,
        prune: (args.prune_trie_interval > 0).then_some(gigagas_engine::TriePruneConfig {
            keep: args.prune_trie_keep,
            interval: args.prune_trie_interval,
            threads: gigagas_engine::TriePruneConfig::DEFAULT.threads,
        }),
    };
    let result = import_blocks_with(&store, &rlp, options, &mut |b: &ImportedBlock| {
        rows.push(block_json(b));
        if b.imported {
            gas += b.gas_used;
            done += 1;
        }
        let secs = start.elapsed().as_secs_f64().max(1e-9);
        bar.set_message(format!(
            "block {}  {:.1} blocks/s  {:.1} Mgas/s",
            b.number,
            done as f64 / secs,
            gas as f64 / secs / 1e6
        ));
        bar.inc(1);
    });
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let trie_node_reads = storage.trie_node_reads();
    let (blocks, failed) = match result {
        Ok(blocks) => (blocks, None),
        Err(e) => (Vec::new(), Some(failed_json(&e, &rlp))),
    };
    let error = failed.as_ref().map(|f| f.error.clone());
    let head = store.best_block().map_err(|e| e.to_string())?.map(|(n, _)| n);
    let imported: Vec<&ImportedBlock> = blocks.iter().filter(|b| b.imported).collect();
    let sum = |f: fn(&ImportedBlock) -> f64| imported.iter().map(|b| f(b)).fold(0.0, |a, x| a + x);
    let megablocks = args
        .megablock
        .iter()
        .filter(|&&k| k > 0)
        .map(|&k| megablock_roots(&*store, &imported, k))
        .collect::<Result<Vec<_>, _>>()?;
    let report = ImportJson {
        blocks_imported: done as usize,
        blocks_skipped: rows.iter().filter(|b| !b.imported).count(),
        gas,
        seconds,
        blocks_per_s: done as f64 / seconds,
        mgas_per_s: gas as f64 / seconds / 1e6,
        execution_s: sum(|b| b.execution.as_secs_f64()),
        state_root_s: sum(|b| b.state_root.as_secs_f64()),
        commit_s: sum(|b| b.commit.as_secs_f64()),
        trie_node_reads,
        batched_reads_io_uring: args.batched_reads && gigagas_storage::io_uring_usable(),
        head,
        error,
        failed,
        megablocks,
        blocks: rows,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        println!(
            "imported {} blocks ({} already stored) in {:.3} s: {:.1} blocks/s, {:.2} Mgas/s; \
             execution {:.3} s, state root {:.3} s, commit {:.3} s (state root and commit overlap \
             the next block's execution); head {}",
            report.blocks_imported,
            report.blocks_skipped,
            seconds,
            report.blocks_per_s,
            report.mgas_per_s,
            report.execution_s,
            report.state_root_s,
            report.commit_s,
            head.map_or_else(|| "-".into(), |h| h.to_string())
        );
        for m in &report.megablocks {
            println!(
                "megablocks of {}: {} computed, {} roots equal the last block's stateRoot; {:.3} ms \
                 per megablock vs {:.3} ms for its blocks' own state roots",
                m.size, m.count, m.roots_matching, m.mean_ms, m.per_block_sum_ms
            );
        }
        if let Some(f) = &report.failed {
            let at = match (f.number, &f.hash) {
                (Some(n), Some(h)) => format!(" at block {n} {h}"),
                (Some(n), None) => format!(" at block {n}"),
                _ => String::new(),
            };
            let internal = if f.internal { " (internal fault, not a verdict)" } else { "" };
            println!("error{at}: {}{internal}", f.error);
        }
    }
    Ok(if report.error.is_none() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
