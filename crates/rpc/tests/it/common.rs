//! What the Engine API tests share: a node over a fresh store of the dev chain with moved fork
//! times (the engine task and the RPC handlers over one pool), calls, forkchoice states and
//! payload attributes.

#![allow(dead_code, unreachable_pub)]

use gigagas_chain_state::BlockchainProvider;
use gigagas_engine::{BlockTree, EngineService};
use gigagas_rpc::{auth_module, public_module, RpcContext, RpcModuleSelection};
use gigagas_storage::{FullProvider, Storage};
use gigagas_txpool::TxPool;
use gigagas_validation::init_genesis;
use jsonrpsee::{core::server::MethodsError, RpcModule};
use revm::primitives::{Address, B256};
use serde_json::{json, Value};
use std::sync::Arc;

/// The authenticated RPC module (Engine API and the public methods).
pub type Engine = RpcModule<Arc<RpcContext>>;

/// The Engine API over a fresh store of the dev chain with the fork times `forks` (a time of
/// `None` removes the fork), the genesis hash and the engine thread (it ends once the module,
/// which holds the last handle, is dropped).
pub fn node(
    dir: &std::path::Path,
    forks: &[(&str, Option<u64>)],
) -> (Engine, B256, std::thread::JoinHandle<()>) {
    node_with(dir, forks, |ctx| ctx)
}

/// [`node`] with its RPC context changed by `configure` (limits, timeouts).
pub fn node_with(
    dir: &std::path::Path,
    forks: &[(&str, Option<u64>)],
    configure: impl FnOnce(RpcContext) -> RpcContext,
) -> (Engine, B256, std::thread::JoinHandle<()>) {
    let (ctx, genesis_hash, thread) = context_with(dir, forks, configure);
    (auth_module(Arc::new(ctx)), genesis_hash, thread)
}

/// The RPC context of [`node_with`].
pub fn context_with(
    dir: &std::path::Path,
    forks: &[(&str, Option<u64>)],
    configure: impl FnOnce(RpcContext) -> RpcContext,
) -> (RpcContext, B256, std::thread::JoinHandle<()>) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testing/dev-genesis.json");
    let mut genesis: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    for (fork, time) in forks {
        match time {
            Some(t) => genesis["config"][*fork] = json!(t),
            None => {
                genesis["config"].as_object_mut().unwrap().remove(*fork);
            }
        }
    }
    let store: Arc<dyn FullProvider> = Arc::new(Storage::open(dir).unwrap());
    let genesis_hash = init_genesis(&*store, &serde_json::to_vec(&genesis).unwrap()).unwrap().hash;
    let tree = BlockTree::new(store.clone(), 2).unwrap();
    let provider = BlockchainProvider::new(store, tree.canonical_in_memory_state().clone());
    let pool = Arc::new(TxPool::default());
    let (handle, thread) = EngineService::spawn(tree, pool.clone(), Arc::default(), None).unwrap();
    let ctx = configure(RpcContext::new(provider, handle, pool));
    (ctx, genesis_hash, thread)
}

/// A public port's module serving `modules` over a fresh store of the dev chain, and the
/// engine thread.
pub fn public(
    dir: &std::path::Path,
    modules: &RpcModuleSelection,
) -> (Engine, std::thread::JoinHandle<()>) {
    let (ctx, _, thread) = context_with(dir, &[], |ctx| ctx);
    (public_module(Arc::new(ctx), modules), thread)
}

/// The answer of `method`, or the error code it gave.
pub async fn call(engine: &Engine, method: &str, params: Vec<Value>) -> Result<Value, i32> {
    call_message(engine, method, params).await.map_err(|(code, _)| code)
}

/// The answer of `method`, or the error code and message it gave.
pub async fn call_message(
    engine: &Engine,
    method: &str,
    params: Vec<Value>,
) -> Result<Value, (i32, String)> {
    match engine.call::<_, Value>(method, params).await {
        Ok(v) => Ok(v),
        Err(MethodsError::JsonRpc(e)) => Err((e.code(), e.message().to_string())),
        Err(e) => panic!("{method}: {e:?}"),
    }
}

/// A forkchoice state with head, safe and finalized at `head`.
pub fn state(head: B256) -> Value {
    json!({"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head})
}

/// Payload attributes of the structure `version` takes, at `timestamp`.
pub fn attributes(version: u8, timestamp: u64) -> Value {
    let mut a = json!({
        "timestamp": format!("{timestamp:#x}"),
        "prevRandao": B256::repeat_byte(9),
        "suggestedFeeRecipient": Address::repeat_byte(0xfe),
    });
    if version >= 2 {
        a["withdrawals"] = json!([]);
    }
    if version >= 3 {
        a["parentBeaconBlockRoot"] = json!(B256::repeat_byte(7));
    }
    if version >= 4 {
        a["slotNumber"] = json!(format!("{timestamp:#x}"));
    }
    a
}

/// Builds a block holding the pool's transactions on `head` at `timestamp` and imports it
/// (`newPayload` VALID); its hash.
pub async fn build_block(engine: &Engine, head: B256, timestamp: u64) -> B256 {
    let answer =
        call(engine, "engine_forkchoiceUpdatedV4", vec![state(head), attributes(4, timestamp)])
            .await
            .unwrap();
    let envelope =
        call(engine, "engine_getPayloadV6", vec![answer["payloadId"].clone()]).await.unwrap();
    let payload = envelope["executionPayload"].clone();
    let hash: B256 = serde_json::from_value(payload["blockHash"].clone()).unwrap();
    let params = vec![
        payload,
        json!([]),
        json!(B256::repeat_byte(7)),
        envelope["executionRequests"].clone(),
    ];
    let status = call(engine, "engine_newPayloadV5", params).await.unwrap();
    assert_eq!(status["status"], "VALID", "{status}");
    hash
}

/// POSTs `body` (any bytes) to `addr` over plain HTTP/1.1 and returns the answer's status line
/// and body.
pub fn post_bytes(addr: std::net::SocketAddr, body: &[u8]) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response.lines().next().unwrap_or_default().to_string();
    (status, response.split("\r\n\r\n").nth(1).unwrap_or_default().to_string())
}

/// The dev chain's first funded key (testing/dev-genesis.json) and its address.
pub const KEY: &str = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
/// The address of [`KEY`].
pub const SENDER: &str = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

/// An EIP-1559 transfer of `value` wei to `to` from [`KEY`] on the dev chain (id 1337), with
/// `nonce`, `gas_limit` and a fee cap of `max_fee_per_gas` wei: its EIP-2718 bytes as hex and
/// its hash.
pub fn signed_transfer(
    nonce: u64,
    to: Address,
    value: u64,
    gas_limit: u64,
    max_fee_per_gas: u128,
) -> (String, B256) {
    use alloy_primitives::{TxKind, U256};
    sign(alloy_consensus::TxEip1559 {
        chain_id: 1337,
        nonce,
        gas_limit,
        max_fee_per_gas,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(to),
        value: U256::from(value),
        ..Default::default()
    })
}

/// An EIP-1559 transfer of 1 wei from [`KEY`] with `nonce`, paying a tip of `tip` wei under a
/// fee cap of 100 gwei: its EIP-2718 bytes as hex and its hash.
pub fn signed_tip(nonce: u64, tip: u128) -> (String, B256) {
    sign(alloy_consensus::TxEip1559 {
        chain_id: 1337,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 100_000_000_000,
        max_priority_fee_per_gas: tip,
        to: alloy_primitives::TxKind::Call(Address::repeat_byte(0x42)),
        value: alloy_primitives::U256::from(1),
        ..Default::default()
    })
}

/// An EIP-1559 contract creation running `init_code` from [`KEY`] on the dev chain, with
/// `nonce`, 1M gas and a fee cap of 10 gwei: its EIP-2718 bytes as hex and its hash.
pub fn signed_create(nonce: u64, init_code: Vec<u8>) -> (String, B256) {
    signed_create_with_gas(nonce, init_code, 1_000_000)
}

/// [`signed_create`] with a gas limit of `gas_limit`.
pub fn signed_create_with_gas(nonce: u64, init_code: Vec<u8>, gas_limit: u64) -> (String, B256) {
    sign(alloy_consensus::TxEip1559 {
        chain_id: 1337,
        nonce,
        gas_limit,
        max_fee_per_gas: 10_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: alloy_primitives::TxKind::Create,
        input: init_code.into(),
        ..Default::default()
    })
}

/// `tx` signed with [`KEY`]: its EIP-2718 bytes as hex and its hash.
fn sign(tx: alloy_consensus::TxEip1559) -> (String, B256) {
    use alloy_consensus::{SignableTransaction, TxEnvelope};
    use alloy_eips::eip2718::Encodable2718;
    use alloy_primitives::{Signature, U256};
    let key =
        k256::ecdsa::SigningKey::from_slice(&alloy_primitives::hex::decode(KEY).unwrap()).unwrap();
    let (sig, recid) = key.sign_prehash_recoverable(tx.signature_hash().as_slice()).unwrap();
    let signature = Signature::new(
        U256::from_be_slice(&sig.r().to_bytes()),
        U256::from_be_slice(&sig.s().to_bytes()),
        recid.is_y_odd(),
    );
    let envelope = TxEnvelope::Eip1559(tx.into_signed(signature));
    let hash = *envelope.tx_hash();
    (format!("0x{}", alloy_primitives::hex::encode(envelope.encoded_2718())), hash)
}
