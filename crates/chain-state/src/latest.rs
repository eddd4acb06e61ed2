//! The state of the canonical head as readers see it ([`latest_state`], reth's
//! `MemoryOverlayStateProvider` over the latest database state): the diffs of the in-memory
//! canonical blocks over the store's flat state, one key-value read per account or slot
//! instead of a walk down the trie.
//!
//! The flat state is the state of the store's head, which moves while a reader uses it:
//! forward along the published blocks (harmless: every key a block changes is answered from
//! its diff first) and, in a reorg, back to an ancestor or onto another branch. Each flat read
//! is checked afterwards ([`CanonicalChain::flat_state_valid`]); one that the store may have
//! moved under is read again through the trie under the head's state root, whose nodes the
//! store and the in-memory blocks always hold.

use crate::CanonicalChain;
use alloy_primitives::{Address, B256, U256};
use gigagas_state::{StateError, StateSource};
use gigagas_storage_api::{FullReader, TrieState};
use gigagas_validation::Overlay;
use revm::state::{AccountInfo, Bytecode};
use std::sync::Arc;

/// The head state of `chain`: its blocks' diffs over the store's flat state, checked against
/// `trie` (the trie under the head's state root, for reads the store may have moved under).
pub(crate) fn latest_state(
    chain: Arc<CanonicalChain>,
    store: Arc<dyn FullReader>,
    trie: TrieState,
) -> Arc<dyn StateSource> {
    let diffs = chain.blocks().iter().rev().map(|b| b.executed.diff.clone()).collect();
    Arc::new(Overlay { base: Arc::new(CheckedFlat { chain, store, trie }), diffs })
}

/// The store's flat state, each read checked against the snapshot it stands for.
#[derive(Debug)]
struct CheckedFlat {
    chain: Arc<CanonicalChain>,
    store: Arc<dyn FullReader>,
    trie: TrieState,
}

impl CheckedFlat {
    /// `flat` when the store did not move off the snapshot while it was read, else `trie`.
    fn checked<T>(
        &self,
        flat: impl FnOnce(&dyn FullReader) -> Result<T, StateError>,
        trie: impl FnOnce(&TrieState) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        if self.chain.flat_state_valid() {
            let value = flat(&*self.store);
            if self.chain.flat_state_valid() {
                return value;
            }
        }
        trie(&self.trie)
    }
}

impl StateSource for CheckedFlat {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        self.checked(|s| s.account(address), |t| t.account(address))
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        self.checked(|s| s.storage(address, slot), |t| t.storage(address, slot))
    }

    /// Codes are keyed by their hash: any code found is the right one.
    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        StateSource::code(&*self.store, hash)
    }

    /// Canonical hashes up to the snapshot's base (the overlay answers the blocks above).
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        self.checked(|s| StateSource::block_hash(s, number), |t| t.block_hash(number))
    }

    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        self.checked(|s| s.has_storage(address), |t| t.has_storage(address))
    }
}
