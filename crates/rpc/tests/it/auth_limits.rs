//! The authenticated Engine API server over HTTP: a request larger than jsonrpsee's 10 MiB
//! default — as a 1G-gas payload with its BAL is (about 30 MiB of JSON) — is read and answered,
//! up to reth's auth-server limit ([`AUTH_MAX_REQUEST_BYTES`], 128 MiB); a request without a
//! valid JWT is refused (401).

use crate::common;

use gigagas_rpc::{auth::JwtSecret, serve_http_auth, AUTH_MAX_REQUEST_BYTES};
use std::io::{Read, Write};
use std::net::SocketAddr;

/// POSTs `body` to `addr` over plain HTTP/1.1 (with `token` as the bearer token) and returns the
/// status code and the response's body.
fn post(addr: SocketAddr, token: Option<&str>, body: &[u8]) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(token) = token {
        head += &format!("Authorization: Bearer {token}\r\n");
    }
    head += "\r\n";
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default().to_string();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auth_server_takes_requests_beyond_ten_mib() {
    let dir = tempfile::tempdir().unwrap();
    let (module, _genesis, _engine) = common::node(dir.path(), &[]);
    let secret = JwtSecret::random().unwrap();
    let token = secret.token();
    let (addr, handle) =
        serve_http_auth("127.0.0.1:0".parse().unwrap(), module, secret).await.unwrap();
    // engine_exchangeCapabilities with one 12 MiB capability: over jsonrpsee's default limit.
    let big = "x".repeat(12 << 20);
    let request = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "engine_exchangeCapabilities", "params": [[big]]
    });
    let body = serde_json::to_vec(&request).unwrap();
    assert!(body.len() > 10 << 20 && body.len() < AUTH_MAX_REQUEST_BYTES as usize);
    let (status, answer) = tokio::task::spawn_blocking({
        let body = body.clone();
        move || post(addr, Some(&token), &body)
    })
    .await
    .unwrap();
    assert_eq!(status, 200, "{}", &answer[..answer.len().min(300)]);
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let methods = answer["result"].as_array().expect("a list of the node's Engine API methods");
    assert!(methods.iter().any(|m| m == "engine_newPayloadV4"), "{answer}");
    // Without the JWT: refused before the body is looked at.
    let (status, _) = tokio::task::spawn_blocking(move || post(addr, None, b"{}")).await.unwrap();
    assert_eq!(status, 401);
    handle.stop().unwrap();
}
