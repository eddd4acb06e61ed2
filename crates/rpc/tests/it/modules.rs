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
