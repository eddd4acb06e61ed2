//! The work of a snap sync and how it is kept in the store's metadata, so that a sync killed at
//! any moment resumes where its last write left it: each verified answer is written in one
//! batch with the tasks it finishes, shortens or adds.
//!
//! Keys: `snap/pivot` (number ‖ hash ‖ state root), `snap/counts` (the totals),
//! `snap/acct/<i>` (an account chunk: next hash ‖ last hash ‖ first hash),
//! `snap/stor/<account hash>` (an account's storage: its root ‖ the next slot hash),
//! `snap/code/<code hash>` (a code wanted).

use super::{progress::Counts, Pivot};
use alloy_primitives::{B256, U256};
use gigagas_storage_api::{HashedStateReader, MetadataProvider, ProviderError};
use std::collections::{BTreeMap, HashSet};

pub(crate) const PIVOT: &[u8] = b"snap/pivot";
pub(crate) const COUNTS: &[u8] = b"snap/counts";
pub(crate) const CHUNK: &[u8] = b"snap/acct/";
pub(crate) const STORAGE: &[u8] = b"snap/stor/";
pub(crate) const CODE: &[u8] = b"snap/code/";
/// Every key a sync writes starts with it.
pub(crate) const PREFIX: &[u8] = b"snap/";

/// A part of the account hash space, downloaded in order from `next` to `last` (inclusive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub first: B256,
    pub next: B256,
    pub last: B256,
    pub busy: bool,
}

/// An account's storage still to download from `next` on, under `root`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StorageTask {
    pub root: B256,
    pub next: B256,
    pub busy: bool,
}

/// Everything left to download.
#[derive(Debug, Default)]
pub(crate) struct Tasks {
    pub chunks: BTreeMap<u8, Chunk>,
    pub storage: BTreeMap<B256, StorageTask>,
    /// Codes wanted, and whether a request for each is out.
    pub codes: BTreeMap<B256, bool>,
    /// Codes this run fetched (written or about to be; not recorded: a resumed run finds the
    /// written ones in the store).
    pub fetched_codes: HashSet<B256>,
}

pub(crate) fn key(prefix: &[u8], id: &[u8]) -> Vec<u8> {
    [prefix, id].concat()
}

/// A chunk's record: next hash ‖ last hash ‖ first hash.
pub(crate) fn chunk_value(chunk: &Chunk) -> Vec<u8> {
    [chunk.next.as_slice(), chunk.last.as_slice(), chunk.first.as_slice()].concat()
}

pub(crate) fn storage_value(root: &B256, next: &B256) -> Vec<u8> {
    [root.as_slice(), next.as_slice()].concat()
}

pub(crate) fn pivot_value(pivot: &Pivot) -> Vec<u8> {
    [&pivot.number.to_be_bytes()[..], pivot.hash.as_slice(), pivot.root.as_slice()].concat()
}

/// The first hash of chunk `i` of `n` equal parts of the hash space.
fn chunk_first(i: usize, n: usize) -> B256 {
    let step = U256::MAX / U256::from(n);
    B256::from(step * U256::from(i) + if i == 0 { U256::ZERO } else { U256::from(i) })
}

impl Tasks {
    /// A new sync's tasks: the account hash space in `n` chunks (geth fetches 16 at once).
    pub(crate) fn fresh(n: usize) -> Self {
        let n = n.clamp(1, 256);
        let mut tasks = Self::default();
        for i in 0..n {
            let first = chunk_first(i, n);
            let last = if i + 1 == n {
                B256::repeat_byte(0xff)
            } else {
                B256::from(U256::from_be_bytes(chunk_first(i + 1, n).0) - U256::from(1))
            };
            tasks.chunks.insert(i as u8, Chunk { first, next: first, last, busy: false });
        }
        tasks
    }

    /// The metadata entries that record these tasks.
    pub(crate) fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        for (i, c) in &self.chunks {
            out.push((key(CHUNK, &[*i]), chunk_value(c)));
        }
        for (account, t) in &self.storage {
            out.push((key(STORAGE, account.as_slice()), storage_value(&t.root, &t.next)));
        }
        for code in self.codes.keys() {
            out.push((key(CODE, code.as_slice()), Vec::new()));
        }
        out
    }

    /// The sync recorded in `store`: its pivot, its tasks and totals; `None` when none is.
    pub(crate) fn load<S: HashedStateReader + MetadataProvider + ?Sized>(
        store: &S,
    ) -> Result<Option<(Pivot, Self, Counts)>, ProviderError> {
        let Some(pivot) = store.meta(PIVOT)? else { return Ok(None) };
        let corrupt = |key: &[u8], reason: &str| ProviderError::Corrupt {
            table: "meta",
            key: String::from_utf8_lossy(key).into_owned(),
            reason: reason.into(),
        };
        if pivot.len() != 72 {
            return Err(corrupt(PIVOT, "not 72 bytes"));
        }
        let pivot = Pivot {
            number: u64::from_be_bytes(pivot[..8].try_into().expect("8 bytes")),
            hash: B256::from_slice(&pivot[8..40]),
            root: B256::from_slice(&pivot[40..]),
        };
        let mut tasks = Self::default();
        for (k, v) in store.meta_with_prefix(CHUNK)? {
            if k.len() != CHUNK.len() + 1 || v.len() != 96 {
                return Err(corrupt(&k, "a malformed account chunk"));
            }
            tasks.chunks.insert(
                k[CHUNK.len()],
                Chunk {
                    next: B256::from_slice(&v[..32]),
                    last: B256::from_slice(&v[32..64]),
                    first: B256::from_slice(&v[64..]),
                    busy: false,
                },
            );
        }
        for (k, v) in store.meta_with_prefix(STORAGE)? {
            if k.len() != STORAGE.len() + 32 || v.len() != 64 {
                return Err(corrupt(&k, "a malformed storage task"));
            }
            tasks.storage.insert(
                B256::from_slice(&k[STORAGE.len()..]),
                StorageTask {
                    root: B256::from_slice(&v[..32]),
                    next: B256::from_slice(&v[32..]),
                    busy: false,
                },
            );
        }
        for (k, _) in store.meta_with_prefix(CODE)? {
            if k.len() != CODE.len() + 32 {
                return Err(corrupt(&k, "a malformed code task"));
            }
            tasks.codes.insert(B256::from_slice(&k[CODE.len()..]), false);
        }
        let counts = store.meta(COUNTS)?.and_then(|c| Counts::decode(&c)).unwrap_or_default();
        Ok(Some((pivot, tasks, counts)))
    }

    /// Whether nothing is left to download.
    pub(crate) fn is_empty(&self) -> bool {
        self.chunks.is_empty() && self.storage.is_empty() && self.codes.is_empty()
    }

    /// The share of the account hash space downloaded, in millionths (each chunk weighs the
    /// same; a finished chunk is gone from the tasks).
    pub(crate) fn covered_ppm(&self, total_chunks: usize) -> u64 {
        if total_chunks == 0 {
            return 1_000_000;
        }
        let top = |h: &B256| u64::from_be_bytes(h[..8].try_into().expect("8 bytes")) as f64;
        let open: f64 = self
            .chunks
            .values()
            .map(|c| {
                let span = (top(&c.last) - top(&c.first)).max(1.0);
                1.0 - ((top(&c.next) - top(&c.first)) / span).clamp(0.0, 1.0)
            })
            .sum();
        ((1.0 - open / total_chunks as f64) * 1e6) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_tile_the_hash_space() {
        for n in [1, 2, 16, 255] {
            let tasks = Tasks::fresh(n);
            let chunks: Vec<_> = tasks.chunks.values().collect();
            assert_eq!(chunks.len(), n);
            assert_eq!(chunks[0].first, B256::ZERO);
            assert_eq!(chunks[n - 1].last, B256::repeat_byte(0xff));
            for pair in chunks.windows(2) {
                let after = U256::from_be_bytes(pair[0].last.0) + U256::from(1);
                assert_eq!(B256::from(after), pair[1].first, "{n} chunks");
            }
            assert_eq!(tasks.covered_ppm(n), 0);
        }
    }
}
