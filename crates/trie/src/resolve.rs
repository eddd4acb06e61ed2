//! Resolving a state update's paths before the update walks them: every node the update will
//! meet as a hash, read level by level, each level's nodes at once on a pool of I/O threads,
//! and decoded into the [`StateTrie`] where they belong.
//!
//! [`StateTrie::update_with`] reads a node it meets as a hash on the spot, one after another
//! down each key's path. Cold, each is a disk read the walk waits for, and in a large state
//! everything below the trie's kept top levels is cold. Here the keys, sorted, are first
//! routed through the nodes already decoded (in memory, no read), each node visited once for
//! all the keys below it, to the hashed nodes where their paths leave memory; those nodes are
//! read together — split over the pool's threads, each thread's share one batched read
//! ([`NodeSource::nodes`]: the store's multi-get) and decoded there — and put in place, and
//! the keys routed on below them, round after round, until every path ends at its leaf, an
//! empty slot or where it diverges. The account trie first; then, from the accounts' leaves,
//! the storage tries of the accounts whose slots change (the one kept when it is at the leaf's
//! storage root, else a new one), all of them in the same rounds. The update then finds its
//! paths decoded and reads only the sibling a deletion may collapse a branch onto.
//!
//! A node where few keys stopped may be the leaf of one of them holding its value before the
//! block ([`PriorValues`]): it is recognised by its hash and not read, as the update recognises
//! it. A node that cannot be read or decoded is left as its hash: the update reads it again and
//! reports the error with the account it belongs to. reth's proof workers and
//! [`crate::prefetch_paths`] read ahead in the same way, over the store; this reads only what
//! the trie in memory lacks, and decodes each node once.
//!
//! Flow: updates → account keys routed on the account trie → the hashed nodes they stop at
//! read on the pool → decoded in place → routed on … → the accounts' leaves → their slots'
//! keys routed on their storage tries, read the same way → [`ResolveStats`] →
//! [`StateTrie::update_with`].

use crate::{
    mpt::{decode_node, known_leaf, Node, NodeSource, Trie},
    state_root::{slot_leaf, AccountUpdate, PriorValues, StateTrie},
};
use alloy_primitives::{keccak256, map::HashMap, Address, B256};
use alloy_trie::{nodes::RlpNode, Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use rayon::prelude::*;
use std::ops::Range;

/// What [`StateTrie::resolve_paths`] read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResolveStats {
    /// Nodes read from the source (hits of its own cache included), each once a round.
    pub nodes: usize,
    /// Rounds of reads: the account trie's, then the storage tries'.
    pub rounds: usize,
    /// Time routing the keys through the decoded nodes and putting the read nodes in place.
    pub walking: std::time::Duration,
    /// Time recognising known leaves, reading and decoding the nodes on the pool.
    pub reading: std::time::Duration,
}

/// Keys stopped at one node beyond which it is taken for a branch, not tried as their leaf.
const LEAF_WAITERS: usize = 4;

/// A key to route: its nibbles, the leaves it may be known to hold, and the update it belongs
/// to.
struct Key {
    nibbles: Nibbles,
    known: Vec<Vec<u8>>,
    update: usize,
}

/// A hashed node on the paths of `keys` (a range of the sorted key table), `depth` nibbles
/// down.
struct Stop<'t> {
    node: &'t mut Node,
    hash: B256,
    depth: usize,
    keys: Range<usize>,
}

/// A storage trie being resolved: its account, the trie, when it was last changed (as
/// [`StateTrie`] keeps it) and its slots' range of the key table.
type StorageTrie = (Address, Trie, (u64, usize), Range<usize>);

/// A node to resolve: its hash, and the leaves it may be (a key's rest below it, the values
/// the key may hold).
type Job<'a> = (B256, Vec<(Nibbles, &'a [Vec<u8>])>);

impl StateTrie {
    /// Reads every node that [`StateTrie::update_with`]`(updates, priors, src)` would read one
    /// at a time on its keys' paths (but the siblings its deletions collapse onto), level by
    /// level, each level's nodes split over `pool`'s threads (one batched
    /// [`NodeSource::nodes`] each), and decodes them into this trie (see the module doc). The
    /// update that follows reads none of them again; its root and nodes are those it computes
    /// without this.
    ///
    /// Reads that fail, nodes the source lacks or that do not decode are left as their hashes
    /// for the update to read and report ([`crate::StateRootError`]).
    pub fn resolve_paths(
        &mut self,
        updates: &[AccountUpdate],
        priors: &dyn PriorValues,
        src: &(dyn NodeSource + Sync),
        pool: &rayon::ThreadPool,
    ) -> ResolveStats {
        let mut stats = ResolveStats::default();
        // The account trie: each account's leaf, for its storage root.
        let mut accounts: Vec<Key> = updates
            .iter()
            .enumerate()
            .map(|(update, u)| Key {
                nibbles: Nibbles::unpack(keccak256(u.address)),
                known: self.account_known(&u.address, priors),
                update,
            })
            .collect();
        accounts.sort_unstable_by_key(|k| k.nibbles);
        let mut leaves: Vec<Option<Vec<u8>>> = vec![None; accounts.len()];
        let all = 0..accounts.len();
        resolve_tries(
            vec![(self.accounts.root_mut(), all)],
            &accounts,
            Some(&mut leaves),
            src,
            pool,
            &mut stats,
        );

        // The storage tries of the accounts whose slots change, at their leaves' storage roots.
        let mut slots: Vec<Key> = Vec::new();
        let mut tries: Vec<StorageTrie> = Vec::new();
        for (key, leaf) in accounts.iter().zip(leaves) {
            let u = &updates[key.update];
            if u.info.is_none() || u.wiped || u.storage.is_empty() {
                continue;
            }
            let Some(account) =
                leaf.and_then(|rlp| alloy_rlp::decode_exact::<TrieAccount>(&rlp).ok())
            else {
                continue;
            };
            let root = account.storage_root;
            if root == EMPTY_ROOT_HASH {
                continue;
            }
            let (trie, used) = match self.storage.remove(&u.address) {
                Some((trie, used)) if trie.cached_root() == Some(root) => (trie, used),
                _ => (Trie::new(root), (self.updates, 0)),
            };
            let start = slots.len();
            slots.extend(u.storage.iter().map(|(slot, _)| Key {
                nibbles: Nibbles::unpack(keccak256(B256::from(*slot))),
                known: slot_leaf(priors.slot(&u.address, slot)).into_iter().collect(),
                update: key.update,
            }));
            slots[start..].sort_unstable_by_key(|k| k.nibbles);
            tries.push((u.address, trie, used, start..slots.len()));
        }
        let roots =
            tries.iter_mut().map(|(_, trie, _, keys)| (trie.root_mut(), keys.clone())).collect();
        resolve_tries(roots, &slots, None, src, pool, &mut stats);
        for (address, trie, used, _) in tries {
            self.storage.insert(address, (trie, used));
        }
        stats
    }
}

/// Resolves the paths of `keys` below each of `roots` (a trie's root and its keys' range of
/// `keys`, sorted), round after round; with `leaves`, each key's value where its path ends.
fn resolve_tries<'t>(
    roots: Vec<(&'t mut Node, Range<usize>)>,
    keys: &[Key],
    mut leaves: Option<&mut Vec<Option<Vec<u8>>>>,
    src: &(dyn NodeSource + Sync),
    pool: &rayon::ThreadPool,
    stats: &mut ResolveStats,
) {
    let began = std::time::Instant::now();
    let mut stops: Vec<Stop<'t>> = Vec::new();
    for (root, range) in roots {
        route(root, 0, range, keys, leaves.as_deref_mut(), &mut stops);
    }
    stats.walking += began.elapsed();
    while !stops.is_empty() {
        let began = std::time::Instant::now();
        stats.rounds += 1;
        // This level's nodes, each once, with the leaves each may be; each stop's node's index
        // and how many stops share it.
        let mut jobs: Vec<Job<'_>> = Vec::new();
        let mut sharing: Vec<usize> = Vec::new();
        let mut job_of: HashMap<B256, usize> = HashMap::default();
        let mut stop_jobs: Vec<usize> = Vec::with_capacity(stops.len());
        for stop in &stops {
            let j = *job_of.entry(stop.hash).or_insert_with(|| {
                jobs.push((stop.hash, Vec::new()));
                sharing.push(0);
                jobs.len() - 1
            });
            stop_jobs.push(j);
            sharing[j] += 1;
            if stop.keys.len() <= LEAF_WAITERS {
                for key in &keys[stop.keys.clone()] {
                    if !key.known.is_empty() {
                        jobs[j].1.push((key.nibbles.slice(stop.depth..), &key.known[..]));
                    }
                }
            }
        }
        // In the store's key order (the nodes' hashes), so that each thread's share is one run
        // of the key space ([`by_hash`]).
        let (jobs, mut sharing, stop_jobs) = by_hash(jobs, sharing, stop_jobs);
        // On the pool: each thread's share recognised as known leaves, the rest read in one
        // batch and decoded.
        let chunk = jobs.len().div_ceil(pool.current_num_threads().max(1));
        let (mut resolved, read): (Vec<Option<Node>>, Vec<bool>) = pool.install(|| {
            jobs.par_chunks(chunk).flat_map_iter(|chunk| resolve_chunk(chunk, src)).unzip()
        });
        stats.nodes += read.into_iter().filter(|&read| read).count();
        stats.reading += began.elapsed();
        // Put them in place and route their keys on below them.
        let began = std::time::Instant::now();
        let mut next = Vec::new();
        for (stop, j) in stops.into_iter().zip(stop_jobs) {
            sharing[j] -= 1;
            // The last of a node's stops (usually its only one) takes it; others clone it.
            let decoded = if sharing[j] == 0 { resolved[j].take() } else { resolved[j].clone() };
            let Some(decoded) = decoded.filter(|n| !matches!(n, Node::Hash(_))) else { continue };
            *stop.node = decoded;
            stop.node.set_cached(RlpNode::word_rlp(&stop.hash));
            route(stop.node, stop.depth, stop.keys, keys, leaves.as_deref_mut(), &mut next);
        }
        stops = next;
        stats.walking += began.elapsed();
    }
}

/// A level's jobs sorted by their nodes' hashes, with each job's sharing count and the stops'
/// job indices moved along. The store keeps trie nodes by hash and RocksDB's multi-get reads a
/// batch 32 sorted keys at a time, each table file's blocks for those keys in one submission:
/// a thread's share spread over the whole key space puts a few keys in each file (a few reads
/// a submission, one wait each), one run of it many (tens of reads in flight a submission).
fn by_hash<'a>(
    jobs: Vec<Job<'a>>,
    sharing: Vec<usize>,
    stop_jobs: Vec<usize>,
) -> (Vec<Job<'a>>, Vec<usize>, Vec<usize>) {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_unstable_by_key(|&j| jobs[j].0);
    let mut rank = vec![0; jobs.len()];
    for (new, &old) in order.iter().enumerate() {
        rank[old] = new;
    }
    let mut jobs: Vec<Option<Job<'a>>> = jobs.into_iter().map(Some).collect();
    let sorted = order.iter().map(|&old| jobs[old].take().expect("each job moved once")).collect();
    let sharing = order.iter().map(|&old| sharing[old]).collect();
    (sorted, sharing, stop_jobs.into_iter().map(|j| rank[j]).collect())
}

/// Routes `keys[range]` (sorted, sharing their first `depth` nibbles) through `node` and the
/// decoded nodes below it: the hashed nodes they reach go to `stops`; with `leaves`, a key
/// whose path ends at its leaf gets the leaf's value.
fn route<'t>(
    node: &'t mut Node,
    depth: usize,
    range: Range<usize>,
    keys: &[Key],
    leaves: Option<&mut Vec<Option<Vec<u8>>>>,
    stops: &mut Vec<Stop<'t>>,
) {
    if range.is_empty() {
        return;
    }
    if let Node::Hash(hash) = *node {
        stops.push(Stop { node, hash, depth, keys: range });
        return;
    }
    match node {
        Node::Empty | Node::Hash(_) => {}
        Node::Leaf(leaf) => {
            if let Some(leaves) = leaves {
                for i in range {
                    let nibbles = &keys[i].nibbles;
                    if leaf.key.len() == nibbles.len() - depth && leaf.key == nibbles.slice(depth..)
                    {
                        leaves[i] = Some(leaf.value.clone());
                    }
                }
            }
        }
        Node::Extension(ext) => {
            let end = depth + ext.key.len();
            let matches = |i: &usize| {
                end <= keys[*i].nibbles.len() && keys[*i].nibbles.slice(depth..end) == ext.key
            };
            let Some(first) = range.clone().find(matches) else { return };
            let last = range.clone().rev().find(matches).expect("first matches");
            route(&mut ext.child, end, first..last + 1, keys, leaves, stops);
        }
        Node::Branch(branch) => {
            let mut leaves = leaves;
            let mut children = branch.children.iter_mut().enumerate();
            let mut start = range.start;
            while start < range.end {
                let Some(nibble) = keys[start].nibbles.get(depth) else {
                    start += 1;
                    continue;
                };
                let mut end = start + 1;
                while end < range.end && keys[end].nibbles.get(depth) == Some(nibble) {
                    end += 1;
                }
                let child = children.find(|(n, _)| *n == nibble as usize).map(|(_, c)| c);
                if let Some(child) = child {
                    route(child, depth + 1, start..end, keys, leaves.as_deref_mut(), stops);
                }
                start = end;
            }
        }
    }
}

/// Each of `jobs`' nodes: the leaf it was recognised as (of one of its candidates: a key's
/// rest and the values it may hold, hashed: [`known_leaf`]), else read from `src` (the rest of
/// the chunk in one batch) and decoded; `None` when it could not be read or decoded. With
/// each, whether it was read.
fn resolve_chunk(jobs: &[Job<'_>], src: &(dyn NodeSource + Sync)) -> Vec<(Option<Node>, bool)> {
    let mut out: Vec<(Option<Node>, bool)> = jobs
        .iter()
        .map(|(hash, leaves)| {
            let leaf = leaves.iter().find_map(|(rest, known)| known_leaf(hash, rest, known));
            (leaf, false)
        })
        .collect();
    let unread: Vec<usize> = (0..jobs.len()).filter(|&i| out[i].0.is_none()).collect();
    if unread.is_empty() {
        return out;
    }
    let hashes: Vec<B256> = unread.iter().map(|&i| jobs[i].0).collect();
    for (i, rlp) in unread.into_iter().zip(src.nodes(&hashes)) {
        out[i] = (rlp.ok().flatten().and_then(|rlp| decode_node(&rlp).ok()), true);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        mpt::{NodeSourceError, ProofNodes},
        preserved::PreservedTrie,
        state_root::{update_state_root, PruneDepth},
        TrieError,
    };
    use alloy_primitives::{Address, Bytes, U256};
    use alloy_trie::root::{state_root_unhashed, storage_root_unhashed};
    use rand::{rngs::StdRng, Rng, SeedableRng};
    use std::{
        collections::{BTreeMap, HashSet as StdHashSet},
        sync::Mutex,
    };

    type World = BTreeMap<Address, (u64, U256, BTreeMap<U256, U256>)>;

    fn oracle(world: &World) -> B256 {
        state_root_unhashed(world.iter().map(|(a, (n, b, s))| {
            let sr = storage_root_unhashed(s.iter().map(|(k, v)| (B256::from(*k), *v)));
            (*a, TrieAccount::new(*n, *b, sr, B256::ZERO))
        }))
    }

    /// What the world held: the priors of the next update.
    struct Priors<'a>(&'a World);

    impl PriorValues for Priors<'_> {
        fn account(&self, address: &Address) -> Option<(u64, U256, B256)> {
            self.0.get(address).map(|(n, b, _)| (*n, *b, B256::ZERO))
        }

        fn slot(&self, address: &Address, slot: &U256) -> Option<U256> {
            self.0.get(address).map(|(_, _, s)| s.get(slot).copied().unwrap_or_default())
        }
    }

    /// A node store that records what it was asked, one by one and in batches, and lacks
    /// the node `hole`.
    #[derive(Default)]
    struct Recording {
        nodes: ProofNodes,
        hole: Option<B256>,
        singles: Mutex<Vec<B256>>,
        batches: Mutex<Vec<Vec<B256>>>,
    }

    impl Recording {
        fn take(&self) -> (Vec<B256>, Vec<Vec<B256>>) {
            (
                std::mem::take(&mut *self.singles.lock().unwrap()),
                std::mem::take(&mut *self.batches.lock().unwrap()),
            )
        }
    }

    impl NodeSource for Recording {
        fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
            self.singles.lock().unwrap().push(*hash);
            self.one(hash)
        }

        fn nodes(&self, hashes: &[B256]) -> Vec<Result<Option<Bytes>, NodeSourceError>> {
            self.batches.lock().unwrap().push(hashes.to_vec());
            hashes.iter().map(|hash| self.one(hash)).collect()
        }
    }

    impl Recording {
        fn one(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
            if self.hole == Some(*hash) {
                return Ok(None);
            }
            self.nodes.node(hash)
        }
    }

    fn address(i: u64) -> Address {
        Address::from_word(B256::from(U256::from(i)))
    }

    /// 3,000 accounts, every tenth with 30 slots, one with 3,000 (updated in parallel by the
    /// update, [`crate::PARALLEL_STORAGE_SLOTS`]); its nodes stored in `src`.
    fn world(src: &mut Recording) -> (World, B256) {
        let mut world = World::new();
        for i in 0..3_000u64 {
            let slots = match i {
                7 => 3_000,
                i if i % 10 == 0 => 30,
                _ => 0,
            };
            let storage = (0..slots).map(|s| (U256::from(s), U256::from(s + i + 1))).collect();
            world.insert(address(i), (i, U256::from(i * 3), storage));
        }
        let updates = as_updates(&world);
        let first = update_state_root(EMPTY_ROOT_HASH, &updates, &ProofNodes::default()).unwrap();
        assert_eq!(first.root, oracle(&world));
        src.nodes.extend(first.nodes.into_iter().map(|(_, rlp)| rlp));
        (world, first.root)
    }

    fn as_updates(world: &World) -> Vec<AccountUpdate> {
        world
            .iter()
            .map(|(a, (n, b, s))| AccountUpdate {
                address: *a,
                info: Some((*n, *b, B256::ZERO)),
                wiped: false,
                storage: s.iter().map(|(k, v)| (*k, *v)).collect(),
            })
            .collect()
    }

    /// A block's changes to `world` (applied to it): balances, slots set and new, accounts
    /// new; with `deletions`, slots cleared, an account deleted and one wiped.
    fn block(world: &mut World, rng: &mut StdRng, deletions: bool) -> Vec<AccountUpdate> {
        let mut updates = Vec::new();
        let mut touched = StdHashSet::new();
        for _ in 0..400 {
            let i = rng.random_range(0..3_200u64);
            if i == 7 || !touched.insert(i) {
                continue;
            }
            let (nonce, balance, slots) = world.entry(address(i)).or_default();
            *nonce += 1;
            *balance += U256::from(1);
            let mut storage = Vec::new();
            if i % 10 == 0 {
                for s in [1u64, 5, 40 + rng.random_range(0..10)] {
                    let value = U256::from(rng.random_range(1..1_000u64));
                    slots.insert(U256::from(s), value);
                    storage.push((U256::from(s), value));
                }
                if deletions && i % 20 == 0 && slots.remove(&U256::from(2)).is_some() {
                    storage.push((U256::from(2), U256::ZERO));
                }
            }
            updates.push(AccountUpdate {
                address: address(i),
                info: Some((*nonce, *balance, B256::ZERO)),
                wiped: false,
                storage,
            });
        }
        // The big contract: 100 slots set, with deletions 20 cleared.
        let mut changed = BTreeMap::new();
        for _ in 0..100 {
            let s = U256::from(rng.random_range(0..4_000u64));
            changed.insert(s, U256::from(rng.random_range(1..1_000u64)));
        }
        if deletions {
            for s in 10..30u64 {
                changed.insert(U256::from(s), U256::ZERO);
            }
        }
        let (nonce, _, slots) = world.get_mut(&address(7)).unwrap();
        *nonce += 1;
        for (s, value) in &changed {
            if value.is_zero() {
                slots.remove(s);
            } else {
                slots.insert(*s, *value);
            }
        }
        let storage: Vec<(U256, U256)> = changed.into_iter().collect();
        let (nonce, balance, _) = world[&address(7)];
        updates.push(AccountUpdate {
            address: address(7),
            info: Some((nonce, balance, B256::ZERO)),
            wiped: false,
            storage,
        });
        if deletions {
            for (i, wiped) in [(1_001u64, false), (2_010, true)] {
                if touched.contains(&i) {
                    continue;
                }
                if wiped {
                    let (nonce, balance, slots) = world.get_mut(&address(i)).unwrap();
                    *slots = BTreeMap::from([(U256::from(77), U256::from(1))]);
                    updates.push(AccountUpdate {
                        address: address(i),
                        info: Some((*nonce, *balance, B256::ZERO)),
                        wiped: true,
                        storage: vec![(U256::from(77), U256::from(1))],
                    });
                } else {
                    world.remove(&address(i));
                    updates.push(AccountUpdate {
                        address: address(i),
                        info: None,
                        wiped: false,
                        storage: vec![],
                    });
                }
            }
        }
        updates
    }

    #[test]
    fn a_levels_jobs_go_to_the_pool_in_hash_order_with_their_stops() {
        let mut rng = StdRng::seed_from_u64(7);
        let hashes: Vec<B256> = (0..50).map(|_| B256::from(rng.random::<[u8; 32]>())).collect();
        let jobs: Vec<Job<'_>> = hashes.iter().map(|h| (*h, Vec::new())).collect();
        let sharing: Vec<usize> = (0..hashes.len()).map(|j| 1 + j % 3).collect();
        // Stops in path order, several on one job.
        let stop_jobs: Vec<usize> = (0..200).map(|_| rng.random_range(0..hashes.len())).collect();
        let (sorted, shares, stops) = by_hash(jobs, sharing.clone(), stop_jobs.clone());
        assert!(sorted.windows(2).all(|w| w[0].0 < w[1].0));
        for (before, after) in stop_jobs.iter().zip(&stops) {
            assert_eq!(sorted[*after].0, hashes[*before]);
            assert_eq!(shares[*after], sharing[*before]);
        }
    }

    fn pool() -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap()
    }

    /// With no deletion to collapse a branch, the nodes resolved level by level are those the
    /// update reads one by one without it: exactly, without known priors; with them, less the
    /// leaves the update reads only because a key inserted below one met it first. In at most
    /// one batch per thread and round; the update then reads none, and its root and new nodes
    /// are the same.
    #[test]
    fn resolved_paths_are_the_nodes_the_update_reads() {
        let mut src = Recording::default();
        let (mut world, root) = world(&mut src);
        let before = world.clone();
        let mut rng = StdRng::seed_from_u64(59);
        let updates = block(&mut world, &mut rng, false);
        let pool = pool();
        for with_priors in [false, true] {
            let priors: &dyn PriorValues = if with_priors { &Priors(&before) } else { &() };
            src.take();
            let mut plain = StateTrie::new(root);
            let expected = plain.update_with(&updates, priors, &src).unwrap();
            let (walked, none) = src.take();
            assert!(none.is_empty());
            assert_eq!(expected.root, oracle(&world));

            let mut trie = StateTrie::new(root);
            let stats = trie.resolve_paths(&updates, priors, &src, &pool);
            let (singles, batches) = src.take();
            assert!(singles.is_empty(), "{} single reads while resolving", singles.len());
            assert!(batches.len() <= stats.rounds * 4, "{} batches, {stats:?}", batches.len());
            let resolved: StdHashSet<B256> = batches.into_iter().flatten().collect();
            assert_eq!(resolved.len(), stats.nodes);
            let walked: StdHashSet<B256> = walked.into_iter().collect();
            // Every node resolved is one the update reads; the update may read besides a leaf
            // known before the block, where a key inserted below it meets it first (the walk
            // recognises a leaf only for its own key).
            let extra: Vec<_> = resolved.difference(&walked).collect();
            assert!(extra.is_empty(), "priors {with_priors}: {} resolved, not walked", extra.len());
            for hash in walked.difference(&resolved) {
                let rlp = src.nodes.node(hash).unwrap().unwrap();
                assert!(with_priors, "without priors, {hash} walked and not resolved");
                assert!(matches!(decode_node(&rlp), Ok(Node::Leaf(_))), "{hash} not resolved");
            }
            assert!(stats.rounds >= 5, "{stats:?}");

            let mut got = trie.update_with(&updates, priors, &src).unwrap();
            let (singles, _) = src.take();
            assert!(singles.is_empty(), "{} nodes read after resolving", singles.len());
            let mut expected = expected;
            expected.nodes.sort_unstable();
            got.nodes.sort_unstable();
            assert_eq!(got, expected);
        }
    }

    /// Three blocks with deletions, a wiped and a deleted account, through a kept trie pruned
    /// between blocks: with a read pool every root is the oracle's and the one computed
    /// without it, and the updates read one by one only the siblings their deletions collapse
    /// branches onto.
    #[test]
    fn kept_trie_with_a_read_pool_roots_as_without() {
        let mut src = Recording::default();
        let (mut world, mut root) = world(&mut src);
        let mut rng = StdRng::seed_from_u64(7_928);
        let depth = PruneDepth { accounts: 2, storage: 1 };
        let plain = PreservedTrie::new(depth, 8);
        let reading = PreservedTrie::new(depth, 8).with_read_pool(pool());
        for _ in 0..3 {
            let before = world.clone();
            let updates = block(&mut world, &mut rng, true);
            let priors = Priors(&before);
            src.take();
            let (expected, _) = plain.update_state_root(root, &updates, &priors, &src);
            let expected = expected.unwrap();
            let (walked, _) = src.take();
            let (got, _) = reading.update_state_root(root, &updates, &priors, &src);
            let got = got.unwrap();
            let (singles, batches) = src.take();
            assert_eq!(got.root, oracle(&world));
            assert_eq!(got.root, expected.root);
            assert!(!batches.is_empty());
            assert!(
                singles.len() * 10 < walked.len(),
                "{} of {} nodes read one by one",
                singles.len(),
                walked.len()
            );
            src.nodes.extend(got.nodes.into_iter().map(|(_, rlp)| rlp));
            root = got.root;
        }
    }

    /// A node the store lacks is left as its hash: the update that follows reports it, naming
    /// the account whose path holds it.
    #[test]
    fn a_missing_node_is_reported_by_the_update() {
        let mut src = Recording::default();
        let (mut world, root) = world(&mut src);
        let mut rng = StdRng::seed_from_u64(1);
        let updates = block(&mut world, &mut rng, false);
        // Drop the first node that a walk to the first account reads below the root.
        let mut probe = StateTrie::new(root);
        probe.update_with(&updates[..1], &(), &src).unwrap();
        let (walked, _) = src.take();
        let lost = walked[1];
        src.hole = Some(lost);
        let holes = src;
        let mut trie = StateTrie::new(root);
        trie.resolve_paths(&updates, &(), &holes, &pool());
        let err = trie.update_with(&updates, &(), &holes).unwrap_err();
        match err {
            crate::StateRootError::Account {
                address,
                source: TrieError::MissingNode { hash, .. },
            } => {
                assert_eq!(hash, lost);
                assert_eq!(address, updates[0].address);
            }
            other => panic!("{other}"),
        }
    }
}
