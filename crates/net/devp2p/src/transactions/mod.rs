//! Transaction gossip over eth/69–72 (reth's `transactions`): the node's pool is announced to
//! its peers and theirs fetched into it, by the [`manager::TransactionsManager`] task.
//!
//! Flow: the network manager hands it each session's start and end and what the peers
//! announce or send; a peer's `NewPooledTransactionHashes` names transactions; those the pool lacks and
//! nobody is fetching are asked of that peer with `GetPooledTransactions` (at most
//! [`MAX_POOLED_TRANSACTIONS_REQUEST`] a request) and each one answered goes to the pool
//! ([`NetworkPool::import`], on a blocking thread: signature recovery, state reads, KZG for
//! blobs). A full `Transactions` broadcast goes to the pool the same way. A peer that answers
//! with a transaction it was not asked for, or sends one that is no valid transaction
//! (undecodable, bad signature, another chain), is dropped and banned; a valid one the pool
//! declines (known, nonce too low, underpriced) costs the peer nothing. What the pool takes,
//! from a peer or from RPC, the node hands to [`crate::Devp2pNetwork::announce_transactions`],
//! and the manager announces it to every session but the one it came from (remembered for the
//! last [`MAX_REMEMBERED_ORIGINS`] transactions); `GetPooledTransactions` from
//! peers are answered from the pool (`serve.rs`).

pub(crate) mod manager;

use alloy_primitives::{Bytes, B256};

/// Most transactions asked for in one `GetPooledTransactions` (geth's `maxTxRetrievals`).
pub const MAX_POOLED_TRANSACTIONS_REQUEST: usize = 256;

/// Most hashes in one `NewPooledTransactionHashes` the node sends (geth's `maxTxAnnounces`).
pub const MAX_ANNOUNCED_HASHES: usize = 4096;

/// How many transaction origins are remembered (so that nothing is announced back to the
/// peer it came from), the least recently seen forgotten first.
pub const MAX_REMEMBERED_ORIGINS: u32 = 65_536;

/// The node's transaction pool as the network sees it.
pub trait NetworkPool: Send + Sync + std::fmt::Debug {
    /// Whether the pool holds `hash`.
    fn contains(&self, hash: &B256) -> bool;

    /// The network form (EIP-2718; blob transactions with their sidecar, without its blobs
    /// when `without_blobs`, as eth/72 carries them) of the pooled transactions among
    /// `hashes`, in order, until `max_bytes` is passed.
    fn network_transactions(
        &self,
        hashes: &[B256],
        max_bytes: usize,
        without_blobs: bool,
    ) -> Vec<Bytes>;

    /// The cells of `columns` (ascending) of the blobs of each of `hashes` (eth/72's
    /// `Cells`: column by column, blob by blob), `None` for a transaction not held with its
    /// blobs.
    fn cells(&self, hashes: &[B256], columns: &[u64]) -> Vec<Option<Vec<Bytes>>>;

    /// Takes the transactions a peer sent, in their network form (one message's, checked
    /// against one head): for each, its hash or [`PoolImportError`] (whether the peer is to
    /// blame), in order.
    fn import(&self, raws: &[Bytes]) -> Vec<Result<B256, PoolImportError>>;
}

/// The pool's own error, as the network carries it (the pool's crate is not the network's).
pub type PoolRejection = std::sync::Arc<dyn std::error::Error + Send + Sync>;

/// Why the pool did not take a peer's transaction: the pool's error, sorted by whether the
/// peer is to blame.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PoolImportError {
    /// Not a valid transaction: undecodable, a bad signature, another chain, a bad blob
    /// sidecar. The peer that sent it is dropped.
    #[error("invalid transaction: {0}")]
    Invalid(#[source] PoolRejection),
    /// A valid transaction the pool declines (already known, nonce too low, underpriced, the
    /// pool full), or one it could not check (its state unreadable).
    #[error("declined: {0}")]
    Declined(#[source] PoolRejection),
}

/// A transaction the pool took, as `NewPooledTransactionHashes` announces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionAnnouncement {
    /// Its hash.
    pub hash: B256,
    /// Its EIP-2718 type.
    pub tx_type: u8,
    /// The bytes of its network form.
    pub size: u32,
    /// The bytes of its network form without the blobs (eth/72's; `size` for a transaction
    /// without blobs).
    pub size_without_blobs: u32,
}
