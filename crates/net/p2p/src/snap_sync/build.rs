//! The tries of a downloaded state: every account in key order, each with its storage trie
//! built first (its root goes into the account's leaf), the nodes written in batches as the
//! builders finish them. One pass over the flat state, memory bounded by the open branches.

use super::{progress::SnapProgress, SnapSyncError};
use alloy_primitives::{Bytes, B256, U256};
use alloy_trie::{Nibbles, TrieAccount};
use gigagas_storage_api::{HashedBatch, HashedStateReader, HashedStateWriter};
use gigagas_trie::{EncodedNode, TrieBuilder};
use std::cell::RefCell;

/// Nodes written per batch.
const NODES_PER_WRITE: usize = 50_000;
/// Accounts read per iteration.
const ACCOUNTS_PER_READ: usize = 10_000;
/// Slots read per iteration.
const SLOTS_PER_READ: usize = 50_000;

/// Builds and writes the tries of the flat state `store` holds; answers the state root.
pub(crate) fn build_tries<S: HashedStateReader + HashedStateWriter + ?Sized>(
    store: &S,
    progress: &SnapProgress,
) -> Result<B256, SnapSyncError> {
    let nodes: RefCell<Vec<EncodedNode>> = RefCell::new(Vec::new());
    let flush = |force: bool| -> Result<(), SnapSyncError> {
        let mut pending = nodes.borrow_mut();
        if pending.len() >= NODES_PER_WRITE || (force && !pending.is_empty()) {
            store.write_hashed(&HashedBatch { trie_nodes: &pending, ..Default::default() })?;
            pending.clear();
        }
        Ok(())
    };
    let sink =
        |hash: B256, rlp: &[u8]| nodes.borrow_mut().push((hash, Bytes::copy_from_slice(rlp)));
    let mut accounts = TrieBuilder::new(sink);
    let mut from = B256::ZERO;
    let mut built = 0u64;
    loop {
        let page = store.hashed_accounts(from, ACCOUNTS_PER_READ)?;
        let Some((last, _)) = page.last().copied() else { break };
        for (hash, record) in &page {
            let storage_root = storage_trie(store, *hash, &nodes, &flush)?;
            let leaf = alloy_rlp::encode(TrieAccount {
                nonce: record.nonce,
                balance: record.balance,
                storage_root,
                code_hash: record.code_hash,
            });
            accounts
                .add_leaf(Nibbles::unpack(hash), &leaf)
                .expect("the store iterates keys in ascending order, values never empty");
            built += 1;
        }
        progress.set_trie_accounts(built);
        flush(false)?;
        if page.len() < ACCOUNTS_PER_READ || last == B256::repeat_byte(0xff) {
            break;
        }
        from = B256::from(U256::from_be_bytes(last.0) + U256::from(1));
    }
    let root = accounts.finish();
    flush(true)?;
    Ok(root)
}

/// Builds the storage trie of `account` into `nodes`; answers its root.
fn storage_trie<S: HashedStateReader + ?Sized>(
    store: &S,
    account: B256,
    nodes: &RefCell<Vec<EncodedNode>>,
    flush: &dyn Fn(bool) -> Result<(), SnapSyncError>,
) -> Result<B256, SnapSyncError> {
    let sink =
        |hash: B256, rlp: &[u8]| nodes.borrow_mut().push((hash, Bytes::copy_from_slice(rlp)));
    let mut trie = TrieBuilder::new(sink);
    let mut from = B256::ZERO;
    loop {
        let page = store.hashed_storage(account, from, SLOTS_PER_READ)?;
        let Some((last, _)) = page.last().copied() else { break };
        for (slot, value) in &page {
            trie.add_leaf(Nibbles::unpack(slot), &alloy_rlp::encode(value))
                .expect("the store iterates keys in ascending order and keeps no zero");
        }
        if page.len() < SLOTS_PER_READ || last == B256::repeat_byte(0xff) {
            break;
        }
        flush(false)?;
        from = B256::from(U256::from_be_bytes(last.0) + U256::from(1));
    }
    Ok(trie.finish())
}
