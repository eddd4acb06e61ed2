//! The server side of snap/1 and snap/2 (EIP-8189), as geth 1.17.10 answers
//! (`eth/protocols/snap/handlers.go`), whatever the transport.
//!
//! Flow: a request names a state root; it is served when the root is the state root of one
//! of the last [`STATE_WINDOW`] + 1 canonical blocks (geth's 128 diff layers over its disk
//! layer), and answered empty otherwise. Accounts and slots come from the flat state where it
//! can give that root's state (`snap_flat`: the head's, with what the BALs above the root
//! touched read from the root's trie), else from walking the trie of that root from the
//! request's origin (`gigagas_trie::walk_leaves`): trie nodes are stored by hash and never
//! rewritten, so a walk reads exactly that root's state whatever blocks commit meanwhile. Proofs
//! are the trie's own (`Trie::proof`), trie nodes are read by path
//! (`gigagas_trie::node_at_path`), codes by hash, BALs by block hash. Sizes follow geth's
//! accounting exactly (what each answer counts, and that the item crossing the limit is the
//! last), so that its conformance suite's counts hold.

use crate::snap_flat::{FlatState, FlatStateReader};
pub use crate::{
    snap_account::{full_account, slim},
    snap_error::SnapServeError,
};
use alloy_primitives::{Bytes, B256};
use alloy_rlp::Decodable;
use alloy_trie::{Nibbles, TrieAccount, EMPTY_ROOT_HASH, KECCAK_EMPTY};
use gigagas_eth_wire_types::{
    snap::{
        AccountData, AccountRange, ByteCodes, GetAccountRange, GetBlockAccessLists, GetByteCodes,
        GetStorageRanges, GetTrieNodes, SnapBlockAccessLists, StorageData, StorageRanges,
        TrieNodes,
    },
    SOFT_RESPONSE_LIMIT,
};
use gigagas_storage_api::{FullReader, ProviderError};
use gigagas_trie::{compact_to_nibbles, node_at_path, walk_leaves, PathNode, Trie, TrieError};
use std::sync::Arc;

/// How many blocks below the head a state root is still served at (geth keeps 128 diff layers
/// over its disk layer: the head's root and the 128 before it).
pub const STATE_WINDOW: u64 = 128;

/// Most codes, trie-node lookups or BALs one request is answered for (geth's
/// `maxCodeLookups`, `maxTrieNodeLookups`, `maxAccessListLookups`).
pub const MAX_LOOKUPS: usize = 1024;

/// Adds what a path lookup found to `nodes` (`size`: the bytes so far); false when the path
/// named no node of its own (nothing added).
fn push_node(
    found: Result<PathNode, TrieError>,
    nodes: &mut Vec<Bytes>,
    size: &mut u64,
) -> Result<bool, SnapServeError> {
    match missing_is_none(found)? {
        Some(PathNode::Found(node)) => {
            *size += node.len() as u64;
            nodes.push(node);
            Ok(true)
        }
        Some(PathNode::Missing) => {
            nodes.push(Bytes::new());
            Ok(true)
        }
        Some(PathNode::Embedded) | None => Ok(false),
    }
}

/// A trie error: the store failing is the server's fault ([`SnapServeError`]); a node it does
/// not hold means the root is not served after all (`None`).
fn missing_is_none<T>(r: Result<T, TrieError>) -> Result<Option<T>, SnapServeError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(TrieError::MissingNode { .. }) => Ok(None),
        Err(e) => Err(SnapServeError::Trie(e)),
    }
}

/// Answers snap requests from `provider`'s chain and trie nodes.
#[derive(Debug, Clone)]
pub struct SnapServer {
    provider: Arc<dyn FullReader>,
    /// Account and storage ranges from the flat state, when given one.
    flat: Option<Arc<FlatState>>,
}

impl SnapServer {
    /// A server reading `provider`.
    pub fn new(provider: Arc<dyn FullReader>) -> Self {
        Self { provider, flat: None }
    }

    /// Serves account and storage ranges from `flat`'s flat state where it can give the
    /// asked root's state (`snap_flat`), walking the trie elsewhere.
    pub fn with_flat_state(mut self, flat: Arc<dyn FlatStateReader>) -> Self {
        self.flat = Some(Arc::new(FlatState::new(flat, self.provider.clone())));
        self
    }

    /// Whether `root` is the state root of one of the last [`STATE_WINDOW`] + 1 canonical
    /// blocks.
    ///
    /// # Errors
    /// [`ProviderError`] when a read fails.
    pub fn serves_root(&self, root: &B256) -> Result<bool, ProviderError> {
        Ok(self.served_block(root)?.is_some())
    }

    /// The number of the block among the last [`STATE_WINDOW`] + 1 canonical ones whose
    /// state root is `root`.
    fn served_block(&self, root: &B256) -> Result<Option<u64>, ProviderError> {
        let Some((head, _)) = self.provider.best_block()? else { return Ok(None) };
        for number in (head.saturating_sub(STATE_WINDOW)..=head).rev() {
            if self.provider.header_by_number(number)?.is_some_and(|h| h.state_root == *root) {
                return Ok(Some(number));
            }
        }
        Ok(None)
    }

    /// The proof nodes of `keys` in the trie `root`, in order, each node once.
    fn proof(&self, root: B256, keys: &[B256]) -> Result<Option<Vec<Bytes>>, SnapServeError> {
        let mut trie = Trie::new(root);
        let mut out: Vec<Bytes> = Vec::new();
        for key in keys {
            let Some(nodes) = missing_is_none(trie.proof(&Nibbles::unpack(key), &*self.provider))?
            else {
                return Ok(None);
            };
            for node in nodes {
                if !out.contains(&node) {
                    out.push(node);
                }
            }
        }
        Ok(Some(out))
    }

    /// The account `hash` of state `root`, `None` when absent (or the trie is not held).
    fn account(&self, root: B256, hash: &B256) -> Result<Option<TrieAccount>, SnapServeError> {
        let mut trie = Trie::new(root);
        let value = missing_is_none(trie.get(&Nibbles::unpack(hash), &*self.provider))?.flatten();
        Ok(value.and_then(|v| TrieAccount::decode(&mut v.as_slice()).ok()))
    }

    /// `AccountRange` for `req`: accounts from its origin in hash order, each counted as 32
    /// bytes and its slim RLP, up to and including the first at or past its limit or past its
    /// byte budget (at most 2 MiB); proofs of the origin and of the last account. An unknown
    /// root: nothing.
    ///
    /// # Errors
    /// [`SnapServeError`] when the store fails.
    pub fn account_range(&self, req: &GetAccountRange) -> Result<AccountRange, SnapServeError> {
        let empty = AccountRange { request_id: req.request_id, accounts: vec![], proof: vec![] };
        let Some(number) = self.served_block(&req.root)? else { return Ok(empty) };
        let budget = req.bytes.min(SOFT_RESPONSE_LIMIT as u64);
        let size = std::cell::Cell::new(0u64);
        let mut more = |hash: &B256, body: &Bytes| {
            size.set(size.get() + 32 + body.len() as u64);
            *hash < req.limit && size.get() <= budget
        };
        // From the flat state when it can give this root's state: the accounts the walk would
        // visit, up to where `more` stops.
        let flat = match &self.flat {
            Some(flat) => flat.accounts(number, req.root, req.origin, &mut more)?,
            None => None,
        };
        let accounts = match flat {
            Some(accounts) => {
                accounts.into_iter().map(|(hash, body)| AccountData { hash, body }).collect()
            }
            None => {
                size.set(0);
                let mut accounts: Vec<AccountData> = Vec::new();
                let mut bad = false;
                let walked =
                    walk_leaves(req.root, &req.origin, &*self.provider, &mut |hash, value| {
                        let Some(body) = slim(value) else {
                            bad = true;
                            return false;
                        };
                        let go_on = more(&hash, &body);
                        accounts.push(AccountData { hash, body });
                        go_on
                    });
                if bad || missing_is_none(walked)?.is_none() {
                    return Ok(empty);
                }
                accounts
            }
        };
        let mut keys = vec![req.origin];
        keys.extend(accounts.last().map(|a| a.hash));
        let Some(proof) = self.proof(req.root, &keys)? else { return Ok(empty) };
        Ok(AccountRange { request_id: req.request_id, accounts, proof })
    }

    /// `StorageRanges` for `req`, as geth's `ServiceGetStorageRangesQuery`: accounts in order
    /// while under the byte budget (at most 2 MiB; a budget of 0 answers nothing), the
    /// request's origin and limit bounding the first account only, a range cut at 110 % of
    /// the budget or at its limit; accounts without slots left out; proofs (origin and last
    /// slot) for a range that starts past zero or was cut, which ends the answer.
    ///
    /// # Errors
    /// [`SnapServeError`] when the store fails.
    pub fn storage_ranges(&self, req: &GetStorageRanges) -> Result<StorageRanges, SnapServeError> {
        let empty = StorageRanges { request_id: req.request_id, slots: vec![], proof: vec![] };
        let Some(number) = self.served_block(&req.root)? else { return Ok(empty) };
        let budget = req.bytes.min(SOFT_RESPONSE_LIMIT as u64);
        let hard = (budget as f64 * 1.1) as u64;
        let mut slots = Vec::new();
        let mut proof = Vec::new();
        let mut size = 0u64;
        for (i, account) in req.accounts.iter().enumerate() {
            if size >= budget {
                break;
            }
            let bound = |b: &Bytes, default: B256| {
                if i > 0 || b.is_empty() {
                    return default;
                }
                let tail = &b[b.len().saturating_sub(32)..];
                B256::left_padding_from(tail)
            };
            let origin = bound(&req.origin, B256::ZERO);
            let limit = bound(&req.limit, B256::repeat_byte(0xff));
            let found = self.account(req.root, account)?;
            let storage_root = found.as_ref().map_or(EMPTY_ROOT_HASH, |a| a.storage_root);
            let mut storage = Vec::new();
            let mut cut = false;
            let left = hard - size;
            let mut take = |hash: B256, value: &[u8]| {
                if size >= hard {
                    cut = true;
                    return false;
                }
                size += 32 + value.len() as u64;
                storage.push(StorageData { hash, body: Bytes::copy_from_slice(value) });
                if hash >= limit {
                    cut = true;
                    return false;
                }
                true
            };
            // From the flat state when it can give this root's state: the slots it gives are
            // those the walk would visit, up to where `take` stops.
            let flat = match (&self.flat, storage_root == EMPTY_ROOT_HASH) {
                (Some(flat), false) => {
                    flat.slots(number, *account, storage_root, origin, limit, left)?
                }
                _ => None,
            };
            if let Some(flat) = flat {
                for (hash, value) in flat {
                    if !take(hash, &value) {
                        break;
                    }
                }
            } else {
                let walked = walk_leaves(storage_root, &origin, &*self.provider, &mut take);
                if missing_is_none(walked)?.is_none() {
                    return Ok(empty);
                }
            }
            let last = storage.last().map(|s| s.hash);
            let prove = !origin.is_zero() || (cut && last.is_some());
            if !storage.is_empty() {
                slots.push(storage);
            }
            if prove {
                if found.is_none() {
                    return Ok(empty);
                }
                let mut keys = vec![origin];
                keys.extend(last);
                let Some(nodes) = self.proof(storage_root, &keys)? else { return Ok(empty) };
                proof = nodes;
                break;
            }
        }
        Ok(StorageRanges { request_id: req.request_id, slots, proof })
    }

    /// `ByteCodes` for `req`: the codes held among its first [`MAX_LOOKUPS`] hashes, in order
    /// (the empty code for the empty code's hash, at no cost), up to and including the one
    /// that passes its byte budget (at most 2 MiB).
    ///
    /// # Errors
    /// [`SnapServeError`] when the store fails.
    pub fn byte_codes(&self, req: &GetByteCodes) -> Result<ByteCodes, SnapServeError> {
        let budget = req.bytes.min(SOFT_RESPONSE_LIMIT as u64);
        let mut codes = Vec::new();
        let mut size = 0u64;
        for hash in req.hashes.iter().take(MAX_LOOKUPS) {
            if *hash == KECCAK_EMPTY {
                codes.push(Bytes::new());
            } else if let Some(code) =
                self.provider.code(hash).map_err(|e| SnapServeError::Code(Box::new(e)))?
            {
                let code = code.original_bytes();
                if !code.is_empty() {
                    size += code.len() as u64;
                    codes.push(code);
                }
            }
            if size > budget {
                break;
            }
        }
        Ok(ByteCodes { request_id: req.request_id, codes })
    }

    /// `TrieNodes` for `req` (snap/1): per path set, the account trie's node at a lone path,
    /// or the nodes at the storage paths of the account the first element names (its hash);
    /// an empty entry for a path that leads nowhere, nothing for one that ends inside a node
    /// or an account that does not exist; up to and including the node that passes the byte
    /// budget, at most [`MAX_LOOKUPS`] lookups. `None` for a request with an empty path set
    /// (geth disconnects).
    ///
    /// # Errors
    /// [`SnapServeError`] when the store fails.
    pub fn trie_nodes(&self, req: &GetTrieNodes) -> Result<Option<TrieNodes>, SnapServeError> {
        if req.paths.iter().any(Vec::is_empty) {
            return Ok(None);
        }
        let mut nodes = Vec::new();
        if !self.serves_root(&req.root)? {
            return Ok(Some(TrieNodes { request_id: req.request_id, nodes }));
        }
        let budget = req.bytes.min(SOFT_RESPONSE_LIMIT as u64);
        let (mut size, mut loads) = (0u64, 0usize);
        for set in &req.paths {
            loads += 1;
            if set.len() == 1 {
                let path = compact_to_nibbles(&set[0]);
                push_node(node_at_path(req.root, &path, &*self.provider), &mut nodes, &mut size)?;
            } else {
                let tail = &set[0][set[0].len().saturating_sub(32)..];
                let account = B256::left_padding_from(tail);
                if let Some(account) = self.account(req.root, &account)? {
                    for path in &set[1..] {
                        loads += 1;
                        let path = compact_to_nibbles(path);
                        let found = node_at_path(account.storage_root, &path, &*self.provider);
                        if !push_node(found, &mut nodes, &mut size)? {
                            break;
                        }
                        if size > budget || loads > MAX_LOOKUPS {
                            break;
                        }
                    }
                }
            }
            if size > budget || loads > MAX_LOOKUPS {
                break;
            }
        }
        Ok(Some(TrieNodes { request_id: req.request_id, nodes }))
    }

    /// `BlockAccessLists` for `req` (snap/2): per block of its first [`MAX_LOOKUPS`] hashes, in
    /// order, its BAL's RLP (each counted at its size) or `None` for one not held (counted
    /// as 1 byte), up to and including the entry that passes its byte budget (at most 2 MiB).
    ///
    /// # Errors
    /// [`SnapServeError`] when the store fails.
    pub fn block_access_lists(
        &self,
        req: &GetBlockAccessLists,
    ) -> Result<SnapBlockAccessLists, SnapServeError> {
        let budget = req.bytes.min(SOFT_RESPONSE_LIMIT as u64);
        let mut lists = Vec::new();
        let mut size = 0u64;
        for hash in req.hashes.iter().take(MAX_LOOKUPS) {
            let bal = match self.provider.block_number(hash)? {
                Some(number) => self.provider.block_access_list(number)?,
                None => None,
            };
            match bal {
                Some(bal) => {
                    let rlp = Bytes::from(alloy_rlp::encode(&bal));
                    size += rlp.len() as u64;
                    lists.push(Some(rlp));
                }
                None => {
                    size += 1;
                    lists.push(None);
                }
            }
            if size > budget {
                break;
            }
        }
        Ok(SnapBlockAccessLists { request_id: req.request_id, lists })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::U256;

    #[test]
    fn full_accounts_invert_slim() {
        for account in [
            TrieAccount {
                nonce: 0,
                balance: U256::ZERO,
                storage_root: EMPTY_ROOT_HASH,
                code_hash: KECCAK_EMPTY,
            },
            TrieAccount {
                nonce: 7,
                balance: U256::MAX,
                storage_root: B256::repeat_byte(3),
                code_hash: B256::repeat_byte(4),
            },
        ] {
            let body = slim(&alloy_rlp::encode(account)).unwrap();
            assert_eq!(full_account(&body).unwrap(), account);
        }
        for bad in [
            &[0x80][..],
            &[0xc4, 0x01, 0x02, 0x80][..],
            &[0xc5, 0x01, 0x02, 0x80, 0x80, 0x80][..],
            &[0xc5, 0x01, 0x02, 0x81, 0x01, 0x80][..],
        ] {
            assert!(full_account(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn slim_accounts_drop_the_empty_root_and_code_hash() {
        let plain = TrieAccount {
            nonce: 1,
            balance: U256::from(2),
            storage_root: EMPTY_ROOT_HASH,
            code_hash: KECCAK_EMPTY,
        };
        assert_eq!(
            slim(&alloy_rlp::encode(plain)).unwrap().as_ref(),
            [0xc4, 0x01, 0x02, 0x80, 0x80]
        );
        let contract = TrieAccount { storage_root: B256::repeat_byte(1), ..plain };
        let body = slim(&alloy_rlp::encode(contract)).unwrap();
        assert_eq!(body.len(), 1 + 2 + 33 + 1, "list header, nonce and balance, root, code");
        assert!(slim(&[0x80]).is_none());
    }
}
