//! The error of the block stages and the import pipeline: a block's verdict
//! ([`ImportError::Invalid`], [`ImportError::Execution`], [`ImportError::StateRoot`]) or an
//! internal fault ([`ImportError::is_internal`]).

use alloy_primitives::B256;
use gigagas_executor::ExecutionError;
use gigagas_storage_api::ProviderError;
use gigagas_trie::StateRootError;

/// Why an import (or `init`) stopped. Blocks before the failing one stay committed.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The genesis file does not parse (or cannot be written back for the store).
    #[error("genesis: {0}")]
    Genesis(#[source] serde_json::Error),
    /// The genesis state's trie cannot be built.
    #[error("genesis: {which} trie: {source}")]
    GenesisTrie {
        /// `account` or `storage`.
        which: &'static str,
        /// The trie builder's error.
        source: gigagas_trie::BuildError,
    },
    /// The genesis `config` names forks or rules gigagas does not implement, or is out of
    /// order (read as geth 1.17.10 reads it).
    #[error(transparent)]
    ChainConfig(#[from] gigagas_primitives::GenesisConfigError),
    /// The datadir has no genesis.
    #[error("datadir not initialized: run `gigagas init --genesis FILE --datadir DIR` first")]
    NotInitialized,
    /// `init` on a datadir that holds another chain.
    #[error("the datadir holds another chain (head {head} {head_hash}), not the one of genesis {genesis}")]
    OtherChain {
        /// Stored head number.
        head: u64,
        /// Stored head hash.
        head_hash: B256,
        /// Hash of the genesis offered.
        genesis: B256,
    },
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] ProviderError),
    /// The parallel executor returned no outcome for a block it was given (a bug of ours, not
    /// of the block).
    #[error("block {number}: the parallel executor returned no outcome")]
    NoOutcome {
        /// Block number.
        number: u64,
    },
    /// The engine's background persistence thread is gone (a bug of ours): the blocks it was
    /// handed stay in memory, uncommitted.
    #[error("the background persistence thread stopped")]
    Persistence,
    /// The executor's worker threads could not be started.
    #[error("executor worker pool: {0}")]
    ExecutorPool(#[from] rayon::ThreadPoolBuildError),
    /// The block file does not decode.
    #[error("block file, block {index} (byte {offset}): {reason}")]
    Decode {
        /// Position of the block in the file (0-based).
        index: usize,
        /// Byte offset of the block.
        offset: usize,
        /// The decoder's message.
        reason: String,
    },
    /// A block fails a header or body check, or does not extend the chain.
    #[error("block {number}: {reason}")]
    Invalid {
        /// Block number.
        number: u64,
        /// What is wrong.
        reason: String,
    },
    /// Execution failed or disagrees with the header (gas used, receipts root, logs bloom,
    /// requests hash).
    #[error(transparent)]
    Execution(#[from] ExecutionError),
    /// The state-root stage lacks a stored trie node.
    #[error("block {number}: state-root stage: {source}")]
    Trie {
        /// Block number.
        number: u64,
        /// The trie's error.
        source: StateRootError,
    },
    /// The store could not be unwound (a reorg): internal.
    #[error("unwinding block {number}: {reason}")]
    Unwind {
        /// The block being unwound (or the ancestor whose state was read).
        number: u64,
        /// Why.
        reason: UnwindError,
    },
    /// The computed state root differs from the header's.
    #[error("block {number}: state root {found}, header has {expected}")]
    StateRoot {
        /// Block number.
        number: u64,
        /// The header's `stateRoot`.
        expected: B256,
        /// Ours.
        found: B256,
    },
}

/// Why the store could not be unwound to a reorg's common ancestor: what the stored chain
/// lacks, never a verdict on a block.
#[derive(Debug, thiserror::Error)]
pub enum UnwindError {
    /// The block predates Cancun: a SELFDESTRUCT may have wiped storage the BAL does not list.
    #[error("cannot unwind a pre-Cancun block (SELFDESTRUCT may have wiped storage)")]
    PreCancun,
    /// No BAL is stored for the block (it names every key to restore).
    #[error("no stored BAL to unwind with")]
    MissingBal,
    /// The ancestor's state was pruned: the reorg is deeper than the pruner's window
    /// (`--prune.trie.keep`).
    #[error("the state of block {base} is pruned (held from block {earliest} on): the reorg is deeper than the pruned trie's window")]
    StatePruned {
        /// The ancestor unwound to.
        base: u64,
        /// The earliest block whose state the trie holds.
        earliest: u64,
    },
    /// The state to restore could not be read from the ancestor's trie.
    #[error("reading the state to unwind to: {0}")]
    State(#[from] gigagas_state::StateError),
}

impl ImportError {
    /// The block the error is about, when it is about one (`None` for the genesis, the
    /// datadir, the worker pool, an undecodable file entry, a store failure outside a block).
    pub fn block_number(&self) -> Option<u64> {
        match self {
            Self::NoOutcome { number }
            | Self::Invalid { number, .. }
            | Self::Trie { number, .. }
            | Self::Unwind { number, .. }
            | Self::StateRoot { number, .. } => Some(*number),
            Self::Execution(e) => Some(e.block()),
            _ => None,
        }
    }

    /// The variant's name (`Invalid`, `Execution`, `StateRoot`, …), for machine-readable
    /// reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Genesis(_) | Self::GenesisTrie { .. } => "Genesis",
            Self::ChainConfig(_) => "ChainConfig",
            Self::NotInitialized => "NotInitialized",
            Self::OtherChain { .. } => "OtherChain",
            Self::Storage(_) => "Storage",
            Self::NoOutcome { .. } => "NoOutcome",
            Self::ExecutorPool(_) => "ExecutorPool",
            Self::Persistence => "Persistence",
            Self::Decode { .. } => "Decode",
            Self::Invalid { .. } => "Invalid",
            Self::Execution(_) => "Execution",
            Self::Trie { .. } => "Trie",
            Self::Unwind { .. } => "Unwind",
            Self::StateRoot { .. } => "StateRoot",
        }
    }

    /// Whether the error is an internal fault — the store, a missing trie node, or a database
    /// read that failed during execution ([`ExecutionError::is_internal`]) — rather than a
    /// reason to reject the block. The engine answers such a payload with an error, never
    /// INVALID, and does not remember it as invalid.
    pub fn is_internal(&self) -> bool {
        match self {
            Self::Storage(_)
            | Self::Trie { .. }
            | Self::ExecutorPool(_)
            | Self::NoOutcome { .. }
            | Self::Persistence
            | Self::Unwind { .. } => true,
            Self::Execution(e) => e.is_internal(),
            _ => false,
        }
    }
}
