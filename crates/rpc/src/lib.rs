//! gigagas's JSON-RPC servers over the stored chain (crates/storage): the `eth_` and `net_`
//! methods of the Ethereum execution API (<https://github.com/ethereum/execution-apis>) that
//! read blocks, transactions, receipts and state, the `debug_getRaw*` methods, and the Engine
//! API's `engine_forkchoiceUpdated` head / safe / finalized bookkeeping.
//!
//! State at any stored block is read from that block's state root through the stored trie nodes
//! (the store keeps every trie node, so every block's state is available, as in an archive
//! node). Served with jsonrpsee over HTTP; errors follow the JSON-RPC 2.0 codes (-32602 invalid
//! params, -32601 method not found) and geth's -32000 for a missing block or state.

pub mod auth;
mod call;
mod config;
mod convert;
mod engine;
mod eth;
mod simulate;
mod state;
mod trace;
mod txpool;

use gigagas_primitives::ChainSpec;
use gigagas_stages::{BlockTree, TxPool};
use gigagas_storage::Storage;
use jsonrpsee::{
    server::{Server, ServerHandle},
    types::ErrorObjectOwned,
    RpcModule,
};
use std::{net::SocketAddr, sync::Arc};

pub use engine::{EngineEvent, EventHook, PayloadStore, CAPABILITIES, KEEP_PAYLOADS};
pub use gigagas_stages::Forkchoice;

/// What the RPC methods share: the store, the chain's rules, the engine tree (fork choice,
/// executed payloads), the transaction pool and the payloads built.
#[derive(Debug)]
pub struct RpcContext {
    /// The chain store.
    pub storage: Arc<Storage>,
    /// The chain's fork schedule and chain id.
    pub chain: ChainSpec,
    /// Executed payloads, head / safe / finalized, reorgs.
    pub tree: Arc<BlockTree>,
    /// Transactions sent with `eth_sendRawTransaction`.
    pub pool: Arc<TxPool>,
    /// Payloads built for `engine_getPayload`.
    pub payloads: PayloadStore,
    /// Called after every executed payload and canonical change (metrics, logs).
    pub on_event: Option<EventHook>,
}

impl RpcContext {
    /// A context over `storage` whose parallel executor (for payloads that carry a BAL) runs
    /// on `threads` workers; the chain spec is the one stored at init; head, safe and
    /// finalized start at the stored head.
    ///
    /// # Errors
    /// [`RpcError`] when the store is not initialized or unreadable.
    pub fn new(storage: Arc<Storage>, threads: usize) -> Result<Self, RpcError> {
        let tree =
            BlockTree::new(storage.clone(), threads).map_err(|e| RpcError::Store(e.to_string()))?;
        Ok(Self {
            storage,
            chain: tree.chain().clone(),
            tree: Arc::new(tree),
            pool: Arc::default(),
            payloads: PayloadStore::default(),
            on_event: None,
        })
    }

    /// Head, safe and finalized as the last forkchoice update set them.
    pub fn forkchoice(&self) -> Forkchoice {
        self.tree.forkchoice()
    }
}

/// Errors of the RPC layer, mapped to JSON-RPC error objects.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// The store failed or holds something malformed (-32000).
    #[error("store: {0}")]
    Store(String),
    /// A requested block does not exist (-32000, geth's wording).
    #[error("{0} not found")]
    NotFound(String),
    /// A parameter is malformed (-32602).
    #[error("invalid argument: {0}")]
    InvalidParams(String),
    /// The server could not start.
    #[error("server on {addr}: {source}")]
    Server {
        /// The address it tried.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl From<gigagas_storage::StorageError> for RpcError {
    fn from(e: gigagas_storage::StorageError) -> Self {
        Self::Store(e.to_string())
    }
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(e: RpcError) -> Self {
        let code = match e {
            RpcError::InvalidParams(_) => jsonrpsee::types::error::INVALID_PARAMS_CODE,
            _ => -32000,
        };
        ErrorObjectOwned::owned(code, e.to_string(), None::<()>)
    }
}

/// What the public JSON-RPC port serves: the `eth_`, `net_` and `debug_getRaw*` methods and
/// the transaction pool
/// (`eth_sendRawTransaction`, `txpool_*`).
pub fn public_module(ctx: Arc<RpcContext>) -> RpcModule<Arc<RpcContext>> {
    let mut m = eth::module(ctx.clone());
    m.merge(txpool::module(ctx.clone())).expect("method names are distinct");
    m.merge(trace::module(ctx.clone())).expect("method names are distinct");
    m.merge(engine::testing_module(ctx)).expect("method names are distinct");
    m
}

/// What the authenticated port serves: the Engine API and everything of [`public_module`],
/// as reth's auth server does.
pub fn auth_module(ctx: Arc<RpcContext>) -> RpcModule<Arc<RpcContext>> {
    let mut m = engine::module(ctx.clone());
    m.merge(public_module(ctx)).expect("method names are distinct");
    m
}

/// Starts an HTTP JSON-RPC server on `addr` serving `module`; returns the bound address (an
/// ephemeral port when `addr` asks for port 0) and the handle that stops it.
///
/// # Errors
/// [`RpcError::Server`] when the address cannot be bound.
pub async fn serve_http(
    addr: SocketAddr,
    module: RpcModule<Arc<RpcContext>>,
) -> Result<(SocketAddr, ServerHandle), RpcError> {
    let server =
        Server::builder().build(addr).await.map_err(|source| RpcError::Server { addr, source })?;
    let bound = server.local_addr().map_err(|source| RpcError::Server { addr, source })?;
    Ok((bound, server.start(module)))
}

/// [`serve_http`] behind JWT authentication ([`auth::JwtValidator`]): every request without
/// a valid `Authorization: Bearer` token is answered 401 before it reaches `module`.
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
    let server = Server::builder()
        .set_http_middleware(tower::ServiceBuilder::new().layer(layer))
        .build(addr)
        .await
        .map_err(|source| RpcError::Server { addr, source })?;
    let bound = server.local_addr().map_err(|source| RpcError::Server { addr, source })?;
    Ok((bound, server.start(module)))
}
