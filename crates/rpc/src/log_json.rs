//! `eth_getLogs`' answer written straight to JSON: each matching log appended to one buffer
//! in the shape (and field order) of alloy's `Log` serialized by serde — `address`, `topics`,
//! `data`, `blockHash`, `blockNumber`, `blockTimestamp`, `transactionHash`,
//! `transactionIndex`, `logIndex`, `removed` — without copying the log into an RPC type first
//! and without serde's per-character escape scan of the hex strings (a 64-block answer holds
//! about 14,000 logs, 9 MB of JSON; serde's path spent most of its time there).

use alloy_primitives::{hex, Log, B256};
use serde_json::value::RawValue;
use std::io::Write as _;

/// Where a log sits in the chain: its block, transaction and index in the block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogPosition {
    pub(crate) block_hash: B256,
    pub(crate) block_number: u64,
    pub(crate) block_timestamp: u64,
    pub(crate) transaction_hash: B256,
    pub(crate) transaction_index: u64,
    pub(crate) log_index: u64,
}

/// A JSON array of logs being written.
#[derive(Debug)]
pub(crate) struct LogsJson {
    out: Vec<u8>,
    count: usize,
}

impl LogsJson {
    /// An empty array.
    pub(crate) fn new() -> Self {
        let mut out = Vec::with_capacity(64 * 1024);
        out.push(b'[');
        Self { out, count: 0 }
    }

    /// Logs written so far.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Appends `log` at `at`.
    pub(crate) fn push(&mut self, log: &Log, at: &LogPosition) {
        let out = &mut self.out;
        if self.count > 0 {
            out.push(b',');
        }
        self.count += 1;
        out.extend_from_slice(b"{\"address\":");
        push_hex(out, log.address.as_slice());
        out.extend_from_slice(b",\"topics\":[");
        for (i, topic) in log.topics().iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_hex(out, topic.as_slice());
        }
        out.extend_from_slice(b"],\"data\":");
        push_hex(out, &log.data.data);
        out.extend_from_slice(b",\"blockHash\":");
        push_hex(out, at.block_hash.as_slice());
        out.extend_from_slice(b",\"blockNumber\":");
        push_quantity(out, at.block_number);
        out.extend_from_slice(b",\"blockTimestamp\":");
        push_quantity(out, at.block_timestamp);
        out.extend_from_slice(b",\"transactionHash\":");
        push_hex(out, at.transaction_hash.as_slice());
        out.extend_from_slice(b",\"transactionIndex\":");
        push_quantity(out, at.transaction_index);
        out.extend_from_slice(b",\"logIndex\":");
        push_quantity(out, at.log_index);
        out.extend_from_slice(b",\"removed\":false}");
    }

    /// The array, closed.
    ///
    /// # Errors
    /// None in practice: the buffer holds ASCII JSON only; serde_json's check of it is
    /// passed on.
    pub(crate) fn finish(mut self) -> Result<Box<RawValue>, serde_json::Error> {
        self.out.push(b']');
        let json = String::from_utf8(self.out)
            .map_err(|e| serde::de::Error::custom(format!("logs JSON not UTF-8: {e}")))?;
        RawValue::from_string(json)
    }
}

/// `"0x…"`: `bytes` in lowercase hex, quoted.
fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(b"\"0x");
    let start = out.len();
    out.resize(start + 2 * bytes.len(), 0);
    // The slice is exactly twice the input's length: the encoding cannot fail.
    let _ = hex::encode_to_slice(bytes, &mut out[start..]);
    out.push(b'"');
}

/// `"0x…"`: `value` as an execution-API quantity (lowercase hex, no leading zeros, `0x0`).
fn push_quantity(out: &mut Vec<u8>, value: u64) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "\"{value:#x}\"");
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{Address, Bytes, LogData};
    use alloy_rpc_types_eth::Log as RpcLog;

    #[test]
    fn logs_are_written_as_serde_writes_alloys_log() {
        let logs = [
            Log {
                address: Address::repeat_byte(0xab),
                data: LogData::new_unchecked(vec![], Bytes::new()),
            },
            Log {
                address: Address::repeat_byte(0x01),
                data: LogData::new_unchecked(
                    (0..4u8).map(B256::repeat_byte).collect(),
                    Bytes::from(vec![0x00, 0xff, 0x10, 0x0a, 0x22, 0x5c]),
                ),
            },
            Log {
                address: Address::ZERO,
                data: LogData::new_unchecked(vec![B256::ZERO], Bytes::from(vec![7u8; 96])),
            },
        ];
        let mut json = LogsJson::new();
        let mut rpc = Vec::new();
        for (i, log) in logs.iter().enumerate() {
            let at = LogPosition {
                block_hash: B256::repeat_byte(0x42),
                block_number: [0, 1, 0x1234_5678_9abc][i],
                block_timestamp: [0, 16, u64::MAX][i],
                transaction_hash: B256::repeat_byte(i as u8),
                transaction_index: [0, 255, 256][i],
                log_index: [0, 1, 4096][i],
            };
            json.push(log, &at);
            rpc.push(RpcLog {
                inner: log.clone(),
                block_hash: Some(at.block_hash),
                block_number: Some(at.block_number),
                block_timestamp: Some(at.block_timestamp),
                transaction_hash: Some(at.transaction_hash),
                transaction_index: Some(at.transaction_index),
                log_index: Some(at.log_index),
                removed: false,
            });
        }
        assert_eq!(json.len(), 3);
        assert_eq!(json.finish().unwrap().get(), serde_json::to_string(&rpc).unwrap());
        assert_eq!(LogsJson::new().finish().unwrap().get(), "[]");
    }
}
