//! `eth_call` and `eth_estimateGas` with geth's state and block overrides: code, balance and
//! storage replaced for the call only; the header's time, number, fee recipient and base fee
//! as the call sees them; the overrides a call does not take refused; `debug_traceCall` with
//! the same overrides.

use crate::common::{call_message, public, SENDER};
use gigagas_rpc::RpcModuleSelection;
use serde_json::{json, Value};

/// Code that returns the 32-byte word `opcode` pushes (TIMESTAMP, NUMBER, COINBASE, BASEFEE,
/// or SLOAD of slot 0 when `sload`).
fn returns(opcode: u8, sload: bool) -> String {
    let mut code = Vec::new();
    if sload {
        code.extend_from_slice(&[0x60, 0x00]);
    }
    code.push(opcode);
    code.extend_from_slice(&[0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3]);
    format!("0x{}", alloy_primitives::hex::encode(code))
}

fn word(value: u64) -> Value {
    json!(format!("0x{value:064x}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_and_estimates_take_geths_state_and_block_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let (module, thread) = public(dir.path(), &"eth,debug".parse::<RpcModuleSelection>().unwrap());
    let target = "0x00000000000000000000000000000000000000c0";
    let request = json!({"from": SENDER, "to": target});
    let call = |params: Vec<Value>| {
        let module = &module;
        async move { call_message(module, "eth_call", params).await }
    };
    // No code there: an empty answer.
    assert_eq!(call(vec![request.clone(), json!("latest")]).await.unwrap(), json!("0x"));

    // Code and storage for the call only.
    let code = json!({target: {"code": returns(0x54, true), "stateDiff": {word(0).as_str().unwrap(): word(42)}}});
    let code = &code;
    let out = call(vec![request.clone(), json!("latest"), code.clone()]).await.unwrap();
    assert_eq!(out, word(42));
    let whole = json!({target: {"code": returns(0x54, true), "state": {word(1).as_str().unwrap(): word(7)}}});
    assert_eq!(call(vec![request.clone(), json!("latest"), whole]).await.unwrap(), word(0));
    assert_eq!(call(vec![request.clone(), json!("latest")]).await.unwrap(), json!("0x"), "gone");

    // The header the call sees.
    for (opcode, field, value) in
        [(0x42u8, "time", 0x1234u64), (0x43, "number", 0x99), (0x48, "baseFeePerGas", 7)]
    {
        let state = json!({target: {"code": returns(opcode, false)}});
        let block = json!({field: format!("{value:#x}")});
        // A call that pays no gas price sees a zero BASEFEE, as in geth: this one pays.
        let paying = json!({"from": SENDER, "to": target, "gasPrice": "0x8"});
        let out = call(vec![paying, json!("latest"), state, block]).await.unwrap();
        assert_eq!(out, word(value), "{field}");
    }

    // A sender without funds sends value once its balance is overridden.
    let poor = "0x00000000000000000000000000000000000000d0";
    let paying = json!({"from": poor, "to": target, "value": "0x1"});
    let refused = call(vec![paying.clone(), json!("latest")]).await.unwrap_err();
    assert_eq!(refused.0, -32000, "{}", refused.1);
    let funded = json!({poor: {"balance": "0xde0b6b3a7640000"}});
    assert_eq!(call(vec![paying, json!("latest"), funded]).await.unwrap(), json!("0x"));

    // eth_estimateGas runs the overridden code: SLOAD and the rest past a transfer's 21,000.
    let gas = |answer: Value| {
        u64::from_str_radix(answer.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    let estimate = |params: Vec<Value>| {
        let module = &module;
        async move { gas(call_message(module, "eth_estimateGas", params).await.unwrap()) }
    };
    // A transfer's gas (EIP-2780 on the dev chain's Amsterdam: less than 21,000).
    let plain = estimate(vec![request.clone()]).await;
    let with_code = estimate(vec![request.clone(), json!("latest"), code.clone()]).await;
    assert!(with_code > plain + 2_100, "{plain} then {with_code}: a cold SLOAD at least");

    // debug_traceCall runs the same call with the same overrides.
    let traced = json!({"from": SENDER, "to": target, "gas": "0x186a0"});
    let options = json!({"tracer": "callTracer", "stateOverrides": code});
    let frame =
        call_message(&module, "debug_traceCall", vec![traced.clone(), json!("latest"), options])
            .await
            .unwrap();
    assert_eq!((&frame["type"], &frame["to"]), (&json!("CALL"), &json!(target)), "{frame}");
    assert_eq!((&frame["gas"], &frame["output"]), (&json!("0x186a0"), &word(42)), "{frame}");
    assert_eq!(frame["from"].as_str().unwrap().to_lowercase(), SENDER.to_lowercase());
    let options = json!({"stateOverrides": code, "blockOverrides": {"time": "0x1234"}});
    let logs =
        call_message(&module, "debug_traceCall", vec![traced.clone(), json!("latest"), options])
            .await
            .unwrap();
    let ops: Vec<&str> =
        logs["structLogs"].as_array().unwrap().iter().map(|l| l["op"].as_str().unwrap()).collect();
    assert_eq!(ops.first().copied(), Some("PUSH1"), "{ops:?}");
    assert!(ops.contains(&"SLOAD") && ops.last() == Some(&"RETURN"), "{ops:?}");
    assert_eq!(logs["returnValue"], json!(format!("0x{:064x}", 42)));
    let unknown = json!({"tracer": "jsTracer"});
    let refused =
        call_message(&module, "debug_traceCall", vec![traced, json!("latest"), unknown]).await;
    assert_eq!(refused.unwrap_err().0, -32602);

    // What a call does not take, and malformed overrides.
    let beacon = json!({"beaconRoot": format!("0x{}", "11".repeat(32))});
    let refused = call(vec![request.clone(), json!("latest"), json!({}), beacon]).await;
    assert_eq!(refused.unwrap_err().0, -32602);
    let moved =
        json!({"0x0000000000000000000000000000000000000001": {"movePrecompileToAddress": target}});
    assert_eq!(call(vec![request.clone(), json!("latest"), moved]).await.unwrap_err().0, -32602);
    let both = json!({target: {"state": {}, "stateDiff": {}}});
    assert_eq!(call(vec![request.clone(), json!("latest"), both]).await.unwrap_err().0, -32602);
    let huge = json!({"baseFeePerGas": format!("0x1{}", "0".repeat(20))});
    assert_eq!(call(vec![request, json!("latest"), json!({}), huge]).await.unwrap_err().0, -32602);
    drop(module);
    thread.join().unwrap();
}
