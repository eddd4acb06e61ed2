//! Backfill: a chain of payloads validated in one call, the state root of each block computed
//! while the next one executes — the overlap `gigagas import` has — for sync.
//!
//! Flow: block i executes on its parent's state; then, at the same time, block i + 1 executes
//! on block i's changes (an overlay of its diff, before its root is known) and block i's state
//! root is computed from the trie nodes of the blocks below it — and, when the caller asks to
//! commit (a node that follows its peers, with no consensus client to choose the head), block i
//! is committed right after its root, still overlapping block i + 1's execution. Block i + 1
//! reads block i's changes from the overlay first, so the store changing underneath gives it
//! the same values. Block i's verdict is recorded as `newPayload` records it
//! (`payload::settle`); when it is not VALID, block i + 1's execution is dropped unjudged.

use super::{
    context::TreeContext,
    payload::{keep, reject},
    state::{ParentState, TreeState},
    BlockTree, CanonicalChange, Forkchoice, PayloadStatus, KEEP_BLOCKS,
};
use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::B256;
use gigagas_bal::BlockAccessList;
use gigagas_chain_state::ExecutedBlockWithTrie;
use gigagas_validation::{state_root_stage, ExecutedBlock, ImportError, ImportedBlock};
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

/// One payload of a backfill.
#[derive(Debug, Clone)]
pub struct BackfillPayload {
    /// The block (its hash checked by the caller, as for `newPayload`).
    pub block: Block<TxEnvelope>,
    /// Its RLP length (bytes; the EIP-7934 size check).
    pub rlp_len: usize,
    /// Its EIP-7928 BAL, when it came with one: the parallel executor runs driven by it.
    pub bal: Option<BlockAccessList>,
}

/// A verdict and, when VALID and executed here, the block's figures.
pub type Verdict = (PayloadStatus, Option<ImportedBlock>);

/// What a backfill did: a verdict per payload judged, and the blocks it committed.
#[derive(Debug, Default)]
pub struct Backfilled {
    /// The verdicts in order, up to and including the first that is not VALID.
    pub verdicts: Vec<Verdict>,
    /// The blocks committed (made canonical) when the backfill was asked to commit.
    pub change: CanonicalChange,
    /// The consensus failure of the payload found INVALID, typed (its verdict carries it as
    /// text); `None` when none was, or when it was known invalid before.
    pub invalid: Option<ImportError>,
}

/// A block executed whose state root is still to be computed, the state it executed on, and
/// its execution time.
struct Pending {
    executed: ExecutedBlock,
    parent: ParentState,
    execution: Duration,
}

impl Pending {
    fn hash(&self) -> B256 {
        self.executed.block.hash
    }

    fn parent_hash(&self) -> B256 {
        self.executed.header.parent_hash
    }
}

/// A block's trie nodes, state-root time and, when it was committed, commit time.
type Rooted = (Vec<gigagas_trie::EncodedNode>, Duration, Option<Duration>);

impl BlockTree {
    /// `engine_newPayload` for a chain of payloads, each the child of the one before (the first
    /// on any known block): the same checks and verdicts, with the state root of each block
    /// computed while the next one executes. With `commit`, each VALID block that extends the
    /// canonical head is also committed and becomes the head (as a forkchoice update to it
    /// would, safe and finalized unchanged), its commit overlapping the next execution too.
    /// Stops after the first verdict that is not VALID (the payloads after it are not judged).
    ///
    /// # Errors
    /// [`ImportError`] for a fault of ours (store, trie node, a read during execution): no
    /// verdict; the blocks found VALID before it stay in the tree (and committed ones in the
    /// store).
    pub fn new_payloads(
        &mut self,
        payloads: Vec<BackfillPayload>,
        commit: bool,
    ) -> Result<Backfilled, ImportError> {
        self.new_payloads_with(payloads, commit, &mut |_| {})
    }

    /// [`Self::new_payloads`] over payloads as they come (a file decoded block by block),
    /// calling `on_committed` with each block as it is committed (its figures, commit time
    /// included). Executed blocks far below the head are forgotten as the head moves, so a
    /// chain of any length holds [`KEEP_BLOCKS`] blocks in memory at most.
    ///
    /// # Errors
    /// As [`Self::new_payloads`].
    pub fn new_payloads_with(
        &mut self,
        payloads: impl IntoIterator<Item = BackfillPayload>,
        commit: bool,
        on_committed: &mut dyn FnMut(&ImportedBlock),
    ) -> Result<Backfilled, ImportError> {
        if self.backfill_active() {
            let verdicts: Vec<Verdict> =
                payloads.into_iter().take(1).map(|_| (PayloadStatus::Syncing, None)).collect();
            return Ok(Backfilled { verdicts, change: CanonicalChange::default(), invalid: None });
        }
        let pruner = &mut self.pruner;
        let mut committed = |block: &ImportedBlock| {
            on_committed(block);
            if let Some(pruner) = pruner.as_mut() {
                pruner.on_head(block.number);
            }
        };
        let out = self.ctx.new_payloads(&mut self.state, payloads, commit, &mut committed);
        if let Ok(out) = &out {
            // The payloads a consensus client sent before sync fetched their parents.
            for (status, _) in &out.verdicts {
                if let PayloadStatus::Valid(hash) = status {
                    self.ctx.connect_buffered(&mut self.state, *hash);
                }
            }
        }
        if commit {
            // Also after a failure: the blocks before it were committed.
            self.ctx.publish_canonical(&self.state)?;
        }
        out
    }
}

impl TreeContext {
    fn new_payloads(
        &self,
        state: &mut TreeState,
        payloads: impl IntoIterator<Item = BackfillPayload>,
        commit: bool,
        on_committed: &mut dyn FnMut(&ImportedBlock),
    ) -> Result<Backfilled, ImportError> {
        // Commits here extend the store's head: it must hold what persistence was handed.
        self.drain_persistence(state)?;
        let mut out = Backfilled::default();
        let mut pending: Option<Pending> = None;
        for BackfillPayload { block, rlp_len, bal } in payloads {
            let hash = block.header.hash_slow();
            let parent_hash = block.header.parent_hash;
            // The root of block i overlaps block i + 1's execution already: none beside.
            let given = self.given(bal.as_ref(), None);
            let next = match pending.take() {
                Some(mut p) if p.hash() == parent_hash => {
                    // Block i + 1 executes on block i's changes while block i's root is computed
                    // (and block i committed). When block i extends the stored head (every
                    // block below it committed), block i + 1 reads a view of the store taken
                    // before block i's commit under block i's diff alone, and its root the
                    // store's trie nodes under block i's.
                    let commit_it = commit && state.forkchoice.head.1 == p.parent_hash();
                    let base = match commit_it {
                        true => self.stored_view(),
                        false => p.parent.base.clone(),
                    };
                    let mut child = ParentState {
                        header: p.executed.header.clone(),
                        base,
                        diffs: vec![p.executed.diff.clone()],
                        layers: Vec::new(),
                    };
                    if !commit_it {
                        child.diffs.extend(p.parent.diffs.iter().cloned());
                        child.layers.clone_from(&p.parent.layers);
                    }
                    let (next, rooted) = rayon::join(
                        || self.execute_on(&child, block, rlp_len, None, given),
                        || self.root_and_commit(&mut p.executed, &p.parent, commit_it),
                    );
                    let Some(kept) = self.record(state, p, rooted, &mut out, on_committed)? else {
                        return Ok(out);
                    };
                    child.layers.insert(0, kept);
                    next.map(|(executed, execution)| Pending { executed, parent: child, execution })
                }
                previous => {
                    if let Some(p) = previous {
                        if !self.finish(state, p, commit, &mut out, on_committed)? {
                            return Ok(out);
                        }
                    }
                    if let Some(status) = self.known_verdict(state, hash, parent_hash)? {
                        let valid = matches!(status, PayloadStatus::Valid(_));
                        out.verdicts.push((status, None));
                        if valid {
                            continue;
                        }
                        return Ok(out);
                    }
                    let Some(parent) = self.parent_state(state, parent_hash)? else {
                        out.verdicts.push((PayloadStatus::Syncing, None));
                        return Ok(out);
                    };
                    self.execute_on(&parent, block, rlp_len, None, given)
                        .map(|(executed, execution)| Pending { executed, parent, execution })
                }
            };
            match next {
                Ok(next) => pending = Some(next),
                Err(e) if e.is_internal() => return Err(e),
                Err(e) => {
                    out.verdicts.push((reject(state, hash, parent_hash, &e), None));
                    out.invalid = Some(e);
                    return Ok(out);
                }
            }
        }
        if let Some(p) = pending {
            self.finish(state, p, commit, &mut out, on_committed)?;
        }
        Ok(out)
    }

    /// The state root of `executed` (checked against its header) and, with `commit`, its
    /// commit to the store.
    fn root_and_commit(
        &self,
        executed: &mut ExecutedBlock,
        parent: &ParentState,
        commit: bool,
    ) -> Result<Rooted, ImportError> {
        let start = Instant::now();
        let nodes =
            state_root_stage(executed, &parent.nodes(&*self.store), self.preserved.as_ref())?;
        let root = start.elapsed();
        let committed = if commit {
            let start = Instant::now();
            self.commit(executed, &nodes)?;
            Some(start.elapsed())
        } else {
            None
        };
        Ok((nodes, root, committed))
    }

    /// Records the verdict on pending block `p`, whose root (and commit) is done; makes it the
    /// head when it was committed. The kept block when VALID.
    fn record(
        &self,
        state: &mut TreeState,
        p: Pending,
        rooted: Result<Rooted, ImportError>,
        out: &mut Backfilled,
        on_committed: &mut dyn FnMut(&ImportedBlock),
    ) -> Result<Option<Arc<ExecutedBlockWithTrie>>, ImportError> {
        let (hash, parent_hash) = (p.hash(), p.parent_hash());
        let (nodes, root, committed) = match rooted {
            Ok(rooted) => rooted,
            Err(e) if e.is_internal() => return Err(e),
            Err(e) => {
                out.verdicts.push((reject(state, hash, parent_hash, &e), None));
                out.invalid = Some(e);
                return Ok(None);
            }
        };
        let (status, kept) = keep(state, hash, (p.executed, nodes, p.execution, root));
        let summary = kept.as_ref().map(|b| b.executed.block.clone());
        if let (Some(commit), Some(block)) = (committed, &summary) {
            state.forkchoice = Forkchoice { head: (block.number, hash), ..state.forkchoice };
            state.persist_target = (block.number, hash);
            let committed = ImportedBlock { commit, ..block.clone() };
            on_committed(&committed);
            out.change.committed.push(committed);
            // Forget blocks far below the new head, as a forkchoice update does.
            let floor = block.number.saturating_sub(KEEP_BLOCKS);
            state.blocks.retain(|_, b| b.executed.block.number > floor);
        }
        out.verdicts.push((status, summary));
        Ok(kept)
    }

    /// The state root (and commit) of a pending block alone, and its verdict; whether it was
    /// VALID.
    fn finish(
        &self,
        state: &mut TreeState,
        mut p: Pending,
        commit: bool,
        out: &mut Backfilled,
        on_committed: &mut dyn FnMut(&ImportedBlock),
    ) -> Result<bool, ImportError> {
        let commit_it = commit && state.forkchoice.head.1 == p.parent_hash();
        let rooted = self.root_and_commit(&mut p.executed, &p.parent, commit_it);
        Ok(self.record(state, p, rooted, out, on_committed)?.is_some())
    }
}
