//! `init` + `import` (the file import through the tree's chain insertion) of the execution-apis
//! chain (54 blocks from genesis through Osaka/BPO2) on RocksDB: every block's header checks,
//! execution results and state root verified; re-import skips; a block with a wrong state root
//! stops the import with the blocks before it kept.

use alloy_consensus::{Block, TxEnvelope};
use alloy_rlp::Decodable;
use gigagas_engine::import::{import_blocks, import_blocks_with, ImportOptions};
use gigagas_storage::{FullProvider, Storage};
use gigagas_validation::{init_genesis, merge_updates, ImportError};
use std::{path::PathBuf, sync::Arc};

fn suite() -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/execution-apis/tests");
    assert!(
        dir.is_dir(),
        "../shared/data/execution-apis is missing ({}): these tests need the shared data beside the project",
        dir.display()
    );
    dir
}

fn blocks(rlp: &[u8]) -> Vec<Block<TxEnvelope>> {
    let mut buf = rlp;
    let mut out = Vec::new();
    while !buf.is_empty() {
        out.push(Block::<TxEnvelope>::decode(&mut buf).unwrap());
    }
    out
}

#[test]
fn execution_apis_chain_imports_with_every_state_root_verified() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn FullProvider> = Arc::new(Storage::open(dir.path()).unwrap());
    let genesis = std::fs::read(suite().join("genesis.json")).unwrap();
    let init = init_genesis(&*store, &genesis).unwrap();
    assert!(!init.already_initialized);
    assert_eq!(store.best_block().unwrap(), Some((0, init.hash)));
    assert!(init_genesis(&*store, &genesis).unwrap().already_initialized);
    // The same genesis written otherwise (another file hash) is recognised by its block hash;
    // another allocation is another chain.
    let mut value: serde_json::Value = serde_json::from_slice(&genesis).unwrap();
    let pretty = serde_json::to_vec_pretty(&value).unwrap();
    assert_ne!(pretty, genesis);
    let again = init_genesis(&*store, &pretty).unwrap();
    assert!(again.already_initialized);
    assert_eq!(again.hash, init.hash);
    value["alloc"]["0x00000000000000000000000000000000000000aa"] =
        serde_json::json!({ "balance": "0x1" });
    let other = init_genesis(&*store, &serde_json::to_vec(&value).unwrap());
    assert!(matches!(other, Err(ImportError::OtherChain { head: 0, .. })), "{other:?}");

    let rlp = std::fs::read(suite().join("chain.rlp")).unwrap();
    let expected = blocks(&rlp);
    let mut seen = 0;
    let imported = import_blocks(&store, &rlp, &mut |_| seen += 1).unwrap();
    assert_eq!(imported.len(), expected.len());
    assert_eq!(seen, expected.len());
    let last = expected.last().unwrap();
    assert_eq!(store.best_block().unwrap(), Some((last.header.number, last.header.hash_slow())));
    assert!(imported.iter().all(|b| b.imported));
    assert!(imported.iter().any(|b| b.transactions > 0 && b.cache.misses > 0));

    // Again: every block is already there.
    let again = import_blocks(&store, &rlp, &mut |_| {}).unwrap();
    assert!(again.iter().all(|b| !b.imported));
}

#[test]
fn wrong_state_root_stops_the_import_at_that_block() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn FullProvider> = Arc::new(Storage::open(dir.path()).unwrap());
    init_genesis(&*store, &std::fs::read(suite().join("genesis.json")).unwrap()).unwrap();
    let mut chain = blocks(&std::fs::read(suite().join("chain.rlp")).unwrap());
    chain.truncate(4);
    chain[3].header.state_root = alloy_primitives::B256::repeat_byte(0x11);
    let rlp: Vec<u8> = chain.iter().flat_map(alloy_rlp::encode).collect();
    let err = import_blocks(&store, &rlp, &mut |_| {}).unwrap_err();
    match err {
        ImportError::StateRoot { number, .. } => assert_eq!(number, chain[3].header.number),
        other => panic!("expected a state-root error, got {other}"),
    }
    assert_eq!(store.best_block().unwrap().map(|h| h.0), Some(chain[2].header.number));
}

/// Megablock state roots: the merged diffs of 2, 5 and all 54 consecutive blocks applied to the
/// stored trie of the state before them give each last block's `stateRoot`.
#[test]
fn megablock_state_roots_equal_the_last_headers() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn FullProvider> = Arc::new(Storage::open(dir.path()).unwrap());
    init_genesis(&*store, &std::fs::read(suite().join("genesis.json")).unwrap()).unwrap();
    let rlp = std::fs::read(suite().join("chain.rlp")).unwrap();
    let imported = import_blocks_with(
        &store,
        &rlp,
        ImportOptions { keep_updates: true, optimistic: true, ..Default::default() },
        &mut |_| {},
    )
    .unwrap();
    for size in [2, 5, imported.len()] {
        for chunk in imported.chunks_exact(size) {
            let merged = merge_updates(chunk.iter().map(|b| b.updates.as_deref().unwrap()));
            let root =
                gigagas_trie::update_state_root(chunk[0].parent_state_root, &merged, &&*store)
                    .unwrap();
            assert_eq!(root.root, chunk[size - 1].post_state_root, "blocks {}..", chunk[0].number);
        }
    }
}
