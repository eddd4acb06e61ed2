//! The `eth` entry of a node's ENR (devp2p's `enr-entries/eth.md`): the node's EIP-2124 fork id,
//! so that discovery can skip nodes of other chains before dialing them. The value is the RLP
//! list `[[fork_hash, fork_next], …]`: geth reads the first element and ignores the rest
//! (`rlp:"tail"`), and so does [`EnrForkIdEntry`]'s decoder.

use alloy_eip2124::ForkId;
use alloy_rlp::{Decodable, Encodable, Header};

/// The ENR key of the entry.
pub const ENR_FORK_ID_KEY: &str = "eth";

/// The value of an ENR's `eth` entry: the fork id the node is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnrForkIdEntry {
    /// The node's fork id (EIP-2124).
    pub fork_id: ForkId,
}

impl Encodable for EnrForkIdEntry {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        Header { list: true, payload_length: self.fork_id.length() }.encode(out);
        self.fork_id.encode(out);
    }

    fn length(&self) -> usize {
        let payload = self.fork_id.length();
        payload + alloy_rlp::length_of_length(payload)
    }
}

impl Decodable for EnrForkIdEntry {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let header = Header::decode(buf)?;
        if !header.list {
            return Err(alloy_rlp::Error::UnexpectedString);
        }
        if buf.len() < header.payload_length {
            return Err(alloy_rlp::Error::InputTooShort);
        }
        let (mut payload, rest) = buf.split_at(header.payload_length);
        let fork_id = ForkId::decode(&mut payload)?;
        // Fields after the fork id are for later versions: skipped.
        *buf = rest;
        Ok(Self { fork_id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip2124::ForkHash;

    #[test]
    fn round_trips_and_ignores_trailing_fields() {
        let entry = EnrForkIdEntry {
            fork_id: ForkId { hash: ForkHash([0xfc, 0x64, 0xec, 0x04]), next: 1_150_000 },
        };
        let encoded = alloy_rlp::encode(entry);
        // [[0xfc64ec04, 1150000]]
        assert_eq!(alloy_primitives::hex::encode(&encoded), "cac984fc64ec0483118c30");
        assert_eq!(EnrForkIdEntry::decode(&mut encoded.as_slice()).unwrap(), entry);
        // A later version's value: [[hash, next], 7]. The fork id is read, the rest skipped.
        let longer = alloy_primitives::hex::decode("cbc984fc64ec0483118c3007").unwrap();
        let mut buf = longer.as_slice();
        assert_eq!(EnrForkIdEntry::decode(&mut buf).unwrap(), entry);
        assert!(buf.is_empty());
        assert!(EnrForkIdEntry::decode(&mut &[0x84, 1, 2, 3, 4][..]).is_err());
        assert!(EnrForkIdEntry::decode(&mut &[0xca, 0xc9][..]).is_err());
    }
}
