//! The RLPx frame codec (a `tokio_util` codec over an established session): each item is one
//! frame's data, sealed by [`FrameCipher`]; a header is read and checked first, then the body
//! of the size it states.

use crate::{algorithm::FrameCipher, EciesError};
use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// Largest frame either side may send: a 24-bit size (16 MiB − 1 bytes).
pub const MAX_FRAME: usize = (1 << 24) - 1;

/// Frames of one session, in both directions.
#[derive(Debug)]
pub struct FrameCodec {
    cipher: FrameCipher,
    /// The size of the body being awaited, once its header was read.
    body: Option<usize>,
    max_frame: usize,
}

impl FrameCodec {
    pub(crate) fn new(cipher: FrameCipher, max_frame: usize) -> Self {
        Self { cipher, body: None, max_frame: max_frame.min(MAX_FRAME) }
    }

    /// The codec of a session whose handshake gave `secrets` (frames up to [`MAX_FRAME`]):
    /// what [`crate::EciesStream`] runs, for callers that drive the bytes themselves.
    pub fn from_secrets(secrets: crate::Secrets) -> Self {
        Self::new(FrameCipher::new(secrets), MAX_FRAME)
    }
}

impl Decoder for FrameCodec {
    type Item = BytesMut;
    type Error = EciesError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<BytesMut>, EciesError> {
        let size = match self.body {
            Some(size) => size,
            None => {
                if src.len() < 32 {
                    src.reserve(32 - src.len());
                    return Ok(None);
                }
                let mut header: [u8; 32] = src[..32].try_into().expect("32 bytes");
                let size = self.cipher.open_header(&mut header)?;
                if size > self.max_frame {
                    return Err(EciesError::FrameTooLarge { size, limit: self.max_frame });
                }
                src.advance(32);
                self.body = Some(size);
                size
            }
        };
        let len = FrameCipher::body_len(size);
        if src.len() < len {
            src.reserve(len - src.len());
            return Ok(None);
        }
        let mut body = src.split_to(len);
        let data = self.cipher.open_body(&mut body, size)?;
        let frame = BytesMut::from(data);
        self.body = None;
        Ok(Some(frame))
    }
}

impl Encoder<Bytes> for FrameCodec {
    type Error = EciesError;

    fn encode(&mut self, data: Bytes, dst: &mut BytesMut) -> Result<(), EciesError> {
        if data.len() > self.max_frame {
            return Err(EciesError::FrameTooLarge { size: data.len(), limit: self.max_frame });
        }
        let mut out = Vec::with_capacity(32 + FrameCipher::body_len(data.len()));
        self.cipher.seal(&data, &mut out);
        dst.extend_from_slice(&out);
        Ok(())
    }
}
