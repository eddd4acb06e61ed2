//! The worker loop: claim a transaction, execute it against BAL-positioned state, check its
//! writes, and commit the block when it was the block's last transaction.

use super::{commit, positioned::PositionedDb, Existence, Shared, TxExec};
use crate::{
    eip7610::StorageCollisions,
    error::PositionedError,
    evm_config::{BlockEvm, EvmConfig},
    receipt::BloomMemo,
    ExecutionError,
};
use alloy_evm::{Evm, EvmEnv, FromRecoveredTx};
use alloy_primitives::{map::HashMap, Address};
use gigagas_bal::{
    writes::{check_writes, sort_writes, state_writes, Write},
    BlockAccessIndex, Phase,
};
use revm::context::{
    result::{EVMError, ResultAndState},
    TxEnv,
};
use std::{sync::atomic::Ordering, time::Instant};

/// Runs on every thread of the pool until the batch's task list is exhausted.
pub(super) fn work(shared: &Shared<'_>) {
    let mut evms: HashMap<usize, BlockEvm<PositionedDb<'_>>> = HashMap::default();
    // One bloom memo per block: a memo over a whole megablock outgrows the caches.
    let mut blooms = BloomMemo::default();
    let mut blooms_block = usize::MAX;
    let mut writes = Vec::new();
    loop {
        let k = shared.next.fetch_add(1, Ordering::Relaxed);
        let Some(&(b, i)) = shared.tasks.get(k) else { break };
        // A preparation's error stays in its slot; the block's transactions and commit report it.
        if i == super::PREPARE {
            let _ = shared.prepared(b as usize);
            continue;
        }
        if i == super::PREPARE_NEXT {
            shared.prepare_next(b as usize);
            continue;
        }
        let (b, i) = (b as usize, i as usize);
        // Free the States of blocks whose transactions are all done: keeps the batch's memory
        // (and page faults) near one State per worker and active block.
        if evms.len() > 2 {
            evms.retain(|&blk, _| blk == b || shared.remaining[blk].load(Ordering::Relaxed) > 0);
        }
        if b != blooms_block {
            blooms = BloomMemo::default();
            blooms_block = b;
        }
        let start = Instant::now();
        let result = execute_tx(shared, &mut evms, &mut blooms, &mut writes, b, i);
        shared.nanos[b][i].store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        *shared.results[b][i].lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
        if shared.remaining[b].fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = shared.outcomes[b].get_or_init(|| commit::timed_commit(shared, b));
        }
    }
}

fn execute_tx<'a>(
    shared: &'a Shared<'a>,
    evms: &mut HashMap<usize, BlockEvm<PositionedDb<'a>>>,
    blooms: &mut BloomMemo,
    writes: &mut Vec<Write>,
    b: usize,
    i: usize,
) -> Result<TxExec, ExecutionError> {
    let pb = &shared.blocks[b];
    let number = pb.block.number();
    let prep = shared.prepared(b)?;
    // One EVM per (worker, block) over the pre-state positioned by the BAL: nothing is ever
    // committed, every read is positioned at the current index.
    let evm = evms.entry(b).or_insert_with(|| {
        EvmConfig::new(shared.chain).block_evm(pb.block, prep.positioned(pb, 0))
    });
    let index = BlockAccessIndex::from_tx_index(i as u64);
    evm.db_mut().index = index.0;
    let sender = pb.senders.get(pb.block, i)?;
    let tx_env = TxEnv::from_recovered_tx(&pb.block.transactions[i], sender);
    let evm_error = |e: EVMError<PositionedError>| match e {
        EVMError::Database(e) => e.into_execution_error(number, Phase::Tx(i)),
        EVMError::Transaction(e) => ExecutionError::InvalidTransaction {
            block: number,
            phase: Phase::Tx(i),
            reason: e.to_string(),
        },
        other => {
            ExecutionError::Evm { block: number, phase: Phase::Tx(i), reason: other.to_string() }
        }
    };
    // EIP-7610 (crate::eip7610): a block whose BAL lists an account with storage but no code
    // runs its transactions with the storage collisions.
    let executed = if prep.collisions.is_empty() {
        evm.transact(tx_env)
    } else {
        let env = EvmEnv::new(evm.cfg_env().clone(), evm.block().clone());
        EvmConfig::new(shared.chain)
            .evm_with_inspector(evm.db_mut(), env, StorageCollisions::new(prep.collisions.clone()))
            .transact(tx_env)
    }
    .map_err(evm_error)?;
    let ResultAndState { result, state } = executed;

    // A stale view is settled by the in-order fallback at commit. Otherwise every account and
    // slot touched must be listed, and the writes must be exactly the BAL's at this index: what
    // revm's BAL builder records for this transaction alone.
    let stale_view = state
        .iter()
        .find(|(address, account)| prep.stale_view(pb.bal, address, account, index.0))
        .map(|(address, _)| *address);
    if stale_view.is_none() {
        writes.clear();
        for (address, account) in &state {
            let position = account.info.account_id.map(|id| id.get());
            prep.keys.touch(number, Phase::Tx(i), address, position, account.storage.keys())?;
            state_writes(*address, account, writes);
        }
        sort_writes(writes);
        check_writes(number, Phase::Tx(i), prep.writes.at(index.0), writes)?;
    }
    // Existence changes a BAL cannot express, classified as revm's `State` commit does.
    let existence: Vec<(u32, Address, Existence)> = state
        .iter()
        .filter(|(_, a)| a.is_touched())
        .filter_map(|(address, a)| {
            let change = if a.is_selfdestructed() {
                Existence::Removed
            } else if a.is_created() {
                Existence::Created
            } else if a.is_empty() {
                Existence::Removed
            } else {
                return None;
            };
            Some((i as u32, *address, change))
        })
        .collect();
    if !existence.is_empty() {
        shared.existence[b].lock().unwrap_or_else(|p| p.into_inner()).extend(existence);
    }
    let logs_bloom = blooms.logs_bloom(result.logs());
    Ok(TxExec { result, logs_bloom, stale_view })
}
