//! The executor on the real mainnet blocks, in memory: sender recovery on one core, the
//! sequential reference on one core, the parallel executor (BAL-driven, gas-limit order) block by
//! block and as one megablock at 1..=cores threads, and the critical-path projection of a
//! one-thread calibration run to more threads than the machine has.
//!
//! Flow: load blocks → recover senders (timed, 1 thread) → sequential reference per block (timed;
//! its BAL drives the parallel runs, its outcome checks them) → parallel runs, rounds alternated
//! so that drifts of the machine's speed hit every configuration alike → medians.

use crate::{
    error::HwError,
    projection::{block_costs, project},
};
use alloy_primitives::Address;
use gigagas_bal::BlockAccessList;
use gigagas_executor::{
    compare_outcomes,
    parallel::{execute_parallel_on, executor_pool, ParallelBlock, ParallelConfig, ParallelRun},
    sequential::execute_sequential,
    BlockOutcome, Scheduler,
};
use gigagas_primitives::ChainSpec;
use gigagas_state::mainnet::{self, MainnetBlock};
use serde::{Deserialize, Serialize};
use std::{
    path::Path,
    time::{Duration, Instant},
};

/// The scheduler the node runs with (`--engine.scheduler` default) and the model assumes.
pub const SCHEDULER: Scheduler = Scheduler::GasLimit;

/// One measured or projected parallel configuration.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ScalingPoint {
    /// Worker threads.
    pub threads: usize,
    /// `false`: block by block; `true`: all blocks as one megablock.
    pub megablock: bool,
    /// Throughput (Mgas/s).
    pub mgas_per_s: f64,
    /// Over the one-core sequential reference of the same blocks.
    pub speedup: f64,
}

/// What the mainnet blocks measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecMeasure {
    /// Blocks executed (all validated: every parallel outcome equals the reference's).
    pub blocks: usize,
    /// Transactions.
    pub transactions: usize,
    /// Gas used by all blocks (gas).
    pub gas: u64,
    /// Sender recovery of all transactions on one thread (seconds).
    pub recovery_single_s: f64,
    /// Sender recovery of all transactions (blocks one after another, each block's
    /// transactions in parallel, as the node does) at 1..=cores threads: (threads, seconds).
    pub recovery: Vec<(usize, f64)>,
    /// The sequential reference on one core, senders known (seconds, median).
    pub sequential_s: f64,
    /// Single-core sequential throughput (Mgas/s).
    pub sequential_mgas_per_s: f64,
    /// Parallel runs measured here (medians).
    pub measured: Vec<ScalingPoint>,
    /// The critical-path projection of the one-thread calibration run (1..=64 threads).
    pub projected: Vec<ScalingPoint>,
}

impl ExecMeasure {
    /// Sender recovery's speedup at `threads` over one thread: measured where this machine has
    /// the threads, else linear from the largest measured count at its measured efficiency.
    pub fn recovery_speedup(&self, threads: usize) -> f64 {
        let single = self.recovery_single_s.max(1e-12);
        if let Some(&(_, s)) = self.recovery.iter().find(|(t, _)| *t == threads) {
            return single / s.max(1e-12);
        }
        let Some(&(top, s)) =
            self.recovery.iter().filter(|(t, _)| *t <= threads).max_by_key(|(t, _)| *t)
        else {
            return threads as f64;
        };
        threads as f64 * (single / s.max(1e-12)) / top as f64
    }

    /// The speedup over the sequential reference at `threads`, block by block or as a
    /// megablock: measured where this machine has the threads, else projected, the projection
    /// scaled by measured/projected at the machine's largest measured count (so that what the
    /// model misses here, memory bandwidth and wake-ups, is carried over, not dropped).
    pub fn speedup(&self, threads: usize, megablock: bool) -> f64 {
        let find = |v: &[ScalingPoint], t: usize| {
            v.iter().find(|p| p.threads == t && p.megablock == megablock).map(|p| p.speedup)
        };
        if let Some(s) = find(&self.measured, threads) {
            return s;
        }
        let top = self
            .measured
            .iter()
            .filter(|p| p.megablock == megablock && p.threads <= threads)
            .map(|p| p.threads)
            .max()
            .unwrap_or(1);
        let correction = match (find(&self.measured, top), find(&self.projected, top)) {
            (Some(m), Some(p)) if p > 0.0 => m / p,
            _ => 1.0,
        };
        let projected = find(&self.projected, threads).unwrap_or_else(|| {
            // Beyond the projected counts: the last projected speedup (flat).
            self.projected
                .iter()
                .filter(|p| p.megablock == megablock)
                .map(|p| p.speedup)
                .fold(1.0, f64::max)
        });
        projected * correction
    }
}

/// Thread counts measured and projected: powers of two and the machine's core count.
pub fn thread_counts(limit: usize) -> Vec<usize> {
    let mut v: Vec<usize> =
        std::iter::successors(Some(1usize), |&t| Some(t * 2)).take_while(|&t| t <= limit).collect();
    if !v.contains(&limit) {
        v.push(limit);
    }
    v
}

/// Measures the executor on the mainnet blocks in `data` (`../shared/data/mainnet`), `repeat`
/// rounds, at 1..=`cores` threads; `tick` is called once per timed run (for a progress bar).
///
/// # Errors
/// [`HwError::Load`] when the blocks cannot be read; [`HwError::Block`] when a block fails
/// recovery, its reference run, or a parallel run differs from the reference (the executor is
/// then wrong and no figure is given).
pub fn measure(
    data: &Path,
    repeat: usize,
    cores: usize,
    tick: &(dyn Fn() + Sync),
) -> Result<ExecMeasure, HwError> {
    let chain = ChainSpec::mainnet();
    let blocks = mainnet::load(data, None, &|| {})?;
    let repeat = repeat.max(1);
    // Recovered once here (the timed recoveries below are per thread count, from 1).
    let senders: Vec<Vec<Address>> = blocks
        .iter()
        .map(|b| {
            b.block
                .par_recover(&chain)
                .map_err(|e| HwError::Block { number: b.block.number(), reason: e.to_string() })
        })
        .collect::<Result<_, _>>()?;

    let mut reference: Vec<BlockOutcome> = Vec::with_capacity(blocks.len());
    for (b, s) in blocks.iter().zip(&senders) {
        reference.push(
            execute_sequential(&chain, &b.block, s, &b.pre_state)
                .map_err(|e| HwError::Block { number: b.block.number(), reason: e.to_string() })?,
        );
    }
    let empty = Vec::new();
    let inputs = parallel_inputs(&blocks, &senders, &reference, &empty);
    let n = blocks.len();
    let gas: u64 = blocks.iter().map(|b| b.block.header.gas_used).sum();
    let counts = thread_counts(cores.max(1));
    let pools: Vec<rayon::ThreadPool> =
        counts.iter().map(|&t| executor_pool(t).expect("build executor pool")).collect();

    let mut recovery = Vec::new();
    for (pool, &threads) in pools.iter().zip(&counts) {
        let mut times = Vec::new();
        for _ in 0..repeat {
            let t = Instant::now();
            pool.install(|| blocks.iter().for_each(|b| drop(b.block.par_recover(&chain))));
            times.push(t.elapsed());
        }
        recovery.push((threads, median(times).as_secs_f64()));
    }
    let mut sequential = Vec::new();
    let mut runs: Vec<Vec<Duration>> = vec![Vec::new(); counts.len() * 2];
    let mut calibration: Vec<ParallelRun> = Vec::new();
    for _ in 0..repeat {
        let t = Instant::now();
        for (b, s) in blocks.iter().zip(&senders) {
            drop(execute_sequential(&chain, &b.block, s, &b.pre_state));
        }
        sequential.push(t.elapsed());
        tick();
        for (ci, pool) in pools.iter().enumerate() {
            for (mi, batch) in [1, n.max(1)].into_iter().enumerate() {
                let config = ParallelConfig { threads: counts[ci], scheduler: SCHEDULER, batch };
                let run = execute_parallel_on(pool, &chain, &inputs, config);
                check(&chain, &inputs, &reference, &run)?;
                runs[ci * 2 + mi].push(run.wall);
                if counts[ci] == 1 && batch > 1 {
                    calibration.push(run);
                }
                tick();
            }
        }
    }
    let sequential_s = median(sequential).as_secs_f64();
    let mgas = |s: f64| gas as f64 / 1e6 / s;
    let measured = counts
        .iter()
        .enumerate()
        .flat_map(|(ci, &threads)| {
            let runs = &runs;
            [false, true].into_iter().enumerate().map(move |(mi, megablock)| {
                let s = median(runs[ci * 2 + mi].clone()).as_secs_f64();
                ScalingPoint { threads, megablock, mgas_per_s: mgas(s), speedup: sequential_s / s }
            })
        })
        .collect();
    let block_refs: Vec<_> = blocks.iter().map(|b| &b.block).collect();
    let used: Vec<Option<&[u64]>> =
        reference.iter().map(|r| Some(r.tx_gas_used.as_slice())).collect();
    let costs = block_costs(&block_refs, &used, &calibration);
    let projected = thread_counts(64)
        .into_iter()
        .flat_map(|threads| {
            let costs = &costs;
            [false, true].into_iter().map(move |megablock| {
                let batch = if megablock { n.max(1) } else { 1 };
                let p = project(costs, threads, SCHEDULER, batch);
                ScalingPoint {
                    threads,
                    megablock,
                    mgas_per_s: p.mgas_per_s,
                    speedup: sequential_s / p.seconds.max(1e-12),
                }
            })
        })
        .collect();
    Ok(ExecMeasure {
        blocks: n,
        transactions: blocks.iter().map(|b| b.block.transactions.len()).sum(),
        gas,
        // `counts` starts at one thread.
        recovery_single_s: recovery[0].1,
        recovery,
        sequential_s,
        sequential_mgas_per_s: mgas(sequential_s),
        measured,
        projected,
    })
}

/// The parallel executor's inputs for `blocks`: their senders, each driven by the BAL its
/// sequential `reference` run built (`empty` where it built none) with its gas used as the
/// scheduler's hint.
pub fn parallel_inputs<'a>(
    blocks: &'a [MainnetBlock],
    senders: &'a [Vec<Address>],
    reference: &'a [BlockOutcome],
    empty: &'a BlockAccessList,
) -> Vec<ParallelBlock<'a>> {
    blocks
        .iter()
        .zip(senders)
        .zip(reference)
        .map(|((b, s), r)| ParallelBlock {
            block: &b.block,
            senders: s.into(),
            pre_state: &b.pre_state,
            bal: r.bal.as_ref().unwrap_or(empty),
            gas_used_hint: Some(r.tx_gas_used.as_slice()),
        })
        .collect()
}

/// Every parallel outcome must equal the reference's (and be one).
fn check(
    chain: &ChainSpec,
    inputs: &[ParallelBlock<'_>],
    reference: &[BlockOutcome],
    run: &ParallelRun,
) -> Result<(), HwError> {
    for ((input, r), outcome) in inputs.iter().zip(reference).zip(&run.outcomes) {
        let number = input.block.number();
        let o = outcome
            .as_ref()
            .map_err(|e| HwError::Block { number, reason: format!("parallel: {e}") })?;
        compare_outcomes(r, o, input.bal)
            .map_err(|e| HwError::Block { number, reason: format!("parallel: {e}") })?;
        gigagas_executor::validate_header(chain, input.block, o, input.bal)
            .map_err(|e| HwError::Block { number, reason: format!("parallel: {e}") })?;
    }
    Ok(())
}

/// The median of `xs` (the upper one for an even count; zero when empty).
pub(crate) fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort_unstable();
    xs.get(xs.len() / 2).copied().unwrap_or_default()
}
