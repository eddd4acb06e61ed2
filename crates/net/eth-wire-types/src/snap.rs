//! devp2p's `snap` protocol, snap/1 and snap/2 (EIP-8189), as geth 1.17.10 encodes it
//! (`eth/protocols/snap/protocol.go`): each message is `message id ‖ RLP`, the id relative to
//! the capability's offset, every request and answer `[request-id, …]`.
//!
//! - snap/1 (8 ids): account ranges, storage ranges and bytecodes of a state root, trie nodes
//!   by path.
//! - snap/2 (10 ids): the same without `GetTrieNodes` / `TrieNodes` (the state catches up by
//!   the blocks' BALs instead of healing), plus `GetBlockAccessLists` / `BlockAccessLists`.
//!
//! Accounts travel in geth's "slim" form (`[nonce, balance, storage-root, code-hash]` with an
//! empty string for the empty root and the empty code hash), inlined as a list; storage slots
//! as a string holding the RLP of the trimmed value; proof nodes, trie nodes and codes as
//! strings; a BAL inlined as its RLP, `0x80` for one not held.

use alloy_primitives::{Bytes, B256};
use alloy_rlp::{Decodable, Encodable, Header as RlpHeader, RlpDecodable, RlpEncodable};

/// The snap versions this implementation speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SnapVersion {
    /// snap/1.
    Snap1 = 1,
    /// snap/2 (EIP-8189).
    Snap2 = 2,
}

impl SnapVersion {
    /// Every version, highest first.
    pub const ALL: [SnapVersion; 2] = [SnapVersion::Snap2, SnapVersion::Snap1];

    /// The version numbered `version`, if spoken here.
    pub fn from_number(version: u64) -> Option<Self> {
        match version {
            1 => Some(Self::Snap1),
            2 => Some(Self::Snap2),
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
            Self::Snap1 => 8,
            Self::Snap2 => 10,
        }
    }
}

/// `GetAccountRange`: the accounts of state `root` from hash `origin` to `limit`, answered
/// within `bytes`.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct GetAccountRange {
    /// The request id.
    pub request_id: u64,
    /// The state root.
    pub root: B256,
    /// The first account hash wanted.
    pub origin: B256,
    /// The last account hash wanted (the first one at or past it ends the answer).
    pub limit: B256,
    /// The answer's soft size (bytes).
    pub bytes: u64,
}

/// One account of an `AccountRange`: its hash and slim RLP (inlined as a list on the wire).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountData {
    /// keccak256 of the address.
    pub hash: B256,
    /// The slim account RLP.
    pub body: Bytes,
}

impl Encodable for AccountData {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        RlpHeader { list: true, payload_length: self.hash.length() + self.body.len() }.encode(out);
        self.hash.encode(out);
        out.put_slice(&self.body);
    }
    fn length(&self) -> usize {
        let payload = self.hash.length() + self.body.len();
        payload + alloy_rlp::length_of_length(payload)
    }
}

impl Decodable for AccountData {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let mut items = RlpHeader::decode_bytes(buf, true)?;
        let hash = B256::decode(&mut items)?;
        let start = items;
        let header = RlpHeader::decode(&mut items)?;
        if !header.list || items.len() != header.payload_length {
            return Err(alloy_rlp::Error::Custom("a slim account is one list"));
        }
        Ok(Self { hash, body: Bytes::copy_from_slice(start) })
    }
}

/// `AccountRange`: the accounts in hash order and the boundary proof nodes.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct AccountRange {
    /// The request id.
    pub request_id: u64,
    /// The accounts.
    pub accounts: Vec<AccountData>,
    /// Proof nodes of the origin and of the last account.
    pub proof: Vec<Bytes>,
}

/// `GetStorageRanges`: the slots of `accounts`' storage at state `root`; `origin` and `limit`
/// (up to 32 bytes each, empty for the whole range) bound the first account's only.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct GetStorageRanges {
    /// The request id.
    pub request_id: u64,
    /// The state root.
    pub root: B256,
    /// The accounts' hashes.
    pub accounts: Vec<B256>,
    /// The first slot hash wanted of the first account.
    pub origin: Bytes,
    /// The last slot hash wanted of the first account.
    pub limit: Bytes,
    /// The answer's soft size (bytes).
    pub bytes: u64,
}

/// One slot of a `StorageRanges`: its hash and the RLP of its value (a string on the wire).
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct StorageData {
    /// keccak256 of the slot key.
    pub hash: B256,
    /// The RLP of the trimmed value.
    pub body: Bytes,
}

/// `StorageRanges`: per account answered, its slots in hash order; the proof of the last
/// range when it was cut or started past zero.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct StorageRanges {
    /// The request id.
    pub request_id: u64,
    /// Each account's slots.
    pub slots: Vec<Vec<StorageData>>,
    /// Proof nodes.
    pub proof: Vec<Bytes>,
}

/// `GetByteCodes`: codes by hash.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct GetByteCodes {
    /// The request id.
    pub request_id: u64,
    /// The code hashes.
    pub hashes: Vec<B256>,
    /// The answer's soft size (bytes).
    pub bytes: u64,
}

/// `ByteCodes`: the codes held, in the request's order (those not held left out).
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct ByteCodes {
    /// The request id.
    pub request_id: u64,
    /// The codes.
    pub codes: Vec<Bytes>,
}

/// `GetTrieNodes` (snap/1): trie nodes of state `root` by path. Each path set is an account
/// trie path (hex-prefix encoded) alone, or an account hash followed by paths in its storage
/// trie.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct GetTrieNodes {
    /// The request id.
    pub request_id: u64,
    /// The state root.
    pub root: B256,
    /// The path sets.
    pub paths: Vec<Vec<Bytes>>,
    /// The answer's soft size (bytes).
    pub bytes: u64,
}

/// `TrieNodes` (snap/1): the nodes found, in the request's order.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct TrieNodes {
    /// The request id.
    pub request_id: u64,
    /// The nodes (an empty string for a path that leads nowhere).
    pub nodes: Vec<Bytes>,
}

/// `GetBlockAccessLists` (snap/2): BALs by block hash.
#[derive(Debug, Clone, PartialEq, Eq, RlpEncodable, RlpDecodable)]
pub struct GetBlockAccessLists {
    /// The request id.
    pub request_id: u64,
    /// The blocks.
    pub hashes: Vec<B256>,
    /// The answer's soft size (bytes).
    pub bytes: u64,
}

/// `BlockAccessLists` (snap/2): one entry per block answered, in order: the BAL's RLP as
/// stored (its keccak256 is the header's hash), or `None` (`0x80`) for one not held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapBlockAccessLists {
    /// The request id.
    pub request_id: u64,
    /// The BALs' RLP.
    pub lists: Vec<Option<Bytes>>,
}

impl SnapBlockAccessLists {
    fn lists_length(&self) -> usize {
        self.lists.iter().map(|l| l.as_ref().map_or(1, |b| b.len())).sum()
    }
}

impl Encodable for SnapBlockAccessLists {
    fn encode(&self, out: &mut dyn alloy_rlp::BufMut) {
        let lists = self.lists_length();
        let lists_header = alloy_rlp::length_of_length(lists);
        RlpHeader { list: true, payload_length: self.request_id.length() + lists_header + lists }
            .encode(out);
        self.request_id.encode(out);
        RlpHeader { list: true, payload_length: lists }.encode(out);
        for list in &self.lists {
            match list {
                Some(rlp) => out.put_slice(rlp),
                None => out.put_u8(alloy_rlp::EMPTY_STRING_CODE),
            }
        }
    }
    fn length(&self) -> usize {
        let lists = self.lists_length();
        let payload = self.request_id.length() + alloy_rlp::length_of_length(lists) + lists;
        payload + alloy_rlp::length_of_length(payload)
    }
}

impl Decodable for SnapBlockAccessLists {
    fn decode(buf: &mut &[u8]) -> alloy_rlp::Result<Self> {
        let mut items = RlpHeader::decode_bytes(buf, true)?;
        let request_id = u64::decode(&mut items)?;
        let mut entries = RlpHeader::decode_bytes(&mut items, true)?;
        if !items.is_empty() {
            return Err(alloy_rlp::Error::UnexpectedLength);
        }
        let mut lists = Vec::new();
        while !entries.is_empty() {
            if entries[0] == alloy_rlp::EMPTY_STRING_CODE {
                entries = &entries[1..];
                lists.push(None);
                continue;
            }
            let start = entries;
            let header = RlpHeader::decode(&mut entries)?;
            if !header.list || entries.len() < header.payload_length {
                return Err(alloy_rlp::Error::Custom("a BAL is a list"));
            }
            entries = &entries[header.payload_length..];
            lists.push(Some(Bytes::copy_from_slice(&start[..start.len() - entries.len()])));
        }
        Ok(Self { request_id, lists })
    }
}

/// The snap message ids (relative to the capability's offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SnapMessageId {
    /// `GetAccountRange`.
    GetAccountRange = 0x00,
    /// `AccountRange`.
    AccountRange = 0x01,
    /// `GetStorageRanges`.
    GetStorageRanges = 0x02,
    /// `StorageRanges`.
    StorageRanges = 0x03,
    /// `GetByteCodes`.
    GetByteCodes = 0x04,
    /// `ByteCodes`.
    ByteCodes = 0x05,
    /// `GetTrieNodes` (snap/1).
    GetTrieNodes = 0x06,
    /// `TrieNodes` (snap/1).
    TrieNodes = 0x07,
    /// `GetBlockAccessLists` (snap/2).
    GetBlockAccessLists = 0x08,
    /// `BlockAccessLists` (snap/2).
    BlockAccessLists = 0x09,
}

/// A snap message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapMessage {
    /// `GetAccountRange`.
    GetAccountRange(GetAccountRange),
    /// `AccountRange`.
    AccountRange(AccountRange),
    /// `GetStorageRanges`.
    GetStorageRanges(GetStorageRanges),
    /// `StorageRanges`.
    StorageRanges(StorageRanges),
    /// `GetByteCodes`.
    GetByteCodes(GetByteCodes),
    /// `ByteCodes`.
    ByteCodes(ByteCodes),
    /// `GetTrieNodes`.
    GetTrieNodes(GetTrieNodes),
    /// `TrieNodes`.
    TrieNodes(TrieNodes),
    /// `GetBlockAccessLists`.
    GetBlockAccessLists(GetBlockAccessLists),
    /// `BlockAccessLists`.
    BlockAccessLists(SnapBlockAccessLists),
}

/// Why a snap message could not be decoded, or does not exist in the session's version.
#[derive(Debug, thiserror::Error)]
pub enum SnapMessageError {
    /// The id is not a message of the version (`GetTrieNodes` on snap/2: geth disconnects).
    #[error("message id {id:#04x} is not defined in snap/{version}")]
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
        message: SnapMessageId,
        /// The decoding error.
        source: alloy_rlp::Error,
    },
}

impl SnapMessage {
    /// The message's id.
    pub fn id(&self) -> SnapMessageId {
        match self {
            Self::GetAccountRange(_) => SnapMessageId::GetAccountRange,
            Self::AccountRange(_) => SnapMessageId::AccountRange,
            Self::GetStorageRanges(_) => SnapMessageId::GetStorageRanges,
            Self::StorageRanges(_) => SnapMessageId::StorageRanges,
            Self::GetByteCodes(_) => SnapMessageId::GetByteCodes,
            Self::ByteCodes(_) => SnapMessageId::ByteCodes,
            Self::GetTrieNodes(_) => SnapMessageId::GetTrieNodes,
            Self::TrieNodes(_) => SnapMessageId::TrieNodes,
            Self::GetBlockAccessLists(_) => SnapMessageId::GetBlockAccessLists,
            Self::BlockAccessLists(_) => SnapMessageId::BlockAccessLists,
        }
    }

    /// The request id.
    pub fn request_id(&self) -> u64 {
        match self {
            Self::GetAccountRange(m) => m.request_id,
            Self::AccountRange(m) => m.request_id,
            Self::GetStorageRanges(m) => m.request_id,
            Self::StorageRanges(m) => m.request_id,
            Self::GetByteCodes(m) => m.request_id,
            Self::ByteCodes(m) => m.request_id,
            Self::GetTrieNodes(m) => m.request_id,
            Self::TrieNodes(m) => m.request_id,
            Self::GetBlockAccessLists(m) => m.request_id,
            Self::BlockAccessLists(m) => m.request_id,
        }
    }

    /// The same message with request id `id`.
    pub fn with_request_id(mut self, id: u64) -> Self {
        match &mut self {
            Self::GetAccountRange(m) => m.request_id = id,
            Self::AccountRange(m) => m.request_id = id,
            Self::GetStorageRanges(m) => m.request_id = id,
            Self::StorageRanges(m) => m.request_id = id,
            Self::GetByteCodes(m) => m.request_id = id,
            Self::ByteCodes(m) => m.request_id = id,
            Self::GetTrieNodes(m) => m.request_id = id,
            Self::TrieNodes(m) => m.request_id = id,
            Self::GetBlockAccessLists(m) => m.request_id = id,
            Self::BlockAccessLists(m) => m.request_id = id,
        }
        self
    }

    /// Whether the message is a request.
    pub fn is_request(&self) -> bool {
        (self.id() as u8).is_multiple_of(2)
    }

    /// Whether `id` is a message of `version`.
    pub fn defined(id: u8, version: SnapVersion) -> bool {
        match version {
            SnapVersion::Snap1 => id <= 0x07,
            SnapVersion::Snap2 => id <= 0x05 || id == 0x08 || id == 0x09,
        }
    }

    /// The message's RLP payload (without the id).
    pub fn encode_payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Self::GetAccountRange(m) => m.encode(&mut out),
            Self::AccountRange(m) => m.encode(&mut out),
            Self::GetStorageRanges(m) => m.encode(&mut out),
            Self::StorageRanges(m) => m.encode(&mut out),
            Self::GetByteCodes(m) => m.encode(&mut out),
            Self::ByteCodes(m) => m.encode(&mut out),
            Self::GetTrieNodes(m) => m.encode(&mut out),
            Self::TrieNodes(m) => m.encode(&mut out),
            Self::GetBlockAccessLists(m) => m.encode(&mut out),
            Self::BlockAccessLists(m) => m.encode(&mut out),
        }
        out
    }

    /// Decodes message `id` (relative) of `version` from its RLP `payload`, exactly one
    /// message.
    ///
    /// # Errors
    /// [`SnapMessageError::UnknownId`] for an id `version` does not define,
    /// [`SnapMessageError::Malformed`]; never panics.
    pub fn decode(id: u8, version: SnapVersion, payload: &[u8]) -> Result<Self, SnapMessageError> {
        let unknown = SnapMessageError::UnknownId { id, version: version.number() };
        if !Self::defined(id, version) {
            return Err(unknown);
        }
        let message = match id {
            0x00 => SnapMessageId::GetAccountRange,
            0x01 => SnapMessageId::AccountRange,
            0x02 => SnapMessageId::GetStorageRanges,
            0x03 => SnapMessageId::StorageRanges,
            0x04 => SnapMessageId::GetByteCodes,
            0x05 => SnapMessageId::ByteCodes,
            0x06 => SnapMessageId::GetTrieNodes,
            0x07 => SnapMessageId::TrieNodes,
            0x08 => SnapMessageId::GetBlockAccessLists,
            0x09 => SnapMessageId::BlockAccessLists,
            _ => return Err(unknown),
        };
        let mut buf = payload;
        let decoded = (|| -> alloy_rlp::Result<Self> {
            let buf = &mut buf;
            Ok(match message {
                SnapMessageId::GetAccountRange => Self::GetAccountRange(Decodable::decode(buf)?),
                SnapMessageId::AccountRange => Self::AccountRange(Decodable::decode(buf)?),
                SnapMessageId::GetStorageRanges => Self::GetStorageRanges(Decodable::decode(buf)?),
                SnapMessageId::StorageRanges => Self::StorageRanges(Decodable::decode(buf)?),
                SnapMessageId::GetByteCodes => Self::GetByteCodes(Decodable::decode(buf)?),
                SnapMessageId::ByteCodes => Self::ByteCodes(Decodable::decode(buf)?),
                SnapMessageId::GetTrieNodes => Self::GetTrieNodes(Decodable::decode(buf)?),
                SnapMessageId::TrieNodes => Self::TrieNodes(Decodable::decode(buf)?),
                SnapMessageId::GetBlockAccessLists => {
                    Self::GetBlockAccessLists(Decodable::decode(buf)?)
                }
                SnapMessageId::BlockAccessLists => Self::BlockAccessLists(Decodable::decode(buf)?),
            })
        })()
        .map_err(|source| SnapMessageError::Malformed { message, source })?;
        if !buf.is_empty() {
            return Err(SnapMessageError::Malformed {
                message,
                source: alloy_rlp::Error::UnexpectedLength,
            });
        }
        Ok(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_versions_hold_their_ids() {
        let slim = Bytes::from(vec![0xc4, 0x01, 0x02, 0x80, 0x80]);
        let all = [
            SnapMessage::GetAccountRange(GetAccountRange {
                request_id: 1,
                root: B256::repeat_byte(1),
                origin: B256::ZERO,
                limit: B256::repeat_byte(0xff),
                bytes: 4000,
            }),
            SnapMessage::AccountRange(AccountRange {
                request_id: 1,
                accounts: vec![AccountData { hash: B256::repeat_byte(2), body: slim }],
                proof: vec![Bytes::from(vec![0xc0])],
            }),
            SnapMessage::GetStorageRanges(GetStorageRanges {
                request_id: 2,
                root: B256::repeat_byte(1),
                accounts: vec![B256::repeat_byte(3)],
                origin: Bytes::new(),
                limit: Bytes::from(vec![0xff; 32]),
                bytes: 500,
            }),
            SnapMessage::StorageRanges(StorageRanges {
                request_id: 2,
                slots: vec![vec![StorageData { hash: B256::repeat_byte(4), body: vec![2].into() }]],
                proof: vec![],
            }),
            SnapMessage::GetByteCodes(GetByteCodes { request_id: 3, hashes: vec![], bytes: 1 }),
            SnapMessage::ByteCodes(ByteCodes { request_id: 3, codes: vec![Bytes::new()] }),
            SnapMessage::GetTrieNodes(GetTrieNodes {
                request_id: 4,
                root: B256::ZERO,
                paths: vec![vec![Bytes::from(vec![0x00])]],
                bytes: 5000,
            }),
            SnapMessage::TrieNodes(TrieNodes { request_id: 4, nodes: vec![Bytes::new()] }),
            SnapMessage::GetBlockAccessLists(GetBlockAccessLists {
                request_id: 5,
                hashes: vec![B256::ZERO],
                bytes: 0,
            }),
            SnapMessage::BlockAccessLists(SnapBlockAccessLists {
                request_id: 5,
                lists: vec![None, Some(Bytes::from(vec![0xc0]))],
            }),
        ];
        for version in SnapVersion::ALL {
            for m in &all {
                let id = m.id() as u8;
                let decoded = SnapMessage::decode(id, version, &m.encode_payload());
                if SnapMessage::defined(id, version) {
                    assert_eq!(&decoded.unwrap(), m);
                } else {
                    assert!(matches!(decoded, Err(SnapMessageError::UnknownId { .. })));
                }
            }
        }
        assert!(!SnapMessage::defined(0x06, SnapVersion::Snap2), "no GetTrieNodes on snap/2");
        assert!(!SnapMessage::defined(0x08, SnapVersion::Snap1));
        assert!(SnapMessage::decode(0x00, SnapVersion::Snap1, &[0xc0]).is_err());
    }
}
