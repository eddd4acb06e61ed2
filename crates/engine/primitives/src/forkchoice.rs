//! The forkchoice and its outcomes: head, safe and finalized ([`Forkchoice`]), the verdict on a
//! payload or a head ([`PayloadStatus`]), what an update did to the canonical chain
//! ([`CanonicalChange`]) and why one is refused ([`InvalidForkchoice`]).

use alloy_primitives::B256;
use gigagas_validation::ImportedBlock;

/// Why a forkchoice update was refused (execution-apis error -38002).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid forkchoice state: {0}")]
pub struct InvalidForkchoice(pub String);

/// Head, safe and finalized blocks: `(number, hash)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forkchoice {
    /// The canonical head.
    pub head: (u64, B256),
    /// The safe block, once the consensus client named one.
    pub safe: Option<(u64, B256)>,
    /// The finalized block, once the consensus client named one.
    pub finalized: Option<(u64, B256)>,
}

/// The verdict on a payload or a forkchoice head (execution-apis `PayloadStatusV1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadStatus {
    /// Executed and valid (or already known valid).
    Valid(B256),
    /// Invalid: `latest_valid_hash` is the last valid ancestor (the parent), `reason` names
    /// block, transaction, account or slot.
    Invalid {
        /// The latest valid ancestor, when known.
        latest_valid_hash: Option<B256>,
        /// Why.
        reason: String,
    },
    /// The parent (or the head) is unknown: the node needs the missing blocks first.
    Syncing,
}

impl PayloadStatus {
    /// The status's name in the Engine API: `VALID`, `INVALID` or `SYNCING`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Valid(_) => "VALID",
            Self::Invalid { .. } => "INVALID",
            Self::Syncing => "SYNCING",
        }
    }
}

/// What a forkchoice update did to the store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CanonicalChange {
    /// Blocks removed from the canonical chain (a reorg), highest first.
    pub unwound: Vec<(u64, B256)>,
    /// Blocks committed, lowest first, with their stage figures.
    pub committed: Vec<ImportedBlock>,
}
