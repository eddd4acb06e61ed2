//! `gigagas node`: the stored chain served over JSON-RPC (`--http.*`) and the Engine API
//! (`--authrpc.*`, JWT), with reth's flag names and default ports (8545, 8551).

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
    sync::Arc,
};

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
}

/// Opens (or initializes) the datadir, starts both servers, serves until Ctrl-C / SIGTERM.
pub(crate) fn run(args: NodeArgs) -> Result<ExitCode, String> {
    std::fs::create_dir_all(&args.datadir)
        .map_err(|e| format!("{}: {e}", args.datadir.display()))?;
    let storage = Arc::new(Storage::open(&args.datadir).map_err(|e| e.to_string())?);
    if storage.head().map_err(|e| e.to_string())?.is_none() {
        if args.chain == "mainnet" {
            return Err(
                "the mainnet genesis state is not bundled: pass --chain GENESIS.json".into()
            );
        }
        let genesis = std::fs::read(&args.chain).map_err(|e| format!("{}: {e}", args.chain))?;
        init_genesis(&storage, &genesis).map_err(|e| e.to_string())?;
    }
    let jwt_path = args.jwt_secret.clone().unwrap_or_else(|| args.datadir.join("jwt.hex"));
    let secret = JwtSecret::load_or_create(&jwt_path).map_err(|e| e.to_string())?;
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let ctx = Arc::new(RpcContext::new(storage, threads).map_err(|e| e.to_string())?);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async move {
        let http_addr = SocketAddr::new(args.http_addr, args.http_port);
        let auth_addr = SocketAddr::new(args.auth_addr, args.auth_port);
        let (http, http_handle) =
            serve_http(http_addr, public_module(ctx.clone())).await.map_err(|e| e.to_string())?;
        let (auth, auth_handle) = serve_http_auth(auth_addr, auth_module(ctx.clone()), secret)
            .await
            .map_err(|e| e.to_string())?;
        let head = ctx.forkchoice().head;
        eprintln!(
            "gigagas node: head {} {}; JSON-RPC http://{http}; Engine API http://{auth} (JWT secret {})",
            head.0,
            head.1,
            jwt_path.display()
        );
        tokio::signal::ctrl_c().await.map_err(|e| format!("signal: {e}"))?;
        http_handle.stop().ok();
        auth_handle.stop().ok();
        Ok::<_, String>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
