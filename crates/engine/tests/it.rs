//! The engine tree on the dev chain (testing/dev-genesis.json: geth's Amsterdam, EIP-7928 BALs
//! from genesis): payloads built with their BAL, executed by the parallel executor driven by it,
//! forkchoice updates committing them, reorgs in both directions with the flat state checked
//! against the trie, a tampered BAL rejected naming the account, unknown parents answered
//! SYNCING, database reads failing during execution answered as internal errors (not INVALID),
//! background persistence (commits off the engine thread, the same store in the end), and
//! payload builds as jobs off the engine thread (the engine answers meanwhile); the file import
//! through the tree (it/import.rs, it/geth_amsterdam.rs).

#[path = "it/geth_amsterdam.rs"]
mod geth_amsterdam;
#[path = "it/import.rs"]
mod import;

use alloy_consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy_primitives::{keccak256, Address, Signature, TxKind, B256, U256};
use gigagas_engine::{BlockTree, PayloadStatus};
use gigagas_payload::{BuiltPayload, PayloadAttributes};
use gigagas_state::{StateError, StateSource};
use gigagas_storage::{
    BlockHashReader, BlockNumReader, BlockReader, BlockWriter, ReceiptProvider, Storage,
    TransactionsProvider, TrieState,
};
use gigagas_validation::init_genesis;
use k256::ecdsa::SigningKey;
use revm::state::{AccountInfo, Bytecode};
use std::sync::{Arc, Mutex};

const KEYS: [&str; 2] = [
    "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
    "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
];

fn key(i: usize) -> SigningKey {
    SigningKey::from_slice(&alloy_primitives::hex::decode(KEYS[i]).unwrap()).unwrap()
}

fn address_of(key: &SigningKey) -> Address {
    Address::from_public_key(key.verifying_key())
}

/// A signed EIP-1559 transfer of `value` wei.
fn transfer(key: &SigningKey, nonce: u64, to: Address, value: u64) -> (TxEnvelope, Address) {
    let tx = TxEip1559 {
        chain_id: 1337,
        nonce,
        gas_limit: 210_000, // a new account: 21,000 + 183,600 of EIP-8037 state gas
        max_fee_per_gas: 20_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
        to: TxKind::Call(to),
        value: U256::from(value),
        ..Default::default()
    };
    let (sig, recid) = key.sign_prehash_recoverable(tx.signature_hash().as_slice()).unwrap();
    let signature = Signature::new(
        U256::from_be_slice(&sig.r().to_bytes()),
        U256::from_be_slice(&sig.s().to_bytes()),
        recid.is_y_odd(),
    );
    (tx.into_signed(signature).into(), address_of(key))
}

fn attrs(timestamp: u64) -> PayloadAttributes {
    PayloadAttributes {
        timestamp,
        prev_randao: keccak256(timestamp.to_be_bytes()),
        suggested_fee_recipient: Address::repeat_byte(0xfe),
        withdrawals: Some(Vec::new()),
        parent_beacon_block_root: Some(B256::repeat_byte(1)),
        slot_number: Some(timestamp),
        target_gas_limit: None,
        extra_data: None,
    }
}

fn dev_chain() -> (tempfile::TempDir, Arc<Storage>, BlockTree, B256) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Storage::open(dir.path()).unwrap());
    let genesis = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testing/dev-genesis.json"),
    )
    .unwrap();
    let init = init_genesis(&*store, &genesis).unwrap();
    let tree = BlockTree::new(store.clone(), 2).unwrap();
    (dir, store, tree, init.hash)
}

fn build(tree: &BlockTree, parent: B256, t: u64, txs: &[(TxEnvelope, Address)]) -> BuiltPayload {
    let built = tree.build_payload(parent, &attrs(t), txs, false).unwrap().unwrap();
    assert!(built.skipped.is_empty(), "{:?}", built.skipped);
    built
}

fn submit(tree: &mut BlockTree, p: &BuiltPayload) -> PayloadStatus {
    let rlp_len = alloy_rlp::encode(&p.block).len();
    let (status, executed) =
        tree.new_payload(p.block.clone(), rlp_len, None, Some(&p.bal)).unwrap();
    if let Some(b) = executed {
        assert!(b.parallel, "a payload with a BAL runs on the parallel executor");
        assert!(
            b.state_root_beside.is_some(),
            "block {}: the state root computed from the BAL beside execution was not used",
            b.number
        );
    }
    status
}

/// Moves `x`'s first post-balance in `p`'s BAL by one wei, the header's BAL hash and the block
/// hash following (a payload consistent in itself whose BAL lies).
fn tamper_balance(p: &mut BuiltPayload, x: Address) {
    let change = p
        .bal
        .iter_mut()
        .find(|a| a.address == x)
        .and_then(|a| a.balance_changes.first_mut())
        .expect("x's balance changes");
    change.post_balance += U256::from(1);
    p.block.header.block_access_list_hash =
        Some(gigagas_bal::compute_block_access_list_hash(&p.bal));
    p.hash = p.block.header.hash_slow();
}

/// Flat state equals the trie under the head's state root, for `addresses`.
fn assert_flat_state_matches_trie(store: &Arc<Storage>, addresses: &[Address]) {
    let (head, _) = store.best_block().unwrap().unwrap();
    let rlp = store.block_entry(gigagas_storage::HEADERS, head).unwrap().unwrap();
    let header: alloy_consensus::Header = alloy_rlp::decode_exact(&rlp).unwrap();
    let trie = TrieState { store: store.clone(), root: header.state_root };
    for a in addresses {
        let flat = store.account(a).unwrap().map(|r| (r.nonce, r.balance));
        let in_trie = trie.trie_account(a).unwrap().map(|t| (t.nonce, t.balance));
        assert_eq!(flat, in_trie, "account {a} at head {head}");
    }
}

fn balance(store: &Storage, a: &Address) -> U256 {
    store.account(a).unwrap().map_or(U256::ZERO, |r| r.balance)
}

#[test]
fn payloads_reorgs_and_a_tampered_bal() {
    let (_dir, store, mut tree, genesis) = dev_chain();
    let (k0, k1) = (key(0), key(1));
    let (x, y) = (Address::repeat_byte(0x11), Address::repeat_byte(0x22));
    let watched = [address_of(&k0), address_of(&k1), x, y, Address::repeat_byte(0xfe)];

    // Branch A: two blocks of transfers from key 0 to x.
    let a1 = build(&tree, genesis, 1, &[transfer(&k0, 0, x, 1000), transfer(&k0, 1, x, 2000)]);
    assert_eq!(a1.block.body.transactions.len(), 2);
    assert_eq!(submit(&mut tree, &a1), PayloadStatus::Valid(a1.hash));
    // Branch B: one block of transfers from key 1 to y, on genesis too.
    let b1 = build(&tree, genesis, 2, &[transfer(&k1, 0, y, 500)]);
    assert_eq!(submit(&mut tree, &b1), PayloadStatus::Valid(b1.hash));

    let (status, change) = tree.forkchoice_updated(a1.hash, B256::ZERO, B256::ZERO).unwrap();
    assert_eq!(status, PayloadStatus::Valid(a1.hash));
    assert_eq!(change.committed.len(), 1);
    let a2 = build(&tree, a1.hash, 3, &[transfer(&k0, 2, x, 4000)]);
    assert_eq!(submit(&mut tree, &a2), PayloadStatus::Valid(a2.hash));
    tree.forkchoice_updated(a2.hash, a1.hash, genesis).unwrap();
    assert_eq!(store.best_block().unwrap(), Some((2, a2.hash)));
    assert_eq!(balance(&store, &x), U256::from(7000));
    assert_flat_state_matches_trie(&store, &watched);

    // Reorg to B: A2 and A1 unwound, B1 committed.
    let (_, change) = tree.forkchoice_updated(b1.hash, B256::ZERO, genesis).unwrap();
    assert_eq!(change.unwound, vec![(2, a2.hash), (1, a1.hash)]);
    assert_eq!(change.committed.iter().map(|b| b.hash).collect::<Vec<_>>(), vec![b1.hash]);
    assert_eq!(store.best_block().unwrap(), Some((1, b1.hash)));
    assert_eq!(balance(&store, &x), U256::ZERO);
    assert_eq!(balance(&store, &y), U256::from(500));
    assert_eq!(store.account(&address_of(&k0)).unwrap().unwrap().nonce, 0);
    assert!(store.transaction_location(a1.block.body.transactions[0].tx_hash()).unwrap().is_none());
    assert_flat_state_matches_trie(&store, &watched);

    // And back to A2 (kept in memory): no re-execution needed.
    let (_, change) = tree.forkchoice_updated(a2.hash, B256::ZERO, genesis).unwrap();
    assert_eq!(change.unwound, vec![(1, b1.hash)]);
    assert_eq!(change.committed.len(), 2);
    assert_eq!(balance(&store, &x), U256::from(7000));
    assert_eq!(balance(&store, &y), U256::ZERO);
    assert_flat_state_matches_trie(&store, &watched);
    // The head block builds on.
    let a3 = build(&tree, a2.hash, 4, &[transfer(&k1, 0, y, 9)]);
    assert_eq!(submit(&mut tree, &a3), PayloadStatus::Valid(a3.hash));

    // Finalized A2: branches below it are forgotten (B1 is unknown now), and making an
    // ancestor of the finalized block the head is refused (-38002).
    tree.forkchoice_updated(a3.hash, a2.hash, a2.hash).unwrap();
    let (status, _) = tree.forkchoice_updated(b1.hash, B256::ZERO, B256::ZERO).unwrap();
    assert_eq!(status, PayloadStatus::Syncing);
    let refused = tree.forkchoice_updated(genesis, B256::ZERO, B256::ZERO);
    assert!(
        matches!(refused, Err(gigagas_engine::ForkchoiceError::Invalid(_))),
        "reorg below the finalized block accepted"
    );
    assert_eq!(store.best_block().unwrap(), Some((3, a3.hash)));

    // A tampered BAL (a balance moved by one wei) makes the payload INVALID, naming x.
    let mut p = build(&tree, a3.hash, 5, &[transfer(&k0, 3, x, 1)]);
    tamper_balance(&mut p, x);
    match submit(&mut tree, &p) {
        PayloadStatus::Invalid { latest_valid_hash, reason } => {
            assert_eq!(latest_valid_hash, Some(a3.hash));
            assert!(
                reason.to_lowercase().contains(&format!("{x:#x}").to_lowercase())
                    || reason.contains(&x.to_string()),
                "{reason}"
            );
        }
        other => panic!("tampered BAL: {other:?}"),
    }

    // Unknown parent and unknown head: SYNCING.
    let mut orphan = build(&tree, a3.hash, 6, &[]);
    orphan.block.header.parent_hash = B256::repeat_byte(9);
    assert_eq!(submit(&mut tree, &orphan), PayloadStatus::Syncing);
    let (status, _) =
        tree.forkchoice_updated(B256::repeat_byte(9), B256::ZERO, B256::ZERO).unwrap();
    assert_eq!(status, PayloadStatus::Syncing);
}

/// The trie pruned behind the head (keep 4, every 2 blocks) while a chain of 10 blocks is
/// committed: the states of blocks 7 to 10 stay and older ones go (the store says so); a reorg
/// to a branch off block 8 unwinds as before, and one off block 6, past the window, is refused
/// with a typed error, the store untouched.
#[test]
fn the_trie_is_pruned_behind_the_head_and_reorgs_inside_the_window_still_work() {
    let (_dir, store, _, genesis) = dev_chain();
    let prune = gigagas_engine::TriePruneConfig { keep: 4, interval: 2, threads: 2 };
    let config = gigagas_engine::TreeConfig::new(2).with_trie_pruning(Some(prune));
    let mut tree = BlockTree::with_config(store.clone(), config).unwrap();
    let (k0, k1) = (key(0), key(1));
    let (x, y) = (Address::repeat_byte(0x11), Address::repeat_byte(0x22));
    let watched = [address_of(&k0), address_of(&k1), x, y, Address::repeat_byte(0xfe)];
    let (mut parent, mut chain, mut forks) = (genesis, vec![genesis], Vec::new());
    for n in 1..=10u64 {
        let a = build(&tree, parent, 2 * n, &[transfer(&k0, n - 1, x, 1000 * n)]);
        assert_eq!(submit(&mut tree, &a), PayloadStatus::Valid(a.hash));
        if n == 6 || n == 8 {
            // A branch off this block, kept in memory: key 1 pays y.
            let b = build(&tree, a.hash, 2 * n + 1, &[transfer(&k1, 0, y, 7)]);
            assert_eq!(submit(&mut tree, &b), PayloadStatus::Valid(b.hash));
            forks.push(b.hash);
        }
        tree.forkchoice_updated(a.hash, B256::ZERO, B256::ZERO).unwrap();
        tree.wait_pruned();
        (parent, chain) = (a.hash, [chain, vec![a.hash]].concat());
    }
    assert_eq!(store.best_block().unwrap(), Some((10, parent)));
    assert_eq!(store.earliest_state_block().unwrap(), 7);
    let root_of = |n: u64| {
        let rlp = store.block_entry(gigagas_storage::HEADERS, n).unwrap().unwrap();
        alloy_rlp::decode_exact::<alloy_consensus::Header>(&rlp).unwrap().state_root
    };
    for n in 7..=10 {
        let state = TrieState { store: store.clone(), root: root_of(n) };
        let x_balance = state.trie_account(&x).unwrap().unwrap().balance;
        assert_eq!(x_balance, U256::from(500 * n * (n + 1)), "x at block {n}");
    }
    // Every block changed x: each root node is its block's own. (Read from the database: the
    // store's node cache may still hold a pruned node, right for its hash.)
    for n in 1..=10 {
        let held = store.trie_node(&root_of(n)).unwrap().is_some();
        assert_eq!(held, n >= 7, "block {n}'s state root node held: {held}");
    }
    assert_flat_state_matches_trie(&store, &watched);

    // Inside the window: the branch off block 8 becomes canonical, blocks 10 and 9 unwound.
    let (status, change) = tree.forkchoice_updated(forks[1], B256::ZERO, B256::ZERO).unwrap();
    assert_eq!(status, PayloadStatus::Valid(forks[1]));
    assert_eq!(change.unwound, vec![(10, chain[10]), (9, chain[9])]);
    assert_eq!(store.best_block().unwrap(), Some((9, forks[1])));
    assert_eq!(balance(&store, &x), U256::from(500 * 8 * 9));
    assert_eq!(balance(&store, &y), U256::from(7));
    assert_flat_state_matches_trie(&store, &watched);

    // Past it: the branch off block 6 needs block 6's state, which is gone.
    let refused = tree.forkchoice_updated(forks[0], B256::ZERO, B256::ZERO);
    match refused {
        Err(gigagas_engine::ForkchoiceError::Internal(
            gigagas_validation::ImportError::Unwind {
                reason: gigagas_validation::UnwindError::StatePruned { base: 6, earliest: 7 },
                ..
            },
        )) => {}
        other => panic!("a reorg past the pruned window: {other:?}"),
    }
    assert_eq!(store.best_block().unwrap(), Some((9, forks[1])));
    assert_flat_state_matches_trie(&store, &watched);

    // Reopened (no node cache): every state of the window reads from the database.
    let dir = _dir;
    drop((tree, store));
    let store = Arc::new(Storage::open(dir.path()).unwrap());
    for n in 7..=9u64 {
        let rlp = store.block_entry(gigagas_storage::HEADERS, n).unwrap().unwrap();
        let header: alloy_consensus::Header = alloy_rlp::decode_exact(&rlp).unwrap();
        let state = TrieState { store: store.clone(), root: header.state_root };
        let paid = if n == 9 { 500 * 8 * 9 } else { 500 * n * (n + 1) };
        assert_eq!(state.trie_account(&x).unwrap().unwrap().balance, U256::from(paid));
    }
    assert_flat_state_matches_trie(&store, &watched);
}

/// Prunes running beside background persistence (keep 4, every 3 blocks, never waited for
/// between blocks): 40 blocks committed while the pruner marks and sweeps, then a last prune
/// at the head; afterwards the head's state, read from a reopened store, is whole and equals
/// the flat state.
#[test]
fn prunes_beside_background_persistence_leave_the_head_state_whole() {
    let (dir, store, _, genesis) = dev_chain();
    let prune = gigagas_engine::TriePruneConfig { keep: 4, interval: 3, threads: 4 };
    let config = gigagas_engine::TreeConfig::new(2).with_trie_pruning(Some(prune));
    let mut tree = BlockTree::with_config(store.clone(), config)
        .unwrap()
        .with_background_persistence(true, None)
        .unwrap();
    let (k0, k1) = (key(0), key(1));
    let watched = [address_of(&k0), address_of(&k1)];
    let mut parent = genesis;
    for n in 1..=40u64 {
        // Each block pays a fresh account, so the trie grows as well as changes.
        let to = Address::from_word(keccak256(n.to_be_bytes()));
        let txs = [transfer(&k0, n - 1, to, n), transfer(&k1, n - 1, Address::repeat_byte(7), 1)];
        let a = build(&tree, parent, n, &txs);
        assert_eq!(submit(&mut tree, &a), PayloadStatus::Valid(a.hash));
        tree.forkchoice_updated(a.hash, B256::ZERO, B256::ZERO).unwrap();
        parent = a.hash;
    }
    tree.wait_persisted().unwrap();
    tree.wait_pruned();
    // The prunes under way while blocks came skipped their turns; one more now if the head is
    // `interval` past the last one's. The last prune then began at a stored head of 38, 39 or
    // 40 (which one depends on how far persistence trailed), keeping 4 states from there.
    tree.forkchoice_updated(parent, B256::ZERO, B256::ZERO).unwrap();
    tree.wait_pruned();
    let earliest = store.earliest_state_block().unwrap();
    assert!((35..=37).contains(&earliest), "earliest state kept: {earliest}");
    drop((tree, store));
    let store = Arc::new(Storage::open(dir.path()).unwrap());
    assert_eq!(store.best_block().unwrap(), Some((40, parent)));
    assert_flat_state_matches_trie(&store, &watched);
    let rlp = store.block_entry(gigagas_storage::HEADERS, 40).unwrap().unwrap();
    let header: alloy_consensus::Header = alloy_rlp::decode_exact(&rlp).unwrap();
    let state = TrieState { store: store.clone(), root: header.state_root };
    for n in 1..=40u64 {
        let to = Address::from_word(keccak256(n.to_be_bytes()));
        assert_eq!(state.trie_account(&to).unwrap().unwrap().balance, U256::from(n));
    }
}

/// `--engine.parallel false`: a payload with a BAL runs on the sequential reference, VALID
/// when the BAL it records is the payload's, INVALID naming the account when it is not.
#[test]
fn the_sequential_engine_checks_the_given_bal() {
    let (_dir, store, _, genesis) = dev_chain();
    let config = gigagas_engine::TreeConfig::new(2)
        .with_executor(false, gigagas_executor::Scheduler::GasLimit);
    let mut tree = BlockTree::with_config(store, config).unwrap();
    assert!(!tree.parallel());
    let (k0, x) = (key(0), Address::repeat_byte(0x11));
    let p = build(&tree, genesis, 1, &[transfer(&k0, 0, x, 1000), transfer(&k0, 1, x, 7)]);
    let rlp_len = alloy_rlp::encode(&p.block).len();
    let (status, executed) =
        tree.new_payload(p.block.clone(), rlp_len, None, Some(&p.bal)).unwrap();
    assert_eq!(status, PayloadStatus::Valid(p.hash));
    assert!(!executed.unwrap().parallel, "--engine.parallel false runs the sequential reference");

    let mut q = build(&tree, p.hash, 2, &[transfer(&k0, 2, x, 5)]);
    tamper_balance(&mut q, x);
    let rlp_len = alloy_rlp::encode(&q.block).len();
    match tree.new_payload(q.block.clone(), rlp_len, None, Some(&q.bal)).unwrap().0 {
        PayloadStatus::Invalid { latest_valid_hash, reason } => {
            assert_eq!(latest_valid_hash, Some(p.hash));
            assert!(reason.to_lowercase().contains(&format!("{x:#x}").to_lowercase()), "{reason}");
        }
        other => panic!("tampered BAL on the sequential engine: {other:?}"),
    }
}

/// Which reads of [`Flaky`] fail: none, all, or only those of one account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    Off,
    All,
    Account(Address),
}

/// The stored state with reads that fail on demand, as a failing disk would.
#[derive(Debug)]
struct Flaky {
    inner: Arc<dyn StateSource>,
    fault: Arc<Mutex<Fault>>,
}

impl Flaky {
    fn check(&self, address: Option<&Address>) -> Result<(), StateError> {
        let fail = match *self.fault.lock().unwrap() {
            Fault::Off => false,
            Fault::All => true,
            Fault::Account(a) => address == Some(&a),
        };
        if fail {
            return Err(StateError::from_source(std::io::Error::other("injected read failure")));
        }
        Ok(())
    }
}

impl StateSource for Flaky {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        self.check(Some(address))?;
        self.inner.account(address)
    }
    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        self.check(Some(address))?;
        self.inner.storage(address, slot)
    }
    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        self.check(None)?;
        self.inner.code(hash)
    }
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        self.check(None)?;
        self.inner.block_hash(number)
    }
    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        self.check(Some(address))?;
        self.inner.has_storage(address)
    }
}

/// A database read that fails while a valid payload executes — on the parallel path (the BAL's
/// prefetch), on the sequential path (alloy-evm's system calls turn the database error into a
/// string), and inside a transaction only (revm reports it as an EVM error) — is an internal
/// error, never INVALID, and is not remembered: once the reads work again the same payload is
/// VALID and a child on it too.
#[test]
fn failing_reads_during_execution_are_internal_not_invalid() {
    let (_dir, _store, tree, genesis) = dev_chain();
    failing_reads_are_internal(tree, genesis);
}

/// As [`failing_reads_during_execution_are_internal_not_invalid`], with the BAL's keys read
/// beside execution on I/O workers of their own (`--engine.io prefetch-beside`): a read of the
/// read-ahead that fails is internal too, and the same payloads are VALID once reads work.
#[test]
fn failing_reads_beside_execution_are_internal_not_invalid() {
    let (_dir, store, _, genesis) = dev_chain();
    let config =
        gigagas_engine::TreeConfig::new(2).with_io(gigagas_validation::BalIo::PrefetchBeside, 4);
    let tree = BlockTree::with_config(store, config).unwrap();
    failing_reads_are_internal(tree, genesis);
}

fn failing_reads_are_internal(tree: BlockTree, genesis: B256) {
    let fault = Arc::new(Mutex::new(Fault::Off));
    let layer_fault = fault.clone();
    let mut tree = tree.with_source_layer(move |inner| {
        Arc::new(Flaky { inner, fault: layer_fault.clone() }) as Arc<dyn StateSource>
    });
    let k0 = key(0);
    let x = Address::repeat_byte(0x33);
    let p1 = build(&tree, genesis, 1, &[transfer(&k0, 0, x, 1000)]);
    let rlp_len = alloy_rlp::encode(&p1.block).len();

    for (mode, bal) in [
        (Fault::All, Some(&p1.bal)),
        (Fault::All, None),
        (Fault::Account(x), Some(&p1.bal)),
        (Fault::Account(x), None),
    ] {
        *fault.lock().unwrap() = mode;
        match tree.new_payload(p1.block.clone(), rlp_len, None, bal) {
            Err(e) => {
                assert!(e.is_internal(), "{mode:?}, BAL {}: not internal: {e}", bal.is_some());
                assert!(e.to_string().contains("block 1"), "{e}");
            }
            Ok((status, _)) => {
                panic!("{mode:?}, BAL {}: a failing read gave {status:?}", bal.is_some())
            }
        }
    }

    // Building on a failing store is an error too, not a payload without the transaction.
    let built = tree.build_payload(genesis, &attrs(1), &[transfer(&k0, 0, x, 1000)], false);
    match built {
        Err(e) => assert!(e.is_internal(), "{e}"),
        Ok(p) => panic!("built while reads fail: {:?}", p.map(|p| p.skipped)),
    }

    *fault.lock().unwrap() = Fault::Off;
    assert_eq!(submit(&mut tree, &p1), PayloadStatus::Valid(p1.hash), "not remembered as invalid");
    let p2 = build(&tree, p1.hash, 2, &[transfer(&k0, 1, x, 2000)]);
    assert_eq!(submit(&mut tree, &p2), PayloadStatus::Valid(p2.hash));
}

/// Sync's backfill: a chain of payloads validated in one call, each block's state root computed
/// while the next executes, gives the verdicts `newPayload` gives one by one; a block whose
/// state root is wrong is INVALID and the block executed on top of it is not judged.
#[test]
fn backfill_judges_a_chain_as_new_payload_does() {
    use gigagas_engine::tree::BackfillPayload;
    let (_dir, _store, mut tree, genesis) = dev_chain();
    let k0 = key(0);
    let mut parent = genesis;
    let mut chain = Vec::new();
    for i in 0..5u64 {
        let to = Address::repeat_byte(0x30 + i as u8);
        let p = build(
            &tree,
            parent,
            i + 1,
            &[transfer(&k0, 2 * i, to, 7), transfer(&k0, 2 * i + 1, to, 9)],
        );
        assert_eq!(submit(&mut tree, &p), PayloadStatus::Valid(p.hash));
        parent = p.hash;
        chain.push(p);
    }
    let backfill = |ps: &[BuiltPayload]| -> Vec<BackfillPayload> {
        ps.iter()
            .map(|p| BackfillPayload {
                block: p.block.clone(),
                rlp_len: alloy_rlp::encode(&p.block).len(),
                bal: Some(p.bal.clone()),
            })
            .collect()
    };

    // A fresh node imports the five blocks in one backfill, then commits them.
    let (_dir2, store2, mut fresh, genesis2) = dev_chain();
    assert_eq!(genesis2, genesis);
    let verdicts = fresh.new_payloads(backfill(&chain), false).unwrap().verdicts;
    assert_eq!(verdicts.len(), 5);
    for (p, (status, executed)) in chain.iter().zip(&verdicts) {
        assert_eq!(*status, PayloadStatus::Valid(p.hash));
        assert!(executed.as_ref().unwrap().parallel, "a block with a BAL runs in parallel");
    }
    let (status, change) = fresh.forkchoice_updated(chain[4].hash, B256::ZERO, B256::ZERO).unwrap();
    assert_eq!(status, PayloadStatus::Valid(chain[4].hash));
    assert_eq!(change.committed.len(), 5);
    assert_eq!(store2.best_block().unwrap(), Some((5, chain[4].hash)));
    assert!(store2.account(&address_of(&k0)).unwrap().is_some());

    // Committing as it goes (a follower): the same head and state, the blocks canonical.
    let (_dir5, store5, mut committing, _) = dev_chain();
    let done = committing.new_payloads(backfill(&chain), true).unwrap();
    assert!(done.verdicts.iter().zip(&chain).all(|((s, _), p)| *s == PayloadStatus::Valid(p.hash)));
    assert_eq!(done.change.committed.iter().map(|b| b.number).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    assert_eq!(store5.best_block().unwrap(), Some((5, chain[4].hash)));
    assert_eq!(committing.forkchoice().head, (5, chain[4].hash));
    let watched: Vec<Address> = std::iter::once(address_of(&k0))
        .chain((0..5u8).map(|i| Address::repeat_byte(0x30 + i)))
        .collect();
    for a in &watched {
        assert_eq!(balance(&store5, a), balance(&store2, a), "account {a}");
    }
    assert_flat_state_matches_trie(&store5, &watched);

    // Again: every block is known, VALID without execution.
    let again = fresh.new_payloads(backfill(&chain), false).unwrap().verdicts;
    assert!(again.iter().all(|(s, e)| matches!(s, PayloadStatus::Valid(_)) && e.is_none()));

    // Block 3 with a wrong state root, block 4 re-linked onto it: 1 and 2 VALID (and committed),
    // 3 INVALID naming the state root with block 2 the latest valid and not committed, 4 not
    // judged (then refused as the child of an invalid block).
    let (_dir3, store3, mut third, _) = dev_chain();
    let mut bad = chain[..4].to_vec();
    bad[2].block.header.state_root = B256::repeat_byte(0x55);
    bad[2].hash = bad[2].block.header.hash_slow();
    bad[3].block.header.parent_hash = bad[2].hash;
    bad[3].hash = bad[3].block.header.hash_slow();
    let verdicts = third.new_payloads(backfill(&bad), true).unwrap().verdicts;
    assert_eq!(verdicts.len(), 3, "{verdicts:?}");
    assert_eq!(verdicts[1].0, PayloadStatus::Valid(chain[1].hash));
    match &verdicts[2].0 {
        PayloadStatus::Invalid { latest_valid_hash, reason } => {
            assert_eq!(*latest_valid_hash, Some(chain[1].hash));
            assert!(reason.contains("stateRoot") || reason.contains("state root"), "{reason}");
        }
        other => panic!("wrong state root: {other:?}"),
    }
    assert_eq!(store3.best_block().unwrap(), Some((2, chain[1].hash)));
    let rlp_len = alloy_rlp::encode(&bad[3].block).len();
    let (status, _) =
        third.new_payload(bad[3].block.clone(), rlp_len, None, Some(&bad[3].bal)).unwrap();
    assert!(matches!(status, PayloadStatus::Invalid { .. }), "{status:?}");

    // A backfill whose first parent is unknown: SYNCING, nothing else judged.
    let (_dir4, _store4, mut fourth, _) = dev_chain();
    let verdicts = fourth.new_payloads(backfill(&chain[1..]), false).unwrap().verdicts;
    assert_eq!(verdicts.len(), 1);
    assert_eq!(verdicts[0].0, PayloadStatus::Syncing);
}

/// `--engine.persistence-background`: forkchoice updates hand the canonical blocks to the
/// persistence thread and return; the next payloads build and execute on them from memory
/// while they are committed (a safe head not yet stored accepted), a payload on a stored
/// ancestor (a fork) reads that ancestor's trie, a reorg waits for the commits and unwinds;
/// the store ends with the same head and state as a tree committing before each update
/// returns, and every commit is reported once, in order.
#[test]
fn background_persistence_commits_in_order_under_execution() {
    let (_dir, store, tree, genesis) = dev_chain();
    let mut tree = tree.with_background_persistence(true, None).unwrap();
    // What JSON-RPC and the network read: the tree's in-memory canonical chain over the store.
    let provider = gigagas_chain_state::BlockchainProvider::new(
        store.clone(),
        tree.canonical_in_memory_state().clone(),
    );
    let latest_balance = |a: &Address| -> U256 {
        provider.latest().unwrap().account(a).unwrap().map_or(U256::ZERO, |a| a.balance)
    };
    let (_dir_sync, store_sync, mut reference, _) = dev_chain();
    let k0 = key(0);
    let to = |i: u64| Address::repeat_byte(0x40 + i as u8);
    let mut chain: Vec<BuiltPayload> = Vec::new();
    let mut parent = genesis;
    for i in 0..8u64 {
        let txs = [transfer(&k0, 2 * i, to(i % 3), 10 + i), transfer(&k0, 2 * i + 1, to(7), 1)];
        // Built on a head whose blocks may still be on their way to the store.
        let p = build(&tree, parent, i + 1, &txs);
        assert_eq!(submit(&mut tree, &p), PayloadStatus::Valid(p.hash));
        let finalized = chain.len().checked_sub(3).map_or(genesis, |j| chain[j].hash);
        let (status, change) = tree.forkchoice_updated(p.hash, p.hash, finalized).unwrap();
        assert_eq!(status, PayloadStatus::Valid(p.hash));
        assert!(change.committed.is_empty(), "committed on the engine thread: {change:?}");
        assert_eq!(tree.forkchoice().head, (i + 1, p.hash));
        // What the node publishes never runs ahead of the store.
        let published = tree.persisted_forkchoice().unwrap();
        assert!(published.head.0 <= store.best_block().unwrap().unwrap().0);
        assert_eq!(tree.head_header().unwrap().number, i + 1);
        // Readers see the head at once, whether or not the store holds it yet: its block, its
        // receipts and its state (to(7) gets 1 wei a block).
        assert_eq!(provider.best_block().unwrap(), Some((i + 1, p.hash)));
        assert_eq!(BlockHashReader::block_hash(&provider, i + 1).unwrap(), Some(p.hash));
        assert_eq!(provider.receipts_by_number(i + 1).unwrap().map(|r| r.len()), Some(2));
        assert_eq!(provider.body_by_number(i + 1).unwrap().map(|b| b.transactions.len()), Some(2));
        assert_eq!(latest_balance(&to(7)), U256::from(i + 1));
        parent = p.hash;
        chain.push(p);
    }
    // A fork on block 5 (stored or not, its trie is read, not the moving flat state).
    let fork = build(&tree, chain[4].hash, 50, &[transfer(&k0, 10, to(9), 77)]);
    assert_eq!(submit(&mut tree, &fork), PayloadStatus::Valid(fork.hash));

    tree.wait_persisted().unwrap();
    assert_eq!(store.best_block().unwrap(), Some((8, chain[7].hash)));
    assert_eq!(tree.persisted_forkchoice().unwrap().head, (8, chain[7].hash));
    let reported: Vec<u64> = tree.take_persisted().iter().map(|b| b.number).collect();
    assert_eq!(reported, (1..=8).collect::<Vec<_>>());
    assert!(tree.take_persisted().is_empty(), "a commit reported twice");

    // The same payloads through a tree that commits before each update returns.
    for p in &chain {
        assert_eq!(submit(&mut reference, p), PayloadStatus::Valid(p.hash));
        reference.forkchoice_updated(p.hash, B256::ZERO, B256::ZERO).unwrap();
    }
    let watched: Vec<Address> = std::iter::once(address_of(&k0)).chain((0..10).map(to)).collect();
    for a in &watched {
        assert_eq!(balance(&store, a), balance(&store_sync, a), "account {a}");
    }
    assert_flat_state_matches_trie(&store, &watched);

    // Reorg to the fork: blocks 8..6 unwound, the fork committed, before the update returns.
    let (status, change) = tree.forkchoice_updated(fork.hash, B256::ZERO, B256::ZERO).unwrap();
    assert_eq!(status, PayloadStatus::Valid(fork.hash));
    assert_eq!(change.unwound.iter().map(|b| b.0).collect::<Vec<_>>(), [8, 7, 6]);
    assert_eq!(change.committed.iter().map(|b| b.hash).collect::<Vec<_>>(), [fork.hash]);
    assert_eq!(store.best_block().unwrap(), Some((6, fork.hash)));
    assert_eq!(balance(&store, &to(9)), U256::from(77));
    assert_flat_state_matches_trie(&store, &watched);
    // Readers follow the reorg: the fork is the head, the unwound blocks are gone.
    assert_eq!(provider.best_block().unwrap(), Some((6, fork.hash)));
    assert_eq!(BlockHashReader::block_hash(&provider, 7).unwrap(), None);
    assert_eq!(latest_balance(&to(9)), U256::from(77));
    assert_eq!(latest_balance(&to(7)), U256::from(5));
    // And on from the fork in the background again.
    let next = build(&tree, fork.hash, 60, &[transfer(&k0, 11, to(9), 3)]);
    assert_eq!(submit(&mut tree, &next), PayloadStatus::Valid(next.hash));
    tree.forkchoice_updated(next.hash, B256::ZERO, B256::ZERO).unwrap();
    assert_eq!(provider.best_block().unwrap(), Some((7, next.hash)));
    assert_eq!(latest_balance(&to(9)), U256::from(80));
    tree.wait_persisted().unwrap();
    assert_eq!(store.best_block().unwrap(), Some((7, next.hash)));
    assert_eq!(balance(&store, &to(9)), U256::from(80));
    assert_flat_state_matches_trie(&store, &watched);
}

/// A commit the store refuses on the persistence thread (here: the store lost block 1 behind
/// the tree's back, so block 2 does not extend its head) is an internal error, never a verdict;
/// the blocks stay in memory and the next forkchoice update queues them again.
#[test]
fn a_background_commit_fault_is_internal_and_retried() {
    let (_dir, store, tree, genesis) = dev_chain();
    let mut tree = tree.with_background_persistence(true, None).unwrap();
    let (k0, x) = (key(0), Address::repeat_byte(0x51));
    let b1 = build(&tree, genesis, 1, &[transfer(&k0, 0, x, 5)]);
    assert_eq!(submit(&mut tree, &b1), PayloadStatus::Valid(b1.hash));
    tree.forkchoice_updated(b1.hash, B256::ZERO, B256::ZERO).unwrap();
    tree.wait_persisted().unwrap();
    let lost = gigagas_storage::UnwoundBlock { number: 1, hash: b1.hash, tx_hashes: Vec::new() };
    store.unwind((0, genesis), &[lost], &[], &[]).unwrap();

    let b2 = build(&tree, b1.hash, 2, &[transfer(&k0, 1, x, 7)]);
    assert_eq!(submit(&mut tree, &b2), PayloadStatus::Valid(b2.hash));
    let (status, _) = tree.forkchoice_updated(b2.hash, B256::ZERO, B256::ZERO).unwrap();
    assert_eq!(status, PayloadStatus::Valid(b2.hash));
    let fault = tree.wait_persisted().expect_err("block 2 cannot follow the store's head 0");
    assert!(fault.is_internal(), "{fault}");
    assert_eq!(store.best_block().unwrap(), Some((0, genesis)));

    // Queued again from the store's head: blocks 1 and 2 committed.
    tree.forkchoice_updated(b2.hash, B256::ZERO, B256::ZERO).unwrap();
    tree.wait_persisted().unwrap();
    assert_eq!(store.best_block().unwrap(), Some((2, b2.hash)));
    assert_eq!(balance(&store, &x), U256::from(12));
    assert_flat_state_matches_trie(&store, &[address_of(&k0), x]);
}

/// The invalid-payload cache forgets the least recently used payload first, and a payload
/// found invalid again replaces its entry.
#[test]
fn the_least_recently_used_invalid_payload_is_forgotten_first() {
    use gigagas_engine::InvalidHeaderCache;
    let h = |n: u8| B256::repeat_byte(n);
    let mut cache = InvalidHeaderCache::with_capacity(2);
    cache.insert(h(1), Some(h(0)), "bad state root".into());
    cache.insert(h(2), None, "bad BAL".into());
    // Looking 1 up makes 2 the least recently used.
    assert_eq!(cache.get(&h(1)), Some((Some(h(0)), "bad state root".into())));
    cache.insert(h(3), Some(h(2)), "gas".into());
    assert_eq!(cache.len(), 2);
    assert_eq!(cache.get(&h(2)), None);
    assert!(cache.get(&h(1)).is_some() && cache.get(&h(3)).is_some());
    cache.insert(h(3), None, "gas, again".into());
    assert_eq!((cache.len(), cache.get(&h(3))), (2, Some((None, "gas, again".into()))));
}

/// Blocks waiting for their parent: taken out by parent, dropped when too old, at or below
/// finalized, or pushed out by newer ones past the capacity.
#[test]
fn the_block_buffer_is_bounded_and_expires() {
    use gigagas_engine::BlockBuffer;
    use std::time::{Duration, Instant};
    let h = |n: u8| B256::repeat_byte(n);
    let t0 = Instant::now();
    let mut buffer = BlockBuffer::new(3, Duration::from_secs(10));
    buffer.insert(h(2), h(1), 2, "2", t0);
    buffer.insert(h(3), h(1), 2, "3 (sibling)", t0);
    buffer.insert(h(4), h(2), 3, "4", t0 + Duration::from_secs(5));
    buffer.insert(h(4), h(2), 3, "4 again", t0 + Duration::from_secs(6));
    assert_eq!(buffer.len(), 3);
    let mut children = buffer.take_children(&h(1));
    children.sort();
    assert_eq!(children, ["2", "3 (sibling)"]);
    assert_eq!(buffer.take_children(&h(2)), ["4"]);
    assert!(buffer.is_empty());
    // Capacity: the earliest-inserted block goes first.
    for n in 10..14u8 {
        buffer.insert(h(n), h(n - 1), n.into(), "x", t0);
    }
    assert_eq!(buffer.len(), 3);
    assert!(!buffer.contains(&h(10)) && buffer.contains(&h(13)));
    // Finalized: blocks at or below it go.
    buffer.remove_finalized(11);
    assert!(!buffer.contains(&h(11)) && buffer.len() == 2);
    // Age.
    buffer.insert(h(20), h(19), 20, "young", t0 + Duration::from_secs(30));
    buffer.expire(t0 + Duration::from_secs(35));
    assert_eq!((buffer.len(), buffer.contains(&h(20))), (1, true));
}

/// A payload this node built and kept (`insert_built`, as the engine does for a consensus
/// client's forkchoiceUpdated with attributes) is VALID on its newPayload without a second
/// execution, becomes canonical on a forkchoice update and is committed with the state it
/// built and its senders; one built but not kept is executed on its newPayload as any other.
#[test]
fn a_built_payload_kept_as_executed_is_not_executed_again() {
    let (_dir, store, mut tree, genesis) = dev_chain();
    let (k0, x) = (key(0), Address::repeat_byte(0x44));
    let kept = build(&tree, genesis, 1, &[transfer(&k0, 0, x, 1000)]);
    assert!(tree.insert_built(&kept).unwrap());
    let rlp_len = alloy_rlp::encode(&kept.block).len();
    let (status, executed) =
        tree.new_payload(kept.block.clone(), rlp_len, None, Some(&kept.bal)).unwrap();
    assert_eq!(status, PayloadStatus::Valid(kept.hash));
    assert!(executed.is_none(), "a kept payload is not executed again");
    let (status, _) = tree.forkchoice_updated(kept.hash, kept.hash, genesis).unwrap();
    assert_eq!(status, PayloadStatus::Valid(kept.hash));
    assert_eq!(store.best_block().unwrap(), Some((1, kept.hash)));
    assert_eq!(balance(&store, &x), U256::from(1000));
    assert_flat_state_matches_trie(&store, &[x, address_of(&k0)]);
    // Its senders (the builder's, from the candidates) are stored with it for JSON-RPC.
    assert_eq!(
        gigagas_storage_api::BlockReader::senders_by_number(&*store, 1).unwrap(),
        Some(vec![address_of(&k0)])
    );

    let other = build(&tree, kept.hash, 2, &[transfer(&k0, 1, x, 5)]);
    let rlp_len = alloy_rlp::encode(&other.block).len();
    let (status, executed) =
        tree.new_payload(other.block.clone(), rlp_len, None, Some(&other.bal)).unwrap();
    assert_eq!(status, PayloadStatus::Valid(other.hash));
    assert!(executed.is_some(), "a payload not kept is executed");
}

/// Reads that wait, on the payload builder's thread only, until the gate opens.
#[derive(Debug)]
struct Held {
    inner: Arc<dyn StateSource>,
    gate: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

impl Held {
    fn wait(&self) {
        if std::thread::current().name() != Some("payload-builder") {
            return;
        }
        let open = self.gate.0.lock().unwrap();
        drop(self.gate.1.wait_while(open, |open| !*open).unwrap());
    }
}

impl StateSource for Held {
    fn account(&self, address: &Address) -> Result<Option<AccountInfo>, StateError> {
        self.wait();
        self.inner.account(address)
    }
    fn storage(&self, address: &Address, slot: &U256) -> Result<U256, StateError> {
        self.wait();
        self.inner.storage(address, slot)
    }
    fn code(&self, hash: &B256) -> Result<Option<Bytecode>, StateError> {
        self.wait();
        self.inner.code(hash)
    }
    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        self.wait();
        self.inner.block_hash(number)
    }
    fn has_storage(&self, address: &Address) -> Result<bool, StateError> {
        self.wait();
        self.inner.has_storage(address)
    }
}

fn new_payload_of(p: &BuiltPayload) -> gigagas_engine::message::NewPayload {
    gigagas_engine::message::NewPayload {
        block: p.block.clone(),
        rlp_len: alloy_rlp::encode(&p.block).len(),
        transactions_root: None,
        bal: Some(p.bal.clone()),
        bal_bytes: alloy_rlp::encode(&p.bal).len(),
        received: std::time::Instant::now(),
    }
}

/// A forkchoice update with attributes answers with the payload id while its payload is still
/// being built (a job on the payload builder's thread, held here until the test lets it go),
/// and the engine judges another payload and commits it with a forkchoice update meanwhile
/// (the store moves under the held job without waiting for it); `engine_getPayload`'s wait
/// then returns the payload built on the parent's state as it was (the pool's transaction of
/// the nonce the committed block used is in it: the same block a fresh node builds), whose
/// newPayload is VALID without executing it again (the job's payload came back to the engine
/// and was kept as executed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payload_build_does_not_hold_up_the_engine() {
    use gigagas_engine::{message::ForkchoiceState, EngineEvent, EngineService, EventHook};
    use tokio::time::{timeout, Duration};
    let (_dir, store, tree, genesis) = dev_chain();
    let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let held = gate.clone();
    let tree = tree.with_source_layer(move |inner| {
        Arc::new(Held { inner, gate: held.clone() }) as Arc<dyn StateSource>
    });
    let (k0, x) = (key(0), Address::repeat_byte(0x55));
    let other = build(&tree, genesis, 1, &[transfer(&k0, 0, x, 1000)]);
    // The pool holds another transaction of k0's nonce 0.
    let pooled = transfer(&k0, 0, Address::repeat_byte(0x56), 7);
    let pool = Arc::new(gigagas_txpool::TxPool::default());
    let raw = alloy_eips::eip2718::Encodable2718::encoded_2718(&pooled.0);
    let spec = revm::primitives::hardfork::SpecId::AMSTERDAM;
    let form = gigagas_txpool::BlobForm::Eip7594;
    pool.add_raw(&raw, 1337, 60_000_000, form, spec, &*store).unwrap();
    // (verdict, whether the payload was executed) of every newPayload.
    let verdicts = Arc::new(Mutex::new(Vec::new()));
    let seen = verdicts.clone();
    let hook = EventHook(Box::new(move |event| {
        if let EngineEvent::NewPayload { status, block, .. } = event {
            seen.lock().unwrap().push((*status, block.is_some()));
        }
    }));
    let (engine, thread) = EngineService::spawn(tree, pool, Arc::default(), Some(hook)).unwrap();
    let at_genesis = ForkchoiceState { head: genesis, safe: genesis, finalized: genesis };
    let within = Duration::from_secs(60);
    let answer = timeout(within, engine.forkchoice_updated(at_genesis, Some(attrs(2))))
        .await
        .expect("the forkchoice update answers while its payload is built")
        .unwrap();
    let id = answer.payload_id.expect("a payload id");
    assert!(engine.payloads().get(&id).is_none(), "the build is held");
    let status = timeout(within, engine.new_payload(new_payload_of(&other)))
        .await
        .expect("a newPayload is judged while a payload is built")
        .unwrap();
    assert_eq!(status, PayloadStatus::Valid(other.hash));
    assert!(engine.payloads().get(&id).is_none(), "the build is still held");
    let to_other = ForkchoiceState { head: other.hash, safe: other.hash, finalized: genesis };
    let answer = timeout(within, engine.forkchoice_updated(to_other, None))
        .await
        .expect("a forkchoice update that moves the store answers while a payload is built")
        .unwrap();
    assert_eq!(answer.status, PayloadStatus::Valid(other.hash));
    assert_eq!(store.best_block().unwrap(), Some((1, other.hash)), "the store moved");
    assert!(engine.payloads().get(&id).is_none(), "the build is still held");

    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    let built = timeout(within, engine.payloads().resolve(&id)).await.unwrap().unwrap().unwrap();
    assert_eq!(built.block.header.parent_hash, genesis);
    let (_fresh_dir, _, fresh, _) = dev_chain();
    assert_eq!(built.hash, build(&fresh, genesis, 2, &[pooled]).hash, "built on genesis' state");
    let status = engine.new_payload(new_payload_of(&built)).await.unwrap();
    assert_eq!(status, PayloadStatus::Valid(built.hash));
    assert_eq!(*verdicts.lock().unwrap(), [("VALID", true), ("VALID", false)]);
    engine.shutdown().await.unwrap();
    thread.join().unwrap();
}

/// The senders the pool recovered are taken by transaction hash and the rest recovered by the
/// parallel executor's workers as they claim their transactions (the default): a payload with
/// one sender known is VALID with that one counted; a transaction whose signature recovers no
/// key (r = 0), left to a worker, makes the payload INVALID naming the transaction.
#[test]
fn senders_the_pool_did_not_recover_are_recovered_by_the_executor() {
    let (_dir, _store, tree, genesis) = dev_chain();
    let known = Arc::new(gigagas_primitives::SenderCache::new(16));
    let mut tree = tree.with_known_senders(known.clone());
    let (k0, k1) = (key(0), key(1));
    let x = Address::repeat_byte(0x11);
    let txs = [transfer(&k0, 0, x, 1000), transfer(&k1, 0, x, 2000)];
    known.insert(*txs[0].0.tx_hash(), txs[0].1);

    let p = build(&tree, genesis, 1, &txs);
    let rlp_len = alloy_rlp::encode(&p.block).len();
    let (status, executed) =
        tree.new_payload(p.block.clone(), rlp_len, None, Some(&p.bal)).unwrap();
    assert_eq!(status, PayloadStatus::Valid(p.hash));
    let executed = executed.expect("a new payload is executed");
    assert!(executed.parallel);
    assert_eq!(executed.senders_known, 1, "the pooled transaction's sender taken from the cache");

    // A sibling whose second transaction's signature is broken (the transactions root follows).
    let q = build(&tree, genesis, 2, &txs);
    let mut block = q.block.clone();
    let TxEnvelope::Eip1559(signed) = &block.body.transactions[1] else { unreachable!() };
    let broken = Signature::new(U256::ZERO, signed.signature().s(), signed.signature().v());
    block.body.transactions[1] = signed.tx().clone().into_signed(broken).into();
    block.header.transactions_root =
        alloy_consensus::proofs::calculate_transaction_root(&block.body.transactions);
    let rlp_len = alloy_rlp::encode(&block).len();
    let (status, executed) = tree.new_payload(block, rlp_len, None, Some(&q.bal)).unwrap();
    assert!(executed.is_none());
    match status {
        PayloadStatus::Invalid { reason, .. } => {
            assert!(reason.contains("tx 1") && reason.contains("invalid signature"), "{reason}")
        }
        other => panic!("a transaction without a sender accepted: {other:?}"),
    }
}

/// While a sync rewrites the store beside it (snap sync), the tree answers SYNCING to payloads
/// and forkchoice updates, builds nothing, and reads of the head's state through the
/// in-memory chain go through the trie; once the sync ends it takes the stored head and
/// judges payloads again.
#[test]
fn a_backfill_sync_sets_the_tree_aside_until_it_ends() {
    let (_dir, store, mut tree, genesis) = dev_chain();
    let sender = key(1);
    let p1 = build(&tree, genesis, 12, &[transfer(&sender, 0, Address::repeat_byte(7), 5)]);
    tree.on_backfill_sync_started().unwrap();
    assert!(tree.backfill_active());
    assert_eq!(submit(&mut tree, &p1), PayloadStatus::Syncing);
    let hash = p1.block.header.hash_slow();
    assert_eq!(
        tree.forkchoice_updated(hash, B256::ZERO, B256::ZERO).unwrap().0,
        PayloadStatus::Syncing
    );
    assert!(tree.payload_job(genesis).unwrap().is_none(), "nothing is built");
    assert!(tree.canonical_in_memory_state().canonical_chain().backfill());
    // The sync left the store at genesis (as a sync too short to snap does).
    assert_eq!(tree.on_backfill_sync_finished().unwrap(), store.best_block().unwrap().unwrap());
    assert!(!tree.backfill_active());
    assert!(!tree.canonical_in_memory_state().canonical_chain().backfill());
    assert_eq!(submit(&mut tree, &p1), PayloadStatus::Valid(hash));
}

/// snap/2's catch-up: blocks built and executed on one store are applied to another from their
/// BALs alone (`apply_bal_block`, nothing executed), with the first store's receipts, and end
/// in the same state; a BAL whose post-state lies (its header's BAL hash following it) is
/// refused by the state root, receipts of another block by the receipts root, and neither
/// writes anything.
#[test]
fn blocks_applied_from_their_bals_end_in_the_executed_state() {
    use alloy_consensus::ReceiptEnvelope;
    use gigagas_validation::{apply_bal_block, BalBlock, ImportError};
    let (_a_dir, a, mut tree, genesis) = dev_chain();
    let (_b_dir, b, _, b_genesis) = dev_chain();
    assert_eq!(genesis, b_genesis);
    let (k0, k1) = (key(0), key(1));
    let (x, y) = (Address::repeat_byte(0x11), Address::repeat_byte(0x22));
    let watched = [address_of(&k0), address_of(&k1), x, y, Address::repeat_byte(0xfe)];
    let p1 = build(&tree, genesis, 1, &[transfer(&k0, 0, x, 1000), transfer(&k1, 0, y, 500)]);
    assert_eq!(submit(&mut tree, &p1), PayloadStatus::Valid(p1.hash));
    tree.forkchoice_updated(p1.hash, p1.hash, genesis).unwrap();
    let p2 = build(&tree, p1.hash, 2, &[transfer(&k0, 1, x, 2000)]);
    assert_eq!(submit(&mut tree, &p2), PayloadStatus::Valid(p2.hash));
    tree.forkchoice_updated(p2.hash, p2.hash, p1.hash).unwrap();
    assert_eq!(a.best_block().unwrap(), Some((2, p2.hash)));
    let receipts = |n| a.receipts_by_number(n).unwrap().unwrap();
    fn block<'a>(p: &'a BuiltPayload, receipts: &'a [ReceiptEnvelope]) -> BalBlock<'a> {
        BalBlock {
            header: &p.block.header,
            hash: p.hash,
            body: &p.block.body,
            bal: &p.bal,
            receipts,
        }
    }
    let (r1, r2) = (receipts(1), receipts(2));

    let applied = apply_bal_block(&b, block(&p1, &r1)).unwrap();
    assert!(applied.accounts >= 4 && applied.trie_nodes > 0, "{applied:?}");
    assert_eq!(b.best_block().unwrap(), Some((1, p1.hash)));

    // A BAL that lies about x's balance, its header's BAL hash following: the root refuses it.
    let mut lying = p2.clone();
    tamper_balance(&mut lying, x);
    match apply_bal_block(&b, block(&lying, &r2)) {
        Err(ImportError::StateRoot { number: 2, expected, .. }) => {
            assert_eq!(expected, p2.block.header.state_root)
        }
        other => panic!("{other:?}"),
    }
    // Block 2 with block 1's receipts: the receipts root refuses them.
    match apply_bal_block(&b, block(&p2, &r1)) {
        Err(ImportError::Invalid { number: 2, reason }) => assert!(reason.contains("receipts")),
        other => panic!("{other:?}"),
    }
    assert_eq!(b.best_block().unwrap(), Some((1, p1.hash)), "nothing written");
    assert_eq!(balance(&b, &x), U256::from(1000));

    apply_bal_block(&b, block(&p2, &r2)).unwrap();
    assert_eq!(b.best_block().unwrap(), Some((2, p2.hash)));
    for address in &watched {
        assert_eq!(b.account(address).unwrap(), a.account(address).unwrap(), "{address}");
    }
    assert_flat_state_matches_trie(&b, &watched);
    assert_eq!(b.receipts_by_number(2).unwrap().unwrap(), r2);
}

/// A payload whose parent is unknown is answered SYNCING and kept (reth's buffered blocks);
/// once its parent comes it is executed, so its next newPayload is VALID without executing it
/// and a forkchoice update makes both canonical. A payload kept on a parent found INVALID is
/// INVALID too, as linking to it.
#[test]
fn a_payload_before_its_parent_is_judged_when_the_parent_comes() {
    let (_dir, store, mut tree, genesis) = dev_chain();
    // The chain is built on another node.
    let (_other_dir, _, mut other, _) = dev_chain();
    let (k0, x) = (key(0), Address::repeat_byte(0x66));
    let p1 = build(&other, genesis, 1, &[transfer(&k0, 0, x, 1000)]);
    assert_eq!(submit(&mut other, &p1), PayloadStatus::Valid(p1.hash));
    let p2 = build(&other, p1.hash, 2, &[transfer(&k0, 1, x, 1000)]);

    assert_eq!(submit(&mut tree, &p2), PayloadStatus::Syncing, "parent unknown");
    assert_eq!(submit(&mut tree, &p1), PayloadStatus::Valid(p1.hash));
    let rlp_len = alloy_rlp::encode(&p2.block).len();
    let (status, executed) =
        tree.new_payload(p2.block.clone(), rlp_len, None, Some(&p2.bal)).unwrap();
    assert_eq!(status, PayloadStatus::Valid(p2.hash));
    assert!(executed.is_none(), "executed when its parent came, not again");
    let (status, _) = tree.forkchoice_updated(p2.hash, p1.hash, genesis).unwrap();
    assert_eq!(status, PayloadStatus::Valid(p2.hash));
    assert_eq!(store.best_block().unwrap(), Some((2, p2.hash)));
    assert_eq!(balance(&store, &x), U256::from(2000));

    // A parent whose BAL lies, and a child sent before it.
    let mut bad = build(&tree, p2.hash, 3, &[transfer(&k0, 2, x, 5)]);
    tamper_balance(&mut bad, x);
    let mut child = build(&tree, p2.hash, 4, &[]);
    child.block.header.parent_hash = bad.block.header.hash_slow();
    child.block.header.number = 4;
    let child_hash = child.block.header.hash_slow();
    assert_eq!(submit(&mut tree, &child), PayloadStatus::Syncing);
    assert!(matches!(submit(&mut tree, &bad), PayloadStatus::Invalid { .. }));
    match submit(&mut tree, &child) {
        PayloadStatus::Invalid { reason, .. } => {
            assert!(reason.contains("links to invalid ancestor"), "{reason}")
        }
        other => panic!("the child of an invalid payload {child_hash}: {other:?}"),
    }
}
