//! Errors of the measurements.

use std::path::PathBuf;

/// Why a measurement could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum HwError {
    /// A file or folder could not be read, written or created.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The mainnet blocks could not be loaded.
    #[error("mainnet blocks: {0}")]
    Load(#[from] gigagas_state::mainnet::LoadError),
    /// A mainnet block failed sender recovery or its sequential reference run: the executor
    /// cannot be timed on it.
    #[error("mainnet block {number}: {reason}")]
    Block {
        /// Block number.
        number: u64,
        /// What failed.
        reason: String,
    },
    /// The RocksDB store failed.
    #[error("storage: {0}")]
    Storage(#[from] gigagas_storage::ProviderError),
    /// The generated chain did not import (every block must validate for its timings to count).
    #[error("chain import: {0}")]
    Import(#[from] gigagas_validation::ImportError),
    /// A block of the generated chain was not VALID in the engine (its timings would not be a
    /// validation's).
    #[error("chain block {number}: not VALID: {status}")]
    Invalid {
        /// Block number.
        number: u64,
        /// The engine's answer.
        status: String,
    },
    /// The chain folder lacks a file `gigagas-bench gen-chain` writes.
    #[error("{path}: not a generated chain ({what}); make one with `gigagas-bench gen-chain`")]
    Chain {
        /// The folder.
        path: PathBuf,
        /// What is missing.
        what: &'static str,
    },
    /// A replay report (`gigagas-bench replay --out`) could not be read.
    #[error("{path}: {reason}")]
    Replay {
        /// The `replay.json` file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Reads of the sweep failed or returned another value than was written: the figures
    /// would not be reads of the data.
    #[error("{target}: {bad} reads failed or returned a wrong value")]
    BadReads {
        /// `raw disk`, `RocksDB` or `datadir files`.
        target: &'static str,
        /// Reads that failed.
        bad: u64,
    },
    /// The folder to sweep holds no file of a page (4 KiB) or more.
    #[error("{0}: no file of 4 KiB or more to read")]
    NoFiles(PathBuf),
    /// The kernel refused an io_uring for the batched sweep (Linux before 6.1, the
    /// `io_uring_disabled` sysctl, a seccomp filter).
    #[error("io_uring refused by the kernel: {0}")]
    IoUring(std::io::Error),
    /// A saved report (`gigagas hw --model FILE`) could not be read as one.
    #[error("{path}: not a `gigagas hw` report: {reason}")]
    Saved {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The PNG could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
}

/// `map_err` helper: an I/O error on `path`.
pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> HwError + '_ {
    move |source| HwError::Io { path: path.to_path_buf(), source }
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The charts' font at `path` could not be read.
    #[error("the charts need the font {path} (`make deps` installs fonts-dejavu-core): {source}")]
    FontMissing {
        /// The font's path.
        path: &'static str,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// The font at `0` is not a TrueType font.
    #[error("{0} is not a TrueType font")]
    FontNotTrueType(&'static str),
    /// plotters failed to draw or to write the file (its error, as a message: plotters' error
    /// type is generic over the backend).
    #[error("plot: {0}")]
    Draw(String),
}
