//! `--http.api`: a public port serves the namespaces named and answers -32601 for the others;
//! the default (geth's `eth,net,web3`) serves neither `admin_addPeer` nor
//! `testing_buildBlockV1`.

use crate::common::{call_message, public};
use gigagas_rpc::RpcModuleSelection;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_public_port_serves_eth_net_and_web3_only() {
    let dir = tempfile::tempdir().unwrap();
    let (module, thread) = public(dir.path(), &RpcModuleSelection::standard());
    for (method, params) in [
        ("admin_addPeer", vec![json!("enode://ab@127.0.0.1:1")]),
        ("admin_nodeInfo", vec![]),
        ("testing_buildBlockV1", vec![]),
        ("debug_getRawBlock", vec![json!("latest")]),
        ("txpool_status", vec![]),
        ("engine_exchangeCapabilities", vec![json!([])]),
    ] {
        let answer = call_message(&module, method, params).await;
        assert_eq!(answer.map_err(|(code, _)| code), Err(-32601), "{method}");
    }
    let version = call_message(&module, "web3_clientVersion", vec![]).await.unwrap();
    let version = version.as_str().unwrap();
    let parts: Vec<&str> = version.split('/').collect();
    assert_eq!(parts.len(), 4, "{version}");
    assert_eq!((parts[0], parts[1]), ("gigagas", concat!("v", env!("CARGO_PKG_VERSION"))));
    assert!(parts[3].starts_with("rustc1."), "{version}");
    // Keccak-256 of "hello world", as geth's web3_sha3 answers it.
    let hash = call_message(&module, "web3_sha3", vec![json!("0x68656c6c6f20776f726c64")]).await;
    assert_eq!(
        hash.unwrap(),
        json!("0x47173285a8d7341e5e972fc677286384f802f8ef42a5ec5f03bbfa254cb01fad")
    );
    assert_eq!(call_message(&module, "net_version", vec![]).await.unwrap(), json!("1337"));
    assert!(call_message(&module, "eth_blockNumber", vec![]).await.is_ok());
    // The engine thread ends with the module, the store closed before the process exits.
    drop(module);
    thread.join().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let named: RpcModuleSelection = "eth,admin,testing".parse().unwrap();
    let (module, thread) = public(dir.path(), &named);
    // Served now (this context runs no network, which the answer says: -32000).
    let info = call_message(&module, "admin_nodeInfo", vec![]).await;
    assert_eq!(info.map_err(|(code, _)| code), Err(-32000));
    let names: Vec<&str> = module.method_names().collect();
    assert!(names.contains(&"testing_buildBlockV1"));
    assert!(!names.iter().any(|m| m.starts_with("net_") || m.starts_with("web3_")), "{names:?}");
    assert_eq!(
        call_message(&module, "net_version", vec![]).await.map_err(|(code, _)| code),
        Err(-32601)
    );
    drop(module);
    thread.join().unwrap();
}

/// geth's everyday methods around blocks: `eth_accounts` (no keystore: none), the header
/// getters (the block's header fields and hash, no size) and the uncle methods (0 and `null`
/// after the merge, `null` for an unknown block).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_headers_and_uncles_answer_as_geth() {
    let dir = tempfile::tempdir().unwrap();
    let (module, thread) = public(dir.path(), &RpcModuleSelection::standard());
    let call = |method: &'static str, params: Vec<serde_json::Value>| {
        let module = &module;
        async move { call_message(module, method, params).await.unwrap() }
    };
    assert_eq!(call("eth_accounts", vec![]).await, json!([]));
    let block = call("eth_getBlockByNumber", vec![json!("0x0"), json!(false)]).await;
    let hash = block["hash"].clone();
    let header = call("eth_getHeaderByNumber", vec![json!("0x0")]).await;
    let mut expected = block.clone();
    for key in ["size", "transactions", "uncles", "withdrawals"] {
        expected.as_object_mut().unwrap().remove(key);
    }
    assert_eq!(header, expected);
    assert!(header.get("size").is_none() && header["stateRoot"].is_string());
    assert_eq!(call("eth_getHeaderByHash", vec![hash.clone()]).await, header);
    assert_eq!(call("eth_getHeaderByNumber", vec![json!("0x10")]).await, json!(null));
    assert_eq!(call("eth_getUncleCountByBlockNumber", vec![json!("0x0")]).await, json!("0x0"));
    assert_eq!(call("eth_getUncleCountByBlockHash", vec![hash.clone()]).await, json!("0x0"));
    assert_eq!(call("eth_getUncleCountByBlockNumber", vec![json!("0x10")]).await, json!(null));
    let uncle = call("eth_getUncleByBlockNumberAndIndex", vec![json!("0x0"), json!("0x0")]).await;
    assert_eq!(uncle, json!(null));
    let uncle = call("eth_getUncleByBlockHashAndIndex", vec![hash, json!("0x0")]).await;
    assert_eq!(uncle, json!(null));
    drop(module);
    thread.join().unwrap();
}
