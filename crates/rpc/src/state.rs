//! Account and storage reads at any canonical block: the head's through the in-memory
//! canonical chain over the store's flat state (one read per key), older blocks' through the
//! trie nodes under their state root; proofs always through the trie.

use crate::{RpcContext, RpcError};
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_rpc_types_eth::{EIP1186AccountProofResponse, EIP1186StorageProof};
use alloy_serde::JsonStorageKey;
use alloy_trie::Nibbles;
use gigagas_state::StateSource;
use gigagas_storage_api::{BlockNumReader, ProviderError, TrieState};
use gigagas_trie::Trie;
use revm::state::AccountInfo;
use std::sync::Arc;

/// The state after one canonical block.
#[derive(Debug)]
pub(crate) struct StateAt {
    /// Its reads ([`gigagas_chain_state::BlockchainProvider::state_at`]).
    source: Arc<dyn StateSource>,
    /// The trie under its state root, for proofs.
    trie: TrieState,
}

/// The trie under canonical block `number`'s state root `root`, for the readers that walk it
/// (proofs, simulations and traces on an older block's state).
///
/// # Errors
/// [`RpcError::Store`]: [`ProviderError::StateAtBlockPruned`] for a block older than the
/// pruned trie holds, or the store's failure to say.
pub(crate) fn trie_state(ctx: &RpcContext, number: u64, root: B256) -> Result<TrieState, RpcError> {
    state_held(ctx, number)?;
    Ok(TrieState { store: ctx.provider.clone(), root })
}

/// Whether the trie still holds canonical block `number`'s state.
///
/// # Errors
/// [`RpcError::Store`]: [`ProviderError::StateAtBlockPruned`] when it was pruned, or the
/// store's failure to say.
pub(crate) fn state_held(ctx: &RpcContext, number: u64) -> Result<(), RpcError> {
    let earliest = ctx.provider.earliest_state_block()?;
    if number < earliest {
        return Err(ProviderError::StateAtBlockPruned { number, earliest }.into());
    }
    Ok(())
}

fn store_err(e: gigagas_state::StateError) -> RpcError {
    RpcError::State(e)
}

impl StateAt {
    /// The state after canonical block `number`, whose state root is `root`.
    ///
    /// # Errors
    /// [`RpcError::Store`] when the store's head cannot be read.
    pub(crate) fn new(ctx: &RpcContext, number: u64, root: B256) -> Result<Self, RpcError> {
        // `state_at` has refused a pruned block already: the trie is held.
        let source = ctx.provider.state_at(number, root)?;
        Ok(Self { source, trie: TrieState { store: ctx.provider.clone(), root } })
    }

    /// The account (nonce, balance, code hash), `None` if absent.
    pub(crate) fn account(&self, address: &Address) -> Result<Option<AccountInfo>, RpcError> {
        self.source.account(address).map_err(store_err)
    }

    /// The value of `slot` of `address` (zero when absent).
    pub(crate) fn storage_at(&self, address: &Address, slot: &B256) -> Result<U256, RpcError> {
        self.source.storage(address, &U256::from_be_bytes(slot.0)).map_err(store_err)
    }

    /// The account's code (empty for none).
    pub(crate) fn code(&self, address: &Address) -> Result<Bytes, RpcError> {
        let Some(account) = self.account(address)? else { return Ok(Bytes::new()) };
        let code = self.source.code(&account.code_hash).map_err(store_err)?;
        Ok(code.map(|c| c.original_bytes()).unwrap_or_default())
    }
}

impl StateAt {
    /// The EIP-1186 proof of `address` and its `slots` (`eth_getProof`): the trie nodes on each
    /// key's path, root first; an absent account or slot gets its proof of absence. A slot
    /// flagged `true` was written with fewer than 64 hex digits and is echoed as a quantity.
    pub(crate) fn proof(
        &self,
        address: &Address,
        slots: &[(B256, bool)],
    ) -> Result<EIP1186AccountProofResponse, RpcError> {
        let trie_err = |source: gigagas_trie::TrieError| RpcError::Proof {
            address: *address,
            source: Box::new(source),
        };
        let account_proof = Trie::new(self.trie.root)
            .proof(&Nibbles::unpack(keccak256(address)), &*self.trie.store)
            .map_err(trie_err)?;
        let account = self.trie.trie_account(address).map_err(store_err)?.unwrap_or_default();
        let mut storage_trie = Trie::new(account.storage_root);
        let mut storage_proof = Vec::with_capacity(slots.len());
        for (slot, short) in slots {
            let proof = storage_trie
                .proof(&Nibbles::unpack(keccak256(slot)), &*self.trie.store)
                .map_err(trie_err)?;
            storage_proof.push(EIP1186StorageProof {
                key: if *short {
                    JsonStorageKey::Number(U256::from_be_bytes(slot.0))
                } else {
                    JsonStorageKey::Hash(*slot)
                },
                value: self
                    .trie
                    .slot_in(address, account.storage_root, &U256::from_be_bytes(slot.0))
                    .map_err(store_err)?,
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
