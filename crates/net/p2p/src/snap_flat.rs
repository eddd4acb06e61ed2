//! Storage ranges served from the flat state instead of the trie, as geth serves them from its
//! snapshot.
//!
//! A walk of a storage trie reads one node by hash per slot, each in a different table block
//! (nodes are keyed by their hash, in no order of the trie); the flat state holds the slots in
//! key order, forty to a block. But it holds the state of the store's head only, and a peer
//! asks for a root up to 128 blocks older. The slots a block wrote are named by its BAL
//! (EIP-7928), so the state of block `n` is the head's flat state with every slot that blocks
//! `n + 1 ..= head` wrote read instead from block `n`'s trie (its old value, or its absence).
//!
//! The flow for one account: the store's head and the slots written above block `n`, by
//! hashed account (from the BALs, kept for the last `(n, head)` asked); the flat slots walked
//! from the origin under one snapshot of the store, merged in key order with the written ones
//! read from the trie; the snapshot's head compared with the head the written set was made
//! for. Nothing is served from the flat state — the caller walks the trie — when the store has
//! no head or a head below `n`, a block in between has no BAL, or the head moved meanwhile.

use crate::snap_error::SnapServeError;
use alloy_primitives::{keccak256, Bytes, B256};
use alloy_trie::Nibbles;
use gigagas_storage_api::{BlockNumReader, FullReader, HashedStateReader, ProviderError};
use gigagas_trie::Trie;
use std::{
    collections::{BTreeSet, HashMap},
    sync::{Arc, Mutex},
};

/// What the flat storage is read from: the store (its flat state and its head).
pub trait FlatStateReader: HashedStateReader + BlockNumReader + Send + Sync {}

impl<T: HashedStateReader + BlockNumReader + Send + Sync> FlatStateReader for T {}

/// The slots written by the blocks above `below` up to `head`, by hashed account.
#[derive(Debug)]
struct Written {
    below: u64,
    head: (u64, B256),
    slots: HashMap<B256, BTreeSet<B256>>,
}

/// Storage ranges at recent roots read from the flat state.
pub(crate) struct FlatStorage {
    flat: Arc<dyn FlatStateReader>,
    /// Headers, BALs and trie nodes, memory first (the server's provider).
    provider: Arc<dyn FullReader>,
    /// The set last made, for the next request at the same root and head.
    written: Mutex<Option<Arc<Written>>>,
}

impl std::fmt::Debug for FlatStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlatStorage").finish_non_exhaustive()
    }
}

impl FlatStorage {
    pub(crate) fn new(flat: Arc<dyn FlatStateReader>, provider: Arc<dyn FullReader>) -> Self {
        Self { flat, provider, written: Mutex::default() }
    }

    /// The slots written above block `below` up to `head`; `None` when a block in between has
    /// no BAL or `head` is no longer canonical.
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
        for number in below + 1..=head.0 {
            let Some(bal) = self.provider.block_access_list(number)? else { return Ok(None) };
            for account in &bal {
                if account.storage_changes.is_empty() {
                    continue;
                }
                let hashed = keccak256(account.address);
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
        let written = Arc::new(Written { below, head, slots });
        *self.written.lock().expect("written lock") = Some(written.clone());
        Ok(Some(written))
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
        let mut old = OldSlots { trie: Trie::new(storage_root), provider: &*self.provider };
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

/// The values, in one storage trie, of the slots written above its block.
struct OldSlots<'a> {
    trie: Trie,
    provider: &'a dyn FullReader,
}

impl OldSlots<'_> {
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
