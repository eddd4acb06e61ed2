//! Background persistence of canonical blocks, as reth's `PersistenceService`: a forkchoice
//! update that extends the head hands the newly canonical blocks to one thread, which commits
//! them to the store in order (each block in one atomic write batch) while the engine goes on
//! executing the next payload on top of them from memory.
//!
//! Flow: [`Persistence::queue`] (engine thread, under the tree's lock) → the `persistence`
//! thread commits each block ([`commit_executed`]) → its figures (or the first fault) wait in
//! the shared progress, the engine is told through the notify callback, and takes them with
//! [`Persistence::take_done`] / [`Persistence::take_error`]. After a fault the thread commits
//! nothing more until the engine has taken the error; the store then holds every block before
//! the failed one, and the engine queues the rest again with its next forkchoice update.

use gigagas_chain_state::ExecutedBlockWithTrie;
use gigagas_storage_api::FullProvider;
use gigagas_validation::{commit_executed, ImportError, ImportedBlock};
use std::{
    sync::{mpsc, Arc, Condvar, Mutex, MutexGuard},
    thread::JoinHandle,
    time::Instant,
};

/// Called on the persistence thread after each block it committed (or failed to commit).
pub(super) type Notify = Arc<dyn Fn() + Send + Sync>;

/// What the persistence thread has done that the engine has not taken yet.
#[derive(Default)]
struct Progress {
    /// Blocks handed over and not yet committed (or skipped after a fault).
    queued: usize,
    /// Blocks committed, lowest first, with their commit time.
    done: Vec<ImportedBlock>,
    /// The first fault; nothing is committed while it is here.
    error: Option<ImportError>,
    notify: Option<Notify>,
}

#[derive(Default)]
struct Shared {
    progress: Mutex<Progress>,
    /// Signalled whenever `queued` drops.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The persistence thread and what it reports. Dropping it lets the thread finish what was
/// queued and joins it.
pub(super) struct Persistence {
    tx: Option<mpsc::Sender<Vec<Arc<ExecutedBlockWithTrie>>>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Option<()>>>,
}

impl std::fmt::Debug for Persistence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persistence").field("queued", &self.shared.lock().queued).finish()
    }
}

impl Persistence {
    /// Starts the thread (named `persistence`) committing to `store`: a critical thread of
    /// `tasks` when given (its panic shuts the node down), else a plain one (its panic leaves
    /// the blocks in memory and the next forkchoice update reports the fault).
    ///
    /// # Errors
    /// The OS error when the thread cannot be started.
    pub(super) fn spawn(
        store: Arc<dyn FullProvider>,
        tasks: Option<&gigagas_tasks::TaskExecutor>,
    ) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Vec<Arc<ExecutedBlockWithTrie>>>();
        let shared = Arc::new(Shared::default());
        let worker = shared.clone();
        let work = move || run(&*store, &worker, &rx);
        let thread = match tasks {
            Some(tasks) => tasks.spawn_critical_thread("persistence", work)?,
            None => std::thread::Builder::new().name("persistence".into()).spawn(move || {
                work();
                Some(())
            })?,
        };
        Ok(Self { tx: Some(tx), shared, thread: Some(thread) })
    }

    /// Calls `notify` (on the persistence thread) after every block committed or failed.
    pub(super) fn set_notify(&self, notify: Notify) {
        self.shared.lock().notify = Some(notify);
    }

    /// Hands `blocks` (canonical, each the child of the one before, the first the child of the
    /// last block queued or of the store's head) to the thread.
    pub(super) fn queue(&self, blocks: Vec<Arc<ExecutedBlockWithTrie>>) {
        if blocks.is_empty() {
            return;
        }
        self.shared.lock().queued += blocks.len();
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(blocks).is_ok());
        if !sent {
            // The thread is gone (it panicked): the blocks stay in memory, the fault is ours.
            let mut progress = self.shared.lock();
            progress.queued = 0;
            progress.error.get_or_insert(ImportError::Persistence);
        }
    }

    /// Waits until every queued block is committed (or skipped after a fault).
    pub(super) fn wait_idle(&self) {
        self.wait_while(|progress| progress.queued > 0);
    }

    /// After a fault, waits until the thread has skipped every block it was handed (so that
    /// taking the error does not let it commit the rest out of order).
    pub(super) fn wait_idle_if_failed(&self) {
        self.wait_while(|progress| progress.error.is_some() && progress.queued > 0);
    }

    fn wait_while(&self, busy: impl Fn(&Progress) -> bool) {
        let mut progress = self.shared.lock();
        while busy(&progress) {
            progress = self.shared.changed.wait(progress).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// The blocks committed since the last call, lowest first.
    pub(super) fn take_done(&self) -> Vec<ImportedBlock> {
        std::mem::take(&mut self.shared.lock().done)
    }

    /// The fault that stopped persistence, if any; taking it lets the thread commit again.
    pub(super) fn take_error(&self) -> Option<ImportError> {
        self.shared.lock().error.take()
    }
}

impl Drop for Persistence {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(
    store: &dyn FullProvider,
    shared: &Shared,
    rx: &mpsc::Receiver<Vec<Arc<ExecutedBlockWithTrie>>>,
) {
    while let Ok(blocks) = rx.recv() {
        for block in blocks {
            let failed = shared.lock().error.is_some();
            let outcome = (!failed).then(|| {
                let start = Instant::now();
                commit_executed(store, &block.executed, &block.nodes).map(|()| start.elapsed())
            });
            let notify = {
                let mut progress = shared.lock();
                progress.queued = progress.queued.saturating_sub(1);
                match outcome {
                    Some(Ok(commit)) => {
                        progress.done.push(ImportedBlock { commit, ..block.executed.block.clone() })
                    }
                    Some(Err(e)) => progress.error = Some(e),
                    None => {}
                }
                shared.changed.notify_all();
                progress.notify.clone()
            };
            if let Some(notify) = notify {
                notify();
            }
        }
    }
}
