//! Frames of the coded protocols on their per-peer streams, header first:
//!
//! ```text
//! length u32 LE (of what follows, at most MAX_FRAME_BYTES)
//!   ‖ kind u8 (0 = chunk, 1 = decoded: "stop sending me this block",
//!              2 = progress: "I hold this rank, have had this many chunks from you, and
//!                  this many peers send me the block")
//!   ‖ block key 32 ‖ body (chunk: the scheme's message; decoded: empty;
//!                          progress: rank u16 LE ‖ received u16 LE ‖ senders u16 LE)
//! ```
//!
//! A receiver reads the kind and the key before the body, so that chunks of a block it has
//! already decoded are dropped without parsing them.

use super::BlockKey;

/// Largest frame accepted (bytes after the length prefix): a chunk of the largest block the
/// schemes produce is far below it.
pub const MAX_FRAME_BYTES: usize = 4 << 20;

const KIND_CHUNK: u8 = 0;
const KIND_DECODED: u8 = 1;
const KIND_PROGRESS: u8 = 2;
const PROGRESS_BODY: usize = 6;
const HEADER: usize = 1 + 32;

/// A frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A chunk of block `key`: the scheme's message.
    Chunk {
        /// The block.
        key: BlockKey,
        /// The scheme's message.
        body: Vec<u8>,
    },
    /// The sender decoded block `key`: send it no more chunks of it.
    Decoded {
        /// The block.
        key: BlockKey,
    },
    /// The sender's progress on block `key`, for the peer it is addressed to: the rank it
    /// holds (RLNC; distinct shards for RS) and how many chunks of the block it has received
    /// from that peer, so that the peer sends no more than what is still missing.
    Progress {
        /// The block.
        key: BlockKey,
        /// Rank held (chunks that decode the block: N, or K shards).
        rank: u16,
        /// Chunks of the block received from the addressee so far.
        received: u16,
        /// Peers that have sent the sender chunks of the block (the addressee among them): the
        /// chunks still missing are shared among them.
        senders: u16,
    },
}

/// A malformed frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// Shorter than its header.
    #[error("truncated frame of {0} bytes")]
    Truncated(usize),
    /// Above [`MAX_FRAME_BYTES`].
    #[error("oversized frame of {0} bytes")]
    Oversized(usize),
    /// An unknown kind byte.
    #[error("unknown frame kind {0}")]
    Kind(u8),
    /// A decoded notice with a body.
    #[error("decoded notice with {0} trailing bytes")]
    Trailing(usize),
    /// A progress notice whose body is not 6 bytes.
    #[error("progress notice with a body of {0} bytes")]
    Progress(usize),
}

impl Frame {
    /// The frame without its length prefix.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Self::Chunk { key, body } => {
                let mut out = Vec::with_capacity(HEADER + body.len());
                out.push(KIND_CHUNK);
                out.extend_from_slice(key);
                out.extend_from_slice(body);
                out
            }
            Self::Decoded { key } => {
                let mut out = Vec::with_capacity(HEADER);
                out.push(KIND_DECODED);
                out.extend_from_slice(key);
                out
            }
            Self::Progress { key, rank, received, senders } => {
                let mut out = Vec::with_capacity(HEADER + PROGRESS_BODY);
                out.push(KIND_PROGRESS);
                out.extend_from_slice(key);
                out.extend_from_slice(&rank.to_le_bytes());
                out.extend_from_slice(&received.to_le_bytes());
                out.extend_from_slice(&senders.to_le_bytes());
                out
            }
        }
    }

    /// The block the frame is about.
    pub fn key(&self) -> &BlockKey {
        match self {
            Self::Chunk { key, .. } | Self::Decoded { key } | Self::Progress { key, .. } => key,
        }
    }
}

/// Parses a frame (without its length prefix).
///
/// # Errors
/// [`FrameError`] naming what is malformed; never panics, whatever the bytes.
pub fn decode_frame(bytes: &[u8]) -> Result<Frame, FrameError> {
    if bytes.len() > MAX_FRAME_BYTES {
        return Err(FrameError::Oversized(bytes.len()));
    }
    if bytes.len() < HEADER {
        return Err(FrameError::Truncated(bytes.len()));
    }
    let key: BlockKey = bytes[1..HEADER].try_into().expect("32 bytes");
    match bytes[0] {
        KIND_CHUNK => Ok(Frame::Chunk { key, body: bytes[HEADER..].to_vec() }),
        KIND_DECODED if bytes.len() == HEADER => Ok(Frame::Decoded { key }),
        KIND_DECODED => Err(FrameError::Trailing(bytes.len() - HEADER)),
        KIND_PROGRESS if bytes.len() == HEADER + PROGRESS_BODY => Ok(Frame::Progress {
            key,
            rank: u16::from_le_bytes([bytes[HEADER], bytes[HEADER + 1]]),
            received: u16::from_le_bytes([bytes[HEADER + 2], bytes[HEADER + 3]]),
            senders: u16::from_le_bytes([bytes[HEADER + 4], bytes[HEADER + 5]]),
        }),
        KIND_PROGRESS => Err(FrameError::Progress(bytes.len() - HEADER)),
        kind => Err(FrameError::Kind(kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let chunk = Frame::Chunk { key: [3; 32], body: vec![1, 2, 3] };
        assert_eq!(decode_frame(&chunk.encode()).unwrap(), chunk);
        let done = Frame::Decoded { key: [4; 32] };
        assert_eq!(decode_frame(&done.encode()).unwrap(), done);
        let progress = Frame::Progress { key: [5; 32], rank: 300, received: 7, senders: 3 };
        assert_eq!(decode_frame(&progress.encode()).unwrap(), progress);
        let mut short = progress.encode();
        short.pop();
        assert_eq!(decode_frame(&short), Err(FrameError::Progress(5)));
        assert_eq!(decode_frame(&[0; 5]), Err(FrameError::Truncated(5)));
        let mut bad = done.encode();
        bad[0] = 9;
        assert_eq!(decode_frame(&bad), Err(FrameError::Kind(9)));
        let mut long = done.encode();
        long.push(0);
        assert_eq!(decode_frame(&long), Err(FrameError::Trailing(1)));
    }
}
