//! JSON-RPC reads the in-memory canonical chain: with background persistence held back (a
//! store whose commits wait at a gate), a block made canonical by a forkchoice update is served
//! at once — `eth_blockNumber`, the block, its transaction and receipt, balances and nonces at
//! `latest`, an `eth_getProof` through the trie nodes its state root created, `eth_call` — while
//! the store still stands at its parent; once the gate opens and the store holds it, every
//! answer is the same, and the state before it is still the parent's.

use crate::common::{attributes, build_block, call, signed_transfer, state, Engine, SENDER};
use alloy_consensus::TxEnvelope;
use alloy_primitives::{Address, Bytes, B256, U256};
use gigagas_chain_state::BlockchainProvider;
use gigagas_engine::{BlockTree, EngineService};
use gigagas_rpc::{auth_module, RpcContext};
use gigagas_state::{StateError, StateSource};
use gigagas_storage::{
    AccountRecord, BlockAccessListReader, BlockCommit, BlockHashReader, BlockNumReader,
    BlockReader, BlockWriter, FullProvider, FullReader, HashedBatch, HashedStateWriter,
    HeaderProvider, KeepStates, MetadataProvider, ProviderResult, PruneStats, ReaderFactory,
    ReceiptProvider, StateWriter, Storage, TransactionsProvider, TriePruner, UnwoundBlock,
};
use gigagas_txpool::TxPool;
use gigagas_validation::init_genesis;
use revm::state::{AccountInfo, Bytecode};
use serde_json::{json, Value};
use std::{
    sync::{Arc, Condvar, Mutex},
    time::{Duration, Instant},
};

/// A store whose block commits wait while its gate is shut.
#[derive(Debug)]
struct Gated {
    inner: Arc<Storage>,
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gated {
    fn set(&self, open: bool) {
        *self.open.lock().unwrap() = open;
        self.opened.notify_all();
    }
}

impl BlockWriter for Gated {
    fn commit_block(&self, commit: &BlockCommit<'_>) -> ProviderResult<()> {
        drop(self.opened.wait_while(self.open.lock().unwrap(), |open| !*open).unwrap());
        self.inner.commit_block(commit)
    }
    fn unwind(
        &self,
        to: (u64, B256),
        unwound: &[UnwoundBlock],
        accounts: &[(Address, Option<AccountRecord>)],
        storage: &[(Address, U256, U256)],
    ) -> ProviderResult<()> {
        self.inner.unwind(to, unwound, accounts, storage)
    }
    fn flush(&self) -> ProviderResult<()> {
        self.inner.flush()
    }
}

/// Its views are the store's: what the gate holds back is not in them.
impl ReaderFactory for Gated {
    fn read_view(&self) -> Arc<dyn FullReader> {
        ReaderFactory::read_view(&*self.inner)
    }
}

impl StateWriter for Gated {
    fn write_state(
        &self,
        accounts: &[(Address, AccountRecord)],
        storage: &[(Address, U256, U256)],
        codes: &[(B256, &[u8])],
    ) -> ProviderResult<()> {
        self.inner.write_state(accounts, storage, codes)
    }
}

impl HashedStateWriter for Gated {
    fn write_hashed(&self, batch: &HashedBatch<'_>) -> ProviderResult<()> {
        self.inner.write_hashed(batch)
    }
}

impl TriePruner for Gated {
    fn prune_trie(
        &self,
        keep: KeepStates<'_>,
        threads: usize,
        progress: &mut dyn FnMut(&'static str, u64),
    ) -> ProviderResult<PruneStats> {
        self.inner.prune_trie(keep, threads, progress)
    }
}

impl MetadataProvider for Gated {
    fn meta(&self, key: &[u8]) -> ProviderResult<Option<Vec<u8>>> {
        self.inner.meta(key)
    }
    fn put_meta(&self, key: &[u8], value: &[u8]) -> ProviderResult<()> {
        self.inner.put_meta(key, value)
    }
}

impl BlockNumReader for Gated {
    fn best_block(&self) -> ProviderResult<Option<(u64, B256)>> {
        self.inner.best_block()
    }
    fn block_number(&self, hash: &B256) -> ProviderResult<Option<u64>> {
        self.inner.block_number(hash)
    }
    fn earliest_state_block(&self) -> ProviderResult<u64> {
        self.inner.earliest_state_block()
    }
}

impl BlockHashReader for Gated {
    fn block_hash(&self, number: u64) -> ProviderResult<Option<B256>> {
        BlockHashReader::block_hash(&*self.inner, number)
    }
}

impl HeaderProvider for Gated {
    fn header_by_number(&self, number: u64) -> ProviderResult<Option<alloy_consensus::Header>> {
        self.inner.header_by_number(number)
    }
}

impl BlockReader for Gated {
    fn body_by_number(
        &self,
        number: u64,
    ) -> ProviderResult<Option<alloy_consensus::BlockBody<TxEnvelope>>> {
        self.inner.body_by_number(number)
    }
    fn senders_by_number(&self, number: u64) -> ProviderResult<Option<Vec<Address>>> {
        self.inner.senders_by_number(number)
    }
}

impl TransactionsProvider for Gated {
    fn transaction_location(&self, hash: &B256) -> ProviderResult<Option<(u64, u32)>> {
        self.inner.transaction_location(hash)
    }
}

impl ReceiptProvider for Gated {
    fn receipts_by_number(
        &self,
        number: u64,
    ) -> ProviderResult<Option<Vec<alloy_consensus::ReceiptEnvelope>>> {
        self.inner.receipts_by_number(number)
    }
}

impl BlockAccessListReader for Gated {
    fn block_access_list(
        &self,
        number: u64,
    ) -> ProviderResult<Option<Vec<alloy_eip7928::AccountChanges>>> {
        self.inner.block_access_list(number)
    }
}

impl gigagas_trie::NodeSource for Gated {
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, gigagas_trie::NodeSourceError> {
        self.inner.node(hash)
    }
}

impl StateSource for Gated {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        StateSource::account(&*self.inner, address)
    }
    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        StateSource::storage(&*self.inner, address, slot)
    }
    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        StateSource::code(&*self.inner, hash)
    }
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        StateSource::block_hash(&*self.inner, number)
    }
    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        StateSource::has_storage(&*self.inner, address)
    }
}

/// The answers a reader gets about block 1 and its transfer, to compare before and after the
/// store holds it.
async fn answers(engine: &Engine, tx: B256, to: Address) -> Vec<Value> {
    let mut out = Vec::new();
    for (method, params) in [
        ("eth_blockNumber", vec![]),
        ("eth_getBlockByNumber", vec![json!("latest"), json!(true)]),
        ("eth_getBlockByNumber", vec![json!("0x1"), json!(false)]),
        ("eth_getTransactionByHash", vec![json!(tx)]),
        ("eth_getTransactionReceipt", vec![json!(tx)]),
        ("eth_getBlockReceipts", vec![json!("latest")]),
        ("eth_getBalance", vec![json!(to), json!("latest")]),
        ("eth_getBalance", vec![json!(to), json!("0x0")]),
        ("eth_getTransactionCount", vec![json!(SENDER), json!("latest")]),
        ("eth_getTransactionCount", vec![json!(SENDER), json!("0x0")]),
        ("eth_getProof", vec![json!(to), json!([]), json!("latest")]),
        ("eth_call", vec![json!({"from": SENDER, "to": to, "value": "0x1"}), json!("latest")]),
    ] {
        out.push(call(engine, method, params.clone()).await.unwrap_or_else(|code| {
            panic!("{method} {params:?}: error {code}");
        }));
    }
    out
}

/// A dev node over a [`Gated`] store with background persistence.
struct GatedNode {
    _dir: tempfile::TempDir,
    storage: Arc<Storage>,
    gated: Arc<Gated>,
    genesis: B256,
    memory: gigagas_chain_state::CanonicalInMemoryState,
    engine: Engine,
    thread: std::thread::JoinHandle<()>,
}

impl GatedNode {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(Storage::open(dir.path()).unwrap());
        let genesis = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testing/dev-genesis.json"),
        )
        .unwrap();
        let genesis = init_genesis(&*storage, &genesis).unwrap().hash;
        let gated = Arc::new(Gated {
            inner: storage.clone(),
            open: Mutex::new(true),
            opened: Condvar::new(),
        });
        let store: Arc<dyn FullProvider> = gated.clone();
        let tree =
            BlockTree::new(store, 2).unwrap().with_background_persistence(true, None).unwrap();
        let pool = Arc::new(TxPool::default());
        let memory = tree.canonical_in_memory_state().clone();
        let provider = BlockchainProvider::new(gated.clone(), memory.clone());
        let (handle, thread) =
            EngineService::spawn(tree, pool.clone(), Arc::default(), None).unwrap();
        let engine: Engine = auth_module(Arc::new(RpcContext::new(provider, handle, pool)));
        Self { _dir: dir, storage, gated, genesis, memory, engine, thread }
    }

    /// Opens the gate, waits until the store holds `head` and memory holds nothing, and stops
    /// the engine.
    async fn finish(self, head: (u64, B256)) {
        self.gated.set(true);
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.storage.best_block().unwrap() != Some(head)
            || !self.memory.canonical_chain().blocks().is_empty()
        {
            assert!(Instant::now() < deadline, "block {} not persisted", head.0);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop((self.engine, self.memory));
        self.thread.join().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_serves_canonical_blocks_the_store_does_not_hold_yet() {
    let node = GatedNode::start();
    let (storage, gated, memory, engine) = (&node.storage, &node.gated, &node.memory, &node.engine);
    let genesis_hash = node.genesis;
    let to = Address::repeat_byte(0x42);
    // Gas for a new account under Amsterdam's state-creation cost.
    let (raw, tx) = signed_transfer(0, to, 1_000_000, 1_000_000, 20_000_000_000);
    call(engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
    let block = build_block(engine, genesis_hash, 1).await;
    gated.set(false);
    let answer =
        call(engine, "engine_forkchoiceUpdatedV4", vec![state(block), Value::Null]).await.unwrap();
    assert_eq!(answer["payloadStatus"]["status"], "VALID");

    // The store still stands at genesis; every answer is about block 1.
    assert_eq!(storage.best_block().unwrap(), Some((0, genesis_hash)));
    assert_eq!(memory.canonical_chain().blocks().len(), 1);
    let from_memory = answers(engine, tx, to).await;
    assert_eq!(from_memory[0], json!("0x1"));
    assert_eq!(from_memory[1]["hash"], json!(block));
    assert_eq!(from_memory[1]["transactions"][0]["hash"], json!(tx));
    assert_eq!(from_memory[3]["blockHash"], json!(block));
    assert_eq!(from_memory[4]["status"], json!("0x1"));
    assert_eq!(from_memory[4]["blockNumber"], json!("0x1"));
    assert_eq!(from_memory[5].as_array().unwrap().len(), 1);
    assert_eq!(from_memory[6], json!(format!("{:#x}", 1_000_000)));
    assert_eq!(from_memory[7], json!("0x0"));
    assert_eq!(from_memory[8], json!("0x1"));
    assert_eq!(from_memory[9], json!("0x0"));
    assert_eq!(from_memory[10]["balance"], json!(format!("{:#x}", 1_000_000)));
    assert_eq!(from_memory[11], json!("0x"));
    assert_eq!(storage.best_block().unwrap(), Some((0, genesis_hash)), "nothing committed yet");

    // Persisted: the same answers from the store, and the block leaves memory.
    gated.set(true);
    let deadline = Instant::now() + Duration::from_secs(20);
    while storage.best_block().unwrap() != Some((1, block))
        || !memory.canonical_chain().blocks().is_empty()
    {
        assert!(Instant::now() < deadline, "block 1 not persisted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(answers(engine, tx, to).await, from_memory);
    node.finish((1, block)).await;
}

/// A sender's burst of consecutive nonces, sent while the block holding its first transaction
/// is canonical but not yet in the store, is pending against the head and goes whole into the
/// next block built on it: the pool and the builder read the in-memory head, not the store,
/// whose nonce is still the genesis one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_sent_while_its_parent_persists_is_built_whole() {
    const BURST: u64 = 12;
    let node = GatedNode::start();
    let engine = &node.engine;
    let to = Address::repeat_byte(0x43);
    let (raw, _) = signed_transfer(0, to, 1_000_000, 1_000_000, 20_000_000_000);
    call(engine, "eth_sendRawTransaction", vec![json!(raw)]).await.unwrap();
    let block = build_block(engine, node.genesis, 1).await;
    node.gated.set(false);
    let answer =
        call(engine, "engine_forkchoiceUpdatedV4", vec![state(block), Value::Null]).await.unwrap();
    assert_eq!(answer["payloadStatus"]["status"], "VALID");

    let mut burst = Vec::new();
    for nonce in 1..=BURST {
        let (raw, tx) = signed_transfer(nonce, to, 1, 1_000_000, 20_000_000_000);
        let sent = call(engine, "eth_sendRawTransaction", vec![json!(raw)]).await;
        assert_eq!(sent, Ok(json!(tx)), "nonce {nonce}");
        burst.push(json!(tx));
    }
    let pending = call(engine, "eth_getTransactionCount", vec![json!(SENDER), json!("pending")])
        .await
        .unwrap();
    assert_eq!(pending, json!(format!("{:#x}", BURST + 1)));
    assert_eq!(node.storage.best_block().unwrap(), Some((0, node.genesis)), "store at genesis");

    let answer = call(engine, "engine_forkchoiceUpdatedV4", vec![state(block), attributes(4, 2)])
        .await
        .unwrap();
    let envelope =
        call(engine, "engine_getPayloadV6", vec![answer["payloadId"].clone()]).await.unwrap();
    let built: Vec<Value> = envelope["executionPayload"]["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|raw| {
            let raw: Bytes = serde_json::from_value(raw.clone()).unwrap();
            json!(alloy_primitives::keccak256(&raw))
        })
        .collect();
    assert_eq!(built, burst, "the whole burst, in nonce order");
    assert_eq!(node.storage.best_block().unwrap(), Some((0, node.genesis)), "still at genesis");
    node.finish((1, block)).await;
}
