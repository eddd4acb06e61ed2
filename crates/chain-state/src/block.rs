//! One executed, state-rooted block held in memory ([`ExecutedBlockWithTrie`]): what the engine
//! tree executes on, what persistence commits, and what the provider serves until the store
//! holds it. Its body, receipts and BAL are decoded from their RLP on the first read, by the
//! reader (an RPC or network thread), never by the engine.

use alloy_consensus::{BlockBody, Header, ReceiptEnvelope, TxEnvelope};
use alloy_eip7928::AccountChanges;
use alloy_primitives::{map::HashMap, Bytes, B256};
use gigagas_storage_api::{ProviderError, ProviderResult};
use gigagas_trie::EncodedNode;
use gigagas_validation::ExecutedBlock;
use std::sync::OnceLock;

/// One executed block with the trie nodes its state root created (reth's
/// `ExecutedBlockWithTrieUpdates`).
#[derive(Debug)]
pub struct ExecutedBlockWithTrie {
    /// The block, its changes and its figures.
    pub executed: ExecutedBlock,
    /// The trie nodes its state root created: (keccak256 of the node, RLP of the node).
    pub nodes: Vec<EncodedNode>,
    /// Position in `nodes` by hash.
    node_index: HashMap<B256, usize>,
    body: OnceLock<BlockBody<TxEnvelope>>,
    receipts: OnceLock<Vec<ReceiptEnvelope>>,
    bal: OnceLock<Vec<AccountChanges>>,
}

impl ExecutedBlockWithTrie {
    /// `executed` with the nodes of its state root, indexed by hash.
    pub fn new(executed: ExecutedBlock, nodes: Vec<EncodedNode>) -> Self {
        let node_index = nodes.iter().enumerate().map(|(i, (h, _))| (*h, i)).collect();
        Self {
            executed,
            nodes,
            node_index,
            body: OnceLock::new(),
            receipts: OnceLock::new(),
            bal: OnceLock::new(),
        }
    }

    /// Its number.
    pub fn number(&self) -> u64 {
        self.executed.block.number
    }

    /// Its hash.
    pub fn hash(&self) -> B256 {
        self.executed.block.hash
    }

    /// Its (number, hash).
    pub fn num_hash(&self) -> (u64, B256) {
        (self.number(), self.hash())
    }

    /// The parent's hash.
    pub fn parent_hash(&self) -> B256 {
        self.executed.header.parent_hash
    }

    /// Its header.
    pub fn header(&self) -> &Header {
        &self.executed.header
    }

    /// The RLP of the trie node whose keccak256 is `hash`, when its state root created it.
    pub fn node(&self, hash: &B256) -> Option<Bytes> {
        self.node_index.get(hash).map(|&i| self.nodes[i].1.clone())
    }

    /// Its body, decoded on the first call.
    ///
    /// # Errors
    /// [`ProviderError::Corrupt`] when the RLP does not decode (a bug: the engine encoded it).
    pub fn body(&self) -> ProviderResult<&BlockBody<TxEnvelope>> {
        decoded(&self.body, self.executed.body_rlp(), "bodies", self.number())
    }

    /// Its receipts, in transaction order, decoded on the first call.
    ///
    /// # Errors
    /// As [`Self::body`].
    pub fn receipts(&self) -> ProviderResult<&Vec<ReceiptEnvelope>> {
        decoded(&self.receipts, self.executed.receipts_rlp(), "receipts", self.number())
    }

    /// Its EIP-7928 block access list, decoded on the first call.
    ///
    /// # Errors
    /// As [`Self::body`].
    pub fn block_access_list(&self) -> ProviderResult<&Vec<AccountChanges>> {
        decoded(&self.bal, self.executed.bal_rlp(), "bals", self.number())
    }

    /// The index of transaction `hash` in the block, if it holds it.
    pub fn transaction_index(&self, hash: &B256) -> Option<u32> {
        self.executed.tx_hashes().iter().position(|h| h == hash).map(|i| i as u32)
    }
}

/// The value in `cell`, decoded from `rlp` on the first call.
fn decoded<'a, T: alloy_rlp::Decodable>(
    cell: &'a OnceLock<T>,
    rlp: &[u8],
    table: &'static str,
    number: u64,
) -> ProviderResult<&'a T> {
    if let Some(value) = cell.get() {
        return Ok(value);
    }
    let value = T::decode(&mut &rlp[..]).map_err(|e| ProviderError::Corrupt {
        table,
        key: format!("block {number} (in memory)"),
        reason: e.to_string(),
    })?;
    Ok(cell.get_or_init(|| value))
}
