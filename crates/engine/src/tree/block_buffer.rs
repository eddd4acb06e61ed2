//! Blocks that wait for their parent (reth's `BlockBuffer`): a block that arrives before its
//! parent is known is kept, by hash and by parent, until the parent is imported (then its
//! children are taken out to be imported in turn), until it is older than the buffer's maximum
//! age, until it is at or below the finalized block, or until newer blocks push it out (the
//! buffer is bounded: past its capacity the earliest-inserted block goes first).

use alloy_primitives::{
    map::{HashMap, HashSet},
    B256,
};
use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

/// Blocks a [`BlockBuffer`] keeps at most unless told otherwise.
pub const BUFFER_CAPACITY: usize = 256;
/// How long a [`BlockBuffer`] keeps a block unless told otherwise (about 50 slots of 12 s).
pub const BUFFER_MAX_AGE: Duration = Duration::from_secs(600);

#[derive(Debug)]
struct Buffered<T> {
    parent: B256,
    number: u64,
    inserted: Instant,
    item: T,
}

/// Blocks (any payload `T`) waiting for their parent: bounded, expiring.
#[derive(Debug)]
pub struct BlockBuffer<T> {
    blocks: HashMap<B256, Buffered<T>>,
    children: HashMap<B256, HashSet<B256>>,
    /// Hashes in insertion order, oldest first (entries of blocks already gone are skipped).
    order: VecDeque<B256>,
    capacity: usize,
    max_age: Duration,
}

impl<T> Default for BlockBuffer<T> {
    fn default() -> Self {
        Self::new(BUFFER_CAPACITY, BUFFER_MAX_AGE)
    }
}

impl<T> BlockBuffer<T> {
    /// An empty buffer of `capacity` blocks at most (at least one), each kept `max_age` at most.
    pub fn new(capacity: usize, max_age: Duration) -> Self {
        Self {
            blocks: HashMap::default(),
            children: HashMap::default(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            max_age,
        }
    }

    /// Keeps block `hash` (child of `parent`, number `number`) received at `now`; a block
    /// already kept is left as it is. When full, the earliest-inserted block is dropped.
    pub fn insert(&mut self, hash: B256, parent: B256, number: u64, item: T, now: Instant) {
        if self.blocks.contains_key(&hash) {
            return;
        }
        self.blocks.insert(hash, Buffered { parent, number, inserted: now, item });
        self.children.entry(parent).or_default().insert(hash);
        self.order.push_back(hash);
        while self.blocks.len() > self.capacity {
            let Some(oldest) = self.order.pop_front() else { break };
            self.remove(&oldest);
        }
    }

    /// Takes out the blocks whose parent is `parent` (to import now that it is known).
    pub fn take_children(&mut self, parent: &B256) -> Vec<T> {
        let hashes = self.children.remove(parent).unwrap_or_default();
        hashes.iter().filter_map(|hash| self.remove(hash)).collect()
    }

    /// Drops the blocks kept longer than the maximum age at `now`.
    pub fn expire(&mut self, now: Instant) {
        let max_age = self.max_age;
        self.retain(|b| now.saturating_duration_since(b.inserted) <= max_age);
    }

    /// Drops the blocks at or below `finalized` (they can no longer become canonical).
    pub fn remove_finalized(&mut self, finalized: u64) {
        self.retain(|b| b.number > finalized);
    }

    /// Whether block `hash` is kept.
    pub fn contains(&self, hash: &B256) -> bool {
        self.blocks.contains_key(hash)
    }

    /// Blocks kept.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether no block is kept.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    fn retain(&mut self, keep: impl Fn(&Buffered<T>) -> bool) {
        let gone: Vec<B256> =
            self.blocks.iter().filter(|(_, b)| !keep(b)).map(|(hash, _)| *hash).collect();
        for hash in gone {
            self.remove(&hash);
        }
    }

    fn remove(&mut self, hash: &B256) -> Option<T> {
        let block = self.blocks.remove(hash)?;
        if let Some(siblings) = self.children.get_mut(&block.parent) {
            siblings.remove(hash);
            if siblings.is_empty() {
                self.children.remove(&block.parent);
            }
        }
        if self.order.len() > 2 * self.capacity {
            let blocks = &self.blocks;
            self.order.retain(|h| blocks.contains_key(h));
        }
        Some(block.item)
    }
}
