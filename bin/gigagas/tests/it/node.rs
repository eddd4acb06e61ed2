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

/// Starts `gigagas node --datadir DIR --http.port 0 --authrpc.port 0 ARGS…`; returns the
/// process (killed when dropped) and the JSON-RPC and Engine API URLs from its first stderr
/// line ("… JSON-RPC http://ADDR; Engine API http://ADDR (JWT secret PATH)…"). The rest of its
/// log is drained so the node never writes to a closed pipe.
fn start_node(datadir: &Path, args: &[&str]) -> (KillOnDrop, String, String) {
    let (node, http, engine, _) = start_node_with_banner(datadir, args);
    (node, http, engine)
}

/// [`start_node`], also returning the node's first stderr line (its addresses, its p2p
/// multiaddr).
fn start_node_with_banner(datadir: &Path, args: &[&str]) -> (KillOnDrop, String, String, String) {
    let (node, http, engine, banner, _) = start_node_with_log(datadir, args);
    (node, http, engine, banner)
}

/// [`start_node_with_banner`], also returning the node's stderr after the banner as it comes.
fn start_node_with_log(
    datadir: &Path,
    args: &[&str],
) -> (KillOnDrop, String, String, String, std::sync::Arc<std::sync::Mutex<String>>) {
    let mut node = Command::new(env!("CARGO_BIN_EXE_gigagas"))
        .args([
            "node",
            "--http.port",
            "0",
            "--authrpc.port",
            "0",
            "--port",
            "0",
            "--addr",
            "127.0.0.1",
            "--libp2p.addr",
            "127.0.0.1",
            // The namespaces these tests read beside eth (never `testing` on a public port).
            "--http.api",
            "eth,net,web3,admin,debug,txpool",
        ])
        .args(args)
        .arg("--datadir")
        .arg(datadir)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node");
    let mut stderr = BufReader::new(node.stderr.take().expect("stderr"));
    // The banner, after any log line the node's tasks wrote before it.
    let mut line = String::new();
    for _ in 0..50 {
        line.clear();
        stderr.read_line(&mut line).expect("banner");
        if line.contains("parallel executor: one pool of") || line.is_empty() {
            break;
        }
    }
    assert!(line.contains("parallel executor: one pool of"), "banner: {line}");
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let mut kept = kept.lock().unwrap();
            kept.push_str(&line);
            kept.push('\n');
        }
    });
    let urls: Vec<&str> = line
        .split("http://")
        .skip(1)
        .map(|s| s.split([';', ' ']).next().expect("address"))
        .collect();
    let (http, engine) = (format!("http://{}", urls[0]), format!("http://{}", urls[1]));
    (KillOnDrop(node), http, engine, line, log)
}

#[test]
fn node_serves_rpc_and_guards_the_engine_api() {
    let genesis = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/execution-apis/tests/genesis.json");
    assert!(genesis.is_file(), "{} is missing: needs the shared data", genesis.display());
    let datadir = tempfile::tempdir().expect("tempdir");
    let genesis = genesis.to_str().expect("utf-8 path");
    let (_node, http, engine) = start_node(datadir.path(), &["--chain", genesis]);

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
}

/// Kills the child process when dropped (also when a test fails).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn get(url: &str) -> Option<String> {
    let mut response = ureq::get(url).call().ok()?;
    response.body_mut().read_to_string().ok()
}

/// `gigagas node --dev`: its consensus driver makes blocks over the Engine API; the Engine API
/// answers the spec's error codes; a real Prometheus (Debian package `prometheus`, installed by
/// `make deps`) scrapes the node's metrics.
#[test]
fn dev_chain_runs_over_the_engine_api_and_prometheus_scrapes_it() {
    let prometheus = Command::new("prometheus").arg("--version").output();
    assert!(
        prometheus.is_ok_and(|o| o.status.success()),
        "the `prometheus` binary is missing: run `make deps` (apt-get install prometheus)"
    );
    let datadir = tempfile::tempdir().expect("tempdir");
    let metrics_port = free_port();
    let metrics = format!("127.0.0.1:{metrics_port}");
    let (_node, http, engine) =
        start_node(datadir.path(), &["--dev", "--dev.block-time", "0.2", "--metrics", &metrics]);
    let secret_hex = std::fs::read_to_string(datadir.path().join("jwt.hex")).expect("jwt.hex");
    let jwt = gigagas_rpc::auth::JwtSecret::from_hex(&secret_hex).expect("hex").token();

    // Blocks appear: the driver builds, the node executes (parallel, with the BAL), fcU commits.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let number = loop {
        let (_, body) = post(&http, r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}"#, None);
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        let n = u64::from_str_radix(v["result"].as_str().unwrap().trim_start_matches("0x"), 16)
            .expect("quantity");
        if n >= 5 || std::time::Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(number >= 5, "dev chain at block {number} after 30 s");

    // eth_simulateV1 on the dev chain (EIP-7708 in force: the EVM logs ether transfers itself,
    // so `traceTransfers` must not add a second, synthetic log).
    let (_, body) = post(
        &http,
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{"stateOverrides":{"0xc000000000000000000000000000000000000000":{"balance":"0x3e8"}},"calls":[{"from":"0xc000000000000000000000000000000000000000","to":"0xc100000000000000000000000000000000000000","value":"0x3e8"}]}],"traceTransfers":true},"latest"]}"#,
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    let block = &v["result"][0];
    assert_eq!(block["calls"][0]["status"], "0x1", "{body}");
    let logs = block["calls"][0]["logs"].as_array().expect("logs");
    assert_eq!(logs.len(), 1, "one transfer, one log: {body}");
    assert_ne!(logs[0]["address"], "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee", "{body}");
    assert_eq!(
        logs[0]["topics"][0], "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
        "{body}"
    );
    assert_eq!(logs[0]["blockHash"], block["hash"], "{body}");

    // Engine API answers.
    let call = |body: &str| post(&engine, body, Some(&jwt)).1;
    let caps = call(
        r#"{"jsonrpc":"2.0","id":1,"method":"engine_exchangeCapabilities","params":[["engine_newPayloadV5"]]}"#,
    );
    assert!(caps.contains("engine_newPayloadV5") && caps.contains("engine_getPayloadV6"), "{caps}");
    let version = call(
        r#"{"jsonrpc":"2.0","id":2,"method":"engine_getClientVersionV1","params":[{"code":"LS","name":"lodestar","version":"1","commit":"0x00000000"}]}"#,
    );
    assert!(version.contains(r#""code":"GG""#), "{version}");
    let unknown = call(
        r#"{"jsonrpc":"2.0","id":3,"method":"engine_getPayloadV6","params":["0x0000000000000001"]}"#,
    );
    assert!(unknown.contains("-38001"), "{unknown}");
    // forkchoiceUpdatedV3 cannot carry Amsterdam attributes: -38005.
    let head = post(
        &http,
        r#"{"jsonrpc":"2.0","id":4,"method":"eth_getBlockByNumber","params":["latest",false]}"#,
        None,
    )
    .1;
    let head: serde_json::Value = serde_json::from_str(&head).expect("json");
    let hash = head["result"]["hash"].as_str().expect("hash");
    let fcu_v3 = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"engine_forkchoiceUpdatedV3","params":[{{"headBlockHash":"{hash}","safeBlockHash":"{hash}","finalizedBlockHash":"{hash}"}},{{"timestamp":"0xffffffff","prevRandao":"0x{z}","suggestedFeeRecipient":"0x{a}","withdrawals":[],"parentBeaconBlockRoot":"0x{z}"}}]}}"#,
        z = "00".repeat(32),
        a = "00".repeat(20)
    );
    assert!(call(&fcu_v3).contains("-38005"), "{}", call(&fcu_v3));
    let malformed = call(
        r#"{"jsonrpc":"2.0","id":6,"method":"engine_newPayloadV5","params":[{"parentHash":"0x01"},[],"0x00"]}"#,
    );
    assert!(malformed.contains("-32602"), "{malformed}");
    // A payload the node built, sent back with another BAL: INVALID (the BAL hash is part of
    // the header, so the block hash no longer matches), and the node still takes the original.
    let fcu_v4 = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"engine_forkchoiceUpdatedV4","params":[{{"headBlockHash":"{hash}","safeBlockHash":"0x{z}","finalizedBlockHash":"0x{z}"}},{{"timestamp":"0xfffffffff","prevRandao":"0x{z}","suggestedFeeRecipient":"0x{a}","withdrawals":[],"parentBeaconBlockRoot":"0x{z}","slotNumber":"0x1"}}]}}"#,
        z = "00".repeat(32),
        a = "00".repeat(20)
    );
    let answer: serde_json::Value = serde_json::from_str(&call(&fcu_v4)).expect("json");
    let id = answer["result"]["payloadId"].as_str().expect("payload id").to_string();
    let get_payload =
        format!(r#"{{"jsonrpc":"2.0","id":10,"method":"engine_getPayloadV6","params":["{id}"]}}"#);
    let envelope: serde_json::Value = serde_json::from_str(&call(&get_payload)).expect("json");
    let payload = envelope["result"]["executionPayload"].clone();
    let new_payload = |p: &serde_json::Value| {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 11, "method": "engine_newPayloadV5",
            "params": [p, [], format!("0x{}", "00".repeat(32)), []]});
        let answer: serde_json::Value =
            serde_json::from_str(&call(&body.to_string())).expect("json");
        answer["result"]["status"].as_str().map(str::to_string)
    };
    let mut tampered = payload.clone();
    tampered["blockAccessList"] = serde_json::json!("0xc0");
    assert_eq!(new_payload(&tampered).as_deref(), Some("INVALID"));
    assert_eq!(new_payload(&payload).as_deref(), Some("VALID"));
    // Engine API calls are counted per method, errors apart; a method the server does not
    // serve is counted as `other` (its name never becomes a label).
    assert!(call(r#"{"jsonrpc":"2.0","id":12,"method":"engine_nope_0x1234"}"#).contains("-32601"));
    let text = get(&format!("http://{metrics}/metrics")).expect("metrics endpoint");
    let sample = |name: &str, method: &str| -> f64 {
        text.lines()
            .filter(|l| {
                l.starts_with(&format!("{name}{{"))
                    && l.contains(r#"server="auth""#)
                    && l.contains(&format!(r#"method="{method}""#))
            })
            .map(|l| l.rsplit(' ').next().expect("value").parse::<f64>().expect("sample"))
            .sum()
    };
    assert_eq!(sample("gigagas_rpc_calls_total", "engine_exchangeCapabilities"), 1.0, "{text}");
    assert_eq!(sample("gigagas_rpc_calls_total", "engine_getPayloadV6"), 2.0, "{text}");
    assert_eq!(sample("gigagas_rpc_call_errors_total", "engine_getPayloadV6"), 1.0, "{text}");
    assert_eq!(sample("gigagas_rpc_calls_total", "engine_newPayloadV5"), 3.0, "{text}");
    assert_eq!(sample("gigagas_rpc_call_errors_total", "engine_newPayloadV5"), 1.0, "{text}");
    assert!(sample("gigagas_rpc_calls_total", "other") >= 1.0, "{text}");
    assert!(!text.contains("engine_nope_0x1234"), "an unserved method became a label");
    // A request over `--rpc.max-request-size` (15 MB by default) is refused and the node
    // keeps serving.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"eth_chainId","params":["{}"]}}"#,
        "0".repeat(16_000_000)
    );
    // Refused with 413, or the connection closed while sending.
    let refused = ureq::post(&http)
        .header("Content-Type", "application/json")
        .config()
        .http_status_as_error(false)
        .build()
        .send(&big)
        .map(|r| r.status().as_u16());
    assert!(!matches!(refused, Ok(200)), "a 16 MB request was accepted");
    let (_, body) = post(&http, r#"{"jsonrpc":"2.0","id":8,"method":"eth_chainId"}"#, None);
    assert!(body.contains(r#""result":"0x539""#), "{body}");

    // A real Prometheus scrapes the node.
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gigagas\n    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
        ),
    )
    .expect("write config");
    let prom_port = free_port();
    let prometheus = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus");
    let _prometheus = KillOnDrop(prometheus);
    let query = format!(
        "http://127.0.0.1:{prom_port}/api/v1/query?query=gigagas_executor_blocks_total%7Bexecutor%3D%22parallel%22%7D"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let scraped = loop {
        if let Some(body) = get(&query) {
            let v: serde_json::Value = serde_json::from_str(&body).expect("prometheus json");
            let value = v["data"]["result"][0]["value"][1].as_str().map(str::to_string);
            if let Some(value) = value {
                break Some(value.parse::<f64>().expect("sample"));
            }
        }
        if std::time::Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    let blocks = scraped.expect("Prometheus never scraped gigagas_executor_blocks_total");
    assert!(blocks >= 1.0, "Prometheus saw {blocks} parallel blocks");
}

/// Every metric the Grafana dashboard queries is one the node exports (declared in
/// crates/node/src/metrics.rs, or counted by gigagas-rpc's middleware under the names of
/// crates/rpc/src/metrics.rs and limit.rs, which the node describes), and the dashboard is
/// valid JSON.
#[test]
fn dashboard_queries_only_metrics_the_node_exports() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dashboard = std::fs::read_to_string(root.join("etc/grafana/dashboards/gigagas.json"))
        .expect("etc/grafana/dashboards/gigagas.json");
    let json: serde_json::Value = serde_json::from_str(&dashboard).expect("dashboard JSON");
    // Names the node describes, and those of the RPC middleware, which it describes through
    // gigagas-rpc's constants.
    let source =
        ["crates/node/src/metrics.rs", "crates/rpc/src/metrics.rs", "crates/rpc/src/limit.rs"]
            .map(|file| std::fs::read_to_string(root.join(file)).expect(file))
            .concat();
    let mut names = Vec::new();
    for panel in json["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("expr");
            let mut rest = expr;
            while let Some(i) = rest.find("gigagas_") {
                let tail = &rest[i..];
                let end = tail
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(tail.len());
                let name = &tail[..end];
                let base = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| name.strip_suffix(s))
                    .unwrap_or(name);
                names.push(base.to_string());
                rest = &tail[end..];
            }
        }
    }
    assert!(names.len() >= 15, "dashboard queries {} metrics", names.len());
    for name in names {
        assert!(source.contains(&format!("\"{name}\"")), "dashboard queries {name}, not exported");
    }
}

/// SIGTERM (what systemd and `docker stop` send): the node stops accepting, lets the engine
/// finish the message in hand, flushes the store and exits 0; restarted on the same datadir it
/// serves every block it had made canonical.
#[test]
fn sigterm_shuts_down_cleanly_and_keeps_the_chain() {
    let datadir = tempfile::tempdir().unwrap();
    let mut node = Command::new(env!("CARGO_BIN_EXE_gigagas"))
        .args(["node", "--http.port", "0", "--authrpc.port", "0", "--port", "0"])
        .args(["--addr", "127.0.0.1", "--engine.threads", "2"])
        .args(["--dev", "--dev.block-time", "0.2"])
        .arg("--datadir")
        .arg(datadir.path())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node");
    let mut stderr = BufReader::new(node.stderr.take().expect("stderr"));
    let mut banner = String::new();
    stderr.read_line(&mut banner).expect("banner");
    assert!(banner.contains("one pool of 2 workers"), "banner: {banner}");
    let http = format!(
        "http://{}",
        banner.split("JSON-RPC http://").nth(1).and_then(|s| s.split(';').next()).expect("url")
    );
    let rest = std::thread::spawn(move || stderr.lines().map_while(Result::ok).collect::<Vec<_>>());
    let number = |url: &str| {
        let (_, body) = post(url, r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}"#, None);
        let v: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        u64::from_str_radix(v["result"].as_str().expect("result").trim_start_matches("0x"), 16)
            .expect("quantity")
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut seen = 0;
    while seen < 3 {
        assert!(std::time::Instant::now() < deadline, "no blocks made");
        std::thread::sleep(std::time::Duration::from_millis(100));
        seen = number(&http);
    }
    // The default public port serves eth, net and web3 only: adding peers and building blocks
    // on request are not there (-32601, as geth answers), web3 is.
    let answer = |method: &str, params: &str| -> serde_json::Value {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
        serde_json::from_str(&post(&http, &body, None).1).expect("JSON")
    };
    for (method, params) in [
        ("admin_addPeer", r#"["enode://ab@127.0.0.1:1"]"#),
        ("admin_nodeInfo", "[]"),
        ("testing_buildBlockV1", "[]"),
        ("debug_getRawBlock", r#"["latest"]"#),
        ("txpool_status", "[]"),
    ] {
        assert_eq!(answer(method, params)["error"]["code"], -32601, "{method} on the default port");
    }
    let version = answer("web3_clientVersion", "[]");
    assert!(version["result"].as_str().is_some_and(|v| v.starts_with("gigagas/v")), "{version}");
    assert!(answer("net_version", "[]")["result"].is_string());
    let term = Command::new("kill").args(["-TERM", &node.id().to_string()]).status().unwrap();
    assert!(term.success());
    let status = node.wait().expect("wait");
    let log = rest.join().expect("stderr").join("\n");
    assert!(status.success(), "exit {status:?}; log:\n{log}");
    assert!(log.contains("gigagas node: stopped; store flushed"), "{log}");

    let (_node, http, _) = start_node(datadir.path(), &[]);
    assert!(number(&http) >= seen, "blocks lost across a clean shutdown");
}

/// Two nodes on loopback: the second dials the first's p2p address (printed at startup) as its
/// bootnode; both count one peer on `net_peerCount`.
#[test]
fn two_nodes_connect_over_libp2p() {
    let genesis = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testing/dev-genesis.json");
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = Command::new(env!("CARGO_BIN_EXE_gigagas"))
        .args(["node", "--http.port", "0", "--authrpc.port", "0", "--port", "0"])
        .args(["--addr", "127.0.0.1", "--libp2p.addr", "127.0.0.1", "--chain", genesis])
        .arg("--datadir")
        .arg(a_dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node");
    let mut stderr = BufReader::new(a.stderr.take().expect("stderr"));
    let mut banner = String::new();
    stderr.read_line(&mut banner).expect("banner");
    std::thread::spawn(move || stderr.lines().for_each(drop));
    let _a = KillOnDrop(a);
    let bootnode = banner
        .split("; libp2p ")
        .nth(1)
        .and_then(|s| s.split([';', ' ', '\n']).next())
        .expect("p2p");
    assert!(bootnode.starts_with("/ip4/127.0.0.1/tcp/") && bootnode.contains("/p2p/"), "{banner}");
    let a_http = format!(
        "http://{}",
        banner.split("JSON-RPC http://").nth(1).and_then(|s| s.split(';').next()).expect("url")
    );
    let (_b, b_http, _) =
        start_node(b_dir.path(), &["--chain", genesis, "--libp2p.bootnodes", bootnode]);
    let peers =
        |url: &str| post(url, r#"{"jsonrpc":"2.0","id":1,"method":"net_peerCount"}"#, None).1;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !(peers(&b_http).contains(r#""result":"0x1""#)
        && peers(&a_http).contains(r#""result":"0x1""#))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no peer: {} / {}",
            peers(&a_http),
            peers(&b_http)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let listening = post(&b_http, r#"{"jsonrpc":"2.0","id":1,"method":"net_listening"}"#, None).1;
    assert!(listening.contains(r#""result":true"#), "{listening}");
}

/// The Engine API path of a node that lacks a payload's parent: a node paired with a consensus client gets a payload whose
/// parent it lacks, answers SYNCING, fetches the missing blocks from its peer (eth/69 headers
/// and bodies, EIP-8159 BALs), executes them, and then answers the same payload VALID and
/// makes it its head.
#[test]
fn a_syncing_payload_is_fetched_from_peers_then_valid() {
    let genesis = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testing/dev-genesis.json");
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A: a dev chain (its miner drives its engine), serving sync requests from its store.
    let (_a, a_http, a_engine, banner) = start_node_with_banner(
        a_dir.path(),
        &["--chain", genesis, "--dev", "--dev.block-time", "0.2", "--gossip", "none"],
    );
    let bootnode = banner
        .split("; libp2p ")
        .nth(1)
        .and_then(|s| s.split([';', ' ', '\n']).next())
        .expect("p2p");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, body) =
            post(&a_http, r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}"#, None);
        if !body.contains(r#""result":"0x0""#)
            && !body.contains(r#""result":"0x1""#)
            && !body.contains(r#""result":"0x2""#)
            && !body.contains(r#""result":"0x3""#)
        {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "A's dev chain did not reach block 4");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // A payload built by A on its head (the Engine API, as a consensus client would ask).
    let jwt_of = |dir: &Path| {
        let hex = std::fs::read_to_string(dir.join("jwt.hex")).expect("jwt.hex");
        gigagas_rpc::auth::JwtSecret::from_hex(&hex).expect("hex").token()
    };
    let a_jwt = jwt_of(a_dir.path());
    let (_, head) = post(
        &a_http,
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}"#,
        None,
    );
    let head: serde_json::Value = serde_json::from_str(&head).expect("json");
    let head_hash = head["result"]["hash"].as_str().expect("hash").to_string();
    let (z, a) = ("00".repeat(32), "00".repeat(20));
    let fcu = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"engine_forkchoiceUpdatedV4","params":[{{"headBlockHash":"{head_hash}","safeBlockHash":"0x{z}","finalizedBlockHash":"0x{z}"}},{{"timestamp":"0xfffffffff","prevRandao":"0x{z}","suggestedFeeRecipient":"0x{a}","withdrawals":[],"parentBeaconBlockRoot":"0x{z}","slotNumber":"0x1"}}]}}"#
    );
    let answer: serde_json::Value =
        serde_json::from_str(&post(&a_engine, &fcu, Some(&a_jwt)).1).expect("json");
    let id = answer["result"]["payloadId"].as_str().expect("payload id").to_string();
    let get =
        format!(r#"{{"jsonrpc":"2.0","id":3,"method":"engine_getPayloadV6","params":["{id}"]}}"#);
    let envelope: serde_json::Value =
        serde_json::from_str(&post(&a_engine, &get, Some(&a_jwt)).1).expect("json");
    let payload = envelope["result"]["executionPayload"].clone();
    let payload_hash = payload["blockHash"].as_str().expect("blockHash").to_string();

    // B: the same chain, no dev miner, A as its bootnode; it has only the genesis.
    let (_b, _b_http, b_engine, _) =
        start_node_with_banner(b_dir.path(), &["--chain", genesis, "--libp2p.bootnodes", bootnode]);
    let b_jwt = jwt_of(b_dir.path());
    let new_payload = || {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "engine_newPayloadV5",
            "params": [payload, [], format!("0x{z}"), []]});
        let answer: serde_json::Value =
            serde_json::from_str(&post(&b_engine, &body.to_string(), Some(&b_jwt)).1)
                .expect("json");
        answer["result"]["status"].as_str().map(str::to_string)
    };
    // SYNCING at first (no parent), VALID once the ancestors came from A.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut answers = vec![new_payload()];
    while answers.last().unwrap().as_deref() != Some("VALID") {
        assert!(std::time::Instant::now() < deadline, "answers: {answers:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
        answers.push(new_payload());
    }
    assert_eq!(answers[0].as_deref(), Some("SYNCING"), "answers: {answers:?}");
    let fcu_b = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"engine_forkchoiceUpdatedV4","params":[{{"headBlockHash":"{payload_hash}","safeBlockHash":"0x{z}","finalizedBlockHash":"0x{z}"}},null]}}"#
    );
    let answer: serde_json::Value =
        serde_json::from_str(&post(&b_engine, &fcu_b, Some(&b_jwt)).1).expect("json");
    assert_eq!(answer["result"]["payloadStatus"]["status"], "VALID", "{answer}");
}

/// `--dev --dev.replay FILE` on real data: the execution-apis chain (54 blocks) fed one per
/// slot through `newPayload` and forkchoice updates ends on the head the suite's own
/// `eth_getBlockByNumber("latest")` fixture names.
#[test]
fn dev_replay_feeds_a_chain_file_to_its_head() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/execution-apis/tests");
    assert!(dir.is_dir(), "../shared/data/execution-apis is missing ({})", dir.display());
    let fixture = std::fs::read_to_string(dir.join("eth_getBlockByNumber/get-latest.io"))
        .expect("get-latest.io");
    let answer = fixture.lines().find_map(|l| l.strip_prefix("<< ")).expect("a response line");
    let answer: serde_json::Value = serde_json::from_str(answer).expect("json");
    let (want_hash, want_number) = (
        answer["result"]["hash"].as_str().expect("hash").to_string(),
        answer["result"]["number"].as_str().expect("number").to_string(),
    );
    let datadir = tempfile::tempdir().expect("tempdir");
    let genesis = dir.join("genesis.json");
    let chain = dir.join("chain.rlp");
    let (_node, http, _) = start_node(
        datadir.path(),
        &[
            "--chain",
            genesis.to_str().expect("utf-8 path"),
            "--dev",
            "--dev.block-time",
            "0.05",
            "--dev.replay",
            chain.to_str().expect("utf-8 path"),
            "--disable-network",
        ],
    );
    let latest = || {
        let (_, body) = post(
            &http,
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}"#,
            None,
        );
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        (v["result"]["number"].as_str().map(str::to_string), v["result"]["hash"].clone())
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while latest().0.as_deref() != Some(want_number.as_str()) {
        assert!(std::time::Instant::now() < deadline, "replay stopped at {:?}", latest());
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(latest().1, want_hash.as_str(), "the replayed head is another block");
}

/// Sync over devp2p without a consensus client: A runs a dev chain and serves
/// it from its store over RLPx/eth; B, given A's enode (printed at startup) as a trusted peer
/// and A's head as `--debug.tip`, downloads every block from A, executes it, and reaches the
/// tip with A's state root; then each sees the other in `admin_peers` and `net_peerCount`, and
/// a transaction sent to B reaches A's pool over eth and is mined by A.
#[test]
fn a_node_syncs_from_another_over_devp2p_to_the_debug_tip() {
    let genesis = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testing/dev-genesis.json");
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_a, a_http, _, banner) = start_node_with_banner(
        a_dir.path(),
        &[
            "--chain",
            genesis,
            "--dev",
            "--dev.block-time",
            "0.2",
            "--libp2p.disable",
            // Discovery v5 only: its ENR is the one admin_nodeInfo shows, C's bootnode below.
            "--disable-discv4-discovery",
            "--enable-discv5-discovery",
            "--discovery.v5.port",
            "0",
        ],
    );
    let enode = enode_in(&banner);
    assert!(enode.starts_with("enode://") && enode.contains("@127.0.0.1:"), "{banner}");
    let block = |url: &str, tag: &str| -> serde_json::Value {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["{tag}",false]}}"#
        );
        serde_json::from_str::<serde_json::Value>(&post(url, &body, None).1).expect("json")
            ["result"]
            .clone()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let number = |b: &serde_json::Value| {
        b["number"].as_str().and_then(|n| u64::from_str_radix(n.trim_start_matches("0x"), 16).ok())
    };
    while number(&block(&a_http, "latest")).is_none_or(|n| n < 6) {
        assert!(std::time::Instant::now() < deadline, "A's dev chain did not reach block 6");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let tip = block(&a_http, "0x6");
    let tip_hash = tip["hash"].as_str().expect("hash").to_string();
    let (_b, b_http, _) = start_node(
        b_dir.path(),
        &[
            "--chain",
            genesis,
            "--libp2p.disable",
            "--trusted-peers",
            enode,
            "--debug.tip",
            &tip_hash,
        ],
    );
    wait_for_tip(&b_http, &tip);
    // The admin_ namespace and net_peerCount see the devp2p session from both sides.
    let call = |url: &str, method: &str, params: &str| -> serde_json::Value {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
        serde_json::from_str(&post(url, &body, None).1).expect("json")
    };
    let info = &call(&a_http, "admin_nodeInfo", "[]")["result"];
    assert_eq!(info["enode"], enode);
    assert!(info["enr"].as_str().is_some_and(|e| e.starts_with("enr:-")), "{info}");
    assert_eq!(info["protocols"]["eth"]["head"].as_str().map(str::len), Some(66), "{info}");
    let id = info["id"].as_str().expect("id");
    let b_peers = call(&b_http, "admin_peers", "[]")["result"].clone();
    assert_eq!(b_peers.as_array().map(Vec::len), Some(1), "{b_peers}");
    assert_eq!(b_peers[0]["id"], id, "B's peer is A, by geth's id");
    assert_eq!(b_peers[0]["enode"], enode);
    assert_eq!(b_peers[0]["network"]["inbound"], false);
    assert_eq!(b_peers[0]["network"]["static"], true);
    let a_peers = call(&a_http, "admin_peers", "[]")["result"].clone();
    assert_eq!(a_peers[0]["network"]["inbound"], true, "{a_peers}");
    assert_eq!(call(&a_http, "net_peerCount", "[]")["result"], "0x1");
    let refused = call(&a_http, "admin_addPeer", r#"["enode://nope"]"#);
    assert!(
        refused["error"]["message"].as_str().is_some_and(|m| m.starts_with("invalid enode")),
        "{refused}"
    );
    // C knows A only by its discovery v5 ENR (no trusted peer): it finds A by discv5 (A's
    // `eth` entry on C's fork), dials it and syncs to the tip.
    let c_dir = tempfile::tempdir().unwrap();
    let a_enr = info["enr"].as_str().expect("A's ENR").to_string();
    let (_c, c_http, _) = start_node(
        c_dir.path(),
        &[
            "--chain",
            genesis,
            "--libp2p.disable",
            "--bootnodes",
            &a_enr,
            "--disable-discv4-discovery",
            "--enable-discv5-discovery",
            "--discovery.v5.port",
            "0",
            "--debug.tip",
            &tip_hash,
        ],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while block(&c_http, "latest")["hash"].as_str() != Some(tip_hash.as_str()) {
        assert!(std::time::Instant::now() < deadline, "C did not reach the tip through discv5");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // A transaction sent to B (no miner) is announced over eth, fetched by A, and mined in
    // A's chain.
    let raw = dev_transfer(0);
    let sent = call(&b_http, "eth_sendRawTransaction", &format!(r#"["{raw}"]"#));
    let hash = sent["result"].as_str().unwrap_or_else(|| panic!("{sent}")).to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let receipt = call(&a_http, "eth_getTransactionReceipt", &format!(r#"["{hash}"]"#));
        if receipt["result"]["status"] == "0x1" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not mined by A: {receipt}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The devp2p enode URL in a node's startup banner.
fn enode_in(banner: &str) -> &str {
    banner
        .split("; devp2p ")
        .nth(1)
        .and_then(|s| s.split([';', ' ', '\n']).next())
        .expect("A's enode in its banner")
}

/// Waits up to 60 s for the node at `url` to have `tip` (a block's JSON) as its head, then
/// checks its state root.
fn wait_for_tip(url: &str, tip: &serde_json::Value) {
    let tip_hash = tip["hash"].as_str().expect("hash");
    let body =
        r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}"#;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let head = serde_json::from_str::<serde_json::Value>(&post(url, body, None).1)
            .expect("json")["result"]
            .clone();
        if head["hash"].as_str() == Some(tip_hash) {
            assert_eq!(head["stateRoot"], tip["stateRoot"]);
            break;
        }
        assert!(std::time::Instant::now() < deadline, "B's head {head}, the tip {tip_hash}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A signed EIP-1559 transfer of 1 wei on the dev chain from the first Hardhat key, nonce
/// `nonce`, as `0x` hex.
fn dev_transfer(nonce: u64) -> String {
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
    use alloy_eips::eip2718::Encodable2718;
    use alloy_primitives::{hex, Address, Signature, TxKind, U256};
    let key = k256::ecdsa::SigningKey::from_slice(&hex!(
        "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
    ))
    .unwrap();
    let tx = TxEip1559 {
        chain_id: 1337,
        nonce,
        gas_limit: 210_000,
        max_fee_per_gas: 20_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(Address::repeat_byte(0x42)),
        value: U256::from(1),
        ..Default::default()
    };
    let (sig, recid) = key.sign_prehash_recoverable(tx.signature_hash().as_slice()).unwrap();
    let signature = Signature::new(
        U256::from_be_slice(&sig.r().to_bytes()),
        U256::from_be_slice(&sig.s().to_bytes()),
        recid.is_y_odd(),
    );
    let tx: TxEnvelope = tx.into_signed(signature).into();
    format!("0x{}", hex::encode(tx.encoded_2718()))
}

/// `--syncmode snap` between two gigagas nodes: A runs a dev chain, with transfers sent to it
/// past block 8; B, new, given A as its trusted peer and A's block 70 as `--debug.tip`,
/// downloads the state of block 6 (64 below the tip) from A over snap, every range proven,
/// builds its tries, holds blocks 1 to 6 whole (bodies and receipts), then applies blocks 7
/// to 70 from their BALs (snap/2's catch-up), with their receipts from A: it reaches the tip
/// with A's state root, blocks, receipts and `eth_getProof` answer as A's, and `eth_syncing`
/// is `false` once there.
#[test]
fn a_new_node_snap_syncs_from_another_and_catches_up_on_bals() {
    let genesis = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testing/dev-genesis.json");
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (_a, a_http, _, banner) = start_node_with_banner(
        a_dir.path(),
        &["--chain", genesis, "--dev", "--dev.block-time", "0.15", "--libp2p.disable"],
    );
    let enode = enode_in(&banner);
    let call = |url: &str, method: &str, params: &str| -> serde_json::Value {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
        serde_json::from_str::<serde_json::Value>(&post(url, &body, None).1).expect("json")
            ["result"]
            .clone()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while call(&a_http, "eth_getBlockByNumber", r#"["0x8",false]"#).is_null() {
        assert!(std::time::Instant::now() < deadline, "A's dev chain did not reach block 8");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let sent: Vec<String> = (0..3)
        .map(|nonce| {
            let raw = dev_transfer(nonce);
            let hash = call(&a_http, "eth_sendRawTransaction", &format!(r#"["{raw}"]"#));
            hash.as_str().expect("a transaction hash").to_string()
        })
        .collect();
    while call(&a_http, "eth_getBlockByNumber", r#"["0x46",false]"#).is_null() {
        assert!(std::time::Instant::now() < deadline, "A's dev chain did not reach block 70");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let tip = call(&a_http, "eth_getBlockByNumber", r#"["0x46",false]"#);
    let tip_hash = tip["hash"].as_str().expect("hash").to_string();
    let (_b, b_http, _, _, b_log) = start_node_with_log(
        b_dir.path(),
        &[
            "--chain",
            genesis,
            "--libp2p.disable",
            "--syncmode",
            "snap",
            "--trusted-peers",
            enode,
            "--debug.tip",
            &tip_hash,
        ],
    );
    wait_for_tip(&b_http, &tip);
    // The pivot and the blocks below it (the history kept) are held whole: bodies and
    // receipts.
    for block in ["0x1", "0x6"] {
        let full = format!(r#"["{block}",true]"#);
        let a_block = call(&a_http, "eth_getBlockByNumber", &full);
        assert!(!a_block.is_null());
        assert_eq!(call(&b_http, "eth_getBlockByNumber", &full), a_block);
        let receipts = format!(r#"["{block}"]"#);
        assert_eq!(
            call(&b_http, "eth_getBlockReceipts", &receipts),
            call(&a_http, "eth_getBlockReceipts", &receipts)
        );
    }
    assert_eq!(call(&b_http, "eth_syncing", "[]"), serde_json::json!(false));
    // The blocks above the pivot came from their BALs, with A's receipts.
    assert!(b_log.lock().unwrap().contains("caught up on BALs"), "{}", b_log.lock().unwrap());
    for hash in &sent {
        let receipt = call(&a_http, "eth_getTransactionReceipt", &format!(r#"["{hash}"]"#));
        let number = receipt["blockNumber"].as_str().expect("mined by A");
        assert!(u64::from_str_radix(&number[2..], 16).unwrap() > 6, "{receipt}");
        assert_eq!(call(&b_http, "eth_getTransactionReceipt", &format!(r#"["{hash}"]"#)), receipt);
    }
    // The beacon-roots contract's storage (written by every block) proven at the tip alike.
    let proof = r#"["0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02",["0x0","0x1"],"0x46"]"#;
    assert_eq!(call(&b_http, "eth_getProof", proof), call(&a_http, "eth_getProof", proof));
}
