//! The parity `trace_` namespace as reth serves it (block explorers and indexers read it):
//! `trace_block`, `trace_transaction`, `trace_get`, `trace_replayBlockTransactions`,
//! `trace_replayTransaction`, `trace_call` and `trace_filter`, built by revm-inspectors'
//! `ParityTraceBuilder` from a `TracingInspector` run over the block's replay (as the `debug_`
//! tracers, [`crate::trace`]) or over the call (as `debug_traceCall`).
//!
//! `trace_block` and `trace_filter` end a block before the merge with its block and ommer
//! reward traces, as reth does (alloy-evm's reward arithmetic); after the merge there are none.

use crate::{
    blocks::{block_name, header_or_latest, resolve},
    call,
    overrides::CallOverrides,
    trace::BlockReplay,
    RpcContext, RpcError,
};
use alloy_consensus::transaction::TransactionInfo;
use alloy_eips::BlockId;
use alloy_evm::Evm as _;
use alloy_primitives::{map::HashSet, B256, U64};
use alloy_rpc_types_eth::{state::StateOverride, BlockOverrides, TransactionRequest};
use alloy_rpc_types_trace::{
    filter::TraceFilter,
    parity::{LocalizedTransactionTrace, TraceResults, TraceResultsWithTransactionHash, TraceType},
};
use gigagas_executor::EvmConfig;
use gigagas_storage_api::TransactionsProvider;
use jsonrpsee::{core::RpcResult, proc_macros::rpc, types::ErrorObjectOwned};
use revm::database::{CacheDB, WrapDatabaseRef};
use revm_inspectors::tracing::{TracingInspector, TracingInspectorConfig};
use std::sync::Arc;

/// Most blocks one `trace_filter` may replay (reth's `--rpc.max-trace-filter-blocks`).
pub const MAX_TRACE_FILTER_BLOCKS: u64 = 100;

/// The parity `trace_` namespace.
#[rpc(server, client, namespace = "trace")]
pub trait TraceApi {
    /// Every call frame of every transaction of `block` (`null` for an unknown block).
    #[method(name = "block", blocking)]
    fn block(&self, block: BlockId) -> RpcResult<Option<Vec<LocalizedTransactionTrace>>>;

    /// Every call frame of transaction `hash` (`null` for an unknown transaction).
    #[method(name = "transaction", blocking)]
    fn transaction(&self, hash: B256) -> RpcResult<Option<Vec<LocalizedTransactionTrace>>>;

    /// The frame of transaction `hash` at the trace address `indices` (`null` when none is).
    #[method(name = "get", blocking)]
    fn get(&self, hash: B256, indices: Vec<U64>) -> RpcResult<Option<LocalizedTransactionTrace>>;

    /// Each transaction of `block` replayed with the traces `trace_types` names (`trace`,
    /// `vmTrace`, `stateDiff`).
    #[method(name = "replayBlockTransactions", blocking)]
    fn replay_block_transactions(
        &self,
        block: BlockId,
        trace_types: HashSet<TraceType>,
    ) -> RpcResult<Option<Vec<TraceResultsWithTransactionHash>>>;

    /// Transaction `hash` replayed with the traces `trace_types` names.
    #[method(name = "replayTransaction", blocking)]
    fn replay_transaction(
        &self,
        hash: B256,
        trace_types: HashSet<TraceType>,
    ) -> RpcResult<TraceResults>;

    /// `request` run after `block` (latest when absent) with state and block overrides, traced
    /// as `trace_types` names; nothing committed.
    #[method(name = "call", blocking)]
    fn call(
        &self,
        request: TransactionRequest,
        trace_types: HashSet<TraceType>,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<Box<BlockOverrides>>,
    ) -> RpcResult<TraceResults>;

    /// The frames of the blocks from `fromBlock` to `toBlock` (at most
    /// [`MAX_TRACE_FILTER_BLOCKS`]) whose sender is among `fromAddress` and recipient among
    /// `toAddress` (either or both, `mode`), `after` of them skipped, at most `count`.
    #[method(name = "filter", blocking)]
    fn filter(&self, filter: TraceFilter) -> RpcResult<Vec<LocalizedTransactionTrace>>;
}

/// Serves [`TraceApi`].
#[derive(Debug, Clone)]
pub struct TraceRpc {
    ctx: Arc<RpcContext>,
}

impl TraceRpc {
    /// The `trace_` namespace over `ctx`.
    pub fn new(ctx: Arc<RpcContext>) -> Self {
        Self { ctx }
    }
}

/// One replayed transaction of a block: its position, hash, traces or results.
type PerTransaction<T> = Vec<(usize, B256, T)>;

/// Block `number` replayed with a `TracingInspector` configured as `config`, its first `count`
/// transactions (all when `None`); `on_tx` turns each transaction's inspector, its outcome and
/// the state before it into `T`. The genesis block has no transactions: none.
fn replay<T>(
    ctx: &RpcContext,
    number: u64,
    count: Option<usize>,
    config: TracingInspectorConfig,
    mut on_tx: impl FnMut(
        TracingInspector,
        TransactionInfo,
        &revm::context::result::ResultAndState<revm::context::result::HaltReason>,
        &gigagas_executor::replay::ReplayDb<'_>,
    ) -> Result<T, ErrorObjectOwned>,
) -> Result<PerTransaction<T>, ErrorObjectOwned> {
    if number == 0 {
        return Ok(Vec::new());
    }
    let replay = BlockReplay::load(ctx, number, count)?;
    let header = &replay.input.header;
    let mut out = Vec::new();
    let mut failed = None;
    replay.run(TracingInspector::new(config), |i, insp, result, db| {
        let hash = *replay.input.transactions[i].tx_hash();
        let info = TransactionInfo {
            hash: Some(hash),
            index: Some(i as u64),
            block_hash: Some(replay.input.hash),
            block_number: Some(header.number),
            base_fee: header.base_fee_per_gas,
            block_timestamp: Some(header.timestamp),
        };
        let taken = std::mem::replace(insp, TracingInspector::new(config));
        match on_tx(taken, info, result, db) {
            Ok(t) => out.push((i, hash, t)),
            Err(e) => failed = failed.take().or(Some(e)),
        }
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Every frame of the first `count` transactions of block `number` (all when `None`).
fn localized(
    ctx: &RpcContext,
    number: u64,
    count: Option<usize>,
) -> Result<PerTransaction<Vec<LocalizedTransactionTrace>>, ErrorObjectOwned> {
    replay(ctx, number, count, TracingInspectorConfig::default_parity(), |insp, info, out, _| {
        Ok(insp
            .into_parity_builder()
            .with_transaction_gas_used(out.result.tx_gas_used())
            .into_localized_transaction_traces(info))
    })
}

/// Each of the first `count` transactions of block `number` (all when `None`) with the traces
/// `types` names.
fn results(
    ctx: &RpcContext,
    number: u64,
    count: Option<usize>,
    types: &HashSet<TraceType>,
) -> Result<PerTransaction<TraceResults>, ErrorObjectOwned> {
    let config = TracingInspectorConfig::from_parity_config(types);
    replay(ctx, number, count, config, |insp, _, out, db| {
        insp.into_parity_builder()
            .with_transaction_gas_used(out.result.tx_gas_used())
            .into_trace_results_with_state(out, types, db)
            .map_err(|e| RpcError::ReplayRead(Box::new(e)).into())
    })
}

/// The block and ommer reward traces of block `number` before the merge (none after it), as
/// reth appends them to the block's traces.
fn reward_traces(
    ctx: &RpcContext,
    number: u64,
) -> Result<Vec<LocalizedTransactionTrace>, RpcError> {
    use alloy_evm::block::calc;
    use alloy_rpc_types_trace::parity::{RewardAction, RewardType};
    let Some(base) = calc::base_block_reward(&ctx.chain.eth, number) else {
        return Ok(Vec::new());
    };
    let Some(block) = crate::convert::StoredBlock::load(ctx, number)? else {
        return Ok(Vec::new());
    };
    let at = alloy_eips::BlockNumHash::new(number, block.hash);
    let mut traces = vec![RewardAction {
        author: block.header.beneficiary,
        reward_type: RewardType::Block,
        value: alloy_primitives::U256::from(calc::block_reward(base, block.body.ommers.len())),
    }
    .into_localized_trace(at)];
    for ommer in &block.body.ommers {
        traces.push(
            RewardAction {
                author: ommer.beneficiary,
                reward_type: RewardType::Uncle,
                value: alloy_primitives::U256::from(calc::ommer_reward(base, number, ommer.number)),
            }
            .into_localized_trace(at),
        );
    }
    Ok(traces)
}

/// Where transaction `hash` is: (block, index), `None` when it is not stored.
fn locate(ctx: &RpcContext, hash: &B256) -> Result<Option<(u64, usize)>, RpcError> {
    Ok(ctx.provider.transaction_location(hash)?.map(|(n, i)| (n, i as usize)))
}

impl TraceApiServer for TraceRpc {
    fn block(&self, block: BlockId) -> RpcResult<Option<Vec<LocalizedTransactionTrace>>> {
        let Some(number) = resolve(&self.ctx, block)? else { return Ok(None) };
        let traces = localized(&self.ctx, number, None)?;
        let mut out: Vec<_> = traces.into_iter().flat_map(|(_, _, t)| t).collect();
        if number > 0 {
            out.extend(reward_traces(&self.ctx, number)?);
        }
        Ok(Some(out))
    }

    fn transaction(&self, hash: B256) -> RpcResult<Option<Vec<LocalizedTransactionTrace>>> {
        let Some((number, index)) = locate(&self.ctx, &hash)? else { return Ok(None) };
        let mut traces = localized(&self.ctx, number, Some(index + 1))?;
        Ok(traces.pop().map(|(_, _, t)| t))
    }

    fn get(&self, hash: B256, indices: Vec<U64>) -> RpcResult<Option<LocalizedTransactionTrace>> {
        let address: Vec<usize> = indices.iter().map(|i| i.to::<usize>()).collect();
        Ok(self
            .transaction(hash)?
            .and_then(|traces| traces.into_iter().find(|t| t.trace.trace_address == address)))
    }

    fn replay_block_transactions(
        &self,
        block: BlockId,
        trace_types: HashSet<TraceType>,
    ) -> RpcResult<Option<Vec<TraceResultsWithTransactionHash>>> {
        let Some(number) = resolve(&self.ctx, block)? else { return Ok(None) };
        let traced = results(&self.ctx, number, None, &trace_types)?;
        Ok(Some(
            traced
                .into_iter()
                .map(|(_, hash, full_trace)| TraceResultsWithTransactionHash {
                    full_trace,
                    transaction_hash: hash,
                })
                .collect(),
        ))
    }

    fn replay_transaction(
        &self,
        hash: B256,
        trace_types: HashSet<TraceType>,
    ) -> RpcResult<TraceResults> {
        let (number, index) = locate(&self.ctx, &hash)?
            .ok_or_else(|| RpcError::NotFound(format!("transaction {hash}")))?;
        let mut traced = results(&self.ctx, number, Some(index + 1), &trace_types)?;
        let (_, _, result) =
            traced.pop().ok_or_else(|| RpcError::NotFound(format!("transaction {hash}")))?;
        Ok(result)
    }

    fn call(
        &self,
        request: TransactionRequest,
        trace_types: HashSet<TraceType>,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<Box<BlockOverrides>>,
    ) -> RpcResult<TraceResults> {
        let ctx = &self.ctx;
        let block = header_or_latest(ctx, block)?;
        let overrides =
            CallOverrides { state: state_overrides.as_ref(), block: block_overrides.as_deref() };
        call::with_overrides(ctx, &block, &request, None, overrides, |state, env, tx| {
            let inspector =
                TracingInspector::new(TracingInspectorConfig::from_parity_config(&trace_types));
            let mut evm = EvmConfig::new(&ctx.chain).evm_with_inspector(
                CacheDB::new(WrapDatabaseRef(state)),
                env,
                inspector,
            );
            let out = evm.transact(tx).map_err(|e| RpcError::from(call::not_run(e)))?;
            let insp =
                std::mem::replace(evm.inspector_mut(), TracingInspector::new(Default::default()));
            Ok(insp
                .into_parity_builder()
                .with_transaction_gas_used(out.result.tx_gas_used())
                .into_trace_results_with_state(&out, &trace_types, state)
                .map_err(RpcError::State)?)
        })
    }

    fn filter(&self, filter: TraceFilter) -> RpcResult<Vec<LocalizedTransactionTrace>> {
        let ctx = &self.ctx;
        let head = ctx.forkchoice().head.0;
        let from = filter.from_block.unwrap_or(0);
        let to = filter.to_block.unwrap_or(head);
        if from > to {
            return Err(RpcError::InvalidParams("invalid block range params".into()).into());
        }
        if to > head {
            return Err(RpcError::NotFound(block_name(BlockId::from(to))).into());
        }
        if to - from >= MAX_TRACE_FILTER_BLOCKS {
            return Err(RpcError::InvalidParams(format!(
                "block range too large: at most {MAX_TRACE_FILTER_BLOCKS} blocks"
            ))
            .into());
        }
        let matcher = filter.matcher();
        let mut out = Vec::new();
        for number in from..=to {
            for (_, _, traces) in localized(ctx, number, None)? {
                out.extend(traces.into_iter().filter(|t| matcher.matches(&t.trace)));
            }
            if number > 0 {
                let rewards = reward_traces(ctx, number)?;
                out.extend(rewards.into_iter().filter(|t| matcher.matches(&t.trace)));
            }
        }
        let after = filter.after.unwrap_or(0) as usize;
        let count = filter.count.map_or(usize::MAX, |c| c as usize);
        Ok(out.into_iter().skip(after).take(count).collect())
    }
}
