//! Snap sync (devp2p's snap/1): the state of a pivot block downloaded from peers range by
//! range, every range proven against the pivot's state root, its tries written as the ranges
//! arrive — instead of executing every block since genesis.
//!
//! The flow: [`SnapSync::run`] takes the sync recorded in the store, or starts one at the
//! given [`Pivot`] with the account hash space cut into chunks ([`tasks`]). Each peer that
//! speaks snap is given requests — a chunk's next account range, the storage of accounts the
//! ranges found, the codes they name — a few at a time. An answer is checked whole as it
//! arrives, on a blocking thread ([`verify`]: range proofs, slim accounts, code hashes), while
//! the loop writes what earlier answers proved; a wrong one gets its peer reported
//! and dropped and its work handed to the next peer; an empty one means that the peer no
//! longer holds the pivot's state, and it is asked again later. What a right one proves — the
//! flat state by trie key, and the trie nodes the range's proof check built
//! ([`gigagas_trie::verify_range_proof_nodes`]; with the root found, each is a node of the
//! pivot's trie, and the ranges that cover every leaf give every node, as geth's snap sync
//! writes them) — joins the tasks it finishes or adds in the pending checkpoint ([`pending`]),
//! written as a bulk load ([`gigagas_storage_api::HashedStateWriter::ingest_hashed`]: sorted
//! table files, then the progress) on a blocking thread once it holds
//! [`SnapSyncConfig::checkpoint_bytes`], while the loop goes on: a sync killed at any moment
//! resumes from its last checkpoint. When nothing is left the pivot's tries are whole;
//! [`finish`] then writes the pivot block as the store's head.

mod pending;
mod progress;
mod tasks;
mod verify;

pub use progress::{SnapPhase, SnapProgress, SnapProgressSnapshot};
pub use verify::SnapAnswerError;

use crate::client::{RequestError, SnapClient};
use alloy_primitives::{B256, U256};
use alloy_trie::{EMPTY_ROOT_HASH, KECCAK_EMPTY};
use futures::{stream::FuturesUnordered, StreamExt};
use gigagas_eth_wire_types::snap::{
    AccountRange, ByteCodes, GetAccountRange, GetByteCodes, GetStorageRanges, StorageRanges,
};
use gigagas_storage_api::{
    AccountRecord, HashedBatch, HashedStateReader, HashedStateWriter, MetadataProvider,
    ProviderError, RawBlock,
};
use gigagas_trie::EncodedNode;
use pending::Pending;
use progress::Counts;
use std::{
    collections::{HashMap, HashSet},
    future::Future,
    pin::Pin,
    sync::Arc,
    time::{Duration, Instant},
};
use tasks::{Chunk, StorageTask, Tasks};

/// The block whose state a snap sync downloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pivot {
    /// Block number.
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// Its header's state root.
    pub root: B256,
}

/// How a snap sync asks.
#[derive(Debug, Clone)]
pub struct SnapSyncConfig {
    /// The answer size asked for (bytes; servers cap it at 2 MiB).
    pub response_bytes: u64,
    /// Account chunks (parts of the hash space downloaded side by side; geth: 16).
    pub chunks: usize,
    /// Accounts whose storage one request asks for.
    pub storage_accounts_per_request: usize,
    /// Codes one request asks for.
    pub codes_per_request: usize,
    /// Requests out to one peer at once.
    pub requests_per_peer: usize,
    /// How long a peer that answered empty (it lacks the pivot's state) rests before it is
    /// asked again.
    pub lacking_rest: Duration,
    /// How long the sync goes on without any answer that helped (no peer, peers that fail
    /// or no longer hold the pivot's state) before it gives up.
    pub no_peer_timeout: Duration,
    /// Bytes of proven entries (keys and values) gathered before they are written as one bulk
    /// load with the progress they make: larger writes fewer, larger table files; a sync
    /// killed loses up to this much of its work.
    pub checkpoint_bytes: usize,
}

impl Default for SnapSyncConfig {
    fn default() -> Self {
        Self {
            response_bytes: 1 << 20,
            chunks: 16,
            storage_accounts_per_request: 128,
            codes_per_request: 128,
            requests_per_peer: 2,
            lacking_rest: Duration::from_secs(5),
            no_peer_timeout: Duration::from_secs(120),
            checkpoint_bytes: 64 << 20,
        }
    }
}

/// Why a snap sync stopped.
#[derive(Debug, thiserror::Error)]
pub enum SnapSyncError {
    /// The store failed.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// No peer served any of the pivot's state for the whole timeout.
    #[error("no peer served the state root {root} of block {number} for {waited:?}")]
    NoPeers {
        /// The pivot's state root.
        root: B256,
        /// The pivot's number.
        number: u64,
        /// How long the sync waited.
        waited: Duration,
    },
}

/// What a snap sync's store must do: write hashed state with its progress, read its record
/// back and tell which codes it holds.
pub trait SnapStore:
    HashedStateWriter + HashedStateReader + MetadataProvider + Send + Sync + 'static
{
}

impl<T: HashedStateWriter + HashedStateReader + MetadataProvider + Send + Sync + 'static> SnapStore
    for T
{
}

/// A request out to a peer.
#[derive(Debug, Clone)]
enum Request {
    Accounts { chunk: u8, origin: B256, last: B256 },
    Storage { accounts: Vec<(B256, B256)>, origin: B256 },
    Codes { hashes: Vec<B256> },
}

enum Answer {
    Accounts(AccountRange),
    Storage(StorageRanges),
    Codes(ByteCodes),
}

/// An answer checked against its request (on a blocking thread, while other answers arrive and
/// are written).
enum Checked {
    /// Empty: the peer lacks the pivot's state.
    Lacking,
    /// Wrong: the peer is dropped.
    Bad(SnapAnswerError),
    Accounts(verify::ProvenAccounts),
    Storage(Vec<verify::ProvenStorage>),
    Codes(Vec<(B256, alloy_primitives::Bytes)>),
}

type InFlight<P> =
    Pin<Box<dyn Future<Output = (P, Request, Result<Checked, RequestError>)> + Send>>;

/// One snap sync over a client and a store.
#[derive(Debug)]
pub struct SnapSync<C: SnapClient, S: SnapStore + ?Sized> {
    client: Arc<C>,
    store: Arc<S>,
    config: SnapSyncConfig,
    progress: Arc<SnapProgress>,
}

/// What the download cost: answers taken, checkpoints written, and the time the loop waited
/// for a checkpoint's write (answers are checked on blocking threads as they arrive, and
/// checkpoints written on another while the loop goes on).
#[derive(Debug, Default)]
struct DownloadStats {
    answers: u64,
    checkpoints: u64,
    writing: Duration,
}

/// The checkpoint being written, on a blocking thread.
type Writing = tokio::task::JoinHandle<Result<(), ProviderError>>;

/// What one answer did, for the peer's record.
enum Verdict {
    Applied,
    Lacking,
    Bad(SnapAnswerError),
}

impl<C: SnapClient, S: SnapStore + ?Sized> SnapSync<C, S> {
    /// A sync asking through `client`, writing to `store`.
    pub fn new(client: Arc<C>, store: Arc<S>, config: SnapSyncConfig) -> Self {
        Self { client, store, config, progress: Arc::default() }
    }

    /// The progress counters, for whoever reports them.
    pub fn progress(&self) -> Arc<SnapProgress> {
        self.progress.clone()
    }

    /// The pivot of the sync the store records, if any (a sync to resume).
    ///
    /// # Errors
    /// [`ProviderError`] when the store fails or its record is malformed.
    pub fn recorded_pivot(&self) -> Result<Option<Pivot>, ProviderError> {
        recorded_pivot(&*self.store)
    }

    /// Downloads the state of `pivot` (or of the pivot of the sync the store records, which is
    /// resumed) with its tries, every range proven against its root. Answers the pivot whose
    /// state the store now holds; [`finish`] makes it the head.
    ///
    /// # Errors
    /// [`SnapSyncError`]: the store failed, or no peer served the state.
    pub async fn run(&self, pivot: Pivot) -> Result<Pivot, SnapSyncError> {
        let (pivot, mut tasks, mut counts) = match Tasks::load(&*self.store)? {
            Some(recorded) => {
                tracing::info!(target: "sync::snap", number = recorded.0.number, root = %recorded.0.root, chunks = recorded.1.chunks.len(), storage = recorded.1.storage.len(), codes = recorded.1.codes.len(), "resuming snap sync");
                recorded
            }
            None => {
                let tasks = Tasks::fresh(self.config.chunks);
                let mut entries = tasks.entries();
                entries.push((tasks::PIVOT.to_vec(), tasks::pivot_value(&pivot)));
                entries.push((tasks::COUNTS.to_vec(), Counts::default().encode()));
                self.store
                    .write_hashed(&HashedBatch { meta_put: &entries, ..Default::default() })?;
                tracing::info!(target: "sync::snap", number = pivot.number, root = %pivot.root, "snap sync started");
                (pivot, tasks, Counts::default())
            }
        };
        self.progress.set_pivot(pivot.number);
        self.progress.set_counts(&counts);
        self.progress.set_phase(SnapPhase::Ranges);
        let ranges_started = Instant::now();
        let stats = self.download(&pivot, &mut tasks, &mut counts).await?;
        let ranges_secs = ranges_started.elapsed().as_secs_f64();
        self.progress.set_covered(1_000_000);
        self.progress.set_phase(SnapPhase::Done);
        tracing::info!(
            target: "sync::snap",
            number = pivot.number,
            root = %pivot.root,
            accounts = counts.accounts,
            slots = counts.slots,
            codes = counts.codes,
            requests = stats.answers,
            checkpoints = stats.checkpoints,
            ranges_secs,
            writing_secs = stats.writing.as_secs_f64(),
            "snap sync state complete"
        );
        Ok(pivot)
    }

    /// Every range, storage and code, from the peers.
    async fn download(
        &self,
        pivot: &Pivot,
        tasks: &mut Tasks,
        counts: &mut Counts,
    ) -> Result<DownloadStats, SnapSyncError> {
        let mut stats = DownloadStats::default();
        let mut in_flight: FuturesUnordered<InFlight<C::Peer>> = FuturesUnordered::new();
        let mut load: HashMap<C::Peer, usize> = HashMap::new();
        let mut lacking: HashMap<C::Peer, Instant> = HashMap::new();
        let mut bad: HashSet<C::Peer> = HashSet::new();
        let mut last_progress = Instant::now();
        let mut pending = Pending::default();
        let mut writing: Option<Writing> = None;
        loop {
            if tasks.is_empty() && in_flight.is_empty() {
                self.write_all(&mut pending, &mut writing, &mut stats).await?;
                return Ok(stats);
            }
            let now = Instant::now();
            lacking.retain(|_, since| now.duration_since(*since) < self.config.lacking_rest);
            for peer in self.client.snap_peers() {
                if bad.contains(&peer) || lacking.contains_key(&peer) {
                    continue;
                }
                while load.get(&peer).copied().unwrap_or(0) < self.config.requests_per_peer {
                    let Some(request) = self.next_request(tasks) else { break };
                    *load.entry(peer).or_default() += 1;
                    in_flight.push(self.send(peer, pivot.root, request));
                }
            }
            let waited = now.duration_since(last_progress);
            if waited > self.config.no_peer_timeout {
                // What was proven is kept for the next run.
                self.write_all(&mut pending, &mut writing, &mut stats).await?;
                return Err(SnapSyncError::NoPeers {
                    root: pivot.root,
                    number: pivot.number,
                    waited,
                });
            }
            if in_flight.is_empty() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            let Ok(Some((peer, request, result))) =
                tokio::time::timeout(Duration::from_secs(1), in_flight.next()).await
            else {
                continue;
            };
            if let Some(n) = load.get_mut(&peer) {
                *n = n.saturating_sub(1);
            }
            stats.answers += 1;
            let verdict = match result {
                Ok(checked) => self.apply(tasks, counts, &mut pending, &request, checked)?,
                Err(e) => {
                    tracing::debug!(target: "sync::snap", %peer, error = %e, "snap request failed");
                    Verdict::Lacking
                }
            };
            match verdict {
                Verdict::Applied => last_progress = Instant::now(),
                Verdict::Lacking => {
                    release(tasks, &request);
                    lacking.insert(peer, Instant::now());
                }
                Verdict::Bad(error) => {
                    release(tasks, &request);
                    if bad.insert(peer) {
                        tracing::warn!(target: "sync::snap", %peer, %error, "bad snap answer: peer dropped");
                        self.client.report_bad_snap_message(peer);
                    }
                }
            }
            self.progress.set_counts(counts);
            self.progress.set_covered(tasks.covered_ppm(self.config.chunks));
            if pending.bytes() >= self.config.checkpoint_bytes {
                self.checkpoint(&mut pending, &mut writing, &mut stats).await?;
            } else if writing.as_ref().is_some_and(|w| w.is_finished()) {
                settle(&mut writing, &mut stats).await?;
            }
        }
    }

    /// Starts writing what `pending` holds as a checkpoint, on a blocking thread, once the
    /// checkpoint before it is written (checkpoints are written in order, one at a time).
    async fn checkpoint(
        &self,
        pending: &mut Pending,
        writing: &mut Option<Writing>,
        stats: &mut DownloadStats,
    ) -> Result<(), ProviderError> {
        settle(writing, stats).await?;
        if pending.is_empty() {
            return Ok(());
        }
        let checkpoint = std::mem::take(pending);
        let store = self.store.clone();
        *writing = Some(tokio::task::spawn_blocking(move || checkpoint.write(&*store)));
        stats.checkpoints += 1;
        Ok(())
    }

    /// Writes what `pending` holds and waits until every checkpoint is written.
    async fn write_all(
        &self,
        pending: &mut Pending,
        writing: &mut Option<Writing>,
        stats: &mut DownloadStats,
    ) -> Result<(), ProviderError> {
        self.checkpoint(pending, writing, stats).await?;
        settle(writing, stats).await
    }

    /// The next request to make, its tasks marked busy: an account's storage continued, codes
    /// when enough are wanted, the storage of accounts found, the next account range, the last
    /// codes.
    fn next_request(&self, tasks: &mut Tasks) -> Option<Request> {
        if let Some((account, task)) =
            tasks.storage.iter_mut().find(|(_, t)| !t.busy && t.next != B256::ZERO)
        {
            task.busy = true;
            return Some(Request::Storage {
                accounts: vec![(*account, task.root)],
                origin: task.next,
            });
        }
        let idle_codes = tasks.codes.values().filter(|busy| !**busy).count();
        if idle_codes >= self.config.codes_per_request {
            return Some(take_codes(tasks, self.config.codes_per_request));
        }
        let fresh: Vec<(B256, B256)> = tasks
            .storage
            .iter_mut()
            .filter(|(_, t)| !t.busy)
            .take(self.config.storage_accounts_per_request)
            .map(|(account, t)| {
                t.busy = true;
                (*account, t.root)
            })
            .collect();
        if !fresh.is_empty() {
            return Some(Request::Storage { accounts: fresh, origin: B256::ZERO });
        }
        if let Some((i, chunk)) = tasks.chunks.iter_mut().find(|(_, c)| !c.busy) {
            chunk.busy = true;
            return Some(Request::Accounts { chunk: *i, origin: chunk.next, last: chunk.last });
        }
        (idle_codes > 0).then(|| take_codes(tasks, self.config.codes_per_request))
    }

    fn send(&self, peer: C::Peer, root: B256, request: Request) -> InFlight<C::Peer> {
        let client = self.client.clone();
        let bytes = self.config.response_bytes;
        Box::pin(async move {
            let result = match &request {
                Request::Accounts { origin, last, .. } => client
                    .get_account_range(
                        peer,
                        GetAccountRange {
                            request_id: 0,
                            root,
                            origin: *origin,
                            limit: *last,
                            bytes,
                        },
                    )
                    .await
                    .map(Answer::Accounts),
                Request::Storage { accounts, origin } => client
                    .get_storage_ranges(
                        peer,
                        GetStorageRanges {
                            request_id: 0,
                            root,
                            accounts: accounts.iter().map(|(a, _)| *a).collect(),
                            origin: if *origin == B256::ZERO {
                                Default::default()
                            } else {
                                origin.to_vec().into()
                            },
                            limit: Default::default(),
                            bytes,
                        },
                    )
                    .await
                    .map(Answer::Storage),
                Request::Codes { hashes } => client
                    .get_byte_codes(
                        peer,
                        GetByteCodes { request_id: 0, hashes: hashes.clone(), bytes },
                    )
                    .await
                    .map(Answer::Codes),
            };
            let (request, result) = match result {
                Ok(answer) => {
                    let (request, checked) = tokio::task::spawn_blocking(move || {
                        let checked = check(root, &request, answer);
                        (request, checked)
                    })
                    .await
                    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
                    (request, Ok(checked))
                }
                Err(e) => (request, Err(e)),
            };
            (peer, request, result)
        })
    }

    /// Writes what a checked answer proves with the progress it makes.
    fn apply(
        &self,
        tasks: &mut Tasks,
        counts: &mut Counts,
        pending: &mut Pending,
        request: &Request,
        checked: Checked,
    ) -> Result<Verdict, ProviderError> {
        match (request, checked) {
            (_, Checked::Lacking) => return Ok(Verdict::Lacking),
            (_, Checked::Bad(e)) => return Ok(Verdict::Bad(e)),
            (Request::Accounts { chunk, last, .. }, Checked::Accounts(proven)) => {
                self.apply_accounts(tasks, counts, pending, *chunk, *last, proven)?;
            }
            (Request::Storage { accounts, .. }, Checked::Storage(proven)) => {
                self.apply_storage(tasks, counts, pending, accounts, proven);
            }
            (Request::Codes { .. }, Checked::Codes(codes)) => {
                counts.codes += codes.len() as u64;
                counts.code_bytes += codes.iter().map(|(_, c)| c.len() as u64).sum::<u64>();
                for (hash, _) in &codes {
                    pending.delete(tasks::key(tasks::CODE, hash.as_slice()));
                    tasks.codes.remove(hash);
                    tasks.fetched_codes.insert(*hash);
                }
                pending.codes(codes);
                pending.counts(counts);
                release(tasks, request);
            }
            _ => unreachable!("each request's answer is checked as its own kind"),
        }
        Ok(Verdict::Applied)
    }

    fn apply_accounts(
        &self,
        tasks: &mut Tasks,
        counts: &mut Counts,
        pending: &mut Pending,
        chunk: u8,
        last: B256,
        proven: verify::ProvenAccounts,
    ) -> Result<(), ProviderError> {
        let in_chunk: Vec<_> = proven.accounts.iter().filter(|(h, _, _)| *h <= last).collect();
        let past_chunk = in_chunk.len() < proven.accounts.len();
        let reached = in_chunk.last().map(|(h, _, _)| *h);
        let done = !proven.more || past_chunk || reached == Some(last) || reached.is_none();
        let mut records = Vec::with_capacity(in_chunk.len());
        let mut meta_put = Vec::new();
        let mut new_storage = Vec::new();
        let mut new_codes = HashSet::new();
        for (hash, account, bytes) in &in_chunk {
            records.push((
                *hash,
                AccountRecord {
                    nonce: account.nonce,
                    balance: account.balance,
                    code_hash: account.code_hash,
                },
            ));
            counts.accounts += 1;
            counts.account_bytes += bytes;
            if account.storage_root != EMPTY_ROOT_HASH && !tasks.storage.contains_key(hash) {
                meta_put.push((
                    tasks::key(tasks::STORAGE, hash.as_slice()),
                    tasks::storage_value(&account.storage_root, &B256::ZERO),
                ));
                new_storage.push((*hash, account.storage_root));
            }
            // A code is fetched once: not when a task already holds it, nor when the store
            // does (fetched for an account before, or held before the sync began).
            if account.code_hash != KECCAK_EMPTY
                && !tasks.codes.contains_key(&account.code_hash)
                && !tasks.fetched_codes.contains(&account.code_hash)
                && !new_codes.contains(&account.code_hash)
                && !self.store.has_bytecode(&account.code_hash)?
            {
                meta_put.push((tasks::key(tasks::CODE, account.code_hash.as_slice()), Vec::new()));
                new_codes.insert(account.code_hash);
            }
        }
        let chunk_key = tasks::key(tasks::CHUNK, &[chunk]);
        let next =
            reached.map(|h| B256::from(U256::from_be_bytes(h.0).saturating_add(U256::from(1))));
        let mut meta_delete = Vec::new();
        let Some(current) = tasks.chunks.get(&chunk).copied() else { return Ok(()) };
        let advanced = next.map(|next| Chunk { next, busy: false, ..current });
        if done {
            meta_delete.push(chunk_key);
        } else if let Some(advanced) = &advanced {
            meta_put.push((chunk_key, tasks::chunk_value(advanced)));
        }
        self.progress.add_trie_nodes(proven.nodes.len() as u64);
        pending.accounts(records);
        pending.nodes(proven.nodes);
        pending.meta(meta_put, meta_delete);
        pending.counts(counts);
        if done {
            tasks.chunks.remove(&chunk);
        } else if let Some(advanced) = advanced {
            tasks.chunks.insert(chunk, advanced);
        }
        for (account, root) in new_storage {
            tasks.storage.insert(account, StorageTask { root, next: B256::ZERO, busy: false });
        }
        for code in new_codes {
            tasks.codes.insert(code, false);
        }
        Ok(())
    }

    fn apply_storage(
        &self,
        tasks: &mut Tasks,
        counts: &mut Counts,
        pending: &mut Pending,
        asked: &[(B256, B256)],
        mut proven: Vec<verify::ProvenStorage>,
    ) {
        let mut slots = Vec::new();
        let mut meta_put = Vec::new();
        let mut meta_delete = Vec::new();
        let mut continued = Vec::new();
        for account in &proven {
            for (slot, value, bytes) in &account.slots {
                slots.push((account.account, *slot, *value));
                counts.slots += 1;
                counts.storage_bytes += bytes;
            }
            let key = tasks::key(tasks::STORAGE, account.account.as_slice());
            let last = account.slots.last().map(|(s, _, _)| *s);
            match last.filter(|_| account.more) {
                Some(last) if last != B256::repeat_byte(0xff) => {
                    let next = B256::from(U256::from_be_bytes(last.0) + U256::from(1));
                    let root = tasks.storage.get(&account.account).map(|t| t.root);
                    if let Some(root) = root {
                        meta_put.push((key, tasks::storage_value(&root, &next)));
                        continued.push((account.account, next));
                    }
                }
                _ => meta_delete.push(key),
            }
        }
        let nodes: Vec<EncodedNode> =
            proven.iter_mut().flat_map(|account| std::mem::take(&mut account.nodes)).collect();
        self.progress.add_trie_nodes(nodes.len() as u64);
        pending.slots(slots);
        pending.nodes(nodes);
        pending.meta(meta_put, meta_delete);
        pending.counts(counts);
        let continued: HashMap<B256, B256> = continued.into_iter().collect();
        for account in &proven {
            match continued.get(&account.account) {
                Some(next) => {
                    if let Some(task) = tasks.storage.get_mut(&account.account) {
                        task.next = *next;
                        task.busy = false;
                    }
                }
                None => {
                    tasks.storage.remove(&account.account);
                }
            }
        }
        // Accounts the answer did not reach are asked again.
        for (account, _) in asked {
            if let Some(task) = tasks.storage.get_mut(account) {
                task.busy = false;
            }
        }
    }
}

/// Waits for the checkpoint being written, if any: the loop's time waiting is counted.
async fn settle(
    writing: &mut Option<Writing>,
    stats: &mut DownloadStats,
) -> Result<(), ProviderError> {
    let Some(handle) = writing.take() else { return Ok(()) };
    let waited = Instant::now();
    let written = match handle.await {
        Ok(written) => written,
        // A panic while writing is a bug: it goes on up.
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    };
    stats.writing += waited.elapsed();
    written
}

/// Up to `n` idle codes, marked busy.
fn take_codes(tasks: &mut Tasks, n: usize) -> Request {
    let hashes: Vec<B256> = tasks
        .codes
        .iter_mut()
        .filter(|(_, busy)| !**busy)
        .take(n)
        .map(|(hash, busy)| {
            *busy = true;
            *hash
        })
        .collect();
    Request::Codes { hashes }
}

/// Checks `answer` against `request` at state `root` (range proofs, slim accounts, code
/// hashes): what it proves, or why it proves nothing.
fn check(root: B256, request: &Request, answer: Answer) -> Checked {
    match (request, answer) {
        (Request::Accounts { origin, .. }, Answer::Accounts(answer)) => {
            if answer.accounts.is_empty() && answer.proof.is_empty() {
                return Checked::Lacking;
            }
            match verify::account_range(root, *origin, &answer) {
                Ok(proven) => Checked::Accounts(proven),
                Err(e) => Checked::Bad(e),
            }
        }
        (Request::Storage { accounts, origin }, Answer::Storage(answer)) => {
            if answer.slots.is_empty() && answer.proof.is_empty() {
                return Checked::Lacking;
            }
            match verify::storage_ranges(accounts, *origin, &answer) {
                Ok(proven) => Checked::Storage(proven),
                Err(e) => Checked::Bad(e),
            }
        }
        (Request::Codes { hashes }, Answer::Codes(answer)) => {
            if answer.codes.is_empty() {
                return Checked::Lacking;
            }
            match verify::byte_codes(hashes, &answer) {
                Ok(codes) => Checked::Codes(codes),
                Err(e) => Checked::Bad(e),
            }
        }
        _ => unreachable!("each request's future answers its own kind"),
    }
}

/// Marks a request's tasks idle again (to be asked of another peer).
fn release(tasks: &mut Tasks, request: &Request) {
    match request {
        Request::Accounts { chunk, .. } => {
            if let Some(c) = tasks.chunks.get_mut(chunk) {
                c.busy = false;
            }
        }
        Request::Storage { accounts, .. } => {
            for (account, _) in accounts {
                if let Some(t) = tasks.storage.get_mut(account) {
                    t.busy = false;
                }
            }
        }
        Request::Codes { hashes } => {
            for hash in hashes {
                if let Some(busy) = tasks.codes.get_mut(hash) {
                    *busy = false;
                }
            }
        }
    }
}

/// The pivot of the snap sync `store` records, if any (a sync to resume).
///
/// # Errors
/// [`ProviderError`] when the store fails or its record is malformed.
pub fn recorded_pivot<S: SnapStore + ?Sized>(store: &S) -> Result<Option<Pivot>, ProviderError> {
    Ok(Tasks::load(store)?.map(|(pivot, _, _)| pivot))
}

/// Makes the pivot the store's head once its state is whole: writes `blocks` (the pivot's and
/// the headers below it that execution reads: `BLOCKHASH` reaches 256 back) and the head, and
/// drops the sync's record, in one batch.
///
/// # Errors
/// [`ProviderError`] when the store fails.
pub fn finish<S: SnapStore + ?Sized>(
    store: &S,
    pivot: &Pivot,
    blocks: &[RawBlock<'_>],
) -> Result<(), ProviderError> {
    let record: Vec<Vec<u8>> =
        store.meta_with_prefix(tasks::PREFIX)?.into_iter().map(|(k, _)| k).collect();
    store.write_hashed(&HashedBatch {
        blocks,
        head: Some((pivot.number, pivot.hash)),
        meta_delete: &record,
        ..Default::default()
    })
}
