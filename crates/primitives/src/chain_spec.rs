//! Chain specification: fork schedule and the EVM environment of a block.

use crate::GenesisConfigError;
use alloy_consensus::Header;
use alloy_eip2124::{ForkHash, ForkId};
use alloy_eips::{eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS, eip7840::BlobParams};
use alloy_evm::{eth::spec::EthExecutorSpec, spec_by_timestamp_and_block_number, EvmEnv};
use alloy_hardforks::{EthereumChainHardforks, EthereumHardfork, EthereumHardforks, ForkCondition};
use alloy_primitives::{Address, B256, U256};
use revm::{context_interface::cfg::GasParams, primitives::hardfork::SpecId};

/// A fork schedule plus the EIP-6110 deposit contract: what alloy-evm's Ethereum block executor
/// reads (it implements alloy-evm's `EthExecutorSpec`). Like alloy-evm's `EthSpec`, but buildable
/// for any schedule, e.g. a test network with every fork active at genesis.
#[derive(Debug, Clone)]
pub struct ForkSchedule {
    hardforks: EthereumChainHardforks,
    deposit_contract: Option<Address>,
}

impl ForkSchedule {
    /// A schedule from `(fork, activation)` pairs; `deposit_contract` is where EIP-6110 deposit
    /// logs are read from (Prague and later), `None` for no deposit requests.
    pub fn new(
        forks: impl IntoIterator<Item = (EthereumHardfork, ForkCondition)>,
        deposit_contract: Option<Address>,
    ) -> Self {
        Self { hardforks: EthereumChainHardforks::new(forks), deposit_contract }
    }
}

impl EthereumHardforks for ForkSchedule {
    fn ethereum_fork_activation(&self, fork: EthereumHardfork) -> ForkCondition {
        self.hardforks.ethereum_fork_activation(fork)
    }
}

impl EthExecutorSpec for ForkSchedule {
    fn deposit_contract_address(&self) -> Option<Address> {
        self.deposit_contract
    }
}

/// A chain's fork schedule plus the parameters needed to build a block's EVM environment.
///
/// Follows reth's `ChainSpec` in spirit: forks activate by block number up to the Merge and by
/// timestamp afterwards; [`ChainSpec::fork_id`] gives the EIP-2124 fork id.
#[derive(Debug, Clone)]
pub struct ChainSpec {
    /// EIP-155 chain id (1 for mainnet).
    pub chain_id: u64,
    /// Fork activation schedule and deposit contract, as alloy-evm's executor reads them.
    pub eth: ForkSchedule,
    /// When gigagas's bal-devnet rules start (seconds; `None`: never): from this time on — at or
    /// after Osaka — the EVM runs revm's `AMSTERDAM` rules without
    /// EIP-8037 (state-creation gas) and EIP-2780 (lower intrinsic gas), on Osaka's gas table
    /// (dynamic and static: `EXTCODESIZE` / `EXTCODECOPY` without EIP-8038's second warm
    /// access), with EIP-7708 transfer logs (also for a transfer to the same account, as the
    /// draft the fixtures were filled with) and EIP-7778 block gas before refunds (the block's
    /// `gasUsed` and its inclusion check; receipts keep gas after refunds), while the block's
    /// system calls stay Osaka's (no EIP-8282 builder requests); blocks carry EIP-7928 BALs.
    /// What the EIP-7928 fixtures of execution-spec-tests tests-bal@v5.0.0 were filled for.
    /// A genesis schedules it with its own key, `balDevnetTime`; geth's `amsterdamTime` is the
    /// Glamsterdam that networks run (revm's full `AMSTERDAM`, see docs/conformance.md).
    pub bal_devnet_time: Option<u64>,
    /// EIP-7840 blob parameters per fork that changes them (Cancun, Prague, Osaka, BPO1–BPO5);
    /// mainnet's values unless a genesis file's `blobSchedule` says otherwise.
    pub blob_schedule: Vec<(EthereumHardfork, BlobParams)>,
}

/// Mainnet's EIP-7840 / EIP-7892 blob parameters.
fn mainnet_blob_schedule() -> Vec<(EthereumHardfork, BlobParams)> {
    vec![
        (EthereumHardfork::Cancun, BlobParams::cancun()),
        (EthereumHardfork::Prague, BlobParams::prague()),
        (EthereumHardfork::Osaka, BlobParams::osaka()),
        (EthereumHardfork::Bpo1, BlobParams::bpo1()),
        (EthereumHardfork::Bpo2, BlobParams::bpo2()),
    ]
}

impl ChainSpec {
    /// Ethereum mainnet: chain id 1, alloy-hardforks' mainnet activation blocks and timestamps.
    pub fn mainnet() -> Self {
        Self {
            chain_id: 1,
            eth: ForkSchedule {
                hardforks: EthereumChainHardforks::mainnet(),
                deposit_contract: Some(MAINNET_DEPOSIT_CONTRACT_ADDRESS),
            },
            bal_devnet_time: None,
            blob_schedule: mainnet_blob_schedule(),
        }
    }

    /// The chain a geth-format genesis `config` describes, read as geth 1.17.10 reads it
    /// (crates/primitives/src/genesis_config.rs: fork blocks and times in geth's order, the Merge,
    /// `blobSchedule` per fork, `depositContractAddress`), plus gigagas's own `balDevnetTime`
    /// ([`ChainSpec::bal_devnet_time`]).
    ///
    /// # Errors
    /// [`GenesisConfigError`] naming the key gigagas does not implement (`bogotaTime`,
    /// `ubtTime`, `clique`, any unknown fork key), `balDevnetTime` beside `amsterdamTime`, forks out of order, a blob
    /// schedule entry missing or unknown, or a Merge block it cannot know.
    pub fn from_genesis_config(
        config: &alloy_genesis::ChainConfig,
    ) -> Result<Self, GenesisConfigError> {
        crate::genesis_config::chain_spec(config)
    }

    /// A test network (chain id 1, as ethereum/tests use) on which `fork` and every fork before
    /// it are active from genesis: block-numbered forks at block 0, the Merge at total difficulty
    /// 0, timestamp forks at time 0. This is what a BlockchainTests `network` name such as
    /// `"Cancun"` means. The deposit contract is mainnet's.
    pub fn from_genesis_fork(fork: EthereumHardfork) -> Self {
        let forks = EthereumHardfork::VARIANTS.iter().take_while(|f| **f <= fork).map(|&f| {
            let condition = if f < EthereumHardfork::Paris {
                ForkCondition::Block(0)
            } else if f == EthereumHardfork::Paris {
                ForkCondition::TTD {
                    activation_block_number: 0,
                    fork_block: None,
                    total_difficulty: U256::ZERO,
                }
            } else {
                ForkCondition::Timestamp(0)
            };
            (f, condition)
        });
        Self {
            chain_id: 1,
            eth: ForkSchedule::new(forks, Some(MAINNET_DEPOSIT_CONTRACT_ADDRESS)),
            bal_devnet_time: None,
            blob_schedule: mainnet_blob_schedule(),
        }
    }

    /// The revm [`SpecId`] active at a block of this number and timestamp (seconds).
    ///
    /// Difficulty-bomb forks (Muir Glacier, Arrow Glacier, Gray Glacier) and the DAO fork do not
    /// change EVM rules and map to the fork they follow.
    pub fn spec_id(&self, number: u64, timestamp: u64) -> SpecId {
        spec_by_timestamp_and_block_number(&self.eth, timestamp, number)
    }

    /// Blob parameters (target/max blobs, base-fee update fraction) active at `timestamp`, or
    /// `None` before Cancun (EIP-4844, EIP-7840; EIP-7892 blob-parameter-only forks), from
    /// [`ChainSpec::blob_schedule`].
    pub fn blob_params(&self, timestamp: u64) -> Option<BlobParams> {
        self.blob_schedule
            .iter()
            .rev()
            .find(|(fork, _)| {
                self.eth.ethereum_fork_activation(*fork).active_at_timestamp(timestamp)
            })
            .map(|(_, params)| *params)
    }

    /// Whether Byzantium (EIP-658 status-code receipts) is active at block `number`. Before it,
    /// receipts carry an intermediate state root, so a receipts root cannot be rebuilt without
    /// the full state trie.
    pub fn is_byzantium(&self, number: u64) -> bool {
        self.eth.is_byzantium_active_at_block(number)
    }

    /// Whether Homestead (EIP-2: signatures with `s` above secp256k1n/2 are invalid) is active
    /// at block `number`.
    pub fn is_homestead(&self, number: u64) -> bool {
        self.eth.is_homestead_active_at_block(number)
    }

    /// Whether Spurious Dragon (EIP-161: an empty account counts as non-existent and is removed
    /// when touched) is active at block `number`.
    pub fn is_spurious_dragon(&self, number: u64) -> bool {
        self.eth.is_spurious_dragon_active_at_block(number)
    }

    /// Whether Cancun (EIP-6780: SELFDESTRUCT only deletes accounts created in the same
    /// transaction) is active at `timestamp`.
    pub fn is_cancun(&self, timestamp: u64) -> bool {
        self.eth.is_cancun_active_at_timestamp(timestamp)
    }

    /// Whether blocks at `timestamp` carry an EIP-7928 BAL (`blockAccessListHash` in the
    /// header, `blockAccessList` in the Engine API payload): geth 1.17.10's Amsterdam
    /// (Glamsterdam, `amsterdamTime`: revm's `AMSTERDAM`), or the bal-devnet draft rules.
    pub fn is_amsterdam(&self, timestamp: u64) -> bool {
        self.is_bal_devnet(timestamp) || self.eth.is_amsterdam_active_at_timestamp(timestamp)
    }

    /// Whether the bal-devnet rules ([`ChainSpec::bal_devnet_time`]) are in force at `timestamp`:
    /// EIP-7778 block gas before refunds, EIP-7708 logs for transfers to the same account, and
    /// Osaka's static gas for `EXTCODESIZE` / `EXTCODECOPY`, on top of revm's `AMSTERDAM`.
    pub fn is_bal_devnet(&self, timestamp: u64) -> bool {
        self.bal_devnet_time.is_some_and(|t| timestamp >= t)
            && self.eth.is_osaka_active_at_timestamp(timestamp)
    }

    /// Whether Prague (EIP-7685 requests) is active at `timestamp`.
    pub fn is_prague(&self, timestamp: u64) -> bool {
        self.eth.is_prague_active_at_timestamp(timestamp)
    }

    /// Whether Osaka is active at `timestamp`.
    pub fn is_osaka(&self, timestamp: u64) -> bool {
        self.eth.is_osaka_active_at_timestamp(timestamp)
    }

    /// Whether Shanghai (EIP-4895 withdrawals) is active at `timestamp`.
    pub fn is_shanghai(&self, timestamp: u64) -> bool {
        self.eth.is_shanghai_active_at_timestamp(timestamp)
    }

    /// The fork activations that count for the EIP-2124 fork id, as geth's `forkid` gathers
    /// them: block numbers above 0 (the Merge's only where a `mergeNetsplitBlock` is given: its
    /// `fork_block`), then timestamps
    /// after `genesis_time`, each once, ascending.
    pub fn fork_activations(&self, genesis_time: u64) -> (Vec<u64>, Vec<u64>) {
        let mut blocks = Vec::new();
        let mut times = Vec::new();
        for fork in EthereumHardfork::VARIANTS {
            match self.eth.ethereum_fork_activation(*fork) {
                ForkCondition::Block(b) if b > 0 => blocks.push(b),
                ForkCondition::TTD { fork_block: Some(b), .. } if b > 0 => blocks.push(b),
                ForkCondition::Timestamp(t) if t > genesis_time => times.push(t),
                _ => {}
            }
        }
        for list in [&mut blocks, &mut times] {
            list.sort_unstable();
            list.dedup();
        }
        (blocks, times)
    }

    /// The EIP-2124 fork id of a node whose head is block `number` at `timestamp` (seconds) on
    /// the chain of genesis `genesis_hash` made at `genesis_time`: CRC32 of the genesis hash and
    /// every activation passed, and the next activation (0 when none is scheduled).
    pub fn fork_id(
        &self,
        genesis_hash: B256,
        genesis_time: u64,
        number: u64,
        timestamp: u64,
    ) -> ForkId {
        let (blocks, times) = self.fork_activations(genesis_time);
        let mut hash = ForkHash::from(genesis_hash);
        for b in blocks.iter().filter(|b| **b <= number) {
            hash += *b;
        }
        for t in times.iter().filter(|t| **t <= timestamp) {
            hash += *t;
        }
        let next = blocks
            .iter()
            .find(|b| **b > number)
            .or_else(|| times.iter().find(|t| **t > timestamp))
            .copied()
            .unwrap_or(0);
        ForkId { hash, next }
    }

    /// The EIP-2124 fork filter of a node whose head is block `number` at `timestamp` on the
    /// chain of genesis `genesis_hash` made at `genesis_time`: it accepts a peer's fork id by
    /// the EIP's rules (same fork, a stale peer that still can catch up, a peer ahead that
    /// we can follow) and names the rule a rejected one breaks. Its current fork id is
    /// [`ChainSpec::fork_id`]'s.
    pub fn fork_filter(
        &self,
        genesis_hash: B256,
        genesis_time: u64,
        number: u64,
        timestamp: u64,
    ) -> alloy_eip2124::ForkFilter {
        let (blocks, times) = self.fork_activations(genesis_time);
        let keys = blocks
            .into_iter()
            .map(alloy_eip2124::ForkFilterKey::Block)
            .chain(times.into_iter().map(alloy_eip2124::ForkFilterKey::Time));
        let head = alloy_eip2124::Head { number, timestamp, ..Default::default() };
        alloy_eip2124::ForkFilter::new(head, genesis_hash, genesis_time, keys)
    }

    /// The EVM environment (spec id, chain id, block env, blob fee) for executing `header`.
    pub fn evm_env(&self, header: &Header) -> EvmEnv {
        let mut env = EvmEnv::for_eth_block(
            header,
            &self.eth,
            self.chain_id,
            self.blob_params(header.timestamp),
        );
        if self.is_bal_devnet(header.timestamp) {
            env.cfg_env.spec = SpecId::AMSTERDAM;
            env.cfg_env.enable_amsterdam_eip8037 = false;
            env.cfg_env.enable_amsterdam_eip2780 = false;
            env.cfg_env.set_gas_params(GasParams::new_spec(SpecId::OSAKA));
        }
        env
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

    #[test]
    fn genesis_fork_network_activates_forks_up_to_it() {
        let cancun = ChainSpec::from_genesis_fork(EthereumHardfork::Cancun);
        assert_eq!(cancun.spec_id(0, 0), SpecId::CANCUN);
        assert_eq!(cancun.spec_id(10, 10_000), SpecId::CANCUN);
        assert!(cancun.is_spurious_dragon(0) && cancun.is_cancun(0));
        assert_eq!(cancun.blob_params(0), Some(BlobParams::cancun()));
        let prague = ChainSpec::from_genesis_fork(EthereumHardfork::Prague);
        assert_eq!(prague.spec_id(1, 1), SpecId::PRAGUE);
    }
}
