//! The payload builder (reth's payload builder service, reduced to what the engine needs):
//! payload jobs ([`PayloadJob`]) run on a thread of their own, so that a forkchoice update with
//! attributes answers with the payload id at once and the engine goes on with `newPayload` and
//! `forkchoiceUpdated` while the payload is built.
//!
//! Flow: the engine takes a job out of the tree (the parent's state on its own view of the
//! store: the engine never waits for a job), picks the pool's candidates against that state,
//! and submits both with whom to answer ([`PayloadBuilder::submit`]):
//! - a consensus client's payload: its slot in the [`gigagas_payload::PayloadStore`]; the
//!   builder thread builds the payload, attaches the pool's blob sidecars, hands it back to the
//!   engine ([`EngineMessage::PayloadBuilt`]: kept in the tree as executed, reported) and then
//!   finishes the slot, which wakes `engine_getPayload` — so the engine has the payload before
//!   the consensus client can send it back as a `newPayload`;
//! - `testing_buildBlockV1`: its caller, answered with the payload, which is not kept.
//!
//! A panic in a job is the engine's: the next submission (or the stop) resumes it on the
//! engine thread.

use crate::{EngineError, EngineMessage, PayloadJob};
use alloy_consensus::TxEnvelope;
use alloy_primitives::Address;
use gigagas_payload::{BuiltPayload, PayloadAttributes, PayloadBuildFailed, PendingPayload};
use gigagas_txpool::TxPool;
use std::{sync::Arc, thread::JoinHandle};
use tokio::sync::{mpsc::WeakUnboundedSender, oneshot};

/// Who waits for a job's payload.
#[derive(Debug)]
pub(crate) enum JobReply {
    /// A consensus client (`engine_getPayload`): the payload's slot in the payload store; the
    /// payload is handed to the engine to keep as executed.
    Slot(PendingPayload),
    /// `testing_buildBlockV1`'s caller: the payload (not kept), or the build's fault.
    Caller {
        /// Whether a candidate left out fails the build.
        require_all: bool,
        /// The answer.
        tx: oneshot::Sender<Result<Option<Arc<BuiltPayload>>, EngineError>>,
    },
}

/// One payload to build.
#[derive(Debug)]
pub(crate) struct BuildJob {
    /// The parent's state, taken out of the tree.
    pub(crate) job: PayloadJob,
    /// The payload's attributes.
    pub(crate) attributes: PayloadAttributes,
    /// The pool's transactions for it, best first.
    pub(crate) candidates: Vec<(TxEnvelope, Address)>,
    /// Who waits for the payload.
    pub(crate) reply: JobReply,
}

/// The builder thread and the queue to it.
#[derive(Debug)]
pub(crate) struct PayloadBuilder {
    jobs: Option<std::sync::mpsc::Sender<BuildJob>>,
    thread: Option<JoinHandle<()>>,
}

impl PayloadBuilder {
    /// Starts the builder thread (`payload-builder`), attaching blob sidecars from `pool` and
    /// handing built payloads to the engine through `engine`.
    ///
    /// # Errors
    /// The OS error when the thread cannot be started.
    pub(crate) fn spawn(
        pool: Arc<TxPool>,
        engine: WeakUnboundedSender<EngineMessage>,
    ) -> std::io::Result<Self> {
        let (jobs, rx) = std::sync::mpsc::channel::<BuildJob>();
        let thread = std::thread::Builder::new().name("payload-builder".into()).spawn(move || {
            for BuildJob { job, attributes, candidates, reply } in rx {
                let require_all = matches!(reply, JobReply::Caller { require_all: true, .. });
                let built = job.build(&attributes, &candidates, require_all).map(|mut built| {
                    attach_sidecars(&pool, &mut built);
                    Arc::new(built)
                });
                match (reply, built) {
                    (JobReply::Caller { tx, .. }, built) => {
                        let _ = tx.send(built.map(Some).map_err(EngineError::Internal));
                    }
                    (JobReply::Slot(pending), Ok(built)) => {
                        if let Some(engine) = engine.upgrade() {
                            let _ = engine.send(EngineMessage::PayloadBuilt(built.clone()));
                        }
                        pending.finish(Ok(built));
                    }
                    (JobReply::Slot(pending), Err(e)) => {
                        tracing::error!(target: "engine::builder", error = %e, "payload build failed");
                        pending.finish(Err(PayloadBuildFailed::Build(Arc::new(e))));
                    }
                }
            }
        })?;
        Ok(Self { jobs: Some(jobs), thread: Some(thread) })
    }

    /// Queues `job`. A builder thread that died of a panic passes it on to the caller.
    pub(crate) fn submit(&mut self, job: BuildJob) {
        let sent = self.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
        if !sent {
            self.stop();
        }
    }

    /// Stops the thread after the job in hand; resumes its panic, if it had one.
    pub(crate) fn stop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
    }
}

impl Drop for PayloadBuilder {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.stop();
        }
    }
}

/// Attaches the pool's sidecars of `built`'s blob transactions, in block order (a transaction
/// the pool does not hold, e.g. one given to `testing_buildBlockV1`, has none).
pub(crate) fn attach_sidecars(pool: &TxPool, built: &mut BuiltPayload) {
    built.sidecars = built
        .block
        .body
        .transactions
        .iter()
        .filter(|tx| tx.is_eip4844())
        .filter_map(|tx| pool.sidecar(tx.tx_hash()))
        .collect();
}
