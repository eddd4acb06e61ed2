//! In-memory pre-block state.

use alloy_primitives::{map::HashMap, Address, B256, U256};
use revm::{
    database_interface::DBErrorMarker,
    state::{AccountInfo, Bytecode},
    DatabaseRef,
};
use std::{collections::BTreeMap, sync::Arc};

/// A read from [`PreState`] that the state cannot answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// `BLOCKHASH` asked for an ancestor whose hash the state does not hold.
    #[error("block hash of block {0} is not in the pre-state")]
    MissingBlockHash(u64),
    /// An account names a code hash whose bytecode the state does not hold.
    #[error("bytecode {0} is not in the pre-state")]
    MissingCode(B256),
}

impl DBErrorMarker for StateError {}

/// One account of the pre-state: balance, nonce, code and the storage slots the block touches.
#[derive(Debug, Clone, Default)]
struct PreAccount {
    info: AccountInfo,
    storage: HashMap<U256, U256>,
}

/// The state a block executes against, held in memory.
///
/// Holds only what a block reads or writes (an account absent here does not exist; a slot absent
/// from an account's storage is zero). Read-only once built, so one `PreState` is shared by all
/// worker threads through `&PreState` (revm's [`DatabaseRef`]).
#[derive(Debug, Clone, Default)]
pub struct PreState {
    accounts: HashMap<Address, PreAccount>,
    contracts: Arc<HashMap<B256, Bytecode>>,
    block_hashes: Arc<BTreeMap<u64, B256>>,
}

impl PreState {
    /// An empty state that resolves code through `contracts` (code hash → bytecode) and
    /// `BLOCKHASH` through `block_hashes` (number → hash). Both maps are shared, not copied.
    pub fn new(
        contracts: Arc<HashMap<B256, Bytecode>>,
        block_hashes: Arc<BTreeMap<u64, B256>>,
    ) -> Self {
        Self { accounts: HashMap::default(), contracts, block_hashes }
    }

    /// Inserts an account. `code_hash` must be in the shared contracts map unless it is the
    /// empty-code hash.
    ///
    /// # Errors
    /// [`StateError::MissingCode`] when the code hash is unknown.
    pub fn insert_account(
        &mut self,
        address: Address,
        balance: U256,
        nonce: u64,
        code_hash: B256,
        storage: HashMap<U256, U256>,
    ) -> Result<(), StateError> {
        let info = if code_hash == revm::primitives::KECCAK_EMPTY || code_hash == B256::ZERO {
            AccountInfo { balance, nonce, ..Default::default() }
        } else {
            let code = self
                .contracts
                .get(&code_hash)
                .cloned()
                .ok_or(StateError::MissingCode(code_hash))?;
            AccountInfo::new(balance, nonce, code_hash, code)
        };
        self.accounts.insert(address, PreAccount { info, storage });
        Ok(())
    }

    /// Number of accounts held.
    pub fn account_count(&self) -> usize {
        self.accounts.len()
    }

    /// Account info (balance, nonce, code hash, code) of `address`, `None` if it does not exist.
    pub fn account(&self, address: &Address) -> Option<&AccountInfo> {
        self.accounts.get(address).map(|a| &a.info)
    }

    /// The storage held for `address` (slot → value; an absent slot is zero), `None` for an
    /// unknown account. One account lookup for many slot lookups.
    pub fn storage(&self, address: &Address) -> Option<&HashMap<U256, U256>> {
        self.accounts.get(address).map(|a| &a.storage)
    }

    /// Value of a storage slot (zero when absent).
    pub fn slot(&self, address: &Address, slot: &U256) -> U256 {
        self.accounts.get(address).and_then(|a| a.storage.get(slot).copied()).unwrap_or_default()
    }
}

impl DatabaseRef for PreState {
    type Error = StateError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        Ok(self.accounts.get(&address).map(|a| a.info.clone()))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        if code_hash == revm::primitives::KECCAK_EMPTY {
            return Ok(Bytecode::default());
        }
        self.contracts.get(&code_hash).cloned().ok_or(StateError::MissingCode(code_hash))
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        Ok(self.slot(&address, &index))
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        self.block_hashes.get(&number).copied().ok_or(StateError::MissingBlockHash(number))
    }
}
