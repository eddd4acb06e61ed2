//! Parameter types the execution API reads more strictly than alloy's: a 32-byte hash must be
//! written `0x` and 64 hex digits (geth refuses a hash without its prefix, alloy's `B256` would
//! take it), and a storage key `0x` and at most 64 hex digits, remembering whether it was
//! written short (`eth_getProof` echoes keys as they were given).

use alloy_primitives::{B256, U256};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A 32-byte hash (block or transaction) as a parameter: `0x` and exactly 64 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashParam(pub B256);

impl From<B256> for HashParam {
    fn from(hash: B256) -> Self {
        Self(hash)
    }
}

impl<'de> Deserialize<'de> for HashParam {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let hex = s
            .strip_prefix("0x")
            .ok_or_else(|| serde::de::Error::custom("hex string without 0x prefix"))?;
        if hex.len() != 64 {
            return Err(serde::de::Error::custom(format!(
                "hash of {} hex digits, want 64",
                hex.len()
            )));
        }
        s.parse().map(HashParam).map_err(serde::de::Error::custom)
    }
}

impl Serialize for HashParam {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// A storage key as a parameter: `0x` and at most 64 hex digits. `short` is `true` when it was
/// written with fewer than 64 digits; such a key is echoed back as a quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageKeyParam {
    /// The slot, left-padded to 32 bytes.
    pub slot: B256,
    /// Written with fewer than 64 hex digits.
    pub short: bool,
}

impl From<B256> for StorageKeyParam {
    fn from(slot: B256) -> Self {
        Self { slot, short: false }
    }
}

impl<'de> Deserialize<'de> for StorageKeyParam {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let hex = s
            .strip_prefix("0x")
            .ok_or_else(|| serde::de::Error::custom("hex string without 0x prefix"))?;
        if hex.len() > 64 {
            return Err(serde::de::Error::custom(format!(
                "storage key too long (want at most 32 bytes): {s:?}"
            )));
        }
        U256::from_str_radix(hex, 16)
            .map(|v| StorageKeyParam { slot: B256::from(v), short: hex.len() < 64 })
            .map_err(serde::de::Error::custom)
    }
}

impl Serialize for StorageKeyParam {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.short {
            U256::from_be_bytes(self.slot.0).serialize(s)
        } else {
            self.slot.serialize(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_need_their_prefix_and_64_digits() {
        let hash = format!("0x{}", "ab".repeat(32));
        let parsed: HashParam = serde_json::from_value(serde_json::json!(hash)).unwrap();
        assert_eq!(serde_json::to_value(parsed).unwrap(), serde_json::json!(hash));
        assert!(serde_json::from_value::<HashParam>(serde_json::json!("ab".repeat(32))).is_err());
        assert!(serde_json::from_value::<HashParam>(serde_json::json!("0xabcd")).is_err());
    }

    #[test]
    fn short_storage_keys_round_trip_as_quantities() {
        let short: StorageKeyParam = serde_json::from_value(serde_json::json!("0x1")).unwrap();
        assert_eq!(short.slot, B256::with_last_byte(1));
        assert!(short.short);
        assert_eq!(serde_json::to_value(short).unwrap(), serde_json::json!("0x1"));
        let long = format!("0x{}", "0".repeat(63) + "2");
        let full: StorageKeyParam = serde_json::from_value(serde_json::json!(long)).unwrap();
        assert!(!full.short);
        assert_eq!(serde_json::to_value(full).unwrap(), serde_json::json!(long));
        let too_long = format!("0x{}", "1".repeat(65));
        assert!(serde_json::from_value::<StorageKeyParam>(serde_json::json!(too_long)).is_err());
    }
}
