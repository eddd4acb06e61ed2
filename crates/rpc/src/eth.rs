//! `eth_`, `net_` and `debug_getRaw*` methods over the stored chain.

use crate::{convert::StoredBlock, short, state::StateAt, RpcContext, RpcError};
use alloy_eips::{BlockId, BlockNumberOrTag, Encodable2718};
use alloy_primitives::{Address, Bytes, B256, U256, U64};
use jsonrpsee::{
    types::{ErrorObjectOwned, Params},
    RpcModule,
};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

type Ctx = Arc<RpcContext>;
type Answer = Result<Value, ErrorObjectOwned>;

fn json(value: impl Serialize) -> Answer {
    serde_json::to_value(value).map_err(|e| RpcError::Store(e.to_string()).into())
}

fn invalid(e: impl std::fmt::Display) -> ErrorObjectOwned {
    RpcError::InvalidParams(e.to_string()).into()
}

/// The block number `id` names, `None` when no such block is stored.
pub(crate) fn resolve(ctx: &RpcContext, id: BlockId) -> Result<Option<u64>, RpcError> {
    let forkchoice = *ctx.forkchoice.read().unwrap_or_else(|p| p.into_inner());
    match id {
        BlockId::Hash(h) => Ok(ctx.storage.block_number(&h.block_hash)?),
        BlockId::Number(tag) => Ok(match tag {
            BlockNumberOrTag::Latest | BlockNumberOrTag::Pending => Some(forkchoice.head.0),
            BlockNumberOrTag::Earliest => Some(0),
            BlockNumberOrTag::Safe => forkchoice.safe.map(|(n, _)| n),
            BlockNumberOrTag::Finalized => forkchoice.finalized.map(|(n, _)| n),
            BlockNumberOrTag::Number(n) => (n <= forkchoice.head.0).then_some(n),
        }),
    }
}

fn block_of(ctx: &RpcContext, id: BlockId) -> Result<Option<StoredBlock>, RpcError> {
    match resolve(ctx, id)? {
        Some(n) => StoredBlock::load(ctx, n),
        None => Ok(None),
    }
}

/// The state after block `id` (latest when absent); -32000 when the block is unknown.
fn state_of(ctx: &RpcContext, id: Option<BlockId>) -> Result<B256, RpcError> {
    let id = id.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let block = block_of(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
    Ok(block.header.state_root)
}

fn block_name(id: BlockId) -> String {
    match id {
        BlockId::Hash(h) => format!("block {}", short(&h.block_hash)),
        BlockId::Number(n) => format!("block {n}"),
    }
}

/// `(address, block?)` as the state methods take them.
fn address_and_block(params: &Params<'_>) -> Result<(Address, Option<BlockId>), ErrorObjectOwned> {
    let mut seq = params.sequence();
    let address: Address = seq.next().map_err(invalid)?;
    let block: Option<BlockId> = seq.optional_next().map_err(invalid)?;
    Ok((address, block))
}

fn located_transaction(ctx: &RpcContext, hash: &B256) -> Result<Option<(StoredBlock, usize)>, RpcError> {
    let Some((number, index)) = ctx.storage.transaction_location(hash)? else { return Ok(None) };
    Ok(StoredBlock::load(ctx, number)?.map(|b| (b, index as usize)))
}

/// Registers the methods.
pub(crate) fn module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    let reg = |m: &mut RpcModule<Ctx>, name: &'static str, f: fn(&Params<'_>, &RpcContext) -> Answer| {
        m.register_method(name, move |params, ctx, _| f(&params, ctx))
            .expect("each method registered once");
    };
    reg(&mut m, "eth_chainId", |_, ctx| json(U64::from(ctx.chain.chain_id)));
    reg(&mut m, "net_version", |_, ctx| json(ctx.chain.chain_id.to_string()));
    reg(&mut m, "eth_syncing", |_, _| json(false));
    reg(&mut m, "eth_blockNumber", |_, ctx| {
        json(U64::from(ctx.forkchoice.read().unwrap_or_else(|p| p.into_inner()).head.0))
    });
    reg(&mut m, "eth_getBalance", |params, ctx| {
        let (address, block) = address_and_block(params)?;
        let root = state_of(ctx, block)?;
        let state = StateAt { storage: &ctx.storage, root };
        json(state.account(&address)?.map_or(U256::ZERO, |a| a.balance))
    });
    reg(&mut m, "eth_getTransactionCount", |params, ctx| {
        let (address, block) = address_and_block(params)?;
        let root = state_of(ctx, block)?;
        let state = StateAt { storage: &ctx.storage, root };
        json(U64::from(state.account(&address)?.map_or(0, |a| a.nonce)))
    });
    reg(&mut m, "eth_getCode", |params, ctx| {
        let (address, block) = address_and_block(params)?;
        let root = state_of(ctx, block)?;
        json(StateAt { storage: &ctx.storage, root }.code(&address)?)
    });
    reg(&mut m, "eth_getStorageAt", |params, ctx| {
        let mut seq = params.sequence();
        let address: Address = seq.next().map_err(invalid)?;
        let slot: U256 = seq.next().map_err(invalid)?;
        let block: Option<BlockId> = seq.optional_next().map_err(invalid)?;
        let root = state_of(ctx, block)?;
        let value = StateAt { storage: &ctx.storage, root }.storage_at(&address, &slot.into())?;
        json(B256::from(value))
    });
    reg(&mut m, "eth_getBlockByNumber", |params, ctx| {
        let (tag, full): (BlockNumberOrTag, bool) = params.parse().map_err(invalid)?;
        match block_of(ctx, BlockId::Number(tag))? {
            Some(b) => json(b.rpc_block(full)?),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getBlockByHash", |params, ctx| {
        let (hash, full): (B256, bool) = params.parse().map_err(invalid)?;
        match block_of(ctx, BlockId::from(hash))? {
            Some(b) => json(b.rpc_block(full)?),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getBlockTransactionCountByNumber", |params, ctx| {
        let (tag,): (BlockNumberOrTag,) = params.parse().map_err(invalid)?;
        match block_of(ctx, BlockId::Number(tag))? {
            Some(b) => json(U64::from(b.body.transactions.len())),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getBlockTransactionCountByHash", |params, ctx| {
        let (hash,): (B256,) = params.parse().map_err(invalid)?;
        match block_of(ctx, BlockId::from(hash))? {
            Some(b) => json(U64::from(b.body.transactions.len())),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getTransactionByHash", |params, ctx| {
        let (hash,): (B256,) = params.parse().map_err(invalid)?;
        match located_transaction(ctx, &hash)? {
            Some((b, i)) => json(b.transaction(i)?),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getTransactionByBlockHashAndIndex", |params, ctx| {
        let (hash, index): (B256, U64) = params.parse().map_err(invalid)?;
        transaction_at(ctx, BlockId::from(hash), index)
    });
    reg(&mut m, "eth_getTransactionByBlockNumberAndIndex", |params, ctx| {
        let (tag, index): (BlockNumberOrTag, U64) = params.parse().map_err(invalid)?;
        transaction_at(ctx, BlockId::Number(tag), index)
    });
    reg(&mut m, "eth_getTransactionReceipt", |params, ctx| {
        let (hash,): (B256,) = params.parse().map_err(invalid)?;
        match located_transaction(ctx, &hash)? {
            Some((b, i)) => json(b.rpc_receipts(ctx)?.swap_remove(i)),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getBlockReceipts", |params, ctx| {
        let (id,): (BlockId,) = params.parse().map_err(invalid)?;
        match block_of(ctx, id)? {
            Some(b) => json(b.rpc_receipts(ctx)?),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "debug_getRawHeader", |params, ctx| {
        let (id,): (BlockId,) = params.parse().map_err(invalid)?;
        let b = block_of(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
        json(b.raw_header())
    });
    reg(&mut m, "debug_getRawBlock", |params, ctx| {
        let (id,): (BlockId,) = params.parse().map_err(invalid)?;
        let b = block_of(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
        json(Bytes::from(b.rlp()))
    });
    reg(&mut m, "debug_getRawReceipts", |params, ctx| {
        let (id,): (BlockId,) = params.parse().map_err(invalid)?;
        let b = block_of(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
        json(b.raw_receipts(ctx)?)
    });
    reg(&mut m, "debug_getRawTransaction", |params, ctx| {
        let (hash,): (B256,) = params.parse().map_err(invalid)?;
        match located_transaction(ctx, &hash)? {
            Some((b, i)) => json(Bytes::from(b.body.transactions[i].encoded_2718())),
            None => Ok(Value::Null),
        }
    });
    m
}

fn transaction_at(ctx: &RpcContext, id: BlockId, index: U64) -> Answer {
    let Some(b) = block_of(ctx, id)? else { return Ok(Value::Null) };
    let i = index.to::<u64>() as usize;
    if i >= b.body.transactions.len() {
        return Ok(Value::Null);
    }
    json(b.transaction(i)?)
}
