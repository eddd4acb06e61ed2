//! The full world state of a test chain at one block, in memory, and its state root.
//!
//! This is the state-root stage in its first form: after each block the post-state diff that
//! execution produced is applied to the parent's full state and the root of the whole account
//! trie (alloy-trie's `HashBuilder`, storage tries included) is compared with the header's
//! `stateRoot`.

use crate::fixture::FixtureAccount;
use alloy_primitives::{keccak256, map::HashMap, Address, Bytes, B256, U256};
use alloy_trie::{
    root::{state_root_unhashed, storage_root_unhashed},
    TrieAccount,
};
use gigagas_executor::PostStateDiff;
use gigagas_state::{PreState, StateError};
use revm::{bytecode::Bytecode, primitives::KECCAK_EMPTY};
use std::{collections::BTreeMap, sync::Arc};

/// One account of a [`WorldState`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldAccount {
    /// Balance (wei).
    pub balance: U256,
    /// Nonce.
    pub nonce: u64,
    /// keccak256 of the code (the empty-code hash for none).
    pub code_hash: B256,
    /// Non-zero storage slots.
    pub storage: BTreeMap<U256, U256>,
}

impl WorldAccount {
    /// A new account: no balance, nonce 0, no code, no storage.
    pub fn empty() -> Self {
        Self { balance: U256::ZERO, nonce: 0, code_hash: KECCAK_EMPTY, storage: BTreeMap::new() }
    }

    /// EIP-161 emptiness: no balance, nonce 0, no code (storage does not count).
    pub fn is_empty(&self) -> bool {
        self.balance.is_zero() && self.nonce == 0 && self.code_hash == KECCAK_EMPTY
    }
}

/// Every account of a chain at one block, with the code of every contract seen so far.
#[derive(Debug, Clone, Default)]
pub struct WorldState {
    accounts: BTreeMap<Address, WorldAccount>,
    contracts: Arc<HashMap<B256, Bytecode>>,
}

impl WorldState {
    /// The state a fixture's `pre` describes.
    pub fn from_fixture(pre: &BTreeMap<Address, FixtureAccount>) -> Self {
        let mut state = Self::default();
        for (address, account) in pre {
            let code_hash = state.add_code(&account.code);
            let storage = account.storage.iter().filter(|(_, v)| !v.is_zero());
            state.accounts.insert(
                *address,
                WorldAccount {
                    balance: account.balance,
                    nonce: account.nonce.to(),
                    code_hash,
                    storage: storage.map(|(k, v)| (*k, *v)).collect(),
                },
            );
        }
        state
    }

    /// The state a geth-format genesis `alloc` describes.
    pub fn from_genesis(alloc: &BTreeMap<Address, alloy_genesis::GenesisAccount>) -> Self {
        let mut state = Self::default();
        for (address, account) in alloc {
            let code_hash = state.add_code(account.code.as_ref().unwrap_or(&Bytes::new()));
            let storage = account.storage.iter().flatten().filter(|(_, v)| !v.is_zero());
            state.accounts.insert(
                *address,
                WorldAccount {
                    balance: account.balance,
                    nonce: account.nonce.unwrap_or(0),
                    code_hash,
                    storage: storage.map(|(k, v)| ((*k).into(), (*v).into())).collect(),
                },
            );
        }
        state
    }

    /// Remembers `code` and returns its hash.
    fn add_code(&mut self, code: &Bytes) -> B256 {
        if code.is_empty() {
            return KECCAK_EMPTY;
        }
        let hash = keccak256(code);
        if !self.contracts.contains_key(&hash) {
            Arc::make_mut(&mut self.contracts).insert(hash, Bytecode::new_raw(code.clone()));
        }
        hash
    }

    /// The accounts, by address.
    pub fn accounts(&self) -> &BTreeMap<Address, WorldAccount> {
        &self.accounts
    }

    /// This state as the executor's pre-state, with `block_hashes` (number → hash) answering
    /// `BLOCKHASH`.
    ///
    /// # Errors
    /// [`StateError::MissingCode`] if an account's code is unknown (cannot happen for states
    /// built by [`WorldState::from_fixture`] and [`WorldState::apply`]).
    pub fn pre_state(
        &self,
        block_hashes: Arc<BTreeMap<u64, B256>>,
    ) -> Result<PreState, StateError> {
        let mut pre = PreState::new(self.contracts.clone(), block_hashes);
        for (address, a) in &self.accounts {
            let storage = a.storage.iter().map(|(k, v)| (*k, *v)).collect();
            pre.insert_account(*address, a.balance, a.nonce, a.code_hash, storage)?;
        }
        Ok(pre)
    }

    /// Applies a block's post-state diff: accounts in `deleted` are removed, every account of
    /// `diff` takes its new balance, nonce, code and slots (a zero slot is removed). `codes` are
    /// the code bytes the block deployed (from its BAL's code changes).
    pub fn apply<'a>(
        &mut self,
        diff: &PostStateDiff,
        deleted: &[Address],
        codes: impl IntoIterator<Item = &'a Bytes>,
    ) {
        for code in codes {
            self.add_code(code);
        }
        for address in deleted {
            self.accounts.remove(address);
        }
        for (address, post) in &diff.0 {
            let account = self.accounts.entry(*address).or_insert_with(WorldAccount::empty);
            account.balance = post.balance;
            account.nonce = post.nonce;
            account.code_hash = post.code_hash;
            for (slot, value) in &post.storage {
                if value.is_zero() {
                    account.storage.remove(slot);
                } else {
                    account.storage.insert(*slot, *value);
                }
            }
        }
    }

    /// Applies one transaction's changes: the writes a BAL records at `index` (balances, nonces,
    /// code, slots), then the existence changes the executor saw at that index (an account
    /// created stays even empty; an account removed goes if it is empty). Rebuilds the state
    /// after each transaction, whose root pre-Byzantium receipts carry.
    pub fn apply_index(
        &mut self,
        bal: &[alloy_eip7928::AccountChanges],
        existence: &[(u64, Address, gigagas_executor::AccountExistence)],
        index: u64,
    ) {
        use gigagas_executor::AccountExistence;
        for account in bal {
            let w = gigagas_bal::writes::writes_at(account, index);
            if w.is_empty() {
                continue;
            }
            let code_hash = w.code.map(|c| self.add_code(c));
            let entry = self.accounts.entry(account.address).or_insert_with(WorldAccount::empty);
            if let Some(balance) = w.balance {
                entry.balance = balance;
            }
            if let Some(nonce) = w.nonce {
                entry.nonce = nonce;
            }
            if let Some(hash) = code_hash {
                entry.code_hash = hash;
            }
            for (slot, value) in w.slots {
                if value.is_zero() {
                    entry.storage.remove(&slot);
                } else {
                    entry.storage.insert(slot, value);
                }
            }
        }
        for (_, address, change) in existence.iter().filter(|(i, _, _)| *i == index) {
            match change {
                AccountExistence::Created => {
                    self.accounts.entry(*address).or_insert_with(WorldAccount::empty);
                }
                AccountExistence::Removed => {
                    if self.accounts.get(address).is_some_and(WorldAccount::is_empty) {
                        self.accounts.remove(address);
                    }
                }
            }
        }
    }

    /// The state root: the Merkle-Patricia root of all accounts (keyed by keccak256(address)),
    /// each with the root of its storage trie (keyed by keccak256(slot)). Yellow Paper §4.1.
    pub fn state_root(&self) -> B256 {
        state_root_unhashed(self.accounts.iter().map(|(address, a)| {
            let storage_root =
                storage_root_unhashed(a.storage.iter().map(|(k, v)| (B256::from(*k), *v)));
            let account = TrieAccount::new(a.nonce, a.balance, storage_root, a.code_hash);
            (*address, account)
        }))
    }

    /// The first difference from a fixture's `postState`, as "account A: ...", or `None`.
    pub fn first_difference(&self, expected: &BTreeMap<Address, FixtureAccount>) -> Option<String> {
        for (address, want) in expected {
            let Some(have) = self.accounts.get(address) else {
                return Some(format!("account {address}: missing"));
            };
            let want_code = if want.code.is_empty() { KECCAK_EMPTY } else { keccak256(&want.code) };
            if have.balance != want.balance {
                return Some(format!(
                    "account {address}: balance {} vs expected {}",
                    have.balance, want.balance
                ));
            }
            if have.nonce != want.nonce.to::<u64>() {
                return Some(format!(
                    "account {address}: nonce {} vs expected {}",
                    have.nonce, want.nonce
                ));
            }
            if have.code_hash != want_code {
                return Some(format!(
                    "account {address}: code hash {} vs expected",
                    have.code_hash
                ));
            }
            let want_storage: BTreeMap<U256, U256> =
                want.storage.iter().filter(|(_, v)| !v.is_zero()).map(|(k, v)| (*k, *v)).collect();
            if have.storage != want_storage {
                let slot = have
                    .storage
                    .keys()
                    .chain(want_storage.keys())
                    .find(|k| have.storage.get(k) != want_storage.get(k))
                    .copied()
                    .unwrap_or_default();
                return Some(format!(
                    "account {address}: slot {slot:#x}: {:?} vs expected {:?}",
                    have.storage.get(&slot),
                    want_storage.get(&slot)
                ));
            }
        }
        self.accounts
            .keys()
            .find(|a| !expected.contains_key(*a))
            .map(|a| format!("account {a}: present but not expected"))
    }
}
