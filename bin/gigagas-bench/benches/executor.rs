//! Criterion benchmarks of the executors over the 52 mainnet blocks (555.8 Mgas), all measured
//! in one process so that ratios compare like with like. Throughput is reported in gas/s.
//!
//! `cargo bench -p gigagas-bench --bench executor` (or `make bench`).

#![allow(missing_docs)]

use alloy_primitives::{logs_bloom, Bloom};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use gigagas_bal::{validate_structure, writes::IndexedWrites, BalCodes, BalKeys};
use gigagas_bench::baseline::execute_baseline;
use gigagas_executor::{
    parallel::{execute_parallel, ParallelConfig},
    sequential::{execute_sequential, execute_sequential_without_bal},
    BloomMemo, Scheduler,
};
use gigagas_primitives::ChainSpec;
use gigagas_state::mainnet;
use std::{hint::black_box, time::Duration};

fn executors(c: &mut Criterion) {
    let dir = mainnet::default_dir();
    assert!(dir.is_dir(), "../shared/data/mainnet is missing ({})", dir.display());
    let chain = ChainSpec::mainnet();
    let data = mainnet::load(&dir, None, &|| {}).expect("load mainnet data");
    let senders: Vec<_> =
        data.iter().map(|b| b.block.par_recover(&chain).expect("recover")).collect();
    let reference: Vec<_> = data
        .iter()
        .zip(&senders)
        .map(|(b, s)| execute_sequential(&chain, &b.block, s, &b.pre_state).expect("sequential"))
        .collect();
    assert!(reference.iter().all(|r| r.bal.is_some()), "the sequential reference builds a BAL");
    let empty = Vec::new();
    let inputs = gigagas_bench::exec::parallel_inputs(&data, &senders, &reference, &empty);
    let gas: u64 = data.iter().map(|b| b.block.header.gas_used).sum();

    let mut group = c.benchmark_group("mainnet-52");
    group.throughput(Throughput::Elements(gas));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8))
        .warm_up_time(Duration::from_secs(2));
    group.bench_function("baseline", |b| {
        b.iter(|| {
            for (blk, s) in data.iter().zip(&senders) {
                execute_baseline(&chain, &blk.block, s, &blk.pre_state).expect("baseline");
            }
        })
    });
    group.bench_function("sequential", |b| {
        b.iter(|| {
            for (blk, s) in data.iter().zip(&senders) {
                execute_sequential(&chain, &blk.block, s, &blk.pre_state).expect("sequential");
            }
        })
    });
    group.bench_function("sequential-without-bal-builder", |b| {
        b.iter(|| {
            for (blk, s) in data.iter().zip(&senders) {
                execute_sequential_without_bal(&chain, &blk.block, s, &blk.pre_state)
                    .expect("sequential");
            }
        })
    });
    // The blooms' workload: every log address and topic is hashed into its receipt's bloom; a
    // per-block memo hashes each distinct one once.
    let (mut logs, mut hashed, mut distinct) = (0, 0, 0);
    for r in &reference {
        let mut seen = std::collections::HashSet::new();
        for log in r.receipts.iter().flat_map(|receipt| receipt.logs()) {
            logs += 1;
            hashed += 1 + log.topics().len();
            // Tagged: an address and a topic equal to the padded address hash differently.
            seen.insert((false, log.address.into_word()));
            seen.extend(log.topics().iter().map(|t| (true, *t)));
        }
        distinct += seen.len();
    }
    eprintln!(
        "blooms: {logs} logs, {hashed} addresses and topics, {distinct} distinct within their block"
    );
    // What validating `logsBloom` / `receiptsRoot` costs at least, on its own: every receipt's
    // bloom from the reference's logs, memoized per block as both executors do, and alloy's
    // plain `logs_bloom` for comparison.
    group.bench_function("logs-blooms-memoized", |b| {
        b.iter(|| {
            let mut all = Bloom::ZERO;
            for r in &reference {
                let mut memo = BloomMemo::default();
                for receipt in &r.receipts {
                    all |= memo.logs_bloom(receipt.logs());
                }
            }
            all
        })
    });
    group.bench_function("logs-blooms-alloy", |b| {
        b.iter(|| {
            let mut all = Bloom::ZERO;
            for receipt in reference.iter().flat_map(|r| &r.receipts) {
                all |= logs_bloom(receipt.logs());
            }
            all
        })
    });
    // The parallel executor's per-block BAL preparation, part by part (the public pieces of
    // `prepare`; the pre-block values and the implied post-state are timed inside the runs'
    // prepare stage only). Every part walks the whole BAL once.
    let (mut accounts, mut slots, mut reads, mut changes) = (0, 0, 0, 0);
    for account in inputs.iter().flat_map(|p| p.bal.iter()) {
        accounts += 1;
        slots += account.storage_changes.len();
        reads += account.storage_reads.len();
        changes += account.balance_changes.len()
            + account.nonce_changes.len()
            + account.code_changes.len()
            + account.storage_changes.iter().map(|s| s.changes.len()).sum::<usize>();
    }
    eprintln!(
        "BALs: {accounts} accounts, {slots} changed and {reads} read-only slots, {changes} changes"
    );
    group.bench_function("bal-validate-structure", |b| {
        b.iter(|| {
            for p in &inputs {
                validate_structure(0, p.bal, p.block.transactions.len()).expect("valid BAL");
            }
        })
    });
    let codes: Vec<BalCodes> =
        inputs.iter().map(|p| BalCodes::new(0, p.bal).expect("codes")).collect();
    group.bench_function("bal-codes", |b| {
        b.iter(|| {
            for p in &inputs {
                black_box(BalCodes::new(0, p.bal).expect("codes"));
            }
        })
    });
    group.bench_function("bal-indexed-writes", |b| {
        b.iter(|| {
            for (p, codes) in inputs.iter().zip(&codes) {
                black_box(IndexedWrites::from_alloy(p.bal, codes, p.block.transactions.len()));
            }
        })
    });
    group.bench_function("bal-keys", |b| {
        b.iter(|| {
            for p in &inputs {
                black_box(BalKeys::new(p.bal));
            }
        })
    });
    for (threads, scheduler, batch) in [
        (1, Scheduler::Ols, 52),
        (2, Scheduler::Ols, 1),
        (2, Scheduler::GasUsed, 1),
        (2, Scheduler::Ols, 52),
        (2, Scheduler::GasUsed, 52),
    ] {
        let config = ParallelConfig { threads, scheduler, batch };
        group.bench_function(format!("parallel/{threads}t/{scheduler}/batch{batch}"), |b| {
            b.iter_batched(
                || (),
                |()| {
                    let run = execute_parallel(&chain, &inputs, config);
                    assert!(run.outcomes.iter().all(Result::is_ok));
                    run
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, executors);
criterion_main!(benches);
