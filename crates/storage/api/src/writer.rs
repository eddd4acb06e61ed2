//! Writers: a block's whole commit (its tables, its state changes, the head) as one atomic
//! write, an unwind to an earlier block (a reorg), a snapshot's flat state, metadata.

use crate::ProviderResult;
use alloy_primitives::{Address, B256, U256};

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
