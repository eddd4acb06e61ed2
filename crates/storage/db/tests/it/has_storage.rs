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

/// From table files, whose filters hold each account's prefix: `has_storage` and the account
/// walk's storage flags (an iterator across accounts) still see exactly the accounts with
/// slots, the filters ruling out the others.
#[test]
fn has_storage_and_the_walks_storage_flags_hold_in_table_files() {
    use alloy_primitives::{keccak256, map::HashMap};
    use gigagas_storage_api::HashedStateReader;

    let dir = tempfile::tempdir().unwrap();
    let store = Storage::open(dir.path()).unwrap();
    let record = AccountRecord { nonce: 0, balance: U256::from(1), code_hash: B256::ZERO };
    let accounts: Vec<Address> =
        (0..600u64).map(|i| Address::left_padding_from(&(i + 1).to_be_bytes())).collect();
    let holds = |i: usize| i % 7 == 3;
    let slots: Vec<(Address, U256, U256)> = accounts
        .iter()
        .enumerate()
        .filter(|(i, _)| holds(*i))
        .flat_map(|(i, a)| {
            (0..3u64).map(move |s| (*a, U256::from(s * 1_000 + i as u64), U256::from(1)))
        })
        .collect();
    let records: Vec<(Address, AccountRecord)> = accounts.iter().map(|a| (*a, record)).collect();
    store.write_state(&records, &slots, &[]).unwrap();
    // Flushed and merged into table files; then reopened, reading them alone.
    store.compact();
    drop(store);
    let store = Storage::open(dir.path()).unwrap();
    for (i, a) in accounts.iter().enumerate() {
        assert_eq!(store.has_storage(a).unwrap(), holds(i), "account {i}");
    }
    let truth: HashMap<B256, bool> =
        accounts.iter().enumerate().map(|(i, a)| (keccak256(a), holds(i))).collect();
    let mut walked = 0;
    store
        .walk_hashed_accounts_at_head(B256::ZERO, &mut |hash, _, has| {
            assert_eq!(has, truth[&hash], "the walk's flag of {hash}");
            walked += 1;
            true
        })
        .unwrap();
    assert_eq!(walked, accounts.len());
}
