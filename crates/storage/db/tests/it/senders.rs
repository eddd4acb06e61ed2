//! A block's senders are stored with it and read back in order, absent for a block committed
//! without them, and removed with the block by an unwind.

use alloy_primitives::{Address, B256};
use gigagas_storage::{BlockCommit, Storage, UnwoundBlock};
use gigagas_storage_api::{BlockReader, BlockWriter};

#[test]
fn senders_are_stored_read_back_and_unwound_with_their_block() {
    let dir = tempfile::tempdir().unwrap();
    let store = Storage::open(dir.path()).unwrap();
    let senders = [Address::with_last_byte(1), Address::repeat_byte(0xab), Address::ZERO];
    let commit = |number: u64, senders: &[Address]| {
        store
            .commit_block(&BlockCommit {
                number,
                hash: B256::with_last_byte(number as u8),
                header: b"h",
                body: b"b",
                receipts: b"r",
                senders,
                ..BlockCommit::default()
            })
            .unwrap();
    };
    commit(0, &[]);
    commit(1, &senders);
    assert_eq!(store.senders_by_number(0).unwrap(), None, "none given, none stored");
    assert_eq!(store.senders_by_number(1).unwrap(), Some(senders.to_vec()));
    assert_eq!(store.senders_by_number(2).unwrap(), None);
    let unwound = UnwoundBlock { number: 1, hash: B256::with_last_byte(1), tx_hashes: Vec::new() };
    store.unwind((0, B256::with_last_byte(0)), &[unwound], &[], &[]).unwrap();
    assert_eq!(store.senders_by_number(1).unwrap(), None, "gone with the block");
}
