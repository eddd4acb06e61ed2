//! What a block's state root may take as known about the keys it changes: their values before
//! the block, as the executor's pre-state read them. The trie recognises a changed key's leaf
//! by its hash instead of reading it ([`PriorValues`]); cold, those leaves are most of a
//! block's trie reads.
//!
//! Flow: [`PreState`] → [`PreStatePriors`] (read in place, beside execution: the trie
//! read-ahead, the root from the BAL) or [`ChangedPriors`] (copied after execution for the
//! state-root stage) → `update_state_root_on` / `prefetch_paths`.

use alloy_primitives::{map::HashMap, Address, B256, U256};
use gigagas_state::PreState;
use gigagas_trie::{AccountUpdate, PriorValues};

/// A pre-state's values as far as it holds them when asked, never reading: what the BAL's
/// reads (or execution, or a block builder) have brought in by then.
#[derive(Debug, Clone, Copy)]
pub struct PreStatePriors<'a>(pub &'a PreState);

impl PriorValues for PreStatePriors<'_> {
    fn account(&self, address: &Address) -> Option<(u64, U256, B256)> {
        let (balance, nonce, code_hash) = self.0.peek_account_values(address)??;
        Some((nonce, balance, code_hash))
    }

    fn slot(&self, address: &Address, slot: &U256) -> Option<U256> {
        self.0.peek_slot(address, slot)
    }
}

/// The values the keys of a block's updates held before it, copied out of its pre-state when
/// execution ends: the state-root stage runs after the pre-state is gone.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChangedPriors {
    accounts: HashMap<Address, (u64, U256, B256)>,
    slots: HashMap<(Address, U256), U256>,
}

impl ChangedPriors {
    /// What `pre` holds of the accounts and slots `updates` change.
    pub(crate) fn of(updates: &[AccountUpdate], pre: &PreState) -> Self {
        let known = PreStatePriors(pre);
        let mut priors = Self::default();
        for u in updates {
            if let Some(values) = known.account(&u.address) {
                priors.accounts.insert(u.address, values);
            }
            for (slot, _) in &u.storage {
                if let Some(value) = known.slot(&u.address, slot) {
                    priors.slots.insert((u.address, *slot), value);
                }
            }
        }
        priors
    }
}

impl PriorValues for ChangedPriors {
    fn account(&self, address: &Address) -> Option<(u64, U256, B256)> {
        self.accounts.get(address).copied()
    }

    fn slot(&self, address: &Address, slot: &U256) -> Option<U256> {
        self.slots.get(&(*address, *slot)).copied()
    }
}
