//! `eth_maxPriorityFeePerGas` and `eth_gasPrice` follow geth's oracle on a chain whose tips are
//! known: the three lowest tips of each recent block, an empty block counted as the last
//! suggestion, the 60th percentile, one answer per head.

use crate::common::{build_block, call, context_with, signed_tip, state};
use gigagas_rpc::auth_module;
use serde_json::{json, Value};
use std::sync::Arc;

const GWEI: u128 = 1_000_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suggested_fees_follow_geths_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, genesis, thread) = context_with(dir.path(), &[], |ctx| ctx);
    let engine = auth_module(Arc::new(ctx));
    let tip = |engine| async move {
        let answer = call(engine, "eth_maxPriorityFeePerGas", vec![]).await.unwrap();
        u128::from_str_radix(answer.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    };
    // Genesis only: no block sampled (geth skips block 0), the start price (0.001 gwei).
    assert_eq!(tip(&engine).await, 1_000_000);

    // Block 1: tips of 7, 1, 5 and 3 gwei; block 2: empty.
    for (nonce, t) in [7, 1, 5, 3].into_iter().enumerate() {
        let (raw, _) = signed_tip(nonce as u64, t * GWEI);
        call(&engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
    }
    let one = build_block(&engine, genesis, 1).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(one), Value::Null]).await.unwrap();
    let block = call(&engine, "eth_getBlockByNumber", vec![json!("0x1"), json!(false)]).await;
    assert_eq!(block.unwrap()["transactions"].as_array().unwrap().len(), 4);
    let two = build_block(&engine, one, 2).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(two), Value::Null]).await.unwrap();
    // Sampled: block 2 (empty: the last suggestion, 0.001 gwei), block 1's lowest three (1, 3,
    // 5 gwei); sorted, the 60th percentile is the value at (4 - 1) * 60 / 100 = 1: 1 gwei.
    assert_eq!(tip(&engine).await, GWEI);
    assert_eq!(tip(&engine).await, GWEI, "one answer per head");
    let head = call(&engine, "eth_getBlockByNumber", vec![json!("latest"), json!(false)]).await;
    let base_fee = head.unwrap()["baseFeePerGas"]
        .as_str()
        .map(|h| u128::from_str_radix(h.trim_start_matches("0x"), 16).unwrap());
    let price = call(&engine, "eth_gasPrice", vec![]).await.unwrap();
    assert_eq!(price, json!(format!("{:#x}", GWEI + base_fee.unwrap())), "tip + base fee");

    // Block 3: one tip of 2 gwei. Sampled: 2 gwei; block 2, empty, counts as the last
    // suggestion now (1 gwei); block 1's 1, 3, 5: [1, 1, 2, 3, 5] → index 2: 2 gwei.
    let (raw, _) = signed_tip(4, 2 * GWEI);
    call(&engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
    let three = build_block(&engine, two, 3).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(three), Value::Null]).await.unwrap();
    assert_eq!(tip(&engine).await, 2 * GWEI);
    drop(engine);
    thread.join().unwrap();
}
