//! Ordered commit and validation of one block after all its transactions ran.

use super::{positioned::PositionedDb, prepare::Prepared, ParallelBlock, Shared, TxExec};
use crate::{
    error::{map_block_error, PositionedError},
    evm_config::EvmConfig,
    receipt::receipt_envelope,
    sequential::{check_fits, execute_sequential},
    AccountExistence as Existence, AccountPost, BlockOutcome, ExecutionError, PostStateDiff,
};
use alloy_consensus::Transaction as _;
use alloy_evm::{block::BlockExecutor, Evm};
use alloy_primitives::{Address, U256};
use gigagas_bal::{
    writes::{check_writes, fragment_writes},
    Bal, BalValidationError, BlockAccessIndex, Phase,
};
use gigagas_primitives::ChainSpec;
use revm::primitives::KECCAK_EMPTY;
use revm::{context_interface::Cfg, database::State};
use std::{sync::OnceLock, time::Instant};

/// [`commit`] with its duration in nanoseconds.
pub(super) fn timed_commit(
    shared: &Shared<'_>,
    b: usize,
) -> (Result<BlockOutcome, ExecutionError>, u64) {
    let start = Instant::now();
    let outcome = commit(shared, b);
    (outcome, start.elapsed().as_nanos() as u64)
}

/// Checks a system-phase fragment (index 0 or `n + 1`) against the BAL and marks its keys.
fn check_system_fragment(
    number: u64,
    phase: Phase,
    index: u64,
    prep: &Prepared,
    fragment: &Bal,
) -> Result<(), ExecutionError> {
    for (address, account) in &fragment.accounts {
        prep.keys.touch(number, phase, address, None, account.storage.storage.keys())?;
    }
    check_writes(number, phase, prep.writes.at(index), &fragment_writes(fragment))?;
    Ok(())
}

fn commit(shared: &Shared<'_>, b: usize) -> Result<BlockOutcome, ExecutionError> {
    let pb = &shared.blocks[b];
    let prep = shared.prepared(b)?;
    let number = pb.block.number();
    let n = pb.block.transactions.len();

    // Index 0 first, so that errors come out in BAL index order: pre-execution system calls
    // (EIP-4788 beacon root, EIP-2935 history).
    // The system calls' first read outside the BAL (alloy-evm reports it as a message).
    let miss = OnceLock::new();
    let system_error = |phase, e| match miss.get() {
        Some(p) => PositionedError::clone(p).into_execution_error(number, phase),
        None => map_block_error(number, phase, e),
    };
    let pre_fragment = {
        let mut state = bal_state(pb, prep, 0, &miss);
        {
            let mut ex = EvmConfig::new(shared.chain).block_executor(pb.block, &mut state);
            ex.apply_pre_execution_changes().map_err(|e| system_error(Phase::PreExecution, e))?;
        }
        state.take_built_bal().unwrap_or_default()
    };
    check_system_fragment(number, Phase::PreExecution, 0, prep, &pre_fragment)?;

    let mut txs: Vec<TxExec> = Vec::with_capacity(n);
    for (i, cell) in shared.results[b].iter().enumerate() {
        match cell.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(Ok(t)) => txs.push(t),
            Some(Err(e)) => return Err(e),
            None => {
                return Err(ExecutionError::Evm {
                    block: number,
                    phase: Phase::Tx(i),
                    reason: "transaction was not executed".into(),
                })
            }
        }
    }
    if let Some((i, address)) =
        txs.iter().enumerate().find_map(|(i, t)| t.stale_view.map(|a| (i, a)))
    {
        let reason = format!(
            "tx {i} touches account {address}, destroyed earlier in the block (pre-Cancun \
             SELFDESTRUCT): re-executed in order"
        );
        return fallback(shared.chain, pb, reason);
    }

    // Transactions in order: block gas limit, cumulative gas, receipts. This is what alloy-evm's
    // `EthBlockExecutor::commit_transaction` does, minus the logs bloom (already computed by the
    // workers) and minus the state commit (the BAL already positions index n + 1).
    let post_index = BlockAccessIndex::new(n as u64 + 1);
    let mut state = bal_state(pb, prep, post_index.0, &miss);
    let mut ex = EvmConfig::new(shared.chain).block_executor(pb.block, &mut state);
    let (amsterdam, gas_cap) = {
        let cfg = ex.evm().cfg_env();
        (cfg.enable_amsterdam_eip8037, cfg.tx_gas_limit_cap())
    };
    // EIP-7778 under the bal-devnet rules: block gas before refunds (as the sequential run).
    let before_refunds = shared.chain.is_bal_devnet(pb.block.header.timestamp);
    let cancun = shared.chain.is_cancun(pb.block.header.timestamp);
    let mut tx_gas_used = Vec::with_capacity(n);
    let mut receipts = Vec::with_capacity(n);
    for (i, (tx, t)) in pb.block.transactions.iter().zip(txs).enumerate() {
        let used = if amsterdam || before_refunds {
            ex.block_regular_gas_used
        } else {
            ex.cumulative_tx_gas_used
        };
        let state_used = amsterdam.then_some(ex.block_state_gas_used);
        let gas_limit = pb.block.header.gas_limit;
        if let Err(available) = check_fits(gas_limit, tx.gas_limit(), gas_cap, used, state_used) {
            return Err(ExecutionError::GasLimitExceeded {
                block: number,
                tx_index: i,
                gas_limit: tx.gas_limit(),
                available,
            });
        }
        let gas = t.result.gas();
        ex.cumulative_tx_gas_used += gas.tx_gas_used();
        ex.block_regular_gas_used += gas.block_regular_gas_used();
        ex.block_state_gas_used += gas.block_state_gas_used();
        if cancun {
            ex.blob_gas_used += tx.blob_gas_used().unwrap_or_default();
        }
        tx_gas_used.push(gas.tx_gas_used());
        let success = t.result.is_success();
        receipts.push(receipt_envelope(
            tx.tx_type(),
            success,
            ex.cumulative_tx_gas_used,
            t.result.into_logs(),
            t.logs_bloom,
        ));
    }
    ex.receipts = receipts;
    let block_gas_before_refunds = ex.block_regular_gas_used;
    // Index n + 1: rewards, withdrawals, EIP-6110 deposits, EIP-7002/7251 requests.
    let result = ex.finish().map_err(|e| system_error(Phase::PostExecution, e))?.1;
    let post_fragment = state.take_built_bal().unwrap_or_default();
    check_system_fragment(number, Phase::PostExecution, post_index.0, prep, &post_fragment)?;

    // Every write matched at its index; every listed account and slot must have been touched.
    // Together: execution's BAL is the given BAL.
    prep.keys.check_all_touched(number)?;
    // The post-state the BAL implies, now that every check passed: execution's. Only the block's
    // one commit takes it.
    let mut post_state =
        prep.post_state.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_else(|| {
            PostStateDiff::from_bal(pb.bal, &prep.codes, &prep.keys, &prep.values)
        });
    let (deleted, existence) = settle_existence(shared, b, &mut post_state);
    Ok(BlockOutcome {
        number,
        gas_used: if before_refunds { block_gas_before_refunds } else { result.gas_used },
        tx_gas_used,
        receipts: result.receipts,
        post_state,
        bal: None,
        deleted,
        wiped: Vec::new(),
        requests: result.requests,
        existence,
        fallback: None,
    })
}

/// Settles the existence changes of the block's transactions (replayed in index order, the
/// last one per account wins): an account removed last that existed before the block and ends
/// it empty is deleted (it leaves `post_state`); an account created last that did not exist
/// before stays, even empty (it enters `post_state`). Returns the deleted accounts, sorted, and
/// all changes as `(index, account, change)` sorted by index.
fn settle_existence(
    shared: &Shared<'_>,
    b: usize,
    post_state: &mut PostStateDiff,
) -> (Vec<Address>, Vec<(u64, Address, Existence)>) {
    let pre = shared.blocks[b].pre_state;
    let mut changes =
        std::mem::take(&mut *shared.existence[b].lock().unwrap_or_else(|p| p.into_inner()));
    changes.sort_unstable_by_key(|&(index, address, _)| (address, index));
    let mut deleted = Vec::new();
    let mut created = Vec::new();
    for (k, &(_, address, change)) in changes.iter().enumerate() {
        if changes.get(k + 1).is_some_and(|next| next.1 == address) {
            continue; // not the account's last change
        }
        let post = post_state.0.binary_search_by_key(&address, |(a, _)| *a).ok();
        let post = post.map(|i| &post_state.0[i].1);
        match (change, pre.account(&address)) {
            (Existence::Removed, Some(before)) => {
                let empty_after = post.map_or(before.is_empty(), |p| {
                    p.balance.is_zero() && p.nonce == 0 && p.code_hash == KECCAK_EMPTY
                });
                if empty_after {
                    deleted.push(address);
                }
            }
            (Existence::Created, None) if post.is_none() => created.push(address),
            _ => {}
        }
    }
    post_state.0.retain(|(address, _)| deleted.binary_search(address).is_err());
    for address in created {
        let empty = AccountPost {
            balance: U256::ZERO,
            nonce: 0,
            code_hash: KECCAK_EMPTY,
            storage: Vec::new(),
        };
        post_state.0.push((address, empty));
    }
    post_state.0.sort_unstable_by_key(|(a, _)| *a);
    let mut by_index: Vec<(u64, Address, Existence)> =
        changes.into_iter().map(|(i, a, c)| (u64::from(i) + 1, a, c)).collect();
    by_index.sort_unstable();
    (deleted, by_index)
}

/// A `State` over the block's pre-state positioned at BAL `index`, recording the BAL fragment
/// of what runs on it at that index; its first read outside the BAL kept in `miss`.
fn bal_state<'a>(
    pb: &ParallelBlock<'a>,
    prep: &'a Prepared,
    index: u64,
    miss: &'a OnceLock<PositionedError>,
) -> State<PositionedDb<'a>> {
    let db = prep.positioned(pb, index).latching(miss);
    let mut state = State::builder().with_database(db).with_bal_builder().build();
    state.set_bal_index(BlockAccessIndex::new(index));
    state
}

/// In-order re-execution of a block whose parallel view was not the in-order one; the BAL it
/// builds must equal the given BAL.
fn fallback(
    chain: &ChainSpec,
    pb: &ParallelBlock<'_>,
    reason: String,
) -> Result<BlockOutcome, ExecutionError> {
    let senders = pb.senders.to_vec(pb.block)?;
    let mut outcome = execute_sequential(chain, pb.block, &senders, pb.pre_state)?;
    let built = outcome.bal.as_deref().unwrap_or_default();
    if let Some(e) = BalValidationError::mismatch(pb.block.number(), pb.bal, built) {
        return Err(e.into());
    }
    outcome.fallback = Some(reason);
    Ok(outcome)
}
