//! A Merkle Patricia trie whose unvisited subtrees stay as hash references.
//!
//! Node encoding follows the Yellow Paper, appendix D: leaves and extensions are 2-item RLP lists
//! with a hex-prefix encoded path, branches 17-item lists (the 17th, the value, is always empty
//! in Ethereum's fixed-length-key tries and is rejected here), and a child whose RLP is shorter
//! than 32 bytes is embedded in its parent instead of referenced by hash. alloy-trie's node
//! types do the RLP; this module does the structure: lookup, insert, delete with the collapse
//! rules, and the root hash.

use alloy_primitives::{
    keccak256,
    map::{HashMap, HashSet},
    Bytes, B256,
};
use alloy_rlp::{Decodable, EMPTY_STRING_CODE};
use alloy_trie::{
    nodes::{BranchNodeRef, ExtensionNodeRef, LeafNodeRef, RlpNode, TrieNode},
    Nibbles, TrieMask, EMPTY_ROOT_HASH,
};
use rayon::prelude::*;
use std::fmt::Write as _;

/// A trie node as (keccak256, RLP), as [`Trie::root_with_nodes`] reports it.
pub type EncodedNode = (B256, Bytes);

/// What a [`NodeSource`] that can fail (a database) reports: its own error, shared so that the
/// trie's errors stay cloneable.
pub type NodeSourceError = std::sync::Arc<dyn std::error::Error + Send + Sync>;

/// Where the RLP of a node referenced by hash comes from.
pub trait NodeSource {
    /// The RLP encoding of the node whose keccak256 is `hash`, or `None` when the source does
    /// not hold it.
    ///
    /// # Errors
    /// A source that can fail (a database) reports its error; the trie wraps it in
    /// [`TrieError::Source`].
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError>;

    /// What [`NodeSource::node`] answers for each of `hashes`, in the order asked. A source
    /// that reads many keys at once cheaper than one by one (a database's batched multi-get)
    /// answers them together. Default: one [`NodeSource::node`] each.
    fn nodes(&self, hashes: &[B256]) -> Vec<Result<Option<Bytes>, NodeSourceError>> {
        hashes.iter().map(|hash| self.node(hash)).collect()
    }

    /// Whether the source knows, without holding it, that the node `hash` is a branch (e.g. the
    /// child of an extension in a proof). A deletion that leaves a branch with a single child
    /// only needs that child's kind when the child is not a branch. Default: no knowledge.
    fn is_branch(&self, _hash: &B256) -> bool {
        false
    }
}

/// A pool of trie nodes keyed by their keccak256, e.g. every node of a set of `eth_getProof`
/// answers (account proofs and storage proofs can share one pool: a node is found by its hash
/// whichever trie it belongs to).
#[derive(Debug, Clone, Default)]
pub struct ProofNodes {
    nodes: HashMap<B256, Bytes>,
    branches: HashSet<B256>,
}

impl ProofNodes {
    /// Adds proof nodes (each one node's RLP), keyed by their keccak256.
    pub fn extend<I: IntoIterator<Item = Bytes>>(&mut self, nodes: I) {
        for node in nodes {
            self.nodes.insert(keccak256(&node), node);
        }
    }

    /// Adds, for every leaf and extension among `nodes`, the same node with its key shortened
    /// by 1, 2, … nibbles.
    ///
    /// Deleting a key can leave a branch with one child, which then merges into its parent
    /// position: the trie must know whether that sibling is a leaf, an extension or a branch,
    /// but a proof of the pre-state only names it by hash. The proofs of the post-state (at the
    /// block itself) contain the merged node, whose key is the sibling's key with the branch
    /// nibble in front. Shortening it rebuilds the sibling as it was, and since nodes are looked
    /// up by hash, a candidate is used only if it is exactly the node referenced. A sibling that
    /// was a branch appears as the child of a one-nibble extension: its hash is remembered as a
    /// branch ([`NodeSource::is_branch`]).
    pub fn extend_collapse_candidates<'a>(&mut self, nodes: impl IntoIterator<Item = &'a Bytes>) {
        let mut buf = Vec::with_capacity(128);
        let add = |r: RlpNode, buf: &[u8], map: &mut HashMap<B256, Bytes>| {
            if let Some(hash) = r.as_hash() {
                map.entry(hash).or_insert_with(|| Bytes::copy_from_slice(buf));
            }
        };
        for node in nodes {
            let Ok(decoded) = decode_node(node) else { continue };
            match decoded {
                Node::Leaf(leaf) => {
                    for j in 1..leaf.key.len() {
                        buf.clear();
                        let r = LeafNodeRef::new(&leaf.key.slice(j..), &leaf.value).rlp(&mut buf);
                        add(r, &buf, &mut self.nodes);
                    }
                }
                Node::Extension(mut ext) => {
                    // An extension's child is a branch: a sibling that was this child needs
                    // no more than that.
                    if let Node::Hash(hash) = ext.child {
                        self.branches.insert(hash);
                    }
                    let child =
                        Encoder::new(usize::MAX, &mut |_, _| {}).reference(&mut ext.child, 1);
                    for j in 1..ext.key.len() {
                        buf.clear();
                        let r = ExtensionNodeRef::new(&ext.key.slice(j..), &child).rlp(&mut buf);
                        add(r, &buf, &mut self.nodes);
                    }
                }
                _ => {}
            }
        }
    }

    /// Number of distinct nodes held.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node is held.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// A reference to a source is a source (so `&dyn NodeSource` can be passed where a sized
/// source is expected).
impl<T: NodeSource + ?Sized> NodeSource for &T {
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
        (**self).node(hash)
    }

    fn nodes(&self, hashes: &[B256]) -> Vec<Result<Option<Bytes>, NodeSourceError>> {
        (**self).nodes(hashes)
    }

    fn is_branch(&self, hash: &B256) -> bool {
        (**self).is_branch(hash)
    }
}

/// A batched read of trie nodes that answered fewer than it was asked for ([`nodes_over`]).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("a batched read of {asked} trie nodes answered {answered}")]
pub struct ShortBatch {
    /// Nodes asked for.
    pub asked: usize,
    /// Answers given.
    pub answered: usize,
}

/// The batched read of a source layered over another ([`NodeSource::nodes`]): each of
/// `hashes` that `layer` holds from it, the rest in one `base` call, in the order asked.
/// `base` must answer as many results as it is given hashes; one short is reported as a
/// source error for each hash it left out.
pub fn nodes_over(
    hashes: &[B256],
    layer: impl Fn(&B256) -> Option<Bytes>,
    base: impl FnOnce(&[B256]) -> Vec<Result<Option<Bytes>, NodeSourceError>>,
) -> Vec<Result<Option<Bytes>, NodeSourceError>> {
    let mut answers: Vec<Option<Result<Option<Bytes>, NodeSourceError>>> =
        hashes.iter().map(|hash| layer(hash).map(|node| Ok(Some(node)))).collect();
    let (at, missing): (Vec<usize>, Vec<B256>) = answers
        .iter()
        .enumerate()
        .filter(|(_, answer)| answer.is_none())
        .map(|(i, _)| (i, hashes[i]))
        .unzip();
    if !missing.is_empty() {
        let read = base(&missing);
        let short = ShortBatch { asked: missing.len(), answered: read.len() };
        let mut read = read.into_iter();
        for i in at {
            answers[i] = Some(
                read.next().unwrap_or_else(|| Err(std::sync::Arc::new(short) as NodeSourceError)),
            );
        }
    }
    answers.into_iter().flatten().collect()
}

impl NodeSource for ProofNodes {
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
        Ok(self.nodes.get(hash).cloned())
    }

    fn is_branch(&self, hash: &B256) -> bool {
        self.branches.contains(hash)
    }
}

/// Why a trie operation failed. Paths are nibbles from the root, written in hex.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TrieError {
    /// The operation needs a node the source does not hold: a proof that does not cover the
    /// key, or (for a deletion that collapses a branch) the remaining sibling.
    #[error("trie node {hash} at path 0x{path} is missing from the node source")]
    MissingNode {
        /// Path of the node from the root.
        path: String,
        /// Its hash.
        hash: B256,
    },
    /// A node's RLP does not decode as a trie node.
    #[error("trie node {hash} does not decode: {reason}")]
    Decode {
        /// The node's hash.
        hash: B256,
        /// The decoder's message.
        reason: String,
    },
    /// The node source failed.
    #[error("node source failed on {hash}: {source}")]
    Source {
        /// The node asked for.
        hash: B256,
        /// The source's error.
        source: NodeSourceError,
    },
    /// A key that ends inside a branch or is a prefix of another key: impossible with the
    /// fixed-length (32-byte keccak) keys of Ethereum's tries.
    #[error("key 0x{key} is a prefix of another key (branch values are not supported)")]
    PrefixKey {
        /// The key.
        key: String,
    },
}

/// A trie node, resolved or not. 40 bytes: a resolved node's contents are boxed, so that a
/// branch holds its 16 children in one allocation of under 700 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Node {
    /// No node (the empty trie, or an empty branch slot).
    #[default]
    Empty,
    /// A leaf.
    Leaf(Box<Leaf>),
    /// An extension.
    Extension(Box<Extension>),
    /// A branch.
    Branch(Box<Branch>),
    /// A subtree known only by its hash, resolved from the [`NodeSource`] when an operation
    /// reaches it.
    Hash(B256),
}

/// A leaf: the rest of the key and the value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Leaf {
    /// Remaining key nibbles.
    pub key: Nibbles,
    /// The value bytes (an RLP string's payload, e.g. an encoded account or storage value).
    pub value: Vec<u8>,
    /// Its reference as last computed.
    pub rlp: RlpCache,
}

/// An extension: a shared key segment and the child below it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Extension {
    /// Shared nibbles.
    pub key: Nibbles,
    /// The child (a branch once resolved).
    pub child: Node,
    /// Its reference as last computed.
    pub rlp: RlpCache,
}

/// A branch: one child per nibble (the value slot is always empty in Ethereum's tries).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Branch {
    /// The 16 children; [`Node::Empty`] where absent.
    pub children: [Node; 16],
    /// Its reference as last computed.
    pub rlp: RlpCache,
}

/// A node's reference — its keccak256, or its RLP when shorter than 32 bytes — as last
/// computed, kept until the node changes: an unchanged subtree is neither encoded nor hashed
/// again, and a node resolved from a [`NodeSource`] starts with the hash it was found by.
/// Equality ignores it (it is derived from the node).
#[derive(Debug, Clone, Default)]
pub struct RlpCache(Option<RlpNode>);

impl PartialEq for RlpCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for RlpCache {}

impl Node {
    /// A leaf, not yet encoded.
    fn leaf(key: Nibbles, value: Vec<u8>) -> Self {
        Self::Leaf(Box::new(Leaf { key, value, rlp: RlpCache::default() }))
    }

    /// An extension over `child`, not yet encoded.
    fn extension(key: Nibbles, child: Node) -> Self {
        Self::Extension(Box::new(Extension { key, child, rlp: RlpCache::default() }))
    }

    /// Whether this is an empty slot.
    fn is_empty(&self) -> bool {
        matches!(self, Self::Empty)
    }

    /// The reference cache of a leaf, extension or branch.
    fn rlp(&self) -> Option<&RlpCache> {
        match self {
            Self::Leaf(leaf) => Some(&leaf.rlp),
            Self::Extension(ext) => Some(&ext.rlp),
            Self::Branch(branch) => Some(&branch.rlp),
            Self::Empty | Self::Hash(_) => None,
        }
    }

    /// [`Node::rlp`], to change.
    fn rlp_mut(&mut self) -> Option<&mut RlpCache> {
        match self {
            Self::Leaf(leaf) => Some(&mut leaf.rlp),
            Self::Extension(ext) => Some(&mut ext.rlp),
            Self::Branch(branch) => Some(&mut branch.rlp),
            Self::Empty | Self::Hash(_) => None,
        }
    }

    /// The reference as last computed (`None` for an empty slot, a hash reference or a node
    /// changed since).
    fn cached(&self) -> Option<&RlpNode> {
        self.rlp().and_then(|rlp| rlp.0.as_ref())
    }

    /// Sets the reference of a leaf, extension or branch.
    pub(crate) fn set_cached(&mut self, r: RlpNode) {
        if let Some(rlp) = self.rlp_mut() {
            rlp.0 = Some(r);
        }
    }

    /// Forgets the reference: the node is about to change.
    fn forget(&mut self) {
        if let Some(rlp) = self.rlp_mut() {
            rlp.0 = None;
        }
    }
}

/// The nibbles as lowercase hex digits (the paths errors name).
pub(crate) fn hex(nibbles: &Nibbles) -> String {
    let mut s = String::with_capacity(nibbles.len());
    for n in nibbles.iter() {
        let _ = write!(s, "{n:x}");
    }
    s
}

fn with(path: &Nibbles, nibble: u8) -> Nibbles {
    let mut p = *path;
    p.push(nibble);
    p
}

fn one_nibble(nibble: u8) -> Nibbles {
    Nibbles::from_nibbles([nibble])
}

/// Decodes one node's RLP; embedded children are decoded too, hashed ones become
/// [`Node::Hash`].
pub(crate) fn decode_node(rlp: &[u8]) -> alloy_rlp::Result<Node> {
    let child = |r: &RlpNode| match r.as_hash() {
        Some(hash) => Ok(Node::Hash(hash)),
        None => decode_node(r.as_slice()),
    };
    Ok(match TrieNode::decode(&mut &rlp[..])? {
        TrieNode::EmptyRoot => Node::Empty,
        TrieNode::Leaf(leaf) => Node::leaf(leaf.key, leaf.value),
        TrieNode::Extension(ext) => Node::extension(ext.key, child(&ext.child)?),
        TrieNode::Branch(branch) => {
            let mut node = Box::<Branch>::default();
            let mut stack = branch.stack.iter();
            for i in 0..16u8 {
                if branch.state_mask.is_bit_set(i) {
                    let r = stack
                        .next()
                        .ok_or(alloy_rlp::Error::Custom("branch mask and children disagree"))?;
                    node.children[i as usize] = child(r)?;
                }
            }
            Node::Branch(node)
        }
    })
}

/// Replaces a [`Node::Hash`] by the node it references.
fn resolve(node: &mut Node, path: &Nibbles, src: &dyn NodeSource) -> Result<(), TrieError> {
    if let Node::Hash(hash) = *node {
        let rlp = src
            .node(&hash)
            .map_err(|source| TrieError::Source { hash, source })?
            .ok_or_else(|| TrieError::MissingNode { path: hex(path), hash })?;
        *node = decode_node(&rlp).map_err(|e| TrieError::Decode { hash, reason: e.to_string() })?;
        node.set_cached(RlpNode::word_rlp(&hash));
    }
    Ok(())
}

/// [`resolve`], except that a hashed node which is the leaf of `rest` holding one of `known`
/// (values the key is known to have held: the executor's pre-state) becomes that leaf without
/// a read. The hash proves it: the candidate leaf's RLP is encoded and hashed, and only an
/// exact match is taken; any other node is read from `src`.
///
/// In a large state a block's changed leaves are on disk (the trie's top levels are cached,
/// its leaves are not): cold, each is one random read, which this spares for every key whose
/// value before the block is known.
fn resolve_known(
    node: &mut Node,
    path: &Nibbles,
    rest: &Nibbles,
    known: &[Vec<u8>],
    src: &dyn NodeSource,
) -> Result<(), TrieError> {
    if let Node::Hash(hash) = *node {
        if let Some(leaf) = known_leaf(&hash, rest, known) {
            *node = leaf;
            return Ok(());
        }
    }
    resolve(node, path, src)
}

/// The leaf of `rest` holding one of `known` whose hash is `hash`, decoded with that hash as
/// its reference; `None` when none is.
pub(crate) fn known_leaf(hash: &B256, rest: &Nibbles, known: &[Vec<u8>]) -> Option<Node> {
    let mut buf = Vec::new();
    known.iter().find_map(|value| {
        buf.clear();
        let r = LeafNodeRef::new(rest, value).rlp(&mut buf);
        (r.as_hash() == Some(*hash)).then(|| {
            let mut leaf = Node::leaf(*rest, value.clone());
            leaf.set_cached(r);
            leaf
        })
    })
}

/// One key's change for [`Trie::apply_many`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrieOp {
    /// The key (full-length nibbles).
    pub key: Nibbles,
    /// The value to set (non-empty), or `None` to delete the key.
    pub value: Option<Vec<u8>>,
    /// The value the key held before, when known (`None`: unknown or absent): its leaf is
    /// recognised by hash instead of read ([`resolve_known`]).
    pub prior: Option<Vec<u8>>,
}

impl TrieOp {
    /// A change of `key` to `value` (`None` deletes) whose prior value is not known.
    pub fn new(key: Nibbles, value: Option<Vec<u8>>) -> Self {
        Self { key, value, prior: None }
    }
}

/// A Merkle Patricia trie over a [`NodeSource`]: starts as its root hash and resolves nodes as
/// operations walk into them.
#[derive(Debug, Clone, Default)]
pub struct Trie {
    root: Node,
}

impl Trie {
    /// The trie whose root hash is `root` (the empty trie for [`EMPTY_ROOT_HASH`]).
    pub fn new(root: B256) -> Self {
        Self { root: if root == EMPTY_ROOT_HASH { Node::Empty } else { Node::Hash(root) } }
    }

    /// The value stored at `key` (full-length nibbles), resolving the path on the way.
    ///
    /// # Errors
    /// [`TrieError::MissingNode`] when the source lacks a node on the path (a proof of
    /// absence ends at a node that diverges from the key, so absence is provable).
    pub fn get(
        &mut self,
        key: &Nibbles,
        src: &dyn NodeSource,
    ) -> Result<Option<Vec<u8>>, TrieError> {
        get_from(&mut self.root, Nibbles::new(), *key, &[], src)
    }

    /// [`Trie::get`] of every key of `keys`, in order: below a root branch the 16 subtrees are
    /// searched in parallel (rayon), each resolving its own paths. `known[i]`, when given
    /// (empty, or one entry per key), lists values key `i` may hold: its leaf, when it holds one
    /// of them, is recognised by hash instead of read ([`resolve_known`]).
    ///
    /// # Errors
    /// As [`Trie::get`], for the first key that fails.
    pub fn get_many<S: NodeSource + Sync>(
        &mut self,
        keys: &[Nibbles],
        known: &[Vec<Vec<u8>>],
        src: &S,
    ) -> Result<Vec<Option<Vec<u8>>>, TrieError> {
        let known_of = |i: usize| known.get(i).map_or(&[][..], Vec::as_slice);
        resolve(&mut self.root, &Nibbles::new(), src)?;
        let Node::Branch(branch) = &mut self.root else {
            let root = &mut self.root;
            return keys
                .iter()
                .enumerate()
                .map(|(i, k)| get_from(root, Nibbles::new(), *k, known_of(i), src))
                .collect();
        };
        let children = &mut branch.children;
        let mut by_child: [Vec<usize>; 16] = Default::default();
        for (i, k) in keys.iter().enumerate() {
            let Some(n) = k.first() else { return Err(TrieError::PrefixKey { key: hex(k) }) };
            by_child[n as usize].push(i);
        }
        let found: Vec<Vec<(usize, Option<Vec<u8>>)>> = children
            .par_iter_mut()
            .zip(by_child.par_iter())
            .enumerate()
            .map(|(n, (child, idx))| {
                idx.iter()
                    .map(|&i| {
                        let rest = keys[i].slice(1..);
                        get_from(child, one_nibble(n as u8), rest, known_of(i), src).map(|v| (i, v))
                    })
                    .collect()
            })
            .collect::<Result<_, TrieError>>()?;
        let mut out = vec![None; keys.len()];
        for (i, v) in found.into_iter().flatten() {
            out[i] = v;
        }
        Ok(out)
    }

    /// Sets (`Some(value)`, non-empty) or deletes (`None`) every key of `ops` (each key at
    /// most once): below a root branch the 16 subtrees are updated in parallel (rayon), then
    /// the root collapses as a sequence of [`Trie::insert`] / [`Trie::remove`] would leave it.
    /// The result equals applying the operations one by one, in any order. A key's known prior
    /// value ([`TrieOp::prior`]) spares the read of its leaf.
    ///
    /// # Errors
    /// As [`Trie::insert`] and [`Trie::remove`], for the first operation that fails.
    pub fn apply_many<S: NodeSource + Sync>(
        &mut self,
        ops: Vec<TrieOp>,
        src: &S,
    ) -> Result<(), TrieError> {
        resolve(&mut self.root, &Nibbles::new(), src)?;
        self.root.forget();
        let Node::Branch(branch) = &mut self.root else {
            for op in ops {
                apply_at(&mut self.root, Nibbles::new(), op, src)?;
            }
            return Ok(());
        };
        let mut by_child: [Vec<TrieOp>; 16] = Default::default();
        for mut op in ops {
            let Some(n) = op.key.first() else {
                return Err(TrieError::PrefixKey { key: hex(&op.key) });
            };
            op.key = op.key.slice(1..);
            by_child[n as usize].push(op);
        }
        let children = &mut branch.children;
        children.par_iter_mut().zip(by_child.into_par_iter()).enumerate().try_for_each(
            |(n, (child, ops))| {
                let path = one_nibble(n as u8);
                ops.into_iter().try_for_each(|op| apply_at(child, path, op, src))
            },
        )?;
        // Deletions may have emptied children: a branch needs two.
        if children.iter().all(Node::is_empty) {
            self.root = Node::Empty;
        } else {
            collapse_branch(&mut self.root, &Nibbles::new(), src)?;
        }
        Ok(())
    }

    /// The proof of `key` as `eth_getProof` (EIP-1186) returns it: the RLP of every node on
    /// the key's path that is referenced by hash, root first (embedded nodes travel inside
    /// their parent). Proves presence (ends at the leaf) or absence (ends where the path
    /// diverges); empty for the empty trie.
    ///
    /// # Errors
    /// [`TrieError::MissingNode`] when the source lacks a node on the path.
    pub fn proof(&mut self, key: &Nibbles, src: &dyn NodeSource) -> Result<Vec<Bytes>, TrieError> {
        // The empty trie has no node to show: an empty proof, as geth's `Prove` gives.
        if matches!(self.root, Node::Empty) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let mut ignore = |_, _: &[u8]| {};
        let mut encoder = Encoder::new(usize::MAX, &mut ignore);
        let mut node = &mut self.root;
        let mut path = Nibbles::new();
        let mut rest = *key;
        loop {
            resolve(node, &path, src)?;
            let r = encoder.own(node, path.len());
            if r.is_hash() || out.is_empty() {
                out.push(Bytes::copy_from_slice(&encoder.buf));
            }
            match node {
                Node::Empty | Node::Leaf(_) | Node::Hash(_) => return Ok(out),
                Node::Extension(ext) => {
                    if !rest.starts_with(&ext.key) {
                        return Ok(out);
                    }
                    path = path.join(&ext.key);
                    rest = rest.slice(ext.key.len()..);
                    node = &mut ext.child;
                }
                Node::Branch(branch) => {
                    let Some(i) = rest.first() else { return Ok(out) };
                    path.push(i);
                    rest = rest.slice(1..);
                    node = &mut branch.children[i as usize];
                }
            }
        }
    }

    /// The root node, to resolve in place.
    pub(crate) fn root_mut(&mut self) -> &mut Node {
        &mut self.root
    }

    /// Sets `key` to `value` (non-empty; use [`Trie::remove`] for deletion).
    ///
    /// # Errors
    /// [`TrieError::MissingNode`] when the source lacks a node on the key's path.
    pub fn insert(
        &mut self,
        key: &Nibbles,
        value: Vec<u8>,
        src: &dyn NodeSource,
    ) -> Result<(), TrieError> {
        insert_at(&mut self.root, Nibbles::new(), *key, value, &[], src)
    }

    /// [`Trie::insert`] (`Some`) or [`Trie::remove`] (`None`) of `op`, its known prior value
    /// sparing the read of its leaf.
    ///
    /// # Errors
    /// As [`Trie::insert`] and [`Trie::remove`].
    pub fn apply(&mut self, op: TrieOp, src: &dyn NodeSource) -> Result<(), TrieError> {
        apply_at(&mut self.root, Nibbles::new(), op, src)
    }

    /// Deletes `key`; returns whether it was present.
    ///
    /// # Errors
    /// [`TrieError::MissingNode`] when the source lacks a node on the key's path, or the
    /// remaining sibling when the deletion leaves a branch with a single child (the branch
    /// then collapses into that child, whose kind must be known).
    pub fn remove(&mut self, key: &Nibbles, src: &dyn NodeSource) -> Result<bool, TrieError> {
        remove_at(&mut self.root, Nibbles::new(), *key, &[], src)
    }

    /// The root hash: keccak256 of the root node's RLP ([`EMPTY_ROOT_HASH`] when empty),
    /// computed on a copy of the trie, so that the nodes [`Trie::root_with_nodes`] reports
    /// stay to be reported (subtrees already hashed are not hashed again). A state root
    /// computed for storage takes `root_with_nodes` instead.
    pub fn root(&self) -> B256 {
        self.clone().root_with_nodes().0
    }

    /// The root hash as last computed, when the trie has not changed since (`None` after an
    /// update not yet hashed by [`Trie::root`] or [`Trie::root_with_nodes`]).
    pub fn cached_root(&self) -> Option<B256> {
        match &self.root {
            Node::Empty => Some(EMPTY_ROOT_HASH),
            Node::Hash(hash) => Some(*hash),
            node => node.cached().map(|r| r.as_hash().unwrap_or_else(|| keccak256(r.as_slice()))),
        }
    }

    /// The root hash, and every node of 32 bytes or more encoded since it was created or last
    /// changed, as (keccak256, RLP), the root included even when shorter: what a database of
    /// trie nodes that holds the nodes this trie was resolved from must add so that
    /// [`Trie::new`] over it can later resolve this root. Nodes resolved and left unchanged
    /// are not reported (the source holds them) nor hashed again.
    pub fn root_with_nodes(&mut self) -> (B256, Vec<EncodedNode>) {
        self.root_with_nodes_pruned(usize::MAX)
    }

    /// [`Trie::root_with_nodes`], leaving every node deeper than `depth` nibbles below the
    /// root that it hashes (or finds hashed) as that hash, as [`Trie::prune`] does, in the
    /// same pass: the trie keeps its top levels decoded for a next update.
    pub fn root_with_nodes_pruned(&mut self, depth: usize) -> (B256, Vec<EncodedNode>) {
        if self.root == Node::Empty {
            return (EMPTY_ROOT_HASH, Vec::new());
        }
        let mut nodes = Vec::new();
        // A changed root branch's 16 subtrees are encoded in parallel (rayon), their nodes
        // kept in child order as the one-thread encoding reports them; the root's own
        // encoding then finds its children's references cached.
        match &mut self.root {
            Node::Branch(branch) if branch.rlp.0.is_none() => {
                let encoded: Vec<Vec<EncodedNode>> = branch
                    .children
                    .par_iter_mut()
                    .map(|child| {
                        let mut nodes = Vec::new();
                        let mut sink =
                            |hash, rlp: &[u8]| nodes.push((hash, Bytes::copy_from_slice(rlp)));
                        Encoder::new(depth, &mut sink).reference(child, 1);
                        nodes
                    })
                    .collect();
                nodes.extend(encoded.into_iter().flatten());
            }
            _ => {}
        }
        let mut sink = |hash, rlp: &[u8]| nodes.push((hash, Bytes::copy_from_slice(rlp)));
        let r = Encoder::new(depth, &mut sink).reference(&mut self.root, 0);
        let root = match r.as_hash() {
            Some(hash) => hash,
            None => {
                let hash = keccak256(r.as_slice());
                nodes.push((hash, Bytes::copy_from_slice(r.as_slice())));
                hash
            }
        };
        (root, nodes)
    }

    /// Replaces every node deeper than `depth` nibbles below the root by the hash it was
    /// last encoded to, so that a trie kept between updates holds its top levels decoded and
    /// no more (nodes shorter than 32 bytes stay inside their parent; a node changed since
    /// its last encoding is kept whole). The root hash is unchanged.
    pub fn prune(&mut self, depth: usize) {
        prune_below(&mut self.root, 0, depth);
    }

    /// How many nodes are decoded in memory (empty slots and hash references not counted).
    pub fn decoded_nodes(&self) -> usize {
        fn count(node: &Node) -> usize {
            match node {
                Node::Empty | Node::Hash(_) => 0,
                Node::Leaf(_) => 1,
                Node::Extension(ext) => 1 + count(&ext.child),
                Node::Branch(branch) => 1 + branch.children.iter().map(count).sum::<usize>(),
            }
        }
        count(&self.root)
    }
}

fn prune_below(node: &mut Node, len: usize, depth: usize) {
    if len > depth {
        if let Some(hash) = node.cached().and_then(RlpNode::as_hash) {
            *node = Node::Hash(hash);
            return;
        }
    }
    match node {
        Node::Extension(ext) => prune_below(&mut ext.child, len + ext.key.len(), depth),
        Node::Branch(branch) => {
            for child in branch.children.iter_mut() {
                prune_below(child, len + 1, depth);
            }
        }
        Node::Empty | Node::Leaf(_) | Node::Hash(_) => {}
    }
}

/// Sets `key` (the rest of the key below `node`, whose path is `path`) to `value`, resolving
/// the path and forgetting the reference of every node on it.
fn insert_at(
    node: &mut Node,
    path: Nibbles,
    key: Nibbles,
    value: Vec<u8>,
    known: &[Vec<u8>],
    src: &dyn NodeSource,
) -> Result<(), TrieError> {
    resolve_known(node, &path, &key, known, src)?;
    node.forget();
    match node {
        Node::Empty => *node = Node::leaf(key, value),
        Node::Leaf(leaf) => {
            if leaf.key == key {
                leaf.value = value;
                return Ok(());
            }
            let common = leaf.key.common_prefix_length(&key);
            if common == leaf.key.len() || common == key.len() {
                return Err(TrieError::PrefixKey { key: hex(&path.join(&key)) });
            }
            let mut branch = Box::<Branch>::default();
            branch.children[leaf.key.get_unchecked(common) as usize] =
                Node::leaf(leaf.key.slice(common + 1..), std::mem::take(&mut leaf.value));
            branch.children[key.get_unchecked(common) as usize] =
                Node::leaf(key.slice(common + 1..), value);
            *node = extension_over(key.slice(..common), Node::Branch(branch));
        }
        Node::Extension(ext) => {
            let common = ext.key.common_prefix_length(&key);
            if common == ext.key.len() {
                let below = path.join(&ext.key);
                let rest = key.slice(common..);
                return insert_at(&mut ext.child, below, rest, value, known, src);
            }
            if common == key.len() {
                return Err(TrieError::PrefixKey { key: hex(&path.join(&key)) });
            }
            let mut branch = Box::<Branch>::default();
            let rest = ext.key.slice(common + 1..);
            let old_child = std::mem::take(&mut ext.child);
            branch.children[ext.key.get_unchecked(common) as usize] =
                extension_over(rest, old_child);
            branch.children[key.get_unchecked(common) as usize] =
                Node::leaf(key.slice(common + 1..), value);
            *node = extension_over(ext.key.slice(..common), Node::Branch(branch));
        }
        Node::Branch(branch) => {
            let Some(i) = key.first() else {
                return Err(TrieError::PrefixKey { key: hex(&path) });
            };
            return insert_at(
                &mut branch.children[i as usize],
                with(&path, i),
                key.slice(1..),
                value,
                known,
                src,
            );
        }
        Node::Hash(_) => unreachable!("resolved above"),
    }
    Ok(())
}

/// `op` below `node` (whose path is `path`; `op.key` is the rest of the key below it).
fn apply_at(
    node: &mut Node,
    path: Nibbles,
    op: TrieOp,
    src: &dyn NodeSource,
) -> Result<(), TrieError> {
    let known = op.prior.as_slice();
    match op.value {
        Some(value) => insert_at(node, path, op.key, value, known, src),
        None => remove_at(node, path, op.key, known, src).map(|_| ()),
    }
}

/// `child` under an extension of `key`, or `child` itself when `key` is empty.
fn extension_over(key: Nibbles, child: Node) -> Node {
    if key.is_empty() {
        child
    } else {
        Node::extension(key, child)
    }
}

/// The value at `rest` below `node` (whose own path is `path`), resolving on the way.
fn get_from(
    mut node: &mut Node,
    mut path: Nibbles,
    mut rest: Nibbles,
    known: &[Vec<u8>],
    src: &dyn NodeSource,
) -> Result<Option<Vec<u8>>, TrieError> {
    loop {
        resolve_known(node, &path, &rest, known, src)?;
        match node {
            Node::Empty => return Ok(None),
            Node::Leaf(leaf) => return Ok((leaf.key == rest).then(|| leaf.value.clone())),
            Node::Extension(ext) => {
                if !rest.starts_with(&ext.key) {
                    return Ok(None);
                }
                path = path.join(&ext.key);
                rest = rest.slice(ext.key.len()..);
                node = &mut ext.child;
            }
            Node::Branch(branch) => {
                let Some(i) = rest.first() else {
                    return Err(TrieError::PrefixKey { key: hex(&path) });
                };
                path.push(i);
                rest = rest.slice(1..);
                node = &mut branch.children[i as usize];
            }
            Node::Hash(_) => unreachable!("resolved above"),
        }
    }
}

/// Deletes `key` (the rest of the key below `node`, whose path is `path`); the nodes on its
/// path forget their references when it was present.
fn remove_at(
    node: &mut Node,
    path: Nibbles,
    key: Nibbles,
    known: &[Vec<u8>],
    src: &dyn NodeSource,
) -> Result<bool, TrieError> {
    resolve_known(node, &path, &key, known, src)?;
    match node {
        Node::Empty => Ok(false),
        Node::Leaf(leaf) => {
            if leaf.key == key {
                *node = Node::Empty;
                Ok(true)
            } else {
                Ok(false)
            }
        }
        Node::Extension(ext) => {
            if !key.starts_with(&ext.key) {
                return Ok(false);
            }
            let below = path.join(&ext.key);
            let rest = key.slice(ext.key.len()..);
            let removed = remove_at(&mut ext.child, below, rest, known, src)?;
            if removed {
                // The child was a branch; it may have collapsed into a leaf or an extension,
                // which merges into this extension.
                let ext_key = ext.key;
                *node = match std::mem::take(&mut ext.child) {
                    Node::Empty => Node::Empty,
                    Node::Leaf(leaf) => prefixed(ext_key, Node::Leaf(leaf)),
                    Node::Extension(child) => prefixed(ext_key, Node::Extension(child)),
                    other => Node::extension(ext_key, other),
                };
            }
            Ok(removed)
        }
        Node::Branch(branch) => {
            let Some(i) = key.first() else { return Ok(false) };
            let child = &mut branch.children[i as usize];
            let removed = remove_at(child, with(&path, i), key.slice(1..), known, src)?;
            if removed {
                node.forget();
                collapse_branch(node, &path, src)?;
            }
            Ok(removed)
        }
        Node::Hash(_) => unreachable!("resolved above"),
    }
}

/// A branch left with one child becomes that child, its nibble prepended to the child's key.
fn collapse_branch(node: &mut Node, path: &Nibbles, src: &dyn NodeSource) -> Result<(), TrieError> {
    let Node::Branch(branch) = node else { return Ok(()) };
    let children = &mut branch.children;
    let mut present = children.iter().enumerate().filter(|(_, c)| !c.is_empty());
    let (Some((i, _)), None) = (present.next(), present.next()) else { return Ok(()) };
    let i = i as u8;
    // The sibling's kind decides the shape: it must be resolved (the proof of the block's own
    // state provides it when the pre-state proofs do not), unless it is known to be a branch.
    if let Err(e) = resolve(&mut children[i as usize], &with(path, i), src) {
        match children[i as usize] {
            Node::Hash(hash) if src.is_branch(&hash) => {}
            _ => return Err(e),
        }
    }
    *node = match std::mem::take(&mut children[i as usize]) {
        child @ (Node::Leaf(_) | Node::Extension(_)) => prefixed(one_nibble(i), child),
        branch => Node::extension(one_nibble(i), branch),
    };
    Ok(())
}

/// A leaf or an extension moved up below `prefix`: its key prefixed, its reference
/// forgotten (its box kept). Any other node is returned as it is.
fn prefixed(prefix: Nibbles, mut node: Node) -> Node {
    match &mut node {
        Node::Leaf(leaf) => leaf.key = prefix.join(&leaf.key),
        Node::Extension(ext) => ext.key = prefix.join(&ext.key),
        _ => return node,
    }
    node.forget();
    node
}

/// One encoding pass: its scratch buffer, where the hashed nodes it encodes are reported as
/// (hash, RLP), and the depth below which a hashed node is left as its hash.
struct Encoder<'a> {
    buf: Vec<u8>,
    /// The references of the children of the branches being encoded, deepest last.
    stack: Vec<RlpNode>,
    keep: usize,
    sink: &'a mut dyn FnMut(B256, &[u8]),
}

impl<'a> Encoder<'a> {
    /// A pass that leaves hashed nodes deeper than `keep` nibbles as their hashes.
    fn new(keep: usize, sink: &'a mut dyn FnMut(B256, &[u8])) -> Self {
        Self { buf: Vec::with_capacity(600), stack: Vec::with_capacity(64), keep, sink }
    }

    /// The reference of `node`, `len` nibbles below the root (its hash, or its RLP when
    /// shorter than 32 bytes): the cached one, or encoded bottom-up through the children whose
    /// references are not cached, each hashed node reported and its reference cached.
    fn reference(&mut self, node: &mut Node, len: usize) -> RlpNode {
        match node {
            Node::Empty => return RlpNode::from_rlp(&[EMPTY_STRING_CODE]),
            Node::Hash(hash) => return RlpNode::word_rlp(hash),
            _ => {}
        }
        let r = match node.cached() {
            Some(r) => r.clone(),
            None => {
                let r = self.own(node, len);
                if let Some(hash) = r.as_hash() {
                    (self.sink)(hash, &self.buf);
                }
                node.set_cached(r.clone());
                r
            }
        };
        if len > self.keep {
            if let Some(hash) = r.as_hash() {
                *node = Node::Hash(hash);
            }
        }
        r
    }

    /// Writes the RLP of `node` itself, `len` nibbles below the root, into the buffer (its
    /// children by [`Encoder::reference`]) and returns its reference. An empty node leaves the
    /// buffer empty; a hash reference cannot be encoded (resolve it first) and leaves it as it
    /// is.
    fn own(&mut self, node: &mut Node, len: usize) -> RlpNode {
        match node {
            Node::Empty => {
                self.buf.clear();
                RlpNode::from_rlp(&[EMPTY_STRING_CODE])
            }
            Node::Hash(hash) => RlpNode::word_rlp(hash),
            Node::Leaf(leaf) => {
                self.buf.clear();
                LeafNodeRef::new(&leaf.key, &leaf.value).rlp(&mut self.buf)
            }
            Node::Extension(ext) => {
                let child = self.reference(&mut ext.child, len + ext.key.len());
                self.buf.clear();
                ExtensionNodeRef::new(&ext.key, &child).rlp(&mut self.buf)
            }
            Node::Branch(branch) => {
                let start = self.stack.len();
                let mut mask = TrieMask::default();
                for (i, child) in branch.children.iter_mut().enumerate() {
                    if !child.is_empty() {
                        let r = self.reference(child, len + 1);
                        self.stack.push(r);
                        mask.set_bit(i as u8);
                    }
                }
                self.buf.clear();
                let r = BranchNodeRef::new(&self.stack[start..], mask).rlp(&mut self.buf);
                self.stack.truncate(start);
                r
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use alloy_primitives::U256;
    use alloy_trie::root::storage_root_unhashed;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// A layered batch answers the layer's nodes from it and asks the base once, for the rest
    /// in the order asked; a base that answers short fails only the hashes it left out.
    #[test]
    fn nodes_over_asks_the_base_once_for_what_the_layer_lacks() {
        let hashes: Vec<B256> = (0..6u64).map(|i| keccak256(i.to_be_bytes())).collect();
        let node = |h: &B256| Bytes::copy_from_slice(&h[..4]);
        let in_layer = |h: &B256| hashes[..].iter().step_by(2).any(|x| x == h);
        let asked = std::cell::RefCell::new(Vec::new());
        let answers = nodes_over(
            &hashes,
            |h| in_layer(h).then(|| node(h)),
            |rest| {
                asked.borrow_mut().push(rest.to_vec());
                rest.iter().map(|h| Ok(Some(node(h)))).collect()
            },
        );
        assert_eq!(asked.into_inner(), vec![vec![hashes[1], hashes[3], hashes[5]]]);
        let answers: Vec<_> = answers.into_iter().map(|a| a.unwrap().unwrap()).collect();
        assert_eq!(answers, hashes.iter().map(node).collect::<Vec<_>>());

        let short = nodes_over(&hashes, |_| None, |rest| vec![Ok(Some(node(&rest[0])))]);
        assert_eq!(short.len(), 6);
        assert_eq!(short[0].as_ref().unwrap().as_ref(), Some(&node(&hashes[0])));
        for answer in &short[1..] {
            let e = answer.as_ref().unwrap_err();
            assert_eq!(e.to_string(), "a batched read of 6 trie nodes answered 1");
        }
        // Everything in the layer: the base is not asked.
        let all = nodes_over(&hashes, |h| Some(node(h)), |_| unreachable!("base asked"));
        assert!(all.iter().all(|a| a.is_ok()));
    }

    fn key(slot: U256) -> Nibbles {
        Nibbles::unpack(keccak256(B256::from(slot)))
    }

    fn value(v: U256) -> Vec<u8> {
        alloy_rlp::encode(v)
    }

    fn oracle(map: &std::collections::BTreeMap<U256, U256>) -> B256 {
        storage_root_unhashed(map.iter().map(|(k, v)| (B256::from(*k), *v)))
    }

    /// Slots 0..n holding 1..=n, as a map and as a trie built in memory.
    fn filled(n: u64) -> (std::collections::BTreeMap<U256, U256>, Trie) {
        let none = ProofNodes::default();
        let mut map = std::collections::BTreeMap::new();
        let mut trie = Trie::new(EMPTY_ROOT_HASH);
        for i in 0..n {
            map.insert(U256::from(i), U256::from(i + 1));
            trie.insert(&key(U256::from(i)), value(U256::from(i + 1)), &none).unwrap();
        }
        (map, trie)
    }

    /// Random inserts, overwrites and deletes against alloy-trie's `HashBuilder` root of the
    /// same contents; then the stored nodes alone (a fresh trie over them) give the same
    /// lookups and accept further updates.
    #[test]
    fn matches_hash_builder_under_random_updates() {
        let mut rng = StdRng::seed_from_u64(7);
        let none = ProofNodes::default();
        let mut trie = Trie::new(EMPTY_ROOT_HASH);
        let mut map = std::collections::BTreeMap::new();
        for round in 0..400 {
            let slot = U256::from(rng.random_range(0..300u64));
            if rng.random_bool(0.3) {
                let was = map.remove(&slot).is_some();
                assert_eq!(trie.remove(&key(slot), &none).unwrap(), was, "round {round}");
            } else {
                let v = U256::from(rng.random_range(1..u64::MAX));
                map.insert(slot, v);
                trie.insert(&key(slot), value(v), &none).unwrap();
            }
            assert_eq!(trie.root(), oracle(&map), "round {round}");
        }
        let (root, nodes) = trie.root_with_nodes();
        // Encoded once, the nodes are cached: not reported again until they change.
        assert_eq!(trie.root_with_nodes(), (root, Vec::new()));
        let mut pool = ProofNodes::default();
        pool.extend(nodes.into_iter().map(|(_, rlp)| rlp));
        let mut stored = Trie::new(root);
        for (slot, v) in &map {
            assert_eq!(stored.get(&key(*slot), &pool).unwrap(), Some(value(*v)));
        }
        for slot in map.keys().take(20).copied().collect::<Vec<_>>() {
            assert!(stored.remove(&key(slot), &pool).unwrap());
            map.remove(&slot);
        }
        stored.insert(&key(U256::from(1_000_000)), value(U256::from(5)), &pool).unwrap();
        map.insert(U256::from(1_000_000), U256::from(5));
        assert_eq!(stored.root(), oracle(&map));
    }

    /// `apply_many` and `get_many` (the root branch's subtrees in parallel) against one-by-one
    /// updates and alloy-trie's root: random batches over stored nodes, a batch that empties
    /// whole subtrees, one that leaves a single subtree (the root collapses) and one that
    /// deletes everything.
    #[test]
    fn parallel_batches_equal_one_by_one_updates() {
        let mut rng = StdRng::seed_from_u64(11);
        let (mut map, mut serial) = filled(300);
        let (mut root, nodes) = serial.root_with_nodes();
        let mut pool = ProofNodes::default();
        pool.extend(nodes.into_iter().map(|(_, rlp)| rlp));
        let first_nibble = |slot: &U256| key(*slot).first().unwrap();
        for b in 0..4 {
            let batch: Vec<(U256, Option<U256>)> = match b {
                0 => (0..120)
                    .map(|_| {
                        let slot = U256::from(rng.random_range(0..400u64));
                        let v =
                            rng.random_bool(0.6).then(|| U256::from(rng.random_range(1..1000u64)));
                        (slot, v)
                    })
                    .collect::<std::collections::BTreeMap<_, _>>()
                    .into_iter()
                    .collect(),
                1 => map.keys().filter(|s| first_nibble(s) < 5).map(|s| (*s, None)).collect(),
                2 => map.keys().filter(|s| first_nibble(s) != 9).map(|s| (*s, None)).collect(),
                _ => map.keys().map(|s| (*s, None)).collect(),
            };
            let keys: Vec<Nibbles> = batch.iter().map(|(s, _)| key(*s)).collect();
            let mut parallel = Trie::new(root);
            let got = parallel.get_many(&keys, &[], &pool).unwrap();
            let want: Vec<_> = batch.iter().map(|(s, _)| map.get(s).map(|v| value(*v))).collect();
            assert_eq!(got, want, "batch {b}");
            let mut one_by_one = Trie::new(root);
            for (slot, v) in &batch {
                match v {
                    Some(v) => {
                        map.insert(*slot, *v);
                        one_by_one.insert(&key(*slot), value(*v), &pool).unwrap();
                    }
                    None => {
                        map.remove(slot);
                        one_by_one.remove(&key(*slot), &pool).unwrap();
                    }
                }
            }
            let ops = batch.iter().map(|(s, v)| TrieOp::new(key(*s), v.map(value))).collect();
            parallel.apply_many(ops, &pool).unwrap();
            let (r, nodes) = parallel.root_with_nodes();
            assert_eq!(r, one_by_one.root(), "batch {b}");
            assert_eq!(r, oracle(&map), "batch {b}");
            pool.extend(nodes.into_iter().map(|(_, rlp)| rlp));
            root = r;
        }
        assert_eq!(root, EMPTY_ROOT_HASH);
    }

    /// A node pool that counts the leaves read from it.
    pub(crate) struct LeafCounting<'a> {
        pool: &'a ProofNodes,
        leaves: std::sync::atomic::AtomicUsize,
    }

    impl<'a> LeafCounting<'a> {
        /// Over `pool`, nothing counted yet.
        pub(crate) fn new(pool: &'a ProofNodes) -> Self {
            Self { pool, leaves: Default::default() }
        }

        /// The leaves read so far.
        pub(crate) fn leaves(&self) -> usize {
            self.leaves.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    impl NodeSource for LeafCounting<'_> {
        fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
            let node = self.pool.node(hash)?;
            if let Some(rlp) = &node {
                if matches!(TrieNode::decode(&mut &rlp[..]), Ok(TrieNode::Leaf(_))) {
                    self.leaves.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
            Ok(node)
        }
    }

    /// Known prior values spare exactly the reads of the changed keys' leaves, and a wrong or
    /// missing prior only costs the read: updates with the right priors read no leaf at all,
    /// without priors one per key, and every variant (wrong priors, deletions, new keys,
    /// `get_many` with candidates) gives alloy-trie's root.
    #[test]
    fn known_priors_spare_leaf_reads_and_never_change_the_root() {
        let (map, mut full) = filled(3_000);
        let (root, nodes) = full.root_with_nodes();
        let mut pool = ProofNodes::default();
        pool.extend(nodes.into_iter().map(|(_, rlp)| rlp));
        let counting = || LeafCounting::new(&pool);
        // Values changed (no key deleted or added): every leaf stays where it was.
        let changed: Vec<u64> = (0..3_000u64).step_by(7).collect();
        let op = |i: u64, prior: Option<U256>| TrieOp {
            key: key(U256::from(i)),
            value: Some(value(U256::from(i + 5_000))),
            prior: prior.map(value),
        };
        let mut want = map.clone();
        for &i in &changed {
            want.insert(U256::from(i), U256::from(i + 5_000));
        }
        for (label, prior, expect_leaves) in [
            ("right priors", Some(1u64), 0),
            ("no priors", None, changed.len()),
            ("wrong priors", Some(2), changed.len()),
        ] {
            let src = counting();
            let mut trie = Trie::new(root);
            let ops = changed.iter().map(|&i| op(i, prior.map(|d| U256::from(i + d)))).collect();
            trie.apply_many(ops, &src).unwrap();
            assert_eq!(trie.root(), oracle(&want), "{label}");
            assert_eq!(src.leaves(), expect_leaves, "{label}");
        }
        // One by one (`Trie::apply`), with deletions and new keys beside right priors.
        let src = counting();
        let mut trie = Trie::new(root);
        let mut want = map.clone();
        for i in (0..3_000u64).step_by(5) {
            let prior = Some(value(U256::from(i + 1)));
            let value_after = (i % 2 == 0).then(|| U256::from(i * 3 + 1));
            match value_after {
                Some(v) => want.insert(U256::from(i), v),
                None => want.remove(&U256::from(i)),
            };
            trie.apply(
                TrieOp { key: key(U256::from(i)), value: value_after.map(value), prior },
                &src,
            )
            .unwrap();
        }
        for i in 10_000..10_050u64 {
            want.insert(U256::from(i), U256::from(1));
            trie.apply(TrieOp::new(key(U256::from(i)), Some(value(U256::from(1)))), &src).unwrap();
        }
        assert_eq!(trie.root(), oracle(&want));
        // Candidates for reads: the right one among others finds the value without its leaf.
        let src = counting();
        let keys: Vec<Nibbles> = changed.iter().map(|&i| key(U256::from(i))).collect();
        let known: Vec<Vec<Vec<u8>>> = changed
            .iter()
            .map(|&i| vec![value(U256::from(i + 9)), value(U256::from(i + 1))])
            .collect();
        let got = Trie::new(root).get_many(&keys, &known, &src).unwrap();
        let expected: Vec<_> = changed.iter().map(|&i| Some(value(U256::from(i + 1)))).collect();
        assert_eq!(got, expected);
        assert_eq!(src.leaves(), 0);
    }

    /// A deletion that collapses a branch onto a sibling leaf: the pre-state proof of the
    /// deleted key names the sibling only by hash, so the deletion fails on it; the post-state
    /// proof of the same key holds the merged leaf, from which the sibling is rebuilt.
    #[test]
    fn deletion_siblings_come_from_post_state_proofs() {
        let none = ProofNodes::default();
        let mut collapsed = 0;
        for target in 0..200u64 {
            let mut full = Trie::new(EMPTY_ROOT_HASH);
            for i in 0..200u64 {
                full.insert(&key(U256::from(i)), value(U256::from(i + 1)), &none).unwrap();
            }
            let pre_root = full.root();
            let k = key(U256::from(target));
            let pre_proof = full.proof(&k, &none).unwrap();
            assert!(full.remove(&k, &none).unwrap());
            let post_root = full.root();
            let post_proof = full.proof(&k, &none).unwrap();

            let mut pool = ProofNodes::default();
            pool.extend(pre_proof);
            let mut sparse = Trie::new(pre_root);
            match sparse.clone().remove(&k, &pool) {
                Ok(_) => assert_eq!(sparse.clone_root_after_remove(&k, &pool), post_root),
                Err(TrieError::MissingNode { .. }) => collapsed += 1,
                Err(e) => panic!("{e}"),
            }
            pool.extend(post_proof.iter().cloned());
            pool.extend_collapse_candidates(&post_proof);
            assert!(sparse.remove(&k, &pool).unwrap());
            assert_eq!(sparse.root(), post_root, "target {target}");
        }
        assert!(collapsed > 0, "no deletion needed a sibling: the test shows nothing");
    }

    impl Trie {
        fn clone_root_after_remove(&self, k: &Nibbles, src: &dyn NodeSource) -> B256 {
            let mut t = self.clone();
            t.remove(k, src).unwrap();
            t.root()
        }
    }

    /// Deleting from a trie known only by its root needs the nodes on the path: without them
    /// the error names the missing node, never a wrong root.
    #[test]
    fn missing_nodes_are_reported() {
        let none = ProofNodes::default();
        let mut trie = Trie::new(EMPTY_ROOT_HASH);
        for i in 0..50u64 {
            trie.insert(&key(U256::from(i)), value(U256::from(i + 1)), &none).unwrap();
        }
        let mut blind = Trie::new(trie.root());
        let err = blind.remove(&key(U256::from(3)), &none).unwrap_err();
        assert!(matches!(err, TrieError::MissingNode { ref path, .. } if path.is_empty()), "{err}");
    }
}
