//! The parallel executor: every transaction runs against the pre-state positioned at its BAL
//! index (`i + 1`), without waiting for the transactions before it.
//!
//! One run processes its blocks in batches of `batch` blocks (a megablock of K blocks is one
//! parallel unit; every block executes against its own pre-state and BAL). Per batch, `threads`
//! workers claim transactions in [`Scheduler`] order:
//! 1. **prepare** (the first batch's blocks by the whole pool before the workers start, the
//!    later batches' as tasks claimed by the tail of the batch before; a worker that needs a
//!    block still being prepared waits for it, others go on): structural BAL validation, deployed codes
//!    decoded and hashed, writes grouped by index, the key coverage index, the pre-block values
//!    of every listed account and slot, the implied post-state, pre-Cancun self-destruct markers;
//! 2. **execute**: each worker keeps one EVM per block over a positioned view of the
//!    pre-state (never committed to), sets the BAL index and runs the transaction, then checks
//!    the keys it touched and its writes against the BAL's entries at that index;
//! 3. **commit** (run by the worker that finishes a block's last transaction, overlapping other
//!    blocks' execution): pre-execution system calls at index 0, receipts in order, post-execution
//!    at `n + 1`, then every listed key must have been touched. Equal writes at every index plus
//!    full coverage mean the execution's BAL is the given one; no BAL is rebuilt or re-hashed
//!    (the hash is compared only where a header commits to one).

mod commit;
mod positioned;
mod prepare;
mod worker;

pub(crate) use positioned::PreValues;

use crate::{AccountExistence as Existence, BlockOutcome, ExecutionError, Scheduler};
use alloy_primitives::Address;
use gigagas_bal::BlockAccessList;
use gigagas_primitives::{BlockInput, ChainSpec, Senders};
use gigagas_state::PreState;
use rayon::iter::{
    IndexedParallelIterator, IntoParallelIterator, IntoParallelRefIterator, ParallelIterator,
};
use std::{
    sync::{
        atomic::{AtomicU64, AtomicUsize},
        Mutex, OnceLock,
    },
    time::{Duration, Instant},
};

/// One block handed to the parallel executor.
#[derive(Debug, Clone, Copy)]
pub struct ParallelBlock<'a> {
    /// The block.
    pub block: &'a BlockInput,
    /// The senders, one per transaction: recovered, or streamed (a worker recovers the sender
    /// of the transaction it claims when it is not known yet).
    pub senders: Senders<'a>,
    /// The state before the block.
    pub pre_state: &'a PreState,
    /// The block's BAL (given with the block, or built by the sequential reference).
    pub bal: &'a BlockAccessList,
    /// Gas used per transaction from an earlier run; needed by [`Scheduler::GasUsed`].
    pub gas_used_hint: Option<&'a [u64]>,
}

/// How to run the parallel executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParallelConfig {
    /// Worker threads.
    pub threads: usize,
    /// Claim order.
    pub scheduler: Scheduler,
    /// Blocks per megablock (1 = block by block).
    pub batch: usize,
}

/// Timings and results of one parallel run.
#[derive(Debug)]
pub struct ParallelRun {
    /// One result per input block, in input order.
    pub outcomes: Vec<Result<BlockOutcome, ExecutionError>>,
    /// Execution latency of every transaction (nanoseconds), per block.
    pub tx_nanos: Vec<Vec<u64>>,
    /// Time of each block's ordered commit + validation (nanoseconds).
    pub commit_nanos: Vec<u64>,
    /// Time of each block's BAL preparation (nanoseconds).
    pub prepare_nanos: Vec<u64>,
    /// Wall-clock time of the whole run (all batches), excluding thread-pool creation.
    pub wall: Duration,
}

impl ParallelRun {
    /// The longest single-transaction latency of the run.
    pub fn longest_tx(&self) -> Duration {
        Duration::from_nanos(self.tx_nanos.iter().flatten().copied().max().unwrap_or(0))
    }
}

/// The task index that stands for "prepare this block's BAL" rather than a transaction. The
/// preparations are claimed first, so workers prepare blocks in parallel and rarely wait for one.
const PREPARE: u32 = u32::MAX;

/// The task index that stands for "prepare this block of the next batch": claimed last, so the
/// workers left idle by a batch's tail prepare the next batch (pipelining block by block runs).
const PREPARE_NEXT: u32 = u32::MAX - 1;

/// Where a worker leaves a transaction's result for the block's commit to take.
type TxSlot = Mutex<Option<Result<TxExec, ExecutionError>>>;

/// A transaction executed by a worker, not yet committed.
struct TxExec {
    /// revm's result (status, gas, logs, output).
    result: revm::context::result::ExecutionResult<revm::context::result::HaltReason>,
    /// Bloom of the result's logs, computed here rather than on the commit's critical path.
    logs_bloom: alloy_primitives::Bloom,
    /// Set when the transaction touched an account that the BAL shows destroyed by an earlier
    /// transaction (pre-Cancun): its view of that account is not the in-order one.
    stale_view: Option<Address>,
}

/// A block's prepared BAL, made by the first worker that needs it, with its time (ns).
type PrepareSlot = OnceLock<(Result<prepare::Prepared, ExecutionError>, u64)>;

/// Per-block state shared by the workers of a batch.
struct Shared<'a> {
    chain: &'a ChainSpec,
    blocks: &'a [ParallelBlock<'a>],
    prepared: Vec<PrepareSlot>,
    /// `(block, tx)` in claim order, preceded by one `(block, PREPARE)` per block and followed
    /// by one `(next-batch block, PREPARE_NEXT)` per block of the next batch.
    tasks: Vec<(u32, u32)>,
    next_blocks: &'a [ParallelBlock<'a>],
    next_prepared: Vec<PrepareSlot>,
    next: AtomicUsize,
    remaining: Vec<AtomicUsize>,
    results: Vec<Vec<TxSlot>>,
    /// Per block: how transactions changed accounts' existence, as revm's `State` commit would
    /// apply it; the commit replays them in index order. See [`Existence`].
    existence: Vec<Mutex<Vec<(u32, Address, Existence)>>>,
    nanos: Vec<Vec<AtomicU64>>,
    outcomes: Vec<OnceLock<(Result<BlockOutcome, ExecutionError>, u64)>>,
}

impl Shared<'_> {
    /// Block `b`'s prepared BAL. The first worker to ask prepares it; a worker asking meanwhile
    /// waits for it. No barrier: other blocks' transactions keep running.
    fn prepared(&self, b: usize) -> Result<&prepare::Prepared, ExecutionError> {
        let (prepared, _) = timed_prepare(&self.prepared[b], self.chain, &self.blocks[b]);
        prepared.as_ref().map_err(Clone::clone)
    }

    /// Prepares block `b` of the next batch ahead of time.
    fn prepare_next(&self, b: usize) {
        timed_prepare(&self.next_prepared[b], self.chain, &self.next_blocks[b]);
    }
}

fn timed_prepare<'s>(
    slot: &'s PrepareSlot,
    chain: &ChainSpec,
    block: &ParallelBlock<'_>,
) -> &'s (Result<prepare::Prepared, ExecutionError>, u64) {
    slot.get_or_init(|| {
        let start = Instant::now();
        let prepared = prepare::prepare(chain, block);
        (prepared, start.elapsed().as_nanos() as u64)
    })
}

/// A pool of `threads` executor workers (named `gigagas-exec-<i>`): build it once and run every
/// block on it with [`execute_parallel_on`] (a node's engine does; building one per block costs
/// a thread spawn per worker per block).
///
/// # Errors
/// When the operating system refuses the threads.
pub fn executor_pool(threads: usize) -> Result<rayon::ThreadPool, rayon::ThreadPoolBuildError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("gigagas-exec-{i}"))
        .build()
}

/// Executes `blocks` in parallel with `config`, in batches of `config.batch` blocks, on a pool
/// of `config.threads` workers built for this call ([`execute_parallel_on`] reuses one).
///
/// Never panics on bad input: a block whose BAL or transactions are wrong yields its
/// [`ExecutionError`] in [`ParallelRun::outcomes`]; the other blocks are unaffected.
///
/// # Panics
/// If the rayon thread pool cannot be built (out of threads).
pub fn execute_parallel(
    chain: &ChainSpec,
    blocks: &[ParallelBlock<'_>],
    config: ParallelConfig,
) -> ParallelRun {
    let pool = executor_pool(config.threads).expect("build executor thread pool");
    execute_parallel_on(&pool, chain, blocks, config)
}

/// [`execute_parallel`] on `pool`, whose workers run the tasks: `config.threads` is not used
/// (the pool's size is the thread count); scheduler and batch are `config`'s.
pub fn execute_parallel_on(
    pool: &rayon::ThreadPool,
    chain: &ChainSpec,
    blocks: &[ParallelBlock<'_>],
    config: ParallelConfig,
) -> ParallelRun {
    let mut run = ParallelRun {
        outcomes: Vec::with_capacity(blocks.len()),
        tx_nanos: Vec::with_capacity(blocks.len()),
        commit_nanos: Vec::with_capacity(blocks.len()),
        prepare_nanos: Vec::with_capacity(blocks.len()),
        wall: Duration::ZERO,
    };
    let start = Instant::now();
    let batches: Vec<&[ParallelBlock<'_>]> = blocks.chunks(config.batch.max(1)).collect();
    let mut prepared = new_slots(batches.first().map_or(0, |b| b.len()));
    // The first batch's blocks prepared by the whole pool before any worker claims a task: a
    // preparation splits its work with `rayon::join`, which only a worker idle in the pool can
    // take up — not one blocked waiting for the preparation, as every worker of a one-block
    // batch would be (the later batches are prepared by the tail of the one before).
    if let Some(first) = batches.first() {
        pool.install(|| {
            first.par_iter().zip(&prepared).for_each(|(b, slot)| {
                timed_prepare(slot, chain, b);
            })
        });
    }
    for (k, batch) in batches.iter().enumerate() {
        let next = batches.get(k + 1).copied().unwrap_or_default();
        prepared = run_batch(pool, chain, batch, prepared, next, config.scheduler, &mut run);
    }
    run.wall = start.elapsed();
    run
}

fn new_slots(n: usize) -> Vec<PrepareSlot> {
    (0..n).map(|_| OnceLock::new()).collect()
}

/// Runs one batch; `prepared` holds its blocks' preparations made so far (by the previous
/// batch's tail). Returns the preparations made for `next`.
fn run_batch<'a>(
    pool: &rayon::ThreadPool,
    chain: &'a ChainSpec,
    blocks: &'a [ParallelBlock<'a>],
    prepared: Vec<PrepareSlot>,
    next: &'a [ParallelBlock<'a>],
    scheduler: Scheduler,
    run: &mut ParallelRun,
) -> Vec<PrepareSlot> {
    let gas_limits = |b: &ParallelBlock<'_>| -> Vec<u64> {
        b.block.transactions.iter().map(alloy_consensus::Transaction::gas_limit).collect()
    };
    let weights: Vec<Vec<u64>> = blocks
        .iter()
        .map(|b| match scheduler {
            Scheduler::Ols => vec![0; b.block.transactions.len()],
            Scheduler::GasLimit => gas_limits(b),
            Scheduler::GasUsed => b.gas_used_hint.map_or_else(|| gas_limits(b), <[u64]>::to_vec),
        })
        .collect();
    let weight_refs: Vec<&[u64]> = weights.iter().map(Vec::as_slice).collect();
    let shared = Shared {
        chain,
        blocks,
        prepared,
        tasks: (0..blocks.len() as u32)
            .map(|b| (b, PREPARE))
            .chain(crate::task_order(scheduler, &weight_refs))
            .chain((0..next.len() as u32).map(|b| (b, PREPARE_NEXT)))
            .collect(),
        next_blocks: next,
        next_prepared: new_slots(next.len()),
        next: AtomicUsize::new(0),
        remaining: weights.iter().map(|w| AtomicUsize::new(w.len())).collect(),
        results: weights.iter().map(|w| (0..w.len()).map(|_| Mutex::new(None)).collect()).collect(),
        existence: blocks.iter().map(|_| Mutex::new(Vec::new())).collect(),
        nanos: weights.iter().map(|w| (0..w.len()).map(|_| AtomicU64::new(0)).collect()).collect(),
        outcomes: blocks.iter().map(|_| OnceLock::new()).collect(),
    };

    pool.broadcast(|_| worker::work(&shared));
    // Blocks without transactions have no last transaction to trigger their commit.
    for (b, cell) in shared.outcomes.iter().enumerate() {
        if blocks[b].block.transactions.is_empty() {
            let _ = cell.get_or_init(|| commit::timed_commit(&shared, b));
        }
    }

    let Shared { prepared, nanos, outcomes, next_prepared, .. } = shared;
    let mut spent = Vec::with_capacity(prepared.len());
    for (b, ((prep, cell), nanos)) in prepared.into_iter().zip(outcomes).zip(nanos).enumerate() {
        let (outcome, commit_nanos) = cell.into_inner().unwrap_or_else(|| {
            // Unreachable unless a worker panicked; report rather than lose the block.
            let reason = "block was not committed".into();
            let phase = gigagas_bal::Phase::PostExecution;
            (Err(ExecutionError::Evm { block: blocks[b].block.number(), phase, reason }), 0)
        });
        run.outcomes.push(outcome);
        run.tx_nanos.push(nanos.into_iter().map(AtomicU64::into_inner).collect());
        run.commit_nanos.push(commit_nanos);
        let (prep, ns) = prep.into_inner().map_or((None, 0), |(p, ns)| (Some(p), ns));
        run.prepare_nanos.push(ns);
        spent.push(prep);
    }
    // Freeing a megablock's BAL indexes is tens of thousands of deallocations: spread them over
    // the workers rather than leaving them to this thread.
    pool.install(|| spent.into_par_iter().for_each(drop));
    next_prepared
}
