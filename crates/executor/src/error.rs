//! Errors of the executor stage.

use gigagas_bal::{BalValidationError, Phase};
use gigagas_primitives::RecoveryError;

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
