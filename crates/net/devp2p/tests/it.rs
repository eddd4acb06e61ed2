//! A session against a scripted peer on loopback (the peer side built from the same layers):
//! the handshakes, requests answered by id, a BAL request on eth/71, a peer on another chain
//! refused with a typed reason, an answer nobody asked for ending the session, and a moving head
//! announced (`BlockRangeUpdate`) and carried into new sessions' `Status`; transactions
//! announced, fetched into the pool, and peers that send unasked or invalid ones dropped; a
//! peer on another fork refused, one that leaves or stalls mid-request a typed failure; a peer
//! that sends an oversize message or a frame with a bad MAC dropped, the request failed.

use alloy_consensus::Header;
use alloy_eip2124::{ForkFilter, ForkHash, ForkId, Head};
use alloy_eips::eip1898::HashOrNumber;
use alloy_eips::eip7594::BlobTransactionSidecarVariant;
use alloy_primitives::B256;
use futures::{SinkExt, StreamExt};
use gigagas_devp2p::{
    fetcher::{check_network_transaction, Checked},
    Devp2pNetwork, LocalNode, NetworkConfig, NetworkPool, PoolImportError, SessionError,
    TransactionAnnouncement,
};
use gigagas_eth_wire::{eth_protocols, EthStream, EthStreamError, HelloMessage, P2PStream};
use gigagas_eth_wire_types::{
    BlockAccessLists, CustodyBitmap, EthMessage, NetworkTransactions, NewPooledTransactionHashes,
    RequestPair, StatusMessage,
};
use gigagas_net_ecies::{peer_id, random_secret_key, EciesStream, SecretKey};
use gigagas_net_p2p::BlockClient;
use gigagas_net_peers::NodeRecord;
use std::{sync::Arc, time::Duration};

#[path = "it/fuzz.rs"]
mod fuzz;

fn status(genesis: B256) -> (StatusMessage, ForkFilter) {
    let filter = ForkFilter::new(Head::default(), genesis, 0, Vec::new());
    let status = StatusMessage {
        version: 0,
        network_id: 1337,
        genesis,
        fork_id: ForkId { hash: ForkHash::from(genesis), next: 0 },
        earliest: 0,
        latest: 2,
        latest_hash: B256::repeat_byte(9),
    };
    assert_eq!(filter.current(), status.fork_id);
    (status, filter)
}

fn local(genesis: B256) -> LocalNode {
    let (status, fork_filter) = status(genesis);
    LocalNode {
        secret: random_secret_key(),
        client_version: "gigagas/test".into(),
        port: 0,
        discovery_port: 0,
        external_ip: None,
        status,
        fork_filter,
    }
}

/// A peer listening on loopback that runs the handshakes on chain `genesis`, then `script`.
async fn peer<F, Fut>(genesis: B256, script: F) -> NodeRecord
where
    F: FnOnce(EthStream<EciesStream<tokio::net::TcpStream>>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let (ours, filter) = status(genesis);
    peer_with_status(ours, filter, script).await
}

/// A peer listening on loopback that announces `ours` (and checks ours with `filter`), then
/// runs `script`.
async fn peer_with_status<F, Fut>(ours: StatusMessage, filter: ForkFilter, script: F) -> NodeRecord
where
    F: FnOnce(EthStream<EciesStream<tokio::net::TcpStream>>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let secret: SecretKey = random_secret_key();
    let id = peer_id(&secret.public_key());
    tokio::spawn(async move {
        let (io, _) = listener.accept().await.unwrap();
        let ecies = EciesStream::accept(io, secret).await.unwrap();
        let hello = HelloMessage {
            protocol_version: 5,
            client_version: "scripted".into(),
            capabilities: eth_protocols().into_iter().map(|p| p.cap).collect(),
            port: 0,
            id,
        };
        let Ok((p2p, _)) = P2PStream::handshake(ecies, &hello, &eth_protocols()).await else {
            return;
        };
        if let Ok((eth, _)) = EthStream::handshake(p2p, ours, &filter).await {
            script(eth).await;
        }
    });
    NodeRecord { address: addr.ip(), tcp_port: addr.port(), udp_port: 0, id }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_answered_by_id_and_a_stray_answer_ends_the_session() {
    let genesis = B256::repeat_byte(1);
    let record = peer(genesis, |mut eth| async move {
        while let Some(Ok(message)) = eth.next().await {
            let answer = match message {
                EthMessage::GetBlockHeaders(p) => {
                    let headers = (1..=p.message.amount.min(2))
                        .map(|number| Header { number, ..Default::default() })
                        .collect();
                    EthMessage::BlockHeaders(RequestPair {
                        request_id: p.request_id,
                        message: headers,
                    })
                }
                EthMessage::GetBlockAccessLists(p) => {
                    // Then an answer to a request never made.
                    let bals = BlockAccessLists(vec![None; p.message.len()]);
                    eth.send(EthMessage::BlockAccessLists(RequestPair {
                        request_id: p.request_id,
                        message: bals,
                    }))
                    .await
                    .unwrap();
                    EthMessage::BlockHeaders(RequestPair { request_id: 999, message: vec![] })
                }
                _ => continue,
            };
            if eth.send(answer).await.is_err() {
                return;
            }
        }
    })
    .await;
    let network = NetworkConfig::new(local(genesis)).start();
    let session = network.dial(record).await.unwrap();
    assert_eq!(session.version.number(), 72);
    assert_eq!(session.client_version, "scripted");
    assert_eq!(network.peers(), vec![record.id]);
    // What RPC's admin_peers and net_peerCount see.
    let info = gigagas_net_api::NetworkInfo::peers(&network);
    assert_eq!(info.len(), 1);
    assert_eq!(
        (info[0].name.as_str(), info[0].caps.clone()),
        ("scripted", vec!["eth/72".to_string()])
    );
    assert_eq!(info[0].id, alloy_primitives::hex::encode(record.id));
    assert_eq!(info[0].enode, Some(record.to_string()));
    assert!(!info[0].inbound);
    assert!(matches!(
        gigagas_net_api::NetworkInfo::add_peer(&network, "enode://nope"),
        Err(gigagas_net_api::AddPeerError::InvalidAddress(_))
    ));
    let headers = network.get_headers(record.id, HashOrNumber::Number(1), 5, false).await.unwrap();
    assert_eq!(headers.iter().map(|h| h.number).collect::<Vec<_>>(), vec![1, 2]);
    let bals = network.get_block_access_lists(record.id, vec![B256::ZERO; 3]).await.unwrap();
    assert_eq!(bals, vec![None, None, None]);
    // The unrequested BlockHeaders closes the session.
    for _ in 0..100 {
        if network.peers().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(network.peers().is_empty(), "the session outlived an unrequested answer");
    assert!(network.get_headers(record.id, HashOrNumber::Number(1), 1, false).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_on_another_chain_is_refused_with_the_reason() {
    let record = peer(B256::repeat_byte(2), |_| async {}).await;
    let network = NetworkConfig::new(local(B256::repeat_byte(3))).start();
    match network.dial(record).await {
        Err(SessionError::Eth(EthStreamError::GenesisMismatch { ours, theirs })) => {
            assert_eq!((ours, theirs), (B256::repeat_byte(3), B256::repeat_byte(2)));
        }
        other => panic!("expected a genesis mismatch, got {other:?}"),
    }
    assert!(network.peers().is_empty());
}

/// Polls `check` every 20 ms for up to 2 s.
async fn eventually(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moving_head_is_announced_and_new_sessions_see_it() {
    let genesis = B256::repeat_byte(4);
    let server = NetworkConfig::new(local(genesis)).start();
    server.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let record = server.enode().unwrap();
    // What admin_nodeInfo shows: the enode and a signed ENR of the same node and port.
    let info = gigagas_net_api::NetworkInfo::node_info(&server);
    assert_eq!(info.enode, Some(record.to_string()));
    let enr: gigagas_net_peers::BootNode = info.enr.expect("an ENR").parse().unwrap();
    assert_eq!((enr.record.id, enr.record.tcp_port), (record.id, record.tcp_port));
    let client = NetworkConfig::new(local(genesis)).start();
    assert_eq!(client.dial(record).await.unwrap().status.latest, 2);
    let latest = |n: &Devp2pNetwork| n.sessions().first().map(|s| s.status.latest);
    // Fewer than 32 blocks on: not announced yet (geth's pace).
    server.update_head(20, B256::repeat_byte(20), 0).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(latest(&client), Some(2));
    // 32 or more: a BlockRangeUpdate, which the client keeps as what the peer serves.
    server.update_head(40, B256::repeat_byte(40), 0).await;
    assert!(eventually(|| latest(&client) == Some(40)).await, "{:?}", latest(&client));
    assert_eq!(client.sessions()[0].status.latest_hash, B256::repeat_byte(40));
    // Moving back is announced at once.
    server.update_head(39, B256::repeat_byte(39), 0).await;
    assert!(eventually(|| latest(&client) == Some(39)).await, "{:?}", latest(&client));
    // A new session's Status carries the head.
    let late = NetworkConfig::new(local(genesis)).start();
    let session = late.dial(record).await.unwrap();
    assert_eq!((session.status.latest, session.status.latest_hash), (39, B256::repeat_byte(39)));
}

/// The network manager keeps a static peer in session: one not up yet is dialed again until
/// it answers, one whose session ends is dialed again; beyond the peer limit a newcomer that
/// dials in is refused with `TooManyPeers`, while a static peer is still taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_peers_are_kept_in_session_and_the_limit_refuses_newcomers() {
    use gigagas_eth_wire::{DisconnectReason, P2PStreamError};
    let genesis = B256::repeat_byte(5);
    // B's address and identity, before B listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let b_local = local(genesis);
    let b_id = peer_id(&b_local.secret.public_key());
    let b_record = NodeRecord {
        address: std::net::Ipv4Addr::LOCALHOST.into(),
        tcp_port: port,
        udp_port: 0,
        id: b_id,
    };
    let a =
        NetworkConfig::new(local(genesis)).with_max_peers(1).with_static_peers([b_record]).start();
    a.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    assert_eq!(a.static_peers(), vec![b_record]);
    // The first dial fails (nobody listens); B comes up and the redial finds it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(a.sessions().is_empty());
    let b = NetworkConfig::new(b_local.clone()).start();
    b.listen(b_record.tcp_addr()).await.unwrap();
    let redial = gigagas_devp2p::peers::REDIAL_INTERVAL + Duration::from_secs(3);
    let connected = |n: &Devp2pNetwork| n.sessions().iter().any(|s| s.record.id == b_id);
    let waited = tokio::time::timeout(redial, async {
        while !connected(&a) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert!(waited.await.is_ok(), "the static peer was not dialed again");
    // A is full (1 session): a newcomer is refused with the reason.
    let newcomer = NetworkConfig::new(local(genesis)).start();
    match newcomer.dial(a.enode().unwrap()).await {
        // Told after its Hello, while it waits for our Status.
        Err(SessionError::Eth(EthStreamError::P2P(P2PStreamError::Disconnected(
            DisconnectReason::TooManyPeers,
        )))) => {}
        other => panic!("expected TooManyPeers, got {other:?}"),
    }
    // B goes away and comes back on the same port: A dials it again.
    let a_id = a.local_id();
    gigagas_net_p2p::BlockClient::report_bad_message(&b, a_id);
    assert!(eventually(|| !connected(&a)).await, "the session did not end");
    drop(b);
    let b = NetworkConfig::new(b_local).start();
    // The old listener goes with its manager, a moment after the last handle.
    let mut bound = b.listen(b_record.tcp_addr()).await;
    for _ in 0..50 {
        if bound.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        bound = b.listen(b_record.tcp_addr()).await;
    }
    bound.unwrap();
    let waited = tokio::time::timeout(redial, async {
        while !connected(&a) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    assert!(waited.await.is_ok(), "the static peer was not dialed again after its session ended");
}

/// On the node's graceful shutdown the network manager tells every peer `ClientQuitting`
/// and lets the wait end; the peer sees the session close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_says_goodbye_to_the_peers() {
    let genesis = B256::repeat_byte(6);
    let tasks = gigagas_tasks::TaskManager::current();
    let a = NetworkConfig::new(local(genesis)).with_executor(tasks.executor()).start();
    a.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let b = NetworkConfig::new(local(genesis)).start();
    b.dial(a.enode().unwrap()).await.unwrap();
    assert!(eventually(|| a.sessions().len() == 1).await);
    assert!(tasks.graceful_shutdown_with_timeout(Duration::from_secs(5)).await);
    assert!(a.sessions().is_empty());
    assert!(eventually(|| b.sessions().is_empty()).await, "the peer still holds the session");
    let anyone =
        NodeRecord { id: peer_id(&random_secret_key().public_key()), ..a.enode().unwrap() };
    assert!(matches!(a.dial(anyone).await, Err(SessionError::NetworkStopped)));
}

/// A pool of whatever passes the wire's checks, keyed by transaction hash; bytes starting with
/// 0xff are no transaction.
#[derive(Debug, Default)]
struct TestPool(std::sync::Mutex<std::collections::HashMap<B256, alloy_primitives::Bytes>>);

impl NetworkPool for TestPool {
    fn contains(&self, hash: &B256) -> bool {
        self.0.lock().unwrap().contains_key(hash)
    }
    fn network_transactions(
        &self,
        hashes: &[B256],
        _: usize,
        without_blobs: bool,
    ) -> Vec<alloy_primitives::Bytes> {
        let pool = self.0.lock().unwrap();
        hashes
            .iter()
            .filter_map(|h| pool.get(h))
            .map(|raw| if without_blobs { strip_blobs(raw).into() } else { raw.clone() })
            .collect()
    }
    /// The first 64 columns are the blob itself; the extension's are not computed here.
    fn cells(&self, hashes: &[B256], columns: &[u64]) -> Vec<Option<Vec<alloy_primitives::Bytes>>> {
        let pool = self.0.lock().unwrap();
        hashes
            .iter()
            .map(|h| {
                let (_, blobs) = decode_blob(pool.get(h)?)?;
                let mut out = Vec::new();
                for column in columns {
                    let c = usize::try_from(*column).ok().filter(|c| *c < 64)?;
                    for blob in &blobs {
                        out.push(blob.0[c * 2048..(c + 1) * 2048].to_vec().into());
                    }
                }
                Some(out)
            })
            .collect()
    }
    fn import(&self, raws: &[alloy_primitives::Bytes]) -> Vec<Result<B256, PoolImportError>> {
        raws.iter()
            .map(|raw| {
                let Ok(Checked { hash, .. }) = check_network_transaction(raw, false, false) else {
                    return Err(PoolImportError::Invalid(Arc::new(std::io::Error::other(
                        "not a transaction",
                    ))));
                };
                match self.0.lock().unwrap().insert(hash, raw.clone()) {
                    Some(_) => Err(PoolImportError::Declined(Arc::new(std::io::Error::other(
                        "already known",
                    )))),
                    None => Ok(hash),
                }
            })
            .collect()
    }
}

type Network = alloy_consensus::EthereumTxEnvelope<
    alloy_consensus::TxEip4844WithSidecar<BlobTransactionSidecarVariant>,
>;

/// A blob transaction's network form decoded, and its blobs.
fn decode_blob(raw: &[u8]) -> Option<(Network, Vec<alloy_eips::eip4844::Blob>)> {
    use alloy_eips::eip2718::Decodable2718;
    let tx = Network::decode_2718_exact(raw).ok()?;
    let alloy_consensus::EthereumTxEnvelope::Eip4844(signed) = &tx else { return None };
    let blobs = signed.tx().sidecar.blobs().to_vec();
    Some((tx, blobs))
}

/// `raw` without its blobs when it is a blob transaction's network form (eth/72's form).
fn strip_blobs(raw: &[u8]) -> Vec<u8> {
    use alloy_eips::eip2718::Encodable2718;
    let Some((mut tx, _)) = decode_blob(raw) else { return raw.to_vec() };
    let alloy_consensus::EthereumTxEnvelope::Eip4844(signed) = &mut tx else { unreachable!() };
    if let BlobTransactionSidecarVariant::Eip7594(s) = &mut signed.tx_mut().sidecar {
        s.blobs.clear();
    }
    tx.encoded_2718()
}

/// A signed EIP-1559 transaction of nonce `nonce` (the signature is not checked here).
fn eip1559(nonce: u64) -> Vec<u8> {
    use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
    use alloy_eips::eip2718::Encodable2718;
    let tx = TxEip1559 { chain_id: 1, nonce, ..Default::default() };
    TxEnvelope::from(tx.into_signed(alloy_primitives::Signature::test_signature())).encoded_2718()
}

/// A blob transaction's network form: one blob, its commitment matching its versioned hash
/// (the proofs are the pool's to check).
fn blob_transaction() -> Vec<u8> {
    use alloy_consensus::{
        EthereumTxEnvelope, SignableTransaction, TxEip4844, TxEip4844WithSidecar,
    };
    use alloy_eips::{
        eip2718::Encodable2718,
        eip4844::{kzg_to_versioned_hash, Blob, Bytes48},
        eip7594::{BlobTransactionSidecarEip7594, BlobTransactionSidecarVariant},
    };
    let sidecar = BlobTransactionSidecarEip7594 {
        blobs: vec![Blob::default()],
        commitments: vec![Bytes48::repeat_byte(1)],
        cell_proofs: vec![Bytes48::default(); 128],
    };
    let tx = TxEip4844 {
        chain_id: 1,
        blob_versioned_hashes: vec![kzg_to_versioned_hash(&[1; 48])],
        ..Default::default()
    };
    let with =
        TxEip4844WithSidecar { tx, sidecar: BlobTransactionSidecarVariant::Eip7594(sidecar) };
    EthereumTxEnvelope::<TxEip4844WithSidecar<BlobTransactionSidecarVariant>>::from(
        with.into_signed(alloy_primitives::Signature::test_signature()),
    )
    .encoded_2718()
}

fn announcement(raw: &[u8]) -> TransactionAnnouncement {
    let Checked { hash, tx_type, .. } = check_network_transaction(raw, false, false).unwrap();
    let (size, size_without_blobs) = (raw.len() as u32, strip_blobs(raw).len() as u32);
    TransactionAnnouncement { hash, tx_type, size, size_without_blobs }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn announced_transactions_are_fetched_into_the_pool_and_bad_ones_cost_the_peer() {
    let genesis = B256::repeat_byte(5);
    let (a_pool, b_pool) = (Arc::new(TestPool::default()), Arc::new(TestPool::default()));
    let a = NetworkConfig::new(local(genesis)).with_pool(a_pool.clone()).start();
    a.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let b = NetworkConfig::new(local(genesis)).with_pool(b_pool.clone()).start();
    b.dial(a.enode().unwrap()).await.unwrap();
    assert!(eventually(|| a.sessions().len() == 1).await);
    // A takes two transactions (a 1559 one, and a blob one in its network form) and announces
    // them: B asks for both (over eth/72 the blob transaction comes without its blob, which B
    // fetches as the cells of columns 0..63) and its pool holds them, byte for byte.
    let txs = [eip1559(0), blob_transaction()];
    let taken = a_pool.import(&txs.iter().map(|t| t.clone().into()).collect::<Vec<_>>());
    assert!(taken.iter().all(Result::is_ok));
    a.announce_transactions(&txs.iter().map(|t| announcement(t)).collect::<Vec<_>>());
    let hashes: Vec<B256> = txs.iter().map(|t| announcement(t).hash).collect();
    assert!(eventually(|| hashes.iter().all(|h| b_pool.contains(h))).await);
    assert_eq!(
        b_pool.network_transactions(&hashes, usize::MAX, false)[1].as_ref(),
        txs[1].as_slice()
    );
    assert!(!b.sessions().is_empty(), "a good peer stays");

    // A peer that answers with a transaction it was not asked for is dropped.
    let unasked = peer(genesis, |mut eth| async move {
        let hashes = NewPooledTransactionHashes {
            types: vec![2u8].into(),
            sizes: vec![eip1559(7).len() as u32],
            hashes: vec![B256::repeat_byte(0xaa)],
            mask: Some(CustodyBitmap::ALL),
        };
        eth.send(EthMessage::NewPooledTransactionHashes(hashes)).await.unwrap();
        while let Some(Ok(message)) = eth.next().await {
            if let EthMessage::GetPooledTransactions(p) = message {
                let other = NetworkTransactions(vec![eip1559(7).into()]);
                let answer = RequestPair { request_id: p.request_id, message: other };
                let _ = eth.send(EthMessage::PooledTransactions(answer)).await;
            }
        }
    })
    .await;
    let pool = Arc::new(TestPool::default());
    let network = NetworkConfig::new(local(genesis)).with_pool(pool.clone()).start();
    network.dial(unasked).await.unwrap();
    assert!(eventually(|| network.sessions().is_empty()).await, "kept a peer that sent unasked");

    // A broadcast of something that is no transaction: the peer is dropped, the pool unchanged.
    let invalid = peer(genesis, |mut eth| async move {
        let txs = NetworkTransactions(vec![vec![0xffu8, 1, 2].into()]);
        eth.send(EthMessage::Transactions(txs)).await.unwrap();
        while eth.next().await.is_some() {}
    })
    .await;
    let pool = Arc::new(TestPool::default());
    let network = NetworkConfig::new(local(genesis)).with_pool(pool.clone()).start();
    network.dial(invalid).await.unwrap();
    assert!(eventually(|| network.sessions().is_empty()).await, "kept a peer that sent junk");
    assert!(pool.0.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_on_another_fork_is_refused_with_its_fork_id() {
    let genesis = B256::repeat_byte(6);
    let (mut theirs, filter) = status(genesis);
    // The same genesis, but a fork this node does not know of at its head.
    theirs.fork_id = ForkId { hash: ForkHash([1, 2, 3, 4]), next: 0 };
    let record = peer_with_status(theirs, filter, |_| async {}).await;
    let network = NetworkConfig::new(local(genesis)).start();
    match network.dial(record).await {
        Err(SessionError::Eth(EthStreamError::ForkId { fork_id, .. })) => {
            assert_eq!(fork_id.hash, ForkHash([1, 2, 3, 4]));
        }
        other => panic!("expected a fork id refusal, got {other:?}"),
    }
    assert!(network.peers().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_leaves_or_stalls_mid_request_fails_the_request_typed() {
    let genesis = B256::repeat_byte(7);
    // Leaves as soon as it is asked: the request fails at once, the session is gone.
    let leaver = peer(genesis, |mut eth| async move {
        while let Some(Ok(message)) = eth.next().await {
            if matches!(message, EthMessage::GetBlockHeaders(_)) {
                return;
            }
        }
    })
    .await;
    let network = NetworkConfig::new(local(genesis)).start();
    network.dial(leaver).await.unwrap();
    let started = std::time::Instant::now();
    let left = network.get_headers(leaver.id, HashOrNumber::Number(1), 1, false).await;
    assert!(left.is_err(), "{left:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "waited {:?}", started.elapsed());
    assert!(eventually(|| network.peers().is_empty()).await);
    // Never answers: the request fails after REQUEST_TIMEOUT with the timeout named.
    let staller = peer(genesis, |mut eth| async move { while eth.next().await.is_some() {} }).await;
    network.dial(staller).await.unwrap();
    let started = std::time::Instant::now();
    let stalled = network.get_headers(staller.id, HashOrNumber::Number(1), 1, false).await;
    let waited = started.elapsed();
    assert!(
        stalled.as_ref().is_err_and(|e| e.to_string().contains("no answer within")),
        "{stalled:?}"
    );
    assert!(waited >= gigagas_devp2p::REQUEST_TIMEOUT, "{waited:?}");
    assert!(waited < gigagas_devp2p::REQUEST_TIMEOUT + Duration::from_secs(3), "{waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversize_message_or_a_bad_mac_drops_the_peer_and_fails_the_request() {
    let genesis = B256::repeat_byte(8);
    // Answers with a BlockHeaders of 11 MiB (zeros: snappy makes it a small frame, the size is
    // known once decompressed): over eth's 10 MiB message limit.
    let oversize = peer(genesis, |mut eth| async move {
        while let Some(Ok(message)) = eth.next().await {
            if matches!(message, EthMessage::GetBlockHeaders(_)) {
                let payload = alloy_rlp::Bytes::from(vec![0u8; 11 << 20]);
                // eth's messages start at p2p's 0x10; BlockHeaders is eth's 0x04.
                let _ = eth.p2p_mut().send((0x10 + 0x04, payload)).await;
            }
        }
    })
    .await;
    // Writes 64 bytes that are no frame (their header MAC cannot check) on the socket.
    let bad_mac = peer(genesis, |mut eth| async move {
        while let Some(Ok(message)) = eth.next().await {
            if matches!(message, EthMessage::GetBlockHeaders(_)) {
                let socket = eth.p2p_mut().get_ref().get_ref();
                socket.writable().await.unwrap();
                socket.try_write(&[0xab; 64]).unwrap();
                // Stays connected: the node must be the one to end the session.
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
        }
    })
    .await;
    let network = NetworkConfig::new(local(genesis)).start();
    for (record, what) in [
        (oversize, "eth message of 11534336 bytes (at most 10 MiB)"),
        (bad_mac, "frame header MAC mismatch"),
    ] {
        network.dial(record).await.unwrap();
        let started = std::time::Instant::now();
        let answer = network.get_headers(record.id, HashOrNumber::Number(1), 1, false).await;
        assert!(
            answer.as_ref().is_err_and(|e| e.to_string().contains(what)),
            "the request fails naming why ({what}): {answer:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5), "{what}: {:?}", started.elapsed());
        assert!(
            eventually(|| !network.peers().contains(&record.id)).await,
            "{what}: the session outlived it"
        );
    }
}

/// A store of the dev genesis with its accounts replaced by `n` funded ones; its state root.
fn snap_store(dir: &std::path::Path, n: u32) -> (Arc<dyn gigagas_storage_api::FullReader>, B256) {
    use gigagas_storage_api::HeaderProvider;
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../testing/dev-genesis.json");
    let mut genesis: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let alloc: serde_json::Map<String, serde_json::Value> = (1..=n)
        .map(|i| {
            let address = alloy_primitives::Address::left_padding_from(&i.to_be_bytes());
            (format!("{address:?}"), serde_json::json!({ "balance": format!("{i:#x}") }))
        })
        .collect();
    genesis["alloc"] = serde_json::Value::Object(alloc);
    let store = Arc::new(gigagas_storage::Storage::open(dir).unwrap());
    let provider: &dyn gigagas_storage_api::FullProvider = &*store;
    gigagas_validation::init_genesis(provider, &serde_json::to_vec(&genesis).unwrap()).unwrap();
    let root = store.header_by_number(0).unwrap().unwrap().state_root;
    (store, root)
}

/// Two gigagas nodes over snap: the one asks (`snap_request`), the other answers from its
/// store; a request id comes back with its answer; a node that offers no snap refuses the
/// request without losing the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snap_requests_are_answered_between_two_nodes() {
    use gigagas_eth_wire_types::snap::{GetAccountRange, GetByteCodes, SnapMessage};
    use gigagas_net_p2p::SnapServer;
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store_a, root) = snap_store(dir_a.path(), 40);
    let (store_b, _) = snap_store(dir_b.path(), 40);
    let genesis = B256::repeat_byte(5);
    let a = NetworkConfig::new(local(genesis)).with_snap_server(SnapServer::new(store_a)).start();
    a.listen("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let b = NetworkConfig::new(local(genesis)).with_snap_server(SnapServer::new(store_b)).start();
    b.dial(a.enode().unwrap()).await.unwrap();
    let peer = a.enode().unwrap().id;
    let request = SnapMessage::GetAccountRange(GetAccountRange {
        request_id: 0,
        root,
        origin: B256::ZERO,
        limit: B256::repeat_byte(0xff),
        bytes: 1 << 20,
    });
    let SnapMessage::AccountRange(range) = b.snap_request(peer, request).await.unwrap() else {
        panic!("not an account range")
    };
    assert_eq!(range.accounts.len(), 40);
    assert!(!range.proof.is_empty());
    let codes = SnapMessage::GetByteCodes(GetByteCodes {
        request_id: 0,
        hashes: vec![alloy_trie::KECCAK_EMPTY],
        bytes: 100,
    });
    let SnapMessage::ByteCodes(codes) = b.snap_request(peer, codes.clone()).await.unwrap() else {
        panic!("not codes")
    };
    assert_eq!(codes.codes, vec![alloy_primitives::Bytes::new()]);
    // A node that serves no snap: no snap session, the request refused, the session kept.
    let c = NetworkConfig::new(local(genesis)).start();
    c.dial(a.enode().unwrap()).await.unwrap();
    let request =
        SnapMessage::GetByteCodes(GetByteCodes { request_id: 0, hashes: vec![], bytes: 1 });
    assert!(c.snap_request(peer, request).await.is_err());
    assert_eq!(c.sessions().len(), 1);
}
