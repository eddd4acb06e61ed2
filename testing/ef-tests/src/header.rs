//! The header and body checks a post-merge execution client makes before executing a block
//! (what reth's `EthBeaconConsensus` checks against the parent and the body).

use alloy_consensus::{
    constants::EMPTY_OMMER_ROOT_HASH,
    proofs::{calculate_transaction_root, calculate_withdrawals_root},
    BlockBody, Header, Transaction as _, TxEnvelope,
};
use alloy_eips::{eip1559::BaseFeeParams, eip4844::DATA_GAS_PER_BLOB};
use gigagas_primitives::ChainSpec;

/// Gas limit bound divisor (Yellow Paper eq. 47): the limit moves by less than 1/1024 per block.
const GAS_LIMIT_BOUND_DIVISOR: u64 = 1024;
/// The smallest gas limit a block may have.
const MIN_GAS_LIMIT: u64 = 5000;
/// The largest gas limit geth and reth accept (2^63 - 1).
const MAX_GAS_LIMIT: u64 = 0x7fff_ffff_ffff_ffff;
/// The most extra data a header may carry (bytes).
const MAX_EXTRA_DATA: usize = 32;

/// Checks `header` and `body` against `parent` as a post-merge (Paris and later) client does.
///
/// # Errors
/// A sentence naming the failed rule with the header's and the expected values.
pub fn check_header(
    chain: &ChainSpec,
    parent: &Header,
    header: &Header,
    body: &BlockBody<TxEnvelope>,
) -> Result<(), String> {
    if header.number != parent.number + 1 {
        return Err(format!("number {} is not parent's {} + 1", header.number, parent.number));
    }
    if header.timestamp <= parent.timestamp {
        return Err(format!(
            "timestamp {} not after parent's {}",
            header.timestamp, parent.timestamp
        ));
    }
    if header.gas_limit > MAX_GAS_LIMIT {
        return Err(format!("gas limit {} above 2^63-1", header.gas_limit));
    }
    let bound = parent.gas_limit / GAS_LIMIT_BOUND_DIVISOR;
    if header.gas_limit.abs_diff(parent.gas_limit) >= bound || header.gas_limit < MIN_GAS_LIMIT {
        return Err(format!(
            "gas limit {} outside parent's {} ± {}",
            header.gas_limit, parent.gas_limit, bound
        ));
    }
    if header.gas_used > header.gas_limit {
        return Err(format!("gas used {} above gas limit {}", header.gas_used, header.gas_limit));
    }
    if header.extra_data.len() > MAX_EXTRA_DATA {
        return Err(format!("extra data of {} bytes (max 32)", header.extra_data.len()));
    }
    // The Merge (EIP-3675): no proof of work, no ommers.
    if !header.difficulty.is_zero() {
        return Err(format!("difficulty {} after the merge", header.difficulty));
    }
    if !header.nonce.is_zero() {
        return Err(format!("nonce {} after the merge", header.nonce));
    }
    if header.ommers_hash != EMPTY_OMMER_ROOT_HASH || !body.ommers.is_empty() {
        return Err("ommers after the merge".into());
    }
    // EIP-1559.
    let expected_base_fee = parent.next_block_base_fee(BaseFeeParams::ethereum());
    if header.base_fee_per_gas != expected_base_fee {
        return Err(format!(
            "base fee {:?}, parent implies {:?}",
            header.base_fee_per_gas, expected_base_fee
        ));
    }
    let tx_root = calculate_transaction_root(&body.transactions);
    if header.transactions_root != tx_root {
        return Err(format!(
            "transactions root {}, body gives {tx_root}",
            header.transactions_root
        ));
    }
    // EIP-4895 (Shanghai).
    let withdrawals_root = body.withdrawals.as_ref().map(|w| calculate_withdrawals_root(w));
    if header.withdrawals_root != withdrawals_root {
        return Err(format!(
            "withdrawals root {:?}, body gives {withdrawals_root:?}",
            header.withdrawals_root
        ));
    }
    // EIP-4844 / EIP-7840 (Cancun and later).
    if let Some(params) = chain.blob_params(header.timestamp) {
        if header.parent_beacon_block_root.is_none() {
            return Err("no parent beacon block root (EIP-4788)".into());
        }
        let blob_gas: u64 = body
            .transactions
            .iter()
            .map(|tx| tx.blob_versioned_hashes().map_or(0, |h| h.len() as u64) * DATA_GAS_PER_BLOB)
            .sum();
        if header.blob_gas_used != Some(blob_gas) {
            return Err(format!(
                "blob gas used {:?}, transactions use {blob_gas}",
                header.blob_gas_used
            ));
        }
        if blob_gas > params.max_blob_gas_per_block() {
            return Err(format!(
                "blob gas used {blob_gas} above the block maximum {}",
                params.max_blob_gas_per_block()
            ));
        }
        let expected_excess = parent.next_block_excess_blob_gas(params);
        if header.excess_blob_gas != expected_excess.or(Some(0)) {
            return Err(format!(
                "excess blob gas {:?}, parent implies {expected_excess:?}",
                header.excess_blob_gas
            ));
        }
    }
    Ok(())
}
