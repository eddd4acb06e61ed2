//! Pruning the trie while the node runs (reth's `Pruner`, run beside persistence; geth's path
//! scheme keeps the latest state and 128 diff layers).
//!
//! Trie nodes are stored by hash, so every block adds the nodes on the paths it changed and the
//! nodes they replaced stay: without pruning the datadir grows with every block. Every
//! [`TriePruneConfig::interval`] blocks the store's head moves, the tree starts one prune on a
//! thread of its own (`trie-pruner`): the nodes that none of the last
//! [`TriePruneConfig::keep`] canonical blocks' state roots reaches are deleted
//! ([`TriePruner::prune_trie`], mark and sweep), while payloads execute and blocks are committed
//! as before (the store spares what is written meanwhile). States older than the window are
//! then answered as pruned; a reorg inside the window unwinds as before.
//!
//! Flow: a forkchoice update (or a block committed by a backfill) → [`Pruner::on_head`] with
//! the store's head → if `interval` blocks passed since the last prune and none runs: the prune
//! on its thread, keeping the last `keep` blocks' states as the store's head stands when it
//! begins ([`KeepStates::Latest`]) → its figures logged (`engine::prune`).

use gigagas_storage_api::{FullProvider, KeepStates, ProviderError};
use std::{sync::Arc, thread::JoinHandle, time::Instant};

/// When and how much of the trie the engine prunes (`--prune.trie.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriePruneConfig {
    /// Canonical blocks below and including the head whose state stays (the reorg window;
    /// at least 1).
    pub keep: u64,
    /// Blocks the store's head moves between two prunes (at least 1). Each prune reads every
    /// node of the kept states, so this trades the prune's work against the datadir's growth
    /// between prunes.
    pub interval: u64,
    /// Threads reading the kept nodes (more reads in flight on a cold disk).
    pub threads: usize,
}

impl TriePruneConfig {
    /// The node's default: keep 128 blocks' states (geth's diff layers), prune every 8,192
    /// blocks (a bit over a day of 12-second slots), reading on 8 threads.
    pub const DEFAULT: Self = Self { keep: 128, interval: 8_192, threads: 8 };
}

/// The tree's pruner: when the last prune ran, and the one running.
#[derive(Debug)]
pub(super) struct Pruner {
    config: TriePruneConfig,
    store: Arc<dyn FullProvider>,
    /// The head the last prune kept (the store's record implies it after a restart).
    last: u64,
    running: Option<JoinHandle<()>>,
}

impl Pruner {
    /// The pruner of `store`, the last prune taken from its record of the earliest state held.
    ///
    /// # Errors
    /// [`ProviderError`] when the record cannot be read.
    pub(super) fn new(
        store: Arc<dyn FullProvider>,
        config: TriePruneConfig,
    ) -> Result<Self, ProviderError> {
        let config = TriePruneConfig {
            keep: config.keep.max(1),
            interval: config.interval.max(1),
            threads: config.threads.max(1),
        };
        let earliest = store.earliest_state_block()?;
        let last = if earliest == 0 { 0 } else { earliest + config.keep - 1 };
        Ok(Self { config, store, last, running: None })
    }

    /// Starts a prune keeping the states of the last `keep` blocks when the store's `head` is
    /// `interval` blocks past the last prune's, older blocks exist and no prune runs.
    pub(super) fn on_head(&mut self, head: u64) {
        if self.running.as_ref().is_some_and(|r| !r.is_finished()) {
            return;
        }
        self.join();
        if head < self.config.keep || head < self.last + self.config.interval {
            return;
        }
        let (store, config) = (self.store.clone(), self.config);
        let spawned = std::thread::Builder::new()
            .name("trie-pruner".into())
            .spawn(move || prune(&*store, head, config));
        match spawned {
            Ok(thread) => {
                self.last = head;
                self.running = Some(thread);
            }
            Err(e) => tracing::error!(target: "engine::prune", %e, "cannot start the trie pruner"),
        }
    }

    /// Waits for the running prune, if any.
    pub(super) fn join(&mut self) {
        if let Some(thread) = self.running.take() {
            if thread.join().is_err() {
                tracing::error!(target: "engine::prune", "the trie pruner panicked");
            }
        }
    }
}

/// One prune keeping the states of the last `config.keep` blocks (from the store's head as the
/// prune begins: `head` is the one that started it); its figures or its fault logged (a fault
/// leaves the trie as it was, or with fewer unreachable nodes).
fn prune(store: &dyn FullProvider, head: u64, config: TriePruneConfig) {
    let start = Instant::now();
    tracing::info!(target: "engine::prune", head, keep = config.keep, "trie prune started");
    match store.prune_trie(KeepStates::Latest(config.keep), config.threads, &mut |_, _| {}) {
        Ok(stats) => tracing::info!(
            target: "engine::prune",
            first_kept = stats.first_kept,
            kept = stats.kept,
            deleted = stats.deleted,
            written_meanwhile = stats.written_meanwhile,
            mark_s = stats.mark_time.as_secs_f64(),
            sweep_s = stats.sweep_time.as_secs_f64(),
            seconds = start.elapsed().as_secs_f64(),
            "trie pruned"
        ),
        Err(e) => tracing::error!(target: "engine::prune", head, %e, "trie prune failed"),
    }
}
