//! devp2p node discovery v4 (reth's `net/discv4`, geth's `p2p/discover/v4wire`): the packets
//! nodes exchange over UDP to find each other — `Ping`/`Pong` (which prove an endpoint),
//! `FindNode`/`Neighbours` (a Kademlia lookup step) and EIP-868's `ENRRequest`/`ENRResponse`.
//!
//! A packet is `hash ‖ signature ‖ type ‖ RLP(body)`: the hash is keccak256 of everything after
//! it, the signature a recoverable secp256k1 signature of keccak256(`type ‖ body`) by the
//! sender's node key, which is how the receiver learns the sender's node id. Bodies are RLP
//! lists read as EIP-8 says: fields past the known ones are ignored (forward compatibility).
//! [`encode`] seals a [`Message`]; [`decode`] checks the hash, recovers the sender and reads
//! the body, with a typed [`DecodeError`] for anything else. [`Discv4`] runs the service on a
//! UDP socket (`service.rs`): endpoint proofs, a table of proven nodes, lookups, and the nodes
//! found handed to the dialer.

mod proto;
mod service;

pub use proto::{
    decode, encode, DecodeError, Endpoint, EnrRequest, EnrResponse, FindNode, Message, Neighbours,
    Ping, Pong, MAX_NEIGHBOURS, MAX_PACKET_SIZE,
};
pub use service::{
    Discv4, Discv4Config, ALPHA, BOND_EXPIRY, LOOKUP_INTERVAL, MAX_TABLE, NEIGHBOURS_ANSWERED,
    PACKET_EXPIRY,
};
