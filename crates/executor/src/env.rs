//! Shared EVM plumbing: block execution context, EVM construction and error mapping.

use crate::parallel::PositionedError;
use crate::{receipt::MemoReceiptBuilder, ExecutionError};
use alloy_evm::{
    block::BlockExecutionError,
    eth::{EthBlockExecutionCtx, EthBlockExecutor},
    precompiles::PrecompilesMap,
    EthEvm, EthEvmFactory, EvmFactory,
};
use gigagas_bal::Phase;
use gigagas_primitives::{BlockInput, ChainSpec, ForkSchedule};
use revm::{database_interface::bal::EvmDatabaseError, inspector::NoOpInspector};
use std::borrow::Cow;

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

/// Maps an alloy-evm block execution error (system calls, post-execution) to an
/// [`ExecutionError`]; a read outside the BAL (parallel commit) becomes
/// [`gigagas_bal::BalValidationError::NotInBal`].
pub(crate) fn map_block_error(
    block: u64,
    phase: Phase,
    err: BlockExecutionError,
) -> ExecutionError {
    match find_positioned_error(&err) {
        Some(e) => e.clone().into_execution_error(block, phase),
        None => ExecutionError::Evm { block, phase, reason: err.to_string() },
    }
}

/// The positioned read failure somewhere in `err`'s chain of sources, if any.
fn find_positioned_error<'a>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a PositionedError> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(p) = e.downcast_ref::<PositionedError>() {
            return Some(p);
        }
        if let Some(EvmDatabaseError::Database(p)) =
            e.downcast_ref::<EvmDatabaseError<PositionedError>>()
        {
            return Some(p);
        }
        cur = e.source();
    }
    None
}
