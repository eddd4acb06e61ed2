//! The Ristretto255 scalar field ℓ = 2^252 + 27742317777372353535851937790883648493 in Montgomery
//! form (ark-ff), for the coding arithmetic: curve25519-dalek's `Scalar` re-packs every result
//! to bytes, which made row operations 4–6× slower. Commitments and the wire use dalek's
//! `Scalar`; [`to_scalar`] and [`from_scalar`] convert at those boundaries.

use ark_ff::{fields::MontConfig, BigInt, BigInteger, Fp256, MontBackend, PrimeField};
use curve25519_dalek::Scalar;

/// Montgomery parameters of ℓ (the same field as ark-ed25519's `Fr`; 2 generates its
/// multiplicative group).
#[derive(MontConfig)]
#[modulus = "7237005577332262213973186563042994240857116359379907606001950938285454250989"]
#[generator = "2"]
pub struct ScalarFieldConfig;

/// An element of the Ristretto255 scalar field.
pub type Element = Fp256<MontBackend<ScalarFieldConfig, 4>>;

/// `e` as a curve25519-dalek scalar (same value).
pub fn to_scalar(e: &Element) -> Scalar {
    let mut bytes = [0u8; 32];
    for (chunk, limb) in bytes.chunks_exact_mut(8).zip(e.into_bigint().0) {
        chunk.copy_from_slice(&limb.to_le_bytes());
    }
    Scalar::from_bytes_mod_order(bytes)
}

/// The element of a canonical 32-byte little-endian encoding, `None` when it is not below ℓ.
pub fn from_canonical_bytes(bytes: &[u8; 32]) -> Option<Element> {
    let mut limbs = [0u64; 4];
    for (limb, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
        *limb = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
    }
    Element::from_bigint(BigInt::new(limbs))
}

/// The 32-byte little-endian encoding of `e`.
pub fn to_bytes(e: &Element) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&e.into_bigint().to_bytes_le());
    out
}

/// A dalek scalar as an element.
pub fn from_scalar(s: &Scalar) -> Element {
    from_canonical_bytes(s.as_bytes()).expect("dalek scalars are reduced")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{Field, UniformRand};
    use rand::{rngs::StdRng, SeedableRng};

    /// The same arithmetic as curve25519-dalek's `Scalar`.
    #[test]
    fn agrees_with_dalek() {
        let mut rng = StdRng::seed_from_u64(4);
        for _ in 0..200 {
            let (a, b) = (Element::rand(&mut rng), Element::rand(&mut rng));
            let (x, y) = (to_scalar(&a), to_scalar(&b));
            assert_eq!(to_scalar(&(a * b + a)), x * y + x);
            assert_eq!(to_scalar(&(a - b)), x - y);
            assert_eq!(to_scalar(&a.inverse().unwrap()), x.invert());
            assert_eq!(from_scalar(&x), a);
            assert_eq!(from_canonical_bytes(&to_bytes(&a)), Some(a));
        }
        assert_eq!(from_canonical_bytes(&[0xff; 32]), None);
    }
}
