//! gigagas's lab: what measures the executor but is not part of a node.
//!
//! - [`baseline`]: the plain revm loop every throughput figure is a ratio against;
//! - [`projection`]: the critical-path model that projects measured per-transaction latencies
//!   onto more threads (it lives in `gigagas-hw`, which `gigagas hw` sizes hardware with).
//!
//! The `gigagas-bench` binary of this package (`bench`, `worst-io`, `net-sim`, `proofs-check`,
//! `test-fixtures`, `test-rpc`) and its criterion benches and examples use them; the node
//! (`gigagas`) does not.

pub mod baseline;
/// The executor's measurement helpers, shared with `gigagas hw` (crate `gigagas-hw`).
pub use gigagas_hw::exec;
/// The critical-path model, shared with `gigagas hw` (crate `gigagas-hw`).
pub use gigagas_hw::projection;
