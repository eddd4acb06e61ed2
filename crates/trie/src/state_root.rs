//! The state root after a block: a post-state diff applied to the account trie and to the
//! changed accounts' storage tries.
//!
//! Keys are keccak256(address) in the account trie and keccak256(slot) (the slot as a 32-byte
//! big-endian word) in a storage trie; values are the RLP of `[nonce, balance, storageRoot,
//! codeHash]` and the RLP of the non-zero slot value; a zero value or a deleted account removes
//! the key (Yellow Paper §4.1, appendix D). The storage tries of different accounts are
//! independent and are updated in parallel (rayon), a storage trie with many changed slots
//! ([`PARALLEL_STORAGE_SLOTS`]) its subtrees in parallel too; the account trie after them, its
//! 16 subtrees below the root branch read, updated and hashed in parallel ([`Trie::get_many`],
//! [`Trie::apply_many`], [`Trie::root_with_nodes`]).

use crate::mpt::{EncodedNode, NodeSource, Trie, TrieError};
use alloy_primitives::{keccak256, Address, B256, U256};
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH};
use rayon::prelude::*;

/// Changed slots from which one account's storage trie is itself updated in parallel, its 16
/// subtrees below the root branch at once ([`Trie::apply_many`]): a block whose writes gather
/// in one contract (a token's balances) would otherwise wait for that trie on one thread.
pub const PARALLEL_STORAGE_SLOTS: usize = 64;

/// One account's change in a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountUpdate {
    /// The account.
    pub address: Address,
    /// Its (nonce, balance in wei, code hash) after the block; `None` when the block deleted it
    /// (EIP-161 clearing or SELFDESTRUCT).
    pub info: Option<(u64, U256, B256)>,
    /// Whether the block destroyed the account's storage before writing `storage` (a
    /// self-destructed account re-created in the same block).
    pub wiped: bool,
    /// Slots whose value changed, as (slot, value after the block); zero deletes the slot.
    pub storage: Vec<(U256, U256)>,
}

/// Why a state root could not be computed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StateRootError {
    /// The account trie lacks a node.
    #[error("account trie, account {address}: {source}")]
    Account {
        /// The account being updated.
        address: Address,
        /// The trie's error.
        source: TrieError,
    },
    /// An account's storage trie lacks a node.
    #[error("storage trie of {address}: {source}")]
    Storage {
        /// The account whose storage trie failed.
        address: Address,
        /// The trie's error.
        source: TrieError,
    },
    /// An account leaf does not decode as `[nonce, balance, storageRoot, codeHash]`.
    #[error("account {address}: leaf does not decode: {reason}")]
    BadAccount {
        /// The account.
        address: Address,
        /// The decoder's message.
        reason: String,
    },
}

/// The outcome of [`update_state_root`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRootUpdate {
    /// The new state root.
    pub root: B256,
    /// Every account's storage root after the block, for the accounts updated (sorted by
    /// address).
    pub storage_roots: Vec<(Address, B256)>,
    /// The nodes of the updated paths, as (keccak256, RLP), account trie and storage tries
    /// together: what a node store adds so that the next block resolves from it.
    pub nodes: Vec<EncodedNode>,
}

/// Applies `updates` to the state whose root is `parent_root`, resolving nodes from `src`, and
/// returns the new root. The account trie's nodes on every updated account's path must be in
/// `src` (and, for deletions, the remaining siblings), as must the storage trie nodes on the
/// path of every changed slot.
///
/// # Errors
/// [`StateRootError`] naming the account (and the missing node's path and hash).
pub fn update_state_root<S: NodeSource + Sync>(
    parent_root: B256,
    updates: &[AccountUpdate],
    src: &S,
) -> Result<StateRootUpdate, StateRootError> {
    let mut accounts = Trie::new(parent_root);
    // The accounts' current leaves (for their storage roots), the account trie's subtrees
    // searched in parallel.
    let keys: Vec<Nibbles> =
        updates.iter().map(|u| Nibbles::unpack(keccak256(u.address))).collect();
    let leaves = accounts.get_many(&keys, src).map_err(|source| {
        let address = failing_account(updates, &keys, &source);
        StateRootError::Account { address, source }
    })?;
    let mut current = Vec::with_capacity(updates.len());
    for ((u, key), leaf) in updates.iter().zip(keys).zip(leaves) {
        let account = leaf
            .map(|rlp| {
                alloy_rlp::decode_exact::<TrieAccount>(&rlp).map_err(|e| {
                    StateRootError::BadAccount { address: u.address, reason: e.to_string() }
                })
            })
            .transpose()?;
        current.push((key, account));
    }
    // Storage tries in parallel.
    let storage: Vec<(B256, Vec<EncodedNode>)> = updates
        .par_iter()
        .zip(&current)
        .map(|(u, (_, account))| {
            let old = match account {
                Some(a) if !u.wiped => a.storage_root,
                _ => EMPTY_ROOT_HASH,
            };
            if u.info.is_none() || u.storage.is_empty() {
                return Ok((old, Vec::new()));
            }
            let mut trie = Trie::new(old);
            let storage_err = |source| StateRootError::Storage { address: u.address, source };
            // (key, Some(value)) sets, (key, None) deletes (a zero value).
            let ops: Vec<(Nibbles, Option<Vec<u8>>)> = u
                .storage
                .iter()
                .map(|(slot, value)| {
                    let key = Nibbles::unpack(keccak256(B256::from(*slot)));
                    (key, (!value.is_zero()).then(|| alloy_rlp::encode(value)))
                })
                .collect();
            if ops.len() >= PARALLEL_STORAGE_SLOTS {
                trie.apply_many(ops, src).map_err(storage_err)?;
            } else {
                for (key, value) in ops {
                    match value {
                        Some(v) => trie.insert(&key, v, src),
                        None => trie.remove(&key, src).map(|_| ()),
                    }
                    .map_err(storage_err)?;
                }
            }
            Ok(trie.root_with_nodes())
        })
        .collect::<Result<_, StateRootError>>()?;
    let mut nodes = Vec::new();
    let storage_roots: Vec<B256> = storage
        .into_iter()
        .map(|(root, n)| {
            nodes.extend(n);
            root
        })
        .collect();
    // The account trie: its subtrees updated in parallel.
    let ops: Vec<(Nibbles, Option<Vec<u8>>)> = updates
        .iter()
        .zip(&current)
        .zip(&storage_roots)
        .map(|((u, (key, _)), storage_root)| {
            let leaf = u.info.map(|(nonce, balance, code_hash)| {
                alloy_rlp::encode(TrieAccount::new(nonce, balance, *storage_root, code_hash))
            });
            (*key, leaf)
        })
        .collect();
    let keys: Vec<Nibbles> = ops.iter().map(|(k, _)| *k).collect();
    accounts.apply_many(ops, src).map_err(|source| {
        let address = failing_account(updates, &keys, &source);
        StateRootError::Account { address, source }
    })?;
    let mut storage_roots: Vec<(Address, B256)> =
        updates.iter().map(|u| u.address).zip(storage_roots).collect();
    storage_roots.sort_unstable();
    let (root, account_nodes) = accounts.root_with_nodes();
    nodes.extend(account_nodes);
    Ok(StateRootUpdate { root, storage_roots, nodes })
}

/// The account whose key's path holds the node `error` names (the first whose key starts with
/// the error's path); the first account when the error names no path.
fn failing_account(updates: &[AccountUpdate], keys: &[Nibbles], error: &TrieError) -> Address {
    let path = match error {
        TrieError::MissingNode { path, .. } => Some(path.as_str()),
        _ => None,
    };
    updates
        .iter()
        .zip(keys)
        .find(|(_, k)| path.is_some_and(|p| crate::mpt::hex(k).starts_with(p)))
        .or_else(|| updates.iter().zip(keys).next())
        .map_or(Address::ZERO, |(u, _)| u.address)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpt::ProofNodes;
    use alloy_trie::root::{state_root_unhashed, storage_root_unhashed};
    use std::collections::BTreeMap;

    type World = BTreeMap<Address, (u64, U256, B256, BTreeMap<U256, U256>)>;

    fn oracle(world: &World) -> B256 {
        state_root_unhashed(world.iter().map(|(a, (n, b, c, s))| {
            let sr = storage_root_unhashed(s.iter().map(|(k, v)| (B256::from(*k), *v)));
            (*a, TrieAccount::new(*n, *b, sr, *c))
        }))
    }

    /// Builds `world` through `update_state_root` from the empty root, keeping every node,
    /// then applies a second diff (changes, a slot cleared, an account deleted, a new one) on
    /// top of the stored nodes and compares both roots with alloy-trie's full rebuild.
    #[test]
    fn incremental_root_equals_full_rebuild() {
        let mut world: World = BTreeMap::new();
        for i in 1..=40u8 {
            let storage = (0..(i as u64 % 7)).map(|k| (U256::from(k), U256::from(k + 1))).collect();
            world.insert(Address::repeat_byte(i), (i as u64, U256::from(i), B256::ZERO, storage));
        }
        let updates: Vec<AccountUpdate> = world
            .iter()
            .map(|(a, (n, b, c, s))| AccountUpdate {
                address: *a,
                info: Some((*n, *b, *c)),
                wiped: false,
                storage: s.iter().map(|(k, v)| (*k, *v)).collect(),
            })
            .collect();
        // Collect the nodes by rebuilding each trie in memory (what a node store would hold).
        let none = ProofNodes::default();
        let first = update_state_root(EMPTY_ROOT_HASH, &updates, &none).unwrap();
        assert_eq!(first.root, oracle(&world));

        let mut pool = ProofNodes::default();
        let mut accounts = Trie::new(EMPTY_ROOT_HASH);
        for (a, (n, b, c, s)) in &world {
            let mut st = Trie::new(EMPTY_ROOT_HASH);
            for (k, v) in s {
                st.insert(&Nibbles::unpack(keccak256(B256::from(*k))), alloy_rlp::encode(v), &none)
                    .unwrap();
            }
            let (sr, nodes) = st.root_with_nodes();
            pool.extend(nodes.into_iter().map(|(_, r)| r));
            let acc = TrieAccount::new(*n, *b, sr, *c);
            accounts.insert(&Nibbles::unpack(keccak256(a)), alloy_rlp::encode(acc), &none).unwrap();
        }
        let (root, nodes) = accounts.root_with_nodes();
        assert_eq!(root, first.root);
        pool.extend(nodes.into_iter().map(|(_, r)| r));

        let second = vec![
            AccountUpdate {
                address: Address::repeat_byte(6),
                info: Some((7, U256::from(99), B256::ZERO)),
                wiped: false,
                storage: vec![(U256::from(0), U256::ZERO), (U256::from(9), U256::from(3))],
            },
            AccountUpdate {
                address: Address::repeat_byte(9),
                info: None,
                wiped: false,
                storage: vec![],
            },
            AccountUpdate {
                address: Address::repeat_byte(0xee),
                info: Some((1, U256::from(1), B256::ZERO)),
                wiped: false,
                storage: vec![(U256::from(5), U256::from(5))],
            },
        ];
        let e = world.get_mut(&Address::repeat_byte(6)).unwrap();
        (e.0, e.1) = (7, U256::from(99));
        e.3.remove(&U256::from(0));
        e.3.insert(U256::from(9), U256::from(3));
        world.remove(&Address::repeat_byte(9));
        world.insert(
            Address::repeat_byte(0xee),
            (1, U256::from(1), B256::ZERO, [(U256::from(5), U256::from(5))].into()),
        );
        let next = update_state_root(root, &second, &pool).unwrap();
        assert_eq!(next.root, oracle(&world));
    }
    /// A storage trie with more changed slots than [`PARALLEL_STORAGE_SLOTS`] (updated by its
    /// subtrees in parallel), written, then changed again — slots set, cleared, added — over
    /// the stored nodes: both roots equal alloy-trie's full rebuild.
    #[test]
    fn a_storage_trie_updated_in_parallel_equals_full_rebuild() {
        let big = Address::repeat_byte(0x42);
        let mut slots: BTreeMap<U256, U256> =
            (0..300u64).map(|k| (U256::from(k * 7919), U256::from(k + 1))).collect();
        let mut world: World = BTreeMap::new();
        world.insert(big, (1, U256::from(5), B256::ZERO, slots.clone()));
        world.insert(Address::repeat_byte(1), (1, U256::from(1), B256::ZERO, BTreeMap::new()));
        let to_update = |world: &World, storage: &dyn Fn(&Address) -> Vec<(U256, U256)>| {
            world
                .iter()
                .map(|(a, (n, b, c, _))| AccountUpdate {
                    address: *a,
                    info: Some((*n, *b, *c)),
                    wiped: false,
                    storage: storage(a),
                })
                .collect::<Vec<_>>()
        };
        let first = to_update(&world, &|a| world[a].3.iter().map(|(k, v)| (*k, *v)).collect());
        assert!(first[1].storage.len() >= PARALLEL_STORAGE_SLOTS);
        let mut pool = ProofNodes::default();
        let root1 = update_state_root(EMPTY_ROOT_HASH, &first, &pool).unwrap();
        assert_eq!(root1.root, oracle(&world));
        pool.extend(root1.nodes.into_iter().map(|(_, rlp)| rlp));

        // Every third slot cleared, every other one rewritten, 50 new ones.
        let mut change: Vec<(U256, U256)> = Vec::new();
        for (i, k) in slots.keys().copied().collect::<Vec<_>>().into_iter().enumerate() {
            match i % 3 {
                0 => change.push((k, U256::ZERO)),
                1 => change.push((k, U256::from(i as u64 * 3 + 1000))),
                _ => {}
            }
        }
        change.extend((0..50u64).map(|k| (U256::from(k * 7919 + 3), U256::from(9))));
        change.sort_unstable();
        for (k, v) in &change {
            if v.is_zero() {
                slots.remove(k);
            } else {
                slots.insert(*k, *v);
            }
        }
        world.get_mut(&big).unwrap().3 = slots;
        let second = vec![AccountUpdate {
            address: big,
            info: Some((1, U256::from(5), B256::ZERO)),
            wiped: false,
            storage: change,
        }];
        let root2 = update_state_root(root1.root, &second, &pool).unwrap();
        assert_eq!(root2.root, oracle(&world));
    }
}
