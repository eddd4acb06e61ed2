//! gigagas stages: what turns blocks into a stored chain.
//!
//! - [`genesis`]: `init` — a geth-format genesis file becomes block 0 of a store (any `gigagas-storage-api` provider): flat
//!   state, trie nodes of the genesis state root, header, and the genesis file itself (the chain
//!   specification of the datadir).
//! - [`import`]: blocks on top of the stored head, each through the execution stage (the
//!   sequential reference over the stored state, read through a shared cache; header checks;
//!   `gasUsed`, receipts root, logs bloom, requests hash) and the state-root stage (the block's
//!   diff applied to the stored trie nodes, storage tries in parallel), then committed
//!   atomically. The state root of block N and the commit overlap with the execution of block
//!   N + 1, which reads N's changes from an in-memory overlay until N is committed.
//!
//! - [`export`]: geth's export file format, each block followed by its EIP-7928 BAL when the
//!   file carries one.
//!
//! - `bal_root`: with a given EIP-7928 BAL the state root is computed from the BAL beside the
//!   parallel execution, and kept when the executed updates match the BAL's.
//!
//! - [`ExecutedBlock`]: the one shape of an executed block, made by [`execute_block`], rooted by
//!   [`state_root_stage`], stored by [`commit_executed`]; the file import above, the engine tree
//!   (`gigagas-engine`) and the payload builder (`gigagas-payload`) all go through these stages.

mod bal_root;
mod error;
pub mod export;
pub mod genesis;
pub mod import;
pub mod overlay;
mod pre_byzantium;

pub use error::{ImportError, UnwindError};
pub use export::ExportedBlock;
pub use genesis::{init_genesis, stored_chain_spec, GenesisInit};
pub use import::{
    account_updates, commit_executed, execute_block, executed_from_build, import_blocks,
    import_blocks_with, merge_updates, source_fault, state_root_stage, BalIo, ExecutedBlock,
    FileBal, GivenBal, ImportOptions, ImportedBlock, Prewarming,
};
pub use overlay::{Overlay, PendingDiff};
