//! State providers: the state under one stored state root ([`TrieState`]), read through the
//! trie nodes (the store keeps every node, so every stored block's state can be read, as in an
//! archive node); the latest state is the store's flat state itself ([`StateProvider`]).

use crate::StateProvider;
use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_rlp::Decodable;
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_state::{StateError, StateSource};
use gigagas_trie::{NodeSource, Trie, TrieError};
use revm::state::{AccountInfo, Bytecode};
use std::sync::Arc;

/// The state whose root is `root`, over the trie nodes and codes of `store`; block hashes
/// are the store's canonical ones (correct for every block up to the one whose root this is,
/// when that block is canonical).
#[derive(Debug)]
pub struct TrieState {
    /// The store holding the nodes.
    pub store: Arc<dyn StateProvider>,
    /// The state root.
    pub root: B256,
}

/// Why a read through the stored trie failed: a node is missing or malformed, or a leaf does
/// not decode. Reported as [`StateError::Source`] (an internal fault of the store).
#[derive(Debug, thiserror::Error)]
pub enum TrieReadError {
    /// Walking the state trie to an account failed.
    #[error("state trie {root} at account {address}: {source}")]
    Account {
        /// The state root walked.
        root: B256,
        /// The account read.
        address: Address,
        /// The trie's error.
        source: TrieError,
    },
    /// Walking an account's storage trie to a slot failed.
    #[error("storage trie {storage_root} of {address} at slot {slot}: {source}")]
    Slot {
        /// The storage root walked.
        storage_root: B256,
        /// The account.
        address: Address,
        /// The slot read.
        slot: U256,
        /// The trie's error.
        source: TrieError,
    },
    /// A leaf (an account's RLP, a slot's RLP value) does not decode.
    #[error("leaf of account {address}{} does not decode: {source}", slot.map(|s| format!(" slot {s}")).unwrap_or_default())]
    Leaf {
        /// The account.
        address: Address,
        /// The slot, for a storage leaf.
        slot: Option<U256>,
        /// The RLP decoder's error.
        source: alloy_rlp::Error,
    },
}

/// The trie entry (nonce, balance, storage root, code hash) of `address` in the state trie
/// whose root is `root`, its nodes read from `nodes`; `None` if absent.
///
/// # Errors
/// [`StateError::Source`] naming the account when a node is missing or malformed.
pub fn trie_account(
    root: B256,
    address: &Address,
    nodes: &dyn NodeSource,
) -> Result<Option<TrieAccount>, StateError> {
    let key = Nibbles::unpack(keccak256(address));
    let Some(rlp) = Trie::new(root).get(&key, nodes).map_err(|source| {
        StateError::from_source(TrieReadError::Account { root, address: *address, source })
    })?
    else {
        return Ok(None);
    };
    TrieAccount::decode(&mut rlp.as_slice()).map(Some).map_err(|source| {
        StateError::from_source(TrieReadError::Leaf { address: *address, slot: None, source })
    })
}

/// The value of `slot` in the storage trie whose root is `storage_root` (of `address`), its
/// nodes read from `nodes`; zero when absent.
///
/// # Errors
/// [`StateError::Source`] naming the account and slot when a node is missing or malformed.
pub fn trie_slot(
    address: &Address,
    storage_root: B256,
    slot: &U256,
    nodes: &dyn NodeSource,
) -> Result<U256, StateError> {
    if storage_root == EMPTY_ROOT_HASH {
        return Ok(U256::ZERO);
    }
    let key = Nibbles::unpack(keccak256(B256::from(*slot)));
    let Some(rlp) = Trie::new(storage_root).get(&key, nodes).map_err(|source| {
        StateError::from_source(TrieReadError::Slot {
            storage_root,
            address: *address,
            slot: *slot,
            source,
        })
    })?
    else {
        return Ok(U256::ZERO);
    };
    U256::decode(&mut rlp.as_slice()).map_err(|source| {
        StateError::from_source(TrieReadError::Leaf {
            address: *address,
            slot: Some(*slot),
            source,
        })
    })
}

/// An account's trie entry as revm's account info (code not loaded).
pub fn account_info(account: TrieAccount) -> AccountInfo {
    AccountInfo {
        balance: account.balance,
        nonce: account.nonce,
        code_hash: account.code_hash,
        code: None,
        ..Default::default()
    }
}

impl TrieState {
    /// The account's trie entry (nonce, balance, storage root, code hash), `None` if absent.
    ///
    /// # Errors
    /// [`StateError::Source`] naming the account when a node is missing or malformed.
    pub fn trie_account(&self, address: &Address) -> Result<Option<TrieAccount>, StateError> {
        trie_account(self.root, address, &*self.store)
    }

    /// The value of `slot` in the storage trie whose root is `storage_root` (of `address`).
    ///
    /// # Errors
    /// [`StateError::Source`] naming the account and slot when a node is missing or malformed.
    pub fn slot_in(
        &self,
        address: &Address,
        storage_root: B256,
        slot: &U256,
    ) -> Result<U256, StateError> {
        trie_slot(address, storage_root, slot, &*self.store)
    }
}

impl StateSource for TrieState {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        Ok(self.trie_account(address)?.map(account_info))
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        match self.trie_account(address)? {
            Some(a) => self.slot_in(address, a.storage_root, slot),
            None => Ok(U256::ZERO),
        }
    }

    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        StateSource::code(&*self.store, hash)
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        StateSource::block_hash(&*self.store, number)
    }

    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        Ok(self.trie_account(address)?.is_some_and(|a| a.storage_root != EMPTY_ROOT_HASH))
    }
}
