//! The engine task: one thread that owns the [`BlockTree`] (by value) and answers [`EngineMessage`]s in
//! arrival order, as reth's engine tree task does.
//!
//! Flow of a message: the Engine API handler (or the dev miner, or next the network) sends it
//! through an [`EngineHandle`]; this task executes it (payload execution, forkchoice update with
//! its commits; a payload to build goes as a job to the payload builder's thread, `builder.rs`,
//! whose built payload comes back as a message), publishes the new forkchoice to every
//! handle, emits an [`EngineEvent`] and answers over the message's oneshot channel. Execution
//! is CPU-bound, so the task runs on its own OS thread, not on the async runtime; its parallel
//! executor has its own worker pool (the tree's).

use crate::{
    builder::{BuildJob, JobReply, PayloadBuilder},
    message::{BuildRequest, Candidates, ForkchoiceAnswer, ForkchoiceState, NewPayload},
    tree::BackfillPayload,
    BlockTree, CanonicalChange, EngineError, EngineEvent, EngineHandle, EngineMessage, EventHook,
    Forkchoice, PayloadJob, PayloadStatus,
};
use alloy_consensus::TxEnvelope;
use alloy_eips::{eip1559::BaseFeeParams, eip7594::BlobTransactionSidecarVariant};
use alloy_primitives::Address;
use gigagas_payload::{payload_id, BuiltPayload, PayloadAttributes, PayloadStore};
use gigagas_txpool::TxPool;
use gigagas_validation::ImportError;
use std::{sync::Arc, thread::JoinHandle};
use tokio::sync::{mpsc, oneshot, watch};

/// The engine task's state. Built by [`EngineService::spawn`].
#[derive(Debug)]
pub struct EngineService {
    tree: BlockTree,
    pool: Arc<TxPool>,
    payloads: Arc<PayloadStore>,
    on_event: Option<EventHook>,
    forkchoice: watch::Sender<Forkchoice>,
    /// The last payload answered SYNCING (number, hash): what sync should fetch.
    syncing: watch::Sender<Option<crate::message::SyncTarget>>,
    /// The thread payload jobs run on.
    builder: PayloadBuilder,
}

impl EngineService {
    /// Starts the engine task on its own thread (named `engine`) over `tree`, building payloads
    /// from `pool` into `payloads` and calling `on_event` after every message. Returns the
    /// handle to send it messages and the thread, which ends after
    /// [`EngineHandle::shutdown`] (or when every handle is dropped).
    ///
    /// # Errors
    /// The OS error when the thread cannot be started.
    pub fn spawn(
        tree: BlockTree,
        pool: Arc<TxPool>,
        payloads: Arc<PayloadStore>,
        on_event: Option<EventHook>,
    ) -> std::io::Result<(EngineHandle, JoinHandle<()>)> {
        // A payload's transactions the pool recovered are not recovered again.
        let tree = tree.with_known_senders(pool.sender_cache().clone());
        let (tx, rx) = mpsc::unbounded_channel();
        // The persistence thread wakes the task; a weak sender, so that the task still ends
        // when every handle is dropped.
        let persisted = tx.downgrade();
        tree.on_persisted(move || {
            if let Some(tx) = persisted.upgrade() {
                let _ = tx.send(EngineMessage::Persisted);
            }
        });
        let builder = PayloadBuilder::spawn(pool.clone(), tx.downgrade())?;
        let (forkchoice, forkchoice_rx) = watch::channel(tree.forkchoice());
        let (syncing, syncing_rx) = watch::channel(None);
        let handle = EngineHandle::new(
            tx,
            forkchoice_rx,
            syncing_rx,
            tree.chain().clone(),
            tree.executor_threads(),
            payloads.clone(),
        );
        let service = Self { tree, pool, payloads, on_event, forkchoice, syncing, builder };
        let thread =
            std::thread::Builder::new().name("engine".into()).spawn(move || service.run(rx))?;
        Ok((handle, thread))
    }

    fn run(mut self, mut rx: mpsc::UnboundedReceiver<EngineMessage>) {
        while let Some(message) = rx.blocking_recv() {
            match message {
                EngineMessage::NewPayload { payload, tx } => {
                    let _ = tx.send(self.new_payload(*payload));
                }
                EngineMessage::NewPayloads { payloads, commit, tx } => {
                    let _ = tx.send(self.new_payloads(payloads, commit));
                }
                EngineMessage::ForkchoiceUpdated { state, attributes, tx } => {
                    let _ = tx.send(self.forkchoice_updated(state, attributes.map(|a| *a)));
                }
                EngineMessage::BuildPayload { request, tx } => self.build(*request, tx),
                EngineMessage::Persisted => self.persisted(),
                EngineMessage::BackfillSyncStarted { tx } => {
                    let _ = tx
                        .send(self.tree.on_backfill_sync_started().map_err(EngineError::Internal));
                }
                EngineMessage::BackfillSyncFinished { tx } => {
                    let head = self.tree.on_backfill_sync_finished().map_err(EngineError::Internal);
                    self.publish();
                    let _ = tx.send(head);
                }
                EngineMessage::PayloadBuilt(built) => self.payload_built(&built),
                EngineMessage::Shutdown { tx } => {
                    self.builder.stop();
                    let flushed = self
                        .tree
                        .wait_persisted()
                        .and_then(|()| self.tree.store().flush().map_err(ImportError::from))
                        .map_err(EngineError::Internal);
                    self.persisted();
                    tracing::info!(target: "engine", "engine stopped; store flushed");
                    let _ = tx.send(flushed);
                    return;
                }
            }
        }
    }

    /// The blocks the background persistence committed: the pool pruned, the canonical
    /// change emitted, the forkchoice the store now holds published. A persistence fault
    /// is returned by the next forkchoice update ([`BlockTree::take_persisted`]).
    fn persisted(&mut self) {
        let committed = self.tree.take_persisted();
        if !committed.is_empty() {
            let change = CanonicalChange { unwound: Vec::new(), committed };
            self.emit(&EngineEvent::Canonical(&change));
        }
    }

    /// Publishes the tree's forkchoice to every handle. The tree has published the head's
    /// blocks to the in-memory canonical chain already, so a reader told of the head (through
    /// a [`gigagas_chain_state::BlockchainProvider`]) finds it.
    fn publish(&self) {
        self.forkchoice.send_replace(self.tree.forkchoice());
    }

    fn emit(&self, event: &EngineEvent<'_>) {
        if let Some(hook) = &self.on_event {
            (hook.0)(event);
        }
    }

    fn new_payload(&mut self, payload: NewPayload) -> Result<PayloadStatus, EngineError> {
        let facts = PayloadFacts::of(&payload);
        let NewPayload { block, rlp_len, transactions_root, bal, .. } = payload;
        let (number, hash) = (block.header.number, block.header.hash_slow());
        let parent = block.header.parent_hash;
        let (status, executed) = self.tree.new_payload(block, rlp_len, transactions_root, bal.as_ref()).map_err(|e| {
            // Not a verdict on the block (the tree answers INVALID only for consensus reasons):
            // the consensus client gets an error and may send the payload again.
            tracing::error!(target: "engine::new_payload", number, %hash, error = %e, "payload not judged: internal error");
            EngineError::Internal(e)
        })?;
        if status == PayloadStatus::Syncing {
            // What is missing is the parent: sync fetches the chain that ends there, and the
            // consensus client sends this payload again.
            let target = crate::message::SyncTarget { hash: parent, number: number.checked_sub(1) };
            self.syncing.send_replace(Some(target));
        }
        self.emit_verdict(&status, executed.as_ref(), &facts);
        Ok(status)
    }

    /// The event of one payload's verdict.
    fn emit_verdict(
        &self,
        status: &PayloadStatus,
        executed: Option<&gigagas_validation::ImportedBlock>,
        facts: &PayloadFacts,
    ) {
        self.emit(&EngineEvent::NewPayload {
            status: status.name(),
            block: executed,
            gas_used: facts.gas_used,
            transactions: facts.transactions,
            bal_bytes: facts.bal_bytes,
            elapsed: facts.received.elapsed(),
        });
    }

    fn new_payloads(
        &mut self,
        payloads: Vec<NewPayload>,
        commit: bool,
    ) -> Result<Vec<PayloadStatus>, EngineError> {
        let facts: Vec<PayloadFacts> = payloads.iter().map(PayloadFacts::of).collect();
        let backfill = payloads
            .into_iter()
            .map(|p| BackfillPayload { block: p.block, rlp_len: p.rlp_len, bal: p.bal })
            .collect();
        let done = self.tree.new_payloads(backfill, commit).map_err(|e| {
            tracing::error!(target: "engine::new_payload", error = %e, "payloads not judged: internal error");
            EngineError::Internal(e)
        })?;
        // A backfill whose first parent is unknown is sync's own business: no SYNCING signal
        // (that would start another sync).
        let mut statuses = Vec::with_capacity(done.verdicts.len());
        for ((status, executed), facts) in done.verdicts.into_iter().zip(&facts) {
            self.emit_verdict(&status, executed.as_ref(), facts);
            statuses.push(status);
        }
        if !done.change.committed.is_empty() {
            self.emit(&EngineEvent::Canonical(&done.change));
            self.publish();
        }
        Ok(statuses)
    }

    fn forkchoice_updated(
        &mut self,
        state: ForkchoiceState,
        attributes: Option<PayloadAttributes>,
    ) -> Result<ForkchoiceAnswer, EngineError> {
        let (status, change) =
            self.tree.forkchoice_updated(state.head, state.safe, state.finalized)?;
        if status == PayloadStatus::Syncing {
            // The head is unknown: sync fetches the chain that ends there.
            let target = crate::message::SyncTarget { hash: state.head, number: None };
            self.syncing.send_replace(Some(target));
        }
        if !change.committed.is_empty() || !change.unwound.is_empty() {
            self.emit(&EngineEvent::Canonical(&change));
        }
        self.publish();
        let (PayloadStatus::Valid(head), Some(attributes)) = (&status, attributes) else {
            return Ok(ForkchoiceAnswer { status, payload_id: None });
        };
        let head_header = self.tree.head_header()?;
        if attributes.timestamp <= head_header.timestamp {
            return Err(EngineError::InvalidAttributes {
                timestamp: attributes.timestamp,
                head: head_header.timestamp,
            });
        }
        // The payload is built by a job off this thread: the update answers now, and
        // `engine_getPayload` waits for the build.
        let id = payload_id(*head, &attributes);
        let job = self.tree.payload_job(*head)?.ok_or(EngineError::UnknownParent(*head))?;
        let candidates = self.pool_candidates(&job, attributes.timestamp);
        let reply = JobReply::Slot(self.payloads.start(id));
        self.builder.submit(BuildJob { job, attributes, candidates, reply });
        Ok(ForkchoiceAnswer { status, payload_id: Some(id) })
    }

    /// A payload job's payload: kept in the tree as executed, so that the consensus client's
    /// `newPayload` of it executes nothing again; reported.
    fn payload_built(&mut self, built: &BuiltPayload) {
        if self.tree.keeps_built() {
            if let Err(e) = self.tree.insert_built(built) {
                tracing::error!(target: "engine", hash = %built.hash, error = %e,
                    "built payload not kept as executed: its newPayload executes it");
            }
        }
        self.emit(&EngineEvent::Built(built));
    }

    /// `testing_buildBlockV1`: a job like a consensus client's (the engine goes on while it
    /// builds), answered to `tx`: the payload, not kept; `None` when the parent is unknown.
    fn build(
        &mut self,
        request: BuildRequest,
        tx: oneshot::Sender<Result<Option<Arc<BuiltPayload>>, EngineError>>,
    ) {
        let job = match self.tree.payload_job(request.parent) {
            Ok(Some(job)) => job,
            Ok(None) => {
                let _ = tx.send(Ok(None));
                return;
            }
            Err(e) => {
                let _ = tx.send(Err(EngineError::Internal(e)));
                return;
            }
        };
        let candidates = match request.candidates {
            Candidates::Given(txs) => txs,
            Candidates::Pool => self.pool_candidates(&job, request.attributes.timestamp),
        };
        let reply = JobReply::Caller { require_all: request.require_all, tx };
        self.builder.submit(BuildJob { job, attributes: request.attributes, candidates, reply });
    }

    /// The pool's pending transactions for `job`'s block at `timestamp`, best first, against
    /// the parent's state the job builds on (so a sender's transactions that follow a block
    /// not yet in the store are pending); a blob transaction only when the pool holds its
    /// sidecar in the form of the block's fork (cell proofs from Osaka), so that the payload's
    /// blobs bundle can be served.
    fn pool_candidates(&self, job: &PayloadJob, timestamp: u64) -> Vec<(TxEnvelope, Address)> {
        let base_fee =
            job.parent_header().next_block_base_fee(BaseFeeParams::ethereum()).unwrap_or_default();
        let cell_proofs = self.tree.chain().is_osaka(timestamp);
        let mut candidates = self.pool.best(&*job.parent_state(), base_fee);
        candidates.retain(|(tx, _)| {
            !tx.is_eip4844()
                || self.pool.sidecar(tx.tx_hash()).is_some_and(|s| {
                    matches!(
                        (&*s, cell_proofs),
                        (BlobTransactionSidecarVariant::Eip7594(_), true)
                            | (BlobTransactionSidecarVariant::Eip4844(_), false)
                    )
                })
        });
        candidates
    }
}

/// What the event of a payload's verdict reports besides the verdict.
struct PayloadFacts {
    gas_used: u64,
    transactions: usize,
    bal_bytes: usize,
    received: std::time::Instant,
}

impl PayloadFacts {
    fn of(p: &NewPayload) -> Self {
        Self {
            gas_used: p.block.header.gas_used,
            transactions: p.block.body.transactions.len(),
            bal_bytes: p.bal_bytes,
            received: p.received,
        }
    }
}
