//! Account and storage reads at any stored block, through the trie nodes under its state root.

use crate::RpcError;
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_rlp::Decodable;
use alloy_rpc_types_eth::{EIP1186AccountProofResponse, EIP1186StorageProof};
use alloy_serde::JsonStorageKey;
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_storage::Storage;
use gigagas_trie::Trie;

/// The state under one state root.
#[derive(Debug)]
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

impl StateAt<'_> {
    /// The EIP-1186 proof of `address` and its `slots` (`eth_getProof`): the trie nodes on each
    /// key's path, root first; an absent account or slot gets its proof of absence. A slot
    /// flagged `true` was written with fewer than 64 hex digits and is echoed as a quantity.
    pub(crate) fn proof(
        &self,
        address: &Address,
        slots: &[(B256, bool)],
    ) -> Result<EIP1186AccountProofResponse, RpcError> {
        let trie_err =
            |e: gigagas_trie::TrieError| RpcError::Store(format!("proof of {address}: {e}"));
        let account_proof = Trie::new(self.root)
            .proof(&Nibbles::unpack(keccak256(address)), self.storage)
            .map_err(trie_err)?;
        let account = self.account(address)?.unwrap_or_default();
        let mut storage_trie = Trie::new(account.storage_root);
        let mut storage_proof = Vec::with_capacity(slots.len());
        for (slot, short) in slots {
            let proof = storage_trie
                .proof(&Nibbles::unpack(keccak256(slot)), self.storage)
                .map_err(trie_err)?;
            storage_proof.push(EIP1186StorageProof {
                key: if *short {
                    JsonStorageKey::Number(U256::from_be_bytes(slot.0))
                } else {
                    JsonStorageKey::Hash(*slot)
                },
                value: self.storage_at(address, slot)?,
                proof,
            });
        }
        Ok(EIP1186AccountProofResponse {
            address: *address,
            balance: account.balance,
            code_hash: account.code_hash,
            nonce: account.nonce,
            storage_hash: account.storage_root,
            account_proof,
            storage_proof,
        })
    }
}
