//! `gigagas-bench replay`: a generated Amsterdam chain replayed into a node launched here (the
//! node's own flag parser, metrics on): every block VALID through `engine_newPayloadV5` and a
//! forkchoice update, run by the parallel executor, the node's head the chain's last block, the
//! stages read from its metrics, and CSV/JSON written.

use clap::Parser;
use gigagas_node::{launch, NodeArgs};
use std::process::Command;

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    node: NodeArgs,
}

#[test]
fn a_generated_chain_replays_over_the_engine_api() {
    let (chain, info) = super::gen_chain("amsterdam", 3);
    assert!(chain.path().join("bal.rlp").is_file(), "the Amsterdam variant writes its BALs");

    let datadir = tempfile::tempdir().unwrap();
    let metrics = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let genesis = chain.path().join("genesis.json").display().to_string();
    let dd = datadir.path().display().to_string();
    let m = metrics.to_string();
    let flags = [
        "node",
        "--datadir",
        &dd,
        "--chain",
        &genesis,
        "--authrpc.port",
        "0",
        "--http.port",
        "0",
        "--engine.threads",
        "2",
        "--disable-network",
        "--metrics",
        &m,
    ];
    let args = Flags::try_parse_from(flags).unwrap().node;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let node = runtime.block_on(launch(&args)).unwrap();

    let out = tempfile::tempdir().unwrap();
    let replay = Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .arg("replay")
        .arg("--chain")
        .arg(chain.path())
        .args(["--engine", &format!("http://{}", node.auth), "--jwt-secret"])
        .arg(&node.jwt_path)
        .args(["--metrics", &format!("http://{metrics}/metrics"), "--json", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(replay.status.success(), "{}", String::from_utf8_lossy(&replay.stderr));
    let report: serde_json::Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(report["blocks"], 3);
    assert_eq!(report["gas"], info["gas_used"]);
    for stage in ["recovery", "execution", "state_root", "commit"] {
        assert!(report["stages"][stage].as_f64().unwrap() > 0.0, "{stage}: {report}");
    }
    let csv = std::fs::read_to_string(out.path().join("replay.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "a header and a row per block: {csv}");

    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1,
        "method": "eth_getBlockByNumber", "params": ["latest", false]});
    let head = ureq::post(&format!("http://{}", node.http))
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let head: serde_json::Value = serde_json::from_str(&head).unwrap();
    assert_eq!(head["result"]["hash"], info["blocks"][2]["hash"]);
    let text = ureq::get(&format!("http://{metrics}/metrics"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    assert!(
        text.contains("gigagas_executor_blocks_total{executor=\"parallel\"} 3"),
        "the BAL payloads ran on the parallel executor:\n{text}"
    );
    runtime.block_on(node.shutdown()).unwrap();
}
