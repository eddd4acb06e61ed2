//! The BlockchainTests JSON format of ethereum/tests and execution-spec-tests.
//!
//! A file maps test names to [`BlockchainTest`]s: a genesis block and `pre` state, a list of
//! blocks as RLP (some marked `expectException`: they must be rejected), and the expected final
//! state (`postState`, or only its root `postStateHash`) and head (`lastblockhash`).

use alloy_primitives::{Address, Bytes, B256, U256, U64};
use serde::Deserialize;
use std::{collections::BTreeMap, path::Path};

/// One test case.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockchainTest {
    /// Fork name the chain runs on from genesis, e.g. `"Cancun"`.
    pub network: String,
    /// The genesis block, RLP-encoded.
    #[serde(rename = "genesisRLP")]
    pub genesis_rlp: Bytes,
    /// State at genesis.
    pub pre: BTreeMap<Address, FixtureAccount>,
    /// Blocks in import order.
    pub blocks: Vec<FixtureBlock>,
    /// The state at the head after all blocks, when the fixture lists it.
    pub post_state: Option<BTreeMap<Address, FixtureAccount>>,
    /// The state root at the head, when the fixture gives only the root.
    pub post_state_hash: Option<B256>,
    /// Hash of the head block after all blocks.
    pub lastblockhash: B256,
    /// `"NoProof"` for the post-merge suites (no proof-of-work seal to check).
    pub seal_engine: Option<String>,
    /// The filler's notes (execution-spec-tests: the test's source `url`, the tool's version).
    #[serde(rename = "_info")]
    pub info: Option<FixtureInfo>,
}

/// The `_info` of a filled fixture: where it came from.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct FixtureInfo {
    /// The test's source, e.g. a file of ethereum/execution-specs at a tag.
    #[serde(default)]
    pub url: Option<String>,
}

impl BlockchainTest {
    /// Whether the fixture was filled for the bal-devnet draft of Amsterdam (execution-spec-tests
    /// `tests-bal@v5.0.0`, which its `_info.url` names) rather than the Glamsterdam that geth
    /// 1.17.10 runs.
    pub fn is_bal_devnet_draft(&self) -> bool {
        self.info
            .as_ref()
            .and_then(|i| i.url.as_deref())
            .is_some_and(|url| url.contains("tests-bal@v5."))
    }
}

/// An account of `pre` / `postState`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct FixtureAccount {
    /// Balance (wei).
    pub balance: U256,
    /// Nonce.
    pub nonce: U64,
    /// Code (empty for none).
    pub code: Bytes,
    /// Non-zero storage slots.
    pub storage: BTreeMap<U256, U256>,
}

/// One block of a test.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FixtureBlock {
    /// The block, RLP-encoded (possibly malformed when an exception is expected).
    pub rlp: Bytes,
    /// Set when the block must be rejected; the fixture's name for the reason.
    pub expect_exception: Option<String>,
    /// The block's EIP-7928 access list (Amsterdam fixtures), which the header's
    /// `blockAccessListHash` commits to.
    pub block_access_list: Option<gigagas_bal::BlockAccessList>,
}

/// Errors reading a fixture file.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a BlockchainTests JSON object; names the JSON path of the bad field.
    #[error("{path}: field {field}: {reason}")]
    Json {
        /// The file.
        path: String,
        /// JSON path of the field, e.g. `basefeeExample_Cancun.blocks[0].rlp`.
        field: String,
        /// What was wrong.
        reason: String,
    },
}

/// Reads a BlockchainTests file: test name → test, in the file's (sorted) order.
///
/// # Errors
/// [`FixtureError`] naming the file and, for bad JSON, the field.
pub fn read_file(path: &Path) -> Result<BTreeMap<String, BlockchainTest>, FixtureError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| FixtureError::Io { path: path.display().to_string(), source })?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(de).map_err(|e| FixtureError::Json {
        path: path.display().to_string(),
        field: e.path().to_string(),
        reason: e.inner().to_string(),
    })
}
