//! The BAL-aware block executor stage.
//!
//! Data flow (see `docs/architecture.md`):
//! recovery → BAL preparation → schedule → parallel execution against BAL-positioned state →
//! ordered commit (receipts, pre/post system calls) → validation (per-transaction writes, BAL
//! hash, header `gasUsed` / `receiptsRoot` / `logsBloom`).
//!
//! Two executors share one [`BlockOutcome`] shape so they can be compared (the plain revm
//! baseline that throughput is measured against lives in the lab, `gigagas-bench`):
//! - [`sequential::execute_sequential`]: the sequential reference (alloy-evm's Ethereum block
//!   executor over one revm `State`, commit per transaction) that also builds the block's BAL;
//! - [`parallel::execute_parallel`]: the parallel executor driven by a BAL;
//! - [`prewarm::execute_sequential_prewarmed`]: for blocks without a BAL, the sequential
//!   reference with idle cores executing the transactions speculatively ahead of it to warm
//!   the state cache, and with `reuse` their results committed when what they read still
//!   holds (optimistic execution, Block-STM's validation: `optimistic`).
//!
//! Every EVM is built by [`EvmConfig`]: these executors, the block builder
//! ([`builder::build_block`]), the traced replay ([`replay::replay_block`]) and the RPC's calls.

pub mod builder;
pub mod eip7610;
mod error;
pub mod evm_config;
mod optimistic;
mod outcome;
pub mod parallel;
pub mod prewarm;
mod receipt;
pub mod replay;
mod schedule;

pub mod sequential;

pub use error::ExecutionError;
pub use evm_config::{block_ctx, BlockEvm, BlockExec, EvmConfig};
pub use outcome::{
    compare_outcomes, validate_header, validate_header_with_buf, AccountExistence, AccountPost,
    BlockOutcome, HeaderCheck, PostStateDiff,
};
pub use receipt::{BloomMemo, MemoReceiptBuilder};
pub use schedule::{task_order, Scheduler};
