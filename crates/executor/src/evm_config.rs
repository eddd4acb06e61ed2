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
    eth::{EthBlockExecutionCtx, EthBlockExecutor},
    precompiles::PrecompilesMap,
    EthEvm, EthEvmFactory, EvmEnv, EvmFactory,
};
use gigagas_primitives::{BlockInput, ChainSpec, ForkSchedule};
use revm::{inspector::NoOpInspector, Inspector};
use std::borrow::Cow;

/// The EVM every executor uses: alloy-evm's Ethereum EVM (revm mainnet handler) with
/// inspector `I` (none by default).
pub type BlockEvm<DB, I = NoOpInspector> = EthEvm<DB, I, PrecompilesMap>;

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
        EthEvmFactory::default().create_evm(db, env)
    }

    /// [`EvmConfig::evm`] with `inspector` attached (tracers, `eth_simulateV1` transfer logs).
    pub fn evm_with_inspector<DB, I>(&self, db: DB, env: EvmEnv, inspector: I) -> BlockEvm<DB, I>
    where
        DB: alloy_evm::Database,
        I: Inspector<alloy_evm::eth::EthEvmContext<DB>>,
    {
        EthEvmFactory::default().create_evm_with_inspector(db, env, inspector)
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
        I: Inspector<alloy_evm::eth::EthEvmContext<DB>>,
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
        I: Inspector<alloy_evm::eth::EthEvmContext<DB>>,
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
        I: Inspector<alloy_evm::eth::EthEvmContext<DB>>,
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
