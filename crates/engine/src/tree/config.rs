//! The engine tree's settings in one place (reth's `TreeConfig`): how payloads are executed
//! (parallel executor or sequential reference, its scheduler and BAL-hinted I/O, prewarming),
//! how state roots are computed (beside execution, on a preserved trie), and what is kept.
//! Fixed when the tree is built ([`super::BlockTree::with_config`]); the node's `EngineArgs`
//! fill it.

use gigagas_executor::Scheduler;
use gigagas_trie::DEFAULT_TRIE_READ_THREADS;
use gigagas_validation::BalIo;

/// The engine tree's settings. [`TreeConfig::new`] gives the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeConfig {
    /// Workers of the parallel executor: one pool, built with the tree and reused for every
    /// payload (`--engine.threads`).
    pub threads: usize,
    /// Payloads that carry a BAL run on the parallel executor (default); else every payload on
    /// the sequential reference, its BAL checked against the one it records
    /// (`--engine.parallel`).
    pub parallel: bool,
    /// The parallel executor's order (`--engine.scheduler`; default `gas-limit`).
    pub scheduler: Scheduler,
    /// Payloads without a BAL are prewarmed: `threads - 1` workers execute their transactions
    /// speculatively ahead of the sequential reference to warm the state cache (default;
    /// `--engine.prewarm`).
    pub prewarm: bool,
    /// With `prewarm`, the prewarming workers' results are committed in order when every value
    /// they read still holds (off by default; `--engine.optimistic`).
    pub optimistic: bool,
    /// A payload with a BAL gets its state root computed from the BAL beside execution
    /// (default); else after it, from the executed changes (`--engine.state-root-beside`).
    pub state_root_beside: bool,
    /// The state trie a payload's root was computed on is kept, pruned to its top levels, for
    /// the payload that builds on it (default; reth's preserved sparse trie); else every root
    /// starts from the parent's (`--engine.preserve-trie`).
    pub preserve_trie: bool,
    /// With `preserve_trie`, threads on which a state root's missing trie nodes are read level
    /// by level before its update walks them, as many reads in flight at once
    /// (`--engine.trie-read-threads`; default [`DEFAULT_TRIE_READ_THREADS`]); 0: the update
    /// reads each where its walk meets it, one at a time.
    pub trie_read_threads: usize,
    /// The senders of a payload with a BAL that the pool did not recover are recovered by the
    /// parallel executor's workers as they claim their transactions (default); else all before
    /// execution (`--engine.stream-senders`).
    pub stream_senders: bool,
    /// Payloads built for a forkchoice update with attributes are kept as executed, so that
    /// their newPayload executes nothing again (default, reth's design); the dev chain turns it
    /// off so that its own blocks are validated like any other.
    pub keep_built: bool,
    /// How the parallel executor's reads of a payload's BAL keys reach the store
    /// (`--engine.io`; default [`BalIo::PrefetchParallel`]).
    pub io: BalIo,
    /// Threads of the BAL's own reads (`--engine.io-depth`): each thread's share of a payload's
    /// BAL keys one batched read, whose blocks of one table file reach the disk together
    /// through io_uring (one at a time without it: the threads are then the queue depth); 0
    /// splits them over the executor's threads (the default).
    pub io_depth: usize,
    /// Each executed block keeps its state-trie updates (`ImportedBlock::updates`, for
    /// megablock roots; off by default).
    pub keep_updates: bool,
    /// The trie nodes no state of the last blocks reaches are pruned while the tree runs
    /// (`--prune.trie.*`); `None` (the default here; the node turns it on): never.
    pub prune: Option<super::pruner::TriePruneConfig>,
}

impl TreeConfig {
    /// The defaults, with `threads` executor workers.
    pub fn new(threads: usize) -> Self {
        Self {
            threads,
            parallel: true,
            scheduler: Scheduler::GasLimit,
            prewarm: true,
            optimistic: false,
            state_root_beside: true,
            preserve_trie: true,
            trie_read_threads: DEFAULT_TRIE_READ_THREADS,
            stream_senders: true,
            keep_built: true,
            io: BalIo::default(),
            io_depth: 0,
            keep_updates: false,
            prune: None,
        }
    }

    /// With the parallel executor on or off, and its scheduler.
    pub fn with_executor(mut self, parallel: bool, scheduler: Scheduler) -> Self {
        self.parallel = parallel;
        self.scheduler = scheduler;
        self
    }

    /// With prewarming on or off, and optimistic reuse of its results.
    pub fn with_prewarm(mut self, prewarm: bool, optimistic: bool) -> Self {
        self.prewarm = prewarm;
        self.optimistic = optimistic;
        self
    }

    /// With the state root computed beside execution or after it.
    pub fn with_state_root_beside(mut self, beside: bool) -> Self {
        self.state_root_beside = beside;
        self
    }

    /// With the state trie kept from one payload to the next, or not.
    pub fn with_preserved_trie(mut self, preserve: bool) -> Self {
        self.preserve_trie = preserve;
        self
    }

    /// With a state root's missing trie nodes read on `threads` threads before its update (0:
    /// one at a time while it walks).
    pub fn with_trie_read_threads(mut self, threads: usize) -> Self {
        self.trie_read_threads = threads;
        self
    }

    /// With the senders the pool did not recover streamed into the executor, or recovered
    /// before it.
    pub fn with_stream_senders(mut self, stream: bool) -> Self {
        self.stream_senders = stream;
        self
    }

    /// With built payloads kept as executed, or not.
    pub fn with_built_kept(mut self, keep: bool) -> Self {
        self.keep_built = keep;
        self
    }

    /// With the BAL's keys read by `io`, on `depth` threads of their own (0: the executor's).
    pub fn with_io(mut self, io: BalIo, depth: usize) -> Self {
        self.io = io;
        self.io_depth = depth;
        self
    }

    /// With the trie pruned while the tree runs (`Some`), or never.
    pub fn with_trie_pruning(mut self, prune: Option<super::pruner::TriePruneConfig>) -> Self {
        self.prune = prune;
        self
    }

    /// With each executed block's state-trie updates kept, or not.
    pub fn with_updates_kept(mut self, keep: bool) -> Self {
        self.keep_updates = keep;
        self
    }
}
