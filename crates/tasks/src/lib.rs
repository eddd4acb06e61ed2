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

pub mod priority;

use futures::FutureExt;
use std::{any::Any, future::Future, panic::AssertUnwindSafe};
use tokio::{runtime::Handle, sync::mpsc, task::JoinHandle};

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
}

impl TaskManager {
    /// A manager whose executors spawn on the runtime behind `handle`.
    pub fn new(handle: Handle) -> Self {
        let (panicked_tx, panicked_rx) = mpsc::unbounded_channel();
        Self { handle, panicked_tx, panicked_rx }
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
        TaskExecutor { handle: self.handle.clone(), panicked_tx: self.panicked_tx.clone() }
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
}

impl TaskExecutor {
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
fn panic_message(payload: &(dyn Any + Send)) -> String {
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
    async fn a_plain_task_panic_is_not_reported() {
        let mut manager = TaskManager::current();
        let plain = manager.executor().spawn(async { panic!("ends only me") });
        assert!(plain.await.unwrap_err().is_panic());
        let waited = tokio::time::timeout(Duration::from_millis(50), manager.wait_for_panic());
        assert!(waited.await.is_err(), "no critical task panicked");
    }
}
