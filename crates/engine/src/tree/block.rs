//! One block the tree holds in memory: executed and state-rooted, with the trie nodes its state
//! root created (what a layer over the store serves, and what persistence commits).

use alloy_primitives::{map::HashMap, B256};
use gigagas_validation::ExecutedBlock;

/// One executed block, with the trie nodes of its state root.
#[derive(Debug)]
pub(super) struct TreeBlock {
    /// The block, its changes and its figures.
    pub(super) executed: ExecutedBlock,
    /// The trie nodes its state root created: (keccak256 of the node, RLP of the node).
    pub(super) nodes: Vec<(B256, Vec<u8>)>,
    /// Position in `nodes` by hash.
    pub(super) node_index: HashMap<B256, usize>,
}

impl TreeBlock {
    /// The parent's hash.
    pub(super) fn parent_hash(&self) -> B256 {
        self.executed.header.parent_hash
    }
}
