//! `gigagas-bench`: gigagas's lab tool, in the manner of revm's `revme`. One module per
//! subcommand: `bench` (the executor on real mainnet blocks, in memory or over RocksDB with
//! each BAL-hinted I/O design), `worst-io` (random SLOADs over millions of slots),
//! `net-sim` (block propagation over a simulated network), `net-plot` (the chart of devnet
//! runs), `proofs-check` (the state-root stage
//! on mainnet blocks with proofs), `test-fixtures` (conformance suites through the pipeline) and
//! `test-rpc` (the execution-apis rpc-compat suite against a node), `gen-chain` (heavy workload
//! chains built by the node's payload builder), `replay` (such a chain into a running node over
//! the Engine API), `p2p` (a devp2p peer dialed and synced from, every block checked). The node
//! is `gigagas`.

use gigagas_bench::{state_access, state_growth};

mod bench;
mod bench_args;
mod bench_io;
mod bench_plot;
mod chart;
mod gen_chain;
mod hw;
mod net_plot;
mod net_sim;
mod p2p;
mod proofs_check;
mod replay;
mod report;
mod rpc_client;
mod rpc_load;
mod test_fixtures;
mod test_rpc;
mod util;
mod worst_io;
mod ws_subscribers;

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

/// gigagas-bench: measure and check gigagas's executor, state root, I/O and propagation.
#[derive(Debug, Parser)]
#[command(name = "gigagas-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Execute mainnet blocks sequentially and in parallel, validate every block, and report
    /// Mgas/s against plain sequential revm measured in the same run.
    Bench(bench_args::BenchArgs),
    /// Run Ethereum BlockchainTests fixtures (files or folders) through the pipeline: header
    /// checks, BAL built by the sequential executor, parallel execution driven by it, receipts
    /// root, logs bloom and state root. Exit code 1 if any case fails.
    TestFixtures(test_fixtures::TestFixturesArgs),
    /// Check the state-root stage on mainnet blocks with `eth_getProof` answers
    /// (../shared/data/mainnet-proofs): verify the parent's proofs, execute the block, apply its
    /// post-state diff to a sparse trie of the proof nodes, compare the root with the header's
    /// `stateRoot`. One line per block; exit code 1 on any mismatch.
    ProofsCheck(proofs_check::ProofsCheckArgs),
    /// Worst-case I/O: 16M-gas transactions of SLOADs at random keys over a RocksDB of millions
    /// of slots; blocks of 64M and 640M gas with batch and parallel BAL-hinted I/O, warm and
    /// cold; BAL size per design.
    WorstIo(worst_io::WorstIoArgs),
    /// Simulate block propagation (gossipsub, with or without IDONTWANT, vs RLNC) over a random
    /// mesh of thousands of nodes: hops, time until 50/95/99/100% decode, bytes per node, wasted
    /// chunks. Exit code 1 when some node never decodes.
    NetSim(net_sim::NetSimArgs),
    /// Chart multi-process devnet runs (`testing/devnet_net.py --json-out`): delivery p50 / p90
    /// / p99 per run and protocol, and p99 by block size; one PNG.
    NetPlot(net_plot::NetPlotArgs),
    /// Replay the execution-apis rpc-compat suite as hive does: import its chain into a
    /// temporary datadir, launch a node on it, set the head over the Engine API, compare every
    /// `.io` case's answer; per-method table (or `--json`). Exit code 1 when any case fails.
    TestRpc(test_rpc::TestRpcArgs),
    /// Generate a heavy workload chain through the node's payload builder: a genesis with
    /// mainnet WETH9 and USDT code, then blocks of a transaction mix (`mainnet`: ETH to fresh
    /// accounts, token transfers, deposits, slot writes; `hot`: one contract every transaction
    /// touches; `cold`: random reads of a large contract) at a gas per block, Osaka or
    /// Amsterdam (BAL) rules, deterministic from a seed. Writes genesis.json, chain.rlp
    /// (geth's export format) and info.json.
    GenChain(gen_chain::GenChainArgs),
    /// Replay a `gen-chain` folder into a running node over the authenticated Engine API
    /// (`newPayload` + `forkchoiceUpdated` per block, as reth-bench's `new-payload-fcu`):
    /// latency per block with its stages from the node's metrics, p50/p99/max, Mgas/s; CSV,
    /// JSON and a PNG with `--out`.
    Replay(replay::ReplayArgs),
    /// A node under JSON-RPC load while it validates: the replay of `replay` and, during it,
    /// clients offering requests at a fixed rate (open loop; full blocks only, or a mix of
    /// calls, state and block reads, receipts, logs, estimates and raw transactions); per
    /// method answers, p50/p99 and errors, the replay's Mgas/s and `newPayload` p50/p99, the
    /// node's CPU and memory (`--pid`).
    RpcLoad(rpc_load::RpcLoadArgs),
    /// Size hardware: measure this machine (execution on the mainnet blocks, parallel scaling,
    /// the node's stages on a generated chain — made first when missing —, disk and RocksDB
    /// reads at queue depth 1..64, memory) and answer, from a model of those measurements, the
    /// largest gas per block it validates within each budget (sequential, parallel, megablock)
    /// and, with `--target-gas`, the cores, single-core speed, IOPS and RAM a gas limit needs.
    Hw(Box<hw::HwArgs>),
    P2p(p2p::P2pArgs),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(args) => bench::run(args).map_err(|e| e.to_string()),
        Command::TestFixtures(args) => test_fixtures::run(args).map_err(|e| e.to_string()),
        Command::ProofsCheck(args) => proofs_check::run(args),
        Command::WorstIo(args) => worst_io::run(args),
        Command::NetSim(args) => net_sim::run(args),
        Command::GenChain(args) => gen_chain::run(args),
        Command::Hw(args) => hw::run(*args),
        Command::NetPlot(args) => net_plot::run(args),
        Command::TestRpc(args) => test_rpc::run(args),
        Command::Replay(args) => replay::run(args),
        Command::RpcLoad(args) => rpc_load::run(args),
        Command::P2p(args) => p2p::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
