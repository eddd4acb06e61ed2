//! Every Engine API version on the fork it serves, and the spec's errors on the others
//! (execution-apis `src/engine/`): a chain that starts at Paris and activates Shanghai, Cancun,
//! Prague and Osaka ten seconds apart, and two that go from Prague to Amsterdam
//! (testing/dev-genesis.json with its fork times moved): geth's Amsterdam (`amsterdamTime`) and
//! the bal-devnet draft (`balDevnetTime`, which starts with Osaka). One block per
//! fork built by the node itself (`engine_forkchoiceUpdatedV1–V4` with attributes,
//! `engine_getPayloadV1–V6`), sent back through `engine_newPayloadV1–V5` and made the head. Then
//! the payload bodies by hash and by range, V1 and V2 (the block access list from Amsterdam on),
//! with their limits.

use crate::common;

use common::{attributes, call, node, state, Engine};
use gigagas_rpc::{CAPABILITIES, MAX_PAYLOAD_BODIES};
use revm::primitives::B256;
use serde_json::{json, Value};

/// Builds, sends back and makes the head one block per step: (forkchoiceUpdated version,
/// getPayload version, newPayload version, timestamp), checking the neighbouring versions'
/// errors on the way. Returns each block's hash and payload.
async fn walk(engine: &Engine, genesis: B256, walk: &[(u8, u8, u8, u64)]) -> Vec<(B256, Value)> {
    let shanghai = walk[0].3 > 10 || walk[0].0 > 1;
    let mut head = genesis;
    let mut hashes = Vec::new();
    for &(fcu, get, new, timestamp) in walk {
        let fcu_method = format!("engine_forkchoiceUpdatedV{fcu}");
        // Attributes of the previous or the next structure: -38003 or -38005.
        if fcu > 1 {
            let older = format!("engine_forkchoiceUpdatedV{}", fcu - 1);
            let code =
                call(engine, &older, vec![state(head), attributes(fcu - 1, timestamp)]).await;
            assert_eq!(code, Err(-38005), "{older} at {timestamp}");
            let mut short = attributes(fcu, timestamp);
            short.as_object_mut().unwrap().remove(if fcu == 2 {
                "withdrawals"
            } else {
                "parentBeaconBlockRoot"
            });
            if fcu < 4 {
                let code = call(engine, &fcu_method, vec![state(head), short]).await;
                assert_eq!(code, Err(-38003), "{fcu_method} with a field missing at {timestamp}");
            }
        }
        if fcu == 1 {
            let code = call(
                engine,
                "engine_forkchoiceUpdatedV2",
                vec![state(head), attributes(2, timestamp)],
            )
            .await;
            assert_eq!(code, Err(-38003), "withdrawals before Shanghai");
        }
        let answer =
            call(engine, &fcu_method, vec![state(head), attributes(fcu, timestamp)]).await.unwrap();
        assert_eq!(answer["payloadStatus"]["status"], "VALID", "{answer}");
        let id = answer["payloadId"].clone();
        // getPayload of the neighbouring versions: -38005 (V2 serves Paris as well).
        let others = if get == 1 { vec![3] } else { vec![get - 1, get + 1] };
        for other in others.into_iter().filter(|v| (1..=6).contains(v)) {
            let code = call(engine, &format!("engine_getPayloadV{other}"), vec![id.clone()]).await;
            assert_eq!(code, Err(-38005), "getPayloadV{other} of a block at {timestamp}");
        }
        let envelope = call(engine, &format!("engine_getPayloadV{get}"), vec![id]).await.unwrap();
        let payload =
            if get == 1 { envelope.clone() } else { envelope["executionPayload"].clone() };
        assert_eq!(payload["withdrawals"].is_null(), !shanghai && timestamp < 10, "{payload}");
        if get == 2 {
            assert!(envelope["blockValue"].is_string() && envelope.get("blobsBundle").is_none());
        }
        let mut params = vec![payload.clone()];
        if new >= 3 {
            params.push(json!([]));
            params.push(json!(B256::repeat_byte(7)));
        }
        if new >= 4 {
            params.push(envelope["executionRequests"].clone());
        }
        let new_method = format!("engine_newPayloadV{new}");
        match new {
            1 => {
                let mut bad = payload.clone();
                bad["blockHash"] = json!(B256::repeat_byte(1));
                let status = call(engine, &new_method, vec![bad]).await.unwrap();
                assert_eq!(status["status"], "INVALID_BLOCK_HASH", "{status}");
                let mut with = payload.clone();
                with["withdrawals"] = json!([]);
                let code = call(engine, "engine_newPayloadV2", vec![with]).await;
                assert_eq!(code, Err(-32602), "withdrawals before Shanghai");
            }
            2 => {
                let code = call(engine, "engine_newPayloadV1", vec![payload.clone()]).await;
                assert_eq!(code, Err(-38005), "newPayloadV1 at Shanghai");
                let mut without = payload.clone();
                without.as_object_mut().unwrap().remove("withdrawals");
                let code = call(engine, &new_method, vec![without]).await;
                assert_eq!(code, Err(-32602), "no withdrawals at Shanghai");
                let mut bad = payload.clone();
                bad["blockHash"] = json!(B256::repeat_byte(1));
                let status = call(engine, &new_method, vec![bad]).await.unwrap();
                assert_eq!(status["status"], "INVALID", "V2 folds a wrong hash into INVALID");
            }
            _ => {
                let code = call(engine, "engine_newPayloadV2", vec![payload.clone()]).await;
                assert_eq!(code, Err(-38005), "newPayloadV2 at {timestamp}");
            }
        }
        let status = call(engine, &new_method, params).await.unwrap();
        assert_eq!(status["status"], "VALID", "{new_method} at {timestamp}: {status}");
        let hash: B256 = serde_json::from_value(payload["blockHash"].clone()).unwrap();
        let answer = call(engine, &fcu_method, vec![state(hash)]).await.unwrap();
        assert_eq!(answer["payloadStatus"]["status"], "VALID", "{answer}");
        head = hash;
        hashes.push((hash, payload));
    }
    hashes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_version_on_its_fork_and_the_errors_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let forks = [
        ("shanghaiTime", Some(10)),
        ("cancunTime", Some(20)),
        ("pragueTime", Some(30)),
        ("osakaTime", Some(40)),
        ("amsterdamTime", None),
    ];
    let (engine, genesis, thread) = node(dir.path(), &forks);
    let caps: Vec<String> = serde_json::from_value(
        call(&engine, "engine_exchangeCapabilities", vec![json!([])]).await.unwrap(),
    )
    .unwrap();
    assert_eq!(caps, CAPABILITIES);
    assert!(!caps.iter().any(|c| c == "engine_exchangeCapabilities"), "the spec leaves it out");
    let steps = [(1u8, 1u8, 1u8, 1u64), (2, 2, 2, 11), (3, 3, 3, 21), (3, 4, 4, 31), (3, 5, 4, 41)];
    let hashes = walk(&engine, genesis, &steps).await;

    // Bodies by range: no trailing nulls past the head; withdrawals null before Shanghai; no
    // block access list in V1, none before Amsterdam in V2.
    let bodies = range(&engine, 1, 1, 100).await.unwrap();
    assert_eq!(bodies.as_array().unwrap().len(), 5, "{bodies}");
    for (body, (_, payload)) in bodies.as_array().unwrap().iter().zip(&hashes) {
        assert_eq!(body["transactions"], payload["transactions"]);
        assert_eq!(body["withdrawals"], payload["withdrawals"], "{body}");
        assert!(body.get("blockAccessList").is_none());
    }
    let v2 = range(&engine, 2, 4, 3).await.unwrap();
    assert_eq!(v2.as_array().unwrap().len(), 2, "blocks 4 and 5 only: {v2}");
    assert!(v2[1]["blockAccessList"].is_null(), "Osaka: no block access list");
    assert_eq!(range(&engine, 1, 6, 5).await.unwrap(), json!([]), "entirely past the head");
    assert_eq!(range(&engine, 1, 0, 5).await, Err(-32602));
    assert_eq!(range(&engine, 1, 1, 0).await, Err(-32602));
    assert_eq!(range(&engine, 2, 1, MAX_PAYLOAD_BODIES + 1).await, Err(-38004));
    let many = json!(vec![B256::ZERO; MAX_PAYLOAD_BODIES as usize + 1]);
    let code = call(&engine, "engine_getPayloadBodiesByHashV1", vec![many]).await;
    assert_eq!(code, Err(-38004));

    drop(engine);
    thread.join().unwrap();

    // Prague, then Amsterdam: geth's (`amsterdamTime`), and the bal-devnet draft with Osaka.
    for (key, other) in [("amsterdamTime", "balDevnetTime"), ("balDevnetTime", "amsterdamTime")] {
        let dir = tempfile::tempdir().unwrap();
        let forks = [
            ("shanghaiTime", Some(0)),
            ("cancunTime", Some(0)),
            ("pragueTime", Some(0)),
            ("osakaTime", Some(10)),
            (key, Some(10)),
            (other, None),
        ];
        let (engine, genesis, thread) = node(dir.path(), &forks);
        let hashes = walk(&engine, genesis, &[(3, 4, 4, 1), (4, 6, 5, 11)]).await;
        let bal = hashes[1].1["blockAccessList"].clone();
        assert!(bal.is_string(), "{key}: an Amsterdam payload carries its BAL");
        assert!(hashes[1].1["slotNumber"].is_string(), "{key}: and its slot number");
        // Bodies by hash: in the order asked, null for an unknown block; the BAL the block
        // carried.
        let asked = json!([hashes[0].0, B256::repeat_byte(0xab), hashes[1].0]);
        let bodies =
            call(&engine, "engine_getPayloadBodiesByHashV2", vec![asked.clone()]).await.unwrap();
        assert_eq!(bodies[0]["withdrawals"], json!([]));
        assert!(bodies[0]["blockAccessList"].is_null(), "Prague: no block access list");
        assert!(bodies[1].is_null(), "{bodies}");
        assert_eq!(bodies[2]["blockAccessList"], bal);
        let v1 = call(&engine, "engine_getPayloadBodiesByHashV1", vec![asked]).await.unwrap();
        assert!(v1[1].is_null() && v1[2].get("blockAccessList").is_none(), "{v1}");
        assert_eq!(range(&engine, 2, 2, 1).await.unwrap()[0]["blockAccessList"], bal);
        drop(engine);
        thread.join().unwrap();
    }
}

async fn range(engine: &Engine, version: u8, start: u64, count: u64) -> Result<Value, i32> {
    let (start, count) = (json!(format!("{start:#x}")), json!(format!("{count:#x}")));
    call(engine, &format!("engine_getPayloadBodiesByRangeV{version}"), vec![start, count]).await
}
