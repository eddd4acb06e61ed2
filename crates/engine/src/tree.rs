//! The engine tree: payloads executed on any known parent (`engine_newPayload`), fork choice
//! with reorgs (`engine_forkchoiceUpdated`), and the state a payload is built on.
//!
//! Executed blocks wait in memory until a forkchoice update makes them canonical; then they
//! are committed to the store in order (each block atomically): on the engine thread before the
//! update returns, or with background persistence ([`BlockTree::with_background_persistence`],
//! reth's design, `persistence.rs`) by a thread of their own while the next payloads execute on
//! them from memory. A forkchoice update to a block
//! on another branch first unwinds the store to the common ancestor: the flat state of every
//! key the unwound blocks changed (their BALs name each one) is read back from the trie under
//! the ancestor's state root, which the store keeps. Executed blocks stay in memory for
//! [`KEEP_BLOCKS`] blocks below the head, so a later forkchoice update can switch back to
//! them without re-execution. Every operation takes one lock: the Engine API is sequential.
//! With background persistence the store's head trails the tree's: the canonical blocks not yet
//! committed stay layers over the store (the store moves only along them, so reading it under
//! their diffs gives the same values before and after each commit); a reorg, a backfill and
//! shutdown first wait until the store holds what was queued.

use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_primitives::{map::HashMap, Address, Bytes, B256, U256};
use gigagas_bal::BlockAccessList;
use gigagas_payload::{build_payload, BuiltPayload, PayloadAttributes, PayloadParent};
use gigagas_primitives::ChainSpec;
use gigagas_stages::{
    commit_executed, execute_block, executed_from_build, state_root_stage, stored_chain_spec,
    BalIo, ExecutedBlock, GivenBal, ImportError, ImportedBlock, Overlay, PendingDiff, Prewarming,
    UnwindError,
};
use gigagas_state::StateSource;
use gigagas_storage_api::{AccountRecord, FullProvider, ProviderError, TrieState, UnwoundBlock};
use gigagas_trie::NodeSource;
mod backfill;
mod block;
pub mod block_buffer;
pub mod invalid_headers;
mod persistence;

pub use backfill::{BackfillPayload, Backfilled, Verdict};
use block::TreeBlock;
use persistence::Persistence;

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex, RwLock},
    time::Instant,
};

/// Executed blocks kept in memory below the head (reorgs within this depth switch branches
/// without re-executing).
pub const KEEP_BLOCKS: u64 = 64;

/// Head, safe and finalized blocks: `(number, hash)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forkchoice {
    /// The canonical head.
    pub head: (u64, B256),
    /// The safe block, once the consensus client named one.
    pub safe: Option<(u64, B256)>,
    /// The finalized block, once the consensus client named one.
    pub finalized: Option<(u64, B256)>,
}

/// The verdict on a payload or a forkchoice head (execution-apis `PayloadStatusV1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadStatus {
    /// Executed and valid (or already known valid).
    Valid(B256),
    /// Invalid: `latest_valid_hash` is the last valid ancestor (the parent), `reason` names
    /// block, transaction, account or slot.
    Invalid {
        /// The latest valid ancestor, when known.
        latest_valid_hash: Option<B256>,
        /// Why.
        reason: String,
    },
    /// The parent (or the head) is unknown: the node needs the missing blocks first.
    Syncing,
}

impl PayloadStatus {
    /// The status's name in the Engine API: `VALID`, `INVALID` or `SYNCING`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Valid(_) => "VALID",
            Self::Invalid { .. } => "INVALID",
            Self::Syncing => "SYNCING",
        }
    }
}

/// Why a forkchoice update was refused (execution-apis error -38002).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid forkchoice state: {0}")]
pub struct InvalidForkchoice(pub String);

/// A block executed and state-rooted: the block, its new trie nodes, execution and state-root
/// times.
type Executed = (ExecutedBlock, Vec<(B256, Vec<u8>)>, std::time::Duration, std::time::Duration);

/// Executed, uncommitted blocks (newest first) and the canonical block they build on.
type Branch = (Vec<Arc<TreeBlock>>, (u64, B256));

/// The outcome of a forkchoice update that the store could serve: the verdict on the head and
/// what changed, or why the update was refused.
pub type ForkchoiceOutcome = Result<(PayloadStatus, CanonicalChange), InvalidForkchoice>;

/// The store's trie nodes with those of executed, not yet committed blocks on top.
struct NodeOverlay<'a> {
    store: &'a dyn FullProvider,
    layers: &'a [Arc<TreeBlock>],
}

impl NodeSource for NodeOverlay<'_> {
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, gigagas_trie::NodeSourceError> {
        for b in self.layers {
            if let Some(&i) = b.node_index.get(hash) {
                return Ok(Some(Bytes::from(b.nodes[i].1.clone())));
            }
        }
        self.store.node(hash)
    }
}

/// The state a block (or a payload being built) executes on: the parent's header, the stored
/// state below every layer, the diffs of the executed ancestors not yet committed and those
/// ancestors (newest first).
struct ParentState {
    header: Header,
    base: Arc<dyn StateSource>,
    diffs: Vec<Arc<PendingDiff>>,
    layers: Vec<Arc<TreeBlock>>,
}

impl ParentState {
    /// The parent's state: the diffs over the stored state.
    fn source(&self) -> Arc<dyn StateSource> {
        Arc::new(Overlay { base: self.base.clone(), diffs: self.diffs.clone() })
    }

    /// The trie nodes the parent's state root resolves from.
    fn nodes<'a>(&'a self, store: &'a dyn FullProvider) -> impl NodeSource + Sync + 'a {
        NodeOverlay { store, layers: &self.layers }
    }
}

#[derive(Debug)]
struct TreeState {
    blocks: HashMap<B256, Arc<TreeBlock>>,
    /// Invalid payloads: hash → (latest valid ancestor, reason), least recently used
    /// forgotten first.
    invalid: invalid_headers::InvalidHeaderCache,
    /// The block the store's head will be once persistence has committed what it was handed
    /// (with synchronous commits: the store's head). Set wherever the tree changes the store.
    persist_target: (u64, B256),
}

/// What a forkchoice update did to the store.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CanonicalChange {
    /// Blocks removed from the canonical chain (a reorg), highest first.
    pub unwound: Vec<(u64, B256)>,
    /// Blocks committed, lowest first, with their stage figures.
    pub committed: Vec<ImportedBlock>,
}

/// A wrapper around the stored state that every execution of the tree reads through (see
/// [`BlockTree::with_source_layer`]).
type SourceLayerFn = dyn Fn(Arc<dyn StateSource>) -> Arc<dyn StateSource> + Send + Sync;

/// [`SourceLayerFn`], printable.
struct SourceLayer(Box<SourceLayerFn>);

impl std::fmt::Debug for SourceLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SourceLayer")
    }
}

/// The engine tree over a store. See the module documentation.
#[derive(Debug)]
pub struct BlockTree {
    store: Arc<dyn FullProvider>,
    chain: ChainSpec,
    /// The parallel executor's workers: built once with the tree, reused for every payload.
    pool: rayon::ThreadPool,
    /// Payloads with a BAL run on the parallel executor (else all run on the sequential one).
    parallel: bool,
    /// The parallel executor's scheduler.
    scheduler: gigagas_executor::Scheduler,
    /// Payloads without a BAL run on the sequential reference with the pool's threads but one
    /// prewarming it ([`Prewarming`]).
    prewarm: bool,
    /// The prewarming workers' results are reused when their reads still hold
    /// ([`Prewarming::reuse`]).
    optimistic: bool,
    /// Payloads with a BAL get their state root computed from it beside execution.
    root_beside: bool,
    /// Whether the payloads built for a consensus client are kept as executed
    /// ([`Self::with_built_kept`]).
    keep_built: bool,
    /// How the parallel executor's reads of a payload's BAL keys reach the store.
    io: BalIo,
    state: Mutex<TreeState>,
    forkchoice: RwLock<Forkchoice>,
    source_layer: Option<SourceLayer>,
    /// The background persistence thread; `None`: forkchoice updates commit before returning.
    persistence: Option<Persistence>,
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
        let chain = stored_chain_spec(&*store)?;
        let head = store.best_block()?.ok_or(ImportError::NotInitialized)?;
        let forkchoice = Forkchoice { head, safe: Some(head), finalized: Some(head) };
        Ok(Self {
            store,
            chain,
            pool: gigagas_executor::parallel::executor_pool(threads)?,
            parallel: true,
            scheduler: gigagas_executor::Scheduler::GasLimit,
            prewarm: true,
            optimistic: false,
            root_beside: true,
            keep_built: true,
            io: BalIo::default(),
            state: Mutex::new(TreeState {
                blocks: HashMap::default(),
                invalid: Default::default(),
                persist_target: head,
            }),
            forkchoice: RwLock::new(forkchoice),
            source_layer: None,
            persistence: None,
        })
    }

    /// The same tree committing canonical blocks on a background thread (`on`, reth's
    /// persistence service) or before each forkchoice update returns (the default) —
    /// `--engine.persistence-background`. In the background, the store (and what the node
    /// publishes: [`Self::persisted_forkchoice`]) trails the forkchoice by the blocks being
    /// committed; payloads execute on them from memory meanwhile. Given the node's `tasks`,
    /// the thread is critical: its panic shuts the node down.
    ///
    /// # Errors
    /// The OS error when the thread cannot be started.
    pub fn with_background_persistence(
        mut self,
        on: bool,
        tasks: Option<&gigagas_tasks::TaskExecutor>,
    ) -> std::io::Result<Self> {
        self.persistence = match on {
            true => Some(Persistence::spawn(self.store.clone(), tasks)?),
            false => None,
        };
        Ok(self)
    }

    /// Calls `notify` after each block the background persistence committed (or failed to),
    /// on the persistence thread: the engine task then takes the figures with
    /// [`Self::take_persisted`]. Nothing happens without background persistence.
    pub fn on_persisted(&self, notify: impl Fn() + Send + Sync + 'static) {
        if let Some(p) = &self.persistence {
            p.set_notify(Arc::new(notify));
        }
    }

    /// The blocks the background persistence committed since the last call, lowest first,
    /// with their commit times (empty without background persistence: the forkchoice update
    /// reports its commits itself). A fault that stopped the persistence is not taken here:
    /// the next forkchoice update returns it (an internal error, never a verdict) and queues
    /// the blocks from the failed one on again.
    pub fn take_persisted(&self) -> Vec<ImportedBlock> {
        self.persistence.as_ref().map(Persistence::take_done).unwrap_or_default()
    }

    /// Waits until the store holds every block handed to the background persistence (at
    /// once without it).
    ///
    /// # Errors
    /// The fault that stopped the background persistence ([`ImportError::is_internal`]): the
    /// blocks from the failed one on stay in memory, and the next forkchoice update queues
    /// them again.
    pub fn wait_persisted(&self) -> Result<(), ImportError> {
        let mut state = self.lock();
        self.drain_persistence(&mut state)
    }

    /// Waits for the background persistence to commit what it was handed; its fault, if any.
    fn drain_persistence(&self, state: &mut TreeState) -> Result<(), ImportError> {
        if let Some(p) = &self.persistence {
            p.wait_idle();
            self.persistence_fault(state)?;
        }
        Ok(())
    }

    /// The background persistence's fault, taken (after it finished skipping what it was
    /// handed), with the persistence target set back to the store's head so that the next
    /// forkchoice update queues the uncommitted blocks again.
    fn persistence_fault(&self, state: &mut TreeState) -> Result<(), ImportError> {
        let Some(p) = &self.persistence else { return Ok(()) };
        p.wait_idle_if_failed();
        match p.take_error() {
            Some(e) => {
                state.persist_target =
                    self.store.best_block()?.ok_or(ImportError::NotInitialized)?;
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// The same tree with every execution (payloads, payload building) reading the stored
    /// state through `layer(stored)`: the flat state of the head, or the trie of an older base
    /// block, below the blocks the tree holds in memory. For instrumentation and for fault
    /// injection (a source whose reads fail on demand, as a failing disk would).
    pub fn with_source_layer(
        mut self,
        layer: impl Fn(Arc<dyn StateSource>) -> Arc<dyn StateSource> + Send + Sync + 'static,
    ) -> Self {
        self.source_layer = Some(SourceLayer(Box::new(layer)));
        self
    }

    /// The same tree executing payloads that carry a BAL on the parallel executor with
    /// `scheduler` when `parallel` (the default: `gas-limit`), or every payload on the
    /// sequential reference when not (the BAL is then checked against the one the sequential
    /// run records, through the header's hash) — `--engine.parallel`, `--engine.scheduler`.
    pub fn with_executor(mut self, parallel: bool, scheduler: gigagas_executor::Scheduler) -> Self {
        self.parallel = parallel;
        self.scheduler = scheduler;
        self
    }

    /// The same tree with prewarming of payloads without a BAL on (the default) or off: while
    /// the sequential reference runs such a payload, `threads - 1` of the executor pool's
    /// workers execute its transactions speculatively ahead of it to warm the state cache
    /// (`--engine.prewarm`); with `optimistic` (off by default) their results are committed in
    /// order when every value they read still holds (`--engine.optimistic`).
    pub fn with_prewarm(mut self, prewarm: bool, optimistic: bool) -> Self {
        self.prewarm = prewarm;
        self.optimistic = optimistic;
        self
    }

    /// The same tree computing the state root of a payload that carries a BAL from the BAL
    /// beside the parallel execution (the default) or after it from the executed changes
    /// (`--engine.state-root-beside`).
    pub fn with_state_root_beside(mut self, beside: bool) -> Self {
        self.root_beside = beside;
        self
    }

    /// The same tree keeping the payloads it builds for a forkchoice update with attributes as
    /// executed (`true`, the default: their newPayload executes nothing again, reth's design)
    /// or not (`false`: the dev chain, whose own blocks are validated like any other so that
    /// it exercises the executors).
    pub fn with_built_kept(mut self, keep: bool) -> Self {
        self.keep_built = keep;
        self
    }

    /// Whether payloads built for a forkchoice update are kept as executed.
    pub fn keeps_built(&self) -> bool {
        self.keep_built
    }

    /// The same tree reading the keys of a payload's BAL with `io` (`--engine.io`; default
    /// [`BalIo::PrefetchParallel`]).
    pub fn with_io(mut self, io: BalIo) -> Self {
        self.io = io;
        self
    }

    /// Whether payloads with a BAL run on the parallel executor.
    pub fn parallel(&self) -> bool {
        self.parallel
    }

    /// Worker threads of the parallel executor's pool (built once, with the tree).
    pub fn executor_threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn FullProvider> {
        &self.store
    }

    /// The chain's rules (from the genesis stored at init).
    pub fn chain(&self) -> &ChainSpec {
        &self.chain
    }

    /// Head, safe and finalized as the last forkchoice update set them.
    pub fn forkchoice(&self) -> Forkchoice {
        *self.forkchoice.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Head, safe and finalized as far as the store holds them: [`Self::forkchoice`] with each
    /// block above the store's head (being committed in the background) replaced by the
    /// store's head, its canonical ancestor. What the node publishes to RPC, sync and gossip,
    /// which read the store; the same as [`Self::forkchoice`] without background persistence.
    ///
    /// # Errors
    /// [`ProviderError`] when the store's head cannot be read.
    pub fn persisted_forkchoice(&self) -> Result<Forkchoice, ProviderError> {
        let forkchoice = self.forkchoice();
        let Some(stored) = self.store.best_block()? else { return Ok(forkchoice) };
        if forkchoice.head.0 <= stored.0 {
            return Ok(forkchoice);
        }
        let clamp = |b: Option<(u64, B256)>| b.map(|b| if b.0 > stored.0 { stored } else { b });
        Ok(Forkchoice {
            head: stored,
            safe: clamp(forkchoice.safe),
            finalized: clamp(forkchoice.finalized),
        })
    }

    /// The header of the forkchoice head: from memory while background persistence has not
    /// committed it yet, else from the store.
    ///
    /// # Errors
    /// As [`Self::canonical_header`].
    pub fn head_header(&self) -> Result<Header, ImportError> {
        let head = self.forkchoice().head;
        if let Some(b) = self.lock().blocks.get(&head.1) {
            return Ok(b.executed.header.clone());
        }
        self.canonical_header(head.0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TreeState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `hash` is a canonical block of the store; its number if so.
    fn canonical(&self, hash: &B256) -> Result<Option<u64>, ProviderError> {
        self.store.block_number(hash)
    }

    /// The executed, uncommitted blocks from `hash` down to the canonical block they build on
    /// (newest first), with that block's number and hash; `None` when the chain leads to a
    /// block the tree does not know.
    fn branch(&self, state: &TreeState, mut hash: B256) -> Result<Option<Branch>, ProviderError> {
        let mut layers = Vec::new();
        loop {
            if let Some(n) = self.canonical(&hash)? {
                return Ok(Some((layers, (n, hash))));
            }
            let Some(b) = state.blocks.get(&hash) else { return Ok(None) };
            hash = b.parent_hash();
            layers.push(b.clone());
        }
    }

    /// The state of block `hash` (canonical, or executed on a known branch).
    fn parent_state(
        &self,
        state: &TreeState,
        hash: B256,
    ) -> Result<Option<ParentState>, ImportError> {
        let Some((layers, base)) = self.branch(state, hash)? else { return Ok(None) };
        let base_header = self.canonical_header(base.0)?;
        // The flat state is the store's head's. It serves this branch when the store stands at
        // its base or on its layers, and moves (persistence) only along them; else the base's
        // trie is read.
        let target = state.persist_target;
        let flat = target == base || layers.iter().any(|b| b.executed.block.hash == target.1);
        let stored: Arc<dyn StateSource> = if flat {
            self.store.clone()
        } else {
            Arc::new(TrieState { store: self.store.clone(), root: base_header.state_root })
        };
        let base_source = match &self.source_layer {
            Some(layer) => (layer.0)(stored),
            None => stored,
        };
        let header = layers.first().map_or(base_header, |b| b.executed.header.clone());
        let diffs: Vec<Arc<PendingDiff>> = layers.iter().map(|b| b.executed.diff.clone()).collect();
        Ok(Some(ParentState { header, base: base_source, diffs, layers }))
    }

    /// Builds a payload on `parent` (canonical or executed) with `attrs` from `candidates`
    /// ([`build_payload`]); `None` when `parent` is unknown. Nothing is kept: see
    /// [`Self::insert_built`].
    ///
    /// # Errors
    /// As [`build_payload`], or [`ImportError::Storage`].
    pub fn build_payload(
        &self,
        parent: B256,
        attrs: &PayloadAttributes,
        candidates: &[(TxEnvelope, Address)],
        require_all: bool,
    ) -> Result<Option<BuiltPayload>, ImportError> {
        let state = self.lock();
        let Some(parent_state) = self.parent_state(&state, parent)? else { return Ok(None) };
        let nodes = parent_state.nodes(&*self.store);
        let on = PayloadParent {
            hash: parent,
            header: &parent_state.header,
            source: parent_state.source(),
            nodes: &nodes,
        };
        build_payload(&self.chain, &on, attrs, candidates, require_all).map(Some)
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
    pub fn insert_built(&self, built: &BuiltPayload) -> Result<bool, ImportError> {
        let parent = built.block.header.parent_hash;
        let mut state = self.lock();
        if state.blocks.contains_key(&built.hash) {
            return Ok(true);
        }
        let Some(parent_state) = self.parent_state(&state, parent)? else { return Ok(false) };
        let executed = executed_from_build(
            &self.chain,
            &parent_state.header,
            &built.block,
            &built.outcome,
            (*built.state_root).clone(),
            built.build_time,
        );
        let Some(mut executed) = executed else { return Ok(false) };
        // Takes the builder's root (no trie is computed again) and checks it is the header's.
        let trie_nodes = match state_root_stage(&mut executed, &parent_state.nodes(&*self.store)) {
            Ok(trie_nodes) => trie_nodes,
            Err(e) if e.is_internal() => return Err(e),
            Err(e) => {
                tracing::warn!(target: "engine", hash = %built.hash, error = %e,
                    "built payload not kept as executed");
                return Ok(false);
            }
        };
        let done = Ok((executed, trie_nodes, built.build_time, std::time::Duration::ZERO));
        let (status, _) = Self::settle(&mut state, built.hash, parent, done)?;
        Ok(matches!(status, PayloadStatus::Valid(_)))
    }

    /// The header of the canonical block `number`.
    ///
    /// # Errors
    /// [`ImportError::Storage`] when the store fails; [`ImportError::NotInitialized`] when the
    /// header is not stored.
    pub fn canonical_header(&self, number: u64) -> Result<Header, ImportError> {
        self.store.header_by_number(number)?.ok_or(ImportError::NotInitialized)
    }

    /// `engine_newPayload`: executes `block` (whose hash the caller checked against the
    /// payload's `blockHash`) on its parent — by the parallel executor driven by `bal` when the
    /// payload carries one (Amsterdam), else by the sequential reference — checks it against its
    /// header (gas used, receipts root, logs bloom, requests hash, BAL hash, state root) and
    /// keeps it in memory until a forkchoice update makes it canonical.
    ///
    /// # Errors
    /// [`ImportError::Storage`] / [`ImportError::Trie`] when the store fails (not a verdict on
    /// the block).
    pub fn new_payload(
        &self,
        block: Block<TxEnvelope>,
        rlp_len: usize,
        bal: Option<&BlockAccessList>,
    ) -> Result<(PayloadStatus, Option<ImportedBlock>), ImportError> {
        let hash = block.header.hash_slow();
        let parent_hash = block.header.parent_hash;
        let mut state = self.lock();
        if let Some(status) = self.known_verdict(&mut state, hash, parent_hash)? {
            return Ok((status, None));
        }
        let Some(parent) = self.parent_state(&state, parent_hash)? else {
            return Ok((PayloadStatus::Syncing, None));
        };
        // With a BAL, the parallel executor's state root is computed from it beside execution.
        let nodes = parent.nodes(&*self.store);
        let beside = self.root_beside.then_some(&nodes as &(dyn NodeSource + Sync));
        let given = self.given(bal, beside);
        let executed = self.execute_on(&parent, block, rlp_len, given).and_then(
            |(mut executed, execution)| {
                let start = Instant::now();
                let trie_nodes = state_root_stage(&mut executed, &nodes)?;
                // What execution waited for the root computed beside it is the root's share.
                let wait = executed.state_root_wait();
                Ok((executed, trie_nodes, execution.saturating_sub(wait), start.elapsed() + wait))
            },
        );
        Self::settle(&mut state, hash, parent_hash, executed)
            .map(|(status, block)| (status, block.map(|b| b.executed.block.clone())))
    }

    /// What a payload carrying `bal` runs with: the parallel executor driven by it, or with
    /// `--engine.parallel false` the sequential reference, its BAL checked against `bal`; with
    /// `nodes` (the parent's trie nodes) its state root computed from `bal` beside execution.
    fn given<'a>(
        &'a self,
        bal: Option<&'a BlockAccessList>,
        nodes: Option<&'a (dyn NodeSource + Sync)>,
    ) -> Option<GivenBal<'a>> {
        bal.map(|bal| GivenBal {
            bal,
            pool: &self.pool,
            scheduler: self.parallel.then_some(self.scheduler),
            io: self.io,
            nodes,
        })
    }

    /// Executes `block` on `parent` ([`execute_block`]; by the parallel executor when `given` a
    /// BAL), with the time it took.
    fn execute_on(
        &self,
        parent: &ParentState,
        block: Block<TxEnvelope>,
        rlp_len: usize,
        given: Option<GivenBal<'_>>,
    ) -> Result<(ExecutedBlock, std::time::Duration), ImportError> {
        let start = Instant::now();
        let prewarm = match self.prewarm {
            true => Prewarming {
                pool: Some(&self.pool),
                workers: self.executor_threads() - 1,
                reuse: self.optimistic,
            },
            false => Prewarming::OFF,
        };
        let (source, header) = (parent.source(), &parent.header);
        execute_block(&self.chain, source, header, block, rlp_len, false, given, prewarm)
            .map(|executed| (executed, start.elapsed()))
    }

    /// The verdict on payload `hash` without executing it: VALID when it is known (executed or
    /// canonical), INVALID when it or its parent was found invalid; `None` otherwise.
    fn known_verdict(
        &self,
        state: &mut TreeState,
        hash: B256,
        parent_hash: B256,
    ) -> Result<Option<PayloadStatus>, ProviderError> {
        if state.blocks.contains_key(&hash) || self.canonical(&hash)?.is_some() {
            return Ok(Some(PayloadStatus::Valid(hash)));
        }
        if let Some((latest, reason)) = state.invalid.get(&hash) {
            let status = PayloadStatus::Invalid { latest_valid_hash: latest, reason };
            return Ok(Some(status));
        }
        if let Some((latest, reason)) = state.invalid.get(&parent_hash) {
            let reason = format!("links to invalid ancestor {parent_hash}: {reason}");
            state.invalid.insert(hash, latest, reason.clone());
            return Ok(Some(PayloadStatus::Invalid { latest_valid_hash: latest, reason }));
        }
        Ok(None)
    }

    /// Records the verdict on payload `hash`: a block executed and state-rooted is kept (VALID),
    /// a consensus failure remembered (INVALID, its parent the latest valid hash). A fault of
    /// ours (store, trie node, a database read during execution) is no verdict: it is returned
    /// as the error, not remembered, and the payload can come again.
    fn settle(
        state: &mut TreeState,
        hash: B256,
        parent_hash: B256,
        done: Result<Executed, ImportError>,
    ) -> Result<(PayloadStatus, Option<Arc<TreeBlock>>), ImportError> {
        let (mut executed, nodes, execution, state_root) = match done {
            Ok(done) => done,
            Err(e) if e.is_internal() => return Err(e),
            Err(e) => {
                let reason = e.to_string();
                state.invalid.insert(hash, Some(parent_hash), reason.clone());
                let status =
                    PayloadStatus::Invalid { latest_valid_hash: Some(parent_hash), reason };
                return Ok((status, None));
            }
        };
        executed.block.execution = execution;
        executed.block.state_root = state_root;
        let node_index = nodes.iter().enumerate().map(|(i, (h, _))| (*h, i)).collect();
        let block = Arc::new(TreeBlock { executed, nodes, node_index });
        state.blocks.insert(hash, block.clone());
        Ok((PayloadStatus::Valid(hash), Some(block)))
    }

    /// `engine_forkchoiceUpdated`: makes `head` canonical — committing the executed blocks
    /// that lead to it, after unwinding the store to the common ancestor when `head` is on
    /// another branch (a reorg) — and records safe and finalized (zero hash: unchanged /
    /// none). Returns the verdict on the head (SYNCING when unknown, INVALID when known
    /// invalid) and what changed in the store.
    ///
    /// # Errors
    /// `Ok(Err(InvalidForkchoice))` when safe or finalized is not canonical after the update
    /// or the reorg would unwind the finalized block or more than [`KEEP_BLOCKS`];
    /// [`ImportError`] when the store fails.
    pub fn forkchoice_updated(
        &self,
        head: B256,
        safe: B256,
        finalized: B256,
    ) -> Result<ForkchoiceOutcome, ImportError> {
        let mut state = self.lock();
        self.persistence_fault(&mut state)?;
        if let Some((latest, reason)) = state.invalid.get(&head) {
            let status = PayloadStatus::Invalid { latest_valid_hash: latest, reason };
            return Ok(Ok((status, CanonicalChange::default())));
        }
        let Some((mut layers, mut base)) = self.branch(&state, head)? else {
            return Ok(Ok((PayloadStatus::Syncing, CanonicalChange::default())));
        };
        let current = self.forkchoice();
        let mut change = CanonicalChange::default();
        let extends = current.head == base
            || layers
                .iter()
                .any(|b| (b.executed.block.number, b.executed.block.hash) == current.head);
        if let (Some(persistence), true) = (&self.persistence, extends) {
            // The head's branch holds the current head: hand the blocks above what was queued
            // to the persistence thread, lowest first.
            let target = state.persist_target;
            let queue: Vec<Arc<TreeBlock>> = layers
                .iter()
                .rev()
                .filter(|b| b.executed.block.number > target.0)
                .cloned()
                .collect();
            if let Some(last) = queue.last() {
                state.persist_target = (last.executed.block.number, last.executed.block.hash);
            }
            persistence.queue(queue);
        } else {
            if self.persistence.is_some() {
                // A reorg: the store must hold what was queued first, and the branch is read
                // again against it.
                self.drain_persistence(&mut state)?;
                (layers, base) = match self.branch(&state, head)? {
                    Some(branch) => branch,
                    None => return Ok(Ok((PayloadStatus::Syncing, CanonicalChange::default()))),
                };
            }
            let committed = self.commit_branch(head, &layers, base, current);
            // Also after a failed commit: the blocks before it are stored.
            state.persist_target = self.store.best_block()?.ok_or(ImportError::NotInitialized)?;
            change = match committed? {
                Ok(change) => change,
                Err(invalid) => return Ok(Err(invalid)),
            };
        }
        // The head's branch: in memory (not yet committed, or being committed), else stored.
        let canonical = |h: &B256| -> Result<Option<u64>, ProviderError> {
            match layers.iter().find(|b| b.executed.block.hash == *h) {
                Some(b) => Ok(Some(b.executed.block.number)),
                None => self.canonical(h),
            }
        };
        let head_number = canonical(&head)?.ok_or(ImportError::NotInitialized)?;
        let lookup =
            |h: B256,
             what: &str|
             -> Result<Result<Option<(u64, B256)>, InvalidForkchoice>, ImportError> {
                if h == B256::ZERO {
                    return Ok(Ok(None));
                }
                match canonical(&h)? {
                    Some(n) if n <= head_number => Ok(Ok(Some((n, h)))),
                    _ => Ok(Err(InvalidForkchoice(format!(
                        "{what} block {h} is not a canonical ancestor of the head"
                    )))),
                }
            };
        let safe = match lookup(safe, "safe")? {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let finalized = match lookup(finalized, "finalized")? {
            Ok(f) => f,
            Err(e) => return Ok(Err(e)),
        };
        *self.forkchoice.write().unwrap_or_else(|p| p.into_inner()) = Forkchoice {
            head: (head_number, head),
            safe: safe.or(current.safe.filter(|s| s.0 <= head_number)),
            finalized: finalized.or(current.finalized.filter(|f| f.0 <= head_number)),
        };
        // Forget blocks far below the head, and branches below finalized.
        let floor = head_number.saturating_sub(KEEP_BLOCKS);
        let final_number = finalized.map_or(0, |f| f.0);
        state.blocks.retain(|h, b| {
            let n = b.executed.block.number;
            n > floor && (n > final_number || canonical(h).ok().flatten().is_some())
        });
        Ok(Ok((PayloadStatus::Valid(head), change)))
    }

    /// Makes `head`'s branch (`layers` over the canonical block `base`) canonical in the store
    /// now: unwinds the store to `base` when `base` is not its head (a reorg, refused below the
    /// finalized block of `current` or deeper than [`KEEP_BLOCKS`]), then commits `layers`,
    /// lowest first.
    fn commit_branch(
        &self,
        head: B256,
        layers: &[Arc<TreeBlock>],
        base: (u64, B256),
        current: Forkchoice,
    ) -> Result<Result<CanonicalChange, InvalidForkchoice>, ImportError> {
        let stored_head = self.store.best_block()?.ok_or(ImportError::NotInitialized)?;
        let mut change = CanonicalChange::default();
        if base != stored_head {
            // Reorg: `base` is a canonical ancestor of the stored head.
            if let Some(f) = current.finalized {
                if base.0 < f.0 {
                    return Ok(Err(InvalidForkchoice(format!(
                        "head {head} builds on block {} {}, below the finalized block {}",
                        base.0, base.1, f.0
                    ))));
                }
            }
            if stored_head.0 - base.0 > KEEP_BLOCKS {
                return Ok(Err(InvalidForkchoice(format!(
                    "reorg of {} blocks, deeper than {KEEP_BLOCKS}",
                    stored_head.0 - base.0
                ))));
            }
            change.unwound = self.unwind_to(base, stored_head)?;
        }
        for b in layers.iter().rev() {
            let start = Instant::now();
            commit_executed(&*self.store, &b.executed, &b.nodes)?;
            change
                .committed
                .push(ImportedBlock { commit: start.elapsed(), ..b.executed.block.clone() });
        }
        Ok(Ok(change))
    }

    /// Unwinds the store from `stored_head` down to `base`. The unwound blocks stay in memory
    /// when they are there (they were executed by this node within [`KEEP_BLOCKS`]), so a
    /// later update can make them canonical again. Returns them, highest first.
    fn unwind_to(
        &self,
        base: (u64, B256),
        stored_head: (u64, B256),
    ) -> Result<Vec<(u64, B256)>, ImportError> {
        let base_header = self.canonical_header(base.0)?;
        let target = TrieState { store: self.store.clone(), root: base_header.state_root };
        let mut unwound = Vec::new();
        let mut addresses = BTreeSet::new();
        let mut slots = BTreeSet::new();
        for number in (base.0 + 1..=stored_head.0).rev() {
            let header = self.canonical_header(number)?;
            let unwind = |reason: UnwindError| ImportError::Unwind { number, reason };
            if !self.chain.is_cancun(header.timestamp) {
                return Err(unwind(UnwindError::PreCancun));
            }
            let bal =
                self.store.block_access_list(number)?.ok_or(unwind(UnwindError::MissingBal))?;
            for account in &bal {
                addresses.insert(account.address);
                for slot in &account.storage_changes {
                    slots.insert((account.address, slot.slot));
                }
            }
            let body = self.store.body_by_number(number)?.unwrap_or_default();
            let hash = header.hash_slow();
            unwound.push(UnwoundBlock {
                number,
                hash,
                tx_hashes: body.transactions.iter().map(|tx| *tx.tx_hash()).collect(),
            });
        }
        let state_err = |e: gigagas_state::StateError| ImportError::Unwind {
            number: base.0,
            reason: UnwindError::State(e),
        };
        let mut accounts: Vec<(Address, Option<AccountRecord>)> = Vec::new();
        let mut roots: HashMap<Address, Option<B256>> = HashMap::default();
        for address in &addresses {
            let account = target.trie_account(address).map_err(state_err)?;
            roots.insert(*address, account.as_ref().map(|a| a.storage_root));
            accounts.push((
                *address,
                account.map(|a| AccountRecord {
                    nonce: a.nonce,
                    balance: a.balance,
                    code_hash: a.code_hash,
                }),
            ));
        }
        let mut storage: Vec<(Address, U256, U256)> = Vec::new();
        for (address, slot) in &slots {
            let slot = *slot;
            let value = match roots.get(address).copied().flatten() {
                Some(root) => target.slot_in(address, root, &slot).map_err(state_err)?,
                None => U256::ZERO,
            };
            storage.push((*address, slot, value));
        }
        self.store.unwind(base, &unwound, &accounts, &storage)?;
        Ok(unwound.iter().map(|b| (b.number, b.hash)).collect())
    }
}
