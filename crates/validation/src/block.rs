//! The stages of one block: [`execute_block`] (header checks, sender recovery, execution by the
//! sequential reference or the parallel executor driven by a given BAL, the header's results
//! checked) makes an [`ExecutedBlock`], [`state_root_stage`] roots it, [`commit_executed`]
//! stores it. The engine tree drives them for payloads, for chains of payloads (sync, the file
//! import) and for the payloads it builds.

use crate::bal_root::BesideRoot;
use crate::pre_byzantium::{per_tx_updates, with_intermediate_roots, Intermediate};
use crate::{
    error::ImportError,
    overlay::PendingDiff,
    priors::{ChangedPriors, PreStatePriors},
};
use alloy_consensus::ReceiptEnvelope;
use alloy_consensus::{Block, BlockBody, Header, TxEnvelope};
use alloy_primitives::{Address, Bytes, B256, U256};
use gigagas_bal::{keys_by_first_change, BalKey, BalValidationError, BlockAccessList};
use gigagas_executor::{
    parallel::{execute_parallel, execute_parallel_on, ParallelBlock, ParallelConfig},
    prewarm::execute_sequential_prewarmed,
    sequential::execute_sequential,
    validate_header_with_buf, BlockOutcome, ExecutionError, Scheduler,
};
use gigagas_primitives::{
    header::{check_block_size, check_header},
    BlockInput, ChainSpec, SenderCache, Senders, StreamedSenders,
};
use gigagas_state::{CacheStats, PreState, StateSource, PREFETCH_CHUNK};
use gigagas_storage_api::{AccountRecord, BlockCommit, FullProvider};
use gigagas_trie::{
    prefetch_paths, update_state_root_on, AccountUpdate, EncodedNode, NodeSource, PrefetchTarget,
    PreservedTrie, StateRootError, StateRootUpdate, TrieStart,
};
use std::{
    borrow::Cow,
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        Arc, OnceLock,
    },
    time::{Duration, Instant},
};

/// One imported block, with stage timings (the default: zeros, nothing measured).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportedBlock {
    /// Block number.
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// Transactions.
    pub transactions: usize,
    /// Gas used (gas).
    pub gas_used: u64,
    /// `false` when the block was already stored (same hash) and skipped.
    pub imported: bool,
    /// Sender recovery, execution and header checks.
    pub execution: Duration,
    /// State-root stage (trie updates and hashing).
    pub state_root: Duration,
    /// The atomic write of the block.
    pub commit: Duration,
    /// Reads answered by the block's shared state cache vs by the store.
    pub cache: CacheStats,
    /// Accounts and slots the block changed.
    pub accounts_changed: usize,
    /// Slots changed.
    pub slots_changed: usize,
    /// State root of the parent (the trie the block's updates apply to).
    pub parent_state_root: B256,
    /// The block's state root (verified when `imported`).
    pub post_state_root: B256,
    /// The block's state-trie updates, when the import was asked to keep them
    /// ([`import_blocks_with`]): e.g. to compute megablock state roots afterwards.
    pub updates: Option<Vec<AccountUpdate>>,
    /// Whether the parallel executor ran the block, driven by the BAL that came with it
    /// (`engine_newPayloadV5`); otherwise the sequential reference ran it and built its BAL.
    pub parallel: bool,
    /// Sender recovery (part of [`ImportedBlock::execution`]).
    pub recovery: Duration,
    /// Senders taken from the cache of senders recovered before the block (the pool's), not
    /// recovered again ([`gigagas_primitives::SenderCache`]; the rest of
    /// [`ImportedBlock::transactions`] were recovered).
    pub senders_known: usize,
    /// BAL-hinted reads of every key the BAL names before execution (part of
    /// [`ImportedBlock::execution`]; zero without a given BAL: the sequential reference reads
    /// on demand).
    pub io: Duration,
    /// The longest single transaction of the parallel run (zero for the sequential reference).
    pub longest_tx: Duration,
    /// Transactions executed speculatively by the prewarming workers beside the sequential
    /// reference ([`Prewarming`]; zero without them or with a given BAL).
    pub prewarmed: u64,
    /// Transactions whose prewarming worker's result the sequential reference committed
    /// instead of executing them ([`Prewarming::reuse`]; zero otherwise).
    pub reused: u64,
    /// Worker results the reference found stale and executed again (a value read had changed).
    pub stale: u64,
    /// The state root's own time when it was computed from the given BAL beside execution and
    /// matched the executed updates ([`GivenBal::nodes`]); [`ImportedBlock::state_root`] then
    /// holds only what the block waited for it after execution. `None` otherwise.
    pub state_root_beside: Option<Duration>,
    /// Where the state root's trie update started: on the trie kept from the block before
    /// ([`TrieStart::Preserved`]) or from the parent's root; `None` when the block's root was
    /// not computed here (a built payload's, from the builder).
    pub state_root_trie: Option<TrieStart>,
}

/// How a block without a BAL is executed: the sequential reference alone, or with prewarming
/// workers executing its transactions speculatively ahead of it on idle threads
/// ([`gigagas_executor::prewarm`]), their results reused by the reference when what they read
/// still holds (`reuse`: optimistic execution). Blocks with a BAL read its keys up front
/// instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prewarming<'a> {
    /// The pool the workers run on (rayon's global pool when `None`).
    pub pool: Option<&'a rayon::ThreadPool>,
    /// Workers (0: the sequential reference alone).
    pub workers: usize,
    /// Commit a worker's result instead of executing the transaction again when every value
    /// it read still holds at that point of the block.
    pub reuse: bool,
}

impl Prewarming<'_> {
    /// No prewarming.
    pub const OFF: Self = Self { pool: None, workers: 0, reuse: false };
}

/// A block executed and checked, not yet state-rooted nor committed: the one shape the file
/// import, the engine tree and (through [`account_updates`]) the payload builder consume.
/// [`execute_block`] makes it, [`state_root_stage`] roots it, [`commit_executed`] stores it.
#[derive(Debug)]
pub struct ExecutedBlock {
    /// Its figures (number, hash, gas, stage times, cache, executor).
    pub block: ImportedBlock,
    pub(crate) parent_root: B256,
    /// Its header.
    pub header: Header,
    /// Its changes, as the blocks executed on top of it read them before it is committed.
    pub diff: Arc<PendingDiff>,
    /// Its state changes ([`account_updates`]): what the state-root stage applies to the trie
    /// and the commit writes to the flat state.
    pub(crate) updates: Vec<AccountUpdate>,
    pub(crate) codes: Vec<(B256, Bytes)>,
    pub(crate) header_rlp: Vec<u8>,
    pub(crate) body_rlp: Vec<u8>,
    pub(crate) receipts_rlp: Vec<u8>,
    /// Before Byzantium: each transaction's state changes, for the intermediate state roots
    /// its receipt carries (filled in by the state-root stage).
    pub(crate) intermediate: Option<(Intermediate, Vec<ReceiptEnvelope>)>,
    pub(crate) bal_rlp: Vec<u8>,
    pub(crate) tx_hashes: Vec<B256>,
    /// The transactions' senders as execution recovered them (or as the builder took them
    /// from the pool): stored with the block for JSON-RPC.
    pub(crate) senders: Vec<Address>,
    /// The state root computed from the given BAL beside execution, when its updates matched
    /// the executed ones: the state-root stage takes it instead of computing it.
    pub(crate) beside_root: Option<Result<StateRootUpdate, StateRootError>>,
    /// How long execution waited for that root after the executor finished (part of
    /// [`ImportedBlock::execution`] as [`execute_block`] measures it).
    pub(crate) beside_wait: Duration,
    /// What its pre-state held of the keys `updates` change, for the state-root stage when no
    /// root was computed beside execution (empty otherwise).
    pub(crate) priors: ChangedPriors,
}

impl ExecutedBlock {
    /// How long [`execute_block`] waited, after the executor finished, for the state root
    /// computed beside it from the given BAL: the state root's share of the critical path, which
    /// a caller timing the stages moves from execution to the state root.
    pub fn state_root_wait(&self) -> Duration {
        self.beside_wait
    }

    /// The body's RLP (transactions, ommers, withdrawals): what the store keeps for it.
    pub fn body_rlp(&self) -> &[u8] {
        &self.body_rlp
    }

    /// The receipts' RLP (a list of EIP-2718 receipt envelopes), as the store keeps them.
    pub fn receipts_rlp(&self) -> &[u8] {
        &self.receipts_rlp
    }

    /// The EIP-7928 block access list's RLP (as executed: the block's own or the one recorded).
    pub fn bal_rlp(&self) -> &[u8] {
        &self.bal_rlp
    }

    /// The transactions' hashes, in block order.
    pub fn tx_hashes(&self) -> &[B256] {
        &self.tx_hashes
    }

    /// The transactions' senders, in block order.
    pub fn senders(&self) -> &[Address] {
        &self.senders
    }
}

/// The block's changes as state-trie updates: changed accounts with their changed slots (and
/// whether their stored storage is wiped first), and deleted accounts.
pub fn account_updates(outcome: &BlockOutcome) -> Vec<AccountUpdate> {
    let mut updates: Vec<AccountUpdate> = outcome
        .post_state
        .0
        .iter()
        .map(|(address, post)| AccountUpdate {
            address: *address,
            info: Some((post.nonce, post.balance, post.code_hash)),
            wiped: outcome.wiped.binary_search(address).is_ok(),
            storage: post.storage.clone(),
        })
        .collect();
    updates.extend(outcome.deleted.iter().map(|address| AccountUpdate {
        address: *address,
        info: None,
        wiped: true,
        storage: Vec::new(),
    }));
    updates.sort_by_key(|u| u.address);
    updates
}

/// How a block with a given EIP-7928 BAL is executed: by the parallel executor driven by it,
/// or (`scheduler: None`) by the sequential reference, the BAL it records compared with it.
#[derive(Clone, Copy)]
pub struct GivenBal<'a> {
    /// The block's BAL.
    pub bal: &'a BlockAccessList,
    /// The engine's executor workers, built once for the node.
    pub pool: &'a rayon::ThreadPool,
    /// The workers beside execution, built once for the node: the state root computed from the
    /// BAL (and its storage tries) and the streamed senders' recovery run there while `pool`
    /// executes.
    pub beside: &'a rayon::ThreadPool,
    /// The order transactions are handed to the workers (`ols` or `gas-limit`: a node has no
    /// earlier run to take `gas-used` from); `None` runs the block on the sequential
    /// reference instead and checks the BAL it records against this one (an operator's
    /// `--engine.parallel false`).
    pub scheduler: Option<Scheduler>,
    /// How the parallel executor's reads reach the store.
    pub io: BalIo,
    /// The BAL's reads' own workers ([`BalIo::PrefetchParallel`]), each one batched read at a
    /// time (the store's multi-get; its blocks of one file read together through io_uring, one
    /// at a time without it); `None` splits them over `pool`.
    pub io_pool: Option<&'a rayon::ThreadPool>,
    /// With `io_pool`: a stored trie (its nodes, and the root they hang under) to read the
    /// trie paths of the accounts and slots the BAL changes ahead from, on `io_pool` while the
    /// block executes, so that its state root finds them cached ([`prefetch_paths`]).
    pub trie_ahead: Option<(&'a (dyn NodeSource + Sync), B256)>,
    /// The parent's trie nodes: with them (and the parallel executor) the state root is
    /// computed from the BAL on a thread of its own while the block executes
    /// ([`crate::bal_root`]); `None` leaves the state root to [`state_root_stage`].
    pub nodes: Option<&'a (dyn NodeSource + Sync)>,
    /// The state trie kept from the block before (reth's preserved sparse trie): the root
    /// computed beside execution starts from it when it is anchored at the parent's root, and
    /// leaves its own there for the next block; `None` starts every root from the parent's.
    pub preserved: Option<&'a PreservedTrie>,
    /// With the parallel executor and senders `known` before the block: the rest are recovered
    /// by the workers as each transaction is claimed ([`Senders::Streamed`]) instead of in a
    /// stage before execution.
    pub stream_senders: bool,
}

impl std::fmt::Debug for GivenBal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GivenBal")
            .field("accounts", &self.bal.len())
            .field("threads", &self.pool.current_num_threads())
            .field("beside_threads", &self.beside.current_num_threads())
            .field("scheduler", &self.scheduler)
            .field("io", &self.io)
            .field("root_beside", &self.nodes.is_some())
            .field("preserved", &self.preserved.is_some())
            .field("stream_senders", &self.stream_senders)
            .finish()
    }
}

/// How the reads of a block executed by the parallel executor reach the store
/// (`--engine.io`). The BAL names every account and slot the block touches, so they can be
/// read before execution starts; docs/benchmarks.md compares the three on generated chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BalIo {
    /// Every key the BAL names read up front, in chunks split over the executor's threads
    /// ([`PreState::prefetch_on`]).
    #[default]
    PrefetchParallel,
    /// Every key the BAL names read up front on the calling thread, one batched multi-get for
    /// the accounts, one for their codes, one for the slots ([`PreState::prefetch`]).
    Prefetch,
    /// Nothing read up front: each worker reads a key when a transaction first needs it.
    OnDemand,
    /// Every key the BAL names read on the BAL's own I/O workers beside execution, which starts
    /// at once: the keys in the order the block's transactions first change them
    /// ([`keys_by_first_change`]), so that the reads run in front of the transactions, and a
    /// worker that needs a key not read yet reads it itself. Without I/O workers
    /// (`--engine.io-depth 0`) it is [`BalIo::PrefetchParallel`].
    PrefetchBeside,
}

impl BalIo {
    /// Every design, the default first.
    pub const ALL: [Self; 4] =
        [Self::PrefetchParallel, Self::Prefetch, Self::OnDemand, Self::PrefetchBeside];

    /// The design's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::PrefetchParallel => "prefetch-parallel",
            Self::Prefetch => "prefetch",
            Self::OnDemand => "on-demand",
            Self::PrefetchBeside => "prefetch-beside",
        }
    }
}

/// What [`run_beside`] did: the outcome checked against the header, and the figures.
struct BesideRun {
    outcome: BlockOutcome,
    /// The changes the outcome makes, and how long checking and making them took.
    checked: (Changes, Duration),
    longest_tx: Duration,
    /// Reading the BAL's keys before execution (beside it: until the read-ahead ended).
    io: Duration,
    /// The state root computed from the BAL beside execution, when it was.
    beside_root: Option<BesideRoot>,
    /// How long the checked outcome waited for the workers beside (the root) to finish.
    beside_wait: Duration,
}

/// A block with a given BAL through the parallel executor on `given.pool` with `scheduler`,
/// and beside it on `given.beside`: the senders the pool did not know (`streamed`) recovered,
/// and with the parent's trie nodes the state root computed from the BAL. The BAL's keys are
/// read first as `given.io` says.
///
/// # Errors
/// [`ImportError`] for a read that failed (not a verdict), or the block's consensus failure.
#[allow(clippy::too_many_arguments)]
fn run_beside(
    chain: &ChainSpec,
    input: &BlockInput,
    senders: Senders<'_>,
    streamed: Option<&StreamedSenders>,
    pre_state: &PreState,
    parent: &Header,
    given: GivenBal<'_>,
    scheduler: Scheduler,
) -> Result<BesideRun, ImportError> {
    let GivenBal { bal, pool, beside: workers, io: design, io_pool, nodes, preserved, .. } = given;
    let trie_ahead = io_pool.zip(given.trie_ahead);
    let number = input.header.number;
    let config = ParallelConfig { threads: pool.current_num_threads(), scheduler, batch: 1 };
    let parent_root = parent.state_root;
    let (mut io, mut beside_root) = (Duration::ZERO, None);
    let mut waited = Instant::now();
    let run = workers.in_place_scope(|scope| {
        // The senders the pool did not know, recovered beside from now on: beside the BAL's
        // reads (which wait on the disk when cold) and ahead of the executor's workers, which
        // recover what it has not reached yet themselves.
        if let Some(streamed) = streamed {
            scope.spawn(move |_| streamed.recover_missing(input));
        }
        let finish = || streamed.map(StreamedSenders::finish);
        // The trie paths the state root will walk, read ahead on the I/O workers.
        if let Some((io_pool, (source, root))) = trie_ahead {
            scope.spawn(move |_| prefetch_trie(source, root, bal, pre_state, io_pool));
        }
        // BAL-hinted I/O: every key the BAL names, read before execution starts (or beside it).
        let ahead = io_pool.filter(|_| design == BalIo::PrefetchBeside);
        if ahead.is_none() {
            let io_start = Instant::now();
            let pool = io_pool.unwrap_or(pool);
            let read = prefetch_bal(pre_state, pool, io_pool.is_some(), design, bal);
            io = io_start.elapsed();
            if let Err(source) = read {
                finish();
                return Err(ImportError::from(ExecutionError::State { block: number, source }));
            }
        }
        // With the parent's trie nodes, the state root from the BAL beside (its storage tries
        // on the same workers) while the engine's pool executes.
        if let Some(nodes) = nodes {
            let beside_root = &mut beside_root;
            scope.spawn(move |_| {
                *beside_root = BesideRoot::compute(parent_root, bal, pre_state, nodes, preserved);
            });
        }
        let execute = || run_parallel(chain, input, senders, pre_state, bal, config, Some(pool));
        let run = match ahead {
            Some(io_pool) => {
                let (run, read, took) = read_ahead_beside(io_pool, pre_state, bal, execute);
                io = took;
                match read {
                    Ok(()) => run,
                    Err(source) => Err(ExecutionError::State { block: number, source }.into()),
                }
            }
            None => execute(),
        };
        finish();
        // The outcome checked against the header, and its changes made, while the root is
        // still being computed: only what needs the root waits for it.
        let run = run.and_then(|(outcome, longest)| {
            let checked = check_outcome(chain, input, &outcome, bal)?;
            Ok((outcome, longest, checked))
        });
        waited = Instant::now();
        run
    });
    let beside_wait = waited.elapsed();
    let (outcome, longest_tx, checked) = run?;
    Ok(BesideRun { outcome, checked, longest_tx, io, beside_root, beside_wait })
}

/// Reads the trie nodes on the paths to the accounts `bal` changes and their changed slots,
/// under `root` in `source`, on `pool` ([`prefetch_paths`]); the leaves of keys whose values
/// `pre_state` has read by the time the walk reaches them are recognised, not read. A failure
/// is only logged: the state root reads the same nodes and reports it.
fn prefetch_trie(
    source: &(dyn NodeSource + Sync),
    root: B256,
    bal: &BlockAccessList,
    pre_state: &PreState,
    pool: &rayon::ThreadPool,
) {
    let start = Instant::now();
    let targets: Vec<PrefetchTarget> = bal
        .iter()
        .filter(|a| a.has_changes())
        .map(|a| PrefetchTarget::new(a.address, a.storage_post_states().map(|(slot, _)| slot)))
        .collect();
    match prefetch_paths(source, root, &targets, &PreStatePriors(pre_state), pool) {
        Ok(stats) => tracing::debug!(
            target: "validation::block",
            nodes = stats.nodes,
            rounds = stats.rounds,
            ms = start.elapsed().as_secs_f64() * 1e3,
            "trie paths read ahead"
        ),
        Err(e) => tracing::debug!(target: "validation::block", %e, "trie read-ahead failed"),
    }
}

/// The fewest keys one multi-get of the BAL's own I/O workers reads: small, so that every
/// worker has a read in flight (the executor's own workers take [`PREFETCH_CHUNK`], where a
/// multi-get's fixed cost matters more than the queue depth).
pub const IO_CHUNK: usize = 16;

/// `execute` with every key `bal` names read into `pre_state` beside it on `io_pool`'s
/// workers ([`BalIo::PrefetchBeside`]): each worker takes the next [`IO_CHUNK`] keys in the
/// order transactions first change them, until none are left or `execute` has returned (what
/// is left unread then was not needed). Returns `execute`'s result, the first failed read, and
/// how long the read-ahead ran.
fn read_ahead_beside<T>(
    io_pool: &rayon::ThreadPool,
    pre_state: &PreState,
    bal: &BlockAccessList,
    execute: impl FnOnce() -> T,
) -> (T, Result<(), gigagas_state::StateError>, Duration) {
    let mut chunks = Vec::new();
    let (mut addresses, mut slots) = (Vec::new(), Vec::new());
    for key in keys_by_first_change(bal) {
        match key {
            BalKey::Account(address) => addresses.push(address),
            BalKey::Slot(address, slot) => slots.push((address, slot)),
        }
        if addresses.len() + slots.len() == IO_CHUNK {
            chunks.push((std::mem::take(&mut addresses), std::mem::take(&mut slots)));
        }
    }
    chunks.push((addresses, slots));
    let (next, done) = (AtomicUsize::new(0), AtomicBool::new(false));
    let failed = OnceLock::new();
    let start = Instant::now();
    let ended = AtomicU64::new(0);
    let ran = io_pool.in_place_scope(|scope| {
        for _ in 0..io_pool.current_num_threads() {
            scope.spawn(|_| {
                while !done.load(Ordering::Relaxed) {
                    let Some((addresses, slots)) = chunks.get(next.fetch_add(1, Ordering::Relaxed))
                    else {
                        break;
                    };
                    if let Err(e) = pre_state.prefetch(addresses, slots) {
                        let _ = failed.set(e);
                        done.store(true, Ordering::Relaxed);
                    }
                }
                let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                ended.fetch_max(nanos, Ordering::Relaxed);
            });
        }
        let ran = execute();
        done.store(true, Ordering::Relaxed);
        ran
    });
    let read = failed.into_inner().map_or(Ok(()), Err);
    (ran, read, Duration::from_nanos(ended.into_inner()))
}

/// Reads every key `bal` names into `pre_state` before execution, as `design` says: split
/// over `pool`'s workers (the BAL's own I/O workers when `io_workers`, in small chunks), on
/// this thread, or not at all (each read when first needed).
fn prefetch_bal(
    pre_state: &PreState,
    pool: &rayon::ThreadPool,
    io_workers: bool,
    design: BalIo,
    bal: &BlockAccessList,
) -> Result<(), gigagas_state::StateError> {
    let addresses: Vec<Address> = bal.iter().map(|a| a.address).collect();
    let slots: Vec<(Address, U256)> = gigagas_bal::storage_keys(bal).collect();
    match design {
        // Beside execution only with I/O workers of its own; else all before, as here.
        BalIo::PrefetchParallel | BalIo::PrefetchBeside => {
            let min_chunk = if io_workers { IO_CHUNK } else { PREFETCH_CHUNK };
            pre_state.prefetch_on(pool, &addresses, &slots, min_chunk)
        }
        BalIo::Prefetch => pre_state.prefetch(&addresses, &slots),
        BalIo::OnDemand => Ok(()),
    }
}

/// One block through the parallel executor driven by `bal`: its outcome and longest
/// transaction.
///
/// On `pool` when given, else on a pool of `config.threads` built for the call.
fn run_parallel(
    chain: &ChainSpec,
    input: &BlockInput,
    senders: Senders<'_>,
    pre_state: &PreState,
    bal: &BlockAccessList,
    config: ParallelConfig,
    pool: Option<&rayon::ThreadPool>,
) -> Result<(BlockOutcome, Duration), ImportError> {
    let block = ParallelBlock { block: input, senders, pre_state, bal, gas_used_hint: None };
    let mut run = match pool {
        Some(pool) => execute_parallel_on(pool, chain, &[block], config),
        None => execute_parallel(chain, &[block], config),
    };
    let ms = |ns: u64| ns as f64 / 1e6;
    tracing::debug!(
        target: "executor::parallel",
        block = input.number(),
        wall_ms = run.wall.as_secs_f64() * 1e3,
        prepare_ms = ms(run.prepare_nanos.iter().sum()),
        commit_ms = ms(run.commit_nanos.iter().sum()),
        transactions_ms = ms(run.tx_nanos.iter().flatten().sum()),
        longest_tx_ms = run.longest_tx().as_secs_f64() * 1e3,
        "parallel run"
    );
    let outcome = run.outcomes.pop().ok_or(ImportError::NoOutcome { number: input.number() })??;
    Ok((outcome, run.longest_tx()))
}

/// The execution stage of one block on top of `parent`, whose state `source` gives: header
/// checks, sender recovery, execution — by the sequential reference (which builds the BAL), or
/// with `given` by the parallel executor driven by that BAL (every write checked against it,
/// reads outside it rejected, the BAL rebuilt from execution compared) — and the checks of
/// `gasUsed`, receipts root, logs bloom, requests hash and BAL hash against the header.
///
/// A read of `source` that fails during execution makes the result
/// [`ExecutionError::Database`] (internal, see [`ImportError::is_internal`]) whatever error the
/// executor reported after it: the verdict of an execution whose reads failed is not about the
/// block. Without `given`, `prewarm` says whether workers prewarm the sequential run. Senders
/// `known` (recovered before, by the pool) are not recovered again.
/// `transactions_root`: as [`check_header`] takes it.
#[allow(clippy::too_many_arguments)]
pub fn execute_block(
    chain: &ChainSpec,
    source: Arc<dyn StateSource>,
    parent: &Header,
    block: Block<TxEnvelope>,
    rlp_len: usize,
    transactions_root: Option<B256>,
    keep_updates: bool,
    given: Option<GivenBal<'_>>,
    prewarm: Prewarming<'_>,
    known: Option<&SenderCache>,
) -> Result<ExecutedBlock, ImportError> {
    let number = block.header.number;
    let pre_state = PreState::backed(source);
    let executed = execute_on(
        chain,
        &pre_state,
        parent,
        block,
        rlp_len,
        transactions_root,
        keep_updates,
        given,
        prewarm,
        known,
    );
    executed.map_err(|e| {
        if e.is_internal() {
            e
        } else {
            source_fault(&pre_state, number).unwrap_or(e)
        }
    })
}

/// [`ExecutionError::Database`] for block `number` when a read of `pre_state`'s source failed:
/// whatever an execution over it concluded (an error, a transaction skipped) is then not about
/// the block.
pub fn source_fault(pre_state: &PreState, number: u64) -> Option<ImportError> {
    let source = pre_state.source_fault()?.clone();
    Some(ExecutionError::Database { block: number, source }.into())
}

/// [`execute_block`] over `pre_state` (backed by the parent's state).
#[allow(clippy::too_many_arguments)]
fn execute_on(
    chain: &ChainSpec,
    pre_state: &PreState,
    parent: &Header,
    block: Block<TxEnvelope>,
    rlp_len: usize,
    transactions_root: Option<B256>,
    keep_updates: bool,
    given: Option<GivenBal<'_>>,
    prewarm: Prewarming<'_>,
    known: Option<&SenderCache>,
) -> Result<ExecutedBlock, ImportError> {
    let start = Instant::now();
    let number = block.header.number;
    let invalid = |reason: String| ImportError::Invalid { number, reason };
    let parent_hash = parent.hash_slow();
    if block.header.parent_hash != parent_hash || number != parent.number + 1 {
        return Err(invalid(format!(
            "does not extend the head {} {parent_hash} (parent hash {})",
            parent.number, block.header.parent_hash
        )));
    }
    check_header(chain, parent, &block.header, &block.body, transactions_root)
        .map_err(|e| invalid(e.to_string()))?;
    check_block_size(chain, &block.header, rlp_len).map_err(|e| invalid(e.to_string()))?;
    let header_rlp = alloy_rlp::encode(&block.header);
    let body_rlp = alloy_rlp::encode(&block.body);
    let hash = block.header.hash_slow();
    let header_checks = start.elapsed();
    let Block { header, body: BlockBody { transactions, ommers, withdrawals } } = block;
    let input =
        BlockInput { hash, header, transactions, claimed_senders: Vec::new(), withdrawals, ommers };
    // Sender recovery before the state root is started beside execution: on few cores the two
    // only contend (recovery keeps every core busy; measured in docs/benchmarks.md). With the
    // parallel executor the senders are streamed instead: those the pool recovered taken from
    // it (none without a pool), the rest recovered beside the BAL's reads and by the worker
    // that claims a transaction.
    let recovery_start = Instant::now();
    let streamed = match (known, &given) {
        (known, Some(g)) if g.stream_senders && g.scheduler.is_some() => Some(match known {
            Some(known) => {
                StreamedSenders::lookup(&input, chain, known).map_err(ExecutionError::from)?
            }
            None => StreamedSenders::unknown(&input, chain),
        }),
        _ => None,
    };
    let (recovered, senders_known) = match (&streamed, known) {
        (Some(streamed), _) => Ok((Vec::new(), streamed.known())),
        (None, Some(known)) => input.par_recover_cached(chain, known),
        (None, None) => input.par_recover(chain).map(|s| (s, 0)),
    }
    .map_err(ExecutionError::from)?;
    let recovery = recovery_start.elapsed();
    let senders_in: Senders<'_> = match &streamed {
        Some(streamed) => streamed.into(),
        None => (&recovered).into(),
    };
    let mut io = Duration::ZERO;
    let mut longest_tx = Duration::ZERO;
    let mut prewarmed = 0;
    let (mut reused, mut stale) = (0, 0);
    let mut beside_root: Option<BesideRoot> = None;
    let mut beside_wait = Duration::ZERO;
    let (outcome, bal, checked) = match given {
        None => {
            let Prewarming { pool, workers, reuse } = prewarm;
            let (outcome, stats) = execute_sequential_prewarmed(
                chain, &input, &recovered, pre_state, pool, workers, reuse,
            );
            prewarmed = stats.executed;
            (reused, stale) = (stats.reused, stats.stale);
            let mut outcome = outcome?;
            let bal = outcome.bal.take().unwrap_or_default();
            let checked = check_outcome(chain, &input, &outcome, &bal)?;
            (outcome, Cow::Owned(bal), checked)
        }
        Some(GivenBal { bal, scheduler: None, .. }) => {
            let outcome = execute_sequential(chain, &input, &recovered, pre_state)?;
            let built = outcome.bal.as_deref().unwrap_or_default();
            if let Some(e) = BalValidationError::mismatch(number, bal, built) {
                return Err(ExecutionError::from(e).into());
            }
            let checked = check_outcome(chain, &input, &outcome, bal)?;
            (outcome, Cow::Borrowed(bal), checked)
        }
        Some(given @ GivenBal { bal, scheduler: Some(scheduler), .. }) => {
            let streamed = streamed.as_ref();
            let run = run_beside(
                chain, &input, senders_in, streamed, pre_state, parent, given, scheduler,
            )?;
            (io, longest_tx, beside_root, beside_wait) =
                (run.io, run.longest_tx, run.beside_root, run.beside_wait);
            (run.outcome, Cow::Borrowed(bal), run.checked)
        }
    };
    // Every transaction ran, so every streamed sender is recovered by now.
    let senders = match &streamed {
        Some(_) => senders_in.to_vec(&input).map_err(ExecutionError::from)?,
        None => recovered,
    };
    // Before Byzantium a receipt carries the state root after its transaction: the parallel
    // executor, driven by the BAL, gives each transaction's account creations and removals.
    let intermediate = if !chain.is_byzantium(number) && !input.transactions.is_empty() {
        let existence = if given.is_some_and(|g| g.scheduler.is_some()) {
            outcome.existence.clone()
        } else {
            let config = ParallelConfig { threads: 1, scheduler: Scheduler::Ols, batch: 1 };
            run_parallel(chain, &input, (&senders).into(), pre_state, &bal, config, None)?
                .0
                .existence
        };
        let per_tx = per_tx_updates(number, &bal, &existence, input.transactions.len(), pre_state)?;
        Some((per_tx, outcome.receipts.clone()))
    } else {
        None
    };

    let (Changes { updates, codes, diff, receipts_rlp, bal_rlp }, outcome_checks) = checked;
    tracing::debug!(
        target: "validation::block",
        number,
        header_checks_ms = header_checks.as_secs_f64() * 1e3,
        outcome_checks_ms = outcome_checks.as_secs_f64() * 1e3,
        root_wait_ms = beside_wait.as_secs_f64() * 1e3,
        "checks beside execution"
    );
    // The root computed beside execution stands only for the updates execution produced.
    let beside_root = beside_root.filter(|b| b.updates == updates);
    let state_root_beside = beside_root.as_ref().map(|b| b.time);
    let state_root_trie = beside_root.as_ref().map(|b| b.trie);
    let beside_root = beside_root.map(|b| b.root);
    let priors = match beside_root {
        Some(_) => ChangedPriors::default(),
        None => ChangedPriors::of(&updates, pre_state),
    };
    let imported = ImportedBlock {
        number,
        hash,
        transactions: input.transactions.len(),
        gas_used: outcome.gas_used,
        imported: true,
        execution: start.elapsed(),
        state_root: Duration::ZERO,
        commit: Duration::ZERO,
        cache: pre_state.cache_stats(),
        accounts_changed: updates.len(),
        slots_changed: updates.iter().map(|u| u.storage.len()).sum(),
        parent_state_root: parent.state_root,
        post_state_root: input.header.state_root,
        updates: keep_updates.then(|| updates.clone()),
        parallel: given.is_some_and(|g| g.scheduler.is_some()),
        recovery,
        senders_known,
        io,
        longest_tx,
        prewarmed,
        reused,
        stale,
        state_root_beside,
        state_root_trie,
    };
    Ok(ExecutedBlock {
        block: imported,
        parent_root: parent.state_root,
        header: input.header,
        diff: Arc::new(diff),
        updates,
        codes,
        header_rlp,
        body_rlp,
        receipts_rlp,
        intermediate,
        bal_rlp,
        tx_hashes: input.transactions.iter().map(|tx| *tx.tx_hash()).collect(),
        senders,
        beside_root,
        beside_wait,
        priors,
    })
}

/// What a block's outcome gives the state root and the store.
struct Changes {
    /// The state-trie updates.
    updates: Vec<AccountUpdate>,
    /// The code the block deployed.
    codes: Vec<(B256, Bytes)>,
    /// The changes as the blocks on top read them.
    diff: PendingDiff,
    /// rlp(receipts), stored.
    receipts_rlp: Vec<u8>,
    /// rlp(BAL), stored.
    bal_rlp: Vec<u8>,
}

impl Changes {
    /// The changes of block `number` (`hash`) from its `outcome` and `bal`; `bal_rlp` is
    /// rlp(`bal`) when encoded already, else empty (encoded here).
    fn of(
        number: u64,
        hash: B256,
        outcome: &BlockOutcome,
        bal: &BlockAccessList,
        mut bal_rlp: Vec<u8>,
    ) -> Self {
        if bal_rlp.is_empty() {
            bal_rlp = alloy_rlp::encode(bal);
        }
        let updates = account_updates(outcome);
        let codes = deployed_codes(bal);
        let diff = pending_diff(number, hash, &updates, &codes);
        let receipts_rlp = alloy_rlp::encode(&outcome.receipts);
        Self { updates, codes, diff, receipts_rlp, bal_rlp }
    }
}

/// [`validate_header_with_buf`] on `outcome` (gas used, logs bloom, receipts root, requests
/// hash, BAL hash), then its [`Changes`] (the BAL's encoding reused); and how long both took.
fn check_outcome(
    chain: &ChainSpec,
    input: &BlockInput,
    outcome: &BlockOutcome,
    bal: &BlockAccessList,
) -> Result<(Changes, Duration), ImportError> {
    let start = Instant::now();
    let mut bal_rlp = Vec::new();
    validate_header_with_buf(chain, input, outcome, bal, &mut bal_rlp)?;
    let changes = Changes::of(input.number(), input.hash, outcome, bal, bal_rlp);
    Ok((changes, start.elapsed()))
}

/// The code a block deployed, by hash, from its BAL's code changes.
fn deployed_codes(bal: &BlockAccessList) -> Vec<(B256, Bytes)> {
    bal.iter()
        .flat_map(|a| a.code_changes.iter())
        .filter(|c| !c.new_code().is_empty())
        .map(|c| (alloy_primitives::keccak256(c.new_code()), c.new_code().clone()))
        .collect()
}

/// Block `number` (`hash`)'s changes as the blocks executed on top of it read them.
fn pending_diff(
    number: u64,
    hash: B256,
    updates: &[AccountUpdate],
    codes: &[(B256, Bytes)],
) -> PendingDiff {
    let mut diff = PendingDiff { number, hash, ..Default::default() };
    for u in updates {
        diff.accounts.insert(u.address, u.info);
        if u.wiped {
            diff.cleared.insert(u.address);
        }
        diff.storage.extend(u.storage.iter().map(|(slot, value)| ((u.address, *slot), *value)));
        if u.storage.iter().any(|(_, value)| !value.is_zero()) {
            diff.with_storage.insert(u.address);
        }
    }
    diff.codes.extend(codes.iter().cloned());
    diff
}

/// A block this node built (gigagas-payload's builder), as an executed block: its changes taken
/// from the builder's `outcome` (which `execution` took) and its state root from the builder's
/// `root` (the state-root stage takes it as a root computed beside execution), so that the tree
/// keeps it and an `engine_newPayload` of it needs no second execution; `senders` (the
/// transactions', from the pool) are stored with it. `None` when the
/// builder's outcome cannot stand for an execution: before Byzantium (receipts there carry
/// per-transaction state roots the builder does not compute) or without the BAL the builder
/// builds.
pub fn executed_from_build(
    chain: &ChainSpec,
    parent: &Header,
    block: &Block<TxEnvelope>,
    outcome: &BlockOutcome,
    root: StateRootUpdate,
    execution: Duration,
    senders: Vec<Address>,
) -> Option<ExecutedBlock> {
    let number = block.header.number;
    let bal = outcome.bal.as_ref()?;
    if !chain.is_byzantium(number) {
        return None;
    }
    let hash = block.header.hash_slow();
    let Changes { updates, codes, diff, receipts_rlp, bal_rlp } =
        Changes::of(number, hash, outcome, bal, Vec::new());
    let imported = ImportedBlock {
        number,
        hash,
        transactions: block.body.transactions.len(),
        gas_used: outcome.gas_used,
        imported: true,
        execution,
        accounts_changed: updates.len(),
        slots_changed: updates.iter().map(|u| u.storage.len()).sum(),
        parent_state_root: parent.state_root,
        post_state_root: block.header.state_root,
        ..Default::default()
    };
    Some(ExecutedBlock {
        block: imported,
        parent_root: parent.state_root,
        header: block.header.clone(),
        diff: Arc::new(diff),
        updates,
        codes,
        header_rlp: alloy_rlp::encode(&block.header),
        body_rlp: alloy_rlp::encode(&block.body),
        receipts_rlp,
        intermediate: None,
        bal_rlp,
        tx_hashes: block.body.transactions.iter().map(|tx| *tx.tx_hash()).collect(),
        senders,
        beside_root: Some(Ok(root)),
        beside_wait: Duration::ZERO,
        priors: ChangedPriors::default(),
    })
}

/// The state-root stage of an executed block: its updates applied to the parent's trie, whose
/// nodes `src` holds (on the trie `preserved` kept when it is anchored at the parent's root,
/// and kept there at the new root afterwards); the root must equal the header's. Returns the
/// new trie nodes.
pub fn state_root_stage<S: NodeSource + Sync>(
    e: &mut ExecutedBlock,
    src: &S,
    preserved: Option<&PreservedTrie>,
) -> Result<Vec<EncodedNode>, ImportError> {
    let number = e.block.number;
    if let Some((intermediate, mut receipts)) = e.intermediate.take() {
        with_intermediate_roots(number, e.parent_root, &intermediate, &mut receipts, src)?;
        let root = alloy_consensus::proofs::calculate_receipt_root(&receipts);
        if root != e.header.receipts_root {
            return Err(ExecutionError::Header {
                block: number,
                field: "receiptsRoot",
                expected: e.header.receipts_root.to_string(),
                found: format!("{root} (intermediate state roots rebuilt per transaction)"),
            }
            .into());
        }
        e.receipts_rlp = alloy_rlp::encode(&receipts);
    }
    let root = match e.beside_root.take() {
        Some(beside) => beside,
        None => {
            let (root, start) =
                update_state_root_on(preserved, e.parent_root, &e.updates, &e.priors, src);
            e.block.state_root_trie = Some(start);
            root
        }
    }
    .map_err(|source| ImportError::Trie { number, source })?;
    if root.root != e.header.state_root {
        return Err(ImportError::StateRoot {
            number,
            expected: e.header.state_root,
            found: root.root,
        });
    }
    Ok(root.nodes)
}

/// The flat state's rows of a block's state-trie updates, as [`BlockCommit`] takes them.
pub(crate) struct FlatRows {
    /// New account values; `None` deletes the account.
    pub(crate) accounts: Vec<(Address, Option<AccountRecord>)>,
    /// New slot values (zero deletes the slot).
    pub(crate) storage: Vec<(Address, U256, U256)>,
    /// Accounts whose storage is cleared first.
    pub(crate) wiped: Vec<Address>,
}

impl FlatRows {
    /// The rows of `updates`.
    pub(crate) fn of(updates: &[AccountUpdate]) -> Self {
        let accounts = updates
            .iter()
            .map(|u| {
                let record = u.info.map(|(nonce, balance, code_hash)| AccountRecord {
                    nonce,
                    balance,
                    code_hash,
                });
                (u.address, record)
            })
            .collect();
        let storage = updates
            .iter()
            .flat_map(|u| u.storage.iter().map(move |(slot, value)| (u.address, *slot, *value)))
            .collect();
        let wiped = updates.iter().filter(|u| u.wiped).map(|u| u.address).collect();
        Self { accounts, storage, wiped }
    }
}

/// The atomic commit of an executed, state-rooted block on top of the stored head.
pub fn commit_executed(
    store: &dyn FullProvider,
    e: &ExecutedBlock,
    trie_nodes: &[EncodedNode],
) -> Result<(), ImportError> {
    let codes: Vec<(B256, &[u8])> = e.codes.iter().map(|(h, c)| (*h, &c[..])).collect();
    let rows = FlatRows::of(&e.updates);
    store.commit_block(&BlockCommit {
        number: e.block.number,
        hash: e.block.hash,
        header: &e.header_rlp,
        body: &e.body_rlp,
        receipts: &e.receipts_rlp,
        bal: Some(&e.bal_rlp),
        wiped: &rows.wiped,
        accounts: &rows.accounts,
        storage: &rows.storage,
        codes: &codes,
        trie_nodes,
        tx_hashes: &e.tx_hashes,
        senders: &e.senders,
    })?;
    Ok(())
}

/// The updates of consecutive blocks merged into one diff, as a megablock applies them: per
/// account the last block's values; a block that deletes the account or wipes its storage drops
/// the slots written before it; later slot values override earlier ones.
pub fn merge_updates<'a>(
    blocks: impl IntoIterator<Item = &'a [AccountUpdate]>,
) -> Vec<AccountUpdate> {
    use std::collections::{btree_map::Entry, BTreeMap};
    let mut merged: BTreeMap<Address, (AccountUpdate, BTreeMap<U256, U256>)> = BTreeMap::new();
    for updates in blocks {
        for u in updates {
            let (m, slots) = match merged.entry(u.address) {
                Entry::Vacant(v) => v.insert((
                    AccountUpdate {
                        address: u.address,
                        info: None,
                        wiped: false,
                        storage: Vec::new(),
                    },
                    BTreeMap::new(),
                )),
                Entry::Occupied(o) => o.into_mut(),
            };
            if u.wiped || u.info.is_none() {
                m.wiped = true;
                slots.clear();
            }
            m.info = u.info;
            slots.extend(u.storage.iter().copied());
        }
    }
    merged
        .into_values()
        .map(|(mut u, slots)| {
            u.storage = slots.into_iter().collect();
            u
        })
        .collect()
}
