//! Conformance: Ethereum BlockchainTests fixtures (ethereum/tests, execution-spec-tests) run
//! through gigagas' own pipeline — header checks, the sequential BAL builder, the parallel
//! executor driven by that BAL, header commitments and the state-root stage.
//!
//! [`run_path`] walks files and folders and returns one [`CaseResult`] per test case;
//! `gigagas test-fixtures` prints them as a table or JSON.

pub mod fixture;
pub mod header;
mod runner;
pub mod state;
mod suite;

pub use runner::{genesis_header, run_chain, run_test, AmsterdamRules, ChainBlock, RunOptions};
pub use suite::{run_path, summarize, CaseResult, CaseStatus, FolderSummary, SkipList};
