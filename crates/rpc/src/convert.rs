//! Stored blocks and receipts in the execution API's JSON shapes (alloy's RPC types).

use crate::{RpcContext, RpcError};
use alloy_consensus::{
    transaction::SignerRecoverable, Block, BlockBody, Header, ReceiptEnvelope, Transaction as _,
    TxEnvelope,
};
use alloy_eips::Encodable2718;
use alloy_primitives::{Address, Bytes, TxKind, B256, U256};
use alloy_rlp::Encodable;
use alloy_rpc_types_eth::{
    Block as RpcBlock, BlockTransactions, Header as RpcHeader, Log as RpcLog,
    Transaction as RpcTransaction, TransactionReceipt,
};
use gigagas_primitives::BlockInput;
use gigagas_storage_api::{BlockHashReader, BlockReader, HeaderProvider, ReceiptProvider};
use std::sync::Arc;

/// A canonical block, decoded (shared through the RPC's cache, [`crate::cache::RpcCache`]).
pub(crate) struct StoredBlock {
    pub(crate) number: u64,
    pub(crate) hash: B256,
    pub(crate) header: Header,
    pub(crate) body: BlockBody<TxEnvelope>,
    /// The senders stored with the block (one per transaction), when the store has them:
    /// read instead of recovering each signature.
    pub(crate) senders: Option<Vec<Address>>,
}

impl StoredBlock {
    /// Canonical block `number` (from the cache, else decoded and cached), `None` when it is
    /// not held.
    pub(crate) fn load(ctx: &RpcContext, number: u64) -> Result<Option<Arc<Self>>, RpcError> {
        if let Some(hash) = ctx.provider.block_hash(number)? {
            if let Some(block) = ctx.cache.blocks.get(&hash) {
                return Ok(Some(block));
            }
        }
        let Some(header) = ctx.provider.header_by_number(number)? else { return Ok(None) };
        let body = ctx
            .provider
            .body_by_number(number)?
            .ok_or(RpcError::Missing { what: "body", block: number })?;
        let hash = header.hash_slow();
        let senders = ctx
            .provider
            .senders_by_number(number)?
            .filter(|senders| senders.len() == body.transactions.len());
        let block = Arc::new(Self { number, hash, header, body, senders });
        ctx.cache.blocks.insert(hash, block.clone());
        Ok(Some(block))
    }

    /// The block as the executor takes it (its transactions, ommers and withdrawals copied).
    pub(crate) fn block_input(&self) -> BlockInput {
        BlockInput {
            hash: self.hash,
            header: self.header.clone(),
            transactions: self.body.transactions.clone(),
            claimed_senders: Vec::new(),
            withdrawals: self.body.withdrawals.clone(),
            ommers: self.body.ommers.clone(),
        }
    }

    /// The block's receipts as stored (consensus form, with blooms), through the cache.
    pub(crate) fn receipts(&self, ctx: &RpcContext) -> Result<Arc<Vec<ReceiptEnvelope>>, RpcError> {
        if let Some(receipts) = ctx.cache.receipts.get(&self.hash) {
            return Ok(receipts);
        }
        let receipts = Arc::new(
            ctx.provider
                .receipts_by_number(self.number)?
                .ok_or_else(|| RpcError::Missing { what: "receipts", block: self.number })?,
        );
        ctx.cache.receipts.insert(self.hash, receipts.clone());
        Ok(receipts)
    }

    /// The length of [`StoredBlock::rlp`], computed without encoding (or copying) the block:
    /// the list of header, transactions, ommers and (when present) withdrawals.
    pub(crate) fn rlp_len(&self) -> usize {
        let payload = self.header.length()
            + alloy_rlp::list_length(&self.body.transactions)
            + alloy_rlp::list_length(&self.body.ommers)
            + self.body.withdrawals.as_ref().map_or(0, |w| w.length());
        payload + alloy_rlp::length_of_length(payload)
    }

    /// RLP of the whole block (header, transactions, ommers, withdrawals).
    pub(crate) fn rlp(&self) -> Vec<u8> {
        let block = Block { header: self.header.clone(), body: self.body.clone() };
        alloy_rlp::encode(&block)
    }

    /// Transaction `i`'s sender: stored, or recovered from its signature.
    pub(crate) fn sender(&self, i: usize) -> Result<Address, RpcError> {
        if let Some(senders) = &self.senders {
            return Ok(senders[i]);
        }
        self.body.transactions[i].recover_signer().map_err(|source| RpcError::Sender {
            block: self.number,
            index: i,
            source,
        })
    }

    /// Transaction `i` in the RPC shape.
    pub(crate) fn transaction(&self, i: usize) -> Result<RpcTransaction, RpcError> {
        Ok(self.transaction_from(i, self.sender(i)?))
    }

    /// Transaction `i` in the RPC shape, sent by `sender`.
    fn transaction_from(&self, i: usize, sender: Address) -> RpcTransaction {
        let tx = self.body.transactions[i].clone();
        let effective_gas_price = tx.effective_gas_price(self.header.base_fee_per_gas);
        RpcTransaction {
            inner: alloy_consensus::transaction::Recovered::new_unchecked(tx, sender),
            block_hash: Some(self.hash),
            block_number: Some(self.number),
            transaction_index: Some(i as u64),
            effective_gas_price: Some(effective_gas_price),
            block_timestamp: Some(self.header.timestamp),
        }
    }

    /// The block's header in the RPC shape (`eth_getHeaderBy*`: its hash, no size).
    pub(crate) fn rpc_header(&self) -> RpcHeader {
        RpcHeader {
            hash: self.hash,
            inner: self.header.clone(),
            total_difficulty: None,
            size: None,
        }
    }

    /// Ommer `index` as geth's `eth_getUncleBy*` gives it: a block of that header with no
    /// transactions, ommers or withdrawals (its size that block's RLP length); `None` past the
    /// block's ommers.
    pub(crate) fn rpc_ommer(&self, index: usize) -> Option<RpcBlock> {
        let ommer = self.body.ommers.get(index)?;
        let block = Block::<TxEnvelope> { header: ommer.clone(), body: BlockBody::default() };
        Some(RpcBlock {
            header: RpcHeader {
                hash: ommer.hash_slow(),
                inner: ommer.clone(),
                total_difficulty: None,
                size: Some(U256::from(alloy_rlp::encode(&block).len())),
            },
            uncles: Vec::new(),
            // geth writes no `transactions` for an ommer.
            transactions: BlockTransactions::Uncle,
            withdrawals: None,
        })
    }

    /// The block in the RPC shape, with full transactions or their hashes.
    pub(crate) fn rpc_block(&self, full: bool) -> Result<RpcBlock, RpcError> {
        let senders = if full {
            (0..self.body.transactions.len()).map(|i| self.sender(i)).collect::<Result<_, _>>()?
        } else {
            Vec::new()
        };
        self.rpc_block_with_senders(full, &senders)
    }

    /// [`StoredBlock::rpc_block`] with the transactions' senders given (one per transaction
    /// when `full`), for unsigned (simulated) transactions.
    pub(crate) fn rpc_block_with_senders(
        &self,
        full: bool,
        senders: &[Address],
    ) -> Result<RpcBlock, RpcError> {
        let size = self.rlp_len();
        let transactions = if full {
            BlockTransactions::Full(
                senders.iter().enumerate().map(|(i, s)| self.transaction_from(i, *s)).collect(),
            )
        } else {
            BlockTransactions::Hashes(self.body.transactions.iter().map(|t| *t.tx_hash()).collect())
        };
        Ok(RpcBlock {
            header: RpcHeader {
                hash: self.hash,
                inner: self.header.clone(),
                total_difficulty: None,
                size: Some(U256::from(size)),
            },
            uncles: self.body.ommers.iter().map(|h| h.hash_slow()).collect(),
            transactions,
            withdrawals: self.body.withdrawals.clone(),
        })
    }

    /// Every receipt of the block in the RPC shape.
    pub(crate) fn rpc_receipts(
        &self,
        ctx: &RpcContext,
    ) -> Result<Vec<TransactionReceipt>, RpcError> {
        let receipts = self.receipts(ctx)?;
        let blob_fee = self.blob_fee(ctx);
        let mut out = Vec::with_capacity(receipts.len());
        let mut log_index = 0u64;
        for i in 0..receipts.len() {
            out.push(self.rpc_receipt_at(&receipts, i, log_index, blob_fee)?);
            log_index += receipts[i].logs().len() as u64;
        }
        Ok(out)
    }

    /// The receipt of transaction `i` in the RPC shape (`None` past the last).
    pub(crate) fn rpc_receipt(
        &self,
        ctx: &RpcContext,
        i: usize,
    ) -> Result<Option<TransactionReceipt>, RpcError> {
        let receipts = self.receipts(ctx)?;
        if i >= receipts.len() {
            return Ok(None);
        }
        let log_index = receipts[..i].iter().map(|r| r.logs().len() as u64).sum();
        self.rpc_receipt_at(&receipts, i, log_index, self.blob_fee(ctx)).map(Some)
    }

    /// The block's blob base fee (wei), from its fork's blob parameters.
    fn blob_fee(&self, ctx: &RpcContext) -> Option<u128> {
        ctx.chain.blob_params(self.header.timestamp).and_then(|p| self.header.blob_fee(p))
    }

    /// Receipt `i` of `receipts` (this block's) in the RPC shape, its first log the block's
    /// log `log_index`, blob gas priced at `blob_fee`.
    fn rpc_receipt_at(
        &self,
        receipts: &[ReceiptEnvelope],
        i: usize,
        log_index: u64,
        blob_fee: Option<u128>,
    ) -> Result<TransactionReceipt, RpcError> {
        let (receipt, tx) = (&receipts[i], &self.body.transactions[i]);
        let from = self.sender(i)?;
        let cumulative = receipt.cumulative_gas_used();
        let previous = if i == 0 { 0 } else { receipts[i - 1].cumulative_gas_used() };
        let tx_hash = *tx.tx_hash();
        let mut next_log = log_index;
        let inner = receipt.clone().map_logs(|log| {
            next_log += 1;
            self.rpc_log(log, tx_hash, i, next_log - 1)
        });
        let blob_gas_used = tx.blob_gas_used();
        Ok(TransactionReceipt {
            inner,
            transaction_hash: tx_hash,
            transaction_index: Some(i as u64),
            block_hash: Some(self.hash),
            block_number: Some(self.number),
            gas_used: cumulative - previous,
            effective_gas_price: tx.effective_gas_price(self.header.base_fee_per_gas),
            blob_gas_used,
            blob_gas_price: blob_gas_used.and(blob_fee),
            from,
            to: tx.to(),
            contract_address: matches!(tx.kind(), TxKind::Create).then(|| from.create(tx.nonce())),
        })
    }

    /// Appends the block's logs that `keep` admits to `out`, in order (no sender recovery,
    /// unlike [`StoredBlock::rpc_receipts`]; nothing copied out of the receipts).
    pub(crate) fn write_logs(
        &self,
        ctx: &RpcContext,
        keep: impl Fn(&alloy_primitives::Log) -> bool,
        out: &mut crate::log_json::LogsJson,
    ) -> Result<(), RpcError> {
        let mut log_index = 0u64;
        for (i, (receipt, tx)) in
            self.receipts(ctx)?.iter().zip(&self.body.transactions).enumerate()
        {
            for log in receipt.logs() {
                if keep(log) {
                    let at = crate::log_json::LogPosition {
                        block_hash: self.hash,
                        block_number: self.number,
                        block_timestamp: self.header.timestamp,
                        transaction_hash: *tx.tx_hash(),
                        transaction_index: i as u64,
                        log_index,
                    };
                    out.push(log, &at);
                }
                log_index += 1;
            }
        }
        Ok(())
    }

    /// The logs of `receipts` (this block's) that `keep` admits, in the RPC shape, each
    /// marked `removed` (a block a reorg took out of the chain).
    pub(crate) fn rpc_logs(
        &self,
        receipts: &[ReceiptEnvelope],
        keep: impl Fn(&alloy_primitives::Log) -> bool,
        removed: bool,
    ) -> Vec<RpcLog> {
        let mut out = Vec::new();
        let mut log_index = 0u64;
        for (i, (receipt, tx)) in receipts.iter().zip(&self.body.transactions).enumerate() {
            for log in receipt.logs() {
                if keep(log) {
                    let mut rpc = self.rpc_log(log.clone(), *tx.tx_hash(), i, log_index);
                    rpc.removed = removed;
                    out.push(rpc);
                }
                log_index += 1;
            }
        }
        out
    }

    /// Log `log_index` of the block, emitted by transaction `i` (`tx_hash`).
    fn rpc_log(
        &self,
        log: alloy_primitives::Log,
        tx_hash: B256,
        i: usize,
        log_index: u64,
    ) -> RpcLog {
        RpcLog {
            inner: log,
            block_hash: Some(self.hash),
            block_number: Some(self.number),
            block_timestamp: Some(self.header.timestamp),
            transaction_hash: Some(tx_hash),
            transaction_index: Some(i as u64),
            log_index: Some(log_index),
            removed: false,
        }
    }

    /// The EIP-2718 encoding of every receipt (`debug_getRawReceipts`).
    pub(crate) fn raw_receipts(&self, ctx: &RpcContext) -> Result<Vec<Bytes>, RpcError> {
        Ok(self.receipts(ctx)?.iter().map(|r| Bytes::from(r.encoded_2718())).collect())
    }

    /// RLP of the header (`debug_getRawHeader`).
    pub(crate) fn raw_header(&self) -> Bytes {
        let mut out = Vec::new();
        self.header.encode(&mut out);
        out.into()
    }
}
