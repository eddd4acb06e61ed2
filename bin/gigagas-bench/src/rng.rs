//! The generators' deterministic random numbers: splitmix64 from a seed, so that the same seed
//! gives the same chain.

use alloy_primitives::B256;

/// A deterministic stream of numbers (splitmix64) from the seed.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits (splitmix64).
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// The next 32 random bytes.
    pub fn word(&mut self) -> B256 {
        let mut w = [0u8; 32];
        for chunk in w.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_be_bytes());
        }
        B256::from(w)
    }
}
