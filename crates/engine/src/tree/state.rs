//! The tree's mutable state ([`TreeState`]): the executed blocks not yet forgotten, the
//! invalid-payload cache, the forkchoice and the block the store's head is heading for; and
//! the state a block executes on ([`ParentState`]): the stored state under the diffs of its
//! executed, uncommitted ancestors, whose trie nodes lie over the store's ([`NodeOverlay`]).

use super::{block_buffer::BlockBuffer, invalid_headers::InvalidHeaderCache, Forkchoice};
use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_primitives::{map::HashMap, Bytes, B256};
use gigagas_bal::BlockAccessList;
use gigagas_chain_state::ExecutedBlockWithTrie;
use gigagas_state::StateSource;
use gigagas_storage_api::FullProvider;
use gigagas_trie::NodeSource;
use gigagas_validation::{ExecutedBlock, Overlay, PendingDiff};
use std::sync::Arc;

/// A block executed and state-rooted: the block, its new trie nodes, execution and state-root
/// times.
pub(super) type Executed =
    (ExecutedBlock, Vec<gigagas_trie::EncodedNode>, std::time::Duration, std::time::Duration);

/// Executed, uncommitted blocks (newest first) and the canonical block they build on.
pub(super) type Branch = (Vec<Arc<ExecutedBlockWithTrie>>, (u64, B256));

/// The store's trie nodes with those of executed, not yet committed blocks on top.
pub(super) struct NodeOverlay<'a> {
    store: &'a dyn FullProvider,
    layers: &'a [Arc<ExecutedBlockWithTrie>],
}

impl NodeSource for NodeOverlay<'_> {
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, gigagas_trie::NodeSourceError> {
        for b in self.layers {
            if let Some(node) = b.node(hash) {
                return Ok(Some(node));
            }
        }
        self.store.node(hash)
    }

    /// The layers' nodes from them, the rest in one batched read of the store.
    fn nodes(&self, hashes: &[B256]) -> Vec<Result<Option<Bytes>, gigagas_trie::NodeSourceError>> {
        gigagas_trie::nodes_over(
            hashes,
            |hash| self.layers.iter().find_map(|b| b.node(hash)),
            |rest| self.store.nodes(rest),
        )
    }
}

/// The state a block (or a payload being built) executes on: the parent's header, the stored
/// state below every layer, the diffs of the executed ancestors not yet committed and those
/// ancestors (newest first).
#[derive(Debug)]
pub(super) struct ParentState {
    pub(super) header: Header,
    pub(super) base: Arc<dyn StateSource>,
    pub(super) diffs: Vec<Arc<PendingDiff>>,
    pub(super) layers: Vec<Arc<ExecutedBlockWithTrie>>,
}

impl ParentState {
    /// The parent's state: the diffs over the stored state.
    pub(super) fn source(&self) -> Arc<dyn StateSource> {
        Arc::new(Overlay { base: self.base.clone(), diffs: self.diffs.clone() })
    }

    /// The trie nodes the parent's state root resolves from.
    pub(super) fn nodes<'a>(&'a self, store: &'a dyn FullProvider) -> impl NodeSource + Sync + 'a {
        NodeOverlay { store, layers: &self.layers }
    }
}

/// A payload kept until its parent is known: what `newPayload` executes it with.
#[derive(Debug)]
pub(super) struct BufferedPayload {
    pub(super) block: Block<TxEnvelope>,
    /// Bytes of the block's RLP.
    pub(super) rlp_len: usize,
    pub(super) transactions_root: Option<B256>,
    pub(super) bal: Option<BlockAccessList>,
}

/// What the tree knows beyond the store. Changed only by the tree's `&mut self` operations.
#[derive(Debug)]
pub(super) struct TreeState {
    /// Executed blocks by hash (canonical ones not yet committed, and other branches).
    pub(super) blocks: HashMap<B256, Arc<ExecutedBlockWithTrie>>,
    /// Invalid payloads: hash → (latest valid ancestor, reason), least recently used
    /// forgotten first.
    pub(super) invalid: InvalidHeaderCache,
    /// Payloads whose parent was unknown when they came (answered SYNCING), executed once
    /// their parent is (reth's buffered blocks).
    pub(super) buffer: BlockBuffer<BufferedPayload>,
    /// Head, safe and finalized as the last forkchoice update set them.
    pub(super) forkchoice: Forkchoice,
    /// The block the store's head will be once persistence has committed what it was handed
    /// (with synchronous commits: the store's head). Set wherever the tree changes the store.
    pub(super) persist_target: (u64, B256),
}

impl TreeState {
    /// The state of a tree whose store's head is `head`: head, safe and finalized there.
    pub(super) fn new(head: (u64, B256)) -> Self {
        Self {
            blocks: HashMap::default(),
            invalid: InvalidHeaderCache::default(),
            buffer: BlockBuffer::default(),
            forkchoice: Forkchoice { head, safe: Some(head), finalized: Some(head) },
            persist_target: head,
        }
    }
}
