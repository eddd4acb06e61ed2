//! The swarm's behaviours: identify (protocol and listen addresses), ping (liveness),
//! kademlia (peer discovery, also on a loopback or LAN devnet), connection limits
//! (`--max-peers`), a block list (peers banned for invalid data), raw streams (the coded
//! propagation protocols' per-peer streams) and gossipsub (when `--gossip gossipsub`).

use libp2p::{
    allow_block_list, connection_limits, gossipsub, identify,
    identity::Keypair,
    kad::{self, store::MemoryStore},
    ping, request_response,
    swarm::{behaviour::toggle::Toggle, NetworkBehaviour},
    StreamProtocol,
};
use std::time::Duration;

/// The identify protocol version gigagas nodes speak.
pub const PROTOCOL_VERSION: &str = "/gigagas/1.0.0";

/// The kademlia protocol of gigagas nodes (a separate DHT from IPFS's).
pub const KAD_PROTOCOL: StreamProtocol = StreamProtocol::new("/gigagas/kad/1.0.0");

/// The behaviours of one gigagas node.
#[derive(NetworkBehaviour)]
pub(crate) struct Behaviour {
    /// Connection limits (total established connections, two per peer: see [`Behaviour::new`]).
    pub(crate) limits: connection_limits::Behaviour,
    /// Peers banned for invalid data.
    pub(crate) blocked: allow_block_list::Behaviour<allow_block_list::BlockedPeers>,
    /// identify: protocol version, agent, listen addresses.
    pub(crate) identify: identify::Behaviour,
    /// ping: liveness of every connection.
    pub(crate) ping: ping::Behaviour,
    /// kademlia: discovery.
    pub(crate) kad: kad::Behaviour<MemoryStore>,
    /// Raw per-peer streams (RLNC and RS chunks).
    pub(crate) stream: libp2p_stream::Behaviour,
    /// gossipsub, when it is the propagation protocol.
    pub(crate) gossipsub: Toggle<gossipsub::Behaviour>,
    /// Sync requests and answers (eth/69 headers and bodies, EIP-8159 BALs).
    pub(crate) sync: request_response::Behaviour<crate::sync::SyncCodec>,
}

impl Behaviour {
    /// The behaviours of the node with `key`, at most `max_peers` connections.
    pub(crate) fn new(
        key: &Keypair,
        max_peers: u32,
        gossipsub: Option<gossipsub::Behaviour>,
    ) -> Self {
        let peer_id = key.public().to_peer_id();
        let limits = connection_limits::ConnectionLimits::default()
            .with_max_established(Some(max_peers))
            // Two, not one: when two nodes dial each other at once, each would keep its own
            // outbound connection and refuse the other's, closing both (a spurious disconnect
            // in the middle of a block's propagation).
            .with_max_established_per_peer(Some(2));
        let identify = identify::Behaviour::new(
            identify::Config::new(PROTOCOL_VERSION.into(), key.public())
                .with_agent_version(format!("gigagas/{}", env!("CARGO_PKG_VERSION")))
                .with_interval(Duration::from_secs(60)),
        );
        let mut kad_config = kad::Config::new(KAD_PROTOCOL);
        kad_config.set_query_timeout(Duration::from_secs(30));
        let mut kad = kad::Behaviour::with_config(peer_id, MemoryStore::new(peer_id), kad_config);
        // A devnet on loopback has no confirmed external address: serve the DHT anyway.
        kad.set_mode(Some(kad::Mode::Server));
        Self {
            limits: connection_limits::Behaviour::new(limits),
            blocked: Default::default(),
            identify,
            ping: ping::Behaviour::new(ping::Config::new()),
            kad,
            stream: libp2p_stream::Behaviour::new(),
            gossipsub: gossipsub.into(),
            sync: request_response::Behaviour::new(
                [(crate::sync::SYNC_PROTOCOL, request_response::ProtocolSupport::Full)],
                request_response::Config::default()
                    .with_request_timeout(Duration::from_secs(30))
                    .with_max_concurrent_streams(64),
            ),
        }
    }
}
