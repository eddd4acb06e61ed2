//! `init`: a geth-format genesis file becomes block 0 of the store.
//!
//! Flow: the file is parsed ([`alloy_genesis::Genesis`]); its allocation is walked once in the
//! state trie's key order (accounts by keccak256 of the address, each account's slots by
//! keccak256 of the slot), each storage trie and the account trie built as the walk goes by a
//! [`TrieBuilder`]; the walk writes the flat state and the finished trie nodes in batches, so
//! that an allocation of millions of accounts and tens of millions of slots needs the parsed
//! file and the open branches in memory, not the whole trie. Block 0 and the head pointer are
//! written last, in one logged batch, after the state is ingested as table files (a bulk load,
//! `HashedStateWriter::ingest_hashed`): a store whose init died has no head, and `init` starts
//! again.

use crate::error::ImportError;
use alloy_consensus::{BlockBody, Header, TxEnvelope};
use alloy_genesis::{Genesis, GenesisAccount};
use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use alloy_trie::Nibbles;
use gigagas_primitives::{header::genesis_header, ChainSpec};
use gigagas_storage_api::{AccountRecord, BlockHashReader, FullProvider, HashedBatch, RawBlock};
use gigagas_trie::{EncodedNode, TrieBuilder};
use rayon::prelude::*;
use revm::primitives::KECCAK_EMPTY;
use std::{cell::RefCell, collections::BTreeMap};

/// META key under which the genesis file is kept without its allocation (the datadir's chain
/// specification).
pub const GENESIS_KEY: &[u8] = b"genesis";
/// META key holding keccak256 of the genesis file `init` wrote: the same file given again is
/// recognised without walking its allocation.
pub const GENESIS_FILE_HASH_KEY: &[u8] = b"genesis-file-hash";

/// Flat-state entries and trie nodes written per batch (one table file per family) while the
/// allocation is walked.
const ENTRIES_PER_WRITE: usize = 1_000_000;

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
/// header (the state root from the alloc) and hash.
#[derive(Debug)]
pub struct GenesisBlock {
    /// The chain specification of the file's `config`.
    pub chain: ChainSpec,
    /// The genesis header.
    pub header: Header,
    /// Its hash.
    pub hash: B256,
    /// Accounts in the alloc.
    pub accounts: usize,
    /// Storage slots in the alloc (non-zero).
    pub slots: usize,
}

/// Parses a geth-format genesis file and its `config`.
fn parse(genesis_json: &[u8]) -> Result<(Genesis, ChainSpec), ImportError> {
    let genesis: Genesis = serde_json::from_slice(genesis_json).map_err(ImportError::Genesis)?;
    let chain = ChainSpec::from_genesis_config(&genesis.config)?;
    Ok((genesis, chain))
}

/// Parses `genesis_json` (geth format: `config`, `alloc`, header fields) and computes its
/// block 0 in memory (the state trie's nodes are hashed and dropped).
///
/// # Errors
/// [`ImportError::Genesis`] for a file that does not parse, or the chain specification's error
/// for a `config` it refuses.
pub fn genesis_block(genesis_json: &[u8]) -> Result<GenesisBlock, ImportError> {
    let (genesis, chain) = parse(genesis_json)?;
    let state = walk_alloc(&genesis.alloc, None)?;
    let header = genesis_header(&genesis, &chain, state.root);
    let hash = header.hash_slow();
    Ok(GenesisBlock { chain, header, hash, accounts: genesis.alloc.len(), slots: state.slots })
}

/// Parses `genesis_json` ([`genesis_block`]), writes its state, the trie nodes of its state
/// root and block 0 to `store`, and keeps the file (without its allocation) as the datadir's
/// chain specification. Idempotent for the same genesis.
///
/// # Errors
/// [`ImportError::Genesis`] for a file that does not parse; [`ImportError::OtherChain`] when the
/// store already holds a different chain; [`ImportError::Storage`] on a write failure.
pub fn init_genesis(
    store: &dyn FullProvider,
    genesis_json: &[u8],
) -> Result<GenesisInit, ImportError> {
    let (mut genesis, chain) = parse(genesis_json)?;
    let file_hash = keccak256(genesis_json);
    if let Some((number, head)) = store.best_block()? {
        if store.meta(GENESIS_FILE_HASH_KEY)?.as_deref() == Some(file_hash.as_slice()) {
            if let Some(header) = store.header_by_number(0)? {
                return Ok(GenesisInit {
                    hash: header.hash_slow(),
                    header,
                    accounts: genesis.alloc.len(),
                    slots: genesis.alloc.values().map(nonzero_slots).sum(),
                    already_initialized: true,
                });
            }
        }
        let state = walk_alloc(&genesis.alloc, None)?;
        let header = genesis_header(&genesis, &chain, state.root);
        let hash = header.hash_slow();
        return if BlockHashReader::block_hash(store, 0)? == Some(hash) {
            Ok(GenesisInit {
                hash,
                header,
                accounts: genesis.alloc.len(),
                slots: state.slots,
                already_initialized: true,
            })
        } else {
            Err(ImportError::OtherChain { head: number, head_hash: head, genesis: hash })
        };
    }
    // The walk's entries are ingested as table files (in key order for the flat state, which
    // lands in the last level; the trie nodes are merged after).
    store.set_bulk_load(true)?;
    let walked = walk_alloc(&genesis.alloc, Some(store));
    store.set_bulk_load(false)?;
    let state = walked?;
    let header = genesis_header(&genesis, &chain, state.root);
    let hash = header.hash_slow();
    let accounts = genesis.alloc.len();
    let codes: Vec<(B256, &[u8])> = state.codes.iter().map(|(h, c)| (*h, &c[..])).collect();
    genesis.alloc = BTreeMap::new();
    let config = serde_json::to_vec(&genesis).map_err(ImportError::Genesis)?;
    let body = BlockBody::<TxEnvelope> {
        transactions: Vec::new(),
        ommers: Vec::new(),
        withdrawals: header.withdrawals_root.map(|_| Default::default()),
    };
    let (header_rlp, body_rlp) = (alloy_rlp::encode(&header), alloy_rlp::encode(&body));
    let receipts_rlp = alloy_rlp::encode(Vec::<alloy_consensus::ReceiptEnvelope>::new());
    store.write_hashed(&HashedBatch {
        codes: &codes,
        meta_put: &[
            (GENESIS_KEY.to_vec(), config),
            (GENESIS_FILE_HASH_KEY.to_vec(), file_hash.to_vec()),
        ],
        blocks: &[RawBlock {
            number: header.number,
            hash,
            header: &header_rlp,
            body: Some(&body_rlp),
            receipts: Some(&receipts_rlp),
            tx_hashes: &[],
        }],
        head: Some((header.number, hash)),
        ..Default::default()
    })?;
    Ok(GenesisInit { hash, header, accounts, slots: state.slots, already_initialized: false })
}

/// The non-zero slots of an alloc entry.
fn nonzero_slots(account: &GenesisAccount) -> usize {
    account.storage.iter().flatten().filter(|(_, v)| !v.is_zero()).count()
}

/// What [`walk_alloc`] found.
struct AllocState {
    /// The state root.
    root: B256,
    /// Non-zero slots.
    slots: usize,
    /// Distinct codes (hash, bytes).
    codes: BTreeMap<B256, Bytes>,
}

/// Entries waiting to be written: flat state and trie nodes.
#[derive(Default)]
struct Pending {
    accounts: Vec<(B256, AccountRecord)>,
    storage: Vec<(B256, B256, U256)>,
    nodes: Vec<EncodedNode>,
}

impl Pending {
    /// Writes what is pending when there is enough of it, or anything at all when `force`.
    fn write(&mut self, store: &dyn FullProvider, force: bool) -> Result<(), ImportError> {
        let len = self.accounts.len() + self.storage.len() + self.nodes.len();
        if len >= ENTRIES_PER_WRITE || (force && len > 0) {
            store.ingest_hashed(&HashedBatch {
                accounts: &self.accounts,
                storage: &self.storage,
                trie_nodes: &self.nodes,
                ..Default::default()
            })?;
            self.accounts.clear();
            self.storage.clear();
            self.nodes.clear();
        }
        Ok(())
    }
}

/// Walks `alloc` in the state trie's key order and builds its tries; with a store, writes the
/// flat state (by hashed keys) and every trie node as it goes, ingested.
fn walk_alloc(
    alloc: &BTreeMap<Address, GenesisAccount>,
    store: Option<&dyn FullProvider>,
) -> Result<AllocState, ImportError> {
    let pending = RefCell::new(Pending::default());
    let sink = |hash: B256, rlp: &[u8]| {
        if store.is_some() {
            pending.borrow_mut().nodes.push((hash, Bytes::copy_from_slice(rlp)));
        }
    };
    let mut hashed: Vec<(B256, &Address, &GenesisAccount)> =
        alloc.par_iter().map(|(address, account)| (keccak256(address), address, account)).collect();
    hashed.par_sort_unstable_by_key(|(hash, ..)| *hash);
    let mut account_trie = TrieBuilder::new(&sink);
    let (mut slots, mut codes) = (0, BTreeMap::new());
    for (hashed_address, _, account) in hashed {
        let code = account.code.clone().unwrap_or_default();
        let code_hash = if code.is_empty() { KECCAK_EMPTY } else { keccak256(&code) };
        if !code.is_empty() {
            codes.insert(code_hash, code);
        }
        let mut storage: Vec<(B256, U256)> = account
            .storage
            .iter()
            .flatten()
            .filter(|(_, v)| !v.is_zero())
            .map(|(k, v)| (*k, U256::from_be_bytes(v.0)))
            .collect();
        storage.par_iter_mut().for_each(|(k, _)| *k = keccak256(*k));
        storage.par_sort_unstable_by_key(|(k, _)| *k);
        slots += storage.len();
        let storage_root = if storage.is_empty() {
            alloy_trie::EMPTY_ROOT_HASH
        } else {
            let mut trie = TrieBuilder::new(&sink);
            for (i, (slot, value)) in storage.iter().enumerate() {
                trie.add_leaf(Nibbles::unpack(slot), &alloy_rlp::encode(value))
                    .map_err(|source| ImportError::GenesisTrie { which: "storage", source })?;
                if let Some(store) = store {
                    let mut pending = pending.borrow_mut();
                    pending.storage.push((hashed_address, *slot, *value));
                    if i % 1024 == 0 {
                        pending.write(store, false)?;
                    }
                }
            }
            trie.finish()
        };
        let record = AccountRecord {
            nonce: account.nonce.unwrap_or(0),
            balance: account.balance,
            code_hash,
        };
        let leaf = alloy_rlp::encode(alloy_trie::TrieAccount {
            nonce: record.nonce,
            balance: record.balance,
            storage_root,
            code_hash,
        });
        account_trie
            .add_leaf(Nibbles::unpack(hashed_address), &leaf)
            .map_err(|source| ImportError::GenesisTrie { which: "account", source })?;
        if let Some(store) = store {
            let mut pending = pending.borrow_mut();
            pending.accounts.push((hashed_address, record));
            pending.write(store, false)?;
        }
    }
    let root = account_trie.finish();
    if let Some(store) = store {
        pending.borrow_mut().write(store, true)?;
    }
    Ok(AllocState { root, slots, codes })
}

/// The chain specification of a datadir initialized by [`init_genesis`].
///
/// # Errors
/// [`ImportError::NotInitialized`] when the store holds no genesis file.
pub fn stored_chain_spec(store: &dyn FullProvider) -> Result<ChainSpec, ImportError> {
    let json = store.meta(GENESIS_KEY)?.ok_or(ImportError::NotInitialized)?;
    let genesis: alloy_genesis::Genesis =
        serde_json::from_slice(&json).map_err(ImportError::Genesis)?;
    Ok(ChainSpec::from_genesis_config(&genesis.config)?)
}
