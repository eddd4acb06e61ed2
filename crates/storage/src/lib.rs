//! gigagas storage on RocksDB.
//!
//! One column family per table (flat accounts, flat storage, bytecodes, headers, bodies,
//! receipts, BALs, trie nodes, meta). Every block is committed in **one atomic write batch**
//! together with the head pointer, so a process killed at any moment reopens at the last block
//! whose batch was written, with nothing of a later block visible (RocksDB's write-ahead log
//! replays whole batches only). Blocks must be committed in order: `number == head + 1`.
//!
//! Keys: block tables by the 8-byte big-endian block number; accounts by address (20 bytes);
//! storage by address ‖ slot (20 + 32 bytes, slot big-endian, so one account's slots are
//! contiguous and a whole account's storage is one range); bytecodes by code hash.

use alloy_consensus::{BlockBody, Header, ReceiptEnvelope, TxEnvelope};
use alloy_eip7928::AccountChanges;
use alloy_primitives::{Address, B256, U256};
use gigagas_state::{StateError, StateSource};
use revm::state::{AccountInfo, Bytecode};
use rocksdb::{ColumnFamilyDescriptor, Options, WriteBatch, DB};
use std::path::{Path, PathBuf};

/// Column family names, in the order they are created.
pub const COLUMN_FAMILIES: [&str; 11] = [
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
];
/// Block hash → block number (8 bytes big-endian), for lookups by hash (JSON-RPC).
pub const BLOCK_NUMBERS: &str = "block_numbers";
/// Transaction hash → block number (8 bytes big-endian) ‖ index in the block (4 bytes
/// big-endian), for lookups by transaction hash (JSON-RPC).
pub const TX_LOOKUP: &str = "tx_lookup";
/// Flat accounts: address → [`AccountRecord`] (72 bytes).
pub const ACCOUNTS: &str = "accounts";
/// Flat storage: address ‖ slot → value (32 bytes big-endian); zero values are not stored.
pub const STORAGE: &str = "storage";
/// Contract code: code hash → bytes.
pub const BYTECODES: &str = "bytecodes";
/// Block headers: number → RLP.
pub const HEADERS: &str = "headers";
/// Block bodies: number → RLP.
pub const BODIES: &str = "bodies";
/// Receipts: number → RLP of the block's receipts.
pub const RECEIPTS: &str = "receipts";
/// EIP-7928 block access lists: number → RLP.
pub const BALS: &str = "bals";
/// State trie nodes (account trie and storage tries) for the state-root stage: keccak256 of a
/// node → its RLP. Content-addressed, so nodes of all tries and of every block share one table
/// (nodes no longer referenced are kept: no pruning yet).
pub const TRIE_NODES: &str = "trie_nodes";
/// Meta: the head pointer.
pub const META: &str = "meta";

const HEAD_KEY: &[u8] = b"head";

/// Balance, nonce and code hash of an account, as stored in [`ACCOUNTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountRecord {
    /// Nonce.
    pub nonce: u64,
    /// Balance (wei).
    pub balance: U256,
    /// keccak256 of the code (the empty-code hash for none).
    pub code_hash: B256,
}

impl AccountRecord {
    /// The 72-byte encoding: nonce (8, big-endian) ‖ balance (32, big-endian) ‖ code hash (32).
    pub fn encode(&self) -> [u8; 72] {
        let mut out = [0u8; 72];
        out[..8].copy_from_slice(&self.nonce.to_be_bytes());
        out[8..40].copy_from_slice(&self.balance.to_be_bytes::<32>());
        out[40..].copy_from_slice(self.code_hash.as_slice());
        out
    }

    /// Decodes [`AccountRecord::encode`]'s format; `None` if `bytes` is not 72 bytes long.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let bytes: &[u8; 72] = bytes.try_into().ok()?;
        Some(Self {
            nonce: u64::from_be_bytes(bytes[..8].try_into().ok()?),
            balance: U256::from_be_slice(&bytes[8..40]),
            code_hash: B256::from_slice(&bytes[40..]),
        })
    }
}

/// Everything one block changes, written atomically by [`Storage::commit_block`].
#[derive(Debug, Clone, Default)]
pub struct BlockCommit<'a> {
    /// Block number; must be the head's number + 1 (0 for the first block of an empty store).
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// RLP of the header.
    pub header: &'a [u8],
    /// RLP of the body.
    pub body: &'a [u8],
    /// RLP of the receipts.
    pub receipts: &'a [u8],
    /// RLP of the block's EIP-7928 BAL, when it has one.
    pub bal: Option<&'a [u8]>,
    /// Accounts whose storage is cleared before `storage` is applied (deleted or re-created).
    pub wiped: &'a [Address],
    /// New account values; `None` deletes the account.
    pub accounts: &'a [(Address, Option<AccountRecord>)],
    /// New slot values; zero deletes the slot.
    pub storage: &'a [(Address, U256, U256)],
    /// New contract code: (code hash, bytes).
    pub codes: &'a [(B256, &'a [u8])],
    /// New trie nodes from the state-root stage: (keccak256, RLP).
    pub trie_nodes: &'a [(B256, Vec<u8>)],
    /// Hashes of the block's transactions, in order (indexed in [`TX_LOOKUP`]).
    pub tx_hashes: &'a [B256],
}

/// A canonical block removed by [`Storage::unwind`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnwoundBlock {
    /// Block number.
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// Hashes of its transactions (their [`TX_LOOKUP`] entries are removed).
    pub tx_hashes: Vec<B256>,
}

/// Errors of the store. Every variant names what it was doing.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// RocksDB failed.
    #[error("rocksdb at {path}: {what}: {source}")]
    Db {
        /// The database folder.
        path: PathBuf,
        /// The operation.
        what: &'static str,
        /// RocksDB's error.
        source: rocksdb::Error,
    },
    /// A stored value does not decode.
    #[error("corrupt {table} entry {key}: {reason}")]
    Corrupt {
        /// Column family.
        table: &'static str,
        /// Key, hex.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A block was committed out of order.
    #[error("block {number} cannot follow head {head:?}: blocks are committed in order")]
    NonContiguous {
        /// The head (number) before the commit, if any.
        head: Option<u64>,
        /// The block offered.
        number: u64,
    },
}

/// The RocksDB store.
#[derive(Debug)]
pub struct Storage {
    db: DB,
    path: PathBuf,
}

fn storage_key(address: &Address, slot: &U256) -> [u8; 52] {
    let mut key = [0u8; 52];
    key[..20].copy_from_slice(address.as_slice());
    key[20..].copy_from_slice(&slot.to_be_bytes::<32>());
    key
}

impl Storage {
    /// Opens (or creates) the store in `path`, with all column families.
    ///
    /// # Errors
    /// [`StorageError::Db`] when RocksDB cannot open it.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        let mut options = Options::default();
        options.create_if_missing(true);
        options.create_missing_column_families(true);
        let families = COLUMN_FAMILIES
            .iter()
            .map(|name| ColumnFamilyDescriptor::new(*name, Options::default()));
        let db = DB::open_cf_descriptors(&options, path, families).map_err(|source| {
            StorageError::Db { path: path.to_path_buf(), what: "open", source }
        })?;
        Ok(Self { db, path: path.to_path_buf() })
    }

    fn cf(&self, name: &'static str) -> &rocksdb::ColumnFamily {
        // Every family in COLUMN_FAMILIES is created by `open`.
        self.db.cf_handle(name).expect("column family created by Storage::open")
    }

    fn db_err(&self, what: &'static str) -> impl FnOnce(rocksdb::Error) -> StorageError + '_ {
        move |source| StorageError::Db { path: self.path.clone(), what, source }
    }

    fn get(&self, table: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.db.get_cf(self.cf(table), key).map_err(self.db_err("read"))
    }

    /// The last committed block: (number, hash), `None` for an empty store.
    ///
    /// # Errors
    /// [`StorageError::Db`], or [`StorageError::Corrupt`] for a malformed head pointer.
    pub fn head(&self) -> Result<Option<(u64, B256)>, StorageError> {
        let Some(bytes) = self.get(META, HEAD_KEY)? else { return Ok(None) };
        if bytes.len() != 40 {
            return Err(StorageError::Corrupt {
                table: META,
                key: "head".into(),
                reason: format!("{} bytes, expected 40", bytes.len()),
            });
        }
        let number = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
        Ok(Some((number, B256::from_slice(&bytes[8..]))))
    }

    /// Writes everything `commit` holds, and the head pointer, in one atomic write batch.
    ///
    /// # Errors
    /// [`StorageError::NonContiguous`] unless `commit.number` follows the head;
    /// [`StorageError::Db`] when the write fails (then nothing of the block is written).
    pub fn commit_block(&self, commit: &BlockCommit<'_>) -> Result<(), StorageError> {
        let head = self.head()?.map(|(n, _)| n);
        let expected = head.map_or(0, |n| n + 1);
        if commit.number != expected {
            return Err(StorageError::NonContiguous { head, number: commit.number });
        }
        let key = commit.number.to_be_bytes();
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(HEADERS), key, commit.header);
        batch.put_cf(self.cf(BODIES), key, commit.body);
        batch.put_cf(self.cf(RECEIPTS), key, commit.receipts);
        batch.put_cf(self.cf(BLOCK_NUMBERS), commit.hash, key);
        for (i, tx) in commit.tx_hashes.iter().enumerate() {
            let mut location = [0u8; 12];
            location[..8].copy_from_slice(&key);
            location[8..].copy_from_slice(&(i as u32).to_be_bytes());
            batch.put_cf(self.cf(TX_LOOKUP), tx, location);
        }
        if let Some(bal) = commit.bal {
            batch.put_cf(self.cf(BALS), key, bal);
        }
        for address in commit.wiped {
            // [address ‖ 0…0, address ‖ ff…ff ‖ 00): every 52-byte key of the account.
            let from = storage_key(address, &U256::ZERO);
            let mut to = [0xffu8; 53];
            to[..20].copy_from_slice(address.as_slice());
            to[52] = 0;
            batch.delete_range_cf(self.cf(STORAGE), &from[..], &to[..]);
        }
        self.put_flat_state(&mut batch, commit.accounts, commit.storage);
        for (hash, code) in commit.codes {
            batch.put_cf(self.cf(BYTECODES), hash, code);
        }
        for (hash, node) in commit.trie_nodes {
            batch.put_cf(self.cf(TRIE_NODES), hash, node);
        }
        let mut head_value = [0u8; 40];
        head_value[..8].copy_from_slice(&key);
        head_value[8..].copy_from_slice(commit.hash.as_slice());
        batch.put_cf(self.cf(META), HEAD_KEY, head_value);
        self.db.write(batch).map_err(self.db_err("commit block"))
    }

    /// Unwinds the canonical chain to block `to` (a reorg): removes the blocks above it
    /// (headers, bodies, receipts, BALs, their hash → number and transaction entries), writes
    /// the flat-state values `accounts` and `storage` give back (as of block `to`, e.g. read from its state
    /// root's trie) and moves the head pointer, in one atomic write batch. Trie nodes and codes
    /// stay (the store never prunes them).
    ///
    /// # Errors
    /// [`StorageError::NonContiguous`] unless `unwound` lists every block from the head down to
    /// `to.0 + 1`; [`StorageError::Db`] when the write fails (then nothing changes).
    pub fn unwind(
        &self,
        to: (u64, B256),
        unwound: &[UnwoundBlock],
        accounts: &[(Address, Option<AccountRecord>)],
        storage: &[(Address, U256, U256)],
    ) -> Result<(), StorageError> {
        let head = self.head()?.map(|(n, _)| n);
        let complete = head.is_some_and(|h| {
            h >= to.0
                && unwound.len() as u64 == h - to.0
                && unwound.iter().zip((to.0 + 1..=h).rev()).all(|(b, n)| b.number == n)
        });
        if !complete {
            return Err(StorageError::NonContiguous { head, number: to.0 });
        }
        let mut batch = WriteBatch::default();
        for block in unwound {
            let key = block.number.to_be_bytes();
            for table in [HEADERS, BODIES, RECEIPTS, BALS] {
                batch.delete_cf(self.cf(table), key);
            }
            batch.delete_cf(self.cf(BLOCK_NUMBERS), block.hash);
            for tx in &block.tx_hashes {
                batch.delete_cf(self.cf(TX_LOOKUP), tx);
            }
        }
        self.put_flat_state(&mut batch, accounts, storage);
        let mut head_value = [0u8; 40];
        head_value[..8].copy_from_slice(&to.0.to_be_bytes());
        head_value[8..].copy_from_slice(to.1.as_slice());
        batch.put_cf(self.cf(META), HEAD_KEY, head_value);
        self.db.write(batch).map_err(self.db_err("unwind"))
    }

    fn put_flat_state(
        &self,
        batch: &mut WriteBatch,
        accounts: &[(Address, Option<AccountRecord>)],
        storage: &[(Address, U256, U256)],
    ) {
        for (address, account) in accounts {
            match account {
                Some(a) => batch.put_cf(self.cf(ACCOUNTS), address, a.encode()),
                None => batch.delete_cf(self.cf(ACCOUNTS), address),
            }
        }
        for (address, slot, value) in storage {
            let key = storage_key(address, slot);
            if value.is_zero() {
                batch.delete_cf(self.cf(STORAGE), key);
            } else {
                batch.put_cf(self.cf(STORAGE), key, value.to_be_bytes::<32>());
            }
        }
    }

    /// The account at `address`, `None` if it does not exist.
    ///
    /// # Errors
    /// [`StorageError::Db`], or [`StorageError::Corrupt`] for a malformed record.
    pub fn account(&self, address: &Address) -> Result<Option<AccountRecord>, StorageError> {
        let Some(bytes) = self.get(ACCOUNTS, address.as_slice())? else { return Ok(None) };
        AccountRecord::decode(&bytes).map(Some).ok_or_else(|| StorageError::Corrupt {
            table: ACCOUNTS,
            key: address.to_string(),
            reason: format!("{} bytes, expected 72", bytes.len()),
        })
    }

    /// The value of `slot` of `address` (zero when absent).
    ///
    /// # Errors
    /// [`StorageError::Db`], or [`StorageError::Corrupt`] for a malformed value.
    pub fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StorageError> {
        let key = storage_key(address, slot);
        let Some(bytes) = self.get(STORAGE, &key)? else { return Ok(U256::ZERO) };
        U256::try_from_be_slice(&bytes).ok_or_else(|| StorageError::Corrupt {
            table: STORAGE,
            key: format!("{address}/{slot:#x}"),
            reason: format!("{} bytes", bytes.len()),
        })
    }

    /// Whether `address` holds any storage slot (a prefix seek in the storage table; slots
    /// are stored only while non-zero). EIP-7610 asks it of a creation's target.
    ///
    /// # Errors
    /// [`StorageError::Db`].
    pub fn has_storage(&self, address: &Address) -> Result<bool, StorageError> {
        let from = storage_key(address, &U256::ZERO);
        let mut to = [0xffu8; 53];
        to[..20].copy_from_slice(address.as_slice());
        to[52] = 0;
        let mut options = rocksdb::ReadOptions::default();
        options.set_iterate_upper_bound(to.to_vec());
        let mut iter = self.db.raw_iterator_cf_opt(self.cf(STORAGE), options);
        iter.seek(from);
        if iter.valid() {
            return Ok(true);
        }
        iter.status().map_err(self.db_err("seek storage"))?;
        Ok(false)
    }

    /// Contract code by hash.
    ///
    /// # Errors
    /// [`StorageError::Db`].
    pub fn bytecode(&self, hash: &B256) -> Result<Option<Vec<u8>>, StorageError> {
        self.get(BYTECODES, hash.as_slice())
    }

    /// Writes flat state outside any block, in one batch (loading a snapshot, e.g. a benchmark's
    /// pre-state): accounts, non-zero slots and code.
    ///
    /// # Errors
    /// [`StorageError::Db`].
    pub fn write_state(
        &self,
        accounts: &[(Address, AccountRecord)],
        storage: &[(Address, U256, U256)],
        codes: &[(B256, &[u8])],
    ) -> Result<(), StorageError> {
        let mut batch = WriteBatch::default();
        for (address, record) in accounts {
            batch.put_cf(self.cf(ACCOUNTS), address, record.encode());
        }
        for (address, slot, value) in storage.iter().filter(|(_, _, v)| !v.is_zero()) {
            batch.put_cf(self.cf(STORAGE), storage_key(address, slot), value.to_be_bytes::<32>());
        }
        for (hash, code) in codes {
            batch.put_cf(self.cf(BYTECODES), hash, code);
        }
        self.db.write(batch).map_err(self.db_err("write state"))
    }

    /// Writes a META entry (e.g. the datadir's genesis file) outside any block.
    ///
    /// # Errors
    /// [`StorageError::Db`].
    pub fn put_meta(&self, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.db.put_cf(self.cf(META), key, value).map_err(self.db_err("write meta"))
    }

    /// A META entry.
    ///
    /// # Errors
    /// [`StorageError::Db`].
    pub fn meta(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        self.get(META, key)
    }

    /// Many accounts in one batched RocksDB multi-get ([`Storage::slots`]), in the order asked.
    ///
    /// # Errors
    /// [`StorageError::Db`], or [`StorageError::Corrupt`] for a malformed record.
    pub fn accounts(
        &self,
        addresses: &[Address],
    ) -> Result<Vec<Option<AccountRecord>>, StorageError> {
        let cf = self.cf(ACCOUNTS);
        self.db
            .batched_multi_get_cf(&cf, addresses.iter().map(|a| a.as_slice()), false)
            .into_iter()
            .zip(addresses)
            .map(|(r, address)| {
                let Some(bytes) = r.map_err(self.db_err("multi-get accounts"))? else {
                    return Ok(None);
                };
                AccountRecord::decode(&bytes).map(Some).ok_or_else(|| StorageError::Corrupt {
                    table: ACCOUNTS,
                    key: address.to_string(),
                    reason: format!("{} bytes, expected 72", bytes.len()),
                })
            })
            .collect()
    }

    /// Many slots in one RocksDB multi-get, in the order asked (zero when absent). The batched
    /// form (RocksDB's array `MultiGet`: keys sorted once, each SST block read once for all its
    /// keys, values pinned rather than copied), not the per-key loop of the vector form.
    ///
    /// # Errors
    /// [`StorageError::Db`], or [`StorageError::Corrupt`] for a malformed value.
    pub fn slots(&self, keys: &[(Address, U256)]) -> Result<Vec<U256>, StorageError> {
        let cf = self.cf(STORAGE);
        let raw: Vec<[u8; 52]> = keys.iter().map(|(a, s)| storage_key(a, s)).collect();
        self.db
            .batched_multi_get_cf(&cf, raw.iter().map(|k| &k[..]), false)
            .into_iter()
            .zip(keys)
            .map(|(r, (address, slot))| {
                let Some(bytes) = r.map_err(self.db_err("multi-get storage"))? else {
                    return Ok(U256::ZERO);
                };
                U256::try_from_be_slice(&bytes).ok_or_else(|| StorageError::Corrupt {
                    table: STORAGE,
                    key: format!("{address}/{slot:#x}"),
                    reason: format!("{} bytes", bytes.len()),
                })
            })
            .collect()
    }

    /// A trie node by its keccak256.
    ///
    /// # Errors
    /// [`StorageError::Db`].
    pub fn trie_node(&self, hash: &B256) -> Result<Option<Vec<u8>>, StorageError> {
        self.get(TRIE_NODES, hash.as_slice())
    }

    /// Hash of the stored block `number` (keccak256 of its header's RLP), `None` when absent.
    ///
    /// # Errors
    /// [`StorageError::Db`].
    pub fn block_hash(&self, number: u64) -> Result<Option<B256>, StorageError> {
        Ok(self.block_entry(HEADERS, number)?.map(|rlp| alloy_primitives::keccak256(&rlp)))
    }

    /// Empties RocksDB's block cache and drops the memtables to disk, so that the next reads
    /// come from the files (for cold-cache measurements; the OS page cache is dropped
    /// separately).
    ///
    /// # Errors
    /// [`StorageError::Db`] when the flush fails.
    pub fn flush(&self) -> Result<(), StorageError> {
        for name in COLUMN_FAMILIES {
            self.db.flush_cf(self.cf(name)).map_err(self.db_err("flush"))?;
        }
        Ok(())
    }

    /// The number of the stored block with `hash`, `None` when no such block is stored.
    ///
    /// # Errors
    /// [`StorageError::Db`], or [`StorageError::Corrupt`] for a malformed entry.
    pub fn block_number(&self, hash: &B256) -> Result<Option<u64>, StorageError> {
        let Some(bytes) = self.get(BLOCK_NUMBERS, hash.as_slice())? else { return Ok(None) };
        let number: [u8; 8] = bytes.as_slice().try_into().map_err(|_| StorageError::Corrupt {
            table: BLOCK_NUMBERS,
            key: hash.to_string(),
            reason: format!("{} bytes, expected 8", bytes.len()),
        })?;
        Ok(Some(u64::from_be_bytes(number)))
    }

    /// Where the transaction with `hash` is: (block number, index in the block), `None` when
    /// no stored block has it.
    ///
    /// # Errors
    /// [`StorageError::Db`], or [`StorageError::Corrupt`] for a malformed entry.
    pub fn transaction_location(&self, hash: &B256) -> Result<Option<(u64, u32)>, StorageError> {
        let Some(bytes) = self.get(TX_LOOKUP, hash.as_slice())? else { return Ok(None) };
        if bytes.len() != 12 {
            return Err(StorageError::Corrupt {
                table: TX_LOOKUP,
                key: hash.to_string(),
                reason: format!("{} bytes, expected 12", bytes.len()),
            });
        }
        let number = u64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
        Ok(Some((number, u32::from_be_bytes(bytes[8..].try_into().expect("4 bytes")))))
    }

    /// A block table's entry (`HEADERS`, `BODIES`, `RECEIPTS` or `BALS`) for block `number`.
    ///
    /// # Errors
    /// [`StorageError::Db`].
    pub fn block_entry(
        &self,
        table: &'static str,
        number: u64,
    ) -> Result<Option<Vec<u8>>, StorageError> {
        self.get(table, &number.to_be_bytes())
    }

    /// The entry of block `number` in `table`, decoded from its RLP: the one codec of the block
    /// tables.
    fn block_decoded<T: alloy_rlp::Decodable>(
        &self,
        table: &'static str,
        number: u64,
    ) -> Result<Option<T>, StorageError> {
        let Some(rlp) = self.block_entry(table, number)? else { return Ok(None) };
        let mut buf = rlp.as_slice();
        let value = T::decode(&mut buf).map_err(|e| StorageError::Corrupt {
            table,
            key: number.to_string(),
            reason: e.to_string(),
        })?;
        if !buf.is_empty() {
            return Err(StorageError::Corrupt {
                table,
                key: number.to_string(),
                reason: format!("{} bytes after the RLP value", buf.len()),
            });
        }
        Ok(Some(value))
    }

    /// The header of canonical block `number`.
    ///
    /// # Errors
    /// [`StorageError::Db`]; [`StorageError::Corrupt`] when the stored RLP does not decode.
    pub fn header(&self, number: u64) -> Result<Option<Header>, StorageError> {
        self.block_decoded(HEADERS, number)
    }

    /// The body (transactions, ommers, withdrawals) of canonical block `number`.
    ///
    /// # Errors
    /// As [`Storage::header`].
    pub fn body(&self, number: u64) -> Result<Option<BlockBody<TxEnvelope>>, StorageError> {
        self.block_decoded(BODIES, number)
    }

    /// The receipts of canonical block `number`, in transaction order.
    ///
    /// # Errors
    /// As [`Storage::header`].
    pub fn receipts(&self, number: u64) -> Result<Option<Vec<ReceiptEnvelope>>, StorageError> {
        self.block_decoded(RECEIPTS, number)
    }

    /// The EIP-7928 block access list of canonical block `number` (stored for every block
    /// this node executed).
    ///
    /// # Errors
    /// As [`Storage::header`].
    pub fn bal(&self, number: u64) -> Result<Option<Vec<AccountChanges>>, StorageError> {
        self.block_decoded(BALS, number)
    }
}

impl gigagas_trie::NodeSource for Storage {
    fn node(
        &self,
        hash: &B256,
    ) -> Result<Option<alloy_primitives::Bytes>, gigagas_trie::NodeSourceError> {
        self.trie_node(hash)
            .map(|n| n.map(Into::into))
            .map_err(|e| std::sync::Arc::new(e) as gigagas_trie::NodeSourceError)
    }
}

fn state_err(e: StorageError) -> StateError {
    StateError::from_source(e)
}

fn info(record: AccountRecord) -> AccountInfo {
    AccountInfo {
        balance: record.balance,
        nonce: record.nonce,
        code_hash: record.code_hash,
        code: None,
        ..Default::default()
    }
}

/// The flat state as of the head block, for a backed [`gigagas_state::PreState`]. Reads go to
/// RocksDB (its block cache, then the files); the pre-state's own cache keeps each value once
/// read, shared by every worker of the block.
impl StateSource for Storage {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        Ok(Storage::account(self, address).map_err(state_err)?.map(info))
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        Storage::storage(self, address, slot).map_err(state_err)
    }

    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        Ok(self.bytecode(hash).map_err(state_err)?.map(|b| Bytecode::new_raw(b.into())))
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        Storage::block_hash(self, number).map_err(state_err)
    }

    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        Storage::has_storage(self, address).map_err(state_err)
    }

    fn accounts(&self, addresses: &[Address]) -> Result<Vec<Option<AccountInfo>>, StateError> {
        Ok(Storage::accounts(self, addresses)
            .map_err(state_err)?
            .into_iter()
            .map(|r| r.map(info))
            .collect())
    }

    fn slots(&self, keys: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
        Storage::slots(self, keys).map_err(state_err)
    }

    fn codes(&self, hashes: &[B256]) -> Result<Vec<Option<Bytecode>>, StateError> {
        let cf = self.cf(BYTECODES);
        self.db
            .batched_multi_get_cf(&cf, hashes.iter().map(|h| h.as_slice()), false)
            .into_iter()
            .map(|r| {
                r.map(|code| code.map(|c| Bytecode::new_raw(c.to_vec().into())))
                    .map_err(|e| state_err(self.db_err("multi_get bytecodes")(e)))
            })
            .collect()
    }
}
