//! Prewarming for blocks that come without a BAL (every block before Amsterdam): while the
//! in-order run executes the block on the calling thread, idle workers of rayon's global pool
//! execute its transactions speculatively against the pre-block state, so that the accounts,
//! slots and codes they read are in the [`PreState`]'s cache when the in-order run reaches them
//! (reth's payload processor does the same before its in-order run).
//!
//! Flow: [`execute_sequential_prewarmed`] spawns `workers` tasks (on the given pool, else on
//! rayon's global one), then runs the block in order (the reference, unchanged), publishing
//! after each transaction how many are done. A worker task claims the next transaction index,
//! skips ahead past what the in-order run has already done, and executes the transaction on an
//! EVM over the pre-block state with the nonce check off (a sender's later transactions run
//! too); its result is dropped. After a few transactions the task spawns its continuation and
//! returns, so that a thread which took it while waiting for its own work is not held. When the
//! in-order run ends the workers stop at their next claim.
//!
//! With `reuse` ([`crate::optimistic`]) the workers keep what they executed — the result, the
//! keys read, the fee held back — and the in-order run commits a kept result instead of
//! executing the transaction when every value it read still holds at that point of the block.
//!
//! Correctness does not depend on the workers: they only read, and what they read is the
//! pre-block state the in-order run reads too; a kept result is committed only when the
//! in-order run would have computed the same one. A speculative transaction the EVM rejects
//! (a balance an earlier transaction funds) is skipped. A read that fails is recorded by the
//! pre-state ([`PreState::source_fault`]): should the in-order run then fail, the block's
//! verdict is the internal fault, never INVALID.

use crate::{
    evm_config::EvmConfig,
    optimistic::{RecordingDb, Speculated, Speculations},
    sequential, BlockOutcome, ExecutionError,
};
use alloy_evm::{Evm, EvmEnv, FromRecoveredTx};
use alloy_primitives::Address;
use gigagas_primitives::{BlockInput, ChainSpec};
use gigagas_state::PreState;
use revm::{context::TxEnv, database::WrapDatabaseRef};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// How far ahead of the in-order run a worker starts (transactions): the next ones are being
/// read by the in-order run itself, warming them would race it.
const LEAD: usize = 2;

/// [`LEAD`] when the workers' results are reused: the in-order run executes the next
/// transactions itself while a worker runs one further on, whose result is then ready when the
/// in-order run gets there (a lead of one had the two finish the same transaction together).
const REUSE_LEAD: usize = 3;

/// Transactions a worker task executes before it hands its thread back (spawning its
/// continuation): a thread that picked the task up while waiting for its own work (a rayon
/// `join` in the state-root stage of the previous block) returns to it soon.
const BURST: usize = 4;

/// What the prewarming workers did for one block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrewarmStats {
    /// Transactions executed speculatively.
    pub executed: u64,
    /// Transactions the EVM rejected speculatively (balance, fee cap): not warmed.
    pub rejected: u64,
    /// Speculative results the in-order run committed instead of executing the transaction
    /// (with `reuse`; each read still held).
    pub reused: u64,
    /// Speculative results the in-order run found stale: a value the transaction read had been
    /// changed by an earlier one of the block (or its nonce was not yet the sender's).
    pub stale: u64,
}

/// [`sequential::execute_sequential`] on the calling thread, with `workers`
/// speculative prewarming tasks beside it on `pool` (rayon's global pool when `None`; a task
/// waits there for an idle thread). `workers == 0` runs the block alone. With `reuse`, a
/// speculative result whose reads still hold is committed instead of executing the
/// transaction again ([`crate::optimistic`]). The outcome is the in-order run's, whatever the
/// workers did.
///
/// # Errors
/// As [`sequential::execute_sequential`].
pub fn execute_sequential_prewarmed(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    pre_state: &PreState,
    pool: Option<&rayon::ThreadPool>,
    workers: usize,
    reuse: bool,
) -> (Result<BlockOutcome, ExecutionError>, PrewarmStats) {
    let progress = AtomicUsize::new(0);
    let speculations = reuse.then(|| Speculations::new(block.transactions.len()));
    let run = || {
        let beside =
            sequential::Beside { progress: Some(&progress), speculations: speculations.as_ref() };
        sequential::execute_in_order(chain, block, senders, pre_state, true, beside)
    };
    if workers == 0 || block.transactions.len() <= LEAD {
        return (run(), PrewarmStats::default());
    }
    let config = EvmConfig::new(chain);
    let mut env = config.evm_env(&block.header);
    // A sender's later transactions run against its pre-block nonce (a kept result is checked
    // against the sender's nonce when it is reused).
    env.cfg_env.disable_nonce_check = true;
    let shared = Prewarm {
        config,
        env,
        block,
        senders,
        pre_state,
        progress: &progress,
        speculations: speculations.as_ref(),
        next: AtomicUsize::new(if reuse { REUSE_LEAD } else { LEAD }),
        done: AtomicBool::new(false),
        executed: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
    };
    let outcome = match pool {
        Some(pool) => pool.in_place_scope(|scope| shared.beside(scope, workers, run)),
        None => rayon::in_place_scope(|scope| shared.beside(scope, workers, run)),
    };
    let stats = PrewarmStats {
        executed: shared.executed.into_inner(),
        rejected: shared.rejected.into_inner(),
        reused: speculations.as_ref().map_or(0, |s| s.reused.load(Ordering::Relaxed)),
        stale: speculations.as_ref().map_or(0, |s| s.stale.load(Ordering::Relaxed)),
    };
    (outcome, stats)
}

/// The state the prewarming workers share with the in-order run.
struct Prewarm<'a> {
    config: EvmConfig<'a>,
    /// The block's EVM environment, the nonce check off.
    env: EvmEnv,
    block: &'a BlockInput,
    senders: &'a [Address],
    pre_state: &'a PreState,
    /// Transactions the in-order run has done.
    progress: &'a AtomicUsize,
    /// Where the workers leave their results when they are to be reused.
    speculations: Option<&'a Speculations>,
    /// The next transaction a worker claims.
    next: AtomicUsize,
    /// Set when the in-order run has ended.
    done: AtomicBool,
    executed: AtomicU64,
    rejected: AtomicU64,
}

impl Prewarm<'_> {
    /// Spawns `workers` on `scope`, then runs `run` (the in-order run) on this thread and tells
    /// the workers to stop.
    fn beside<'s, T>(
        &'s self,
        scope: &rayon::Scope<'s>,
        workers: usize,
        run: impl FnOnce() -> T,
    ) -> T {
        for _ in 0..workers {
            scope.spawn(move |scope| self.work(scope));
        }
        let outcome = run();
        self.done.store(true, Ordering::Relaxed);
        outcome
    }

    /// One worker task: claims up to [`BURST`] transactions, then spawns its continuation,
    /// until the block's end or the in-order run's.
    fn work<'s>(&'s self, scope: &rayon::Scope<'s>) {
        let more = match self.speculations {
            // No State, no commit: every read goes through the pre-state's shared cache.
            None => {
                let mut evm = self.config.evm(WrapDatabaseRef(self.pre_state), self.env.clone());
                self.burst(|_, tx| evm.transact(tx).is_ok())
            }
            Some(speculations) => {
                let db = WrapDatabaseRef(RecordingDb::new(self.pre_state, speculations));
                let mut evm = self.config.evm(db, self.env.clone()).into_inner();
                self.burst(|i, tx| match Speculated::execute(&mut evm, i, tx) {
                    Some(speculated) => {
                        speculations.put(i, speculated);
                        true
                    }
                    None => false,
                })
            }
        };
        if more {
            scope.spawn(move |scope| self.work(scope));
        }
    }

    /// Executes up to [`BURST`] claimed transactions with `run(index, tx)` (true: executed,
    /// false: the EVM rejected it); whether the worker should go on.
    fn burst(&self, mut run: impl FnMut(usize, TxEnv) -> bool) -> bool {
        let n = self.block.transactions.len();
        for _ in 0..BURST {
            if self.done.load(Ordering::Relaxed) {
                return false;
            }
            let mut i = self.next.fetch_add(1, Ordering::Relaxed);
            let lead = if self.speculations.is_some() { REUSE_LEAD } else { LEAD };
            let reached = self.progress.load(Ordering::Relaxed) + lead;
            if i < reached {
                // Behind the in-order run: jump ahead of it.
                self.next.fetch_max(reached + 1, Ordering::Relaxed);
                i = reached;
            }
            if i >= n {
                return false;
            }
            let tx = TxEnv::from_recovered_tx(&self.block.transactions[i], self.senders[i]);
            let counter = if run(i, tx) { &self.executed } else { &self.rejected };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        true
    }
}
