//! The messages of Ethereum's `eth` wire protocol, shared by every transport:
//! - [`eth`]: devp2p's eth/69, eth/70, eth/71 (EIP-8159) and eth/72 (EIP-8070) as geth 1.17.10
//!   speaks them — the
//!   fork-id `Status`, `BlockRangeUpdate`, header, body, receipt and BAL requests with their
//!   request ids, and the transaction announcements — each encoded and decoded for the
//!   version a session negotiated ([`EthVersion`], [`EthMessage`]);
//! - [`snap`]: devp2p's snap/1 and snap/2 (EIP-8189): state ranges, codes, trie nodes and
//!   BALs of recent state roots, as geth 1.17.10 encodes them;
//! - [`sync`]: the block-sync subset the libp2p transport carries over its request-response
//!   protocol (no request ids, no fork id);
//! - the limits every answer keeps ([`MAX_HEADERS`], [`MAX_BODIES`], [`SOFT_RESPONSE_LIMIT`],
//!   [`MAX_MESSAGE_SIZE`]).

pub mod eth;
pub mod snap;
pub mod sync;

pub use eth::{
    BlockAccessLists, BlockRangeUpdate, Cells, CustodyBitmap, EthMessage, EthMessageError,
    EthMessageId, EthVersion, GetCells, HeadersRequest, NetworkTransactions,
    NewPooledTransactionHashes, Receipt69, RequestPair, StatusMessage,
};
pub use snap::{SnapMessage, SnapMessageError, SnapMessageId, SnapVersion};
pub use sync::{ChainStatus, SyncRequest, SyncResponse, ETH_VERSION};

/// Bytes after which an answer stops growing (the item that crosses it is the last one), as
/// devp2p eth's soft response limit (2 MiB).
pub const SOFT_RESPONSE_LIMIT: usize = 2 * 1024 * 1024;
/// Most headers one answer carries (geth's `maxHeadersServe`).
pub const MAX_HEADERS: u64 = 1024;
/// Most bodies (and BALs) one answer of the libp2p sync carries.
pub const MAX_BODIES: usize = 256;
/// Most items (bodies, receipts' blocks, BALs, hashes) a devp2p request may ask for
/// (geth's `maxBodiesServe`, `maxReceiptsServe`, EIP-8159's limit).
pub const MAX_REQUEST_ITEMS: usize = 1024;
/// Largest eth message (bytes, decompressed), as geth's `maxMessageSize`: 10 MiB.
pub const MAX_MESSAGE_SIZE: usize = 10 * 1024 * 1024;
