//! The discv4 packets, as geth 1.17.10's `v4wire` encodes and decodes them.

use alloy_primitives::{keccak256, Bytes, B256};
use alloy_rlp::{Decodable, Encodable, Header as RlpHeader};
use gigagas_net_peers::{Enr, NodeRecord, PeerId};
use k256::ecdsa::{RecoveryId, Signature, SigningKey, VerifyingKey};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Largest packet a node sends or reads (bytes; geth's `maxPacketSize`).
pub const MAX_PACKET_SIZE: usize = 1280;

/// Most nodes in one `Neighbours` packet (what fits in [`MAX_PACKET_SIZE`]; geth's).
pub const MAX_NEIGHBOURS: usize = 12;

/// Bytes before the packet type: the hash (32) and the signature (65).
const HEAD_SIZE: usize = 32 + 65;

/// Where a node is reached: its IP, UDP (discovery) and TCP (RLPx) ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The IP address.
    pub address: IpAddr,
    /// The discovery port.
    pub udp_port: u16,
    /// The RLPx port (0: none).
    pub tcp_port: u16,
}

/// `Ping` (type 1): proves the sender's endpoint to the recipient, which answers with `Pong`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ping {
    /// The protocol version (4).
    pub version: u64,
    /// The sender's endpoint.
    pub from: Endpoint,
    /// The recipient's endpoint as the sender sees it.
    pub to: Endpoint,
    /// Unix time (seconds) after which the packet is void.
    pub expire: u64,
    /// The sender's ENR sequence number (EIP-868), if it says.
    pub enr_seq: Option<u64>,
}

/// `Pong` (type 2): the answer to a `Ping`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pong {
    /// The pinging node's endpoint as the answering node saw it (its external address).
    pub to: Endpoint,
    /// The hash of the `Ping` answered.
    pub ping_hash: Bytes,
    /// Unix time (seconds) after which the packet is void.
    pub expire: u64,
    /// The answering node's ENR sequence number (EIP-868), if it says.
    pub enr_seq: Option<u64>,
}

/// `FindNode` (type 3): asks for the nodes the recipient knows closest to `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindNode {
    /// The node id (public key) whose neighbourhood is asked for.
    pub target: PeerId,
    /// Unix time (seconds) after which the packet is void.
    pub expire: u64,
}

/// `Neighbours` (type 4): the answer to `FindNode`, at most [`MAX_NEIGHBOURS`] a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbours {
    /// The nodes.
    pub nodes: Vec<NodeRecord>,
    /// Unix time (seconds) after which the packet is void.
    pub expire: u64,
}

/// `ENRRequest` (type 5, EIP-868): asks for the recipient's node record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrRequest {
    /// Unix time (seconds) after which the packet is void.
    pub expire: u64,
}

/// `ENRResponse` (type 6, EIP-868): the answer to `ENRRequest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnrResponse {
    /// The hash of the `ENRRequest` answered.
    pub request_hash: Bytes,
    /// The node's record.
    pub enr: Enr,
}

/// One discv4 packet's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// `Ping`.
    Ping(Ping),
    /// `Pong`.
    Pong(Pong),
    /// `FindNode`.
    FindNode(FindNode),
    /// `Neighbours`.
    Neighbours(Neighbours),
    /// `ENRRequest`.
    EnrRequest(EnrRequest),
    /// `ENRResponse`.
    EnrResponse(EnrResponse),
}

impl Message {
    /// The packet type byte.
    pub fn kind(&self) -> u8 {
        match self {
            Self::Ping(_) => 1,
            Self::Pong(_) => 2,
            Self::FindNode(_) => 3,
            Self::Neighbours(_) => 4,
            Self::EnrRequest(_) => 5,
            Self::EnrResponse(_) => 6,
        }
    }
}

/// Why a packet was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Shorter than a hash, a signature and a type byte, or longer than [`MAX_PACKET_SIZE`].
    #[error("packet of {0} bytes (at least 98, at most 1280)")]
    Size(usize),
    /// The leading hash is not keccak256 of the rest.
    #[error("packet hash mismatch")]
    BadHash,
    /// The signature does not recover to a public key.
    #[error("bad signature")]
    BadSignature,
    /// A type byte discv4 does not define.
    #[error("unknown packet type {0}")]
    UnknownType(u8),
    /// The body is not the RLP the type wants.
    #[error("malformed body: {0}")]
    Rlp(alloy_rlp::Error),
    /// An IP address of neither 4 nor 16 bytes.
    #[error("IP address of {0} bytes")]
    BadIp(usize),
    /// A record (ENR) that does not decode or verify.
    #[error("ENR: {0}")]
    Enr(#[source] alloy_rlp::Error),
}

impl From<alloy_rlp::Error> for DecodeError {
    fn from(e: alloy_rlp::Error) -> Self {
        Self::Rlp(e)
    }
}

/// Seals `message` with `key`: its packet bytes and the packet's hash (what a `Pong` or
/// `ENRResponse` answering it echoes).
pub fn encode(key: &SigningKey, message: &Message) -> (Vec<u8>, B256) {
    let mut body = Vec::with_capacity(256);
    body.push(message.kind());
    match message {
        Message::Ping(p) => list(&mut body, |out| {
            p.version.encode(out);
            endpoint(out, &p.from);
            endpoint(out, &p.to);
            p.expire.encode(out);
            if let Some(seq) = p.enr_seq {
                seq.encode(out);
            }
        }),
        Message::Pong(p) => list(&mut body, |out| {
            endpoint(out, &p.to);
            p.ping_hash.encode(out);
            p.expire.encode(out);
            if let Some(seq) = p.enr_seq {
                seq.encode(out);
            }
        }),
        Message::FindNode(f) => list(&mut body, |out| {
            f.target.encode(out);
            f.expire.encode(out);
        }),
        Message::Neighbours(n) => list(&mut body, |out| {
            list(out, |nodes| {
                for node in &n.nodes {
                    list(nodes, |fields| {
                        ip(fields, node.address);
                        node.udp_port.encode(fields);
                        node.tcp_port.encode(fields);
                        node.id.encode(fields);
                    });
                }
            });
            n.expire.encode(out);
        }),
        Message::EnrRequest(r) => list(&mut body, |out| r.expire.encode(out)),
        Message::EnrResponse(r) => list(&mut body, |out| {
            r.request_hash.encode(out);
            r.enr.encode(out);
        }),
    }
    let (signature, recovery) =
        key.sign_prehash_recoverable(keccak256(&body).as_slice()).expect("a 32-byte prehash");
    let mut packet = Vec::with_capacity(HEAD_SIZE + body.len());
    packet.extend_from_slice(&[0u8; 32]);
    packet.extend_from_slice(&signature.to_bytes());
    packet.push(recovery.to_byte());
    packet.extend_from_slice(&body);
    let hash = keccak256(&packet[32..]);
    packet[..32].copy_from_slice(hash.as_slice());
    (packet, hash)
}

/// Reads a packet: its message, the sender's node id (recovered from the signature) and the
/// packet's hash.
///
/// # Errors
/// [`DecodeError`]; never panics.
pub fn decode(packet: &[u8]) -> Result<(Message, PeerId, B256), DecodeError> {
    if packet.len() <= HEAD_SIZE || packet.len() > MAX_PACKET_SIZE {
        return Err(DecodeError::Size(packet.len()));
    }
    let hash = keccak256(&packet[32..]);
    if hash.as_slice() != &packet[..32] {
        return Err(DecodeError::BadHash);
    }
    let body = &packet[HEAD_SIZE..];
    let signature =
        Signature::from_slice(&packet[32..96]).map_err(|_| DecodeError::BadSignature)?;
    let recovery = RecoveryId::from_byte(packet[96]).ok_or(DecodeError::BadSignature)?;
    let key = VerifyingKey::recover_from_prehash(keccak256(body).as_slice(), &signature, recovery)
        .map_err(|_| DecodeError::BadSignature)?;
    let point = key.to_encoded_point(false);
    let sender = PeerId::from_slice(&point.as_bytes()[1..]);
    let mut buf = &body[1..];
    let message = match body[0] {
        1 => Message::Ping(fields(&mut buf, |b| {
            Ok(Ping {
                version: u64::decode(b)?,
                from: read_endpoint(b)?,
                to: read_endpoint(b)?,
                expire: u64::decode(b)?,
                enr_seq: optional(b)?,
            })
        })?),
        2 => Message::Pong(fields(&mut buf, |b| {
            Ok(Pong {
                to: read_endpoint(b)?,
                ping_hash: Bytes::decode(b)?,
                expire: u64::decode(b)?,
                enr_seq: optional(b)?,
            })
        })?),
        3 => Message::FindNode(fields(&mut buf, |b| {
            Ok(FindNode { target: PeerId::decode(b)?, expire: u64::decode(b)? })
        })?),
        4 => Message::Neighbours(fields(&mut buf, |b| {
            let mut items = RlpHeader::decode_bytes(b, true)?;
            let mut nodes = Vec::new();
            while !items.is_empty() {
                nodes.push(fields(&mut items, |f| {
                    let address = read_ip(f)?;
                    let udp_port = u16::decode(f)?;
                    let tcp_port = u16::decode(f)?;
                    let id = PeerId::decode(f)?;
                    Ok(NodeRecord { address, tcp_port, udp_port, id })
                })?);
            }
            Ok(Neighbours { nodes, expire: u64::decode(b)? })
        })?),
        5 => Message::EnrRequest(fields(&mut buf, |b| Ok(EnrRequest { expire: u64::decode(b)? }))?),
        6 => Message::EnrResponse(fields(&mut buf, |b| {
            let request_hash = Bytes::decode(b)?;
            let enr = Enr::decode(b).map_err(DecodeError::Enr)?;
            Ok(EnrResponse { request_hash, enr })
        })?),
        other => return Err(DecodeError::UnknownType(other)),
    };
    Ok((message, sender, hash))
}

/// Writes an RLP list whose payload `items` writes.
fn list(out: &mut dyn alloy_rlp::BufMut, items: impl FnOnce(&mut Vec<u8>)) {
    let mut payload = Vec::new();
    items(&mut payload);
    RlpHeader { list: true, payload_length: payload.len() }.encode(out);
    out.put_slice(&payload);
}

/// An IP address as discv4 carries it: 4 bytes for IPv4, 16 for IPv6.
fn ip(out: &mut dyn alloy_rlp::BufMut, address: IpAddr) {
    match address {
        IpAddr::V4(v4) => v4.octets().as_slice().encode(out),
        IpAddr::V6(v6) => v6.octets().as_slice().encode(out),
    }
}

fn endpoint(out: &mut Vec<u8>, e: &Endpoint) {
    list(out, |fields| {
        ip(fields, e.address);
        e.udp_port.encode(fields);
        e.tcp_port.encode(fields);
    });
}

/// Reads one RLP list from `buf` with `read`, ignoring fields past those it reads (EIP-8).
fn fields<T>(
    buf: &mut &[u8],
    read: impl FnOnce(&mut &[u8]) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    let mut payload = RlpHeader::decode_bytes(buf, true)?;
    read(&mut payload)
}

/// An optional trailing integer: absent when the list ends here.
fn optional(buf: &mut &[u8]) -> Result<Option<u64>, DecodeError> {
    if buf.is_empty() {
        return Ok(None);
    }
    Ok(Some(u64::decode(buf)?))
}

fn read_ip(buf: &mut &[u8]) -> Result<IpAddr, DecodeError> {
    let bytes = RlpHeader::decode_bytes(buf, false)?;
    Ok(match bytes.len() {
        4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(bytes).expect("4 bytes"))),
        16 => {
            let v6 = Ipv6Addr::from(<[u8; 16]>::try_from(bytes).expect("16 bytes"));
            // An IPv4 address written in IPv6 form is an IPv4 address.
            v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
        }
        n => return Err(DecodeError::BadIp(n)),
    })
}

fn read_endpoint(buf: &mut &[u8]) -> Result<Endpoint, DecodeError> {
    fields(buf, |f| {
        Ok(Endpoint { address: read_ip(f)?, udp_port: u16::decode(f)?, tcp_port: u16::decode(f)? })
    })
}
