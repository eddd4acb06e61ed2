//! Dev mode: the engine driven by a local miner instead of a consensus client.

mod miner;

pub use miner::{LocalMiner, MinerConfig, MinerError};
