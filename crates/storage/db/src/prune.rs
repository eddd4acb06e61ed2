//! Pruning the trie nodes no kept state root reaches, offline or while blocks are committed.
//!
//! Trie nodes are stored by hash and shared by every trie that holds them, so a node one block
//! replaced may still be reached by another root, or by an identical subtree elsewhere (equal
//! storage tries share all their nodes). Deleting what a block replaced is therefore unsafe; what
//! is safe is deleting what no kept root reaches: mark, then sweep (geth's `snapshot
//! prune-state` does the same offline).
//!
//! Flow: what commits write recorded from here on → the roots to keep (the state roots of the
//! last blocks, the reorg window, read from the headers now) → the first
//! kept block recorded ([`Storage::pruned_below`]), so that readers of older state answer that
//! it is pruned instead of missing a node → mark: every node reachable from them, account trie
//! and, at each account's leaf, its storage trie, level by level, each level's nodes read on
//! `threads` threads in hash order (a node reached twice, as a shared subtree, is read once) →
//! sweep: every stored node neither marked nor written since the prune began deleted, in key
//! order → the family compacted, so that the space returns to the disk (the compaction writes
//! the kept nodes anew before it frees the old files: it needs free space of their size).
//!
//! Commits go on meanwhile. Every writer of trie nodes (a block's commit, a hashed batch, an
//! ingestion) records the hashes it writes while a prune runs ([`Storage::trie_writes`]), under
//! the same lock the sweep holds while it filters and deletes a batch: a node written before a
//! batch is deleted is spared, one written after it is written again. A block committed during
//! the prune reaches only nodes its parent reached (marked, or written since) and the nodes it
//! writes, so nothing it needs is deleted, as long as its parent is a kept root or a block
//! committed since.

use crate::{
    tables::{META, TRIE_NODES},
    Storage,
};
use alloy_primitives::{map::B256HashSet, B256};
use alloy_rlp::Decodable;
use alloy_trie::{nodes::TrieNode, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_storage_api::{
    BlockNumReader, HeaderProvider, KeepStates, ProviderError, PruneStats, TriePruner,
};
use std::{
    sync::{Mutex, MutexGuard},
    time::Instant,
};

/// The META key of the first block whose state the trie still holds after a prune.
const PRUNED_BELOW_KEY: &[u8] = b"trie-pruned-below";

/// Deletes per write batch of the sweep.
const SWEEP_BATCH: usize = 100_000;

/// Nodes a mark thread reads at least (a smaller level is read on fewer threads).
const MARK_CHUNK: usize = 256;

/// The hashes of trie nodes written while a prune runs, and the prune's own lock (one prune at
/// a time).
#[derive(Debug, Default)]
pub(crate) struct TrieWrites {
    /// `None`: no prune running.
    written: Mutex<Option<B256HashSet>>,
    /// Held for a whole prune.
    running: Mutex<()>,
}

impl TrieWrites {
    fn lock(&self) -> MutexGuard<'_, Option<B256HashSet>> {
        self.written.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl TriePruner for Storage {
    /// Deletes every trie node that none of `keep`'s roots reaches and that no commit wrote
    /// while the prune ran, then compacts the trie nodes' family. Recording what commits write
    /// begins first; only then are [`KeepStates::Latest`]'s roots read, so a block committed
    /// before is kept and one committed after is recorded. A root whose own node the store
    /// lacks is a state it never held (the blocks below a snap sync's pivot) and is skipped.
    /// The earliest block whose root is held is recorded before anything is deleted
    /// ([`Storage::pruned_below`]), so that readers refuse older states even if the sweep is cut
    /// short.
    ///
    /// Blocks may be committed meanwhile, from any thread, as long as each one's parent is a
    /// kept block or a block committed since (the engine's reorg window). The mark reads on
    /// `threads` threads (at least one): reads of a cold store wait on the disk, and more of
    /// them in flight make it answer more per second. A second prune waits for the first.
    /// `progress` is called with the phase (`mark`, `sweep`, `compact`) and the nodes done so
    /// far.
    ///
    /// # Errors
    /// [`ProviderError::Database`] when RocksDB fails; [`ProviderError::Corrupt`] for a node
    /// that does not decode, a reachable node below a held root the store lacks, or no root
    /// held at all (nothing is deleted then).
    fn prune_trie(
        &self,
        keep: KeepStates<'_>,
        threads: usize,
        progress: &mut dyn FnMut(&'static str, u64),
    ) -> Result<PruneStats, ProviderError> {
        let _running = self.trie_writes.running.lock().unwrap_or_else(|p| p.into_inner());
        // From here on every trie node written is recorded, and spared by the sweep.
        *self.trie_writes.lock() = Some(B256HashSet::default());
        let outcome = self
            .kept_roots(keep)
            .and_then(|roots| self.mark_and_sweep(&roots, threads.max(1), progress));
        let written = self.trie_writes.lock().take().map_or(0, |w| w.len() as u64);
        outcome.map(|stats| PruneStats { written_meanwhile: written, ..stats })
    }
}

impl Storage {
    /// The state roots `keep` names, by block number.
    fn kept_roots(&self, keep: KeepStates<'_>) -> Result<Vec<(u64, B256)>, ProviderError> {
        let count = match keep {
            KeepStates::Roots(roots) => return Ok(roots.to_vec()),
            KeepStates::Latest(count) => count.max(1),
        };
        let Some((head, _)) = self.best_block()? else { return Ok(Vec::new()) };
        let mut roots = Vec::new();
        // A block whose header the store lacks (below a snap sync's pivot) has no state here.
        for number in head.saturating_sub(count - 1)..=head {
            if let Some(header) = self.header_by_number(number)? {
                roots.push((number, header.state_root));
            }
        }
        Ok(roots)
    }

    /// Records `hashes` as written if a prune runs; the guard is held until the write that
    /// stores them is done, so that a sweep's batch comes wholly before or after it.
    pub(crate) fn trie_writes<'a>(
        &self,
        hashes: impl Iterator<Item = &'a B256>,
    ) -> MutexGuard<'_, Option<B256HashSet>> {
        let mut writes = self.trie_writes.lock();
        if let Some(set) = writes.as_mut() {
            set.extend(hashes.copied());
        }
        writes
    }

    fn mark_and_sweep(
        &self,
        roots: &[(u64, B256)],
        threads: usize,
        progress: &mut dyn FnMut(&'static str, u64),
    ) -> Result<PruneStats, ProviderError> {
        let mut held = Vec::new();
        let mut first_kept = None;
        for &(number, root) in roots {
            if root != EMPTY_ROOT_HASH && self.trie_node(&root)?.is_none() {
                continue;
            }
            held.push(root);
            first_kept = Some(first_kept.map_or(number, |f: u64| f.min(number)));
        }
        let first_kept = first_kept.ok_or_else(|| ProviderError::Corrupt {
            table: TRIE_NODES,
            key: "state roots".into(),
            reason: format!("none of the {} roots to keep is held", roots.len()),
        })?;
        self.db
            .put_cf(self.cf(META), PRUNED_BELOW_KEY, first_kept.to_be_bytes())
            .map_err(self.db_err("prune record"))?;
        let start = Instant::now();
        let marked = self.mark(&held, threads, progress)?;
        let mut stats = PruneStats {
            roots: roots.len(),
            first_kept,
            kept: marked.len() as u64,
            mark_time: start.elapsed(),
            ..Default::default()
        };
        let start = Instant::now();
        self.sweep(&marked, &mut stats, progress)?;
        stats.sweep_time = start.elapsed();
        Ok(stats)
    }

    /// Every node reachable from `roots`, level by level: a level's nodes sorted by hash (the
    /// reads then walk each table file in order) and read on up to `threads` threads.
    fn mark(
        &self,
        roots: &[B256],
        threads: usize,
        progress: &mut dyn FnMut(&'static str, u64),
    ) -> Result<B256HashSet, ProviderError> {
        let mut marked = B256HashSet::default();
        // (node hash, whether it belongs to the account trie).
        let mut level: Vec<(B256, bool)> = Vec::new();
        for &root in roots {
            if root != EMPTY_ROOT_HASH && marked.insert(root) {
                level.push((root, true));
            }
        }
        while !level.is_empty() {
            level.sort_unstable_by_key(|(hash, _)| *hash);
            let chunk = level.len().div_ceil(threads).max(MARK_CHUNK);
            let children = std::thread::scope(|scope| {
                let readers: Vec<_> = level
                    .chunks(chunk)
                    .map(|part| scope.spawn(move || self.children_of(part)))
                    .collect();
                readers
                    .into_iter()
                    .map(|r| r.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                    .collect::<Result<Vec<_>, _>>()
            })?;
            level = children
                .into_iter()
                .flatten()
                .filter(|(hash, _)| *hash != EMPTY_ROOT_HASH && marked.insert(*hash))
                .collect();
            progress("mark", marked.len() as u64);
        }
        Ok(marked)
    }

    /// The hashed children of `nodes` (and of the embedded nodes inside them), and, under an
    /// account leaf, its storage root.
    fn children_of(&self, nodes: &[(B256, bool)]) -> Result<Vec<(B256, bool)>, ProviderError> {
        let mut children = Vec::with_capacity(nodes.len() * 4);
        for &(hash, accounts) in nodes {
            let rlp =
                self.trie_node(&hash)?.ok_or_else(|| corrupt(hash, "reachable node missing"))?;
            visit(&rlp, accounts, &mut children).map_err(|e| corrupt(hash, &e.to_string()))?;
        }
        Ok(children)
    }

    /// Deletes every stored node neither `marked` nor written since the prune began, then
    /// compacts the family, so that the space returns to the disk.
    fn sweep(
        &self,
        marked: &B256HashSet,
        stats: &mut PruneStats,
        progress: &mut dyn FnMut(&'static str, u64),
    ) -> Result<(), ProviderError> {
        let cf = self.cf(TRIE_NODES);
        progress("sweep", 0);
        // The family's memtable is a hash table, which an iterator in key order copies and
        // sorts whole: flushed first, it is empty.
        self.db.flush_cf(cf).map_err(self.db_err("flush"))?;
        let mut options = rocksdb::ReadOptions::default();
        // A scan of a hash-table memtable must ask for key order.
        options.set_total_order_seek(true);
        let mut doomed = Vec::with_capacity(SWEEP_BATCH);
        // The iterator reads one snapshot: what is written or deleted meanwhile it does not see.
        for item in self.db.iterator_cf_opt(cf, options, rocksdb::IteratorMode::Start) {
            let (key, _) = item.map_err(self.db_err("scan"))?;
            stats.scanned += 1;
            if key.len() != 32 || !marked.contains(&B256::from_slice(&key)) {
                doomed.push(key);
                if doomed.len() >= SWEEP_BATCH {
                    self.delete_unwritten(&mut doomed, stats)?;
                    progress("sweep", stats.deleted);
                }
            }
        }
        self.delete_unwritten(&mut doomed, stats)?;
        progress("compact", stats.deleted);
        self.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
        Ok(())
    }

    /// Deletes `doomed` but for the nodes written since the prune began, with the writers held
    /// off meanwhile.
    fn delete_unwritten(
        &self,
        doomed: &mut Vec<Box<[u8]>>,
        stats: &mut PruneStats,
    ) -> Result<(), ProviderError> {
        let cf = self.cf(TRIE_NODES);
        let writes = self.trie_writes.lock();
        let mut batch = rocksdb::WriteBatch::default();
        for key in doomed.drain(..) {
            let written = key.len() == 32
                && writes.as_ref().is_some_and(|w| w.contains(&B256::from_slice(&key)));
            if !written {
                batch.delete_cf(cf, &key);
                stats.deleted += 1;
            }
        }
        self.db.write(batch).map_err(self.db_err("sweep"))
    }

    /// The first block whose state the trie holds after a prune ([`Storage::prune_trie`]);
    /// `None` when nothing was ever pruned (every block's state is held).
    ///
    /// # Errors
    /// [`ProviderError::Database`]; [`ProviderError::Corrupt`] for a malformed entry.
    pub fn pruned_below(&self) -> Result<Option<u64>, ProviderError> {
        let Some(bytes) = self.get(META, PRUNED_BELOW_KEY)? else { return Ok(None) };
        let bytes: [u8; 8] = bytes.as_slice().try_into().map_err(|_| ProviderError::Corrupt {
            table: META,
            key: "trie-pruned-below".into(),
            reason: format!("{} bytes, not 8", bytes.len()),
        })?;
        Ok(Some(u64::from_be_bytes(bytes)))
    }
}

/// Pushes the hashed children of the node `rlp` (its embedded ones walked in place) and, for an
/// account leaf, its storage root.
fn visit(
    rlp: &[u8],
    accounts: bool,
    stack: &mut Vec<(B256, bool)>,
) -> Result<(), alloy_rlp::Error> {
    match TrieNode::decode(&mut &rlp[..])? {
        TrieNode::EmptyRoot => {}
        TrieNode::Branch(branch) => {
            for child in &branch.stack {
                match child.as_hash() {
                    Some(hash) => stack.push((hash, accounts)),
                    None => visit(child.as_slice(), accounts, stack)?,
                }
            }
        }
        TrieNode::Extension(ext) => match ext.child.as_hash() {
            Some(hash) => stack.push((hash, accounts)),
            None => visit(ext.child.as_slice(), accounts, stack)?,
        },
        TrieNode::Leaf(leaf) => {
            if accounts {
                let account: TrieAccount = alloy_rlp::decode_exact(&leaf.value)?;
                stack.push((account.storage_root, false));
            }
        }
    }
    Ok(())
}

fn corrupt(hash: B256, reason: &str) -> ProviderError {
    ProviderError::Corrupt { table: TRIE_NODES, key: hash.to_string(), reason: reason.into() }
}
