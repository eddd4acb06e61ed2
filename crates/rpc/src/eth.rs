//! `eth_`, `net_` and `debug_getRaw*` methods over the stored chain.

use crate::{call, convert::StoredBlock, state::StateAt, RpcContext, RpcError};
use alloy_eips::{BlockId, BlockNumberOrTag, Encodable2718};
use alloy_primitives::{Address, Bytes, B256, U256, U64};
use alloy_rpc_types_eth::{FeeHistory, Filter, FilterBlockOption, TransactionRequest};
use jsonrpsee::{
    types::{ErrorObjectOwned, Params},
    RpcModule,
};
use revm::context::result::ExecutionResult;
use serde::Serialize;
use serde_json::Value;
use std::{collections::BTreeMap, sync::Arc};

type Ctx = Arc<RpcContext>;
type Answer = Result<Value, ErrorObjectOwned>;

fn json(value: impl Serialize) -> Answer {
    serde_json::to_value(value).map_err(|e| RpcError::Store(e.to_string()).into())
}

fn invalid(e: impl std::fmt::Display) -> ErrorObjectOwned {
    RpcError::InvalidParams(e.to_string()).into()
}

/// jsonrpsee's parameter error (-32602), its reason moved into the message.
fn bad_params(e: ErrorObjectOwned) -> ErrorObjectOwned {
    let reason =
        e.data().map_or_else(|| e.message().to_string(), |d| d.get().trim_matches('"').to_string());
    invalid(reason)
}

/// The block number `id` names, `None` when no such block is stored.
pub(crate) fn resolve(ctx: &RpcContext, id: BlockId) -> Result<Option<u64>, RpcError> {
    let forkchoice = ctx.forkchoice();
    match id {
        BlockId::Hash(h) => Ok(ctx.provider.block_number(&h.block_hash)?),
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
        BlockId::Hash(h) => format!("block {}", h.block_hash),
        BlockId::Number(n) => format!("block {n}"),
    }
}

/// `(transaction request, block?)` as the call methods take them, the block (latest when
/// absent) loaded; -32000 when it is unknown.
fn request_and_block(
    params: &Params<'_>,
    ctx: &RpcContext,
) -> Result<(TransactionRequest, StoredBlock), ErrorObjectOwned> {
    let mut seq = params.sequence();
    let request: TransactionRequest = seq.next().map_err(bad_params)?;
    let id: Option<BlockId> = seq.optional_next().map_err(bad_params)?;
    let id = id.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let b = block_of(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
    Ok((request, b))
}

/// The canonical head block.
fn head_block(ctx: &RpcContext) -> Result<StoredBlock, RpcError> {
    let head = ctx.forkchoice().head.0;
    StoredBlock::load(ctx, head)?.ok_or_else(|| RpcError::NotFound(format!("block {head}")))
}

/// `(address, block?)` as the state methods take them.
fn address_and_block(params: &Params<'_>) -> Result<(Address, Option<BlockId>), ErrorObjectOwned> {
    let mut seq = params.sequence();
    let address: Address = seq.next().map_err(bad_params)?;
    let block: Option<BlockId> = seq.optional_next().map_err(bad_params)?;
    Ok((address, block))
}

/// A 32-byte hash as the API writes it: `0x` and 64 hex digits (alloy's `B256` would also take
/// it without the prefix, which geth and the spec refuse).
#[derive(Debug, Clone, Copy)]
struct Hash0x(B256);

impl<'de> serde::Deserialize<'de> for Hash0x {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let hex = s
            .strip_prefix("0x")
            .ok_or_else(|| serde::de::Error::custom("hex string without 0x prefix"))?;
        if hex.len() != 64 {
            return Err(serde::de::Error::custom(format!(
                "hash of {} hex digits, want 64",
                hex.len()
            )));
        }
        s.parse().map(Hash0x).map_err(serde::de::Error::custom)
    }
}

/// A storage slot as the API writes it: `0x` and at most 64 hex digits; `short` when it was
/// written with fewer than 64 (`eth_getProof` echoes keys as given).
#[derive(Debug, Clone, Copy)]
struct Slot(B256, bool);

impl<'de> serde::Deserialize<'de> for Slot {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let hex = s
            .strip_prefix("0x")
            .ok_or_else(|| serde::de::Error::custom("hex string without 0x prefix"))?;
        if hex.len() > 64 {
            return Err(serde::de::Error::custom(format!(
                "storage key too long (want at most 32 bytes): {s:?}"
            )));
        }
        U256::from_str_radix(hex, 16)
            .map(|v| Slot(B256::from(v), hex.len() < 64))
            .map_err(serde::de::Error::custom)
    }
}

fn located_transaction(
    ctx: &RpcContext,
    hash: &B256,
) -> Result<Option<(StoredBlock, usize)>, RpcError> {
    let Some((number, index)) = ctx.provider.transaction_location(hash)? else { return Ok(None) };
    Ok(StoredBlock::load(ctx, number)?.map(|b| (b, index as usize)))
}

/// Registers the methods.
pub(crate) fn module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    let reg =
        |m: &mut RpcModule<Ctx>, name: &'static str, f: fn(&Params<'_>, &RpcContext) -> Answer| {
            m.register_method(name, move |params, ctx, _| f(&params, ctx))
                .expect("each method registered once");
        };
    reg(&mut m, "eth_chainId", |_, ctx| json(U64::from(ctx.chain.chain_id)));
    reg(&mut m, "net_version", |_, ctx| json(ctx.chain.chain_id.to_string()));
    // The network's connected peers (0 and not listening when the node runs without one).
    reg(&mut m, "net_peerCount", |_, ctx| {
        json(U64::from(ctx.network.as_ref().map_or(0, |n| n.peer_count())))
    });
    reg(&mut m, "net_listening", |_, ctx| json(ctx.network.is_some()));
    reg(&mut m, "eth_syncing", |_, _| json(false));
    reg(&mut m, "eth_config", |_, ctx| Ok(crate::config::eth_config(ctx)?));
    // What this node can answer (execution-apis `eth_capabilities`): an archive — every
    // block, transaction, receipt, log and state since genesis, nothing pruned.
    reg(&mut m, "eth_capabilities", |_, ctx| {
        let (number, hash) = ctx.forkchoice().head;
        let all = serde_json::json!({"disabled": false, "oldestBlock": "0x0"});
        json(serde_json::json!({
            "head": {"number": U64::from(number), "hash": hash},
            "state": all, "tx": all, "logs": all, "receipts": all, "blocks": all,
            "stateproofs": all,
        }))
    });
    reg(&mut m, "eth_blockNumber", |_, ctx| json(U64::from(ctx.forkchoice().head.0)));
    reg(&mut m, "eth_getBalance", |params, ctx| {
        let (address, block) = address_and_block(params)?;
        let root = state_of(ctx, block)?;
        let state = StateAt::new(ctx, root);
        json(state.account(&address)?.map_or(U256::ZERO, |a| a.balance))
    });
    reg(&mut m, "eth_getTransactionCount", |params, ctx| {
        let (address, block) = address_and_block(params)?;
        let root = state_of(ctx, block)?;
        let state = StateAt::new(ctx, root);
        let nonce = state.account(&address)?.map_or(0, |a| a.nonce);
        // "pending": after the sender's transactions the pool can run in a row (geth's).
        let pending = matches!(block, Some(BlockId::Number(BlockNumberOrTag::Pending)));
        json(U64::from(if pending { ctx.pool.pending_nonce(&address, nonce) } else { nonce }))
    });
    reg(&mut m, "eth_getCode", |params, ctx| {
        let (address, block) = address_and_block(params)?;
        let root = state_of(ctx, block)?;
        json(StateAt::new(ctx, root).code(&address)?)
    });
    reg(&mut m, "eth_getStorageAt", |params, ctx| {
        let mut seq = params.sequence();
        let address: Address = seq.next().map_err(bad_params)?;
        let Slot(slot, _) = seq.next().map_err(bad_params)?;
        let block: Option<BlockId> = seq.optional_next().map_err(bad_params)?;
        let root = state_of(ctx, block)?;
        let value = StateAt::new(ctx, root).storage_at(&address, &slot)?;
        json(B256::from(value))
    });
    reg(&mut m, "eth_getStorageValues", |params, ctx| {
        let mut seq = params.sequence();
        let request: BTreeMap<Address, Vec<Slot>> = seq.next().map_err(bad_params)?;
        let block: Option<BlockId> = seq.optional_next().map_err(bad_params)?;
        if request.is_empty() {
            return Err(invalid("empty request"));
        }
        let root = state_of(ctx, block)?;
        let state = StateAt::new(ctx, root);
        let mut out = BTreeMap::new();
        for (address, slots) in request {
            let values = slots
                .iter()
                .map(|Slot(s, _)| state.storage_at(&address, s).map(B256::from))
                .collect::<Result<Vec<_>, _>>()?;
            out.insert(address, values);
        }
        json(out)
    });
    reg(&mut m, "eth_getProof", |params, ctx| {
        let mut seq = params.sequence();
        let address: Address = seq.next().map_err(bad_params)?;
        let slots: Vec<Slot> = seq.next().map_err(bad_params)?;
        let block: Option<BlockId> = seq.optional_next().map_err(bad_params)?;
        let root = state_of(ctx, block)?;
        let slots: Vec<(B256, bool)> = slots.into_iter().map(|Slot(s, short)| (s, short)).collect();
        json(StateAt::new(ctx, root).proof(&address, &slots)?)
    });
    reg(&mut m, "eth_getLogs", |params, ctx| {
        let (filter,): (Filter,) = params.parse().map_err(bad_params)?;
        let head = ctx.forkchoice().head.0;
        let (from, to) = match filter.block_option {
            FilterBlockOption::AtBlockHash(hash) => {
                let n = ctx
                    .provider
                    .block_number(&hash)
                    .map_err(RpcError::from)?
                    .ok_or_else(|| RpcError::NotFound(format!("block {hash}")))?;
                (n, n)
            }
            FilterBlockOption::Range { from_block, to_block } => {
                let number = |tag: Option<BlockNumberOrTag>| -> Result<u64, RpcError> {
                    match tag.unwrap_or(BlockNumberOrTag::Latest) {
                        BlockNumberOrTag::Number(n) => Ok(n),
                        tag => resolve(ctx, BlockId::Number(tag))?
                            .ok_or_else(|| RpcError::NotFound(format!("block {tag}"))),
                    }
                };
                let (from, to) = (number(from_block)?, number(to_block)?);
                if from > to {
                    return Err(invalid("invalid block range params"));
                }
                if to > head {
                    return Err(invalid("block range extends beyond current head block"));
                }
                (from, to)
            }
        };
        let mut logs = Vec::new();
        for n in from..=to {
            let Some(b) = StoredBlock::load(ctx, n)? else { continue };
            if !filter.matches_bloom(b.header.logs_bloom) {
                continue;
            }
            logs.extend(b.rpc_logs(ctx)?.into_iter().filter(|log| {
                filter.matches_address(log.address()) && filter.matches_topics(log.topics())
            }));
        }
        json(logs)
    });
    reg(&mut m, "eth_call", |params, ctx| {
        let (request, b) = request_and_block(params, ctx)?;
        match call::call(ctx, &b, &request, None)? {
            ExecutionResult::Success { output, .. } => json(output.into_data()),
            ExecutionResult::Revert { output, .. } => Err(call::reverted(&output)),
            ExecutionResult::Halt { reason, .. } => {
                Err(RpcError::Store(format!("execution halted: {reason:?}")).into())
            }
        }
    });
    // Up to 256 blocks and 50 M gas: on the blocking pool, not an async worker.
    m.register_blocking_method("eth_simulateV1", |params, ctx, _| {
        let mut seq = params.sequence();
        let payload: alloy_rpc_types_eth::simulate::SimulatePayload =
            seq.next().map_err(bad_params)?;
        let id: Option<BlockId> = seq.optional_next().map_err(bad_params)?;
        let id = id.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
        let base = block_of(&ctx, id)?.ok_or_else(|| RpcError::NotFound("header".into()))?;
        crate::simulate::simulate(&ctx, payload, &base)
    })
    .expect("registered once");
    reg(&mut m, "eth_estimateGas", |params, ctx| {
        let (request, b) = request_and_block(params, ctx)?;
        json(U64::from(call::estimate(ctx, &b, &request)?))
    });
    reg(&mut m, "eth_createAccessList", |params, ctx| {
        let (request, b) = request_and_block(params, ctx)?;
        json(call::access_list(ctx, &b, &request)?)
    });
    reg(&mut m, "eth_feeHistory", |params, ctx| {
        let mut seq = params.sequence();
        let count: U64 = seq.next().map_err(bad_params)?;
        let newest: BlockNumberOrTag = seq.next().map_err(bad_params)?;
        let percentiles: Option<Vec<f64>> = seq.optional_next().map_err(bad_params)?;
        json(fee_history(ctx, count.to::<u64>(), newest, percentiles.as_deref())?)
    });
    reg(&mut m, "eth_baseFee", |_, ctx| {
        let b = head_block(ctx)?;
        let params = alloy_eips::eip1559::BaseFeeParams::ethereum();
        json(b.header.next_block_base_fee(params).map(U64::from))
    });
    reg(&mut m, "eth_blobBaseFee", |_, ctx| {
        let b = head_block(ctx)?;
        let fee =
            ctx.chain.blob_params(b.header.timestamp).and_then(|p| b.header.next_block_blob_fee(p));
        json(fee.map(U256::from))
    });
    reg(&mut m, "eth_getBlockByNumber", |params, ctx| {
        let (tag, full): (BlockNumberOrTag, bool) = params.parse().map_err(bad_params)?;
        match block_of(ctx, BlockId::Number(tag))? {
            Some(b) => json(b.rpc_block(full)?),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getBlockByHash", |params, ctx| {
        let (Hash0x(hash), full): (Hash0x, bool) = params.parse().map_err(bad_params)?;
        match block_of(ctx, BlockId::from(hash))? {
            Some(b) => json(b.rpc_block(full)?),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getBlockTransactionCountByNumber", |params, ctx| {
        let (tag,): (BlockNumberOrTag,) = params.parse().map_err(bad_params)?;
        match block_of(ctx, BlockId::Number(tag))? {
            Some(b) => json(U64::from(b.body.transactions.len())),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getBlockTransactionCountByHash", |params, ctx| {
        let (Hash0x(hash),): (Hash0x,) = params.parse().map_err(bad_params)?;
        match block_of(ctx, BlockId::from(hash))? {
            Some(b) => json(U64::from(b.body.transactions.len())),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getTransactionByHash", |params, ctx| {
        let (Hash0x(hash),): (Hash0x,) = params.parse().map_err(bad_params)?;
        match located_transaction(ctx, &hash)? {
            Some((b, i)) => json(b.transaction(i)?),
            None => {
                Ok(ctx.pool.get(&hash).map_or(Value::Null, |tx| crate::txpool::pending_json(&tx)))
            }
        }
    });
    reg(&mut m, "eth_getTransactionByBlockHashAndIndex", |params, ctx| {
        let (Hash0x(hash), index): (Hash0x, U64) = params.parse().map_err(bad_params)?;
        transaction_at(ctx, BlockId::from(hash), index)
    });
    reg(&mut m, "eth_getTransactionByBlockNumberAndIndex", |params, ctx| {
        let (tag, index): (BlockNumberOrTag, U64) = params.parse().map_err(bad_params)?;
        transaction_at(ctx, BlockId::Number(tag), index)
    });
    reg(&mut m, "eth_getTransactionReceipt", |params, ctx| {
        let (Hash0x(hash),): (Hash0x,) = params.parse().map_err(bad_params)?;
        match located_transaction(ctx, &hash)? {
            Some((b, i)) => json(b.rpc_receipts(ctx)?.swap_remove(i)),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "eth_getBlockReceipts", |params, ctx| {
        let (id,): (BlockId,) = params.parse().map_err(bad_params)?;
        match block_of(ctx, id)? {
            Some(b) => json(b.rpc_receipts(ctx)?),
            None => Ok(Value::Null),
        }
    });
    reg(&mut m, "debug_getRawHeader", |params, ctx| {
        let (id,): (BlockId,) = params.parse().map_err(bad_params)?;
        let b = block_of(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
        json(b.raw_header())
    });
    reg(&mut m, "debug_getRawBlock", |params, ctx| {
        let (id,): (BlockId,) = params.parse().map_err(bad_params)?;
        let b = block_of(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
        json(Bytes::from(b.rlp()))
    });
    reg(&mut m, "debug_getRawReceipts", |params, ctx| {
        let (id,): (BlockId,) = params.parse().map_err(bad_params)?;
        let b = block_of(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
        json(b.raw_receipts(ctx)?)
    });
    reg(&mut m, "debug_getRawTransaction", |params, ctx| {
        let (Hash0x(hash),): (Hash0x,) = params.parse().map_err(bad_params)?;
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

/// `eth_feeHistory`: base fees (with the next block's), gas and blob gas used ratios, and the
/// effective priority fees at `percentiles` of each block's gas (execution-apis; geth's
/// weighting: transactions sorted by tip, each counting its gas used). At most 1,024 blocks.
fn fee_history(
    ctx: &RpcContext,
    count: u64,
    newest: BlockNumberOrTag,
    percentiles: Option<&[f64]>,
) -> Result<FeeHistory, ErrorObjectOwned> {
    if percentiles.is_some_and(|p| {
        p.windows(2).any(|w| w[0] > w[1]) || p.iter().any(|x| !(0.0..=100.0).contains(x))
    }) {
        return Err(invalid("reward percentiles must be ascending and within [0, 100]"));
    }
    let newest = resolve(ctx, BlockId::Number(newest))?
        .ok_or_else(|| RpcError::NotFound(format!("block {newest}")))?;
    let count = count.min(1024).min(newest + 1);
    let oldest = newest + 1 - count;
    let mut history = FeeHistory { oldest_block: oldest, ..Default::default() };
    let mut rewards = Vec::new();
    let mut last = None;
    for n in oldest..=newest {
        let b =
            StoredBlock::load(ctx, n)?.ok_or_else(|| RpcError::NotFound(format!("block {n}")))?;
        let header = &b.header;
        history.base_fee_per_gas.push(header.base_fee_per_gas.unwrap_or_default().into());
        history.gas_used_ratio.push(header.gas_used as f64 / header.gas_limit.max(1) as f64);
        let blob = ctx.chain.blob_params(header.timestamp);
        history
            .base_fee_per_blob_gas
            .push(blob.and_then(|p| header.blob_fee(p)).unwrap_or_default());
        let max_blob_gas = blob.map_or(0, |p| p.max_blob_gas_per_block());
        history.blob_gas_used_ratio.push(if max_blob_gas == 0 {
            0.0
        } else {
            header.blob_gas_used.unwrap_or_default() as f64 / max_blob_gas as f64
        });
        if let Some(percentiles) = percentiles {
            rewards.push(block_rewards(ctx, &b, percentiles)?);
        }
        last = Some(b);
    }
    let last = last.expect("count >= 1");
    let params = alloy_eips::eip1559::BaseFeeParams::ethereum();
    history
        .base_fee_per_gas
        .push(last.header.next_block_base_fee(params).unwrap_or_default().into());
    let next_blob = ctx
        .chain
        .blob_params(last.header.timestamp)
        .and_then(|p| last.header.next_block_blob_fee(p))
        .unwrap_or_default();
    history.base_fee_per_blob_gas.push(next_blob);
    history.reward = percentiles.map(|_| rewards);
    Ok(history)
}

/// The effective priority fee at each percentile of block `b`'s gas.
fn block_rewards(
    ctx: &RpcContext,
    b: &StoredBlock,
    percentiles: &[f64],
) -> Result<Vec<u128>, RpcError> {
    use alloy_consensus::Transaction as _;
    if b.body.transactions.is_empty() {
        return Ok(vec![0; percentiles.len()]);
    }
    let base_fee = b.header.base_fee_per_gas;
    let receipts = b.receipts(ctx)?;
    let mut previous = 0;
    let mut tips: Vec<(u128, u64)> = b
        .body
        .transactions
        .iter()
        .zip(&receipts)
        .map(|(tx, r)| {
            let used = alloy_consensus::TxReceipt::cumulative_gas_used(r) - previous;
            previous += used;
            (tx.effective_tip_per_gas(base_fee.unwrap_or_default()).unwrap_or_default(), used)
        })
        .collect();
    tips.sort_unstable_by_key(|(tip, _)| *tip);
    let total: u64 = tips.iter().map(|(_, g)| g).sum();
    Ok(percentiles
        .iter()
        .map(|p| {
            let threshold = (total as f64 * p / 100.0) as u64;
            let mut cumulative = 0;
            for (tip, used) in &tips {
                cumulative += used;
                if cumulative >= threshold {
                    return *tip;
                }
            }
            tips.last().map_or(0, |(tip, _)| *tip)
        })
        .collect())
}
