//! `eth_config` (EIP-7910): the fork configuration in force at the head, the next scheduled
//! one and the last one — activation time, blob schedule, chain id, EIP-2124 fork id, the
//! precompiles and the system contracts of each.

use crate::{convert::StoredBlock, RpcContext, RpcError};
use alloy_evm::eth::spec::EthExecutorSpec;
use alloy_hardforks::EthereumHardforks;
use alloy_primitives::{address, Address, U64};
use serde_json::{json, Map, Value};

/// EIP-7910's names of the precompiles, by address.
const PRECOMPILES: [(&str, Address); 18] = [
    ("ECREC", address!("0x0000000000000000000000000000000000000001")),
    ("SHA256", address!("0x0000000000000000000000000000000000000002")),
    ("RIPEMD160", address!("0x0000000000000000000000000000000000000003")),
    ("ID", address!("0x0000000000000000000000000000000000000004")),
    ("MODEXP", address!("0x0000000000000000000000000000000000000005")),
    ("BN254_ADD", address!("0x0000000000000000000000000000000000000006")),
    ("BN254_MUL", address!("0x0000000000000000000000000000000000000007")),
    ("BN254_PAIRING", address!("0x0000000000000000000000000000000000000008")),
    ("BLAKE2F", address!("0x0000000000000000000000000000000000000009")),
    ("KZG_POINT_EVALUATION", address!("0x000000000000000000000000000000000000000a")),
    ("BLS12_G1ADD", address!("0x000000000000000000000000000000000000000b")),
    ("BLS12_G1MSM", address!("0x000000000000000000000000000000000000000c")),
    ("BLS12_G2ADD", address!("0x000000000000000000000000000000000000000d")),
    ("BLS12_G2MSM", address!("0x000000000000000000000000000000000000000e")),
    ("BLS12_PAIRING_CHECK", address!("0x000000000000000000000000000000000000000f")),
    ("BLS12_MAP_FP_TO_G1", address!("0x0000000000000000000000000000000000000010")),
    ("BLS12_MAP_FP2_TO_G2", address!("0x0000000000000000000000000000000000000011")),
    ("P256VERIFY", address!("0x0000000000000000000000000000000000000100")),
];

/// The configuration of the fork active at `(number, time)`, `activation` being its
/// activation time (0 for a fork activated by block number or at genesis).
fn fork_config(
    ctx: &RpcContext,
    genesis: &StoredBlock,
    number: u64,
    time: u64,
    activation: u64,
) -> Value {
    let hash = ctx.chain.fork_id(genesis.hash, genesis.header.timestamp, number, time).hash;
    let spec = ctx.chain.spec_id(number, time);
    let available =
        revm::precompile::Precompiles::new(revm::precompile::PrecompileSpecId::from_spec_id(spec));
    let precompiles: Map<String, Value> = PRECOMPILES
        .iter()
        .filter(|(_, a)| available.contains(a))
        .map(|(name, a)| ((*name).to_string(), json!(a)))
        .collect();
    let mut system = Map::new();
    if ctx.chain.is_cancun(time) {
        system.insert(
            "BEACON_ROOTS_ADDRESS".into(),
            json!(alloy_eips::eip4788::BEACON_ROOTS_ADDRESS),
        );
    }
    if ctx.chain.is_prague(time) {
        system.insert(
            "HISTORY_STORAGE_ADDRESS".into(),
            json!(alloy_eips::eip2935::HISTORY_STORAGE_ADDRESS),
        );
        system.insert(
            "WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS".into(),
            json!(alloy_eips::eip7002::WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS),
        );
        system.insert(
            "CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS".into(),
            json!(alloy_eips::eip7251::CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS),
        );
        if let Some(deposit) = ctx.chain.eth.deposit_contract_address() {
            system.insert("DEPOSIT_CONTRACT_ADDRESS".into(), json!(deposit));
        }
    }
    if ctx.chain.eth.is_amsterdam_active_at_timestamp(time) {
        // EIP-8282's builder request contracts (geth's `ActiveSystemContracts`).
        system.insert(
            "BUILDER_DEPOSIT_CONTRACT_ADDRESS".into(),
            json!(alloy_eips::eip8282::BUILDER_DEPOSIT_CONTRACT_ADDRESS),
        );
        system.insert(
            "BUILDER_EXIT_CONTRACT_ADDRESS".into(),
            json!(alloy_eips::eip8282::BUILDER_EXIT_CONTRACT_ADDRESS),
        );
    }
    let blobs = ctx.chain.blob_params(time).map(|p| {
        json!({
            "target": p.target_blob_count,
            "max": p.max_blob_count,
            "baseFeeUpdateFraction": p.update_fraction,
        })
    });
    json!({
        "activationTime": activation,
        "blobSchedule": blobs,
        "chainId": U64::from(ctx.chain.chain_id),
        "forkId": format!("0x{}", alloy_primitives::hex::encode(hash.0)),
        "precompiles": precompiles,
        "systemContracts": system,
    })
}

/// The `eth_config` answer: `current` at the head, `next` (the first fork scheduled after the
/// head's timestamp) and `last` (the last scheduled one), `null` when there is none.
pub(crate) fn eth_config(ctx: &RpcContext) -> Result<Value, RpcError> {
    let head = ctx.forkchoice().head.0;
    let header = StoredBlock::load(ctx, head)?
        .ok_or_else(|| RpcError::NotFound(format!("block {head}")))?
        .header
        .clone();
    let genesis = StoredBlock::load(ctx, 0)?.ok_or_else(|| RpcError::NotFound("genesis".into()))?;
    let (_, times) = ctx.chain.fork_activations(genesis.header.timestamp);
    let now = header.timestamp;
    let current_activation = times.iter().rev().find(|t| **t <= now).copied().unwrap_or(0);
    let current = fork_config(ctx, &genesis, header.number, now, current_activation);
    let future: Vec<u64> = times.iter().copied().filter(|t| *t > now).collect();
    let at = |t: Option<&u64>| {
        t.map_or(Value::Null, |t| fork_config(ctx, &genesis, header.number, *t, *t))
    };
    Ok(json!({"current": current, "next": at(future.first()), "last": at(future.last())}))
}
