//! Networks of in-process nodes on loopback. Discovery: B and C know only A (their bootnode);
//! kademlia makes B and C find each other. A node key kept in a file gives the same peer id
//! after a restart. Propagation: a proposer's blocks reach every node, byte for byte, by rlnc,
//! rs and gossipsub; a peer publishing under another key is disconnected and banned while the
//! proposer's blocks still arrive; a relay forging the chunks it forwards is caught the same
//! way. A sync request the serving node's store cannot read fails at the asking node instead of
//! being answered short; answers stop at the soft response limit. Fuzzing of the decoders of peer input (it/fuzz.rs).

use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_eip7928::AccountChanges;
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use alloy_rlp::Encodable;
use gigagas_net::{
    faults::Faults,
    propagation::{BlockSigner, PropagationConfig, Protocol},
    request_handler::EthRequestHandler,
    spawn,
    sync::{SyncRequest, SyncResponse, SOFT_RESPONSE_LIMIT},
    NetworkConfig,
};
use gigagas_storage_api::{
    BlockAccessListReader, BlockNumReader, BlockReader, HeaderProvider, ProviderError,
    ProviderResult,
};
use std::time::Duration;

#[path = "it/fuzz.rs"]
mod fuzz;

fn config(bootnodes: Vec<gigagas_net::Multiaddr>) -> NetworkConfig {
    NetworkConfig {
        addr: "127.0.0.1".parse().unwrap(),
        port: 0,
        bootnodes,
        secret_key: None,
        max_peers: 50,
        propagation: None,
        degree: 8,
        shaping: Default::default(),
        faults: Default::default(),
        request_handler: None,
        tasks: None,
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

/// A store of headers `0..count`, each with `extra` bytes of extra data; every read fails with
/// `fail`.
#[derive(Debug)]
struct Headers {
    count: u64,
    extra: usize,
    fail: bool,
}

impl Headers {
    fn read<T>(&self, value: T) -> ProviderResult<T> {
        if self.fail {
            return Err(ProviderError::Database {
                location: "test".into(),
                what: "read",
                source: "disk gone".into(),
            });
        }
        Ok(value)
    }
}

impl BlockNumReader for Headers {
    fn best_block(&self) -> ProviderResult<Option<(u64, B256)>> {
        self.read(self.count.checked_sub(1).map(|n| (n, B256::with_last_byte(n as u8))))
    }

    fn block_number(&self, hash: &B256) -> ProviderResult<Option<u64>> {
        self.read(Some(u64::from(hash[31])).filter(|n| *n < self.count))
    }
}

impl HeaderProvider for Headers {
    fn header_by_number(&self, number: u64) -> ProviderResult<Option<Header>> {
        self.read((number < self.count).then(|| Header {
            number,
            extra_data: vec![0xab; self.extra].into(),
            ..Default::default()
        }))
    }
}

impl BlockReader for Headers {
    fn body_by_number(&self, number: u64) -> ProviderResult<Option<BlockBody<TxEnvelope>>> {
        self.read((number < self.count).then(BlockBody::default))
    }
}

impl gigagas_storage_api::ReceiptProvider for Headers {
    fn receipts_by_number(
        &self,
        number: u64,
    ) -> ProviderResult<Option<Vec<alloy_consensus::ReceiptEnvelope>>> {
        self.read((number < self.count).then(Vec::new))
    }
}

impl BlockAccessListReader for Headers {
    fn block_access_list(&self, _: u64) -> ProviderResult<Option<Vec<AccountChanges>>> {
        self.read(None)
    }
}

fn handler(store: Headers) -> EthRequestHandler {
    EthRequestHandler::new(std::sync::Arc::new(store), 1, B256::ZERO)
}

#[test]
fn answers_stop_at_the_soft_response_limit_and_the_item_limits() {
    let headers = |start: u64, limit: u64, skip: u64, reverse: bool| SyncRequest::GetBlockHeaders {
        start: HashOrNumber::Number(start),
        limit,
        skip,
        reverse,
    };
    let numbers = |response: SyncResponse| match response {
        SyncResponse::BlockHeaders(h) => h.iter().map(|h| h.number).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    // 100 KiB headers: the 21st crosses 2 MiB and is the last one sent.
    let big = handler(Headers { count: 2000, extra: 100 * 1024, fail: false });
    let answer = numbers(big.on_request(headers(0, 1024, 0, false)).unwrap());
    let per_header =
        Header { extra_data: vec![0xab; 100 * 1024].into(), ..Default::default() }.length();
    assert_eq!(answer.len(), SOFT_RESPONSE_LIMIT.div_ceil(per_header));
    assert_eq!(answer.len(), 21);
    // Small headers: MAX_HEADERS at most; skip and direction; the end of the chain ends it.
    let small = handler(Headers { count: 2000, extra: 0, fail: false });
    assert_eq!(numbers(small.on_request(headers(0, 5000, 0, false)).unwrap()).len(), 1024);
    assert_eq!(numbers(small.on_request(headers(10, 4, 2, true)).unwrap()), [10, 7, 4, 1]);
    assert_eq!(numbers(small.on_request(headers(1998, 5, 0, false)).unwrap()), [1998, 1999]);
    let bodies = small
        .on_request(SyncRequest::GetBlockBodies(
            (0..300).map(|n| B256::with_last_byte(n as u8)).collect(),
        ))
        .unwrap();
    assert!(matches!(bodies, SyncResponse::BlockBodies(b) if b.len() == 256), "MAX_BODIES");
    // A failed read is an error, not a shorter answer.
    let failing = handler(Headers { count: 2000, extra: 0, fail: true });
    assert!(failing.on_request(headers(0, 4, 0, false)).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_error_fails_the_request_instead_of_a_short_answer() {
    let request = || SyncRequest::GetBlockHeaders {
        start: HashOrNumber::Number(7),
        limit: 4,
        skip: 0,
        reverse: false,
    };
    for fail in [false, true] {
        let server = spawn(NetworkConfig {
            request_handler: Some(handler(Headers { count: 8, extra: 0, fail })),
            ..config(vec![])
        })
        .await
        .unwrap();
        let client = spawn(config(vec![server.listen_addr().clone()])).await.unwrap();
        tokio::time::timeout(Duration::from_secs(30), client.wait_for_peers(1))
            .await
            .expect("connected")
            .unwrap();
        let answer = client.request(server.local_peer_id(), request()).await;
        match (fail, answer) {
            (false, Ok(SyncResponse::BlockHeaders(headers))) => {
                assert_eq!(headers.iter().map(|h| h.number).collect::<Vec<_>>(), [7]);
            }
            (true, Err(gigagas_net::NetError::Request { .. })) => {}
            (fail, other) => panic!("provider failing: {fail}: {other:?}"),
        }
        for n in [client, server] {
            n.shutdown().await.unwrap();
        }
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

/// The tests' propagation settings: N = 16, k = 8, the defaults otherwise; `signer` signs what
/// the node publishes, blocks signed by `proposer` are accepted.
fn propagation(
    protocol: Protocol,
    signer: Option<BlockSigner>,
    proposer: &BlockSigner,
) -> PropagationConfig {
    PropagationConfig {
        protocol,
        chunks: 16,
        per_peer: 8,
        wave: None,
        skip_known: true,
        feedback: true,
        pace_bits_per_sec: None,
        signer,
        proposer: Some(proposer.public()),
    }
}

/// A network of `n` nodes on loopback: node 0 proposes (signs with `proposer`), all accept
/// blocks signed by `proposer`; every node knows node 0 as its bootnode.
async fn network(
    protocol: Protocol,
    n: usize,
    proposer: &BlockSigner,
) -> Vec<gigagas_net::NetworkHandle> {
    network_with_faults(protocol, n, proposer, Faults::default()).await
}

/// [`network`], every follower injecting `faults` (with the `fault-injection` feature: dropping
/// a share of the frames or messages it receives).
async fn network_with_faults(
    protocol: Protocol,
    n: usize,
    proposer: &BlockSigner,
    faults: Faults,
) -> Vec<gigagas_net::NetworkHandle> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let first = NetworkConfig {
        propagation: Some(propagation(protocol, Some(proposer.clone()), proposer)),
        ..config(vec![])
    };
    let first = spawn(first).await.unwrap();
    let mut nodes = vec![first.clone()];
    for _ in 1..n {
        let c = NetworkConfig {
            propagation: Some(propagation(protocol, None, proposer)),
            faults,
            ..config(vec![first.listen_addr().clone()])
        };
        nodes.push(spawn(c).await.unwrap());
    }
    let all = futures::future::join_all(nodes.iter().map(|n| n.wait_for_peers(2)));
    tokio::time::timeout(Duration::from_secs(60), all).await.expect("peers within 60 s");
    nodes
}

/// Each node's propagation counters, peer count and link bytes (for a failure's message).
fn stats(nodes: &[gigagas_net::NetworkHandle]) -> Vec<impl std::fmt::Debug> {
    nodes.iter().map(|n| (n.stats().snapshot(), n.peers().len(), n.link_bytes())).collect()
}

/// Publishes until it works (gossipsub needs a mesh first), returns the key.
async fn publish(node: &gigagas_net::NetworkHandle, payload: &[u8]) -> [u8; 32] {
    for _ in 0..100 {
        match node.publish(payload.to_vec()).await {
            Ok(key) => return key,
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    panic!("could not publish");
}

async fn propagates(protocol: Protocol) {
    propagates_with_faults(protocol, Faults::default()).await;
}

async fn propagates_with_faults(protocol: Protocol, faults: Faults) {
    let proposer = BlockSigner::from_seed(&[1; 32]).unwrap();
    let nodes = network_with_faults(protocol, 6, &proposer, faults).await;
    let mut receivers: Vec<_> = nodes[1..].iter().map(|n| n.take_blocks().unwrap()).collect();
    // Two blocks of 300 KB, random (snappy cannot shrink them).
    for seed in 0..2u64 {
        let mut payload = vec![0u8; 300_000];
        rand::RngCore::fill_bytes(
            &mut <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed),
            &mut payload,
        );
        let key = publish(&nodes[0], &payload).await;
        for (i, rx) in receivers.iter_mut().enumerate() {
            let got = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("{protocol}: node {} got no block {seed}: {:#?}", i + 1, stats(&nodes))
                })
                .unwrap();
            assert_eq!(got.key, key);
            assert_eq!(got.payload, payload, "{protocol}: node {} decoded other bytes", i + 1);
            nodes[i + 1].report_block(got.key, true);
        }
    }
    for (i, n) in nodes.iter().enumerate().skip(1) {
        let s = n.stats().snapshot();
        assert_eq!(s.decoded, 2, "{protocol}: node {i}: {s:?}");
        assert_eq!(s.invalid, 0, "{protocol}: node {i}: {s:?}");
        // The link counters wrap TCP: with the `quic` feature, connections made over QUIC are
        // neither shaped nor counted.
        if cfg!(not(feature = "quic")) {
            assert!(n.link_bytes().0 >= 600_000, "{protocol}: node {i} read {:?}", n.link_bytes());
        }
    }
    #[cfg(feature = "fault-injection")]
    if faults.loss > 0.0 {
        let lost: u64 = nodes.iter().map(|n| n.stats().snapshot().lost).sum();
        assert!(lost > 0, "{protocol}: {} loss injected, no frame dropped", faults.loss);
    }
    for n in nodes {
        n.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_propagate_by_rlnc() {
    propagates(Protocol::Rlnc).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_propagate_by_reed_solomon() {
    propagates(Protocol::Rs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_propagate_by_gossipsub() {
    propagates(Protocol::Gossipsub).await;
}

/// 5% of the frames lost at every follower: the coded protocols still deliver every block
/// (other combinations, or other shards, make up for the lost ones). gossipsub does not: a
/// message lost after its id was seen is not taken again, the node recovers by sync (the
/// devnet's `--loss`).
#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rlnc_delivers_with_5_percent_frame_loss() {
    propagates_with_faults(Protocol::Rlnc, Faults { loss: 0.05, forge: false }).await;
}

#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reed_solomon_delivers_with_5_percent_frame_loss() {
    propagates_with_faults(Protocol::Rs, Faults { loss: 0.05, forge: false }).await;
}

/// A relay that alters the chunks it forwards (correctly signed blocks, data that is not the
/// claimed combination: RLNC's commitment check, RS's Merkle proof) is caught — for RLNC in a
/// batch check off the push engine's task, the forged chunk named among honest ones — scored
/// down and disconnected, and every honest node still decodes every block.
#[cfg(feature = "fault-injection")]
async fn forging_relay_is_banned(protocol: Protocol) {
    let proposer = BlockSigner::from_seed(&[1; 32]).unwrap();
    let nodes = network(protocol, 4, &proposer).await;
    let forger = spawn(NetworkConfig {
        propagation: Some(propagation(protocol, None, &proposer)),
        faults: Faults { loss: 0.0, forge: true },
        ..config(nodes.iter().map(|n| n.listen_addr().clone()).collect())
    })
    .await
    .unwrap();
    tokio::time::timeout(Duration::from_secs(60), forger.wait_for_peers(2)).await.unwrap().unwrap();
    let mut receivers: Vec<_> = nodes[1..].iter().map(|n| n.take_blocks().unwrap()).collect();
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(11);
    for round in 0.. {
        let mut payload = vec![0u8; 200_000];
        rand::RngCore::fill_bytes(&mut rng, &mut payload);
        let key = publish(&nodes[0], &payload).await;
        for (i, rx) in receivers.iter_mut().enumerate() {
            let got = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("{protocol}: node {} got no block {round}: {:#?}", i + 1, stats(&nodes))
                })
                .unwrap();
            assert_eq!(
                (got.key, got.payload == payload),
                (key, true),
                "{protocol}: node {}",
                i + 1
            );
            nodes[i + 1].report_block(got.key, true);
        }
        let offended: Vec<_> = nodes.iter().filter(|n| n.stats().snapshot().invalid > 0).collect();
        let forger_id = forger.local_peer_id();
        if !offended.is_empty() && offended.iter().all(|n| !n.peers().contains(&forger_id)) {
            break;
        }
        assert!(round < 30, "{protocol}: the forger was not caught in 30 blocks");
    }
    if protocol == Protocol::Rlnc {
        let batches: u64 = nodes.iter().map(|n| n.stats().snapshot().batches).sum();
        assert!(batches > 0, "rlnc chunks are verified in batches");
    }
    shutdown(forger, nodes).await;
}

#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_forging_chunks_is_banned_rlnc() {
    forging_relay_is_banned(Protocol::Rlnc).await;
}

#[cfg(feature = "fault-injection")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_forging_chunks_is_banned_rs() {
    forging_relay_is_banned(Protocol::Rs).await;
}

/// A peer publishing blocks under another key is caught on its first chunk, scored down and
/// disconnected; the honest proposer's block still reaches everyone.
async fn forger_is_banned(protocol: Protocol) {
    let proposer = BlockSigner::from_seed(&[1; 32]).unwrap();
    let nodes = network(protocol, 4, &proposer).await;
    let forger_key = BlockSigner::from_seed(&[9; 32]).unwrap();
    let forger = spawn(NetworkConfig {
        propagation: Some(propagation(protocol, Some(forger_key.clone()), &forger_key)),
        ..config(vec![nodes[1].listen_addr().clone()])
    })
    .await
    .unwrap();
    tokio::time::timeout(Duration::from_secs(60), forger.wait_for_peers(1)).await.unwrap().unwrap();
    let mut receivers: Vec<_> = nodes[1..].iter().map(|n| n.take_blocks().unwrap()).collect();
    // Every honest node the forger sent data to counts it invalid and drops the forger. The
    // forger publishes a new block every 500 ms until then (a connection made and remade at
    // start can leave its first block with no peer to go to).
    let dropped = async {
        for round in 0u8.. {
            let _ = forger.publish(vec![round; 50_000]).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            let offended: Vec<_> =
                nodes.iter().filter(|n| n.stats().snapshot().invalid > 0).collect();
            if !offended.is_empty()
                && offended.iter().all(|n| !n.peers().contains(&forger.local_peer_id()))
            {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), dropped).await.expect("forger disconnected");
    let payload = vec![3u8; 100_000];
    let key = publish(&nodes[0], &payload).await;
    for rx in &mut receivers {
        let got = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.unwrap().unwrap();
        assert_eq!((got.key, got.payload), (key, payload.clone()), "{protocol}");
    }
    shutdown(forger, nodes).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forging_peer_is_banned_rlnc() {
    forger_is_banned(Protocol::Rlnc).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forging_peer_is_banned_rs() {
    forger_is_banned(Protocol::Rs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forging_peer_is_banned_gossipsub() {
    forger_is_banned(Protocol::Gossipsub).await;
}

/// With the `quic` feature, a node listens on QUIC (same port, UDP) next to TCP, and a node
/// that knows only the QUIC address connects over it (`cargo test -p gigagas-net --features quic`).
#[cfg(feature = "quic")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_connect_over_quic() {
    let a = spawn(config(vec![])).await.unwrap();
    let tcp = a.listen_addr().to_string();
    let (host, peer) = tcp.split_once("/p2p/").expect("a listen address names its peer id");
    let quic: gigagas_net::Multiaddr =
        format!("{}/quic-v1/p2p/{peer}", host.replace("/tcp/", "/udp/")).parse().unwrap();
    let b = spawn(config(vec![quic.clone()])).await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(20), b.wait_for_peers(1))
        .await
        .unwrap_or_else(|_| panic!("no connection over {quic}"))
        .unwrap();
    assert!(b.peers().iter().any(|p| p.to_string() == peer));
}

/// Stops the forger and the network.
async fn shutdown(forger: gigagas_net::NetworkHandle, nodes: Vec<gigagas_net::NetworkHandle>) {
    forger.shutdown().await.unwrap();
    for n in nodes {
        n.shutdown().await.unwrap();
    }
}
