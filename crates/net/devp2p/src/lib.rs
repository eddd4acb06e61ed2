//! gigagas's devp2p transport (reth's `crates/net/network`, in its first shape): RLPx
//! sessions carrying eth/69–72 and serving snap/1–2, the wire geth and every other execution
//! client speaks.
//!
//! Flow: [`Devp2pNetwork::dial`] connects to an enode (or [`Devp2pNetwork::listen`] accepts
//! one), runs the RLPx (`gigagas-net-ecies`), `Hello` and `Status` handshakes
//! (`gigagas-eth-wire`) and hands the session to a task of its own (`session.rs`), which alone
//! reads and writes it and answers the peer's eth and snap requests from the store
//! (`serve.rs`). The network then implements the p2p client traits (`gigagas-net-p2p`'s
//! [`gigagas_net_p2p::BlockClient`]: headers, bodies, BALs over eth/71), so the block
//! downloader syncs from geth as from any other transport; transactions are gossiped with the
//! node's pool (`transactions.rs`) as geth's fetcher takes them (`fetcher.rs`), eth/72's blobs
//! as cells.

mod config;
mod error;
pub mod fetcher;
mod handshake;
mod manager;
mod network;
pub mod peers;
mod serve;
mod session;
pub mod transactions;

pub use config::{
    LocalNode, NetworkConfig, BLOCK_RANGE_UPDATE_INTERVAL, DEFAULT_MAX_PEERS, DIAL_TIMEOUT,
    HANDSHAKE_TIMEOUT,
};
pub use error::SessionError;
pub use network::{Devp2pNetwork, SessionInfo};
pub use session::{SessionEnd, SessionRequestError, PING_INTERVAL, REQUEST_TIMEOUT};
pub use transactions::{NetworkPool, PoolImportError, TransactionAnnouncement};
