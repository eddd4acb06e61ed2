//! Counters of block propagation, kept in atomics (read by tests and the devnet's report) and
//! exported as `net_*` metrics through the `metrics` facade (the node's Prometheus exporter).

use super::Protocol;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Propagation counters of one node.
#[derive(Debug, Default)]
pub struct PropagationStats {
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    useful: AtomicU64,
    useless: AtomicU64,
    late: AtomicU64,
    invalid: AtomicU64,
    lost: AtomicU64,
    decoded: AtomicU64,
    published: AtomicU64,
    batches: AtomicU64,
    batched: AtomicU64,
}

/// A copy of the counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Propagation bytes written to peers (frames or gossipsub messages; bytes).
    pub bytes_sent: u64,
    /// Propagation bytes read from peers (bytes).
    pub bytes_received: u64,
    /// Chunks (or messages) that brought something new.
    pub useful: u64,
    /// Chunks that were dependent or duplicate while the block was still being decoded.
    pub useless: u64,
    /// Chunks that arrived after their block was decoded (or found invalid): sent before the
    /// sender heard this node's decoded notice.
    pub late: u64,
    /// Frames refused: malformed, bad signature, bad proof, forged data.
    pub invalid: u64,
    /// Frames (or gossipsub messages) dropped on arrival by the injected loss (`--net.loss`).
    pub lost: u64,
    /// Blocks decoded from the network.
    pub decoded: u64,
    /// Blocks this node published.
    pub published: u64,
    /// RLNC commitment checks run (each one folded check of the chunks queued by then).
    pub batches: u64,
    /// RLNC chunks those checks covered (`batched / batches` is the mean batch size).
    pub batched: u64,
}

impl PropagationStats {
    pub(crate) fn sent(&self, protocol: Protocol, bytes: usize) {
        self.bytes_sent.fetch_add(bytes as u64, Relaxed);
        metrics::counter!("net_bytes_sent_total", "protocol" => protocol.name())
            .increment(bytes as u64);
    }

    pub(crate) fn received(&self, protocol: Protocol, bytes: usize) {
        self.bytes_received.fetch_add(bytes as u64, Relaxed);
        metrics::counter!("net_bytes_received_total", "protocol" => protocol.name())
            .increment(bytes as u64);
    }

    pub(crate) fn chunk(&self, protocol: Protocol, outcome: &'static str) {
        let counter = match outcome {
            "useful" => &self.useful,
            "useless" => &self.useless,
            "late" => &self.late,
            "lost" => &self.lost,
            _ => &self.invalid,
        };
        counter.fetch_add(1, Relaxed);
        metrics::counter!("net_chunks_total", "protocol" => protocol.name(), "outcome" => outcome)
            .increment(1);
    }

    pub(crate) fn decoded(&self, protocol: Protocol, seconds: f64) {
        self.decoded.fetch_add(1, Relaxed);
        metrics::counter!("net_blocks_decoded_total", "protocol" => protocol.name()).increment(1);
        metrics::histogram!("net_time_to_decode_seconds", "protocol" => protocol.name())
            .record(seconds);
    }

    pub(crate) fn published(&self, protocol: Protocol) {
        self.published.fetch_add(1, Relaxed);
        metrics::counter!("net_blocks_published_total", "protocol" => protocol.name()).increment(1);
    }

    pub(crate) fn batch(&self, chunks: usize) {
        self.batches.fetch_add(1, Relaxed);
        self.batched.fetch_add(chunks as u64, Relaxed);
        metrics::counter!("net_verify_batches_total").increment(1);
        metrics::counter!("net_verify_batched_chunks_total").increment(chunks as u64);
    }

    /// The counters now.
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            bytes_sent: self.bytes_sent.load(Relaxed),
            bytes_received: self.bytes_received.load(Relaxed),
            useful: self.useful.load(Relaxed),
            useless: self.useless.load(Relaxed),
            late: self.late.load(Relaxed),
            lost: self.lost.load(Relaxed),
            invalid: self.invalid.load(Relaxed),
            decoded: self.decoded.load(Relaxed),
            published: self.published.load(Relaxed),
            batches: self.batches.load(Relaxed),
            batched: self.batched.load(Relaxed),
        }
    }
}
