//! `gigagas net-sim`: block propagation over a simulated mesh, gossipsub vs RLNC
//! (crates/netsim); `--sweep` tables and `--plots DIR` PNG charts.

mod plots;

use crate::util::bar;
use clap::Args;
use gigagas_netsim::{simulate, Config, Protocol, Report};
use rayon::prelude::*;
use std::{path::PathBuf, process::ExitCode};

/// Arguments of `gigagas net-sim`.
#[derive(Debug, Args)]
pub(crate) struct NetSimArgs {
    /// Nodes in the network.
    #[arg(long, default_value_t = 10_000)]
    nodes: usize,
    /// `gossipsub`, `gossipsub-idontwant` or `rlnc`.
    #[arg(long, default_value = "rlnc", value_parser = ["gossipsub", "gossipsub-idontwant", "rlnc"])]
    protocol: String,
    /// Mesh degree D.
    #[arg(long, default_value_t = 40)]
    degree: usize,
    /// RLNC chunks N.
    #[arg(long, default_value_t = 10)]
    chunks: usize,
    /// RLNC chunks sent per peer (1 = one chunk per peer); with `--sweep` a list (`1,2,4`),
    /// each value a set of RLNC rows.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    per_peer: Vec<usize>,
    /// RLNC: a node that decoded tells its in-peers, who stop relaying and queueing chunks to
    /// it (the counterpart of gossipsub's IDONTWANT).
    #[arg(long)]
    decoded_notice: bool,
    /// Block size (KB of 1,024 bytes).
    #[arg(long, default_value_t = 118.75)]
    size_kb: f64,
    /// Per-hop latency (ms).
    #[arg(long, default_value_t = 70.0)]
    latency_ms: f64,
    /// Per-link bandwidth (MB/s).
    #[arg(long, default_value_t = 20.0)]
    bandwidth_mbs: f64,
    /// Per-node upload cap (Mbit/s) instead of per-link bandwidth.
    #[arg(long)]
    upload_mbit: Option<f64>,
    /// CPU per received message checked (ms).
    #[arg(long, default_value_t = 0.0)]
    verify_ms: f64,
    /// CPU to decode (ms).
    #[arg(long, default_value_t = 0.0)]
    decode_ms: f64,
    /// RNG seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Instead of one run: RLNC over N ∈ {4, 8, 10, 16, 32} × D ∈ {6, 8, 20, 40, 80} and
    /// gossipsub over the same D, at 1,000 and 10,000 nodes (the other flags apply); one table
    /// (or a JSON array of reports).
    #[arg(long)]
    sweep: bool,
    /// Instead of one run: simulate the charts' cases and write PNG charts into DIR
    /// (decode-time CDFs per link and under a 25 Mbit/s uplink; time to 99% and bytes per node
    /// over the N × D sweep at 10,000 nodes). Needs the DejaVu Sans font
    /// (Debian `fonts-dejavu-core`, installed by `make deps`).
    #[arg(long, value_name = "DIR")]
    plots: Option<PathBuf>,
}

fn config(args: &NetSimArgs, nodes: usize, degree: usize, protocol: Protocol) -> Config {
    Config {
        nodes,
        degree,
        size_bytes: (args.size_kb * 1024.0).round() as usize,
        latency_ms: args.latency_ms,
        bandwidth: args.bandwidth_mbs * 1e6,
        upload_cap: args.upload_mbit.map(|m| m * 1e6 / 8.0),
        verify_ms: args.verify_ms,
        decode_ms: args.decode_ms,
        protocol,
        seed: args.seed,
    }
}

/// Runs `configs` on all cores with a progress bar; reports in input order.
fn run_all(configs: Vec<Config>) -> Vec<Report> {
    let progress = bar(configs.len() as u64, "simulated");
    let reports = configs
        .into_par_iter()
        .map(|c| {
            let r = simulate(c);
            progress.inc(1);
            r
        })
        .collect();
    progress.finish_and_clear();
    reports
}

/// The sweep's configurations: per node count and D, gossipsub then RLNC for each
/// chunks-per-peer value and N.
fn sweep_configs(args: &NetSimArgs, node_counts: &[usize], per_peer: &[usize]) -> Vec<Config> {
    let mut configs = Vec::new();
    for &nodes in node_counts {
        for degree in [6, 8, 20, 40, 80] {
            configs.push(config(args, nodes, degree, Protocol::Gossipsub { idontwant: false }));
            for &k in per_peer {
                for chunks in [4, 8, 10, 16, 32] {
                    let p = Protocol::Rlnc {
                        chunks,
                        per_peer: k.max(1),
                        decoded_notice: args.decoded_notice,
                    };
                    configs.push(config(args, nodes, degree, p));
                }
            }
        }
    }
    configs
}

fn sweep(args: &NetSimArgs) -> Result<ExitCode, String> {
    let reports = run_all(sweep_configs(args, &[1_000, 10_000], &args.per_peer));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("| nodes | D | protocol | N | chunks/peer | decoded | hops | 99% (ms) | 100% (ms) | bytes/node (·B) | wasted (·B per node) |");
    println!("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &reports {
        let c = &r.config;
        let (name, n, k) = match c.protocol {
            Protocol::Gossipsub { .. } => ("gossipsub", "-".to_string(), "-".to_string()),
            Protocol::Rlnc { chunks, per_peer, decoded_notice } => {
                let name = if decoded_notice { "rlnc+notice" } else { "rlnc" };
                (name, chunks.to_string(), per_peer.to_string())
            }
        };
        let b = c.size_bytes as f64;
        let ms = |x: f64| if x.is_finite() { format!("{x:.0}") } else { "never".into() };
        println!(
            "| {} | {} | {name} | {n} | {k} | {} | {} | {} | {} | {:.2} | {:.2} |",
            c.nodes,
            c.degree,
            r.decoded,
            r.hops,
            ms(r.time_to_99_ms),
            ms(r.time_to_100_ms),
            r.bytes_per_node_mean / b,
            r.wasted_bytes as f64 / b / c.nodes as f64
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs one simulation (or the sweep) and prints its report.
pub(crate) fn run(args: NetSimArgs) -> Result<ExitCode, String> {
    if let Some(dir) = &args.plots {
        return plots::write(&args, dir);
    }
    if args.sweep {
        return sweep(&args);
    }
    let [per_peer] = args.per_peer[..] else {
        return Err("one --per-peer value for a single run (lists are for --sweep)".into());
    };
    if args.nodes < 2 || args.degree == 0 || args.degree >= args.nodes || args.chunks == 0 {
        return Err("need nodes ≥ 2, 0 < degree < nodes and chunks ≥ 1".into());
    }
    let protocol = match args.protocol.as_str() {
        "gossipsub" => Protocol::Gossipsub { idontwant: false },
        "gossipsub-idontwant" => Protocol::Gossipsub { idontwant: true },
        _ => Protocol::Rlnc {
            chunks: args.chunks,
            per_peer: per_peer.max(1),
            decoded_notice: args.decoded_notice,
        },
    };
    let size = (args.size_kb * 1024.0).round() as usize;
    let report = simulate(config(&args, args.nodes, args.degree, protocol));
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        let b = size as f64;
        println!(
            "{:?}, {} nodes, D={}: {} hops (99%: {}); decoded by 50/95/99/100%: {:.0} / {:.0} / {:.0} / {:.0} ms; \
             bytes per node {:.2}·B mean, {:.2}·B max, proposer {:.2}·B; messages useful {} useless {} unused {}; wasted {:.0}·B",
            report.config.protocol,
            args.nodes,
            args.degree,
            report.hops,
            report.hops_99,
            report.time_to_50_ms,
            report.time_to_95_ms,
            report.time_to_99_ms,
            report.time_to_100_ms,
            report.bytes_per_node_mean / b,
            report.bytes_per_node_max as f64 / b,
            report.bytes_proposer as f64 / b,
            report.useful,
            report.useless,
            report.unused,
            report.wasted_bytes as f64 / b
        );
    }
    Ok(if report.decoded == args.nodes { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
