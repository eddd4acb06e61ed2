//! The flat state by the state trie's keys (keccak256 of an address; of an address and a slot),
//! as snap sync downloads it and `init` writes a genesis: accounts, slots, codes and trie nodes
//! written beside the sync's own progress in one atomic batch or as a bulk load (table files,
//! then the progress), read back in key order, and the pivot block written as the head once
//! its state is whole.

use crate::{AccountRecord, ProviderResult};
use alloy_primitives::{B256, U256};

/// A block's tables written without executing it (snap sync's pivot and the headers below it):
/// no state changes, no contiguity with the head.
#[derive(Debug, Clone, Default)]
pub struct RawBlock<'a> {
    /// Block number.
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// RLP of the header.
    pub header: &'a [u8],
    /// RLP of the body, when held.
    pub body: Option<&'a [u8]>,
    /// RLP of the receipts, when held.
    pub receipts: Option<&'a [u8]>,
    /// Hashes of the block's transactions (indexed for lookups by hash; empty without a body).
    pub tx_hashes: &'a [B256],
}

/// One atomic write of hashed state and metadata.
#[derive(Debug, Clone, Default)]
pub struct HashedBatch<'a> {
    /// Accounts by keccak256(address).
    pub accounts: &'a [(B256, AccountRecord)],
    /// Slots: keccak256(address), keccak256(slot), value (zero is not written).
    pub storage: &'a [(B256, B256, U256)],
    /// Contract code: (code hash, bytes).
    pub codes: &'a [(B256, &'a [u8])],
    /// Trie nodes: (keccak256, RLP).
    pub trie_nodes: &'a [gigagas_trie::EncodedNode],
    /// Metadata entries written.
    pub meta_put: &'a [(Vec<u8>, Vec<u8>)],
    /// Metadata entries removed.
    pub meta_delete: &'a [Vec<u8>],
    /// Blocks whose tables are written.
    pub blocks: &'a [RawBlock<'a>],
    /// The new head pointer (number, hash), when it moves.
    pub head: Option<(u64, B256)>,
}

/// Writes [`HashedBatch`]es.
pub trait HashedStateWriter {
    /// Writes everything `batch` holds atomically: all of it or, when the process dies or the
    /// write fails, none of it.
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`] when the write fails.
    fn write_hashed(&self, batch: &HashedBatch<'_>) -> ProviderResult<()>;

    /// Writes `batch` as a bulk load: the accounts, slots, codes and trie nodes as sorted
    /// table files the store takes whole (no write-ahead log, no memtable, no flush: RocksDB's
    /// external-file ingestion), durable once this returns; then the rest (metadata, blocks,
    /// the head) in one logged write. Not atomic as a whole: a process killed in between keeps
    /// state entries that no metadata records yet. Only for entries that a resumed writer
    /// writes again with the same values — a pivot's state and content-addressed trie nodes,
    /// what snap sync writes — never for a change of state.
    ///
    /// The store's own implementation ingests; the default writes `batch` atomically with
    /// [`Self::write_hashed`], which keeps every promise made here.
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`] when a file cannot be written or taken in, or the
    /// write fails.
    fn ingest_hashed(&self, batch: &HashedBatch<'_>) -> ProviderResult<()> {
        self.write_hashed(batch)
    }

    /// Starts (`true`) or ends (`false`) a bulk load of the hashed state: while it runs the
    /// store holds off merging the table files [`Self::ingest_hashed`] hands it, so that each
    /// is merged once, after the load, instead of again with every file taken in after it (the
    /// keys of trie nodes are random: every file spans the whole key space). Reads stay right,
    /// and slower the more files pile up. A process killed during a load reopens without it.
    /// The default does nothing.
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`] when the store's settings cannot be changed.
    fn set_bulk_load(&self, on: bool) -> ProviderResult<()> {
        let _ = on;
        Ok(())
    }
}

/// Reads the flat state in the state trie's key order.
pub trait HashedStateReader {
    /// Calls `f` with the slots of the hashed account `account` whose hashed slot is `from` or
    /// above, in key order, until it answers false or the account's slots end; answers the
    /// head block (number, hash) whose state they are, read from the same view of the store
    /// as the slots (no commit lands between the two). `None` when the store has no head.
    ///
    /// # Errors
    /// [`crate::ProviderError`] on a failed read or a malformed entry.
    fn walk_hashed_storage_at_head(
        &self,
        account: B256,
        from: B256,
        f: &mut dyn FnMut(B256, U256) -> bool,
    ) -> ProviderResult<Option<(u64, B256)>>;

    /// Calls `f` with the accounts whose hashed address is `from` or above, in key order, each
    /// with whether it holds any slot in the flat state (its storage root is then not the
    /// empty trie's), until `f` answers false or the accounts end; answers the head block
    /// (number, hash) whose state they are, read from the same view of the store as the
    /// accounts and slots (no commit lands between them). `None` when the store has no head.
    ///
    /// # Errors
    /// [`crate::ProviderError`] on a failed read or a malformed entry.
    fn walk_hashed_accounts_at_head(
        &self,
        from: B256,
        f: &mut dyn FnMut(B256, AccountRecord, bool) -> bool,
    ) -> ProviderResult<Option<(u64, B256)>>;

    /// Up to `limit` accounts whose hashed address is `from` or above, in key order.
    ///
    /// # Errors
    /// [`crate::ProviderError`] on a failed read or a malformed record.
    fn hashed_accounts(
        &self,
        from: B256,
        limit: usize,
    ) -> ProviderResult<Vec<(B256, AccountRecord)>>;

    /// Up to `limit` slots of the hashed account `account` whose hashed slot is `from` or
    /// above, in key order.
    ///
    /// # Errors
    /// [`crate::ProviderError`] on a failed read or a malformed value.
    fn hashed_storage(
        &self,
        account: B256,
        from: B256,
        limit: usize,
    ) -> ProviderResult<Vec<(B256, U256)>>;

    /// Whether the code whose hash is `hash` is stored.
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`].
    fn has_bytecode(&self, hash: &B256) -> ProviderResult<bool>;

    /// Every metadata entry whose key starts with `prefix`, in key order.
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`].
    fn meta_with_prefix(&self, prefix: &[u8]) -> ProviderResult<Vec<(Vec<u8>, Vec<u8>)>>;
}
