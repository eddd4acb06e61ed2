//! Readers of the canonical chain: block numbers and hashes, headers, bodies, transactions'
//! places, receipts and BALs (reth's `BlockNumReader`, `BlockHashReader`, `HeaderProvider`,
//! `BlockReader`, `TransactionsProvider`, `ReceiptProvider`).
//!
//! Every reader answers `Ok(None)` for a block it does not hold and an error for a read that
//! failed: an absent block and a failed read are never the same answer.

use crate::ProviderResult;
use alloy_consensus::{BlockBody, Header, ReceiptEnvelope, TxEnvelope};
use alloy_eip7928::AccountChanges;
use alloy_primitives::{Address, B256};

/// The canonical head and numbers by hash.
pub trait BlockNumReader {
    /// The last canonical block held: (number, hash); `None` for an empty store.
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails.
    fn best_block(&self) -> ProviderResult<Option<(u64, B256)>>;

    /// The number of the canonical block with `hash`, `None` when no such block is held.
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails.
    fn block_number(&self, hash: &B256) -> ProviderResult<Option<u64>>;

    /// The earliest block whose state the store's trie still holds: 0 unless the trie was
    /// pruned (`gigagas db prune-trie`). A state read of an older block is
    /// [`crate::ProviderError::StateAtBlockPruned`]. By default 0 (a store that never prunes).
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails.
    fn earliest_state_block(&self) -> ProviderResult<u64> {
        Ok(0)
    }
}

/// Canonical block hashes by number.
pub trait BlockHashReader {
    /// The hash of canonical block `number` (keccak256 of its header's RLP), `None` when absent.
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails.
    fn block_hash(&self, number: u64) -> ProviderResult<Option<B256>>;
}

/// Canonical headers.
pub trait HeaderProvider: BlockNumReader {
    /// The header of canonical block `number`.
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails or the stored header does not decode.
    fn header_by_number(&self, number: u64) -> ProviderResult<Option<Header>>;

    /// The header of the canonical block with `hash`.
    ///
    /// # Errors
    /// As [`HeaderProvider::header_by_number`].
    fn header(&self, hash: &B256) -> ProviderResult<Option<Header>> {
        match self.block_number(hash)? {
            Some(number) => self.header_by_number(number),
            None => Ok(None),
        }
    }
}

/// Canonical block bodies.
pub trait BlockReader: HeaderProvider {
    /// The body (transactions, ommers, withdrawals) of canonical block `number`.
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails or the stored body does not decode.
    fn body_by_number(&self, number: u64) -> ProviderResult<Option<BlockBody<TxEnvelope>>>;

    /// The senders of canonical block `number`'s transactions, in order, as recovered when the
    /// block was executed; `None` when they were not stored (a block this node built, a store
    /// that keeps none): the caller recovers them from the signatures.
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails or the stored entry is malformed.
    fn senders_by_number(&self, number: u64) -> ProviderResult<Option<Vec<Address>>> {
        let _ = number;
        Ok(None)
    }
}

/// Where transactions are.
pub trait TransactionsProvider {
    /// Where the canonical transaction with `hash` is: (block number, index in the block);
    /// `None` when no canonical block holds it.
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails.
    fn transaction_location(&self, hash: &B256) -> ProviderResult<Option<(u64, u32)>>;
}

/// Canonical receipts.
pub trait ReceiptProvider {
    /// The receipts of canonical block `number`, in transaction order.
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails or the stored receipts do not decode.
    fn receipts_by_number(&self, number: u64) -> ProviderResult<Option<Vec<ReceiptEnvelope>>>;
}

/// EIP-7928 block access lists of canonical blocks.
pub trait BlockAccessListReader {
    /// The BAL of canonical block `number` (held for every block this node executed or
    /// imported; `None` otherwise).
    ///
    /// # Errors
    /// [`crate::ProviderError`] when the read fails or the stored BAL does not decode.
    fn block_access_list(&self, number: u64) -> ProviderResult<Option<Vec<AccountChanges>>>;
}
