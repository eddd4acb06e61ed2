//! The block-sync messages the libp2p transport carries: eth/69's `Status`,
//! `GetBlockHeaders` / `BlockHeaders`, `GetBlockBodies` / `BlockBodies` and EIP-8159's
//! `GetBlockAccessLists` / `BlockAccessLists`, each as `id ‖ RLP` with eth's message ids.
//!
//! `Status` here is eth/69's without the fork id (`[version, networkid, genesis, earliest,
//! latest, latesthash]`, asked for with an empty list); requests carry no request id (a
//! request-response transport pairs them). An unavailable BAL travels as an empty list.

use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use alloy_rlp::{Decodable, Encodable};
use gigagas_bal::BlockAccessList;

const STATUS: u8 = 0x00;
const GET_BLOCK_HEADERS: u8 = 0x03;
const BLOCK_HEADERS: u8 = 0x04;
const GET_BLOCK_BODIES: u8 = 0x05;
const BLOCK_BODIES: u8 = 0x06;
const GET_BLOCK_ACCESS_LISTS: u8 = 0x12;
const BLOCK_ACCESS_LISTS: u8 = 0x13;

/// eth/69 protocol version this status reports.
pub const ETH_VERSION: u64 = 69;

/// A node's chain and head: eth/69's `Status` without the fork id (every node of a devnet runs
/// one chain spec; the genesis hash tells chains apart). RLP: the fields as a list, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, alloy_rlp::RlpEncodable, alloy_rlp::RlpDecodable)]
pub struct ChainStatus {
    /// eth protocol version ([`ETH_VERSION`]).
    pub version: u64,
    /// Network id (the chain id).
    pub network_id: u64,
    /// Genesis block hash.
    pub genesis: B256,
    /// Earliest block whose body the node serves.
    pub earliest: u64,
    /// The node's head block number.
    pub latest: u64,
    /// The node's head block hash.
    pub latest_hash: B256,
}

/// A sync request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncRequest {
    /// eth/69 `Status`: the peer's chain and head.
    Status,
    /// eth/69 `GetBlockHeaders`: `limit` headers from `start`, every `skip + 1`-th, towards
    /// lower numbers when `reverse`.
    GetBlockHeaders {
        /// First block.
        start: HashOrNumber,
        /// Headers at most.
        limit: u64,
        /// Blocks skipped between two headers.
        skip: u64,
        /// Descending.
        reverse: bool,
    },
    /// eth/69 `GetBlockBodies`: the bodies of these blocks.
    GetBlockBodies(Vec<B256>),
    /// EIP-8159 `GetBlockAccessLists`: the BALs of these blocks.
    GetBlockAccessLists(Vec<B256>),
}

/// A sync answer (a prefix of what was asked: a peer may stop at what it has or the limits).
#[derive(Debug, Clone, PartialEq)]
pub enum SyncResponse {
    /// eth/69 `Status` (`None`: the peer serves no chain, an empty list on the wire).
    Status(Option<ChainStatus>),
    /// eth/69 `BlockHeaders`.
    BlockHeaders(Vec<Header>),
    /// eth/69 `BlockBodies`.
    BlockBodies(Vec<BlockBody<TxEnvelope>>),
    /// EIP-8159 `BlockAccessLists` (`None`: not available).
    BlockAccessLists(Vec<Option<BlockAccessList>>),
}

impl SyncResponse {
    /// The empty answer to `request` (a node that serves no chain).
    pub fn empty(request: &SyncRequest) -> Self {
        match request {
            SyncRequest::Status => Self::Status(None),
            SyncRequest::GetBlockHeaders { .. } => Self::BlockHeaders(Vec::new()),
            SyncRequest::GetBlockBodies(_) => Self::BlockBodies(Vec::new()),
            SyncRequest::GetBlockAccessLists(_) => Self::BlockAccessLists(Vec::new()),
        }
    }
}

impl SyncRequest {
    /// `id ‖ RLP`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Self::Status => {
                out.push(STATUS);
                alloy_rlp::Header { list: true, payload_length: 0 }.encode(&mut out);
            }
            Self::GetBlockHeaders { start, limit, skip, reverse } => {
                out.push(GET_BLOCK_HEADERS);
                let payload_length =
                    start.length() + limit.length() + skip.length() + reverse.length();
                alloy_rlp::Header { list: true, payload_length }.encode(&mut out);
                start.encode(&mut out);
                limit.encode(&mut out);
                skip.encode(&mut out);
                reverse.encode(&mut out);
            }
            Self::GetBlockBodies(hashes) => {
                out.push(GET_BLOCK_BODIES);
                hashes.encode(&mut out);
            }
            Self::GetBlockAccessLists(hashes) => {
                out.push(GET_BLOCK_ACCESS_LISTS);
                hashes.encode(&mut out);
            }
        }
        out
    }

    /// Parses `id ‖ RLP`.
    ///
    /// # Errors
    /// [`alloy_rlp::Error`] for a malformed message; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, alloy_rlp::Error> {
        let (&id, mut rest) = bytes.split_first().ok_or(alloy_rlp::Error::InputTooShort)?;
        let request = match id {
            STATUS => {
                let header = alloy_rlp::Header::decode(&mut rest)?;
                if !header.list || header.payload_length != 0 {
                    return Err(alloy_rlp::Error::UnexpectedLength);
                }
                Self::Status
            }
            GET_BLOCK_HEADERS => {
                let header = alloy_rlp::Header::decode(&mut rest)?;
                if !header.list || header.payload_length != rest.len() {
                    return Err(alloy_rlp::Error::UnexpectedLength);
                }
                Self::GetBlockHeaders {
                    start: HashOrNumber::decode(&mut rest)?,
                    limit: u64::decode(&mut rest)?,
                    skip: u64::decode(&mut rest)?,
                    reverse: bool::decode(&mut rest)?,
                }
            }
            GET_BLOCK_BODIES => Self::GetBlockBodies(Vec::decode(&mut rest)?),
            GET_BLOCK_ACCESS_LISTS => Self::GetBlockAccessLists(Vec::decode(&mut rest)?),
            _ => return Err(alloy_rlp::Error::Custom("unknown sync request id")),
        };
        if !rest.is_empty() {
            return Err(alloy_rlp::Error::UnexpectedLength);
        }
        Ok(request)
    }
}

impl SyncResponse {
    /// `id ‖ RLP`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Self::Status(status) => {
                out.push(STATUS);
                match status {
                    Some(status) => status.encode(&mut out),
                    None => alloy_rlp::Header { list: true, payload_length: 0 }.encode(&mut out),
                }
            }
            Self::BlockHeaders(headers) => {
                out.push(BLOCK_HEADERS);
                headers.encode(&mut out);
            }
            Self::BlockBodies(bodies) => {
                out.push(BLOCK_BODIES);
                bodies.encode(&mut out);
            }
            Self::BlockAccessLists(bals) => {
                out.push(BLOCK_ACCESS_LISTS);
                let empty = BlockAccessList::new();
                let lists: Vec<&BlockAccessList> =
                    bals.iter().map(|b| b.as_ref().unwrap_or(&empty)).collect();
                lists.encode(&mut out);
            }
        }
        out
    }

    /// Parses `id ‖ RLP`.
    ///
    /// # Errors
    /// [`alloy_rlp::Error`] for a malformed message; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, alloy_rlp::Error> {
        let (&id, mut rest) = bytes.split_first().ok_or(alloy_rlp::Error::InputTooShort)?;
        let response = match id {
            STATUS if rest == [alloy_rlp::EMPTY_LIST_CODE] => {
                rest = &rest[1..];
                Self::Status(None)
            }
            STATUS => Self::Status(Some(ChainStatus::decode(&mut rest)?)),
            BLOCK_HEADERS => Self::BlockHeaders(Vec::decode(&mut rest)?),
            BLOCK_BODIES => Self::BlockBodies(Vec::decode(&mut rest)?),
            BLOCK_ACCESS_LISTS => Self::BlockAccessLists(
                Vec::<BlockAccessList>::decode(&mut rest)?
                    .into_iter()
                    .map(|b| (!b.is_empty()).then_some(b))
                    .collect(),
            ),
            _ => return Err(alloy_rlp::Error::Custom("unknown sync response id")),
        };
        if !rest.is_empty() {
            return Err(alloy_rlp::Error::UnexpectedLength);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_garbage_is_an_error() {
        let requests = [
            SyncRequest::GetBlockHeaders {
                start: HashOrNumber::Number(7),
                limit: 5,
                skip: 0,
                reverse: false,
            },
            SyncRequest::GetBlockHeaders {
                start: HashOrNumber::Hash(B256::repeat_byte(1)),
                limit: 1,
                skip: 2,
                reverse: true,
            },
            SyncRequest::GetBlockBodies(vec![B256::repeat_byte(2), B256::repeat_byte(3)]),
            SyncRequest::GetBlockAccessLists(vec![B256::repeat_byte(4)]),
            SyncRequest::Status,
        ];
        for r in requests {
            assert_eq!(SyncRequest::decode(&r.encode()).unwrap(), r);
        }
        let responses = [
            SyncResponse::BlockHeaders(vec![
                Header::default(),
                Header { number: 3, ..Default::default() },
            ]),
            SyncResponse::BlockBodies(vec![BlockBody::default()]),
            SyncResponse::BlockAccessLists(vec![None]),
            SyncResponse::Status(None),
            SyncResponse::Status(Some(ChainStatus {
                version: ETH_VERSION,
                network_id: 1337,
                genesis: B256::repeat_byte(5),
                earliest: 0,
                latest: 200,
                latest_hash: B256::repeat_byte(6),
            })),
        ];
        for r in responses {
            assert_eq!(SyncResponse::decode(&r.encode()).unwrap(), r);
        }
        assert!(SyncRequest::decode(&[]).is_err());
        assert!(SyncRequest::decode(&[0x03, 0xc0]).is_err());
        assert!(SyncRequest::decode(&[0x77, 0xc0]).is_err());
        assert!(SyncResponse::decode(&[0x04, 0xc1]).is_err());
        assert!(SyncResponse::decode(&[0x00, 0xc1, 0x45]).is_err());
        assert!(SyncRequest::decode(&[0x00, 0xc1, 0x45]).is_err());
    }
}
