//! Built payloads by payload id, kept for `engine_getPayload`; and the payload id itself.

use crate::{BuiltPayload, PayloadAttributes};
use alloy_primitives::{keccak256, B256, B64};
use alloy_rlp::Encodable;
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

/// Payloads kept for `engine_getPayload` (oldest dropped first).
pub const KEEP_PAYLOADS: usize = 32;

/// Built payloads by payload id, the last [`KEEP_PAYLOADS`]: the engine inserts, the Engine
/// API's `engine_getPayload` reads.
#[derive(Debug, Default)]
pub struct PayloadStore(Mutex<VecDeque<(B64, Arc<BuiltPayload>)>>);

impl PayloadStore {
    /// Keeps `payload` under `id` (replacing a payload of the same id); returns it shared.
    pub fn insert(&self, id: B64, payload: BuiltPayload) -> Arc<BuiltPayload> {
        let payload = Arc::new(payload);
        let mut q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        q.retain(|(i, _)| *i != id);
        if q.len() >= KEEP_PAYLOADS {
            q.pop_front();
        }
        q.push_back((id, payload.clone()));
        payload
    }

    /// The payload built under `id`, if still kept.
    pub fn get(&self, id: &B64) -> Option<Arc<BuiltPayload>> {
        let q = self.0.lock().unwrap_or_else(|p| p.into_inner());
        q.iter().find(|(i, _)| i == id).map(|(_, p)| p.clone())
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
