//! Sync in the node (the store serves peers' requests through the network's request handler,
//! `gigagas_net::request_handler`): a node whose gossiped (or Engine API) block has an unknown
//! parent, or that is given `--debug.tip`, fetches the chain that ends at that block through
//! the block downloader (`gigagas-net-p2p`): headers from the target back to a block it holds
//! ([`Syncer::sync_to_hash`], reth's header stage: the chain imported ends at the target
//! whatever the peers' heads), then bodies and BALs by hash, each checked against its header,
//! from the best-scored peer and retried on the next; a peer's wrong answer is the peer's
//! fault, reported to the network, never a verdict on the block. The blocks are imported in
//! order through the engine as `newPayload`s (the parallel executor runs with the peers' BALs,
//! checked against the header's BAL hash), each made the head with `--dev.follow`. A follower
//! also asks its peers for their heads (eth/69 `Status`) and catches up by number by itself
//! ([`catch_up`], [`Syncer::sync_to`]).

use crate::block::NetworkBlock;
use alloy_primitives::B256;
use gigagas_engine::{message::ForkchoiceState, EngineError, EngineHandle, PayloadStatus};
use gigagas_net::{
    sync::{SyncRequest, SyncResponse},
    NetworkHandle, PeerId,
};
use gigagas_net_p2p::{
    BlockClient, BlockDownloader, DownloadError, DownloadedBlock, DownloaderConfig,
};
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

/// Headers asked per request while syncing: a round of sync, imported as one engine backfill.
const HEADERS_PER_REQUEST: u64 = 128;

/// Most headers held in memory by a sync to a hash (about 600 bytes each): farther behind, the
/// node syncs by number to that distance below the target first.
pub(crate) const MAX_HEADERS_IN_MEMORY: u64 = 100_000;

/// How often a follower asks its peers for their heads ([`catch_up`]).
const CATCH_UP_INTERVAL: Duration = Duration::from_secs(2);
/// Peers asked per round of [`catch_up`].
const CATCH_UP_PEERS: usize = 4;
/// Rounds of [`catch_up`] without a new head before one block behind is fetched by sync (a
/// large block may take seconds to propagate: syncing it at once would send it twice).
const CATCH_UP_STALL_ROUNDS: u32 = 3;

/// Why sync stopped.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// No peer delivered the blocks (each one tried failed or answered wrongly).
    #[error(transparent)]
    Download(#[from] DownloadError),
    /// The engine failed (internal).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The engine still lacks a synced block's parent.
    #[error("block {number} {hash}: parent still unknown after sync")]
    Stuck {
        /// Number.
        number: u64,
        /// Hash.
        hash: B256,
    },
    /// The task fetching the next round failed (a panic or the runtime shutting down).
    #[error("sync fetch task: {0}")]
    Task(#[source] tokio::task::JoinError),
    /// A synced block is INVALID.
    #[error("block {number} {hash} is INVALID: {reason}")]
    Invalid {
        /// Number.
        number: u64,
        /// Hash.
        hash: B256,
        /// Why.
        reason: String,
    },
}

/// The node's sync over the transport `C` (the libp2p network, or devp2p sessions): one at a
/// time (the gossip importer and the Engine API's SYNCING both ask for it), remembering the
/// last block it imported so that a second request goes on from there.
#[derive(Debug)]
pub(crate) struct Syncer<C: BlockClient> {
    engine: EngineHandle,
    /// Blocks from peers, the best-scored first.
    downloader: Arc<BlockDownloader<C>>,
    follow: bool,
    /// The last block sync imported (number, hash).
    cursor: tokio::sync::Mutex<(u64, B256)>,
    /// The store's canonical chain, to find where a chain fetched back from a target joins
    /// this node's (None: only the head and the last block synced are known).
    canonical: Option<Arc<dyn gigagas_storage::FullReader>>,
}

impl<C: BlockClient> Syncer<C> {
    /// A syncer over `engine` and the peers of `client`; with `follow`, synced blocks become
    /// the head.
    pub(crate) fn new(
        engine: EngineHandle,
        client: C,
        follow: bool,
        canonical: Option<Arc<dyn gigagas_storage::FullReader>>,
    ) -> Arc<Self> {
        let head = engine.forkchoice().head;
        let downloader = Arc::new(BlockDownloader::new(client, DownloaderConfig::default()));
        let cursor = tokio::sync::Mutex::new(head);
        Arc::new(Self { engine, downloader, follow, cursor, canonical })
    }

    /// The transport's client.
    pub(crate) fn client(&self) -> &C {
        self.downloader.client()
    }

    /// Fetches and imports the blocks from the later of the engine's head and the last block
    /// synced up to `target_number` (exclusive), 128 per round, by number from the peers'
    /// canonical chains: headers, bodies, BALs, then the round's blocks through the engine as
    /// one backfill (see [`Syncer::import_rounds`]). Returns the blocks imported.
    ///
    /// # Errors
    /// [`SyncError`]; blocks imported before the error stay imported.
    pub(crate) async fn sync_to(&self, target_number: u64) -> Result<u64, SyncError> {
        let mut cursor = self.cursor.lock().await;
        self.catch_up_cursor(&mut cursor);
        self.import_rounds(&mut cursor, Plan::Forward { target_number }).await
    }

    /// Syncs to block `target` (a hash: the consensus client's payload, `--debug.tip`) as
    /// reth's pipeline does: its header and then its ancestors' are fetched from `target` back
    /// until one's parent is a block this node holds (the head, or a block of its canonical
    /// chain), so that what is imported is the chain that ends at `target` whatever the
    /// peers' own heads are; then the bodies and BALs of 128 headers a round, imported as
    /// [`Syncer::sync_to`] imports. More than [`MAX_HEADERS_IN_MEMORY`] blocks behind, the
    /// node first syncs by number to that distance below the target (the headers are held in
    /// memory). Returns the blocks imported.
    ///
    /// # Errors
    /// [`SyncError`]; blocks imported before the error stay imported.
    pub(crate) async fn sync_to_hash(&self, target: B256) -> Result<u64, SyncError> {
        let mut imported = 0;
        let mut cursor = self.cursor.lock().await;
        self.catch_up_cursor(&mut cursor);
        if self.holds(&cursor, cursor.0, target) {
            return Ok(0);
        }
        // The target's header alone first (its parent counted as held): how far it is.
        let tip = self
            .downloader
            .download_headers_back(target, |_, _| true, 1)
            .await?
            .pop()
            .ok_or(SyncError::Stuck { number: 0, hash: target })?;
        if tip.number > cursor.0 + MAX_HEADERS_IN_MEMORY {
            let below = tip.number - MAX_HEADERS_IN_MEMORY;
            imported +=
                self.import_rounds(&mut cursor, Plan::Forward { target_number: below }).await?;
        }
        let headers = {
            let held = |number: u64, hash: B256| self.holds(&cursor, number, hash);
            self.downloader.download_headers_back(target, held, MAX_HEADERS_IN_MEMORY + 1).await?
        };
        tracing::info!(target: "net", %target, number = tip.number, headers = headers.len(), from = headers.first().map(|h| h.number), "headers fetched back from the target");
        imported += self.import_rounds(&mut cursor, Plan::Headers(headers.into())).await?;
        Ok(imported)
    }

    /// The cursor moves up to the engine's head when the engine is past it (blocks imported
    /// by other means).
    fn catch_up_cursor(&self, cursor: &mut (u64, B256)) {
        let engine_head = self.engine.forkchoice().head;
        if engine_head.0 >= cursor.0 {
            *cursor = engine_head;
        }
    }

    /// Whether block `number` `hash` is one this node holds: the last synced, the engine's
    /// head, or a block of the stored canonical chain.
    fn holds(&self, cursor: &(u64, B256), number: u64, hash: B256) -> bool {
        (number, hash) == *cursor
            || self.engine.forkchoice().head == (number, hash)
            || self.canonical.as_ref().is_some_and(|store| {
                matches!(gigagas_storage::BlockHashReader::block_hash(&**store, number), Ok(Some(h)) if h == hash)
            })
    }

    /// Imports `plan`'s rounds, 128 blocks each, through the engine as one backfill of
    /// `newPayload`s a round (each block's state root computed while the next executes; with
    /// `follow`, each block committed and made the head as it is found VALID, or the round made
    /// the head by a forkchoice update when it is on another branch). The next round's blocks
    /// are fetched while this round's are imported. Returns the blocks imported.
    ///
    /// # Errors
    /// [`SyncError`]; blocks imported before the error stay imported.
    async fn import_rounds(
        &self,
        cursor: &mut (u64, B256),
        mut plan: Plan,
    ) -> Result<u64, SyncError> {
        let engine = &self.engine;
        let start = Instant::now();
        let mut imported = 0u64;
        // Where the time went: waiting for blocks (fetches not hidden behind an import),
        // `newPayload`s, forkchoice updates (the commits).
        let (mut fetching, mut importing, mut committing) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let first = cursor.0;
        // The first block past the plan: the progress's target.
        let target_number = plan.target_number().unwrap_or(first + 1);
        let mut gas = 0u64;
        // The next round's blocks, being fetched while a round is imported.
        let mut next = self.fetch_round(&mut plan, *cursor);
        while let Some(mut task) = next.take() {
            let started = Instant::now();
            let blocks = task.blocks().await?;
            fetching += started.elapsed();
            let hashes: Vec<(u64, B256)> = blocks
                .iter()
                .map(|b| (b.block.header.number, b.block.header.hash_slow()))
                .collect();
            let Some(&(last_number, last_hash)) = hashes.last() else { break };
            gas += blocks.iter().map(|b| b.block.header.gas_used).sum::<u64>();
            next = self.fetch_round(&mut plan, (last_number, last_hash));
            let started = Instant::now();
            // With `follow`, each block is committed and made the head as it is found VALID.
            let payloads = blocks
                .into_iter()
                .map(|b| NetworkBlock { block: b.block, bal: b.bal }.into_new_payload())
                .collect();
            let statuses = engine.new_payloads(payloads, self.follow).await?;
            importing += started.elapsed();
            for (status, &(number, hash)) in statuses.iter().zip(&hashes) {
                match status {
                    PayloadStatus::Valid(_) => {
                        *cursor = (number, hash);
                        imported += 1;
                    }
                    PayloadStatus::Invalid { reason, .. } => {
                        let reason = reason.clone();
                        return Err(SyncError::Invalid { number, hash, reason });
                    }
                    PayloadStatus::Syncing => return Err(SyncError::Stuck { number, hash }),
                }
            }
            // Progress: where sync is, how fast, and how long the rest takes at this pace.
            let seconds = start.elapsed().as_secs_f64().max(1e-9);
            let done = cursor.0.saturating_sub(first);
            let left = target_number.saturating_sub(cursor.0 + 1);
            tracing::info!(
                target: "net",
                block = cursor.0,
                target = target_number - 1,
                mgas_per_second = gas as f64 / 1e6 / seconds,
                blocks_per_second = done as f64 / seconds,
                eta_seconds = left as f64 * seconds / done.max(1) as f64,
                "sync progress"
            );
            if self.follow && engine.forkchoice().head.1 != last_hash {
                // The backfill commits only blocks that extend the head: a round on another
                // branch becomes the head by a forkchoice update (a reorg).
                let started = Instant::now();
                let state =
                    ForkchoiceState { head: last_hash, safe: B256::ZERO, finalized: B256::ZERO };
                let answer = engine.forkchoice_updated(state, None).await?;
                if !matches!(answer.status, PayloadStatus::Valid(_)) {
                    return Err(SyncError::Stuck { number: last_number, hash: last_hash });
                }
                committing += started.elapsed();
            }
        }
        if imported > 0 {
            let seconds = start.elapsed().as_secs_f64();
            metrics::counter!("net_sync_blocks_total").increment(imported);
            tracing::info!(
                target: "net",
                imported,
                seconds,
                blocks_per_second = imported as f64 / seconds.max(1e-9),
                fetch_seconds = fetching.as_secs_f64(),
                import_seconds = importing.as_secs_f64(),
                commit_seconds = committing.as_secs_f64(),
                "synced"
            );
        }
        Ok(imported)
    }

    /// Starts fetching `plan`'s next round after block `last` (number, hash): by number from
    /// the peers, or the bodies of the next 128 headers. None when the plan is done.
    fn fetch_round(&self, plan: &mut Plan, last: (u64, B256)) -> Option<RoundTask> {
        let downloader = self.downloader.clone();
        match plan {
            Plan::Forward { target_number } => {
                let target_number = *target_number;
                if last.0 + 1 >= target_number {
                    return None;
                }
                let count = (target_number - 1 - last.0).min(HEADERS_PER_REQUEST);
                Some(RoundTask(tokio::spawn(async move {
                    Ok(downloader.download_range(last.0 + 1, last.1, count).await?.1)
                })))
            }
            Plan::Headers(headers) => {
                if headers.is_empty() {
                    return None;
                }
                let take = headers.len().min(HEADERS_PER_REQUEST as usize);
                let round: Vec<_> = headers.drain(..take).collect();
                Some(RoundTask(tokio::spawn(
                    async move { downloader.download_bodies(round).await },
                )))
            }
        }
    }
}

/// What a sync imports: blocks by number up to a target (exclusive), or the blocks of headers
/// already fetched (ascending, a chain).
enum Plan {
    /// By number from the peers' canonical chains.
    Forward {
        /// The first block not to import.
        target_number: u64,
    },
    /// The headers not fetched as blocks yet.
    Headers(std::collections::VecDeque<alloy_consensus::Header>),
}

impl Plan {
    /// The first block number past the plan, when known.
    fn target_number(&self) -> Option<u64> {
        match self {
            Self::Forward { target_number } => Some(*target_number),
            Self::Headers(headers) => headers.back().map(|h| h.number + 1),
        }
    }
}

/// A round of blocks being fetched; dropped (an error, the sync over), the fetch is aborted.
struct RoundTask(tokio::task::JoinHandle<Result<Vec<DownloadedBlock>, DownloadError>>);

impl RoundTask {
    /// The round's blocks.
    async fn blocks(&mut self) -> Result<Vec<DownloadedBlock>, SyncError> {
        Ok((&mut self.0).await.map_err(SyncError::Task)??)
    }
}

impl Drop for RoundTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Syncs whenever the engine answers SYNCING (a consensus client sent a payload whose parent
/// this node lacks, or a forkchoice update to a head it lacks): fetches the chain that ends at
/// that block from peers, so that the consensus client's next `newPayload` /
/// `forkchoiceUpdated` finds it.
pub(crate) async fn sync_on_syncing<C: BlockClient>(engine: EngineHandle, syncer: Arc<Syncer<C>>) {
    let mut syncing = engine.subscribe_syncing();
    while syncing.changed().await.is_ok() {
        let Some(target) = *syncing.borrow_and_update() else { continue };
        if let Err(e) = syncer.sync_to_hash(target.hash).await {
            tracing::warn!(target: "net", number = ?target.number, hash = %target.hash, error = %e, "sync for a SYNCING payload or head failed");
        }
    }
}

/// A follower's catch-up (`--dev.follow`): every [`CATCH_UP_INTERVAL`] asks a few peers for
/// their eth/69 status and, when one on the same chain (`genesis`) is ahead — by two blocks, or
/// by one that did not arrive by gossip within [`CATCH_UP_STALL_ROUNDS`] rounds — syncs to its
/// head. A node started
/// next to a devnet reaches the head even when no new block comes to start a sync.
pub(crate) async fn catch_up(syncer: Arc<Syncer<NetworkHandle>>, genesis: B256) {
    let mut interval = tokio::time::interval(CATCH_UP_INTERVAL);
    let mut last_head = u64::MAX;
    let mut stalled = 0u32;
    let mut round = 0usize;
    loop {
        interval.tick().await;
        let head = syncer.engine.forkchoice().head.0;
        let network = syncer.client();
        let peers: Vec<PeerId> = network.peers().into_iter().collect();
        let mut best: Option<u64> = None;
        for i in 0..peers.len().min(CATCH_UP_PEERS) {
            let peer = peers[(round * CATCH_UP_PEERS + i) % peers.len()];
            if let Ok(SyncResponse::Status(Some(status))) =
                network.request(peer, SyncRequest::Status).await
            {
                if status.genesis == genesis {
                    best = best.max(Some(status.latest));
                }
            }
        }
        round += 1;
        stalled = if head == last_head { stalled + 1 } else { 0 };
        last_head = head;
        match best {
            Some(latest)
                if latest >= head + 2 || (latest > head && stalled >= CATCH_UP_STALL_ROUNDS) =>
            {
                if let Err(e) = syncer.sync_to(latest + 1).await {
                    tracing::debug!(target: "net", latest, error = %e, "catch-up sync failed");
                }
            }
            _ => {}
        }
    }
}
