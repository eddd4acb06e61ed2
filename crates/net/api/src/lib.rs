//! gigagas's network API (reth's `net/network-api`): what JSON-RPC (`net_peerCount`,
//! `net_listening`, `admin_nodeInfo`, `admin_peers`, `admin_addPeer`) and the node see of a
//! peer-to-peer network, whatever the transport behind it. Each transport implements
//! [`NetworkInfo`]; RPC holds `dyn NetworkInfo`s and links no networking library.

use std::fmt::Debug;

/// The local node as its network announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// The node's id on the network (a libp2p peer id, a devp2p node id in hex), as text.
    pub id: String,
    /// The client's name as it introduces itself (devp2p `Hello`).
    pub name: String,
    /// Where the node listens (a multiaddr, an enode URL), as text.
    pub listen_addr: String,
    /// Its enode URL (devp2p).
    pub enode: Option<String>,
    /// Its EIP-778 record, `enr:-…` (devp2p).
    pub enr: Option<String>,
    /// The TCP port it listens on (0: none or unknown).
    pub listener_port: u16,
    /// The UDP port of its discovery (0: none).
    pub discovery_port: u16,
    /// The transport: `libp2p`, `devp2p`.
    pub transport: &'static str,
}

/// A connected peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The peer's id (its enode URL on devp2p), as text.
    pub id: String,
    /// The client's name (its `Hello`), empty where the transport has none.
    pub name: String,
    /// The peer's address.
    pub remote_addr: String,
    /// The protocols spoken with it (`eth/71`).
    pub caps: Vec<String>,
    /// Its enode URL (devp2p).
    pub enode: Option<String>,
    /// Whether it dialed us.
    pub inbound: bool,
    /// Whether it is one of the peers kept connected (`--trusted-peers`, `admin_addPeer`).
    pub is_static: bool,
    /// The transport.
    pub transport: &'static str,
}

/// Why a peer could not be added.
#[derive(Debug, thiserror::Error)]
pub enum AddPeerError {
    /// The address is not one this transport dials (an enode URL for devp2p): the parser's
    /// error.
    #[error("invalid peer address: {0}")]
    InvalidAddress(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// This transport does not add peers on request.
    #[error("this network does not add peers on request")]
    Unsupported,
}

/// What a running network tells about itself.
pub trait NetworkInfo: Debug + Send + Sync {
    /// The transport: `libp2p`, `devp2p` (what [`NodeInfo::transport`] says, without building
    /// the node's info).
    fn transport(&self) -> &'static str;

    /// The local node.
    fn node_info(&self) -> NodeInfo;

    /// The connected peers.
    fn peers(&self) -> Vec<PeerInfo>;

    /// The highest version of Ethereum's wire protocol (eth/N) the network speaks, `None` for
    /// a network that does not speak it (libp2p): what `eth_protocolVersion` answers.
    fn eth_protocol_version(&self) -> Option<u64> {
        None
    }

    /// How many peers are connected.
    fn peer_count(&self) -> usize {
        self.peers().len()
    }

    /// Keeps a session with the peer at `address` (dialed now and again whenever it ends),
    /// as geth's `admin_addPeer`.
    ///
    /// # Errors
    /// [`AddPeerError`] for an address the transport cannot dial.
    fn add_peer(&self, address: &str) -> Result<(), AddPeerError> {
        let _ = address;
        Err(AddPeerError::Unsupported)
    }
}
