//! The model checked against the node's measured Engine API replays (`gigagas-bench replay
//! --out DIR`, `testing/engine_replay.py`): each `replay.json` (and each run of a
//! `summary.json`) found under the given folders is grouped by its configuration (`sequential` / `parallel-T[-ols]`, `cold` / `warm` from its
//! label), the median Mgas/s of a group compared with the model's prediction for the same gas per
//! block, threads, design and cache.

use crate::{
    error::io_err,
    model::{Design, Model, Target},
    HwError,
};
use serde::{Deserialize, Serialize};
use std::{collections::BTreeMap, path::Path};

/// One configuration's measured replays against the model.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRow {
    /// `sequential`, `parallel-2`, … and `cold`/`warm`.
    pub config: String,
    /// Runs found.
    pub runs: usize,
    /// Mean gas per block of the runs (gas).
    pub gas_per_block: f64,
    /// Median measured Mgas/s (newPayload + forkchoiceUpdated).
    pub measured_mgas_per_s: f64,
    /// The model's Mgas/s.
    pub predicted_mgas_per_s: f64,
    /// predicted / measured − 1.
    pub error: f64,
    /// Per stage, per block (milliseconds): measured (median run's stage sums from the node's
    /// metrics over its blocks) against the model.
    pub stages: Vec<StageCheck>,
}

/// One stage of a block, measured against the model (milliseconds per block).
#[derive(Debug, Clone, Serialize)]
pub struct StageCheck {
    /// `recovery`, `execution` (with the BAL reads, `io`), `state_root`, `commit`, `checks`
    /// (the rest of the node's `newPayload`), `http/json` (the client's time beyond the node's:
    /// not in the model).
    pub stage: &'static str,
    /// Measured.
    pub measured_ms: f64,
    /// The model.
    pub model_ms: f64,
}

#[derive(Deserialize)]
struct ReplayJson {
    label: String,
    blocks: usize,
    gas: u64,
    mgas_per_s: f64,
    #[serde(default)]
    stages: BTreeMap<String, f64>,
    /// Senders the node took from its pool's recoveries over the run (the replay's
    /// `--pool-share`), when measured.
    #[serde(default)]
    senders_known: Option<f64>,
    #[serde(default)]
    transactions: usize,
}

/// `engine_replay.py`'s `summary.json`: its runs are replay reports.
#[derive(Deserialize)]
struct SummaryJson {
    runs: Vec<ReplayJson>,
}

/// The replay reports in `dirs`: each folder's `summary.json` and `replay.json` files (two
/// levels down), a run found twice in one folder — in `engine_replay.py`'s `summary.json`
/// (first: its Mgas/s counts the wait for the store's last commit) and in its run folder's
/// `replay.json` — once; the same label in another folder given (another round of `--runs 1`)
/// is another run.
fn read_reports(dirs: &[std::path::PathBuf]) -> Result<Vec<ReplayJson>, HwError> {
    let mut reports = Vec::new();
    for d in dirs {
        let mut files = Vec::new();
        find(d, 2, &mut files)?;
        let mut found = Vec::new();
        for f in files {
            let text = std::fs::read(&f).map_err(io_err(&f))?;
            let bad =
                |e: serde_json::Error| HwError::Replay { path: f.clone(), reason: e.to_string() };
            if f.ends_with("summary.json") {
                found.extend(serde_json::from_slice::<SummaryJson>(&text).map_err(bad)?.runs);
            } else {
                found.push(serde_json::from_slice::<ReplayJson>(&text).map_err(bad)?);
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        found.retain(|r| seen.insert(r.label.clone()));
        reports.extend(found);
    }
    Ok(reports)
}

/// Finds `replay.json` and `summary.json` files in `dir` and its subfolders (two levels).
fn find(dir: &Path, depth: usize, out: &mut Vec<std::path::PathBuf>) -> Result<(), HwError> {
    for name in ["replay.json", "summary.json"] {
        let file = dir.join(name);
        if file.is_file() {
            out.push(file);
        }
    }
    if depth == 0 {
        return Ok(());
    }
    for e in std::fs::read_dir(dir).map_err(io_err(dir))?.flatten() {
        if e.path().is_dir() {
            find(&e.path(), depth - 1, out)?;
        }
    }
    Ok(())
}

/// `(threads, design, cold)` from a label such as `parallel-2-ols-cold-1`,
/// `parallel-2-pool90-warm-1` or `sequential-warm-2`; `None` for another label. `sequential`
/// runs recover senders on all `cores`.
fn parse(label: &str, cores: usize) -> Option<(String, usize, Design, bool)> {
    let parts: Vec<&str> = label.split('-').collect();
    let pool =
        parts.iter().find(|p| p.starts_with("pool")).map_or(String::new(), |p| format!("-{p}"));
    let sync = if parts.contains(&"syncpersist") { "-syncpersist" } else { "" };
    // Senders the pool did not know recovered before execution instead of streamed into it.
    let first = if parts.contains(&"recoverfirst") { "-recoverfirst" } else { "" };
    // The state root after execution (`--engine.state-root-beside false`).
    let after = if parts.contains(&"rootafter") { "-rootafter" } else { "" };
    // Every state root from the parent's root (`--engine.preserve-trie false`): not the
    // node's default, so a group of its own.
    let keep = if parts.contains(&"nopreserve") { "-nopreserve" } else { "" };
    let cold = parts.contains(&"cold");
    let cache = if cold {
        "cold"
    } else if parts.contains(&"warm") {
        "warm"
    } else {
        return None;
    };
    match *parts.first()? {
        "sequential" => {
            Some((format!("sequential{pool}{keep}{sync} {cache}"), cores, Design::Sequential, cold))
        }
        "parallel" => {
            let threads: usize = parts.get(1)?.parse().ok()?;
            let ols = if parts.contains(&"ols") { "-ols" } else { "" };
            Some((
                format!("parallel-{threads}{ols}{pool}{after}{first}{keep}{sync} {cache}"),
                threads,
                Design::Parallel,
                cold,
            ))
        }
        _ => None,
    }
}

/// Compares the replays under `dirs`, run on a machine of `cores` cores, with `model` (which
/// may be another machine's: threads beyond its cores are projected). A run found twice (in its
/// `replay.json` and in the `summary.json` beside it) counts once.
///
/// # Errors
/// [`HwError::Io`] for an unreadable folder, [`HwError::Replay`] for a malformed file.
pub fn check(
    model: &Model,
    dirs: &[std::path::PathBuf],
    cores: usize,
) -> Result<Vec<CheckRow>, HwError> {
    let reports = read_reports(dirs)?;
    type Group = (usize, Design, f64, Vec<(f64, BTreeMap<String, f64>)>, Vec<f64>);
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for r in reports {
        let Some((config, threads, design, _cold)) = parse(&r.label, cores) else { continue };
        // The share of senders the node had from its pool, as it counted them.
        let hits = r.senders_known.map_or(0.0, |k| k / r.transactions.max(1) as f64);
        let g = groups.entry(config).or_insert((threads, design, hits, Vec::new(), Vec::new()));
        let per_block = r.stages.iter().map(|(k, v)| (k.clone(), v / r.blocks.max(1) as f64));
        g.3.push((r.mgas_per_s, per_block.collect()));
        g.4.push(r.gas as f64 / r.blocks.max(1) as f64);
    }
    Ok(groups
        .into_iter()
        .map(|(config, (threads, design, pool_hits, mut runs, gas))| {
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
            // The median run's stages; Mgas/s the median (mean of the middle two for an even
            // count, as `engine_replay.py` reports it).
            let (upper, stages) = runs[runs.len() / 2].clone();
            let measured = if runs.len() % 2 == 0 {
                (upper + runs[runs.len() / 2 - 1].0) / 2.0
            } else {
                upper
            };
            let gas_per_block = gas.iter().sum::<f64>() / gas.len() as f64;
            // The replays' stores (a few hundred MiB) sit in the page cache after their first
            // reads, `cold` runs included: the warm model is the one that applies.
            // The replaying machine's cores at most (oversubscribed workers are not modelled);
            // the node recovers senders on every core whatever its executor threads.
            let target = Target {
                threads: threads.min(cores),
                recovery_threads: cores,
                pool_hits,
                commit_background: !config.contains("-syncpersist"),
                root_after: config.contains("-rootafter"),
                ..Target::machine(cores)
            };
            let b = model.block(gas_per_block, design, target);
            let predicted = gas_per_block / 1e6 / b.total().max(1e-12);
            let ms = |k: &str| stages.get(k).copied().unwrap_or(0.0) * 1e3;
            let stages = if stages.is_empty() {
                Vec::new()
            } else {
                vec![
                    StageCheck {
                        stage: "recovery",
                        measured_ms: ms("recovery"),
                        model_ms: b.recovery * 1e3,
                    },
                    StageCheck {
                        stage: "execution",
                        measured_ms: ms("execution") + ms("io"),
                        model_ms: (b.execution + b.io) * 1e3,
                    },
                    StageCheck {
                        stage: "state_root",
                        measured_ms: ms("state_root"),
                        model_ms: b.state_root * 1e3,
                    },
                    // The commit's own time (in the background: beside the next block).
                    StageCheck {
                        stage: "commit",
                        measured_ms: ms("commit"),
                        model_ms: if b.commit_beside > 0.0 { b.commit_beside } else { b.commit }
                            * 1e3,
                    },
                    StageCheck {
                        stage: "checks",
                        measured_ms: ms("checks"),
                        model_ms: b.checks * 1e3,
                    },
                    StageCheck { stage: "http/json", measured_ms: ms("waiting"), model_ms: 0.0 },
                ]
            };
            CheckRow {
                config,
                runs: runs.len(),
                gas_per_block,
                measured_mgas_per_s: measured,
                predicted_mgas_per_s: predicted,
                error: predicted / measured - 1.0,
                stages,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run in a folder's `summary.json` and again in its run folder's `replay.json` counts
    /// once; the same label in a second folder (another round) counts again.
    #[test]
    fn a_label_counts_once_per_folder() {
        let root = std::env::temp_dir().join(format!("gigagas-hw-check-{}", std::process::id()));
        let run = r#"{"label": "parallel-2-pool90-warm-1", "blocks": 20, "gas": 1000, "mgas_per_s": 5.0}"#;
        let mut dirs = Vec::new();
        for round in ["a", "b"] {
            let dir = root.join(round);
            std::fs::create_dir_all(dir.join("parallel-2-pool90-warm-1")).unwrap();
            std::fs::write(dir.join("summary.json"), format!(r#"{{"runs": [{run}]}}"#)).unwrap();
            std::fs::write(dir.join("parallel-2-pool90-warm-1/replay.json"), run).unwrap();
            dirs.push(dir);
        }
        let one = read_reports(&dirs[..1]).unwrap();
        let two = read_reports(&dirs).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(two.len(), 2);
    }

    #[test]
    fn labels_name_threads_design_and_cache() {
        let p = |l: &str| parse(l, 16);
        assert_eq!(
            p("parallel-2-ols-cold-1"),
            Some(("parallel-2-ols cold".into(), 2, Design::Parallel, true))
        );
        assert_eq!(
            p("parallel-16-warm-3"),
            Some(("parallel-16 warm".into(), 16, Design::Parallel, false))
        );
        // The sequential engine recovers senders on every core.
        assert_eq!(
            p("sequential-warm-1"),
            Some(("sequential warm".into(), 16, Design::Sequential, false))
        );
        // A run without the kept state trie is a group of its own.
        assert_eq!(
            p("parallel-2-pool90-nopreserve-warm-1"),
            Some(("parallel-2-pool90-nopreserve warm".into(), 2, Design::Parallel, false))
        );
        // The root after execution is modelled apart from the node's default (beside).
        assert_eq!(
            p("parallel-2-pool90-rootafter-recoverfirst-warm-2"),
            Some((
                "parallel-2-pool90-rootafter-recoverfirst warm".into(),
                2,
                Design::Parallel,
                false
            ))
        );
        assert_eq!(p("replay"), None);
        assert_eq!(p("parallel-x-warm-1"), None);
    }
}
