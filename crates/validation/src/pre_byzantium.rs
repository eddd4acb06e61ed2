//! Receipts before Byzantium: each carries the state root after its transaction
//! (Yellow Paper §4.3.1, replaced by a status code in EIP-658). The executors keep only the
//! block's net effect, so the intermediate roots are rebuilt: the parallel executor, driven by
//! the block's BAL, reports which accounts each transaction created or removed; with the BAL's
//! writes at each index that gives the state changes of every transaction, applied one after
//! the other to the parent's trie.

use crate::error::ImportError;
use alloy_consensus::{Eip658Value, ReceiptEnvelope};
use alloy_primitives::{map::HashMap, Address, Bytes, B256, U256};
use gigagas_bal::{
    writes::{IndexedWrites, Item, Value},
    BalCodes, BlockAccessList,
};
use gigagas_executor::{AccountExistence, ExecutionError};
use gigagas_state::PreState;
use gigagas_trie::{update_state_root, AccountUpdate, NodeSource};
use revm::{primitives::KECCAK_EMPTY, DatabaseRef};

/// The state changes of each transaction of a pre-Byzantium block, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Intermediate {
    pub(crate) per_tx: Vec<Vec<AccountUpdate>>,
}

/// Per transaction `i`, the updates of BAL index `i + 1` and of the existence changes the
/// parallel executor saw there, each account with its full (nonce, balance, code hash) as it
/// is after that transaction (unchanged fields from `pre_state` or earlier transactions).
///
/// # Errors
/// [`ExecutionError::State`] when `pre_state` cannot answer an account read (block `number`).
pub(crate) fn per_tx_updates(
    number: u64,
    bal: &BlockAccessList,
    existence: &[(u64, Address, AccountExistence)],
    transactions: usize,
    pre_state: &PreState,
) -> Result<Intermediate, ExecutionError> {
    let mut current: HashMap<Address, Option<(u64, U256, B256)>> = HashMap::default();
    let info = |address: Address,
                current: &mut HashMap<Address, Option<(u64, U256, B256)>>|
     -> Result<Option<(u64, U256, B256)>, ExecutionError> {
        if let Some(v) = current.get(&address) {
            return Ok(*v);
        }
        let v = pre_state
            .basic_ref(address)
            .map_err(|source| ExecutionError::State { block: number, source })?
            .map(|a| (a.nonce, a.balance, a.code_hash));
        current.insert(address, v);
        Ok(v)
    };
    // The BAL's writes grouped by index (linear in its size); code hashed from the bytes.
    let writes = IndexedWrites::from_alloy(bal, &BalCodes::default(), transactions);
    let mut existence = existence.iter().peekable();
    let mut per_tx = Vec::with_capacity(transactions);
    for index in 1..=transactions as u64 {
        let mut updates: HashMap<Address, AccountUpdate> = HashMap::default();
        // Sorted by account, then balance, nonce, code, slots.
        for group in writes.at(index).chunk_by(|x, y| x.address == y.address) {
            let address = group[0].address;
            let (mut n, mut b, mut h) =
                info(address, &mut current)?.unwrap_or((0, U256::ZERO, KECCAK_EMPTY));
            let mut storage = Vec::new();
            for w in group {
                match (w.item, w.value) {
                    (Item::Balance, Value::Word(v)) => b = v,
                    (Item::Nonce, Value::Nonce(v)) => n = v,
                    (Item::Code, Value::CodeHash(v)) => h = v,
                    (Item::Storage(slot), Value::Word(v)) => storage.push((slot, v)),
                    _ => {}
                }
            }
            current.insert(address, Some((n, b, h)));
            updates.insert(
                address,
                AccountUpdate { address, info: Some((n, b, h)), wiped: false, storage },
            );
        }
        // `existence` is sorted by index.
        while existence.next_if(|(k, _, _)| *k < index).is_some() {}
        while let Some((_, address, change)) = existence.next_if(|(k, _, _)| *k == index) {
            let now = info(*address, &mut current)?;
            let empty = |v: (u64, U256, B256)| v.0 == 0 && v.1.is_zero() && v.2 == KECCAK_EMPTY;
            let after = match change {
                AccountExistence::Created => Some(now.unwrap_or((0, U256::ZERO, KECCAK_EMPTY))),
                AccountExistence::Removed if now.is_some_and(empty) || now.is_none() => None,
                AccountExistence::Removed => now,
            };
            current.insert(*address, after);
            let u = updates.entry(*address).or_insert_with(|| AccountUpdate {
                address: *address,
                info: after,
                wiped: false,
                storage: Vec::new(),
            });
            u.info = after;
            if after.is_none() {
                u.wiped = true;
                u.storage.clear();
            }
        }
        let mut updates: Vec<AccountUpdate> = updates.into_values().collect();
        updates.sort_by_key(|u| u.address);
        per_tx.push(updates);
    }
    Ok(Intermediate { per_tx })
}

/// Trie nodes of `base` with the nodes of the intermediate roots computed so far on top.
struct Layered<'a, S> {
    base: &'a S,
    nodes: &'a HashMap<B256, Bytes>,
}

impl<S: NodeSource> NodeSource for Layered<'_, S> {
    fn node(&self, hash: &B256) -> Result<Option<Bytes>, gigagas_trie::NodeSourceError> {
        match self.nodes.get(hash) {
            Some(n) => Ok(Some(n.clone())),
            None => self.base.node(hash),
        }
    }
}

/// Sets each receipt's outcome to the state root after its transaction, computed from
/// `parent_root` with `intermediate`'s updates over the nodes of `src`.
pub(crate) fn with_intermediate_roots<S: NodeSource + Sync>(
    number: u64,
    parent_root: B256,
    intermediate: &Intermediate,
    receipts: &mut [ReceiptEnvelope],
    src: &S,
) -> Result<(), ImportError> {
    let mut nodes: HashMap<B256, Bytes> = HashMap::default();
    let mut root = parent_root;
    for (updates, receipt) in intermediate.per_tx.iter().zip(receipts.iter_mut()) {
        let update = update_state_root(root, updates, &Layered { base: src, nodes: &nodes })
            .map_err(|source| ImportError::Trie { number, source })?;
        root = update.root;
        nodes.extend(update.nodes);
        match receipt {
            ReceiptEnvelope::Legacy(r)
            | ReceiptEnvelope::Eip2930(r)
            | ReceiptEnvelope::Eip1559(r)
            | ReceiptEnvelope::Eip4844(r)
            | ReceiptEnvelope::Eip7702(r) => r.receipt.status = Eip658Value::PostState(root),
        }
    }
    Ok(())
}
