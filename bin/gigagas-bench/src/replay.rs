//! `gigagas-bench replay`: a chain replayed into a running node over the authenticated Engine
//! API, in the manner of reth-bench's `new-payload-fcu`.
//!
//! Flow: `chain.rlp` (and the Amsterdam variant's `bal.rlp`, each block's execution requests
//! from `info.json`) of a `gen-chain` folder → per block, the payload a consensus client would
//! send (`engine_newPayloadV5` with the BAL when the chain has one, else the newest version
//! the header's fields call for) over HTTP with a fresh JWT, timed, then
//! `engine_forkchoiceUpdatedV3` making it head, safe and finalized, timed → with `--metrics`,
//! the node's Prometheus text scraped after each block, the differences of its histograms'
//! sums giving the block's stages (sender recovery, BAL-hinted reads, execution, state root,
//! commit) and what is left of the node's own `newPayload` time (header and BAL checks, the
//! hand-off to the engine thread) and of the client's (JSON, HTTP: the waiting) →
//! `replay.csv` (one row per block), `replay.json` (the summary: p50/p99/max, Mgas/s, stage
//! totals, and the rows) and `replay.png` (latency per block) in `--out`.
//!
//! Any status but VALID stops the replay with an error naming the block.

use crate::{
    chart::{legend, plot_err, register_font},
    rpc_client::post_with,
};
use alloy_consensus::{Block, BlockHeader, TxEnvelope};
use alloy_eips::eip7685::Requests;
use alloy_primitives::{Bytes, B256};
use alloy_rlp::Decodable;
use alloy_rpc_types_engine::{
    ExecutionPayloadV1, ExecutionPayloadV2, ExecutionPayloadV3, ExecutionPayloadV4,
};
use gigagas_rpc::auth::JwtSecret;
use plotters::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::ExitCode,
    time::Instant,
};

/// `gigagas-bench replay` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// A `gen-chain` folder: `chain.rlp`, and `bal.rlp` (Amsterdam) and `info.json` when
    /// present.
    #[arg(long)]
    pub chain: PathBuf,
    /// The node's authenticated Engine API.
    #[arg(long, default_value = "http://127.0.0.1:8551")]
    pub engine: String,
    /// The JWT secret file (32 bytes, hex) the node was started with.
    #[arg(long = "jwt-secret")]
    pub jwt_secret: PathBuf,
    /// The node's Prometheus endpoint (`gigagas node --metrics ADDR`): the per-block stage
    /// breakdown comes from its histograms.
    #[arg(long)]
    pub metrics: Option<String>,
    /// First block to send: a node restarted mid-replay resumes at its head + 1.
    #[arg(long, default_value_t = 1)]
    pub from: u64,
    /// Last block to send (default: the chain's last).
    #[arg(long)]
    pub to: Option<u64>,
    /// Folder for `replay.csv`, `replay.json` and `replay.png` (default: not written).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The run's name, in the JSON and the chart's title.
    #[arg(long, default_value = "replay")]
    pub label: String,
    /// Print the summary as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Share of each block's transactions (0 to 1, spread evenly over the block) sent to the
    /// node's pool with `eth_sendRawTransaction` before its `newPayload`, untimed — as on a
    /// network, where most of a block's transactions reached the node's pool before the
    /// block: the node recovers their senders then, not during `newPayload`.
    #[arg(long, default_value_t = 0.0)]
    pub pool_share: f64,
    /// The node's public JSON-RPC endpoint, for `--pool-share`.
    #[arg(long, default_value = "http://127.0.0.1:8545")]
    pub pool_rpc: String,
}

/// One block of the replay (seconds; stage times from the node's metrics, `None` without
/// `--metrics`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BlockRow {
    number: u64,
    gas_used: u64,
    transactions: usize,
    /// `engine_newPayload`, request sent to answer read (the client's view).
    new_payload: f64,
    /// `engine_forkchoiceUpdated` making the block head (its commit to RocksDB inside).
    forkchoice: f64,
    /// The node's own `newPayload` time (its histogram).
    node_new_payload: Option<f64>,
    recovery: Option<f64>,
    io: Option<f64>,
    execution: Option<f64>,
    /// The state root's share of `newPayload`: its whole time, or with a BAL what execution
    /// waited for the root computed beside it.
    state_root: Option<f64>,
    /// The state root's own time when computed from the BAL beside execution (not on the
    /// critical path; zero otherwise).
    state_root_beside: Option<f64>,
    /// Persisting the block (during the forkchoice update).
    commit: Option<f64>,
    /// The node's `newPayload` less its stages: header, BAL and root checks, the engine
    /// thread's queue.
    checks: Option<f64>,
    /// The client's `newPayload` less the node's: JSON encoding and decoding, HTTP.
    waiting: Option<f64>,
    /// Transactions sent to the pool before the block (`--pool-share`), and those it took.
    announced: usize,
    pooled: usize,
    /// Transactions whose sender the node took from its pool's recoveries (its
    /// `gigagas_engine_senders_known_total`).
    senders_known: Option<f64>,
}

/// Percentiles of one latency (seconds).
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Spread {
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
    pub(crate) mean: f64,
}

/// Nearest-rank percentiles of `xs`.
pub(crate) fn spread(xs: &[f64]) -> Spread {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        if v.is_empty() {
            return 0.0;
        }
        // Nearest rank.
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
        v[rank - 1]
    };
    let mean = if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    Spread { p50: at(0.5), p99: at(0.99), max: v.last().copied().unwrap_or(0.0), mean }
}

/// `replay.json`.
#[derive(Debug, Serialize)]
pub(crate) struct ReplayReport {
    label: String,
    chain: String,
    pub(crate) blocks: usize,
    transactions: usize,
    pub(crate) gas: u64,
    /// Sum of `newPayload` and `forkchoiceUpdated` latencies (seconds).
    pub(crate) seconds: f64,
    /// Gas over `seconds`, in millions.
    pub(crate) mgas_per_s: f64,
    pub(crate) new_payload: Spread,
    forkchoice: Spread,
    /// `newPayload` + `forkchoiceUpdated` per block.
    total: Spread,
    /// Sums over the run by stage (seconds; empty without `--metrics`).
    stages: BTreeMap<&'static str, f64>,
    /// State root time over the node's `newPayload` time, summed over the run.
    state_root_share: Option<f64>,
    /// `--pool-share`, the transactions sent to the pool before their blocks, those it took,
    /// and those whose sender the node took from its pool's recoveries (with `--metrics`).
    pool_share: f64,
    announced: usize,
    pooled: usize,
    senders_known: Option<f64>,
    rows: Vec<BlockRow>,
}

/// The Engine API's answer's `result`, or an error naming the call.
fn call(url: &str, secret: &JwtSecret, method: &str, params: Value) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let answer = post_with(url, &body.to_string(), Some(&secret.token()))?;
    if let Some(e) = answer.get("error") {
        return Err(format!("{method}: {e}"));
    }
    Ok(answer["result"].clone())
}

/// The Amsterdam chains' BALs beside `chain.rlp` (`gen-chain` writes them): one RLP list per
/// block, in order.
pub(crate) const BAL_FILE: &str = "bal.rlp";

/// The `engine_newPayloadVn` call for `block`: method and params.
pub(crate) fn new_payload(
    block: &Block<TxEnvelope>,
    hash: B256,
    bal: Option<&Bytes>,
    requests: &Requests,
) -> (&'static str, Value) {
    let h = &block.header;
    let hashes: Vec<B256> = block.body.blob_versioned_hashes_iter().copied().collect();
    let beacon = h.parent_beacon_block_root().unwrap_or_default();
    match (bal, h.requests_hash().is_some(), h.parent_beacon_block_root().is_some()) {
        (Some(bal), _, _) => {
            let p = ExecutionPayloadV4::from_block_unchecked_with_bal(hash, block, bal.clone());
            ("engine_newPayloadV5", json!([p, hashes, beacon, requests]))
        }
        (None, true, _) => {
            let p = ExecutionPayloadV3::from_block_unchecked(hash, block);
            ("engine_newPayloadV4", json!([p, hashes, beacon, requests]))
        }
        (None, false, true) => {
            let p = ExecutionPayloadV3::from_block_unchecked(hash, block);
            ("engine_newPayloadV3", json!([p, hashes, beacon]))
        }
        (None, false, false) if block.body.withdrawals.is_some() => {
            let p = ExecutionPayloadV2::from_block_unchecked(hash, block);
            ("engine_newPayloadV2", json!([p]))
        }
        _ => {
            ("engine_newPayloadV1", json!([ExecutionPayloadV1::from_block_unchecked(hash, block)]))
        }
    }
}

/// The node's histogram sums by name (`name{labels}` as written), from its Prometheus text.
fn scrape(url: &str) -> Result<BTreeMap<String, f64>, String> {
    let text = ureq::get(url)
        .call()
        .map_err(|e| format!("GET {url}: {e}"))?
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("GET {url}: {e}"))?;
    Ok(text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            (name.contains("_sum") || name == SENDERS_KNOWN)
                .then(|| Some((name.to_string(), value.parse().ok()?)))?
        })
        .collect())
}

/// The stages' metric names in the node's Prometheus text: recovery, io, execution, state
/// root, commit, state root beside execution.
const STAGES: [&str; 6] = [
    "gigagas_executor_stage_seconds_sum{stage=\"recovery\"}",
    "gigagas_executor_stage_seconds_sum{stage=\"io\"}",
    "gigagas_executor_stage_seconds_sum{stage=\"execution\"}",
    "gigagas_executor_stage_seconds_sum{stage=\"state_root\"}",
    "gigagas_executor_stage_seconds_sum{stage=\"commit\"}",
    "gigagas_executor_stage_seconds_sum{stage=\"state_root_beside\"}",
];
const NODE_NEW_PAYLOAD: &str = "gigagas_engine_new_payload_seconds_sum";
/// The node's count of payload transactions whose sender its pool had recovered.
const SENDERS_KNOWN: &str = "gigagas_engine_senders_known_total";

/// Sends the share `share` of `block`'s transactions (spread evenly: transaction `i` when
/// `⌊(i + 1)·share⌋ > ⌊i·share⌋`) to the pool at `rpc` with `eth_sendRawTransaction`, in
/// batches of up to 1,000 (the server's batch limit); returns how many were sent and how many
/// the pool took (the rest it answered with an error: a nonce gap, a full pool).
fn announce(rpc: &str, block: &Block<TxEnvelope>, share: f64) -> Result<(usize, usize), String> {
    use alloy_eips::eip2718::Encodable2718;
    let txs = &block.body.transactions;
    let picked: Vec<&TxEnvelope> = (0..txs.len())
        .filter(|&i| ((i + 1) as f64 * share).floor() > (i as f64 * share).floor())
        .map(|i| &txs[i])
        .collect();
    let mut pooled = 0;
    for batch in picked.chunks(1_000) {
        let calls: Vec<Value> = batch
            .iter()
            .enumerate()
            .map(|(id, tx)| {
                let raw = Bytes::from(tx.encoded_2718());
                json!({"jsonrpc": "2.0", "id": id, "method": "eth_sendRawTransaction", "params": [raw]})
            })
            .collect();
        let answers = post_with(rpc, &Value::Array(calls).to_string(), None)?;
        let answers = answers.as_array().ok_or_else(|| format!("not a batch answer: {answers}"))?;
        pooled += answers.iter().filter(|a| a.get("result").is_some()).count();
    }
    Ok((picked.len(), pooled))
}

/// What `replay` reads of `gen-chain`'s `info.json`: each block's execution requests.
#[derive(Debug, Deserialize)]
struct Info {
    blocks: Vec<InfoBlock>,
}

#[derive(Debug, Deserialize)]
struct InfoBlock {
    #[serde(default)]
    requests: Requests,
}

/// A chain's blocks, each with its BAL (Amsterdam) and execution requests.
pub(crate) type Loaded = Vec<(Block<TxEnvelope>, Option<Bytes>, Requests)>;

/// Reads the blocks, BALs and requests of the `gen-chain` folder `dir`.
pub(crate) fn load(dir: &Path) -> Result<Loaded, String> {
    let read = |name: &str| {
        std::fs::read(dir.join(name)).map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let rlp = read("chain.rlp")?;
    let mut buf = rlp.as_slice();
    let mut blocks = Vec::new();
    while !buf.is_empty() {
        let block = Block::<TxEnvelope>::decode(&mut buf)
            .map_err(|e| format!("chain.rlp: block {}: {e}", blocks.len() + 1))?;
        blocks.push(block);
    }
    let bals: Option<Vec<Bytes>> = if dir.join(BAL_FILE).is_file() {
        let raw = read(BAL_FILE)?;
        let mut buf = raw.as_slice();
        let mut out = Vec::new();
        while !buf.is_empty() {
            let before = buf;
            let header =
                alloy_rlp::Header::decode(&mut buf).map_err(|e| format!("{BAL_FILE}: {e}"))?;
            let len = before.len() - buf.len() + header.payload_length;
            if len > before.len() {
                return Err(format!("{BAL_FILE}: truncated at BAL {}", out.len() + 1));
            }
            out.push(Bytes::copy_from_slice(&before[..len]));
            buf = &before[len..];
        }
        if out.len() != blocks.len() {
            return Err(format!("{BAL_FILE}: {} BALs for {} blocks", out.len(), blocks.len()));
        }
        Some(out)
    } else {
        None
    };
    let requests: Vec<Requests> = if dir.join("info.json").is_file() {
        let info: Info =
            serde_json::from_slice(&read("info.json")?).map_err(|e| format!("info.json: {e}"))?;
        info.blocks.into_iter().map(|b| b.requests).collect()
    } else {
        Vec::new()
    };
    Ok(blocks
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            let bal = bals.as_ref().map(|v| v[i].clone());
            let req = requests.get(i).cloned().unwrap_or_default();
            (b, bal, req)
        })
        .collect())
}

/// Runs `replay`.
pub(crate) fn run(args: ReplayArgs) -> Result<ExitCode, String> {
    let report = replay(&args, |_| {})?;
    if let Some(out) = &args.out {
        write_outputs(out, &report)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `replay.csv`, `replay.json` and `replay.png` into `out`.
pub(crate) fn write_outputs(out: &Path, report: &ReplayReport) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    write_csv(&out.join("replay.csv"), &report.rows)?;
    let json = serde_json::to_vec_pretty(report).map_err(|e| e.to_string())?;
    std::fs::write(out.join("replay.json"), json).map_err(|e| format!("replay.json: {e}"))?;
    plot(&out.join("replay.png"), report)
}

/// Replays `args.chain` into the node, `on_head(number)` called after each block's
/// `forkchoiceUpdated` made it the head; the summary.
pub(crate) fn replay(
    args: &ReplayArgs,
    mut on_head: impl FnMut(u64),
) -> Result<ReplayReport, String> {
    let secret = std::fs::read_to_string(&args.jwt_secret)
        .map_err(|e| format!("{}: {e}", args.jwt_secret.display()))?;
    let secret = JwtSecret::from_hex(secret.trim()).map_err(|e| e.to_string())?;
    let chain = load(&args.chain)?;
    let last = args.to.unwrap_or(u64::MAX);
    let chain: Vec<_> = chain
        .into_iter()
        .filter(|(b, _, _)| b.header.number >= args.from && b.header.number <= last)
        .collect();
    if chain.is_empty() {
        return Err(format!("no block of {} in {}..={last}", args.chain.display(), args.from));
    }
    let bar = crate::util::bar(chain.len() as u64, "blocks");
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let mut before = args.metrics.as_deref().map(scrape).transpose()?;
    let mut rows = Vec::with_capacity(chain.len());
    for (block, bal, requests) in &chain {
        let number = block.header.number;
        let hash = block.header.hash_slow();
        if block.header.requests_hash.is_some_and(|h| h != requests.requests_hash()) {
            return Err(format!(
                "block {number}: its execution requests are not in info.json (the header commits to others)"
            ));
        }
        let (announced, pooled) = match args.pool_share > 0.0 {
            true => announce(&args.pool_rpc, block, args.pool_share)
                .map_err(|e| format!("block {number}: announcing to the pool: {e}"))?,
            false => (0, 0),
        };
        let (method, params) = new_payload(block, hash, bal.as_ref(), requests);
        let start = Instant::now();
        let status = call(&args.engine, &secret, method, params)
            .map_err(|e| format!("block {number}: {e}"))?;
        let new_payload = start.elapsed().as_secs_f64();
        if status["status"] != "VALID" {
            return Err(format!("block {number} {hash}: {method} answered {status}"));
        }
        let state =
            json!({"headBlockHash": hash, "safeBlockHash": hash, "finalizedBlockHash": hash});
        let start = Instant::now();
        let fcu = call(&args.engine, &secret, "engine_forkchoiceUpdatedV3", json!([state, null]))
            .map_err(|e| format!("block {number}: {e}"))?;
        let forkchoice = start.elapsed().as_secs_f64();
        if fcu["payloadStatus"]["status"] != "VALID" {
            return Err(format!("block {number} {hash}: forkchoiceUpdated answered {fcu}"));
        }
        let mut row = BlockRow {
            number,
            gas_used: block.header.gas_used,
            transactions: block.body.transactions.len(),
            new_payload,
            forkchoice,
            node_new_payload: None,
            recovery: None,
            io: None,
            execution: None,
            state_root: None,
            state_root_beside: None,
            commit: None,
            checks: None,
            waiting: None,
            announced,
            pooled,
            senders_known: None,
        };
        if let (Some(url), Some(prev)) = (args.metrics.as_deref(), before.as_ref()) {
            let now = scrape(url)?;
            let delta = |name: &str| {
                now.get(name).copied().unwrap_or(0.0) - prev.get(name).copied().unwrap_or(0.0)
            };
            let [recovery, io, execution, state_root, commit, beside] = STAGES.map(delta);
            let node = delta(NODE_NEW_PAYLOAD);
            row.node_new_payload = Some(node);
            row.recovery = Some(recovery);
            row.io = Some(io);
            row.execution = Some(execution);
            row.state_root = Some(state_root);
            row.state_root_beside = Some(beside);
            row.commit = Some(commit);
            row.checks = Some((node - recovery - io - execution - state_root).max(0.0));
            row.waiting = Some((new_payload - node).max(0.0));
            row.senders_known = Some(delta(SENDERS_KNOWN));
            before = Some(now);
        }
        rows.push(row);
        on_head(number);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(summarize(args, rows))
}

fn summarize(args: &ReplayArgs, rows: Vec<BlockRow>) -> ReplayReport {
    let col = |f: fn(&BlockRow) -> f64| rows.iter().map(f).collect::<Vec<_>>();
    let gas: u64 = rows.iter().map(|r| r.gas_used).sum();
    let seconds: f64 = rows.iter().map(|r| r.new_payload + r.forkchoice).sum();
    let mut stages = BTreeMap::new();
    if rows.first().is_some_and(|r| r.node_new_payload.is_some()) {
        let sum = |f: fn(&BlockRow) -> Option<f64>| rows.iter().filter_map(f).sum::<f64>();
        stages.insert("recovery", sum(|r| r.recovery));
        stages.insert("io", sum(|r| r.io));
        stages.insert("execution", sum(|r| r.execution));
        stages.insert("state_root", sum(|r| r.state_root));
        stages.insert("state_root_beside", sum(|r| r.state_root_beside));
        stages.insert("commit", sum(|r| r.commit));
        stages.insert("checks", sum(|r| r.checks));
        stages.insert("waiting", sum(|r| r.waiting));
        stages.insert("node_new_payload", sum(|r| r.node_new_payload));
    }
    let state_root_share =
        stages.get("node_new_payload").filter(|n| **n > 0.0).map(|n| stages["state_root"] / n);
    ReplayReport {
        label: args.label.clone(),
        chain: args.chain.display().to_string(),
        blocks: rows.len(),
        transactions: rows.iter().map(|r| r.transactions).sum(),
        gas,
        seconds,
        mgas_per_s: if seconds > 0.0 { gas as f64 / seconds / 1e6 } else { 0.0 },
        new_payload: spread(&col(|r| r.new_payload)),
        forkchoice: spread(&col(|r| r.forkchoice)),
        total: spread(&col(|r| r.new_payload + r.forkchoice)),
        stages,
        state_root_share,
        pool_share: args.pool_share,
        announced: rows.iter().map(|r| r.announced).sum(),
        pooled: rows.iter().map(|r| r.pooled).sum(),
        senders_known: rows
            .first()
            .and_then(|r| r.senders_known)
            .map(|_| rows.iter().filter_map(|r| r.senders_known).sum()),
        rows,
    }
}

fn write_csv(path: &Path, rows: &[BlockRow]) -> Result<(), String> {
    let opt = |v: Option<f64>| v.map(|v| format!("{:.6}", v)).unwrap_or_default();
    let mut out = String::from(
        "number,gas_used,transactions,new_payload_s,forkchoice_s,node_new_payload_s,recovery_s,io_s,execution_s,state_root_s,state_root_beside_s,commit_s,checks_s,waiting_s\n",
    );
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{:.6},{:.6},{},{},{},{},{},{},{},{},{}\n",
            r.number,
            r.gas_used,
            r.transactions,
            r.new_payload,
            r.forkchoice,
            opt(r.node_new_payload),
            opt(r.recovery),
            opt(r.io),
            opt(r.execution),
            opt(r.state_root),
            opt(r.state_root_beside),
            opt(r.commit),
            opt(r.checks),
            opt(r.waiting)
        ));
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

fn print_table(r: &ReplayReport) {
    let ms = |s: f64| s * 1e3;
    println!(
        "{}: {} blocks, {} transactions, {:.1} Mgas in {:.2} s: {:.1} Mgas/s",
        r.label,
        r.blocks,
        r.transactions,
        r.gas as f64 / 1e6,
        r.seconds,
        r.mgas_per_s
    );
    println!("{:<18} {:>10} {:>10} {:>10} {:>10}", "latency (ms)", "p50", "p99", "max", "mean");
    for (name, s) in
        [("newPayload", r.new_payload), ("forkchoiceUpdated", r.forkchoice), ("both", r.total)]
    {
        println!(
            "{name:<18} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
            ms(s.p50),
            ms(s.p99),
            ms(s.max),
            ms(s.mean)
        );
    }
    if !r.stages.is_empty() {
        let node = r.stages["node_new_payload"].max(f64::MIN_POSITIVE);
        println!("{:<18} {:>10} {:>10}", "stage (run)", "s", "% of node");
        for (name, s) in &r.stages {
            println!("{name:<18} {s:>10.3} {:>9.1}%", 100.0 * s / node);
        }
    }
}

/// One line of the chart: its label, colour and value per block (seconds).
type Series = (&'static str, RGBColor, fn(&BlockRow) -> Option<f64>);

/// Latency per block: newPayload and its execution and state root, and forkchoiceUpdated.
fn plot(path: &Path, r: &ReplayReport) -> Result<(), String> {
    register_font()?;
    let root = BitMapBackend::new(path, (1200, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let first = r.rows.first().map_or(0, |b| b.number);
    let last = r.rows.last().map_or(1, |b| b.number).max(first + 1);
    let top = r.rows.iter().map(|b| (b.new_payload + b.forkchoice) * 1e3).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: latency per block ({:.1} Mgas/s)", r.label, r.mgas_per_s),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(first..last, 0.0..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("block")
        .y_desc("ms")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(plot_err)?;
    let series: [Series; 5] = [
        ("newPayload + forkchoiceUpdated", BLACK, |b| Some(b.new_payload + b.forkchoice)),
        ("newPayload", BLUE, |b| Some(b.new_payload)),
        ("execution (with reads)", GREEN, |b| Some(b.execution? + b.io? + b.recovery?)),
        ("state root", RED, |b| b.state_root),
        ("commit (forkchoiceUpdated)", MAGENTA, |b| b.commit),
    ];
    for (name, color, f) in series {
        let points: Vec<(u64, f64)> =
            r.rows.iter().filter_map(|b| Some((b.number, f(b)? * 1e3))).collect();
        if points.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(plot_err)?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(plot_err)
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn nearest_rank_percentiles() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = spread(&xs);
        assert_eq!((s.p50, s.p99, s.max), (50.0, 99.0, 100.0));
        assert!((s.mean - 50.5).abs() < 1e-9);
        let one = spread(&[3.0]);
        assert_eq!((one.p50, one.p99, one.max), (3.0, 3.0, 3.0));
    }
}
