//! Senders already recovered, by transaction hash: the transaction pool (and whatever else
//! recovers a signature before a block arrives) records each sender it recovered, and block
//! validation looks a block's transactions up before recovering the rest (reth's pool hands
//! its recovered transactions to the payload the same way).
//!
//! Flow: [`SenderCache::insert`] after a successful recovery (the pool's `add_pooled`) →
//! bounded, first in first out ([`SenderCache::new`]'s capacity) → [`SenderCache::get_many`]
//! with a block's transaction hashes, under one lock → the misses recovered in parallel
//! ([`crate::BlockInput::par_recover_cached`]).
//!
//! Trust: a transaction hash is the keccak-256 of the signed transaction's encoding, its
//! signature included, so a transaction with the hash of one recovered before has the same
//! signature over the same payload and the same sender; the hash the block's transaction is
//! looked up by is computed from the block's own bytes, never taken from the sender of the
//! entry.

use alloy_primitives::{Address, B256};
use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
};

/// The senders of the last transactions recovered, by transaction hash, bounded.
#[derive(Debug)]
pub struct SenderCache {
    inner: Mutex<Inner>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Inner {
    senders: HashMap<B256, Address>,
    /// Insertion order, for eviction (the oldest first).
    order: VecDeque<B256>,
}

impl SenderCache {
    /// Entries kept by default: a full pool (geth's 5,120 pending and 1,024 queued slots)
    /// several times over, and the transactions of a few blocks of 10,000.
    pub const DEFAULT_CAPACITY: usize = 65_536;

    /// A cache of up to `capacity` senders (0: nothing kept).
    pub fn new(capacity: usize) -> Self {
        Self { inner: Mutex::new(Inner::default()), capacity }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records that transaction `hash` was signed by `sender` (recovered from its signature),
    /// evicting the oldest entry when full.
    pub fn insert(&self, hash: B256, sender: Address) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.lock();
        if inner.senders.insert(hash, sender).is_none() {
            inner.order.push_back(hash);
            while inner.order.len() > self.capacity {
                if let Some(old) = inner.order.pop_front() {
                    inner.senders.remove(&old);
                }
            }
        }
    }

    /// The sender of each of `hashes` recovered before, `None` where none is held.
    pub fn get_many<'a>(&self, hashes: impl IntoIterator<Item = &'a B256>) -> Vec<Option<Address>> {
        let inner = self.lock();
        hashes.into_iter().map(|h| inner.senders.get(h).copied()).collect()
    }

    /// Senders held.
    pub fn len(&self) -> usize {
        self.lock().senders.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for SenderCache {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_cache_forgets_its_oldest_senders_first() {
        let cache = SenderCache::new(2);
        let (a, b, c) = (B256::repeat_byte(1), B256::repeat_byte(2), B256::repeat_byte(3));
        cache.insert(a, Address::repeat_byte(0xa));
        cache.insert(b, Address::repeat_byte(0xb));
        // Inserting a held hash again neither duplicates nor reorders it.
        cache.insert(a, Address::repeat_byte(0xa));
        cache.insert(c, Address::repeat_byte(0xc));
        assert_eq!(
            cache.get_many([&a, &b, &c]),
            vec![None, Some(Address::repeat_byte(0xb)), Some(Address::repeat_byte(0xc))]
        );
        assert_eq!(cache.len(), 2);
        let none = SenderCache::new(0);
        none.insert(a, Address::repeat_byte(0xa));
        assert!(none.is_empty());
    }
}
