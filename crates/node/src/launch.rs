//! The node's launcher (reth's `crates/node/builder` launch): opens the datadir, builds the
//! engine tree with its one executor pool, starts the engine task, the transaction pool, the
//! payload store, the metrics exporter, the JSON-RPC and Engine API servers and, with `--dev`,
//! the local miner; [`NodeHandle`] owns them and shuts them down in order.
//!
//! Shutdown (Ctrl-C / SIGTERM, or [`NodeHandle::shutdown`]): the RPC servers stop accepting, the
//! miner stops, the engine task finishes the message in hand (a block being committed is
//! committed whole: each commit is one RocksDB write batch), flushes the store and exits.

use crate::{gossip, metrics, NodeArgs, NodeError, SyncMode};
use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{address, Address};
use alloy_rlp::Decodable;
use gigagas_chain_state::BlockchainProvider;
use gigagas_engine::{
    local::{LocalMiner, MinerConfig},
    BlockTree, EngineHandle, EngineService, TreeConfig,
};
use gigagas_net::request_handler::EthRequestHandler;
use gigagas_payload::PayloadStore;
use gigagas_rpc::ServerHandle;
use gigagas_rpc::{
    auth::JwtSecret, auth_module, public_module, serve_http_auth, serve_http_on, serve_ws_on,
    ws_module, RpcContext,
};
use gigagas_storage::{FullProvider, FullReader, Storage};
use gigagas_tasks::{TaskExecutor, TaskManager};
use gigagas_txpool::TxPool;
use gigagas_validation::init_genesis;
use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

/// How long the tasks that wind down on the graceful shutdown signal are waited for.
const GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Fee recipient of the dev chain's blocks.
const DEV_FEE_RECIPIENT: Address = address!("0x000000000000000000000000000000000000dEaD");

/// A running node. Dropping it without [`NodeHandle::shutdown`] leaves the engine thread to
/// stop when the process exits.
#[derive(Debug)]
pub struct NodeHandle {
    /// The JSON-RPC server's bound address.
    pub http: SocketAddr,
    /// The WebSocket JSON-RPC server's bound address (`--ws`).
    pub ws: Option<SocketAddr>,
    /// The IPC socket's path, unless `--ipcdisable`.
    pub ipc: Option<PathBuf>,
    /// The Engine API server's bound address (JWT required).
    pub auth: SocketAddr,
    /// The JWT secret file the Engine API checks tokens against.
    pub jwt_path: PathBuf,
    /// The JWT secret.
    pub jwt: JwtSecret,
    /// The engine task.
    pub engine: EngineHandle,
    /// The libp2p network (block propagation between gigagas nodes), unless disabled.
    pub network: Option<gigagas_net::NetworkHandle>,
    /// The devp2p network (Ethereum's wire), unless `--disable-network`.
    pub devp2p: Option<gigagas_devp2p::Devp2pNetwork>,
    /// This node's enode URL (its devp2p identity and listening address).
    pub enode: Option<gigagas_net_peers::NodeRecord>,
    /// This node's discovery v5 ENR (`enr:-…`), when discv5 runs.
    pub discv5_enr: Option<String>,
    http_handle: ServerHandle,
    ws_handle: Option<ServerHandle>,
    ipc_handle: Option<gigagas_rpc::ipc::IpcServerHandle>,
    auth_handle: ServerHandle,
    rpc_runtime: RpcRuntime,
    tasks: TaskManager,
    engine_thread: Option<tokio::task::JoinHandle<Option<()>>>,
    miner: Option<tokio::task::JoinHandle<Option<Result<(), gigagas_engine::local::MinerError>>>>,
    /// The pool's maintenance task (it holds a reader of the store: stopped before the engine).
    pool_maintenance: Option<tokio::task::JoinHandle<Option<()>>>,
}

/// Opens (or initializes) `args.datadir` and starts everything on the current Tokio runtime.
///
/// # Errors
/// [`NodeError`] naming what could not be opened, read or bound.
pub async fn launch(args: &NodeArgs) -> Result<NodeHandle, NodeError> {
    // Rayon's global pool (the state root's storage tries, sender recovery, proofs) named, so
    // that an operator's `top -H` tells its threads apart; already built (a second node in
    // one process, tests) it stays as it is.
    let _ = rayon::ThreadPoolBuilder::new().thread_name(|i| format!("rayon-{i}")).build_global();
    std::fs::create_dir_all(&args.datadir)
        .map_err(|source| NodeError::Datadir { path: args.datadir.clone(), source })?;
    let store = Arc::new(Storage::open(&args.datadir)?);
    let storage: Arc<dyn FullProvider> = store.clone();
    if storage.best_block()?.is_none() {
        init_genesis(&*storage, &args.chain().genesis_json()?)?;
    }
    // The named chain the datadir holds: the one `--chain` names (checked), else the one
    // whose genesis it is, if any (its bootnodes are dialed).
    let stored = storage.header_by_number(0)?.ok_or(NodeError::NoHeadHeader(0))?.hash_slow();
    let named = match args.chain.as_ref().map(|c| c.named()) {
        Some(Some(chain)) => {
            if let Some(expected) = chain.genesis_hash().filter(|h| *h != stored) {
                return Err(NodeError::OtherChain { chain, expected, stored });
            }
            Some(chain)
        }
        Some(None) => None,
        None => gigagas_chainspec::NamedChain::ALL
            .into_iter()
            .find(|c| c.genesis_hash() == Some(stored)),
    };
    let jwt_path = args.jwt_path();
    let jwt = JwtSecret::load_or_create(&jwt_path)?;
    let threads = args.threads();
    // Every long-running task below is critical: its panic shuts the node down, named.
    let tasks = TaskManager::current();
    let executor = tasks.executor();

    // The engine: the tree (one executor pool, built here once), its task, the pool it builds
    // payloads from, the store of built payloads.
    let config = TreeConfig::new(threads)
        .with_executor(args.engine.parallel, args.engine.scheduler)
        .with_prewarm(args.engine.prewarm, args.engine.optimistic)
        .with_state_root_beside(args.engine.state_root_beside)
        .with_preserved_trie(args.engine.preserve_trie)
        .with_trie_read_threads(args.engine.trie_read_threads)
        .with_stream_senders(args.engine.stream_senders)
        // The dev chain validates its own blocks like any other (it exercises the
        // executors); a node paired with a consensus client keeps what it built.
        .with_built_kept(!args.dev.dev)
        .with_io(args.engine.io, args.engine.io_depth)
        .with_trie_pruning(args.prune.trie());
    let tree = BlockTree::with_config(storage.clone(), config)?
        .with_background_persistence(args.engine.persistence_background, Some(&executor))
        .map_err(NodeError::EngineThread)?;
    // Every reader of the chain (the network's answers, sync, gossip, the pool's checks,
    // JSON-RPC) reads it as the engine publishes it: the canonical blocks not yet persisted
    // from memory, the rest from the store.
    let provider =
        BlockchainProvider::new(storage.clone(), tree.canonical_in_memory_state().clone());
    let chain: Arc<dyn FullReader> = Arc::new(provider.clone());
    let pool = Arc::new(TxPool::default());
    // Pool maintenance follows the canonical chain the engine publishes (reth's
    // `maintain_transaction_pool`): after each move of the head, what a reorg took out comes
    // back and what the head made stale leaves.
    let pool_maintenance = {
        let provider = provider.clone();
        let canonical = tree.canonical_in_memory_state().subscribe_to_canonical_state();
        let chain = PoolChainView { provider, spec: tree.chain().clone() };
        executor.spawn_critical(
            "pool-maintenance",
            gigagas_txpool::maintain_transaction_pool(pool.clone(), canonical, chain),
        )
    };
    // The KZG setup takes seconds of CPU to load; loaded now, the first blob transaction a
    // peer or a user sends is not kept waiting for it. At the lowest priority (nice 19): a
    // node starting a sync needs its cores for that first.
    if let Err(e) = std::thread::Builder::new().name("kzg-setup".into()).spawn(|| {
        let _ = gigagas_tasks::priority::lower_current_thread(19);
        gigagas_txpool::blobs::load_trusted_setup();
    }) {
        tracing::warn!(target: "node", error = %e, "KZG setup not loaded ahead: the first blob transaction loads it");
    }
    let payloads = Arc::new(PayloadStore::default());
    let on_event = args.metrics.map(|_| metrics::hook());
    let (engine, engine_thread) = EngineService::spawn(tree, pool.clone(), payloads, on_event)
        .map_err(NodeError::EngineThread)?;
    let engine_thread = executor.watch_critical_thread("engine", engine_thread);
    if let Some(addr) = args.metrics {
        let scheduler =
            if args.engine.parallel { args.engine.scheduler.name() } else { "sequential" };
        metrics::install(addr, engine.executor_threads(), scheduler)?;
    }

    // The peer-to-peer network (a task on this runtime).
    let genesis = storage.header_by_number(0)?.ok_or(NodeError::NoHeadHeader(0))?.hash_slow();
    let network = match args.network()? {
        Some(mut config) => {
            config.request_handler =
                Some(EthRequestHandler::new(chain.clone(), engine.chain().chain_id, genesis));
            config.tasks = Some(executor.clone());
            Some(gigagas_net::spawn(config).await?)
        }
        None => None,
    };
    // Sync from peers (one at a time, for the gossip importer and for SYNCING payloads).
    let syncer = network.as_ref().map(|n| {
        crate::sync::Syncer::new(engine.clone(), n.clone(), args.dev.follow, Some(chain.clone()))
    });
    // Blocks over the network: the proposer publishes, everyone imports what is gossiped.
    if let (Some(network), Some(syncer)) =
        (network.as_ref().filter(|n| n.protocol().is_some()), &syncer)
    {
        if args.gossip.signer_key.is_some() {
            executor.spawn_critical(
                "gossip-publish",
                gossip::publish_canonical(engine.clone(), chain.clone(), network.clone()),
            );
        }
        executor.spawn_critical(
            "gossip-import",
            gossip::import_gossiped(
                engine.clone(),
                network.clone(),
                syncer.clone(),
                args.dev.follow,
            ),
        );
    }
    // devp2p, Ethereum's wire: a listener, sessions answering peers from the store, the
    // trusted peers kept connected, the bootnodes dialed, and sync from the peers (to
    // `--debug.tip`, and for SYNCING payloads in place of the libp2p network's when trusted
    // peers or a tip are given or libp2p is off).
    let devp2p_syncs = !args.network.disable_network
        && (!args.network.trusted_peers.is_empty()
            || network.is_none()
            || args.sync.debug_tip.is_some());
    let mut discv5_enr = None;
    let mut sync_status = None;
    let devp2p = if args.network.disable_network {
        None
    } else {
        let secret = crate::devp2p::load_or_create_key(&args.datadir.join("nodekey"))?;
        let head = engine.forkchoice().head;
        let mut local = crate::devp2p::local_node(&*chain, engine.chain(), head, secret.clone())?;
        local.external_ip = args.network.nat.external_ip();
        let node_pool = crate::devp2p::NodePool {
            pool: pool.clone(),
            storage: chain.clone(),
            engine: engine.clone(),
        };
        let bootnodes = args.bootnodes(named);
        let discovery_on = !args.network.disable_discovery
            && (!args.network.disable_discv4 || args.network.enable_discv5);
        crate::devp2p::log_bootnodes(&bootnodes, discovery_on);
        let devp2p = gigagas_devp2p::NetworkConfig::new(local)
            .with_server(gigagas_net_p2p::ChainServer::new(chain.clone()))
            .with_snap_server(
                // Storage ranges from the flat state where the BALs above the asked root
                // allow it, the trie elsewhere.
                gigagas_net_p2p::SnapServer::new(chain.clone()).with_flat_state(store.clone()),
            )
            .with_pool(Arc::new(node_pool))
            .with_max_peers(args.network.max_peers as usize)
            .with_static_peers(args.network.trusted_peers.iter().copied())
            .with_bootnodes(bootnodes.iter().map(|b| b.record))
            .with_executor(executor.clone())
            .start();
        devp2p
            .listen(SocketAddr::new(args.network.addr, args.network.port))
            .await
            .map_err(|source| NodeError::Devp2pListen { port: args.network.port, source })?;
        let discovery = start_discovery(args, &devp2p, &bootnodes, secret, &executor).await?;
        discv5_enr = discovery.v5.as_ref().map(|v5| v5.enr().to_base64());
        let enode = devp2p.enode().expect("known once listening");
        tracing::info!(target: "net::devp2p", %enode, trusted = args.network.trusted_peers.len(), "devp2p listening");
        executor.spawn_critical(
            "devp2p-announce",
            crate::devp2p::announce_pool(devp2p.clone(), pool.clone()),
        );
        executor.spawn_critical(
            "devp2p-head",
            crate::devp2p::follow_head(devp2p.clone(), engine.clone(), chain.clone(), discovery),
        );
        if devp2p_syncs {
            let syncer =
                crate::sync::Syncer::new(engine.clone(), devp2p.clone(), true, Some(chain.clone()));
            // Snap sync first when asked and the node has no chain yet (or one is recorded):
            // the full sync below starts from the pivot it leaves as the head.
            let snap = (args.sync.syncmode == SyncMode::Snap && crate::snap::wanted(&store)?)
                .then(|| Arc::new(crate::snap::SnapStatus::new(engine.clone(), store.clone())));
            if let Some(status) = &snap {
                sync_status =
                    Some(status.clone() as Arc<dyn gigagas_rpc::syncing::SyncStatusSource>);
            }
            let (engine, devp2p, store, tip, catch_up) = (
                engine.clone(),
                devp2p.clone(),
                store.clone(),
                args.sync.debug_tip,
                args.sync.snap_catch_up,
            );
            let snap_config = gigagas_net_p2p::snap_sync::SnapSyncConfig {
                requests_per_peer: args.sync.snap_requests_per_peer.max(1),
                response_bytes: args.sync.snap_response_bytes,
                ..Default::default()
            };
            executor.spawn_critical("devp2p-sync", async move {
                if let Some(status) = snap {
                    match crate::snap::snap_sync(devp2p, engine.clone(), store, tip, status, snap_config, catch_up)
                        .await {
                        Ok(_) => {}
                        Err(e) => {
                            tracing::error!(target: "sync::snap", error = %e, "snap sync failed");
                            return;
                        }
                    }
                }
                let to_tip = async {
                    if let Some(tip) = tip {
                        if let Err(e) =
                            crate::devp2p::sync_to_tip(syncer.clone(), engine.clone(), tip).await
                        {
                            tracing::error!(target: "net::devp2p", %tip, error = %e, "sync to the tip failed");
                        }
                    }
                };
                tokio::join!(crate::sync::sync_on_syncing(engine.clone(), syncer.clone()), to_tip);
            });
        }
        Some((devp2p, enode))
    };
    // A payload with an unknown parent (SYNCING) starts a sync from peers.
    if let Some(syncer) = syncer.as_ref().filter(|_| !devp2p_syncs) {
        executor.spawn_critical(
            "sync-on-syncing",
            crate::sync::sync_on_syncing(engine.clone(), syncer.clone()),
        );
        // A follower catches up with its peers' heads by itself (started next to a devnet
        // that makes no new block, say); a node paired with a consensus client waits for it.
        if args.dev.follow {
            executor
                .spawn_critical("sync-catch-up", crate::sync::catch_up(syncer.clone(), genesis));
        }
    }

    // The RPC servers: handlers over the store, the engine's handle, the pool and the network.
    let mut ctx = RpcContext::new(provider, engine.clone(), pool)
        .with_gas_cap(args.rpc.gas_cap)
        .with_log_limits(args.rpc.max_blocks_per_filter, args.rpc.max_logs_per_response)
        .with_cache(args.rpc.cache_max_blocks, args.rpc.cache_max_receipts)
        .with_tx_fee_cap(alloy_primitives::U256::from(
            (args.rpc.tx_fee_cap.max(0.0) * 1e18).round() as u128,
        ))
        .with_evm_timeout(Some(args.rpc.evm_timeout).filter(|t| !t.is_zero()))
        .with_filters(args.filter_config())
        .with_gas_oracle(args.gas_oracle_config());
    if let Some((devp2p, _)) = &devp2p {
        ctx = ctx.with_network(Arc::new(devp2p.clone()));
    }
    if let Some(network) = &network {
        ctx = ctx.with_network(Arc::new(network.clone()));
    }
    ctx.sync_status = sync_status;
    let ctx = Arc::new(ctx);
    let http_addr = SocketAddr::new(args.rpc.http_addr, args.rpc.http_port);
    let auth_addr = SocketAddr::new(args.rpc.auth_addr, args.rpc.auth_port);
    // The public JSON-RPC on a runtime of its own at a lower priority (`--rpc.nice`): its
    // handlers never hold a thread the Engine API, the network or the engine need.
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let rpc_runtime = RpcRuntime(Some(
        gigagas_tasks::priority::lower_runtime(
            "rpc",
            args.rpc.rpc_threads.unwrap_or(cores),
            args.rpc.max_blocking,
            args.rpc.nice,
            args.rpc.sched_idle,
        )
        .map_err(NodeError::RpcRuntime)?,
    ));
    let (http, http_handle) = serve_http_on(
        rpc_runtime.handle(),
        http_addr,
        public_module(ctx.clone(), &args.rpc.http_api),
        args.http_limits(),
        args.http_access(),
    )
    .await?;
    let (ws, ws_handle) = if args.rpc.ws {
        let (ws, handle) = serve_ws_on(
            rpc_runtime.handle(),
            SocketAddr::new(args.rpc.ws_addr, args.rpc.ws_port),
            ws_module(ctx.clone(), &args.rpc.ws_api),
            args.http_limits(),
            args.ws_config(),
        )
        .await?;
        (Some(ws), Some(handle))
    } else {
        (None, None)
    };
    let ipc_handle = match args.ipc_path() {
        Some(path) => {
            let served = gigagas_rpc::ipc::serve_ipc_on(
                rpc_runtime.handle(),
                path,
                ws_module(ctx.clone(), &gigagas_rpc::RpcModuleSelection::ipc()),
                args.http_limits(),
                args.ws_config(),
            )
            .await;
            match served {
                Ok(handle) => Some(handle),
                // Asked for by name: the operator's to fix. The default path (under a long
                // datadir, past a Unix socket's 107 bytes, say): said, and the node serves on.
                Err(e) if args.rpc.ipc_path.is_some() => return Err(e.into()),
                Err(e) => {
                    tracing::warn!(target: "node", error = %e, "no IPC socket (--ipcpath to place it elsewhere, --ipcdisable to silence this)");
                    None
                }
            }
        }
        None => None,
    };
    let ipc = ipc_handle.as_ref().map(|h| h.path().to_path_buf());
    let (auth, auth_handle) = serve_http_auth(auth_addr, auth_module(ctx), jwt.clone()).await?;

    let miner = if args.dev.dev {
        let head = engine.forkchoice().head;
        let header = storage.header_by_number(head.0)?.ok_or(NodeError::NoHeadHeader(head.0))?;
        let config = MinerConfig {
            block_time: Duration::from_secs_f64(args.dev.block_time.max(0.05)),
            fee_recipient: DEV_FEE_RECIPIENT,
            safe_lag: 2,
            finalized_lag: 4,
        };
        let replay = args.dev.replay.as_deref().map(read_chain_file).transpose()?;
        let miner = LocalMiner::new(engine.clone(), config, header.timestamp);
        // A devnet's proposer may wait for its peers, so that no block is made before anyone
        // can receive it (`--dev.min-peers`).
        let wait_for = network.clone().filter(|_| args.dev.min_peers > 0);
        let min_peers = args.dev.min_peers;
        Some(executor.spawn_critical("dev-miner", async move {
            if let Some(network) = wait_for {
                let _ = network.wait_for_peers(min_peers).await;
            }
            match replay {
                Some(blocks) => miner.replay(blocks).await,
                None => miner.run().await,
            }
        }))
    } else {
        None
    };
    let (devp2p, enode) = devp2p.map_or((None, None), |(n, e)| (Some(n), Some(e)));
    Ok(NodeHandle {
        http,
        ws,
        ipc,
        auth,
        jwt_path,
        jwt,
        engine,
        network,
        devp2p,
        enode,
        discv5_enr,
        http_handle,
        ws_handle,
        ipc_handle,
        auth_handle,
        rpc_runtime,
        tasks,
        engine_thread: Some(engine_thread),
        miner,
        pool_maintenance: Some(pool_maintenance),
    })
}

impl NodeHandle {
    /// Spawns tasks on the node's runtime under its supervision: one spawned as critical that
    /// panics shuts the node down ([`NodeHandle::run_until_shutdown`] returns
    /// [`NodeError::CriticalTask`] naming it).
    pub fn task_executor(&self) -> TaskExecutor {
        self.tasks.executor()
    }

    /// Serves until Ctrl-C / SIGTERM, until a critical task panics or until the dev miner
    /// fails, then shuts down.
    ///
    /// # Errors
    /// [`NodeError::CriticalTask`] naming the task that panicked, [`NodeError::Miner`] when
    /// the dev miner stopped on an error (each after shutting down), or what
    /// [`NodeHandle::shutdown`] reports.
    pub async fn run_until_shutdown(mut self) -> Result<(), NodeError> {
        let miner = self.miner.take();
        let miner_done = async move {
            match miner {
                Some(miner) => miner.await,
                None => std::future::pending().await,
            }
        };
        let result = tokio::select! {
            signal = shutdown_signal() => signal,
            panic = self.tasks.wait_for_panic() => Err(panic.into()),
            done = miner_done => match done {
                Ok(Some(Ok(()))) => Err(NodeError::MinerStopped),
                Ok(Some(Err(e))) => Err(NodeError::Miner(e)),
                // It panicked: the manager has the report.
                Ok(None) => Err(self.tasks.wait_for_panic().await.into()),
                Err(e) => Err(NodeError::MinerTask(e)),
            },
        };
        if let Err(e) = &result {
            tracing::error!(target: "node", error = %e, "stopping");
        }
        let shutdown = self.shutdown().await;
        result.and(shutdown)
    }

    /// Stops accepting RPC requests, stops the miner, fires the graceful shutdown signal
    /// (the devp2p network says goodbye to its peers) and waits for those tasks, lets the
    /// engine finish the message in hand, flush the store and exit, and waits for its thread.
    ///
    /// # Errors
    /// [`NodeError::Engine`] when the flush fails.
    pub async fn shutdown(mut self) -> Result<(), NodeError> {
        tracing::info!(target: "node", "shutting down");
        let _ = self.http_handle.stop();
        if let Some(ws) = &self.ws_handle {
            let _ = ws.stop();
        }
        if let Some(ipc) = self.ipc_handle.take() {
            ipc.stop().await;
        }
        let _ = self.auth_handle.stop();
        self.rpc_runtime.shut_down();
        if let Some(miner) = self.miner.take() {
            miner.abort();
        }
        if let Some(maintenance) = self.pool_maintenance.take() {
            maintenance.abort();
            let _ = maintenance.await;
        }
        if let Some(network) = &self.network {
            let _ = network.shutdown().await;
        }
        // The tasks that wind down on the signal (the devp2p network tells its peers
        // `ClientQuitting`).
        if !self.tasks.graceful_shutdown_with_timeout(GRACEFUL_SHUTDOWN_TIMEOUT).await {
            tracing::warn!(target: "node", timeout = ?GRACEFUL_SHUTDOWN_TIMEOUT, "tasks still winding down at the timeout");
        }
        let flushed = self.engine.shutdown().await;
        if let Some(thread) = self.engine_thread.take() {
            let _ = thread.await;
        }
        flushed.map_err(NodeError::Engine)
    }
}

/// The public JSON-RPC's runtime (its threads at `--rpc.nice`); shut down without waiting
/// for its blocking work when the node stops or the handle is dropped (a runtime may not be
/// dropped in place inside another one).
#[derive(Debug)]
struct RpcRuntime(Option<tokio::runtime::Runtime>);

impl RpcRuntime {
    fn handle(&self) -> &tokio::runtime::Handle {
        self.0.as_ref().expect("running until shut down").handle()
    }

    fn shut_down(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for RpcRuntime {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM (what `docker stop` and systemd send).
/// Node discovery beside the devp2p listener: v4 on UDP (unless `--disable-discovery` or
/// `--disable-discv4-discovery`; bootnodes with a UDP port are its start, the nodes it proves
/// are dialed) and v5 with `--enable-discv5-discovery` (the ENR bootnodes are its start, the
/// nodes it meets on this chain's fork are dialed). Both ENRs carry the `eth` fork-id entry.
/// The network shows v4's ENR and port (v5's when v4 is off).
///
/// # Errors
/// [`NodeError::DiscoveryBind`] / [`NodeError::Discv5`] when a port given cannot be bound.
async fn start_discovery(
    args: &NodeArgs,
    devp2p: &gigagas_devp2p::Devp2pNetwork,
    bootnodes: &[gigagas_net_peers::BootNode],
    secret: gigagas_net_ecies::SecretKey,
    executor: &gigagas_tasks::TaskExecutor,
) -> Result<crate::devp2p::Discovery, NodeError> {
    let mut discovery = crate::devp2p::Discovery::default();
    if args.network.disable_discovery {
        return Ok(discovery);
    }
    let tcp = devp2p.enode().expect("known once listening");
    let key = gigagas_net_peers::enr::k256::ecdsa::SigningKey::from(secret);
    if !args.network.disable_discv4 {
        let bootnodes: Vec<_> =
            bootnodes.iter().map(|b| b.record).filter(|r| r.udp_port != 0).collect();
        let udp =
            SocketAddr::new(args.network.addr, args.network.discovery_port.unwrap_or(tcp.tcp_port));
        tracing::info!(target: "net::discv4", bootnodes = bootnodes.len(), "discovery v4 starting");
        let config = gigagas_discv4::Discv4Config {
            bootnodes,
            tcp_port: tcp.tcp_port,
            ip: tcp.address,
            lookup_interval: gigagas_discv4::LOOKUP_INTERVAL,
            fork_id: Some(devp2p.fork_id()),
            executor: executor.clone(),
        };
        // The TCP port's number is taken on UDP: unless told a port, any will do.
        let spawned = match gigagas_discv4::Discv4::spawn(udp, key.clone(), config.clone()).await {
            Err(_) if args.network.discovery_port.is_none() => {
                gigagas_discv4::Discv4::spawn(
                    SocketAddr::new(args.network.addr, 0),
                    key.clone(),
                    config,
                )
                .await
            }
            other => other,
        };
        let (discv4, found) =
            spawned.map_err(|source| NodeError::DiscoveryBind { port: udp.port(), source })?;
        devp2p.set_discovery(discv4.local_addr().port(), discv4.enr()).await;
        tracing::info!(target: "net::discv4", addr = %discv4.local_addr(), "discovery v4 running");
        executor
            .spawn_critical("discv4-dial", crate::devp2p::dial_discovered(devp2p.clone(), found));
        discovery.v4 = Some(discv4);
    }
    if args.network.enable_discv5 {
        let bootnodes: Vec<_> = bootnodes.iter().filter_map(|b| b.enr.clone()).collect();
        let port =
            args.network.discovery_v5_port.unwrap_or(gigagas_discv5::DEFAULT_DISCOVERY_V5_PORT);
        tracing::info!(target: "net::discv5", bootnodes = bootnodes.len(), "discovery v5 starting");
        let config = gigagas_discv5::Discv5Config {
            bootnodes,
            tcp_port: tcp.tcp_port,
            ip: tcp.address,
            fork_id: Some(devp2p.fork_id()),
            lookup_interval: gigagas_discv5::LOOKUP_INTERVAL,
            executor: executor.clone(),
        };
        let addr = SocketAddr::new(args.network.addr, port);
        let spawned = match gigagas_discv5::Discv5::spawn(addr, key.clone(), config.clone()).await {
            Err(gigagas_discv5::Discv5Error::Bind { .. })
                if args.network.discovery_v5_port.is_none() =>
            {
                gigagas_discv5::Discv5::spawn(SocketAddr::new(args.network.addr, 0), key, config)
                    .await
            }
            other => other,
        };
        let (discv5, found) = spawned?;
        if discovery.v4.is_none() {
            if let Ok(enr) = discv5.enr().to_base64().parse() {
                devp2p.set_discovery(discv5.local_addr().port(), enr).await;
            }
        }
        tracing::info!(target: "net::discv5", addr = %discv5.local_addr(), enr = %discv5.enr().to_base64(), "discovery v5 running");
        executor.spawn_critical(
            "discv5-dial",
            crate::devp2p::dial_discovered_v5(devp2p.clone(), found),
        );
        discovery.v5 = Some(discv5);
    }
    Ok(discovery)
}

async fn shutdown_signal() -> Result<(), NodeError> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(NodeError::Signal)?;
    tokio::select! {
        signal = tokio::signal::ctrl_c() => signal.map_err(NodeError::Signal),
        _ = term.recv() => Ok(()),
    }
}

/// The blocks of an RLP chain file (back to back, geth's `export` format), for `--dev.replay`.
fn read_chain_file(path: &std::path::Path) -> Result<Vec<Block<TxEnvelope>>, NodeError> {
    let replay = |reason: String| NodeError::Replay { path: path.into(), reason };
    let bytes = std::fs::read(path).map_err(|e| replay(e.to_string()))?;
    let mut buf = bytes.as_slice();
    let mut blocks = Vec::new();
    while !buf.is_empty() {
        let block = Block::<TxEnvelope>::decode(&mut buf)
            .map_err(|e| replay(format!("block {} (index in the file): {e}", blocks.len())))?;
        blocks.push(block);
    }
    Ok(blocks)
}

/// The chain the engine publishes, as pool maintenance reads it.
struct PoolChainView {
    provider: BlockchainProvider,
    spec: gigagas_primitives::ChainSpec,
}

impl gigagas_txpool::PoolChain for PoolChainView {
    type Error = gigagas_storage::ProviderError;

    fn chain_spec(&self) -> &gigagas_primitives::ChainSpec {
        &self.spec
    }

    fn latest(&self) -> Result<Arc<dyn gigagas_state::StateSource>, Self::Error> {
        self.provider.latest()
    }

    fn head(&self) -> Result<(u64, alloy_primitives::B256), Self::Error> {
        Ok(self.provider.canonical_in_memory_state().canonical_chain().head())
    }

    fn canonical_hash(&self, number: u64) -> Result<Option<alloy_primitives::B256>, Self::Error> {
        gigagas_storage::BlockHashReader::block_hash(&self.provider, number)
    }

    fn canonical_block(
        &self,
        number: u64,
    ) -> Result<Option<gigagas_txpool::ChainBlock>, Self::Error> {
        use gigagas_storage::{BlockReader, HeaderProvider};
        let Some(header) = self.provider.header_by_number(number)? else { return Ok(None) };
        let Some(body) = self.provider.body_by_number(number)? else { return Ok(None) };
        Ok(Some(gigagas_txpool::ChainBlock {
            hash: header.hash_slow(),
            header,
            transactions: body.transactions,
        }))
    }
}
