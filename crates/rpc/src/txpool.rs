//! The transaction pool's methods: `eth_sendRawTransaction` (answered through
//! [`crate::EthApi`]) and geth's `txpool_status` / `txpool_content` / `txpool_contentFrom`
//! ([`TxPoolApi`], served by [`TxPoolRpc`]) over the node's pool (`gigagas-txpool`).

use crate::{RpcContext, RpcError};
use alloy_consensus::Transaction as _;
use alloy_primitives::{Address, Bytes, B256, U256, U64};
use alloy_rpc_types_eth::Transaction as RpcTransaction;
use gigagas_storage_api::HeaderProvider;
use gigagas_txpool::{PoolContent, PooledTx};
use jsonrpsee::{core::RpcResult, proc_macros::rpc, types::ErrorObjectOwned};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::{collections::BTreeMap, sync::Arc};

/// geth's `txpool_` namespace. Pending transactions can run in a row after the head; queued
/// ones wait for a nonce gap to close.
#[rpc(server, client, namespace = "txpool")]
pub trait TxPoolApi {
    /// How many transactions are pending and queued.
    #[method(name = "status")]
    fn status(&self) -> RpcResult<TxPoolStatus>;

    /// Every pooled transaction, as geth answers it: `{pending|queued: {sender: {nonce: tx}}}`
    /// with checksummed senders and decimal nonces.
    #[method(name = "content")]
    fn content(&self) -> RpcResult<Value>;

    /// The pooled transactions of `address`: `{pending|queued: {nonce: tx}}`.
    #[method(name = "contentFrom")]
    fn content_from(&self, address: Address) -> RpcResult<Value>;
}

/// The `txpool_status` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxPoolStatus {
    /// Transactions that can run in a row after the head.
    pub pending: U64,
    /// Transactions behind a nonce gap.
    pub queued: U64,
}

/// Serves [`TxPoolApi`] over the node's context.
#[derive(Debug, Clone)]
pub struct TxPoolRpc {
    ctx: Arc<RpcContext>,
}

impl TxPoolRpc {
    /// The `txpool_` namespace over `ctx`.
    pub fn new(ctx: Arc<RpcContext>) -> Self {
        Self { ctx }
    }

    fn content(&self) -> PoolContent {
        self.ctx.pool.content(&*self.ctx.provider)
    }
}

impl TxPoolApiServer for TxPoolRpc {
    fn status(&self) -> RpcResult<TxPoolStatus> {
        let c = TxPoolRpc::content(self);
        let count = |p: &BTreeMap<Address, Vec<PooledTx>>| p.values().map(Vec::len).sum::<usize>();
        Ok(TxPoolStatus {
            pending: U64::from(count(&c.pending)),
            queued: U64::from(count(&c.queued)),
        })
    }

    fn content(&self) -> RpcResult<Value> {
        let c = TxPoolRpc::content(self);
        Ok(serde_json::json!({"pending": by_sender(&c.pending), "queued": by_sender(&c.queued)}))
    }

    fn content_from(&self, address: Address) -> RpcResult<Value> {
        let c = TxPoolRpc::content(self);
        let of = |part: &BTreeMap<Address, Vec<PooledTx>>| {
            part.get(&address).map_or_else(|| Value::Object(Map::new()), |t| by_nonce(t))
        };
        Ok(serde_json::json!({"pending": of(&c.pending), "queued": of(&c.queued)}))
    }
}

/// A pooled transaction in the RPC shape (no block fields).
pub(crate) fn pending_transaction(tx: &PooledTx) -> RpcTransaction {
    RpcTransaction {
        inner: alloy_consensus::transaction::Recovered::new_unchecked(tx.tx.clone(), tx.sender),
        block_hash: None,
        block_number: None,
        transaction_index: None,
        effective_gas_price: None,
        block_timestamp: None,
    }
}

/// `{nonce: tx}` for one sender's transactions.
fn by_nonce(txs: &[PooledTx]) -> Value {
    Value::Object(
        txs.iter()
            .map(|t| {
                let nonce = alloy_consensus::Transaction::nonce(&t.tx).to_string();
                (nonce, serde_json::to_value(pending_transaction(t)).unwrap_or(Value::Null))
            })
            .collect(),
    )
}

/// `{sender: {nonce: tx}}` as geth answers `txpool_content`.
fn by_sender(part: &BTreeMap<Address, Vec<PooledTx>>) -> Value {
    Value::Object(
        part.iter().map(|(sender, txs)| (sender.to_checksum(None), by_nonce(txs))).collect(),
    )
}

/// `eth_sendRawTransaction`: `raw` checked against the next block's rules and the head's
/// state and added to the pool; its hash, or -32000 with the pool's reason.
pub(crate) fn send_raw_transaction(ctx: &RpcContext, raw: &Bytes) -> RpcResult<B256> {
    let pool_err =
        |e: gigagas_txpool::PoolError| ErrorObjectOwned::owned(-32000, e.to_string(), None::<()>);
    let head = ctx.forkchoice().head.0;
    let header = ctx.provider.header_by_number(head).map_err(RpcError::from)?;
    // The nonce and balance checked: the head's state (the store's flat state under the
    // in-memory blocks' diffs).
    let state = match &header {
        Some(h) => ctx.provider.state_at(head, h.state_root),
        None => ctx.provider.latest(),
    }
    .map_err(RpcError::from)?;
    if ctx.tx_fee_cap.is_zero() {
        return ctx.pool.add_raw_after(raw, &ctx.chain, header.as_ref(), &*state).map_err(pool_err);
    }
    // geth's checkTxFee, before the pool: the most the transaction may pay, its fee cap times
    // its gas. The decoded transaction then goes to the pool as it is.
    let pooled = gigagas_txpool::decode_pooled(raw).map_err(pool_err)?;
    let fee = U256::from(pooled.0.max_fee_per_gas()) * U256::from(pooled.0.gas_limit());
    if fee > ctx.tx_fee_cap {
        return Err(ErrorObjectOwned::owned(
            -32000,
            format!(
                "tx fee ({} ether) exceeds the configured cap ({} ether)",
                ether(fee),
                ether(ctx.tx_fee_cap)
            ),
            None::<()>,
        ));
    }
    ctx.pool
        .add_pooled_after(raw.len(), pooled, &ctx.chain, header.as_ref(), &*state)
        .map_err(pool_err)
}

/// `wei` in ether with two decimals, as geth prints a fee (`%.2f`).
fn ether(wei: U256) -> String {
    let cents = wei / U256::from(10_000_000_000_000_000u64);
    let (whole, frac) = (cents / U256::from(100), cents % U256::from(100));
    format!("{whole}.{frac:0>2}")
}
