//! Engine API: `engine_forkchoiceUpdatedV1..V3` as far as the stored chain goes (head, safe and
//! finalized blocks). Payload building and `engine_newPayload` come with the node (issue 6).

use crate::{RpcContext, RpcError};
use alloy_primitives::B256;
use jsonrpsee::{types::ErrorObjectOwned, RpcModule};
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// Head, safe and finalized blocks: `(number, hash)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forkchoice {
    /// The canonical head.
    pub head: (u64, B256),
    /// The safe block, once the consensus client named one.
    pub safe: Option<(u64, B256)>,
    /// The finalized block, once the consensus client named one.
    pub finalized: Option<(u64, B256)>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ForkchoiceState {
    head_block_hash: B256,
    safe_block_hash: B256,
    finalized_block_hash: B256,
}

/// Registers the methods.
pub(crate) fn module(ctx: Arc<RpcContext>) -> RpcModule<Arc<RpcContext>> {
    let mut m = RpcModule::new(ctx);
    for name in
        ["engine_forkchoiceUpdatedV1", "engine_forkchoiceUpdatedV2", "engine_forkchoiceUpdatedV3"]
    {
        m.register_method(name, |params, ctx, _| -> Result<Value, ErrorObjectOwned> {
            let mut seq = params.sequence();
            let state: ForkchoiceState = seq
                .next()
                .map_err(|e| ErrorObjectOwned::from(RpcError::InvalidParams(e.to_string())))?;
            let lookup = |h: B256| -> Result<Option<(u64, B256)>, RpcError> {
                if h == B256::ZERO {
                    return Ok(None);
                }
                Ok(ctx.storage.block_number(&h)?.map(|n| (n, h)))
            };
            let Some(head) = lookup(state.head_block_hash)? else {
                // The spec's answer for an unknown head: SYNCING.
                return Ok(json!({
                    "payloadStatus": {"status": "SYNCING", "latestValidHash": null, "validationError": null},
                    "payloadId": null
                }));
            };
            let safe = lookup(state.safe_block_hash)?;
            let finalized = lookup(state.finalized_block_hash)?;
            *ctx.forkchoice.write().unwrap_or_else(|p| p.into_inner()) =
                Forkchoice { head, safe, finalized };
            Ok(json!({
                "payloadStatus": {"status": "VALID", "latestValidHash": head.1, "validationError": null},
                "payloadId": null
            }))
        })
        .expect("registered once");
    }
    m
}
