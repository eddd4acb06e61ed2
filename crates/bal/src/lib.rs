//! EIP-7928 Block-Level Access Lists: the pieces gigagas adds around revm's BAL builder.
//!
//! - [`writes`]: a BAL's writes grouped by [`BlockAccessIndex`], so that the worker that executed
//!   transaction `i` can check its own writes against the BAL's entries at index `i + 1`.
//! - [`BalKeys`]: which listed accounts and slots execution touched (catches phantom reads).
//! - [`BalCodes`]: the codes a BAL deploys, decoded and hashed once.
//! - [`json`]: the execution-spec-tests JSON shape (`--dump-bal`, `--bal`).
//! - [`BalValidationError`]: every way a BAL can be wrong, naming block, index, account and slot.
//!
//! Indices follow EIP-7928: 0 = pre-execution system calls, `i + 1` = transaction `i`,
//! `n + 1` = post-execution (withdrawals, rewards, requests).

mod codes;
mod error;
pub mod json;
mod keys;
pub mod writes;

pub use alloy_eip7928::{compute_block_access_list_hash, BlockAccessIndex, BlockAccessList};
pub use codes::BalCodes;
pub use error::{BalValidationError, Phase};
pub use keys::{keys_by_first_change, storage_keys, BalKey, BalKeys};
pub use revm::state::bal::Bal;

/// Gas charged per BAL item (an account or a storage key) by EIP-7928's size constraint.
pub const BAL_ITEM_COST: u64 = 2000;

/// EIP-7928's size constraint: the BAL's accounts plus storage keys (changed or read, each
/// once) at most `gas_limit / 2000`, as geth 1.17.10's `BlockAccessList.ValidateSize`.
///
/// # Errors
/// [`BalValidationError::TooManyItems`] naming the block, the count and the limit.
pub fn validate_item_limit(
    block: u64,
    bal: &[alloy_eip7928::AccountChanges],
    gas_limit: u64,
) -> Result<(), BalValidationError> {
    let items = alloy_eip7928::total_bal_items(bal);
    let limit = gas_limit / BAL_ITEM_COST;
    if items > limit {
        return Err(BalValidationError::TooManyItems { block, items, limit });
    }
    Ok(())
}

/// Structural validation of a decoded BAL (EIP-7928 "ordering, uniqueness and determinism":
/// sorted unique accounts and slots, strictly increasing indices, no index above `n + 1`).
///
/// # Errors
/// [`BalValidationError::Structure`] naming the block and the offending account or slot.
pub fn validate_structure(
    block: u64,
    bal: &[alloy_eip7928::AccountChanges],
    tx_count: usize,
) -> Result<(), BalValidationError> {
    alloy_eip7928::validate_block_access_list(bal, tx_count)
        .map_err(|source| BalValidationError::Structure { block, source })
}
