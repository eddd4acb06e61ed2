//! gigagas's chain state (reth's `chain-state` and `BlockchainProvider`): the canonical blocks
//! the engine has executed but the store does not hold yet, and the reader of the chain that
//! sees them.
//!
//! Flow: the engine tree keeps each executed block as an [`ExecutedBlockWithTrie`] (`block`);
//! a forkchoice update publishes the canonical ones above the store's head to the shared
//! [`CanonicalInMemoryState`] (`in_memory`) before they are committed, and drops each from it
//! once the store holds it; JSON-RPC and the network read through a [`BlockchainProvider`]
//! (`provider`): memory first, the store second, and the head's state as the in-memory diffs
//! over the store's flat state (`latest`). The head a reader is told (the engine's forkchoice)
//! is published after the blocks, so it can always be read. Each move of the head is
//! broadcast as a [`CanonStateNotification`] (what pool maintenance follows).

mod block;
mod in_memory;
mod latest;
mod provider;

pub use block::ExecutedBlockWithTrie;
pub use in_memory::{CanonStateNotification, CanonicalChain, CanonicalInMemoryState};
pub use provider::BlockchainProvider;
