//! Reading ahead the trie nodes a state root will walk: every node on the paths to a block's
//! accounts and, under each account's storage root, to its slots — read level by level, each
//! level's nodes all at once on a pool of I/O threads.
//!
//! A state-root update walks its paths one node after another, each child found in its parent:
//! cold, every node is a read the walk waits for, and a trie of millions of entries has four to
//! eight levels. The keys are known before the walk (a block's BAL names them), so the nodes can
//! be read ahead: the root, then all the children the keys go through, then theirs, a level's
//! nodes split over the pool's threads, each thread's share one batched read
//! ([`NodeSource::nodes`]: the store's multi-get). The reads go through the [`NodeSource`],
//! whose own cache (the store's) then answers the walk from memory. geth's trie prefetcher and reth's
//! multiproof workers read ahead in the same way.
//!
//! A key's leaf whose value before the block is known ([`PriorValues`]: what the BAL-hinted
//! reads of the flat state have brought in by the time the walk reaches it) is recognised by
//! its hash in its parent and not read, as the state root then does not read it either.
//!
//! Flow: targets (address, slots) → the account trie from `root`, level by level → at an
//! account's leaf its storage root → that storage trie, level by level, in the same rounds →
//! [`PrefetchStats`].

use crate::{
    mpt::{decode_node, known_leaf, Node, NodeSource, TrieError},
    state_root::{account_leaf_candidates, slot_leaf, PriorValues},
};
use alloy_primitives::{keccak256, map::HashMap, Address, B256, U256};
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use rayon::prelude::*;

/// One account whose trie path, and whose slots' paths in its storage trie, are read ahead.
#[derive(Debug, Clone, Default)]
pub struct PrefetchTarget {
    /// The account.
    pub address: Address,
    /// keccak256 of the address (the account trie's key).
    pub account: B256,
    /// Each slot with its keccak256 (the storage trie's key).
    pub slots: Vec<(U256, B256)>,
}

impl PrefetchTarget {
    /// The target of `address` and its `slots`, their trie keys hashed.
    pub fn new(address: Address, slots: impl IntoIterator<Item = U256>) -> Self {
        let slots = slots.into_iter().map(|s| (s, keccak256(B256::from(s)))).collect();
        Self { address, account: keccak256(address), slots }
    }
}

/// What [`prefetch_paths`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefetchStats {
    /// Nodes asked of the source (hits of its cache included).
    pub nodes: usize,
    /// Rounds of reads (the deepest path, account and storage levels together).
    pub rounds: usize,
}

/// A key being walked: the target, and the slot (`None`: the account itself).
type Key = (usize, Option<usize>);

/// A node still to read: its hash, how many nibbles of its keys lie above it, and the keys
/// going through it.
type Pending = (B256, usize, Vec<Key>);

/// Reads every node on the paths from `root` to `targets`' accounts, and from each account's
/// storage root to its slots, through `src` on `pool`'s threads, one level per round. A node
/// the source lacks ends that path (the walk that needs it reports it); what the source
/// answers stays in its cache for the walk. The leaf of a key whose value `priors` know (an
/// account's with the empty storage root) is recognised by hash and not read.
///
/// # Errors
/// [`TrieError::Source`] when the source fails, [`TrieError::Decode`] for a node that does not
/// decode.
pub fn prefetch_paths(
    src: &(dyn NodeSource + Sync),
    root: B256,
    targets: &[PrefetchTarget],
    priors: &dyn PriorValues,
    pool: &rayon::ThreadPool,
) -> Result<PrefetchStats, TrieError> {
    let mut stats = PrefetchStats::default();
    if root == EMPTY_ROOT_HASH || targets.is_empty() {
        return Ok(stats);
    }
    let accounts: Vec<Nibbles> = targets.iter().map(|t| Nibbles::unpack(t.account)).collect();
    let slots: Vec<Vec<Nibbles>> = targets
        .iter()
        .map(|t| t.slots.iter().map(|(_, hashed)| Nibbles::unpack(hashed)).collect())
        .collect();
    let key = |(t, s): Key| match s {
        None => &accounts[t],
        Some(s) => &slots[t][s],
    };
    let known = |(t, s): Key| -> Vec<Vec<u8>> {
        let address = &targets[t].address;
        match s {
            None => account_leaf_candidates(priors, address, &[EMPTY_ROOT_HASH]),
            Some(s) => {
                slot_leaf(priors.slot(address, &targets[t].slots[s].0)).into_iter().collect()
            }
        }
    };
    let mut frontier: Vec<Pending> =
        vec![(root, 0, (0..targets.len()).map(|t| (t, None)).collect())];
    while !frontier.is_empty() {
        stats.rounds += 1;
        stats.nodes += frontier.len();
        // In the store's key order, so that each thread's share is one run of the key space:
        // its multi-get's batches then read many blocks of one table file at once.
        frontier.sort_unstable_by_key(|(hash, ..)| *hash);
        let hashes: Vec<B256> = frontier.iter().map(|(hash, ..)| *hash).collect();
        let chunk = hashes.len().div_ceil(pool.current_num_threads().max(1));
        let read: Vec<_> = pool
            .install(|| hashes.par_chunks(chunk).flat_map_iter(|chunk| src.nodes(chunk)).collect());
        let mut next = Vec::new();
        for ((hash, depth, keys), rlp) in frontier.into_iter().zip(read) {
            let rlp = rlp.map_err(|source| TrieError::Source { hash, source })?;
            let Some(rlp) = rlp else { continue };
            let node =
                decode_node(&rlp).map_err(|e| TrieError::Decode { hash, reason: e.to_string() })?;
            descend(&node, depth, keys, &key, &slots, &mut next)?;
        }
        // A node reached twice (identical storage tries share their nodes) is read once; a
        // known leaf (of every key going through it: one key, or the same slot of identical
        // storage tries) is not read.
        let mut merged: HashMap<(B256, usize), Vec<Key>> = HashMap::default();
        for (hash, depth, keys) in next {
            let is_known =
                |&k: &Key| known_leaf(&hash, &key(k).slice(depth..), &known(k)).is_some();
            if !keys.iter().all(is_known) {
                merged.entry((hash, depth)).or_default().extend(keys);
            }
        }
        frontier = merged.into_iter().map(|((hash, depth), keys)| (hash, depth, keys)).collect();
    }
    Ok(stats)
}

/// Routes `keys` through `node` (decoded, `depth` nibbles down): the hashed children they reach
/// go to `next`; an account's leaf starts its storage trie's walk there.
fn descend<'k>(
    node: &Node,
    depth: usize,
    keys: Vec<Key>,
    key: &impl Fn(Key) -> &'k Nibbles,
    slots: &[Vec<Nibbles>],
    next: &mut Vec<Pending>,
) -> Result<(), TrieError> {
    match node {
        Node::Empty => {}
        Node::Hash(hash) => next.push((*hash, depth, keys)),
        Node::Branch(branch) => {
            let mut by_child: [Vec<Key>; 16] = Default::default();
            for k in keys {
                if let Some(n) = key(k).get(depth) {
                    by_child[n as usize].push(k);
                }
            }
            for (child, keys) in branch.children.iter().zip(by_child) {
                if !keys.is_empty() {
                    descend(child, depth + 1, keys, key, slots, next)?;
                }
            }
        }
        Node::Extension(ext) => {
            let end = depth + ext.key.len();
            let keys: Vec<Key> = keys
                .into_iter()
                .filter(|&k| {
                    let nibbles = key(k);
                    end <= nibbles.len() && nibbles.slice(depth..end) == ext.key
                })
                .collect();
            if !keys.is_empty() {
                descend(&ext.child, end, keys, key, slots, next)?;
            }
        }
        Node::Leaf(leaf) => {
            for k in keys {
                let (t, None) = k else { continue };
                if slots[t].is_empty() || key(k).slice(depth..) != leaf.key {
                    continue;
                }
                let account: TrieAccount = alloy_rlp::decode_exact(&leaf.value)
                    .map_err(|e| TrieError::Decode { hash: B256::ZERO, reason: e.to_string() })?;
                if account.storage_root != EMPTY_ROOT_HASH {
                    let keys = (0..slots[t].len()).map(|s| (t, Some(s))).collect();
                    next.push((account.storage_root, 0, keys));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        mpt::{NodeSourceError, Trie},
        EncodedNode,
    };
    use alloy_primitives::{keccak256, Bytes, U256};
    use std::{collections::HashSet, sync::Mutex};

    /// A node store that records which nodes were asked for.
    #[derive(Default)]
    struct Recording {
        nodes: std::collections::HashMap<B256, Bytes>,
        asked: Mutex<HashSet<B256>>,
    }

    impl NodeSource for Recording {
        fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
            self.asked.lock().unwrap().insert(*hash);
            Ok(self.nodes.get(hash).cloned())
        }
    }

    fn store(src: &mut Recording, nodes: Vec<EncodedNode>) {
        src.nodes.extend(nodes);
    }

    /// What the test's state held: accounts and slots by address.
    #[derive(Default)]
    struct Known {
        accounts: std::collections::HashMap<Address, (u64, U256, B256)>,
        slots: std::collections::HashMap<(Address, U256), U256>,
    }

    impl PriorValues for Known {
        fn account(&self, address: &Address) -> Option<(u64, U256, B256)> {
            self.accounts.get(address).copied()
        }

        fn slot(&self, address: &Address, slot: &U256) -> Option<U256> {
            self.slots.get(&(*address, *slot)).copied()
        }
    }

    /// The nodes prefetched are exactly those a walk to the same accounts and slots reads: every
    /// node the walk asks for was asked by the prefetch first, and no other — without prior
    /// values, and with them (the walk then recognising the same leaves, which neither reads).
    #[test]
    fn prefetch_reads_every_node_a_walk_to_the_keys_reads() {
        let mut src = Recording::default();
        let mut state = Known::default();
        let address = |a: u64| Address::from_word(B256::from(U256::from(a)));
        // 2,000 accounts; every tenth holds 50 slots.
        let mut storage_roots = std::collections::HashMap::new();
        for a in (0..2_000u64).step_by(10) {
            let mut trie = Trie::new(EMPTY_ROOT_HASH);
            for s in 0..50u64 {
                let key = Nibbles::unpack(keccak256(B256::from(U256::from(s))));
                trie.insert(&key, alloy_rlp::encode(U256::from(s + 1)), &src).unwrap();
                state.slots.insert((address(a), U256::from(s)), U256::from(s + 1));
            }
            let (root, nodes) = trie.root_with_nodes();
            store(&mut src, nodes);
            storage_roots.insert(a, root);
        }
        let mut accounts = Trie::new(EMPTY_ROOT_HASH);
        for a in 0..2_000u64 {
            let code_hash = alloy_primitives::KECCAK256_EMPTY;
            let account = TrieAccount {
                nonce: a,
                balance: U256::from(a),
                storage_root: storage_roots.get(&a).copied().unwrap_or(EMPTY_ROOT_HASH),
                code_hash,
            };
            state.accounts.insert(address(a), (a, U256::from(a), code_hash));
            let key = Nibbles::unpack(keccak256(address(a)));
            accounts.insert(&key, alloy_rlp::encode(account), &src).unwrap();
        }
        let (root, nodes) = accounts.root_with_nodes();
        store(&mut src, nodes);

        // Targets: some accounts with slots (a few slots each), some without, one absent.
        let mut targets: Vec<PrefetchTarget> = [0u64, 10, 20, 1_990, 7, 13, 5_000]
            .iter()
            .map(|&a| {
                let slots = if a % 10 == 0 && a < 2_000 { 0..5u64 } else { 0..0 };
                PrefetchTarget::new(address(a), slots.map(|s| U256::from(s * 7)))
            })
            .collect();
        let absent = U256::from(999u64);
        targets[0].slots.push((absent, keccak256(B256::from(absent))));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        let mut asked = Vec::new();
        for priors in [&() as &dyn PriorValues, &state] {
            let stats = prefetch_paths(&src, root, &targets, priors, &pool).unwrap();
            let prefetched = std::mem::take(&mut *src.asked.lock().unwrap());
            assert!(stats.rounds >= 4, "{stats:?}");

            // The walk: every account and slot read from fresh tries, with the same candidates.
            let mut walk = Trie::new(root);
            for t in &targets {
                let key = Nibbles::unpack(t.account);
                let known = account_leaf_candidates(priors, &t.address, &[EMPTY_ROOT_HASH]);
                let value = walk.get_many(&[key], &[known], &src).unwrap().remove(0);
                let Some(value) = value else { continue };
                let account: TrieAccount = alloy_rlp::decode_exact(&value).unwrap();
                let mut storage = Trie::new(account.storage_root);
                for (slot, hashed) in &t.slots {
                    let known: Vec<_> =
                        slot_leaf(priors.slot(&t.address, slot)).into_iter().collect();
                    storage.get_many(&[Nibbles::unpack(hashed)], &[known], &src).unwrap();
                }
            }
            let walked = std::mem::take(&mut *src.asked.lock().unwrap());
            assert!(!walked.is_empty());
            let missed: Vec<_> = walked.difference(&prefetched).collect();
            assert!(missed.is_empty(), "{} nodes the walk read were not prefetched", missed.len());
            let extra: Vec<_> = prefetched.difference(&walked).collect();
            assert!(extra.is_empty(), "{} nodes prefetched that the walk never reads", extra.len());
            asked.push(prefetched.len());
        }
        // Known values spare the leaves of the two accounts without storage (7 and 13; 5,000
        // is absent) and of the five slots present (the four storage tries are identical, so
        // their leaves are the same five nodes; slot 999 is absent). The accounts with storage
        // are read for their storage roots.
        assert_eq!(asked[0] - asked[1], 2 + 5, "{asked:?}");
    }

    /// A source that records its batched reads and counts single ones.
    struct Batches<'a> {
        inner: &'a Recording,
        batches: Mutex<Vec<usize>>,
        singles: std::sync::atomic::AtomicUsize,
    }

    impl NodeSource for Batches<'_> {
        fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
            self.singles.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.inner.node(hash)
        }

        fn nodes(&self, hashes: &[B256]) -> Vec<Result<Option<Bytes>, NodeSourceError>> {
            self.batches.lock().unwrap().push(hashes.len());
            hashes.iter().map(|hash| self.inner.node(hash)).collect()
        }
    }

    /// Each level's nodes are read in batches, at most one per pool thread, never one by one,
    /// and every node the read-ahead counts was in a batch.
    #[test]
    fn each_level_is_read_in_one_batch_per_thread() {
        let mut src = Recording::default();
        let mut accounts = Trie::new(EMPTY_ROOT_HASH);
        let address = |a: u64| Address::from_word(B256::from(U256::from(a)));
        for a in 0..3_000u64 {
            let account = TrieAccount { nonce: a, ..Default::default() };
            let key = Nibbles::unpack(keccak256(address(a)));
            accounts.insert(&key, alloy_rlp::encode(account), &src).unwrap();
        }
        let (root, nodes) = accounts.root_with_nodes();
        store(&mut src, nodes);
        let targets: Vec<_> =
            (0..3_000u64).step_by(3).map(|a| PrefetchTarget::new(address(a), [])).collect();
        let batches =
            Batches { inner: &src, batches: Mutex::default(), singles: Default::default() };
        let threads = 4;
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let stats = prefetch_paths(&batches, root, &targets, &(), &pool).unwrap();
        let sizes = batches.batches.into_inner().unwrap();
        assert_eq!(batches.singles.into_inner(), 0);
        assert_eq!(sizes.iter().sum::<usize>(), stats.nodes);
        assert!(sizes.len() <= stats.rounds * threads, "{} batches, {stats:?}", sizes.len());
        // The lower levels hold hundreds of nodes: split over every thread.
        assert!(sizes.iter().any(|&n| n > 1) && stats.rounds >= 3, "{sizes:?} {stats:?}");
    }
}
