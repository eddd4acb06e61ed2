//! `gigagas-bench rpc-load`: a node validating a chain over its Engine API while JSON-RPC
//! clients read from it, both measured in one run — what an operator who serves RPC from the
//! validating node sees.
//!
//! Flow: a `gen-chain` folder (made with `--spare-senders`, whose funded keys no block uses) →
//! the replay ([`replay::replay`]: `newPayload` + `forkchoiceUpdated` per block, as a consensus
//! client sends them) on one thread, publishing each new head → a dispatcher offering requests
//! at `--rate` per second, open loop (the n-th request is due at n / rate seconds, whatever the
//! answers before it), each one of the mix's methods at the current head → `--connections`
//! client threads, each with its own keep-alive connection, taking the due requests in turn; a
//! request due while every connection is busy and the queue full is counted as `backlog` (the
//! offered load the node could not take) → per method: requests, answers, p50/p99 latency (from
//! the time the request was due, so queueing is counted), errors by kind (transport, HTTP
//! status, JSON-RPC code and message) → with `--pid`, the node's CPU time and resident memory
//! sampled over the window → the replay's Mgas/s and `newPayload` p50/p99 beside them. With
//! `--ws-subscribers N`, N WebSocket clients subscribed to new heads and logs read beside the
//! requests ([`crate::ws_subscribers`]). The load runs for as long as the replay does.
//!
//! Loopback only by intent: the rate and the window bound what is sent.

use crate::{
    gen_chain::{
        abi, mapping_slot, sign, spare_sender_key, word, Rng, CHAIN_ID, UNISWAP_ROUTER, USDT, WETH9,
    },
    replay::{self, spread, ReplayArgs},
    util::lower,
};
use alloy_consensus::{Transaction, TxEip1559};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use k256::ecdsa::SigningKey;
use serde::Serialize;
use serde_json::{json, Value};
use std::{
    collections::BTreeMap,
    process::ExitCode,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc, Arc, Mutex,
    },
    time::{Duration, Instant},
};

/// `gigagas-bench rpc-load` arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct RpcLoadArgs {
    /// The replay (the chain, the node's Engine API and JWT secret, `--json`, `--out`).
    #[command(flatten)]
    pub replay: ReplayArgs,
    /// The node's public JSON-RPC endpoint.
    #[arg(long, default_value = "http://127.0.0.1:8545")]
    pub rpc: String,
    /// Requests offered per second (open loop); 0: the replay alone.
    #[arg(long, default_value_t = 40.0)]
    pub rate: f64,
    /// Which requests.
    #[arg(long, value_enum, default_value_t = LoadMix::Mixed)]
    pub mix: LoadMix,
    /// Client connections (one thread each).
    #[arg(long, default_value_t = 128)]
    pub connections: usize,
    /// Seconds after which a request counts as timed out.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// The node's process id: its CPU time and resident memory are sampled over the window.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Seed of the addresses and transactions asked about.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Nice value of the load's client threads (the dispatcher and the connections; the
    /// replay, the consensus client's part, keeps its own): with the node on the same few
    /// cores, 19 leaves the node the CPU its remote clients would not take. 0: unchanged.
    #[arg(long, default_value_t = 0)]
    pub client_nice: i32,
    /// After the replay, with the node at rest, send N requests of each kind one after
    /// another on one connection and report each kind's mean answer time (its cost to the
    /// node, the client's share included); 0: no such probe.
    #[arg(long, default_value_t = 0)]
    pub cost: usize,
    /// The node's WebSocket endpoint (`ws://host:port`), for `--ws-subscribers`.
    #[arg(long)]
    pub ws: Option<String>,
    /// WebSocket clients subscribed to `newHeads` and to the USDT transfers to one address each,
    /// reading every notification for as long as the replay lasts (0: none).
    #[arg(long, default_value_t = 0)]
    pub ws_subscribers: usize,
}

/// What the clients ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LoadMix {
    /// `eth_getBlockByNumber("latest", true)` only.
    Blocks,
    /// The execution API's common reads and writes: `eth_call` (a USDT balance, a Uniswap V2
    /// quote), `eth_getBalance`, `eth_getStorageAt`, full blocks, receipts, `eth_getLogs` over
    /// 64 blocks, `eth_estimateGas` of a token transfer and `eth_sendRawTransaction`.
    Mixed,
}

/// One kind of request of the mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    CallBalance,
    CallQuote,
    Balance,
    Storage,
    BlockFull,
    Receipt,
    Logs,
    Estimate,
    SendRaw,
}

impl Kind {
    /// The name in the report: the method, and what it asks when a method has several.
    fn label(self) -> &'static str {
        match self {
            Self::CallBalance => "eth_call balanceOf",
            Self::CallQuote => "eth_call getAmountsOut",
            Self::Balance => "eth_getBalance",
            Self::Storage => "eth_getStorageAt",
            Self::BlockFull => "eth_getBlockByNumber full",
            Self::Receipt => "eth_getTransactionReceipt",
            Self::Logs => "eth_getLogs 64 blocks",
            Self::Estimate => "eth_estimateGas transfer",
            Self::SendRaw => "eth_sendRawTransaction",
        }
    }
}

/// The mixed load's shares, in percent.
const MIXED: [(Kind, u64); 9] = [
    (Kind::CallBalance, 15),
    (Kind::CallQuote, 10),
    (Kind::Balance, 15),
    (Kind::Storage, 10),
    (Kind::BlockFull, 10),
    (Kind::Receipt, 15),
    (Kind::Logs, 5),
    (Kind::Estimate, 10),
    (Kind::SendRaw, 10),
];

/// `balanceOf(address)`.
const BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];
/// `getAmountsOut(uint256,address[])`.
const GET_AMOUNTS_OUT: [u8; 4] = [0xd0, 0x6c, 0xa6, 0x1f];
/// `transfer(address,uint256)`.
const TRANSFER: [u8; 4] = [0xa9, 0x05, 0x9c, 0xbb];

/// What the requests are made from: the chain's transactions and addresses, the spare keys,
/// the head the replay reached.
struct Targets {
    head: AtomicU64,
    /// Transaction hashes by block number (index 0: genesis, none).
    tx_hashes: Vec<Vec<B256>>,
    /// Recipients of the chain's transactions (up to 10,000).
    addresses: Vec<Address>,
    /// Recipients of the chain's USDT transfers (up to 10,000): what the WebSocket subscribers
    /// watch.
    usdt_recipients: Vec<Address>,
    spare: Vec<(SigningKey, Address)>,
    next_raw: AtomicU64,
}

/// One request due.
struct Job {
    kind: Kind,
    body: String,
    due: Instant,
}

/// Answers of one method.
#[derive(Debug, Default)]
struct MethodStats {
    sent: u64,
    latencies: Vec<f64>,
    errors: BTreeMap<String, u64>,
}

/// One method's line of the report (latencies in milliseconds).
#[derive(Debug, Serialize)]
pub(crate) struct MethodReport {
    sent: u64,
    ok: u64,
    p50_ms: f64,
    p99_ms: f64,
    errors: BTreeMap<String, u64>,
}

/// The node's process over the window.
#[derive(Debug, Serialize)]
pub(crate) struct NodeUsage {
    /// CPU time over wall time (cores busy on average).
    cpu_cores: f64,
    /// Largest resident set sampled (MiB).
    rss_max_mib: f64,
    /// Resident set at the end (MiB).
    rss_end_mib: f64,
}

/// The replay's side of the run.
#[derive(Debug, Serialize)]
pub(crate) struct ReplaySide {
    blocks: usize,
    gas: u64,
    mgas_per_s: f64,
    new_payload_p50_ms: f64,
    new_payload_p99_ms: f64,
    new_payload_max_ms: f64,
}

/// `rpc-load.json`.
#[derive(Debug, Serialize)]
pub(crate) struct RpcLoadReport {
    label: String,
    /// Nice value of the client threads.
    client_nice: i32,
    mix: LoadMix,
    /// Requests offered per second.
    rate: f64,
    connections: usize,
    /// The window: the replay's wall time (seconds).
    seconds: f64,
    /// Requests due in the window.
    offered: u64,
    /// Requests not sent: every connection busy and the queue full.
    backlog: u64,
    /// Requests answered without an error.
    ok: u64,
    /// Answers without an error per second of the window.
    served_per_s: f64,
    /// Failed requests by kind, all methods.
    errors: BTreeMap<String, u64>,
    methods: BTreeMap<&'static str, MethodReport>,
    replay: ReplaySide,
    node: Option<NodeUsage>,
    /// `--cost`: each kind's mean answer time at rest (ms), one request at a time.
    cost_ms: Option<BTreeMap<&'static str, f64>>,
    /// `--ws-subscribers`: what the WebSocket subscribers saw.
    ws: Option<crate::ws_subscribers::WsReport>,
}

/// Runs `rpc-load`.
pub(crate) fn run(args: RpcLoadArgs) -> Result<ExitCode, String> {
    let targets = Arc::new(targets(&args)?);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::sync_channel::<Job>(args.connections * 2);
    let rx = Arc::new(Mutex::new(rx));
    let stats: Arc<Mutex<BTreeMap<Kind, MethodStats>>> = Arc::default();
    let timeout = Duration::from_secs_f64(args.timeout);
    let workers: Vec<_> = (0..if args.rate > 0.0 { args.connections } else { 0 })
        .map(|_| {
            let (rx, stats, url) = (rx.clone(), stats.clone(), args.rpc.clone());
            let nice = args.client_nice;
            std::thread::spawn(move || {
                lower(nice);
                worker(&url, &rx, &stats, timeout)
            })
        })
        .collect();
    let sampler = args.pid.map(|pid| {
        let stop = stop.clone();
        std::thread::spawn(move || sample(pid, &stop))
    });
    let subscribers = match (&args.ws, args.ws_subscribers) {
        (_, 0) => None,
        (None, _) => return Err("--ws-subscribers needs --ws URL".into()),
        (Some(url), n) => Some(crate::ws_subscribers::Subscribers::start(
            url,
            n,
            if targets.usdt_recipients.is_empty() {
                &targets.addresses
            } else {
                &targets.usdt_recipients
            },
            args.client_nice,
        )?),
    };
    let start = Instant::now();
    let dispatcher = (args.rate > 0.0).then(|| {
        let (targets, stop, mix, rate, seed) =
            (targets.clone(), stop.clone(), args.mix, args.rate, args.seed);
        let nice = args.client_nice;
        std::thread::spawn(move || {
            lower(nice);
            dispatch(&targets, &stop, tx, mix, rate, seed, start)
        })
    });
    let replayed = replay::replay(&args.replay, |n| targets.head.store(n, Ordering::Release));
    let seconds = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Release);
    let (offered, backlog) = dispatcher.map(|d| d.join().expect("dispatcher")).unwrap_or((0, 0));
    for w in workers {
        w.join().expect("worker");
    }
    let node = sampler.map(|s| s.join().expect("sampler")).transpose()?;
    let ws = subscribers.map(crate::ws_subscribers::Subscribers::finish);
    let replayed = replayed?;
    let cost_ms = (args.cost > 0).then(|| cost(&targets, &args.rpc, args.cost, args.seed, timeout));
    let stats = std::mem::take(&mut *stats.lock().expect("stats"));
    let mut errors = BTreeMap::new();
    let mut methods = BTreeMap::new();
    let mut ok = 0;
    for (kind, s) in stats {
        for (e, n) in &s.errors {
            *errors.entry(e.clone()).or_insert(0) += n;
        }
        let lat = spread(&s.latencies);
        ok += s.latencies.len() as u64;
        methods.insert(
            kind.label(),
            MethodReport {
                sent: s.sent,
                ok: s.latencies.len() as u64,
                p50_ms: lat.p50 * 1e3,
                p99_ms: lat.p99 * 1e3,
                errors: s.errors,
            },
        );
    }
    let report = RpcLoadReport {
        label: args.replay.label.clone(),
        client_nice: args.client_nice,
        mix: args.mix,
        rate: args.rate,
        connections: args.connections,
        seconds,
        offered,
        backlog,
        ok,
        served_per_s: ok as f64 / seconds,
        errors,
        methods,
        replay: ReplaySide {
            blocks: replayed.blocks,
            gas: replayed.gas,
            mgas_per_s: replayed.mgas_per_s,
            new_payload_p50_ms: replayed.new_payload.p50 * 1e3,
            new_payload_p99_ms: replayed.new_payload.p99 * 1e3,
            new_payload_max_ms: replayed.new_payload.max * 1e3,
        },
        node,
        cost_ms,
        ws,
    };
    if let Some(out) = &args.replay.out {
        replay::write_outputs(out, &replayed)?;
        let json = serde_json::to_vec_pretty(&report).map_err(|e| e.to_string())?;
        std::fs::write(out.join("rpc-load.json"), json)
            .map_err(|e| format!("rpc-load.json: {e}"))?;
    }
    if args.replay.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        print_table(&report);
    }
    Ok(ExitCode::SUCCESS)
}

/// The chain's transactions and recipients, and the spare senders' keys (`info.json`'s `seed`
/// and `spare_senders`).
fn targets(args: &RpcLoadArgs) -> Result<Targets, String> {
    let dir = &args.replay.chain;
    let info: Value = serde_json::from_slice(
        &std::fs::read(dir.join("info.json"))
            .map_err(|e| format!("{}: {e}", dir.join("info.json").display()))?,
    )
    .map_err(|e| format!("info.json: {e}"))?;
    let seed = info["seed"].as_u64().ok_or("info.json: no seed")?;
    let spare = info["spare_senders"].as_u64().unwrap_or(0);
    if spare == 0 && args.mix == LoadMix::Mixed && args.rate > 0.0 {
        return Err(format!(
            "{}: no spare senders to send transactions and estimates from (make the chain with `gen-chain --spare-senders N`)",
            dir.display()
        ));
    }
    let mut tx_hashes = vec![Vec::new()];
    let mut addresses = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut usdt_recipients = Vec::new();
    let mut usdt_seen = std::collections::HashSet::new();
    for (block, _, _) in replay::load(dir)? {
        let hashes = block.body.transactions.iter().map(|t| *t.tx_hash()).collect();
        for tx in &block.body.transactions {
            let input = tx.input();
            if tx.to() == Some(USDT.0) && input.len() >= 36 && input[..4] == TRANSFER {
                let to = Address::from_slice(&input[16..36]);
                if usdt_recipients.len() < 10_000 && usdt_seen.insert(to) {
                    usdt_recipients.push(to);
                }
            }
        }
        for to in block.body.transactions.iter().filter_map(|t| t.to()) {
            if addresses.len() < 10_000 && seen.insert(to) {
                addresses.push(to);
            }
        }
        tx_hashes.push(hashes);
    }
    let spare = (0..spare)
        .map(|i| {
            let key = spare_sender_key(seed, i);
            let address = Address::from_public_key(key.verifying_key());
            (key, address)
        })
        .collect::<Vec<_>>();
    addresses.extend(spare.iter().map(|(_, a)| *a));
    Ok(Targets {
        head: AtomicU64::new(0),
        tx_hashes,
        addresses,
        usdt_recipients,
        spare,
        next_raw: AtomicU64::new(0),
    })
}

/// Offers requests at `rate` per second until `stop`; (offered, not queued).
fn dispatch(
    targets: &Targets,
    stop: &AtomicBool,
    tx: mpsc::SyncSender<Job>,
    mix: LoadMix,
    rate: f64,
    seed: u64,
    start: Instant,
) -> (u64, u64) {
    let mut rng = Rng(seed);
    let (mut offered, mut backlog) = (0u64, 0u64);
    while !stop.load(Ordering::Acquire) {
        let due = start + Duration::from_secs_f64(offered as f64 / rate);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        offered += 1;
        let kind = match mix {
            LoadMix::Blocks => Kind::BlockFull,
            LoadMix::Mixed => {
                let mut pick = rng.below(100);
                MIXED
                    .iter()
                    .find(|(_, share)| {
                        let hit = pick < *share;
                        pick = pick.saturating_sub(*share);
                        hit
                    })
                    .map_or(Kind::Balance, |(k, _)| *k)
            }
        };
        let (kind, body) = request(targets, kind, &mut rng);
        if let Err(mpsc::TrySendError::Full(_)) = tx.try_send(Job { kind, body, due }) {
            backlog += 1;
        }
    }
    (offered, backlog)
}

/// The body of a `kind` request at the current head (a receipt or a quote before the first
/// block is a balance instead).
fn request(targets: &Targets, kind: Kind, rng: &mut Rng) -> (Kind, String) {
    let head = targets.head.load(Ordering::Acquire);
    // Before block 1 no transaction has a receipt and the pair (made by block 1) no quote.
    let kind = match kind {
        Kind::Receipt | Kind::CallQuote if head == 0 => Kind::Balance,
        kind => kind,
    };
    let address = targets.addresses[rng.below(targets.addresses.len() as u64) as usize];
    let (kind, method, params) = match kind {
        Kind::CallBalance => (
            kind,
            "eth_call",
            json!([{"to": USDT.0, "data": Bytes::from(abi(BALANCE_OF, &[word(address)]))}, "latest"]),
        ),
        Kind::CallQuote => {
            let data = abi(
                GET_AMOUNTS_OUT,
                &[
                    U256::from(10u64).pow(U256::from(18u64)).into(),
                    U256::from(0x40).into(),
                    U256::from(2).into(),
                    word(WETH9.0),
                    word(USDT.0),
                ],
            );
            (
                kind,
                "eth_call",
                json!([{"to": UNISWAP_ROUTER.0, "data": Bytes::from(data)}, "latest"]),
            )
        }
        Kind::Balance => (kind, "eth_getBalance", json!([address, "latest"])),
        Kind::Storage => {
            (kind, "eth_getStorageAt", json!([USDT.0, mapping_slot(address, 2), "latest"]))
        }
        Kind::BlockFull => (kind, "eth_getBlockByNumber", json!(["latest", true])),
        Kind::Receipt => {
            let from = head.saturating_sub(63).max(1);
            let picked = (0..8).find_map(|_| {
                let n = from + rng.below(head + 1 - from);
                let hashes = targets.tx_hashes.get(n as usize).filter(|h| !h.is_empty())?;
                Some(hashes[rng.below(hashes.len() as u64) as usize])
            });
            // Blocks without transactions in 8 tries: a balance instead.
            match picked {
                Some(hash) => (kind, "eth_getTransactionReceipt", json!([hash])),
                None => (Kind::Balance, "eth_getBalance", json!([address, "latest"])),
            }
        }
        Kind::Logs => (
            kind,
            "eth_getLogs",
            json!([{"fromBlock": format!("{:#x}", head.saturating_sub(63)), "toBlock": format!("{head:#x}"), "address": USDT.0}]),
        ),
        Kind::Estimate => {
            let (_, from) = &targets.spare[rng.below(targets.spare.len() as u64) as usize];
            let data = abi(TRANSFER, &[word(address), U256::from(1).into()]);
            (
                kind,
                "eth_estimateGas",
                json!([{"from": from, "to": USDT.0, "data": Bytes::from(data)}, "latest"]),
            )
        }
        Kind::SendRaw => {
            // Spare senders in turn, each one's nonces in order: every transaction valid.
            let k = targets.next_raw.fetch_add(1, Ordering::Relaxed);
            let (key, _) = &targets.spare[(k % targets.spare.len() as u64) as usize];
            let raw = transfer(key, k / targets.spare.len() as u64, address);
            (kind, "eth_sendRawTransaction", json!([raw]))
        }
    };
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    (kind, body.to_string())
}

/// A signed EIP-1559 transfer of 1 wei from `key` to `to` with `nonce`, encoded (EIP-2718).
/// `--cost`: `n` requests of each kind of the mix, one after another on one connection, and
/// each kind's mean answer time (ms; failed requests count too).
fn cost(
    targets: &Targets,
    url: &str,
    n: usize,
    seed: u64,
    timeout: Duration,
) -> BTreeMap<&'static str, f64> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let mut rng = Rng(seed);
    let mut out = BTreeMap::new();
    for (kind, _) in MIXED {
        let bodies: Vec<String> = (0..n).map(|_| request(targets, kind, &mut rng).1).collect();
        let start = Instant::now();
        for body in &bodies {
            let _ = send(&agent, url, body);
        }
        out.insert(kind.label(), start.elapsed().as_secs_f64() * 1e3 / n as f64);
    }
    out
}

fn transfer(key: &SigningKey, nonce: u64, to: Address) -> Bytes {
    let tx = TxEip1559 {
        chain_id: CHAIN_ID,
        nonce,
        gas_limit: 21_000,
        // 40,000 gwei: above any base fee a gen-chain chain reaches in its first few hundred
        // blocks, and 0.84 ether of fee at most, within geth's and reth's 1-ether
        // `--rpc.txfeecap`.
        max_fee_per_gas: 40_000_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(to),
        value: U256::from(1),
        ..Default::default()
    };
    sign(key, tx).encoded_2718().into()
}

/// One client connection: sends the jobs it takes, records each answer's latency from the
/// time the request was due, or its error's kind.
fn worker(
    url: &str,
    rx: &Mutex<mpsc::Receiver<Job>>,
    stats: &Mutex<BTreeMap<Kind, MethodStats>>,
    timeout: Duration,
) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let mut mine: BTreeMap<Kind, MethodStats> = BTreeMap::new();
    loop {
        let job = match rx.lock().expect("queue").recv() {
            Ok(job) => job,
            Err(_) => break,
        };
        let outcome = send(&agent, url, &job.body);
        let s = mine.entry(job.kind).or_default();
        s.sent += 1;
        match outcome {
            Ok(()) => s.latencies.push(job.due.elapsed().as_secs_f64()),
            Err(kind) => *s.errors.entry(kind).or_insert(0) += 1,
        }
    }
    let mut all = stats.lock().expect("stats");
    for (kind, s) in mine {
        let a = all.entry(kind).or_default();
        a.sent += s.sent;
        a.latencies.extend(s.latencies);
        for (e, n) in s.errors {
            *a.errors.entry(e).or_insert(0) += n;
        }
    }
}

/// Sends one request; `Err` names what went wrong: `timeout`, `connection`, `http STATUS`,
/// `not json`, or `rpc CODE: MESSAGE` (the message cut to 48 characters, numbers kept).
fn send(agent: &ureq::Agent, url: &str, body: &str) -> Result<(), String> {
    let mut response = match agent.post(url).header("Content-Type", "application/json").send(body) {
        Ok(r) => r,
        Err(ureq::Error::Timeout(_)) => return Err("timeout".into()),
        Err(_) => return Err("connection".into()),
    };
    let status = response.status().as_u16();
    let text = match response.body_mut().with_config().limit(64 << 20).read_to_string() {
        Ok(t) => t,
        Err(ureq::Error::Timeout(_)) => return Err("timeout".into()),
        Err(_) => return Err("connection".into()),
    };
    if status != 200 {
        return Err(format!("http {status}"));
    }
    let answer: Value = serde_json::from_str(&text).map_err(|_| "not json".to_string())?;
    match answer.get("error") {
        None => Ok(()),
        Some(e) => {
            let message: String = e["message"].as_str().unwrap_or("").chars().take(48).collect();
            Err(format!("rpc {}: {message}", e["code"]))
        }
    }
}

/// Samples the node's CPU time and resident memory every 250 ms until `stop`.
fn sample(pid: u32, stop: &AtomicBool) -> Result<NodeUsage, String> {
    // /proc/PID/stat counts CPU time in USER_HZ ticks, 100 a second on Linux.
    let cpu = || -> Result<f64, String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
        // Fields after the command (which may hold spaces), from field 3 on.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        Ok((tick(11) + tick(12)) / 100.0) // utime, stime (fields 14, 15)
    };
    let rss = || -> f64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<f64>().ok()))
            })
            .map_or(0.0, |kb| kb / 1024.0)
    };
    let (start, cpu0) = (Instant::now(), cpu()?);
    let mut rss_max: f64 = rss();
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(250));
        rss_max = rss_max.max(rss());
    }
    let rss_end = rss();
    Ok(NodeUsage {
        cpu_cores: (cpu()? - cpu0) / start.elapsed().as_secs_f64(),
        rss_max_mib: rss_max.max(rss_end),
        rss_end_mib: rss_end,
    })
}

fn print_table(r: &RpcLoadReport) {
    println!(
        "{}: {:.0} req/s offered ({:?}), {:.1} s: {} offered, {} backlog, {:.1} served/s; replay {} blocks, {:.1} Mgas/s, newPayload p50 {:.1} ms, p99 {:.1} ms",
        r.label,
        r.rate,
        r.mix,
        r.seconds,
        r.offered,
        r.backlog,
        r.served_per_s,
        r.replay.blocks,
        r.replay.mgas_per_s,
        r.replay.new_payload_p50_ms,
        r.replay.new_payload_p99_ms
    );
    if let Some(n) = &r.node {
        println!(
            "node: {:.2} cores busy, RSS max {:.0} MiB, at the end {:.0} MiB",
            n.cpu_cores, n.rss_max_mib, n.rss_end_mib
        );
    }
    if let Some(w) = &r.ws {
        println!(
            "ws: {} of {} subscribed (refused {:?}); heads {} ({}..{} per subscriber), logs {}, subscriptions dropped {}, connections closed {}",
            w.subscribed, w.subscribers, w.refused, w.heads, w.heads_min, w.heads_max, w.logs, w.dropped, w.closed
        );
    }
    println!(
        "{:<28} {:>8} {:>8} {:>10} {:>10}  errors",
        "method", "sent", "ok", "p50 ms", "p99 ms"
    );
    for (name, m) in &r.methods {
        println!(
            "{name:<28} {:>8} {:>8} {:>10.1} {:>10.1}  {:?}",
            m.sent, m.ok, m.p50_ms, m.p99_ms, m.errors
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::{transaction::SignerRecoverable, TxEnvelope};
    use alloy_eips::eip2718::Decodable2718;

    #[test]
    fn a_spare_transfer_decodes_and_recovers_to_its_sender() {
        let key = spare_sender_key(1, 3);
        let sender = Address::from_public_key(key.verifying_key());
        let raw = transfer(&key, 7, Address::repeat_byte(0x11));
        let tx = TxEnvelope::decode_2718(&mut raw.as_ref()).expect("decodes");
        assert_eq!(tx.recover_signer().expect("recovers"), sender);
        assert_eq!(tx.nonce(), 7);
        assert_eq!(tx.chain_id(), Some(CHAIN_ID));
    }

    #[test]
    fn the_mixed_shares_add_up_to_a_hundred() {
        assert_eq!(MIXED.iter().map(|(_, s)| s).sum::<u64>(), 100);
    }
}
