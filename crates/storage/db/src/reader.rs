//! Reads: the flat state (one key, or many in one batched multi-get), trie nodes, and the
//! block tables behind the storage API's readers; [`StateSource`] over the flat state for the
//! executor's pre-state.

use crate::{
    codecs::{
        account_key, decode_account, decode_head, decode_number, decode_rlp, decode_slot,
        decode_tx_location, hashed_storage_key, storage_key, storage_range_end,
    },
    tables::*,
    Storage,
};
use alloy_consensus::{BlockBody, Header, ReceiptEnvelope, TxEnvelope};
use alloy_eip7928::AccountChanges;
use alloy_primitives::{Address, B256, U256};
use gigagas_state::{StateError, StateSource};
use gigagas_storage_api::{
    AccountRecord, BlockAccessListReader, BlockHashReader, BlockNumReader, BlockReader,
    HeaderProvider, ProviderError, ProviderResult, ReceiptProvider, TransactionsProvider,
};
use revm::state::{AccountInfo, Bytecode};

impl Storage {
    /// The account at `address`, `None` if it does not exist.
    ///
    /// # Errors
    /// [`ProviderError::Database`], or [`ProviderError::Corrupt`] for a malformed record.
    pub fn account(&self, address: &Address) -> ProviderResult<Option<AccountRecord>> {
        let Some(bytes) = self.get(ACCOUNTS, account_key(address).as_slice())? else {
            return Ok(None);
        };
        decode_account(ACCOUNTS, address, &bytes).map(Some)
    }

    /// The value of `slot` of `address` (zero when absent).
    ///
    /// # Errors
    /// [`ProviderError::Database`], or [`ProviderError::Corrupt`] for a malformed value.
    pub fn storage(&self, address: &Address, slot: &U256) -> ProviderResult<U256> {
        let Some(bytes) = self.get(STORAGE, &storage_key(address, slot))? else {
            return Ok(U256::ZERO);
        };
        decode_slot(STORAGE, address, slot, &bytes)
    }

    /// Whether `address` holds any storage slot (a prefix seek in the storage table; slots
    /// are stored only while non-zero). EIP-7610 asks it of a creation's target.
    ///
    /// # Errors
    /// [`ProviderError::Database`].
    pub fn has_storage(&self, address: &Address) -> ProviderResult<bool> {
        let account = account_key(address);
        let mut options = self.read_options();
        options.set_iterate_upper_bound(storage_range_end(&account).to_vec());
        // Within the account's prefix: a table file whose prefix filter rules the account out
        // is skipped unread.
        options.set_prefix_same_as_start(true);
        let mut iter = self.db.raw_iterator_cf_opt(self.cf(STORAGE), options);
        iter.seek(hashed_storage_key(&account, &B256::ZERO));
        if iter.valid() {
            return Ok(true);
        }
        iter.status().map_err(self.db_err("seek storage"))?;
        Ok(false)
    }

    /// Contract code by hash.
    ///
    /// # Errors
    /// [`ProviderError::Database`].
    pub fn bytecode(&self, hash: &B256) -> ProviderResult<Option<Vec<u8>>> {
        self.get(BYTECODES, hash.as_slice())
    }

    /// Many accounts in one batched RocksDB multi-get ([`Storage::slots`]), in the order asked.
    ///
    /// # Errors
    /// [`ProviderError::Database`], or [`ProviderError::Corrupt`] for a malformed record.
    pub fn accounts(&self, addresses: &[Address]) -> ProviderResult<Vec<Option<AccountRecord>>> {
        let cf = self.cf(ACCOUNTS);
        let keys: Vec<B256> = addresses.iter().map(account_key).collect();
        self.multi_get(cf, keys.iter().map(|k| k.as_slice()))
            .into_iter()
            .zip(addresses)
            .map(|(r, address)| match r.map_err(self.db_err("multi-get accounts"))? {
                Some(bytes) => decode_account(ACCOUNTS, address, &bytes).map(Some),
                None => Ok(None),
            })
            .collect()
    }

    /// Many slots in one RocksDB multi-get, in the order asked (zero when absent). The batched
    /// form (RocksDB's array `MultiGet`: keys sorted once, each SST block read once for all its
    /// keys, values pinned rather than copied), not the per-key loop of the vector form.
    ///
    /// # Errors
    /// [`ProviderError::Database`], or [`ProviderError::Corrupt`] for a malformed value.
    pub fn slots(&self, keys: &[(Address, U256)]) -> ProviderResult<Vec<U256>> {
        let cf = self.cf(STORAGE);
        let raw: Vec<[u8; 64]> = keys.iter().map(|(a, s)| storage_key(a, s)).collect();
        self.multi_get(cf, raw.iter().map(|k| &k[..]))
            .into_iter()
            .zip(keys)
            .map(|(r, (address, slot))| match r.map_err(self.db_err("multi-get storage"))? {
                Some(bytes) => decode_slot(STORAGE, address, slot, &bytes),
                None => Ok(U256::ZERO),
            })
            .collect()
    }

    /// A trie node by its keccak256.
    ///
    /// # Errors
    /// [`ProviderError::Database`].
    pub fn trie_node(&self, hash: &B256) -> ProviderResult<Option<Vec<u8>>> {
        self.get(TRIE_NODES, hash.as_slice())
    }

    /// Many trie nodes by their keccak256 in one batched RocksDB multi-get ([`Storage::slots`]),
    /// in the order asked.
    ///
    /// # Errors
    /// [`ProviderError::Database`], for each node whose read failed.
    pub fn trie_nodes(&self, hashes: &[B256]) -> Vec<ProviderResult<Option<Vec<u8>>>> {
        self.multi_get_by_hash(TRIE_NODES, hashes)
            .into_iter()
            .map(|r| {
                r.map(|node| node.map(|node| node.to_vec())).map_err(self.db_err("multi-get trie"))
            })
            .collect()
    }

    /// The values of `table` (keyed by a 32-byte hash) under `hashes`, in one batched RocksDB
    /// multi-get, in the order asked.
    fn multi_get_by_hash(
        &self,
        table: &'static str,
        hashes: &[B256],
    ) -> Vec<Result<Option<rocksdb::DBPinnableSlice<'_>>, rocksdb::Error>> {
        self.multi_get(self.cf(table), hashes.iter().map(|h| h.as_slice()))
    }

    /// The values under `keys` in `cf`, in the order asked: one batched RocksDB multi-get
    /// (keys sorted once, each table block read once for all its keys, the blocks of one file
    /// read together — in one io_uring submission where [`crate::io_uring_usable`]), or one
    /// lookup a key ([`Storage::with_batched_reads`]).
    fn multi_get<'k>(
        &self,
        cf: &rocksdb::ColumnFamily,
        keys: impl Iterator<Item = &'k [u8]>,
    ) -> Vec<Result<Option<rocksdb::DBPinnableSlice<'_>>, rocksdb::Error>> {
        let options = self.read_options();
        if self.batched_reads {
            self.db.batched_multi_get_cf_opt(cf, keys, false, &options)
        } else {
            keys.map(|key| self.db.get_pinned_cf_opt(cf, key, &options)).collect()
        }
    }

    /// A block table's raw entry (`HEADERS`, `BODIES`, `RECEIPTS` or `BALS`) for block
    /// `number`.
    ///
    /// # Errors
    /// [`ProviderError::Database`].
    pub fn block_entry(&self, table: &'static str, number: u64) -> ProviderResult<Option<Vec<u8>>> {
        self.get(table, &number.to_be_bytes())
    }

    /// The entry of block `number` in `table`, decoded from its RLP.
    fn block_decoded<T: alloy_rlp::Decodable>(
        &self,
        table: &'static str,
        number: u64,
    ) -> ProviderResult<Option<T>> {
        self.block_entry(table, number)?.map(|rlp| decode_rlp(table, number, &rlp)).transpose()
    }
}

impl BlockNumReader for Storage {
    fn best_block(&self) -> ProviderResult<Option<(u64, B256)>> {
        self.get(META, HEAD_KEY)?.map(|bytes| decode_head(&bytes)).transpose()
    }

    fn block_number(&self, hash: &B256) -> ProviderResult<Option<u64>> {
        self.get(BLOCK_NUMBERS, hash.as_slice())?
            .map(|bytes| decode_number(BLOCK_NUMBERS, hash, &bytes))
            .transpose()
    }

    fn earliest_state_block(&self) -> ProviderResult<u64> {
        Ok(self.pruned_below()?.unwrap_or(0))
    }
}

impl BlockHashReader for Storage {
    fn block_hash(&self, number: u64) -> ProviderResult<Option<B256>> {
        Ok(self.block_entry(HEADERS, number)?.map(|rlp| alloy_primitives::keccak256(&rlp)))
    }
}

impl HeaderProvider for Storage {
    fn header_by_number(&self, number: u64) -> ProviderResult<Option<Header>> {
        self.block_decoded(HEADERS, number)
    }
}

impl BlockReader for Storage {
    fn body_by_number(&self, number: u64) -> ProviderResult<Option<BlockBody<TxEnvelope>>> {
        self.block_decoded(BODIES, number)
    }

    fn senders_by_number(&self, number: u64) -> ProviderResult<Option<Vec<Address>>> {
        let Some(bytes) = self.block_entry(SENDERS, number)? else { return Ok(None) };
        if bytes.len() % 20 != 0 {
            return Err(ProviderError::Corrupt {
                table: SENDERS,
                key: format!("block {number}"),
                reason: format!("{} bytes, not a whole number of addresses", bytes.len()),
            });
        }
        Ok(Some(bytes.chunks_exact(20).map(Address::from_slice).collect()))
    }
}

impl TransactionsProvider for Storage {
    fn transaction_location(&self, hash: &B256) -> ProviderResult<Option<(u64, u32)>> {
        self.get(TX_LOOKUP, hash.as_slice())?
            .map(|bytes| decode_tx_location(TX_LOOKUP, hash, &bytes))
            .transpose()
    }
}

impl ReceiptProvider for Storage {
    fn receipts_by_number(&self, number: u64) -> ProviderResult<Option<Vec<ReceiptEnvelope>>> {
        self.block_decoded(RECEIPTS, number)
    }
}

impl BlockAccessListReader for Storage {
    fn block_access_list(&self, number: u64) -> ProviderResult<Option<Vec<AccountChanges>>> {
        self.block_decoded(BALS, number)
    }
}

impl gigagas_trie::NodeSource for Storage {
    fn node(
        &self,
        hash: &B256,
    ) -> Result<Option<alloy_primitives::Bytes>, gigagas_trie::NodeSourceError> {
        if let Some(node) = self.nodes.get(hash) {
            return Ok(Some(node));
        }
        self.node_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let node = self
            .trie_node(hash)
            .map_err(|e| std::sync::Arc::new(e) as gigagas_trie::NodeSourceError)?
            .map(alloy_primitives::Bytes::from);
        if let Some(node) = &node {
            self.nodes.insert(*hash, node.clone());
        }
        Ok(node)
    }

    /// The cached nodes from the cache, the rest in one batched multi-get
    /// ([`Storage::trie_nodes`]), which then go into the cache.
    fn nodes(
        &self,
        hashes: &[B256],
    ) -> Vec<Result<Option<alloy_primitives::Bytes>, gigagas_trie::NodeSourceError>> {
        gigagas_trie::nodes_over(
            hashes,
            |hash| self.nodes.get(hash),
            |missing| {
                self.node_reads
                    .fetch_add(missing.len() as u64, std::sync::atomic::Ordering::Relaxed);
                missing
                    .iter()
                    .zip(self.trie_nodes(missing))
                    .map(|(hash, read)| {
                        let node = read
                            .map_err(|e| std::sync::Arc::new(e) as gigagas_trie::NodeSourceError)?
                            .map(alloy_primitives::Bytes::from);
                        if let Some(node) = &node {
                            self.nodes.insert(*hash, node.clone());
                        }
                        Ok(node)
                    })
                    .collect()
            },
        )
    }
}

fn state_err(e: ProviderError) -> StateError {
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
        BlockHashReader::block_hash(self, number).map_err(state_err)
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
        self.multi_get_by_hash(BYTECODES, hashes)
            .into_iter()
            .map(|r| {
                r.map(|code| code.map(|c| Bytecode::new_raw(c.to_vec().into())))
                    .map_err(|e| state_err(self.db_err("multi_get bytecodes")(e)))
            })
            .collect()
    }
}
