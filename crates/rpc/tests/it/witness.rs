//! `debug_executionWitness` on blocks the engine built: a contract with 40 slots is called to
//! read one, zero two (deletions that collapse storage-trie branches), write a new one, read
//! `BLOCKHASH(0)` and `EXTCODESIZE` of another contract. Each block's witness, taken from the
//! JSON answer alone, must validate the block statelessly (execution, header, state root) and
//! hold nothing superfluous: without any one of its trie nodes, or the code, or the oldest
//! header, validation fails.

use crate::common::{
    build_block, call, context_with, signed_create, signed_create_with_gas, state, SENDER,
};
use alloy_consensus::Header;
use alloy_primitives::{Address, Bytes, B256};
use gigagas_primitives::BlockInput;
use gigagas_rpc::{public_module, RpcModuleSelection};
use gigagas_validation::{execute_witness, Witness};
use serde_json::{json, Value};
use std::sync::Arc;

/// Init code that runs `setup` then returns `runtime` as the contract's code.
fn deploy(setup: &[u8], runtime: &[u8]) -> Vec<u8> {
    // PUSH1 len PUSH1 offset PUSH1 0 CODECOPY PUSH1 len PUSH1 0 RETURN: 12 bytes.
    let offset = setup.len() + 12;
    let (len, off) = (u8::try_from(runtime.len()).unwrap(), u8::try_from(offset).unwrap());
    let mut code = setup.to_vec();
    code.extend_from_slice(&[0x60, len, 0x60, off, 0x60, 0x00, 0x39, 0x60, len, 0x60, 0x00, 0xf3]);
    code.extend_from_slice(runtime);
    code
}

/// The contract's runtime: SLOAD(1); SSTORE(2, 0); SSTORE(3, 0); SSTORE(1000, 7);
/// BLOCKHASH(0); EXTCODESIZE(`other`); STOP.
fn runtime(other: Address) -> Vec<u8> {
    let mut code = vec![
        0x60, 0x01, 0x54, 0x50, // SLOAD(1)
        0x60, 0x00, 0x60, 0x02, 0x55, // SSTORE(2, 0)
        0x60, 0x00, 0x60, 0x03, 0x55, // SSTORE(3, 0)
        0x60, 0x07, 0x61, 0x03, 0xe8, 0x55, // SSTORE(1000, 7)
        0x60, 0x00, 0x40, 0x50, // BLOCKHASH(0)
        0x73, // PUSH20 other
    ];
    code.extend_from_slice(other.as_slice());
    code.extend_from_slice(&[0x3b, 0x50, 0x00]); // EXTCODESIZE, POP, STOP
    code
}

/// A witness answer as [`Witness`].
fn witness_of(answer: &Value) -> Witness {
    let list =
        |field: &str| -> Vec<Bytes> { serde_json::from_value(answer[field].clone()).unwrap() };
    let headers = answer["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let header: Header = serde_json::from_value(h.clone()).unwrap();
            assert_eq!(json!(header.hash_slow()), h["hash"], "the header's own hash");
            header
        })
        .collect();
    Witness { headers, codes: list("codes"), state: list("state") }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execution_witnesses_validate_their_blocks_statelessly_and_hold_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, genesis, thread) = context_with(dir.path(), &[], |ctx| ctx);
    let ctx = Arc::new(ctx);
    let engine = gigagas_rpc::auth_module(ctx.clone());
    let debug = public_module(ctx.clone(), &"eth,debug".parse::<RpcModuleSelection>().unwrap());
    let chain = ctx.chain.clone();
    let sender: Address = SENDER.parse().unwrap();

    // Block 1: a one-byte contract, and the contract with 40 slots.
    let other = sender.create(0);
    let target = sender.create(1);
    let mut setup = Vec::new();
    for slot in 1..=40u8 {
        setup.extend_from_slice(&[0x60, slot + 1, 0x60, slot, 0x55]);
    }
    call(&engine, "eth_sendRawTransaction", vec![json!(signed_create(0, deploy(&[], &[0x00])).0)])
        .await
        .unwrap();
    let (raw, _) = signed_create_with_gas(1, deploy(&setup, &runtime(other)), 10_000_000);
    call(&engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
    let one = build_block(&engine, genesis, 1).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(one), Value::Null]).await.unwrap();
    let code = call(&engine, "eth_getCode", vec![json!(target), json!("latest")]).await.unwrap();
    assert_eq!(code, json!(Bytes::from(runtime(other))), "deployed with its 40 slots");
    // Block 2: the call.
    let (raw, tx) = crate::common::signed_transfer(2, target, 0, 1_000_000, 10_000_000_000);
    call(&engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
    let two = build_block(&engine, one, 2).await;
    call(&engine, "engine_forkchoiceUpdatedV4", vec![state(two), Value::Null]).await.unwrap();
    let receipt = call(&engine, "eth_getTransactionReceipt", vec![json!(tx)]).await.unwrap();
    assert_eq!((&receipt["status"], &receipt["blockHash"]), (&json!("0x1"), &json!(two)));

    for (number, hash) in [(1u64, one), (2, two)] {
        let answer = call(&debug, "debug_executionWitness", vec![json!(format!("{number:#x}"))])
            .await
            .unwrap();
        assert_eq!(answer["keys"], Value::Null, "keys: null, as geth");
        let by_hash = call(&debug, "debug_executionWitness", vec![json!(hash)]).await.unwrap();
        assert_eq!(by_hash, answer, "by number and by hash");
        let witness = witness_of(&answer);
        let raw =
            call(&debug, "debug_getRawBlock", vec![json!(format!("{number:#x}"))]).await.unwrap();
        let raw: Bytes = serde_json::from_value(raw).unwrap();
        let block: alloy_consensus::Block<alloy_consensus::TxEnvelope> =
            alloy_rlp::decode_exact(&raw).unwrap();
        let input = BlockInput {
            hash,
            header: block.header.clone(),
            transactions: block.body.transactions,
            claimed_senders: Vec::new(),
            withdrawals: block.body.withdrawals,
            ommers: block.body.ommers,
        };
        let root = execute_witness(&chain, &input, &witness)
            .unwrap_or_else(|e| panic!("block {number}: {e}"));
        assert_eq!(root, block.header.state_root);
        let mut sorted = witness.state.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, witness.state, "state sorted, each node once");
        assert!(witness.state.len() > 8, "the tries walked: {} nodes", witness.state.len());

        // Nothing superfluous: each node, the code, the oldest header is needed.
        for i in 0..witness.state.len() {
            let mut less = witness.clone();
            let node = less.state.remove(i);
            assert!(
                execute_witness(&chain, &input, &less).is_err(),
                "block {number}: validates without node {node}"
            );
        }
        if number == 2 {
            let parent: B256 =
                serde_json::from_value(answer["headers"][1]["hash"].clone()).unwrap();
            assert_eq!(parent, one, "the parent last");
            assert_eq!(witness.headers.len(), 2, "BLOCKHASH(0) reaches the genesis header");
            assert_eq!(witness.headers[0].number, 0);
            // The code run and the code sized, beside the system contracts' (their calls run
            // code too, and geth's witness holds it).
            let codes: Vec<Bytes> = vec![Bytes::from(vec![0x00]), Bytes::from(runtime(other))];
            for code in &codes {
                assert!(witness.codes.contains(code), "{code} missing");
            }
            assert!(witness.codes.is_sorted(), "codes sorted");
            let mut less = witness.clone();
            less.headers.remove(0);
            let e = execute_witness(&chain, &input, &less).unwrap_err();
            assert!(e.to_string().contains("block hash of block 0"), "{e}");
            for code in &codes {
                let mut less = witness.clone();
                less.codes.retain(|c| c != code);
                assert!(execute_witness(&chain, &input, &less).is_err(), "without code {code}");
            }
        }
    }
    let missing = call(&debug, "debug_executionWitness", vec![json!("0x9")]).await.unwrap_err();
    assert_eq!(missing, -32000, "an unknown block");
    let genesis_answer = call(&debug, "debug_executionWitness", vec![json!("0x0")]).await;
    assert_eq!(genesis_answer.unwrap_err(), -32000, "the genesis has no parent");
    drop((engine, debug, ctx));
    thread.join().unwrap();
}
