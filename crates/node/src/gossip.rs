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
//!   a block whose parent is unknown starts a sync (sync.rs) and is tried again after it, or
//!   waits in the engine's `BlockBuffer` (bounded, expiring, dropped once at or below the
//!   finalized block) until its parent is imported.

use crate::block::{import, NetworkBlock};
use alloy_consensus::Block;
use alloy_primitives::B256;
use gigagas_engine::{BlockBuffer, EngineHandle, PayloadStatus};
use gigagas_net::{
    propagation::{BlockKey, GossipedBlock},
    NetworkHandle,
};
use gigagas_storage::FullReader;
use std::{collections::VecDeque, sync::Arc, time::Instant};

/// Blocks a sync was tried for, remembered at most.
const MAX_RETRIED: usize = 256;
/// Blocks behind the head the publisher still publishes after a jump.
const MAX_PUBLISH_BEHIND: u64 = 16;

/// Publishes each block the engine makes canonical (the proposer's side).
pub(crate) async fn publish_canonical(
    engine: EngineHandle,
    storage: Arc<dyn FullReader>,
    network: NetworkHandle,
) {
    let mut forkchoice = engine.subscribe_forkchoice();
    let mut published = forkchoice.borrow().head.0;
    while forkchoice.changed().await.is_ok() {
        let (head, _) = forkchoice.borrow_and_update().head;
        let from = (published + 1).max(head.saturating_sub(MAX_PUBLISH_BEHIND));
        for number in from..=head {
            let block = match read_block(&*storage, number) {
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
    storage: &dyn FullReader,
    number: u64,
) -> Result<Option<NetworkBlock>, gigagas_storage::ProviderError> {
    let (Some(header), Some(body)) =
        (storage.header_by_number(number)?, storage.body_by_number(number)?)
    else {
        return Ok(None);
    };
    Ok(Some(NetworkBlock {
        block: Block { header, body },
        bal: storage.block_access_list(number)?,
    }))
}

/// Imports gossiped blocks (every node with block propagation).
pub(crate) async fn import_gossiped(
    engine: EngineHandle,
    network: NetworkHandle,
    syncer: Arc<crate::sync::Syncer<NetworkHandle>>,
    follow: bool,
) {
    let Some(mut blocks) = network.take_blocks() else { return };
    // Blocks whose parent is unknown (bounded, expiring; below finalized dropped).
    let mut orphans: BlockBuffer<(BlockKey, NetworkBlock)> = BlockBuffer::default();
    // Blocks a sync was already tried for (a second SYNCING parks them as orphans), newest last.
    let mut retried: VecDeque<B256> = VecDeque::new();
    while let Some(GossipedBlock { key, payload, first_seen, decoded, .. }) = blocks.recv().await {
        orphans.expire(Instant::now());
        if let Some(finalized) = engine.forkchoice().finalized {
            orphans.remove_finalized(finalized.0);
        }
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
                    queue.extend(orphans.take_children(&hash));
                }
                Ok(PayloadStatus::Syncing) if !retried.contains(&hash) => {
                    // Fetch the missing ancestors (the chain ending at its parent) from peers,
                    // then try the block again.
                    retried.push_back(hash);
                    if retried.len() > MAX_RETRIED {
                        retried.pop_front();
                    }
                    match syncer.sync_to_hash(parent).await {
                        Ok(_) => queue.push((key, block)),
                        Err(e) => {
                            tracing::warn!(target: "net", number, %hash, error = %e, "sync failed");
                            orphans.insert(hash, parent, number, (key, block), Instant::now());
                        }
                    }
                }
                Ok(PayloadStatus::Syncing) => {
                    orphans.insert(hash, parent, number, (key, block), Instant::now());
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
