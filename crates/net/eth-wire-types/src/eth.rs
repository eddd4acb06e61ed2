//! devp2p's `eth` protocol, versions 69 to 72, as geth 1.17.10 encodes it
//! (`eth/protocols/eth/protocol.go`): each message is `message id ‖ RLP`, the id relative to
//! the capability's offset in the session.
//!
//! - eth/69: `Status` with the EIP-2124 fork id and the served block range,
//!   `BlockRangeUpdate`, receipts without their bloom; no `NewBlock` / `NewBlockHashes`.
//! - eth/70: `GetReceipts` starts at a receipt index of the first block, `Receipts` says when
//!   its last block is incomplete (EIP-7975).
//! - eth/71: `GetBlockAccessLists` / `BlockAccessLists` (EIP-8159); a BAL the peer does not have
//!   is the empty string `0x80` (an empty list is a valid BAL).
//! - eth/72 (EIP-8070, the sparse blobpool): `NewPooledTransactionHashes` ends with the
//!   sender's custody bitmap (the cell columns of the announced blob transactions it holds);
//!   blob transactions travel without their blobs (commitments and cell proofs stay), and
//!   `GetCells` / `Cells` carry the blobs' cells, column by column.
//!
//! Requests and their answers carry a request id (`[request-id, payload]`). Transactions travel
//! in their network form: a legacy one as its RLP list, a typed one as the string
//! `type ‖ payload`, a pooled blob transaction with its sidecar.

use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::{Bytes, Log, B256};
use alloy_rlp::{Decodable, Encodable, Header as RlpHeader, RlpDecodable, RlpEncodable};
use gigagas_bal::BlockAccessList;

/// The eth versions this implementation speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EthVersion {
    /// eth/69.
    Eth69 = 69,
    /// eth/70 (partial receipts).
    Eth70 = 70,
    /// eth/71 (block access lists).
    Eth71 = 71,
    /// eth/72 (EIP-8070: cells of blob transactions).
    Eth72 = 72,
}

impl EthVersion {
    /// Every version, highest first (the order a node advertises them in).
    pub const ALL: [EthVersion; 4] =
        [EthVersion::Eth72, EthVersion::Eth71, EthVersion::Eth70, EthVersion::Eth69];

    /// The version numbered `version`, if spoken here.
    pub fn from_number(version: u64) -> Option<Self> {
        match version {
            69 => Some(Self::Eth69),
            70 => Some(Self::Eth70),
            71 => Some(Self::Eth71),
            72 => Some(Self::Eth72),
            _ => None,
        }
    }

    /// Its number.
    pub fn number(self) -> u64 {
        self as u64
    }

    /// How many message ids the version takes (geth's `protocolLengths`).
    pub fn message_count(self) -> u8 {
        match self {
            Self::Eth69 | Self::Eth70 => 18,
            Self::Eth71 => 20,
            Self::Eth72 => 22,
        }
    }
}

/// The eth message ids (relative to the capability's offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EthMessageId {
    /// `Status`.
    Status = 0x00,
    /// `Transactions`.
    Transactions = 0x02,
    /// `GetBlockHeaders`.
    GetBlockHeaders = 0x03,
    /// `BlockHeaders`.
    BlockHeaders = 0x04,
    /// `GetBlockBodies`.
    GetBlockBodies = 0x05,
    /// `BlockBodies`.
    BlockBodies = 0x06,
    /// `NewPooledTransactionHashes`.
    NewPooledTransactionHashes = 0x08,
    /// `GetPooledTransactions`.
    GetPooledTransactions = 0x09,
    /// `PooledTransactions`.
    PooledTransactions = 0x0a,
    /// `GetReceipts`.
    GetReceipts = 0x0f,
    /// `Receipts`.
    Receipts = 0x10,
    /// `BlockRangeUpdate`.
    BlockRangeUpdate = 0x11,
    /// `GetBlockAccessLists` (eth/71).
    GetBlockAccessLists = 0x12,
    /// `BlockAccessLists` (eth/71).
    BlockAccessLists = 0x13,
    /// `GetCells` (eth/72).
    GetCells = 0x14,
    /// `Cells` (eth/72).
    Cells = 0x15,
}

impl EthMessageId {
    /// The message of id `id` in `version`; `None` for an id the version does not define
    /// (`NewBlockHashes`, `NewBlock` and the removed state messages included: geth has no
    /// handler for them).
    pub fn from_id(id: u8, version: EthVersion) -> Option<Self> {
        Some(match id {
            0x00 => Self::Status,
            0x02 => Self::Transactions,
            0x03 => Self::GetBlockHeaders,
            0x04 => Self::BlockHeaders,
            0x05 => Self::GetBlockBodies,
            0x06 => Self::BlockBodies,
            0x08 => Self::NewPooledTransactionHashes,
            0x09 => Self::GetPooledTransactions,
            0x0a => Self::PooledTransactions,
            0x0f => Self::GetReceipts,
            0x10 => Self::Receipts,
            0x11 => Self::BlockRangeUpdate,
            0x12 if version >= EthVersion::Eth71 => Self::GetBlockAccessLists,
            0x13 if version >= EthVersion::Eth71 => Self::BlockAccessLists,
            0x14 if version >= EthVersion::Eth72 => Self::GetCells,
            0x15 if version >= EthVersion::Eth72 => Self::Cells,
            _ => return None,
        })
    }
}

/// `Status` (eth/69–72): `[version, networkid, genesis, forkid, earliest, latest, latesthash]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct StatusMessage {
    /// The negotiated eth version.
    pub version: u64,
    /// The network id.
    pub network_id: u64,
    /// The genesis block's hash.
    pub genesis: B256,
    /// The EIP-2124 fork id at the sender's head.
    pub fork_id: alloy_eip2124::ForkId,
    /// The earliest block whose body and receipts the sender serves.
    pub earliest: u64,
    /// The sender's head number.
    pub latest: u64,
    /// The sender's head hash.
    pub latest_hash: B256,
}

/// `BlockRangeUpdate`: the blocks the sender now serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct BlockRangeUpdate {
    /// The earliest block served.
    pub earliest: u64,
    /// The head number.
    pub latest: u64,
    /// The head hash.
    pub latest_hash: B256,
}

/// A `GetBlockHeaders` query: `amount` headers from `origin`, every `skip + 1`-th, towards
/// lower numbers when `reverse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct HeadersRequest {
    /// The first block, by hash or number.
    pub origin: HashOrNumber,
    /// Headers at most.
    pub amount: u64,
    /// Blocks skipped between two headers.
    pub skip: u64,
    /// Descending.
    pub reverse: bool,
}

/// A request or answer with its request id: `[request-id, message]`.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct RequestPair<T> {
    /// The id the answer repeats.
    pub request_id: u64,
    /// The payload.
    pub message: T,
}

/// `NewPooledTransactionHashes`: one type byte, one size and one hash per announced
/// transaction (eth/68's form, used by 69–71), and from eth/72 the sender's custody bitmap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPooledTransactionHashes {
    /// The transactions' EIP-2718 types, one byte each.
    pub types: Bytes,
    /// Their sizes in the network form of the session's version (bytes; on eth/72 a blob
    /// transaction's without its blobs).
    pub sizes: Vec<u32>,
    /// Their hashes.
    pub hashes: Vec<B256>,
    /// eth/72: the cell columns of the announced blob transactions the sender holds
    /// ([`CustodyBitmap`]); `None` below eth/72 (where a sender holds whole blobs).
    pub mask: Option<CustodyBitmap>,
}

/// EIP-8070's custody bitmap: one bit per cell column of an extended blob (128 columns),
/// column `i` in byte `i / 8`, bit `i % 8` (the least significant bit first), as geth's
/// `types.CustodyBitmap`; on the wire a 16-byte string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CustodyBitmap(pub [u8; 16]);

impl CustodyBitmap {
    /// Every column.
    pub const ALL: Self = Self([0xff; 16]);

    /// The bitmap of `columns` (each below 128; others are ignored).
    pub fn from_columns(columns: impl IntoIterator<Item = u64>) -> Self {
        let mut bits = [0u8; 16];
        for c in columns.into_iter().filter(|c| *c < 128) {
            bits[(c / 8) as usize] |= 1 << (c % 8);
        }
        Self(bits)
    }

    /// The columns set, ascending.
    pub fn columns(&self) -> Vec<u64> {
        (0..128u64).filter(|c| self.0[(c / 8) as usize] & (1 << (c % 8)) != 0).collect()
    }

    /// How many columns are set.
    pub fn count(&self) -> usize {
        self.0.iter().map(|b| b.count_ones() as usize).sum()
    }

    /// Whether every column of `other` is set here.
    pub fn covers(&self, other: &Self) -> bool {
        self.0.iter().zip(&other.0).all(|(a, b)| a & b == *b)
    }
}

impl Encodable for CustodyBitmap {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        self.0.as_slice().encode(out);
    }
    fn length(&self) -> usize {
        self.0.as_slice().length()
    }
}

impl Decodable for CustodyBitmap {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let bytes = RlpHeader::decode_bytes(buf, false)?;
        let bits: [u8; 16] =
            bytes.try_into().map_err(|_| alloy_rlp::Error::Custom("custody bitmap of 16 bytes"))?;
        Ok(Self(bits))
    }
}

impl NewPooledTransactionHashes {
    fn fields_length(&self) -> usize {
        self.types.length()
            + self.sizes.length()
            + self.hashes.length()
            + self.mask.as_ref().map_or(0, Encodable::length)
    }
}

impl Encodable for NewPooledTransactionHashes {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        RlpHeader { list: true, payload_length: self.fields_length() }.encode(out);
        self.types.encode(out);
        self.sizes.encode(out);
        self.hashes.encode(out);
        if let Some(mask) = &self.mask {
            mask.encode(out);
        }
    }
    fn length(&self) -> usize {
        let payload_length = self.fields_length();
        payload_length + alloy_rlp::length_of_length(payload_length)
    }
}

impl Decodable for NewPooledTransactionHashes {
    /// Three fields (eth/68–71) or four (eth/72); which the session's version wants is
    /// checked by [`EthMessage::decode`].
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let mut items = RlpHeader::decode_bytes(buf, true)?;
        let types = Bytes::decode(&mut items)?;
        let sizes = Vec::decode(&mut items)?;
        let hashes = Vec::decode(&mut items)?;
        let mask = if items.is_empty() { None } else { Some(CustodyBitmap::decode(&mut items)?) };
        if !items.is_empty() {
            return Err(alloy_rlp::Error::ListLengthMismatch { expected: 4, got: 5 });
        }
        Ok(Self { types, sizes, hashes, mask })
    }
}

/// `GetCells` (eth/72): the cells of `columns` of the blobs of transactions `hashes`.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct GetCells {
    /// The request id.
    pub request_id: u64,
    /// The blob transactions.
    pub hashes: Vec<B256>,
    /// The columns wanted.
    pub mask: CustodyBitmap,
}

/// `Cells` (eth/72): per transaction, its cells of the columns in `mask`, column by column
/// and, within a column, blob by blob (cell `j` of blob `b` at `j' * blobs + b`, `j'` the
/// column's rank in `mask`); an empty list for a transaction the sender does not hold.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct Cells {
    /// The request id.
    pub request_id: u64,
    /// The transactions answered, in the request's order.
    pub hashes: Vec<B256>,
    /// Each transaction's cells (2,048 bytes each).
    pub cells: Vec<Vec<Bytes>>,
    /// The columns the cells are of.
    pub mask: CustodyBitmap,
}

impl NewPooledTransactionHashes {
    /// Whether the three lists are of one length (geth drops a peer whose are not).
    pub fn is_consistent(&self) -> bool {
        self.types.len() == self.sizes.len() && self.sizes.len() == self.hashes.len()
    }
}

/// A receipt as eth/69 carries it: `[tx-type, status, cumulative-gas, logs]`, no bloom.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct Receipt69 {
    /// The transaction's EIP-2718 type (0 for legacy).
    pub tx_type: u8,
    /// Success (Byzantium on) or the post-state root (before).
    pub status: alloy_consensus::Eip658Value,
    /// Gas used by the block up to and including this transaction.
    pub cumulative_gas_used: u64,
    /// The logs.
    pub logs: Vec<Log>,
}

/// The answer to `GetBlockAccessLists`: one entry per requested hash, `None` when the sender
/// does not have that BAL (encoded as `0x80`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlockAccessLists(pub Vec<Option<BlockAccessList>>);

impl Encodable for BlockAccessLists {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        let payload_length: usize =
            self.0.iter().map(|b| b.as_ref().map_or(1, Encodable::length)).sum();
        RlpHeader { list: true, payload_length }.encode(out);
        for bal in &self.0 {
            match bal {
                Some(bal) => bal.encode(out),
                None => out.put_u8(alloy_rlp::EMPTY_STRING_CODE),
            }
        }
    }

    fn length(&self) -> usize {
        let payload_length: usize =
            self.0.iter().map(|b| b.as_ref().map_or(1, Encodable::length)).sum();
        payload_length + alloy_rlp::length_of_length(payload_length)
    }
}

impl Decodable for BlockAccessLists {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let mut items = RlpHeader::decode_bytes(buf, true)?;
        let mut out = Vec::new();
        while !items.is_empty() {
            if items[0] == alloy_rlp::EMPTY_STRING_CODE {
                items = &items[1..];
                out.push(None);
            } else {
                out.push(Some(BlockAccessList::decode(&mut items)?));
            }
        }
        Ok(Self(out))
    }
}

/// Transactions in their network form, each kept as its EIP-2718 bytes (a legacy one is an
/// RLP list on the wire, a typed one an RLP string holding `type ‖ payload`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkTransactions(pub Vec<Bytes>);

impl Encodable for NetworkTransactions {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        let payload_length: usize = self.0.iter().map(network_length).sum();
        RlpHeader { list: true, payload_length }.encode(out);
        for tx in &self.0 {
            if tx.first().is_some_and(|b| *b >= 0xc0) {
                out.put_slice(tx);
            } else {
                tx.as_ref().encode(out);
            }
        }
    }

    fn length(&self) -> usize {
        let payload_length: usize = self.0.iter().map(network_length).sum();
        payload_length + alloy_rlp::length_of_length(payload_length)
    }
}

/// The bytes one transaction takes in a network list.
fn network_length(tx: &Bytes) -> usize {
    if tx.first().is_some_and(|b| *b >= 0xc0) {
        tx.len()
    } else {
        tx.as_ref().length()
    }
}

impl Decodable for NetworkTransactions {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let mut items = RlpHeader::decode_bytes(buf, true)?;
        let mut out = Vec::new();
        while !items.is_empty() {
            let start = items;
            let header = RlpHeader::decode(&mut items)?;
            if items.len() < header.payload_length {
                return Err(alloy_rlp::Error::InputTooShort);
            }
            if header.list {
                let len = start.len() - items.len() + header.payload_length;
                out.push(Bytes::copy_from_slice(&start[..len]));
            } else {
                if header.payload_length == 0 {
                    return Err(alloy_rlp::Error::Custom("empty typed transaction"));
                }
                out.push(Bytes::copy_from_slice(&items[..header.payload_length]));
            }
            items = &items[header.payload_length..];
        }
        Ok(Self(out))
    }
}

/// An eth message, decoded for the session's version.
#[derive(Debug, Clone, PartialEq)]
pub enum EthMessage {
    /// `Status`.
    Status(StatusMessage),
    /// `Transactions`: transactions sent unasked.
    Transactions(NetworkTransactions),
    /// `GetBlockHeaders`.
    GetBlockHeaders(RequestPair<HeadersRequest>),
    /// `BlockHeaders`.
    BlockHeaders(RequestPair<Vec<Header>>),
    /// `GetBlockBodies`.
    GetBlockBodies(RequestPair<Vec<B256>>),
    /// `BlockBodies`: `[transactions, ommers, withdrawals?]` per block.
    BlockBodies(RequestPair<Vec<BlockBody<TxEnvelope>>>),
    /// `NewPooledTransactionHashes`.
    NewPooledTransactionHashes(NewPooledTransactionHashes),
    /// `GetPooledTransactions`.
    GetPooledTransactions(RequestPair<Vec<B256>>),
    /// `PooledTransactions`: network forms (blob transactions with their sidecars).
    PooledTransactions(RequestPair<NetworkTransactions>),
    /// `GetReceipts`: the blocks' hashes and, from eth/70, the first receipt wanted of the
    /// first block (`None` on eth/69).
    GetReceipts {
        /// The request id.
        request_id: u64,
        /// eth/70's `firstBlockReceiptIndex`.
        first_block_receipt_index: Option<u64>,
        /// The blocks.
        hashes: Vec<B256>,
    },
    /// `Receipts`: each block's receipts; from eth/70, whether the last block's list is cut.
    Receipts {
        /// The request id.
        request_id: u64,
        /// eth/70's `lastBlockIncomplete` (`None` on eth/69).
        last_block_incomplete: Option<bool>,
        /// Each block's receipts.
        receipts: Vec<Vec<Receipt69>>,
    },
    /// `BlockRangeUpdate`.
    BlockRangeUpdate(BlockRangeUpdate),
    /// `GetBlockAccessLists` (eth/71).
    GetBlockAccessLists(RequestPair<Vec<B256>>),
    /// `BlockAccessLists` (eth/71).
    BlockAccessLists(RequestPair<BlockAccessLists>),
    /// `GetCells` (eth/72).
    GetCells(GetCells),
    /// `Cells` (eth/72).
    Cells(Cells),
}

/// Why a message could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum EthMessageError {
    /// The id is not a message of the session's version.
    #[error("message id {id:#04x} is not defined in eth/{version}")]
    UnknownId {
        /// The relative id.
        id: u8,
        /// The session's version.
        version: u64,
    },
    /// The RLP does not match the message.
    #[error("malformed {message:?}: {source}")]
    Malformed {
        /// Which message.
        message: EthMessageId,
        /// The decoding error.
        source: alloy_rlp::Error,
    },
    /// A message this version does not carry in the shape given (e.g. a BAL request on eth/69,
    /// eth/70's receipt fields on eth/69).
    #[error("{0:?} does not exist in this shape on eth/{1}")]
    WrongVersion(EthMessageId, u64),
}

impl EthMessage {
    /// The message's id.
    pub fn id(&self) -> EthMessageId {
        match self {
            Self::Status(_) => EthMessageId::Status,
            Self::Transactions(_) => EthMessageId::Transactions,
            Self::GetBlockHeaders(_) => EthMessageId::GetBlockHeaders,
            Self::BlockHeaders(_) => EthMessageId::BlockHeaders,
            Self::GetBlockBodies(_) => EthMessageId::GetBlockBodies,
            Self::BlockBodies(_) => EthMessageId::BlockBodies,
            Self::NewPooledTransactionHashes(_) => EthMessageId::NewPooledTransactionHashes,
            Self::GetPooledTransactions(_) => EthMessageId::GetPooledTransactions,
            Self::PooledTransactions(_) => EthMessageId::PooledTransactions,
            Self::GetReceipts { .. } => EthMessageId::GetReceipts,
            Self::Receipts { .. } => EthMessageId::Receipts,
            Self::BlockRangeUpdate(_) => EthMessageId::BlockRangeUpdate,
            Self::GetBlockAccessLists(_) => EthMessageId::GetBlockAccessLists,
            Self::BlockAccessLists(_) => EthMessageId::BlockAccessLists,
            Self::GetCells(_) => EthMessageId::GetCells,
            Self::Cells(_) => EthMessageId::Cells,
        }
    }

    /// The message's RLP payload for `version` (without the id).
    ///
    /// # Errors
    /// [`EthMessageError::WrongVersion`] for a message `version` cannot carry.
    pub fn encode_payload(&self, version: EthVersion) -> Result<Vec<u8>, EthMessageError> {
        let id = self.id();
        let wrong = || EthMessageError::WrongVersion(id, version.number());
        if EthMessageId::from_id(id as u8, version).is_none() {
            return Err(wrong());
        }
        let mut out = Vec::new();
        match self {
            Self::Status(m) => m.encode(&mut out),
            Self::Transactions(m) => m.encode(&mut out),
            Self::GetBlockHeaders(m) => m.encode(&mut out),
            Self::BlockHeaders(m) => m.encode(&mut out),
            Self::GetBlockBodies(m) => m.encode(&mut out),
            Self::BlockBodies(m) => m.encode(&mut out),
            Self::NewPooledTransactionHashes(m) => {
                if m.mask.is_some() != (version >= EthVersion::Eth72) {
                    return Err(wrong());
                }
                m.encode(&mut out)
            }
            Self::GetPooledTransactions(m) => m.encode(&mut out),
            Self::PooledTransactions(m) => m.encode(&mut out),
            Self::GetReceipts { request_id, first_block_receipt_index, hashes } => {
                match (version >= EthVersion::Eth70, first_block_receipt_index) {
                    (false, None) => {
                        RequestPair { request_id: *request_id, message: hashes }.encode(&mut out)
                    }
                    (true, index) => {
                        let index = index.unwrap_or(0);
                        let payload_length = request_id.length() + index.length() + hashes.length();
                        RlpHeader { list: true, payload_length }.encode(&mut out);
                        request_id.encode(&mut out);
                        index.encode(&mut out);
                        hashes.encode(&mut out);
                    }
                    (false, Some(_)) => return Err(wrong()),
                }
            }
            Self::Receipts { request_id, last_block_incomplete, receipts } => {
                match (version >= EthVersion::Eth70, last_block_incomplete) {
                    (false, None) => {
                        RequestPair { request_id: *request_id, message: receipts }.encode(&mut out)
                    }
                    (true, incomplete) => {
                        let incomplete = incomplete.unwrap_or(false);
                        let payload_length =
                            request_id.length() + incomplete.length() + receipts.length();
                        RlpHeader { list: true, payload_length }.encode(&mut out);
                        request_id.encode(&mut out);
                        incomplete.encode(&mut out);
                        receipts.encode(&mut out);
                    }
                    (false, Some(_)) => return Err(wrong()),
                }
            }
            Self::BlockRangeUpdate(m) => m.encode(&mut out),
            Self::GetBlockAccessLists(m) => m.encode(&mut out),
            Self::BlockAccessLists(m) => m.encode(&mut out),
            Self::GetCells(m) => m.encode(&mut out),
            Self::Cells(m) => m.encode(&mut out),
        }
        Ok(out)
    }

    /// Decodes message `id` (relative) of `version` from its RLP `payload`; the payload must
    /// be exactly one message.
    ///
    /// # Errors
    /// [`EthMessageError::UnknownId`] or [`EthMessageError::Malformed`]; never panics.
    pub fn decode(id: u8, version: EthVersion, payload: &[u8]) -> Result<Self, EthMessageError> {
        let message = EthMessageId::from_id(id, version)
            .ok_or(EthMessageError::UnknownId { id, version: version.number() })?;
        let malformed = |source| EthMessageError::Malformed { message, source };
        let mut buf = payload;
        let decoded = (|| -> alloy_rlp::Result<Self> {
            let buf = &mut buf;
            Ok(match message {
                EthMessageId::Status => Self::Status(Decodable::decode(buf)?),
                EthMessageId::Transactions => Self::Transactions(Decodable::decode(buf)?),
                EthMessageId::GetBlockHeaders => Self::GetBlockHeaders(Decodable::decode(buf)?),
                EthMessageId::BlockHeaders => Self::BlockHeaders(Decodable::decode(buf)?),
                EthMessageId::GetBlockBodies => Self::GetBlockBodies(Decodable::decode(buf)?),
                EthMessageId::BlockBodies => Self::BlockBodies(Decodable::decode(buf)?),
                EthMessageId::NewPooledTransactionHashes => {
                    let m = NewPooledTransactionHashes::decode(buf)?;
                    if m.mask.is_some() != (version >= EthVersion::Eth72) {
                        return Err(alloy_rlp::Error::Custom(
                            "a custody bitmap is eth/72's, and eth/72 needs one",
                        ));
                    }
                    Self::NewPooledTransactionHashes(m)
                }
                EthMessageId::GetPooledTransactions => {
                    Self::GetPooledTransactions(Decodable::decode(buf)?)
                }
                EthMessageId::PooledTransactions => {
                    Self::PooledTransactions(Decodable::decode(buf)?)
                }
                EthMessageId::GetReceipts if version >= EthVersion::Eth70 => {
                    let mut items = RlpHeader::decode_bytes(buf, true)?;
                    let request_id = u64::decode(&mut items)?;
                    let index = u64::decode(&mut items)?;
                    let hashes = Vec::decode(&mut items)?;
                    if !items.is_empty() {
                        return Err(alloy_rlp::Error::ListLengthMismatch { expected: 3, got: 4 });
                    }
                    Self::GetReceipts { request_id, first_block_receipt_index: Some(index), hashes }
                }
                EthMessageId::GetReceipts => {
                    let pair: RequestPair<Vec<B256>> = Decodable::decode(buf)?;
                    Self::GetReceipts {
                        request_id: pair.request_id,
                        first_block_receipt_index: None,
                        hashes: pair.message,
                    }
                }
                EthMessageId::Receipts if version >= EthVersion::Eth70 => {
                    let mut items = RlpHeader::decode_bytes(buf, true)?;
                    let request_id = u64::decode(&mut items)?;
                    let incomplete = bool::decode(&mut items)?;
                    let receipts = Vec::decode(&mut items)?;
                    if !items.is_empty() {
                        return Err(alloy_rlp::Error::ListLengthMismatch { expected: 3, got: 4 });
                    }
                    Self::Receipts { request_id, last_block_incomplete: Some(incomplete), receipts }
                }
                EthMessageId::Receipts => {
                    let pair: RequestPair<Vec<Vec<Receipt69>>> = Decodable::decode(buf)?;
                    Self::Receipts {
                        request_id: pair.request_id,
                        last_block_incomplete: None,
                        receipts: pair.message,
                    }
                }
                EthMessageId::BlockRangeUpdate => Self::BlockRangeUpdate(Decodable::decode(buf)?),
                EthMessageId::GetBlockAccessLists => {
                    Self::GetBlockAccessLists(Decodable::decode(buf)?)
                }
                EthMessageId::BlockAccessLists => Self::BlockAccessLists(Decodable::decode(buf)?),
                EthMessageId::GetCells => Self::GetCells(Decodable::decode(buf)?),
                EthMessageId::Cells => Self::Cells(Decodable::decode(buf)?),
            })
        })()
        .map_err(malformed)?;
        if !buf.is_empty() {
            return Err(malformed(alloy_rlp::Error::UnexpectedLength));
        }
        Ok(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip2124::{ForkHash, ForkId};

    fn round_trip(message: EthMessage, version: EthVersion) {
        let payload = message.encode_payload(version).unwrap();
        let back = EthMessage::decode(message.id() as u8, version, &payload).unwrap();
        assert_eq!(back, message);
    }

    #[test]
    fn messages_round_trip_in_their_versions() {
        let status = StatusMessage {
            version: 71,
            network_id: 1,
            genesis: B256::repeat_byte(1),
            fork_id: ForkId { hash: ForkHash([0x07, 0xc9, 0x46, 0x2e]), next: 0 },
            earliest: 0,
            latest: 100,
            latest_hash: B256::repeat_byte(2),
        };
        let all = [
            EthMessage::Status(status),
            EthMessage::GetBlockHeaders(RequestPair {
                request_id: 7,
                message: HeadersRequest {
                    origin: HashOrNumber::Number(5),
                    amount: 512,
                    skip: 0,
                    reverse: true,
                },
            }),
            EthMessage::BlockHeaders(RequestPair {
                request_id: 7,
                message: vec![Header::default()],
            }),
            EthMessage::GetBlockBodies(RequestPair { request_id: 1, message: vec![B256::ZERO] }),
            EthMessage::BlockBodies(RequestPair {
                request_id: 1,
                message: vec![BlockBody::default()],
            }),
            EthMessage::Transactions(NetworkTransactions(vec![
                Bytes::from(vec![0xc1, 0x80]),
                Bytes::from(vec![0x02, 0xc0]),
            ])),
            EthMessage::BlockRangeUpdate(BlockRangeUpdate {
                earliest: 0,
                latest: 9,
                latest_hash: B256::repeat_byte(4),
            }),
        ];
        for version in EthVersion::ALL {
            for m in &all {
                round_trip(m.clone(), version);
            }
            let eth72 = version >= EthVersion::Eth72;
            round_trip(
                EthMessage::NewPooledTransactionHashes(NewPooledTransactionHashes {
                    types: Bytes::from(vec![2u8]),
                    sizes: vec![120],
                    hashes: vec![B256::repeat_byte(3)],
                    mask: eth72.then_some(CustodyBitmap::ALL),
                }),
                version,
            );
        }
        round_trip(
            EthMessage::GetCells(GetCells {
                request_id: 4,
                hashes: vec![B256::repeat_byte(5)],
                mask: CustodyBitmap::from_columns([0, 9, 127]),
            }),
            EthVersion::Eth72,
        );
        round_trip(
            EthMessage::Cells(Cells {
                request_id: 4,
                hashes: vec![B256::repeat_byte(5)],
                cells: vec![vec![Bytes::from(vec![1u8; 2048])]],
                mask: CustodyBitmap::from_columns([9]),
            }),
            EthVersion::Eth72,
        );
        let receipt = Receipt69 {
            tx_type: 2,
            status: true.into(),
            cumulative_gas_used: 21_000,
            logs: vec![],
        };
        round_trip(
            EthMessage::GetReceipts {
                request_id: 3,
                first_block_receipt_index: None,
                hashes: vec![B256::ZERO],
            },
            EthVersion::Eth69,
        );
        round_trip(
            EthMessage::Receipts {
                request_id: 3,
                last_block_incomplete: None,
                receipts: vec![vec![receipt.clone()]],
            },
            EthVersion::Eth69,
        );
        round_trip(
            EthMessage::Receipts {
                request_id: 3,
                last_block_incomplete: Some(true),
                receipts: vec![vec![receipt]],
            },
            EthVersion::Eth70,
        );
        round_trip(
            EthMessage::BlockAccessLists(RequestPair {
                request_id: 9,
                message: BlockAccessLists(vec![None, Some(BlockAccessList::new())]),
            }),
            EthVersion::Eth71,
        );
    }

    /// geth's fork-id encodings (`core/forkid/forkid_test.go`) inside a `Status`, and geth's
    /// typed-receipt shape (type first, status `0x01`, no bloom).
    #[test]
    fn wire_shapes_match_geth() {
        let mut out = Vec::new();
        ForkId { hash: ForkHash([0xde, 0xad, 0xbe, 0xef]), next: 0xbaddcafe }.encode(&mut out);
        assert_eq!(alloy_primitives::hex::encode(&out), "ca84deadbeef84baddcafe");
        let receipt = Receipt69 {
            tx_type: 0,
            status: true.into(),
            cumulative_gas_used: 0x5208,
            logs: vec![],
        };
        let mut out = Vec::new();
        receipt.encode(&mut out);
        assert_eq!(alloy_primitives::hex::encode(&out), "c6800182520 8c0".replace(' ', ""));
    }

    #[test]
    fn ids_outside_the_version_and_garbage_are_errors() {
        assert!(matches!(
            EthMessage::decode(0x12, EthVersion::Eth69, &[0xc0]),
            Err(EthMessageError::UnknownId { id: 0x12, version: 69 })
        ));
        assert!(EthMessage::decode(0x07, EthVersion::Eth71, &[0xc0]).is_err());
        assert!(EthMessage::decode(0x01, EthVersion::Eth71, &[0xc0]).is_err());
        assert!(EthMessage::decode(0x03, EthVersion::Eth71, &[0xc2, 0x01]).is_err());
        assert!(EthMessage::decode(0x00, EthVersion::Eth71, &[0xc0, 0x00]).is_err());
        let bal_request =
            EthMessage::GetBlockAccessLists(RequestPair { request_id: 1, message: vec![] });
        assert!(matches!(
            bal_request.encode_payload(EthVersion::Eth70),
            Err(EthMessageError::WrongVersion(EthMessageId::GetBlockAccessLists, 70))
        ));
        // Extra fields in Status are refused (geth's struct decoding has no tail).
        let status = StatusMessage {
            version: 69,
            network_id: 1,
            genesis: B256::ZERO,
            fork_id: ForkId { hash: ForkHash([0; 4]), next: 0 },
            earliest: 0,
            latest: 0,
            latest_hash: B256::ZERO,
        };
        let mut payload = Vec::new();
        let fields = alloy_rlp::encode(status);
        let inner = &fields[1..];
        RlpHeader { list: true, payload_length: inner.len() + 1 }.encode(&mut payload);
        payload.extend_from_slice(inner);
        payload.push(0x01);
        assert!(EthMessage::decode(0x00, EthVersion::Eth69, &payload).is_err());
    }
}
