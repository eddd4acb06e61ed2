//! The payloads found invalid (reth's `InvalidHeaderCache`): hash → the latest valid ancestor
//! and the reason, so that the same payload, a child of it or a forkchoice update to it is
//! answered INVALID without executing anything again. Bounded: past [`INVALID_CAPACITY`]
//! entries the least recently used one is forgotten (a forgotten payload that comes again is
//! executed again and found invalid again).

use alloy_primitives::{map::HashMap, B256};
use std::collections::BTreeMap;

/// Invalid payloads remembered at most.
pub const INVALID_CAPACITY: usize = 1024;

#[derive(Debug)]
struct Entry {
    latest_valid: Option<B256>,
    reason: String,
    /// When it was last inserted or looked up (the cache's clock).
    used: u64,
}

/// Invalid payloads, least recently used forgotten first.
#[derive(Debug)]
pub struct InvalidHeaderCache {
    entries: HashMap<B256, Entry>,
    /// `used` → hash, oldest first.
    order: BTreeMap<u64, B256>,
    clock: u64,
    capacity: usize,
}

impl Default for InvalidHeaderCache {
    fn default() -> Self {
        Self::with_capacity(INVALID_CAPACITY)
    }
}

impl InvalidHeaderCache {
    /// An empty cache holding `capacity` payloads at most (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: HashMap::default(),
            order: BTreeMap::new(),
            clock: 0,
            capacity: capacity.max(1),
        }
    }

    /// The latest valid ancestor and the reason when `hash` was found invalid; marks it used.
    pub fn get(&mut self, hash: &B256) -> Option<(Option<B256>, String)> {
        self.clock += 1;
        let entry = self.entries.get_mut(hash)?;
        self.order.remove(&entry.used);
        entry.used = self.clock;
        self.order.insert(self.clock, *hash);
        Some((entry.latest_valid, entry.reason.clone()))
    }

    /// Remembers `hash` as invalid, forgetting the least recently used payload when full.
    pub fn insert(&mut self, hash: B256, latest_valid: Option<B256>, reason: String) {
        self.clock += 1;
        if let Some(old) =
            self.entries.insert(hash, Entry { latest_valid, reason, used: self.clock })
        {
            self.order.remove(&old.used);
        }
        self.order.insert(self.clock, hash);
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else { break };
            self.entries.remove(&oldest);
        }
    }

    /// Payloads remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no payload is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
