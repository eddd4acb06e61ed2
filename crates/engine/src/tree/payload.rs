//! Payloads: `engine_newPayload` (a block executed on its parent's state, checked against its
//! header, kept until a forkchoice update makes it canonical), the verdicts remembered, and
//! payloads built on a parent's state (as jobs off the tree, [`PayloadJob`]) and kept as
//! executed.

use super::{
    context::TreeContext,
    state::{BufferedPayload, Executed, ParentState, TreeState},
    PayloadStatus,
};
use alloy_consensus::{Block, Header, TxEnvelope};
use alloy_primitives::{Address, B256};
use gigagas_bal::BlockAccessList;
use gigagas_chain_state::ExecutedBlockWithTrie;
use gigagas_payload::{build_payload, BuiltPayload, PayloadAttributes, PayloadParent};
use gigagas_primitives::ChainSpec;
use gigagas_storage_api::{FullProvider, ProviderError};
use gigagas_trie::NodeSource;
use gigagas_validation::{executed_from_build, state_root_stage, ImportError, ImportedBlock};
use std::{sync::Arc, time::Instant};

/// A payload build taken out of the tree ([`super::BlockTree::payload_job`]): the parent's
/// state — one read view of the store under the diffs and trie nodes of its executed,
/// uncommitted ancestors — to build on, on any thread, while the engine goes on and the store
/// moves (the view keeps what the job reads its parent's state).
#[derive(Debug)]
pub struct PayloadJob {
    chain: ChainSpec,
    store: Arc<dyn FullProvider>,
    hash: B256,
    parent: ParentState,
}

impl PayloadJob {
    /// The parent's header.
    pub fn parent_header(&self) -> &Header {
        &self.parent.header
    }

    /// The parent's state, as the job reads it (what the pool's candidates are picked
    /// against: senders' nonces and balances).
    pub fn parent_state(&self) -> Arc<dyn gigagas_state::StateSource> {
        self.parent.source()
    }

    /// Builds the payload on the parent with `attrs` from `candidates`
    /// ([`gigagas_payload::build_payload`]): executed, its state root and BAL computed.
    ///
    /// # Errors
    /// As [`gigagas_payload::build_payload`].
    pub fn build(
        self,
        attrs: &PayloadAttributes,
        candidates: &[(TxEnvelope, Address)],
        require_all: bool,
    ) -> Result<BuiltPayload, ImportError> {
        let nodes = self.parent.nodes(&*self.store);
        let on = PayloadParent {
            hash: self.hash,
            header: &self.parent.header,
            source: self.parent.source(),
            nodes: &nodes,
        };
        build_payload(&self.chain, &on, attrs, candidates, require_all)
    }
}

impl TreeContext {
    /// [`super::BlockTree::new_payload`] on `state`.
    pub(super) fn new_payload(
        &self,
        state: &mut TreeState,
        block: Block<TxEnvelope>,
        rlp_len: usize,
        transactions_root: Option<B256>,
        bal: Option<&BlockAccessList>,
    ) -> Result<(PayloadStatus, Option<ImportedBlock>), ImportError> {
        let hash = block.header.hash_slow();
        let parent_hash = block.header.parent_hash;
        if let Some(status) = self.known_verdict(state, hash, parent_hash)? {
            return Ok((status, None));
        }
        let Some(parent) = self.parent_state(state, parent_hash)? else {
            // Kept until its parent is known; executed then ([`Self::connect_buffered`]).
            let number = block.header.number;
            let bal = bal.cloned();
            let payload = BufferedPayload { block, rlp_len, transactions_root, bal };
            let now = Instant::now();
            state.buffer.expire(now);
            state.buffer.insert(hash, parent_hash, number, payload, now);
            return Ok((PayloadStatus::Syncing, None));
        };
        // With a BAL, the parallel executor's state root is computed from it beside execution.
        let nodes = parent.nodes(&*self.store);
        let beside = self.config.state_root_beside.then_some(&nodes as &(dyn NodeSource + Sync));
        let given = self.given(bal, beside);
        let executed = self.execute_on(&parent, block, rlp_len, transactions_root, given).and_then(
            |(mut executed, execution)| {
                let start = Instant::now();
                let trie_nodes = state_root_stage(&mut executed, &nodes, self.preserved.as_ref())?;
                // What execution waited for the root computed beside it is the root's share.
                let wait = executed.state_root_wait();
                Ok((executed, trie_nodes, execution.saturating_sub(wait), start.elapsed() + wait))
            },
        );
        settle(state, hash, parent_hash, executed)
            .map(|(status, block)| (status, block.map(|b| b.executed.block.clone())))
    }

    /// Executes the payloads buffered on `parent` (they came before it), and theirs in turn,
    /// now that `parent` has its verdict: on a VALID parent each is judged as a `newPayload`
    /// (kept when VALID, remembered when INVALID), on an INVALID one each is remembered INVALID
    /// as linking to it. A fault of ours drops the payload (it is not judged; the consensus
    /// client sends it again). Each verdict is logged.
    pub(super) fn connect_buffered(&self, state: &mut TreeState, parent: B256) {
        let mut parents = vec![parent];
        while let Some(parent) = parents.pop() {
            for child in state.buffer.take_children(&parent) {
                let hash = child.block.header.hash_slow();
                let number = child.block.header.number;
                let BufferedPayload { block, rlp_len, transactions_root, bal } = child;
                match self.new_payload(state, block, rlp_len, transactions_root, bal.as_ref()) {
                    Ok((status, _)) => {
                        tracing::debug!(target: "engine", number, %hash, status = status.name(),
                            "buffered payload connected to its parent");
                        parents.push(hash);
                    }
                    Err(e) => {
                        tracing::warn!(target: "engine", number, %hash, error = %e,
                            "buffered payload not judged: internal error");
                    }
                }
            }
        }
    }

    /// The verdict on payload `hash` without executing it: VALID when it is known (executed or
    /// canonical), INVALID when it or its parent was found invalid; `None` otherwise.
    pub(super) fn known_verdict(
        &self,
        state: &mut TreeState,
        hash: B256,
        parent_hash: B256,
    ) -> Result<Option<PayloadStatus>, ProviderError> {
        if state.blocks.contains_key(&hash) || self.canonical(&hash)?.is_some() {
            return Ok(Some(PayloadStatus::Valid(hash)));
        }
        if let Some((latest, reason)) = state.invalid.get(&hash) {
            let status = PayloadStatus::Invalid { latest_valid_hash: latest, reason };
            return Ok(Some(status));
        }
        if let Some((latest, reason)) = state.invalid.get(&parent_hash) {
            let reason = format!("links to invalid ancestor {parent_hash}: {reason}");
            state.invalid.insert(hash, latest, reason.clone());
            return Ok(Some(PayloadStatus::Invalid { latest_valid_hash: latest, reason }));
        }
        Ok(None)
    }

    /// [`super::BlockTree::payload_job`] on `state`.
    pub(super) fn payload_job(
        &self,
        state: &TreeState,
        parent: B256,
    ) -> Result<Option<PayloadJob>, ImportError> {
        let Some(parent_state) = self.parent_state(state, parent)? else { return Ok(None) };
        Ok(Some(PayloadJob {
            chain: self.chain.clone(),
            store: self.store.clone(),
            hash: parent,
            parent: parent_state,
        }))
    }

    /// [`super::BlockTree::insert_built`] on `state`.
    pub(super) fn insert_built(
        &self,
        state: &mut TreeState,
        built: &BuiltPayload,
    ) -> Result<bool, ImportError> {
        let parent = built.block.header.parent_hash;
        if state.blocks.contains_key(&built.hash) {
            return Ok(true);
        }
        let Some(parent_state) = self.parent_state(state, parent)? else { return Ok(false) };
        let executed = executed_from_build(
            &self.chain,
            &parent_state.header,
            &built.block,
            &built.outcome,
            (*built.state_root).clone(),
            built.build_time,
            built.senders.clone(),
        );
        let Some(mut executed) = executed else { return Ok(false) };
        // Takes the builder's root (no trie is computed again) and checks it is the header's.
        let nodes = parent_state.nodes(&*self.store);
        let trie_nodes = match state_root_stage(&mut executed, &nodes, None) {
            Ok(trie_nodes) => trie_nodes,
            Err(e) if e.is_internal() => return Err(e),
            Err(e) => {
                tracing::warn!(target: "engine", hash = %built.hash, error = %e,
                    "built payload not kept as executed");
                return Ok(false);
            }
        };
        let done = Ok((executed, trie_nodes, built.build_time, std::time::Duration::ZERO));
        let (status, _) = settle(state, built.hash, parent, done)?;
        Ok(matches!(status, PayloadStatus::Valid(_)))
    }
}

/// Records the verdict on payload `hash`: a block executed and state-rooted is kept (VALID),
/// a consensus failure remembered (INVALID, its parent the latest valid hash). A fault of
/// ours (store, trie node, a database read during execution) is no verdict: it is returned
/// as the error, not remembered, and the payload can come again.
pub(super) fn settle(
    state: &mut TreeState,
    hash: B256,
    parent_hash: B256,
    done: Result<Executed, ImportError>,
) -> Result<(PayloadStatus, Option<Arc<ExecutedBlockWithTrie>>), ImportError> {
    match done {
        Ok(done) => Ok(keep(state, hash, done)),
        Err(e) if e.is_internal() => Err(e),
        Err(e) => Ok((reject(state, hash, parent_hash, &e), None)),
    }
}

/// Remembers payload `hash` as INVALID for the consensus failure `e` (its parent the latest
/// valid hash); the verdict.
pub(super) fn reject(
    state: &mut TreeState,
    hash: B256,
    parent_hash: B256,
    e: &ImportError,
) -> PayloadStatus {
    let reason = e.to_string();
    state.invalid.insert(hash, Some(parent_hash), reason.clone());
    PayloadStatus::Invalid { latest_valid_hash: Some(parent_hash), reason }
}

/// Keeps the executed, state-rooted block `hash` (VALID).
pub(super) fn keep(
    state: &mut TreeState,
    hash: B256,
    (mut executed, nodes, execution, state_root): Executed,
) -> (PayloadStatus, Option<Arc<ExecutedBlockWithTrie>>) {
    executed.block.execution = execution;
    executed.block.state_root = state_root;
    let block = Arc::new(ExecutedBlockWithTrie::new(executed, nodes));
    state.blocks.insert(hash, block.clone());
    (PayloadStatus::Valid(hash), Some(block))
}
