//! The RPC crate's integration tests, one binary (each test binary links RocksDB and revm: one
//! link instead of four keeps the cold CI build short).
//!
//! - `auth_limits`: the authenticated server over HTTP (request size, JWT).
//! - `bad_blocks`: payloads found INVALID served by `debug_getBadBlocks`.
//! - `blobs`: blob transactions through the pool, `engine_getBlobsV1/V2`, the builder's bundle.
//! - `engine_faults`: database faults during `engine_newPayloadV5` are internal errors.
//! - `engine_versions`: every Engine API method version against the fork of its payload.
//! - `fuzz`: the request decoders of every method fed random and hostile requests.
//! - `gas_price`: `eth_maxPriorityFeePerGas` and `eth_gasPrice` as geth's oracle computes them.
//! - `in_memory`: canonical blocks served before the store holds them (background persistence).
//! - `hostile`: malformed, deep, huge and out-of-range requests; clients that never read.
//! - `rpc_limits`: `eth_call`'s time limit and `eth_getLogs`'s block range.
//! - `overrides`: `eth_call` and `eth_estimateGas` with state and block overrides.
//! - `parity_trace`: the parity `trace_` namespace.
//! - `pruned`: a pruned block's state answered as pruned, the kept ones as before.
//! - `pubsub`: subscriptions over WebSocket and polling filters, through a reorg; their bounds.
//! - `typed_api`: the public namespaces over HTTP, geth's shape of a malformed parameter.
//! - `witness`: `debug_executionWitness`, each witness validating its block statelessly.
//! - `ws_client`: a small WebSocket JSON-RPC client for them.

mod auth_limits;
mod bad_blocks;
mod blobs;
mod common;
mod engine_faults;
mod engine_versions;
mod fuzz;
mod gas_price;
mod hostile;
mod in_memory;
mod modules;
mod overrides;
mod parity_trace;
mod pruned;
mod pubsub;
mod rpc_limits;
mod typed_api;
mod witness;
mod ws_client;
