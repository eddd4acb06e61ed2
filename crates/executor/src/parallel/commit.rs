//! Ordered commit and validation of one block after all its transactions ran.

use super::{prepare::Prepared, worker::TxExec, ParallelBlock, Shared};
use crate::{
    env::{block_executor, map_block_error},
    sequential::execute_sequential,
    BlockOutcome, ExecutionError, PostStateDiff,
};
use alloy_consensus::Transaction as _;
use alloy_evm::{block::BlockExecutor, eth::EthTxResult};
use gigagas_bal::{
    compute_block_access_list_hash, merge_fragments,
    writes::{check_writes, fragment_writes},
    BalValidationError, BlockAccessIndex, Phase,
};
use gigagas_primitives::ChainSpec;
use revm::{context::result::ResultAndState, database::State};
use std::time::Instant;

/// [`commit`] with its duration in nanoseconds.
pub(super) fn timed_commit(
    shared: &Shared<'_>,
    b: usize,
) -> (Result<BlockOutcome, ExecutionError>, u64) {
    let start = Instant::now();
    let outcome = commit(shared, b);
    (outcome, start.elapsed().as_nanos() as u64)
}

fn commit(shared: &Shared<'_>, b: usize) -> Result<BlockOutcome, ExecutionError> {
    let pb = &shared.blocks[b];
    let prep = shared.prepared[b].as_ref().map_err(Clone::clone)?;
    let number = pb.block.number();
    let n = pb.block.transactions.len();

    // Index 0 first, so that errors come out in BAL index order: pre-execution system calls
    // (EIP-4788 beacon root, EIP-2935 history).
    let pre_fragment = {
        let mut state = bal_state(pb, prep);
        {
            let mut ex = block_executor(shared.chain, pb.block, &mut state);
            ex.apply_pre_execution_changes()
                .map_err(|e| map_block_error(number, Phase::PreExecution, e))?;
        }
        state.take_built_bal().unwrap_or_default()
    };
    check_writes(number, Phase::PreExecution, prep.writes.at(0), &fragment_writes(&pre_fragment))?;

    let mut txs: Vec<TxExec> = Vec::with_capacity(n);
    for (i, cell) in shared.results[b].iter().enumerate() {
        match cell.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(Ok(t)) => txs.push(t),
            Some(Err(e)) => return Err(e),
            None => {
                return Err(ExecutionError::Evm {
                    block: number,
                    phase: Phase::Tx(i),
                    reason: "transaction was not executed".into(),
                })
            }
        }
    }
    if let Some((i, address)) =
        txs.iter().enumerate().find_map(|(i, t)| t.stale_view.map(|a| (i, a)))
    {
        let reason = format!(
            "tx {i} touches account {address}, destroyed earlier in the block (pre-Cancun \
             SELFDESTRUCT): re-executed in order"
        );
        return fallback(shared.chain, pb, prep, reason);
    }

    // Transactions in order (cumulative gas, receipts), then index n + 1: rewards, withdrawals,
    // EIP-7002/7251 requests.
    let post_index = BlockAccessIndex::new(n as u64 + 1);
    let mut state = bal_state(pb, prep);
    state.set_bal_index(post_index);
    let mut tx_gas_used = Vec::with_capacity(n);
    let mut fragments = Vec::with_capacity(n + 2);
    let result = {
        let mut ex = block_executor(shared.chain, pb.block, &mut state);
        for (i, (tx, t)) in pb.block.transactions.iter().zip(txs).enumerate() {
            let available = pb.block.header.gas_limit.saturating_sub(ex.cumulative_tx_gas_used);
            if tx.gas_limit() > available {
                return Err(ExecutionError::GasLimitExceeded {
                    block: number,
                    tx_index: i,
                    gas_limit: tx.gas_limit(),
                    available,
                });
            }
            tx_gas_used.push(t.result.tx_gas_used());
            fragments.push(t.fragment);
            ex.commit_transaction(EthTxResult {
                result: ResultAndState { result: t.result, state: Default::default() },
                blob_gas_used: tx.blob_gas_used().unwrap_or_default(),
                tx_type: tx.tx_type(),
            });
        }
        ex.finish().map_err(|e| map_block_error(number, Phase::PostExecution, e))?.1
    };
    let post_fragment = state.take_built_bal().unwrap_or_default();
    check_writes(
        number,
        Phase::PostExecution,
        prep.writes.at(post_index.0),
        &fragment_writes(&post_fragment),
    )?;

    // The BAL of this execution must be the given BAL (catches e.g. phantom reads).
    let rebuilt = merge_fragments(
        std::iter::once(&pre_fragment).chain(&fragments).chain(std::iter::once(&post_fragment)),
    )
    .into_alloy_bal();
    let bal_hash = compute_block_access_list_hash(&rebuilt);
    if bal_hash != prep.hash {
        return Err(hash_mismatch(number, prep.hash, bal_hash, pb, &rebuilt));
    }
    Ok(BlockOutcome {
        number,
        gas_used: result.gas_used,
        tx_gas_used,
        receipts: result.receipts,
        post_state: PostStateDiff::from_bal(&rebuilt, pb.pre_state),
        bal: rebuilt,
        bal_hash,
        fallback: None,
    })
}

/// A `State` over the block's pre-state, positioned by its BAL, recording a BAL fragment.
fn bal_state<'a>(
    pb: &ParallelBlock<'a>,
    prep: &Prepared,
) -> State<revm::database::WrapDatabaseRef<&'a gigagas_state::PreState>> {
    State::builder()
        .with_database_ref(pb.pre_state)
        .with_bal(prep.bal.clone())
        .with_bal_builder()
        .build()
}

fn hash_mismatch(
    block: u64,
    expected: alloy_primitives::B256,
    found: alloy_primitives::B256,
    pb: &ParallelBlock<'_>,
    rebuilt: &[alloy_eip7928::AccountChanges],
) -> ExecutionError {
    let diff = alloy_eip7928::BalDiff::between(pb.bal, rebuilt);
    BalValidationError::HashMismatch {
        block,
        expected,
        found,
        diff: diff.first_diff.map_or_else(|| "no account differs".into(), |d| format!("{d:?}")),
    }
    .into()
}

/// In-order re-execution of a block whose parallel view was not the in-order one; the BAL it
/// builds must still hash to the given BAL's hash.
fn fallback(
    chain: &ChainSpec,
    pb: &ParallelBlock<'_>,
    prep: &Prepared,
    reason: String,
) -> Result<BlockOutcome, ExecutionError> {
    let mut outcome = execute_sequential(chain, pb.block, pb.senders, pb.pre_state)?;
    if outcome.bal_hash != prep.hash {
        return Err(hash_mismatch(
            pb.block.number(),
            prep.hash,
            outcome.bal_hash,
            pb,
            &outcome.bal,
        ));
    }
    outcome.fallback = Some(reason);
    Ok(outcome)
}
