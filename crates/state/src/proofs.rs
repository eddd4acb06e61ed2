//! Loader for `../shared/data/mainnet-proofs/block-<number>.json.gz` (recorded RPC answers of
//! risc0/zeth, see the data README): the block and its parent, `eth_getProof` answers for every
//! account the block touches at the parent (verifiable against the parent's `stateRoot`) and at
//! the block itself (against the block's `stateRoot`), and the touched accounts' code.

use crate::mainnet::{block_from_rpc, malformed, open, parse_json, LoadError, RpcBlock};
use alloy_primitives::{keccak256, map::HashMap, Address, Bytes, B256, U256};
use gigagas_primitives::BlockInput;
use revm::state::Bytecode;
use serde::Deserialize;
use std::{collections::BTreeMap, io::Read, path::Path};

#[derive(Deserialize)]
struct BlockKey {
    block_no: u64,
}

#[derive(Deserialize)]
struct AccountKey {
    block_no: u64,
    #[allow(dead_code)]
    address: Address,
}

#[derive(Deserialize)]
struct ProofFile {
    full_blocks: Vec<(BlockKey, RpcBlock)>,
    proofs: Vec<(BlockKey, alloy_rpc_types_eth::EIP1186AccountProofResponse)>,
    code: Vec<(AccountKey, Bytes)>,
}

/// One account as `eth_getProof` answered for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenAccount {
    /// The account.
    pub address: Address,
    /// Balance (wei).
    pub balance: U256,
    /// Nonce.
    pub nonce: u64,
    /// keccak256 of its code.
    pub code_hash: B256,
    /// Root of its storage trie.
    pub storage_hash: B256,
    /// The proven slots as (slot, value).
    pub storage: Vec<(U256, U256)>,
}

/// A block of the proofs data set.
#[derive(Debug, Clone)]
pub struct ProofBlock {
    /// The block.
    pub block: BlockInput,
    /// Its parent (the pre-state root is `parent.header.state_root`).
    pub parent: BlockInput,
    /// The accounts proven at the parent.
    pub pre_accounts: Vec<ProvenAccount>,
    /// The accounts proven at the block.
    pub post_accounts: Vec<ProvenAccount>,
    /// Every node of the account and storage proofs at the parent (RLP).
    pub pre_nodes: Vec<Bytes>,
    /// Every node of the account and storage proofs at the block (RLP): they hold the siblings
    /// that a deletion collapses into.
    pub post_nodes: Vec<Bytes>,
    /// The touched accounts' code, by code hash (keccak-checked).
    pub contracts: HashMap<B256, Bytecode>,
    /// The hashes of the block's ancestors (number → hash): the parent, its parent hash, and
    /// every earlier block of the file that the parent hashes link to — what `BLOCKHASH` reads.
    pub block_hashes: BTreeMap<u64, B256>,
}

/// Reads one `block-<number>.json.gz`. The file may hold more blocks than the block and its
/// parent (uncles, ancestors) and proofs at other blocks: the block is the one numbered as the
/// file (else the highest block proven), its parent the block whose hash is its `parentHash`,
/// and the rest is ignored ([`select_blocks`]).
///
/// # Errors
/// [`LoadError`] naming the file and the field: not gzip, not the expected JSON, the block or its
/// parent missing, a code whose hash is not the one proven.
pub fn load_proof_block(path: &Path) -> Result<ProofBlock, LoadError> {
    let gz = open(path)?;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut json)
        .map_err(|e| malformed(path, ".", format!("not gzip: {e}")))?;
    let file: ProofFile = parse_json(path, &json)?;
    let number = target_number(path, &file)?;
    let parent_no = number.checked_sub(1).ok_or_else(|| {
        malformed(path, "full_blocks", "block 0 has no parent to prove against".to_string())
    })?;
    // Every block of the file by hash, for the ancestors' hashes.
    let links: HashMap<B256, (u64, B256)> = file
        .full_blocks
        .iter()
        .map(|(_, b)| (b.header.hash, (b.header.number, b.header.parent_hash)))
        .collect();
    let (block, parent) = select_blocks(path, file.full_blocks, number, &file.proofs)?;
    let (block, parent) = (block_from_rpc(path, block)?, block_from_rpc(path, parent)?);
    let block_hashes = ancestor_hashes(&links, parent.number(), parent.hash);
    let (mut pre_accounts, mut post_accounts) = (Vec::new(), Vec::new());
    let (mut pre_nodes, mut post_nodes) = (Vec::new(), Vec::new());
    for (k, p) in file.proofs {
        let (accounts, nodes) = match k.block_no {
            n if n == parent_no => (&mut pre_accounts, &mut pre_nodes),
            n if n == number => (&mut post_accounts, &mut post_nodes),
            // Proofs at other blocks (ancestors, say) are not needed.
            _ => continue,
        };
        nodes.extend(p.account_proof);
        let mut storage = Vec::with_capacity(p.storage_proof.len());
        for s in p.storage_proof {
            nodes.extend(s.proof);
            storage.push((U256::from_be_bytes(s.key.as_b256().0), s.value));
        }
        accounts.push(ProvenAccount {
            address: p.address,
            balance: p.balance,
            nonce: p.nonce,
            code_hash: p.code_hash,
            storage_hash: p.storage_hash,
            storage,
        });
    }
    let mut contracts = HashMap::default();
    for (k, code) in file.code {
        if k.block_no == parent_no && !code.is_empty() {
            contracts.insert(keccak256(&code), Bytecode::new_raw(code));
        }
    }
    for a in &pre_accounts {
        let empty = a.code_hash == revm::primitives::KECCAK_EMPTY || a.code_hash == B256::ZERO;
        if !empty && !contracts.contains_key(&a.code_hash) {
            return Err(malformed(
                path,
                format!("code.{}", a.address),
                format!("no code hashing to the proven code hash {}", a.code_hash),
            ));
        }
    }
    Ok(ProofBlock {
        block,
        parent,
        pre_accounts,
        post_accounts,
        pre_nodes,
        post_nodes,
        contracts,
        block_hashes,
    })
}

/// The hashes of block `number` (hash `hash`) and its ancestors that `links` (hash → number,
/// parent hash) reaches by parent hashes, plus the parent hash of the earliest one reached.
fn ancestor_hashes(
    links: &HashMap<B256, (u64, B256)>,
    number: u64,
    hash: B256,
) -> BTreeMap<u64, B256> {
    let mut out = BTreeMap::new();
    let (mut number, mut hash) = (number, hash);
    loop {
        out.insert(number, hash);
        let Some(&(n, parent)) = links.get(&hash) else { break };
        if n != number || number == 0 {
            break;
        }
        (number, hash) = (number - 1, parent);
    }
    out
}

/// The block a proofs file is about: the number in its name (`block-<number>.json.gz`), else
/// the highest block its proofs were taken at.
fn target_number(path: &Path, file: &ProofFile) -> Result<u64, LoadError> {
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("block-"))
        .and_then(|n| n.split('.').next())
        .and_then(|n| n.parse::<u64>().ok());
    named.or_else(|| file.proofs.iter().map(|(k, _)| k.block_no).max()).ok_or_else(|| {
        malformed(path, "proofs", "no proofs, and no block number in the file name".to_string())
    })
}

/// The block numbered `number` and its parent out of `blocks`: the parent is the block
/// numbered `number - 1` whose hash is the block's `parentHash`. Where several blocks carry
/// the number (an uncle beside the block), the one whose state root is the root the proofs at
/// `number` were taken against is chosen.
///
/// # Errors
/// [`LoadError::Malformed`] when no block has the number, its parent is absent, or two
/// candidates remain.
fn select_blocks(
    path: &Path,
    blocks: Vec<(BlockKey, RpcBlock)>,
    number: u64,
    proofs: &[(BlockKey, alloy_rpc_types_eth::EIP1186AccountProofResponse)],
) -> Result<(RpcBlock, RpcBlock), LoadError> {
    let (mut at_number, mut at_parent): (Vec<RpcBlock>, Vec<RpcBlock>) = (Vec::new(), Vec::new());
    for (k, b) in blocks {
        if k.block_no == number {
            at_number.push(b);
        } else if k.block_no + 1 == number {
            at_parent.push(b);
        }
    }
    let found = at_number.len();
    let mut candidates: Vec<(RpcBlock, RpcBlock)> = at_number
        .into_iter()
        .filter_map(|b| {
            let parent = at_parent.iter().find(|p| p.header.hash == b.header.parent_hash)?;
            Some((b, parent.clone()))
        })
        .collect();
    if candidates.len() > 1 {
        // The root the proofs at `number` were taken against: the hash of their first node.
        let root = proofs
            .iter()
            .find(|(k, p)| k.block_no == number && !p.account_proof.is_empty())
            .map(|(_, p)| keccak256(&p.account_proof[0]));
        candidates.retain(|(b, _)| Some(b.header.state_root) == root);
    }
    match candidates.len() {
        1 => Ok(candidates.pop().expect("one candidate")),
        0 if found == 0 => {
            Err(malformed(path, "full_blocks", format!("block {number} is not in the file")))
        }
        0 => Err(malformed(
            path,
            "full_blocks",
            format!("the parent of block {number} (block {}) is not in the file", number - 1),
        )),
        n => Err(malformed(
            path,
            "full_blocks",
            format!(
                "{n} blocks numbered {number} extend a parent in the file and match the proofs"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_follow_parent_hashes_through_the_file() {
        let h = |n: u8| B256::repeat_byte(n);
        // Blocks 10 ← 9 ← 8 in the file, an uncle at 9, block 7 absent.
        let links: HashMap<B256, (u64, B256)> =
            [(h(10), (10, h(9))), (h(9), (9, h(8))), (h(0x99), (9, h(8))), (h(8), (8, h(7)))]
                .into_iter()
                .collect();
        let got = ancestor_hashes(&links, 10, h(10));
        let want: BTreeMap<u64, B256> = [(10, h(10)), (9, h(9)), (8, h(8)), (7, h(7))].into();
        assert_eq!(got, want);
        // A parent outside the file: itself only.
        assert_eq!(ancestor_hashes(&links, 5, h(5)), [(5, h(5))].into());
    }
}
