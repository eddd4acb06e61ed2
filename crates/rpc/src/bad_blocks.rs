//! The payloads the Engine API found INVALID, for geth's `debug_getBadBlocks`: the last
//! [`MAX_BAD_BLOCKS`] (geth's limit), newest first, each with the reason, kept in memory (geth
//! keeps them in its database).
//!
//! Flow: `engine_newPayload` keeps a copy of the payload it was sent (its transactions are
//! shared byte buffers: the copy costs a vector of handles) → the engine's verdict is INVALID
//! (or the payload's blob hashes do not match its transactions) → the block made from the copy
//! is recorded here → `debug_getBadBlocks` answers each as geth does: hash, the block with its
//! transactions, its RLP.

use crate::{convert::StoredBlock, RpcError};
use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{Bytes, B256};
use serde::{Deserialize, Serialize};
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

/// Bad blocks kept (geth's `badBlockLimit`).
pub const MAX_BAD_BLOCKS: usize = 10;

/// A block found invalid.
#[derive(Debug)]
pub struct BadBlock {
    /// Its hash.
    pub hash: B256,
    /// The block.
    pub block: Block<TxEnvelope>,
    /// Why it is invalid.
    pub reason: String,
}

/// The last bad blocks, newest first.
#[derive(Debug, Default)]
pub struct BadBlocks {
    blocks: Mutex<VecDeque<Arc<BadBlock>>>,
}

impl BadBlocks {
    /// Records `block` (hash `hash`) as invalid for `reason`; the oldest forgotten past
    /// [`MAX_BAD_BLOCKS`]; a block already recorded is not recorded twice.
    pub fn record(&self, hash: B256, block: Block<TxEnvelope>, reason: String) {
        let mut blocks = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        if blocks.iter().any(|b| b.hash == hash) {
            return;
        }
        blocks.push_front(Arc::new(BadBlock { hash, block, reason }));
        blocks.truncate(MAX_BAD_BLOCKS);
    }

    /// The bad blocks, newest first.
    pub fn list(&self) -> Vec<Arc<BadBlock>> {
        self.blocks.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect()
    }
}

/// One entry of `debug_getBadBlocks` (geth's `BadBlockArgs`, with the reason beside).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BadBlockAnswer {
    /// The block's hash.
    pub hash: B256,
    /// The block, its transactions whole (only their hashes when a sender does not recover).
    pub block: alloy_rpc_types_eth::Block,
    /// Its RLP.
    pub rlp: Bytes,
    /// Why it is invalid.
    pub reason: String,
}

/// `debug_getBadBlocks`' answer.
pub(crate) fn answers(bad: &BadBlocks) -> Result<Vec<BadBlockAnswer>, RpcError> {
    bad.list()
        .iter()
        .map(|b| {
            let stored = StoredBlock {
                number: b.block.header.number,
                hash: b.hash,
                header: b.block.header.clone(),
                body: b.block.body.clone(),
                senders: None,
            };
            let block = match stored.rpc_block(true) {
                Ok(block) => block,
                Err(_) => stored.rpc_block(false)?,
            };
            Ok(BadBlockAnswer {
                hash: b.hash,
                block,
                rlp: Bytes::from(stored.rlp()),
                reason: b.reason.clone(),
            })
        })
        .collect()
}
