//! Checking a range of leaves against a trie root with the boundary proofs snap serves (geth's
//! `trie.VerifyRangeProof`, the rule snap/1's `AccountRange` and `StorageRanges` answers are
//! held to).
//!
//! The answer to "the leaves from `origin`" is a run of consecutive leaves, the first at or
//! after `origin`, with the nodes on the paths to `origin` and to the last leaf. Along those two
//! paths every subtree lies wholly left of the range, wholly right of it, or inside it. The
//! ones outside are taken as the proof gives them (by reference); the ones inside must be
//! exactly the leaves given. Building the trie of those subtrees and leaves
//! ([`crate::TrieBuilder`]) and finding the root asked for proves that no leaf inside the range
//! was left out or changed; a subtree right of the range says that more leaves follow.

use crate::{
    builder::{BuildError, TrieBuilder},
    EncodedNode,
};
use alloy_primitives::{keccak256, map::HashMap, Bytes, B256};
use alloy_rlp::Decodable;
use alloy_trie::{
    nodes::{RlpNode, TrieNode},
    Nibbles, EMPTY_ROOT_HASH,
};
use std::cmp::Ordering;

/// Why a range and its proof do not prove what they claim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeProofError {
    /// Keys and values differ in number.
    #[error("{keys} keys but {values} values")]
    Lengths {
        /// Keys given.
        keys: usize,
        /// Values given.
        values: usize,
    },
    /// The first key lies below the origin asked for.
    #[error("the first key {key} lies below the origin {origin}")]
    BelowOrigin {
        /// The first key.
        key: B256,
        /// The origin.
        origin: B256,
    },
    /// The leaves and subtrees cannot form a trie (out of order, an empty value).
    #[error("the range does not form a trie: {0}")]
    Build(#[from] BuildError),
    /// A node on a boundary path is not in the proof.
    #[error("the proof lacks the node {hash} at path {path}")]
    MissingNode {
        /// The node's hash.
        hash: B256,
        /// Its path, in hex nibbles.
        path: String,
    },
    /// A proof node does not decode, or runs past a key's length.
    #[error("the proof node at path {path} is malformed: {reason}")]
    Malformed {
        /// Its path, in hex nibbles.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The leaves and the proof give another root.
    #[error("the range gives the root {got}, not {expected}")]
    RootMismatch {
        /// The root asked for.
        expected: B256,
        /// The root the range gives.
        got: B256,
    },
    /// No leaves were given, but the trie has leaves after the origin.
    #[error("no leaves were given, but the trie holds leaves after the origin")]
    EmptyButMore,
}

/// Where a subtree lies against the range `[left, right]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
    Inside,
    /// On the path of a bound: resolved further.
    Edge,
}

fn side(path: &Nibbles, left: &Nibbles, right: &Nibbles) -> Side {
    let n = path.len();
    let l = left.slice(..n);
    let r = right.slice(..n);
    match (path.cmp(&l), path.cmp(&r)) {
        (Ordering::Less, _) => Side::Left,
        (_, Ordering::Greater) => Side::Right,
        (Ordering::Equal, _) | (_, Ordering::Equal) => Side::Edge,
        _ => Side::Inside,
    }
}

/// A leaf's place: its full key compared with the bounds, inside when between them.
fn leaf_side(key: &Nibbles, left: &Nibbles, right: &Nibbles) -> Side {
    if key < left {
        Side::Left
    } else if key > right {
        Side::Right
    } else {
        Side::Inside
    }
}

fn hex(path: &Nibbles) -> String {
    path.iter().map(|n| format!("{n:x}")).collect()
}

/// The subtrees off the two boundary paths.
struct Boundaries<'a> {
    proof: &'a HashMap<B256, Bytes>,
    left: Nibbles,
    right: Nibbles,
    /// Subtrees left of the range, in key order.
    lefts: Vec<(Nibbles, RlpNode)>,
    /// Subtrees right of the range, in key order.
    rights: Vec<(Nibbles, RlpNode)>,
}

impl Boundaries<'_> {
    fn outside(&mut self, path: Nibbles, node: &RlpNode, side: Side) {
        match side {
            Side::Left => self.lefts.push((path, node.clone())),
            Side::Right => self.rights.push((path, node.clone())),
            Side::Inside | Side::Edge => {}
        }
    }

    fn visit(&mut self, node: &RlpNode, path: Nibbles) -> Result<(), RangeProofError> {
        let at = side(&path, &self.left, &self.right);
        if at != Side::Edge {
            self.outside(path, node, at);
            return Ok(());
        }
        let malformed = |reason: String| RangeProofError::Malformed { path: hex(&path), reason };
        let rlp = match node.as_hash() {
            Some(hash) => self
                .proof
                .get(&hash)
                .ok_or_else(|| RangeProofError::MissingNode { hash, path: hex(&path) })?
                .clone(),
            None => Bytes::copy_from_slice(node.as_slice()),
        };
        let decoded = TrieNode::decode(&mut &rlp[..]).map_err(|e| malformed(e.to_string()))?;
        match decoded {
            TrieNode::EmptyRoot => {
                if !path.is_empty() {
                    return Err(malformed("an empty node below the root".into()));
                }
            }
            TrieNode::Branch(branch) => {
                if path.len() >= 64 {
                    return Err(malformed("a branch at the keys' full length".into()));
                }
                let mut children = branch.stack.iter();
                for i in 0..16u8 {
                    if branch.state_mask.is_bit_set(i) {
                        let child = children
                            .next()
                            .ok_or_else(|| malformed("mask and children disagree".into()))?;
                        let mut child_path = path;
                        child_path.push(i);
                        self.visit(child, child_path)?;
                    }
                }
            }
            TrieNode::Extension(ext) => {
                if ext.key.is_empty() || path.len() + ext.key.len() >= 64 {
                    return Err(malformed("an extension past the keys' length".into()));
                }
                let end = path.join(&ext.key);
                match side(&end, &self.left, &self.right) {
                    Side::Edge => self.visit(&ext.child, end)?,
                    other => self.outside(path, node, other),
                }
            }
            TrieNode::Leaf(leaf) => {
                if path.len() + leaf.key.len() != 64 {
                    return Err(malformed("a leaf whose key is not 64 nibbles".into()));
                }
                let key = path.join(&leaf.key);
                let at = leaf_side(&key, &self.left, &self.right);
                self.outside(path, node, at);
            }
        }
        Ok(())
    }
}

/// Checks that `keys` (ascending) with `values` are every leaf of the trie `root` from
/// `origin` to the last key, given the `proof` nodes of the paths to `origin` and to the last
/// key; answers whether the trie holds leaves after the last key. Without a proof the keys must
/// be the whole trie.
///
/// # Errors
/// [`RangeProofError`]: whatever makes the claim unproven — a root that differs, a missing or
/// malformed proof node, keys out of order or below the origin, an empty value, no keys while
/// the trie holds some after the origin.
pub fn verify_range_proof<V: AsRef<[u8]>>(
    root: B256,
    origin: B256,
    keys: &[B256],
    values: &[V],
    proof: &[Bytes],
) -> Result<bool, RangeProofError> {
    verify_into(root, origin, keys, values, proof, TrieBuilder::root_only())
}

/// [`verify_range_proof`], answering also the nodes the check built: every node on the paths
/// from the range's leaves to the root, each hashed (nodes under 32 bytes are inside their
/// parent's encoding, the root is always among them). Once the root is found, each is a node
/// of the trie `root`; over ranges that cover all of a trie's leaves they are all of its
/// nodes (every node lies above some leaf), which is how snap sync writes a trie as it
/// downloads it. Nothing is answered when the check fails.
///
/// # Errors
/// As [`verify_range_proof`].
pub fn verify_range_proof_nodes<V: AsRef<[u8]>>(
    root: B256,
    origin: B256,
    keys: &[B256],
    values: &[V],
    proof: &[Bytes],
) -> Result<(bool, Vec<EncodedNode>), RangeProofError> {
    let mut nodes = Vec::new();
    let builder =
        TrieBuilder::new(|hash, rlp: &[u8]| nodes.push((hash, Bytes::copy_from_slice(rlp))));
    let more = verify_into(root, origin, keys, values, proof, builder)?;
    Ok((more, nodes))
}

/// The check of [`verify_range_proof`] with `builder` building the trie.
fn verify_into<V: AsRef<[u8]>, F: FnMut(B256, &[u8])>(
    root: B256,
    origin: B256,
    keys: &[B256],
    values: &[V],
    proof: &[Bytes],
    mut builder: TrieBuilder<F>,
) -> Result<bool, RangeProofError> {
    if keys.len() != values.len() {
        return Err(RangeProofError::Lengths { keys: keys.len(), values: values.len() });
    }
    if let Some(&first) = keys.first() {
        if first < origin {
            return Err(RangeProofError::BelowOrigin { key: first, origin });
        }
    }
    if proof.is_empty() {
        for (key, value) in keys.iter().zip(values) {
            builder.add_leaf(Nibbles::unpack(key), value.as_ref())?;
        }
        return check_root(root, builder.finish()).map(|()| false);
    }
    let nodes: HashMap<B256, Bytes> = proof.iter().map(|n| (keccak256(n), n.clone())).collect();
    let left = Nibbles::unpack(origin);
    let right = keys.last().map_or(left, Nibbles::unpack);
    let mut boundaries =
        Boundaries { proof: &nodes, left, right, lefts: Vec::new(), rights: Vec::new() };
    if root != EMPTY_ROOT_HASH {
        boundaries.visit(&RlpNode::word_rlp(&root), Nibbles::default())?;
    }
    let more = !boundaries.rights.is_empty();
    if keys.is_empty() && more {
        return Err(RangeProofError::EmptyButMore);
    }
    for (path, node) in boundaries.lefts {
        builder.add_subtree(path, node)?;
    }
    for (key, value) in keys.iter().zip(values) {
        builder.add_leaf(Nibbles::unpack(key), value.as_ref())?;
    }
    for (path, node) in boundaries.rights {
        builder.add_subtree(path, node)?;
    }
    check_root(root, builder.finish()).map(|()| more)
}

fn check_root(expected: B256, got: B256) -> Result<(), RangeProofError> {
    if expected == got {
        Ok(())
    } else {
        Err(RangeProofError::RootMismatch { expected, got })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ProofNodes as Nodes, Trie};
    use rand::{Rng, SeedableRng};

    /// A trie of `n` random leaves, its root and its nodes.
    fn trie(n: usize, seed: u64) -> (Vec<(B256, Vec<u8>)>, B256, Nodes) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut leaves: Vec<(B256, Vec<u8>)> = (0..n)
            .map(|_| (B256::from(rng.random::<[u8; 32]>()), vec![rng.random_range(1..=255u8); 40]))
            .collect();
        leaves.sort();
        let mut t = Trie::default();
        let none = Nodes::default();
        for (k, v) in &leaves {
            t.insert(&Nibbles::unpack(k), v.clone(), &none).unwrap();
        }
        let (root, nodes) = t.root_with_nodes();
        let mut pool = Nodes::default();
        pool.extend(nodes.into_iter().map(|(_, node)| node));
        (leaves, root, pool)
    }

    /// The proof a snap server sends: the path to `origin`, then the path to `last`.
    fn proof(root: B256, nodes: &Nodes, origin: B256, last: Option<B256>) -> Vec<Bytes> {
        let mut out = Trie::new(root).proof(&Nibbles::unpack(origin), nodes).unwrap();
        if let Some(last) = last {
            for node in Trie::new(root).proof(&Nibbles::unpack(last), nodes).unwrap() {
                if !out.contains(&node) {
                    out.push(node);
                }
            }
        }
        out
    }

    fn split(leaves: &[(B256, Vec<u8>)]) -> (Vec<B256>, Vec<Vec<u8>>) {
        leaves.iter().cloned().unzip()
    }

    /// Consecutive proven ranges that cover every leaf give, together, exactly the trie's
    /// hashed nodes: what snap sync writes as it downloads.
    #[test]
    fn the_nodes_of_covering_ranges_are_the_whole_trie() {
        for (n, step) in [(1, 1), (2, 1), (300, 1), (1000, 37), (1000, 1000), (5000, 613)] {
            let (leaves, root, nodes) = trie(n, n as u64);
            let mut t = Trie::default();
            for (k, v) in &leaves {
                t.insert(&Nibbles::unpack(k), v.clone(), &Nodes::default()).unwrap();
            }
            let expected: std::collections::HashSet<(B256, Bytes)> = t
                .root_with_nodes()
                .1
                .into_iter()
                .map(|(_, rlp)| (keccak256(&rlp), rlp))
                .filter(|(hash, rlp)| rlp.len() >= 32 || *hash == root)
                .collect();
            let mut got = std::collections::HashSet::new();
            let mut origin = B256::ZERO;
            for range in leaves.chunks(step) {
                let (keys, values) = split(range);
                let p = if step == n {
                    Vec::new()
                } else {
                    proof(root, &nodes, origin, keys.last().copied())
                };
                let (_, built) =
                    verify_range_proof_nodes(root, origin, &keys, &values, &p).unwrap();
                for (hash, rlp) in built {
                    assert_eq!(keccak256(&rlp), hash);
                    got.insert((hash, rlp));
                }
                origin = plus_one(range[range.len() - 1].0);
            }
            assert_eq!(got, expected, "{n} leaves in ranges of {step}");
        }
    }

    /// A range that does not verify gives no nodes.
    #[test]
    fn a_failed_check_gives_no_nodes() {
        let (leaves, root, nodes) = trie(100, 9);
        let (keys, mut values) = split(&leaves[10..20]);
        let p = proof(root, &nodes, leaves[10].0, keys.last().copied());
        values[3][0] ^= 1;
        assert!(verify_range_proof_nodes(root, leaves[10].0, &keys, &values, &p).is_err());
    }

    #[test]
    fn honest_ranges_verify() {
        let (leaves, root, nodes) = trie(1000, 1);
        for (from, to) in [(0, 10), (0, 1000), (500, 700), (999, 1000), (1, 2), (0, 1)] {
            let range = &leaves[from..to];
            let origin = if from == 0 { B256::ZERO } else { leaves[from].0 };
            let (keys, values) = split(range);
            let p = proof(root, &nodes, origin, keys.last().copied());
            let more = verify_range_proof(root, origin, &keys, &values, &p).unwrap();
            assert_eq!(more, to < 1000, "{from}..{to}");
        }
        // An origin between two leaves, the range starting at the next one.
        let origin = plus_one(leaves[40].0);
        let (keys, values) = split(&leaves[41..90]);
        let p = proof(root, &nodes, origin, keys.last().copied());
        assert!(verify_range_proof(root, origin, &keys, &values, &p).unwrap());
        // The whole trie without a proof.
        let (keys, values) = split(&leaves);
        assert!(!verify_range_proof(root, B256::ZERO, &keys, &values, &[]).unwrap());
        // Nothing after an origin past the last leaf.
        let origin = B256::repeat_byte(0xff);
        let p = proof(root, &nodes, origin, None);
        let none: &[Vec<u8>] = &[];
        assert!(!verify_range_proof(root, origin, &[], none, &p).unwrap());
    }

    #[test]
    fn dishonest_ranges_fail() {
        let (leaves, root, nodes) = trie(1000, 2);
        let (keys, values) = split(&leaves[100..300]);
        let origin = keys[0];
        let p = proof(root, &nodes, origin, keys.last().copied());
        // A leaf left out in the middle, at the start, a value changed, a leaf added.
        for (k, v) in [
            ([&keys[..50], &keys[51..]].concat(), [&values[..50], &values[51..]].concat()),
            (keys[1..].to_vec(), values[1..].to_vec()),
        ] {
            assert!(matches!(
                verify_range_proof(root, origin, &k, &v, &p),
                Err(RangeProofError::RootMismatch { .. })
            ));
        }
        let mut changed = values.clone();
        changed[7][0] ^= 1;
        assert!(verify_range_proof(root, origin, &keys, &changed, &p).is_err());
        let mut extra_keys = keys.clone();
        extra_keys.insert(5, plus_one(keys[4]));
        let mut extra_values = values.clone();
        extra_values.insert(5, vec![1]);
        assert!(verify_range_proof(root, origin, &extra_keys, &extra_values, &p).is_err());
        // The proof of another range, a node missing, a wrong root, no keys while more follow.
        let other = proof(root, &nodes, leaves[600].0, Some(leaves[700].0));
        assert!(verify_range_proof(root, origin, &keys, &values, &other).is_err());
        assert!(matches!(
            verify_range_proof(root, origin, &keys, &values, &p[1..]),
            Err(RangeProofError::MissingNode { .. })
        ));
        assert!(verify_range_proof(B256::repeat_byte(1), origin, &keys, &values, &p).is_err());
        let none: &[Vec<u8>] = &[];
        assert_eq!(
            verify_range_proof(root, origin, &[], none, &proof(root, &nodes, origin, None)),
            Err(RangeProofError::EmptyButMore)
        );
        // Keys below the origin, out of order, a garbage proof node.
        assert!(matches!(
            verify_range_proof(root, keys[1], &keys, &values, &p),
            Err(RangeProofError::BelowOrigin { .. })
        ));
        let mut swapped = keys.clone();
        swapped.swap(3, 4);
        assert!(verify_range_proof(root, origin, &swapped, &values, &p).is_err());
        let mut garbage = p.clone();
        garbage.push(Bytes::from_static(&[0xc3, 0x01, 0x02]));
        assert!(verify_range_proof(root, origin, &keys, &values, &garbage).is_ok());
        // The whole trie claimed without a proof, one leaf short.
        let (all_keys, all_values) = split(&leaves);
        assert!(
            verify_range_proof(root, B256::ZERO, &all_keys[1..], &all_values[1..], &[]).is_err()
        );
    }

    /// Random ranges over random tries, honest and with one leaf dropped.
    #[test]
    fn random_ranges() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for round in 0..200 {
            let n = rng.random_range(1..400);
            let (leaves, root, nodes) = trie(n, 100 + round);
            let from = rng.random_range(0..n);
            let to = rng.random_range(from + 1..=n);
            let origin = if rng.random_bool(0.3) { B256::ZERO } else { leaves[from].0 };
            let from = if origin == B256::ZERO { 0 } else { from };
            let (keys, values) = split(&leaves[from..to]);
            let p = proof(root, &nodes, origin, keys.last().copied());
            assert_eq!(verify_range_proof(root, origin, &keys, &values, &p), Ok(to < n));
            if keys.len() > 2 {
                let drop = rng.random_range(0..keys.len() - 1);
                let mut k = keys.clone();
                let mut v = values.clone();
                k.remove(drop);
                v.remove(drop);
                assert!(verify_range_proof(root, origin, &k, &v, &p).is_err(), "round {round}");
            }
        }
    }

    /// `key + 1` as 256-bit numbers (never called on ff…ff here).
    fn plus_one(key: B256) -> B256 {
        let n = alloy_primitives::U256::from_be_bytes(key.0) + alloy_primitives::U256::from(1);
        B256::from(n.to_be_bytes::<32>())
    }
}
