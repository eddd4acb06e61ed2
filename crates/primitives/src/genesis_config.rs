//! A geth-format genesis `config` read as geth 1.17.10 reads it (`params.ChainConfig`,
//! `CheckConfigForkOrder`, `BlobConfig`), refusing what gigagas does not implement instead of
//! ignoring it: genesis JSON → [`alloy_genesis::ChainConfig`] → checks here → [`ChainSpec`].
//!
//! Keys and their meaning, as geth's:
//! - fork blocks `homesteadBlock` … `grayGlacierBlock`, `mergeNetsplitBlock`; a missing
//!   `petersburgBlock` means Petersburg with Constantinople; `daoForkBlock` drains the DAO
//!   accounts only with `daoForkSupport: true`;
//! - `terminalTotalDifficulty`: 0 means merged at genesis; above 0 the Merge block must be known
//!   (`mergeNetsplitBlock`, or mainnet's 15,537,394 for mainnet's chain id and total difficulty),
//!   since gigagas does not follow total difficulty;
//! - fork times `shanghaiTime`, `cancunTime`, `pragueTime`, `osakaTime`, `bpo1Time`,
//!   `bpo2Time`, `amsterdamTime`, `bpo3Time` … `bpo5Time`, in geth's order
//!   (`CheckConfigForkOrder`), none skipped, none decreasing. `amsterdamTime` is geth 1.17.10's
//!   Glamsterdam: revm's `AMSTERDAM` with alloy-evm's EIP-8282 system calls (EIP by EIP in
//!   docs/conformance.md);
//! - `blobSchedule`: entries `cancun`, `prague`, `bpo1` … `bpo5`, each required when its fork
//!   is scheduled; Osaka uses Prague's entry (as geth: named forks declare none; an `osaka`
//!   entry is accepted only when equal to what it inherits; Amsterdam likewise inherits the
//!   latest entry before it); EIP-7918's blob base cost and
//!   EIP-7594's per-transaction maximum follow Osaka;
//! - `depositContractAddress`: absent means the zero address (geth writes it always), so no
//!   EIP-6110 deposits unless it is named.
//!
//! Refused, with an error naming the key: `bogotaTime`, `ubtTime` / `verkleTime` (and their `enable…AtGenesis`), `clique`, `parlia`,
//! `eip155Block` other than `eip158Block`, and any other key ending in `Block` or `Time`. Keys
//! geth ignores (`chainName`, `consensus`, …) are ignored here too. gigagas's own draft rules
//! are scheduled by their own key, `balDevnetTime` ([`ChainSpec::bal_devnet_time`]), which geth
//! ignores (it then runs plain Osaka); a config may not schedule both.

use crate::{ChainSpec, ForkSchedule};
use alloy_eips::eip7840::BlobParams;
use alloy_genesis::ChainConfig;
use alloy_hardforks::{EthereumHardfork, ForkCondition};
use alloy_primitives::{Address, U256};

/// Why a genesis `config` cannot be read as a chain gigagas runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenesisConfigError {
    /// A key names a fork or rule set gigagas does not implement.
    #[error("genesis config: `{key}` is not supported: {why}")]
    Unsupported {
        /// The key.
        key: String,
        /// What it means and what to use instead.
        why: String,
    },
    /// Forks out of geth's order: a fork skipped, or an activation before an earlier fork's.
    #[error("genesis config: unsupported fork ordering: {0}")]
    ForkOrder(String),
    /// A `blobSchedule` entry missing, unknown or malformed.
    #[error("genesis config: blobSchedule: {0}")]
    BlobSchedule(String),
    /// The Merge block cannot be known from the config.
    #[error(
        "genesis config: terminalTotalDifficulty {ttd} without mergeNetsplitBlock: gigagas \
         schedules the Merge by block number and does not follow total difficulty"
    )]
    MergeBlockUnknown {
        /// The configured terminal total difficulty.
        ttd: U256,
    },
}

/// Mainnet's terminal total difficulty (58,750,000,000,000,000,000,000).
const MAINNET_TTD: u128 = 58_750_000_000_000_000_000_000;
/// Mainnet's first post-Merge block.
const MAINNET_MERGE_BLOCK: u64 = 15_537_394;

/// The blob-schedule keys geth 1.17.10 reads, with the fork each schedules and that fork's
/// activation time in the config.
type BlobKey = (&'static str, EthereumHardfork, fn(&ChainConfig) -> Option<u64>);
const BLOB_KEYS: [BlobKey; 7] = [
    ("cancun", EthereumHardfork::Cancun, |c| c.cancun_time),
    ("prague", EthereumHardfork::Prague, |c| c.prague_time),
    ("bpo1", EthereumHardfork::Bpo1, |c| c.bpo1_time),
    ("bpo2", EthereumHardfork::Bpo2, |c| c.bpo2_time),
    ("bpo3", EthereumHardfork::Bpo3, |c| c.bpo3_time),
    ("bpo4", EthereumHardfork::Bpo4, |c| c.bpo4_time),
    ("bpo5", EthereumHardfork::Bpo5, |c| c.bpo5_time),
];

/// Reads `config` as geth does (module doc).
///
/// # Errors
/// [`GenesisConfigError`] naming the key: an unsupported fork or rule set, forks out of order,
/// a blob schedule entry missing or unknown, a Merge block that cannot be known.
pub(crate) fn chain_spec(config: &ChainConfig) -> Result<ChainSpec, GenesisConfigError> {
    refuse_unsupported(config)?;
    let bal_devnet_time = extra_u64(config, "balDevnetTime")?;
    let petersburg = config.petersburg_block.or(config.constantinople_block);
    if let (Some(a), Some(b)) = (config.eip155_block, config.eip158_block) {
        if a != b {
            return Err(unsupported(
                "eip155Block",
                format!("EIP-155 at block {a} apart from EIP-158 at {b}: gigagas activates both with Spurious Dragon"),
            ));
        }
    }
    check_order(config, petersburg)?;
    if bal_devnet_time.is_some() && config.amsterdam_time.is_some() {
        return Err(unsupported(
            "balDevnetTime",
            "the bal-devnet draft rules and geth's Amsterdam (amsterdamTime) are two rule sets \
             for the same blocks: schedule one"
                .into(),
        ));
    }
    if let (Some(t), osaka) = (bal_devnet_time, config.osaka_time) {
        if osaka.is_none_or(|o| t < o) {
            return Err(unsupported(
                "balDevnetTime",
                "the bal-devnet rules build on Osaka: balDevnetTime must be at or after osakaTime"
                    .into(),
            ));
        }
    }

    use EthereumHardfork as F;
    let block = |f, b: Option<u64>| b.map(|b| (f, ForkCondition::Block(b)));
    let time = |f, t: Option<u64>| t.map(|t| (f, ForkCondition::Timestamp(t)));
    let merge = match config.terminal_total_difficulty {
        None => None,
        Some(ttd) => {
            let activation_block_number = if ttd.is_zero() {
                config.merge_netsplit_block.unwrap_or(0)
            } else if let Some(b) = config.merge_netsplit_block {
                b
            } else if config.chain_id == 1 && ttd == U256::from(MAINNET_TTD) {
                MAINNET_MERGE_BLOCK
            } else {
                return Err(GenesisConfigError::MergeBlockUnknown { ttd });
            };
            // Only a `mergeNetsplitBlock` counts in the EIP-2124 fork id (mainnet has none).
            let condition = ForkCondition::TTD {
                activation_block_number,
                fork_block: config.merge_netsplit_block,
                total_difficulty: ttd,
            };
            Some((F::Paris, condition))
        }
    };
    let dao = config.dao_fork_block.filter(|_| config.dao_fork_support);
    let forks = [
        Some((F::Frontier, ForkCondition::Block(0))),
        block(F::Homestead, config.homestead_block),
        block(F::Dao, dao),
        block(F::Tangerine, config.eip150_block),
        block(F::SpuriousDragon, config.eip158_block),
        block(F::Byzantium, config.byzantium_block),
        block(F::Constantinople, config.constantinople_block),
        block(F::Petersburg, petersburg),
        block(F::Istanbul, config.istanbul_block),
        block(F::MuirGlacier, config.muir_glacier_block),
        block(F::Berlin, config.berlin_block),
        block(F::London, config.london_block),
        block(F::ArrowGlacier, config.arrow_glacier_block),
        block(F::GrayGlacier, config.gray_glacier_block),
        merge,
        time(F::Shanghai, config.shanghai_time),
        time(F::Cancun, config.cancun_time),
        time(F::Prague, config.prague_time),
        time(F::Osaka, config.osaka_time),
        time(F::Bpo1, config.bpo1_time),
        time(F::Bpo2, config.bpo2_time),
        time(F::Bpo3, config.bpo3_time),
        time(F::Bpo4, config.bpo4_time),
        time(F::Bpo5, config.bpo5_time),
        time(F::Amsterdam, config.amsterdam_time),
    ];
    let deposit_contract = config.deposit_contract_address.unwrap_or(Address::ZERO);
    Ok(ChainSpec {
        chain_id: config.chain_id,
        eth: ForkSchedule::new(forks.into_iter().flatten(), Some(deposit_contract)),
        bal_devnet_time,
        blob_schedule: blob_schedule(config)?,
    })
}

fn unsupported(key: &str, why: String) -> GenesisConfigError {
    GenesisConfigError::Unsupported { key: key.to_string(), why }
}

/// The keys gigagas refuses (module doc).
fn refuse_unsupported(config: &ChainConfig) -> Result<(), GenesisConfigError> {
    if config.bogota_time.is_some() {
        return Err(unsupported("bogotaTime", "geth's Bogota is not implemented".into()));
    }
    if config.clique.is_some() {
        return Err(unsupported("clique", "proof-of-authority is not implemented".into()));
    }
    if config.parlia.is_some() {
        return Err(unsupported("parlia", "BSC's consensus is not implemented".into()));
    }
    for (key, value) in config.extra_fields.iter() {
        let lower = key.to_ascii_lowercase();
        let enables = value.as_bool() == Some(true);
        if (lower == "enableubtatgenesis" || lower == "enableverkleatgenesis") && enables {
            return Err(unsupported(key, "binary / verkle state trees are not implemented".into()));
        }
        if key == "balDevnetTime" {
            continue;
        }
        if lower.ends_with("block") || lower.ends_with("time") {
            return Err(unsupported(
                key,
                "not a fork key gigagas implements (geth 1.17.10's are homesteadBlock … \
                 mergeNetsplitBlock, shanghaiTime … osakaTime, bpo1Time … bpo5Time, \
                 amsterdamTime; gigagas's own: balDevnetTime)"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// A `u64` under `key` among the keys alloy does not know (`balDevnetTime`), decimal or hex.
fn extra_u64(config: &ChainConfig, key: &str) -> Result<Option<u64>, GenesisConfigError> {
    let Some(value) = config.extra_fields.get(key) else { return Ok(None) };
    let parsed = match value {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s
            .strip_prefix("0x")
            .map_or_else(|| s.parse().ok(), |hex| u64::from_str_radix(hex, 16).ok()),
        _ => None,
    };
    parsed.map(Some).ok_or_else(|| unsupported(key, format!("{value} is not a time in seconds")))
}

/// geth's `CheckConfigForkOrder`: no required fork skipped before a later one, activations
/// not decreasing, block forks before time forks.
fn check_order(config: &ChainConfig, petersburg: Option<u64>) -> Result<(), GenesisConfigError> {
    // (name, activation, optional)
    let blocks = [
        ("homesteadBlock", config.homestead_block, false),
        ("daoForkBlock", config.dao_fork_block, true),
        ("eip150Block", config.eip150_block, false),
        ("eip155Block", config.eip155_block, false),
        ("eip158Block", config.eip158_block, false),
        ("byzantiumBlock", config.byzantium_block, false),
        ("constantinopleBlock", config.constantinople_block, false),
        ("petersburgBlock", petersburg, false),
        ("istanbulBlock", config.istanbul_block, false),
        ("muirGlacierBlock", config.muir_glacier_block, true),
        ("berlinBlock", config.berlin_block, false),
        ("londonBlock", config.london_block, false),
        ("arrowGlacierBlock", config.arrow_glacier_block, true),
        ("grayGlacierBlock", config.gray_glacier_block, true),
        ("mergeNetsplitBlock", config.merge_netsplit_block, true),
    ];
    let times = [
        ("shanghaiTime", config.shanghai_time, false),
        ("cancunTime", config.cancun_time, true),
        ("pragueTime", config.prague_time, true),
        ("osakaTime", config.osaka_time, true),
        ("bpo1Time", config.bpo1_time, true),
        ("bpo2Time", config.bpo2_time, true),
        ("amsterdamTime", config.amsterdam_time, true),
        ("bpo3Time", config.bpo3_time, true),
        ("bpo4Time", config.bpo4_time, true),
        ("bpo5Time", config.bpo5_time, true),
    ];
    for list in [&blocks[..], &times[..]] {
        // The last fork seen: (name, activation, whether it is set).
        let mut last: Option<(&str, Option<u64>)> = None;
        for &(name, at, optional) in list {
            if optional && at.is_none() {
                continue;
            }
            if let Some((prev, prev_at)) = last {
                match (prev_at, at) {
                    (None, Some(_)) => {
                        return Err(GenesisConfigError::ForkOrder(format!(
                            "{prev} not enabled, but {name} enabled"
                        )))
                    }
                    (Some(p), Some(a)) if a < p => {
                        return Err(GenesisConfigError::ForkOrder(format!(
                            "{name} ({a}) before {prev} ({p})"
                        )))
                    }
                    _ => {}
                }
            }
            last = Some((name, at));
        }
    }
    // The first time fork needs the block forks up to London (geth: the Merge needs London).
    if config.shanghai_time.is_some() && config.london_block.is_none() {
        return Err(GenesisConfigError::ForkOrder(
            "londonBlock not enabled, but shanghaiTime enabled".into(),
        ));
    }
    for (name, at) in [("cancunTime", config.cancun_time), ("pragueTime", config.prague_time)] {
        if at.is_some() && config.shanghai_time.is_none() {
            return Err(GenesisConfigError::ForkOrder(format!(
                "shanghaiTime not enabled, but {name} enabled"
            )));
        }
    }
    Ok(())
}

/// The blob parameters per fork as geth's `BlobConfig` gives them (module doc).
fn blob_schedule(
    config: &ChainConfig,
) -> Result<Vec<(EthereumHardfork, BlobParams)>, GenesisConfigError> {
    use EthereumHardfork as F;
    let entries: Vec<(String, BlobParams)> =
        config.blob_schedule.iter().map(|(k, v)| (k.to_ascii_lowercase(), *v)).collect();
    let entry = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, p)| *p);
    for (key, params) in &entries {
        let known = BLOB_KEYS.iter().any(|(k, _, _)| k == key);
        if !known && key != "osaka" && key != "amsterdam" {
            return Err(GenesisConfigError::BlobSchedule(format!(
                "unknown entry `{key}` (geth 1.17.10 reads cancun, prague, bpo1 … bpo5)"
            )));
        }
        if params.max_blob_count < params.target_blob_count || params.update_fraction == 0 {
            return Err(GenesisConfigError::BlobSchedule(format!(
                "entry `{key}`: max below target or baseFeeUpdateFraction 0"
            )));
        }
    }
    let mut schedule: Vec<(F, BlobParams)> = Vec::new();
    for (key, fork, time) in BLOB_KEYS {
        if time(config).is_none() {
            continue;
        }
        let params = entry(key).ok_or_else(|| {
            GenesisConfigError::BlobSchedule(format!("missing entry for fork \"{key}\""))
        })?;
        // The EIP-7918 / EIP-7594 fields are the fork's own (Osaka's from BPO1 on).
        let base = match fork {
            F::Cancun => BlobParams::cancun(),
            F::Prague => BlobParams::prague(),
            _ => BlobParams::osaka(),
        };
        schedule.push((
            fork,
            BlobParams {
                target_blob_count: params.target_blob_count,
                max_blob_count: params.max_blob_count,
                update_fraction: params.update_fraction,
                ..base
            },
        ));
    }
    // Osaka declares no entry of its own: the latest before it (Prague's), with Osaka's fields.
    if config.osaka_time.is_some() {
        let inherited =
            schedule.iter().rev().find(|(f, _)| *f <= F::Prague).map(|(_, p)| *p).ok_or_else(
                || GenesisConfigError::BlobSchedule("osakaTime set without a prague entry".into()),
            )?;
        for key in ["osaka", "amsterdam"] {
            if let Some(p) = entry(key) {
                let same = p.target_blob_count == inherited.target_blob_count
                    && p.max_blob_count == inherited.max_blob_count
                    && p.update_fraction == inherited.update_fraction;
                if !same {
                    return Err(GenesisConfigError::BlobSchedule(format!(
                        "entry `{key}` differs from prague's, which geth 1.17.10 uses for it \
                         (named forks declare no entry of their own)"
                    )));
                }
            }
        }
        schedule.push((
            F::Osaka,
            BlobParams {
                target_blob_count: inherited.target_blob_count,
                max_blob_count: inherited.max_blob_count,
                update_fraction: inherited.update_fraction,
                ..BlobParams::osaka()
            },
        ));
    }
    schedule.sort_by_key(|(f, _)| *f);
    Ok(schedule)
}
