//! gigagas block validation: what turns one block into a stored block (reth's payload
//! validator and its execution and merkle stages, for one block), and the chain's first block.
//!
//! - [`block`]: the stages of one block — [`execute_block`] (header checks; sender recovery;
//!   execution by the sequential reference over the given state, read through a shared cache,
//!   or by the parallel executor driven by a given BAL; `gasUsed`, receipts root, logs bloom,
//!   requests hash and BAL hash against the header) makes an [`ExecutedBlock`],
//!   [`state_root_stage`] applies its diff to the parent's trie nodes (storage tries in
//!   parallel) and checks the root, [`commit_executed`] writes it atomically. The engine tree
//!   (`gigagas-engine`) drives them for payloads and chains of payloads — sync's rounds and the
//!   file import, each block's root and commit overlapping the next block's execution — and
//!   the payload builder (`gigagas-payload`) for the blocks it builds.
//! - [`bal_apply`]: a block's state from its BAL alone, no execution ([`apply_bal_block`]):
//!   snap/2's catch-up from a snap-synced pivot to the head.
//! - `bal_root`: with a given EIP-7928 BAL the state root is computed from the BAL beside the
//!   parallel execution, and kept when the executed updates match the BAL's.
//! - [`overlay`]: the state of a block's parent: the stored state under the diffs of executed,
//!   uncommitted ancestors.
//! - [`genesis`]: `init` — a geth-format genesis file becomes block 0 of a store (any
//!   `gigagas-storage-api` provider): flat state, trie nodes of the genesis state root, header,
//!   and the genesis file itself (the chain specification of the datadir).
//! - [`witness`]: a block's execution witness (`debug_executionWitness`): [`record_witness`]
//!   notes what executing it reads and keeps the trie nodes its reads and its root update
//!   resolve; [`execute_witness`] validates the block from a witness alone.
//! - [`export`]: geth's export file format, each block followed by its EIP-7928 BAL when the
//!   file carries one.

pub mod bal_apply;
mod bal_root;
pub mod block;
mod error;
pub mod export;
pub mod genesis;
pub mod overlay;
mod pre_byzantium;
mod priors;
pub mod witness;

pub use bal_apply::{apply_bal_block, BalApplied, BalBlock};
pub use block::{
    account_updates, commit_executed, execute_block, executed_from_build, merge_updates,
    source_fault, state_root_stage, BalIo, ExecutedBlock, GivenBal, ImportedBlock, Prewarming,
};
pub use error::{ImportError, UnwindError};
pub use export::ExportedBlock;
pub use genesis::{genesis_block, init_genesis, stored_chain_spec, GenesisBlock, GenesisInit};
pub use overlay::{Overlay, PendingDiff};
pub use priors::PreStatePriors;
pub use witness::{execute_witness, record_witness, Witness, WitnessError, WitnessRecord};
