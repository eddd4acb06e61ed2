//! What sync asks of a network, whatever the transport (reth's `net/p2p` and
//! `net/downloaders`, reduced to what gigagas syncs):
//!
//! - [`BlockClient`]: headers, bodies and BALs from a given peer, the connected peers, and the
//!   report of a peer that answered wrongly — implemented by each transport (today the libp2p
//!   network, `gigagas-net`);
//! - [`BlockDownloader`]: a range of blocks fetched over any [`BlockClient`] — headers first,
//!   then bodies and BALs by hash, each checked against its header — from the best-scored
//!   peer, retried on the next one when a peer fails or answers wrongly; peers scored by what
//!   they did ([`PeerScores`]);
//! - [`ChainServer`]: the other side — headers, bodies, receipts and BALs answered from any
//!   store of the storage API within the protocol's limits, for every transport;
//! - [`SnapServer`]: snap/1 and snap/2's answers — account and storage ranges with their
//!   proofs, codes, trie nodes and BALs of the recent state roots;
//! - [`SnapClient`] and [`snap_sync`]: the other side — a pivot block's state downloaded from
//!   peers range by range, each range proven, the tries built and the root checked.

mod client;
mod downloader;
mod scores;
mod serve;
pub mod snap;
mod snap_account;
mod snap_error;
mod snap_flat;
pub mod snap_sync;

pub use client::{BlockClient, RequestError, SnapClient};
pub use downloader::{
    BlockDownloader, DownloadError, DownloadRequest, DownloadedBlock, DownloaderConfig, PeerFault,
    HEADERS_BACK_PER_REQUEST,
};
pub use scores::{PeerScores, BAD_ANSWER_PENALTY, FAILED_REQUEST_PENALTY, SUCCESS_REWARD};
pub use serve::ChainServer;
pub use snap::{SnapServeError, SnapServer};
pub use snap_flat::FlatStateReader;
