//! The eth protocol over a p2p session: [`EthStream::handshake`] exchanges `Status` (ours sent
//! first, the peer's read within 5 s) and checks the peer's as geth does
//! (`eth/protocols/eth/handshake.go`): same version, network id and genesis, a fork id
//! EIP-2124's filter accepts, a sane block range. The stream then yields [`EthMessage`]s
//! decoded for the negotiated version (at most 10 MiB each); the sink takes them. When snap
//! was negotiated beside eth, [`EthStream::next_any`] yields snap messages too
//! ([`EthSnapMessage`]) and [`EthStream::send_snap`] sends them; the plain stream skips them.

use crate::{EthStreamError, P2PStream, P2PStreamError};
use alloy_eip2124::ForkFilter;
use alloy_primitives::B256;
use bytes::{Bytes, BytesMut};
use futures::{Sink, SinkExt, Stream, StreamExt};
use gigagas_eth_wire_types::{
    EthMessage, EthVersion, SnapMessage, SnapVersion, StatusMessage, MAX_MESSAGE_SIZE,
};
use gigagas_net_ecies::EciesError;
use std::{
    pin::Pin,
    task::{ready, Context, Poll},
    time::Duration,
};

/// How long the `Status` exchange may take (geth's `handshakeTimeout`).
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(5);

/// An eth session with the version and id offset the p2p handshake negotiated.
#[derive(Debug)]
pub struct EthStream<S> {
    inner: P2PStream<S>,
    version: EthVersion,
    offset: u64,
    /// snap's version and offset, when negotiated.
    snap: Option<(SnapVersion, u64)>,
}

/// A message of the session's eth or snap capability.
#[derive(Debug, Clone, PartialEq)]
pub enum EthSnapMessage {
    /// An eth message.
    Eth(EthMessage),
    /// A snap message.
    Snap(SnapMessage),
}

impl<S> EthStream<S>
where
    S: Stream<Item = Result<BytesMut, EciesError>> + Sink<Bytes, Error = EciesError> + Unpin,
{
    /// Exchanges `Status` over `p2p`: sends `ours` (its version set to the negotiated one),
    /// reads the peer's and checks it against `ours` and `fork_filter`.
    ///
    /// # Errors
    /// No eth capability was negotiated, a message other than `Status`, a mismatch (version,
    /// network, genesis, fork id, block range), an I/O failure or the timeout.
    pub async fn handshake(
        mut p2p: P2PStream<S>,
        mut ours: StatusMessage,
        fork_filter: &ForkFilter,
    ) -> Result<(Self, StatusMessage), EthStreamError> {
        let eth = p2p
            .shared_capabilities()
            .iter()
            .find(|c| c.cap.name == "eth")
            .and_then(|c| Some((EthVersion::from_number(c.cap.version)?, u64::from(c.offset))));
        let Some((version, offset)) = eth else {
            return Err(
                P2PStreamError::NoSharedCapability("no eth version in common".into()).into()
            );
        };
        ours.version = version.number();
        let theirs = tokio::time::timeout(STATUS_TIMEOUT, async {
            let payload = EthMessage::Status(ours).encode_payload(version)?;
            p2p.send((offset, Bytes::from(payload))).await?;
            let (id, payload) = p2p.next().await.ok_or(P2PStreamError::Closed)??;
            if id != offset {
                return Err(EthStreamError::StatusExpected(id));
            }
            match EthMessage::decode(0, version, &payload)? {
                EthMessage::Status(status) => Ok(status),
                other => Err(EthStreamError::StatusExpected(offset + other.id() as u64)),
            }
        })
        .await
        .map_err(|_| EthStreamError::HandshakeTimeout)??;
        check_status(&ours, &theirs, fork_filter)?;
        let snap =
            p2p.shared_capabilities().iter().find(|c| c.cap.name == "snap").and_then(|c| {
                Some((SnapVersion::from_number(c.cap.version)?, u64::from(c.offset)))
            });
        Ok((Self { inner: p2p, version, offset, snap }, theirs))
    }
}

/// geth's checks of a peer's `Status` against ours.
fn check_status(
    ours: &StatusMessage,
    theirs: &StatusMessage,
    fork_filter: &ForkFilter,
) -> Result<(), EthStreamError> {
    if theirs.version != ours.version {
        return Err(EthStreamError::VersionMismatch { ours: ours.version, theirs: theirs.version });
    }
    if theirs.network_id != ours.network_id {
        return Err(EthStreamError::NetworkMismatch {
            ours: ours.network_id,
            theirs: theirs.network_id,
        });
    }
    if theirs.genesis != ours.genesis {
        return Err(EthStreamError::GenesisMismatch { ours: ours.genesis, theirs: theirs.genesis });
    }
    fork_filter
        .validate(theirs.fork_id)
        .map_err(|source| EthStreamError::ForkId { fork_id: theirs.fork_id, source })?;
    if theirs.earliest > theirs.latest || theirs.latest_hash == B256::ZERO {
        return Err(EthStreamError::InvalidBlockRange {
            earliest: theirs.earliest,
            latest: theirs.latest,
        });
    }
    Ok(())
}

impl<S> EthStream<S> {
    /// The negotiated eth version.
    pub fn version(&self) -> EthVersion {
        self.version
    }

    /// The snap version negotiated beside eth, if any.
    pub fn snap_version(&self) -> Option<SnapVersion> {
        self.snap.map(|(v, _)| v)
    }

    /// The p2p session below.
    pub fn p2p_mut(&mut self) -> &mut P2PStream<S> {
        &mut self.inner
    }
}

impl<S> EthStream<S>
where
    S: Stream<Item = Result<BytesMut, EciesError>> + Sink<Bytes, Error = EciesError> + Unpin,
{
    /// The next eth or snap message (at most 10 MiB each).
    pub fn poll_next_any(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<EthSnapMessage, EthStreamError>>> {
        let (id, payload) = match ready!(Pin::new(&mut self.inner).poll_next(cx)) {
            None => return Poll::Ready(None),
            Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
            Some(Ok(message)) => message,
        };
        if payload.len() > MAX_MESSAGE_SIZE {
            return Poll::Ready(Some(Err(EthStreamError::MessageTooLarge(payload.len()))));
        }
        if let Some((version, offset)) = self.snap {
            if id >= offset {
                // The p2p layer yields only ids of shared capabilities: past eth, snap's.
                let relative = (id - offset) as u8;
                return Poll::Ready(Some(
                    SnapMessage::decode(relative, version, &payload)
                        .map(EthSnapMessage::Snap)
                        .map_err(Into::into),
                ));
            }
        }
        let relative = (id - self.offset) as u8;
        Poll::Ready(Some(match EthMessage::decode(relative, self.version, &payload) {
            Ok(EthMessage::Status(_)) => Err(EthStreamError::UnexpectedStatus),
            Ok(message) => Ok(EthSnapMessage::Eth(message)),
            Err(e) => Err(e.into()),
        }))
    }

    /// [`Self::poll_next_any`] as a future.
    pub async fn next_any(&mut self) -> Option<Result<EthSnapMessage, EthStreamError>> {
        std::future::poll_fn(|cx| self.poll_next_any(cx)).await
    }

    /// Sends a snap message.
    ///
    /// # Errors
    /// [`EthStreamError::Snap`] when no snap version was negotiated or the version does not
    /// define the message; the p2p layer's error.
    pub async fn send_snap(&mut self, message: SnapMessage) -> Result<(), EthStreamError> {
        let id = message.id() as u8;
        let Some((_, offset)) = self.snap.filter(|(v, _)| SnapMessage::defined(id, *v)) else {
            let version = self.snap.map_or(0, |(v, _)| v.number());
            return Err(gigagas_eth_wire_types::SnapMessageError::UnknownId { id, version }.into());
        };
        let payload = message.encode_payload();
        self.inner.send((offset + u64::from(id), Bytes::from(payload))).await.map_err(Into::into)
    }
}

impl<S> Stream for EthStream<S>
where
    S: Stream<Item = Result<BytesMut, EciesError>> + Sink<Bytes, Error = EciesError> + Unpin,
{
    type Item = Result<EthMessage, EthStreamError>;

    /// eth messages only: snap messages are skipped ([`EthStream::next_any`] yields both).
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            return Poll::Ready(match ready!(this.poll_next_any(cx)) {
                None => None,
                Some(Ok(EthSnapMessage::Eth(message))) => Some(Ok(message)),
                Some(Ok(EthSnapMessage::Snap(_))) => continue,
                Some(Err(e)) => Some(Err(e)),
            });
        }
    }
}

impl<S> Sink<EthMessage> for EthStream<S>
where
    S: Sink<Bytes, Error = EciesError> + Unpin,
{
    type Error = EthStreamError;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().inner).poll_ready(cx).map_err(Into::into)
    }

    fn start_send(self: Pin<&mut Self>, message: EthMessage) -> Result<(), Self::Error> {
        let this = self.get_mut();
        let payload = message.encode_payload(this.version)?;
        let id = this.offset + message.id() as u64;
        Pin::new(&mut this.inner).start_send((id, Bytes::from(payload))).map_err(Into::into)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx).map_err(Into::into)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().inner).poll_close(cx).map_err(Into::into)
    }
}
