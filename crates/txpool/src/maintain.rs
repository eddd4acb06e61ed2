//! Pool maintenance (reth's `maintain_transaction_pool`): a task that follows the canonical
//! chain's notifications and, after each move of the head, drops what the new head's state
//! made stale (nonces used) and announces what it made executable ([`TxPool::prune`]). The
//! engine only publishes the chain; it never drives the pool.

use crate::TxPool;
use gigagas_state::StateSource;
use std::sync::Arc;
use tokio::sync::broadcast::{self, error::RecvError};

/// Follows `canonical` (any notification of a head move; those queued meanwhile are taken as
/// one) and prunes `pool` against `latest()`, the head's state, after each, until the sender is
/// gone (or the task is aborted, as the node does when it shuts down). The reads and the prune
/// run on the runtime's blocking pool. A head state that cannot be read is logged and the pool
/// pruned at the next move.
pub async fn maintain_transaction_pool<N, E, F>(
    pool: Arc<TxPool>,
    mut canonical: broadcast::Receiver<N>,
    latest: F,
) where
    N: Clone,
    E: std::fmt::Display + Send + 'static,
    F: Fn() -> Result<Arc<dyn StateSource>, E> + Clone + Send + 'static,
{
    loop {
        match canonical.recv().await {
            // A subscriber that lagged has missed moves: the head's state covers them.
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return,
        }
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = canonical.try_recv() {}
        let (pool, latest) = (pool.clone(), latest.clone());
        let pruned = tokio::task::spawn_blocking(move || latest().map(|state| pool.prune(&*state)));
        match pruned.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(target: "txpool", error = %e, "pool not pruned: the head's state could not be read");
            }
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The runtime is shutting down.
            Err(_) => return,
        }
    }
}
