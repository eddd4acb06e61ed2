//! The flat state by trie key: what snap sync writes by hash is what the executor reads by
//! address, iterated in key order, with its progress in `meta`, atomically.

use alloy_primitives::{keccak256, Address, B256, U256};
use gigagas_storage::{AccountRecord, Storage};
use gigagas_storage_api::{
    BlockNumReader, HashedBatch, HashedStateReader, HashedStateWriter, HeaderProvider,
    MetadataProvider, RawBlock,
};

fn record(nonce: u64) -> AccountRecord {
    AccountRecord { nonce, balance: U256::from(nonce * 10), code_hash: B256::repeat_byte(7) }
}

#[test]
fn hashed_writes_read_by_address_and_in_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = Storage::open(dir.path()).unwrap();
    let addresses: Vec<Address> = (1..=50u8).map(Address::repeat_byte).collect();
    let accounts: Vec<(B256, AccountRecord)> =
        addresses.iter().enumerate().map(|(i, a)| (keccak256(a), record(i as u64 + 1))).collect();
    let slots: Vec<(B256, B256, U256)> = (0..30u64)
        .map(|s| (keccak256(addresses[3]), keccak256(B256::from(U256::from(s))), U256::from(s + 1)))
        .collect();
    let header = alloy_rlp::encode(alloy_consensus::Header { number: 9, ..Default::default() });
    let hash = keccak256(&header);
    store
        .write_hashed(&HashedBatch {
            accounts: &accounts,
            storage: &slots,
            meta_put: &[(b"snap/x/1".to_vec(), vec![1]), (b"snap/x/2".to_vec(), vec![2])],
            blocks: &[RawBlock { number: 9, hash, header: &header, ..Default::default() }],
            head: Some((9, hash)),
            ..Default::default()
        })
        .unwrap();
    // Read by address, as execution does.
    assert_eq!(store.account(&addresses[4]).unwrap(), Some(record(5)));
    assert_eq!(store.storage(&addresses[3], &U256::from(7)).unwrap(), U256::from(8));
    assert!(store.has_storage(&addresses[3]).unwrap());
    assert!(!store.has_storage(&addresses[2]).unwrap());
    assert_eq!(store.best_block().unwrap(), Some((9, hash)));
    assert_eq!(store.header_by_number(9).unwrap().unwrap().number, 9);
    // In key order, from any origin, within a limit.
    let mut sorted = accounts.clone();
    sorted.sort_by_key(|(h, _)| *h);
    assert_eq!(store.hashed_accounts(B256::ZERO, 100).unwrap(), sorted);
    assert_eq!(store.hashed_accounts(sorted[10].0, 5).unwrap(), sorted[10..15].to_vec());
    let mut want: Vec<(B256, U256)> = slots.iter().map(|(_, s, v)| (*s, *v)).collect();
    want.sort();
    assert_eq!(store.hashed_storage(keccak256(addresses[3]), B256::ZERO, 1000).unwrap(), want);
    assert_eq!(store.hashed_storage(keccak256(addresses[3]), want[20].0, 3).unwrap(), want[20..23]);
    assert!(store.hashed_storage(keccak256(addresses[2]), B256::ZERO, 10).unwrap().is_empty());
    // Progress entries by prefix, and removed.
    assert_eq!(store.meta_with_prefix(b"snap/x/").unwrap().len(), 2);
    store
        .write_hashed(&HashedBatch { meta_delete: &[b"snap/x/1".to_vec()], ..Default::default() })
        .unwrap();
    assert_eq!(store.meta_with_prefix(b"snap/x/").unwrap(), vec![(b"snap/x/2".to_vec(), vec![2])]);
    assert_eq!(store.meta(b"snap/x/2").unwrap(), Some(vec![2]));
}
