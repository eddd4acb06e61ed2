//! The Engine API (execution-apis `src/engine/`: paris … amsterdam), served behind JWT:
//! `engine_exchangeCapabilities`, `engine_getClientVersionV1`, `engine_newPayloadV3–V5`,
//! `engine_forkchoiceUpdatedV1–V4` (with payload attributes: a payload is built from the
//! pool), `engine_getPayloadV3–V6`.
//!
//! Error codes: -38001 unknown payload, -38002 invalid forkchoice state, -38003 invalid payload
//! attributes, -38005 unsupported fork (a method version that does not match the fork of the
//! payload's timestamp), -32602 invalid params.

use crate::{RpcContext, RpcError};
use alloy_consensus::{Block, Transaction, TxEnvelope};
use alloy_eips::eip7685::Requests;
use alloy_primitives::{keccak256, Bytes, B256, B64};
use alloy_rlp::{Decodable, Encodable};
use alloy_rpc_types_engine::{
    CancunPayloadFields, ExecutionPayload, ExecutionPayloadSidecar, ExecutionPayloadV3,
    ExecutionPayloadV4, ForkchoiceState, PayloadAttributes as EnginePayloadAttributes,
    PraguePayloadFields,
};
use gigagas_bal::BlockAccessList;
use gigagas_stages::{
    BuiltPayload, CanonicalChange, ImportedBlock, PayloadAttributes, PayloadStatus,
};
use jsonrpsee::{
    types::{ErrorObjectOwned, Params},
    RpcModule,
};
use serde_json::{json, Value};
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

type Ctx = Arc<RpcContext>;
type Answer = Result<Value, ErrorObjectOwned>;

/// Payloads kept for `engine_getPayload` (oldest dropped first).
pub const KEEP_PAYLOADS: usize = 32;

/// What the Engine API did, for metrics and logs.
#[derive(Debug)]
pub enum EngineEvent<'a> {
    /// `engine_newPayload` executed a block.
    NewPayload {
        /// VALID / INVALID / SYNCING.
        status: &'static str,
        /// The block's figures when it was executed now (stage times, gas, cache, executor).
        block: Option<&'a ImportedBlock>,
        /// Gas used of the payload (gas).
        gas_used: u64,
        /// Transactions.
        transactions: usize,
        /// Size of the RLP BAL the payload carried (bytes; 0 without).
        bal_bytes: usize,
        /// The whole call: decoding, recovery, execution, state root.
        elapsed: Duration,
    },
    /// A forkchoice update changed the canonical chain.
    Canonical(&'a CanonicalChange),
    /// A payload was built.
    Built(&'a BuiltPayload),
}

/// A callback for [`EngineEvent`]s (the node's metrics).
pub struct EventHook(pub Box<dyn Fn(&EngineEvent<'_>) + Send + Sync>);

impl std::fmt::Debug for EventHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventHook")
    }
}

/// Built payloads by payload id.
#[derive(Debug, Default)]
pub struct PayloadStore(Mutex<VecDeque<(B64, Arc<BuiltPayload>)>>);

impl PayloadStore {
    fn insert(&self, id: B64, payload: BuiltPayload) {
        let mut q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        q.retain(|(i, _)| *i != id);
        if q.len() >= KEEP_PAYLOADS {
            q.pop_front();
        }
        q.push_back((id, Arc::new(payload)));
    }

    fn get(&self, id: &B64) -> Option<Arc<BuiltPayload>> {
        let q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        q.iter().find(|(i, _)| i == id).map(|(_, p)| p.clone())
    }
}

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

fn status_name(status: &PayloadStatus) -> &'static str {
    match status {
        PayloadStatus::Valid(_) => "VALID",
        PayloadStatus::Invalid { .. } => "INVALID",
        PayloadStatus::Syncing => "SYNCING",
    }
}

fn emit(ctx: &RpcContext, event: &EngineEvent<'_>) {
    if let Some(hook) = &ctx.on_event {
        (hook.0)(event);
    }
}

/// The capabilities this node serves (`engine_exchangeCapabilities`).
pub const CAPABILITIES: &[&str] = &[
    "engine_exchangeCapabilities",
    "engine_getClientVersionV1",
    "engine_forkchoiceUpdatedV1",
    "engine_forkchoiceUpdatedV2",
    "engine_forkchoiceUpdatedV3",
    "engine_forkchoiceUpdatedV4",
    "engine_newPayloadV3",
    "engine_newPayloadV4",
    "engine_newPayloadV5",
    "engine_getPayloadV3",
    "engine_getPayloadV4",
    "engine_getPayloadV5",
    "engine_getPayloadV6",
];

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
        m.register_blocking_method(name, move |params, ctx, _| {
            forkchoice_updated(&ctx, name, version, params)
        })
        .expect("registered once");
    }
    for (name, version) in
        [("engine_newPayloadV3", 3), ("engine_newPayloadV4", 4), ("engine_newPayloadV5", 5)]
    {
        m.register_blocking_method(name, move |params, ctx, _| {
            new_payload(&ctx, name, version, params)
        })
        .expect("registered once");
    }
    for (name, version) in [
        ("engine_getPayloadV3", 3),
        ("engine_getPayloadV4", 4),
        ("engine_getPayloadV5", 5),
        ("engine_getPayloadV6", 6),
    ] {
        m.register_method(name, move |params, ctx, _| get_payload(ctx, name, version, params))
            .expect("registered once");
    }
    m
}

/// The `testing_` namespace (`testing_buildBlockV1`), served with the public methods.
pub(crate) fn testing_module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    m.register_blocking_method("testing_buildBlockV1", |params, ctx, _| {
        testing_build_block(&ctx, params)
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
        (Versioned::Attributes, 1) => &[Paris],
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

/// The pool's pending transactions for a block on `parent`, best first.
fn pool_candidates(
    ctx: &RpcContext,
    parent: &alloy_consensus::Header,
) -> Vec<(TxEnvelope, alloy_primitives::Address)> {
    let base_fee = parent
        .next_block_base_fee(alloy_eips::eip1559::BaseFeeParams::ethereum())
        .unwrap_or_default();
    ctx.pool.best(&*ctx.storage, base_fee)
}

fn forkchoice_updated(ctx: &RpcContext, method: &str, version: u8, params: Params<'_>) -> Answer {
    let mut seq = params.sequence();
    let state: ForkchoiceState = param(&mut seq, "forkchoiceState")?;
    let attrs: Option<EnginePayloadAttributes> = seq.optional_next().map_err(|e| {
        ErrorObjectOwned::from(RpcError::InvalidParams(format!("payloadAttributes: {e}")))
    })?;
    if let Some(a) = &attrs {
        let missing = |field: &str| error(-32602, format!("payloadAttributes: {field} missing"));
        if version >= 3 && a.parent_beacon_block_root.is_none() {
            return Err(missing("parentBeaconBlockRoot"));
        }
        if version >= 2 && ctx.chain.is_shanghai(a.timestamp) && a.withdrawals.is_none() {
            return Err(missing("withdrawals"));
        }
        if version >= 4 && a.slot_number.is_none() {
            return Err(missing("slotNumber"));
        }
        check_fork(method, Versioned::Attributes, version, fork_at(ctx, a.timestamp))?;
    }
    let updated = ctx
        .tree
        .forkchoice_updated(
            state.head_block_hash,
            state.safe_block_hash,
            state.finalized_block_hash,
        )
        .map_err(internal)?;
    let (status, change) = updated.map_err(|e| error(-38002, e.to_string()))?;
    if !change.committed.is_empty() || !change.unwound.is_empty() {
        ctx.pool.prune(&*ctx.storage);
        emit(ctx, &EngineEvent::Canonical(&change));
    }
    let PayloadStatus::Valid(head) = status else {
        return Ok(json!({"payloadStatus": status_json(&status), "payloadId": null}));
    };
    let Some(attrs) = attrs else {
        return Ok(json!({"payloadStatus": status_json(&status), "payloadId": null}));
    };
    let head_header =
        crate::convert::StoredBlock::load(ctx, ctx.forkchoice().head.0)?.map(|b| b.header);
    let Some(head_header) = head_header else {
        return Err(internal("head block not stored"));
    };
    if attrs.timestamp <= head_header.timestamp {
        return Err(error(
            -38003,
            format!(
                "Invalid payload attributes: timestamp {} not after the head's {}",
                attrs.timestamp, head_header.timestamp
            ),
        ));
    }
    let attributes = attributes(&attrs, attrs.target_gas_limit, None);
    let id = payload_id(head, &attributes);
    let candidates = pool_candidates(ctx, &head_header);
    let built = ctx
        .tree
        .build_payload(head, &attributes, &candidates, false)
        .map_err(internal)?
        .ok_or_else(|| internal("head state unavailable"))?;
    emit(ctx, &EngineEvent::Built(&built));
    ctx.payloads.insert(id, built);
    Ok(json!({"payloadStatus": status_json(&status), "payloadId": id}))
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

/// The payload id: the first 8 bytes of keccak256 over the parent hash and the attributes.
fn payload_id(parent: B256, a: &PayloadAttributes) -> B64 {
    let mut buf = Vec::with_capacity(160);
    buf.extend_from_slice(parent.as_slice());
    buf.extend_from_slice(&a.timestamp.to_be_bytes());
    buf.extend_from_slice(a.prev_randao.as_slice());
    buf.extend_from_slice(a.suggested_fee_recipient.as_slice());
    if let Some(w) = &a.withdrawals {
        w.encode(&mut buf);
    }
    if let Some(root) = a.parent_beacon_block_root {
        buf.extend_from_slice(root.as_slice());
    }
    if let Some(slot) = a.slot_number {
        buf.extend_from_slice(&slot.to_be_bytes());
    }
    B64::from_slice(&keccak256(&buf)[..8])
}

fn get_payload(ctx: &RpcContext, method: &str, version: u8, params: Params<'_>) -> Answer {
    let mut seq = params.sequence();
    let id: B64 = param(&mut seq, "payloadId")?;
    let built = ctx.payloads.get(&id).ok_or_else(|| error(-38001, "Unknown payload"))?;
    check_fork(method, Versioned::GetPayload, version, fork_at(ctx, built.block.header.timestamp))?;
    Ok(envelope_json(&built, version))
}

/// The `engine_getPayloadV{version}` answer for `built`.
fn envelope_json(built: &BuiltPayload, version: u8) -> Value {
    let block = &built.block;
    let v3 = ExecutionPayloadV3::from_block_unchecked(built.hash, block);
    let value = built.block_value;
    let empty_v1 = json!({"commitments": [], "proofs": [], "blobs": []});
    let requests = &built.requests;
    match version {
        3 => json!({"executionPayload": v3, "blockValue": value, "blobsBundle": empty_v1,
                    "shouldOverrideBuilder": false}),
        4 | 5 => json!({"executionPayload": v3, "blockValue": value, "blobsBundle": empty_v1,
                        "shouldOverrideBuilder": false, "executionRequests": requests}),
        _ => {
            let bal = Bytes::from(alloy_rlp::encode(&built.bal));
            let v4 = ExecutionPayloadV4::from_block_unchecked_with_bal(built.hash, block, bal);
            json!({"executionPayload": v4, "blockValue": value, "blobsBundle": empty_v1,
                   "shouldOverrideBuilder": false, "executionRequests": requests})
        }
    }
}

/// The gas limit `testing_buildBlockV1` moves toward: geth's default miner gas ceiling.
const TESTING_GAS_CEILING: u64 = 60_000_000;

/// `testing_buildBlockV1(parentHash, payloadAttributes, transactions | null, extraData)`
/// (execution-apis `src/testing`): builds a block on `parentHash` from exactly the given raw
/// transactions (any that cannot be included fails the call, -32000) or, with `null`, from the
/// pool; nothing is imported. Answers the `engine_getPayload` envelope of the fork.
fn testing_build_block(ctx: &RpcContext, params: Params<'_>) -> Answer {
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
                let tx = gigagas_stages::decode_raw(&bytes).map_err(|e| failed(e.to_string()))?;
                let sender = alloy_consensus::transaction::SignerRecoverable::recover_signer(&tx)
                    .map_err(|e| failed(format!("invalid sender: {e}")))?;
                txs.push((tx, sender));
            }
            (txs, true)
        }
        None => {
            let head = crate::convert::StoredBlock::load(ctx, ctx.forkchoice().head.0)?
                .ok_or_else(|| internal("head block not stored"))?;
            (pool_candidates(ctx, &head.header), false)
        }
    };
    let target = Some(attrs.target_gas_limit.unwrap_or(TESTING_GAS_CEILING));
    let attributes = attributes(&attrs, target, Some(extra_data.unwrap_or_default()));
    let built = ctx
        .tree
        .build_payload(parent, &attributes, &candidates, require_all)
        .map_err(|e| failed(e.to_string()))?
        .ok_or_else(|| failed(format!("unknown parent {parent}")))?;
    let version = match fork_at(ctx, attrs.timestamp) {
        Fork::Amsterdam => 6,
        Fork::Osaka => 5,
        Fork::Prague => 4,
        _ => 3,
    };
    Ok(envelope_json(&built, version))
}

fn new_payload(ctx: &RpcContext, method: &str, version: u8, params: Params<'_>) -> Answer {
    let start = Instant::now();
    let mut seq = params.sequence();
    let (payload, bal_bytes) = if version >= 5 {
        let p: ExecutionPayloadV4 = param(&mut seq, "executionPayload")?;
        let bal = p.block_access_list.clone();
        (ExecutionPayload::V4(p), Some(bal))
    } else {
        let p: ExecutionPayloadV3 = param(&mut seq, "executionPayload")?;
        (ExecutionPayload::V3(p), None)
    };
    let versioned_hashes: Vec<B256> = param(&mut seq, "expectedBlobVersionedHashes")?;
    let beacon_root: B256 = param(&mut seq, "parentBeaconBlockRoot")?;
    let requests: Option<Requests> =
        if version >= 4 { Some(param::<Requests>(&mut seq, "executionRequests")?) } else { None };
    check_fork(method, Versioned::NewPayload, version, fork_at(ctx, payload.timestamp()))?;
    let expected_hash = payload.block_hash();
    let cancun = CancunPayloadFields::new(beacon_root, versioned_hashes.clone());
    let sidecar = match requests {
        Some(r) => ExecutionPayloadSidecar::v4(cancun, PraguePayloadFields::new(r)),
        None => ExecutionPayloadSidecar::v3(cancun),
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
        return invalid(format!(
            "blockhash mismatch: payload says {expected_hash}, block is {hash}"
        ));
    }
    let blob_hashes: Vec<B256> = block
        .body
        .transactions
        .iter()
        .flat_map(|tx| tx.blob_versioned_hashes().unwrap_or_default().iter().copied())
        .collect();
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
    let gas_used = block.header.gas_used;
    let transactions = block.body.transactions.len();
    let rlp_len = block.length();
    let number = block.header.number;
    let (status, executed) = ctx.tree.new_payload(block, rlp_len, bal.as_ref()).map_err(|e| {
        // Not a verdict on the block (the tree answers INVALID only for consensus reasons):
        // the consensus client gets an error and may send the payload again.
        tracing::error!(target: "engine::new_payload", number, %hash, error = %e, "payload not judged: internal error");
        internal(e)
    })?;
    emit(
        ctx,
        &EngineEvent::NewPayload {
            status: status_name(&status),
            block: executed.as_ref(),
            gas_used,
            transactions,
            bal_bytes: bal_bytes.as_ref().map_or(0, |b| b.len()),
            elapsed: start.elapsed(),
        },
    );
    Ok(status_json(&status))
}
