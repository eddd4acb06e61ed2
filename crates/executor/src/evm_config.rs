//! The one EVM configuration of the node: how a revm EVM and alloy-evm's Ethereum block
//! executor are built for a block of a chain, in the manner of reth's `EthEvmConfig`.
//!
//! Every execution path builds its EVM here: the sequential reference and the block builder
//! ([`crate::sequential`]), the parallel workers and commit ([`crate::parallel`]), the traced
//! replay ([`crate::replay`]), and the RPC's `eth_call` / `eth_estimateGas` /
//! `eth_simulateV1`, which adjust the environment [`EvmConfig::evm_env`] gives before calling
//! [`EvmConfig::evm`] / [`EvmConfig::evm_with_inspector`].

use crate::receipt::MemoReceiptBuilder;
use alloy_consensus::Header;
use alloy_evm::{
    eth::{EthBlockExecutionCtx, EthBlockExecutor, EthEvmContext},
    precompiles::PrecompilesMap,
    EthEvm, EvmEnv,
};
use alloy_primitives::{Address, Bytes, Log, LogData, B256, U256};
use gigagas_primitives::{BlockInput, ChainSpec, ForkSchedule};
use revm::{
    bytecode::opcode::{EXTCODECOPY, EXTCODESIZE},
    context::ContextTr,
    context_interface::JournalTr,
    handler::PrecompileProvider,
    inspector::NoOpInspector,
    interpreter::{CallInputs, CallValue, InterpreterResult},
    precompile::{PrecompileSpecId, Precompiles},
    primitives::{
        eip7708::{ETH_TRANSFER_LOG_ADDRESS, ETH_TRANSFER_LOG_TOPIC},
        hardfork::SpecId,
        AddressSet,
    },
    Context, Inspector, MainBuilder, MainContext,
};
use std::{
    borrow::Cow,
    ops::{Deref, DerefMut},
};

/// The EVM every executor uses: alloy-evm's Ethereum EVM (revm mainnet handler) with
/// inspector `I` (none by default) and the fork's precompiles ([`BlockPrecompiles`]).
pub type BlockEvm<DB, I = NoOpInspector> = EthEvm<DB, I, BlockPrecompiles>;

/// The precompiles of a block's EVM: alloy-evm's [`PrecompilesMap`] for the fork (what
/// `eth_simulateV1` edits through `Deref`), consulted by revm for every call frame right after
/// the frame's checkpoint and value transfer. Under the bal-devnet rules
/// ([`ChainSpec::is_bal_devnet`]) that is also where a value transfer to the same account
/// (`CALLCODE` with value, a `CALL` or a transaction to oneself) gets its EIP-7708 transfer log,
/// as the EIP-7928 fixtures' draft of EIP-7708 does and revm 43 (which logs only transfers
/// between two accounts) does not: the log lands before the callee's own logs and is dropped
/// with them when the frame reverts.
#[derive(Debug)]
pub struct BlockPrecompiles {
    map: PrecompilesMap,
    self_transfer_logs: bool,
}

impl BlockPrecompiles {
    /// The precompiles of `spec`; `self_transfer_logs` under the bal-devnet rules.
    pub fn new(spec: SpecId, self_transfer_logs: bool) -> Self {
        let map =
            PrecompilesMap::from_static(Precompiles::new(PrecompileSpecId::from_spec_id(spec)));
        Self { map, self_transfer_logs }
    }
}

impl Deref for BlockPrecompiles {
    type Target = PrecompilesMap;

    fn deref(&self) -> &PrecompilesMap {
        &self.map
    }
}

impl DerefMut for BlockPrecompiles {
    fn deref_mut(&mut self) -> &mut PrecompilesMap {
        &mut self.map
    }
}

impl<DB: alloy_evm::Database> PrecompileProvider<EthEvmContext<DB>> for BlockPrecompiles {
    type Output = InterpreterResult;

    fn set_spec(&mut self, spec: SpecId) -> bool {
        <PrecompilesMap as PrecompileProvider<EthEvmContext<DB>>>::set_spec(&mut self.map, spec)
    }

    /// The `String` error is revm's `PrecompileProvider` contract (a fatal provider error);
    /// this wrapper adds none of its own.
    fn run(
        &mut self,
        context: &mut EthEvmContext<DB>,
        inputs: &CallInputs,
    ) -> Result<Option<InterpreterResult>, String> {
        if self.self_transfer_logs && inputs.caller == inputs.target_address {
            if let CallValue::Transfer(value) = inputs.value {
                if !value.is_zero() {
                    context.journal_mut().log(transfer_log(inputs.caller, inputs.caller, value));
                }
            }
        }
        self.map.run(context, inputs)
    }

    fn warm_addresses(&self) -> &AddressSet {
        <PrecompilesMap as PrecompileProvider<EthEvmContext<DB>>>::warm_addresses(&self.map)
    }

    fn contains(&self, address: &Address) -> bool {
        <PrecompilesMap as PrecompileProvider<EthEvmContext<DB>>>::contains(&self.map, address)
    }
}

/// The EIP-7708 log of `value` wei moving from `from` to `to`: LOG3 from the system address,
/// topics `Transfer(address,address,uint256)`, `from`, `to`; data the amount (as revm writes it).
fn transfer_log(from: Address, to: Address, value: U256) -> Log {
    let topics = vec![
        ETH_TRANSFER_LOG_TOPIC,
        B256::left_padding_from(from.as_slice()),
        B256::left_padding_from(to.as_slice()),
    ];
    let data = Bytes::copy_from_slice(&value.to_be_bytes::<32>());
    Log { address: ETH_TRANSFER_LOG_ADDRESS, data: LogData::new_unchecked(topics, data) }
}

/// alloy-evm's Ethereum block executor over `DB` with inspector `I`, receipts built by
/// [`MemoReceiptBuilder`].
pub type BlockExec<'a, DB, I = NoOpInspector> =
    EthBlockExecutor<'a, BlockEvm<DB, I>, &'a ForkSchedule, MemoReceiptBuilder>;

/// How EVMs and block executors are configured for one chain: the fork schedule's spec id,
/// chain id, block environment and blob fee ([`ChainSpec::evm_env`]), revm's mainnet handler
/// and precompiles (alloy-evm's [`EthEvmFactory`]), alloy-evm's Ethereum block executor for
/// system calls, rewards, withdrawals and EIP-7685 requests.
#[derive(Debug, Clone, Copy)]
pub struct EvmConfig<'a> {
    chain: &'a ChainSpec,
}

impl<'a> EvmConfig<'a> {
    /// The configuration of `chain`.
    pub fn new(chain: &'a ChainSpec) -> Self {
        Self { chain }
    }

    /// The chain this configuration executes.
    pub fn chain(&self) -> &'a ChainSpec {
        self.chain
    }

    /// The EVM environment (spec id, chain id, block env, blob fee) for executing `header`.
    pub fn evm_env(&self, header: &Header) -> EvmEnv {
        self.chain.evm_env(header)
    }

    /// An EVM over `db` in environment `env` (from [`EvmConfig::evm_env`], possibly adjusted:
    /// `eth_call` lifts the nonce and base-fee checks).
    pub fn evm<DB: alloy_evm::Database>(&self, db: DB, env: EvmEnv) -> BlockEvm<DB> {
        self.build_evm(db, env, NoOpInspector, false)
    }

    /// [`EvmConfig::evm`] with `inspector` attached (tracers, `eth_simulateV1` transfer logs).
    pub fn evm_with_inspector<DB, I>(&self, db: DB, env: EvmEnv, inspector: I) -> BlockEvm<DB, I>
    where
        DB: alloy_evm::Database,
        I: Inspector<EthEvmContext<DB>>,
    {
        self.build_evm(db, env, inspector, true)
    }

    /// revm's mainnet EVM (as alloy-evm's `EthEvmFactory` builds it) with [`BlockPrecompiles`];
    /// under the bal-devnet rules also `EXTCODESIZE` / `EXTCODECOPY` at Osaka's static gas
    /// (one warm access: revm's `AMSTERDAM` table charges EIP-8038's second one, which the
    /// EIP-7928 fixtures' rules do not have).
    fn build_evm<DB, I>(&self, db: DB, env: EvmEnv, inspector: I, inspect: bool) -> BlockEvm<DB, I>
    where
        DB: alloy_evm::Database,
        I: Inspector<EthEvmContext<DB>>,
    {
        let spec = env.cfg_env.spec;
        let bal_devnet = self.chain.is_bal_devnet(env.block_env.timestamp.saturating_to());
        let mut inner = Context::mainnet()
            .with_block(env.block_env)
            .with_cfg(env.cfg_env)
            .with_db(db)
            .build_mainnet_with_inspector(inspector)
            .with_precompiles(BlockPrecompiles::new(spec, bal_devnet));
        if bal_devnet {
            let warm = revm::interpreter::gas::WARM_STORAGE_READ_COST as u16;
            inner.instruction.insert_gas(EXTCODESIZE, warm);
            inner.instruction.insert_gas(EXTCODECOPY, warm);
        }
        EthEvm::new(inner, inspect)
    }

    /// An EVM for executing `block`'s transactions over `db`.
    pub fn block_evm<DB: alloy_evm::Database>(&self, block: &BlockInput, db: DB) -> BlockEvm<DB> {
        self.evm(db, self.evm_env(&block.header))
    }

    /// alloy-evm's Ethereum block executor for `block` over `db`.
    pub fn block_executor<DB: alloy_evm::block::StateDB>(
        &self,
        block: &'a BlockInput,
        db: DB,
    ) -> BlockExec<'a, DB> {
        self.executor_for(self.block_evm(block, db), block)
    }

    /// [`EvmConfig::block_executor`] with `inspector` attached (the traced replay).
    pub fn block_executor_with_inspector<DB, I>(
        &self,
        block: &'a BlockInput,
        db: DB,
        inspector: I,
    ) -> BlockExec<'a, DB, I>
    where
        DB: alloy_evm::block::StateDB,
        I: Inspector<EthEvmContext<DB>>,
    {
        let evm = self.evm_with_inspector(db, self.evm_env(&block.header), inspector);
        self.executor_for(evm, block)
    }

    /// alloy-evm's Ethereum block executor around `evm` for `block`.
    pub fn executor_for<DB, I>(
        &self,
        evm: BlockEvm<DB, I>,
        block: &'a BlockInput,
    ) -> BlockExec<'a, DB, I>
    where
        DB: alloy_evm::block::StateDB,
        I: Inspector<EthEvmContext<DB>>,
    {
        self.executor_with_ctx(evm, block_ctx(block))
    }

    /// alloy-evm's Ethereum block executor around `evm` with an execution context of the
    /// caller's (`eth_simulateV1`'s simulated blocks have no [`BlockInput`]).
    pub fn executor_with_ctx<'c, DB, I>(
        &self,
        evm: BlockEvm<DB, I>,
        ctx: EthBlockExecutionCtx<'c>,
    ) -> BlockExec<'c, DB, I>
    where
        'a: 'c,
        DB: alloy_evm::block::StateDB,
        I: Inspector<EthEvmContext<DB>>,
    {
        EthBlockExecutor::new(evm, ctx, &self.chain.eth, MemoReceiptBuilder::default())
    }
}

/// alloy-evm's execution context of `block` (parent hash, beacon root, withdrawals).
/// Ommer headers are not in the mainnet data set, so ommers are empty (see docs/architecture.md).
pub fn block_ctx(block: &BlockInput) -> EthBlockExecutionCtx<'_> {
    EthBlockExecutionCtx {
        parent_hash: block.header.parent_hash,
        parent_beacon_block_root: block.header.parent_beacon_block_root,
        ommers: &block.ommers,
        withdrawals: block.withdrawals.as_ref().map(|w| Cow::Borrowed(w.as_slice())),
        extra_data: block.header.extra_data.clone(),
        tx_count_hint: Some(block.transactions.len()),
        slot_number: block.header.slot_number,
    }
}
