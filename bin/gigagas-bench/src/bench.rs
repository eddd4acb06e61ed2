//! `gigagas-bench bench`: the executor on the mainnet blocks, validated and timed.

use crate::{
    bench_args::{BenchArgs, BenchError},
    report::{self, Report, RunRow},
    util::{bar, median, pool, recover_all},
};
use gigagas_bal::{json as bal_json, BlockAccessList};
use gigagas_bench::{baseline::execute_baseline, projection::BlockCost};
use gigagas_executor::{
    compare_outcomes,
    parallel::{execute_parallel, ParallelBlock, ParallelConfig, ParallelRun},
    sequential::{execute_sequential, execute_sequential_without_bal},
    validate_header, BlockOutcome, Scheduler,
};
use gigagas_primitives::ChainSpec;
use gigagas_state::mainnet::{self, MainnetBlock};
use std::{
    collections::BTreeSet,
    process::ExitCode,
    time::{Duration, Instant},
};

pub(crate) fn run(args: BenchArgs) -> Result<ExitCode, BenchError> {
    if args.state == "rocksdb" {
        return crate::bench_io::run(args);
    }
    let chain = ChainSpec::mainnet();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if args.threads.is_empty() {
        if cores > 1 {
            vec![1, cores]
        } else {
            vec![1]
        }
    } else {
        args.threads.clone()
    };
    if threads.contains(&0) {
        return Err(BenchError::Args("--threads must be at least 1".into()));
    }
    let schedulers: Vec<Scheduler> = match args.scheduler.as_str() {
        "all" => Scheduler::ALL.to_vec(),
        s => vec![s.parse().map_err(BenchError::Args)?],
    };
    let repeat = args.repeat.max(1);

    let only = (!args.blocks.is_empty()).then_some(args.blocks.as_slice());
    let total = match only {
        Some(o) => o.len() as u64,
        None => mainnet::block_numbers(&args.data)?.len() as u64,
    };
    let pb = bar(total, "loading");
    let data = mainnet::load(&args.data, only, &|| pb.inc(1))?;
    pb.finish_and_clear();
    let n_blocks = data.len();
    let batches: Vec<usize> = args
        .batch
        .iter()
        .map(|b| match b.as_str() {
            "all" => Ok(n_blocks.max(1)),
            s => s.parse::<usize>().ok().filter(|&k| k > 0).ok_or_else(|| {
                BenchError::Args(format!("--batch: `{s}` is not a positive number or `all`"))
            }),
        })
        .collect::<Result<BTreeSet<_>, _>>()?
        .into_iter()
        .collect();
    let gas: u64 = data.iter().map(|b| b.block.header.gas_used).sum();
    let txs: usize = data.iter().map(|b| b.block.transactions.len()).sum();

    // Every timed job runs once per round, round after round, so that slow drifts of the
    // machine's speed hit all of them alike; medians over the rounds are reported.
    let mut jobs = vec![Job::Baseline, Job::Sequential, Job::SequentialWithoutBal];
    for &threads in &threads {
        for &scheduler in &schedulers {
            for &batch in &batches {
                jobs.push(Job::Parallel(ParallelConfig { threads, scheduler, batch }));
            }
        }
    }
    // The machine's own ceiling: as many independent plain loops as threads, at once.
    jobs.extend(threads.iter().filter(|&&t| t > 1).map(|&t| Job::Ceiling(t)));
    let calibration = ParallelConfig { threads: 1, scheduler: Scheduler::Ols, batch: n_blocks };
    if args.project {
        jobs.push(Job::Calibrate(calibration));
    }
    // Every job per round, plus recovery and the reference once.
    let progress = bar((jobs.len() * repeat + 2) as u64, "running");
    let mut failures: Vec<String> = Vec::new();

    // Sender recovery, timed on its own (parallel on the most threads, and on one thread).
    let max_threads = *threads.iter().max().unwrap_or(&1);
    let recovery_pool = pool(max_threads);
    let one_pool = pool(1);
    let mut recovery_times = Vec::new();
    let mut senders = Vec::new();
    for _ in 0..repeat {
        let t = Instant::now();
        match recover_all(&recovery_pool, &chain, &data) {
            Ok(s) => senders = s,
            Err(e) => {
                progress.finish_and_clear();
                eprintln!("error: {e}");
                return Ok(ExitCode::FAILURE);
            }
        }
        recovery_times.push(t.elapsed());
    }
    let recovery_parallel = median(recovery_times);
    let recovery_single = {
        let t = Instant::now();
        let _ = recover_all(&one_pool, &chain, &data);
        t.elapsed()
    };
    progress.inc(1);

    // The sequential reference: validated once, against the headers.
    let mut reference: Vec<Option<BlockOutcome>> = Vec::with_capacity(n_blocks);
    let mut receipts_root_checked = 0;
    for (b, s) in data.iter().zip(&senders) {
        match execute_sequential(&chain, &b.block, s, &b.pre_state).and_then(|o| {
            let bal = o.bal.as_deref().unwrap_or_default();
            validate_header(&chain, &b.block, &o, bal).map(|c| (o, c))
        }) {
            Ok((o, check)) => {
                receipts_root_checked += check.receipts_root as usize;
                reference.push(Some(o));
            }
            Err(e) => {
                failures.push(format!("sequential reference: {e}"));
                reference.push(None);
            }
        }
    }
    progress.inc(1);

    if let Some(dir) = &args.dump_bal {
        for (b, r) in data.iter().zip(&reference) {
            if let Some(r) = r {
                if let Some(bal) = &r.bal {
                    bal_json::write_file(dir, b.block.number(), bal)?;
                }
            }
        }
    }
    let given_bals: Option<Vec<BlockAccessList>> = match &args.bal {
        Some(dir) => Some(
            data.iter()
                .map(|b| bal_json::read_file(dir, b.block.number()))
                .collect::<Result<_, _>>()?,
        ),
        None => None,
    };

    let empty: BlockAccessList = Vec::new();
    let inputs: Vec<ParallelBlock<'_>> = data
        .iter()
        .zip(&senders)
        .zip(&reference)
        .enumerate()
        .map(|(i, ((b, s), r))| ParallelBlock {
            block: &b.block,
            senders: s.into(),
            pre_state: &b.pre_state,
            bal: match (&given_bals, r) {
                (Some(g), _) => &g[i],
                (None, Some(r)) => r.bal.as_ref().unwrap_or(&empty),
                (None, None) => &empty,
            },
            gas_used_hint: r.as_ref().map(|r| r.tx_gas_used.as_slice()),
        })
        .collect();

    let pools: Vec<(usize, rayon::ThreadPool)> = threads.iter().map(|&t| (t, pool(t))).collect();
    let pool_for = |t: usize| pools.iter().find(|(n, _)| *n == t).map_or(&one_pool, |(_, p)| p);
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); jobs.len()];
    let mut longest: Vec<Vec<Duration>> = vec![Vec::new(); jobs.len()];
    let mut fallbacks: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); jobs.len()];
    let mut job_bad: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); jobs.len()];
    let mut calibration_runs = Vec::new();
    let mut tally = Tally::default();
    for _ in 0..repeat {
        for (j, job) in jobs.iter().enumerate() {
            match *job {
                Job::Baseline | Job::Sequential | Job::SequentialWithoutBal => {
                    let t = Instant::now();
                    let rec = args.include_recovery.then(|| recover_all(&one_pool, &chain, &data));
                    for (b, s) in data.iter().zip(&senders) {
                        let (block, pre) = (&b.block, &b.pre_state);
                        match job {
                            Job::Baseline => drop(execute_baseline(&chain, block, s, pre)),
                            Job::Sequential => drop(execute_sequential(&chain, block, s, pre)),
                            _ => drop(execute_sequential_without_bal(&chain, block, s, pre)),
                        }
                    }
                    drop(rec);
                    times[j].push(t.elapsed());
                }
                Job::Ceiling(n) => {
                    let t = Instant::now();
                    pool_for(n).broadcast(|_| {
                        for (b, s) in data.iter().zip(&senders) {
                            drop(execute_baseline(&chain, &b.block, s, &b.pre_state));
                        }
                    });
                    // Time per pass of the blocks: n passes ran at once.
                    times[j].push(t.elapsed() / n as u32);
                }
                Job::Parallel(config) | Job::Calibrate(config) => {
                    let rec = args.include_recovery.then(|| {
                        let t = Instant::now();
                        let _ = recover_all(pool_for(config.threads), &chain, &data);
                        t.elapsed()
                    });
                    let run = execute_parallel(&chain, &inputs, config);
                    times[j].push(run.wall + rec.unwrap_or_default());
                    longest[j].push(run.longest_tx());
                    let checked = check_run(&chain, &data, &reference, &inputs, &run, &mut tally);
                    fallbacks[j].extend(checked.fallbacks);
                    job_bad[j].extend(checked.bad);
                    if matches!(job, Job::Calibrate(_)) {
                        calibration_runs.push(run);
                    }
                }
            }
            progress.inc(1);
        }
    }
    let baseline = median(times[0].clone());
    let sequential = median(times[1].clone());
    let sequential_without_bal = median(times[2].clone());
    let ceilings: Vec<report::CeilingRow> = jobs
        .iter()
        .enumerate()
        .filter_map(|(j, job)| match *job {
            Job::Ceiling(threads) => {
                let per_pass = median(times[j].clone()).as_secs_f64();
                Some(report::CeilingRow {
                    threads,
                    seconds_per_pass: per_pass,
                    speedup: baseline.as_secs_f64() / per_pass,
                })
            }
            _ => None,
        })
        .collect();
    let ceiling_at =
        |threads: usize| ceilings.iter().find(|c| c.threads == threads).map_or(1.0, |c| c.speedup);
    let mut rows = Vec::new();
    for (j, job) in jobs.iter().enumerate() {
        let Job::Parallel(config) = *job else { continue };
        let seconds = median(times[j].clone()).as_secs_f64();
        let speedup = baseline.as_secs_f64() / seconds;
        rows.push(RunRow {
            threads: config.threads,
            scheduler: config.scheduler,
            batch: config.batch,
            gas,
            seconds,
            mgas_per_s: gas as f64 / 1e6 / seconds,
            speedup,
            vs_sequential: sequential.as_secs_f64() / seconds,
            vs_ceiling: speedup / ceiling_at(config.threads),
            longest_tx_ms: median(longest[j].clone()).as_secs_f64() * 1e3,
            fallback_blocks: fallbacks[j].iter().copied().collect(),
            blocks_validated: n_blocks
                - data
                    .iter()
                    .zip(&reference)
                    .filter(|(b, r)| r.is_none() || job_bad[j].contains(&b.block.number()))
                    .count(),
        });
    }

    // Projection from one-thread latencies (median over the repetitions).
    let mut stages = None;
    let projection = if args.project {
        let costs = block_costs(&data, &reference, &calibration_runs);
        let sum = |f: fn(&BlockCost) -> u64| costs.iter().map(f).sum::<u64>() as f64 / 1e6;
        stages = Some(report::Stages {
            prepare_ms: sum(|c| c.prepare_nanos),
            execute_ms: sum(|c| c.tx_nanos.iter().sum()),
            commit_ms: sum(|c| c.commit_nanos),
        });
        Some(report::projection_rows(&costs, &batches_for_projection(n_blocks), baseline, &rows))
    } else {
        None
    };
    progress.finish_and_clear();

    failures.append(&mut tally.failures);
    for (b, r) in data.iter().zip(&reference) {
        if r.is_none() {
            tally.bad_blocks.insert(b.block.number());
        }
    }
    let blocks_validated = n_blocks - tally.bad_blocks.len();
    let mut report = Report {
        cpu_model: report::cpu_model(),
        blocks: n_blocks,
        first_block: data.first().map_or(0, |b| b.block.number()),
        last_block: data.last().map_or(0, |b| b.block.number()),
        transactions: txs,
        gas,
        blocks_validated,
        reference_validated: reference.iter().filter(|r| r.is_some()).count(),
        receipts_root_checked,
        repeat,
        include_recovery: args.include_recovery,
        cores,
        recovery_parallel_s: recovery_parallel.as_secs_f64(),
        recovery_single_s: recovery_single.as_secs_f64(),
        recovery_threads: max_threads,
        baseline_s: baseline.as_secs_f64(),
        sequential_s: sequential.as_secs_f64(),
        sequential_without_bal_s: sequential_without_bal.as_secs_f64(),
        runs: rows,
        ceilings,
        projection,
        stages,
        peak_rss_mb: report::peak_rss_mb(),
        failures: failures.clone(),
        bal_source: args.bal.as_ref().map(|p| p.display().to_string()),
        plot: None,
        plot_error: None,
    };
    if !args.no_plot {
        match crate::bench_plot::write(&args.plot, &report) {
            Ok(()) => report.plot = Some(args.plot.display().to_string()),
            Err(e) => report.plot_error = Some(e),
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("report serializes"));
    } else if args.verbose {
        report::print_details(&report);
        println!();
        report::print_summary(&report);
    } else {
        report::print_summary(&report);
    }
    if failures.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for f in failures.iter().take(20) {
            eprintln!("FAILED: {f}");
        }
        Ok(ExitCode::FAILURE)
    }
}

fn batches_for_projection(n_blocks: usize) -> Vec<usize> {
    let mut b: Vec<usize> = [1, 2, 5, 10, 25].into_iter().filter(|&k| k < n_blocks).collect();
    b.push(n_blocks.max(1));
    b
}

/// One timed job of a round.
#[derive(Debug, Clone, Copy)]
enum Job {
    /// The plain revm loop.
    Baseline,
    /// The sequential reference pipeline.
    Sequential,
    /// The sequential pipeline without the BAL builder.
    SequentialWithoutBal,
    /// A parallel configuration that the report lists.
    Parallel(ParallelConfig),
    /// The one-thread run whose latencies feed the projection.
    Calibrate(ParallelConfig),
    /// `n` plain revm loops over all blocks at once on `n` threads: the machine's scaling bound.
    Ceiling(usize),
}

/// Failures seen so far, one per block.
#[derive(Default)]
struct Tally {
    failures: Vec<String>,
    bad_blocks: BTreeSet<u64>,
}

/// What [`check_run`] found in one parallel run.
struct Checked {
    /// Blocks re-executed in order (pre-Cancun SELFDESTRUCT then access).
    fallbacks: BTreeSet<u64>,
    /// Blocks that failed a check.
    bad: BTreeSet<u64>,
}

/// Validates every block of a parallel run against the reference and the header.
fn check_run(
    chain: &ChainSpec,
    data: &[MainnetBlock],
    reference: &[Option<BlockOutcome>],
    inputs: &[ParallelBlock<'_>],
    run: &ParallelRun,
    tally: &mut Tally,
) -> Checked {
    let mut fallbacks = BTreeSet::new();
    let mut bad = BTreeSet::new();
    for (((b, r), outcome), input) in data.iter().zip(reference).zip(&run.outcomes).zip(inputs) {
        let number = b.block.number();
        let checked = outcome.as_ref().map_err(Clone::clone).and_then(|o| {
            if let Some(r) = r {
                compare_outcomes(r, o, input.bal)?;
            }
            validate_header(chain, &b.block, o, input.bal)?;
            Ok(o)
        });
        match checked {
            Ok(o) => {
                if o.fallback.is_some() {
                    fallbacks.insert(number);
                }
            }
            Err(e) => {
                bad.insert(number);
                if tally.bad_blocks.insert(number) {
                    tally.failures.push(format!("parallel: {e}"));
                }
            }
        }
    }
    Checked { fallbacks, bad }
}

/// Per-block costs for the projection (see [`gigagas_bench::projection::block_costs`]).
fn block_costs(
    data: &[MainnetBlock],
    reference: &[Option<BlockOutcome>],
    runs: &[ParallelRun],
) -> Vec<BlockCost> {
    let blocks: Vec<_> = data.iter().map(|b| &b.block).collect();
    let gas_used: Vec<Option<&[u64]>> =
        reference.iter().map(|r| r.as_ref().map(|r| r.tx_gas_used.as_slice())).collect();
    gigagas_bench::projection::block_costs(&blocks, &gas_used, runs)
}
