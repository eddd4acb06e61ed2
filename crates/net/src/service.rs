//! The network task: the libp2p swarm driven on the node's Tokio runtime. It dials the
//! bootnodes, adds every identified peer's listen addresses to kademlia, bootstraps the DHT on
//! start and every [`BOOTSTRAP_INTERVAL`] so that peers of peers are found, and publishes the
//! connected peers to every [`NetworkHandle`].

use crate::{
    behaviour::{Behaviour, BehaviourEvent},
    NetError, NetworkConfig, NetworkHandle,
};
use futures::StreamExt;
use libp2p::{
    identify, kad, multiaddr::Protocol, noise, swarm::SwarmEvent, tcp, yamux, Multiaddr, PeerId,
    Swarm, SwarmBuilder,
};
use std::{collections::BTreeSet, net::SocketAddr, time::Duration};
use tokio::sync::{mpsc, oneshot, watch};

/// How often the DHT is bootstrapped again (new peers, peers of peers).
pub const BOOTSTRAP_INTERVAL: Duration = Duration::from_secs(10);

/// A request to the network task.
#[derive(Debug)]
pub(crate) enum Command {
    /// Dial an address.
    Dial(Multiaddr),
    /// Stop the swarm.
    Shutdown(oneshot::Sender<()>),
}

/// Starts the network task on the current Tokio runtime: the swarm listens on
/// `config.addr:config.port` (TCP; port 0 picks one) and dials the bootnodes.
///
/// # Errors
/// [`NetError`] when the key cannot be loaded, the transport built or the address bound.
pub async fn spawn(config: NetworkConfig) -> Result<NetworkHandle, NetError> {
    let key = match &config.secret_key {
        Some(path) => crate::load_or_create_key(path)?,
        None => libp2p::identity::Keypair::generate_ed25519(),
    };
    let local_peer_id = key.public().to_peer_id();
    let max_peers = config.max_peers;
    let mut swarm = SwarmBuilder::with_existing_identity(key)
        .with_tokio()
        .with_tcp(tcp::Config::default().nodelay(true), noise::Config::new, yamux::Config::default)
        .map_err(|e| NetError::Transport(e.to_string()))?
        .with_behaviour(|key| Behaviour::new(key, max_peers))
        .map_err(|e| NetError::Transport(e.to_string()))?
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(60)))
        .build();
    let listen: Multiaddr = Multiaddr::from(config.addr).with(Protocol::Tcp(config.port));
    swarm
        .listen_on(listen.clone())
        .map_err(|e| NetError::Listen { addr: listen.clone(), reason: e.to_string() })?;
    // The bound address (the port the OS picked for port 0).
    let bound = loop {
        match swarm.select_next_some().await {
            SwarmEvent::NewListenAddr { address, .. } => break address,
            SwarmEvent::ListenerError { error, .. }
            | SwarmEvent::ListenerClosed { reason: Err(error), .. } => {
                return Err(NetError::Listen { addr: listen, reason: error.to_string() })
            }
            _ => {}
        }
    };
    for addr in &config.bootnodes {
        if let Some(peer) = peer_of(addr) {
            swarm.behaviour_mut().kad.add_address(&peer, addr.clone());
        }
        if let Err(e) = swarm.dial(addr.clone()) {
            tracing::warn!(target: "net", %addr, error = %e, "cannot dial bootnode");
        }
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let (peers_tx, peers_rx) = watch::channel(BTreeSet::new());
    let handle =
        NetworkHandle::new(local_peer_id, bound.with(Protocol::P2p(local_peer_id)), tx, peers_rx);
    tokio::spawn(run(swarm, rx, peers_tx));
    Ok(handle)
}

/// The peer id in an address's `/p2p/` component.
pub(crate) fn peer_of(addr: &Multiaddr) -> Option<PeerId> {
    addr.iter().find_map(|p| match p {
        Protocol::P2p(peer) => Some(peer),
        _ => None,
    })
}

/// The socket address of a `/ip4|ip6/…/tcp/…` multiaddr, if it is one.
pub fn socket_addr(addr: &Multiaddr) -> Option<SocketAddr> {
    let mut ip = None;
    let mut port = None;
    for p in addr.iter() {
        match p {
            Protocol::Ip4(a) => ip = Some(a.into()),
            Protocol::Ip6(a) => ip = Some(a.into()),
            Protocol::Tcp(p) => port = Some(p),
            _ => {}
        }
    }
    Some(SocketAddr::new(ip?, port?))
}

async fn run(
    mut swarm: Swarm<Behaviour>,
    mut rx: mpsc::UnboundedReceiver<Command>,
    peers: watch::Sender<BTreeSet<PeerId>>,
) {
    let mut bootstrap = tokio::time::interval(BOOTSTRAP_INTERVAL);
    loop {
        tokio::select! {
            command = rx.recv() => match command {
                Some(Command::Dial(addr)) => {
                    if let Err(e) = swarm.dial(addr.clone()) {
                        tracing::warn!(target: "net", %addr, error = %e, "dial failed");
                    }
                }
                Some(Command::Shutdown(done)) => {
                    let _ = done.send(());
                    return;
                }
                None => return,
            },
            _ = bootstrap.tick() => {
                // Fails only while no peer is known: nothing to do then.
                let _ = swarm.behaviour_mut().kad.bootstrap();
            }
            event = swarm.select_next_some() => handle_event(&mut swarm, event, &peers),
        }
    }
}

fn handle_event(
    swarm: &mut Swarm<Behaviour>,
    event: SwarmEvent<BehaviourEvent>,
    peers: &watch::Sender<BTreeSet<PeerId>>,
) {
    match event {
        SwarmEvent::ConnectionEstablished { peer_id, endpoint, .. } => {
            tracing::debug!(target: "net", %peer_id, addr = %endpoint.get_remote_address(), "peer connected");
            peers.send_modify(|p| {
                p.insert(peer_id);
            });
        }
        SwarmEvent::ConnectionClosed { peer_id, num_established: 0, .. } => {
            tracing::debug!(target: "net", %peer_id, "peer disconnected");
            peers.send_modify(|p| {
                p.remove(&peer_id);
            });
        }
        SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received {
            peer_id,
            info,
            ..
        })) => {
            if info.protocol_version != crate::behaviour::PROTOCOL_VERSION {
                tracing::debug!(target: "net", %peer_id, version = %info.protocol_version, "not a gigagas peer");
                let _ = swarm.disconnect_peer_id(peer_id);
                return;
            }
            for addr in info.listen_addrs {
                swarm.behaviour_mut().kad.add_address(&peer_id, addr);
            }
        }
        // Discovered through the DHT: connect (the limits behaviour caps the count).
        SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::RoutingUpdated {
            peer,
            addresses,
            ..
        })) if !swarm.is_connected(&peer) => {
            let _ = swarm.dial(addresses.first().clone());
        }
        _ => {}
    }
}
