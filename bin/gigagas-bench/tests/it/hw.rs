//! `gigagas hw`'s measurements (crate `gigagas-hw`) on a small generated chain and the mainnet
//! blocks: every block of the chain imported and validated, the stages' costs taken from it, the
//! executor measured at 1..=cores threads, and the model's answers consistent with them.

use gigagas_hw::{model::Design, Options};

#[test]
fn hw_measures_the_node_stages_and_the_executor() {
    let (chain, info) = super::gen_chain("amsterdam", 3);
    let work = tempfile::tempdir().unwrap();
    let opts = Options {
        mainnet: super::data_dir(),
        chain: chain.path().to_path_buf(),
        work: work.path().to_path_buf(),
        repeat: 1,
        disk_bytes: 1 << 20,
        rocksdb_slots: 1000,
        sweep_seconds: 0.05,
        skip_io: true,
        budgets: vec![3.0, 6.0],
        state_bytes: None,
    };
    let (report, model) = gigagas_hw::measure(&opts, &|_, _, _| {}).unwrap();

    // The chain: every block VALID through the engine (an invalid one fails the measurement),
    // its gas the generator's; sequentially, then in parallel (its BALs) at each thread count.
    let counts = gigagas_hw::exec::thread_counts(report.machine.cores);
    assert_eq!(report.chain.runs.len(), 1 + counts.len());
    for t in &counts {
        let run = report.chain.parallel(*t).expect("a parallel run per thread count");
        assert!(run.blocks.iter().all(|b| b.io_s > 0.0), "the BAL-hinted reads ran");
    }
    assert_eq!(report.chain_speedup.len(), counts.len());
    let seq = report.chain.sequential();
    assert_eq!(seq.blocks.len(), 3);
    assert_eq!(report.chain.gas, info["gas_used"].as_u64().unwrap());
    assert!(seq.blocks.iter().all(|b| b.store_reads > 0 && b.rss_bytes > 0 && b.commit_s > 0.0));
    // The Engine API handler's payload work was timed on each block's payload JSON.
    assert!(seq.blocks.iter().all(|b| b.payload_s > 0.0));
    assert!(report.chain.datadir_bytes > 0);
    assert!(report.costs.execution_ns_per_gas > 0.0 && report.costs.state_root_ns_per_gas > 0.0);

    // The executor: all mainnet blocks, measured at one thread and at every core, projected.
    let cores = report.machine.cores;
    assert_eq!(report.exec.blocks, 52);
    for t in [1, cores] {
        assert!(report.exec.measured.iter().any(|p| p.threads == t && p.mgas_per_s > 0.0));
    }
    assert!(report.exec.projected.iter().any(|p| p.threads == 64));

    // The answers: one row per budget and design, twice the budget twice the gas (the model is
    // linear), no cold figures without the sweeps.
    assert_eq!(report.capacity.len(), 6);
    for d in Design::ALL {
        let at = |b: f64| {
            report.capacity.iter().find(|r| r.design == d && r.budget_s == b).unwrap().max_gas_warm
        };
        assert!((at(6.0) / at(3.0) - 2.0).abs() < 1e-9);
    }
    assert!(report.capacity.iter().all(|r| r.max_gas_cold.is_none()));
    let q = model.requirements(300e6, 3.0, Design::Parallel, report.state_bytes);
    assert!(q.ram_bytes > q.rss_bytes + q.cache_bytes);
}
