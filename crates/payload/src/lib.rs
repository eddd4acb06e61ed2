//! gigagas payload building: blocks built on a known parent from the pool's transactions
//! ([`build_payload`]), kept by payload id for `engine_getPayload` ([`PayloadStore`]).
//!
//! Dependencies run one way: the engine (`gigagas-engine`) calls the builder with the parent's
//! state; the builder uses the executor's block builder and the stages' state-root stage.

mod builder;
mod store;

pub use builder::{
    build_payload, next_gas_limit, BuiltPayload, PayloadAttributes, PayloadParent, EXTRA_DATA,
};
pub use store::{
    payload_id, BuildOutcome, PayloadBuildFailed, PayloadStore, PendingPayload, KEEP_PAYLOADS,
};
