//! `eth_sendRawTransaction` and geth's `txpool_status` / `txpool_content` /
//! `txpool_contentFrom` over the node's transaction pool (crates/stages `pool`).

use crate::{RpcContext, RpcError};
use alloy_primitives::{Address, Bytes, U64};
use alloy_rpc_types_eth::Transaction as RpcTransaction;
use gigagas_txpool::{BlobForm, PoolContent, PooledTx};
use jsonrpsee::{types::ErrorObjectOwned, RpcModule};
use serde_json::{json, Value};
use std::{collections::BTreeMap, sync::Arc};

type Ctx = Arc<RpcContext>;
type Answer = Result<Value, ErrorObjectOwned>;

/// A pooled transaction in the RPC shape (no block fields).
pub(crate) fn pending_json(tx: &PooledTx) -> Value {
    let rpc = RpcTransaction {
        inner: alloy_consensus::transaction::Recovered::new_unchecked(tx.tx.clone(), tx.sender),
        block_hash: None,
        block_number: None,
        transaction_index: None,
        effective_gas_price: None,
        block_timestamp: None,
    };
    serde_json::to_value(rpc).unwrap_or(Value::Null)
}

/// `{nonce: tx}` for one sender's transactions.
fn by_nonce(txs: &[PooledTx]) -> Value {
    Value::Object(
        txs.iter()
            .map(|t| (alloy_consensus::Transaction::nonce(&t.tx).to_string(), pending_json(t)))
            .collect(),
    )
}

/// `{sender: {nonce: tx}}` as geth answers `txpool_content`.
fn by_sender(part: &BTreeMap<Address, Vec<PooledTx>>) -> Value {
    Value::Object(
        part.iter().map(|(sender, txs)| (sender.to_checksum(None), by_nonce(txs))).collect(),
    )
}

fn content(ctx: &RpcContext) -> PoolContent {
    ctx.pool.content(&*ctx.provider)
}

/// Registers the methods.
pub(crate) fn module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    m.register_method("eth_sendRawTransaction", |params, ctx, _| -> Answer {
        let (raw,): (Bytes,) =
            params.parse().map_err(|e| RpcError::InvalidParams(e.to_string()))?;
        let head = ctx.forkchoice().head.0;
        let header = ctx.provider.header_by_number(head).map_err(RpcError::from)?;
        let gas_limit = header.as_ref().map_or(u64::MAX, |h| h.gas_limit);
        // The sidecar form of the head's fork (the next block's, but for a block at the fork).
        let osaka = ctx.chain.is_osaka(header.as_ref().map_or(0, |h| h.timestamp));
        let form = if osaka { BlobForm::Eip7594 } else { BlobForm::Eip4844 };
        // The next block's rules (as geth's pool: the head's fork, but for a block at the fork).
        let spec = header.as_ref().map_or(revm::primitives::hardfork::SpecId::OSAKA, |h| {
            ctx.chain.spec_id(h.number + 1, h.timestamp)
        });
        let hash = ctx
            .pool
            .add_raw(&raw, ctx.chain.chain_id, gas_limit, form, spec, &*ctx.provider)
            .map_err(|e| ErrorObjectOwned::owned(-32000, e.to_string(), None::<()>))?;
        Ok(json!(hash))
    })
    .expect("registered once");
    m.register_method("txpool_status", |_, ctx, _| -> Answer {
        let c = content(ctx);
        let count = |p: &BTreeMap<Address, Vec<PooledTx>>| p.values().map(Vec::len).sum::<usize>();
        Ok(json!({"pending": U64::from(count(&c.pending)), "queued": U64::from(count(&c.queued))}))
    })
    .expect("registered once");
    m.register_method("txpool_content", |_, ctx, _| -> Answer {
        let c = content(ctx);
        Ok(json!({"pending": by_sender(&c.pending), "queued": by_sender(&c.queued)}))
    })
    .expect("registered once");
    m.register_method("txpool_contentFrom", |params, ctx, _| -> Answer {
        let (address,): (Address,) =
            params.parse().map_err(|e| RpcError::InvalidParams(e.to_string()))?;
        let c = content(ctx);
        let of = |part: &BTreeMap<Address, Vec<PooledTx>>| {
            part.get(&address).map_or(json!({}), |t| by_nonce(t))
        };
        Ok(json!({"pending": of(&c.pending), "queued": of(&c.queued)}))
    })
    .expect("registered once");
    m
}
