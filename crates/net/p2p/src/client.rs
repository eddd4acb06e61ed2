//! The client side of block sync that a transport implements.

use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use gigagas_bal::BlockAccessList;
use gigagas_eth_wire_types::Receipt69;
use std::{fmt, future::Future, hash::Hash};

/// A request to a peer that brought no answer: the transport failed (no connection, a timeout,
/// a stream reset), the peer answered with another message, or the network stopped.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The transport failed.
    #[error("request failed: {0}")]
    Transport(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The peer answered with a message of another kind.
    #[error("the peer answered with another message than {expected}")]
    UnexpectedResponse {
        /// The message expected.
        expected: &'static str,
    },
}

/// Headers, bodies, receipts and BALs from peers (eth/69 `GetBlockHeaders` / `GetBlockBodies` /
/// `GetReceipts`, eth/71's EIP-8159 `GetBlockAccessLists`). An answer may be shorter than asked (the peer stops at what
/// it has or at the protocol's limits); checking it is the caller's business.
pub trait BlockClient: Send + Sync + 'static {
    /// How the transport names a peer.
    type Peer: Copy + Eq + Ord + Hash + fmt::Debug + fmt::Display + Send + Sync + 'static;

    /// The connected peers.
    fn peers(&self) -> Vec<Self::Peer>;

    /// Up to `limit` consecutive canonical headers from `start`: ascending, or towards genesis
    /// with `reverse` (eth's `GetBlockHeaders` with skip 0).
    fn get_headers(
        &self,
        peer: Self::Peer,
        start: HashOrNumber,
        limit: u64,
        reverse: bool,
    ) -> impl Future<Output = Result<Vec<Header>, RequestError>> + Send;

    /// The bodies of the blocks with these hashes, in order, stopping at the first the peer
    /// lacks.
    fn get_block_bodies(
        &self,
        peer: Self::Peer,
        hashes: Vec<B256>,
    ) -> impl Future<Output = Result<Vec<BlockBody<TxEnvelope>>, RequestError>> + Send;

    /// The BALs of the blocks with these hashes, in order (`None` where the peer has none).
    fn get_block_access_lists(
        &self,
        peer: Self::Peer,
        hashes: Vec<B256>,
    ) -> impl Future<Output = Result<Vec<Option<BlockAccessList>>, RequestError>> + Send;

    /// The receipts of the blocks with these hashes, in order, in eth/69's form (no bloom),
    /// stopping at the first block the peer lacks; each block's list whole (the transport
    /// continues a list an eth/70 peer cut). A transport without receipts answers none.
    fn get_receipts(
        &self,
        peer: Self::Peer,
        hashes: Vec<B256>,
    ) -> impl Future<Output = Result<Vec<Vec<Receipt69>>, RequestError>> + Send;

    /// `peer` answered with something that cannot be right (a header not extending the chain,
    /// a body or BAL not matching its header): the transport disconnects it and keeps it out.
    fn report_bad_message(&self, peer: Self::Peer);
}

/// snap/1's state requests to peers (`GetAccountRange`, `GetStorageRanges`, `GetByteCodes`),
/// what snap sync asks of a transport (reth's `SnapClient`). The answer is the peer's, as it
/// came: checking it against the state root is the caller's business.
pub trait SnapClient: Send + Sync + 'static {
    /// How the transport names a peer.
    type Peer: Copy + Eq + Ord + Hash + fmt::Debug + fmt::Display + Send + Sync + 'static;

    /// The connected peers that speak snap.
    fn snap_peers(&self) -> Vec<Self::Peer>;

    /// Asks `peer` for a range of accounts.
    fn get_account_range(
        &self,
        peer: Self::Peer,
        request: gigagas_eth_wire_types::snap::GetAccountRange,
    ) -> impl Future<Output = Result<gigagas_eth_wire_types::snap::AccountRange, RequestError>> + Send;

    /// Asks `peer` for the storage of some accounts.
    fn get_storage_ranges(
        &self,
        peer: Self::Peer,
        request: gigagas_eth_wire_types::snap::GetStorageRanges,
    ) -> impl Future<Output = Result<gigagas_eth_wire_types::snap::StorageRanges, RequestError>> + Send;

    /// Asks `peer` for contract codes by hash.
    fn get_byte_codes(
        &self,
        peer: Self::Peer,
        request: gigagas_eth_wire_types::snap::GetByteCodes,
    ) -> impl Future<Output = Result<gigagas_eth_wire_types::snap::ByteCodes, RequestError>> + Send;

    /// `peer` answered with something that cannot be right (a range its proof does not prove,
    /// a code nobody asked for): the transport disconnects it and keeps it out.
    fn report_bad_snap_message(&self, peer: Self::Peer);
}
