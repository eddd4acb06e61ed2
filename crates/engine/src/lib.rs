//! gigagas's engine: the engine tree (payloads executed on any known parent, fork choice with
//! reorgs, the invalid-payload cache, commits to the store), run as one task that owns it and
//! answers messages, and the dev-mode miner that drives it without a consensus client.
//!
//! Flow (reth's `crates/engine/tree`): an Engine API handler decodes a request, sends an
//! [`EngineMessage`] through an [`EngineHandle`] and awaits the answer; the [`EngineService`]
//! thread executes it on the [`BlockTree`] — `newPayload` through the stages' execution and
//! state-root stages (the parallel executor on the tree's one worker pool when the payload
//! carries a BAL), `forkchoiceUpdated` by committing or unwinding the store and building a
//! payload on the new head from the pool — then publishes the forkchoice and emits an
//! [`EngineEvent`] for metrics. A block is INVALID only for a consensus reason; an internal fault
//! is an [`EngineError::Internal`] and is never cached.

mod builder;
pub mod import;
pub mod local;
mod service;
pub mod tree;

pub use gigagas_engine_primitives::{
    message, EngineError, EngineEvent, EngineHandle, EngineMessage, EventHook,
};
pub use service::EngineService;
pub use tree::{
    block_buffer::{BlockBuffer, BUFFER_CAPACITY, BUFFER_MAX_AGE},
    invalid_headers::{InvalidHeaderCache, INVALID_CAPACITY},
    BlockTree, CanonicalChange, Forkchoice, ForkchoiceError, InvalidForkchoice, PayloadJob,
    PayloadStatus, TreeConfig, TriePruneConfig, KEEP_BLOCKS,
};
