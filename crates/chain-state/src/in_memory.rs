//! The canonical blocks the engine has executed and made canonical but the store does not hold
//! yet (reth's `CanonicalInMemoryState`), shared between the engine (which publishes them) and
//! every reader of the chain (which takes a [`CanonicalChain`] snapshot and reads it before the
//! store).
//!
//! Flow: a forkchoice update makes blocks canonical → the engine publishes the chain from the
//! store's canonical block up to the head ([`CanonicalInMemoryState::update_chain`]) → a
//! commit announces the block it is about to write ([`CanonicalInMemoryState::will_persist`])
//! and, once written, the engine drops what the store holds
//! ([`CanonicalInMemoryState::remove_persisted`]). A reorg brackets its unwind of the store
//! with [`CanonicalInMemoryState::begin_unwind`] / [`CanonicalInMemoryState::end_unwind`].
//!
//! A block is dropped from memory only once the store holds it, so a reader that takes a
//! snapshot and then reads the store finds every canonical block in one or the other. The
//! store's flat state (the state of its head) moves forward along the published blocks while
//! readers use it; [`CanonicalChain::flat_state_valid`] tells a reader whether a flat read it
//! just made can stand for the state of its snapshot's head (see `latest.rs`).

use crate::ExecutedBlockWithTrie;
use alloy_primitives::{map::HashMap, B256};
use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc, RwLock,
};

/// A snapshot of the in-memory canonical chain: the blocks above the store's canonical block
/// `base`, lowest first, each the child of the one before.
#[derive(Debug, Default)]
pub struct CanonicalChain {
    base: (u64, B256),
    blocks: Vec<Arc<ExecutedBlockWithTrie>>,
    by_hash: HashMap<B256, usize>,
    /// The store-move epoch this snapshot was published in.
    epoch: u64,
    /// The shared counters, to check flat reads against.
    guard: Arc<StoreGuard>,
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

    /// Whether a read of the store's flat state that has just returned can stand for the state
    /// of [`Self::head`]: the store neither was unwound since this snapshot was published nor
    /// began to commit a block above its head. (The store's head is never below `base` while
    /// this snapshot's blocks are readable: a block leaves memory only once stored.)
    pub fn flat_state_valid(&self) -> bool {
        self.epoch.is_multiple_of(2)
            && self.guard.epoch.load(Ordering::SeqCst) == self.epoch
            && self.guard.persisting.load(Ordering::SeqCst) <= self.head().0
    }
}

/// What flat-state readers check their reads against.
#[derive(Debug, Default)]
struct StoreGuard {
    /// Odd while an unwind moves the store off the published chain; bumped before and after.
    epoch: AtomicU64,
    /// The highest block the store holds or is committing.
    persisting: AtomicU64,
}

/// The shared in-memory canonical chain. Cloning shares it.
#[derive(Debug, Clone)]
pub struct CanonicalInMemoryState {
    chain: Arc<RwLock<Arc<CanonicalChain>>>,
    guard: Arc<StoreGuard>,
}

impl CanonicalInMemoryState {
    /// An empty chain over the store's head `head` (number, hash).
    pub fn new(head: (u64, B256)) -> Self {
        let guard = Arc::new(StoreGuard { epoch: AtomicU64::new(0), persisting: head.0.into() });
        let chain = CanonicalChain { base: head, guard: guard.clone(), ..Default::default() };
        Self { chain: Arc::new(RwLock::new(Arc::new(chain))), guard }
    }

    /// The current snapshot.
    pub fn canonical_chain(&self) -> Arc<CanonicalChain> {
        self.chain.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Publishes the canonical chain: `blocks` (lowest first, the first a child of `base`) over
    /// the store's canonical block `base`.
    pub fn update_chain(&self, base: (u64, B256), blocks: Vec<Arc<ExecutedBlockWithTrie>>) {
        let mut chain = self.chain.write().unwrap_or_else(|p| p.into_inner());
        *chain = Arc::new(self.snapshot(base, blocks));
    }

    /// Announces that the store is about to commit block `number` (before the write starts).
    pub fn will_persist(&self, number: u64) {
        self.guard.persisting.fetch_max(number, Ordering::SeqCst);
    }

    /// Drops the blocks up to `persisted` (number, hash), which the store now holds; nothing
    /// when the published chain does not hold that block (it changed meanwhile).
    pub fn remove_persisted(&self, persisted: (u64, B256)) {
        let mut chain = self.chain.write().unwrap_or_else(|p| p.into_inner());
        let Some(&i) = chain.by_hash.get(&persisted.1) else { return };
        let blocks = chain.blocks[i + 1..].to_vec();
        *chain = Arc::new(self.snapshot(persisted, blocks));
    }

    /// Marks the start of an unwind of the store (a reorg): until [`Self::end_unwind`], no
    /// flat read is valid.
    pub fn begin_unwind(&self) {
        let _chain = self.chain.write().unwrap_or_else(|p| p.into_inner());
        self.guard.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// Marks the end of an unwind that left the store's head at `base` and publishes `base` as
    /// the chain (no block in memory; the next [`Self::update_chain`] adds the new branch).
    pub fn end_unwind(&self, base: (u64, B256)) {
        let mut chain = self.chain.write().unwrap_or_else(|p| p.into_inner());
        self.guard.persisting.store(base.0, Ordering::SeqCst);
        if !self.guard.epoch.load(Ordering::SeqCst).is_multiple_of(2) {
            self.guard.epoch.fetch_add(1, Ordering::SeqCst);
        }
        *chain = Arc::new(self.snapshot(base, Vec::new()));
    }

    /// A snapshot of `blocks` over `base` in the current epoch (called under the write lock).
    fn snapshot(
        &self,
        base: (u64, B256),
        blocks: Vec<Arc<ExecutedBlockWithTrie>>,
    ) -> CanonicalChain {
        let by_hash = blocks.iter().enumerate().map(|(i, b)| (b.hash(), i)).collect();
        CanonicalChain {
            base,
            blocks,
            by_hash,
            epoch: self.guard.epoch.load(Ordering::SeqCst),
            guard: self.guard.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(n: u8) -> B256 {
        B256::repeat_byte(n)
    }

    #[test]
    fn a_commit_above_the_snapshot_head_voids_its_flat_reads() {
        let memory = CanonicalInMemoryState::new((5, hash(5)));
        let at_5 = memory.canonical_chain();
        assert_eq!(at_5.head(), (5, hash(5)));
        assert!(at_5.flat_state_valid());
        // Committing block 5 again (a no-op bound) keeps it valid; block 6 above its head voids.
        memory.will_persist(5);
        assert!(at_5.flat_state_valid());
        memory.will_persist(6);
        assert!(!at_5.flat_state_valid());
        memory.update_chain((6, hash(6)), Vec::new());
        let at_6 = memory.canonical_chain();
        assert_eq!(at_6.head(), (6, hash(6)));
        assert!(at_6.flat_state_valid());
        assert!(!at_5.flat_state_valid(), "an old snapshot stays void");
    }

    #[test]
    fn an_unwind_voids_every_snapshot_taken_before_it_ends() {
        let memory = CanonicalInMemoryState::new((9, hash(9)));
        let before = memory.canonical_chain();
        memory.begin_unwind();
        assert!(!before.flat_state_valid());
        let during = memory.canonical_chain();
        assert!(!during.flat_state_valid(), "the store is moving");
        memory.end_unwind((7, hash(7)));
        assert!(!before.flat_state_valid());
        assert!(!during.flat_state_valid());
        let after = memory.canonical_chain();
        assert_eq!(after.head(), (7, hash(7)));
        assert!(after.flat_state_valid(), "the store stands at the new base");
        // A failed unwind ends at the old head: valid again there.
        memory.begin_unwind();
        memory.end_unwind((7, hash(7)));
        assert!(memory.canonical_chain().flat_state_valid());
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
