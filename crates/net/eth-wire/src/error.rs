//! The errors of the p2p and eth layers. Each names what the peer did; none is a local fault
//! but an I/O failure of the session below.

use crate::DisconnectReason;
use gigagas_eth_wire_types::EthMessageError;
use gigagas_net_ecies::EciesError;

/// An error of the p2p base protocol.
#[derive(Debug, thiserror::Error)]
pub enum P2PStreamError {
    /// The RLPx session below failed (I/O, a bad MAC, an oversize frame).
    #[error(transparent)]
    Ecies(#[from] EciesError),
    /// The peer closed the connection.
    #[error("connection closed by the peer")]
    Closed,
    /// The peer sent `Disconnect`.
    #[error("disconnected by the peer: {0}")]
    Disconnected(DisconnectReason),
    /// The first message was neither `Hello` nor `Disconnect`.
    #[error("expected Hello, got message {0:#04x}")]
    HelloExpected(u64),
    /// `Hello` larger than the base protocol allows (2 KiB, as geth).
    #[error("Hello of {0} bytes (at most 2048)")]
    HelloTooLarge(usize),
    /// No capability in common.
    #[error("no shared capability (the peer offers {0})")]
    NoSharedCapability(String),
    /// A message that is not the RLP its id calls for.
    #[error("malformed p2p message: {0}")]
    Rlp(#[from] alloy_rlp::Error),
    /// A frame that is not valid snappy.
    #[error("snappy: {0}")]
    Snappy(#[from] snap::Error),
    /// A frame that would decompress beyond the message limit.
    #[error("snappy: message would decompress to {len} bytes (at most {limit})")]
    Oversize {
        /// Its decompressed length (bytes).
        len: usize,
        /// The limit (bytes).
        limit: usize,
    },
    /// A message id beyond every shared capability.
    #[error("message id {0:#04x} belongs to no shared capability")]
    UnknownMessageId(u64),
    /// An empty frame (no message id).
    #[error("empty frame")]
    EmptyFrame,
    /// The handshake did not end within its deadline.
    #[error("p2p handshake timed out")]
    HandshakeTimeout,
}

/// An error of the eth layer: its `Status` handshake or a message.
#[derive(Debug, thiserror::Error)]
pub enum EthStreamError {
    /// The p2p layer failed.
    #[error(transparent)]
    P2P(#[from] P2PStreamError),
    /// A message that could not be decoded for the session's version.
    #[error(transparent)]
    Message(#[from] EthMessageError),
    /// A snap message that could not be decoded for the session's snap version (or one the
    /// version does not define, as `GetTrieNodes` on snap/2).
    #[error(transparent)]
    Snap(#[from] gigagas_eth_wire_types::SnapMessageError),
    /// The peer's first eth message was not `Status`.
    #[error("expected Status, got message {0:#04x} (its id on the wire)")]
    StatusExpected(u64),
    /// `Status` after the handshake.
    #[error("Status after the handshake")]
    UnexpectedStatus,
    /// The peer's `Status` names another eth version than the session's.
    #[error("Status version {theirs}, the session negotiated {ours}")]
    VersionMismatch {
        /// The session's.
        ours: u64,
        /// The peer's.
        theirs: u64,
    },
    /// Another network id.
    #[error("network id {theirs}, ours is {ours}")]
    NetworkMismatch {
        /// Ours.
        ours: u64,
        /// The peer's.
        theirs: u64,
    },
    /// Another genesis.
    #[error("genesis {theirs}, ours is {ours}")]
    GenesisMismatch {
        /// Ours.
        ours: alloy_primitives::B256,
        /// The peer's.
        theirs: alloy_primitives::B256,
    },
    /// A fork id EIP-2124's rules reject (another fork, or one of us is stale).
    #[error("fork id {fork_id:?} rejected: {source}")]
    ForkId {
        /// The peer's fork id.
        fork_id: alloy_eip2124::ForkId,
        /// The rule it broke.
        source: alloy_eip2124::ValidationError,
    },
    /// A block range with `earliest > latest` or a zero head hash.
    #[error("invalid block range {earliest}..={latest}")]
    InvalidBlockRange {
        /// Earliest block served.
        earliest: u64,
        /// Head.
        latest: u64,
    },
    /// A message beyond eth's 10 MiB.
    #[error("eth message of {0} bytes (at most 10 MiB)")]
    MessageTooLarge(usize),
    /// The `Status` exchange did not end within its deadline.
    #[error("Status handshake timed out")]
    HandshakeTimeout,
}
