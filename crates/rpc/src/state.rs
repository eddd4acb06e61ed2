//! Account and storage reads at any stored block, through the trie nodes under its state root.

use crate::RpcError;
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_rlp::Decodable;
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_storage::Storage;
use gigagas_trie::Trie;

/// The state under one state root.
pub(crate) struct StateAt<'a> {
    pub(crate) storage: &'a Storage,
    pub(crate) root: B256,
}

impl StateAt<'_> {
    /// The account's trie entry (nonce, balance, storage root, code hash), `None` if absent.
    pub(crate) fn account(&self, address: &Address) -> Result<Option<TrieAccount>, RpcError> {
        let key = Nibbles::unpack(keccak256(address));
        let Some(rlp) = Trie::new(self.root)
            .get(&key, self.storage)
            .map_err(|e| RpcError::Store(format!("state trie at {}: {e}", self.root)))?
        else {
            return Ok(None);
        };
        TrieAccount::decode(&mut rlp.as_slice())
            .map(Some)
            .map_err(|e| RpcError::Store(format!("account {address}: {e}")))
    }

    /// The value of `slot` of `address` (zero when absent).
    pub(crate) fn storage_at(&self, address: &Address, slot: &B256) -> Result<U256, RpcError> {
        let Some(account) = self.account(address)? else { return Ok(U256::ZERO) };
        if account.storage_root == EMPTY_ROOT_HASH {
            return Ok(U256::ZERO);
        }
        let key = Nibbles::unpack(keccak256(slot));
        let Some(rlp) = Trie::new(account.storage_root)
            .get(&key, self.storage)
            .map_err(|e| RpcError::Store(format!("storage trie of {address}: {e}")))?
        else {
            return Ok(U256::ZERO);
        };
        U256::decode(&mut rlp.as_slice())
            .map_err(|e| RpcError::Store(format!("slot {slot} of {address}: {e}")))
    }

    /// The account's code (empty for none).
    pub(crate) fn code(&self, address: &Address) -> Result<Bytes, RpcError> {
        let Some(account) = self.account(address)? else { return Ok(Bytes::new()) };
        Ok(self.storage.bytecode(&account.code_hash)?.map(Bytes::from).unwrap_or_default())
    }
}
