//! The p2p base protocol over an RLPx session (devp2p `rlpx.md`, geth's `p2p/peer.go`).
//!
//! Flow: [`P2PStream::handshake`] sends our `Hello` and reads the peer's (a `Disconnect` in
//! its place — geth's "too many peers" — is that error), negotiates the shared capabilities and
//! turns snappy on when both speak p2p/5. The stream then yields the messages of the shared
//! capabilities as `(absolute id, payload)`; it answers `Ping` with `Pong` by itself, turns a
//! `Disconnect` into [`P2PStreamError::Disconnected`], and refuses a frame that would
//! decompress beyond 16 MiB before decompressing it. The sink takes `(absolute id, payload)`.

use crate::{
    capability::{negotiate, Protocol, SharedCapability},
    DisconnectReason, HelloMessage, P2PStreamError,
};
use alloy_rlp::{Decodable, Encodable};
use bytes::{Bytes, BytesMut};
use futures::{Sink, SinkExt, Stream, StreamExt};
use gigagas_net_ecies::{EciesError, MAX_FRAME};
use std::{
    pin::Pin,
    task::{ready, Context, Poll},
    time::Duration,
};

/// How long the `Hello` exchange may take.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest `Hello` accepted (bytes), as geth's base protocol limit.
pub const MAX_HELLO_SIZE: usize = 2048;
/// Largest decompressed message (bytes): a 24-bit length, as geth.
pub const MAX_MESSAGE: usize = MAX_FRAME;

const HELLO: u64 = 0x00;
const DISCONNECT: u64 = 0x01;
const PING: u64 = 0x02;
const PONG: u64 = 0x03;

/// A session after `Hello`: the shared capabilities' messages in and out.
#[derive(Debug)]
pub struct P2PStream<S> {
    inner: S,
    snappy: bool,
    shared: Vec<SharedCapability>,
    /// A `Pong` owed to the peer, sent before anything else.
    pong_owed: bool,
    /// Pings answered by the peer since the session began.
    pongs: u64,
}

/// `rlp(id) ‖ payload` of one message.
fn frame(id: u64, payload: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(payload.len() + 2);
    id.encode(&mut out);
    out.extend_from_slice(payload);
    Bytes::from(out)
}

/// The message id at the start of `frame` and the rest.
fn split_id(frame: &[u8]) -> Result<(u64, &[u8]), P2PStreamError> {
    if frame.is_empty() {
        return Err(P2PStreamError::EmptyFrame);
    }
    let mut rest = frame;
    let id = u64::decode(&mut rest)?;
    Ok((id, rest))
}

impl<S> P2PStream<S>
where
    S: Stream<Item = Result<BytesMut, EciesError>> + Sink<Bytes, Error = EciesError> + Unpin,
{
    /// Exchanges `Hello` over `inner` and negotiates the capabilities of `protocols` the peer
    /// also speaks; returns the session and the peer's `Hello`.
    ///
    /// # Errors
    /// The peer's `Disconnect`, a malformed or oversize `Hello`, no shared capability (the
    /// peer is then sent `Disconnect(UselessPeer)`), an I/O failure, or the timeout.
    pub async fn handshake(
        mut inner: S,
        hello: &HelloMessage,
        protocols: &[Protocol],
    ) -> Result<(Self, HelloMessage), P2PStreamError> {
        let theirs = tokio::time::timeout(HELLO_TIMEOUT, async {
            inner.send(frame(HELLO, &alloy_rlp::encode(hello))).await?;
            let first = inner.next().await.ok_or(P2PStreamError::Closed)??;
            let (id, mut payload) = split_id(&first)?;
            match id {
                HELLO if payload.len() > MAX_HELLO_SIZE => {
                    Err(P2PStreamError::HelloTooLarge(payload.len()))
                }
                HELLO => Ok(HelloMessage::decode(&mut payload)?),
                // Before Hello nothing is compressed.
                DISCONNECT => {
                    Err(P2PStreamError::Disconnected(DisconnectReason::decode(&mut payload)?))
                }
                other => Err(P2PStreamError::HelloExpected(other)),
            }
        })
        .await
        .map_err(|_| P2PStreamError::HandshakeTimeout)??;
        let shared = negotiate(protocols, &theirs.capabilities);
        let snappy = hello.protocol_version >= 5 && theirs.protocol_version >= 5;
        let mut stream = Self { inner, snappy, shared, pong_owed: false, pongs: 0 };
        if stream.shared.is_empty() {
            let offered =
                theirs.capabilities.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            // Best effort: the session ends either way.
            let _ = stream.disconnect(DisconnectReason::UselessPeer).await;
            return Err(P2PStreamError::NoSharedCapability(offered));
        }
        Ok((stream, theirs))
    }

    /// Sends `Disconnect(reason)` and flushes it.
    ///
    /// # Errors
    /// The session's I/O failure.
    pub async fn disconnect(&mut self, reason: DisconnectReason) -> Result<(), P2PStreamError> {
        let message = self.encode(DISCONNECT, &alloy_rlp::encode(reason))?;
        self.inner.send(message).await?;
        Ok(())
    }

    /// Sends `Ping`.
    ///
    /// # Errors
    /// The session's I/O failure.
    pub async fn ping(&mut self) -> Result<(), P2PStreamError> {
        let message = self.encode(PING, &[alloy_rlp::EMPTY_LIST_CODE])?;
        self.inner.send(message).await?;
        Ok(())
    }
}

impl<S> P2PStream<S> {
    /// The capabilities both sides speak, with their offsets.
    pub fn shared_capabilities(&self) -> &[SharedCapability] {
        &self.shared
    }

    /// `Pong`s received so far.
    pub fn pongs(&self) -> u64 {
        self.pongs
    }

    /// The framed stream underneath (the ECIES stream of a session).
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// `rlp(id) ‖ payload`, the payload compressed when snappy is on.
    fn encode(&self, id: u64, payload: &[u8]) -> Result<Bytes, P2PStreamError> {
        if !self.snappy {
            return Ok(frame(id, payload));
        }
        let compressed = snap::raw::Encoder::new().compress_vec(payload)?;
        Ok(frame(id, &compressed))
    }

    /// The payload of a received message, decompressed when snappy is on.
    fn decode_payload(&self, payload: &[u8]) -> Result<Bytes, P2PStreamError> {
        if !self.snappy {
            return Ok(Bytes::copy_from_slice(payload));
        }
        let len = snap::raw::decompress_len(payload)?;
        if len > MAX_MESSAGE {
            return Err(P2PStreamError::Oversize { len, limit: MAX_MESSAGE });
        }
        Ok(Bytes::from(snap::raw::Decoder::new().decompress_vec(payload)?))
    }
}

impl<S> P2PStream<S>
where
    S: Sink<Bytes, Error = EciesError> + Unpin,
{
    /// Sends the owed `Pong` if the session can take it now.
    fn poll_pong(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), P2PStreamError>> {
        if self.pong_owed {
            ready!(Pin::new(&mut self.inner).poll_ready(cx))?;
            let pong = self.encode(PONG, &[alloy_rlp::EMPTY_LIST_CODE])?;
            Pin::new(&mut self.inner).start_send(pong)?;
            self.pong_owed = false;
            // Flushing may stay pending; the frame is queued either way.
            let _ = Pin::new(&mut self.inner).poll_flush(cx)?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S> Stream for P2PStream<S>
where
    S: Stream<Item = Result<BytesMut, EciesError>> + Sink<Bytes, Error = EciesError> + Unpin,
{
    type Item = Result<(u64, Bytes), P2PStreamError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Poll::Ready(Err(e)) = this.poll_pong(cx) {
                return Poll::Ready(Some(Err(e)));
            }
            let frame = match ready!(Pin::new(&mut this.inner).poll_next(cx)) {
                None => return Poll::Ready(None),
                Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
                Some(Ok(frame)) => frame,
            };
            let result =
                split_id(&frame).and_then(|(id, payload)| Ok((id, this.decode_payload(payload)?)));
            let (id, payload) = match result {
                Ok(message) => message,
                Err(e) => return Poll::Ready(Some(Err(e))),
            };
            match id {
                HELLO => return Poll::Ready(Some(Err(P2PStreamError::HelloExpected(HELLO)))),
                DISCONNECT => {
                    let reason = DisconnectReason::decode(&mut payload.as_ref())
                        .unwrap_or(DisconnectReason::Other(0xff));
                    return Poll::Ready(Some(Err(P2PStreamError::Disconnected(reason))));
                }
                PING => this.pong_owed = true,
                PONG => this.pongs += 1,
                // The rest of the base protocol's range carries nothing yet.
                id if id < u64::from(crate::capability::BASE_PROTOCOL_LENGTH) => {}
                id if this.shared.iter().any(|c| c.contains(id as u8)) && id <= 0xff => {
                    return Poll::Ready(Some(Ok((id, payload))))
                }
                id => return Poll::Ready(Some(Err(P2PStreamError::UnknownMessageId(id)))),
            }
        }
    }
}

impl<S> Sink<(u64, Bytes)> for P2PStream<S>
where
    S: Sink<Bytes, Error = EciesError> + Unpin,
{
    type Error = P2PStreamError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let this = self.get_mut();
        ready!(this.poll_pong(cx))?;
        Pin::new(&mut this.inner).poll_ready(cx).map_err(Into::into)
    }

    fn start_send(self: Pin<&mut Self>, (id, payload): (u64, Bytes)) -> Result<(), Self::Error> {
        let this = self.get_mut();
        let message = this.encode(id, &payload)?;
        Pin::new(&mut this.inner).start_send(message).map_err(Into::into)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx).map_err(Into::into)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx).map_err(Into::into)
    }
}
