//! Re-execution of a block's transactions under a revm inspector (`debug_trace*`): the block's
//! pre-execution system calls, then its transactions in order, committed one by one, each seen
//! by the inspector. System calls are not inspected (as geth's tracers do not trace them).
//! Each transaction's result and state changes are handed out with the state before them (for
//! tracers that diff the two, e.g. geth's `prestateTracer`), then committed.

use crate::{error::map_block_error, evm_config::EvmConfig, ExecutionError};
use alloy_consensus::transaction::Recovered;
use alloy_evm::{block::BlockExecutor, eth::EthEvmContext, Evm};
use alloy_primitives::Address;
use gigagas_bal::Phase;
use gigagas_primitives::{BlockInput, ChainSpec};
use gigagas_state::PreState;
use revm::{
    context::result::{HaltReason, ResultAndState},
    database::{State, WrapDatabaseRef},
    Inspector,
};

/// The revm database a replay runs on.
pub type ReplayDb<'a> = State<WrapDatabaseRef<&'a PreState>>;

/// Replays the first `count` transactions of `block` (all when `None`) on `pre_state` (the
/// state after the parent block) with `inspector` attached; after transaction `i` executes,
/// `on_tx(i, inspector, result and state changes, state before the transaction)` runs (e.g. to
/// take the trace and reset the inspector), then the changes are committed. `senders` holds one
/// recovered sender per transaction.
///
/// # Errors
/// [`ExecutionError`] naming block and phase when a system call or a transaction fails.
pub fn replay_block<I, F>(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    pre_state: &PreState,
    inspector: I,
    count: Option<usize>,
    mut on_tx: F,
) -> Result<(), ExecutionError>
where
    I: for<'a> Inspector<EthEvmContext<&'a mut ReplayDb<'a>>>,
    F: FnMut(usize, &mut I, &ResultAndState<HaltReason>, &ReplayDb<'_>),
{
    let number = block.number();
    let mut state = State::builder().with_database_ref(pre_state).build();
    let mut ex = EvmConfig::new(chain).block_executor_with_inspector(block, &mut state, inspector);
    ex.evm_mut().disable_inspector();
    ex.apply_pre_execution_changes()
        .map_err(|e| map_block_error(number, Phase::PreExecution, e))?;
    ex.evm_mut().enable_inspector();
    let n = count.unwrap_or(block.transactions.len()).min(block.transactions.len());
    for (i, (tx, sender)) in block.transactions.iter().zip(senders).take(n).enumerate() {
        let out = ex
            .execute_transaction_without_commit(Recovered::new_unchecked(tx, *sender))
            .map_err(|e| map_block_error(number, Phase::Tx(i), e))?;
        let (db, inspector, _) = ex.evm_mut().components_mut();
        on_tx(i, inspector, &out.result, db);
        ex.commit_transaction(out);
    }
    Ok(())
}
