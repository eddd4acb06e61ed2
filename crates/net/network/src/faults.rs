//! Injected faults for devnets that test block propagation under loss and hostile relays
//! (`--net.loss`, `--net.forge-chunks`): present only in a build with the `fault-injection`
//! feature (`make build-faults`); without it [`Faults`] is empty and its checks are constant
//! `false`, so the production binary carries no fault path.

#[cfg(feature = "fault-injection")]
use rand::Rng;

/// The faults a node injects.
#[cfg(feature = "fault-injection")]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Faults {
    /// Fraction (0 to 1) of the block-propagation frames (rlnc/rs chunks, decoded notices) and
    /// gossipsub messages this node drops on arrival, as if lost on the way: a fault injected
    /// above the transport, since TCP itself never loses a byte (`--net.loss`). Counted as
    /// `net_chunks_total{outcome="lost"}`.
    pub loss: f64,
    /// This node alters one bit of every rlnc/rs chunk it sends (in the last 32 bytes: a data
    /// scalar of an RLNC chunk, the proof or shard of an RS one), as a hostile relay would;
    /// honest nodes must refuse the chunks, ban it and still decode (`--net.forge-chunks`).
    pub forge: bool,
}

/// No faults: a build without the `fault-injection` feature injects none (`Faults::default()`
/// is the only value).
#[cfg(not(feature = "fault-injection"))]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Faults {
    _none: (),
}

impl Faults {
    /// Whether an arriving frame or message is dropped, drawn from `rng`.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn lose(&self, rng: &mut impl rand::RngCore) -> bool {
        self.loss > 0.0 && rng.gen::<f64>() < self.loss.clamp(0.0, 1.0)
    }

    /// Never: no fault is injected.
    #[cfg(not(feature = "fault-injection"))]
    pub(crate) fn lose(&self, _rng: &mut impl rand::RngCore) -> bool {
        false
    }

    /// Alters one bit of the chunk `body` about to be sent when forging.
    #[cfg(feature = "fault-injection")]
    pub(crate) fn forge(&self, body: &mut [u8]) {
        if self.forge && body.len() >= 32 {
            let at = body.len() - 32;
            body[at] ^= 1;
        }
    }

    /// Nothing: no fault is injected.
    #[cfg(not(feature = "fault-injection"))]
    pub(crate) fn forge(&self, _body: &mut [u8]) {}
}
