//! BAL validation errors.

use alloy_eip7928::BlockAccessListValidationError;
use alloy_primitives::{Address, B256};
use std::fmt;

/// Where in a block a [`BlockAccessIndex`](alloy_eip7928::BlockAccessIndex) points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Index 0: pre-execution system calls (EIP-4788 beacon root, EIP-2935 history).
    PreExecution,
    /// Index `i + 1`: transaction `i` (zero-based).
    Tx(usize),
    /// Index `n + 1`: post-execution (rewards, withdrawals, EIP-7002/7251 requests).
    PostExecution,
}

impl Phase {
    /// The phase of `index` in a block of `tx_count` transactions.
    pub fn of(index: u64, tx_count: usize) -> Self {
        match index {
            0 => Self::PreExecution,
            i if (i as usize) <= tx_count => Self::Tx(i as usize - 1),
            _ => Self::PostExecution,
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PreExecution => write!(f, "pre-execution (index 0)"),
            Self::Tx(i) => write!(f, "tx {i} (index {})", i + 1),
            Self::PostExecution => write!(f, "post-execution"),
        }
    }
}

/// A BAL that does not match the block it came with.
///
/// Every variant names the block; those about one access name the phase (transaction index),
/// the account and, for storage, the slot, with the expected (BAL) and found (execution) values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BalValidationError {
    /// The BAL breaks EIP-7928's ordering/uniqueness rules or names an index beyond `n + 1`.
    #[error("block {block}: malformed BAL: {source}")]
    Structure {
        /// Block number.
        block: u64,
        /// What alloy-eip7928's validator found.
        source: BlockAccessListValidationError,
    },
    /// A write of execution differs from the BAL's entry at the same index: a changed value
    /// (both set), a write the BAL dropped or moved (`expected: None`) or a phantom write that
    /// execution did not make (`found: None`).
    #[error(
        "block {block}: {phase}: account {address}: {item}: BAL says {}, execution wrote {}",
        expected.as_deref().unwrap_or("no write"),
        found.as_deref().unwrap_or("no write")
    )]
    WriteMismatch {
        /// Block number.
        block: u64,
        /// The transaction (or system phase) whose writes differ.
        phase: Phase,
        /// Account.
        address: Address,
        /// `balance`, `nonce`, `code` or `storage slot 0x..`.
        item: String,
        /// The BAL's post-value at this index, `None` if the BAL has no write here.
        expected: Option<String>,
        /// Execution's post-value, `None` if execution wrote nothing here.
        found: Option<String>,
    },
    /// Execution read an account or slot that the BAL does not list.
    #[error("block {block}: {phase}: read of account {address}{} which the BAL does not list", slot.map(|s| format!(" slot {s:#x}")).unwrap_or_default())]
    NotInBal {
        /// Block number.
        block: u64,
        /// The transaction that made the read.
        phase: Phase,
        /// Account read.
        address: Address,
        /// Slot read, when the account is listed but the slot is not.
        slot: Option<alloy_primitives::U256>,
    },
    /// The BAL rebuilt from execution hashes differently from the given one (e.g. it lists
    /// reads that no transaction made); `diff` describes the first divergence.
    #[error("block {block}: BAL hash {found} of execution differs from the given BAL's {expected}: {diff}")]
    HashMismatch {
        /// Block number.
        block: u64,
        /// keccak256(rlp(given BAL)).
        expected: B256,
        /// keccak256(rlp(BAL rebuilt from execution)).
        found: B256,
        /// First divergence (account, field), from alloy-eip7928's diff.
        diff: String,
    },
    /// A code change of the BAL is not valid bytecode (e.g. a malformed EIP-7702 delegation).
    #[error("block {block}: BAL code change is not valid bytecode: {reason}")]
    InvalidCode {
        /// Block number.
        block: u64,
        /// revm's decode error.
        reason: String,
    },
    /// The BAL has more items (accounts plus storage keys, changed or read) than EIP-7928's
    /// size constraint allows: `items <= gasLimit / 2000` (geth's `ValidateSize`).
    #[error("block {block}: BAL has {items} items (accounts + storage keys), above the limit {limit} (gas limit / 2000)")]
    TooManyItems {
        /// Block number.
        block: u64,
        /// Accounts plus storage keys of the BAL.
        items: u64,
        /// The block's gas limit divided by 2000.
        limit: u64,
    },
    /// The BAL lists an account or slot that no transaction or system call touched.
    #[error("block {block}: BAL lists account {address}{} but execution never touched it", slot.map(|s| format!(" slot {s:#x}")).unwrap_or_default())]
    Untouched {
        /// Block number.
        block: u64,
        /// Account listed.
        address: Address,
        /// Slot listed, when the account itself was touched but this slot was not.
        slot: Option<alloy_primitives::U256>,
    },
}

impl BalValidationError {
    /// [`Self::HashMismatch`] of block `block` when the BAL `built` by execution is not the
    /// `given` one (the first divergence from alloy-eip7928's diff); `None` when they are equal.
    pub fn mismatch(
        block: u64,
        given: &[alloy_eip7928::AccountChanges],
        built: &[alloy_eip7928::AccountChanges],
    ) -> Option<Self> {
        (given != built).then(|| {
            let diff = alloy_eip7928::BalDiff::between(given, built).first_diff;
            Self::HashMismatch {
                block,
                expected: alloy_eip7928::compute_block_access_list_hash(given),
                found: alloy_eip7928::compute_block_access_list_hash(built),
                diff: diff.map_or_else(|| "no account differs".into(), |d| format!("{d:?}")),
            }
        })
    }
}
