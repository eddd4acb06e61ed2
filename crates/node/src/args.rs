//! `gigagas node`'s command-line arguments, with reth's flag names and default ports
//! (`crates/node/core/src/args` in reth).

use clap::Args;
use std::{
    net::{IpAddr, SocketAddr},
    path::PathBuf,
};

/// Arguments of `gigagas node`.
#[derive(Debug, Clone, Args)]
pub struct NodeArgs {
    /// Data directory (RocksDB store and `jwt.hex`); created when absent.
    #[arg(long)]
    pub datadir: PathBuf,
    /// `mainnet` or a genesis JSON file; used to initialize an empty datadir.
    #[arg(long, default_value = "mainnet")]
    pub chain: String,
    /// Engine API listening address.
    #[arg(long = "authrpc.addr", default_value = "127.0.0.1")]
    pub auth_addr: IpAddr,
    /// Engine API port.
    #[arg(long = "authrpc.port", default_value_t = 8551)]
    pub auth_port: u16,
    /// JWT secret file (hex); `DATADIR/jwt.hex` (created when absent) by default.
    #[arg(long = "authrpc.jwtsecret")]
    pub jwt_secret: Option<PathBuf>,
    /// JSON-RPC listening address.
    #[arg(long = "http.addr", default_value = "127.0.0.1")]
    pub http_addr: IpAddr,
    /// JSON-RPC port.
    #[arg(long = "http.port", default_value_t = 8545)]
    pub http_port: u16,
    /// Run a dev chain: a local miner beside the engine builds, executes and finalizes a block
    /// every `--dev.block-time`, through the engine's messages as the Engine API handlers send
    /// them. An empty datadir starts from testing/dev-genesis.json unless `--chain` names a
    /// genesis file.
    #[arg(long)]
    pub dev: bool,
    /// Seconds per block of the dev chain.
    #[arg(long = "dev.block-time", default_value_t = 1.0)]
    pub dev_block_time: f64,
    /// Worker threads of the engine's parallel executor: one pool, built at startup and reused
    /// for every payload (default: the machine's cores).
    #[arg(long = "engine.threads", alias = "threads")]
    pub engine_threads: Option<usize>,
    /// Peer-to-peer listening address (TCP).
    #[arg(long = "addr", default_value = "0.0.0.0")]
    pub p2p_addr: IpAddr,
    /// Peer-to-peer listening port (TCP; 0 picks one).
    #[arg(long, default_value_t = 30303)]
    pub port: u16,
    /// Peers to dial at start, comma-separated multiaddrs (`/ip4/ADDR/tcp/PORT/p2p/PEER_ID`, as
    /// a node prints at startup); more are found through kademlia.
    #[arg(long, value_delimiter = ',')]
    pub bootnodes: Vec<gigagas_net::Multiaddr>,
    /// Node-key file (hex ed25519 secret) that keeps the peer id across restarts;
    /// `DATADIR/p2p-secret` (created when absent) by default.
    #[arg(long = "p2p-secret-key")]
    pub p2p_secret_key: Option<PathBuf>,
    /// Connected peers at most.
    #[arg(long = "max-peers", default_value_t = 50)]
    pub max_peers: u32,
    /// Run without the peer-to-peer network.
    #[arg(long = "disable-network")]
    pub disable_network: bool,
    /// Serve Prometheus metrics at `ADDR/metrics` (`--metrics` alone: 127.0.0.1:9001).
    #[arg(long, num_args = 0..=1, default_missing_value = "127.0.0.1:9001")]
    pub metrics: Option<SocketAddr>,
}

impl NodeArgs {
    /// The executor's worker count: `--engine.threads`, else the machine's cores.
    pub fn threads(&self) -> usize {
        self.engine_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// The network's configuration, `None` with `--disable-network`.
    pub fn network(&self) -> Option<gigagas_net::NetworkConfig> {
        (!self.disable_network).then(|| gigagas_net::NetworkConfig {
            addr: self.p2p_addr,
            port: self.port,
            bootnodes: self.bootnodes.clone(),
            secret_key: Some(
                self.p2p_secret_key.clone().unwrap_or_else(|| self.datadir.join("p2p-secret")),
            ),
            max_peers: self.max_peers,
        })
    }

    /// The JWT secret file: `--authrpc.jwtsecret`, else `DATADIR/jwt.hex`.
    pub fn jwt_path(&self) -> PathBuf {
        self.jwt_secret.clone().unwrap_or_else(|| self.datadir.join("jwt.hex"))
    }
}
