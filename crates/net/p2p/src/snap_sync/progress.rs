//! What snap sync has done so far, shared with whoever reports it (the node's progress line,
//! `eth_syncing`, metrics): counters a sync task bumps and readers copy at any time.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

/// The stage a snap sync is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SnapPhase {
    /// Not started.
    #[default]
    Idle,
    /// Downloading account ranges, storage ranges and codes.
    Ranges,
    /// The pivot's state is whole and checked.
    Done,
}

/// Counters of a snap sync (shared: `Arc<SnapProgress>`).
#[derive(Debug, Default)]
pub struct SnapProgress {
    phase: AtomicU8,
    pivot: AtomicU64,
    accounts: AtomicU64,
    account_bytes: AtomicU64,
    slots: AtomicU64,
    storage_bytes: AtomicU64,
    codes: AtomicU64,
    code_bytes: AtomicU64,
    covered_ppm: AtomicU64,
    trie_nodes: AtomicU64,
}

/// A copy of [`SnapProgress`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SnapProgressSnapshot {
    /// The stage.
    pub phase: SnapPhase,
    /// The pivot block's number (0 before one is chosen).
    pub pivot: u64,
    /// Accounts downloaded and proven.
    pub accounts: u64,
    /// Their bytes (hash and slim body, as snap counts them).
    pub account_bytes: u64,
    /// Storage slots downloaded and proven.
    pub slots: u64,
    /// Their bytes (hash and value).
    pub storage_bytes: u64,
    /// Contract codes downloaded.
    pub codes: u64,
    /// Their bytes.
    pub code_bytes: u64,
    /// The share of the account hash space downloaded, in millionths.
    pub covered_ppm: u64,
    /// Trie nodes written (built from each proven range as it arrives), counted since the
    /// process started.
    pub trie_nodes: u64,
}

impl SnapProgress {
    /// The counters now.
    pub fn snapshot(&self) -> SnapProgressSnapshot {
        SnapProgressSnapshot {
            phase: match self.phase.load(Relaxed) {
                1 => SnapPhase::Ranges,
                2 => SnapPhase::Done,
                _ => SnapPhase::Idle,
            },
            pivot: self.pivot.load(Relaxed),
            accounts: self.accounts.load(Relaxed),
            account_bytes: self.account_bytes.load(Relaxed),
            slots: self.slots.load(Relaxed),
            storage_bytes: self.storage_bytes.load(Relaxed),
            codes: self.codes.load(Relaxed),
            code_bytes: self.code_bytes.load(Relaxed),
            covered_ppm: self.covered_ppm.load(Relaxed),
            trie_nodes: self.trie_nodes.load(Relaxed),
        }
    }

    pub(crate) fn set_phase(&self, phase: SnapPhase) {
        let value = match phase {
            SnapPhase::Idle => 0,
            SnapPhase::Ranges => 1,
            SnapPhase::Done => 2,
        };
        self.phase.store(value, Relaxed);
    }

    pub(crate) fn set_pivot(&self, number: u64) {
        self.pivot.store(number, Relaxed);
    }

    pub(crate) fn set_counts(&self, counts: &Counts) {
        self.accounts.store(counts.accounts, Relaxed);
        self.account_bytes.store(counts.account_bytes, Relaxed);
        self.slots.store(counts.slots, Relaxed);
        self.storage_bytes.store(counts.storage_bytes, Relaxed);
        self.codes.store(counts.codes, Relaxed);
        self.code_bytes.store(counts.code_bytes, Relaxed);
    }

    pub(crate) fn set_covered(&self, ppm: u64) {
        self.covered_ppm.store(ppm, Relaxed);
    }

    pub(crate) fn add_trie_nodes(&self, nodes: u64) {
        self.trie_nodes.fetch_add(nodes, Relaxed);
    }
}

/// The totals kept with the sync's progress in the store (so that a resumed sync counts on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    pub accounts: u64,
    pub account_bytes: u64,
    pub slots: u64,
    pub storage_bytes: u64,
    pub codes: u64,
    pub code_bytes: u64,
}

impl Counts {
    pub(crate) fn encode(&self) -> Vec<u8> {
        [
            self.accounts,
            self.account_bytes,
            self.slots,
            self.storage_bytes,
            self.codes,
            self.code_bytes,
        ]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != 48 {
            return None;
        }
        let v = |i: usize| u64::from_be_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        Some(Self {
            accounts: v(0),
            account_bytes: v(1),
            slots: v(2),
            storage_bytes: v(3),
            codes: v(4),
            code_bytes: v(5),
        })
    }
}
