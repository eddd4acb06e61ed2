//! Walking fixture files and folders, the skip list, and per-folder summaries.

use crate::{
    fixture::read_file,
    runner::{run_test, RunOptions},
};
use serde::Serialize;
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

/// How one test case ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "lowercase")]
pub enum CaseStatus {
    /// Every check passed.
    Passed,
    /// The first check that failed.
    Failed(String),
    /// Listed in the skip list, with its reason.
    Skipped(String),
}

/// The result of one test case.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// The folder the file is in (the suite shown in the summary).
    pub folder: String,
    /// The fixture file.
    pub file: String,
    /// The test's name inside the file.
    pub name: String,
    /// Passed, failed or skipped.
    #[serde(flatten)]
    pub status: CaseStatus,
}

/// A skip-list line without the ` :: ` separator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("skip list line {line}: no ` :: ` in {text:?}")]
pub struct SkipListError {
    /// Line number (1-based).
    pub line: usize,
    /// The line.
    pub text: String,
}

/// Cases that are not run, each with the limitation that keeps it out.
///
/// Text format, one entry per line: `<pattern> :: <reason>`; a case is skipped when its file
/// path (relative to the suite root, `/`-separated) or its test name contains the pattern.
/// Blank lines and lines starting with `#` are ignored.
#[derive(Debug, Clone, Default)]
pub struct SkipList {
    entries: Vec<(String, String)>,
}

impl SkipList {
    /// Parses the text format above.
    ///
    /// # Errors
    /// [`SkipListError`] naming the line number and text of a line without ` :: `.
    pub fn parse(text: &str) -> Result<Self, SkipListError> {
        let mut entries = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (pattern, reason) = line
                .split_once(" :: ")
                .ok_or_else(|| SkipListError { line: i + 1, text: line.to_string() })?;
            entries.push((pattern.trim().to_string(), reason.trim().to_string()));
        }
        Ok(Self { entries })
    }

    /// The reason `file` / `name` is skipped, if it is.
    pub fn reason(&self, file: &str, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(p, _)| file.contains(p.as_str()) || name.contains(p.as_str()))
            .map(|(_, r)| r.as_str())
    }
}

/// The JSON files under `path` (itself if a file), sorted.
fn json_files(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path)? {
        let p = entry?.path();
        if p.is_dir() {
            out.extend(json_files(&p)?);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Runs every test case of the BlockchainTests files under `path` (a file or a folder, walked
/// recursively), with `options`. `on_case` is called after each case
/// (for progress). A file that cannot be read or parsed counts as one failed case naming it.
///
/// # Errors
/// When `path` cannot be listed.
pub fn run_path(
    path: &Path,
    skip: &SkipList,
    options: &RunOptions,
    on_case: &dyn Fn(&CaseResult),
) -> std::io::Result<Vec<CaseResult>> {
    let root = if path.is_file() { path.parent().unwrap_or(path) } else { path };
    let mut results = Vec::new();
    // A chain folder (hive's layout: genesis.json + chain.rlp): one case per block.
    let (genesis, chain) = (path.join("genesis.json"), path.join("chain.rlp"));
    if genesis.is_file() && chain.is_file() {
        for r in run_chain_dir(&genesis, &chain, options) {
            on_case(&r);
            results.push(r);
        }
        return Ok(results);
    }
    for file in json_files(path)? {
        let rel = file.strip_prefix(root).unwrap_or(&file).to_string_lossy().replace('\\', "/");
        let folder = Path::new(&rel)
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| {
                root.file_name().map_or(".".into(), |n| n.to_string_lossy().into_owned())
            });
        let tests = match read_file(&file) {
            Ok(tests) => tests,
            Err(e) => {
                let r = CaseResult {
                    folder,
                    file: rel.clone(),
                    name: String::new(),
                    status: CaseStatus::Failed(e.to_string()),
                };
                on_case(&r);
                results.push(r);
                continue;
            }
        };
        for (name, test) in tests {
            let status = match skip.reason(&rel, &name) {
                Some(reason) => CaseStatus::Skipped(reason.to_string()),
                None => match run_test(&test, options) {
                    Ok(()) => CaseStatus::Passed,
                    Err(reason) => CaseStatus::Failed(reason.to_string()),
                },
            };
            let r = CaseResult { folder: folder.clone(), file: rel.clone(), name, status };
            on_case(&r);
            results.push(r);
        }
    }
    Ok(results)
}

/// Passed / failed / skipped counts of one folder, with its first failure.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FolderSummary {
    /// Folder, relative to the path given.
    pub folder: String,
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Cases skipped by the skip list.
    pub skipped: usize,
    /// `file: test: reason` of the first failure.
    pub first_failure: Option<String>,
}

/// Per-folder summaries of `results`, sorted by folder.
pub fn summarize(results: &[CaseResult]) -> Vec<FolderSummary> {
    let mut by_folder: BTreeMap<&str, FolderSummary> = BTreeMap::new();
    for r in results {
        let s = by_folder.entry(&r.folder).or_insert_with(|| FolderSummary {
            folder: r.folder.clone(),
            ..FolderSummary::default()
        });
        match &r.status {
            CaseStatus::Passed => s.passed += 1,
            CaseStatus::Skipped(_) => s.skipped += 1,
            CaseStatus::Failed(reason) => {
                s.failed += 1;
                s.first_failure.get_or_insert_with(|| format!("{}: {}: {reason}", r.file, r.name));
            }
        }
    }
    by_folder.into_values().collect()
}

/// Imports a chain folder's `chain.rlp` on its `genesis.json`; one case per block.
fn run_chain_dir(genesis: &Path, chain: &Path, options: &RunOptions) -> Vec<CaseResult> {
    let folder = "chain.rlp".to_string();
    let file = chain.display().to_string();
    let fail = |reason: String| {
        vec![CaseResult {
            folder: folder.clone(),
            file: file.clone(),
            name: String::new(),
            status: CaseStatus::Failed(reason),
        }]
    };
    let genesis_json = match std::fs::read(genesis) {
        Ok(bytes) => bytes,
        Err(e) => return fail(format!("{}: {e}", genesis.display())),
    };
    let de = &mut serde_json::Deserializer::from_slice(&genesis_json);
    let genesis_value: alloy_genesis::Genesis = match serde_path_to_error::deserialize(de) {
        Ok(g) => g,
        Err(e) => return fail(format!("{}: field {}: {}", genesis.display(), e.path(), e.inner())),
    };
    let rlp = match std::fs::read(chain) {
        Ok(bytes) => bytes,
        Err(e) => return fail(format!("{}: {e}", chain.display())),
    };
    let chain_spec = match gigagas_primitives::ChainSpec::from_genesis_config(&genesis_value.config)
    {
        Ok(spec) => spec,
        Err(e) => return fail(format!("{}: {e}", genesis.display())),
    };
    match crate::runner::run_chain(chain_spec, &genesis_value, &rlp, options) {
        Err(e) => fail(format!("{}: chain RLP: {e}", chain.display())),
        Ok(blocks) => blocks
            .into_iter()
            .map(|b| CaseResult {
                folder: folder.clone(),
                file: file.clone(),
                name: match b.number {
                    Some(n) => format!("block {n} ({} txs)", b.transactions),
                    None => format!("block at position {}", b.index),
                },
                status: match b.result {
                    Ok(()) => CaseStatus::Passed,
                    Err(reason) => CaseStatus::Failed(reason.to_string()),
                },
            })
            .collect(),
    }
}
