//! One session's task: it owns the peer's eth stream and is the only one to read or write it.
//!
//! Flow: requests from the node arrive on the session's channel ([`SessionCommand`]), get the
//! next request id and go out; answers come back on the stream and are routed to the waiting
//! caller by request id and message kind (an answer nobody asked for, or of the wrong kind,
//! ends the session: geth disconnects for the same); the peer's own requests are answered
//! from the store (`serve.rs`, read on a blocking thread; empty when the network serves no
//! store); a `Ping` goes out every 15 s and a
//! request unanswered within [`REQUEST_TIMEOUT`] fails its caller.

use crate::{serve::Serving, SessionInfo};
use futures::SinkExt;
use gigagas_eth_wire::{
    DisconnectReason, EthSnapMessage, EthStream, EthStreamError, P2PStreamError,
};
use gigagas_eth_wire_types::{
    BlockRangeUpdate, EthMessage, EthMessageId, GetCells, NetworkTransactions,
    NewPooledTransactionHashes, RequestPair, SnapMessage, SnapMessageId,
};
use gigagas_net_ecies::EciesStream;
use gigagas_net_p2p::RequestError;
use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};
use tokio::{
    net::TcpStream,
    sync::{mpsc, oneshot},
};

/// How long a request may wait for its answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How often the session pings the peer (geth's `pingInterval`).
pub const PING_INTERVAL: Duration = Duration::from_secs(15);

/// A session's RLPx stream over TCP.
pub(crate) type Stream = EthStream<EciesStream<TcpStream>>;

/// Why a session ended.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SessionEnd {
    /// The node's network dropped the session's command channel (the node is stopping).
    #[error("the network stopped")]
    NetworkStopped,
    /// The node disconnected the peer for `0`.
    #[error("disconnected: {0}")]
    Disconnected(DisconnectReason),
    /// A message could not be written.
    #[error("send failed: {0}")]
    Send(#[source] Arc<EthStreamError>),
    /// The peer closed the connection.
    #[error("connection closed")]
    ConnectionClosed,
    /// Reading from the peer failed (the peer's disconnect, a malformed message, the transport).
    #[error(transparent)]
    Read(Arc<EthStreamError>),
    /// The keepalive ping could not be sent.
    #[error("ping failed: {0}")]
    Ping(#[source] Arc<P2PStreamError>),
    /// The peer answered a snap request that was not asked (disconnected, `ProtocolError`).
    #[error("unrequested snap {message:?} (request id {id})")]
    UnrequestedSnap {
        /// The answer's message id.
        message: SnapMessageId,
        /// Its request id.
        id: u64,
    },
    /// The peer answered an eth request that was not asked (disconnected, `ProtocolError`).
    #[error("unrequested {message:?} (request id {id})")]
    Unrequested {
        /// The answer's message id.
        message: EthMessageId,
        /// Its request id.
        id: u64,
    },
    /// The peer sent a snap request no version of snap defines (disconnected, `ProtocolError`).
    #[error("a bad snap request")]
    BadSnapRequest,
    /// The peer announced a block range whose first block is after its last (disconnected,
    /// `ProtocolError`).
    #[error("invalid block range {earliest}..{latest}")]
    InvalidBlockRange {
        /// The range's first block.
        earliest: u64,
        /// Its last block.
        latest: u64,
    },
    /// The runtime is shutting down: the store read for an answer could not run.
    #[error("the runtime is shutting down")]
    RuntimeShutdown,
    /// The session's task panicked (a bug; logged with the panic).
    #[error("the session's task panicked")]
    Panicked,
}

/// Why a request brought no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SessionRequestError {
    /// The session was gone, or the request could not be sent.
    #[error("session closed")]
    Closed,
    /// The session ended while the request was pending (the peer left or misbehaved): why.
    #[error("session ended: {0}")]
    Ended(SessionEnd),
    /// No answer within [`REQUEST_TIMEOUT`].
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// What the node asks of a session.
#[derive(Debug)]
pub(crate) enum SessionCommand {
    /// Send `message` (a request; its request id is the session's to set) and hand the answer
    /// to `reply`.
    Request { message: EthMessage, reply: oneshot::Sender<Result<EthMessage, SessionRequestError>> },
    /// Send snap request `message` (its request id is the session's to set) and hand the
    /// answer to `reply`.
    SnapRequest {
        message: SnapMessage,
        reply: oneshot::Sender<Result<SnapMessage, SessionRequestError>>,
    },
    /// Send `message`, which is not a request (an announcement).
    Send(EthMessage),
    /// End the session with `reason`.
    Disconnect(DisconnectReason),
}

/// Hands the session behind `commands` (none: no session) the command `command` makes of a
/// reply channel, and awaits the reply.
///
/// # Errors
/// [`RequestError::Transport`] with the session's [`SessionRequestError`]: closed (no session,
/// or gone before answering), ended, or timed out.
pub(crate) async fn ask<T>(
    commands: Option<mpsc::Sender<SessionCommand>>,
    command: impl FnOnce(oneshot::Sender<Result<T, SessionRequestError>>) -> SessionCommand,
) -> Result<T, RequestError> {
    let closed = || RequestError::Transport(Box::new(SessionRequestError::Closed));
    let commands = commands.ok_or_else(closed)?;
    let (reply, answer) = oneshot::channel();
    commands.send(command(reply)).await.map_err(|_| closed())?;
    answer.await.map_err(|_| closed())?.map_err(|e| RequestError::Transport(Box::new(e)))
}

/// A request in flight.
struct Pending {
    answer: EthMessageId,
    deadline: Instant,
    reply: oneshot::Sender<Result<EthMessage, SessionRequestError>>,
}

/// A snap request in flight (its answer's id is the request's plus one).
struct SnapPending {
    answer: u8,
    deadline: Instant,
    reply: oneshot::Sender<Result<SnapMessage, SessionRequestError>>,
}

/// `message` with request id `id`, and the kind of its answer; `None` for a message that is
/// not a request.
fn with_request_id(message: EthMessage, id: u64) -> Option<(EthMessage, EthMessageId)> {
    Some(match message {
        EthMessage::GetBlockHeaders(p) => (
            EthMessage::GetBlockHeaders(RequestPair { request_id: id, ..p }),
            EthMessageId::BlockHeaders,
        ),
        EthMessage::GetBlockBodies(p) => (
            EthMessage::GetBlockBodies(RequestPair { request_id: id, ..p }),
            EthMessageId::BlockBodies,
        ),
        EthMessage::GetPooledTransactions(p) => (
            EthMessage::GetPooledTransactions(RequestPair { request_id: id, ..p }),
            EthMessageId::PooledTransactions,
        ),
        EthMessage::GetReceipts { first_block_receipt_index, hashes, .. } => (
            EthMessage::GetReceipts { request_id: id, first_block_receipt_index, hashes },
            EthMessageId::Receipts,
        ),
        EthMessage::GetBlockAccessLists(p) => (
            EthMessage::GetBlockAccessLists(RequestPair { request_id: id, ..p }),
            EthMessageId::BlockAccessLists,
        ),
        EthMessage::GetCells(p) => {
            (EthMessage::GetCells(GetCells { request_id: id, ..p }), EthMessageId::Cells)
        }
        _ => return None,
    })
}

/// The request id of an answer.
fn answer_id(message: &EthMessage) -> Option<u64> {
    Some(match message {
        EthMessage::BlockHeaders(p) => p.request_id,
        EthMessage::BlockBodies(p) => p.request_id,
        EthMessage::PooledTransactions(p) => p.request_id,
        EthMessage::Receipts { request_id, .. } => *request_id,
        EthMessage::BlockAccessLists(p) => p.request_id,
        EthMessage::Cells(p) => p.request_id,
        _ => return None,
    })
}

/// What a peer announces or sends unasked, handed to the network.
#[derive(Debug)]
pub(crate) enum PeerMessage {
    /// A valid `BlockRangeUpdate`.
    Range(BlockRangeUpdate),
    /// `NewPooledTransactionHashes`.
    Hashes(NewPooledTransactionHashes),
    /// A `Transactions` broadcast.
    Transactions(NetworkTransactions),
}

/// Runs the session until the peer leaves, misbehaves or is told to go; `on_message` is
/// called with what the peer announces or sends unasked (a `BlockRangeUpdate` whose earliest
/// block is past its latest ends the session, as geth ends it), `on_close` with the reason it
/// ended.
pub(crate) async fn run(
    mut stream: Stream,
    info: SessionInfo,
    serving: Serving,
    mut commands: mpsc::Receiver<SessionCommand>,
    on_message: impl Fn(PeerMessage),
    on_close: impl FnOnce(SessionEnd),
) {
    let mut pending: HashMap<u64, Pending> = HashMap::new();
    let mut snap_pending: HashMap<u64, SnapPending> = HashMap::new();
    let mut next_id: u64 = 0;
    let mut ping = tokio::time::interval(PING_INTERVAL);
    ping.tick().await;
    let mut sweep = tokio::time::interval(Duration::from_secs(1));
    let peer = info.record.id;
    let reason = loop {
        tokio::select! {
            command = commands.recv() => match command {
                None => {
                    let _ = stream.p2p_mut().disconnect(DisconnectReason::ClientQuitting).await;
                    break SessionEnd::NetworkStopped;
                }
                Some(SessionCommand::Send(message)) => {
                    if let Err(e) = stream.send(message).await {
                        break SessionEnd::Send(Arc::new(e));
                    }
                }
                Some(SessionCommand::Disconnect(reason)) => {
                    let _ = stream.p2p_mut().disconnect(reason).await;
                    break SessionEnd::Disconnected(reason);
                }
                Some(SessionCommand::Request { message, reply }) => {
                    let id = next_id;
                    next_id += 1;
                    let Some((message, answer)) = with_request_id(message, id) else {
                        let _ = reply.send(Err(SessionRequestError::Closed));
                        continue;
                    };
                    if let Err(e) = stream.send(message).await {
                        let _ = reply.send(Err(SessionRequestError::Closed));
                        break SessionEnd::Send(Arc::new(e));
                    }
                    pending.insert(id, Pending { answer, deadline: Instant::now() + REQUEST_TIMEOUT, reply });
                }
                Some(SessionCommand::SnapRequest { message, reply }) => {
                    let id = next_id;
                    next_id += 1;
                    // Not a request, or not one of the snap version negotiated (none: the
                    // peer does not serve snap): refused here, the session goes on.
                    let spoken = stream
                        .snap_version()
                        .is_some_and(|v| SnapMessage::defined(message.id() as u8, v));
                    if !message.is_request() || !spoken {
                        let _ = reply.send(Err(SessionRequestError::Closed));
                        continue;
                    }
                    let answer = message.id() as u8 + 1;
                    if let Err(e) = stream.send_snap(message.with_request_id(id)).await {
                        let _ = reply.send(Err(SessionRequestError::Closed));
                        break SessionEnd::Send(Arc::new(e));
                    }
                    snap_pending.insert(id, SnapPending { answer, deadline: Instant::now() + REQUEST_TIMEOUT, reply });
                }
            },
            incoming = stream.next_any() => match incoming {
                None => break SessionEnd::ConnectionClosed,
                Some(Err(e)) => break SessionEnd::Read(Arc::new(e)),
                Some(Ok(EthSnapMessage::Snap(message))) => {
                    if !message.is_request() {
                        let id = message.request_id();
                        match snap_pending.remove(&id) {
                            Some(p) if p.answer == message.id() as u8 => {
                                let _ = p.reply.send(Ok(message));
                                continue;
                            }
                            _ => {
                                let _ = stream.p2p_mut().disconnect(DisconnectReason::ProtocolError).await;
                                break SessionEnd::UnrequestedSnap { message: message.id(), id };
                            }
                        }
                    }
                    let serving = serving.clone();
                    let read = tokio::task::spawn_blocking(move || crate::serve::answer_snap(&serving, &message));
                    match read.await {
                        Ok(Ok(Some(answer))) => {
                            if let Err(e) = stream.send_snap(answer).await {
                                break SessionEnd::Send(Arc::new(e));
                            }
                        }
                        Ok(Ok(None)) => {
                            let _ = stream.p2p_mut().disconnect(DisconnectReason::ProtocolError).await;
                            break SessionEnd::BadSnapRequest;
                        }
                        Ok(Err(e)) => tracing::warn!(target: "net::devp2p", %peer, error = %e, "store read failed; snap request left unanswered"),
                        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                        Err(_) => break SessionEnd::RuntimeShutdown,
                    }
                }
                Some(Ok(EthSnapMessage::Eth(message))) => {
                    if let Some(id) = answer_id(&message) {
                        match pending.remove(&id) {
                            Some(p) if p.answer == message.id() => {
                                let _ = p.reply.send(Ok(message));
                            }
                            _ => {
                                let _ = stream.p2p_mut().disconnect(DisconnectReason::ProtocolError).await;
                                break SessionEnd::Unrequested { message: message.id(), id };
                            }
                        }
                    } else if crate::serve::empty_answer(&message).is_some() {
                        tracing::trace!(target: "net::devp2p", %peer, id = ?message.id(), "request");
                        let serving = serving.clone();
                        let version = info.version;
                        let read = tokio::task::spawn_blocking(move || {
                            crate::serve::answer(&serving, &message, version)
                        });
                        match read.await {
                            Ok(Ok(Some(answer))) => {
                                let id = answer.id();
                                if let Err(e) = stream.send(answer).await {
                                    break SessionEnd::Send(Arc::new(e));
                                }
                                tracing::trace!(target: "net::devp2p", %peer, ?id, "answered");
                            }
                            Ok(Ok(None)) => {}
                            // A failed read leaves the request unanswered (never short).
                            Ok(Err(e)) => tracing::warn!(target: "net::devp2p", %peer, error = %e, "store read failed; request left unanswered"),
                            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                            Err(_) => break SessionEnd::RuntimeShutdown,
                        }
                    } else if let EthMessage::BlockRangeUpdate(range) = message {
                        if range.earliest > range.latest {
                            let _ = stream.p2p_mut().disconnect(DisconnectReason::ProtocolError).await;
                            break SessionEnd::InvalidBlockRange { earliest: range.earliest, latest: range.latest };
                        }
                        on_message(PeerMessage::Range(range));
                    } else if let EthMessage::NewPooledTransactionHashes(hashes) = message {
                        on_message(PeerMessage::Hashes(hashes));
                    } else if let EthMessage::Transactions(txs) = message {
                        on_message(PeerMessage::Transactions(txs));
                    } else {
                        tracing::trace!(target: "net::devp2p", %peer, id = ?message.id(), "ignored");
                    }
                }
            },
            _ = ping.tick() => {
                if let Err(e) = stream.p2p_mut().ping().await {
                    break SessionEnd::Ping(Arc::new(e));
                }
            }
            _ = sweep.tick() => {
                let now = Instant::now();
                let expired: Vec<u64> =
                    pending.iter().filter(|(_, p)| p.deadline <= now).map(|(id, _)| *id).collect();
                for id in expired {
                    if let Some(p) = pending.remove(&id) {
                        let _ = p.reply.send(Err(SessionRequestError::Timeout(REQUEST_TIMEOUT)));
                    }
                }
                let expired: Vec<u64> =
                    snap_pending.iter().filter(|(_, p)| p.deadline <= now).map(|(id, _)| *id).collect();
                for id in expired {
                    if let Some(p) = snap_pending.remove(&id) {
                        let _ = p.reply.send(Err(SessionRequestError::Timeout(REQUEST_TIMEOUT)));
                    }
                }
            }
        }
    };
    for (_, p) in pending.drain() {
        let _ = p.reply.send(Err(SessionRequestError::Ended(reason.clone())));
    }
    for (_, p) in snap_pending.drain() {
        let _ = p.reply.send(Err(SessionRequestError::Ended(reason.clone())));
    }
    tracing::debug!(target: "net::devp2p", %peer, %reason, "session ended");
    on_close(reason);
}
