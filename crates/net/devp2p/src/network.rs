//! The devp2p network's handle: it dials peers and listens for them, keeps one task per
//! session (`session.rs`, answering the peer from the store through `serve.rs`) and asks them
//! for blocks as the p2p client traits ([`BlockClient`]) want.

use crate::{
    fetcher::{blob_columns, check_network_transaction, with_blobs, Checked, TransactionFetcher},
    session::{self, SessionCommand, SessionRequestError},
    transactions::{
        NetworkPool, PoolImportError, TransactionAnnouncement, MAX_ANNOUNCED_HASHES,
        MAX_POOLED_TRANSACTIONS_REQUEST, MAX_REMEMBERED_ORIGINS,
    },
    SessionError,
};
use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_eip2124::{ForkFilter, ForkId};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::{Bytes, B256};
use gigagas_bal::BlockAccessList;
use gigagas_eth_wire::{
    eth_protocols, snap_protocols, DisconnectReason, EthStream, HelloMessage, P2PStream,
    P2PStreamError, P2P_VERSION,
};
use gigagas_eth_wire_types::{
    CustodyBitmap, EthMessage, EthVersion, GetCells, HeadersRequest, NewPooledTransactionHashes,
    Receipt69, RequestPair, SnapMessage, StatusMessage, MAX_HEADERS, MAX_REQUEST_ITEMS,
};
use gigagas_net_ecies::{peer_id, EciesStream, SecretKey};
use gigagas_net_p2p::{BlockClient, ChainServer, RequestError, SnapClient, SnapServer};
use gigagas_net_peers::{NodeRecord, PeerId};
use std::{
    collections::{HashMap, HashSet},
    net::SocketAddr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
};
use tokio::sync::{mpsc, oneshot};

/// What this node says about itself in every handshake.
#[derive(Debug, Clone)]
pub struct LocalNode {
    /// Its secret key (its node id is the public key's).
    pub secret: SecretKey,
    /// `Hello`'s client version.
    pub client_version: String,
    /// The TCP port it listens on (0: none).
    pub port: u16,
    /// The UDP port its discovery answers on (0: no discovery).
    pub discovery_port: u16,
    /// The IP it tells others it is reached on (`--nat extip:IP`); None: the bound one
    /// (loopback when it listens on every interface).
    pub external_ip: Option<std::net::IpAddr>,
    /// Its `Status` (the version is set per session).
    pub status: StatusMessage,
    /// The EIP-2124 filter peers' fork ids are checked with.
    pub fork_filter: ForkFilter,
}

impl LocalNode {
    /// A node of network `network_id` and genesis `genesis` whose head is `head` (number,
    /// hash), serving every block from genesis: its `Status` announces the fork id
    /// `fork_filter` computes for that head.
    pub fn at_head(
        secret: SecretKey,
        client_version: String,
        network_id: u64,
        genesis: B256,
        head: (u64, B256),
        fork_filter: ForkFilter,
    ) -> Self {
        let status = StatusMessage {
            version: 0,
            network_id,
            genesis,
            fork_id: fork_filter.current(),
            earliest: 0,
            latest: head.0,
            latest_hash: head.1,
        };
        Self {
            secret,
            client_version,
            port: 0,
            discovery_port: 0,
            external_ip: None,
            status,
            fork_filter,
        }
    }
}

/// What is known of a session.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// The peer.
    pub record: NodeRecord,
    /// Its `Hello`'s client version.
    pub client_version: String,
    /// The eth version negotiated.
    pub version: EthVersion,
    /// The snap version negotiated beside eth, if any.
    pub snap: Option<gigagas_eth_wire_types::SnapVersion>,
    /// The peer's `Status`.
    pub status: StatusMessage,
    /// Whether the peer dialed us.
    pub inbound: bool,
}

struct Session {
    commands: mpsc::Sender<SessionCommand>,
    info: SessionInfo,
}

#[derive(Default)]
struct Sessions {
    active: HashMap<PeerId, Session>,
    banned: HashSet<PeerId>,
}

/// How far the head moves before peers are told with a `BlockRangeUpdate` (geth: 32 blocks;
/// at once when it moves back). Peers ask for blocks up to a little past the latest announced
/// (geth's downloader: 64 blocks), so a node that syncs must announce as it goes.
pub const BLOCK_RANGE_UPDATE_INTERVAL: u64 = 32;

/// The devp2p network: its sessions, and the client side of block sync over them.
#[derive(Clone)]
pub struct Devp2pNetwork {
    /// What this node says in handshakes; its head moves with [`Devp2pNetwork::update_head`].
    local: Arc<Mutex<LocalNode>>,
    /// The latest block announced to the sessions (in `Status` or `BlockRangeUpdate`).
    announced: Arc<AtomicU64>,
    sessions: Arc<Mutex<Sessions>>,
    /// What peers' requests are answered from (none: empty answers).
    server: Option<ChainServer>,
    /// What snap requests are answered from (none: snap is not offered).
    snap: Option<SnapServer>,
    /// Sessions at most (inbound ones beyond are refused with `TooManyPeers`).
    max_peers: usize,
    /// Peers to keep a session with (`--trusted-peers`, `admin_addPeer`).
    static_peers: Arc<Mutex<Vec<NodeRecord>>>,
    /// The listener's bound address, once listening.
    listening: Arc<Mutex<Option<SocketAddr>>>,
    /// Discovery's record of this node, while discovery runs.
    discovery_enr: Arc<Mutex<Option<gigagas_net_peers::Enr>>>,
    /// The node's transaction pool, gossiped with the peers (none: no gossip).
    pool: Option<Arc<dyn NetworkPool>>,
    /// Transactions being fetched and where transactions came from.
    transactions: Arc<Mutex<TransactionsState>>,
}

/// What the transaction gossip keeps.
#[derive(Default)]
struct TransactionsState {
    /// Announced hashes: who announced them with what, who is asked now.
    fetcher: TransactionFetcher,
    /// The peer each transaction came from (not announced back to it).
    origins: HashMap<B256, PeerId>,
}

impl TransactionsState {
    fn remember_origin(&mut self, hash: B256, peer: PeerId) {
        if self.origins.len() >= MAX_REMEMBERED_ORIGINS {
            self.origins.clear();
        }
        self.origins.entry(hash).or_insert(peer);
    }
}

/// Sessions a network keeps at most unless told otherwise (geth's `--maxpeers`).
pub const DEFAULT_MAX_PEERS: usize = 50;

/// How long a TCP connect to a peer may take (geth's dialer: 15 s).
pub const DIAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// How long the RLPx, `Hello` and `Status` handshakes together may take, dialing or accepting
/// (geth: 5 s each step).
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl std::fmt::Debug for Devp2pNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Devp2pNetwork").field("id", &self.local_id()).finish()
    }
}

impl Devp2pNetwork {
    /// A network of this node, with no session yet.
    pub fn new(local: LocalNode) -> Self {
        Self {
            announced: Arc::new(AtomicU64::new(local.status.latest)),
            local: Arc::new(Mutex::new(local)),
            sessions: Arc::default(),
            server: None,
            snap: None,
            max_peers: DEFAULT_MAX_PEERS,
            static_peers: Arc::default(),
            listening: Arc::default(),
            discovery_enr: Arc::default(),
            pool: None,
            transactions: Arc::default(),
        }
    }

    /// What this node says in its handshakes now.
    pub fn local(&self) -> LocalNode {
        self.local.lock().expect("local node lock").clone()
    }

    /// The node's head moved to block `number` (`hash`, made at `timestamp`): new sessions'
    /// `Status` says so (its fork id too, the fork filter moved to the head), and the open
    /// sessions get a `BlockRangeUpdate` once the head is [`BLOCK_RANGE_UPDATE_INTERVAL`]
    /// blocks past the last one announced, or behind it.
    pub fn update_head(&self, number: u64, hash: B256, timestamp: u64) {
        let update = {
            let mut local = self.local.lock().expect("local node lock");
            local.fork_filter.set_head(alloy_eip2124::Head {
                number,
                hash,
                timestamp,
                ..Default::default()
            });
            local.status.fork_id = local.fork_filter.current();
            local.status.latest = number;
            local.status.latest_hash = hash;
            gigagas_eth_wire_types::BlockRangeUpdate {
                earliest: local.status.earliest,
                latest: number,
                latest_hash: hash,
            }
        };
        let announced = self.announced.load(Ordering::Relaxed);
        if number >= announced && number - announced < BLOCK_RANGE_UPDATE_INTERVAL {
            return;
        }
        self.announced.store(number, Ordering::Relaxed);
        let sessions = self.sessions.lock().expect("sessions lock");
        for session in sessions.active.values() {
            // A session too busy to take it gets the next one.
            let _ = session
                .commands
                .try_send(SessionCommand::Send(EthMessage::BlockRangeUpdate(update)));
        }
    }

    /// The fork id this node is on (at its head, as its `Status` says).
    pub fn fork_id(&self) -> ForkId {
        self.local.lock().expect("local node lock").status.fork_id
    }

    /// Whether a node announcing `fork_id` (a discovered node's ENR `eth` entry) is on a fork
    /// this node's filter accepts (EIP-2124's rules, as the `Status` handshake checks them).
    pub fn accepts_fork(&self, fork_id: ForkId) -> bool {
        self.local.lock().expect("local node lock").fork_filter.validate(fork_id).is_ok()
    }

    /// Adds `record` to the peers a session is kept with ([`Devp2pNetwork::static_peers`]).
    pub fn add_static_peer(&self, record: NodeRecord) {
        let mut peers = self.static_peers.lock().expect("static peers lock");
        if !peers.iter().any(|p| p.id == record.id) {
            peers.push(record);
        }
    }

    /// The peers a session is kept with: whoever keeps them connected dials those not in
    /// session.
    pub fn static_peers(&self) -> Vec<NodeRecord> {
        self.static_peers.lock().expect("static peers lock").clone()
    }

    /// This node's enode URL, once listening: its node id at its external IP if set
    /// ([`LocalNode::external_ip`]), else the bound address (loopback when it listens on every
    /// interface).
    pub fn enode(&self) -> Option<NodeRecord> {
        let bound = (*self.listening.lock().expect("listening lock"))?;
        let address = if let Some(ip) = self.local().external_ip {
            ip
        } else if bound.ip().is_unspecified() {
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        } else {
            bound.ip()
        };
        Some(NodeRecord {
            address,
            tcp_port: bound.port(),
            udp_port: self.local().discovery_port,
            id: self.local_id(),
        })
    }

    /// Discovery answers on UDP `port` with record `enr` (the one it gives in `ENRResponse`):
    /// the enode says so, and [`Devp2pNetwork::enr`] is that record.
    pub fn set_discovery(&self, port: u16, enr: gigagas_net_peers::Enr) {
        self.local.lock().expect("local node lock").discovery_port = port;
        *self.discovery_enr.lock().expect("enr lock") = Some(enr);
    }

    /// This node's EIP-778 record, once listening: discovery's, when it runs; else its IP
    /// (loopback when it listens on every interface, as [`Devp2pNetwork::enode`]) and TCP
    /// port, signed with its node key (sequence number 1).
    pub fn enr(&self) -> Option<gigagas_net_peers::Enr> {
        if let Some(enr) = self.discovery_enr.lock().expect("enr lock").clone() {
            return Some(enr);
        }
        let enode = self.enode()?;
        let key = gigagas_net_peers::enr::k256::ecdsa::SigningKey::from(self.local().secret);
        let mut builder = gigagas_net_peers::Enr::builder();
        match enode.address {
            std::net::IpAddr::V4(ip) => builder.ip4(ip).tcp4(enode.tcp_port),
            std::net::IpAddr::V6(ip) => builder.ip6(ip).tcp6(enode.tcp_port),
        };
        builder.build(&key).ok()
    }

    /// The same network answering peers' requests from `server`'s store.
    pub fn with_server(mut self, server: ChainServer) -> Self {
        self.server = Some(server);
        self
    }

    /// The most sessions it keeps.
    pub fn max_peers(&self) -> usize {
        self.max_peers
    }

    /// The same network with at most `max_peers` sessions.
    pub fn with_max_peers(mut self, max_peers: usize) -> Self {
        self.max_peers = max_peers;
        self
    }

    /// Listens for inbound sessions on `addr`; returns the bound address (an ephemeral port
    /// when `addr` asks for port 0). Each connection runs the recipient's handshakes on a task
    /// of its own; one beyond the peer limit, or from a banned peer, is refused.
    ///
    /// # Errors
    /// The bind failure.
    pub async fn listen(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        *self.listening.lock().expect("listening lock") = Some(bound);
        self.local.lock().expect("local node lock").port = bound.port();
        let network = self.clone();
        tokio::spawn(async move {
            loop {
                let (io, remote) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::debug!(target: "net::devp2p", error = %e, "accept failed");
                        continue;
                    }
                };
                let network = network.clone();
                tokio::spawn(async move {
                    let accepted =
                        tokio::time::timeout(HANDSHAKE_TIMEOUT, network.accept(io, remote))
                            .await
                            .unwrap_or(Err(SessionError::Timeout {
                                step: "handshakes",
                                after: HANDSHAKE_TIMEOUT,
                            }));
                    if let Err(e) = accepted {
                        tracing::debug!(target: "net::devp2p", %remote, error = %e, "inbound session refused");
                    }
                });
            }
        });
        Ok(bound)
    }

    /// The recipient's handshakes on `io` from `remote`.
    async fn accept(
        &self,
        io: tokio::net::TcpStream,
        remote: SocketAddr,
    ) -> Result<SessionInfo, SessionError> {
        let _ = io.set_nodelay(true);
        let local = self.local();
        let ecies = EciesStream::accept(io, local.secret.clone()).await?;
        let id = ecies.remote_id();
        let (mut p2p, hello) =
            P2PStream::handshake(ecies, &self.hello(), &self.protocols()).await?;
        let refuse = {
            let sessions = self.sessions.lock().expect("sessions lock");
            if sessions.banned.contains(&id) {
                Some(DisconnectReason::UselessPeer)
            } else if sessions.active.len() >= self.max_peers {
                Some(DisconnectReason::TooManyPeers)
            } else {
                None
            }
        };
        if let Some(reason) = refuse {
            let _ = p2p.disconnect(reason).await;
            return Err(SessionError::P2P(P2PStreamError::Disconnected(reason)));
        }
        let (eth, status) = EthStream::handshake(p2p, local.status, &local.fork_filter).await?;
        let port = if hello.port == 0 { remote.port() } else { hello.port };
        let record = NodeRecord { address: remote.ip(), tcp_port: port, udp_port: port, id };
        let info = SessionInfo {
            record,
            client_version: hello.client_version,
            version: eth.version(),
            snap: eth.snap_version(),
            status,
            inbound: true,
        };
        self.start(eth, info.clone());
        Ok(info)
    }

    /// This node's id.
    pub fn local_id(&self) -> PeerId {
        peer_id(&self.local.lock().expect("local node lock").secret.public_key())
    }

    /// This node's `Hello`.
    /// The protocols offered: eth/69–72, and snap/1–2 when a snap server is set.
    fn protocols(&self) -> Vec<gigagas_eth_wire::Protocol> {
        let mut protocols = eth_protocols();
        if self.snap.is_some() {
            protocols.extend(snap_protocols());
        }
        protocols
    }

    /// The same network serving snap/1 and snap/2 from `snap` (and offering them in `Hello`).
    pub fn with_snap_server(mut self, snap: SnapServer) -> Self {
        self.snap = Some(snap);
        self
    }

    fn hello(&self) -> HelloMessage {
        let local = self.local();
        HelloMessage {
            protocol_version: P2P_VERSION,
            client_version: local.client_version,
            capabilities: self.protocols().into_iter().map(|p| p.cap).collect(),
            port: local.port,
            id: peer_id(&local.secret.public_key()),
        }
    }

    /// Dials `record`: TCP, the RLPx handshake, `Hello`, `Status`; the session then runs on a
    /// task of its own until the peer leaves.
    ///
    /// # Errors
    /// [`SessionError`] naming the step that failed.
    pub async fn dial(&self, record: NodeRecord) -> Result<SessionInfo, SessionError> {
        if record.id == self.local_id() {
            return Err(SessionError::P2P(P2PStreamError::Disconnected(
                DisconnectReason::ConnectedToSelf,
            )));
        }
        let addr = record.tcp_addr();
        let io = tokio::time::timeout(DIAL_TIMEOUT, tokio::net::TcpStream::connect(addr))
            .await
            .map_err(|_| SessionError::Timeout { step: "TCP connect", after: DIAL_TIMEOUT })?
            .map_err(|source| SessionError::Connect { addr, source })?;
        let _ = io.set_nodelay(true);
        let handshakes = async {
            let local = self.local();
            let ecies = EciesStream::connect(io, local.secret.clone(), record.id).await?;
            let (p2p, hello) =
                P2PStream::handshake(ecies, &self.hello(), &self.protocols()).await?;
            let (eth, status) = EthStream::handshake(p2p, local.status, &local.fork_filter).await?;
            Ok::<_, SessionError>((eth, hello, status))
        };
        let (eth, hello, status) =
            tokio::time::timeout(HANDSHAKE_TIMEOUT, handshakes).await.map_err(|_| {
                SessionError::Timeout { step: "handshakes", after: HANDSHAKE_TIMEOUT }
            })??;
        let info = SessionInfo {
            record,
            client_version: hello.client_version,
            version: eth.version(),
            snap: eth.snap_version(),
            status,
            inbound: false,
        };
        self.start(eth, info.clone());
        Ok(info)
    }

    fn start(&self, stream: session::Stream, info: SessionInfo) {
        let (tx, rx) = mpsc::channel(64);
        let peer = info.record.id;
        {
            let mut sessions = self.sessions.lock().expect("sessions lock");
            if let Some(old) =
                sessions.active.insert(peer, Session { commands: tx, info: info.clone() })
            {
                let _ = old
                    .commands
                    .try_send(SessionCommand::Disconnect(DisconnectReason::AlreadyConnected));
            }
        }
        let sessions = self.sessions.clone();
        let network = self.clone();
        let closed = self.clone();
        let on_message =
            move |message: session::PeerMessage| network.on_peer_message(peer, message);
        tracing::info!(target: "net::devp2p", peer = %info.record, client = %info.client_version, version = info.version.number(), snap = info.snap.map_or(0, |v| v as u8), head = info.status.latest, "session established");
        tokio::spawn(session::run(
            stream,
            info,
            crate::serve::Serving {
                chain: self.server.clone(),
                snap: self.snap.clone(),
                pool: self.pool.clone(),
            },
            rx,
            on_message,
            move |reason| {
                tracing::info!(target: "net::devp2p", %peer, %reason, "session closed");
                sessions.lock().expect("sessions lock").active.remove(&peer);
                let next =
                    closed.transactions.lock().expect("transactions lock").fetcher.peer_gone(peer);
                closed.spawn_fetches(next);
            },
        ));
    }

    /// What a session's peer announced or sent on its own.
    fn on_peer_message(&self, peer: PeerId, message: session::PeerMessage) {
        match message {
            // The peer's announced range is what it is asked for (its `Status` at first).
            session::PeerMessage::Range(range) => {
                let mut sessions = self.sessions.lock().expect("sessions lock");
                if let Some(s) = sessions.active.get_mut(&peer) {
                    s.info.status.earliest = range.earliest;
                    s.info.status.latest = range.latest;
                    s.info.status.latest_hash = range.latest_hash;
                }
            }
            session::PeerMessage::Hashes(announced) => {
                let Some(pool) = self.pool.as_ref() else { return };
                if !announced.is_consistent() {
                    self.report_bad_message(peer);
                    return;
                }
                // Below eth/72 a peer holds whole blobs; on eth/72 its bitmap says which columns.
                let holds_blobs = announced.mask.is_none_or(|mask| mask.covers(&blob_columns()));
                let wanted: Vec<B256> = {
                    let mut txs = self.transactions.lock().expect("transactions lock");
                    let mut wanted = Vec::new();
                    for ((hash, tx_type), size) in
                        announced.hashes.iter().zip(announced.types.iter()).zip(&announced.sizes)
                    {
                        if pool.contains(hash) {
                            continue;
                        }
                        if txs.fetcher.announced(peer, *hash, *tx_type, *size, holds_blobs) {
                            wanted.push(*hash);
                        }
                        txs.remember_origin(*hash, peer);
                    }
                    wanted
                };
                self.spawn_fetches(HashMap::from([(peer, wanted)]));
            }
            session::PeerMessage::Transactions(sent) => {
                let Some(pool) = self.pool.clone() else { return };
                let network = self.clone();
                tokio::spawn(async move {
                    network.import_transactions(peer, sent.0, None, &pool).await;
                });
            }
        }
    }

    /// Fetches each peer's hashes from it, [`MAX_POOLED_TRANSACTIONS_REQUEST`] a request, each
    /// request on a task of its own.
    fn spawn_fetches(&self, fetches: HashMap<PeerId, Vec<B256>>) {
        let Some(pool) = self.pool.as_ref() else { return };
        for (peer, hashes) in fetches {
            for chunk in hashes.chunks(MAX_POOLED_TRANSACTIONS_REQUEST) {
                tokio::spawn(self.fetch_transactions(peer, chunk.to_vec(), pool.clone()));
            }
        }
    }

    /// Asks `peer` for the pooled transactions `hashes` and imports the answer; what it does
    /// not deliver, or delivers invalid, is asked of the next peer that announced it.
    fn fetch_transactions(
        &self,
        peer: PeerId,
        hashes: Vec<B256>,
        pool: Arc<dyn NetworkPool>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        let network = self.clone();
        Box::pin(async move {
            let request = EthMessage::GetPooledTransactions(RequestPair {
                request_id: 0,
                message: hashes.clone(),
            });
            tracing::debug!(target: "net::devp2p", %peer, count = hashes.len(), "asking for pooled transactions");
            let undelivered = match network.request(peer, request).await {
                Ok(EthMessage::PooledTransactions(p)) => {
                    tracing::debug!(target: "net::devp2p", %peer, count = p.message.0.len(), "pooled transactions answered");
                    network.import_transactions(peer, p.message.0, Some(&hashes), &pool).await
                }
                Ok(_) => {
                    network.report_bad_message(peer);
                    hashes
                }
                Err(e) => {
                    tracing::debug!(target: "net::devp2p", %peer, error = %e, "pooled transactions not fetched");
                    hashes
                }
            };
            let next = network
                .transactions
                .lock()
                .expect("transactions lock")
                .fetcher
                .failed(peer, &undelivered);
            network.spawn_fetches(next);
        })
    }

    /// Imports `raws` from `peer` (the answer to `asked`, or a `Transactions` broadcast when
    /// `None`) into the pool on a blocking thread, as geth's handler and fetcher take them:
    /// a message with a transaction that breaks the wire's rules
    /// ([`check_network_transaction`]), or the same transaction twice, drops the peer and is
    /// not imported; every announcer of a transaction that named another type or size is
    /// dropped; then the pool validates, and a transaction it finds invalid, or one not asked
    /// for, drops the peer. Returns the asked hashes not delivered valid.
    async fn import_transactions(
        &self,
        peer: PeerId,
        raws: Vec<Bytes>,
        asked: Option<&[B256]>,
        pool: &Arc<dyn NetworkPool>,
    ) -> Vec<B256> {
        let all_asked = || asked.map_or_else(Vec::new, <[B256]>::to_vec);
        let eth72 = self.version_of(&peer).is_some_and(|v| v >= EthVersion::Eth72);
        let mut identified = Vec::with_capacity(raws.len());
        let mut seen = HashSet::with_capacity(raws.len());
        let mut blobless = Vec::new();
        for raw in &raws {
            match check_network_transaction(raw, asked.is_none(), eth72) {
                Ok(checked) if seen.insert(checked.hash) => {
                    identified.push((checked.hash, checked.tx_type, raw.len() as u32));
                    if eth72 && checked.blobs > 0 {
                        blobless.push(checked.hash);
                    }
                }
                Ok(Checked { hash, .. }) => {
                    tracing::debug!(target: "net::devp2p", %peer, %hash, "the same transaction twice in one message");
                    self.report_bad_message(peer);
                    return all_asked();
                }
                Err(violation) => {
                    tracing::debug!(target: "net::devp2p", %peer, %violation, "peer broke the transaction rules");
                    self.report_bad_message(peer);
                    return all_asked();
                }
            }
        }
        let unasked = asked
            .and_then(|a| identified.iter().find(|(h, _, _)| !a.contains(h)).map(|(h, _, _)| *h));
        let mismatched: Vec<PeerId> = {
            let mut txs = self.transactions.lock().expect("transactions lock");
            identified
                .iter()
                .flat_map(|(hash, tx_type, size)| {
                    txs.fetcher.arrived(hash, *tx_type, *size).mismatched
                })
                .collect()
        };
        for bad in mismatched {
            tracing::debug!(target: "net::devp2p", peer = %bad, "announced a transaction's type or size wrong");
            self.report_bad_message(bad);
        }
        // eth/72: a blob transaction came without its blobs; they are fetched as cells, and
        // the transaction goes to the pool with them (`fetch_cells`).
        let (mut to_pool, mut to_identify) = (Vec::new(), Vec::new());
        for (raw, id) in raws.into_iter().zip(identified) {
            if blobless.contains(&id.0) {
                tokio::spawn(self.fetch_cells(peer, id.0, raw, pool.clone()));
            } else {
                to_pool.push(raw);
                to_identify.push(id);
            }
        }
        let (raws, identified) = (to_pool, to_identify);
        let mut delivered: HashSet<B256> = blobless.iter().copied().collect();
        let pool = pool.clone();
        let imported = tokio::task::spawn_blocking(move || pool.import(&raws)).await;
        let results = match imported {
            Ok(results) => results,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return Vec::new(),
        };
        let mut invalid = None;
        {
            let mut txs = self.transactions.lock().expect("transactions lock");
            for ((hash, _, _), result) in identified.iter().zip(&results) {
                tracing::trace!(target: "net::devp2p", %peer, %hash, ?result, "transaction from a peer");
                match result {
                    Err(e @ PoolImportError::Invalid(_)) => {
                        invalid.get_or_insert_with(|| e.to_string());
                    }
                    Ok(_) | Err(PoolImportError::Declined(_)) => {
                        delivered.insert(*hash);
                        txs.fetcher.delivered(hash);
                        if result.is_ok() {
                            txs.remember_origin(*hash, peer);
                        }
                    }
                }
            }
        }
        if let Some(reason) = invalid {
            tracing::debug!(target: "net::devp2p", %peer, %reason, "peer sent an invalid transaction");
            self.report_bad_message(peer);
        } else if let Some(unasked) = unasked {
            tracing::debug!(target: "net::devp2p", %peer, %unasked, "a transaction not asked for");
            self.report_bad_message(peer);
        }
        asked.map_or_else(Vec::new, |a| {
            a.iter().filter(|h| !delivered.contains(*h)).copied().collect()
        })
    }

    /// Fetches the blobs of blob transaction `hash` (`raw`: its network form without them,
    /// delivered by `peer` over eth/72) as the cells of columns 0..63 from the peers that
    /// announced holding them (`peer` first), and hands the rebuilt transaction to the pool.
    /// Cells that are not 64 a blob, or whose blobs fail the pool's KZG check, drop the peer
    /// that sent them, and the next holder is asked; an answer without the transaction, a
    /// timeout or a lost session only moves on to the next.
    fn fetch_cells(
        &self,
        peer: PeerId,
        hash: B256,
        raw: Bytes,
        pool: Arc<dyn NetworkPool>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        let network = self.clone();
        Box::pin(async move {
            let holders = network
                .transactions
                .lock()
                .expect("transactions lock")
                .fetcher
                .blob_holders(&hash, peer);
            for holder in holders {
                let request = EthMessage::GetCells(GetCells {
                    request_id: 0,
                    hashes: vec![hash],
                    mask: blob_columns(),
                });
                tracing::debug!(target: "net::devp2p", peer = %holder, %hash, "asking for cells");
                let cells = match network.request(holder, request).await {
                    Ok(EthMessage::Cells(c)) if c.mask != blob_columns() => {
                        tracing::debug!(target: "net::devp2p", peer = %holder, "cells of other columns");
                        continue;
                    }
                    Ok(EthMessage::Cells(c)) => match c.hashes.iter().position(|h| *h == hash) {
                        Some(i) if c.hashes.len() == c.cells.len() => c.cells[i].clone(),
                        Some(_) => {
                            network.report_bad_message(holder);
                            continue;
                        }
                        None => continue,
                    },
                    Ok(_) => {
                        network.report_bad_message(holder);
                        continue;
                    }
                    Err(e) => {
                        tracing::debug!(target: "net::devp2p", peer = %holder, error = %e, "cells not fetched");
                        continue;
                    }
                };
                let full = match with_blobs(&raw, &cells) {
                    Ok(full) => Bytes::from(full),
                    Err(violation) => {
                        tracing::debug!(target: "net::devp2p", peer = %holder, %violation, "bad cells");
                        network.report_bad_message(holder);
                        continue;
                    }
                };
                let pool = pool.clone();
                let result = match tokio::task::spawn_blocking(move || pool.import(&[full])).await {
                    Ok(mut results) => results.pop(),
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                    Err(_) => return,
                };
                tracing::debug!(target: "net::devp2p", peer = %holder, %hash, ?result, "blob transaction rebuilt from cells");
                match result {
                    Some(Err(PoolImportError::Invalid(reason))) => {
                        tracing::debug!(target: "net::devp2p", peer = %holder, %reason, "cells that do not verify");
                        network.report_bad_message(holder);
                    }
                    Some(Ok(_)) => {
                        let mut txs = network.transactions.lock().expect("transactions lock");
                        txs.fetcher.delivered(&hash);
                        txs.remember_origin(hash, peer);
                        return;
                    }
                    _ => {
                        network
                            .transactions
                            .lock()
                            .expect("transactions lock")
                            .fetcher
                            .delivered(&hash);
                        return;
                    }
                }
            }
            network.transactions.lock().expect("transactions lock").fetcher.delivered(&hash);
        })
    }

    /// Announces transactions the pool took to every session but the one each came from
    /// (`NewPooledTransactionHashes`, at most [`MAX_ANNOUNCED_HASHES`] a message).
    pub fn announce_transactions(&self, announced: &[TransactionAnnouncement]) {
        let origins: Vec<Option<PeerId>> = {
            let txs = self.transactions.lock().expect("transactions lock");
            announced.iter().map(|a| txs.origins.get(&a.hash).copied()).collect()
        };
        let sessions = self.sessions.lock().expect("sessions lock");
        for (peer, session) in &sessions.active {
            let to_peer: Vec<&TransactionAnnouncement> = announced
                .iter()
                .zip(&origins)
                .filter(|(_, origin)| **origin != Some(*peer))
                .map(|(a, _)| a)
                .collect();
            // On eth/72 a blob transaction is announced at its size without blobs, with the
            // columns held: all of them (the pool keeps whole blobs).
            let eth72 = session.info.version >= EthVersion::Eth72;
            for chunk in to_peer.chunks(MAX_ANNOUNCED_HASHES) {
                let message = NewPooledTransactionHashes {
                    types: chunk.iter().map(|a| a.tx_type).collect::<Vec<u8>>().into(),
                    sizes: chunk
                        .iter()
                        .map(|a| if eth72 { a.size_without_blobs } else { a.size })
                        .collect(),
                    hashes: chunk.iter().map(|a| a.hash).collect(),
                    mask: eth72.then_some(CustodyBitmap::ALL),
                };
                // A session too busy to take it misses this announcement.
                let _ = session.commands.try_send(SessionCommand::Send(
                    EthMessage::NewPooledTransactionHashes(message),
                ));
            }
        }
    }

    /// The same network gossiping transactions with `pool` ([`crate::transactions`]).
    pub fn with_pool(mut self, pool: Arc<dyn NetworkPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// The sessions open now.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.sessions
            .lock()
            .expect("sessions lock")
            .active
            .values()
            .map(|s| s.info.clone())
            .collect()
    }

    /// Sends `message` (a request) to `peer` and awaits the answer.
    async fn request(&self, peer: PeerId, message: EthMessage) -> Result<EthMessage, RequestError> {
        self.ask(peer, |reply| SessionCommand::Request { message, reply }).await
    }

    /// Hands `peer`'s session the command `command` makes of a reply channel, and awaits the
    /// reply.
    async fn ask<T>(
        &self,
        peer: PeerId,
        command: impl FnOnce(oneshot::Sender<Result<T, SessionRequestError>>) -> SessionCommand,
    ) -> Result<T, RequestError> {
        let commands = {
            let sessions = self.sessions.lock().expect("sessions lock");
            sessions.active.get(&peer).map(|s| s.commands.clone())
        };
        let closed = || RequestError::Transport(Box::new(SessionRequestError::Closed));
        let commands = commands.ok_or_else(closed)?;
        let (reply, answer) = oneshot::channel();
        commands.send(command(reply)).await.map_err(|_| closed())?;
        answer.await.map_err(|_| closed())?.map_err(|e| RequestError::Transport(Box::new(e)))
    }

    /// Sends snap request `message` to `peer` (its request id is set by the session) and
    /// awaits the answer of its kind; the answer is not checked here (a snap client verifies
    /// its proofs).
    ///
    /// # Errors
    /// [`RequestError::Transport`] when the session is gone, the peer does not answer within
    /// [`crate::REQUEST_TIMEOUT`] or answers with another kind (the session then ends).
    pub async fn snap_request(
        &self,
        peer: PeerId,
        message: gigagas_eth_wire_types::SnapMessage,
    ) -> Result<gigagas_eth_wire_types::SnapMessage, RequestError> {
        self.ask(peer, |reply| SessionCommand::SnapRequest { message, reply }).await
    }

    fn version_of(&self, peer: &PeerId) -> Option<EthVersion> {
        self.sessions.lock().expect("sessions lock").active.get(peer).map(|s| s.info.version)
    }
}

impl BlockClient for Devp2pNetwork {
    type Peer = PeerId;

    fn peers(&self) -> Vec<PeerId> {
        let sessions = self.sessions.lock().expect("sessions lock");
        sessions.active.keys().filter(|p| !sessions.banned.contains(*p)).copied().collect()
    }

    async fn get_headers(
        &self,
        peer: PeerId,
        start: HashOrNumber,
        limit: u64,
        reverse: bool,
    ) -> Result<Vec<Header>, RequestError> {
        let message = EthMessage::GetBlockHeaders(RequestPair {
            request_id: 0,
            message: HeadersRequest {
                origin: start,
                amount: limit.min(MAX_HEADERS),
                skip: 0,
                reverse,
            },
        });
        match self.request(peer, message).await? {
            EthMessage::BlockHeaders(p) => Ok(p.message),
            _ => Err(RequestError::UnexpectedResponse { expected: "BlockHeaders" }),
        }
    }

    async fn get_block_bodies(
        &self,
        peer: PeerId,
        mut hashes: Vec<B256>,
    ) -> Result<Vec<BlockBody<TxEnvelope>>, RequestError> {
        hashes.truncate(MAX_REQUEST_ITEMS);
        let message = EthMessage::GetBlockBodies(RequestPair { request_id: 0, message: hashes });
        match self.request(peer, message).await? {
            EthMessage::BlockBodies(p) => Ok(p.message),
            _ => Err(RequestError::UnexpectedResponse { expected: "BlockBodies" }),
        }
    }

    async fn get_block_access_lists(
        &self,
        peer: PeerId,
        mut hashes: Vec<B256>,
    ) -> Result<Vec<Option<BlockAccessList>>, RequestError> {
        // A peer below eth/71 has no way to send BALs: none, each block executes without.
        if self.version_of(&peer).is_none_or(|v| v < EthVersion::Eth71) {
            return Ok(vec![None; hashes.len()]);
        }
        hashes.truncate(MAX_REQUEST_ITEMS);
        let message =
            EthMessage::GetBlockAccessLists(RequestPair { request_id: 0, message: hashes });
        match self.request(peer, message).await? {
            EthMessage::BlockAccessLists(p) => Ok(p.message.0),
            _ => Err(RequestError::UnexpectedResponse { expected: "BlockAccessLists" }),
        }
    }

    async fn get_receipts(
        &self,
        peer: PeerId,
        mut hashes: Vec<B256>,
    ) -> Result<Vec<Vec<Receipt69>>, RequestError> {
        hashes.truncate(MAX_REQUEST_ITEMS);
        // eth/70 (EIP-7975) may cut the last block's list: it is asked again from the first
        // receipt missing, until whole.
        let eth70 = self.version_of(&peer).is_some_and(|v| v >= EthVersion::Eth70);
        let (mut out, mut partial): (Vec<Vec<Receipt69>>, Vec<Receipt69>) = Default::default();
        let mut next = 0;
        while next < hashes.len() {
            let message = EthMessage::GetReceipts {
                request_id: 0,
                first_block_receipt_index: eth70.then_some(partial.len() as u64),
                hashes: hashes[next..].to_vec(),
            };
            let (lists, incomplete) = match self.request(peer, message).await? {
                EthMessage::Receipts { receipts, last_block_incomplete, .. } => {
                    (receipts, last_block_incomplete.unwrap_or(false))
                }
                _ => return Err(RequestError::UnexpectedResponse { expected: "Receipts" }),
            };
            let count = lists.len();
            let before = partial.len();
            for (i, mut list) in lists.into_iter().enumerate() {
                if i == 0 && !partial.is_empty() {
                    let mut whole = std::mem::take(&mut partial);
                    whole.append(&mut list);
                    list = whole;
                }
                if i + 1 == count && incomplete {
                    partial = list;
                } else {
                    out.push(list);
                }
            }
            // A cut list that did not grow would be asked for forever: the answer ends here
            // (shorter than asked, as a peer may answer).
            if count == 0 || !incomplete || (count == 1 && partial.len() <= before) {
                break;
            }
            next += count - 1;
        }
        Ok(out)
    }

    fn report_bad_message(&self, peer: PeerId) {
        let mut sessions = self.sessions.lock().expect("sessions lock");
        sessions.banned.insert(peer);
        if let Some(s) = sessions.active.get(&peer) {
            let _ =
                s.commands.try_send(SessionCommand::Disconnect(DisconnectReason::ProtocolError));
        }
    }
}

impl gigagas_net_api::NetworkInfo for Devp2pNetwork {
    fn transport(&self) -> &'static str {
        "devp2p"
    }

    fn node_info(&self) -> gigagas_net_api::NodeInfo {
        let enode = self.enode();
        // Its own statement: the guard must be gone before `enr` locks `listening` again.
        let listening = *self.listening.lock().expect("listening lock");
        gigagas_net_api::NodeInfo {
            id: alloy_primitives::hex::encode(self.local_id()),
            name: self.local().client_version,
            listen_addr: listening.map(|a| a.to_string()).unwrap_or_default(),
            enode: enode.map(|e| e.to_string()),
            enr: self.enr().map(|e| e.to_base64()),
            listener_port: enode.map_or(0, |e| e.tcp_port),
            discovery_port: enode.map_or(0, |e| e.udp_port),
            transport: "devp2p",
        }
    }

    fn peers(&self) -> Vec<gigagas_net_api::PeerInfo> {
        let statics = self.static_peers();
        self.sessions()
            .into_iter()
            .map(|s| gigagas_net_api::PeerInfo {
                id: alloy_primitives::hex::encode(s.record.id),
                name: s.client_version,
                remote_addr: s.record.tcp_addr().to_string(),
                caps: vec![format!("eth/{}", s.version.number())],
                enode: Some(s.record.to_string()),
                inbound: s.inbound,
                is_static: statics.iter().any(|r| r.id == s.record.id),
                transport: "devp2p",
            })
            .collect()
    }

    fn peer_count(&self) -> usize {
        self.sessions.lock().expect("sessions lock").active.len()
    }

    fn add_peer(&self, address: &str) -> Result<(), gigagas_net_api::AddPeerError> {
        let record: NodeRecord = address
            .parse()
            .map_err(|e| gigagas_net_api::AddPeerError::InvalidAddress(format!("{e}")))?;
        self.add_static_peer(record);
        let network = self.clone();
        tokio::spawn(async move {
            if let Err(e) = network.dial(record).await {
                tracing::debug!(target: "net::devp2p", peer = %record, error = %e, "added peer did not answer");
            }
        });
        Ok(())
    }
}

impl SnapClient for Devp2pNetwork {
    type Peer = PeerId;

    fn snap_peers(&self) -> Vec<PeerId> {
        let sessions = self.sessions.lock().expect("sessions lock");
        sessions
            .active
            .iter()
            .filter(|(p, s)| s.info.snap.is_some() && !sessions.banned.contains(*p))
            .map(|(p, _)| *p)
            .collect()
    }

    async fn get_account_range(
        &self,
        peer: PeerId,
        request: gigagas_eth_wire_types::snap::GetAccountRange,
    ) -> Result<gigagas_eth_wire_types::snap::AccountRange, RequestError> {
        match self.snap_request(peer, SnapMessage::GetAccountRange(request)).await? {
            SnapMessage::AccountRange(answer) => Ok(answer),
            _ => Err(RequestError::UnexpectedResponse { expected: "AccountRange" }),
        }
    }

    async fn get_storage_ranges(
        &self,
        peer: PeerId,
        request: gigagas_eth_wire_types::snap::GetStorageRanges,
    ) -> Result<gigagas_eth_wire_types::snap::StorageRanges, RequestError> {
        match self.snap_request(peer, SnapMessage::GetStorageRanges(request)).await? {
            SnapMessage::StorageRanges(answer) => Ok(answer),
            _ => Err(RequestError::UnexpectedResponse { expected: "StorageRanges" }),
        }
    }

    async fn get_byte_codes(
        &self,
        peer: PeerId,
        request: gigagas_eth_wire_types::snap::GetByteCodes,
    ) -> Result<gigagas_eth_wire_types::snap::ByteCodes, RequestError> {
        match self.snap_request(peer, SnapMessage::GetByteCodes(request)).await? {
            SnapMessage::ByteCodes(answer) => Ok(answer),
            _ => Err(RequestError::UnexpectedResponse { expected: "ByteCodes" }),
        }
    }

    fn report_bad_snap_message(&self, peer: PeerId) {
        BlockClient::report_bad_message(self, peer);
    }
}
