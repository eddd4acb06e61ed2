//! `--syncmode snap`: a node with no chain yet joins at a recent block's state instead of
//! executing every block since genesis.
//!
//! The flow: the target is the consensus client's head (the first forkchoice update the
//! engine could not follow) or `--debug.tip`; its header comes from a peer; the pivot is the
//! block [`PIVOT_DISTANCE`] below it (geth's choice), or the pivot of a snap sync the store
//! records (resumed after a restart). The headers from [`ANCESTORS`] below the pivot up to the
//! target are fetched back from the target, each the parent of the next.
//! `gigagas_net_p2p::snap_sync` downloads the pivot's state and checks its root; the pivot and
//! its ancestors — the history kept: headers, bodies checked against them, receipts checked
//! against their receipts roots; nothing older — are written with the pivot as the head. With
//! `--snap.catch-up bal` (the default) the blocks after the pivot are then applied from their
//! BALs (bodies, BALs and receipts from the peers, [`gigagas_validation::apply_bal_block`]),
//! [`CATCH_UP_BATCH`] at a time, each committed with its state; the engine takes the head
//! reached, and full sync executes whatever is left (a block without a BAL, one whose BAL does
//! not give its root, and those after it; with `--snap.catch-up execute`, all of them).

use crate::CatchUp;
use alloy_consensus::{Header, ReceiptEnvelope, TxEnvelope};
use alloy_eips::eip1898::HashOrNumber;
use alloy_primitives::{B256, U64};
use gigagas_devp2p::Devp2pNetwork;
use gigagas_engine::EngineHandle;
use gigagas_net_p2p::{
    snap_sync::{
        finish, recorded_pivot, Pivot, SnapPhase, SnapProgress, SnapSync, SnapSyncConfig,
        SnapSyncError,
    },
    BlockClient, BlockDownloader, DownloadError, DownloadedBlock, DownloaderConfig,
};
use gigagas_rpc::syncing::{SyncProgress, SyncStatusSource};
use gigagas_storage::Storage;
use gigagas_storage::{BlockNumReader, HashedStateWriter, RawBlock};
use gigagas_validation::{apply_bal_block, BalBlock};
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// How far below the target the pivot is (geth's `fsMinFullBlocks`): the blocks above it are
/// executed, so a reorg of the recent blocks never reaches below the state downloaded.
pub(crate) const PIVOT_DISTANCE: u64 = 64;
/// Headers kept below the pivot: `BLOCKHASH` reads up to 256 back.
pub(crate) const ANCESTORS: u64 = 256;
/// Blocks whose bodies, BALs and receipts are fetched at once in the catch-up on BALs.
pub(crate) const CATCH_UP_BATCH: usize = 128;
/// How often the progress line is logged.
const PROGRESS_EVERY: Duration = Duration::from_secs(8);

/// Why snap sync stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SnapError {
    /// Headers or the pivot's body could not be had.
    #[error(transparent)]
    Download(#[from] DownloadError),
    /// The state download failed.
    #[error(transparent)]
    Snap(#[from] SnapSyncError),
    /// The store failed.
    #[error(transparent)]
    Provider(#[from] gigagas_storage::ProviderError),
    /// The engine did not take the head.
    #[error("the engine did not take the synced head: {0}")]
    Engine(#[from] gigagas_engine::EngineError),
    /// The chain fetched back does not hold the pivot.
    #[error("the chain back from {0} does not hold the pivot's header")]
    NoPivotHeader(B256),
    /// Applying a block from its BAL failed inside the node (the store, a missing trie node).
    #[error("catching up on BALs: {0}")]
    CatchUp(#[source] gigagas_validation::ImportError),
    /// The catch-up's blocking task died.
    #[error("the catch-up task stopped: {0}")]
    CatchUpTask(#[from] tokio::task::JoinError),
}

/// What `eth_syncing` reports from the moment the target is known until the head reaches it:
/// the blocks (start, current, target) and the snap counters.
#[derive(Debug)]
pub(crate) struct SnapStatus {
    engine: EngineHandle,
    /// The store: its head moves ahead of the engine's while the catch-up applies BALs.
    store: Arc<Storage>,
    progress: Mutex<Option<Arc<SnapProgress>>>,
    /// (starting, highest) block.
    blocks: Mutex<Option<(u64, u64)>>,
}

impl SnapStatus {
    pub(crate) fn new(engine: EngineHandle, store: Arc<Storage>) -> Self {
        Self { engine, store, progress: Mutex::default(), blocks: Mutex::default() }
    }
}

impl SyncStatusSource for SnapStatus {
    fn progress(&self) -> Option<SyncProgress> {
        let (starting, highest) = (*self.blocks.lock().expect("lock"))?;
        let snap = self.progress.lock().expect("lock").as_ref().map(|p| p.snapshot());
        let snap = snap.unwrap_or_default();
        // The engine's head, or the store's while the catch-up commits blocks beside the
        // engine (a failed read counts as no progress).
        let stored = self.store.best_block().ok().flatten().map_or(0, |(n, _)| n);
        let head = self.engine.forkchoice().head.0.max(stored);
        if snap.phase == SnapPhase::Done && head >= highest {
            return None;
        }
        let current = if snap.phase == SnapPhase::Done { head } else { starting };
        Some(SyncProgress {
            starting_block: U64::from(starting),
            current_block: U64::from(current),
            highest_block: U64::from(highest),
            synced_accounts: U64::from(snap.accounts),
            synced_account_bytes: U64::from(snap.account_bytes),
            synced_bytecodes: U64::from(snap.codes),
            synced_bytecode_bytes: U64::from(snap.code_bytes),
            synced_storage: U64::from(snap.slots),
            synced_storage_bytes: U64::from(snap.storage_bytes),
            trie_gen_progress: U64::from(snap.trie_nodes),
            ..Default::default()
        })
    }
}

/// Whether the node should snap sync: nothing executed yet (the head is genesis) or a snap
/// sync recorded in the store.
pub(crate) fn wanted(store: &Storage) -> Result<bool, gigagas_storage::ProviderError> {
    let recorded = recorded_pivot(store)?.is_some();
    Ok(recorded || store.best_block()?.is_none_or(|(n, _)| n == 0))
}

/// The header of block `hash`, from the first peer that has it (waiting for one).
async fn header_from_peers(network: &Devp2pNetwork, hash: B256) -> Header {
    let mut waited = 0u32;
    loop {
        for peer in network.peers() {
            if let Ok(headers) = network.get_headers(peer, HashOrNumber::Hash(hash), 1, false).await
            {
                if let Some(h) = headers.into_iter().next().filter(|h| h.hash_slow() == hash) {
                    return h;
                }
            }
        }
        if waited.is_multiple_of(20) {
            tracing::info!(target: "sync::snap", %hash, peers = network.peers().len(), "waiting for a peer with the target");
        }
        waited += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The target: `--debug.tip`, or the first head the consensus client names that the engine
/// lacks.
async fn target(engine: &EngineHandle, tip: Option<B256>) -> Option<B256> {
    if tip.is_some() {
        return tip;
    }
    let mut syncing = engine.subscribe_syncing();
    loop {
        if let Some(target) = *syncing.borrow_and_update() {
            return Some(target.hash);
        }
        syncing.changed().await.ok()?;
    }
}

/// Runs snap sync to the pivot below the target and makes the pivot the engine's head;
/// answers the target (for the full sync that follows), `None` when the chain is too short
/// to snap (full sync does it all).
pub(crate) async fn snap_sync(
    network: Devp2pNetwork,
    engine: EngineHandle,
    store: Arc<Storage>,
    tip: Option<B256>,
    status: Arc<SnapStatus>,
    config: SnapSyncConfig,
    catch_up: CatchUp,
) -> Result<Option<B256>, SnapError> {
    let sync = SnapSync::new(Arc::new(network.clone()), store.clone(), config);
    *status.progress.lock().expect("lock") = Some(sync.progress());
    // The engine stands aside from the start (a recorded sync has already rewritten part of
    // the store's state): SYNCING to the consensus client, the head's state read through its
    // trie by every reader.
    engine.backfill_sync_started().await?;
    let Some(target_hash) = target(&engine, tip).await else { return Ok(None) };
    let target = header_from_peers(&network, target_hash).await;
    // A recorded sync is resumed at its pivot; a new one starts PIVOT_DISTANCE below the
    // target.
    let recorded = recorded_pivot(&*store)?;
    let pivot_number = match &recorded {
        Some(recorded) => recorded.number,
        None if target.number <= PIVOT_DISTANCE => {
            tracing::info!(target: "sync::snap", target = target.number, "chain too short for snap sync: full sync");
            engine.backfill_sync_finished().await?;
            return Ok(Some(target_hash));
        }
        None => target.number - PIVOT_DISTANCE,
    };
    let started = Instant::now();
    *status.blocks.lock().expect("lock") = Some((0, target.number));
    let downloader = BlockDownloader::new(network.clone(), DownloaderConfig::default());
    // The chain back from the target to ANCESTORS below the pivot, each header the parent of
    // the one after it; a recorded pivot must be on it (or, after a reorg below it, the chain
    // back from the recorded pivot is taken, and the blocks above are left to full sync).
    let low = pivot_number.saturating_sub(ANCESTORS).max(1);
    let is_pivot = |h: &Header| {
        h.number == pivot_number && recorded.as_ref().is_none_or(|r| h.hash_slow() == r.hash)
    };
    let span = target.number.saturating_sub(low) + 2;
    let mut headers =
        downloader.download_headers_back(target_hash, |n, _| n + 1 == low, span).await?;
    if let (Some(recorded), false) = (&recorded, headers.iter().any(is_pivot)) {
        tracing::warn!(target: "sync::snap", pivot = recorded.number, "the recorded pivot is not below the target: resuming it alone");
        headers = downloader
            .download_headers_back(recorded.hash, |n, _| n + 1 == low, ANCESTORS + 2)
            .await?;
    }
    let pivot_header = headers
        .iter()
        .find(|h| is_pivot(h))
        .cloned()
        .ok_or(SnapError::NoPivotHeader(target_hash))?;
    let pivot = Pivot {
        number: pivot_header.number,
        hash: pivot_header.hash_slow(),
        root: pivot_header.state_root,
    };
    // The history kept: the pivot and the ANCESTORS blocks below it whole — bodies checked
    // against their headers, receipts against their receipts roots —, older blocks not at
    // all (as a node with history expiry). Fetched beside the state, as the first blocks the
    // catch-up applies: neither needs the state.
    let below: Vec<Header> = headers.iter().filter(|h| h.number <= pivot.number).cloned().collect();
    let above: Vec<Header> = headers.into_iter().filter(|h| h.number > pivot.number).collect();
    let history = async {
        let bodies = downloader.download_bodies(below.clone()).await?;
        let receipts = downloader.download_receipts(&below).await?;
        Ok::<_, SnapError>((bodies, receipts))
    };
    let first_batch = &above[..above.len().min(CATCH_UP_BATCH)];
    let prefetch = async {
        match catch_up {
            CatchUp::Bal => fetch_batch(&downloader, first_batch).await.map(Some),
            CatchUp::Execute => Ok(None),
        }
    };
    // The state's table files are merged once the catch-up is done (`set_bulk_load`): the
    // merge would take the cores the catch-up needs.
    let bulk_load = BulkLoad::start(&store)?;
    let progress_line = tokio::spawn(log_progress(sync.progress(), started));
    let (synced, history, prefetched) = tokio::join!(sync.run(pivot), history, prefetch);
    progress_line.abort();
    let pivot = synced?;
    let (bodies, receipts) = history?;
    let encoded: Vec<EncodedBlock> = bodies
        .iter()
        .zip(receipts)
        .map(|(b, receipts)| EncodedBlock {
            header: alloy_rlp::encode(&b.block.header),
            body: alloy_rlp::encode(&b.block.body),
            receipts: alloy_rlp::encode(receipts),
            tx_hashes: b.block.body.transactions.iter().map(TxEnvelope::tx_hash).copied().collect(),
        })
        .collect();
    let blocks: Vec<RawBlock<'_>> = bodies
        .iter()
        .zip(&encoded)
        .map(|(b, e)| RawBlock {
            number: b.block.header.number,
            hash: b.block.header.hash_slow(),
            header: &e.header,
            body: Some(&e.body),
            receipts: Some(&e.receipts),
            tx_hashes: &e.tx_hashes,
        })
        .collect();
    finish(&*store, &pivot, &blocks)?;
    let snapshot = sync.progress().snapshot();
    tracing::info!(
        target: "sync::snap",
        pivot = pivot.number,
        accounts = snapshot.accounts,
        slots = snapshot.slots,
        codes = snapshot.codes,
        bytes = snapshot.account_bytes + snapshot.storage_bytes + snapshot.code_bytes,
        secs = started.elapsed().as_secs_f64(),
        "snap sync state done"
    );
    if let Some(first) = prefetched? {
        catch_up_on_bals(&downloader, &store, &above, first).await?;
    }
    drop(bulk_load);
    // The merge runs beside the node from here; when it ends is logged, as what the load
    // left to do.
    let merging = store.clone();
    tokio::task::spawn_blocking(move || {
        let merge_started = Instant::now();
        match merging.wait_for_compactions() {
            Ok(()) => {
                tracing::info!(target: "sync::snap", secs = merge_started.elapsed().as_secs_f64(), "the state's table files merged")
            }
            Err(e) => {
                tracing::warn!(target: "sync::snap", error = %e, "waiting for the state's merge failed")
            }
        }
    });
    let head = engine.backfill_sync_finished().await?;
    tracing::info!(
        target: "sync::snap",
        head = head.0,
        target = target.number,
        secs = started.elapsed().as_secs_f64(),
        "snap sync done: the engine follows from the head"
    );
    Ok(Some(target_hash))
}

/// The store's bulk load of the state (`HashedStateWriter::set_bulk_load`), ended when this
/// is dropped, on every path out of the sync.
struct BulkLoad<'a>(&'a Storage);

impl<'a> BulkLoad<'a> {
    fn start(store: &'a Storage) -> Result<Self, gigagas_storage::ProviderError> {
        store.set_bulk_load(true)?;
        Ok(Self(store))
    }
}

impl Drop for BulkLoad<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.0.set_bulk_load(false) {
            tracing::error!(target: "sync::snap", error = %e, "the store's compactions could not be turned back on");
        }
    }
}

/// A block of the history kept, encoded for the store.
struct EncodedBlock {
    header: Vec<u8>,
    body: Vec<u8>,
    receipts: Vec<u8>,
    tx_hashes: Vec<B256>,
}

/// A batch of the blocks the catch-up applies: bodies with their BALs, and the receipts of
/// those up to the first without a BAL.
struct Fetched {
    blocks: Vec<DownloadedBlock>,
    receipts: Vec<Vec<ReceiptEnvelope>>,
}

/// The bodies, BALs and receipts of `batch` from the peers, each checked against its header.
async fn fetch_batch(
    downloader: &BlockDownloader<Devp2pNetwork>,
    batch: &[Header],
) -> Result<Fetched, SnapError> {
    let blocks = downloader.download_bodies(batch.to_vec()).await?;
    let with_bal = blocks.iter().take_while(|b| b.bal.is_some()).count();
    let receipts = downloader.download_receipts(&batch[..with_bal]).await?;
    Ok(Fetched { blocks, receipts })
}

/// Applies the blocks of `headers` (the chain above the stored head, ascending) from their
/// BALs, [`CATCH_UP_BATCH`] at a time — the first batch already fetched (`first`, fetched
/// beside the state), each next one fetched from the peers —, each block committed with its
/// state. Stops at the first block without a BAL or whose BAL does not give its header's
/// state root (execution takes it from there); answers the blocks applied.
///
/// # Errors
/// [`SnapError::Download`] when the peers stop delivering; [`SnapError::CatchUp`] when the
/// store fails or a trie node is missing.
async fn catch_up_on_bals(
    downloader: &BlockDownloader<Devp2pNetwork>,
    store: &Arc<Storage>,
    headers: &[Header],
    first: Fetched,
) -> Result<u64, SnapError> {
    let started = Instant::now();
    let (mut applied, mut gas) = (0u64, 0u64);
    let mut first = Some(first);
    for batch in headers.chunks(CATCH_UP_BATCH) {
        let Fetched { blocks, receipts } = match first.take() {
            Some(fetched) => fetched,
            None => fetch_batch(downloader, batch).await?,
        };
        let with_bal = receipts.len();
        let store = store.clone();
        let (done, block_gas, stopped) = tokio::task::spawn_blocking(move || {
            let (mut done, mut gas) = (0u64, 0u64);
            for (b, receipts) in blocks.iter().zip(&receipts) {
                let Some(bal) = &b.bal else { break };
                let header = &b.block.header;
                let block = BalBlock {
                    header,
                    hash: header.hash_slow(),
                    body: &b.block.body,
                    bal,
                    receipts,
                };
                match apply_bal_block(&store, block) {
                    Ok(_) => {
                        done += 1;
                        gas += header.gas_used;
                    }
                    Err(e) if e.is_internal() => return Err(SnapError::CatchUp(e)),
                    // The block is left to execution, which gives its verdict.
                    Err(e) => {
                        tracing::warn!(target: "sync::snap", block = header.number, error = %e, "a block's BAL does not apply: executing from it");
                        return Ok((done, gas, true));
                    }
                }
            }
            Ok((done, gas, with_bal < blocks.len()))
        })
        .await??;
        applied += done;
        gas += block_gas;
        tracing::info!(
            target: "sync::snap",
            blocks = applied,
            head = batch.first().map_or(0, |h| h.number) + done.saturating_sub(1),
            mgas = gas as f64 / 1e6,
            secs = started.elapsed().as_secs_f64(),
            "caught up on BALs"
        );
        if stopped {
            break;
        }
    }
    Ok(applied)
}

/// Logs the progress line every [`PROGRESS_EVERY`]: accounts, slots, codes, bytes, rate, the
/// share of the account space done and the time left at the rate so far.
async fn log_progress(progress: Arc<SnapProgress>, started: Instant) {
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let p = progress.snapshot();
        let bytes = p.account_bytes + p.storage_bytes + p.code_bytes;
        let secs = started.elapsed().as_secs_f64().max(1e-3);
        let done = p.covered_ppm as f64 / 1e4;
        let eta = if p.covered_ppm > 0 {
            secs * (1e6 - p.covered_ppm as f64) / p.covered_ppm as f64
        } else {
            f64::NAN
        };
        tracing::info!(
            target: "sync::snap",
            phase = ?p.phase,
            accounts = p.accounts,
            slots = p.slots,
            codes = p.codes,
            downloaded = %format!("{:.1} MiB", bytes as f64 / 1048576.0),
            rate = %format!("{:.2} MiB/s", bytes as f64 / 1048576.0 / secs),
            done = %format!("{done:.1} %"),
            eta = %format!("{eta:.0} s"),
            trie_nodes = p.trie_nodes,
            "snap sync"
        );
    }
}
