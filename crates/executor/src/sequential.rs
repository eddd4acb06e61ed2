//! The sequential reference: alloy-evm's Ethereum block executor over one revm `State`,
//! committing after every transaction, with revm's EIP-7928 BAL builder attached.

use crate::{
    eip7610::{collision_targets, StorageCollisions},
    error::map_block_error,
    evm_config::EvmConfig,
    optimistic::Speculations,
    BlockOutcome, ExecutionError, PostStateDiff,
};
use alloy_consensus::{transaction::Recovered, Transaction, TxEnvelope};
use alloy_evm::{
    block::{BlockExecutionError, BlockExecutor},
    eth::EthTxResult,
    Evm, EvmEnv, FromRecoveredTx,
};
use alloy_primitives::{Address, B256};
use gigagas_bal::{BlockAccessIndex, Phase};
use gigagas_primitives::{BlockInput, ChainSpec};
use gigagas_state::PreState;
use revm::{context::TxEnv, context_interface::Cfg, database::State};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A block run in order over candidate transactions by [`crate::builder::build_block`]
/// (or the reference, which includes every transaction).
#[derive(Debug)]
pub struct BuiltBlock {
    /// The transactions included, in block order.
    pub transactions: Vec<TxEnvelope>,
    /// Their senders.
    pub senders: Vec<Address>,
    /// Execution outcome (gas, receipts, BAL, post-state, requests) of the built block.
    pub outcome: BlockOutcome,
    /// Candidates left out: (transaction hash, why: does not fit the remaining gas, or the EVM
    /// rejected it — nonce, balance, fee cap, …).
    pub skipped: Vec<(B256, String)>,
}

/// Executes `block` in order against `pre_state` as reth does (pre-execution system calls,
/// transactions committed one by one, post-execution rewards / withdrawals / requests) and builds
/// its BAL on the way (index 0, `i + 1` per transaction, `n + 1`).
///
/// `senders` holds one recovered sender per transaction.
///
/// # Errors
/// [`ExecutionError`] naming block and phase when a transaction or system call fails.
pub fn execute_sequential(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    pre_state: &PreState,
) -> Result<BlockOutcome, ExecutionError> {
    execute_in_order(chain, block, senders, pre_state, true, Beside::default())
}

/// [`execute_sequential`] without revm's BAL builder: the same block execution, receipts and
/// post-state, with [`BlockOutcome::bal`] `None`. What a node needs for blocks that come without
/// a BAL and whose BAL it does not have to produce; `gigagas bench` times it to show what the
/// builder costs.
///
/// # Errors
/// As [`execute_sequential`].
pub fn execute_sequential_without_bal(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    pre_state: &PreState,
) -> Result<BlockOutcome, ExecutionError> {
    execute_in_order(chain, block, senders, pre_state, false, Beside::default())
}

/// What the in-order run shares with the prewarming workers beside it ([`crate::prewarm`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Beside<'a> {
    /// Holds the number of transactions done after each one (what the workers stay ahead of).
    pub(crate) progress: Option<&'a AtomicUsize>,
    /// The workers' speculative results, committed instead of executing a transaction when
    /// every value it read still holds ([`crate::optimistic`]; pre-Amsterdam gas rules only).
    pub(crate) speculations: Option<&'a Speculations>,
}

/// The block's transactions in order, the BAL built when `build_bal`, with the prewarming
/// workers `beside` it.
pub(crate) fn execute_in_order(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    pre_state: &PreState,
    build_bal: bool,
    beside: Beside<'_>,
) -> Result<BlockOutcome, ExecutionError> {
    let candidates = block.transactions.iter().zip(senders).map(|(tx, s)| (tx, *s));
    Ok(run_in_order(chain, block, candidates, pre_state, build_bal, false, beside)?.outcome)
}

/// alloy-evm's check that a transaction of gas limit `tx_gas` fits a block of `gas_limit`:
/// `min(tx_gas, cap)` (the EIP-7825 cap) within the gas left after `used` — execution gas
/// before refunds under EIP-7778 and EIP-8037, else cumulative gas after refunds — and, under
/// EIP-8037 (`state_used`: the block's state gas so far), the whole `tx_gas` within the gas left
/// after the state gas. `Err` carries the gas available in the dimension that does not fit.
pub(crate) fn check_fits(
    gas_limit: u64,
    tx_gas: u64,
    cap: u64,
    used: u64,
    state_used: Option<u64>,
) -> Result<(), u64> {
    let available = gas_limit.saturating_sub(used);
    if tx_gas.min(cap) > available {
        return Err(available);
    }
    match state_used.map(|state| gas_limit.saturating_sub(state)) {
        Some(available) if tx_gas > available => Err(available),
        _ => Ok(()),
    }
}

/// The sequential run shared by the reference and the block builder: pre-execution system
/// calls, `candidates` committed one by one (BAL index `i + 1` for the `i`-th included), then
/// the post-execution changes. With `skip_invalid` a candidate that does not fit the remaining
/// gas or that the EVM rejects is left out (recorded in [`BuiltBlock::skipped`]); otherwise it
/// fails the block. `beside`: the prewarming workers' progress counter and kept results.
pub(crate) fn run_in_order<'t>(
    chain: &ChainSpec,
    block: &BlockInput,
    candidates: impl IntoIterator<Item = (&'t TxEnvelope, Address)>,
    pre_state: &PreState,
    build_bal: bool,
    skip_invalid: bool,
    beside: Beside<'_>,
) -> Result<BuiltBlock, ExecutionError> {
    let number = block.number();
    let gas_limit = block.header.gas_limit;
    let mut state =
        State::builder().with_database_ref(pre_state).with_bal_builder_if(build_bal).build();
    let mut transactions = Vec::new();
    let mut senders = Vec::new();
    let mut skipped = Vec::new();
    // EIP-7778 (bal-devnet rules): the block's gas counts each transaction before refunds, for
    // the header's `gasUsed` and for the check that a transaction fits; alloy-evm does so only
    // together with EIP-8037, so it is done here (receipts keep gas after refunds).
    let before_refunds = chain.is_bal_devnet(block.header.timestamp);
    let (result, tx_gas_used, block_gas_before_refunds) = {
        let mut ex = EvmConfig::new(chain).block_executor(block, &mut state);
        ex.evm_mut().db_mut().set_bal_index(BlockAccessIndex::PRE_EXECUTION);
        ex.apply_pre_execution_changes()
            .map_err(|e| map_block_error(number, Phase::PreExecution, e))?;
        let gas_cap = ex.evm().cfg_env().tx_gas_limit_cap();
        // Kept speculative results are committed under the gas rules before EIP-7778 / 8037
        // only (with them the block's gas is counted otherwise before the run).
        let speculations = beside.speculations.filter(|_| {
            !before_refunds && !skip_invalid && !ex.evm().cfg_env().enable_amsterdam_eip8037
        });
        let beneficiary = block.header.beneficiary;
        let mut tx_gas_used = Vec::with_capacity(block.transactions.len());
        let mut cumulative = 0u64;
        let state_gas = ex.evm().cfg_env().enable_amsterdam_eip8037;
        for (tx, sender) in candidates {
            let i = tx_gas_used.len();
            let used =
                if before_refunds || state_gas { ex.block_regular_gas_used } else { cumulative };
            let state_used = state_gas.then_some(ex.block_state_gas_used);
            if let Err(available) = check_fits(gas_limit, tx.gas_limit(), gas_cap, used, state_used)
            {
                if skip_invalid {
                    skipped.push((*tx.tx_hash(), "does not fit the remaining block gas".into()));
                    continue;
                }
                if before_refunds {
                    return Err(ExecutionError::GasLimitExceeded {
                        block: number,
                        tx_index: i,
                        gas_limit: tx.gas_limit(),
                        available,
                    });
                }
            }
            ex.evm_mut().db_mut().set_bal_index(BlockAccessIndex::from_tx_index(i as u64));
            // A speculative result whose reads still hold, after alloy-evm's check that the
            // transaction fits the block's remaining gas.
            let reused = speculations.and_then(|s| {
                let fits = tx.gas_limit().min(gas_cap) <= gas_limit.saturating_sub(cumulative);
                let speculated = s.take(i).filter(|_| fits)?;
                let db = ex.evm_mut().db_mut();
                let valid = speculated.validate(db, tx, sender, beneficiary).ok().flatten();
                let counter = if valid.is_some() { &s.reused } else { &s.stale };
                counter.fetch_add(1, Ordering::Relaxed);
                valid
            });
            let out = match reused {
                Some(result) => {
                    let blob_gas_used = tx.blob_gas_used().unwrap_or_default();
                    Ok(EthTxResult { result, blob_gas_used, tx_type: tx.tx_type() })
                }
                // revm's run, then EIP-7610's storage collisions (crate::eip7610): run again
                // with them when the transaction loaded an account that has storage but no code.
                None => ex
                    .execute_transaction_without_commit(Recovered::new_unchecked(tx, sender))
                    .and_then(|mut out| {
                        let targets = collision_targets(&out.result.state, pre_state)
                            .map_err(BlockExecutionError::other)?;
                        if !targets.is_empty() {
                            let env =
                                EvmEnv::new(ex.evm().cfg_env().clone(), ex.evm().block().clone());
                            let mut evm = EvmConfig::new(chain).evm_with_inspector(
                                &mut **ex.evm_mut().db_mut(),
                                env,
                                StorageCollisions::new(targets),
                            );
                            out.result = evm
                                .transact(TxEnv::from_recovered_tx(tx, sender))
                                .map_err(|e| BlockExecutionError::evm(e, *tx.tx_hash()))?;
                        }
                        Ok(out)
                    }),
            };
            // The writes published for the workers' later speculative runs, then committed.
            let executed = out.map(|out| {
                if let Some(s) = speculations {
                    s.publish(i, &out.result.state);
                }
                ex.commit_transaction(out)
            });
            match executed {
                Ok(gas) => {
                    cumulative += gas.tx_gas_used();
                    tx_gas_used.push(gas.tx_gas_used());
                    if skip_invalid {
                        transactions.push(tx.clone());
                        senders.push(sender);
                    }
                }
                Err(e) if skip_invalid => skipped.push((*tx.tx_hash(), e.to_string())),
                Err(e) => return Err(map_block_error(number, Phase::Tx(i), e)),
            }
            if let Some(progress) = beside.progress {
                progress.store(i + 1, Ordering::Relaxed);
            }
        }
        let n = tx_gas_used.len() as u64;
        ex.evm_mut().db_mut().set_bal_index(BlockAccessIndex::new(n + 1));
        let regular = ex.block_regular_gas_used;
        let (_, result) =
            ex.finish().map_err(|e| map_block_error(number, Phase::PostExecution, e))?;
        (result, tx_gas_used, regular)
    };
    let bal = state.take_built_alloy_bal();
    let outcome = BlockOutcome {
        number,
        gas_used: if before_refunds { block_gas_before_refunds } else { result.gas_used },
        tx_gas_used,
        receipts: result.receipts,
        post_state: PostStateDiff::from_cache(&state.cache, pre_state)
            .map_err(|source| ExecutionError::State { block: number, source })?,
        deleted: PostStateDiff::deleted_from_cache(&state.cache, pre_state),
        wiped: PostStateDiff::wiped_from_cache(&state.cache, pre_state),
        bal,
        requests: result.requests,
        existence: Vec::new(),
        fallback: None,
    };
    Ok(BuiltBlock { transactions, senders, outcome, skipped })
}
