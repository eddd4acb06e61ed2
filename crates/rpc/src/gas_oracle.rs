//! geth's gas price oracle (`eth/gasprice`): `eth_maxPriorityFeePerGas` suggests the tip that
//! recent blocks' cheapest transactions paid, `eth_gasPrice` that tip plus the head's base fee.
//!
//! The suggestion, as geth computes it: from the head down (block 0 excepted), the
//! [`SAMPLE_NUMBER`] lowest effective tips of each of [`GasPriceOracleConfig::blocks`] blocks,
//! tips under [`GasPriceOracleConfig::ignore_price`] and the fee recipient's own transactions
//! left out; a block with none gives the last suggestion instead, and a block that gives one
//! value makes the oracle look one block further, up to twice the blocks; the
//! [`GasPriceOracleConfig::percentile`]th of the values, at most
//! [`GasPriceOracleConfig::max_price`]. The suggestion is kept for its head: asked again at
//! the same head, the same answer; the first "last suggestion" is
//! [`GasPriceOracleConfig::default_price`] (geth's miner gas price: 0.001 gwei, 1 wei on a dev
//! chain).

use crate::{convert::StoredBlock, RpcContext, RpcError};
use alloy_consensus::Transaction as _;
use alloy_primitives::{B256, U256};
use std::sync::Mutex;

/// Transactions sampled per block (geth's `sampleNumber`).
pub const SAMPLE_NUMBER: usize = 3;

/// The oracle's settings (geth's `--gpo.*`; defaults: geth's full node's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GasPriceOracleConfig {
    /// Blocks sampled (`--gpo.blocks`, 20).
    pub blocks: u64,
    /// The percentile of the sampled tips suggested (`--gpo.percentile`, 60).
    pub percentile: u64,
    /// Largest suggestion (wei; `--gpo.maxprice`, 500 gwei).
    pub max_price: U256,
    /// Tips below it are not sampled (wei; `--gpo.ignoreprice`, 2 wei).
    pub ignore_price: U256,
    /// The suggestion before there is one (wei): geth's `--miner.gasprice`, 0.001 gwei; 1 wei
    /// on a dev chain.
    pub default_price: U256,
}

/// geth's `--miner.gasprice` default: 0.001 gwei.
pub const DEFAULT_START_PRICE: U256 = U256::from_limbs([1_000_000, 0, 0, 0]);

impl Default for GasPriceOracleConfig {
    fn default() -> Self {
        Self {
            blocks: 20,
            percentile: 60,
            max_price: U256::from_limbs([500_000_000_000, 0, 0, 0]),
            ignore_price: U256::from_limbs([2, 0, 0, 0]),
            default_price: DEFAULT_START_PRICE,
        }
    }
}

/// The oracle: its settings and its last suggestion, by head.
#[derive(Debug)]
pub struct GasPriceOracle {
    config: GasPriceOracleConfig,
    /// The head the last suggestion was made at (none yet: zero) and the suggestion (wei).
    last: Mutex<(B256, U256)>,
}

impl Default for GasPriceOracle {
    fn default() -> Self {
        Self::new(GasPriceOracleConfig::default())
    }
}

impl GasPriceOracle {
    /// An oracle with `config`, nothing suggested yet.
    pub fn new(config: GasPriceOracleConfig) -> Self {
        let config = GasPriceOracleConfig {
            blocks: config.blocks.max(1),
            percentile: config.percentile.min(100),
            ..config
        };
        Self { config, last: Mutex::new((B256::ZERO, config.default_price)) }
    }

    /// The settings.
    pub fn config(&self) -> GasPriceOracleConfig {
        self.config
    }

    /// The suggested tip (wei) at the head `head` (number, hash).
    ///
    /// # Errors
    /// [`RpcError`] when a block cannot be read.
    pub(crate) fn suggest_tip_cap(
        &self,
        ctx: &RpcContext,
        head: (u64, B256),
    ) -> Result<U256, RpcError> {
        // One suggestion at a time: a second caller at the same head takes the first's.
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.0 == head.1 {
            return Ok(last.1);
        }
        let last_price = last.1;
        let check = self.config.blocks;
        let mut number = head.0;
        let mut queued: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
        while (queued.len() as u64) < check && number > 0 {
            queued.push_back(number);
            number -= 1;
        }
        let mut results: Vec<U256> = Vec::new();
        while let Some(block) = queued.pop_front() {
            let mut values = self.block_values(ctx, block)?;
            if values.is_empty() {
                values.push(last_price);
            }
            let pending = queued.len() as u64;
            if values.len() == 1 && (results.len() as u64) + 1 + pending < check * 2 && number > 0 {
                queued.push_back(number);
                number -= 1;
            }
            results.extend(values);
        }
        let mut price = last_price;
        if !results.is_empty() {
            results.sort_unstable();
            price = results[(results.len() - 1) * self.config.percentile as usize / 100];
        }
        price = price.min(self.config.max_price);
        *last = (head.1, price);
        Ok(price)
    }

    /// The lowest [`SAMPLE_NUMBER`] effective tips of block `number` at or above the ignore
    /// price, its fee recipient's transactions left out.
    fn block_values(&self, ctx: &RpcContext, number: u64) -> Result<Vec<U256>, RpcError> {
        let Some(block) = StoredBlock::load(ctx, number)? else {
            return Err(RpcError::NotFound(format!("block {number}")));
        };
        let base_fee = block.header.base_fee_per_gas;
        let mut txs: Vec<(u128, usize)> = block
            .body
            .transactions
            .iter()
            .enumerate()
            .map(|(i, tx)| (tx.effective_tip_per_gas(base_fee.unwrap_or_default()).unwrap_or(0), i))
            .collect();
        txs.sort_by_key(|(tip, _)| *tip);
        let mut prices = Vec::new();
        for (tip, i) in txs {
            let tip = U256::from(tip);
            if tip < self.config.ignore_price {
                continue;
            }
            if block.sender(i)? != block.header.beneficiary {
                prices.push(tip);
                if prices.len() >= SAMPLE_NUMBER {
                    break;
                }
            }
        }
        Ok(prices)
    }
}

/// `eth_maxPriorityFeePerGas`: the oracle's tip at the head (wei).
pub(crate) fn max_priority_fee(ctx: &RpcContext) -> Result<U256, RpcError> {
    ctx.gas_oracle.suggest_tip_cap(ctx, ctx.forkchoice().head)
}

/// `eth_gasPrice`: the oracle's tip plus the head's base fee (wei).
pub(crate) fn gas_price(ctx: &RpcContext) -> Result<U256, RpcError> {
    let head = ctx.forkchoice().head;
    let tip = ctx.gas_oracle.suggest_tip_cap(ctx, head)?;
    let block = StoredBlock::load(ctx, head.0)?
        .ok_or_else(|| RpcError::NotFound(format!("block {}", head.0)))?;
    Ok(tip + U256::from(block.header.base_fee_per_gas.unwrap_or_default()))
}
