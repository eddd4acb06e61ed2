//! The state of a block that is executed but not yet committed, over the store.

use alloy_primitives::{
    map::{HashMap, HashSet},
    Address, Bytes, B256, U256,
};
use gigagas_state::{StateError, StateSource};
use revm::state::{AccountInfo, Bytecode};
use std::sync::Arc;

/// What one block changed, as the next block must see it before the store does.
#[derive(Debug, Default)]
pub struct PendingDiff {
    pub(crate) number: u64,
    pub(crate) hash: B256,
    /// New (nonce, balance, code hash); `None` for deleted accounts.
    pub(crate) accounts: HashMap<Address, Option<(u64, U256, B256)>>,
    pub(crate) storage: HashMap<(Address, U256), U256>,
    /// The accounts `storage` gives a non-zero slot (what [`Overlay::has_storage`] asks).
    pub(crate) with_storage: HashSet<Address>,
    /// Accounts whose stored slots no longer count (deleted, or storage wiped).
    pub(crate) cleared: HashSet<Address>,
    pub(crate) codes: HashMap<B256, Bytes>,
}

impl PendingDiff {
    /// The code with keccak256 `hash`, when the block deployed it.
    pub fn code(&self, hash: &B256) -> Option<Bytes> {
        self.codes.get(hash).cloned()
    }
}

/// A base state (the store's flat state, or the trie under an older block's state root), with
/// the changes of the blocks after it (executed, not yet committed) on top, newest first.
///
/// Safe while the oldest of those blocks' commit lands concurrently: a key the block changed is
/// answered from its diff whatever the store holds, and every other key is the same before and
/// after the commit (RocksDB applies the block's write batch atomically).
#[derive(Debug)]
pub struct Overlay {
    /// The base state.
    pub base: Arc<dyn StateSource>,
    /// The changes on top, newest first.
    pub diffs: Vec<Arc<PendingDiff>>,
}

impl StateSource for Overlay {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        for d in &self.diffs {
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
        self.base.account(address)
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        for d in &self.diffs {
            if let Some(v) = d.storage.get(&(*address, *slot)) {
                return Ok(*v);
            }
            if d.cleared.contains(address) {
                return Ok(U256::ZERO);
            }
        }
        self.base.storage(address, slot)
    }

    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        for d in &self.diffs {
            if let Some(code) = d.codes.get(hash) {
                return Ok(Some(Bytecode::new_raw(code.clone())));
            }
        }
        self.base.code(hash)
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        match self.diffs.iter().find(|d| d.number == number) {
            Some(d) => Ok(Some(d.hash)),
            None => self.base.block_hash(number),
        }
    }

    /// A diff's non-zero slot of the account answers yes; a diff that cleared the account
    /// answers no unless a newer diff wrote one; a zero a diff wrote may leave other slots
    /// below, so only the base can say the account has none.
    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        for d in &self.diffs {
            if d.with_storage.contains(address) {
                return Ok(true);
            }
            if d.cleared.contains(address) {
                return Ok(false);
            }
        }
        self.base.has_storage(address)
    }
}
