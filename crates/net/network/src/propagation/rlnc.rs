//! The RLNC scheme of the push engine: crates/rlnc's [`Proposer`] and [`Receiver`] per block.
//!
//! The proposer splits the payload into N chunks (more for large blocks, so that a chunk has at
//! most [`MAX_SCALARS_PER_CHUNK`] scalars and stays within the shared generators), commits and
//! signs; every frame it sends is a fresh random combination. A relay checks each message in
//! crates/rlnc's order — shape, signature once per block, independence from what it holds or
//! has queued (before any curve work) — and queues the chunk; the commitment check of what is
//! queued runs as one folded batch off the push engine's task ([`RlncBlock::take_batch`], then
//! [`RlncBlock::settle`]; one batch in flight per block, so that the batch grows with the load).
//! It recodes a fresh combination of what it holds (verified) for every frame it sends.

use super::{outcome::Outcome, BlockKey, BlockSigner, ProposerKey};
use gigagas_rlnc::{
    block_id, recode, Admitted, CodedChunk, Generators, Message, MessageError, Proposer, Receiver,
    Verifier, BYTES_PER_SCALAR,
};
use libp2p::PeerId;
use rand::rngs::StdRng;
use std::sync::OnceLock;

/// Most scalars per chunk (m); a block of more than `N · m · 31` bytes gets more chunks.
pub const MAX_SCALARS_PER_CHUNK: usize = 4096;

/// The Pedersen generators for chunks of `m` scalars: the first `m.next_power_of_two()`
/// generators (a commitment costs a multiscalar multiplication over all of a set's generators,
/// so the set fits the chunk within 2×), derived once per size on first use (13 sizes at most,
/// ≈ 10 MiB of precomputed tables in all). `None` above [`MAX_SCALARS_PER_CHUNK`].
pub(crate) fn generators(m: usize) -> Option<&'static Generators> {
    const SIZES: usize = MAX_SCALARS_PER_CHUNK.trailing_zeros() as usize + 1;
    static SETS: [OnceLock<Generators>; SIZES] = [const { OnceLock::new() }; SIZES];
    if m == 0 || m > MAX_SCALARS_PER_CHUNK {
        return None;
    }
    let size = m.next_power_of_two();
    Some(SETS[size.trailing_zeros() as usize].get_or_init(|| Generators::new(size)))
}

/// Scalars per chunk of a payload of `len` bytes in `n` chunks (as `Chunks::from_block` packs).
fn scalars_per_chunk(len: usize, n: usize) -> usize {
    (len + 8).div_ceil(BYTES_PER_SCALAR).max(1).div_ceil(n)
}

/// Chunks for a payload of `len` bytes: `chunks`, or more so that m stays within the
/// generators (at most crates/rlnc's `MAX_CHUNKS`).
pub(crate) fn chunk_count(len: usize, chunks: usize) -> usize {
    let scalars = (len + 8).div_ceil(BYTES_PER_SCALAR);
    chunks.max(scalars.div_ceil(MAX_SCALARS_PER_CHUNK)).min(gigagas_rlnc::message::MAX_CHUNKS)
}

/// One block's RLNC state, on the proposer or on a relay.
pub(crate) struct RlncBlock {
    key: BlockKey,
    proposer: Option<(Proposer, Vec<u8>)>,
    proposer_key: ProposerKey,
    /// Made by the first message (its m picks the generators).
    receiver: Option<Receiver<'static>>,
    /// Commitments and signature of the block (from the first valid message), for recoded
    /// messages.
    template: Option<(Vec<curve25519_dalek::ristretto::CompressedRistretto>, [u8; 96])>,
    /// Admitted chunks waiting for their commitment check, with their senders.
    queued: Vec<(PeerId, CodedChunk)>,
    /// A batch is being verified.
    checking: bool,
}

/// Queued chunks of one block to verify together, off the push engine's task.
pub(crate) struct Batch {
    /// The block's commitment check.
    pub(crate) verifier: Verifier<'static>,
    /// The chunks.
    pub(crate) chunks: Vec<CodedChunk>,
    /// Their senders, in the same order.
    pub(crate) peers: Vec<PeerId>,
}

/// What a verified batch did: the senders of each chunk, by its fate.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// Chunks that raised the rank, in order (the last may have decoded the block).
    pub(crate) useful: Vec<PeerId>,
    /// Chunks that verified but brought nothing (the block decoded first).
    pub(crate) useless: Vec<PeerId>,
    /// Chunks whose data is not the combination they claim.
    pub(crate) forged: Vec<PeerId>,
}

impl RlncBlock {
    /// The proposer's state for `payload`, and the block key.
    pub(crate) fn propose(
        payload: &[u8],
        chunks: usize,
        signer: &BlockSigner,
        rng: &mut StdRng,
    ) -> Result<(BlockKey, Self), MessageError> {
        let n = chunk_count(payload.len(), chunks);
        let m = scalars_per_chunk(payload.len(), n);
        let generators = generators(m).ok_or(MessageError::Shape { n, m })?;
        let proposer = Proposer::new(payload, n, generators, signer.secret())?;
        let first = proposer.message(rng);
        let key = block_id(n, proposer.chunks().m(), &first.commitments);
        let template = Some((first.commitments, first.signature));
        let block = Self {
            key,
            proposer: Some((proposer, payload.to_vec())),
            proposer_key: signer.public(),
            receiver: None,
            template,
            queued: Vec::new(),
            checking: false,
        };
        Ok((key, block))
    }

    /// A relay's state for block `key`, accepting messages signed by `proposer`.
    pub(crate) fn receive_as(key: BlockKey, proposer: ProposerKey) -> Self {
        Self {
            key,
            proposer: None,
            proposer_key: proposer,
            receiver: None,
            template: None,
            queued: Vec::new(),
            checking: false,
        }
    }

    /// Checks one message from `peer` up to its commitment check and queues it
    /// ([`Outcome::Queued`]), or tells why not.
    pub(crate) fn receive(&mut self, peer: PeerId, body: &[u8]) -> Result<Outcome, MessageError> {
        if self.is_decoded() {
            return Ok(Outcome::Useless);
        }
        let (n, m, _) = Message::peek(body)?;
        let Some(generators) = generators(m) else {
            return Err(MessageError::Shape { n, m });
        };
        let admitted = match self.receiver.as_mut() {
            Some(receiver) => receiver.admit(body)?,
            None => {
                // The first message names the block: its commitments must hash to the key.
                let message = Message::decode(body)?;
                let id = block_id(n, m, &message.commitments);
                if id != self.key {
                    return Err(MessageError::OtherBlock {
                        expected: alloy_primitives::hex::encode(self.key),
                        found: alloy_primitives::hex::encode(id),
                    });
                }
                let mut receiver = Receiver::new(generators, self.proposer_key.0);
                let admitted = receiver.admit(body)?;
                self.receiver = Some(receiver);
                self.template = Some((message.commitments, message.signature));
                admitted
            }
        };
        Ok(match admitted {
            Admitted::Pending(chunk) => {
                self.queued.push((peer, chunk));
                Outcome::Queued
            }
            Admitted::Useless | Admitted::AlreadyDecoded => Outcome::Useless,
        })
    }

    /// The queued chunks as one batch to verify, unless a batch is being verified already or
    /// nothing is queued.
    pub(crate) fn take_batch(&mut self) -> Option<Batch> {
        if self.checking || self.queued.is_empty() {
            return None;
        }
        let verifier = self.receiver.as_ref()?.verifier()?;
        self.checking = true;
        let (peers, chunks) = std::mem::take(&mut self.queued).into_iter().unzip();
        Some(Batch { verifier, chunks, peers })
    }

    /// Keeps the chunks of a verified batch (sent by `peers`) but those at the indices in
    /// `forged`.
    pub(crate) fn settle(
        &mut self,
        peers: Vec<PeerId>,
        chunks: Vec<CodedChunk>,
        forged: &[usize],
    ) -> Settled {
        self.checking = false;
        let mut settled = Settled::default();
        let Some(receiver) = self.receiver.as_mut() else { return settled };
        for (i, (peer, chunk)) in peers.into_iter().zip(chunks).enumerate() {
            if forged.contains(&i) {
                settled.forged.push(peer);
                continue;
            }
            match receiver.accept(chunk) {
                Ok(true) => settled.useful.push(peer),
                // Of the block's shape by construction (admitted); counted useless if not.
                Ok(false) | Err(_) => settled.useless.push(peer),
            }
        }
        if !forged.is_empty() {
            receiver.withdraw(self.queued.iter().map(|(_, c)| c));
        }
        settled
    }

    /// A fresh combination of what this node holds, as a message; `None` while it holds
    /// nothing.
    pub(crate) fn next_body(&self, rng: &mut StdRng) -> Option<Vec<u8>> {
        if let Some((proposer, _)) = &self.proposer {
            return Some(proposer.message(rng).encode());
        }
        let (commitments, signature) = self.template.as_ref()?;
        let held: Vec<_> = self.receiver.as_ref()?.decoder()?.held().cloned().collect();
        let chunk = recode(&held, rng).ok()?;
        Some(Message { chunk, commitments: commitments.clone(), signature: *signature }.encode())
    }

    /// The rank held or queued for verification and the rank that decodes (N): what this node
    /// tells its senders.
    pub(crate) fn admitted(&self) -> Option<(usize, usize)> {
        if self.proposer.is_some() {
            return self.progress();
        }
        let receiver = self.receiver.as_ref()?;
        Some((receiver.admitted_rank(), receiver.decoder()?.n()))
    }

    /// The rank held (verified) and the rank that decodes (N), once the block's shape is known.
    pub(crate) fn progress(&self) -> Option<(usize, usize)> {
        if let Some((proposer, _)) = &self.proposer {
            let n = proposer.chunks().n();
            return Some((n, n));
        }
        let decoder = self.receiver.as_ref()?.decoder()?;
        Some((decoder.rank(), decoder.n()))
    }

    /// Whether the block is known in full.
    pub(crate) fn is_decoded(&self) -> bool {
        self.proposer.is_some()
            || self.receiver.as_ref().and_then(Receiver::decoder).is_some_and(|d| d.is_complete())
    }

    /// The payload, once decoded.
    ///
    /// # Errors
    /// [`MessageError::Coding`] when the decoded data is not a packed payload.
    pub(crate) fn payload(&self) -> Result<Option<Vec<u8>>, MessageError> {
        if let Some((_, payload)) = &self.proposer {
            return Ok(Some(payload.clone()));
        }
        self.receiver.as_ref().map_or(Ok(None), Receiver::block)
    }
}

/// A few messages of `payload` coded into `chunks` chunks (fuzzing and tests).
pub fn sample_messages(payload: &[u8], chunks: usize, signer: &BlockSigner) -> Vec<Vec<u8>> {
    let mut rng = <StdRng as rand::SeedableRng>::seed_from_u64(1);
    let Ok((_, block)) = RlncBlock::propose(payload, chunks, signer, &mut rng) else {
        return Vec::new();
    };
    (0..chunks).filter_map(|_| block.next_body(&mut rng)).collect()
}
