//! `engine_newPayloadV5` through the Engine API's handlers while the database fails reads: the
//! answer is a JSON-RPC error (`-32603`) naming the block, never an INVALID status, and nothing
//! is remembered — once the reads work again the same payload is VALID.
//!
//! The payload is the node's own: `engine_forkchoiceUpdatedV4` with payload attributes on the dev
//! chain (testing/dev-genesis.json), then `engine_getPayloadV6`. The fault sits under the engine
//! tree, where the stored state is read (`BlockTree::with_source_layer`), as a failing disk would;
//! the tree runs in the engine task, as in the node, and the handlers reach it by messages.

use gigagas_chain_state::BlockchainProvider;
use gigagas_engine::{BlockTree, EngineService};
use gigagas_rpc::{auth_module, RpcContext};
use gigagas_state::{StateError, StateSource};
use gigagas_storage::{FullProvider, Storage};
use gigagas_validation::init_genesis;
use revm::{
    primitives::{Address, B256, U256},
    state::{AccountInfo, Bytecode},
};
use serde_json::{json, Value};
use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

/// The stored state, with every read failing while `fail` is set.
#[derive(Debug)]
struct Flaky {
    inner: Arc<dyn StateSource>,
    fail: Arc<AtomicBool>,
}

impl Flaky {
    fn check(&self) -> Result<(), StateError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StateError::from_source(std::io::Error::other("injected read failure")));
        }
        Ok(())
    }
}

impl StateSource for Flaky {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        self.check()?;
        self.inner.account(address)
    }
    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        self.check()?;
        self.inner.storage(address, slot)
    }
    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        self.check()?;
        self.inner.code(hash)
    }
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        self.check()?;
        self.inner.block_hash(number)
    }
    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        self.check()?;
        self.inner.has_storage(address)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_payload_on_a_failing_database_is_an_error_not_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn FullProvider> = Arc::new(Storage::open(dir.path()).unwrap());
    let genesis = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testing/dev-genesis.json"),
    )
    .unwrap();
    let genesis_hash = init_genesis(&*store, &genesis).unwrap().hash;
    let fail = Arc::new(AtomicBool::new(false));
    let layer_fail = fail.clone();
    // The payload this node builds is executed again on its newPayload (not kept as executed),
    // so that the newPayload reads the failing database.
    let config = gigagas_engine::TreeConfig::new(2).with_built_kept(false);
    let tree =
        BlockTree::with_config(store.clone(), config).unwrap().with_source_layer(move |inner| {
            Arc::new(Flaky { inner, fail: layer_fail.clone() }) as Arc<dyn StateSource>
        });
    let provider = BlockchainProvider::new(store, tree.canonical_in_memory_state().clone());
    let (handle, _engine_thread) =
        EngineService::spawn(tree, Arc::default(), Arc::default(), None).unwrap();
    let engine = auth_module(Arc::new(RpcContext::new(provider, handle, Arc::default())));

    let state = json!({
        "headBlockHash": genesis_hash,
        "safeBlockHash": genesis_hash,
        "finalizedBlockHash": genesis_hash,
    });
    let beacon_root = B256::repeat_byte(7);
    let attrs = json!({
        "timestamp": "0x1",
        "prevRandao": B256::repeat_byte(9),
        "suggestedFeeRecipient": Address::repeat_byte(0xfe),
        "withdrawals": [],
        "parentBeaconBlockRoot": beacon_root,
        "slotNumber": "0x1",
    });
    let answer: Value =
        engine.call("engine_forkchoiceUpdatedV4", vec![state, attrs]).await.unwrap();
    let id = answer["payloadId"].clone();
    assert!(!id.is_null(), "{answer}");
    let envelope: Value = engine.call("engine_getPayloadV6", vec![id]).await.unwrap();
    let payload = envelope["executionPayload"].clone();
    let params =
        vec![payload.clone(), json!([]), json!(beacon_root), envelope["executionRequests"].clone()];

    fail.store(true, Ordering::SeqCst);
    match engine.call::<_, Value>("engine_newPayloadV5", params.clone()).await {
        Err(jsonrpsee::core::server::MethodsError::JsonRpc(e)) => {
            assert_eq!(e.code(), -32603, "{e:?}");
            assert!(e.message().contains("block 1"), "{e:?}");
        }
        other => panic!("a failing database gave {other:?}"),
    }

    fail.store(false, Ordering::SeqCst);
    let status: Value = engine.call("engine_newPayloadV5", params).await.unwrap();
    assert_eq!(status["status"], "VALID", "{status}");
    assert_eq!(status["latestValidHash"], payload["blockHash"], "{status}");
}
