//! Shared types of gigagas: the chain specification (fork schedule), the block input handed to
//! the executor, and sender recovery.
//!
//! The fork schedule is alloy-hardforks' mainnet schedule as exposed by alloy-evm's
//! [`EthSpec`](alloy_evm::eth::spec::EthSpec): Frontier through Cancun by block number / timestamp,
//! and the later forks (Prague, Osaka, BPO, Amsterdam) ready for the conformance suites.

mod block;
mod chain_spec;
mod error;

pub use block::BlockInput;
pub use chain_spec::ChainSpec;
pub use error::RecoveryError;
