//! Sync in the node (the store serves peers' requests through the network's request handler,
//! `gigagas_net::request_handler`): a node whose gossiped (or Engine API) block has an unknown
//! parent fetches the missing ancestors through the block downloader (`gigagas-net-p2p`:
//! headers by number, then bodies and BALs by hash, each checked against its header, from the
//! best-scored peer and retried on the next; a peer's wrong answer is the peer's fault,
//! reported to the network, never a verdict on the block), and imports them in order through
//! the engine as `newPayload`s (the parallel executor runs with the peers' BALs, checked
//! against the header's BAL hash), making each the head with `--dev.follow`. A follower also
//! asks its peers for their heads (eth/69 `Status`) and catches up by itself ([`catch_up`]).

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
    Task(String),
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
}

impl<C: BlockClient> Syncer<C> {
    /// A syncer over `engine` and the peers of `client`; with `follow`, synced blocks become
    /// the head.
    pub(crate) fn new(engine: EngineHandle, client: C, follow: bool) -> Arc<Self> {
        let head = engine.forkchoice().head;
        let downloader = Arc::new(BlockDownloader::new(client, DownloaderConfig::default()));
        Arc::new(Self { engine, downloader, follow, cursor: tokio::sync::Mutex::new(head) })
    }

    /// The transport's client.
    pub(crate) fn client(&self) -> &C {
        self.downloader.client()
    }

    /// Fetches and imports the blocks from the later of the engine's head and the last block
    /// synced up to `target_number` (exclusive), 128 per round: headers, bodies, BALs, then the
    /// round's blocks through the engine as one backfill of `newPayload`s (each block's state
    /// root computed while the next executes; with `follow`, each block committed and made the
    /// head as it is found VALID, or the round made the head by a forkchoice update when it is
    /// on another branch). The next round's blocks are fetched while this round's are
    /// imported. Returns the blocks imported.
    ///
    /// # Errors
    /// [`SyncError`]; blocks imported before the error stay imported.
    pub(crate) async fn sync_to(&self, target_number: u64) -> Result<u64, SyncError> {
        let engine = &self.engine;
        let mut cursor = self.cursor.lock().await;
        let start = Instant::now();
        let mut imported = 0u64;
        // Where the time went: waiting for blocks (fetches not hidden behind an import),
        // `newPayload`s, forkchoice updates (the commits).
        let (mut fetching, mut importing, mut committing) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let engine_head = engine.forkchoice().head;
        if engine_head.0 >= cursor.0 {
            *cursor = engine_head;
        }
        // The next round's blocks, being fetched while a round is imported.
        let mut prefetch: Option<tokio::task::JoinHandle<Result<Round<C>, DownloadError>>> = None;
        let first = cursor.0;
        let mut gas = 0u64;
        loop {
            let (head, head_hash) = *cursor;
            if head + 1 >= target_number {
                break;
            }
            let started = Instant::now();
            let (_peer, blocks) = match prefetch.take() {
                Some(task) => task.await.map_err(|e| SyncError::Task(e.to_string()))??,
                None => {
                    let count = (target_number - 1 - head).min(HEADERS_PER_REQUEST);
                    self.downloader.download_range(head + 1, head_hash, count).await?
                }
            };
            fetching += started.elapsed();
            let hashes: Vec<(u64, B256)> = blocks
                .iter()
                .map(|b| (b.block.header.number, b.block.header.hash_slow()))
                .collect();
            let (last_number, last_hash) = *hashes.last().expect("a non-empty round");
            gas += blocks.iter().map(|b| b.block.header.gas_used).sum::<u64>();
            if last_number + 1 < target_number {
                let downloader = self.downloader.clone();
                let count = (target_number - 1 - last_number).min(HEADERS_PER_REQUEST);
                prefetch = Some(tokio::spawn(async move {
                    downloader.download_range(last_number + 1, last_hash, count).await
                }));
            }
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
        if let Some(task) = prefetch {
            task.abort();
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
}

/// A round of blocks from one peer.
type Round<C> = (<C as BlockClient>::Peer, Vec<DownloadedBlock>);

/// Syncs whenever the engine answers a payload SYNCING (a consensus client sent a block whose
/// parent this node lacks): fetches the ancestors and the block itself from peers, so that the
/// consensus client's next `newPayload` / `forkchoiceUpdated` finds them.
pub(crate) async fn sync_on_syncing<C: BlockClient>(engine: EngineHandle, syncer: Arc<Syncer<C>>) {
    let mut syncing = engine.subscribe_syncing();
    while syncing.changed().await.is_ok() {
        let Some((number, hash)) = *syncing.borrow_and_update() else { continue };
        if let Err(e) = syncer.sync_to(number + 1).await {
            tracing::warn!(target: "net", number, %hash, error = %e, "sync for a SYNCING payload failed");
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
