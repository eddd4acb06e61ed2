//! Supervised tasks (reth's `crates/tasks`): a [`TaskManager`] and the [`TaskExecutor`]
//! handles it gives out.
//!
//! A task or thread spawned (or watched) as *critical* is one the node cannot run without: its
//! panic is caught, logged with the task's name and reported to the manager, and the node —
//! which waits on [`TaskManager::wait_for_panic`] beside its shutdown signal — shuts down and
//! exits with that [`PanickedTaskError`]. A plain task ([`TaskExecutor::spawn`]) is not
//! watched: its panic ends only it.
//!
//! Flow: [`TaskManager::current`] → [`TaskManager::executor`] (cheap clones, handed to whoever
//! spawns) → [`TaskExecutor::spawn_critical`] / [`TaskExecutor::spawn_critical_thread`] /
//! [`TaskExecutor::watch_critical_thread`] → on a panic, [`PanickedTaskError`] on the manager's
//! channel → [`TaskManager::wait_for_panic`] resolves with the first one.
//!
//! Graceful shutdown (reth's `GracefulShutdown`): a task spawned with
//! [`TaskExecutor::spawn_critical_with_graceful_shutdown_signal`] gets a [`GracefulShutdown`],
//! a signal it awaits beside its work and a guard it drops when it has wound down (sessions
//! told goodbye, say); [`TaskManager::graceful_shutdown_with_timeout`] fires the signal and
//! waits until every such guard is dropped, or the timeout passes.

pub mod priority;

use futures::FutureExt;
use std::{
    any::Any,
    future::Future,
    panic::AssertUnwindSafe,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};
use tokio::{
    runtime::Handle,
    sync::{mpsc, watch, Notify},
    task::JoinHandle,
};

/// A critical task or thread panicked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("critical task `{task}` panicked: {message}")]
pub struct PanickedTaskError {
    /// The task's name, as it was spawned.
    pub task: &'static str,
    /// The panic's message (its payload when that is a string).
    pub message: String,
}

/// Receives the panics of the critical tasks its executors spawn.
#[derive(Debug)]
pub struct TaskManager {
    handle: Handle,
    panicked_tx: mpsc::UnboundedSender<PanickedTaskError>,
    panicked_rx: mpsc::UnboundedReceiver<PanickedTaskError>,
    shutdown: Arc<ShutdownState>,
}

/// The graceful shutdown signal and the count of tasks still winding down, shared by a
/// manager and its executors.
#[derive(Debug)]
struct ShutdownState {
    /// `true` once fired.
    fired: watch::Sender<bool>,
    /// Guards not yet dropped.
    running: AtomicUsize,
    /// Woken as each guard drops.
    dropped: Notify,
}

impl Default for ShutdownState {
    fn default() -> Self {
        Self {
            fired: watch::channel(false).0,
            running: AtomicUsize::new(0),
            dropped: Notify::new(),
        }
    }
}

/// Resolves once the node shuts down gracefully ([`TaskManager::graceful_shutdown_with_timeout`]),
/// or once the manager and every executor are gone.
#[derive(Debug)]
pub struct Shutdown(watch::Receiver<bool>);

impl Shutdown {
    /// Waits for the signal.
    pub async fn fired(mut self) {
        // An error: the manager and its executors are gone, which is a shutdown too.
        let _ = self.0.wait_for(|fired| *fired).await;
    }
}

/// What a task spawned with a graceful shutdown signal gets: the [`Shutdown`] signal to await
/// beside its work, and a guard to drop once it has wound down.
#[derive(Debug)]
pub struct GracefulShutdown {
    /// The signal.
    pub signal: Shutdown,
    /// Dropped when the task has wound down (the manager's wait ends when all are).
    pub guard: GracefulShutdownGuard,
}

/// Held by a task while it winds down; the manager's graceful shutdown waits for its drop.
#[derive(Debug)]
pub struct GracefulShutdownGuard(Arc<ShutdownState>);

impl GracefulShutdownGuard {
    fn new(state: Arc<ShutdownState>) -> Self {
        state.running.fetch_add(1, Ordering::SeqCst);
        Self(state)
    }
}

impl Drop for GracefulShutdownGuard {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
        self.0.dropped.notify_waiters();
    }
}

impl TaskManager {
    /// A manager whose executors spawn on the runtime behind `handle`.
    pub fn new(handle: Handle) -> Self {
        let (panicked_tx, panicked_rx) = mpsc::unbounded_channel();
        Self { handle, panicked_tx, panicked_rx, shutdown: Arc::default() }
    }

    /// A manager on the current Tokio runtime.
    ///
    /// # Panics
    /// Outside a Tokio runtime (as [`Handle::current`]).
    pub fn current() -> Self {
        Self::new(Handle::current())
    }

    /// An executor that spawns on this manager's runtime and reports to it.
    pub fn executor(&self) -> TaskExecutor {
        TaskExecutor {
            handle: self.handle.clone(),
            panicked_tx: self.panicked_tx.clone(),
            shutdown: self.shutdown.clone(),
        }
    }

    /// Fires the graceful shutdown signal and waits until every task spawned with it has
    /// dropped its guard, for `timeout` at most. Returns whether all had.
    pub async fn graceful_shutdown_with_timeout(&self, timeout: Duration) -> bool {
        self.shutdown.fired.send_replace(true);
        let all_dropped = async {
            loop {
                let dropped = self.shutdown.dropped.notified();
                if self.shutdown.running.load(Ordering::SeqCst) == 0 {
                    return;
                }
                dropped.await;
            }
        };
        tokio::time::timeout(timeout, all_dropped).await.is_ok()
    }

    /// Resolves with the first panic of a critical task not yet taken; pending for as long as
    /// none panics (the manager holds a sender of its own, so the channel never closes).
    pub async fn wait_for_panic(&mut self) -> PanickedTaskError {
        match self.panicked_rx.recv().await {
            Some(panic) => panic,
            None => std::future::pending().await,
        }
    }
}

/// Spawns tasks and threads for a [`TaskManager`]; cheap to clone.
#[derive(Debug, Clone)]
pub struct TaskExecutor {
    handle: Handle,
    panicked_tx: mpsc::UnboundedSender<PanickedTaskError>,
    shutdown: Arc<ShutdownState>,
}

impl TaskExecutor {
    /// The graceful shutdown signal, to await beside a task's work.
    pub fn on_shutdown_signal(&self) -> Shutdown {
        Shutdown(self.shutdown.fired.subscribe())
    }

    /// Spawns the future `f` makes of a [`GracefulShutdown`] as critical task `name` (as
    /// [`TaskExecutor::spawn_critical`]): the task winds down when the signal fires and drops
    /// the guard when done; the manager's graceful shutdown waits for that.
    pub fn spawn_critical_with_graceful_shutdown_signal<F>(
        &self,
        name: &'static str,
        f: impl FnOnce(GracefulShutdown) -> F,
    ) -> JoinHandle<Option<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let shutdown = GracefulShutdown {
            signal: self.on_shutdown_signal(),
            guard: GracefulShutdownGuard::new(self.shutdown.clone()),
        };
        self.spawn_critical(name, f(shutdown))
    }

    /// Spawns `future`, unwatched: a panic in it ends only it.
    pub fn spawn<F>(&self, future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(future)
    }

    /// Spawns `future` as critical task `name`. Its handle resolves to its output, or to `None`
    /// when it panicked (the panic is then logged and reported to the manager).
    pub fn spawn_critical<F>(&self, name: &'static str, future: F) -> JoinHandle<Option<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let panicked_tx = self.panicked_tx.clone();
        self.handle.spawn(async move {
            match AssertUnwindSafe(future).catch_unwind().await {
                Ok(output) => Some(output),
                Err(payload) => {
                    report(&panicked_tx, name, payload);
                    None
                }
            }
        })
    }

    /// Runs `f` on a new OS thread named `name`, as a critical thread. Its handle gives `f`'s
    /// result, or `None` when it panicked (logged and reported to the manager).
    ///
    /// # Errors
    /// The OS error when the thread cannot be started.
    pub fn spawn_critical_thread<F, T>(
        &self,
        name: &'static str,
        f: F,
    ) -> std::io::Result<std::thread::JoinHandle<Option<T>>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let panicked_tx = self.panicked_tx.clone();
        std::thread::Builder::new().name(name.into()).spawn(move || match std::panic::catch_unwind(
            AssertUnwindSafe(f),
        ) {
            Ok(value) => Some(value),
            Err(payload) => {
                report(&panicked_tx, name, payload);
                None
            }
        })
    }

    /// Watches `thread`, already running (one a library started), as critical thread `name`:
    /// a blocking task waits for it to end. The returned handle resolves to its result, or to
    /// `None` when it panicked (logged and reported to the manager).
    pub fn watch_critical_thread<T>(
        &self,
        name: &'static str,
        thread: std::thread::JoinHandle<T>,
    ) -> JoinHandle<Option<T>>
    where
        T: Send + 'static,
    {
        let panicked_tx = self.panicked_tx.clone();
        self.handle.spawn_blocking(move || match thread.join() {
            Ok(value) => Some(value),
            Err(payload) => {
                report(&panicked_tx, name, payload);
                None
            }
        })
    }
}

/// The text of a panic's payload: the `&str` or `String` `panic!` was given.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

fn report(
    panicked_tx: &mpsc::UnboundedSender<PanickedTaskError>,
    task: &'static str,
    payload: Box<dyn Any + Send>,
) {
    let message = panic_message(&*payload);
    tracing::error!(target: "tasks", task, %message, "critical task panicked");
    // The manager gone means the node is already shutting down: nothing to tell.
    let _ = panicked_tx.send(PanickedTaskError { task, message });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_critical_task_panic_is_reported_with_its_name() {
        let mut manager = TaskManager::current();
        let executor = manager.executor();
        let quiet = executor.spawn_critical("quiet", async { 7 });
        assert_eq!(quiet.await.unwrap(), Some(7));
        let loud = executor.spawn_critical("gossip-import", async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            panic!("peer sent {} chunks", 3);
        });
        let panic = manager.wait_for_panic().await;
        assert_eq!(
            panic,
            PanickedTaskError { task: "gossip-import", message: "peer sent 3 chunks".into() }
        );
        assert_eq!(loud.await.unwrap(), None);
        assert_eq!(panic.to_string(), "critical task `gossip-import` panicked: peer sent 3 chunks");
    }

    #[tokio::test]
    async fn critical_threads_spawned_or_watched_are_reported() {
        let mut manager = TaskManager::current();
        let executor = manager.executor();
        let fine = executor.spawn_critical_thread("fine", || 1).unwrap();
        assert_eq!(fine.join().unwrap(), Some(1));
        let spawned = executor.spawn_critical_thread("engine", || panic!("store gone")).unwrap();
        assert_eq!(manager.wait_for_panic().await.task, "engine");
        assert_eq!(spawned.join().unwrap(), None::<()>);
        let other = std::thread::spawn(|| -> u8 { panic!("{}", String::from("bad block")) });
        let watched = executor.watch_critical_thread("persistence", other);
        let panic = manager.wait_for_panic().await;
        assert_eq!((panic.task, panic.message.as_str()), ("persistence", "bad block"));
        assert_eq!(watched.await.unwrap(), None);
    }

    #[tokio::test]
    async fn graceful_shutdown_waits_for_the_tasks_to_wind_down() {
        let manager = TaskManager::current();
        let executor = manager.executor();
        let (wound_down_tx, mut wound_down) = mpsc::unbounded_channel();
        for delay in [10, 60] {
            let wound_down_tx = wound_down_tx.clone();
            executor.spawn_critical_with_graceful_shutdown_signal(
                "winds-down",
                move |shutdown| async move {
                    shutdown.signal.fired().await;
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    wound_down_tx.send(delay).unwrap();
                    drop(shutdown.guard);
                },
            );
        }
        assert!(wound_down.try_recv().is_err(), "nothing winds down before the signal");
        assert!(manager.graceful_shutdown_with_timeout(Duration::from_secs(5)).await);
        assert_eq!((wound_down.try_recv(), wound_down.try_recv()), (Ok(10), Ok(60)));
        // A task that never drops its guard: the wait ends at the timeout, and says so.
        let manager = TaskManager::current();
        manager.executor().spawn_critical_with_graceful_shutdown_signal(
            "stuck",
            |shutdown| async move {
                let _guard = shutdown.guard;
                std::future::pending::<()>().await;
            },
        );
        assert!(!manager.graceful_shutdown_with_timeout(Duration::from_millis(50)).await);
    }

    #[tokio::test]
    async fn a_plain_task_panic_is_not_reported() {
        let mut manager = TaskManager::current();
        let plain = manager.executor().spawn(async { panic!("ends only me") });
        assert!(plain.await.unwrap_err().is_panic());
        let waited = tokio::time::timeout(Duration::from_millis(50), manager.wait_for_panic());
        assert!(waited.await.is_err(), "no critical task panicked");
    }
}
