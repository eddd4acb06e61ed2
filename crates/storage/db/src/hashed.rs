//! The hashed-state API over the tables: snap sync's atomic batches (state by trie key, trie
//! nodes, progress in `meta`, raw blocks, the head) and the flat state read back in key order.

use crate::{
    codecs::{
        decode_account, encode_account, encode_head, encode_tx_location, hashed_storage_key,
        storage_range_end,
    },
    tables::*,
    Storage,
};
use alloy_primitives::{Address, B256, U256};
use gigagas_storage_api::{
    AccountRecord, BlockNumReader, HashedBatch, HashedStateReader, HashedStateWriter,
    ProviderError, ProviderResult,
};
use rocksdb::{Direction, IteratorMode, WriteBatch};

impl HashedStateWriter for Storage {
    fn write_hashed(&self, batch: &HashedBatch<'_>) -> ProviderResult<()> {
        let mut write = WriteBatch::default();
        for (account, record) in batch.accounts {
            write.put_cf(self.cf(ACCOUNTS), account, encode_account(record));
        }
        for (account, slot, value) in batch.storage.iter().filter(|(_, _, v)| !v.is_zero()) {
            write.put_cf(
                self.cf(STORAGE),
                hashed_storage_key(account, slot),
                value.to_be_bytes::<32>(),
            );
        }
        for (hash, code) in batch.codes {
            write.put_cf(self.cf(BYTECODES), hash, code);
        }
        for (hash, node) in batch.trie_nodes {
            write.put_cf(self.cf(TRIE_NODES), hash, node);
        }
        for block in batch.blocks {
            let key = block.number.to_be_bytes();
            write.put_cf(self.cf(HEADERS), key, block.header);
            write.put_cf(self.cf(BLOCK_NUMBERS), block.hash, key);
            if let Some(body) = block.body {
                write.put_cf(self.cf(BODIES), key, body);
            }
            if let Some(receipts) = block.receipts {
                write.put_cf(self.cf(RECEIPTS), key, receipts);
            }
            for (i, tx) in block.tx_hashes.iter().enumerate() {
                write.put_cf(self.cf(TX_LOOKUP), tx, encode_tx_location(block.number, i as u32));
            }
        }
        for (key, value) in batch.meta_put {
            write.put_cf(self.cf(META), key, value);
        }
        for key in batch.meta_delete {
            write.delete_cf(self.cf(META), key);
        }
        if let Some((number, hash)) = batch.head {
            write.put_cf(self.cf(META), HEAD_KEY, encode_head(number, &hash));
        }
        let _written = self.trie_writes(batch.trie_nodes.iter().map(|(hash, _)| hash));
        self.db.write(write).map_err(self.db_err("write hashed state"))
    }

    fn ingest_hashed(&self, batch: &HashedBatch<'_>) -> ProviderResult<()> {
        self.ingest(batch)
    }

    fn set_bulk_load(&self, on: bool) -> ProviderResult<()> {
        self.bulk_load(on)
    }
}

impl HashedStateReader for Storage {
    fn hashed_accounts(
        &self,
        from: B256,
        limit: usize,
    ) -> ProviderResult<Vec<(B256, AccountRecord)>> {
        let mut out = Vec::new();
        for item in self.accounts_from(&from).take(limit) {
            let (key, value) = item.map_err(self.db_err("iterate accounts"))?;
            out.push(account_entry(&key, &value)?);
        }
        Ok(out)
    }

    fn hashed_storage(
        &self,
        account: B256,
        from: B256,
        limit: usize,
    ) -> ProviderResult<Vec<(B256, U256)>> {
        let mut options = self.read_options();
        options.set_iterate_upper_bound(storage_range_end(&account).to_vec());
        let start = hashed_storage_key(&account, &from);
        let iter = self.db.iterator_cf_opt(
            self.cf(STORAGE),
            options,
            IteratorMode::From(&start, Direction::Forward),
        );
        let mut out = Vec::new();
        for item in iter.take(limit) {
            let (key, value) = item.map_err(self.db_err("iterate storage"))?;
            out.push(storage_entry(&key, &value)?);
        }
        Ok(out)
    }

    fn walk_hashed_storage_at_head(
        &self,
        account: B256,
        from: B256,
        f: &mut dyn FnMut(B256, U256) -> bool,
    ) -> ProviderResult<Option<(u64, B256)>> {
        // One snapshot for the head and the slots: a block's commit writes both atomically.
        let view = self.read_view();
        let head = view.best_block()?;
        let mut options = view.read_options();
        options.set_iterate_upper_bound(storage_range_end(&account).to_vec());
        let start = hashed_storage_key(&account, &from);
        let iter = view.db.iterator_cf_opt(
            view.cf(STORAGE),
            options,
            IteratorMode::From(&start, Direction::Forward),
        );
        for item in iter {
            let (key, value) = item.map_err(self.db_err("iterate storage"))?;
            let (slot, value) = storage_entry(&key, &value)?;
            if !f(slot, value) {
                break;
            }
        }
        Ok(head)
    }

    fn walk_hashed_accounts_at_head(
        &self,
        from: B256,
        f: &mut dyn FnMut(B256, AccountRecord, bool) -> bool,
    ) -> ProviderResult<Option<(u64, B256)>> {
        // One snapshot for the head, the accounts and the slots: a block's commit writes them
        // atomically.
        let view = self.read_view();
        let head = view.best_block()?;
        let accounts = view.accounts_from(&from);
        // The slots, one iterator moved forward only: positioned at the first slot of the
        // account walked or past it, so that it seeks again only once the walk passes the
        // account holding that slot (few accounts hold slots).
        // Across accounts: total order, past the family's account prefix.
        let mut options = view.read_options();
        options.set_total_order_seek(true);
        let mut slots = view.db.raw_iterator_cf_opt(view.cf(STORAGE), options);
        let mut next_holder: Option<Option<B256>> = None;
        for item in accounts {
            let (key, value) = item.map_err(self.db_err("iterate accounts"))?;
            let (hash, record) = account_entry(&key, &value)?;
            if next_holder.is_none_or(|holder| holder.is_some_and(|h| h < hash)) {
                slots.seek(hashed_storage_key(&hash, &B256::ZERO));
                slots.status().map_err(self.db_err("seek storage"))?;
                next_holder = Some(slots.key().map(storage_key).transpose()?.map(|(a, _)| a));
            }
            if !f(hash, record, next_holder == Some(Some(hash))) {
                break;
            }
        }
        Ok(head)
    }

    fn has_bytecode(&self, hash: &B256) -> ProviderResult<bool> {
        Ok(self.get(BYTECODES, hash.as_slice())?.is_some())
    }

    fn meta_with_prefix(&self, prefix: &[u8]) -> ProviderResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let iter = self.db.iterator_cf_opt(
            self.cf(META),
            self.read_options(),
            IteratorMode::From(prefix, Direction::Forward),
        );
        let mut out = Vec::new();
        for item in iter {
            let (key, value) = item.map_err(self.db_err("iterate meta"))?;
            if !key.starts_with(prefix) {
                break;
            }
            out.push((key.to_vec(), value.to_vec()));
        }
        Ok(out)
    }
}

impl Storage {
    /// The flat accounts from the hashed address `from` on, in key order. The accounts
    /// family's memtable is a hash table on an 8-byte prefix: a scan across prefixes needs
    /// total order.
    fn accounts_from(&self, from: &B256) -> rocksdb::DBIteratorWithThreadMode<'_, rocksdb::DB> {
        let mut options = self.read_options();
        options.set_total_order_seek(true);
        self.db.iterator_cf_opt(
            self.cf(ACCOUNTS),
            options,
            IteratorMode::From(from.as_slice(), Direction::Forward),
        )
    }
}

/// A flat account entry: keccak256(address) → its 72-byte record.
fn account_entry(key: &[u8], value: &[u8]) -> ProviderResult<(B256, AccountRecord)> {
    let hash = B256::try_from(key).map_err(|_| ProviderError::Corrupt {
        table: ACCOUNTS,
        key: alloy_primitives::hex::encode(key),
        reason: format!("a {}-byte key, expected 32", key.len()),
    })?;
    // The record's error names the key; the table holds no address to name.
    Ok((hash, decode_account(ACCOUNTS, &Address::ZERO, value)?))
}

/// A flat storage key: keccak256(address) ‖ keccak256(slot), 64 bytes.
fn storage_key(key: &[u8]) -> ProviderResult<(B256, B256)> {
    if key.len() != 64 {
        return Err(ProviderError::Corrupt {
            table: STORAGE,
            key: alloy_primitives::hex::encode(key),
            reason: format!("a {}-byte key, expected 64", key.len()),
        });
    }
    Ok((B256::from_slice(&key[..32]), B256::from_slice(&key[32..])))
}

/// A flat storage entry: keccak256(address) ‖ keccak256(slot) → the value's 32 bytes.
fn storage_entry(key: &[u8], value: &[u8]) -> ProviderResult<(B256, U256)> {
    let (_, slot) = storage_key(key)?;
    let value = U256::try_from_be_slice(value).ok_or_else(|| ProviderError::Corrupt {
        table: STORAGE,
        key: alloy_primitives::hex::encode(key),
        reason: format!("a {}-byte value", value.len()),
    })?;
    Ok((slot, value))
}
