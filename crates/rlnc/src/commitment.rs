//! Pedersen vector commitments of chunks over Ristretto255, and their homomorphic check.
//!
//! `commit(v) = Σ_j v_j · G_j` over `m` generators. The generators are derived by a documented
//! hash-to-group so anyone can reproduce them: `G_j = RistrettoPoint::hash_from_bytes::<Sha512>(
//! "gigagas/rlnc/pedersen/v1" ‖ j as 4 bytes little-endian)` (Elligator 2 on two 32-byte halves
//! of the SHA-512 digest, RFC 9496 §4.3.4). Commitments are linear, so a coded chunk
//! `v = Σ b_i · chunk_i` satisfies `commit(v) = Σ b_i · C_i` where `C_i = commit(chunk_i)`:
//! a receiver checks every chunk against the proposer's `N` commitments without decoding.

use crate::{
    coding::CodedChunk,
    field::{to_scalar, Element},
};
use ark_ff::{AdditiveGroup, UniformRand};
use curve25519_dalek::{
    ristretto::VartimeRistrettoPrecomputation,
    traits::{VartimeMultiscalarMul, VartimePrecomputedMultiscalarMul},
    RistrettoPoint, Scalar,
};
use rand_core::{CryptoRng, RngCore};
use sha2::Sha512;

/// Domain separator of the generator derivation.
pub const GENERATOR_DOMAIN: &[u8] = b"gigagas/rlnc/pedersen/v1";

/// `m` Pedersen generators with Straus precomputation for variable-time multiscalar
/// multiplication (the data is public, so variable time is fine).
pub struct Generators {
    points: Vec<RistrettoPoint>,
    table: VartimeRistrettoPrecomputation,
}

impl std::fmt::Debug for Generators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generators").field("m", &self.points.len()).finish()
    }
}

impl Generators {
    /// The first `m` generators.
    pub fn new(m: usize) -> Self {
        let points: Vec<RistrettoPoint> = (0..m as u32)
            .map(|j| {
                let mut input = GENERATOR_DOMAIN.to_vec();
                input.extend_from_slice(&j.to_le_bytes());
                RistrettoPoint::hash_from_bytes::<Sha512>(&input)
            })
            .collect();
        let table = VartimeRistrettoPrecomputation::new(points.iter());
        Self { points, table }
    }

    /// Number of generators (m).
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The generators.
    pub fn points(&self) -> &[RistrettoPoint] {
        &self.points
    }

    /// `Σ v_j · G_j` over the first `v.len()` generators (the precomputed table when `v` uses
    /// all of them). `v` longer than the generators is a caller error: only the first
    /// [`Generators::len`] entries count.
    pub fn commit(&self, v: &[Element]) -> RistrettoPoint {
        let v: Vec<Scalar> = v.iter().map(to_scalar).collect();
        if v.len() == self.points.len() {
            self.table.vartime_multiscalar_mul(v)
        } else {
            let k = v.len().min(self.points.len());
            RistrettoPoint::vartime_multiscalar_mul(&v[..k], &self.points[..k])
        }
    }

    /// The commitments of the source chunks (the proposer's work: N multiscalar
    /// multiplications of size m).
    pub fn commit_all(&self, chunks: &crate::Chunks) -> Vec<RistrettoPoint> {
        (0..chunks.n()).map(|i| self.commit(&chunks.source(i).data)).collect()
    }

    /// Whether `chunk` is the combination its coefficients claim: `commit(data) == Σ b_i · C_i`.
    pub fn verify(&self, chunk: &CodedChunk, commitments: &[RistrettoPoint]) -> bool {
        let coefficients: Vec<Scalar> = chunk.coefficients.iter().map(to_scalar).collect();
        self.commit(&chunk.data)
            == RistrettoPoint::vartime_multiscalar_mul(&coefficients, commitments)
    }

    /// Verifies many chunks with one check: random weights `r_k` fold them into
    /// `commit(Σ r_k v_k) == Σ_i (Σ_k r_k b_ki) · C_i` (a forged chunk passes with probability
    /// about 1/ℓ). On failure, checks them one by one; returns the indices of the bad chunks
    /// (empty when all are good).
    pub fn verify_batch<R: RngCore + CryptoRng>(
        &self,
        chunks: &[CodedChunk],
        commitments: &[RistrettoPoint],
        rng: &mut R,
    ) -> Vec<usize> {
        let Some(first) = chunks.first() else { return Vec::new() };
        let mut data = vec![Element::ZERO; first.data.len()];
        let mut coefficients = vec![Element::ZERO; first.coefficients.len()];
        for c in chunks {
            let r = Element::rand(rng);
            for (y, x) in data.iter_mut().zip(&c.data) {
                *y += r * x;
            }
            for (y, x) in coefficients.iter_mut().zip(&c.coefficients) {
                *y += r * x;
            }
        }
        let folded = CodedChunk { coefficients, data };
        if self.verify(&folded, commitments) {
            return Vec::new();
        }
        (0..chunks.len()).filter(|&k| !self.verify(&chunks[k], commitments)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Chunks;
    use rand::{rngs::StdRng, SeedableRng};

    #[test]
    fn coded_chunks_verify_and_forgeries_do_not() {
        let mut rng = StdRng::seed_from_u64(3);
        let block: Vec<u8> = (0..20_000u32).map(|i| (i * 7) as u8).collect();
        let chunks = Chunks::from_block(&block, 10).unwrap();
        let g = Generators::new(chunks.m());
        let commitments = g.commit_all(&chunks);
        let good: Vec<CodedChunk> = (0..5).map(|_| chunks.random_combination(&mut rng)).collect();
        assert!(good.iter().all(|c| g.verify(c, &commitments)));
        assert!(g.verify_batch(&good, &commitments, &mut rng).is_empty());
        // One data scalar changed, or one coefficient: both caught, and the batch names it.
        let mut forged = good.clone();
        forged[3].data[7] += Element::from(1u64);
        forged[1].coefficients[2] += Element::from(1u64);
        assert!(!g.verify(&forged[3], &commitments));
        assert_eq!(g.verify_batch(&forged, &commitments, &mut rng), vec![1, 3]);
        // Generators are reproducible from the documented derivation.
        assert_eq!(Generators::new(3).points(), &g.points()[..3]);
    }
}
