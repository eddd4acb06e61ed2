//! geth's shape for a malformed parameter: jsonrpsee's typed methods answer -32602 with the
//! message `Invalid params` and the reason in `data`; geth (and the execution-apis test suite)
//! give the reason in the message and no `data`. [`InvalidParamsLayer`], an RPC middleware on
//! every server of the node, moves the reason into the message (`invalid argument: …`) of
//! each -32602 answer that carries one, alone or in a batch; every other answer passes as it is,
//! and so does a refused subscription's (sent by jsonrpsee before this layer sees it).

use jsonrpsee::{
    core::middleware::{Batch, BatchEntry, Notification, RpcServiceT},
    server::{BatchResponseBuilder, MethodResponse},
    types::{error::INVALID_PARAMS_CODE, ErrorObjectOwned, Id, Request},
};
use serde_json::Value;
use std::future::Future;

/// Wraps a server's RPC service in [`InvalidParams`]; `max_response_bytes` is the server's
/// response limit (bytes), which a batch's answers are built within.
#[derive(Clone, Copy, Debug)]
pub struct InvalidParamsLayer {
    max_response_bytes: usize,
}

impl InvalidParamsLayer {
    /// The layer for a server whose responses are limited to `max_response_bytes` (bytes).
    pub fn new(max_response_bytes: u32) -> Self {
        Self { max_response_bytes: max_response_bytes as usize }
    }
}

impl<S> tower::Layer<S> for InvalidParamsLayer {
    type Service = InvalidParams<S>;

    fn layer(&self, service: S) -> InvalidParams<S> {
        InvalidParams { service, max_response_bytes: self.max_response_bytes }
    }
}

/// The RPC service `S` with its -32602 answers in geth's shape ([`InvalidParamsLayer`]).
#[derive(Clone, Debug)]
pub struct InvalidParams<S> {
    service: S,
    max_response_bytes: usize,
}

/// `response` with the reason in its `data` moved into the message, when it is a -32602
/// error that has one.
fn reshaped(response: MethodResponse) -> MethodResponse {
    // A subscription's answer went to the client already (jsonrpsee sends it from the
    // subscription's sink; remade as a method call's, it would be sent twice).
    if response.as_error_code() != Some(INVALID_PARAMS_CODE) || response.is_subscription() {
        return response;
    }
    let Ok(body) = serde_json::from_str::<Value>(response.as_json().get()) else { return response };
    let Some(reason) = body.pointer("/error/data") else { return response };
    let id = match &body["id"] {
        Value::Number(n) => match n.as_u64() {
            Some(n) => Id::Number(n),
            None => return response,
        },
        Value::String(s) => Id::Str(s.clone().into()),
        _ => Id::Null,
    };
    let reason = reason.as_str().map_or_else(|| reason.to_string(), str::to_string);
    let error = ErrorObjectOwned::owned(
        INVALID_PARAMS_CODE,
        format!("invalid argument: {reason}"),
        None::<()>,
    );
    let extensions = response.extensions().clone();
    MethodResponse::error(id, error).with_extensions(extensions)
}

impl<S> RpcServiceT for InvalidParams<S>
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
        let service = self.service.clone();
        async move { reshaped(service.call(request).await) }
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        // Each call of the batch through `call` above (the inner service would answer them
        // without this layer).
        let this = self.clone();
        async move { answer_batch(&this, batch, this.max_response_bytes).await }
    }

    fn notification<'a>(
        &self,
        notification: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.service.notification(notification)
    }
}

/// `batch` answered call by call through `service`, assembled as jsonrpsee's server does
/// (within `max_response_bytes`; a batch of notifications alone gets no answer).
pub(crate) async fn answer_batch<S>(
    service: &S,
    batch: Batch<'_>,
    max_response_bytes: usize,
) -> MethodResponse
where
    S: RpcServiceT<
        MethodResponse = MethodResponse,
        BatchResponse = MethodResponse,
        NotificationResponse = MethodResponse,
    >,
{
    let mut answers = BatchResponseBuilder::new_with_limit(max_response_bytes);
    let mut got_notification = false;
    for entry in batch.into_iter() {
        let answer = match entry {
            Ok(BatchEntry::Call(request)) => service.call(request).await,
            Ok(BatchEntry::Notification(n)) => {
                got_notification = true;
                service.notification(n).await;
                continue;
            }
            Err(e) => {
                let (error, id) = e.into_parts();
                MethodResponse::error(id, error)
            }
        };
        if let Err(too_large) = answers.append(answer) {
            return too_large;
        }
    }
    if answers.is_empty() && got_notification {
        MethodResponse::notification()
    } else {
        MethodResponse::from_batch(answers.finish())
    }
}
