//! What can go wrong on an RLPx connection below the message layer.

/// An error of the ECIES handshake or of the framed stream. Every variant that a peer can cause
/// (a bad packet, a wrong MAC) means the connection must be dropped; none is a local fault but
/// [`EciesError::Io`].
#[derive(Debug, thiserror::Error)]
pub enum EciesError {
    /// The socket failed or closed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// The peer closed the connection before the handshake ended.
    #[error("connection closed during the handshake")]
    ClosedDuringHandshake,
    /// A handshake packet's size prefix is larger than the most a peer may send
    /// ([`crate::MAX_HANDSHAKE_PACKET`] bytes).
    #[error("handshake packet of {0} bytes (at most {max})", max = crate::MAX_HANDSHAKE_PACKET)]
    HandshakeTooLarge(usize),
    /// An encrypted packet is shorter than the ECIES overhead.
    #[error("encrypted packet of {0} bytes is shorter than the ECIES overhead")]
    ShortCiphertext(usize),
    /// The HMAC of an ECIES-encrypted packet does not match: it was not encrypted to our key,
    /// or was altered.
    #[error("ECIES message authentication failed")]
    BadEciesMac,
    /// A public key is not a point of secp256k1.
    #[error("invalid public key")]
    InvalidPublicKey,
    /// The auth message's signature does not recover to a public key.
    #[error("invalid auth signature")]
    InvalidSignature,
    /// The auth or ack body is not the RLP the handshake defines.
    #[error("malformed {message}: {source}")]
    MalformedHandshake {
        /// `auth` or `ack`.
        message: &'static str,
        /// The decoding error.
        source: alloy_rlp::Error,
    },
    /// A frame header's MAC does not match (altered, or the peer's secrets differ).
    #[error("frame header MAC mismatch")]
    BadHeaderMac,
    /// A frame body's MAC does not match.
    #[error("frame body MAC mismatch")]
    BadFrameMac,
    /// A frame larger than the most this side accepts.
    #[error("frame of {size} bytes exceeds the limit of {limit}")]
    FrameTooLarge {
        /// Its size (bytes).
        size: usize,
        /// The limit (bytes).
        limit: usize,
    },
    /// A message was sent or expected in the wrong state of the handshake.
    #[error("unexpected {0} in this state of the handshake")]
    UnexpectedMessage(&'static str),
    /// The handshake did not end within its deadline.
    #[error("handshake timed out")]
    HandshakeTimeout,
}
