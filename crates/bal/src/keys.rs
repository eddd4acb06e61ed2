//! Coverage of a BAL's keys: which listed accounts and slots execution actually touched.
//!
//! EIP-7928 requires the BAL to list exactly the accounts and storage slots that execution
//! accesses. Reads outside the BAL are caught where they happen (revm's BAL-positioned state
//! refuses them); this index catches the other direction — entries no execution touched —
//! without rebuilding and re-hashing the whole BAL: every worker marks the keys its transaction
//! touched in a shared bitset, and the commit checks that every bit is set.

use crate::{BalValidationError, Phase};
use alloy_eip7928::AccountChanges;
use alloy_primitives::{map::HashMap, Address, U256};
use std::sync::atomic::{AtomicU64, Ordering};

/// A slot's entry in [`BalKeys`] when the BAL only reads it.
const READ_ONLY: u32 = u32::MAX;

/// Dense ids for every account and slot of a BAL, plus a concurrent "touched" bitset.
///
/// Accounts keep their BAL position `a`; slots (changed and read, sorted per account) are stored
/// flat, account `a`'s at `slot_start[a]..slot_start[a + 1]`. Bit ids: account `a` →
/// `a + slot_start[a]`, flat slot `j` of account `a` → `a + 1 + j`.
#[derive(Debug, Default)]
pub struct BalKeys {
    accounts: HashMap<Address, u32>,
    addresses: Vec<Address>,
    slot_start: Vec<u32>,
    slots: Vec<U256>,
    /// Per flat slot: its index in the account's `storage_changes`, or [`READ_ONLY`].
    changes: Vec<u32>,
    seen: Vec<AtomicU64>,
    total: usize,
}

/// Every `(account, slot)` the BAL lists, changed or read, in BAL order (a slot both changed and
/// read appears twice): the keys to prefetch before execution. Lighter than [`BalKeys::new`],
/// which also indexes and deduplicates them.
pub fn storage_keys(bal: &[AccountChanges]) -> impl Iterator<Item = (Address, U256)> + '_ {
    bal.iter().flat_map(|a| {
        let changed = a.storage_changes.iter().map(|s| s.slot);
        changed.chain(a.storage_reads.iter().copied()).map(move |s| (a.address, s))
    })
}

/// A key a BAL lists, as a read-ahead reads it: an account (its code with it), or a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BalKey {
    /// An account.
    Account(Address),
    /// A storage slot of an account.
    Slot(Address, U256),
}

/// Every account and slot `bal` lists, ordered by the first block access index that changes
/// each (EIP-7928: 0 the pre-execution system calls, `i` transaction `i`): the order a block's
/// transactions reach them, for a read-ahead that runs in front of execution. A slot only read
/// takes its account's first change; an account only read, and its slots, come last (the BAL
/// does not say when a read happens). Ties keep BAL order, an account before its slots; a slot
/// both changed and read appears once.
pub fn keys_by_first_change(bal: &[AccountChanges]) -> Vec<BalKey> {
    let mut ranked: Vec<(u64, BalKey)> = Vec::new();
    for account in bal {
        let slots: Vec<(u64, U256)> = account
            .storage_changes
            .iter()
            .map(|c| {
                (c.changes.iter().map(|c| c.block_access_index.0).min().unwrap_or(u64::MAX), c.slot)
            })
            .collect();
        let index = (account.balance_changes.iter().map(|c| c.block_access_index.0))
            .chain(account.nonce_changes.iter().map(|c| c.block_access_index.0))
            .chain(account.code_changes.iter().map(|c| c.block_access_index.0))
            .chain(slots.iter().map(|(at, _)| *at))
            .min()
            .unwrap_or(u64::MAX);
        ranked.push((index, BalKey::Account(account.address)));
        ranked
            .extend(slots.into_iter().map(|(at, slot)| (at, BalKey::Slot(account.address, slot))));
        for slot in &account.storage_reads {
            // EIP-7928 sorts `storage_changes` by slot (an unsorted one only reads a key twice).
            if account.storage_changes.binary_search_by_key(slot, |c| c.slot).is_err() {
                ranked.push((index, BalKey::Slot(account.address, *slot)));
            }
        }
    }
    // Stable: ties keep BAL order.
    ranked.sort_by_key(|&(at, _)| at);
    ranked.into_iter().map(|(_, key)| key).collect()
}

impl BalKeys {
    /// Indexes the accounts and slots (reads and changes) of `bal`.
    pub fn new(bal: &[AccountChanges]) -> Self {
        let n_slots: usize =
            bal.iter().map(|a| a.storage_changes.len() + a.storage_reads.len()).sum();
        let mut keys = Self {
            accounts: HashMap::with_capacity_and_hasher(bal.len(), Default::default()),
            addresses: Vec::with_capacity(bal.len()),
            slot_start: Vec::with_capacity(bal.len() + 1),
            slots: Vec::with_capacity(n_slots),
            changes: Vec::with_capacity(n_slots),
            ..Self::default()
        };
        let mut merged = Vec::new();
        for (i, account) in bal.iter().enumerate() {
            keys.accounts.insert(account.address, i as u32);
            keys.addresses.push(account.address);
            keys.slot_start.push(keys.slots.len() as u32);
            merged.clear();
            let changed = account.storage_changes.iter().enumerate();
            merged.extend(changed.map(|(k, s)| (s.slot, k as u32)));
            merged.extend(account.storage_reads.iter().map(|s| (*s, READ_ONLY)));
            // Sorted by slot, a changed entry before a read of the same slot (kept by dedup).
            merged.sort_unstable();
            merged.dedup_by_key(|(slot, _)| *slot);
            keys.slots.extend(merged.iter().map(|(slot, _)| *slot));
            keys.changes.extend(merged.iter().map(|(_, k)| *k));
        }
        keys.slot_start.push(keys.slots.len() as u32);
        keys.total = bal.len() + keys.slots.len();
        keys.seen = (0..keys.total.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        keys
    }

    /// The position of `address` in the BAL (its index in the account list), `None` if the BAL
    /// does not list it.
    pub fn position(&self, address: &Address) -> Option<usize> {
        self.accounts.get(address).map(|&a| a as usize)
    }

    /// The listed accounts, in BAL order.
    pub fn addresses(&self) -> &[Address] {
        &self.addresses
    }

    /// The flat indices of the slots listed for the account at BAL position `account`.
    pub fn slot_range(&self, account: usize) -> std::ops::Range<usize> {
        self.slot_start[account] as usize..self.slot_start[account + 1] as usize
    }

    /// All listed slots, flat (see [`BalKeys::slot_range`]).
    pub fn slots(&self) -> &[U256] {
        &self.slots
    }

    /// The flat index of `slot` among those of the account at BAL position `account`, `None`
    /// if the BAL does not list it.
    pub fn slot_index(&self, account: usize, slot: &U256) -> Option<usize> {
        let range = self.slot_range(account);
        let start = range.start;
        self.slots[range].binary_search(slot).ok().map(|k| start + k)
    }

    /// For flat slot `j`: its index in the account's `storage_changes`, `None` when the BAL only
    /// reads it.
    pub fn slot_changes(&self, j: usize) -> Option<usize> {
        let k = self.changes[j];
        (k != READ_ONLY).then_some(k as usize)
    }

    fn mark(&self, id: u32) {
        let (word, bit) = (&self.seen[id as usize / 64], 1 << (id % 64));
        // Most keys are touched many times: read first, so that workers do not keep taking the
        // cache line exclusive for a bit already set.
        if word.load(Ordering::Relaxed) & bit == 0 {
            word.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// Marks `address` and its `slots` as touched by `phase`.
    ///
    /// `position` is the account's position in the BAL when the caller already knows it (revm's
    /// `AccountInfo::account_id`, set when the account was loaded through the BAL): it is
    /// checked against `address` and saves the hash lookup.
    ///
    /// # Errors
    /// [`BalValidationError::NotInBal`] when the BAL does not list the account or a slot (e.g. a
    /// slot of a contract created in this transaction, which revm reads without asking the BAL).
    pub fn touch<'a>(
        &self,
        block: u64,
        phase: Phase,
        address: &Address,
        position: Option<usize>,
        slots: impl IntoIterator<Item = &'a U256>,
    ) -> Result<(), BalValidationError> {
        let known = position.filter(|&p| self.addresses.get(p) == Some(address));
        let Some(a) = known.map(|p| p as u32).or_else(|| self.accounts.get(address).copied())
        else {
            return Err(BalValidationError::NotInBal {
                block,
                phase,
                address: *address,
                slot: None,
            });
        };
        let a = a as usize;
        self.mark((a + self.slot_start[a] as usize) as u32);
        for slot in slots {
            match self.slot_index(a, slot) {
                Some(j) => self.mark((a + 1 + j) as u32),
                None => {
                    return Err(BalValidationError::NotInBal {
                        block,
                        phase,
                        address: *address,
                        slot: Some(*slot),
                    })
                }
            }
        }
        Ok(())
    }

    /// Checks that every listed account and slot was touched.
    ///
    /// # Errors
    /// [`BalValidationError::Untouched`] naming the first account (and slot) no phase touched.
    pub fn check_all_touched(&self, block: u64) -> Result<(), BalValidationError> {
        let set: usize =
            self.seen.iter().map(|w| w.load(Ordering::Relaxed).count_ones() as usize).sum();
        if set == self.total {
            return Ok(());
        }
        let unset =
            |id: u32| self.seen[id as usize / 64].load(Ordering::Relaxed) & (1 << (id % 64)) == 0;
        for (a, &address) in self.addresses.iter().enumerate() {
            if unset((a + self.slot_start[a] as usize) as u32) {
                return Err(BalValidationError::Untouched { block, address, slot: None });
            }
            for j in self.slot_range(a) {
                let slot = &self.slots[j];
                if unset((a + 1 + j) as u32) {
                    return Err(BalValidationError::Untouched {
                        block,
                        address,
                        slot: Some(*slot),
                    });
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::{BlockAccessIndex, SlotChanges, StorageChange};

    #[test]
    fn keys_come_in_the_order_transactions_first_change_them() {
        let (a, b, c) = (Address::repeat_byte(1), Address::repeat_byte(2), Address::repeat_byte(3));
        let s = U256::from;
        let change = |slot, at| {
            SlotChanges::new(s(slot), vec![StorageChange::new(BlockAccessIndex(at), s(9))])
        };
        let bal = vec![
            // Changed by transactions 3 (slot 2) and 5 (slot 7); slot 4 only read.
            AccountChanges {
                storage_changes: vec![change(2, 3), change(7, 5)],
                storage_reads: vec![s(4)],
                ..AccountChanges::new(a)
            },
            // Only read.
            AccountChanges { storage_reads: vec![s(1)], ..AccountChanges::new(b) },
            // Its balance changed by transaction 1.
            AccountChanges {
                balance_changes: vec![alloy_eip7928::BalanceChange::new(BlockAccessIndex(1), s(1))],
                ..AccountChanges::new(c)
            },
        ];
        assert_eq!(
            keys_by_first_change(&bal),
            [
                BalKey::Account(c),
                BalKey::Account(a),
                BalKey::Slot(a, s(2)),
                BalKey::Slot(a, s(4)),
                BalKey::Slot(a, s(7)),
                BalKey::Account(b),
                BalKey::Slot(b, s(1)),
            ]
        );
    }

    #[test]
    fn flat_slots_map_to_changes_and_coverage() {
        let (a, b) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let s = U256::from;
        let change =
            |slot| SlotChanges::new(s(slot), vec![StorageChange::new(BlockAccessIndex(1), s(9))]);
        let bal = vec![
            AccountChanges {
                storage_changes: vec![change(2), change(5)],
                storage_reads: vec![s(3)],
                ..AccountChanges::new(a)
            },
            AccountChanges { storage_reads: vec![s(1)], ..AccountChanges::new(b) },
        ];
        let keys = BalKeys::new(&bal);
        assert_eq!(keys.slot_range(0), 0..3);
        assert_eq!(keys.slot_range(1), 3..4);
        // Slots sorted per account; changed slots point at their `storage_changes` entry.
        assert_eq!(keys.slot_index(0, &s(3)), Some(1));
        assert_eq!(keys.slot_changes(0), Some(0));
        assert_eq!(keys.slot_changes(1), None);
        assert_eq!(keys.slot_changes(keys.slot_index(0, &s(5)).unwrap()), Some(1));
        assert_eq!(keys.slot_index(1, &s(2)), None);

        keys.touch(7, Phase::Tx(0), &a, Some(0), [&s(2), &s(3), &s(5)]).unwrap();
        let err = keys.touch(7, Phase::Tx(1), &b, None, [&s(4)]).unwrap_err();
        assert_eq!(
            err,
            BalValidationError::NotInBal {
                block: 7,
                phase: Phase::Tx(1),
                address: b,
                slot: Some(s(4))
            }
        );
        // b's account bit is set, its slot 1 is not.
        assert_eq!(
            keys.check_all_touched(7).unwrap_err(),
            BalValidationError::Untouched { block: 7, address: b, slot: Some(s(1)) }
        );
        keys.touch(7, Phase::Tx(1), &b, None, [&s(1)]).unwrap();
        keys.check_all_touched(7).unwrap();
    }
}
