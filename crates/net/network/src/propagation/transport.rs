//! The push engine's transport: one long-lived libp2p stream per peer and direction, frames
//! length-prefixed (4 bytes, little-endian) on it. Inbound, a reader task per stream hands the
//! engine each frame (or the length of one too long, which closes the stream); outbound, one
//! uplink task writes the frames the engine makes, opening a peer's stream on its first frame
//! and pacing the link when asked.

use super::{Protocol, MAX_FRAME_BYTES};
use futures::{AsyncReadExt, AsyncWriteExt};
use libp2p::{PeerId, Stream, StreamProtocol};
use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};
use tokio::sync::mpsc;

/// How long opening a stream to a peer may take.
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// An inbound frame, or the reason a stream was closed.
pub(super) type Inbound = (PeerId, Result<Vec<u8>, usize>);

/// The stream protocol of each coded scheme.
pub(crate) fn stream_protocol(protocol: Protocol) -> StreamProtocol {
    match protocol {
        Protocol::Rs => StreamProtocol::new("/gigagas/rs/1"),
        _ => StreamProtocol::new("/gigagas/rlnc/1"),
    }
}

/// Reads `peer`'s frames off `stream` into `tx` until the stream ends or a frame is too long.
pub(super) async fn read_frames(
    peer: PeerId,
    mut stream: Stream,
    tx: mpsc::UnboundedSender<Inbound>,
) {
    let mut len = [0u8; 4];
    loop {
        if stream.read_exact(&mut len).await.is_err() {
            return;
        }
        let n = u32::from_le_bytes(len) as usize;
        if n > MAX_FRAME_BYTES {
            let _ = tx.send((peer, Err(n)));
            return;
        }
        let mut frame = vec![0u8; n];
        if stream.read_exact(&mut frame).await.is_err() || tx.send((peer, Ok(frame))).is_err() {
            return;
        }
    }
}

/// Frames held for a peer whose stream is being opened, at most.
const MAX_HELD_FRAMES: usize = 32;
/// Bytes charged to the pace per frame besides its own (length prefix, yamux and noise
/// framing, TCP/IP headers of its segments), an upper estimate.
const FRAME_OVERHEAD_BYTES: usize = 64;

/// The uplink: writes each frame to its peer's long-lived stream. A stream is opened in the
/// background on a peer's first frame (its frames are held meanwhile, up to
/// [`MAX_HELD_FRAMES`]), so that a peer whose stream is slow to open never holds up the others.
/// With a `pace` (bytes per second), it takes the next frame only once the link has had time
/// to carry the previous ones.
/// A write that fails (the connection under the stream closed) is tried once more on a new
/// stream with the frames after it.
pub(super) async fn write_frames(
    control: libp2p_stream::Control,
    protocol: StreamProtocol,
    mut rx: mpsc::Receiver<(PeerId, Vec<u8>)>,
    pace: Option<f64>,
    tasks: gigagas_tasks::TaskExecutor,
) {
    let mut free_at = tokio::time::Instant::now();
    let mut streams: HashMap<PeerId, Stream> = HashMap::new();
    let mut opening: HashMap<PeerId, Vec<Vec<u8>>> = HashMap::new();
    // Peers whose last write failed and whose frames wait on a second stream.
    let mut retrying: HashSet<PeerId> = HashSet::new();
    let (opened_tx, mut opened_rx) = mpsc::unbounded_channel::<(PeerId, Option<Stream>)>();
    // Holds `frames` for `peer`, opening its stream in the background unless one is opening.
    let open = |opening: &mut HashMap<PeerId, Vec<Vec<u8>>>, peer: PeerId, frames: Vec<Vec<u8>>| {
        let held = opening.entry(peer).or_insert_with(|| {
            let (mut control, protocol, tx) =
                (control.clone(), protocol.clone(), opened_tx.clone());
            tasks.spawn(async move {
                let open = control.open_stream(peer, protocol);
                let stream = match tokio::time::timeout(OPEN_TIMEOUT, open).await {
                    Ok(Ok(stream)) => Some(stream),
                    Ok(Err(e)) => {
                        tracing::debug!(target: "net", %peer, error = %e, "cannot open a chunk stream");
                        None
                    }
                    Err(_) => None,
                };
                let _ = tx.send((peer, stream));
            });
            Vec::new()
        });
        let room = MAX_HELD_FRAMES.saturating_sub(held.len());
        held.extend(frames.into_iter().take(room));
    };
    loop {
        let (peer, frames) = tokio::select! {
            next = rx.recv() => match next {
                Some((peer, frame)) => {
                    if !streams.contains_key(&peer) {
                        open(&mut opening, peer, vec![frame]);
                        continue;
                    }
                    (peer, vec![frame])
                }
                None => return,
            },
            Some((peer, stream)) = opened_rx.recv() => {
                let held = opening.remove(&peer).unwrap_or_default();
                match stream {
                    Some(stream) => {
                        streams.insert(peer, stream);
                        (peer, held)
                    }
                    None => {
                        retrying.remove(&peer);
                        continue;
                    }
                }
            }
        };
        let Some(stream) = streams.get_mut(&peer) else { continue };
        let mut frames_left = frames.into_iter();
        while let Some(frame) = frames_left.next() {
            if let Some(rate) = pace {
                tokio::time::sleep_until(free_at).await;
                let busy = (frame.len() + FRAME_OVERHEAD_BYTES) as f64 / rate;
                free_at = free_at.max(tokio::time::Instant::now()) + Duration::from_secs_f64(busy);
            }
            tracing::trace!(target: "net::push", %peer, len = frame.len(), "uplink frame");
            let mut bytes = Vec::with_capacity(4 + frame.len());
            bytes.extend_from_slice(&(frame.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&frame);
            if let Err(e) = async {
                stream.write_all(&bytes).await?;
                stream.flush().await
            }
            .await
            {
                tracing::debug!(target: "net", %peer, error = %e, "chunk stream closed");
                streams.remove(&peer);
                // The connection under the stream may have been replaced: this frame and the
                // rest go out on a new stream, once (a second failure in a row drops them).
                if retrying.insert(peer) {
                    let rest: Vec<Vec<u8>> =
                        std::iter::once(frame).chain(frames_left.by_ref()).collect();
                    open(&mut opening, peer, rest);
                }
                break;
            }
            retrying.remove(&peer);
        }
    }
}
