//! Unwinding the store to a canonical ancestor (a reorg): the flat state of every key the
//! unwound blocks changed (their BALs name each one) read back from the trie under the
//! ancestor's state root, which the store keeps, and written with the removal of the blocks in
//! one atomic write.

use super::context::TreeContext;
use alloy_primitives::{map::HashMap, Address, B256, U256};
use gigagas_storage_api::{AccountRecord, TrieState, UnwoundBlock};
use gigagas_validation::{ImportError, UnwindError};
use std::collections::BTreeSet;

impl TreeContext {
    /// Unwinds the store from `stored_head` down to `base`. The unwound blocks stay in memory
    /// when they are there (they were executed by this node within [`KEEP_BLOCKS`]), so a
    /// later update can make them canonical again. Returns them, highest first.
    pub(super) fn unwind_to(
        &self,
        base: (u64, B256),
        stored_head: (u64, B256),
    ) -> Result<Vec<(u64, B256)>, ImportError> {
        let earliest = self.store.earliest_state_block()?;
        if base.0 < earliest {
            let reason = UnwindError::StatePruned { base: base.0, earliest };
            return Err(ImportError::Unwind { number: stored_head.0, reason });
        }
        let base_header = self.canonical_header(base.0)?;
        let target = TrieState { store: self.store.clone(), root: base_header.state_root };
        let mut unwound = Vec::new();
        let mut addresses = BTreeSet::new();
        let mut slots = BTreeSet::new();
        for number in (base.0 + 1..=stored_head.0).rev() {
            let header = self.canonical_header(number)?;
            let unwind = |reason: UnwindError| ImportError::Unwind { number, reason };
            if !self.chain.is_cancun(header.timestamp) {
                return Err(unwind(UnwindError::PreCancun));
            }
            let bal =
                self.store.block_access_list(number)?.ok_or(unwind(UnwindError::MissingBal))?;
            for account in &bal {
                addresses.insert(account.address);
                for slot in &account.storage_changes {
                    slots.insert((account.address, slot.slot));
                }
            }
            let body = self.store.body_by_number(number)?.unwrap_or_default();
            let hash = header.hash_slow();
            unwound.push(UnwoundBlock {
                number,
                hash,
                tx_hashes: body.transactions.iter().map(|tx| *tx.tx_hash()).collect(),
            });
        }
        let state_err = |e: gigagas_state::StateError| ImportError::Unwind {
            number: base.0,
            reason: UnwindError::State(e),
        };
        let mut accounts: Vec<(Address, Option<AccountRecord>)> = Vec::new();
        let mut roots: HashMap<Address, Option<B256>> = HashMap::default();
        for address in &addresses {
            let account = target.trie_account(address).map_err(state_err)?;
            roots.insert(*address, account.as_ref().map(|a| a.storage_root));
            accounts.push((
                *address,
                account.map(|a| AccountRecord {
                    nonce: a.nonce,
                    balance: a.balance,
                    code_hash: a.code_hash,
                }),
            ));
        }
        let mut storage: Vec<(Address, U256, U256)> = Vec::new();
        for (address, slot) in &slots {
            let slot = *slot;
            let value = match roots.get(address).copied().flatten() {
                Some(root) => target.slot_in(address, root, &slot).map_err(state_err)?,
                None => U256::ZERO,
            };
            storage.push((*address, slot, value));
        }
        self.store.unwind(base, &unwound, &accounts, &storage)?;
        Ok(unwound.iter().map(|b| (b.number, b.hash)).collect())
    }
}
