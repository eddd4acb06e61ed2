//! The RLPx frame MAC (devp2p `rlpx.md`, "MAC"): a running Keccak-256 over everything sent in
//! one direction, each header and frame folded in through one AES-256 block encryption under
//! the MAC secret, so that a frame can only be checked by whoever holds the session's secrets.

use aes::{
    cipher::{BlockEncrypt, KeyInit},
    Aes256,
};
use alloy_primitives::{Keccak256, B128, B256};

/// One direction's MAC state: the Keccak-256 sponge and the AES-256 key it is mixed with.
#[derive(Clone)]
pub(crate) struct Mac {
    cipher: Aes256,
    hash: Keccak256,
}

impl std::fmt::Debug for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mac")
    }
}

impl Mac {
    /// A MAC keyed with `secret`, its sponge not yet fed.
    pub(crate) fn new(secret: B256) -> Self {
        Self { cipher: Aes256::new(secret.as_slice().into()), hash: Keccak256::new() }
    }

    /// Feeds `data` to the sponge.
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.hash.update(data);
    }

    /// The first 16 bytes of the sponge's current digest (the sponge goes on).
    pub(crate) fn digest(&self) -> B128 {
        B128::from_slice(&self.hash.clone().finalize()[..16])
    }

    /// The sponge's whole current digest (the sponge goes on).
    #[cfg(test)]
    pub(crate) fn full_digest(&self) -> B256 {
        self.hash.clone().finalize()
    }

    /// `AES(mac-secret, digest) ^ seed` folded into the sponge.
    fn mix(&mut self, seed: &[u8; 16]) {
        let mut block = self.digest().0.into();
        self.cipher.encrypt_block(&mut block);
        for (b, s) in block.iter_mut().zip(seed) {
            *b ^= s;
        }
        self.hash.update(block);
    }

    /// Folds in a frame header's ciphertext; the header MAC is [`Mac::digest`] after it.
    pub(crate) fn update_header(&mut self, header_ciphertext: &[u8; 16]) {
        self.mix(header_ciphertext);
    }

    /// Folds in a frame body's ciphertext; the frame MAC is [`Mac::digest`] after it.
    pub(crate) fn update_body(&mut self, body_ciphertext: &[u8]) {
        self.hash.update(body_ciphertext);
        let seed = self.digest().0;
        self.mix(&seed);
    }
}
