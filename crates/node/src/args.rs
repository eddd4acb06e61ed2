//! `gigagas node`'s command-line arguments, with reth's flag names and default ports, in
//! groups as reth's `crates/node/core/src/args` has them (one `--help` heading each): RPC,
//! engine, networking, sync, libp2p, block propagation, dev. The A/B knobs of the lab
//! (executor and propagation tuning, devnet link emulation) are hidden from `--help`.

use crate::NodeError;
use clap::{builder::TypedValueParser as _, Args};
use gigagas_engine::TriePruneConfig;
use gigagas_executor::Scheduler;

/// `--syncmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SyncMode {
    /// Execute every block from the node's head on.
    Full,
    /// Download a recent pivot block's state from snap peers, then catch up from there.
    Snap,
}

/// `--snap.catch-up`: how a snap-synced node gets from its pivot to the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CatchUp {
    /// Apply each block's EIP-7928 BAL to the state (snap/2's way, EIP-8189): the BAL checked
    /// against its header's hash, the receipts fetched and checked against the receipts root,
    /// the state root checked; a block without a BAL, or whose BAL does not give its root, and
    /// all after it are executed.
    Bal,
    /// Execute every block from the pivot on, as full sync does.
    Execute,
}
use gigagas_validation::BalIo;
use std::{
    net::{IpAddr, SocketAddr},
    path::PathBuf,
};

/// `--gossip`: the block propagation protocol over libp2p.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GossipProtocol {
    /// Random linear network coding (crates/rlnc).
    Rlnc,
    /// Systematic Reed-Solomon with Merkle proofs.
    Rs,
    /// libp2p-gossipsub, whole blocks.
    Gossipsub,
    /// No block propagation.
    None,
}

impl GossipProtocol {
    /// The propagation protocol; `None` for [`GossipProtocol::None`].
    pub fn protocol(self) -> Option<gigagas_net::propagation::Protocol> {
        use gigagas_net::propagation::Protocol;
        match self {
            Self::Rlnc => Some(Protocol::Rlnc),
            Self::Rs => Some(Protocol::Rs),
            Self::Gossipsub => Some(Protocol::Gossipsub),
            Self::None => None,
        }
    }
}

/// Arguments of `gigagas node`.
#[derive(Debug, Clone, Args)]
pub struct NodeArgs {
    /// Data directory (RocksDB store and `jwt.hex`); created when absent.
    #[arg(long)]
    pub datadir: PathBuf,
    /// The chain: `mainnet`, `sepolia`, `hoodi`, `dev` (geth 1.17.10's genesis files, built
    /// in) or a geth-format genesis JSON file. Initializes an empty datadir (`mainnet` when
    /// not given, `dev` with `--dev`); a datadir already initialized runs its own chain, and
    /// must hold the named chain's genesis when one is given (as geth).
    #[arg(long)]
    pub chain: Option<gigagas_chainspec::ChainArg>,
    /// Written once every server is bound: a JSON object naming where the node serves (`http`,
    /// `authrpc`, `jwt_secret`, `p2p`, `proposer`, `metrics`, `head`), so that a harness waits
    /// on the file instead of reading the log. Replaced atomically (written beside, renamed).
    #[arg(long = "ready-file")]
    pub ready_file: Option<PathBuf>,
    /// Serve Prometheus metrics at `ADDR/metrics` (`--metrics` alone: 127.0.0.1:9001).
    #[arg(long, num_args = 0..=1, default_missing_value = "127.0.0.1:9001")]
    pub metrics: Option<SocketAddr>,
    /// The JSON-RPC and Engine API servers.
    #[command(flatten)]
    pub rpc: RpcServerArgs,
    /// The engine.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Pruning.
    #[command(flatten)]
    pub prune: PruneArgs,
    /// The devp2p network and discovery.
    #[command(flatten)]
    pub network: NetworkArgs,
    /// How the chain's state is got.
    #[command(flatten)]
    pub sync: SyncArgs,
    /// The libp2p network.
    #[command(flatten)]
    pub libp2p: Libp2pArgs,
    /// Block propagation over libp2p.
    #[command(flatten)]
    pub gossip: GossipArgs,
    /// The dev chain.
    #[command(flatten)]
    pub dev: DevArgs,
    /// Link emulation (devnets).
    #[command(flatten)]
    pub netem: NetEmulationArgs,
}

/// The JSON-RPC and Engine API servers (reth's `RpcServerArgs`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "RPC")]
pub struct RpcServerArgs {
    /// JSON-RPC listening address.
    #[arg(long = "http.addr", default_value = "127.0.0.1")]
    pub http_addr: IpAddr,
    /// JSON-RPC port.
    #[arg(long = "http.port", default_value_t = 8545)]
    pub http_port: u16,
    /// Namespaces the JSON-RPC port serves, comma-separated (`all`: every one): eth, net, web3,
    /// admin, debug, txpool, testing. A method of another is answered -32601. `admin` adds
    /// peers and `testing` builds blocks on request: name them only on a port you trust.
    #[arg(long = "http.api", default_value = "eth,net,web3", value_name = "MODULES")]
    pub http_api: gigagas_rpc::RpcModuleSelection,
    /// Host names the JSON-RPC port answers, comma-separated, as a request's `Host` header
    /// names them (`*`: any; an IP address always passes): a web page on another domain
    /// resolving to this machine (DNS rebinding) is refused with 403.
    #[arg(long = "http.vhosts", default_value = "localhost", value_name = "HOSTS")]
    pub http_vhosts: gigagas_rpc::AllowList,
    /// Origins whose web pages may call the JSON-RPC port from a browser (CORS),
    /// comma-separated (`*`: any); none by default.
    #[arg(long = "http.corsdomain", default_value = "", value_name = "ORIGINS")]
    pub http_corsdomain: gigagas_rpc::AllowList,
    /// Serve JSON-RPC over WebSocket too (`eth_subscribe` needs it).
    #[arg(long = "ws")]
    pub ws: bool,
    /// WebSocket listening address.
    #[arg(long = "ws.addr", default_value = "127.0.0.1")]
    pub ws_addr: IpAddr,
    /// WebSocket port.
    #[arg(long = "ws.port", default_value_t = 8546)]
    pub ws_port: u16,
    /// Namespaces the WebSocket port serves, as `--http.api`; with `eth`, `eth_subscribe`
    /// and `eth_unsubscribe` as well.
    #[arg(long = "ws.api", default_value = "eth,net,web3", value_name = "MODULES")]
    pub ws_api: gigagas_rpc::RpcModuleSelection,
    /// Origins whose web pages may open a WebSocket to the node, comma-separated (`*`: any);
    /// default `http://localhost` and `http://<this machine's name>`. A client that sends no
    /// `Origin` (not a browser) is let in.
    #[arg(long = "ws.origins", default_value = "", value_name = "ORIGINS")]
    pub ws_origins: gigagas_rpc::AllowList,
    /// The IPC socket's path (JSON-RPC over a Unix socket, every namespace but `testing`,
    /// subscriptions included; mode 0600); `DATADIR/gigagas.ipc` by default.
    #[arg(long = "ipcpath")]
    pub ipc_path: Option<PathBuf>,
    /// Serve no IPC socket.
    #[arg(long = "ipcdisable")]
    pub ipc_disable: bool,
    /// Blocks the gas price oracle samples (geth's `--gpo.blocks`).
    #[arg(long = "gpo.blocks", default_value_t = 20)]
    pub gpo_blocks: u64,
    /// The percentile of the sampled tips the oracle suggests (geth's `--gpo.percentile`).
    #[arg(long = "gpo.percentile", default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub gpo_percentile: u64,
    /// The largest price the oracle suggests, in wei (geth's `--gpo.maxprice`, 500 gwei).
    #[arg(long = "gpo.maxprice", default_value_t = 500_000_000_000)]
    pub gpo_max_price: u128,
    /// Tips below this many wei are not sampled (geth's `--gpo.ignoreprice`).
    #[arg(long = "gpo.ignoreprice", default_value_t = 2)]
    pub gpo_ignore_price: u128,
    /// Most subscriptions one WebSocket or IPC connection may hold (reth's, 1,024).
    #[arg(long = "rpc.max-subscriptions-per-connection", default_value_t = gigagas_rpc::DEFAULT_MAX_SUBSCRIPTIONS)]
    pub max_subscriptions: u32,
    /// Messages buffered per WebSocket or IPC connection for a client that reads slower than
    /// its notifications come (1,024); a subscription finding the buffer full is dropped with
    /// a message.
    #[arg(long = "rpc.ws-buffer", default_value_t = gigagas_rpc::DEFAULT_WS_MESSAGE_BUFFER, value_parser = clap::value_parser!(u32).range(1..))]
    pub ws_buffer: u32,
    /// Most polling filters installed at once (`eth_newFilter`, `eth_newBlockFilter`,
    /// `eth_newPendingTransactionFilter`); past it -32005.
    #[arg(long = "rpc.max-filters", default_value_t = gigagas_rpc::filter::DEFAULT_MAX_FILTERS)]
    pub max_filters: usize,
    /// Time after which a filter not polled is uninstalled (geth's 5m): a number with `ms`,
    /// `s` or `m`.
    #[arg(long = "rpc.filter-timeout", default_value = "5m", value_parser = parse_duration)]
    pub filter_timeout: std::time::Duration,
    /// Most changes (hashes, logs) one filter gathers between two polls; past it the filter is
    /// uninstalled and its next poll says so.
    #[arg(long = "rpc.max-filter-changes", default_value_t = gigagas_rpc::filter::DEFAULT_MAX_FILTER_CHANGES)]
    pub max_filter_changes: usize,
    /// Engine API listening address.
    #[arg(long = "authrpc.addr", default_value = "127.0.0.1")]
    pub auth_addr: IpAddr,
    /// Engine API port.
    #[arg(long = "authrpc.port", default_value_t = 8551)]
    pub auth_port: u16,
    /// JWT secret file (hex); `DATADIR/jwt.hex` (created when absent) by default.
    #[arg(long = "authrpc.jwtsecret")]
    pub jwt_secret: Option<PathBuf>,
    /// Gas at most that `eth_call` and `eth_estimateGas` give a request, and that all calls of
    /// one `eth_simulateV1` request use together (geth's and reth's `--rpc.gascap`; 0: no cap)
    #[arg(long = "rpc.gascap", default_value_t = gigagas_rpc::DEFAULT_GAS_CAP)]
    pub gas_cap: u64,
    /// Largest JSON-RPC request body, in MB (reth's `--rpc.max-request-size`, 15).
    #[arg(long = "rpc.max-request-size", default_value_t = 15)]
    pub max_request_mb: u32,
    /// Largest JSON-RPC response body, in MiB (jsonrpsee's 10).
    #[arg(long = "rpc.max-response-size", default_value_t = 10)]
    pub max_response_mib: u32,
    /// Most concurrent JSON-RPC connections (reth's `--rpc.max-connections`, 500).
    #[arg(long = "rpc.max-connections", default_value_t = 500)]
    pub max_connections: u32,
    /// Most calls in one JSON-RPC batch (geth's `--rpc.batch-request-limit`, 1,000; 0: none).
    #[arg(long = "rpc.max-batch", default_value_t = 1_000)]
    pub max_batch: u32,
    /// Heavy JSON-RPC calls of each class running at once (EVM calls; `eth_getLogs`,
    /// whole blocks and receipts, proofs; traces: `gigagas_rpc::limit::HEAVY_METHODS`); default:
    /// the cores; 0: no limit. Past these and `--rpc.max-heavy-queue` waiting, a heavy call is
    /// answered at once with -32005 "limit exceeded" (load shed, memory bounded).
    #[arg(long = "rpc.max-heavy-calls")]
    pub max_heavy_calls: Option<u32>,
    /// Heavy JSON-RPC calls of each class waiting for a running one (default: 16 per running
    /// one).
    #[arg(long = "rpc.max-heavy-queue")]
    pub max_heavy_queue: Option<u32>,
    /// Most blocks one `eth_getLogs` may scan (reth's `--rpc.max-blocks-per-filter`; 0: none).
    #[arg(long = "rpc.max-blocks-per-filter", default_value_t = gigagas_rpc::DEFAULT_MAX_BLOCKS_PER_FILTER)]
    pub max_blocks_per_filter: u64,
    /// Most logs in one `eth_getLogs` answer over several blocks (reth's
    /// `--rpc.max-logs-per-response`; 0: none).
    #[arg(long = "rpc.max-logs-per-response", default_value_t = gigagas_rpc::DEFAULT_MAX_LOGS_PER_RESPONSE)]
    pub max_logs_per_response: usize,
    /// The most a transaction sent with `eth_sendRawTransaction` may pay in fees, its fee cap
    /// times its gas limit, in ether (geth's and reth's `--rpc.txfeecap`; 0: no cap).
    #[arg(long = "rpc.txfeecap", default_value_t = 1.0)]
    pub tx_fee_cap: f64,
    /// Decoded blocks JSON-RPC keeps for the next requests that name them (reth's
    /// `--rpc-cache.max-blocks`; 0: none).
    #[arg(long = "rpc-cache.max-blocks", default_value_t = gigagas_rpc::cache::DEFAULT_MAX_BLOCKS)]
    pub cache_max_blocks: u64,
    /// Blocks whose decoded receipts JSON-RPC keeps (reth's `--rpc-cache.max-receipts`; 0:
    /// none).
    #[arg(long = "rpc-cache.max-receipts", default_value_t = gigagas_rpc::cache::DEFAULT_MAX_RECEIPTS)]
    pub cache_max_receipts: u64,
    /// Threads of the JSON-RPC runtime's blocking pool, where the CPU-heavy methods run
    /// (`eth_call`, `eth_estimateGas`, `eth_createAccessList`, `eth_simulateV1`, `eth_getLogs`,
    /// `eth_getBlockReceipts`, `debug_trace*`); more wait their turn (reth's
    /// `--rpc.max-blocking-io-requests`, 256).
    #[arg(
        long = "rpc.max-blocking-io-requests",
        alias = "rpc.max-blocking",
        default_value_t = 256
    )]
    pub max_blocking: usize,
    /// Time after which an `eth_call` is aborted with "execution aborted (timeout = …)"
    /// (geth's `--rpc.evmtimeout`, 5s): a number with `ms`, `s` or `m`; 0: none.
    #[arg(long = "rpc.evmtimeout", default_value = "5s", value_parser = parse_duration)]
    pub evm_timeout: std::time::Duration,
    /// Worker threads of the JSON-RPC runtime (default: the cores).
    #[arg(long = "rpc.threads")]
    pub rpc_threads: Option<usize>,
    /// Nice value of every JSON-RPC thread (0-19): block validation (the engine, its executor
    /// pool, the Engine API) keeps nice 0, so that on a loaded machine RPC gets what
    /// validation leaves. 0: RPC at the engine's priority.
    #[arg(long = "rpc.nice", default_value_t = gigagas_tasks::priority::DEFAULT_RPC_NICE, value_parser = clap::value_parser!(i32).range(0..=19))]
    pub nice: i32,
    /// Run the public JSON-RPC's threads under Linux's `SCHED_IDLE` policy as well (the
    /// default): they get a core only when block validation, the network and the Engine API
    /// leave one idle, so RPC never delays a payload and answers from the CPU validation
    /// leaves (between slots, nearly all of it). `false`: nice `--rpc.nice` only, RPC keeping
    /// a share (a tenth at nice 10) while validation is busy, e.g. during a long sync.
    #[arg(long = "rpc.sched-idle", default_value_t = true, action = clap::ArgAction::Set)]
    pub sched_idle: bool,
}

/// Pruning of what no kept block needs (reth's `PruningArgs`); defaults from
/// [`TriePruneConfig::DEFAULT`].
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Pruning")]
pub struct PruneArgs {
    /// Canonical blocks, the head included, whose state the trie keeps (the reorg window;
    /// geth keeps 128 diff layers). JSON-RPC answers older states as pruned. At least 65: a
    /// reorg may unwind up to 64 blocks.
    #[arg(long = "prune.trie.keep", default_value_t = TriePruneConfig::DEFAULT.keep, value_parser = clap::value_parser!(u64).range(65..))]
    pub trie_keep: u64,
    /// Blocks the head moves between two prunes of the trie nodes no kept state reaches (mark
    /// and sweep on a thread of their own while blocks are executed and committed; each reads
    /// every node of the kept states). 0: never prune (the datadir keeps every block's state).
    #[arg(long = "prune.trie.interval", default_value_t = TriePruneConfig::DEFAULT.interval)]
    pub trie_interval: u64,
    /// Threads reading the kept trie nodes during a prune (more reads in flight on a cold disk).
    #[arg(long = "prune.trie.threads", default_value_t = TriePruneConfig::DEFAULT.threads, hide = true)]
    pub trie_threads: usize,
}

impl PruneArgs {
    /// The engine's trie pruning; `None` when `--prune.trie.interval` is 0.
    pub fn trie(&self) -> Option<TriePruneConfig> {
        (self.trie_interval > 0).then_some(TriePruneConfig {
            keep: self.trie_keep,
            interval: self.trie_interval,
            threads: self.trie_threads,
        })
    }
}

/// The engine: how payloads are executed and committed (reth's `EngineArgs`); the A/B knobs of the parallel executor are hidden.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Engine")]
pub struct EngineArgs {
    /// Worker threads of the engine's parallel executor: one pool, built at startup and reused
    /// for every payload (default: the machine's cores).
    #[arg(long = "engine.threads", alias = "threads")]
    pub threads: Option<usize>,
    /// Execute payloads that carry a BAL (Amsterdam) on the parallel executor; `false` runs
    /// every payload on the sequential reference (the BAL is still checked).
    #[arg(long = "engine.parallel", default_value_t = true, action = clap::ArgAction::Set)]
    pub parallel: bool,
    /// Prewarm payloads that carry no BAL (before Amsterdam): while the sequential reference
    /// runs one, `--engine.threads` − 1 workers execute its transactions speculatively ahead
    /// of it so that the state it reads is cached (reth's prewarming).
    #[arg(long = "engine.prewarm", default_value_t = true, action = clap::ArgAction::Set)]
    pub prewarm: bool,
    /// With `--engine.prewarm`, keep what each prewarming worker executed (result, the keys it
    /// read, the fee held back) and commit it in order instead of executing the transaction
    /// again when every value it read still holds (optimistic execution validated as in
    /// Block-STM); `false` (the default: it measured no faster on 2 cores, docs/benchmarks.md)
    /// only warms the cache.
    #[arg(long = "engine.optimistic", default_value_t = false, action = clap::ArgAction::Set, hide = true)]
    pub optimistic: bool,
    /// Commit canonical blocks to the store on a thread of their own (reth's persistence
    /// service, the default) while the next payloads execute on them from memory; `false`
    /// commits them before each forkchoice update returns. Either way JSON-RPC, sync and
    /// gossip read the forkchoice head at once: the blocks not yet committed are served from
    /// memory (the in-memory canonical chain).
    #[arg(long = "engine.persistence-background", default_value_t = true, action = clap::ArgAction::Set)]
    pub persistence_background: bool,
    /// Compute the state root of a payload that carries a BAL from the BAL, on a thread of its
    /// own while the parallel executor runs (kept when the executed state changes are the
    /// BAL's); `false` computes it after execution, from the executed changes.
    #[arg(long = "engine.state-root-beside", default_value_t = true, action = clap::ArgAction::Set, hide = true)]
    pub state_root_beside: bool,
    /// Keep the state trie a payload's state root was computed on — its top levels decoded,
    /// their hashes cached, and the storage tries last changed — for the next payload, as
    /// reth keeps its sparse trie; `false` reads every state root's paths from the store.
    #[arg(long = "engine.preserve-trie", default_value_t = true, action = clap::ArgAction::Set, hide = true)]
    pub preserve_trie: bool,
    /// With `--engine.preserve-trie`, threads that read the trie nodes a state root lacks
    /// level by level before its walk, as many reads in flight at once (a cold state on an
    /// NVMe wants tens); 0 reads each where the walk meets it, one at a time.
    #[arg(long = "engine.trie-read-threads", default_value_t = gigagas_trie::DEFAULT_TRIE_READ_THREADS, hide = true)]
    pub trie_read_threads: usize,
    /// Recover the senders of a payload with a BAL that the transaction pool had not recovered
    /// in the parallel executor's workers, each when its transaction is claimed (so that a
    /// transaction starts as soon as its own sender is known); `false` recovers them all, in
    /// parallel, before execution starts.
    #[arg(long = "engine.stream-senders", default_value_t = true, action = clap::ArgAction::Set, hide = true)]
    pub stream_senders: bool,
    /// How the parallel executor reads the accounts and slots a payload's BAL names:
    /// `prefetch-parallel` (all up front, split over the executor's threads), `prefetch` (all
    /// up front on one thread), `on-demand` (each when a transaction first needs it) or
    /// `prefetch-beside` (on `--engine.io-depth` threads beside execution, in the order the
    /// transactions first change them).
    #[arg(
        long = "engine.io",
        default_value = "prefetch-parallel",
        value_parser = clap::builder::PossibleValuesParser::new(BalIo::ALL.map(BalIo::name))
            .map(|s| BalIo::ALL.into_iter().find(|d| d.name() == s).expect("a possible value"))
    , hide = true)]
    pub io: BalIo,
    /// Threads of their own for the reads of `--engine.io prefetch-parallel` and
    /// `prefetch-beside`: each thread's share one batched read, whose blocks of one table file
    /// go to the disk together through io_uring (one at a time without it: then the threads
    /// are the queue depth, and a cold state on an NVMe wants tens); 0 splits them over the
    /// executor's threads.
    #[arg(long = "engine.io-depth", default_value_t = 0, hide = true)]
    pub io_depth: usize,
    /// The parallel executor's scheduler: `gas-limit` (heaviest transactions first) or `ols`
    /// (block order).
    #[arg(
        long = "engine.scheduler",
        default_value = "gas-limit",
        value_parser = clap::builder::PossibleValuesParser::new(["gas-limit", "ols"]).map(
            |s| if s == "ols" { Scheduler::Ols } else { Scheduler::GasLimit }
        )
    , hide = true)]
    pub scheduler: Scheduler,
}

/// The devp2p network and its discovery (reth's `NetworkArgs` and `DiscoveryArgs`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Networking")]
pub struct NetworkArgs {
    /// devp2p peers to keep connected, comma-separated enode URLs
    /// (`enode://<node id>@<ip>:<port>`, geth's `admin_nodeInfo.enode`): dialed at start and
    /// again whenever their session ends; blocks are synced from them over eth/69-72.
    #[arg(long = "trusted-peers", value_delimiter = ',')]
    pub trusted_peers: Vec<gigagas_net_peers::NodeRecord>,
    /// devp2p nodes to start from, comma-separated enode URLs or ENRs (`enr:-…`); the named
    /// chain's bootnodes (geth's list) by default, none for a genesis file. Those with a TCP
    /// port are dialed until one answers; the node says plainly when none does.
    #[arg(long, value_delimiter = ',')]
    pub bootnodes: Option<Vec<gigagas_net_peers::BootNode>>,
    /// devp2p listening address (TCP): RLPx sessions with any execution client.
    #[arg(long = "addr", default_value = "0.0.0.0")]
    pub addr: IpAddr,
    /// devp2p listening port (TCP; 0 picks one).
    #[arg(long, default_value_t = 30303)]
    pub port: u16,
    /// Sessions at most, per network (devp2p; the libp2p network has its own as many).
    #[arg(long = "max-peers", default_value_t = 50)]
    pub max_peers: u32,
    /// Run no node discovery (neither discv4 nor discv5): peers only from `--trusted-peers`,
    /// `admin_addPeer` and the bootnodes dialed over TCP.
    #[arg(long = "disable-discovery")]
    pub disable_discovery: bool,
    /// Run no discovery v4 (reth's flag).
    #[arg(long = "disable-discv4-discovery")]
    pub disable_discv4: bool,
    /// discv4's UDP port (default: the devp2p `--port` as bound; 0 picks one).
    #[arg(long = "discovery.port")]
    pub discovery_port: Option<u16>,
    /// Run discovery v5 too (reth's flag): its bootnodes are the ENRs among `--bootnodes`, the
    /// nodes it finds whose ENR `eth` entry is on this chain's fork are dialed.
    #[arg(long = "enable-discv5-discovery")]
    pub enable_discv5: bool,
    /// discv5's UDP port (reth's default 9200; when taken and not given, any free one).
    #[arg(long = "discovery.v5.port")]
    pub discovery_v5_port: Option<u16>,
    /// The address other nodes are told (enode, ENRs): `none` (the default: the listening
    /// address, loopback when it is every interface) or `extip:<IP>` (a public IP the
    /// operator forwards `--port` and the discovery ports from). UPnP and NAT-PMP are not
    /// supported.
    #[arg(long, default_value = "none")]
    pub nat: gigagas_net_peers::NatResolver,
    /// Run without any peer-to-peer network (neither devp2p nor libp2p).
    #[arg(long = "disable-network")]
    pub disable_network: bool,
}

/// How the node gets the chain's state.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Sync")]
pub struct SyncArgs {
    /// How the node gets the chain's state (geth's and reth's `--syncmode`): `full` executes
    /// every block from its head on; `snap`, on a node with no chain yet, downloads the state
    /// of a pivot block 64 below the target (the consensus client's head, or `--debug.tip`)
    /// from the devp2p peers that speak snap, every range proven, then applies the BALs of the
    /// blocks from the pivot to the target (with their receipts from the peers) and follows
    /// as a full node.
    #[arg(long = "syncmode", value_enum, default_value_t = SyncMode::Full)]
    pub syncmode: SyncMode,
    /// How a snap sync gets from the pivot to the target: `bal` applies the blocks' BALs,
    /// `execute` executes them (docs/benchmarks.md measures both; a lab knob).
    #[arg(long = "snap.catch-up", value_enum, default_value_t = CatchUp::Bal, hide = true)]
    pub snap_catch_up: CatchUp,
    /// Snap sync's requests out to one peer at once (a lab knob).
    #[arg(long = "snap.requests-per-peer", default_value_t = 4, hide = true)]
    pub snap_requests_per_peer: usize,
    /// Snap sync's answer size asked for, in bytes (servers cap it at 2 MiB; a lab knob).
    #[arg(long = "snap.response-bytes", default_value_t = 1 << 20, hide = true)]
    pub snap_response_bytes: u64,
    /// Sync to this block (hash) from the devp2p peers without a consensus client (reth's
    /// `--debug.tip`): its header is asked of the peers, then every block up to it is
    /// downloaded, executed and made the head.
    #[arg(long = "debug.tip")]
    pub debug_tip: Option<alloy_primitives::B256>,
}

/// The libp2p network: block propagation between gigagas nodes.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "libp2p")]
pub struct Libp2pArgs {
    /// The libp2p network's listening address (TCP): block propagation between gigagas nodes.
    #[arg(long = "libp2p.addr", default_value = "0.0.0.0")]
    pub libp2p_addr: IpAddr,
    /// The libp2p network's listening port (TCP; 0, the default, picks one: the address is in
    /// the startup line and the ready file).
    #[arg(long = "libp2p.port", default_value_t = 0)]
    pub libp2p_port: u16,
    /// libp2p peers to dial at start, comma-separated multiaddrs
    /// (`/ip4/ADDR/tcp/PORT/p2p/PEER_ID`, as a node prints at startup); more are found through
    /// kademlia.
    #[arg(long = "libp2p.bootnodes", value_delimiter = ',')]
    pub libp2p_bootnodes: Vec<gigagas_net::Multiaddr>,
    /// Node-key file (hex ed25519 secret) that keeps the libp2p peer id across restarts;
    /// `DATADIR/p2p-secret` (created when absent) by default.
    #[arg(long = "libp2p.secret-key")]
    pub libp2p_secret_key: Option<PathBuf>,
    /// Run without the libp2p network (devp2p stays).
    #[arg(long = "libp2p.disable")]
    pub libp2p_disable: bool,
}

/// Block propagation over libp2p: the protocol and its keys; the protocols' tuning is hidden (lab knobs).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Block propagation")]
pub struct GossipArgs {
    /// Block propagation protocol: `rlnc`, `rs` or `gossipsub` (`none`: no block propagation).
    #[arg(long = "gossip", value_enum, default_value_t = GossipProtocol::Rlnc)]
    pub protocol: GossipProtocol,
    /// Chunks per block (N) of `rlnc`, original shards of `rs` (larger blocks get more).
    #[arg(long = "gossip.chunks", default_value_t = 16, hide = true)]
    pub chunks: usize,
    /// Chunks a node sends each mesh peer per block at most (`rlnc`, `rs`).
    #[arg(long = "gossip.per-peer", default_value_t = 8, hide = true)]
    pub per_peer: usize,
    /// Chunks a node that has just decoded a block owes each mesh peer that has not decoded it
    /// (the completion wave; 0: none). Default: `--gossip.per-peer`.
    #[arg(long = "gossip.wave", hide = true)]
    pub wave: Option<usize>,
    /// `rlnc`: send a peer no chunk of a block while this node's rank is at most the chunks
    /// exchanged with that peer (it would, with high probability, add nothing there).
    #[arg(long = "gossip.skip-known", default_value_t = true, action = clap::ArgAction::Set, hide = true)]
    pub skip_known: bool,
    /// Receiver feedback (`rlnc`, `rs`): tell the peers that send a block's chunks this node's
    /// rank, how many it had from each and how many peers send it the block, so that each keeps
    /// no more than its share of what is missing in flight, and sends that share again when the
    /// first pushes fell short.
    #[arg(long = "gossip.feedback", default_value_t = true, action = clap::ArgAction::Set, hide = true)]
    pub feedback: bool,
    /// Pace of the chunk uplink (Mbit/s; 0: none): chunks are made when the link can carry
    /// them rather than queued in transport buffers, so that decoded notices still cancel
    /// them. Default: `--net.upload-mbit`.
    #[arg(long = "gossip.pace-mbit", hide = true)]
    pub pace_mbit: Option<f64>,
    /// Mesh degree of `rlnc` and `rs`: the peers chunks are pushed to (gossipsub: D = 8).
    #[arg(long = "gossip.degree", default_value_t = 8, hide = true)]
    pub degree: usize,
    /// This node proposes: its BLS key seed file (created when missing); every block it makes
    /// canonical is published, signed.
    #[arg(long = "gossip.signer-key")]
    pub signer_key: Option<PathBuf>,
    /// The proposer's BLS public key (hex, 48 bytes): blocks signed by it are accepted.
    #[arg(long = "gossip.proposer")]
    pub proposer: Option<String>,
}

/// A dev chain without a consensus client (reth's `DevArgs`); the devnet's knobs are hidden.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Dev")]
pub struct DevArgs {
    /// Run a dev chain: a local miner beside the engine builds, executes and finalizes a block
    /// every `--dev.block-time`, through the engine's messages as the Engine API handlers send
    /// them. An empty datadir starts from testing/dev-genesis.json unless `--chain` names a
    /// genesis file.
    #[arg(long)]
    pub dev: bool,
    /// Seconds per block of the dev chain.
    #[arg(long = "dev.block-time", default_value_t = 1.0)]
    pub block_time: f64,
    /// With `--dev`: instead of building blocks, feed the blocks of this RLP file (back to
    /// back, geth's `export` format, e.g. `debug_getRawBlock` of a dev chain) one per
    /// `--dev.block-time` through `newPayload` and a forkchoice update — the same blocks on
    /// every run (devnet measurements that compare protocols).
    #[arg(long = "dev.replay", requires = "dev", hide = true)]
    pub replay: Option<PathBuf>,
    /// With `--dev`: make the first block only once this many peers are connected.
    #[arg(long = "dev.min-peers", default_value_t = 0, hide = true)]
    pub min_peers: usize,
    /// Follow the proposer without a consensus client: every valid gossiped block becomes the
    /// head (a forkchoice update to it).
    #[arg(long = "dev.follow", hide = true)]
    pub follow: bool,
}

/// Link emulation for devnets on one machine (hidden: lab knobs); the faults only in a `fault-injection` build.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Network emulation")]
pub struct NetEmulationArgs {
    /// Upload cap of this node, all connections together (Mbit/s; devnets on one machine).
    #[arg(long = "net.upload-mbit", hide = true)]
    pub upload_mbit: Option<f64>,
    /// One-way latency added to every connection's reads (milliseconds).
    #[arg(long = "net.latency-ms", default_value_t = 0.0, hide = true)]
    pub latency_ms: f64,
    /// Uniform jitter around `--net.latency-ms` (± milliseconds).
    #[arg(long = "net.jitter-ms", default_value_t = 0.0, hide = true)]
    pub jitter_ms: f64,
    /// Fault injection: the fraction (0 to 1) of arriving block chunks, decoded notices and
    /// gossipsub messages this node drops, as if lost on the way (a devnet's 5% loss: 0.05).
    /// Only in a binary built with the `fault-injection` feature (`make build-faults`).
    #[cfg(feature = "fault-injection")]
    #[arg(long = "net.loss", default_value_t = 0.0, hide = true)]
    pub loss: f64,
    /// Fault injection: this node alters one bit of every block chunk (rlnc/rs) it sends, as a
    /// hostile relay would (its peers must refuse the chunks and ban it). Only in a binary
    /// built with the `fault-injection` feature (`make build-faults`).
    #[cfg(feature = "fault-injection")]
    #[arg(long = "net.forge-chunks", hide = true)]
    pub forge_chunks: bool,
}

impl NodeArgs {
    /// The executor's worker count: `--engine.threads`, else the machine's cores.
    pub fn threads(&self) -> usize {
        self.engine
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
    }

    /// The libp2p network's configuration, `None` with `--disable-network` or
    /// `--libp2p.disable` (sync requests are
    /// answered from no store: the node sets its own provider).
    ///
    /// # Errors
    /// [`NodeError::Gossip`] for a bad signer key or proposer key.
    pub fn network(&self) -> Result<Option<gigagas_net::NetworkConfig>, NodeError> {
        use gigagas_net::propagation::{self as p, PropagationConfig};
        if self.network.disable_network || self.libp2p.libp2p_disable {
            return Ok(None);
        }
        let propagation = match self.gossip.protocol.protocol() {
            None => None,
            Some(protocol) => {
                let signer = self
                    .gossip
                    .signer_key
                    .as_deref()
                    .map(p::load_or_create_signer)
                    .transpose()
                    .map_err(NodeError::Gossip)?;
                let proposer = match &self.gossip.proposer {
                    Some(hex) => Some(p::public_key_from_hex(hex).map_err(NodeError::Gossip)?),
                    None => signer.as_ref().map(p::BlockSigner::public),
                };
                Some(PropagationConfig {
                    protocol,
                    chunks: self.gossip.chunks.max(1),
                    per_peer: self.gossip.per_peer.max(1),
                    wave: self.gossip.wave,
                    skip_known: self.gossip.skip_known,
                    feedback: self.gossip.feedback,
                    pace_bits_per_sec: self
                        .gossip
                        .pace_mbit
                        .or(self.netem.upload_mbit)
                        .filter(|m| *m > 0.0)
                        .map(|m| (m * 1e6) as u64),
                    signer,
                    proposer,
                })
            }
        };
        let ms = |v: f64| std::time::Duration::from_secs_f64(v.max(0.0) / 1000.0);
        Ok(Some(gigagas_net::NetworkConfig {
            addr: self.libp2p.libp2p_addr,
            port: self.libp2p.libp2p_port,
            bootnodes: self.libp2p.libp2p_bootnodes.clone(),
            secret_key: Some(
                self.libp2p
                    .libp2p_secret_key
                    .clone()
                    .unwrap_or_else(|| self.datadir.join("p2p-secret")),
            ),
            max_peers: self.network.max_peers,
            propagation,
            degree: self.gossip.degree.max(1),
            shaping: gigagas_net::shaping::Shaping {
                upload_bits_per_sec: self.netem.upload_mbit.map(|m| (m * 1e6) as u64),
                latency: ms(self.netem.latency_ms),
                jitter: ms(self.netem.jitter_ms),
            },
            faults: self.faults(),
            request_handler: None,
            tasks: None,
        }))
    }

    /// The injected faults (`--net.loss`, `--net.forge-chunks`) of a `fault-injection` build.
    #[cfg(feature = "fault-injection")]
    fn faults(&self) -> gigagas_net::faults::Faults {
        gigagas_net::faults::Faults {
            loss: self.netem.loss.clamp(0.0, 1.0),
            forge: self.netem.forge_chunks,
        }
    }

    /// No faults: a production build has no fault injection.
    #[cfg(not(feature = "fault-injection"))]
    fn faults(&self) -> gigagas_net::faults::Faults {
        gigagas_net::faults::Faults::default()
    }

    /// The chain an empty datadir is initialized with: `--chain`, else the dev chain with
    /// `--dev`, else mainnet.
    pub fn chain(&self) -> gigagas_chainspec::ChainArg {
        use gigagas_chainspec::{ChainArg, NamedChain};
        match (&self.chain, self.dev.dev) {
            (Some(chain), _) => chain.clone(),
            (None, true) => ChainArg::Named(NamedChain::Dev),
            (None, false) => ChainArg::Named(NamedChain::Mainnet),
        }
    }

    /// The devp2p nodes to start from: `--bootnodes`, else those of `chain` (the chain the
    /// datadir holds, when it is a named one).
    pub fn bootnodes(
        &self,
        chain: Option<gigagas_chainspec::NamedChain>,
    ) -> Vec<gigagas_net_peers::BootNode> {
        match &self.network.bootnodes {
            Some(nodes) => nodes.clone(),
            None => chain.map(|c| c.bootnodes()).unwrap_or_default(),
        }
    }

    /// The public JSON-RPC server's limits from the `--rpc.max-*` flags.
    pub fn http_limits(&self) -> gigagas_rpc::HttpLimits {
        gigagas_rpc::HttpLimits {
            max_request_bytes: self.rpc.max_request_mb.saturating_mul(1_000_000),
            max_response_bytes: self.rpc.max_response_mib.saturating_mul(1 << 20),
            max_connections: self.rpc.max_connections,
            max_batch: self.rpc.max_batch,
            calls: {
                // Default: the server's (a heavy call per core).
                let mut limits = self.rpc.max_heavy_calls.map_or(
                    gigagas_rpc::HttpLimits::default().calls,
                    gigagas_rpc::limit::CallLimits::running,
                );
                if let Some(queued) = self.rpc.max_heavy_queue {
                    limits.max_queued = queued;
                }
                limits
            },
        }
    }

    /// Who may reach the JSON-RPC port: `--http.vhosts`, `--http.corsdomain`.
    pub fn http_access(&self) -> gigagas_rpc::HttpAccess {
        gigagas_rpc::HttpAccess {
            vhosts: self.rpc.http_vhosts.clone(),
            cors: self.rpc.http_corsdomain.clone(),
        }
    }

    /// The WebSocket port's settings: `--ws.origins`,
    /// `--rpc.max-subscriptions-per-connection`, `--rpc.ws-buffer`.
    pub fn ws_config(&self) -> gigagas_rpc::WsConfig {
        gigagas_rpc::WsConfig {
            origins: self.rpc.ws_origins.clone(),
            max_subscriptions: self.rpc.max_subscriptions,
            message_buffer: self.rpc.ws_buffer,
            ..Default::default()
        }
    }

    /// The gas price oracle's settings: `--gpo.*`; its first suggestion geth's miner gas price
    /// (0.001 gwei; 1 wei on a dev chain, as geth's `--dev`).
    pub fn gas_oracle_config(&self) -> gigagas_rpc::GasPriceOracleConfig {
        gigagas_rpc::GasPriceOracleConfig {
            blocks: self.rpc.gpo_blocks,
            percentile: self.rpc.gpo_percentile,
            max_price: alloy_primitives::U256::from(self.rpc.gpo_max_price),
            ignore_price: alloy_primitives::U256::from(self.rpc.gpo_ignore_price),
            default_price: if self.dev.dev {
                alloy_primitives::U256::from(1)
            } else {
                gigagas_rpc::gas_oracle::DEFAULT_START_PRICE
            },
        }
    }

    /// The filters' bounds: `--rpc.filter-timeout`, `--rpc.max-filters`,
    /// `--rpc.max-filter-changes`.
    pub fn filter_config(&self) -> gigagas_rpc::FilterConfig {
        gigagas_rpc::FilterConfig {
            ttl: self.rpc.filter_timeout,
            max_filters: self.rpc.max_filters,
            max_changes: self.rpc.max_filter_changes,
        }
    }

    /// The IPC socket's path: `--ipcpath`, else `DATADIR/gigagas.ipc`; `None` with
    /// `--ipcdisable`.
    pub fn ipc_path(&self) -> Option<PathBuf> {
        if self.rpc.ipc_disable {
            return None;
        }
        Some(self.rpc.ipc_path.clone().unwrap_or_else(|| self.datadir.join("gigagas.ipc")))
    }

    /// The JWT secret file: `--authrpc.jwtsecret`, else `DATADIR/jwt.hex`.
    pub fn jwt_path(&self) -> PathBuf {
        self.rpc.jwt_secret.clone().unwrap_or_else(|| self.datadir.join("jwt.hex"))
    }
}

/// A duration flag that is not `500ms`, `5s`, `2m` or a number of seconds.
#[derive(Debug, thiserror::Error)]
#[error("{0}: not a duration (500ms, 5s, 2m)")]
pub(crate) struct InvalidDuration(String);

/// A duration as `500ms`, `5s`, `2m` or `0` (seconds when no unit is given).
fn parse_duration(s: &str) -> Result<std::time::Duration, InvalidDuration> {
    let s = s.trim();
    let (digits, scale) = if let Some(d) = s.strip_suffix("ms") {
        (d, 1e-3)
    } else if let Some(d) = s.strip_suffix('s') {
        (d, 1.0)
    } else if let Some(d) = s.strip_suffix('m') {
        (d, 60.0)
    } else {
        (s, 1.0)
    };
    match digits.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok(std::time::Duration::from_secs_f64(n * scale)),
        _ => Err(InvalidDuration(s.to_string())),
    }
}
