//! gigagas stages: what turns blocks into a stored chain.
//!
//! - [`genesis`]: `init` — a geth-format genesis file becomes block 0 of a [`Storage`]: flat
//!   state, trie nodes of the genesis state root, header, and the genesis file itself (the chain
//!   specification of the datadir).
//! - [`import`]: blocks on top of the stored head, each through the execution stage (the
//!   sequential reference over the stored state, read through a shared cache; header checks;
//!   `gasUsed`, receipts root, logs bloom, requests hash) and the state-root stage (the block's
//!   diff applied to the stored trie nodes, storage tries in parallel), then committed
//!   atomically. The state root of block N and the commit overlap with the execution of block
//!   N + 1, which reads N's changes from an in-memory overlay until N is committed.
//!
//! [`Storage`]: gigagas_storage::Storage

pub mod builder;
mod error;
pub mod genesis;
pub mod import;
mod overlay;
pub mod pool;
mod pre_byzantium;
pub mod tree;
pub mod trie_state;

pub use builder::{next_gas_limit, BuiltPayload, PayloadAttributes};
pub use error::ImportError;
pub use genesis::{init_genesis, stored_chain_spec, GenesisInit};
pub use import::{import_blocks, import_blocks_with, merge_updates, ImportedBlock};
pub use pool::{decode_raw, PoolContent, PoolError, PooledTx, TxPool};
pub use tree::{BlockTree, CanonicalChange, Forkchoice, InvalidForkchoice, PayloadStatus};
pub use trie_state::{TrieReadError, TrieState};
