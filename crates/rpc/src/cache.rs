//! The RPC's cache of decoded blocks and receipts (reth's `EthStateCache`): a block read for one
//! request (its body's transactions decoded and hashed, its senders, its receipts with their
//! logs) is kept, keyed by its hash, for the next requests that name it — the head and the
//! blocks just below it, which most requests do. Keyed by hash, an entry never goes stale: a
//! reorg changes which hash a number names, not what a hash holds.
//!
//! Flow: [`crate::convert::StoredBlock::load`] resolves the number to its canonical hash, takes
//! the block from [`RpcCache::blocks`] or decodes it and puts it there; its receipts go the same
//! way through [`RpcCache::receipts`]. Bounded by entry count, least recently used evicted.

use crate::convert::StoredBlock;
use alloy_consensus::ReceiptEnvelope;
use alloy_primitives::B256;
use std::sync::Arc;

/// reth's `--rpc-cache.max-blocks` (reth's default is 5,000 mainnet blocks; blocks here carry up
/// to a thousand transactions, so fewer are kept).
pub const DEFAULT_MAX_BLOCKS: u64 = 256;
/// reth's `--rpc-cache.max-receipts`: blocks whose receipts are kept.
pub const DEFAULT_MAX_RECEIPTS: u64 = 256;

/// Decoded blocks and receipts by block hash.
#[derive(Clone)]
pub struct RpcCache {
    pub(crate) blocks: moka::sync::Cache<B256, Arc<StoredBlock>>,
    pub(crate) receipts: moka::sync::Cache<B256, Arc<Vec<ReceiptEnvelope>>>,
}

impl RpcCache {
    /// A cache of at most `max_blocks` blocks and the receipts of `max_receipts` blocks (0:
    /// none kept).
    pub fn new(max_blocks: u64, max_receipts: u64) -> Self {
        Self {
            blocks: moka::sync::Cache::new(max_blocks),
            receipts: moka::sync::Cache::new(max_receipts),
        }
    }
}

impl Default for RpcCache {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_BLOCKS, DEFAULT_MAX_RECEIPTS)
    }
}

impl std::fmt::Debug for RpcCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcCache")
            .field("blocks", &self.blocks.entry_count())
            .field("receipts", &self.receipts.entry_count())
            .finish()
    }
}
