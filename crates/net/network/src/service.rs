//! The network task: the libp2p swarm driven on the node's Tokio runtime. It dials the
//! bootnodes, adds every identified peer's listen addresses to kademlia, bootstraps the DHT on
//! start and every [`BOOTSTRAP_INTERVAL`] so that peers of peers are found, publishes the
//! connected peers to every [`NetworkHandle`], tells the push engine (RLNC, RS) who is
//! connected, and runs gossipsub: publishing, checking the proposer's signature, and reporting
//! the node's verdict on each block so that only valid blocks are forwarded.
//!
//! The transport is TCP (plus QUIC with the `quic` feature) under noise and yamux; the TCP
//! stream is wrapped by [`crate::shaping::Shaped`] (byte counters always, upload cap and latency
//! when configured).

use crate::{
    behaviour::{Behaviour, BehaviourEvent},
    propagation::{self, gossipsub as gs, GossipedBlock, PropagationStats, Protocol},
    request_handler::{IncomingRequest, RequestQueue, ServedRequest},
    shaping::{LinkCounters, Shaped, UploadBucket},
    sync::{SyncRequest, SyncResponse},
    NetError, NetworkConfig, NetworkHandle,
};
use futures::StreamExt;
use libp2p::{
    core::{transport::Transport as _, upgrade},
    gossipsub::{self, MessageAcceptance, MessageId},
    identify, kad,
    multiaddr::Protocol as Addr,
    noise, request_response,
    swarm::SwarmEvent,
    tcp, yamux, Multiaddr, PeerId, Swarm, SwarmBuilder,
};
use std::{
    collections::{BTreeSet, HashMap},
    net::SocketAddr,
    sync::Arc,
    time::{Duration, SystemTime},
};
use tokio::sync::{mpsc, oneshot, watch};

/// How often the DHT is bootstrapped again (new peers, peers of peers).
pub const BOOTSTRAP_INTERVAL: Duration = Duration::from_secs(10);

/// A request to the network task.
#[derive(Debug)]
pub(crate) enum Command {
    /// Dial an address.
    Dial(Multiaddr),
    /// Disconnect a peer and refuse it from then on.
    Ban(PeerId),
    /// Publish a payload over gossipsub.
    Publish(Vec<u8>, oneshot::Sender<Result<propagation::BlockKey, NetError>>),
    /// The node's verdict on a gossipsub block.
    Report(propagation::BlockKey, bool),
    /// A sync request to a peer.
    Request(
        PeerId,
        crate::sync::SyncRequest,
        oneshot::Sender<Result<crate::sync::SyncResponse, NetError>>,
    ),
    /// Stop the swarm.
    Shutdown(oneshot::Sender<()>),
}

/// Starts the network task on the current Tokio runtime: the swarm listens on
/// `config.addr:config.port` (TCP; port 0 picks one; QUIC on the same UDP port with the `quic`
/// feature) and dials the bootnodes.
///
/// # Errors
/// [`NetError`] when a key cannot be loaded, the transport built or the address bound.
pub async fn spawn(config: NetworkConfig) -> Result<NetworkHandle, NetError> {
    let key = match &config.secret_key {
        Some(path) => crate::load_or_create_key(path)?,
        None => libp2p::identity::Keypair::generate_ed25519(),
    };
    let local_peer_id = key.public().to_peer_id();
    let max_peers = config.max_peers;
    let counters = Arc::new(LinkCounters::default());
    let shaping = config.shaping;
    let bucket = shaping.upload_bits_per_sec.map(UploadBucket::new);
    let gossipsub = match config.propagation.as_ref().map(|p| p.protocol) {
        Some(Protocol::Gossipsub) => Some(gs::behaviour()?),
        _ => None,
    };
    let link_counters = counters.clone();
    let shaped_tcp = move |key: &libp2p::identity::Keypair| {
        let noise = noise::Config::new(key)?;
        let transport = tcp::tokio::Transport::new(tcp::Config::default().nodelay(true))
            .map(move |stream, _| Shaped::new(stream, &shaping, bucket.clone(), link_counters))
            .upgrade(upgrade::Version::V1)
            .authenticate(noise)
            .multiplex(yamux::Config::default());
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(transport)
    };
    let builder = SwarmBuilder::with_existing_identity(key).with_tokio();
    #[cfg(feature = "quic")]
    let builder = builder.with_quic();
    let mut swarm = builder
        .with_other_transport(shaped_tcp)
        .map_err(|e| NetError::Transport(Box::new(e)))?
        .with_behaviour(|key| Behaviour::new(key, max_peers, gossipsub))
        .map_err(|e| NetError::Transport(Box::new(e)))?
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(60)))
        .build();
    let listen: Multiaddr = Multiaddr::from(config.addr).with(Addr::Tcp(config.port));
    swarm
        .listen_on(listen.clone())
        .map_err(|e| NetError::Listen { addr: listen.clone(), source: Box::new(e) })?;
    // The bound address (the port the OS picked for port 0).
    let bound = loop {
        match swarm.select_next_some().await {
            SwarmEvent::NewListenAddr { address, .. } => break address,
            SwarmEvent::ListenerError { error, .. }
            | SwarmEvent::ListenerClosed { reason: Err(error), .. } => {
                return Err(NetError::Listen { addr: listen, source: Box::new(error) })
            }
            _ => {}
        }
    };
    #[cfg(feature = "quic")]
    {
        let port = crate::socket_addr(&bound).map_or(config.port, |a| a.port());
        let quic = Multiaddr::from(config.addr).with(Addr::Udp(port)).with(Addr::QuicV1);
        if let Err(e) = swarm.listen_on(quic.clone()) {
            tracing::warn!(target: "net", addr = %quic, error = %e, "cannot listen on QUIC");
        }
    }
    for addr in &config.bootnodes {
        if let Some(peer) = peer_of(addr) {
            swarm.behaviour_mut().kad.add_address(&peer, addr.clone());
        }
        if let Err(e) = swarm.dial(addr.clone()) {
            tracing::warn!(target: "net", %addr, error = %e, "cannot dial bootnode");
        }
    }
    // Without an executor of the node's, the tasks run on the current runtime unsupervised.
    let tasks =
        config.tasks.clone().unwrap_or_else(|| gigagas_tasks::TaskManager::current().executor());
    let (tx, rx) = mpsc::unbounded_channel();
    let (served_tx, served_rx) = mpsc::unbounded_channel();
    let (peers_tx, peers_rx) = watch::channel(BTreeSet::new());
    let (blocks_tx, blocks_rx) = mpsc::unbounded_channel();
    let stats = Arc::new(PropagationStats::default());
    let push = match &config.propagation {
        Some(p) if p.protocol != Protocol::Gossipsub => {
            let (push, engine) = propagation::push::spawn(
                p.clone(),
                swarm.behaviour().stream.new_control(),
                propagation::push::PushOutputs {
                    delivered: blocks_tx.clone(),
                    swarm: tx.clone(),
                    stats: stats.clone(),
                },
                config.degree,
                config.faults,
                &tasks,
            );
            drop(tasks.spawn_critical("propagation", engine));
            Some(push)
        }
        _ => None,
    };
    if swarm.behaviour().gossipsub.is_enabled() {
        let topic = gs::topic();
        if let Some(g) = swarm.behaviour_mut().gossipsub.as_mut() {
            g.subscribe(&topic).map_err(|e| NetError::Transport(Box::new(e)))?;
        }
    }
    let handle = NetworkHandle::new(
        local_peer_id,
        bound.with(Addr::P2p(local_peer_id)),
        tx,
        push.clone(),
        peers_rx,
        blocks_rx,
        stats.clone(),
        counters,
        config.propagation.as_ref().map(|p| p.protocol),
        config.propagation.as_ref().and_then(|p| p.signer.as_ref()).map(|s| s.public()),
    );
    let task = Task {
        swarm,
        peers: peers_tx,
        push,
        blocks: blocks_tx,
        stats,
        faults: config.faults,
        propagation: config.propagation,
        pending: HashMap::new(),
        request_queue: config
            .request_handler
            .map(|h| crate::request_handler::spawn(h, served_tx, &tasks)),
        requests: HashMap::new(),
    };
    drop(tasks.spawn_critical("network", task.run(rx, served_rx)));
    Ok(handle)
}

/// The peer id in an address's `/p2p/` component.
pub(crate) fn peer_of(addr: &Multiaddr) -> Option<PeerId> {
    addr.iter().find_map(|p| match p {
        Addr::P2p(peer) => Some(peer),
        _ => None,
    })
}

/// The socket address of a `/ip4|ip6/…/tcp/…` multiaddr, if it is one.
pub fn socket_addr(addr: &Multiaddr) -> Option<SocketAddr> {
    let mut ip = None;
    let mut port = None;
    for p in addr.iter() {
        match p {
            Addr::Ip4(a) => ip = Some(a.into()),
            Addr::Ip6(a) => ip = Some(a.into()),
            Addr::Tcp(p) => port = Some(p),
            _ => {}
        }
    }
    Some(SocketAddr::new(ip?, port?))
}

struct Task {
    swarm: Swarm<Behaviour>,
    peers: watch::Sender<BTreeSet<PeerId>>,
    push: Option<mpsc::UnboundedSender<propagation::push::PushCommand>>,
    blocks: mpsc::UnboundedSender<GossipedBlock>,
    stats: Arc<PropagationStats>,
    /// Injected faults: arriving gossipsub messages dropped ([`crate::faults::Faults`]).
    faults: crate::faults::Faults,
    propagation: Option<propagation::PropagationConfig>,
    /// gossipsub messages delivered to the node and awaiting its verdict: id and source.
    pending: HashMap<propagation::BlockKey, (MessageId, PeerId)>,
    /// Where inbound sync requests go to be served; `None`: answered empty here.
    request_queue: Option<RequestQueue>,
    /// Sync requests in flight.
    requests: HashMap<
        request_response::OutboundRequestId,
        (PeerId, oneshot::Sender<Result<crate::sync::SyncResponse, NetError>>),
    >,
}

impl Task {
    async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Command>,
        mut served: mpsc::UnboundedReceiver<ServedRequest>,
    ) {
        let mut bootstrap = tokio::time::interval(BOOTSTRAP_INTERVAL);
        loop {
            tokio::select! {
                command = rx.recv() => match command {
                    Some(Command::Shutdown(done)) => {
                        let _ = done.send(());
                        return;
                    }
                    Some(command) => self.command(command),
                    None => return,
                },
                _ = bootstrap.tick() => {
                    // Fails only while no peer is known: nothing to do then.
                    let _ = self.swarm.behaviour_mut().kad.bootstrap();
                }
                Some(served) = served.recv() => self.respond(served),
                event = self.swarm.select_next_some() => self.event(event),
            }
        }
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Dial(addr) => {
                if let Err(e) = self.swarm.dial(addr.clone()) {
                    tracing::warn!(target: "net", %addr, error = %e, "dial failed");
                }
            }
            Command::Ban(peer) => {
                self.swarm.behaviour_mut().blocked.block_peer(peer);
                self.swarm.behaviour_mut().kad.remove_peer(&peer);
            }
            Command::Publish(payload, tx) => {
                let _ = tx.send(self.publish(&payload));
            }
            Command::Report(key, valid) => {
                if let Some((id, source)) = self.pending.remove(&key) {
                    let acceptance =
                        if valid { MessageAcceptance::Accept } else { MessageAcceptance::Reject };
                    if let Some(g) = self.swarm.behaviour_mut().gossipsub.as_mut() {
                        g.report_message_validation_result(&id, &source, acceptance);
                    }
                }
            }
            Command::Request(peer, request, tx) => {
                let id = self.swarm.behaviour_mut().sync.send_request(&peer, request);
                self.requests.insert(id, (peer, tx));
            }
            Command::Shutdown(_) => {}
        }
    }

    /// Writes a served request's answer to its peer; a failed read leaves it unanswered (the
    /// channel dropped): the peer's request fails and it asks another peer, instead of taking a
    /// short answer for the chain.
    fn respond(&mut self, ServedRequest { peer, channel, response }: ServedRequest) {
        match response {
            Ok(response) => {
                let sync = &mut self.swarm.behaviour_mut().sync;
                if sync.send_response(channel, response).is_err() {
                    tracing::debug!(target: "net", %peer, "sync answer not sent");
                }
            }
            Err(e) => tracing::error!(target: "net", %peer, error = %e, "sync request not served"),
        }
    }

    fn sync_event(&mut self, event: request_response::Event<SyncRequest, SyncResponse>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request { request, channel, .. } => {
                    match &self.request_queue {
                        Some(queue) => {
                            if !queue.offer(IncomingRequest { peer, request, channel }) {
                                metrics::counter!("net_sync_requests_shed_total").increment(1);
                                tracing::debug!(target: "net", %peer, "sync request shed: handler busy");
                            }
                        }
                        None => self.respond(ServedRequest {
                            peer,
                            channel,
                            response: Ok(SyncResponse::empty(&request)),
                        }),
                    }
                }
                request_response::Message::Response { request_id, response } => {
                    if let Some((_, tx)) = self.requests.remove(&request_id) {
                        let _ = tx.send(Ok(response));
                    }
                }
            },
            request_response::Event::OutboundFailure { peer, request_id, error, .. } => {
                if let Some((_, tx)) = self.requests.remove(&request_id) {
                    let _ = tx.send(Err(NetError::Request { peer, source: error }));
                }
            }
            _ => {}
        }
    }

    fn publish(&mut self, payload: &[u8]) -> Result<propagation::BlockKey, NetError> {
        let signer =
            self.propagation.as_ref().and_then(|p| p.signer.clone()).ok_or(NetError::NoSigner)?;
        let data = gs::encode(payload, &signer);
        let key = gs::message_key(&data);
        let len = data.len();
        let g = self.swarm.behaviour_mut().gossipsub.as_mut().ok_or(NetError::NoPropagation)?;
        match g.publish(gs::topic(), data) {
            Ok(_) => {
                let peers = g.mesh_peers(&gs::topic().hash()).count().max(1);
                self.stats.sent(Protocol::Gossipsub, len * peers);
                self.stats.published(Protocol::Gossipsub);
                Ok(key)
            }
            Err(e) => Err(NetError::Publish(e)),
        }
    }

    fn event(&mut self, event: SwarmEvent<BehaviourEvent>) {
        match event {
            SwarmEvent::ConnectionEstablished { peer_id, endpoint, .. } => {
                tracing::debug!(target: "net", %peer_id, addr = %endpoint.get_remote_address(), "peer connected");
                self.peers.send_modify(|p| {
                    p.insert(peer_id);
                    metrics::gauge!("net_peers").set(p.len() as f64);
                });
                if let Some(push) = &self.push {
                    let _ = push.send(propagation::push::PushCommand::PeerUp(peer_id));
                }
            }
            SwarmEvent::ConnectionClosed { peer_id, num_established: 0, .. } => {
                tracing::debug!(target: "net", %peer_id, "peer disconnected");
                self.peers.send_modify(|p| {
                    p.remove(&peer_id);
                    metrics::gauge!("net_peers").set(p.len() as f64);
                });
                if let Some(push) = &self.push {
                    let _ = push.send(propagation::push::PushCommand::PeerDown(peer_id));
                }
            }
            SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received {
                peer_id,
                info,
                ..
            })) => {
                if info.protocol_version != crate::behaviour::PROTOCOL_VERSION {
                    tracing::debug!(target: "net", %peer_id, version = %info.protocol_version, "not a gigagas peer");
                    let _ = self.swarm.disconnect_peer_id(peer_id);
                    return;
                }
                for addr in info.listen_addrs {
                    self.swarm.behaviour_mut().kad.add_address(&peer_id, addr);
                }
            }
            // Discovered through the DHT: connect (the limits behaviour caps the count).
            SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::RoutingUpdated {
                peer,
                addresses,
                ..
            })) if !self.swarm.is_connected(&peer) => {
                let _ = self.swarm.dial(addresses.first().clone());
            }
            SwarmEvent::Behaviour(BehaviourEvent::Gossipsub(gossipsub::Event::Message {
                propagation_source,
                message_id,
                message,
            })) => self.gossip_message(propagation_source, message_id, message),
            SwarmEvent::Behaviour(BehaviourEvent::Sync(event)) => self.sync_event(event),
            _ => {}
        }
    }

    fn gossip_message(&mut self, source: PeerId, id: MessageId, message: gossipsub::Message) {
        let first_seen = SystemTime::now();
        self.stats.received(Protocol::Gossipsub, message.data.len());
        if self.faults.lose(&mut rand::thread_rng()) {
            // Lost: gossipsub has seen its id and will not take it again from another peer;
            // the node gets the block by sync when its child arrives.
            self.stats.chunk(Protocol::Gossipsub, "lost");
            if let Some(g) = self.swarm.behaviour_mut().gossipsub.as_mut() {
                g.report_message_validation_result(&id, &source, MessageAcceptance::Ignore);
            }
            return;
        }
        let key = gs::message_key(&message.data);
        let proposer = self.propagation.as_ref().and_then(|p| p.proposer);
        let verdict = match proposer {
            Some(proposer) => gs::decode(&message.data, &proposer).map_err(Some),
            None => Err(None),
        };
        let Some(g) = self.swarm.behaviour_mut().gossipsub.as_mut() else { return };
        match verdict {
            Ok(payload) => {
                self.stats.chunk(Protocol::Gossipsub, "useful");
                self.stats.decoded(Protocol::Gossipsub, 0.0);
                self.pending.insert(key, (id, source));
                let _ = self.blocks.send(GossipedBlock {
                    key,
                    payload,
                    protocol: Protocol::Gossipsub,
                    first_seen,
                    decoded: SystemTime::now(),
                });
            }
            Err(None) => {
                g.report_message_validation_result(&id, &source, MessageAcceptance::Ignore);
            }
            Err(Some(e)) => {
                self.stats.chunk(Protocol::Gossipsub, "invalid");
                tracing::warn!(target: "net", peer = %source, error = %e, "invalid gossipsub block");
                g.report_message_validation_result(&id, &source, MessageAcceptance::Reject);
                self.swarm.behaviour_mut().blocked.block_peer(source);
            }
        }
    }
}
