//! The bench report: one screen for people (`print_summary`: machine and data, the measured runs
//! as ratios to the plain revm loop and to the machine's ceiling, the projection next to the
//! published curve), every figure with `--verbose` (`print_details`), one JSON object for scripts.

use gigagas_bench::projection::{project, BlockCost};
use gigagas_executor::Scheduler;
use serde::Serialize;
use std::time::Duration;

/// One measured parallel configuration (medians over the repetitions).
#[derive(Debug, Serialize)]
pub(crate) struct RunRow {
    pub(crate) threads: usize,
    #[serde(serialize_with = "ser_scheduler")]
    pub(crate) scheduler: Scheduler,
    pub(crate) batch: usize,
    pub(crate) gas: u64,
    pub(crate) seconds: f64,
    pub(crate) mgas_per_s: f64,
    /// Against the plain revm loop measured in the same run.
    pub(crate) speedup: f64,
    /// Against the sequential reference pipeline measured in the same run.
    pub(crate) vs_sequential: f64,
    /// `speedup` over the ceiling's speedup at the same thread count (1.0 at one thread): the
    /// share of what the machine's cores give that the executor reaches.
    pub(crate) vs_ceiling: f64,
    pub(crate) longest_tx_ms: f64,
    /// Blocks re-executed in order (pre-Cancun SELFDESTRUCT then access).
    pub(crate) fallback_blocks: Vec<u64>,
    /// Blocks that passed every check (reference, header) in every repetition of this run.
    pub(crate) blocks_validated: usize,
}

fn ser_scheduler<S: serde::Serializer>(s: &Scheduler, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s.name())
}

/// One projected configuration.
#[derive(Debug, Serialize)]
pub(crate) struct ProjectionRow {
    pub(crate) threads: usize,
    #[serde(serialize_with = "ser_scheduler")]
    pub(crate) scheduler: Scheduler,
    pub(crate) batch: usize,
    pub(crate) seconds: f64,
    pub(crate) mgas_per_s: f64,
    /// Against the plain revm loop measured in this run.
    pub(crate) speedup: f64,
    pub(crate) longest_tx_share: f64,
    /// The published study's speedup over its own 1-thread run at these threads (batch 1, or a
    /// ~50-block megablock), from ../shared/MISSION.md.
    pub(crate) published_speedup: Option<f64>,
}

/// A measured run next to its projection.
#[derive(Debug, Serialize)]
pub(crate) struct ProjectionCheck {
    pub(crate) threads: usize,
    #[serde(serialize_with = "ser_scheduler")]
    pub(crate) scheduler: Scheduler,
    pub(crate) batch: usize,
    pub(crate) measured_s: f64,
    pub(crate) projected_s: f64,
    /// (projected − measured) / measured, in percent.
    pub(crate) error_pct: f64,
}

/// `threads` independent plain revm loops over all blocks, run at once: what the machine's cores,
/// caches and memory allow without any executor overhead. A parallel speedup near this is the
/// most the machine gives; far below it, the executor loses the difference.
#[derive(Debug, Serialize)]
pub(crate) struct CeilingRow {
    pub(crate) threads: usize,
    /// Wall time divided by `threads` (seconds per pass of the blocks).
    pub(crate) seconds_per_pass: f64,
    /// Baseline time over `seconds_per_pass`.
    pub(crate) speedup: f64,
}

/// Everything `gigagas bench` found.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// CPU model from /proc/cpuinfo (`model name`).
    pub(crate) cpu_model: Option<String>,
    pub(crate) blocks: usize,
    pub(crate) first_block: u64,
    pub(crate) last_block: u64,
    pub(crate) transactions: usize,
    pub(crate) gas: u64,
    /// Blocks that passed every check in every run (the reference and all parallel runs).
    pub(crate) blocks_validated: usize,
    /// Blocks whose sequential reference matched the header.
    pub(crate) reference_validated: usize,
    pub(crate) receipts_root_checked: usize,
    pub(crate) repeat: usize,
    pub(crate) include_recovery: bool,
    pub(crate) cores: usize,
    pub(crate) recovery_parallel_s: f64,
    pub(crate) recovery_single_s: f64,
    pub(crate) recovery_threads: usize,
    /// Plain revm loop (one State, commit per tx, no BAL builder), seconds.
    pub(crate) baseline_s: f64,
    /// Sequential reference pipeline (alloy-evm block executor + BAL builder), seconds.
    pub(crate) sequential_s: f64,
    /// The same pipeline without revm's BAL builder, seconds: what the builder costs.
    pub(crate) sequential_without_bal_s: f64,
    pub(crate) runs: Vec<RunRow>,
    /// Per thread count above one: the machine's own scaling on this workload.
    pub(crate) ceilings: Vec<CeilingRow>,
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    pub(crate) projection: Option<ProjectionJson>,
    /// Stage breakdown of the one-thread calibration run (with `--project`).
    pub(crate) stages: Option<Stages>,
    pub(crate) peak_rss_mb: Option<f64>,
    pub(crate) failures: Vec<String>,
    pub(crate) bal_source: Option<String>,
    /// The speedup chart written by this run (PNG), if any.
    pub(crate) plot: Option<String>,
    /// Why the chart could not be written, if it could not.
    pub(crate) plot_error: Option<String>,
}

/// Where a one-thread parallel run spends its time: sums over all blocks (milliseconds).
#[derive(Debug, Serialize)]
pub(crate) struct Stages {
    /// BAL preparation (validation, conversion, indexes, implied post-state), plus the run's time
    /// outside any measured span.
    pub(crate) prepare_ms: f64,
    /// Transactions: EVM plus per-transaction BAL checks and logs bloom.
    pub(crate) execute_ms: f64,
    /// Ordered commits: system calls, receipts, coverage check.
    pub(crate) commit_ms: f64,
}

/// `projection` and `projection_check` as top-level JSON fields.
#[derive(Debug, Serialize)]
pub(crate) struct ProjectionJson {
    pub(crate) projection: Vec<ProjectionRow>,
    pub(crate) projection_check: Vec<ProjectionCheck>,
}

/// Published Mgas/s (../shared/MISSION.md): per block and for a 50-block megablock.
const PUBLISHED_PER_BLOCK: [(usize, f64); 5] =
    [(1, 1258.0), (2, 2460.0), (4, 3753.0), (8, 4824.0), (16, 5084.0)];
const PUBLISHED_MEGABLOCK: [(usize, f64); 5] =
    [(1, 1440.0), (2, 2793.0), (4, 5167.0), (8, 9095.0), (16, 14001.0)];

/// The published curves as (threads, Mgas/s): per block, and for a ~50-block megablock.
pub(crate) fn published_curves() -> [&'static [(usize, f64)]; 2] {
    [&PUBLISHED_PER_BLOCK, &PUBLISHED_MEGABLOCK]
}

fn published_speedup(threads: usize, batch: usize, n_blocks: usize) -> Option<f64> {
    let table = if batch == 1 {
        &PUBLISHED_PER_BLOCK
    } else if batch == n_blocks && n_blocks >= 25 {
        &PUBLISHED_MEGABLOCK
    } else {
        return None;
    };
    let one = table[0].1;
    table.iter().find(|(t, _)| *t == threads).map(|(_, m)| m / one)
}

/// Projects every (threads, scheduler, batch) and checks the projection against `measured`.
pub(crate) fn projection_rows(
    costs: &[BlockCost],
    batches: &[usize],
    baseline: Duration,
    measured: &[RunRow],
) -> ProjectionJson {
    let n_blocks = costs.len();
    let mut rows = Vec::new();
    for threads in [1, 2, 4, 8, 16, 32] {
        for scheduler in Scheduler::ALL {
            for &batch in batches {
                let p = project(costs, threads, scheduler, batch);
                rows.push(ProjectionRow {
                    threads,
                    scheduler,
                    batch,
                    seconds: p.seconds,
                    mgas_per_s: p.mgas_per_s,
                    speedup: baseline.as_secs_f64() / p.seconds,
                    longest_tx_share: p.longest_tx_share,
                    published_speedup: published_speedup(threads, batch, n_blocks),
                });
            }
        }
    }
    let checks = measured
        .iter()
        .map(|m| {
            let p = project(costs, m.threads, m.scheduler, m.batch);
            ProjectionCheck {
                threads: m.threads,
                scheduler: m.scheduler,
                batch: m.batch,
                measured_s: m.seconds,
                projected_s: p.seconds,
                error_pct: (p.seconds - m.seconds) / m.seconds * 100.0,
            }
        })
        .collect();
    ProjectionJson { projection: rows, projection_check: checks }
}

/// Peak resident set size of this process (MiB), from `/proc/self/status` `VmHWM`.
pub(crate) fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The model name of the first CPU in /proc/cpuinfo.
pub(crate) fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

/// `n` with a comma every three digits.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How a batch size reads in a column header.
fn batch_name(batch: usize, blocks: usize) -> String {
    match batch {
        1 => "per block".to_string(),
        b if b == blocks => format!("megablock ({b} blocks)"),
        b => format!("megablocks of {b}"),
    }
}

/// The projection of `scheduler` at `threads` and `batch`, if it was simulated.
fn projected(
    p: &ProjectionJson,
    threads: usize,
    scheduler: Scheduler,
    batch: usize,
) -> Option<&ProjectionRow> {
    p.projection
        .iter()
        .find(|row| row.threads == threads && row.scheduler == scheduler && row.batch == batch)
}

/// The default output: one screen (about 35 lines with the default thread counts).
pub(crate) fn print_summary(r: &Report) {
    let mgas = |s: f64| r.gas as f64 / 1e6 / s;
    println!("gigagas-bench bench: real mainnet blocks executed in parallel with EIP-7928 BALs, each validated");
    println!(
        "machine  {} cores, {}{}",
        r.cores,
        r.cpu_model.as_deref().unwrap_or("unknown CPU"),
        r.peak_rss_mb.map(|m| format!("; peak RSS {m:.0} MiB")).unwrap_or_default()
    );
    println!(
        "data     {} blocks (#{}..#{}), {} transactions, {:.1} Mgas",
        r.blocks,
        thousands(r.first_block),
        thousands(r.last_block),
        thousands(r.transactions as u64),
        r.gas as f64 / 1e6
    );
    println!(
        "method   median of {} interleaved runs; senders recovered {} ({:.1} ms, {} threads){}",
        r.repeat,
        if r.include_recovery { "inside every timing" } else { "outside the timings" },
        r.recovery_parallel_s * 1e3,
        r.recovery_threads,
        r.bal_source.as_ref().map(|s| format!("; BALs from {s}")).unwrap_or_default()
    );
    println!(
        "checks   each block, each run: gas, bloom, receipts (+ root on {} post-Byzantium), \
         BAL, post-state",
        r.receipts_root_checked
    );
    println!();
    println!(
        "{:<36} {:>7} {:>9} {:>8}  {:>9}",
        "reference", "threads", "Mgas/s", "vs revm", "validated"
    );
    println!(
        "{:<36} {:>7} {:>9.1} {:>7.2}x  {:>9}",
        "plain revm loop (the 1.00x)",
        1,
        mgas(r.baseline_s),
        1.0,
        "-"
    );
    println!(
        "{:<36} {:>7} {:>9.1} {:>7.2}x  {:>9}",
        "sequential reference (+ BAL build)",
        1,
        mgas(r.sequential_s),
        r.baseline_s / r.sequential_s,
        format!("{}/{}", r.reference_validated, r.blocks)
    );
    for c in &r.ceilings {
        println!(
            "{:<36} {:>7} {:>9.1} {:>7.2}x  {:>9}",
            format!("ceiling: {} plain loops at once", c.threads),
            c.threads,
            mgas(c.seconds_per_pass),
            c.speedup,
            "-"
        );
    }

    // Parallel runs: one row per (threads, scheduler), one column group per batch size.
    let mut batches: Vec<usize> = r.runs.iter().map(|row| row.batch).collect();
    batches.sort_unstable();
    batches.dedup();
    let mut keys: Vec<(usize, Scheduler)> = Vec::new();
    for row in &r.runs {
        if !keys.contains(&(row.threads, row.scheduler)) {
            keys.push((row.threads, row.scheduler));
        }
    }
    if !keys.is_empty() {
        println!();
        let mut groups = format!("{:<18}", "");
        let mut header = format!("{:<9} {:>7} ", "parallel", "threads");
        for &b in &batches {
            groups.push_str(&format!(" | {:<26}", batch_name(b, r.blocks)));
            header.push_str(&format!(" | {:>8} {:>8} {:>8}", "Mgas/s", "vs revm", "vs ceil"));
        }
        println!("{groups} |");
        println!("{header} | validated");
        for &(threads, scheduler) in &keys {
            let mut line = format!("{:<9} {:>7} ", scheduler.name(), threads);
            let mut validated = r.blocks;
            for &b in &batches {
                match r.runs.iter().find(|row| {
                    row.threads == threads && row.scheduler == scheduler && row.batch == b
                }) {
                    Some(row) => {
                        validated = validated.min(row.blocks_validated);
                        line.push_str(&format!(
                            " | {:>8.1} {:>7.2}x {:>7.2}x",
                            row.mgas_per_s, row.speedup, row.vs_ceiling
                        ));
                    }
                    None => line.push_str(&format!(" | {:>26}", "")),
                }
            }
            println!("{line} | {validated}/{}", r.blocks);
        }
    }

    if let Some(p) = &r.projection {
        let mega = r.blocks;
        println!();
        println!(
            "projection: this run's 1-thread per-transaction latencies on N simulated threads"
        );
        println!(
            "{:>7} | {:<26} | {:<20} | {:<26}",
            "",
            "per block, ols",
            "per block, gas-limit",
            format!("megablock ({mega}), ols")
        );
        println!(
            "{:>7} | {:>8} {:>8} {:>8} | {:>11} {:>8} | {:>8} {:>8} {:>8}",
            "threads",
            "Mgas/s",
            "vs revm",
            "study",
            "Mgas/s",
            "vs revm",
            "Mgas/s",
            "vs revm",
            "study"
        );
        let cell = |row: Option<&ProjectionRow>| match row {
            Some(row) => format!("{:>8.1} {:>7.2}x", row.mgas_per_s, row.speedup),
            None => format!("{:>17}", "-"),
        };
        let study = |row: Option<&ProjectionRow>| {
            row.and_then(|row| row.published_speedup)
                .map_or_else(|| format!("{:>8}", ""), |s| format!("{s:>7.2}x"))
        };
        for threads in [1, 2, 4, 8, 16, 32] {
            let ols1 = projected(p, threads, Scheduler::Ols, 1);
            let gas1 = projected(p, threads, Scheduler::GasLimit, 1);
            let olsm = projected(p, threads, Scheduler::Ols, mega);
            println!(
                "{:>7} | {} {} | {:>20} | {} {}",
                threads,
                cell(ols1),
                study(ols1),
                cell(gas1),
                cell(olsm),
                study(olsm)
            );
        }
        println!(
            "vs revm: over this run's plain revm loop; study: the published curve (16-core Ryzen 9 \
             5950X),\n         over its own 1 thread (../shared/MISSION.md)"
        );
        let errors: Vec<f64> = p.projection_check.iter().map(|c| c.error_pct).collect();
        if let (Some(lo), Some(hi)) =
            (errors.iter().copied().reduce(f64::min), errors.iter().copied().reduce(f64::max))
        {
            println!(
                "projection vs the {} measured runs above: {lo:+.1}% to {hi:+.1}%",
                errors.len()
            );
        }
    }
    match (&r.plot, &r.plot_error) {
        (Some(path), _) => {
            println!("plot: {path} (measured and projected speedup vs threads, published curve)")
        }
        (None, Some(e)) => println!("plot: not written: {e}"),
        (None, None) => {}
    }
    println!("more: --verbose (every run, stage and projected configuration), --json");
}

/// Every figure of the run (`--verbose`): the summary's sources and the full projection.
pub(crate) fn print_details(r: &Report) {
    println!(
        "gigagas-bench bench: {} blocks, {} transactions, {:.1} Mgas; {} cores; medians of {} runs{}",
        r.blocks,
        r.transactions,
        r.gas as f64 / 1e6,
        r.cores,
        r.repeat,
        if r.include_recovery { "; sender recovery inside the measured region" } else { "" }
    );
    println!(
        "validated: {}/{} blocks (gasUsed, logsBloom, receipts; receiptsRoot on {} post-Byzantium \
         blocks; BAL hash and post-state equal to the sequential reference){}",
        r.blocks_validated,
        r.blocks,
        r.receipts_root_checked,
        r.bal_source.as_ref().map(|s| format!("; BALs from {s}")).unwrap_or_default()
    );
    println!(
        "sender recovery: {:.1} ms on {} threads, {:.1} ms on 1 thread",
        r.recovery_parallel_s * 1e3,
        r.recovery_threads,
        r.recovery_single_s * 1e3
    );
    let mgas = |s: f64| r.gas as f64 / 1e6 / s;
    println!(
        "baseline (plain revm loop):        {:>8.1} ms  {:>8.1} Mgas/s  1.00x",
        r.baseline_s * 1e3,
        mgas(r.baseline_s)
    );
    println!(
        "sequential, no BAL builder:        {:>8.1} ms  {:>8.1} Mgas/s  {:.2}x",
        r.sequential_without_bal_s * 1e3,
        mgas(r.sequential_without_bal_s),
        r.baseline_s / r.sequential_without_bal_s
    );
    println!(
        "sequential reference (+BAL build): {:>8.1} ms  {:>8.1} Mgas/s  {:.2}x",
        r.sequential_s * 1e3,
        mgas(r.sequential_s),
        r.baseline_s / r.sequential_s
    );
    for c in &r.ceilings {
        println!(
            "ceiling, {} plain loops at once:    {:>8.1} ms  {:>8.1} Mgas/s  {:.2}x  (per pass)",
            c.threads,
            c.seconds_per_pass * 1e3,
            mgas(c.seconds_per_pass),
            c.speedup
        );
    }
    println!();
    println!(
        "{:>7} {:>9} {:>5} {:>9} {:>8} {:>8} {:>10} {:>9}  fallback",
        "threads", "scheduler", "batch", "Mgas/s", "speedup", "vs seq", "longest tx", "total"
    );
    for row in &r.runs {
        println!(
            "{:>7} {:>9} {:>5} {:>9.1} {:>7.2}x {:>7.2}x {:>8.2}ms {:>7.1}ms  {}",
            row.threads,
            row.scheduler.name(),
            row.batch,
            row.mgas_per_s,
            row.speedup,
            row.vs_sequential,
            row.longest_tx_ms,
            row.seconds * 1e3,
            row.fallback_blocks.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
        );
    }
    if let Some(p) = &r.projection {
        println!();
        println!("projection from the per-transaction latencies of a 1-thread run (critical-path simulation):");
        println!(
            "{:>7} {:>9} {:>5} {:>9} {:>8} {:>12} {:>10}",
            "threads", "scheduler", "batch", "Mgas/s", "speedup", "longest tx %", "published"
        );
        for row in &p.projection {
            println!(
                "{:>7} {:>9} {:>5} {:>9.1} {:>7.2}x {:>11.1}% {:>10}",
                row.threads,
                row.scheduler.name(),
                row.batch,
                row.mgas_per_s,
                row.speedup,
                row.longest_tx_share * 100.0,
                row.published_speedup.map(|s| format!("{s:.2}x")).unwrap_or_default()
            );
        }
        if let Some(st) = &r.stages {
            println!();
            println!(
                "one-thread stages: prepare (+ unattributed) {:.1} ms, execute {:.1} ms, commit {:.1} ms",
                st.prepare_ms, st.execute_ms, st.commit_ms
            );
        }
        println!();
        println!("projection vs measured:");
        for c in &p.projection_check {
            println!(
                "  {:>2} threads {:>9} batch {:>3}: measured {:>7.1} ms, projected {:>7.1} ms ({:+.1}%)",
                c.threads,
                c.scheduler.name(),
                c.batch,
                c.measured_s * 1e3,
                c.projected_s * 1e3,
                c.error_pct
            );
        }
    }
    if let Some(rss) = r.peak_rss_mb {
        println!();
        println!("peak RSS: {rss:.0} MiB");
    }
}
