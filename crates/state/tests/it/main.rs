//! Integration tests of the mainnet loader over `../shared/data/mainnet`.

use gigagas_state::mainnet::{self, LoadError};
use std::path::Path;

fn data_dir() -> std::path::PathBuf {
    let dir = mainnet::default_dir();
    assert!(
        dir.is_dir(),
        "../shared/data/mainnet is missing ({}): these tests need the shared data beside the project",
        dir.display()
    );
    dir
}

#[test]
fn loads_all_52_blocks_with_pre_states() {
    let blocks = mainnet::load(&data_dir(), None, &|| {}).unwrap();
    assert_eq!(blocks.len(), 52);
    let txs: usize = blocks.iter().map(|b| b.block.transactions.len()).sum();
    assert_eq!(txs, 11_308);
    let gas: u64 = blocks.iter().map(|b| b.block.header.gas_used).sum();
    assert_eq!(gas / 100_000, 5_558, "555.8 Mgas in the README");
    for b in &blocks {
        assert_eq!(b.block.claimed_senders.len(), b.block.transactions.len());
        assert!(b.pre_state.account_count() > 0 || b.block.transactions.is_empty());
    }
}

fn copy_block(dir: &Path, number: u64) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let src = dir.join("blocks").join(number.to_string());
    let dst = tmp.path().join("blocks").join(number.to_string());
    std::fs::create_dir_all(&dst).unwrap();
    for f in ["block.json", "pre_state.json"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    for f in ["bytecodes.json.gz", "block_hashes.json"] {
        std::fs::copy(dir.join(f), tmp.path().join(f)).unwrap();
    }
    tmp
}

#[test]
fn malformed_block_names_file_and_field() {
    let tmp = copy_block(&data_dir(), 46147);
    let path = tmp.path().join("blocks/46147/block.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"gasUsed\":\"0x5208\"", "\"gasUsed\":\"zz\"", 1))
        .unwrap();
    let err = mainnet::load(tmp.path(), None, &|| {}).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, LoadError::Malformed { .. }), "{msg}");
    assert!(msg.contains("blocks/46147/block.json") && msg.contains("gasUsed"), "{msg}");
}

#[test]
fn malformed_pre_state_names_file_and_field() {
    let tmp = copy_block(&data_dir(), 46147);
    let path = tmp.path().join("blocks/46147/pre_state.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"nonce\":", "\"nonce\":\"x\",\"_\":", 1)).unwrap();
    let msg = mainnet::load(tmp.path(), None, &|| {}).unwrap_err().to_string();
    assert!(msg.contains("pre_state.json") && msg.contains("nonce"), "{msg}");
}

#[test]
fn missing_file_and_folder_are_named() {
    let tmp = copy_block(&data_dir(), 46147);
    std::fs::remove_file(tmp.path().join("block_hashes.json")).unwrap();
    let msg = mainnet::load(tmp.path(), None, &|| {}).unwrap_err().to_string();
    assert!(msg.contains("block_hashes.json"), "{msg}");
    let msg = mainnet::load(&tmp.path().join("nope"), None, &|| {}).unwrap_err().to_string();
    assert!(msg.contains("not found"), "{msg}");
}
