//! Block sync over libp2p request-response on `/gigagas/sync/1`: the messages of
//! `gigagas-eth-wire-types` (eth/69's `Status`, `GetBlockHeaders` / `GetBlockBodies`, EIP-8159's
//! `GetBlockAccessLists`), framed as `length u32 LE ‖ message id u8 ‖ RLP payload`. A node
//! serves from its store through the [`crate::request_handler`].

use futures::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
pub use gigagas_eth_wire_types::{
    ChainStatus, SyncRequest, SyncResponse, ETH_VERSION, MAX_BODIES, MAX_HEADERS,
    SOFT_RESPONSE_LIMIT,
};
use libp2p::StreamProtocol;
use std::io;

/// The protocol.
pub const SYNC_PROTOCOL: StreamProtocol = StreamProtocol::new("/gigagas/sync/1");
/// Largest message (bytes).
pub const MAX_MESSAGE_BYTES: usize = 32 << 20;

/// The request-response codec: length-prefixed `id ‖ RLP` messages.
#[derive(Debug, Clone, Default)]
pub struct SyncCodec;

async fn read_message<T: AsyncRead + Unpin + Send>(io: &mut T) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    io.read_exact(&mut len).await?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_MESSAGE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("sync message of {len} bytes"),
        ));
    }
    let mut bytes = vec![0u8; len];
    io.read_exact(&mut bytes).await?;
    Ok(bytes)
}

async fn write_message<T: AsyncWrite + Unpin + Send>(io: &mut T, bytes: &[u8]) -> io::Result<()> {
    io.write_all(&(bytes.len() as u32).to_le_bytes()).await?;
    io.write_all(bytes).await?;
    io.close().await
}

fn invalid(e: alloy_rlp::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

impl libp2p::request_response::Codec for SyncCodec {
    type Protocol = StreamProtocol;
    type Request = SyncRequest;
    type Response = SyncResponse;

    async fn read_request<T: AsyncRead + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
    ) -> io::Result<SyncRequest> {
        SyncRequest::decode(&read_message(io).await?).map_err(invalid)
    }

    async fn read_response<T: AsyncRead + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
    ) -> io::Result<SyncResponse> {
        SyncResponse::decode(&read_message(io).await?).map_err(invalid)
    }

    async fn write_request<T: AsyncWrite + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        request: SyncRequest,
    ) -> io::Result<()> {
        write_message(io, &request.encode()).await
    }

    async fn write_response<T: AsyncWrite + Unpin + Send>(
        &mut self,
        _: &StreamProtocol,
        io: &mut T,
        response: SyncResponse,
    ) -> io::Result<()> {
        write_message(io, &response.encode()).await
    }
}
