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
