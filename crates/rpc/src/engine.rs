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
//! The API is a typed trait, [`EngineApi`] (`#[rpc(server, client)]`, reth's shape): each
//! versioned method with the alloy types of its parameters and answer; [`EngineRpc`] serves it.
//! The handlers check the request's shape (fork, version, block hash, blob hashes), then hand
//! it to the engine task through its [`gigagas_engine_primitives::EngineHandle`] and await the answer: no
//! handler executes a block. `engine_newPayloadV1/V2` take the payload as raw JSON: their
//! version rules (the fork first, then which structure that fork takes) need its fields.

use crate::{RpcContext, RpcError};
use alloy_consensus::{Block, TxEnvelope};
use alloy_eips::{
    eip4844::{BlobAndProofV1, BlobAndProofV2},
    eip7685::Requests,
};
use alloy_primitives::{Bytes, B256, U64};
use alloy_rlp::{Decodable, Encodable};
use alloy_rpc_types_engine::{
    BlobsBundleV1, BlobsBundleV2, CancunPayloadFields, ExecutionPayload, ExecutionPayloadBodyV1,
    ExecutionPayloadBodyV2, ExecutionPayloadEnvelopeV2, ExecutionPayloadEnvelopeV3,
    ExecutionPayloadEnvelopeV4, ExecutionPayloadEnvelopeV5, ExecutionPayloadEnvelopeV6,
    ExecutionPayloadFieldV2, ExecutionPayloadSidecar, ExecutionPayloadV1, ExecutionPayloadV2,
    ExecutionPayloadV3, ExecutionPayloadV4, ForkchoiceState, ForkchoiceUpdated,
    PayloadAttributes as EnginePayloadAttributes, PayloadId, PayloadStatus as EnginePayloadStatus,
    PayloadStatusEnum, PraguePayloadFields,
};
use gigagas_bal::BlockAccessList;
use gigagas_engine_primitives::{
    message::{BuildRequest, Candidates, ForkchoiceState as EngineForkchoice, NewPayload},
    EngineError, PayloadStatus,
};
use gigagas_payload::{BuiltPayload, PayloadAttributes};
use gigagas_storage_api::{BlockAccessListReader, BlockNumReader, BlockReader, HeaderProvider};
use jsonrpsee::{core::RpcResult, proc_macros::rpc, types::ErrorObjectOwned};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::{sync::Arc, time::Instant};

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

/// What `engine_getClientVersionV1` answers (execution-apis `ClientVersionV1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientVersion {
    /// Two letters naming the client (`GG`).
    pub code: String,
    /// The client's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The first four bytes of its commit, hex.
    pub commit: String,
}

/// A payload's verdict (execution-apis `PayloadStatusV1`): `VALID`, `INVALID`, `SYNCING`, or,
/// from `engine_newPayloadV1` only, `INVALID_BLOCK_HASH`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PayloadStatusV1 {
    /// The status.
    pub status: String,
    /// The latest valid ancestor, when known.
    pub latest_valid_hash: Option<B256>,
    /// Why the payload is invalid.
    pub validation_error: Option<String>,
}

impl PayloadStatusV1 {
    fn invalid(reason: String) -> Self {
        Self { status: "INVALID".into(), latest_valid_hash: None, validation_error: Some(reason) }
    }
}

impl From<&PayloadStatus> for PayloadStatusV1 {
    fn from(status: &PayloadStatus) -> Self {
        let engine = engine_status(status);
        Self {
            status: engine.status.as_str().to_string(),
            latest_valid_hash: engine.latest_valid_hash,
            validation_error: engine.status.validation_error().map(str::to_string),
        }
    }
}

/// The Engine API (execution-apis `src/engine/`), typed: parameters and answers as the spec's
/// objects (alloy's types). See the module documentation for the errors.
#[rpc(server, client, namespace = "engine")]
pub trait EngineApi {
    /// The methods both sides serve (the consensus client's list is not used).
    #[method(name = "exchangeCapabilities")]
    fn exchange_capabilities(&self, capabilities: Vec<String>) -> RpcResult<Vec<String>>;

    /// This client's name, version and commit (the caller's own, `client`, is not used).
    #[method(name = "getClientVersionV1")]
    fn get_client_version_v1(&self, client: Option<Value>) -> RpcResult<Vec<ClientVersion>>;

    /// Paris: head, safe and finalized; attributes without withdrawals.
    #[method(name = "forkchoiceUpdatedV1")]
    async fn forkchoice_updated_v1(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated>;

    /// Shanghai: attributes with withdrawals.
    #[method(name = "forkchoiceUpdatedV2")]
    async fn forkchoice_updated_v2(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated>;

    /// Cancun to Osaka: attributes with the parent beacon block root.
    #[method(name = "forkchoiceUpdatedV3")]
    async fn forkchoice_updated_v3(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated>;

    /// Amsterdam: attributes with the slot number; optionally the consensus client's custody
    /// (EIP-8070: the 128 cell columns it samples, a 16-byte bitmap as geth 1.17.10 takes it).
    /// gigagas keeps whole blobs and fetches whole blobs (columns 0..63) whatever the custody,
    /// so every column is available to its peers; the bitmap is checked and logged.
    #[method(name = "forkchoiceUpdatedV4")]
    async fn forkchoice_updated_v4(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
        custody: Option<alloy_primitives::B128>,
    ) -> RpcResult<ForkchoiceUpdated>;

    /// Paris: an `ExecutionPayloadV1` (withdrawals: -32602, after the fork's check).
    #[method(name = "newPayloadV1")]
    async fn new_payload_v1(&self, payload: PayloadInputV1V2) -> RpcResult<PayloadStatusV1>;

    /// Shanghai: an `ExecutionPayloadV1` before Shanghai, `V2` from it (-32602 otherwise).
    #[method(name = "newPayloadV2")]
    async fn new_payload_v2(&self, payload: PayloadInputV1V2) -> RpcResult<PayloadStatusV1>;

    /// Cancun: an `ExecutionPayloadV3`, the blob versioned hashes, the parent beacon root.
    #[method(name = "newPayloadV3")]
    async fn new_payload_v3(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
    ) -> RpcResult<PayloadStatusV1>;

    /// Prague and Osaka: V3's and the EIP-7685 execution requests.
    #[method(name = "newPayloadV4")]
    async fn new_payload_v4(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatusV1>;

    /// Amsterdam: an `ExecutionPayloadV4` (with its EIP-7928 block access list), V4's rest.
    #[method(name = "newPayloadV5")]
    async fn new_payload_v5(
        &self,
        payload: ExecutionPayloadV4,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatusV1>;

    /// Paris: the payload built under `payload_id`.
    #[method(name = "getPayloadV1")]
    async fn get_payload_v1(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadV1>;

    /// Shanghai: with the block value.
    #[method(name = "getPayloadV2")]
    async fn get_payload_v2(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV2>;

    /// Cancun: with the blobs bundle (one KZG proof a blob).
    #[method(name = "getPayloadV3")]
    async fn get_payload_v3(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV3>;

    /// Prague: with the execution requests.
    #[method(name = "getPayloadV4")]
    async fn get_payload_v4(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV4>;

    /// Osaka: the blobs bundle with EIP-7594 cell proofs.
    #[method(name = "getPayloadV5")]
    async fn get_payload_v5(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV5>;

    /// Amsterdam: an `ExecutionPayloadV4`, with the block access list.
    #[method(name = "getPayloadV6")]
    async fn get_payload_v6(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV6>;

    /// Canonical bodies by hash (`null` for a block not held).
    #[method(name = "getPayloadBodiesByHashV1", blocking)]
    fn get_payload_bodies_by_hash_v1(
        &self,
        block_hashes: Vec<B256>,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV1>>>;

    /// As V1, with each Amsterdam block's access list.
    #[method(name = "getPayloadBodiesByHashV2", blocking)]
    fn get_payload_bodies_by_hash_v2(
        &self,
        block_hashes: Vec<B256>,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>>;

    /// Canonical bodies from `start`, `count` at most, none past the head.
    #[method(name = "getPayloadBodiesByRangeV1", blocking)]
    fn get_payload_bodies_by_range_v1(
        &self,
        start: U64,
        count: U64,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV1>>>;

    /// As V1, with each Amsterdam block's access list.
    #[method(name = "getPayloadBodiesByRangeV2", blocking)]
    fn get_payload_bodies_by_range_v2(
        &self,
        start: U64,
        count: U64,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>>;

    /// Cancun to Prague: the pool's blobs with their KZG proofs.
    #[method(name = "getBlobsV1")]
    fn get_blobs_v1(&self, versioned_hashes: Vec<B256>) -> RpcResult<Vec<Option<BlobAndProofV1>>>;

    /// Osaka: the pool's blobs with their cell proofs, all or none.
    #[method(name = "getBlobsV2")]
    fn get_blobs_v2(&self, versioned_hashes: Vec<B256>) -> RpcResult<Option<Vec<BlobAndProofV2>>>;
}

/// The `testing_` namespace (execution-apis `src/testing`).
#[rpc(server, client, namespace = "testing")]
pub trait TestingApi {
    /// Builds a block on `parent_hash` from exactly the given raw transactions (any that cannot
    /// be included fails the call, -32000) or, with `null`, from the pool; nothing is
    /// imported. Answers the `engine_getPayload` envelope of the block's fork.
    #[method(name = "buildBlockV1")]
    async fn build_block_v1(
        &self,
        parent_hash: B256,
        payload_attributes: EnginePayloadAttributes,
        transactions: Option<Vec<Bytes>>,
        extra_data: Option<Bytes>,
    ) -> RpcResult<PayloadEnvelope>;
}

/// A `engine_getPayload` answer of any version (what `testing_buildBlockV1` answers).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PayloadEnvelope {
    /// Amsterdam.
    V6(ExecutionPayloadEnvelopeV6),
    /// Osaka.
    V5(ExecutionPayloadEnvelopeV5),
    /// Prague.
    V4(ExecutionPayloadEnvelopeV4),
    /// Cancun.
    V3(ExecutionPayloadEnvelopeV3),
}

/// Serves [`EngineApi`] and [`TestingApi`] over the node's context.
#[derive(Debug, Clone)]
pub struct EngineRpc {
    ctx: Arc<RpcContext>,
}

impl EngineRpc {
    /// The Engine API over `ctx`.
    pub fn new(ctx: Arc<RpcContext>) -> Self {
        Self { ctx }
    }
}

#[jsonrpsee::core::async_trait]
impl EngineApiServer for EngineRpc {
    fn exchange_capabilities(&self, _capabilities: Vec<String>) -> RpcResult<Vec<String>> {
        Ok(CAPABILITIES.iter().map(|m| m.to_string()).collect())
    }

    fn get_client_version_v1(&self, _client: Option<Value>) -> RpcResult<Vec<ClientVersion>> {
        let commit = option_env!("GIGAGAS_GIT_COMMIT").unwrap_or("00000000");
        Ok(vec![ClientVersion {
            code: "GG".into(),
            name: "gigagas".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            commit: format!("0x{}", &commit[..commit.len().min(8)]),
        }])
    }

    async fn forkchoice_updated_v1(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated> {
        forkchoice_updated(&self.ctx, "engine_forkchoiceUpdatedV1", 1, state, attributes).await
    }

    async fn forkchoice_updated_v2(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated> {
        forkchoice_updated(&self.ctx, "engine_forkchoiceUpdatedV2", 2, state, attributes).await
    }

    async fn forkchoice_updated_v3(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
    ) -> RpcResult<ForkchoiceUpdated> {
        forkchoice_updated(&self.ctx, "engine_forkchoiceUpdatedV3", 3, state, attributes).await
    }

    async fn forkchoice_updated_v4(
        &self,
        state: ForkchoiceState,
        attributes: Option<EnginePayloadAttributes>,
        custody: Option<alloy_primitives::B128>,
    ) -> RpcResult<ForkchoiceUpdated> {
        if let Some(custody) = custody {
            let columns: u32 = custody.iter().map(|b| b.count_ones()).sum();
            tracing::debug!(target: "rpc::engine", %custody, columns, "custody declared (whole blobs are kept and fetched)");
        }
        forkchoice_updated(&self.ctx, "engine_forkchoiceUpdatedV4", 4, state, attributes).await
    }

    async fn new_payload_v1(&self, payload: PayloadInputV1V2) -> RpcResult<PayloadStatusV1> {
        let payload = payload_v1_v2(&self.ctx, "engine_newPayloadV1", 1, payload)?;
        new_payload(&self.ctx, "engine_newPayloadV1", 1, payload, None, None, None).await
    }

    async fn new_payload_v2(&self, payload: PayloadInputV1V2) -> RpcResult<PayloadStatusV1> {
        let payload = payload_v1_v2(&self.ctx, "engine_newPayloadV2", 2, payload)?;
        new_payload(&self.ctx, "engine_newPayloadV2", 2, payload, None, None, None).await
    }

    async fn new_payload_v3(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
    ) -> RpcResult<PayloadStatusV1> {
        let cancun = CancunPayloadFields::new(parent_beacon_block_root, versioned_hashes);
        let payload = ExecutionPayload::V3(payload);
        new_payload(&self.ctx, "engine_newPayloadV3", 3, payload, None, Some(cancun), None).await
    }

    async fn new_payload_v4(
        &self,
        payload: ExecutionPayloadV3,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatusV1> {
        let cancun = CancunPayloadFields::new(parent_beacon_block_root, versioned_hashes);
        let (payload, requests) = (ExecutionPayload::V3(payload), Some(execution_requests));
        new_payload(&self.ctx, "engine_newPayloadV4", 4, payload, None, Some(cancun), requests)
            .await
    }

    async fn new_payload_v5(
        &self,
        payload: ExecutionPayloadV4,
        versioned_hashes: Vec<B256>,
        parent_beacon_block_root: B256,
        execution_requests: Requests,
    ) -> RpcResult<PayloadStatusV1> {
        let cancun = CancunPayloadFields::new(parent_beacon_block_root, versioned_hashes);
        let bal = Some(payload.block_access_list.clone());
        let (payload, requests) = (ExecutionPayload::V4(payload), Some(execution_requests));
        new_payload(&self.ctx, "engine_newPayloadV5", 5, payload, bal, Some(cancun), requests).await
    }

    async fn get_payload_v1(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadV1> {
        let built = get_payload(&self.ctx, "engine_getPayloadV1", 1, payload_id).await?;
        Ok(ExecutionPayloadV1::from_block_unchecked(built.hash, &built.block))
    }

    async fn get_payload_v2(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV2> {
        let built = get_payload(&self.ctx, "engine_getPayloadV2", 2, payload_id).await?;
        Ok(ExecutionPayloadEnvelopeV2 {
            execution_payload: ExecutionPayloadFieldV2::from_block_unchecked(
                built.hash,
                &built.block,
            ),
            block_value: built.block_value,
        })
    }

    async fn get_payload_v3(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV3> {
        let built = get_payload(&self.ctx, "engine_getPayloadV3", 3, payload_id).await?;
        envelope_v3(&built)
    }

    async fn get_payload_v4(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV4> {
        let built = get_payload(&self.ctx, "engine_getPayloadV4", 4, payload_id).await?;
        envelope_v4(&built)
    }

    async fn get_payload_v5(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV5> {
        let built = get_payload(&self.ctx, "engine_getPayloadV5", 5, payload_id).await?;
        envelope_v5(&built)
    }

    async fn get_payload_v6(&self, payload_id: PayloadId) -> RpcResult<ExecutionPayloadEnvelopeV6> {
        let built = get_payload(&self.ctx, "engine_getPayloadV6", 6, payload_id).await?;
        envelope_v6(&built)
    }

    fn get_payload_bodies_by_hash_v1(
        &self,
        block_hashes: Vec<B256>,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV1>>> {
        bodies_by_hash(&self.ctx, &block_hashes, false).map(|b| b.into_iter().map(v1).collect())
    }

    fn get_payload_bodies_by_hash_v2(
        &self,
        block_hashes: Vec<B256>,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>> {
        bodies_by_hash(&self.ctx, &block_hashes, true)
    }

    fn get_payload_bodies_by_range_v1(
        &self,
        start: U64,
        count: U64,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV1>>> {
        bodies_by_range(&self.ctx, start, count, false).map(|b| b.into_iter().map(v1).collect())
    }

    fn get_payload_bodies_by_range_v2(
        &self,
        start: U64,
        count: U64,
    ) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>> {
        bodies_by_range(&self.ctx, start, count, true)
    }

    fn get_blobs_v1(&self, versioned_hashes: Vec<B256>) -> RpcResult<Vec<Option<BlobAndProofV1>>> {
        use alloy_eips::eip7594::BlobTransactionSidecarVariant as Sidecar;
        check_blob_request(&self.ctx, &versioned_hashes, 1)?;
        Ok(versioned_hashes
            .iter()
            .map(|hash| match self.ctx.pool.blob(hash) {
                Some((sidecar, i)) => match &*sidecar {
                    Sidecar::Eip4844(s) => {
                        Some(BlobAndProofV1 { blob: Box::new(s.blobs[i]), proof: s.proofs[i] })
                    }
                    Sidecar::Eip7594(_) => None,
                },
                None => None,
            })
            .collect())
    }

    fn get_blobs_v2(&self, versioned_hashes: Vec<B256>) -> RpcResult<Option<Vec<BlobAndProofV2>>> {
        use alloy_eips::eip7594::{BlobTransactionSidecarVariant as Sidecar, CELLS_PER_EXT_BLOB};
        check_blob_request(&self.ctx, &versioned_hashes, 2)?;
        let mut out = Vec::with_capacity(versioned_hashes.len());
        for hash in &versioned_hashes {
            let Some((sidecar, i)) = self.ctx.pool.blob(hash) else { return Ok(None) };
            let Sidecar::Eip7594(s) = &*sidecar else { return Ok(None) };
            out.push(BlobAndProofV2 {
                blob: Box::new(s.blobs[i]),
                proofs: s.cell_proofs[i * CELLS_PER_EXT_BLOB..(i + 1) * CELLS_PER_EXT_BLOB]
                    .to_vec(),
            });
        }
        Ok(Some(out))
    }
}

#[jsonrpsee::core::async_trait]
impl TestingApiServer for EngineRpc {
    async fn build_block_v1(
        &self,
        parent_hash: B256,
        payload_attributes: EnginePayloadAttributes,
        transactions: Option<Vec<Bytes>>,
        extra_data: Option<Bytes>,
    ) -> RpcResult<PayloadEnvelope> {
        testing_build_block(&self.ctx, parent_hash, payload_attributes, transactions, extra_data)
            .await
    }
}

/// The methods of the authenticated port ([`EngineApi`]).
pub(crate) fn module(ctx: Arc<RpcContext>) -> jsonrpsee::RpcModule<EngineRpc> {
    EngineApiServer::into_rpc(EngineRpc::new(ctx))
}

/// The `testing_` namespace, served with the public methods.
pub(crate) fn testing_module(ctx: Arc<RpcContext>) -> jsonrpsee::RpcModule<EngineRpc> {
    TestingApiServer::into_rpc(EngineRpc::new(ctx))
}

fn invalid_params(reason: String) -> ErrorObjectOwned {
    RpcError::InvalidParams(reason).into()
}

/// The engine's verdict as the Engine API's payload status.
fn engine_status(status: &PayloadStatus) -> EnginePayloadStatus {
    match status {
        PayloadStatus::Valid(h) => EnginePayloadStatus::new(PayloadStatusEnum::Valid, Some(*h)),
        PayloadStatus::Invalid { latest_valid_hash, reason } => EnginePayloadStatus::new(
            PayloadStatusEnum::Invalid { validation_error: reason.clone() },
            *latest_valid_hash,
        ),
        PayloadStatus::Syncing => EnginePayloadStatus::new(PayloadStatusEnum::Syncing, None),
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
    state: ForkchoiceState,
    attrs: Option<EnginePayloadAttributes>,
) -> RpcResult<ForkchoiceUpdated> {
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
    Ok(ForkchoiceUpdated {
        payload_status: engine_status(&answer.status),
        payload_id: answer.payload_id.map(PayloadId),
    })
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

/// `engine_newPayloadV1/V2`'s parameter: an `ExecutionPayloadV1`, with `withdrawals` when
/// present. Unlike alloy's `ExecutionPayloadInputV2` it tolerates the fields of later payloads,
/// so that a later fork's payload is answered -38005 (the spec checks the fork first) rather
/// than -32602.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PayloadInputV1V2 {
    /// The V1 fields.
    #[serde(flatten)]
    pub execution_payload: ExecutionPayloadV1,
    /// The withdrawals (Shanghai on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withdrawals: Option<Vec<alloy_eips::eip4895::Withdrawal>>,
}

/// `engine_newPayloadV1/V2`'s payload: the fork first (-38005 for a later payload, whatever its
/// fields), then the structure the fork takes (-32602 otherwise: withdrawals in V1; V2's rule,
/// withdrawals from Shanghai only, is checked with the block).
fn payload_v1_v2(
    ctx: &RpcContext,
    method: &str,
    version: u8,
    input: PayloadInputV1V2,
) -> RpcResult<ExecutionPayload> {
    let PayloadInputV1V2 { execution_payload, withdrawals } = input;
    check_fork(method, Versioned::NewPayload, version, fork_at(ctx, execution_payload.timestamp))?;
    Ok(match withdrawals {
        Some(_) if version == 1 => {
            return Err(invalid_params(
                "executionPayload: withdrawals in ExecutionPayloadV1".into(),
            ))
        }
        Some(withdrawals) => ExecutionPayload::V2(ExecutionPayloadV2 {
            payload_inner: execution_payload,
            withdrawals,
        }),
        None => ExecutionPayload::V1(execution_payload),
    })
}

/// `engine_newPayloadV{version}`: the payload checked against its fork and version, made a
/// block (INVALID when it is malformed, its hash or blob hashes do not match, or its BAL does
/// not decode), then judged by the engine.
async fn new_payload(
    ctx: &RpcContext,
    method: &str,
    version: u8,
    payload: ExecutionPayload,
    bal_bytes: Option<Bytes>,
    cancun: Option<CancunPayloadFields>,
    requests: Option<Requests>,
) -> RpcResult<PayloadStatusV1> {
    let start = Instant::now();
    let fork = fork_at(ctx, payload.timestamp());
    check_fork(method, Versioned::NewPayload, version, fork)?;
    // engine_newPayloadV2: ExecutionPayloadV1 before Shanghai, V2 from it; -32602 otherwise.
    if version == 2 && (fork >= Fork::Shanghai) != payload.withdrawals().is_some() {
        let what = if fork >= Fork::Shanghai { "missing" } else { "present" };
        return Err(invalid_params(format!(
            "executionPayload: withdrawals {what} for a {fork:?} payload"
        )));
    }
    let expected_hash = payload.block_hash();
    let versioned_hashes = cancun.as_ref().map(|c| c.versioned_hashes.clone()).unwrap_or_default();
    let sidecar = match (cancun, requests) {
        (Some(cancun), Some(r)) => ExecutionPayloadSidecar::v4(cancun, PraguePayloadFields::new(r)),
        (Some(cancun), None) => ExecutionPayloadSidecar::v3(cancun),
        (None, _) => ExecutionPayloadSidecar::none(),
    };
    // Kept for debug_getBadBlocks should the verdict be INVALID: the transactions are shared
    // byte buffers, so the copy is a vector of handles.
    let kept = payload.clone();
    // Called at most once, on the path that found the payload INVALID.
    let record_bad = |reason: &str| {
        if let Ok(block) = kept.try_into_block_with_sidecar::<TxEnvelope>(&sidecar) {
            ctx.bad_blocks.record(block.header.hash_slow(), block, reason.to_string());
        }
    };
    let block: Block<TxEnvelope> = match payload.try_into_block_with_sidecar(&sidecar) {
        Ok(b) => b,
        Err(e) => return Ok(PayloadStatusV1::invalid(format!("malformed payload: {e}"))),
    };
    let hash = block.header.hash_slow();
    if hash != expected_hash {
        let reason = format!("blockhash mismatch: payload says {expected_hash}, block is {hash}");
        if version == 1 {
            // Paris: its own status (later versions fold it into INVALID).
            return Ok(PayloadStatusV1 {
                status: "INVALID_BLOCK_HASH".into(),
                latest_valid_hash: None,
                validation_error: Some(reason),
            });
        }
        return Ok(PayloadStatusV1::invalid(reason));
    }
    let blob_hashes: Vec<B256> = block.body.blob_versioned_hashes_iter().copied().collect();
    if blob_hashes != versioned_hashes {
        let reason = "blob versioned hashes do not match the block's blob transactions";
        record_bad(reason);
        return Ok(PayloadStatusV1::invalid(reason.into()));
    }
    let bal = match &bal_bytes {
        Some(bytes) => match BlockAccessList::decode(&mut &bytes[..]) {
            Ok(bal) => Some(bal),
            Err(e) => {
                return Ok(PayloadStatusV1::invalid(format!(
                    "blockAccessList does not decode: {e}"
                )))
            }
        },
        None => None,
    };
    // The header's transactions root was computed from the payload's transactions by the
    // conversion above: the header check takes it instead of computing it again.
    let transactions_root = Some(block.header.transactions_root);
    let payload = NewPayload {
        rlp_len: block.length(),
        transactions_root,
        block,
        bal,
        bal_bytes: bal_bytes.as_ref().map_or(0, |b| b.len()),
        received: start,
    };
    let status = ctx.engine.new_payload(payload).await.map_err(engine_error)?;
    if let gigagas_engine_primitives::PayloadStatus::Invalid { reason, .. } = &status {
        record_bad(reason);
    }
    Ok(PayloadStatusV1::from(&status))
}

/// The payload built under `id`, once its build (a job off the engine thread) has finished,
/// checked against the method's fork: -38001 for an id never given or no longer kept, an
/// internal error for a build that failed.
async fn get_payload(
    ctx: &RpcContext,
    method: &str,
    version: u8,
    id: PayloadId,
) -> RpcResult<Arc<BuiltPayload>> {
    let built = ctx
        .engine
        .payloads()
        .resolve(&id.0)
        .await
        .ok_or_else(|| error(-38001, "Unknown payload"))?
        .map_err(|e| error(-32603, e.to_string()))?;
    check_fork(method, Versioned::GetPayload, version, fork_at(ctx, built.block.header.timestamp))?;
    Ok(built)
}

/// The commitments, proofs and blobs of `built`'s blob transactions in block order: one KZG
/// proof per blob or, with `cell_proofs` (EIP-7594), the blob's cell proofs.
///
/// # Errors
/// -32603 when a blob transaction's sidecar is missing or of the other form (the builder
/// takes only those it holds in the block's form: a fault of the node).
type Bundle = (
    Vec<alloy_eips::eip4844::Bytes48>,
    Vec<alloy_eips::eip4844::Bytes48>,
    Vec<alloy_eips::eip4844::Blob>,
);

fn blobs_bundle(built: &BuiltPayload, cell_proofs: bool) -> RpcResult<Bundle> {
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
    let (mut commitments, mut proofs, mut blobs) = (Vec::new(), Vec::new(), Vec::new());
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
    Ok((commitments, proofs, blobs))
}

fn envelope_v3(built: &BuiltPayload) -> RpcResult<ExecutionPayloadEnvelopeV3> {
    let (commitments, proofs, blobs) = blobs_bundle(built, false)?;
    Ok(ExecutionPayloadEnvelopeV3 {
        execution_payload: ExecutionPayloadV3::from_block_unchecked(built.hash, &built.block),
        block_value: built.block_value,
        blobs_bundle: BlobsBundleV1 { commitments, proofs, blobs },
        should_override_builder: false,
    })
}

fn envelope_v4(built: &BuiltPayload) -> RpcResult<ExecutionPayloadEnvelopeV4> {
    Ok(ExecutionPayloadEnvelopeV4 {
        envelope_inner: envelope_v3(built)?,
        execution_requests: built.requests.clone(),
    })
}

fn envelope_v5(built: &BuiltPayload) -> RpcResult<ExecutionPayloadEnvelopeV5> {
    let (commitments, proofs, blobs) = blobs_bundle(built, true)?;
    Ok(ExecutionPayloadEnvelopeV5 {
        execution_payload: ExecutionPayloadV3::from_block_unchecked(built.hash, &built.block),
        block_value: built.block_value,
        blobs_bundle: BlobsBundleV2 { commitments, proofs, blobs },
        should_override_builder: false,
        execution_requests: built.requests.clone(),
    })
}

fn envelope_v6(built: &BuiltPayload) -> RpcResult<ExecutionPayloadEnvelopeV6> {
    let (commitments, proofs, blobs) = blobs_bundle(built, true)?;
    let bal = Bytes::from(alloy_rlp::encode(&built.bal));
    Ok(ExecutionPayloadEnvelopeV6 {
        execution_payload: ExecutionPayloadV4::from_block_unchecked_with_bal(
            built.hash,
            &built.block,
            bal,
        ),
        block_value: built.block_value,
        blobs_bundle: BlobsBundleV2 { commitments, proofs, blobs },
        should_override_builder: false,
        execution_requests: built.requests.clone(),
    })
}

/// The gas limit `testing_buildBlockV1` moves toward: geth's default miner gas ceiling.
const TESTING_GAS_CEILING: u64 = 60_000_000;

/// `testing_buildBlockV1` ([`TestingApi::build_block_v1`]).
async fn testing_build_block(
    ctx: &RpcContext,
    parent: B256,
    attrs: EnginePayloadAttributes,
    raw: Option<Vec<Bytes>>,
    extra_data: Option<Bytes>,
) -> RpcResult<PayloadEnvelope> {
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
    Ok(match fork_at(ctx, attrs.timestamp) {
        Fork::Amsterdam => PayloadEnvelope::V6(envelope_v6(&built)?),
        Fork::Osaka => PayloadEnvelope::V5(envelope_v5(&built)?),
        Fork::Prague => PayloadEnvelope::V4(envelope_v4(&built)?),
        _ => PayloadEnvelope::V3(envelope_v3(&built)?),
    })
}

/// One payload body of canonical block `number` (`None` when the store lacks it): withdrawals
/// `None` before Shanghai; with `with_bal` the RLP of the block access list, `None` before
/// Amsterdam.
fn body(
    ctx: &RpcContext,
    number: u64,
    with_bal: bool,
) -> RpcResult<Option<ExecutionPayloadBodyV2>> {
    let (Some(header), Some(body)) = (
        ctx.provider.header_by_number(number).map_err(internal)?,
        ctx.provider.body_by_number(number).map_err(internal)?,
    ) else {
        return Ok(None);
    };
    let withdrawals = body.withdrawals.filter(|_| ctx.chain.is_shanghai(header.timestamp));
    let v1 = ExecutionPayloadBodyV1::new(withdrawals, body.transactions.iter());
    let bal = if with_bal && ctx.chain.is_amsterdam(header.timestamp) {
        ctx.provider
            .block_access_list(number)
            .map_err(internal)?
            .map(|bal| Bytes::from(alloy_rlp::encode(&bal)))
    } else {
        None
    };
    Ok(Some(ExecutionPayloadBodyV2 { block_access_list: bal, ..v1.into() }))
}

/// A V2 body as V1 (without the access list).
fn v1(body: Option<ExecutionPayloadBodyV2>) -> Option<ExecutionPayloadBodyV1> {
    body.map(|b| ExecutionPayloadBodyV1 {
        transactions: b.transactions,
        withdrawals: b.withdrawals,
    })
}

fn too_large(count: u64) -> ErrorObjectOwned {
    error(-38004, format!("Too large request: {count} bodies, at most {MAX_PAYLOAD_BODIES}"))
}

/// `engine_getPayloadBodiesByHashV*(hashes)`: the bodies in the order asked, `None` for a
/// block this node does not hold on its canonical chain.
fn bodies_by_hash(
    ctx: &RpcContext,
    hashes: &[B256],
    with_bal: bool,
) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>> {
    if hashes.len() as u64 > MAX_PAYLOAD_BODIES {
        return Err(too_large(hashes.len() as u64));
    }
    let mut bodies = Vec::with_capacity(hashes.len());
    for hash in hashes {
        bodies.push(match ctx.provider.block_number(hash).map_err(internal)? {
            Some(number) => body(ctx, number, with_bal)?,
            None => None,
        });
    }
    Ok(bodies)
}

/// `engine_getPayloadBodiesByRangeV*(start, count)`: the canonical bodies from `start`, `None`
/// for one the store lacks, and none past the head (no trailing `null`s).
fn bodies_by_range(
    ctx: &RpcContext,
    start: U64,
    count: U64,
    with_bal: bool,
) -> RpcResult<Vec<Option<ExecutionPayloadBodyV2>>> {
    let (start, count) = (start.to::<u64>(), count.to::<u64>());
    if start < 1 || count < 1 {
        return Err(invalid_params(format!(
            "start and count must be at least 1 (start {start}, count {count})"
        )));
    }
    if count > MAX_PAYLOAD_BODIES {
        return Err(too_large(count));
    }
    let head = ctx.provider.best_block().map_err(internal)?.map_or(0, |(number, _)| number);
    let last = start.saturating_add(count - 1).min(head);
    (start..=last).map(|number| body(ctx, number, with_bal)).collect()
}

/// The limits of `engine_getBlobsV{version}`: -38004 past [`MAX_BLOB_HASHES`]; V1 (Cancun to
/// Prague) -38005 once the head is at Osaka.
fn check_blob_request(ctx: &RpcContext, hashes: &[B256], version: u8) -> RpcResult<()> {
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
    Ok(())
}
