//! devp2p's message layers over an RLPx session (`gigagas-net-ecies`), shaped after reth's
//! `crates/net/eth-wire`:
//! - the p2p base protocol ([`P2PStream`]): `Hello` ([`HelloMessage`]) and capability
//!   negotiation ([`capability`]), snappy from p2p/5, `Ping`/`Pong` answered by the stream,
//!   `Disconnect` with its reasons ([`DisconnectReason`]);
//! - the eth protocol ([`EthStream`]): the `Status` handshake with geth's checks (network,
//!   genesis, EIP-2124 fork id, block range), then eth/69–72 messages (and snap/1–2 beside them)
//!   (`gigagas-eth-wire-types`) decoded for the negotiated version.
//!
//! Flow: TCP → `EciesStream::connect`/`accept` → [`P2PStream::handshake`] →
//! [`EthStream::handshake`] → messages; every failure is a typed error naming what the peer
//! did ([`P2PStreamError`], [`EthStreamError`]).

pub mod capability;
mod disconnect;
mod error;
mod ethstream;
mod hello;
mod p2pstream;

pub use capability::{Capability, Protocol, SharedCapability};
pub use disconnect::DisconnectReason;
pub use error::{EthStreamError, P2PStreamError};
pub use ethstream::{EthSnapMessage, EthStream, STATUS_TIMEOUT};
pub use hello::{HelloMessage, P2P_VERSION};
pub use p2pstream::{P2PStream, HELLO_TIMEOUT, MAX_HELLO_SIZE, MAX_MESSAGE};

use gigagas_eth_wire_types::{EthVersion, SnapVersion};

/// The eth protocols this node speaks (eth/69–72), each with its message count.
pub fn eth_protocols() -> Vec<Protocol> {
    EthVersion::ALL
        .iter()
        .map(|v| Protocol { cap: Capability::new("eth", v.number()), messages: v.message_count() })
        .collect()
}

/// The snap protocols this node serves (snap/1, snap/2), each with its message count.
pub fn snap_protocols() -> Vec<Protocol> {
    SnapVersion::ALL
        .iter()
        .map(|v| Protocol { cap: Capability::new("snap", v.number()), messages: v.message_count() })
        .collect()
}
