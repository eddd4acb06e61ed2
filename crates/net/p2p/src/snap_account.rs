//! Accounts in snap's slim form (geth's `types.SlimAccountRLP`): the empty storage root and the
//! empty code hash as empty strings, for the server (`snap.rs`, `snap_flat.rs`) and the sync.

use alloy_primitives::{Bytes, B256};
use alloy_rlp::{Decodable, Encodable};
use alloy_trie::{TrieAccount, EMPTY_ROOT_HASH, KECCAK_EMPTY};

/// An account's trie value (`[nonce, balance, storage-root, code-hash]`) in geth's slim form:
/// the empty root and the empty code hash as empty strings. `None` for a value that is no
/// account.
pub fn slim(value: &[u8]) -> Option<Bytes> {
    let account = TrieAccount::decode(&mut &value[..]).ok()?;
    let root: &[u8] =
        if account.storage_root == EMPTY_ROOT_HASH { &[] } else { account.storage_root.as_slice() };
    let code: &[u8] =
        if account.code_hash == KECCAK_EMPTY { &[] } else { account.code_hash.as_slice() };
    let payload = account.nonce.length() + account.balance.length() + root.length() + code.length();
    let mut out = Vec::with_capacity(payload + 3);
    alloy_rlp::Header { list: true, payload_length: payload }.encode(&mut out);
    account.nonce.encode(&mut out);
    account.balance.encode(&mut out);
    root.encode(&mut out);
    code.encode(&mut out);
    Some(out.into())
}

/// The account behind geth's slim form (`[nonce, balance, storage-root, code-hash]`, the empty
/// root and code hash as empty strings), as its trie value holds it.
///
/// # Errors
/// [`alloy_rlp::Error`] when `slim` is not one such list: a root or code hash of another
/// length than 0 or 32, a field too many or too few, bytes after the list.
pub fn full_account(slim: &[u8]) -> Result<TrieAccount, alloy_rlp::Error> {
    let mut buf = slim;
    let header = alloy_rlp::Header::decode(&mut buf)?;
    if !header.list {
        return Err(alloy_rlp::Error::UnexpectedString);
    }
    if buf.len() != header.payload_length {
        return Err(alloy_rlp::Error::Custom("bytes after the slim account"));
    }
    let nonce = u64::decode(&mut buf)?;
    let balance = alloy_primitives::U256::decode(&mut buf)?;
    let hash_or = |buf: &mut &[u8], empty: B256| -> Result<B256, alloy_rlp::Error> {
        let bytes = alloy_rlp::Header::decode_bytes(buf, false)?;
        match bytes.len() {
            0 => Ok(empty),
            32 => Ok(B256::from_slice(bytes)),
            _ => Err(alloy_rlp::Error::Custom("a root or code hash of neither 0 nor 32 bytes")),
        }
    };
    let storage_root = hash_or(&mut buf, EMPTY_ROOT_HASH)?;
    let code_hash = hash_or(&mut buf, KECCAK_EMPTY)?;
    if !buf.is_empty() {
        return Err(alloy_rlp::Error::ListLengthMismatch { expected: 4, got: 5 });
    }
    Ok(TrieAccount { nonce, balance, storage_root, code_hash })
}
