//! The node's Prometheus metrics (`--metrics ADDR`, metrics-exporter-prometheus): what the
//! executor, state-root stage, storage and Engine API measured for every payload, in base units
//! (seconds, gas, bytes). Rates the node measures itself (gas per second of a block) are
//! gauges, not left to PromQL. The Grafana dashboard etc/grafana/dashboards/gigagas.json reads
//! these names.

use gigagas_engine::{EngineEvent, EventHook};
use gigagas_trie::TrieStart;
use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::PrometheusBuilder;
use std::net::SocketAddr;

/// Stage-duration histogram buckets (seconds): 100 µs … 10 s.
const SECONDS_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    10.0,
];

/// Why the metrics could not be served.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The exporter could not be built or bound.
    #[error("metrics exporter on {addr}: {source}")]
    Exporter {
        /// The listening address asked for.
        addr: SocketAddr,
        /// The exporter's error.
        source: metrics_exporter_prometheus::BuildError,
    },
    /// A global metrics recorder is already installed in this process.
    #[error("a metrics recorder is already installed")]
    RecorderInstalled,
}

/// Installs the recorder and starts the exporter's HTTP listener on `addr` (serving
/// `/metrics`) on the current Tokio runtime; `threads` and `scheduler` are recorded once.
///
/// # Errors
/// [`MetricsError`] (address in use, recorder already installed).
pub(crate) fn install(
    addr: SocketAddr,
    threads: usize,
    scheduler: &str,
) -> Result<(), MetricsError> {
    let exporter_error = |source| MetricsError::Exporter { addr, source };
    let (recorder, exporter) = PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets(SECONDS_BUCKETS)
        .map_err(exporter_error)?
        .build()
        .map_err(exporter_error)?;
    metrics::set_global_recorder(recorder).map_err(|_| MetricsError::RecorderInstalled)?;
    tokio::spawn(async move {
        if let Err(e) = exporter.await {
            tracing::error!(target: "node::metrics", error = ?e, "metrics exporter stopped");
        }
    });
    describe();
    gauge!("gigagas_executor_threads").set(threads as f64);
    gauge!("gigagas_executor_scheduler_info", "scheduler" => scheduler.to_string()).set(1.0);
    Ok(())
}

fn describe() {
    describe_counter!("gigagas_engine_new_payload_total", "engine_newPayload calls by status");
    // Counted by crates/rpc's middleware, under its names.
    describe_counter!(
        gigagas_rpc::metrics::CALLS_TOTAL,
        "JSON-RPC calls by server (http, auth) and method"
    );
    describe_counter!(
        gigagas_rpc::metrics::CALL_ERRORS_TOTAL,
        "JSON-RPC calls answered with an error, by server and method"
    );
    describe_counter!(
        gigagas_rpc::limit::CALLS_SHED_TOTAL,
        "heavy JSON-RPC calls refused with -32005 past their class's running and queued limits, by method"
    );
    describe_histogram!(
        "gigagas_engine_new_payload_seconds",
        "engine_newPayload end to end: decoding, recovery, I/O, execution, state root"
    );
    describe_gauge!(
        "gigagas_engine_new_payload_gas_per_second",
        "gas per second of the last payload, newPayload end to end"
    );
    describe_counter!("gigagas_executor_gas_total", "gas processed by executed payloads");
    describe_counter!("gigagas_executor_transactions_total", "transactions executed");
    describe_counter!(
        "gigagas_executor_blocks_total",
        "blocks executed, by executor: parallel (driven by the payload's BAL) or sequential"
    );
    describe_gauge!(
        "gigagas_executor_gas_per_second",
        "gas per second of the last block, execution alone (recovery, I/O and EVM)"
    );
    describe_histogram!("gigagas_executor_stage_seconds", "per-block stage durations by stage");
    describe_gauge!(
        "gigagas_executor_longest_tx_seconds",
        "the longest transaction of the last parallel block"
    );
    describe_gauge!("gigagas_executor_threads", "worker threads of the parallel executor");
    describe_gauge!("gigagas_executor_scheduler_info", "the scheduler, as a label");
    describe_counter!(
        "gigagas_state_root_trie_total",
        "payload state roots by where their trie update started: `preserved` (the trie kept \
         from the block before) or `fresh` (from the parent's root)"
    );
    describe_counter!(
        "gigagas_engine_senders_known_total",
        "payload transactions whose sender the pool had recovered (not recovered again)"
    );
    describe_counter!(
        "gigagas_engine_senders_recovered_total",
        "payload transactions whose sender was recovered from its signature"
    );
    describe_counter!("gigagas_state_cache_hits_total", "state reads answered by the block cache");
    describe_counter!("gigagas_state_cache_misses_total", "state reads that went to the store");
    describe_gauge!("gigagas_bal_bytes", "RLP size of the last payload's block access list");
    describe_counter!("gigagas_bal_bytes_total", "RLP bytes of block access lists received");
    describe_gauge!("gigagas_chain_head_number", "canonical head block number");
    describe_gauge!(
        "gigagas_chain_persisted_number",
        "the last canonical block the store holds (trails the head while blocks are committed in the background)"
    );
    describe_counter!("gigagas_chain_reorgs_total", "forkchoice updates that unwound blocks");
    describe_counter!("gigagas_chain_unwound_blocks_total", "blocks removed by reorgs");
    describe_histogram!("gigagas_payload_build_seconds", "time to build a payload");
    describe_counter!("gigagas_payload_built_total", "payloads built");
    describe_counter!(
        "gigagas_payload_transactions_total",
        "transactions included in built payloads"
    );
}

/// The hook that records every Engine API event.
pub(crate) fn hook() -> EventHook {
    EventHook(Box::new(record))
}

fn record(event: &EngineEvent<'_>) {
    match event {
        EngineEvent::NewPayload { status, block, gas_used, transactions, bal_bytes, elapsed } => {
            counter!("gigagas_engine_new_payload_total", "status" => *status).increment(1);
            let Some(b) = block else { return };
            let seconds = elapsed.as_secs_f64();
            histogram!("gigagas_engine_new_payload_seconds").record(seconds);
            if seconds > 0.0 {
                gauge!("gigagas_engine_new_payload_gas_per_second").set(*gas_used as f64 / seconds);
            }
            let execution = b.execution.as_secs_f64();
            if execution > 0.0 {
                gauge!("gigagas_executor_gas_per_second").set(*gas_used as f64 / execution);
            }
            counter!("gigagas_executor_gas_total").increment(*gas_used);
            counter!("gigagas_executor_transactions_total").increment(*transactions as u64);
            let executor = if b.parallel { "parallel" } else { "sequential" };
            counter!("gigagas_executor_blocks_total", "executor" => executor).increment(1);
            let evm = b.execution.saturating_sub(b.recovery + b.io);
            for (stage, d) in [
                ("recovery", b.recovery),
                ("io", b.io),
                ("execution", evm),
                ("state_root", b.state_root),
            ] {
                histogram!("gigagas_executor_stage_seconds", "stage" => stage)
                    .record(d.as_secs_f64());
            }
            // Always recorded (zero when not beside), so that per-block deltas line up.
            let beside = b.state_root_beside.unwrap_or_default();
            histogram!("gigagas_executor_stage_seconds", "stage" => "state_root_beside")
                .record(beside.as_secs_f64());
            // Whether the state root started on the trie kept from the block before.
            if let Some(start) = b.state_root_trie {
                let start = match start {
                    TrieStart::Preserved => "preserved",
                    TrieStart::Fresh => "fresh",
                };
                counter!("gigagas_state_root_trie_total", "start" => start).increment(1);
            }
            if b.parallel {
                gauge!("gigagas_executor_longest_tx_seconds").set(b.longest_tx.as_secs_f64());
            }
            // The senders the pool had recovered before the payload came, and the rest.
            counter!("gigagas_engine_senders_known_total").increment(b.senders_known as u64);
            counter!("gigagas_engine_senders_recovered_total")
                .increment(b.transactions.saturating_sub(b.senders_known) as u64);
            counter!("gigagas_state_cache_hits_total").increment(b.cache.hits);
            counter!("gigagas_state_cache_misses_total").increment(b.cache.misses);
            gauge!("gigagas_bal_bytes").set(*bal_bytes as f64);
            counter!("gigagas_bal_bytes_total").increment(*bal_bytes as u64);
        }
        EngineEvent::Canonical(change) => {
            if !change.unwound.is_empty() {
                counter!("gigagas_chain_reorgs_total").increment(1);
                counter!("gigagas_chain_unwound_blocks_total")
                    .increment(change.unwound.len() as u64);
            }
            for b in &change.committed {
                histogram!("gigagas_executor_stage_seconds", "stage" => "commit")
                    .record(b.commit.as_secs_f64());
            }
            let head = change
                .committed
                .last()
                .map(|b| b.number)
                .or_else(|| change.unwound.last().map(|(n, _)| n - 1));
            if let Some(n) = head {
                gauge!("gigagas_chain_head_number").set(n as f64);
                gauge!("gigagas_chain_persisted_number").set(n as f64);
            }
        }
        EngineEvent::Built(p) => {
            counter!("gigagas_payload_built_total").increment(1);
            counter!("gigagas_payload_transactions_total")
                .increment(p.block.body.transactions.len() as u64);
            histogram!("gigagas_payload_build_seconds").record(p.build_time.as_secs_f64());
        }
    }
}
