//! The tables (RocksDB column families) and their keys.
//!
//! Keys: block tables by the 8-byte big-endian block number; accounts by keccak256(address)
//! (32 bytes); storage by keccak256(address) ‖ keccak256(slot) (64 bytes, so one account's
//! slots are contiguous, a whole account's storage is one range, and both tables iterate in
//! the state trie's key order, as snap sync writes and serves them); bytecodes by code hash.

/// Column family names, in the order they are created.
pub const COLUMN_FAMILIES: [&str; 12] = [
    ACCOUNTS,
    STORAGE,
    BYTECODES,
    HEADERS,
    BODIES,
    RECEIPTS,
    BALS,
    TRIE_NODES,
    META,
    BLOCK_NUMBERS,
    TX_LOOKUP,
    SENDERS,
];
/// Block hash → block number (8 bytes big-endian), for lookups by hash (JSON-RPC).
pub const BLOCK_NUMBERS: &str = "block_numbers";
/// Transaction hash → block number (8 bytes big-endian) ‖ index in the block (4 bytes
/// big-endian), for lookups by transaction hash (JSON-RPC).
pub const TX_LOOKUP: &str = "tx_lookup";
/// Flat accounts: keccak256(address) → an account record (72 bytes,
/// [`crate::codecs::encode_account`]).
pub const ACCOUNTS: &str = "accounts";
/// Flat storage: keccak256(address) ‖ keccak256(slot) → value (32 bytes big-endian); zero
/// values are not stored.
pub const STORAGE: &str = "storage";
/// Contract code: code hash → bytes.
pub const BYTECODES: &str = "bytecodes";
/// Block headers: number → RLP.
pub const HEADERS: &str = "headers";
/// Block bodies: number → RLP.
pub const BODIES: &str = "bodies";
/// Transaction senders: number → the block's senders' addresses, 20 bytes each, in
/// transaction order (recovered once, when the block was executed; JSON-RPC reads them
/// instead of recovering each signature again).
pub const SENDERS: &str = "senders";
/// Receipts: number → RLP of the block's receipts.
pub const RECEIPTS: &str = "receipts";
/// EIP-7928 block access lists: number → RLP.
pub const BALS: &str = "bals";
/// State trie nodes (account trie and storage tries) for the state-root stage: keccak256 of a
/// node → its RLP. Content-addressed, so nodes of all tries and of every block share one table
/// (nodes no longer referenced are kept: no pruning yet).
pub const TRIE_NODES: &str = "trie_nodes";
/// Meta: the head pointer, the flat state's key scheme, and what other crates keep beside the
/// chain (snap sync's progress).
pub const META: &str = "meta";

pub(crate) const HEAD_KEY: &[u8] = b"head";
/// The flat state's key scheme: absent in a store written before the flat state was keyed by
/// hash (which [`crate::Storage::open`] refuses), [`FLAT_KEYS_HASHED`] since.
pub(crate) const FLAT_KEYS_KEY: &[u8] = b"flat-keys";
pub(crate) const FLAT_KEYS_HASHED: &[u8] = b"keccak256";
