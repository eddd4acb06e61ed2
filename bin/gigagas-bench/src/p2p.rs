//! `gigagas-bench p2p`: one devp2p peer probed as a syncing node would use it (in the manner
//! of reth's `reth p2p` debugging commands): dial its enode with the chain of a genesis file
//! (RLPx, `Hello`, `Status` with the fork id), then download blocks 1.. through the block
//! downloader — every header linked to its parent, every body checked against its header's
//! roots, every BAL (eth/71) against its header's hash — and report what came and how fast.

use clap::Args;
use gigagas_devp2p::{LocalNode, NetworkConfig};
use gigagas_net_p2p::{BlockDownloader, DownloaderConfig};
use gigagas_net_peers::NodeRecord;
use std::{path::PathBuf, process::ExitCode, time::Instant};

/// Probe a devp2p peer: handshakes, then download and check blocks from it.
#[derive(Debug, Args)]
pub(crate) struct P2pArgs {
    /// The peer's enode URL (`admin_nodeInfo.enode` of geth).
    #[arg(long)]
    peer: NodeRecord,
    /// The chain's geth-format genesis file: network id (its chain id), genesis hash, fork id.
    #[arg(long)]
    chain: PathBuf,
    /// Blocks to download from block 1 (default: up to the peer's head).
    #[arg(long)]
    blocks: Option<u64>,
    /// Blocks per download round.
    #[arg(long, default_value_t = 128)]
    batch: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: P2pArgs) -> Result<ExitCode, String> {
    let genesis_json =
        std::fs::read(&args.chain).map_err(|e| format!("reading {}: {e}", args.chain.display()))?;
    let genesis = gigagas_validation::genesis_block(&genesis_json).map_err(|e| e.to_string())?;
    let (chain, header) = (&genesis.chain, &genesis.header);
    let local = LocalNode::at_head(
        gigagas_net_ecies::random_secret_key(),
        format!("gigagas/v{}", env!("CARGO_PKG_VERSION")),
        chain.chain_id,
        genesis.hash,
        (0, genesis.hash),
        chain.fork_filter(genesis.hash, header.timestamp, 0, header.timestamp),
    );
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let network = NetworkConfig::new(local).start();
        let started = Instant::now();
        let session = network.dial(args.peer).await.map_err(|e| e.to_string())?;
        let handshake_ms = started.elapsed().as_secs_f64() * 1e3;
        let target = args.blocks.unwrap_or(session.status.latest).min(session.status.latest);
        let downloader = BlockDownloader::new(network.clone(), DownloaderConfig::default());
        let progress = indicatif::ProgressBar::new(target);
        progress.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} blocks {per_sec} {msg}")
                .expect("a valid template"),
        );
        if args.json {
            progress.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let (mut next, mut parent) = (1u64, genesis.hash);
        let (mut transactions, mut gas, mut bals, mut blob_txs) = (0usize, 0u64, 0usize, 0usize);
        let download = Instant::now();
        while next <= target {
            let count = args.batch.min(target - next + 1);
            let (_, blocks) =
                downloader.download_range(next, parent, count).await.map_err(|e| e.to_string())?;
            for b in &blocks {
                transactions += b.block.body.transactions.len();
                blob_txs += b.block.body.transactions.iter().filter(|t| t.is_eip4844()).count();
                gas += b.block.header.gas_used;
                bals += usize::from(b.bal.is_some());
            }
            let last = blocks.last().expect("at least one block");
            parent = last.block.header.hash_slow();
            next = last.block.header.number + 1;
            progress.set_position(next - 1);
        }
        progress.finish_and_clear();
        let seconds = download.elapsed().as_secs_f64();
        let blocks = target;
        let report = serde_json::json!({
            "peer": args.peer.to_string(),
            "client": session.client_version,
            "eth_version": session.version.number(),
            "peer_head": session.status.latest,
            "peer_head_hash": session.status.latest_hash,
            "peer_fork_id": format!("{:?}", session.status.fork_id),
            "handshake_ms": handshake_ms,
            "blocks": blocks,
            "transactions": transactions,
            "blob_transactions": blob_txs,
            "gas": gas,
            "bals": bals,
            "head_hash": parent,
            "seconds": seconds,
            "blocks_per_second": blocks as f64 / seconds.max(1e-9),
            "mgas_per_second": gas as f64 / 1e6 / seconds.max(1e-9),
        });
        if args.json {
            println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
        } else {
            println!(
                "peer        {} ({}, eth/{})",
                args.peer,
                session.client_version,
                session.version.number()
            );
            println!("peer head   {} {}", session.status.latest, session.status.latest_hash);
            println!("handshake   {handshake_ms:.1} ms (RLPx, Hello, Status)");
            println!(
                "downloaded  {blocks} blocks, {transactions} transactions, {:.1} Mgas, {bals} BALs",
                gas as f64 / 1e6
            );
            println!(
                "            every header linked, every body and BAL checked against its header"
            );
            println!(
                "time        {seconds:.2} s: {:.0} blocks/s, {:.0} Mgas/s",
                blocks as f64 / seconds.max(1e-9),
                gas as f64 / 1e6 / seconds.max(1e-9)
            );
            println!("head        {}", parent);
        }
        Ok(ExitCode::SUCCESS)
    })
}
