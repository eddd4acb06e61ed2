//! The state of the canonical head as readers see it ([`head_state`], reth's
//! `MemoryOverlayStateProvider` over a read-only database provider): the diffs of the in-memory
//! canonical blocks the store does not hold yet over one read view of the store's flat state,
//! one key-value read per account or slot instead of a walk down the trie.
//!
//! The view is one snapshot of the store, so its flat state is the state of the view's head
//! and stays so however the store moves meanwhile. The view's head tells which of the
//! in-memory snapshot's blocks it holds already: their diffs are not laid over it again. When
//! the store has moved off the in-memory snapshot (past its head, or in a reorg onto another
//! branch) the pair does not fit, and the caller takes both again.

use crate::CanonicalChain;
use gigagas_state::StateSource;
use gigagas_storage_api::{FullReader, ProviderResult};
use gigagas_validation::Overlay;
use std::sync::Arc;

/// The head state of `chain` over `view` (a read view of the store): the diffs of `chain`'s
/// blocks above the view's head over the view's flat state; `None` when the view's head is not
/// on `chain` (neither its base nor one of its blocks) or a backfill sync is rewriting the flat
/// state.
///
/// # Errors
/// [`gigagas_storage_api::ProviderError`] when the view's head cannot be read.
pub(crate) fn head_state(
    chain: &CanonicalChain,
    view: Arc<dyn FullReader>,
) -> ProviderResult<Option<Arc<dyn StateSource>>> {
    if chain.backfill() {
        return Ok(None);
    }
    let Some(stored) = view.best_block()? else { return Ok(None) };
    let Some(above) = chain.above(stored) else { return Ok(None) };
    let diffs = above.iter().rev().map(|b| b.executed.diff.clone()).collect();
    Ok(Some(Arc::new(Overlay { base: view, diffs })))
}
