//! The network manager (reth's `NetworkManager`): one task owns the listener, the sessions,
//! the peer manager ([`PeersManager`]: dial policy, bans) and what the node says in its
//! handshakes, and publishes what handles may read ([`NetworkState`]) on a watch channel.
//!
//! Flow: handles send [`NetworkCommand`]s (dial, listen, a new head, a bad peer, transactions
//! to announce, a discovered node); handshakes (`handshake.rs`) and sessions (`session.rs`)
//! run on tasks of their own, spawned through the task executor, and report back
//! (a peer to admit, a session established or closed, a peer's message); each second the peer
//! manager names whom to dial; a peer's transaction messages go on to the transactions manager
//! (`transactions/manager.rs`), whose bad peers come back to be banned. On the graceful
//! shutdown signal, or once every handle is gone, every session is told `ClientQuitting`.

use crate::{
    config::{NetworkConfig, BLOCK_RANGE_UPDATE_INTERVAL},
    handshake::Handshake,
    peers::PeersManager,
    serve::Serving,
    session::{self, PeerMessage, SessionCommand, SessionEnd, Stream},
    transactions::{
        manager::{TransactionsEvent, TransactionsManager},
        TransactionAnnouncement,
    },
    LocalNode, SessionError, SessionInfo,
};
use alloy_eip2124::ForkId;
use alloy_primitives::B256;
use futures::FutureExt;
use gigagas_eth_wire::{DisconnectReason, P2PStreamError};
use gigagas_eth_wire_types::{BlockRangeUpdate, EthMessage};
use gigagas_net_ecies::peer_id;
use gigagas_net_peers::{Enr, NodeRecord, PeerId};
use gigagas_tasks::{GracefulShutdown, TaskExecutor};
use std::{
    collections::HashMap,
    net::SocketAddr,
    panic::AssertUnwindSafe,
    sync::Arc,
    time::{Duration, Instant},
};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{mpsc, oneshot, watch},
};

/// How often the peer manager is asked whom to dial.
const DIAL_TICK: Duration = Duration::from_secs(1);

/// Session command channel's capacity (a session too busy misses announcements).
const SESSION_COMMANDS: usize = 64;

/// What handles ask of the manager.
#[derive(Debug)]
pub(crate) enum NetworkCommand {
    /// Accept sessions on `listener`; `reply` once the state says so.
    Listen { listener: TcpListener, reply: oneshot::Sender<()> },
    /// Dial `record`; `reply` with the session, or why there is none.
    Dial { record: NodeRecord, reply: oneshot::Sender<Result<SessionInfo, SessionError>> },
    /// Keep a session with `record` (dialed now).
    AddStaticPeer(NodeRecord),
    /// Discovery found `record` (on `fork_id` when its ENR says, checked against the filter).
    Discovered { record: NodeRecord, fork_id: Option<ForkId>, via: &'static str },
    /// The head moved; `reply` with the fork id at it.
    UpdateHead { number: u64, hash: B256, timestamp: u64, reply: oneshot::Sender<ForkId> },
    /// Discovery answers on UDP `port` with record `enr`; `reply` once the state says so.
    SetDiscovery { port: u16, enr: Enr, reply: oneshot::Sender<()> },
    /// The pool took these: announce them.
    AnnounceTransactions(Vec<TransactionAnnouncement>),
    /// `peer` sent what no honest peer sends: drop and ban it.
    ReportBadMessage(PeerId),
}

/// What handles read without asking: published by the manager on every change.
#[derive(Debug, Clone)]
pub(crate) struct NetworkState {
    /// What the node says in its handshakes now.
    pub(crate) local: LocalNode,
    /// The listener's bound address, once listening.
    pub(crate) listening: Option<SocketAddr>,
    /// Discovery's record of this node, while discovery runs.
    pub(crate) discovery_enr: Option<Enr>,
    /// The sessions open (a banned peer's is left out from the ban on).
    pub(crate) sessions: HashMap<PeerId, PublishedSession>,
    /// The peers a session is kept with.
    pub(crate) static_peers: Vec<NodeRecord>,
}

/// A session as handles see it: what is known of it, and where its requests go.
#[derive(Debug, Clone)]
pub(crate) struct PublishedSession {
    /// What is known of it.
    pub(crate) info: SessionInfo,
    /// Its command channel.
    pub(crate) commands: mpsc::Sender<SessionCommand>,
}

/// Why a dial was made: a handle asked (and waits), or the peer manager's policy.
#[derive(Debug)]
enum DialReason {
    Requested(oneshot::Sender<Result<SessionInfo, SessionError>>),
    Policy,
}

/// What the manager's own tasks report.
enum ManagerEvent {
    /// A peer that dialed in said `Hello`: may it stay?
    Admit { peer: PeerId, reply: oneshot::Sender<Option<DisconnectReason>> },
    /// Handshakes done: start the session (`dial`: why it was dialed; none: inbound).
    Established { stream: Box<Stream>, info: SessionInfo, dial: Option<DialReason> },
    /// A dial failed.
    DialFailed { record: NodeRecord, error: SessionError, dial: DialReason },
    /// Session number `session` with `peer` got `message`.
    Message { peer: PeerId, session: u64, message: PeerMessage },
    /// Session number `session` with `peer` ended.
    Closed { peer: PeerId, session: u64, reason: SessionEnd },
}

/// A session the manager keeps.
struct ActiveSession {
    /// Its number (a replaced session's end does not remove its successor).
    id: u64,
    commands: mpsc::Sender<SessionCommand>,
    info: SessionInfo,
}

/// The network's task (see the module doc).
pub(crate) struct NetworkManager {
    local: LocalNode,
    local_id: PeerId,
    serving: Serving,
    peers: PeersManager,
    sessions: HashMap<PeerId, ActiveSession>,
    next_session: u64,
    listener: Option<TcpListener>,
    listening: Option<SocketAddr>,
    discovery_enr: Option<Enr>,
    /// The latest block announced to the sessions (in `Status` or `BlockRangeUpdate`).
    announced: u64,
    commands: mpsc::UnboundedReceiver<NetworkCommand>,
    events: mpsc::UnboundedReceiver<ManagerEvent>,
    events_tx: mpsc::UnboundedSender<ManagerEvent>,
    /// The transactions manager, when a pool is gossiped with.
    transactions: Option<mpsc::UnboundedSender<TransactionsEvent>>,
    /// Peers the transactions manager names to drop.
    bad_peers: mpsc::UnboundedReceiver<PeerId>,
    state: watch::Sender<Arc<NetworkState>>,
    executor: TaskExecutor,
}

impl NetworkManager {
    /// Spawns the manager for `config` on `executor` (and the transactions manager when a
    /// pool is set); returns its command channel, its published state and the node's id.
    pub(crate) fn spawn(
        config: NetworkConfig,
        executor: TaskExecutor,
    ) -> (mpsc::UnboundedSender<NetworkCommand>, watch::Receiver<Arc<NetworkState>>, PeerId) {
        let NetworkConfig { local, server, snap, pool, max_peers, static_peers, bootnodes, .. } =
            config;
        let local_id = peer_id(&local.secret.public_key());
        let (commands_tx, commands) = mpsc::unbounded_channel();
        let (events_tx, events) = mpsc::unbounded_channel();
        let (bad_peers_tx, bad_peers) = mpsc::unbounded_channel();
        let transactions = pool.clone().map(|pool| {
            let (tx, rx) = mpsc::unbounded_channel();
            executor.spawn_critical(
                "devp2p-tx-manager",
                TransactionsManager::new(pool, rx, bad_peers_tx.clone()).run(),
            );
            tx
        });
        let now = Instant::now();
        let manager = Self {
            announced: local.status.latest,
            local: local.clone(),
            local_id,
            serving: Serving { chain: server, snap, pool },
            peers: PeersManager::new(local_id, max_peers, &static_peers, bootnodes, now),
            sessions: HashMap::new(),
            next_session: 0,
            listener: None,
            listening: None,
            discovery_enr: None,
            commands,
            events,
            events_tx,
            transactions,
            bad_peers,
            state: watch::channel(Arc::new(NetworkState {
                local: local.clone(),
                listening: None,
                discovery_enr: None,
                sessions: HashMap::new(),
                static_peers: Vec::new(),
            }))
            .0,
            executor: executor.clone(),
        };
        manager.publish();
        let state = manager.state.subscribe();
        executor.spawn_critical_with_graceful_shutdown_signal("devp2p-network", |shutdown| {
            manager.run(shutdown)
        });
        (commands_tx, state, local_id)
    }

    /// Publishes the state handles read.
    fn publish(&self) {
        let sessions = self
            .sessions
            .iter()
            .filter(|(peer, _)| !self.peers.is_banned(peer))
            .map(|(peer, s)| {
                (*peer, PublishedSession { info: s.info.clone(), commands: s.commands.clone() })
            })
            .collect();
        self.state.send_replace(Arc::new(NetworkState {
            local: self.local.clone(),
            listening: self.listening,
            discovery_enr: self.discovery_enr.clone(),
            sessions,
            static_peers: self.peers.statics(),
        }));
    }

    async fn run(mut self, shutdown: GracefulShutdown) {
        let GracefulShutdown { signal, guard } = shutdown;
        let signal = signal.fired();
        tokio::pin!(signal);
        let mut tick = tokio::time::interval(DIAL_TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                command = self.commands.recv() => match command {
                    Some(command) => self.on_command(command),
                    None => break,
                },
                Some(event) = self.events.recv() => self.on_event(event),
                Some(peer) = self.bad_peers.recv() => self.ban(peer),
                accepted = accept(self.listener.as_ref()) => match accepted {
                    Ok((io, remote)) => self.spawn_accept(io, remote),
                    Err(e) => tracing::debug!(target: "net::devp2p", error = %e, "accept failed"),
                },
                _ = tick.tick() => self.dial_due(),
                () = &mut signal => break,
            }
        }
        tracing::debug!(target: "net::devp2p", sessions = self.sessions.len(), "network stopping");
        for session in self.sessions.values() {
            let _ = session
                .commands
                .try_send(SessionCommand::Disconnect(DisconnectReason::ClientQuitting));
        }
        self.sessions.clear();
        self.publish();
        drop(guard);
    }

    fn on_command(&mut self, command: NetworkCommand) {
        match command {
            NetworkCommand::Listen { listener, reply } => {
                self.listening = listener.local_addr().ok();
                self.local.port = self.listening.map_or(0, |a| a.port());
                self.listener = Some(listener);
                self.publish();
                let _ = reply.send(());
            }
            NetworkCommand::Dial { record, reply } => {
                self.spawn_dial(record, DialReason::Requested(reply));
            }
            NetworkCommand::AddStaticPeer(record) => {
                self.peers.add_static(record, Instant::now());
                self.publish();
                self.dial_due();
            }
            NetworkCommand::Discovered { record, fork_id, via } => {
                if let Some(fork_id) =
                    fork_id.filter(|f| self.local.fork_filter.validate(*f).is_err())
                {
                    tracing::debug!(target: "net::devp2p", peer = %record, ?fork_id, via, "discovered node on another fork: not dialed");
                } else if self.sessions.contains_key(&record.id) {
                    // Already in session (it dialed in, say): a second session would end one.
                } else if self.peers.add_discovered(record, Instant::now()) {
                    tracing::trace!(target: "net::devp2p", peer = %record, via, "discovered node");
                    self.dial_due();
                }
            }
            NetworkCommand::UpdateHead { number, hash, timestamp, reply } => {
                self.update_head(number, hash, timestamp);
                let _ = reply.send(self.local.status.fork_id);
            }
            NetworkCommand::SetDiscovery { port, enr, reply } => {
                self.local.discovery_port = port;
                self.discovery_enr = Some(enr);
                self.publish();
                let _ = reply.send(());
            }
            NetworkCommand::AnnounceTransactions(announced) => {
                if let Some(tx) = &self.transactions {
                    let _ = tx.send(TransactionsEvent::Announce(announced));
                }
            }
            NetworkCommand::ReportBadMessage(peer) => self.ban(peer),
        }
    }

    fn on_event(&mut self, event: ManagerEvent) {
        match event {
            ManagerEvent::Admit { peer, reply } => {
                let _ = reply.send(self.peers.admit_inbound(&peer, self.sessions.len()));
            }
            ManagerEvent::Established { stream, info, dial } => {
                if self.peers.is_banned(&info.record.id) {
                    let reason = DisconnectReason::UselessPeer;
                    let mut stream = stream;
                    self.executor.spawn(async move {
                        let _ = stream.p2p_mut().disconnect(reason).await;
                    });
                    if let Some(DialReason::Requested(reply)) = dial {
                        let refused = SessionError::P2P(P2PStreamError::Disconnected(reason));
                        let _ = reply.send(Err(refused));
                    }
                    return;
                }
                self.start_session(*stream, info.clone());
                if let Some(DialReason::Requested(reply)) = dial {
                    let _ = reply.send(Ok(info));
                }
            }
            ManagerEvent::DialFailed { record, error, dial } => match dial {
                DialReason::Requested(reply) => {
                    let _ = reply.send(Err(error));
                }
                DialReason::Policy => {
                    self.peers.on_dial_failed(record.id, Instant::now());
                    let what = match self.peers.kind(&record.id) {
                        Some(crate::peers::PeerKind::Bootnode) => "bootnode",
                        Some(crate::peers::PeerKind::Static) => "trusted peer",
                        _ => "peer",
                    };
                    if self.sessions.is_empty() {
                        tracing::warn!(target: "net::devp2p", peer = %record.tcp_addr(), %error, bootnodes = self.peers.bootnode_count(), "no session, and a {what} did not answer");
                    } else {
                        tracing::debug!(target: "net::devp2p", peer = %record, %error, "a {what} did not answer");
                    }
                }
            },
            ManagerEvent::Message { peer, session, message } => match message {
                // The peer's announced range is what it is asked for (its `Status` at first).
                PeerMessage::Range(range) => {
                    if let Some(s) = self.sessions.get_mut(&peer).filter(|s| s.id == session) {
                        s.info.status.earliest = range.earliest;
                        s.info.status.latest = range.latest;
                        s.info.status.latest_hash = range.latest_hash;
                        self.publish();
                    }
                }
                PeerMessage::Hashes(announced) => {
                    if let Some(tx) = &self.transactions {
                        let _ = tx.send(TransactionsEvent::Hashes { peer, announced });
                    }
                }
                PeerMessage::Transactions(sent) => {
                    if let Some(tx) = &self.transactions {
                        let _ = tx.send(TransactionsEvent::Transactions { peer, raws: sent.0 });
                    }
                }
            },
            ManagerEvent::Closed { peer, session, reason } => {
                tracing::info!(target: "net::devp2p", %peer, %reason, "session closed");
                if self.sessions.get(&peer).is_some_and(|s| s.id == session) {
                    self.sessions.remove(&peer);
                    self.peers.on_session_closed(peer, Instant::now());
                    if let Some(tx) = &self.transactions {
                        let _ = tx.send(TransactionsEvent::SessionClosed(peer));
                    }
                    self.publish();
                }
            }
        }
    }

    /// Bans `peer` and disconnects it (`ProtocolError`).
    fn ban(&mut self, peer: PeerId) {
        self.peers.ban(peer);
        if let Some(s) = self.sessions.get(&peer) {
            let _ =
                s.commands.try_send(SessionCommand::Disconnect(DisconnectReason::ProtocolError));
        }
        self.publish();
    }

    /// The node's head moved to block `number` (`hash`, made at `timestamp`): new sessions'
    /// `Status` says so (its fork id too, the fork filter moved to the head), and the open
    /// sessions get a `BlockRangeUpdate` once the head is [`BLOCK_RANGE_UPDATE_INTERVAL`]
    /// blocks past the last one announced, or behind it.
    fn update_head(&mut self, number: u64, hash: B256, timestamp: u64) {
        let local = &mut self.local;
        local.fork_filter.set_head(alloy_eip2124::Head {
            number,
            hash,
            timestamp,
            ..Default::default()
        });
        local.status.fork_id = local.fork_filter.current();
        local.status.latest = number;
        local.status.latest_hash = hash;
        let update =
            BlockRangeUpdate { earliest: local.status.earliest, latest: number, latest_hash: hash };
        self.publish();
        let announced = self.announced;
        if number >= announced && number - announced < BLOCK_RANGE_UPDATE_INTERVAL {
            return;
        }
        self.announced = number;
        for session in self.sessions.values() {
            // A session too busy to take it gets the next one.
            let _ = session
                .commands
                .try_send(SessionCommand::Send(EthMessage::BlockRangeUpdate(update)));
        }
    }

    /// Dials whom the peer manager names now.
    fn dial_due(&mut self) {
        for record in self.peers.dials_due(self.sessions.len(), Instant::now()) {
            self.spawn_dial(record, DialReason::Policy);
        }
    }

    fn handshake(&self) -> Handshake {
        Handshake { local: self.local.clone(), snap: self.serving.snap.is_some() }
    }

    /// Dials `record` on a task of its own; the result comes back as an event.
    fn spawn_dial(&self, record: NodeRecord, dial: DialReason) {
        if record.id == self.local_id {
            if let DialReason::Requested(reply) = dial {
                let to_self = DisconnectReason::ConnectedToSelf;
                let _ = reply.send(Err(SessionError::P2P(P2PStreamError::Disconnected(to_self))));
            }
            return;
        }
        let (handshake, events) = (self.handshake(), self.events_tx.clone());
        self.executor.spawn(async move {
            let event = match handshake.dial(record).await {
                Ok((stream, info)) => {
                    ManagerEvent::Established { stream: Box::new(stream), info, dial: Some(dial) }
                }
                Err(error) => ManagerEvent::DialFailed { record, error, dial },
            };
            let _ = events.send(event);
        });
    }

    /// Runs the recipient's handshakes with `remote` on a task of its own.
    fn spawn_accept(&self, io: TcpStream, remote: SocketAddr) {
        let (handshake, events) = (self.handshake(), self.events_tx.clone());
        self.executor.spawn(async move {
            let admit = |peer| {
                let (reply, answer) = oneshot::channel();
                events.send(ManagerEvent::Admit { peer, reply }).ok().map(|()| answer)
            };
            match handshake.accept(io, remote, admit).await {
                Ok((stream, info)) => {
                    let stream = Box::new(stream);
                    let _ = events.send(ManagerEvent::Established { stream, info, dial: None });
                }
                Err(e) => {
                    tracing::debug!(target: "net::devp2p", %remote, error = %e, "inbound session refused")
                }
            }
        });
    }

    /// Starts the session on `stream` on a task of its own (one with the same peer is told
    /// `AlreadyConnected`); a panic in it ends only it, logged, as a closed session.
    fn start_session(&mut self, stream: Stream, info: SessionInfo) {
        let (commands, rx) = mpsc::channel(SESSION_COMMANDS);
        let peer = info.record.id;
        let id = self.next_session;
        self.next_session += 1;
        let session = ActiveSession { id, commands: commands.clone(), info: info.clone() };
        if let Some(old) = self.sessions.insert(peer, session) {
            let _ = old
                .commands
                .try_send(SessionCommand::Disconnect(DisconnectReason::AlreadyConnected));
        }
        self.peers.on_session_established(peer);
        if let Some(tx) = &self.transactions {
            let _ = tx.send(TransactionsEvent::SessionEstablished {
                peer,
                version: info.version,
                commands,
            });
        }
        self.publish();
        tracing::info!(target: "net::devp2p", peer = %info.record, client = %info.client_version, version = info.version.number(), snap = info.snap.map_or(0, |v| v as u8), head = info.status.latest, inbound = info.inbound, "session established");
        let (messages, closed) = (self.events_tx.clone(), self.events_tx.clone());
        let on_message = move |message| {
            let _ = messages.send(ManagerEvent::Message { peer, session: id, message });
        };
        let on_close = {
            let closed = closed.clone();
            move |reason| {
                let _ = closed.send(ManagerEvent::Closed { peer, session: id, reason });
            }
        };
        let run = session::run(stream, info, self.serving.clone(), rx, on_message, on_close);
        self.executor.spawn(async move {
            if let Err(panic) = AssertUnwindSafe(run).catch_unwind().await {
                let message = gigagas_tasks::panic_message(&*panic);
                tracing::error!(target: "net::devp2p", %peer, %message, "session task panicked");
                let reason = SessionEnd::Panicked;
                let _ = closed.send(ManagerEvent::Closed { peer, session: id, reason });
            }
        });
    }
}

/// The next inbound connection on `listener`; pending while there is none.
async fn accept(listener: Option<&TcpListener>) -> std::io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(listener) => listener.accept().await,
        None => std::future::pending().await,
    }
}
