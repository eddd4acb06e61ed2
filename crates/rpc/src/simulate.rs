//! `eth_simulateV1` (execution-apis `eth_simulateV1`): a chain of blocks simulated on top of a
//! stored block, each with optional block overrides (number, time, gas limit, fee recipient,
//! prevRandao, base fee, blob base fee), state overrides (balance, nonce, code, `state`,
//! `stateDiff`, `movePrecompileToAddress`) and calls; the answer is every simulated block with
//! its header fields computed as for a real block (transactions, receipts and withdrawals
//! roots, logs bloom, requests hash, state root, hash) and one result per call.
//!
//! Semantics follow go-ethereum's `internal/ethapi/simulate.go`, which the rpc-compat suite
//! was generated with: missing block numbers are filled with empty blocks, a block without a
//! time is 12 s after its predecessor, headers inherit the previous block's fee recipient and
//! gas limit, the base fee is 0 unless `validation` is set (then EIP-1559's) or overridden,
//! the parent beacon block root is zero; calls are unsigned EIP-1559 (EIP-4844 with blob
//! hashes) transactions whose nonce defaults to the sender's and whose gas defaults to what is
//! left of the block, within the node's RPC gas cap for the whole request (`--rpc.gascap`,
//! 50,000,000 by default; 0: none); from Amsterdam a block carries its slot number (the
//! parent's + 1) and the hash of its EIP-7928 access list, built as it runs; without
//! `validation` nonces and the base fee are not checked; the sender's code is never checked
//! (no EIP-3607) and no gas limit is refused for EIP-7825's cap (from Amsterdam with
//! `validation`, gas above it is EIP-8037's state-gas reservoir). `traceTransfers` adds an
//! ERC-7528 `Transfer` log from `0xeeee…eeee` for every value transfer (call, create,
//! self-destruct) in the order it happens (unless EIP-7708 is in force: the EVM then logs
//! transfers itself); logs of reverted frames are dropped.
//!
//! Each block runs through alloy-evm's Ethereum block executor (EIP-4788 and EIP-2935 system
//! calls, EIP-7002/7251 requests, withdrawals) over one revm `CacheDB` that carries the state
//! from block to block over the base block's trie; each state root is the base root updated
//! with everything the simulation changed so far.
//!
//! Errors (geth's codes): -38010 nonce too low, -38011 nonce too high, -38012 fee cap below
//! the base fee, -38013 intrinsic gas, -38014 insufficient funds, -38015 block gas limit,
//! -38020 block numbers out of order, -38021 timestamps out of order, -38022 a precompile
//! moved onto itself (two moved to one address: the later wins, as geth did), -38024 sender not an EOA,
//! -38025 init code too large, -38026 client limit (256 blocks, 5,000 calls a block, 10,000
//! calls a request; geth 1.17.10's), -32602 invalid
//! parameters, -32000 unknown base block or a move of a non-precompile, -32603 otherwise.
//! A failing call is not an error: its result carries `status` 0 and an `error` object (code 3
//! with the revert data for a revert, -32015 for any other EVM error, its message saying so
//! when the RPC gas cap lowered the call's gas).

use crate::{convert::StoredBlock, RpcContext};
use alloy_consensus::{
    proofs::{calculate_receipt_root, calculate_transaction_root},
    BlockBody, Header, Transaction as _, TxEnvelope, TxReceipt, EMPTY_OMMER_ROOT_HASH,
    EMPTY_ROOT_HASH,
};
use alloy_eips::{eip1559::BaseFeeParams, eip4895::Withdrawals, eip7685::EMPTY_REQUESTS_HASH};
use alloy_evm::{
    block::BlockExecutor,
    eth::{EthBlockExecutionCtx, EthTxResult},
    precompiles::{DynPrecompile, PrecompileInput},
    Evm, FromRecoveredTx,
};
use alloy_primitives::{Address, Bloom, Log, LogData, B256, U256};
use alloy_rpc_types_eth::{
    simulate::{SimBlock, SimulatePayload},
    BlockOverrides, Log as RpcLog, TransactionRequest,
};
use gigagas_bal::{compute_block_access_list_hash, BlockAccessIndex};
use gigagas_executor::EvmConfig;
use gigagas_state::PreState;
use gigagas_trie::{update_state_root, AccountUpdate};
use jsonrpsee::types::ErrorObjectOwned;
use revm::{
    context::{
        result::{EVMError, ExecutionResult, HaltReason, InvalidTransaction, OutOfGasError},
        ContextTr, JournalTr, TxEnv,
    },
    database::{AccountState, CacheDB, WrapDatabaseRef},
    database_interface::bal::BalDatabase,
    interpreter::{CallInputs, CallOutcome, CallScheme, CreateInputs, CreateOutcome},
    Database, Inspector,
};
use serde_json::Value;
use std::{borrow::Cow, cmp::Ordering, sync::Arc};

/// Most blocks one request may simulate past its base block (geth's `maxSimulateBlocks`).
pub(crate) const MAX_BLOCKS: u64 = 256;
/// Most calls one simulated block may hold (geth's `maxSimulateCallsPerBlock`).
const MAX_CALLS_PER_BLOCK: usize = 5_000;
/// Most calls one request may hold (geth's `maxSimulateTotalCalls`).
const MAX_CALLS: usize = 10_000;
/// Seconds between a simulated block and the next when no time is given.
pub(crate) const TIMESTAMP_INCREMENT: u64 = 12;

/// ERC-7528's address for ether in `traceTransfers` logs.
const TRANSFER_ADDRESS: Address = Address::repeat_byte(0xee);
/// keccak256("Transfer(address,address,uint256)").
const TRANSFER_TOPIC: B256 =
    alloy_primitives::b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

fn error(code: i32, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(code, message.into(), None::<()>)
}

fn internal(e: impl std::fmt::Display) -> ErrorObjectOwned {
    error(-32603, e.to_string())
}

type SimDb<'a> = crate::overrides::OverlayDb<'a>;

/// Runs `payload` on top of `base`; the simulated blocks as JSON (geth's block object plus
/// `calls`).
///
/// # Errors
/// As listed in the module documentation.
pub(crate) fn simulate(
    ctx: &RpcContext,
    payload: SimulatePayload,
    base: &StoredBlock,
) -> Result<Value, ErrorObjectOwned> {
    if payload.block_state_calls.is_empty() {
        return Err(error(-32602, "empty input"));
    }
    if payload.block_state_calls.len() as u64 > MAX_BLOCKS {
        return Err(error(-38026, "too many blocks"));
    }
    let mut total_calls = 0;
    for block in &payload.block_state_calls {
        if block.calls.len() > MAX_CALLS_PER_BLOCK {
            return Err(error(
                -38026,
                format!("too many calls in block: {} > {MAX_CALLS_PER_BLOCK}", block.calls.len()),
            ));
        }
        total_calls += block.calls.len();
        if total_calls > MAX_CALLS {
            return Err(error(-38026, format!("too many calls: {total_calls} > {MAX_CALLS}")));
        }
    }
    let blocks = sanitize_chain(payload.block_state_calls, &base.header)?;
    let trie = crate::state::trie_state(ctx, base.header.number, base.header.state_root)?;
    let pre = PreState::backed(Arc::new(trie));
    let mut sim = Simulator {
        ctx,
        base_root: base.header.state_root,
        pre: &pre,
        db: CacheDB::new(WrapDatabaseRef(&pre)),
        budget: if ctx.gas_cap == 0 { u64::MAX } else { ctx.gas_cap },
        validation: payload.validation,
        trace_transfers: payload.trace_transfers,
        full: payload.return_full_transactions,
    };
    let mut parent = (base.hash, base.header.clone());
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        let (hash, header, json) = sim.process_block(block, &parent)?;
        out.push(json);
        parent = (hash, header);
    }
    Ok(Value::Array(out))
}

/// Checks that block numbers and timestamps increase, fills number gaps with empty blocks and
/// gives every block its number and time (geth's `sanitizeChain`).
fn sanitize_chain(blocks: Vec<SimBlock>, base: &Header) -> Result<Vec<SimBlock>, ErrorObjectOwned> {
    let mut out = Vec::with_capacity(blocks.len());
    let (mut prev_number, mut prev_time) = (base.number, base.timestamp);
    for mut block in blocks {
        let overrides = block.block_overrides.get_or_insert_with(BlockOverrides::default);
        let number = match overrides.number {
            Some(n) => u64::try_from(n).map_err(|_| error(-38020, "block number too large"))?,
            None => {
                prev_number.checked_add(1).ok_or_else(|| error(-38020, "block number overflow"))?
            }
        };
        if number <= prev_number {
            return Err(error(
                -38020,
                format!("block numbers must be in order: {number} <= {prev_number}"),
            ));
        }
        if number - base.number > MAX_BLOCKS {
            return Err(error(-38026, "too many blocks"));
        }
        let next_time = |t: u64| {
            t.checked_add(TIMESTAMP_INCREMENT)
                .ok_or_else(|| error(-38021, "block timestamp overflow"))
        };
        for gap in prev_number + 1..number {
            prev_time = next_time(prev_time)?;
            out.push(SimBlock {
                block_overrides: Some(BlockOverrides {
                    number: Some(U256::from(gap)),
                    time: Some(prev_time),
                    ..Default::default()
                }),
                state_overrides: None,
                calls: Vec::new(),
            });
        }
        let time = match overrides.time {
            None => next_time(prev_time)?,
            Some(t) if t <= prev_time => {
                return Err(error(
                    -38021,
                    format!("block timestamps must be in order: {t} <= {prev_time}"),
                ))
            }
            Some(t) => t,
        };
        overrides.number = Some(U256::from(number));
        overrides.time = Some(time);
        prev_number = number;
        prev_time = time;
        out.push(block);
    }
    Ok(out)
}

struct Simulator<'a> {
    ctx: &'a RpcContext,
    base_root: B256,
    /// The base block's state; its cache already holds every value execution read, which is
    /// every value the state-root updates compare with.
    pre: &'a PreState,
    db: SimDb<'a>,
    budget: u64,
    validation: bool,
    trace_transfers: bool,
    full: bool,
}

/// One call's outcome before the block hash is known.
struct CallRecord {
    return_data: alloy_primitives::Bytes,
    logs: Vec<(u64, Log)>,
    gas_used: u64,
    max_used_gas: u64,
    status: bool,
    error: Option<Value>,
}

impl Simulator<'_> {
    /// The header of a simulated block before execution: the overrides over what the
    /// parent's gives (fee recipient, gas limit, difficulty), zero prevRandao and beacon root,
    /// the slot after the parent's.
    fn draft_header(
        &self,
        o: &BlockOverrides,
        parent: &Header,
    ) -> Result<Header, ErrorObjectOwned> {
        let chain = &self.ctx.chain;
        let number = o.number.map_or(parent.number + 1, |n| n.to::<u64>());
        let timestamp = o.time.unwrap_or(parent.timestamp + TIMESTAMP_INCREMENT);
        let base_fee = match o.base_fee {
            Some(fee) => Some(
                u64::try_from(fee).map_err(|_| error(-32602, "baseFeePerGas exceeds 64 bits"))?,
            ),
            None if !alloy_hardforks::EthereumHardforks::is_london_active_at_block(
                &chain.eth, number,
            ) =>
            {
                None
            }
            None if self.validation => {
                Some(parent.next_block_base_fee(BaseFeeParams::ethereum()).unwrap_or(1_000_000_000))
            }
            None => Some(0),
        };
        let cancun = chain.is_cancun(timestamp);
        let excess_blob_gas = cancun.then(|| {
            match (parent.excess_blob_gas.is_some(), chain.blob_params(timestamp)) {
                (true, Some(params)) => parent.next_block_excess_blob_gas(params).unwrap_or(0),
                _ => 0,
            }
        });
        Ok(Header {
            parent_hash: B256::ZERO,
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            beneficiary: o.coinbase.unwrap_or(parent.beneficiary),
            difficulty: o.difficulty.unwrap_or(parent.difficulty),
            number,
            gas_limit: o.gas_limit.unwrap_or(parent.gas_limit),
            timestamp,
            mix_hash: o.random.unwrap_or_default(),
            base_fee_per_gas: base_fee,
            withdrawals_root: chain.is_shanghai(timestamp).then_some(EMPTY_ROOT_HASH),
            blob_gas_used: cancun.then_some(0),
            excess_blob_gas,
            parent_beacon_block_root: cancun.then(|| o.beacon_root.unwrap_or_default()),
            transactions_root: EMPTY_ROOT_HASH,
            receipts_root: EMPTY_ROOT_HASH,
            // EIP-7843: the slot after the parent's (none when the parent has none, as geth).
            slot_number: parent.slot_number.map(|slot| slot + 1),
            ..Default::default()
        })
    }

    /// Executes one simulated block on `parent` (hash, header); its hash, header and JSON.
    fn process_block(
        &mut self,
        block: SimBlock,
        parent: &(B256, Header),
    ) -> Result<(B256, Header, Value), ErrorObjectOwned> {
        let chain = &self.ctx.chain;
        let overrides = block.block_overrides.unwrap_or_default();
        let mut header = self.draft_header(&overrides, &parent.1)?;
        header.parent_hash = parent.0;
        let number = header.number;
        let config = EvmConfig::new(chain);
        let mut env = config.evm_env(&header);
        env.cfg_env.disable_nonce_check = !self.validation;
        env.cfg_env.disable_base_fee = !self.validation;
        env.cfg_env.disable_eip3607 = true;
        let spec = env.cfg_env.spec;
        let amsterdam = spec.is_enabled_in(revm::primitives::hardfork::SpecId::AMSTERDAM);
        // A call's gas limit is never checked against EIP-7825's cap (geth skips that check
        // for RPC calls). From Amsterdam with `validation`, gas above the cap is EIP-8037's
        // state-gas reservoir (which a failing call does not spend); without it all of the gas
        // is regular gas (geth's `SkipExecutionGasCapCheck`).
        if !(amsterdam && self.validation) {
            env.cfg_env.tx_gas_limit_cap = Some(u64::MAX);
        }
        if let (Some(fee), Some(blob)) =
            (overrides.blob_base_fee, env.block_env.blob_excess_gas_and_price.as_mut())
        {
            blob.blob_gasprice = fee.saturating_to();
        }
        let precompiles = revm::precompile::Precompiles::new(
            revm::precompile::PrecompileSpecId::from_spec_id(spec),
        );
        let (moves, removed) = match &block.state_overrides {
            Some(o) => crate::overrides::apply_state(&mut self.db, o, |a| precompiles.contains(a))?,
            None => (Vec::new(), Vec::new()),
        };
        let shanghai = chain.is_shanghai(header.timestamp);
        let withdrawals = shanghai.then(Vec::new);
        let exec_ctx = EthBlockExecutionCtx {
            parent_hash: parent.0,
            parent_beacon_block_root: header.parent_beacon_block_root,
            ommers: &[],
            withdrawals: withdrawals.as_ref().map(|w| Cow::Borrowed(w.as_slice())),
            extra_data: Default::default(),
            tx_count_hint: Some(block.calls.len()),
            slot_number: header.slot_number,
        };
        // Where EIP-7708 is in force the EVM logs every ether transfer itself: no second log.
        let evm_logs_transfers =
            amsterdam && !revm::context::Cfg::is_eip7708_disabled(&env.cfg_env);
        let tracer = TransferTracer {
            trace_transfers: self.trace_transfers && !evm_logs_transfers,
            warm: removed.clone(),
            ..Default::default()
        };
        // From Amsterdam a simulated block carries its EIP-7928 access list's hash (as geth's):
        // revm's BAL builder records every commit (system calls, transactions, withdrawals) at
        // the index set before it.
        let mut db = BalDatabase::new(&mut self.db);
        if amsterdam {
            db = db.with_bal_builder();
        }
        let mut evm = config.evm_with_inspector(&mut db, env, tracer);
        {
            // geth: an overridden precompile is gone and a moved one lives at its destination,
            // while the fork's precompile addresses stay warm (its access list is the fork's
            // list) and a destination is cold; moved precompiles are therefore found through
            // the map's lookup (always cold) and the tracer warms the vacated addresses.
            let map = evm.precompiles_mut();
            for address in &removed {
                map.apply_precompile(address, |_| None);
            }
            let moved: Vec<(Address, &'static revm::precompile::Precompile)> = moves
                .iter()
                .filter_map(|(from, to)| precompiles.get(from).map(|p| (*to, p)))
                .collect();
            if !moved.is_empty() {
                map.set_precompile_lookup(move |address: &Address| {
                    let (_, p) = moved.iter().rev().find(|(to, _)| to == address)?;
                    let p = *p;
                    Some(DynPrecompile::from(move |input: PrecompileInput<'_>| {
                        p.execute(input.data, input.gas, input.reservoir)
                    }))
                });
            }
        }
        let mut ex = config.executor_with_ctx(evm, exec_ctx);
        ex.apply_pre_execution_changes().map_err(internal)?;
        let mut transactions = Vec::with_capacity(block.calls.len());
        let mut senders = Vec::with_capacity(block.calls.len());
        let mut records = Vec::with_capacity(block.calls.len());
        let mut gas_used = 0u64;
        for (i, request) in block.calls.iter().enumerate() {
            ex.evm_mut().db_mut().bal_state.bal_index = BlockAccessIndex::from_tx_index(i as u64);
            let from = request.from.unwrap_or_default();
            let remaining = header.gas_limit - gas_used;
            let mut gas = request.gas.unwrap_or(remaining);
            if gas > remaining {
                return Err(error(
                    -38015,
                    format!("block gas limit reached: {gas_used} >= {}", header.gas_limit),
                ));
            }
            let capped = gas > self.budget;
            gas = gas.min(self.budget);
            let state_nonce =
                ex.evm_mut().db_mut().basic(from).map_err(internal)?.map_or(0, |a| a.nonce);
            let nonce = request.nonce.unwrap_or(state_nonce);
            if self.validation {
                // geth checks the nonce before the fees (revm the other way round).
                let e = match nonce.cmp(&state_nonce) {
                    Ordering::Less => {
                        Some(InvalidTransaction::NonceTooLow { tx: nonce, state: state_nonce })
                    }
                    Ordering::Greater => {
                        Some(InvalidTransaction::NonceTooHigh { tx: nonce, state: state_nonce })
                    }
                    Ordering::Equal if nonce == u64::MAX => {
                        Some(InvalidTransaction::NonceOverflowInTransaction)
                    }
                    Ordering::Equal => None,
                };
                if let Some(e) = e {
                    return Err(invalid_transaction(&e, from, gas));
                }
            }
            let tx = unsigned_transaction(request, chain.chain_id, nonce, gas)?;
            let mut tx_env = TxEnv::from_recovered_tx(&tx, from);
            // Without validation the nonce is not checked: the transaction carries the
            // account's (a create's address follows it, and EIP-2780's new-account charge reads
            // that address from the transaction's nonce), 0 for u64::MAX (which revm refuses).
            if !self.validation {
                tx_env.nonce = if state_nonce == u64::MAX { 0 } else { state_nonce };
            }
            ex.evm_mut().inspector_mut().reset();
            let result = match ex.evm_mut().transact(tx_env) {
                Ok(r) => r,
                Err(EVMError::Transaction(e)) => {
                    return Err(invalid_transaction(&e, from, gas));
                }
                Err(e) => return Err(internal(e)),
            };
            let logs = std::mem::take(&mut ex.evm_mut().inspector_mut().logs);
            let deposit_out_of_gas = ex.evm_mut().inspector_mut().deposit_out_of_gas;
            let gas_info = *result.result.gas();
            let used = gas_info.tx_gas_used();
            self.budget = self.budget.saturating_sub(used);
            gas_used += used;
            records.push(call_record(
                &result.result,
                logs,
                gas_info.total_gas_spent().max(gas_info.floor_gas()),
                capped,
                deposit_out_of_gas,
            ));
            ex.commit_transaction(EthTxResult {
                result,
                blob_gas_used: tx.blob_gas_used().unwrap_or_default(),
                tx_type: tx.tx_type(),
            });
            if state_nonce == u64::MAX && tx.kind().is_call() {
                // Only reachable without validation: geth's nonce increment wraps (revm's
                // saturates).
                if let Some(account) = ex.evm_mut().db_mut().cache.accounts.get_mut(&from) {
                    account.info.nonce = 0;
                }
            }
            transactions.push(tx);
            senders.push(from);
        }
        // EIP-7778 under the bal-devnet rules: the block's gas before refunds (as the executor).
        let block_gas_before_refunds = ex.block_regular_gas_used;
        ex.evm_mut().db_mut().bal_state.bal_index =
            BlockAccessIndex::new(block.calls.len() as u64 + 1);
        let (evm, result) = ex.finish().map_err(internal)?;
        drop(evm);
        let bal = db.bal_state.take_built_alloy_bal();
        drop(db);
        let updates = self.account_updates()?;
        let root =
            update_state_root(self.base_root, &updates, &&*self.ctx.provider).map_err(internal)?;
        header.state_root = root.root;
        header.gas_used = if chain.is_bal_devnet(header.timestamp) {
            block_gas_before_refunds
        } else {
            result.gas_used
        };
        header.transactions_root = calculate_transaction_root(&transactions);
        header.receipts_root = calculate_receipt_root(&result.receipts);
        header.logs_bloom = result.receipts.iter().fold(Bloom::ZERO, |bloom, r| bloom | r.bloom());
        if header.blob_gas_used.is_some() {
            header.blob_gas_used = Some(result.blob_gas_used);
        }
        if let Some(bal) = bal {
            header.block_access_list_hash = Some(compute_block_access_list_hash(&bal));
        }
        if chain.is_prague(header.timestamp) {
            header.requests_hash = Some(if result.requests.is_empty() {
                EMPTY_REQUESTS_HASH
            } else {
                result.requests.requests_hash()
            });
        }
        let hash = header.hash_slow();
        self.db.cache.block_hashes.insert(U256::from(number), hash);
        let stored = StoredBlock {
            number,
            hash,
            header: header.clone(),
            body: BlockBody {
                transactions,
                ommers: Vec::new(),
                withdrawals: withdrawals.map(Withdrawals::new),
            },
            senders: None,
        };
        let mut json = serde_json::to_value(stored.rpc_block_with_senders(self.full, &senders)?)
            .map_err(internal)?;
        let calls = calls_json(records, &stored);
        json["calls"] = calls;
        Ok((hash, header, json))
    }

    /// Everything the simulation changed since the base block, as state-root updates.
    fn account_updates(&self) -> Result<Vec<AccountUpdate>, ErrorObjectOwned> {
        let mut out = Vec::new();
        for (address, account) in &self.db.cache.accounts {
            let before = self.pre.account_values(address).map_err(internal)?;
            let state = account.account_state.clone();
            let wiped = matches!(state, AccountState::StorageCleared | AccountState::NotExisting);
            let info = &account.info;
            // EIP-161: an account left empty is removed once touched; an untouched one (only
            // read) stays as it was.
            if matches!(state, AccountState::NotExisting) || info.is_empty() {
                let untouched = state == AccountState::None
                    && before == Some((info.balance, info.nonce, info.code_hash));
                if before.is_some() && !untouched {
                    out.push(AccountUpdate {
                        address: *address,
                        info: None,
                        wiped: true,
                        storage: Vec::new(),
                    });
                }
                continue;
            }
            let mut storage = Vec::new();
            for (slot, value) in &account.storage {
                let old = if wiped {
                    U256::ZERO
                } else {
                    self.pre.slot(address, slot).map_err(internal)?
                };
                if *value != old {
                    storage.push((*slot, *value));
                }
            }
            storage.sort_unstable();
            let unchanged = before == Some((info.balance, info.nonce, info.code_hash));
            if unchanged && storage.is_empty() && !wiped {
                continue;
            }
            let after = Some((info.nonce, info.balance, info.code_hash));
            out.push(AccountUpdate { address: *address, info: after, wiped, storage });
        }
        out.sort_by_key(|u| u.address);
        Ok(out)
    }
}

/// The `calls` array of a simulated `block`: one result object per call, its logs placed in
/// the block (hash, number, time, transaction, index).
fn calls_json(records: Vec<CallRecord>, block: &StoredBlock) -> Value {
    let calls =
        records.into_iter().zip(&block.body.transactions).enumerate().map(|(i, (r, tx))| {
            let logs: Vec<RpcLog> = r
                .logs
                .into_iter()
                .map(|(index, inner)| RpcLog {
                    inner,
                    block_hash: Some(block.hash),
                    block_number: Some(block.number),
                    block_timestamp: Some(block.header.timestamp),
                    transaction_hash: Some(*tx.tx_hash()),
                    transaction_index: Some(i as u64),
                    log_index: Some(index),
                    removed: false,
                })
                .collect();
            let mut call = serde_json::json!({
                "returnData": r.return_data,
                "logs": logs,
                "gasUsed": alloy_primitives::U64::from(r.gas_used),
                "maxUsedGas": alloy_primitives::U64::from(r.max_used_gas),
                "status": alloy_primitives::U64::from(u64::from(r.status)),
            });
            if let Some(e) = r.error {
                call["error"] = e;
            }
            call
        });
    Value::Array(calls.collect())
}

/// The result object of one executed call.
fn call_record(
    result: &ExecutionResult<HaltReason>,
    logs: Vec<(u64, Log)>,
    max_used_gas: u64,
    capped: bool,
    deposit_out_of_gas: bool,
) -> CallRecord {
    let gas_used = result.gas().tx_gas_used();
    let (status, error) = match result {
        ExecutionResult::Success { .. } => (true, None),
        ExecutionResult::Revert { output, .. } => {
            let message = crate::call::revert_message(output);
            (false, Some(serde_json::json!({"message": message, "code": 3, "data": output})))
        }
        ExecutionResult::Halt { reason, .. } => {
            let mut message = match reason {
                HaltReason::OutOfGas(_) if deposit_out_of_gas => {
                    "contract creation code storage out of gas".to_string()
                }
                _ => halt_message(reason),
            };
            if capped {
                message.push_str(" (gas limit was capped by the RPC server's global gas cap)");
            }
            (false, Some(serde_json::json!({"message": message, "code": -32015})))
        }
    };
    CallRecord {
        // geth returns no data for a failed call (a revert's data is in its error).
        return_data: if status {
            result.output().cloned().unwrap_or_default()
        } else {
            Default::default()
        },
        // The tracer keeps no logs of a failed transaction.
        logs,
        gas_used,
        max_used_gas,
        status,
        error,
    }
}

/// geth's text for an EVM error (`core/vm/errors.go`).
pub(crate) fn halt_message(reason: &HaltReason) -> String {
    match reason {
        HaltReason::OutOfGas(
            OutOfGasError::Basic
            | OutOfGasError::Memory
            | OutOfGasError::MemoryLimit
            | OutOfGasError::Precompile
            | OutOfGasError::InvalidOperand
            | OutOfGasError::ReentrancySentry,
        ) => "out of gas".into(),
        HaltReason::OpcodeNotFound | HaltReason::InvalidFEOpcode => "invalid opcode".into(),
        HaltReason::InvalidJump => "invalid jump destination".into(),
        HaltReason::StackUnderflow => "stack underflow".into(),
        HaltReason::StackOverflow => "stack limit reached 1024 (1023)".into(),
        HaltReason::OutOfFunds => "insufficient balance for transfer".into(),
        HaltReason::CallTooDeep => "max call depth exceeded".into(),
        HaltReason::StateChangeDuringStaticCall => "write protection".into(),
        HaltReason::CreateCollision => "contract address collision".into(),
        HaltReason::CreateContractSizeLimit => "max code size exceeded".into(),
        HaltReason::CreateContractStartingWithEF => "invalid code: must not begin with 0xef".into(),
        HaltReason::CreateInitCodeSizeLimit => "max initcode size exceeded".into(),
        HaltReason::NonceOverflow => "nonce uint64 overflow".into(),
        HaltReason::OutOfOffset => "return data out of bounds".into(),
        other => format!("{other:?}"),
    }
}

/// A rejected call as geth reports it (`txValidationError`).
fn invalid_transaction(e: &InvalidTransaction, from: Address, gas: u64) -> ErrorObjectOwned {
    use InvalidTransaction as I;
    let code = match e {
        I::NonceTooLow { .. } => -38010,
        I::NonceTooHigh { .. } => -38011,
        I::GasPriceLessThanBasefee => -38012,
        I::CallGasCostMoreThanGasLimit { .. } | I::GasFloorMoreThanGasLimit { .. } => -38013,
        I::LackOfFundForMaxFee { .. } | I::OverflowPaymentInTransaction => -38014,
        I::CallerGasLimitMoreThanBlock | I::TxGasLimitGreaterThanCap { .. } => -38015,
        I::RejectCallerWithCode => -38024,
        I::CreateInitCodeSizeLimit => -38025,
        _ => -32603,
    };
    error(code, format!("err: {e}: address {from} (supplied gas {gas})"))
}

/// The unsigned transaction a call stands for (geth's `ToTransaction`, built by alloy's
/// `build_typed_simulate_transaction`): EIP-7702 with an authorization list, EIP-4844 with blob
/// hashes, otherwise EIP-1559 (legacy with a gas price); missing fees are zero.
fn unsigned_transaction(
    request: &TransactionRequest,
    chain_id: u64,
    nonce: u64,
    gas_limit: u64,
) -> Result<TxEnvelope, ErrorObjectOwned> {
    let mut request = request.clone();
    request.chain_id = Some(chain_id);
    request.nonce = Some(nonce);
    request.gas = Some(gas_limit);
    if request.gas_price.is_none() {
        request.max_fee_per_gas.get_or_insert(0);
        request.max_priority_fee_per_gas.get_or_insert(0);
    }
    if request.blob_versioned_hashes.is_some() {
        request.max_fee_per_blob_gas.get_or_insert(0);
    } else if request.authorization_list.is_none() {
        // No recipient: a contract creation (blob and set-code transactions need one).
        request.to.get_or_insert(alloy_primitives::TxKind::Create);
    }
    let tx =
        request.build_typed_simulate_transaction().map_err(|e| error(-32602, e.to_string()))?;
    Ok(tx.map_eip4844(Into::into))
}

/// geth's simulation log tracer: every log of a transaction in order, with (`traceTransfers`)
/// an ERC-7528 transfer log for every value transfer; logs of frames that fail are dropped.
/// A log's index counts every log captured in the block so far, dropped ones included (the
/// numbering of the geth version the rpc-compat suite was generated with).
#[derive(Debug, Default)]
struct TransferTracer {
    trace_transfers: bool,
    /// Addresses to warm at the start of each transaction (precompiles moved away or
    /// overridden: geth's access list still holds them).
    warm: Vec<Address>,
    /// Logs captured in the block so far.
    count: u64,
    /// Logs (with their index) of the open frames, outermost first; whether each frame is a
    /// create whose transfer log waits for the created address.
    frames: Vec<(Vec<(u64, Log)>, bool)>,
    /// The finished transaction's logs.
    logs: Vec<(u64, Log)>,
    /// The transaction's top frame is a create whose code could not pay for its deposit (revm
    /// says out of gas; geth "contract creation code storage out of gas").
    deposit_out_of_gas: bool,
}

impl TransferTracer {
    fn reset(&mut self) {
        self.frames.clear();
        self.logs.clear();
        self.deposit_out_of_gas = false;
    }

    fn transfer_log(from: Address, to: Address, value: U256) -> Log {
        Log::new_unchecked(
            TRANSFER_ADDRESS,
            vec![TRANSFER_TOPIC, from.into_word(), to.into_word()],
            B256::from(value).0.to_vec().into(),
        )
    }

    fn capture(&mut self, log: Log) {
        if let Some((logs, _)) = self.frames.last_mut() {
            logs.push((self.count, log));
            self.count += 1;
        }
    }

    fn enter<CTX: ContextTr>(&mut self, context: &mut CTX, transfer: Option<Log>, create: bool) {
        if self.frames.is_empty() {
            for address in &self.warm {
                // A load marks the account warm for the rest of the transaction.
                let _ = context.journal_mut().load_account(*address);
            }
        }
        self.frames.push((Vec::new(), create));
        if let Some(log) = transfer.filter(|_| self.trace_transfers) {
            self.capture(log);
        }
    }

    fn exit(&mut self, ok: bool) {
        let Some((logs, _)) = self.frames.pop() else { return };
        if !ok {
            return;
        }
        match self.frames.last_mut() {
            Some((parent, _)) => parent.extend(logs),
            None => self.logs = logs,
        }
    }
}

impl<CTX: ContextTr> Inspector<CTX> for TransferTracer {
    fn log(&mut self, _context: &mut CTX, log: Log) {
        self.capture(log);
    }

    fn call(&mut self, context: &mut CTX, inputs: &mut CallInputs) -> Option<CallOutcome> {
        let transfer = match inputs.transfer_value() {
            Some(v) if inputs.scheme == CallScheme::Call && !v.is_zero() => {
                Some(Self::transfer_log(inputs.caller, inputs.target_address, v))
            }
            _ => None,
        };
        self.enter(context, transfer, false);
        None
    }

    fn call_end(&mut self, _context: &mut CTX, _inputs: &CallInputs, outcome: &mut CallOutcome) {
        self.exit(outcome.result.result.is_ok());
    }

    fn create(&mut self, context: &mut CTX, inputs: &mut CreateInputs) -> Option<CreateOutcome> {
        let value = inputs.value();
        let transfer =
            (!value.is_zero()).then(|| Self::transfer_log(inputs.caller(), Address::ZERO, value));
        self.enter(context, transfer, true);
        None
    }

    fn create_end(
        &mut self,
        _context: &mut CTX,
        _inputs: &CreateInputs,
        outcome: &mut CreateOutcome,
    ) {
        if let (Some((logs, true)), Some(address)) = (self.frames.last_mut(), outcome.address) {
            if let Some((_, first)) =
                logs.first_mut().filter(|(_, l)| l.address == TRANSFER_ADDRESS)
            {
                let mut topics = first.topics().to_vec();
                topics[2] = address.into_word();
                first.data = LogData::new_unchecked(topics, first.data.data.clone());
            }
        }
        // A create that runs out of gas while its init code still returned code ran out paying
        // for the code's deposit.
        if self.frames.len() == 1
            && outcome.result.result == revm::interpreter::InstructionResult::OutOfGas
            && !outcome.result.output.is_empty()
        {
            self.deposit_out_of_gas = true;
        }
        self.exit(outcome.result.result.is_ok());
    }

    fn selfdestruct(&mut self, contract: Address, target: Address, value: U256) {
        if self.trace_transfers && !value.is_zero() {
            self.capture(Self::transfer_log(contract, target, value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(number: Option<u64>, time: Option<u64>) -> SimBlock {
        SimBlock {
            block_overrides: Some(BlockOverrides {
                number: number.map(U256::from),
                time,
                ..Default::default()
            }),
            state_overrides: None,
            calls: Vec::new(),
        }
    }

    fn numbers_and_times(blocks: &[SimBlock]) -> Vec<(u64, u64)> {
        blocks
            .iter()
            .map(|b| {
                let o = b.block_overrides.as_ref().unwrap();
                (o.number.unwrap().to::<u64>(), o.time.unwrap())
            })
            .collect()
    }

    #[test]
    fn gaps_are_filled_and_times_follow_by_twelve_seconds() {
        let base = Header { number: 10, timestamp: 100, ..Default::default() };
        let out = sanitize_chain(vec![block(None, None), block(Some(14), None)], &base).unwrap();
        assert_eq!(
            numbers_and_times(&out),
            vec![(11, 112), (12, 124), (13, 136), (14, 148)],
            "blocks 12 and 13 are empty fillers"
        );
        assert!(out[1].calls.is_empty() && out[2].calls.is_empty());
        let out = sanitize_chain(vec![block(None, Some(500)), block(None, None)], &base).unwrap();
        assert_eq!(numbers_and_times(&out), vec![(11, 500), (12, 512)]);
    }

    #[test]
    fn disorder_and_too_many_blocks_are_refused_with_geths_codes() {
        let base = Header { number: 10, timestamp: 100, ..Default::default() };
        let code = |blocks| sanitize_chain(blocks, &base).unwrap_err().code();
        assert_eq!(code(vec![block(Some(10), None)]), -38020);
        assert_eq!(code(vec![block(Some(12), None), block(Some(12), None)]), -38020);
        assert_eq!(code(vec![block(None, Some(100))]), -38021);
        assert_eq!(code(vec![block(None, Some(200)), block(None, Some(150))]), -38021);
        assert_eq!(code(vec![block(Some(10 + MAX_BLOCKS + 1), None)]), -38026);
        assert_eq!(code(vec![block(None, Some(u64::MAX)), block(None, None)]), -38021);
        assert!(sanitize_chain(vec![block(Some(10 + MAX_BLOCKS), None)], &base).is_ok());
    }
}
