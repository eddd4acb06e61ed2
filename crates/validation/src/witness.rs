//! Execution witnesses (geth's and reth's `debug_executionWitness`): what a stateless client
//! needs to execute one block and compute its state root without the state — the trie nodes on
//! the path of every account and slot the block reads or writes (and the siblings its deletions
//! collapse into), the bytecode it runs or inspects, and the ancestors' headers its `BLOCKHASH`
//! reads reach.
//!
//! Flow of [`record_witness`]: the block is executed by the sequential reference on its
//! parent's state read through the stored trie, by a [`StateSource`] that notes every account,
//! slot, code and block number asked for; the parent's account trie and the storage tries are
//! then walked to every account and slot noted, and the block's changes applied to them —
//! insertions before deletions, as geth applies them, so that a deletion resolves only the
//! siblings it must — through a [`NodeSource`] that keeps every node it hands out. The root
//! reached must be the block's: the nodes kept are the witness's state.
//!
//! [`execute_witness`] is the stateless side: the block executed from a [`Witness`] alone (its
//! nodes, codes and headers), its header checked against the outcome and its state root
//! recomputed from the witness's nodes.

use crate::block::account_updates;
use alloy_consensus::Header;
use alloy_primitives::{keccak256, map::HashMap, Address, Bytes, B256, U256};
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use gigagas_executor::{
    sequential::{execute_sequential, execute_sequential_without_bal},
    validate_header, ExecutionError,
};
use gigagas_primitives::{BlockInput, ChainSpec, RecoveryError};
use gigagas_state::{PreState, StateError, StateSource};
use gigagas_storage_api::{account_info, trie_account, trie_slot, StateProvider, TrieState};
use gigagas_trie::{
    AccountUpdate, NodeSource, NodeSourceError, ProofNodes, StateRootError, StateTrie, Trie,
    TrieError,
};
use revm::{bytecode::Bytecode, state::AccountInfo};
use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
};

/// A block's execution witness, in geth's consensus form (`ExtWitness`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Witness {
    /// Ancestors' headers, oldest first, the block's parent last (always present: its state
    /// root is the pre-state's). Older ones reach back to the oldest block `BLOCKHASH` read.
    pub headers: Vec<Header>,
    /// Bytecode the block ran or inspected (`EXTCODESIZE`, `EXTCODECOPY`, calls), each once,
    /// sorted bytewise.
    pub codes: Vec<Bytes>,
    /// RLP of the trie nodes (account trie and storage tries together) the block's reads and
    /// its state-root update resolve in the parent's state, each once, sorted bytewise.
    pub state: Vec<Bytes>,
}

/// What [`record_witness`] records, the headers left to the caller (who holds the chain).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WitnessRecord {
    /// As [`Witness::codes`].
    pub codes: Vec<Bytes>,
    /// As [`Witness::state`].
    pub state: Vec<Bytes>,
    /// The lowest block number `BLOCKHASH` read, `None` when it read none: the headers from
    /// it to the parent belong in the witness.
    pub oldest_block_hash: Option<u64>,
}

/// Why a witness could not be recorded or does not validate its block.
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    /// A transaction's signature does not recover.
    #[error("block {block}: {source}")]
    Recovery {
        /// The block.
        block: u64,
        /// The recovery error (naming the transaction).
        source: RecoveryError,
    },
    /// Executing the block failed (naming block, phase and transaction), or its outcome does
    /// not match its header. From [`execute_witness`] a missing account, slot, code or header
    /// of the witness shows here as a state-source failure.
    #[error(transparent)]
    Execution(#[from] ExecutionError),
    /// Walking the parent's trie to an account or slot the block read failed (a missing or
    /// malformed node).
    #[error("block {block}: witness of account {address}{}: {source}", slot.map(|s| format!(" slot {s}")).unwrap_or_default())]
    Trie {
        /// The block.
        block: u64,
        /// The account.
        address: Address,
        /// The slot, for a storage trie.
        slot: Option<U256>,
        /// The trie's error.
        source: Box<TrieError>,
    },
    /// An account leaf of the parent's trie does not decode.
    #[error("block {block}: account {address}: leaf does not decode: {reason}")]
    BadAccount {
        /// The block.
        block: u64,
        /// The account.
        address: Address,
        /// The decoder's message.
        reason: String,
    },
    /// Applying the block's changes to the parent's trie failed.
    #[error("block {block}: state root: {source}")]
    StateRoot {
        /// The block.
        block: u64,
        /// The state-root error (naming the account and node).
        source: Box<StateRootError>,
    },
    /// The state root computed is not the header's.
    #[error("block {block}: state root {computed} computed, header has {header}")]
    RootMismatch {
        /// The block.
        block: u64,
        /// The root reached.
        computed: B256,
        /// The header's `stateRoot`.
        header: B256,
    },
    /// The witness's headers do not lead to the block: the last is not its parent, or one is
    /// not the parent of the next.
    #[error("block {block}: witness header #{number} ({hash}) is not the parent of the next")]
    HeaderChain {
        /// The block.
        block: u64,
        /// The header's number.
        number: u64,
        /// The header's hash.
        hash: B256,
    },
    /// The witness holds no header (the parent's is required).
    #[error("block {block}: the witness holds no header")]
    NoHeaders {
        /// The block.
        block: u64,
    },
}

/// A [`StateSource`] that notes every key asked of it.
#[derive(Debug)]
struct Noting<S> {
    inner: S,
    accounts: Mutex<BTreeSet<Address>>,
    slots: Mutex<BTreeSet<(Address, U256)>>,
    codes: Mutex<BTreeMap<B256, Bytes>>,
    block_numbers: Mutex<BTreeSet<u64>>,
}

impl<S> Noting<S> {
    fn new(inner: S) -> Self {
        Self {
            inner,
            accounts: Mutex::default(),
            slots: Mutex::default(),
            codes: Mutex::default(),
            block_numbers: Mutex::default(),
        }
    }
}

fn note<T: Ord>(set: &Mutex<BTreeSet<T>>, key: T) {
    set.lock().unwrap_or_else(|e| e.into_inner()).insert(key);
}

impl<S: StateSource> StateSource for Noting<S> {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        note(&self.accounts, *address);
        self.inner.account(address)
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        note(&self.accounts, *address);
        note(&self.slots, (*address, *slot));
        self.inner.storage(address, slot)
    }

    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        let code = self.inner.code(hash)?;
        if let Some(code) = &code {
            let bytes = code.original_bytes();
            if !bytes.is_empty() {
                self.codes.lock().unwrap_or_else(|e| e.into_inner()).insert(*hash, bytes);
            }
        }
        Ok(code)
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        note(&self.block_numbers, number);
        self.inner.block_hash(number)
    }

    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        note(&self.accounts, *address);
        self.inner.has_storage(address)
    }
}

/// A [`NodeSource`] that keeps every node it hands out.
struct Keeping<'a, S: ?Sized> {
    inner: &'a S,
    kept: Mutex<HashMap<B256, Bytes>>,
}

impl<S: NodeSource + ?Sized> NodeSource for Keeping<'_, S> {
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, NodeSourceError> {
        // The root update walks again the paths the reads loaded: not read twice.
        if let Some(node) = self.kept.lock().unwrap_or_else(|e| e.into_inner()).get(hash) {
            return Ok(Some(node.clone()));
        }
        let node = self.inner.node(hash)?;
        if let Some(node) = &node {
            self.kept.lock().unwrap_or_else(|e| e.into_inner()).insert(*hash, node.clone());
        }
        Ok(node)
    }
}

/// Records the witness of `block` (whose transactions' senders are `senders`) on the state
/// under `parent_root` in `store`: executes it, walks the parent's tries to every account and
/// slot it read and applies its changes, insertions first (module doc).
///
/// # Errors
/// [`WitnessError::Execution`] when the block does not execute; [`WitnessError::Trie`],
/// [`WitnessError::BadAccount`], [`WitnessError::StateRoot`] when a node is missing or
/// malformed (the store's fault); [`WitnessError::RootMismatch`] when the changes do not lead
/// to the header's root.
pub fn record_witness(
    chain: &ChainSpec,
    block: &BlockInput,
    senders: &[Address],
    parent_root: B256,
    store: Arc<dyn StateProvider>,
) -> Result<WitnessRecord, WitnessError> {
    let number = block.number();
    let noting = Arc::new(Noting::new(TrieState { store: store.clone(), root: parent_root }));
    let pre_state = PreState::backed(noting.clone());
    let outcome = execute_sequential_without_bal(chain, block, senders, &pre_state)?;

    let keeping = Keeping { inner: &*store, kept: Mutex::default() };
    // The reads: every account's path in the account trie, every slot's in its storage trie.
    let accounts = std::mem::take(&mut *noting.accounts.lock().unwrap_or_else(|e| e.into_inner()));
    let slots = std::mem::take(&mut *noting.slots.lock().unwrap_or_else(|e| e.into_inner()));
    let mut account_trie = Trie::new(parent_root);
    let mut storage_roots = HashMap::<Address, B256>::default();
    for address in &accounts {
        let trie_err = |source| WitnessError::Trie {
            block: number,
            address: *address,
            slot: None,
            source: Box::new(source),
        };
        let leaf =
            account_trie.get(&Nibbles::unpack(keccak256(address)), &keeping).map_err(trie_err)?;
        if let Some(leaf) = leaf {
            let account: TrieAccount = alloy_rlp::decode_exact(&leaf).map_err(|e| {
                WitnessError::BadAccount { block: number, address: *address, reason: e.to_string() }
            })?;
            storage_roots.insert(*address, account.storage_root);
        }
    }
    let mut storage_tries = HashMap::<Address, Trie>::default();
    for (address, slot) in &slots {
        let Some(root) = storage_roots.get(address).filter(|r| **r != EMPTY_ROOT_HASH) else {
            continue;
        };
        let trie = storage_tries.entry(*address).or_insert_with(|| Trie::new(*root));
        let key = Nibbles::unpack(keccak256(B256::from(*slot)));
        trie.get(&key, &keeping).map_err(|source| WitnessError::Trie {
            block: number,
            address: *address,
            slot: Some(*slot),
            source: Box::new(source),
        })?;
    }

    // The changes: insertions and updates first, then deletions (of slots and accounts).
    let updates = account_updates(&outcome);
    header_root(block, parent_root, &updates, &keeping)?;

    let mut state: Vec<Bytes> =
        keeping.kept.into_inner().unwrap_or_else(|e| e.into_inner()).into_values().collect();
    state.sort_unstable();
    let mut codes: Vec<Bytes> =
        noting.codes.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
    codes.sort_unstable();
    let oldest_block_hash =
        noting.block_numbers.lock().unwrap_or_else(|e| e.into_inner()).first().copied();
    Ok(WitnessRecord { codes, state, oldest_block_hash })
}

/// The root after `updates` on the state under `parent_root`, applied in two passes as geth
/// applies a block's changes: every account's new values with its non-zero slots, then the
/// zeroed slots and the deleted accounts. A deletion resolves a sibling only when its branch
/// is left with one child after the insertions, so a witness recorded this way (ours or
/// geth's) holds every node this order needs.
///
/// # Errors
/// [`StateRootError`] when a node is missing or malformed.
pub fn insertions_first<S: NodeSource + Sync>(
    parent_root: B256,
    updates: &[AccountUpdate],
    src: &S,
) -> Result<B256, StateRootError> {
    let (insertions, deletions) = split_deletions(updates);
    let mut trie = StateTrie::new(parent_root);
    let mut root = trie.update(&insertions, src)?.root;
    if !deletions.is_empty() {
        root = trie.update(&deletions, src)?.root;
    }
    Ok(root)
}

/// [`insertions_first`] of `block`'s `updates` on the state under `parent_root`: the root, which
/// must be the header's.
///
/// # Errors
/// [`WitnessError::StateRoot`] when a node is missing or malformed;
/// [`WitnessError::RootMismatch`].
fn header_root<S: NodeSource + Sync>(
    block: &BlockInput,
    parent_root: B256,
    updates: &[AccountUpdate],
    src: &S,
) -> Result<B256, WitnessError> {
    let number = block.number();
    let root = insertions_first(parent_root, updates, src)
        .map_err(|source| WitnessError::StateRoot { block: number, source: Box::new(source) })?;
    if root != block.header.state_root {
        return Err(WitnessError::RootMismatch {
            block: number,
            computed: root,
            header: block.header.state_root,
        });
    }
    Ok(root)
}

/// `updates` as two passes: every account's new values with its non-zero slots, then its
/// zeroed slots and the accounts deleted.
fn split_deletions(updates: &[AccountUpdate]) -> (Vec<AccountUpdate>, Vec<AccountUpdate>) {
    let mut insertions = Vec::with_capacity(updates.len());
    let mut deletions = Vec::new();
    for u in updates {
        if u.info.is_none() {
            deletions.push(u.clone());
            continue;
        }
        let (zeroed, set): (Vec<_>, Vec<_>) = u.storage.iter().partition(|(_, v)| v.is_zero());
        insertions.push(AccountUpdate { storage: set, ..u.clone() });
        if !zeroed.is_empty() {
            deletions.push(AccountUpdate { wiped: false, storage: zeroed, ..u.clone() });
        }
    }
    (insertions, deletions)
}

/// The state a [`Witness`] proves: accounts and slots read through its nodes from the
/// parent's root, codes and block hashes from its lists.
#[derive(Debug)]
struct WitnessState {
    root: B256,
    nodes: ProofNodes,
    codes: HashMap<B256, Bytecode>,
    block_hashes: BTreeMap<u64, B256>,
}

impl StateSource for WitnessState {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        Ok(trie_account(self.root, address, &self.nodes)?.map(account_info))
    }

    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        match trie_account(self.root, address, &self.nodes)? {
            Some(account) => trie_slot(address, account.storage_root, slot, &self.nodes),
            None => Ok(U256::ZERO),
        }
    }

    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        Ok(self.codes.get(hash).cloned())
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        Ok(self.block_hashes.get(&number).copied())
    }

    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        Ok(trie_account(self.root, address, &self.nodes)?
            .is_some_and(|a| a.storage_root != EMPTY_ROOT_HASH))
    }
}

/// Validates `block` statelessly from `witness` alone: its headers must chain to the block's
/// parent; the block executes on the state the parent's root and the witness's nodes prove
/// (codes and `BLOCKHASH` from its lists); the outcome must match the header (gas, receipts,
/// bloom, requests, BAL hash); its changes applied to the witness's nodes must give the
/// header's state root. Returns that root.
///
/// # Errors
/// [`WitnessError::NoHeaders`] / [`WitnessError::HeaderChain`] for headers that do not lead
/// to the block; [`WitnessError::Execution`] when the block fails or reads what the witness
/// lacks (a state-source error naming the account and slot); [`WitnessError::StateRoot`] when
/// the root's update needs a node the witness lacks; [`WitnessError::RootMismatch`].
pub fn execute_witness(
    chain: &ChainSpec,
    block: &BlockInput,
    witness: &Witness,
) -> Result<B256, WitnessError> {
    let number = block.number();
    let parent = witness.headers.last().ok_or(WitnessError::NoHeaders { block: number })?;
    let mut block_hashes = BTreeMap::new();
    let mut child_parent = block.header.parent_hash;
    for header in witness.headers.iter().rev() {
        let hash = header.hash_slow();
        if hash != child_parent {
            return Err(WitnessError::HeaderChain { block: number, number: header.number, hash });
        }
        block_hashes.insert(header.number, hash);
        child_parent = header.parent_hash;
    }
    let mut nodes = ProofNodes::default();
    nodes.extend(witness.state.iter().cloned());
    let codes =
        witness.codes.iter().map(|c| (keccak256(c), Bytecode::new_raw(c.clone()))).collect();
    let source = Arc::new(WitnessState { root: parent.state_root, nodes, codes, block_hashes });
    let senders = block
        .par_recover(chain)
        .map_err(|source| WitnessError::Recovery { block: number, source })?;
    let pre_state = PreState::backed(source.clone());
    let outcome = execute_sequential(chain, block, &senders, &pre_state)?;
    validate_header(chain, block, &outcome, outcome.bal.as_deref().unwrap_or_default())?;
    header_root(block, parent.state_root, &account_updates(&outcome), &source.nodes)
}
