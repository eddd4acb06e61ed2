//! `gigagas test-rpc DIR`: the execution-apis rpc-compat suite replayed as hive's `rpc-compat`
//! simulator does — a node on a temporary datadir imports `chain.rlp` from the genesis in
//! `genesis.json`, receives `headfcu.json` on its Engine API (HTTP with a JWT; a request
//! without one must be refused), then every `.io` case's requests are sent over HTTP and each
//! response compared with the expected one.
//!
//! Comparison, as hive does for reth: the JSON values must be equal, except that when both
//! carry an error only the code is compared (error texts are not standardized). Cases marked
//! `// speconly` are only schema-checked by hive; without the schema here they pass when the
//! response is a result of the same JSON type as the expected one.

use crate::rpc_client::post_with;
use crate::util::bar;
use clap::Args;
use gigagas_engine::import::import_blocks;
use gigagas_node::{launch, NodeArgs};
use gigagas_storage::{FullProvider, Storage};
use gigagas_validation::init_genesis;
use serde::Serialize;
use serde_json::Value;
use std::{collections::BTreeMap, path::PathBuf, process::ExitCode, sync::Arc};

/// Arguments of `gigagas test-rpc`.
#[derive(Debug, Args)]
pub(crate) struct TestRpcArgs {
    /// The suite: a folder with `genesis.json`, `chain.rlp`, `headfcu.json` and one folder of
    /// `.io` cases per method (execution-apis `tests/`).
    #[arg(default_value = "../shared/data/execution-apis/tests")]
    dir: PathBuf,
    /// Print one JSON object: per-method counts and every failure.
    #[arg(long)]
    json: bool,
    /// Also list every failure with its reason (the JSON output always does).
    #[arg(long)]
    verbose: bool,
}

/// One case's outcome.
#[derive(Debug, Serialize)]
struct Failure {
    case: String,
    reason: String,
}

#[derive(Debug, Default, Serialize)]
struct MethodTally {
    passed: usize,
    failed: usize,
}

#[derive(Debug, Serialize)]
struct Report {
    cases: usize,
    passed: usize,
    pass_rate: f64,
    methods: BTreeMap<String, MethodTally>,
    failures: Vec<Failure>,
}

fn read(path: &std::path::Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn post(url: &str, body: &str) -> Result<Value, String> {
    post_with(url, body, None)
}

/// Compares a response with the expected one; `Err(reason)` on a difference.
fn compare(got: &Value, want: &Value, spec_only: bool) -> Result<(), String> {
    if spec_only {
        let kind = |v: &Value| match v.get("result") {
            Some(Value::Object(_)) => "object",
            Some(Value::Array(_)) => "array",
            Some(Value::String(_)) => "string",
            Some(Value::Null) => "null",
            Some(_) => "other",
            None => "error",
        };
        return if kind(got) == kind(want) {
            Ok(())
        } else {
            Err(format!("speconly: got a {} where a {} was expected", kind(got), kind(want)))
        };
    }
    let mut got = got.clone();
    if let (Some(g), Some(w)) = (got.get_mut("error"), want.get("error")) {
        if let (Some(g), Some(message)) = (g.as_object_mut(), w.get("message")) {
            g.insert("message".into(), message.clone());
        }
    }
    if &got == want {
        return Ok(());
    }
    Err(first_difference("", &got, want))
}

/// The first path where `got` and `want` differ, with both values (shortened).
fn first_difference(path: &str, got: &Value, want: &Value) -> String {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                match g.get(k) {
                    Some(gv) if gv == wv => {}
                    Some(gv) => return first_difference(&format!("{path}.{k}"), gv, wv),
                    // An error instead of a result: say which.
                    None => match g.get("error") {
                        Some(e) if path.is_empty() => {
                            return format!(".{k} missing, got error {e}")
                        }
                        _ => return format!("{path}.{k} missing"),
                    },
                }
            }
            if let Some(k) = g.keys().find(|k| !w.contains_key(*k)) {
                return format!("{path}.{k} unexpected");
            }
            format!("{path}: differs")
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                if gv != wv {
                    return first_difference(&format!("{path}[{i}]"), gv, wv);
                }
            }
            format!("{path}: differs")
        }
        _ => {
            let short = |v: &Value| {
                let s = v.to_string();
                if s.len() > 120 {
                    format!("{}…", &s[..120])
                } else {
                    s
                }
            };
            format!("{path}: got {}, want {}", short(got), short(want))
        }
    }
}

/// Runs one `.io` case against `url`.
fn run_case(url: &str, text: &str) -> Result<(), String> {
    let spec_only = text.lines().any(|l| l.trim_start().starts_with("// speconly"));
    let mut response: Option<Value> = None;
    for line in text.lines().map(str::trim) {
        if let Some(request) = line.strip_prefix(">> ") {
            response = Some(post(url, request)?);
        } else if let Some(expected) = line.strip_prefix("<< ") {
            let want: Value =
                serde_json::from_str(expected).map_err(|e| format!("bad expected line: {e}"))?;
            let got = response.take().ok_or("response line before any request")?;
            compare(&got, &want, spec_only)?;
        }
    }
    Ok(())
}

/// Imports the suite's chain into a temporary datadir, launches a node on it (ephemeral ports,
/// two executor threads), replays every case.
pub(crate) fn run(args: TestRpcArgs) -> Result<ExitCode, String> {
    let dir = &args.dir;
    let datadir = tempfile::tempdir().map_err(|e| format!("temporary datadir: {e}"))?;
    {
        let storage: Arc<dyn FullProvider> =
            Arc::new(Storage::open(datadir.path()).map_err(|e| e.to_string())?);
        init_genesis(&*storage, &read(&dir.join("genesis.json"))?).map_err(|e| e.to_string())?;
        import_blocks(&storage, &read(&dir.join("chain.rlp"))?, &mut |_| {})
            .map_err(|e| format!("importing chain.rlp: {e}"))?;
    }
    // The node's own flag parser, as `gigagas node` would read these flags.
    #[derive(clap::Parser)]
    struct Flags {
        #[command(flatten)]
        node: NodeArgs,
    }
    let datadir_flag = datadir.path().display().to_string();
    let flags = [
        "test-rpc",
        "--datadir",
        &datadir_flag,
        "--authrpc.port",
        "0",
        "--http.port",
        "0",
        // The suite reads the debug and txpool namespaces too, and asks for blocks built on
        // request (`testing_buildBlockV1`): named, on this loopback port of its own.
        "--http.api",
        "eth,net,web3,debug,txpool,testing",
        "--engine.threads",
        "2",
        "--disable-network",
    ];
    let node_args = <Flags as clap::Parser>::try_parse_from(flags)
        .map_err(|e| format!("node flags: {e}"))?
        .node;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let node = runtime.block_on(launch(&node_args)).map_err(|e| e.to_string())?;
    // The Engine API port requires a JWT, as a consensus client sends it.
    let (http, auth, secret) = (node.http, node.auth, node.jwt.clone());

    let fcu = String::from_utf8(read(&dir.join("headfcu.json"))?).map_err(|e| e.to_string())?;
    let engine = format!("http://{auth}");
    let refused = post_with(&engine, &fcu, None);
    if refused.is_ok() {
        return Err("the Engine API answered a request without a JWT".into());
    }
    let answer = post_with(&engine, &fcu, Some(&secret.token()))?;
    let status = &answer["result"]["payloadStatus"]["status"];
    if status != "VALID" {
        return Err(format!("headfcu.json: forkchoice not VALID: {answer}"));
    }

    let mut cases = Vec::new();
    let mut methods: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    methods.sort();
    for method in &methods {
        let mut files: Vec<PathBuf> = std::fs::read_dir(method)
            .map_err(|e| format!("{}: {e}", method.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "io"))
            .collect();
        files.sort();
        cases.extend(files);
    }
    let url = format!("http://{http}");
    let progress = bar(cases.len() as u64, "cases");
    let mut report = Report {
        cases: cases.len(),
        passed: 0,
        pass_rate: 0.0,
        methods: BTreeMap::new(),
        failures: Vec::new(),
    };
    for case in &cases {
        let method = case
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = format!("{method}/{}", case.file_stem().unwrap_or_default().to_string_lossy());
        let text = String::from_utf8_lossy(&read(case)?).into_owned();
        let tally = report.methods.entry(method).or_default();
        match run_case(&url, &text) {
            Ok(()) => {
                tally.passed += 1;
                report.passed += 1;
            }
            Err(reason) => {
                tally.failed += 1;
                report.failures.push(Failure { case: name, reason });
            }
        }
        progress.inc(1);
    }
    progress.finish_and_clear();
    runtime.block_on(node.shutdown()).map_err(|e| e.to_string())?;
    report.pass_rate = report.passed as f64 / report.cases.max(1) as f64;

    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?);
    } else {
        println!("| method | passed | failed |");
        println!("|---|---:|---:|");
        for (method, t) in &report.methods {
            println!("| {method} | {} | {} |", t.passed, t.failed);
        }
        println!(
            "\n{} of {} cases pass ({:.1}%)",
            report.passed,
            report.cases,
            100.0 * report.pass_rate
        );
        if args.verbose {
            for f in &report.failures {
                println!("FAIL {}: {}", f.case, f.reason);
            }
        }
    }
    Ok(if report.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
