//! `gigagas node`: the stored chain served over JSON-RPC (`--http.*`) and the Engine API
//! (`--authrpc.*`, JWT), with reth's flag names and default ports (8545, 8551).

use crate::{
    dev::{self, DevConfig},
    node_metrics,
};
use alloy_primitives::{address, Address};
use clap::Args;
use gigagas_rpc::{
    auth::JwtSecret, auth_module, public_module, serve_http, serve_http_auth, RpcContext,
};
use gigagas_stages::init_genesis;
use gigagas_storage::Storage;
use std::{
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    process::ExitCode,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

/// Fee recipient of the dev chain's blocks.
const DEV_FEE_RECIPIENT: Address = address!("0x000000000000000000000000000000000000dEaD");

/// Arguments of `gigagas node`.
#[derive(Debug, Args)]
pub(crate) struct NodeArgs {
    /// Data directory (RocksDB store and `jwt.hex`); created when absent.
    #[arg(long)]
    datadir: PathBuf,
    /// `mainnet` or a genesis JSON file; used to initialize an empty datadir.
    #[arg(long, default_value = "mainnet")]
    chain: String,
    /// Engine API listening address.
    #[arg(long = "authrpc.addr", default_value = "127.0.0.1")]
    auth_addr: IpAddr,
    /// Engine API port.
    #[arg(long = "authrpc.port", default_value_t = 8551)]
    auth_port: u16,
    /// JWT secret file (hex); `DATADIR/jwt.hex` (created when absent) by default.
    #[arg(long = "authrpc.jwtsecret")]
    jwt_secret: Option<PathBuf>,
    /// JSON-RPC listening address.
    #[arg(long = "http.addr", default_value = "127.0.0.1")]
    http_addr: IpAddr,
    /// JSON-RPC port.
    #[arg(long = "http.port", default_value_t = 8545)]
    http_port: u16,
    /// Run a dev chain: a consensus driver beside the node builds, executes and finalizes a
    /// block every `--dev.block-time`, talking to the node only over the Engine API (HTTP +
    /// JWT). An empty datadir starts from testing/dev-genesis.json unless `--chain` names a
    /// genesis file.
    #[arg(long)]
    dev: bool,
    /// Seconds per block of the dev chain.
    #[arg(long = "dev.block-time", default_value_t = 1.0)]
    dev_block_time: f64,
    /// Worker threads of the parallel executor (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Serve Prometheus metrics at `ADDR/metrics` (`--metrics` alone: 127.0.0.1:9001).
    #[arg(long, num_args = 0..=1, default_missing_value = "127.0.0.1:9001")]
    metrics: Option<SocketAddr>,
}

/// The dev chain's genesis (chain id 1337, every fork through Osaka at 0, Amsterdam's BALs
/// from 0, four funded accounts whose keys are the well-known Hardhat/Anvil dev keys).
pub(crate) const DEV_GENESIS: &str = include_str!("../../../testing/dev-genesis.json");

/// Opens (or initializes) the datadir, starts both servers, serves until Ctrl-C / SIGTERM.
pub(crate) fn run(args: NodeArgs) -> Result<ExitCode, String> {
    std::fs::create_dir_all(&args.datadir)
        .map_err(|e| format!("{}: {e}", args.datadir.display()))?;
    let storage = Arc::new(Storage::open(&args.datadir).map_err(|e| e.to_string())?);
    if storage.head().map_err(|e| e.to_string())?.is_none() {
        let genesis = match args.chain.as_str() {
            "mainnet" if args.dev => DEV_GENESIS.as_bytes().to_vec(),
            "dev" => DEV_GENESIS.as_bytes().to_vec(),
            "mainnet" => {
                return Err(
                    "the mainnet genesis state is not bundled: pass --chain GENESIS.json".into()
                )
            }
            path => std::fs::read(path).map_err(|e| format!("{path}: {e}"))?,
        };
        init_genesis(&storage, &genesis).map_err(|e| e.to_string())?;
    }
    let jwt_path = args.jwt_secret.clone().unwrap_or_else(|| args.datadir.join("jwt.hex"));
    let secret = JwtSecret::load_or_create(&jwt_path).map_err(|e| e.to_string())?;
    let threads =
        args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let mut ctx = RpcContext::new(storage, threads).map_err(|e| e.to_string())?;
    if args.metrics.is_some() {
        ctx.on_event = Some(node_metrics::hook());
    }
    let ctx = Arc::new(ctx);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async move {
        if let Some(addr) = args.metrics {
            node_metrics::install(addr, threads, "gas-limit")?;
        }
        let http_addr = SocketAddr::new(args.http_addr, args.http_port);
        let auth_addr = SocketAddr::new(args.auth_addr, args.auth_port);
        let (http, http_handle) =
            serve_http(http_addr, public_module(ctx.clone())).await.map_err(|e| e.to_string())?;
        let secret_for_dev = secret.clone();
        let (auth, auth_handle) = serve_http_auth(auth_addr, auth_module(ctx.clone()), secret)
            .await
            .map_err(|e| e.to_string())?;
        let head = ctx.forkchoice().head;
        let metrics = args.metrics.map_or_else(String::new, |a| format!("; metrics http://{a}/metrics"));
        eprintln!(
            "gigagas node: head {} {}; JSON-RPC http://{http}; Engine API http://{auth} (JWT secret {}); \
             parallel executor: one pool of {} workers, reused for every payload{metrics}",
            head.0,
            head.1,
            jwt_path.display(),
            ctx.tree.executor_threads()
        );
        let stop = Arc::new(AtomicBool::new(false));
        let driver = args.dev.then(|| {
            let config = DevConfig {
                auth,
                secret: secret_for_dev.clone(),
                chain: ctx.chain.clone(),
                block_time: Duration::from_secs_f64(args.dev_block_time.max(0.05)),
                fee_recipient: DEV_FEE_RECIPIENT,
                safe_lag: 2,
                finalized_lag: 4,
            };
            let stop = stop.clone();
            tokio::task::spawn_blocking(move || dev::run(config, stop))
        });
        let result = match driver {
            Some(driver) => tokio::select! {
                signal = shutdown_signal() => signal,
                done = driver => match done {
                    Ok(Ok(n)) => Err(format!("dev driver stopped after {n} blocks")),
                    Ok(Err(e)) => Err(format!("dev driver: {e}")),
                    Err(e) => Err(format!("dev driver: {e}")),
                },
            },
            None => shutdown_signal().await,
        };
        stop.store(true, Ordering::Relaxed);
        http_handle.stop().ok();
        auth_handle.stop().ok();
        result
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM (what `docker stop` and systemd send).
async fn shutdown_signal() -> Result<(), String> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("signal: {e}"))?;
    tokio::select! {
        signal = tokio::signal::ctrl_c() => signal.map_err(|e| format!("signal: {e}")),
        _ = term.recv() => Ok(()),
    }
}
