//! Which stored block a request names: a block parameter (number, tag or hash) resolved
//! against the last forkchoice update, the block loaded from the store, and a transaction's
//! block found by its hash. What every namespace reads blocks through.

use crate::{convert::StoredBlock, RpcContext, RpcError};
use alloy_consensus::Header;
use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::B256;
use gigagas_storage_api::{BlockNumReader, HeaderProvider, TransactionsProvider};
use std::sync::Arc;

/// The block number `id` names, `None` when no such block is stored.
pub(crate) fn resolve(ctx: &RpcContext, id: BlockId) -> Result<Option<u64>, RpcError> {
    let forkchoice = ctx.forkchoice();
    match id {
        BlockId::Hash(h) => Ok(ctx.provider.block_number(&h.block_hash)?),
        BlockId::Number(tag) => Ok(match tag {
            BlockNumberOrTag::Latest | BlockNumberOrTag::Pending => Some(forkchoice.head.0),
            BlockNumberOrTag::Earliest => Some(0),
            BlockNumberOrTag::Safe => forkchoice.safe.map(|(n, _)| n),
            BlockNumberOrTag::Finalized => forkchoice.finalized.map(|(n, _)| n),
            BlockNumberOrTag::Number(n) => (n <= forkchoice.head.0).then_some(n),
        }),
    }
}

/// A canonical block's header with its number: what a state read or a call needs (without
/// the body a [`StoredBlock`] loads).
#[derive(Debug, Clone)]
pub(crate) struct BlockHeader {
    pub(crate) number: u64,
    pub(crate) header: Header,
    /// The blob base fee a call's block override sets (wei); `None`: the header's.
    pub(crate) blob_base_fee: Option<u128>,
}

/// The header of the block `id` names (latest when absent); [`RpcError::NotFound`] when it is
/// unknown.
pub(crate) fn header_or_latest(
    ctx: &RpcContext,
    id: Option<BlockId>,
) -> Result<BlockHeader, RpcError> {
    let id = id.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
    let header = match resolve(ctx, id)? {
        Some(number) => ctx.provider.header_by_number(number)?,
        None => None,
    };
    let header = header.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
    Ok(BlockHeader { number: header.number, header, blob_base_fee: None })
}

/// The block `id` names, `None` when no such block is stored.
pub(crate) fn block_of(
    ctx: &RpcContext,
    id: BlockId,
) -> Result<Option<Arc<StoredBlock>>, RpcError> {
    match resolve(ctx, id)? {
        Some(n) => StoredBlock::load(ctx, n),
        None => Ok(None),
    }
}

/// The stored block of hash `hash`, `None` when there is none.
pub(crate) fn block_by_hash(
    ctx: &RpcContext,
    hash: &B256,
) -> Result<Option<Arc<StoredBlock>>, RpcError> {
    Ok(block_of(ctx, BlockId::from(*hash))?.filter(|b| b.hash == *hash))
}

/// A block parameter as the -32000 "not found" error names it.
pub(crate) fn block_name(id: BlockId) -> String {
    match id {
        BlockId::Hash(h) => format!("block {}", h.block_hash),
        BlockId::Number(n) => format!("block {n}"),
    }
}

/// The stored block holding transaction `hash`, and the transaction's index in it.
pub(crate) fn located_transaction(
    ctx: &RpcContext,
    hash: &B256,
) -> Result<Option<(Arc<StoredBlock>, usize)>, RpcError> {
    let Some((number, index)) = ctx.provider.transaction_location(hash)? else { return Ok(None) };
    Ok(StoredBlock::load(ctx, number)?.map(|b| (b, index as usize)))
}
