//! State providers for the executor.
//!
//! - [`PreState`]: an in-memory pre-block state (accounts, storage, bytecodes, ancestor hashes)
//!   that implements revm's [`DatabaseRef`](revm::DatabaseRef), shared read-only by every worker.
//! - [`mainnet`]: the loader for the mainnet block data set in `../shared/data/mainnet`.

pub mod mainnet;
mod pre_state;

pub use pre_state::{PreState, StateError};
