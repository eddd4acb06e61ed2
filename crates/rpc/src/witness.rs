//! `debug_executionWitness` (geth's and reth's): a stored block's execution witness in geth's
//! JSON shape (`ExtWitness`): `headers` (geth's header objects, oldest first, the parent
//! last), `codes` and `state` (hex, each sorted bytewise) and `keys` (`null`, as geth). The
//! block is looked up, executed on its parent's state and its witness recorded by
//! `gigagas_validation::record_witness`; the headers are read back from the parent to the
//! oldest block `BLOCKHASH` read.

use crate::{
    blocks::{block_by_hash, block_name, block_of},
    convert::StoredBlock,
    RpcContext, RpcError,
};
use alloy_eips::BlockId;
use alloy_primitives::Bytes;
use gigagas_validation::record_witness;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// geth's `ExtWitness` as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecutionWitnessAnswer {
    /// Ancestors' headers as geth writes a header (every field, absent optional ones `null`,
    /// and `hash`), oldest first, the parent last.
    pub headers: Vec<Value>,
    /// Bytecode the block ran or inspected, sorted.
    pub codes: Vec<Bytes>,
    /// RLP of the trie nodes of the parent's state the block resolves, sorted.
    pub state: Vec<Bytes>,
    /// Preimages of the trie keys: `null`, as geth 1.17 answers.
    pub keys: Option<Vec<Bytes>>,
}

/// The fields of geth's header JSON (`types.Header`'s `MarshalJSON`), in its order.
const GETH_HEADER_FIELDS: [&str; 24] = [
    "parentHash",
    "sha3Uncles",
    "miner",
    "stateRoot",
    "transactionsRoot",
    "receiptsRoot",
    "logsBloom",
    "difficulty",
    "number",
    "gasLimit",
    "gasUsed",
    "timestamp",
    "extraData",
    "mixHash",
    "nonce",
    "baseFeePerGas",
    "withdrawalsRoot",
    "blobGasUsed",
    "excessBlobGas",
    "parentBeaconBlockRoot",
    "requestsHash",
    "blockAccessListHash",
    "slotNumber",
    "hash",
];

/// `block`'s header as geth writes a `types.Header`: its fields only, those a header of its
/// fork lacks as `null`.
fn geth_header(block: &StoredBlock) -> Result<Value, RpcError> {
    let mut rpc = match serde_json::to_value(block.rpc_header())? {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    let mut out = Map::new();
    for field in GETH_HEADER_FIELDS {
        out.insert(field.into(), rpc.remove(field).unwrap_or(Value::Null));
    }
    Ok(Value::Object(out))
}

/// `debug_executionWitness` for block `id` (module doc).
pub(crate) fn execution_witness(
    ctx: &RpcContext,
    id: BlockId,
) -> Result<ExecutionWitnessAnswer, RpcError> {
    let block = block_of(ctx, id)?.ok_or_else(|| RpcError::NotFound(block_name(id)))?;
    let parent = match block.number {
        0 => None,
        _ => block_by_hash(ctx, &block.header.parent_hash)?,
    }
    .ok_or_else(|| RpcError::NotFound(format!("parent of block #{}", block.number)))?;
    let input = block.block_input();
    let senders = match &block.senders {
        Some(senders) => senders.clone(),
        None => input.par_recover(&ctx.chain).map_err(RpcError::from)?,
    };
    crate::state::state_held(ctx, parent.header.number)?;
    let record = record_witness(
        &ctx.chain,
        &input,
        &senders,
        parent.header.state_root,
        ctx.provider.clone(),
    )
    .map_err(|e| RpcError::Witness(Box::new(e)))?;

    // The parent, then its ancestors back to the oldest block BLOCKHASH read.
    let oldest = record.oldest_block_hash.unwrap_or(parent.number).min(parent.number);
    let mut headers = vec![geth_header(&parent)?];
    let mut at = parent;
    while at.number > oldest {
        let next = block_by_hash(ctx, &at.header.parent_hash)?
            .ok_or_else(|| RpcError::NotFound(format!("parent of block #{}", at.number)))?;
        headers.push(geth_header(&next)?);
        at = next;
    }
    headers.reverse();
    Ok(ExecutionWitnessAnswer { headers, codes: record.codes, state: record.state, keys: None })
}
