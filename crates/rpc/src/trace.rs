//! `debug_traceTransaction`, `debug_traceBlockByNumber`, `debug_traceBlockByHash` with geth's
//! default tracer (struct logs: `disableStack`, `disableStorage`, `enableMemory`,
//! `enableReturnData`): the block re-executed on its parent's state (read through the parent's
//! state root), its system calls first, each transaction seen by revm-inspectors'
//! `TracingInspector` and turned into geth's frame by its `GethTraceBuilder`.

use crate::{convert::StoredBlock, eth::resolve, RpcContext, RpcError};
use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::B256;
use alloy_rpc_types_trace::geth::{DefaultFrame, GethDebugTracingOptions};
use gigagas_executor::replay::replay_block;
use gigagas_primitives::BlockInput;
use gigagas_stages::TrieState;
use gigagas_state::PreState;
use jsonrpsee::{types::ErrorObjectOwned, RpcModule};
use revm_inspectors::tracing::{TracingInspector, TracingInspectorConfig};
use serde_json::{json, Value};
use std::sync::Arc;

type Ctx = Arc<RpcContext>;
type Answer = Result<Value, ErrorObjectOwned>;

fn invalid(e: impl std::fmt::Display) -> ErrorObjectOwned {
    RpcError::InvalidParams(e.to_string()).into()
}

/// The struct-log frames of the first `count` transactions of block `number` (all when `None`).
fn trace_block(
    ctx: &RpcContext,
    number: u64,
    count: Option<usize>,
    opts: &GethDebugTracingOptions,
) -> Result<Vec<(B256, DefaultFrame)>, ErrorObjectOwned> {
    if opts.tracer.is_some() {
        return Err(invalid("only the default (struct log) tracer is supported"));
    }
    if number == 0 {
        return Err(RpcError::Store("genesis is not traceable".into()).into());
    }
    let block = StoredBlock::load(ctx, number)?
        .ok_or_else(|| RpcError::NotFound(format!("block #{number}")))?;
    let parent = StoredBlock::load(ctx, number - 1)?
        .ok_or_else(|| RpcError::NotFound(format!("block #{}", number - 1)))?;
    let input = BlockInput {
        hash: block.hash,
        header: block.header.clone(),
        transactions: block.body.transactions.clone(),
        claimed_senders: Vec::new(),
        withdrawals: block.body.withdrawals.clone(),
        ommers: block.body.ommers.clone(),
    };
    let senders = input.par_recover(&ctx.chain).map_err(|e| RpcError::Store(e.to_string()))?;
    let pre_state = PreState::backed(Arc::new(TrieState {
        store: ctx.storage.clone(),
        root: parent.header.state_root,
    }));
    let config = opts.config;
    let inspector = TracingInspector::new(TracingInspectorConfig::from_geth_config(&config));
    let mut frames = Vec::new();
    replay_block(&ctx.chain, &input, &senders, &pre_state, inspector, count, |i, insp, result| {
        let frame = insp.geth_builder().geth_traces(
            result.tx_gas_used(),
            result.output().cloned().unwrap_or_default(),
            config,
        );
        insp.fuse();
        frames.push((*input.transactions[i].tx_hash(), frame));
    })
    .map_err(|e| RpcError::Store(e.to_string()))?;
    Ok(frames)
}

fn options(
    seq: &mut jsonrpsee::types::params::ParamsSequence<'_>,
) -> Result<GethDebugTracingOptions, ErrorObjectOwned> {
    Ok(seq.optional_next::<GethDebugTracingOptions>().map_err(invalid)?.unwrap_or_default())
}

fn block_answer(frames: Vec<(B256, DefaultFrame)>) -> Answer {
    Ok(Value::Array(
        frames.into_iter().map(|(hash, frame)| json!({"txHash": hash, "result": frame})).collect(),
    ))
}

/// Registers the methods.
pub(crate) fn module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    m.register_blocking_method("debug_traceTransaction", |params, ctx, _| -> Answer {
        let mut seq = params.sequence();
        let hash: B256 = seq.next().map_err(invalid)?;
        let opts = options(&mut seq)?;
        let (number, index) = ctx
            .storage
            .transaction_location(&hash)
            .map_err(RpcError::from)?
            .ok_or_else(|| RpcError::Store("transaction not found".into()))?;
        let mut frames = trace_block(&ctx, number, Some(index as usize + 1), &opts)?;
        let (_, frame) =
            frames.pop().ok_or_else(|| RpcError::Store("transaction not found".into()))?;
        serde_json::to_value(frame).map_err(|e| RpcError::Store(e.to_string()).into())
    })
    .expect("registered once");
    m.register_blocking_method("debug_traceBlockByNumber", |params, ctx, _| -> Answer {
        let mut seq = params.sequence();
        let tag: BlockNumberOrTag = seq.next().map_err(invalid)?;
        let opts = options(&mut seq)?;
        let number = resolve(&ctx, BlockId::Number(tag))?
            .ok_or_else(|| RpcError::NotFound(format!("block {tag}")))?;
        block_answer(trace_block(&ctx, number, None, &opts)?)
    })
    .expect("registered once");
    m.register_blocking_method("debug_traceBlockByHash", |params, ctx, _| -> Answer {
        let mut seq = params.sequence();
        let hash: B256 = seq.next().map_err(invalid)?;
        let opts = options(&mut seq)?;
        let number = ctx
            .storage
            .block_number(&hash)
            .map_err(RpcError::from)?
            .ok_or_else(|| RpcError::NotFound(format!("block {hash}")))?;
        block_answer(trace_block(&ctx, number, None, &opts)?)
    })
    .expect("registered once");
    m
}
