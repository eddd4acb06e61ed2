//! What the engine shares with those who talk to it (reth's `engine-primitives`): the
//! [`EngineHandle`] and the [`EngineMessage`]s it sends, the forkchoice ([`Forkchoice`]) and a
//! payload's verdict ([`PayloadStatus`]), what an update changed ([`CanonicalChange`]), the
//! [`EngineError`]s and the [`EngineEvent`]s the engine reports.
//!
//! Flow: the Engine API (`gigagas-rpc`), the network's importers and the dev miner send
//! messages through an [`EngineHandle`]; the engine task (`gigagas-engine`) answers each over
//! its oneshot channel and publishes the forkchoice on the handle's watch channel. Depending on
//! this crate, a caller needs none of the engine's tree, executor or storage.

mod error;
mod event;
mod forkchoice;
mod handle;
pub mod message;

pub use error::EngineError;
pub use event::{EngineEvent, EventHook};
pub use forkchoice::{CanonicalChange, Forkchoice, InvalidForkchoice, PayloadStatus};
pub use handle::EngineHandle;
pub use message::EngineMessage;
