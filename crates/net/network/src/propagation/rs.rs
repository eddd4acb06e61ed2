//! The Reed-Solomon scheme of the push engine: the payload in K original shards plus K recovery
//! shards (systematic, reed-solomon-simd), any K of the 2K recovering it; every shard carries a
//! Merkle proof against a root the proposer signs, so that a relay checks a shard without the
//! rest. Relays forward the shards they hold (they cannot recode); after decoding, a node
//! re-encodes all 2K shards and checks that they hash to the signed root (so that no two sets of
//! K shards can decode to different payloads), then can serve any shard.
//!
//! Message (little-endian), header and proof before the data:
//!
//! ```text
//! version u8 (= 1) ‖ k u16 ‖ r u16 ‖ shard bytes u32 ‖ root 32 ‖ signature 96
//!   ‖ index u16 ‖ depth u8 ‖ proof depth×32 ‖ shard
//! ```
//!
//! The block key (what is signed) is `SHA-256("gigagas/rs/block/v1" ‖ root ‖ k ‖ r ‖ shard
//! bytes)`; leaves are `SHA-256(0x00 ‖ index u16 ‖ shard)`, inner nodes `SHA-256(0x01 ‖ l ‖ r)`,
//! the leaf count padded to a power of two with zero hashes.

use super::{outcome::Outcome, BlockKey, BlockSigner, ProposerKey};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashSet};

const VERSION: u8 = 1;
const HEAD: usize = 1 + 2 + 2 + 4 + 32 + 96;
/// Most original (and recovery) shards per block.
pub const MAX_SHARDS: usize = 256;
/// Most bytes per shard (a 64 MiB payload at 256 shards).
pub const MAX_SHARD_BYTES: usize = 256 << 10;

/// Why an RS message was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RsError {
    /// Shorter or longer than its header says.
    #[error("bad length {found}, {expected} expected")]
    Length {
        /// Implied by the header.
        expected: usize,
        /// Received.
        found: usize,
    },
    /// Unknown version.
    #[error("unknown wire version {0}")]
    Version(u8),
    /// Shard counts or size out of bounds.
    #[error("bad shape k={k} r={r} shard={shard_bytes}")]
    Shape {
        /// Original shards.
        k: usize,
        /// Recovery shards.
        r: usize,
        /// Bytes per shard.
        shard_bytes: usize,
    },
    /// Header of another block than the frame's key.
    #[error("header of another block")]
    OtherBlock,
    /// The signature does not verify.
    #[error("bad signature")]
    BadSignature,
    /// Shard index out of range or proof of the wrong depth.
    #[error("bad index {0}")]
    Index(usize),
    /// The Merkle proof does not lead to the signed root.
    #[error("Merkle proof of shard {0} does not match the signed root")]
    Forged(usize),
    /// The decoded shards do not re-encode to the signed root, or the length is wrong.
    #[error("decoded shards are inconsistent with the signed root")]
    Inconsistent,
    /// reed-solomon-simd refused.
    #[error("reed-solomon: {0}")]
    Coding(#[from] reed_solomon_simd::Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    k: usize,
    r: usize,
    shard_bytes: usize,
    root: [u8; 32],
}

impl Shape {
    fn key(&self) -> BlockKey {
        let mut h = Sha256::new();
        h.update(b"gigagas/rs/block/v1");
        h.update(self.root);
        h.update((self.k as u16).to_le_bytes());
        h.update((self.r as u16).to_le_bytes());
        h.update((self.shard_bytes as u32).to_le_bytes());
        h.finalize().into()
    }

    fn total(&self) -> usize {
        self.k + self.r
    }

    fn depth(&self) -> usize {
        self.total().next_power_of_two().trailing_zeros() as usize
    }
}

fn leaf(index: usize, shard: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update((index as u16).to_le_bytes());
    h.update(shard);
    h.finalize().into()
}

fn inner(l: &[u8; 32], r: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(l);
    h.update(r);
    h.finalize().into()
}

/// The tree's levels, leaves first, the leaf count padded to a power of two.
fn tree(shards: &[Vec<u8>]) -> Vec<Vec<[u8; 32]>> {
    let mut level: Vec<[u8; 32]> = shards.iter().enumerate().map(|(i, s)| leaf(i, s)).collect();
    level.resize(shards.len().next_power_of_two(), [0; 32]);
    let mut levels = vec![level];
    while levels.last().expect("one level").len() > 1 {
        let next =
            levels.last().expect("one level").chunks(2).map(|p| inner(&p[0], &p[1])).collect();
        levels.push(next);
    }
    levels
}

fn proof(levels: &[Vec<[u8; 32]>], index: usize) -> Vec<[u8; 32]> {
    let mut i = index;
    levels[..levels.len() - 1]
        .iter()
        .map(|level| {
            let sibling = level[i ^ 1];
            i /= 2;
            sibling
        })
        .collect()
}

fn verify(root: &[u8; 32], index: usize, shard: &[u8], proof: &[[u8; 32]]) -> bool {
    let mut node = leaf(index, shard);
    let mut i = index;
    for sibling in proof {
        node = if i.is_multiple_of(2) { inner(&node, sibling) } else { inner(sibling, &node) };
        i /= 2;
    }
    node == *root
}

/// All 2K shards of `payload` split into `k` originals (8-byte length prefix, zero padding).
fn encode_shards(payload: &[u8], k: usize) -> Result<Vec<Vec<u8>>, RsError> {
    let total = 8 + payload.len();
    let shard_bytes = total.div_ceil(k).next_multiple_of(2).max(2);
    let mut bytes = Vec::with_capacity(k * shard_bytes);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes.resize(k * shard_bytes, 0);
    let mut shards: Vec<Vec<u8>> = bytes.chunks_exact(shard_bytes).map(<[u8]>::to_vec).collect();
    let recovery = reed_solomon_simd::encode(k, k, &shards)?;
    shards.extend(recovery);
    Ok(shards)
}

/// Original shards for a payload of `len` bytes: `chunks`, or more so that a shard stays
/// within [`MAX_SHARD_BYTES`].
fn shard_count(len: usize, chunks: usize) -> usize {
    chunks.max((len + 8).div_ceil(MAX_SHARD_BYTES)).clamp(1, MAX_SHARDS)
}

/// A block known in full: all 2K shards, the Merkle tree's levels, the payload.
type Full = (Vec<Vec<u8>>, Vec<Vec<[u8; 32]>>, Vec<u8>);

/// One block's Reed-Solomon state, on the proposer or on a relay.
pub(crate) struct RsBlock {
    key: BlockKey,
    proposer: ProposerKey,
    shape: Option<(Shape, [u8; 96])>,
    /// Shards held by index, with their proofs (forwarded as received until decoding).
    held: BTreeMap<usize, (Vec<u8>, Vec<[u8; 32]>)>,
    /// Shard indices in the order they arrived.
    arrival: Vec<usize>,
    /// Where the round over all shards goes on (proposer, decoded nodes).
    cursor: usize,
    /// Once decoded (or on the proposer): all shards, the tree, the payload.
    full: Option<Full>,
}

impl RsBlock {
    /// The proposer's state for `payload`, and the block key.
    pub(crate) fn propose(
        payload: &[u8],
        chunks: usize,
        signer: &BlockSigner,
    ) -> Result<(BlockKey, Self), RsError> {
        let k = shard_count(payload.len(), chunks);
        let shards = encode_shards(payload, k)?;
        let levels = tree(&shards);
        let root = levels.last().expect("a root")[0];
        let shape = Shape { k, r: k, shard_bytes: shards[0].len(), root };
        let key = shape.key();
        let signature = signer.sign(&key);
        let block = Self {
            key,
            proposer: signer.public(),
            shape: Some((shape, signature)),
            held: BTreeMap::new(),
            arrival: Vec::new(),
            cursor: 0,
            full: Some((shards, levels, payload.to_vec())),
        };
        Ok((key, block))
    }

    /// A relay's state for block `key`, accepting shards signed by `proposer`.
    pub(crate) fn receive_as(key: BlockKey, proposer: ProposerKey) -> Self {
        Self {
            key,
            proposer,
            shape: None,
            held: BTreeMap::new(),
            arrival: Vec::new(),
            cursor: 0,
            full: None,
        }
    }

    /// Checks and keeps one shard message.
    pub(crate) fn receive(&mut self, body: &[u8]) -> Result<Outcome, RsError> {
        if self.full.is_some() {
            return Ok(Outcome::Useless);
        }
        let (shape, signature, index, proof, shard) = parse(body)?;
        match &self.shape {
            Some((known, _)) if *known != shape => return Err(RsError::OtherBlock),
            Some(_) => {}
            None => {
                if shape.key() != self.key {
                    return Err(RsError::OtherBlock);
                }
                if !self.proposer.verify(&self.key, &signature) {
                    return Err(RsError::BadSignature);
                }
                self.shape = Some((shape, signature));
            }
        }
        if self.held.contains_key(&index) {
            return Ok(Outcome::Useless);
        }
        if !verify(&shape.root, index, shard, &proof) {
            return Err(RsError::Forged(index));
        }
        self.held.insert(index, (shard.to_vec(), proof));
        self.arrival.push(index);
        if self.held.len() < shape.k {
            return Ok(Outcome::Useful);
        }
        self.decode(shape)?;
        Ok(Outcome::Decoded)
    }

    fn decode(&mut self, shape: Shape) -> Result<(), RsError> {
        let k = shape.k;
        let mut originals: Vec<Option<Vec<u8>>> =
            (0..k).map(|i| self.held.get(&i).map(|(s, _)| s.clone())).collect();
        if originals.iter().any(Option::is_none) {
            let restored = reed_solomon_simd::decode(
                k,
                shape.r,
                self.held.iter().filter(|(i, _)| **i < k).map(|(i, (s, _))| (*i, s)),
                self.held.iter().filter(|(i, _)| **i >= k).map(|(i, (s, _))| (*i - k, s)),
            )?;
            for (i, shard) in restored {
                originals[i] = Some(shard);
            }
        }
        let data: Vec<u8> = originals.into_iter().flat_map(Option::unwrap_or_default).collect();
        let len = u64::from_le_bytes(data[..8].try_into().expect("8 bytes")) as usize;
        if 8 + len > data.len() {
            return Err(RsError::Inconsistent);
        }
        let payload = data[8..8 + len].to_vec();
        let shards = encode_shards(&payload, k)?;
        let levels = tree(&shards);
        if levels.last().expect("a root")[0] != shape.root || shards[0].len() != shape.shard_bytes {
            return Err(RsError::Inconsistent);
        }
        self.held.clear();
        self.full = Some((shards, levels, payload));
        Ok(())
    }

    /// A shard this node holds and has not exchanged with the peer yet (`exchanged` is updated);
    /// `None` when there is none.
    pub(crate) fn next_body(&mut self, exchanged: &mut HashSet<usize>) -> Option<Vec<u8>> {
        let (shape, signature) = self.shape.as_ref()?;
        let index = match &self.full {
            // The proposer (or a node that decoded) goes round the shards, across all peers,
            // so that its first 2K sends carry every shard once.
            Some((shards, _, _)) => {
                let total = shards.len();
                let index = (0..total)
                    .map(|i| (self.cursor + i) % total)
                    .find(|i| !exchanged.contains(i))?;
                self.cursor = index + 1;
                index
            }
            // A relay forwards the newest shard it holds that the peer lacks.
            None => self.arrival.iter().rev().copied().find(|i| !exchanged.contains(i))?,
        };
        exchanged.insert(index);
        Some(match &self.full {
            Some((shards, levels, _)) => {
                message(shape, signature, index, &proof(levels, index), &shards[index])
            }
            // A relay keeps no tree before decoding: it forwards the proof it received.
            None => {
                let (shard, path) = self.held.get(&index)?;
                message(shape, signature, index, path, shard)
            }
        })
    }

    /// The shard index of a message (to remember that its sender holds it).
    pub(crate) fn index_of(body: &[u8]) -> Option<usize> {
        check_message(body).ok()
    }

    /// Distinct shards held and the shards that decode (K), once the block's shape is known.
    pub(crate) fn progress(&self) -> Option<(usize, usize)> {
        let (shape, _) = self.shape.as_ref()?;
        let held = if self.full.is_some() { shape.k } else { self.held.len().min(shape.k) };
        Some((held, shape.k))
    }

    /// Whether the block is known in full.
    pub(crate) fn is_decoded(&self) -> bool {
        self.full.is_some()
    }

    /// The payload, once decoded.
    pub(crate) fn payload(&self) -> Option<Vec<u8>> {
        self.full.as_ref().map(|(_, _, p)| p.clone())
    }
}

fn message(
    shape: &Shape,
    signature: &[u8; 96],
    index: usize,
    proof: &[[u8; 32]],
    shard: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD + 3 + 32 * proof.len() + shard.len());
    out.push(VERSION);
    out.extend_from_slice(&(shape.k as u16).to_le_bytes());
    out.extend_from_slice(&(shape.r as u16).to_le_bytes());
    out.extend_from_slice(&(shape.shard_bytes as u32).to_le_bytes());
    out.extend_from_slice(&shape.root);
    out.extend_from_slice(signature);
    out.extend_from_slice(&(index as u16).to_le_bytes());
    out.push(proof.len() as u8);
    for p in proof {
        out.extend_from_slice(p);
    }
    out.extend_from_slice(shard);
    out
}

type Parsed<'a> = (Shape, [u8; 96], usize, Vec<[u8; 32]>, &'a [u8]);

/// Every message of `payload` coded into `chunks` original shards (fuzzing and tests; empty
/// when reed-solomon-simd refuses the shape).
pub fn sample_messages(payload: &[u8], chunks: usize, signer: &BlockSigner) -> Vec<Vec<u8>> {
    let Ok((_, mut block)) = RsBlock::propose(payload, chunks, signer) else { return Vec::new() };
    let mut exchanged = HashSet::new();
    std::iter::from_fn(|| block.next_body(&mut exchanged)).collect()
}

/// Checks a message's shape and bounds (what a relay does before any hashing) and returns
/// the shard index it carries.
///
/// # Errors
/// [`RsError`]; never panics, whatever the bytes.
pub fn check_message(body: &[u8]) -> Result<usize, RsError> {
    parse(body).map(|(_, _, index, _, _)| index)
}

/// Parses a message, checking every bound before reading (never panics).
fn parse(body: &[u8]) -> Result<Parsed<'_>, RsError> {
    if body.len() < HEAD + 3 {
        return Err(RsError::Length { expected: HEAD + 3, found: body.len() });
    }
    if body[0] != VERSION {
        return Err(RsError::Version(body[0]));
    }
    let k = u16::from_le_bytes([body[1], body[2]]) as usize;
    let r = u16::from_le_bytes([body[3], body[4]]) as usize;
    let shard_bytes = u32::from_le_bytes(body[5..9].try_into().expect("4 bytes")) as usize;
    if k == 0
        || r == 0
        || k > MAX_SHARDS
        || r > MAX_SHARDS
        || shard_bytes == 0
        || !shard_bytes.is_multiple_of(2)
        || shard_bytes > MAX_SHARD_BYTES
    {
        return Err(RsError::Shape { k, r, shard_bytes });
    }
    let root: [u8; 32] = body[9..41].try_into().expect("32 bytes");
    let signature: [u8; 96] = body[41..HEAD].try_into().expect("96 bytes");
    let shape = Shape { k, r, shard_bytes, root };
    let index = u16::from_le_bytes([body[HEAD], body[HEAD + 1]]) as usize;
    let depth = body[HEAD + 2] as usize;
    if index >= shape.total() || depth != shape.depth() {
        return Err(RsError::Index(index));
    }
    let expected = HEAD + 3 + 32 * depth + shard_bytes;
    if body.len() != expected {
        return Err(RsError::Length { expected, found: body.len() });
    }
    let proof = body[HEAD + 3..HEAD + 3 + 32 * depth]
        .chunks_exact(32)
        .map(|c| c.try_into().expect("32 bytes"))
        .collect();
    Ok((shape, signature, index, proof, &body[HEAD + 3 + 32 * depth..]))
}
