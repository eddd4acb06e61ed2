//! geth 1.17.10's Amsterdam (Glamsterdam): a chain `geth --dev` sealed with its BALs
//! (testing/geth/amsterdam-coverage, made by testing/geth_amsterdam.py's coverage load: every
//! rule of the fork at least once) imported from geth's export file — on the parallel executor
//! driven by geth's BALs, and on the sequential reference building its own — to geth's head
//! hash; and a geth BAL with one change rejected, naming block, transaction, account and slot.

use alloy_primitives::{B256, U256};
use alloy_rlp::Decodable;
use gigagas_bal::{BalValidationError, Phase};
use gigagas_engine::import::{import_blocks_with, FileBal, ImportOptions};
use gigagas_executor::ExecutionError;
use gigagas_storage::{FullProvider, Storage};
use gigagas_validation::{init_genesis, ExportedBlock, ImportError};
use std::{path::PathBuf, sync::Arc};

fn chain_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testing/geth/amsterdam-coverage")
}

fn read(name: &str) -> Vec<u8> {
    let path = chain_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// geth's head hash, from the summary the script wrote.
fn geth_head() -> (u64, B256) {
    let summary: serde_json::Value = serde_json::from_slice(&read("summary.json")).unwrap();
    let hash = summary["head_hash"].as_str().unwrap().parse().unwrap();
    (summary["head"].as_u64().unwrap(), hash)
}

fn entries(rlp: &[u8]) -> Vec<ExportedBlock> {
    let mut buf = rlp;
    let mut out = Vec::new();
    while !buf.is_empty() {
        out.push(ExportedBlock::decode(&mut buf).unwrap());
    }
    out
}

fn import(
    rlp: &[u8],
    file_bal: FileBal,
) -> (
    Arc<dyn FullProvider>,
    Result<Vec<gigagas_validation::ImportedBlock>, ImportError>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn FullProvider> = Arc::new(Storage::open(dir.path()).unwrap());
    init_genesis(&*store, &read("genesis.json")).unwrap();
    let options = ImportOptions { file_bal, threads: 2, ..Default::default() };
    let result = import_blocks_with(&store, rlp, options, &mut |_| {});
    (store, result, dir)
}

#[test]
fn geth_built_amsterdam_chain_imports_with_and_without_its_bals() {
    let rlp = read("chain.rlp");
    let blocks = entries(&rlp);
    assert!(blocks.iter().all(|b| b.bal.is_some()), "geth's export carries every block's BAL");
    let (head, head_hash) = geth_head();
    for file_bal in [FileBal::Use, FileBal::Ignore] {
        let (store, result, _dir) = import(&rlp, file_bal);
        let imported = result.unwrap_or_else(|e| panic!("{file_bal:?}: {e}"));
        assert_eq!(imported.len(), blocks.len());
        assert_eq!(store.best_block().unwrap(), Some((head, head_hash)), "{file_bal:?}");
        // Driven by geth's BAL, every block ran on the parallel executor; without it, none.
        let parallel = imported.iter().filter(|b| b.parallel).count();
        let expected = if file_bal == FileBal::Use { blocks.len() } else { 0 };
        assert_eq!(parallel, expected, "{file_bal:?}");
        // The BAL stored is geth's, whichever way the block ran.
        for b in &blocks {
            let stored =
                store.block_access_list(b.block.header.number).unwrap().expect("a stored BAL");
            assert_eq!(Some(&stored), b.bal.as_ref(), "block {}", b.block.header.number);
        }
    }
}

/// The block of the chain with the most transactions, and its position in the file.
fn busiest(blocks: &[ExportedBlock]) -> usize {
    (0..blocks.len()).max_by_key(|&i| blocks[i].block.body.transactions.len()).unwrap()
}

/// Imports the chain with block `at`'s BAL changed by `tamper`; returns the error and the
/// stored head afterwards.
fn import_tampered(
    tamper: impl FnOnce(&mut gigagas_bal::BlockAccessList, u64) -> String,
) -> (ImportError, u64, u64, String) {
    let mut blocks = entries(&read("chain.rlp"));
    let at = busiest(&blocks);
    let txs = blocks[at].block.body.transactions.len() as u64;
    let what = tamper(blocks[at].bal.as_mut().unwrap(), txs);
    let number = blocks[at].block.header.number;
    let rlp: Vec<u8> = blocks.iter().flat_map(alloy_rlp::encode).collect();
    let (store, result, _dir) = import(&rlp, FileBal::Use);
    let err = result.expect_err(&what);
    (err, number, store.best_block().unwrap().unwrap().0, what)
}

fn bal_error(err: &ImportError) -> &BalValidationError {
    match err {
        ImportError::Execution(ExecutionError::Bal(e)) => e,
        other => panic!("expected a BAL error, got {other}"),
    }
}

#[test]
fn a_changed_geth_bal_is_rejected_naming_block_tx_account_and_slot() {
    // A storage value changed.
    let (err, number, head, what) = import_tampered(|bal, _| {
        let account = bal.iter_mut().find(|a| !a.storage_changes.is_empty()).unwrap();
        let change = &mut account.storage_changes[0].changes[0];
        change.new_value += U256::from(1);
        format!("{} slot {:#x}", account.address, account.storage_changes[0].slot)
    });
    assert!(!err.is_internal(), "{what}: {err}");
    assert_eq!(head, number - 1, "the blocks before it stay, it does not");
    match bal_error(&err) {
        BalValidationError::WriteMismatch { block, phase, address, item, expected, found } => {
            assert_eq!(*block, number);
            assert!(matches!(phase, Phase::Tx(_) | Phase::PreExecution | Phase::PostExecution));
            assert!(what.starts_with(&address.to_string()), "{what}: {err}");
            assert!(item.starts_with("storage slot"), "{err}");
            assert!(expected.is_some() && found.is_some(), "{err}");
        }
        other => panic!("{what}: expected a write mismatch, got {other}"),
    }

    // A write dropped: the slot's first change removed (another slot of a transaction).
    let (err, number, _, what) = import_tampered(|bal, _| {
        let account = bal
            .iter_mut()
            .find(|a| {
                a.storage_changes
                    .iter()
                    .any(|s| s.changes.iter().any(|c| c.block_access_index.0 > 0))
            })
            .unwrap();
        let slot = account
            .storage_changes
            .iter_mut()
            .find(|s| s.changes.iter().any(|c| c.block_access_index.0 > 0))
            .unwrap();
        let key = slot.slot;
        let i = slot.changes.iter().position(|c| c.block_access_index.0 > 0).unwrap();
        slot.changes.remove(i);
        if slot.changes.is_empty() {
            account.storage_changes.retain(|s| s.slot != key);
            account.storage_reads.push(key);
            account.storage_reads.sort_unstable();
        }
        format!("{} slot {key:#x}", account.address)
    });
    match bal_error(&err) {
        BalValidationError::WriteMismatch {
            block,
            phase: Phase::Tx(_),
            expected: None,
            found: Some(_),
            address,
            ..
        } => {
            assert_eq!(*block, number);
            assert!(what.starts_with(&address.to_string()), "{what}: {err}");
        }
        other => panic!("{what}: expected a dropped write named at its transaction, got {other}"),
    }

    // A write moved to another transaction's index.
    let (err, number, _, what) = import_tampered(|bal, n_txs| {
        let account = bal
            .iter_mut()
            .find(|a| {
                a.balance_changes
                    .iter()
                    .any(|c| c.block_access_index.0 > 1 && c.block_access_index.0 <= n_txs)
            })
            .unwrap();
        let i = account
            .balance_changes
            .iter()
            .position(|c| c.block_access_index.0 > 1 && c.block_access_index.0 <= n_txs)
            .unwrap();
        let from = account.balance_changes[i].block_access_index.0;
        // To the index before, when that one is free for this account.
        let taken: Vec<u64> =
            account.balance_changes.iter().map(|c| c.block_access_index.0).collect();
        let to = (1..from).rev().find(|t| !taken.contains(t)).unwrap_or(from);
        account.balance_changes[i].block_access_index = alloy_eip7928::BlockAccessIndex(to);
        account.balance_changes.sort_by_key(|c| c.block_access_index.0);
        format!("{} balance from index {from} to {to}", account.address)
    });
    match bal_error(&err) {
        BalValidationError::WriteMismatch { block, phase: Phase::Tx(_), address, item, .. } => {
            assert_eq!(*block, number);
            assert!(what.starts_with(&address.to_string()), "{what}: {err}");
            assert_eq!(item, "balance", "{err}");
        }
        other => panic!("{what}: expected a moved write named at a transaction, got {other}"),
    }

    // A read missing: a slot only read, dropped from the list (the first such: a system
    // contract's, read by the post-execution request calls).
    let (err, number, _, what) = import_tampered(|bal, _| {
        let account = bal.iter_mut().find(|a| !a.storage_reads.is_empty()).unwrap();
        let slot = account.storage_reads.remove(0);
        format!("{} slot {slot:#x}", account.address)
    });
    match bal_error(&err) {
        BalValidationError::NotInBal { block, address, slot: Some(slot), phase } => {
            assert_eq!(*block, number);
            assert_eq!(*phase, Phase::PostExecution, "{err}");
            assert_eq!(what, format!("{address} slot {slot:#x}"), "{err}");
        }
        other => panic!("{what}: expected a read outside the BAL, got {other}"),
    }
}
