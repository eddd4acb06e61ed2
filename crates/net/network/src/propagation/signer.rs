//! The proposer's BLS12-381 key (min-pk, as Ethereum's consensus layer and crates/rlnc use):
//! it signs every block it publishes; every node checks that signature once per block against
//! the proposer key it was given (`--gossip.proposer`).

use gigagas_rlnc::message::BLS_DST;
use std::{fmt, path::Path, sync::Arc};

/// Errors reading or writing the proposer's key.
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    /// The key file cannot be read or written.
    #[error("BLS key file {path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file or the hex is not a key.
    #[error("not a BLS key: {0}")]
    Malformed(String),
}

/// The proposer's secret key (derived with `KeyGen` from a 32-byte seed).
#[derive(Clone)]
pub struct BlockSigner(Arc<blst::min_pk::SecretKey>);

impl fmt::Debug for BlockSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlockSigner({})", self.public())
    }
}

impl BlockSigner {
    /// The key derived from `seed` (at least 32 bytes).
    ///
    /// # Errors
    /// [`SignerError::Malformed`] for a short seed.
    pub fn from_seed(seed: &[u8]) -> Result<Self, SignerError> {
        blst::min_pk::SecretKey::key_gen(seed, &[])
            .map(|k| Self(Arc::new(k)))
            .map_err(|e| SignerError::Malformed(format!("{e:?}")))
    }

    /// The secret key.
    pub fn secret(&self) -> &blst::min_pk::SecretKey {
        &self.0
    }

    /// Its public key.
    pub fn public(&self) -> ProposerKey {
        ProposerKey(self.0.sk_to_pk())
    }

    /// The signature (96 bytes, compressed G2) of `message`.
    pub fn sign(&self, message: &[u8]) -> [u8; 96] {
        self.0.sign(message, BLS_DST, &[]).to_bytes()
    }
}

/// A proposer's public key (48 bytes, compressed G1).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ProposerKey(pub blst::min_pk::PublicKey);

impl fmt::Display for ProposerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{}", alloy_primitives::hex::encode(self.0.to_bytes()))
    }
}

impl fmt::Debug for ProposerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl ProposerKey {
    /// Whether `signature` (96 bytes) signs `message` under this key.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(sig) = blst::min_pk::Signature::from_bytes(signature) else { return false };
        sig.verify(true, message, BLS_DST, &[], &self.0, true) == blst::BLST_ERROR::BLST_SUCCESS
    }
}

/// Parses a public key from hex (`0x` optional).
///
/// # Errors
/// [`SignerError::Malformed`].
pub fn public_key_from_hex(s: &str) -> Result<ProposerKey, SignerError> {
    let bytes = alloy_primitives::hex::decode(s.trim())
        .map_err(|e| SignerError::Malformed(e.to_string()))?;
    blst::min_pk::PublicKey::key_validate(&bytes)
        .map(ProposerKey)
        .map_err(|e| SignerError::Malformed(format!("{e:?}")))
}

/// Loads the seed in `path` (64 hex characters), creating it from the OS's randomness when the
/// file does not exist, and derives the key.
///
/// # Errors
/// [`SignerError`] when the file cannot be read or written or holds no seed.
pub fn load_or_create_signer(path: &Path) -> Result<BlockSigner, SignerError> {
    let io = |source| SignerError::Io { path: path.to_path_buf(), source };
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let seed = alloy_primitives::hex::decode(text.trim())
                .map_err(|e| SignerError::Malformed(e.to_string()))?;
            if seed.len() != 32 {
                return Err(SignerError::Malformed(format!("seed of {} bytes", seed.len())));
            }
            BlockSigner::from_seed(&seed)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let seed: [u8; 32] = rand::random();
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(io)?;
            }
            std::fs::write(path, alloy_primitives::hex::encode(seed)).map_err(io)?;
            BlockSigner::from_seed(&seed)
        }
        Err(e) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_verify_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bls");
        let a = load_or_create_signer(&path).unwrap();
        let b = load_or_create_signer(&path).unwrap();
        assert_eq!(a.public(), b.public());
        let sig = a.sign(b"block");
        assert!(a.public().verify(b"block", &sig));
        assert!(!a.public().verify(b"other", &sig));
        let parsed = public_key_from_hex(&a.public().to_string()).unwrap();
        assert_eq!(parsed, a.public());
        assert!(public_key_from_hex("0x1234").is_err());
    }
}
