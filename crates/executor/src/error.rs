//! Errors of the executor stage, and the mapping of alloy-evm's and revm's errors onto them.
//!
//! A block is rejected only for a reason about the block; a failed read of the state's source
//! (the database) becomes [`ExecutionError::Database`], which [`ExecutionError::is_internal`]
//! reports, wherever in revm's or alloy-evm's error chain it surfaces.

use alloy_evm::block::BlockExecutionError;
use alloy_primitives::{Address, U256};
use gigagas_bal::{BalValidationError, Phase};
use gigagas_primitives::RecoveryError;
use gigagas_state::StateError;
use revm::database_interface::{bal::EvmDatabaseError, DBErrorMarker};

/// Why a block failed to execute or validate. Every variant names the block; those about one
/// transaction name its index ([`Phase`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecutionError {
    /// The BAL does not match execution (value, dropped/phantom/moved write, missing read, hash).
    #[error(transparent)]
    Bal(#[from] BalValidationError),
    /// A signature does not recover, or recovers to another sender than the input claims.
    #[error(transparent)]
    Recovery(#[from] RecoveryError),
    /// The pre-state could not answer a read outside the EVM (a backed state's source failed).
    #[error("block {block}: pre-state: {source}")]
    State {
        /// Block number.
        block: u64,
        /// The state's error.
        source: gigagas_state::StateError,
    },
    /// A read of the state's source (the database) failed while the block executed: an
    /// internal fault, not a verdict on the block (see [`ExecutionError::is_internal`]).
    #[error("block {block}: the state's source failed during execution: {source}")]
    Database {
        /// Block number.
        block: u64,
        /// The first failed read.
        source: gigagas_state::StateError,
    },
    /// The EVM rejected a transaction (nonce, balance, intrinsic gas, ...).
    #[error("block {block}: {phase}: invalid transaction: {reason}")]
    InvalidTransaction {
        /// Block number.
        block: u64,
        /// Transaction (or system phase).
        phase: Phase,
        /// revm's reason.
        reason: String,
    },
    /// The state could not answer a read (missing ancestor hash or bytecode), or another
    /// EVM-level failure.
    #[error("block {block}: {phase}: {reason}")]
    Evm {
        /// Block number.
        block: u64,
        /// Transaction (or system phase).
        phase: Phase,
        /// What failed.
        reason: String,
    },
    /// A transaction's gas limit exceeds the gas left in the block.
    #[error("block {block}: tx {tx_index}: gas limit {gas_limit} exceeds the {available} gas left in the block")]
    GasLimitExceeded {
        /// Block number.
        block: u64,
        /// Zero-based transaction index.
        tx_index: usize,
        /// The transaction's gas limit (gas).
        gas_limit: u64,
        /// Block gas limit minus gas used before it (gas).
        available: u64,
    },
    /// Execution does not reproduce a header field.
    #[error("block {block}: {field} mismatch: header has {expected}, execution gives {found}")]
    Header {
        /// Block number.
        block: u64,
        /// `gasUsed`, `receiptsRoot`, `logsBloom` or `blockAccessListHash`.
        field: &'static str,
        /// The header's value.
        expected: String,
        /// Execution's value.
        found: String,
    },
    /// The parallel result differs from the sequential reference.
    #[error(
        "block {block}: parallel result differs from the sequential reference in {what}: {detail}"
    )]
    Divergence {
        /// Block number.
        block: u64,
        /// `gas used`, `receipts`, `BAL hash` or `post-state`.
        what: &'static str,
        /// First difference, naming tx index, account and slot.
        detail: String,
    },
}

impl ExecutionError {
    /// The block number the error is about.
    pub fn block(&self) -> u64 {
        match self {
            Self::Bal(e) => match e {
                BalValidationError::Structure { block, .. }
                | BalValidationError::WriteMismatch { block, .. }
                | BalValidationError::NotInBal { block, .. }
                | BalValidationError::HashMismatch { block, .. }
                | BalValidationError::InvalidCode { block, .. }
                | BalValidationError::TooManyItems { block, .. }
                | BalValidationError::Untouched { block, .. } => *block,
            },
            Self::Recovery(RecoveryError::InvalidSignature { block, .. })
            | Self::Recovery(RecoveryError::SenderMismatch { block, .. }) => *block,
            Self::InvalidTransaction { block, .. }
            | Self::Evm { block, .. }
            | Self::GasLimitExceeded { block, .. }
            | Self::Header { block, .. }
            | Self::Divergence { block, .. }
            | Self::State { block, .. }
            | Self::Database { block, .. } => *block,
        }
    }

    /// Whether the error is an internal fault (a failed database read) rather than a reason to
    /// reject the block: [`ExecutionError::Database`], and [`ExecutionError::State`] when its
    /// source failed ([`gigagas_state::StateError::Source`]). A node answers such a block with
    /// an error (never INVALID) and may retry it; every other variant is about the block.
    pub fn is_internal(&self) -> bool {
        match self {
            Self::Database { .. } => true,
            Self::State { source, .. } => matches!(source, gigagas_state::StateError::Source(_)),
            _ => false,
        }
    }
}

/// Why a read of the parallel workers' BAL-positioned database failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PositionedError {
    /// The BAL lists neither the account nor (when `slot` is set) the slot.
    #[error("read of account {address}{} which the BAL does not list", slot.map(|s| format!(" slot {s:#x}")).unwrap_or_default())]
    NotInBal {
        /// Account read.
        address: Address,
        /// Slot read, when the account is listed but the slot is not.
        slot: Option<U256>,
    },
    /// The pre-state could not answer (missing code or ancestor hash, a backed source failed).
    #[error(transparent)]
    State(#[from] StateError),
}

impl DBErrorMarker for PositionedError {}

impl PositionedError {
    /// The executor error for this failure in `phase` of block `block`.
    pub(crate) fn into_execution_error(self, block: u64, phase: Phase) -> ExecutionError {
        match self {
            Self::NotInBal { address, slot } => {
                BalValidationError::NotInBal { block, phase, address, slot }.into()
            }
            Self::State(e) => state_error(block, phase, e),
        }
    }
}

/// The executor error for a pre-state read that failed in `phase` of block `block`: a failed
/// source read is [`ExecutionError::Database`] (internal), a missing ancestor hash or code is
/// [`ExecutionError::Evm`] (as revm reports it).
pub(crate) fn state_error(block: u64, phase: Phase, e: StateError) -> ExecutionError {
    match e {
        StateError::Source(_) => ExecutionError::Database { block, source: e },
        other => ExecutionError::Evm { block, phase, reason: other.to_string() },
    }
}

/// Maps an alloy-evm block execution error (system calls, transactions, post-execution) to an
/// [`ExecutionError`]: a read outside the BAL (parallel commit) becomes
/// [`BalValidationError::NotInBal`], a failed read of the state's source
/// [`ExecutionError::Database`], anything else [`ExecutionError::Evm`].
pub(crate) fn map_block_error(
    block: u64,
    phase: Phase,
    err: BlockExecutionError,
) -> ExecutionError {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(&err);
    while let Some(e) = cur {
        if let Some(p) = e.downcast_ref::<PositionedError>() {
            return p.clone().into_execution_error(block, phase);
        }
        if let Some(EvmDatabaseError::Database(p)) =
            e.downcast_ref::<EvmDatabaseError<PositionedError>>()
        {
            return p.clone().into_execution_error(block, phase);
        }
        if let Some(s) = e.downcast_ref::<StateError>() {
            return state_error(block, phase, s.clone());
        }
        if let Some(EvmDatabaseError::Database(s)) =
            e.downcast_ref::<EvmDatabaseError<StateError>>()
        {
            return state_error(block, phase, s.clone());
        }
        cur = e.source();
    }
    ExecutionError::Evm { block, phase, reason: err.to_string() }
}
