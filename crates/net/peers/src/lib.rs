//! devp2p node records (reth's `crates/net/peers`): the `enode://` URL a node is named by —
//! `enode://<128 hex digits of the node id>@<ip>:<tcp port>[?discport=<udp port>]` — parsed
//! ([`NodeRecord::from_str`]) and printed ([`NodeRecord`]'s `Display`, as geth prints it).

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
}

/// Why a string is not an enode URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeRecordParseError {
    /// It does not start with `enode://`.
    #[error("not an enode URL (want enode://<id>@<ip>:<port>)")]
    Scheme,
    /// The node id is not 128 hex digits.
    #[error("node id: {0}")]
    Id(String),
    /// The address is not `ip:port`.
    #[error("address: {0}")]
    Address(String),
    /// The `discport` query is not a port.
    #[error("discport: {0}")]
    DiscPort(String),
}

impl FromStr for NodeRecord {
    type Err = NodeRecordParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let rest = s.strip_prefix("enode://").ok_or(NodeRecordParseError::Scheme)?;
        let (id, rest) = rest
            .split_once('@')
            .ok_or_else(|| NodeRecordParseError::Address("no @ after the node id".into()))?;
        if id.len() != 128 {
            return Err(NodeRecordParseError::Id(format!("{} hex digits, want 128", id.len())));
        }
        let id = PeerId::from_str(id).map_err(|e| NodeRecordParseError::Id(e.to_string()))?;
        let (addr, query) = match rest.split_once('?') {
            Some((addr, query)) => (addr, Some(query)),
            None => (rest, None),
        };
        let addr = SocketAddr::from_str(addr)
            .map_err(|e| NodeRecordParseError::Address(format!("{addr:?}: {e}")))?;
        let mut udp_port = addr.port();
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            if let Some(port) = pair.strip_prefix("discport=") {
                udp_port =
                    port.parse().map_err(|e| NodeRecordParseError::DiscPort(format!("{e}")))?;
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
    fn malformed_urls_are_typed_errors() {
        assert_eq!("http://x".parse::<NodeRecord>(), Err(NodeRecordParseError::Scheme));
        assert!(matches!(
            "enode://abcd@1.2.3.4:1".parse::<NodeRecord>(),
            Err(NodeRecordParseError::Id(_))
        ));
        let bad_addr = GETH.replace("127.0.0.1:30399", "nowhere");
        assert!(matches!(bad_addr.parse::<NodeRecord>(), Err(NodeRecordParseError::Address(_))));
        let bad_port = GETH.replace("discport=0", "discport=x");
        assert!(matches!(bad_port.parse::<NodeRecord>(), Err(NodeRecordParseError::DiscPort(_))));
    }
}
