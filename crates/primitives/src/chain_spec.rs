//! Chain specification: fork schedule and the EVM environment of a block.

use alloy_consensus::Header;
use alloy_eips::eip7840::BlobParams;
use alloy_evm::{eth::spec::EthSpec, spec_by_timestamp_and_block_number, EvmEnv};
use revm::primitives::hardfork::SpecId;

/// A chain's fork schedule plus the parameters needed to build a block's EVM environment.
///
/// Follows reth's `ChainSpec` in spirit: forks activate by block number up to the Merge and by
/// timestamp afterwards (EIP-2124 fork ids are not needed here).
#[derive(Debug, Clone)]
pub struct ChainSpec {
    /// EIP-155 chain id (1 for mainnet).
    pub chain_id: u64,
    /// Fork activation schedule and deposit contract, as alloy-evm's executor reads them.
    pub eth: EthSpec,
}

impl ChainSpec {
    /// Ethereum mainnet: chain id 1, alloy-hardforks' mainnet activation blocks and timestamps.
    pub fn mainnet() -> Self {
        Self { chain_id: 1, eth: EthSpec::mainnet() }
    }

    /// The revm [`SpecId`] active at a block of this number and timestamp (seconds).
    ///
    /// Difficulty-bomb forks (Muir Glacier, Arrow Glacier, Gray Glacier) and the DAO fork do not
    /// change EVM rules and map to the fork they follow.
    pub fn spec_id(&self, number: u64, timestamp: u64) -> SpecId {
        spec_by_timestamp_and_block_number(&self.eth, timestamp, number)
    }

    /// Blob parameters (target/max blobs, base-fee update fraction) active at `timestamp`, or
    /// `None` before Cancun (EIP-4844, EIP-7840).
    pub fn blob_params(&self, timestamp: u64) -> Option<BlobParams> {
        use alloy_hardforks::EthereumHardforks as _;
        if self.eth.is_osaka_active_at_timestamp(timestamp) {
            Some(BlobParams::osaka())
        } else if self.eth.is_prague_active_at_timestamp(timestamp) {
            Some(BlobParams::prague())
        } else if self.eth.is_cancun_active_at_timestamp(timestamp) {
            Some(BlobParams::cancun())
        } else {
            None
        }
    }

    /// Whether Byzantium (EIP-658 status-code receipts) is active at block `number`. Before it,
    /// receipts carry an intermediate state root, so a receipts root cannot be rebuilt without
    /// the full state trie.
    pub fn is_byzantium(&self, number: u64) -> bool {
        use alloy_hardforks::EthereumHardforks as _;
        self.eth.is_byzantium_active_at_block(number)
    }

    /// Whether Homestead (EIP-2: signatures with `s` above secp256k1n/2 are invalid) is active
    /// at block `number`.
    pub fn is_homestead(&self, number: u64) -> bool {
        use alloy_hardforks::EthereumHardforks as _;
        self.eth.is_homestead_active_at_block(number)
    }

    /// Whether Spurious Dragon (EIP-161: an empty account counts as non-existent and is removed
    /// when touched) is active at block `number`.
    pub fn is_spurious_dragon(&self, number: u64) -> bool {
        use alloy_hardforks::EthereumHardforks as _;
        self.eth.is_spurious_dragon_active_at_block(number)
    }

    /// Whether Cancun (EIP-6780: SELFDESTRUCT only deletes accounts created in the same
    /// transaction) is active at `timestamp`.
    pub fn is_cancun(&self, timestamp: u64) -> bool {
        use alloy_hardforks::EthereumHardforks as _;
        self.eth.is_cancun_active_at_timestamp(timestamp)
    }

    /// The EVM environment (spec id, chain id, block env, blob fee) for executing `header`.
    pub fn evm_env(&self, header: &Header) -> EvmEnv {
        EvmEnv::for_eth_block(header, &self.eth, self.chain_id, self.blob_params(header.timestamp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mainnet_schedule_maps_known_blocks() {
        let spec = ChainSpec::mainnet();
        assert_eq!(spec.spec_id(46_147, 1_438_918_233), SpecId::FRONTIER);
        assert_eq!(spec.spec_id(1_150_000, 1_457_981_393), SpecId::HOMESTEAD);
        assert_eq!(spec.spec_id(4_369_999, 1_508_131_303), SpecId::SPURIOUS_DRAGON);
        assert_eq!(spec.spec_id(4_370_000, 1_508_131_331), SpecId::BYZANTIUM);
        // Muir Glacier (9,200,000) maps to Istanbul.
        assert_eq!(spec.spec_id(9_200_000, 1_577_953_849), SpecId::ISTANBUL);
        assert_eq!(spec.spec_id(15_537_394, 1_663_224_179), SpecId::MERGE);
        assert_eq!(spec.spec_id(19_426_587, 1_710_338_135), SpecId::CANCUN);
        assert!(!spec.is_byzantium(4_369_999));
        assert!(spec.is_byzantium(4_370_000));
    }
}
