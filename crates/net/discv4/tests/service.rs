//! Three discovery services on loopback: B and C know only A; B finds C through A's
//! neighbours (endpoint proofs both ways first), and C finds B.

use alloy_eip2124::{ForkHash, ForkId};
use gigagas_discv4::{Discv4, Discv4Config};
use gigagas_net_peers::{EnrForkIdEntry, NodeRecord, PeerId, ENR_FORK_ID_KEY};
use k256::ecdsa::SigningKey;
use std::time::Duration;

const FORK: ForkId = ForkId { hash: ForkHash([0xfc, 0x64, 0xec, 0x04]), next: 1_150_000 };

fn key(seed: u8) -> SigningKey {
    SigningKey::from_slice(&[seed; 32]).unwrap()
}

fn id(key: &SigningKey) -> PeerId {
    PeerId::from_slice(&key.verifying_key().to_encoded_point(false).as_bytes()[1..])
}

async fn start(
    seed: u8,
    tcp_port: u16,
    bootnodes: Vec<NodeRecord>,
) -> (Discv4, tokio::sync::mpsc::Receiver<NodeRecord>, NodeRecord) {
    let key = key(seed);
    let ip = "127.0.0.1".parse().unwrap();
    let config = Discv4Config {
        bootnodes,
        tcp_port,
        ip,
        lookup_interval: Duration::from_millis(200),
        fork_id: Some(FORK),
        executor: gigagas_tasks::TaskManager::current().executor(),
    };
    let (service, found) =
        Discv4::spawn("127.0.0.1:0".parse().unwrap(), key.clone(), config).await.unwrap();
    let addr = service.local_addr();
    let record = NodeRecord { address: addr.ip(), udp_port: addr.port(), tcp_port, id: id(&key) };
    (service, found, record)
}

/// The next node found on `found` other than those in `skip`, within 10 s.
async fn next_other(
    found: &mut tokio::sync::mpsc::Receiver<NodeRecord>,
    skip: &[PeerId],
) -> NodeRecord {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let node = found.recv().await.expect("service running");
            if !skip.contains(&node.id) {
                return node;
            }
        }
    })
    .await
    .expect("a node found in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_find_each_other_through_a_bootnode() {
    let (a, _a_found, a_record) = start(1, 30001, vec![]).await;
    let (_b, mut b_found, b_record) = start(2, 30002, vec![a_record]).await;
    let (_c, mut c_found, c_record) = start(3, 30003, vec![a_record]).await;
    // B finds A (its bootnode), then C, which it only learns from A.
    let c_seen = next_other(&mut b_found, &[a_record.id]).await;
    assert_eq!(c_seen, c_record);
    let b_seen = next_other(&mut c_found, &[a_record.id]).await;
    assert_eq!(b_seen, b_record);
    // A holds both, their endpoints proven.
    let mut proven: Vec<PeerId> = a.proven_nodes().iter().map(|n| n.id).collect();
    proven.sort();
    let mut want = vec![b_record.id, c_record.id];
    want.sort();
    assert_eq!(proven, want);
    // The ENR answered to `ENRRequest` carries the `eth` entry; a new fork id re-signs it.
    let entry = |enr: &gigagas_net_peers::Enr| {
        enr.get_decodable::<EnrForkIdEntry>(ENR_FORK_ID_KEY).unwrap().unwrap().fork_id
    };
    assert_eq!(entry(&a.enr()), FORK);
    let seq = a.enr().seq();
    let next = ForkId { hash: ForkHash([9, 9, 9, 9]), next: 0 };
    assert!(a.set_fork_id(next));
    assert_eq!((entry(&a.enr()), a.enr().seq()), (next, seq + 1));
}
