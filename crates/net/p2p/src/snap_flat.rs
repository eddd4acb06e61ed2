//! Account and storage ranges served from the flat state instead of the trie, as geth serves
//! them from its snapshot.
//!
//! A walk of a trie reads one node by hash per leaf, each in a different table block (nodes
//! are keyed by their hash, in no order of the trie); the flat state holds accounts and slots
//! in key order, many to a block. But it holds the state of the store's head only, and a peer
//! asks for a root up to 128 blocks older. The accounts and slots a block touched are named by
//! its BAL (EIP-7928), so the state of block `n` is the head's flat state with every account
//! that blocks `n + 1 ..= head` listed, and every slot they wrote, read instead from block
//! `n`'s trie (its old value, or its absence).
//!
//! The flow for one range: the store's head and the accounts and slots listed above block `n`
//! (from the BALs, kept for the last `(n, head)` asked); the flat entries walked from the
//! origin under one snapshot of the store, merged in key order with the listed ones read from
//! the trie; the snapshot's head compared with the head the listed set was made for. An
//! account's storage root is not in the flat state: the few accounts holding slots are read
//! from `n`'s trie, the others have the empty trie's root. Nothing is served from the flat
//! state — the caller walks the trie — when the store has no head or a head below `n`, a
//! block in between has no BAL, or the head moved meanwhile.

use crate::snap_error::SnapServeError;
use alloy_primitives::{keccak256, Bytes, B256};
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_storage_api::{BlockNumReader, FullReader, HashedStateReader, ProviderError};
use gigagas_trie::Trie;
use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, Mutex},
};

/// What the flat storage is read from: the store (its flat state and its head).
pub trait FlatStateReader: HashedStateReader + BlockNumReader + Send + Sync {}

impl<T: HashedStateReader + BlockNumReader + Send + Sync> FlatStateReader for T {}

/// The accounts listed and the slots written by the blocks above `below` up to `head`.
#[derive(Debug)]
struct Written {
    below: u64,
    head: (u64, B256),
    /// Every account the BALs list (changed or only read), by hashed address: read from the
    /// older trie, which also covers an account removed above `below`.
    accounts: BTreeSet<B256>,
    /// The slots written, by hashed account.
    slots: HashMap<B256, BTreeSet<B256>>,
}

/// Account and storage ranges at recent roots read from the flat state.
pub(crate) struct FlatState {
    flat: Arc<dyn FlatStateReader>,
    /// Headers, BALs and trie nodes, memory first (the server's provider).
    provider: Arc<dyn FullReader>,
    /// The set last made, for the next request at the same root and head.
    written: Mutex<Option<Arc<Written>>>,
}

impl std::fmt::Debug for FlatState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatState").finish_non_exhaustive()
    }
}

impl FlatState {
    pub(crate) fn new(flat: Arc<dyn FlatStateReader>, provider: Arc<dyn FullReader>) -> Self {
        Self { flat, provider, written: Mutex::default() }
    }

    /// The accounts listed and slots written above block `below` up to `head`; `None` when a
    /// block in between has no BAL or `head` is no longer canonical.
    fn written(
        &self,
        below: u64,
        head: (u64, B256),
    ) -> Result<Option<Arc<Written>>, ProviderError> {
        if let Some(written) = &*self.written.lock().expect("written lock") {
            if written.below == below && written.head == head {
                return Ok(Some(written.clone()));
            }
        }
        let mut slots: HashMap<B256, BTreeSet<B256>> = HashMap::new();
        let mut accounts = BTreeSet::new();
        for number in below + 1..=head.0 {
            let Some(bal) = self.provider.block_access_list(number)? else { return Ok(None) };
            for account in &bal {
                let hashed = keccak256(account.address);
                accounts.insert(hashed);
                if account.storage_changes.is_empty() {
                    continue;
                }
                let set = slots.entry(hashed).or_default();
                for slot in &account.storage_changes {
                    set.insert(keccak256(slot.slot.to_be_bytes::<32>()));
                }
            }
        }
        if gigagas_storage_api::BlockHashReader::block_hash(&*self.provider, head.0)?
            != Some(head.1)
        {
            return Ok(None);
        }
        let written = Arc::new(Written { below, head, accounts, slots });
        *self.written.lock().expect("written lock") = Some(written.clone());
        Ok(Some(written))
    }

    /// The accounts of the state of block `number` (whose state root is `root`) from `origin`
    /// on in key order, as (hashed address, slim RLP body): while `more` answers true for the
    /// one just taken, or until the accounts end. `None` when the flat state cannot give that
    /// state (see the module's doc).
    ///
    /// # Errors
    /// [`SnapServeError`] when a read fails; a trie node missing gives `Ok(None)`.
    pub(crate) fn accounts(
        &self,
        number: u64,
        root: B256,
        origin: B256,
        more: &mut dyn FnMut(&B256, &Bytes) -> bool,
    ) -> Result<Option<Vec<(B256, Bytes)>>, SnapServeError> {
        let Some(head) = self.flat.best_block()? else { return Ok(None) };
        if head.0 < number {
            return Ok(None);
        }
        let Some(written) = self.written(number, head)? else { return Ok(None) };
        let mut listed = written.accounts.range(origin..).peekable();
        let mut old = OldState { trie: Trie::new(root), provider: &*self.provider };
        let mut out = Vec::new();
        // Why the walk stopped early: enough taken, or the flat state cannot answer.
        let (mut done, mut unusable) = (false, false);
        let mut failed: Option<SnapServeError> = None;
        let seen = self.flat.walk_hashed_accounts_at_head(origin, &mut |hash, record, slots| {
            while let Some(&&next) = listed.peek() {
                if next > hash {
                    break;
                }
                listed.next();
                match old.account(&next) {
                    Ok(OldAccount::Absent) => {}
                    Ok(OldAccount::Body(body)) => {
                        if !take(&mut out, more, next, body) {
                            done = true;
                            return false;
                        }
                    }
                    Ok(OldAccount::Unusable) => {
                        unusable = true;
                        return false;
                    }
                    Err(e) => {
                        failed = Some(e);
                        return false;
                    }
                }
            }
            if written.accounts.contains(&hash) {
                return true;
            }
            // Not listed above `number`: the head's account is `number`'s. Its storage root
            // from the trie where it holds slots, the empty trie's where it holds none.
            let body = if slots {
                match old.account(&hash) {
                    Ok(OldAccount::Body(body)) => body,
                    // The trie disagrees with the flat state: the trie walk answers.
                    Ok(OldAccount::Absent | OldAccount::Unusable) => {
                        unusable = true;
                        return false;
                    }
                    Err(e) => {
                        failed = Some(e);
                        return false;
                    }
                }
            } else {
                slim_account(&TrieAccount {
                    nonce: record.nonce,
                    balance: record.balance,
                    storage_root: EMPTY_ROOT_HASH,
                    code_hash: record.code_hash,
                })
            };
            if !take(&mut out, more, hash, body) {
                done = true;
                return false;
            }
            true
        })?;
        if let Some(e) = failed {
            return missing_as_none(e);
        }
        if unusable || seen != Some(head) {
            return Ok(None);
        }
        if !done {
            for next in listed {
                match old.account(next) {
                    Ok(OldAccount::Absent) => {}
                    Ok(OldAccount::Body(body)) => {
                        if !take(&mut out, more, *next, body) {
                            break;
                        }
                    }
                    Ok(OldAccount::Unusable) => return Ok(None),
                    Err(e) => return missing_as_none(e),
                }
            }
        }
        Ok(Some(out))
    }

    /// The slots of the hashed account `account` in the state of block `number` (whose
    /// storage root for it is `storage_root`), from `origin` on in key order, as (hashed slot,
    /// RLP of the value): until their sizes (32 bytes and the value's each) reach `bytes` and
    /// one more is taken, or one at or past `limit` is taken, or the storage ends. `None` when
    /// the flat state cannot give that state (see the module's doc).
    ///
    /// # Errors
    /// [`SnapServeError`] when a read fails; a trie node missing gives `Ok(None)`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn slots(
        &self,
        number: u64,
        account: B256,
        storage_root: B256,
        origin: B256,
        limit: B256,
        bytes: u64,
    ) -> Result<Option<Vec<(B256, Bytes)>>, SnapServeError> {
        let Some(head) = self.flat.best_block()? else { return Ok(None) };
        if head.0 < number {
            return Ok(None);
        }
        let Some(written) = self.written(number, head)? else { return Ok(None) };
        let empty = BTreeSet::new();
        let written_here = written.slots.get(&account).unwrap_or(&empty);
        let mut changed = written_here.range(origin..).peekable();
        let mut old = OldState { trie: Trie::new(storage_root), provider: &*self.provider };
        let mut taken =
            Taken { out: Vec::new(), size: 0, bytes, limit, crossed: false, done: false };
        let mut failed: Option<SnapServeError> = None;
        let seen = self.flat.walk_hashed_storage_at_head(account, origin, &mut |slot, value| {
            while let Some(&&next) = changed.peek() {
                if next > slot {
                    break;
                }
                changed.next();
                match old.value(&next) {
                    Ok(Some(value)) => {
                        if taken.push(next, value) {
                            return false;
                        }
                    }
                    Ok(None) => {}
                    Err(e) => {
                        failed = Some(e);
                        return false;
                    }
                }
            }
            if written_here.contains(&slot) {
                return true;
            }
            !taken.push(slot, alloy_rlp::encode(value).into())
        })?;
        if let Some(e) = failed {
            return missing_as_none(e);
        }
        if seen != Some(head) {
            return Ok(None);
        }
        if !taken.done {
            for next in changed {
                match old.value(next) {
                    Ok(Some(value)) => {
                        if taken.push(*next, value) {
                            break;
                        }
                    }
                    Ok(None) => {}
                    Err(e) => return missing_as_none(e),
                }
            }
        }
        Ok(Some(taken.out))
    }
}

/// A missing trie node: not served from the flat state (the trie walk answers as it does
/// without the node); any other failure goes up.
fn missing_as_none<T>(e: SnapServeError) -> Result<Option<T>, SnapServeError> {
    match e {
        SnapServeError::Trie(gigagas_trie::TrieError::MissingNode { .. }) => Ok(None),
        e => Err(e),
    }
}

/// The values, in one trie at an older block, of the accounts or slots listed above it.
struct OldState<'a> {
    trie: Trie,
    provider: &'a dyn FullReader,
}

impl OldState<'_> {
    /// The account `hash` in the state trie.
    fn account(&mut self, hash: &B256) -> Result<OldAccount, SnapServeError> {
        Ok(match self.value(hash)? {
            None => OldAccount::Absent,
            Some(value) => {
                crate::snap_account::slim(&value).map_or(OldAccount::Unusable, OldAccount::Body)
            }
        })
    }

    /// The RLP of `slot`'s value in the trie, `None` when the trie does not hold it.
    fn value(&mut self, slot: &B256) -> Result<Option<Bytes>, SnapServeError> {
        self.trie
            .get(&Nibbles::unpack(slot), self.provider)
            .map(|value| value.map(Bytes::from))
            .map_err(SnapServeError::Trie)
    }
}

/// The slots taken for an answer, and when to stop.
struct Taken {
    out: Vec<(B256, Bytes)>,
    size: u64,
    bytes: u64,
    limit: B256,
    /// The sizes reached `bytes`: one more slot is taken.
    crossed: bool,
    done: bool,
}

impl Taken {
    /// Takes a slot; true when no more are wanted.
    fn push(&mut self, hash: B256, value: Bytes) -> bool {
        if self.crossed {
            self.done = true;
        }
        self.size += 32 + value.len() as u64;
        self.crossed |= self.size >= self.bytes;
        self.done |= hash >= self.limit;
        self.out.push((hash, value));
        self.done
    }
}

/// An account as an older trie holds it.
enum OldAccount {
    /// Not in the trie.
    Absent,
    /// Its slim RLP body.
    Body(Bytes),
    /// A value that is no account: the trie walk answers as it does for one.
    Unusable,
}

/// Adds an account to `out`; whether `more` wants another after it.
fn take(
    out: &mut Vec<(B256, Bytes)>,
    more: &mut dyn FnMut(&B256, &Bytes) -> bool,
    hash: B256,
    body: Bytes,
) -> bool {
    let go_on = more(&hash, &body);
    out.push((hash, body));
    go_on
}

/// `account`'s slim RLP body (snap's encoding: the empty trie's root and the empty code's hash
/// as empty strings).
fn slim_account(account: &TrieAccount) -> Bytes {
    crate::snap_account::slim(&alloy_rlp::encode(account)).expect("a trie account's RLP is a list")
}
