//! BALs as JSON in the execution-spec-tests fixture shape.
//!
//! ```json
//! [{"address": "0x..", "nonceChanges": [{"blockAccessIndex": "0x1", "postNonce": "0x2"}],
//!   "balanceChanges": [{"blockAccessIndex": "0x1", "postBalance": "0x.."}],
//!   "codeChanges": [{"blockAccessIndex": "0x1", "newCode": "0x.."}],
//!   "storageChanges": [{"slot": "0x0", "slotChanges": [{"blockAccessIndex": "0x0", "postValue": "0x.."}]}],
//!   "storageReads": ["0x1"]}]
//! ```
//! Reading goes through alloy-eip7928's serde, which accepts these names as aliases.

use alloy_eip7928::{AccountChanges, BlockAccessList};
use serde_json::{json, Value};

fn q(v: impl std::fmt::LowerHex) -> String {
    format!("{v:#x}")
}

/// The BAL as a JSON value in the fixture shape above (quantities as minimal `0x` hex).
pub fn to_fixture_json(bal: &[AccountChanges]) -> Value {
    Value::Array(
        bal.iter()
            .map(|a| {
                json!({
                    "address": a.address,
                    "nonceChanges": a.nonce_changes.iter().map(|c| json!({
                        "blockAccessIndex": q(c.block_access_index.0), "postNonce": q(c.new_nonce)
                    })).collect::<Vec<_>>(),
                    "balanceChanges": a.balance_changes.iter().map(|c| json!({
                        "blockAccessIndex": q(c.block_access_index.0), "postBalance": q(c.post_balance)
                    })).collect::<Vec<_>>(),
                    "codeChanges": a.code_changes.iter().map(|c| json!({
                        "blockAccessIndex": q(c.block_access_index.0), "newCode": c.new_code()
                    })).collect::<Vec<_>>(),
                    "storageChanges": a.storage_changes.iter().map(|s| json!({
                        "slot": q(s.slot),
                        "slotChanges": s.changes.iter().map(|c| json!({
                            "blockAccessIndex": q(c.block_access_index.0), "postValue": q(c.new_value)
                        })).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                    "storageReads": a.storage_reads.iter().map(|s| q(*s)).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// Parses a BAL from JSON (fixture shape or alloy-eip7928's own field names).
///
/// # Errors
/// The serde error with the JSON path of the field that failed (`path()`, e.g.
/// `[3].storageChanges[0].slot`).
pub fn from_json(
    bytes: &[u8],
) -> Result<BlockAccessList, serde_path_to_error::Error<serde_json::Error>> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::{BalanceChange, BlockAccessIndex, SlotChanges, StorageChange};
    use alloy_primitives::{Address, U256};

    #[test]
    fn fixture_shape_round_trips() {
        let bal = vec![AccountChanges {
            address: Address::with_last_byte(9),
            storage_changes: vec![SlotChanges::new(
                U256::from(1),
                vec![StorageChange::new(BlockAccessIndex(2), U256::from(77))],
            )],
            storage_reads: vec![U256::from(3)],
            balance_changes: vec![BalanceChange::new(BlockAccessIndex(1), U256::from(5))],
            ..Default::default()
        }];
        let text = serde_json::to_vec(&to_fixture_json(&bal)).unwrap();
        let s = String::from_utf8(text.clone()).unwrap();
        assert!(s.contains("\"slotChanges\"") && s.contains("\"postValue\":\"0x4d\""), "{s}");
        assert_eq!(from_json(&text).unwrap(), bal);
    }
}

/// A BAL file that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct BalFileError {
    /// The file.
    pub path: std::path::PathBuf,
    /// What is wrong (I/O error, or the JSON field that failed).
    pub reason: String,
}

/// The file a block's BAL lives in under a `--dump-bal` / `--bal` folder: `DIR/<number>.json`.
pub fn file_for(dir: &std::path::Path, number: u64) -> std::path::PathBuf {
    dir.join(format!("{number}.json"))
}

/// Reads `DIR/<number>.json`.
///
/// # Errors
/// [`BalFileError`] naming the file, and the field for malformed JSON.
pub fn read_file(dir: &std::path::Path, number: u64) -> Result<BlockAccessList, BalFileError> {
    let path = file_for(dir, number);
    let bytes = std::fs::read(&path)
        .map_err(|e| BalFileError { path: path.clone(), reason: e.to_string() })?;
    from_json(&bytes)
        .map_err(|e| BalFileError { path, reason: format!("field `{}`: {}", e.path(), e.inner()) })
}

/// Writes `bal` to `DIR/<number>.json` in the fixture shape, creating `dir` if needed.
///
/// # Errors
/// [`BalFileError`] naming the file on an I/O error.
pub fn write_file(
    dir: &std::path::Path,
    number: u64,
    bal: &[AccountChanges],
) -> Result<(), BalFileError> {
    let path = file_for(dir, number);
    let err = |e: std::io::Error| BalFileError { path: path.clone(), reason: e.to_string() };
    std::fs::create_dir_all(dir).map_err(err)?;
    let text = serde_json::to_vec_pretty(&to_fixture_json(bal))
        .map_err(std::io::Error::from)
        .map_err(err)?;
    std::fs::write(&path, text).map_err(err)
}
