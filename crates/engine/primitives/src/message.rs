//! The messages the engine task receives (reth's `BeaconEngineMessage`), each answered over a
//! oneshot channel.

use crate::{EngineError, PayloadStatus};
use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{Address, B256, B64};
use gigagas_bal::BlockAccessList;
use gigagas_payload::{BuiltPayload, PayloadAttributes};
use std::{sync::Arc, time::Instant};
use tokio::sync::oneshot;

/// A payload to validate (`engine_newPayload`), decoded by the Engine API: its block hash and
/// blob versioned hashes already checked against the payload.
#[derive(Debug)]
pub struct NewPayload {
    /// The block.
    pub block: Block<TxEnvelope>,
    /// Its RLP size (bytes; EIP-7934's limit).
    pub rlp_len: usize,
    /// The root of its transactions when computed from them on the way in (the Engine API's
    /// conversion of a payload derives the header's this way), so that the header check does
    /// not compute it again; `None` for a block whose header came with it (gossip, sync).
    pub transactions_root: Option<B256>,
    /// The EIP-7928 BAL the payload carries (Amsterdam, `engine_newPayloadV5`).
    pub bal: Option<BlockAccessList>,
    /// Size of the BAL's RLP (bytes; 0 without one), for metrics.
    pub bal_bytes: usize,
    /// When the request arrived (the event's elapsed time counts from here).
    pub received: Instant,
}

/// Head, safe and finalized block hashes of a forkchoice update (zero: none / unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkchoiceState {
    /// The new head.
    pub head: B256,
    /// The safe block.
    pub safe: B256,
    /// The finalized block.
    pub finalized: B256,
}

/// The answer to a forkchoice update: the verdict on the head and, when attributes came with
/// a VALID head, the id of the payload built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkchoiceAnswer {
    /// VALID / INVALID / SYNCING.
    pub status: PayloadStatus,
    /// The payload being built, if any (its [`BuiltPayload`] is in the payload store).
    pub payload_id: Option<B64>,
}

/// Where a payload's transactions come from.
#[derive(Debug, Clone)]
pub enum Candidates {
    /// The pool's pending transactions, best first.
    Pool,
    /// Exactly these (with their senders), in this order.
    Given(Vec<(TxEnvelope, Address)>),
}

/// A payload to build and return without importing it (`testing_buildBlockV1`).
#[derive(Debug)]
pub struct BuildRequest {
    /// The parent block.
    pub parent: B256,
    /// The attributes.
    pub attributes: PayloadAttributes,
    /// The transactions.
    pub candidates: Candidates,
    /// Whether a candidate left out fails the build.
    pub require_all: bool,
}

/// A message to the engine task.
#[derive(Debug)]
pub enum EngineMessage {
    /// Validate and keep a payload.
    NewPayload {
        /// The payload.
        payload: Box<NewPayload>,
        /// The verdict, or the internal fault that prevented one.
        tx: oneshot::Sender<Result<PayloadStatus, EngineError>>,
    },
    /// Validate and keep a chain of payloads, each the child of the one before (sync's
    /// backfill: each block's state root overlaps the next one's execution).
    NewPayloads {
        /// The payloads, parent first.
        payloads: Vec<NewPayload>,
        /// Commit each VALID block that extends the head and make it the head (a node that
        /// follows its peers without a consensus client).
        commit: bool,
        /// The verdicts in order, up to the first that is not VALID; or the internal fault.
        tx: oneshot::Sender<Result<Vec<PayloadStatus>, EngineError>>,
    },
    /// Update head, safe and finalized; build a payload on the head when attributes come.
    ForkchoiceUpdated {
        /// The new forkchoice.
        state: ForkchoiceState,
        /// Payload attributes.
        attributes: Option<Box<PayloadAttributes>>,
        /// The answer.
        tx: oneshot::Sender<Result<ForkchoiceAnswer, EngineError>>,
    },
    /// Build a payload without importing it.
    BuildPayload {
        /// What to build.
        request: Box<BuildRequest>,
        /// The payload, `None` when the parent is unknown.
        tx: oneshot::Sender<Result<Option<Arc<BuiltPayload>>, EngineError>>,
    },
    /// The background persistence committed blocks (sent by its thread): the engine reports
    /// them and publishes the forkchoice the store now holds.
    Persisted,
    /// A payload job finished (sent by the payload builder's thread before `engine_getPayload`
    /// can return it): the engine keeps it as executed and reports it.
    PayloadBuilt(Arc<BuiltPayload>),
    /// A sync starts rewriting the store's state (snap sync): answer SYNCING until it ends.
    BackfillSyncStarted {
        /// Answered once the tree stands aside, or with the fault that kept it from it.
        tx: oneshot::Sender<Result<(), EngineError>>,
    },
    /// A sync wrote a state and a head into the store (snap sync): take the stored head.
    BackfillSyncFinished {
        /// The head taken, or the fault that kept the tree from taking it.
        tx: oneshot::Sender<Result<(u64, B256), EngineError>>,
    },
    /// Finish the message in hand, flush the store and stop.
    Shutdown {
        /// Answered once the store is flushed.
        tx: oneshot::Sender<Result<(), EngineError>>,
    },
}

/// A block the engine lacks and wants from peers (what sync fetches the chain up to): the
/// parent of a payload answered SYNCING, or the head of a forkchoice update answered SYNCING.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncTarget {
    /// The block's hash.
    pub hash: B256,
    /// Its number, when known (a forkchoice update names the head by hash alone).
    pub number: Option<u64>,
}
