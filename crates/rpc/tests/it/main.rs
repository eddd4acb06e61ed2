//! The RPC crate's integration tests, one binary (each test binary links RocksDB and revm: one
//! link instead of four keeps the cold CI build short).
//!
//! - `auth_limits`: the authenticated server over HTTP (request size, JWT).
//! - `blobs`: blob transactions through the pool, `engine_getBlobsV1/V2`, the builder's bundle.
//! - `engine_faults`: database faults during `engine_newPayloadV5` are internal errors.
//! - `engine_versions`: every Engine API method version against the fork of its payload.
//! - `typed_api`: the public namespaces over HTTP, geth's shape of a malformed parameter.

mod auth_limits;
mod blobs;
mod common;
mod engine_faults;
mod engine_versions;
mod typed_api;
