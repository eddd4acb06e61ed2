//! Critical-path projection: replays the parallel executor's schedule on `threads` simulated
//! workers, from per-transaction latencies measured in a real run.
//!
//! The model is the executor itself (see `gigagas_executor::parallel`): per batch, free workers first
//! claim the blocks' BAL preparations, then the transactions in scheduler order; the worker that
//! finishes a block's last transaction runs that block's commit. Batches run one after another.
//! (A worker that waits for another worker's preparation of the same block is not modelled.) Memory bandwidth, cache contention and thread wake-up are not
//! modelled, so the projection is an upper bound that the measured 1- and 2-thread runs check.

use gigagas_executor::{parallel::ParallelRun, task_order, Scheduler};
use gigagas_primitives::BlockInput;
use std::{cmp::Reverse, collections::BinaryHeap};

/// Measured costs of one block.
#[derive(Debug, Clone, Default)]
pub struct BlockCost {
    /// Gas used by the block (gas).
    pub gas: u64,
    /// Execution latency of each transaction (nanoseconds).
    pub tx_nanos: Vec<u64>,
    /// Gas limit of each transaction (gas), for [`Scheduler::GasLimit`].
    pub tx_gas_limit: Vec<u64>,
    /// Gas used by each transaction (gas), for [`Scheduler::GasUsed`].
    pub tx_gas_used: Vec<u64>,
    /// Ordered commit + validation of the block (nanoseconds).
    pub commit_nanos: u64,
    /// BAL preparation of the block (nanoseconds).
    pub prepare_nanos: u64,
}

/// The projected run of one configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projection {
    /// Simulated worker threads.
    pub threads: usize,
    /// Claim order.
    pub scheduler: Scheduler,
    /// Blocks per megablock.
    pub batch: usize,
    /// Projected wall time (seconds).
    pub seconds: f64,
    /// Projected throughput (Mgas/s).
    pub mgas_per_s: f64,
    /// Sum over batches of the longest transaction, over the projected time: the share of the
    /// time that no number of threads can remove (Amdahl).
    pub longest_tx_share: f64,
}

/// Simulates `blocks` on `threads` workers with `scheduler`, `batch` blocks per megablock.
pub fn project(
    blocks: &[BlockCost],
    threads: usize,
    scheduler: Scheduler,
    batch: usize,
) -> Projection {
    let threads = threads.max(1);
    let mut total = 0u64;
    let mut longest = 0u64;
    for chunk in blocks.chunks(batch.max(1)) {
        total += simulate_batch(chunk, threads, scheduler);
        longest += chunk.iter().flat_map(|b| b.tx_nanos.iter().copied()).max().unwrap_or(0);
    }
    let gas: u64 = blocks.iter().map(|b| b.gas).sum();
    let seconds = total as f64 / 1e9;
    Projection {
        threads,
        scheduler,
        batch,
        seconds,
        mgas_per_s: if seconds > 0.0 { gas as f64 / 1e6 / seconds } else { 0.0 },
        longest_tx_share: if total > 0 { longest as f64 / total as f64 } else { 0.0 },
    }
}

/// Per-block costs for the projection, from the one-thread calibration run with the median wall
/// time; `tx_gas_used[i]` is block `i`'s gas used per transaction from the sequential reference
/// (`None` when the reference failed: zeros).
///
/// One whole run, not per-transaction medians over runs: latencies are right-skewed (page faults,
/// cache misses), so a sum of per-transaction medians undershoots every real run (by 17–29% when
/// this was tried). The run's time outside the measured spans (freeing finished blocks' States,
/// handing results over; about a tenth of it) is spread evenly over the blocks' preparations.
pub fn block_costs(
    blocks: &[&BlockInput],
    tx_gas_used: &[Option<&[u64]>],
    runs: &[ParallelRun],
) -> Vec<BlockCost> {
    let mut by_wall: Vec<&ParallelRun> = runs.iter().collect();
    by_wall.sort_by_key(|r| r.wall);
    let Some(run) = by_wall.get(by_wall.len() / 2) else { return Vec::new() };
    let spans: u64 = run.tx_nanos.iter().flatten().sum::<u64>()
        + run.commit_nanos.iter().sum::<u64>()
        + run.prepare_nanos.iter().sum::<u64>();
    let outside = (run.wall.as_nanos() as u64).saturating_sub(spans) / blocks.len().max(1) as u64;
    blocks
        .iter()
        .enumerate()
        .map(|(bi, b)| {
            let n = b.transactions.len();
            BlockCost {
                gas: b.header.gas_used,
                tx_nanos: run.tx_nanos[bi].clone(),
                tx_gas_limit: b
                    .transactions
                    .iter()
                    .map(alloy_consensus::Transaction::gas_limit)
                    .collect(),
                tx_gas_used: tx_gas_used
                    .get(bi)
                    .copied()
                    .flatten()
                    .map_or_else(|| vec![0; n], <[u64]>::to_vec),
                commit_nanos: run.commit_nanos[bi],
                prepare_nanos: run.prepare_nanos[bi] + outside,
            }
        })
        .collect()
}

fn simulate_batch(blocks: &[BlockCost], threads: usize, scheduler: Scheduler) -> u64 {
    let weights: Vec<&[u64]> = blocks
        .iter()
        .map(|b| match scheduler {
            Scheduler::Ols | Scheduler::GasLimit => b.tx_gas_limit.as_slice(),
            Scheduler::GasUsed => b.tx_gas_used.as_slice(),
        })
        .collect();
    let tasks = task_order(scheduler, &weights);
    let mut remaining: Vec<usize> = blocks.iter().map(|b| b.tx_nanos.len()).collect();
    // Preparations first, then transactions: (block, Some(tx)) or (block, None) to prepare.
    let jobs: Vec<(usize, Option<usize>)> = (0..blocks.len())
        .map(|b| (b, None))
        .chain(tasks.iter().map(|&(b, i)| (b as usize, Some(i as usize))))
        .collect();
    // (time the worker becomes free, worker, block whose transaction it just finished)
    let mut events: BinaryHeap<Reverse<(u64, usize, Option<usize>)>> =
        (0..threads).map(|w| Reverse((0, w, None))).collect();
    let mut next = 0;
    let mut end = 0;
    while let Some(Reverse((t, w, finished))) = events.pop() {
        end = end.max(t);
        if let Some(b) = finished {
            remaining[b] -= 1;
            if remaining[b] == 0 {
                events.push(Reverse((t + blocks[b].commit_nanos, w, None)));
                continue;
            }
        }
        match jobs.get(next) {
            Some(&(b, Some(i))) => events.push(Reverse((t + blocks[b].tx_nanos[i], w, Some(b)))),
            Some(&(b, None)) => events.push(Reverse((t + blocks[b].prepare_nanos, w, None))),
            None => {}
        }
        next += 1;
    }
    // Empty blocks are committed after the workers finish, as the executor does.
    let empty = blocks.iter().filter(|b| b.tx_nanos.is_empty());
    end + empty.map(|b| b.commit_nanos).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(tx: &[u64], commit: u64) -> BlockCost {
        BlockCost {
            gas: tx.iter().sum(),
            tx_nanos: tx.to_vec(),
            tx_gas_limit: tx.to_vec(),
            tx_gas_used: tx.to_vec(),
            commit_nanos: commit,
            prepare_nanos: 0,
        }
    }

    #[test]
    fn one_thread_is_the_sum() {
        let b = [block(&[5, 3, 2], 4), block(&[1], 1)];
        assert_eq!(project(&b, 1, Scheduler::Ols, 2).seconds * 1e9, 16.0);
        assert_eq!(project(&b, 1, Scheduler::Ols, 1).seconds * 1e9, 16.0);
    }

    #[test]
    fn longest_transaction_bounds_the_block() {
        // In natural order the 10 starts late; heaviest-first starts it at once.
        let b = [block(&[1, 1, 1, 10], 1)];
        let p = project(&b, 2, Scheduler::Ols, 1);
        assert_eq!((p.seconds * 1e9).round(), 12.0);
        let p = project(&b, 2, Scheduler::GasUsed, 1);
        assert_eq!((p.seconds * 1e9).round(), 11.0);
        assert!((p.longest_tx_share - 10.0 / 11.0).abs() < 1e-9);
        // Megablocks hide one block's long transaction behind another block's work.
        let two = [block(&[10], 1), block(&[2, 2, 2, 2, 2], 1)];
        let per_block = project(&two, 2, Scheduler::GasUsed, 1).seconds;
        let mega = project(&two, 2, Scheduler::GasUsed, 2).seconds;
        assert!(mega < per_block, "{mega} < {per_block}");
    }
}
