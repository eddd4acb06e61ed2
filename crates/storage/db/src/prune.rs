//! Pruning the trie nodes no kept state root reaches (offline: the node stopped).
//!
//! Trie nodes are stored by hash and shared by every trie that holds them, so a node one block
//! replaced may still be reached by another root, or by an identical subtree elsewhere (equal
//! storage tries share all their nodes). Deleting what a block replaced is therefore unsafe; what
//! is safe is deleting what no kept root reaches: mark, then sweep (geth's `snapshot
//! prune-state` does the same offline).
//!
//! Flow: the roots to keep (the state roots of the last blocks, the reorg window) → mark: every
//! node reachable from them, account trie and, at each account's leaf, its storage trie,
//! depth-first, a subtree skipped once its top node is marked (shared subtrees are walked once)
//! → sweep: every stored node not marked deleted, in batches → the family compacted, so that
//! the space returns to the disk → the first kept block recorded ([`Storage::pruned_below`]),
//! so that readers of older state answer that it is pruned instead of missing a node.

use crate::{tables::META, tables::TRIE_NODES, Storage};
use alloy_primitives::{map::B256HashSet, B256};
use alloy_rlp::Decodable;
use alloy_trie::{nodes::TrieNode, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_storage_api::ProviderError;

/// The META key of the first block whose state the trie still holds after a prune.
const PRUNED_BELOW_KEY: &[u8] = b"trie-pruned-below";

/// Deletes per write batch of the sweep.
const SWEEP_BATCH: usize = 100_000;

/// What [`Storage::prune_trie`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneStats {
    /// Roots asked to keep.
    pub roots: usize,
    /// The earliest block whose root was held (recorded as [`Storage::pruned_below`]).
    pub first_kept: u64,
    /// Nodes reachable from them (kept).
    pub kept: u64,
    /// Nodes stored before the prune.
    pub scanned: u64,
    /// Nodes deleted.
    pub deleted: u64,
}

impl Storage {
    /// Deletes every trie node that none of `roots` reaches (the state roots of the blocks to
    /// keep, by block number), then compacts the trie nodes' family. A root whose own node the
    /// store lacks is a state it never held (the blocks below a snap sync's pivot) and is
    /// skipped. The earliest block whose root is held is recorded first
    /// ([`Storage::pruned_below`]), so that readers refuse older states even if the sweep is
    /// cut short. The node must not be running on this datadir: a node written meanwhile
    /// would not be marked. `progress` is called with the phase (`mark`, `sweep`, `compact`)
    /// and the nodes done so far.
    ///
    /// # Errors
    /// [`ProviderError::Database`] when RocksDB fails; [`ProviderError::Corrupt`] for a node
    /// that does not decode, a reachable node below a held root the store lacks, or no root
    /// held at all (nothing is deleted then).
    pub fn prune_trie(
        &self,
        roots: &[(u64, B256)],
        progress: &mut dyn FnMut(&'static str, u64),
    ) -> Result<PruneStats, ProviderError> {
        let mut marked = B256HashSet::default();
        let mut first_kept = None;
        for &(number, root) in roots {
            if root != EMPTY_ROOT_HASH && self.trie_node(&root)?.is_none() {
                continue;
            }
            self.mark(root, &mut marked, progress)?;
            first_kept = Some(first_kept.map_or(number, |f: u64| f.min(number)));
        }
        let first_kept = first_kept.ok_or_else(|| ProviderError::Corrupt {
            table: TRIE_NODES,
            key: "state roots".into(),
            reason: format!("none of the {} roots to keep is held", roots.len()),
        })?;
        let mut stats = PruneStats {
            roots: roots.len(),
            first_kept,
            kept: marked.len() as u64,
            ..Default::default()
        };
        self.db
            .put_cf(self.cf(META), PRUNED_BELOW_KEY, first_kept.to_be_bytes())
            .map_err(self.db_err("prune record"))?;
        let cf = self.cf(TRIE_NODES);
        self.db.flush_cf(cf).map_err(self.db_err("flush"))?;
        let mut options = rocksdb::ReadOptions::default();
        // The family's memtable is a hash table: a full scan must ask for key order.
        options.set_total_order_seek(true);
        let mut batch = rocksdb::WriteBatch::default();
        for item in self.db.iterator_cf_opt(cf, options, rocksdb::IteratorMode::Start) {
            let (key, _) = item.map_err(self.db_err("scan"))?;
            stats.scanned += 1;
            if key.len() != 32 || !marked.contains(&B256::from_slice(&key)) {
                batch.delete_cf(cf, &key);
                stats.deleted += 1;
                if batch.len() >= SWEEP_BATCH {
                    self.db.write(std::mem::take(&mut batch)).map_err(self.db_err("sweep"))?;
                    progress("sweep", stats.deleted);
                }
            }
        }
        self.db.write(batch).map_err(self.db_err("sweep"))?;
        progress("compact", stats.deleted);
        self.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
        Ok(stats)
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

    /// Marks every node reachable from `root` not marked yet (depth first; a marked node's
    /// subtree was walked already).
    fn mark(
        &self,
        root: B256,
        marked: &mut B256HashSet,
        progress: &mut dyn FnMut(&'static str, u64),
    ) -> Result<(), ProviderError> {
        // (node hash, whether it belongs to the account trie).
        let mut stack = vec![(root, true)];
        while let Some((hash, accounts)) = stack.pop() {
            if hash == EMPTY_ROOT_HASH || !marked.insert(hash) {
                continue;
            }
            if marked.len().is_multiple_of(1_000_000) {
                progress("mark", marked.len() as u64);
            }
            let rlp =
                self.trie_node(&hash)?.ok_or_else(|| corrupt(hash, "reachable node missing"))?;
            visit(&rlp, accounts, &mut stack).map_err(|e| corrupt(hash, &e.to_string()))?;
        }
        Ok(())
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
