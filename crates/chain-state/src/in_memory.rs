//! The canonical blocks the engine has executed and made canonical but the store does not hold
//! yet (reth's `CanonicalInMemoryState`), shared between the engine (which publishes them) and
//! every reader of the chain (which takes a [`CanonicalChain`] snapshot and reads it before the
//! store).
//!
//! Flow: a forkchoice update makes blocks canonical → the engine publishes the chain from the
//! store's canonical block up to the head ([`CanonicalInMemoryState::update_chain`]) → once the
//! store holds a block, the engine drops what the store holds
//! ([`CanonicalInMemoryState::remove_persisted`]); a reorg that unwinds the store publishes the
//! ancestor it unwound to ([`CanonicalInMemoryState::update_chain`] with no block); a backfill
//! sync that rewrites the store's flat state beside the engine is bracketed by
//! [`CanonicalInMemoryState::begin_backfill`] and [`CanonicalInMemoryState::end_backfill`].
//!
//! A block is dropped from memory only once the store holds it, so a reader that takes a
//! snapshot and then a view of the store finds every canonical block in one or the other; the
//! view's head tells which of the snapshot's blocks it holds already (see `provider.rs`).

use crate::ExecutedBlockWithTrie;
use alloy_primitives::{map::HashMap, B256};
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast;

/// Notifications a subscriber may fall behind by before it misses some
/// ([`CanonicalInMemoryState::subscribe_to_canonical_state`]).
const CANON_STATE_CAPACITY: usize = 256;

/// The canonical chain's head moved (reth's `CanonStateNotification`): what pool maintenance
/// and other followers of the chain react to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CanonStateNotification {
    /// The new head: (number, hash).
    pub tip: (u64, B256),
    /// Whether blocks left the canonical chain (the old head is not an ancestor of the new).
    pub reorg: bool,
}

/// A snapshot of the in-memory canonical chain: the blocks above the store's canonical block
/// `base`, lowest first, each the child of the one before.
#[derive(Debug, Default)]
pub struct CanonicalChain {
    base: (u64, B256),
    blocks: Vec<Arc<ExecutedBlockWithTrie>>,
    by_hash: HashMap<B256, usize>,
    /// A backfill sync is rewriting the store's flat state: it is not the state of the
    /// store's head.
    backfill: bool,
}

impl CanonicalChain {
    /// The stored canonical block the in-memory blocks build on: (number, hash).
    pub fn base(&self) -> (u64, B256) {
        self.base
    }

    /// The head of the snapshot: its last block, else `base`.
    pub fn head(&self) -> (u64, B256) {
        self.blocks.last().map_or(self.base, |b| b.num_hash())
    }

    /// The in-memory blocks, lowest first.
    pub fn blocks(&self) -> &[Arc<ExecutedBlockWithTrie>] {
        &self.blocks
    }

    /// The in-memory block `number`, if it is one.
    pub fn by_number(&self, number: u64) -> Option<&Arc<ExecutedBlockWithTrie>> {
        let first = self.blocks.first()?.number();
        self.blocks.get(usize::try_from(number.checked_sub(first)?).ok()?)
    }

    /// The in-memory block with `hash`, if it is one.
    pub fn by_hash(&self, hash: &B256) -> Option<&Arc<ExecutedBlockWithTrie>> {
        self.by_hash.get(hash).map(|&i| &self.blocks[i])
    }

    /// Whether a backfill sync was rewriting the store's flat state when this snapshot was
    /// published ([`CanonicalInMemoryState::begin_backfill`]): the head's state is then read
    /// down its trie.
    pub fn backfill(&self) -> bool {
        self.backfill
    }

    /// The blocks above stored block `stored` (number, hash), lowest first: all of them when it
    /// is the base, those above it when it is one of them, `None` when it is neither (the store
    /// moved off this snapshot: past its head, or onto another branch).
    pub fn above(&self, stored: (u64, B256)) -> Option<&[Arc<ExecutedBlockWithTrie>]> {
        if stored == self.base {
            return Some(&self.blocks);
        }
        let &i = self.by_hash.get(&stored.1)?;
        Some(&self.blocks[i + 1..])
    }
}

/// The shared in-memory canonical chain. Cloning shares it.
#[derive(Debug, Clone)]
pub struct CanonicalInMemoryState {
    chain: Arc<RwLock<Arc<CanonicalChain>>>,
    notifications: broadcast::Sender<CanonStateNotification>,
}

impl CanonicalInMemoryState {
    /// An empty chain over the store's head `head` (number, hash).
    pub fn new(head: (u64, B256)) -> Self {
        let chain = CanonicalChain { base: head, ..Default::default() };
        let (notifications, _) = broadcast::channel(CANON_STATE_CAPACITY);
        Self { chain: Arc::new(RwLock::new(Arc::new(chain))), notifications }
    }

    /// A receiver of every move of the canonical head from now on (one that falls
    /// [`CANON_STATE_CAPACITY`] notifications behind misses the oldest: it is told it lagged).
    pub fn subscribe_to_canonical_state(&self) -> broadcast::Receiver<CanonStateNotification> {
        self.notifications.subscribe()
    }

    /// Replaces the published chain with `next` and tells the subscribers when the head moved.
    fn publish(&self, chain: &mut Arc<CanonicalChain>, next: CanonicalChain) {
        let old = chain.head();
        let (tip, base) = (next.head(), next.base);
        let extends = old == base || old.0 < base.0 || next.by_hash(&old.1).is_some();
        *chain = Arc::new(next);
        if tip != old {
            // No subscriber: nobody to tell.
            let _ = self.notifications.send(CanonStateNotification { tip, reorg: !extends });
        }
    }

    /// The current snapshot.
    pub fn canonical_chain(&self) -> Arc<CanonicalChain> {
        self.chain.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Publishes the canonical chain: `blocks` (lowest first, the first a child of `base`) over
    /// the store's canonical block `base` (no block: the chain ends at `base`, as after an
    /// unwind of the store to it).
    pub fn update_chain(&self, base: (u64, B256), blocks: Vec<Arc<ExecutedBlockWithTrie>>) {
        let mut chain = self.chain.write().unwrap_or_else(|p| p.into_inner());
        let backfill = chain.backfill;
        self.publish(&mut chain, snapshot(base, blocks, backfill));
    }

    /// A backfill sync starts rewriting the store's flat state beside the engine (snap sync):
    /// until [`Self::end_backfill`] readers of the head's state read its trie.
    pub fn begin_backfill(&self) {
        let mut chain = self.chain.write().unwrap_or_else(|p| p.into_inner());
        *chain = Arc::new(snapshot(chain.base, chain.blocks.clone(), true));
    }

    /// The backfill sync has ended with the store's head at `head`: the chain is `head` (no
    /// block in memory), its flat state readable again.
    pub fn end_backfill(&self, head: (u64, B256)) {
        let mut chain = self.chain.write().unwrap_or_else(|p| p.into_inner());
        self.publish(&mut chain, snapshot(head, Vec::new(), false));
    }

    /// Drops the blocks up to `persisted` (number, hash), which the store now holds; nothing
    /// when the published chain does not hold that block (it changed meanwhile).
    pub fn remove_persisted(&self, persisted: (u64, B256)) {
        let mut chain = self.chain.write().unwrap_or_else(|p| p.into_inner());
        let Some(&i) = chain.by_hash.get(&persisted.1) else { return };
        let blocks = chain.blocks[i + 1..].to_vec();
        *chain = Arc::new(snapshot(persisted, blocks, chain.backfill));
    }
}

/// A snapshot of `blocks` over `base`.
fn snapshot(
    base: (u64, B256),
    blocks: Vec<Arc<ExecutedBlockWithTrie>>,
    backfill: bool,
) -> CanonicalChain {
    let by_hash = blocks.iter().enumerate().map(|(i, b)| (b.hash(), i)).collect();
    CanonicalChain { base, blocks, by_hash, backfill }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(n: u8) -> B256 {
        B256::repeat_byte(n)
    }

    #[test]
    fn each_move_of_the_head_is_notified_and_a_reorg_told_apart() {
        let memory = CanonicalInMemoryState::new((5, hash(5)));
        let mut moves = memory.subscribe_to_canonical_state();
        memory.update_chain((5, hash(5)), Vec::new());
        assert!(moves.try_recv().is_err(), "the head did not move");
        memory.update_chain((6, hash(6)), Vec::new());
        let moved = moves.try_recv().unwrap();
        assert_eq!(moved, CanonStateNotification { tip: (6, hash(6)), reorg: false });
        // Unwound to block 4 (another branch from there): the old head left the chain.
        memory.update_chain((4, hash(4)), Vec::new());
        assert_eq!(
            moves.try_recv().unwrap(),
            CanonStateNotification { tip: (4, hash(4)), reorg: true }
        );
        memory.begin_backfill();
        assert!(moves.try_recv().is_err(), "a backfill starting moves nothing");
        memory.end_backfill((90, hash(90)));
        assert_eq!(moves.try_recv().unwrap().tip, (90, hash(90)));
    }

    #[test]
    fn removing_a_block_the_chain_does_not_hold_changes_nothing() {
        let memory = CanonicalInMemoryState::new((3, hash(3)));
        memory.remove_persisted((4, hash(4)));
        let chain = memory.canonical_chain();
        assert_eq!(chain.base(), (3, hash(3)));
        assert!(chain.by_number(3).is_none() && chain.by_hash(&hash(3)).is_none());
    }
}
