//! gigagas's networking (issue 20, first step): a libp2p swarm — TCP, noise, yamux, identify,
//! ping, kademlia discovery, connection limits — run as a task on the node's Tokio runtime and
//! reached through a [`NetworkHandle`].
//!
//! Flow: [`spawn`] loads (or creates) the node key, binds the TCP listener, dials the bootnodes
//! and starts the task (service.rs); identify tells each peer's listen addresses to kademlia,
//! kademlia's bootstrap finds peers of peers, and every routing update is dialled; the set of
//! connected peers is published to the handles. Block propagation and sync come next.

mod behaviour;
mod key;
mod service;

pub use behaviour::{KAD_PROTOCOL, PROTOCOL_VERSION};
pub use key::load_or_create_key;
pub use libp2p::{Multiaddr, PeerId};
pub use service::{socket_addr, spawn, BOOTSTRAP_INTERVAL};

use service::Command;
use std::{collections::BTreeSet, net::IpAddr, path::PathBuf};
use tokio::sync::{mpsc, oneshot, watch};

/// How the network starts (reth's `--port`, `--bootnodes`, `--p2p-secret-key`, `--max-peers`).
#[derive(Debug, Clone)]
pub struct NetworkConfig {
    /// Listening address.
    pub addr: IpAddr,
    /// TCP port (0: one the OS picks).
    pub port: u16,
    /// Peers to dial at start: `/ip4/…/tcp/…/p2p/<peer id>` multiaddrs.
    pub bootnodes: Vec<Multiaddr>,
    /// The node-key file; `None` for a key that lives only as long as the process.
    pub secret_key: Option<PathBuf>,
    /// Connections at most.
    pub max_peers: u32,
}

/// Errors of the network layer.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The node-key file cannot be read, written or decoded.
    #[error("node key {path}: {reason}")]
    Key {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The transport could not be built.
    #[error("libp2p transport: {0}")]
    Transport(String),
    /// The listening address cannot be bound.
    #[error("cannot listen on {addr}: {reason}")]
    Listen {
        /// The address.
        addr: Multiaddr,
        /// Why.
        reason: String,
    },
    /// The network task has stopped.
    #[error("the network has stopped")]
    Stopped,
}

/// A cloneable handle to the network task.
#[derive(Debug, Clone)]
pub struct NetworkHandle {
    local_peer_id: PeerId,
    listen_addr: Multiaddr,
    tx: mpsc::UnboundedSender<Command>,
    peers: watch::Receiver<BTreeSet<PeerId>>,
}

impl NetworkHandle {
    pub(crate) fn new(
        local_peer_id: PeerId,
        listen_addr: Multiaddr,
        tx: mpsc::UnboundedSender<Command>,
        peers: watch::Receiver<BTreeSet<PeerId>>,
    ) -> Self {
        Self { local_peer_id, listen_addr, tx, peers }
    }

    /// This node's peer id (from its key).
    pub fn local_peer_id(&self) -> PeerId {
        self.local_peer_id
    }

    /// The bound listening address with this node's `/p2p/` id: what other nodes pass as
    /// `--bootnodes`.
    pub fn listen_addr(&self) -> &Multiaddr {
        &self.listen_addr
    }

    /// The peers connected now.
    pub fn peers(&self) -> BTreeSet<PeerId> {
        self.peers.borrow().clone()
    }

    /// Waits until at least `n` peers are connected.
    ///
    /// # Errors
    /// [`NetError::Stopped`] when the task stops first.
    pub async fn wait_for_peers(&self, n: usize) -> Result<(), NetError> {
        let mut rx = self.peers.clone();
        rx.wait_for(|p| p.len() >= n).await.map(|_| ()).map_err(|_| NetError::Stopped)
    }

    /// Dials `addr`.
    ///
    /// # Errors
    /// [`NetError::Stopped`].
    pub fn dial(&self, addr: Multiaddr) -> Result<(), NetError> {
        self.tx.send(Command::Dial(addr)).map_err(|_| NetError::Stopped)
    }

    /// Stops the swarm (connections are closed).
    ///
    /// # Errors
    /// [`NetError::Stopped`] when it had already stopped.
    pub async fn shutdown(&self) -> Result<(), NetError> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Command::Shutdown(tx)).map_err(|_| NetError::Stopped)?;
        rx.await.map_err(|_| NetError::Stopped)
    }
}
