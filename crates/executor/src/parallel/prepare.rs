//! Per-block BAL preparation before execution.

use super::{
    positioned::{PositionedDb, PreValues},
    ParallelBlock,
};
use crate::{ExecutionError, PostStateDiff};
use alloy_primitives::{
    map::{AddressSet, HashMap},
    Address,
};
use gigagas_bal::{
    validate_item_limit, validate_structure, writes::IndexedWrites, BalCodes, BalKeys,
};
use gigagas_primitives::ChainSpec;
use revm::state::Account;
use std::sync::Mutex;

/// A block's BAL made ready for the workers.
#[derive(Debug)]
pub(super) struct Prepared {
    /// The codes the BAL deploys, decoded and hashed.
    pub(super) codes: BalCodes,
    /// Writes grouped by index, for the per-transaction checks.
    pub(super) writes: IndexedWrites,
    /// Every listed account's position, and which listed accounts and slots execution touched.
    pub(super) keys: BalKeys,
    /// The pre-block values of the listed accounts and slots.
    pub(super) values: PreValues,
    /// The post-state the BAL implies (execution's once every check passes), computed ahead of
    /// the commit, which takes it.
    pub(super) post_state: Mutex<Option<PostStateDiff>>,
    /// Before Cancun: accounts the BAL shows destroyed (code set to empty) → the index of the
    /// first destroying write. See [`Prepared::stale_view`].
    pub(super) destroyed: HashMap<Address, u64>,
    /// Before Spurious Dragon an empty account differs from a non-existent one.
    pub(super) empty_is_dead: bool,
    /// Listed accounts that before the block have storage but no code and nonce 0: a creation
    /// at one collides (EIP-7610, [`crate::eip7610`]). Almost always empty.
    pub(super) collisions: AddressSet,
}

pub(super) fn prepare(
    chain: &ChainSpec,
    b: &ParallelBlock<'_>,
) -> Result<Prepared, ExecutionError> {
    let number = b.block.number();
    let n = b.block.transactions.len();
    validate_structure(number, b.bal, n)?;
    if b.block.header.block_access_list_hash.is_some() {
        validate_item_limit(number, b.bal, b.block.header.gas_limit)?;
    }
    let codes = BalCodes::new(number, b.bal)?;
    // Both reuse the code hashes decoding computed; the EIP-7610 targets beside them.
    let ((writes, collisions), keyed) = rayon::join(
        || {
            rayon::join(
                || IndexedWrites::from_alloy(b.bal, &codes, n),
                || {
                    // Every account a transaction touches is listed, so the BAL names every
                    // possible target.
                    crate::eip7610::storage_accounts(b.bal.iter().map(|a| &a.address), b.pre_state)
                },
            )
        },
        || {
            let keys = BalKeys::new(b.bal);
            let values = PreValues::read(b.pre_state, &keys)?;
            let post_state = PostStateDiff::from_bal(b.bal, &codes, &keys, &values);
            Ok::<_, gigagas_state::StateError>((keys, values, post_state))
        },
    );
    let (keys, values, post_state) =
        keyed.map_err(|source| ExecutionError::State { block: number, source })?;
    let collisions =
        collisions.map_err(|source| ExecutionError::State { block: number, source })?;
    let mut destroyed = HashMap::default();
    if !chain.is_cancun(b.block.header.timestamp) {
        for account in b.bal {
            for change in &account.code_changes {
                if change.new_code().is_empty() {
                    // Changes are sorted by index: keep the first destruction.
                    destroyed.entry(account.address).or_insert(change.block_access_index.0);
                }
            }
        }
    }
    Ok(Prepared {
        codes,
        writes,
        keys,
        values,
        post_state: Mutex::new(Some(post_state)),
        destroyed,
        empty_is_dead: chain.is_spurious_dragon(number),
        collisions,
    })
}

impl Prepared {
    /// Block `b`'s pre-state positioned at BAL `index` (`b` is the block this prepared).
    pub(super) fn positioned<'a>(&'a self, b: &ParallelBlock<'a>, index: u64) -> PositionedDb<'a> {
        PositionedDb::new(b.pre_state, &self.values, b.bal, &self.keys, &self.codes, index)
    }

    /// Whether the transaction at BAL `index` saw `account` differently from in-order execution.
    ///
    /// An EIP-7928 BAL cannot say "destroyed". After a pre-Cancun SELFDESTRUCT at index `d`, a
    /// later transaction positioned by the BAL sees the account as existing and empty (not as
    /// non-existent), and any slot that no write at or after `d` covers with its pre-block value
    /// instead of zero. Before Spurious Dragon existence alone changes gas, so any touch counts;
    /// afterwards an empty account is dead anyway, and only such a non-zero storage read differs.
    pub(super) fn stale_view(
        &self,
        bal: &[alloy_eip7928::AccountChanges],
        address: &Address,
        account: &Account,
        index: u64,
    ) -> bool {
        let Some(&destroyed_at) = self.destroyed.get(address) else { return false };
        if destroyed_at >= index {
            return false;
        }
        if !self.empty_is_dead {
            return true;
        }
        let slots = self.keys.position(address).map(|p| &bal[p].storage_changes);
        account.storage.iter().any(|(slot, value)| {
            if value.original_value.is_zero() {
                return false;
            }
            // Index of the last write to this slot before the transaction.
            let last_write = slots
                .and_then(|s| s.binary_search_by(|c| c.slot.cmp(slot)).ok().map(|k| &s[k]))
                .and_then(|s| s.changes.iter().rev().find(|c| c.block_access_index.0 < index))
                .map(|c| c.block_access_index.0);
            last_write.is_none_or(|i| i < destroyed_at)
        })
    }
}
