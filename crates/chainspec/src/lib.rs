//! The chains gigagas knows by name, reth's `reth-chainspec` presets: `--chain mainnet`,
//! `sepolia`, `hoodi` and `dev`, or a geth-format genesis file.
//!
//! Each public network's genesis file is geth 1.17.10's `geth --<network> dumpgenesis`, kept
//! gzip-compressed in `res/` (mainnet's 8,893-account alloc is 695 KB of JSON, 265 KB
//! compressed) and read by the same code as any `--chain GENESIS.json`: its `config` is the
//! fork schedule (Sepolia's Amsterdam at 1791294816), its alloc the state of block 0. The
//! well-known genesis hashes ([`NamedChain::genesis_hash`]) and the bootnodes (geth's
//! `params/bootnodes.go`, in `gigagas-net-peers`) come with them.
//!
//! Flow: [`ChainArg::from_str`] reads the `--chain` value; [`ChainArg::genesis_json`] gives the
//! file's bytes to `init`; the node checks a named chain's stored genesis against
//! [`NamedChain::genesis_hash`] and dials [`NamedChain::bootnodes`] unless told others.

use alloy_primitives::{b256, B256};
use gigagas_net_peers::{bootnodes, BootNode};
use std::{fmt, io::Read, path::PathBuf, str::FromStr};

/// A chain known by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NamedChain {
    /// Ethereum mainnet (chain id 1).
    Mainnet,
    /// The Sepolia test network (chain id 11155111; Glamsterdam since 1791294816).
    Sepolia,
    /// The Hoodi test network (chain id 560048).
    Hoodi,
    /// The local dev chain of `gigagas node --dev` ([`DEV_GENESIS`]).
    Dev,
}

impl NamedChain {
    /// Every named chain.
    pub const ALL: [Self; 4] = [Self::Mainnet, Self::Sepolia, Self::Hoodi, Self::Dev];

    /// Its `--chain` name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Mainnet => "mainnet",
            Self::Sepolia => "sepolia",
            Self::Hoodi => "hoodi",
            Self::Dev => "dev",
        }
    }

    /// The genesis file (geth's JSON format).
    ///
    /// # Errors
    /// [`ChainSpecError::Decompress`] if the compressed file built into the binary does not
    /// decompress (a corrupt build).
    pub fn genesis_json(self) -> Result<Vec<u8>, ChainSpecError> {
        let compressed: &[u8] = match self {
            Self::Mainnet => include_bytes!("../res/mainnet.json.gz"),
            Self::Sepolia => include_bytes!("../res/sepolia.json.gz"),
            Self::Hoodi => include_bytes!("../res/hoodi.json.gz"),
            Self::Dev => return Ok(DEV_GENESIS.as_bytes().to_vec()),
        };
        let mut json = Vec::with_capacity(compressed.len() * 3);
        flate2::read::GzDecoder::new(compressed)
            .read_to_end(&mut json)
            .map_err(|source| ChainSpecError::Decompress { chain: self.name(), source })?;
        Ok(json)
    }

    /// The hash of block 0 as the network knows it (`None` for the dev chain, whose genesis
    /// file is ours to change).
    pub const fn genesis_hash(self) -> Option<B256> {
        match self {
            Self::Mainnet => {
                Some(b256!("0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3"))
            }
            Self::Sepolia => {
                Some(b256!("0x25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9"))
            }
            Self::Hoodi => {
                Some(b256!("0xbbe312868b376a3001692a646dd2d7d1e4406380dfd86b98aa8a34d1557c971b"))
            }
            Self::Dev => None,
        }
    }

    /// The nodes a node on this chain starts from (none for the dev chain).
    pub fn bootnodes(self) -> Vec<BootNode> {
        let list: &[&str] = match self {
            Self::Mainnet => bootnodes::MAINNET_BOOTNODES,
            Self::Sepolia => bootnodes::SEPOLIA_BOOTNODES,
            Self::Hoodi => bootnodes::HOODI_BOOTNODES,
            Self::Dev => &[],
        };
        // The lists are checked to parse by gigagas-net-peers' tests.
        list.iter().filter_map(|s| s.parse().ok()).collect()
    }
}

impl fmt::Display for NamedChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NamedChain {
    type Err = ChainSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ChainSpecError::UnknownName(s.to_string()))
    }
}

/// The dev chain's genesis file (testing/dev-genesis.json): chain id 1337, every fork through
/// Amsterdam (geth's Glamsterdam, BALs) at 0, funded accounts whose keys include the well-known
/// Hardhat/Anvil dev keys.
pub const DEV_GENESIS: &str = include_str!("../../../testing/dev-genesis.json");

/// What `--chain` names: a chain known by name, or a geth-format genesis file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainArg {
    /// `mainnet`, `sepolia`, `hoodi` or `dev`.
    Named(NamedChain),
    /// A path to a genesis file.
    Genesis(PathBuf),
}

impl ChainArg {
    /// The genesis file's bytes.
    ///
    /// # Errors
    /// [`ChainSpecError::Read`] when the file cannot be read, [`ChainSpecError::Decompress`]
    /// for a corrupt built-in file.
    pub fn genesis_json(&self) -> Result<Vec<u8>, ChainSpecError> {
        match self {
            Self::Named(chain) => chain.genesis_json(),
            Self::Genesis(path) => std::fs::read(path)
                .map_err(|source| ChainSpecError::Read { path: path.clone(), source }),
        }
    }

    /// The chain's name, if it has one.
    pub fn named(&self) -> Option<NamedChain> {
        match self {
            Self::Named(chain) => Some(*chain),
            Self::Genesis(_) => None,
        }
    }
}

impl FromStr for ChainArg {
    type Err = std::convert::Infallible;

    /// A known name (any case) is that chain; anything else is a path.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.parse() {
            Ok(chain) => Self::Named(chain),
            Err(_) => Self::Genesis(PathBuf::from(s)),
        })
    }
}

impl fmt::Display for ChainArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Named(chain) => write!(f, "{chain}"),
            Self::Genesis(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Why a chain could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ChainSpecError {
    /// Not one of the names.
    #[error("unknown chain {0:?} (known: mainnet, sepolia, hoodi, dev)")]
    UnknownName(String),
    /// A genesis file that cannot be read.
    #[error("genesis file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A built-in genesis file that does not decompress.
    #[error("built-in genesis of {chain} does not decompress: {source}")]
    Decompress {
        /// The chain.
        chain: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}
