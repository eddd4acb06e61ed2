//! gigagas's lab: what measures the executor but is not part of a node.
//!
//! - [`baseline`]: the plain revm loop every throughput figure is a ratio against;
//! - [`projection`]: the critical-path model that projects measured per-transaction latencies
//!   onto more threads (it lives in `gigagas-hw`, which `gigagas hw` sizes hardware with);
//! - [`state_growth`] and [`state_access`]: the state `gen-chain --state-by-chain` creates and
//!   the keys its `spread` mix touches; [`rng`]: the generators' random numbers.
//!
//! The `gigagas-bench` binary of this package (`bench`, `worst-io`, `net-sim`, `proofs-check`,
//! `test-fixtures`, `test-rpc`) and its criterion benches and examples use them; the node
//! (`gigagas`) does not.

pub mod baseline;
pub mod rng;
pub mod state_access;
pub mod state_growth;
/// The executor's measurement helpers, shared with `gigagas hw` (crate `gigagas-hw`).
pub use gigagas_hw::exec;
/// The critical-path model, shared with `gigagas hw` (crate `gigagas-hw`).
pub use gigagas_hw::projection;
