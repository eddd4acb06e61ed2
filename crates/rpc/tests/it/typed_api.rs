//! The public namespaces as typed traits over HTTP: answers in alloy's shapes, and a malformed
//! parameter answered as geth answers it (-32602, the reason in the message, no `data`), alone
//! and inside a batch; the server's limits (a batch too long, a body too large) answered with
//! jsonrpsee's errors.

use crate::common;

use gigagas_rpc::serve_http;
use serde_json::{json, Value};
use std::net::SocketAddr;

/// POSTs `body` to `addr` over plain HTTP/1.1 and returns the answer's JSON.
fn post(addr: SocketAddr, body: &Value) -> Value {
    let (_, answer) = post_raw(addr, body);
    serde_json::from_str(&answer).unwrap()
}

/// POSTs `body` to `addr` over plain HTTP/1.1: the status line and the body as text.
fn post_raw(addr: SocketAddr, body: &Value) -> (String, String) {
    common::post_bytes(addr, &serde_json::to_vec(body).unwrap())
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A -32602 answer in geth's shape: the reason `reason` in the message, no `data`.
fn assert_invalid_argument(answer: &Value, reason: &str) {
    let error = &answer["error"];
    assert_eq!(error["code"], -32602, "{answer}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("invalid argument: ") && message.contains(reason), "{answer}");
    assert!(error.get("data").is_none(), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_answers_and_geths_invalid_params() {
    let dir = tempfile::tempdir().unwrap();
    let (module, genesis, _engine) = common::node(dir.path(), &[]);
    let (addr, handle) =
        serve_http("127.0.0.1:0".parse().unwrap(), module, Default::default()).await.unwrap();
    let answers = tokio::task::spawn_blocking(move || {
        let no_prefix = "ab".repeat(32);
        vec![
            post(addr, &request(1, "eth_getBlockByNumber", json!(["0x0", false]))),
            post(addr, &request(2, "eth_getBlockByHash", json!([no_prefix, false]))),
            post(
                addr,
                &json!([
                    request(3, "eth_blockNumber", json!([])),
                    request(4, "eth_getStorageAt", json!([Value::Null, "0x0"])),
                    request(5, "eth_getBlockByHash", json!([no_prefix, true])),
                ]),
            ),
            post(addr, &request(6, "net_listening", json!([]))),
            post(addr, &request(7, "txpool_status", json!([]))),
        ]
    })
    .await
    .unwrap();
    // The genesis block in alloy's shape, found by number.
    assert_eq!(answers[0]["result"]["hash"], json!(genesis), "{}", answers[0]);
    assert_eq!(answers[0]["result"]["number"], "0x0");
    // A hash without its 0x prefix: geth refuses it, with the reason in the message.
    assert_invalid_argument(&answers[1], "without 0x prefix");
    // The same inside a batch, beside an answer that is left as it is.
    let batch = answers[2].as_array().expect("a batch answer");
    assert_eq!(batch.len(), 3);
    let by_id = |id: u64| batch.iter().find(|a| a["id"] == id).unwrap();
    assert_eq!(by_id(3)["result"], "0x0");
    assert_invalid_argument(by_id(4), "");
    assert_invalid_argument(by_id(5), "without 0x prefix");
    // No network: not listening.
    assert_eq!(answers[3]["result"], false);
    assert_eq!(answers[4]["result"], json!({"pending": "0x0", "queued": "0x0"}));
    handle.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_or_a_body_past_the_limits_is_refused_with_jsonrpsees_error() {
    let dir = tempfile::tempdir().unwrap();
    let (module, _, _engine) = common::node(dir.path(), &[]);
    let limits =
        gigagas_rpc::HttpLimits { max_request_bytes: 2_000, max_batch: 3, ..Default::default() };
    let (addr, handle) = serve_http("127.0.0.1:0".parse().unwrap(), module, limits).await.unwrap();
    let answers = tokio::task::spawn_blocking(move || {
        let batch = |n: u64| {
            Value::Array((0..n).map(|i| request(i, "eth_blockNumber", json!([]))).collect())
        };
        let big =
            request(9, "eth_getBalance", json!(["0x".to_string() + &"00".repeat(1_000), "latest"]));
        (post(addr, &batch(3)), post(addr, &batch(4)), post_raw(addr, &big))
    })
    .await
    .unwrap();
    assert_eq!(answers.0.as_array().map(Vec::len), Some(3), "{}", answers.0);
    assert_eq!(answers.1["error"]["code"], -32010, "a batch of 4 over a limit of 3: {}", answers.1);
    assert!(answers.2 .0.contains("413"), "a 2,000-byte body limit: {:?}", answers.2);
    handle.stop().unwrap();
}
