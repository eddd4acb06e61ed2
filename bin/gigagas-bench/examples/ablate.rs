//! Paired ablation of the executors over the 52 mainnet blocks in `../shared/data/mainnet`.
//!
//! Every variant runs once per round, round after round, so that slow drifts of the machine's
//! speed hit all of them alike. For each variant it prints the median time of one pass over the
//! 52 blocks (ms), the fastest pass, the ratio of the first variant's median to this one's, and
//! the median of the per-round ratios (first variant's time / this variant's time in the same
//! round: the figure least disturbed by a noisy machine).
//!
//! ```sh
//! cargo run --release -p gigagas-bench --example ablate -- ROUNDS VARIANT...
//! cargo run --release -p gigagas-bench --example ablate -- 21 baseline sequential par1b52 par2b52 ceil2
//! ```
//!
//! Variants:
//! - `baseline`: the plain revm loop (`execute_baseline`);
//! - `sequential`: the sequential reference; `seqnobal`: the same without revm's BAL builder;
//! - `par<T>b<K>[g|l]`: the parallel executor on `T` threads, batches of `K` blocks (52 = the
//!   all-blocks megablock), scheduler OLS, or gas-used (`g`) / gas-limit (`l`) heaviest first;
//! - `ceil<N>`: `N` plain loops over all blocks at once, time per pass (the machine's ceiling);
//! - `dpar<N>`: `N` one-thread parallel executors over all blocks at once, time per pass;
//! - `split<N>`: `N` one-thread parallel executors at once, each over its own share of the
//!   blocks (contiguous, equal gas): block-level parallelism, no block split between cores;
//! - `blooms`: only the receipts' logs blooms of the reference, memoized per block as the
//!   executors compute them.
//!
//! Environment: `STAGES=1` prints the stage timers of every parallel pass (BAL preparation,
//! commits and transactions, summed over workers); `ALL=1` prints every pass's time.
//! Performance figures for docs/benchmarks.md come from `gigagas bench` and criterion; this tool
//! is for taking the executor apart.

use alloy_primitives::Bloom;
use gigagas_bench::baseline::execute_baseline;
use gigagas_executor::{
    parallel::{execute_parallel, ParallelBlock, ParallelConfig, ParallelRun},
    sequential::{execute_sequential, execute_sequential_without_bal},
    BlockOutcome, BloomMemo, ExecutionError, Scheduler,
};
use gigagas_primitives::ChainSpec;
use gigagas_state::mainnet::{self, MainnetBlock};
use std::{error::Error, time::Instant};

/// One thing to time.
#[derive(Debug, Clone, Copy)]
enum Variant {
    Baseline,
    Sequential,
    SequentialWithoutBal,
    Parallel(ParallelConfig),
    Ceiling(usize),
    Parallels(usize),
    Split(usize),
    Blooms,
}

fn parse(name: &str, blocks: usize) -> Result<Variant, String> {
    let number =
        |s: &str| s.parse::<usize>().map_err(|_| format!("variant {name}: bad number {s:?}"));
    Ok(match name {
        "baseline" => Variant::Baseline,
        "sequential" => Variant::Sequential,
        "seqnobal" => Variant::SequentialWithoutBal,
        "blooms" => Variant::Blooms,
        _ => {
            if let Some(n) = name.strip_prefix("ceil") {
                Variant::Ceiling(number(n)?.max(1))
            } else if let Some(n) = name.strip_prefix("split") {
                Variant::Split(number(n)?.max(1))
            } else if let Some(n) = name.strip_prefix("dpar") {
                Variant::Parallels(number(n)?.max(1))
            } else if let Some((threads, batch)) =
                name.strip_prefix("par").and_then(|rest| rest.split_once('b'))
            {
                let (batch, scheduler) = match batch.as_bytes().last() {
                    Some(b'g') => (&batch[..batch.len() - 1], Scheduler::GasUsed),
                    Some(b'l') => (&batch[..batch.len() - 1], Scheduler::GasLimit),
                    _ => (batch, Scheduler::Ols),
                };
                let batch = number(batch)?.clamp(1, blocks.max(1));
                Variant::Parallel(ParallelConfig { threads: number(threads)?, scheduler, batch })
            } else {
                return Err(format!("unknown variant {name:?} (see the example's documentation)"));
            }
        }
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn ms(nanos: u64) -> f64 {
    nanos as f64 / 1e6
}

fn check(run: &ParallelRun) -> Result<(), ExecutionError> {
    run.outcomes.iter().find_map(|o| o.as_ref().err()).map_or(Ok(()), |e| Err(e.clone()))
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let rounds: usize = match args.next() {
        Some(r) => r.parse().map_err(|_| format!("ROUNDS: not a number: {r:?}"))?,
        None => {
            return Err("usage: ablate ROUNDS VARIANT... (see the example's documentation)".into())
        }
    };
    let names: Vec<String> = args.collect();
    if names.is_empty() {
        return Err("no variant given".into());
    }
    let dir = mainnet::default_dir();
    if !dir.is_dir() {
        return Err(format!(
            "{} is missing: the shared data must sit beside the project",
            dir.display()
        )
        .into());
    }
    let chain = ChainSpec::mainnet();
    let data: Vec<MainnetBlock> = mainnet::load(&dir, None, &|| {})?;
    let variants = names.iter().map(|n| parse(n, data.len())).collect::<Result<Vec<_>, _>>()?;
    let senders =
        data.iter().map(|b| b.block.par_recover(&chain)).collect::<Result<Vec<_>, _>>()?;
    let reference: Vec<BlockOutcome> = data
        .iter()
        .zip(&senders)
        .map(|(b, s)| execute_sequential(&chain, &b.block, s, &b.pre_state))
        .collect::<Result<_, _>>()?;
    let inputs = reference
        .iter()
        .zip(&data)
        .zip(&senders)
        .map(|((r, b), s)| {
            let bal = r.bal.as_ref().ok_or("the sequential reference built no BAL")?;
            let (block, pre_state) = (&b.block, &b.pre_state);
            Ok(ParallelBlock {
                block,
                senders: s.into(),
                pre_state,
                bal,
                gas_used_hint: Some(&r.tx_gas_used),
            })
        })
        .collect::<Result<Vec<_>, &str>>()?;
    let stages = std::env::var_os("STAGES").is_some();
    let plain_pass = || -> Result<(), ExecutionError> {
        for (b, s) in data.iter().zip(&senders) {
            execute_baseline(&chain, &b.block, s, &b.pre_state)?;
        }
        Ok(())
    };

    let mut times: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for _ in 0..rounds {
        for (k, variant) in variants.iter().enumerate() {
            let start = Instant::now();
            let mut passes = 1;
            match *variant {
                Variant::Baseline => plain_pass()?,
                Variant::Sequential | Variant::SequentialWithoutBal => {
                    for (b, s) in data.iter().zip(&senders) {
                        let (block, pre) = (&b.block, &b.pre_state);
                        if matches!(variant, Variant::Sequential) {
                            execute_sequential(&chain, block, s, pre)?;
                        } else {
                            execute_sequential_without_bal(&chain, block, s, pre)?;
                        }
                    }
                }
                Variant::Parallel(config) => {
                    let run = execute_parallel(&chain, &inputs, config);
                    check(&run)?;
                    if stages {
                        let tx: u64 = run.tx_nanos.iter().flatten().sum();
                        let (prepare, commit) =
                            (run.prepare_nanos.iter().sum(), run.commit_nanos.iter().sum());
                        eprintln!(
                            "{}: prepare {:.1} ms, commit {:.1} ms, transactions {:.1} ms",
                            names[k],
                            ms(prepare),
                            ms(commit),
                            ms(tx)
                        );
                    }
                }
                Variant::Ceiling(n) => {
                    passes = n;
                    std::thread::scope(|scope| {
                        let handles: Vec<_> = (0..n).map(|_| scope.spawn(plain_pass)).collect();
                        handles.into_iter().try_for_each(|h| h.join().unwrap_or(Ok(())))
                    })?;
                }
                Variant::Parallels(n) => {
                    passes = n;
                    let config =
                        ParallelConfig { threads: 1, scheduler: Scheduler::Ols, batch: data.len() };
                    let runs: Vec<Option<ParallelRun>> = std::thread::scope(|scope| {
                        let handles: Vec<_> = (0..n)
                            .map(|_| scope.spawn(|| execute_parallel(&chain, &inputs, config)))
                            .collect();
                        handles.into_iter().map(|h| h.join().ok()).collect()
                    });
                    for run in runs {
                        let run = run.ok_or("a parallel run panicked")?;
                        check(&run)?;
                        if stages {
                            let tx: u64 = run.tx_nanos.iter().flatten().sum();
                            eprintln!("{}: transactions {:.1} ms", names[k], ms(tx));
                        }
                    }
                }
                Variant::Split(n) => {
                    // n one-thread executors, each over its own share of the blocks (by gas).
                    let total: u64 = data.iter().map(|b| b.block.header.gas_used).sum();
                    let mut shares: Vec<Vec<ParallelBlock<'_>>> = vec![Vec::new(); n];
                    let mut acc = 0u64;
                    for (b, input) in data.iter().zip(&inputs) {
                        let k = ((acc as u128 * n as u128) / total.max(1) as u128) as usize;
                        shares[k.min(n - 1)].push(*input);
                        acc += b.block.header.gas_used;
                    }
                    let runs: Vec<Option<ParallelRun>> = std::thread::scope(|scope| {
                        let handles: Vec<_> = shares
                            .iter()
                            .map(|share| {
                                let config = ParallelConfig {
                                    threads: 1,
                                    scheduler: Scheduler::Ols,
                                    batch: share.len().max(1),
                                };
                                let chain = &chain;
                                scope.spawn(move || execute_parallel(chain, share, config))
                            })
                            .collect();
                        handles.into_iter().map(|h| h.join().ok()).collect()
                    });
                    let mut tx = 0;
                    for run in runs {
                        let run = run.ok_or("a parallel run panicked")?;
                        check(&run)?;
                        tx += run.tx_nanos.iter().flatten().sum::<u64>();
                    }
                    if stages {
                        eprintln!("{}: transactions {:.1} ms", names[k], ms(tx));
                    }
                }
                Variant::Blooms => {
                    let mut all = Bloom::ZERO;
                    for r in &reference {
                        let mut memo = BloomMemo::default();
                        for receipt in &r.receipts {
                            all |= memo.logs_bloom(receipt.logs());
                        }
                    }
                    std::hint::black_box(all);
                }
            }
            times[k].push(start.elapsed().as_secs_f64() * 1e3 / passes as f64);
        }
    }

    if std::env::var_os("ALL").is_some() {
        for (name, t) in names.iter().zip(&times) {
            let t: Vec<String> = t.iter().map(|x| format!("{x:.1}")).collect();
            eprintln!("{name}: {}", t.join(" "));
        }
    }
    let first = times[0].clone();
    let first_median = median(first.clone());
    for (name, t) in names.iter().zip(&times) {
        let paired = median(first.iter().zip(t).map(|(a, b)| a / b).collect());
        let m = median(t.clone());
        let fastest = t.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "{name:24} median {m:7.1} ms  fastest {fastest:7.1} ms  first/this {:.3}  paired {paired:.3}",
            first_median / m
        );
    }
    Ok(())
}
