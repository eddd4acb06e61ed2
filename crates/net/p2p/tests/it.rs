//! The block downloader over a client of scripted peers: a peer that answers wrongly is
//! reported and the range comes from another; failures and bad answers lower a peer's score,
//! deliveries raise it, and the best-scored peer is asked first; with every peer failing the
//! download ends in an error naming the last failure, never in a short or wrong range.
//! `snap`: the snap server over a real store; `snap_sync`: snap sync from it into another.

#[path = "it/snap.rs"]
mod snap;
#[path = "it/snap_sync.rs"]
mod snap_sync;

use alloy_consensus::{
    constants::EMPTY_OMMER_ROOT_HASH, BlockBody, Header, TxEnvelope, EMPTY_ROOT_HASH,
};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use gigagas_bal::BlockAccessList;
use gigagas_net_p2p::{
    BlockClient, BlockDownloader, DownloadError, DownloadRequest, DownloaderConfig, PeerFault,
    RequestError, BAD_ANSWER_PENALTY, FAILED_REQUEST_PENALTY, SUCCESS_REWARD,
};
use std::{collections::BTreeMap, sync::Mutex};

/// How a scripted peer answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    /// The chain as it is.
    Honest,
    /// Requests fail.
    Down,
    /// Bodies that do not match their headers.
    WrongBodies,
    /// Headers of another chain.
    WrongParent,
}

#[derive(Debug)]
struct Client {
    chain: Vec<Header>,
    peers: BTreeMap<u8, Peer>,
    reported: Mutex<Vec<u8>>,
    asked: Mutex<Vec<u8>>,
}

/// Genesis and `n` empty blocks after it.
fn chain(n: u64) -> Vec<Header> {
    let mut headers = vec![Header {
        transactions_root: EMPTY_ROOT_HASH,
        receipts_root: EMPTY_ROOT_HASH,
        ommers_hash: EMPTY_OMMER_ROOT_HASH,
        ..Default::default()
    }];
    for number in 1..=n {
        let parent_hash = headers.last().unwrap().hash_slow();
        headers.push(Header { number, parent_hash, ..headers[0].clone() });
    }
    headers
}

impl Client {
    fn new(peers: &[(u8, Peer)]) -> Self {
        Self {
            chain: chain(20),
            peers: peers.iter().copied().collect(),
            reported: Mutex::default(),
            asked: Mutex::default(),
        }
    }

    fn behaviour(&self, peer: u8) -> Result<Peer, RequestError> {
        match self.peers[&peer] {
            Peer::Down => Err(RequestError::Transport("connection reset".into())),
            other => Ok(other),
        }
    }
}

impl BlockClient for Client {
    type Peer = u8;

    fn peers(&self) -> Vec<u8> {
        self.peers.keys().copied().collect()
    }

    async fn get_headers(
        &self,
        peer: u8,
        start: HashOrNumber,
        limit: u64,
        reverse: bool,
    ) -> Result<Vec<Header>, RequestError> {
        self.asked.lock().unwrap().push(peer);
        let behaviour = self.behaviour(peer)?;
        let first = match start {
            HashOrNumber::Number(n) => n as usize,
            HashOrNumber::Hash(h) => {
                match self.chain.iter().position(|header| header.hash_slow() == h) {
                    Some(i) => i,
                    None => return Ok(Vec::new()),
                }
            }
        };
        let mut headers: Vec<Header> = if reverse {
            // At most 7 a request back: the downloader asks again from the lowest.
            self.chain[..=first].iter().rev().take(limit.min(7) as usize).cloned().collect()
        } else {
            self.chain.iter().skip(first).take(limit as usize).cloned().collect()
        };
        if behaviour == Peer::WrongParent {
            if reverse && headers.len() > 1 {
                // The second is not the first's parent: another branch slipped in.
                headers[1].extra_data = vec![9].into();
            } else {
                headers[0].parent_hash = B256::repeat_byte(9);
            }
        }
        Ok(headers)
    }

    async fn get_block_bodies(
        &self,
        peer: u8,
        hashes: Vec<B256>,
    ) -> Result<Vec<BlockBody<TxEnvelope>>, RequestError> {
        let behaviour = self.behaviour(peer)?;
        let body = match behaviour {
            Peer::WrongBodies => {
                BlockBody { withdrawals: Some(Default::default()), ..Default::default() }
            }
            _ => BlockBody::default(),
        };
        // A peer answers at most 3 bodies a request: the downloader asks again for the rest.
        Ok(vec![body; hashes.len().min(3)])
    }

    async fn get_block_access_lists(
        &self,
        peer: u8,
        hashes: Vec<B256>,
    ) -> Result<Vec<Option<BlockAccessList>>, RequestError> {
        self.behaviour(peer)?;
        // Every block has its (empty) BAL; at most 2 an answer, as a peer at its size limit
        // stops: the downloader asks again for the rest.
        Ok(vec![Some(BlockAccessList::new()); hashes.len().min(2)])
    }

    async fn get_receipts(
        &self,
        peer: u8,
        hashes: Vec<B256>,
    ) -> Result<Vec<Vec<gigagas_eth_wire_types::Receipt69>>, RequestError> {
        let receipts = match self.behaviour(peer)? {
            // A receipt in blocks without transactions: not what their receipts roots say.
            Peer::WrongBodies => vec![gigagas_eth_wire_types::Receipt69 {
                tx_type: 2,
                status: true.into(),
                cumulative_gas_used: 21_000,
                logs: Vec::new(),
            }],
            _ => Vec::new(),
        };
        // At most 3 blocks' receipts a request: the downloader asks again for the rest.
        Ok(vec![receipts; hashes.len().min(3)])
    }

    fn report_bad_message(&self, peer: u8) {
        self.reported.lock().unwrap().push(peer);
    }
}

fn on(rt: &tokio::runtime::Runtime, f: impl std::future::Future<Output = ()>) {
    rt.block_on(f)
}

#[test]
fn a_wrong_answer_is_reported_and_the_range_comes_from_another_peer() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let client = Client::new(&[(1, Peer::WrongBodies), (2, Peer::Down), (3, Peer::Honest)]);
    let genesis = client.chain[0].hash_slow();
    let want: Vec<B256> = client.chain[1..=10].iter().map(Header::hash_slow).collect();
    let downloader = BlockDownloader::new(client, DownloaderConfig::default());
    on(&rt, async {
        // All at 0: every peer may be asked; only peer 3 delivers.
        let (peer, blocks) = downloader.download_range(1, genesis, 10).await.unwrap();
        assert_eq!(peer, 3);
        let got: Vec<B256> = blocks.iter().map(|b| b.block.header.hash_slow()).collect();
        assert_eq!(got, want, "the whole range, in order, bodies gathered over several asks");
    });
    let scores = downloader.scores();
    assert_eq!(scores.score(&3), SUCCESS_REWARD);
    assert!(downloader.client().reported.lock().unwrap().as_slice() == [1]);
    assert_eq!(scores.score(&1), -BAD_ANSWER_PENALTY);
    let down = scores.score(&2);
    assert!(down == 0 || down == -FAILED_REQUEST_PENALTY, "asked at most once: {down}");

    // Next time the best peer is asked first, and the reported one not at all.
    downloader.client().asked.lock().unwrap().clear();
    on(&rt, async {
        let (peer, _) = downloader.download_range(1, genesis, 5).await.unwrap();
        assert_eq!(peer, 3);
    });
    assert_eq!(downloader.client().asked.lock().unwrap().as_slice(), [3]);
}

#[test]
fn a_range_nobody_delivers_is_an_error_not_a_short_range() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let client = Client::new(&[(1, Peer::WrongParent), (2, Peer::Down)]);
    let genesis = client.chain[0].hash_slow();
    let downloader = BlockDownloader::new(client, DownloaderConfig::default());
    on(&rt, async {
        match downloader.download_range(1, genesis, 10).await {
            Err(DownloadError::Exhausted { what, attempts: 2, last }) => {
                assert_eq!(what, DownloadRequest::Blocks(1));
                assert_eq!(what.to_string(), "blocks 1..");
                // The peer asked last: the one whose header does not extend the chain (bad),
                // or the one that is down (a failed request, not bad).
                match &last {
                    PeerFault::NotExtending(_) => assert!(last.is_bad()),
                    PeerFault::Request(_) => assert!(!last.is_bad()),
                    other => panic!("{other:?}"),
                }
            }
            other => panic!("{other:?}"),
        }
        // Peer 1 is out (reported, score at the floor); peer 2 is still asked.
        match downloader.download_range(1, genesis, 10).await {
            Err(DownloadError::Exhausted { attempts: 1, .. }) => {}
            other => panic!("{other:?}"),
        }
    });
    let empty = BlockDownloader::new(Client::new(&[]), DownloaderConfig::default());
    on(&rt, async {
        assert!(matches!(empty.download_range(1, genesis, 1).await, Err(DownloadError::NoPeers)));
    });
}

#[test]
fn the_chain_to_a_target_is_walked_back_to_a_held_block_and_a_lying_peer_is_reported() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let client = Client::new(&[(1, Peer::WrongParent), (2, Peer::Honest)]);
    let target = client.chain[20].hash_slow();
    let held_hash = client.chain[5].hash_slow();
    let want: Vec<B256> = client.chain[6..=20].iter().map(Header::hash_slow).collect();
    let downloader = BlockDownloader::new(client, DownloaderConfig::default());
    on(&rt, async {
        // Block 5 is held: headers 20 down to 6 (7 a request), returned ascending.
        let held = |number: u64, hash: B256| number == 5 && hash == held_hash;
        let headers = downloader.download_headers_back(target, held, 100).await.unwrap();
        let got: Vec<B256> = headers.iter().map(Header::hash_slow).collect();
        assert_eq!(got, want);
        // Their bodies, from as many asks as it takes (3 bodies an answer), and every BAL (2
        // an answer).
        let blocks = downloader.download_bodies(headers).await.unwrap();
        let got: Vec<B256> = blocks.iter().map(|b| b.block.header.hash_slow()).collect();
        assert_eq!(got, want);
        assert!(blocks.iter().all(|b| b.bal.is_some()), "a BAL left out");
        // Nothing held within 10 headers: an error, not a chain that links to nothing.
        let far = downloader.download_headers_back(target, |_, _| false, 10).await;
        assert!(matches!(far, Err(DownloadError::TooFar { max: 10, .. })), "{far:?}");
        // A target no peer has: an error naming it.
        let unknown = downloader.download_headers_back(B256::repeat_byte(7), held, 100).await;
        assert!(
            matches!(&unknown, Err(DownloadError::Exhausted { what, .. })
                if *what == DownloadRequest::HeadersBack(B256::repeat_byte(7))),
            "{unknown:?}"
        );
    });
    // The peer that slipped in another branch was reported (at most once: it is out after).
    assert_eq!(downloader.client().reported.lock().unwrap().as_slice(), [1]);
}

#[test]
fn receipts_not_matching_their_headers_are_reported_and_come_from_another_peer() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let client = Client::new(&[(1, Peer::WrongBodies), (2, Peer::Honest)]);
    let headers = client.chain[1..=10].to_vec();
    let downloader = BlockDownloader::new(client, DownloaderConfig::default());
    on(&rt, async {
        // Peer 1's receipts do not hash to the headers' receipts roots; peer 2's do, 3 blocks
        // an answer, asked again for the rest.
        let receipts = downloader.download_receipts(&headers).await.unwrap();
        assert_eq!(receipts.len(), 10);
        assert!(receipts.iter().all(Vec::is_empty));
    });
    assert_eq!(downloader.client().reported.lock().unwrap().as_slice(), [1]);
    assert_eq!(downloader.scores().score(&1), -BAD_ANSWER_PENALTY);
}
