//! `gigagas init` + `gigagas import` on the execution-apis chain, through the command line.

use super::json;
use std::{path::PathBuf, process::Command};

fn suite() -> PathBuf {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/execution-apis/tests");
    assert!(dir.is_dir(), "../shared/data/execution-apis is missing ({})", dir.display());
    dir
}

fn gigagas(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gigagas")).args(args).output().expect("run gigagas")
}

#[test]
fn init_then_import_verifies_every_block() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    let genesis = suite().join("genesis.json");
    let out = gigagas(&[
        "init".as_ref(),
        "--genesis".as_ref(),
        genesis.as_os_str(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let chain = suite().join("chain.rlp");
    let import = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "import".as_ref(),
            chain.as_os_str(),
            "--datadir".as_ref(),
            datadir.as_os_str(),
            "--json".as_ref(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        gigagas(&args)
    };
    let out = import(&[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json(&out);
    assert_eq!(report["blocks_imported"], 54);
    assert_eq!(report["head"], 54);
    assert!(report["error"].is_null());
    assert!(report["mgas_per_s"].as_f64().unwrap() > 0.0);
    // The datadir keeps the chain: a second import skips every block.
    let report = json(&import(&[]));
    assert_eq!(report["blocks_imported"], 0);
    assert_eq!(report["blocks_skipped"], 54);

    // `gigagas db` reads back what was stored, decoded: the head, a header, a BAL.
    let db = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["db".as_ref(), "--datadir".as_ref(), datadir.as_os_str()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let out = gigagas(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        json(&out)
    };
    let head = db(&["head"]);
    assert_eq!(head["number"], 54, "{head}");
    let header = db(&["header", "54"]);
    assert_eq!(header["number"], "0x36", "{header}");
    assert_eq!(header["stateRoot"], head["stateRoot"], "{header}");
    assert!(db(&["bal", "54"]).is_array());
    let missing = gigagas(&[
        "db".as_ref(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
        "header".as_ref(),
        "55".as_ref(),
    ]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no header stored for block 55"));
}

#[test]
fn import_without_init_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let chain = suite().join("chain.rlp");
    let out = gigagas(&[
        "import".as_ref(),
        chain.as_os_str(),
        "--datadir".as_ref(),
        dir.path().as_os_str(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("gigagas init"));
}

/// `kill -9` during `gigagas import`: the datadir reopens at a committed block (header, state and
/// trie nodes of every block up to it, nothing after), and importing again continues from there
/// with every later state root verified against the stored trie.
#[test]
fn killed_import_reopens_and_continues() {
    let chain = suite().join("chain.rlp");
    let genesis = suite().join("genesis.json");
    let fresh = |dir: &std::path::Path| {
        let out = gigagas(&[
            "init".as_ref(),
            "--genesis".as_ref(),
            genesis.as_os_str(),
            "--datadir".as_ref(),
            dir.as_os_str(),
        ]);
        assert!(out.status.success());
    };
    let import_cmd = |dir: &std::path::Path| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gigagas"));
        c.args([
            "import".as_ref(),
            chain.as_os_str(),
            "--datadir".as_ref(),
            dir.as_os_str(),
            "--json".as_ref(),
        ]);
        c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
        c
    };
    // How long a whole import takes here, to aim the kills inside it.
    let probe = tempfile::tempdir().unwrap();
    fresh(probe.path());
    let start = std::time::Instant::now();
    assert!(import_cmd(probe.path()).output().unwrap().status.success());
    let whole = start.elapsed();
    let mut mid_way = 0;
    for trial in 1..=30u32 {
        let dir = tempfile::tempdir().unwrap();
        fresh(dir.path());
        let mut child = import_cmd(dir.path()).spawn().unwrap();
        std::thread::sleep(whole * (trial % 10 + 1) / 11);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        // Reopen: continue the import; every block after the head is executed and its root
        // verified from the stored trie, so a half-written block would fail here.
        let out = import_cmd(dir.path()).output().unwrap();
        assert!(out.status.success(), "trial {trial}: {}", String::from_utf8_lossy(&out.stdout));
        let report = json(&out);
        assert_eq!(report["head"], 54, "trial {trial}");
        let skipped = report["blocks_skipped"].as_u64().unwrap();
        assert_eq!(skipped + report["blocks_imported"].as_u64().unwrap(), 54);
        if skipped > 0 && skipped < 54 {
            mid_way += 1;
            if mid_way >= 3 {
                break;
            }
        }
    }
    assert!(mid_way > 0, "no kill landed inside an import: the test showed nothing");
}

/// A block that fails (here block 41 with a wrong `stateRoot`) stops the import with exit code
/// 1, and `--json` still lists every block committed before it and names the failing one: its
/// number, hash and typed error (a verdict, not an internal fault).
#[test]
fn a_failing_block_is_reported_with_the_blocks_before_it() {
    use alloy_consensus::{Block, TxEnvelope};
    use alloy_primitives::B256;
    use alloy_rlp::{Decodable, Encodable};
    let raw = std::fs::read(suite().join("chain.rlp")).unwrap();
    let mut buf = &raw[..];
    let mut blocks = Vec::new();
    while !buf.is_empty() {
        blocks.push(Block::<TxEnvelope>::decode(&mut buf).unwrap());
    }
    assert_eq!(blocks[40].header.number, 41);
    let mut bad = blocks[40].clone();
    bad.header.state_root = B256::repeat_byte(0x11);
    let mut file = Vec::new();
    for block in blocks[..40].iter().chain([&bad]) {
        block.encode(&mut file);
    }
    let dir = tempfile::tempdir().unwrap();
    let (datadir, chain) = (dir.path().join("db"), dir.path().join("bad.rlp"));
    std::fs::write(&chain, &file).unwrap();
    let genesis = suite().join("genesis.json");
    let init = gigagas(&[
        "init".as_ref(),
        "--genesis".as_ref(),
        genesis.as_os_str(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
    ]);
    assert!(init.status.success());
    let out = gigagas(&[
        "import".as_ref(),
        chain.as_os_str(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
        "--json".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    assert_eq!(report["blocks_imported"], 40, "{report}");
    assert_eq!(report["head"], 40);
    let listed = report["blocks"].as_array().unwrap();
    assert_eq!(listed.len(), 40);
    assert_eq!(listed[39]["number"], 40);
    assert_eq!(listed[39]["hash"], blocks[39].header.hash_slow().to_string());
    let failed = &report["failed"];
    assert_eq!(failed["number"], 41, "{failed}");
    assert_eq!(failed["hash"], bad.header.hash_slow().to_string());
    assert_eq!(failed["kind"], "StateRoot");
    assert_eq!(failed["internal"], false);
    assert!(failed["error"].as_str().unwrap().contains("block 41"), "{failed}");
}

#[test]
fn named_chains_initialize_and_a_datadir_keeps_its_chain() {
    let dir = tempfile::tempdir().unwrap();
    let datadir = dir.path().join("db");
    let out = gigagas(&[
        "init".as_ref(),
        "--chain".as_ref(),
        "hoodi".as_ref(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Hoodi's well-known genesis hash, from geth 1.17.10's built-in genesis file.
    assert!(
        stdout.contains("0xbbe312868b376a3001692a646dd2d7d1e4406380dfd86b98aa8a34d1557c971b"),
        "{stdout}"
    );
    // A node told another chain refuses the datadir, naming both genesis hashes.
    let out = gigagas(&[
        "node".as_ref(),
        "--chain".as_ref(),
        "sepolia".as_ref(),
        "--datadir".as_ref(),
        datadir.as_os_str(),
        "--disable-network".as_ref(),
        "--http.port".as_ref(),
        "0".as_ref(),
        "--authrpc.port".as_ref(),
        "0".as_ref(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--chain sepolia: the datadir's genesis is 0xbbe31286")
            && stderr
                .contains("0x25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9"),
        "{stderr}"
    );
}
