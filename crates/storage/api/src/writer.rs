//! Writers: a block's whole commit (its tables, its state changes, the head) as one atomic
//! write, an unwind to an earlier block (a reorg), a snapshot's flat state, metadata.

use crate::ProviderResult;
use alloy_primitives::{Address, B256, U256};
use std::time::Duration;

/// Balance, nonce and code hash of an account in the flat state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountRecord {
    /// Nonce.
    pub nonce: u64,
    /// Balance (wei).
    pub balance: U256,
    /// keccak256 of the code (the empty-code hash for none).
    pub code_hash: B256,
}

/// Everything one block changes, written atomically by [`BlockWriter::commit_block`].
#[derive(Debug, Clone, Default)]
pub struct BlockCommit<'a> {
    /// Block number; must be the head's number + 1 (0 for the first block of an empty store).
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// RLP of the header.
    pub header: &'a [u8],
    /// RLP of the body.
    pub body: &'a [u8],
    /// RLP of the receipts.
    pub receipts: &'a [u8],
    /// RLP of the block's EIP-7928 BAL, when it has one.
    pub bal: Option<&'a [u8]>,
    /// Accounts whose storage is cleared before `storage` is applied (deleted or re-created).
    pub wiped: &'a [Address],
    /// New account values; `None` deletes the account.
    pub accounts: &'a [(Address, Option<AccountRecord>)],
    /// New slot values; zero deletes the slot.
    pub storage: &'a [(Address, U256, U256)],
    /// New contract code: (code hash, bytes).
    pub codes: &'a [(B256, &'a [u8])],
    /// New trie nodes from the state-root stage: (keccak256, RLP).
    pub trie_nodes: &'a [gigagas_trie::EncodedNode],
    /// Hashes of the block's transactions, in order (indexed for lookups by hash).
    pub tx_hashes: &'a [B256],
    /// The transactions' senders, in order, when known (empty: none stored).
    pub senders: &'a [Address],
}

/// A canonical block removed by [`BlockWriter::unwind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnwoundBlock {
    /// Block number.
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// Hashes of its transactions (their lookup entries are removed).
    pub tx_hashes: Vec<B256>,
}

/// Writes canonical blocks, in order, each atomically with the head pointer.
pub trait BlockWriter {
    /// Writes everything `commit` holds, and the head pointer, atomically: a process killed at
    /// any moment reopens with all of the block or none of it.
    ///
    /// # Errors
    /// [`crate::ProviderError::NonContiguous`] unless `commit.number` follows the head;
    /// [`crate::ProviderError::Database`] when the write fails (then nothing is written).
    fn commit_block(&self, commit: &BlockCommit<'_>) -> ProviderResult<()>;

    /// Unwinds the canonical chain to block `to` (a reorg): removes the blocks above it
    /// (`unwound`, from the head down), writes the flat-state values `accounts` and `storage`
    /// give back (as of block `to`) and moves the head pointer, atomically. Trie nodes and
    /// codes stay.
    ///
    /// # Errors
    /// [`crate::ProviderError::NonContiguous`] unless `unwound` lists every block from the
    /// head down to `to.0 + 1`; [`crate::ProviderError::Database`] when the write fails (then
    /// nothing changes).
    fn unwind(
        &self,
        to: (u64, B256),
        unwound: &[UnwoundBlock],
        accounts: &[(Address, Option<AccountRecord>)],
        storage: &[(Address, U256, U256)],
    ) -> ProviderResult<()>;

    /// Writes what the store holds in memory to its files (on shutdown; before a cold-cache
    /// measurement).
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`] when the flush fails.
    fn flush(&self) -> ProviderResult<()>;
}

/// Writes flat state outside any block (a genesis allocation, a benchmark's pre-state).
pub trait StateWriter {
    /// Writes accounts, non-zero slots and codes in one batch.
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`].
    fn write_state(
        &self,
        accounts: &[(Address, AccountRecord)],
        storage: &[(Address, U256, U256)],
        codes: &[(B256, &[u8])],
    ) -> ProviderResult<()>;
}

/// Node metadata kept beside the chain (e.g. the genesis the store was initialised with).
pub trait MetadataProvider {
    /// The metadata entry `key`.
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`].
    fn meta(&self, key: &[u8]) -> ProviderResult<Option<Vec<u8>>>;

    /// Writes the metadata entry `key`.
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`].
    fn put_meta(&self, key: &[u8], value: &[u8]) -> ProviderResult<()>;
}

/// What a prune of the trie did ([`TriePruner::prune_trie`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneStats {
    /// Roots asked to keep.
    pub roots: usize,
    /// The earliest block whose root was held (the first block whose state is still served).
    pub first_kept: u64,
    /// Nodes reachable from them (kept).
    pub kept: u64,
    /// Nodes written by commits while the prune ran (kept).
    pub written_meanwhile: u64,
    /// Nodes stored before the prune.
    pub scanned: u64,
    /// Nodes deleted.
    pub deleted: u64,
    /// Time the mark took (reading every kept node).
    pub mark_time: Duration,
    /// Time the sweep took (scanning, deleting and compacting the nodes' table).
    pub sweep_time: Duration,
}

/// The states a prune of the trie keeps ([`TriePruner::prune_trie`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepStates<'a> {
    /// The states of the last this many canonical blocks, the head included, as the store's
    /// head stands once the prune has begun recording what is written (so that a block
    /// committed meanwhile is either kept or recorded); a block whose header the store lacks
    /// is skipped.
    Latest(u64),
    /// These state roots, by block number (the caller makes sure that no block is committed
    /// on a parent older than them while the prune runs).
    Roots(&'a [(u64, B256)]),
}

/// Deletes the trie nodes that no kept state root reaches (trie nodes are stored by hash and
/// shared, so what a block replaced may still be reached elsewhere: mark and sweep).
pub trait TriePruner {
    /// Keeps every node reachable from the roots of `keep` (a root the store never held, as
    /// below a snap sync's pivot, is skipped) and every node written while the prune runs,
    /// deletes the rest, and records the earliest kept block
    /// ([`crate::BlockNumReader::earliest_state_block`]) before deleting anything. Blocks may
    /// be committed meanwhile, each on a parent among the kept blocks or committed since. The
    /// kept nodes are read on `threads` threads; `progress` gets the phase and the nodes done.
    ///
    /// # Errors
    /// [`crate::ProviderError::Database`] when the store fails;
    /// [`crate::ProviderError::Corrupt`] for a reachable node missing or malformed, or when
    /// none of the roots is held (nothing is deleted then).
    fn prune_trie(
        &self,
        keep: KeepStates<'_>,
        threads: usize,
        progress: &mut dyn FnMut(&'static str, u64),
    ) -> ProviderResult<PruneStats>;
}
