//! `debug_getBadBlocks`: a payload the Engine API answers INVALID — at its door (blob hashes)
//! or after the engine executed it (a wrong state root) — is kept (hash, block, RLP, reason)
//! and served newest first; a valid one is not.

use crate::common::{attributes, call, context_with, state};
use alloy_primitives::B256;
use gigagas_rpc::{auth_module, public_module, RpcModuleSelection};
use serde_json::{json, Value};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_found_invalid_are_served_by_debug_get_bad_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, genesis, thread) = context_with(dir.path(), &[], |ctx| ctx);
    let ctx = Arc::new(ctx);
    let engine = auth_module(ctx.clone());
    let debug = public_module(ctx.clone(), &"eth,debug".parse::<RpcModuleSelection>().unwrap());
    assert_eq!(call(&debug, "debug_getBadBlocks", vec![]).await.unwrap(), json!([]));

    let answer =
        call(&engine, "engine_forkchoiceUpdatedV4", vec![state(genesis), attributes(4, 1)])
            .await
            .unwrap();
    let envelope =
        call(&engine, "engine_getPayloadV6", vec![answer["payloadId"].clone()]).await.unwrap();
    let payload = envelope["executionPayload"].clone();
    let hash = payload["blockHash"].clone();
    // Blob hashes the block's transactions do not have: INVALID.
    let params = |blob_hashes: Value| {
        vec![
            payload.clone(),
            blob_hashes,
            json!(B256::repeat_byte(7)),
            envelope["executionRequests"].clone(),
        ]
    };
    let status =
        call(&engine, "engine_newPayloadV5", params(json!([B256::repeat_byte(3)]))).await.unwrap();
    assert_eq!(status["status"], "INVALID", "{status}");
    let bad = call(&debug, "debug_getBadBlocks", vec![]).await.unwrap();
    let bad = bad.as_array().unwrap();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert_eq!((&bad[0]["hash"], &bad[0]["block"]["hash"]), (&hash, &hash));
    assert_eq!(bad[0]["block"]["number"], "0x1");
    assert!(bad[0]["reason"].as_str().unwrap().contains("blob versioned hashes"));
    let rlp = alloy_primitives::hex::decode(bad[0]["rlp"].as_str().unwrap()).unwrap();
    let block: alloy_consensus::Block<alloy_consensus::TxEnvelope> =
        alloy_rlp::Decodable::decode(&mut rlp.as_slice()).unwrap();
    assert_eq!(json!(block.header.hash_slow()), hash, "the RLP is the block's");

    // The same payload, valid: nothing more is kept.
    let status = call(&engine, "engine_newPayloadV5", params(json!([]))).await.unwrap();
    assert_eq!(status["status"], "VALID", "{status}");
    let bad = call(&debug, "debug_getBadBlocks", vec![]).await.unwrap();
    assert_eq!(bad.as_array().unwrap().len(), 1);

    // A payload whose state root is wrong (its hash made to match): the engine executes it and
    // answers INVALID; it comes first now.
    use alloy_rpc_types_engine::{
        CancunPayloadFields, ExecutionPayload, ExecutionPayloadSidecar, ExecutionPayloadV4,
        PraguePayloadFields,
    };
    let mut wrong: ExecutionPayloadV4 = serde_json::from_value(payload.clone()).unwrap();
    wrong.payload_inner.payload_inner.payload_inner.state_root = B256::repeat_byte(0x66);
    let requests: alloy_eips::eip7685::Requests =
        serde_json::from_value(envelope["executionRequests"].clone()).unwrap();
    let sidecar = ExecutionPayloadSidecar::v4(
        CancunPayloadFields::new(B256::repeat_byte(7), vec![]),
        PraguePayloadFields::new(requests),
    );
    let block = ExecutionPayload::V4(wrong.clone())
        .try_into_block_with_sidecar::<alloy_consensus::TxEnvelope>(&sidecar)
        .unwrap();
    let wrong_hash = block.header.hash_slow();
    wrong.payload_inner.payload_inner.payload_inner.block_hash = wrong_hash;
    let params = vec![
        serde_json::to_value(&wrong).unwrap(),
        json!([]),
        json!(B256::repeat_byte(7)),
        envelope["executionRequests"].clone(),
    ];
    let status = call(&engine, "engine_newPayloadV5", params).await.unwrap();
    assert_eq!(status["status"], "INVALID", "{status}");
    let bad = call(&debug, "debug_getBadBlocks", vec![]).await.unwrap();
    let bad = bad.as_array().unwrap();
    assert_eq!(bad.len(), 2);
    assert_eq!(bad[0]["hash"], json!(wrong_hash));
    assert_eq!(bad[0]["block"]["stateRoot"], json!(B256::repeat_byte(0x66)));
    assert_eq!(bad[0]["reason"], status["validationError"], "the engine's reason");
    assert_eq!(bad[1]["hash"], hash);
    drop((debug, engine, ctx));
    thread.join().unwrap();
}
