//! The engine tree: payloads executed on any known parent (`engine_newPayload`), fork choice
//! with reorgs (`engine_forkchoiceUpdated`), and the state a payload is built on.
//!
//! The engine service owns the tree by value; every operation that changes it takes
//! `&mut self` (the Engine API is sequential), and reads its fixed parts ([`context`]: store,
//! chain, executor pool, persistence) beside its mutable state ([`state`]: executed blocks,
//! invalid payloads, forkchoice). One file per concern: payloads and their verdicts
//! ([`payload`]), fork choice and its one error ([`forkchoice`]), the unwind of a reorg
//! ([`unwind`]), chains of payloads with overlapping roots ([`backfill`]), background commits
//! (`persistence.rs`), the trie's pruning behind the committed head ([`pruner`]), the
//! invalid-payload cache ([`invalid_headers`]) and the blocks waiting
//! for their parent ([`block_buffer`]).
//!
//! Executed blocks wait in memory until a forkchoice update makes them canonical; then they
//! are committed to the store in order (each block atomically): before the update returns, or
//! with background persistence ([`BlockTree::with_background_persistence`], reth's design) by
//! a thread of their own while the next payloads execute on them from memory. A forkchoice
//! update to a block on another branch first unwinds the store to the common ancestor.
//! Executed blocks stay in memory for [`KEEP_BLOCKS`] blocks below the head, so a later
//! forkchoice update can switch back to them without re-execution. With background
//! persistence the store's head trails the tree's: the canonical blocks not yet committed stay
//! layers over the store (the store moves only along them, so reading it under their diffs
//! gives the same values before and after each commit); a reorg, a backfill and shutdown first
//! wait until the store holds what was queued.

use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_primitives::{Address, B256};
use gigagas_bal::BlockAccessList;
use gigagas_chain_state::CanonicalInMemoryState;
use gigagas_payload::{BuiltPayload, PayloadAttributes};
use gigagas_primitives::ChainSpec;
use gigagas_state::StateSource;
use gigagas_storage_api::{FullProvider, ProviderError};
use gigagas_trie::PreservedTrie;
use gigagas_validation::{stored_chain_spec, ImportError, ImportedBlock};
use std::sync::Arc;

pub mod backfill;
pub mod block_buffer;
mod config;
mod context;
pub mod forkchoice;
pub mod invalid_headers;
pub mod payload;
mod persistence;
pub mod pruner;
pub mod state;
pub mod unwind;

pub use backfill::{BackfillPayload, Backfilled, Verdict};
pub use config::TreeConfig;
use context::{SourceLayer, TreeContext};
pub use forkchoice::ForkchoiceError;
pub use gigagas_engine_primitives::{
    CanonicalChange, Forkchoice, InvalidForkchoice, PayloadStatus,
};
pub use payload::PayloadJob;
use persistence::Persistence;
use pruner::Pruner;
pub use pruner::TriePruneConfig;
use state::TreeState;

/// Executed blocks kept in memory below the head (reorgs within this depth switch branches
/// without re-executing).
pub const KEEP_BLOCKS: u64 = 64;

/// The engine tree over a store. See the module documentation.
#[derive(Debug)]
pub struct BlockTree {
    /// What blocks are executed, rooted and stored with (fixed once built).
    ctx: TreeContext,
    /// What the tree knows beyond the store.
    state: TreeState,
    /// A sync is rewriting the store's state beside the engine (snap sync): payloads and
    /// forkchoice updates are answered SYNCING, nothing executes on the store, readers read
    /// the head's state through its trie (reth's backfill sync state).
    backfill: bool,
    /// Prunes the trie behind the store's head (`config.prune`); `None`: never.
    pruner: Option<Pruner>,
}

impl BlockTree {
    /// A tree over `store` (initialized), whose parallel executor runs on a pool of `threads`
    /// workers built here once and reused for every payload; head, safe and finalized start at
    /// the stored head.
    ///
    /// # Errors
    /// [`ImportError::NotInitialized`] for an empty store, [`ImportError::Storage`],
    /// [`ImportError::ExecutorPool`] when the workers cannot be started.
    pub fn new(store: Arc<dyn FullProvider>, threads: usize) -> Result<Self, ImportError> {
        Self::with_config(store, TreeConfig::new(threads))
    }

    /// A tree over `store` (initialized) with `config`: its executor pool of `config.threads`
    /// workers built here once; head, safe and finalized at the stored head.
    ///
    /// # Errors
    /// As [`Self::new`].
    pub fn with_config(
        store: Arc<dyn FullProvider>,
        config: TreeConfig,
    ) -> Result<Self, ImportError> {
        let chain = stored_chain_spec(&*store)?;
        let head = store.best_block()?.ok_or(ImportError::NotInitialized)?;
        let pruner = config.prune.map(|c| Pruner::new(store.clone(), c)).transpose()?;
        let ctx = TreeContext {
            store,
            chain,
            pool: gigagas_executor::parallel::executor_pool(config.threads)?,
            beside: beside_pool()?,
            // The BAL's own I/O workers (`TreeConfig::io_depth`).
            io: named_pool(config.io_depth, "bal-io")?,
            preserved: preserved_trie(&config)?,
            config,
            source_layer: None,
            persistence: None,
            memory: CanonicalInMemoryState::new(head),
            known_senders: None,
        };
        Ok(Self { ctx, state: TreeState::new(head), backfill: false, pruner })
    }

    /// The same tree committing canonical blocks on a background thread (`on`, reth's
    /// persistence service; the node's default) or before each forkchoice update returns (the
    /// tree's default) — `--engine.persistence-background`. In the background, the store
    /// ([`Self::persisted_forkchoice`]) trails the forkchoice by the blocks being committed;
    /// payloads execute on them from memory meanwhile, and readers find them in
    /// [`Self::canonical_in_memory_state`]. Given the node's `tasks`, the thread is critical:
    /// its panic shuts the node down.
    ///
    /// # Errors
    /// The OS error when the thread cannot be started.
    pub fn with_background_persistence(
        mut self,
        on: bool,
        tasks: Option<&gigagas_tasks::TaskExecutor>,
    ) -> std::io::Result<Self> {
        self.ctx.persistence = match on {
            true => Some(Persistence::spawn(self.ctx.store.clone(), tasks)?),
            false => None,
        };
        Ok(self)
    }

    /// Calls `notify` after each block the background persistence committed (or failed to),
    /// on the persistence thread: the engine task then takes the figures with
    /// [`Self::take_persisted`]. Nothing happens without background persistence.
    pub fn on_persisted(&self, notify: impl Fn() + Send + Sync + 'static) {
        if let Some(p) = &self.ctx.persistence {
            p.set_notify(Arc::new(notify));
        }
    }

    /// The blocks the background persistence committed since the last call, lowest first,
    /// with their commit times (empty without background persistence: the forkchoice update
    /// reports its commits itself). A fault that stopped the persistence is not taken here:
    /// the next forkchoice update returns it (an internal error, never a verdict) and queues
    /// the blocks from the failed one on again.
    pub fn take_persisted(&self) -> Vec<ImportedBlock> {
        let done = self.ctx.persistence.as_ref().map(Persistence::take_done).unwrap_or_default();
        if let Some(last) = done.last() {
            self.ctx.memory.remove_persisted((last.number, last.hash));
        }
        done
    }

    /// The canonical blocks above the store's head, as the tree publishes them for the
    /// chain's readers (reth's `CanonicalInMemoryState`): read them through a
    /// [`gigagas_chain_state::BlockchainProvider`].
    pub fn canonical_in_memory_state(&self) -> &CanonicalInMemoryState {
        &self.ctx.memory
    }

    /// A sync starts rewriting the store's state beside the engine (snap sync; reth's
    /// backfill): until [`Self::on_backfill_sync_finished`] payloads and forkchoice updates are
    /// answered SYNCING, no payload is built, and readers of the head's state go through its
    /// trie instead of the flat state being rewritten.
    ///
    /// # Errors
    /// [`ImportError`] when the blocks being persisted fail.
    pub fn on_backfill_sync_started(&mut self) -> Result<(), ImportError> {
        self.wait_persisted()?;
        self.backfill = true;
        self.ctx.memory.begin_backfill();
        Ok(())
    }

    /// Whether a backfill sync is running ([`Self::on_backfill_sync_started`]).
    pub fn backfill_active(&self) -> bool {
        self.backfill
    }

    /// Takes the store's head as the tree's, dropping what the tree held in memory: after a
    /// sync wrote a state and a head into the store beside the engine (snap sync's pivot;
    /// reth's `on_backfill_sync_finished`). Head, safe and finalized become the stored head.
    ///
    /// # Errors
    /// [`ImportError`] when the blocks being persisted fail or the store cannot be read.
    pub fn on_backfill_sync_finished(&mut self) -> Result<(u64, B256), ImportError> {
        self.wait_persisted()?;
        let head = self.ctx.store.best_block()?.ok_or(ImportError::NotInitialized)?;
        self.backfill = false;
        self.ctx.memory.end_backfill(head);
        if let Some(preserved) = &self.ctx.preserved {
            preserved.clear();
        }
        self.state = TreeState::new(head);
        tracing::info!(target: "engine", number = head.0, hash = %head.1, "head taken from the store after a backfill sync");
        Ok(head)
    }

    /// Waits until the store holds every block handed to the background persistence (at
    /// once without it).
    ///
    /// # Errors
    /// The fault that stopped the background persistence ([`ImportError::is_internal`]): the
    /// blocks from the failed one on stay in memory, and the next forkchoice update queues
    /// them again.
    pub fn wait_persisted(&mut self) -> Result<(), ImportError> {
        self.ctx.drain_persistence(&mut self.state)
    }

    /// The same tree with every execution (payloads, payload building) reading the stored
    /// state through `layer(stored)`: the flat state of the head, or the trie of an older base
    /// block, below the blocks the tree holds in memory. For instrumentation and for fault
    /// injection (a source whose reads fail on demand, as a failing disk would).
    pub fn with_source_layer(
        mut self,
        layer: impl Fn(Arc<dyn StateSource>) -> Arc<dyn StateSource> + Send + Sync + 'static,
    ) -> Self {
        self.ctx.source_layer = Some(SourceLayer(Box::new(layer)));
        self
    }

    /// Whether payloads built for a forkchoice update are kept as executed.
    pub fn keeps_built(&self) -> bool {
        self.ctx.config.keep_built
    }

    /// The settings the tree was built with.
    pub fn config(&self) -> &TreeConfig {
        &self.ctx.config
    }

    /// The same tree taking a payload's senders from `known` where it holds them (the senders
    /// the transaction pool recovered; the engine service passes its pool's) and recovering
    /// only the rest.
    pub fn with_known_senders(mut self, known: Arc<gigagas_primitives::SenderCache>) -> Self {
        self.ctx.known_senders = Some(known);
        self
    }

    /// Whether payloads with a BAL run on the parallel executor.
    pub fn parallel(&self) -> bool {
        self.ctx.config.parallel
    }

    /// Worker threads of the parallel executor's pool (built once, with the tree).
    pub fn executor_threads(&self) -> usize {
        self.ctx.pool.current_num_threads()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn FullProvider> {
        &self.ctx.store
    }

    /// The chain's rules (from the genesis stored at init).
    pub fn chain(&self) -> &ChainSpec {
        &self.ctx.chain
    }

    /// Head, safe and finalized as the last forkchoice update set them.
    pub fn forkchoice(&self) -> Forkchoice {
        self.state.forkchoice
    }

    /// Head, safe and finalized as far as the store holds them: [`Self::forkchoice`] with each
    /// block above the store's head (being committed in the background) replaced by the
    /// store's head, its canonical ancestor; the same as [`Self::forkchoice`] without
    /// background persistence. (Readers are told [`Self::forkchoice`]: they read the blocks
    /// the store does not hold yet from [`Self::canonical_in_memory_state`].)
    ///
    /// # Errors
    /// [`ProviderError`] when the store's head cannot be read.
    pub fn persisted_forkchoice(&self) -> Result<Forkchoice, ProviderError> {
        self.ctx.persisted_forkchoice(&self.state)
    }

    /// The header of the forkchoice head: from memory while background persistence has not
    /// committed it yet, else from the store.
    ///
    /// # Errors
    /// As [`Self::canonical_header`].
    pub fn head_header(&self) -> Result<Header, ImportError> {
        let head = self.state.forkchoice.head;
        if let Some(b) = self.state.blocks.get(&head.1) {
            return Ok(b.executed.header.clone());
        }
        self.ctx.canonical_header(head.0)
    }

    /// The header of the canonical block `number`.
    ///
    /// # Errors
    /// [`ImportError::Storage`] when the store fails; [`ImportError::NotInitialized`] when the
    /// header is not stored.
    pub fn canonical_header(&self, number: u64) -> Result<Header, ImportError> {
        self.ctx.canonical_header(number)
    }

    /// `engine_newPayload`: executes `block` (whose hash the caller checked against the
    /// payload's `blockHash`) on its parent — by the parallel executor driven by `bal` when the
    /// payload carries one (Amsterdam), else by the sequential reference — checks it against its
    /// header (gas used, receipts root, logs bloom, requests hash, BAL hash, state root) and
    /// keeps it in memory until a forkchoice update makes it canonical. A payload whose parent
    /// is unknown is answered SYNCING and kept (bounded, expiring) until its parent comes; the
    /// payloads kept on this one are judged once it is (reth's buffered blocks).
    ///
    /// # Errors
    /// [`ImportError::Storage`] / [`ImportError::Trie`] when the store fails (not a verdict on
    /// the block).
    pub fn new_payload(
        &mut self,
        block: Block<TxEnvelope>,
        rlp_len: usize,
        transactions_root: Option<B256>,
        bal: Option<&BlockAccessList>,
    ) -> Result<(PayloadStatus, Option<ImportedBlock>), ImportError> {
        if self.backfill {
            return Ok((PayloadStatus::Syncing, None));
        }
        let hash = block.header.hash_slow();
        let judged =
            self.ctx.new_payload(&mut self.state, block, rlp_len, transactions_root, bal)?;
        if !matches!(judged.0, PayloadStatus::Syncing) {
            self.ctx.connect_buffered(&mut self.state, hash);
        }
        Ok(judged)
    }

    /// Builds a payload on `parent` (canonical or executed) with `attrs` from `candidates`
    /// ([`gigagas_payload::build_payload`]); `None` when `parent` is unknown. Nothing is kept: see
    /// [`Self::insert_built`].
    ///
    /// # Errors
    /// As [`gigagas_payload::build_payload`], or [`ImportError::Storage`].
    pub fn build_payload(
        &self,
        parent: B256,
        attrs: &PayloadAttributes,
        candidates: &[(TxEnvelope, Address)],
        require_all: bool,
    ) -> Result<Option<BuiltPayload>, ImportError> {
        let Some(job) = self.payload_job(parent)? else { return Ok(None) };
        job.build(attrs, candidates, require_all).map(Some)
    }

    /// A build on `parent` (canonical or executed) to run on another thread
    /// ([`PayloadJob::build`]); `None` when `parent` is unknown. The job reads its parent's
    /// state through its own view of the store: the tree goes on changing the store (commits,
    /// reorgs) without waiting for it.
    ///
    /// # Errors
    /// [`ImportError::Storage`] when the store fails.
    pub fn payload_job(&self, parent: B256) -> Result<Option<PayloadJob>, ImportError> {
        if self.backfill {
            return Ok(None);
        }
        self.ctx.payload_job(&self.state, parent)
    }

    /// Keeps a payload built on `built.block`'s parent as executed, from what building it
    /// executed and the state-root update that gave its header's root, so that an
    /// `engine_newPayload` of it is VALID without executing it again (reth inserts its built
    /// payloads the same way). Returns whether it was kept: not when its parent is no longer
    /// known, before Byzantium, or when the root is not the header's (then its `newPayload`
    /// executes and judges it as any other).
    ///
    /// # Errors
    /// [`ImportError::Storage`] / [`ImportError::Trie`] when the store fails.
    pub fn insert_built(&mut self, built: &BuiltPayload) -> Result<bool, ImportError> {
        self.ctx.insert_built(&mut self.state, built)
    }

    /// `engine_forkchoiceUpdated`: makes `head` canonical — committing the executed blocks
    /// that lead to it, after unwinding the store to the common ancestor when `head` is on
    /// another branch (a reorg) — and records safe and finalized (zero hash: unchanged /
    /// none). Returns the verdict on the head (SYNCING when unknown, INVALID when known
    /// invalid) and what changed in the store.
    ///
    /// # Errors
    /// [`ForkchoiceError::Invalid`] when safe or finalized is not canonical after the update
    /// or the reorg would unwind the finalized block or more than [`KEEP_BLOCKS`];
    /// [`ForkchoiceError::Internal`] when the store fails.
    pub fn forkchoice_updated(
        &mut self,
        head: B256,
        safe: B256,
        finalized: B256,
    ) -> Result<(PayloadStatus, CanonicalChange), ForkchoiceError> {
        if self.backfill {
            return Ok((PayloadStatus::Syncing, CanonicalChange::default()));
        }
        let updated = self.ctx.forkchoice_updated(&mut self.state, head, safe, finalized);
        // Also after a failure: some blocks may have been committed or unwound.
        let published = self.ctx.publish_canonical(&self.state);
        let updated = updated?;
        published?;
        if let Some(pruner) = &mut self.pruner {
            // The store's head: with background persistence it trails the forkchoice.
            if let Some((stored, _)) = self.ctx.store.best_block().map_err(ImportError::from)? {
                pruner.on_head(stored);
            }
        }
        Ok(updated)
    }

    /// Waits for the trie prune under way, if any ([`TreeConfig::prune`]).
    pub fn wait_pruned(&mut self) {
        if let Some(pruner) = &mut self.pruner {
            pruner.join();
        }
    }
}

/// The state trie kept between payloads when `config` keeps it, with its own trie-node readers
/// (`trie-read-N`) when it has any.
///
/// # Errors
/// [`ImportError::ExecutorPool`] when the readers cannot be started.
fn preserved_trie(config: &TreeConfig) -> Result<Option<PreservedTrie>, ImportError> {
    if !config.preserve_trie {
        return Ok(None);
    }
    let preserved = PreservedTrie::default();
    Ok(Some(match named_pool(config.trie_read_threads, "trie-read")? {
        Some(readers) => preserved.with_read_pool(readers),
        None => preserved,
    }))
}

/// `threads` workers of their own, named `{name}-N`; `None` for 0.
///
/// # Errors
/// [`ImportError::ExecutorPool`] when the workers cannot be started.
fn named_pool(
    threads: usize,
    name: &'static str,
) -> Result<Option<rayon::ThreadPool>, ImportError> {
    if threads == 0 {
        return Ok(None);
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map(Some)
        .map_err(ImportError::ExecutorPool)
}

/// The workers beside execution: as many as rayon's global pool has (the machine's cores by
/// default), where the state root computed from a payload's BAL ran its storage tries before
/// it had workers of its own; named `state-root-N`.
///
/// # Errors
/// [`ImportError::ExecutorPool`] when the workers cannot be started.
fn beside_pool() -> Result<rayon::ThreadPool, ImportError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads().max(2))
        .thread_name(|i| format!("state-root-{i}"))
        .build()
        .map_err(ImportError::ExecutorPool)
}
