//! What the engine did, for metrics and logs: emitted by the engine task after each message.

use crate::CanonicalChange;
use gigagas_payload::BuiltPayload;
use gigagas_validation::ImportedBlock;
use std::time::Duration;

/// What the engine did (the node's metrics subscribe to these).
#[derive(Debug)]
pub enum EngineEvent<'a> {
    /// A payload was answered.
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
        /// From the request's arrival to the verdict: decoding, waiting, recovery, execution,
        /// state root.
        elapsed: Duration,
    },
    /// A forkchoice update changed the canonical chain.
    Canonical(&'a CanonicalChange),
    /// A payload was built.
    Built(&'a BuiltPayload),
}

/// A callback for [`EngineEvent`]s (the node's metrics), called on the engine task.
pub struct EventHook(pub Box<dyn Fn(&EngineEvent<'_>) + Send + Sync>);

impl std::fmt::Debug for EventHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventHook")
    }
}
