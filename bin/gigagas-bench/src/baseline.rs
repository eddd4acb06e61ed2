//! The plain sequential baseline that every throughput figure is a ratio against.

use alloy_evm::{Evm, FromRecoveredTx};
use alloy_primitives::Address;
use gigagas_bal::Phase;
use gigagas_executor::{EvmConfig, ExecutionError};
use gigagas_primitives::{BlockInput, ChainSpec};
use gigagas_state::PreState;
use revm::{context::TxEnv, database::State};

/// Executes the transactions of `block` the plainest way: one revm `State` over the pre-state,
/// `transact_commit` per transaction, no BAL builder, no receipts, no system calls or rewards.
///
/// Returns the gas used by the transactions (gas).
///
/// # Errors
/// [`ExecutionError`] naming block and tx index when revm rejects a transaction.
pub fn execute_baseline(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    pre_state: &PreState,
) -> Result<u64, ExecutionError> {
    let mut state = State::builder().with_database_ref(pre_state).build();
    let mut evm = EvmConfig::new(chain).block_evm(block, &mut state);
    let mut gas = 0;
    for (i, (tx, sender)) in block.transactions.iter().zip(senders).enumerate() {
        let tx_env = TxEnv::from_recovered_tx(tx, *sender);
        let result = evm.transact_commit(tx_env).map_err(|e| ExecutionError::Evm {
            block: block.number(),
            phase: Phase::Tx(i),
            reason: e.to_string(),
        })?;
        gas += result.tx_gas_used();
    }
    Ok(gas)
}
