//! The state root of a block computed from its EIP-7928 BAL, beside its execution.
//!
//! A BAL carries every account's and slot's value after the block (the last change of each), so
//! the block's state-trie updates — and its state root — are known before the block is
//! executed. [`execute_block`](crate::execute_block) with a given BAL and trie nodes runs
//! [`BesideRoot::compute`] on the workers beside execution (`GivenBal::beside`, the trie's
//! storage tries on them too) once the BAL's keys are read, while the parallel executor runs on
//! the engine's pool; after
//! execution the updates derived here are compared with the executed ones
//! ([`account_updates`](crate::account_updates)). Equal, the root computed beside is the
//! block's (the state-root stage then only waits for it); different — the one case known is an
//! existing empty account removed by EIP-161 after a zero-value touch, which a BAL cannot record
//! — it is dropped and the state-root stage computes the root from the executed updates as
//! without a BAL. The verdict is always the executed state's.
//!
//! Flow: BAL + pre-block values → [`bal_updates`] → `update_state_root` on the parent's trie
//! nodes → [`BesideRoot`] → compared after execution → `state_root_stage`.

use crate::priors::PreStatePriors;
use alloy_primitives::{Address, Bytes, B256, U256};
use gigagas_bal::BlockAccessList;
use gigagas_state::{PreState, StateError};
use gigagas_trie::{
    update_state_root_on, AccountUpdate, NodeSource, NodeSourceError, PreservedTrie,
    StateRootError, StateRootUpdate, TrieStart,
};
use revm::primitives::KECCAK_EMPTY;
use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

/// The state root computed from a BAL beside execution: the updates it was computed for, the
/// trie's answer and how long it took.
#[derive(Debug)]
pub(crate) struct BesideRoot {
    /// The block's state-trie updates as the BAL states them ([`bal_updates`]).
    pub(crate) updates: Vec<AccountUpdate>,
    /// The root over the parent's trie nodes, or why it could not be computed.
    pub(crate) root: Result<StateRootUpdate, StateRootError>,
    /// Wall time of the derivation and the trie update.
    pub(crate) time: Duration,
    /// Whether the trie update started on the kept trie.
    pub(crate) trie: TrieStart,
}

impl BesideRoot {
    /// Derives the updates from `bal` and the pre-block values in `pre` and applies them to the
    /// trie under `parent_root`, resolving nodes from `nodes` — on the trie `preserved` kept
    /// when it is anchored at `parent_root` (and kept there at the new root afterwards).
    /// `None` when a pre-block value cannot be read (the execution meets the same fault and
    /// reports it).
    pub(crate) fn compute(
        parent_root: B256,
        bal: &BlockAccessList,
        pre: &PreState,
        nodes: &(dyn NodeSource + Sync),
        preserved: Option<&PreservedTrie>,
    ) -> Option<Self> {
        let start = Instant::now();
        let updates = bal_updates(bal, pre).ok()?;
        let derived = start.elapsed();
        let nodes = CountedReads { nodes, reads: AtomicUsize::new(0) };
        let priors = PreStatePriors(pre);
        let (root, trie) = update_state_root_on(preserved, parent_root, &updates, &priors, &nodes);
        let time = start.elapsed();
        tracing::debug!(
            target: "executor::state_root",
            updates_ms = derived.as_secs_f64() * 1e3,
            trie_ms = (time - derived).as_secs_f64() * 1e3,
            accounts = updates.len(),
            slots = updates.iter().map(|u| u.storage.len()).sum::<usize>(),
            reads = nodes.reads.load(Ordering::Relaxed),
            nodes = root.as_ref().map_or(0, |r| r.nodes.len()),
            preserved = trie == TrieStart::Preserved,
            "state root from the BAL"
        );
        Some(Self { updates, root, time, trie })
    }
}

/// A node source that counts the nodes read through it (the state root's debug line).
struct CountedReads<'a> {
    nodes: &'a (dyn NodeSource + Sync),
    reads: AtomicUsize,
}

impl NodeSource for CountedReads<'_> {
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.nodes.node(hash)
    }

    fn is_branch(&self, hash: &B256) -> bool {
        self.nodes.is_branch(hash)
    }
}

/// The block's state-trie updates as its BAL states them, in the shape of
/// [`account_updates`](crate::account_updates): every account whose balance, nonce, code hash
/// or storage ends different from the pre-block state (a missing account counts as balance 0,
/// nonce 0, no code), with the slots whose last value differs from the pre-block value, sorted
/// by slot; an account that existed and ends empty is deleted (EIP-161); sorted by address.
///
/// # Errors
/// [`StateError`] when a backed pre-state's source fails on a pre-block value.
pub(crate) fn bal_updates(
    bal: &BlockAccessList,
    pre: &PreState,
) -> Result<Vec<AccountUpdate>, StateError> {
    let mut updates = Vec::new();
    for account in bal {
        if !account.has_changes() {
            continue;
        }
        let address: Address = account.address;
        let before = pre.account_values(&address)?;
        let (balance0, nonce0, code0) = before.unwrap_or((U256::ZERO, 0, KECCAK_EMPTY));
        let balance = account.balance_post_state().unwrap_or(balance0);
        let nonce = account.nonce_post_state().unwrap_or(nonce0);
        let code_hash = account.code_hash_post_state().unwrap_or(code0);
        let mut storage = Vec::new();
        for (slot, value) in account.storage_post_states() {
            if value != pre.slot(&address, &slot)? {
                storage.push((slot, value));
            }
        }
        storage.sort_unstable_by_key(|(slot, _)| *slot);
        let empty = balance.is_zero() && nonce == 0 && code_hash == KECCAK_EMPTY;
        if empty && storage.is_empty() {
            if before.is_some() {
                updates.push(AccountUpdate {
                    address,
                    info: None,
                    wiped: true,
                    storage: Vec::new(),
                });
            }
            continue;
        }
        let changed = (balance, nonce, code_hash) != (balance0, nonce0, code0);
        if changed || !storage.is_empty() {
            updates.push(AccountUpdate {
                address,
                info: Some((nonce, balance, code_hash)),
                wiped: false,
                storage,
            });
        }
    }
    updates.sort_by_key(|u| u.address);
    Ok(updates)
}

#[cfg(test)]
mod tests {
    use super::bal_updates;
    use crate::account_updates;
    use gigagas_executor::sequential::execute_sequential;
    use gigagas_primitives::ChainSpec;
    use gigagas_state::mainnet;

    /// On the 52 mainnet blocks, the updates a block's BAL states are the ones its execution
    /// produced on every block from EIP-161 (Spurious Dragon) on where no account was deleted
    /// or its storage wiped (what a BAL cannot state).
    #[test]
    fn bal_updates_equal_the_executed_updates_on_mainnet_blocks() {
        let dir = mainnet::default_dir();
        assert!(
            dir.is_dir(),
            "../shared/data/mainnet is missing ({}): this test needs the shared data beside the project",
            dir.display()
        );
        let chain = ChainSpec::mainnet();
        let blocks = mainnet::load(&dir, None, &|| {}).expect("load mainnet data");
        let (mut equal, mut others) = (0, 0);
        for b in &blocks {
            let senders = b.block.par_recover(&chain).expect("recover senders");
            let outcome = execute_sequential(&chain, &b.block, &senders, &b.pre_state).unwrap();
            let bal = outcome.bal.as_ref().expect("the sequential reference builds a BAL");
            let from_bal = bal_updates(bal, &b.pre_state).unwrap();
            let executed = account_updates(&outcome);
            let eip161 = chain.is_spurious_dragon(b.block.number());
            if eip161 && outcome.deleted.is_empty() && outcome.wiped.is_empty() {
                assert_eq!(from_bal, executed, "block {}", b.block.number());
                equal += 1;
            } else {
                // Before EIP-161 a touched empty account is created, which a BAL cannot state;
                // pre-Cancun SELFDESTRUCTs destroy what the BAL states. The engine drops the root
                // computed beside whenever the updates differ.
                others += 1;
            }
        }
        assert!(equal >= 35, "only {equal} of {} blocks compared whole", blocks.len());
        eprintln!(
            "{equal} blocks equal, {others} before EIP-161 or with deleted or wiped accounts"
        );
    }
}
