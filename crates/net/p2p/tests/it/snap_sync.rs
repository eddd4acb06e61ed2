//! Snap sync between two real stores: a genesis state of 3,000 accounts, 25 contracts with
//! their codes and storage (one of 4,000 slots, downloaded over many ranges), served by
//! `SnapServer`, downloaded by `SnapSync` into an empty store through scripted peers. Honest
//! peers give the same flat state, codes and root; hostile peers (a proof node missing, a slot
//! left out, a value changed, an unrequested code, a malformed account, no answers at all) are
//! reported and their work done by another, with the store ending right; a sync cut off
//! half-way resumes from what it wrote.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use gigagas_eth_wire_types::snap::{
    AccountRange, ByteCodes, GetAccountRange, GetByteCodes, GetStorageRanges, StorageRanges,
};
use gigagas_net_p2p::{
    snap_sync::{finish, Pivot, SnapSync, SnapSyncConfig, SnapSyncError},
    RequestError, SnapClient, SnapServer,
};
use gigagas_storage::Storage;
use gigagas_storage_api::{
    BlockNumReader, FullProvider, FullReader, HashedStateReader, HeaderProvider, RawBlock,
};
use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

const BIG_SLOTS: u64 = 4000;

/// A genesis with 3,000 funded accounts and 25 contracts (the first with `BIG_SLOTS` slots,
/// the others with 1 to 25), initialized into a store.
fn source(dir: &std::path::Path) -> (Arc<Storage>, Pivot) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../testing/dev-genesis.json");
    let mut genesis: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut alloc = serde_json::Map::new();
    for i in 1..=3000u32 {
        let address = Address::left_padding_from(&i.to_be_bytes());
        alloc.insert(
            format!("{address:?}"),
            serde_json::json!({ "balance": format!("{:#x}", u64::from(i) * 1_000_003), "nonce": format!("{:#x}", i % 7) }),
        );
    }
    for c in 0..25u64 {
        let slots = if c == 0 { BIG_SLOTS } else { c };
        let storage: serde_json::Map<String, serde_json::Value> = (1..=slots)
            .map(|k| (format!("{:#066x}", k), serde_json::json!(format!("{:#066x}", k * 7 + c))))
            .collect();
        let code = [0x60, c as u8, 0x60, 0x00, 0x55];
        alloc.insert(
            format!("{:?}", Address::left_padding_from(&(0xc0_0000 + c).to_be_bytes())),
            serde_json::json!({ "balance": "0x1", "code": format!("0x{}", alloy_primitives::hex::encode(code)), "storage": storage }),
        );
    }
    genesis["alloc"] = serde_json::Value::Object(alloc);
    let store = Arc::new(Storage::open(dir).unwrap());
    gigagas_validation::init_genesis(
        &*store as &dyn FullProvider,
        &serde_json::to_vec(&genesis).unwrap(),
    )
    .unwrap();
    let header = store.header_by_number(0).unwrap().unwrap();
    let pivot = Pivot { number: 0, hash: header.hash_slow(), root: header.state_root };
    (store, pivot)
}

/// How a scripted peer answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    Honest,
    /// Account ranges without their first proof node.
    MissingProofNode,
    /// Storage lists with a slot left out.
    DroppedSlot,
    /// Account ranges with a balance changed.
    ChangedBalance,
    /// Codes answered with one more nobody asked for.
    ExtraCode,
    /// An account body that is no slim account.
    Malformed,
    /// Empty answers (a peer that no longer holds the state).
    Empty,
    /// Honest for this many answers, then every request fails.
    DiesAfter(usize),
    /// Honest for this many answers, then no request is ever answered.
    HangsAfter(usize),
}

struct Client {
    server: SnapServer,
    peers: BTreeMap<u8, Peer>,
    reported: Mutex<Vec<u8>>,
    answered: AtomicUsize,
}

impl Client {
    fn new(server: SnapServer, peers: &[(u8, Peer)]) -> Arc<Self> {
        Arc::new(Self {
            server,
            peers: peers.iter().copied().collect(),
            reported: Mutex::default(),
            answered: AtomicUsize::new(0),
        })
    }

    /// Peers answering from `source`'s state.
    fn serving(source: &Arc<Storage>, peers: &[(u8, Peer)]) -> Arc<Self> {
        Self::new(SnapServer::new(source.clone() as Arc<dyn FullReader>), peers)
    }

    async fn behaviour(&self, peer: u8) -> Result<Peer, RequestError> {
        let behaviour = self.peers[&peer];
        match behaviour {
            Peer::DiesAfter(n) if self.answered.fetch_add(1, Ordering::SeqCst) >= n => {
                Err(RequestError::Transport("peer gone".into()))
            }
            Peer::HangsAfter(n) if self.answered.fetch_add(1, Ordering::SeqCst) >= n => {
                std::future::pending().await
            }
            _ => Ok(behaviour),
        }
    }
}

impl SnapClient for Client {
    type Peer = u8;

    fn snap_peers(&self) -> Vec<u8> {
        let reported = self.reported.lock().unwrap();
        self.peers.keys().filter(|p| !reported.contains(p)).copied().collect()
    }

    async fn get_account_range(
        &self,
        peer: u8,
        request: GetAccountRange,
    ) -> Result<AccountRange, RequestError> {
        let behaviour = self.behaviour(peer).await?;
        let mut answer = self.server.account_range(&request).unwrap();
        match behaviour {
            Peer::Empty => {
                return Ok(AccountRange { request_id: 0, accounts: vec![], proof: vec![] })
            }
            Peer::MissingProofNode if !answer.proof.is_empty() => {
                answer.proof.remove(0);
            }
            Peer::ChangedBalance if !answer.accounts.is_empty() => {
                let i = answer.accounts.len() / 2;
                let mut body = answer.accounts[i].body.to_vec();
                // The slim body's balance follows the list header and the nonce.
                let at = body.iter().rposition(|_| true).unwrap().min(3);
                body[at] ^= 1;
                answer.accounts[i].body = body.into();
            }
            Peer::Malformed if !answer.accounts.is_empty() => {
                answer.accounts[0].body = Bytes::from_static(&[0xc1, 0x80]);
            }
            _ => {}
        }
        Ok(answer)
    }

    async fn get_storage_ranges(
        &self,
        peer: u8,
        request: GetStorageRanges,
    ) -> Result<StorageRanges, RequestError> {
        let behaviour = self.behaviour(peer).await?;
        let mut answer = self.server.storage_ranges(&request).unwrap();
        match behaviour {
            Peer::Empty => {
                return Ok(StorageRanges { request_id: 0, slots: vec![], proof: vec![] })
            }
            Peer::DroppedSlot => {
                if let Some(list) = answer.slots.iter_mut().find(|l| l.len() > 2) {
                    list.remove(1);
                }
            }
            _ => {}
        }
        Ok(answer)
    }

    async fn get_byte_codes(
        &self,
        peer: u8,
        request: GetByteCodes,
    ) -> Result<ByteCodes, RequestError> {
        let behaviour = self.behaviour(peer).await?;
        let mut answer = self.server.byte_codes(&request).unwrap();
        match behaviour {
            Peer::Empty => return Ok(ByteCodes { request_id: 0, codes: Vec::new() }),
            Peer::ExtraCode => answer.codes.push(Bytes::from_static(&[0xfe])),
            _ => {}
        }
        Ok(answer)
    }

    fn report_bad_snap_message(&self, peer: u8) {
        self.reported.lock().unwrap().push(peer);
    }
}

fn config() -> SnapSyncConfig {
    SnapSyncConfig {
        response_bytes: 16 << 10,
        chunks: 4,
        storage_accounts_per_request: 8,
        codes_per_request: 4,
        lacking_rest: Duration::from_millis(20),
        no_peer_timeout: Duration::from_millis(500),
        // Several checkpoints a sync, the last one cut off in the resumed test.
        checkpoint_bytes: 32 << 10,
        ..Default::default()
    }
}

/// The source store (its genesis state the pivot's) and an empty destination, in temporary
/// folders kept as long as the first item lives.
fn stores() -> ([tempfile::TempDir; 2], Arc<Storage>, Arc<Storage>, Pivot) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let (source, pivot) = source(dirs[0].path());
    let dest = Arc::new(Storage::open(dirs[1].path()).unwrap());
    (dirs, source, dest, pivot)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// The destination holds exactly the source's flat state, codes, tries and head after
/// `finish`.
fn assert_same_state(source: &Storage, dest: &Arc<Storage>, pivot: &Pivot) {
    let header = alloy_rlp::encode(source.header_by_number(0).unwrap().unwrap());
    finish(
        &**dest,
        pivot,
        &[RawBlock { number: 0, hash: pivot.hash, header: &header, ..Default::default() }],
    )
    .unwrap();
    assert_eq!(dest.best_block().unwrap(), Some((0, pivot.hash)));
    assert!(dest.meta_with_prefix(b"snap/").unwrap().is_empty(), "the sync's record is gone");
    let accounts = source.hashed_accounts(B256::ZERO, usize::MAX).unwrap();
    assert_eq!(accounts.len(), 3025);
    assert_eq!(dest.hashed_accounts(B256::ZERO, usize::MAX).unwrap(), accounts);
    let big = Address::left_padding_from(&0xc0_0000u64.to_be_bytes());
    for c in 0..25u64 {
        let address = Address::left_padding_from(&(0xc0_0000 + c).to_be_bytes());
        let hashed = keccak256(address);
        let slots = source.hashed_storage(hashed, B256::ZERO, usize::MAX).unwrap();
        assert_eq!(slots.len() as u64, if c == 0 { BIG_SLOTS } else { c });
        assert_eq!(dest.hashed_storage(hashed, B256::ZERO, usize::MAX).unwrap(), slots);
        let code_hash = source.account(&address).unwrap().unwrap().code_hash;
        assert_eq!(dest.bytecode(&code_hash).unwrap(), source.bytecode(&code_hash).unwrap());
        assert_eq!(
            dest.storage(&address, &U256::from(1)).unwrap(),
            U256::from(7 + c),
            "read by address, as execution reads"
        );
    }
    // The tries were written whole: every leaf of the account trie and of each storage trie,
    // walked from the pivot's root through the destination's nodes alone, is the source's.
    let leaves = |store: &Storage, root: B256| {
        let mut out = Vec::new();
        gigagas_trie::walk_leaves(root, &B256::ZERO, store, &mut |k, v| {
            out.push((k, v.to_vec()));
            true
        })
        .unwrap();
        out
    };
    let account_leaves = leaves(source, pivot.root);
    assert_eq!(account_leaves.len(), accounts.len());
    assert_eq!(leaves(dest, pivot.root), account_leaves);
    for (_, value) in &account_leaves {
        let account: alloy_trie::TrieAccount =
            alloy_rlp::Decodable::decode(&mut &value[..]).unwrap();
        assert_eq!(leaves(dest, account.storage_root), leaves(source, account.storage_root));
    }
    // The state read through them under the pivot's root.
    let state = gigagas_storage_api::state_by_block_number(dest.clone() as Arc<dyn FullReader>, 0)
        .unwrap()
        .unwrap();
    let account = state.trie_account(&big).unwrap().unwrap();
    assert_eq!(account.code_hash, source.account(&big).unwrap().unwrap().code_hash);
    assert_eq!(
        state.slot_in(&big, account.storage_root, &U256::from(BIG_SLOTS)).unwrap(),
        U256::from(BIG_SLOTS * 7)
    );
}

#[test]
fn honest_peers_give_the_same_state_and_root() {
    let (_dirs, source, dest, pivot) = stores();
    let client = Client::serving(&source, &[(1, Peer::Honest), (2, Peer::Honest)]);
    let sync = SnapSync::new(client.clone(), dest.clone(), config());
    let done = runtime().block_on(sync.run(pivot)).unwrap();
    assert_eq!(done, pivot);
    let progress = sync.progress().snapshot();
    assert_eq!(
        progress.accounts as usize,
        source.hashed_accounts(B256::ZERO, usize::MAX).unwrap().len()
    );
    assert_eq!(progress.slots, BIG_SLOTS + (1..25).sum::<u64>());
    assert_eq!(progress.codes, 25);
    assert!(client.reported.lock().unwrap().is_empty());
    assert_same_state(&source, &dest, &pivot);
}

/// Each hostile peer, asked first (the lowest id), beside an honest one.
#[test]
fn hostile_peers_are_reported_and_the_state_ends_right() {
    let src_dir = tempfile::tempdir().unwrap();
    let (source, pivot) = source(src_dir.path());
    let rt = runtime();
    for hostile in [
        Peer::MissingProofNode,
        Peer::DroppedSlot,
        Peer::ChangedBalance,
        Peer::ExtraCode,
        Peer::Malformed,
        Peer::Empty,
    ] {
        let dst_dir = tempfile::tempdir().unwrap();
        let dest = Arc::new(Storage::open(dst_dir.path()).unwrap());
        let client = Client::serving(&source, &[(1, hostile), (2, Peer::Honest)]);
        let sync = SnapSync::new(client.clone(), dest.clone(), config());
        rt.block_on(sync.run(pivot)).unwrap();
        let reported = client.reported.lock().unwrap().clone();
        let expected: Vec<u8> = if hostile == Peer::Empty { vec![] } else { vec![1] };
        assert_eq!(reported, expected, "{hostile:?}");
        assert_same_state(&source, &dest, &pivot);
    }
}

#[test]
fn a_sync_cut_off_resumes_from_what_it_wrote() {
    let (_dirs, source, dest, pivot) = stores();
    let dying = Client::serving(&source, &[(1, Peer::DiesAfter(12))]);
    let first = SnapSync::new(dying, dest.clone(), config());
    let rt = runtime();
    assert!(matches!(rt.block_on(first.run(pivot)), Err(SnapSyncError::NoPeers { .. })));
    let partial = first.progress().snapshot();
    assert!(partial.accounts > 0 && partial.accounts < 3000, "{partial:?}");
    // A new sync over the same store (as after a restart) finds the record and finishes.
    let second =
        SnapSync::new(Client::serving(&source, &[(1, Peer::Honest)]), dest.clone(), config());
    assert_eq!(second.recorded_pivot().unwrap(), Some(pivot));
    let other = Pivot { number: 5, ..pivot };
    assert_eq!(rt.block_on(second.run(other)).unwrap(), pivot, "the recorded pivot is resumed");
    let total = second.progress().snapshot();
    assert_eq!(
        total.accounts as usize,
        source.hashed_accounts(B256::ZERO, usize::MAX).unwrap().len()
    );
    assert_eq!(total.slots, BIG_SLOTS + (1..25).sum::<u64>());
    assert_same_state(&source, &dest, &pivot);
}

/// A sync stopped without warning (its future dropped, as a process killed: what it had not
/// written is lost, a checkpoint being written may land or not) resumes from its last
/// checkpoint and ends with the same state.
#[test]
fn a_sync_dropped_mid_checkpoint_resumes_from_the_last_one_written() {
    let (_dirs, source, dest, pivot) = stores();
    let hanging = Client::serving(&source, &[(1, Peer::HangsAfter(20))]);
    let first = SnapSync::new(hanging.clone(), dest.clone(), config());
    let rt = runtime();
    rt.block_on(async {
        // Cut off once the peer has stopped answering (its 20 answers in, two requests out).
        let hung = async {
            while hanging.answered.load(Ordering::SeqCst) < 22 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::select! {
            ended = first.run(pivot) => panic!("the sync ended: {ended:?}"),
            () = hung => {}
        }
    });
    let downloaded = first.progress().snapshot().accounts as usize;
    // Checkpoints were written before the cut; what was pending is lost.
    let written = dest.hashed_accounts(B256::ZERO, usize::MAX).unwrap().len();
    assert!(written > 0 && written <= downloaded, "{written} of {downloaded}");
    drop(first);
    let second =
        SnapSync::new(Client::serving(&source, &[(1, Peer::Honest)]), dest.clone(), config());
    assert_eq!(second.recorded_pivot().unwrap(), Some(pivot));
    assert_eq!(rt.block_on(second.run(pivot)).unwrap(), pivot);
    assert_same_state(&source, &dest, &pivot);
}

/// The checks every snap answer goes through, over answers decoded from the wire after random
/// damage (bits flipped, bytes cut, added or replaced; accounts, slots and proof nodes dropped,
/// swapped or repeated): a slim account's decoding, a slot's, and the range proof against the
/// real root — `FUZZ_ITERATIONS` inputs (20,000 in the test suite; `make fuzz-net` runs
/// 1,000,000): never a panic, and the undamaged answers are proven.
#[test]
fn fuzz_snap_answer_checks_never_panic() {
    use gigagas_eth_wire_types::snap::{SnapMessage, StorageData};
    use rand::{rngs::StdRng, Rng, SeedableRng};
    let n: usize =
        std::env::var("FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let src_dir = tempfile::tempdir().unwrap();
    let (source, pivot) = source(src_dir.path());
    let server = SnapServer::new(source.clone() as Arc<dyn FullReader>);
    let origin = B256::repeat_byte(0x40);
    let accounts = server
        .account_range(&GetAccountRange {
            request_id: 1,
            root: pivot.root,
            origin,
            limit: B256::repeat_byte(0xff),
            bytes: 4000,
        })
        .unwrap();
    let big = keccak256(Address::left_padding_from(&0xc0_0000u64.to_be_bytes()));
    let big_root =
        gigagas_storage_api::state_by_block_number(source.clone() as Arc<dyn FullReader>, 0)
            .unwrap()
            .unwrap()
            .trie_account(&Address::left_padding_from(&0xc0_0000u64.to_be_bytes()))
            .unwrap()
            .unwrap()
            .storage_root;
    let storage = server
        .storage_ranges(&GetStorageRanges {
            request_id: 2,
            root: pivot.root,
            accounts: vec![big],
            origin: Default::default(),
            limit: Default::default(),
            bytes: 3000,
        })
        .unwrap();
    let check_accounts = |answer: &AccountRange| {
        let mut keys = Vec::new();
        let mut values = Vec::new();
        for data in &answer.accounts {
            let Ok(account) = gigagas_net_p2p::snap::full_account(&data.body) else {
                return Err(());
            };
            keys.push(data.hash);
            values.push(alloy_rlp::encode(account));
        }
        gigagas_trie::verify_range_proof(pivot.root, origin, &keys, &values, &answer.proof)
            .map_err(|_| ())
    };
    let check_storage = |slots: &[StorageData], proof: &[Bytes]| {
        for data in slots {
            if <U256 as alloy_rlp::Decodable>::decode(&mut &data.body[..]).is_err() {
                return Err(());
            }
        }
        let keys: Vec<B256> = slots.iter().map(|d| d.hash).collect();
        let values: Vec<&[u8]> = slots.iter().map(|d| &d.body[..]).collect();
        gigagas_trie::verify_range_proof(big_root, B256::ZERO, &keys, &values, proof)
            .map_err(|_| ())
    };
    assert_eq!(check_accounts(&accounts), Ok(true), "the honest account range is proven");
    assert_eq!(check_storage(&storage.slots[0], &storage.proof), Ok(true));
    let samples = [
        SnapMessage::AccountRange(accounts.clone()).encode_payload(),
        SnapMessage::StorageRanges(storage.clone()).encode_payload(),
    ];
    let mut rng = StdRng::seed_from_u64(56);
    let (mut proven, mut decoded) = (0usize, 0usize);
    for i in 0..n {
        // Damage on the wire, or in the structure.
        let message = if rng.gen_bool(0.5) {
            let mut bytes = samples[i % 2].clone();
            match rng.gen_range(0..4) {
                0 => {
                    for _ in 0..rng.gen_range(1..8) {
                        let at = rng.gen_range(0..bytes.len());
                        bytes[at] ^= 1 << rng.gen_range(0..8);
                    }
                }
                1 => bytes.truncate(rng.gen_range(0..=bytes.len())),
                2 => bytes.extend((0..rng.gen_range(1..64)).map(|_| rng.gen::<u8>())),
                _ => {
                    let at = rng.gen_range(0..bytes.len());
                    bytes[at] = rng.gen();
                }
            }
            let id = if i % 2 == 0 { 0x01 } else { 0x03 };
            match SnapMessage::decode(id, gigagas_eth_wire_types::SnapVersion::Snap1, &bytes) {
                Ok(message) => message,
                Err(_) => continue,
            }
        } else if i % 2 == 0 {
            let mut answer = accounts.clone();
            mutate(&mut rng, &mut answer.accounts);
            if rng.gen_bool(0.5) {
                mutate(&mut rng, &mut answer.proof);
            }
            SnapMessage::AccountRange(answer)
        } else {
            let mut answer = storage.clone();
            mutate(&mut rng, &mut answer.slots[0]);
            if rng.gen_bool(0.5) {
                mutate(&mut rng, &mut answer.proof);
            }
            SnapMessage::StorageRanges(answer)
        };
        decoded += 1;
        let ok = match &message {
            SnapMessage::AccountRange(answer) => check_accounts(answer).is_ok(),
            SnapMessage::StorageRanges(answer) => answer
                .slots
                .first()
                .is_some_and(|slots| check_storage(slots, &answer.proof).is_ok()),
            _ => false,
        };
        proven += usize::from(ok);
    }
    // A damaged answer proves a shorter range at most (the last items dropped); most fail.
    assert!(proven < decoded / 4, "{proven} of {decoded} damaged answers proven");
}

/// Drops, swaps, repeats or clears items of `items`.
fn mutate<T: Clone>(rng: &mut impl rand::Rng, items: &mut Vec<T>) {
    if items.is_empty() {
        return;
    }
    match rng.gen_range(0..4) {
        0 => {
            items.remove(rng.gen_range(0..items.len()));
        }
        1 => {
            let (a, b) = (rng.gen_range(0..items.len()), rng.gen_range(0..items.len()));
            items.swap(a, b);
        }
        2 => {
            let at = rng.gen_range(0..items.len());
            items.insert(at, items[at].clone());
        }
        _ => items.truncate(rng.gen_range(0..items.len())),
    }
}
