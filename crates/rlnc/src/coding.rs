//! Chunking, coding, recoding and incremental decoding over the Ristretto255 scalar field.

use crate::field::{from_canonical_bytes, to_bytes, Element};
use ark_ff::{AdditiveGroup, Field, UniformRand};
use rand_core::{CryptoRng, RngCore};

/// Bytes of block data per scalar: 31, so every packed scalar is canonical (below ℓ).
pub const BYTES_PER_SCALAR: usize = 31;
/// Bytes of the length prefix in front of the block data (little-endian u64).
const LENGTH_PREFIX: usize = 8;

/// Why coding or decoding failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RlncError {
    /// A block cannot be split into zero chunks.
    #[error("a block needs at least one chunk")]
    NoChunks,
    /// A coded chunk's shape does not match the decoder's (`N` coefficients, `m` scalars).
    #[error("chunk shape {found_n}×{found_m}, expected {n}×{m}")]
    Shape {
        /// Coefficients expected (N).
        n: usize,
        /// Scalars per chunk expected (m).
        m: usize,
        /// Coefficients found.
        found_n: usize,
        /// Scalars found.
        found_m: usize,
    },
    /// All coefficients are zero: the chunk carries nothing.
    #[error("zero coefficient vector")]
    ZeroVector,
    /// Fewer Pedersen generators than scalars per chunk.
    #[error("{generators} generators for chunks of {m} scalars")]
    TooFewGenerators {
        /// Generators available.
        generators: usize,
        /// Scalars per chunk.
        m: usize,
    },
    /// Recoding needs at least one held chunk.
    #[error("nothing to recode")]
    NothingToRecode,
    /// The decoded length prefix exceeds the decoded data: not a block encoded by
    /// [`Chunks::from_block`].
    #[error("decoded length {length} exceeds the {capacity} bytes the chunks hold")]
    BadLength {
        /// The length read from the prefix.
        length: u64,
        /// Bytes available after the prefix.
        capacity: usize,
    },
    /// A decoded scalar does not fit in 31 bytes: the chunks were not produced from a block.
    #[error("decoded scalar {index} is not a 31-byte block word")]
    NotBlockData {
        /// Position of the scalar in the decoded data.
        index: usize,
    },
}

/// A block split into `N` source chunks of `m` scalars each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunks {
    chunks: Vec<Vec<Element>>,
}

impl Chunks {
    /// Packs `block` (8-byte little-endian length, the bytes, zero padding) 31 bytes per scalar
    /// and splits it into `n` chunks of equal size.
    ///
    /// # Errors
    /// [`RlncError::NoChunks`] when `n` is 0.
    pub fn from_block(block: &[u8], n: usize) -> Result<Self, RlncError> {
        if n == 0 {
            return Err(RlncError::NoChunks);
        }
        let total = LENGTH_PREFIX + block.len();
        let scalars = total.div_ceil(BYTES_PER_SCALAR).max(1);
        let m = scalars.div_ceil(n);
        let mut bytes = Vec::with_capacity(n * m * BYTES_PER_SCALAR);
        bytes.extend_from_slice(&(block.len() as u64).to_le_bytes());
        bytes.extend_from_slice(block);
        bytes.resize(n * m * BYTES_PER_SCALAR, 0);
        let words: Vec<Element> = bytes.chunks_exact(BYTES_PER_SCALAR).map(pack).collect();
        Ok(Self { chunks: words.chunks_exact(m).map(<[Element]>::to_vec).collect() })
    }

    /// Number of chunks (N).
    pub fn n(&self) -> usize {
        self.chunks.len()
    }

    /// Scalars per chunk (m).
    pub fn m(&self) -> usize {
        self.chunks.first().map_or(0, Vec::len)
    }

    /// Source chunk `i` as a coded chunk with unit coefficient vector `e_i`.
    pub fn source(&self, i: usize) -> CodedChunk {
        let mut coefficients = vec![Element::ZERO; self.n()];
        coefficients[i] = Element::ONE;
        CodedChunk { coefficients, data: self.chunks[i].clone() }
    }

    /// A random linear combination of all source chunks (what the proposer sends).
    pub fn random_combination<R: RngCore + CryptoRng>(&self, rng: &mut R) -> CodedChunk {
        let coefficients: Vec<Element> = (0..self.n()).map(|_| Element::rand(rng)).collect();
        let mut data = vec![Element::ZERO; self.m()];
        for (c, chunk) in coefficients.iter().zip(&self.chunks) {
            axpy(&mut data, c, chunk);
        }
        CodedChunk { coefficients, data }
    }
}

fn pack(word: &[u8]) -> Element {
    let mut b = [0u8; 32];
    b[..BYTES_PER_SCALAR].copy_from_slice(word);
    from_canonical_bytes(&b).expect("below 2^248 < ℓ")
}

/// `y += a · x`.
fn axpy(y: &mut [Element], a: &Element, x: &[Element]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += *a * x;
    }
}

/// A coded chunk: `data = Σ coefficients[i] · source_i`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodedChunk {
    /// One coefficient per source chunk (N).
    pub coefficients: Vec<Element>,
    /// The combined data (m scalars).
    pub data: Vec<Element>,
}

/// A fresh random combination of `held` chunks, its coefficients tracked (what a relay
/// forwards).
///
/// # Errors
/// [`RlncError::NothingToRecode`] when `held` is empty.
pub fn recode<R: RngCore + CryptoRng>(
    held: &[CodedChunk],
    rng: &mut R,
) -> Result<CodedChunk, RlncError> {
    let first = held.first().ok_or(RlncError::NothingToRecode)?;
    let mut out = CodedChunk {
        coefficients: vec![Element::ZERO; first.coefficients.len()],
        data: vec![Element::ZERO; first.data.len()],
    };
    for chunk in held {
        let r = Element::rand(rng);
        axpy(&mut out.coefficients, &r, &chunk.coefficients);
        axpy(&mut out.data, &r, &chunk.data);
    }
    Ok(out)
}

/// Incremental Gaussian elimination: the chunks received so far in reduced row echelon form.
#[derive(Debug, Clone)]
pub struct Decoder {
    n: usize,
    m: usize,
    /// Rows with their pivot column, kept reduced: each pivot column is zero in every other row.
    rows: Vec<(usize, CodedChunk)>,
}

impl Decoder {
    /// A decoder for blocks of `n` chunks of `m` scalars.
    pub fn new(n: usize, m: usize) -> Self {
        Self { n, m, rows: Vec::with_capacity(n) }
    }

    /// Chunks of the block (N): the rank at which it decodes.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Independent chunks held (the rank).
    pub fn rank(&self) -> usize {
        self.rows.len()
    }

    /// Whether `n` independent chunks are held.
    pub fn is_complete(&self) -> bool {
        self.rows.len() == self.n
    }

    /// The chunks held (reduced), e.g. to recode from.
    pub fn held(&self) -> impl Iterator<Item = &CodedChunk> {
        self.rows.iter().map(|(_, c)| c)
    }

    /// Reduces `coefficients` against the rows held; the residue is zero iff the chunk is
    /// linearly dependent on them. Costs N² field operations and no data work: a receiver calls
    /// it before verifying or storing the data.
    pub fn is_useful(&self, coefficients: &[Element]) -> bool {
        let mut c = coefficients.to_vec();
        for (pivot, row) in &self.rows {
            let f = c[*pivot];
            if f != Element::ZERO {
                for (x, y) in c.iter_mut().zip(&row.coefficients) {
                    *x -= f * y;
                }
            }
        }
        c.iter().any(|x| *x != Element::ZERO)
    }

    /// Adds a chunk; returns whether it raised the rank (a dependent chunk is dropped).
    ///
    /// # Errors
    /// [`RlncError::Shape`] for a chunk of another shape; [`RlncError::ZeroVector`] for an
    /// all-zero coefficient vector.
    pub fn add(&mut self, mut chunk: CodedChunk) -> Result<bool, RlncError> {
        if chunk.coefficients.len() != self.n || chunk.data.len() != self.m {
            return Err(RlncError::Shape {
                n: self.n,
                m: self.m,
                found_n: chunk.coefficients.len(),
                found_m: chunk.data.len(),
            });
        }
        if chunk.coefficients.iter().all(|c| *c == Element::ZERO) {
            return Err(RlncError::ZeroVector);
        }
        if !self.is_useful(&chunk.coefficients) {
            return Ok(false);
        }
        // Eliminate the held pivots from the new row.
        for (pivot, row) in &self.rows {
            let f = chunk.coefficients[*pivot];
            if f != Element::ZERO {
                axpy(&mut chunk.coefficients, &-f, &row.coefficients);
                axpy(&mut chunk.data, &-f, &row.data);
            }
        }
        let pivot =
            chunk.coefficients.iter().position(|c| *c != Element::ZERO).expect("useful row");
        let inv = chunk.coefficients[pivot].inverse().expect("pivot is non-zero");
        chunk.coefficients.iter_mut().for_each(|c| *c *= inv);
        chunk.data.iter_mut().for_each(|d| *d *= inv);
        // Clear the new pivot column from the held rows.
        for (_, row) in &mut self.rows {
            let f = row.coefficients[pivot];
            if f != Element::ZERO {
                axpy(&mut row.coefficients, &-f, &chunk.coefficients);
                axpy(&mut row.data, &-f, &chunk.data);
            }
        }
        self.rows.push((pivot, chunk));
        Ok(true)
    }

    /// The block, once complete (`None` before).
    ///
    /// # Errors
    /// [`RlncError::BadLength`] / [`RlncError::NotBlockData`] when the decoded data is not a
    /// block packed by [`Chunks::from_block`].
    pub fn decode(&self) -> Result<Option<Vec<u8>>, RlncError> {
        if !self.is_complete() {
            return Ok(None);
        }
        let mut ordered: Vec<&(usize, CodedChunk)> = self.rows.iter().collect();
        ordered.sort_by_key(|(pivot, _)| *pivot);
        let mut bytes = Vec::with_capacity(self.n * self.m * BYTES_PER_SCALAR);
        for (index, s) in ordered.iter().flat_map(|(_, r)| &r.data).enumerate() {
            let b = to_bytes(s);
            if b[BYTES_PER_SCALAR] != 0 {
                return Err(RlncError::NotBlockData { index });
            }
            bytes.extend_from_slice(&b[..BYTES_PER_SCALAR]);
        }
        let length = u64::from_le_bytes(bytes[..LENGTH_PREFIX].try_into().expect("8 bytes"));
        let capacity = bytes.len() - LENGTH_PREFIX;
        if length > capacity as u64 {
            return Err(RlncError::BadLength { length, capacity });
        }
        Ok(Some(bytes[LENGTH_PREFIX..LENGTH_PREFIX + length as usize].to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, SeedableRng};

    fn block(len: usize, seed: u64) -> Vec<u8> {
        let mut b = vec![0u8; len];
        StdRng::seed_from_u64(seed).fill_bytes(&mut b);
        b
    }

    /// Any length, any N: N random combinations decode to the exact bytes (length included),
    /// and a chunk past rank N is reported useless.
    #[test]
    fn random_combinations_decode_exactly() {
        let mut rng = StdRng::seed_from_u64(1);
        for (len, n) in [(0, 1), (1, 1), (30, 4), (31, 4), (1000, 10), (121_600, 10), (4096, 32)] {
            let data = block(len, len as u64);
            let chunks = Chunks::from_block(&data, n).unwrap();
            let mut d = Decoder::new(chunks.n(), chunks.m());
            while !d.is_complete() {
                assert!(d.add(chunks.random_combination(&mut rng)).unwrap());
            }
            assert_eq!(d.decode().unwrap().as_deref(), Some(&data[..]), "len {len}, n {n}");
            assert!(!d.add(chunks.random_combination(&mut rng)).unwrap());
        }
    }

    /// Relays recode from partial knowledge: a receiver fed only recoded chunks decodes once
    /// the relays together span the block; a recoded chunk of one relay's span is dependent on
    /// that span.
    #[test]
    fn recoded_chunks_decode_and_dependence_is_detected() {
        let mut rng = StdRng::seed_from_u64(2);
        let data = block(5_000, 9);
        let chunks = Chunks::from_block(&data, 8).unwrap();
        let (mut a, mut b) = (Decoder::new(8, chunks.m()), Decoder::new(8, chunks.m()));
        for i in 0..4 {
            a.add(chunks.source(i)).unwrap();
            b.add(chunks.source(i + 4)).unwrap();
        }
        let held_a: Vec<CodedChunk> = a.held().cloned().collect();
        let recoded = recode(&held_a, &mut rng).unwrap();
        assert!(!a.is_useful(&recoded.coefficients));
        let held_b: Vec<CodedChunk> = b.held().cloned().collect();
        let mut r = Decoder::new(8, chunks.m());
        for _ in 0..4 {
            assert!(r.add(recode(&held_a, &mut rng).unwrap()).unwrap());
            assert!(r.add(recode(&held_b, &mut rng).unwrap()).unwrap());
        }
        assert_eq!(r.decode().unwrap(), Some(data));
    }

    #[test]
    fn bad_chunks_are_rejected() {
        let chunks = Chunks::from_block(b"hello", 2).unwrap();
        let mut d = Decoder::new(2, chunks.m());
        let mut zero = chunks.source(0);
        zero.coefficients = vec![Element::ZERO; 2];
        assert_eq!(d.add(zero), Err(RlncError::ZeroVector));
        let mut short = chunks.source(0);
        short.coefficients.pop();
        assert!(matches!(d.add(short), Err(RlncError::Shape { .. })));
        assert_eq!(Chunks::from_block(b"x", 0), Err(RlncError::NoChunks));
        // Data that is not a packed block: a scalar using its 32nd byte.
        let mut fake = Decoder::new(1, 1);
        fake.add(CodedChunk { coefficients: vec![Element::ONE], data: vec![-Element::ONE] })
            .unwrap();
        assert!(matches!(fake.decode(), Err(RlncError::NotBlockData { index: 0 })));
    }
}
