//! The devp2p network's handle (reth's `NetworkHandle`): cheap to clone, it sends commands to
//! the network manager (`manager.rs`) and reads the state the manager publishes (sessions,
//! what the node says in its handshakes) without asking; requests go straight to a session's
//! task, as the p2p client traits ([`BlockClient`], [`SnapClient`]) want.

use crate::{
    config::NetworkConfig,
    manager::{NetworkCommand, NetworkManager, NetworkState},
    session::{ask, SessionCommand},
    transactions::TransactionAnnouncement,
    LocalNode, SessionError,
};
use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_eip2124::ForkId;
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use gigagas_bal::BlockAccessList;
use gigagas_eth_wire_types::{
    EthMessage, EthVersion, HeadersRequest, Receipt69, RequestPair, SnapMessage, StatusMessage,
    MAX_HEADERS, MAX_REQUEST_ITEMS,
};
use gigagas_net_p2p::{BlockClient, RequestError, SnapClient};
use gigagas_net_peers::{NodeRecord, PeerId};
use gigagas_tasks::TaskManager;
use std::{net::SocketAddr, sync::Arc};
use tokio::sync::{mpsc, oneshot, watch};

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

/// The devp2p network: a handle on its manager, and the client side of block and snap sync
/// over its sessions.
#[derive(Clone)]
pub struct Devp2pNetwork {
    inner: Arc<NetworkInner>,
}

struct NetworkInner {
    to_manager: mpsc::UnboundedSender<NetworkCommand>,
    state: watch::Receiver<Arc<NetworkState>>,
    local_id: PeerId,
    max_peers: usize,
}

impl std::fmt::Debug for Devp2pNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Devp2pNetwork").field("id", &self.local_id()).finish()
    }
}

impl NetworkConfig {
    /// Starts the network: spawns its manager (and the transactions manager when a pool is
    /// set) and returns the handle. It listens once [`Devp2pNetwork::listen`] is called.
    ///
    /// # Panics
    /// Outside a Tokio runtime when no executor was given.
    pub fn start(mut self) -> Devp2pNetwork {
        let executor = self.executor.take().unwrap_or_else(|| TaskManager::current().executor());
        let max_peers = self.max_peers;
        let (to_manager, state, local_id) = NetworkManager::spawn(self, executor);
        Devp2pNetwork { inner: Arc::new(NetworkInner { to_manager, state, local_id, max_peers }) }
    }
}

impl Devp2pNetwork {
    /// The state the manager published last.
    fn state(&self) -> Arc<NetworkState> {
        self.inner.state.borrow().clone()
    }

    /// Sends `command` to the manager; false when it has stopped.
    fn send(&self, command: NetworkCommand) -> bool {
        self.inner.to_manager.send(command).is_ok()
    }

    /// What this node says in its handshakes now.
    pub fn local(&self) -> LocalNode {
        self.state().local.clone()
    }

    /// This node's id.
    pub fn local_id(&self) -> PeerId {
        self.inner.local_id
    }

    /// The node's head moved to block `number` (`hash`, made at `timestamp`): new sessions'
    /// `Status` says so (its fork id too, the fork filter moved to the head), and the open
    /// sessions get a `BlockRangeUpdate` once the head is
    /// [`crate::BLOCK_RANGE_UPDATE_INTERVAL`] blocks past the last one announced, or behind
    /// it. Returns the fork id at the new head (the current one when the network stopped).
    pub async fn update_head(&self, number: u64, hash: B256, timestamp: u64) -> ForkId {
        let (reply, answer) = oneshot::channel();
        if self.send(NetworkCommand::UpdateHead { number, hash, timestamp, reply }) {
            if let Ok(fork_id) = answer.await {
                return fork_id;
            }
        }
        self.fork_id()
    }

    /// The fork id this node is on (at its head, as its `Status` says).
    pub fn fork_id(&self) -> ForkId {
        self.state().local.status.fork_id
    }

    /// Whether a node announcing `fork_id` (a discovered node's ENR `eth` entry) is on a fork
    /// this node's filter accepts (EIP-2124's rules, as the `Status` handshake checks them).
    pub fn accepts_fork(&self, fork_id: ForkId) -> bool {
        self.state().local.fork_filter.validate(fork_id).is_ok()
    }

    /// Adds `record` to the peers a session is kept with ([`Devp2pNetwork::static_peers`]),
    /// and dials it.
    pub fn add_static_peer(&self, record: NodeRecord) {
        self.send(NetworkCommand::AddStaticPeer(record));
    }

    /// The peers a session is kept with (the manager dials those not in session).
    pub fn static_peers(&self) -> Vec<NodeRecord> {
        self.state().static_peers.clone()
    }

    /// Discovery (`via`: which) found `record`, on `fork_id` when its ENR says: the manager
    /// dials it while there is room, unless that fork is not this node's.
    pub fn discovered(&self, record: NodeRecord, fork_id: Option<ForkId>, via: &'static str) {
        self.send(NetworkCommand::Discovered { record, fork_id, via });
    }

    /// This node's enode URL, once listening: its node id at its external IP if set
    /// ([`LocalNode::external_ip`]), else the bound address (loopback when it listens on every
    /// interface).
    pub fn enode(&self) -> Option<NodeRecord> {
        let state = self.state();
        let bound = state.listening?;
        let address = if let Some(ip) = state.local.external_ip {
            ip
        } else if bound.ip().is_unspecified() {
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        } else {
            bound.ip()
        };
        Some(NodeRecord {
            address,
            tcp_port: bound.port(),
            udp_port: state.local.discovery_port,
            id: self.local_id(),
        })
    }

    /// Discovery answers on UDP `port` with record `enr` (the one it gives in `ENRResponse`):
    /// the enode says so, and [`Devp2pNetwork::enr`] is that record, once this returns.
    pub async fn set_discovery(&self, port: u16, enr: gigagas_net_peers::Enr) {
        let (reply, answer) = oneshot::channel();
        if self.send(NetworkCommand::SetDiscovery { port, enr, reply }) {
            let _ = answer.await;
        }
    }

    /// This node's EIP-778 record, once listening: discovery's, when it runs; else its IP
    /// (loopback when it listens on every interface, as [`Devp2pNetwork::enode`]) and TCP
    /// port, signed with its node key (sequence number 1).
    pub fn enr(&self) -> Option<gigagas_net_peers::Enr> {
        let state = self.state();
        if let Some(enr) = state.discovery_enr.clone() {
            return Some(enr);
        }
        let enode = self.enode()?;
        let key = gigagas_net_peers::enr::k256::ecdsa::SigningKey::from(state.local.secret.clone());
        let mut builder = gigagas_net_peers::Enr::builder();
        match enode.address {
            std::net::IpAddr::V4(ip) => builder.ip4(ip).tcp4(enode.tcp_port),
            std::net::IpAddr::V6(ip) => builder.ip6(ip).tcp6(enode.tcp_port),
        };
        builder.build(&key).ok()
    }

    /// The most sessions it keeps.
    pub fn max_peers(&self) -> usize {
        self.inner.max_peers
    }

    /// Listens for inbound sessions on `addr`; returns the bound address (an ephemeral port
    /// when `addr` asks for port 0). The manager accepts each connection and runs the
    /// recipient's handshakes on a task of its own; one beyond the peer limit, or from a
    /// banned peer, is refused.
    ///
    /// # Errors
    /// The bind failure; [`std::io::ErrorKind::BrokenPipe`] when the network has stopped.
    pub async fn listen(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        let (reply, answer) = oneshot::channel();
        let stopped = || std::io::Error::new(std::io::ErrorKind::BrokenPipe, "network stopped");
        if !self.send(NetworkCommand::Listen { listener, reply }) {
            return Err(stopped());
        }
        answer.await.map_err(|_| stopped())?;
        Ok(bound)
    }

    /// Dials `record`: TCP, the RLPx handshake, `Hello`, `Status`; the session then runs on a
    /// task of its own until the peer leaves. Returns once the manager has it.
    ///
    /// # Errors
    /// [`SessionError`] naming the step that failed; [`SessionError::NetworkStopped`].
    pub async fn dial(&self, record: NodeRecord) -> Result<SessionInfo, SessionError> {
        let (reply, answer) = oneshot::channel();
        if !self.send(NetworkCommand::Dial { record, reply }) {
            return Err(SessionError::NetworkStopped);
        }
        answer.await.map_err(|_| SessionError::NetworkStopped)?
    }

    /// Announces transactions the pool took to every session but the one each came from
    /// (`NewPooledTransactionHashes`, at most [`crate::transactions::MAX_ANNOUNCED_HASHES`]
    /// a message), through the transactions manager.
    pub fn announce_transactions(&self, announced: &[TransactionAnnouncement]) {
        self.send(NetworkCommand::AnnounceTransactions(announced.to_vec()));
    }

    /// The sessions open now (a banned peer's left out).
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.state().sessions.values().map(|s| s.info.clone()).collect()
    }

    /// `peer`'s session's command channel, if in session.
    fn commands(&self, peer: &PeerId) -> Option<mpsc::Sender<SessionCommand>> {
        self.state().sessions.get(peer).map(|s| s.commands.clone())
    }

    /// Sends `message` (a request) to `peer` and awaits the answer.
    async fn request(&self, peer: PeerId, message: EthMessage) -> Result<EthMessage, RequestError> {
        ask(self.commands(&peer), |reply| SessionCommand::Request { message, reply }).await
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
        message: SnapMessage,
    ) -> Result<SnapMessage, RequestError> {
        ask(self.commands(&peer), |reply| SessionCommand::SnapRequest { message, reply }).await
    }

    fn version_of(&self, peer: &PeerId) -> Option<EthVersion> {
        self.state().sessions.get(peer).map(|s| s.info.version)
    }
}

impl BlockClient for Devp2pNetwork {
    type Peer = PeerId;

    fn peers(&self) -> Vec<PeerId> {
        self.state().sessions.keys().copied().collect()
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
        self.send(NetworkCommand::ReportBadMessage(peer));
    }
}

impl gigagas_net_api::NetworkInfo for Devp2pNetwork {
    fn transport(&self) -> &'static str {
        "devp2p"
    }

    fn eth_protocol_version(&self) -> Option<u64> {
        Some(EthVersion::ALL[0] as u64)
    }

    fn node_info(&self) -> gigagas_net_api::NodeInfo {
        let enode = self.enode();
        let listening = self.state().listening;
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
        self.state().sessions.len()
    }

    fn add_peer(&self, address: &str) -> Result<(), gigagas_net_api::AddPeerError> {
        let record: NodeRecord = address
            .parse()
            .map_err(|e| gigagas_net_api::AddPeerError::InvalidAddress(Box::new(e)))?;
        self.add_static_peer(record);
        Ok(())
    }
}

impl SnapClient for Devp2pNetwork {
    type Peer = PeerId;

    fn snap_peers(&self) -> Vec<PeerId> {
        let state = self.state();
        state.sessions.iter().filter(|(_, s)| s.info.snap.is_some()).map(|(p, _)| *p).collect()
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
