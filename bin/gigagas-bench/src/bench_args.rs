//! `gigagas-bench bench`'s arguments and the errors that stop it, shared by the in-memory run
//! (bench.rs) and the RocksDB run (bench_io.rs).

use gigagas_bal::json as bal_json;
use gigagas_state::mainnet;
use std::path::PathBuf;

/// Arguments of `gigagas-bench bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Folder of mainnet blocks: blocks/<number>/{block,pre_state}.json, bytecodes.json.gz,
    /// block_hashes.json.
    #[arg(long, default_value = "../shared/data/mainnet")]
    pub(crate) data: PathBuf,
    /// Worker thread counts, comma-separated [default: 1 and the machine's cores].
    #[arg(long, value_delimiter = ',')]
    pub(crate) threads: Vec<usize>,
    /// Claim order: ols, gas-limit, gas-used or all.
    #[arg(long, default_value = "all")]
    pub(crate) scheduler: String,
    /// Blocks per megablock, comma-separated numbers or `all`.
    #[arg(long, value_delimiter = ',', default_value = "1,all")]
    pub(crate) batch: Vec<String>,
    /// Timed repetitions of every run; medians are reported.
    #[arg(long, default_value_t = 5)]
    pub(crate) repeat: usize,
    /// Put sender recovery inside every measured region.
    #[arg(long)]
    pub(crate) include_recovery: bool,
    /// Project 1–32 threads from measured per-transaction latencies.
    #[arg(long)]
    pub(crate) project: bool,
    /// Write each block's BAL (built by the sequential reference) to DIR/<number>.json.
    #[arg(long, value_name = "DIR")]
    pub(crate) dump_bal: Option<PathBuf>,
    /// Execute with the BALs in DIR/<number>.json instead of the built ones.
    #[arg(long, value_name = "DIR")]
    pub(crate) bal: Option<PathBuf>,
    /// Only these block numbers, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub(crate) blocks: Vec<u64>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub(crate) json: bool,
    /// Print every figure: all runs with their longest transaction and fallbacks, the stages of
    /// the one-thread run, every projected configuration and its check against the measurement.
    #[arg(long, short)]
    pub(crate) verbose: bool,
    /// Where to write the speedup chart (PNG): measured and projected speedup against threads,
    /// next to the published curve.
    #[arg(long, value_name = "PNG", default_value = "target/bench/speedup.png")]
    pub(crate) plot: PathBuf,
    /// Write no chart.
    #[arg(long)]
    pub(crate) no_plot: bool,
    /// Where the pre-state lives: `memory` (loaded from the data folder) or `rocksdb` (each
    /// block's pre-state in a RocksDB under --db, loaded once; runs compare each I/O design
    /// with the in-memory run of the same blocks).
    #[arg(long, default_value = "memory", value_parser = ["memory", "rocksdb"])]
    pub(crate) state: String,
    /// With `--state rocksdb`: BAL-hinted I/O designs, comma-separated: `full` (pre-block values
    /// of every read travel with the block: no reads during execution), `batch` (every key the
    /// BAL names fetched by multi-get before execution), `parallel` (workers read on demand
    /// through the shared cache), `prewarm` (as parallel, plus one thread fetching the BAL's keys
    /// block by block while the workers run).
    #[arg(long, value_delimiter = ',', default_value = "full,batch,parallel,prewarm")]
    pub(crate) io: Vec<String>,
    /// With `--state rocksdb`: also run cold (OS page cache dropped with `sync; echo 3 >
    /// /proc/sys/vm/drop_caches`, RocksDB reopened with an empty block cache, before every
    /// timed run); needs root.
    #[arg(long)]
    pub(crate) cold: bool,
    /// With `--state rocksdb`: folder of the per-block databases [default: target/bench-db].
    #[arg(long)]
    pub(crate) db: Option<PathBuf>,
}

/// A failure that stops the bench before any block was judged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BenchError {
    #[error(transparent)]
    Load(#[from] mainnet::LoadError),
    #[error(transparent)]
    BalFile(#[from] bal_json::BalFileError),
    #[error("{0}")]
    Args(String),
}
