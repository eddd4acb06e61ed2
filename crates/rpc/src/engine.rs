//! The Engine API (execution-apis `src/engine/`: paris … amsterdam), served behind JWT:
//! `engine_exchangeCapabilities`, `engine_getClientVersionV1`, `engine_newPayloadV1–V5`,
//! `engine_forkchoiceUpdatedV1–V4` (with payload attributes: a payload is built from the
//! pool), `engine_getPayloadV1–V6`, `engine_getPayloadBodiesByHashV1/V2` and
//! `engine_getPayloadBodiesByRangeV1/V2` (V2 with the EIP-7928 block access list).
//!
//! Error codes: -38001 unknown payload, -38002 invalid forkchoice state, -38003 invalid payload
//! attributes (also attributes of the wrong structure for the method's version and fork),
//! -38004 too large request (more than [`MAX_PAYLOAD_BODIES`] bodies), -38005 unsupported fork
//! (a method version that does not match the fork of the payload's timestamp), -32602 invalid
//! params (a payload of the wrong structure for the fork), -32603 an internal fault (never
//! INVALID).
//!
//! The handlers decode and check the request's shape (fork, version, block hash, blob hashes),
//! then hand it to the engine task through its [`gigagas_engine::EngineHandle`] and await the
//! answer: no handler executes a block.

use crate::{RpcContext, RpcError};
use alloy_consensus::{Block, TxEnvelope};
use alloy_eips::eip7685::Requests;
use alloy_primitives::U64;
use alloy_primitives::{Bytes, B256, B64};
use alloy_rlp::{Decodable, Encodable};
use alloy_rpc_types_engine::{
    CancunPayloadFields, ExecutionPayload, ExecutionPayloadBodyV1, ExecutionPayloadBodyV2,
    ExecutionPayloadFieldV2, ExecutionPayloadInputV2, ExecutionPayloadSidecar, ExecutionPayloadV1,
    ExecutionPayloadV2, ExecutionPayloadV3, ExecutionPayloadV4, ForkchoiceState,
    PayloadAttributes as EnginePayloadAttributes, PraguePayloadFields,
};
use gigagas_bal::BlockAccessList;
use gigagas_engine::{
    message::{BuildRequest, Candidates, ForkchoiceState as EngineForkchoice, NewPayload},
    EngineError, PayloadStatus,
};
use gigagas_payload::{BuiltPayload, PayloadAttributes};
use jsonrpsee::{
    types::{ErrorObjectOwned, Params},
    RpcModule,
};
use serde_json::{json, Value};
use std::{sync::Arc, time::Instant};

type Ctx = Arc<RpcContext>;
type Answer = Result<Value, ErrorObjectOwned>;

/// The forks the Engine API versions are tied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fork {
    Paris,
    Shanghai,
    Cancun,
    Prague,
    Osaka,
    Amsterdam,
}

fn fork_at(ctx: &RpcContext, timestamp: u64) -> Fork {
    let c = &ctx.chain;
    if c.is_amsterdam(timestamp) {
        Fork::Amsterdam
    } else if c.is_osaka(timestamp) {
        Fork::Osaka
    } else if c.is_prague(timestamp) {
        Fork::Prague
    } else if c.is_cancun(timestamp) {
        Fork::Cancun
    } else if c.is_shanghai(timestamp) {
        Fork::Shanghai
    } else {
        Fork::Paris
    }
}

fn error(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

fn unsupported_fork(method: &str, fork: Fork) -> ErrorObjectOwned {
    error(-38005, format!("Unsupported fork: {method} does not serve {fork:?} payloads"))
}

fn internal(e: impl std::fmt::Display) -> ErrorObjectOwned {
    error(-32603, format!("internal error: {e}"))
}

fn param<T: serde::de::DeserializeOwned>(
    seq: &mut jsonrpsee::types::params::ParamsSequence<'_>,
    what: &str,
) -> Result<T, ErrorObjectOwned> {
    seq.next().map_err(|e| {
        let reason = e.data().map_or_else(|| e.message().to_string(), |d| d.get().to_string());
        RpcError::InvalidParams(format!("{what}: {reason}")).into()
    })
}

fn status_json(status: &PayloadStatus) -> Value {
    match status {
        PayloadStatus::Valid(h) => {
            json!({"status": "VALID", "latestValidHash": h, "validationError": null})
        }
        PayloadStatus::Invalid { latest_valid_hash, reason } => json!({
            "status": "INVALID", "latestValidHash": latest_valid_hash, "validationError": reason
        }),
        PayloadStatus::Syncing => {
            json!({"status": "SYNCING", "latestValidHash": null, "validationError": null})
        }
    }
}

/// The Engine API error for an engine that could not answer with a status.
fn engine_error(e: EngineError) -> ErrorObjectOwned {
    match e {
        EngineError::InvalidForkchoice(e) => error(-38002, e.to_string()),
        EngineError::InvalidAttributes { .. } => error(-38003, e.to_string()),
        EngineError::Internal(_) | EngineError::UnknownParent(_) | EngineError::Stopped => {
            internal(e)
        }
    }
}

/// The methods this node serves that `engine_exchangeCapabilities` lists (the spec leaves
/// `engine_exchangeCapabilities` itself out of the list).
pub const CAPABILITIES: &[&str] = &[
    "engine_getClientVersionV1",
    "engine_forkchoiceUpdatedV1",
    "engine_forkchoiceUpdatedV2",
    "engine_forkchoiceUpdatedV3",
    "engine_forkchoiceUpdatedV4",
    "engine_newPayloadV1",
    "engine_newPayloadV2",
    "engine_newPayloadV3",
    "engine_newPayloadV4",
    "engine_newPayloadV5",
    "engine_getPayloadV1",
    "engine_getPayloadV2",
    "engine_getPayloadV3",
    "engine_getPayloadV4",
    "engine_getPayloadV5",
    "engine_getPayloadV6",
    "engine_getPayloadBodiesByHashV1",
    "engine_getPayloadBodiesByHashV2",
    "engine_getPayloadBodiesByRangeV1",
    "engine_getPayloadBodiesByRangeV2",
    "engine_getBlobsV1",
    "engine_getBlobsV2",
];

/// Most versioned hashes one `engine_getBlobsV1/V2` call takes (-38004 above; the spec's
/// minimum, as reth).
pub const MAX_BLOB_HASHES: usize = 128;

/// Most payload bodies one `engine_getPayloadBodiesBy*` call returns (-38004 above; the spec
/// asks for at least 32; reth serves 1,024).
pub const MAX_PAYLOAD_BODIES: u64 = 1024;

/// Registers the methods.
pub(crate) fn module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    m.register_method("engine_exchangeCapabilities", |params, _, _| -> Answer {
        let mut seq = params.sequence();
        let _theirs: Vec<String> = param(&mut seq, "capabilities")?;
        Ok(json!(CAPABILITIES))
    })
    .expect("registered once");
    m.register_method("engine_getClientVersionV1", |_, _, _| -> Answer {
        let commit = option_env!("GIGAGAS_GIT_COMMIT").unwrap_or("00000000");
        Ok(json!([{
            "code": "GG",
            "name": "gigagas",
            "version": env!("CARGO_PKG_VERSION"),
            "commit": format!("0x{}", &commit[..commit.len().min(8)]),
        }]))
    })
    .expect("registered once");
    for (name, version) in [
        ("engine_forkchoiceUpdatedV1", 1),
        ("engine_forkchoiceUpdatedV2", 2),
        ("engine_forkchoiceUpdatedV3", 3),
        ("engine_forkchoiceUpdatedV4", 4),
    ] {
        m.register_async_method(name, move |params, ctx, _| async move {
            forkchoice_updated(&ctx, name, version, params).await
        })
        .expect("registered once");
    }
    for (name, version) in [
        ("engine_newPayloadV1", 1),
        ("engine_newPayloadV2", 2),
        ("engine_newPayloadV3", 3),
        ("engine_newPayloadV4", 4),
        ("engine_newPayloadV5", 5),
    ] {
        m.register_async_method(name, move |params, ctx, _| async move {
            new_payload(&ctx, name, version, params).await
        })
        .expect("registered once");
    }
    for (name, version) in [
        ("engine_getPayloadV1", 1),
        ("engine_getPayloadV2", 2),
        ("engine_getPayloadV3", 3),
        ("engine_getPayloadV4", 4),
        ("engine_getPayloadV5", 5),
        ("engine_getPayloadV6", 6),
    ] {
        m.register_async_method(name, move |params, ctx, _| async move {
            get_payload(&ctx, name, version, params).await
        })
        .expect("registered once");
    }
    for (name, version) in [("engine_getBlobsV1", 1), ("engine_getBlobsV2", 2)] {
        m.register_method(name, move |params, ctx, _| get_blobs(ctx, version, params))
            .expect("registered once");
    }
    for (name, version) in
        [("engine_getPayloadBodiesByHashV1", 1), ("engine_getPayloadBodiesByHashV2", 2)]
    {
        m.register_blocking_method(name, move |params, ctx, _| {
            bodies_by_hash(&ctx, version, params)
        })
        .expect("registered once");
    }
    for (name, version) in
        [("engine_getPayloadBodiesByRangeV1", 1), ("engine_getPayloadBodiesByRangeV2", 2)]
    {
        m.register_blocking_method(name, move |params, ctx, _| {
            bodies_by_range(&ctx, version, params)
        })
        .expect("registered once");
    }
    m
}

/// The `testing_` namespace (`testing_buildBlockV1`), served with the public methods.
pub(crate) fn testing_module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    m.register_async_method("testing_buildBlockV1", |params, ctx, _| async move {
        testing_build_block(&ctx, params).await
    })
    .expect("registered once");
    m
}

/// The Engine API calls whose version is tied to a fork.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Versioned {
    /// `engine_forkchoiceUpdatedV*` payload attributes.
    Attributes,
    /// `engine_getPayloadV*`.
    GetPayload,
    /// `engine_newPayloadV*`.
    NewPayload,
}

/// The forks a method version serves (-38005 otherwise).
fn check_fork(
    method: &str,
    kind: Versioned,
    version: u8,
    fork: Fork,
) -> Result<(), ErrorObjectOwned> {
    use Fork::*;
    let served: &[Fork] = match (kind, version) {
        (Versioned::Attributes | Versioned::GetPayload | Versioned::NewPayload, 1) => &[Paris],
        (Versioned::GetPayload | Versioned::NewPayload, 2) => &[Paris, Shanghai],
        (Versioned::Attributes, 2) => &[Paris, Shanghai],
        (Versioned::Attributes, 3) => &[Cancun, Prague, Osaka],
        (Versioned::Attributes, 4) => &[Amsterdam],
        (Versioned::GetPayload | Versioned::NewPayload, 3) => &[Cancun],
        (Versioned::GetPayload, 4) => &[Prague],
        (Versioned::GetPayload, 5) => &[Osaka],
        (Versioned::GetPayload, 6) | (Versioned::NewPayload, 5) => &[Amsterdam],
        (Versioned::NewPayload, 4) => &[Prague, Osaka],
        _ => &[],
    };
    if served.contains(&fork) {
        Ok(())
    } else {
        Err(unsupported_fork(method, fork))
    }
}

async fn forkchoice_updated(
    ctx: &RpcContext,
    method: &str,
    version: u8,
    params: Params<'_>,
) -> Answer {
    let mut seq = params.sequence();
    let state: ForkchoiceState = param(&mut seq, "forkchoiceState")?;
    let attrs: Option<EnginePayloadAttributes> = seq.optional_next().map_err(|e| {
        ErrorObjectOwned::from(RpcError::InvalidParams(format!("payloadAttributes: {e}")))
    })?;
    if let Some(a) = &attrs {
        check_fork(method, Versioned::Attributes, version, fork_at(ctx, a.timestamp))?;
        // Attributes of the wrong structure for the version and fork: -38003 (shanghai.md,
        // engine_forkchoiceUpdatedV2; reth answers the same for every version).
        let wrong = |field: &str, what: &str| {
            error(-38003, format!("Invalid payload attributes: {field} {what} for {method}"))
        };
        let shanghai = ctx.chain.is_shanghai(a.timestamp);
        match (a.withdrawals.is_some(), version, shanghai) {
            (true, 1, _) | (true, _, false) => return Err(wrong("withdrawals", "present")),
            (false, 2.., true) => return Err(wrong("withdrawals", "missing")),
            _ => {}
        }
        if (version >= 3) != a.parent_beacon_block_root.is_some() {
            let what = if version >= 3 { "missing" } else { "present" };
            return Err(wrong("parentBeaconBlockRoot", what));
        }
        if (version >= 4) != a.slot_number.is_some() {
            return Err(wrong("slotNumber", if version >= 4 { "missing" } else { "present" }));
        }
    }
    let state = EngineForkchoice {
        head: state.head_block_hash,
        safe: state.safe_block_hash,
        finalized: state.finalized_block_hash,
    };
    let attributes = attrs.map(|a| attributes(&a, a.target_gas_limit, None));
    let answer = ctx.engine.forkchoice_updated(state, attributes).await.map_err(engine_error)?;
    Ok(json!({"payloadStatus": status_json(&answer.status), "payloadId": answer.payload_id}))
}

/// The builder's attributes from the Engine API's, with the gas-limit target and extra data.
fn attributes(
    a: &EnginePayloadAttributes,
    target_gas_limit: Option<u64>,
    extra_data: Option<Bytes>,
) -> PayloadAttributes {
    PayloadAttributes {
        timestamp: a.timestamp,
        prev_randao: a.prev_randao,
        suggested_fee_recipient: a.suggested_fee_recipient,
        withdrawals: a.withdrawals.clone(),
        parent_beacon_block_root: a.parent_beacon_block_root,
        slot_number: a.slot_number,
        target_gas_limit,
        extra_data,
    }
}

/// `engine_getPayloadV*`: the payload built under the id, once its build (a job off the
/// engine thread) has finished; -38001 for an id never given or no longer kept, an internal
/// error for a build that failed.
async fn get_payload(
    ctx: &RpcContext,
    method: &str,
    version: u8,
    params: Params<'static>,
) -> Answer {
    let mut seq = params.sequence();
    let id: B64 = param(&mut seq, "payloadId")?;
    let built = ctx
        .engine
        .payloads()
        .resolve(&id)
        .await
        .ok_or_else(|| error(-38001, "Unknown payload"))?
        .map_err(|e| error(-32603, e.to_string()))?;
    check_fork(method, Versioned::GetPayload, version, fork_at(ctx, built.block.header.timestamp))?;
    envelope_json(&built, version)
}

/// The `blobsBundle` of `built`: each blob transaction's commitments, proofs and blobs in
/// block order; one KZG proof per blob (`getPayloadV3`/`V4`) or, with `cell_proofs`
/// (`getPayloadV5`+, EIP-7594), the blob's `CELLS_PER_EXT_BLOB` cell proofs.
///
/// # Errors
/// -32603 when a blob transaction's sidecar is missing or of the other form (the builder
/// takes only those it holds in the block's form: a fault of the node).
fn blobs_bundle(built: &BuiltPayload, cell_proofs: bool) -> Result<Value, ErrorObjectOwned> {
    use alloy_eips::eip7594::BlobTransactionSidecarVariant as Sidecar;
    let blob_txs = built.block.body.transactions.iter().filter(|tx| tx.is_eip4844()).count();
    if built.sidecars.len() != blob_txs {
        return Err(internal(format!(
            "block {}: {} blob transactions, {} sidecars held",
            built.block.header.number,
            blob_txs,
            built.sidecars.len()
        )));
    }
    use alloy_eips::eip4844::{Blob, Bytes48};
    let (mut commitments, mut proofs, mut blobs): (Vec<Bytes48>, Vec<Bytes48>, Vec<Blob>) =
        (Vec::new(), Vec::new(), Vec::new());
    for sidecar in &built.sidecars {
        match (&**sidecar, cell_proofs) {
            (Sidecar::Eip4844(s), false) => {
                commitments.extend_from_slice(&s.commitments);
                proofs.extend_from_slice(&s.proofs);
                blobs.extend_from_slice(&s.blobs);
            }
            (Sidecar::Eip7594(s), true) => {
                commitments.extend_from_slice(&s.commitments);
                proofs.extend_from_slice(&s.cell_proofs);
                blobs.extend_from_slice(&s.blobs);
            }
            _ => {
                return Err(internal(format!(
                    "block {}: a blob sidecar of the other form",
                    built.block.header.number
                )))
            }
        }
    }
    Ok(json!({"commitments": commitments, "proofs": proofs, "blobs": blobs}))
}

/// The `engine_getPayloadV{version}` answer for `built`.
fn envelope_json(built: &BuiltPayload, version: u8) -> Answer {
    let block = &built.block;
    let v3 = ExecutionPayloadV3::from_block_unchecked(built.hash, block);
    let value = built.block_value;
    let bundle = if version >= 3 { blobs_bundle(built, version >= 5)? } else { Value::Null };
    let requests = &built.requests;
    Ok(match version {
        1 => json!(ExecutionPayloadV1::from_block_unchecked(built.hash, block)),
        2 => json!({
            "executionPayload": ExecutionPayloadFieldV2::from_block_unchecked(built.hash, block),
            "blockValue": value,
        }),
        3 => json!({"executionPayload": v3, "blockValue": value, "blobsBundle": bundle,
                    "shouldOverrideBuilder": false}),
        4 | 5 => json!({"executionPayload": v3, "blockValue": value, "blobsBundle": bundle,
                        "shouldOverrideBuilder": false, "executionRequests": requests}),
        _ => {
            let bal = Bytes::from(alloy_rlp::encode(&built.bal));
            let v4 = ExecutionPayloadV4::from_block_unchecked_with_bal(built.hash, block, bal);
            json!({"executionPayload": v4, "blockValue": value, "blobsBundle": bundle,
                   "shouldOverrideBuilder": false, "executionRequests": requests})
        }
    })
}

/// The gas limit `testing_buildBlockV1` moves toward: geth's default miner gas ceiling.
const TESTING_GAS_CEILING: u64 = 60_000_000;

/// `testing_buildBlockV1(parentHash, payloadAttributes, transactions | null, extraData)`
/// (execution-apis `src/testing`): builds a block on `parentHash` from exactly the given raw
/// transactions (any that cannot be included fails the call, -32000) or, with `null`, from the
/// pool; nothing is imported. Answers the `engine_getPayload` envelope of the fork.
async fn testing_build_block(ctx: &RpcContext, params: Params<'_>) -> Answer {
    let mut seq = params.sequence();
    let parent: B256 = param(&mut seq, "parentHash")?;
    let attrs: EnginePayloadAttributes = param(&mut seq, "payloadAttributes")?;
    let raw: Option<Vec<Bytes>> = param(&mut seq, "transactions")?;
    let extra_data: Option<Bytes> = seq
        .optional_next()
        .map_err(|e| ErrorObjectOwned::from(RpcError::InvalidParams(format!("extraData: {e}"))))?;
    let failed = |e: String| error(-32000, e);
    let (candidates, require_all) = match raw {
        Some(raw) => {
            let mut txs = Vec::with_capacity(raw.len());
            for bytes in raw {
                let tx = gigagas_txpool::decode_raw(&bytes).map_err(|e| failed(e.to_string()))?;
                let sender = alloy_consensus::transaction::SignerRecoverable::recover_signer(&tx)
                    .map_err(|e| failed(format!("invalid sender: {e}")))?;
                txs.push((tx, sender));
            }
            (Candidates::Given(txs), true)
        }
        None => (Candidates::Pool, false),
    };
    let target = Some(attrs.target_gas_limit.unwrap_or(TESTING_GAS_CEILING));
    let attributes = attributes(&attrs, target, Some(extra_data.unwrap_or_default()));
    let request = BuildRequest { parent, attributes, candidates, require_all };
    let built = ctx
        .engine
        .build_payload(request)
        .await
        .map_err(|e| failed(e.to_string()))?
        .ok_or_else(|| failed(format!("unknown parent {parent}")))?;
    let version = match fork_at(ctx, attrs.timestamp) {
        Fork::Amsterdam => 6,
        Fork::Osaka => 5,
        Fork::Prague => 4,
        _ => 3,
    };
    envelope_json(&built, version)
}

async fn new_payload(ctx: &RpcContext, method: &str, version: u8, params: Params<'_>) -> Answer {
    let start = Instant::now();
    let mut seq = params.sequence();
    let (payload, bal_bytes) = match version {
        1 | 2 => {
            // The fork first (-38005 for a later payload, whatever its fields), then the
            // structure the fork takes.
            let raw: Value = param(&mut seq, "executionPayload")?;
            let malformed = |e: serde_json::Error| {
                ErrorObjectOwned::from(RpcError::InvalidParams(format!("executionPayload: {e}")))
            };
            let v1: ExecutionPayloadV1 = serde_json::from_value(raw.clone()).map_err(malformed)?;
            check_fork(method, Versioned::NewPayload, version, fork_at(ctx, v1.timestamp))?;
            if version == 1 && raw.get("withdrawals").is_some() {
                return Err(malformed(serde::de::Error::custom(
                    "withdrawals in ExecutionPayloadV1",
                )));
            }
            let p: ExecutionPayloadInputV2 = serde_json::from_value(raw).map_err(malformed)?;
            let payload = match p.withdrawals {
                Some(withdrawals) => ExecutionPayload::V2(ExecutionPayloadV2 {
                    payload_inner: p.execution_payload,
                    withdrawals,
                }),
                None => ExecutionPayload::V1(p.execution_payload),
            };
            (payload, None)
        }
        3 | 4 => {
            (ExecutionPayload::V3(param::<ExecutionPayloadV3>(&mut seq, "executionPayload")?), None)
        }
        _ => {
            let p: ExecutionPayloadV4 = param(&mut seq, "executionPayload")?;
            let bal = p.block_access_list.clone();
            (ExecutionPayload::V4(p), Some(bal))
        }
    };
    let cancun = if version >= 3 {
        let versioned_hashes: Vec<B256> = param(&mut seq, "expectedBlobVersionedHashes")?;
        let beacon_root: B256 = param(&mut seq, "parentBeaconBlockRoot")?;
        Some(CancunPayloadFields::new(beacon_root, versioned_hashes))
    } else {
        None
    };
    let requests: Option<Requests> =
        if version >= 4 { Some(param::<Requests>(&mut seq, "executionRequests")?) } else { None };
    let fork = fork_at(ctx, payload.timestamp());
    check_fork(method, Versioned::NewPayload, version, fork)?;
    // engine_newPayloadV2: ExecutionPayloadV1 before Shanghai, V2 from it; -32602 otherwise.
    if version == 2 && (fork >= Fork::Shanghai) != payload.withdrawals().is_some() {
        let what = if fork >= Fork::Shanghai { "missing" } else { "present" };
        return Err(RpcError::InvalidParams(format!(
            "executionPayload: withdrawals {what} for a {fork:?} payload"
        ))
        .into());
    }
    let expected_hash = payload.block_hash();
    let versioned_hashes = cancun.as_ref().map(|c| c.versioned_hashes.clone()).unwrap_or_default();
    let sidecar = match (cancun, requests) {
        (Some(cancun), Some(r)) => ExecutionPayloadSidecar::v4(cancun, PraguePayloadFields::new(r)),
        (Some(cancun), None) => ExecutionPayloadSidecar::v3(cancun),
        (None, _) => ExecutionPayloadSidecar::none(),
    };
    let invalid = |reason: String| {
        Ok(json!({"status": "INVALID", "latestValidHash": null, "validationError": reason}))
    };
    let block: Block<TxEnvelope> = match payload.try_into_block_with_sidecar(&sidecar) {
        Ok(b) => b,
        Err(e) => return invalid(format!("malformed payload: {e}")),
    };
    let hash = block.header.hash_slow();
    if hash != expected_hash {
        let reason = format!("blockhash mismatch: payload says {expected_hash}, block is {hash}");
        if version == 1 {
            // Paris: its own status (later versions fold it into INVALID).
            return Ok(json!({
                "status": "INVALID_BLOCK_HASH", "latestValidHash": null, "validationError": reason
            }));
        }
        return invalid(reason);
    }
    let blob_hashes: Vec<B256> = block.body.blob_versioned_hashes_iter().copied().collect();
    if blob_hashes != versioned_hashes {
        return invalid("blob versioned hashes do not match the block's blob transactions".into());
    }
    let bal = match &bal_bytes {
        Some(bytes) => match BlockAccessList::decode(&mut &bytes[..]) {
            Ok(bal) => Some(bal),
            Err(e) => return invalid(format!("blockAccessList does not decode: {e}")),
        },
        None => None,
    };
    let payload = NewPayload {
        rlp_len: block.length(),
        block,
        bal,
        bal_bytes: bal_bytes.as_ref().map_or(0, |b| b.len()),
        received: start,
    };
    let status = ctx.engine.new_payload(payload).await.map_err(engine_error)?;
    Ok(status_json(&status))
}

/// One payload body of canonical block `number` (`null` when the store lacks it): withdrawals
/// `null` before Shanghai; with `version` 2 the RLP of the block access list, `null` before
/// Amsterdam.
fn body_json(ctx: &RpcContext, number: u64, version: u8) -> Answer {
    let (Some(header), Some(body)) = (
        ctx.provider.header_by_number(number).map_err(internal)?,
        ctx.provider.body_by_number(number).map_err(internal)?,
    ) else {
        return Ok(Value::Null);
    };
    let withdrawals = body.withdrawals.filter(|_| ctx.chain.is_shanghai(header.timestamp));
    let v1 = ExecutionPayloadBodyV1::new(withdrawals, body.transactions.iter());
    if version == 1 {
        return Ok(json!(v1));
    }
    let bal = if ctx.chain.is_amsterdam(header.timestamp) {
        ctx.provider
            .block_access_list(number)
            .map_err(internal)?
            .map(|bal| Bytes::from(alloy_rlp::encode(&bal)))
    } else {
        None
    };
    Ok(json!(ExecutionPayloadBodyV2 { block_access_list: bal, ..v1.into() }))
}

fn too_large(count: u64) -> ErrorObjectOwned {
    error(-38004, format!("Too large request: {count} bodies, at most {MAX_PAYLOAD_BODIES}"))
}

/// `engine_getPayloadBodiesByHashV{version}(hashes)`: the bodies in the order asked, `null`
/// for a block this node does not hold on its canonical chain.
fn bodies_by_hash(ctx: &RpcContext, version: u8, params: Params<'_>) -> Answer {
    let mut seq = params.sequence();
    let hashes: Vec<B256> = param(&mut seq, "blockHashes")?;
    if hashes.len() as u64 > MAX_PAYLOAD_BODIES {
        return Err(too_large(hashes.len() as u64));
    }
    let mut bodies = Vec::with_capacity(hashes.len());
    for hash in &hashes {
        bodies.push(match ctx.provider.block_number(hash).map_err(internal)? {
            Some(number) => body_json(ctx, number, version)?,
            None => Value::Null,
        });
    }
    Ok(Value::Array(bodies))
}

/// `engine_getPayloadBodiesByRangeV{version}(start, count)`: the canonical bodies from `start`,
/// `null` for one the store lacks, and none past the head (no trailing `null`s).
fn bodies_by_range(ctx: &RpcContext, version: u8, params: Params<'_>) -> Answer {
    let mut seq = params.sequence();
    let start: U64 = param(&mut seq, "start")?;
    let count: U64 = param(&mut seq, "count")?;
    let (start, count) = (start.to::<u64>(), count.to::<u64>());
    if start < 1 || count < 1 {
        return Err(RpcError::InvalidParams(format!(
            "start and count must be at least 1 (start {start}, count {count})"
        ))
        .into());
    }
    if count > MAX_PAYLOAD_BODIES {
        return Err(too_large(count));
    }
    let head = ctx.provider.best_block().map_err(internal)?.map_or(0, |(number, _)| number);
    let last = start.saturating_add(count - 1).min(head);
    (start..=last)
        .map(|number| body_json(ctx, number, version))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

/// `engine_getBlobsV{version}(versionedHashes)` from the pool's sidecars. V1 (Cancun–Prague;
/// -38005 once the head is at Osaka): `{blob, proof}` per hash, `null` for a blob the pool
/// does not hold with one proof a blob. V2: `{blob, proofs}` (the cell proofs) per hash, or
/// `null` as a whole when any blob is missing or held without cell proofs.
fn get_blobs(ctx: &RpcContext, version: u8, params: Params<'_>) -> Answer {
    use alloy_eips::eip7594::{BlobTransactionSidecarVariant as Sidecar, CELLS_PER_EXT_BLOB};
    let mut seq = params.sequence();
    let hashes: Vec<B256> = param(&mut seq, "versionedHashes")?;
    if hashes.len() > MAX_BLOB_HASHES {
        return Err(error(
            -38004,
            format!("Too large request: {} blobs, at most {MAX_BLOB_HASHES}", hashes.len()),
        ));
    }
    let head = ctx
        .provider
        .header_by_number(ctx.forkchoice().head.0)
        .map_err(internal)?
        .map_or(0, |h| h.timestamp);
    if version == 1 && ctx.chain.is_osaka(head) {
        return Err(unsupported_fork("engine_getBlobsV1", fork_at(ctx, head)));
    }
    let mut out = Vec::with_capacity(hashes.len());
    for hash in &hashes {
        let held = ctx.pool.blob(hash);
        let entry = match (held.as_ref().map(|(s, i)| (&**s, *i)), version) {
            (Some((Sidecar::Eip4844(s), i)), 1) => {
                json!({"blob": s.blobs[i], "proof": s.proofs[i]})
            }
            (Some((Sidecar::Eip7594(s), i)), 2) => json!({
                "blob": s.blobs[i],
                "proofs": s.cell_proofs[i * CELLS_PER_EXT_BLOB..(i + 1) * CELLS_PER_EXT_BLOB],
            }),
            (_, 1) => Value::Null,
            _ => return Ok(Value::Null),
        };
        out.push(entry);
    }
    Ok(Value::Array(out))
}
