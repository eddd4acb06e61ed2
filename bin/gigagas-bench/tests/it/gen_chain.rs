//! `gigagas-bench gen-chain`: every generated block imports through the node's storage path
//! (`gigagas_engine::import::import_blocks`: header checks, execution over RocksDB, state root from the
//! stored trie) on both rule sets and every mix, every transaction succeeds (the Uniswap V2
//! setup and swaps included), and the same seed gives the same files.

use super::data_dir;
use gigagas_engine::import::import_blocks;
use gigagas_storage::{FullProvider, Storage};
use gigagas_validation::init_genesis;
use std::{path::Path, process::Command, sync::Arc};

fn gen(out: &Path, args: &[&str]) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .arg("gen-chain")
        .arg("--out")
        .arg(out)
        .arg("--data")
        .arg(data_dir())
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Imports `out`'s chain into a fresh datadir initialized with its genesis; returns the
/// blocks imported.
fn import(out: &Path) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn FullProvider> = Arc::new(Storage::open(dir.path()).unwrap());
    init_genesis(&*store, &std::fs::read(out.join("genesis.json")).unwrap()).unwrap();
    let chain = std::fs::read(out.join("chain.rlp")).unwrap();
    let imported = import_blocks(&store, &chain, &mut |_| {}).unwrap();
    imported.iter().filter(|b| b.imported).count()
}

#[test]
fn generated_chains_import_on_both_rule_sets() {
    for (fork, mix) in
        [("osaka", "mainnet"), ("amsterdam", "mainnet"), ("osaka", "hot"), ("amsterdam", "cold")]
    {
        let dir = tempfile::tempdir().unwrap();
        let info = gen(
            dir.path(),
            &["--fork", fork, "--mix", mix, "--gas", "3M", "--blocks", "3", "--cold-slots", "2000"],
        );
        let blocks = info["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 3);
        for b in blocks {
            // Filled to about the gas asked (the estimate per kind), and nothing left out;
            // under Amsterdam the mainnet mix's first block holds the Uniswap pair's setup (its
            // code deposit is 18.5M gas under EIP-8037), and a header counts the larger of
            // execution and state gas, below the receipts' sum the blocks are filled by.
            let used = b["gas_used"].as_u64().unwrap();
            let setup = fork == "amsterdam" && mix == "mainnet" && b["number"] == 1;
            let low = if fork == "amsterdam" { 1_000_000 } else { 2_000_000 };
            assert!(setup || (low..=4_500_000).contains(&used), "{fork} {mix}: {b}");
            assert!(b["transactions"].as_u64().unwrap() > if setup { 1 } else { 5 }, "{b}");
            assert_eq!(b["failed"], 0, "every transaction succeeds: {fork} {mix}: {b}");
        }
        assert_eq!(import(dir.path()), 3, "{fork} {mix}: every block imports with its state root");
        if mix == "mainnet" {
            let kinds = info["transactions_by_kind"].as_object().unwrap();
            for kind in [
                "eth_to_fresh",
                "usdt_transfer",
                "weth_transfer",
                "weth_deposit",
                "uniswap_swap",
                "create_pair",
                "add_liquidity",
                "slot_writes",
            ] {
                assert!(
                    kinds.get(kind).and_then(|v| v.as_u64()).unwrap_or(0) > 0,
                    "{kind}: {kinds:?}"
                );
            }
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_chain() {
    let (a, b, c) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args = ["--gas", "2M", "--blocks", "2"];
    gen(a.path(), &args);
    gen(b.path(), &args);
    gen(c.path(), &[&args[..], &["--seed", "2"]].concat());
    let read = |d: &tempfile::TempDir| std::fs::read(d.path().join("chain.rlp")).unwrap();
    assert_eq!(read(&a), read(&b));
    assert_ne!(read(&a), read(&c));
}
