//! A trie built from its entries in key order, in one pass, without holding the trie (geth's
//! `StackTrie`): what snap sync needs twice — to check a range of leaves against a root with the
//! subtrees its proof gives beside them ([`crate::verify_range_proof`]), and to write the nodes
//! of whole account and storage tries from the flat state it downloaded.
//!
//! Only the branches on the path of the last entry are open at any time (at most 64); every
//! other node is final once the next entry's key departs from it, and is encoded, hashed and
//! handed to the caller's sink then. An entry is a leaf (a full key and its value) or a
//! subtree known only by its reference (a path, the child slot of a branch, and the node's
//! hash or embedded encoding).

use alloy_primitives::{keccak256, B256};
use alloy_trie::{
    nodes::{BranchNodeRef, ExtensionNodeRef, LeafNodeRef, RlpNode},
    Nibbles, TrieMask, EMPTY_ROOT_HASH,
};

/// Why an entry cannot be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// Keys must ascend strictly.
    #[error("entry {index} does not come after the one before it")]
    Unordered {
        /// Position of the entry among those added.
        index: usize,
    },
    /// No entry's path may be a prefix of another's.
    #[error("entry {index}'s path and the one before it are prefixes of one another")]
    Prefix {
        /// Position of the entry among those added.
        index: usize,
    },
    /// A leaf's value must not be empty (an empty value is a deletion, not a leaf).
    #[error("entry {index} is a leaf with an empty value")]
    EmptyValue {
        /// Position of the entry among those added.
        index: usize,
    },
}

/// What sits at an entry's path.
#[derive(Debug, Clone)]
enum Item {
    /// A leaf's value.
    Leaf(Vec<u8>),
    /// A subtree's reference.
    Subtree(RlpNode),
}

/// A branch whose children are not all known yet.
#[derive(Debug)]
struct Open {
    depth: usize,
    children: [Option<RlpNode>; 16],
}

/// Builds a trie from entries in key order; each final node whose encoding is 32 bytes or
/// more (those referenced by hash), and the root, go to `sink(hash, rlp)` as they are finished.
pub struct TrieBuilder<F: FnMut(B256, &[u8])> {
    sink: F,
    pending: Option<(Nibbles, Item)>,
    stack: Vec<Open>,
    buf: Vec<u8>,
    added: usize,
}

impl<F: FnMut(B256, &[u8])> std::fmt::Debug for TrieBuilder<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrieBuilder")
            .field("added", &self.added)
            .field("open_branches", &self.stack.len())
            .finish_non_exhaustive()
    }
}

impl TrieBuilder<fn(B256, &[u8])> {
    /// A builder that only computes the root.
    pub fn root_only() -> Self {
        Self::new(|_, _| {})
    }
}

impl<F: FnMut(B256, &[u8])> TrieBuilder<F> {
    /// A builder handing its nodes to `sink`.
    pub fn new(sink: F) -> Self {
        Self { sink, pending: None, stack: Vec::new(), buf: Vec::with_capacity(600), added: 0 }
    }

    /// Entries added so far.
    pub fn added(&self) -> usize {
        self.added
    }

    /// Adds the leaf `key` (a full key: 64 nibbles in Ethereum's tries) with `value`.
    ///
    /// # Errors
    /// [`BuildError`] when `key` does not follow the entry before it or `value` is empty.
    pub fn add_leaf(&mut self, key: Nibbles, value: &[u8]) -> Result<(), BuildError> {
        if value.is_empty() {
            return Err(BuildError::EmptyValue { index: self.added });
        }
        self.add(key, Item::Leaf(value.to_vec()))
    }

    /// Adds the subtree at `path` (a branch's child slot) known by its reference `node`.
    ///
    /// # Errors
    /// [`BuildError`] when `path` does not follow the entry before it.
    pub fn add_subtree(&mut self, path: Nibbles, node: RlpNode) -> Result<(), BuildError> {
        self.add(path, Item::Subtree(node))
    }

    fn add(&mut self, path: Nibbles, item: Item) -> Result<(), BuildError> {
        let index = self.added;
        if let Some((prev, prev_item)) = self.pending.take() {
            if path <= prev {
                self.pending = Some((prev, prev_item));
                return Err(BuildError::Unordered { index });
            }
            let common = prev.common_prefix_length(&path);
            if common >= prev.len() || common >= path.len() {
                self.pending = Some((prev, prev_item));
                return Err(BuildError::Prefix { index });
            }
            self.place(&prev, prev_item, common);
        }
        self.pending = Some((path, item));
        self.added += 1;
        Ok(())
    }

    /// Puts the entry at `path` into its parent branch, knowing that the next entry departs
    /// from it at depth `next`, and finishes the branches below that depth.
    fn place(&mut self, path: &Nibbles, item: Item, next: usize) {
        let parent = self.parent(next);
        let node = self.encode_node(&path.slice(parent + 1..), item);
        self.attach(parent, path, node);
        while let Some(open) = self.stack.pop_if(|open| open.depth > next) {
            let branch = self.encode_branch(&open);
            let parent = self.parent(next);
            let node = self.extend(&path.slice(parent + 1..open.depth), branch);
            self.attach(parent, path, node);
        }
    }

    /// The depth of the branch that takes the next child: the deepest open branch when it is
    /// at `next` or below it, else a new branch at `next`.
    fn parent(&mut self, next: usize) -> usize {
        match self.stack.last() {
            Some(open) if open.depth >= next => open.depth,
            _ => {
                self.stack.push(Open { depth: next, children: Default::default() });
                next
            }
        }
    }

    fn attach(&mut self, depth: usize, path: &Nibbles, node: RlpNode) {
        let open = self.stack.last_mut().expect("a parent branch is open");
        debug_assert_eq!(open.depth, depth);
        open.children[path.get_unchecked(depth) as usize] = Some(node);
    }

    /// The trie's root hash, with the nodes not yet handed to the sink (the root's always,
    /// even when its encoding is shorter than 32 bytes); the empty trie's root without entries.
    pub fn finish(mut self) -> B256 {
        let Some((path, item)) = self.pending.take() else { return EMPTY_ROOT_HASH };
        if self.stack.is_empty() {
            let node = self.encode_node(&path, item);
            return self.root_of(node);
        }
        let depth = self.stack.last().expect("not empty").depth;
        let node = self.encode_node(&path.slice(depth + 1..), item);
        self.attach(depth, &path, node);
        loop {
            let open = self.stack.pop().expect("not empty");
            let branch = self.encode_branch(&open);
            match self.stack.last() {
                Some(parent) => {
                    let parent = parent.depth;
                    let node = self.extend(&path.slice(parent + 1..open.depth), branch);
                    self.attach(parent, &path, node);
                }
                None => {
                    let node = self.extend(&path.slice(..open.depth), branch);
                    return self.root_of(node);
                }
            }
        }
    }

    /// The hash of the root node whose reference is `node` (its encoding handed to the sink
    /// when it is embedded, i.e. shorter than 32 bytes: a root is always stored by hash).
    fn root_of(&mut self, node: RlpNode) -> B256 {
        match node.as_hash() {
            Some(hash) => hash,
            None => {
                let hash = keccak256(node.as_slice());
                (self.sink)(hash, node.as_slice());
                hash
            }
        }
    }

    /// An entry's node, `key` being the rest of its path (under its parent, or the whole path
    /// at the root).
    fn encode_node(&mut self, key: &Nibbles, item: Item) -> RlpNode {
        match item {
            Item::Leaf(value) => {
                self.buf.clear();
                let node = LeafNodeRef::new(key, &value).rlp(&mut self.buf);
                self.emit(node)
            }
            Item::Subtree(node) => self.extend(key, node),
        }
    }

    /// `node` behind an extension of `key` (`node` itself for an empty key).
    fn extend(&mut self, key: &Nibbles, node: RlpNode) -> RlpNode {
        if key.is_empty() {
            return node;
        }
        self.buf.clear();
        let ext = ExtensionNodeRef::new(key, node.as_slice()).rlp(&mut self.buf);
        self.emit(ext)
    }

    fn encode_branch(&mut self, open: &Open) -> RlpNode {
        let mut mask = TrieMask::default();
        let mut children = Vec::with_capacity(16);
        for (i, child) in open.children.iter().enumerate() {
            if let Some(child) = child {
                mask.set_bit(i as u8);
                children.push(child.clone());
            }
        }
        self.buf.clear();
        let node = BranchNodeRef::new(&children, mask).rlp(&mut self.buf);
        self.emit(node)
    }

    /// Hands the node just encoded in `buf` to the sink when it is referenced by hash.
    fn emit(&mut self, node: RlpNode) -> RlpNode {
        if let Some(hash) = node.as_hash() {
            (self.sink)(hash, &self.buf);
        }
        node
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NodeSource, NodeSourceError, Trie};
    use alloy_primitives::{map::HashMap, Bytes};
    use rand::{Rng, SeedableRng};

    /// The nodes the builder handed over, by the hash it gave (a wrong hash is not found).
    struct Nodes(HashMap<B256, Bytes>);

    impl NodeSource for Nodes {
        fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
            Ok(self.0.get(hash).cloned())
        }
    }

    fn random_leaves(n: usize, seed: u64) -> Vec<(B256, Vec<u8>)> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut leaves: Vec<(B256, Vec<u8>)> = (0..n)
            .map(|_| {
                let len = rng.random_range(1..40);
                (B256::from(rng.random::<[u8; 32]>()), (0..len).map(|_| rng.random()).collect())
            })
            .collect();
        leaves.sort();
        leaves.dedup_by_key(|(k, _)| *k);
        leaves
    }

    /// Every size from the empty trie to thousands of leaves: the same root as the trie of
    /// `mpt.rs` built by inserts, and every node of that trie handed to the sink (so a trie
    /// read from them alone finds every leaf).
    #[test]
    fn matches_inserted_trie_and_emits_every_node() {
        for (n, seed) in [(0, 1), (1, 2), (2, 3), (3, 4), (17, 5), (300, 6), (5000, 7)] {
            let leaves = random_leaves(n, seed);
            let mut reference = Trie::default();
            let none = crate::ProofNodes::default();
            for (k, v) in &leaves {
                reference.insert(&Nibbles::unpack(k), v.clone(), &none).unwrap();
            }
            let mut nodes = HashMap::default();
            let mut builder = TrieBuilder::new(|h, rlp: &[u8]| {
                drop(nodes.insert(h, Bytes::copy_from_slice(rlp)))
            });
            for (k, v) in &leaves {
                builder.add_leaf(Nibbles::unpack(k), v).unwrap();
            }
            let root = builder.finish();
            assert_eq!(root, reference.root(), "{n} leaves");
            if n > 0 {
                let src = Nodes(nodes);
                for (k, v) in &leaves {
                    assert_eq!(
                        Trie::new(root).get(&Nibbles::unpack(k), &src).unwrap().as_ref(),
                        Some(v)
                    );
                }
            }
        }
    }

    /// A subtree given by its hash stands for its leaves.
    #[test]
    fn subtrees_stand_for_their_leaves() {
        let leaves = random_leaves(2000, 9);
        let mut full = TrieBuilder::root_only();
        for (k, v) in &leaves {
            full.add_leaf(Nibbles::unpack(k), v).unwrap();
        }
        let root = full.finish();
        // The subtree under the first leaf's first nibble, built alone: a trie of the same
        // leaves at depth 1 whose node reference is what the parent branch holds.
        let first = Nibbles::unpack(leaves[0].0).get_unchecked(0);
        let (inside, rest): (Vec<_>, Vec<_>) =
            leaves.iter().partition(|(k, _)| Nibbles::unpack(k).get_unchecked(0) == first);
        let mut reference = Trie::default();
        let none = crate::ProofNodes::default();
        for (k, v) in &leaves {
            reference.insert(&Nibbles::unpack(k), v.clone(), &none).unwrap();
        }
        let mut sub = Trie::default();
        for (k, v) in &inside {
            sub.insert(&Nibbles::unpack(k).slice(1..), v.clone(), &none).unwrap();
        }
        let (sub_root, _) = sub.root_with_nodes();
        let mut partial = TrieBuilder::root_only();
        partial.add_subtree(Nibbles::from_nibbles([first]), RlpNode::word_rlp(&sub_root)).unwrap();
        for (k, v) in rest {
            partial.add_leaf(Nibbles::unpack(k), v).unwrap();
        }
        assert_eq!(partial.finish(), root);
    }

    #[test]
    fn refuses_disorder_prefixes_and_empty_values() {
        let mut b = TrieBuilder::root_only();
        b.add_leaf(Nibbles::unpack(B256::with_last_byte(2)), &[1]).unwrap();
        assert_eq!(
            b.add_leaf(Nibbles::unpack(B256::with_last_byte(1)), &[1]),
            Err(BuildError::Unordered { index: 1 })
        );
        assert_eq!(
            b.add_subtree(Nibbles::from_nibbles([0]), RlpNode::word_rlp(&B256::ZERO)),
            Err(BuildError::Unordered { index: 1 })
        );
        assert_eq!(
            b.add_leaf(Nibbles::unpack(B256::with_last_byte(3)), &[]),
            Err(BuildError::EmptyValue { index: 1 })
        );
        let mut b = TrieBuilder::root_only();
        b.add_subtree(Nibbles::from_nibbles([0]), RlpNode::word_rlp(&B256::ZERO)).unwrap();
        assert_eq!(
            b.add_leaf(Nibbles::unpack(B256::with_last_byte(3)), &[1]),
            Err(BuildError::Prefix { index: 1 })
        );
    }
}
