//! The parity `trace_` namespace on a block the engine built: a contract creation whose init
//! code calls another account, traced by `trace_block`, `trace_transaction`, `trace_get`,
//! `trace_replayBlockTransactions`, `trace_replayTransaction`, `trace_filter` and
//! `trace_call` (with a code override), in the shapes reth serves (revm-inspectors' parity
//! builder); and geth's `debug_traceBlock` of the same block's RLP.

use crate::common::{build_block, call, call_message, context_with, signed_create, state, SENDER};
use gigagas_rpc::{public_module, RpcModuleSelection};
use serde_json::{json, Value};
use std::sync::Arc;

const CALLEE: &str = "0x00000000000000000000000000000000000000c0";

/// Code that calls `to` with no value and no data, with all its gas, then stops.
fn calls(to: &str) -> Vec<u8> {
    let mut code = vec![0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x60, 0x00, 0x73];
    code.extend_from_slice(&alloy_primitives::hex::decode(to).unwrap());
    code.extend_from_slice(&[0x5a, 0xf1, 0x00]);
    code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trace_namespace_traces_blocks_transactions_and_calls() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, genesis, thread) = context_with(dir.path(), &[], |ctx| ctx);
    let ctx = Arc::new(ctx);
    let engine = gigagas_rpc::auth_module(ctx.clone());
    let trace =
        public_module(ctx.clone(), &"eth,trace,debug".parse::<RpcModuleSelection>().unwrap());
    assert_eq!(
        call_message(
            &public_module(ctx.clone(), &RpcModuleSelection::standard()),
            "trace_block",
            vec![json!("0x0")]
        )
        .await
        .unwrap_err()
        .0,
        -32601,
        "not served unless named"
    );
    let (raw, tx) = signed_create(0, calls(CALLEE));
    call(&engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
    let block = build_block(&engine, genesis, 1).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(block), Value::Null]).await.unwrap();
    let receipt = call(&engine, "eth_getTransactionReceipt", vec![json!(tx)]).await.unwrap();
    let created = receipt["contractAddress"].clone();
    let gas_used = receipt["gasUsed"].clone();
    let ask = |method: &'static str, params: Vec<Value>| {
        let trace = &trace;
        async move { call_message(trace, method, params).await }
    };

    let traces = ask("trace_block", vec![json!("0x1")]).await.unwrap();
    let traces = traces.as_array().unwrap();
    assert_eq!(traces.len(), 2, "{traces:?}");
    let (outer, inner) = (&traces[0], &traces[1]);
    assert_eq!((&outer["type"], &outer["subtraces"]), (&json!("create"), &json!(1)));
    assert_eq!(outer["action"]["from"].as_str().unwrap().to_lowercase(), SENDER.to_lowercase());
    assert_eq!(outer["result"]["address"], created);
    assert_eq!(outer["result"]["gasUsed"], gas_used, "the transaction's gas");
    assert_eq!((&outer["traceAddress"], &inner["traceAddress"]), (&json!([]), &json!([0])));
    assert_eq!((&inner["type"], &inner["action"]["callType"]), (&json!("call"), &json!("call")));
    assert_eq!((&inner["action"]["from"], &inner["action"]["to"]), (&created, &json!(CALLEE)));
    for t in traces {
        assert_eq!((&t["blockHash"], &t["blockNumber"]), (&json!(block), &json!(1)));
        assert_eq!((&t["transactionHash"], &t["transactionPosition"]), (&json!(tx), &json!(0)));
    }
    assert_eq!(ask("trace_transaction", vec![json!(tx)]).await.unwrap(), json!(traces));
    assert_eq!(ask("trace_get", vec![json!(tx), json!(["0x0"])]).await.unwrap(), *inner);
    assert_eq!(ask("trace_get", vec![json!(tx), json!(["0x1"])]).await.unwrap(), Value::Null);
    assert_eq!(ask("trace_block", vec![json!("0x0")]).await.unwrap(), json!([]), "genesis");
    assert_eq!(ask("trace_block", vec![json!("0x9")]).await.unwrap(), Value::Null, "unknown");
    let unknown = format!("0x{}", "ab".repeat(32));
    assert_eq!(ask("trace_transaction", vec![json!(unknown)]).await.unwrap(), Value::Null);

    // Replays with the trace kinds asked for.
    let replayed =
        ask("trace_replayBlockTransactions", vec![json!("0x1"), json!(["trace", "stateDiff"])])
            .await
            .unwrap();
    let replayed = replayed.as_array().unwrap();
    assert_eq!(replayed.len(), 1);
    assert_eq!(replayed[0]["transactionHash"], json!(tx));
    assert_eq!(replayed[0]["trace"].as_array().unwrap().len(), 2);
    assert!(replayed[0]["vmTrace"].is_null());
    let diff = &replayed[0]["stateDiff"];
    assert!(diff.get(SENDER.to_lowercase()).is_some(), "the sender's nonce and balance: {diff}");
    assert_eq!(diff[created.as_str().unwrap()]["nonce"]["+"], "0x1", "{diff}");
    let one = ask("trace_replayTransaction", vec![json!(tx), json!(["trace", "stateDiff"])])
        .await
        .unwrap();
    let mut expected = replayed[0].clone();
    expected.as_object_mut().unwrap().remove("transactionHash");
    assert_eq!(one, expected);
    let vm = ask("trace_replayTransaction", vec![json!(tx), json!(["vmTrace"])]).await.unwrap();
    assert!(!vm["vmTrace"]["ops"].as_array().unwrap().is_empty(), "{vm}");

    // trace_filter: by recipient, paged, and bounded.
    let by_callee = json!({"fromBlock": "0x1", "toBlock": "0x1", "toAddress": [CALLEE]});
    assert_eq!(ask("trace_filter", vec![by_callee]).await.unwrap(), json!([inner]));
    let paged = json!({"fromBlock": "0x0", "toBlock": "0x1", "after": 1, "count": 1});
    assert_eq!(ask("trace_filter", vec![paged]).await.unwrap(), json!([inner]));
    let wide = json!({"fromBlock": "0x0", "toBlock": "0x1000"});
    assert!(ask("trace_filter", vec![wide]).await.is_err(), "past the head");

    // trace_call: the callee's code overridden to call a third account.
    let request = json!({"from": SENDER, "to": CALLEE, "gas": "0x30000"});
    let code = json!({CALLEE: {"code": format!("0x{}", alloy_primitives::hex::encode(calls("0x00000000000000000000000000000000000000c1")))}});
    let called =
        ask("trace_call", vec![request, json!(["trace"]), json!("latest"), code]).await.unwrap();
    let frames = called["trace"].as_array().unwrap();
    assert_eq!(frames.len(), 2, "{called}");
    assert_eq!(frames[1]["action"]["to"], "0x00000000000000000000000000000000000000c1");
    // geth's debug_traceBlock: the block's RLP traced as the stored block is.
    let raw = ask("debug_getRawBlock", vec![json!("0x1")]).await.unwrap();
    let tracer = json!({"tracer": "callTracer"});
    let by_rlp = ask("debug_traceBlock", vec![raw.clone(), tracer.clone()]).await.unwrap();
    let stored = ask("debug_traceBlockByNumber", vec![json!("0x1"), tracer.clone()]).await.unwrap();
    assert_eq!(by_rlp, stored);
    assert_eq!(by_rlp[0]["txHash"], json!(tx));
    let cut = &raw.as_str().unwrap()[..raw.as_str().unwrap().len() - 4];
    let refused = ask("debug_traceBlock", vec![json!(cut), tracer.clone()]).await.unwrap_err();
    assert_eq!(refused.0, -32602, "{}", refused.1);
    // A block whose parent is unknown: its parent named in the error.
    let mut orphan: alloy_consensus::Block<alloy_consensus::TxEnvelope> =
        alloy_rlp::Decodable::decode(
            &mut alloy_primitives::hex::decode(raw.as_str().unwrap()).unwrap().as_slice(),
        )
        .unwrap();
    orphan.header.parent_hash = alloy_primitives::B256::repeat_byte(0x55);
    let orphan = format!("0x{}", alloy_primitives::hex::encode(alloy_rlp::encode(&orphan)));
    let refused = ask("debug_traceBlock", vec![json!(orphan), tracer]).await.unwrap_err();
    assert_eq!(refused.0, -32000);
    assert!(refused.1.contains("5555"), "{}", refused.1);
    drop((trace, engine, ctx));
    thread.join().unwrap();
}
