//! RLPx's transport encryption (devp2p `rlpx.md`): the ECIES handshake of EIP-8 and the
//! framed session it keys, shaped after reth's `crates/net/ecies`.
//!
//! Flow: [`EciesStream::connect`] (dialing a node id) or [`EciesStream::accept`] runs the
//! auth/ack exchange ([`Handshake`], `algorithm.rs`) within 5 s; both sides derive the frame
//! key and MAC secrets; the stream then carries frames ([`FrameCodec`], `codec.rs`), each
//! header and body checked by the running MAC (`mac.rs`) before it is decrypted. What a frame
//! holds (message ids, snappy, `Hello`) is the next layer's (`gigagas-eth-wire`).

mod algorithm;
mod codec;
mod error;
mod mac;
mod stream;

pub use algorithm::{peer_id, public_key, random_secret_key, Handshake, Secrets, ECIES_OVERHEAD};
pub use codec::{FrameCodec, MAX_FRAME};
pub use error::EciesError;
pub use k256::SecretKey;
pub use stream::{EciesStream, HANDSHAKE_TIMEOUT, MAX_HANDSHAKE_PACKET};

/// A node id: the 64-byte uncompressed secp256k1 public key without its `0x04` prefix (what an
/// `enode://` URL carries before the `@`).
pub type PeerId = alloy_primitives::B512;
