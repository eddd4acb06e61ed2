//! A process killed with SIGKILL in the middle of an import reopens at its last committed block,
//! with every earlier block complete and nothing of a later one.

use alloy_primitives::{Address, B256, U256};
use gigagas_storage::{AccountRecord, BlockCommit, Storage, HEADERS, RECEIPTS};
use gigagas_storage_api::{BlockNumReader, BlockWriter};
use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

const CHILD_ENV: &str = "GIGAGAS_STORAGE_CRASH_CHILD";
const ACCOUNT: Address = Address::with_last_byte(0xaa);

fn header_bytes(number: u64) -> Vec<u8> {
    number.to_be_bytes().repeat(512) // 4 KiB per block
}

/// Block `n`: header, receipts, the account's nonce set to `n`, slot `n` set to `n + 1`.
fn commit(storage: &Storage, n: u64) {
    let header = header_bytes(n);
    let account = AccountRecord { nonce: n, balance: U256::from(n), code_hash: B256::ZERO };
    storage
        .commit_block(&BlockCommit {
            number: n,
            hash: B256::with_last_byte(n as u8),
            header: &header,
            body: b"body",
            receipts: &header,
            accounts: &[(ACCOUNT, Some(account))],
            storage: &[(ACCOUNT, U256::from(n), U256::from(n + 1))],
            ..BlockCommit::default()
        })
        .unwrap();
}

/// Checks the store is exactly blocks 0..=head, and returns head.
fn check_consistent(dir: &Path) -> u64 {
    let storage = Storage::open(dir).unwrap();
    let (head, hash) = storage.best_block().unwrap().expect("at least one block committed");
    assert_eq!(hash, B256::with_last_byte(head as u8));
    let account = storage.account(&ACCOUNT).unwrap().unwrap();
    assert_eq!(account.nonce, head, "account written by the head block");
    for n in 0..=head {
        assert_eq!(storage.block_entry(HEADERS, n).unwrap(), Some(header_bytes(n)), "block {n}");
        assert_eq!(storage.block_entry(RECEIPTS, n).unwrap(), Some(header_bytes(n)), "block {n}");
        assert_eq!(storage.storage(&ACCOUNT, &U256::from(n)).unwrap(), U256::from(n + 1));
    }
    assert_eq!(storage.block_entry(HEADERS, head + 1).unwrap(), None, "half-written block");
    assert_eq!(storage.storage(&ACCOUNT, &U256::from(head + 1)).unwrap(), U256::ZERO);
    head
}

#[test]
fn killed_import_reopens_at_last_committed_block() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        // The child: import forever from wherever the store stands.
        let storage = Storage::open(Path::new(&dir)).unwrap();
        let mut n = storage.best_block().unwrap().map_or(0, |(n, _)| n + 1);
        loop {
            commit(&storage, n);
            n += 1;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut last_head = None;
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "crash::killed_import_reopens_at_last_committed_block",
                "--nocapture",
            ])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Let it commit a few hundred blocks, then SIGKILL it mid-import.
        let start = Instant::now();
        std::thread::sleep(Duration::from_millis(400));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        assert!(start.elapsed() < Duration::from_secs(30));
        let head = check_consistent(dir.path());
        eprintln!("round {round}: killed, reopened at block {head}, all earlier blocks complete");
        if let Some(previous) = last_head {
            assert!(head > previous, "round {round}: import continued after reopening");
        }
        last_head = Some(head);
    }
    // The store continues normally after the crashes.
    let head = last_head.unwrap();
    let storage = Storage::open(dir.path()).unwrap();
    commit(&storage, head + 1);
    let err = storage
        .commit_block(&BlockCommit { number: head + 5, ..BlockCommit::default() })
        .unwrap_err();
    assert!(err.to_string().contains("committed in order"), "{err}");
    drop(storage);
    assert_eq!(check_consistent(dir.path()), head + 1);
}

#[test]
fn wiped_account_loses_all_its_slots() {
    let dir = tempfile::tempdir().unwrap();
    let storage = Storage::open(dir.path()).unwrap();
    let other = Address::with_last_byte(0xab);
    let slots: Vec<(Address, U256, U256)> = (1..=5u64)
        .flat_map(|s| {
            [(ACCOUNT, U256::from(s), U256::from(s)), (other, U256::from(s), U256::from(s))]
        })
        .chain([(ACCOUNT, U256::MAX, U256::from(1))])
        .collect();
    storage
        .commit_block(&BlockCommit { number: 0, storage: &slots, ..BlockCommit::default() })
        .unwrap();
    storage
        .commit_block(&BlockCommit {
            number: 1,
            wiped: &[ACCOUNT],
            storage: &[(ACCOUNT, U256::from(2), U256::from(9))],
            accounts: &[(ACCOUNT, None)],
            ..BlockCommit::default()
        })
        .unwrap();
    assert_eq!(storage.storage(&ACCOUNT, &U256::from(1)).unwrap(), U256::ZERO);
    assert_eq!(storage.storage(&ACCOUNT, &U256::MAX).unwrap(), U256::ZERO);
    assert_eq!(storage.storage(&ACCOUNT, &U256::from(2)).unwrap(), U256::from(9));
    assert_eq!(storage.storage(&other, &U256::from(3)).unwrap(), U256::from(3));
    assert_eq!(storage.account(&ACCOUNT).unwrap(), None);
}
