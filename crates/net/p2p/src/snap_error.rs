//! Why a snap request is left unanswered, for the server (`snap.rs`) and its flat-state reads
//! (`snap_flat.rs`).

use gigagas_storage_api::ProviderError;
use gigagas_trie::TrieError;

/// Why a snap request was left unanswered: the store failed (never answered short or empty).
#[derive(Debug, thiserror::Error)]
pub enum SnapServeError {
    /// A read of the chain failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A trie node read failed.
    #[error("trie read failed: {0}")]
    Trie(TrieError),
    /// A code read failed (the state source's error).
    #[error("code read failed: {0}")]
    Code(#[source] Box<dyn std::error::Error + Send + Sync>),
}
