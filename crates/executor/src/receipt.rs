//! Receipts and their logs blooms.
//!
//! A receipt's bloom (Yellow Paper §4.3.1, M3:2048) sets 3 bits per log address and per topic,
//! taken from keccak256 of each. Mass-emitting transactions repeat the same contract address and
//! event signature thousands of times (block 15,537,394 hashes 50,188 addresses and topics of
//! which 10,048 are distinct), so the hashes are memoized.

use alloy_consensus::{
    Eip658Value, Receipt, ReceiptEnvelope, ReceiptWithBloom, TxEnvelope, TxType,
};
use alloy_evm::{
    eth::receipt_builder::{ReceiptBuilder, ReceiptBuilderCtx},
    Evm,
};
use alloy_primitives::{keccak256, map::HashMap, Address, Bloom, BloomInput, Log, B256};
use std::cell::RefCell;

/// Computes logs blooms, remembering the keccak256 of every address and topic seen.
#[derive(Debug, Default)]
pub(crate) struct BloomMemo {
    addresses: HashMap<Address, B256>,
    topics: HashMap<B256, B256>,
}

impl BloomMemo {
    /// The bloom of `logs`, equal to `alloy_primitives::logs_bloom(logs)`.
    pub(crate) fn logs_bloom(&mut self, logs: &[Log]) -> Bloom {
        let mut bloom = Bloom::ZERO;
        for log in logs {
            let h = *self.addresses.entry(log.address).or_insert_with(|| keccak256(log.address));
            bloom.accrue(BloomInput::Hash(h));
            for topic in log.topics() {
                let h = *self.topics.entry(*topic).or_insert_with(|| keccak256(topic));
                bloom.accrue(BloomInput::Hash(h));
            }
        }
        bloom
    }
}

/// The EIP-2718 receipt of a transaction of type `tx_type` (EIP-658 status form).
pub(crate) fn receipt_envelope(
    tx_type: TxType,
    success: bool,
    cumulative_gas_used: u64,
    logs: Vec<Log>,
    logs_bloom: Bloom,
) -> ReceiptEnvelope {
    let receipt = ReceiptWithBloom {
        receipt: Receipt { status: Eip658Value::Eip658(success), cumulative_gas_used, logs },
        logs_bloom,
    };
    match tx_type {
        TxType::Legacy => ReceiptEnvelope::Legacy(receipt),
        TxType::Eip2930 => ReceiptEnvelope::Eip2930(receipt),
        TxType::Eip1559 => ReceiptEnvelope::Eip1559(receipt),
        TxType::Eip4844 => ReceiptEnvelope::Eip4844(receipt),
        TxType::Eip7702 => ReceiptEnvelope::Eip7702(receipt),
    }
}

/// alloy-evm receipt builder that builds the same receipts as its `AlloyReceiptBuilder`, with
/// memoized bloom hashing. One per block executor (not shared between threads).
#[derive(Debug, Default)]
pub(crate) struct MemoReceiptBuilder {
    memo: RefCell<BloomMemo>,
}

impl ReceiptBuilder for MemoReceiptBuilder {
    type Transaction = TxEnvelope;
    type Receipt = ReceiptEnvelope;

    fn build_receipt<E: Evm>(&self, ctx: ReceiptBuilderCtx<'_, TxType, E>) -> ReceiptEnvelope {
        let success = ctx.result.is_success();
        let logs = ctx.result.into_logs();
        let bloom = self.memo.borrow_mut().logs_bloom(&logs);
        receipt_envelope(ctx.tx_type, success, ctx.cumulative_gas_used, logs, bloom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{Bytes, LogData};

    #[test]
    fn memoized_bloom_equals_alloy_bloom() {
        let a = Address::repeat_byte(1);
        let t = B256::repeat_byte(2);
        // A topic that is the left-padded address must not reuse the address's hash.
        let logs = vec![
            Log { address: a, data: LogData::new_unchecked(vec![t, a.into_word()], Bytes::new()) },
            Log { address: a, data: LogData::new_unchecked(vec![t], Bytes::new()) },
        ];
        let mut memo = BloomMemo::default();
        assert_eq!(memo.logs_bloom(&logs), alloy_primitives::logs_bloom(&logs));
        assert_eq!(memo.logs_bloom(&logs[1..]), alloy_primitives::logs_bloom(&logs[1..]));
    }
}
