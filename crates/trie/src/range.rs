//! A trie read in key order, and single nodes read by path: what serving snap (devp2p's snap/1
//! and snap/2) needs. `GetAccountRange` and `GetStorageRanges` walk the leaves of a state or
//! storage trie from an origin ([`walk_leaves`]); `GetTrieNodes` asks for the node at a path
//! ([`node_at_path`]).
//!
//! Both read the encoded nodes of a [`NodeSource`] directly from the root named by its hash:
//! nodes are addressed by their hash, so a walk sees exactly the trie of that root whatever
//! else the source holds or gains meanwhile. A walk resolves only the subtrees at or after the
//! origin, one node at a time, and stops when the visitor says so.

use crate::mpt::{NodeSource, TrieError};
use alloy_primitives::{Bytes, B256};
use alloy_rlp::Decodable;
use alloy_trie::{
    nodes::{RlpNode, TrieNode},
    EMPTY_ROOT_HASH,
};

/// The encoding of the node `hash`, from `src`.
fn fetch(hash: B256, path: &[u8], src: &dyn NodeSource) -> Result<Bytes, TrieError> {
    src.node(&hash).map_err(|source| TrieError::Source { hash, source })?.ok_or_else(|| {
        TrieError::MissingNode { path: path.iter().map(|n| format!("{n:x}")).collect(), hash }
    })
}

fn decode(rlp: &[u8], hash: B256) -> Result<TrieNode, TrieError> {
    TrieNode::decode(&mut &rlp[..]).map_err(|e| TrieError::Decode { hash, reason: e.to_string() })
}

/// A child reference's encoding: fetched when it is a hash, as it is when embedded.
fn child(r: &RlpNode, path: &[u8], src: &dyn NodeSource) -> Result<(Bytes, B256), TrieError> {
    match r.as_hash() {
        Some(hash) => Ok((fetch(hash, path, src)?, hash)),
        None => Ok((Bytes::copy_from_slice(r.as_slice()), B256::ZERO)),
    }
}

/// Calls `visit(key, value)` for every leaf of the trie `root` whose key is `>= origin`, in
/// ascending key order, until `visit` returns false. `value` is the leaf's value (an account's
/// or a slot's RLP). Keys are 32 bytes (64 nibbles), as in Ethereum's secure tries.
///
/// # Errors
/// [`TrieError::MissingNode`] when `src` lacks a node the walk reaches (for the root: a trie
/// the source does not hold), [`TrieError::Decode`] or [`TrieError::Source`].
pub fn walk_leaves(
    root: B256,
    origin: &B256,
    src: &dyn NodeSource,
    visit: &mut dyn FnMut(B256, &[u8]) -> bool,
) -> Result<(), TrieError> {
    if root == EMPTY_ROOT_HASH {
        return Ok(());
    }
    let origin: Vec<u8> = origin.iter().flat_map(|b| [b >> 4, b & 0x0f]).collect();
    let rlp = fetch(root, &[], src)?;
    let mut path = Vec::with_capacity(64);
    walk(&rlp, root, &mut path, &origin, true, src, visit).map(|_| ())
}

/// Walks the node `rlp` (whose hash is `hash`, zero when embedded) at `path`; `bounded` while
/// `path` equals the origin's first nibbles (then subtrees before the origin are skipped).
/// Returns whether to go on.
fn walk(
    rlp: &[u8],
    hash: B256,
    path: &mut Vec<u8>,
    origin: &[u8],
    bounded: bool,
    src: &dyn NodeSource,
    visit: &mut dyn FnMut(B256, &[u8]) -> bool,
) -> Result<bool, TrieError> {
    match decode(rlp, hash)? {
        TrieNode::EmptyRoot => Ok(true),
        TrieNode::Leaf(leaf) => {
            let depth = path.len();
            path.extend(leaf.key.to_vec());
            let go_on = if path.len() != 64 {
                path.truncate(depth);
                return Err(TrieError::PrefixKey {
                    key: path.iter().map(|n| format!("{n:x}")).collect(),
                });
            } else if bounded && path.as_slice() < origin {
                true
            } else {
                let mut key = B256::ZERO;
                for (i, pair) in path.chunks(2).enumerate() {
                    key[i] = (pair[0] << 4) | pair[1];
                }
                visit(key, &leaf.value)
            };
            path.truncate(depth);
            Ok(go_on)
        }
        TrieNode::Extension(ext) => {
            let depth = path.len();
            path.extend(ext.key.to_vec());
            let mut bounded = bounded;
            if bounded {
                let end = path.len().min(origin.len());
                match path[depth..end].cmp(&origin[depth..end]) {
                    std::cmp::Ordering::Less => {
                        path.truncate(depth);
                        return Ok(true);
                    }
                    std::cmp::Ordering::Greater => bounded = false,
                    std::cmp::Ordering::Equal => {}
                }
            }
            let (rlp, hash) = child(&ext.child, path, src)?;
            let go_on = walk(&rlp, hash, path, origin, bounded, src, visit)?;
            path.truncate(depth);
            Ok(go_on)
        }
        TrieNode::Branch(branch) => {
            let depth = path.len();
            let first = if bounded { origin.get(depth).copied().unwrap_or(0) } else { 0 };
            let mut children = branch.stack.iter();
            for i in 0..16u8 {
                if !branch.state_mask.is_bit_set(i) {
                    continue;
                }
                let r = children.next().ok_or_else(|| TrieError::Decode {
                    hash,
                    reason: "branch mask and children disagree".into(),
                })?;
                if i < first {
                    continue;
                }
                path.push(i);
                let (rlp, child_hash) = child(r, path, src)?;
                let go_on =
                    walk(&rlp, child_hash, path, origin, bounded && i == first, src, visit)?;
                path.truncate(depth);
                if !go_on {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

/// What a trie holds at a path, as snap's `GetTrieNodes` answers it (geth's `Trie::GetNode`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathNode {
    /// The encoding of the node at the path, a node referenced by its hash (or the root).
    Found(Bytes),
    /// The path leads nowhere: it runs into an empty slot, branches off a leaf's or an
    /// extension's key, or continues past a value (answered as an empty entry).
    Missing,
    /// The path ends on a node embedded in its parent (under 32 bytes) or on a leaf's value:
    /// not a node of its own (left out of the answer).
    Embedded,
}

/// The node of the trie `root` at `path`: nibbles from the root (`0..=15`, and `16` for the
/// terminator of a leaf's key as hex-prefix encoding carries it), e.g. decoded by
/// [`compact_to_nibbles`].
///
/// # Errors
/// [`TrieError::MissingNode`] when `src` lacks a node on the path (the root included),
/// [`TrieError::Decode`] or [`TrieError::Source`].
pub fn node_at_path(root: B256, path: &[u8], src: &dyn NodeSource) -> Result<PathNode, TrieError> {
    if root == EMPTY_ROOT_HASH {
        return Ok(PathNode::Missing);
    }
    let mut rlp = fetch(root, &[], src)?;
    let mut hash = root;
    let mut pos = 0;
    loop {
        if pos >= path.len() {
            return Ok(if hash.is_zero() { PathNode::Embedded } else { PathNode::Found(rlp) });
        }
        let (next, next_hash) = match decode(&rlp, hash)? {
            TrieNode::EmptyRoot => return Ok(PathNode::Missing),
            TrieNode::Leaf(leaf) => {
                let mut key = leaf.key.to_vec();
                key.push(16);
                if !path[pos..].starts_with(&key) {
                    return Ok(PathNode::Missing);
                }
                // The value: a path that ends there names no node; one past it, nothing.
                return Ok(if pos + key.len() == path.len() {
                    PathNode::Embedded
                } else {
                    PathNode::Missing
                });
            }
            TrieNode::Extension(ext) => {
                let key = ext.key.to_vec();
                if !path[pos..].starts_with(&key) {
                    return Ok(PathNode::Missing);
                }
                pos += key.len();
                child(&ext.child, &path[..pos], src)?
            }
            TrieNode::Branch(branch) => {
                let i = path[pos];
                if i > 15 || !branch.state_mask.is_bit_set(i) {
                    return Ok(PathNode::Missing);
                }
                let index = (0..i).filter(|j| branch.state_mask.is_bit_set(*j)).count();
                let r = branch.stack.get(index).ok_or_else(|| TrieError::Decode {
                    hash,
                    reason: "branch mask and children disagree".into(),
                })?;
                pos += 1;
                child(r, &path[..pos], src)?
            }
        };
        rlp = next;
        hash = next_hash;
    }
}

/// The nibbles of a hex-prefix ("compact") encoded path (Yellow Paper appendix C), with `16`
/// appended when its flag marks a leaf's key (geth's `compactToHex`); the empty path for an
/// empty input.
pub fn compact_to_nibbles(compact: &[u8]) -> Vec<u8> {
    let Some(first) = compact.first() else { return Vec::new() };
    let mut nibbles: Vec<u8> = compact.iter().flat_map(|b| [b >> 4, b & 0x0f]).collect();
    let flag = first >> 4;
    if flag & 2 != 0 {
        nibbles.push(16);
    }
    // An odd path keeps the flag byte's low nibble; an even one skips it.
    let skip = if flag & 1 != 0 { 1 } else { 2 };
    nibbles.drain(..skip.min(nibbles.len()));
    nibbles
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpt::{ProofNodes, Trie};
    use alloy_primitives::keccak256;
    use alloy_trie::Nibbles;

    /// A trie of `n` keys keccak(i) → [i + 1], with every node it stores.
    fn trie(n: u32) -> (B256, ProofNodes, Vec<(B256, Vec<u8>)>) {
        let mut t = Trie::new(EMPTY_ROOT_HASH);
        let mut leaves = Vec::new();
        for i in 0..n {
            let key = keccak256(i.to_be_bytes());
            let value = alloy_rlp::encode(i + 1);
            t.insert(&Nibbles::unpack(key), value.clone(), &ProofNodes::default()).unwrap();
            leaves.push((key, value));
        }
        let (root, nodes) = t.root_with_nodes();
        let mut src = ProofNodes::default();
        src.extend(nodes.into_iter().map(|(_, rlp)| rlp));
        leaves.sort();
        (root, src, leaves)
    }

    fn collect(root: B256, origin: B256, src: &ProofNodes, max: usize) -> Vec<(B256, Vec<u8>)> {
        let mut out = Vec::new();
        walk_leaves(root, &origin, src, &mut |k, v| {
            out.push((k, v.to_vec()));
            out.len() < max
        })
        .unwrap();
        out
    }

    #[test]
    fn leaves_come_in_key_order_from_any_origin() {
        let (root, src, leaves) = trie(300);
        assert_eq!(collect(root, B256::ZERO, &src, usize::MAX), leaves);
        for (i, (key, _)) in leaves.iter().enumerate().step_by(37) {
            assert_eq!(collect(root, *key, &src, usize::MAX), leaves[i..], "from key {i}");
            let mut after = *key;
            after[31] = after[31].wrapping_add(1);
            let from = leaves.iter().position(|(k, _)| *k >= after).unwrap_or(leaves.len());
            assert_eq!(collect(root, after, &src, usize::MAX), leaves[from..], "past key {i}");
        }
        assert_eq!(collect(root, B256::ZERO, &src, 5), leaves[..5], "the visitor stops it");
        assert!(collect(root, B256::repeat_byte(0xff), &src, usize::MAX).is_empty());
        assert!(collect(EMPTY_ROOT_HASH, B256::ZERO, &src, usize::MAX).is_empty());
        let unknown = walk_leaves(B256::repeat_byte(1), &B256::ZERO, &src, &mut |_, _| true);
        assert!(matches!(unknown, Err(TrieError::MissingNode { .. })));
    }

    #[test]
    fn nodes_are_found_by_path() {
        let (root, src, leaves) = trie(300);
        let root_rlp = src.node(&root).unwrap().unwrap();
        assert_eq!(node_at_path(root, &[], &src).unwrap(), PathNode::Found(root_rlp));
        // The root of 300 keys is a full branch; each child a node of its own.
        let first = node_at_path(root, &[0], &src).unwrap();
        let PathNode::Found(rlp) = first else { panic!("{first:?}") };
        assert!(rlp.len() >= 32);
        // A leaf's full key plus its terminator names its value: not a node.
        let key: Vec<u8> = leaves[0].0.iter().flat_map(|b| [b >> 4, b & 0x0f]).collect();
        let mut with_terminator = key.clone();
        with_terminator.push(16);
        assert_eq!(node_at_path(root, &with_terminator, &src).unwrap(), PathNode::Embedded);
        with_terminator.push(3);
        assert_eq!(node_at_path(root, &with_terminator, &src).unwrap(), PathNode::Missing);
        assert_eq!(node_at_path(root, &[0; 54], &src).unwrap(), PathNode::Missing);
        assert_eq!(node_at_path(root, &[17], &src).unwrap(), PathNode::Missing);
    }

    /// geth proves a key of the empty trie with no node at all (an account without storage
    /// answers `eth_getProof` with an empty storage proof).
    #[test]
    fn the_empty_trie_proves_with_no_node() {
        let key = Nibbles::unpack(keccak256([0u8; 32]));
        let proof = Trie::new(EMPTY_ROOT_HASH).proof(&key, &ProofNodes::default()).unwrap();
        assert!(proof.is_empty());
    }

    #[test]
    fn compact_paths_decode_as_geth_decodes_them() {
        assert_eq!(compact_to_nibbles(&[]), Vec::<u8>::new());
        assert_eq!(compact_to_nibbles(&[0x00]), Vec::<u8>::new());
        assert_eq!(compact_to_nibbles(&[0x1b]), vec![0xb]);
        assert_eq!(compact_to_nibbles(&[0x00, 0x12]), vec![1, 2]);
        assert_eq!(compact_to_nibbles(&[0x20, 0x12]), vec![1, 2, 16]);
        assert_eq!(compact_to_nibbles(&[0x3a, 0xbc]), vec![0xa, 0xb, 0xc, 16]);
    }
}
