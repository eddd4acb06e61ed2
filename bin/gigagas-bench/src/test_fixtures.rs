//! `gigagas test-fixtures`: BlockchainTests fixtures through the parallel pipeline.

use clap::Args;
use gigagas_ef_tests::{run_path, summarize, CaseStatus, RunOptions, SkipList};
use indicatif::{ProgressBar, ProgressStyle};
use std::{path::PathBuf, process::ExitCode, time::Instant};

/// Arguments of `gigagas test-fixtures`.
#[derive(Debug, Args)]
pub(crate) struct TestFixturesArgs {
    /// BlockchainTests JSON files or folders (walked recursively).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Skip list (`<pattern> :: <reason>` per line); default: testing/ef-tests/skip.txt when
    /// present.
    #[arg(long)]
    skip: Option<PathBuf>,
    /// Worker threads of the parallel executor.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Print one JSON object (summary per folder and every failed or skipped case) instead of
    /// the table.
    #[arg(long)]
    json: bool,
}

/// Errors that stop the run before any result.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TestFixturesError {
    /// The skip list cannot be read or parsed.
    #[error("skip list {path}: {reason}")]
    Skip {
        /// The file.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// A path cannot be listed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

fn default_skip_list() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testing/ef-tests/skip.txt")
}

/// Runs the fixtures; exit code 0 when nothing failed, 1 otherwise.
pub(crate) fn run(args: TestFixturesArgs) -> Result<ExitCode, TestFixturesError> {
    let skip_path = args.skip.clone().unwrap_or_else(default_skip_list);
    let skip = if skip_path.is_file() || args.skip.is_some() {
        let text = std::fs::read_to_string(&skip_path).map_err(|e| TestFixturesError::Skip {
            path: skip_path.display().to_string(),
            reason: e.to_string(),
        })?;
        SkipList::parse(&text).map_err(|e| TestFixturesError::Skip {
            path: skip_path.display().to_string(),
            reason: e.to_string(),
        })?
    } else {
        SkipList::default()
    };
    let options = RunOptions { threads: args.threads };
    let start = Instant::now();
    let progress = if args.json { ProgressBar::hidden() } else { ProgressBar::new_spinner() };
    progress.set_style(
        ProgressStyle::with_template("{spinner} {pos} cases, {msg} failed {elapsed}")
            .expect("static template"),
    );
    let failed = std::cell::Cell::new(0usize);
    let mut results = Vec::new();
    for path in &args.paths {
        let on_case = |r: &gigagas_ef_tests::CaseResult| {
            if matches!(r.status, CaseStatus::Failed(_)) {
                failed.set(failed.get() + 1);
                progress.set_message(failed.get().to_string());
            }
            progress.inc(1);
        };
        let mut r = run_path(path, &skip, &options, &on_case)
            .map_err(|source| TestFixturesError::Io { path: path.display().to_string(), source })?;
        results.append(&mut r);
    }
    progress.finish_and_clear();
    let summary = summarize(&results);
    let total =
        |f: fn(&gigagas_ef_tests::FolderSummary) -> usize| summary.iter().map(f).sum::<usize>();
    let (passed, failed, skipped) =
        (total(|s| s.passed), total(|s| s.failed), total(|s| s.skipped));
    if args.json {
        let not_passed: Vec<_> =
            results.iter().filter(|r| !matches!(r.status, CaseStatus::Passed)).collect();
        let out = serde_json::json!({
            "passed": passed,
            "failed": failed,
            "skipped": skipped,
            "seconds": start.elapsed().as_secs_f64(),
            "threads": args.threads,
            "folders": summary,
            "not_passed": not_passed,
        });
        println!("{out}");
    } else {
        println!("{:<52} {:>7} {:>7} {:>7}  first failure", "suite", "passed", "failed", "skipped");
        for s in &summary {
            let first = s.first_failure.as_deref().unwrap_or("");
            let first: String = first.chars().take(160).collect();
            println!("{:<52} {:>7} {:>7} {:>7}  {first}", s.folder, s.passed, s.failed, s.skipped);
        }
        println!(
            "{:<52} {:>7} {:>7} {:>7}  ({:.1} s, parallel executor on {} threads)",
            "total",
            passed,
            failed,
            skipped,
            start.elapsed().as_secs_f64(),
            args.threads
        );
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
