//! Load shedding for the heavy calls: a jsonrpsee RPC middleware ([`HeavyCallLimitLayer`])
//! that admits at most `max_running` calls of the [`HEAVY_METHODS`] at once, lets up to
//! `max_queued` more wait their turn (first come, first served), and answers every heavy call
//! beyond that at once with EIP-1474's "limit exceeded" (-32005) instead of letting it wait.
//!
//! Flow: a call → not heavy: straight to the inner service → heavy: a running permit if one
//! is free, else a place in the queue if one is free (then the permit when it comes), else
//! the -32005 answer (counted in `gigagas_rpc_calls_shed_total{method}`) → the inner service
//! with the permit held until the answer is encoded, so that at most `max_running` heavy
//! answers are being built and at most `max_running + max_queued` heavy calls wait on the
//! node: its memory stays bounded and a caller past saturation learns it at once (and may
//! retry elsewhere) instead of waiting behind a queue that grows. Cheap calls
//! (`eth_blockNumber`, balances, receipts) are never refused here.
//!
//! A batch's calls arrive one by one through `call` when an outer layer splits the batch
//! (the node's [`crate::invalid_params::InvalidParamsLayer`] does); a batch reaching this
//! layer whole is passed on as one call.

use jsonrpsee::{
    core::middleware::{Batch, Notification, RpcServiceT},
    server::MethodResponse,
    types::{ErrorObjectOwned, Request},
};
use std::{
    collections::HashSet,
    future::Future,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
};
use tokio::sync::{Semaphore, SemaphorePermit};

/// EIP-1474's "limit exceeded" error code.
pub const LIMIT_EXCEEDED_CODE: i32 = -32005;

/// The counter of heavy calls refused with -32005, by method.
pub const CALLS_SHED_TOTAL: &str = "gigagas_rpc_calls_shed_total";

/// The methods that run EVM code, replay blocks, scan block ranges or encode whole blocks:
/// milliseconds to seconds of CPU and up to megabytes of answer each, where the other methods
/// take microseconds.
pub const HEAVY_METHODS: [&str; 14] = [
    "eth_call",
    "eth_estimateGas",
    "eth_createAccessList",
    "eth_simulateV1",
    "eth_getLogs",
    "eth_getBlockReceipts",
    "eth_getBlockByNumber",
    "eth_getBlockByHash",
    "eth_getProof",
    "eth_feeHistory",
    "debug_traceTransaction",
    "debug_traceBlockByNumber",
    "debug_traceBlockByHash",
    "debug_getRawBlock",
];

/// How many heavy calls a server runs and lets wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeavyCallLimits {
    /// Heavy calls running at once; 0: no limit (none is ever refused).
    pub max_running: u32,
    /// Heavy calls waiting for a running one to finish; past them a heavy call is refused.
    pub max_queued: u32,
}

impl HeavyCallLimits {
    /// Heavy calls waiting per running one by default.
    pub const QUEUED_PER_RUNNING: u32 = 16;

    /// `max_running` at once and [`Self::QUEUED_PER_RUNNING`] waiting for each.
    pub fn running(max_running: u32) -> Self {
        Self { max_running, max_queued: max_running.saturating_mul(Self::QUEUED_PER_RUNNING) }
    }

    /// No limit.
    pub fn unlimited() -> Self {
        Self { max_running: 0, max_queued: 0 }
    }
}

/// The shared state of one server's limit: the running permits and the queue's length.
#[derive(Debug)]
struct Gate {
    running: Semaphore,
    queued: AtomicUsize,
    limits: HeavyCallLimits,
    heavy: HashSet<&'static str>,
}

/// A place in the queue, given back when the wait ends (the permit came, or the caller left).
struct QueueSlot<'a>(&'a AtomicUsize);

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Gate {
    /// A running permit now, or after waiting in the queue; `None` when the queue is full.
    async fn admit(&self) -> Option<SemaphorePermit<'_>> {
        if let Ok(permit) = self.running.try_acquire() {
            return Some(permit);
        }
        let ahead = self.queued.fetch_add(1, Ordering::AcqRel);
        let slot = QueueSlot(&self.queued);
        if ahead >= self.limits.max_queued as usize {
            return None;
        }
        // The semaphore is never closed; waiters are served in the order they came.
        let permit = self.running.acquire().await.ok();
        drop(slot);
        permit
    }
}

/// Wraps a server's RPC service in a [`HeavyCallLimit`].
#[derive(Clone, Debug)]
pub struct HeavyCallLimitLayer {
    gate: Option<Arc<Gate>>,
}

impl HeavyCallLimitLayer {
    /// The layer enforcing `limits` over [`HEAVY_METHODS`] (none when `max_running` is 0).
    pub fn new(limits: HeavyCallLimits) -> Self {
        let gate = (limits.max_running > 0).then(|| {
            Arc::new(Gate {
                running: Semaphore::new(limits.max_running as usize),
                queued: AtomicUsize::new(0),
                limits,
                heavy: HEAVY_METHODS.into_iter().collect(),
            })
        });
        Self { gate }
    }
}

impl<S> tower::Layer<S> for HeavyCallLimitLayer {
    type Service = HeavyCallLimit<S>;

    fn layer(&self, service: S) -> HeavyCallLimit<S> {
        HeavyCallLimit { service, gate: self.gate.clone() }
    }
}

/// The RPC service `S` with its heavy calls bounded ([`HeavyCallLimitLayer`]).
#[derive(Clone, Debug)]
pub struct HeavyCallLimit<S> {
    service: S,
    gate: Option<Arc<Gate>>,
}

/// The answer to a heavy call refused because `limits` are reached.
fn limit_exceeded(limits: HeavyCallLimits) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(
        LIMIT_EXCEEDED_CODE,
        format!(
            "limit exceeded: {} heavy calls running and {} waiting, try again later",
            limits.max_running, limits.max_queued
        ),
        None::<()>,
    )
}

impl<S> RpcServiceT for HeavyCallLimit<S>
where
    S: RpcServiceT<
            MethodResponse = MethodResponse,
            BatchResponse = MethodResponse,
            NotificationResponse = MethodResponse,
        > + Clone
        + Send
        + Sync
        + 'static,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, request: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let gate = self.gate.clone().filter(|g| g.heavy.contains(request.method_name()));
        let service = self.service.clone();
        async move {
            let Some(gate) = gate else {
                return service.call(request).await;
            };
            let admitted = gate.admit().await;
            let response = match admitted {
                Some(_permit) => service.call(request).await,
                None => {
                    let method = HEAVY_METHODS
                        .into_iter()
                        .find(|m| *m == request.method_name())
                        .unwrap_or("other");
                    metrics::counter!(CALLS_SHED_TOTAL, "method" => method).increment(1);
                    MethodResponse::error(request.id().into_owned(), limit_exceeded(gate.limits))
                }
            };
            response
        }
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.service.batch(batch)
    }

    fn notification<'a>(
        &self,
        notification: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.service.notification(notification)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{pin::Pin, task::Poll};

    /// Whether `future` is still pending after one poll.
    async fn pending<F: Future>(future: &mut Pin<Box<F>>) -> bool {
        std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx).is_pending())).await
    }

    fn gate(max_running: u32, max_queued: u32) -> Gate {
        Gate {
            running: Semaphore::new(max_running as usize),
            queued: AtomicUsize::new(0),
            limits: HeavyCallLimits { max_running, max_queued },
            heavy: HEAVY_METHODS.into_iter().collect(),
        }
    }

    #[tokio::test]
    async fn past_the_running_permits_and_the_queue_a_call_is_refused_at_once() {
        let gate = gate(1, 1);
        let running = gate.admit().await.expect("a free permit");
        // The second waits in the queue (its future is pending while the first runs).
        let mut waiting = Box::pin(gate.admit());
        assert!(pending(&mut waiting).await);
        assert_eq!(gate.queued.load(Ordering::Acquire), 1);
        // The third finds both taken: refused without waiting.
        assert!(gate.admit().await.is_none());
        assert_eq!(gate.queued.load(Ordering::Acquire), 1);
        // The first finishes: the waiting one runs, the queue is empty again.
        drop(running);
        let second = waiting.await.expect("the permit after the first");
        assert_eq!(gate.queued.load(Ordering::Acquire), 0);
        // A caller that gives up while waiting leaves the queue.
        let mut left = Box::pin(gate.admit());
        assert!(pending(&mut left).await);
        drop(left);
        assert_eq!(gate.queued.load(Ordering::Acquire), 0);
        drop(second);
        assert!(gate.admit().await.is_some());
    }

    #[test]
    fn the_default_queue_is_sixteen_per_running_call() {
        assert_eq!(HeavyCallLimits::running(2), HeavyCallLimits { max_running: 2, max_queued: 32 });
    }
}
