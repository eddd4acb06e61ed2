//! Random linear network coding (RLNC) of blocks over the Ristretto255 scalar field, the coding
//! layer of gigagas' block propagation (the proposal in `../shared/MISSION.md`). No I/O.
//!
//! Coding arithmetic runs in Montgomery form ([`field`], ark-ff); commitments use
//! curve25519-dalek. A block (any byte string) is packed into scalars, 31 bytes each (2^248 is below the group
//! order ℓ ≈ 2^252, so every 31-byte string is a canonical scalar), behind an 8-byte length
//! prefix, and split into `N` chunks of `m` scalars ([`Chunks::from_block`]). A coded chunk is a
//! linear combination `Σ c_i · chunk_i` carried with its `N` coefficients ([`CodedChunk`]);
//! anyone holding coded chunks can [`recode`] a fresh random combination of them, and a
//! [`Decoder`] keeps what it received in reduced echelon form, drops a chunk that is linearly
//! dependent on what it holds before touching its data, and recovers the block once it holds
//! `N` independent chunks.
//!
//! [`Generators`] commit to chunks (Pedersen vector commitments over Ristretto255) and check a
//! coded chunk against the proposer's commitments, one by one or folded in a batch. A
//! [`Proposer`] signs the commitments (BLS12-381, blst); [`Message`] is the wire format and
//! [`Receiver`] checks messages in the proposal's order (well-formedness, signature once per
//! block, independence before any curve work, commitment) with typed errors ([`MessageError`]).

mod coding;
pub mod commitment;
pub mod field;
pub mod message;

pub use commitment::Generators;
pub use field::Element;
pub use message::{
    block_id, Admitted, Message, MessageError, Proposer, Received, Receiver, Verifier,
};

pub use coding::{recode, Chunks, CodedChunk, Decoder, RlncError, BYTES_PER_SCALAR};
