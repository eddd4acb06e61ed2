//! `Hello`, the first message of a session: `[protocolVersion, clientId, [[cap, version]…],
//! listenPort, nodeId, …]`; elements after the node id are ignored (EIP-8).

use crate::capability::Capability;
use alloy_primitives::B512;
use alloy_rlp::{Decodable, Encodable, Header as RlpHeader};

/// The p2p base protocol version this node speaks (5: messages after `Hello` are
/// snappy-compressed).
pub const P2P_VERSION: u64 = 5;

/// A node's `Hello`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelloMessage {
    /// The p2p base protocol version.
    pub protocol_version: u64,
    /// The client's name and version (`gigagas/v0.1.0/linux-x86_64`).
    pub client_version: String,
    /// The capabilities the node speaks.
    pub capabilities: Vec<Capability>,
    /// The TCP port it listens on (0: unknown, as geth sends).
    pub port: u16,
    /// Its node id.
    pub id: B512,
}

impl HelloMessage {
    fn payload_length(&self) -> usize {
        self.protocol_version.length()
            + self.client_version.as_str().length()
            + self.capabilities.length()
            + self.port.length()
            + self.id.length()
    }
}

impl Encodable for HelloMessage {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        RlpHeader { list: true, payload_length: self.payload_length() }.encode(out);
        self.protocol_version.encode(out);
        self.client_version.as_str().encode(out);
        self.capabilities.encode(out);
        self.port.encode(out);
        self.id.encode(out);
    }

    fn length(&self) -> usize {
        let payload = self.payload_length();
        payload + alloy_rlp::length_of_length(payload)
    }
}

impl Decodable for HelloMessage {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let mut items = RlpHeader::decode_bytes(buf, true)?;
        Ok(Self {
            protocol_version: u64::decode(&mut items)?,
            client_version: String::decode(&mut items)?,
            capabilities: Vec::decode(&mut items)?,
            port: u16::decode(&mut items)?,
            id: B512::decode(&mut items)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_extra_elements_are_ignored() {
        let hello = HelloMessage {
            protocol_version: P2P_VERSION,
            client_version: "gigagas/v0.1.0".into(),
            capabilities: vec![Capability::new("eth", 69), Capability::new("eth", 71)],
            port: 30303,
            id: B512::repeat_byte(7),
        };
        let bytes = alloy_rlp::encode(&hello);
        assert_eq!(HelloMessage::decode(&mut bytes.as_slice()).unwrap(), hello);
        // The same with an extra element (a future field) inside the list.
        let mut longer = Vec::new();
        RlpHeader { list: true, payload_length: hello.payload_length() + 1 }.encode(&mut longer);
        longer.extend_from_slice(&bytes[bytes.len() - hello.payload_length()..]);
        longer.push(0x05);
        assert_eq!(HelloMessage::decode(&mut longer.as_slice()).unwrap(), hello);
        assert!(HelloMessage::decode(&mut [0xc1, 0x05].as_slice()).is_err());
    }
}
