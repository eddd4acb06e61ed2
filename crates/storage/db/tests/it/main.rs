//! gigagas-storage's integration tests, one binary (each test binary links RocksDB: one link
//! instead of one per file).

mod batched;
mod crash;
mod has_storage;
mod hashed;
mod nodes;
mod prune;
mod senders;
