//! `Disconnect` reasons (devp2p `rlpx.md`, geth's `p2p/peer_error.go`). A reason is sent as a
//! one-element list; the bare byte some implementations sent is read too, as geth does.

use alloy_rlp::{Decodable, Encodable, Header as RlpHeader};

/// Why a peer ends a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DisconnectReason {
    /// 0x00: disconnect requested.
    Requested,
    /// 0x01: TCP sub-system error.
    NetworkError,
    /// 0x02: breach of protocol (a message that cannot be decoded, a bad answer).
    ProtocolError,
    /// 0x03: useless peer (no shared capability, another chain).
    UselessPeer,
    /// 0x04: too many peers.
    TooManyPeers,
    /// 0x05: already connected.
    AlreadyConnected,
    /// 0x06: incompatible p2p protocol version.
    IncompatibleVersion,
    /// 0x07: invalid node identity.
    InvalidIdentity,
    /// 0x08: client quitting.
    ClientQuitting,
    /// 0x09: unexpected identity in the handshake.
    UnexpectedIdentity,
    /// 0x0a: connected to self.
    ConnectedToSelf,
    /// 0x0b: read timeout.
    PingTimeout,
    /// 0x10: some other reason specific to a subprotocol (geth: a failed eth handshake).
    SubprotocolError,
    /// A code no spec defines (kept as sent).
    Other(u8),
}

impl DisconnectReason {
    /// The reason's code.
    pub fn code(self) -> u8 {
        match self {
            Self::Requested => 0x00,
            Self::NetworkError => 0x01,
            Self::ProtocolError => 0x02,
            Self::UselessPeer => 0x03,
            Self::TooManyPeers => 0x04,
            Self::AlreadyConnected => 0x05,
            Self::IncompatibleVersion => 0x06,
            Self::InvalidIdentity => 0x07,
            Self::ClientQuitting => 0x08,
            Self::UnexpectedIdentity => 0x09,
            Self::ConnectedToSelf => 0x0a,
            Self::PingTimeout => 0x0b,
            Self::SubprotocolError => 0x10,
            Self::Other(code) => code,
        }
    }

    /// The reason of code `code`.
    pub fn from_code(code: u8) -> Self {
        match code {
            0x00 => Self::Requested,
            0x01 => Self::NetworkError,
            0x02 => Self::ProtocolError,
            0x03 => Self::UselessPeer,
            0x04 => Self::TooManyPeers,
            0x05 => Self::AlreadyConnected,
            0x06 => Self::IncompatibleVersion,
            0x07 => Self::InvalidIdentity,
            0x08 => Self::ClientQuitting,
            0x09 => Self::UnexpectedIdentity,
            0x0a => Self::ConnectedToSelf,
            0x0b => Self::PingTimeout,
            0x10 => Self::SubprotocolError,
            code => Self::Other(code),
        }
    }
}

impl std::fmt::Display for DisconnectReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            Self::Requested => "disconnect requested",
            Self::NetworkError => "network error",
            Self::ProtocolError => "breach of protocol",
            Self::UselessPeer => "useless peer",
            Self::TooManyPeers => "too many peers",
            Self::AlreadyConnected => "already connected",
            Self::IncompatibleVersion => "incompatible p2p protocol version",
            Self::InvalidIdentity => "invalid node identity",
            Self::ClientQuitting => "client quitting",
            Self::UnexpectedIdentity => "unexpected identity",
            Self::ConnectedToSelf => "connected to self",
            Self::PingTimeout => "read timeout",
            Self::SubprotocolError => "subprotocol error",
            Self::Other(code) => return write!(f, "unknown disconnect reason {code:#04x}"),
        };
        f.write_str(text)
    }
}

impl Encodable for DisconnectReason {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        let code = self.code();
        RlpHeader { list: true, payload_length: code.length() }.encode(out);
        code.encode(out);
    }

    fn length(&self) -> usize {
        self.code().length() + 1
    }
}

impl Decodable for DisconnectReason {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        if buf.first().is_some_and(|b| *b >= alloy_rlp::EMPTY_LIST_CODE) {
            let mut items = RlpHeader::decode_bytes(buf, true)?;
            // An empty list carries no reason (geth reads it as invalid); take "requested".
            if items.is_empty() {
                return Ok(Self::Requested);
            }
            Ok(Self::from_code(u8::decode(&mut items)?))
        } else {
            Ok(Self::from_code(u8::decode(buf)?))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_and_bare_forms() {
        assert_eq!(alloy_rlp::encode(DisconnectReason::TooManyPeers), vec![0xc1, 0x04]);
        assert_eq!(alloy_rlp::encode(DisconnectReason::Requested), vec![0xc1, 0x80]);
        for code in 0..=0x10u8 {
            let reason = DisconnectReason::from_code(code);
            let list = alloy_rlp::encode(reason);
            assert_eq!(DisconnectReason::decode(&mut list.as_slice()).unwrap(), reason);
            let bare = alloy_rlp::encode(code);
            assert_eq!(DisconnectReason::decode(&mut bare.as_slice()).unwrap(), reason);
        }
        assert!(DisconnectReason::decode(&mut [0xc2, 0x01].as_slice()).is_err());
    }
}
