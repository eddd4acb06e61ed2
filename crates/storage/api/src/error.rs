//! The one error of every provider: a failed read or write of the backing store, a stored
//! value that does not decode, or a block written out of order.

/// A provider's result.
pub type ProviderResult<T> = Result<T, ProviderError>;

/// Why a provider call failed. Every variant is an internal fault of the node (its store), never
/// a verdict on a block: a caller reports it as such (an engine error, a JSON-RPC internal error,
/// a network request left unanswered), never as a shorter answer or an invalid block.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The backing database failed.
    #[error("database at {location}: {what}: {source}")]
    Database {
        /// Where the database is (its folder).
        location: String,
        /// The operation.
        what: &'static str,
        /// The database's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stored value does not decode.
    #[error("corrupt {table} entry {key}: {reason}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// The key, as text.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A block was written out of order, or an unwind does not list the blocks it removes.
    #[error("block {number} cannot follow head {head:?}: blocks are committed in order")]
    NonContiguous {
        /// The head (number) before the write, if any.
        head: Option<u64>,
        /// The block offered.
        number: u64,
    },
    /// The state of a block older than the trie keeps was asked for (reth's
    /// `StateAtBlockPruned`): the trie nodes no recent state root reaches were pruned.
    #[error(
        "state at block {number} is pruned: the trie holds the states of blocks {earliest} on"
    )]
    StateAtBlockPruned {
        /// The block asked for.
        number: u64,
        /// The earliest block whose state is held ([`crate::BlockNumReader::earliest_state_block`]).
        earliest: u64,
    },
}
