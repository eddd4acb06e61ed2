//! Trie nodes read in a batch: the same answers as one by one, the misses read once and then
//! answered from the node cache.

use alloy_primitives::{keccak256, Bytes, B256};
use gigagas_storage::Storage;
use gigagas_storage_api::{HashedBatch, HashedStateWriter};
use gigagas_trie::{EncodedNode, NodeSource};

/// A batched read answers, in the order asked, what single reads answer (absent nodes as
/// `None`); it reads RocksDB only for the nodes its cache lacks, and caches what it read.
#[test]
fn batched_node_reads_answer_as_single_reads_and_fill_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let nodes: Vec<EncodedNode> = (0..500u64)
        .map(|i| {
            let rlp = Bytes::from(alloy_rlp::encode(vec![i; 3]));
            (keccak256(&rlp), rlp)
        })
        .collect();
    Storage::open(dir.path())
        .unwrap()
        .write_hashed(&HashedBatch { trie_nodes: &nodes, ..Default::default() })
        .unwrap();
    // A fresh open: the cache holds nothing.
    let store = Storage::open(dir.path()).unwrap();
    let absent = B256::repeat_byte(0xab);
    let mut hashes: Vec<B256> = nodes.iter().rev().step_by(2).map(|(h, _)| *h).collect();
    hashes.insert(7, absent);
    // Ten nodes read singly first: cached, so the batch reads the rest only.
    for (hash, _) in nodes.iter().rev().step_by(2).take(10) {
        assert!(store.node(hash).unwrap().is_some());
    }
    assert_eq!(store.trie_node_reads(), 10);
    let batched: Vec<Option<Bytes>> =
        store.nodes(&hashes).into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(store.trie_node_reads(), 10 + hashes.len() as u64 - 10);
    let single: Vec<Option<Bytes>> = hashes.iter().map(|h| store.node(h).unwrap()).collect();
    assert_eq!(batched, single);
    assert_eq!(batched[7], None);
    assert_eq!(batched.iter().flatten().count(), hashes.len() - 1);
    // Only the absent node missed the cache again.
    assert_eq!(store.trie_node_reads(), hashes.len() as u64 + 1);
    let by_hash: std::collections::HashMap<_, _> = nodes.into_iter().collect();
    for (hash, node) in hashes.iter().zip(&batched) {
        assert_eq!(node.as_ref(), by_hash.get(hash));
    }
}
