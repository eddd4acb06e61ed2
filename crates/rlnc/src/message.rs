//! Signed coded-chunk messages: the proposer's side ([`Proposer`]), the wire format
//! ([`Message::encode`] / [`Message::decode`]) and the receiver's checks in order ([`Receiver`]).
//!
//! Wire format (little-endian), coefficients before data so that a receiver can refuse a useless
//! chunk before reading (or verifying) the data:
//!
//! ```text
//! version u8 (= 1) ‖ n u16 ‖ m u32 ‖ coefficients n×32 ‖ commitments n×32 (compressed Ristretto)
//!   ‖ signature 96 (BLS12-381 min-pk, G2) ‖ data m×32
//! ```
//!
//! The proposer signs `block_id = SHA-256("gigagas/rlnc/block/v1" ‖ n ‖ m ‖ C_1 ‖ … ‖ C_N)` with
//! the ciphersuite [`BLS_DST`]. A receiver checks, in this order: well-formedness (lengths,
//! limits, canonical scalars, non-zero coefficient vector), that the message belongs to its
//! block, the signature once per block (then cached), linear independence from what it holds
//! (a dependent chunk is dropped before any curve work), and `commit(data) == Σ b_i · C_i`.
//! The last check may be split off ([`Receiver::admit`], [`Verifier`], [`Receiver::accept`]):
//! a node under load then verifies what queued up in one folded batch, off its network task.

use crate::field::{from_canonical_bytes, to_bytes, Element};
use crate::{
    coding::{CodedChunk, Decoder},
    commitment::Generators,
    Chunks, RlncError,
};
use ark_ff::AdditiveGroup;
use curve25519_dalek::{ristretto::CompressedRistretto, RistrettoPoint};
use rand_core::{CryptoRng, RngCore};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// BLS signature domain separation tag (proof-of-possession ciphersuite of the IETF BLS draft,
/// min-pk variant, as Ethereum's consensus layer uses).
pub const BLS_DST: &[u8] = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";
/// Wire format version.
pub const VERSION: u8 = 1;
/// Most chunks per block a receiver accepts.
pub const MAX_CHUNKS: usize = 256;
/// Most scalars per chunk a receiver accepts (32 MiB of block data per chunk at most).
pub const MAX_SCALARS: usize = 1 << 20;
const HEADER: usize = 1 + 2 + 4;
const SIGNATURE: usize = 96;

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// Shorter than its header says.
    #[error("truncated message: {found} bytes, {expected} expected")]
    Truncated {
        /// Bytes the header implies.
        expected: usize,
        /// Bytes received.
        found: usize,
    },
    /// Longer than its header says, or beyond the limits.
    #[error("oversized message: {found} bytes, {expected} expected")]
    Oversized {
        /// Bytes the header implies (or the limit).
        expected: usize,
        /// Bytes received.
        found: usize,
    },
    /// Unknown wire version.
    #[error("unknown wire version {0}")]
    Version(u8),
    /// `n` or `m` is zero or above the limits.
    #[error("bad shape n={n} m={m}")]
    Shape {
        /// Chunks claimed.
        n: usize,
        /// Scalars per chunk claimed.
        m: usize,
    },
    /// `n` or `m` differs from the block the receiver is collecting.
    #[error("inconsistent shape n={n} m={m} for a block of n={block_n} m={block_m}")]
    InconsistentShape {
        /// Chunks claimed.
        n: usize,
        /// Scalars claimed.
        m: usize,
        /// The block's chunks.
        block_n: usize,
        /// The block's scalars.
        block_m: usize,
    },
    /// A 32-byte field is not a canonical scalar (≥ ℓ), or a data scalar exceeds 31 bytes.
    #[error("non-canonical scalar at byte {offset}")]
    NonCanonical {
        /// Offset in the message.
        offset: usize,
    },
    /// A commitment is not a valid compressed Ristretto point.
    #[error("commitment {index} is not a Ristretto point")]
    BadCommitment {
        /// Which commitment.
        index: usize,
    },
    /// The coefficient vector is zero.
    #[error("zero coefficient vector")]
    ZeroVector,
    /// The message's commitments are those of another block.
    #[error("chunk of another block {found}, collecting {expected}")]
    OtherBlock {
        /// The receiver's block id (hex).
        expected: String,
        /// The message's block id (hex).
        found: String,
    },
    /// The BLS signature does not verify under the proposer's key.
    #[error("bad signature")]
    BadSignature,
    /// The data is not the combination the coefficients claim.
    #[error("commitment check failed: data is not the claimed combination")]
    Forged,
    /// Decoding failed (see [`RlncError`]).
    #[error(transparent)]
    Coding(#[from] RlncError),
}

/// One coded chunk as sent: coefficients, the block's commitments and signature, data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The coded chunk (N coefficients, m data scalars).
    pub chunk: CodedChunk,
    /// The N commitments of the source chunks, compressed.
    pub commitments: Vec<CompressedRistretto>,
    /// BLS signature (compressed G2) over the block id.
    pub signature: [u8; SIGNATURE],
}

/// The block id the proposer signs: SHA-256 over the shape and the commitments.
pub fn block_id(n: usize, m: usize, commitments: &[CompressedRistretto]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"gigagas/rlnc/block/v1");
    h.update((n as u16).to_le_bytes());
    h.update((m as u32).to_le_bytes());
    for c in commitments {
        h.update(c.as_bytes());
    }
    h.finalize().into()
}

impl Message {
    /// Bytes on the wire.
    pub fn encoded_len(&self) -> usize {
        HEADER + 64 * self.chunk.coefficients.len() + SIGNATURE + 32 * self.chunk.data.len()
    }

    /// The wire encoding (see the module documentation).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.push(VERSION);
        out.extend_from_slice(&(self.chunk.coefficients.len() as u16).to_le_bytes());
        out.extend_from_slice(&(self.chunk.data.len() as u32).to_le_bytes());
        for c in &self.chunk.coefficients {
            out.extend_from_slice(&to_bytes(c));
        }
        for c in &self.commitments {
            out.extend_from_slice(c.as_bytes());
        }
        out.extend_from_slice(&self.signature);
        for d in &self.chunk.data {
            out.extend_from_slice(&to_bytes(d));
        }
        out
    }

    /// Reads the header and the coefficients only: `(n, m, coefficients)`, enough for a
    /// receiver to refuse a useless chunk before reading the rest.
    ///
    /// # Errors
    /// [`MessageError`] for a malformed prefix.
    pub fn peek(bytes: &[u8]) -> Result<(usize, usize, Vec<Element>), MessageError> {
        let (n, m) = shape(bytes)?;
        let coefficients = scalars(bytes, HEADER, n)?;
        if coefficients.iter().all(|c| *c == Element::ZERO) {
            return Err(MessageError::ZeroVector);
        }
        Ok((n, m, coefficients))
    }

    /// Parses a whole message, checking lengths, limits and canonical encodings (commitments
    /// are decompressed later, by the receiver, once per block).
    ///
    /// # Errors
    /// [`MessageError`] naming what is malformed.
    pub fn decode(bytes: &[u8]) -> Result<Self, MessageError> {
        let (n, m, coefficients) = Self::peek(bytes)?;
        let commitments_at = HEADER + 32 * n;
        let commitments = (0..n)
            .map(|i| {
                let at = commitments_at + 32 * i;
                CompressedRistretto::from_slice(&bytes[at..at + 32])
                    .map_err(|_| MessageError::BadCommitment { index: i })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let sig_at = commitments_at + 32 * n;
        let signature: [u8; SIGNATURE] =
            bytes[sig_at..sig_at + SIGNATURE].try_into().expect("length checked");
        let data = scalars(bytes, sig_at + SIGNATURE, m)?;
        Ok(Self { chunk: CodedChunk { coefficients, data }, commitments, signature })
    }
}

/// Header fields, with the total length checked against them.
fn shape(bytes: &[u8]) -> Result<(usize, usize), MessageError> {
    if bytes.len() < HEADER {
        return Err(MessageError::Truncated { expected: HEADER, found: bytes.len() });
    }
    if bytes[0] != VERSION {
        return Err(MessageError::Version(bytes[0]));
    }
    let n = u16::from_le_bytes([bytes[1], bytes[2]]) as usize;
    let m = u32::from_le_bytes(bytes[3..7].try_into().expect("4 bytes")) as usize;
    if n == 0 || m == 0 || n > MAX_CHUNKS || m > MAX_SCALARS {
        return Err(MessageError::Shape { n, m });
    }
    let expected = HEADER + 64 * n + SIGNATURE + 32 * m;
    match bytes.len() {
        l if l < expected => Err(MessageError::Truncated { expected, found: l }),
        l if l > expected => Err(MessageError::Oversized { expected, found: l }),
        _ => Ok((n, m)),
    }
}

/// `count` canonical scalars (each below ℓ) at `at`.
fn scalars(bytes: &[u8], at: usize, count: usize) -> Result<Vec<Element>, MessageError> {
    (0..count)
        .map(|k| {
            let offset = at + 32 * k;
            let b: [u8; 32] = bytes[offset..offset + 32].try_into().expect("length checked");
            from_canonical_bytes(&b).ok_or(MessageError::NonCanonical { offset })
        })
        .collect()
}

/// The proposer of one block: chunks, commitments, signature.
pub struct Proposer {
    chunks: Chunks,
    commitments: Vec<CompressedRistretto>,
    signature: [u8; SIGNATURE],
}

impl std::fmt::Debug for Proposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proposer")
            .field("n", &self.chunks.n())
            .field("m", &self.chunks.m())
            .finish()
    }
}

impl Proposer {
    /// Splits `block` into `n` chunks, commits to each (with `generators`, at least m of them)
    /// and signs the block id with `key`.
    ///
    /// # Errors
    /// [`RlncError::NoChunks`] when `n` is 0; [`RlncError::TooFewGenerators`] when the block's
    /// chunks have more scalars than `generators`.
    pub fn new(
        block: &[u8],
        n: usize,
        generators: &Generators,
        key: &blst::min_pk::SecretKey,
    ) -> Result<Self, RlncError> {
        let chunks = Chunks::from_block(block, n)?;
        if generators.len() < chunks.m() {
            return Err(RlncError::TooFewGenerators {
                generators: generators.len(),
                m: chunks.m(),
            });
        }
        let commitments: Vec<CompressedRistretto> =
            generators.commit_all(&chunks).iter().map(RistrettoPoint::compress).collect();
        let id = block_id(chunks.n(), chunks.m(), &commitments);
        let signature = key.sign(&id, BLS_DST, &[]).to_bytes();
        Ok(Self { chunks, commitments, signature })
    }

    /// The chunks.
    pub fn chunks(&self) -> &Chunks {
        &self.chunks
    }

    /// A message carrying a fresh random combination of the chunks.
    pub fn message<R: RngCore + CryptoRng>(&self, rng: &mut R) -> Message {
        Message {
            chunk: self.chunks.random_combination(rng),
            commitments: self.commitments.clone(),
            signature: self.signature,
        }
    }
}

/// What [`Receiver::receive`] did with a valid message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// Verified and added: the rank grew.
    Useful,
    /// Linearly dependent on what is held: dropped before any curve work.
    Useless,
    /// The block is already decoded: nothing done.
    AlreadyDecoded,
}

/// What [`Receiver::admit`] did with a well-formed, correctly signed message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// Independent of everything held or admitted before: the chunk, still to be verified
    /// (by a [`Verifier`], alone or in a batch) and then given to [`Receiver::accept`].
    Pending(CodedChunk),
    /// Linearly dependent on what is held or admitted: dropped before any curve work.
    Useless,
    /// The block is already decoded: nothing done.
    AlreadyDecoded,
}

/// The commitment check of one block's chunks, detached from its [`Receiver`] so that it can
/// run on another thread (cheap to clone: the commitments are shared).
#[derive(Debug, Clone)]
pub struct Verifier<'g> {
    generators: &'g Generators,
    commitments: Arc<[RistrettoPoint]>,
}

impl Verifier<'_> {
    /// Whether `chunk` is the combination its coefficients claim (one multiscalar
    /// multiplication of size m + N).
    pub fn verify(&self, chunk: &CodedChunk) -> bool {
        self.generators.verify(chunk, &self.commitments)
    }

    /// The indices of the forged chunks among `chunks` (empty when all are good): one folded
    /// check for the batch, chunk by chunk only when it fails (see
    /// [`Generators::verify_batch`]).
    pub fn verify_batch<R: RngCore + CryptoRng>(
        &self,
        chunks: &[CodedChunk],
        rng: &mut R,
    ) -> Vec<usize> {
        self.generators.verify_batch(chunks, &self.commitments, rng)
    }
}

/// A block's id, chunk count (N) and scalars per chunk (m).
type BlockShape = ([u8; 32], usize, usize);

/// One receiver of one block: checks messages in order and decodes.
///
/// Two ways to use it: [`Receiver::receive`] checks a message completely and keeps it; or
/// [`Receiver::admit`] does the cheap checks (shape, signature once, independence from what is
/// held *or admitted*) and hands back the chunk, which the caller verifies with
/// [`Receiver::verifier`] wherever it likes (batched, on a worker) and returns through
/// [`Receiver::accept`] — or, when forged, drops with [`Receiver::withdraw`].
pub struct Receiver<'g> {
    generators: &'g Generators,
    proposer: blst::min_pk::PublicKey,
    /// Set by the first message whose signature verifies.
    block: Option<(BlockShape, Arc<[RistrettoPoint]>)>,
    decoder: Option<Decoder>,
    /// The coefficients (no data, m = 0) of the chunks held and of those admitted but not yet
    /// accepted: what a new chunk must be independent of.
    span: Option<Decoder>,
}

impl std::fmt::Debug for Receiver<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Receiver")
            .field("rank", &self.decoder.as_ref().map(Decoder::rank))
            .field("admitted", &self.span.as_ref().map(Decoder::rank))
            .finish()
    }
}

impl<'g> Receiver<'g> {
    /// A receiver expecting blocks signed by `proposer`.
    pub fn new(generators: &'g Generators, proposer: blst::min_pk::PublicKey) -> Self {
        Self { generators, proposer, block: None, decoder: None, span: None }
    }

    /// Independent chunks held (verified).
    pub fn rank(&self) -> usize {
        self.decoder.as_ref().map_or(0, Decoder::rank)
    }

    /// Independent chunks held or admitted (verified or not): the rank this receiver will have
    /// once what it admitted is accepted.
    pub fn admitted_rank(&self) -> usize {
        self.span.as_ref().map_or(0, Decoder::rank)
    }

    /// The decoder (e.g. to recode from what is held).
    pub fn decoder(&self) -> Option<&Decoder> {
        self.decoder.as_ref()
    }

    /// The commitment check of this block's chunks, once the first message was admitted.
    pub fn verifier(&self) -> Option<Verifier<'g>> {
        let (_, commitments) = self.block.as_ref()?;
        Some(Verifier { generators: self.generators, commitments: commitments.clone() })
    }

    /// The block, once `n` independent chunks are held.
    ///
    /// # Errors
    /// [`MessageError::Coding`] when the decoded data is not a packed block.
    pub fn block(&self) -> Result<Option<Vec<u8>>, MessageError> {
        Ok(self.decoder.as_ref().map(Decoder::decode).transpose()?.flatten())
    }

    /// Checks a message from the wire and keeps it if useful, in the order of the module
    /// documentation (the commitment check included, on this thread).
    ///
    /// # Errors
    /// [`MessageError`] for a malformed, foreign, unsigned or forged message; nothing is kept.
    pub fn receive(&mut self, bytes: &[u8]) -> Result<Received, MessageError> {
        let chunk = match self.admit(bytes)? {
            Admitted::Pending(chunk) => chunk,
            Admitted::Useless => return Ok(Received::Useless),
            Admitted::AlreadyDecoded => return Ok(Received::AlreadyDecoded),
        };
        let verifier = self.verifier().expect("set by admit");
        if !verifier.verify(&chunk) {
            self.withdraw(std::iter::empty());
            return Err(MessageError::Forged);
        }
        self.accept(chunk)?;
        Ok(Received::Useful)
    }

    /// Steps 1–3 of the module documentation: well-formedness, the signature (once per
    /// block), independence from every chunk held or admitted. An independent chunk is
    /// admitted (it counts in [`Receiver::admitted_rank`]) and returned for verification.
    ///
    /// # Errors
    /// [`MessageError`] for a malformed, foreign or unsigned message; nothing is admitted.
    pub fn admit(&mut self, bytes: &[u8]) -> Result<Admitted, MessageError> {
        // 1. Well-formedness, from the header and the coefficients alone.
        let (n, m, coefficients) = Message::peek(bytes)?;
        if let Some(((_, bn, bm), _)) = &self.block {
            if (n, m) != (*bn, *bm) {
                return Err(MessageError::InconsistentShape { n, m, block_n: *bn, block_m: *bm });
            }
            if self.decoder.as_ref().is_some_and(Decoder::is_complete) {
                return Ok(Admitted::AlreadyDecoded);
            }
            // 3 (early). A dependent chunk is dropped before reading the rest.
            if !self.span.as_ref().is_some_and(|d| d.is_useful(&coefficients)) {
                return Ok(Admitted::Useless);
            }
        }
        let msg = Message::decode(bytes)?;
        let id = block_id(n, m, &msg.commitments);
        // 2. Same block; signature once per block.
        match &self.block {
            Some(((known, _, _), _)) if *known != id => {
                return Err(MessageError::OtherBlock { expected: hex(known), found: hex(&id) });
            }
            Some(_) => {}
            None => {
                let sig = blst::min_pk::Signature::from_bytes(&msg.signature)
                    .map_err(|_| MessageError::BadSignature)?;
                if sig.verify(true, &id, BLS_DST, &[], &self.proposer, false)
                    != blst::BLST_ERROR::BLST_SUCCESS
                {
                    return Err(MessageError::BadSignature);
                }
                let points = msg
                    .commitments
                    .iter()
                    .enumerate()
                    .map(|(i, c)| c.decompress().ok_or(MessageError::BadCommitment { index: i }))
                    .collect::<Result<Vec<_>, _>>()?;
                if self.generators.len() < m {
                    return Err(MessageError::Shape { n, m });
                }
                self.block = Some(((id, n, m), points.into()));
                self.decoder = Some(Decoder::new(n, m));
                self.span = Some(Decoder::new(n, 0));
            }
        }
        let span = self.span.as_mut().expect("set with the block");
        let coefficients =
            CodedChunk { coefficients: msg.chunk.coefficients.clone(), data: vec![] };
        if !span.add(coefficients)? {
            return Ok(Admitted::Useless);
        }
        Ok(Admitted::Pending(msg.chunk))
    }

    /// Keeps an admitted chunk that verified; whether it raised the rank (`false` once the
    /// block is decoded, or when it is dependent on what is held after a
    /// [`Receiver::withdraw`]).
    ///
    /// # Errors
    /// [`MessageError::Coding`] for a chunk of another shape than the block's.
    pub fn accept(&mut self, chunk: CodedChunk) -> Result<bool, MessageError> {
        match self.decoder.as_mut() {
            Some(decoder) if !decoder.is_complete() => Ok(decoder.add(chunk)?),
            _ => Ok(false),
        }
    }

    /// Forgets admitted chunks that failed verification: the admitted span is rebuilt from the
    /// chunks held and `still_pending` (the admitted chunks not yet accepted nor refused).
    pub fn withdraw<'c>(&mut self, still_pending: impl IntoIterator<Item = &'c CodedChunk>) {
        let (Some(decoder), Some(span)) = (&self.decoder, &mut self.span) else { return };
        let mut rebuilt = Decoder::new(decoder.n(), 0);
        let held = decoder.held().map(|c| &c.coefficients);
        for coefficients in held.chain(still_pending.into_iter().map(|c| &c.coefficients)) {
            let _ = rebuilt.add(CodedChunk { coefficients: coefficients.clone(), data: vec![] });
        }
        *span = rebuilt;
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    fn key(seed: u8) -> blst::min_pk::SecretKey {
        blst::min_pk::SecretKey::key_gen(&[seed; 32], &[]).unwrap()
    }

    fn setup(len: usize, n: usize) -> (Vec<u8>, Proposer, Generators, blst::min_pk::PublicKey) {
        let mut block = vec![0u8; len];
        StdRng::seed_from_u64(len as u64).fill_bytes(&mut block);
        let chunks = Chunks::from_block(&block, n).unwrap();
        let g = Generators::new(chunks.m());
        let sk = key(1);
        let p = Proposer::new(&block, n, &g, &sk).unwrap();
        (block, p, g, sk.sk_to_pk())
    }

    #[test]
    fn signed_messages_round_trip_and_decode() {
        let mut rng = StdRng::seed_from_u64(5);
        let (block, p, g, pk) = setup(118_750, 10);
        let mut r = Receiver::new(&g, pk);
        let mut useful = 0;
        while r.block().unwrap().is_none() {
            let msg = p.message(&mut rng);
            let bytes = msg.encode();
            assert_eq!(bytes.len(), msg.encoded_len());
            assert_eq!(Message::decode(&bytes).unwrap(), msg);
            assert_eq!(r.receive(&bytes).unwrap(), Received::Useful);
            useful += 1;
        }
        assert_eq!(useful, 10);
        assert_eq!(r.block().unwrap(), Some(block));
        assert_eq!(r.receive(&p.message(&mut rng).encode()).unwrap(), Received::AlreadyDecoded);
    }

    #[test]
    fn bad_messages_are_refused_with_their_reason() {
        let mut rng = StdRng::seed_from_u64(6);
        let (_, p, g, pk) = setup(5_000, 4);
        let good = p.message(&mut rng).encode();
        let mut r = Receiver::new(&g, pk);
        // Wrong signer.
        let other = Proposer::new(&[1, 2, 3], 4, &g, &key(2)).unwrap();
        let mut r2 = Receiver::new(&g, pk);
        assert_eq!(r2.receive(&other.message(&mut rng).encode()), Err(MessageError::BadSignature));
        // Truncated, oversized, version, zero vector.
        assert!(matches!(r.receive(&good[..good.len() - 1]), Err(MessageError::Truncated { .. })));
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(r.receive(&long), Err(MessageError::Oversized { .. })));
        let mut v = good.clone();
        v[0] = 9;
        assert_eq!(r.receive(&v), Err(MessageError::Version(9)));
        let mut zero = good.clone();
        zero[HEADER..HEADER + 32 * 4].fill(0);
        assert_eq!(r.receive(&zero), Err(MessageError::ZeroVector));
        // Forged data: a data scalar changed; forged coefficient.
        assert_eq!(r.receive(&good).unwrap(), Received::Useful);
        let mut forged = p.message(&mut rng).encode();
        let last = forged.len() - 32;
        forged[last] ^= 1;
        assert_eq!(r.receive(&forged), Err(MessageError::Forged));
        let mut forged = p.message(&mut rng).encode();
        forged[HEADER] ^= 1;
        assert_eq!(r.receive(&forged), Err(MessageError::Forged));
        // Chunks of another block from the same signer; inconsistent N.
        let other_block = Proposer::new(&[7u8; 5_000], 4, &g, &key(1)).unwrap();
        assert!(matches!(
            r.receive(&other_block.message(&mut rng).encode()),
            Err(MessageError::OtherBlock { .. })
        ));
        let other_n = Proposer::new(&[7u8; 5_000], 5, &g, &key(1)).unwrap();
        assert!(matches!(
            r.receive(&other_n.message(&mut rng).encode()),
            Err(MessageError::InconsistentShape { .. })
        ));
        // A resent chunk is useless and costs no curve work.
        assert_eq!(r.receive(&good).unwrap(), Received::Useless);
        assert_eq!(r.rank(), 1);
    }

    /// The split path: chunks admitted while others wait for verification are checked for
    /// independence against those too; a batch verified on another thread is accepted; a
    /// forged chunk in a batch is named, withdrawn, and its dimension is admitted again later.
    #[test]
    fn admitted_chunks_verify_in_a_batch_elsewhere() {
        let mut rng = StdRng::seed_from_u64(8);
        let (block, p, g, pk) = setup(40_000, 6);
        let mut r = Receiver::new(&g, pk);
        let first = p.message(&mut rng).encode();
        let Admitted::Pending(a) = r.admit(&first).unwrap() else { panic!("independent") };
        // The same chunk again, not yet verified: dependent on what was admitted.
        assert_eq!(r.admit(&first).unwrap(), Admitted::Useless);
        assert_eq!((r.rank(), r.admitted_rank()), (0, 1));
        let mut pending = vec![a];
        for _ in 0..3 {
            let Admitted::Pending(c) = r.admit(&p.message(&mut rng).encode()).unwrap() else {
                panic!("independent")
            };
            pending.push(c);
        }
        // Forge the third: the batch check, run on another thread, names it.
        pending[2].data[0] += Element::from(1u64);
        let verifier = r.verifier().unwrap();
        let batch = pending.clone();
        let bad = std::thread::scope(|s| {
            s.spawn(|| verifier.verify_batch(&batch, &mut StdRng::seed_from_u64(9))).join()
        })
        .unwrap();
        assert_eq!(bad, vec![2]);
        for (i, c) in pending.into_iter().enumerate() {
            if !bad.contains(&i) {
                assert!(r.accept(c).unwrap());
            }
        }
        r.withdraw(std::iter::empty());
        assert_eq!((r.rank(), r.admitted_rank()), (3, 3));
        // The rest come by the one-step path and decode the block.
        while r.block().unwrap().is_none() {
            assert_eq!(r.receive(&p.message(&mut rng).encode()).unwrap(), Received::Useful);
        }
        assert_eq!(r.block().unwrap(), Some(block));
        assert_eq!(r.admit(&first).unwrap(), Admitted::AlreadyDecoded);
        assert!(!r.accept(p.chunks().random_combination(&mut rng)).unwrap(), "decoded already");
    }

    /// Random bytes and random mutations of valid messages: never a panic, never a forgery
    /// accepted (every accepted chunk keeps the decoder on the true block).
    #[test]
    fn random_inputs_never_panic_nor_forge() {
        let mut rng = StdRng::seed_from_u64(7);
        let (block, p, g, pk) = setup(3_000, 4);
        let mut r = Receiver::new(&g, pk);
        for round in 0..3_000 {
            let mut bytes = if round % 3 == 0 {
                let len = rng.gen_range(0..600);
                (0..len).map(|_| rng.gen::<u8>()).collect()
            } else {
                p.message(&mut rng).encode()
            };
            if round % 3 != 2 {
                for _ in 0..rng.gen_range(1..4) {
                    let i = rng.gen_range(0..bytes.len().max(1));
                    if let Some(b) = bytes.get_mut(i) {
                        *b ^= 1 << rng.gen_range(0..8);
                    }
                }
            }
            let _ = r.receive(&bytes);
            let _ = Message::decode(&bytes);
        }
        assert_eq!(r.block().unwrap(), Some(block));
    }
}
