//! The public methods' limits: `eth_call`'s time limit (geth's `--rpc.evmtimeout`),
//! `eth_getLogs`'s block range (reth's `--rpc.max-blocks-per-filter`) and the fee a raw
//! transaction may pay (geth's `--rpc.txfeecap`), each answered with the error those clients
//! give; the heavy calls past their class's bound refused with -32005.

use crate::common::{call_message, node_with, signed_transfer};
use serde_json::json;
use std::time::{Duration, Instant};

/// A creation whose init code loops until its gas runs out (JUMPDEST PUSH0 JUMP), with 16M
/// gas: about 4.4 million steps.
fn looping_call() -> serde_json::Value {
    json!({"data": "0x5b5f56", "gas": format!("{:#x}", 16_000_000)})
}

#[tokio::test]
async fn an_eth_call_past_the_evm_timeout_is_aborted_with_geths_message() {
    let dir = tempfile::tempdir().unwrap();
    let (rpc, _, _engine) =
        node_with(dir.path(), &[], |c| c.with_evm_timeout(Some(Duration::from_nanos(1))));
    let answer = call_message(&rpc, "eth_call", vec![looping_call(), json!("latest")]).await;
    assert_eq!(answer, Err((-32000, "execution aborted (timeout = 1ns)".into())));

    // Without a time limit the same call runs until its gas is spent: another answer.
    let dir = tempfile::tempdir().unwrap();
    let (rpc, _, _engine) = node_with(dir.path(), &[], |c| c.with_evm_timeout(None));
    let (code, message) =
        call_message(&rpc, "eth_call", vec![looping_call(), json!("latest")]).await.unwrap_err();
    assert_eq!(code, -32000);
    assert!(message.contains("OutOfGas"), "{message}");
}

#[tokio::test]
async fn eth_get_logs_over_more_blocks_than_the_limit_is_refused_as_reth_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let (rpc, _, _engine) = node_with(dir.path(), &[], |c| c.with_log_limits(5, 20_000));
    let filter = json!({"fromBlock": "0x0", "toBlock": "0x6"});
    let answer = call_message(&rpc, "eth_getLogs", vec![filter]).await;
    assert_eq!(answer, Err((-32602, "invalid argument: query exceeds max block range 5".into())));
    // Within the limit the range is checked against the head as before.
    let filter = json!({"fromBlock": "0x0", "toBlock": "0x5"});
    let (code, message) = call_message(&rpc, "eth_getLogs", vec![filter]).await.unwrap_err();
    assert_eq!((code, message.contains("beyond current head")), (-32602, true), "{message}");
}

#[tokio::test]
async fn a_raw_transaction_paying_more_than_the_fee_cap_is_refused_as_geth_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let (rpc, _, _engine) = node_with(dir.path(), &[], |c| c);
    let to = alloy_primitives::Address::repeat_byte(0x42);
    // 1,000,000 gas at 2,000 gwei: up to 2 ether in fees, over the default cap of 1 ether.
    let (raw, _) = signed_transfer(0, to, 1, 1_000_000, 2_000_000_000_000);
    let answer = call_message(&rpc, "eth_sendRawTransaction", vec![json!(raw)]).await;
    assert_eq!(
        answer,
        Err((-32000, "tx fee (2.00 ether) exceeds the configured cap (1.00 ether)".into()))
    );
    // Within the cap (0.02 ether) the pool takes it.
    let (raw, hash) = signed_transfer(0, to, 1, 1_000_000, 20_000_000_000);
    let answer = call_message(&rpc, "eth_sendRawTransaction", vec![json!(raw)]).await;
    assert_eq!(answer, Ok(json!(hash)));
    // A node with no cap takes the costly one.
    let dir = tempfile::tempdir().unwrap();
    let (rpc, _, _engine) =
        node_with(dir.path(), &[], |c| c.with_tx_fee_cap(alloy_primitives::U256::ZERO));
    let (raw, hash) = signed_transfer(0, to, 1, 1_000_000, 2_000_000_000_000);
    let answer = call_message(&rpc, "eth_sendRawTransaction", vec![json!(raw)]).await;
    assert_eq!(answer, Ok(json!(hash)));
}

/// The answer's error code, `None` for a result.
fn answer_code(addr: std::net::SocketAddr, method: &str, params: serde_json::Value) -> Option<i64> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let (_, answer) = crate::common::post_bytes(addr, body.to_string().as_bytes());
    let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
    answer["error"]["code"].as_i64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heavy_call_past_its_class_running_and_queued_ones_is_refused_at_once_with_32005() {
    let dir = tempfile::tempdir().unwrap();
    let (mut module, _, _engine) = node_with(dir.path(), &[], |c| c);
    // The node's `eth_getLogs` replaced by one that answers only when the test lets it: the
    // server's limit (one heavy call running, one waiting) sees the same method name.
    let release = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    module.remove_method("eth_getLogs").expect("served");
    let gate = release.clone();
    module
        .register_async_method("eth_getLogs", move |_, _, _| {
            let gate = gate.clone();
            async move {
                gate.acquire().await.unwrap().forget();
                Vec::<u8>::new()
            }
        })
        .unwrap();
    let limits = gigagas_rpc::HttpLimits {
        calls: gigagas_rpc::limit::CallLimits { max_running: 1, max_queued: 1 },
        ..Default::default()
    };
    let (addr, handle) =
        gigagas_rpc::serve_http("127.0.0.1:0".parse().unwrap(), module, limits).await.unwrap();
    let logs = move || answer_code(addr, "eth_getLogs", json!([{}]));
    // The first runs (held), the second waits for it.
    let first = tokio::task::spawn_blocking(logs);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = tokio::task::spawn_blocking(logs);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let checks = tokio::task::spawn_blocking(move || {
        // A third call of the same class (chain reads), of another method, is refused at once.
        let started = Instant::now();
        assert_eq!(
            answer_code(addr, "eth_getBlockByNumber", json!(["latest", true])),
            Some(-32005)
        );
        assert_eq!(logs(), Some(-32005));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        // A heavy call of another class (an EVM call) and a cheap call are not held back.
        let quick = json!({"to": "0x00000000000000000000000000000000000000aa"});
        assert_eq!(answer_code(addr, "eth_call", json!([quick, "latest"])), None);
        assert_eq!(answer_code(addr, "eth_blockNumber", json!([])), None);
    });
    checks.await.unwrap();
    assert!(!first.is_finished() && !second.is_finished());
    // Released one after the other: the waiting call ran after the first.
    release.add_permits(1);
    assert_eq!(first.await.unwrap(), None);
    release.add_permits(1);
    assert_eq!(second.await.unwrap(), None);
    // With nothing running, heavy calls are admitted again.
    let quick = json!({"to": "0x00000000000000000000000000000000000000aa"});
    let code = tokio::task::spawn_blocking(move || {
        answer_code(addr, "eth_call", json!([quick, "latest"]))
    })
    .await
    .unwrap();
    assert_eq!(code, None);
    handle.stop().unwrap();
}
