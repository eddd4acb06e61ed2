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

/// A chain that creates its state (`--state-by-chain`) names two heads in Engine API calls: the
/// chain's last block (`newpayload.json`, `headfcu.json`) and the state part's last block
/// (`state-newpayload.json`, `state-headfcu.json`), where a node taking the state by snap sync
/// is pointed before the mix's blocks.
#[test]
fn a_state_by_chain_names_the_state_parts_head() {
    let dir = tempfile::tempdir().unwrap();
    let mix = 2;
    let args = [
        "--fork",
        "amsterdam",
        "--mix",
        "spread",
        "--gas",
        "3M",
        "--blocks",
        "2",
        "--state-by-chain",
        "--state-accounts",
        "300",
        "--state-slots",
        "300",
        "--state-contracts",
        "10",
        "--state-gas",
        "10M",
    ];
    let info = gen(dir.path(), &args);
    let blocks = info["blocks"].as_array().unwrap();
    assert!(blocks.len() > mix + 1, "the state takes blocks of its own: {}", blocks.len());
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.path().join(name)).unwrap()).unwrap()
    };
    for (prefix, block) in
        [("", &blocks[blocks.len() - 1]), ("state-", &blocks[blocks.len() - mix - 1])]
    {
        let payload = &read(&format!("{prefix}newpayload.json"))[0];
        assert_eq!(payload["method"], "engine_newPayloadV5", "{prefix}: with its BAL");
        let p = &payload["params"][0];
        assert_eq!(p["blockHash"], block["hash"], "{prefix}newpayload.json");
        let number =
            u64::from_str_radix(p["blockNumber"].as_str().unwrap().trim_start_matches("0x"), 16);
        assert_eq!(number.unwrap(), block["number"].as_u64().unwrap(), "{prefix}newpayload.json");
        let fcu = read(&format!("{prefix}headfcu.json"));
        assert_eq!(fcu["method"], "engine_forkchoiceUpdatedV4");
        assert_eq!(fcu["params"][0]["headBlockHash"], block["hash"], "{prefix}headfcu.json");
    }
    // The state part ends where the mix begins: chain-state.rlp holds exactly the blocks up to
    // the state part's head.
    let state_part = std::fs::read(dir.path().join("chain-state.rlp")).unwrap();
    let mut buf = state_part.as_slice();
    let mut count = 0;
    while !buf.is_empty() {
        let header = alloy_rlp::Header::decode(&mut buf).unwrap();
        buf = &buf[header.payload_length..];
        count += 1;
    }
    assert_eq!(count, blocks.len() - mix);

    // `--mix-files-only`: the same chain, the state part's blocks and the whole chain left
    // unwritten; the mix's blocks and the engine calls byte for byte the same.
    let only = tempfile::tempdir().unwrap();
    let info_only = gen(only.path(), &[&args[..], &["--mix-files-only"]].concat());
    let hashes = |info: &serde_json::Value| -> Vec<serde_json::Value> {
        info["blocks"].as_array().unwrap().iter().map(|b| b["hash"].clone()).collect()
    };
    assert_eq!(hashes(&info_only), hashes(&info));
    for name in ["chain.rlp", "bal.rlp", "chain-state.rlp"] {
        assert!(!only.path().join(name).exists(), "{name} written under --mix-files-only");
    }
    for name in ["chain-blocks.rlp", "state-newpayload.json", "newpayload.json", "genesis.json"] {
        let file = |d: &Path| std::fs::read(d.join(name)).unwrap();
        assert_eq!(file(only.path()), file(dir.path()), "{name}");
    }
}
