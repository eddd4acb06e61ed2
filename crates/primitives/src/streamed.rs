//! A block's senders handed to the executor before all of them are recovered.
//!
//! Flow: [`StreamedSenders::lookup`] takes the senders the pool recovered before the block
//! ([`crate::SenderCache`]) → [`StreamedSenders`] with those slots set and the rest empty →
//! [`StreamedSenders::recover_missing`] on a thread of its own from before the BAL's reads,
//! ahead of the workers, until [`StreamedSenders::finish`] → the parallel executor's worker that
//! claims transaction `i` calls [`Senders::get`]: a set slot is taken, an empty one recovered
//! there and then (so that a transaction starts as soon as its own sender is known, and no
//! recovery stage comes before execution) → [`Senders::to_vec`] after execution, for what is
//! stored with the block. A recovery that fails is the error of the transaction that needed it.

use crate::{BlockInput, ChainSpec, RecoveryError, SenderCache};
use alloy_primitives::Address;
use rayon::prelude::*;
use std::sync::{
    atomic::{AtomicBool, Ordering},
    OnceLock,
};

/// A block's senders as the executor takes them.
#[derive(Debug, Clone, Copy)]
pub enum Senders<'a> {
    /// Every sender recovered before execution, one per transaction.
    Recovered(&'a [Address]),
    /// Some known, the rest recovered when a transaction first needs its own.
    Streamed(&'a StreamedSenders),
}

impl<'a> From<&'a [Address]> for Senders<'a> {
    fn from(senders: &'a [Address]) -> Self {
        Self::Recovered(senders)
    }
}

impl<'a> From<&'a Vec<Address>> for Senders<'a> {
    fn from(senders: &'a Vec<Address>) -> Self {
        Self::Recovered(senders)
    }
}

impl<'a> From<&'a StreamedSenders> for Senders<'a> {
    fn from(senders: &'a StreamedSenders) -> Self {
        Self::Streamed(senders)
    }
}

impl Senders<'_> {
    /// The sender of `block`'s transaction `tx_index`, recovered now when it is not known yet.
    ///
    /// # Errors
    /// [`RecoveryError`] naming the block and the transaction (an invalid signature, or a
    /// sender other than the one claimed).
    ///
    /// # Panics
    /// When `tx_index` is past the senders given (one per transaction of `block`).
    pub fn get(&self, block: &BlockInput, tx_index: usize) -> Result<Address, RecoveryError> {
        match self {
            Self::Recovered(senders) => Ok(senders[tx_index]),
            Self::Streamed(streamed) => streamed.get(block, tx_index),
        }
    }

    /// Every sender, in transaction order, recovering in parallel (on the current rayon pool)
    /// the ones still unknown.
    ///
    /// # Errors
    /// As [`Self::get`], for the first transaction that fails.
    pub fn to_vec(&self, block: &BlockInput) -> Result<Vec<Address>, RecoveryError> {
        match self {
            Self::Recovered(senders) => Ok(senders.to_vec()),
            Self::Streamed(streamed) => {
                (0..streamed.slots.len()).into_par_iter().map(|i| streamed.get(block, i)).collect()
            }
        }
    }
}

/// A block's senders while they are being recovered: one slot per transaction, set once.
#[derive(Debug)]
pub struct StreamedSenders {
    slots: Vec<OnceLock<Address>>,
    /// EIP-2's low-`s` rule (from Homestead on).
    low_s: bool,
    /// How many slots were known when the block arrived.
    known: usize,
    /// Set when execution is over: [`StreamedSenders::recover_missing`] stops.
    done: AtomicBool,
}

impl StreamedSenders {
    /// `block`'s senders with those `known` holds (looked up by the hash of the block's own
    /// transaction, checked against the claimed ones as
    /// [`BlockInput::par_recover_cached`] does) set, the rest left for [`Self::recover_missing`]
    /// and the executor's workers ([`Senders::get`]): no recovery stage before execution.
    ///
    /// # Errors
    /// A known sender that differs from [`BlockInput::claimed_senders`].
    pub fn lookup(
        block: &BlockInput,
        chain: &ChainSpec,
        known: &SenderCache,
    ) -> Result<Self, RecoveryError> {
        Ok(Self::new(block.known_senders(known)?, chain.is_homestead(block.number())))
    }

    /// `block`'s senders, none known (no pool recovered any): every one left for
    /// [`Self::recover_missing`] and the executor's workers ([`Senders::get`]), so that their
    /// recovery runs beside the reads before execution instead of in a stage before them.
    pub fn unknown(block: &BlockInput, chain: &ChainSpec) -> Self {
        Self::new(vec![None; block.transactions.len()], chain.is_homestead(block.number()))
    }

    /// `known[i]` set for each transaction whose sender was recovered before (already checked
    /// against the block's claimed senders); `low_s` whether EIP-2 applies to the rest.
    fn new(known: Vec<Option<Address>>, low_s: bool) -> Self {
        let hits = known.iter().filter(|s| s.is_some()).count();
        let slots = known
            .into_iter()
            .map(|s| {
                let slot = OnceLock::new();
                if let Some(sender) = s {
                    let _ = slot.set(sender);
                }
                slot
            })
            .collect();
        Self { slots, low_s, known: hits, done: AtomicBool::new(false) }
    }

    /// How many senders were known before execution (taken from the pool's cache).
    pub fn known(&self) -> usize {
        self.known
    }

    /// Recovers, in transaction order on the calling thread, every sender still unknown: run
    /// beside the work before execution (the BAL's reads), it gets ahead of the workers, which
    /// take what it set and recover the rest themselves. A signature that does not recover is
    /// left for the transaction's worker to report.
    /// It stops at [`StreamedSenders::finish`] (execution over, by a verdict or an error).
    pub fn recover_missing(&self, block: &BlockInput) {
        for (i, slot) in self.slots.iter().enumerate() {
            if self.done.load(Ordering::Relaxed) {
                return;
            }
            if slot.get().is_none() {
                if let Ok(sender) = block.recover_one(i, self.low_s) {
                    let _ = slot.set(sender);
                }
            }
        }
    }

    /// Stops [`StreamedSenders::recover_missing`]: what execution did not need is left.
    pub fn finish(&self) {
        self.done.store(true, Ordering::Relaxed);
    }

    fn get(&self, block: &BlockInput, tx_index: usize) -> Result<Address, RecoveryError> {
        let slot = &self.slots[tx_index];
        if let Some(sender) = slot.get() {
            return Ok(*sender);
        }
        let sender = block.recover_one(tx_index, self.low_s)?;
        // Two threads recovering the same transaction find the same sender.
        Ok(*slot.get_or_init(|| sender))
    }
}
