//! The state of a block that is executed but not yet committed, over the store.

use alloy_primitives::{
    map::{HashMap, HashSet},
    Address, Bytes, B256, U256,
};
use gigagas_state::{StateError, StateSource};
use gigagas_storage::Storage;
use revm::state::{AccountInfo, Bytecode};
use std::sync::Arc;

/// What one block changed, as the next block must see it before the store does.
#[derive(Debug, Default)]
pub(crate) struct PendingDiff {
    pub(crate) number: u64,
    pub(crate) hash: B256,
    /// New (nonce, balance, code hash); `None` for deleted accounts.
    pub(crate) accounts: HashMap<Address, Option<(u64, U256, B256)>>,
    pub(crate) storage: HashMap<(Address, U256), U256>,
    /// Accounts whose stored slots no longer count (deleted, or storage wiped).
    pub(crate) cleared: HashSet<Address>,
    pub(crate) codes: HashMap<B256, Bytes>,
}

/// The store, with the changes of the block before (executed, not yet committed) on top.
///
/// Safe while that block's commit lands concurrently: a key the block changed is answered
/// from the diff whatever the store holds, and every other key is the same before and after
/// the commit (RocksDB applies the block's write batch atomically).
#[derive(Debug)]
pub(crate) struct Overlay {
    pub(crate) store: Arc<Storage>,
    pub(crate) diff: Option<Arc<PendingDiff>>,
}

fn err(e: gigagas_storage::StorageError) -> StateError {
    StateError::Source(e.to_string())
}

impl StateSource for Overlay {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        if let Some(d) = &self.diff {
            if let Some(v) = d.accounts.get(address) {
                return Ok(v.map(|(nonce, balance, code_hash)| AccountInfo {
                    nonce,
                    balance,
                    code_hash,
                    code: None,
                    ..Default::default()
                }));
            }
        }
        StateSource::account(&*self.store, address)
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        if let Some(d) = &self.diff {
            if let Some(v) = d.storage.get(&(*address, *slot)) {
                return Ok(*v);
            }
            if d.cleared.contains(address) {
                return Ok(U256::ZERO);
            }
        }
        self.store.storage(address, slot).map_err(err)
    }

    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        if let Some(code) = self.diff.as_ref().and_then(|d| d.codes.get(hash)) {
            return Ok(Some(Bytecode::new_raw(code.clone())));
        }
        StateSource::code(&*self.store, hash)
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        match &self.diff {
            Some(d) if d.number == number => Ok(Some(d.hash)),
            _ => StateSource::block_hash(&*self.store, number),
        }
    }
}
