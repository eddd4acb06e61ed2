//! snap/1–2 answers over a real store: a genesis of 300 accounts (one contract with code and
//! 60 slots) initialized into RocksDB, served by `SnapServer` at its state root.
//! Accounts come whole and in hash order and rebuild the state root; byte budgets cut where
//! geth's accounting cuts; origins and limits bound the ranges; unknown roots answer nothing;
//! codes, trie nodes and storage ranges as geth answers them.

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_rlp::Decodable;
use alloy_trie::{HashBuilder, Nibbles, TrieAccount, EMPTY_ROOT_HASH, KECCAK_EMPTY};
use gigagas_eth_wire_types::snap::{GetAccountRange, GetByteCodes, GetStorageRanges, GetTrieNodes};
use gigagas_net_p2p::SnapServer;
use gigagas_storage_api::{FullProvider, FullReader, HeaderProvider};
use std::sync::Arc;

const CODE: [u8; 4] = [0x60, 0x01, 0x60, 0x00];

fn contract() -> Address {
    Address::repeat_byte(0xcc)
}

/// A store holding the genesis: 299 funded accounts and the contract; its state root.
fn store(dir: &std::path::Path) -> (Arc<dyn FullReader>, B256) {
    let (store, root) = rocks_store(dir);
    (store, root)
}

/// [`store`], as the RocksDB store.
fn rocks_store(dir: &std::path::Path) -> (Arc<gigagas_storage::Storage>, B256) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../testing/dev-genesis.json");
    let mut genesis: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut alloc = serde_json::Map::new();
    for i in 1..300u32 {
        let address = Address::left_padding_from(&i.to_be_bytes());
        alloc.insert(format!("{address:?}"), serde_json::json!({ "balance": format!("{:#x}", i) }));
    }
    let storage: serde_json::Map<String, serde_json::Value> = (1..=60u64)
        .map(|k| (format!("{:#066x}", k), serde_json::json!(format!("{:#066x}", k * 7))))
        .collect();
    alloc.insert(
        format!("{:?}", contract()),
        serde_json::json!({ "balance": "0x1", "code": format!("0x{}", alloy_primitives::hex::encode(CODE)), "storage": storage }),
    );
    genesis["alloc"] = serde_json::Value::Object(alloc);
    let store = Arc::new(gigagas_storage::Storage::open(dir).unwrap());
    gigagas_validation::init_genesis(
        &*store as &dyn FullProvider,
        &serde_json::to_vec(&genesis).unwrap(),
    )
    .unwrap();
    let root = store.header_by_number(0).unwrap().unwrap().state_root;
    (store, root)
}

/// The full account of a slim body.
fn full(slim: &[u8]) -> TrieAccount {
    let mut items = alloy_rlp::Header::decode_bytes(&mut &slim[..], true).unwrap();
    let nonce = u64::decode(&mut items).unwrap();
    let balance = U256::decode(&mut items).unwrap();
    let root = Bytes::decode(&mut items).unwrap();
    let code = Bytes::decode(&mut items).unwrap();
    TrieAccount {
        nonce,
        balance,
        storage_root: if root.is_empty() { EMPTY_ROOT_HASH } else { B256::from_slice(&root) },
        code_hash: if code.is_empty() { KECCAK_EMPTY } else { B256::from_slice(&code) },
    }
}

fn range(
    server: &SnapServer,
    root: B256,
    origin: B256,
    limit: B256,
    bytes: u64,
) -> Vec<(B256, Bytes)> {
    let answer = server
        .account_range(&GetAccountRange { request_id: 1, root, origin, limit, bytes })
        .unwrap();
    assert_eq!(answer.request_id, 1);
    answer.accounts.into_iter().map(|a| (a.hash, a.body)).collect()
}

#[test]
fn account_ranges_rebuild_the_state_root_and_cut_where_geth_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let (store, root) = store(dir.path());
    let server = SnapServer::new(store);
    let max = B256::repeat_byte(0xff);
    let all = range(&server, root, B256::ZERO, max, 2 * 1024 * 1024);
    assert_eq!(all.len(), 300, "every account of the genesis");
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "in hash order");
    let mut builder = HashBuilder::default();
    for (hash, body) in &all {
        builder.add_leaf(Nibbles::unpack(hash), &alloy_rlp::encode(full(body)));
    }
    assert_eq!(builder.root(), root, "the accounts rebuild the state root");

    // A budget cuts after the account that passes it (32 bytes and the slim body each).
    let sizes: Vec<u64> = all.iter().map(|(_, b)| 32 + b.len() as u64).collect();
    let budget = sizes[..10].iter().sum::<u64>() - 1;
    assert_eq!(range(&server, root, B256::ZERO, max, budget).len(), 10);
    assert_eq!(range(&server, root, B256::ZERO, max, 0).len(), 1, "at least one");
    // Origin and limit: from the first at or past the origin to the first at or past the limit.
    let from = range(&server, root, all[5].0, all[8].0, 1 << 20);
    assert_eq!(from, all[5..=8].to_vec());
    assert!(range(&server, root, max, B256::ZERO, 1 << 20).is_empty());
    // A root that is no recent state root: nothing, and no proof.
    let unknown = server
        .account_range(&GetAccountRange {
            request_id: 2,
            root: B256::repeat_byte(1),
            origin: B256::ZERO,
            limit: max,
            bytes: 1 << 20,
        })
        .unwrap();
    assert!(unknown.accounts.is_empty() && unknown.proof.is_empty());
    // The proof of the origin starts at the root node.
    let proved = server
        .account_range(&GetAccountRange {
            request_id: 3,
            root,
            origin: all[5].0,
            limit: max,
            bytes: 1,
        })
        .unwrap();
    assert_eq!(keccak256(&proved.proof[0]), root);
}

#[test]
fn storage_codes_and_trie_nodes_as_geth_answers_them() {
    let dir = tempfile::tempdir().unwrap();
    let (store, root) = store(dir.path());
    let server = SnapServer::new(store);
    let account = keccak256(contract());
    let ranges = |origin: Bytes, limit: Bytes, bytes: u64| {
        server
            .storage_ranges(&GetStorageRanges {
                request_id: 4,
                root,
                accounts: vec![account, keccak256(Address::left_padding_from(&[1]))],
                origin,
                limit,
                bytes,
            })
            .unwrap()
    };
    let whole = ranges(Bytes::new(), Bytes::new(), 1 << 20);
    assert_eq!(whole.slots.len(), 1, "an account without storage is left out");
    assert_eq!(whole.slots[0].len(), 60);
    assert!(whole.proof.is_empty(), "a whole range from zero carries no proof");
    let mut builder = HashBuilder::default();
    for slot in &whole.slots[0] {
        builder.add_leaf(Nibbles::unpack(slot.hash), &slot.body);
    }
    let storage_root = builder.root();
    let hashed = |k: u64| keccak256(B256::from(U256::from(k)));
    let expected_value = |slot: &gigagas_eth_wire_types::snap::StorageData| {
        (1..=60u64).find(|k| hashed(*k) == slot.hash).map(|k| alloy_rlp::encode(U256::from(k * 7)))
    };
    assert!(whole.slots[0].iter().all(|s| expected_value(s).as_deref() == Some(&s.body[..])));
    // From an origin: the rest of the first account's range, with a proof, nothing after.
    let third = whole.slots[0][2].hash;
    let part = ranges(third.to_vec().into(), Bytes::new(), 1 << 20);
    assert_eq!(part.slots.len(), 1);
    assert_eq!(part.slots[0], whole.slots[0][2..].to_vec());
    assert_eq!(keccak256(&part.proof[0]), storage_root);
    assert!(
        ranges(Bytes::new(), Bytes::new(), 0).slots.is_empty(),
        "a budget of 0 answers nothing"
    );

    let codes = server
        .byte_codes(&GetByteCodes {
            request_id: 5,
            hashes: vec![B256::repeat_byte(9), keccak256(CODE), KECCAK_EMPTY],
            bytes: 1 << 20,
        })
        .unwrap();
    assert_eq!(codes.codes, vec![Bytes::from(CODE.to_vec()), Bytes::new()]);

    let nodes = |paths: Vec<Vec<Bytes>>| {
        server.trie_nodes(&GetTrieNodes { request_id: 6, root, paths, bytes: 5000 }).unwrap()
    };
    let root_node = nodes(vec![vec![vec![0x00].into()]]).unwrap();
    assert_eq!(keccak256(&root_node.nodes[0]), root);
    let storage = nodes(vec![vec![account.to_vec().into(), vec![0x00].into()]]).unwrap();
    assert_eq!(keccak256(&storage.nodes[0]), storage_root);
    let nowhere = nodes(vec![vec![vec![0x3f; 20].into()]]).unwrap();
    assert_eq!(nowhere.nodes, vec![Bytes::new()], "a path that leads nowhere: an empty entry");
    assert!(nodes(vec![vec![]]).is_none(), "an empty path set is refused");
}

/// Applies a block of no transactions on the store's head whose BAL writes the contract's
/// `slots` (slot, new value; zero removes), with the state root the store computes for it.
fn apply_storage_block(store: &Arc<gigagas_storage::Storage>, slots: &[(u64, u64)]) -> B256 {
    apply_block(store, &[], slots)
}

/// Applies a block of no transactions on the store's head whose BAL sets the balances of
/// `balances` (address byte, new balance; an account not held is created) and writes the
/// contract's `slots` (slot, new value; zero removes), with the state root the store computes
/// for it.
fn apply_block(
    store: &Arc<gigagas_storage::Storage>,
    balances: &[(u32, u64)],
    slots: &[(u64, u64)],
) -> B256 {
    use alloy_eip7928::{
        AccountChanges, BalanceChange, BlockAccessIndex, SlotChanges, StorageChange,
    };
    use gigagas_storage_api::BlockNumReader;
    use gigagas_validation::{apply_bal_block, BalBlock, ImportError};
    let (number, parent_hash) = store.best_block().unwrap().unwrap();
    let parent = store.header_by_number(number).unwrap().unwrap();
    let mut account = AccountChanges::new(contract());
    account.storage_changes = slots
        .iter()
        .map(|&(slot, value)| {
            SlotChanges::new(
                U256::from(slot),
                vec![StorageChange {
                    block_access_index: BlockAccessIndex(0),
                    new_value: U256::from(value),
                }],
            )
        })
        .collect();
    let mut bal: Vec<AccountChanges> = balances
        .iter()
        .map(|&(i, balance)| {
            let mut changes = AccountChanges::new(Address::left_padding_from(&i.to_be_bytes()));
            changes.balance_changes = vec![BalanceChange {
                block_access_index: BlockAccessIndex(0),
                post_balance: U256::from(balance),
            }];
            changes
        })
        .collect();
    if !slots.is_empty() {
        bal.push(account);
    }
    bal.sort_by_key(|a| a.address);
    let mut header = alloy_consensus::Header {
        parent_hash,
        number: number + 1,
        timestamp: parent.timestamp + 12,
        block_access_list_hash: Some(gigagas_bal::compute_block_access_list_hash(&bal)),
        ..parent.clone()
    };
    let body = alloy_consensus::BlockBody::<alloy_consensus::TxEnvelope>::default();
    let block = |header: &alloy_consensus::Header| {
        apply_bal_block(
            store,
            BalBlock { header, hash: header.hash_slow(), body: &body, bal: &bal, receipts: &[] },
        )
    };
    // The root the BAL gives, as the store computes it (nothing written on a mismatch).
    header.receipts_root = alloy_trie::EMPTY_ROOT_HASH;
    header.state_root = B256::ZERO;
    match block(&header) {
        Err(ImportError::StateRoot { found, .. }) => header.state_root = found,
        other => panic!("{other:?}"),
    }
    block(&header).unwrap();
    header.state_root
}

/// Storage ranges served from the flat state at the head and at roots below it (the head's
/// flat slots with those the blocks above wrote read from the older trie) are the trie walk's
/// answers exactly, byte budget by byte budget: slots changed, removed and created above the
/// asked root, at every origin.
#[test]
fn storage_ranges_from_the_flat_state_equal_the_trie_walks() {
    let dir = tempfile::tempdir().unwrap();
    let (store, genesis_root) = rocks_store(dir.path());
    let root1 = apply_storage_block(&store, &[(5, 999), (6, 0), (100, 1), (61, 3)]);
    let root2 = apply_storage_block(&store, &[(7, 0), (100, 0), (5, 1), (200, 2)]);
    let reader = store.clone() as Arc<dyn FullReader>;
    let walked = SnapServer::new(reader.clone());
    let flat = SnapServer::new(reader).with_flat_state(store.clone());
    let account = keccak256(contract());
    let mut origins: Vec<B256> = (0..80u64).map(|k| keccak256(B256::from(U256::from(k)))).collect();
    origins.sort();
    origins.insert(0, B256::ZERO);
    let mut compared = 0;
    for root in [genesis_root, root1, root2] {
        for origin in origins.iter().step_by(7) {
            for bytes in [1, 200, 700, 1500, 100_000] {
                let req = GetStorageRanges {
                    request_id: 3,
                    root,
                    accounts: vec![account, keccak256(Address::left_padding_from(&[7]))],
                    origin: Bytes::copy_from_slice(origin.as_slice()),
                    limit: Bytes::new(),
                    bytes,
                };
                let (a, b) =
                    (walked.storage_ranges(&req).unwrap(), flat.storage_ranges(&req).unwrap());
                assert_eq!(a, b, "root {root} origin {origin} bytes {bytes}");
                compared += a.slots.iter().map(Vec::len).sum::<usize>();
            }
        }
    }
    assert!(compared > 1000, "{compared} slots compared");
    // The states differ where the blocks wrote: slot 6 is gone at root 1, slot 5 reads 999.
    let whole = |root| {
        flat.storage_ranges(&GetStorageRanges {
            request_id: 4,
            root,
            accounts: vec![account],
            origin: Bytes::new(),
            limit: Bytes::new(),
            bytes: 1 << 20,
        })
        .unwrap()
        .slots
        .concat()
    };
    let slot = |k: u64| keccak256(B256::from(U256::from(k)));
    let (at0, at1, at2) = (whole(genesis_root), whole(root1), whole(root2));
    assert_eq!((at0.len(), at1.len(), at2.len()), (60, 61, 60));
    assert!(at0.iter().any(|s| s.hash == slot(6)) && !at1.iter().any(|s| s.hash == slot(6)));
    let five = at1.iter().find(|s| s.hash == slot(5)).unwrap();
    assert_eq!(five.body, Bytes::from(alloy_rlp::encode(U256::from(999))));
    assert!(at2.iter().any(|s| s.hash == slot(200)) && !at1.iter().any(|s| s.hash == slot(200)));
}

/// Account ranges served from the flat state at the head and at roots below it (the head's
/// flat accounts with those the blocks above listed read from the older trie) are the trie
/// walk's answers exactly, byte budget by byte budget and limit by limit: balances changed,
/// accounts created above the asked root, the contract's storage root changed, at every origin.
#[test]
fn account_ranges_from_the_flat_state_equal_the_trie_walks() {
    let dir = tempfile::tempdir().unwrap();
    let (store, genesis_root) = rocks_store(dir.path());
    let root1 = apply_block(&store, &[(3, 77), (150, 1), (1000, 5), (1001, 6)], &[(5, 999)]);
    let root2 = apply_block(&store, &[(4, 1), (1000, 8), (2000, 9), (7, 70)], &[(61, 3)]);
    let reader = store.clone() as Arc<dyn FullReader>;
    let walked = SnapServer::new(reader.clone());
    let flat = SnapServer::new(reader).with_flat_state(store.clone());
    let mut origins: Vec<B256> =
        (0..3000u32).map(|i| keccak256(Address::left_padding_from(&i.to_be_bytes()))).collect();
    origins.sort();
    origins.insert(0, B256::ZERO);
    let limits = [B256::repeat_byte(0xff), B256::repeat_byte(0x80), B256::repeat_byte(0x10)];
    let mut compared = 0;
    for root in [genesis_root, root1, root2] {
        for origin in origins.iter().step_by(97) {
            for bytes in [1, 500, 3000, 100_000] {
                for limit in limits {
                    let req =
                        GetAccountRange { request_id: 1, root, origin: *origin, limit, bytes };
                    let (a, b) =
                        (walked.account_range(&req).unwrap(), flat.account_range(&req).unwrap());
                    assert_eq!(a, b, "root {root} origin {origin} bytes {bytes} limit {limit}");
                    compared += a.accounts.len();
                }
            }
        }
    }
    assert!(compared > 5000, "{compared} accounts compared");
    // The states differ where the blocks wrote: account 1000 is new at root 1 and holds 8 at
    // root 2; account 2000 is new at root 2; the contract's storage root moves.
    let whole = |root| range(&flat, root, B256::ZERO, B256::repeat_byte(0xff), 1 << 20);
    let find = |accounts: &[(B256, Bytes)], i: u32| {
        let hash = keccak256(Address::left_padding_from(&i.to_be_bytes()));
        accounts.iter().find(|(h, _)| *h == hash).map(|(_, body)| full(body))
    };
    let (at0, at1, at2) = (whole(genesis_root), whole(root1), whole(root2));
    assert_eq!((at0.len(), at1.len(), at2.len()), (300, 302, 303));
    assert!(find(&at0, 1000).is_none());
    assert_eq!(find(&at1, 1000).unwrap().balance, U256::from(5));
    assert_eq!(find(&at2, 1000).unwrap().balance, U256::from(8));
    assert!(find(&at1, 2000).is_none() && find(&at2, 2000).is_some());
    let storage_root = |accounts: &[(B256, Bytes)]| {
        let hash = keccak256(contract());
        full(&accounts.iter().find(|(h, _)| *h == hash).unwrap().1).storage_root
    };
    assert_ne!(storage_root(&at0), storage_root(&at1));
    assert_ne!(storage_root(&at1), storage_root(&at2));

    // The flat state answered: the whole range at the head read from a store opened afresh
    // (its node cache empty) takes a few trie nodes (the proofs, the contract's account), the
    // trie walk one a leaf.
    drop((walked, flat, store));
    let reads = |flat_state: bool| {
        let store = Arc::new(gigagas_storage::Storage::open(dir.path()).unwrap());
        let mut server = SnapServer::new(store.clone() as Arc<dyn FullReader>);
        if flat_state {
            server = server.with_flat_state(store.clone());
        }
        let before = store.trie_node_reads();
        assert_eq!(range(&server, root2, B256::ZERO, B256::repeat_byte(0xff), 1 << 20).len(), 303);
        store.trie_node_reads() - before
    };
    let (walk, flat) = (reads(false), reads(true));
    assert!(flat * 10 < walk, "trie nodes read: {flat} from the flat state, {walk} walking");
}
