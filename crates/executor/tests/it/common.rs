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
