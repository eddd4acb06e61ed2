//! Calls counted per method: a jsonrpsee RPC middleware ([`CallCounterLayer`]) that every
//! server of the node runs, in the manner of reth's `RpcRequestMetrics`. Each call (alone or in
//! a batch) increments `gigagas_rpc_calls_total{server, method}` and, when it is answered with
//! a JSON-RPC error, `gigagas_rpc_call_errors_total{server, method}`, through the `metrics`
//! facade (the node installs the Prometheus exporter; without one the counts go nowhere).
//!
//! The method label is the name the client sent only when the server serves that method;
//! every other name is counted as `other`, so a client cannot grow the label set.

use jsonrpsee::{
    core::middleware::{Batch, BatchEntry, Notification, RpcServiceT},
    server::MethodResponse,
    types::Request,
};
use std::{collections::HashSet, future::Future, sync::Arc};

/// The counter of calls, by server and method.
pub const CALLS_TOTAL: &str = "gigagas_rpc_calls_total";
/// The counter of calls answered with a JSON-RPC error, by server and method.
pub const CALL_ERRORS_TOTAL: &str = "gigagas_rpc_call_errors_total";

/// Wraps a server's RPC service in a [`CallCounter`]; `server` names it in the labels
/// (`"http"`, `"auth"`), `methods` are the names it serves.
#[derive(Clone, Debug)]
pub struct CallCounterLayer {
    server: &'static str,
    methods: Arc<HashSet<&'static str>>,
}

impl CallCounterLayer {
    /// Counts the calls of the server labelled `server`, whose module serves `methods`.
    pub fn new(server: &'static str, methods: impl IntoIterator<Item = &'static str>) -> Self {
        Self { server, methods: Arc::new(methods.into_iter().collect()) }
    }

    /// The label for `method`: itself when served, else `other`.
    fn label(&self, method: &str) -> &'static str {
        self.methods.get(method).copied().unwrap_or("other")
    }

    fn count(&self, method: &'static str, error: bool) {
        metrics::counter!(CALLS_TOTAL, "server" => self.server, "method" => method).increment(1);
        if error {
            metrics::counter!(CALL_ERRORS_TOTAL, "server" => self.server, "method" => method)
                .increment(1);
        }
    }
}

impl<S> tower::Layer<S> for CallCounterLayer {
    type Service = CallCounter<S>;

    fn layer(&self, service: S) -> CallCounter<S> {
        CallCounter { service, layer: self.clone() }
    }
}

/// The RPC service `S` with its calls counted ([`CallCounterLayer`]).
#[derive(Clone, Debug)]
pub struct CallCounter<S> {
    service: S,
    layer: CallCounterLayer,
}

impl<S> RpcServiceT for CallCounter<S>
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
        let method = self.layer.label(request.method_name());
        let (service, layer) = (self.service.clone(), self.layer.clone());
        async move {
            let response = service.call(request).await;
            layer.count(method, response.is_error());
            response
        }
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        // The calls of a batch are answered together: each is counted, errors only as the
        // batch's own (a malformed batch) since the answers come back as one body.
        let methods: Vec<&'static str> = batch
            .iter()
            .filter_map(|entry| match entry {
                Ok(BatchEntry::Call(request)) => Some(self.layer.label(request.method_name())),
                _ => None,
            })
            .collect();
        let (service, layer) = (self.service.clone(), self.layer.clone());
        async move {
            let response = service.batch(batch).await;
            for method in methods {
                layer.count(method, false);
            }
            response
        }
    }

    fn notification<'a>(
        &self,
        notification: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.service.notification(notification)
    }
}
