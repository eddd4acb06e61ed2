//! gigagas's networking: a libp2p swarm — TCP (QUIC with the `quic` feature), noise, yamux,
//! identify, ping, kademlia discovery, connection limits, a block list — and block propagation
//! by RLNC, Reed-Solomon or gossipsub, run as tasks on the node's Tokio runtime and reached
//! through a [`NetworkHandle`].
//!
//! Flow: [`spawn`] loads (or creates) the node key, binds the TCP listener (its stream shaped
//! and counted by [`shaping`]), dials the bootnodes and starts the swarm task (service.rs);
//! identify tells each peer's listen addresses to kademlia, kademlia's bootstrap finds peers of
//! peers, and every routing update is dialled; the set of connected peers is published to the
//! handles. Blocks go out with [`NetworkHandle::publish`] and come in, decoded and signed by
//! the proposer, from [`NetworkHandle::take_blocks`] ([`propagation`]).

mod behaviour;
mod client;
pub mod faults;
mod key;
pub mod propagation;
pub mod request_handler;
mod service;
pub mod shaping;
pub mod sync;

pub use behaviour::{KAD_PROTOCOL, PROTOCOL_VERSION};
pub use key::load_or_create_key;
pub use libp2p::{Multiaddr, PeerId};
pub use service::{socket_addr, spawn, BOOTSTRAP_INTERVAL};

use propagation::{
    push::{PushCommand, SchemeError},
    BlockKey, GossipedBlock, PropagationConfig, PropagationStats, ProposerKey, Protocol,
};
use service::Command;
use shaping::{LinkCounters, Shaping};
use std::{
    collections::BTreeSet,
    net::IpAddr,
    path::PathBuf,
    sync::{Arc, Mutex},
};
use tokio::sync::{mpsc, oneshot, watch};

/// How the network starts (the node's `--libp2p.port`, `--libp2p.bootnodes`,
/// `--libp2p.secret-key`, `--max-peers`).
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
    /// Block propagation; `None`: the node neither publishes nor receives blocks.
    pub propagation: Option<PropagationConfig>,
    /// Mesh degree of the coded protocols: the peers a node pushes chunks to (gossipsub keeps
    /// its own mesh, D = 8).
    pub degree: usize,
    /// Upload cap and added latency (devnets on one machine).
    pub shaping: Shaping,
    /// Injected faults (empty without the `fault-injection` feature).
    pub faults: faults::Faults,
    /// What sync requests are answered from (the node's store); `None`: empty answers.
    pub request_handler: Option<request_handler::EthRequestHandler>,
    /// The node's task executor: the swarm's task and the push engine run as its critical
    /// tasks (`network`, `propagation`), whose panic shuts the node down; `None`: plain tasks
    /// on the current runtime.
    pub tasks: Option<gigagas_tasks::TaskExecutor>,
}

/// Errors of the network layer.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The node-key file cannot be read, written or decoded.
    #[error("node key {path}: {source}")]
    Key {
        /// The file.
        path: PathBuf,
        /// Why.
        source: KeyFileError,
    },
    /// The transport could not be built, or the gossip topic subscribed.
    #[error("libp2p transport: {0}")]
    Transport(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The listening address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: Multiaddr,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The network task has stopped.
    #[error("the network has stopped")]
    Stopped,
    /// Publishing needs the proposer's BLS key (`--gossip.signer-key`).
    #[error("no BLS signer key: this node cannot publish blocks")]
    NoSigner,
    /// Block propagation is off.
    #[error("block propagation is off")]
    NoPropagation,
    /// The block could not be coded.
    #[error("cannot code the block: {0}")]
    Encode(#[from] SchemeError),
    /// libp2p-gossipsub refused its parameters.
    #[error("gossipsub parameters: {0}")]
    GossipsubConfig(#[from] libp2p::gossipsub::ConfigBuilderError),
    /// libp2p-gossipsub refused to start.
    #[error("gossipsub: {0}")]
    Gossipsub(&'static str),
    /// gossipsub refused to publish (e.g. no peer subscribed yet).
    #[error("gossipsub publish: {0}")]
    Publish(#[from] libp2p::gossipsub::PublishError),
    /// A sync request failed (timeout, refused, connection closed, bad answer).
    #[error("sync request to {peer}: {source}")]
    Request {
        /// The peer asked.
        peer: PeerId,
        /// Why.
        source: libp2p::request_response::OutboundFailure,
    },
}

/// Why a key file is unusable.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// It cannot be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// It does not hold hex.
    #[error("not hex: {0}")]
    Hex(#[from] alloy_primitives::hex::FromHexError),
    /// It holds another number of bytes than a key's 32.
    #[error("{0} bytes, want 32")]
    Length(usize),
    /// The 32 bytes are no valid key.
    #[error("not a valid key: {0}")]
    Invalid(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A cloneable handle to the network task.
#[derive(Debug, Clone)]
pub struct NetworkHandle {
    local_peer_id: PeerId,
    listen_addr: Multiaddr,
    tx: mpsc::UnboundedSender<Command>,
    push: Option<mpsc::UnboundedSender<PushCommand>>,
    peers: watch::Receiver<BTreeSet<PeerId>>,
    blocks: Arc<Mutex<Option<mpsc::UnboundedReceiver<GossipedBlock>>>>,
    stats: Arc<PropagationStats>,
    link: Arc<LinkCounters>,
    protocol: Option<Protocol>,
    signer: Option<ProposerKey>,
}

impl NetworkHandle {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        local_peer_id: PeerId,
        listen_addr: Multiaddr,
        tx: mpsc::UnboundedSender<Command>,
        push: Option<mpsc::UnboundedSender<PushCommand>>,
        peers: watch::Receiver<BTreeSet<PeerId>>,
        blocks: mpsc::UnboundedReceiver<GossipedBlock>,
        stats: Arc<PropagationStats>,
        link: Arc<LinkCounters>,
        protocol: Option<Protocol>,
        signer: Option<ProposerKey>,
    ) -> Self {
        Self {
            local_peer_id,
            listen_addr,
            tx,
            push,
            peers,
            blocks: Arc::new(Mutex::new(Some(blocks))),
            stats,
            link,
            protocol,
            signer,
        }
    }

    /// Blocks `peer`: disconnected, kept out, dropped from the routing table (a peer that sent
    /// what cannot be right).
    pub fn ban(&self, peer: PeerId) {
        let _ = self.tx.send(Command::Ban(peer));
    }

    /// The public key of this node's BLS signer, when it publishes blocks.
    pub fn signer(&self) -> Option<ProposerKey> {
        self.signer
    }

    /// The propagation protocol, if any.
    pub fn protocol(&self) -> Option<Protocol> {
        self.protocol
    }

    /// Publishes `payload` as the proposer (signed with the BLS key) over the protocol;
    /// returns the block's key.
    ///
    /// # Errors
    /// [`NetError::NoSigner`], [`NetError::NoPropagation`], [`NetError::Encode`],
    /// [`NetError::Publish`], [`NetError::Stopped`].
    pub async fn publish(&self, payload: Vec<u8>) -> Result<BlockKey, NetError> {
        let (tx, rx) = oneshot::channel();
        match (&self.push, self.protocol) {
            (_, None) => return Err(NetError::NoPropagation),
            (Some(push), _) => {
                push.send(PushCommand::Publish(payload, tx)).map_err(|_| NetError::Stopped)?
            }
            (None, _) => {
                self.tx.send(Command::Publish(payload, tx)).map_err(|_| NetError::Stopped)?
            }
        }
        rx.await.map_err(|_| NetError::Stopped)?
    }

    /// Tells the network the node's verdict on a block it delivered: a valid gossipsub block
    /// is forwarded, an invalid one rejected; a coded block found invalid is forwarded no more.
    pub fn report_block(&self, key: BlockKey, valid: bool) {
        match &self.push {
            Some(push) => {
                let _ = push.send(PushCommand::Report(key, valid));
            }
            None => {
                let _ = self.tx.send(Command::Report(key, valid));
            }
        }
    }

    /// Sends a sync request to `peer` and waits for its answer (30 s at most).
    ///
    /// # Errors
    /// [`NetError::Request`] when it fails; [`NetError::Stopped`].
    pub async fn request(
        &self,
        peer: PeerId,
        request: sync::SyncRequest,
    ) -> Result<sync::SyncResponse, NetError> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(Command::Request(peer, request, tx)).map_err(|_| NetError::Stopped)?;
        rx.await.map_err(|_| NetError::Stopped)?
    }

    /// The blocks received from the network (once: the first caller gets the receiver).
    pub fn take_blocks(&self) -> Option<mpsc::UnboundedReceiver<GossipedBlock>> {
        self.blocks.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// The propagation counters.
    pub fn stats(&self) -> &Arc<PropagationStats> {
        &self.stats
    }

    /// Bytes read and written on all connections (every protocol).
    pub fn link_bytes(&self) -> (u64, u64) {
        self.link.snapshot()
    }

    /// This node's peer id (from its key).
    pub fn local_peer_id(&self) -> PeerId {
        self.local_peer_id
    }

    /// The bound listening address with this node's `/p2p/` id: what other nodes pass as
    /// `--libp2p.bootnodes`.
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
