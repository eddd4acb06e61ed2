//! Errors of this crate.

use alloy_primitives::{Address, B256};

/// Sender recovery failed for a transaction of a block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecoveryError {
    /// The signature does not recover to any public key (invalid `r`, `s`, `v`).
    #[error("block {block}: tx {tx_index} ({tx_hash}): invalid signature")]
    InvalidSignature {
        /// Block number.
        block: u64,
        /// Zero-based transaction index in the block.
        tx_index: usize,
        /// Transaction hash.
        tx_hash: B256,
    },
    /// The recovered sender differs from the `from` the input claimed.
    #[error("block {block}: tx {tx_index} ({tx_hash}): recovered sender {recovered} but input says {claimed}")]
    SenderMismatch {
        /// Block number.
        block: u64,
        /// Zero-based transaction index in the block.
        tx_index: usize,
        /// Transaction hash.
        tx_hash: B256,
        /// Sender recovered from the signature.
        recovered: Address,
        /// Sender stated by the input (the RPC `from` field).
        claimed: Address,
    },
}
