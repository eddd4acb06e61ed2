//! Discovery v5 between services on loopback: a node that knows only a bootnode finds, through
//! it, another node that knows only the same bootnode, with that node's TCP port and fork id; a
//! node whose ENR has no `eth` entry (a consensus client's, say) is never reported.

use alloy_eip2124::{ForkHash, ForkId};
use gigagas_discv5::{Discovered, Discv5, Discv5Config};
use std::{net::SocketAddr, time::Duration};
use tokio::sync::mpsc::Receiver;

fn key(seed: u8) -> k256::ecdsa::SigningKey {
    k256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap()
}

fn peers_enr(enr: &gigagas_discv5::Discv5Enr) -> gigagas_net_peers::Enr {
    enr.to_base64().parse().unwrap()
}

async fn start(
    seed: u8,
    tcp_port: u16,
    fork_id: Option<ForkId>,
    bootnodes: Vec<gigagas_net_peers::Enr>,
) -> (Discv5, Receiver<Discovered>) {
    let config = Discv5Config {
        bootnodes,
        tcp_port,
        ip: "127.0.0.1".parse().unwrap(),
        fork_id,
        lookup_interval: Duration::from_millis(500),
        executor: gigagas_tasks::TaskManager::current().executor(),
    };
    Discv5::spawn(SocketAddr::from(([127, 0, 0, 1], 0)), key(seed), config).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_is_found_through_a_bootnode_with_its_tcp_port_and_fork_id() {
    let fork = ForkId { hash: ForkHash([1, 2, 3, 4]), next: 0 };
    let (boot, _boot_found) = start(1, 30301, Some(fork), vec![]).await;
    let boot_enr = peers_enr(&boot.enr());
    let (other, _other_found) = start(2, 30302, Some(fork), vec![boot_enr.clone()]).await;
    // A node without an `eth` entry: in the tables, never reported.
    let (_cl, _cl_found) = start(3, 9000, None, vec![boot_enr.clone()]).await;
    let (seeker, mut found) = start(4, 30304, Some(fork), vec![boot_enr]).await;
    assert_eq!(seeker.enr().tcp4(), Some(30304));

    let other_id = gigagas_net_peers::NodeRecord::from_enr(&peers_enr(&other.enr())).unwrap().id;
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !seen.iter().any(|d: &Discovered| d.record.id == other_id) {
        let next = tokio::time::timeout_at(deadline, found.recv()).await;
        seen.push(next.expect("the other node found in 30 s").expect("service running"));
    }
    let other_found = seen.iter().find(|d| d.record.id == other_id).unwrap();
    assert_eq!(other_found.record.tcp_port, 30302);
    assert_eq!(other_found.record.udp_port, other.local_addr().port());
    assert_eq!(other_found.fork_id, fork);
    assert!(
        seen.iter().all(|d| d.record.tcp_port != 9000),
        "a node without `eth` reported: {seen:?}"
    );

    // Crossing a fork re-signs the record with the new entry.
    let seq = seeker.enr().seq();
    let next = ForkId { hash: ForkHash([5, 6, 7, 8]), next: 0 };
    assert!(seeker.set_fork_id(next));
    assert!(seeker.enr().seq() > seq);
    assert_eq!(gigagas_discv5::dialable(&seeker.enr()).unwrap().fork_id, next);
}
