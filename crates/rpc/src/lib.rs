//! gigagas's JSON-RPC servers over the stored chain (read through `gigagas-storage-api`'s
//! readers), each namespace a typed trait (`#[rpc(server, client)]` over alloy's types, reth's
//! shape) and the struct that serves it:
//! - [`EthApi`] / [`NetApi`] ([`EthRpc`]): the execution API (<https://github.com/ethereum/execution-apis>)
//!   reading blocks, transactions, receipts, logs and state, calls, estimates and
//!   `eth_simulateV1`, and `eth_sendRawTransaction` into the pool;
//! - [`DebugApi`] ([`DebugRpc`]): geth's raw getters, tracers and execution witnesses
//!   ([`witness`]);
//! - [`TxPoolApi`] ([`TxPoolRpc`]): geth's view of the pool;
//! - [`TraceApi`] ([`TraceRpc`]): the parity `trace_` namespace, as reth serves it;
//! - [`EthFilterApi`] ([`EthFilter`]) and [`EthPubSubApi`] ([`EthPubSub`]): geth's polling
//!   filters and `eth_subscribe` (WebSocket and IPC), over the chain's moves
//!   ([`chain_events`]);
//! - [`AdminApi`] ([`AdminRpc`]): geth's `admin_nodeInfo`, `admin_peers`, `admin_addPeer`;
//! - [`Web3Api`] ([`Web3Rpc`]): `web3_clientVersion`, `web3_sha3`;
//! - [`EngineApi`] / [`TestingApi`] ([`EngineRpc`]): the Engine API, behind JWT.
//!
//! The crate holds handlers only: what changes the chain goes to the engine task through the
//! [`EngineHandle`] it is given (the node wires it), what reads the chain reads the engine's
//! [`BlockchainProvider`]: the canonical blocks the engine has not persisted yet from memory,
//! the rest from the store, so the head RPC reports is always the forkchoice head.
//!
//! The head's state is read as the in-memory blocks' diffs over the store's flat state; an
//! older block's state from its state root through the stored trie nodes (the store keeps every
//! trie node, so every block's state is available, as in an archive node). Served with jsonrpsee over HTTP; errors follow the JSON-RPC 2.0 codes (-32602 invalid
//! params, -32601 method not found) and geth's -32000 for a missing block or state.

mod admin;
pub mod auth;
pub mod bad_blocks;
mod blocks;
pub mod cache;
mod call;
pub mod chain_events;
mod config;
mod convert;
mod debug;
mod engine;
mod eth;
mod fee_history;
pub mod filter;
pub mod gas_oracle;
pub mod hosts;
pub mod invalid_params;
#[cfg(unix)]
pub mod ipc;
pub mod limit;
mod log_json;
pub mod metrics;
pub mod modules;
mod overrides;
mod params;
pub mod parity_trace;
mod pubsub;
mod simulate;
mod state;
pub mod syncing;
mod trace;
mod txpool;
mod web3;
pub mod witness;

use gigagas_chain_state::BlockchainProvider;
use gigagas_engine_primitives::EngineHandle;
use gigagas_primitives::ChainSpec;
use gigagas_storage_api::ProviderError;
use gigagas_txpool::TxPool;
use jsonrpsee::{
    server::{middleware::rpc::RpcServiceBuilder, Server},
    types::ErrorObjectOwned,
    RpcModule,
};
use std::{net::SocketAddr, sync::Arc};

pub use admin::{
    AdminApiClient, AdminApiServer, AdminNodeInfo, AdminPeer, AdminPeerNetwork, AdminPorts,
    AdminRpc,
};
pub use debug::{DebugApiClient, DebugApiServer, DebugRpc};
pub use engine::{
    ClientVersion, EngineApiClient, EngineApiServer, EngineRpc, PayloadEnvelope, PayloadStatusV1,
    TestingApiClient, TestingApiServer, CAPABILITIES, MAX_BLOB_HASHES, MAX_PAYLOAD_BODIES,
};
pub use eth::{
    Capabilities, CapabilitiesHead, Capability, EthApiClient, EthApiServer, EthRpc, NetApiClient,
    NetApiServer,
};
pub use filter::{EthFilter, EthFilterApiClient, EthFilterApiServer, FilterConfig};
pub use gas_oracle::GasPriceOracleConfig;
pub use gigagas_engine_primitives::Forkchoice;
pub use hosts::AllowList;
pub use jsonrpsee::server::ServerHandle;
pub use modules::{RpcModuleSelection, RpcNamespace, UnknownModule};
pub use params::{HashParam, StorageKeyParam};
pub use parity_trace::{TraceApiClient, TraceApiServer, TraceRpc};
pub use pubsub::{EthPubSub, EthPubSubApiServer};
pub use txpool::{TxPoolApiClient, TxPoolApiServer, TxPoolRpc, TxPoolStatus};
pub use web3::{client_version, Web3ApiClient, Web3ApiServer, Web3Rpc};

/// What the RPC handlers are given: the chain (reads), the engine task's handle (payloads,
/// forkchoice, payload building) and the transaction pool.
#[derive(Debug)]
pub struct RpcContext {
    /// The chain as the engine publishes it: the in-memory canonical blocks over the store.
    pub provider: Arc<BlockchainProvider>,
    /// The chain's fork schedule and chain id.
    pub chain: ChainSpec,
    /// The engine task.
    pub engine: EngineHandle,
    /// Transactions sent with `eth_sendRawTransaction`.
    pub pool: Arc<TxPool>,
    /// The node's peer-to-peer networks (devp2p, libp2p): `net_peerCount` counts the peers of
    /// all, `admin_` reads and adds them.
    pub networks: Vec<Arc<dyn gigagas_net_api::NetworkInfo>>,
    /// geth's RPC gas cap (gas; 0: none): the most gas `eth_call` and `eth_estimateGas` give a
    /// request, and the gas all calls of one `eth_simulateV1` request may use together.
    pub gas_cap: u64,
    /// Most blocks one `eth_getLogs` may scan (reth's `--rpc.max-blocks-per-filter`; 0: none).
    pub max_blocks_per_filter: u64,
    /// Most logs one `eth_getLogs` answer over several blocks may hold (reth's
    /// `--rpc.max-logs-per-response`; 0: none).
    pub max_logs_per_response: usize,
    /// geth's `--rpc.evmtimeout`: an `eth_call` still running after it is aborted (`None`:
    /// never).
    pub evm_timeout: Option<std::time::Duration>,
    /// Decoded blocks and receipts recently served, by hash (reth's `EthStateCache`).
    pub cache: cache::RpcCache,
    /// geth's `--rpc.txfeecap` (wei; 0: none): `eth_sendRawTransaction` refuses a transaction
    /// whose fee cap times its gas limit is above it.
    pub tx_fee_cap: alloy_primitives::U256,
    /// The running sync's progress for `eth_syncing` (none: `false`).
    pub sync_status: Option<Arc<dyn syncing::SyncStatusSource>>,
    /// The canonical chain's moves for subscriptions and filters.
    pub events: chain_events::ChainEvents,
    /// The installed polling filters (`eth_newFilter` …).
    pub filters: filter::FilterStore,
    /// geth's gas price oracle (`eth_gasPrice`, `eth_maxPriorityFeePerGas`).
    pub gas_oracle: gas_oracle::GasPriceOracle,
    /// The payloads the Engine API found INVALID (`debug_getBadBlocks`).
    pub bad_blocks: bad_blocks::BadBlocks,
}

/// geth's and reth's `--rpc.txfeecap` default: 1 ether.
pub const DEFAULT_TX_FEE_CAP: alloy_primitives::U256 =
    alloy_primitives::U256::from_limbs([1_000_000_000_000_000_000, 0, 0, 0]);

/// geth's `--rpc.evmtimeout` default: 5 s.
pub const DEFAULT_EVM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// reth's `--rpc.max-blocks-per-filter` default: blocks one `eth_getLogs` may scan.
pub const DEFAULT_MAX_BLOCKS_PER_FILTER: u64 = 100_000;
/// reth's `--rpc.max-logs-per-response` default.
pub const DEFAULT_MAX_LOGS_PER_RESPONSE: usize = 20_000;

/// The RPC gas cap a node has unless told otherwise (geth's and reth's default).
pub const DEFAULT_GAS_CAP: u64 = 50_000_000;

impl RpcContext {
    /// The handlers' context over `provider` (the engine tree's in-memory canonical chain
    /// over its store: `gigagas_engine::BlockTree::canonical_in_memory_state`), the engine
    /// behind `engine` and `pool`.
    pub fn new(provider: BlockchainProvider, engine: EngineHandle, pool: Arc<TxPool>) -> Self {
        Self {
            provider: Arc::new(provider),
            chain: engine.chain().clone(),
            engine,
            pool,
            networks: Vec::new(),
            gas_cap: DEFAULT_GAS_CAP,
            max_blocks_per_filter: DEFAULT_MAX_BLOCKS_PER_FILTER,
            max_logs_per_response: DEFAULT_MAX_LOGS_PER_RESPONSE,
            evm_timeout: Some(DEFAULT_EVM_TIMEOUT),
            cache: cache::RpcCache::default(),
            tx_fee_cap: DEFAULT_TX_FEE_CAP,
            sync_status: None,
            events: chain_events::ChainEvents::default(),
            filters: filter::FilterStore::default(),
            gas_oracle: gas_oracle::GasPriceOracle::default(),
            bad_blocks: bad_blocks::BadBlocks::default(),
        }
    }

    /// The same context with the gas price oracle's settings `config` (`--gpo.*`).
    pub fn with_gas_oracle(mut self, config: GasPriceOracleConfig) -> Self {
        self.gas_oracle = gas_oracle::GasPriceOracle::new(config);
        self
    }

    /// The same context with the filters' bounds `config` (`--rpc.filter-timeout`,
    /// `--rpc.max-filters`, `--rpc.max-filter-changes`).
    pub fn with_filters(mut self, config: FilterConfig) -> Self {
        self.filters = filter::FilterStore::new(config);
        self
    }

    /// The same context refusing raw transactions that may pay more than `cap` wei in fees
    /// (geth's `--rpc.txfeecap`; 0: no cap).
    pub fn with_tx_fee_cap(mut self, cap: alloy_primitives::U256) -> Self {
        self.tx_fee_cap = cap;
        self
    }

    /// The same context with `eth_call`'s time limit (`None`: none).
    pub fn with_evm_timeout(mut self, timeout: Option<std::time::Duration>) -> Self {
        self.evm_timeout = timeout;
        self
    }

    /// The same context caching at most `max_blocks` decoded blocks and the receipts of
    /// `max_receipts` blocks (reth's `--rpc-cache.max-blocks`, `--rpc-cache.max-receipts`).
    pub fn with_cache(mut self, max_blocks: u64, max_receipts: u64) -> Self {
        self.cache = cache::RpcCache::new(max_blocks, max_receipts);
        self
    }

    /// The same context with `eth_getLogs` limits: blocks scanned and logs answered (0: none).
    pub fn with_log_limits(mut self, max_blocks: u64, max_logs: usize) -> Self {
        self.max_blocks_per_filter = max_blocks;
        self.max_logs_per_response = max_logs;
        self
    }

    /// The same context with RPC gas cap `gas_cap` (gas; 0: none).
    pub fn with_gas_cap(mut self, gas_cap: u64) -> Self {
        self.gas_cap = gas_cap;
        self
    }

    /// The same context with `network` among its networks (`net_peerCount`, `admin_`).
    pub fn with_network(mut self, network: Arc<dyn gigagas_net_api::NetworkInfo>) -> Self {
        self.networks.push(network);
        self
    }

    /// Head, safe and finalized as the last forkchoice update set them.
    pub fn forkchoice(&self) -> Forkchoice {
        self.engine.forkchoice()
    }
}

/// Errors of the RPC layer, mapped to JSON-RPC error objects.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// The store failed or holds something malformed (-32000).
    #[error("store: {0}")]
    Store(#[from] ProviderError),
    /// Reading an account, a slot or code failed (-32000).
    #[error("state: {0}")]
    State(#[from] gigagas_state::StateError),
    /// Something the store must hold for a block it has is not there (-32000).
    #[error("{what} of block {block} missing")]
    Missing {
        /// `body` or `receipts`.
        what: &'static str,
        /// The block.
        block: u64,
    },
    /// A stored transaction's sender does not recover (-32000).
    #[error("sender of tx {index} of block {block}: {source}")]
    Sender {
        /// The block.
        block: u64,
        /// The transaction's index in it.
        index: usize,
        /// The recovery's error.
        source: alloy_consensus::crypto::RecoveryError,
    },
    /// A block's senders do not recover for a replay (-32000).
    #[error(transparent)]
    Senders(#[from] gigagas_primitives::RecoveryError),
    /// A proof could not be built from the trie (-32000).
    #[error("proof of {address}: {source}")]
    Proof {
        /// The account.
        address: alloy_primitives::Address,
        /// The trie's error.
        source: Box<gigagas_trie::TrieError>,
    },
    /// Replaying a block for its traces failed (-32000).
    #[error("replay: {0}")]
    Replay(#[source] Box<gigagas_executor::ExecutionError>),
    /// Reading the replayed state for a trace failed (-32000).
    #[error("replay: {0}")]
    ReplayRead(
        #[source] Box<revm::database_interface::bal::EvmDatabaseError<gigagas_state::StateError>>,
    ),
    /// The EVM failed for another reason than the transaction or the header: its database
    /// (-32000).
    #[error("evm: {0}")]
    Evm(#[source] Box<revm::context::result::EVMError<gigagas_state::StateError>>),
    /// A block's execution witness could not be made (-32000): it did not execute, or the
    /// store lacks a node of its parent's state.
    #[error("execution witness: {0}")]
    Witness(#[source] Box<gigagas_validation::WitnessError>),
    /// The genesis block has no transactions to trace (-32000, geth's wording).
    #[error("genesis is not traceable")]
    GenesisNotTraceable,
    /// `eth_createAccessList`'s list kept changing (-32000).
    #[error("access list did not settle after {0} runs")]
    AccessListUnsettled(usize),
    /// The JWT secret file cannot be read or written.
    #[error("JWT secret {path}: {source}")]
    JwtFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The operating system's random generator failed (a JWT secret could not be made).
    #[error("random: {0}")]
    Random(#[from] getrandom::Error),
    /// A request could not run as a transaction, or failed where geth answers an error (e.g.
    /// insufficient funds, "gas required exceeds allowance"): -32000 with the reason.
    #[error("{0}")]
    Execution(String),
    /// A requested block does not exist (-32000, geth's wording).
    #[error("{0} not found")]
    NotFound(String),
    /// A parameter is malformed (-32602).
    #[error("invalid argument: {0}")]
    InvalidParams(String),
    /// No filter has the id polled: never installed, uninstalled, or expired (-32000, geth's
    /// wording).
    #[error("filter not found")]
    FilterNotFound,
    /// As many filters as allowed are installed (-32005, limit exceeded).
    #[error("too many filters: at most {0} may be installed; uninstall some or let them expire")]
    TooManyFilters(usize),
    /// The filter gathered more changes than allowed between two polls and was uninstalled
    /// (-32000): polling it again would have missed some.
    #[error("filter dropped: more than {0} changes since its last poll; install it again and poll it more often")]
    FilterOverflow(usize),
    /// An answer could not be encoded as JSON (-32603, an internal error).
    #[error("encoding the answer: {0}")]
    Encoding(#[from] serde_json::Error),
    /// The IPC socket could not be made.
    #[error("IPC socket {path}: {source}")]
    Ipc {
        /// The socket's path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The server could not start.
    #[error("server on {addr}: {source}")]
    Server {
        /// The address it tried.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(e: RpcError) -> Self {
        let code = match e {
            RpcError::InvalidParams(_) => jsonrpsee::types::error::INVALID_PARAMS_CODE,
            RpcError::Encoding(_) => jsonrpsee::types::error::INTERNAL_ERROR_CODE,
            RpcError::TooManyFilters(_) => limit::LIMIT_EXCEEDED_CODE,
            _ => -32000,
        };
        ErrorObjectOwned::owned(code, e.to_string(), None::<()>)
    }
}

/// What a public JSON-RPC port serves: the namespaces of `modules` (`--http.api`; geth's
/// default `eth,net,web3`; `admin`, `debug`, `txpool` and `testing` only when named). A
/// method of another namespace is answered -32601 (method not found), as geth answers.
pub fn public_module(
    ctx: Arc<RpcContext>,
    modules: &RpcModuleSelection,
) -> RpcModule<Arc<RpcContext>> {
    let mut m = RpcModule::new(ctx.clone());
    let eth = EthRpc::new(ctx.clone());
    for module in modules.iter() {
        let merged = match module {
            modules::RpcNamespace::Eth => m
                .merge(EthApiServer::into_rpc(eth.clone()))
                .and_then(|()| m.merge(EthFilter::new(ctx.clone()).into_rpc())),
            modules::RpcNamespace::Net => m.merge(NetApiServer::into_rpc(eth.clone())),
            modules::RpcNamespace::Web3 => m.merge(Web3Rpc.into_rpc()),
            modules::RpcNamespace::Admin => m.merge(AdminRpc::new(ctx.clone()).into_rpc()),
            modules::RpcNamespace::Debug => m.merge(DebugRpc::new(ctx.clone()).into_rpc()),
            modules::RpcNamespace::Txpool => m.merge(TxPoolRpc::new(ctx.clone()).into_rpc()),
            modules::RpcNamespace::Trace => {
                m.merge(parity_trace::TraceRpc::new(ctx.clone()).into_rpc())
            }
            modules::RpcNamespace::Testing => m.merge(engine::testing_module(ctx.clone())),
        };
        merged.expect("method names are distinct");
    }
    m
}

/// What a WebSocket or IPC endpoint serves: [`public_module`] of `modules` and, with `eth`,
/// the subscriptions (`eth_subscribe`, `eth_unsubscribe`), which need a connection that stays
/// open.
pub fn ws_module(ctx: Arc<RpcContext>, modules: &RpcModuleSelection) -> RpcModule<Arc<RpcContext>> {
    let mut m = public_module(ctx.clone(), modules);
    if modules.contains(modules::RpcNamespace::Eth) {
        m.merge(EthPubSub::new(ctx).into_rpc()).expect("method names are distinct");
    }
    m
}

/// What the authenticated port serves: the Engine API and every namespace (its JWT is the
/// guard), as reth's auth server serves the Engine API beside the `eth` namespace.
pub fn auth_module(ctx: Arc<RpcContext>) -> RpcModule<Arc<RpcContext>> {
    let mut m = public_module(ctx.clone(), &RpcModuleSelection::all());
    m.merge(engine::module(ctx)).expect("method names are distinct");
    m
}

/// Starts an HTTP JSON-RPC server on `addr` serving `module` within `limits`, with geth's
/// default access ([`HttpAccess::default`]); see [`serve_http_with`].
///
/// # Errors
/// [`RpcError::Server`] when the address cannot be bound.
pub async fn serve_http(
    addr: SocketAddr,
    module: RpcModule<Arc<RpcContext>>,
    limits: HttpLimits,
) -> Result<(SocketAddr, ServerHandle), RpcError> {
    serve_http_with(addr, module, limits, HttpAccess::default()).await
}

/// The builder's settings every public endpoint shares: `limits`' sizes, connections and
/// batches.
fn public_config(limits: &HttpLimits) -> jsonrpsee::server::ServerConfigBuilder {
    let batches = match limits.max_batch {
        0 => jsonrpsee::server::BatchRequestConfig::Unlimited,
        n => jsonrpsee::server::BatchRequestConfig::Limit(n),
    };
    jsonrpsee::server::ServerConfig::builder()
        .max_request_body_size(limits.max_request_bytes)
        .max_response_body_size(limits.max_response_bytes)
        .max_connections(limits.max_connections)
        .set_batch_request_config(batches)
}

/// The RPC middleware every public transport runs (HTTP, WebSocket, IPC): calls counted per
/// method under `label` ([`metrics::CallCounterLayer`]), -32602 answers in geth's shape
/// ([`invalid_params::InvalidParamsLayer`]), heavy calls limited ([`limit::CallLimitLayer`],
/// inside the reshaping layer, which hands it a batch's calls one by one).
pub(crate) type PublicMiddleware = tower::layer::util::Stack<
    limit::CallLimitLayer,
    tower::layer::util::Stack<
        invalid_params::InvalidParamsLayer,
        tower::layer::util::Stack<metrics::CallCounterLayer, tower::layer::util::Identity>,
    >,
>;

/// [`PublicMiddleware`] for a server labelled `label` serving `module` within `limits`.
pub(crate) fn public_middleware(
    label: &'static str,
    module: &RpcModule<Arc<RpcContext>>,
    limits: &HttpLimits,
) -> RpcServiceBuilder<PublicMiddleware> {
    RpcServiceBuilder::new()
        .layer(metrics::CallCounterLayer::new(label, module.method_names()))
        .layer(invalid_params::InvalidParamsLayer::new(limits.max_response_bytes))
        .layer(limit::CallLimitLayer::new(limits.calls))
}

/// `serve` run on the runtime behind `runtime` (the node's JSON-RPC runtime, of lower priority
/// than block validation): the listener it starts, its connections and the handlers run there;
/// `dropped` makes the error of a runtime that dropped it.
async fn spawned_on<T: Send + 'static>(
    runtime: &tokio::runtime::Handle,
    serve: impl std::future::Future<Output = Result<T, RpcError>> + Send + 'static,
    dropped: impl FnOnce(std::io::Error) -> RpcError,
) -> Result<T, RpcError> {
    runtime.spawn(serve).await.map_err(|e| {
        dropped(std::io::Error::other(format!("the RPC runtime dropped the server: {e}")))
    })?
}

/// Starts an HTTP JSON-RPC server (plain HTTP: subscriptions are served over WebSocket,
/// [`serve_ws`]) on `addr` serving `module` within `limits` to the hosts and origins `access`
/// allows, its calls counted per method ([`metrics::CallCounterLayer`], server label `http`);
/// returns the bound address (an ephemeral port when `addr` asks for port 0) and the handle
/// that stops it.
///
/// # Errors
/// [`RpcError::Server`] when the address cannot be bound.
pub async fn serve_http_with(
    addr: SocketAddr,
    module: RpcModule<Arc<RpcContext>>,
    limits: HttpLimits,
    access: HttpAccess,
) -> Result<(SocketAddr, ServerHandle), RpcError> {
    let hosts = tower_http::validate_request::ValidateRequestHeaderLayer::custom(
        hosts::VirtualHosts::new(access.vhosts),
    );
    let http =
        tower::ServiceBuilder::new().layer(hosts).option_layer(hosts::cors_layer(&access.cors));
    let server = Server::builder()
        .set_config(public_config(&limits).http_only().build())
        .set_http_middleware(http)
        .set_rpc_middleware(public_middleware("http", &module, &limits))
        .build(addr)
        .await
        .map_err(|source| RpcError::Server { addr, source })?;
    let bound = server.local_addr().map_err(|source| RpcError::Server { addr, source })?;
    Ok((bound, server.start(module)))
}

/// [`serve_http_with`] on the runtime behind `runtime`: the listener, its connections and the
/// method handlers all run there (the node gives its JSON-RPC a runtime of lower priority than
/// block validation), the blocking methods on that runtime's bounded blocking pool.
///
/// # Errors
/// [`RpcError::Server`] when the address cannot be bound.
pub async fn serve_http_on(
    runtime: &tokio::runtime::Handle,
    addr: SocketAddr,
    module: RpcModule<Arc<RpcContext>>,
    limits: HttpLimits,
    access: HttpAccess,
) -> Result<(SocketAddr, ServerHandle), RpcError> {
    spawned_on(runtime, serve_http_with(addr, module, limits, access), |source| RpcError::Server {
        addr,
        source,
    })
    .await
}

/// Starts a WebSocket JSON-RPC server on `addr` serving `module` (with the subscriptions:
/// [`ws_module`]) within `limits` and `ws` (origins, subscriptions and buffered messages per
/// connection, pings), its calls counted per method (server label `ws`); returns the bound
/// address and the handle that stops it.
///
/// # Errors
/// [`RpcError::Server`] when the address cannot be bound.
pub async fn serve_ws(
    addr: SocketAddr,
    module: RpcModule<Arc<RpcContext>>,
    limits: HttpLimits,
    ws: WsConfig,
) -> Result<(SocketAddr, ServerHandle), RpcError> {
    let origins = tower_http::validate_request::ValidateRequestHeaderLayer::custom(
        hosts::WsOrigins::new(ws.origins),
    );
    let ping = jsonrpsee::server::PingConfig::new()
        .ping_interval(ws.ping_interval)
        .inactive_limit(ws.inactive_limit);
    let config = public_config(&limits)
        .ws_only()
        .max_subscriptions_per_connection(ws.max_subscriptions)
        .set_message_buffer_capacity(ws.message_buffer.max(1))
        .enable_ws_ping(ping)
        .set_id_provider(pubsub::HexIdProvider)
        .build();
    let server = Server::builder()
        .set_config(config)
        .set_http_middleware(tower::ServiceBuilder::new().layer(origins))
        .set_rpc_middleware(public_middleware("ws", &module, &limits))
        .build(addr)
        .await
        .map_err(|source| RpcError::Server { addr, source })?;
    let bound = server.local_addr().map_err(|source| RpcError::Server { addr, source })?;
    Ok((bound, server.start(module)))
}

/// [`serve_ws`] on the runtime behind `runtime` (see [`serve_http_on`]).
///
/// # Errors
/// [`RpcError::Server`] when the address cannot be bound.
pub async fn serve_ws_on(
    runtime: &tokio::runtime::Handle,
    addr: SocketAddr,
    module: RpcModule<Arc<RpcContext>>,
    limits: HttpLimits,
    ws: WsConfig,
) -> Result<(SocketAddr, ServerHandle), RpcError> {
    spawned_on(runtime, serve_ws(addr, module, limits, ws), |source| RpcError::Server {
        addr,
        source,
    })
    .await
}

/// Who may reach the public HTTP endpoint (geth's `--http.vhosts`, `--http.corsdomain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAccess {
    /// Hosts a request's `Host` header may name (IP addresses always pass).
    pub vhosts: AllowList,
    /// Origins browsers may call it from (CORS); none: no CORS headers.
    pub cors: AllowList,
}

impl Default for HttpAccess {
    /// geth's: `localhost`, no CORS.
    fn default() -> Self {
        Self { vhosts: "localhost".parse().expect("infallible"), cors: AllowList::default() }
    }
}

/// The WebSocket endpoint's own settings (geth's `--ws.origins`; reth's
/// `--rpc.max-subscriptions-per-connection`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsConfig {
    /// Origins a browser's handshake may come from (empty: geth's default,
    /// `http://localhost` and this machine's name).
    pub origins: AllowList,
    /// Most subscriptions one connection holds; past it `eth_subscribe` is refused.
    pub max_subscriptions: u32,
    /// Messages (answers and notifications) buffered per connection for a client that reads
    /// slower than they come; a subscription that finds the buffer full is dropped.
    pub message_buffer: u32,
    /// A ping every this often.
    pub ping_interval: std::time::Duration,
    /// A connection that answers no ping for this long is closed.
    pub inactive_limit: std::time::Duration,
}

/// reth's and jsonrpsee's subscriptions per connection.
pub const DEFAULT_MAX_SUBSCRIPTIONS: u32 = 1_024;
/// jsonrpsee's messages buffered per connection.
pub const DEFAULT_WS_MESSAGE_BUFFER: u32 = 1_024;

impl Default for WsConfig {
    /// geth's origins, 1,024 subscriptions and messages, a ping every 30 s and 60 s to answer.
    fn default() -> Self {
        Self {
            origins: AllowList::default(),
            max_subscriptions: DEFAULT_MAX_SUBSCRIPTIONS,
            message_buffer: DEFAULT_WS_MESSAGE_BUFFER,
            ping_interval: std::time::Duration::from_secs(30),
            inactive_limit: std::time::Duration::from_secs(60),
        }
    }
}

/// The public JSON-RPC server's limits (`--rpc.max-*`): past one the caller gets jsonrpsee's
/// JSON-RPC error (an oversize request body: HTTP 413; an oversize response: error -32008;
/// a batch over the limit: error -32010; a heavy call past its class's running and queued ones:
/// error -32005, [`limit::CallLimitLayer`]) or, past the connection limit, a refused
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest request body (bytes).
    pub max_request_bytes: u32,
    /// Largest response body (bytes).
    pub max_response_bytes: u32,
    /// Most concurrent connections.
    pub max_connections: u32,
    /// Most calls in one batch (0: no limit).
    pub max_batch: u32,
    /// Heavy calls ([`limit::HEAVY_METHODS`]) of each class running at once and waiting; past
    /// them refused.
    pub calls: limit::CallLimits,
}

impl Default for HttpLimits {
    /// reth's request size (15 MB) and connections (500), geth's batch limit (1,000),
    /// jsonrpsee's response size (10 MiB), and a heavy call of each class running per core
    /// with 16 waiting for each.
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Self {
            max_request_bytes: 15 * 1_000_000,
            max_response_bytes: HTTP_MAX_RESPONSE_BYTES,
            max_connections: 500,
            max_batch: 1_000,
            calls: limit::CallLimits::running(cores as u32),
        }
    }
}

/// Largest public JSON-RPC response body (bytes): jsonrpsee's default, 10 MiB.
pub const HTTP_MAX_RESPONSE_BYTES: u32 = 10 * 1024 * 1024;

/// Largest Engine API request body (bytes), as reth's auth server: 128 MiB.
pub const AUTH_MAX_REQUEST_BYTES: u32 = 128 * 1024 * 1024;
/// Largest Engine API response body (bytes), as reth's auth server: 750 MiB.
pub const AUTH_MAX_RESPONSE_BYTES: u32 = 750 * 1024 * 1024;
/// Most concurrent Engine API connections, as reth's auth server.
pub const AUTH_MAX_CONNECTIONS: u32 = 500;

/// [`serve_http`] behind JWT authentication ([`auth::JwtValidator`]): every request without
/// a valid `Authorization: Bearer` token is answered 401 before it reaches `module`; calls
/// are counted under the server label `auth`; requests up to [`AUTH_MAX_REQUEST_BYTES`].
///
/// # Errors
/// [`RpcError::Server`] when the address cannot be bound.
pub async fn serve_http_auth(
    addr: SocketAddr,
    module: RpcModule<Arc<RpcContext>>,
    secret: auth::JwtSecret,
) -> Result<(SocketAddr, ServerHandle), RpcError> {
    let layer = tower_http::validate_request::ValidateRequestHeaderLayer::custom(
        auth::JwtValidator::new(secret),
    );
    let counter = metrics::CallCounterLayer::new("auth", module.method_names());
    let reshape = invalid_params::InvalidParamsLayer::new(AUTH_MAX_RESPONSE_BYTES);
    // reth's auth-server limits: a payload of a large block with its BAL exceeds jsonrpsee's
    // 10 MiB default (a 1G-gas block: about 30 MiB of JSON).
    let config = jsonrpsee::server::ServerConfig::builder()
        .max_request_body_size(AUTH_MAX_REQUEST_BYTES)
        .max_response_body_size(AUTH_MAX_RESPONSE_BYTES)
        .max_connections(AUTH_MAX_CONNECTIONS)
        .build();
    let server = Server::builder()
        .set_config(config)
        .set_http_middleware(tower::ServiceBuilder::new().layer(layer))
        .set_rpc_middleware(RpcServiceBuilder::new().layer(counter).layer(reshape))
        .build(addr)
        .await
        .map_err(|source| RpcError::Server { addr, source })?;
    let bound = server.local_addr().map_err(|source| RpcError::Server { addr, source })?;
    Ok((bound, server.start(module)))
}
