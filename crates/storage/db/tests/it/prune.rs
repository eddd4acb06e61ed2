//! Pruning the trie: what a kept root reaches stays, what none reaches goes, and the first kept
//! block is recorded.

use alloy_primitives::{keccak256, B256, U256};
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_storage::Storage;
use gigagas_storage_api::{HashedBatch, HashedStateWriter, KeepStates, TriePruner};
use gigagas_trie::{EncodedNode, NodeSource, Trie};

/// A storage trie of `n` slots (values `v..v+n`), its root and nodes.
fn storage_trie(n: u64, v: u64) -> (B256, Vec<EncodedNode>) {
    let mut trie = Trie::new(EMPTY_ROOT_HASH);
    for s in 0..n {
        let key = Nibbles::unpack(keccak256(B256::from(U256::from(s))));
        trie.insert(
            &key,
            alloy_rlp::encode(U256::from(v + s)),
            &gigagas_trie::ProofNodes::default(),
        )
        .unwrap();
    }
    trie.root_with_nodes()
}

/// An account trie of 300 accounts; account 0 holds `storage` as its storage root, and every
/// account a balance of `balance + i`.
fn account_trie(balance: u64, storage: &[(u64, B256)]) -> (B256, Vec<EncodedNode>) {
    let mut trie = Trie::new(EMPTY_ROOT_HASH);
    for i in 0..300u64 {
        let storage_root =
            storage.iter().find(|(a, _)| *a == i).map_or(EMPTY_ROOT_HASH, |(_, r)| *r);
        let account = TrieAccount {
            nonce: 1,
            balance: U256::from(balance + i),
            storage_root,
            code_hash: alloy_primitives::KECCAK256_EMPTY,
        };
        let key = Nibbles::unpack(keccak256(i.to_be_bytes()));
        trie.insert(&key, alloy_rlp::encode(account), &gigagas_trie::ProofNodes::default())
            .unwrap();
    }
    trie.root_with_nodes()
}

/// Every value under `root` read back through `store` (accounts, and the storage of those
/// listed).
fn read_all(store: &Storage, root: B256, accounts_with_storage: &[(u64, u64)]) {
    let mut trie = Trie::new(root);
    for i in 0..300u64 {
        let key = Nibbles::unpack(keccak256(i.to_be_bytes()));
        let value = trie.get(&key, store).unwrap().expect("account present");
        let account: TrieAccount = alloy_rlp::decode_exact(&value).unwrap();
        if let Some((_, slots)) = accounts_with_storage.iter().find(|(a, _)| *a == i) {
            let mut storage = Trie::new(account.storage_root);
            for s in 0..*slots {
                let key = Nibbles::unpack(keccak256(B256::from(U256::from(s))));
                assert!(storage.get(&key, store).unwrap().is_some());
            }
        }
    }
}

/// Two states: the old one with two identical storage tries (accounts 0 and 1), the new one
/// with account 0's storage changed and every balance changed. Keeping the new root deletes
/// the old account trie's nodes and account 0's old storage trie's unique nodes, but keeps the
/// storage trie account 1 still shares with the old state, and every value of the new state
/// reads back. A root to keep that was never held is skipped; if none is held, nothing goes.
#[test]
fn prune_keeps_what_kept_roots_reach_and_deletes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (shared_root, shared_nodes) = storage_trie(200, 1);
    let (changed_root, changed_nodes) = storage_trie(200, 1_000);
    let (old_root, old_nodes) = account_trie(10, &[(0, shared_root), (1, shared_root)]);
    let (new_root, new_nodes) = account_trie(20, &[(0, changed_root), (1, shared_root)]);
    let old_only: Vec<B256> = old_nodes
        .iter()
        .map(|(h, _)| *h)
        .filter(|h| !new_nodes.iter().any(|(n, _)| n == h))
        .collect();
    assert!(!old_only.is_empty());
    {
        let store = Storage::open(dir.path()).unwrap();
        let mut all = shared_nodes.clone();
        all.extend(changed_nodes.iter().cloned());
        all.extend(old_nodes.iter().cloned());
        all.extend(new_nodes.iter().cloned());
        store.write_hashed(&HashedBatch { trie_nodes: &all, ..Default::default() }).unwrap();
        read_all(&store, old_root, &[(0, 200), (1, 200)]);
        assert_eq!(store.pruned_below().unwrap(), None);
    }
    // A fresh open: no node cache answers for the store.
    let store = Storage::open(dir.path()).unwrap();
    let mut phases = Vec::new();
    // Block 6's root was never held (as below a snap sync's pivot): skipped, not an error.
    let never_held = B256::repeat_byte(0x66);
    // A commit while the mark runs writes a node no kept root reaches (as a block whose value
    // returns to an old one writes an old node again) and a node never stored: both stay.
    let revived = old_only[0];
    let revived_node = old_nodes.iter().find(|(h, _)| *h == revived).unwrap().clone();
    let fresh: EncodedNode = (keccak256(b"fresh"), vec![0xc0].into());
    let meanwhile = [revived_node, fresh.clone()];
    let writer = &store;
    let stats = store
        .prune_trie(KeepStates::Roots(&[(6, never_held), (7, new_root)]), 4, &mut |phase, _| {
            if !phases.contains(&phase) {
                writer
                    .write_hashed(&HashedBatch { trie_nodes: &meanwhile, ..Default::default() })
                    .unwrap();
            }
            phases.push(phase);
        })
        .unwrap();
    assert_eq!((stats.roots, stats.first_kept, stats.written_meanwhile), (2, 7, 2));
    assert_eq!(stats.deleted, old_only.len() as u64 - 1, "{stats:?}");
    // Scanned: the kept, the deleted, and the two written meanwhile.
    assert_eq!(stats.scanned, stats.kept + stats.deleted + 2);
    assert!(["mark", "sweep", "compact"].iter().all(|p| phases.contains(p)));
    assert!(store.node(&revived).unwrap().is_some() && store.node(&fresh.0).unwrap().is_some());
    assert_eq!(store.pruned_below().unwrap(), Some(7));
    let none_held = store.prune_trie(KeepStates::Roots(&[(8, never_held)]), 1, &mut |_, _| {});
    assert!(matches!(none_held, Err(gigagas_storage_api::ProviderError::Corrupt { .. })));
    assert_eq!(store.pruned_below().unwrap(), Some(7));
    drop(store);
    let store = Storage::open(dir.path()).unwrap();
    read_all(&store, new_root, &[(0, 200), (1, 200)]);
    for hash in &old_only[1..] {
        assert_eq!(store.node(hash).unwrap(), None, "{hash} should be pruned");
    }
    for (hash, _) in shared_nodes.iter().chain(&changed_nodes) {
        assert!(store.node(hash).unwrap().is_some(), "{hash} should be kept");
    }
}
