//! `gigagas-bench gen-chain`: heavy workload chains, built by the node's own payload builder.
//!
//! Flow: a geth-format genesis (testing/dev-genesis.json's forks and system contracts, Osaka at
//! genesis; `amsterdamTime` 0 for the Amsterdam variant, removed for Osaka) holding real mainnet code at its
//! mainnet addresses — WETH9, Tether's USDT and Uniswap V2's factory and Router02 from
//! `../shared/data/mainnet/bytecodes.json.gz`,
//! their balances set in storage (WETH9's `balanceOf` at slot 3, USDT's `balances` at slot 2) —
//! plus three small contracts of our own (a slot writer, a hot counter, a cold-slot reader),
//! and funded senders whose keys derive from the seed → `gigagas init` of that genesis into a
//! temporary RocksDB → per block: signed EIP-1559 transactions of the chosen mix until the
//! block's gas is reached, built by the engine tree's payload builder
//! ([`BlockTree::build_payload`], every candidate required), then validated as a consensus
//! client's `newPayload` would be (with its BAL on Amsterdam) and made canonical → the blocks
//! appended to `chain.rlp` (geth's export format, what `gigagas import` and `geth import`
//! read), the Amsterdam variant's BALs to `bal.rlp` (what `replay` sends in `newPayloadV5`),
//! each block's execution requests to `info.json`. The same seed, mix, fork and sizes give the
//! same files.
//!
//! Mixes: `mainnet` — ETH transfers to fresh accounts, USDT and WETH9 transfers, WETH9
//! deposits, Uniswap V2 swaps between WETH9 and USDT (mainnet factory and Router02 code; the
//! first block creates the pair and adds liquidity; every sender's allowance to the router is
//! set in the genesis), storage-heavy calls (ten new slots each); `hot` — every transaction increments
//! the same counter slot (one contract every transaction touches); `cold` — every transaction
//! reads 200 random slots of a contract holding `--cold-slots` slots; `spread` (with
//! `--state-by-chain`) — ETH transfers to accounts the state holds and updates of two slots
//! of its contracts, the keys drawn from a hot set and a long cold tail
//! ([`crate::state_access`]).
//!
//! State of mainnet's shape: `--state-accounts` and `--state-slots` (over `--state-contracts`
//! contracts, heavy-tailed) are written into the genesis, or with `--state-by-chain` created by
//! the blocks themselves before the mix's blocks ([`crate::state_growth`]): a client then holds
//! that state by importing the chain, as geth does without building a genesis of millions of
//! entries in memory. `chain-state.rlp` and `chain-blocks.rlp` then hold the two parts apart
//! (with their BALs, geth's export format), and `--state-datadir` keeps a checkpoint of the
//! generator's datadir at the end of the state part: the state to run the mix's blocks on;
//! `state-newpayload.json` and `state-headfcu.json` name that part's last block, where a node
//! that takes the state by snap sync is pointed before the mix's blocks are imported on top.

pub(crate) use gigagas_bench::rng::Rng;

use crate::{
    replay::BAL_FILE,
    state_access::StateAccess,
    state_growth::{self, zipf_slots, StateCall, StatePlan, FANOUT, FANOUT_CODE, WRITER_CODE},
};
use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope, TxReceipt};
use alloy_primitives::{keccak256, Address, Bytes, Signature, TxKind, B256, U256};
use clap::{Args, ValueEnum};
use gigagas_engine::{BlockTree, PayloadStatus};
use gigagas_payload::PayloadAttributes;
use gigagas_storage::{FullProvider, KeepStates, Storage, TriePruner};
use gigagas_validation::init_genesis;
use k256::ecdsa::SigningKey;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Instant,
};

/// Arguments of `gen-chain`.
#[derive(Debug, Args)]
pub(crate) struct GenChainArgs {
    /// Output folder: `genesis.json`, `chain.rlp`, `info.json` (and `bal.rlp` for Amsterdam)
    /// are written there.
    #[arg(long)]
    pub out: PathBuf,
    /// Gas per block to fill (gas; suffixes M and G allowed: 30M, 150M, 300M, 1G).
    #[arg(long, default_value = "30M", value_parser = parse_gas)]
    pub gas: u64,
    /// Blocks to build.
    #[arg(long, default_value_t = 10)]
    pub blocks: u64,
    /// Transaction mix.
    #[arg(long, value_enum, default_value_t = Mix::Mainnet)]
    pub mix: Mix,
    /// Rules: `osaka` (no BAL) or `amsterdam` (gigagas's bal-devnet rules: the BAL in the block).
    #[arg(long, value_enum, default_value_t = Fork::Osaka)]
    pub fork: Fork,
    /// Seed of keys, recipients and slots.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Slots of the cold-read contract (the `cold` mix reads 200 random ones per transaction).
    #[arg(long, default_value_t = 100_000)]
    pub cold_slots: u64,
    /// Folder of the mainnet data (for `bytecodes.json.gz`).
    #[arg(long, default_value = "../shared/data/mainnet")]
    pub data: PathBuf,
    /// Accounts funded in the genesis (ether, WETH9 and USDT, the router's allowances) that no
    /// block uses: `rpc-load` sends its `eth_sendRawTransaction`s and estimates from them
    /// ([`spare_sender_key`]). 0 keeps the genesis of chains made without them.
    #[arg(long, default_value_t = 0)]
    pub spare_senders: u64,
    /// Extra accounts in the genesis: externally owned, funded, untouched by the blocks (a
    /// state of mainnet's size for snap sync and cold reads).
    #[arg(long, default_value_t = 0)]
    pub state_accounts: u64,
    /// Extra storage slots in the genesis, spread over `--state-contracts` contracts with a
    /// heavy tail as on mainnet: contract k (from 1) holds a share ∝ 1/k (Zipf), at least one.
    #[arg(long, default_value_t = 0)]
    pub state_slots: u64,
    /// Contracts holding `--state-slots` (64 distinct codes among them).
    #[arg(long, default_value_t = 10_000)]
    pub state_contracts: u64,
    /// Create `--state-accounts` and `--state-slots` by transactions instead of writing them
    /// into the genesis: blocks of `--state-gas` calling a fan-out contract (64 new accounts a
    /// call) and the state contracts' slot writers (100 new slots a call), until all exist;
    /// the `--blocks` blocks of the mix follow. `sample.json` names accounts and slots created.
    #[arg(long)]
    pub state_by_chain: bool,
    /// Gas per block of the blocks that create the state under `--state-by-chain` (gas;
    /// suffixes M and G allowed). The block gas limit is twice this, so that the base fee
    /// stays low.
    #[arg(long, default_value = "1G", value_parser = parse_gas)]
    pub state_gas: u64,
    /// Under `--mix spread`: percent of the keys drawn from the hot set.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub hot_share: u64,
    /// Under `--mix spread`: percent of the state's accounts, and of each contract's slots,
    /// that form the hot set.
    #[arg(long, default_value_t = 1.0)]
    pub hot_fraction: f64,
    /// Under `--state-by-chain`: a checkpoint of the generator's datadir when the state is
    /// created, before the mix's blocks (a datadir of its own; the folder must not exist).
    #[arg(long)]
    pub state_datadir: Option<PathBuf>,
    /// Under `--state-by-chain`: every this many of the state's blocks, the trie nodes the head's
    /// state root no longer reaches are pruned (`gigagas db prune-trie --keep 1`), so that the
    /// datadir holds one state and not every block's superseded nodes (0: never).
    #[arg(long, default_value_t = 0)]
    pub state_prune_every: u64,
    /// Under `--state-by-chain`: write the mix's blocks (`chain-blocks.rlp`), the engine calls
    /// and the chain's description only, not the state part's blocks (`chain-state.rlp`) nor
    /// the whole chain with its BALs (`chain.rlp`, `bal.rlp`). A node that takes the state by
    /// snap sync needs none of them; at 50M entries they are 5 GB held in memory to the end.
    #[arg(long, requires = "state_by_chain")]
    pub mix_files_only: bool,
    /// Print one JSON object (the `info.json` written) instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// What the transactions of a chain do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mix {
    /// ETH transfers to fresh accounts, USDT and WETH9 transfers, WETH9 deposits, slot writes.
    Mainnet,
    /// One counter slot every transaction increments.
    Hot,
    /// 200 random reads of a large contract's slots per transaction.
    Cold,
    /// Transfers to existing accounts and updates of existing slots, a hot set and a cold tail
    /// over the `--state-by-chain` state.
    Spread,
}

/// The rules the chain is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Fork {
    /// Osaka: no BAL.
    Osaka,
    /// geth 1.17.10's Amsterdam (`amsterdamTime`; Glamsterdam: revm's `AMSTERDAM`): every block
    /// carries its EIP-7928 BAL; the genesis holds geth's EIP-8282 request contracts and the
    /// EIP-7997 CREATE2 factory.
    Amsterdam,
}

fn parse_gas(s: &str) -> Result<u64, String> {
    let (digits, scale) = match s.as_bytes().last() {
        Some(b'G' | b'g') => (&s[..s.len() - 1], 1_000_000_000),
        Some(b'M' | b'm') => (&s[..s.len() - 1], 1_000_000),
        _ => (s, 1),
    };
    let n: u64 = digits.parse().map_err(|e| format!("{s}: {e}"))?;
    n.checked_mul(scale).filter(|g| *g >= 1_000_000).ok_or_else(|| format!("{s}: at least 1M gas"))
}

/// WETH9 on mainnet: address and code hash (the code is in `bytecodes.json.gz`).
pub(crate) const WETH9: (Address, B256) = (
    alloy_primitives::address!("c02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"),
    alloy_primitives::b256!("d0a06b12ac47863b5c7be4185c2deaad1c61557033f56c7d4ea74429cbb25e23"),
);
/// Tether's USDT on mainnet: address and code hash.
pub(crate) const USDT: (Address, B256) = (
    alloy_primitives::address!("dac17f958d2ee523a2206206994597c13d831ec7"),
    alloy_primitives::b256!("b44fb4e949d0f78f87f79ee46428f23a2a5713ce6fc6e0beb3dda78c2ac1ea55"),
);
/// Uniswap V2 on mainnet: the factory and Router02 (which names the factory and WETH9 at these
/// addresses in its code, and the pair's init-code hash the factory deploys with).
const UNISWAP_FACTORY: (Address, B256) = (
    alloy_primitives::address!("5c69bee701ef814a2b6a3edd4b1652cb9cc5aa6f"),
    alloy_primitives::b256!("bab145d02e7005f0d84c6c1639d39b799b0ea16df99ebbdaf5a14d9da820b4e0"),
);
pub(crate) const UNISWAP_ROUTER: (Address, B256) = (
    alloy_primitives::address!("7a250d5630b4cf539739df2c5dacb4c659f2488d"),
    alloy_primitives::b256!("a324bc7db3d091b6f1a2d526e48a9c7039e03b3cc35f7d44b15ac7a1544c11d2"),
);
/// `createPair(address,address)`.
const CREATE_PAIR: [u8; 4] = [0xc9, 0xc6, 0x53, 0x96];
/// `addLiquidity(address,address,uint256,uint256,uint256,uint256,address,uint256)`.
const ADD_LIQUIDITY: [u8; 4] = [0xe8, 0xe3, 0x37, 0x00];
/// `swapExactTokensForTokens(uint256,uint256,address[],address,uint256)`.
const SWAP_EXACT: [u8; 4] = [0x38, 0xed, 0x17, 0x39];
/// Liquidity the setup puts in the WETH9/USDT pair, of each token (smallest units).
const LIQUIDITY: u128 = 10_000_000_000_000_000_000_000;

/// The slot writer: `SSTORE(start + i, count - i)` for `i < count`; calldata `start ‖ count`.
const WRITER: Address = Address::repeat_byte(0x71);
/// The hot counter: `SSTORE(0, SLOAD(0) + 1)`.
const HOT: Address = Address::repeat_byte(0x72);
const HOT_CODE: &str = "60005460010160005500";
/// The cold reader: `SLOAD` of every 32-byte word of the calldata.
const COLD: Address = Address::repeat_byte(0x73);
const COLD_CODE: &str = "60005b80361115601457803554506020016002565b00";
/// Slots the `cold` mix reads per transaction.
const COLD_READS: u64 = 200;
/// Slots a storage-heavy call of the `mainnet` mix writes.
const WRITES: u64 = 10;

/// `transfer(address,uint256)`.
const TRANSFER: [u8; 4] = [0xa9, 0x05, 0x9c, 0xbb];
/// WETH9 `deposit()`.
const DEPOSIT: [u8; 4] = [0xd0, 0xe3, 0x0d, 0xb0];

/// Chain id of the generated chains (testing/dev-genesis.json's).
pub(crate) const CHAIN_ID: u64 = 1337;

/// Threads reading the trie nodes to keep in a `--state-prune-every` prune.
const PRUNE_THREADS: usize = 32;
/// Seconds between blocks.
const BLOCK_TIME: u64 = 12;

/// One kind of transaction: what it calls and the gas it is given (its use, measured on the
/// generated chains, plus a margin: a block is filled by the estimate, and every candidate must
/// fit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
enum Kind {
    EthToFresh,
    UsdtTransfer,
    WethTransfer,
    WethDeposit,
    SlotWrites,
    UniswapSwap,
    CreatePair,
    AddLiquidity,
    HotCounter,
    ColdReads,
    /// A fan-out call creating [`state_growth::FANOUT_ACCOUNTS`] accounts.
    StateAccounts,
    /// A writer call storing [`state_growth::FILL_SLOTS`] new slots.
    StateSlots,
    /// ETH sent to an account the state holds.
    TransferExisting,
    /// A state contract's writer overwriting [`crate::state_access::UPDATE_SLOTS`] of its slots.
    SlotUpdates,
}

impl Kind {
    /// (gas limit, expected use) in gas under `fork`'s rules.
    fn gas(self, fork: Fork) -> (u64, u64) {
        if fork == Fork::Amsterdam {
            return self.gas_amsterdam();
        }
        match self {
            Kind::EthToFresh => (21_000, 21_000),
            Kind::UsdtTransfer => (90_000, 55_000),
            Kind::WethTransfer => (70_000, 45_000),
            Kind::WethDeposit => (60_000, 40_000),
            Kind::SlotWrites => (260_000, 230_000),
            Kind::UniswapSwap => (200_000, 105_000),
            Kind::CreatePair => (3_000_000, 2_520_000),
            Kind::AddLiquidity => (400_000, 240_000),
            Kind::HotCounter => (50_000, 26_000),
            Kind::ColdReads => (620_000, 556_000),
            Kind::StateAccounts => (2_700_000, 2_400_000),
            Kind::StateSlots => (2_500_000, 2_250_000),
            Kind::TransferExisting => (21_000, 21_000),
            Kind::SlotUpdates => (60_000, 34_000),
        }
    }

    /// (gas limit, expected use) under Amsterdam's EIP-8037 / EIP-8038 / EIP-2780 prices: a
    /// new account costs 183,600 state gas (120 bytes at 1,530), a new slot 97,920 (64 bytes),
    /// deployed code 1,530 a byte. The use is the receipts' mean (execution plus state gas)
    /// on the generated chains (seed 1, 360 transactions of the mainnet mix, 120 of each
    /// other), the limit their largest plus a margin. A block of `--gas` is filled by these
    /// uses: its header's `gasUsed` (the larger of the two dimensions) is then lower.
    fn gas_amsterdam(self) -> (u64, u64) {
        match self {
            Kind::EthToFresh => (210_000, 204_600),
            Kind::UsdtTransfer => (190_000, 107_000),
            Kind::WethTransfer => (180_000, 99_000),
            Kind::WethDeposit => (60_000, 35_000),
            Kind::SlotWrites => (1_350_000, 1_116_000),
            Kind::UniswapSwap => (430_000, 137_000),
            Kind::CreatePair => (22_000_000, 18_500_000),
            Kind::AddLiquidity => (950_000, 778_000),
            Kind::HotCounter => (150_000, 28_000),
            Kind::ColdReads => (660_000, 543_000),
            Kind::StateAccounts => (14_000_000, 12_600_000),
            Kind::StateSlots => (12_500_000, 11_050_000),
            Kind::TransferExisting => (60_000, 21_000),
            Kind::SlotUpdates => (150_000, 27_000),
        }
    }
}

/// Keys, nonces and recipients of a chain being generated.
struct Workload {
    rng: Rng,
    senders: Vec<(SigningKey, Address)>,
    nonces: Vec<u64>,
    next: usize,
    mix: Mix,
    cold_slots: u64,
    seed: u64,
    /// The state's keys the `spread` mix draws from.
    access: Option<StateAccess>,
}

/// The key of sender `i` of `seed`.
fn sender_key(seed: u64, i: u64) -> SigningKey {
    let mut n = 0u64;
    loop {
        let bytes = keccak256(
            [
                b"gigagas-gen-chain".as_slice(),
                &seed.to_be_bytes(),
                &i.to_be_bytes(),
                &n.to_be_bytes(),
            ]
            .concat(),
        );
        if let Ok(key) = SigningKey::from_slice(bytes.as_slice()) {
            return key;
        }
        n += 1;
    }
}

/// The key of spare sender `i` of `seed` (funded, never used by the chain's blocks).
pub(crate) fn spare_sender_key(seed: u64, i: u64) -> SigningKey {
    sender_key(seed ^ SPARE_DOMAIN, i)
}

/// Mixed into the seed of spare senders' keys, so that they differ from every block sender's.
const SPARE_DOMAIN: u64 = 0x5350_4152_4553_454e; // "SPARESEN"

/// Slot `i` of the cold reader.
fn cold_slot(seed: u64, i: u64) -> B256 {
    keccak256([b"cold".as_slice(), &seed.to_be_bytes(), &i.to_be_bytes()].concat())
}

/// The storage key of `holder` in a Solidity `mapping(address => …)` at `slot`.
pub(crate) fn mapping_slot(holder: Address, slot: u64) -> B256 {
    keccak256(
        [
            B256::left_padding_from(holder.as_slice()).as_slice(),
            &U256::from(slot).to_be_bytes::<32>(),
        ]
        .concat(),
    )
}

impl Workload {
    fn new(seed: u64, senders: u64, mix: Mix, cold_slots: u64) -> Self {
        let senders: Vec<(SigningKey, Address)> = (0..senders)
            .map(|i| {
                let key = sender_key(seed, i);
                let address = Address::from_public_key(key.verifying_key());
                (key, address)
            })
            .collect();
        let nonces = vec![0; senders.len()];
        Self { rng: Rng(seed), senders, nonces, next: 0, mix, cold_slots, seed, access: None }
    }

    fn kind(&mut self) -> Kind {
        match self.mix {
            Mix::Hot => Kind::HotCounter,
            Mix::Cold => Kind::ColdReads,
            Mix::Spread => {
                if self.rng.below(2) == 0 {
                    Kind::TransferExisting
                } else {
                    Kind::SlotUpdates
                }
            }
            Mix::Mainnet => match self.rng.below(100) {
                0..30 => Kind::EthToFresh,
                30..50 => Kind::UsdtTransfer,
                50..65 => Kind::WethTransfer,
                65..75 => Kind::WethDeposit,
                75..87 => Kind::UniswapSwap,
                _ => Kind::SlotWrites,
            },
        }
    }

    /// A recipient: another sender (an existing balance) or a fresh address, half and half.
    fn recipient(&mut self) -> Address {
        if self.rng.below(2) == 0 {
            let i = self.rng.below(self.senders.len() as u64) as usize;
            self.senders[i].1
        } else {
            Address::from_word(self.rng.word())
        }
    }

    /// The next transaction, of `kind` (senders taken in turn).
    fn transaction(&mut self, kind: Kind, fork: Fork, max_fee: u128) -> (TxEnvelope, Address) {
        let (to, value, input) = match kind {
            Kind::StateAccounts | Kind::StateSlots => {
                unreachable!("state calls are made by `state_transaction`")
            }
            Kind::EthToFresh => {
                (Address::from_word(self.rng.word()), U256::from(1_000_000_000u64), Vec::new())
            }
            Kind::UsdtTransfer | Kind::WethTransfer => {
                let token = if kind == Kind::UsdtTransfer { USDT.0 } else { WETH9.0 };
                let to = self.recipient();
                let amount = U256::from(1 + self.rng.below(1_000_000));
                let mut input = TRANSFER.to_vec();
                input.extend_from_slice(B256::left_padding_from(to.as_slice()).as_slice());
                input.extend_from_slice(&amount.to_be_bytes::<32>());
                (token, U256::ZERO, input)
            }
            Kind::WethDeposit => (WETH9.0, U256::from(1_000_000_000u64), DEPOSIT.to_vec()),
            Kind::SlotWrites => {
                let mut input = self.rng.word().to_vec();
                input.extend_from_slice(&U256::from(WRITES).to_be_bytes::<32>());
                (WRITER, U256::ZERO, input)
            }
            Kind::CreatePair => {
                let input = abi(CREATE_PAIR, &[word(WETH9.0), word(USDT.0)]);
                (UNISWAP_FACTORY.0, U256::ZERO, input)
            }
            Kind::AddLiquidity => {
                let provider = self.senders[self.next].1;
                let amount = B256::from(U256::from(LIQUIDITY));
                let deadline = B256::from(U256::from(u64::MAX));
                let input = abi(
                    ADD_LIQUIDITY,
                    &[
                        word(WETH9.0),
                        word(USDT.0),
                        amount,
                        amount,
                        B256::ZERO,
                        B256::ZERO,
                        word(provider),
                        deadline,
                    ],
                );
                (UNISWAP_ROUTER.0, U256::ZERO, input)
            }
            Kind::UniswapSwap => {
                let trader = self.senders[self.next].1;
                let path =
                    if self.rng.below(2) == 0 { [WETH9.0, USDT.0] } else { [USDT.0, WETH9.0] };
                let amount_in = B256::from(U256::from(1 + self.rng.below(1_000_000_000_000)));
                let input = abi(
                    SWAP_EXACT,
                    &[
                        amount_in,
                        B256::ZERO,
                        B256::from(U256::from(0xa0u64)), // the path's offset
                        word(trader),
                        B256::from(U256::from(u64::MAX)),
                        B256::from(U256::from(2u64)),
                        word(path[0]),
                        word(path[1]),
                    ],
                );
                (UNISWAP_ROUTER.0, U256::ZERO, input)
            }
            Kind::HotCounter => (HOT, U256::ZERO, Vec::new()),
            Kind::TransferExisting => {
                let access = self.access.as_ref().expect("the spread mix has the state's keys");
                let to = access.account(&mut self.rng).expect("a spread state has accounts");
                (to, U256::from(1_000_000_000u64), Vec::new())
            }
            Kind::SlotUpdates => {
                let access = self.access.as_ref().expect("the spread mix has the state's keys");
                let (contract, start, count) =
                    access.slots(&mut self.rng).expect("a spread state has slots");
                let mut input = start.to_be_bytes::<32>().to_vec();
                input.extend_from_slice(&U256::from(count).to_be_bytes::<32>());
                (contract, U256::ZERO, input)
            }
            Kind::ColdReads => {
                let mut input = Vec::with_capacity(32 * COLD_READS as usize);
                for _ in 0..COLD_READS {
                    let i = self.rng.below(self.cold_slots);
                    input.extend_from_slice(cold_slot(self.seed, i).as_slice());
                }
                (COLD, U256::ZERO, input)
            }
        };
        self.signed(kind, fork, max_fee, to, value, input)
    }

    /// The next transaction making `call` of the state plan.
    fn state_transaction(
        &mut self,
        call: StateCall,
        fork: Fork,
        max_fee: u128,
    ) -> (Kind, TxEnvelope, Address) {
        let kind = match call {
            StateCall::Accounts { .. } => Kind::StateAccounts,
            StateCall::Slots { .. } => Kind::StateSlots,
        };
        let (to, input) = call.call(self.seed);
        let (tx, sender) = self.signed(kind, fork, max_fee, to, U256::ZERO, input);
        (kind, tx, sender)
    }

    /// The next sender's transaction to `to` (senders taken in turn).
    fn signed(
        &mut self,
        kind: Kind,
        fork: Fork,
        max_fee: u128,
        to: Address,
        value: U256,
        input: Vec<u8>,
    ) -> (TxEnvelope, Address) {
        let i = self.next;
        self.next = (self.next + 1) % self.senders.len();
        let nonce = self.nonces[i];
        self.nonces[i] += 1;
        let tx = TxEip1559 {
            chain_id: CHAIN_ID,
            nonce,
            gas_limit: kind.gas(fork).0,
            max_fee_per_gas: max_fee,
            max_priority_fee_per_gas: 1_000_000_000,
            to: TxKind::Call(to),
            value,
            input: Bytes::from(input),
            ..Default::default()
        };
        let (key, sender) = &self.senders[i];
        (sign(key, tx), *sender)
    }
}

/// `tx` signed with `key`.
pub(crate) fn sign(key: &SigningKey, tx: TxEip1559) -> TxEnvelope {
    let (sig, recid) = key
        .sign_prehash_recoverable(tx.signature_hash().as_slice())
        .expect("a prehash of 32 bytes signs");
    let signature = Signature::new(
        U256::from_be_slice(&sig.r().to_bytes()),
        U256::from_be_slice(&sig.s().to_bytes()),
        recid.is_y_odd(),
    );
    TxEnvelope::Eip1559(tx.into_signed(signature))
}

/// An address as an ABI word.
pub(crate) fn word(a: Address) -> B256 {
    B256::left_padding_from(a.as_slice())
}

/// Calldata: a selector and its ABI words.
pub(crate) fn abi(selector: [u8; 4], words: &[B256]) -> Vec<u8> {
    let mut out = selector.to_vec();
    for w in words {
        out.extend_from_slice(w.as_slice());
    }
    out
}

fn hex_u256(v: U256) -> String {
    format!("{v:#x}")
}

/// A storage value as geth's genesis format wants it: 32 bytes of hex.
fn slot_value(v: U256) -> String {
    format!("{:#x}", B256::from(v))
}

/// The genesis (geth format): testing/dev-genesis.json's config and system contracts, the
/// block gas limit, WETH9 and USDT with the senders' balances, the three contracts of our own,
/// the senders funded.
fn genesis(args: &GenChainArgs, workload: &Workload, gas_limit: u64) -> Result<Value, String> {
    let template = include_str!("../../../testing/dev-genesis.json");
    let mut genesis: Value = serde_json::from_str(template).map_err(|e| e.to_string())?;
    let config = genesis["config"].as_object_mut().ok_or("dev-genesis.json: no config")?;
    match args.fork {
        Fork::Osaka => {
            config.remove("amsterdamTime");
            config.remove("balDevnetTime");
        }
        Fork::Amsterdam => {
            config.remove("balDevnetTime");
            config.insert("amsterdamTime".into(), json!(0));
        }
    }
    if args.fork == Fork::Amsterdam {
        // geth's own genesis entries of the contracts Amsterdam calls or names (its
        // `--dev dumpgenesis`, testing/geth/): EIP-8282's builder deposit and exit request
        // contracts (called after every block; geth refuses a block when one has no code) and
        // EIP-7997's CREATE2 factory.
        let geth: Value = serde_json::from_str(include_str!(
            "../../../testing/geth/geth-1.17.10-dev-dumpgenesis.json"
        ))
        .map_err(|e| e.to_string())?;
        for address in [
            "0000bff46984e3725691fa540a8c7589300d8282",
            "000064d678505ad48f8ccb093bc65613800e8282",
            "4e59b44847b379578588920ca78fbf26c0b4956c",
        ] {
            let entry = geth["alloc"][address].clone();
            if entry.is_null() {
                return Err(format!("geth's dev genesis has no entry for {address}"));
            }
            genesis["alloc"][format!("0x{address}")] = entry;
        }
    }
    genesis["gasLimit"] = json!(format!("{gas_limit:#x}"));
    let codes = gigagas_state::mainnet::load_bytecodes(&args.data.join("bytecodes.json.gz"))
        .map_err(|e| e.to_string())?;
    let code_of = |(address, hash): (Address, B256)| {
        codes
            .get(&hash)
            .map(|c| format!("0x{}", alloy_primitives::hex::encode(c.original_bytes())))
            .ok_or_else(|| format!("{address}: code {hash} not in bytecodes.json.gz"))
    };
    let alloc = genesis["alloc"].as_object_mut().ok_or("dev-genesis.json: no alloc")?;
    let rich = U256::from(10u64).pow(U256::from(24u64)); // a million ether (wei), or tokens
    let (mut weth, mut usdt) = (Map::new(), Map::new());
    let spare: Vec<Address> = (0..args.spare_senders)
        .map(|i| Address::from_public_key(spare_sender_key(args.seed, i).verifying_key()))
        .collect();
    for sender in workload.senders.iter().map(|(_, a)| a).chain(&spare) {
        alloc.insert(format!("{sender:#x}"), json!({ "balance": hex_u256(rich) }));
        weth.insert(format!("{:#x}", mapping_slot(*sender, 3)), json!(slot_value(rich)));
        usdt.insert(format!("{:#x}", mapping_slot(*sender, 2)), json!(slot_value(rich)));
        // Every sender lets the router move its tokens: WETH9's `allowance` (slot 4) and
        // USDT's `allowed` (slot 5), both `mapping(owner => mapping(spender => amount))`.
        for (map, slot) in [(&mut weth, 4), (&mut usdt, 5)] {
            let inner = mapping_slot(*sender, slot);
            let key = keccak256([word(UNISWAP_ROUTER.0).as_slice(), inner.as_slice()].concat());
            map.insert(format!("{key:#x}"), json!(slot_value(U256::MAX)));
        }
    }
    let holders = U256::from(workload.senders.len() + spare.len());
    alloc.insert(
        format!("{:#x}", WETH9.0),
        json!({ "balance": hex_u256(rich * holders), "code": code_of(WETH9)?, "storage": weth }),
    );
    // USDT: slot 0 its owner (not paused), slot 1 the total supply, slot 2 the balances.
    usdt.insert(
        format!("{:#x}", B256::ZERO),
        json!(format!("{:#x}", B256::left_padding_from(workload.senders[0].1.as_slice()))),
    );
    usdt.insert(format!("{:#x}", B256::with_last_byte(1)), json!(slot_value(rich * holders)));
    alloc.insert(
        format!("{:#x}", USDT.0),
        json!({ "balance": "0x0", "code": code_of(USDT)?, "storage": usdt }),
    );
    for contract in [UNISWAP_FACTORY, UNISWAP_ROUTER] {
        alloc.insert(
            format!("{:#x}", contract.0),
            json!({ "balance": "0x0", "code": code_of(contract)? }),
        );
    }
    alloc.insert(
        format!("{WRITER:#x}"),
        json!({ "balance": "0x0", "code": format!("0x{WRITER_CODE}") }),
    );
    alloc.insert(format!("{HOT:#x}"), json!({ "balance": "0x0", "code": format!("0x{HOT_CODE}") }));
    let mut cold = Map::new();
    if args.mix == Mix::Cold {
        for i in 0..args.cold_slots {
            cold.insert(
                format!("{:#x}", cold_slot(args.seed, i)),
                json!(slot_value(U256::from(i + 1))),
            );
        }
    }
    alloc.insert(
        format!("{COLD:#x}"),
        json!({ "balance": "0x0", "code": format!("0x{COLD_CODE}"), "storage": cold }),
    );
    if args.state_by_chain {
        // The fan-out contract pays 1 wei to each account it creates.
        alloc.insert(
            format!("{FANOUT:#x}"),
            json!({ "balance": hex_u256(rich), "code": format!("0x{FANOUT_CODE}") }),
        );
        if args.state_slots > 0 {
            for (address, entry) in state_growth::genesis_entries(args.seed, args.state_contracts) {
                alloc.insert(format!("{address:#x}"), entry);
            }
        }
    }
    Ok(genesis)
}

/// Writes the genesis file: `genesis`'s fields and allocation, then `--state-accounts` funded
/// accounts and `--state-slots` slots over `--state-contracts` contracts (every key and value
/// derived from the seed), streamed one entry at a time: an allocation of tens of millions of
/// slots is never held in memory.
fn write_genesis(
    path: &std::path::Path,
    genesis: &Value,
    args: &GenChainArgs,
) -> Result<(), String> {
    use std::io::Write;
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let fields = genesis.as_object().ok_or("genesis is not an object")?;
    let json = |v: &Value| serde_json::to_string(v).map_err(|e| e.to_string());
    let mut text = String::from("{\n");
    for (key, value) in fields.iter().filter(|(k, _)| *k != "alloc") {
        text += &format!("  {}: {},\n", json(&Value::from(key.as_str()))?, json(value)?);
    }
    text += "  \"alloc\": {";
    let mut first = true;
    let mut entry = |text: &mut String, address: String, body: &str| {
        text.push_str(if first { "\n    \"" } else { ",\n    \"" });
        first = false;
        text.push_str(&address);
        text.push_str("\": ");
        text.push_str(body);
    };
    for (address, account) in fields.get("alloc").and_then(Value::as_object).into_iter().flatten() {
        entry(&mut text, address.clone(), &json(account)?);
    }
    out.write_all(text.as_bytes()).map_err(fail)?;
    let derive = |tag: &[u8], i: u64, j: u64| {
        keccak256([&args.seed.to_be_bytes()[..], tag, &i.to_be_bytes(), &j.to_be_bytes()].concat())
    };
    let (accounts, slots) =
        if args.state_by_chain { (0, 0) } else { (args.state_accounts, args.state_slots) };
    for i in 0..accounts {
        text.clear();
        let address = Address::from_slice(&derive(b"account", i, 0)[12..]);
        let balance = hex_u256(U256::from(1_000_000_007u64 * (i + 1)));
        entry(&mut text, format!("{address:#x}"), &format!("{{\"balance\": \"{balance}\"}}"));
        out.write_all(text.as_bytes()).map_err(fail)?;
    }
    if slots > 0 {
        let contracts = args.state_contracts.clamp(1, slots);
        let mut left = slots;
        for k in 1..=contracts {
            let slots = if k == contracts {
                left
            } else {
                zipf_slots(k, contracts, slots).min(left - (contracts - k))
            };
            left -= slots;
            text.clear();
            let address = Address::from_slice(&derive(b"contract", k, 0)[12..]);
            let head = format!(
                "{{\"balance\": \"0x0\", \"code\": \"0x60{:02x}600055\", \"storage\": {{",
                k % 64
            );
            entry(&mut text, format!("{address:#x}"), &head);
            for j in 0..slots {
                if j > 0 {
                    text.push(',');
                }
                text.push_str(&format!(
                    "\n      \"{:#x}\": \"{}\"",
                    derive(b"slot", k, j),
                    slot_value(U256::from(j + 1))
                ));
                if text.len() >= 1 << 20 {
                    out.write_all(text.as_bytes()).map_err(fail)?;
                    text.clear();
                }
            }
            text.push_str("}}");
            out.write_all(text.as_bytes()).map_err(fail)?;
        }
    }
    out.write_all(b"\n  }\n}\n").map_err(fail)?;
    out.flush().map_err(fail)
}

/// One generated block, as `info.json` lists it.
#[derive(Debug, Serialize)]
struct BlockInfo {
    number: u64,
    hash: String,
    transactions: usize,
    gas_used: u64,
    /// Transactions whose receipt says failed (reverted or out of gas): none is expected.
    failed: usize,
    /// Size of the block's RLP (bytes).
    rlp_bytes: usize,
    /// Build (execution, BAL, state root) plus validation and commit (seconds).
    seconds: f64,
    /// The block's EIP-7685 execution requests (hex, type byte first): what `newPayloadV4`
    /// and later carry beside the block (`replay` sends them).
    requests: alloy_eips::eip7685::Requests,
}

/// `info.json`: how the chain was made and what it holds.
#[derive(Debug, Serialize)]
pub(crate) struct ChainInfo {
    fork: Fork,
    mix: Mix,
    seed: u64,
    gas_per_block: u64,
    block_gas_limit: u64,
    senders: usize,
    /// Funded accounts no block uses ([`spare_sender_key`]).
    pub(crate) spare_senders: u64,
    genesis_hash: String,
    blocks: Vec<BlockInfo>,
    transactions_by_kind: std::collections::BTreeMap<Kind, u64>,
    gas_used: u64,
    /// The prunes of `--state-prune-every`, in order.
    state_prunes: Vec<StatePrune>,
    /// Seconds the generation took.
    pub(crate) seconds: f64,
}

/// One prune of `--state-prune-every`.
#[derive(Debug, Serialize)]
struct StatePrune {
    /// The head block, whose state is kept.
    block: u64,
    /// Trie nodes kept and deleted.
    kept: u64,
    deleted: u64,
    /// Seconds the prune took (mark, sweep, compaction), and its mark and sweep apart.
    seconds: f64,
    mark_seconds: f64,
    sweep_seconds: f64,
}

impl ChainInfo {
    /// Blocks generated.
    pub(crate) fn block_count(&self) -> usize {
        self.blocks.len()
    }
}

/// Runs `gen-chain`: exit code 0 when every block was built and found VALID (any failure is
/// an error).
pub(crate) fn run(args: GenChainArgs) -> Result<std::process::ExitCode, String> {
    let info = generate(&args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&info).map_err(|e| e.to_string())?);
    } else {
        println!(
            "{}: {} blocks, {} transactions, {:.1} Mgas ({:?} mix, {:?} rules, seed {}) in {:.1} s: genesis.json, chain.rlp",
            args.out.display(),
            info.blocks.len(),
            info.blocks.iter().map(|b| b.transactions).sum::<usize>(),
            info.gas_used as f64 / 1e6,
            info.mix,
            info.fork,
            info.seed,
            info.seconds
        );
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Writes `genesis.json`, `chain.rlp` and `info.json` into `args.out`; returns the info.
pub(crate) fn generate(args: &GenChainArgs) -> Result<ChainInfo, String> {
    let start = Instant::now();
    // Room for every candidate's gas limit while the expected use fills `gas`; the mainnet
    // mix's first block also holds the pool's setup (under EIP-8037 the pair's code deposit
    // alone is 18.5M gas).
    let setup_gas = Kind::CreatePair.gas(args.fork).0 + Kind::AddLiquidity.gas(args.fork).0;
    let mut gas_limit = args.gas + args.gas / 2;
    if args.mix == Mix::Mainnet {
        gas_limit = gas_limit.max(setup_gas + setup_gas / 4);
    }
    let mut plan = StatePlan::new(
        args.seed,
        if args.state_by_chain { args.state_accounts } else { 0 },
        if args.state_by_chain { args.state_slots } else { 0 },
        args.state_contracts,
    );
    if plan.left() > 0 {
        gas_limit = gas_limit.max(args.state_gas * 2);
    }
    if args.mix == Mix::Spread
        && !(args.state_by_chain && args.state_accounts > 0 && args.state_slots > 0)
    {
        return Err("--mix spread touches the state --state-by-chain creates: give it with \
                    --state-accounts and --state-slots"
            .into());
    }
    let per_tx = match args.mix {
        Mix::Mainnet => 40_000,
        Mix::Spread => {
            (Kind::TransferExisting.gas(args.fork).1 + Kind::SlotUpdates.gas(args.fork).1) / 2
        }
        Mix::Hot => Kind::HotCounter.gas(args.fork).1,
        Mix::Cold => Kind::ColdReads.gas(args.fork).1,
    };
    // About one transaction per sender and block.
    let senders = (args.gas / per_tx).clamp(64, 50_000);
    let mut workload = Workload::new(args.seed, senders, args.mix, args.cold_slots.max(1));
    if args.mix == Mix::Spread {
        workload.access = Some(StateAccess::new(
            args.seed,
            args.state_accounts,
            args.state_slots,
            args.state_contracts,
            args.hot_share,
            args.hot_fraction,
        ));
    }
    let genesis = genesis(args, &workload, gas_limit)?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let genesis_path = args.out.join("genesis.json");
    write_genesis(&genesis_path, &genesis, args)?;
    let genesis_bytes =
        std::fs::read(&genesis_path).map_err(|e| format!("{}: {e}", genesis_path.display()))?;

    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let storage = Arc::new(Storage::open(dir.path()).map_err(|e| e.to_string())?);
    let store: Arc<dyn FullProvider> = storage.clone();
    let init = init_genesis(&*store, &genesis_bytes).map_err(|e| e.to_string())?;
    drop(genesis_bytes);
    let mut tree =
        BlockTree::new(store.clone(), rayon::current_num_threads()).map_err(|e| e.to_string())?;
    let mut parent = init.hash;
    let mut base_fee = init.header.base_fee_per_gas.unwrap_or(1_000_000_000);
    let (mut chain, mut bals) = (Vec::new(), Vec::new());
    // Under `--state-by-chain`, the two parts apart in geth's export format (each block with
    // its BAL on Amsterdam): the state's blocks, then the mix's.
    let (mut state_part, mut mix_part) = (Vec::new(), Vec::new());
    let (mut blocks, mut by_kind) = (Vec::new(), std::collections::BTreeMap::new());
    let mut state_prunes = Vec::new();
    // The chain's last block and, under `--state-by-chain`, the state part's last block (each
    // with its BAL's RLP and its requests): the heads the engine calls name.
    let (mut head, mut state_head) = (None, None);
    // The blocks creating the state, about: each call's expected use over the block's gas.
    let state_blocks = {
        let (accounts, slots) =
            if args.state_by_chain { (args.state_accounts, args.state_slots) } else { (0, 0) };
        let gas = accounts.div_ceil(state_growth::FANOUT_ACCOUNTS)
            * Kind::StateAccounts.gas(args.fork).1
            + slots.div_ceil(state_growth::FILL_SLOTS) * Kind::StateSlots.gas(args.fork).1;
        gas.div_ceil(args.state_gas)
    };
    let bar = crate::util::bar(state_blocks + args.blocks, "blocks");
    if args.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let (mut number, mut mix_blocks) = (0u64, 0u64);
    let mut checkpoint = args.state_datadir.as_deref().filter(|_| args.state_by_chain);
    while plan.left() > 0 || mix_blocks < args.blocks {
        number += 1;
        let state_block = plan.left() > 0;
        if !state_block {
            if let Some(dir) = checkpoint.take() {
                state_checkpoint(&mut tree, &storage, dir)?;
            }
        }
        if !state_block {
            mix_blocks += 1;
        }
        let block_start = Instant::now();
        // Twice the base fee leaves room for it to rise by 12.5 % a block.
        let max_fee = u128::from(base_fee) * 2 + 1_000_000_000;
        let (mut candidates, mut expected, mut limits) = (Vec::new(), 0u64, 0u64);
        // The mainnet mix's first block sets up the WETH9/USDT pool its swaps trade in.
        let mut setup: Vec<Kind> = if !state_block && mix_blocks == 1 && args.mix == Mix::Mainnet {
            vec![Kind::AddLiquidity, Kind::CreatePair]
        } else {
            Vec::new()
        };
        while state_block && expected < args.state_gas {
            let largest =
                Kind::StateAccounts.gas(args.fork).0.max(Kind::StateSlots.gas(args.fork).0);
            if limits + largest > gas_limit {
                break;
            }
            let draw = workload.rng.below(plan.left());
            let Some(call) = plan.next(draw) else { break };
            let (kind, tx, sender) = workload.state_transaction(call, args.fork, max_fee);
            let (limit, used) = kind.gas(args.fork);
            limits += limit;
            expected += used;
            *by_kind.entry(kind).or_insert(0u64) += 1;
            candidates.push((tx, sender));
        }
        while !state_block && (expected < args.gas || !setup.is_empty()) {
            // The kind first: a transaction made is a nonce spent.
            let kind = setup.pop().unwrap_or_else(|| workload.kind());
            let (limit, used) = kind.gas(args.fork);
            if limits + limit > gas_limit {
                break;
            }
            let (tx, sender) = workload.transaction(kind, args.fork, max_fee);
            limits += limit;
            expected += used;
            *by_kind.entry(kind).or_insert(0u64) += 1;
            candidates.push((tx, sender));
        }
        let timestamp = number * BLOCK_TIME;
        let attributes = PayloadAttributes {
            timestamp,
            prev_randao: keccak256(timestamp.to_be_bytes()),
            suggested_fee_recipient: Address::repeat_byte(0xfe),
            withdrawals: Some(Vec::new()),
            parent_beacon_block_root: Some(keccak256(number.to_be_bytes())),
            slot_number: (args.fork == Fork::Amsterdam).then_some(number),
            target_gas_limit: None,
            extra_data: None,
        };
        let built = tree
            .build_payload(parent, &attributes, &candidates, true)
            .map_err(|e| format!("block {number}: build: {e}"))?
            .ok_or_else(|| format!("block {number}: parent {parent} unknown"))?;
        let rlp = alloy_rlp::encode(&built.block);
        let bal = (args.fork == Fork::Amsterdam).then_some(&built.bal);
        let (status, _) = tree
            .new_payload(built.block.clone(), rlp.len(), None, bal)
            .map_err(|e| format!("block {number}: validation: {e}"))?;
        if status != PayloadStatus::Valid(built.hash) {
            return Err(format!("block {number}: the built block is {status:?}"));
        }
        tree.forkchoice_updated(built.hash, built.hash, built.hash)
            .map_err(|e| format!("block {number}: forkchoice: {e}"))?;
        base_fee = built.block.header.base_fee_per_gas.unwrap_or(base_fee);
        let receipts: Vec<alloy_consensus::ReceiptEnvelope> = store
            .receipts_by_number(number)
            .map_err(|e| format!("block {number}: receipts: {e}"))?
            .ok_or_else(|| format!("block {number}: no receipts stored"))?;
        let failed = receipts.iter().filter(|r| !r.status()).count();
        blocks.push(BlockInfo {
            number,
            hash: built.hash.to_string(),
            transactions: built.block.body.transactions.len(),
            gas_used: built.block.header.gas_used,
            failed,
            rlp_bytes: rlp.len(),
            seconds: block_start.elapsed().as_secs_f64(),
            requests: built.requests.clone(),
        });
        let bal_rlp =
            (args.fork == Fork::Amsterdam).then(|| Bytes::from(alloy_rlp::encode(&built.bal)));
        if !args.mix_files_only {
            chain.extend_from_slice(&rlp);
            if let Some(bal) = &bal_rlp {
                bals.extend_from_slice(bal);
            }
        }
        if args.state_by_chain && !(state_block && args.mix_files_only) {
            let bal = (args.fork == Fork::Amsterdam).then(|| built.bal.clone());
            let exported = gigagas_validation::ExportedBlock::new(built.block.clone(), bal);
            let part = if state_block { &mut state_part } else { &mut mix_part };
            part.extend_from_slice(&alloy_rlp::encode(&exported));
        }
        parent = built.hash;
        let block_head = (built.block, bal_rlp, built.requests);
        if args.state_by_chain && state_block {
            state_head = Some(block_head.clone());
        }
        head = Some(block_head);
        bar.inc(1);
        let every = args.state_prune_every;
        if state_block && every > 0 && number.is_multiple_of(every) && plan.left() > 0 {
            state_prunes.push(prune_state(&mut tree, &storage, number, &bar)?);
        }
    }
    bar.finish_and_clear();
    if let Some(dir) = checkpoint {
        state_checkpoint(&mut tree, &storage, dir)?;
    }
    if !args.mix_files_only {
        write(&args.out.join("chain.rlp"), &chain)?;
    }
    if args.state_by_chain {
        if !args.mix_files_only {
            write(&args.out.join(STATE_PART), &state_part)?;
        }
        write(&args.out.join(MIX_PART), &mix_part)?;
        let sample =
            StatePlan::new(args.seed, args.state_accounts, args.state_slots, args.state_contracts)
                .sample(args.state_accounts, 12);
        write(
            &args.out.join("sample.json"),
            &serde_json::to_vec_pretty(&sample).map_err(|e| e.to_string())?,
        )?;
    }
    if args.fork == Fork::Amsterdam && !args.mix_files_only {
        // The BALs beside the chain (an RLP list per block, back to back): geth's export
        // format has no place for them, newPayloadV5 needs them.
        write(&args.out.join(BAL_FILE), &bals)?;
    }
    let info = ChainInfo {
        fork: args.fork,
        mix: args.mix,
        seed: args.seed,
        gas_per_block: args.gas,
        block_gas_limit: gas_limit,
        senders: workload.senders.len(),
        spare_senders: args.spare_senders,
        genesis_hash: init.hash.to_string(),
        gas_used: blocks.iter().map(|b| b.gas_used).sum(),
        blocks,
        transactions_by_kind: by_kind,
        state_prunes,
        seconds: start.elapsed().as_secs_f64(),
    };
    write(
        &args.out.join("info.json"),
        &serde_json::to_vec_pretty(&info).map_err(|e| e.to_string())?,
    )?;
    if let Some((block, bal, requests)) = &head {
        write_engine_calls(&args.out, "", block, bal.as_ref(), requests)?;
    }
    if let Some((block, bal, requests)) = &state_head {
        write_engine_calls(&args.out, STATE_CALLS_PREFIX, block, bal.as_ref(), requests)?;
    }
    Ok(info)
}

/// Under `--state-by-chain`, the blocks that create the state (each with its BAL on
/// Amsterdam: geth's export format, what `gigagas import` and `geth import` read).
pub(crate) const STATE_PART: &str = "chain-state.rlp";
/// Under `--state-by-chain`, the mix's blocks after them, in the same format.
pub(crate) const MIX_PART: &str = "chain-blocks.rlp";

/// Under `--state-by-chain`, the prefix of the engine calls naming the state part's last block
/// (`state-newpayload.json`, `state-headfcu.json`): where a node that syncs only the state is
/// pointed, the mix's blocks then imported on top.
pub(crate) const STATE_CALLS_PREFIX: &str = "state-";

/// Commits what the tree holds and writes a checkpoint of the generator's datadir to `dir`.
fn state_checkpoint(tree: &mut BlockTree, storage: &Storage, dir: &Path) -> Result<(), String> {
    tree.wait_persisted().map_err(|e| format!("state checkpoint: {e}"))?;
    storage.checkpoint(dir).map_err(|e| format!("state checkpoint: {e}"))
}

/// Commits what the tree holds, then prunes every trie node the head's root (block `number`'s)
/// does not reach.
fn prune_state(
    tree: &mut BlockTree,
    storage: &Storage,
    number: u64,
    bar: &indicatif::ProgressBar,
) -> Result<StatePrune, String> {
    let start = Instant::now();
    tree.wait_persisted().map_err(|e| format!("block {number}: prune: {e}"))?;
    let stats = storage
        .prune_trie(KeepStates::Latest(1), PRUNE_THREADS, &mut |phase, n| {
            bar.set_message(format!("prune {phase} {n}"))
        })
        .map_err(|e| format!("block {number}: prune: {e}"))?;
    bar.set_message("");
    Ok(StatePrune {
        block: number,
        kept: stats.kept,
        deleted: stats.deleted,
        seconds: start.elapsed().as_secs_f64(),
        mark_seconds: stats.mark_time.as_secs_f64(),
        sweep_seconds: stats.sweep_time.as_secs_f64(),
    })
}

/// `{prefix}newpayload.json` and `{prefix}headfcu.json`: `block`'s `engine_newPayload` and the
/// forkchoice update making it head, safe and finalized — how a consensus client points a new
/// node at the chain (geth's devp2p suite testdata has the same files, unprefixed, for the
/// head).
fn write_engine_calls(
    out: &Path,
    prefix: &str,
    block: &alloy_consensus::Block<TxEnvelope>,
    bal: Option<&Bytes>,
    requests: &alloy_eips::eip7685::Requests,
) -> Result<(), String> {
    let hash = block.header.hash_slow();
    let (method, params) = crate::replay::new_payload(block, hash, bal, requests);
    let new_payload = json!([{ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }]);
    let state = json!({ "headBlockHash": hash, "safeBlockHash": hash, "finalizedBlockHash": hash });
    let fcu = if bal.is_some() {
        json!({ "jsonrpc": "2.0", "id": 2, "method": "engine_forkchoiceUpdatedV4", "params": [state, null, null] })
    } else {
        json!({ "jsonrpc": "2.0", "id": 2, "method": "engine_forkchoiceUpdatedV3", "params": [state, null] })
    };
    let pretty = |v: &Value| serde_json::to_vec_pretty(v).map_err(|e| e.to_string());
    write(&out.join(format!("{prefix}newpayload.json")), &pretty(&new_payload)?)?;
    write(&out.join(format!("{prefix}headfcu.json")), &pretty(&fcu)?)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}
