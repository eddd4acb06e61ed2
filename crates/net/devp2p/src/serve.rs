//! A session's answers to its peer's requests, read from the store through `gigagas-net-p2p`'s
//! [`ChainServer`] on a blocking thread: headers, bodies, receipts (eth/69's form without
//! bloom; from eth/70 starting at the asked receipt of the first block and cut, with
//! `lastBlockIncomplete`, where the message would pass 10 MiB) and BALs (eth/71; `0x80` for
//! one not held), each within 1,024 items and the 2 MiB soft limit; pooled transactions from
//! the node's pool (at most 256 asked, 2 MiB).

use crate::transactions::{NetworkPool, MAX_POOLED_TRANSACTIONS_REQUEST};
use alloy_consensus::{ReceiptEnvelope, TxReceipt};
use alloy_rlp::Encodable;
use gigagas_eth_wire_types::{
    BlockAccessLists, EthMessage, NetworkTransactions, Receipt69, RequestPair, MAX_MESSAGE_SIZE,
    MAX_REQUEST_ITEMS, SOFT_RESPONSE_LIMIT,
};
use gigagas_net_p2p::ChainServer;
use gigagas_storage_api::ProviderError;

/// What a session answers its peer's requests from.
#[derive(Clone)]
pub(crate) struct Serving {
    /// The chain (headers, bodies, receipts, BALs); none: empty answers.
    pub(crate) chain: Option<ChainServer>,
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
) -> Result<Option<EthMessage>, ProviderError> {
    if let (EthMessage::GetPooledTransactions(p), Some(pool)) = (request, &serving.pool) {
        let asked = &p.message[..p.message.len().min(MAX_POOLED_TRANSACTIONS_REQUEST)];
        return Ok(Some(EthMessage::PooledTransactions(RequestPair {
            request_id: p.request_id,
            message: NetworkTransactions(pool.network_transactions(asked, SOFT_RESPONSE_LIMIT)),
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
            let stored = server.receipts(hashes, MAX_REQUEST_ITEMS)?;
            let skip = first_block_receipt_index.unwrap_or(0) as usize;
            let mut receipts = Vec::with_capacity(stored.len());
            let mut bytes = 0usize;
            let mut incomplete = false;
            for (i, block) in stored.iter().enumerate() {
                let from = if i == 0 { skip.min(block.len()) } else { 0 };
                let mut list = Vec::with_capacity(block.len() - from);
                for r in &block[from..] {
                    let r = receipt69(r);
                    let size = r.length();
                    // eth/70 cuts a block that would take the message past 10 MiB.
                    if first_block_receipt_index.is_some() && bytes + size > MAX_MESSAGE_SIZE {
                        incomplete = true;
                        break;
                    }
                    bytes += size;
                    list.push(r);
                }
                if incomplete {
                    if !list.is_empty() {
                        receipts.push(list);
                    }
                    break;
                }
                receipts.push(list);
            }
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
        _ => return None,
    })
}
