//! Payloads by payload id, built or being built, kept for `engine_getPayload`; and the payload
//! id itself.

use crate::{BuiltPayload, PayloadAttributes};
use alloy_primitives::{keccak256, B256, B64};
use alloy_rlp::Encodable;
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};
use tokio::sync::watch;

/// Payloads kept for `engine_getPayload` (oldest dropped first).
pub const KEEP_PAYLOADS: usize = 32;

/// A payload build that ended without a payload.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PayloadBuildFailed {
    /// Building failed (the store, a trie node, or a system call of the block): the builder's
    /// error, shared with every waiter.
    #[error("payload build failed: {0}")]
    Build(#[source] Arc<gigagas_validation::ImportError>),
    /// The builder went away before finishing the payload (the node is stopping).
    #[error("payload build failed: the payload builder stopped")]
    BuilderStopped,
}

/// What a build ends with.
pub type BuildOutcome = Result<Arc<BuiltPayload>, PayloadBuildFailed>;

/// One payload id's slot: `None` while its build runs.
type Slot = watch::Receiver<Option<BuildOutcome>>;

/// Payloads by payload id, the last [`KEEP_PAYLOADS`], each built or being built: the engine
/// starts a build ([`Self::start`]) and its job finishes it ([`PendingPayload::finish`]); the
/// Engine API's `engine_getPayload` waits for it ([`Self::resolve`]).
#[derive(Debug, Default)]
pub struct PayloadStore(Mutex<VecDeque<(B64, Slot)>>);

/// The builder's side of a started build: finishing it wakes every waiter. Dropped
/// unfinished (the builder gone), the build is failed.
#[derive(Debug)]
pub struct PendingPayload(watch::Sender<Option<BuildOutcome>>);

impl PendingPayload {
    /// Ends the build with `outcome`.
    pub fn finish(self, outcome: BuildOutcome) {
        self.0.send_replace(Some(outcome));
    }
}

impl PayloadStore {
    fn keep(&self, id: B64, slot: Slot) {
        let mut q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        q.retain(|(i, _)| *i != id);
        if q.len() >= KEEP_PAYLOADS {
            q.pop_front();
        }
        q.push_back((id, slot));
    }

    fn slot(&self, id: &B64) -> Option<Slot> {
        let q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        q.iter().find(|(i, _)| i == id).map(|(_, s)| s.clone())
    }

    /// Keeps the built `payload` under `id` (replacing a payload of the same id); returns it
    /// shared.
    pub fn insert(&self, id: B64, payload: BuiltPayload) -> Arc<BuiltPayload> {
        let payload = Arc::new(payload);
        let (_, slot) = watch::channel(Some(Ok(payload.clone())));
        self.keep(id, slot);
        payload
    }

    /// Starts a build under `id` (replacing a payload of the same id): until the returned
    /// [`PendingPayload`] is finished, [`Self::resolve`] waits.
    pub fn start(&self, id: B64) -> PendingPayload {
        let (tx, slot) = watch::channel(None);
        self.keep(id, slot);
        PendingPayload(tx)
    }

    /// Whether a payload under `id` is kept, built or being built.
    pub fn contains(&self, id: &B64) -> bool {
        self.slot(id).is_some()
    }

    /// The payload built under `id`, if its build has finished with one and it is still kept.
    pub fn get(&self, id: &B64) -> Option<Arc<BuiltPayload>> {
        let slot = self.slot(id)?;
        let outcome = slot.borrow().clone();
        outcome?.ok()
    }

    /// The payload under `id`, once its build has finished; `None` when no payload is kept
    /// under `id`.
    ///
    /// # Errors
    /// [`PayloadBuildFailed`] when the build failed or its builder went away.
    pub async fn resolve(&self, id: &B64) -> Option<BuildOutcome> {
        let mut slot = self.slot(id)?;
        let outcome = match slot.wait_for(Option::is_some).await {
            Ok(done) => done.clone().expect("waited for Some"),
            Err(_) => Err(PayloadBuildFailed::BuilderStopped),
        };
        Some(outcome)
    }
}

/// The payload id of a build on `parent` with `a`: the first 8 bytes of keccak256 over the
/// parent hash and the attributes (timestamp, prevRandao, fee recipient, withdrawals, parent
/// beacon block root, slot number), as reth derives it.
pub fn payload_id(parent: B256, a: &PayloadAttributes) -> B64 {
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
