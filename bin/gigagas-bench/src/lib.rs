//! gigagas's lab: what measures the executor but is not part of a node.
//!
//! - [`baseline`]: the plain revm loop every throughput figure is a ratio against;
//! - [`projection`]: the critical-path model that projects measured per-transaction latencies
//!   onto more threads.
//!
//! The `gigagas-bench` binary of this package (`bench`, `worst-io`, `net-sim`, `proofs-check`,
//! `test-fixtures`, `test-rpc`) and its criterion benches and examples use them; the node
//! (`gigagas`) does not.

pub mod baseline;
pub mod projection;
