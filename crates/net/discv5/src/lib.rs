//! devp2p node discovery v5 (the `discv5` wire spec: encrypted UDP sessions, `FINDNODE` by log
//! distance, ENRs exchanged whole) through sigp's `discv5` crate, as reth's `net/discv5` does.
//!
//! Flow: [`Discv5::spawn`] builds this node's ENR (IP, TCP port, the UDP port, and the `eth`
//! entry with its EIP-2124 fork id), starts sigp's service on the UDP socket, adds the
//! bootnodes' ENRs to its table, and runs one task that, every `lookup_interval`, looks up a
//! random node id and reads the service's events: each node met (found by a lookup, or in a
//! session) whose ENR has a TCP port and an `eth` entry goes out on the receiver as a
//! [`Discovered`] — its record and fork id — for the node to check against its fork filter and
//! dial (at most once every [`REPORT_AGAIN_AFTER`]). [`Discv5::set_fork_id`] updates the `eth`
//! entry when the node crosses a fork. Nodes without an `eth` entry (consensus clients share the
//! discv5 network) are never reported.

use alloy_eip2124::ForkId;
use discv5::{enr::CombinedKey, ConfigBuilder, Event, ListenConfig};
use gigagas_net_peers::{EnrForkIdEntry, NodeRecord, PeerId, ENR_FORK_ID_KEY};
use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::{Duration, Instant},
};
use tokio::sync::mpsc;

pub use discv5::Enr as Discv5Enr;

/// The UDP port discovery v5 listens on unless told (reth's `--discovery.v5.port` default).
pub const DEFAULT_DISCOVERY_V5_PORT: u16 = 9200;

/// How often a lookup towards a random node id runs.
pub const LOOKUP_INTERVAL: Duration = Duration::from_secs(10);

/// How often a node in session is pinged (its liveness revalidated).
pub const PING_INTERVAL: Duration = Duration::from_secs(30);

/// A node already reported is reported again only after this long (it may have come back).
pub const REPORT_AGAIN_AFTER: Duration = Duration::from_secs(300);

/// What the service needs to know of this node.
#[derive(Debug, Clone)]
pub struct Discv5Config {
    /// ENRs to start from (they need an IP and a UDP port).
    pub bootnodes: Vec<gigagas_net_peers::Enr>,
    /// This node's RLPx TCP port (what others dial), 0: none.
    pub tcp_port: u16,
    /// The IP this node is reached on (its ENR's `ip`).
    pub ip: IpAddr,
    /// The fork id its ENR's `eth` entry carries (None: no entry).
    pub fork_id: Option<ForkId>,
    /// How often a lookup runs ([`LOOKUP_INTERVAL`]).
    pub lookup_interval: Duration,
    /// Where the service's task (the critical task `discv5`) and its lookups run.
    pub executor: gigagas_tasks::TaskExecutor,
}

/// A node met by discovery v5 that can be dialed: its record (IP, TCP and UDP ports, node id)
/// and the fork id its ENR announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Discovered {
    /// Where it is and who it is.
    pub record: NodeRecord,
    /// The fork id of its `eth` entry.
    pub fork_id: ForkId,
}

/// Why discovery v5 did not start.
#[derive(Debug, thiserror::Error)]
pub enum Discv5Error {
    /// The UDP port could not be bound.
    #[error("binding discovery v5 on UDP {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The socket's error.
        source: std::io::Error,
    },
    /// This node's ENR could not be built or signed.
    #[error("building this node's ENR: {0}")]
    Enr(#[from] discv5::enr::Error),
    /// sigp's service refused its configuration.
    #[error("configuring discovery v5: {0}")]
    Config(&'static str),
    /// sigp's service did not start.
    #[error("starting discovery v5: {reason}")]
    Start {
        /// What the service said.
        reason: discv5::Error,
    },
}

/// The running service's handle.
#[derive(Clone)]
pub struct Discv5 {
    inner: Arc<discv5::Discv5>,
    local: SocketAddr,
}

impl std::fmt::Debug for Discv5 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discv5").field("local", &self.local).finish_non_exhaustive()
    }
}

impl Discv5 {
    /// Binds `addr` (UDP; port 0 picks one) and starts the service with `key` (the node key) and
    /// `config`; the dialable nodes it meets come on the receiver.
    ///
    /// # Errors
    /// [`Discv5Error`] when the port cannot be bound, the ENR not built or the service not
    /// started. A bootnode whose ENR the service refuses is logged and skipped.
    pub async fn spawn(
        addr: SocketAddr,
        key: k256::ecdsa::SigningKey,
        config: Discv5Config,
    ) -> Result<(Self, mpsc::Receiver<Discovered>), Discv5Error> {
        // sigp's service binds inside `start`: the port is found (and checked free) first, so
        // that the ENR names the port it will answer on.
        let port = std::net::UdpSocket::bind(addr)
            .and_then(|s| s.local_addr())
            .map_err(|source| Discv5Error::Bind { addr, source })?
            .port();
        let local = SocketAddr::new(addr.ip(), port);
        let key = CombinedKey::Secp256k1(key);
        let mut builder = discv5::Enr::builder();
        match config.ip {
            IpAddr::V4(ip) => builder.ip4(ip).udp4(port).tcp4(config.tcp_port),
            IpAddr::V6(ip) => builder.ip6(ip).udp6(port).tcp6(config.tcp_port),
        };
        if let Some(fork_id) = config.fork_id {
            builder.add_value(ENR_FORK_ID_KEY, &EnrForkIdEntry { fork_id });
        }
        let enr = builder.build(&key)?;
        let listen = match addr.ip() {
            IpAddr::V4(ip) => ListenConfig::Ipv4 { ip, port },
            IpAddr::V6(ip) => ListenConfig::Ipv6 { ip, port },
        };
        // Nodes in session are pinged every PING_INTERVAL (sigp's default, 5 minutes, is
        // slower than geth's revalidation: a node that has found this one waits that long to
        // be checked and handed on).
        let config_v5 = ConfigBuilder::new(listen).ping_interval(PING_INTERVAL).build();
        let mut service = discv5::Discv5::new(enr, key, config_v5).map_err(Discv5Error::Config)?;
        service.start().await.map_err(|reason| Discv5Error::Start { reason })?;
        for bootnode in &config.bootnodes {
            let added = bootnode
                .to_base64()
                .parse::<discv5::Enr>()
                .map_err(|e| e.to_string())
                .and_then(|enr| service.add_enr(enr).map_err(str::to_string));
            if let Err(error) = added {
                tracing::warn!(target: "net::discv5", bootnode = %bootnode.to_base64(), %error, "bootnode not added");
            }
        }
        let events =
            service.event_stream().await.map_err(|reason| Discv5Error::Start { reason })?;
        let inner = Arc::new(service);
        let (found, discovered) = mpsc::channel(1024);
        let executor = config.executor.clone();
        executor.spawn_critical(
            "discv5",
            run(inner.clone(), events, found, config.lookup_interval, config.executor),
        );
        Ok((Self { inner, local }, discovered))
    }

    /// The bound UDP address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// This node's ENR as the service holds it (its sequence number grows as it changes).
    pub fn enr(&self) -> Discv5Enr {
        self.inner.local_enr()
    }

    /// Sets the fork id of this node's `eth` entry (the node crossed a fork); false when the
    /// record could not be re-signed.
    pub fn set_fork_id(&self, fork_id: ForkId) -> bool {
        self.inner.enr_insert(ENR_FORK_ID_KEY, &EnrForkIdEntry { fork_id }).is_ok()
    }

    /// Nodes in the routing table.
    pub fn table_len(&self) -> usize {
        self.inner.table_entries_id().len()
    }
}

/// The service's task: a lookup every `interval`, the events read in between; each dialable
/// node with an `eth` entry reported at most once every [`REPORT_AGAIN_AFTER`]. Ends when the
/// node drops the receiver.
async fn run(
    service: Arc<discv5::Discv5>,
    mut events: mpsc::Receiver<Event>,
    found: mpsc::Sender<Discovered>,
    interval: Duration,
    executor: gigagas_tasks::TaskExecutor,
) {
    let mut reported: HashMap<PeerId, Instant> = HashMap::new();
    let (lookups, mut results) = mpsc::channel::<Vec<discv5::Enr>>(8);
    let mut tick = tokio::time::interval(interval);
    let mut report = |enr: &discv5::Enr| -> bool {
        let Some(node) = dialable(enr) else { return true };
        if reported.get(&node.record.id).is_some_and(|at| at.elapsed() < REPORT_AGAIN_AFTER) {
            return true;
        }
        reported.insert(node.record.id, Instant::now());
        // A full channel drops the report (the node is busy dialing); a closed one ends the task.
        !matches!(found.try_send(node), Err(mpsc::error::TrySendError::Closed(_)))
    };
    loop {
        let open = tokio::select! {
            // An empty table has no one to ask (sigp's service would warn each time): the
            // lookups start once a bootnode or a node that found this one is in it.
            _ = tick.tick(), if !service.table_entries_id().is_empty() => {
                let service = service.clone();
                let lookups = lookups.clone();
                executor.spawn(async move {
                    match service.find_node(discv5::enr::NodeId::random()).await {
                        Ok(nodes) => { let _ = lookups.send(nodes).await; }
                        Err(e) => tracing::debug!(target: "net::discv5", error = ?e, "lookup failed"),
                    }
                });
                true
            }
            Some(nodes) = results.recv() => nodes.iter().all(&mut report),
            event = events.recv() => match event {
                Some(Event::Discovered(enr) | Event::SessionEstablished(enr, _)) => report(&enr),
                Some(_) => true,
                None => false,
            },
        };
        if !open {
            return;
        }
    }
}

/// The node `enr` describes, when it can be dialed (an IP and a TCP port, a secp256k1 key) and
/// says which fork it is on (an `eth` entry that decodes).
pub fn dialable(enr: &discv5::Enr) -> Option<Discovered> {
    let fork_id = enr.get_decodable::<EnrForkIdEntry>(ENR_FORK_ID_KEY)?.ok()?.fork_id;
    let (address, tcp_port, udp_port) = match (enr.ip4(), enr.ip6()) {
        (Some(ip), _) => (IpAddr::V4(ip), enr.tcp4()?, enr.udp4().unwrap_or(0)),
        (None, Some(ip)) => (IpAddr::V6(ip), enr.tcp6()?, enr.udp6().unwrap_or(0)),
        (None, None) => return None,
    };
    let discv5::enr::CombinedPublicKey::Secp256k1(key) = enr.public_key() else { return None };
    let id = PeerId::from_slice(&key.to_encoded_point(false).as_bytes()[1..]);
    (tcp_port != 0)
        .then_some(Discovered { record: NodeRecord { address, tcp_port, udp_port, id }, fork_id })
}
