//! Errors of the engine: a refused forkchoice or attributes (the consensus client's mistake),
//! an internal fault (never a verdict on a block), or the engine task gone.

use gigagas_validation::ImportError;

/// Why the engine could not answer with a payload status.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// An internal fault (store, trie node, a database read during execution): the block was
    /// not judged, nothing was remembered, the request may come again (JSON-RPC -32603).
    #[error(transparent)]
    Internal(#[from] ImportError),
    /// The forkchoice state is inconsistent (execution-apis -38002).
    #[error(transparent)]
    InvalidForkchoice(#[from] crate::InvalidForkchoice),
    /// The payload attributes do not fit the head (execution-apis -38003).
    #[error("Invalid payload attributes: timestamp {timestamp} not after the head's {head}")]
    InvalidAttributes {
        /// The attributes' timestamp (seconds).
        timestamp: u64,
        /// The head's timestamp (seconds).
        head: u64,
    },
    /// The block to build on is neither canonical nor executed.
    #[error("unknown parent {0}")]
    UnknownParent(alloy_primitives::B256),
    /// The engine task has stopped (the node is shutting down).
    #[error("the engine has stopped")]
    Stopped,
}
