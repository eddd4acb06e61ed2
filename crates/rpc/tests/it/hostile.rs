//! Hostile JSON-RPC clients against the public server with its default limits: malformed JSON,
//! deep nesting, huge arrays, a 100,000-call batch, invalid hex and out-of-range numbers each
//! get a typed JSON-RPC error, and clients that send large requests and never read the answers
//! do not keep the server from answering another client.

use crate::common::{self, post_bytes};
use gigagas_rpc::serve_http;
use serde_json::{json, Value};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The JSON-RPC error code of the answer to `body`.
fn error_code(addr: SocketAddr, body: &[u8]) -> i64 {
    let (status, answer) = post_bytes(addr, body);
    let answer: Value = serde_json::from_str(&answer)
        .unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {answer:.200}"));
    answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("no error: {answer:.300}"))
}

fn request(method: &str, params: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string().into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_are_answered_with_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (module, _, _engine) = common::node(dir.path(), &[]);
    let (addr, handle) =
        serve_http("127.0.0.1:0".parse().unwrap(), module, Default::default()).await.unwrap();
    tokio::task::spawn_blocking(move || {
        // Not JSON: -32700.
        assert_eq!(error_code(addr, br#"{"jsonrpc": "2.0", "id": 1, "method": "#), -32700);
        // 100,000 nested arrays as the parameters: jsonrpsee keeps them raw, the method's
        // decoder stops at serde_json's recursion limit: invalid params, no stack overflow.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(error_code(addr, deep.as_bytes()), -32602);
        // 100,000 parameters where two are taken: invalid params.
        let huge = request("eth_getBalance", Value::Array(vec![json!("0x0"); 100_000]));
        assert_eq!(error_code(addr, &huge), -32602);
        // A batch of 100,000 calls (2.4 MB, within the body limit): over the 1,000-call limit.
        let calls: Vec<Value> = (0..100_000)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "eth_blockNumber"}))
            .collect();
        assert_eq!(error_code(addr, Value::Array(calls).to_string().as_bytes()), -32010);
        // Invalid hex and numbers out of range: invalid params.
        for (method, params) in [
            ("eth_getBalance", json!(["0xzz", "latest"])),
            ("eth_getBalance", json!(["0x00000000000000000000000000000000000000aa", "0x"])),
            ("eth_getBlockByNumber", json!(["0x1ffffffffffffffffff", false])),
            ("eth_getBlockByNumber", json!([-1, false])),
            (
                "eth_getStorageAt",
                json!([
                    "0x00000000000000000000000000000000000000aa",
                    "0x1".to_string() + &"0".repeat(70),
                    "latest"
                ]),
            ),
            ("eth_feeHistory", json!(["0x10000000000000000", "latest", []])),
            ("eth_sendRawTransaction", json!(["0x0"])),
        ] {
            assert_eq!(
                error_code(addr, &request(method, params.clone())),
                -32602,
                "{method} {params}"
            );
        }
        // Still serving.
        let (_, answer) = post_bytes(addr, &request("eth_blockNumber", json!([])));
        assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["result"], "0x0");
    })
    .await
    .unwrap();
    handle.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_their_answers_do_not_stall_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (module, _, _engine) = common::node(dir.path(), &[]);
    let (addr, handle) =
        serve_http("127.0.0.1:0".parse().unwrap(), module, Default::default()).await.unwrap();
    tokio::task::spawn_blocking(move || {
        // 64 clients each ask for about 1 MB of answers (a batch of 1,000 full genesis blocks)
        // and never read a byte of it.
        let calls: Vec<Value> = (0..1_000)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "eth_getBlockByNumber", "params": ["0x0", true]}))
            .collect();
        let body = Value::Array(calls).to_string();
        let silent: Vec<TcpStream> = (0..64)
            .map(|_| {
                let mut s = TcpStream::connect(addr).unwrap();
                let head = format!(
                    "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\n\r\n",
                    body.len()
                );
                s.write_all(head.as_bytes()).unwrap();
                s.write_all(body.as_bytes()).unwrap();
                s
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        // Another client is answered, and soon.
        let start = Instant::now();
        let (_, answer) = post_bytes(addr, &request("eth_blockNumber", json!([])));
        assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["result"], "0x0");
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        drop(silent);
    })
    .await
    .unwrap();
    handle.stop().unwrap();
}
