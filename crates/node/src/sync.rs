//! Sync in the node (the store serves peers' requests through the network's request handler,
//! `gigagas_net::request_handler`): a node whose
//! gossiped (or Engine API) block has an unknown parent fetches the missing ancestors from its
//! peers — headers by number, then bodies and BALs by hash — checks each answer against the
//! headers (a peer's wrong answer is the peer's fault, never a verdict on the block), and
//! imports them in order through the engine as `newPayload`s (the parallel executor runs with
//! the peers' BALs, checked against the header's BAL hash first), making each the head with
//! `--dev.follow`. A follower also asks its peers for their heads (eth/69 `Status`) and catches
//! up by itself ([`catch_up`]).

use crate::block::NetworkBlock;
use alloy_consensus::{
    proofs::{calculate_ommers_root, calculate_transaction_root, calculate_withdrawals_root},
    Block,
};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::B256;
use gigagas_engine::{message::ForkchoiceState, EngineError, EngineHandle, PayloadStatus};
use gigagas_net::{
    sync::{SyncRequest, SyncResponse},
    NetError, NetworkHandle, PeerId,
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
    /// No peer answered.
    #[error("no peer to sync from")]
    NoPeers,
    /// A request failed.
    #[error(transparent)]
    Network(#[from] NetError),
    /// A peer's answer does not fit what was asked (wrong chain, body not matching its header).
    #[error("peer {peer}: {reason}")]
    BadAnswer {
        /// The peer.
        peer: PeerId,
        /// What is wrong.
        reason: String,
    },
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

/// The node's sync: one at a time (the gossip importer and the Engine API's SYNCING both ask
/// for it), remembering the last block it imported so that a second request goes on from there.
#[derive(Debug)]
pub(crate) struct Syncer {
    engine: EngineHandle,
    network: NetworkHandle,
    follow: bool,
    /// The last block sync imported (number, hash).
    cursor: tokio::sync::Mutex<(u64, B256)>,
}

impl Syncer {
    /// A syncer over `engine` and `network`; with `follow`, synced blocks become the head.
    pub(crate) fn new(engine: EngineHandle, network: NetworkHandle, follow: bool) -> Arc<Self> {
        let head = engine.forkchoice().head;
        Arc::new(Self { engine, network, follow, cursor: tokio::sync::Mutex::new(head) })
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
        let (engine, network) = (&self.engine, &self.network);
        let mut cursor = self.cursor.lock().await;
        let start = Instant::now();
        let mut imported = 0u64;
        let mut failures = 0usize;
        // Where the time went: waiting for blocks (fetches not hidden behind an import),
        // `newPayload`s, forkchoice updates (the commits).
        let (mut fetching, mut importing, mut committing) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let engine_head = engine.forkchoice().head;
        if engine_head.0 >= cursor.0 {
            *cursor = engine_head;
        }
        // The next round's blocks, being fetched while a round is imported.
        let mut prefetch: Option<tokio::task::JoinHandle<(PeerId, Fetched)>> = None;
        loop {
            let (head, head_hash) = *cursor;
            if head + 1 >= target_number {
                break;
            }
            let peers: Vec<PeerId> = network.peers().into_iter().collect();
            if peers.is_empty() || failures >= 3 * peers.len().max(1) {
                return Err(SyncError::NoPeers);
            }
            let started = Instant::now();
            let (peer, fetched) = match prefetch.take() {
                Some(task) => match task.await {
                    Ok(answer) => answer,
                    Err(e) => (peers[0], Err(SyncError::Task(e.to_string()))),
                },
                None => {
                    let peer = peers[(head as usize + failures) % peers.len()];
                    let count = (target_number - 1 - head).min(HEADERS_PER_REQUEST);
                    (peer, fetch(network, peer, head + 1, head_hash, count).await)
                }
            };
            fetching += started.elapsed();
            let blocks = match fetched {
                Ok(blocks)
                    if blocks.first().is_some_and(|b| {
                        b.block.header.number == head + 1 && b.block.header.parent_hash == head_hash
                    }) =>
                {
                    blocks
                }
                Ok(_) => {
                    failures += 1;
                    continue;
                }
                Err(e) => {
                    tracing::debug!(target: "net", %peer, error = %e, "sync request failed");
                    failures += 1;
                    continue;
                }
            };
            failures = 0;
            let hashes: Vec<(u64, B256)> = blocks
                .iter()
                .map(|b| (b.block.header.number, b.block.header.hash_slow()))
                .collect();
            let (last_number, last_hash) = *hashes.last().expect("a non-empty round");
            if last_number + 1 < target_number {
                let (network, count) =
                    (network.clone(), (target_number - 1 - last_number).min(HEADERS_PER_REQUEST));
                let next_peer = peers[last_number as usize % peers.len()];
                prefetch = Some(tokio::spawn(async move {
                    let fetched =
                        fetch(&network, next_peer, last_number + 1, last_hash, count).await;
                    (next_peer, fetched)
                }));
            }
            let started = Instant::now();
            // With `follow`, each block is committed and made the head as it is found VALID.
            let payloads = blocks.into_iter().map(NetworkBlock::into_new_payload).collect();
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

/// A round of fetched blocks, or why there is none.
type Fetched = Result<Vec<NetworkBlock>, SyncError>;

/// Up to `count` blocks from `first` on, from `peer`, each checked against its header and the
/// chain checked to start on `parent`.
async fn fetch(
    network: &NetworkHandle,
    peer: PeerId,
    first: u64,
    parent: B256,
    count: u64,
) -> Result<Vec<NetworkBlock>, SyncError> {
    let bad = |reason: String| SyncError::BadAnswer { peer, reason };
    let request = SyncRequest::GetBlockHeaders {
        start: HashOrNumber::Number(first),
        limit: count,
        skip: 0,
        reverse: false,
    };
    let SyncResponse::BlockHeaders(headers) = network.request(peer, request).await? else {
        return Err(bad("answered headers with another message".into()));
    };
    let mut expected_parent = parent;
    let mut hashes = Vec::with_capacity(headers.len());
    for (i, header) in headers.iter().enumerate() {
        if header.number != first + i as u64 || header.parent_hash != expected_parent {
            return Err(bad(format!("header {} does not extend the chain", header.number)));
        }
        expected_parent = header.hash_slow();
        hashes.push(expected_parent);
    }
    let mut bodies = Vec::with_capacity(hashes.len());
    while bodies.len() < hashes.len() {
        let SyncResponse::BlockBodies(more) = network
            .request(peer, SyncRequest::GetBlockBodies(hashes[bodies.len()..].to_vec()))
            .await?
        else {
            return Err(bad("answered bodies with another message".into()));
        };
        if more.is_empty() {
            break;
        }
        bodies.extend(more);
    }
    let bals = match network.request(peer, SyncRequest::GetBlockAccessLists(hashes.clone())).await?
    {
        SyncResponse::BlockAccessLists(bals) => bals,
        _ => return Err(bad("answered BALs with another message".into())),
    };
    let mut blocks = Vec::with_capacity(bodies.len());
    for (i, (header, body)) in headers.into_iter().zip(bodies).enumerate() {
        if calculate_transaction_root(&body.transactions) != header.transactions_root
            || calculate_ommers_root(&body.ommers) != header.ommers_hash
            || body.withdrawals.as_ref().map(|w| calculate_withdrawals_root(w))
                != header.withdrawals_root
        {
            return Err(bad(format!("body of block {} does not match its header", header.number)));
        }
        // A BAL whose hash is not the header's is dropped (the block then runs sequentially);
        // before Amsterdam there is no hash to check and the executor validates the hints.
        let bal = bals.get(i).cloned().flatten().filter(|bal| {
            header
                .block_access_list_hash
                .is_none_or(|h| gigagas_bal::compute_block_access_list_hash(bal) == h)
        });
        blocks.push(NetworkBlock { block: Block { header, body }, bal });
    }
    Ok(blocks)
}

/// Syncs whenever the engine answers a payload SYNCING (a consensus client sent a block whose
/// parent this node lacks): fetches the ancestors and the block itself from peers, so that the
/// consensus client's next `newPayload` / `forkchoiceUpdated` finds them.
pub(crate) async fn sync_on_syncing(engine: EngineHandle, syncer: Arc<Syncer>) {
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
pub(crate) async fn catch_up(syncer: Arc<Syncer>, genesis: B256) {
    let mut interval = tokio::time::interval(CATCH_UP_INTERVAL);
    let mut last_head = u64::MAX;
    let mut stalled = 0u32;
    let mut round = 0usize;
    loop {
        interval.tick().await;
        let head = syncer.engine.forkchoice().head.0;
        let peers: Vec<PeerId> = syncer.network.peers().into_iter().collect();
        let mut best: Option<u64> = None;
        for i in 0..peers.len().min(CATCH_UP_PEERS) {
            let peer = peers[(round * CATCH_UP_PEERS + i) % peers.len()];
            if let Ok(SyncResponse::Status(Some(status))) =
                syncer.network.request(peer, SyncRequest::Status).await
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
