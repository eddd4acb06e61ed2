//! A block's state from its EIP-7928 BAL instead of from its execution: how a snap-synced node
//! catches up from its pivot to the head (snap/2, EIP-8189).
//!
//! Flow: the block (its body checked against its header by the downloader), its BAL (checked
//! against the header's BAL hash here) and its receipts (checked against the header's receipts
//! root here) → the state-trie updates the BAL states over the stored head's state
//! ([`bal_updates`](crate::bal_root::bal_updates)) → the trie updated on the stored nodes and
//! its root compared with the header's → one [`BlockCommit`]: flat state, new codes, trie
//! nodes, header, body, receipts, BAL and the head, atomically.
//!
//! Nothing is executed. The block is trusted as far as its header is: the headers come down
//! from the target the consensus client named, each the parent of the next, as the pivot's
//! state root does; the state the BAL ends in is then proven by the header's state root. A BAL
//! cannot state an existing empty account that EIP-161 removes after a touch (none can be made
//! since Spurious Dragon): such a block's root differs ([`ImportError::StateRoot`]) and the
//! caller executes it instead.

use crate::{bal_root::bal_updates, block::FlatRows, ImportError};
use alloy_consensus::{BlockBody, Header, ReceiptEnvelope, TxEnvelope};
use alloy_primitives::{keccak256, B256};
use gigagas_bal::BlockAccessList;
use gigagas_executor::ExecutionError;
use gigagas_state::{PreState, StateSource};
use gigagas_storage_api::{BlockCommit, FullProvider};
use gigagas_trie::update_state_root;
use revm::primitives::KECCAK_EMPTY;
use std::{sync::Arc, time::Instant};

/// A block to apply from its BAL: as downloaded, not yet checked against its BAL hash and
/// receipts root.
#[derive(Debug, Clone, Copy)]
pub struct BalBlock<'a> {
    /// The header.
    pub header: &'a Header,
    /// Its hash.
    pub hash: B256,
    /// The body (checked against the header's roots by the caller).
    pub body: &'a BlockBody<TxEnvelope>,
    /// The block's BAL.
    pub bal: &'a BlockAccessList,
    /// The block's receipts, in transaction order.
    pub receipts: &'a [ReceiptEnvelope],
}

/// What applying one block wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BalApplied {
    /// Accounts written (changed or deleted).
    pub accounts: usize,
    /// Slots written.
    pub slots: usize,
    /// New trie nodes written.
    pub trie_nodes: usize,
    /// Seconds from the first read to the commit's end.
    pub secs: f64,
}

/// Applies `block` on top of the store's head (its parent) from its BAL: checks the BAL's
/// hash and the receipts' root against the header, derives the state after the block from the
/// BAL over the head's flat state, updates the trie on the stored nodes, compares the root
/// with the header's and commits everything in one write.
///
/// # Errors
/// [`ImportError::Invalid`] when the block does not follow the head, its BAL does not hash to
/// the header's BAL hash (or the header has none) or its receipts do not give its receipts
/// root; [`ImportError::StateRoot`] when the BAL's state does not give the header's root (the
/// block must then be executed); [`ImportError::Trie`] when a trie node is missing;
/// [`ImportError::Storage`] when the store fails.
pub fn apply_bal_block<P: FullProvider + 'static>(
    store: &Arc<P>,
    block: BalBlock<'_>,
) -> Result<BalApplied, ImportError> {
    let start = Instant::now();
    let header = block.header;
    let number = header.number;
    let invalid = |reason: String| ImportError::Invalid { number, reason };
    let head = store.best_block()?;
    if head != Some((number.wrapping_sub(1), header.parent_hash)) {
        return Err(invalid(format!("does not follow the stored head {head:?}")));
    }
    let bal_hash = gigagas_bal::compute_block_access_list_hash(block.bal);
    if header.block_access_list_hash != Some(bal_hash) {
        return Err(invalid(format!(
            "BAL hash {bal_hash}, header has {:?}",
            header.block_access_list_hash
        )));
    }
    let receipts_root = alloy_consensus::proofs::calculate_receipt_root(block.receipts);
    if receipts_root != header.receipts_root {
        return Err(invalid(format!(
            "receipts root {receipts_root}, header has {}",
            header.receipts_root
        )));
    }
    let parent = store
        .header(&header.parent_hash)?
        .ok_or_else(|| invalid(format!("parent {} not stored", header.parent_hash)))?;
    let source: Arc<dyn StateSource> = store.clone();
    let pre = PreState::backed(source);
    let updates = bal_updates(block.bal, &pre)
        .map_err(|source| ExecutionError::Database { block: number, source })?;
    let root = update_state_root(parent.state_root, &updates, &**store)
        .map_err(|source| ImportError::Trie { number, source })?;
    if root.root != header.state_root {
        return Err(ImportError::StateRoot {
            number,
            expected: header.state_root,
            found: root.root,
        });
    }
    // The code each account ends with, when the block set one.
    let codes: Vec<(B256, &[u8])> = block
        .bal
        .iter()
        .filter_map(|a| a.code_changes.last())
        .filter(|c| !c.new_code.is_empty())
        .map(|c| (keccak256(&c.new_code), &c.new_code[..]))
        .filter(|(hash, _)| *hash != KECCAK_EMPTY)
        .collect();
    let rows = FlatRows::of(&updates);
    let header_rlp = alloy_rlp::encode(header);
    let body_rlp = alloy_rlp::encode(block.body);
    let receipts_rlp = alloy_rlp::encode(block.receipts.to_vec());
    let bal_rlp = alloy_rlp::encode(block.bal);
    let tx_hashes: Vec<B256> = block.body.transactions.iter().map(|t| *t.tx_hash()).collect();
    store.commit_block(&BlockCommit {
        number,
        hash: block.hash,
        header: &header_rlp,
        body: &body_rlp,
        receipts: &receipts_rlp,
        bal: Some(&bal_rlp),
        wiped: &rows.wiped,
        accounts: &rows.accounts,
        storage: &rows.storage,
        codes: &codes,
        trie_nodes: &root.nodes,
        tx_hashes: &tx_hashes,
        senders: &[],
    })?;
    Ok(BalApplied {
        accounts: rows.accounts.len(),
        slots: rows.storage.len(),
        trie_nodes: root.nodes.len(),
        secs: start.elapsed().as_secs_f64(),
    })
}
