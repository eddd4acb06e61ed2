//! `Storage::has_storage` (EIP-7610's collision test) sees exactly the account's own slots: not
//! its neighbours' (keys share no prefix beyond the address), not slots set to zero, not slots
//! a wipe removed.

use alloy_primitives::{Address, B256, U256};
use gigagas_storage::{AccountRecord, BlockCommit, Storage};
use gigagas_storage_api::{BlockWriter, StateWriter};

#[test]
fn has_storage_sees_only_the_accounts_own_live_slots() {
    let dir = tempfile::tempdir().unwrap();
    let store = Storage::open(dir.path()).unwrap();
    let (low, a, high) = (
        Address::with_last_byte(0x10),
        Address::with_last_byte(0x11),
        Address::with_last_byte(0x12),
    );
    let record = AccountRecord { nonce: 0, balance: U256::from(1), code_hash: B256::ZERO };
    // The neighbours hold slots at both ends of the key space; `a` holds none.
    store
        .write_state(
            &[(low, record), (a, record), (high, record)],
            &[(low, U256::MAX, U256::from(1)), (high, U256::ZERO, U256::from(1))],
            &[],
        )
        .unwrap();
    assert!(store.has_storage(&low).unwrap());
    assert!(store.has_storage(&high).unwrap());
    assert!(!store.has_storage(&a).unwrap(), "a neighbour's slot is not the account's");
    assert!(!store.has_storage(&Address::with_last_byte(0x99)).unwrap());

    // Block 0 gives `a` a slot at the top of the slot space.
    let commit = |number: u64, wiped: &[Address], storage: &[(Address, U256, U256)]| {
        store
            .commit_block(&BlockCommit {
                number,
                hash: B256::with_last_byte(number as u8),
                header: b"h",
                body: b"b",
                receipts: b"r",
                wiped,
                storage,
                ..BlockCommit::default()
            })
            .unwrap();
    };
    commit(0, &[], &[(a, U256::MAX, U256::from(7))]);
    assert!(store.has_storage(&a).unwrap());
    // Block 1 sets it to zero: deleted.
    commit(1, &[], &[(a, U256::MAX, U256::ZERO)]);
    assert!(!store.has_storage(&a).unwrap(), "a zeroed slot is gone");
    // Block 2 writes two slots, block 3 wipes the account (a range deletion).
    commit(2, &[], &[(a, U256::from(1), U256::from(1)), (a, U256::from(2), U256::from(2))]);
    assert!(store.has_storage(&a).unwrap());
    commit(3, &[a], &[]);
    assert!(!store.has_storage(&a).unwrap(), "a wiped account has no storage");
    assert!(store.has_storage(&low).unwrap() && store.has_storage(&high).unwrap());
}
