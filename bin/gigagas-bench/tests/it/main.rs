//! End-to-end tests of `gigagas-bench bench` on real mainnet blocks: the one-screen summary and its
//! chart, `--verbose`, `--json`, `--dump-bal`, `--bal` with a faithful, a tampered and a
//! malformed BAL file, and a missing data folder.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

fn data_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mainnet");
    assert!(
        dir.is_dir(),
        "../shared/data/mainnet is missing ({}): these tests need the shared data beside the project",
        dir.display()
    );
    dir
}

/// A `gen-chain` chain (mainnet mix, 3M gas per block, `blocks` blocks, `fork` rules) in a
/// temporary folder, with the `info.json` the generator printed.
fn gen_chain(fork: &str, blocks: u64) -> (tempfile::TempDir, serde_json::Value) {
    let chain = tempfile::tempdir().unwrap();
    let gen = Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .args(["gen-chain", "--fork", fork, "--mix", "mainnet", "--gas", "3M", "--json"])
        .arg("--blocks")
        .arg(blocks.to_string())
        .arg("--data")
        .arg(data_dir())
        .arg("--out")
        .arg(chain.path())
        .output()
        .unwrap();
    assert!(gen.status.success(), "{}", String::from_utf8_lossy(&gen.stderr));
    let info = serde_json::from_slice(&gen.stdout).unwrap();
    (chain, info)
}

/// A Frontier block with a SELFDESTRUCT fallback and a Cancun block with withdrawals.
const BLOCKS: &str = "116525,19426587";

fn bench(extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .arg("bench")
        .arg("--data")
        .arg(data_dir())
        .args(["--blocks", BLOCKS, "--threads", "1,2", "--repeat", "1", "--batch", "1,all"])
        .args(extra)
        .arg("--no-plot")
        .output()
        .expect("run gigagas-bench")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("stdout is not JSON ({e}); stderr: {}", String::from_utf8_lossy(&out.stderr))
    })
}

#[test]
fn json_report_and_bal_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_str().unwrap();
    let out = bench(&["--json", "--project", "--dump-bal", dir]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json(&out);
    assert_eq!(report["blocks_validated"], 2);
    assert!(report["cpu_model"].is_string() && report["first_block"] == 116525, "{report}");
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * 3 * 2, "threads x schedulers x batches");
    for run in runs {
        for key in [
            "threads",
            "scheduler",
            "batch",
            "gas",
            "seconds",
            "mgas_per_s",
            "speedup",
            "vs_ceiling",
            "longest_tx_ms",
        ] {
            assert!(!run[key].is_null(), "run lacks {key}: {run}");
        }
        assert_eq!(run["blocks_validated"], 2, "{run}");
        assert_eq!(run["fallback_blocks"], serde_json::json!([116525]));
    }
    assert!(report["projection"].as_array().is_some_and(|p| !p.is_empty()));
    // One ceiling (independent plain loops at once) per thread count above one.
    let ceilings = report["ceilings"].as_array().unwrap();
    assert_eq!(ceilings.len(), 1, "{ceilings:?}");
    assert_eq!(ceilings[0]["threads"], 2);
    assert!(ceilings[0]["speedup"].as_f64().is_some_and(|s| s > 0.0), "{ceilings:?}");

    // The dumped BAL is in the execution-spec-tests shape.
    let text = std::fs::read_to_string(tmp.path().join("19426587.json")).unwrap();
    for key in [
        "\"address\"",
        "\"storageChanges\"",
        "\"slotChanges\"",
        "\"blockAccessIndex\"",
        "\"postValue\"",
        "\"storageReads\"",
        "\"balanceChanges\"",
        "\"postBalance\"",
        "\"nonceChanges\"",
        "\"postNonce\"",
        "\"codeChanges\"",
    ] {
        assert!(text.contains(key), "dumped BAL lacks {key}");
    }

    // Executing with the dumped BALs validates the same blocks.
    let out = bench(&["--json", "--bal", dir]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(json(&out)["blocks_validated"], 2);

    // A tampered balance is rejected, naming block, transaction and account.
    let path = tmp.path().join("19426587.json");
    let mut bal: serde_json::Value = serde_json::from_str(&text).unwrap();
    let (address, index) = bal
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find_map(|a| {
            let address = a["address"].as_str().unwrap().to_owned();
            let change = a["balanceChanges"].as_array_mut()?.first_mut()?;
            let index = change["blockAccessIndex"].as_str().unwrap().to_owned();
            change["postBalance"] = serde_json::json!("0x1");
            Some((address, index))
        })
        .unwrap();
    std::fs::write(&path, serde_json::to_vec(&bal).unwrap()).unwrap();
    let out = bench(&["--json", "--bal", dir]);
    assert!(!out.status.success(), "a tampered BAL must fail the run");
    assert_eq!(json(&out)["blocks_validated"], 1);
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        stderr.contains("block 19426587") && stderr.contains(&address.to_lowercase()),
        "{stderr}"
    );
    let index = u64::from_str_radix(index.trim_start_matches("0x"), 16).unwrap();
    let phase = if index == 0 { "pre-execution".to_owned() } else { format!("(index {index})") };
    assert!(stderr.contains(&phase) || stderr.contains("post-execution"), "{stderr}");

    // A malformed file is named with the failing field.
    std::fs::write(&path, br#"[{"address": "0xzz"}]"#).unwrap();
    let out = bench(&["--bal", dir]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("19426587.json") && stderr.contains("address"), "{stderr}");
}

/// The default output fits one screen and carries the header, every measured configuration with
/// its validation, the projection beside the published curve and the chart's path; `--verbose`
/// adds every figure of the full report; the chart is a PNG.
#[test]
fn summary_fits_one_screen_and_writes_the_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let png = tmp.path().join("bench").join("speedup.png");
    let run = |verbose: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gigagas-bench"));
        cmd.arg("bench")
            .arg("--data")
            .arg(data_dir())
            .args(["--blocks", BLOCKS, "--threads", "1,2", "--repeat", "1", "--project"])
            .arg("--plot")
            .arg(&png);
        if verbose {
            cmd.arg("--verbose");
        }
        let out = cmd.output().expect("run gigagas-bench");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let summary = run(false);
    let lines: Vec<&str> = summary.lines().collect();
    assert!(lines.len() <= 40, "{} lines:\n{summary}", lines.len());
    assert!(lines.iter().any(|l| l.starts_with("machine") && l.contains("cores")), "{summary}");
    assert!(lines.iter().any(|l| l.starts_with("data") && l.contains("2 blocks")), "{summary}");
    // Three schedulers at 1 and 2 threads, each with per-block and megablock columns, all valid.
    for scheduler in ["ols", "gas-limit", "gas-used"] {
        let rows: Vec<&&str> = lines.iter().filter(|l| l.starts_with(scheduler)).collect();
        assert_eq!(rows.len(), 2, "{scheduler}: {summary}");
        assert!(
            rows.iter().all(|l| l.ends_with("2/2") && l.matches('x').count() >= 4),
            "{summary}"
        );
    }
    assert!(summary.contains("ceiling: 2 plain loops at once"), "{summary}");
    for threads in ["1", "2", "4", "8", "16", "32"] {
        assert!(
            lines.iter().any(|l| l.split('|').next().is_some_and(|c| c.trim() == threads)),
            "projection row {threads}: {summary}"
        );
    }
    assert!(summary.contains(&format!("plot: {}", png.display())), "{summary}");
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 10_000,
        "{} bytes",
        bytes.len()
    );

    let verbose = run(true);
    for detail in ["longest tx", "projection vs measured:", "one-thread stages", "sender recovery"]
    {
        assert!(verbose.contains(detail), "--verbose lacks {detail}: {verbose}");
    }
    assert!(verbose.lines().count() > lines.len() + 40, "{verbose}");
}

#[test]
fn missing_data_folder_is_named() {
    let out = Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .args(["bench", "--data", "/nonexistent/mainnet", "--repeat", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/mainnet") && stderr.contains("not found"), "{stderr}");
}

mod baseline;
mod gen_chain;
mod hw;
mod proofs_check;
mod replay;

/// `--state rocksdb`: each I/O design validates the blocks; `full` reads nothing from the
/// database during the run, `batch` and `parallel` do; BAL sizes are ordered full > batch >
/// parallel.
#[test]
fn rocksdb_state_with_each_io_design() {
    let db = tempfile::tempdir().unwrap();
    let out = bench(&[
        "--state",
        "rocksdb",
        "--io",
        "full,batch,parallel,prewarm",
        "--db",
        db.path().to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json(&out);
    assert_eq!(report["blocks_validated"], 2);
    assert_eq!(report["failures"].as_array().unwrap().len(), 0);
    for run in report["runs"].as_array().unwrap() {
        let reads = run["db_reads"].as_u64().unwrap();
        match run["io"].as_str().unwrap() {
            "full" => assert_eq!(reads, 0, "{run}"),
            _ => assert!(reads > 0, "{run}"),
        }
    }
    for s in report["bal_sizes"].as_array().unwrap() {
        let (f, b, p) = (
            s["full"].as_u64().unwrap(),
            s["batch"].as_u64().unwrap(),
            s["parallel"].as_u64().unwrap(),
        );
        assert!(f > b && b >= p, "{s}");
    }
}

/// `gigagas worst-io` on a small database: the parallel executor with batch and parallel I/O
/// equals the sequential reference; every transaction reads ~7,360 distinct cold slots, which the
/// EIP-7928 BAL lists and the writes-only BAL does not.
#[test]
fn worst_case_io_blocks_validate() {
    let db = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .args([
            "worst-io",
            "--slots",
            "50000",
            "--gas",
            "32000000",
            "--threads",
            "1,2",
            "--repeat",
            "1",
            "--json",
        ])
        .arg("--db")
        .arg(db.path())
        .output()
        .expect("run gigagas-bench");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = json(&out);
    assert_eq!(report["failures"].as_array().unwrap().len(), 0);
    let block = &report["blocks"][0];
    assert_eq!(block["transactions"], 2);
    assert_eq!(block["gas_used"], 32_000_000);
    let slots = block["slots_read"].as_u64().unwrap();
    assert!((14_000..15_000).contains(&slots), "{slots} slots read");
    assert!(
        block["bal_bytes_batch"].as_u64().unwrap()
            > 100 * block["bal_bytes_parallel"].as_u64().unwrap()
    );
    assert_eq!(report["runs"].as_array().unwrap().len(), 4);
}

/// `gigagas net-sim --json` has the fields scripts read and every node decodes; a network where
/// some nodes never decode (RLNC, one chunk per peer relayed on the first useful chunk, D = 20)
/// exits 1 and says how many did.
#[test]
fn net_sim_json_report() {
    let run = |protocol: &str, degree: &str| {
        Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
            .args([
                "net-sim",
                "--nodes",
                "1000",
                "--protocol",
                protocol,
                "--degree",
                degree,
                "--chunks",
                "10",
                "--json",
            ])
            .output()
            .expect("run gigagas-bench")
    };
    for (protocol, degree) in [("gossipsub", "8"), ("rlnc", "40")] {
        let out = run(protocol, degree);
        assert!(out.status.success(), "{protocol}: {}", String::from_utf8_lossy(&out.stdout));
        let r = json(&out);
        assert_eq!(r["decoded"], 1000);
        for field in
            ["hops", "time_to_99_ms", "time_to_100_ms", "bytes_per_node_mean", "wasted_bytes"]
        {
            assert!(r[field].as_f64().is_some_and(|x| x > 0.0), "{protocol}: {field} in {r}");
        }
    }
    let out = run("rlnc", "20");
    assert_eq!(out.status.code(), Some(1));
    assert!(json(&out)["decoded"].as_u64().unwrap() < 1000);
}

/// `gigagas net-sim --plots DIR` writes the two charts as PNG images of the documented sizes;
/// a list of chunks-per-peer values is refused for a single run.
#[test]
fn net_sim_plots_and_per_peer_lists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .args(["net-sim", "--nodes", "300", "--plots"])
        .arg(dir.path())
        .output()
        .expect("run gigagas-bench");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (name, width, height) in [("decode_cdf.png", 1600u32, 650u32), ("sweep.png", 1600, 1200)] {
        let png = std::fs::read(dir.path().join(name)).expect(name);
        // PNG signature, then the IHDR chunk's width and height (big-endian).
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{name}");
        let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().expect("4 bytes"));
        assert_eq!((be(16), be(20)), (width, height), "{name}");
        assert!(png.len() > 20_000, "{name} has {} bytes: no chart drawn?", png.len());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .args(["net-sim", "--nodes", "300", "--per-peer", "1,2"])
        .output()
        .expect("run gigagas-bench");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("one --per-peer value"));
}

/// `gigagas-bench test-rpc SUITE --json`'s report, after checking that it exited 0 (every
/// case passed; the failures are shown otherwise).
fn test_rpc(suite: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_gigagas-bench"))
        .arg("test-rpc")
        .arg(suite)
        .arg("--json")
        .output()
        .expect("run gigagas-bench");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

/// `gigagas-bench test-rpc` on geth 1.17.10's answers recorded on its own Amsterdam chain
/// (testing/geth/amsterdam-coverage): blocks, receipts, `eth_call`, `eth_estimateGas`,
/// `eth_simulateV1` (BAL hashes, EIP-8037 gas), `debug_trace*` with the struct logger,
/// `callTracer` and `prestateTracer` — every answer as geth gives it (error texts aside).
#[test]
fn geth_amsterdam_rpc_replay() {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testing/geth/amsterdam-coverage");
    let r = test_rpc(&suite);
    assert_eq!(r["cases"], 280);
    assert_eq!(r["passed"], 280);
    for method in ["debug_traceTransaction", "eth_estimateGas", "eth_simulateV1"] {
        assert!(r["methods"][method]["passed"].as_u64() > Some(0), "{method}");
    }
}

/// `gigagas test-rpc` replays the execution-apis rpc-compat suite against a node on a temporary
/// datadir: the methods implemented so far answer every one of their cases as geth does (error
/// texts aside), and the report counts every case.
#[test]
fn rpc_compat_replay() {
    let suite =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/execution-apis/tests");
    assert!(
        suite.join("chain.rlp").is_file(),
        "{} is missing: this test needs the shared data beside the project",
        suite.display()
    );
    let r = test_rpc(&suite);
    assert_eq!(r["cases"], 232);
    for method in [
        "eth_blockNumber",
        "eth_chainId",
        "net_version",
        "eth_syncing",
        "eth_getBalance",
        "eth_getCode",
        "eth_getTransactionCount",
        "eth_getStorageValues",
        "eth_getProof",
        "eth_getBlockByNumber",
        "eth_getBlockByHash",
        "eth_getBlockTransactionCountByHash",
        "eth_getBlockTransactionCountByNumber",
        "eth_getTransactionByHash",
        "eth_getTransactionByBlockHashAndIndex",
        "eth_getTransactionByBlockNumberAndIndex",
        "eth_getLogs",
        "eth_baseFee",
        "eth_blobBaseFee",
        "eth_call",
        "eth_estimateGas",
        "eth_createAccessList",
        "eth_feeHistory",
        "debug_getRawBlock",
        "debug_getRawHeader",
        "debug_getRawTransaction",
        "debug_getRawReceipts",
        "eth_getTransactionReceipt",
        "eth_getBlockReceipts",
        "eth_sendRawTransaction",
        "txpool_status",
        "txpool_content",
        "txpool_contentFrom",
        "debug_traceTransaction",
        "debug_traceBlockByNumber",
        "debug_traceBlockByHash",
        "testing_buildBlockV1",
        "eth_capabilities",
        "eth_config",
        "eth_simulateV1",
    ] {
        let m = &r["methods"][method];
        assert_eq!(m["failed"], 0, "{method}: {m} — {}", r["failures"]);
        assert!(m["passed"].as_u64().is_some_and(|p| p > 0), "{method}: {m}");
    }
    assert_eq!(r["passed"], 232, "{}", r["failures"]);
}
