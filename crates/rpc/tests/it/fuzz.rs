//! Fuzzing the JSON-RPC request decoders: every public method (filters and subscriptions
//! included) and the Engine API's fed random
//! text, valid requests with bytes flipped, cut or extended, and valid requests with a parameter
//! replaced by a hostile value (a number out of range, odd-length or non-hex hex, a huge
//! string, a deep nesting, an array of 100,000 items, a wrong type). None may panic; every
//! request that parses as JSON-RPC gets a JSON-RPC answer, a result or a typed error.
//!
//! `FUZZ_ITERATIONS` sets the inputs (default 20,000 in the test suite; `make fuzz-rpc` runs
//! 1,000,000).

use crate::common::context_with;
use serde_json::{json, Value};

fn iterations() -> usize {
    std::env::var("FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
}

/// splitmix64: the inputs are the same for a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Valid requests of the methods whose parameters a client chooses.
fn samples() -> Vec<(&'static str, Value)> {
    let addr = "0x00000000000000000000000000000000000000aa";
    let hash = "0x88df016429689c079f3b2f6ad39fa052532c56795b733da78a91ebe6a713944b";
    let call =
        json!({"from": addr, "to": addr, "data": "0x70a08231", "gas": "0x5208", "value": "0x1"});
    vec![
        ("eth_getBalance", json!([addr, "latest"])),
        ("eth_getTransactionCount", json!([addr, "0x0"])),
        ("eth_getCode", json!([addr, {"blockNumber": "0x0"}])),
        ("eth_getStorageAt", json!([addr, "0x0", "latest"])),
        ("eth_getProof", json!([addr, ["0x0"], "latest"])),
        ("eth_call", json!([call, "latest"])),
        ("eth_estimateGas", json!([call])),
        ("eth_createAccessList", json!([call, "latest"])),
        ("eth_simulateV1", json!([{"blockStateCalls": [{"calls": [call]}]}, "latest"])),
        ("eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": "latest", "address": addr, "topics": [hash]}])),
        ("eth_getBlockByNumber", json!(["0x0", true])),
        ("eth_getBlockByHash", json!([hash, false])),
        ("eth_getBlockReceipts", json!(["latest"])),
        ("eth_getTransactionByHash", json!([hash])),
        ("eth_getTransactionReceipt", json!([hash])),
        ("eth_getTransactionByBlockNumberAndIndex", json!(["0x0", "0x0"])),
        ("eth_feeHistory", json!(["0x4", "latest", [25.0, 75.0]])),
        ("eth_sendRawTransaction", json!(["0x02f86b0580843b9aca00843b9aca0082520894000000000000000000000000000000000000aa0180c080a0"])),
        ("debug_getRawBlock", json!(["0x0"])),
        ("debug_getRawReceipts", json!(["latest"])),
        ("debug_traceTransaction", json!([hash, {"tracer": "callTracer"}])),
        ("debug_traceBlockByNumber", json!(["0x0", {"tracer": "prestateTracer"}])),
        ("txpool_content", json!([])),
        ("eth_newFilter", json!([{"fromBlock": "0x0", "address": [addr], "topics": [hash, null, [hash]]}])),
        ("eth_newPendingTransactionFilter", json!([true])),
        ("eth_getFilterChanges", json!(["0x1"])),
        ("eth_getFilterLogs", json!(["0x1"])),
        ("eth_uninstallFilter", json!(["0x1"])),
        ("eth_subscribe", json!(["logs", {"address": addr, "topics": [hash]}])),
        ("eth_subscribe", json!(["newPendingTransactions", true])),
        ("eth_unsubscribe", json!(["0x1"])),
        ("eth_maxPriorityFeePerGas", json!([])),
        ("engine_forkchoiceUpdatedV3", json!([{"headBlockHash": hash, "safeBlockHash": hash, "finalizedBlockHash": hash}, null])),
        ("engine_getPayloadBodiesByRangeV1", json!(["0x1", "0x20"])),
        ("engine_getBlobsV2", json!([[hash]])),
        ("engine_exchangeCapabilities", json!([["engine_newPayloadV4"]])),
    ]
}

/// A hostile JSON value.
fn hostile(rng: &mut Rng) -> Value {
    match rng.below(12) {
        0 => json!(u64::MAX),
        1 => json!(-1),
        2 => json!("0x"),
        3 => json!("0x123"),
        4 => json!("0xzz"),
        5 => json!(format!("0x{}", "f".repeat(80))),
        6 => json!("a".repeat(100_000)),
        7 => {
            let mut v = json!(1);
            for _ in 0..100 {
                v = json!([v]);
            }
            v
        }
        8 => Value::Array(vec![json!("0x0"); 100_000]),
        9 => json!({"fromBlock": "0xffffffffffffffff", "toBlock": "0x0"}),
        10 => json!(null),
        _ => json!(1.5e300),
    }
}

/// One request text: random bytes, a sample mutated as text, or a sample with a hostile
/// parameter.
fn input(rng: &mut Rng, samples: &[(&'static str, Value)]) -> String {
    let (method, params) = &samples[rng.below(samples.len())];
    match rng.below(10) {
        0 => (0..rng.below(256)).map(|_| (rng.below(95) as u8 + 32) as char).collect(),
        1..=4 => {
            let mut params = params.clone();
            if let Some(list) = params.as_array_mut() {
                if list.is_empty() {
                    list.push(hostile(rng));
                } else {
                    let i = rng.below(list.len() + 1);
                    match list.get_mut(i) {
                        Some(p) => *p = hostile(rng),
                        None => list.push(hostile(rng)),
                    }
                }
            }
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
        }
        _ => {
            let mut text = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
                .to_string()
                .into_bytes();
            for _ in 0..1 + rng.below(4) {
                match rng.below(3) {
                    0 if !text.is_empty() => {
                        let i = rng.below(text.len());
                        text[i] = (rng.below(95) as u8) + 32;
                    }
                    1 => text.truncate(rng.below(text.len() + 1)),
                    _ => {
                        let at = rng.below(text.len() + 1);
                        let junk: Vec<u8> = (0..1 + rng.below(8))
                            .map(|_| b"0x[]{}\",:9f-e"[rng.below(13)])
                            .collect();
                        text.splice(at..at, junk);
                    }
                }
            }
            String::from_utf8_lossy(&text).into_owned()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_rpc_request_decoders_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _, _engine) = context_with(dir.path(), &[], |ctx| ctx);
    let ctx = std::sync::Arc::new(ctx);
    let mut rpc = gigagas_rpc::auth_module(ctx.clone());
    // The subscriptions as the WebSocket and IPC ports serve them.
    rpc.merge(gigagas_rpc::EthPubSubApiServer::into_rpc(gigagas_rpc::EthPubSub::new(ctx))).unwrap();
    let samples = samples();
    let mut rng = Rng(40);
    let (mut answered, mut errors, mut unparsed) = (0usize, 0usize, 0usize);
    for _ in 0..iterations() {
        let text = input(&mut rng, &samples);
        // jsonrpsee refuses what is not a JSON-RPC request before any method runs.
        match rpc.raw_json_request(&text, 1).await {
            Ok((answer, _)) => {
                let answer: Value = serde_json::from_str(answer.get()).expect("answers are JSON");
                if answer.get("error").is_some() {
                    errors += 1;
                } else {
                    assert!(answer.get("result").is_some(), "{text} -> {answer}");
                }
                answered += 1;
            }
            Err(_) => unparsed += 1,
        }
    }
    eprintln!("fuzz rpc: {answered} answered ({errors} errors), {unparsed} not JSON-RPC");
    assert!(answered > 0 && errors > 0);
}
