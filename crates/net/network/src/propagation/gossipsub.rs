//! The gossipsub protocol: libp2p-gossipsub with Ethereum's consensus-layer parameters (D = 8,
//! D_low = 6, D_high = 12, heartbeat 700 ms, IDONTWANT for messages above 1 KB, anonymous
//! messages with the SHA-256 of the data as message id), one topic, the whole block per message.
//!
//! Message: `snappy(signature 96 ‖ payload)`, the proposer's BLS signature over
//! `SHA-256("gigagas/gossip/block/v1" ‖ payload)`. Messages are validated by the node before
//! they are forwarded: the signature here, the block by the node (`report_block`), so that only
//! valid blocks are re-gossiped.

use super::{BlockKey, BlockSigner, ProposerKey};
use crate::NetError;
use libp2p::gossipsub::{self, IdentTopic, MessageId};
use sha2::{Digest, Sha256};
use std::time::Duration;

/// The topic blocks are published on.
pub(crate) const TOPIC: &str = "/gigagas/blocks/1/ssz_snappy";
/// Largest decompressed message accepted (bytes).
pub(crate) const MAX_BLOCK_BYTES: usize = 16 << 20;

/// Why a gossipsub message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GossipError {
    /// Not snappy.
    #[error("bad snappy data: {0}")]
    Snappy(#[from] snap::Error),
    /// It would decompress past [`MAX_BLOCK_BYTES`].
    #[error("oversize: {0} bytes decompressed")]
    Oversize(usize),
    /// Shorter than a signature.
    #[error("message too short")]
    Short,
    /// The proposer's signature does not verify.
    #[error("bad signature")]
    BadSignature,
}

/// The topic.
pub(crate) fn topic() -> IdentTopic {
    IdentTopic::new(TOPIC)
}

/// The key of a message (its id): SHA-256 of the data.
pub(crate) fn message_key(data: &[u8]) -> BlockKey {
    Sha256::digest(data).into()
}

fn signed_digest(payload: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"gigagas/gossip/block/v1");
    h.update(payload);
    h.finalize().into()
}

/// The gossipsub behaviour with Ethereum's parameters.
///
/// # Errors
/// [`NetError::GossipsubConfig`] / [`NetError::Gossipsub`] when libp2p-gossipsub refuses the
/// parameters.
pub(crate) fn behaviour() -> Result<gossipsub::Behaviour, NetError> {
    let config = gossipsub::ConfigBuilder::default()
        .mesh_n(8)
        .mesh_n_low(6)
        .mesh_n_high(12)
        .gossip_lazy(6)
        .heartbeat_interval(Duration::from_millis(700))
        .history_length(6)
        .history_gossip(3)
        .fanout_ttl(Duration::from_secs(60))
        .max_transmit_size(MAX_BLOCK_BYTES + 1024)
        .duplicate_cache_time(Duration::from_secs(60))
        .validation_mode(gossipsub::ValidationMode::Anonymous)
        .validate_messages()
        .message_id_fn(|m: &gossipsub::Message| MessageId::new(&message_key(&m.data)))
        .idontwant_message_size_threshold(1000)
        .idontwant_on_publish(true)
        .build()?;
    gossipsub::Behaviour::new(gossipsub::MessageAuthenticity::Anonymous, config)
        .map_err(NetError::Gossipsub)
}

/// The message for `payload`, signed.
pub(crate) fn encode(payload: &[u8], signer: &BlockSigner) -> Vec<u8> {
    let mut plain = Vec::with_capacity(96 + payload.len());
    plain.extend_from_slice(&signer.sign(&signed_digest(payload)));
    plain.extend_from_slice(payload);
    snap::raw::Encoder::new().compress_vec(&plain).expect("snappy compresses any input")
}

/// The message for `payload` as the proposer would publish it (fuzzing and tests).
pub fn sample_message(payload: &[u8], signer: &BlockSigner) -> Vec<u8> {
    encode(payload, signer)
}

/// The payload of a message, its signature checked against `proposer`.
///
/// # Errors
/// [`GossipError`].
pub fn decode(data: &[u8], proposer: &ProposerKey) -> Result<Vec<u8>, GossipError> {
    let len = snap::raw::decompress_len(data)?;
    if len > MAX_BLOCK_BYTES + 96 {
        return Err(GossipError::Oversize(len));
    }
    let plain = snap::raw::Decoder::new().decompress_vec(data)?;
    if plain.len() < 96 {
        return Err(GossipError::Short);
    }
    let (signature, payload) = plain.split_at(96);
    if !proposer.verify(&signed_digest(payload), signature) {
        return Err(GossipError::BadSignature);
    }
    Ok(payload.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_messages_round_trip_and_forgeries_fail() {
        let signer = BlockSigner::from_seed(&[7; 32]).unwrap();
        let other = BlockSigner::from_seed(&[8; 32]).unwrap();
        let payload = vec![42u8; 10_000];
        let data = encode(&payload, &signer);
        assert!(data.len() < payload.len(), "snappy compresses repeated bytes");
        assert_eq!(decode(&data, &signer.public()).unwrap(), payload);
        assert_eq!(decode(&data, &other.public()), Err(GossipError::BadSignature));
        assert!(matches!(decode(&[1, 2, 3], &signer.public()), Err(GossipError::Snappy(_))));
        behaviour().unwrap();
    }
}
