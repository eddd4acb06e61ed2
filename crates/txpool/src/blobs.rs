//! Blob sidecars of pooled blob transactions (EIP-4844, EIP-7594): their checks when a
//! transaction arrives, and the store the payload builder and `engine_getBlobsV1/V2` read.
//!
//! Flow: `eth_sendRawTransaction` brings a blob transaction in its network form (with the
//! sidecar); [`validate`] checks the sidecar has the form the head's fork takes ([`BlobForm`]:
//! one KZG proof per blob before Osaka, `CELLS_PER_EXT_BLOB` cell proofs per blob from Osaka —
//! an old-form sidecar is refused, not converted), that every commitment hashes to the
//! transaction's versioned hash at its index, and the KZG proofs with c-kzg and the mainnet
//! trusted setup (one batch; blob by blob only when the batch fails, to name the blob). The pool
//! keeps the sidecar beside the transaction ([`BlobStore`]) until the transaction leaves.

use alloy_eips::{
    eip4844::{env_settings::EnvKzgSettings, kzg_to_versioned_hash, BlobTransactionSidecar},
    eip7594::{BlobTransactionSidecarEip7594, BlobTransactionSidecarVariant, CELLS_PER_EXT_BLOB},
};
use alloy_primitives::B256;
use std::{collections::HashMap, sync::Arc};

/// Blob transactions kept at most by default (each carries up to the fork's blobs per
/// transaction, 128 KiB a blob): beyond, the cheapest is evicted for a newcomer that pays more.
pub const MAX_POOL_BLOB_TRANSACTIONS: usize = 256;

/// The sidecar form a fork takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobForm {
    /// Cancun to Prague: one KZG proof per blob (EIP-4844).
    Eip4844,
    /// Osaka on: the cell proofs of each blob's extension (EIP-7594, wrapper version 1).
    Eip7594,
}

impl BlobForm {
    fn name(self) -> &'static str {
        match self {
            Self::Eip4844 => "one KZG proof per blob (EIP-4844)",
            Self::Eip7594 => "cell proofs (EIP-7594)",
        }
    }
}

/// Why a blob transaction's sidecar is refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BlobError {
    /// The sidecar's form is not the one the fork takes.
    #[error("blob sidecar with {found}, the fork takes {expected}")]
    Form {
        /// The sidecar's.
        found: &'static str,
        /// The fork's.
        expected: &'static str,
    },
    /// Blobs, commitments, proofs and versioned hashes do not pair up.
    #[error(
        "blob sidecar: {blobs} blobs, {commitments} commitments, {proofs} proofs for \
         {hashes} versioned hashes ({per_blob} proofs a blob expected)"
    )]
    Count {
        /// Blobs in the sidecar.
        blobs: usize,
        /// Commitments in the sidecar.
        commitments: usize,
        /// Proofs in the sidecar.
        proofs: usize,
        /// Versioned hashes in the transaction.
        hashes: usize,
        /// Proofs a blob takes in this form.
        per_blob: usize,
    },
    /// A commitment does not hash to the transaction's versioned hash.
    #[error("blob {index}: versioned hash {have} does not match its commitment's {expected}")]
    VersionedHash {
        /// The blob's index.
        index: usize,
        /// The transaction's.
        have: B256,
        /// The commitment's.
        expected: B256,
    },
    /// A KZG proof does not verify.
    #[error("blob {index}: invalid KZG proof")]
    Proof {
        /// The blob's index.
        index: usize,
    },
    /// c-kzg refused the input (a blob or point that is not canonical).
    #[error("blob sidecar: {0}")]
    Kzg(#[source] Arc<alloy_eips::eip4844::c_kzg::Error>),
    /// A blob that does not verify alone with a reason other than its proof.
    #[error("blob sidecar: blob {index}: {source}")]
    Blob {
        /// The blob's index.
        index: usize,
        /// alloy's check's error.
        source: Arc<alloy_eips::eip4844::BlobTransactionValidationError>,
    },
    /// The batch check failed while every blob passes alone (c-kzg disagreeing with itself).
    #[error("blob sidecar: the batch check failed, every blob alone passed")]
    BatchOnly,
}

/// Loads the KZG trusted setup (alloy's default, c-kzg with precompute 8) now. The first
/// blob transaction checked otherwise waits for it (seconds on a small machine); later calls
/// return at once. A node calls it on a thread of its own at startup.
pub fn load_trusted_setup() {
    let _ = EnvKzgSettings::Default.get();
}

/// `sidecar` without its blobs: commitments and proofs only, as eth/72 (EIP-8070) carries a
/// blob transaction (the blobs travel as cells, `GetCells`).
pub fn without_blobs(sidecar: &BlobTransactionSidecarVariant) -> BlobTransactionSidecarVariant {
    match sidecar {
        BlobTransactionSidecarVariant::Eip4844(s) => {
            BlobTransactionSidecarVariant::Eip4844(BlobTransactionSidecar {
                blobs: Vec::new(),
                commitments: s.commitments.clone(),
                proofs: s.proofs.clone(),
            })
        }
        BlobTransactionSidecarVariant::Eip7594(s) => {
            BlobTransactionSidecarVariant::Eip7594(BlobTransactionSidecarEip7594 {
                blobs: Vec::new(),
                commitments: s.commitments.clone(),
                cell_proofs: s.cell_proofs.clone(),
            })
        }
    }
}

/// The bytes of the network form of blob transaction `tx` with `sidecar` once its blobs are
/// taken out ([`without_blobs`]).
pub fn size_without_blobs(
    tx: &alloy_consensus::TxEnvelope,
    sidecar: &BlobTransactionSidecarVariant,
) -> usize {
    use alloy_consensus::{EthereumTxEnvelope, TxEip4844Variant, TxEip4844WithSidecar};
    use alloy_eips::eip2718::Encodable2718;
    let network: EthereumTxEnvelope<TxEip4844WithSidecar<BlobTransactionSidecarVariant>> =
        tx.clone().map_eip4844(|tx| {
            let tx = match tx {
                TxEip4844Variant::TxEip4844(tx) => tx,
                TxEip4844Variant::TxEip4844WithSidecar(with) => with.tx,
            };
            TxEip4844WithSidecar { tx, sidecar: without_blobs(sidecar) }
        });
    network.encode_2718_len()
}

/// The cells of `columns` (ascending, each below 128) of `blobs`' extensions, column by
/// column and blob by blob within a column (EIP-8070's `Cells` order), 2,048 bytes each.
///
/// # Errors
/// [`BlobError::Kzg`] when c-kzg cannot extend a blob.
pub fn cells(
    blobs: &[alloy_eips::eip4844::Blob],
    columns: &[u64],
) -> Result<Vec<alloy_primitives::Bytes>, BlobError> {
    use alloy_eips::eip4844::c_kzg;
    let settings = EnvKzgSettings::Default.get();
    let extended: Vec<Box<[c_kzg::Cell; CELLS_PER_EXT_BLOB]>> = blobs
        .iter()
        .map(|blob| {
            let blob = c_kzg::Blob::new(blob.0);
            settings.compute_cells(&blob).map_err(|e| BlobError::Kzg(Arc::new(e)))
        })
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(columns.len() * blobs.len());
    for column in columns {
        let column = usize::try_from(*column).unwrap_or(usize::MAX);
        for cells in &extended {
            if let Some(cell) = cells.get(column) {
                out.push(alloy_primitives::Bytes::copy_from_slice(cell.to_bytes().as_slice()));
            }
        }
    }
    Ok(out)
}
/// Checks `sidecar` against the transaction's `hashes` and the fork's `form`.
///
/// # Errors
/// [`BlobError`] naming the blob at fault.
pub fn validate(
    sidecar: &BlobTransactionSidecarVariant,
    hashes: &[B256],
    form: BlobForm,
) -> Result<(), BlobError> {
    let (found, blobs, commitments, proofs, per_blob) = match sidecar {
        BlobTransactionSidecarVariant::Eip4844(s) => {
            (BlobForm::Eip4844, s.blobs.len(), &s.commitments, s.proofs.len(), 1)
        }
        BlobTransactionSidecarVariant::Eip7594(s) => (
            BlobForm::Eip7594,
            s.blobs.len(),
            &s.commitments,
            s.cell_proofs.len(),
            CELLS_PER_EXT_BLOB,
        ),
    };
    if found != form {
        return Err(BlobError::Form { found: found.name(), expected: form.name() });
    }
    let hashes_len = hashes.len();
    if blobs != hashes_len || commitments.len() != hashes_len || proofs != blobs * per_blob {
        return Err(BlobError::Count {
            blobs,
            commitments: commitments.len(),
            proofs,
            hashes: hashes_len,
            per_blob,
        });
    }
    for (index, (have, commitment)) in hashes.iter().zip(commitments).enumerate() {
        let expected = kzg_to_versioned_hash(commitment.as_slice());
        if *have != expected {
            return Err(BlobError::VersionedHash { index, have: *have, expected });
        }
    }
    let settings = EnvKzgSettings::Default.get();
    if sidecar.validate(hashes, settings).is_ok() {
        return Ok(());
    }
    // Blob by blob, to name the one at fault.
    for index in 0..blobs {
        let one = match sidecar {
            BlobTransactionSidecarVariant::Eip4844(s) => {
                BlobTransactionSidecarVariant::Eip4844(BlobTransactionSidecar::new(
                    vec![s.blobs[index]],
                    vec![s.commitments[index]],
                    vec![s.proofs[index]],
                ))
            }
            BlobTransactionSidecarVariant::Eip7594(s) => {
                let cells = index * CELLS_PER_EXT_BLOB..(index + 1) * CELLS_PER_EXT_BLOB;
                BlobTransactionSidecarVariant::Eip7594(BlobTransactionSidecarEip7594::new(
                    vec![s.blobs[index]],
                    vec![s.commitments[index]],
                    s.cell_proofs[cells].to_vec(),
                ))
            }
        };
        match one.validate(&hashes[index..=index], settings) {
            Ok(()) => {}
            Err(alloy_eips::eip4844::BlobTransactionValidationError::InvalidProof) => {
                return Err(BlobError::Proof { index })
            }
            Err(e) => return Err(BlobError::Blob { index, source: Arc::new(e) }),
        }
    }
    Err(BlobError::BatchOnly)
}

/// `n` blobs of distinct data, every field element canonical (tests and devnets). Not a
/// constant apart: blobs that differ by a constant share their KZG proofs, and a test that
/// swaps proofs between them would check nothing.
pub fn sample_blobs(n: usize) -> Vec<alloy_eips::eip4844::Blob> {
    (0..n)
        .map(|b| {
            let mut blob = alloy_eips::eip4844::Blob::default();
            for (i, chunk) in blob.0.chunks_mut(32).enumerate() {
                chunk[30] = (i as u8).wrapping_mul(b as u8 + 7);
                chunk[31] = i as u8;
            }
            blob
        })
        .collect()
}

/// The sidecars of the pooled blob transactions, by transaction hash and by versioned hash.
#[derive(Debug, Default)]
pub(crate) struct BlobStore {
    by_tx: HashMap<B256, Arc<BlobTransactionSidecarVariant>>,
    /// Versioned hash → (transaction hash, blob index).
    by_hash: HashMap<B256, (B256, usize)>,
}

impl BlobStore {
    pub(crate) fn len(&self) -> usize {
        self.by_tx.len()
    }

    pub(crate) fn contains(&self, tx: &B256) -> bool {
        self.by_tx.contains_key(tx)
    }

    pub(crate) fn insert(&mut self, tx: B256, sidecar: BlobTransactionSidecarVariant) {
        for (index, hash) in sidecar.versioned_hashes().enumerate() {
            self.by_hash.insert(hash, (tx, index));
        }
        self.by_tx.insert(tx, Arc::new(sidecar));
    }

    pub(crate) fn remove(&mut self, tx: &B256) {
        if let Some(sidecar) = self.by_tx.remove(tx) {
            for hash in sidecar.versioned_hashes() {
                if self.by_hash.get(&hash).is_some_and(|(t, _)| t == tx) {
                    self.by_hash.remove(&hash);
                }
            }
        }
    }

    pub(crate) fn sidecar(&self, tx: &B256) -> Option<Arc<BlobTransactionSidecarVariant>> {
        self.by_tx.get(tx).cloned()
    }

    pub(crate) fn blob(
        &self,
        versioned_hash: &B256,
    ) -> Option<(Arc<BlobTransactionSidecarVariant>, usize)> {
        let (tx, index) = self.by_hash.get(versioned_hash)?;
        Some((self.by_tx.get(tx)?.clone(), *index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blobs(n: usize) -> Vec<alloy_eips::eip4844::Blob> {
        sample_blobs(n)
    }

    /// The first half of a blob's extended cells is the blob itself (EIP-7594): 64 cells of
    /// columns 0..63 give the blob back, which is how the network rebuilds a blob fetched as
    /// cells; the order is column by column, blob by blob.
    #[test]
    fn the_first_64_cells_are_the_blob() {
        let blobs = blobs(2);
        let cells = cells(&blobs, &[0, 63, 64]).unwrap();
        assert_eq!(cells.len(), 6);
        assert_eq!(cells[0].as_ref(), &blobs[0].0[..2048]);
        assert_eq!(cells[1].as_ref(), &blobs[1].0[..2048]);
        assert_eq!(cells[2].as_ref(), &blobs[0].0[63 * 2048..]);
        assert_eq!(cells[3].as_ref(), &blobs[1].0[63 * 2048..]);
        assert_ne!(cells[4].as_ref(), &blobs[0].0[..2048], "column 64 is the extension");
    }

    #[test]
    fn sidecars_are_checked_and_the_bad_blob_named() {
        let settings = EnvKzgSettings::Default.get();
        let cells = BlobTransactionSidecarEip7594::try_from_blobs_with_settings(blobs(2), settings)
            .unwrap();
        let hashes: Vec<B256> = cells.versioned_hashes().collect();
        let good = BlobTransactionSidecarVariant::Eip7594(cells.clone());
        validate(&good, &hashes, BlobForm::Eip7594).unwrap();
        assert!(matches!(validate(&good, &hashes, BlobForm::Eip4844), Err(BlobError::Form { .. })));
        let mut wrong = cells.clone();
        let first = wrong.cell_proofs[..CELLS_PER_EXT_BLOB].to_vec();
        wrong.cell_proofs[CELLS_PER_EXT_BLOB..].copy_from_slice(&first);
        let wrong = BlobTransactionSidecarVariant::Eip7594(wrong);
        assert!(matches!(
            validate(&wrong, &hashes, BlobForm::Eip7594),
            Err(BlobError::Proof { index: 1 })
        ));
        let mut swapped = hashes.clone();
        swapped.swap(0, 1);
        assert!(matches!(
            validate(&good, &swapped, BlobForm::Eip7594),
            Err(BlobError::VersionedHash { index: 0, .. })
        ));
        assert!(matches!(
            validate(&good, &hashes[..1], BlobForm::Eip7594),
            Err(BlobError::Count { .. })
        ));

        let one = BlobTransactionSidecar::try_from_blobs_with_settings(blobs(2), settings).unwrap();
        let mut wrong = one.clone();
        wrong.proofs[1] = wrong.proofs[0];
        let wrong = BlobTransactionSidecarVariant::Eip4844(wrong);
        let good = BlobTransactionSidecarVariant::Eip4844(one);
        validate(&good, &hashes, BlobForm::Eip4844).unwrap();
        assert!(matches!(
            validate(&wrong, &hashes, BlobForm::Eip4844),
            Err(BlobError::Proof { index: 1 })
        ));
    }
}
