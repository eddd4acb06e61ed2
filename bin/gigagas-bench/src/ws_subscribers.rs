//! `rpc-load --ws-subscribers N`: N WebSocket clients, each subscribed to `newHeads` and to the
//! logs of USDT transfers to one address of the chain (a wallet watching its own balance),
//! reading every notification for as long as the replay lasts.
//!
//! Flow: one small tokio runtime (its threads at the load's nice value) → per subscriber one
//! connection (soketto, the WebSocket library the server uses) → `eth_subscribe` twice → a read
//! loop counting heads, logs and subscription errors (a subscription the node dropped) until
//! the run ends and the runtime drops the connections → [`WsReport`]: subscribers connected, the heads each saw (the fewest and the
//! most: every one should see every head), logs, errors and refused connections.

use crate::gen_chain::USDT;
use alloy_primitives::{Address, B256};
use serde::Serialize;
use serde_json::{json, Value};
use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Arc, Mutex,
};
use tokio_util::compat::TokioAsyncReadCompatExt;

/// ERC-20 `Transfer(address,address,uint256)`.
const TRANSFER_TOPIC: B256 =
    alloy_primitives::b256!("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

/// What the subscribers saw.
#[derive(Debug, Default, Serialize)]
pub(crate) struct WsReport {
    /// Subscribers asked for.
    pub(crate) subscribers: usize,
    /// Subscribers whose two subscriptions the node accepted.
    pub(crate) subscribed: usize,
    /// Connections or subscriptions refused (handshake, `eth_subscribe` error), by reason.
    pub(crate) refused: std::collections::BTreeMap<String, u64>,
    /// `newHeads` notifications, all subscribers.
    pub(crate) heads: u64,
    /// The fewest heads one subscribed subscriber saw.
    pub(crate) heads_min: u64,
    /// The most.
    pub(crate) heads_max: u64,
    /// Log notifications, all subscribers.
    pub(crate) logs: u64,
    /// Subscriptions the node ended with an error notification (dropped).
    pub(crate) dropped: u64,
    /// Connections that closed before the end.
    pub(crate) closed: u64,
}

/// Running subscribers; [`Subscribers::finish`] stops them and reports.
pub(crate) struct Subscribers {
    runtime: tokio::runtime::Runtime,
    counts: Vec<Arc<Counts>>,
    refused: Arc<Mutex<std::collections::BTreeMap<String, u64>>>,
    subscribers: usize,
}

/// One subscriber's counts, read when the run ends.
#[derive(Debug, Default)]
struct Counts {
    subscribed: AtomicBool,
    heads: AtomicU64,
    logs: AtomicU64,
    dropped: AtomicU64,
    /// The connection closed while the run went on.
    closed: AtomicBool,
}

impl Subscribers {
    /// Connects `n` subscribers to `url` (`ws://host:port`), the i-th watching transfers to
    /// `addresses[i % len]`, on threads at nice `nice`; returns once every one subscribed or
    /// failed to.
    pub(crate) fn start(
        url: &str,
        n: usize,
        addresses: &[Address],
        nice: i32,
    ) -> Result<Self, String> {
        let host = url
            .strip_prefix("ws://")
            .ok_or_else(|| format!("--ws {url}: a ws:// URL"))?
            .trim_end_matches('/')
            .to_string();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ws-subscriber")
            .on_thread_start(move || crate::util::lower(nice))
            .enable_all()
            .build()
            .map_err(|e| format!("ws runtime: {e}"))?;
        let refused: Arc<Mutex<std::collections::BTreeMap<String, u64>>> = Arc::default();
        let ready = Arc::new(AtomicU64::new(0));
        let counts: Vec<Arc<Counts>> = (0..n).map(|_| Arc::default()).collect();
        for (i, count) in counts.iter().enumerate() {
            let watched = addresses.get(i % addresses.len().max(1)).copied().unwrap_or_default();
            let (host, refused, ready, count) =
                (host.clone(), refused.clone(), ready.clone(), count.clone());
            runtime.spawn(async move {
                if let Err(reason) = subscriber(&host, watched, &count, &ready).await {
                    if !count.subscribed.load(Ordering::Acquire) {
                        ready.fetch_add(1, Ordering::AcqRel);
                        *refused.lock().expect("refused").entry(reason).or_insert(0) += 1;
                    } else {
                        count.closed.store(true, Ordering::Release);
                    }
                }
            });
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while ready.load(Ordering::Acquire) < n as u64 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(Self { runtime, counts, refused, subscribers: n })
    }

    /// Stops the subscribers (their connections dropped) and reports what they saw.
    pub(crate) fn finish(self) -> WsReport {
        self.runtime.shutdown_timeout(std::time::Duration::from_secs(1));
        let subscribed: Vec<&Arc<Counts>> =
            self.counts.iter().filter(|c| c.subscribed.load(Ordering::Acquire)).collect();
        let heads = |c: &Arc<Counts>| c.heads.load(Ordering::Acquire);
        WsReport {
            subscribers: self.subscribers,
            subscribed: subscribed.len(),
            refused: std::mem::take(&mut *self.refused.lock().expect("refused")),
            heads: self.counts.iter().map(heads).sum(),
            heads_min: subscribed.iter().map(|c| heads(c)).min().unwrap_or(0),
            heads_max: subscribed.iter().map(|c| heads(c)).max().unwrap_or(0),
            logs: self.counts.iter().map(|c| c.logs.load(Ordering::Acquire)).sum(),
            dropped: self.counts.iter().map(|c| c.dropped.load(Ordering::Acquire)).sum(),
            closed: self.counts.iter().filter(|c| c.closed.load(Ordering::Acquire)).count() as u64,
        }
    }
}

/// One subscriber: connects, subscribes, counts into `count` until its connection ends (the
/// runtime's shutdown drops it); an error before it subscribed says why it could not.
async fn subscriber(
    host: &str,
    watched: Address,
    count: &Counts,
    ready: &AtomicU64,
) -> Result<(), String> {
    let stream = tokio::net::TcpStream::connect(host).await.map_err(|e| format!("connect: {e}"))?;
    let mut client = soketto::handshake::Client::new(stream.compat(), host, "/");
    match client.handshake().await.map_err(|e| format!("handshake: {e}"))? {
        soketto::handshake::ServerResponse::Accepted { .. } => {}
        other => return Err(format!("handshake refused: {other:?}")),
    }
    let (mut sender, mut receiver) = client.into_builder().finish();
    let watched_topic = B256::left_padding_from(watched.as_slice());
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "eth_subscribe", "params": ["logs", {
            "address": USDT.0, "topics": [TRANSFER_TOPIC, null, watched_topic]}]}),
    ];
    for r in &requests {
        sender.send_text(r.to_string()).await.map_err(|e| format!("send: {e}"))?;
    }
    sender.flush().await.map_err(|e| format!("send: {e}"))?;
    let (mut heads_id, mut logs_id, mut answers) = (None, None, 0);
    let mut data = Vec::new();
    loop {
        data.clear();
        receiver.receive_data(&mut data).await.map_err(|e| format!("receive: {e}"))?;
        let Ok(message) = serde_json::from_slice::<Value>(&data) else { continue };
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            answers += 1;
            let Some(sub) = message.get("result").cloned() else {
                let error = message["error"]["message"].as_str().unwrap_or("?").to_string();
                return Err(format!("eth_subscribe: {error}"));
            };
            if id == 1 {
                heads_id = Some(sub);
            } else {
                logs_id = Some(sub);
            }
            if answers == 2 {
                count.subscribed.store(true, Ordering::Release);
                ready.fetch_add(1, Ordering::AcqRel);
            }
            continue;
        }
        let params = &message["params"];
        if params.get("error").is_some() {
            count.dropped.fetch_add(1, Ordering::AcqRel);
        } else if Some(&params["subscription"]) == heads_id.as_ref() {
            count.heads.fetch_add(1, Ordering::AcqRel);
        } else if Some(&params["subscription"]) == logs_id.as_ref() {
            count.logs.fetch_add(1, Ordering::AcqRel);
        }
    }
}
