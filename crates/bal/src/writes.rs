//! A BAL's writes grouped by block access index.

use crate::{BalCodes, BalValidationError, Phase};
use alloy_eip7928::AccountChanges;
use alloy_primitives::{keccak256, Address, B256, U256};
use revm::state::{
    bal::{AccountBal, Bal},
    Account, AccountInfo,
};
use std::{cmp::Ordering, fmt};

/// The state item a write changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Item {
    /// Account balance (wei).
    Balance,
    /// Account nonce.
    Nonce,
    /// Account code (compared by code hash).
    Code,
    /// A storage slot.
    Storage(U256),
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Balance => f.write_str("balance"),
            Self::Nonce => f.write_str("nonce"),
            Self::Code => f.write_str("code"),
            Self::Storage(slot) => write!(f, "storage slot {slot:#x}"),
        }
    }
}

/// The post-value of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// Balance (wei) or storage value.
    Word(U256),
    /// Nonce.
    Nonce(u64),
    /// keccak256 of the new code.
    CodeHash(B256),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Word(v) => write!(f, "{v:#x}"),
            Self::Nonce(n) => write!(f, "{n}"),
            Self::CodeHash(h) => write!(f, "code {h}"),
        }
    }
}

/// One write: account, item, post-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    /// Account written.
    pub address: Address,
    /// Field or slot written.
    pub item: Item,
    /// Value after the write.
    pub value: Value,
}

impl Write {
    fn key(&self) -> (Address, Item) {
        (self.address, self.item)
    }
}

/// All writes of a BAL, grouped by block access index (`0..=n+1`), each group sorted by
/// (account, item). Stored flat: group `i` is `writes[starts[i]..starts[i + 1]]`.
#[derive(Debug, Clone, Default)]
pub struct IndexedWrites {
    writes: Vec<Write>,
    starts: Vec<u32>,
}

impl IndexedWrites {
    /// Groups the writes of `bal`, a BAL for a block of `tx_count` transactions. Indices above
    /// `n + 1` must have been rejected by [`crate::validate_structure`] first; they are ignored.
    ///
    /// `codes` are the same BAL's decoded code changes: their hashes are reused rather than
    /// hashing every deployed code again.
    pub fn from_alloy(bal: &[AccountChanges], codes: &BalCodes, tx_count: usize) -> Self {
        let groups = tx_count + 2;
        // Counting sort by index: one pass to size the groups, one to place the writes.
        let mut starts = vec![0u32; groups + 1];
        let mut count = |index: u64| {
            if index < groups as u64 {
                starts[index as usize + 1] += 1;
            }
        };
        for account in bal {
            account.balance_changes.iter().for_each(|c| count(c.block_access_index.0));
            account.nonce_changes.iter().for_each(|c| count(c.block_access_index.0));
            account.code_changes.iter().for_each(|c| count(c.block_access_index.0));
            for slot in &account.storage_changes {
                slot.changes.iter().for_each(|c| count(c.block_access_index.0));
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let total = starts[groups] as usize;
        let mut next: Vec<u32> = starts[..groups].to_vec();
        let placeholder =
            Write { address: Address::ZERO, item: Item::Balance, value: Value::Nonce(0) };
        let mut writes = vec![placeholder; total];
        let mut push = |index: u64, write: Write| {
            if let Some(slot) = next.get_mut(index as usize) {
                writes[*slot as usize] = write;
                *slot += 1;
            }
        };
        for (k, account) in bal.iter().enumerate() {
            let address = account.address;
            for c in &account.balance_changes {
                push(
                    c.block_access_index.0,
                    Write { address, item: Item::Balance, value: Value::Word(c.post_balance) },
                );
            }
            for c in &account.nonce_changes {
                push(
                    c.block_access_index.0,
                    Write { address, item: Item::Nonce, value: Value::Nonce(c.new_nonce) },
                );
            }
            for c in &account.code_changes {
                let hash = codes
                    .at(k, c.block_access_index.0)
                    .map_or_else(|| keccak256(c.new_code()), |(h, _)| h);
                push(
                    c.block_access_index.0,
                    Write { address, item: Item::Code, value: Value::CodeHash(hash) },
                );
            }
            for slot in &account.storage_changes {
                for c in &slot.changes {
                    push(
                        c.block_access_index.0,
                        Write {
                            address,
                            item: Item::Storage(slot.slot),
                            value: Value::Word(c.new_value),
                        },
                    );
                }
            }
        }
        // Accounts come sorted by address and each account's items in `Item` order, so every
        // group is already sorted (for a BAL that passed `validate_structure`).
        for w in starts.windows(2) {
            let group = &mut writes[w[0] as usize..w[1] as usize];
            if !group.is_sorted_by_key(Write::key) {
                group.sort_unstable_by_key(Write::key);
            }
        }
        Self { writes, starts }
    }

    /// The writes at `index`, sorted by (account, item); empty past `n + 1`.
    pub fn at(&self, index: u64) -> &[Write] {
        let i = index as usize;
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.writes[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// What one account's BAL entry writes at one [`BlockAccessIndex`](crate::BlockAccessIndex):
/// the post-values of that index (transaction `index - 1`), `None` where the index leaves the
/// field unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritesAt<'a> {
    /// New balance (wei).
    pub balance: Option<U256>,
    /// New nonce.
    pub nonce: Option<u64>,
    /// New code (empty for none).
    pub code: Option<&'a alloy_primitives::Bytes>,
    /// Slots written, with their values.
    pub slots: Vec<(U256, U256)>,
}

impl WritesAt<'_> {
    /// Whether the index writes nothing for the account.
    pub fn is_empty(&self) -> bool {
        self.balance.is_none()
            && self.nonce.is_none()
            && self.code.is_none()
            && self.slots.is_empty()
    }
}

/// The writes of `account` at BAL index `index` (EIP-7928: 0 pre-execution, `i + 1`
/// transaction `i`, `n + 1` post-execution).
pub fn writes_at(account: &alloy_eip7928::AccountChanges, index: u64) -> WritesAt<'_> {
    let at = |i: alloy_eip7928::BlockAccessIndex| i.0 == index;
    WritesAt {
        balance: account
            .balance_changes
            .iter()
            .find(|c| at(c.block_access_index))
            .map(|c| c.post_balance),
        nonce: account.nonce_changes.iter().find(|c| at(c.block_access_index)).map(|c| c.new_nonce),
        code: account
            .code_changes
            .iter()
            .find(|c| at(c.block_access_index))
            .map(alloy_eip7928::CodeChange::new_code),
        slots: account
            .storage_changes
            .iter()
            .filter_map(|s| {
                s.changes.iter().find(|c| at(c.block_access_index)).map(|c| (s.slot, c.new_value))
            })
            .collect(),
    }
}

/// The writes recorded in a BAL fragment (all at one index), sorted by (account, item).
pub fn fragment_writes(fragment: &Bal) -> Vec<Write> {
    let mut out = Vec::new();
    for (&address, account) in &fragment.accounts {
        account_writes(address, account, &mut out);
    }
    out.sort_unstable_by_key(Write::key);
    out
}

/// Appends the writes that `account`'s BAL entry records (all at one index) to `out`, unsorted.
pub fn account_writes(address: Address, account: &AccountBal, out: &mut Vec<Write>) {
    let info = &account.account_info;
    let word = |item, v: &U256| Write { address, item, value: Value::Word(*v) };
    out.extend(info.balance.writes.iter().map(|(_, v)| word(Item::Balance, v)));
    out.extend(info.nonce.writes.iter().map(|(_, v)| Write {
        address,
        item: Item::Nonce,
        value: Value::Nonce(*v),
    }));
    out.extend(info.code.writes.iter().map(|(_, (h, _))| Write {
        address,
        item: Item::Code,
        value: Value::CodeHash(*h),
    }));
    for (slot, writes) in &account.storage.storage {
        out.extend(writes.writes.iter().map(|(_, v)| word(Item::Storage(*slot), v)));
    }
}

/// Appends the writes that one transaction's changes to `account` amount to, unsorted: exactly
/// what revm's BAL builder records for them at the transaction's index
/// (`AccountBal::update` on an empty entry, then [`account_writes`]), without building the
/// builder's maps. A field or slot is written when its value after the transaction differs from
/// its value before; a locally self-destructed account is written as empty with all its touched
/// slots zeroed.
pub fn state_writes(address: Address, account: &Account, out: &mut Vec<Write>) {
    let original = account.original_info();
    let destroyed = account.is_selfdestructed_locally();
    let empty;
    let info = if destroyed {
        empty = AccountInfo::default();
        &empty
    } else {
        &account.info
    };
    if info.balance != original.balance {
        out.push(Write { address, item: Item::Balance, value: Value::Word(info.balance) });
    }
    if info.nonce != original.nonce {
        out.push(Write { address, item: Item::Nonce, value: Value::Nonce(info.nonce) });
    }
    if info.code_hash != original.code_hash {
        out.push(Write { address, item: Item::Code, value: Value::CodeHash(info.code_hash) });
    }
    for (slot, value) in &account.storage {
        let present = if destroyed { U256::ZERO } else { value.present_value };
        if present != value.original_value {
            out.push(Write { address, item: Item::Storage(*slot), value: Value::Word(present) });
        }
    }
}

/// Sorts writes by (account, item), the order [`check_writes`] expects.
pub fn sort_writes(writes: &mut [Write]) {
    writes.sort_unstable_by_key(Write::key);
}

/// Compares the writes the BAL declares at one index (`expected`) with those execution made
/// (`found`), both sorted by (account, item).
///
/// # Errors
/// The first difference as [`BalValidationError::WriteMismatch`].
pub fn check_writes(
    block: u64,
    phase: Phase,
    expected: &[Write],
    found: &[Write],
) -> Result<(), BalValidationError> {
    let mismatch = |address, item: Item, e: Option<Value>, f: Option<Value>| {
        BalValidationError::WriteMismatch {
            block,
            phase,
            address,
            item: item.to_string(),
            expected: e.map(|v| v.to_string()),
            found: f.map(|v| v.to_string()),
        }
    };
    let (mut e, mut f) = (expected.iter().peekable(), found.iter().peekable());
    loop {
        match (e.peek(), f.peek()) {
            (None, None) => return Ok(()),
            (Some(x), None) => return Err(mismatch(x.address, x.item, Some(x.value), None)),
            (None, Some(y)) => return Err(mismatch(y.address, y.item, None, Some(y.value))),
            (Some(x), Some(y)) => match x.key().cmp(&y.key()) {
                Ordering::Less => return Err(mismatch(x.address, x.item, Some(x.value), None)),
                Ordering::Greater => return Err(mismatch(y.address, y.item, None, Some(y.value))),
                Ordering::Equal if x.value != y.value => {
                    return Err(mismatch(x.address, x.item, Some(x.value), Some(y.value)))
                }
                Ordering::Equal => {
                    e.next();
                    f.next();
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(a: u8, item: Item, v: u64) -> Write {
        Write { address: Address::with_last_byte(a), item, value: Value::Word(U256::from(v)) }
    }

    #[test]
    fn check_writes_names_first_difference() {
        let base = vec![w(1, Item::Balance, 5), w(2, Item::Storage(U256::from(7)), 9)];
        assert!(check_writes(1, Phase::Tx(0), &base, &base).is_ok());

        let mut changed = base.clone();
        changed[1].value = Value::Word(U256::from(10));
        let err = check_writes(1, Phase::Tx(3), &base, &changed).unwrap_err().to_string();
        assert!(
            err.contains("tx 3") && err.contains("slot 0x7") && err.contains("BAL says 0x9"),
            "{err}"
        );

        let err = check_writes(1, Phase::Tx(0), &base[..1], &base).unwrap_err();
        assert!(matches!(err, BalValidationError::WriteMismatch { expected: None, .. }), "{err}");
        let err = check_writes(1, Phase::Tx(0), &base, &base[..1]).unwrap_err();
        assert!(matches!(err, BalValidationError::WriteMismatch { found: None, .. }), "{err}");
    }

    /// `state_writes` must record exactly what revm's builder records for one transaction.
    #[test]
    fn state_writes_equal_builder_writes() {
        use revm::state::{Bytecode, EvmStorageSlot, TransactionId};
        let builder = |address: Address, account: &Account| {
            let mut entry = AccountBal::default();
            entry.update(crate::BlockAccessIndex::new(1), account);
            let mut out = Vec::new();
            account_writes(address, &entry, &mut out);
            sort_writes(&mut out);
            out
        };
        let direct = |address: Address, account: &Account| {
            let mut out = Vec::new();
            state_writes(address, account, &mut out);
            sort_writes(&mut out);
            out
        };
        let address = Address::with_last_byte(9);
        let mut account = Account::default();
        *account.original_info_mut() =
            AccountInfo { balance: U256::from(100), nonce: 3, ..AccountInfo::default() };
        let code = Bytecode::new_raw(vec![0x60, 0x00].into());
        account.info = AccountInfo {
            balance: U256::from(40),
            nonce: 3,
            code_hash: code.hash_slow(),
            code: Some(code),
            account_id: None,
        };
        for (slot, original, present) in [(1u64, 5u64, 5u64), (2, 0, 7), (3, 8, 0), (4, 6, 2)] {
            account.storage.insert(
                U256::from(slot),
                EvmStorageSlot::new_changed(
                    U256::from(original),
                    U256::from(present),
                    TransactionId::ZERO,
                ),
            );
        }
        let found = direct(address, &account);
        assert_eq!(found, builder(address, &account));
        // Balance, code and three changed slots; the nonce and slot 1 are unchanged.
        assert_eq!(found.len(), 5, "{found:?}");

        account.mark_selfdestructed_locally();
        let found = direct(address, &account);
        assert_eq!(found, builder(address, &account));
        // Balance to zero and the three slots with non-zero pre-transaction values to zero.
        assert_eq!(found.len(), 5, "{found:?}");
    }
}
