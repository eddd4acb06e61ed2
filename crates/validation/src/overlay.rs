//! The state of a block that is executed but not yet committed, over the store.

use alloy_primitives::{
    map::{HashMap, HashSet},
    Address, Bytes, B256, U256,
};
use gigagas_state::{StateError, StateSource};
use revm::state::{AccountInfo, Bytecode};
use std::sync::Arc;

/// What one block changed, as the next block must see it before the store does.
#[derive(Debug, Default)]
pub struct PendingDiff {
    pub(crate) number: u64,
    pub(crate) hash: B256,
    /// New (nonce, balance, code hash); `None` for deleted accounts.
    pub(crate) accounts: HashMap<Address, Option<(u64, U256, B256)>>,
    pub(crate) storage: HashMap<(Address, U256), U256>,
    /// The accounts `storage` gives a non-zero slot (what [`Overlay::has_storage`] asks).
    pub(crate) with_storage: HashSet<Address>,
    /// Accounts whose stored slots no longer count (deleted, or storage wiped).
    pub(crate) cleared: HashSet<Address>,
    pub(crate) codes: HashMap<B256, Bytes>,
}

impl PendingDiff {
    /// The code with keccak256 `hash`, when the block deployed it.
    pub fn code(&self, hash: &B256) -> Option<Bytes> {
        self.codes.get(hash).cloned()
    }
}

/// A base state (the store's flat state, or the trie under an older block's state root), with
/// the changes of the blocks after it (executed, not yet committed) on top, newest first.
///
/// Safe while the oldest of those blocks' commit lands concurrently: a key the block changed is
/// answered from its diff whatever the store holds, and every other key is the same before and
/// after the commit (RocksDB applies the block's write batch atomically).
#[derive(Debug)]
pub struct Overlay {
    /// The base state.
    pub base: Arc<dyn StateSource>,
    /// The changes on top, newest first.
    pub diffs: Vec<Arc<PendingDiff>>,
}

impl Overlay {
    /// `address` as the newest diff that changed it left it; `None` when none did.
    fn diff_account(&self, address: &Address) -> Option<Option<AccountInfo>> {
        self.diffs.iter().find_map(|d| d.accounts.get(address)).map(|v| {
            v.map(|(nonce, balance, code_hash)| AccountInfo {
                nonce,
                balance,
                code_hash,
                code: None,
                ..Default::default()
            })
        })
    }

    /// `slot` of `address` as the newest diff that wrote it or cleared the account left it;
    /// `None` when none did.
    fn diff_slot(&self, address: &Address, slot: &U256) -> Option<U256> {
        for d in &self.diffs {
            if let Some(v) = d.storage.get(&(*address, *slot)) {
                return Some(*v);
            }
            if d.cleared.contains(address) {
                return Some(U256::ZERO);
            }
        }
        None
    }

    /// The code with keccak256 `hash` when a diff deployed it.
    fn diff_code(&self, hash: &B256) -> Option<Bytecode> {
        self.diffs.iter().find_map(|d| d.code(hash)).map(Bytecode::new_raw)
    }
}

/// Answers `keys` in their order: each from `diffs` when the diffs know it, the rest from
/// `base` in one call (the base's batched multi-get), with only the keys the diffs left.
fn batched<K: Clone, V>(
    keys: &[K],
    diffs: impl Fn(&K) -> Option<V>,
    base: impl FnOnce(&[K]) -> Result<Vec<V>, StateError>,
) -> Result<Vec<V>, StateError> {
    let mut answers: Vec<Option<V>> = keys.iter().map(&diffs).collect();
    let (at, missing): (Vec<usize>, Vec<K>) = answers
        .iter()
        .enumerate()
        .filter(|(_, a)| a.is_none())
        .map(|(i, _)| (i, keys[i].clone()))
        .unzip();
    if !missing.is_empty() {
        let read = base(&missing)?;
        if read.len() != missing.len() {
            return Err(StateError::from_source(std::io::Error::other(format!(
                "the base state answered {} of {} keys of a batched read",
                read.len(),
                missing.len()
            ))));
        }
        for (i, v) in at.into_iter().zip(read) {
            answers[i] = Some(v);
        }
    }
    Ok(answers.into_iter().flatten().collect())
}

impl StateSource for Overlay {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        match self.diff_account(address) {
            Some(v) => Ok(v),
            None => self.base.account(address),
        }
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        match self.diff_slot(address, slot) {
            Some(v) => Ok(v),
            None => self.base.storage(address, slot),
        }
    }

    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        match self.diff_code(hash) {
            Some(code) => Ok(Some(code)),
            None => self.base.code(hash),
        }
    }

    /// What the diffs changed from them, the rest in one batched read of the base.
    fn accounts(&self, addresses: &[Address]) -> Result<Vec<Option<AccountInfo>>, StateError> {
        batched(addresses, |a| self.diff_account(a), |rest| self.base.accounts(rest))
    }

    /// What the diffs wrote or cleared from them, the rest in one batched read of the base.
    fn slots(&self, keys: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
        batched(keys, |(a, s)| self.diff_slot(a, s), |rest| self.base.slots(rest))
    }

    /// What the diffs deployed from them, the rest in one batched read of the base.
    fn codes(&self, hashes: &[B256]) -> Result<Vec<Option<Bytecode>>, StateError> {
        batched(hashes, |h| self.diff_code(h).map(Some), |rest| self.base.codes(rest))
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        match self.diffs.iter().find(|d| d.number == number) {
            Some(d) => Ok(Some(d.hash)),
            None => self.base.block_hash(number),
        }
    }

    /// A diff's non-zero slot of the account answers yes; a diff that cleared the account
    /// answers no unless a newer diff wrote one; a zero a diff wrote may leave other slots
    /// below, so only the base can say the account has none.
    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        for d in &self.diffs {
            if d.with_storage.contains(address) {
                return Ok(true);
            }
            if d.cleared.contains(address) {
                return Ok(false);
            }
        }
        self.base.has_storage(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A base state that answers from maps and records every batched read it is asked for.
    #[derive(Debug, Default)]
    struct Recording {
        accounts: HashMap<Address, AccountInfo>,
        slots: HashMap<(Address, U256), U256>,
        codes: HashMap<B256, Bytes>,
        batches: Mutex<Vec<usize>>,
    }

    impl StateSource for Recording {
        fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
            Ok(self.accounts.get(address).cloned())
        }
        fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
            Ok(self.slots.get(&(*address, *slot)).copied().unwrap_or_default())
        }
        fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
            Ok(self.codes.get(hash).map(|c| Bytecode::new_raw(c.clone())))
        }
        fn block_hash(&self, _: u64) -> Result<Option<B256>, StateError> {
            Ok(None)
        }
        fn has_storage(&self, _: &Address) -> Result<bool, StateError> {
            Ok(false)
        }
        fn accounts(&self, keys: &[Address]) -> Result<Vec<Option<AccountInfo>>, StateError> {
            self.batches.lock().unwrap().push(keys.len());
            keys.iter().map(|a| self.account(a)).collect()
        }
        fn slots(&self, keys: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
            self.batches.lock().unwrap().push(keys.len());
            keys.iter().map(|(a, s)| self.storage(a, s)).collect()
        }
        fn codes(&self, keys: &[B256]) -> Result<Vec<Option<Bytecode>>, StateError> {
            self.batches.lock().unwrap().push(keys.len());
            keys.iter().map(|h| self.code(h)).collect()
        }
    }

    fn info(balance: u64) -> AccountInfo {
        AccountInfo { balance: U256::from(balance), ..Default::default() }
    }

    #[test]
    fn batched_reads_answer_as_single_reads_and_ask_the_base_once_for_the_rest() {
        let [a, b, c, d, e, f, g] = [1u8, 2, 3, 4, 5, 6, 7].map(Address::with_last_byte);
        let (one, two, three) = (U256::from(1), U256::from(2), U256::from(3));
        let mut base = Recording::default();
        for (address, balance) in [(a, 10), (b, 20), (c, 30), (f, 60)] {
            base.accounts.insert(address, info(balance));
        }
        for (key, value) in [((c, one), 5u64), ((c, two), 7), ((d, two), 9), ((f, three), 11)] {
            base.slots.insert(key, U256::from(value));
        }
        let (stored, deployed) = (B256::repeat_byte(0xaa), B256::repeat_byte(0xbb));
        base.codes.insert(stored, Bytes::from_static(&[0x60, 0x00]));
        // The newest diff: a's balance, b deleted, slot (c, 1) written, d's storage cleared,
        // a code deployed. The older one: e created, slot (d, 2) written before the clear.
        let mut newest = PendingDiff::default();
        newest.accounts.insert(a, Some((1, U256::from(11), B256::ZERO)));
        newest.accounts.insert(b, None);
        newest.storage.insert((c, one), U256::from(6));
        newest.cleared.insert(d);
        newest.codes.insert(deployed, Bytes::from_static(&[0x00]));
        let mut older = PendingDiff::default();
        older.accounts.insert(e, Some((0, U256::from(50), B256::ZERO)));
        older.storage.insert((d, two), U256::from(99));
        let base = Arc::new(base);
        let overlay =
            Overlay { base: base.clone(), diffs: vec![Arc::new(newest), Arc::new(older)] };

        let addresses = [a, b, f, e, g, c];
        let batch = overlay.accounts(&addresses).unwrap();
        let single: Vec<_> = addresses.iter().map(|x| overlay.account(x).unwrap()).collect();
        assert_eq!(batch, single);
        assert_eq!(batch[0].as_ref().map(|i| i.balance), Some(U256::from(11)));
        assert_eq!((batch[1].is_none(), batch[4].is_none()), (true, true));
        assert_eq!(batch[5].as_ref().map(|i| i.balance), Some(U256::from(30)));

        let keys = [(c, one), (c, two), (d, two), (f, three), (g, one)];
        let batch = overlay.slots(&keys).unwrap();
        let single: Vec<_> = keys.iter().map(|(x, s)| overlay.storage(x, s).unwrap()).collect();
        assert_eq!(batch, single);
        assert_eq!(batch, [6u64, 7, 0, 11, 0].map(U256::from));

        let hashes = [deployed, stored, B256::ZERO];
        let batch = overlay.codes(&hashes).unwrap();
        let single: Vec<_> = hashes.iter().map(|h| overlay.code(h).unwrap()).collect();
        assert_eq!(batch, single);
        assert_eq!(batch.iter().map(Option::is_some).collect::<Vec<_>>(), [true, true, false]);

        // One batch each, holding only what the diffs did not answer: f, g and c; (c, 2),
        // (f, 3) and (g, 1); the stored code and the unknown one.
        assert_eq!(*base.batches.lock().unwrap(), [3, 3, 2]);
    }

    #[test]
    fn keys_all_in_the_diffs_never_reach_the_base() {
        let a = Address::with_last_byte(1);
        let base = Arc::new(Recording::default());
        let mut diff = PendingDiff::default();
        diff.accounts.insert(a, None);
        diff.cleared.insert(a);
        let overlay = Overlay { base: base.clone(), diffs: vec![Arc::new(diff)] };
        assert_eq!(overlay.accounts(&[a, a]).unwrap(), [None, None]);
        assert_eq!(overlay.slots(&[(a, U256::from(1))]).unwrap(), [U256::ZERO]);
        assert!(base.batches.lock().unwrap().is_empty());
    }
}
