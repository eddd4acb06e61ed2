//! `debug_traceTransaction`, `debug_traceBlockByNumber`, `debug_traceBlockByHash` with geth's
//! default tracer (struct logs: `disableStack`, `disableStorage`, `enableMemory`,
//! `enableReturnData`) and its built-in `callTracer` (`onlyTopCall`, `withLog`),
//! `prestateTracer` (`diffMode`, `disableCode`, `disableStorage`), `4byteTracer` and
//! `noopTracer`: the block re-executed on its parent's state (read through the parent's state
//! root), its system calls first, each transaction seen by a revm-inspectors inspector
//! (`TracingInspector`, `FourByteInspector`) and turned into geth's frame by its
//! `GethTraceBuilder`; the prestate frames read the state before the transaction from the
//! replay's database.

use crate::{
    blocks::{block_name, resolve, BlockHeader},
    call,
    convert::StoredBlock,
    overrides::CallOverrides,
    RpcContext, RpcError,
};
use alloy_eips::BlockId;
use alloy_evm::Evm as _;
use alloy_primitives::{Address, Bytes, B256, U256};
use alloy_rpc_types_eth::TransactionRequest;
use alloy_rpc_types_trace::geth::{
    CallConfig, FourByteFrame, GethDebugBuiltInTracerType, GethDebugTracerType,
    GethDebugTracingCallOptions, GethDebugTracingOptions, GethDefaultTracingOptions, GethTrace,
    NoopFrame, PreStateConfig, PreStateFrame, TraceResult,
};
use gigagas_executor::replay::replay_block;
use gigagas_executor::replay::ReplayDb;
use gigagas_executor::EvmConfig;
use gigagas_primitives::BlockInput;
use gigagas_state::PreState;
use gigagas_storage_api::TransactionsProvider;
use jsonrpsee::types::ErrorObjectOwned;
use revm::database::{CacheDB, WrapDatabaseRef};
use revm::inspector::NoOpInspector;
use revm::{
    context::result::{ExecutionResult, HaltReason, ResultAndState},
    primitives::KECCAK_EMPTY,
    DatabaseRef,
};
use revm_inspectors::tracing::{FourByteInspector, TracingInspector, TracingInspectorConfig};
use serde_json::{json, Value};
use std::sync::Arc;

fn invalid(e: impl std::fmt::Display) -> ErrorObjectOwned {
    RpcError::InvalidParams(e.to_string()).into()
}

/// A block to replay traced: the block, its transactions' senders, its parent's state and how
/// many of its transactions to run.
pub(crate) struct BlockReplay<'a> {
    ctx: &'a RpcContext,
    pub(crate) input: BlockInput,
    senders: Vec<Address>,
    pre_state: PreState,
    count: Option<usize>,
}

impl<'a> BlockReplay<'a> {
    /// Block `number`, read from the store, its first `count` transactions (all when `None`).
    pub(crate) fn load(
        ctx: &'a RpcContext,
        number: u64,
        count: Option<usize>,
    ) -> Result<Self, ErrorObjectOwned> {
        if number == 0 {
            return Err(RpcError::GenesisNotTraceable.into());
        }
        let block = StoredBlock::load(ctx, number)?
            .ok_or_else(|| RpcError::NotFound(format!("block #{number}")))?;
        let parent = StoredBlock::load(ctx, number - 1)?
            .ok_or_else(|| RpcError::NotFound(format!("block #{}", number - 1)))?;
        Self::on_parent(ctx, block.block_input(), &parent.header, count)
    }

    /// `block`, given whole (`debug_traceBlock`: it need not be stored), on its parent's state,
    /// the parent found by hash among the stored and in-memory blocks.
    pub(crate) fn of_block(
        ctx: &'a RpcContext,
        block: alloy_consensus::Block<alloy_consensus::TxEnvelope>,
    ) -> Result<Self, ErrorObjectOwned> {
        if block.header.number == 0 {
            return Err(RpcError::GenesisNotTraceable.into());
        }
        let parent_hash = block.header.parent_hash;
        let parent = crate::blocks::block_by_hash(ctx, &parent_hash)?
            .ok_or_else(|| RpcError::NotFound(format!("parent {parent_hash}")))?;
        let input = BlockInput {
            hash: block.header.hash_slow(),
            header: block.header,
            transactions: block.body.transactions,
            claimed_senders: Vec::new(),
            withdrawals: block.body.withdrawals,
            ommers: block.body.ommers,
        };
        Self::on_parent(ctx, input, &parent.header, None)
    }

    /// `input`'s replay on the state after `parent` (an error for a pruned one).
    fn on_parent(
        ctx: &'a RpcContext,
        input: BlockInput,
        parent: &alloy_consensus::Header,
        count: Option<usize>,
    ) -> Result<Self, ErrorObjectOwned> {
        let senders = input.par_recover(&ctx.chain).map_err(RpcError::from)?;
        let trie = crate::state::trie_state(ctx, parent.number, parent.state_root)?;
        let pre_state = PreState::backed(Arc::new(trie));
        Ok(Self { ctx, input, senders, pre_state, count })
    }

    /// Replays it with `inspector` ([`replay_block`]); `on_tx` takes each transaction's trace.
    pub(crate) fn run<I, F>(&self, inspector: I, on_tx: F) -> Result<(), ErrorObjectOwned>
    where
        I: for<'db> revm::Inspector<alloy_evm::eth::EthEvmContext<&'db mut ReplayDb<'db>>>,
        F: FnMut(usize, &mut I, &ResultAndState<HaltReason>, &ReplayDb<'_>),
    {
        let Self { ctx, input, senders, pre_state, count, .. } = self;
        replay_block(&ctx.chain, input, senders, pre_state, inspector, *count, on_tx)
            .map_err(|e| RpcError::Replay(Box::new(e)).into())
    }
}

/// The traces of the first `count` transactions of block `number` (all when `None`), in the
/// shape of the tracer `opts` names: geth's struct logs by default, or its built-in
/// `callTracer`, `prestateTracer` (`diffMode` too), `4byteTracer` or `noopTracer`. Other
/// tracers (JavaScript ones among them) are an invalid-params error naming them.
fn trace_block(
    ctx: &RpcContext,
    number: u64,
    count: Option<usize>,
    opts: &GethDebugTracingOptions,
) -> Result<Vec<(B256, GethTrace)>, ErrorObjectOwned> {
    trace_replay(&BlockReplay::load(ctx, number, count)?, opts)
}

/// `debug_traceBlock`: the block `rlp` encodes (it need not be stored), each transaction
/// traced on its parent's state as [`trace_block`] traces a stored one.
pub(crate) fn trace_raw_block(
    ctx: &RpcContext,
    rlp: &[u8],
    opts: &GethDebugTracingOptions,
) -> Result<Vec<TraceResult>, ErrorObjectOwned> {
    let mut bytes = rlp;
    let block: alloy_consensus::Block<alloy_consensus::TxEnvelope> =
        alloy_rlp::Decodable::decode(&mut bytes)
            .map_err(|e| invalid(format!("could not decode block: {e}")))?;
    if !bytes.is_empty() {
        return Err(invalid(format!("could not decode block: {} bytes past its end", bytes.len())));
    }
    Ok(trace_replay(&BlockReplay::of_block(ctx, block)?, opts)?
        .into_iter()
        .map(|(hash, result)| TraceResult::Success { result, tx_hash: Some(hash) })
        .collect())
}

/// The traces of `replay`'s transactions, in the shape of the tracer `opts` names.
fn trace_replay(
    replay: &BlockReplay<'_>,
    opts: &GethDebugTracingOptions,
) -> Result<Vec<(B256, GethTrace)>, ErrorObjectOwned> {
    use GethDebugBuiltInTracerType as T;
    let input = &replay.input;
    let senders = &replay.senders;
    let hash = |i: usize| *input.transactions[i].tx_hash();
    let mut frames = Vec::new();
    match &opts.tracer {
        None => {
            let config = opts.config;
            let inspector =
                TracingInspector::new(TracingInspectorConfig::from_geth_config(&config));
            replay.run(inspector, |i, insp, out, _| {
                frames.push((hash(i), default_frame(insp, out, config)));
                insp.fuse();
            })?;
        }
        Some(GethDebugTracerType::BuiltInTracer(T::CallTracer)) => {
            let config = opts.tracer_config.clone().into_call_config().map_err(invalid)?;
            let inspector =
                TracingInspector::new(TracingInspectorConfig::from_geth_call_config(&config));
            replay.run(inspector, |i, insp, out, _| {
                use alloy_consensus::Transaction as _;
                let tx = &input.transactions[i];
                let top = TopCall {
                    gas_limit: tx.gas_limit(),
                    from: senders[i],
                    to: tx.to(),
                    value: tx.value(),
                    input: tx.input().clone(),
                };
                frames.push((hash(i), call_frame(insp, out, config, &top)));
                insp.fuse();
            })?;
        }
        Some(GethDebugTracerType::BuiltInTracer(T::PreStateTracer)) => {
            let config = opts.tracer_config.clone().into_pre_state_config().map_err(invalid)?;
            let inspector =
                TracingInspector::new(TracingInspectorConfig::from_geth_prestate_config(&config));
            let mut read_failed = None;
            replay.run(inspector, |i, insp, out, db| {
                match prestate_frame(insp, out, &config, db) {
                    Ok(frame) => frames.push((hash(i), frame)),
                    Err(e) => read_failed = read_failed.take().or(Some(e)),
                }
                insp.fuse();
            })?;
            if let Some(e) = read_failed {
                return Err(RpcError::ReplayRead(Box::new(e)).into());
            }
        }
        Some(GethDebugTracerType::BuiltInTracer(T::FourByteTracer)) => {
            replay.run(FourByteInspector::default(), |i, insp, _, _| {
                frames.push((hash(i), FourByteFrame::from(&*insp).into()));
                *insp = FourByteInspector::default();
            })?;
        }
        Some(GethDebugTracerType::BuiltInTracer(T::NoopTracer)) => {
            replay.run(NoOpInspector, |i, _, _, _| {
                frames.push((hash(i), NoopFrame::default().into()));
            })?;
        }
        Some(other) => {
            let name = serde_json::to_value(other).unwrap_or_default();
            return Err(invalid(format!("tracer {name} is not supported")));
        }
    }
    Ok(frames)
}

/// geth's struct-log trace of the transaction `insp` saw run to `out`.
fn default_frame(
    insp: &TracingInspector,
    out: &ResultAndState<HaltReason>,
    config: GethDefaultTracingOptions,
) -> GethTrace {
    let mut frame = insp.geth_builder().geth_traces(
        out.result.tx_gas_used(),
        out.result.output().cloned().unwrap_or_default(),
        config,
    );
    as_geth_struct_logs(&mut frame.struct_logs);
    GethTrace::Default(frame)
}

/// What a traced transaction (or call) is, for its top call's frame.
struct TopCall {
    gas_limit: u64,
    from: Address,
    to: Option<Address>,
    value: U256,
    input: Bytes,
}

/// geth's `callTracer` trace of the transaction `insp` saw run to `out`.
fn call_frame(
    insp: &mut TracingInspector,
    out: &ResultAndState<HaltReason>,
    config: CallConfig,
    top: &TopCall,
) -> GethTrace {
    // The top call's gas is the transaction's gas limit, as geth's.
    insp.set_transaction_gas_limit(top.gas_limit);
    let mut frame = insp.geth_builder().geth_call_traces(config, out.result.tx_gas_used());
    // A transaction that halts before its first frame runs (e.g. out of gas for EIP-8037's
    // new-account state gas) has the halt as its top call's error.
    if let (ExecutionResult::Halt { reason, .. }, None) = (&out.result, &frame.error) {
        frame.error = Some(crate::simulate::halt_message(reason));
    }
    // Such a transaction left no frame behind: its top call is the transaction.
    if frame.from.is_zero() && frame.calls.is_empty() {
        frame.from = top.from;
        frame.to = top.to;
        frame.value = Some(top.value);
        frame.input = top.input.clone();
        frame.typ = if top.to.is_none() { "CREATE" } else { "CALL" }.into();
    }
    frame.into()
}

/// geth's `prestateTracer` trace of the transaction `insp` saw run to `out` on `db` (the
/// state before it).
fn prestate_frame<D: DatabaseRef>(
    insp: &TracingInspector,
    out: &ResultAndState<HaltReason>,
    config: &PreStateConfig,
    db: &D,
) -> Result<GethTrace, D::Error> {
    insp.geth_builder()
        .geth_prestate_traces(out, config, db)
        .and_then(|frame| with_code_hashes(frame, out, db))
}

/// `debug_traceCall`: `request` run after `block` with the call options' state and block
/// overrides, traced by the tracer they name (as [`trace_block`]); nothing committed.
pub(crate) fn trace_call(
    ctx: &RpcContext,
    block: &BlockHeader,
    request: &TransactionRequest,
    opts: &GethDebugTracingCallOptions,
) -> Result<GethTrace, ErrorObjectOwned> {
    use GethDebugBuiltInTracerType as T;
    if opts.tx_index.is_some() {
        return Err(invalid("txIndex is not supported"));
    }
    let overrides = CallOverrides {
        state: opts.state_overrides.as_ref(),
        block: opts.block_overrides.as_ref(),
    };
    call::with_overrides(ctx, block, request, None, overrides, |state, env, tx| {
        let top = TopCall {
            gas_limit: tx.gas_limit,
            from: tx.caller,
            to: tx.kind.to().copied(),
            value: tx.value,
            input: tx.data.clone(),
        };
        let config = EvmConfig::new(&ctx.chain);
        let db = || CacheDB::new(WrapDatabaseRef(state));
        let failed = |e| -> ErrorObjectOwned { RpcError::from(call::not_run(e)).into() };
        let opts = &opts.tracing_options;
        match &opts.tracer {
            None => {
                let inspector =
                    TracingInspector::new(TracingInspectorConfig::from_geth_config(&opts.config));
                let mut evm = config.evm_with_inspector(db(), env, inspector);
                let out = evm.transact(tx).map_err(failed)?;
                Ok(default_frame(evm.inspector(), &out, opts.config))
            }
            Some(GethDebugTracerType::BuiltInTracer(T::CallTracer)) => {
                let call_config = opts.tracer_config.clone().into_call_config().map_err(invalid)?;
                let inspector = TracingInspector::new(
                    TracingInspectorConfig::from_geth_call_config(&call_config),
                );
                let mut evm = config.evm_with_inspector(db(), env, inspector);
                let out = evm.transact(tx).map_err(failed)?;
                Ok(call_frame(evm.inspector_mut(), &out, call_config, &top))
            }
            Some(GethDebugTracerType::BuiltInTracer(T::PreStateTracer)) => {
                let pre_config =
                    opts.tracer_config.clone().into_pre_state_config().map_err(invalid)?;
                let inspector = TracingInspector::new(
                    TracingInspectorConfig::from_geth_prestate_config(&pre_config),
                );
                let mut evm = config.evm_with_inspector(db(), env, inspector);
                let out = evm.transact(tx).map_err(failed)?;
                Ok(prestate_frame(evm.inspector(), &out, &pre_config, state)
                    .map_err(RpcError::State)?)
            }
            Some(GethDebugTracerType::BuiltInTracer(T::FourByteTracer)) => {
                let mut evm = config.evm_with_inspector(db(), env, FourByteInspector::default());
                evm.transact(tx).map_err(failed)?;
                Ok(FourByteFrame::from(evm.inspector()).into())
            }
            Some(GethDebugTracerType::BuiltInTracer(T::NoopTracer)) => {
                let mut evm = config.evm_with_inspector(db(), env, NoOpInspector);
                evm.transact(tx).map_err(failed)?;
                Ok(NoopFrame::default().into())
            }
            Some(other) => {
                let name = serde_json::to_value(other).unwrap_or_default();
                Err(invalid(format!("tracer {name} is not supported")))
            }
        }
    })
}

/// revm-inspectors' struct logs in geth 1.17.10's terms (its logger reports an opcode's cost
/// and the refund counter as its interpreter has them when the opcode's gas is charged):
/// - `gasCost` is the opcode's regular gas: EIP-8037 state gas that spilled out of the
///   reservoir into the regular gas is left out, and so is the gas a `CREATE`/`CREATE2` hands
///   to its child frame (geth takes it while executing the opcode; `CALL`'s stays in, as in
///   geth);
/// - an `SSTORE` shows the refund counter after its own refund change; a zero counter is
///   left out;
/// - no `stateGasCost` or `stateGasReservoir` (geth's logger has neither).
fn as_geth_struct_logs(logs: &mut [alloy_rpc_types_trace::geth::StructLog]) {
    for k in 0..logs.len() {
        let next = logs.get(k + 1).map(|n| (n.depth, n.gas, n.refund_counter));
        let log = &mut logs[k];
        if let Some(state_gas) = log.state_gas_cost {
            // State gas drains the reservoir first; what it lacked came out of the regular gas.
            let spilled = u64::try_from(state_gas)
                .unwrap_or_default()
                .saturating_sub(log.state_gas_reservoir.unwrap_or_default());
            log.gas_cost = log.gas_cost.saturating_sub(spilled);
        }
        if let Some((depth, child_gas, refund_after)) = next {
            if matches!(log.op.as_ref(), "CREATE" | "CREATE2") && depth == log.depth + 1 {
                log.gas_cost = log.gas_cost.saturating_sub(child_gas);
            }
            if log.op == "SSTORE" && depth == log.depth {
                log.refund_counter = refund_after;
            }
        }
    }
    for log in logs {
        log.refund_counter = log.refund_counter.filter(|r| *r != 0);
        log.state_gas_cost = None;
        log.state_gas_reservoir = None;
    }
}

/// geth's `prestateTracer` frame from revm-inspectors': each account with code also carries
/// its `codeHash` (the hash before the transaction; in `diffMode`'s `post`, the new hash when
/// the transaction changed it); accounts empty before the transaction are left out of the
/// prestate, and `diffMode` shows an account that exists neither before nor after with a zero
/// code hash in `post`, as geth 1.17.10 does.
fn with_code_hashes<D: DatabaseRef>(
    frame: PreStateFrame,
    out: &ResultAndState<HaltReason>,
    db: &D,
) -> Result<GethTrace, D::Error> {
    let pre_hash = |address: &Address| -> Result<Option<B256>, D::Error> {
        Ok(db.basic_ref(*address)?.filter(|a| !a.is_code_hash_empty_or_zero()).map(|a| a.code_hash))
    };
    let mut json = serde_json::to_value(&frame).unwrap_or_default();
    // geth leaves accounts that were empty before the transaction (no balance, nonce or code)
    // out of the prestate.
    let was_empty = |address: &Address| -> Result<bool, D::Error> {
        Ok(db.basic_ref(*address)?.is_none_or(|a| a.is_empty()))
    };
    let pre = match &frame {
        PreStateFrame::Default(_) => Some(&mut json),
        PreStateFrame::Diff(_) => json.get_mut("pre"),
    };
    if let Some(pre) = pre.and_then(Value::as_object_mut) {
        let mut empty = Vec::new();
        for key in pre.keys() {
            if let Ok(address) = key.parse::<Address>() {
                if was_empty(&address)? {
                    empty.push(key.clone());
                }
            }
        }
        for key in empty {
            pre.remove(&key);
        }
    }
    let set = |entry: Option<&mut Value>, hash: B256| {
        if let Some(entry) = entry.and_then(Value::as_object_mut) {
            entry.insert("codeHash".into(), json!(hash));
        }
    };
    let key = |address: &Address| format!("{address:#x}");
    match &frame {
        PreStateFrame::Default(mode) => {
            for address in mode.0.keys() {
                if let Some(hash) = pre_hash(address)? {
                    set(json.get_mut(key(address)), hash);
                }
            }
        }
        PreStateFrame::Diff(diff) => {
            for address in diff.pre.keys() {
                if let Some(hash) = pre_hash(address)? {
                    set(json.get_mut("pre").and_then(|p| p.get_mut(key(address))), hash);
                }
            }
            for address in diff.post.keys() {
                let before = pre_hash(address)?.unwrap_or(KECCAK_EMPTY);
                let after = out.state.get(address).map_or(before, |a| a.info.code_hash);
                if after != before {
                    set(json.get_mut("post").and_then(|p| p.get_mut(key(address))), after);
                }
            }
            // geth compares the code hash of every account it looked at with the one after the
            // transaction, which reads as zero for an account that does not exist: an account
            // that neither existed before nor exists after is in `post` with a zero code hash.
            if let Some(post) = json.get_mut("post").and_then(Value::as_object_mut) {
                for (address, account) in &out.state {
                    if account.info.is_empty() && db.basic_ref(*address)?.is_none() {
                        post.entry(key(address))
                            .or_insert_with(|| json!({}))
                            .as_object_mut()
                            .map(|entry| entry.insert("codeHash".into(), json!(B256::ZERO)));
                    }
                }
            }
        }
    }
    Ok(GethTrace::JS(json))
}

/// `debug_traceTransaction`: the trace of transaction `hash` (its block replayed up to it).
pub(crate) fn trace_transaction(
    ctx: &RpcContext,
    hash: &B256,
    opts: &GethDebugTracingOptions,
) -> Result<GethTrace, ErrorObjectOwned> {
    let (number, index) = ctx
        .provider
        .transaction_location(hash)
        .map_err(RpcError::from)?
        .ok_or_else(|| RpcError::NotFound("transaction".into()))?;
    let mut frames = trace_block(ctx, number, Some(index as usize + 1), opts)?;
    let (_, frame) = frames.pop().ok_or_else(|| RpcError::NotFound("transaction".into()))?;
    Ok(frame)
}

/// `debug_traceBlockByNumber` / `debug_traceBlockByHash`: the trace of every transaction of
/// block `id`, each with its hash.
pub(crate) fn trace_block_at(
    ctx: &RpcContext,
    id: BlockId,
    opts: &GethDebugTracingOptions,
) -> Result<Vec<TraceResult>, ErrorObjectOwned> {
    let number = resolve(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
    Ok(trace_block(ctx, number, None, opts)?
        .into_iter()
        .map(|(hash, result)| TraceResult::Success { result, tx_hash: Some(hash) })
        .collect())
}
