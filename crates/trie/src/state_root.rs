//! The state root after a block: a post-state diff applied to the account trie and to the
//! changed accounts' storage tries.
//!
//! Keys are keccak256(address) in the account trie and keccak256(slot) (the slot as a 32-byte
//! big-endian word) in a storage trie; values are the RLP of `[nonce, balance, storageRoot,
//! codeHash]` and the RLP of the non-zero slot value; a zero value or a deleted account removes
//! the key (Yellow Paper §4.1, appendix D). The storage tries of different accounts are
//! independent and are updated in parallel (rayon), a storage trie with many changed slots
//! ([`PARALLEL_STORAGE_SLOTS`]) its subtrees in parallel too; the account trie after them, its
//! 16 subtrees below the root branch read, updated and hashed in parallel ([`Trie::get_many`],
//! [`Trie::apply_many`], [`Trie::root_with_nodes`]).

use crate::mpt::{EncodedNode, NodeSource, Trie, TrieError, TrieOp};
use alloy_primitives::{keccak256, map::HashMap, Address, B256, U256};
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use rayon::prelude::*;

/// Changed slots from which one account's storage trie is itself updated in parallel, its 16
/// subtrees below the root branch at once ([`Trie::apply_many`]): a block whose writes gather
/// in one contract (a token's balances) would otherwise wait for that trie on one thread.
pub const PARALLEL_STORAGE_SLOTS: usize = 64;

/// One account's change in a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountUpdate {
    /// The account.
    pub address: Address,
    /// Its (nonce, balance in wei, code hash) after the block; `None` when the block deleted it
    /// (EIP-161 clearing or SELFDESTRUCT).
    pub info: Option<(u64, U256, B256)>,
    /// Whether the block destroyed the account's storage before writing `storage` (a
    /// self-destructed account re-created in the same block).
    pub wiped: bool,
    /// Slots whose value changed, as (slot, value after the block); zero deletes the slot.
    pub storage: Vec<(U256, U256)>,
}

/// What the keys of an update held before it, as far as the caller knows (the executor's
/// pre-state, read for the block): a changed key's leaf is then recognised by its hash in the
/// parent's node instead of read ([`Trie::apply_many`]). Cold, a block's changed leaves are
/// most of the trie's disk reads. Knowing nothing (`()`) costs only those reads; a wrong
/// value never changes a root (the hash does not match, and the node is read).
pub trait PriorValues: Sync {
    /// `address`'s (nonce, balance in wei, code hash) before the update; `None` when not known
    /// or when the account did not exist.
    fn account(&self, address: &Address) -> Option<(u64, U256, B256)>;
    /// The value of `slot` of `address` before the update; `None` when not known.
    fn slot(&self, address: &Address, slot: &U256) -> Option<U256>;
}

/// Nothing known: every leaf is read.
impl PriorValues for () {
    fn account(&self, _: &Address) -> Option<(u64, U256, B256)> {
        None
    }

    fn slot(&self, _: &Address, _: &U256) -> Option<U256> {
        None
    }
}

/// The account leaf values `address` may hold before an update, given what `priors` know: its
/// (nonce, balance, code hash) with each of `storage_roots`. Empty when the account is not
/// known.
pub fn account_leaf_candidates(
    priors: &dyn PriorValues,
    address: &Address,
    storage_roots: &[B256],
) -> Vec<Vec<u8>> {
    let Some((nonce, balance, code_hash)) = priors.account(address) else { return Vec::new() };
    storage_roots
        .iter()
        .map(|root| alloy_rlp::encode(TrieAccount::new(nonce, balance, *root, code_hash)))
        .collect()
}

/// The storage leaf value of a slot known to hold `value` before an update (`None`: not known,
/// or zero — no leaf).
pub fn slot_leaf(value: Option<U256>) -> Option<Vec<u8>> {
    value.filter(|v| !v.is_zero()).map(alloy_rlp::encode)
}

/// Why a state root could not be computed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StateRootError {
    /// The account trie lacks a node.
    #[error("account trie, account {address}: {source}")]
    Account {
        /// The account being updated.
        address: Address,
        /// The trie's error.
        source: TrieError,
    },
    /// An account's storage trie lacks a node.
    #[error("storage trie of {address}: {source}")]
    Storage {
        /// The account whose storage trie failed.
        address: Address,
        /// The trie's error.
        source: TrieError,
    },
    /// An account leaf does not decode as `[nonce, balance, storageRoot, codeHash]`.
    #[error("account {address}: leaf does not decode: {reason}")]
    BadAccount {
        /// The account.
        address: Address,
        /// The decoder's message.
        reason: String,
    },
}

/// The outcome of [`update_state_root`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRootUpdate {
    /// The new state root.
    pub root: B256,
    /// Every account's storage root after the block, for the accounts updated (sorted by
    /// address).
    pub storage_roots: Vec<(Address, B256)>,
    /// The nodes of the updated paths, as (keccak256, RLP), account trie and storage tries
    /// together: what a node store adds so that the next block resolves from it.
    pub nodes: Vec<EncodedNode>,
}

/// Applies `updates` to the state whose root is `parent_root`, resolving nodes from `src`, and
/// returns the new root: [`StateTrie::update`] on a trie that starts as `parent_root`. The
/// account trie's nodes on every updated account's path must be in `src` (and, for deletions,
/// the remaining siblings), as must the storage trie nodes on the path of every changed slot.
///
/// # Errors
/// [`StateRootError`] naming the account (and the missing node's path and hash).
pub fn update_state_root<S: NodeSource + Sync>(
    parent_root: B256,
    updates: &[AccountUpdate],
    src: &S,
) -> Result<StateRootUpdate, StateRootError> {
    StateTrie::new(parent_root).update(updates, src)
}

/// A state's account trie and its accounts' storage tries, with the nodes an update resolved
/// kept decoded and their hashes cached: kept from one block to the next (reth's preserved
/// sparse trie, [`crate::PreservedTrie`]), the next update reads from its [`NodeSource`] only
/// the nodes this one did not reach, and hashes again only the paths it changes.
#[derive(Debug, Default)]
pub struct StateTrie {
    pub(crate) accounts: Trie,
    /// Storage tries by account, with when each was last changed: (the update, how many
    /// slots it changed).
    pub(crate) storage: HashMap<Address, (Trie, (u64, usize))>,
    /// Updates applied so far.
    pub(crate) updates: u64,
    /// How deep the tries stay decoded after an update (deeper nodes are left as their
    /// hashes as they are hashed).
    prune_depth: PruneDepth,
}

/// Nibbles below a trie's root down to which a kept [`StateTrie`] holds its nodes decoded:
/// the account trie's and each storage trie's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneDepth {
    /// The account trie's depth.
    pub accounts: usize,
    /// Each storage trie's depth.
    pub storage: usize,
}

impl PruneDepth {
    /// No pruning: every node an update resolved or created stays decoded.
    pub const NONE: Self = Self { accounts: usize::MAX, storage: usize::MAX };
}

/// [`PruneDepth::NONE`].
impl Default for PruneDepth {
    fn default() -> Self {
        Self::NONE
    }
}

impl StateTrie {
    /// The state whose root is `root`, nothing resolved yet.
    pub fn new(root: B256) -> Self {
        Self {
            accounts: Trie::new(root),
            storage: HashMap::default(),
            updates: 0,
            prune_depth: PruneDepth::NONE,
        }
    }

    /// The same state, its tries left decoded down to `depth` by each update
    /// ([`Trie::root_with_nodes_pruned`]).
    pub fn with_prune_depth(mut self, depth: PruneDepth) -> Self {
        self.prune_depth = depth;
        self
    }

    /// Updates applied to this trie.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// The state root as last computed (`None` while an update has not finished).
    pub fn root(&self) -> Option<B256> {
        self.accounts.cached_root()
    }

    /// Nodes decoded in memory: the account trie's, and the storage tries' (how many tries).
    pub fn decoded_nodes(&self) -> (usize, usize, usize) {
        let storage = self.storage.values().map(|(t, _)| t.decoded_nodes()).sum();
        (self.accounts.decoded_nodes(), storage, self.storage.len())
    }

    /// Keeps every trie's nodes down to `depth` ([`Trie::prune`], a walk over every decoded
    /// node) and the storage tries of the `max_storage_tries` accounts changed most recently
    /// ([`StateTrie::retain_storage_tries`]).
    pub fn prune(&mut self, depth: PruneDepth, max_storage_tries: usize) {
        self.accounts.prune(depth.accounts);
        self.retain_storage_tries(max_storage_tries);
        for (trie, _) in self.storage.values_mut() {
            trie.prune(depth.storage);
        }
    }

    /// Keeps the storage tries of the `max` accounts changed most recently — among those of
    /// one update, the ones it changed most slots of —, dropping the others (an update that
    /// meets them resolves them again).
    pub fn retain_storage_tries(&mut self, max: usize) {
        if self.storage.len() <= max {
            return;
        }
        let mut ranked: Vec<((u64, usize), Address)> =
            self.storage.iter().map(|(address, (_, used))| (*used, *address)).collect();
        ranked.sort_unstable_by(|a, b| b.cmp(a));
        for (_, address) in &ranked[max..] {
            self.storage.remove(address);
        }
    }

    /// The leaves `address`'s account may be known to hold before an update
    /// ([`account_leaf_candidates`]): with the storage root of its kept storage trie, or the
    /// empty root.
    pub(crate) fn account_known(
        &self,
        address: &Address,
        priors: &dyn PriorValues,
    ) -> Vec<Vec<u8>> {
        let kept = self.storage.get(address).and_then(|(t, _)| t.cached_root());
        let roots: &[B256] = match kept {
            Some(kept) if kept != EMPTY_ROOT_HASH => &[kept, EMPTY_ROOT_HASH],
            _ => &[EMPTY_ROOT_HASH],
        };
        account_leaf_candidates(priors, address, roots)
    }

    /// Applies `updates` (one block's, or a megablock's merged ones) to this state, resolving
    /// the nodes not yet in memory from `src`, and returns the new root with the nodes it
    /// created. The storage tries of different accounts are updated in parallel (rayon), a
    /// storage trie with [`PARALLEL_STORAGE_SLOTS`] changed slots or more its subtrees in
    /// parallel too; the account trie after them, its 16 subtrees below the root branch read,
    /// updated and hashed in parallel ([`Trie::get_many`], [`Trie::apply_many`],
    /// [`Trie::root_with_nodes`]). A storage trie kept from an earlier update is used when its
    /// root is the account's storage root, else the account's is started from its root.
    /// Hashed nodes deeper than the trie's prune depth ([`StateTrie::with_prune_depth`]) are
    /// left as their hashes.
    ///
    /// # Errors
    /// [`StateRootError`] naming the account (and the missing node's path and hash). The
    /// trie is then partly updated: drop it.
    pub fn update<S: NodeSource + Sync>(
        &mut self,
        updates: &[AccountUpdate],
        src: &S,
    ) -> Result<StateRootUpdate, StateRootError> {
        self.update_with(updates, &(), src)
    }

    /// [`StateTrie::update`], the leaves of the keys whose values before the update `priors`
    /// know recognised by hash instead of read: an account's with the storage root of its
    /// kept storage trie or the empty root, a slot's with its value.
    ///
    /// # Errors
    /// As [`StateTrie::update`].
    pub fn update_with<S: NodeSource + Sync>(
        &mut self,
        updates: &[AccountUpdate],
        priors: &dyn PriorValues,
        src: &S,
    ) -> Result<StateRootUpdate, StateRootError> {
        self.updates += 1;
        let start = std::time::Instant::now();
        // The accounts' current leaves (for their storage roots), the account trie's subtrees
        // searched in parallel.
        let keys: Vec<Nibbles> =
            updates.iter().map(|u| Nibbles::unpack(keccak256(u.address))).collect();
        let known: Vec<Vec<Vec<u8>>> =
            updates.iter().map(|u| self.account_known(&u.address, priors)).collect();
        let leaves = self.accounts.get_many(&keys, &known, src).map_err(|source| {
            let address = failing_account(updates, &keys, &source);
            StateRootError::Account { address, source }
        })?;
        let mut old_roots = Vec::with_capacity(updates.len());
        for (u, leaf) in updates.iter().zip(leaves) {
            let account = leaf
                .map(|rlp| {
                    alloy_rlp::decode_exact::<TrieAccount>(&rlp).map_err(|e| {
                        StateRootError::BadAccount { address: u.address, reason: e.to_string() }
                    })
                })
                .transpose()?;
            old_roots.push(match account {
                Some(a) if !u.wiped => a.storage_root,
                _ => EMPTY_ROOT_HASH,
            });
        }
        let leaves_read = start.elapsed();
        // The storage tries to change, taken out of the kept ones when they hold the
        // account's storage root; deleted and wiped accounts' kept tries dropped.
        let mut jobs: Vec<(usize, Trie)> = Vec::new();
        for (i, (u, old)) in updates.iter().zip(&old_roots).enumerate() {
            if u.info.is_none() || u.wiped {
                self.storage.remove(&u.address);
            }
            if u.info.is_none() || u.storage.is_empty() {
                continue;
            }
            let trie = match self.storage.remove(&u.address) {
                Some((trie, _)) if trie.cached_root() == Some(*old) => trie,
                _ => Trie::new(*old),
            };
            jobs.push((i, trie));
        }
        // Storage tries in parallel.
        let storage: Vec<(usize, Trie, B256, Vec<EncodedNode>)> = jobs
            .into_par_iter()
            .map(|(i, mut trie)| {
                let u = &updates[i];
                let storage_err = |source| StateRootError::Storage { address: u.address, source };
                // A value sets its slot, zero deletes it; a wiped trie starts empty.
                let ops: Vec<TrieOp> = u
                    .storage
                    .iter()
                    .map(|(slot, value)| TrieOp {
                        key: Nibbles::unpack(keccak256(B256::from(*slot))),
                        value: (!value.is_zero()).then(|| alloy_rlp::encode(value)),
                        prior: if u.wiped {
                            None
                        } else {
                            slot_leaf(priors.slot(&u.address, slot))
                        },
                    })
                    .collect();
                if ops.len() >= PARALLEL_STORAGE_SLOTS {
                    trie.apply_many(ops, src).map_err(storage_err)?;
                } else {
                    for op in ops {
                        trie.apply(op, src).map_err(storage_err)?;
                    }
                }
                let (root, nodes) = trie.root_with_nodes_pruned(self.prune_depth.storage);
                Ok((i, trie, root, nodes))
            })
            .collect::<Result<_, StateRootError>>()?;
        let mut nodes = Vec::new();
        let mut storage_roots = old_roots;
        for (i, trie, root, n) in storage {
            nodes.extend(n);
            storage_roots[i] = root;
            let used = (self.updates, updates[i].storage.len());
            self.storage.insert(updates[i].address, (trie, used));
        }
        let storage_done = start.elapsed();
        // The account trie: its subtrees updated in parallel.
        // (The leaves were resolved by `get_many` above.)
        let ops: Vec<TrieOp> = updates
            .iter()
            .zip(&keys)
            .zip(&storage_roots)
            .map(|((u, key), storage_root)| {
                let leaf = u.info.map(|(nonce, balance, code_hash)| {
                    alloy_rlp::encode(TrieAccount::new(nonce, balance, *storage_root, code_hash))
                });
                TrieOp::new(*key, leaf)
            })
            .collect();
        self.accounts.apply_many(ops, src).map_err(|source| {
            let address = failing_account(updates, &keys, &source);
            StateRootError::Account { address, source }
        })?;
        let mut storage_roots: Vec<(Address, B256)> =
            updates.iter().map(|u| u.address).zip(storage_roots).collect();
        storage_roots.sort_unstable();
        let accounts_applied = start.elapsed();
        let (root, account_nodes) = self.accounts.root_with_nodes_pruned(self.prune_depth.accounts);
        nodes.extend(account_nodes);
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        tracing::debug!(
            target: "trie::state_root",
            leaves_ms = ms(leaves_read),
            storage_ms = ms(storage_done - leaves_read),
            accounts_ms = ms(accounts_applied - storage_done),
            hash_ms = ms(start.elapsed() - accounts_applied),
            "state trie updated"
        );
        Ok(StateRootUpdate { root, storage_roots, nodes })
    }
}

/// The account whose key's path holds the node `error` names (the first whose key starts with
/// the error's path); the first account when the error names no path.
fn failing_account(updates: &[AccountUpdate], keys: &[Nibbles], error: &TrieError) -> Address {
    let path = match error {
        TrieError::MissingNode { path, .. } => Some(path.as_str()),
        _ => None,
    };
    updates
        .iter()
        .zip(keys)
        .find(|(_, k)| path.is_some_and(|p| crate::mpt::hex(k).starts_with(p)))
        .or_else(|| updates.iter().zip(keys).next())
        .map_or(Address::ZERO, |(u, _)| u.address)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpt::{tests::LeafCounting, ProofNodes};
    use alloy_trie::root::{state_root_unhashed, storage_root_unhashed};
    use std::collections::BTreeMap;

    type World = BTreeMap<Address, (u64, U256, B256, BTreeMap<U256, U256>)>;

    /// Every account of `world` and all its slots, as one update from the empty state.
    fn updates_of(world: &World) -> Vec<AccountUpdate> {
        world
            .iter()
            .map(|(a, (n, b, c, s))| AccountUpdate {
                address: *a,
                info: Some((*n, *b, *c)),
                wiped: false,
                storage: s.iter().map(|(k, v)| (*k, *v)).collect(),
            })
            .collect()
    }

    fn oracle(world: &World) -> B256 {
        state_root_unhashed(world.iter().map(|(a, (n, b, c, s))| {
            let sr = storage_root_unhashed(s.iter().map(|(k, v)| (B256::from(*k), *v)));
            (*a, TrieAccount::new(*n, *b, sr, *c))
        }))
    }

    /// Builds `world` through `update_state_root` from the empty root, keeping every node,
    /// then applies a second diff (changes, a slot cleared, an account deleted, a new one) on
    /// top of the stored nodes and compares both roots with alloy-trie's full rebuild.
    #[test]
    fn incremental_root_equals_full_rebuild() {
        let mut world: World = BTreeMap::new();
        for i in 1..=40u8 {
            let storage = (0..(i as u64 % 7)).map(|k| (U256::from(k), U256::from(k + 1))).collect();
            world.insert(Address::repeat_byte(i), (i as u64, U256::from(i), B256::ZERO, storage));
        }
        let updates = updates_of(&world);
        // Collect the nodes by rebuilding each trie in memory (what a node store would hold).
        let none = ProofNodes::default();
        let first = update_state_root(EMPTY_ROOT_HASH, &updates, &none).unwrap();
        assert_eq!(first.root, oracle(&world));

        let mut pool = ProofNodes::default();
        let mut accounts = Trie::new(EMPTY_ROOT_HASH);
        for (a, (n, b, c, s)) in &world {
            let mut st = Trie::new(EMPTY_ROOT_HASH);
            for (k, v) in s {
                st.insert(&Nibbles::unpack(keccak256(B256::from(*k))), alloy_rlp::encode(v), &none)
                    .unwrap();
            }
            let (sr, nodes) = st.root_with_nodes();
            pool.extend(nodes.into_iter().map(|(_, r)| r));
            let acc = TrieAccount::new(*n, *b, sr, *c);
            accounts.insert(&Nibbles::unpack(keccak256(a)), alloy_rlp::encode(acc), &none).unwrap();
        }
        let (root, nodes) = accounts.root_with_nodes();
        assert_eq!(root, first.root);
        pool.extend(nodes.into_iter().map(|(_, r)| r));

        let second = vec![
            AccountUpdate {
                address: Address::repeat_byte(6),
                info: Some((7, U256::from(99), B256::ZERO)),
                wiped: false,
                storage: vec![(U256::from(0), U256::ZERO), (U256::from(9), U256::from(3))],
            },
            AccountUpdate {
                address: Address::repeat_byte(9),
                info: None,
                wiped: false,
                storage: vec![],
            },
            AccountUpdate {
                address: Address::repeat_byte(0xee),
                info: Some((1, U256::from(1), B256::ZERO)),
                wiped: false,
                storage: vec![(U256::from(5), U256::from(5))],
            },
        ];
        let e = world.get_mut(&Address::repeat_byte(6)).unwrap();
        (e.0, e.1) = (7, U256::from(99));
        e.3.remove(&U256::from(0));
        e.3.insert(U256::from(9), U256::from(3));
        world.remove(&Address::repeat_byte(9));
        world.insert(
            Address::repeat_byte(0xee),
            (1, U256::from(1), B256::ZERO, [(U256::from(5), U256::from(5))].into()),
        );
        let next = update_state_root(root, &second, &pool).unwrap();
        assert_eq!(next.root, oracle(&world));
    }
    /// A kept state holds exactly the storage tries asked for: those of the latest update
    /// first, among them the ones with most slots changed.
    #[test]
    fn the_storage_tries_kept_are_the_latest_and_largest() {
        let none = ProofNodes::default();
        let update = |address: u8, slots: u64| AccountUpdate {
            address: Address::repeat_byte(address),
            info: Some((1, U256::from(1), B256::ZERO)),
            wiped: false,
            storage: (0..slots).map(|k| (U256::from(k), U256::from(k + 1))).collect(),
        };
        let mut state = StateTrie::new(EMPTY_ROOT_HASH);
        state.update(&[update(1, 9), update(2, 8)], &none).unwrap();
        let second = vec![update(3, 1), update(4, 3), update(5, 2)];
        state.update(&second, &none).unwrap();
        assert_eq!(state.decoded_nodes().2, 5);
        state.retain_storage_tries(2);
        let kept: std::collections::BTreeSet<Address> = state.storage.keys().copied().collect();
        assert_eq!(kept, [Address::repeat_byte(4), Address::repeat_byte(5)].into());
    }

    /// A storage trie with more changed slots than [`PARALLEL_STORAGE_SLOTS`] (updated by its
    /// subtrees in parallel), written, then changed again — slots set, cleared, added — over
    /// the stored nodes: both roots equal alloy-trie's full rebuild.
    #[test]
    fn a_storage_trie_updated_in_parallel_equals_full_rebuild() {
        let big = Address::repeat_byte(0x42);
        let mut slots: BTreeMap<U256, U256> =
            (0..300u64).map(|k| (U256::from(k * 7919), U256::from(k + 1))).collect();
        let mut world: World = BTreeMap::new();
        world.insert(big, (1, U256::from(5), B256::ZERO, slots.clone()));
        world.insert(Address::repeat_byte(1), (1, U256::from(1), B256::ZERO, BTreeMap::new()));
        let first = updates_of(&world);
        assert!(first[1].storage.len() >= PARALLEL_STORAGE_SLOTS);
        let mut pool = ProofNodes::default();
        let root1 = update_state_root(EMPTY_ROOT_HASH, &first, &pool).unwrap();
        assert_eq!(root1.root, oracle(&world));
        pool.extend(root1.nodes.into_iter().map(|(_, rlp)| rlp));

        // Every third slot cleared, every other one rewritten, 50 new ones.
        let mut change: Vec<(U256, U256)> = Vec::new();
        for (i, k) in slots.keys().copied().collect::<Vec<_>>().into_iter().enumerate() {
            match i % 3 {
                0 => change.push((k, U256::ZERO)),
                1 => change.push((k, U256::from(i as u64 * 3 + 1000))),
                _ => {}
            }
        }
        change.extend((0..50u64).map(|k| (U256::from(k * 7919 + 3), U256::from(9))));
        change.sort_unstable();
        for (k, v) in &change {
            if v.is_zero() {
                slots.remove(k);
            } else {
                slots.insert(*k, *v);
            }
        }
        world.get_mut(&big).unwrap().3 = slots;
        let second = vec![AccountUpdate {
            address: big,
            info: Some((1, U256::from(5), B256::ZERO)),
            wiped: false,
            storage: change,
        }];
        let root2 = update_state_root(root1.root, &second, &pool).unwrap();
        assert_eq!(root2.root, oracle(&world));
    }

    /// The world's values before an update, as an executor's pre-state knows them.
    struct Before<'a>(&'a World);

    impl PriorValues for Before<'_> {
        fn account(&self, address: &Address) -> Option<(u64, U256, B256)> {
            self.0.get(address).map(|(n, b, c, _)| (*n, *b, *c))
        }

        fn slot(&self, address: &Address, slot: &U256) -> Option<U256> {
            self.0.get(address).map(|(.., s)| s.get(slot).copied().unwrap_or_default())
        }
    }

    /// Prior values change no root and spare the changed leaves' reads: a fresh trie still
    /// reads the leaves of the accounts with storage (for their storage roots), a kept trie
    /// whose storage tries hold those roots reads none; without priors every changed leaf is
    /// read.
    #[test]
    fn prior_values_spare_the_changed_leaves_reads() {
        let mut world: World = BTreeMap::new();
        for i in 0..400u64 {
            let storage = if i % 8 == 0 {
                (0..30u64).map(|k| (U256::from(k), U256::from(k + i + 1))).collect()
            } else {
                BTreeMap::new()
            };
            let address = Address::from_word(B256::from(U256::from(i)));
            world.insert(address, (i, U256::from(i * 1_000), B256::repeat_byte(1), storage));
        }
        let all = updates_of(&world);
        let mut pool = ProofNodes::default();
        let mut kept = StateTrie::new(EMPTY_ROOT_HASH);
        let first = kept.update(&all, &pool).unwrap();
        pool.extend(first.nodes.iter().map(|(_, rlp)| rlp.clone()));
        // Every third account's balance changes, and two slots of each one with storage (a
        // cleared slot may collapse its branch onto a sibling leaf, which is read: the
        // deletions are `mpt`'s test).
        let before = world.clone();
        let mut second = Vec::new();
        let (mut accounts_with_storage, mut slots) = (0, 0);
        for (i, (address, (n, b, c, s))) in world.iter_mut().enumerate() {
            if i % 3 != 0 {
                continue;
            }
            *b += U256::from(1);
            let mut storage = Vec::new();
            if !s.is_empty() {
                accounts_with_storage += 1;
                slots += 2;
                s.insert(U256::from(3), U256::from(77));
                s.insert(U256::from(4), U256::from(78));
                storage = vec![(U256::from(3), U256::from(77)), (U256::from(4), U256::from(78))];
            }
            second.push(AccountUpdate {
                address: *address,
                info: Some((*n, *b, *c)),
                wiped: false,
                storage,
            });
        }
        let want = oracle(&world);
        let leaf_reads = |trie: &mut StateTrie, priors: &dyn PriorValues| {
            let src = LeafCounting::new(&pool);
            let update = trie.update_with(&second, priors, &src).unwrap();
            assert_eq!(update.root, want);
            src.leaves()
        };
        let changed = second.len();
        assert!(leaf_reads(&mut StateTrie::new(first.root), &()) >= changed + slots);
        assert_eq!(
            leaf_reads(&mut StateTrie::new(first.root), &Before(&before)),
            accounts_with_storage
        );
        assert_eq!(leaf_reads(&mut kept, &Before(&before)), 0);
    }
}
