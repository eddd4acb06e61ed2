//! gigagas's network API (reth's `net/network-api`): what JSON-RPC (`net_peerCount`,
//! `net_listening`, next `admin_nodeInfo` / `admin_peers`) and the node see of a peer-to-peer
//! network, whatever the transport behind it. The transport implements [`NetworkInfo`]; RPC
//! holds a `dyn NetworkInfo` and links no networking library.

use std::fmt::Debug;

/// The local node as its network announces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// The node's id on the network (a libp2p peer id, an enode id), as text.
    pub id: String,
    /// Where the node listens (a multiaddr, an enode URL), as text.
    pub listen_addr: String,
    /// The transport: `libp2p`, `devp2p`.
    pub transport: &'static str,
}

/// A connected peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The peer's id, as text.
    pub id: String,
}

/// What a running network tells about itself.
pub trait NetworkInfo: Debug + Send + Sync {
    /// The local node.
    fn node_info(&self) -> NodeInfo;

    /// The connected peers.
    fn peers(&self) -> Vec<PeerInfo>;

    /// How many peers are connected.
    fn peer_count(&self) -> usize {
        self.peers().len()
    }
}
