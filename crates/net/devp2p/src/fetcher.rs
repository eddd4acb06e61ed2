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

use alloy_primitives::{Bytes, B256};
use gigagas_eth_wire_types::CustodyBitmap;
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
    /// Whether the peer holds the blob's cells of columns 0..63 (the blob itself; always
    /// below eth/72).
    holds_blobs: bool,
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

    /// `peer` announced `hash` with type `tx_type` and network size `size` (bytes), holding
    /// the blobs' first 64 cell columns (`holds_blobs`; eth/72's custody bitmap). True when
    /// `hash` is to be asked of `peer` now (nobody is fetching it); otherwise `peer` is kept
    /// as an alternative. A peer announcing the same hash twice counts once.
    pub fn announced(
        &mut self,
        peer: PeerId,
        hash: B256,
        tx_type: u8,
        size: u32,
        holds_blobs: bool,
    ) -> bool {
        if !self.entries.contains_key(&hash) && self.entries.len() >= MAX_TRACKED {
            return false;
        }
        let entry = self.entries.entry(hash).or_default();
        if entry.announcements.iter().any(|a| a.peer == peer) {
            return false;
        }
        entry.announcements.push(Announcement { peer, tx_type, size, holds_blobs });
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

    /// The peers that announced `hash` holding its blobs, `first` first when among them.
    pub fn blob_holders(&self, hash: &B256, first: PeerId) -> Vec<PeerId> {
        let Some(entry) = self.entries.get(hash) else { return Vec::new() };
        let mut holders: Vec<PeerId> =
            entry.announcements.iter().filter(|a| a.holds_blobs).map(|a| a.peer).collect();
        if let Some(i) = holders.iter().position(|p| *p == first) {
            holders.swap(0, i);
        }
        holders
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
#[derive(Debug, Clone, thiserror::Error)]
pub enum TransactionViolation {
    /// Not a transaction in its network form.
    #[error("undecodable transaction: {0}")]
    Undecodable(#[source] alloy_eips::eip2718::Eip2718Error),
    /// Not a blob transaction where one was expected (the cells' transaction).
    #[error("not a blob transaction")]
    NotBlob,
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

/// A transaction a peer sent, as [`check_network_transaction`] found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Its hash.
    pub hash: B256,
    /// Its EIP-2718 type.
    pub tx_type: u8,
    /// Its blobs (versioned hashes); on eth/72 they are still to be fetched as cells.
    pub blobs: usize,
}

/// A transaction a peer sent in its network form (`raw`; a blob transaction as EIP-4844's
/// network wrapper with its sidecar, whose hash covers the transaction only), after the checks
/// geth makes before its pool sees one: it decodes; a blob transaction is not in a broadcast
/// (`broadcast`), carries its sidecar, and the sidecar's commitments match its versioned
/// hashes, with every blob below eth/72 and none on eth/72 (`eth72`: they travel as cells).
/// KZG proofs are the pool's to check.
///
/// # Errors
/// [`TransactionViolation`].
pub fn check_network_transaction(
    raw: &[u8],
    broadcast: bool,
    eth72: bool,
) -> Result<Checked, TransactionViolation> {
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
                Ok(tx) => Ok(Checked { hash: *tx.tx_hash(), tx_type: tx.ty(), blobs: 0 }),
                Err(_) => Err(TransactionViolation::Undecodable(e)),
            };
        }
    };
    let hash = *tx.hash();
    let EthereumTxEnvelope::Eip4844(signed) = &tx else {
        return Ok(Checked { hash, tx_type: tx.ty(), blobs: 0 });
    };
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
    let blobs_expected = if eth72 { 0 } else { hashes.len() };
    if blobs != blobs_expected || commitments.len() != hashes.len() {
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
    Ok(Checked { hash, tx_type: 3, blobs: hashes.len() })
}

/// The first 64 cell columns of a blob extension are the blob (EIP-7594): the columns asked
/// for to rebuild the blobs of a transaction that came without them (eth/72).
pub fn blob_columns() -> CustodyBitmap {
    CustodyBitmap::from_columns(0..64)
}

/// The network form of blob transaction `raw` (come without its blobs, eth/72) with the blobs
/// rebuilt from `cells`: the cells of columns 0..63, column by column and blob by blob
/// (`Cells`' order), 2,048 bytes each.
///
/// # Errors
/// [`TransactionViolation::SidecarMismatch`] when the cells are not 64 per blob of 2,048 bytes,
/// [`TransactionViolation::Undecodable`] when `raw` is no blob transaction's network form.
pub fn with_blobs(raw: &[u8], cells: &[Bytes]) -> Result<Vec<u8>, TransactionViolation> {
    use alloy_consensus::{EthereumTxEnvelope, TxEip4844WithSidecar};
    use alloy_eips::{
        eip2718::{Decodable2718, Encodable2718},
        eip4844::Blob,
        eip7594::BlobTransactionSidecarVariant,
    };
    type Network = EthereumTxEnvelope<TxEip4844WithSidecar<BlobTransactionSidecarVariant>>;
    const CELL: usize = 2048;
    let mut tx = Network::decode_2718_exact(raw).map_err(TransactionViolation::Undecodable)?;
    let hash = *tx.hash();
    let EthereumTxEnvelope::Eip4844(signed) = &mut tx else {
        return Err(TransactionViolation::NotBlob);
    };
    let n = signed.tx().tx.blob_versioned_hashes.len();
    let mismatch = |reason: String| TransactionViolation::SidecarMismatch { hash, reason };
    if cells.len() != 64 * n || cells.iter().any(|c| c.len() != CELL) {
        return Err(mismatch(format!("{} cells for {n} blobs", cells.len())));
    }
    let mut blobs = vec![Blob::default(); n];
    for (i, cell) in cells.iter().enumerate() {
        let (column, blob) = (i / n, i % n);
        blobs[blob].0[column * CELL..(column + 1) * CELL].copy_from_slice(cell);
    }
    // The signature and the hash cover the transaction, not the sidecar.
    match &mut signed.tx_mut().sidecar {
        BlobTransactionSidecarVariant::Eip4844(s) => s.blobs = blobs,
        BlobTransactionSidecarVariant::Eip7594(s) => s.blobs = blobs,
    }
    Ok(tx.encoded_2718())
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
        assert!(f.announced(peer(1), h, 3, 1000, true));
        assert!(!f.announced(peer(2), h, 3, 1000, true));
        assert!(!f.announced(peer(3), h, 3, 1000, true));
        assert!(!f.announced(peer(2), h, 3, 1000, true), "twice from one peer counts once");
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
        f.announced(peer(1), h, 3, 1000, true);
        f.announced(peer(2), h, 2, 1000, true);
        f.announced(peer(3), h, 3, 1010, true);
        f.announced(peer(4), h, 3, 1008, true);
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
            assert!(f.announced(peer(1), B256::left_padding_from(&i.to_be_bytes()), 2, 100, true));
        }
        assert!(!f.announced(peer(1), B256::repeat_byte(0xff), 2, 100, true));
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

    /// `network` without its blobs.
    fn strip(network: &[u8]) -> Vec<u8> {
        use alloy_consensus::{EthereumTxEnvelope, TxEip4844WithSidecar};
        use alloy_eips::{
            eip2718::{Decodable2718, Encodable2718},
            eip7594::BlobTransactionSidecarVariant,
        };
        type Network = EthereumTxEnvelope<TxEip4844WithSidecar<BlobTransactionSidecarVariant>>;
        let mut tx = Network::decode_2718_exact(network).unwrap();
        let EthereumTxEnvelope::Eip4844(signed) = &mut tx else { panic!() };
        if let BlobTransactionSidecarVariant::Eip7594(s) = &mut signed.tx_mut().sidecar {
            s.blobs.clear();
        }
        tx.encoded_2718()
    }

    #[test]
    fn blob_transactions_follow_geths_wire_rules() {
        let (network, bare) = blob_tx(1, 1);
        let hash = alloy_primitives::keccak256(&bare);
        let checked = Checked { hash, tx_type: 3, blobs: 1 };
        assert_eq!(check_network_transaction(&network, false, false).unwrap(), checked);
        assert!(
            matches!(check_network_transaction(&network, true, false), Err(TransactionViolation::BroadcastBlob(h)) if h == hash)
        );
        assert!(
            matches!(check_network_transaction(&bare, false, false), Err(TransactionViolation::MissingSidecar(h)) if h == hash)
        );
        let (mismatched, _) = blob_tx(2, 1);
        assert!(matches!(
            check_network_transaction(&mismatched, false, false),
            Err(TransactionViolation::SidecarMismatch { .. })
        ));
        // eth/72: blobs stay out, and come back from their cells.
        assert!(matches!(
            check_network_transaction(&network, false, true),
            Err(TransactionViolation::SidecarMismatch { .. })
        ));
        let stripped = strip(&network);
        assert_eq!(check_network_transaction(&stripped, false, true).unwrap(), checked);
        let cells: Vec<Bytes> = (0..64).map(|_| Bytes::from(vec![0u8; 2048])).collect();
        assert_eq!(with_blobs(&stripped, &cells).unwrap(), network, "the blob was all zeros");
        assert!(matches!(
            with_blobs(&stripped, &cells[..63]),
            Err(TransactionViolation::SidecarMismatch { .. })
        ));
    }

    #[test]
    fn what_is_not_a_transaction_is_a_violation() {
        assert!(matches!(
            check_network_transaction(&[0x90], false, false),
            Err(TransactionViolation::Undecodable(_))
        ));
        assert!(matches!(
            check_network_transaction(&[], false, false),
            Err(TransactionViolation::Undecodable(_))
        ));
    }
}
