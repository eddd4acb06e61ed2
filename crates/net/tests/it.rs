//! Three nodes on loopback: B and C know only A (their bootnode); kademlia makes B and C find
//! each other, so every node ends with two peers. A node key kept in a file gives the same peer
//! id after a restart.

use gigagas_net::{spawn, NetworkConfig};
use std::time::Duration;

fn config(bootnodes: Vec<gigagas_net::Multiaddr>) -> NetworkConfig {
    NetworkConfig {
        addr: "127.0.0.1".parse().unwrap(),
        port: 0,
        bootnodes,
        secret_key: None,
        max_peers: 50,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_find_each_other_through_a_bootnode() {
    let a = spawn(config(vec![])).await.unwrap();
    let b = spawn(config(vec![a.listen_addr().clone()])).await.unwrap();
    let c = spawn(config(vec![a.listen_addr().clone()])).await.unwrap();
    let all = async {
        a.wait_for_peers(2).await.unwrap();
        b.wait_for_peers(2).await.unwrap();
        c.wait_for_peers(2).await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(60), all).await.expect("discovery within 60 s");
    assert!(b.peers().contains(&c.local_peer_id()), "B did not find C");
    assert!(c.peers().contains(&b.local_peer_id()), "C did not find B");
    for n in [a, b, c] {
        n.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_key_file_keeps_the_peer_id() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("p2p-secret");
    let with_key = NetworkConfig { secret_key: Some(key.clone()), ..config(vec![]) };
    let first = spawn(with_key.clone()).await.unwrap();
    let id = first.local_peer_id();
    first.shutdown().await.unwrap();
    assert_eq!(std::fs::read_to_string(&key).unwrap().len(), 64, "32 hex bytes");
    let second = spawn(with_key).await.unwrap();
    assert_eq!(second.local_peer_id(), id);
    second.shutdown().await.unwrap();
    std::fs::write(&key, "zz").unwrap();
    let err = spawn(NetworkConfig { secret_key: Some(key), ..config(vec![]) }).await.unwrap_err();
    assert!(err.to_string().contains("node key"), "{err}");
}
