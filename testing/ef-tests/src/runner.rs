//! Runs one BlockchainTests case through gigagas' pipeline: header checks, sequential execution
//! that builds the BAL, parallel execution driven by that BAL (both must agree), header
//! commitments, and the state-root stage.

use crate::{
    fixture::BlockchainTest,
    header::{check_block_size, check_header, genesis_header},
    state::WorldState,
};
use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_hardforks::EthereumHardfork;
use alloy_primitives::{map::HashMap, B256};
use alloy_rlp::Decodable;
use gigagas_executor::{
    compare_outcomes,
    parallel::{execute_parallel, ParallelBlock, ParallelConfig},
    sequential::execute_sequential,
    validate_header, ExecutionError, Scheduler,
};
use gigagas_primitives::{header::HeaderError, BlockInput, ChainSpec, RecoveryError};
use gigagas_state::StateError;
use std::{collections::BTreeMap, sync::Arc};

/// How many ancestors `BLOCKHASH` can see.
const BLOCKHASH_WINDOW: u64 = 256;

/// A block the chain accepted, with the state after it.
#[derive(Debug, Clone)]
struct Imported {
    header: Header,
    state: WorldState,
    /// Hashes of this block and its ancestors within the `BLOCKHASH` window, by number.
    hashes: Arc<BTreeMap<u64, B256>>,
}

/// How to run fixtures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// Worker threads of the parallel executor.
    pub threads: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self { threads: 2 }
    }
}

/// Why a block of a fixture or chain file is rejected (the pipeline's verdict on the block).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockRejection {
    /// The block's RLP does not decode.
    #[error("RLP: {0}")]
    Rlp(alloy_rlp::Error),
    /// Bytes follow the block's RLP.
    #[error("RLP: {0} trailing bytes")]
    TrailingBytes(usize),
    /// The parent was not imported.
    #[error("unknown parent {0}")]
    UnknownParent(B256),
    /// A header or block-size rule fails.
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// A signature does not recover.
    #[error(transparent)]
    Recovery(#[from] RecoveryError),
    /// The parent's state cannot be read.
    #[error("parent state: {0}")]
    ParentState(#[from] StateError),
    /// Execution fails or disagrees with the header (gas, receipts, bloom, requests, BAL).
    #[error(transparent)]
    Execution(#[from] ExecutionError),
    /// The sequential reference built no BAL (a bug of the runner's, not of the block).
    #[error("the sequential reference built no BAL")]
    NoBal,
    /// The block's BAL differs from the one execution builds.
    #[error("block access list differs from the built one: {first_diff}")]
    BalDiff {
        /// The first difference, as alloy-eip7928's `BalDiff` reports it.
        first_diff: String,
    },
    /// The parallel executor returned no outcome (a bug of ours, not of the block).
    #[error("the parallel executor returned no outcome")]
    NoOutcome,
    /// Pre-Byzantium: the receipts root rebuilt with per-transaction state roots differs.
    #[error("receipts root {found} (intermediate state roots rebuilt per transaction), header has {expected}")]
    ReceiptsRoot {
        /// The header's `receiptsRoot`.
        expected: B256,
        /// Ours.
        found: B256,
    },
    /// The post-state root differs from the header's.
    #[error("state root {found}, header has {expected}")]
    StateRoot {
        /// The header's `stateRoot`.
        expected: B256,
        /// Ours.
        found: B256,
    },
}

/// Why a test fails: its first difference from the fixture's expectations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TestFailure {
    /// The fixture's `network` is no fork we know.
    #[error("unknown network {0}")]
    UnknownNetwork(String),
    /// The genesis block does not decode.
    #[error("genesis: {0}")]
    Genesis(Box<BlockRejection>),
    /// The pre-state's root differs from the genesis header's.
    #[error("genesis state root {found}, header has {expected}")]
    GenesisStateRoot {
        /// The genesis header's `stateRoot`.
        expected: B256,
        /// The root of the fixture's `pre`.
        found: B256,
    },
    /// A block the fixture marks invalid was accepted.
    #[error("block {index}: accepted, but must be rejected ({exception})")]
    Accepted {
        /// Position of the block in the fixture.
        index: usize,
        /// The fixture's `expectException`.
        exception: String,
    },
    /// A valid block was rejected.
    #[error("block {index}: rejected: {reason}")]
    Rejected {
        /// Position of the block in the fixture.
        index: usize,
        /// Why (boxed: execution errors are large).
        reason: Box<BlockRejection>,
    },
    /// The fixture's `lastblockhash` was not imported.
    #[error("head {0} was not imported")]
    HeadMissing(B256),
    /// The post-state differs (the first difference, naming account and field).
    #[error("post state: {0}")]
    PostState(String),
    /// The post-state root differs from the fixture's `postStateHash`.
    #[error("post state root {found}, expected {expected}")]
    PostStateRoot {
        /// The fixture's `postStateHash`.
        expected: B256,
        /// Ours.
        found: B256,
    },
}

/// The chain a fixture's `network` names: every fork up to it active from genesis (geth's
/// `tests.Forks`). `Amsterdam` is geth 1.17.10's Glamsterdam (revm's `AMSTERDAM` after BPO2),
/// except for fixtures filled for the EIP-7928 draft (execution-spec-tests tests-bal@v5.0.0,
/// [`BlockchainTest::is_bal_devnet_draft`]): those run under the bal-devnet rules on an Osaka
/// chain with BPO2's blob parameters ([`ChainSpec::bal_devnet_time`], docs/conformance.md).
fn chain_for(test: &BlockchainTest) -> Result<ChainSpec, TestFailure> {
    let network = &test.network;
    let fork: EthereumHardfork =
        network.parse().map_err(|_| TestFailure::UnknownNetwork(network.to_string()))?;
    Ok(match fork {
        EthereumHardfork::Amsterdam if test.is_bal_devnet_draft() => ChainSpec {
            bal_devnet_time: Some(0),
            ..ChainSpec::from_genesis_fork(EthereumHardfork::Bpo2)
        },
        _ => ChainSpec::from_genesis_fork(fork),
    })
}

/// Runs `test` through the pipeline with `options`.
///
/// # Errors
/// The first reason the test fails: a valid block rejected (with its index and the reason), an
/// invalid block accepted, a wrong head, or a post-state that differs (naming the account and
/// field).
pub fn run_test(test: &BlockchainTest, options: &RunOptions) -> Result<(), TestFailure> {
    let chain = chain_for(test)?;
    let genesis = decode_block(&test.genesis_rlp).map_err(|e| TestFailure::Genesis(Box::new(e)))?;
    let state = WorldState::from_fixture(&test.pre);
    let root = state.state_root();
    if root != genesis.header.state_root {
        return Err(TestFailure::GenesisStateRoot {
            expected: genesis.header.state_root,
            found: root,
        });
    }
    let mut imported = chain_from_genesis(genesis.header, state);
    for (i, block) in test.blocks.iter().enumerate() {
        let imported_block = decode_block(&block.rlp).and_then(|decoded| {
            let bal = block.block_access_list.as_ref();
            import(&chain, &imported, decoded, block.rlp.len(), bal, options.threads)
        });
        match (imported_block, &block.expect_exception) {
            (Ok((hash, next)), None) => {
                imported.insert(hash, next);
            }
            (Ok(_), Some(exception)) => {
                return Err(TestFailure::Accepted { index: i, exception: exception.clone() })
            }
            (Err(reason), None) => {
                return Err(TestFailure::Rejected { index: i, reason: Box::new(reason) })
            }
            (Err(_), Some(_)) => {}
        }
    }
    let head =
        imported.get(&test.lastblockhash).ok_or(TestFailure::HeadMissing(test.lastblockhash))?;
    if let Some(expected) = &test.post_state {
        if let Some(diff) = head.state.first_difference(expected) {
            return Err(TestFailure::PostState(diff));
        }
    }
    if let Some(expected) = test.post_state_hash {
        let root = head.state.state_root();
        if root != expected {
            return Err(TestFailure::PostStateRoot { expected, found: root });
        }
    }
    Ok(())
}

/// The imported blocks of a chain that holds only its genesis block, keyed by hash.
fn chain_from_genesis(header: Header, state: WorldState) -> HashMap<B256, Imported> {
    let hash = header.hash_slow();
    let hashes = Arc::new(BTreeMap::from([(header.number, hash)]));
    HashMap::from_iter([(hash, Imported { header, state, hashes })])
}

/// Decodes a block, requiring the whole input to be one RLP block.
fn decode_block(rlp: &[u8]) -> Result<Block<TxEnvelope>, BlockRejection> {
    let mut buf = rlp;
    let block = Block::<TxEnvelope>::decode(&mut buf).map_err(BlockRejection::Rlp)?;
    if !buf.is_empty() {
        return Err(BlockRejection::TrailingBytes(buf.len()));
    }
    Ok(block)
}

/// Validates and executes one block on top of its parent; returns its hash and the imported
/// block, or why it is invalid.
fn import(
    chain: &ChainSpec,
    imported: &HashMap<B256, Imported>,
    block: Block<TxEnvelope>,
    rlp_len: usize,
    given_bal: Option<&gigagas_bal::BlockAccessList>,
    threads: usize,
) -> Result<(B256, Imported), BlockRejection> {
    let hash = block.header.hash_slow();
    let parent = imported
        .get(&block.header.parent_hash)
        .ok_or(BlockRejection::UnknownParent(block.header.parent_hash))?;
    check_header(chain, &parent.header, &block.header, &block.body, None)?;
    check_block_size(chain, &block.header, rlp_len)?;

    let input = BlockInput {
        hash,
        header: block.header,
        transactions: block.body.transactions,
        claimed_senders: Vec::new(),
        withdrawals: block.body.withdrawals,
        ommers: block.body.ommers,
    };
    let senders = input.par_recover(chain)?;
    let pre_state = parent.state.pre_state(parent.hashes.clone())?;

    // The sequential reference builds the BAL; the parallel executor runs driven by it, or by
    // the block's own BAL when it comes with one, which must then equal the built one.
    let reference = execute_sequential(chain, &input, &senders, &pre_state)?;
    let Some(built) = reference.bal.as_ref() else { return Err(BlockRejection::NoBal) };
    let bal = match given_bal {
        Some(given) => {
            if given != built {
                let diff = alloy_eip7928::BalDiff::between(given, built).first_diff;
                return Err(BlockRejection::BalDiff { first_diff: format!("{diff:?}") });
            }
            given
        }
        None => built,
    };
    validate_header(chain, &input, &reference, bal)?;
    let parallel_input = ParallelBlock {
        block: &input,
        senders: (&senders).into(),
        pre_state: &pre_state,
        bal,
        gas_used_hint: Some(&reference.tx_gas_used),
    };
    let config = ParallelConfig { threads, scheduler: Scheduler::Ols, batch: 1 };
    let mut run = execute_parallel(chain, &[parallel_input], config);
    let parallel = run.outcomes.pop().ok_or(BlockRejection::NoOutcome)??;
    compare_outcomes(&reference, &parallel, bal)?;
    validate_header(chain, &input, &parallel, bal)?;

    // Before Byzantium a receipt carries the state root after its transaction: rebuild each
    // from the BAL's writes and the executor's existence changes at its index.
    if !chain.is_byzantium(input.header.number) && !input.transactions.is_empty() {
        check_pre_byzantium_receipts(&parent.state, bal, &parallel, &input.header)?;
    }

    // State-root stage: the post-state diff applied to the parent's full state.
    let mut state = parent.state.clone();
    let codes = bal.iter().flat_map(|a| a.code_changes.iter().map(|c| c.new_code()));
    state.apply(&reference.post_state, &reference.deleted, codes);
    let root = state.state_root();
    if root != input.header.state_root {
        return Err(BlockRejection::StateRoot { expected: input.header.state_root, found: root });
    }

    let mut hashes = (*parent.hashes).clone();
    hashes.insert(input.header.number, hash);
    while hashes.len() as u64 > BLOCKHASH_WINDOW {
        hashes.pop_first();
    }
    Ok((hash, Imported { header: input.header, state, hashes: Arc::new(hashes) }))
}

/// The result of importing one block of a chain file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBlock {
    /// Position in the file (0-based).
    pub index: usize,
    /// Block number, when the block decoded.
    pub number: Option<u64>,
    /// Transactions in the block.
    pub transactions: usize,
    /// `Ok` when the block is valid: header checks, execution (sequential and parallel),
    /// receipts root, logs bloom, requests hash and state root all match.
    pub result: Result<(), BlockRejection>,
}

/// Imports `chain_rlp` (RLP blocks back to back, like geth's `export`) on top of the geth-format
/// `genesis`, each block through the same pipeline as [`run_test`]. Blocks whose parent was
/// rejected are rejected too.
///
/// # Errors
/// When the genesis state root cannot be built or the file does not decode at all.
pub fn run_chain(
    chain: ChainSpec,
    genesis: &alloy_genesis::Genesis,
    chain_rlp: &[u8],
    options: &RunOptions,
) -> Result<Vec<ChainBlock>, alloy_rlp::Error> {
    let state = WorldState::from_genesis(&genesis.alloc);
    let header = genesis_header(genesis, &chain, state.state_root());
    let mut imported = chain_from_genesis(header, state);
    let mut out = Vec::new();
    let mut buf = chain_rlp;
    while !buf.is_empty() {
        let start = buf;
        let header = alloy_rlp::Header::decode(&mut buf)?;
        buf = &buf[header.payload_length..];
        let rlp = &start[..start.len() - buf.len()];
        let (number, transactions, result) = match decode_block(rlp) {
            Ok(block) => {
                let (number, transactions) = (block.header.number, block.body.transactions.len());
                let result = import(&chain, &imported, block, rlp.len(), None, options.threads)
                    .map(|(hash, next)| {
                        imported.insert(hash, next);
                    });
                (Some(number), transactions, result)
            }
            Err(reason) => (None, 0, Err(reason)),
        };
        out.push(ChainBlock { index: out.len(), number, transactions, result });
    }
    Ok(out)
}

/// Rebuilds pre-Byzantium receipts (intermediate state root, cumulative gas, bloom, logs), the
/// state after transaction `i` being `parent` with indices 0..=i+1 applied
/// ([`WorldState::apply_index`]), and compares their root with the header's `receiptsRoot`.
fn check_pre_byzantium_receipts(
    parent: &WorldState,
    bal: &[alloy_eip7928::AccountChanges],
    outcome: &gigagas_executor::BlockOutcome,
    header: &Header,
) -> Result<(), BlockRejection> {
    use alloy_consensus::{Eip658Value, ReceiptEnvelope};
    let mut state = parent.clone();
    state.apply_index(bal, &outcome.existence, 0);
    let mut receipts = Vec::with_capacity(outcome.receipts.len());
    for (i, receipt) in outcome.receipts.iter().enumerate() {
        state.apply_index(bal, &outcome.existence, i as u64 + 1);
        let mut r = receipt.clone();
        let root = Eip658Value::PostState(state.state_root());
        match &mut r {
            ReceiptEnvelope::Legacy(r)
            | ReceiptEnvelope::Eip2930(r)
            | ReceiptEnvelope::Eip1559(r)
            | ReceiptEnvelope::Eip4844(r)
            | ReceiptEnvelope::Eip7702(r) => r.receipt.status = root,
        }
        receipts.push(r);
    }
    let root = alloy_consensus::proofs::calculate_receipt_root(&receipts);
    if root != header.receipts_root {
        return Err(BlockRejection::ReceiptsRoot { expected: header.receipts_root, found: root });
    }
    Ok(())
}
