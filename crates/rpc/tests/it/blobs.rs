//! Blob transactions end to end through the RPC: `eth_sendRawTransaction` of a type-3
//! transaction in its network form with real KZG commitments and proofs (c-kzg, the mainnet
//! trusted setup), refused in the other fork's form or with a wrong proof (the error names the
//! blob), served by `engine_getBlobsV1/V2`, built into a payload within the blob gas, returned
//! in `engine_getPayload`'s blobs bundle and accepted back by `engine_newPayload` — on an
//! Osaka/Amsterdam chain (cell proofs, EIP-7594) and on a Prague chain (one proof per blob).

use crate::common;

use alloy_consensus::{EthereumTxEnvelope, SignableTransaction, TxEip4844, TxEip4844WithSidecar};
use alloy_eips::{
    eip2718::Encodable2718,
    eip4844::{Blob, BlobTransactionSidecar, DATA_GAS_PER_BLOB},
    eip7594::{BlobTransactionSidecarEip7594, BlobTransactionSidecarVariant, CELLS_PER_EXT_BLOB},
};
use alloy_primitives::{Address, Signature, B256, U256};
use common::{attributes, call, call_message, node, state, Engine};
use gigagas_rpc::MAX_BLOB_HASHES;
use k256::ecdsa::SigningKey;
use serde_json::{json, Value};

const KEY: &str = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

/// `n` blobs of distinct data.
fn blobs(n: usize) -> Vec<Blob> {
    gigagas_txpool::blobs::sample_blobs(n)
}

/// A signed blob transaction carrying `sidecar`, in its network form, and its versioned hashes.
fn blob_tx(nonce: u64, sidecar: BlobTransactionSidecarVariant) -> (String, Vec<B256>) {
    let hashes: Vec<B256> = sidecar.versioned_hashes().collect();
    let tx = TxEip4844 {
        chain_id: 1337,
        nonce,
        gas_limit: 21_000,
        max_fee_per_gas: 20_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: Address::repeat_byte(0x42),
        value: U256::ZERO,
        blob_versioned_hashes: hashes.clone(),
        max_fee_per_blob_gas: 10_000_000_000,
        ..Default::default()
    };
    let key = SigningKey::from_slice(&alloy_primitives::hex::decode(KEY).unwrap()).unwrap();
    let (sig, recid) = key.sign_prehash_recoverable(tx.signature_hash().as_slice()).unwrap();
    let signature = Signature::new(
        U256::from_be_slice(&sig.r().to_bytes()),
        U256::from_be_slice(&sig.s().to_bytes()),
        recid.is_y_odd(),
    );
    let signed = TxEip4844WithSidecar::from_tx_and_sidecar(tx, sidecar).into_signed(signature);
    let envelope: EthereumTxEnvelope<TxEip4844WithSidecar<BlobTransactionSidecarVariant>> =
        EthereumTxEnvelope::Eip4844(signed);
    (format!("0x{}", alloy_primitives::hex::encode(envelope.encoded_2718())), hashes)
}

fn kzg() -> &'static alloy_eips::eip4844::env_settings::KzgSettings {
    alloy_eips::eip4844::env_settings::EnvKzgSettings::Default.get()
}

fn cell_sidecar(n: usize) -> BlobTransactionSidecarVariant {
    BlobTransactionSidecarVariant::Eip7594(
        BlobTransactionSidecarEip7594::try_from_blobs_with_settings(blobs(n), kzg()).unwrap(),
    )
}

fn blob_sidecar(n: usize) -> BlobTransactionSidecarVariant {
    BlobTransactionSidecarVariant::Eip4844(
        BlobTransactionSidecar::try_from_blobs_with_settings(blobs(n), kzg()).unwrap(),
    )
}

async fn send(engine: &Engine, raw: &str) -> Result<Value, (i32, String)> {
    call_message(engine, "eth_sendRawTransaction", vec![json!(raw)]).await
}

/// Builds a block at `timestamp` with fcU `fcu` / getPayload `get`, checks its blobs bundle
/// against `hashes`, sends it back with newPayload `new`: VALID. Returns the bundle.
async fn build_and_import(
    engine: &Engine,
    head: B256,
    (fcu, get, new, timestamp): (u8, u8, u8, u64),
    hashes: &[B256],
) -> Value {
    let answer = call(
        engine,
        &format!("engine_forkchoiceUpdatedV{fcu}"),
        vec![state(head), attributes(fcu, timestamp)],
    )
    .await
    .unwrap();
    let envelope =
        call(engine, &format!("engine_getPayloadV{get}"), vec![answer["payloadId"].clone()])
            .await
            .unwrap();
    let payload = envelope["executionPayload"].clone();
    assert_eq!(payload["transactions"].as_array().unwrap().len(), 1, "the blob transaction");
    let blob_gas = hashes.len() as u64 * DATA_GAS_PER_BLOB;
    assert_eq!(payload["blobGasUsed"], json!(format!("{blob_gas:#x}")));
    let bundle = envelope["blobsBundle"].clone();
    let mut params = vec![payload, json!(hashes), json!(B256::repeat_byte(7))];
    if new >= 4 {
        params.push(envelope["executionRequests"].clone());
    }
    let status = call(engine, &format!("engine_newPayloadV{new}"), params).await.unwrap();
    assert_eq!(status["status"], "VALID", "{status}");
    bundle
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blob_transactions_with_cell_proofs_from_osaka() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, genesis, thread) = node(dir.path(), &[]);
    // The other form, then a wrong proof (blob 1 carries blob 0's cell proofs).
    let err = send(&engine, &blob_tx(0, blob_sidecar(2)).0).await.unwrap_err();
    assert!(err.0 == -32000 && err.1.contains("cell proofs"), "{err:?}");
    let BlobTransactionSidecarVariant::Eip7594(mut wrong) = cell_sidecar(2) else { unreachable!() };
    let first: Vec<_> = wrong.cell_proofs[..CELLS_PER_EXT_BLOB].to_vec();
    wrong.cell_proofs[CELLS_PER_EXT_BLOB..].copy_from_slice(&first);
    let err = send(&engine, &blob_tx(0, BlobTransactionSidecarVariant::Eip7594(wrong)).0)
        .await
        .unwrap_err();
    assert!(err.1.contains("blob 1: invalid KZG proof"), "{err:?}");

    let (raw, hashes) = blob_tx(0, cell_sidecar(2));
    send(&engine, &raw).await.unwrap();
    // The next nonce: "pending" counts the pooled transaction, "latest" does not.
    let sender = json!("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
    let nonce =
        |tag: &str| call(&engine, "eth_getTransactionCount", vec![sender.clone(), json!(tag)]);
    assert_eq!(nonce("pending").await.unwrap(), json!("0x1"));
    assert_eq!(nonce("latest").await.unwrap(), json!("0x0"));
    let got = call(&engine, "engine_getBlobsV2", vec![json!(hashes)]).await.unwrap();
    let BlobTransactionSidecarVariant::Eip7594(sidecar) = cell_sidecar(2) else { unreachable!() };
    assert_eq!(got[1]["blob"], json!(sidecar.blobs[1]));
    assert_eq!(got[1]["proofs"].as_array().unwrap().len(), CELLS_PER_EXT_BLOB);
    assert_eq!(got[1]["proofs"][0], json!(sidecar.cell_proofs[CELLS_PER_EXT_BLOB]));
    let one_missing = json!([hashes[0], B256::repeat_byte(1)]);
    assert_eq!(call(&engine, "engine_getBlobsV2", vec![one_missing]).await.unwrap(), Value::Null);
    assert_eq!(call(&engine, "engine_getBlobsV1", vec![json!(hashes)]).await, Err(-38005));
    let many = json!(vec![B256::ZERO; MAX_BLOB_HASHES + 1]);
    assert_eq!(call(&engine, "engine_getBlobsV2", vec![many]).await, Err(-38004));

    let bundle = build_and_import(&engine, genesis, (4, 6, 5, 1), &hashes).await;
    assert_eq!(bundle["blobs"], json!(sidecar.blobs));
    assert_eq!(bundle["commitments"], json!(sidecar.commitments));
    assert_eq!(bundle["proofs"], json!(sidecar.cell_proofs), "cell proofs in V6's bundle");
    drop(engine);
    thread.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blob_transactions_with_blob_proofs_before_osaka() {
    let dir = tempfile::tempdir().unwrap();
    let forks = [("osakaTime", None), ("amsterdamTime", None)];
    let (engine, genesis, thread) = node(dir.path(), &forks);
    let err = send(&engine, &blob_tx(0, cell_sidecar(1)).0).await.unwrap_err();
    assert!(err.1.contains("one KZG proof per blob"), "{err:?}");
    let (raw, hashes) = blob_tx(0, blob_sidecar(3));
    send(&engine, &raw).await.unwrap();
    let BlobTransactionSidecarVariant::Eip4844(sidecar) = blob_sidecar(3) else { unreachable!() };
    let asked = json!([hashes[2], B256::repeat_byte(1)]);
    let got = call(&engine, "engine_getBlobsV1", vec![asked]).await.unwrap();
    assert_eq!(got[0], json!({"blob": sidecar.blobs[2], "proof": sidecar.proofs[2]}));
    assert!(got[1].is_null(), "unknown blob: null in place");
    assert_eq!(call(&engine, "engine_getBlobsV2", vec![json!(hashes)]).await.unwrap(), Value::Null);
    let bundle = build_and_import(&engine, genesis, (3, 4, 4, 1), &hashes).await;
    assert_eq!(bundle["proofs"], json!(sidecar.proofs), "one proof a blob in V4's bundle");
    assert_eq!(bundle["blobs"].as_array().unwrap().len(), 3);
    drop(engine);
    thread.join().unwrap();
}
