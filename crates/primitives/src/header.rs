//! The header and body checks a post-merge execution client makes before executing a block
//! (what reth's `EthBeaconConsensus` checks against the parent and the body).

use crate::ChainSpec;
use alloy_consensus::{
    constants::EMPTY_OMMER_ROOT_HASH,
    proofs::{calculate_ommers_root, calculate_transaction_root, calculate_withdrawals_root},
    BlockBody, Header, Transaction as _, TxEnvelope,
};
use alloy_eips::{
    eip1559::{BaseFeeParams, INITIAL_BASE_FEE},
    eip4844::DATA_GAS_PER_BLOB,
};
use alloy_hardforks::EthereumHardforks as _;

/// Gas limit bound divisor (Yellow Paper eq. 47): the limit moves by less than 1/1024 per block.
const GAS_LIMIT_BOUND_DIVISOR: u64 = 1024;
/// The smallest gas limit a block may have.
const MIN_GAS_LIMIT: u64 = 5000;
/// The largest gas limit geth and reth accept (2^63 - 1).
const MAX_GAS_LIMIT: u64 = 0x7fff_ffff_ffff_ffff;
/// The most extra data a header may carry (bytes).
const MAX_EXTRA_DATA: usize = 32;
/// EIP-7934 (Osaka): the largest RLP-encoded block, `MAX_BLOCK_SIZE` (10 MiB) minus the 2 MiB
/// margin kept for the beacon block (bytes).
pub const MAX_RLP_BLOCK_SIZE: usize = 10_485_760 - 2_097_152;

/// A header or body rule the block breaks (messages name the header's and the expected value).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// EIP-7934: the block's RLP is longer than [`MAX_RLP_BLOCK_SIZE`].
    #[error("block RLP of {rlp_len} bytes above the EIP-7934 limit of {MAX_RLP_BLOCK_SIZE}")]
    BlockSize {
        /// The block's RLP length (bytes).
        rlp_len: usize,
    },
    /// The number is not the parent's plus one.
    #[error("number {number} is not parent's {parent} + 1")]
    Number {
        /// The header's number.
        number: u64,
        /// The parent's number.
        parent: u64,
    },
    /// The timestamp is not after the parent's.
    #[error("timestamp {timestamp} not after parent's {parent}")]
    Timestamp {
        /// The header's timestamp (seconds).
        timestamp: u64,
        /// The parent's timestamp (seconds).
        parent: u64,
    },
    /// The gas limit is above 2^63 − 1.
    #[error("gas limit {0} above 2^63-1")]
    GasLimitTooHigh(u64),
    /// The gas limit moved by 1/1024 of the parent's or more, or is below 5000.
    #[error("gas limit {gas_limit} outside parent's {parent_limit} ± {bound}")]
    GasLimitBounds {
        /// The header's gas limit (gas).
        gas_limit: u64,
        /// The parent's limit (doubled at the London block) (gas).
        parent_limit: u64,
        /// The allowed change (gas).
        bound: u64,
    },
    /// More gas used than the limit.
    #[error("gas used {gas_used} above gas limit {gas_limit}")]
    GasUsed {
        /// The header's gas used (gas).
        gas_used: u64,
        /// The header's gas limit (gas).
        gas_limit: u64,
    },
    /// More than 32 bytes of extra data.
    #[error("extra data of {0} bytes (max 32)")]
    ExtraData(usize),
    /// A non-zero difficulty after the Merge (EIP-3675).
    #[error("difficulty {0} after the merge")]
    Difficulty(alloy_primitives::U256),
    /// A non-zero nonce after the Merge (EIP-3675).
    #[error("nonce {0} after the merge")]
    Nonce(alloy_primitives::B64),
    /// Ommers after the Merge (EIP-3675).
    #[error("ommers after the merge")]
    OmmersAfterMerge,
    /// The ommers hash does not match the body's ommers.
    #[error("ommers hash {header}, body gives {body}")]
    OmmersHash {
        /// The header's.
        header: alloy_primitives::B256,
        /// The body's.
        body: alloy_primitives::B256,
    },
    /// The base fee is not what the parent implies (EIP-1559).
    #[error("base fee {header:?}, parent implies {expected:?}")]
    BaseFee {
        /// The header's (wei).
        header: Option<u64>,
        /// The parent's next base fee (wei).
        expected: Option<u64>,
    },
    /// The transactions root does not match the body.
    #[error("transactions root {header}, body gives {body}")]
    TransactionsRoot {
        /// The header's.
        header: alloy_primitives::B256,
        /// The body's.
        body: alloy_primitives::B256,
    },
    /// The withdrawals root does not match the body (EIP-4895).
    #[error("withdrawals root {header:?}, body gives {body:?}")]
    WithdrawalsRoot {
        /// The header's.
        header: Option<alloy_primitives::B256>,
        /// The body's.
        body: Option<alloy_primitives::B256>,
    },
    /// No parent beacon block root from Cancun on (EIP-4788).
    #[error("no parent beacon block root (EIP-4788)")]
    ParentBeaconRoot,
    /// Blob gas used does not match the transactions' blobs (EIP-4844).
    #[error("blob gas used {header:?}, transactions use {transactions}")]
    BlobGasUsed {
        /// The header's (gas).
        header: Option<u64>,
        /// The transactions' (gas).
        transactions: u64,
    },
    /// More blob gas than the block maximum (EIP-4844, EIP-7840 schedule).
    #[error("blob gas used {blob_gas} above the block maximum {max}")]
    BlobGasAboveMax {
        /// Blob gas used (gas).
        blob_gas: u64,
        /// The fork's maximum (gas).
        max: u64,
    },
    /// Excess blob gas is not what the parent implies (EIP-4844).
    #[error("excess blob gas {header:?}, parent implies {expected:?}")]
    ExcessBlobGas {
        /// The header's (gas).
        header: Option<u64>,
        /// The parent's next excess (gas).
        expected: Option<u64>,
    },
}

/// EIP-7934: from Osaka on, a block whose RLP encoding is longer than [`MAX_RLP_BLOCK_SIZE`]
/// bytes is invalid.
///
/// # Errors
/// [`HeaderError::BlockSize`].
pub fn check_block_size(
    chain: &ChainSpec,
    header: &Header,
    rlp_len: usize,
) -> Result<(), HeaderError> {
    if chain.eth.is_osaka_active_at_timestamp(header.timestamp) && rlp_len > MAX_RLP_BLOCK_SIZE {
        return Err(HeaderError::BlockSize { rlp_len });
    }
    Ok(())
}

/// Checks `header` and `body` against `parent` as reth does: number, timestamp, gas limit
/// bounds (doubled target at the London block), gas used, extra data, base fee (EIP-1559),
/// transactions, withdrawals (EIP-4895) and blob gas (EIP-4844) fields; after the Merge no
/// difficulty, nonce or ommers (EIP-3675), before it the ommers hash (the proof-of-work seal
/// is not verified). `transactions_root` is the root of `body`'s transactions when it was
/// computed from them already (an Engine API payload's conversion derives the header's root
/// that way, as reth's `validate_block_pre_execution_with_tx_root` takes it); `None` computes it.
///
/// # Errors
/// The first [`HeaderError`] rule broken, with the header's and the expected values.
pub fn check_header(
    chain: &ChainSpec,
    parent: &Header,
    header: &Header,
    body: &BlockBody<TxEnvelope>,
    transactions_root: Option<alloy_primitives::B256>,
) -> Result<(), HeaderError> {
    if header.number != parent.number + 1 {
        return Err(HeaderError::Number { number: header.number, parent: parent.number });
    }
    if header.timestamp <= parent.timestamp {
        return Err(HeaderError::Timestamp {
            timestamp: header.timestamp,
            parent: parent.timestamp,
        });
    }
    if header.gas_limit > MAX_GAS_LIMIT {
        return Err(HeaderError::GasLimitTooHigh(header.gas_limit));
    }
    // EIP-1559: at the London block the gas target doubles the parent's limit and the base fee
    // starts at 1 gwei.
    let london = chain.eth.is_london_active_at_block(header.number);
    let london_block = london && !chain.eth.is_london_active_at_block(parent.number);
    let parent_limit = if london_block { parent.gas_limit * 2 } else { parent.gas_limit };
    let bound = parent_limit / GAS_LIMIT_BOUND_DIVISOR;
    if header.gas_limit.abs_diff(parent_limit) >= bound || header.gas_limit < MIN_GAS_LIMIT {
        return Err(HeaderError::GasLimitBounds {
            gas_limit: header.gas_limit,
            parent_limit,
            bound,
        });
    }
    if header.gas_used > header.gas_limit {
        return Err(HeaderError::GasUsed {
            gas_used: header.gas_used,
            gas_limit: header.gas_limit,
        });
    }
    if header.extra_data.len() > MAX_EXTRA_DATA {
        return Err(HeaderError::ExtraData(header.extra_data.len()));
    }
    if chain.eth.is_paris_active_at_block(header.number) {
        // The Merge (EIP-3675): no proof of work, no ommers.
        if !header.difficulty.is_zero() {
            return Err(HeaderError::Difficulty(header.difficulty));
        }
        if !header.nonce.is_zero() {
            return Err(HeaderError::Nonce(header.nonce));
        }
        if header.ommers_hash != EMPTY_OMMER_ROOT_HASH || !body.ommers.is_empty() {
            return Err(HeaderError::OmmersAfterMerge);
        }
    } else {
        // Proof of work: the seal (ethash) is not verified; the ommers must match their hash.
        let ommers_hash = calculate_ommers_root(&body.ommers);
        if header.ommers_hash != ommers_hash {
            return Err(HeaderError::OmmersHash { header: header.ommers_hash, body: ommers_hash });
        }
    }
    let expected_base_fee = if london_block {
        Some(INITIAL_BASE_FEE)
    } else if london {
        parent.next_block_base_fee(BaseFeeParams::ethereum())
    } else {
        None
    };
    if header.base_fee_per_gas != expected_base_fee {
        return Err(HeaderError::BaseFee {
            header: header.base_fee_per_gas,
            expected: expected_base_fee,
        });
    }
    let tx_root =
        transactions_root.unwrap_or_else(|| calculate_transaction_root(&body.transactions));
    if header.transactions_root != tx_root {
        return Err(HeaderError::TransactionsRoot {
            header: header.transactions_root,
            body: tx_root,
        });
    }
    // EIP-4895 (Shanghai).
    let withdrawals_root = body.withdrawals.as_ref().map(|w| calculate_withdrawals_root(w));
    if header.withdrawals_root != withdrawals_root {
        return Err(HeaderError::WithdrawalsRoot {
            header: header.withdrawals_root,
            body: withdrawals_root,
        });
    }
    // EIP-4844 / EIP-7840 (Cancun and later).
    if let Some(params) = chain.blob_params(header.timestamp) {
        if header.parent_beacon_block_root.is_none() {
            return Err(HeaderError::ParentBeaconRoot);
        }
        let blob_gas: u64 = body
            .transactions
            .iter()
            .map(|tx| tx.blob_versioned_hashes().map_or(0, |h| h.len() as u64) * DATA_GAS_PER_BLOB)
            .sum();
        if header.blob_gas_used != Some(blob_gas) {
            return Err(HeaderError::BlobGasUsed {
                header: header.blob_gas_used,
                transactions: blob_gas,
            });
        }
        if blob_gas > params.max_blob_gas_per_block() {
            return Err(HeaderError::BlobGasAboveMax {
                blob_gas,
                max: params.max_blob_gas_per_block(),
            });
        }
        let expected_excess = parent.next_block_excess_blob_gas(params);
        if header.excess_blob_gas != expected_excess.or(Some(0)) {
            return Err(HeaderError::ExcessBlobGas {
                header: header.excess_blob_gas,
                expected: expected_excess,
            });
        }
    }
    Ok(())
}

/// The genesis header a geth-format genesis file describes, for a chain whose forks active at
/// genesis are given by `chain`: `state_root` is the root of `alloc`.
pub fn genesis_header(
    genesis: &alloy_genesis::Genesis,
    chain: &ChainSpec,
    state_root: alloy_primitives::B256,
) -> Header {
    use alloy_consensus::constants::{EMPTY_OMMER_ROOT_HASH, EMPTY_ROOT_HASH};
    use alloy_hardforks::EthereumHardforks as _;
    let (number, timestamp) = (genesis.number.unwrap_or(0), genesis.timestamp);
    let london = chain.eth.is_london_active_at_block(number);
    let shanghai = chain.eth.is_shanghai_active_at_timestamp(timestamp);
    let cancun = chain.eth.is_cancun_active_at_timestamp(timestamp);
    let prague = chain.eth.is_prague_active_at_timestamp(timestamp);
    Header {
        parent_hash: genesis.parent_hash.unwrap_or_default(),
        ommers_hash: EMPTY_OMMER_ROOT_HASH,
        beneficiary: genesis.coinbase,
        state_root,
        transactions_root: EMPTY_ROOT_HASH,
        receipts_root: EMPTY_ROOT_HASH,
        withdrawals_root: shanghai.then_some(EMPTY_ROOT_HASH),
        logs_bloom: Default::default(),
        difficulty: genesis.difficulty,
        number,
        gas_limit: genesis.gas_limit,
        gas_used: 0,
        timestamp,
        extra_data: genesis.extra_data.clone(),
        mix_hash: genesis.mix_hash,
        nonce: genesis.nonce.into(),
        base_fee_per_gas: london.then(|| {
            genesis.base_fee_per_gas.map_or(alloy_eips::eip1559::INITIAL_BASE_FEE, |f| f as u64)
        }),
        blob_gas_used: cancun.then(|| genesis.blob_gas_used.unwrap_or(0)),
        excess_blob_gas: cancun.then(|| genesis.excess_blob_gas.unwrap_or(0)),
        parent_beacon_block_root: cancun.then_some(alloy_primitives::B256::ZERO),
        requests_hash: prague.then_some(alloy_eips::eip7685::EMPTY_REQUESTS_HASH),
        // EIP-7928: the hash of an empty BAL (keccak256 of the RLP empty list).
        block_access_list_hash: chain
            .is_amsterdam(timestamp)
            .then(|| alloy_primitives::keccak256([alloy_rlp::EMPTY_LIST_CODE])),
        // EIP-7843 under geth's Amsterdam: the file's `slotNumber`, 0 when absent (geth's
        // `Genesis.ToBlock`); the bal-devnet draft's genesis has none.
        slot_number: chain
            .eth
            .is_amsterdam_active_at_timestamp(timestamp)
            .then(|| genesis.slot_number.unwrap_or(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_hardforks::EthereumHardfork;

    #[test]
    fn block_size_limit_applies_from_osaka() {
        let header = Header::default();
        let osaka = ChainSpec::from_genesis_fork(EthereumHardfork::Osaka);
        let prague = ChainSpec::from_genesis_fork(EthereumHardfork::Prague);
        assert!(check_block_size(&osaka, &header, MAX_RLP_BLOCK_SIZE).is_ok());
        let err =
            check_block_size(&osaka, &header, MAX_RLP_BLOCK_SIZE + 1).unwrap_err().to_string();
        assert!(err.contains("EIP-7934"), "{err}");
        assert!(check_block_size(&prague, &header, MAX_RLP_BLOCK_SIZE + 1).is_ok());
    }

    /// The transactions root is computed from the body unless the caller computed it from the
    /// same transactions already; either way the header's is compared with it.
    #[test]
    fn transactions_root_computed_or_taken() {
        use alloy_consensus::constants::{EMPTY_OMMER_ROOT_HASH, EMPTY_ROOT_HASH};
        use alloy_primitives::B256;
        let chain = ChainSpec::from_genesis_fork(EthereumHardfork::Prague);
        let parent = Header {
            ommers_hash: EMPTY_OMMER_ROOT_HASH,
            gas_limit: 30_000_000,
            timestamp: 1,
            base_fee_per_gas: Some(1_000_000_000),
            withdrawals_root: Some(EMPTY_ROOT_HASH),
            blob_gas_used: Some(0),
            excess_blob_gas: Some(0),
            parent_beacon_block_root: Some(B256::ZERO),
            ..Default::default()
        };
        let params = chain.blob_params(13).expect("Prague has blob parameters");
        let child = Header {
            parent_hash: parent.hash_slow(),
            number: 1,
            timestamp: 13,
            transactions_root: EMPTY_ROOT_HASH,
            base_fee_per_gas: parent.next_block_base_fee(BaseFeeParams::ethereum()),
            excess_blob_gas: parent.next_block_excess_blob_gas(params),
            ..parent.clone()
        };
        let body = BlockBody::<TxEnvelope> {
            transactions: Vec::new(),
            ommers: Vec::new(),
            withdrawals: Some(Default::default()),
        };
        check_header(&chain, &parent, &child, &body, None).unwrap();
        check_header(&chain, &parent, &child, &body, Some(EMPTY_ROOT_HASH)).unwrap();
        let other = B256::repeat_byte(7);
        let wrong = Header { transactions_root: other, ..child.clone() };
        let err = check_header(&chain, &parent, &wrong, &body, None).unwrap_err();
        assert!(
            matches!(err, HeaderError::TransactionsRoot { body, .. } if body == EMPTY_ROOT_HASH)
        );
        // A root given is the one compared: the body is not hashed again.
        check_header(&chain, &parent, &wrong, &body, Some(other)).unwrap();
        let err = check_header(&chain, &parent, &child, &body, Some(other)).unwrap_err();
        assert!(
            matches!(err, HeaderError::TransactionsRoot { header, .. } if header == EMPTY_ROOT_HASH)
        );
    }
}
