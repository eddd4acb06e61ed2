//! `init`: a geth-format genesis file becomes block 0 of the store.

use crate::error::ImportError;
use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_primitives::{keccak256, B256, U256};
use gigagas_primitives::{header::genesis_header, ChainSpec};
use gigagas_storage_api::{AccountRecord, BlockCommit, BlockHashReader, FullProvider};
use gigagas_trie::{update_state_root, AccountUpdate, ProofNodes};
use revm::primitives::KECCAK_EMPTY;

/// META key under which the genesis file is kept (the datadir's chain specification).
pub const GENESIS_KEY: &[u8] = b"genesis";

/// What [`init_genesis`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenesisInit {
    /// Genesis block hash.
    pub hash: B256,
    /// Genesis header (its `state_root` computed from the alloc).
    pub header: Header,
    /// Accounts in the alloc.
    pub accounts: usize,
    /// Storage slots in the alloc (non-zero).
    pub slots: usize,
    /// `true` when the store already held this genesis (nothing written).
    pub already_initialized: bool,
}

/// Block 0 of a geth-format genesis file, computed without a store: its chain specification,
/// header (the state root from the alloc) and hash, and the state to write.
#[derive(Debug)]
pub struct GenesisBlock {
    /// The chain specification of the file's `config`.
    pub chain: ChainSpec,
    /// The genesis header.
    pub header: Header,
    /// Its hash.
    pub hash: B256,
    accounts: Vec<(alloy_primitives::Address, Option<AccountRecord>)>,
    storage: Vec<(alloy_primitives::Address, U256, U256)>,
    codes: Vec<(B256, alloy_primitives::Bytes)>,
    trie_nodes: gigagas_trie::StateRootUpdate,
}

/// Parses `genesis_json` (geth format: `config`, `alloc`, header fields) and computes its
/// block 0.
///
/// # Errors
/// [`ImportError::Genesis`] for a file that does not parse or a state root that cannot be
/// computed, or the chain specification's error for a `config` it refuses.
pub fn genesis_block(genesis_json: &[u8]) -> Result<GenesisBlock, ImportError> {
    let genesis: alloy_genesis::Genesis =
        serde_json::from_slice(genesis_json).map_err(|e| ImportError::Genesis(e.to_string()))?;
    let chain = ChainSpec::from_genesis_config(&genesis.config)?;
    let mut updates = Vec::with_capacity(genesis.alloc.len());
    let mut accounts = Vec::with_capacity(genesis.alloc.len());
    let mut storage = Vec::new();
    let mut codes = Vec::new();
    for (address, account) in &genesis.alloc {
        let code = account.code.clone().unwrap_or_default();
        let code_hash = if code.is_empty() { KECCAK_EMPTY } else { keccak256(&code) };
        if !code.is_empty() {
            codes.push((code_hash, code));
        }
        let nonce = account.nonce.unwrap_or(0);
        let slots: Vec<(U256, U256)> = account
            .storage
            .iter()
            .flatten()
            .map(|(k, v)| (U256::from_be_bytes(k.0), U256::from_be_bytes(v.0)))
            .filter(|(_, v)| !v.is_zero())
            .collect();
        storage.extend(slots.iter().map(|(k, v)| (*address, *k, *v)));
        accounts
            .push((*address, Some(AccountRecord { nonce, balance: account.balance, code_hash })));
        updates.push(AccountUpdate {
            address: *address,
            info: Some((nonce, account.balance, code_hash)),
            wiped: false,
            storage: slots,
        });
    }
    let root = update_state_root(alloy_trie::EMPTY_ROOT_HASH, &updates, &ProofNodes::default())
        .map_err(|e| ImportError::Genesis(format!("state root: {e}")))?;
    let header = genesis_header(&genesis, &chain, root.root);
    let hash = header.hash_slow();
    Ok(GenesisBlock { chain, header, hash, accounts, storage, codes, trie_nodes: root })
}

/// Parses `genesis_json` ([`genesis_block`]), writes its state, the trie nodes of its state
/// root and block 0 to `store`, and keeps the file as the datadir's chain specification.
/// Idempotent for the same genesis.
///
/// # Errors
/// [`ImportError::Genesis`] for a file that does not parse; [`ImportError::OtherChain`] when the
/// store already holds a different chain; [`ImportError::Storage`] on a write failure.
pub fn init_genesis(
    store: &dyn FullProvider,
    genesis_json: &[u8],
) -> Result<GenesisInit, ImportError> {
    let block = genesis_block(genesis_json)?;
    let GenesisBlock { header, hash, .. } = &block;
    let result = |already_initialized| GenesisInit {
        hash: *hash,
        header: header.clone(),
        accounts: block.accounts.len(),
        slots: block.storage.len(),
        already_initialized,
    };
    if let Some((number, head)) = store.best_block()? {
        let stored = BlockHashReader::block_hash(store, header.number)?;
        return if stored == Some(*hash) {
            Ok(result(true))
        } else {
            Err(ImportError::OtherChain { head: number, head_hash: head, genesis: *hash })
        };
    }
    store.put_meta(GENESIS_KEY, &without_alloc(genesis_json))?;
    let body = BlockBody::<TxEnvelope> {
        transactions: Vec::new(),
        ommers: Vec::new(),
        withdrawals: header.withdrawals_root.map(|_| Default::default()),
    };
    let (header_rlp, body_rlp) = (alloy_rlp::encode(header), alloy_rlp::encode(&body));
    let receipts_rlp = alloy_rlp::encode(Vec::<alloy_consensus::ReceiptEnvelope>::new());
    let codes: Vec<(B256, &[u8])> = block.codes.iter().map(|(h, c)| (*h, &c[..])).collect();
    store.commit_block(&BlockCommit {
        number: header.number,
        hash: *hash,
        header: &header_rlp,
        body: &body_rlp,
        receipts: &receipts_rlp,
        bal: None,
        wiped: &[],
        accounts: &block.accounts,
        storage: &block.storage,
        codes: &codes,
        trie_nodes: &block.trie_nodes.nodes,
        tx_hashes: &[],
        senders: &[],
    })?;
    // Into the table files now: a large allocation left in the write-ahead log would be
    // replayed into memory at every open until the memtables are flushed.
    store.flush()?;
    Ok(result(false))
}

/// The genesis file without its `alloc` (what the store keeps: the chain's configuration and
/// header fields; the allocation, which may hold millions of entries, is in the state).
fn without_alloc(genesis_json: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(genesis_json) {
        Ok(mut genesis) => {
            genesis.insert("alloc".into(), serde_json::Value::Object(Default::default()));
            serde_json::to_vec(&genesis).unwrap_or_else(|_| genesis_json.to_vec())
        }
        Err(_) => genesis_json.to_vec(),
    }
}

/// The chain specification of a datadir initialized by [`init_genesis`].
///
/// # Errors
/// [`ImportError::NotInitialized`] when the store holds no genesis file.
pub fn stored_chain_spec(store: &dyn FullProvider) -> Result<ChainSpec, ImportError> {
    let json = store.meta(GENESIS_KEY)?.ok_or(ImportError::NotInitialized)?;
    let genesis: alloy_genesis::Genesis =
        serde_json::from_slice(&json).map_err(|e| ImportError::Genesis(e.to_string()))?;
    Ok(ChainSpec::from_genesis_config(&genesis.config)?)
}
