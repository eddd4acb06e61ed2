//! JSON-RPC over a Unix socket (geth's IPC endpoint, `--ipcpath`): requests and answers are
//! JSON values one after another on the stream (each answer ends with a newline, as geth writes
//! them), subscriptions included; what web3.py's `IPCProvider`, ethers' `IpcSocketProvider`
//! and viem's `ipc` transport speak.
//!
//! Flow: the listener (socket file mode 0600, as geth makes it) accepts a connection → its
//! reader splits the byte stream into JSON values (a value past the request size limit, or
//! bytes that are not JSON, end the connection with a -32700 answer) → each request runs as a
//! task through the same RPC middleware as the HTTP and WebSocket servers (calls counted under
//! `ipc`, geth's invalid-params shape, heavy-call limits) over an RPC service of this module
//! ([`IpcService`], jsonrpsee's method callbacks called as its own server calls them) → answers
//! and notifications go through one bounded queue to the connection's writer. At most
//! [`crate::WsConfig::message_buffer`] requests of a connection run at once: a client that
//! sends without reading stops being read.

use crate::{HttpLimits, RpcContext, RpcError, WsConfig};
use jsonrpsee::{
    core::{
        middleware::{
            Batch, BatchEntry, BatchEntryErr, Notification, RpcServiceBuilder, RpcServiceT,
        },
        server::{
            BoundedSubscriptions, ConnectionId, MethodCallback, MethodResponse, MethodSink,
            Methods, SubscriptionState,
        },
    },
    server::IdProvider,
    types::{
        error::{reject_too_big_batch_request, reject_too_many_subscriptions, ErrorCode},
        ErrorObject, Id, Request,
    },
    RpcModule,
};
use serde_json::value::RawValue;
use std::{
    future::Future,
    path::{Path, PathBuf},
    sync::Arc,
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{UnixListener, UnixStream},
    sync::{mpsc, watch, Semaphore},
};

/// A running IPC server; [`IpcServerHandle::stop`] (or dropping it) stops accepting and removes
/// the socket file.
#[derive(Debug)]
pub struct IpcServerHandle {
    path: PathBuf,
    stop: Option<watch::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl IpcServerHandle {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting connections (those open end with the process or their client) and waits
    /// for the listener to close.
    pub async fn stop(mut self) {
        self.stop.take();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for IpcServerHandle {
    fn drop(&mut self) {
        // The listener removes the file when it ends; a handle dropped outside a runtime leaves
        // it to the next start, which replaces it.
        self.stop.take();
    }
}

/// Starts an IPC server on the Unix socket `path` (an old socket file there is replaced)
/// serving `module` within `limits` (request and answer sizes, connections, batches, heavy
/// calls) and `ws`'s per-connection bounds (subscriptions, buffered messages).
///
/// # Errors
/// [`RpcError::Ipc`] when the socket cannot be made.
pub async fn serve_ipc(
    path: PathBuf,
    module: RpcModule<Arc<RpcContext>>,
    limits: HttpLimits,
    ws: WsConfig,
) -> Result<IpcServerHandle, RpcError> {
    let path = path.as_path();
    let error = |source| RpcError::Ipc { path: path.to_path_buf(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(error)?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(error(e)),
    }
    let listener = UnixListener::bind(path).map_err(error)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(error)?;
    }
    let middleware = Arc::new(crate::public_middleware("ipc", &module, &limits));
    let methods: Methods = module.into();
    let (stop, mut stopped) = watch::channel(());
    let server = Server {
        methods,
        limits,
        ws,
        middleware,
        connections: Arc::new(Semaphore::new(limits.max_connections as usize)),
    };
    let socket = path.to_path_buf();
    let task = tokio::spawn(async move {
        let mut next_id = 0usize;
        loop {
            let stream = tokio::select! {
                // Nothing is ever sent: this ends when the handle drops the sender.
                _ = stopped.changed() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(target: "rpc::ipc", error = %e, "accepting a connection failed");
                        continue;
                    }
                },
            };
            let Ok(permit) = server.connections.clone().try_acquire_owned() else {
                tracing::debug!(target: "rpc::ipc", "connection refused: at the connection limit");
                continue;
            };
            next_id += 1;
            let server = server.clone();
            tokio::spawn(async move {
                server.connection(stream, ConnectionId(next_id)).await;
                drop(permit);
            });
        }
        let _ = std::fs::remove_file(&socket);
    });
    Ok(IpcServerHandle { path: path.to_path_buf(), stop: Some(stop), task: Some(task) })
}

/// [`serve_ipc`] on the runtime behind `runtime` (the node's JSON-RPC runtime): the listener,
/// its connections and the method handlers all run there.
///
/// # Errors
/// [`RpcError::Ipc`] when the socket cannot be made.
pub async fn serve_ipc_on(
    runtime: &tokio::runtime::Handle,
    path: PathBuf,
    module: RpcModule<Arc<RpcContext>>,
    limits: HttpLimits,
    ws: WsConfig,
) -> Result<IpcServerHandle, RpcError> {
    let served = serve_ipc(path.clone(), module, limits, ws);
    crate::spawned_on(runtime, served, |source| RpcError::Ipc { path, source }).await
}

/// What every connection shares.
#[derive(Clone)]
struct Server {
    methods: Methods,
    limits: HttpLimits,
    ws: WsConfig,
    middleware: Arc<RpcServiceBuilder<crate::PublicMiddleware>>,
    connections: Arc<Semaphore>,
}

impl Server {
    /// Serves one connection until its client closes it or sends what is not JSON.
    async fn connection(self, stream: UnixStream, conn_id: ConnectionId) {
        let (mut reader, mut writer) = stream.into_split();
        let buffer = self.ws.message_buffer.max(1) as usize;
        let (out, mut outgoing) = mpsc::channel::<Box<RawValue>>(buffer);
        // Told when the reading ends: the writer writes what is queued and stops, which closes
        // the queue and with it the connection's subscriptions.
        let (done, mut reading_done) = tokio::sync::oneshot::channel::<()>();
        let write = tokio::spawn(async move {
            let mut finishing = false;
            loop {
                let message = if finishing {
                    match outgoing.try_recv() {
                        Ok(message) => message,
                        Err(_) => return,
                    }
                } else {
                    tokio::select! {
                        message = outgoing.recv() => match message {
                            Some(message) => message,
                            None => return,
                        },
                        _ = &mut reading_done => {
                            finishing = true;
                            continue;
                        }
                    }
                };
                let mut bytes = message.get().as_bytes().to_vec();
                bytes.push(b'\n');
                if writer.write_all(&bytes).await.is_err() {
                    return;
                }
            }
        });
        let service = self.middleware.service(IpcService {
            methods: self.methods.clone(),
            conn_id,
            max_response: self.limits.max_response_bytes as usize,
            subscriptions: BoundedSubscriptions::new(self.ws.max_subscriptions),
            max_subscriptions: self.ws.max_subscriptions,
            sink: MethodSink::new_with_limit(out.clone(), self.limits.max_response_bytes),
            ids: Arc::new(crate::pubsub::HexIdProvider),
        });
        let running = Arc::new(Semaphore::new(buffer));
        let max_request = self.limits.max_request_bytes as usize;
        let mut pending: Vec<u8> = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        'read: loop {
            let read = match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            pending.extend_from_slice(&chunk[..read]);
            let mut requests = Vec::new();
            let mut values =
                serde_json::Deserializer::from_slice(&pending).into_iter::<&RawValue>();
            let mut consumed = 0;
            let mut malformed = false;
            loop {
                match values.next() {
                    Some(Ok(value)) => {
                        requests.push(value.get().to_string());
                        consumed = values.byte_offset();
                    }
                    // The rest of a value is still to come.
                    Some(Err(e)) if e.is_eof() => break,
                    Some(Err(_)) => {
                        malformed = true;
                        break;
                    }
                    None => {
                        consumed = values.byte_offset();
                        break;
                    }
                }
            }
            pending.drain(..consumed);
            for request in requests {
                let Ok(permit) = running.clone().acquire_owned().await else { break 'read };
                let (service, out) = (service.clone(), out.clone());
                let batches = self.limits.max_batch;
                tokio::spawn(async move {
                    let answer = answer(&service, &request, batches).await;
                    // A subscription's answer went out through its sink.
                    if answer.is_method_call() || answer.is_batch() {
                        let _ = out.send(answer.into_json()).await;
                    }
                    drop(permit);
                });
            }
            if malformed || pending.len() > max_request {
                let code =
                    if malformed { ErrorCode::ParseError } else { ErrorCode::OversizedRequest };
                let _ = out
                    .send(MethodResponse::error(Id::Null, ErrorObject::from(code)).into_json())
                    .await;
                break;
            }
        }
        // The requests still running are answered first (a client may close its sending
        // half and wait for the answers, as `socat` does).
        let _ = running.acquire_many(u32::try_from(buffer).unwrap_or(u32::MAX)).await;
        drop((out, service));
        let _ = done.send(());
        let _ = write.await;
    }
}

/// The answer to one request or batch `text`.
async fn answer<S>(service: &S, text: &str, max_batch: u32) -> MethodResponse
where
    S: RpcServiceT<
        MethodResponse = MethodResponse,
        BatchResponse = MethodResponse,
        NotificationResponse = MethodResponse,
    >,
{
    if !text.trim_start().starts_with('[') {
        if let Ok(request) = serde_json::from_str::<Request<'_>>(text) {
            return service.call(request).await;
        }
        if let Ok(notification) = serde_json::from_str::<Notification<'_>>(text) {
            return service.notification(notification).await;
        }
        let id = serde_json::from_str::<jsonrpsee::types::InvalidRequest<'_>>(text)
            .map_or(Id::Null, |r| r.id);
        return MethodResponse::error(id, ErrorObject::from(ErrorCode::InvalidRequest));
    }
    let Ok(calls) = serde_json::from_str::<Vec<&RawValue>>(text) else {
        return MethodResponse::error(Id::Null, ErrorObject::from(ErrorCode::ParseError));
    };
    if calls.is_empty() {
        return MethodResponse::error(Id::Null, ErrorObject::from(ErrorCode::InvalidRequest));
    }
    if max_batch != 0 && calls.len() > max_batch as usize {
        return MethodResponse::error(Id::Null, reject_too_big_batch_request(max_batch as usize));
    }
    let entries = calls
        .into_iter()
        .map(|call| {
            if let Ok(request) = serde_json::from_str::<Request<'_>>(call.get()) {
                Ok(BatchEntry::Call(request))
            } else if let Ok(n) = serde_json::from_str::<Notification<'_>>(call.get()) {
                Ok(BatchEntry::Notification(n))
            } else {
                let id = serde_json::from_str::<jsonrpsee::types::InvalidRequest<'_>>(call.get())
                    .map_or(Id::Null, |r| r.id);
                Err(BatchEntryErr::new(id, ErrorCode::InvalidRequest.into()))
            }
        })
        .collect();
    service.batch(Batch::from(entries)).await
}

/// The innermost RPC service of one IPC connection: each call handed to the method jsonrpsee
/// registered, subscriptions bounded per connection and notified through the connection's
/// sink (jsonrpsee's own `RpcService` does the same for its transports).
#[derive(Clone)]
struct IpcService {
    methods: Methods,
    conn_id: ConnectionId,
    max_response: usize,
    subscriptions: BoundedSubscriptions,
    max_subscriptions: u32,
    sink: MethodSink,
    ids: Arc<dyn IdProvider>,
}

impl RpcServiceT for IpcService {
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, request: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let this = self.clone();
        async move {
            let Request { id, method, params, extensions, .. } = request;
            let params = jsonrpsee::types::Params::new(params.as_ref().map(|p| RawValue::get(p)));
            let Some((_, callback)) = this.methods.method_with_name(&method) else {
                return MethodResponse::error(id, ErrorObject::from(ErrorCode::MethodNotFound))
                    .with_extensions(extensions);
            };
            match callback {
                MethodCallback::Sync(callback) => {
                    (callback)(id, params, this.max_response, extensions)
                }
                MethodCallback::Async(callback) => {
                    let (id, params) = (id.into_owned(), params.into_owned());
                    (callback)(id, params, this.conn_id, this.max_response, extensions).await
                }
                MethodCallback::Subscription(callback) => {
                    let Some(permit) = this.subscriptions.acquire() else {
                        let error = reject_too_many_subscriptions(this.max_subscriptions);
                        return MethodResponse::error(id, error).with_extensions(extensions);
                    };
                    let state = SubscriptionState {
                        conn_id: this.conn_id,
                        id_provider: &*this.ids,
                        subscription_permit: permit,
                    };
                    (callback)(id, params, this.sink.clone(), state, extensions).await
                }
                MethodCallback::Unsubscription(callback) => {
                    (callback)(id, params, this.conn_id, this.max_response, extensions)
                }
            }
        }
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let this = self.clone();
        async move { crate::invalid_params::answer_batch(&this, batch, this.max_response).await }
    }

    fn notification<'a>(
        &self,
        notification: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        // Notifications get no answer.
        std::future::ready(MethodResponse::notification().with_extensions(notification.extensions))
    }
}
