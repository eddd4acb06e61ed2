//! The `debug_` namespace: [`DebugApi`] (`#[rpc(server, client)]`, reth's `DebugApi`), served
//! by [`DebugRpc`]: geth's raw getters (`debug_getRawHeader`, `…Block`, `…Receipts`,
//! `…Transaction`: RLP and EIP-2718 bytes from the store) and its tracers
//! (`debug_traceTransaction`, `debug_traceBlockByNumber`, `debug_traceBlockByHash`: the block
//! replayed on its parent's state, `trace`) and `debug_executionWitness` ([`crate::witness`]),
//! the traces and witnesses on jsonrpsee's blocking pool.

use crate::{
    blocks::{block_name, block_of, located_transaction},
    params::HashParam,
    trace, RpcContext, RpcError,
};
use alloy_eips::{BlockId, BlockNumberOrTag, Encodable2718};
use alloy_primitives::{Bytes, B256};
use alloy_rpc_types_trace::geth::{GethDebugTracingOptions, GethTrace, TraceResult};
use jsonrpsee::{core::RpcResult, proc_macros::rpc};
use std::sync::Arc;

/// The `debug_` namespace (geth's raw getters and tracers).
#[rpc(server, client, namespace = "debug")]
pub trait DebugApi {
    /// The RLP of `block`'s header; -32000 when the block is unknown.
    #[method(name = "getRawHeader")]
    fn raw_header(&self, block: BlockId) -> RpcResult<Bytes>;

    /// The RLP of `block`.
    #[method(name = "getRawBlock")]
    fn raw_block(&self, block: BlockId) -> RpcResult<Bytes>;

    /// The EIP-2718 bytes of each receipt of `block`.
    #[method(name = "getRawReceipts")]
    fn raw_receipts(&self, block: BlockId) -> RpcResult<Vec<Bytes>>;

    /// The EIP-2718 bytes of transaction `hash` of the chain; `null` if unknown.
    #[method(name = "getRawTransaction")]
    fn raw_transaction(&self, hash: HashParam) -> RpcResult<Option<Bytes>>;

    /// The trace of transaction `hash` with the tracer `opts` names (geth's struct logger by
    /// default, `callTracer`, `prestateTracer`, `4byteTracer`, `noopTracer`; another is
    /// -32602).
    #[method(name = "traceTransaction", blocking)]
    fn trace_transaction(
        &self,
        hash: B256,
        opts: Option<GethDebugTracingOptions>,
    ) -> RpcResult<GethTrace>;

    /// geth's `debug_getBadBlocks`: the last payloads found INVALID, newest first (hash,
    /// block, RLP, and the reason).
    #[method(name = "getBadBlocks", blocking)]
    fn bad_blocks(&self) -> RpcResult<Vec<crate::bad_blocks::BadBlockAnswer>>;

    /// geth's `debug_traceCall`: `request` run after `block` (latest when absent) with the
    /// options' state and block overrides, traced by the tracer they name (as
    /// `debug_traceTransaction`); nothing committed.
    #[method(name = "traceCall", blocking)]
    fn trace_call(
        &self,
        request: alloy_rpc_types_eth::TransactionRequest,
        block: Option<BlockId>,
        opts: Option<alloy_rpc_types_trace::geth::GethDebugTracingCallOptions>,
    ) -> RpcResult<GethTrace>;

    /// geth's `debug_traceBlock`: the block `rlp` encodes (it need not be stored), each
    /// transaction traced on its parent's state, with its hash.
    #[method(name = "traceBlock", blocking)]
    fn trace_block(
        &self,
        rlp: Bytes,
        opts: Option<GethDebugTracingOptions>,
    ) -> RpcResult<Vec<TraceResult>>;

    /// geth's `debug_executionWitness`: what a stateless client needs to execute `block` —
    /// the parent's trie nodes it resolves, the code it runs, the headers back to the oldest
    /// block `BLOCKHASH` reads — in geth's shape ([`crate::witness`]); -32000 when the block
    /// or its parent is unknown.
    #[method(name = "executionWitness", blocking)]
    fn execution_witness(
        &self,
        block: BlockId,
    ) -> RpcResult<crate::witness::ExecutionWitnessAnswer>;

    /// The trace of each transaction of block `number`, with its hash.
    #[method(name = "traceBlockByNumber", blocking)]
    fn trace_block_by_number(
        &self,
        number: BlockNumberOrTag,
        opts: Option<GethDebugTracingOptions>,
    ) -> RpcResult<Vec<TraceResult>>;

    /// The trace of each transaction of the block of hash `hash`, with its hash.
    #[method(name = "traceBlockByHash", blocking)]
    fn trace_block_by_hash(
        &self,
        hash: B256,
        opts: Option<GethDebugTracingOptions>,
    ) -> RpcResult<Vec<TraceResult>>;
}

/// Serves [`DebugApi`] over the node's context.
#[derive(Debug, Clone)]
pub struct DebugRpc {
    ctx: Arc<RpcContext>,
}

impl DebugRpc {
    /// The `debug_` namespace over `ctx`.
    pub fn new(ctx: Arc<RpcContext>) -> Self {
        Self { ctx }
    }

    fn block(&self, id: BlockId) -> Result<std::sync::Arc<crate::convert::StoredBlock>, RpcError> {
        block_of(&self.ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))
    }
}

impl DebugApiServer for DebugRpc {
    fn raw_header(&self, block: BlockId) -> RpcResult<Bytes> {
        Ok(self.block(block)?.raw_header())
    }

    fn raw_block(&self, block: BlockId) -> RpcResult<Bytes> {
        Ok(Bytes::from(self.block(block)?.rlp()))
    }

    fn raw_receipts(&self, block: BlockId) -> RpcResult<Vec<Bytes>> {
        Ok(self.block(block)?.raw_receipts(&self.ctx)?)
    }

    fn raw_transaction(&self, hash: HashParam) -> RpcResult<Option<Bytes>> {
        Ok(raw_transaction(&self.ctx, &hash.0)?)
    }

    fn trace_transaction(
        &self,
        hash: B256,
        opts: Option<GethDebugTracingOptions>,
    ) -> RpcResult<GethTrace> {
        trace::trace_transaction(&self.ctx, &hash, &opts.unwrap_or_default())
    }

    fn bad_blocks(&self) -> RpcResult<Vec<crate::bad_blocks::BadBlockAnswer>> {
        Ok(crate::bad_blocks::answers(&self.ctx.bad_blocks)?)
    }

    fn trace_call(
        &self,
        request: alloy_rpc_types_eth::TransactionRequest,
        block: Option<BlockId>,
        opts: Option<alloy_rpc_types_trace::geth::GethDebugTracingCallOptions>,
    ) -> RpcResult<GethTrace> {
        let block = crate::blocks::header_or_latest(&self.ctx, block)?;
        trace::trace_call(&self.ctx, &block, &request, &opts.unwrap_or_default())
    }

    fn trace_block(
        &self,
        rlp: Bytes,
        opts: Option<GethDebugTracingOptions>,
    ) -> RpcResult<Vec<TraceResult>> {
        trace::trace_raw_block(&self.ctx, &rlp, &opts.unwrap_or_default())
    }

    fn execution_witness(
        &self,
        block: BlockId,
    ) -> RpcResult<crate::witness::ExecutionWitnessAnswer> {
        Ok(crate::witness::execution_witness(&self.ctx, block)?)
    }

    fn trace_block_by_number(
        &self,
        number: BlockNumberOrTag,
        opts: Option<GethDebugTracingOptions>,
    ) -> RpcResult<Vec<TraceResult>> {
        trace::trace_block_at(&self.ctx, BlockId::Number(number), &opts.unwrap_or_default())
    }

    fn trace_block_by_hash(
        &self,
        hash: B256,
        opts: Option<GethDebugTracingOptions>,
    ) -> RpcResult<Vec<TraceResult>> {
        trace::trace_block_at(&self.ctx, BlockId::from(hash), &opts.unwrap_or_default())
    }
}

/// The raw transaction `hash` of the chain (EIP-2718 bytes), `None` when it is not stored.
pub(crate) fn raw_transaction(ctx: &RpcContext, hash: &B256) -> Result<Option<Bytes>, RpcError> {
    Ok(located_transaction(ctx, hash)?
        .map(|(b, i)| Bytes::from(b.body.transactions[i].encoded_2718())))
}
