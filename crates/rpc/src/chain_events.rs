//! The canonical chain's moves as subscriptions and filters see them: blocks that joined it
//! and blocks a reorg took out of it, each with its receipts (reth's `CanonStateNotification`
//! with the chain segments, geth's `ChainEvent` and `RemovedLogsEvent`).
//!
//! Flow: the engine publishes each move of the canonical head
//! ([`gigagas_chain_state::CanonicalInMemoryState::subscribe_to_canonical_state`]) → one
//! follower task per RPC context compares the chain with the blocks it announced last (the
//! most recent [`KEPT_BLOCKS`]): those no longer canonical are `removed`, the canonical blocks
//! above the highest one still canonical are `added` (at most [`MAX_ADDED`], the newest, when
//! the head jumped further, as after a sync) → one [`ChainEvent`] to every receiver
//! ([`ChainEvents::subscribe`]): the `eth_subscribe` tasks and the filters.
//!
//! The follower starts with the first receiver and ends with the context; it reads blocks and
//! receipts on the blocking pool. A receiver that falls [`EVENT_BACKLOG`] events behind is told
//! it lagged.

use crate::{convert::StoredBlock, RpcContext, RpcError};
use alloy_consensus::ReceiptEnvelope;
use alloy_primitives::B256;
use alloy_rpc_types_eth::{Filter, FilterBlockOption};
use gigagas_storage_api::BlockHashReader;
use std::{
    collections::VecDeque,
    sync::{Arc, OnceLock, Weak},
};
use tokio::sync::{broadcast, watch};

/// Blocks the follower remembers: a reorg deeper than this reports the blocks it removed from
/// these only.
pub const KEPT_BLOCKS: usize = 128;

/// Most blocks one event announces as added: a longer move (a sync's) announces its newest.
pub const MAX_ADDED: u64 = 1_024;

/// Events a receiver may fall behind by before it misses some (each holds its blocks and
/// receipts until every receiver has read it: this bounds that memory).
pub const EVENT_BACKLOG: usize = 128;

/// A canonical block with its receipts.
pub(crate) struct BlockEvent {
    /// The block.
    pub(crate) block: Arc<StoredBlock>,
    /// Its receipts, one per transaction.
    pub(crate) receipts: Arc<Vec<ReceiptEnvelope>>,
    /// Its header as `newHeads` sends it, written once for every subscriber.
    header_json: OnceLock<Box<serde_json::value::RawValue>>,
}

impl std::fmt::Debug for BlockEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockEvent")
            .field("number", &self.block.number)
            .field("hash", &self.block.hash)
            .field("receipts", &self.receipts.len())
            .finish()
    }
}

impl BlockEvent {
    /// (number, hash).
    fn num_hash(&self) -> (u64, B256) {
        (self.block.number, self.block.hash)
    }

    /// The header in the RPC shape, as JSON (written by the first subscriber that asks, shared
    /// by the rest).
    ///
    /// # Errors
    /// None in practice: serde_json's error for a header it cannot write is passed on.
    pub(crate) fn header_json(
        &self,
    ) -> Result<Box<serde_json::value::RawValue>, serde_json::Error> {
        if let Some(json) = self.header_json.get() {
            return Ok(json.clone());
        }
        let json = serde_json::value::to_raw_value(&self.block.rpc_header())?;
        Ok(self.header_json.get_or_init(|| json).clone())
    }

    /// The block's logs `filter` admits (its addresses, topics and block range or hash), in
    /// the RPC shape, marked `removed` when the block left the chain.
    pub(crate) fn logs(&self, filter: &Filter, removed: bool) -> Vec<alloy_rpc_types_eth::Log> {
        let (number, hash) = self.num_hash();
        let in_blocks = match filter.block_option {
            FilterBlockOption::AtBlockHash(at) => at == hash,
            FilterBlockOption::Range { from_block, to_block } => {
                from_block.and_then(|b| b.as_number()).is_none_or(|from| from <= number)
                    && to_block.and_then(|b| b.as_number()).is_none_or(|to| number <= to)
            }
        };
        if !in_blocks || !filter.matches_bloom(self.block.header.logs_bloom) {
            return Vec::new();
        }
        self.block.rpc_logs(
            &self.receipts,
            |log| filter.matches_address(log.address) && filter.matches_topics(log.topics()),
            removed,
        )
    }
}

/// One move of the canonical chain.
#[derive(Debug, Default)]
pub(crate) struct ChainEvent {
    /// Blocks that left the canonical chain, lowest first.
    pub(crate) removed: Vec<Arc<BlockEvent>>,
    /// Blocks that joined it, lowest first, the last the new head. When the head moved back
    /// to a block announced before (a forkchoice update to an ancestor), that block alone,
    /// announced again as geth announces it (its header to `newHeads`, its logs as new).
    pub(crate) added: Vec<Arc<BlockEvent>>,
}

/// The chain's moves for the subscriptions and filters of one RPC context.
#[derive(Debug)]
pub struct ChainEvents {
    sender: broadcast::Sender<Arc<ChainEvent>>,
    /// Set when the follower started; dropping it (with the context) ends the follower.
    follower: OnceLock<watch::Sender<()>>,
}

impl Default for ChainEvents {
    fn default() -> Self {
        Self { sender: broadcast::channel(EVENT_BACKLOG).0, follower: OnceLock::new() }
    }
}

impl ChainEvents {
    /// Every move of the canonical chain after this call, the follower started (on the
    /// current tokio runtime) if it was not.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub(crate) fn subscribe(&self, ctx: &Arc<RpcContext>) -> broadcast::Receiver<Arc<ChainEvent>> {
        let receiver = self.sender.subscribe();
        self.follower.get_or_init(|| {
            let (stop, stopped) = watch::channel(());
            // Subscribed before the head is read: no move after it is missed.
            let moves = ctx.provider.canonical_in_memory_state().subscribe_to_canonical_state();
            let announced =
                Announced::at(ctx.provider.canonical_in_memory_state().canonical_chain().head());
            tokio::spawn(follow(
                Arc::downgrade(ctx),
                moves,
                stopped,
                self.sender.clone(),
                announced,
            ));
            stop
        });
        receiver
    }
}

/// The blocks last announced: `blocks` (lowest first) over `base`.
#[derive(Debug)]
struct Announced {
    base: (u64, B256),
    blocks: VecDeque<Arc<BlockEvent>>,
}

impl Announced {
    /// Nothing announced yet, the chain at `head`.
    fn at(head: (u64, B256)) -> Self {
        Self { base: head, blocks: VecDeque::new() }
    }

    /// The head announced last.
    fn head(&self) -> (u64, B256) {
        self.blocks.back().map_or(self.base, |b| b.num_hash())
    }
}

/// The follower: one event per move of the head, until the context or the engine is gone.
async fn follow(
    ctx: Weak<RpcContext>,
    mut moves: broadcast::Receiver<gigagas_chain_state::CanonStateNotification>,
    mut stop: watch::Receiver<()>,
    sender: broadcast::Sender<Arc<ChainEvent>>,
    mut announced: Announced,
) {
    loop {
        tokio::select! {
            // Nothing is ever sent: this ends when the context drops the sender.
            _ = stop.changed() => return,
            moved = moves.recv() => match moved {
                // A lag loses nothing: the chain is compared with what was announced.
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
        let Some(ctx) = ctx.upgrade() else { return };
        let read = tokio::task::spawn_blocking(move || {
            let event = catch_up(&ctx, &mut announced);
            (announced, event)
        })
        .await;
        let event = match read {
            Ok((back, event)) => {
                announced = back;
                event
            }
            Err(e) => {
                tracing::error!(target: "rpc::events", error = %e, "chain follower failed");
                return;
            }
        };
        match event {
            Ok(Some(event)) => {
                // No receiver: nobody to tell.
                let _ = sender.send(Arc::new(event));
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(
                target: "rpc::events",
                error = %e,
                "reading the new canonical blocks for subscriptions and filters failed"
            ),
        }
    }
}

/// The move from what `announced` holds to the canonical chain now (`None`: no move), and
/// `announced` brought up to it. A chain that moves again while it is read is read again.
fn catch_up(ctx: &RpcContext, announced: &mut Announced) -> Result<Option<ChainEvent>, RpcError> {
    for _ in 0..3 {
        let head = ctx.provider.canonical_in_memory_state().canonical_chain().head();
        if head == announced.head() {
            return Ok(None);
        }
        // What left the chain: announced blocks no longer canonical.
        let mut removed = Vec::new();
        while let Some(last) = announced.blocks.back() {
            let (number, hash) = last.num_hash();
            if number <= head.0 && ctx.provider.block_hash(number)? == Some(hash) {
                break;
            }
            removed.push(announced.blocks.pop_back().expect("just seen"));
        }
        removed.reverse();
        let mut ancestor = announced.head().0.min(head.0);
        if announced.blocks.is_empty() {
            let (number, hash) = announced.base;
            if number > head.0 || ctx.provider.block_hash(number)? != Some(hash) {
                // The base itself left the chain (its block is not kept: not reported).
                ancestor = ancestor.saturating_sub(1);
            }
        }
        if !removed.is_empty() && announced.head() == head {
            // The head moved back to a block announced before (a forkchoice update to an
            // ancestor): as geth does, the removed blocks are told, then the head again (its
            // header to newHeads, its logs as new).
            let head_event = match announced.blocks.back() {
                Some(block) => block.clone(),
                None => {
                    let Some(block) = StoredBlock::load(ctx, head.0)?.filter(|b| b.hash == head.1)
                    else {
                        announced.blocks.extend(removed);
                        continue;
                    };
                    let receipts = block.receipts(ctx)?;
                    Arc::new(BlockEvent { block, receipts, header_json: OnceLock::new() })
                }
            };
            return Ok(Some(ChainEvent { removed, added: vec![head_event] }));
        }
        let first = (ancestor + 1).max(head.0.saturating_sub(MAX_ADDED - 1));
        let mut added: Vec<Arc<BlockEvent>> = Vec::new();
        let mut moved = false;
        for number in first..=head.0 {
            let Some(block) = StoredBlock::load(ctx, number)? else {
                moved = true;
                break;
            };
            let parent_ok = added.last().is_none_or(|p| p.block.hash == block.header.parent_hash);
            if !parent_ok {
                moved = true;
                break;
            }
            let receipts = block.receipts(ctx)?;
            added.push(Arc::new(BlockEvent { block, receipts, header_json: OnceLock::new() }));
        }
        if moved || added.last().map(|b| b.num_hash()) != Some(head) {
            // The chain moved under the reads: put back what was removed and read again.
            announced.blocks.extend(removed);
            continue;
        }
        if first > ancestor + 1 {
            // A jump past what one event announces: what was announced is no base for it.
            announced.blocks.clear();
            announced.base = (first - 1, added[0].block.header.parent_hash);
        }
        announced.blocks.extend(added.iter().cloned());
        while announced.blocks.len() > KEPT_BLOCKS {
            let dropped = announced.blocks.pop_front().expect("longer than the bound");
            announced.base = dropped.num_hash();
        }
        return Ok(Some(ChainEvent { removed, added }));
    }
    Ok(None)
}
