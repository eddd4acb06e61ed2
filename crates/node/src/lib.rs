//! gigagas's node: what `gigagas node` runs.
//!
//! Flow ([`launch`]): open (or initialize) the datadir's store → build the engine tree with its
//! one parallel-executor pool (`--engine.threads`) → spawn the engine task (`gigagas-engine`)
//! with the transaction pool (`gigagas-txpool`) and the payload store (`gigagas-payload`) →
//! install the Prometheus exporter, subscribed to the engine's events → start the JSON-RPC and
//! Engine API servers (`gigagas-rpc`: handlers only, given the store, the engine's handle and
//! the pool) → with `--dev`, the local miner. Long-running tasks and the engine's thread are
//! critical tasks of the node's `gigagas_tasks::TaskManager`. [`NodeHandle`] owns them all and
//! shuts them down on Ctrl-C / SIGTERM (stop accepting, finish the block being committed,
//! flush, exit 0) or when a critical task panics (the same, then exit with the task named).

mod args;
mod block;
mod devp2p;
mod gossip;
mod launch;
mod metrics;
mod snap;
mod sync;

pub use args::{
    CatchUp, DevArgs, EngineArgs, GossipArgs, GossipProtocol, Libp2pArgs, NetEmulationArgs,
    NetworkArgs, NodeArgs, RpcServerArgs, SyncArgs, SyncMode,
};
pub use block::{NetworkBlock, NetworkBlockError};
pub use gigagas_chainspec::DEV_GENESIS;
pub use launch::{launch, NodeHandle};
pub use metrics::MetricsError;
pub use sync::SyncError;

use std::path::PathBuf;

/// Why the node could not start or stopped on an error.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The datadir cannot be created.
    #[error("datadir {path}: {source}")]
    Datadir {
        /// The datadir.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] gigagas_storage::ProviderError),
    /// The genesis file cannot be had (unreadable file, corrupt built-in file).
    #[error(transparent)]
    Genesis(#[from] gigagas_chainspec::ChainSpecError),
    /// The datadir holds another chain than the one `--chain` names.
    #[error("--chain {chain}: the datadir's genesis is {stored}, not {chain}'s {expected}")]
    OtherChain {
        /// The chain named.
        chain: gigagas_chainspec::NamedChain,
        /// Its genesis hash.
        expected: alloy_primitives::B256,
        /// The stored genesis hash.
        stored: alloy_primitives::B256,
    },
    /// `init` or the engine tree failed (genesis does not parse, datadir of another chain,
    /// executor pool).
    #[error(transparent)]
    Init(#[from] gigagas_validation::ImportError),
    /// The `--dev.replay` file cannot be read or is not RLP blocks back to back.
    #[error("replay file {path}: {reason}")]
    Replay {
        /// The file.
        path: PathBuf,
        /// What is wrong: the OS error, or the decoding error and the block's index.
        reason: String,
    },
    /// The head block's header is not stored.
    #[error("the head block {0}'s header is not stored")]
    NoHeadHeader(u64),
    /// The discovery socket could not bind.
    #[error("discovery (UDP) on port {port}: {source}")]
    DiscoveryBind {
        /// The port asked for.
        port: u16,
        /// Why.
        source: std::io::Error,
    },
    /// Discovery v5 did not start.
    #[error(transparent)]
    Discv5(#[from] gigagas_discv5::Discv5Error),
    /// The devp2p listener could not bind.
    #[error("devp2p listener on port {port}: {source}")]
    Devp2pListen {
        /// The port asked for.
        port: u16,
        /// Why.
        source: std::io::Error,
    },
    /// The devp2p node key cannot be read or written.
    #[error("node key {path}: {source}")]
    NodeKey {
        /// The key file.
        path: PathBuf,
        /// Why.
        source: gigagas_net::KeyFileError,
    },
    /// The JWT secret or an RPC server failed.
    #[error(transparent)]
    Rpc(#[from] gigagas_rpc::RpcError),
    /// The peer-to-peer network could not start.
    #[error(transparent)]
    Network(#[from] gigagas_net::NetError),
    /// A `--gossip.*` key is wrong (an unreadable or malformed BLS key file, a malformed
    /// proposer key).
    #[error("gossip: {0}")]
    Gossip(#[from] gigagas_net::propagation::SignerError),
    /// The metrics exporter failed.
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    /// The engine's thread (or its background persistence thread) could not be started.
    #[error("engine thread: {0}")]
    EngineThread(std::io::Error),
    /// The JSON-RPC runtime's threads could not be started.
    #[error("JSON-RPC runtime: {0}")]
    RpcRuntime(std::io::Error),
    /// The engine failed on shutdown (the store's flush).
    #[error(transparent)]
    Engine(#[from] gigagas_engine::EngineError),
    /// The dev miner stopped on an error.
    #[error("dev miner: {0}")]
    Miner(#[from] gigagas_engine::local::MinerError),
    /// The dev miner's task ended without an error (it runs until shutdown).
    #[error("dev miner stopped")]
    MinerStopped,
    /// The dev miner's task panicked or was cancelled.
    #[error("dev miner task: {0}")]
    MinerTask(tokio::task::JoinError),
    /// The signal handlers could not be installed.
    #[error("signal handler: {0}")]
    Signal(std::io::Error),
    /// A critical task or thread (the engine and its persistence, the dev miner, gossip, sync,
    /// the network and its block propagation) panicked: the node shut down.
    #[error(transparent)]
    CriticalTask(#[from] gigagas_tasks::PanickedTaskError),
}
