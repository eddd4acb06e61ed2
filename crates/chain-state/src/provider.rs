//! [`BlockchainProvider`] (reth's): every reader of the canonical chain over the in-memory
//! canonical blocks first and the store second, so that what JSON-RPC and the network serve
//! reaches the forkchoice head while the store trails it (background persistence).
//!
//! Each read takes a [`crate::CanonicalChain`] snapshot, then reads the store: a block leaves
//! memory only once the store holds it, so every canonical block is found in one or the other.
//! The head's state is read through one read view of the store taken after the snapshot
//! ([`BlockchainProvider::latest`]), so that a commit or an unwind meanwhile shows it nothing
//! half done. Trie nodes are keyed by their hash, so a node found in either is the right one.

use crate::{latest::head_state, CanonicalChain, CanonicalInMemoryState, ExecutedBlockWithTrie};
use alloy_consensus::{BlockBody, Header, ReceiptEnvelope, TxEnvelope};
use alloy_eip7928::AccountChanges;
use alloy_primitives::{Address, Bytes, B256, U256};
use gigagas_state::{StateError, StateSource};
use gigagas_storage_api::{
    BlockAccessListReader, BlockHashReader, BlockNumReader, BlockReader, FullReader,
    HeaderProvider, ProviderResult, ReaderFactory, ReceiptProvider, TransactionsProvider,
    TrieState,
};
use gigagas_trie::{NodeSource, NodeSourceError};
use revm::state::{AccountInfo, Bytecode};
use std::sync::Arc;

/// How many times [`BlockchainProvider::latest`] takes the in-memory chain and a view of the
/// store again when the store moved off the chain in between, before it reads the head's
/// trie instead.
const HEAD_STATE_ATTEMPTS: usize = 3;

/// The store with the in-memory canonical chain over it. Cloning shares both.
#[derive(Debug, Clone)]
pub struct BlockchainProvider {
    store: Arc<dyn ReaderFactory>,
    memory: CanonicalInMemoryState,
}

impl BlockchainProvider {
    /// Reads `memory` first, then `store`.
    pub fn new(store: Arc<dyn ReaderFactory>, memory: CanonicalInMemoryState) -> Self {
        Self { store, memory }
    }

    /// The store below the in-memory blocks.
    pub fn store(&self) -> &Arc<dyn ReaderFactory> {
        &self.store
    }

    /// The in-memory canonical chain.
    pub fn canonical_in_memory_state(&self) -> &CanonicalInMemoryState {
        &self.memory
    }

    /// The state after canonical block `number` with state root `state_root`: for the head of
    /// the in-memory chain its diffs over one read view of the store's flat state (one read per
    /// key), for any other block the trie under `state_root` (the store keeps every trie node;
    /// the in-memory blocks hold theirs).
    ///
    /// # Errors
    /// [`gigagas_storage_api::ProviderError`] when the view's head cannot be read;
    /// [`gigagas_storage_api::ProviderError::StateAtBlockPruned`] for a block older than the
    /// pruned trie holds.
    pub fn state_at(&self, number: u64, state_root: B256) -> ProviderResult<Arc<dyn StateSource>> {
        let chain = self.memory.canonical_chain();
        let head_root = chain.blocks().last().map(|b| b.header().state_root);
        let is_head = chain.head().0 == number && head_root.is_none_or(|r| r == state_root);
        if is_head {
            if let Some(state) = head_state(&chain, self.store.read_view())? {
                return Ok(state);
            }
        }
        let earliest = self.store.earliest_state_block()?;
        if number < earliest {
            return Err(gigagas_storage_api::ProviderError::StateAtBlockPruned {
                number,
                earliest,
            });
        }
        Ok(Arc::new(self.trie_at(state_root)))
    }

    /// The head's state: the in-memory chain's diffs over one read view of the store, the view
    /// taken after the chain; both taken again when the store moved off the chain in between
    /// (it committed blocks published after the chain was taken, or unwound), and after
    /// [`HEAD_STATE_ATTEMPTS`] such moves, or while a backfill sync rewrites the flat state, the
    /// trie under the head's state root.
    ///
    /// # Errors
    /// [`gigagas_storage_api::ProviderError`] when the head's header cannot be read.
    pub fn latest(&self) -> ProviderResult<Arc<dyn StateSource>> {
        let mut chain = self.memory.canonical_chain();
        for _ in 0..HEAD_STATE_ATTEMPTS {
            if chain.backfill() {
                break;
            }
            if let Some(state) = head_state(&chain, self.store.read_view())? {
                return Ok(state);
            }
            chain = self.memory.canonical_chain();
        }
        Ok(Arc::new(self.trie_at(self.head_root(&chain)?)))
    }

    /// The state root of `chain`'s head.
    fn head_root(&self, chain: &CanonicalChain) -> ProviderResult<B256> {
        Ok(match chain.blocks().last() {
            Some(b) => b.header().state_root,
            None => self
                .store
                .header_by_number(chain.head().0)?
                .map(|h| h.state_root)
                .unwrap_or_default(),
        })
    }

    /// The state under `root`, read down the trie (memory's nodes, then the store's).
    fn trie_at(&self, root: B256) -> TrieState {
        TrieState { store: Arc::new(self.clone()), root }
    }

    fn latest_or_err(&self) -> Result<Arc<dyn StateSource>, StateError> {
        self.latest().map_err(StateError::from_source)
    }

    /// `in_memory` of canonical block `number` when memory holds it, else `stored` of the
    /// store.
    fn by_number<T>(
        &self,
        number: u64,
        in_memory: impl FnOnce(&ExecutedBlockWithTrie) -> ProviderResult<T>,
        stored: impl FnOnce(&dyn FullReader) -> ProviderResult<Option<T>>,
    ) -> ProviderResult<Option<T>> {
        match self.memory.canonical_chain().by_number(number) {
            Some(b) => in_memory(b).map(Some),
            None => stored(&*self.store),
        }
    }
}

impl BlockNumReader for BlockchainProvider {
    fn best_block(&self) -> ProviderResult<Option<(u64, B256)>> {
        let chain = self.memory.canonical_chain();
        match chain.blocks().last() {
            Some(b) => Ok(Some(b.num_hash())),
            None => self.store.best_block(),
        }
    }

    fn block_number(&self, hash: &B256) -> ProviderResult<Option<u64>> {
        match self.memory.canonical_chain().by_hash(hash) {
            Some(b) => Ok(Some(b.number())),
            None => self.store.block_number(hash),
        }
    }

    fn earliest_state_block(&self) -> ProviderResult<u64> {
        self.store.earliest_state_block()
    }
}

impl BlockHashReader for BlockchainProvider {
    fn block_hash(&self, number: u64) -> ProviderResult<Option<B256>> {
        self.by_number(number, |b| Ok(b.hash()), |s| BlockHashReader::block_hash(s, number))
    }
}

impl HeaderProvider for BlockchainProvider {
    fn header_by_number(&self, number: u64) -> ProviderResult<Option<Header>> {
        self.by_number(number, |b| Ok(b.header().clone()), |s| s.header_by_number(number))
    }

    fn header(&self, hash: &B256) -> ProviderResult<Option<Header>> {
        match self.memory.canonical_chain().by_hash(hash) {
            Some(b) => Ok(Some(b.header().clone())),
            None => self.store.header(hash),
        }
    }
}

impl BlockReader for BlockchainProvider {
    fn body_by_number(&self, number: u64) -> ProviderResult<Option<BlockBody<TxEnvelope>>> {
        self.by_number(number, |b| Ok(b.body()?.clone()), |s| s.body_by_number(number))
    }

    fn senders_by_number(&self, number: u64) -> ProviderResult<Option<Vec<Address>>> {
        self.by_number(
            number,
            |b| Ok(b.executed.senders().to_vec()),
            |s| s.senders_by_number(number),
        )
    }
}

impl TransactionsProvider for BlockchainProvider {
    fn transaction_location(&self, hash: &B256) -> ProviderResult<Option<(u64, u32)>> {
        let chain = self.memory.canonical_chain();
        for b in chain.blocks().iter().rev() {
            if let Some(i) = b.transaction_index(hash) {
                return Ok(Some((b.number(), i)));
            }
        }
        self.store.transaction_location(hash)
    }
}

impl ReceiptProvider for BlockchainProvider {
    fn receipts_by_number(&self, number: u64) -> ProviderResult<Option<Vec<ReceiptEnvelope>>> {
        self.by_number(number, |b| Ok(b.receipts()?.clone()), |s| s.receipts_by_number(number))
    }
}

impl BlockAccessListReader for BlockchainProvider {
    fn block_access_list(&self, number: u64) -> ProviderResult<Option<Vec<AccountChanges>>> {
        self.by_number(
            number,
            |b| Ok(b.block_access_list()?.clone()),
            |s| s.block_access_list(number),
        )
    }
}

impl NodeSource for BlockchainProvider {
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
        let chain = self.memory.canonical_chain();
        for b in chain.blocks().iter().rev() {
            if let Some(node) = b.node(hash) {
                return Ok(Some(node));
            }
        }
        self.store.node(hash)
    }

    /// The in-memory chain's nodes from it, the rest in one batched read of the store.
    fn nodes(&self, hashes: &[B256]) -> Vec<Result<Option<Bytes>, NodeSourceError>> {
        let chain = self.memory.canonical_chain();
        gigagas_trie::nodes_over(
            hashes,
            |hash| chain.blocks().iter().rev().find_map(|b| b.node(hash)),
            |rest| self.store.nodes(rest),
        )
    }
}

/// The head's state, each read on a fresh snapshot ([`BlockchainProvider::latest`] holds one
/// snapshot for many reads).
impl StateSource for BlockchainProvider {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        self.latest_or_err()?.account(address)
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        self.latest_or_err()?.storage(address, slot)
    }

    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        let chain = self.memory.canonical_chain();
        for b in chain.blocks().iter().rev() {
            if let Some(code) = b.executed.diff.code(hash) {
                return Ok(Some(Bytecode::new_raw(code)));
            }
        }
        StateSource::code(&*self.store, hash)
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        BlockHashReader::block_hash(self, number).map_err(StateError::from_source)
    }

    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        self.latest_or_err()?.has_storage(address)
    }

    /// All of them on one snapshot of the head's state, in one batched read of the store.
    fn accounts(&self, addresses: &[Address]) -> Result<Vec<Option<AccountInfo>>, StateError> {
        self.latest_or_err()?.accounts(addresses)
    }

    /// All of them on one snapshot of the head's state, in one batched read of the store.
    fn slots(&self, keys: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
        self.latest_or_err()?.slots(keys)
    }
}
