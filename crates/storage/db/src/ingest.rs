//! Bulk loads of hashed state by external-file ingestion: a batch's accounts, slots, codes and
//! trie nodes sorted in memory, written as one table file per column family
//! (`SstFileWriter`, with the family's own table options: bloom filters, compression) into
//! `DATADIR/ingest/`, and handed to RocksDB whole (`IngestExternalFile`, the file moved in).
//!
//! A write batch pays for each entry three times before it rests in a table file: the
//! write-ahead log, the memtable, and the flush that sorts the memtable into a level-0 file.
//! Snap sync writes some 30 M entries (2 M accounts, 10 M slots, 15 M trie nodes for a state of
//! that size) and was bound by exactly that (docs/benchmarks.md): here each entry is copied into
//! a sorted vector and written once. The metadata written after the files makes the entries
//! reachable to the writer's own bookkeeping; see `HashedStateWriter::ingest_hashed` for what
//! that order promises.

use crate::{
    codecs::{encode_account, hashed_storage_key},
    family_options,
    tables::*,
    Storage, BULK_FAMILIES,
};
use gigagas_storage_api::{HashedBatch, HashedStateWriter, ProviderError, ProviderResult};
use rocksdb::{IngestExternalFileOptions, SstFileWriter};
use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

/// The folder under the datadir where table files are written before they are ingested.
pub(crate) const INGEST_DIR: &str = "ingest";

/// Level-0 files of one table a bulk load lets pile up before it merges them.
const BULK_LEVEL0_FILES: u64 = 128;

/// Numbers the files written, so that two ingestions never share a name.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

impl Storage {
    /// Removes table files a killed ingestion left behind (written, never taken in).
    pub(crate) fn clear_ingest_dir(path: &Path) -> Result<(), ProviderError> {
        let dir = path.join(INGEST_DIR);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error(&dir, "clear the ingestion folder", e)),
        }
    }

    /// Sorts `entries` by key, keeps the last of equal keys, writes them as one table file of
    /// `table` and ingests it. Nothing when `entries` is empty.
    fn ingest_sorted<K: AsRef<[u8]> + Ord, V: AsRef<[u8]>>(
        &self,
        table: &'static str,
        mut entries: Vec<(K, V)>,
    ) -> ProviderResult<()> {
        // A stable sort keeps equal keys in the order written: the last one wins, as in a
        // write batch (moved into the place of the one kept).
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|later, kept| {
            let equal = later.0 == kept.0;
            if equal {
                std::mem::swap(later, kept);
            }
            equal
        });
        let Some(_) = entries.first() else { return Ok(()) };
        let dir = self.path.join(INGEST_DIR);
        std::fs::create_dir_all(&dir)
            .map_err(|e| io_error(&dir, "create the ingestion folder", e))?;
        let file: PathBuf =
            dir.join(format!("{table}-{}.sst", NEXT_FILE.fetch_add(1, Ordering::Relaxed)));
        let options = family_options(table);
        let mut writer = SstFileWriter::create(&options);
        writer.open(&file).map_err(self.db_err("open a table file to ingest"))?;
        for (key, value) in &entries {
            writer.put(key, value).map_err(self.db_err("write a table file to ingest"))?;
        }
        writer.finish().map_err(self.db_err("finish a table file to ingest"))?;
        drop(entries);
        self.bound_level0(table)?;
        let mut ingest = IngestExternalFileOptions::default();
        ingest.set_move_files(true);
        let taken = self
            .db
            .ingest_external_file_cf_opts(self.cf(table), &ingest, vec![&file])
            .map_err(self.db_err("ingest a table file"));
        // Moved in (hard-linked, then unlinked here) or refused: the file is not needed.
        let _ = std::fs::remove_file(&file);
        taken
    }

    /// [`HashedStateWriter::set_bulk_load`] for RocksDB: automatic compactions of the
    /// [`BULK_FAMILIES`] off while a load runs, on again after it (the files piled up in level
    /// 0 are then merged into the last level, largely in one compaction).
    pub(crate) fn bulk_load(&self, on: bool) -> ProviderResult<()> {
        let value = if on { "true" } else { "false" };
        for table in BULK_FAMILIES {
            self.db
                .set_options_cf(self.cf(table), &[("disable_auto_compactions", value)])
                .map_err(self.db_err("set a bulk load's compactions"))?;
        }
        Ok(())
    }

    /// Waits until RocksDB has no flush or compaction pending or running (after a bulk load:
    /// until its table files are merged).
    ///
    /// # Errors
    /// [`ProviderError::Database`] when RocksDB reports a failure.
    pub fn wait_for_compactions(&self) -> ProviderResult<()> {
        self.db
            .wait_for_compact(&rocksdb::WaitForCompactOptions::default())
            .map_err(self.db_err("wait for compactions"))
    }

    /// Merges `table`'s level 0 into its last level when it holds [`BULK_LEVEL0_FILES`] files
    /// (a bulk load long enough to reach that many; RocksDB stops writes at 512).
    fn bound_level0(&self, table: &'static str) -> ProviderResult<()> {
        let files = self
            .db
            .property_int_value_cf(self.cf(table), "rocksdb.num-files-at-level0")
            .map_err(self.db_err("read level 0's size"))?
            .unwrap_or(0);
        if files >= BULK_LEVEL0_FILES {
            self.db.compact_range_cf(self.cf(table), None::<&[u8]>, None::<&[u8]>);
        }
        Ok(())
    }

    /// [`HashedStateWriter::ingest_hashed`] for RocksDB.
    pub(crate) fn ingest(&self, batch: &HashedBatch<'_>) -> ProviderResult<()> {
        self.ingest_sorted(
            ACCOUNTS,
            batch.accounts.iter().map(|(hash, record)| (*hash, encode_account(record))).collect(),
        )?;
        self.ingest_sorted(
            STORAGE,
            batch
                .storage
                .iter()
                .filter(|(_, _, value)| !value.is_zero())
                .map(|(account, slot, value)| {
                    (hashed_storage_key(account, slot), value.to_be_bytes::<32>())
                })
                .collect(),
        )?;
        self.ingest_sorted(BYTECODES, batch.codes.to_vec())?;
        let written = self.trie_writes(batch.trie_nodes.iter().map(|(hash, _)| hash));
        self.ingest_sorted(
            TRIE_NODES,
            batch.trie_nodes.iter().map(|(hash, node)| (*hash, node.as_ref())).collect(),
        )?;
        drop(written);
        // What the files hold is durable (ingestion syncs them and the manifest): the rest is
        // written after it, logged.
        self.write_hashed(&HashedBatch {
            accounts: &[],
            storage: &[],
            codes: &[],
            trie_nodes: &[],
            ..batch.clone()
        })
    }
}

fn io_error(path: &Path, what: &'static str, source: std::io::Error) -> ProviderError {
    ProviderError::Database { location: path.display().to_string(), what, source: Box::new(source) }
}
