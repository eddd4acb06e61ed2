//! The node's own engine path on a generated chain (`gigagas-bench gen-chain`): per
//! configuration, `init` of its genesis into a fresh RocksDB datadir, then each block through the
//! engine tree exactly as `engine_newPayload` + `engine_forkchoiceUpdated` run it (sender
//! recovery, BAL-hinted reads, execution, header and BAL checks, state root; then the commit),
//! without the JSON and HTTP around them. Configurations: the sequential reference
//! (`--engine.parallel false`) and, when the chain carries its BALs (`bal.rlp`, Amsterdam), the
//! parallel executor at each thread count, each block committed inside its forkchoice update;
//! then the last configuration again with the commits on the persistence thread beside the next
//! block (the node's default), for what that costs the next block
//! ([`ChainMeasure::commit_beside_share`]). Per block: the stages' times, the reads that went to
//! the store, this process's RSS and the page cache.

use crate::{
    error::io_err,
    probe::{meminfo_bytes, rss_bytes},
    HwError,
};
use alloy_consensus::{Block, TxEnvelope};
use alloy_primitives::B256;
use alloy_rlp::Decodable;
use gigagas_bal::BlockAccessList;
use gigagas_engine::{BlockTree, ForkchoiceError, PayloadStatus, TreeConfig};
use gigagas_executor::Scheduler;
use gigagas_storage::{FullProvider, Storage};
use gigagas_validation::init_genesis;
use serde::{Deserialize, Serialize};
use std::{path::Path, sync::Arc, time::Instant};

/// One block through the engine.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ChainBlock {
    /// Block number.
    pub number: u64,
    /// Gas used (gas).
    pub gas_used: u64,
    /// Transactions.
    pub transactions: usize,
    /// Sender recovery, on the global pool (all cores) (seconds).
    pub recovery_s: f64,
    /// BAL-hinted reads before execution (seconds; zero on the sequential path).
    pub io_s: f64,
    /// Execution with header checks, recovery and BAL reads excluded (seconds).
    pub execution_s: f64,
    /// State root (seconds).
    pub state_root_s: f64,
    /// The block's atomic write in the forkchoice update (seconds).
    pub commit_s: f64,
    /// The rest of the engine tree's `newPayload`: its bookkeeping, the header, BAL and
    /// state-root comparisons (seconds).
    #[serde(default)]
    pub checks_s: f64,
    /// What the Engine API handler does before the tree (seconds): the payload's JSON parsed
    /// (`ExecutionPayloadV4`/`V3`, as a consensus client sends it), converted to a block
    /// (`try_into_block_with_sidecar`: transactions decoded, roots computed), hashed, its BAL
    /// decoded — alloy's functions, as `crates/rpc/src/engine.rs` calls them.
    #[serde(default)]
    pub payload_s: f64,
    /// Account, slot and code reads that went to the store.
    pub store_reads: u64,
    /// Trie nodes read from the store (not in its node cache) from this block's `newPayload`
    /// to its commit.
    #[serde(default)]
    pub trie_node_reads: u64,
    /// This process's RSS after the block (bytes).
    pub rss_bytes: u64,
    /// The page cache after the block (bytes).
    pub page_cache_bytes: u64,
}

/// The chain through one engine configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChainRun {
    /// The parallel executor (driven by the BALs) or the sequential reference.
    pub parallel: bool,
    /// Executor threads (the parallel executor's pool).
    pub threads: usize,
    /// One row per block.
    pub blocks: Vec<ChainBlock>,
}

impl ChainRun {
    /// Sum of `f` over the blocks.
    pub fn sum(&self, f: impl Fn(&ChainBlock) -> f64) -> f64 {
        self.blocks.iter().map(f).sum()
    }
}

/// One generated chain through the engine.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChainMeasure {
    /// The chain folder.
    pub chain: String,
    /// `fork` and `mix` from its `info.json`.
    pub workload: String,
    /// Gas used by all blocks (gas).
    pub gas: u64,
    /// Transactions.
    pub transactions: usize,
    /// Threads of the global pool that recovered the senders.
    pub recovery_threads: usize,
    /// The datadir's size after the sequential run (bytes).
    pub datadir_bytes: u64,
    /// The sequential run first, then the parallel ones by thread count; each block committed
    /// inside its forkchoice update.
    pub runs: Vec<ChainRun>,
    /// The last of `runs` again with each block committed on the persistence thread while the
    /// next block's `newPayload` runs (`--engine.persistence-background`, the node's default);
    /// its `commit_s` is the commit's own time on that thread. `None` in reports from before it
    /// was measured.
    #[serde(default)]
    pub background: Option<ChainRun>,
}

impl ChainMeasure {
    /// The sequential reference's run.
    pub fn sequential(&self) -> &ChainRun {
        &self.runs[0]
    }

    /// The parallel run at `threads`, when measured.
    pub fn parallel(&self, threads: usize) -> Option<&ChainRun> {
        self.runs.iter().find(|r| r.parallel && r.threads == threads)
    }

    /// What a commit in the background costs the next block, as a share of the commit's own
    /// time: how much longer the [`Self::background`] run's `newPayload`s took than the same
    /// configuration's with synchronous commits (blocks 2 on: the first follows no commit),
    /// over the synchronous run's commits of the blocks before them. 1 when the commit holds
    /// the next block up for all its time, 1/C when its CPU is shared evenly over C busy cores,
    /// 0 when it only used idle cores. `None` when not measured.
    pub fn commit_beside_share(&self) -> Option<f64> {
        let background = self.background.as_ref()?;
        let sync = self
            .runs
            .iter()
            .find(|r| r.parallel == background.parallel && r.threads == background.threads)?;
        let n = sync.blocks.len().min(background.blocks.len());
        if n < 2 {
            return None;
        }
        let slower: f64 = (1..n)
            .map(|i| background.blocks[i].new_payload_s() - sync.blocks[i].new_payload_s())
            .sum();
        let commits: f64 = sync.blocks[..n - 1].iter().map(|b| b.commit_s).sum();
        (commits > 0.0).then(|| (slower / commits).max(0.0))
    }
}

impl ChainBlock {
    /// The tree's whole `newPayload` (seconds): its stages and checks.
    pub fn new_payload_s(&self) -> f64 {
        self.recovery_s + self.io_s + self.execution_s + self.state_root_s + self.checks_s
    }
}

/// A generated chain as read from its folder.
struct Loaded {
    /// `genesis.json`.
    genesis: Vec<u8>,
    /// The blocks, each with its RLP length (bytes).
    blocks: Vec<(Block<TxEnvelope>, usize)>,
    /// For the Amsterdam variant, each block's BAL.
    bals: Option<Vec<BlockAccessList>>,
    /// `fork` and `mix` from `info.json`.
    workload: String,
}

fn load(chain: &Path) -> Result<Loaded, HwError> {
    let read = |name: &'static str| {
        let p = chain.join(name);
        if !p.is_file() {
            return Err(HwError::Chain { path: chain.to_path_buf(), what: name });
        }
        std::fs::read(&p).map_err(io_err(&p))
    };
    let genesis = read("genesis.json")?;
    let bad = |what: &'static str| HwError::Chain { path: chain.to_path_buf(), what };
    let info: serde_json::Value =
        serde_json::from_slice(&read("info.json")?).map_err(|_| bad("info.json as JSON"))?;
    let workload =
        format!("{} {}", info["fork"].as_str().unwrap_or("?"), info["mix"].as_str().unwrap_or("?"));
    let rlp = read("chain.rlp")?;
    let mut buf = rlp.as_slice();
    let mut blocks = Vec::new();
    while !buf.is_empty() {
        let before = buf.len();
        let block = Block::<TxEnvelope>::decode(&mut buf).map_err(|_| bad("chain.rlp blocks"))?;
        blocks.push((block, before - buf.len()));
    }
    let bals = if chain.join("bal.rlp").is_file() {
        let raw = read("bal.rlp")?;
        let mut buf = raw.as_slice();
        let mut out = Vec::new();
        while !buf.is_empty() {
            out.push(BlockAccessList::decode(&mut buf).map_err(|_| bad("bal.rlp BALs"))?);
        }
        if out.len() != blocks.len() {
            return Err(bad("one BAL per block in bal.rlp"));
        }
        Some(out)
    } else {
        None
    };
    Ok(Loaded { genesis, blocks, bals, workload })
}

/// Runs the chain in `chain` through the engine: sequentially, then (with BALs) in parallel at
/// each of `threads`, each in a fresh datadir under `work` (removed afterwards); `tick` once per
/// block.
///
/// # Errors
/// [`HwError::Chain`] for a folder that is not a generated chain, [`HwError::Invalid`] when a
/// block is not VALID, [`HwError::Import`]/[`HwError::Storage`]/[`HwError::Io`] for the
/// datadir.
pub fn measure(
    chain: &Path,
    work: &Path,
    threads: &[usize],
    tick: &dyn Fn(),
) -> Result<ChainMeasure, HwError> {
    let loaded = load(chain)?;
    let mut configs = vec![(false, 1)];
    if loaded.bals.is_some() {
        configs.extend(threads.iter().map(|&t| (true, t)));
    }
    let datadir = work.join("gigagas-hw-datadir");
    let mut runs = Vec::new();
    let mut datadir_bytes = 0;
    for &(parallel, t) in &configs {
        runs.push(run_config(&loaded, &datadir, parallel, t, false, tick)?);
        if !parallel {
            datadir_bytes = gigagas_storage::datadir_bytes(&datadir);
        }
    }
    // The last configuration again, its commits in the background.
    let &(parallel, t) = configs.last().expect("the sequential configuration at least");
    let background = Some(run_config(&loaded, &datadir, parallel, t, true, tick)?);
    if datadir.exists() {
        std::fs::remove_dir_all(&datadir).map_err(io_err(&datadir))?;
    }
    let first = &runs[0].blocks;
    Ok(ChainMeasure {
        chain: chain.display().to_string(),
        workload: loaded.workload,
        gas: first.iter().map(|b| b.gas_used).sum(),
        transactions: first.iter().map(|b| b.transactions).sum(),
        recovery_threads: rayon::current_num_threads(),
        datadir_bytes,
        runs,
        background,
    })
}

/// One configuration over the chain in a fresh datadir at `datadir` (left for the caller to
/// measure): the sequential reference or the parallel executor at `threads`, each block
/// committed inside its forkchoice update or, with `background`, on the persistence thread
/// (its commit time taken as the thread reports it).
fn run_config(
    chain: &Loaded,
    datadir: &Path,
    parallel: bool,
    threads: usize,
    background: bool,
    tick: &dyn Fn(),
) -> Result<ChainRun, HwError> {
    if datadir.exists() {
        std::fs::remove_dir_all(datadir).map_err(io_err(datadir))?;
    }
    let storage = Arc::new(Storage::open(datadir)?);
    let store: Arc<dyn FullProvider> = storage.clone();
    init_genesis(&*store, &chain.genesis)?;
    let config = TreeConfig::new(threads).with_executor(parallel, Scheduler::GasLimit);
    let mut tree = BlockTree::with_config(store.clone(), config)?
        .with_background_persistence(background, None)
        .map_err(io_err(datadir))?;
    let mut rows: Vec<ChainBlock> = Vec::new();
    let take_persisted = |tree: &BlockTree, rows: &mut Vec<ChainBlock>| {
        for done in tree.take_persisted() {
            if let Some(row) = rows.iter_mut().find(|r| r.number == done.number) {
                row.commit_s = done.commit.as_secs_f64();
            }
        }
    };
    for (i, (block, rlp_len)) in chain.blocks.iter().enumerate() {
        let hash = block.header.hash_slow();
        let number = block.header.number;
        let bal = chain.bals.as_ref().map(|b| &b[i]);
        // As the Engine API hands it over: the block made from the payload, whose header's
        // transactions root the conversion computed.
        let (payload_s, payload) = payload_decode_seconds(block, hash, bal)?;
        let transactions_root = Some(payload.header.transactions_root);
        let node_reads = storage.trie_node_reads();
        let new_payload = Instant::now();
        let (status, imported) = tree.new_payload(payload, *rlp_len, transactions_root, bal)?;
        let new_payload = new_payload.elapsed();
        let b = match (status, imported) {
            (PayloadStatus::Valid(_), Some(b)) => b,
            (status, _) => return Err(HwError::Invalid { number, status: format!("{status:?}") }),
        };
        let start = Instant::now();
        let change = match tree.forkchoice_updated(hash, B256::ZERO, B256::ZERO) {
            Ok((PayloadStatus::Valid(_), change)) => change,
            Ok((status, _)) => {
                return Err(HwError::Invalid { number, status: format!("{status:?}") })
            }
            Err(ForkchoiceError::Invalid(e)) => {
                return Err(HwError::Invalid { number, status: e.to_string() })
            }
            Err(ForkchoiceError::Internal(e)) => return Err(e.into()),
        };
        let elapsed = start.elapsed().as_secs_f64();
        // The commit's own time as the tree reports it, else the whole update's; in the
        // background, as the persistence thread reports it (below).
        let reported: f64 = change.committed.iter().map(|c| c.commit.as_secs_f64()).sum();
        let commit = match background {
            true => 0.0,
            false if reported > 0.0 => reported,
            false => elapsed,
        };
        rows.push(ChainBlock {
            number,
            gas_used: b.gas_used,
            transactions: b.transactions,
            recovery_s: b.recovery.as_secs_f64(),
            io_s: b.io.as_secs_f64(),
            execution_s: b.execution.saturating_sub(b.recovery + b.io).as_secs_f64(),
            state_root_s: b.state_root.as_secs_f64(),
            commit_s: commit,
            checks_s: new_payload.saturating_sub(b.execution + b.state_root).as_secs_f64(),
            payload_s,
            store_reads: b.cache.misses,
            trie_node_reads: storage.trie_node_reads() - node_reads,
            rss_bytes: rss_bytes().unwrap_or(0),
            page_cache_bytes: meminfo_bytes("Cached:").unwrap_or(0),
        });
        take_persisted(&tree, &mut rows);
        tick();
    }
    tree.wait_persisted()?;
    take_persisted(&tree, &mut rows);
    drop(tree);
    store.flush()?;
    drop(store);
    Ok(ChainRun { parallel, threads, blocks: rows })
}

/// Times the Engine API handler's work on `block` before the tree: the JSON of its payload (built
/// here, untimed, as a consensus client would send it) parsed, converted to a block, hashed, and
/// its BAL decoded; the seconds and the block made from the payload. The parse and the
/// conversion must succeed and give the block back (else the chain is not one a node would
/// accept over the Engine API).
fn payload_decode_seconds(
    block: &Block<TxEnvelope>,
    hash: B256,
    bal: Option<&BlockAccessList>,
) -> Result<(f64, Block<TxEnvelope>), HwError> {
    use alloy_rpc_types_engine::{
        CancunPayloadFields, ExecutionPayload, ExecutionPayloadSidecar, ExecutionPayloadV3,
        ExecutionPayloadV4, PraguePayloadFields,
    };
    let number = block.header.number;
    let bad = |what: String| HwError::Invalid { number, status: what };
    let bal_bytes = bal.map(|b| alloy_primitives::Bytes::from(alloy_rlp::encode(b)));
    let json =
        match &bal_bytes {
            Some(bytes) => serde_json::to_string(
                &ExecutionPayloadV4::from_block_unchecked_with_bal(hash, block, bytes.clone()),
            ),
            None => serde_json::to_string(&ExecutionPayloadV3::from_block_unchecked(hash, block)),
        }
        .map_err(|e| bad(e.to_string()))?;
    let beacon = block.header.parent_beacon_block_root.unwrap_or_default();
    let hashes: Vec<B256> = block.body.blob_versioned_hashes_iter().copied().collect();
    let sidecar = ExecutionPayloadSidecar::v4(
        CancunPayloadFields::new(beacon, hashes),
        PraguePayloadFields::new(alloy_eips::eip7685::Requests::default()),
    );
    let start = Instant::now();
    let payload = if bal_bytes.is_some() {
        ExecutionPayload::V4(
            serde_json::from_str::<ExecutionPayloadV4>(&json).map_err(|e| bad(e.to_string()))?,
        )
    } else {
        ExecutionPayload::V3(
            serde_json::from_str::<ExecutionPayloadV3>(&json).map_err(|e| bad(e.to_string()))?,
        )
    };
    let decoded_bal = match &payload {
        ExecutionPayload::V4(p) => Some(
            BlockAccessList::decode(&mut &p.block_access_list[..])
                .map_err(|e| bad(format!("BAL: {e}")))?,
        ),
        _ => None,
    };
    let converted: Block<TxEnvelope> =
        payload.try_into_block_with_sidecar(&sidecar).map_err(|e| bad(format!("payload: {e}")))?;
    let converted_hash = converted.header.hash_slow();
    let seconds = start.elapsed().as_secs_f64();
    // The work is used: the block (by its hash) and the BAL round-trip.
    if converted_hash != hash || decoded_bal.as_ref() != bal {
        return Err(bad("the payload does not round-trip".into()));
    }
    Ok((seconds, converted))
}
