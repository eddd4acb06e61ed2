//! The transaction pool: transactions sent with `eth_sendRawTransaction`, waiting for the
//! payload builder.
//!
//! Per sender, transactions are kept by nonce; `pending` are those whose nonces follow the
//! sender's account nonce without a gap, `queued` the rest (geth's `txpool_` terms). The
//! builder takes pending transactions, the highest effective priority fee first among the
//! senders' next nonces. A transaction with the same sender and nonce replaces one only with a
//! priority fee and fee cap at least 10% higher.
//!
//! Blob transactions come with their sidecar, checked by [`blobs::validate`] (KZG proofs with
//! c-kzg, in the form the head's fork takes) and kept beside them ([`TxPool::sidecar`],
//! [`TxPool::blob`]) until they leave the pool.

pub mod blobs;

pub use blobs::{BlobError, BlobForm, MAX_POOL_BLOB_TRANSACTIONS};

use alloy_consensus::{transaction::SignerRecoverable, Transaction, TxEnvelope};
use alloy_eips::{eip2718::Decodable2718, eip7594::BlobTransactionSidecarVariant};
use alloy_primitives::{Address, B256, U256};
use gigagas_state::StateSource;
use std::{
    cmp::Reverse,
    collections::{BTreeMap, BinaryHeap, HashMap},
    sync::Mutex,
};

/// Transactions kept at most (the oldest senders' highest nonces are not evicted: new ones are
/// refused instead).
pub const MAX_POOL_TRANSACTIONS: usize = 10_000;

/// Largest transaction the pool takes (bytes of its EIP-2718 encoding; geth's `txMaxSize`,
/// 128 KiB). Blob transactions, whose network form carries the sidecar, are not held to it.
pub const MAX_TX_SIZE: usize = 128 * 1024;

/// The EIP-2718 type byte of blob transactions (EIP-4844).
const EIP4844_TX_TYPE: u8 = 3;

/// Why a transaction is refused (the message follows geth's wording, returned as JSON-RPC
/// error -32000).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// Larger than [`MAX_TX_SIZE`] (blob transactions, whose sidecar rides along, excepted).
    #[error("oversized data: transaction size {size}, limit {limit}")]
    Oversized {
        /// The transaction's encoded size (bytes).
        size: usize,
        /// The limit (bytes).
        limit: usize,
    },
    /// The bytes are not an EIP-2718 transaction (blob transactions in their network form,
    /// with the sidecar).
    #[error("rlp: {0}")]
    Decode(String),
    /// The signature does not recover.
    #[error("invalid sender: {0}")]
    Signature(String),
    /// Another chain's transaction.
    #[error("invalid chain id: have {have}, want {want}")]
    ChainId {
        /// The transaction's.
        have: u64,
        /// The node's.
        want: u64,
    },
    /// The nonce was used already.
    #[error("nonce too low: address {address}, tx: {tx} state: {state}")]
    NonceTooLow {
        /// Sender.
        address: Address,
        /// The transaction's nonce.
        tx: u64,
        /// The account's nonce.
        state: u64,
    },
    /// The sender cannot pay `gas × fee cap + value`.
    #[error(
        "insufficient funds for gas * price + value: address {address} have {have} want {want}"
    )]
    InsufficientFunds {
        /// Sender.
        address: Address,
        /// Balance (wei).
        have: U256,
        /// Cost (wei).
        want: U256,
    },
    /// The same transaction is in the pool.
    #[error("already known")]
    AlreadyKnown,
    /// Same sender and nonce without a 10% fee bump.
    #[error("replacement transaction underpriced")]
    Underpriced,
    /// The gas limit exceeds the block's.
    #[error("exceeds block gas limit")]
    GasLimit,
    /// The pool is full.
    #[error("txpool is full")]
    Full,
    /// Reading the sender's account failed.
    #[error("state: {0}")]
    State(String),
    /// A blob transaction's sidecar is refused (the message names the blob).
    #[error(transparent)]
    Blob(#[from] BlobError),
}

/// One pooled transaction.
#[derive(Debug, Clone)]
pub struct PooledTx {
    /// The transaction (blob transactions without their sidecar).
    pub tx: TxEnvelope,
    /// Its hash.
    pub hash: B256,
    /// Recovered sender.
    pub sender: Address,
}

#[derive(Debug, Default)]
struct Inner {
    by_sender: HashMap<Address, BTreeMap<u64, PooledTx>>,
    by_hash: HashMap<B256, (Address, u64)>,
    blobs: blobs::BlobStore,
}

/// The pool. Thread-safe; every call takes one lock.
#[derive(Debug, Default)]
pub struct TxPool {
    inner: Mutex<Inner>,
}

/// A decoded transaction and, for a blob transaction, its sidecar.
pub type Pooled = (TxEnvelope, Option<BlobTransactionSidecarVariant>);

/// Pool contents split as geth's `txpool_content` does: per sender, by nonce.
#[derive(Debug, Default, Clone)]
pub struct PoolContent {
    /// Executable now: nonces from the account's nonce on, without a gap.
    pub pending: BTreeMap<Address, Vec<PooledTx>>,
    /// Waiting for a gap to be filled.
    pub queued: BTreeMap<Address, Vec<PooledTx>>,
}

impl TxPool {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Decodes, checks and adds the EIP-2718 bytes of a signed transaction (blob transactions
    /// in their network form, with the sidecar, whose form must be `blob_form`, the head's
    /// fork's), against the head state `state` (nonce, balance), `chain_id` and
    /// `block_gas_limit`. Returns the transaction hash.
    ///
    /// # Errors
    /// [`PoolError`], with geth's wording; [`PoolError::Blob`] names the blob at fault.
    pub fn add_raw(
        &self,
        raw: &[u8],
        chain_id: u64,
        block_gas_limit: u64,
        blob_form: BlobForm,
        state: &dyn StateSource,
    ) -> Result<B256, PoolError> {
        // geth's txMaxSize: a pool must not take what a peer could flood it with.
        if raw.len() > MAX_TX_SIZE && raw.first() != Some(&EIP4844_TX_TYPE) {
            return Err(PoolError::Oversized { size: raw.len(), limit: MAX_TX_SIZE });
        }
        let (tx, sidecar) = decode_pooled(raw)?;
        let sender = tx.recover_signer().map_err(|e| PoolError::Signature(e.to_string()))?;
        if let Some(have) = tx.chain_id() {
            if have != chain_id {
                return Err(PoolError::ChainId { have, want: chain_id });
            }
        }
        if tx.gas_limit() > block_gas_limit {
            return Err(PoolError::GasLimit);
        }
        let account = state.account(&sender).map_err(|e| PoolError::State(e.to_string()))?;
        let (nonce, balance) = account.map_or((0, U256::ZERO), |a| (a.nonce, a.balance));
        if tx.nonce() < nonce {
            return Err(PoolError::NonceTooLow { address: sender, tx: tx.nonce(), state: nonce });
        }
        let cost = U256::from(tx.gas_limit()) * U256::from(tx.max_fee_per_gas())
            + tx.value()
            + U256::from(tx.blob_gas_used().unwrap_or(0))
                * U256::from(tx.max_fee_per_blob_gas().unwrap_or(0));
        if balance < cost {
            return Err(PoolError::InsufficientFunds {
                address: sender,
                have: balance,
                want: cost,
            });
        }
        let hash = *tx.tx_hash();
        if self.lock().by_hash.contains_key(&hash) {
            return Err(PoolError::AlreadyKnown);
        }
        if let (Some(sidecar), Some(hashes)) = (&sidecar, tx.blob_versioned_hashes()) {
            // The KZG work runs outside the lock.
            blobs::validate(sidecar, hashes, blob_form)?;
        }
        let mut inner = self.lock();
        if inner.by_hash.contains_key(&hash) {
            return Err(PoolError::AlreadyKnown);
        }
        if inner.by_hash.len() >= MAX_POOL_TRANSACTIONS
            || (sidecar.is_some() && inner.blobs.len() >= MAX_POOL_BLOB_TRANSACTIONS)
        {
            return Err(PoolError::Full);
        }
        let queue = inner.by_sender.entry(sender).or_default();
        if let Some(old) = queue.get(&tx.nonce()) {
            let bumped = |new: u128, old: u128| new >= old + old / 10;
            let fee_ok = bumped(tx.max_fee_per_gas(), old.tx.max_fee_per_gas())
                && bumped(
                    tx.max_priority_fee_per_gas().unwrap_or(tx.max_fee_per_gas()),
                    old.tx.max_priority_fee_per_gas().unwrap_or(old.tx.max_fee_per_gas()),
                );
            if !fee_ok {
                return Err(PoolError::Underpriced);
            }
        }
        let nonce = tx.nonce();
        let replaced = queue.insert(nonce, PooledTx { tx, hash, sender });
        if let Some(old) = replaced {
            inner.by_hash.remove(&old.hash);
            inner.blobs.remove(&old.hash);
        }
        inner.by_hash.insert(hash, (sender, nonce));
        if let Some(sidecar) = sidecar {
            inner.blobs.insert(hash, sidecar);
        }
        Ok(hash)
    }

    /// The nonce after `sender`'s pooled transactions that follow `state_nonce` without a gap
    /// (`state_nonce` when there are none): the next nonce a wallet should use
    /// (`eth_getTransactionCount(…, "pending")`, as geth answers it).
    pub fn pending_nonce(&self, sender: &Address, state_nonce: u64) -> u64 {
        let inner = self.lock();
        let mut next = state_nonce;
        if let Some(queue) = inner.by_sender.get(sender) {
            for nonce in queue.range(state_nonce..).map(|(n, _)| *n) {
                if nonce != next {
                    break;
                }
                next += 1;
            }
        }
        next
    }

    /// The sidecar of the pooled blob transaction `tx`.
    pub fn sidecar(&self, tx: &B256) -> Option<std::sync::Arc<BlobTransactionSidecarVariant>> {
        self.lock().blobs.sidecar(tx)
    }

    /// The sidecar holding the blob with `versioned_hash`, and the blob's index in it
    /// (`engine_getBlobsV1/V2`).
    pub fn blob(
        &self,
        versioned_hash: &B256,
    ) -> Option<(std::sync::Arc<BlobTransactionSidecarVariant>, usize)> {
        self.lock().blobs.blob(versioned_hash)
    }

    /// The pooled transaction with this hash.
    pub fn get(&self, hash: &B256) -> Option<PooledTx> {
        let inner = self.lock();
        let (sender, nonce) = inner.by_hash.get(hash)?;
        inner.by_sender.get(sender)?.get(nonce).cloned()
    }

    /// Number of pooled transactions.
    pub fn len(&self) -> usize {
        self.lock().by_hash.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pending and queued transactions against `state` (account nonces).
    pub fn content(&self, state: &dyn StateSource) -> PoolContent {
        let inner = self.lock();
        let mut content = PoolContent::default();
        for (sender, queue) in &inner.by_sender {
            let mut next = account_nonce(state, sender);
            for (nonce, tx) in queue {
                if *nonce == next {
                    content.pending.entry(*sender).or_default().push(tx.clone());
                    next += 1;
                } else {
                    content.queued.entry(*sender).or_default().push(tx.clone());
                }
            }
        }
        content
    }

    /// The pending transactions in the order a block should take them: among the senders'
    /// next nonces, the highest effective priority fee at `base_fee` (wei) first; transactions
    /// whose fee cap is below `base_fee` wait. Blob transactions are in (the builder takes
    /// those whose sidecar has the block's form, within the block's blob gas).
    pub fn best(&self, state: &dyn StateSource, base_fee: u64) -> Vec<(TxEnvelope, Address)> {
        let content = self.content(state);
        let mut queues: Vec<std::vec::IntoIter<PooledTx>> =
            content.pending.into_values().map(Vec::into_iter).collect();
        let mut heads: Vec<Option<PooledTx>> = queues.iter_mut().map(Iterator::next).collect();
        let tip = |tx: &TxEnvelope| tx.effective_tip_per_gas(base_fee);
        let mut heap: BinaryHeap<(Option<u128>, Reverse<usize>)> = heads
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().map(|tx| (tip(&tx.tx), Reverse(i))))
            .collect();
        let mut out = Vec::new();
        while let Some((fee, Reverse(i))) = heap.pop() {
            let Some(tx) = heads[i].take() else { continue };
            if fee.is_none() {
                continue; // fee cap below the base fee: the sender's later nonces wait too
            }
            out.push((tx.tx, tx.sender));
            if let Some(next) = queues[i].next() {
                heap.push((tip(&next.tx), Reverse(i)));
                heads[i] = Some(next);
            }
        }
        out
    }

    /// Drops the transactions whose nonce is below their sender's nonce in `state` (included
    /// in a canonical block, or replaced by one that was).
    pub fn prune(&self, state: &dyn StateSource) {
        let mut inner = self.lock();
        let mut dropped = Vec::new();
        inner.by_sender.retain(|sender, queue| {
            let nonce = account_nonce(state, sender);
            let keep = queue.split_off(&nonce);
            dropped.extend(queue.values().map(|t| t.hash));
            *queue = keep;
            !queue.is_empty()
        });
        for hash in dropped {
            inner.by_hash.remove(&hash);
            inner.blobs.remove(&hash);
        }
    }
}

fn account_nonce(state: &dyn StateSource, sender: &Address) -> u64 {
    state.account(sender).ok().flatten().map_or(0, |a| a.nonce)
}

/// Decodes the EIP-2718 bytes of a signed transaction; a blob transaction must come in its
/// network form (with the sidecar), which is dropped.
///
/// # Errors
/// [`PoolError::Decode`].
pub fn decode_raw(raw: &[u8]) -> Result<TxEnvelope, PoolError> {
    decode_pooled(raw).map(|(tx, _)| tx)
}

/// Decodes the EIP-2718 bytes of a signed transaction into the transaction and, for a blob
/// transaction (which must come in its network form), its sidecar (either form; not checked).
///
/// # Errors
/// [`PoolError::Decode`].
pub fn decode_pooled(raw: &[u8]) -> Result<Pooled, PoolError> {
    use alloy_consensus::{EthereumTxEnvelope, TxEip4844Variant, TxEip4844WithSidecar};
    type Network = EthereumTxEnvelope<TxEip4844WithSidecar<BlobTransactionSidecarVariant>>;
    match Network::decode_2718_exact(raw) {
        Ok(pooled) => {
            let mut sidecar = None;
            let tx = pooled.map_eip4844(|tx| {
                sidecar = Some(tx.sidecar);
                TxEip4844Variant::TxEip4844(tx.tx)
            });
            Ok((tx, sidecar))
        }
        Err(e) => match TxEnvelope::decode_2718_exact(raw) {
            Ok(tx) if tx.is_eip4844() => {
                Err(PoolError::Decode("blob transaction without its sidecar".into()))
            }
            Ok(tx) => Ok((tx, None)),
            Err(_) => Err(PoolError::Decode(e.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gigagas_state::StateError;
    use revm::state::{AccountInfo, Bytecode};

    #[derive(Debug)]
    struct Empty;

    impl StateSource for Empty {
        fn account(&self, _: &Address) -> Result<Option<AccountInfo>, StateError> {
            Ok(None)
        }
        fn storage(&self, _: &Address, _: &U256) -> Result<U256, StateError> {
            Ok(U256::ZERO)
        }
        fn code(&self, _: &B256) -> Result<Option<Bytecode>, StateError> {
            Ok(None)
        }
        fn block_hash(&self, _: u64) -> Result<Option<B256>, StateError> {
            Ok(None)
        }
        fn has_storage(&self, _: &Address) -> Result<bool, StateError> {
            Ok(false)
        }
    }

    #[test]
    fn oversized_transactions_are_refused_before_decoding() {
        let pool = TxPool::default();
        let mut raw = vec![0u8; MAX_TX_SIZE + 1];
        raw[0] = 2;
        let err = pool.add_raw(&raw, 1, 30_000_000, BlobForm::Eip7594, &Empty).unwrap_err();
        assert!(
            matches!(err, PoolError::Oversized { size, limit: MAX_TX_SIZE } if size == MAX_TX_SIZE + 1),
            "{err}"
        );
        // At the limit the size check passes; these bytes then fail to decode.
        raw.truncate(MAX_TX_SIZE);
        assert!(matches!(
            pool.add_raw(&raw, 1, 30_000_000, BlobForm::Eip7594, &Empty),
            Err(PoolError::Decode(_))
        ));
        // Blob transactions carry their sidecar: no size limit here.
        let mut blob = vec![0u8; MAX_TX_SIZE + 1];
        blob[0] = 3;
        assert!(matches!(
            pool.add_raw(&blob, 1, 30_000_000, BlobForm::Eip7594, &Empty),
            Err(PoolError::Decode(_))
        ));
    }
}
