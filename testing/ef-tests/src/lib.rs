//! Conformance: Ethereum BlockchainTests fixtures (ethereum/tests, execution-spec-tests) run
//! through gigagas' own pipeline — header checks, the sequential BAL builder, the parallel
//! executor driven by that BAL, header commitments and the state-root stage.
//!
//! [`run_path`] walks files and folders and returns one [`CaseResult`] per test case;
//! `gigagas test-fixtures` prints them as a table or JSON.

pub mod fixture;
/// The header checks, now in `gigagas-primitives` (the node uses them too).
pub use gigagas_primitives::header;
mod runner;
pub mod state;
mod suite;

pub use gigagas_primitives::header::genesis_header;
pub use runner::{run_chain, run_test, BlockRejection, ChainBlock, RunOptions, TestFailure};
pub use suite::{
    run_path, summarize, CaseResult, CaseStatus, FolderSummary, SkipList, SkipListError,
};
