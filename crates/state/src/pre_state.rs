//! Pre-block state: held in memory, or read through from a [`StateSource`] (a database) with a
//! shared concurrent cache.

use alloy_primitives::{map::HashMap, Address, B256, U256};
use dashmap::DashMap;
use revm::{
    database_interface::DBErrorMarker,
    state::{AccountInfo, Bytecode},
    DatabaseRef,
};
use std::{
    collections::BTreeMap,
    fmt,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, OnceLock,
    },
};

/// The error a [`StateSource`] reports when a read fails: the database's own error (RocksDB,
/// a missing or malformed trie node), shared so that [`StateError`] stays cheap to clone.
pub type SourceError = Arc<dyn std::error::Error + Send + Sync>;

/// A read from [`PreState`] that the state cannot answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StateError {
    /// `BLOCKHASH` asked for an ancestor whose hash the state does not hold.
    #[error("block hash of block {0} is not in the pre-state")]
    MissingBlockHash(u64),
    /// An account names a code hash whose bytecode the state does not hold.
    #[error("bytecode {0} is not in the pre-state")]
    MissingCode(B256),
    /// The backing [`StateSource`] failed (e.g. a database read): an internal fault, never a
    /// verdict on a block.
    #[error("state source: {0}")]
    Source(#[source] SourceError),
}

impl StateError {
    /// A [`StateError::Source`] carrying `error`.
    pub fn from_source(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Source(Arc::new(error))
    }
}

/// Equal when the same variant holds the same value; two source failures are equal when
/// their messages are (the database errors themselves are not comparable).
impl PartialEq for StateError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::MissingBlockHash(a), Self::MissingBlockHash(b)) => a == b,
            (Self::MissingCode(a), Self::MissingCode(b)) => a == b,
            (Self::Source(a), Self::Source(b)) => a.to_string() == b.to_string(),
            _ => false,
        }
    }
}

impl Eq for StateError {}

/// Where a backed [`PreState`] reads what it does not hold: the flat state of a database as of
/// the parent block. Implementations must be safe to call from every worker thread at once.
pub trait StateSource: Send + Sync + fmt::Debug {
    /// Balance, nonce and code hash of `address` (code not loaded), `None` if it does not
    /// exist.
    ///
    /// # Errors
    /// [`StateError::Source`] when the read fails.
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError>;
    /// Value of `slot` of `address` (zero when absent).
    ///
    /// # Errors
    /// [`StateError::Source`] when the read fails.
    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError>;
    /// Code by hash, `None` when unknown.
    ///
    /// # Errors
    /// [`StateError::Source`] when the read fails.
    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError>;
    /// Hash of the canonical block `number`, `None` when unknown.
    ///
    /// # Errors
    /// [`StateError::Source`] when the read fails.
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError>;
    /// Whether `address` holds any non-zero storage slot (EIP-7610: a creation whose target
    /// has storage collides).
    ///
    /// # Errors
    /// [`StateError::Source`] when the read fails.
    fn has_storage(&self, address: &Address) -> Result<bool, StateError>;
    /// Many accounts at once (a database's multi-get); by default one by one.
    ///
    /// # Errors
    /// As [`StateSource::account`].
    fn accounts(&self, addresses: &[Address]) -> Result<Vec<Option<AccountInfo>>, StateError> {
        addresses.iter().map(|a| self.account(a)).collect()
    }
    /// Many codes at once (a database's multi-get); by default one by one.
    ///
    /// # Errors
    /// As [`StateSource::code`].
    fn codes(&self, hashes: &[B256]) -> Result<Vec<Option<Bytecode>>, StateError> {
        hashes.iter().map(|h| self.code(h)).collect()
    }
    /// Many slots at once (a database's multi-get); by default one by one.
    ///
    /// # Errors
    /// As [`StateSource::storage`].
    fn slots(&self, keys: &[(Address, U256)]) -> Result<Vec<U256>, StateError> {
        keys.iter().map(|(a, s)| self.storage(a, s)).collect()
    }
}

/// Read-through cache over a [`StateSource`], shared by every thread executing the block.
#[derive(Debug)]
struct Backing {
    source: Arc<dyn StateSource>,
    accounts: DashMap<Address, Option<AccountInfo>, alloy_primitives::map::DefaultHashBuilder>,
    storage: DashMap<(Address, U256), U256, alloy_primitives::map::DefaultHashBuilder>,
    codes: DashMap<B256, Bytecode, alloy_primitives::map::DefaultHashBuilder>,
    /// Answers of [`StateSource::has_storage`].
    has_storage: DashMap<Address, bool, alloy_primitives::map::DefaultHashBuilder>,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Time spent in `source`'s calls, summed over the threads that made them (nanoseconds).
    read_nanos: AtomicU64,
    /// The part of `read_nanos` spent in [`PreState::prefetch`]'s reads (nanoseconds).
    ahead_nanos: AtomicU64,
    /// The first failure of `source`: set once, by whichever thread saw it.
    fault: OnceLock<StateError>,
}

impl Backing {
    /// `read` of `source`, timed into `read_nanos`; its error kept as the state's fault if it
    /// is the first.
    fn read<T>(
        &self,
        read: impl FnOnce(&dyn StateSource) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        self.timed(read, None)
    }

    /// [`Backing::read`] made ahead of execution: its time also counted in `ahead_nanos`.
    fn read_ahead<T>(
        &self,
        read: impl FnOnce(&dyn StateSource) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        self.timed(read, Some(&self.ahead_nanos))
    }

    fn timed<T>(
        &self,
        read: impl FnOnce(&dyn StateSource) -> Result<T, StateError>,
        also: Option<&AtomicU64>,
    ) -> Result<T, StateError> {
        let start = std::time::Instant::now();
        let result = read(&*self.source);
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.read_nanos.fetch_add(nanos, Ordering::Relaxed);
        if let Some(also) = also {
            also.fetch_add(nanos, Ordering::Relaxed);
        }
        if let Err(e) = &result {
            let _ = self.fault.set(e.clone());
        }
        result
    }
}

/// Reads answered by a backed [`PreState`]'s cache (`hits`) and by its source (`misses`), and
/// the time the source's reads took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Account, slot and code reads answered from memory.
    pub hits: u64,
    /// Reads that went to the source.
    pub misses: u64,
    /// Time spent in the source's calls, summed over the threads that made them
    /// (nanoseconds): divided by the block's time and threads, the share of execution spent
    /// waiting on reads (the disk's, when the state is cold).
    pub read_nanos: u64,
    /// The part of `read_nanos` spent reading ahead ([`PreState::prefetch`]), summed over the
    /// threads that made them (nanoseconds): the rest are the reads execution itself made.
    pub ahead_read_nanos: u64,
}

impl DBErrorMarker for StateError {}

/// One account of the pre-state: balance, nonce, code and the storage slots the block touches.
#[derive(Debug, Clone, Default)]
struct PreAccount {
    info: AccountInfo,
    storage: HashMap<U256, U256>,
    /// Whether the account's storage holds any non-zero slot, those of `storage` or not
    /// ([`PreState::set_has_storage`]).
    has_storage: bool,
}

/// `addresses` and `slots` sorted as a store keyed by their hashes keeps them: by
/// `keccak256(address)`, slots by `(keccak256(address), keccak256(slot))`.
fn in_hashed_order(
    addresses: &[Address],
    slots: &[(Address, U256)],
) -> (Vec<Address>, Vec<(Address, U256)>) {
    use alloy_primitives::keccak256;
    let mut accounts: Vec<(B256, Address)> = addresses.iter().map(|a| (keccak256(a), *a)).collect();
    accounts.sort_unstable();
    // Each address hashed once, however many of its slots are read.
    let mut hashed: HashMap<Address, B256> = HashMap::default();
    let mut keys: Vec<(B256, B256, Address, U256)> = slots
        .iter()
        .map(|&(a, s)| {
            let account = *hashed.entry(a).or_insert_with(|| keccak256(a));
            (account, keccak256(B256::from(s)), a, s)
        })
        .collect();
    keys.sort_unstable();
    (
        accounts.into_iter().map(|(_, a)| a).collect(),
        keys.into_iter().map(|(_, _, a, s)| (a, s)).collect(),
    )
}

/// The fewest keys [`PreState::prefetch_on`] gives one thread: below, a multi-get's fixed cost
/// outweighs the parallelism.
pub const PREFETCH_CHUNK: usize = 512;

/// The state a block executes against.
///
/// In memory ([`PreState::new`]): holds only what a block reads or writes (an account absent
/// here does not exist; a slot absent from an account's storage is zero). Backed
/// ([`PreState::backed`]): what it does not hold is read from a [`StateSource`] through a
/// concurrent cache that keeps every value read, so each key reaches the source once per
/// block. Either way one `PreState` is shared by all worker threads through `&PreState`
/// (revm's [`DatabaseRef`]).
#[derive(Debug, Clone, Default)]
pub struct PreState {
    accounts: HashMap<Address, PreAccount>,
    contracts: Arc<HashMap<B256, Bytecode>>,
    block_hashes: Arc<BTreeMap<u64, B256>>,
    backing: Option<Arc<Backing>>,
}

impl PreState {
    /// An empty state that resolves code through `contracts` (code hash → bytecode) and
    /// `BLOCKHASH` through `block_hashes` (number → hash). Both maps are shared, not copied.
    pub fn new(
        contracts: Arc<HashMap<B256, Bytecode>>,
        block_hashes: Arc<BTreeMap<u64, B256>>,
    ) -> Self {
        Self { accounts: HashMap::default(), contracts, block_hashes, backing: None }
    }

    /// A state that reads everything from `source` (through a concurrent cache, empty at
    /// first).
    pub fn backed(source: Arc<dyn StateSource>) -> Self {
        let backing = Backing {
            source,
            accounts: DashMap::default(),
            storage: DashMap::default(),
            codes: DashMap::default(),
            has_storage: DashMap::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            read_nanos: AtomicU64::new(0),
            ahead_nanos: AtomicU64::new(0),
            fault: OnceLock::new(),
        };
        Self { backing: Some(Arc::new(backing)), ..Self::default() }
    }

    /// The same state with `BLOCKHASH` answered from `block_hashes` first (number → hash).
    pub fn with_block_hashes(mut self, block_hashes: Arc<BTreeMap<u64, B256>>) -> Self {
        self.block_hashes = block_hashes;
        self
    }

    /// The accounts held in memory with their slots (for copying an in-memory state into a
    /// database).
    pub fn held_accounts(
        &self,
    ) -> impl Iterator<Item = (&Address, &AccountInfo, &HashMap<U256, U256>)> {
        self.accounts.iter().map(|(a, p)| (a, &p.info, &p.storage))
    }

    /// Whether reads go through to a [`StateSource`].
    pub fn is_backed(&self) -> bool {
        self.backing.is_some()
    }

    /// The first read of a backed state's [`StateSource`] that failed, if any (`None` for an
    /// in-memory state).
    ///
    /// An executor turns a database error into its own error types, and alloy-evm turns some
    /// into strings (system calls) or drops them (balance increments); whatever verdict an
    /// execution reached after its source failed is not about the block. Callers check this
    /// before they judge a block invalid: the fault is internal (disk, database), never a
    /// consensus error.
    pub fn source_fault(&self) -> Option<&StateError> {
        self.backing.as_ref().and_then(|b| b.fault.get())
    }

    /// Cache hits and misses of a backed state (zero for an in-memory one).
    pub fn cache_stats(&self) -> CacheStats {
        self.backing.as_ref().map_or_else(CacheStats::default, |b| CacheStats {
            hits: b.hits.load(Ordering::Relaxed),
            misses: b.misses.load(Ordering::Relaxed),
            read_nanos: b.read_nanos.load(Ordering::Relaxed),
            ahead_read_nanos: b.ahead_nanos.load(Ordering::Relaxed),
        })
    }

    /// Fetches `addresses`, their code and `slots` from the source in three batched reads and
    /// keeps them in the cache (the BAL-hinted "batch" I/O: every key the block's BAL names,
    /// before execution starts). Keys already cached are skipped. No-op for an in-memory state.
    ///
    /// # Errors
    /// [`StateError::Source`] when a read fails.
    pub fn prefetch(
        &self,
        addresses: &[Address],
        slots: &[(Address, U256)],
    ) -> Result<(), StateError> {
        let Some(b) = &self.backing else { return Ok(()) };
        let addresses: Vec<Address> =
            addresses.iter().filter(|a| !b.accounts.contains_key(*a)).copied().collect();
        let mut code_hashes = Vec::new();
        for (address, info) in addresses.iter().zip(b.read_ahead(|s| s.accounts(&addresses))?) {
            if let Some(i) = &info {
                if i.code_hash != revm::primitives::KECCAK_EMPTY
                    && !self.contracts.contains_key(&i.code_hash)
                    && !b.codes.contains_key(&i.code_hash)
                {
                    code_hashes.push(i.code_hash);
                }
            }
            b.accounts.insert(*address, info);
        }
        code_hashes.sort_unstable();
        code_hashes.dedup();
        for (hash, code) in code_hashes.iter().zip(b.read_ahead(|s| s.codes(&code_hashes))?) {
            if let Some(code) = code {
                b.codes.insert(*hash, code);
            }
        }
        let slots: Vec<(Address, U256)> =
            slots.iter().filter(|k| !b.storage.contains_key(*k)).copied().collect();
        for (key, value) in slots.iter().zip(b.read_ahead(|s| s.slots(&slots))?) {
            b.storage.insert(*key, value);
        }
        b.misses.fetch_add(
            (addresses.len() + code_hashes.len() + slots.len()) as u64,
            Ordering::Relaxed,
        );
        Ok(())
    }

    /// [`PreState::prefetch`] split over `pool`'s threads: accounts (with their code) and slots
    /// in chunks of at least `min_chunk` keys ([`PREFETCH_CHUNK`] on the executor's own
    /// threads), one batched multi-get per chunk, the chunks read concurrently — as many reads
    /// in flight as the pool has threads (the queue depth a disk sees), more cores decoding for
    /// a page cache. With one thread, or few keys, it is one [`PreState::prefetch`].
    ///
    /// The keys are split in the order a hashed store keeps them (accounts by the keccak256 of
    /// the address, slots by the address's and then the slot's, as reth's hashed state and
    /// geth's snapshot): each chunk is then one run of the key space, whose keys a batched
    /// multi-get finds many at a time in one table file (one read submission for tens of
    /// blocks) instead of a few in each of many.
    ///
    /// # Errors
    /// [`StateError::Source`] when a read fails.
    pub fn prefetch_on(
        &self,
        pool: &rayon::ThreadPool,
        addresses: &[Address],
        slots: &[(Address, U256)],
        min_chunk: usize,
    ) -> Result<(), StateError> {
        use rayon::prelude::*;
        if self.backing.is_none() {
            return Ok(());
        }
        let threads = pool.current_num_threads();
        let min_chunk = min_chunk.max(1);
        if threads < 2 || addresses.len() + slots.len() <= min_chunk {
            return self.prefetch(addresses, slots);
        }
        let chunk = |n: usize| n.div_ceil(threads).max(min_chunk);
        let (addresses, slots) = in_hashed_order(addresses, slots);
        pool.install(|| {
            let (accounts, storage) = rayon::join(
                || {
                    addresses
                        .par_chunks(chunk(addresses.len()))
                        .try_for_each(|c| self.prefetch(c, &[]))
                },
                || slots.par_chunks(chunk(slots.len())).try_for_each(|c| self.prefetch(&[], c)),
            );
            accounts.and(storage)
        })
    }

    /// Seeds the cache of a backed state with known pre-block values (the "full" BAL design:
    /// the values travel with the block, nothing is read): accounts, slots, codes, and whether
    /// accounts hold storage ([`PreState::has_storage`]). No-op for an in-memory state.
    pub fn seed(
        &self,
        accounts: &[(Address, Option<AccountInfo>)],
        slots: &[((Address, U256), U256)],
        codes: &[(B256, Bytecode)],
        has_storage: &[(Address, bool)],
    ) {
        let Some(b) = &self.backing else { return };
        for (address, has) in has_storage {
            b.has_storage.insert(*address, *has);
        }
        for (hash, code) in codes {
            b.codes.insert(*hash, code.clone());
        }
        for (address, info) in accounts {
            b.accounts.insert(*address, info.clone());
        }
        for (key, value) in slots {
            b.storage.insert(*key, *value);
        }
    }

    /// Inserts an account. `code_hash` must be in the shared contracts map unless it is the
    /// empty-code hash.
    ///
    /// # Errors
    /// [`StateError::MissingCode`] when the code hash is unknown.
    pub fn insert_account(
        &mut self,
        address: Address,
        balance: U256,
        nonce: u64,
        code_hash: B256,
        storage: HashMap<U256, U256>,
    ) -> Result<(), StateError> {
        let info = if code_hash == revm::primitives::KECCAK_EMPTY || code_hash == B256::ZERO {
            AccountInfo { balance, nonce, ..Default::default() }
        } else {
            let code = self
                .contracts
                .get(&code_hash)
                .cloned()
                .ok_or(StateError::MissingCode(code_hash))?;
            AccountInfo::new(balance, nonce, code_hash, code)
        };
        let has_storage = storage.values().any(|v| !v.is_zero());
        self.accounts.insert(address, PreAccount { info, storage, has_storage });
        Ok(())
    }

    /// Records whether the held account `address` has storage beyond the slots it holds: for
    /// states built from proofs, which hold only the slots a block touches but know the
    /// storage root (non-empty root: `true`). No-op for an account not held.
    pub fn set_has_storage(&mut self, address: &Address, has_storage: bool) {
        if let Some(a) = self.accounts.get_mut(address) {
            a.has_storage = has_storage;
        }
    }

    /// Whether `address` holds any non-zero storage slot before the block (EIP-7610's
    /// collision test for a creation's target). A held account answers from what it holds
    /// ([`PreState::insert_account`], [`PreState::set_has_storage`]); a backed state asks its
    /// source once per account; an account an in-memory state does not hold has none.
    ///
    /// # Errors
    /// [`StateError::Source`] when a backed state's source fails.
    pub fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        if let Some(a) = self.accounts.get(address) {
            return Ok(a.has_storage);
        }
        let Some(b) = &self.backing else { return Ok(false) };
        if let Some(has) = b.has_storage.get(address) {
            b.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(*has);
        }
        b.misses.fetch_add(1, Ordering::Relaxed);
        let has = b.read(|s| s.has_storage(address))?;
        b.has_storage.insert(*address, has);
        Ok(has)
    }

    /// Number of accounts held in memory (for a backed state: read so far).
    pub fn account_count(&self) -> usize {
        self.accounts.len() + self.backing.as_ref().map_or(0, |b| b.accounts.len())
    }

    /// Balance, nonce and code hash of `address` before the block, `None` if it does not exist.
    ///
    /// # Errors
    /// [`StateError::Source`] when a backed state's source fails.
    pub fn account_values(
        &self,
        address: &Address,
    ) -> Result<Option<(U256, u64, B256)>, StateError> {
        if let Some(a) = self.accounts.get(address) {
            // Without cloning the code, which `basic_ref` hands out.
            return Ok(Some((a.info.balance, a.info.nonce, a.info.code_hash)));
        }
        Ok(self.basic_ref(*address)?.map(|a| (a.balance, a.nonce, a.code_hash)))
    }

    /// Balance, nonce and code hash of `address` before the block as far as this state holds
    /// them already, without reading: `Some(None)` when it is known not to exist, `None` when
    /// a backed state has not read it (yet).
    pub fn peek_account_values(&self, address: &Address) -> Option<Option<(U256, u64, B256)>> {
        let values = |a: &AccountInfo| (a.balance, a.nonce, a.code_hash);
        if let Some(a) = self.accounts.get(address) {
            return Some(Some(values(&a.info)));
        }
        let Some(b) = &self.backing else { return Some(None) };
        b.accounts.get(address).map(|info| info.as_ref().map(values))
    }

    /// The value of `slot` of `address` before the block as far as this state holds it
    /// already, without reading (`None` when a backed state has not read it yet).
    pub fn peek_slot(&self, address: &Address, slot: &U256) -> Option<U256> {
        if let Some(a) = self.accounts.get(address) {
            return Some(a.storage.get(slot).copied().unwrap_or_default());
        }
        let Some(b) = &self.backing else { return Some(U256::ZERO) };
        b.storage.get(&(*address, *slot)).map(|v| *v)
    }

    /// Whether `address` exists before the block.
    ///
    /// # Errors
    /// [`StateError::Source`] when a backed state's source fails.
    pub fn exists(&self, address: &Address) -> Result<bool, StateError> {
        Ok(self.account_values(address)?.is_some())
    }

    /// Account info (balance, nonce, code hash, code) of an account held in memory, `None` if
    /// it does not exist or (backed state) was never read.
    pub fn account(&self, address: &Address) -> Option<AccountInfo> {
        if let Some(a) = self.accounts.get(address) {
            return Some(a.info.clone());
        }
        self.backing.as_ref()?.accounts.get(address)?.clone()
    }

    /// The slots of `address` known in memory as (slot, value): all the block touches for an
    /// in-memory state; for a backed state only those read so far.
    pub fn known_storage(&self, address: &Address) -> Vec<(U256, U256)> {
        let mut out: Vec<(U256, U256)> = self
            .accounts
            .get(address)
            .map(|a| a.storage.iter().map(|(k, v)| (*k, *v)).collect())
            .unwrap_or_default();
        if let Some(b) = &self.backing {
            out.extend(
                b.storage.iter().filter(|e| e.key().0 == *address).map(|e| (e.key().1, *e.value())),
            );
        }
        out
    }

    /// Value of a storage slot before the block (zero when absent).
    ///
    /// # Errors
    /// [`StateError::Source`] when a backed state's source fails.
    pub fn slot(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        self.storage_ref(*address, *slot)
    }

    /// Appends the pre-block values of `slots` of `address` to `out`, in order (one account
    /// lookup for an in-memory state).
    ///
    /// # Errors
    /// [`StateError::Source`] when a backed state's source fails.
    pub fn slots_into(
        &self,
        address: &Address,
        slots: &[U256],
        out: &mut Vec<U256>,
    ) -> Result<(), StateError> {
        if let Some(a) = self.accounts.get(address) {
            out.extend(slots.iter().map(|s| a.storage.get(s).copied().unwrap_or_default()));
            return Ok(());
        }
        for slot in slots {
            out.push(self.storage_ref(*address, *slot)?);
        }
        Ok(())
    }
}

impl DatabaseRef for PreState {
    type Error = StateError;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        if let Some(a) = self.accounts.get(&address) {
            return Ok(Some(a.info.clone()));
        }
        let Some(b) = &self.backing else { return Ok(None) };
        if let Some(info) = b.accounts.get(&address) {
            b.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(info.clone());
        }
        b.misses.fetch_add(1, Ordering::Relaxed);
        let info = b.read(|s| s.account(&address))?;
        b.accounts.insert(address, info.clone());
        Ok(info)
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        if code_hash == revm::primitives::KECCAK_EMPTY {
            return Ok(Bytecode::default());
        }
        if let Some(code) = self.contracts.get(&code_hash) {
            return Ok(code.clone());
        }
        let Some(b) = &self.backing else { return Err(StateError::MissingCode(code_hash)) };
        if let Some(code) = b.codes.get(&code_hash) {
            b.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(code.clone());
        }
        b.misses.fetch_add(1, Ordering::Relaxed);
        let code = b.read(|s| s.code(&code_hash))?.ok_or(StateError::MissingCode(code_hash))?;
        b.codes.insert(code_hash, code.clone());
        Ok(code)
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Self::Error> {
        if let Some(a) = self.accounts.get(&address) {
            return Ok(a.storage.get(&index).copied().unwrap_or_default());
        }
        let Some(b) = &self.backing else { return Ok(U256::ZERO) };
        if let Some(v) = b.storage.get(&(address, index)) {
            b.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(*v);
        }
        b.misses.fetch_add(1, Ordering::Relaxed);
        let v = b.read(|s| s.storage(&address, &index))?;
        b.storage.insert((address, index), v);
        Ok(v)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Self::Error> {
        if let Some(hash) = self.block_hashes.get(&number) {
            return Ok(*hash);
        }
        let Some(b) = &self.backing else { return Err(StateError::MissingBlockHash(number)) };
        b.read(|s| s.block_hash(number))?.ok_or(StateError::MissingBlockHash(number))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Account `i` has balance `i` and, above 0xff, a code of its own (`PUSH2 i`); slot `s` of
    /// every account holds `s + 1`. Counts the keys asked.
    #[derive(Debug, Default)]
    struct Counting {
        reads: AtomicU64,
    }

    fn address(i: u64) -> Address {
        Address::left_padding_from(&i.to_be_bytes())
    }

    fn code(i: u64) -> Bytecode {
        Bytecode::new_raw(vec![0x61, (i >> 8) as u8, i as u8].into())
    }

    impl StateSource for Counting {
        fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            let i = u64::from_be_bytes(address[12..].try_into().unwrap());
            let code_hash =
                if i > 0xff { code(i).hash_slow() } else { revm::primitives::KECCAK_EMPTY };
            Ok(Some(AccountInfo { balance: U256::from(i), code_hash, ..Default::default() }))
        }
        fn storage(&self, _: &Address, slot: &U256) -> Result<U256, StateError> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            Ok(slot + U256::from(1))
        }
        fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            Ok((0x100..0x500u64).map(code).find(|c| c.hash_slow() == *hash))
        }
        fn block_hash(&self, _: u64) -> Result<Option<B256>, StateError> {
            Ok(None)
        }
        fn has_storage(&self, _: &Address) -> Result<bool, StateError> {
            Ok(true)
        }
    }

    #[test]
    fn prefetch_chunks_follow_the_hashed_stores_key_order() {
        use alloy_primitives::keccak256;
        let addresses: Vec<Address> = (0..300).map(address).collect();
        let slots: Vec<(Address, U256)> =
            (0..900u64).map(|s| (address(s % 5), U256::from(s * 7919))).collect();
        let (accounts, keys) = in_hashed_order(&addresses, &slots);
        let hashed = |a: &Address| keccak256(a);
        assert!(accounts.windows(2).all(|w| hashed(&w[0]) < hashed(&w[1])));
        let store_key = |(a, s): &(Address, U256)| (hashed(a), keccak256(B256::from(*s)));
        assert!(keys.windows(2).all(|w| store_key(&w[0]) < store_key(&w[1])));
        let mut sorted = addresses.clone();
        sorted.sort_unstable_by_key(hashed);
        assert_eq!(accounts, sorted, "every account, once");
        assert_eq!(keys.len(), slots.len());
    }

    #[test]
    fn parallel_prefetch_reads_every_key_once_and_caches_it() {
        let source = Arc::new(Counting::default());
        let state = PreState::backed(source.clone());
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let addresses: Vec<Address> = (0xf0..0x4f0).map(address).collect();
        let slots: Vec<(Address, U256)> =
            (0..5_000u64).map(|s| (address(s % 7), U256::from(s))).collect();
        state.prefetch_on(&pool, &addresses, &slots, PREFETCH_CHUNK).unwrap();
        // 1,024 accounts, the codes of the 1,008 above 0xff, 5,000 slots.
        let read = source.reads.load(Ordering::Relaxed);
        assert_eq!(read, 1_024 + 1_008 + 5_000);
        assert_eq!(state.cache_stats().misses, read);
        for (i, a) in (0xf0..0x4f0u64).zip(&addresses) {
            let info = state.basic_ref(*a).unwrap().unwrap();
            assert_eq!(info.balance, U256::from(i));
            if i > 0xff {
                assert_eq!(state.code_by_hash_ref(info.code_hash).unwrap(), code(i));
            }
        }
        for (a, s) in &slots {
            assert_eq!(state.storage_ref(*a, *s).unwrap(), s + U256::from(1));
        }
        assert_eq!(source.reads.load(Ordering::Relaxed), read, "every value came from the cache");
    }
}
