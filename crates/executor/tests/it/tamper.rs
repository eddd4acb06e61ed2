//! Every kind of wrong BAL is rejected with an error naming block, tx index, account and slot.

use crate::common::{data, parallel_blocks, Data};
use alloy_eip7928::{AccountChanges, BlockAccessIndex, StorageChange};
use alloy_primitives::U256;
use gigagas_bal::{BalValidationError, BlockAccessList, Phase};
use gigagas_executor::{
    parallel::{execute_parallel, ParallelConfig},
    ExecutionError, Scheduler,
};

/// Cancun block: beacon-root system call at index 0, withdrawals at n + 1, 37 transactions.
const BLOCK: u64 = 19_426_587;

fn position(d: &Data, number: u64) -> usize {
    d.blocks.iter().position(|b| b.block.number() == number).expect("block in data")
}

/// Runs the parallel executor on `number` alone with a tampered copy of its BAL.
fn run_tampered(number: u64, tamper: impl FnOnce(&mut BlockAccessList)) -> ExecutionError {
    let d = data();
    let at = position(d, number);
    let mut bals: Vec<BlockAccessList> =
        d.reference.iter().map(|r| r.bal.clone().unwrap()).collect();
    tamper(&mut bals[at]);
    let blocks = parallel_blocks(d, Some(&bals));
    for threads in [1, 2] {
        let run = execute_parallel(
            &d.chain,
            &blocks[at..=at],
            ParallelConfig { threads, scheduler: Scheduler::GasLimit, batch: 1 },
        );
        assert!(run.outcomes[0].is_err(), "tampered BAL accepted ({threads} threads)");
    }
    let run = execute_parallel(
        &d.chain,
        &blocks[at..=at],
        ParallelConfig { threads: 2, scheduler: Scheduler::Ols, batch: 1 },
    );
    let err = run.outcomes.into_iter().next().unwrap().unwrap_err();
    assert_eq!(err.block(), number, "{err}");
    err
}

/// The BAL the sequential reference built for [`BLOCK`].
fn reference_bal() -> &'static BlockAccessList {
    let d = data();
    d.reference[position(d, BLOCK)].bal.as_ref().expect("sequential builds a BAL")
}

fn tx_count(number: u64) -> u64 {
    let d = data();
    d.blocks[position(d, number)].block.transactions.len() as u64
}

/// First (account, slot position, change position) with a storage write by a transaction.
fn first_tx_storage_write(bal: &BlockAccessList, n: u64) -> (usize, usize, usize) {
    for (a, acc) in bal.iter().enumerate() {
        for (s, slot) in acc.storage_changes.iter().enumerate() {
            for (c, ch) in slot.changes.iter().enumerate() {
                let i = ch.block_access_index.0;
                if i >= 1 && i <= n {
                    return (a, s, c);
                }
            }
        }
    }
    panic!("no storage write by a transaction");
}

fn expect_write_mismatch(
    err: &ExecutionError,
    phase: Phase,
    acc: &AccountChanges,
    item: &str,
    expect_some: bool,
    found_some: bool,
) {
    match err {
        ExecutionError::Bal(BalValidationError::WriteMismatch {
            phase: p,
            address,
            item: it,
            expected,
            found,
            ..
        }) => {
            assert_eq!(*p, phase, "{err}");
            assert_eq!(*address, acc.address, "{err}");
            assert_eq!(it, item, "{err}");
            assert_eq!(expected.is_some(), expect_some, "{err}");
            assert_eq!(found.is_some(), found_some, "{err}");
        }
        other => panic!("expected a write mismatch, got: {other}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&format!("block {BLOCK}")), "{msg}");
    assert!(msg.contains(&acc.address.to_string()), "{msg}");
}

#[test]
fn changed_storage_value_is_rejected() {
    let bal = reference_bal();
    let (a, s, c) = first_tx_storage_write(bal, tx_count(BLOCK));
    let change = &bal[a].storage_changes[s].changes[c];
    let tx = change.block_access_index.0 as usize - 1;
    let err = run_tampered(BLOCK, |bal| {
        let v = &mut bal[a].storage_changes[s].changes[c].new_value;
        *v = v.wrapping_add(U256::from(1));
    });
    let item = format!("storage slot {:#x}", bal[a].storage_changes[s].slot);
    expect_write_mismatch(&err, Phase::Tx(tx), &bal[a], &item, true, true);
    assert!(err.to_string().contains(&format!("tx {tx}")), "{err}");
}

#[test]
fn dropped_balance_write_is_rejected() {
    let bal = reference_bal();
    let n = tx_count(BLOCK);
    let (a, c) = bal
        .iter()
        .enumerate()
        .find_map(|(a, acc)| {
            acc.balance_changes
                .iter()
                .position(|ch| (1..=n).contains(&ch.block_access_index.0))
                .map(|c| (a, c))
        })
        .unwrap();
    let tx = bal[a].balance_changes[c].block_access_index.0 as usize - 1;
    let err = run_tampered(BLOCK, |bal| {
        bal[a].balance_changes.remove(c);
    });
    expect_write_mismatch(&err, Phase::Tx(tx), &bal[a], "balance", false, true);
}

#[test]
fn phantom_storage_write_is_rejected() {
    let bal = reference_bal();
    // A slot that the block only reads gets a write at tx 0's index.
    let (a, r) = bal
        .iter()
        .enumerate()
        .find_map(|(a, acc)| (!acc.storage_reads.is_empty()).then_some((a, 0)))
        .unwrap();
    let slot = bal[a].storage_reads[r];
    let err = run_tampered(BLOCK, |bal| {
        let acc = &mut bal[a];
        acc.storage_reads.remove(r);
        let change = StorageChange::new(BlockAccessIndex(1), U256::from(0xdead));
        let at = acc.storage_changes.partition_point(|s| s.slot < slot);
        acc.storage_changes.insert(at, alloy_eip7928::SlotChanges::new(slot, vec![change]));
    });
    expect_write_mismatch(
        &err,
        Phase::Tx(0),
        &bal[a],
        &format!("storage slot {slot:#x}"),
        true,
        false,
    );
}

#[test]
fn write_moved_to_another_index_is_rejected() {
    let bal = reference_bal();
    let n = tx_count(BLOCK);
    // A storage write by tx i whose slot has no other change: move it to a later free index.
    let (a, s) = bal
        .iter()
        .enumerate()
        .find_map(|(a, acc)| {
            acc.storage_changes
                .iter()
                .position(|sc| {
                    sc.changes.len() == 1 && (1..n).contains(&sc.changes[0].block_access_index.0)
                })
                .map(|s| (a, s))
        })
        .unwrap();
    let from = bal[a].storage_changes[s].changes[0].block_access_index.0;
    let err = run_tampered(BLOCK, |bal| {
        bal[a].storage_changes[s].changes[0].block_access_index = BlockAccessIndex(from + 1);
    });
    // Transaction `from - 1` wrote the slot, which the BAL now places at the next index.
    let item = format!("storage slot {:#x}", bal[a].storage_changes[s].slot);
    expect_write_mismatch(&err, Phase::Tx(from as usize - 1), &bal[a], &item, false, true);
}

#[test]
fn slot_missing_from_reads_is_rejected() {
    let bal = reference_bal();
    let a = bal.iter().position(|acc| !acc.storage_reads.is_empty()).unwrap();
    let slot = bal[a].storage_reads[0];
    let err = run_tampered(BLOCK, |bal| {
        bal[a].storage_reads.remove(0);
    });
    match &err {
        ExecutionError::Bal(BalValidationError::NotInBal {
            address, slot: Some(s), phase, ..
        }) => {
            assert_eq!(*address, bal[a].address, "{err}");
            assert_eq!(*s, slot, "{err}");
            assert!(matches!(phase, Phase::Tx(_) | Phase::PreExecution | Phase::PostExecution));
        }
        other => panic!("expected a read outside the BAL, got: {other}"),
    }
    assert!(err.to_string().contains(&format!("{slot:#x}")), "{err}");
}

#[test]
fn account_missing_from_bal_is_rejected() {
    let bal = reference_bal();
    // An account that is only read (no changes at all).
    let a = bal.iter().position(|acc| !acc.has_changes() && acc.storage_reads.is_empty()).unwrap();
    let address = bal[a].address;
    let err = run_tampered(BLOCK, |bal| {
        bal.remove(a);
    });
    assert!(
        matches!(&err, ExecutionError::Bal(BalValidationError::NotInBal { address: x, slot: None, .. }) if *x == address),
        "{err}"
    );
}

#[test]
fn phantom_read_is_rejected() {
    let bal = reference_bal();
    let a = bal.iter().position(|acc| acc.storage_reads.is_empty()).unwrap();
    let err = run_tampered(BLOCK, |bal| {
        bal[a].storage_reads.push(U256::from(0x1234_5678u64));
    });
    assert!(
        matches!(&err, ExecutionError::Bal(BalValidationError::Untouched { address, slot: Some(s), .. })
            if *address == bal[a].address && *s == U256::from(0x1234_5678u64)),
        "{err}"
    );
}

#[test]
fn wrong_withdrawal_balance_is_rejected_post_execution() {
    let bal = reference_bal();
    let post = tx_count(BLOCK) + 1;
    let (a, c) = bal
        .iter()
        .enumerate()
        .find_map(|(a, acc)| {
            acc.balance_changes
                .iter()
                .position(|ch| ch.block_access_index.0 == post)
                .map(|c| (a, c))
        })
        .unwrap();
    let err = run_tampered(BLOCK, |bal| {
        bal[a].balance_changes[c].post_balance += U256::from(1);
    });
    expect_write_mismatch(&err, Phase::PostExecution, &bal[a], "balance", true, true);
}

/// The mainnet pre-states omit the EIP-4788 beacon-roots contract (see docs/architecture.md),
/// so index 0 has no writes here: a phantom write at index 0 must be rejected as pre-execution.
#[test]
fn phantom_pre_execution_write_is_rejected() {
    let bal = reference_bal();
    let a = bal
        .iter()
        .position(|acc| acc.balance_changes.first().is_some_and(|c| c.block_access_index.0 > 0))
        .unwrap();
    let err = run_tampered(BLOCK, |bal| {
        let change = alloy_eip7928::BalanceChange::new(BlockAccessIndex(0), U256::from(1));
        bal[a].balance_changes.insert(0, change);
    });
    expect_write_mismatch(&err, Phase::PreExecution, &bal[a], "balance", true, false);
}

#[test]
fn phantom_account_is_rejected() {
    let bal = reference_bal();
    let phantom = alloy_primitives::Address::repeat_byte(0xee);
    assert!(bal.iter().all(|a| a.address != phantom));
    let err = run_tampered(BLOCK, |bal| {
        let at = bal.partition_point(|a| a.address < phantom);
        bal.insert(at, AccountChanges::new(phantom));
    });
    assert!(
        matches!(&err, ExecutionError::Bal(BalValidationError::Untouched { address, slot: None, .. })
            if *address == phantom),
        "{err}"
    );
}

#[test]
fn unsorted_bal_is_rejected_as_malformed() {
    let err = run_tampered(BLOCK, |bal| bal.swap(0, 1));
    assert!(matches!(&err, ExecutionError::Bal(BalValidationError::Structure { .. })), "{err}");
}

#[test]
fn index_beyond_block_is_rejected_as_malformed() {
    let post = tx_count(BLOCK) + 1;
    let err = run_tampered(BLOCK, |bal| {
        let acc = bal.iter_mut().find(|a| !a.balance_changes.is_empty()).unwrap();
        acc.balance_changes.last_mut().unwrap().block_access_index = BlockAccessIndex(post + 5);
    });
    assert!(matches!(&err, ExecutionError::Bal(BalValidationError::Structure { .. })), "{err}");
}
