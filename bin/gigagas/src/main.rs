//! `gigagas`: a BAL-aware parallel Ethereum execution client — the node.
//!
//! Subcommands: `node` (the node of `gigagas-node`: Engine API, JSON-RPC, metrics, `--dev`),
//! `init` and `import` (a RocksDB datadir from a genesis file and RLP blocks), `db` (read-only
//! inspection of a datadir). The lab tools (benchmarks, simulators, conformance runners,
//! hardware sizing) are the `gigagas-bench` binary.

mod db;
mod import;
mod node;

/// The global allocator: jemalloc with the `jemalloc` feature (`make maxperf`), mimalloc with
/// `mimalloc`, the system's otherwise.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// gigagas: Ethereum execution with EIP-7928 Block-Level Access Lists.
#[derive(Debug, Parser)]
#[command(name = "gigagas", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a node: the datadir's chain over JSON-RPC (`--http.addr/.port`, 8545) and the Engine
    /// API with JWT (`--authrpc.addr/.port/.jwtsecret`, 8551; `DATADIR/jwt.hex` generated when
    /// none is given). Initializes an empty datadir from `--chain GENESIS.json`.
    Node(Box<gigagas_node::NodeArgs>),
    /// Create a datadir (RocksDB) from a geth-format genesis file: state, trie nodes of the
    /// genesis state root, block 0.
    Init(import::InitArgs),
    /// Import RLP blocks into a datadir: header checks, execution over the stored state, state
    /// root from the stored trie nodes, one atomic commit per block; progress with blocks/s and
    /// Mgas/s. Exit code 1 when a block is invalid (those before it stay).
    Import(import::ImportArgs),
    /// Inspect a datadir: the head, or a canonical block's header, body, receipts or BAL, as
    /// JSON; copy it (checkpoint); compact it or prune its trie (the node stopped).
    Db(db::DbArgs),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // Warnings, and snap sync's progress line (a sync of hours says where it is).
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,sync::snap=info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Node(args) => node::run(*args),
        Command::Init(args) => import::init(args),
        Command::Import(args) => import::import(args),
        Command::Db(args) => db::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
