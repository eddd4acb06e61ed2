//! The database a worker executes on: the block's pre-state as it stands at one BAL index.
//!
//! A read at index `k` (transaction `k - 1`) sees, for every field and slot, the BAL's last
//! write at an index below `k`, or else the pre-block value: the state after the first `k - 1`
//! transactions, without executing them. This is what revm's `State` does with a BAL attached
//! (`BalWrites::get`), read directly off the alloy-eip7928 lists (sorted by index, slots sorted
//! by key) and off [`PreValues`] (the listed keys' pre-block values, read once per block) instead
//! of a converted copy of the BAL and a per-worker cache of the pre-state.
//! Reads of an account or slot the BAL does not list fail: EIP-7928 requires the BAL to list
//! every account and slot execution accesses.

use crate::error::PositionedError;
use alloy_eip7928::AccountChanges;
use alloy_primitives::{Address, B256, U256};
use gigagas_bal::{BalCodes, BalKeys};
use gigagas_state::{PreState, StateError};
use revm::{
    bytecode::Bytecode,
    database_interface::{Database, DatabaseRef},
    state::{AccountId, AccountInfo},
};
use std::sync::OnceLock;

/// The last entry of `changes` (sorted by index) whose index is below `index`.
fn last_before<T>(changes: &[T], index: u64, at: impl Fn(&T) -> u64) -> Option<&T> {
    let p = changes.partition_point(|c| at(c) < index);
    p.checked_sub(1).map(|p| &changes[p])
}

/// The pre-block values of every account and slot a BAL lists, read once when the block is
/// prepared (with a backed pre-state: from the cache its BAL-hinted prefetch filled), so that
/// positioned reads and the implied post-state index arrays instead of looking them up.
#[derive(Debug, Default)]
pub(crate) struct PreValues {
    /// By BAL position; `None` for an account that does not exist before the block.
    accounts: Vec<Option<AccountInfo>>,
    /// By [`BalKeys`] flat slot index.
    slots: Vec<U256>,
}

impl PreValues {
    /// Reads the values of the accounts and slots `keys` lists from `pre`.
    ///
    /// # Errors
    /// [`StateError`] when a backed pre-state's source fails.
    pub(crate) fn read(pre: &PreState, keys: &BalKeys) -> Result<Self, StateError> {
        let addresses = keys.addresses();
        let mut values = Self {
            accounts: Vec::with_capacity(addresses.len()),
            slots: Vec::with_capacity(keys.slots().len()),
        };
        for (a, address) in addresses.iter().enumerate() {
            values.accounts.push(pre.basic_ref(*address)?);
            pre.slots_into(address, &keys.slots()[keys.slot_range(a)], &mut values.slots)?;
        }
        Ok(values)
    }

    /// The account at BAL position `position` before the block.
    pub(crate) fn account(&self, position: usize) -> Option<&AccountInfo> {
        self.accounts.get(position)?.as_ref()
    }

    /// Flat slot `j` before the block.
    pub(crate) fn slot(&self, j: usize) -> U256 {
        self.slots.get(j).copied().unwrap_or_default()
    }
}

/// A block's pre-state positioned at BAL index [`PositionedDb::index`]. Cheap to build (five
/// references and an index); a worker keeps one per block and moves its index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PositionedDb<'a> {
    pre: &'a PreState,
    values: &'a PreValues,
    bal: &'a [AccountChanges],
    keys: &'a BalKeys,
    codes: &'a BalCodes,
    /// The block access index reads are positioned at (`i + 1` for transaction `i`).
    pub(crate) index: u64,
    /// Where the first read outside the BAL is kept ([`PositionedDb::latching`]).
    miss: Option<&'a OnceLock<PositionedError>>,
}

impl<'a> PositionedDb<'a> {
    /// `pre`'s state after the writes of `bal` below `index`; `keys`, `codes` and `values`
    /// (read from `pre`) index the same `bal`.
    pub(crate) fn new(
        pre: &'a PreState,
        values: &'a PreValues,
        bal: &'a [AccountChanges],
        keys: &'a BalKeys,
        codes: &'a BalCodes,
        index: u64,
    ) -> Self {
        Self { pre, values, bal, keys, codes, index, miss: None }
    }

    /// This view, keeping its first read outside the BAL in `miss`: alloy-evm's system calls
    /// turn a database error into a message, so the commit takes the typed error from here.
    pub(crate) fn latching(self, miss: &'a OnceLock<PositionedError>) -> Self {
        Self { miss: Some(miss), ..self }
    }

    fn missed(&self, err: PositionedError) -> PositionedError {
        if let Some(miss) = self.miss {
            let _ = miss.set(err.clone());
        }
        err
    }

    fn position(&self, address: &Address) -> Result<usize, PositionedError> {
        self.keys
            .position(address)
            .ok_or_else(|| self.missed(PositionedError::NotInBal { address: *address, slot: None }))
    }

    fn slot_at(
        &self,
        position: usize,
        address: Address,
        slot: U256,
    ) -> Result<U256, PositionedError> {
        let Some(j) = self.keys.slot_index(position, &slot) else {
            return Err(self.missed(PositionedError::NotInBal { address, slot: Some(slot) }));
        };
        if let Some(k) = self.keys.slot_changes(j) {
            let changes = &self.bal[position].storage_changes[k].changes;
            if let Some(c) = last_before(changes, self.index, |c| c.block_access_index.0) {
                return Ok(c.new_value);
            }
        }
        Ok(self.values.slot(j))
    }
}

impl DatabaseRef for PositionedDb<'_> {
    type Error = PositionedError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        let position = self.position(&address)?;
        let account = &self.bal[position];
        let index = self.index;
        let balance = last_before(&account.balance_changes, index, |c| c.block_access_index.0);
        let nonce = last_before(&account.nonce_changes, index, |c| c.block_access_index.0);
        let code = self.codes.before(position, index);
        let pre = self.values.account(position);
        // As revm's `BalState::basic_by_account_id`: an account absent before the block that no
        // earlier index wrote stays absent; otherwise the BAL's values go over the pre-state's.
        if pre.is_none() && balance.is_none() && nonce.is_none() && code.is_none() {
            return Ok(None);
        }
        let mut info = pre.cloned().unwrap_or_default();
        if let Some(c) = balance {
            info.balance = c.post_balance;
        }
        if let Some(c) = nonce {
            info.nonce = c.new_nonce;
        }
        if let Some((hash, code)) = code {
            info.code_hash = hash;
            info.code = Some(code.clone());
        }
        // The journal hands the id back with every storage read of the account.
        info.account_id = AccountId::new(position);
        Ok(Some(info))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        if let Some(code) = self.codes.by_hash(&code_hash) {
            return Ok(code.clone());
        }
        Ok(self.pre.code_by_hash_ref(code_hash)?)
    }

    fn storage_ref(&self, address: Address, slot: U256) -> Result<U256, Self::Error> {
        self.slot_at(self.position(&address)?, address, slot)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        Ok(self.pre.block_hash_ref(number)?)
    }
}

impl Database for PositionedDb<'_> {
    type Error = PositionedError;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        self.basic_ref(address)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        self.code_by_hash_ref(code_hash)
    }

    fn storage(&mut self, address: Address, slot: U256) -> Result<U256, Self::Error> {
        self.storage_ref(address, slot)
    }

    fn storage_by_account_id(
        &mut self,
        address: Address,
        account_id: AccountId,
        slot: U256,
    ) -> Result<U256, Self::Error> {
        // The id is the position `basic` gave the account; checked, it saves the hash lookup.
        let position = account_id.get();
        if self.bal.get(position).is_some_and(|a| a.address == address) {
            return self.slot_at(position, address, slot);
        }
        self.storage_ref(address, slot)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, Self::Error> {
        self.block_hash_ref(number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::{BalanceChange, BlockAccessIndex, SlotChanges, StorageChange};
    use gigagas_bal::Phase;
    use std::{collections::BTreeMap, sync::Arc};

    const A: Address = Address::repeat_byte(0xa);
    const B: Address = Address::repeat_byte(0xb);

    fn idx(i: u64) -> BlockAccessIndex {
        BlockAccessIndex(i)
    }

    /// A (exists, balance 100, slot 1 = 5) written at indices 2 and 4; B (absent before the
    /// block) credited at index 3; slot 2 of A only read.
    fn setup() -> (PreState, Vec<AccountChanges>) {
        let mut pre = PreState::new(Arc::default(), Arc::new(BTreeMap::new()));
        let storage = [(U256::from(1), U256::from(5))].into_iter().collect();
        pre.insert_account(A, U256::from(100), 1, revm::primitives::KECCAK_EMPTY, storage).unwrap();
        let a = AccountChanges {
            address: A,
            balance_changes: vec![
                BalanceChange::new(idx(2), U256::from(90)),
                BalanceChange::new(idx(4), U256::from(80)),
            ],
            storage_changes: vec![SlotChanges::new(
                U256::from(1),
                vec![StorageChange::new(idx(2), U256::from(6))],
            )],
            storage_reads: vec![U256::from(2)],
            ..AccountChanges::new(A)
        };
        let b = AccountChanges {
            balance_changes: vec![BalanceChange::new(idx(3), U256::from(7))],
            ..AccountChanges::new(B)
        };
        (pre, vec![a, b])
    }

    #[test]
    fn reads_see_the_last_write_below_the_index() {
        let (pre, bal) = setup();
        let (keys, codes) = (BalKeys::new(&bal), BalCodes::new(1, &bal).unwrap());
        let values = PreValues::read(&pre, &keys).unwrap();
        let at = |index| PositionedDb::new(&pre, &values, &bal, &keys, &codes, index);
        let balance = |index| at(index).basic_ref(A).unwrap().unwrap().balance;
        // Index 2 (tx 1) sees the pre-state; its own write shows from index 3 on.
        assert_eq!(balance(1), U256::from(100));
        assert_eq!(balance(2), U256::from(100));
        assert_eq!(balance(3), U256::from(90));
        assert_eq!(balance(5), U256::from(80));
        assert_eq!(at(3).basic_ref(A).unwrap().unwrap().nonce, 1, "unwritten field from pre");
        assert_eq!(at(2).storage_ref(A, U256::from(1)).unwrap(), U256::from(5));
        assert_eq!(at(3).storage_ref(A, U256::from(1)).unwrap(), U256::from(6));
        assert_eq!(at(3).storage_ref(A, U256::from(2)).unwrap(), U256::ZERO);
        // Absent before the block: absent until its first write, then it exists.
        assert_eq!(at(3).basic_ref(B).unwrap(), None);
        assert_eq!(at(4).basic_ref(B).unwrap().unwrap().balance, U256::from(7));
        // The account id is the BAL position, and storage reads by id agree.
        let id = at(4).basic_ref(B).unwrap().unwrap().account_id.unwrap();
        assert_eq!(id.get(), 1);
        let a_id = at(3).basic_ref(A).unwrap().unwrap().account_id.unwrap();
        assert_eq!(at(3).storage_by_account_id(A, a_id, U256::from(1)).unwrap(), U256::from(6));
    }

    #[test]
    fn reads_outside_the_bal_name_account_and_slot() {
        let (pre, bal) = setup();
        let (keys, codes) = (BalKeys::new(&bal), BalCodes::new(1, &bal).unwrap());
        let values = PreValues::read(&pre, &keys).unwrap();
        let db = PositionedDb::new(&pre, &values, &bal, &keys, &codes, 1);
        let c = Address::repeat_byte(0xc);
        assert_eq!(db.basic_ref(c), Err(PositionedError::NotInBal { address: c, slot: None }));
        let slot = Some(U256::from(3));
        assert_eq!(
            db.storage_ref(A, U256::from(3)),
            Err(PositionedError::NotInBal { address: A, slot })
        );
        let err = PositionedError::NotInBal { address: A, slot }
            .into_execution_error(7, Phase::Tx(2))
            .to_string();
        assert!(err.contains("block 7") && err.contains("tx 2") && err.contains("0x3"), "{err}");
    }
}
