//! `gigagas proofs-check` on the mainnet-proofs data set: every block's state root rebuilt from
//! the parent's proofs and the executed diff equals the header's; tampered answers are caught.

use super::json;
use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
    process::{Command, Output},
};

fn proofs_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mainnet-proofs");
    assert!(
        dir.is_dir(),
        "../shared/data/mainnet-proofs is missing ({}): these tests need the shared data beside the project",
        dir.display()
    );
    dir
}

fn proofs_check(path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .args(["proofs-check", "--json"])
        .arg(path)
        .output()
        .expect("run gigagas")
}

#[test]
fn every_block_state_root_matches() {
    let out = proofs_check(&proofs_dir());
    let report = json(&out);
    let blocks = report.as_array().expect("array");
    assert_eq!(blocks.len(), 12, "the data set has 12 block files");
    for b in blocks {
        assert_eq!(b["matches"], true, "{b}");
        assert_eq!(b["root"], b["header_root"], "{b}");
        assert!(b["error"].is_null(), "{b}");
    }
    // Blocks that delete accounts (Spurious Dragon's empty-account clearing at 2,675,000) and
    // clear slots need the siblings from the block's own proofs: they are in the set.
    assert!(blocks.iter().any(|b| b["number"] == 2_675_000));
    assert!(out.status.success());
}

/// Rewrites `block-1150000.json.gz` with `edit` applied to its JSON, into `dir`.
fn tampered(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let raw = std::fs::read(proofs_dir().join("block-1150000.json.gz")).unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&raw[..]).read_to_string(&mut text).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut doc);
    let path = dir.join("block-1150000.json.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(doc.to_string().as_bytes()).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    path
}

#[test]
fn tampered_proof_answer_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    // A parent-block balance that the account proof does not hold.
    let path = tampered(dir.path(), |doc| {
        assert_eq!(doc["proofs"][0][0]["block_no"], 1_149_999);
        doc["proofs"][0][1]["balance"] = "0x1".into();
    });
    let out = proofs_check(&path);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    let error = report[0]["error"].as_str().expect("an error");
    assert!(error.contains("proofs at the parent") && error.contains("proof holds"), "{error}");
}

#[test]
fn wrong_header_state_root_is_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let path = tampered(dir.path(), |doc| {
        let blocks = doc["full_blocks"].as_array_mut().unwrap();
        let block = blocks.iter_mut().find(|b| b[0]["block_no"] == 1_150_000).unwrap();
        block[1]["stateRoot"] =
            "0x1111111111111111111111111111111111111111111111111111111111111111".into();
    });
    let out = proofs_check(&path);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    assert_eq!(report[0]["matches"], false);
    assert_ne!(report[0]["root"], report[0]["header_root"]);
}

/// A recorded file with more blocks than the block and its parent (an ancestor, an uncle at the
/// block's height) and proofs at another block: the block and its parent are picked by number
/// and hash and the state root still matches.
#[test]
fn extra_blocks_and_proofs_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let path = tampered(dir.path(), |doc| {
        let blocks = doc["full_blocks"].as_array_mut().unwrap();
        let find = |n: u64| blocks.iter().find(|b| b[0]["block_no"] == n).unwrap().clone();
        let (parent, block) = (find(1_149_999), find(1_150_000));
        let mut ancestor = parent.clone();
        ancestor[0]["block_no"] = 1_149_998.into();
        ancestor[1]["number"] = "0x118c9e".into();
        ancestor[1]["hash"] = format!("0x{}", "a1".repeat(32)).into();
        // An uncle: same height and parent as the block, another hash and state root.
        let mut uncle = block.clone();
        uncle[1]["hash"] = format!("0x{}", "b2".repeat(32)).into();
        uncle[1]["stateRoot"] = format!("0x{}", "c3".repeat(32)).into();
        // Put the extras first, so that picking by position would fail.
        blocks.insert(0, uncle);
        blocks.insert(0, ancestor);
        let proofs = doc["proofs"].as_array_mut().unwrap();
        let mut other = proofs[0].clone();
        other[0]["block_no"] = 1_149_998.into();
        proofs.push(other);
    });
    let out = proofs_check(&path);
    let report = json(&out);
    assert!(report[0]["error"].is_null(), "{report}");
    assert_eq!(report[0]["matches"], true, "{report}");
    assert!(out.status.success());
}

/// Without the block's parent the file is refused, naming what is missing.
#[test]
fn a_missing_parent_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = tampered(dir.path(), |doc| {
        doc["full_blocks"].as_array_mut().unwrap().retain(|b| b[0]["block_no"] != 1_149_999);
    });
    let out = proofs_check(&path);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    let error = report[0]["error"].as_str().expect("an error");
    assert!(error.contains("the parent of block 1150000"), "{error}");
}
