//! gigagas hardware sizing (`gigagas hw`): what gas limit this machine validates, and what
//! machine a gas limit needs, from a model whose every constant is measured here.
//!
//! Flow (each step a module):
//! 1. [`probe`]: cores, CPU model, memory and page cache.
//! 2. [`chain`]: the node's engine on a generated chain (init, then newPayload + forkchoice
//!    update per block in-process, sequential and parallel at 1..=cores threads): recovery,
//!    execution, state root and commit per gas, the parallel speedup on that workload, store
//!    reads per gas, the RSS and page cache as blocks go through.
//! 3. [`exec`]: the executor on the real mainnet blocks in memory: single-core sequential
//!    Mgas/s, parallel speedup at 1..=cores threads block by block and as a megablock, and the
//!    critical-path [`projection`] to 64 threads.
//! 4. [`disk`]: random reads at queue depth 1..64 on the raw disk and through RocksDB, warm and
//!    cold.
//! 5. [`model`]: a block's time as the sum of its stages; the largest gas per block within a
//!    budget per design; the smallest cores / single-core speed / IOPS / RAM for a target.
//! 6. [`check`]: the model against the node's measured Engine API replays; [`scale`]: its cold
//!    term against cold imports on states of up to 50M entries.
//! 7. [`plot`]: one PNG of the four measurements.
//!
//! [`measure`] runs 1–4 and builds the [`Report`]; the binary prints it or writes `--json`.

pub mod chain;
pub mod check;
pub mod disk;
mod error;
pub mod exec;
pub mod model;
pub mod plot;
pub mod probe;
pub mod projection;
pub mod scale;

pub use chain::ChainMeasure;
pub use error::HwError;

use disk::ReadSweep;
use exec::ExecMeasure;
use model::{Breakdown, Costs, Design, Model, Requirements, Target};
use probe::Machine;
use serde::Serialize;
use std::{path::PathBuf, time::Duration};

/// What to measure and ask.
#[derive(Debug, Clone)]
pub struct Options {
    /// The mainnet blocks (`../shared/data/mainnet`).
    pub mainnet: PathBuf,
    /// A generated chain folder (`gigagas-bench gen-chain --out DIR`).
    pub chain: PathBuf,
    /// Where the scratch file, store and datadir go (on the disk being sized).
    pub work: PathBuf,
    /// Rounds of the executor runs (medians).
    pub repeat: usize,
    /// Size of the raw-disk test file (bytes).
    pub disk_bytes: u64,
    /// Slots in the RocksDB test store.
    pub rocksdb_slots: u64,
    /// Time per queue depth (seconds).
    pub sweep_seconds: f64,
    /// Skip the disk and RocksDB sweeps (then "cold" is not modelled).
    pub skip_io: bool,
    /// Budgets per block (seconds).
    pub budgets: Vec<f64>,
    /// The state the cache should hold (bytes); `None`: the chain's datadir.
    pub state_bytes: Option<f64>,
}

/// The largest gas per block within a budget for one design.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CapacityRow {
    /// Budget per block (seconds).
    pub budget_s: f64,
    /// Execution design.
    pub design: Design,
    /// Threads (this machine's cores).
    pub threads: usize,
    /// Largest gas per block, warm store (gas).
    pub max_gas_warm: f64,
    /// Largest gas per block, every store read cold (gas); `None` without the sweeps.
    pub max_gas_cold: Option<f64>,
    /// The stages at `max_gas_cold` (or warm), seconds.
    pub breakdown: Breakdown,
    /// What binds first there.
    pub binding: &'static str,
    /// What binds first at `max_gas_warm` (the state in the cache).
    pub binding_warm: &'static str,
}

/// One EIP-7870 role's machine, at this machine's single-core speed.
#[derive(Debug, Clone, Serialize)]
pub struct Eip7870Row {
    /// The role (EIP-7870 table).
    pub role: &'static str,
    /// Threads (cores / threads of the EIP's table: the threads).
    pub threads: usize,
    /// RAM (bytes).
    pub ram_bytes: f64,
    /// Random 4K read IOPS of the EIP's NVMe ("up to 1,000,000").
    pub iops: f64,
    /// Largest gas per block within 3 s, per-block parallel, warm / cold at the EIP's IOPS.
    pub max_gas_3s_warm: f64,
    /// Same, every store read cold at the EIP's IOPS.
    pub max_gas_3s_cold: f64,
}

/// Everything `gigagas hw` measured and concluded.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The machine.
    pub machine: Machine,
    /// The chain import.
    pub chain: ChainMeasure,
    /// The mainnet blocks.
    pub exec: ExecMeasure,
    /// Raw-disk random reads.
    pub disk: Option<ReadSweep>,
    /// RocksDB random reads, warm.
    pub rocksdb_warm: Option<ReadSweep>,
    /// RocksDB random reads, cold.
    pub rocksdb_cold: Option<ReadSweep>,
    /// Costs per gas (the model's constants).
    pub costs: Costs,
    /// The chain's parallel execution speedup over its sequential run: (threads, speedup).
    pub chain_speedup: Vec<(usize, f64)>,
    /// The largest gas per block per budget and design.
    pub capacity: Vec<CapacityRow>,
    /// The state the cache is sized for (bytes).
    pub state_bytes: f64,
    /// EIP-7870's machines under the model.
    pub eip7870: Vec<Eip7870Row>,
    /// Peak RSS of the whole measurement (bytes).
    pub peak_rss_bytes: Option<u64>,
    /// What a target needs (`--target-gas`).
    pub requirements: Option<Requirements>,
    /// The model against measured replays (`--check-replay`).
    pub check: Vec<check::CheckRow>,
    /// The PNG written.
    pub plot: Option<String>,
}

/// The steps [`measure`] reports progress in.
pub const STEPS: [&str; 4] = ["chain import", "mainnet executor", "raw disk", "RocksDB"];

/// Runs the measurements; `progress(step, done, total)` after each unit of work.
///
/// # Errors
/// Any [`HwError`] of the steps: a measurement that fails gives no report.
pub fn measure(
    opts: &Options,
    progress: &(dyn Fn(usize, u64, u64) + Sync),
) -> Result<(Report, Model), HwError> {
    std::fs::create_dir_all(&opts.work).map_err(error::io_err(&opts.work))?;
    let machine = probe::probe();
    let cores = machine.cores;
    let blocks = std::sync::atomic::AtomicU64::new(0);
    let counts = exec::thread_counts(cores);
    let chain = chain::measure(&opts.chain, &opts.work, &counts, &|| {
        let n = blocks.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(0, n, 0);
    })?;
    let runs_total = opts.repeat.max(1) as u64 * (1 + 2 * counts.len() as u64);
    let runs = std::sync::atomic::AtomicU64::new(0);
    let exec = exec::measure(&opts.mainnet, opts.repeat, cores, &|| {
        let n = runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(1, n, runs_total);
    })?;
    let time = Duration::from_secs_f64(opts.sweep_seconds.max(0.05));
    let depths = disk::DEPTHS.len() as u64;
    let (disk, warm, cold) = if opts.skip_io {
        (None, None, None)
    } else {
        let done = std::sync::atomic::AtomicU64::new(0);
        let tick = |step: usize, total: u64| {
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress(step, n, total);
        };
        let raw = disk::raw_disk(&opts.work, opts.disk_bytes, time, &|| tick(2, depths))?;
        done.store(0, std::sync::atomic::Ordering::Relaxed);
        let (w, c) = disk::rocksdb(&opts.work, opts.rocksdb_slots, time, &|| tick(3, 2 * depths))?;
        (Some(raw), Some(w), Some(c))
    };
    let model = Model::new(exec.clone(), &chain, warm.clone(), cold.clone(), cores);
    let state_bytes = opts.state_bytes.unwrap_or(chain.datadir_bytes as f64);
    let here = Target::machine(cores);
    let mut capacity = Vec::new();
    for &budget in &opts.budgets {
        for design in Design::ALL {
            let max_gas_warm = model.max_gas(budget, design, here);
            let max_gas_cold = cold
                .is_some()
                .then(|| model.max_gas(budget, design, Target { cold: true, ..here }));
            let (g, t) = match max_gas_cold {
                Some(g) => (g, Target { cold: true, ..here }),
                None => (max_gas_warm, here),
            };
            let breakdown = model.block(g, design, t);
            capacity.push(CapacityRow {
                budget_s: budget,
                design,
                threads: cores,
                max_gas_warm,
                max_gas_cold,
                breakdown,
                binding: breakdown.binding(),
                binding_warm: model.block(max_gas_warm, design, here).binding(),
            });
        }
    }
    let eip7870 = [("full node", 8, 32.0), ("attester / local builder", 16, 64.0)]
        .into_iter()
        .map(|(role, threads, ram_gb)| {
            let t = Target::machine(threads);
            Eip7870Row {
                role,
                threads,
                ram_bytes: ram_gb * (1u64 << 30) as f64,
                iops: EIP7870_IOPS,
                max_gas_3s_warm: model.max_gas(3.0, Design::Parallel, t),
                max_gas_3s_cold: model.max_gas(
                    3.0,
                    Design::Parallel,
                    Target { cold: true, iops: Some(EIP7870_IOPS), ..t },
                ),
            }
        })
        .collect();
    let report = Report {
        chain_speedup: model.chain_speedup.clone(),
        costs: model.costs,
        machine,
        chain,
        exec,
        disk,
        rocksdb_warm: warm,
        rocksdb_cold: cold,
        capacity,
        state_bytes,
        eip7870,
        peak_rss_bytes: probe::peak_rss_bytes(),
        requirements: None,
        check: Vec::new(),
        plot: None,
    };
    Ok((report, model))
}

/// What a saved report (`hw.json`) holds of the measurements the model is built from.
#[derive(serde::Deserialize)]
struct Saved {
    machine: Machine,
    chain: ChainMeasure,
    exec: ExecMeasure,
    rocksdb_warm: Option<ReadSweep>,
    rocksdb_cold: Option<ReadSweep>,
}

/// The model of the machine a saved report (`hw.json`, e.g. another machine's) measured, and
/// that machine.
///
/// # Errors
/// [`HwError::Io`] when the file cannot be read, [`HwError::Saved`] when it is not a report.
pub fn load_model(path: &std::path::Path) -> Result<(Machine, Model), HwError> {
    let bytes = std::fs::read(path).map_err(error::io_err(path))?;
    let saved: Saved = serde_json::from_slice(&bytes)
        .map_err(|e| HwError::Saved { path: path.to_path_buf(), reason: e.to_string() })?;
    let model = Model::new(
        saved.exec,
        &saved.chain,
        saved.rocksdb_warm,
        saved.rocksdb_cold,
        saved.machine.cores,
    );
    Ok((saved.machine, model))
}

/// EIP-7870's NVMe: "random 4K read/write: up to 1,000,000 IOPS".
pub const EIP7870_IOPS: f64 = 1_000_000.0;
