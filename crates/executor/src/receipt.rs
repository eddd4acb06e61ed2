//! Receipts and their logs blooms.
//!
//! A receipt's bloom (Yellow Paper §4.3.1, M3:2048) sets 3 bits per log address and per topic,
//! taken from keccak256 of each. Mass-emitting transactions repeat the same contract address and
//! event signature thousands of times (block 15,537,394 hashes 50,188 addresses and topics of
//! which 10,048 are distinct), so the hashes are memoized, and the last address and event
//! signature are compared before any lookup.

use alloy_consensus::{
    Eip658Value, Receipt, ReceiptEnvelope, ReceiptWithBloom, TxEnvelope, TxType,
};
use alloy_evm::{
    eth::receipt_builder::{ReceiptBuilder, ReceiptBuilderCtx},
    Evm,
};
use alloy_primitives::{
    keccak256,
    map::{AddressMap, B256Map},
    Address, Bloom, BloomInput, Log, B256,
};
use std::cell::RefCell;

/// Computes logs blooms (Yellow Paper §4.3.1), remembering the keccak256 of every address and
/// topic seen. Both executors use one per block (a memo over a whole megablock outgrows the
/// caches); its cost is a floor under any executor that validates `logsBloom`/`receiptsRoot`:
/// one keccak256 per distinct address or topic of the block, one hash-map lookup per log
/// address and topic.
#[derive(Debug, Default)]
pub struct BloomMemo {
    addresses: AddressMap<B256>,
    topics: B256Map<B256>,
    /// The last log's address and event signature (topic 0) with their hashes: logs of one
    /// transaction mostly repeat both, which then skips the map lookups.
    last_address: Option<(Address, B256)>,
    last_signature: Option<(B256, B256)>,
}

impl BloomMemo {
    /// The bloom of `logs` (2048 bits), equal to `alloy_primitives::logs_bloom(logs)`.
    pub fn logs_bloom(&mut self, logs: &[Log]) -> Bloom {
        let mut bloom = Bloom::ZERO;
        for log in logs {
            let h = match self.last_address {
                Some((a, h)) if a == log.address => h,
                _ => {
                    let h = *self
                        .addresses
                        .entry(log.address)
                        .or_insert_with(|| keccak256(log.address));
                    self.last_address = Some((log.address, h));
                    h
                }
            };
            bloom.accrue(BloomInput::Hash(h));
            let topics = log.topics();
            if let Some((signature, rest)) = topics.split_first() {
                let h = match self.last_signature {
                    Some((t, h)) if t == *signature => h,
                    _ => {
                        let h = self.topic_hash(signature);
                        self.last_signature = Some((*signature, h));
                        h
                    }
                };
                bloom.accrue(BloomInput::Hash(h));
                for topic in rest {
                    bloom.accrue(BloomInput::Hash(self.topic_hash(topic)));
                }
            }
        }
        bloom
    }

    fn topic_hash(&mut self, topic: &B256) -> B256 {
        *self.topics.entry(*topic).or_insert_with(|| keccak256(topic))
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
pub struct MemoReceiptBuilder {
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
        // Another address and signature, the old signature as a later topic, a log without
        // topics, then the first address and signature again (the last-seen shortcuts).
        let b = Address::repeat_byte(3);
        let u = B256::repeat_byte(4);
        let more = [
            Log { address: b, data: LogData::new_unchecked(vec![u, t], Bytes::new()) },
            Log { address: b, data: LogData::new_unchecked(vec![], Bytes::new()) },
            Log { address: a, data: LogData::new_unchecked(vec![t, u], Bytes::new()) },
        ];
        for k in 0..more.len() {
            let logs = &more[k..];
            assert_eq!(memo.logs_bloom(logs), alloy_primitives::logs_bloom(logs), "from log {k}");
        }
        assert_eq!(BloomMemo::default().logs_bloom(&[]), Bloom::ZERO);
    }
}
