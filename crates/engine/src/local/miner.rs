//! The dev-mode miner (reth's `LocalMiner`, `crates/engine/local`): drives the engine task as a
//! consensus client would, through the same messages the Engine API handlers send — every
//! slot a forkchoice update with payload attributes, the payload built, `newPayload` with it
//! (and its BAL on Amsterdam), then a forkchoice update to the new block, with the safe and
//! finalized blocks lagging the head. [`LocalMiner::replay`] instead feeds blocks made
//! before (a chain file) through the same `newPayload` + forkchoice update, one per slot: the
//! same blocks every run, for measurements that compare runs.

use crate::{
    message::{ForkchoiceState, NewPayload},
    EngineError, EngineHandle, PayloadStatus,
};
use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::{keccak256, Address, B256};
use alloy_rlp::Encodable;
use gigagas_payload::PayloadAttributes;
use std::{
    collections::VecDeque,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

/// How the miner runs.
#[derive(Debug, Clone)]
pub struct MinerConfig {
    /// Seconds per slot.
    pub block_time: Duration,
    /// Fee recipient of the blocks built.
    pub fee_recipient: Address,
    /// The safe block is this many blocks below the head.
    pub safe_lag: usize,
    /// The finalized block is this many blocks below the head.
    pub finalized_lag: usize,
}

/// Why the miner stopped.
#[derive(Debug, thiserror::Error)]
pub enum MinerError {
    /// The engine failed to answer.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The engine built no payload although the head was VALID.
    #[error("forkchoice update on {head} built no payload: {status:?}")]
    NoPayload {
        /// The head.
        head: B256,
        /// The engine's verdict.
        status: PayloadStatus,
    },
    /// The payload's build failed.
    #[error(transparent)]
    Build(#[from] gigagas_payload::PayloadBuildFailed),
    /// The engine did not accept the block it built, or the forkchoice update to it.
    #[error("block {number} {hash}: the engine answered {status:?}")]
    Rejected {
        /// Block number.
        number: u64,
        /// Block hash.
        hash: B256,
        /// The verdict.
        status: PayloadStatus,
    },
}

/// The dev chain's miner. See the module documentation.
#[derive(Debug)]
pub struct LocalMiner {
    engine: EngineHandle,
    config: MinerConfig,
    head_timestamp: u64,
}

/// The blocks made canonical lately, newest last: enough of them for the safe and finalized
/// blocks to lag the head by [`MinerConfig::safe_lag`] and [`MinerConfig::finalized_lag`].
struct Recent {
    hashes: VecDeque<B256>,
    /// Blocks kept: the longer lag, plus the head.
    keep: usize,
}

impl Recent {
    fn new(head: B256, config: &MinerConfig) -> Self {
        Self { hashes: VecDeque::from([head]), keep: config.finalized_lag.max(config.safe_lag) + 1 }
    }

    /// Remembers `hash` as the newest canonical block, forgetting what no lag reaches.
    fn push(&mut self, hash: B256) {
        self.hashes.push_back(hash);
        while self.hashes.len() > self.keep {
            self.hashes.pop_front();
        }
    }

    /// The forkchoice state with `head`, safe and finalized lagging it (the oldest known block,
    /// else `head`, when the chain is shorter than a lag).
    fn state(&self, head: B256, config: &MinerConfig) -> ForkchoiceState {
        let len = self.hashes.len();
        let pick =
            |lag: usize| self.hashes.get(len.saturating_sub(1 + lag)).copied().unwrap_or(head);
        ForkchoiceState { head, safe: pick(config.safe_lag), finalized: pick(config.finalized_lag) }
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl LocalMiner {
    /// A miner driving `engine`, whose head block has timestamp `head_timestamp` (seconds):
    /// every block gets a later one.
    pub fn new(engine: EngineHandle, config: MinerConfig, head_timestamp: u64) -> Self {
        Self { engine, config, head_timestamp }
    }

    /// Feeds `blocks` (a chain on top of the engine's genesis, in order) one per
    /// [`MinerConfig::block_time`] as `newPayload` without a BAL (the engine executes each with
    /// the sequential reference and builds its BAL) and a forkchoice update to it; blocks at or
    /// below the head are skipped (a restarted node). Then waits until the future is dropped.
    ///
    /// # Errors
    /// [`MinerError::Rejected`] when the engine does not accept a block (or a forkchoice update
    /// to it); [`MinerError::Engine`] when it fails.
    pub async fn replay(self, blocks: Vec<Block<TxEnvelope>>) -> Result<(), MinerError> {
        let engine = &self.engine;
        let config = &self.config;
        let (head_number, head) = engine.forkchoice().head;
        let mut recent = Recent::new(head, config);
        let mut interval = tokio::time::interval(config.block_time);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await;
        let total = blocks.len();
        for block in blocks.into_iter().filter(|b| b.header.number > head_number) {
            interval.tick().await;
            let (number, hash) = (block.header.number, block.header.hash_slow());
            let (transactions, gas_used) = (block.body.transactions.len(), block.header.gas_used);
            let payload = NewPayload {
                rlp_len: block.length(),
                transactions_root: None,
                block,
                bal: None,
                bal_bytes: 0,
                received: Instant::now(),
            };
            let status = engine.new_payload(payload).await?;
            if status != PayloadStatus::Valid(hash) {
                return Err(MinerError::Rejected { number, hash, status });
            }
            recent.push(hash);
            let answer = engine.forkchoice_updated(recent.state(hash, config), None).await?;
            if answer.status != PayloadStatus::Valid(hash) {
                return Err(MinerError::Rejected { number, hash, status: answer.status });
            }
            eprintln!(
                "dev: block {number} {hash}: {transactions} transactions, {gas_used} gas; replayed, executed and made canonical by the engine"
            );
        }
        eprintln!("dev: replay done ({total} blocks in the file)");
        std::future::pending().await
    }

    /// Makes a block every [`MinerConfig::block_time`] until the future is dropped (the node's
    /// shutdown); logs one line per block on stderr.
    ///
    /// # Errors
    /// [`MinerError`] when the engine fails or rejects a block it built.
    pub async fn run(self) -> Result<(), MinerError> {
        let engine = &self.engine;
        let config = &self.config;
        let head = engine.forkchoice().head;
        let (mut slot, mut head_hash) = head;
        let mut head_time = self.head_timestamp;
        let mut recent = Recent::new(head_hash, config);
        let mut interval = tokio::time::interval(config.block_time);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await;
        loop {
            interval.tick().await;
            slot += 1;
            let timestamp = now().max(head_time + 1);
            let chain = engine.chain();
            let attributes = PayloadAttributes {
                timestamp,
                prev_randao: keccak256(format!("gigagas dev randao {slot}")),
                suggested_fee_recipient: config.fee_recipient,
                withdrawals: chain.is_shanghai(timestamp).then(Vec::new),
                parent_beacon_block_root: chain
                    .is_cancun(timestamp)
                    .then(|| keccak256(format!("gigagas dev beacon block {slot}"))),
                slot_number: chain.is_amsterdam(timestamp).then_some(slot),
                target_gas_limit: None,
                extra_data: None,
            };
            let answer = engine
                .forkchoice_updated(recent.state(head_hash, config), Some(attributes))
                .await?;
            let Some(id) = answer.payload_id else {
                return Err(MinerError::NoPayload { head: head_hash, status: answer.status });
            };
            let built = engine
                .payloads()
                .resolve(&id)
                .await
                .ok_or(MinerError::NoPayload { head: head_hash, status: answer.status })??;
            let block = built.block.clone();
            let (number, hash) = (block.header.number, built.hash);
            let amsterdam = chain.is_amsterdam(timestamp);
            let payload = NewPayload {
                rlp_len: block.length(),
                transactions_root: None,
                block,
                bal: amsterdam.then(|| built.bal.clone()),
                bal_bytes: if amsterdam { built.bal.length() } else { 0 },
                received: Instant::now(),
            };
            let status = engine.new_payload(payload).await?;
            if status != PayloadStatus::Valid(hash) {
                return Err(MinerError::Rejected { number, hash, status });
            }
            head_hash = hash;
            head_time = timestamp;
            recent.push(head_hash);
            let answer = engine.forkchoice_updated(recent.state(head_hash, config), None).await?;
            if answer.status != PayloadStatus::Valid(hash) {
                return Err(MinerError::Rejected { number, hash, status: answer.status });
            }
            tracing::info!(
                target: "engine::local",
                number,
                %hash,
                transactions = built.block.body.transactions.len(),
                gas_used = built.block.header.gas_used,
                "dev: block built, executed and made canonical"
            );
            eprintln!(
                "dev: block {number} {hash}: {} transactions, {} gas; built, executed and made canonical by the engine",
                built.block.body.transactions.len(),
                built.block.header.gas_used,
            );
        }
    }
}
