//! `gigagas-bench hw`: measures this machine and answers what gas per block it validates within
//! a budget, and (`--target-gas`) what machine a gas limit needs. The measurements and the model
//! are `gigagas-hw`'s; this module parses the arguments, generates the chain it runs the engine
//! on when it is missing (`gen-chain`: 300M gas, Amsterdam, the mainnet mix, 20 blocks), shows
//! progress and prints the tables.

use clap::Args;
use gigagas_hw::{
    model::{Design, Requirements},
    Options, Report,
};
use indicatif::{ProgressBar, ProgressStyle};
use std::{path::PathBuf, process::ExitCode};

/// Arguments of `gigagas-bench hw`.
#[derive(Debug, Args)]
pub(crate) struct HwArgs {
    /// The mainnet blocks (`../shared/data/mainnet`).
    #[arg(long, default_value = "../shared/data/mainnet")]
    mainnet: PathBuf,
    /// A generated chain (`gigagas-bench gen-chain --out DIR`); made here (300M gas, Amsterdam,
    /// the mainnet mix, 20 blocks) when the folder holds none.
    #[arg(long, default_value = "target/chains/amsterdam-mainnet-300m")]
    chain: PathBuf,
    /// Scratch folder on the disk being sized (test file, test store, datadir; removed after).
    #[arg(long, default_value = "target/hw/work")]
    work: PathBuf,
    /// Budgets per block, comma-separated (`3s`, `500ms`, or seconds).
    #[arg(long, value_delimiter = ',', default_value = "3s,6s,12s", value_parser = parse_seconds)]
    budget: Vec<f64>,
    /// A gas per block to size for (`300M`, `1G`, or gas): prints the smallest cores, single-core
    /// speed, IOPS and RAM that meet the first budget.
    #[arg(long, value_parser = parse_gas)]
    target_gas: Option<f64>,
    /// The state the cache should hold (`250G` bytes, …) [default: the chain's datadir].
    #[arg(long, value_parser = parse_gas)]
    state_bytes: Option<f64>,
    /// Rounds of the executor runs (medians).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Size of the raw-disk test file (`1G`, bytes).
    #[arg(long, default_value = "1G", value_parser = parse_gas)]
    disk_bytes: f64,
    /// Slots in the RocksDB test store.
    #[arg(long, default_value_t = 2_000_000)]
    rocksdb_slots: u64,
    /// Seconds per queue depth of the read sweeps.
    #[arg(long, default_value_t = 0.5)]
    sweep_seconds: f64,
    /// Skip the disk and RocksDB sweeps (no cold-read figures).
    #[arg(long)]
    skip_io: bool,
    /// Folders holding `replay.json` files (`testing/engine_replay.py --out`): the model's
    /// prediction of each measured configuration.
    #[arg(long, value_delimiter = ',')]
    check_replay: Vec<PathBuf>,
    /// Instead of measuring, the model of a saved report (`hw.json`, e.g. another machine's):
    /// `--check-replay` and `--target-gas` answered from it.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Only sweep random 4 KiB reads at queue depth 1..64 over the files of this folder (a
    /// datadir: the disk under a state written long before), `--sweep-seconds` per depth, page
    /// cache dropped; print the sweep (`--json`: as `hw.json` holds one).
    #[arg(long, conflicts_with_all = ["model", "check_state_scale"])]
    sweep_files: Option<PathBuf>,
    /// With `--sweep-files`: reads each thread submits together to an io_uring and waits for,
    /// as RocksDB's multi-gets read a table file's blocks (32: its `MultiGet` batch); 1: one
    /// `pread` at a time. The depths are then threads times this.
    #[arg(long, default_value_t = 1, requires = "sweep_files")]
    sweep_batch: usize,
    /// Only check the model's cold term against `state-scale.json` (`make state-scale`): each
    /// design's cold import predicted from its warm import's time and reads and the sweep of the
    /// state's files.
    #[arg(long, conflicts_with = "model")]
    check_state_scale: Option<PathBuf>,
    /// Cores of the machine the `--check-replay` runs were measured on [default: the model's].
    #[arg(long)]
    replay_cores: Option<usize>,
    /// Where `hw.json` (the whole report) and `hw.png` (its four charts) are written.
    #[arg(long, default_value = "target/hw")]
    out: PathBuf,
    /// Print one JSON object instead of the tables.
    #[arg(long)]
    json: bool,
}

/// `300M`, `1.5G`, `30000000`: a count with an optional k/M/G suffix (powers of ten).
fn parse_gas(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (num, mul) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1e3),
        Some('M' | 'm') => (&s[..s.len() - 1], 1e6),
        Some('G' | 'g') => (&s[..s.len() - 1], 1e9),
        _ => (s, 1.0),
    };
    num.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v * mul)
        .ok_or_else(|| format!("`{s}` is not a positive count (e.g. 300M, 1G)"))
}

/// `3s`, `500ms`, `2.5`: seconds.
fn parse_seconds(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let v = if let Some(ms) = s.strip_suffix("ms") {
        ms.parse::<f64>().map(|v| v / 1e3)
    } else {
        s.strip_suffix('s').unwrap_or(s).parse::<f64>()
    };
    v.ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .ok_or_else(|| format!("`{s}` is not a time (e.g. 3s, 500ms)"))
}

/// Runs `hw`.
pub(crate) fn run(args: HwArgs) -> Result<ExitCode, String> {
    let opts = Options {
        mainnet: args.mainnet.clone(),
        chain: args.chain.clone(),
        work: args.work.clone(),
        repeat: args.repeat,
        disk_bytes: args.disk_bytes as u64,
        rocksdb_slots: args.rocksdb_slots,
        sweep_seconds: args.sweep_seconds,
        skip_io: args.skip_io,
        budgets: args.budget.clone(),
        state_bytes: args.state_bytes,
    };
    if let Some(saved) = &args.model {
        return from_saved(saved, &args);
    }
    if let Some(dir) = &args.sweep_files {
        return sweep_files(dir, &args);
    }
    if let Some(path) = &args.check_state_scale {
        return check_state_scale(path, args.json);
    }
    if !opts.mainnet.join("blocks").is_dir() {
        return Err(format!(
            "{}: no mainnet blocks (../shared/data/mainnet must sit beside the project, or pass \
             --mainnet DIR)",
            opts.mainnet.display()
        ));
    }
    if !opts.chain.join("chain.rlp").is_file() {
        eprintln!(
            "hw: no generated chain in {}: generating one (300M gas, Amsterdam, mainnet mix, \
             20 blocks; once)",
            opts.chain.display()
        );
        let info = crate::gen_chain::generate(&crate::gen_chain::GenChainArgs {
            out: opts.chain.clone(),
            gas: 300_000_000,
            blocks: 20,
            mix: crate::gen_chain::Mix::Mainnet,
            fork: crate::gen_chain::Fork::Amsterdam,
            seed: 1,
            cold_slots: 100_000,
            spare_senders: 0,
            state_accounts: 0,
            state_slots: 0,
            state_contracts: 10_000,
            state_by_chain: false,
            state_gas: 1_000_000_000,
            hot_share: 50,
            hot_fraction: 1.0,
            state_datadir: None,
            state_prune_every: 0,
            mix_files_only: false,
            data: opts.mainnet.clone(),
            json: false,
        })?;
        eprintln!("hw: {} blocks generated in {:.0} s", info.block_count(), info.seconds);
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed} {msg:<18} [{bar:30}] {pos}/{len}")
            .expect("static template")
            .progress_chars("=> "),
    );
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let progress = |step: usize, done: u64, total: u64| {
        bar.set_message(gigagas_hw::STEPS[step]);
        bar.set_length(total.max(done));
        bar.set_position(done);
    };
    let (mut report, model) = gigagas_hw::measure(&opts, &progress).map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let first_budget = args.budget.first().copied().unwrap_or(3.0);
    report.requirements = args
        .target_gas
        .map(|g| model.requirements(g, first_budget, Design::Parallel, report.state_bytes));
    let cores = args.replay_cores.unwrap_or(model.cores);
    report.check =
        gigagas_hw::check::check(&model, &args.check_replay, cores).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let png = args.out.join("hw.png");
    match gigagas_hw::plot::write(&png, &report, &model) {
        Ok(()) => report.plot = Some(png.display().to_string()),
        Err(e) => eprintln!("warning: {e}"),
    }
    let json = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    let json_path = args.out.join("hw.json");
    std::fs::write(&json_path, &json).map_err(|e| format!("{}: {e}", json_path.display()))?;
    if args.json {
        println!("{json}");
    } else {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--model FILE`: the saved report's model against `--check-replay` and `--target-gas`.
fn from_saved(path: &std::path::Path, args: &HwArgs) -> Result<ExitCode, String> {
    let (machine, model) = gigagas_hw::load_model(path).map_err(|e| e.to_string())?;
    let cores = args.replay_cores.unwrap_or(machine.cores);
    let check =
        gigagas_hw::check::check(&model, &args.check_replay, cores).map_err(|e| e.to_string())?;
    let requirements = args.target_gas.map(|g| {
        let budget = args.budget.first().copied().unwrap_or(3.0);
        // The saved report's own state is not known here: `--state-bytes`, else none.
        model.requirements(g, budget, Design::Parallel, args.state_bytes.unwrap_or(0.0))
    });
    if args.json {
        let out = serde_json::json!({ "model": path, "machine": machine, "replay_cores": cores,
            "check": check, "requirements": requirements });
        println!("{}", serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "model of {} ({} cores, {}) against replays on {cores} cores:",
        path.display(),
        machine.cores,
        machine.cpu_model.as_deref().unwrap_or("unknown CPU")
    );
    print_check(&check);
    if let Some(q) = &requirements {
        print_requirements(q);
    }
    Ok(ExitCode::SUCCESS)
}

/// `--sweep-files DIR`: the sweep alone.
fn sweep_files(dir: &std::path::Path, args: &HwArgs) -> Result<ExitCode, String> {
    let time = std::time::Duration::from_secs_f64(args.sweep_seconds.max(0.05));
    let bar = ProgressBar::new(gigagas_hw::disk::DEPTHS.len() as u64).with_message("depths");
    let sweep = gigagas_hw::disk::files(dir, time, args.sweep_batch, &|| bar.inc(1))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&sweep).map_err(|e| e.to_string())?);
        return Ok(ExitCode::SUCCESS);
    }
    let cold = if sweep.cold { "page cache dropped" } else { "page cache NOT dropped" };
    let how = match sweep.batch {
        1 => "one pread at a time a thread".to_string(),
        n => format!("io_uring batches of {n} a thread; latency a batch's"),
    };
    println!("random 4 KiB reads of {} ({cold}; {how}):", dir.display());
    println!(
        "  {:>7} {:>5} {:>10} {:>9} {:>9} {:>11}",
        "threads", "depth", "IOPS", "p50 us", "p99 us", "cpu us/read"
    );
    for p in &sweep.points {
        println!(
            "  {:>7} {:>5} {:>10.0} {:>9.0} {:>9.0} {:>11.1}",
            p.queue_depth / sweep.batch,
            p.queue_depth,
            p.iops,
            p.p50_us,
            p.p99_us,
            p.cpu_us_per_read.unwrap_or(f64::NAN)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--check-state-scale FILE`: the cold term against the state-scale imports.
fn check_state_scale(path: &std::path::Path, json: bool) -> Result<ExitCode, String> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rows = gigagas_hw::scale::check(path, threads).map_err(|e| e.to_string())?;
    if json {
        println!("{}", serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        return Err(format!(
            "{}: no state size with a sweep of its files and warm runs counting trie-node reads \
             (run testing/state_scale.py again)",
            path.display()
        ));
    }
    println!("the cold term against the state-scale imports ({threads} cores):");
    println!(
        "  {:>11} {:<17} {:>3} {:>8} {:>6} {:>9} {:>10} {:>10} {:>7} {:>9} {:>9} {:>7}",
        "entries",
        "design",
        "qd",
        "IOPS",
        "cpu µs",
        "reads",
        "disk pred",
        "disk meas",
        "warm",
        "cold pred",
        "cold meas",
        "error"
    );
    for r in &rows {
        println!(
            "  {:>11} {:<17} {:>3} {:>7.0}{} {:>6.1} {:>9} {:>9.0}{} {:>10} {:>7.1} {:>9.1} {:>9.1} {:>+6.1}%",
            r.entries,
            r.design,
            r.queue_depth,
            r.iops,
            if r.io_uring { "u" } else { " " },
            r.cpu_us_per_read,
            r.reads,
            r.disk_reads_predicted,
            if r.traced { "*" } else { " " },
            r.disk_reads_measured,
            r.warm_mgas_per_s,
            r.predicted_mgas_per_s,
            r.measured_mgas_per_s,
            r.error * 100.0
        );
    }
    if rows.iter().any(|r| r.traced) {
        println!(
            "  * the disk reads of the design's traced run (else drawn uniformly over the pages)"
        );
    }
    if rows.iter().any(|r| r.io_uring) {
        println!(
            "  u the run's multi-gets read through io_uring: their reads at the batched sweep's \
             IOPS for the threads that make them (qd: those threads)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn gib(b: f64) -> f64 {
    b / (1u64 << 30) as f64
}

fn print_report(r: &Report) {
    let m = &r.machine;
    println!(
        "machine: {} cores, {}; RAM {:.1} GiB ({:.1} available, page cache {:.1})",
        m.cores,
        m.cpu_model.as_deref().unwrap_or("unknown CPU"),
        gib(m.mem_total_bytes as f64),
        gib(m.mem_available_bytes as f64),
        gib(m.page_cache_bytes as f64)
    );
    let e = &r.exec;
    println!(
        "\nexecutor, {} mainnet blocks in memory ({} txs, {:.1} Mgas): sequential 1 core {:.0} Mgas/s; \
         sender recovery 1 core {:.1} us/tx",
        e.blocks,
        e.transactions,
        e.gas as f64 / 1e6,
        e.sequential_mgas_per_s,
        e.recovery_single_s / e.transactions.max(1) as f64 * 1e6
    );
    println!(
        "  {:>7} {:>12} {:>12} {:>12} {:>12}",
        "threads", "block Mgas/s", "(projected)", "mega Mgas/s", "(projected)"
    );
    for p in e.projected.iter().filter(|p| !p.megablock) {
        let find = |v: &[gigagas_hw::exec::ScalingPoint], mega: bool| {
            v.iter().find(|q| q.threads == p.threads && q.megablock == mega).map(|q| q.mgas_per_s)
        };
        let cell = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |v| format!("{v:.0}"));
        println!(
            "  {:>7} {:>12} {:>12} {:>12} {:>12}",
            p.threads,
            cell(find(&e.measured, false)),
            cell(find(&e.projected, false)),
            cell(find(&e.measured, true)),
            cell(find(&e.projected, true)),
        );
    }
    let c = &r.chain;
    let g = c.gas as f64;
    println!(
        "\nengine (newPayload + forkchoiceUpdated in-process) on {} ({}, {} blocks, {:.0} Mgas, \
         {} txs); ms per block; recovery on {} threads:",
        c.chain,
        c.workload,
        c.sequential().blocks.len(),
        g / 1e6,
        c.transactions,
        c.recovery_threads
    );
    println!(
        "  {:<12} {:>8} {:>9} {:>9} {:>9} {:>10} {:>9} {:>7} {:>8}",
        "executor",
        "Mgas/s",
        "recovery",
        "BAL I/O",
        "execution",
        "state root",
        "commit",
        "checks",
        "speedup"
    );
    for run in &c.runs {
        let n = run.blocks.len().max(1) as f64;
        let total = run.sum(|b| {
            b.recovery_s
                + b.io_s
                + b.execution_s
                + b.state_root_s
                + b.commit_s
                + b.checks_s
                + b.payload_s
        });
        let name =
            if run.parallel { format!("parallel-{}", run.threads) } else { "sequential".into() };
        let speedup = r
            .chain_speedup
            .iter()
            .find(|(t, _)| run.parallel && *t == run.threads)
            .map_or_else(|| "1.00".into(), |(_, s)| format!("{s:.2}"));
        println!(
            "  {:<12} {:>8.1} {:>9.0} {:>9.0} {:>9.0} {:>10.0} {:>9.0} {:>7.0} {:>8}",
            name,
            g / 1e6 / total.max(1e-12),
            run.sum(|b| b.recovery_s) / n * 1e3,
            run.sum(|b| b.io_s) / n * 1e3,
            run.sum(|b| b.execution_s) / n * 1e3,
            run.sum(|b| b.state_root_s) / n * 1e3,
            run.sum(|b| b.commit_s) / n * 1e3,
            run.sum(|b| b.checks_s + b.payload_s) / n * 1e3,
            speedup
        );
    }
    println!(
        "  costs, ns per gas: recovery {:.3} (1 core), execution {:.3} (sequential), state root \
         {:.3} (after execution; waited for beside the parallel engine: {}), commit {:.3}, \
         checks {:.3} + payload decoding {:.3}; {:.2} store reads and {:.2} trie-node reads per \
         kgas; datadir {:.1} MiB",
        r.costs.recovery_ns_per_gas,
        r.costs.execution_ns_per_gas,
        r.costs.state_root_ns_per_gas,
        r.costs.state_root_parallel_ns_per_gas.map_or("-".into(), |v| format!("{v:.3}")),
        r.costs.commit_ns_per_gas,
        r.costs.checks_ns_per_gas,
        r.costs.payload_ns_per_gas,
        r.costs.store_reads_per_gas * 1e3,
        r.costs.trie_node_reads_per_gas * 1e3,
        c.datadir_bytes as f64 / (1u64 << 20) as f64
    );
    if let (Some(bg), Some(share)) = (&c.background, c.commit_beside_share()) {
        let n = bg.blocks.len().max(1) as f64;
        let name =
            if bg.parallel { format!("parallel-{}", bg.threads) } else { "sequential".into() };
        println!(
            "  {name} with each commit on the persistence thread beside the next block: \
             newPayload {:.1} ms a block, commit {:.1} ms of its own; the next block loses {:.2} \
             of the commit's time (the model's term; its CPU spread over {} cores: {:.2})",
            bg.sum(|b| b.new_payload_s()) / n * 1e3,
            bg.sum(|b| b.commit_s) / n * 1e3,
            share,
            r.machine.cores,
            1.0 / r.machine.cores.max(1) as f64
        );
    }
    for s in [&r.disk, &r.rocksdb_warm, &r.rocksdb_cold].into_iter().flatten() {
        let note = match (s.direct, s.cold) {
            (true, _) => " (O_DIRECT)",
            (false, true) => " (page cache dropped)",
            (false, false) if s.target.contains("cold") => " (page cache NOT dropped: not root)",
            _ => "",
        };
        let cells: Vec<String> = s
            .points
            .iter()
            .map(|p| format!("qd{} {:.0}k ({:.0} us)", p.queue_depth, p.iops / 1e3, p.p50_us))
            .collect();
        println!("\n{}{note}: IOPS (p50 latency): {}", s.target, cells.join(", "));
    }
    println!(
        "\nlargest gas per block on this machine ({} threads), state root, commit and recovery included:",
        m.cores
    );
    println!(
        "  {:>7} {:>10} {:>12} {:>12}  binds first: warm | cold",
        "budget", "design", "warm Mgas", "cold Mgas"
    );
    for row in &r.capacity {
        println!(
            "  {:>6}s {:>10} {:>12.0} {:>12}  {} | {}",
            row.budget_s,
            row.design.name(),
            row.max_gas_warm / 1e6,
            row.max_gas_cold.map_or_else(|| "-".into(), |g| format!("{:.0}", g / 1e6)),
            row.binding_warm,
            if row.max_gas_cold.is_some() { row.binding } else { "-" }
        );
    }
    println!(
        "\nmemory: node RSS {:.2} GiB before the chain's first block, +{:.2} GiB at the peak per Ggas of \
         block; peak RSS of this measurement {:.2} GiB. Cache for a state of {:.2} GiB: at most \
         {:.0}% of RAM (the sizing study's OOM headroom).",
        gib(r.costs.rss_base_bytes),
        gib(r.costs.rss_bytes_per_gas * 1e9),
        gib(r.peak_rss_bytes.unwrap_or(0) as f64),
        gib(r.state_bytes),
        gigagas_hw::model::CACHE_SHARE * 100.0
    );
    println!(
        "\nEIP-7870's machines at this machine's single-core speed (per-block parallel, 3 s):"
    );
    for row in &r.eip7870 {
        println!(
            "  {:<26} {:>2} threads, {:>3.0} GiB, {:.0}k IOPS: {:>6.0} Mgas warm, {:>6.0} Mgas every read cold",
            row.role,
            row.threads,
            gib(row.ram_bytes),
            row.iops / 1e3,
            row.max_gas_3s_warm / 1e6,
            row.max_gas_3s_cold / 1e6
        );
    }
    println!(
        "  cold: {:.2} reads per kgas, counted on the chain's state ({:.0} MiB on disk); a \
         larger state reads more trie nodes per gas (docs/hardware.md, \"At scale\")",
        r.costs.reads_per_gas() * 1e3,
        r.chain.datadir_bytes as f64 / (1u64 << 20) as f64
    );
    if let Some(q) = &r.requirements {
        print_requirements(q);
    }
    if !r.check.is_empty() {
        println!("\nmodel (warm) vs measured Engine API replays:");
        print_check(&r.check);
    }
    if let Some(p) = &r.plot {
        println!("\nplot: {p} (and hw.json beside it)");
    }
}

fn print_check(check: &[gigagas_hw::check::CheckRow]) {
    println!(
        "  {:<22} {:>4} {:>10} {:>10} {:>10} {:>7}",
        "config", "runs", "Mgas/blk", "measured", "model", "error"
    );
    for c in check {
        println!(
            "  {:<22} {:>4} {:>10.0} {:>10.1} {:>10.1} {:>+6.1}%",
            c.config,
            c.runs,
            c.gas_per_block / 1e6,
            c.measured_mgas_per_s,
            c.predicted_mgas_per_s,
            c.error * 100.0
        );
        if !c.stages.is_empty() {
            let cells: Vec<String> = c
                .stages
                .iter()
                .map(|s| format!("{} {:.0}/{:.0}", s.stage, s.measured_ms, s.model_ms))
                .collect();
            println!("  {:<22} ms per block, measured/model: {}", "", cells.join(", "));
        }
    }
}

fn print_requirements(q: &Requirements) {
    println!(
        "\n{:.0} Mgas per block within {} s ({}), from the model:",
        q.gas / 1e6,
        q.budget_s,
        q.design.name()
    );
    match q.cores {
        Some(c) => println!("  cores at this single-core speed: {c}"),
        None => println!(
            "  cores at this single-core speed: none suffices (serial stages exceed the budget)"
        ),
    }
    println!(
        "  single-core speed at this machine's cores: {:.2}x this one (sequential {:.0} Mgas/s on the mainnet blocks)",
        q.core_speed_ratio, q.sequential_mgas_per_s
    );
    match q.iops_at_cores {
        Some(i) => println!(
            "  IOPS with every read cold, at this machine's cores: {:.0}k ({:.2} reads per kgas, \
             counted on a state of {:.0} MiB on disk: the state size this assumes)",
            i / 1e3,
            q.reads_per_gas * 1e3,
            q.reads_state_bytes / (1u64 << 20) as f64
        ),
        None => println!("  IOPS: no time is left for cold reads at this machine's speed"),
    }
    println!(
        "  RAM: {:.1} GiB (node {:.2} GiB + cache {:.2} GiB, cache <= {:.0}% of RAM, 25% headroom)",
        gib(q.ram_bytes),
        gib(q.rss_bytes),
        gib(q.cache_bytes),
        gigagas_hw::model::CACHE_SHARE * 100.0
    );
}
