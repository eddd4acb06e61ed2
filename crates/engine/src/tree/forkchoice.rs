//! Fork choice (`engine_forkchoiceUpdated`): the head's branch made canonical — handed to the
//! background persistence when it extends the current head, else committed now after an
//! unwind to the common ancestor (a reorg) — safe and finalized checked against it, and the
//! one error of an update ([`ForkchoiceError`]): refused (execution-apis -38002) or an
//! internal fault.

use super::{
    context::TreeContext, state::TreeState, CanonicalChange, Forkchoice, InvalidForkchoice,
    PayloadStatus, KEEP_BLOCKS,
};
use alloy_primitives::B256;
use gigagas_chain_state::ExecutedBlockWithTrie;
use gigagas_storage_api::ProviderError;
use gigagas_validation::{ImportError, ImportedBlock};
use std::{sync::Arc, time::Instant};

/// Why a forkchoice update did not complete.
#[derive(Debug, thiserror::Error)]
pub enum ForkchoiceError {
    /// The update is refused: safe or finalized is not a canonical ancestor of the head, or
    /// the reorg would unwind the finalized block or more than [`KEEP_BLOCKS`] blocks.
    #[error(transparent)]
    Invalid(#[from] InvalidForkchoice),
    /// A fault of ours (store, trie, background persistence): no verdict on the update.
    #[error(transparent)]
    Internal(#[from] ImportError),
}

impl ForkchoiceError {
    fn invalid(reason: String) -> Self {
        Self::Invalid(InvalidForkchoice(reason))
    }
}

impl From<ForkchoiceError> for gigagas_engine_primitives::EngineError {
    fn from(e: ForkchoiceError) -> Self {
        match e {
            ForkchoiceError::Invalid(e) => Self::InvalidForkchoice(e),
            ForkchoiceError::Internal(e) => Self::Internal(e),
        }
    }
}

impl From<ProviderError> for ForkchoiceError {
    fn from(e: ProviderError) -> Self {
        Self::Internal(ImportError::Storage(e))
    }
}

impl TreeContext {
    /// [`super::BlockTree::forkchoice_updated`] on `state`.
    pub(super) fn forkchoice_updated(
        &self,
        state: &mut TreeState,
        head: B256,
        safe: B256,
        finalized: B256,
    ) -> Result<(PayloadStatus, CanonicalChange), ForkchoiceError> {
        self.persistence_fault(state)?;
        if let Some((latest, reason)) = state.invalid.get(&head) {
            let status = PayloadStatus::Invalid { latest_valid_hash: latest, reason };
            return Ok((status, CanonicalChange::default()));
        }
        let Some((mut layers, mut base)) = self.branch(state, head)? else {
            return Ok((PayloadStatus::Syncing, CanonicalChange::default()));
        };
        let current = state.forkchoice;
        let mut change = CanonicalChange::default();
        let extends = current.head == base
            || layers
                .iter()
                .any(|b| (b.executed.block.number, b.executed.block.hash) == current.head);
        if let (Some(persistence), true) = (&self.persistence, extends) {
            // The head's branch holds the current head: hand the blocks above what was queued
            // to the persistence thread, lowest first.
            let target = state.persist_target;
            let queue: Vec<Arc<ExecutedBlockWithTrie>> = layers
                .iter()
                .rev()
                .filter(|b| b.executed.block.number > target.0)
                .cloned()
                .collect();
            if let Some(last) = queue.last() {
                state.persist_target = (last.executed.block.number, last.executed.block.hash);
            }
            persistence.queue(queue);
        } else {
            if self.persistence.is_some() {
                // A reorg: the store must hold what was queued first, and the branch is read
                // again against it.
                self.drain_persistence(state)?;
                (layers, base) = match self.branch(state, head)? {
                    Some(branch) => branch,
                    None => return Ok((PayloadStatus::Syncing, CanonicalChange::default())),
                };
            }
            let committed = self.commit_branch(head, &layers, base, current);
            // Also after a failed commit: the blocks before it are stored.
            state.persist_target = self.store.best_block()?.ok_or(ImportError::NotInitialized)?;
            change = committed?;
        }
        // The head's branch: in memory (not yet committed, or being committed), else stored.
        let canonical = |h: &B256| -> Result<Option<u64>, ProviderError> {
            match layers.iter().find(|b| b.executed.block.hash == *h) {
                Some(b) => Ok(Some(b.executed.block.number)),
                None => self.canonical(h),
            }
        };
        let head_number = canonical(&head)?.ok_or(ImportError::NotInitialized)?;
        let lookup = |h: B256, what: &str| -> Result<Option<(u64, B256)>, ForkchoiceError> {
            if h == B256::ZERO {
                return Ok(None);
            }
            match canonical(&h)? {
                Some(n) if n <= head_number => Ok(Some((n, h))),
                _ => Err(ForkchoiceError::invalid(format!(
                    "{what} block {h} is not a canonical ancestor of the head"
                ))),
            }
        };
        let safe = lookup(safe, "safe")?;
        let finalized = lookup(finalized, "finalized")?;
        state.forkchoice = Forkchoice {
            head: (head_number, head),
            safe: safe.or(current.safe.filter(|s| s.0 <= head_number)),
            finalized: finalized.or(current.finalized.filter(|f| f.0 <= head_number)),
        };
        // Forget blocks far below the head, and branches below finalized.
        let floor = head_number.saturating_sub(KEEP_BLOCKS);
        let final_number = finalized.map_or(0, |f| f.0);
        state.blocks.retain(|h, b| {
            let n = b.executed.block.number;
            n > floor && (n > final_number || canonical(h).ok().flatten().is_some())
        });
        state.buffer.remove_finalized(final_number);
        Ok((PayloadStatus::Valid(head), change))
    }

    /// Makes `head`'s branch (`layers` over the canonical block `base`) canonical in the store
    /// now: unwinds the store to `base` when `base` is not its head (a reorg, refused below the
    /// finalized block of `current` or deeper than [`KEEP_BLOCKS`]), then commits `layers`,
    /// lowest first.
    fn commit_branch(
        &self,
        head: B256,
        layers: &[Arc<ExecutedBlockWithTrie>],
        base: (u64, B256),
        current: Forkchoice,
    ) -> Result<CanonicalChange, ForkchoiceError> {
        let stored_head = self.store.best_block()?.ok_or(ImportError::NotInitialized)?;
        let mut change = CanonicalChange::default();
        if base != stored_head {
            // Reorg: `base` is a canonical ancestor of the stored head.
            if let Some(f) = current.finalized {
                if base.0 < f.0 {
                    return Err(ForkchoiceError::invalid(format!(
                        "head {head} builds on block {} {}, below the finalized block {}",
                        base.0, base.1, f.0
                    )));
                }
            }
            if stored_head.0 - base.0 > KEEP_BLOCKS {
                return Err(ForkchoiceError::invalid(format!(
                    "reorg of {} blocks, deeper than {KEEP_BLOCKS}",
                    stored_head.0 - base.0
                )));
            }
            // One write: a reader's view of the store holds the old branch or `base`, never a
            // part of the unwind; the new branch is published once the store stands at `base`.
            change.unwound = self.unwind_to(base, stored_head)?;
            self.memory.update_chain(base, layers.iter().rev().cloned().collect());
        }
        for b in layers.iter().rev() {
            let start = Instant::now();
            self.commit(&b.executed, &b.nodes)?;
            change
                .committed
                .push(ImportedBlock { commit: start.elapsed(), ..b.executed.block.clone() });
        }
        Ok(change)
    }

    /// [`super::BlockTree::persisted_forkchoice`] on `state`.
    pub(super) fn persisted_forkchoice(
        &self,
        state: &TreeState,
    ) -> Result<Forkchoice, ProviderError> {
        let forkchoice = state.forkchoice;
        let Some(stored) = self.store.best_block()? else { return Ok(forkchoice) };
        if forkchoice.head.0 <= stored.0 {
            return Ok(forkchoice);
        }
        let clamp = |b: Option<(u64, B256)>| b.map(|b| if b.0 > stored.0 { stored } else { b });
        Ok(Forkchoice {
            head: stored,
            safe: clamp(forkchoice.safe),
            finalized: clamp(forkchoice.finalized),
        })
    }
}
