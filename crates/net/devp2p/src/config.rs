//! What a devp2p network is started with (reth's `NetworkConfig`): the node's handshake
//! identity ([`LocalNode`]), what it serves, its peer limit, the peers it keeps and the
//! bootnodes it starts from, and the executor its tasks run on. `NetworkConfig::start`
//! (`network.rs`) spawns the network manager (and the transactions manager when a pool is
//! set) and returns the [`crate::Devp2pNetwork`] handle.

use crate::transactions::NetworkPool;
use alloy_eip2124::ForkFilter;
use alloy_primitives::B256;
use gigagas_eth_wire_types::StatusMessage;
use gigagas_net_ecies::SecretKey;
use gigagas_net_p2p::{ChainServer, SnapServer};
use gigagas_net_peers::NodeRecord;
use gigagas_tasks::TaskExecutor;
use std::{sync::Arc, time::Duration};

/// Sessions a network keeps at most unless told otherwise (geth's `--maxpeers`).
pub const DEFAULT_MAX_PEERS: usize = 50;

/// How long a TCP connect to a peer may take (geth's dialer: 15 s).
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(15);

/// How long the RLPx, `Hello` and `Status` handshakes together may take, dialing or accepting
/// (geth: 5 s each step).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How far the head moves before peers are told with a `BlockRangeUpdate` (geth: 32 blocks;
/// at once when it moves back). Peers ask for blocks up to a little past the latest announced
/// (geth's downloader: 64 blocks), so a node that syncs must announce as it goes.
pub const BLOCK_RANGE_UPDATE_INTERVAL: u64 = 32;

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

/// How a devp2p network is started: built with the `with_*` methods, then
/// [`NetworkConfig::start`].
#[derive(Clone)]
pub struct NetworkConfig {
    /// What the node says in its handshakes.
    pub(crate) local: LocalNode,
    /// What peers' eth requests are answered from (none: empty answers).
    pub(crate) server: Option<ChainServer>,
    /// What snap requests are answered from (none: snap is not offered).
    pub(crate) snap: Option<SnapServer>,
    /// The node's transaction pool, gossiped with the peers (none: no gossip).
    pub(crate) pool: Option<Arc<dyn NetworkPool>>,
    /// Sessions at most (inbound ones beyond are refused with `TooManyPeers`; static peers
    /// are kept beyond it).
    pub(crate) max_peers: usize,
    /// Peers a session is kept with (`--trusted-peers`).
    pub(crate) static_peers: Vec<NodeRecord>,
    /// Nodes dialed while the node has no session (those with a TCP port).
    pub(crate) bootnodes: Vec<NodeRecord>,
    /// Where the manager, the sessions and the handshakes run (none: the current runtime,
    /// supervised by nobody).
    pub(crate) executor: Option<TaskExecutor>,
}

impl std::fmt::Debug for NetworkConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkConfig")
            .field("max_peers", &self.max_peers)
            .field("static_peers", &self.static_peers.len())
            .field("bootnodes", &self.bootnodes.len())
            .finish_non_exhaustive()
    }
}

impl NetworkConfig {
    /// A network of `local` serving nothing, with [`DEFAULT_MAX_PEERS`] sessions at most, no
    /// static peer and no bootnode.
    pub fn new(local: LocalNode) -> Self {
        Self {
            local,
            server: None,
            snap: None,
            pool: None,
            max_peers: DEFAULT_MAX_PEERS,
            static_peers: Vec::new(),
            bootnodes: Vec::new(),
            executor: None,
        }
    }

    /// Answers peers' eth requests from `server`'s store.
    pub fn with_server(mut self, server: ChainServer) -> Self {
        self.server = Some(server);
        self
    }

    /// Serves snap/1 and snap/2 from `snap` (and offers them in `Hello`).
    pub fn with_snap_server(mut self, snap: SnapServer) -> Self {
        self.snap = Some(snap);
        self
    }

    /// Gossips transactions with `pool` ([`crate::transactions`]).
    pub fn with_pool(mut self, pool: Arc<dyn NetworkPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Keeps at most `max_peers` sessions.
    pub fn with_max_peers(mut self, max_peers: usize) -> Self {
        self.max_peers = max_peers;
        self
    }

    /// Keeps a session with each of `peers` (dialed again while not in session).
    pub fn with_static_peers(mut self, peers: impl IntoIterator<Item = NodeRecord>) -> Self {
        self.static_peers.extend(peers);
        self
    }

    /// Dials `bootnodes` (those with a TCP port) while the node has no session.
    pub fn with_bootnodes(mut self, bootnodes: impl IntoIterator<Item = NodeRecord>) -> Self {
        self.bootnodes.extend(bootnodes.into_iter().filter(NodeRecord::is_dialable));
        self
    }

    /// Runs the network's tasks on `executor`: the manager and the transactions manager as
    /// critical tasks (the manager winds down on its graceful shutdown signal), the sessions
    /// and handshakes as plain ones.
    pub fn with_executor(mut self, executor: TaskExecutor) -> Self {
        self.executor = Some(executor);
        self
    }
}
