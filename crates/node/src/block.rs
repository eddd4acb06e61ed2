//! A block as the network carries it ([`NetworkBlock`]: the block and its BAL) and its import
//! through the engine as a `newPayload` (with `--dev.follow`, then a forkchoice update to it),
//! shared by the gossip importer and sync.

use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::B256;
use alloy_rlp::{Decodable, Encodable};
use gigagas_bal::BlockAccessList;
use gigagas_engine::{
    message::{ForkchoiceState, NewPayload},
    EngineHandle, PayloadStatus,
};
use std::time::Instant;

/// Why a gossiped payload is not a block.
#[derive(Debug, thiserror::Error)]
pub enum NetworkBlockError {
    /// The RLP does not decode.
    #[error("network block does not decode: {0}")]
    Rlp(#[from] alloy_rlp::Error),
    /// Bytes after the block and its BAL.
    #[error("{0} trailing bytes after the network block")]
    Trailing(usize),
}

/// A block as the network carries it: `RLP([block, bal])`, the BAL an empty list when there is
/// none (a block cannot have an empty BAL: its coinbase and system contracts are in it).
#[derive(Debug, Clone, PartialEq)]
pub struct NetworkBlock {
    /// The block.
    pub block: Block<TxEnvelope>,
    /// Its EIP-7928 BAL.
    pub bal: Option<BlockAccessList>,
}

impl NetworkBlock {
    /// The bytes to publish.
    pub fn encode(&self) -> Vec<u8> {
        let empty: BlockAccessList = Vec::new();
        let bal = self.bal.as_ref().unwrap_or(&empty);
        let header =
            alloy_rlp::Header { list: true, payload_length: self.block.length() + bal.length() };
        let mut out = Vec::with_capacity(header.length_with_payload());
        header.encode(&mut out);
        self.block.encode(&mut out);
        bal.encode(&mut out);
        out
    }

    /// The block as the engine's `newPayload`, received now.
    pub(crate) fn into_new_payload(self) -> NewPayload {
        NewPayload {
            rlp_len: self.block.length(),
            transactions_root: None,
            bal_bytes: self.bal.as_ref().map_or(0, Encodable::length),
            block: self.block,
            bal: self.bal,
            received: Instant::now(),
        }
    }

    /// Parses published bytes.
    ///
    /// # Errors
    /// [`NetworkBlockError`]; never panics.
    pub fn decode(mut bytes: &[u8]) -> Result<Self, NetworkBlockError> {
        let header = alloy_rlp::Header::decode(&mut bytes)?;
        if !header.list {
            return Err(alloy_rlp::Error::UnexpectedString.into());
        }
        if bytes.len() != header.payload_length {
            return Err(NetworkBlockError::Trailing(bytes.len().abs_diff(header.payload_length)));
        }
        let block = Block::<TxEnvelope>::decode(&mut bytes)?;
        let bal = BlockAccessList::decode(&mut bytes)?;
        if !bytes.is_empty() {
            return Err(NetworkBlockError::Trailing(bytes.len()));
        }
        Ok(Self { block, bal: (!bal.is_empty()).then_some(bal) })
    }
}

/// Validates `block` as a `newPayload`; with `follow`, a valid block becomes the head.
pub(crate) async fn import(
    engine: &EngineHandle,
    block: NetworkBlock,
    follow: bool,
) -> Result<PayloadStatus, gigagas_engine::EngineError> {
    let hash = block.block.header.hash_slow();
    let status = engine.new_payload(block.into_new_payload()).await?;
    if follow && status == PayloadStatus::Valid(hash) {
        let state = ForkchoiceState { head: hash, safe: B256::ZERO, finalized: B256::ZERO };
        return Ok(engine.forkchoice_updated(state, None).await?.status);
    }
    Ok(status)
}
