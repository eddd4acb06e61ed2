//! `eth_call` and `eth_estimateGas`: a transaction request executed with revm over the state
//! after a stored block, in that block's environment (number, timestamp, base fee, fork rules),
//! nothing committed. As geth: no nonce check, no base-fee check (a request without a gas
//! price pays nothing), the gas limit defaults to the block's.

use crate::{
    blocks::BlockHeader,
    overrides::{CallOverrides, OverlayDb},
    RpcContext, RpcError,
};
use alloy_eips::eip2930::{AccessList, AccessListItem};
use alloy_eips::eip7702::{RecoveredAuthority, RecoveredAuthorization};
use alloy_evm::Evm;
use alloy_primitives::{Bytes, TxKind, B256, U256};
use alloy_rpc_types_eth::{AccessListResult, TransactionRequest};
use gigagas_executor::EvmConfig;
use gigagas_state::PreState;
use jsonrpsee::types::ErrorObjectOwned;
use revm::{
    context::{
        result::{EVMError, ExecutionResult, HaltReason, InvalidTransaction, ResultAndState},
        TxEnv,
    },
    database::{CacheDB, WrapDatabaseRef},
    primitives::hardfork::SpecId,
    DatabaseRef,
};
use std::time::{Duration, Instant};

/// The gas limit a request without one gets: the block's, within the fork's per-transaction cap
/// (EIP-7825 from Osaka on).
pub(crate) fn default_gas(ctx: &RpcContext, block: &BlockHeader) -> u64 {
    let cap = revm::context::Cfg::tx_gas_limit_cap(
        &EvmConfig::new(&ctx.chain).evm_env(&block.header).cfg_env,
    );
    block.header.gas_limit.min(cap)
}

/// The transaction `request` describes, for revm; `gas` overrides its gas limit, which the
/// node's RPC gas cap bounds (as geth's).
fn tx_env(
    ctx: &RpcContext,
    block: &BlockHeader,
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
    let mut gas_limit = gas.or(request.gas).unwrap_or_else(|| default_gas(ctx, block));
    if ctx.gas_cap != 0 {
        gas_limit = gas_limit.min(ctx.gas_cap);
    }
    TxEnv {
        tx_type,
        caller: request.from.unwrap_or_default(),
        gas_limit,
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

/// Executes `request` after `block` with `overrides`; the result (success, revert or halt) or
/// why it could not run (an invalid transaction, e.g. insufficient funds: -32000; a malformed
/// override: -32602).
pub(crate) fn call(
    ctx: &RpcContext,
    block: &BlockHeader,
    request: &TransactionRequest,
    gas: Option<u64>,
    overrides: CallOverrides<'_>,
) -> Result<ExecutionResult<HaltReason>, ErrorObjectOwned> {
    let deadline = ctx.evm_timeout.map(|t| (Instant::now() + t, t));
    with_overrides(ctx, block, request, gas, overrides, |state, env, tx| {
        transact_prepared(ctx, state, env, tx, deadline)
            .map(|r| r.result)
            .map_err(|e| RpcError::from(e).into())
    })
}

/// `run` of `request` after `block` with `overrides` (`gas` its gas limit when given): the
/// overridden header's environment and the transaction ([`prepare`]) over the overridden state
/// after the stored block — what `eth_call`, `debug_traceCall` and `trace_call` execute.
///
/// # Errors
/// A malformed override (-32602), a state that cannot be read, a request that cannot run as
/// a transaction, or what `run` answers.
pub(crate) fn with_overrides<R>(
    ctx: &RpcContext,
    block: &BlockHeader,
    request: &TransactionRequest,
    gas: Option<u64>,
    overrides: CallOverrides<'_>,
    run: impl FnOnce(&OverlayDb<'_>, alloy_evm::EvmEnv, TxEnv) -> Result<R, ErrorObjectOwned>,
) -> Result<R, ErrorObjectOwned> {
    let block = overrides.header(block)?;
    let pre = state_after(ctx, &block)?;
    let state = overrides.state(&pre)?;
    let (env, tx) = prepare(ctx, &block, &state, request, gas).map_err(RpcError::from)?;
    run(&state, env, tx)
}

/// Why a request did not run as a transaction.
pub(crate) enum NotRun {
    /// Its gas limit is below its intrinsic gas or calldata floor, or above the fork's cap:
    /// another gas limit may run (geth's estimator raises or lowers it).
    GasLimit(String),
    /// Anything else: the transaction is invalid otherwise (funds, fees, nonce), or the store
    /// failed.
    Other(RpcError),
}

impl From<NotRun> for RpcError {
    fn from(e: NotRun) -> Self {
        match e {
            NotRun::GasLimit(m) => RpcError::Execution(m),
            NotRun::Other(e) => e,
        }
    }
}

/// The state after `block` ([`gigagas_chain_state::BlockchainProvider::state_at`]): the
/// stored block's, whatever a block override says its number is.
fn state_after(ctx: &RpcContext, block: &BlockHeader) -> Result<PreState, RpcError> {
    Ok(PreState::backed(ctx.provider.state_at(block.number, block.header.state_root)?))
}

/// Halts the EVM once a deadline has passed (geth's `--rpc.evmtimeout`): the clock is read
/// every [`Deadline::EVERY`] steps; once past, every frame halts at its next step, so the call
/// unwinds at once.
#[derive(Debug)]
struct Deadline {
    until: Instant,
    steps: u32,
    passed: bool,
}

impl Deadline {
    /// Steps between two readings of the clock.
    const EVERY: u32 = 1024;
}

impl<CTX> revm::Inspector<CTX> for Deadline {
    fn step(&mut self, interp: &mut revm::interpreter::Interpreter, _: &mut CTX) {
        if !self.passed {
            self.steps += 1;
            if !self.steps.is_multiple_of(Self::EVERY) || Instant::now() < self.until {
                return;
            }
            self.passed = true;
        }
        interp.halt(revm::interpreter::InstructionResult::OutOfGas);
    }
}

/// [`transact_until`] without a deadline.
fn transact(
    ctx: &RpcContext,
    block: &BlockHeader,
    state: &OverlayDb<'_>,
    request: &TransactionRequest,
    gas: Option<u64>,
) -> Result<ResultAndState<HaltReason>, NotRun> {
    transact_until(ctx, block, state, request, gas, None)
}

/// The EVM environment and the transaction `request` runs as after `block` on `state`, as
/// geth runs a call: no nonce or base-fee check, the sender's nonce, a zero BASEFEE (BLOBBASEFEE)
/// for a request that pays no gas price (blob gas price), a block override's blob base fee.
fn prepare(
    ctx: &RpcContext,
    block: &BlockHeader,
    state: &OverlayDb<'_>,
    request: &TransactionRequest,
    gas: Option<u64>,
) -> Result<(alloy_evm::EvmEnv, TxEnv), NotRun> {
    let mut env = EvmConfig::new(&ctx.chain).evm_env(&block.header);
    env.cfg_env.disable_nonce_check = true;
    env.cfg_env.disable_base_fee = true;
    let mut tx = tx_env(ctx, block, request, gas);
    // The nonce is not checked: the transaction carries the sender's (a create's address
    // follows it, and EIP-2780's new-account charge reads that address from the transaction's
    // nonce, where geth reads the account's).
    let sender = state.basic_ref(tx.caller).map_err(|e| NotRun::Other(RpcError::State(e)))?;
    tx.nonce = sender.map_or(0, |a| a.nonce);
    if let (Some(fee), Some(blob)) =
        (block.blob_base_fee, env.block_env.blob_excess_gas_and_price.as_mut())
    {
        blob.blob_gasprice = fee;
    }
    // geth: a call that pays no gas price (blob gas price) sees a zero BASEFEE (BLOBBASEFEE).
    if tx.gas_price == 0 {
        env.block_env.basefee = 0;
    }
    if tx.max_fee_per_blob_gas == 0 {
        if let Some(blob) = env.block_env.blob_excess_gas_and_price.as_mut() {
            blob.blob_gasprice = 0;
        }
    }
    Ok((env, tx))
}

/// [`call`] on `state` (the state after `block`, whose reads it caches: the runs of one
/// estimate share it), with the touched state (accounts and slots revm loaded or changed);
/// with a `deadline` (the instant and the timeout it came from), a run still going then is
/// aborted with geth's "execution aborted (timeout = …)".
fn transact_until(
    ctx: &RpcContext,
    block: &BlockHeader,
    state: &OverlayDb<'_>,
    request: &TransactionRequest,
    gas: Option<u64>,
    deadline: Option<(Instant, Duration)>,
) -> Result<ResultAndState<HaltReason>, NotRun> {
    let (env, tx) = prepare(ctx, block, state, request, gas)?;
    transact_prepared(ctx, state, env, tx, deadline)
}

/// [`transact_until`] of a transaction already prepared ([`prepare`]).
fn transact_prepared(
    ctx: &RpcContext,
    state: &OverlayDb<'_>,
    env: alloy_evm::EvmEnv,
    tx: TxEnv,
    deadline: Option<(Instant, Duration)>,
) -> Result<ResultAndState<HaltReason>, NotRun> {
    let db = CacheDB::new(WrapDatabaseRef(state));
    let config = EvmConfig::new(&ctx.chain);
    let out = match deadline {
        None => config.evm(db, env).transact(tx),
        Some((until, timeout)) => {
            let mut evm =
                config.evm_with_inspector(db, env, Deadline { until, steps: 0, passed: false });
            let out = evm.transact(tx);
            if evm.inspector().passed {
                return Err(NotRun::Other(RpcError::Execution(format!(
                    "execution aborted (timeout = {timeout:?})"
                ))));
            }
            out
        }
    };
    out.map_err(not_run)
}

/// Why revm did not run a transaction, as [`NotRun`].
pub(crate) fn not_run(e: EVMError<gigagas_state::StateError>) -> NotRun {
    match e {
        EVMError::Transaction(
            invalid @ (InvalidTransaction::CallGasCostMoreThanGasLimit { .. }
            | InvalidTransaction::GasFloorMoreThanGasLimit { .. }
            | InvalidTransaction::TxGasLimitGreaterThanCap { .. }),
        ) => NotRun::GasLimit(invalid.to_string()),
        EVMError::Transaction(invalid) => NotRun::Other(RpcError::Execution(invalid.to_string())),
        EVMError::Header(invalid) => NotRun::Other(RpcError::Execution(invalid.to_string())),
        other => NotRun::Other(RpcError::Evm(Box::new(other))),
    }
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

/// geth's estimator's error ratio (`eth_estimateGas`): the search stops once the bracket
/// around the smallest sufficient gas limit is within 1.5 % of its upper end.
const ESTIMATE_ERROR_RATIO: f64 = 0.015;

/// `eth_estimateGas`: a gas limit with which `request` succeeds after `block`, found as geth
/// 1.17.10's estimator finds it (eth/gasestimator), so that both answer the same number:
/// - the upper end is the request's gas (when at least 21,000) or the block's gas limit,
///   within EIP-7825's 2^24 from Osaka until Amsterdam (whose reservoir lifts that cap), and
///   within what the sender's balance pays at the request's fee cap and the node's RPC gas
///   cap;
/// - a plain transfer (no data, to an account without code) is run once with 21,000 gas and
///   answers the gas it used (EIP-2780 makes some cost less);
/// - otherwise the request runs at the upper end (a revert is answered as such, running out of
///   gas as "gas required exceeds allowance"), then at (peak gas + 2,300) × 64 / 63, then by
///   bisection from the gas it used, skewed low, until within [`ESTIMATE_ERROR_RATIO`].
///
/// A gas limit below the intrinsic gas or floor counts as too low; any other reason it cannot
/// run is the answer.
pub(crate) fn estimate(
    ctx: &RpcContext,
    block: &BlockHeader,
    request: &TransactionRequest,
    overrides: CallOverrides<'_>,
) -> Result<u64, ErrorObjectOwned> {
    const TX_GAS: u64 = 21_000;
    let block = &overrides.header(block)?;
    let spec = EvmConfig::new(&ctx.chain).evm_env(&block.header).cfg_env.spec;
    let mut hi = match request.gas {
        Some(gas) if gas >= TX_GAS => gas,
        _ => block.header.gas_limit,
    };
    if spec.is_enabled_in(SpecId::OSAKA) && !spec.is_enabled_in(SpecId::AMSTERDAM) {
        hi = hi.min(revm::primitives::eip7825::TX_GAS_LIMIT_CAP);
    }
    let pre = state_after(ctx, block)?;
    let state = overrides.state(&pre)?;
    let from = request.from.unwrap_or_default();
    let read = RpcError::State;
    let fee_cap = request.max_fee_per_gas.or(request.gas_price).unwrap_or_default();
    if fee_cap != 0 {
        let balance = state.basic_ref(from).map_err(read)?.map(|a| a.balance).unwrap_or_default();
        let value = request.value.unwrap_or_default();
        if value >= balance {
            return Err(RpcError::Execution("insufficient funds for transfer".into()).into());
        }
        let mut available = balance - value;
        let blobs = request.blob_versioned_hashes.as_ref().map_or(0, Vec::len);
        if spec.is_enabled_in(SpecId::CANCUN) && blobs > 0 {
            let usage = U256::from(blobs)
                * U256::from(alloy_eips::eip4844::DATA_GAS_PER_BLOB)
                * U256::from(request.max_fee_per_blob_gas.unwrap_or_default());
            if usage >= available {
                return Err(RpcError::Execution(
                    "insufficient funds for gas * price + value".into(),
                )
                .into());
            }
            available -= usage;
        }
        if let Ok(allowance) = u64::try_from(available / U256::from(fee_cap)) {
            hi = hi.min(allowance);
        }
    }
    if ctx.gas_cap != 0 {
        hi = hi.min(ctx.gas_cap);
    }
    // Runs the request with `gas`: whether it failed in a way more gas might fix (a revert or
    // halt, a limit below the intrinsic gas), and its result when it ran.
    let execute = |gas: u64| -> Result<(bool, Option<ExecutionResult<HaltReason>>), RpcError> {
        match transact(ctx, block, &state, request, Some(gas)) {
            Ok(out) => Ok((!out.result.is_success(), Some(out.result))),
            Err(NotRun::GasLimit(_)) => Ok((true, None)),
            Err(NotRun::Other(e)) => Err(e),
        }
    };
    let input_empty = request.input.input().is_none_or(|d| d.is_empty());
    if let (true, Some(TxKind::Call(to))) = (input_empty, request.to) {
        let code_empty =
            state.basic_ref(to).map_err(read)?.is_none_or(|a| a.is_code_hash_empty_or_zero());
        if code_empty {
            if let Ok((false, Some(result))) = execute(TX_GAS) {
                return Ok(result.gas().tx_gas_used());
            }
        }
    }
    let first = match execute(hi)? {
        (false, Some(result)) => result,
        (_, Some(ExecutionResult::Revert { output, .. })) => return Err(reverted(&output)),
        (_, Some(ExecutionResult::Halt { reason, .. }))
            if !matches!(reason, HaltReason::OutOfGas(_)) =>
        {
            return Err(RpcError::Execution(format!("execution halted: {reason:?}")).into())
        }
        _ => {
            return Err(RpcError::Execution(format!("gas required exceeds allowance ({hi})")).into())
        }
    };
    let gas = first.gas();
    let mut lo = gas.tx_gas_used().saturating_sub(1);
    let peak = gas.total_gas_spent().max(gas.floor_gas());
    let optimistic = (peak + 2_300) * 64 / 63;
    if optimistic < hi {
        if execute(optimistic)?.0 {
            lo = optimistic;
        } else {
            hi = optimistic;
        }
    }
    while lo + 1 < hi {
        if ((hi - lo) as f64 / hi as f64) < ESTIMATE_ERROR_RATIO {
            break;
        }
        let mid = (lo + (hi - lo) / 2).min(lo.saturating_mul(2));
        if execute(mid)?.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// `eth_createAccessList`'s answer: the accounts and slots `request` touches after `block`
/// (without the sender, the recipient and precompiles unless they have slots, as geth's
/// access-list tracer), and the gas used when the transaction carries that list; re-run until
/// the list is stable.
pub(crate) fn access_list(
    ctx: &RpcContext,
    block: &BlockHeader,
    request: &TransactionRequest,
) -> Result<AccessListResult, RpcError> {
    let spec = EvmConfig::new(&ctx.chain).evm_env(&block.header).cfg_env.spec;
    let precompiles =
        revm::precompile::Precompiles::new(revm::precompile::PrecompileSpecId::from_spec_id(spec));
    let from = request.from.unwrap_or_default();
    let to = request.to.and_then(|k| k.to().copied());
    let mut list = AccessList::default();
    let mut request = request.clone();
    let pre = state_after(ctx, block)?;
    let state = crate::overrides::overlay(&pre);
    for _ in 0..8 {
        request.access_list = Some(list.clone());
        let out = transact(ctx, block, &state, &request, None).map_err(RpcError::from)?;
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
    Err(RpcError::AccessListUnsettled(8))
}
