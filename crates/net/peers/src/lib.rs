//! devp2p node records (reth's `crates/net/peers`): the `enode://` URL a node is named by —
//! `enode://<128 hex digits of the node id>@<ip>:<tcp port>[?discport=<udp port>]` — parsed
//! ([`NodeRecord::from_str`]) and printed ([`NodeRecord`]'s `Display`, as geth prints it); EIP-778
//! ENRs (`enr:-…`, sigp's `enr` crate) read into the same record ([`BootNode`]); the public
//! networks' bootnodes ([`bootnodes`]); the ENR's `eth` fork-id entry ([`EnrForkIdEntry`]); `--nat` ([`NatResolver`]).

pub mod bootnodes;
mod fork_entry;
mod nat;

pub use fork_entry::{EnrForkIdEntry, ENR_FORK_ID_KEY};
pub use nat::{NatParseError, NatResolver};

pub use enr;

use alloy_primitives::B512;
use std::{
    fmt,
    net::{IpAddr, SocketAddr},
    str::FromStr,
};

/// A node id: the 64-byte secp256k1 public key without its `0x04` prefix.
pub type PeerId = B512;

/// Where a devp2p node is and who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeRecord {
    /// Its IP address.
    pub address: IpAddr,
    /// The TCP port of its RLPx listener.
    pub tcp_port: u16,
    /// The UDP port of its discovery (0: none).
    pub udp_port: u16,
    /// Its node id.
    pub id: PeerId,
}

impl NodeRecord {
    /// The TCP address to dial.
    pub fn tcp_addr(&self) -> SocketAddr {
        SocketAddr::new(self.address, self.tcp_port)
    }

    /// Whether it can be dialed over TCP (an ENR without a `tcp` key cannot: discovery only).
    pub fn is_dialable(&self) -> bool {
        self.tcp_port != 0
    }

    /// The record an ENR describes: its IPv4 address (else its IPv6 one), `tcp`/`udp` ports (0
    /// where absent) and the node id of its secp256k1 key.
    ///
    /// # Errors
    /// [`NodeRecordParseError::EnrWithoutIp`] for an ENR with no IP address.
    pub fn from_enr(enr: &Enr) -> Result<Self, NodeRecordParseError> {
        use enr::EnrPublicKey;
        let (address, tcp_port, udp_port) = match (enr.ip4(), enr.ip6()) {
            (Some(ip), _) => (IpAddr::V4(ip), enr.tcp4(), enr.udp4()),
            (None, Some(ip)) => (IpAddr::V6(ip), enr.tcp6(), enr.udp6()),
            (None, None) => return Err(NodeRecordParseError::EnrWithoutIp),
        };
        let key = enr.public_key().encode_uncompressed();
        Ok(Self {
            address,
            tcp_port: tcp_port.unwrap_or(0),
            udp_port: udp_port.unwrap_or(0),
            id: PeerId::from_slice(key.as_ref()),
        })
    }
}

/// An EIP-778 node record with a secp256k1 identity (the `v4` scheme devp2p uses).
pub type Enr = enr::Enr<enr::k256::ecdsa::SigningKey>;

/// A node given to start from (`--bootnodes`, a chain's preset bootnodes): an enode URL or an
/// ENR (`enr:-…`, signature checked), with the record read from either.
#[derive(Debug, Clone)]
pub struct BootNode {
    /// Where it is and who it is.
    pub record: NodeRecord,
    /// The ENR it was given as, if it was.
    pub enr: Option<Enr>,
}

impl FromStr for BootNode {
    type Err = NodeRecordParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.starts_with("enr:") {
            let enr = Enr::from_str(s).map_err(NodeRecordParseError::Enr)?;
            Ok(Self { record: NodeRecord::from_enr(&enr)?, enr: Some(enr) })
        } else {
            Ok(Self { record: s.parse()?, enr: None })
        }
    }
}

impl fmt::Display for BootNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.enr {
            Some(enr) => write!(f, "{}", enr.to_base64()),
            None => write!(f, "{}", self.record),
        }
    }
}

/// Why a string is not an enode URL (or an ENR).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeRecordParseError {
    /// It does not start with `enode://`.
    #[error("not an enode URL (want enode://<id>@<ip>:<port>)")]
    Scheme,
    /// The node id is not 128 digits long.
    #[error("node id: {0} hex digits, want 128")]
    IdLength(usize),
    /// The node id is not hex.
    #[error("node id: {0}")]
    Id(#[source] alloy_primitives::hex::FromHexError),
    /// No `@` after the node id.
    #[error("address: no @ after the node id")]
    NoAt,
    /// The address is not `ip:port`.
    #[error("address {input:?}: {source}")]
    Address {
        /// What was given.
        input: String,
        /// Why it is no socket address.
        source: std::net::AddrParseError,
    },
    /// An ENR without an IP address.
    #[error("ENR without an IP")]
    EnrWithoutIp,
    /// The `discport` query is not a port.
    #[error("discport: {0}")]
    DiscPort(#[source] std::num::ParseIntError),
    /// An `enr:` record that does not decode or whose signature does not verify (the `enr`
    /// crate's own error, a message).
    #[error("ENR: {0}")]
    Enr(String),
}

impl FromStr for NodeRecord {
    type Err = NodeRecordParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let rest = s.strip_prefix("enode://").ok_or(NodeRecordParseError::Scheme)?;
        let (id, rest) = rest.split_once('@').ok_or(NodeRecordParseError::NoAt)?;
        if id.len() != 128 {
            return Err(NodeRecordParseError::IdLength(id.len()));
        }
        let id = PeerId::from_str(id).map_err(NodeRecordParseError::Id)?;
        let (addr, query) = match rest.split_once('?') {
            Some((addr, query)) => (addr, Some(query)),
            None => (rest, None),
        };
        let addr = SocketAddr::from_str(addr)
            .map_err(|source| NodeRecordParseError::Address { input: addr.to_string(), source })?;
        let mut udp_port = addr.port();
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            if let Some(port) = pair.strip_prefix("discport=") {
                udp_port = port.parse().map_err(NodeRecordParseError::DiscPort)?;
            }
        }
        Ok(Self { address: addr.ip(), tcp_port: addr.port(), udp_port, id })
    }
}

impl fmt::Display for NodeRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = alloy_primitives::hex::encode(self.id);
        write!(f, "enode://{id}@{}", SocketAddr::new(self.address, self.tcp_port))?;
        if self.udp_port != self.tcp_port {
            write!(f, "?discport={}", self.udp_port)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GETH: &str = "enode://ace90dd15a648ca152beb601149d6d9f64aa2e5d4db72e74ddc47f023193c34748adc46e3ea023c78cc6b02108dbb1c7f4f7709361476a7537be5b85f2718a64@127.0.0.1:30399?discport=0";

    #[test]
    fn geths_enode_urls_parse_and_print_back() {
        let record: NodeRecord = GETH.parse().unwrap();
        assert_eq!(record.tcp_port, 30399);
        assert_eq!(record.udp_port, 0);
        assert_eq!(record.to_string(), GETH);
        let plain = GETH.replace("?discport=0", "");
        let record: NodeRecord = plain.parse().unwrap();
        assert_eq!(record.udp_port, 30399);
        assert_eq!(record.to_string(), plain);
        let v6: NodeRecord = plain.replace("127.0.0.1:30399", "[::1]:30303").parse().unwrap();
        assert_eq!(v6.tcp_addr().to_string(), "[::1]:30303");
    }

    #[test]
    fn the_public_networks_bootnodes_parse() {
        for list in
            [bootnodes::MAINNET_BOOTNODES, bootnodes::SEPOLIA_BOOTNODES, bootnodes::HOODI_BOOTNODES]
        {
            for s in list {
                let node: BootNode = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
                assert_eq!(node.to_string(), *s);
                assert_ne!(node.record.udp_port, 0, "{s}");
                // The EF's ENR bootnodes are for discovery only; the legacy ones are dialable.
                assert_eq!(node.record.is_dialable(), node.enr.is_none(), "{s}");
            }
        }
        // nodeops-bootnode-dcl1-01 of mainnet: 212.99.218.66, UDP 20151.
        let node: BootNode = bootnodes::MAINNET_BOOTNODES[0].parse().unwrap();
        assert_eq!(node.record.address.to_string(), "212.99.218.66");
        assert_eq!(node.record.udp_port, 20151);
        // A flipped character breaks the signature (or the encoding): a typed error.
        let mut bad = bootnodes::MAINNET_BOOTNODES[0].to_string();
        bad.replace_range(40..41, if &bad[40..41] == "A" { "B" } else { "A" });
        assert!(matches!(bad.parse::<BootNode>(), Err(NodeRecordParseError::Enr(_))));
    }

    #[test]
    fn malformed_urls_are_typed_errors() {
        assert_eq!("http://x".parse::<NodeRecord>(), Err(NodeRecordParseError::Scheme));
        assert!(matches!(
            "enode://abcd@1.2.3.4:1".parse::<NodeRecord>(),
            Err(NodeRecordParseError::IdLength(4))
        ));
        let not_hex = format!("enode://{}@1.2.3.4:1", "z".repeat(128));
        assert!(matches!(not_hex.parse::<NodeRecord>(), Err(NodeRecordParseError::Id(_))));
        let bad_addr = GETH.replace("127.0.0.1:30399", "nowhere");
        assert!(matches!(
            bad_addr.parse::<NodeRecord>(),
            Err(NodeRecordParseError::Address { .. })
        ));
        let bad_port = GETH.replace("discport=0", "discport=x");
        assert!(matches!(bad_port.parse::<NodeRecord>(), Err(NodeRecordParseError::DiscPort(_))));
    }
}
