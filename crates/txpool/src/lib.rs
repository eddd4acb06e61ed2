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
//!
//! A full pool ([`PoolLimits`]) evicts as geth's does when the newcomer pays more: the cheapest
//! transaction among the other senders' last nonces (no gap is opened) leaves, by fee cap then
//! priority fee; for blob transactions, among blob transactions, by blob fee cap first. A
//! newcomer that pays no more than that one is refused ([`PoolError::Underpriced`]).
//!
//! Every transaction the pool takes is announced on [`TxPool::subscribe`] (hash, type, size of
//! its network form: what the devp2p network gossips) once it is executable, as geth's pool
//! broadcasts only what it promotes: a pending transaction at once, a queued one when the
//! transactions before it arrive or a block moves its sender's nonce up to it
//! ([`TxPool::prune`]). [`TxPool::network_transactions`] gives the network form back (blob
//! transactions with their sidecar) for peers that ask.

pub mod blobs;
mod maintain;

pub use blobs::{BlobError, BlobForm, MAX_POOL_BLOB_TRANSACTIONS};
pub use maintain::{maintain_transaction_pool, ChainBlock, PoolChain};

use alloy_consensus::{transaction::SignerRecoverable, Transaction, TxEnvelope};
use alloy_eips::{eip2718::Decodable2718, eip7594::BlobTransactionSidecarVariant};
use alloy_primitives::{Address, B256, U256};
use gigagas_primitives::SenderCache;
use gigagas_state::StateSource;
use revm::primitives::hardfork::SpecId;
use std::{
    cmp::Reverse,
    collections::{BTreeMap, BinaryHeap, HashMap},
    sync::{Arc, Mutex},
};

/// Transactions kept at most by default ([`PoolLimits`]); beyond, the cheapest is evicted for a
/// newcomer that pays more.
pub const MAX_POOL_TRANSACTIONS: usize = 10_000;

/// How many transactions a [`TxPool`] keeps before it evicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLimits {
    /// Transactions of any type ([`MAX_POOL_TRANSACTIONS`] by default).
    pub transactions: usize,
    /// Blob transactions with their sidecars ([`MAX_POOL_BLOB_TRANSACTIONS`] by default).
    pub blob_transactions: usize,
}

impl Default for PoolLimits {
    fn default() -> Self {
        Self { transactions: MAX_POOL_TRANSACTIONS, blob_transactions: MAX_POOL_BLOB_TRANSACTIONS }
    }
}

/// Largest transaction the pool takes (bytes of its EIP-2718 encoding; geth's `txMaxSize`,
/// 128 KiB). Blob transactions, whose network form carries the sidecar, are not held to it.
pub const MAX_TX_SIZE: usize = 128 * 1024;

/// The EIP-2718 type byte of blob transactions (EIP-4844).
const EIP4844_TX_TYPE: u8 = 3;

/// Why a transaction is refused (the message follows geth's wording, returned as JSON-RPC
/// error -32000).
#[derive(Debug, Clone, thiserror::Error)]
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
    Decode(#[source] alloy_eips::eip2718::Eip2718Error),
    /// A blob transaction without its sidecar (the pool takes them in their network form).
    #[error("rlp: blob transaction without its sidecar")]
    MissingSidecar,
    /// The signature does not recover.
    #[error("invalid sender: {0}")]
    Signature(#[source] Arc<alloy_consensus::crypto::RecoveryError>),
    /// Another chain's transaction.
    #[error("invalid chain id: have {have}, want {want}")]
    ChainId {
        /// The transaction's.
        have: u64,
        /// The node's.
        want: u64,
    },
    /// A creation whose init code passes the fork's limit (EIP-3860: 49,152 bytes; EIP-7954
    /// from Amsterdam: 131,072; geth's `ErrMaxInitCodeSizeExceeded`).
    #[error("max initcode size exceeded: code size {size} limit {limit}")]
    InitCodeTooLarge {
        /// The init code's bytes.
        size: usize,
        /// The fork's limit.
        limit: usize,
    },
    /// The nonce is 2^64 - 1, which no transaction may carry (EIP-2681; geth's
    /// `ErrNonceMax`).
    #[error("nonce has max value: address {address}")]
    NonceMax {
        /// Sender.
        address: Address,
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
    ReplacementUnderpriced,
    /// The pool (or its blob part) is full and the transaction pays no more than the cheapest
    /// one it could evict (geth's `ErrUnderpriced`).
    #[error("transaction underpriced: the pool is full and its cheapest evictable transaction pays as much")]
    Underpriced,
    /// The gas limit exceeds the block's.
    #[error("exceeds block gas limit")]
    GasLimit,
    /// The gas limit exceeds the fork's transaction cap: EIP-7825's 2^24 from Osaka, EIP-8037's
    /// 2^32 − 1 from Amsterdam (geth's `ErrGasLimitTooHigh`).
    #[error("transaction gas limit too high (cap: {cap}, tx: {gas})")]
    GasLimitTooHigh {
        /// The fork's cap (gas).
        cap: u64,
        /// The transaction's gas limit.
        gas: u64,
    },
    /// The gas limit is below the intrinsic gas (geth's `ErrIntrinsicGas`).
    #[error("intrinsic gas too low: gas {gas}, minimum needed {needed}")]
    IntrinsicGas {
        /// The transaction's gas limit.
        gas: u64,
        /// Its intrinsic gas (execution and state parts).
        needed: u64,
    },
    /// The gas limit is below the EIP-7623 / EIP-7976 calldata floor, or (Amsterdam) the larger
    /// of the intrinsic gas and the floor exceeds 2^24 (geth's `ErrFloorDataGas`).
    #[error("insufficient gas for floor data gas cost: gas {gas}, minimum needed {needed}")]
    FloorDataGas {
        /// The transaction's gas limit.
        gas: u64,
        /// The floor, or the larger of intrinsic gas and floor when above 2^24.
        needed: u64,
    },
    /// The pool is full and holds nothing it may evict (only the sender's own transactions).
    #[error("txpool is full")]
    Full,
    /// Reading the sender's account failed.
    #[error("state: {0}")]
    State(#[source] Arc<gigagas_state::StateError>),
    /// A blob transaction's sidecar is refused (the message names the blob).
    #[error(transparent)]
    Blob(#[from] BlobError),
}

/// EIP-8037's cap on a transaction's whole gas limit (execution plus state-gas reservoir).
const MAX_TX_TOTAL_GAS: u64 = u32::MAX as u64;

/// geth's gas checks of a pooled transaction under `spec` (core/txpool/validation.go): the
/// fork's gas-limit cap, the intrinsic gas (EIP-2780's prices from Amsterdam, state gas
/// included), the calldata floor (EIP-7623, EIP-7976 from Amsterdam), and from Amsterdam the
/// larger of intrinsic gas and floor within 2^24. revm computes the gas.
fn check_gas(tx: &TxEnvelope, sender: Address, spec: SpecId) -> Result<(), PoolError> {
    use revm::context_interface::cfg::gas_params::{Eip2780TxInfo, GasParams};
    let gas = tx.gas_limit();
    let amsterdam = spec.is_enabled_in(SpecId::AMSTERDAM);
    let cap = revm::primitives::eip7825::TX_GAS_LIMIT_CAP;
    if spec.is_enabled_in(SpecId::OSAKA) && !amsterdam && gas > cap {
        return Err(PoolError::GasLimitTooHigh { cap, gas });
    }
    if amsterdam && gas > MAX_TX_TOTAL_GAS {
        return Err(PoolError::GasLimitTooHigh { cap: MAX_TX_TOTAL_GAS, gas });
    }
    if tx.kind().is_create() && spec.is_enabled_in(SpecId::SHANGHAI) {
        let limit = if amsterdam {
            revm::primitives::eip7954::MAX_INITCODE_SIZE
        } else {
            revm::primitives::eip3860::MAX_INITCODE_SIZE
        };
        let size = tx.input().len();
        if size > limit {
            return Err(PoolError::InitCodeTooLarge { size, limit });
        }
    }
    let eip2780 = amsterdam
        .then(|| Eip2780TxInfo { value: tx.value(), is_self_transfer: tx.to() == Some(sender) });
    let (accounts, keys) = tx.access_list().map_or((0, 0), |list| {
        (list.len() as u64, list.iter().map(|item| item.storage_keys.len() as u64).sum())
    });
    let authorizations = tx.authorization_list().map_or(0, |a| a.len() as u64);
    let initial = GasParams::new_spec(spec).initial_tx_gas(
        tx.input(),
        tx.kind().is_create(),
        accounts,
        keys,
        authorizations,
        eip2780,
    );
    let intrinsic = initial.initial_regular_gas + initial.initial_state_gas;
    if gas < intrinsic {
        return Err(PoolError::IntrinsicGas { gas, needed: intrinsic });
    }
    if spec.is_enabled_in(SpecId::PRAGUE) {
        if gas < initial.floor_gas {
            return Err(PoolError::FloorDataGas { gas, needed: initial.floor_gas });
        }
        let larger = intrinsic.max(initial.floor_gas);
        if amsterdam && larger > cap {
            return Err(PoolError::FloorDataGas { gas, needed: larger });
        }
    }
    Ok(())
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
    /// Queued transactions not announced yet (announced once executable).
    unannounced: HashMap<B256, NewTransaction>,
}

/// What a transaction offers, compared when the pool must evict: the blob fee cap (among blob
/// transactions, `blob`; zero otherwise), the fee cap, the priority fee (wei per gas).
fn price(tx: &TxEnvelope, blob: bool) -> (u128, u128, u128) {
    (
        if blob { tx.max_fee_per_blob_gas().unwrap_or(0) } else { 0 },
        tx.max_fee_per_gas(),
        tx.max_priority_fee_per_gas().unwrap_or(tx.max_fee_per_gas()),
    )
}

impl Inner {
    /// Makes room for `newcomer` from `sender`: removes the cheapest transaction among the other
    /// senders' last nonces (blob transactions only when `blob`), if `newcomer` pays more.
    ///
    /// # Errors
    /// [`PoolError::Underpriced`] when it pays no more, [`PoolError::Full`] when nothing may go.
    fn evict(
        &mut self,
        sender: &Address,
        newcomer: &TxEnvelope,
        blob: bool,
    ) -> Result<(), PoolError> {
        let victim = self
            .by_sender
            .iter()
            .filter(|(s, _)| *s != sender)
            .filter_map(|(_, queue)| queue.last_key_value().map(|(_, tx)| tx))
            .filter(|tx| !blob || self.blobs.contains(&tx.hash))
            .map(|tx| (tx.sender, tx.tx.nonce(), price(&tx.tx, blob)))
            .min_by_key(|(_, _, price)| *price);
        let Some((victim, nonce, cheapest)) = victim else { return Err(PoolError::Full) };
        if price(newcomer, blob) <= cheapest {
            return Err(PoolError::Underpriced);
        }
        let queue = self.by_sender.get_mut(&victim).expect("victim's queue");
        let gone = queue.remove(&nonce).expect("victim");
        if queue.is_empty() {
            self.by_sender.remove(&victim);
        }
        self.by_hash.remove(&gone.hash);
        self.blobs.remove(&gone.hash);
        self.unannounced.remove(&gone.hash);
        Ok(())
    }

    /// The announcements of `sender`'s transactions that are executable against the account
    /// nonce `state_nonce` (a run of nonces from it without a gap) and not announced yet, in
    /// nonce order; they count as announced from now on.
    fn executable_unannounced(
        &mut self,
        sender: &Address,
        state_nonce: u64,
    ) -> Vec<NewTransaction> {
        let Some(queue) = self.by_sender.get(sender) else { return Vec::new() };
        let mut out = Vec::new();
        for (next, (nonce, tx)) in (state_nonce..).zip(queue.range(state_nonce..)) {
            if *nonce != next {
                break;
            }
            if let Some(a) = self.unannounced.remove(&tx.hash) {
                out.push(a);
            }
        }
        out
    }
}

/// A transaction the pool took, as `NewPooledTransactionHashes` announces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewTransaction {
    /// Its hash.
    pub hash: B256,
    /// Its EIP-2718 type.
    pub tx_type: u8,
    /// The bytes of its network form (blob transactions with the sidecar).
    pub size: usize,
    /// The bytes of its network form without the blobs (eth/72's, EIP-8070; `size` for a
    /// transaction without blobs).
    pub size_without_blobs: usize,
}

/// How many announcements a slow subscriber may fall behind by before it misses some.
const ANNOUNCEMENT_BACKLOG: usize = 16_384;

/// The pool. Thread-safe; every call takes one lock.
#[derive(Debug)]
pub struct TxPool {
    inner: Mutex<Inner>,
    limits: PoolLimits,
    announcements: tokio::sync::broadcast::Sender<NewTransaction>,
    /// Every sender recovered by [`TxPool::add_pooled`], by transaction hash, for block
    /// validation to take instead of recovering it again.
    senders: Arc<SenderCache>,
}

impl Default for TxPool {
    fn default() -> Self {
        Self::with_limits(PoolLimits::default())
    }
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
    /// An empty pool that keeps at most `limits` before it evicts.
    pub fn with_limits(limits: PoolLimits) -> Self {
        let (announcements, _) = tokio::sync::broadcast::channel(ANNOUNCEMENT_BACKLOG);
        Self { inner: Mutex::default(), limits, announcements, senders: Arc::default() }
    }

    /// The senders this pool recovered, by transaction hash (kept after a transaction leaves
    /// the pool, up to the cache's bound): what the engine looks a payload's transactions up
    /// in before recovering the rest.
    pub fn sender_cache(&self) -> &Arc<SenderCache> {
        &self.senders
    }

    /// Every transaction the pool takes from now on (a receiver that falls
    /// [`ANNOUNCEMENT_BACKLOG`] behind misses the oldest).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<NewTransaction> {
        self.announcements.subscribe()
    }

    /// Whether the pool holds the transaction `hash`.
    pub fn contains(&self, hash: &B256) -> bool {
        self.lock().by_hash.contains_key(hash)
    }

    /// The network form (EIP-2718; a blob transaction with its sidecar) of the pooled
    /// transactions among `hashes`, in their order, stopping once `max_bytes` is reached (the
    /// transaction that passes it included, as geth answers `GetPooledTransactions`).
    pub fn network_transactions(
        &self,
        hashes: &[B256],
        max_bytes: usize,
        without_blobs: bool,
    ) -> Vec<alloy_primitives::Bytes> {
        use alloy_consensus::{EthereumTxEnvelope, TxEip4844Variant, TxEip4844WithSidecar};
        use alloy_eips::eip2718::Encodable2718;
        type Network = EthereumTxEnvelope<TxEip4844WithSidecar<BlobTransactionSidecarVariant>>;
        let inner = self.lock();
        let mut out = Vec::new();
        let mut bytes = 0;
        for hash in hashes {
            if bytes >= max_bytes {
                break;
            }
            let Some((sender, nonce)) = inner.by_hash.get(hash) else { continue };
            let Some(pooled) = inner.by_sender.get(sender).and_then(|q| q.get(nonce)) else {
                continue;
            };
            let raw = match (pooled.tx.is_eip4844(), inner.blobs.sidecar(hash)) {
                (true, Some(sidecar)) => {
                    let network: Network = pooled.tx.clone().map_eip4844(|tx| {
                        let tx = match tx {
                            TxEip4844Variant::TxEip4844(tx) => tx,
                            TxEip4844Variant::TxEip4844WithSidecar(with) => with.tx,
                        };
                        let sidecar = if without_blobs {
                            blobs::without_blobs(&sidecar)
                        } else {
                            (*sidecar).clone()
                        };
                        TxEip4844WithSidecar { tx, sidecar }
                    });
                    network.encoded_2718()
                }
                // A blob transaction whose sidecar is gone cannot be served.
                (true, None) => continue,
                (false, _) => pooled.tx.encoded_2718(),
            };
            bytes += raw.len();
            out.push(raw.into());
        }
        out
    }

    /// [`TxPool::add_raw`] under the rules of the block after `head` on `chain` (a header of
    /// the node's head; none: Osaka's and no gas limit): its gas limit, the blob sidecar form
    /// of the head's fork (EIP-7594 cell proofs from Osaka on), and the next block's spec, as
    /// geth's pool takes them.
    ///
    /// # Errors
    /// [`PoolError`], as [`TxPool::add_raw`].
    pub fn add_raw_after(
        &self,
        raw: &[u8],
        chain: &gigagas_primitives::ChainSpec,
        head: Option<&alloy_consensus::Header>,
        state: &dyn StateSource,
    ) -> Result<B256, PoolError> {
        check_size(raw.len(), raw.first() == Some(&EIP4844_TX_TYPE))?;
        self.add_pooled_after(raw.len(), decode_pooled(raw)?, chain, head, state)
    }

    /// [`TxPool::add_raw_after`] of a transaction already decoded ([`decode_pooled`]) from
    /// `size` bytes (a caller that read it first, e.g. to check its fee against a cap).
    ///
    /// # Errors
    /// [`PoolError`], as [`TxPool::add_raw`].
    pub fn add_pooled_after(
        &self,
        size: usize,
        pooled: Pooled,
        chain: &gigagas_primitives::ChainSpec,
        head: Option<&alloy_consensus::Header>,
        state: &dyn StateSource,
    ) -> Result<B256, PoolError> {
        let gas_limit = head.map_or(u64::MAX, |h| h.gas_limit);
        let osaka = chain.is_osaka(head.map_or(0, |h| h.timestamp));
        let form = if osaka { BlobForm::Eip7594 } else { BlobForm::Eip4844 };
        let spec = head.map_or(SpecId::OSAKA, |h| chain.spec_id(h.number + 1, h.timestamp));
        self.add_pooled(size, pooled, chain.chain_id, gas_limit, form, spec, state)
    }

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
        spec: SpecId,
        state: &dyn StateSource,
    ) -> Result<B256, PoolError> {
        check_size(raw.len(), raw.first() == Some(&EIP4844_TX_TYPE))?;
        let pooled = decode_pooled(raw)?;
        self.add_pooled(raw.len(), pooled, chain_id, block_gas_limit, blob_form, spec, state)
    }

    /// [`TxPool::add_raw`] of a transaction already decoded ([`decode_pooled`]) from `size`
    /// bytes.
    ///
    /// # Errors
    /// As [`TxPool::add_raw`].
    #[allow(clippy::too_many_arguments)]
    pub fn add_pooled(
        &self,
        size: usize,
        (tx, sidecar): Pooled,
        chain_id: u64,
        block_gas_limit: u64,
        blob_form: BlobForm,
        spec: SpecId,
        state: &dyn StateSource,
    ) -> Result<B256, PoolError> {
        check_size(size, tx.is_eip4844())?;
        let sender = tx.recover_signer().map_err(|e| PoolError::Signature(Arc::new(e)))?;
        // Recorded whatever the checks below say: a transaction the pool refuses (a nonce
        // gap, a full pool) may still come in a block.
        self.senders.insert(*tx.tx_hash(), sender);
        if let Some(have) = tx.chain_id() {
            if have != chain_id {
                return Err(PoolError::ChainId { have, want: chain_id });
            }
        }
        if tx.gas_limit() > block_gas_limit {
            return Err(PoolError::GasLimit);
        }
        check_gas(&tx, sender, spec)?;
        let account = state.account(&sender).map_err(|e| PoolError::State(Arc::new(e)))?;
        let (nonce, balance) = account.map_or((0, U256::ZERO), |a| (a.nonce, a.balance));
        if tx.nonce() == u64::MAX {
            return Err(PoolError::NonceMax { address: sender });
        }
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
        // So does the encoding that sizes eth/72's form.
        let stripped_size = sidecar.as_ref().map(|s| blobs::size_without_blobs(&tx, s));
        let mut inner = self.lock();
        if inner.by_hash.contains_key(&hash) {
            return Err(PoolError::AlreadyKnown);
        }
        let old = inner.by_sender.get(&sender).and_then(|q| q.get(&tx.nonce()));
        if let Some(old) = old {
            let bumped = |new: u128, old: u128| new >= old + old / 10;
            let fee_ok = bumped(tx.max_fee_per_gas(), old.tx.max_fee_per_gas())
                && bumped(
                    tx.max_priority_fee_per_gas().unwrap_or(tx.max_fee_per_gas()),
                    old.tx.max_priority_fee_per_gas().unwrap_or(old.tx.max_fee_per_gas()),
                );
            if !fee_ok {
                return Err(PoolError::ReplacementUnderpriced);
            }
        }
        // A replacement takes no new place (a blob transaction replacing one, no blob place).
        let grows = old.is_none();
        let adds_blobs = sidecar.is_some() && !old.is_some_and(|o| inner.blobs.contains(&o.hash));
        if adds_blobs && inner.blobs.len() >= self.limits.blob_transactions {
            inner.evict(&sender, &tx, true)?;
        }
        if grows && inner.by_hash.len() >= self.limits.transactions {
            inner.evict(&sender, &tx, false)?;
        }
        let state_nonce = nonce;
        let nonce = tx.nonce();
        let tx_type = tx.tx_type() as u8;
        let replaced =
            inner.by_sender.entry(sender).or_default().insert(nonce, PooledTx { tx, hash, sender });
        if let Some(old) = replaced {
            inner.by_hash.remove(&old.hash);
            inner.blobs.remove(&old.hash);
            inner.unannounced.remove(&old.hash);
        }
        inner.by_hash.insert(hash, (sender, nonce));
        if let Some(sidecar) = sidecar {
            inner.blobs.insert(hash, sidecar);
        }
        let size_without_blobs = stripped_size.unwrap_or(size);
        inner.unannounced.insert(hash, NewTransaction { hash, tx_type, size, size_without_blobs });
        let executable = inner.executable_unannounced(&sender, state_nonce);
        drop(inner);
        for announcement in executable {
            // No subscriber is no error.
            let _ = self.announcements.send(announcement);
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

    /// The cells of `columns` (ascending, each below 128) of the blobs of each blob
    /// transaction of `hashes` (EIP-8070's `Cells`: column by column, blob by blob within a
    /// column), `None` for one the pool does not hold with its blobs.
    ///
    /// # Errors
    /// [`BlobError`] when c-kzg cannot extend a blob (a blob the pool checked cannot fail).
    pub fn cells(
        &self,
        hashes: &[B256],
        columns: &[u64],
    ) -> Result<Vec<Option<Vec<alloy_primitives::Bytes>>>, BlobError> {
        let sidecars: Vec<_> = {
            let inner = self.lock();
            hashes.iter().map(|h| inner.blobs.sidecar(h)).collect()
        };
        sidecars
            .into_iter()
            .map(|sidecar| match sidecar {
                Some(s) if !s.blobs().is_empty() => blobs::cells(s.blobs(), columns).map(Some),
                _ => Ok(None),
            })
            .collect()
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

    /// Pending and queued transactions against `state` (account nonces); those below their
    /// sender's nonce (included, not pruned yet) are neither.
    pub fn content(&self, state: &dyn StateSource) -> PoolContent {
        let inner = self.lock();
        let mut content = PoolContent::default();
        for (sender, queue) in &inner.by_sender {
            let mut next = account_nonce(state, sender);
            for (nonce, tx) in queue.range(next..) {
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
    /// in a canonical block, or replaced by one that was), then announces the queued ones the
    /// new nonces made executable.
    pub fn prune(&self, state: &dyn StateSource) {
        let mut inner = self.lock();
        let mut dropped = Vec::new();
        let mut nonces = Vec::new();
        inner.by_sender.retain(|sender, queue| {
            let nonce = account_nonce(state, sender);
            let keep = queue.split_off(&nonce);
            dropped.extend(queue.values().map(|t| t.hash));
            *queue = keep;
            nonces.push((*sender, nonce));
            !queue.is_empty()
        });
        for hash in dropped {
            inner.by_hash.remove(&hash);
            inner.blobs.remove(&hash);
            inner.unannounced.remove(&hash);
        }
        let mut executable = Vec::new();
        if !inner.unannounced.is_empty() {
            for (sender, nonce) in nonces {
                executable.extend(inner.executable_unannounced(&sender, nonce));
            }
        }
        drop(inner);
        for announcement in executable {
            let _ = self.announcements.send(announcement);
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

/// geth's txMaxSize: a pool must not take what a peer could flood it with (blob transactions,
/// `blob`, are bounded by their blob count instead).
fn check_size(size: usize, blob: bool) -> Result<(), PoolError> {
    match size > MAX_TX_SIZE && !blob {
        true => Err(PoolError::Oversized { size, limit: MAX_TX_SIZE }),
        false => Ok(()),
    }
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
            Ok(tx) if tx.is_eip4844() => Err(PoolError::MissingSidecar),
            Ok(tx) => Ok((tx, None)),
            Err(_) => Err(PoolError::Decode(e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gigagas_state::StateError;
    use revm::state::{AccountInfo, Bytecode};

    /// Every account has `self.0` wei and nonce `self.1`; none exists when `None`.
    #[derive(Debug)]
    struct Accounts(Option<U256>, u64);

    /// No account exists.
    const EMPTY: Accounts = Accounts(None, 0);

    /// Every account holds 1,000 ETH.
    const FUNDED: Accounts =
        Accounts(Some(U256::from_limbs([3_875_820_019_684_212_736, 54, 0, 0])), 0);

    impl StateSource for Accounts {
        fn account(&self, _: &Address) -> Result<Option<AccountInfo>, StateError> {
            Ok(self.0.map(|balance| AccountInfo { balance, nonce: self.1, ..Default::default() }))
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
        let err = pool
            .add_raw(&raw, 1, 30_000_000, BlobForm::Eip7594, SpecId::OSAKA, &EMPTY)
            .unwrap_err();
        assert!(
            matches!(err, PoolError::Oversized { size, limit: MAX_TX_SIZE } if size == MAX_TX_SIZE + 1),
            "{err}"
        );
        // At the limit the size check passes; these bytes then fail to decode.
        raw.truncate(MAX_TX_SIZE);
        assert!(matches!(
            pool.add_raw(&raw, 1, 30_000_000, BlobForm::Eip7594, SpecId::OSAKA, &EMPTY),
            Err(PoolError::Decode(_))
        ));
        // Blob transactions carry their sidecar: no size limit here.
        let mut blob = vec![0u8; MAX_TX_SIZE + 1];
        blob[0] = 3;
        assert!(matches!(
            pool.add_raw(&blob, 1, 30_000_000, BlobForm::Eip7594, SpecId::OSAKA, &EMPTY),
            Err(PoolError::Decode(_))
        ));
    }

    #[test]
    fn the_senders_the_pool_recovered_are_not_recovered_again_in_a_block() {
        use alloy_eips::eip2718::Decodable2718;
        let pool = TxPool::default();
        let add = |raw: &[u8]| {
            pool.add_raw(raw, 1, 30_000_000, BlobForm::Eip7594, SpecId::OSAKA, &FUNDED)
        };
        // Key 0's transaction is pooled; key 1's is refused after its recovery (fee cap under
        // the pool's floor or not, its sender is recorded either way); key 2's never came.
        let (a, b, c) = (transfer(0, 0, 2), transfer(1, 0, 2), transfer(2, 0, 2));
        add(&a).unwrap();
        let _ = add(&b);
        let txs: Vec<TxEnvelope> = [&a, &b, &c]
            .iter()
            .map(|raw| TxEnvelope::decode_2718(&mut raw.as_slice()).unwrap())
            .collect();
        let block = gigagas_primitives::BlockInput {
            hash: B256::ZERO,
            header: alloy_consensus::Header { number: 1, ..Default::default() },
            transactions: txs,
            claimed_senders: Vec::new(),
            withdrawals: None,
            ommers: Vec::new(),
        };
        let chain = gigagas_primitives::ChainSpec::mainnet();
        let (senders, known) = block.par_recover_cached(&chain, pool.sender_cache()).unwrap();
        assert_eq!(known, 2);
        assert_eq!(senders, block.par_recover(&chain).unwrap());
        // Streamed: the two known taken, key 2's recovered when it is asked for.
        let streamed =
            gigagas_primitives::StreamedSenders::lookup(&block, &chain, pool.sender_cache())
                .unwrap();
        assert_eq!(streamed.known(), 2);
        let streamed = gigagas_primitives::Senders::from(&streamed);
        assert_eq!(streamed.get(&block, 2).unwrap(), senders[2]);
        assert_eq!(streamed.to_vec(&block).unwrap(), senders);
        // Without a pool none is known: recovered beside (here on this thread) or when asked.
        let unknown = gigagas_primitives::StreamedSenders::unknown(&block, &chain);
        assert_eq!(unknown.known(), 0);
        unknown.recover_missing(&block);
        assert_eq!(gigagas_primitives::Senders::from(&unknown).to_vec(&block).unwrap(), senders);
        let asked = gigagas_primitives::StreamedSenders::unknown(&block, &chain);
        assert_eq!(gigagas_primitives::Senders::from(&asked).get(&block, 1).unwrap(), senders[1]);
        // A streamed sender that differs from the claimed one fails when its transaction asks
        // for it, naming the transaction; the others are answered.
        let claimed = vec![senders[0], senders[1], Address::repeat_byte(9)];
        let wrong = gigagas_primitives::BlockInput { claimed_senders: claimed, ..block.clone() };
        let streamed =
            gigagas_primitives::StreamedSenders::lookup(&wrong, &chain, pool.sender_cache())
                .unwrap();
        let streamed = gigagas_primitives::Senders::from(&streamed);
        assert_eq!(streamed.get(&wrong, 0).unwrap(), senders[0]);
        assert!(matches!(
            streamed.get(&wrong, 2),
            Err(gigagas_primitives::RecoveryError::SenderMismatch { tx_index: 2, .. })
        ));
        // A sender held for a hash is taken only for that hash: the same transfer signed by
        // another key (another signature, another hash) is recovered.
        let other = TxEnvelope::decode_2718(&mut transfer(3, 0, 2).as_slice()).unwrap();
        let block = gigagas_primitives::BlockInput { transactions: vec![other], ..block };
        let (senders, known) = block.par_recover_cached(&chain, pool.sender_cache()).unwrap();
        assert_eq!((known, senders), (0, block.par_recover(&chain).unwrap()));
        // A claimed sender that differs from a known one is refused as a recovered one is.
        let txs = vec![TxEnvelope::decode_2718(&mut a.as_slice()).unwrap()];
        let block = gigagas_primitives::BlockInput {
            transactions: txs,
            claimed_senders: vec![Address::repeat_byte(9)],
            ..block
        };
        assert!(matches!(
            block.par_recover_cached(&chain, pool.sender_cache()),
            Err(gigagas_primitives::RecoveryError::SenderMismatch { tx_index: 0, .. })
        ));
    }

    fn key(i: u8) -> k256::ecdsa::SigningKey {
        k256::ecdsa::SigningKey::from_slice(&[i + 1; 32]).unwrap()
    }

    fn signature(key: &k256::ecdsa::SigningKey, hash: B256) -> alloy_primitives::Signature {
        let (sig, recid) = key.sign_prehash_recoverable(hash.as_slice()).unwrap();
        alloy_primitives::Signature::new(
            U256::from_be_slice(&sig.r().to_bytes()),
            U256::from_be_slice(&sig.s().to_bytes()),
            recid.is_y_odd(),
        )
    }

    /// The EIP-2718 bytes of an EIP-1559 transfer from key `i` paying `gwei` as fee cap and tip.
    fn transfer(i: u8, nonce: u64, gwei: u128) -> Vec<u8> {
        use alloy_consensus::{SignableTransaction, TxEip1559};
        use alloy_eips::eip2718::Encodable2718;
        let tx = TxEip1559 {
            chain_id: 1,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: gwei * 1_000_000_000,
            max_priority_fee_per_gas: gwei * 1_000_000_000,
            to: alloy_primitives::TxKind::Call(Address::repeat_byte(0x42)),
            value: U256::from(1),
            ..Default::default()
        };
        let sig = signature(&key(i), tx.signature_hash());
        TxEnvelope::from(tx.into_signed(sig)).encoded_2718()
    }

    /// A 1-wei EIP-1559 transfer from key `i` with `gas` and `data`.
    fn transfer_with(i: u8, gas: u64, data: Vec<u8>) -> Vec<u8> {
        use alloy_consensus::{SignableTransaction, TxEip1559};
        use alloy_eips::eip2718::Encodable2718;
        let tx = TxEip1559 {
            chain_id: 1,
            gas_limit: gas,
            max_fee_per_gas: 1_000_000_000,
            max_priority_fee_per_gas: 1_000_000_000,
            to: alloy_primitives::TxKind::Call(Address::repeat_byte(0x42)),
            value: U256::from(1),
            input: data.into(),
            ..Default::default()
        };
        let sig = signature(&key(i), tx.signature_hash());
        TxEnvelope::from(tx.into_signed(sig)).encoded_2718()
    }

    #[test]
    fn gas_limits_follow_the_forks_caps_intrinsic_gas_and_floor() {
        let pool = TxPool::default();
        let add = |raw: &[u8], spec| {
            pool.add_raw(raw, 1, 1_000_000_000, BlobForm::Eip7594, spec, &FUNDED)
        };
        // Osaka: EIP-7825's cap; Amsterdam lets the rest be a state-gas reservoir.
        let big = transfer_with(0, (1 << 24) + 1, Vec::new());
        let err = add(&big, SpecId::OSAKA).unwrap_err();
        assert_eq!(
            err.to_string(),
            PoolError::GasLimitTooHigh { cap: 1 << 24, gas: (1 << 24) + 1 }.to_string()
        );
        assert!(add(&big, SpecId::AMSTERDAM).is_ok());
        // Intrinsic gas: 21,000 for a value transfer in both (EIP-2780: 12,000 + 3,000 + 6,000).
        for spec in [SpecId::OSAKA, SpecId::AMSTERDAM] {
            let err = add(&transfer_with(1, 20_999, Vec::new()), spec).unwrap_err();
            assert_eq!(
                err.to_string(),
                PoolError::IntrinsicGas { gas: 20_999, needed: 21_000 }.to_string(),
                "{spec:?}"
            );
        }
        // 1,000 non-zero bytes of calldata: intrinsic 21,000 + 16,000; the floor is 21,000 + 40
        // a non-zero byte in Osaka (EIP-7623), 21,000 + 64 a byte in Amsterdam (EIP-7976).
        let data = vec![0xff; 1000];
        let err = add(&transfer_with(2, 60_999, data.clone()), SpecId::OSAKA).unwrap_err();
        assert_eq!(
            err.to_string(),
            PoolError::FloorDataGas { gas: 60_999, needed: 61_000 }.to_string()
        );
        assert!(add(&transfer_with(2, 70_000, data.clone()), SpecId::OSAKA).is_ok());
        let err = add(&transfer_with(3, 70_000, data), SpecId::AMSTERDAM).unwrap_err();
        assert_eq!(
            err.to_string(),
            PoolError::FloorDataGas { gas: 70_000, needed: 85_000 }.to_string()
        );
        // Init code: 49,152 bytes at most from Shanghai (EIP-3860), 131,072 from Amsterdam
        // (EIP-7954; the 128 KiB transaction size limit comes first there).
        let init = vec![0u8; 49_153];
        let err = add(&create_with(4, 10_000_000, init.clone()), SpecId::OSAKA).unwrap_err();
        assert_eq!(
            err.to_string(),
            PoolError::InitCodeTooLarge { size: 49_153, limit: 49_152 }.to_string()
        );
        assert!(add(&create_with(4, 10_000_000, init), SpecId::AMSTERDAM).is_ok());
    }

    /// A contract creation from key `i` with `gas` and init code `data`.
    fn create_with(i: u8, gas: u64, data: Vec<u8>) -> Vec<u8> {
        use alloy_consensus::{SignableTransaction, TxEip1559};
        use alloy_eips::eip2718::Encodable2718;
        let tx = TxEip1559 {
            chain_id: 1,
            gas_limit: gas,
            max_fee_per_gas: 1_000_000_000,
            max_priority_fee_per_gas: 1_000_000_000,
            to: alloy_primitives::TxKind::Create,
            input: data.into(),
            ..Default::default()
        };
        let sig = signature(&key(i), tx.signature_hash());
        TxEnvelope::from(tx.into_signed(sig)).encoded_2718()
    }

    /// The network form of a one-blob transaction from key `i` paying `gwei` per blob gas.
    fn blob_tx(i: u8, nonce: u64, gwei: u128, sidecar: &BlobTransactionSidecarVariant) -> Vec<u8> {
        use alloy_consensus::{
            EthereumTxEnvelope, SignableTransaction, TxEip4844, TxEip4844WithSidecar,
        };
        use alloy_eips::eip2718::Encodable2718;
        let tx = TxEip4844 {
            chain_id: 1,
            nonce,
            gas_limit: 21_000,
            max_fee_per_gas: 10_000_000_000,
            max_priority_fee_per_gas: 1_000_000_000,
            to: Address::repeat_byte(0x42),
            blob_versioned_hashes: sidecar.versioned_hashes().collect(),
            max_fee_per_blob_gas: gwei * 1_000_000_000,
            ..Default::default()
        };
        let sig = signature(&key(i), tx.signature_hash());
        let signed =
            TxEip4844WithSidecar::from_tx_and_sidecar(tx, sidecar.clone()).into_signed(sig);
        EthereumTxEnvelope::Eip4844(signed).encoded_2718()
    }

    /// An EIP-4844 sidecar of one sample blob, its commitment and proof computed.
    fn one_blob_sidecar() -> BlobTransactionSidecarVariant {
        let settings = alloy_eips::eip4844::env_settings::EnvKzgSettings::Default.get();
        BlobTransactionSidecarVariant::Eip4844(
            alloy_eips::eip4844::BlobTransactionSidecar::try_from_blobs_with_settings(
                blobs::sample_blobs(1),
                settings,
            )
            .unwrap(),
        )
    }

    #[test]
    fn taken_transactions_are_announced_and_given_back_in_network_form() {
        let pool = TxPool::default();
        let mut announced = pool.subscribe();
        let add = |raw: &[u8]| {
            pool.add_raw(raw, 1, 30_000_000, BlobForm::Eip4844, SpecId::PRAGUE, &FUNDED)
        };
        let raw = transfer(0, 0, 1);
        let hash = add(&raw).unwrap();
        assert_eq!(
            announced.try_recv().unwrap(),
            NewTransaction { hash, tx_type: 2, size: raw.len(), size_without_blobs: raw.len() }
        );
        // A refused transaction is not announced.
        assert!(matches!(add(&raw), Err(PoolError::AlreadyKnown)));
        assert!(announced.try_recv().is_err());
        let sidecar = one_blob_sidecar();
        let blob_raw = blob_tx(1, 0, 3, &sidecar);
        let blob = add(&blob_raw).unwrap();
        assert_eq!(
            announced.try_recv().unwrap(),
            NewTransaction {
                hash: blob,
                tx_type: 3,
                size: blob_raw.len(),
                size_without_blobs: pool.network_transactions(&[blob], usize::MAX, true)[0].len()
            }
        );
        assert!(pool.contains(&hash) && pool.contains(&blob));
        // Both come back byte for byte (the blob transaction with its sidecar); an unknown
        // hash is skipped; past the byte budget the answer stops.
        let unknown = B256::repeat_byte(7);
        let got = pool.network_transactions(&[hash, unknown, blob], usize::MAX, false);
        let bytes = |v: &Vec<u8>| alloy_primitives::Bytes::from(v.clone());
        assert_eq!(got, vec![bytes(&raw), bytes(&blob_raw)]);
        assert_eq!(pool.network_transactions(&[hash, blob], 1, false), vec![bytes(&raw)]);
    }

    /// geth broadcasts what it promotes: a queued transaction (a nonce gap before it) is
    /// announced only once the gap closes, by the missing transaction or by a block; a nonce
    /// of 2^64 - 1 is refused (EIP-2681).
    #[test]
    fn only_executable_transactions_are_announced() {
        let pool = TxPool::default();
        let mut announced = pool.subscribe();
        let add = |raw: &[u8], state: &dyn StateSource| {
            pool.add_raw(raw, 1, 30_000_000, BlobForm::Eip4844, SpecId::PRAGUE, state)
        };
        let hash_of = |a: Option<NewTransaction>| a.map(|a| a.hash);
        let third = add(&transfer(0, 2, 1), &FUNDED).unwrap();
        assert!(announced.try_recv().is_err(), "nonce 2 waits for 0 and 1");
        let first = add(&transfer(0, 0, 1), &FUNDED).unwrap();
        assert_eq!(hash_of(announced.try_recv().ok()), Some(first));
        assert!(announced.try_recv().is_err(), "nonce 2 still waits for 1");
        let second = add(&transfer(0, 1, 1), &FUNDED).unwrap();
        assert_eq!(hash_of(announced.try_recv().ok()), Some(second));
        assert_eq!(hash_of(announced.try_recv().ok()), Some(third), "the gap closed");
        assert!(announced.try_recv().is_err(), "each is announced once");
        // A block moves sender 1's nonce to 5: its queued nonce 5 and 6 become executable.
        let five = add(&transfer(1, 5, 1), &FUNDED).unwrap();
        let six = add(&transfer(1, 6, 1), &FUNDED).unwrap();
        assert!(announced.try_recv().is_err());
        pool.prune(&Accounts(FUNDED.0, 5));
        let got: Vec<_> =
            std::iter::from_fn(|| announced.try_recv().ok()).map(|a| a.hash).collect();
        assert_eq!(got, vec![five, six]);
        assert!(!pool.contains(&first) && pool.contains(&six));
        let max = add(&transfer(2, u64::MAX, 1), &FUNDED);
        assert!(matches!(max, Err(PoolError::NonceMax { .. })), "{max:?}");
        assert!(announced.try_recv().is_err());
    }

    /// Pool maintenance prunes after each notification of the canonical chain, against the
    /// head's state it reads then (a block moved the sender's nonce to 2), content leaves the
    /// included nonces out before that, and the task ends when the chain's sender is gone.
    /// A chain for pool maintenance: its canonical blocks (index = number) and the head's
    /// nonce of every account.
    struct TestChain {
        spec: gigagas_primitives::ChainSpec,
        blocks: std::sync::Mutex<Vec<crate::ChainBlock>>,
        nonce: std::sync::atomic::AtomicU64,
    }

    impl TestChain {
        fn new() -> Self {
            let spec = gigagas_primitives::ChainSpec::from_genesis_fork(
                alloy_hardforks::EthereumHardfork::Prague,
            );
            let chain = Self {
                spec,
                blocks: std::sync::Mutex::default(),
                nonce: std::sync::atomic::AtomicU64::new(0),
            };
            chain.push(0, B256::ZERO, Vec::new());
            chain
        }

        /// Makes block `number` (its hash `number` and `tag`) with `raw` transactions the
        /// canonical one, dropping the blocks above it.
        fn push(&self, number: u64, tag: B256, raw: Vec<Vec<u8>>) {
            let mut blocks = self.blocks.lock().unwrap();
            blocks.truncate(usize::try_from(number).unwrap());
            let header = alloy_consensus::Header {
                number,
                gas_limit: 30_000_000,
                base_fee_per_gas: Some(1),
                ..Default::default()
            };
            let transactions = raw.iter().map(|r| decode_raw(r).unwrap()).collect();
            let hash = alloy_primitives::keccak256([&number.to_be_bytes()[..], &tag[..]].concat());
            blocks.push(crate::ChainBlock { hash, header, transactions });
        }
    }

    impl crate::PoolChain for TestChain {
        type Error = std::convert::Infallible;

        fn chain_spec(&self) -> &gigagas_primitives::ChainSpec {
            &self.spec
        }

        fn latest(&self) -> Result<Arc<dyn StateSource>, Self::Error> {
            let nonce = self.nonce.load(std::sync::atomic::Ordering::SeqCst);
            Ok(Arc::new(Accounts(FUNDED.0, nonce)))
        }

        fn head(&self) -> Result<(u64, B256), Self::Error> {
            let blocks = self.blocks.lock().unwrap();
            Ok((blocks.len() as u64 - 1, blocks.last().unwrap().hash))
        }

        fn canonical_hash(&self, number: u64) -> Result<Option<B256>, Self::Error> {
            Ok(self.canonical_block(number)?.map(|b| b.hash))
        }

        fn canonical_block(&self, number: u64) -> Result<Option<crate::ChainBlock>, Self::Error> {
            let blocks = self.blocks.lock().unwrap();
            Ok(usize::try_from(number).ok().and_then(|n| blocks.get(n)).cloned())
        }
    }

    /// Maintenance follows the chain's notifications: a new head prunes the nonces it used,
    /// queued notifications count as one, and the task ends when the chain's sender is gone;
    /// a reorg puts back the transactions of the blocks it took out that the new branch does
    /// not hold.
    #[test]
    fn maintenance_prunes_what_each_new_head_made_stale_and_puts_back_what_a_reorg_took_out() {
        let pool = Arc::new(TxPool::default());
        let add = |raw: &[u8]| {
            pool.add_raw(raw, 1, 30_000_000, BlobForm::Eip4844, SpecId::PRAGUE, &FUNDED).unwrap()
        };
        let raws: Vec<Vec<u8>> = (0..4).map(|nonce| transfer(0, nonce, 1)).collect();
        let hashes: Vec<B256> = raws.iter().map(|raw| add(raw)).collect();
        let after_block = Accounts(FUNDED.0, 2);
        assert_eq!(pool.content(&after_block).pending.values().flatten().count(), 2);
        assert!(pool.content(&after_block).queued.is_empty(), "nonces 0 and 1 are neither");
        let chain = Arc::new(TestChain::new());
        let (tx, rx) = tokio::sync::broadcast::channel::<u64>(4);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        struct Shared(Arc<TestChain>);
        impl crate::PoolChain for Shared {
            type Error = std::convert::Infallible;
            fn chain_spec(&self) -> &gigagas_primitives::ChainSpec {
                self.0.chain_spec()
            }
            fn latest(&self) -> Result<Arc<dyn StateSource>, Self::Error> {
                self.0.latest()
            }
            fn head(&self) -> Result<(u64, B256), Self::Error> {
                self.0.head()
            }
            fn canonical_hash(&self, number: u64) -> Result<Option<B256>, Self::Error> {
                self.0.canonical_hash(number)
            }
            fn canonical_block(
                &self,
                number: u64,
            ) -> Result<Option<crate::ChainBlock>, Self::Error> {
                self.0.canonical_block(number)
            }
        }
        let maintained =
            runtime.spawn(maintain_transaction_pool(pool.clone(), rx, Shared(chain.clone())));
        let wait = |check: &dyn Fn() -> bool, what: &str| {
            runtime.block_on(async {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while !check() {
                    assert!(std::time::Instant::now() < deadline, "{what}: {} left", pool.len());
                    tokio::task::yield_now().await;
                }
            })
        };
        // Block 1 holds nonces 0 and 1.
        chain.push(1, B256::ZERO, raws[..2].to_vec());
        chain.nonce.store(2, std::sync::atomic::Ordering::SeqCst);
        tx.send(1).unwrap();
        wait(&|| pool.len() == 2, "not pruned");
        assert!(!pool.contains(&hashes[1]) && pool.contains(&hashes[2]));
        // A reorg to a sibling block 1 that holds nonce 0 only: nonce 1 comes back.
        chain.push(1, B256::repeat_byte(1), raws[..1].to_vec());
        chain.nonce.store(1, std::sync::atomic::Ordering::SeqCst);
        tx.send(1).unwrap();
        wait(&|| pool.contains(&hashes[1]), "nonce 1 not put back");
        assert!(!pool.contains(&hashes[0]), "held by the new branch: not put back");
        assert_eq!(pool.len(), 3);
        drop(tx);
        runtime.block_on(maintained).unwrap();
    }

    #[test]
    fn a_full_pool_evicts_the_cheapest_last_nonce_for_a_better_paying_newcomer() {
        let pool = TxPool::with_limits(PoolLimits { transactions: 3, blob_transactions: 1 });
        let add = |raw: &[u8]| {
            pool.add_raw(raw, 1, 30_000_000, BlobForm::Eip4844, SpecId::PRAGUE, &FUNDED)
        };
        // Sender 0 pays 1 gwei on nonces 0 and 1, sender 1 pays 5.
        let cheap0 = add(&transfer(0, 0, 1)).unwrap();
        let cheap1 = add(&transfer(0, 1, 1)).unwrap();
        let dear = add(&transfer(1, 0, 5)).unwrap();
        assert_eq!(pool.len(), 3);
        // Paying no more than the cheapest: refused, nothing evicted.
        assert!(matches!(add(&transfer(2, 0, 1)), Err(PoolError::Underpriced)));
        assert_eq!(pool.len(), 3);
        // Paying more: sender 0's last nonce goes (its nonce 0 stays: no gap is opened).
        let newcomer = add(&transfer(2, 0, 2)).unwrap();
        assert_eq!(pool.len(), 3);
        assert!(pool.get(&cheap1).is_none());
        for kept in [cheap0, dear, newcomer] {
            assert!(pool.get(&kept).is_some());
        }
        // A replacement takes no new place: no eviction, no refusal.
        let replacement = add(&transfer(1, 0, 6)).unwrap();
        assert!(pool.get(&dear).is_none() && pool.get(&replacement).is_some());
        assert_eq!(pool.len(), 3);
        // A sender's own transactions are no candidates for its newcomer: sender 0's nonce 0
        // pays 1 gwei, but the cheapest other sender's last nonce pays 2.
        assert!(matches!(add(&transfer(0, 1, 1)), Err(PoolError::Underpriced)));

        // Blob transactions: one blob place; the newcomer must offer a higher blob fee cap.
        let sidecar = one_blob_sidecar();
        let pool = TxPool::with_limits(PoolLimits { transactions: 10, blob_transactions: 1 });
        let add = |raw: &[u8]| {
            pool.add_raw(raw, 1, 30_000_000, BlobForm::Eip4844, SpecId::PRAGUE, &FUNDED)
        };
        let first = add(&blob_tx(0, 0, 3, &sidecar)).unwrap();
        let plain = add(&transfer(3, 0, 1)).unwrap();
        assert!(matches!(add(&blob_tx(1, 0, 3, &sidecar)), Err(PoolError::Underpriced)));
        let second = add(&blob_tx(1, 0, 4, &sidecar)).unwrap();
        assert!(pool.get(&first).is_none() && pool.sidecar(&first).is_none());
        assert!(pool.sidecar(&second).is_some() && pool.get(&plain).is_some());
        let hash = sidecar.versioned_hashes().next().unwrap();
        assert_eq!(pool.blob(&hash).map(|(_, i)| i), Some(0));
    }
}
