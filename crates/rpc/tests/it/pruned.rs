//! After `gigagas db prune-trie`, a read of a pruned block's state is answered with a typed
//! error naming the earliest block held; the kept blocks' state is served as before.

use crate::common::{
    build_block, call, call_message, node, signed_transfer, state, Engine, SENDER,
};
use alloy_primitives::Address;
use gigagas_storage::{KeepStates, Storage, TriePruner};
use serde_json::{json, Value};

/// The recipient of block `i`'s transfer.
fn recipient(i: u64) -> Address {
    Address::with_last_byte(0x40 + i as u8)
}

/// Reads of the states kept after the prune: every recipient's proof at blocks 3 and 4, and
/// block 4's trace (on block 3's state).
async fn kept_reads(engine: &Engine) -> Vec<Value> {
    let mut out = Vec::new();
    for block in ["0x3", "0x4"] {
        for i in 1..=4 {
            let params = vec![json!(recipient(i)), json!([]), json!(block)];
            out.push(call(engine, "eth_getProof", params).await.unwrap());
        }
    }
    let params = vec![json!("0x4"), json!({})];
    out.push(call(engine, "debug_traceBlockByNumber", params).await.unwrap());
    out
}

/// Four blocks, each moving value to its own recipient; the trie then pruned to the states of
/// blocks 3 and 4. Block 1's proof, balance, call, trace and witness (its parent's state) are
/// answered `-32000` naming block 3; blocks 3 and 4 answer exactly as before the prune.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pruned_blocks_state_is_answered_as_pruned_and_kept_states_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let (engine, genesis, thread) = node(dir.path(), &[]);
        let mut head = genesis;
        for i in 1..=4u64 {
            let (raw, _) = signed_transfer(i - 1, recipient(i), 1_000 * i, 21_000, 100_000_000_000);
            call(&engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
            head = build_block(&engine, head, 12 * i).await;
        }
        call(&engine, "engine_forkchoiceUpdatedV4", vec![state(head), json!(null)]).await.unwrap();
        let before = kept_reads(&engine).await;
        drop(engine);
        thread.join().unwrap();
        before
    };
    let stats = {
        let store = Storage::open(dir.path()).unwrap();
        // The states of blocks 3 and 4 (the head) kept.
        store.prune_trie(KeepStates::Latest(2), 2, &mut |_, _| {}).unwrap()
    };
    assert!(stats.deleted > 0, "{stats:?}");

    let (engine, _, thread) = node(dir.path(), &[]);
    assert_eq!(kept_reads(&engine).await, before, "the kept states answer as before");
    let pruned = [
        ("eth_getProof", vec![json!(recipient(1)), json!([]), json!("0x1")]),
        ("eth_getBalance", vec![json!(SENDER), json!("0x1")]),
        ("eth_call", vec![json!({"from": SENDER, "to": recipient(1)}), json!("0x1")]),
        ("debug_traceBlockByNumber", vec![json!("0x2"), json!({})]),
        ("debug_executionWitness", vec![json!("0x2")]),
    ];
    for (method, params) in pruned {
        let (code, message) = call_message(&engine, method, params).await.unwrap_err();
        assert_eq!(code, -32000, "{method}: {message}");
        assert!(
            message.contains("is pruned") && message.contains("blocks 3 on"),
            "{method}: {message}"
        );
    }
    drop(engine);
    thread.join().unwrap();
}
