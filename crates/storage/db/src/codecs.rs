//! How values are laid out in the tables: the flat state's keys (keccak256 of the address, and
//! of the address and the slot: the keys of the state trie's leaves, what snap sync delivers),
//! the 72-byte account record, the 40-byte head pointer, 32-byte slot values, and RLP for the
//! block tables.

use crate::tables::META;
use alloy_primitives::{keccak256, Address, B256, U256};
use gigagas_storage_api::{AccountRecord, ProviderError};

/// The 72-byte encoding of an account: nonce (8, big-endian) ‖ balance (32, big-endian) ‖ code
/// hash (32).
pub fn encode_account(record: &AccountRecord) -> [u8; 72] {
    let mut out = [0u8; 72];
    out[..8].copy_from_slice(&record.nonce.to_be_bytes());
    out[8..40].copy_from_slice(&record.balance.to_be_bytes::<32>());
    out[40..].copy_from_slice(record.code_hash.as_slice());
    out
}

/// Decodes [`encode_account`]'s format.
///
/// # Errors
/// [`ProviderError::Corrupt`] naming `table` and `address` unless `bytes` is 72 bytes long.
pub fn decode_account(
    table: &'static str,
    address: &Address,
    bytes: &[u8],
) -> Result<AccountRecord, ProviderError> {
    let bytes: &[u8; 72] = bytes.try_into().map_err(|_| ProviderError::Corrupt {
        table,
        key: address.to_string(),
        reason: format!("{} bytes, expected 72", bytes.len()),
    })?;
    Ok(AccountRecord {
        nonce: u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes")),
        balance: U256::from_be_slice(&bytes[8..40]),
        code_hash: B256::from_slice(&bytes[40..]),
    })
}

/// A slot value (32 bytes big-endian).
///
/// # Errors
/// [`ProviderError::Corrupt`] naming the slot when the value is longer than 32 bytes.
pub(crate) fn decode_slot(
    table: &'static str,
    address: &Address,
    slot: &U256,
    bytes: &[u8],
) -> Result<U256, ProviderError> {
    U256::try_from_be_slice(bytes).ok_or_else(|| ProviderError::Corrupt {
        table,
        key: format!("{address}/{slot:#x}"),
        reason: format!("{} bytes", bytes.len()),
    })
}

/// The accounts table's key: keccak256(address).
pub fn account_key(address: &Address) -> B256 {
    keccak256(address)
}

/// The storage table's key: keccak256(address) ‖ keccak256(slot as 32 bytes big-endian).
pub fn storage_key(address: &Address, slot: &U256) -> [u8; 64] {
    hashed_storage_key(&keccak256(address), &keccak256(slot.to_be_bytes::<32>()))
}

/// The storage table's key of an already hashed account and slot.
pub fn hashed_storage_key(account: &B256, slot: &B256) -> [u8; 64] {
    let mut key = [0u8; 64];
    key[..32].copy_from_slice(account.as_slice());
    key[32..].copy_from_slice(slot.as_slice());
    key
}

/// The end (exclusive) of a hashed account's range of storage keys: account ‖ ff…ff ‖ 00, so
/// [`hashed_storage_key`]`(account, 0)` up to it is every slot of the account.
pub(crate) fn storage_range_end(account: &B256) -> [u8; 65] {
    let mut to = [0xffu8; 65];
    to[..32].copy_from_slice(account.as_slice());
    to[64] = 0;
    to
}

/// The head pointer: number (8, big-endian) ‖ hash (32).
pub(crate) fn encode_head(number: u64, hash: &B256) -> [u8; 40] {
    let mut out = [0u8; 40];
    out[..8].copy_from_slice(&number.to_be_bytes());
    out[8..].copy_from_slice(hash.as_slice());
    out
}

/// Decodes [`encode_head`]'s format.
///
/// # Errors
/// [`ProviderError::Corrupt`] unless `bytes` is 40 bytes long.
pub(crate) fn decode_head(bytes: &[u8]) -> Result<(u64, B256), ProviderError> {
    if bytes.len() != 40 {
        return Err(ProviderError::Corrupt {
            table: META,
            key: "head".into(),
            reason: format!("{} bytes, expected 40", bytes.len()),
        });
    }
    let number = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
    Ok((number, B256::from_slice(&bytes[8..])))
}

/// A transaction's place: block number (8, big-endian) ‖ index in the block (4, big-endian).
pub(crate) fn encode_tx_location(number: u64, index: u32) -> [u8; 12] {
    let mut out = [0u8; 12];
    out[..8].copy_from_slice(&number.to_be_bytes());
    out[8..].copy_from_slice(&index.to_be_bytes());
    out
}

/// Decodes [`encode_tx_location`]'s format.
///
/// # Errors
/// [`ProviderError::Corrupt`] naming `table` and `key` unless `bytes` is 12 bytes long.
pub(crate) fn decode_tx_location(
    table: &'static str,
    key: &B256,
    bytes: &[u8],
) -> Result<(u64, u32), ProviderError> {
    if bytes.len() != 12 {
        return Err(ProviderError::Corrupt {
            table,
            key: key.to_string(),
            reason: format!("{} bytes, expected 12", bytes.len()),
        });
    }
    let number = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
    Ok((number, u32::from_be_bytes(bytes[8..].try_into().expect("4 bytes"))))
}

/// A block number (8 bytes, big-endian).
///
/// # Errors
/// [`ProviderError::Corrupt`] naming `table` and `key` unless `bytes` is 8 bytes long.
pub(crate) fn decode_number(
    table: &'static str,
    key: &B256,
    bytes: &[u8],
) -> Result<u64, ProviderError> {
    let number: [u8; 8] = bytes.try_into().map_err(|_| ProviderError::Corrupt {
        table,
        key: key.to_string(),
        reason: format!("{} bytes, expected 8", bytes.len()),
    })?;
    Ok(u64::from_be_bytes(number))
}

/// One RLP value filling `bytes`, the entry of block `number` in `table`.
///
/// # Errors
/// [`ProviderError::Corrupt`] when it does not decode or bytes follow it.
pub(crate) fn decode_rlp<T: alloy_rlp::Decodable>(
    table: &'static str,
    number: u64,
    bytes: &[u8],
) -> Result<T, ProviderError> {
    let corrupt =
        |reason: String| ProviderError::Corrupt { table, key: number.to_string(), reason };
    let mut buf = bytes;
    let value = T::decode(&mut buf).map_err(|e| corrupt(e.to_string()))?;
    if !buf.is_empty() {
        return Err(corrupt(format!("{} bytes after the RLP value", buf.len())));
    }
    Ok(value)
}
