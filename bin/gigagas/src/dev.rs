//! `gigagas node --dev`: a consensus driver that runs beside the node and drives it only
//! through the Engine API over HTTP with a JWT, as a consensus client does: once
//! `engine_exchangeCapabilities`, then every slot `engine_forkchoiceUpdated` with payload
//! attributes, `engine_getPayload`, `engine_newPayload` and `engine_forkchoiceUpdated` to the
//! new block, with the safe and finalized blocks lagging the head.

use crate::rpc_client::post_with;
use alloy_primitives::{keccak256, Address, B256};
use gigagas_primitives::ChainSpec;
use gigagas_rpc::{auth::JwtSecret, CAPABILITIES};
use serde_json::{json, Value};
use std::{
    collections::VecDeque,
    io::Write as _,
    net::SocketAddr,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

/// How the driver runs.
#[derive(Debug, Clone)]
pub(crate) struct DevConfig {
    /// The node's Engine API address.
    pub(crate) auth: SocketAddr,
    /// The JWT secret shared with the node.
    pub(crate) secret: JwtSecret,
    /// The chain's fork schedule (a consensus client's configuration: which method versions).
    pub(crate) chain: ChainSpec,
    /// Seconds per slot.
    pub(crate) block_time: Duration,
    /// Fee recipient of the blocks built.
    pub(crate) fee_recipient: Address,
    /// The safe block is this many blocks below the head.
    pub(crate) safe_lag: usize,
    /// The finalized block is this many blocks below the head.
    pub(crate) finalized_lag: usize,
}

/// The Engine API method versions of the fork active at `timestamp`: (forkchoiceUpdated,
/// getPayload, newPayload).
fn versions(chain: &ChainSpec, timestamp: u64) -> (u8, u8, u8) {
    if chain.is_amsterdam(timestamp) {
        (4, 6, 5)
    } else if chain.is_osaka(timestamp) {
        (3, 5, 4)
    } else if chain.is_prague(timestamp) {
        (3, 4, 4)
    } else {
        (3, 3, 3)
    }
}

struct Engine {
    url: String,
    secret: JwtSecret,
    id: u64,
}

impl Engine {
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        let answer = post_with(&self.url, &body.to_string(), Some(&self.secret.token()))?;
        match answer.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(format!("{method}: {}", answer.get("error").unwrap_or(&answer))),
        }
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn field<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("answer without {key}: {v}"))
}

fn quantity(v: &Value) -> Result<u64, String> {
    let s = v.as_str().ok_or_else(|| format!("not a quantity: {v}"))?;
    u64::from_str_radix(s.trim_start_matches("0x"), 16).map_err(|e| format!("{s}: {e}"))
}

fn hash(v: &Value) -> Result<B256, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("not a hash: {v}: {e}"))
}

/// Runs the driver until `stop` is set; returns the number of blocks it made canonical.
///
/// # Errors
/// The first Engine API call that fails (transport or JSON-RPC error); an INVALID payload
/// status is an error too (the node rejected a block it built).
pub(crate) fn run(config: DevConfig, stop: Arc<AtomicBool>) -> Result<u64, String> {
    let mut engine =
        Engine { url: format!("http://{}", config.auth), secret: config.secret.clone(), id: 0 };
    engine.call("engine_exchangeCapabilities", json!([CAPABILITIES]))?;
    let head = engine.call("eth_getBlockByNumber", json!(["latest", false]))?;
    let mut head_hash = hash(field(&head, "hash")?)?;
    let mut head_time = quantity(field(&head, "timestamp")?)?;
    let mut slot = quantity(field(&head, "number")?)?;
    let mut recent: VecDeque<B256> = VecDeque::from([head_hash]);
    let mut made = 0;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(config.block_time);
        slot += 1;
        let timestamp = now().max(head_time + 1);
        let (fcu, get, new) = versions(&config.chain, timestamp);
        let state = |head: B256, recent: &VecDeque<B256>| {
            let pick = |lag: usize| {
                recent.get(recent.len().saturating_sub(1 + lag)).copied().unwrap_or(head)
            };
            json!({
                "headBlockHash": head,
                "safeBlockHash": pick(config.safe_lag),
                "finalizedBlockHash": pick(config.finalized_lag),
            })
        };
        let beacon_root = keccak256(format!("gigagas dev beacon block {slot}"));
        let mut attrs = json!({
            "timestamp": format!("{timestamp:#x}"),
            "prevRandao": keccak256(format!("gigagas dev randao {slot}")),
            "suggestedFeeRecipient": config.fee_recipient,
            "withdrawals": [],
            "parentBeaconBlockRoot": beacon_root,
        });
        if fcu >= 4 {
            attrs["slotNumber"] = json!(format!("{slot:#x}"));
        }
        let answer = engine.call(
            &format!("engine_forkchoiceUpdatedV{fcu}"),
            json!([state(head_hash, &recent), attrs]),
        )?;
        let Some(id) = answer.get("payloadId").filter(|v| !v.is_null()).cloned() else {
            return Err(format!("forkchoiceUpdated built no payload: {answer}"));
        };
        let envelope = engine.call(&format!("engine_getPayloadV{get}"), json!([id]))?;
        let payload = field(&envelope, "executionPayload")?.clone();
        let mut params = vec![payload.clone(), json!([]), json!(beacon_root)];
        if new >= 4 {
            params.push(field(&envelope, "executionRequests")?.clone());
        }
        let status = engine.call(&format!("engine_newPayloadV{new}"), Value::Array(params))?;
        if field(&status, "status")? != "VALID" {
            return Err(format!("the node did not accept the block it built: {status}"));
        }
        head_hash = hash(field(&payload, "blockHash")?)?;
        head_time = timestamp;
        recent.push_back(head_hash);
        while recent.len() > config.finalized_lag.max(config.safe_lag) + 1 {
            recent.pop_front();
        }
        let answer = engine.call(
            &format!("engine_forkchoiceUpdatedV{fcu}"),
            json!([state(head_hash, &recent), null]),
        )?;
        if answer["payloadStatus"]["status"] != "VALID" {
            return Err(format!("forkchoiceUpdated to the new head: {answer}"));
        }
        made += 1;
        let txs = payload["transactions"].as_array().map_or(0, Vec::len);
        // A closed stderr must not stop the chain.
        let _ = writeln!(
            std::io::stderr(),
            "dev: block {} {head_hash}: {txs} transactions, {} gas; built, executed and made canonical over the Engine API",
            quantity(field(&payload, "blockNumber")?)?,
            quantity(field(&payload, "gasUsed")?)?,
        );
    }
    Ok(made)
}
