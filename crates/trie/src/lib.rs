//! Merkle Patricia tries for the state-root stage (Yellow Paper appendix D, with the
//! keccak256-keyed "secure" tries Ethereum uses for accounts and storage).
//!
//! [`Trie`] holds only the nodes an update needs: the rest stays as [`Node::Hash`] references
//! that are resolved on demand from a [`NodeSource`] — the proof nodes of `eth_getProof`
//! answers, or the trie nodes a database stores. Updating a few keys and asking for the root
//! therefore costs the touched paths, not the whole trie. [`state_root::update_state_root`]
//! applies a block's post-state diff to the account trie and to each changed account's
//! storage trie (storage tries in parallel) and yields the new state root. Every node keeps
//! its hash once computed, so a [`StateTrie`] kept from one block to the next
//! ([`PreservedTrie`]) neither reads nor hashes again what the next block does not change;
//! what it lacks, [`StateTrie::resolve_paths`] reads level by level on a pool of I/O threads
//! before the update walks it.
//! [`walk_leaves`] and [`node_at_path`] read a trie of any stored root in key order or by
//! path, for snap serving; [`TrieBuilder`] builds a trie from its leaves in key order in one
//! pass and [`verify_range_proof`] checks a range of leaves against a root, for snap sync.

pub mod builder;
pub mod mpt;
pub mod prefetch;
pub mod preserved;
pub mod range;
pub mod range_proof;
pub mod resolve;
pub mod state_root;

pub use builder::{BuildError, TrieBuilder};
pub use mpt::{
    nodes_over, EncodedNode, Node, NodeSource, NodeSourceError, ProofNodes, RlpCache, ShortBatch,
    Trie, TrieError, TrieOp,
};
pub use prefetch::{prefetch_paths, PrefetchStats, PrefetchTarget};
pub use preserved::{
    update_state_root_on, PreservedTrie, TrieStart, DEFAULT_MAX_STORAGE_TRIES, DEFAULT_PRUNE_DEPTH,
    DEFAULT_TRIE_READ_THREADS,
};
pub use range::{compact_to_nibbles, node_at_path, walk_leaves, PathNode};
pub use range_proof::{verify_range_proof, verify_range_proof_nodes, RangeProofError};
pub use resolve::ResolveStats;
pub use state_root::{
    account_leaf_candidates, slot_leaf, update_state_root, AccountUpdate, PriorValues, PruneDepth,
    StateRootError, StateRootUpdate, StateTrie, PARALLEL_STORAGE_SLOTS,
};
