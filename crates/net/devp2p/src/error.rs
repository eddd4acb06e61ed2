//! Errors of the devp2p transport.

use gigagas_eth_wire::{EthStreamError, P2PStreamError};
use gigagas_net_ecies::EciesError;

/// Why a session could not be established.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The TCP connection failed.
    #[error("connecting to {addr}: {source}")]
    Connect {
        /// The address dialed.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The RLPx handshake failed (wrong node id, bad packets, timeout).
    #[error("RLPx handshake: {0}")]
    Ecies(#[from] EciesError),
    /// `Hello` failed (the peer disconnected, no shared capability).
    #[error("p2p handshake: {0}")]
    P2P(#[from] P2PStreamError),
    /// `Status` failed (another chain or fork, a bad block range).
    #[error("eth handshake: {0}")]
    Eth(#[from] EthStreamError),
    /// The network has stopped (the node is shutting down).
    #[error("the network has stopped")]
    NetworkStopped,
    /// A step took too long (a peer that stalls).
    #[error("{step} took more than {after:?}")]
    Timeout {
        /// The TCP connect or the handshakes.
        step: &'static str,
        /// The limit.
        after: std::time::Duration,
    },
}
