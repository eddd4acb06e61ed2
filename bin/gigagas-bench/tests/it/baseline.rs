//! The plain revm baseline on the 52 mainnet blocks: its gas equals every header's.

use gigagas_bench::baseline::execute_baseline;
use gigagas_primitives::ChainSpec;
use gigagas_state::mainnet;

#[test]
fn baseline_gas_matches_header() {
    let dir = mainnet::default_dir();
    assert!(
        dir.is_dir(),
        "../shared/data/mainnet is missing ({}): these tests need the shared data beside the project",
        dir.display()
    );
    let chain = ChainSpec::mainnet();
    let data = mainnet::load(&dir, None, &|| {}).expect("load mainnet data");
    assert_eq!(data.len(), 52);
    for b in &data {
        let senders = b.block.par_recover(&chain).unwrap();
        let gas = execute_baseline(&chain, &b.block, &senders, &b.pre_state).unwrap();
        assert_eq!(gas, b.block.header.gas_used, "block {}", b.block.number());
    }
}
