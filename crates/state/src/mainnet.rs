//! Loader for the mainnet data set (`../shared/data/mainnet`, see its README):
//! `blocks/<number>/block.json` (`eth_getBlockByNumber` with full transactions),
//! `blocks/<number>/pre_state.json`, `bytecodes.json.gz` and `block_hashes.json`.

use crate::{PreState, StateError};
use alloy_consensus::TxEnvelope;
use alloy_primitives::{keccak256, map::HashMap, Address, Bytes, B256, U256};
use gigagas_primitives::BlockInput;
use rayon::prelude::*;
use revm::state::Bytecode;
use serde::{de::DeserializeOwned, Deserialize};
use std::{
    collections::BTreeMap,
    fs::File,
    io::{BufReader, Read},
    path::{Path, PathBuf},
    sync::Arc,
};

/// A data file could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The data folder does not exist.
    #[error(
        "data folder {0} not found: the mainnet blocks live in ../shared/data/mainnet beside the \
         project (see ../shared/data/README.md); pass --data DIR to point elsewhere"
    )]
    MissingDir(PathBuf),
    /// A file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not the JSON it should be; `field` is the path inside the document
    /// (e.g. `transactions[3].gas`).
    #[error("{path}: field `{field}`: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// JSON path of the offending field, `.` for the document itself.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

/// One block of the data set with the state it executes against.
#[derive(Debug, Clone)]
pub struct MainnetBlock {
    /// The block (header, signed transactions, withdrawals).
    pub block: BlockInput,
    /// Accounts and slots the block touches, as they were before the block.
    pub pre_state: Arc<PreState>,
}

#[derive(Deserialize)]
struct PreAccountJson {
    balance: U256,
    nonce: u64,
    #[serde(default)]
    code_hash: Option<B256>,
    #[serde(default)]
    storage: BTreeMap<U256, U256>,
}

pub(crate) fn open(path: &Path) -> Result<Vec<u8>, LoadError> {
    let mut buf = Vec::new();
    File::open(path)
        .and_then(|f| BufReader::new(f).read_to_end(&mut buf))
        .map_err(|source| LoadError::Io { path: path.to_owned(), source })?;
    Ok(buf)
}

/// Parses `bytes` as JSON of type `T`, naming the failing field on error.
///
/// # Errors
/// [`LoadError::Malformed`] with the JSON path of the field that failed.
pub fn parse_json<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, LoadError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| LoadError::Malformed {
        path: path.to_owned(),
        field: e.path().to_string(),
        reason: e.into_inner().to_string(),
    })
}

pub(crate) fn malformed(
    path: &Path,
    field: impl Into<String>,
    reason: impl Into<String>,
) -> LoadError {
    LoadError::Malformed { path: path.to_owned(), field: field.into(), reason: reason.into() }
}

/// Reads `bytecodes.json.gz` (`{code_hash: "0x<code>"}`), checking each code's keccak256.
///
/// # Errors
/// [`LoadError`] naming the file, and the code hash whose bytes do not hash to it.
pub fn load_bytecodes(path: &Path) -> Result<HashMap<B256, Bytecode>, LoadError> {
    let gz = open(path)?;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut json)
        .map_err(|e| malformed(path, ".", format!("not gzip: {e}")))?;
    let codes: BTreeMap<B256, Bytes> = parse_json(path, &json)?;
    codes
        .into_par_iter()
        .map(|(hash, code)| {
            if keccak256(&code) != hash {
                return Err(malformed(path, hash.to_string(), "code does not hash to its key"));
            }
            Ok((hash, Bytecode::new_raw(code)))
        })
        .collect()
}

/// Reads `block_hashes.json` (`{number: hash}`).
///
/// # Errors
/// [`LoadError`] naming the file and the key that is not a block number.
pub fn load_block_hashes(path: &Path) -> Result<BTreeMap<u64, B256>, LoadError> {
    let raw: BTreeMap<String, B256> = parse_json(path, &open(path)?)?;
    raw.into_iter()
        .map(|(k, v)| {
            k.parse::<u64>().map(|n| (n, v)).map_err(|e| malformed(path, k, e.to_string()))
        })
        .collect()
}

/// Reads one `block.json` (`eth_getBlockByNumber` with full transactions).
///
/// # Errors
/// [`LoadError`] naming the file and field.
pub fn load_block(path: &Path) -> Result<BlockInput, LoadError> {
    let bytes = open(path)?;
    let rpc: RpcBlock = parse_json(path, &bytes).map_err(|e| match e {
        // The RPC block flattens its header, which hides the failing field: parse the header
        // alone to name it.
        LoadError::Malformed { ref field, .. } if field == "." => {
            parse_json::<alloy_consensus::Header>(path, &bytes).err().unwrap_or(e)
        }
        e => e,
    })?;
    block_from_rpc(path, rpc)
}

/// An `eth_getBlockByNumber` answer with full transactions, as a [`BlockInput`] (each
/// transaction's claimed `from` kept for the sender-recovery check).
pub type RpcBlock = alloy_rpc_types_eth::Block<alloy_rpc_types_eth::Transaction<TxEnvelope>>;

/// Converts an RPC block read from `path` (named in errors).
///
/// # Errors
/// [`LoadError::Malformed`] when the block carries transaction hashes instead of objects.
pub fn block_from_rpc(path: &Path, rpc: RpcBlock) -> Result<BlockInput, LoadError> {
    let Some(txs) = rpc.transactions.as_transactions() else {
        return Err(malformed(
            path,
            "transactions",
            "expected full transaction objects, not hashes",
        ));
    };
    let (transactions, claimed_senders): (Vec<_>, Vec<Address>) =
        txs.iter().map(|tx| (tx.inner.inner().clone(), tx.inner.signer())).unzip();
    Ok(BlockInput {
        hash: rpc.header.hash,
        header: rpc.header.inner,
        transactions,
        claimed_senders,
        withdrawals: rpc.withdrawals,
        ommers: Vec::new(),
    })
}

/// Reads one `pre_state.json` into a [`PreState`] sharing `contracts` and `block_hashes`.
///
/// # Errors
/// [`LoadError`] naming the file and field; an unknown code hash names the account.
pub fn load_pre_state(
    path: &Path,
    contracts: &Arc<HashMap<B256, Bytecode>>,
    block_hashes: &Arc<BTreeMap<u64, B256>>,
) -> Result<PreState, LoadError> {
    let accounts: BTreeMap<Address, PreAccountJson> = parse_json(path, &open(path)?)?;
    let mut state = PreState::new(contracts.clone(), block_hashes.clone());
    for (address, acc) in accounts {
        let storage = acc.storage.into_iter().collect();
        state
            .insert_account(
                address,
                acc.balance,
                acc.nonce,
                acc.code_hash.unwrap_or(revm::primitives::KECCAK_EMPTY),
                storage,
            )
            .map_err(|e: StateError| {
                malformed(path, format!("{address}.code_hash"), e.to_string())
            })?;
    }
    Ok(state)
}

/// Block numbers present under `dir/blocks`, ascending.
///
/// # Errors
/// [`LoadError::MissingDir`] when `dir` does not exist.
pub fn block_numbers(dir: &Path) -> Result<Vec<u64>, LoadError> {
    if !dir.is_dir() {
        return Err(LoadError::MissingDir(dir.to_owned()));
    }
    let blocks = dir.join("blocks");
    let entries = std::fs::read_dir(&blocks)
        .map_err(|source| LoadError::Io { path: blocks.clone(), source })?;
    let mut numbers = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| LoadError::Io { path: blocks.clone(), source })?;
        if let Some(n) = entry.file_name().to_str().and_then(|s| s.parse::<u64>().ok()) {
            numbers.push(n);
        }
    }
    numbers.sort_unstable();
    Ok(numbers)
}

/// Loads every block under `dir` (or only `only`, when given) with its pre-state, in parallel,
/// sorted by block number. `on_block` is called once per loaded block (for a progress bar).
///
/// # Errors
/// The first [`LoadError`], naming file and field.
pub fn load(
    dir: &Path,
    only: Option<&[u64]>,
    on_block: &(dyn Fn() + Sync),
) -> Result<Vec<MainnetBlock>, LoadError> {
    let mut numbers = block_numbers(dir)?;
    if let Some(only) = only {
        numbers.retain(|n| only.contains(n));
    }
    let contracts = Arc::new(load_bytecodes(&dir.join("bytecodes.json.gz"))?);
    let block_hashes = Arc::new(load_block_hashes(&dir.join("block_hashes.json"))?);
    numbers
        .par_iter()
        .map(|n| {
            let base = dir.join("blocks").join(n.to_string());
            let block = load_block(&base.join("block.json"))?;
            let pre_state =
                load_pre_state(&base.join("pre_state.json"), &contracts, &block_hashes)?;
            on_block();
            Ok(MainnetBlock { block, pre_state: Arc::new(pre_state) })
        })
        .collect()
}

/// The default data folder, `../shared/data/mainnet`, resolved against the workspace root
/// (found from this crate's manifest directory) so tests run from any crate.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mainnet")
}
