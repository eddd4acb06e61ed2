//! Which peer an announced transaction is fetched from (geth's `TxFetcher`, reth's
//! `TransactionFetcher`), as state without I/O: the network asks it and does what it says.
//!
//! Flow: every `NewPooledTransactionHashes` entry is recorded with its announcer's type and
//! size ([`TransactionFetcher::announced`]); a hash nobody is fetching is asked of the first
//! peer that announced it. When the answer comes, before the pool validates it
//! ([`TransactionFetcher::arrived`]), every peer whose announcement disagrees with the
//! transaction served (another type, or a size more than [`SIZE_SLACK`] bytes off) is named,
//! to be dropped; before that, what breaks the wire's rules ([`check_network_transaction`]:
//! undecodable, a blob transaction broadcast, without its sidecar or with one that does not
//! match its versioned hashes) drops the peer that sent it. A valid one is forgotten ([`TransactionFetcher::delivered`]). A
//! hash the peer did not deliver, or delivered invalid (a blob transaction without its
//! sidecar, or with one that does not match its versioned hashes), or a request that failed
//! ([`TransactionFetcher::failed`]) goes to the next peer that announced it, until none is
//! left. At most [`MAX_TRACKED`] hashes are tracked; announcements past that are ignored until
//! room is made.

use alloy_primitives::B256;
use gigagas_net_peers::PeerId;
use std::collections::{HashMap, VecDeque};

/// The most hashes tracked at once (announced, being fetched, or waiting for another peer):
/// geth's `maxTxAnnounces` per peer is 4,096; this bounds all peers together.
pub const MAX_TRACKED: usize = 32_768;

/// How far an announced size may be from the served transaction's before the announcer is
/// dropped (geth tolerates 8 bytes: the RLP and consensus encodings of some transactions
/// differ by a few bytes).
pub const SIZE_SLACK: u32 = 8;

/// One peer's announcement of a hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Announcement {
    peer: PeerId,
    tx_type: u8,
    size: u32,
}

/// A tracked hash.
#[derive(Debug, Default)]
struct Entry {
    /// Every announcement of it, in arrival order.
    announcements: Vec<Announcement>,
    /// The peers not asked yet, in arrival order.
    untried: VecDeque<PeerId>,
    /// The peer asked now.
    fetching: Option<PeerId>,
}

/// What the network should do about a transaction that arrived.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Peers whose announcement of it disagrees with what was served: to be dropped.
    pub mismatched: Vec<PeerId>,
}

/// The fetcher's state; see the module doc.
#[derive(Debug, Default)]
pub struct TransactionFetcher {
    entries: HashMap<B256, Entry>,
}

impl TransactionFetcher {
    /// How many hashes are tracked.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no hash is tracked.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `peer` announced `hash` with type `tx_type` and network size `size` (bytes). True when
    /// `hash` is to be asked of `peer` now (nobody is fetching it); otherwise `peer` is kept
    /// as an alternative. A peer announcing the same hash twice counts once.
    pub fn announced(&mut self, peer: PeerId, hash: B256, tx_type: u8, size: u32) -> bool {
        if !self.entries.contains_key(&hash) && self.entries.len() >= MAX_TRACKED {
            return false;
        }
        let entry = self.entries.entry(hash).or_default();
        if entry.announcements.iter().any(|a| a.peer == peer) {
            return false;
        }
        entry.announcements.push(Announcement { peer, tx_type, size });
        if entry.fetching.is_none() {
            entry.fetching = Some(peer);
            true
        } else {
            entry.untried.push_back(peer);
            false
        }
    }

    /// Whether `hash` is tracked (announced and not yet delivered or given up).
    pub fn is_tracked(&self, hash: &B256) -> bool {
        self.entries.contains_key(hash)
    }

    /// A transaction `hash` of type `tx_type` and network size `size` arrived (asked for, or
    /// broadcast), before it is validated: the announcers that disagree with it, which are no
    /// longer asked for it (they are to be dropped).
    pub fn arrived(&mut self, hash: &B256, tx_type: u8, size: u32) -> Delivery {
        let Some(entry) = self.entries.get_mut(hash) else { return Delivery::default() };
        let mismatched: Vec<PeerId> = entry
            .announcements
            .iter()
            .filter(|a| a.tx_type != tx_type || a.size.abs_diff(size) > SIZE_SLACK)
            .map(|a| a.peer)
            .collect();
        entry.announcements.retain(|a| !mismatched.contains(&a.peer));
        entry.untried.retain(|p| !mismatched.contains(p));
        Delivery { mismatched }
    }

    /// `hash` arrived valid (the pool took it or knew it): forgotten.
    pub fn delivered(&mut self, hash: &B256) {
        self.entries.remove(hash);
    }

    /// `peer` did not deliver `hashes` (left out of its answer, served invalid, or the request
    /// failed): the next peer to ask for each, grouped by peer; a hash with no peer left is
    /// forgotten.
    pub fn failed(&mut self, peer: PeerId, hashes: &[B256]) -> HashMap<PeerId, Vec<B256>> {
        let mut next: HashMap<PeerId, Vec<B256>> = HashMap::new();
        for hash in hashes {
            let Some(entry) = self.entries.get_mut(hash) else { continue };
            if entry.fetching != Some(peer) {
                continue;
            }
            entry.untried.retain(|p| *p != peer);
            match entry.untried.pop_front() {
                Some(other) => {
                    entry.fetching = Some(other);
                    next.entry(other).or_default().push(*hash);
                }
                None => {
                    self.entries.remove(hash);
                }
            }
        }
        next
    }

    /// `peer` is gone: it is no longer an alternative; what it was asked for goes to the next
    /// announcer (as [`Self::failed`]).
    pub fn peer_gone(&mut self, peer: PeerId) -> HashMap<PeerId, Vec<B256>> {
        let mut asked = Vec::new();
        for (hash, entry) in &mut self.entries {
            entry.untried.retain(|p| *p != peer);
            if entry.fetching == Some(peer) {
                asked.push(*hash);
            }
        }
        self.failed(peer, &asked)
    }
}

/// Why a transaction a peer sent breaks the wire's rules (geth's `handleTransactions`): the
/// peer that sent it is dropped before the pool looks at it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransactionViolation {
    /// Not a transaction in its network form.
    #[error("undecodable transaction: {0}")]
    Undecodable(String),
    /// A blob transaction in a `Transactions` broadcast (only announced, then asked for).
    #[error("blob transaction {0} broadcast")]
    BroadcastBlob(B256),
    /// A blob transaction delivered without its sidecar.
    #[error("blob transaction {0} without its sidecar")]
    MissingSidecar(B256),
    /// A sidecar whose blob or commitment count, or a commitment's versioned hash, disagrees
    /// with the transaction's versioned hashes.
    #[error("blob transaction {hash}: sidecar disagrees with its versioned hashes ({reason})")]
    SidecarMismatch {
        /// The transaction.
        hash: B256,
        /// What disagrees.
        reason: String,
    },
}

/// The hash and EIP-2718 type of a transaction a peer sent in its network form (`raw`; a blob
/// transaction as EIP-4844's network wrapper with its sidecar, whose hash covers the
/// transaction only), after the checks geth makes before its pool sees one: it decodes; a blob
/// transaction is not in a broadcast (`broadcast`), carries its sidecar, and the sidecar's
/// blobs and commitments match its versioned hashes (KZG proofs are the pool's to check).
///
/// # Errors
/// [`TransactionViolation`].
pub fn check_network_transaction(
    raw: &[u8],
    broadcast: bool,
) -> Result<(B256, u8), TransactionViolation> {
    use alloy_consensus::{EthereumTxEnvelope, Transaction, TxEip4844WithSidecar, TxEnvelope};
    use alloy_eips::{
        eip2718::{Decodable2718, Typed2718},
        eip4844::kzg_to_versioned_hash,
        eip7594::BlobTransactionSidecarVariant,
    };
    type Network = EthereumTxEnvelope<TxEip4844WithSidecar<BlobTransactionSidecarVariant>>;
    let tx = match Network::decode_2718_exact(raw) {
        Ok(tx) => tx,
        Err(e) => {
            return match TxEnvelope::decode_2718_exact(raw) {
                Ok(tx) if tx.is_eip4844() && broadcast => {
                    Err(TransactionViolation::BroadcastBlob(*tx.tx_hash()))
                }
                Ok(tx) if tx.is_eip4844() => {
                    Err(TransactionViolation::MissingSidecar(*tx.tx_hash()))
                }
                Ok(tx) => Ok((*tx.tx_hash(), tx.ty())),
                Err(_) => Err(TransactionViolation::Undecodable(e.to_string())),
            };
        }
    };
    let hash = *tx.hash();
    let EthereumTxEnvelope::Eip4844(signed) = &tx else { return Ok((hash, tx.ty())) };
    if broadcast {
        return Err(TransactionViolation::BroadcastBlob(hash));
    }
    let with_sidecar = signed.tx();
    let (blobs, commitments) = match &with_sidecar.sidecar {
        BlobTransactionSidecarVariant::Eip4844(s) => (s.blobs.len(), &s.commitments),
        BlobTransactionSidecarVariant::Eip7594(s) => (s.blobs.len(), &s.commitments),
    };
    let hashes = with_sidecar.tx.blob_versioned_hashes().unwrap_or_default();
    let mismatch = |reason: String| TransactionViolation::SidecarMismatch { hash, reason };
    if blobs != hashes.len() || commitments.len() != hashes.len() {
        return Err(mismatch(format!(
            "{blobs} blobs, {} commitments, {} versioned hashes",
            commitments.len(),
            hashes.len()
        )));
    }
    for (index, (commitment, want)) in commitments.iter().zip(hashes).enumerate() {
        if kzg_to_versioned_hash(commitment.as_slice()) != *want {
            return Err(mismatch(format!("commitment {index}")));
        }
    }
    Ok((hash, 3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(n: u8) -> PeerId {
        PeerId::repeat_byte(n)
    }

    #[test]
    fn the_first_announcer_is_asked_and_the_others_wait() {
        let mut f = TransactionFetcher::default();
        let h = B256::repeat_byte(1);
        assert!(f.announced(peer(1), h, 3, 1000));
        assert!(!f.announced(peer(2), h, 3, 1000));
        assert!(!f.announced(peer(3), h, 3, 1000));
        assert!(!f.announced(peer(2), h, 3, 1000), "twice from one peer counts once");
        // Peer 1 serves it invalid: peer 2 is next, then peer 3, then nobody.
        assert_eq!(f.failed(peer(1), &[h]), HashMap::from([(peer(2), vec![h])]));
        assert_eq!(f.failed(peer(1), &[h]), HashMap::new(), "peer 1 is no longer asked");
        assert_eq!(f.peer_gone(peer(2)), HashMap::from([(peer(3), vec![h])]));
        assert_eq!(f.failed(peer(3), &[h]), HashMap::new());
        assert!(!f.is_tracked(&h));
    }

    #[test]
    fn announcers_that_disagree_with_the_served_transaction_are_named() {
        let mut f = TransactionFetcher::default();
        let h = B256::repeat_byte(2);
        f.announced(peer(1), h, 3, 1000);
        f.announced(peer(2), h, 2, 1000);
        f.announced(peer(3), h, 3, 1010);
        f.announced(peer(4), h, 3, 1008);
        let d = f.arrived(&h, 3, 1000);
        assert_eq!(d.mismatched, vec![peer(2), peer(3)], "type, then a size 10 bytes off");
        // Served invalid by peer 1: peer 4 is next (2 and 3 are out).
        assert_eq!(f.failed(peer(1), &[h]), HashMap::from([(peer(4), vec![h])]));
        assert_eq!(f.arrived(&h, 3, 1000), Delivery::default());
        f.delivered(&h);
        assert!(!f.is_tracked(&h));
    }

    #[test]
    fn tracking_is_bounded() {
        let mut f = TransactionFetcher::default();
        for i in 0..MAX_TRACKED as u64 {
            assert!(f.announced(peer(1), B256::left_padding_from(&i.to_be_bytes()), 2, 100));
        }
        assert!(!f.announced(peer(1), B256::repeat_byte(0xff), 2, 100));
        assert_eq!(f.len(), MAX_TRACKED);
    }

    /// A blob transaction's network form with one blob whose commitment is `commitment`
    /// (proofs are not checked here), versioned hashes from `hashed`; and the bare form.
    fn blob_tx(commitment: u8, hashed: u8) -> (Vec<u8>, Vec<u8>) {
        use alloy_consensus::{
            EthereumTxEnvelope, SignableTransaction, TxEip4844, TxEip4844WithSidecar, TxEnvelope,
        };
        use alloy_eips::{
            eip2718::Encodable2718,
            eip4844::{kzg_to_versioned_hash, Blob, Bytes48},
            eip7594::{BlobTransactionSidecarEip7594, BlobTransactionSidecarVariant},
        };
        let sidecar = BlobTransactionSidecarEip7594 {
            blobs: vec![Blob::default()],
            commitments: vec![Bytes48::repeat_byte(commitment)],
            cell_proofs: vec![Bytes48::default(); 128],
        };
        let tx = TxEip4844 {
            chain_id: 1,
            blob_versioned_hashes: vec![kzg_to_versioned_hash(&[hashed; 48])],
            ..Default::default()
        };
        let sig = alloy_primitives::Signature::test_signature();
        let bare = TxEnvelope::from(tx.clone().into_signed(sig)).encoded_2718();
        let with =
            TxEip4844WithSidecar { tx, sidecar: BlobTransactionSidecarVariant::Eip7594(sidecar) };
        let network =
            EthereumTxEnvelope::<TxEip4844WithSidecar<BlobTransactionSidecarVariant>>::from(
                with.into_signed(sig),
            )
            .encoded_2718();
        (network, bare)
    }

    #[test]
    fn blob_transactions_follow_geths_wire_rules() {
        let (network, bare) = blob_tx(1, 1);
        let hash = alloy_primitives::keccak256(&bare);
        assert_eq!(check_network_transaction(&network, false), Ok((hash, 3)));
        assert_eq!(
            check_network_transaction(&network, true),
            Err(TransactionViolation::BroadcastBlob(hash))
        );
        assert_eq!(
            check_network_transaction(&bare, false),
            Err(TransactionViolation::MissingSidecar(hash))
        );
        let (mismatched, _) = blob_tx(2, 1);
        assert!(matches!(
            check_network_transaction(&mismatched, false),
            Err(TransactionViolation::SidecarMismatch { .. })
        ));
    }

    #[test]
    fn what_is_not_a_transaction_is_a_violation() {
        assert!(matches!(
            check_network_transaction(&[0x90], false),
            Err(TransactionViolation::Undecodable(_))
        ));
        assert!(matches!(
            check_network_transaction(&[], false),
            Err(TransactionViolation::Undecodable(_))
        ));
    }
}
