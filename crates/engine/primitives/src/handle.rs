//! The handle every other part of the node uses to reach the engine task: messages in,
//! answers back over oneshot channels, and the forkchoice the task publishes.

use crate::{
    message::{BuildRequest, ForkchoiceAnswer, ForkchoiceState, NewPayload},
    EngineError, EngineMessage, Forkchoice, PayloadStatus,
};
use gigagas_payload::{BuiltPayload, PayloadAttributes, PayloadStore};
use gigagas_primitives::ChainSpec;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};

/// A cloneable handle to the engine task (`gigagas_engine::EngineService`).
#[derive(Debug, Clone)]
pub struct EngineHandle {
    tx: mpsc::UnboundedSender<EngineMessage>,
    forkchoice: watch::Receiver<Forkchoice>,
    syncing: watch::Receiver<Option<crate::message::SyncTarget>>,
    chain: Arc<ChainSpec>,
    executor_threads: usize,
    payloads: Arc<PayloadStore>,
}

impl EngineHandle {
    /// The handle of an engine task reading `tx`, publishing its forkchoice on `forkchoice` and
    /// the block it lacks on `syncing`, executing `chain` with `executor_threads` workers and
    /// keeping built payloads in `payloads` (made by the engine service when it starts).
    pub fn new(
        tx: mpsc::UnboundedSender<EngineMessage>,
        forkchoice: watch::Receiver<Forkchoice>,
        syncing: watch::Receiver<Option<crate::message::SyncTarget>>,
        chain: ChainSpec,
        executor_threads: usize,
        payloads: Arc<PayloadStore>,
    ) -> Self {
        Self { tx, forkchoice, syncing, chain: Arc::new(chain), executor_threads, payloads }
    }

    async fn ask<T>(
        &self,
        message: impl FnOnce(oneshot::Sender<Result<T, EngineError>>) -> EngineMessage,
    ) -> Result<T, EngineError> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(message(tx)).map_err(|_| EngineError::Stopped)?;
        rx.await.map_err(|_| EngineError::Stopped)?
    }

    /// `engine_newPayload`: the verdict on `payload` (VALID, INVALID naming block, transaction,
    /// account or slot, or SYNCING when its parent is unknown).
    ///
    /// # Errors
    /// [`EngineError::Internal`] when a fault of ours kept the block from being judged;
    /// [`EngineError::Stopped`].
    pub async fn new_payload(&self, payload: NewPayload) -> Result<PayloadStatus, EngineError> {
        self.ask(|tx| EngineMessage::NewPayload { payload: Box::new(payload), tx }).await
    }

    /// [`Self::new_payload`] for a chain of payloads, each the child of the one before, with
    /// each block's state root computed while the next executes
    /// (`gigagas_engine::BlockTree::new_payloads`): the verdicts in order, up to and including the
    /// first that is not VALID. With `commit`, each VALID block that extends the head is
    /// committed and becomes the head, as a forkchoice update to it would make it.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when a fault of ours kept a block from being judged (the
    /// blocks before it stay VALID in the tree); [`EngineError::Stopped`].
    pub async fn new_payloads(
        &self,
        payloads: Vec<NewPayload>,
        commit: bool,
    ) -> Result<Vec<PayloadStatus>, EngineError> {
        self.ask(|tx| EngineMessage::NewPayloads { payloads, commit, tx }).await
    }

    /// `engine_forkchoiceUpdated`: makes `state.head` canonical (committing, or unwinding on a
    /// reorg), records safe and finalized, and builds a payload on the head with `attributes`.
    ///
    /// # Errors
    /// [`EngineError::InvalidForkchoice`], [`EngineError::InvalidAttributes`],
    /// [`EngineError::Internal`], [`EngineError::Stopped`].
    pub async fn forkchoice_updated(
        &self,
        state: ForkchoiceState,
        attributes: Option<PayloadAttributes>,
    ) -> Result<ForkchoiceAnswer, EngineError> {
        self.ask(|tx| EngineMessage::ForkchoiceUpdated {
            state,
            attributes: attributes.map(Box::new),
            tx,
        })
        .await
    }

    /// Builds a payload without importing it (`testing_buildBlockV1`); `None` when the parent
    /// is unknown.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when building fails (a candidate left out with
    /// `require_all`, a system call, the store); [`EngineError::Stopped`].
    pub async fn build_payload(
        &self,
        request: BuildRequest,
    ) -> Result<Option<Arc<BuiltPayload>>, EngineError> {
        self.ask(|tx| EngineMessage::BuildPayload { request: Box::new(request), tx }).await
    }

    /// Tells the engine that a sync starts rewriting the store's state (snap sync): until
    /// [`Self::backfill_sync_finished`] payloads and forkchoice updates are answered SYNCING
    /// and the head's state is read through its trie.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when blocks being persisted fail; [`EngineError::Stopped`].
    pub async fn backfill_sync_started(&self) -> Result<(), EngineError> {
        self.ask(|tx| EngineMessage::BackfillSyncStarted { tx }).await
    }

    /// Tells the engine that a sync wrote a state and a head into the store (snap sync's
    /// pivot): the tree drops what it held and takes the stored head. Answers that head.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when the store cannot be read; [`EngineError::Stopped`].
    pub async fn backfill_sync_finished(
        &self,
    ) -> Result<(u64, alloy_primitives::B256), EngineError> {
        self.ask(|tx| EngineMessage::BackfillSyncFinished { tx }).await
    }

    /// Asks the engine to finish the message in hand, flush the store and stop.
    ///
    /// # Errors
    /// [`EngineError::Internal`] when the flush fails; [`EngineError::Stopped`] when the
    /// engine had already stopped.
    pub async fn shutdown(&self) -> Result<(), EngineError> {
        self.ask(|tx| EngineMessage::Shutdown { tx }).await
    }

    /// A receiver of the forkchoice, woken at every forkchoice update (the publisher of new
    /// canonical blocks waits on it).
    pub fn subscribe_forkchoice(&self) -> watch::Receiver<Forkchoice> {
        self.forkchoice.clone()
    }

    /// A receiver of the block the engine last lacked ([`crate::message::SyncTarget`]: the
    /// parent of a payload answered SYNCING, or the head of a forkchoice update answered
    /// SYNCING), the end of the chain sync should fetch from peers.
    pub fn subscribe_syncing(&self) -> watch::Receiver<Option<crate::message::SyncTarget>> {
        self.syncing.clone()
    }

    /// Head, safe and finalized as the last forkchoice update set them.
    pub fn forkchoice(&self) -> Forkchoice {
        *self.forkchoice.borrow()
    }

    /// The chain's rules (from the genesis stored at init).
    pub fn chain(&self) -> &ChainSpec {
        &self.chain
    }

    /// Worker threads of the engine's parallel executor (one pool, built once).
    pub fn executor_threads(&self) -> usize {
        self.executor_threads
    }

    /// The payloads built, by payload id (`engine_getPayload`).
    pub fn payloads(&self) -> &Arc<PayloadStore> {
        &self.payloads
    }
}
