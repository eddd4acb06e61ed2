//! The discovery service: one UDP socket and one task that answers other nodes and looks for
//! new ones (reth's `Discv4Service`, cut to what a node needs).
//!
//! Flow: every packet read is checked ([`crate::decode`], expiry) and answered — a `Ping` with
//! a `Pong` (and a `Ping` back when the sender's endpoint is not proven yet: the endpoint
//! proof geth asks for), a `FindNode` or `ENRRequest` only from a node whose endpoint is proven
//! (it answered our `Ping` within [`BOND_EXPIRY`]), with the closest known nodes in `Neighbours`
//! packets of at most [`crate::MAX_NEIGHBOURS`], or our ENR. Every [`LOOKUP_INTERVAL`] (and at
//! start) the bootnodes not proven are pinged and a lookup step asks the [`ALPHA`] proven nodes
//! closest to a random target for their neighbours; each node learned is pinged, and once it
//! answers it joins the table and, with a TCP port, is sent on the discovered-nodes channel for
//! the dialer.

use crate::{
    decode, encode, Endpoint, EnrResponse, Message, Neighbours, Ping, Pong, MAX_NEIGHBOURS,
};
use alloy_eip2124::ForkId;
use alloy_primitives::{keccak256, B256};
use gigagas_net_peers::{Enr, EnrForkIdEntry, NodeRecord, PeerId, ENR_FORK_ID_KEY};
use k256::ecdsa::SigningKey;
use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};
use tokio::{net::UdpSocket, sync::mpsc};

/// How long a node's answered `Ping` proves its endpoint (geth's `bondExpiration`: 24 h).
pub const BOND_EXPIRY: Duration = Duration::from_secs(24 * 60 * 60);

/// How long a packet we send stays valid (geth's `expiration`: 20 s).
pub const PACKET_EXPIRY: Duration = Duration::from_secs(20);

/// How often the bootnodes are pinged again and a lookup step runs.
pub const LOOKUP_INTERVAL: Duration = Duration::from_secs(10);

/// Nodes asked at once in a lookup step (Kademlia's alpha).
pub const ALPHA: usize = 3;

/// Nodes given in answer to a `FindNode` (Kademlia's k, geth's `bucketSize`).
pub const NEIGHBOURS_ANSWERED: usize = 16;

/// Most nodes kept in the table.
pub const MAX_TABLE: usize = 4096;

/// What the service is told at start.
#[derive(Debug, Clone)]
pub struct Discv4Config {
    /// Nodes to start from (they need a UDP port).
    pub bootnodes: Vec<NodeRecord>,
    /// This node's RLPx TCP port (what others dial), 0: none.
    pub tcp_port: u16,
    /// The IP this node is reached on (its record's `ip`).
    pub ip: std::net::IpAddr,
    /// How often bootnodes are pinged again and a lookup step runs ([`LOOKUP_INTERVAL`]).
    pub lookup_interval: Duration,
    /// The fork id the ENR's `eth` entry carries (None: no entry).
    pub fork_id: Option<ForkId>,
    /// Where the service's task runs (as the critical task `discv4`).
    pub executor: gigagas_tasks::TaskExecutor,
}

/// A node the table holds.
#[derive(Debug, Clone)]
struct Entry {
    record: NodeRecord,
    /// When it last answered our `Ping`.
    proven: Option<Instant>,
}

#[derive(Debug, Default)]
struct State {
    table: HashMap<PeerId, Entry>,
    /// Our `Ping`s not answered yet: their hash → the node and its address.
    pings: HashMap<B256, (NodeRecord, Instant)>,
    /// Nodes asked for neighbours, and when.
    asked: HashMap<PeerId, Instant>,
}

/// The running discovery service's handle.
#[derive(Debug, Clone)]
pub struct Discv4 {
    state: Arc<Mutex<State>>,
    local: SocketAddr,
    enr: Arc<Mutex<Enr>>,
    key: SigningKey,
}

impl Discv4 {
    /// Binds `addr` (UDP) and starts the service's task with `key` (the node key) and
    /// `config`; nodes found (with a TCP port, endpoint proven) come on the receiver.
    ///
    /// # Errors
    /// The socket's error when `addr` cannot be bound.
    pub async fn spawn(
        addr: SocketAddr,
        key: SigningKey,
        config: Discv4Config,
    ) -> std::io::Result<(Self, mpsc::Receiver<NodeRecord>)> {
        let socket = Arc::new(UdpSocket::bind(addr).await?);
        let local = socket.local_addr()?;
        // The record answered to `ENRRequest`: IP, TCP and the bound UDP port, the `eth`
        // entry, sequence 1.
        let mut builder = Enr::builder();
        match config.ip {
            std::net::IpAddr::V4(ip) => builder.ip4(ip).tcp4(config.tcp_port).udp4(local.port()),
            std::net::IpAddr::V6(ip) => builder.ip6(ip).tcp6(config.tcp_port).udp6(local.port()),
        };
        if let Some(fork_id) = config.fork_id {
            builder.add_value(ENR_FORK_ID_KEY, &EnrForkIdEntry { fork_id });
        }
        let enr = Arc::new(Mutex::new(builder.build(&key).map_err(std::io::Error::other)?));
        let (found, discovered) = mpsc::channel(1024);
        let this = Self { state: Arc::default(), local, enr: enr.clone(), key: key.clone() };
        let id = PeerId::from_slice(&key.verifying_key().to_encoded_point(false).as_bytes()[1..]);
        let executor = config.executor.clone();
        let service =
            Service { socket, key, id, config, enr, state: this.state.clone(), found, local };
        executor.spawn_critical("discv4", service.run());
        Ok((this, discovered))
    }

    /// The bound UDP address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The record it answers `ENRRequest` with: IP, TCP and the bound UDP port, the `eth`
    /// entry.
    pub fn enr(&self) -> Enr {
        self.enr.lock().expect("discv4 enr").clone()
    }

    /// Sets the fork id of the ENR's `eth` entry (the node crossed a fork): the record is
    /// re-signed with the next sequence number, which `Ping`s and `Pong`s then carry (EIP-868),
    /// so that peers ask for it again. False when it could not be re-signed.
    pub fn set_fork_id(&self, fork_id: ForkId) -> bool {
        let mut enr = self.enr.lock().expect("discv4 enr");
        enr.insert(ENR_FORK_ID_KEY, &EnrForkIdEntry { fork_id }, &self.key).is_ok()
    }

    /// The nodes whose endpoint is proven.
    pub fn proven_nodes(&self) -> Vec<NodeRecord> {
        let state = self.state.lock().expect("discv4 state");
        state.table.values().filter(|e| is_proven(e)).map(|e| e.record).collect()
    }
}

fn is_proven(entry: &Entry) -> bool {
    entry.proven.is_some_and(|t| t.elapsed() < BOND_EXPIRY)
}

/// Seconds since the Unix epoch.
fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// keccak256 of a node id: the Kademlia key whose XOR distance orders nodes.
fn distance(a: &B256, id: &PeerId) -> B256 {
    keccak256(id) ^ *a
}

struct Service {
    socket: Arc<UdpSocket>,
    key: SigningKey,
    /// This node's id (never pinged, stored or handed on: a peer may list us).
    id: PeerId,
    config: Discv4Config,
    enr: Arc<Mutex<Enr>>,
    state: Arc<Mutex<State>>,
    found: mpsc::Sender<NodeRecord>,
    local: SocketAddr,
}

impl Service {
    fn enr(&self) -> Enr {
        self.enr.lock().expect("discv4 enr").clone()
    }

    fn enr_seq(&self) -> u64 {
        self.enr.lock().expect("discv4 enr").seq()
    }

    async fn run(self) {
        let mut buf = vec![0u8; 2048];
        let mut tick = tokio::time::interval(self.config.lookup_interval);
        let mut round = 0u64;
        loop {
            tokio::select! {
                read = self.socket.recv_from(&mut buf) => match read {
                    Ok((len, from)) => self.on_packet(&buf[..len], from).await,
                    Err(e) => tracing::debug!(target: "net::discv4", error = %e, "receive failed"),
                },
                _ = tick.tick() => {
                    self.refresh(round).await;
                    round += 1;
                }
            }
        }
    }

    async fn send(&self, to: SocketAddr, message: &Message) -> B256 {
        let (packet, hash) = encode(&self.key, message);
        if let Err(e) = self.socket.send_to(&packet, to).await {
            tracing::debug!(target: "net::discv4", %to, error = %e, "send failed");
        }
        hash
    }

    fn endpoint(&self) -> Endpoint {
        Endpoint {
            address: self.local.ip(),
            udp_port: self.local.port(),
            tcp_port: self.config.tcp_port,
        }
    }

    async fn ping(&self, record: NodeRecord) {
        let to = SocketAddr::new(record.address, record.udp_port);
        let ping = Message::Ping(Ping {
            version: 4,
            from: self.endpoint(),
            to: Endpoint { address: to.ip(), udp_port: to.port(), tcp_port: record.tcp_port },
            expire: now() + PACKET_EXPIRY.as_secs(),
            enr_seq: Some(self.enr_seq()),
        });
        let hash = self.send(to, &ping).await;
        let mut state = self.state.lock().expect("discv4 state");
        state.pings.retain(|_, (_, at)| at.elapsed() < PACKET_EXPIRY);
        state.pings.insert(hash, (record, Instant::now()));
    }

    /// Pings the bootnodes not proven, then one lookup step towards a random target; says so
    /// (every sixth round) while no bootnode has proven its endpoint. Without bootnodes the
    /// node only answers, which is no fault: it logs that once, at the start.
    async fn refresh(&self, round: u64) {
        if self.config.bootnodes.is_empty() {
            if round == 0 {
                tracing::info!(target: "net::discv4", "no bootnodes: discovery answers the nodes that find this one");
            }
        } else if round > 0
            && round.is_multiple_of(6)
            && !self.state.lock().expect("discv4 state").table.values().any(is_proven)
        {
            tracing::warn!(target: "net::discv4", bootnodes = self.config.bootnodes.len(), seconds = round * self.config.lookup_interval.as_secs(), "no node has answered discovery yet (bootnodes pinged, none answered)");
        }
        let unproven: Vec<NodeRecord> = {
            let state = self.state.lock().expect("discv4 state");
            self.config
                .bootnodes
                .iter()
                .filter(|b| !state.table.get(&b.id).is_some_and(is_proven))
                .copied()
                .collect()
        };
        for node in unproven {
            self.ping(node).await;
        }
        let mut target = PeerId::ZERO;
        rand::RngCore::fill_bytes(&mut rand::thread_rng(), target.as_mut_slice());
        let key = keccak256(target);
        let ask: Vec<NodeRecord> = {
            let mut state = self.state.lock().expect("discv4 state");
            let mut proven: Vec<&Entry> = state.table.values().filter(|e| is_proven(e)).collect();
            proven.sort_by_key(|e| distance(&key, &e.record.id));
            let ask: Vec<NodeRecord> = proven.iter().take(ALPHA).map(|e| e.record).collect();
            for node in &ask {
                state.asked.insert(node.id, Instant::now());
            }
            ask
        };
        for node in ask {
            let to = SocketAddr::new(node.address, node.udp_port);
            let find = crate::FindNode { target, expire: now() + PACKET_EXPIRY.as_secs() };
            self.send(to, &Message::FindNode(find)).await;
        }
    }

    async fn on_packet(&self, packet: &[u8], from: SocketAddr) {
        let (message, sender, hash) = match decode(packet) {
            Ok(decoded) if decoded.1 != self.id => decoded,
            Ok(_) => return,
            Err(e) => {
                tracing::trace!(target: "net::discv4", %from, error = %e, "packet refused");
                return;
            }
        };
        // geth reads the expiry as a signed Unix time: a "negative" one is long past.
        let expired = |expire: u64| (expire as i64) < now() as i64;
        // An endpoint proof counts for the IP it was made from only.
        let proven_from = |state: &State| {
            state.table.get(&sender).is_some_and(|e| is_proven(e) && e.record.address == from.ip())
        };
        match message {
            Message::Ping(ping) if !expired(ping.expire) => {
                let pong = Message::Pong(Pong {
                    to: Endpoint {
                        address: from.ip(),
                        udp_port: from.port(),
                        tcp_port: ping.from.tcp_port,
                    },
                    ping_hash: hash.to_vec().into(),
                    expire: now() + PACKET_EXPIRY.as_secs(),
                    enr_seq: Some(self.enr_seq()),
                });
                self.send(from, &pong).await;
                let record = NodeRecord {
                    address: from.ip(),
                    udp_port: from.port(),
                    tcp_port: ping.from.tcp_port,
                    id: sender,
                };
                let proven = proven_from(&self.state.lock().expect("discv4 state"));
                // Its endpoint unproven: our own Ping, which it answers.
                if !proven {
                    self.ping(record).await;
                }
            }
            Message::Pong(pong) if !expired(pong.expire) => {
                let Ok(echo) = B256::try_from(pong.ping_hash.as_ref()) else { return };
                let record = {
                    let mut state = self.state.lock().expect("discv4 state");
                    match state.pings.remove(&echo) {
                        Some((record, _)) if record.id == sender => {
                            let record =
                                NodeRecord { address: from.ip(), udp_port: from.port(), ..record };
                            if state.table.len() < MAX_TABLE || state.table.contains_key(&sender) {
                                let entry = state
                                    .table
                                    .entry(sender)
                                    .or_insert(Entry { record, proven: None });
                                entry.record = record;
                                entry.proven = Some(Instant::now());
                            }
                            Some(record)
                        }
                        _ => None,
                    }
                };
                if let Some(record) = record.filter(|r| r.tcp_port != 0) {
                    let _ = self.found.try_send(record);
                }
            }
            Message::FindNode(find) if !expired(find.expire) => {
                let nodes: Vec<NodeRecord> = {
                    let state = self.state.lock().expect("discv4 state");
                    if !proven_from(&state) {
                        return;
                    }
                    let key = keccak256(find.target);
                    let mut proven: Vec<&Entry> = state
                        .table
                        .values()
                        .filter(|e| is_proven(e) && e.record.id != sender)
                        .collect();
                    proven.sort_by_key(|e| distance(&key, &e.record.id));
                    proven.iter().take(NEIGHBOURS_ANSWERED).map(|e| e.record).collect()
                };
                for chunk in nodes.chunks(MAX_NEIGHBOURS) {
                    let neighbours = Neighbours {
                        nodes: chunk.to_vec(),
                        expire: now() + PACKET_EXPIRY.as_secs(),
                    };
                    self.send(from, &Message::Neighbours(neighbours)).await;
                }
            }
            Message::Neighbours(neighbours) if !expired(neighbours.expire) => {
                let new: Vec<NodeRecord> = {
                    let state = self.state.lock().expect("discv4 state");
                    if state.asked.get(&sender).is_none_or(|t| t.elapsed() >= PACKET_EXPIRY) {
                        return;
                    }
                    neighbours
                        .nodes
                        .into_iter()
                        .filter(|n| n.udp_port != 0 && n.id != self.id)
                        .filter(|n| !state.table.contains_key(&n.id))
                        .collect()
                };
                for node in new {
                    self.ping(node).await;
                }
            }
            Message::EnrRequest(request) if !expired(request.expire) => {
                let proven = proven_from(&self.state.lock().expect("discv4 state"));
                if proven {
                    let response =
                        EnrResponse { request_hash: hash.to_vec().into(), enr: self.enr() };
                    self.send(from, &Message::EnrResponse(response)).await;
                }
            }
            _ => {}
        }
    }
}
