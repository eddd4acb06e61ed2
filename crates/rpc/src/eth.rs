//! The `eth_` namespace over the stored chain: [`EthApi`], a typed trait
//! (`#[rpc(server, client)]`, reth's `EthApi`) with alloy's parameter and answer types, served
//! by [`EthRpc`].
//!
//! Flow: a request's block parameter is resolved against the last forkchoice update
//! (`blocks`), the block is loaded from the store ([`StoredBlock`]) and answered in alloy's
//! RPC shapes (`convert`); state reads go through the trie under that block's state root
//! (`state`); calls, estimates and access lists run revm on it (`call`); `eth_simulateV1`
//! (`simulate`) runs on jsonrpsee's blocking pool. Errors: -32602 for a malformed parameter,
//! -32000 (geth's) for an unknown block, a failed call or a store fault.

use crate::{
    blocks::{block_of, header_or_latest, located_transaction, resolve},
    call,
    convert::StoredBlock,
    params::{HashParam, StorageKeyParam},
    state::StateAt,
    RpcContext, RpcError,
};
use alloy_eips::{BlockId, BlockNumberOrTag};
use alloy_primitives::{Address, Bytes, B256, U256, U64};
use alloy_rpc_types_eth::{
    simulate::SimulatePayload, state::StateOverride, AccessListResult, Block as RpcBlock,
    BlockOverrides, EIP1186AccountProofResponse, FeeHistory, Filter, FilterBlockOption,
    Header as RpcHeader, Transaction as RpcTransaction, TransactionReceipt, TransactionRequest,
};
use gigagas_storage_api::{BlockNumReader, HeaderProvider};
use jsonrpsee::{core::RpcResult, proc_macros::rpc};
use revm::context::result::ExecutionResult;
use serde::{Deserialize, Serialize};
use serde_json::{value::RawValue, Value};
use std::{collections::BTreeMap, sync::Arc};

/// The `eth_` namespace (execution-apis `src/eth/`, and geth's `eth_config`,
/// `eth_getStorageValues`, `eth_simulateV1`). A block parameter left out means `latest`.
#[rpc(server, client, namespace = "eth")]
pub trait EthApi {
    /// The chain id (EIP-155).
    #[method(name = "chainId")]
    fn chain_id(&self) -> RpcResult<U64>;

    /// Always `false`: the node answers from the chain it has.
    #[method(name = "syncing")]
    fn syncing(&self) -> RpcResult<crate::syncing::Syncing>;

    /// The fork configuration at the head, the next fork and the last scheduled one (EIP-7910).
    #[method(name = "config")]
    fn config(&self) -> RpcResult<Value>;

    /// What this node can answer: an archive, every block, transaction, receipt, log and state
    /// since genesis.
    #[method(name = "capabilities")]
    fn capabilities(&self) -> RpcResult<Capabilities>;

    /// The head's number.
    #[method(name = "blockNumber")]
    fn block_number(&self) -> RpcResult<U64>;

    /// The balance of `address` after `block` (wei).
    #[method(name = "getBalance")]
    fn balance(&self, address: Address, block: Option<BlockId>) -> RpcResult<U256>;

    /// The nonce of `address` after `block`; with `pending`, after the sender's transactions
    /// the pool can run in a row (geth's).
    #[method(name = "getTransactionCount")]
    fn transaction_count(&self, address: Address, block: Option<BlockId>) -> RpcResult<U64>;

    /// The code of `address` after `block` (empty for none).
    #[method(name = "getCode")]
    fn code(&self, address: Address, block: Option<BlockId>) -> RpcResult<Bytes>;

    /// The value of `slot` of `address` after `block`.
    #[method(name = "getStorageAt")]
    fn storage_at(
        &self,
        address: Address,
        slot: StorageKeyParam,
        block: Option<BlockId>,
    ) -> RpcResult<B256>;

    /// The values of many slots of many accounts after `block` (geth's); an empty request is
    /// -32602.
    #[method(name = "getStorageValues")]
    fn storage_values(
        &self,
        request: BTreeMap<Address, Vec<StorageKeyParam>>,
        block: Option<BlockId>,
    ) -> RpcResult<BTreeMap<Address, Vec<B256>>>;

    /// The EIP-1186 proof of `address` and its `slots` after `block`.
    #[method(name = "getProof")]
    fn proof(
        &self,
        address: Address,
        slots: Vec<StorageKeyParam>,
        block: Option<BlockId>,
    ) -> RpcResult<EIP1186AccountProofResponse>;

    /// The logs matching `filter`: a block hash, or a range within the head (-32602 past it or
    /// reversed).
    /// The answer is the JSON array of the logs in alloy's `Log` shape, written directly.
    #[method(name = "getLogs", blocking)]
    fn logs(&self, filter: Filter) -> RpcResult<Box<RawValue>>;

    /// The output of `request` run on the state after `block`; a revert is error 3 with its
    /// data, as geth answers it.
    #[method(name = "call", blocking)]
    fn call(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<Box<BlockOverrides>>,
    ) -> RpcResult<Bytes>;

    /// geth's `eth_simulateV1`: up to 256 blocks of calls on the state after `block`, on the
    /// blocking pool.
    #[method(name = "simulateV1", blocking)]
    fn simulate_v1(&self, payload: SimulatePayload, block: Option<BlockId>) -> RpcResult<Value>;

    /// The least gas `request` needs on the state after `block` (binary search, as geth).
    #[method(name = "estimateGas", blocking)]
    fn estimate_gas(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<Box<BlockOverrides>>,
    ) -> RpcResult<U64>;

    /// The accounts and slots `request` touches after `block`, and its gas with that list.
    #[method(name = "createAccessList", blocking)]
    fn create_access_list(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
    ) -> RpcResult<AccessListResult>;

    /// Base fees, gas used ratios and rewards of up to 1,024 blocks up to `newest`.
    #[method(name = "feeHistory")]
    fn fee_history(
        &self,
        block_count: U64,
        newest_block: BlockNumberOrTag,
        reward_percentiles: Option<Vec<f64>>,
    ) -> RpcResult<FeeHistory>;

    /// geth's suggested gas price (wei): the oracle's tip plus the head's base fee.
    #[method(name = "gasPrice", blocking)]
    fn gas_price(&self) -> RpcResult<U256>;

    /// geth's suggested priority fee (wei): the tip recent blocks' cheapest transactions paid
    /// ([`crate::gas_oracle`]).
    #[method(name = "maxPriorityFeePerGas", blocking)]
    fn max_priority_fee_per_gas(&self) -> RpcResult<U256>;

    /// The highest eth wire protocol version the node speaks (reth's answer; geth no longer
    /// serves it).
    #[method(name = "protocolVersion")]
    fn protocol_version(&self) -> RpcResult<U64>;

    /// The base fee of the block after the head (wei).
    #[method(name = "baseFee")]
    fn base_fee(&self) -> RpcResult<Option<U64>>;

    /// The blob base fee of the block after the head (wei).
    #[method(name = "blobBaseFee")]
    fn blob_base_fee(&self) -> RpcResult<Option<U256>>;

    /// Block `number`, with its transactions when `full` (else their hashes); `null` if unknown.
    #[method(name = "getBlockByNumber")]
    fn block_by_number(&self, number: BlockNumberOrTag, full: bool) -> RpcResult<Option<RpcBlock>>;

    /// The block of hash `hash`, as [`EthApiServer::block_by_number`].
    #[method(name = "getBlockByHash")]
    fn block_by_hash(&self, hash: HashParam, full: bool) -> RpcResult<Option<RpcBlock>>;

    /// The number of transactions of block `number`.
    #[method(name = "getBlockTransactionCountByNumber")]
    fn block_transaction_count_by_number(&self, number: BlockNumberOrTag)
        -> RpcResult<Option<U64>>;

    /// The number of transactions of the block of hash `hash`.
    #[method(name = "getBlockTransactionCountByHash")]
    fn block_transaction_count_by_hash(&self, hash: HashParam) -> RpcResult<Option<U64>>;

    /// The accounts the node holds keys for: none (gigagas keeps no keystore), as geth
    /// without one answers.
    #[method(name = "accounts")]
    fn accounts(&self) -> RpcResult<Vec<Address>>;

    /// The header of block `number` (geth's: the block's header fields and hash, no size);
    /// `null` if unknown.
    #[method(name = "getHeaderByNumber")]
    fn header_by_number(&self, number: BlockNumberOrTag) -> RpcResult<Option<RpcHeader>>;

    /// The header of the block of hash `hash`, as [`EthApiServer::header_by_number`].
    #[method(name = "getHeaderByHash")]
    fn header_by_hash(&self, hash: HashParam) -> RpcResult<Option<RpcHeader>>;

    /// The number of ommers (uncles) of block `number`: 0 from the merge on; `null` if
    /// unknown.
    #[method(name = "getUncleCountByBlockNumber")]
    fn uncle_count_by_block_number(&self, number: BlockNumberOrTag) -> RpcResult<Option<U64>>;

    /// The number of ommers of the block of hash `hash`.
    #[method(name = "getUncleCountByBlockHash")]
    fn uncle_count_by_block_hash(&self, hash: HashParam) -> RpcResult<Option<U64>>;

    /// Ommer `index` of block `number` as geth gives it: a block of that header without
    /// transactions; `null` if the block is unknown or has no such ommer (every block from the
    /// merge on).
    #[method(name = "getUncleByBlockNumberAndIndex")]
    fn uncle_by_block_number_and_index(
        &self,
        number: BlockNumberOrTag,
        index: U64,
    ) -> RpcResult<Option<RpcBlock>>;

    /// Ommer `index` of the block of hash `hash`, as
    /// [`EthApiServer::uncle_by_block_number_and_index`].
    #[method(name = "getUncleByBlockHashAndIndex")]
    fn uncle_by_block_hash_and_index(
        &self,
        hash: HashParam,
        index: U64,
    ) -> RpcResult<Option<RpcBlock>>;

    /// A transaction of the chain, else of the pool (without block fields); `null` if neither.
    #[method(name = "getTransactionByHash")]
    fn transaction_by_hash(&self, hash: HashParam) -> RpcResult<Option<RpcTransaction>>;

    /// Transaction `index` of the block of hash `hash`.
    #[method(name = "getTransactionByBlockHashAndIndex")]
    fn transaction_by_block_hash_and_index(
        &self,
        hash: HashParam,
        index: U64,
    ) -> RpcResult<Option<RpcTransaction>>;

    /// Transaction `index` of block `number`.
    #[method(name = "getTransactionByBlockNumberAndIndex")]
    fn transaction_by_block_number_and_index(
        &self,
        number: BlockNumberOrTag,
        index: U64,
    ) -> RpcResult<Option<RpcTransaction>>;

    /// The receipt of a transaction of the chain.
    #[method(name = "getTransactionReceipt")]
    fn transaction_receipt(&self, hash: HashParam) -> RpcResult<Option<TransactionReceipt>>;

    /// Every receipt of `block`.
    #[method(name = "getBlockReceipts", blocking)]
    fn block_receipts(&self, block: BlockId) -> RpcResult<Option<Vec<TransactionReceipt>>>;

    /// Adds a signed transaction (EIP-2718 bytes; blob transactions with the sidecar of the
    /// head's fork) to the pool; answers its hash, -32000 with the pool's reason otherwise.
    #[method(name = "sendRawTransaction")]
    fn send_raw_transaction(&self, bytes: Bytes) -> RpcResult<B256>;
}

/// The `net_` namespace.
#[rpc(server, client, namespace = "net")]
pub trait NetApi {
    /// The chain id in decimal.
    #[method(name = "version")]
    fn version(&self) -> RpcResult<String>;

    /// The network's connected peers (0 when the node runs without one).
    #[method(name = "peerCount")]
    fn peer_count(&self) -> RpcResult<U64>;

    /// Whether the node runs a network.
    #[method(name = "listening")]
    fn listening(&self) -> RpcResult<bool>;
}

/// The `eth_capabilities` answer (execution-apis): the head, and for each kind of data whether
/// it is served and from which block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// The head the answer was given at.
    pub head: CapabilitiesHead,
    /// Account and storage state.
    pub state: Capability,
    /// Transactions by hash.
    pub tx: Capability,
    /// Logs.
    pub logs: Capability,
    /// Receipts.
    pub receipts: Capability,
    /// Blocks.
    pub blocks: Capability,
    /// `eth_getProof`.
    pub stateproofs: Capability,
}

/// The head of a [`Capabilities`] answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapabilitiesHead {
    /// Its number.
    pub number: U64,
    /// Its hash.
    pub hash: B256,
}

/// Whether one kind of data is served, and from which block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capability {
    /// Not served at all.
    pub disabled: bool,
    /// The oldest block it is served for.
    pub oldest_block: U64,
}

/// Serves [`EthApi`] and [`NetApi`] over the node's context.
#[derive(Debug, Clone)]
pub struct EthRpc {
    ctx: Arc<RpcContext>,
}

impl EthRpc {
    /// The `eth_` and `net_` namespaces over `ctx`.
    pub fn new(ctx: Arc<RpcContext>) -> Self {
        Self { ctx }
    }
}

impl EthApiServer for EthRpc {
    fn chain_id(&self) -> RpcResult<U64> {
        Ok(U64::from(self.ctx.chain.chain_id))
    }

    fn syncing(&self) -> RpcResult<crate::syncing::Syncing> {
        Ok(syncing_status(&self.ctx))
    }

    fn config(&self) -> RpcResult<Value> {
        Ok(crate::config::eth_config(&self.ctx)?)
    }

    fn capabilities(&self) -> RpcResult<Capabilities> {
        let (number, hash) = self.ctx.forkchoice().head;
        let all = Capability { disabled: false, oldest_block: U64::ZERO };
        Ok(Capabilities {
            head: CapabilitiesHead { number: U64::from(number), hash },
            state: all.clone(),
            tx: all.clone(),
            logs: all.clone(),
            receipts: all.clone(),
            blocks: all.clone(),
            stateproofs: all,
        })
    }

    fn block_number(&self) -> RpcResult<U64> {
        Ok(U64::from(self.ctx.forkchoice().head.0))
    }

    fn balance(&self, address: Address, block: Option<BlockId>) -> RpcResult<U256> {
        let state = state_of(&self.ctx, block)?;
        Ok(state.account(&address)?.map_or(U256::ZERO, |a| a.balance))
    }

    fn transaction_count(&self, address: Address, block: Option<BlockId>) -> RpcResult<U64> {
        let state = state_of(&self.ctx, block)?;
        let nonce = state.account(&address)?.map_or(0, |a| a.nonce);
        let pending = matches!(block, Some(BlockId::Number(BlockNumberOrTag::Pending)));
        Ok(U64::from(if pending { self.ctx.pool.pending_nonce(&address, nonce) } else { nonce }))
    }

    fn code(&self, address: Address, block: Option<BlockId>) -> RpcResult<Bytes> {
        Ok(state_of(&self.ctx, block)?.code(&address)?)
    }

    fn storage_at(
        &self,
        address: Address,
        slot: StorageKeyParam,
        block: Option<BlockId>,
    ) -> RpcResult<B256> {
        Ok(B256::from(state_of(&self.ctx, block)?.storage_at(&address, &slot.slot)?))
    }

    fn storage_values(
        &self,
        request: BTreeMap<Address, Vec<StorageKeyParam>>,
        block: Option<BlockId>,
    ) -> RpcResult<BTreeMap<Address, Vec<B256>>> {
        if request.is_empty() {
            return Err(RpcError::InvalidParams("empty request".into()).into());
        }
        let state = state_of(&self.ctx, block)?;
        let mut out = BTreeMap::new();
        for (address, slots) in request {
            let values = slots
                .iter()
                .map(|key| state.storage_at(&address, &key.slot).map(B256::from))
                .collect::<Result<Vec<_>, _>>()?;
            out.insert(address, values);
        }
        Ok(out)
    }

    fn proof(
        &self,
        address: Address,
        slots: Vec<StorageKeyParam>,
        block: Option<BlockId>,
    ) -> RpcResult<EIP1186AccountProofResponse> {
        let slots: Vec<(B256, bool)> = slots.into_iter().map(|k| (k.slot, k.short)).collect();
        Ok(state_of(&self.ctx, block)?.proof(&address, &slots)?)
    }

    fn logs(&self, filter: Filter) -> RpcResult<Box<RawValue>> {
        Ok(logs(&self.ctx, &filter)?)
    }

    fn call(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<Box<BlockOverrides>>,
    ) -> RpcResult<Bytes> {
        let block = header_or_latest(&self.ctx, block)?;
        let overrides = crate::overrides::CallOverrides {
            state: state_overrides.as_ref(),
            block: block_overrides.as_deref(),
        };
        match call::call(&self.ctx, &block, &request, None, overrides)? {
            ExecutionResult::Success { output, .. } => Ok(output.into_data()),
            ExecutionResult::Revert { output, .. } => Err(call::reverted(&output)),
            ExecutionResult::Halt { reason, .. } => {
                Err(RpcError::Execution(format!("execution halted: {reason:?}")).into())
            }
        }
    }

    fn simulate_v1(&self, payload: SimulatePayload, block: Option<BlockId>) -> RpcResult<Value> {
        let id = block.unwrap_or(BlockId::Number(BlockNumberOrTag::Latest));
        let base = block_of(&self.ctx, id)?.ok_or_else(|| RpcError::NotFound("header".into()))?;
        crate::simulate::simulate(&self.ctx, payload, &base)
    }

    fn estimate_gas(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
        state_overrides: Option<StateOverride>,
        block_overrides: Option<Box<BlockOverrides>>,
    ) -> RpcResult<U64> {
        let block = header_or_latest(&self.ctx, block)?;
        let overrides = crate::overrides::CallOverrides {
            state: state_overrides.as_ref(),
            block: block_overrides.as_deref(),
        };
        Ok(U64::from(call::estimate(&self.ctx, &block, &request, overrides)?))
    }

    fn create_access_list(
        &self,
        request: TransactionRequest,
        block: Option<BlockId>,
    ) -> RpcResult<AccessListResult> {
        let block = header_or_latest(&self.ctx, block)?;
        Ok(call::access_list(&self.ctx, &block, &request)?)
    }

    fn fee_history(
        &self,
        block_count: U64,
        newest_block: BlockNumberOrTag,
        reward_percentiles: Option<Vec<f64>>,
    ) -> RpcResult<FeeHistory> {
        Ok(crate::fee_history::fee_history(
            &self.ctx,
            block_count.to::<u64>(),
            newest_block,
            reward_percentiles.as_deref(),
        )?)
    }

    fn gas_price(&self) -> RpcResult<U256> {
        Ok(crate::gas_oracle::gas_price(&self.ctx)?)
    }

    fn max_priority_fee_per_gas(&self) -> RpcResult<U256> {
        Ok(crate::gas_oracle::max_priority_fee(&self.ctx)?)
    }

    fn protocol_version(&self) -> RpcResult<U64> {
        let version = self.ctx.networks.iter().filter_map(|n| n.eth_protocol_version()).max();
        match version {
            Some(v) => Ok(U64::from(v)),
            None => {
                Err(RpcError::Execution("no eth protocol: the node runs no devp2p network".into())
                    .into())
            }
        }
    }

    fn base_fee(&self) -> RpcResult<Option<U64>> {
        let head = head_block(&self.ctx)?;
        let params = alloy_eips::eip1559::BaseFeeParams::ethereum();
        Ok(head.header.next_block_base_fee(params).map(U64::from))
    }

    fn blob_base_fee(&self) -> RpcResult<Option<U256>> {
        let head = head_block(&self.ctx)?;
        let params = self.ctx.chain.blob_params(head.header.timestamp);
        Ok(params.and_then(|p| head.header.next_block_blob_fee(p)).map(U256::from))
    }

    fn block_by_number(&self, number: BlockNumberOrTag, full: bool) -> RpcResult<Option<RpcBlock>> {
        let block = block_of(&self.ctx, BlockId::Number(number))?;
        Ok(block.map(|b| b.rpc_block(full)).transpose()?)
    }

    fn block_by_hash(&self, hash: HashParam, full: bool) -> RpcResult<Option<RpcBlock>> {
        let block = block_of(&self.ctx, BlockId::from(hash.0))?;
        Ok(block.map(|b| b.rpc_block(full)).transpose()?)
    }

    fn block_transaction_count_by_number(
        &self,
        number: BlockNumberOrTag,
    ) -> RpcResult<Option<U64>> {
        let block = block_of(&self.ctx, BlockId::Number(number))?;
        Ok(block.map(|b| U64::from(b.body.transactions.len())))
    }

    fn block_transaction_count_by_hash(&self, hash: HashParam) -> RpcResult<Option<U64>> {
        let block = block_of(&self.ctx, BlockId::from(hash.0))?;
        Ok(block.map(|b| U64::from(b.body.transactions.len())))
    }

    fn accounts(&self) -> RpcResult<Vec<Address>> {
        Ok(Vec::new())
    }

    fn header_by_number(&self, number: BlockNumberOrTag) -> RpcResult<Option<RpcHeader>> {
        let block = block_of(&self.ctx, BlockId::Number(number))?;
        Ok(block.map(|b| b.rpc_header()))
    }

    fn header_by_hash(&self, hash: HashParam) -> RpcResult<Option<RpcHeader>> {
        let block = block_of(&self.ctx, BlockId::from(hash.0))?;
        Ok(block.map(|b| b.rpc_header()))
    }

    fn uncle_count_by_block_number(&self, number: BlockNumberOrTag) -> RpcResult<Option<U64>> {
        let block = block_of(&self.ctx, BlockId::Number(number))?;
        Ok(block.map(|b| U64::from(b.body.ommers.len())))
    }

    fn uncle_count_by_block_hash(&self, hash: HashParam) -> RpcResult<Option<U64>> {
        let block = block_of(&self.ctx, BlockId::from(hash.0))?;
        Ok(block.map(|b| U64::from(b.body.ommers.len())))
    }

    fn uncle_by_block_number_and_index(
        &self,
        number: BlockNumberOrTag,
        index: U64,
    ) -> RpcResult<Option<RpcBlock>> {
        let block = block_of(&self.ctx, BlockId::Number(number))?;
        Ok(block.and_then(|b| b.rpc_ommer(index.to::<usize>())))
    }

    fn uncle_by_block_hash_and_index(
        &self,
        hash: HashParam,
        index: U64,
    ) -> RpcResult<Option<RpcBlock>> {
        let block = block_of(&self.ctx, BlockId::from(hash.0))?;
        Ok(block.and_then(|b| b.rpc_ommer(index.to::<usize>())))
    }

    fn transaction_by_hash(&self, hash: HashParam) -> RpcResult<Option<RpcTransaction>> {
        match located_transaction(&self.ctx, &hash.0)? {
            Some((b, i)) => Ok(Some(b.transaction(i)?)),
            None => {
                Ok(self.ctx.pool.get(&hash.0).map(|tx| crate::txpool::pending_transaction(&tx)))
            }
        }
    }

    fn transaction_by_block_hash_and_index(
        &self,
        hash: HashParam,
        index: U64,
    ) -> RpcResult<Option<RpcTransaction>> {
        Ok(transaction_at(&self.ctx, BlockId::from(hash.0), index)?)
    }

    fn transaction_by_block_number_and_index(
        &self,
        number: BlockNumberOrTag,
        index: U64,
    ) -> RpcResult<Option<RpcTransaction>> {
        Ok(transaction_at(&self.ctx, BlockId::Number(number), index)?)
    }

    fn transaction_receipt(&self, hash: HashParam) -> RpcResult<Option<TransactionReceipt>> {
        match located_transaction(&self.ctx, &hash.0)? {
            Some((b, i)) => Ok(b.rpc_receipt(&self.ctx, i)?),
            None => Ok(None),
        }
    }

    fn block_receipts(&self, block: BlockId) -> RpcResult<Option<Vec<TransactionReceipt>>> {
        let block = block_of(&self.ctx, block)?;
        Ok(block.map(|b| b.rpc_receipts(&self.ctx)).transpose()?)
    }

    fn send_raw_transaction(&self, bytes: Bytes) -> RpcResult<B256> {
        crate::txpool::send_raw_transaction(&self.ctx, &bytes)
    }
}

impl NetApiServer for EthRpc {
    fn version(&self) -> RpcResult<String> {
        Ok(self.ctx.chain.chain_id.to_string())
    }

    fn peer_count(&self) -> RpcResult<U64> {
        Ok(U64::from(self.ctx.networks.iter().map(|n| n.peer_count()).sum::<usize>()))
    }

    fn listening(&self) -> RpcResult<bool> {
        Ok(!self.ctx.networks.is_empty())
    }
}

/// `eth_syncing`'s answer: the running sync's progress, `false` when none runs.
pub(crate) fn syncing_status(ctx: &RpcContext) -> crate::syncing::Syncing {
    let progress = ctx.sync_status.as_ref().and_then(|status| status.progress());
    progress.map_or(crate::syncing::Syncing::No, |p| crate::syncing::Syncing::Yes(Box::new(p)))
}

/// The state after block `id` (latest when absent); [`RpcError::NotFound`] when the block is
/// unknown.
fn state_of(ctx: &RpcContext, id: Option<BlockId>) -> Result<StateAt, RpcError> {
    let block = header_or_latest(ctx, id)?;
    StateAt::new(ctx, block.number, block.header.state_root)
}

/// The canonical head block.
fn head_block(ctx: &RpcContext) -> Result<std::sync::Arc<StoredBlock>, RpcError> {
    let head = ctx.forkchoice().head.0;
    StoredBlock::load(ctx, head)?.ok_or_else(|| RpcError::NotFound(format!("block {head}")))
}

/// Transaction `index` of block `id`, `None` when the block or the index is unknown.
fn transaction_at(
    ctx: &RpcContext,
    id: BlockId,
    index: U64,
) -> Result<Option<RpcTransaction>, RpcError> {
    let Some(b) = block_of(ctx, id)? else { return Ok(None) };
    let i = index.to::<u64>() as usize;
    if i >= b.body.transactions.len() {
        return Ok(None);
    }
    b.transaction(i).map(Some)
}

/// `eth_getLogs`: the logs of the blocks `filter` names that match its addresses and topics,
/// blocks skipped whose bloom cannot match.
pub(crate) fn logs(ctx: &RpcContext, filter: &Filter) -> Result<Box<RawValue>, RpcError> {
    let head = ctx.forkchoice().head.0;
    let (from, to) = match filter.block_option {
        FilterBlockOption::AtBlockHash(hash) => {
            let n = ctx
                .provider
                .block_number(&hash)?
                .ok_or_else(|| RpcError::NotFound(format!("block {hash}")))?;
            (n, n)
        }
        FilterBlockOption::Range { from_block, to_block } => {
            let number = |tag: Option<BlockNumberOrTag>| -> Result<u64, RpcError> {
                match tag.unwrap_or(BlockNumberOrTag::Latest) {
                    BlockNumberOrTag::Number(n) => Ok(n),
                    tag => resolve(ctx, BlockId::Number(tag))?
                        .ok_or_else(|| RpcError::NotFound(format!("block {tag}"))),
                }
            };
            let (from, to) = (number(from_block)?, number(to_block)?);
            if from > to {
                return Err(RpcError::InvalidParams("invalid block range params".into()));
            }
            if ctx.max_blocks_per_filter != 0 && to - from > ctx.max_blocks_per_filter {
                return Err(RpcError::InvalidParams(format!(
                    "query exceeds max block range {}",
                    ctx.max_blocks_per_filter
                )));
            }
            if to > head {
                return Err(RpcError::InvalidParams(
                    "block range extends beyond current head block".into(),
                ));
            }
            (from, to)
        }
    };
    let mut logs = crate::log_json::LogsJson::new();
    for n in from..=to {
        // The header's bloom first: a block whose bloom rules the filter out is not read.
        match ctx.provider.header_by_number(n)? {
            Some(h) if filter.matches_bloom(h.logs_bloom) => {}
            _ => continue,
        }
        let Some(b) = StoredBlock::load(ctx, n)? else { continue };
        b.write_logs(
            ctx,
            |log| filter.matches_address(log.address) && filter.matches_topics(log.topics()),
            &mut logs,
        )?;
        // As reth: a range's answer stops past the limit (a single block's logs are whole),
        // naming the range that fits.
        if ctx.max_logs_per_response != 0 && from != to && logs.len() > ctx.max_logs_per_response {
            return Err(RpcError::InvalidParams(format!(
                "query exceeds max results {}, retry with the range {from}-{}",
                ctx.max_logs_per_response,
                n.saturating_sub(1)
            )));
        }
    }
    Ok(logs.finish()?)
}
