//! Load shedding for the heavy calls: a jsonrpsee RPC middleware ([`CallLimitLayer`]) that
//! sorts the [`HEAVY_METHODS`] into classes ([`HeavyClass`]: EVM calls, chain reads, traces)
//! and, per class, admits at most `max_running` calls at once, lets up to `max_queued` more
//! wait their turn (first come, first served), and answers every call of the class beyond that
//! at once with EIP-1474's "limit exceeded" (-32005) instead of letting it wait.
//!
//! Flow: a call → not heavy: straight to the inner service → heavy: its class's gate — a
//! running permit if one is free, else a place in the queue if one is free (then the permit
//! when it comes), else the -32005 answer (counted in `gigagas_rpc_calls_shed_total{method}`)
//! → the inner service with the permit held until the answer is encoded. So at most
//! `max_running` answers of a class are being built and at most `max_running + max_queued` of
//! its calls wait on the node: its memory stays bounded, and a caller past saturation learns
//! it at once (and may retry elsewhere) instead of waiting behind a queue that grows. The
//! classes keep a sub-millisecond `eth_call` from waiting behind a 64-block `eth_getLogs` or a
//! trace (reth likewise runs traces on a pool of their own). Cheap calls (`eth_blockNumber`,
//! balances, receipts) are never refused here: past saturation they wait for the CPU block
//! validation leaves, before any handler runs.
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
    collections::HashMap,
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

/// A class of heavy methods, limited apart from the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeavyClass {
    /// EVM calls on one state, bounded by the gas cap and the EVM timeout: `eth_call`,
    /// `eth_estimateGas`, `eth_createAccessList`.
    Call,
    /// Reads of whole blocks, block ranges and proofs: `eth_getLogs`, `eth_getBlockReceipts`,
    /// `eth_getBlockByNumber`/`ByHash`, `eth_getProof`, `eth_feeHistory`, `debug_getRawBlock`.
    Read,
    /// Blocks replayed or simulated: `debug_trace*`, `eth_simulateV1`.
    Trace,
}

impl HeavyClass {
    const ALL: [Self; 3] = [Self::Call, Self::Read, Self::Trace];

    fn index(self) -> usize {
        self as usize
    }
}

/// The methods that run EVM code, replay blocks, scan block ranges or encode whole blocks —
/// milliseconds to seconds of CPU and up to megabytes of answer each, where the other methods
/// take microseconds — and their classes.
pub const HEAVY_METHODS: [(&str, HeavyClass); 14] = [
    ("eth_call", HeavyClass::Call),
    ("eth_estimateGas", HeavyClass::Call),
    ("eth_createAccessList", HeavyClass::Call),
    ("eth_getLogs", HeavyClass::Read),
    ("eth_getBlockReceipts", HeavyClass::Read),
    ("eth_getBlockByNumber", HeavyClass::Read),
    ("eth_getBlockByHash", HeavyClass::Read),
    ("eth_getProof", HeavyClass::Read),
    ("eth_feeHistory", HeavyClass::Read),
    ("debug_getRawBlock", HeavyClass::Read),
    ("eth_simulateV1", HeavyClass::Trace),
    ("debug_traceTransaction", HeavyClass::Trace),
    ("debug_traceBlockByNumber", HeavyClass::Trace),
    ("debug_traceBlockByHash", HeavyClass::Trace),
];

/// How many heavy calls of each class a server runs and lets wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// Heavy calls of a class running at once; 0: no limit (none is ever refused).
    pub max_running: u32,
    /// Heavy calls of a class waiting for a running one to finish; past them a call of the
    /// class is refused.
    pub max_queued: u32,
}

impl CallLimits {
    /// Heavy calls waiting per running one by default.
    pub const QUEUED_PER_RUNNING: u32 = 16;
    /// `max_running` heavy calls of a class at once and [`Self::QUEUED_PER_RUNNING`] waiting
    /// for each.
    pub fn running(max_running: u32) -> Self {
        Self { max_running, max_queued: max_running.saturating_mul(Self::QUEUED_PER_RUNNING) }
    }
}

/// The shared state of one class's limit: the running permits and the queue's length.
#[derive(Debug)]
struct Gate {
    running: Semaphore,
    queued: AtomicUsize,
    limits: CallLimits,
}

impl Gate {
    fn new(limits: CallLimits) -> Self {
        Self {
            running: Semaphore::new(limits.max_running as usize),
            queued: AtomicUsize::new(0),
            limits,
        }
    }

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

/// One server's gates: the heavy methods' classes and a gate per class.
#[derive(Debug)]
struct Gates {
    class: HashMap<&'static str, HeavyClass>,
    gates: [Gate; 3],
}

impl Gates {
    /// The gate of `method` and its name as a static label, `None` when it is not heavy.
    fn of(&self, method: &str) -> Option<(&Gate, &'static str)> {
        let (name, class) = self.class.get_key_value(method)?;
        Some((&self.gates[class.index()], name))
    }
}

/// A place in the queue, given back when the wait ends (the permit came, or the caller left).
struct QueueSlot<'a>(&'a AtomicUsize);

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Wraps a server's RPC service in a [`CallLimit`].
#[derive(Clone, Debug)]
pub struct CallLimitLayer {
    gates: Option<Arc<Gates>>,
}

impl CallLimitLayer {
    /// The layer enforcing `limits` on each class of [`HEAVY_METHODS`] (none when
    /// `max_running` is 0).
    pub fn new(limits: CallLimits) -> Self {
        let gates = (limits.max_running > 0).then(|| {
            Arc::new(Gates {
                class: HEAVY_METHODS.into_iter().collect(),
                gates: HeavyClass::ALL.map(|_| Gate::new(limits)),
            })
        });
        Self { gates }
    }
}

impl<S> tower::Layer<S> for CallLimitLayer {
    type Service = CallLimit<S>;

    fn layer(&self, service: S) -> CallLimit<S> {
        CallLimit { service, gates: self.gates.clone() }
    }
}

/// The RPC service `S` with its heavy calls bounded ([`CallLimitLayer`]).
#[derive(Clone, Debug)]
pub struct CallLimit<S> {
    service: S,
    gates: Option<Arc<Gates>>,
}

/// The answer to a call refused because its gate's `limits` are reached.
fn limit_exceeded(limits: CallLimits) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(
        LIMIT_EXCEEDED_CODE,
        format!(
            "limit exceeded: {} calls of its kind running and {} waiting, try again later",
            limits.max_running, limits.max_queued
        ),
        None::<()>,
    )
}

impl<S> RpcServiceT for CallLimit<S>
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
        let gates = self.gates.clone();
        let service = self.service.clone();
        async move {
            let Some((gate, method)) = gates.as_deref().and_then(|g| g.of(request.method_name()))
            else {
                return service.call(request).await;
            };
            let admitted = gate.admit().await;
            let response = match admitted {
                Some(_permit) => service.call(request).await,
                None => {
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
        Gate::new(CallLimits { max_running, max_queued })
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
        assert_eq!(CallLimits::running(2), CallLimits { max_running: 2, max_queued: 32 });
    }
}
