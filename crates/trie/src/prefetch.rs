//! Reading ahead the trie nodes a state root will walk: every node on the paths to a block's
//! accounts and, under each account's storage root, to its slots — read level by level, each
//! level's nodes all at once on a pool of I/O threads.
//!
//! A state-root update walks its paths one node after another, each child found in its parent:
//! cold, every node is a read the walk waits for, and a trie of millions of entries has four to
//! eight levels. The keys are known before the walk (a block's BAL names them), so the nodes can
//! be read ahead: the root, then all the children the keys go through, then theirs, as many
//! reads in flight as the pool has threads. The reads go through the [`NodeSource`], whose own
//! cache (the store's) then answers the walk from memory. geth's trie prefetcher and reth's
//! multiproof workers read ahead in the same way.
//!
//! Flow: targets (hashed address, hashed slots) → the account trie from `root`, level by level
//! → at an account's leaf its storage root → that storage trie, level by level, in the same
//! rounds → [`PrefetchStats`].

use crate::mpt::{decode_node, Node, NodeSource, TrieError};
use alloy_primitives::{map::HashMap, B256};
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use rayon::prelude::*;

/// One account whose trie path, and whose slots' paths in its storage trie, are read ahead.
#[derive(Debug, Clone, Default)]
pub struct PrefetchTarget {
    /// keccak256 of the address (the account trie's key).
    pub account: B256,
    /// keccak256 of each slot (the storage trie's keys).
    pub slots: Vec<B256>,
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
/// answers stays in its cache for the walk.
///
/// # Errors
/// [`TrieError::Source`] when the source fails, [`TrieError::Decode`] for a node that does not
/// decode.
pub fn prefetch_paths(
    src: &(dyn NodeSource + Sync),
    root: B256,
    targets: &[PrefetchTarget],
    pool: &rayon::ThreadPool,
) -> Result<PrefetchStats, TrieError> {
    let mut stats = PrefetchStats::default();
    if root == EMPTY_ROOT_HASH || targets.is_empty() {
        return Ok(stats);
    }
    let accounts: Vec<Nibbles> = targets.iter().map(|t| Nibbles::unpack(t.account)).collect();
    let slots: Vec<Vec<Nibbles>> =
        targets.iter().map(|t| t.slots.iter().map(Nibbles::unpack).collect()).collect();
    let key = |(t, s): Key| match s {
        None => &accounts[t],
        Some(s) => &slots[t][s],
    };
    let mut frontier: Vec<Pending> =
        vec![(root, 0, (0..targets.len()).map(|t| (t, None)).collect())];
    while !frontier.is_empty() {
        stats.rounds += 1;
        stats.nodes += frontier.len();
        let read: Vec<_> =
            pool.install(|| frontier.par_iter().map(|(hash, ..)| src.node(hash)).collect());
        let mut next = Vec::new();
        for ((hash, depth, keys), rlp) in frontier.into_iter().zip(read) {
            let rlp = rlp.map_err(|source| TrieError::Source { hash, source })?;
            let Some(rlp) = rlp else { continue };
            let node =
                decode_node(&rlp).map_err(|e| TrieError::Decode { hash, reason: e.to_string() })?;
            descend(&node, depth, keys, &key, &slots, &mut next)?;
        }
        // A node reached twice (identical storage tries share their nodes) is read once.
        let mut merged: HashMap<(B256, usize), Vec<Key>> = HashMap::default();
        for (hash, depth, keys) in next {
            merged.entry((hash, depth)).or_default().extend(keys);
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

    /// The nodes prefetched are exactly those a walk to the same accounts and slots reads: every
    /// node the walk asks for was asked by the prefetch first, and no other.
    #[test]
    fn prefetch_reads_every_node_a_walk_to_the_keys_reads() {
        let mut src = Recording::default();
        // 2,000 accounts; every tenth holds 50 slots.
        let mut storage_roots = std::collections::HashMap::new();
        for a in (0..2_000u64).step_by(10) {
            let mut trie = Trie::new(EMPTY_ROOT_HASH);
            for s in 0..50u64 {
                let key = Nibbles::unpack(keccak256(B256::from(U256::from(s))));
                trie.insert(&key, alloy_rlp::encode(U256::from(s + 1)), &src).unwrap();
            }
            let (root, nodes) = trie.root_with_nodes();
            store(&mut src, nodes);
            storage_roots.insert(a, root);
        }
        let address = |a: u64| keccak256(a.to_be_bytes());
        let mut accounts = Trie::new(EMPTY_ROOT_HASH);
        for a in 0..2_000u64 {
            let account = TrieAccount {
                nonce: a,
                balance: U256::from(a),
                storage_root: storage_roots.get(&a).copied().unwrap_or(EMPTY_ROOT_HASH),
                code_hash: alloy_primitives::KECCAK256_EMPTY,
            };
            accounts
                .insert(&Nibbles::unpack(address(a)), alloy_rlp::encode(account), &src)
                .unwrap();
        }
        let (root, nodes) = accounts.root_with_nodes();
        store(&mut src, nodes);

        // Targets: some accounts with slots (a few slots each), some without, one absent.
        let mut targets: Vec<PrefetchTarget> = [0u64, 10, 20, 1_990, 7, 13, 5_000]
            .iter()
            .map(|&a| PrefetchTarget {
                account: address(a),
                slots: if a % 10 == 0 && a < 2_000 {
                    (0..5u64).map(|s| keccak256(B256::from(U256::from(s * 7)))).collect()
                } else {
                    Vec::new()
                },
            })
            .collect();
        targets[0].slots.push(keccak256(B256::from(U256::from(999u64)))); // absent slot
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        let stats = prefetch_paths(&src, root, &targets, &pool).unwrap();
        let prefetched = std::mem::take(&mut *src.asked.lock().unwrap());
        assert!(stats.rounds >= 4, "{stats:?}");

        // The walk: every account and slot read from fresh tries.
        let mut walk = Trie::new(root);
        for t in &targets {
            let value = walk.get(&Nibbles::unpack(t.account), &src).unwrap();
            let Some(value) = value else { continue };
            let account: TrieAccount = alloy_rlp::decode_exact(&value).unwrap();
            let mut storage = Trie::new(account.storage_root);
            for s in &t.slots {
                storage.get(&Nibbles::unpack(*s), &src).unwrap();
            }
        }
        let walked = std::mem::take(&mut *src.asked.lock().unwrap());
        assert!(!walked.is_empty());
        let missed: Vec<_> = walked.difference(&prefetched).collect();
        assert!(missed.is_empty(), "{} nodes the walk read were not prefetched", missed.len());
        let extra: Vec<_> = prefetched.difference(&walked).collect();
        assert!(extra.is_empty(), "{} nodes prefetched that the walk never reads", extra.len());
    }
}
