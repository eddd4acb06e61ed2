//! State providers for the executor.
//!
//! - [`PreState`]: an in-memory pre-block state (accounts, storage, bytecodes, ancestor hashes)
//!   that implements revm's [`DatabaseRef`](revm::DatabaseRef), shared read-only by every worker.
//! - [`mainnet`]: the loader for the mainnet block data set in `../shared/data/mainnet`.
//! - [`proofs`]: the loader for `../shared/data/mainnet-proofs` (blocks with `eth_getProof`
//!   answers at the parent and at the block).

pub mod mainnet;
mod pre_state;
pub mod proofs;

pub use pre_state::{CacheStats, PreState, SourceError, StateError, StateSource, PREFETCH_CHUNK};
