//! Subscriptions over WebSocket and polling filters on a dev chain the engine builds:
//! `newHeads`, `logs` (with `removed: true` after a reorg), `newPendingTransactions` (hashes
//! and whole transactions), geth's filters with their expiry, cap and overflow, and the
//! WebSocket endpoint's bounds (origins, subscriptions per connection, a client that does not
//! read).

use crate::{
    common::{
        build_block, call, call_message, context_with, signed_create, signed_transfer, state,
        Engine,
    },
    ws_client::{Refused, WsClient},
};
use alloy_primitives::{Address, B256};
use gigagas_rpc::{
    auth_module, serve_ws, ws_module, FilterConfig, HttpLimits, RpcContext, RpcModuleSelection,
    ServerHandle, WsConfig,
};
use serde_json::{json, Value};
use std::{net::SocketAddr, sync::Arc, time::Duration};

/// The topic the log emitter logs.
const TOPIC: B256 = B256::repeat_byte(0x77);

/// Init code that logs `42` under [`TOPIC`] and deploys nothing: MSTORE 42 at 0, LOG1 of the
/// 32 bytes at 0.
fn log_emitter() -> Vec<u8> {
    let mut code = vec![0x60, 0x2a, 0x60, 0x00, 0x52, 0x7f];
    code.extend_from_slice(TOPIC.as_slice());
    code.extend_from_slice(&[0x60, 0x20, 0x60, 0x00, 0xa1, 0x00]);
    code
}

/// A WebSocket server over `ctx` serving eth, net and web3 within `ws`.
async fn serve(ctx: Arc<RpcContext>, ws: WsConfig) -> (SocketAddr, ServerHandle) {
    let module = ws_module(ctx, &RpcModuleSelection::standard());
    serve_ws("127.0.0.1:0".parse().unwrap(), module, HttpLimits::default(), ws).await.unwrap()
}

/// `eth_getFilterChanges` of filter `id` once it has something (the feeder runs beside the
/// engine: a change comes shortly after the head moves), or its last answer after 5 s.
async fn changes_soon(engine: &Engine, id: &Value) -> Result<Value, (i32, String)> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let answer = changes(engine, id).await;
        if answer != Ok(json!([])) || std::time::Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `eth_getFilterChanges` of filter `id`.
async fn changes(engine: &Engine, id: &Value) -> Result<Value, (i32, String)> {
    call_message(engine, "eth_getFilterChanges", vec![id.clone()]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_and_filters_follow_the_chain_through_a_reorg() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, genesis, thread) = context_with(dir.path(), &[], |ctx| ctx);
    let ctx = Arc::new(ctx);
    let engine = auth_module(ctx.clone());
    let (addr, server) = serve(ctx.clone(), WsConfig::default()).await;
    let mut ws = WsClient::connect(addr).await;
    let heads = ws.call("eth_subscribe", json!(["newHeads"])).await;
    let logs = ws.call("eth_subscribe", json!(["logs", {"topics": [TOPIC]}])).await;
    let elsewhere =
        ws.call("eth_subscribe", json!(["logs", {"address": Address::repeat_byte(1)}])).await;
    let hashes = ws.call("eth_subscribe", json!(["newPendingTransactions"])).await;
    let full = ws.call("eth_subscribe", json!(["newPendingTransactions", true])).await;
    for id in [&heads, &logs, &elsewhere, &hashes, &full] {
        let id = id.as_str().unwrap();
        assert!(id.starts_with("0x") && id.len() > 2 && id.len() <= 34, "geth's shape: {id}");
    }
    let block_filter = call(&engine, "eth_newBlockFilter", vec![]).await.unwrap();
    let log_filter =
        call(&engine, "eth_newFilter", vec![json!({"topics": [TOPIC]})]).await.unwrap();
    let tx_filter = call(&engine, "eth_newPendingTransactionFilter", vec![]).await.unwrap();
    assert_eq!(changes(&engine, &block_filter).await.unwrap(), json!([]));

    // A sibling of the block to come, without its transaction: imported, not canonical.
    let sibling = build_block(&engine, genesis, 1).await;
    let (raw, tx) = signed_create(0, log_emitter());
    let sent = call(&engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
    assert_eq!(sent, json!(tx));
    assert_eq!(ws.notification_of(&hashes).await["result"], json!(tx));
    let pending = ws.notification_of(&full).await["result"].clone();
    assert_eq!((&pending["hash"], &pending["blockHash"]), (&json!(tx), &Value::Null));
    assert_eq!(
        pending,
        call(&engine, "eth_getTransactionByHash", vec![json!(tx)]).await.unwrap(),
        "as the pool serves it"
    );
    assert_eq!(changes_soon(&engine, &tx_filter).await.unwrap(), json!([tx]));
    assert_eq!(changes(&engine, &tx_filter).await.unwrap(), json!([]), "handed over once");

    let block = build_block(&engine, genesis, 2).await;
    let unfinalized = |head: B256| json!({"headBlockHash": head, "safeBlockHash": genesis, "finalizedBlockHash": genesis});
    let fcu = call(&engine, "engine_forkchoiceUpdatedV4", vec![unfinalized(block), Value::Null]);
    assert_eq!(fcu.await.unwrap()["payloadStatus"]["status"], "VALID");
    let head = ws.notification_of(&heads).await["result"].clone();
    assert_eq!(head, call(&engine, "eth_getHeaderByNumber", vec![json!("0x1")]).await.unwrap());
    assert_eq!(head["hash"], json!(block));
    let log = ws.notification_of(&logs).await["result"].clone();
    assert_eq!((&log["blockHash"], &log["transactionHash"]), (&json!(block), &json!(tx)));
    assert_eq!((&log["topics"], &log["removed"]), (&json!([TOPIC]), &json!(false)));
    assert_eq!(log["data"], json!(B256::with_last_byte(42)));
    let by_range = json!({"fromBlock": "0x1", "toBlock": "0x1", "topics": [TOPIC]});
    let stored = call(&engine, "eth_getLogs", vec![by_range]).await.unwrap();
    assert_eq!(stored, json!([log]), "a notification is eth_getLogs' log");
    assert_eq!(changes_soon(&engine, &block_filter).await.unwrap(), json!([block]));
    assert_eq!(changes_soon(&engine, &log_filter).await.unwrap(), json!([log]));
    let all = call(&engine, "eth_getFilterLogs", vec![log_filter.clone()]).await.unwrap();
    assert_eq!(all, json!([log]));

    // The reorg: the sibling becomes the head, the block and its log leave the chain.
    let fcu = call(&engine, "engine_forkchoiceUpdatedV4", vec![unfinalized(sibling), Value::Null]);
    assert_eq!(fcu.await.unwrap()["payloadStatus"]["status"], "VALID");
    assert_eq!(ws.notification_of(&heads).await["result"]["hash"], json!(sibling));
    let mut removed = log.clone();
    removed["removed"] = json!(true);
    assert_eq!(ws.notification_of(&logs).await["result"], removed);
    assert_eq!(changes_soon(&engine, &block_filter).await.unwrap(), json!([sibling]));
    assert_eq!(changes_soon(&engine, &log_filter).await.unwrap(), json!([removed]));
    let all = call(&engine, "eth_getFilterLogs", vec![log_filter.clone()]).await.unwrap();
    assert_eq!(all, json!([]));
    // Nothing came for a filter the log does not match.
    while let Ok(Some(n)) =
        tokio::time::timeout(Duration::from_millis(300), ws.notification()).await
    {
        assert_ne!(n["subscription"], elsewhere, "{n}");
    }

    assert_eq!(ws.call("eth_unsubscribe", json!([heads])).await, json!(true));
    assert_eq!(ws.call("eth_unsubscribe", json!([heads])).await, json!(false));
    let uninstall = |id: Value| {
        let engine = &engine;
        async move { call(engine, "eth_uninstallFilter", vec![id]).await.unwrap() }
    };
    assert_eq!(uninstall(block_filter.clone()).await, json!(true));
    assert_eq!(uninstall(block_filter.clone()).await, json!(false));
    assert_eq!(
        changes(&engine, &block_filter).await,
        Err((-32000, "filter not found".into())),
        "geth's answer"
    );

    drop(ws);
    server.stop().unwrap();
    server.stopped().await;
    drop((engine, ctx));
    thread.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_expire_are_capped_and_never_miss_changes_silently() {
    let dir = tempfile::tempdir().unwrap();
    let config = FilterConfig { ttl: Duration::from_secs(2), max_filters: 2, max_changes: 1 };
    let (ctx, genesis, thread) = context_with(dir.path(), &[], |ctx| ctx.with_filters(config));
    let engine = auth_module(Arc::new(ctx));
    let first = call(&engine, "eth_newBlockFilter", vec![]).await.unwrap();
    let second = call(&engine, "eth_newBlockFilter", vec![]).await.unwrap();
    assert_ne!(first, second);
    let third = call_message(&engine, "eth_newFilter", vec![json!({})]).await;
    assert_eq!(third.map_err(|(code, _)| code), Err(-32005), "past the cap: limit exceeded");

    // Two blocks between polls: more than the filter may gather.
    let one = build_block(&engine, genesis, 1).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(one), Value::Null]).await.unwrap();
    assert_eq!(changes_soon(&engine, &first).await.unwrap(), json!([one]), "one fits");
    let two = build_block(&engine, one, 2).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(two), Value::Null]).await.unwrap();
    let three = build_block(&engine, two, 3).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(three), Value::Null]).await.unwrap();
    // The feeder runs beside the engine: time for it to see both moves.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let overflowed = changes(&engine, &first).await.unwrap_err();
    assert_eq!(overflowed.0, -32000);
    assert!(overflowed.1.contains("more than 1 changes"), "{}", overflowed.1);
    assert_eq!(changes(&engine, &first).await.unwrap_err().1, "filter not found", "dropped");

    // Not polled for the timeout: gone, and its place free.
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    assert_eq!(changes(&engine, &second).await.unwrap_err().1, "filter not found");
    let again = call(&engine, "eth_newFilter", vec![json!({"address": Address::ZERO})]).await;
    assert!(again.is_ok());
    // A log filter over more blocks than exist: installed (geth installs it), its logs
    // refused as eth_getLogs refuses the range.
    let huge = json!({"fromBlock": "0x0", "toBlock": "0xffffffffffff"});
    let huge = call(&engine, "eth_newFilter", vec![huge]).await.unwrap();
    let refused = call_message(&engine, "eth_getFilterLogs", vec![huge]).await.unwrap_err();
    assert_eq!(refused.0, -32602, "{}", refused.1);
    // A filter id that was never one, and one that is not an id.
    let unknown = changes(&engine, &json!("0x1234")).await.unwrap_err();
    assert_eq!(unknown.1, "filter not found");
    let malformed = changes(&engine, &json!("not an id")).await.unwrap_err();
    assert_eq!(malformed.0, -32602);
    drop(engine);
    thread.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websocket_endpoint_bounds_origins_subscriptions_and_slow_readers() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _, thread) = context_with(dir.path(), &[], |ctx| ctx);
    let ctx = Arc::new(ctx);
    let engine = auth_module(ctx.clone());
    let config = WsConfig { max_subscriptions: 64, message_buffer: 4, ..WsConfig::default() };
    let (addr, server) = serve(ctx.clone(), config).await;

    // geth's default origins: a browser page elsewhere is refused, localhost and tools pass.
    let evil = WsClient::connect_with(addr, Some("http://evil.example"), None).await;
    assert_eq!(evil.err(), Some(Refused(403)));
    assert!(WsClient::connect_with(addr, Some("http://localhost:3000"), None).await.is_ok());

    // Subscriptions per connection are capped; unknown kinds and bad parameters are typed
    // errors.
    let mut greedy = WsClient::connect(addr).await;
    for params in [json!(["newBlocks"]), json!(["newHeads", true]), json!(["logs", 7])] {
        let id = greedy.send("eth_subscribe", params.clone()).await;
        assert_eq!(greedy.answer(id).await["error"]["code"], -32602, "{params}");
    }
    for _ in 0..64 {
        greedy.call("eth_subscribe", json!(["newHeads"])).await;
    }
    let id = greedy.send("eth_subscribe", json!(["newHeads"])).await;
    assert_eq!(greedy.answer(id).await["error"]["code"], -32006, "too many subscriptions");
    drop(greedy);

    // A client that subscribes and never reads: 64 subscriptions to new transactions on a
    // socket with a tiny receive buffer, then 100 transactions (6,400 notifications).
    let mut silent = WsClient::connect_with(addr, None, Some(4096)).await.unwrap();
    for _ in 0..64 {
        silent.send("eth_subscribe", json!(["newPendingTransactions", true])).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for nonce in 0..100 {
        let (raw, _) = signed_transfer(nonce, Address::repeat_byte(9), 1, 21_000, 10_000_000_000);
        call(&engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
    }
    // Other clients are served meanwhile.
    let mut other = WsClient::connect(addr).await;
    assert_eq!(other.call("eth_chainId", json!([])).await, json!("0x539"));
    silent.start_reading();
    // Reading now: notifications, then for each subscription that found the buffer full its
    // last one, an error saying why.
    for id in 1..=64 {
        assert!(silent.answer(id).await["result"].is_string());
    }
    let mut dropped = 0;
    while let Ok(Some(n)) =
        tokio::time::timeout(Duration::from_secs(2), silent.notification()).await
    {
        if let Some(error) = n.get("error") {
            assert!(error.as_str().unwrap().contains("does not read"), "{error}");
            dropped += 1;
        }
    }
    assert!(dropped > 0, "no subscription was dropped");

    drop((silent, other));
    server.stop().unwrap();
    server.stopped().await;
    drop((engine, ctx));
    thread.join().unwrap();
}

/// Reads the next newline-ended JSON value from an IPC connection.
async fn ipc_next(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::net::unix::OwnedReadHalf>>,
) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
    serde_json::from_str(&line.unwrap().unwrap().expect("a message")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ipc_socket_serves_calls_batches_and_subscriptions() {
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let (ctx, genesis, thread) = context_with(&dir.path().join("db"), &[], |ctx| ctx);
    let ctx = Arc::new(ctx);
    let engine = auth_module(ctx.clone());
    let path = dir.path().join("gigagas.ipc");
    std::fs::write(&path, b"a stale file").unwrap();
    let module = ws_module(ctx.clone(), &RpcModuleSelection::ipc());
    let ws = WsConfig::default();
    let server =
        gigagas_rpc::ipc::serve_ipc(path.clone(), module, HttpLimits::default(), ws).await.unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the socket is its user's alone");

    let (read, mut write) = tokio::net::UnixStream::connect(&path).await.unwrap().into_split();
    let mut lines = tokio::io::BufReader::new(read).lines();
    // Two requests in one write, then one split over two writes.
    write
        .write_all(
            br#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]} {"jsonrpc":"2.0","id":2,"method":"admin_nodeInfo","params":[]}{"jsonrpc":"2.0","id":3,"#,
        )
        .await
        .unwrap();
    write
        .write_all(br#""method":"web3_sha3","params":["0x68656c6c6f20776f726c64"]}"#)
        .await
        .unwrap();
    let mut answers: Vec<Value> = Vec::new();
    for _ in 0..3 {
        answers.push(ipc_next(&mut lines).await);
    }
    answers.sort_by_key(|a| a["id"].as_u64());
    assert_eq!(answers[0]["result"], "0x539");
    assert_eq!(answers[1]["error"]["code"], -32000, "admin is served (no network here)");
    assert_eq!(
        answers[2]["result"],
        "0x47173285a8d7341e5e972fc677286384f802f8ef42a5ec5f03bbfa254cb01fad"
    );
    // A batch, answered whole; `testing` is not served on IPC.
    write
        .write_all(
            br#"[{"jsonrpc":"2.0","id":4,"method":"eth_blockNumber"},{"jsonrpc":"2.0","id":5,"method":"testing_buildBlockV1","params":[]}]"#,
        )
        .await
        .unwrap();
    let batch = ipc_next(&mut lines).await;
    assert_eq!(batch[0]["result"], "0x0");
    assert_eq!(batch[1]["error"]["code"], -32601);
    // A subscription, notified as the chain moves.
    write
        .write_all(br#"{"jsonrpc":"2.0","id":6,"method":"eth_subscribe","params":["newHeads"]}"#)
        .await
        .unwrap();
    let subscribed = ipc_next(&mut lines).await;
    let id = subscribed["result"].clone();
    assert!(id.as_str().unwrap().starts_with("0x"), "{subscribed}");
    let block = build_block(&engine, genesis, 1).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(block), Value::Null]).await.unwrap();
    let notification = ipc_next(&mut lines).await;
    assert_eq!(notification["method"], "eth_subscription");
    assert_eq!(notification["params"]["subscription"], id);
    assert_eq!(notification["params"]["result"]["hash"], json!(block));
    // Bytes that are not JSON: a parse error, and the connection ends.
    write.write_all(b"}{ not json").await.unwrap();
    assert_eq!(ipc_next(&mut lines).await["error"]["code"], -32700);
    let end = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap();
    assert!(matches!(end, Ok(None) | Err(_)), "{end:?}");

    // A client that sends, closes its sending half and waits for the answer (`socat`).
    let (read, mut write) = tokio::net::UnixStream::connect(&path).await.unwrap().into_split();
    let mut lines = tokio::io::BufReader::new(read).lines();
    write
        .write_all(br#"{"jsonrpc":"2.0","id":7,"method":"eth_getLogs","params":[{}]}"#)
        .await
        .unwrap();
    write.shutdown().await.unwrap();
    assert_eq!(ipc_next(&mut lines).await["result"], json!([]));

    server.stop().await;
    assert!(!path.exists(), "the socket file is removed");
    drop((engine, ctx));
    thread.join().unwrap();
}
