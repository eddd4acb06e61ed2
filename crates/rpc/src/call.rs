//! `eth_call` and `eth_estimateGas`: a transaction request executed with revm over the state
//! after a stored block, in that block's environment (number, timestamp, base fee, fork rules),
//! nothing committed. As geth: no nonce check, no base-fee check (a request without a gas
//! price pays nothing), the gas limit defaults to the block's.

use crate::{convert::StoredBlock, RpcContext, RpcError};
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_eips::eip7702::{RecoveredAuthority, RecoveredAuthorization};
use alloy_evm::Evm;
use alloy_primitives::{Bytes, TxKind, B256, U256};
use alloy_rpc_types_eth::{AccessListResult, TransactionRequest};
use gigagas_executor::EvmConfig;
use gigagas_stages::TrieState;
use gigagas_state::PreState;
use jsonrpsee::types::ErrorObjectOwned;
use revm::{
    context::{
        result::{ExecutionResult, HaltReason, ResultAndState},
        TxEnv,
    },
    database::{CacheDB, WrapDatabaseRef},
};
use std::sync::Arc;

/// The gas limit a request without one gets: the block's, within the fork's per-transaction cap
/// (EIP-7825 from Osaka on).
pub(crate) fn default_gas(ctx: &RpcContext, block: &StoredBlock) -> u64 {
    let cap = revm::context::Cfg::tx_gas_limit_cap(
        &EvmConfig::new(&ctx.chain).evm_env(&block.header).cfg_env,
    );
    block.header.gas_limit.min(cap)
}

/// The transaction `request` describes, for revm; `gas` overrides its gas limit.
fn tx_env(
    ctx: &RpcContext,
    block: &StoredBlock,
    request: &TransactionRequest,
    gas: Option<u64>,
) -> TxEnv {
    let authorization_list: Vec<_> = request
        .authorization_list
        .iter()
        .flatten()
        .map(|auth| {
            // Recovered here (an invalid signature just makes the authorization void).
            let authority = auth
                .recover_authority()
                .map_or(RecoveredAuthority::Invalid, RecoveredAuthority::Valid);
            either::Either::Right(RecoveredAuthorization::new_unchecked(
                auth.inner().clone(),
                authority,
            ))
        })
        .collect();
    let tx_type = if !authorization_list.is_empty() {
        4
    } else if request.blob_versioned_hashes.as_ref().is_some_and(|h| !h.is_empty()) {
        3
    } else if request.max_fee_per_gas.is_some() || request.max_priority_fee_per_gas.is_some() {
        2
    } else if request.access_list.is_some() {
        1
    } else {
        0
    };
    TxEnv {
        tx_type,
        caller: request.from.unwrap_or_default(),
        gas_limit: gas.or(request.gas).unwrap_or_else(|| default_gas(ctx, block)),
        gas_price: request.gas_price.or(request.max_fee_per_gas).unwrap_or_default(),
        kind: request.to.unwrap_or(TxKind::Create),
        value: request.value.unwrap_or_default(),
        data: request.input.input().cloned().unwrap_or_default(),
        nonce: request.nonce.unwrap_or_default(),
        chain_id: Some(ctx.chain.chain_id),
        access_list: request.access_list.clone().unwrap_or_default(),
        gas_priority_fee: request.max_priority_fee_per_gas,
        blob_hashes: request.blob_versioned_hashes.clone().unwrap_or_default(),
        max_fee_per_blob_gas: request.max_fee_per_blob_gas.unwrap_or_default(),
        authorization_list,
    }
}

/// Executes `request` after `block`; the result (success, revert or halt) or why it could not
/// run (an invalid transaction, e.g. insufficient funds: -32000).
pub(crate) fn call(
    ctx: &RpcContext,
    block: &StoredBlock,
    request: &TransactionRequest,
    gas: Option<u64>,
) -> Result<ExecutionResult<HaltReason>, RpcError> {
    transact(ctx, block, request, gas).map(|r| r.result)
}

/// [`call`] with the touched state (accounts and slots revm loaded or changed).
fn transact(
    ctx: &RpcContext,
    block: &StoredBlock,
    request: &TransactionRequest,
    gas: Option<u64>,
) -> Result<ResultAndState<HaltReason>, RpcError> {
    let mut env = EvmConfig::new(&ctx.chain).evm_env(&block.header);
    env.cfg_env.disable_nonce_check = true;
    env.cfg_env.disable_base_fee = true;
    let state = PreState::backed(Arc::new(TrieState {
        store: ctx.storage.clone(),
        root: block.header.state_root,
    }));
    let db = CacheDB::new(WrapDatabaseRef(&state));
    let tx = tx_env(ctx, block, request, gas);
    // geth: a call that pays no gas price (blob gas price) sees a zero BASEFEE (BLOBBASEFEE).
    if tx.gas_price == 0 {
        env.block_env.basefee = 0;
    }
    if tx.max_fee_per_blob_gas == 0 {
        if let Some(blob) = env.block_env.blob_excess_gas_and_price.as_mut() {
            blob.blob_gasprice = 0;
        }
    }
    let mut evm = EvmConfig::new(&ctx.chain).evm(db, env);
    evm.transact(tx).map_err(|e| RpcError::Store(e.to_string()))
}

/// geth's message for a revert with `output`: "execution reverted", with ": reason" when the
/// output is an ABI-encoded `Error(string)` with a non-empty reason (`abi.UnpackRevert`).
pub(crate) fn revert_message(output: &Bytes) -> String {
    use alloy_sol_types::SolError;
    match alloy_sol_types::Revert::abi_decode(output) {
        Ok(revert) if !revert.reason.is_empty() => format!("execution reverted: {}", revert.reason),
        _ => "execution reverted".into(),
    }
}

/// A reverted call as geth reports it: code 3, "execution reverted[: reason]", the revert data.
pub(crate) fn reverted(output: &Bytes) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(3, revert_message(output), Some(output.clone()))
}

/// The smallest gas limit with which `request` succeeds after `block` (binary search between
/// the intrinsic 21,000 and the request's or block's gas limit, as geth's estimator does).
pub(crate) fn estimate(
    ctx: &RpcContext,
    block: &StoredBlock,
    request: &TransactionRequest,
) -> Result<u64, ErrorObjectOwned> {
    let cap = request.gas.unwrap_or_else(|| default_gas(ctx, block));
    match call(ctx, block, request, Some(cap))? {
        ExecutionResult::Success { .. } => {}
        ExecutionResult::Revert { output, .. } => return Err(reverted(&output)),
        ExecutionResult::Halt { reason, .. } => {
            return Err(RpcError::Store(format!("execution halted: {reason:?}")).into())
        }
    }
    let (mut low, mut high) = (20_999u64, cap);
    while low + 1 < high {
        let mid = low + (high - low) / 2;
        let ok =
            matches!(call(ctx, block, request, Some(mid)), Ok(ExecutionResult::Success { .. }));
        if ok {
            high = mid;
        } else {
            low = mid;
        }
    }
    Ok(high)
}

/// `eth_createAccessList`'s answer: the accounts and slots `request` touches after `block`
/// (without the sender, the recipient and precompiles unless they have slots, as geth's
/// access-list tracer), and the gas used when the transaction carries that list; re-run until
/// the list is stable.
pub(crate) fn access_list(
    ctx: &RpcContext,
    block: &StoredBlock,
    request: &TransactionRequest,
) -> Result<AccessListResult, RpcError> {
    let spec = EvmConfig::new(&ctx.chain).evm_env(&block.header).cfg_env.spec;
    let precompiles =
        revm::precompile::Precompiles::new(revm::precompile::PrecompileSpecId::from_spec_id(spec));
    let from = request.from.unwrap_or_default();
    let to = request.to.and_then(|k| k.to().copied());
    let mut list = AccessList::default();
    let mut request = request.clone();
    for _ in 0..8 {
        request.access_list = Some(list.clone());
        let out = transact(ctx, block, &request, None)?;
        let mut items: Vec<AccessListItem> = out
            .state
            .iter()
            .filter_map(|(address, account)| {
                let mut keys: Vec<B256> = account.storage.keys().map(|k| B256::from(*k)).collect();
                keys.sort_unstable();
                let excluded = *address == from
                    || Some(*address) == to
                    || *address == block.header.beneficiary
                    || precompiles.contains(address);
                (!excluded || !keys.is_empty())
                    .then_some(AccessListItem { address: *address, storage_keys: keys })
            })
            .collect();
        items.sort_by_key(|i| i.address);
        let next = AccessList(items);
        if next == list {
            let (gas_used, error) = match &out.result {
                ExecutionResult::Success { gas, .. } => (gas.tx_gas_used(), None),
                ExecutionResult::Revert { gas, .. } => {
                    (gas.tx_gas_used(), Some("execution reverted".to_string()))
                }
                ExecutionResult::Halt { gas, reason, .. } => {
                    (gas.tx_gas_used(), Some(format!("{reason:?}")))
                }
            };
            return Ok(AccessListResult {
                access_list: list,
                gas_used: U256::from(gas_used),
                error,
            });
        }
        list = next;
    }
    Err(RpcError::Store("access list did not settle after 8 runs".into()))
}
