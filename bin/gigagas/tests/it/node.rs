//! `gigagas node`: JSON-RPC open, the Engine API behind JWT, bad input answered with JSON-RPC
//! errors while the node keeps serving.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
};

fn post(url: &str, body: &str, jwt: Option<&str>) -> (u16, String) {
    let mut request = ureq::post(url).header("Content-Type", "application/json");
    if let Some(jwt) = jwt {
        request = request.header("Authorization", &format!("Bearer {jwt}"));
    }
    let mut response =
        request.config().http_status_as_error(false).build().send(body).expect("node reachable");
    let status = response.status().as_u16();
    (status, response.body_mut().read_to_string().expect("body"))
}

#[test]
fn node_serves_rpc_and_guards_the_engine_api() {
    let genesis = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/execution-apis/tests/genesis.json");
    assert!(genesis.is_file(), "{} is missing: needs the shared data", genesis.display());
    let datadir = tempfile::tempdir().expect("tempdir");
    let mut node = Command::new(env!("CARGO_BIN_EXE_gigagas"))
        .args(["node", "--http.port", "0", "--authrpc.port", "0", "--chain"])
        .arg(&genesis)
        .arg("--datadir")
        .arg(datadir.path())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node");
    // "… JSON-RPC http://ADDR; Engine API http://ADDR (JWT secret PATH)"
    let mut line = String::new();
    BufReader::new(node.stderr.take().expect("stderr")).read_line(&mut line).expect("banner");
    let urls: Vec<&str> = line
        .split("http://")
        .skip(1)
        .map(|s| s.split([';', ' ']).next().expect("address"))
        .collect();
    let (http, engine) = (format!("http://{}", urls[0]), format!("http://{}", urls[1]));

    let (status, body) = post(&http, r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#, None);
    assert_eq!(status, 200);
    assert!(body.contains(r#""result":"0xc72dd9d5e883e""#), "{body}");
    // Unknown method, malformed params, malformed JSON: JSON-RPC errors, node still serving.
    let (_, body) = post(&http, r#"{"jsonrpc":"2.0","id":2,"method":"eth_nope"}"#, None);
    assert!(body.contains("-32601"), "{body}");
    let (_, body) = post(
        &http,
        r#"{"jsonrpc":"2.0","id":3,"method":"eth_getBalance","params":["0xzz"]}"#,
        None,
    );
    assert!(body.contains("-32602"), "{body}");
    let (_, body) = post(&http, r#"{"jsonrpc":"2.0","id":4,"method""#, None);
    assert!(body.contains("-32700"), "{body}");

    // The Engine API: no token, a token of another secret, an old token → 401; a good one works.
    let secret_hex =
        std::fs::read_to_string(datadir.path().join("jwt.hex")).expect("jwt.hex written");
    let secret = gigagas_rpc::auth::JwtSecret::from_hex(&secret_hex).expect("hex secret");
    let fcu = r#"{"jsonrpc":"2.0","id":5,"method":"engine_forkchoiceUpdatedV3","params":[{"headBlockHash":"0x44fd89d504659cd58f48f4796b77a7e7012cf296a2409afa2f6c3cb99b5b3d99","safeBlockHash":"0x44fd89d504659cd58f48f4796b77a7e7012cf296a2409afa2f6c3cb99b5b3d99","finalizedBlockHash":"0x44fd89d504659cd58f48f4796b77a7e7012cf296a2409afa2f6c3cb99b5b3d99"},null]}"#;
    assert_eq!(post(&engine, fcu, None).0, 401);
    let other = gigagas_rpc::auth::JwtSecret::random().expect("random");
    assert_eq!(post(&engine, fcu, Some(&other.token())).0, 401);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    assert_eq!(post(&engine, fcu, Some(&secret.token_at(now - 120))).0, 401);
    let (status, body) = post(&engine, fcu, Some(&secret.token()));
    assert_eq!(status, 200);
    assert!(body.contains(r#""status":"VALID""#), "{body}");

    node.kill().expect("kill node");
    node.wait().expect("reap node");
}
