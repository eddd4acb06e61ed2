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

/// Dense ids for every account and slot of a BAL, plus a concurrent "touched" bitset.
#[derive(Debug, Default)]
pub struct BalKeys {
    accounts: HashMap<Address, u32>,
    addresses: Vec<Address>,
    /// Per account: id of the account's own bit; slot `k` of `slots[a]` has id `offset[a] + 1 + k`.
    offset: Vec<u32>,
    /// Per account: its slots (changed and read), sorted.
    slots: Vec<Vec<U256>>,
    seen: Vec<AtomicU64>,
    total: usize,
}

impl BalKeys {
    /// Indexes the accounts and slots (reads and changes) of `bal`.
    pub fn new(bal: &[AccountChanges]) -> Self {
        let mut keys = Self::default();
        let mut next = 0u32;
        for (i, account) in bal.iter().enumerate() {
            keys.accounts.insert(account.address, i as u32);
            keys.addresses.push(account.address);
            let mut slots: Vec<U256> = account
                .storage_changes
                .iter()
                .map(|s| s.slot)
                .chain(account.storage_reads.iter().copied())
                .collect();
            slots.sort_unstable();
            slots.dedup();
            keys.offset.push(next);
            next += 1 + slots.len() as u32;
            keys.slots.push(slots);
        }
        keys.total = next as usize;
        keys.seen = (0..keys.total.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        keys
    }

    /// The position of `address` in the BAL (its index in the account list), `None` if the BAL
    /// does not list it.
    pub fn position(&self, address: &Address) -> Option<usize> {
        self.accounts.get(address).map(|&a| a as usize)
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
        let base = self.offset[a as usize];
        self.mark(base);
        let listed = &self.slots[a as usize];
        for slot in slots {
            match listed.binary_search(slot) {
                Ok(k) => self.mark(base + 1 + k as u32),
                Err(_) => {
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
        for (a, &base) in self.offset.iter().enumerate() {
            let address = self.addresses[a];
            if unset(base) {
                return Err(BalValidationError::Untouched { block, address, slot: None });
            }
            for (k, slot) in self.slots[a].iter().enumerate() {
                if unset(base + 1 + k as u32) {
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
