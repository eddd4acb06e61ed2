//! What the tree executes, roots and stores blocks with ([`TreeContext`]): the store, the
//! chain's rules, the executor pool and its settings, the background persistence. Fixed once
//! the tree is built; every operation reads it beside the mutable [`TreeState`].

use super::{
    persistence::Persistence,
    state::{Branch, ParentState, TreeState},
};
use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_primitives::B256;
use gigagas_bal::BlockAccessList;
use gigagas_chain_state::CanonicalInMemoryState;
use gigagas_primitives::{ChainSpec, SenderCache};
use gigagas_state::StateSource;
use gigagas_storage_api::{FullProvider, FullReader, ProviderError, TrieState};
use gigagas_trie::{NodeSource, PreservedTrie};
use gigagas_validation::{
    commit_executed, execute_block, ExecutedBlock, GivenBal, ImportError, PendingDiff, Prewarming,
};
use std::{sync::Arc, time::Instant};

/// A wrapper around the stored state that every execution of the tree reads through (see
/// [`super::BlockTree::with_source_layer`]).
pub(super) type SourceLayerFn = dyn Fn(Arc<dyn StateSource>) -> Arc<dyn StateSource> + Send + Sync;

/// [`SourceLayerFn`], printable.
pub(super) struct SourceLayer(pub(super) Box<SourceLayerFn>);

impl std::fmt::Debug for SourceLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SourceLayer")
    }
}

/// The tree's fixed parts. See the module documentation.
#[derive(Debug)]
pub(super) struct TreeContext {
    pub(super) store: Arc<dyn FullProvider>,
    pub(super) chain: ChainSpec,
    /// The parallel executor's workers: built once with the tree, reused for every payload.
    pub(super) pool: rayon::ThreadPool,
    /// The workers beside execution (`state-root-N`), built once with the tree: a payload's
    /// state root from its BAL and its streamed senders' recovery.
    pub(super) beside: rayon::ThreadPool,
    /// The BAL's own I/O workers (`bal-io-N`, `config.io_depth` of them), built once with the
    /// tree; `None`: the BAL's keys are read on `pool`.
    pub(super) io: Option<rayon::ThreadPool>,
    /// The tree's settings.
    pub(super) config: super::TreeConfig,
    /// The state trie kept from one payload's state root to the next payload's (reth's
    /// preserved sparse trie); `None`: every state root starts from the parent's root
    /// (`config.preserve_trie` off).
    pub(super) preserved: Option<PreservedTrie>,
    pub(super) source_layer: Option<SourceLayer>,
    /// The background persistence thread; `None`: forkchoice updates commit before returning.
    pub(super) persistence: Option<Persistence>,
    /// The canonical blocks above the store's head, published for the chain's readers.
    pub(super) memory: CanonicalInMemoryState,
    /// Senders recovered before a payload arrived (the pool's), not recovered again.
    pub(super) known_senders: Option<Arc<SenderCache>>,
}

impl TreeContext {
    /// Waits for the background persistence to commit what it was handed; its fault, if any.
    pub(super) fn drain_persistence(&self, state: &mut TreeState) -> Result<(), ImportError> {
        if let Some(p) = &self.persistence {
            p.wait_idle();
            self.persistence_fault(state)?;
        }
        Ok(())
    }

    /// The background persistence's fault, taken (after it finished skipping what it was
    /// handed), with the persistence target set back to the store's head so that the next
    /// forkchoice update queues the uncommitted blocks again.
    pub(super) fn persistence_fault(&self, state: &mut TreeState) -> Result<(), ImportError> {
        let Some(p) = &self.persistence else { return Ok(()) };
        p.wait_idle_if_failed();
        match p.take_error() {
            Some(e) => {
                state.persist_target =
                    self.store.best_block()?.ok_or(ImportError::NotInitialized)?;
                Err(e)
            }
            None => Ok(()),
        }
    }

    /// Publishes the head's branch above the store's canonical blocks to the in-memory
    /// canonical chain (before the forkchoice is published: a reader told of the head finds
    /// it).
    ///
    /// # Errors
    /// [`ProviderError`] when the store cannot be read.
    pub(super) fn publish_canonical(&self, state: &TreeState) -> Result<(), ProviderError> {
        if let Some((layers, base)) = self.branch(state, state.forkchoice.head.1)? {
            self.memory.update_chain(base, layers.into_iter().rev().collect());
        }
        Ok(())
    }

    /// Commits `executed` (with the trie `nodes` of its state root) to the store now.
    ///
    /// # Errors
    /// As [`commit_executed`].
    pub(super) fn commit(
        &self,
        executed: &ExecutedBlock,
        nodes: &[gigagas_trie::EncodedNode],
    ) -> Result<(), ImportError> {
        commit_executed(&*self.store, executed, nodes)
    }

    /// Whether `hash` is a canonical block of the store; its number if so.
    pub(super) fn canonical(&self, hash: &B256) -> Result<Option<u64>, ProviderError> {
        self.store.block_number(hash)
    }

    /// The executed, uncommitted blocks from `hash` down to the canonical block they build on
    /// (newest first), with that block's number and hash; `None` when the chain leads to a
    /// block the tree does not know.
    pub(super) fn branch(
        &self,
        state: &TreeState,
        hash: B256,
    ) -> Result<Option<Branch>, ProviderError> {
        branch_in(&*self.store, state, hash)
    }

    /// The state of block `hash` (canonical, or executed on a known branch), read through one
    /// view of the store taken now: what it reads stays that state however the store moves
    /// meanwhile (persistence, a reorg), so a payload job holding it never makes the engine
    /// wait.
    pub(super) fn parent_state(
        &self,
        state: &TreeState,
        hash: B256,
    ) -> Result<Option<ParentState>, ImportError> {
        let view = self.store.read_view();
        let Some((layers, base)) = branch_in(&*view, state, hash)? else { return Ok(None) };
        let base_header = view.header_by_number(base.0)?.ok_or(ImportError::NotInitialized)?;
        // The view's flat state is its head's: it serves this branch when the view stands at
        // its base; else (the view's head is on another branch above the base) the base's trie
        // is read.
        let stored: Arc<dyn StateSource> = if view.best_block()? == Some(base) {
            view
        } else {
            Arc::new(TrieState { store: view, root: base_header.state_root })
        };
        let base_source = self.layered(stored);
        let header = layers.first().map_or(base_header, |b| b.executed.header.clone());
        let diffs: Vec<Arc<PendingDiff>> = layers.iter().map(|b| b.executed.diff.clone()).collect();
        Ok(Some(ParentState { header, base: base_source, diffs, layers }))
    }

    /// The store's head's state through a view of the store taken now (through the source
    /// layer, if any).
    pub(super) fn stored_view(&self) -> Arc<dyn StateSource> {
        self.layered(self.store.read_view())
    }

    /// `stored` through the source layer, if any.
    fn layered(&self, stored: Arc<dyn StateSource>) -> Arc<dyn StateSource> {
        match &self.source_layer {
            Some(layer) => (layer.0)(stored),
            None => stored,
        }
    }

    /// The header of the canonical block `number`.
    ///
    /// # Errors
    /// [`ImportError::Storage`] when the store fails; [`ImportError::NotInitialized`] when the
    /// header is not stored.
    pub(super) fn canonical_header(&self, number: u64) -> Result<Header, ImportError> {
        self.store.header_by_number(number)?.ok_or(ImportError::NotInitialized)
    }

    /// The state root of the store's head: a trie whose nodes are all stored (`None` when the
    /// head cannot be read; the read-ahead that wants it is then skipped).
    fn stored_root(&self) -> Option<B256> {
        let (number, _) = self.store.best_block().ok()??;
        self.store.header_by_number(number).ok()?.map(|h| h.state_root)
    }

    /// What a payload carrying `bal` runs with: the parallel executor driven by it, or with
    /// `--engine.parallel false` the sequential reference, its BAL checked against `bal`; with
    /// `nodes` (the parent's trie nodes) its state root computed from `bal` beside execution.
    pub(super) fn given<'a>(
        &'a self,
        bal: Option<&'a BlockAccessList>,
        nodes: Option<&'a (dyn NodeSource + Sync)>,
    ) -> Option<GivenBal<'a>> {
        bal.map(|bal| GivenBal {
            bal,
            pool: &self.pool,
            beside: &self.beside,
            scheduler: self.config.parallel.then_some(self.config.scheduler),
            io: self.config.io,
            io_pool: self.io.as_ref(),
            trie_ahead: self.io.as_ref().and_then(|_| self.stored_root()).map(|root| {
                let store: &(dyn NodeSource + Sync) = &*self.store;
                (store, root)
            }),
            nodes,
            preserved: self.preserved.as_ref(),
            stream_senders: self.config.stream_senders,
        })
    }

    /// Executes `block` on `parent` ([`execute_block`]; by the parallel executor when `given` a
    /// BAL), with the time it took.
    pub(super) fn execute_on(
        &self,
        parent: &ParentState,
        block: Block<TxEnvelope>,
        rlp_len: usize,
        transactions_root: Option<B256>,
        given: Option<GivenBal<'_>>,
    ) -> Result<(ExecutedBlock, std::time::Duration), ImportError> {
        let start = Instant::now();
        let prewarm = match self.config.prewarm {
            true => Prewarming {
                pool: Some(&self.pool),
                workers: self.pool.current_num_threads() - 1,
                reuse: self.config.optimistic,
            },
            false => Prewarming::OFF,
        };
        let (source, header) = (parent.source(), &parent.header);
        execute_block(
            &self.chain,
            source,
            header,
            block,
            rlp_len,
            transactions_root,
            self.config.keep_updates,
            given,
            prewarm,
            self.known_senders.as_deref(),
        )
        .map(|executed| (executed, start.elapsed()))
    }
}

/// The executed, uncommitted blocks from `hash` down to the block `store` holds as canonical
/// that they build on (newest first), with that block's number and hash; `None` when the chain
/// leads to a block the tree does not know.
fn branch_in(
    store: &dyn FullReader,
    state: &TreeState,
    mut hash: B256,
) -> Result<Option<Branch>, ProviderError> {
    let mut layers = Vec::new();
    loop {
        if let Some(n) = store.block_number(&hash)? {
            return Ok(Some((layers, (n, hash))));
        }
        let Some(b) = state.blocks.get(&hash) else { return Ok(None) };
        hash = b.parent_hash();
        layers.push(b.clone());
    }
}
