//! gigagas's storage API (reth's `storage-api`): the traits through which the engine, JSON-RPC,
//! the network's request handling and the tools read and write the chain, whatever store is
//! behind them (today RocksDB, `gigagas-storage`).
//!
//! - [`block`]: readers of the canonical chain — numbers and hashes, headers, bodies,
//!   transactions' places, receipts, BALs;
//! - [`state`]: the latest state is a [`StateProvider`] (the store's flat state, with its trie
//!   nodes), the state of any stored block a [`TrieState`] under that block's root
//!   ([`state_by_block_number`]);
//! - [`writer`]: a block's atomic commit, an unwind, flat state and metadata writes, the
//!   trie's pruning;
//! - [`hashed`]: the flat state by the trie's keys, as snap sync writes and reads it;
//! - [`ProviderError`]: the one error, an internal fault, never a shorter answer.
//!
//! [`ChainReader`] gathers the block readers (what the network serves from), [`FullReader`]
//! every reader, [`ReaderFactory`] adds consistent read views (what RPC holds),
//! [`FullProvider`] adds the writers (what the engine's
//! persistence and the file import hold). Each is implemented for every type that implements
//! its parts.

pub mod block;
mod error;
pub mod hashed;
pub mod state;
pub mod writer;

pub use block::{
    BlockAccessListReader, BlockHashReader, BlockNumReader, BlockReader, HeaderProvider,
    ReceiptProvider, TransactionsProvider,
};
pub use error::{ProviderError, ProviderResult};
pub use hashed::{HashedBatch, HashedStateReader, HashedStateWriter, RawBlock};
pub use state::{account_info, trie_account, trie_slot, TrieReadError, TrieState};
pub use writer::{
    AccountRecord, BlockCommit, BlockWriter, KeepStates, MetadataProvider, PruneStats, StateWriter,
    TriePruner, UnwoundBlock,
};

use gigagas_state::StateSource;
use gigagas_trie::NodeSource;
use std::{fmt::Debug, sync::Arc};

/// The latest state of a store: its flat accounts, slots and codes ([`StateSource`], what the
/// executor reads through a pre-state) and the trie nodes under its roots ([`NodeSource`], what
/// the state-root stage and [`TrieState`] walk).
pub trait StateProvider: StateSource + NodeSource + Debug + Send + Sync {}

impl<T: StateSource + NodeSource + Debug + Send + Sync> StateProvider for T {}

/// The canonical chain's blocks: headers, bodies, receipts and BALs by number or hash (what a
/// network serves its peers).
pub trait ChainReader:
    BlockReader + ReceiptProvider + BlockAccessListReader + Debug + Send + Sync
{
}

impl<T: BlockReader + ReceiptProvider + BlockAccessListReader + Debug + Send + Sync> ChainReader
    for T
{
}

/// Every reader of a store: the canonical chain and its state.
pub trait FullReader:
    ChainReader + BlockHashReader + TransactionsProvider + ReceiptProvider + StateProvider
{
}

impl<T> FullReader for T where
    T: ChainReader + BlockHashReader + TransactionsProvider + ReceiptProvider + StateProvider
{
}

/// A store that hands out consistent read views (reth's `DatabaseProviderFactory` and its
/// read-only providers): what the readers of the latest state and the payload jobs hold, so
/// that a commit or an unwind running meanwhile never shows them half of one block's state.
pub trait ReaderFactory: FullReader {
    /// A view of the store as it stands now: every read through it (the head, the flat state,
    /// the blocks) sees that one state, whatever is written meanwhile. Meant to be
    /// short-lived: the store keeps what a view sees while it lives.
    fn read_view(&self) -> Arc<dyn FullReader>;
}

/// Every reader and writer of a store.
pub trait FullProvider:
    ReaderFactory + BlockWriter + StateWriter + HashedStateWriter + MetadataProvider + TriePruner
{
}

impl<T> FullProvider for T where
    T: ReaderFactory
        + BlockWriter
        + StateWriter
        + HashedStateWriter
        + MetadataProvider
        + TriePruner
{
}

/// The state after canonical block `number`: a [`TrieState`] under its header's state root;
/// `None` when the block is not held.
///
/// # Errors
/// [`ProviderError`] when the header cannot be read.
pub fn state_by_block_number(
    provider: Arc<dyn FullReader>,
    number: u64,
) -> ProviderResult<Option<TrieState>> {
    let Some(header) = provider.header_by_number(number)? else { return Ok(None) };
    Ok(Some(TrieState { store: provider, root: header.state_root }))
}
