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
