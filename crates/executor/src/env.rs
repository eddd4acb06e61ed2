//! Shared EVM plumbing: block execution context, EVM construction and error mapping.

use crate::{receipt::MemoReceiptBuilder, ExecutionError};
use alloy_evm::{
    block::BlockExecutionError,
    eth::{EthBlockExecutionCtx, EthBlockExecutor},
    precompiles::PrecompilesMap,
    EthEvm, EthEvmFactory, EvmFactory,
};
use gigagas_bal::{BalValidationError, Phase};
use gigagas_primitives::{BlockInput, ChainSpec, ForkSchedule};
use gigagas_state::{PreState, StateError};
use revm::{
    context::result::EVMError,
    database::{State, WrapDatabaseRef},
    database_interface::bal::EvmDatabaseError,
    inspector::NoOpInspector,
    state::bal::BalError,
};
use std::borrow::Cow;

/// A revm `State` over a block's in-memory pre-state.
pub(crate) type PreStateDb<'a> = State<WrapDatabaseRef<&'a PreState>>;

/// The EVM every executor uses: alloy-evm's Ethereum EVM (revm mainnet handler).
pub(crate) type BlockEvm<DB> = EthEvm<DB, NoOpInspector, PrecompilesMap>;

/// alloy-evm's Ethereum block executor over `DB`.
pub(crate) type BlockExec<'a, DB> =
    EthBlockExecutor<'a, BlockEvm<DB>, &'a ForkSchedule, MemoReceiptBuilder>;

/// alloy-evm's execution context of `block` (parent hash, beacon root, withdrawals).
/// Ommer headers are not in the mainnet data set, so ommers are empty (see docs/architecture.md).
pub(crate) fn block_ctx(block: &BlockInput) -> EthBlockExecutionCtx<'_> {
    EthBlockExecutionCtx {
        parent_hash: block.header.parent_hash,
        parent_beacon_block_root: block.header.parent_beacon_block_root,
        ommers: &block.ommers,
        withdrawals: block.withdrawals.as_ref().map(|w| Cow::Borrowed(w.as_slice())),
        extra_data: block.header.extra_data.clone(),
        tx_count_hint: Some(block.transactions.len()),
        slot_number: block.header.slot_number,
    }
}

/// An EVM for `block` over `db`.
pub(crate) fn block_evm<DB: alloy_evm::Database>(
    chain: &ChainSpec,
    block: &BlockInput,
    db: DB,
) -> BlockEvm<DB> {
    EthEvmFactory::default().create_evm(db, chain.evm_env(&block.header))
}

/// An Ethereum block executor for `block` over `db`.
pub(crate) fn block_executor<'a, DB: alloy_evm::block::StateDB>(
    chain: &'a ChainSpec,
    block: &'a BlockInput,
    db: DB,
) -> BlockExec<'a, DB> {
    EthBlockExecutor::new(
        block_evm(chain, block, db),
        block_ctx(block),
        &chain.eth,
        MemoReceiptBuilder::default(),
    )
}

/// Maps a revm error of a BAL-positioned `State` to an [`ExecutionError`] naming the block and
/// phase; a read outside the BAL becomes [`BalValidationError::NotInBal`].
pub(crate) fn map_evm_error(
    block: u64,
    phase: Phase,
    err: EVMError<EvmDatabaseError<StateError>>,
) -> ExecutionError {
    match err {
        EVMError::Database(EvmDatabaseError::Bal(bal)) => match bal {
            BalError::AccountNotFound { address } => {
                BalValidationError::NotInBal { block, phase, address, slot: None }.into()
            }
            BalError::SlotNotFound { address, slot } => {
                BalValidationError::NotInBal { block, phase, address, slot: Some(slot) }.into()
            }
            other => ExecutionError::Evm { block, phase, reason: other.to_string() },
        },
        EVMError::Transaction(e) => {
            ExecutionError::InvalidTransaction { block, phase, reason: e.to_string() }
        }
        other => ExecutionError::Evm { block, phase, reason: other.to_string() },
    }
}

/// Maps an alloy-evm block execution error (system calls, post-execution) to an
/// [`ExecutionError`]; a read outside the BAL becomes [`BalValidationError::NotInBal`].
pub(crate) fn map_block_error(
    block: u64,
    phase: Phase,
    err: BlockExecutionError,
) -> ExecutionError {
    if let Some(bal) = find_bal_error(&err) {
        return match *bal {
            BalError::AccountNotFound { address } => {
                BalValidationError::NotInBal { block, phase, address, slot: None }.into()
            }
            BalError::SlotNotFound { address, slot } => {
                BalValidationError::NotInBal { block, phase, address, slot: Some(slot) }.into()
            }
            ref other => ExecutionError::Evm { block, phase, reason: other.to_string() },
        };
    }
    ExecutionError::Evm { block, phase, reason: err.to_string() }
}

fn find_bal_error<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a BalError> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(bal) = e.downcast_ref::<BalError>() {
            return Some(bal);
        }
        if let Some(EvmDatabaseError::Bal(bal)) = e.downcast_ref::<EvmDatabaseError<StateError>>() {
            return Some(bal);
        }
        cur = e.source();
    }
    None
}
