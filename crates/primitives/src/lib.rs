//! Shared types of gigagas: the chain specification (fork schedule), the block input handed to
//! the executor, and sender recovery.
//!
//! The fork schedule is alloy-hardforks' (mainnet's: Frontier through Cancun by block number /
//! timestamp, with the later forks Prague, Osaka, BPO, Amsterdam ready), or any schedule built
//! with [`ForkSchedule`], such as a test network with its fork active from genesis.

mod block;
mod chain_spec;
mod error;
mod genesis_config;
pub mod header;
mod senders;
mod streamed;

pub use block::BlockInput;
pub use chain_spec::{ChainSpec, ForkSchedule};
pub use error::RecoveryError;
pub use genesis_config::GenesisConfigError;
pub use senders::SenderCache;
pub use streamed::{Senders, StreamedSenders};
