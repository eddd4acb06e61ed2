//! `eth_feeHistory`: base fees (with the next block's), gas and blob gas used ratios, and the
//! effective priority fees at percentiles of each block's gas (execution-apis; geth's
//! weighting: transactions sorted by tip, each counting its gas used). At most 1,024 blocks.

use crate::{blocks::resolve, convert::StoredBlock, RpcContext, RpcError};
use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_rpc_types_eth::FeeHistory;

/// The fee history of the `count` blocks up to `newest` (at most 1,024, never before genesis;
/// none for a count of 0),
/// with the rewards at `percentiles` (ascending, within [0, 100], else
/// [`RpcError::InvalidParams`]) when given.
pub(crate) fn fee_history(
    ctx: &RpcContext,
    count: u64,
    newest: BlockNumberOrTag,
    percentiles: Option<&[f64]>,
) -> Result<FeeHistory, RpcError> {
    if percentiles.is_some_and(|p| {
        p.windows(2).any(|w| w[0] > w[1]) || p.iter().any(|x| !(0.0..=100.0).contains(x))
    }) {
        return Err(RpcError::InvalidParams(
            "reward percentiles must be ascending and within [0, 100]".into(),
        ));
    }
    let newest = resolve(ctx, BlockId::Number(newest))?
        .ok_or_else(|| RpcError::NotFound(format!("block {newest}")))?;
    // geth answers a count of zero with an empty history from block 0.
    if count == 0 {
        return Ok(FeeHistory::default());
    }
    let count = count.min(1024).min(newest + 1);
    let oldest = newest + 1 - count;
    let mut history = FeeHistory { oldest_block: oldest, ..Default::default() };
    let mut rewards = Vec::new();
    let mut last = None;
    for n in oldest..=newest {
        let b =
            StoredBlock::load(ctx, n)?.ok_or_else(|| RpcError::NotFound(format!("block {n}")))?;
        let header = &b.header;
        history.base_fee_per_gas.push(header.base_fee_per_gas.unwrap_or_default().into());
        history.gas_used_ratio.push(header.gas_used as f64 / header.gas_limit.max(1) as f64);
        let blob = ctx.chain.blob_params(header.timestamp);
        history
            .base_fee_per_blob_gas
            .push(blob.and_then(|p| header.blob_fee(p)).unwrap_or_default());
        let max_blob_gas = blob.map_or(0, |p| p.max_blob_gas_per_block());
        history.blob_gas_used_ratio.push(if max_blob_gas == 0 {
            0.0
        } else {
            header.blob_gas_used.unwrap_or_default() as f64 / max_blob_gas as f64
        });
        if let Some(percentiles) = percentiles {
            rewards.push(block_rewards(ctx, &b, percentiles)?);
        }
        last = Some(b);
    }
    let last = last.expect("count >= 1");
    let params = alloy_eips::eip1559::BaseFeeParams::ethereum();
    history
        .base_fee_per_gas
        .push(last.header.next_block_base_fee(params).unwrap_or_default().into());
    let next_blob = ctx
        .chain
        .blob_params(last.header.timestamp)
        .and_then(|p| last.header.next_block_blob_fee(p))
        .unwrap_or_default();
    history.base_fee_per_blob_gas.push(next_blob);
    history.reward = percentiles.map(|_| rewards);
    Ok(history)
}

/// The effective priority fee at each percentile of block `b`'s gas.
fn block_rewards(
    ctx: &RpcContext,
    b: &StoredBlock,
    percentiles: &[f64],
) -> Result<Vec<u128>, RpcError> {
    use alloy_consensus::Transaction as _;
    if b.body.transactions.is_empty() {
        return Ok(vec![0; percentiles.len()]);
    }
    let base_fee = b.header.base_fee_per_gas;
    let receipts = b.receipts(ctx)?;
    let mut previous = 0;
    let mut tips: Vec<(u128, u64)> = b
        .body
        .transactions
        .iter()
        .zip(receipts.iter())
        .map(|(tx, r)| {
            let used = alloy_consensus::TxReceipt::cumulative_gas_used(r) - previous;
            previous += used;
            (tx.effective_tip_per_gas(base_fee.unwrap_or_default()).unwrap_or_default(), used)
        })
        .collect();
    tips.sort_unstable_by_key(|(tip, _)| *tip);
    let total: u64 = tips.iter().map(|(_, g)| g).sum();
    Ok(percentiles
        .iter()
        .map(|p| {
            let threshold = (total as f64 * p / 100.0) as u64;
            let mut cumulative = 0;
            for (tip, used) in &tips {
                cumulative += used;
                if cumulative >= threshold {
                    return *tip;
                }
            }
            tips.last().map_or(0, |(tip, _)| *tip)
        })
        .collect())
}
