//! The tries of a downloaded state, in one pass over the flat state in key order on two
//! threads: one walks the storage table (every account's slots, account after account) and
//! builds each storage trie, handing the roots over in order; the other walks the accounts,
//! takes each one's storage root (the empty root for an account the storage walk did not
//! name) and builds the account trie. Each writes the nodes its builders finish in batches,
//! without the write-ahead log (a build that dies is done again), and the nodes are settled
//! into table files before the root is answered; memory holds the open branches and the
//! batches.

use super::{progress::SnapProgress, SnapSyncError};
use alloy_primitives::{Bytes, B256, U256};
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_storage_api::{HashedBatch, HashedStateReader, HashedStateWriter};
use gigagas_trie::{EncodedNode, TrieBuilder};
use std::{cell::RefCell, sync::mpsc};

/// Nodes written per batch.
const NODES_PER_WRITE: usize = 50_000;
/// Accounts read per page.
const ACCOUNTS_PER_READ: usize = 10_000;
/// Slots read per page.
const SLOTS_PER_READ: usize = 50_000;
/// Storage roots the storage walk may be ahead by.
const ROOTS_AHEAD: usize = 4096;

/// Nodes waiting to be written.
struct Nodes<'a, S: HashedStateWriter + ?Sized> {
    store: &'a S,
    pending: RefCell<Vec<EncodedNode>>,
}

impl<S: HashedStateWriter + ?Sized> Nodes<'_, S> {
    fn push(&self, hash: B256, rlp: &[u8]) {
        self.pending.borrow_mut().push((hash, Bytes::copy_from_slice(rlp)));
    }

    fn flush(&self, force: bool) -> Result<(), SnapSyncError> {
        let mut pending = self.pending.borrow_mut();
        if pending.len() >= NODES_PER_WRITE || (force && !pending.is_empty()) {
            // Unlogged: a build that dies starts again, and `build_tries` settles its nodes
            // into table files before it answers.
            self.store.write_hashed(&HashedBatch {
                trie_nodes: &pending,
                unlogged: true,
                ..Default::default()
            })?;
            pending.clear();
        }
        Ok(())
    }
}

/// Builds and writes the tries of the flat state `store` holds; answers the state root.
pub(crate) fn build_tries<S: HashedStateReader + HashedStateWriter + Sync + ?Sized>(
    store: &S,
    progress: &SnapProgress,
) -> Result<B256, SnapSyncError> {
    store.settle_hashed()?;
    let (roots_tx, roots_rx) = mpsc::sync_channel::<(B256, B256)>(ROOTS_AHEAD);
    std::thread::scope(|scope| {
        let storage = scope.spawn(move || storage_tries(store, roots_tx));
        let accounts = account_trie(store, progress, roots_rx);
        // The storage walk's error first: the account walk stops short when it does.
        let storage = storage.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        storage?;
        let root = accounts?;
        store.settle_hashed()?;
        Ok(root)
    })
}

/// Walks the storage table and builds each account's storage trie, sending (account, root)
/// in key order; stops early when the receiver is gone.
fn storage_tries<S: HashedStateReader + HashedStateWriter + ?Sized>(
    store: &S,
    roots: mpsc::SyncSender<(B256, B256)>,
) -> Result<(), SnapSyncError> {
    let nodes = Nodes { store, pending: RefCell::new(Vec::new()) };
    let mut current: Option<(B256, TrieBuilder<_>)> = None;
    let (mut account, mut slot) = (B256::ZERO, B256::ZERO);
    loop {
        let page = store.hashed_storage_entries(account, slot, SLOTS_PER_READ)?;
        let Some(&(last_account, last_slot, _)) = page.last() else { break };
        for (owner, key, value) in &page {
            if current.as_ref().is_none_or(|(a, _)| a != owner) {
                if let Some((done, trie)) = current.take() {
                    if roots.send((done, trie.finish())).is_err() {
                        return Ok(());
                    }
                    nodes.flush(false)?;
                }
                current = Some((*owner, TrieBuilder::new(|h, rlp: &[u8]| nodes.push(h, rlp))));
            }
            let (_, trie) = current.as_mut().expect("set above");
            trie.add_leaf(Nibbles::unpack(key), &alloy_rlp::encode(value))
                .expect("the store iterates keys in ascending order and keeps no zero");
        }
        if page.len() < SLOTS_PER_READ {
            break;
        }
        (account, slot) = next_key(last_account, last_slot);
    }
    if let Some((done, trie)) = current.take() {
        let _ = roots.send((done, trie.finish()));
    }
    nodes.flush(true)
}

/// The storage key after (`account`, `slot`).
fn next_key(account: B256, slot: B256) -> (B256, B256) {
    match U256::from_be_bytes(slot.0).checked_add(U256::from(1)) {
        Some(next) => (account, B256::from(next)),
        None => {
            (B256::from(U256::from_be_bytes(account.0).saturating_add(U256::from(1))), B256::ZERO)
        }
    }
}

/// Walks the accounts, each with the storage root the storage walk found for it, and builds
/// the account trie; answers its root.
fn account_trie<S: HashedStateReader + HashedStateWriter + ?Sized>(
    store: &S,
    progress: &SnapProgress,
    roots: mpsc::Receiver<(B256, B256)>,
) -> Result<B256, SnapSyncError> {
    let nodes = Nodes { store, pending: RefCell::new(Vec::new()) };
    let mut trie = TrieBuilder::new(|h, rlp: &[u8]| nodes.push(h, rlp));
    let mut next_root = roots.recv().ok();
    let mut from = B256::ZERO;
    let mut built = 0u64;
    loop {
        let page = store.hashed_accounts(from, ACCOUNTS_PER_READ)?;
        let Some((last, _)) = page.last().copied() else { break };
        for (hash, record) in &page {
            // Slots of accounts that do not exist (none after a proven download) are skipped.
            while next_root.is_some_and(|(a, _)| a < *hash) {
                next_root = roots.recv().ok();
            }
            let storage_root = match next_root {
                Some((a, root)) if a == *hash => {
                    next_root = roots.recv().ok();
                    root
                }
                _ => EMPTY_ROOT_HASH,
            };
            let leaf = alloy_rlp::encode(TrieAccount {
                nonce: record.nonce,
                balance: record.balance,
                storage_root,
                code_hash: record.code_hash,
            });
            trie.add_leaf(Nibbles::unpack(hash), &leaf)
                .expect("the store iterates keys in ascending order, values never empty");
            built += 1;
        }
        progress.set_trie_accounts(built);
        nodes.flush(false)?;
        if page.len() < ACCOUNTS_PER_READ || last == B256::repeat_byte(0xff) {
            break;
        }
        from = B256::from(U256::from_be_bytes(last.0) + U256::from(1));
    }
    drop(roots);
    let root = trie.finish();
    nodes.flush(true)?;
    Ok(root)
}
