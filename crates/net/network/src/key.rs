//! The node key: an ed25519 secret kept in a file (64 hex characters), so that a node keeps its
//! peer id across restarts (the node's `--libp2p.secret-key`).

use crate::{KeyFileError, NetError};
use libp2p::identity::{ed25519, Keypair};
use std::path::Path;

/// Loads the ed25519 secret in `path`, or generates one and writes it there (mode 0600).
///
/// # Errors
/// [`NetError::Key`] when the file cannot be read or written or does not hold 32 hex bytes.
pub fn load_or_create_key(path: &Path) -> Result<Keypair, NetError> {
    let err = |source: KeyFileError| NetError::Key { path: path.to_path_buf(), source };
    let io = |e: std::io::Error| err(e.into());
    if path.exists() {
        let text = std::fs::read_to_string(path).map_err(io)?;
        let bytes = alloy_primitives::hex::decode(text.trim()).map_err(|e| err(e.into()))?;
        if bytes.len() != 32 {
            return Err(err(KeyFileError::Length(bytes.len())));
        }
        let secret = ed25519::SecretKey::try_from_bytes(bytes)
            .map_err(|e| err(KeyFileError::Invalid(Box::new(e))))?;
        return Ok(ed25519::Keypair::from(secret).into());
    }
    let keypair = ed25519::Keypair::generate();
    let hex = alloy_primitives::hex::encode(keypair.secret().as_ref());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, hex).map_err(io)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    Ok(keypair.into())
}
