//! The state under one stored state root, read through the trie nodes (the store keeps every
//! node, so every stored block's state can be read, as in an archive node).

use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_rlp::Decodable;
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_state::{StateError, StateSource};
use gigagas_storage::Storage;
use gigagas_trie::Trie;
use revm::state::{AccountInfo, Bytecode};
use std::sync::Arc;

/// The state whose root is `root`, over the trie nodes and codes of `store`; block hashes
/// are the store's canonical ones (correct for every block up to the one whose root this is,
/// when that block is canonical).
#[derive(Debug)]
pub struct TrieState {
    /// The store holding the nodes.
    pub store: Arc<Storage>,
    /// The state root.
    pub root: B256,
}

fn source_err(what: String) -> StateError {
    StateError::Source(what)
}

impl TrieState {
    /// The account's trie entry (nonce, balance, storage root, code hash), `None` if absent.
    ///
    /// # Errors
    /// [`StateError::Source`] naming the account when a node is missing or malformed.
    pub fn trie_account(&self, address: &Address) -> Result<Option<TrieAccount>, StateError> {
        let key = Nibbles::unpack(keccak256(address));
        let Some(rlp) = Trie::new(self.root)
            .get(&key, &*self.store)
            .map_err(|e| source_err(format!("state trie {} at {address}: {e}", self.root)))?
        else {
            return Ok(None);
        };
        TrieAccount::decode(&mut rlp.as_slice())
            .map(Some)
            .map_err(|e| source_err(format!("account {address}: {e}")))
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
        if storage_root == EMPTY_ROOT_HASH {
            return Ok(U256::ZERO);
        }
        let key = Nibbles::unpack(keccak256(B256::from(*slot)));
        let Some(rlp) = Trie::new(storage_root)
            .get(&key, &*self.store)
            .map_err(|e| source_err(format!("storage trie of {address} at slot {slot}: {e}")))?
        else {
            return Ok(U256::ZERO);
        };
        U256::decode(&mut rlp.as_slice())
            .map_err(|e| source_err(format!("slot {slot} of {address}: {e}")))
    }
}

impl StateSource for TrieState {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        Ok(self.trie_account(address)?.map(|a| AccountInfo {
            balance: a.balance,
            nonce: a.nonce,
            code_hash: a.code_hash,
            code: None,
            ..Default::default()
        }))
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
}
