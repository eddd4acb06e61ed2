//! gigagas storage on RocksDB: the implementation of `gigagas-storage-api`'s readers and
//! writers.
//!
//! One column family per table ([`tables`]: flat accounts, flat storage, bytecodes, headers,
//! bodies, receipts, BALs, trie nodes, meta, lookups by hash), values laid out by [`codecs`].
//! Every block is committed in **one atomic write batch** together with the head pointer
//! ([`writer`]), so a process killed at any moment reopens at the last block whose batch was
//! written, with nothing of a later block visible (RocksDB's write-ahead log replays whole
//! batches only). Blocks must be committed in order: `number == head + 1`. Reads ([`reader`])
//! answer `None` for what is not stored and an error for a read that failed.
//!
//! A read view ([`Storage::read_view`], the storage API's `ReaderFactory`) reads everything
//! through one RocksDB snapshot: the head, the flat state, the blocks, as one commit left them,
//! whatever is committed or unwound while it is in use (reth's read-only database transaction).
//!
//! Trie nodes are also kept in a bounded in-memory cache by hash ([`NODE_CACHE_BYTES`]): the
//! nodes each block commits and those read since, so that the next block's state root finds
//! the upper levels of the trie — rewritten by every block — without a RocksDB lookup (a
//! memtable search of a few microseconds each). A node is content-addressed: the cache can
//! only answer what the store holds or held. The cache is `quick_cache`'s (sharded, CLOCK-Pro
//! eviction, no background housekeeping) keyed through alloy's fixed-bytes hasher: a node's
//! hash is already uniform, so hashing it again (SipHash) is wasted work.

pub mod codecs;
mod hashed;
mod ingest;
mod prune;
mod reader;
pub mod tables;
mod writer;

pub use gigagas_storage_api::{
    AccountRecord, BlockAccessListReader, BlockCommit, BlockHashReader, BlockNumReader,
    BlockReader, BlockWriter, ChainReader, FullProvider, FullReader, HashedBatch,
    HashedStateReader, HashedStateWriter, HeaderProvider, KeepStates, MetadataProvider,
    ProviderError, ProviderResult, PruneStats, RawBlock, ReaderFactory, ReceiptProvider,
    StateProvider, StateWriter, TransactionsProvider, TriePruner, TrieState, UnwoundBlock,
};
pub use tables::*;

use alloy_primitives::{map::FbBuildHasher, Bytes, B256};
use rocksdb::{ColumnFamilyDescriptor, Options, ReadOptions, DB};
use std::{path::Path, sync::Arc};

/// The bytes of the files under a datadir `dir` (its folders walked, links not followed):
/// what the store takes on disk. 0 for what cannot be read.
pub fn datadir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => datadir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Bytes of write-ahead log past which the families holding its oldest file are flushed.
const MAX_TOTAL_WAL_BYTES: u64 = 512 << 20;

/// Bytes of trie nodes the store keeps in memory (their encodings and hashes): 128 MiB.
pub const NODE_CACHE_BYTES: u64 = 128 << 20;

/// The share of [`NODE_CACHE_BYTES`] for nodes read more than once (CLOCK-Pro's hot ring): the
/// rest holds nodes read or written once until they are read again. A block's read-ahead
/// ([`gigagas_trie::prefetch_paths`]) puts every node its state root will walk there first:
/// the ring must hold a whole block's (about 25 MB at 50M entries, 76k nodes) until the walk
/// reaches them. With quick_cache's default (0.97, a 4 MiB ring) most were evicted before the
/// walk, which read them from RocksDB a second time.
pub const NODE_CACHE_HOT_SHARE: f64 = 0.5;

/// A trie node's weight in the cache: its encoding and its hash, in bytes.
#[derive(Debug, Clone, Copy)]
struct NodeWeight;

impl quick_cache::Weighter<B256, Bytes> for NodeWeight {
    fn weight(&self, _: &B256, node: &Bytes) -> u64 {
        32 + node.len() as u64
    }
}

/// Trie nodes by hash, [`NODE_CACHE_BYTES`] at most.
type NodeCache = quick_cache::sync::Cache<B256, Bytes, NodeWeight, FbBuildHasher<32>>;

self_cell::self_cell!(
    /// A RocksDB snapshot together with the database it was taken of.
    struct DbSnapshot {
        owner: Arc<DB>,
        #[covariant]
        dependent: Snapshot,
    }
);

/// [`rocksdb::Snapshot`] under the name `self_cell!` takes.
type Snapshot<'a> = rocksdb::Snapshot<'a>;

/// The RocksDB store; or, made by [`Storage::read_view`] and only handed out as a
/// [`FullReader`], a read view of it whose every read goes through one snapshot.
pub struct Storage {
    db: Arc<DB>,
    path: Arc<Path>,
    /// Trie nodes recently committed or read, by hash (shared by the store and its views:
    /// content-addressed, right for every snapshot).
    nodes: Arc<NodeCache>,
    /// The trie nodes written while a prune runs (shared by the store and its views).
    trie_writes: Arc<prune::TrieWrites>,
    /// Trie nodes read from RocksDB, having missed [`Storage::nodes`] (shared by the store
    /// and its views).
    node_reads: Arc<std::sync::atomic::AtomicU64>,
    /// The snapshot reads go through; `None`: the live database.
    snapshot: Option<Arc<DbSnapshot>>,
    /// Batches of keys are read with one RocksDB multi-get (the default), else key by key
    /// ([`Storage::with_batched_reads`]).
    batched_reads: bool,
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage")
            .field("path", &self.path)
            .field("cached_nodes", &self.nodes.len())
            .field(
                "snapshot",
                &self.snapshot.as_ref().map(|s| s.borrow_dependent().sequence_number()),
            )
            .finish_non_exhaustive()
    }
}

impl Storage {
    /// Opens (or creates) the store in `path`, with all column families.
    ///
    /// # Errors
    /// [`ProviderError::Database`] when RocksDB cannot open it.
    pub fn open(path: &Path) -> Result<Self, ProviderError> {
        rocksdb_env_quietly();
        let mut options = Options::default();
        options.create_if_missing(true);
        options.create_missing_column_families(true);
        // Some memtables are hash tables (`family_options`), which take one writer at a time;
        // the store has one anyway (the commit's write batch).
        options.set_allow_concurrent_memtable_write(false);
        // A large compaction (the merge after a bulk load) split over two threads.
        options.set_max_subcompactions(2);
        // The write-ahead log is kept until every family has flushed what it logged; RocksDB's
        // default bound is four times all memtables (6 GiB over twelve families), which a
        // family written by every block but small (the head) held back for hours. Past 512 MiB
        // the families holding the oldest log are flushed.
        options.set_max_total_wal_size(MAX_TOTAL_WAL_BYTES);
        let families = COLUMN_FAMILIES
            .iter()
            .map(|name| ColumnFamilyDescriptor::new(*name, family_options(name)));
        let db = DB::open_cf_descriptors(&options, path, families)
            .map_err(|e| database_error(path, "open", e))?;
        // With the database's lock held: no other process's ingestion is under way.
        Self::clear_ingest_dir(path)?;
        // About 300 bytes a node (a branch's encoding is up to 532).
        let options = quick_cache::OptionsBuilder::new()
            .estimated_items_capacity((NODE_CACHE_BYTES / 300) as usize)
            .weight_capacity(NODE_CACHE_BYTES)
            .hot_allocation(NODE_CACHE_HOT_SHARE)
            .build()
            .expect("estimated items and weight capacity are set");
        let nodes = NodeCache::with_options(
            options,
            NodeWeight,
            FbBuildHasher::default(),
            Default::default(),
        );
        let store = Self {
            db: Arc::new(db),
            path: path.into(),
            nodes: Arc::new(nodes),
            trie_writes: Arc::default(),
            node_reads: Arc::default(),
            snapshot: None,
            batched_reads: true,
        };
        store.check_flat_keys()?;
        Ok(store)
    }

    /// Marks a new store's flat state as keyed by hash, and refuses one written when it was
    /// keyed by address (its reads would find nothing).
    fn check_flat_keys(&self) -> Result<(), ProviderError> {
        match self.get(META, FLAT_KEYS_KEY)? {
            Some(scheme) if scheme == FLAT_KEYS_HASHED => Ok(()),
            Some(scheme) => Err(ProviderError::Corrupt {
                table: META,
                key: "flat-keys".into(),
                reason: format!("unknown key scheme {}", String::from_utf8_lossy(&scheme)),
            }),
            None if self.get(META, HEAD_KEY)?.is_some() => Err(ProviderError::Corrupt {
                table: META,
                key: "flat-keys".into(),
                reason: "the flat state is keyed by address (a datadir of an older gigagas): \
                         initialise a new datadir"
                    .into(),
            }),
            None => self
                .db
                .put_cf(self.cf(META), FLAT_KEYS_KEY, FLAT_KEYS_HASHED)
                .map_err(self.db_err("write the flat-state key scheme")),
        }
    }

    /// A read view: every read through it sees the store as it stands now (one RocksDB
    /// snapshot), whatever is written meanwhile; of a view, the same view. Cheap (no copy);
    /// while it lives RocksDB keeps what it sees, so views are meant to be short-lived (one
    /// request, one payload).
    pub(crate) fn read_view(&self) -> Self {
        let snapshot = match &self.snapshot {
            Some(snapshot) => snapshot.clone(),
            None => Arc::new(DbSnapshot::new(self.db.clone(), |db| db.snapshot())),
        };
        Self {
            db: self.db.clone(),
            path: self.path.clone(),
            nodes: self.nodes.clone(),
            trie_writes: self.trie_writes.clone(),
            node_reads: self.node_reads.clone(),
            snapshot: Some(snapshot),
            batched_reads: self.batched_reads,
        }
    }

    /// The store with batches of keys (accounts, slots, codes, trie nodes) read with one
    /// RocksDB multi-get (`true`, the default: a table file's blocks read together, through
    /// io_uring where [`io_uring_usable`]) or one lookup a key (`false`: each block by its own
    /// `pread`, as a tracer of `pread` sees every read). The answers are the same; only the
    /// reads the disk sees differ.
    pub fn with_batched_reads(mut self, batched: bool) -> Self {
        self.batched_reads = batched;
        self
    }

    /// Trie nodes read from RocksDB since the store was opened, by it and its views: the reads
    /// of nodes that were not in the in-memory node cache ([`NODE_CACHE_BYTES`]). With the
    /// flat-state reads, what a block costs a cold disk.
    pub fn trie_node_reads(&self) -> u64 {
        self.node_reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Compacts every column family over its whole key range (RocksDB's manual compaction,
    /// geth's `db compact`): what memtable flushes and earlier compactions left in the upper
    /// levels is merged down, so that a read looks in fewer files and the blocks written next
    /// owe no compaction for it. Blocks until done (minutes for a state of tens of GB); reads
    /// and writes may go on meanwhile. RocksDB reports no error of a manual compaction here: a
    /// failing one leaves the files as they were.
    pub fn compact(&self) {
        for name in tables::COLUMN_FAMILIES {
            self.db.compact_range_cf(self.cf(name), None::<&[u8]>, None::<&[u8]>);
        }
    }

    /// Writes a consistent copy of the store to `dir` (which must not exist), as it is now:
    /// RocksDB's checkpoint (memtables flushed, table files hard-linked, so nearly free on the
    /// same file system). The copy opens with [`Storage::open`] as a datadir of its own: a
    /// state to run the same blocks against again and again.
    ///
    /// # Errors
    /// [`ProviderError::Database`] when RocksDB cannot make it.
    pub fn checkpoint(&self, dir: &Path) -> Result<(), ProviderError> {
        rocksdb::checkpoint::Checkpoint::new(&self.db)
            .and_then(|c| c.create_checkpoint(dir))
            .map_err(self.db_err("checkpoint"))
    }

    /// Options for a read: through the view's snapshot, if any.
    fn read_options(&self) -> ReadOptions {
        let mut options = ReadOptions::default();
        if let Some(snapshot) = &self.snapshot {
            options.set_snapshot(snapshot.borrow_dependent());
        }
        options
    }

    fn cf(&self, name: &'static str) -> &rocksdb::ColumnFamily {
        // Every family in COLUMN_FAMILIES is created by `open`.
        self.db.cf_handle(name).expect("column family created by Storage::open")
    }

    fn db_err(&self, what: &'static str) -> impl FnOnce(rocksdb::Error) -> ProviderError + '_ {
        move |source| database_error(&self.path, what, source)
    }

    fn get(&self, table: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>, ProviderError> {
        self.db.get_cf_opt(self.cf(table), key, &self.read_options()).map_err(self.db_err("read"))
    }
}

impl ReaderFactory for Storage {
    fn read_view(&self) -> Arc<dyn FullReader> {
        Arc::new(Storage::read_view(self))
    }
}

/// Whether RocksDB's batched reads go through io_uring here: a build with the `io-uring`
/// feature on a kernel that grants RocksDB's ring (`IORING_SETUP_SINGLE_ISSUER |
/// IORING_SETUP_DEFER_TASKRUN`, Linux 6.1 and later, io_uring not disabled by sysctl or a
/// seccomp filter). Tried once, with RocksDB's flags and depth; a refusal is logged once as a
/// warning. Without it RocksDB's multi-get reads a file's blocks with one `pread` each.
pub fn io_uring_usable() -> bool {
    #[cfg(feature = "io-uring")]
    {
        static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *USABLE.get_or_init(|| {
            // RocksDB's `kIoUringDepth` (env/io_posix.h) and `CreateIOUring`'s flags.
            let ring =
                io_uring::IoUring::<io_uring::squeue::Entry, io_uring::cqueue::Entry>::builder()
                    .setup_single_issuer()
                    .setup_defer_taskrun()
                    .build(256);
            match ring {
                Ok(_) => true,
                Err(error) => {
                    tracing::warn!(
                        target: "storage",
                        %error,
                        "io_uring unavailable: RocksDB reads a batch's blocks one pread each"
                    );
                    false
                }
            }
        })
    }
    #[cfg(not(feature = "io-uring"))]
    {
        false
    }
}

/// Creates RocksDB's default environment, once, before any store is opened, so that its io_uring
/// probe cannot write to stdout. Built with io_uring, RocksDB tries a ring when its default file
/// system is made (the first `Options`) and, where the kernel refuses it, prints
/// `CreateIOUring failed: …` to C's stdout (RocksDB 11.8 `env/io_posix.h`) — a line that would
/// land in the `--json` output of the commands. Where [`io_uring_usable`] says the ring will be
/// refused, the environment is made with file descriptor 1 pointed at `/dev/null` and C's
/// buffers flushed before it is pointed back (a moment in which another thread's write to stdout
/// would be lost too: it runs before the first store opens). RocksDB then falls back to `pread`
/// by itself.
fn rocksdb_env_quietly() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        if !cfg!(feature = "io-uring") || io_uring_usable() {
            return;
        }
        // SAFETY: plain POSIX calls on descriptors this function owns (`saved`, `null`) and on
        // descriptor 1, which it points back at what it was; `fflush(NULL)` flushes every C
        // output stream.
        unsafe {
            let saved = libc::dup(1);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if saved >= 0 && null >= 0 {
                libc::fflush(std::ptr::null_mut());
                libc::dup2(null, 1);
                drop(Options::default());
                libc::fflush(std::ptr::null_mut());
                libc::dup2(saved, 1);
            }
            for fd in [saved, null] {
                if fd >= 0 {
                    libc::close(fd);
                }
            }
        }
    });
}

/// The column families read by key on the block's path: flat accounts, flat storage, code and
/// trie nodes.
const POINT_LOOKUP_FAMILIES: [&str; 4] = [ACCOUNTS, STORAGE, BYTECODES, TRIE_NODES];

/// The column families a bulk load ingests (the hashed state and trie nodes): their level 0
/// may hold many table files for a while (`family_options`).
pub(crate) const BULK_FAMILIES: [&str; 4] = [ACCOUNTS, STORAGE, BYTECODES, TRIE_NODES];

/// The storage family's prefix extractor: a slot key's account hash.
const STORAGE_PREFIX_BYTES: usize = 32;

/// The column families whose memtable is a hash table: trie nodes, flat accounts and the
/// transaction index, all keyed by a hash or an address and never iterated.
const HASH_MEMTABLE_FAMILIES: [&str; 3] = [TRIE_NODES, ACCOUNTS, TX_LOOKUP];

/// A column family's options: RocksDB's defaults, and for [`POINT_LOOKUP_FAMILIES`] the filters
/// that let a key lookup skip what cannot hold the key — a bloom filter of 10 bits a key in
/// every table file (about 1 % false positives) and a whole-key bloom filter over the memtable
/// (2 % of its size). Without them a lookup searched the memtable's skip list and every level-0
/// file before the one holding the key: a state root's trie-node reads (the nodes its cache
/// misses) and the BAL prefetch's reads of accounts and slots are such lookups. For
/// [`HASH_MEMTABLE_FAMILIES`] a hash-table memtable; the storage family, iterated over a wiped
/// account's slots, keeps its skip list, with its account prefix in the filters.
fn family_options(name: &str) -> Options {
    let mut options = Options::default();
    if POINT_LOOKUP_FAMILIES.contains(&name) {
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_bloom_filter(10.0, false);
        table.set_whole_key_filtering(true);
        options.set_block_based_table_factory(&table);
        options.set_memtable_prefix_bloom_ratio(0.02);
        options.set_memtable_whole_key_filtering(true);
    }
    if BULK_FAMILIES.contains(&name) {
        // A bulk load leaves one level-0 file per checkpoint until it ends (tens of them, 41
        // for a snap sync of 2 M accounts and 10 M slots), merged after it while blocks
        // commit: RocksDB's defaults would slow writes from 20 such files and stop them at 36
        // until the merge is done. Outside a bulk load level 0 stays near the compaction
        // trigger (4 files).
        options.set_level_zero_slowdown_writes_trigger(256);
        options.set_level_zero_stop_writes_trigger(512);
    }
    if name == STORAGE {
        // A slot's key starts with its account's hash: the table files' filters hold each
        // account's 32-byte prefix beside the whole keys, so that a seek for an account's
        // first slot (`Storage::has_storage`, EIP-7610's question of every BAL account
        // without code and nonce) is answered from the filters, without a read, for the
        // accounts that hold none (nearly all). Iterators that cross accounts ask for total
        // order.
        options.set_prefix_extractor(rocksdb::SliceTransform::create_fixed_prefix(
            STORAGE_PREFIX_BYTES,
        ));
    }
    if HASH_MEMTABLE_FAMILIES.contains(&name) {
        // Keys are hashes or addresses, read and written one by one, never iterated: the
        // memtable is a hash table on the key's first 8 bytes (a bucket holds one or two keys)
        // instead of a skip list, whose insert of a random key — about 10,000 trie nodes, 1,500
        // accounts and 1,100 transaction hashes a block — was most of the commit's time.
        options.set_prefix_extractor(rocksdb::SliceTransform::create_fixed_prefix(8));
        options
            .set_memtable_factory(rocksdb::MemtableFactory::HashLinkList { bucket_count: 1 << 18 });
    }
    options
}

fn database_error(path: &Path, what: &'static str, source: rocksdb::Error) -> ProviderError {
    ProviderError::Database { location: path.display().to_string(), what, source: Box::new(source) }
}
