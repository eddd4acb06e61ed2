//! The sequential reference: alloy-evm's Ethereum block executor over one revm `State`,
//! committing after every transaction, with revm's EIP-7928 BAL builder attached.

use crate::{
    env::{block_executor, map_block_error},
    BlockOutcome, ExecutionError, PostStateDiff,
};
use alloy_consensus::transaction::Recovered;
use alloy_evm::{block::BlockExecutor, Evm};
use alloy_primitives::Address;
use gigagas_bal::{BlockAccessIndex, Phase};
use gigagas_primitives::{BlockInput, ChainSpec};
use gigagas_state::PreState;
use revm::database::State;

/// Executes `block` in order against `pre_state` as reth does (pre-execution system calls,
/// transactions committed one by one, post-execution rewards / withdrawals / requests) and builds
/// its BAL on the way (index 0, `i + 1` per transaction, `n + 1`).
///
/// `senders` holds one recovered sender per transaction.
///
/// # Errors
/// [`ExecutionError`] naming block and phase when a transaction or system call fails.
pub fn execute_sequential(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    pre_state: &PreState,
) -> Result<BlockOutcome, ExecutionError> {
    execute_in_order(chain, block, senders, pre_state, true)
}

/// [`execute_sequential`] without revm's BAL builder: the same block execution, receipts and
/// post-state, with [`BlockOutcome::bal`] `None`. What a node needs for blocks that come without
/// a BAL and whose BAL it does not have to produce; `gigagas bench` times it to show what the
/// builder costs.
///
/// # Errors
/// As [`execute_sequential`].
pub fn execute_sequential_without_bal(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    pre_state: &PreState,
) -> Result<BlockOutcome, ExecutionError> {
    execute_in_order(chain, block, senders, pre_state, false)
}

fn execute_in_order(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    pre_state: &PreState,
    build_bal: bool,
) -> Result<BlockOutcome, ExecutionError> {
    let number = block.number();
    let n = block.transactions.len();
    let mut state =
        State::builder().with_database_ref(pre_state).with_bal_builder_if(build_bal).build();
    let (result, tx_gas_used) = {
        let mut ex = block_executor(chain, block, &mut state);
        ex.evm_mut().db_mut().set_bal_index(BlockAccessIndex::PRE_EXECUTION);
        ex.apply_pre_execution_changes()
            .map_err(|e| map_block_error(number, Phase::PreExecution, e))?;
        let mut tx_gas_used = Vec::with_capacity(n);
        for (i, (tx, sender)) in block.transactions.iter().zip(senders).enumerate() {
            ex.evm_mut().db_mut().set_bal_index(BlockAccessIndex::from_tx_index(i as u64));
            let gas = ex
                .execute_transaction(Recovered::new_unchecked(tx, *sender))
                .map_err(|e| map_block_error(number, Phase::Tx(i), e))?;
            tx_gas_used.push(gas.tx_gas_used());
        }
        ex.evm_mut().db_mut().set_bal_index(BlockAccessIndex::new(n as u64 + 1));
        let (_, result) =
            ex.finish().map_err(|e| map_block_error(number, Phase::PostExecution, e))?;
        (result, tx_gas_used)
    };
    let bal = state.take_built_alloy_bal();
    Ok(BlockOutcome {
        number,
        gas_used: result.gas_used,
        tx_gas_used,
        receipts: result.receipts,
        post_state: PostStateDiff::from_cache(&state.cache, pre_state)
            .map_err(|source| ExecutionError::State { block: number, source })?,
        deleted: PostStateDiff::deleted_from_cache(&state.cache, pre_state),
        wiped: PostStateDiff::wiped_from_cache(&state.cache, pre_state),
        bal,
        requests: result.requests,
        existence: Vec::new(),
        fallback: None,
    })
}
