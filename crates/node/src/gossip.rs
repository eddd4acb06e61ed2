//! Blocks over the network, in the node: the proposer publishes every block it makes
//! canonical; every node validates what it receives exactly as an `engine_newPayload` and tells
//! the network its verdict, so that only valid blocks are re-gossiped.
//!
//! Flow:
//! - publisher (a node with `--gossip.signer-key`): on each new canonical head (the engine's
//!   forkchoice), reads the new blocks from the store and publishes each as a
//!   [`NetworkBlock`] — the block and the BAL the node built or validated, shipped also before
//!   Amsterdam so that receivers run the parallel executor;
//! - importer: decodes each gossiped block, sends it to the engine as a `newPayload` (the
//!   parallel executor runs when a BAL comes; a wrong BAL is INVALID, never accepted), reports
//!   the verdict; with `--dev.follow` a valid block becomes the head (a forkchoice update);
//!   a block whose parent is unknown waits (bounded) until the parent is imported.

use alloy_consensus::{Block, BlockBody, TxEnvelope};
use alloy_primitives::B256;
use alloy_rlp::{Decodable, Encodable};
use gigagas_bal::BlockAccessList;
use gigagas_engine::{
    message::{ForkchoiceState, NewPayload},
    EngineHandle, PayloadStatus,
};
use gigagas_net::{
    propagation::{BlockKey, GossipedBlock},
    NetworkHandle,
};
use gigagas_storage::Storage;
use std::{collections::HashMap, sync::Arc, time::Instant};

/// Blocks waiting for their parent, at most.
const MAX_ORPHANS: usize = 256;
/// Blocks behind the head the publisher still publishes after a jump.
const MAX_PUBLISH_BEHIND: u64 = 16;

/// Why a gossiped payload is not a block.
#[derive(Debug, thiserror::Error)]
pub enum NetworkBlockError {
    /// The RLP does not decode.
    #[error("network block does not decode: {0}")]
    Rlp(#[from] alloy_rlp::Error),
    /// Bytes after the block and its BAL.
    #[error("{0} trailing bytes after the network block")]
    Trailing(usize),
}

/// A block as the network carries it: `RLP([block, bal])`, the BAL an empty list when there is
/// none (a block cannot have an empty BAL: its coinbase and system contracts are in it).
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkBlock {
    /// The block.
    pub block: Block<TxEnvelope>,
    /// Its EIP-7928 BAL.
    pub bal: Option<BlockAccessList>,
}

impl NetworkBlock {
    /// The bytes to publish.
    pub fn encode(&self) -> Vec<u8> {
        let empty: BlockAccessList = Vec::new();
        let bal = self.bal.as_ref().unwrap_or(&empty);
        let header =
            alloy_rlp::Header { list: true, payload_length: self.block.length() + bal.length() };
        let mut out = Vec::with_capacity(header.length_with_payload());
        header.encode(&mut out);
        self.block.encode(&mut out);
        bal.encode(&mut out);
        out
    }

    /// Parses published bytes.
    ///
    /// # Errors
    /// [`NetworkBlockError`]; never panics.
    pub fn decode(mut bytes: &[u8]) -> Result<Self, NetworkBlockError> {
        let header = alloy_rlp::Header::decode(&mut bytes)?;
        if !header.list {
            return Err(alloy_rlp::Error::UnexpectedString.into());
        }
        if bytes.len() != header.payload_length {
            return Err(NetworkBlockError::Trailing(bytes.len().abs_diff(header.payload_length)));
        }
        let block = Block::<TxEnvelope>::decode(&mut bytes)?;
        let bal = BlockAccessList::decode(&mut bytes)?;
        if !bytes.is_empty() {
            return Err(NetworkBlockError::Trailing(bytes.len()));
        }
        Ok(Self { block, bal: (!bal.is_empty()).then_some(bal) })
    }
}

/// Publishes each block the engine makes canonical (the proposer's side).
pub(crate) async fn publish_canonical(
    engine: EngineHandle,
    storage: Arc<Storage>,
    network: NetworkHandle,
) {
    let mut forkchoice = engine.subscribe_forkchoice();
    let mut published = forkchoice.borrow().head.0;
    while forkchoice.changed().await.is_ok() {
        let (head, _) = forkchoice.borrow_and_update().head;
        let from = (published + 1).max(head.saturating_sub(MAX_PUBLISH_BEHIND));
        for number in from..=head {
            let block = match read_block(&storage, number) {
                Ok(Some(block)) => block,
                Ok(None) => continue,
                Err(e) => {
                    tracing::error!(target: "net", number, error = %e, "cannot read a block to publish");
                    continue;
                }
            };
            let bytes = block.encode();
            let len = bytes.len();
            let hash = block.block.header.hash_slow();
            let sent = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            match network.publish(bytes).await {
                Ok(key) => {
                    tracing::info!(target: "net", number, %hash, key = %B256::from(key), bytes = len, sent, "block published")
                }
                Err(e) => {
                    tracing::warn!(target: "net", number, %hash, error = %e, "block not published")
                }
            }
        }
        published = published.max(head);
    }
}

fn read_block(
    storage: &Storage,
    number: u64,
) -> Result<Option<NetworkBlock>, gigagas_storage::StorageError> {
    let (Some(header), Some(body)) = (storage.header(number)?, storage.body(number)?) else {
        return Ok(None);
    };
    let BlockBody { transactions, ommers, withdrawals } = body;
    let block = Block { header, body: BlockBody { transactions, ommers, withdrawals } };
    Ok(Some(NetworkBlock { block, bal: storage.bal(number)? }))
}

/// Imports gossiped blocks (every node with block propagation).
pub(crate) async fn import_gossiped(
    engine: EngineHandle,
    network: NetworkHandle,
    syncer: Arc<crate::sync::Syncer>,
    follow: bool,
) {
    let Some(mut blocks) = network.take_blocks() else { return };
    // Blocks whose parent is unknown, by parent hash.
    let mut orphans: HashMap<B256, Vec<(BlockKey, NetworkBlock)>> = HashMap::new();
    let mut orphan_count = 0usize;
    // Blocks a sync was already tried for (a second SYNCING parks them as orphans).
    let mut retried: std::collections::HashSet<B256> = Default::default();
    while let Some(GossipedBlock { key, payload, first_seen, decoded, .. }) = blocks.recv().await {
        let unix = |t: std::time::SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
        };
        tracing::info!(target: "net", key = %B256::from(key), bytes = payload.len(),
            first_seen = unix(first_seen), decoded = unix(decoded), "block received");
        let block = match NetworkBlock::decode(&payload) {
            Ok(block) => block,
            Err(e) => {
                // Signed by the proposer but not a block: the proposer is at fault.
                tracing::warn!(target: "net", error = %e, "gossiped payload is not a block");
                network.report_block(key, false);
                continue;
            }
        };
        let mut queue = vec![(key, block)];
        while let Some((key, block)) = queue.pop() {
            let hash = block.block.header.hash_slow();
            let parent = block.block.header.parent_hash;
            let number = block.block.header.number;
            match import(&engine, block.clone(), follow).await {
                Ok(PayloadStatus::Valid(_)) => {
                    network.report_block(key, true);
                    tracing::info!(target: "net", number, %hash, "gossiped block imported");
                    if let Some(children) = orphans.remove(&hash) {
                        orphan_count -= children.len();
                        queue.extend(children);
                    }
                }
                Ok(PayloadStatus::Syncing) if !retried.contains(&hash) => {
                    // Fetch the missing ancestors from peers, then try the block again.
                    retried.insert(hash);
                    match syncer.sync_to(number).await {
                        Ok(_) => queue.push((key, block)),
                        Err(e) => {
                            tracing::warn!(target: "net", number, %hash, error = %e, "sync failed");
                            if orphan_count < MAX_ORPHANS {
                                orphan_count += 1;
                                orphans.entry(parent).or_default().push((key, block));
                            }
                        }
                    }
                }
                Ok(PayloadStatus::Syncing) => {
                    if orphan_count < MAX_ORPHANS {
                        orphan_count += 1;
                        orphans.entry(parent).or_default().push((key, block));
                    }
                }
                Ok(PayloadStatus::Invalid { reason, .. }) => {
                    tracing::warn!(target: "net", number, %hash, reason, "gossiped block is INVALID");
                    network.report_block(key, false);
                }
                Err(e) => {
                    tracing::error!(target: "net", number, %hash, error = %e, "gossiped block not judged (internal)");
                }
            }
        }
    }
}

/// Validates `block` as a `newPayload`; with `follow`, a valid block becomes the head.
pub(crate) async fn import(
    engine: &EngineHandle,
    block: NetworkBlock,
    follow: bool,
) -> Result<PayloadStatus, gigagas_engine::EngineError> {
    let hash = block.block.header.hash_slow();
    let bal_bytes = block.bal.as_ref().map_or(0, Encodable::length);
    let payload = NewPayload {
        rlp_len: block.block.length(),
        block: block.block,
        bal: block.bal,
        bal_bytes,
        received: Instant::now(),
    };
    let status = engine.new_payload(payload).await?;
    if follow && status == PayloadStatus::Valid(hash) {
        let state = ForkchoiceState { head: hash, safe: B256::ZERO, finalized: B256::ZERO };
        return Ok(engine.forkchoice_updated(state, None).await?.status);
    }
    Ok(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_blocks_round_trip_and_garbage_is_an_error() {
        let block = NetworkBlock { block: Block::default(), bal: None };
        let bytes = block.encode();
        assert_eq!(NetworkBlock::decode(&bytes).unwrap(), block);
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(NetworkBlock::decode(&longer).is_err());
        assert!(NetworkBlock::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(NetworkBlock::decode(&[0xc0]).is_err());
    }
}
