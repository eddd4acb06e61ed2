//! What checked answers proved and the progress they made, gathered until there is enough for
//! one bulk load (a checkpoint), then written as one: the state entries ingested as sorted
//! table files, then the progress (`HashedStateWriter::ingest_hashed`).
//!
//! A checkpoint's progress is written only after its entries, and one checkpoint after the
//! other, so a sync killed at any moment finds recorded as done only what its store holds; it
//! asks again for what the last checkpoint did not record, and the pivot's state written a
//! second time is the same.

use super::progress::Counts;
use alloy_primitives::{Bytes, B256, U256};
use gigagas_storage_api::{AccountRecord, HashedBatch, HashedStateWriter, ProviderResult};
use gigagas_trie::EncodedNode;
use std::collections::BTreeMap;

/// Entries and progress not yet written.
#[derive(Debug, Default)]
pub(super) struct Pending {
    accounts: Vec<(B256, AccountRecord)>,
    storage: Vec<(B256, B256, U256)>,
    codes: Vec<(B256, Bytes)>,
    nodes: Vec<EncodedNode>,
    /// The sync's metadata: `Some` written, `None` removed; the last change of a key wins.
    meta: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// Bytes of keys and values held (the checkpoint's size).
    bytes: usize,
}

impl Pending {
    /// Bytes of entries held, keys and values.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether nothing is held.
    pub(super) fn is_empty(&self) -> bool {
        self.meta.is_empty()
            && self.accounts.is_empty()
            && self.storage.is_empty()
            && self.codes.is_empty()
            && self.nodes.is_empty()
    }

    pub(super) fn accounts(&mut self, accounts: Vec<(B256, AccountRecord)>) {
        self.bytes += accounts.len() * (32 + 72);
        self.accounts.extend(accounts);
    }

    pub(super) fn slots(&mut self, slots: Vec<(B256, B256, U256)>) {
        self.bytes += slots.len() * (64 + 32);
        self.storage.extend(slots);
    }

    pub(super) fn codes(&mut self, codes: Vec<(B256, Bytes)>) {
        self.bytes += codes.iter().map(|(_, c)| 32 + c.len()).sum::<usize>();
        self.codes.extend(codes);
    }

    pub(super) fn nodes(&mut self, nodes: Vec<EncodedNode>) {
        self.bytes += nodes.iter().map(|(_, n)| 32 + n.len()).sum::<usize>();
        self.nodes.extend(nodes);
    }

    pub(super) fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.meta.insert(key, Some(value));
    }

    pub(super) fn delete(&mut self, key: Vec<u8>) {
        self.meta.insert(key, None);
    }

    /// Metadata written (`put`) and removed (`delete`), in that order.
    pub(super) fn meta(&mut self, put: Vec<(Vec<u8>, Vec<u8>)>, delete: Vec<Vec<u8>>) {
        for (key, value) in put {
            self.put(key, value);
        }
        for key in delete {
            self.delete(key);
        }
    }

    pub(super) fn counts(&mut self, counts: &Counts) {
        self.put(super::tasks::COUNTS.to_vec(), counts.encode());
    }

    /// Writes what is held: the entries as a bulk load, then the metadata.
    ///
    /// # Errors
    /// The store's, when a write fails.
    pub(super) fn write<S: HashedStateWriter + ?Sized>(self, store: &S) -> ProviderResult<()> {
        let mut meta_put = Vec::new();
        let mut meta_delete = Vec::new();
        for (key, value) in self.meta {
            match value {
                Some(value) => meta_put.push((key, value)),
                None => meta_delete.push(key),
            }
        }
        let codes: Vec<(B256, &[u8])> = self.codes.iter().map(|(h, c)| (*h, c.as_ref())).collect();
        store.ingest_hashed(&HashedBatch {
            accounts: &self.accounts,
            storage: &self.storage,
            codes: &codes,
            trie_nodes: &self.nodes,
            meta_put: &meta_put,
            meta_delete: &meta_delete,
            ..Default::default()
        })
    }
}
