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
    traits::{Identity, VartimePrecomputedMultiscalarMul},
    RistrettoPoint, Scalar,
};
use rand_core::{CryptoRng, RngCore};
use rayon::prelude::*;
use sha2::Sha512;

/// Domain separator of the generator derivation.
pub const GENERATOR_DOMAIN: &[u8] = b"gigagas/rlnc/pedersen/v1";

/// `m` Pedersen generators with Straus precomputation for variable-time multiscalar
/// multiplication (the data is public, so variable time is fine).
///
/// The precomputation is split into `parts` contiguous ranges of generators (one table each):
/// a commitment then sums `parts` partial multiscalar multiplications, computed in parallel on
/// the current rayon pool. [`Generators::new`] keeps one part (one thread per commitment);
/// [`Generators::with_parts`] splits, so that one commitment (and one chunk's verification)
/// uses several cores.
pub struct Generators {
    points: Vec<RistrettoPoint>,
    /// `(first, len, table of generators first..first + len)`, in order.
    tables: Vec<Table>,
}

type Table = (usize, usize, VartimeRistrettoPrecomputation);

/// The scalars `v[start..start + len]` for one table, zero past the end of `v`.
fn statics(v: &[Element], start: usize, len: usize) -> impl Iterator<Item = Scalar> + '_ {
    (start..start + len).map(|j| v.get(j).map_or(Scalar::ZERO, to_scalar))
}

impl std::fmt::Debug for Generators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generators")
            .field("m", &self.points.len())
            .field("parts", &self.tables.len())
            .finish()
    }
}

impl Generators {
    /// The first `m` generators, one precomputed table.
    pub fn new(m: usize) -> Self {
        Self::with_parts(m, 1)
    }

    /// The first `m` generators, their precomputation split into `parts` tables of about
    /// `m / parts` generators each (`parts` is clamped to `1..=m`), so that one commitment runs
    /// on up to `parts` threads of the current rayon pool.
    pub fn with_parts(m: usize, parts: usize) -> Self {
        let points: Vec<RistrettoPoint> = (0..m as u32)
            .map(|j| {
                let mut input = GENERATOR_DOMAIN.to_vec();
                input.extend_from_slice(&j.to_le_bytes());
                RistrettoPoint::hash_from_bytes::<Sha512>(&input)
            })
            .collect();
        let parts = parts.clamp(1, m.max(1));
        let tables = (0..parts)
            .map(|p| {
                let (start, end) = (m * p / parts, m * (p + 1) / parts);
                let table = VartimeRistrettoPrecomputation::new(points[start..end].iter());
                (start, end - start, table)
            })
            .collect();
        Self { points, tables }
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

    /// Number of precomputed tables (see [`Generators::with_parts`]).
    pub fn parts(&self) -> usize {
        self.tables.len()
    }

    /// `Σ v_j · G_j` over the first `v.len()` generators, from the precomputed tables (a `v`
    /// shorter than the generators counts as zero-padded), their partial sums in parallel. `v`
    /// longer than the generators is a caller error: only the first [`Generators::len`]
    /// entries count.
    pub fn commit(&self, v: &[Element]) -> RistrettoPoint {
        let partial =
            |(start, len, table): &Table| table.vartime_multiscalar_mul(statics(v, *start, *len));
        match self.tables.as_slice() {
            [one] => partial(one),
            tables => tables.par_iter().map(partial).sum(),
        }
    }

    /// The commitments of the source chunks (the proposer's work: N multiscalar
    /// multiplications of size m), one chunk per task on the current rayon pool.
    pub fn commit_all(&self, chunks: &crate::Chunks) -> Vec<RistrettoPoint> {
        (0..chunks.n()).into_par_iter().map(|i| self.commit(&chunks.source(i).data)).collect()
    }

    /// Whether `chunk` is the combination its coefficients claim: `commit(data) == Σ b_i · C_i`,
    /// checked as `Σ_j v_j·G_j + Σ_i (−b_i)·C_i == 0` in one multiscalar multiplication per
    /// table (the commitments ride with the last table, sharing its doublings); the tables'
    /// partial sums run in parallel on the current rayon pool.
    pub fn verify(&self, chunk: &CodedChunk, commitments: &[RistrettoPoint]) -> bool {
        let negated: Vec<Scalar> = chunk.coefficients.iter().map(|b| -to_scalar(b)).collect();
        let v = &chunk.data;
        let last = self.tables.len() - 1;
        let partial = |(p, (start, len, table)): (usize, &Table)| {
            let statics = statics(v, *start, *len);
            if p == last {
                table.vartime_mixed_multiscalar_mul(statics, &negated, commitments)
            } else {
                table.vartime_multiscalar_mul(statics)
            }
        };
        let sum: RistrettoPoint = match self.tables.as_slice() {
            [one] => partial((0, one)),
            tables => tables.par_iter().enumerate().map(partial).sum(),
        };
        sum == RistrettoPoint::identity()
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
        // Split tables give the same commitments.
        let split = Generators::with_parts(chunks.m(), 3);
        assert_eq!(split.parts(), 3);
        assert_eq!(split.commit_all(&chunks), commitments);
        assert!(!split.verify(&forged[3], &commitments));
        assert!(good.iter().all(|c| split.verify(c, &commitments)));
        // More generators than the block needs: the same commitments (zero-padded scalars).
        let wide = Generators::with_parts(chunks.m() + 17, 2);
        assert_eq!(wide.commit_all(&chunks), commitments);
        assert!(good.iter().all(|c| wide.verify(c, &commitments)));
        assert!(!wide.verify(&forged[1], &commitments));
    }
}
