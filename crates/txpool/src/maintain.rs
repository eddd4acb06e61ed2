//! Pool maintenance (reth's `maintain_transaction_pool`): a task that follows the canonical
//! chain's notifications and, after each move of the head, puts back the transactions of the
//! blocks a reorg took out that the new branch does not hold (geth's and reth's reinjection),
//! drops what the new head's state made stale (nonces used) and announces what it made
//! executable ([`TxPool::prune`]). The engine only publishes the chain; it never drives the
//! pool.
//!
//! Flow per move: the blocks the task followed last (the last 64, with their
//! transactions) are compared with the canonical chain now; those no longer canonical are the
//! reorg's; the new canonical blocks are read and kept; the old blocks' transactions missing
//! from the new ones are offered to the pool under the new head's state and rules (a nonce the
//! new branch used refuses them there), then the pool is pruned.

use crate::TxPool;
use alloy_consensus::{Header, TxEnvelope};
use alloy_primitives::{map::HashSet, B256};
use gigagas_primitives::ChainSpec;
use gigagas_state::StateSource;
use std::{collections::VecDeque, sync::Arc};
use tokio::sync::broadcast::{self, error::RecvError};

/// Canonical blocks the task keeps with their transactions: a reorg deeper than this puts
/// back only the transactions of its last `KEPT_BLOCKS` blocks.
const KEPT_BLOCKS: usize = 64;

/// Most new canonical blocks one move reads (a longer jump, e.g. after a sync, is taken from
/// its last blocks: nothing before it can be reorged out of the task's view).
const MAX_READ: u64 = KEPT_BLOCKS as u64;

/// A canonical block as pool maintenance follows it.
#[derive(Debug, Clone)]
pub struct ChainBlock {
    /// Its hash.
    pub hash: B256,
    /// Its header (the rules of the block after it, for transactions put back).
    pub header: Header,
    /// Its transactions, in block order.
    pub transactions: Vec<TxEnvelope>,
}

/// What pool maintenance reads of the chain the engine publishes.
pub trait PoolChain: Send + Sync + 'static {
    /// A read's failure (a database error).
    type Error: std::fmt::Display + Send + 'static;

    /// The chain's specification (chain id, fork times).
    fn chain_spec(&self) -> &ChainSpec;

    /// The state at the canonical head.
    ///
    /// # Errors
    /// A read that failed.
    fn latest(&self) -> Result<Arc<dyn StateSource>, Self::Error>;

    /// The canonical head: (number, hash).
    ///
    /// # Errors
    /// A read that failed.
    fn head(&self) -> Result<(u64, B256), Self::Error>;

    /// The hash of canonical block `number`, `None` above the head.
    ///
    /// # Errors
    /// A read that failed.
    fn canonical_hash(&self, number: u64) -> Result<Option<B256>, Self::Error>;

    /// Canonical block `number`, `None` above the head.
    ///
    /// # Errors
    /// A read that failed.
    fn canonical_block(&self, number: u64) -> Result<Option<ChainBlock>, Self::Error>;
}

/// The canonical blocks the task followed last, lowest first.
#[derive(Debug, Default)]
struct Followed {
    blocks: VecDeque<(u64, ChainBlock)>,
}

impl Followed {
    /// Brings the followed blocks up to the canonical chain; returns the transactions of the
    /// blocks that left it that the new blocks do not hold, in the old blocks' order, and the
    /// new head's header.
    fn follow<C: PoolChain>(
        &mut self,
        chain: &C,
    ) -> Result<(Vec<TxEnvelope>, Option<Header>), C::Error> {
        let head = chain.head()?;
        let mut removed = Vec::new();
        while let Some((number, block)) = self.blocks.back() {
            if *number <= head.0 && chain.canonical_hash(*number)? == Some(block.hash) {
                break;
            }
            removed.push(self.blocks.pop_back().expect("just seen").1);
        }
        let from =
            self.blocks.back().map_or(0, |(n, _)| n + 1).max(head.0.saturating_sub(MAX_READ - 1));
        let mut included = HashSet::<B256>::default();
        for number in from..=head.0 {
            let Some(block) = chain.canonical_block(number)? else { break };
            included.extend(block.transactions.iter().map(|tx| *tx.tx_hash()));
            self.blocks.push_back((number, block));
        }
        while self.blocks.len() > KEPT_BLOCKS {
            self.blocks.pop_front();
        }
        let reinject = removed
            .into_iter()
            .rev()
            .flat_map(|b| b.transactions)
            .filter(|tx| !included.contains(tx.tx_hash()))
            .collect();
        Ok((reinject, self.blocks.back().map(|(_, b)| b.header.clone())))
    }
}

/// Follows `canonical` (any notification of a head move; those queued meanwhile are taken as
/// one) on `chain`, and after each puts back into `pool` what a reorg took out (module doc)
/// and prunes it against the head's state, until the sender is gone (or the task is aborted,
/// as the node does when it shuts down). The reads, the put-back and the prune run on the
/// runtime's blocking pool. A read that fails is logged and the pool maintained at the next
/// move.
pub async fn maintain_transaction_pool<N, C>(
    pool: Arc<TxPool>,
    mut canonical: broadcast::Receiver<N>,
    chain: C,
) where
    N: Clone,
    C: PoolChain,
{
    let chain = Arc::new(chain);
    // The chain as it stands when maintenance starts: a reorg of it can be followed.
    let start = {
        let chain = chain.clone();
        tokio::task::spawn_blocking(move || {
            let mut followed = Followed::default();
            if let Err(e) = followed.follow(&*chain) {
                tracing::warn!(target: "txpool", error = %e, "the chain's head could not be read");
            }
            followed
        })
    };
    let Ok(mut followed) = start.await else { return };
    loop {
        match canonical.recv().await {
            // A subscriber that lagged has missed moves: the chain is compared with what was
            // followed.
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return,
        }
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = canonical.try_recv() {}
        let (pool, chain) = (pool.clone(), chain.clone());
        let maintained = tokio::task::spawn_blocking(move || {
            let result = maintain_once(&pool, &*chain, &mut followed);
            (followed, result)
        });
        match maintained.await {
            Ok((back, result)) => {
                followed = back;
                if let Err(e) = result {
                    tracing::error!(target: "txpool", error = %e, "pool not maintained: the chain could not be read");
                }
            }
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The runtime is shutting down.
            Err(_) => return,
        }
    }
}

/// One move: the reorg's transactions put back, then the pool pruned.
fn maintain_once<C: PoolChain>(
    pool: &TxPool,
    chain: &C,
    followed: &mut Followed,
) -> Result<(), C::Error> {
    let (reinject, head) = followed.follow(chain)?;
    let state = chain.latest()?;
    let mut put_back = 0usize;
    for tx in reinject {
        // A blob transaction's sidecar is not kept once it is included: it cannot come back.
        if tx.is_eip4844() {
            continue;
        }
        let size = alloy_eips::eip2718::Encodable2718::encode_2718_len(&tx);
        // Refused: its nonce is used on the new branch, or the head's rules refuse it now.
        if pool
            .add_pooled_after(size, (tx, None), chain.chain_spec(), head.as_ref(), &*state)
            .is_ok()
        {
            put_back += 1;
        }
    }
    if put_back > 0 {
        tracing::debug!(target: "txpool", put_back, "transactions of reorged-out blocks put back");
    }
    pool.prune(&*state);
    Ok(())
}
