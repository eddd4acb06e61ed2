//! The result of executing a block, header validation and comparison of two results.

use crate::parallel::PreValues;
use crate::ExecutionError;
use alloy_consensus::{proofs::calculate_receipt_root, ReceiptEnvelope, TxReceipt};
use alloy_eip7928::AccountChanges;
use alloy_primitives::{Address, Bloom, B256, U256};
use gigagas_bal::{BalCodes, BalKeys};
use gigagas_primitives::{BlockInput, ChainSpec};
use gigagas_state::{PreState, StateError};
use revm::{database::states::CacheState, primitives::KECCAK_EMPTY};

/// Final account values after a block, for one account that the block changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountPost {
    /// Balance (wei).
    pub balance: U256,
    /// Nonce.
    pub nonce: u64,
    /// keccak256 of the code (the empty-code hash for none).
    pub code_hash: B256,
    /// Slots whose final value differs from the pre-state, as (slot, value), sorted by slot.
    pub storage: Vec<(U256, U256)>,
}

/// The post-state diff of a block: every account whose balance, nonce, code or storage ends
/// different from the pre-state, sorted by address. A non-existent account counts as balance 0,
/// nonce 0, no code (an EIP-7928 BAL cannot tell "destroyed" from "empty").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostStateDiff(pub Vec<(Address, AccountPost)>);

impl PostStateDiff {
    /// The diff of a sequential run, from the final contents of revm's `State` cache (every
    /// account the block loaded, with its values after the block). Accounts the block deleted
    /// are left out: see [`PostStateDiff::deleted_from_cache`].
    ///
    /// # Errors
    /// [`StateError`] when a backed pre-state's source fails on a pre-block value.
    pub fn from_cache(cache: &CacheState, pre: &PreState) -> Result<Self, StateError> {
        let mut out = Vec::new();
        for (address, account) in &cache.accounts {
            // Loaded and never changed: equal to the pre-state. Deleted accounts are listed in
            // `BlockOutcome::deleted` instead.
            if account.status.is_not_modified()
                || (account.account.is_none() && pre.account(address).is_some())
            {
                continue;
            }
            let (balance, nonce, code_hash) = account
                .account
                .as_ref()
                .map(|a| (a.info.balance, a.info.nonce, a.info.code_hash))
                .unwrap_or((U256::ZERO, 0, KECCAK_EMPTY));
            let cached = account.account.as_ref().map(|a| &a.storage);
            let mut storage = Vec::new();
            for (slot, value) in cached.into_iter().flatten() {
                if *value != pre.slot(address, slot)? {
                    storage.push((*slot, *value));
                }
            }
            // A destroyed account (self-destructed, or removed as empty and possibly re-created)
            // no longer has its pre-block slots (those known in memory; a backed state's stored
            // slots are wiped by `BlockOutcome::wiped`). Not `is_storage_known()`: revm's
            // `State` also calls the storage of an account "known" once an account without
            // nonce and code changes (`InMemoryChange`), although such an account can hold
            // storage (ethereum/tests' synthetic pre-states; 28 accounts on mainnet).
            if account.status.was_destroyed() {
                storage.extend(
                    pre.known_storage(address)
                        .into_iter()
                        .filter(|(slot, value)| {
                            !value.is_zero() && !cached.is_some_and(|s| s.contains_key(slot))
                        })
                        .map(|(slot, _)| (slot, U256::ZERO)),
                );
            }
            storage.sort_unstable_by_key(|(slot, _)| *slot);
            // Before Spurious Dragon an account created empty (CREATE returning no code) exists:
            // it changes the state although its values equal "non-existent".
            let before = pre.account_values(address)?;
            let created = account.account.is_some() && before.is_none();
            if (balance, nonce, code_hash) != before.unwrap_or((U256::ZERO, 0, KECCAK_EMPTY))
                || !storage.is_empty()
                || created
            {
                out.push((*address, AccountPost { balance, nonce, code_hash, storage }));
            }
        }
        out.sort_unstable_by_key(|(address, _)| *address);
        Ok(Self(out))
    }

    /// Accounts of a sequential run whose pre-block storage the block destroyed while the
    /// account exists after it (self-destructed or removed as empty, then re-created): their
    /// stored slots must be wiped before the block's writes apply. Sorted. (A creation over an
    /// existing account with storage is an EIP-7610 collision, never a wipe.)
    pub fn wiped_from_cache(cache: &CacheState, pre: &PreState) -> Vec<Address> {
        let mut out: Vec<Address> = cache
            .accounts
            .iter()
            .filter(|(address, a)| {
                a.account.is_some() && a.status.was_destroyed() && pre.account(address).is_some()
            })
            .map(|(address, _)| *address)
            .collect();
        out.sort_unstable();
        out
    }

    /// The accounts of the pre-state that `cache` (a sequential run's revm `State` cache) no
    /// longer holds: deleted by the block. Sorted.
    pub fn deleted_from_cache(cache: &CacheState, pre: &PreState) -> Vec<Address> {
        let mut out: Vec<Address> = cache
            .accounts
            .iter()
            .filter(|(address, a)| a.account.is_none() && pre.account(address).is_some())
            .map(|(address, _)| *address)
            .collect();
        out.sort_unstable();
        out
    }

    /// The diff that a BAL implies: the last write of every item, over the pre-block values
    /// (`values`, read for the keys `keys` lists). Linear in the BAL's size. `codes` are the same
    /// BAL's decoded code changes, whose hashes are reused (no code is hashed twice).
    pub(crate) fn from_bal(
        bal: &[AccountChanges],
        codes: &BalCodes,
        keys: &BalKeys,
        values: &PreValues,
    ) -> Self {
        let mut out = Vec::new();
        for (k, account) in bal.iter().enumerate() {
            if account.balance_changes.is_empty()
                && account.nonce_changes.is_empty()
                && account.code_changes.is_empty()
                && account.storage_changes.is_empty()
            {
                continue; // only read
            }
            let (pre_balance, pre_nonce, pre_code) = values
                .account(k)
                .map_or((U256::ZERO, 0, KECCAK_EMPTY), |a| (a.balance, a.nonce, a.code_hash));
            let balance = account.balance_changes.last().map_or(pre_balance, |c| c.post_balance);
            let nonce = account.nonce_changes.last().map_or(pre_nonce, |c| c.new_nonce);
            let code_hash = account.code_changes.last().map_or(pre_code, |c| {
                codes
                    .at(k, c.block_access_index.0)
                    .map_or_else(|| alloy_primitives::keccak256(c.new_code()), |(h, _)| h)
            });
            let mut storage = Vec::new();
            // In slot order; read-only slots have no changes.
            for j in keys.slot_range(k) {
                let Some(s) = keys.slot_changes(j).map(|c| &account.storage_changes[c]) else {
                    continue;
                };
                let Some(last) = s.changes.last() else { continue };
                if last.new_value != values.slot(j) {
                    storage.push((s.slot, last.new_value));
                }
            }
            if (balance, nonce, code_hash) != (pre_balance, pre_nonce, pre_code)
                || !storage.is_empty()
            {
                out.push((account.address, AccountPost { balance, nonce, code_hash, storage }));
            }
        }
        Self(out)
    }

    /// The first difference from `other`, as "account A: field: x vs y", or `None` if equal.
    pub fn first_difference(&self, other: &Self) -> Option<String> {
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        loop {
            let (x, y) = match (a.peek(), b.peek()) {
                (None, None) => return None,
                (Some((addr, post)), None) => {
                    return Some(format!("account {addr}: only left changed, to {post:?}"))
                }
                (None, Some((addr, post))) => {
                    return Some(format!("account {addr}: only right changed, to {post:?}"))
                }
                (Some(x), Some(y)) => (*x, *y),
            };
            match x.0.cmp(&y.0) {
                std::cmp::Ordering::Less => {
                    return Some(format!("account {}: only left changed, to {:?}", x.0, x.1))
                }
                std::cmp::Ordering::Greater => {
                    return Some(format!("account {}: only right changed, to {:?}", y.0, y.1))
                }
                std::cmp::Ordering::Equal => {}
            }
            let (address, p, q) = (x.0, &x.1, &y.1);
            if (p.balance, p.nonce, p.code_hash) != (q.balance, q.nonce, q.code_hash) {
                return Some(format!(
                    "account {address}: (balance, nonce, code) {:#x}/{}/{} vs {:#x}/{}/{}",
                    p.balance, p.nonce, p.code_hash, q.balance, q.nonce, q.code_hash
                ));
            }
            if p.storage != q.storage {
                let i = p.storage.iter().zip(&q.storage).position(|(l, r)| l != r);
                let i = i.unwrap_or(p.storage.len().min(q.storage.len()));
                return Some(format!(
                    "account {address}: storage entry {i}: {:?} vs {:?}",
                    p.storage.get(i),
                    q.storage.get(i)
                ));
            }
            a.next();
            b.next();
        }
    }
}

/// A change of an account's existence by one transaction, as revm's `State` commits it
/// (`CacheState::apply_account_state`): something an EIP-7928 BAL cannot express.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AccountExistence {
    /// Created by CREATE: exists afterwards, even empty (possible before EIP-161).
    Created,
    /// Self-destructed, or touched while empty (EIP-161): does not exist afterwards if empty.
    Removed,
}

/// What executing one block produced.
#[derive(Debug, Clone)]
pub struct BlockOutcome {
    /// Block number.
    pub number: u64,
    /// Gas used by the block (gas).
    pub gas_used: u64,
    /// Gas used by each transaction (gas), in block order.
    pub tx_gas_used: Vec<u64>,
    /// Receipts in block order (EIP-658 status form).
    pub receipts: Vec<ReceiptEnvelope>,
    /// The BAL that revm's builder recorded during sequential execution, canonically ordered.
    /// `None` from the parallel executor: its BAL is the given one, verified entry by entry.
    pub bal: Option<Vec<AccountChanges>>,
    /// Changes against the pre-state.
    pub post_state: PostStateDiff,
    /// Accounts that existed before the block and do not after it (EIP-161 removal of touched
    /// empty accounts, SELFDESTRUCT), sorted; [`BlockOutcome::post_state`] leaves them out and
    /// the state-root stage removes them with their storage. An EIP-7928 BAL cannot say
    /// "deleted": the sequential reference reads this from its `State`, the parallel executor
    /// from its workers (accounts a transaction left touched and empty, or self-destructed,
    /// that existed before the block and end it empty).
    pub deleted: Vec<alloy_primitives::Address>,
    /// Accounts whose pre-block storage the block destroyed though they exist after it
    /// (self-destructed and re-created): a store wipes their slots before applying
    /// [`BlockOutcome::post_state`], the state root starts their storage trie empty. From the
    /// sequential reference (and the parallel executor's in-order fallback, the only parallel
    /// path on which this can happen: before Cancun); empty otherwise.
    pub wiped: Vec<alloy_primitives::Address>,
    /// Per transaction, as `(BAL index, account, change)` sorted by index then account: the
    /// existence changes the parallel executor's workers saw. What, with the BAL's writes at
    /// each index, rebuilds the state after every transaction (pre-Byzantium receipts carry its
    /// root). Empty from the sequential reference, whose `State` keeps only the block's net
    /// effect ([`BlockOutcome::deleted`]).
    pub existence: Vec<(u64, alloy_primitives::Address, AccountExistence)>,
    /// EIP-7685 execution-layer requests (Prague and later; empty before), whose hash the
    /// header's `requestsHash` commits to.
    pub requests: alloy_eips::eip7685::Requests,
    /// Set when the parallel executor had to re-execute the block in order, with the reason.
    pub fallback: Option<String>,
}

impl BlockOutcome {
    /// OR of all receipts' blooms (the header's `logsBloom`).
    pub fn logs_bloom(&self) -> Bloom {
        self.receipts.iter().fold(Bloom::ZERO, |acc, r| acc | r.bloom())
    }
}

/// Which header fields a block was checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderCheck {
    /// `receiptsRoot` was rebuilt and matched. `false` before Byzantium, whose receipts carry an
    /// intermediate state root that a partial pre-state cannot give; `gasUsed`, `logsBloom` and
    /// the per-receipt gas and logs are still checked there.
    pub receipts_root: bool,
    /// `blockAccessListHash` was present (Amsterdam) and matched.
    pub bal_hash: bool,
}

/// Checks `outcome` against `block`'s header: `gasUsed`, `logsBloom`, `receiptsRoot`
/// (Byzantium and later), `requestsHash` (Prague and later) and, when the header has one, `blockAccessListHash` against
/// keccak256(rlp(`bal`)), where `bal` is the block's BAL as execution verified it (the built one
/// for the sequential reference, the given one for the parallel executor).
///
/// # Errors
/// [`ExecutionError::Header`] naming the field, with header and execution values.
pub fn validate_header(
    chain: &ChainSpec,
    block: &BlockInput,
    outcome: &BlockOutcome,
    bal: &[AccountChanges],
) -> Result<HeaderCheck, ExecutionError> {
    validate_header_with_buf(chain, block, outcome, bal, &mut Vec::new())
}

/// [`validate_header`], leaving rlp(`bal`) in `bal_rlp` when the header has a
/// `blockAccessListHash` (cleared first; left empty otherwise), so that a caller that stores the
/// BAL does not encode it twice.
///
/// # Errors
/// As [`validate_header`].
pub fn validate_header_with_buf(
    chain: &ChainSpec,
    block: &BlockInput,
    outcome: &BlockOutcome,
    bal: &[AccountChanges],
    bal_rlp: &mut Vec<u8>,
) -> Result<HeaderCheck, ExecutionError> {
    bal_rlp.clear();
    let number = block.number();
    let h = &block.header;
    let err = |field, expected: String, found: String| ExecutionError::Header {
        block: number,
        field,
        expected,
        found,
    };
    if h.gas_used != outcome.gas_used {
        return Err(err("gasUsed", h.gas_used.to_string(), outcome.gas_used.to_string()));
    }
    let bloom = outcome.logs_bloom();
    if h.logs_bloom != bloom {
        return Err(err("logsBloom", h.logs_bloom.to_string(), bloom.to_string()));
    }
    let receipts_root = chain.is_byzantium(number);
    if receipts_root {
        let root = calculate_receipt_root(&outcome.receipts);
        if h.receipts_root != root {
            return Err(err("receiptsRoot", h.receipts_root.to_string(), root.to_string()));
        }
    }
    if let Some(expected) = h.requests_hash {
        let found = outcome.requests.requests_hash();
        if expected != found {
            return Err(err("requestsHash", expected.to_string(), found.to_string()));
        }
    }
    let bal_hash = match h.block_access_list_hash {
        Some(expected) => {
            gigagas_bal::validate_item_limit(number, bal, h.gas_limit)?;
            let found = alloy_eip7928::compute_block_access_list_hash_with_buf(bal, bal_rlp);
            if expected != found {
                return Err(err("blockAccessListHash", expected.to_string(), found.to_string()));
            }
            true
        }
        None => false,
    };
    Ok(HeaderCheck { receipts_root, bal_hash })
}

/// Compares a parallel outcome with the sequential reference of the same block: gas used,
/// receipts (status, cumulative gas, logs), BAL and post-state diff. `parallel_bal` is the BAL
/// the parallel executor was given (and verified); an outcome that carries its own BAL (the
/// in-order fallback) is compared by that one.
///
/// # Errors
/// [`ExecutionError::Divergence`] naming the first difference (tx index, account, slot).
pub fn compare_outcomes(
    reference: &BlockOutcome,
    parallel: &BlockOutcome,
    parallel_bal: &[AccountChanges],
) -> Result<(), ExecutionError> {
    let div = |what, detail| ExecutionError::Divergence { block: reference.number, what, detail };
    if reference.gas_used != parallel.gas_used {
        return Err(div("gas used", format!("{} vs {}", reference.gas_used, parallel.gas_used)));
    }
    if reference.receipts.len() != parallel.receipts.len() {
        return Err(div(
            "receipts",
            format!("{} vs {} receipts", reference.receipts.len(), parallel.receipts.len()),
        ));
    }
    if let Some(i) =
        (0..reference.receipts.len()).find(|&i| reference.receipts[i] != parallel.receipts[i])
    {
        return Err(div(
            "receipts",
            format!("tx {i}: {:?} vs {:?}", reference.receipts[i], parallel.receipts[i]),
        ));
    }
    let reference_bal = reference.bal.as_deref().unwrap_or_default();
    let parallel_bal = parallel.bal.as_deref().unwrap_or(parallel_bal);
    if reference_bal != parallel_bal {
        let diff = alloy_eip7928::BalDiff::between(reference_bal, parallel_bal);
        return Err(div("BAL", format!("{:?}", diff.first_diff)));
    }
    if let Some(d) = reference.post_state.first_difference(&parallel.post_state) {
        return Err(div("post-state", d));
    }
    if reference.requests != parallel.requests {
        return Err(div(
            "requests",
            format!("{:?} vs {:?}", reference.requests, parallel.requests),
        ));
    }
    if reference.deleted != parallel.deleted {
        return Err(div(
            "deleted accounts",
            format!("{:?} vs {:?}", reference.deleted, parallel.deleted),
        ));
    }
    Ok(())
}
