//! Loads the mainnet data once per test binary, with senders recovered.

use alloy_primitives::Address;
use gigagas_executor::{sequential::execute_sequential, BlockOutcome};
use gigagas_primitives::ChainSpec;
use gigagas_state::mainnet::{self, MainnetBlock};
use std::sync::OnceLock;

pub(crate) struct Data {
    pub(crate) chain: ChainSpec,
    pub(crate) blocks: Vec<MainnetBlock>,
    pub(crate) senders: Vec<Vec<Address>>,
    pub(crate) reference: Vec<BlockOutcome>,
}

pub(crate) fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let dir = mainnet::default_dir();
        assert!(
            dir.is_dir(),
            "../shared/data/mainnet is missing ({}): these tests need the shared data beside the project",
            dir.display()
        );
        let blocks = mainnet::load(&dir, None, &|| {}).expect("load mainnet data");
        let chain = ChainSpec::mainnet();
        let senders: Vec<_> =
            blocks.iter().map(|b| b.block.par_recover(&chain).expect("recover senders")).collect();
        let reference = blocks
            .iter()
            .zip(&senders)
            .map(|(b, s)| execute_sequential(&chain, &b.block, s, &b.pre_state).expect("sequential"))
            .collect();
        Data { chain, blocks, senders, reference }
    })
}

/// The blocks as parallel-executor input, driven by the reference BALs unless `bals` is given.
pub(crate) fn parallel_blocks<'a>(
    d: &'a Data,
    bals: Option<&'a [gigagas_bal::BlockAccessList]>,
) -> Vec<gigagas_executor::parallel::ParallelBlock<'a>> {
    d.blocks
        .iter()
        .zip(&d.senders)
        .zip(&d.reference)
        .enumerate()
        .map(|(i, ((b, s), r))| gigagas_executor::parallel::ParallelBlock {
            block: &b.block,
            senders: s.into(),
            pre_state: &b.pre_state,
            bal: bals.map_or_else(|| r.bal.as_ref().expect("sequential builds a BAL"), |x| &x[i]),
            gas_used_hint: Some(&r.tx_gas_used),
        })
        .collect()
}
