//! The state trie kept between blocks: the [`StateTrie`] a block's state root was computed
//! on, anchored at that root and handed to the next block whose parent has it, as reth keeps
//! its sparse trie across payloads.
//!
//! A trie node is named by its hash, so a trie anchored at a state root is that state's
//! whatever the branch or block that reached it: the anchor is the only check needed. Between
//! blocks the trie holds only its top levels — deeper nodes are left as their hashes in the
//! pass that hashes them, and a walk every [`FULL_PRUNE_INTERVAL`] updates prunes what was
//! only read — and its most recently changed storage tries, which bounds its memory. A block on another parent, or after an
//! update that failed (its trie is dropped), starts from the root alone.
//!
//! Flow: [`PreservedTrie::update_state_root`] → take the trie anchored at the parent's root
//! (or a new one) → with a read pool, the nodes its paths lack read level by level
//! ([`StateTrie::resolve_paths`]) → [`StateTrie::update`] → prune → keep it anchored at the new
//! root.

use crate::{
    mpt::NodeSource,
    state_root::{
        AccountUpdate, PriorValues, PruneDepth, StateRootError, StateRootUpdate, StateTrie,
    },
};
use alloy_primitives::B256;
use std::sync::Mutex;

/// Nibbles below a trie's root whose nodes stay decoded between blocks (reth's
/// `DEFAULT_SPARSE_TRIE_PRUNE_DEPTH` is 4, over nodes kept by path): the branches of the top
/// levels, which every block's paths cross, without the leaves of a large state. A decoded
/// branch here is one allocation of 680 bytes (its 16 children of 40 bytes inline), so the
/// account trie's 3 levels are at most 4,369 branches, ≈ 2.8 MiB, and each storage trie's 2
/// levels at most 273, ≈ 0.18 MiB.
pub const DEFAULT_PRUNE_DEPTH: PruneDepth = PruneDepth { accounts: 3, storage: 2 };

/// Storage tries kept between blocks, the most recently changed (reth's
/// `DEFAULT_MAX_PRESERVED_STORAGE_TRIES`).
pub const DEFAULT_MAX_STORAGE_TRIES: usize = 100;

/// Updates between two walks of a kept trie that prune it whole ([`StateTrie::prune`]).
pub const FULL_PRUNE_INTERVAL: u64 = 64;

/// [`PreservedTrie::update_state_root`] on `preserved` when there is one, else a new
/// [`StateTrie`] from the parent's root alone; the leaves of keys whose values `priors` know
/// recognised instead of read ([`StateTrie::update_with`]).
///
/// # Errors
/// As [`StateTrie::update`].
pub fn update_state_root_on<S: NodeSource + Sync>(
    preserved: Option<&PreservedTrie>,
    parent_root: B256,
    updates: &[AccountUpdate],
    priors: &dyn PriorValues,
    src: &S,
) -> (Result<StateRootUpdate, StateRootError>, TrieStart) {
    match preserved {
        Some(preserved) => preserved.update_state_root(parent_root, updates, priors, src),
        None => {
            let update = StateTrie::new(parent_root).update_with(updates, priors, src);
            (update, TrieStart::Fresh)
        }
    }
}

/// The [`StateTrie`] of the last state root computed through it, for the next block.
#[derive(Debug)]
pub struct PreservedTrie {
    kept: Mutex<Option<(B256, StateTrie)>>,
    prune_depth: PruneDepth,
    max_storage_tries: usize,
    /// The threads an update's missing nodes are read on before it walks them
    /// ([`StateTrie::resolve_paths`]); `None`: the walk reads them one at a time.
    reads: Option<rayon::ThreadPool>,
}

/// Threads of [`PreservedTrie::with_read_pool`]'s pool in the engine by default: as many
/// trie-node reads in flight at once, the queue depth a cold state's disk sees (an NVMe and
/// this project's VMs reach most of their IOPS at 16 to 32).
pub const DEFAULT_TRIE_READ_THREADS: usize = 16;

impl Default for PreservedTrie {
    fn default() -> Self {
        Self::new(DEFAULT_PRUNE_DEPTH, DEFAULT_MAX_STORAGE_TRIES)
    }
}

/// How a [`PreservedTrie`] served an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrieStart {
    /// The kept trie was anchored at the parent's root: its decoded nodes were reused.
    Preserved,
    /// No trie was kept, or it was anchored elsewhere: the update started from the root.
    Fresh,
}

impl PreservedTrie {
    /// A keeper that prunes its trie to `prune_depth` and `max_storage_tries` storage tries
    /// between blocks.
    pub fn new(prune_depth: PruneDepth, max_storage_tries: usize) -> Self {
        Self { kept: Mutex::new(None), prune_depth, max_storage_tries, reads: None }
    }

    /// The same keeper, each update first reading the nodes its paths lack on `pool`, level by
    /// level ([`StateTrie::resolve_paths`]), instead of one at a time while it walks.
    pub fn with_read_pool(mut self, pool: rayon::ThreadPool) -> Self {
        self.reads = Some(pool);
        self
    }

    /// Drops the kept trie: the next update starts from its parent's root (after a sync that
    /// moved the head outside the engine).
    pub fn clear(&self) {
        *self.kept.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The trie of state `root`: the one kept when anchored there, else a new one (the kept
    /// one is dropped).
    pub fn take(&self, root: B256) -> (StateTrie, TrieStart) {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner()).take();
        match kept {
            Some((anchor, trie)) if anchor == root => (trie, TrieStart::Preserved),
            _ => (StateTrie::new(root).with_prune_depth(self.prune_depth), TrieStart::Fresh),
        }
    }

    /// Keeps `trie`, whose root has just been computed, for the block built on it: its
    /// storage tries cut to the most recently changed, and every [`FULL_PRUNE_INTERVAL`]
    /// updates pruned whole (an update prunes what it hashes; nodes only read stay decoded
    /// until then). A trie whose root is not computed (an update that failed) is dropped.
    pub fn keep(&self, mut trie: StateTrie) {
        let Some(root) = trie.root() else { return };
        let start = std::time::Instant::now();
        trie.retain_storage_tries(self.max_storage_tries);
        if trie.updates().is_multiple_of(FULL_PRUNE_INTERVAL) {
            trie.prune(self.prune_depth, self.max_storage_tries);
        }
        if tracing::enabled!(target: "trie::state_root", tracing::Level::DEBUG) {
            let (accounts, storage, tries) = trie.decoded_nodes();
            tracing::debug!(
                target: "trie::state_root",
                keep_ms = start.elapsed().as_secs_f64() * 1e3,
                accounts,
                storage,
                tries,
                "state trie kept"
            );
        }
        *self.kept.lock().unwrap_or_else(|p| p.into_inner()) = Some((root, trie));
    }

    /// [`StateTrie::update_with`] on the trie kept at `parent_root` (or a new one), kept at
    /// the new root afterwards when the update succeeded; with a read pool
    /// ([`Self::with_read_pool`]), the nodes its paths lack read on it first.
    ///
    /// # Errors
    /// As [`StateTrie::update`]; the trie is then dropped.
    pub fn update_state_root<S: NodeSource + Sync>(
        &self,
        parent_root: B256,
        updates: &[AccountUpdate],
        priors: &dyn PriorValues,
        src: &S,
    ) -> (Result<StateRootUpdate, StateRootError>, TrieStart) {
        let (mut trie, start) = self.take(parent_root);
        if let Some(pool) = &self.reads {
            let began = std::time::Instant::now();
            let read = trie.resolve_paths(updates, priors, src, pool);
            tracing::debug!(
                target: "trie::state_root",
                resolve_ms = began.elapsed().as_secs_f64() * 1e3,
                walk_ms = read.walking.as_secs_f64() * 1e3,
                read_ms = read.reading.as_secs_f64() * 1e3,
                nodes = read.nodes,
                rounds = read.rounds,
                "paths resolved"
            );
        }
        let result = trie.update_with(updates, priors, src);
        if result.is_ok() {
            self.keep(trie);
        }
        (result, start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{mpt::ProofNodes, update_state_root, NodeSourceError};
    use alloy_primitives::{Address, Bytes, U256};
    use alloy_trie::{
        root::{state_root_unhashed, storage_root_unhashed},
        TrieAccount, EMPTY_ROOT_HASH,
    };
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use std::{
        collections::BTreeMap,
        sync::atomic::{AtomicUsize, Ordering},
    };

    type World = BTreeMap<Address, (u64, U256, BTreeMap<U256, U256>)>;

    fn oracle(world: &World) -> B256 {
        state_root_unhashed(world.iter().map(|(a, (n, b, s))| {
            let sr = storage_root_unhashed(s.iter().map(|(k, v)| (B256::from(*k), *v)));
            (*a, TrieAccount::new(*n, *b, sr, B256::ZERO))
        }))
    }

    /// A node pool that counts the nodes read from it.
    #[derive(Default)]
    struct Counting {
        pool: ProofNodes,
        reads: AtomicUsize,
    }

    impl NodeSource for Counting {
        fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.pool.node(hash)
        }
    }

    /// One block of random changes to `world`: balances, new and deleted accounts, slots set
    /// and cleared, a storage wiped and written again; applied to `world` as well.
    fn block(world: &mut World, rng: &mut StdRng) -> Vec<AccountUpdate> {
        let mut changed: BTreeMap<Address, AccountUpdate> = BTreeMap::new();
        for _ in 0..40 {
            let address = Address::with_last_byte(rng.random_range(0..=255u8));
            if rng.random_bool(0.1) && world.contains_key(&address) {
                world.remove(&address);
                changed.insert(
                    address,
                    AccountUpdate { address, info: None, wiped: true, storage: vec![] },
                );
                continue;
            }
            let wiped = rng.random_bool(0.05) && world.contains_key(&address);
            let entry = world.entry(address).or_default();
            if wiped {
                entry.2.clear();
            }
            entry.0 += 1;
            entry.1 = U256::from(rng.random_range(1..1_000_000u64));
            let mut storage = BTreeMap::new();
            for _ in 0..rng.random_range(0..6) {
                let slot = U256::from(rng.random_range(0..50u64));
                let value = match rng.random_bool(0.3) {
                    true => U256::ZERO,
                    false => U256::from(rng.random_range(1..1000u64)),
                };
                storage.insert(slot, value);
                match value.is_zero() {
                    true => entry.2.remove(&slot),
                    false => entry.2.insert(slot, value),
                };
            }
            let info = Some((entry.0, entry.1, B256::ZERO));
            let u = changed.entry(address).or_insert(AccountUpdate {
                address,
                info,
                wiped: false,
                storage: vec![],
            });
            u.info = info;
            u.wiped |= wiped;
            if wiped {
                u.storage.clear();
            }
            let mut merged: BTreeMap<U256, U256> = u.storage.iter().copied().collect();
            merged.extend(storage);
            u.storage = merged.into_iter().collect();
        }
        changed.into_values().collect()
    }

    /// Twenty blocks of random changes through one kept trie (pruned by its updates, and every
    /// fifth block pruned whole to one nibble (storage tries to their roots) and three storage
    /// tries), and
    /// through a trie started from the root each block over the same stored nodes: both
    /// roots equal alloy-trie's rebuild of the whole state every block, the kept trie reads
    /// fewer nodes, and the nodes it reports are all a store needs (the final state read back
    /// through a fresh trie over them alone).
    #[test]
    fn a_kept_trie_gives_the_roots_of_a_fresh_one_with_fewer_reads() {
        let mut rng = StdRng::seed_from_u64(41);
        let mut world = World::new();
        let mut store = Counting::default();
        let kept = PreservedTrie::new(PruneDepth { accounts: 2, storage: 1 }, 8);
        let mut root = EMPTY_ROOT_HASH;
        let (mut kept_reads, mut fresh_reads, mut preserved) = (0, 0, 0);
        for n in 0..20 {
            let updates = block(&mut world, &mut rng);
            store.reads.store(0, Ordering::Relaxed);
            let fresh = update_state_root(root, &updates, &store).unwrap();
            fresh_reads += store.reads.swap(0, Ordering::Relaxed);
            let (update, start) = kept.update_state_root(root, &updates, &(), &store);
            let update = update.unwrap();
            kept_reads += store.reads.load(Ordering::Relaxed);
            preserved += usize::from(start == TrieStart::Preserved);
            assert_eq!(update.root, oracle(&world), "block {n}");
            assert_eq!(fresh.root, update.root, "block {n}");
            assert_eq!(fresh.storage_roots, update.storage_roots, "block {n}");
            // The store keeps what the kept trie reports, nothing else.
            store.pool.extend(update.nodes.into_iter().map(|(_, rlp)| rlp));
            // Now and then the whole trie pruned harder than its updates prune it.
            if n % 5 == 4 {
                let (mut trie, start) = kept.take(update.root);
                assert_eq!(start, TrieStart::Preserved);
                trie.prune(PruneDepth { accounts: 1, storage: 0 }, 3);
                assert_eq!(trie.root(), Some(update.root), "pruning keeps the root");
                kept.keep(trie);
            }
            root = update.root;
        }
        assert_eq!(preserved, 19, "every block after the first on the kept trie");
        assert!(kept_reads * 3 < fresh_reads * 2, "kept {kept_reads} reads, fresh {fresh_reads}");
        // The final state, read through a trie over the stored nodes alone.
        let mut accounts = crate::Trie::new(root);
        for (address, (nonce, balance, storage)) in &world {
            let key = alloy_trie::Nibbles::unpack(alloy_primitives::keccak256(address));
            let leaf = accounts.get(&key, &store).unwrap().expect("account stored");
            let account: TrieAccount = alloy_rlp::decode_exact(&leaf).unwrap();
            assert_eq!((account.nonce, account.balance), (*nonce, *balance));
            let mut slots = crate::Trie::new(account.storage_root);
            for (slot, value) in storage {
                let key =
                    alloy_trie::Nibbles::unpack(alloy_primitives::keccak256(B256::from(*slot)));
                assert_eq!(slots.get(&key, &store).unwrap(), Some(alloy_rlp::encode(value)));
            }
        }
    }

    /// A block on another parent does not use the kept trie; a failed update drops it.
    #[test]
    fn the_kept_trie_serves_only_its_own_root() {
        let mut rng = StdRng::seed_from_u64(5);
        let mut world = World::new();
        let kept = PreservedTrie::default();
        let none = ProofNodes::default();
        let first = block(&mut world, &mut rng);
        let (update, start) = kept.update_state_root(EMPTY_ROOT_HASH, &first, &(), &none);
        assert_eq!(start, TrieStart::Fresh);
        let root = update.unwrap().root;
        let other = B256::repeat_byte(7);
        assert_eq!(kept.take(other).1, TrieStart::Fresh);
        // The mismatched take dropped the kept trie: the right root now starts fresh too, and
        // over no stored nodes it cannot resolve the parent's root.
        let second = block(&mut world, &mut rng);
        let (update, start) = kept.update_state_root(root, &second, &(), &none);
        assert_eq!(start, TrieStart::Fresh);
        assert!(matches!(update, Err(StateRootError::Account { .. })));
        assert_eq!(kept.take(root).1, TrieStart::Fresh, "a failed update keeps nothing");
    }
}
