//! An RLPx session over any byte stream: [`EciesStream::connect`] runs the initiator's side
//! of the handshake, [`EciesStream::accept`] the recipient's, each within
//! [`HANDSHAKE_TIMEOUT`]; the session is then a stream of frames in and a sink of frames out.

use crate::{
    algorithm::{FrameCipher, Handshake},
    codec::{FrameCodec, MAX_FRAME},
    EciesError, PeerId,
};
use bytes::{Bytes, BytesMut};
use futures::{Sink, Stream};
use k256::SecretKey;
use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::Framed;

/// How long the auth/ack exchange may take (geth's `handshakeTimeout`).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest auth or ack packet accepted (bytes, prefix excluded), as geth.
pub const MAX_HANDSHAKE_PACKET: usize = 2048;

/// An established RLPx session with `remote_id`: frames in ([`Stream`]), frames out ([`Sink`]).
#[derive(Debug)]
pub struct EciesStream<Io> {
    framed: Framed<Io, FrameCodec>,
    remote_id: PeerId,
}

/// Reads one handshake packet: its 2-byte size, then that many bytes; returns both.
async fn read_packet<Io: AsyncRead + Unpin>(io: &mut Io) -> Result<Vec<u8>, EciesError> {
    let mut prefix = [0u8; 2];
    io.read_exact(&mut prefix).await.map_err(closed)?;
    let size = usize::from(u16::from_be_bytes(prefix));
    if size > MAX_HANDSHAKE_PACKET {
        return Err(EciesError::HandshakeTooLarge(size));
    }
    let mut packet = vec![0u8; 2 + size];
    packet[..2].copy_from_slice(&prefix);
    io.read_exact(&mut packet[2..]).await.map_err(closed)?;
    Ok(packet)
}

fn closed(e: std::io::Error) -> EciesError {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        EciesError::ClosedDuringHandshake
    } else {
        EciesError::Io(e)
    }
}

async fn within<T>(
    f: impl std::future::Future<Output = Result<T, EciesError>>,
) -> Result<T, EciesError> {
    tokio::time::timeout(HANDSHAKE_TIMEOUT, f).await.map_err(|_| EciesError::HandshakeTimeout)?
}

impl<Io: AsyncRead + AsyncWrite + Unpin> EciesStream<Io> {
    /// Dials: sends auth to `remote_id` over `io`, reads its ack.
    ///
    /// # Errors
    /// An I/O failure, a bad ack, or [`EciesError::HandshakeTimeout`].
    pub async fn connect(
        mut io: Io,
        secret: SecretKey,
        remote_id: PeerId,
    ) -> Result<Self, EciesError> {
        let mut handshake = Handshake::initiator(secret, &remote_id)?;
        within(async {
            io.write_all(&handshake.auth()).await?;
            let ack = read_packet(&mut io).await?;
            handshake.read_ack(&ack)
        })
        .await?;
        Self::established(io, &handshake, remote_id)
    }

    /// Answers: reads an auth from `io`, sends the ack.
    ///
    /// # Errors
    /// An I/O failure, a bad auth, or [`EciesError::HandshakeTimeout`].
    pub async fn accept(mut io: Io, secret: SecretKey) -> Result<Self, EciesError> {
        let mut handshake = Handshake::recipient(secret);
        within(async {
            let auth = read_packet(&mut io).await?;
            handshake.read_auth(&auth)?;
            io.write_all(&handshake.ack()).await?;
            Ok(())
        })
        .await?;
        let remote_id = handshake.remote_id().expect("read from the auth");
        Self::established(io, &handshake, remote_id)
    }

    fn established(io: Io, handshake: &Handshake, remote_id: PeerId) -> Result<Self, EciesError> {
        let codec = FrameCodec::new(FrameCipher::new(handshake.secrets()?), MAX_FRAME);
        Ok(Self { framed: Framed::new(io, codec), remote_id })
    }
}

impl<Io> EciesStream<Io> {
    /// The remote node's id (its static public key).
    pub fn remote_id(&self) -> PeerId {
        self.remote_id
    }

    /// The underlying byte stream.
    pub fn get_ref(&self) -> &Io {
        self.framed.get_ref()
    }
}

impl<Io: AsyncRead + AsyncWrite + Unpin> Stream for EciesStream<Io> {
    type Item = Result<BytesMut, EciesError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.framed).poll_next(cx)
    }
}

impl<Io: AsyncRead + AsyncWrite + Unpin> Sink<Bytes> for EciesStream<Io> {
    type Error = EciesError;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), EciesError>> {
        Pin::new(&mut self.framed).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: Bytes) -> Result<(), EciesError> {
        Pin::new(&mut self.framed).start_send(item)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), EciesError>> {
        Pin::new(&mut self.framed).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), EciesError>> {
        Pin::new(&mut self.framed).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{peer_id, random_secret_key};
    use futures::{SinkExt, StreamExt};

    #[tokio::test]
    async fn a_session_over_tcp_carries_frames_both_ways() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (a_key, b_key) = (random_secret_key(), random_secret_key());
        let b_id = peer_id(&b_key.public_key());
        let server = tokio::spawn(async move {
            let (io, _) = listener.accept().await.unwrap();
            let mut s = EciesStream::accept(io, b_key).await.unwrap();
            while let Some(frame) = s.next().await {
                let frame = frame.unwrap();
                s.send(Bytes::from(frame.iter().rev().copied().collect::<Vec<u8>>()))
                    .await
                    .unwrap();
            }
            s.remote_id()
        });
        let io = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut a = EciesStream::connect(io, a_key.clone(), b_id).await.unwrap();
        for data in [vec![1u8, 2, 3], vec![9u8; 70_000], vec![]] {
            a.send(Bytes::from(data.clone())).await.unwrap();
            let back = a.next().await.unwrap().unwrap();
            assert_eq!(back.iter().rev().copied().collect::<Vec<u8>>(), data);
        }
        drop(a);
        assert_eq!(server.await.unwrap(), peer_id(&a_key.public_key()));
    }

    #[tokio::test]
    async fn a_dial_to_the_wrong_key_fails_and_garbage_is_refused() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let b_key = random_secret_key();
        let server = tokio::spawn(async move {
            let mut results = Vec::new();
            for _ in 0..3 {
                let (io, _) = listener.accept().await.unwrap();
                results.push(EciesStream::accept(io, b_key.clone()).await.map(|_| ()));
            }
            results
        });
        // An auth encrypted to another key: the recipient cannot open it.
        let io = tokio::net::TcpStream::connect(addr).await.unwrap();
        let wrong = peer_id(&random_secret_key().public_key());
        assert!(EciesStream::connect(io, random_secret_key(), wrong).await.is_err());
        // A size prefix above the limit.
        let mut io = tokio::net::TcpStream::connect(addr).await.unwrap();
        io.write_all(&[0xff, 0xff, 0, 0]).await.unwrap();
        drop(io);
        // Random bytes of a plausible size.
        let mut io = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut junk = vec![0x01, 0x00];
        junk.extend((0..256).map(|i| i as u8));
        io.write_all(&junk).await.unwrap();
        let results = server.await.unwrap();
        assert!(matches!(results[0], Err(EciesError::BadEciesMac)), "{:?}", results[0]);
        assert!(
            matches!(results[1], Err(EciesError::HandshakeTooLarge(65535))),
            "{:?}",
            results[1]
        );
        assert!(results[2].is_err(), "{:?}", results[2]);
    }
}
