//! A session's answers to its peer's requests, read from the store through `gigagas-net-p2p`'s
//! [`ChainServer`] on a blocking thread: headers, bodies, receipts (eth/69's form without
//! bloom; from eth/70 starting at the asked receipt of the first block and cut, with
//! `lastBlockIncomplete`, where the message would pass 10 MiB) and BALs (eth/71; `0x80` for
//! one not held), each within 1,024 items and the 2 MiB soft limit; pooled transactions from
//! the node's pool (at most 256 asked, 2 MiB; on eth/72 blob transactions without their
//! blobs) and eth/72's cells of pooled blobs (a transaction not held left out, as geth's
//! `answerGetCells`).

use crate::transactions::{NetworkPool, MAX_POOLED_TRANSACTIONS_REQUEST};
use alloy_consensus::{ReceiptEnvelope, TxReceipt};
use alloy_rlp::Encodable;
use gigagas_eth_wire_types::{
    BlockAccessLists, Cells, EthMessage, EthVersion, NetworkTransactions, Receipt69, RequestPair,
    MAX_MESSAGE_SIZE, MAX_REQUEST_ITEMS, SOFT_RESPONSE_LIMIT,
};

/// Most blob transactions whose cells one `GetCells` is answered for (each up to 128 cells of
/// 2 KiB a blob: 64 transactions of one blob's whole extension stay within 16 MiB before the
/// message limit; geth answers as many as asked).
pub(crate) const MAX_CELLS_REQUEST: usize = 64;
use gigagas_eth_wire_types::SnapMessage;
use gigagas_net_p2p::{ChainServer, SnapServeError, SnapServer};
use gigagas_storage_api::ProviderError;

/// What a session answers its peer's requests from.
#[derive(Clone)]
pub(crate) struct Serving {
    /// The chain (headers, bodies, receipts, BALs); none: empty answers.
    pub(crate) chain: Option<ChainServer>,
    /// The state for snap (ranges, codes, trie nodes, BALs); none: snap is not offered.
    pub(crate) snap: Option<SnapServer>,
    /// The transaction pool (`GetPooledTransactions`); none: empty answers.
    pub(crate) pool: Option<std::sync::Arc<dyn NetworkPool>>,
}

/// eth/69's receipt form of a stored receipt.
fn receipt69(envelope: &ReceiptEnvelope) -> Receipt69 {
    Receipt69 {
        tx_type: envelope.tx_type() as u8,
        status: envelope.status_or_post_state(),
        cumulative_gas_used: envelope.cumulative_gas_used(),
        logs: envelope.logs().to_vec(),
    }
}

/// The answer to `request` (a request of the peer), `None` for a message that is not one.
///
/// # Errors
/// [`ProviderError`] when a read fails: the request is then left unanswered, never answered
/// short.
pub(crate) fn answer(
    serving: &Serving,
    request: &EthMessage,
    version: EthVersion,
) -> Result<Option<EthMessage>, ProviderError> {
    if let (EthMessage::GetPooledTransactions(p), Some(pool)) = (request, &serving.pool) {
        let asked = &p.message[..p.message.len().min(MAX_POOLED_TRANSACTIONS_REQUEST)];
        let without_blobs = version >= EthVersion::Eth72;
        return Ok(Some(EthMessage::PooledTransactions(RequestPair {
            request_id: p.request_id,
            message: NetworkTransactions(pool.network_transactions(
                asked,
                SOFT_RESPONSE_LIMIT,
                without_blobs,
            )),
        })));
    }
    if let (EthMessage::GetCells(p), Some(pool)) = (request, &serving.pool) {
        let asked = &p.hashes[..p.hashes.len().min(MAX_CELLS_REQUEST)];
        // geth's answerGetCells: a transaction not held with its blobs is left out.
        let (hashes, cells) = asked
            .iter()
            .zip(pool.cells(asked, &p.mask.columns()))
            .filter_map(|(hash, cells)| Some((*hash, cells?)))
            .unzip();
        return Ok(Some(EthMessage::Cells(Cells {
            request_id: p.request_id,
            hashes,
            cells,
            mask: p.mask,
        })));
    }
    let Some(server) = serving.chain.as_ref() else { return Ok(empty_answer(request)) };
    Ok(Some(match request {
        EthMessage::GetBlockHeaders(p) => {
            let q = &p.message;
            let headers = server.headers(q.origin, q.amount, q.skip, q.reverse)?;
            EthMessage::BlockHeaders(RequestPair { request_id: p.request_id, message: headers })
        }
        EthMessage::GetBlockBodies(p) => EthMessage::BlockBodies(RequestPair {
            request_id: p.request_id,
            message: server.bodies(&p.message, MAX_REQUEST_ITEMS)?,
        }),
        EthMessage::GetReceipts { request_id, first_block_receipt_index, hashes } => {
            let (receipts, incomplete) = receipts(server, hashes, *first_block_receipt_index)?;
            EthMessage::Receipts {
                request_id: *request_id,
                last_block_incomplete: first_block_receipt_index.map(|_| incomplete),
                receipts,
            }
        }
        EthMessage::GetBlockAccessLists(p) => EthMessage::BlockAccessLists(RequestPair {
            request_id: p.request_id,
            message: BlockAccessLists(server.access_lists(&p.message, MAX_REQUEST_ITEMS)?),
        }),
        other => return Ok(empty_answer(other)),
    }))
}

/// The answer to `GetReceipts` for `hashes` (geth's `serviceGetReceiptsQuery69/70`): blocks in
/// order until one is not held, [`MAX_REQUEST_ITEMS`] blocks are in, or the answer passes the
/// [`SOFT_RESPONSE_LIMIT`] (counted on what is sent, so a block whose first receipts were
/// skipped counts only the rest). From eth/70 (`first_block_receipt_index` given) the first
/// block starts at that receipt, and a block whose receipts would take the message past
/// [`MAX_MESSAGE_SIZE`] is cut there: the answer ends with it and says it is incomplete (a
/// block whose very first receipt does not fit is left out, the answer complete). The second
/// value is that flag.
///
/// # Errors
/// [`ProviderError`] when a read fails.
fn receipts(
    server: &ChainServer,
    hashes: &[alloy_primitives::B256],
    first_block_receipt_index: Option<u64>,
) -> Result<(Vec<Vec<Receipt69>>, bool), ProviderError> {
    let skip = usize::try_from(first_block_receipt_index.unwrap_or(0)).unwrap_or(usize::MAX);
    let mut out = Vec::new();
    let mut bytes = 0usize;
    for (i, hash) in hashes.iter().enumerate() {
        if bytes >= SOFT_RESPONSE_LIMIT || out.len() >= MAX_REQUEST_ITEMS {
            break;
        }
        let Some(block) = server.block_receipts(hash)? else { break };
        let from = if i == 0 { skip.min(block.len()) } else { 0 };
        let mut list = Vec::with_capacity(block.len() - from);
        let mut size = 0usize;
        let mut cut = false;
        for r in &block[from..] {
            let r = receipt69(r);
            let len = r.length();
            if first_block_receipt_index.is_some() && bytes + size + len > MAX_MESSAGE_SIZE {
                cut = true;
                break;
            }
            size += len;
            list.push(r);
        }
        if cut && list.is_empty() {
            break;
        }
        bytes += size;
        out.push(list);
        if cut {
            return Ok((out, true));
        }
    }
    Ok((out, false))
}

/// The answer to snap request `request`; `None` for a request to refuse (a `GetTrieNodes`
/// with an empty path set: geth disconnects).
///
/// # Errors
/// [`SnapServeError`] when a read fails: the request is then left unanswered.
pub(crate) fn answer_snap(
    serving: &Serving,
    request: &SnapMessage,
) -> Result<Option<SnapMessage>, SnapServeError> {
    let Some(server) = serving.snap.as_ref() else { return Ok(None) };
    Ok(Some(match request {
        SnapMessage::GetAccountRange(r) => SnapMessage::AccountRange(server.account_range(r)?),
        SnapMessage::GetStorageRanges(r) => SnapMessage::StorageRanges(server.storage_ranges(r)?),
        SnapMessage::GetByteCodes(r) => SnapMessage::ByteCodes(server.byte_codes(r)?),
        SnapMessage::GetTrieNodes(r) => match server.trie_nodes(r)? {
            Some(nodes) => SnapMessage::TrieNodes(nodes),
            None => return Ok(None),
        },
        SnapMessage::GetBlockAccessLists(r) => {
            SnapMessage::BlockAccessLists(server.block_access_lists(r)?)
        }
        _ => return Ok(None),
    }))
}

/// The empty answer of the kind `request` asks for (a node may always answer with fewer
/// items); `None` for a message that is not a request.
pub(crate) fn empty_answer(request: &EthMessage) -> Option<EthMessage> {
    Some(match request {
        EthMessage::GetBlockHeaders(p) => {
            EthMessage::BlockHeaders(RequestPair { request_id: p.request_id, message: vec![] })
        }
        EthMessage::GetBlockBodies(p) => {
            EthMessage::BlockBodies(RequestPair { request_id: p.request_id, message: vec![] })
        }
        EthMessage::GetPooledTransactions(p) => EthMessage::PooledTransactions(RequestPair {
            request_id: p.request_id,
            message: NetworkTransactions::default(),
        }),
        EthMessage::GetReceipts { request_id, first_block_receipt_index, .. } => {
            EthMessage::Receipts {
                request_id: *request_id,
                last_block_incomplete: first_block_receipt_index.map(|_| false),
                receipts: vec![],
            }
        }
        EthMessage::GetBlockAccessLists(p) => EthMessage::BlockAccessLists(RequestPair {
            request_id: p.request_id,
            message: BlockAccessLists::default(),
        }),
        EthMessage::GetCells(p) => EthMessage::Cells(Cells {
            request_id: p.request_id,
            hashes: Vec::new(),
            cells: Vec::new(),
            mask: p.mask,
        }),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_consensus::{BlockBody, Header, Receipt, ReceiptWithBloom, TxEnvelope};
    use alloy_primitives::{Address, Bytes, Log, B256};
    use gigagas_storage_api::{
        BlockAccessListReader, BlockNumReader, BlockReader, HeaderProvider, ProviderResult,
        ReceiptProvider,
    };
    use std::sync::Arc;

    /// Blocks 0..n by hash `B256::with_last_byte(n)`, each with the given receipts.
    #[derive(Debug)]
    struct Blocks(Vec<Vec<ReceiptEnvelope>>);

    impl BlockNumReader for Blocks {
        fn best_block(&self) -> ProviderResult<Option<(u64, B256)>> {
            Ok(None)
        }
        fn block_number(&self, hash: &B256) -> ProviderResult<Option<u64>> {
            let n = hash[31] as usize;
            Ok((hash == &B256::with_last_byte(n as u8) && n < self.0.len()).then_some(n as u64))
        }
    }
    impl HeaderProvider for Blocks {
        fn header_by_number(&self, _: u64) -> ProviderResult<Option<Header>> {
            Ok(None)
        }
    }
    impl BlockReader for Blocks {
        fn body_by_number(&self, _: u64) -> ProviderResult<Option<BlockBody<TxEnvelope>>> {
            Ok(None)
        }
    }
    impl ReceiptProvider for Blocks {
        fn receipts_by_number(&self, n: u64) -> ProviderResult<Option<Vec<ReceiptEnvelope>>> {
            Ok(self.0.get(n as usize).cloned())
        }
    }
    impl BlockAccessListReader for Blocks {
        fn block_access_list(
            &self,
            _: u64,
        ) -> ProviderResult<Option<gigagas_bal::BlockAccessList>> {
            Ok(None)
        }
    }

    fn receipt(data_bytes: usize, gas: u64) -> ReceiptEnvelope {
        let log = Log::new_unchecked(Address::ZERO, vec![], Bytes::from(vec![7u8; data_bytes]));
        ReceiptEnvelope::Eip1559(ReceiptWithBloom::new(
            Receipt { status: true.into(), cumulative_gas_used: gas, logs: vec![log] },
            Default::default(),
        ))
    }

    /// geth's devp2p suite's `GetLargeReceipts` loop: four blocks around one whose receipts
    /// pass 10 MiB, asked again from the last (incomplete) block at the receipt reached, until
    /// the answer is complete and reaches the last block. It must end, and give every receipt
    /// once and in order.
    #[test]
    fn partial_receipts_of_a_block_past_10_mib_are_fetched_whole() {
        let small = vec![receipt(100, 21_000), receipt(100, 42_000)];
        let large: Vec<_> = (0..24).map(|i| receipt(512 * 1024, 21_000 * (i + 1))).collect();
        let blocks = vec![small.clone(), small.clone(), large.clone(), small.clone()];
        let server = ChainServer::new(Arc::new(Blocks(blocks.clone())));
        let hashes: Vec<B256> = (0..4).map(B256::with_last_byte).collect();

        let mut got: Vec<Vec<Receipt69>> = vec![Vec::new(); 4];
        let (mut last, mut incomplete, mut rounds) = (0usize, false, 0);
        while incomplete || last != hashes.len() - 1 {
            rounds += 1;
            assert!(rounds < 20, "the partial-receipts loop does not end");
            let (lists, cut) =
                receipts(&server, &hashes[last..], Some(got[last].len() as u64)).unwrap();
            assert!(!lists.is_empty());
            let bytes: usize = lists.iter().flatten().map(|r| r.length()).sum();
            assert!(bytes <= MAX_MESSAGE_SIZE, "an answer of {bytes} bytes");
            for (i, list) in lists.iter().enumerate() {
                got[last + i].extend(list.iter().cloned());
            }
            last += lists.len() - 1;
            incomplete = cut;
        }
        assert!(rounds >= 2, "the large block was not cut");
        for (want, got) in blocks.iter().zip(&got) {
            let want: Vec<Receipt69> = want.iter().map(receipt69).collect();
            assert_eq!(&want, got);
        }
        // eth/69 asks without an index and gets whole blocks up to the soft limit.
        let (lists, cut) = receipts(&server, &hashes, None).unwrap();
        assert!(!cut);
        assert_eq!(lists.len(), 3, "the block crossing the soft limit is the last");
        assert_eq!(lists[2].len(), large.len());
    }
}
