//! The payload builder: a block on top of a known block from candidate transactions, with its
//! EIP-7928 BAL built while building (`engine_forkchoiceUpdated` with payload attributes,
//! then `engine_getPayload`).
//!
//! Flow: the engine hands [`build_payload`] the parent's state ([`PayloadParent`]: header,
//! state source, trie nodes); the draft header follows the parent (gas limit, EIP-1559 base
//! fee, EIP-4844 excess blob gas); the executor's block builder runs the candidates in order
//! (the sequential reference with revm's BAL builder); the state-root stage of
//! `gigagas-validation` seals the header.
use alloy_consensus::{
    proofs::{calculate_receipt_root, calculate_transaction_root, calculate_withdrawals_root},
    Block, BlockBody, Header, Transaction, TxEnvelope, EMPTY_OMMER_ROOT_HASH,
};
use alloy_eips::{
    eip1559::BaseFeeParams,
    eip4895::{Withdrawal, Withdrawals},
    eip7685::Requests,
};
use alloy_primitives::{Address, Bytes, B256, B64, U256};
use gigagas_bal::{compute_block_access_list_hash, BlockAccessList};
use gigagas_executor::builder::build_block;
use gigagas_primitives::{BlockInput, ChainSpec};
use gigagas_state::{PreState, StateSource};
use gigagas_trie::{NodeSource, StateTrie};
use gigagas_validation::{account_updates, source_fault, ImportError, PreStatePriors};
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

/// What the consensus client asks a payload to be built with (execution-apis
/// `PayloadAttributesV1`–`V4`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadAttributes {
    /// Block timestamp (seconds).
    pub timestamp: u64,
    /// `prevRandao` (the header's `mixHash`).
    pub prev_randao: B256,
    /// Beneficiary of the fees.
    pub suggested_fee_recipient: Address,
    /// EIP-4895 withdrawals (Shanghai and later).
    pub withdrawals: Option<Vec<Withdrawal>>,
    /// EIP-4788 parent beacon block root (Cancun and later).
    pub parent_beacon_block_root: Option<B256>,
    /// EIP-7843 slot number (Amsterdam payloads).
    pub slot_number: Option<u64>,
    /// The gas limit to move toward (by at most parent / 1024 − 1 per block, as geth's
    /// `CalcGasLimit`); `None` keeps the parent's.
    pub target_gas_limit: Option<u64>,
    /// The header's `extraData`; `None`: [`EXTRA_DATA`].
    pub extra_data: Option<Bytes>,
}

/// geth's `CalcGasLimit`: the parent's gas limit moved toward `target` by at most
/// `parent / 1024 − 1` (EIP-1559's bound is strictly below `parent / 1024`).
pub fn next_gas_limit(parent: u64, target: u64) -> u64 {
    let delta = (parent / 1024).saturating_sub(1);
    if parent < target {
        (parent + delta).min(target)
    } else {
        parent.saturating_sub(delta).max(target)
    }
}

/// A built block with what `engine_getPayload` returns besides it.
#[derive(Debug, Clone)]
pub struct BuiltPayload {
    /// The sealed block (all roots filled).
    pub block: Block<TxEnvelope>,
    /// Its hash.
    pub hash: B256,
    /// Its EIP-7928 BAL, built while building (Amsterdam payloads carry its RLP).
    pub bal: BlockAccessList,
    /// EIP-7685 requests (Prague and later).
    pub requests: Requests,
    /// Fees the fee recipient receives (wei): Σ gas used × effective priority fee.
    pub block_value: U256,
    /// Candidates left out, with the reason.
    pub skipped: Vec<(B256, String)>,
    /// Time to build (execution and state root).
    pub build_time: Duration,
    /// The sidecars of the block's blob transactions, in block order (the `blobsBundle` of
    /// `engine_getPayloadV3+`); filled by whoever holds them (the engine, from the pool).
    pub sidecars: Vec<std::sync::Arc<alloy_eips::eip7594::BlobTransactionSidecarVariant>>,
    /// What executing the block while building it gave (receipts, state changes, BAL): the
    /// engine keeps the block as executed from it, so that its `newPayload` runs nothing again.
    pub outcome: std::sync::Arc<gigagas_executor::BlockOutcome>,
    /// The state-root update that gave the header's `stateRoot` (with the new trie nodes): the
    /// engine commits them when it keeps the block, without computing the root again.
    pub state_root: std::sync::Arc<gigagas_trie::StateRootUpdate>,
    /// The senders of the block's transactions, in order (the pool's, as the builder took
    /// them): stored with the block when the engine keeps it.
    pub senders: Vec<Address>,
}

/// The `extraData` of blocks built here.
pub const EXTRA_DATA: &[u8] = b"gigagas";

/// The block a payload is built on: what the engine tree knows of it.
pub struct PayloadParent<'a> {
    /// The parent's hash.
    pub hash: B256,
    /// The parent's header.
    pub header: &'a Header,
    /// The state after the parent (the store, with executed blocks not yet committed on top).
    pub source: Arc<dyn StateSource>,
    /// The trie nodes the parent's state root resolves from.
    pub nodes: &'a (dyn NodeSource + Sync),
}

impl std::fmt::Debug for PayloadParent<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PayloadParent").field("hash", &self.hash).finish_non_exhaustive()
    }
}

/// Builds a block on `parent` with `attrs` from `candidates` (taken in the order given;
/// those that do not fit or that the EVM rejects are left out, or with `require_all` make the
/// build fail). The gas limit is the parent's, or moves toward
/// [`PayloadAttributes::target_gas_limit`]; the base fee and excess blob gas follow the parent
/// (EIP-1559, EIP-4844); blob transactions are taken while their blobs fit the fork's blob
/// gas per block (the blob schedule's maximum; a blob transaction that does not fit is left
/// out), and the header's blob gas used is theirs.
///
/// # Errors
/// [`ImportError`] when a system call fails or the store does (a failed read of the state is
/// reported as such, whatever the builder decided about the candidates);
/// [`ImportError::Invalid`] naming the first candidate left out when `require_all`.
pub fn build_payload(
    chain: &ChainSpec,
    parent: &PayloadParent<'_>,
    attrs: &PayloadAttributes,
    candidates: &[(TxEnvelope, Address)],
    require_all: bool,
) -> Result<BuiltPayload, ImportError> {
    let start = Instant::now();
    let p = parent.header;
    let t = attrs.timestamp;
    let number = p.number + 1;
    let cancun = chain.is_cancun(t);
    let blob_params = chain.blob_params(t);
    let withdrawals = chain.is_shanghai(t).then(|| attrs.withdrawals.clone().unwrap_or_default());
    let mut header = Header {
        parent_hash: parent.hash,
        ommers_hash: EMPTY_OMMER_ROOT_HASH,
        beneficiary: attrs.suggested_fee_recipient,
        number,
        gas_limit: attrs.target_gas_limit.map_or(p.gas_limit, |t| next_gas_limit(p.gas_limit, t)),
        timestamp: t,
        mix_hash: attrs.prev_randao,
        nonce: B64::ZERO,
        base_fee_per_gas: p.next_block_base_fee(BaseFeeParams::ethereum()),
        withdrawals_root: withdrawals.as_ref().map(|w| calculate_withdrawals_root(w)),
        blob_gas_used: cancun.then_some(0),
        excess_blob_gas: match (cancun, blob_params) {
            (true, Some(params)) => Some(p.next_block_excess_blob_gas(params).unwrap_or(0)),
            _ => None,
        },
        parent_beacon_block_root: if cancun {
            Some(attrs.parent_beacon_block_root.unwrap_or_default())
        } else {
            None
        },
        extra_data: attrs.extra_data.clone().unwrap_or(Bytes::from_static(EXTRA_DATA)),
        // EIP-7843: the slot is in the block's environment while it is built (`SLOTNUM`).
        slot_number: chain.is_amsterdam(t).then(|| attrs.slot_number.unwrap_or_default()),
        ..Default::default()
    };
    // Blob transactions while their blobs fit (EIP-4844; the block executor does not check the
    // block's blob gas, the header check of an imported block does).
    let max_blob_gas = blob_params.filter(|_| cancun).map_or(0, |p| p.max_blob_gas_per_block());
    let mut blob_gas = 0u64;
    let mut over = Vec::new();
    let mut fits = |tx: &TxEnvelope| match tx.blob_gas_used() {
        Some(gas) if blob_gas + gas > max_blob_gas => {
            over.push(*tx.tx_hash());
            false
        }
        Some(gas) => {
            blob_gas += gas;
            true
        }
        None => true,
    };
    let candidates: Vec<(&TxEnvelope, Address)> =
        candidates.iter().filter(|(tx, _)| fits(tx)).map(|(tx, sender)| (tx, *sender)).collect();
    if let (true, Some(hash)) = (require_all, over.first()) {
        return Err(ImportError::Invalid {
            number,
            reason: format!("transaction {hash}: its blobs exceed the block's blob gas"),
        });
    }
    let draft = BlockInput {
        hash: B256::ZERO,
        header: header.clone(),
        transactions: Vec::new(),
        claimed_senders: Vec::new(),
        withdrawals: withdrawals.clone().map(Withdrawals::new),
        ommers: Vec::new(),
    };
    let pre_state = PreState::backed(parent.source.clone());
    let built = build_block(chain, &draft, candidates, &pre_state);
    // After a failed read, whatever the builder decided (a transaction skipped, an error) says
    // nothing about the transactions: report the fault instead.
    if let Some(fault) = source_fault(&pre_state, number) {
        return Err(fault);
    }
    let built = built?;
    if let (true, Some((hash, reason))) = (require_all, built.skipped.first()) {
        return Err(ImportError::Invalid {
            number,
            reason: format!("transaction {hash}: {reason}"),
        });
    }
    let outcome = &built.outcome;
    let bal = outcome.bal.clone().unwrap_or_default();
    // The changed keys' leaves recognised from the values the builder read, not read again.
    let root = StateTrie::new(p.state_root)
        .update_with(&account_updates(outcome), &PreStatePriors(&pre_state), &parent.nodes)
        .map_err(|source| ImportError::Trie { number, source })?;
    header.state_root = root.root;
    header.gas_used = outcome.gas_used;
    header.receipts_root = calculate_receipt_root(&outcome.receipts);
    header.logs_bloom = outcome.logs_bloom();
    header.transactions_root = calculate_transaction_root(&built.transactions);
    if cancun {
        header.blob_gas_used =
            Some(built.transactions.iter().filter_map(|tx| tx.blob_gas_used()).sum());
    }
    if chain.is_prague(t) {
        header.requests_hash = Some(outcome.requests.requests_hash());
    }
    if chain.is_amsterdam(t) {
        header.block_access_list_hash = Some(compute_block_access_list_hash(&bal));
    }
    let base_fee = header.base_fee_per_gas.unwrap_or_default();
    let block_value = built
        .transactions
        .iter()
        .zip(&outcome.tx_gas_used)
        .map(|(tx, gas)| {
            U256::from(tx.effective_tip_per_gas(base_fee).unwrap_or_default()) * U256::from(*gas)
        })
        .sum();
    let hash = header.hash_slow();
    let senders = built.senders;
    let block = Block {
        header,
        body: BlockBody {
            transactions: built.transactions,
            ommers: Vec::new(),
            withdrawals: withdrawals.map(Withdrawals::new),
        },
    };
    let requests = outcome.requests.clone();
    Ok(BuiltPayload {
        block,
        hash,
        bal,
        requests,
        block_value,
        skipped: built
            .skipped
            .into_iter()
            .chain(
                over.into_iter().map(|h| (h, "its blobs exceed the block's blob gas".to_string())),
            )
            .collect(),
        build_time: start.elapsed(),
        sidecars: Vec::new(),
        outcome: std::sync::Arc::new(built.outcome),
        state_root: std::sync::Arc::new(root),
        senders,
    })
}
