//! Writes: a block's commit and an unwind, each one atomic write batch with the head pointer;
//! flat state outside blocks; metadata.

use crate::{
    codecs::{
        account_key, encode_account, encode_head, encode_tx_location, hashed_storage_key,
        storage_key, storage_range_end,
    },
    tables::*,
    Storage,
};
use alloy_primitives::{Address, B256, U256};
use gigagas_storage_api::{
    AccountRecord, BlockCommit, BlockNumReader, BlockWriter, MetadataProvider, ProviderError,
    ProviderResult, StateWriter, UnwoundBlock,
};
use rocksdb::WriteBatch;

impl Storage {
    fn put_flat_state(
        &self,
        batch: &mut WriteBatch,
        accounts: &[(Address, Option<AccountRecord>)],
        storage: &[(Address, U256, U256)],
    ) {
        for (address, account) in accounts {
            match account {
                Some(a) => batch.put_cf(self.cf(ACCOUNTS), account_key(address), encode_account(a)),
                None => batch.delete_cf(self.cf(ACCOUNTS), account_key(address)),
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
}

impl BlockWriter for Storage {
    fn commit_block(&self, commit: &BlockCommit<'_>) -> ProviderResult<()> {
        let head = self.best_block()?.map(|(n, _)| n);
        let expected = head.map_or(0, |n| n + 1);
        if commit.number != expected {
            return Err(ProviderError::NonContiguous { head, number: commit.number });
        }
        let key = commit.number.to_be_bytes();
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(HEADERS), key, commit.header);
        batch.put_cf(self.cf(BODIES), key, commit.body);
        batch.put_cf(self.cf(RECEIPTS), key, commit.receipts);
        batch.put_cf(self.cf(BLOCK_NUMBERS), commit.hash, key);
        for (i, tx) in commit.tx_hashes.iter().enumerate() {
            batch.put_cf(self.cf(TX_LOOKUP), tx, encode_tx_location(commit.number, i as u32));
        }
        if let Some(bal) = commit.bal {
            batch.put_cf(self.cf(BALS), key, bal);
        }
        if !commit.senders.is_empty() {
            let senders: Vec<u8> = commit.senders.iter().flat_map(|a| a.0 .0).collect();
            batch.put_cf(self.cf(SENDERS), key, senders);
        }
        for address in commit.wiped {
            let account = account_key(address);
            let from = hashed_storage_key(&account, &B256::ZERO);
            batch.delete_range_cf(self.cf(STORAGE), &from[..], &storage_range_end(&account)[..]);
        }
        self.put_flat_state(&mut batch, commit.accounts, commit.storage);
        for (hash, code) in commit.codes {
            batch.put_cf(self.cf(BYTECODES), hash, code);
        }
        for (hash, node) in commit.trie_nodes {
            batch.put_cf(self.cf(TRIE_NODES), hash, node);
        }
        batch.put_cf(self.cf(META), HEAD_KEY, encode_head(commit.number, &commit.hash));
        let written = self.trie_writes(commit.trie_nodes.iter().map(|(hash, _)| hash));
        self.db.write(batch).map_err(self.db_err("commit block"))?;
        drop(written);
        // The next block's root reads the upper levels just written.
        for (hash, node) in commit.trie_nodes {
            self.nodes.insert(*hash, node.clone());
        }
        Ok(())
    }

    fn unwind(
        &self,
        to: (u64, B256),
        unwound: &[UnwoundBlock],
        accounts: &[(Address, Option<AccountRecord>)],
        storage: &[(Address, U256, U256)],
    ) -> ProviderResult<()> {
        let head = self.best_block()?.map(|(n, _)| n);
        let complete = head.is_some_and(|h| {
            h >= to.0
                && unwound.len() as u64 == h - to.0
                && unwound.iter().zip((to.0 + 1..=h).rev()).all(|(b, n)| b.number == n)
        });
        if !complete {
            return Err(ProviderError::NonContiguous { head, number: to.0 });
        }
        let mut batch = WriteBatch::default();
        for block in unwound {
            let key = block.number.to_be_bytes();
            for table in [HEADERS, BODIES, RECEIPTS, BALS, SENDERS] {
                batch.delete_cf(self.cf(table), key);
            }
            batch.delete_cf(self.cf(BLOCK_NUMBERS), block.hash);
            for tx in &block.tx_hashes {
                batch.delete_cf(self.cf(TX_LOOKUP), tx);
            }
        }
        self.put_flat_state(&mut batch, accounts, storage);
        batch.put_cf(self.cf(META), HEAD_KEY, encode_head(to.0, &to.1));
        self.db.write(batch).map_err(self.db_err("unwind"))
    }

    /// Drops the memtables to disk, so that the next reads come from the files (for
    /// cold-cache measurements the OS page cache is dropped separately).
    fn flush(&self) -> ProviderResult<()> {
        for name in COLUMN_FAMILIES {
            self.db.flush_cf(self.cf(name)).map_err(self.db_err("flush"))?;
        }
        Ok(())
    }
}

impl StateWriter for Storage {
    fn write_state(
        &self,
        accounts: &[(Address, AccountRecord)],
        storage: &[(Address, U256, U256)],
        codes: &[(B256, &[u8])],
    ) -> ProviderResult<()> {
        let mut batch = WriteBatch::default();
        for (address, record) in accounts {
            batch.put_cf(self.cf(ACCOUNTS), account_key(address), encode_account(record));
        }
        for (address, slot, value) in storage.iter().filter(|(_, _, v)| !v.is_zero()) {
            batch.put_cf(self.cf(STORAGE), storage_key(address, slot), value.to_be_bytes::<32>());
        }
        for (hash, code) in codes {
            batch.put_cf(self.cf(BYTECODES), hash, code);
        }
        self.db.write(batch).map_err(self.db_err("write state"))
    }
}

impl MetadataProvider for Storage {
    fn meta(&self, key: &[u8]) -> ProviderResult<Option<Vec<u8>>> {
        self.get(META, key)
    }

    fn put_meta(&self, key: &[u8], value: &[u8]) -> ProviderResult<()> {
        self.db.put_cf(self.cf(META), key, value).map_err(self.db_err("write meta"))
    }
}
