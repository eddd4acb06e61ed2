//! The parallel executor equals the sequential reference and the headers on all 52 blocks.

use crate::common::{data, parallel_blocks};
use gigagas_executor::{
    compare_outcomes,
    parallel::{execute_parallel, ParallelConfig},
    validate_header, Scheduler,
};

fn check_all(scheduler: Scheduler, batch: usize, threads: usize) {
    let d = data();
    let blocks = parallel_blocks(d, None);
    let run = execute_parallel(&d.chain, &blocks, ParallelConfig { threads, scheduler, batch });
    assert_eq!(run.outcomes.len(), 52);
    let mut fallbacks = Vec::new();
    for (((b, reference), outcome), input) in
        d.blocks.iter().zip(&d.reference).zip(&run.outcomes).zip(&blocks)
    {
        let outcome = outcome.as_ref().unwrap_or_else(|e| panic!("{scheduler}/{batch}: {e}"));
        compare_outcomes(reference, outcome, input.bal)
            .unwrap_or_else(|e| panic!("{scheduler}/{batch}: {e}"));
        validate_header(&d.chain, &b.block, outcome, input.bal).unwrap_or_else(|e| panic!("{e}"));
        if outcome.fallback.is_some() {
            fallbacks.push(outcome.number);
        }
    }
    // The two pre-Cancun blocks where a transaction touches an account destroyed earlier in the
    // block (../shared/DESIGN.md) are re-executed in order; no other block is.
    assert_eq!(fallbacks, vec![116_525, 1_796_867], "{scheduler}/{batch}");
}

#[test]
fn ols_block_by_block() {
    check_all(Scheduler::Ols, 1, 2);
}

#[test]
fn ols_all_blocks_megablock() {
    check_all(Scheduler::Ols, 52, 2);
}

#[test]
fn gas_limit_block_by_block() {
    check_all(Scheduler::GasLimit, 1, 2);
}

#[test]
fn gas_limit_megablock() {
    check_all(Scheduler::GasLimit, 52, 2);
}

#[test]
fn gas_used_block_by_block() {
    check_all(Scheduler::GasUsed, 1, 2);
}

#[test]
fn gas_used_megablock_single_thread() {
    check_all(Scheduler::GasUsed, 52, 1);
}
