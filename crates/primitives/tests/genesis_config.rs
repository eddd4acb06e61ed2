//! A geth-format genesis means what geth 1.17.10 means: its own `--dev dumpgenesis` output and
//! its mainnet chain spec (testing/geth/, see testing/geth/README.md) read field by field, and the
//! keys gigagas does not implement refused by name.

use alloy_eips::{eip6110::MAINNET_DEPOSIT_CONTRACT_ADDRESS, eip7840::BlobParams};
use alloy_evm::eth::spec::EthExecutorSpec;
use alloy_genesis::ChainConfig;
use alloy_hardforks::{EthereumHardfork, EthereumHardforks};
use alloy_primitives::{b256, Address};
use gigagas_primitives::{ChainSpec, GenesisConfigError};
use revm::primitives::hardfork::SpecId;
use std::path::PathBuf;

fn geth_file(name: &str) -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testing/geth").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

fn config(value: &serde_json::Value) -> ChainConfig {
    serde_json::from_value(value.clone()).expect("a geth chain config")
}

/// The `config` of geth 1.17.10's `geth --dev dumpgenesis`, with `edit` applied.
fn geth_dev(edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) -> ChainConfig {
    let mut genesis = geth_file("geth-1.17.10-dev-dumpgenesis.json");
    edit(genesis["config"].as_object_mut().expect("config"));
    config(&genesis["config"])
}

fn refused_key(result: Result<ChainSpec, GenesisConfigError>) -> String {
    match result {
        Err(GenesisConfigError::Unsupported { key, .. }) => key,
        other => panic!("expected an unsupported key, got {other:?}"),
    }
}

#[test]
fn geth_dev_genesis_is_refused_for_bogota_and_read_without_it() {
    // geth 1.17.10's dev chain schedules Bogota at genesis, which gigagas does not implement.
    let as_dumped = geth_dev(|_| {});
    assert_eq!(refused_key(ChainSpec::from_genesis_config(&as_dumped)), "bogotaTime");

    let spec = ChainSpec::from_genesis_config(&geth_dev(|c| {
        c.remove("bogotaTime");
    }))
    .expect("geth's dev config without bogotaTime");
    assert_eq!(spec.chain_id, 1337);
    // Every block fork at 0, the Merge at genesis, every time fork through Osaka at 0.
    for fork in [
        EthereumHardfork::Homestead,
        EthereumHardfork::Tangerine,
        EthereumHardfork::SpuriousDragon,
        EthereumHardfork::Byzantium,
        EthereumHardfork::Constantinople,
        EthereumHardfork::Petersburg,
        EthereumHardfork::Istanbul,
        EthereumHardfork::Berlin,
        EthereumHardfork::London,
        EthereumHardfork::GrayGlacier,
    ] {
        assert!(spec.eth.ethereum_fork_activation(fork).active_at_block(0), "{fork:?}");
    }
    // No daoForkBlock: no DAO drain.
    assert!(!spec.eth.ethereum_fork_activation(EthereumHardfork::Dao).active_at_block(0));
    assert_eq!(spec.spec_id(0, 0), SpecId::OSAKA);
    assert!(spec.is_osaka(0) && !spec.is_amsterdam(0) && !spec.is_bal_devnet(0));
    for fork in [EthereumHardfork::Bpo1, EthereumHardfork::Amsterdam] {
        assert!(!spec.eth.ethereum_fork_activation(fork).active_at_timestamp(u64::MAX), "{fork:?}");
    }
    // geth writes the zero deposit contract: no EIP-6110 deposits.
    assert_eq!(spec.eth.deposit_contract_address(), Some(Address::ZERO));
    // Blob parameters: Cancun's entry, then Prague's entry for Prague and for Osaka (named
    // forks declare none), with Osaka's EIP-7918 base cost.
    let at = |t| spec.blob_params(t).expect("blob params");
    let osaka = at(0);
    assert_eq!(
        (osaka.target_blob_count, osaka.max_blob_count, osaka.update_fraction),
        (6, 9, 5_007_716)
    );
    assert_eq!(osaka.blob_base_cost, BlobParams::osaka().blob_base_cost);
}

#[test]
fn geth_mainnet_chainspec_activates_every_fork_where_mainnet_does() {
    let value = geth_file("mainnet-chainspec.json");
    let spec = ChainSpec::from_genesis_config(&config(&value)).expect("geth's mainnet.json");
    let reference = ChainSpec::mainnet();
    assert_eq!(spec.chain_id, 1);
    // (block, timestamp) on each side of every activation.
    let points: [(u64, u64); 22] = [
        (1_149_999, 1_457_981_342),
        (1_150_000, 1_457_981_393),
        (1_919_999, 1_469_020_838),
        (1_920_000, 1_469_020_840),
        (2_462_999, 1_476_796_747),
        (2_463_000, 1_476_796_771),
        (2_675_000, 1_479_831_344),
        (4_370_000, 1_508_131_331),
        (7_280_000, 1_551_383_524),
        (9_069_000, 1_575_764_709),
        (12_244_000, 1_618_481_223),
        (12_965_000, 1_628_166_822),
        (15_537_393, 1_663_224_162),
        (15_537_394, 1_663_224_179),
        (17_034_869, 1_681_338_443),
        (17_034_870, 1_681_338_479),
        (19_426_586, 1_710_338_123),
        (19_426_587, 1_710_338_135),
        (22_431_084, 1_746_612_311),
        (23_935_694, 1_764_798_551),
        (23_975_796, 1_765_290_071),
        (24_176_000, 1_767_747_671),
    ];
    for (number, timestamp) in points {
        assert_eq!(
            spec.spec_id(number, timestamp),
            reference.spec_id(number, timestamp),
            "block {number} at {timestamp}"
        );
    }
    assert!(spec.spec_id(15_537_393, 1_663_224_162) < SpecId::MERGE);
    assert_eq!(spec.spec_id(15_537_394, 1_663_224_179), SpecId::MERGE);
    assert!(spec.eth.ethereum_fork_activation(EthereumHardfork::Dao).active_at_block(1_920_000));
    assert!(!spec.eth.ethereum_fork_activation(EthereumHardfork::Dao).active_at_block(1_919_999));
    assert_eq!(spec.eth.deposit_contract_address(), Some(MAINNET_DEPOSIT_CONTRACT_ADDRESS));
    // BPO1 and BPO2 take their entries; Osaka Prague's.
    let params = |t| spec.blob_params(t).expect("blob params");
    assert_eq!(params(1_764_798_551).max_blob_count, 9);
    assert_eq!(params(1_765_290_071).max_blob_count, 15);
    assert_eq!(params(1_767_747_671).max_blob_count, 21);
    assert_eq!(params(1_767_747_671).target_blob_count, 14);
    assert_eq!(params(1_767_747_671), reference.blob_params(1_767_747_671).expect("mainnet"));
    assert!(spec.eth.is_osaka_active_at_timestamp(1_764_798_551));
}

#[test]
fn keys_gigagas_does_not_implement_are_refused_by_name() {
    for key in ["ubtTime", "verkleTime", "bogotaTime", "pragueTIME", "mergeBlock"] {
        let config = geth_dev(|c| {
            c.remove("bogotaTime");
            c.insert(key.into(), 0.into());
        });
        assert_eq!(refused_key(ChainSpec::from_genesis_config(&config)), key);
    }
    // A key geth ignores (the chain spec files carry `chainName`) is ignored here too.
    let config = geth_dev(|c| {
        c.remove("bogotaTime");
        c.insert("chainName".into(), "dev".into());
    });
    assert!(ChainSpec::from_genesis_config(&config).is_ok());
}

#[test]
fn blob_schedules_geth_would_refuse_are_refused() {
    let without_bogota = |c: &mut serde_json::Map<String, serde_json::Value>| {
        c.remove("bogotaTime");
    };
    // BPO1 scheduled without its entry.
    let config = geth_dev(|c| {
        without_bogota(c);
        c.insert("bpo1Time".into(), 10.into());
    });
    let err = ChainSpec::from_genesis_config(&config).unwrap_err();
    assert!(err.to_string().contains("missing entry for fork \"bpo1\""), "{err}");
    // An entry geth does not read.
    let config = geth_dev(|c| {
        without_bogota(c);
        c["blobSchedule"]["glamsterdam"] =
            serde_json::json!({"target": 1, "max": 2, "baseFeeUpdateFraction": 3});
    });
    let err = ChainSpec::from_genesis_config(&config).unwrap_err();
    assert!(err.to_string().contains("unknown entry `glamsterdam`"), "{err}");
    // An `osaka` entry that differs from Prague's, which geth would use in its place.
    let config = geth_dev(|c| {
        without_bogota(c);
        c["blobSchedule"]["osaka"] =
            serde_json::json!({"target": 9, "max": 12, "baseFeeUpdateFraction": 5007716});
    });
    let err = ChainSpec::from_genesis_config(&config).unwrap_err();
    assert!(err.to_string().contains("entry `osaka` differs"), "{err}");
    // One equal to Prague's (hive and older files write it) is accepted.
    let config = geth_dev(|c| {
        without_bogota(c);
        c["blobSchedule"]["osaka"] =
            serde_json::json!({"target": 6, "max": 9, "baseFeeUpdateFraction": 5007716});
    });
    assert!(ChainSpec::from_genesis_config(&config).is_ok());
}

#[test]
fn fork_order_and_merge_rules_follow_geth() {
    // Osaka before Prague.
    let config = geth_dev(|c| {
        c.remove("bogotaTime");
        c.insert("pragueTime".into(), 100.into());
    });
    let err = ChainSpec::from_genesis_config(&config).unwrap_err();
    assert!(matches!(err, GenesisConfigError::ForkOrder(_)), "{err}");
    // A skipped required fork.
    let config = geth_dev(|c| {
        c.remove("bogotaTime");
        c.remove("berlinBlock");
    });
    let err = ChainSpec::from_genesis_config(&config).unwrap_err();
    assert!(err.to_string().contains("berlinBlock not enabled, but londonBlock enabled"), "{err}");
    // A non-zero terminal total difficulty without a known Merge block.
    let config = geth_dev(|c| {
        c.remove("bogotaTime");
        c.insert("terminalTotalDifficulty".into(), 1000.into());
    });
    let err = ChainSpec::from_genesis_config(&config).unwrap_err();
    assert!(matches!(err, GenesisConfigError::MergeBlockUnknown { .. }), "{err}");
    // EIP-155 apart from EIP-158.
    let config = geth_dev(|c| {
        c.remove("bogotaTime");
        c.insert("eip155Block".into(), 1.into());
    });
    assert_eq!(refused_key(ChainSpec::from_genesis_config(&config)), "eip155Block");
    // Petersburg left out means Petersburg with Constantinople (geth's IsPetersburg).
    let spec = ChainSpec::from_genesis_config(&geth_dev(|c| {
        c.remove("bogotaTime");
        c.remove("petersburgBlock");
    }))
    .expect("petersburgBlock may be left out");
    assert!(spec.eth.ethereum_fork_activation(EthereumHardfork::Petersburg).active_at_block(0));
}

#[test]
fn amsterdam_time_is_geths_glamsterdam() {
    // geth 1.17.10's dev genesis with Amsterdam at genesis instead of Bogota: revm's full
    // AMSTERDAM rules, blocks with BALs, not the bal-devnet draft.
    let spec = ChainSpec::from_genesis_config(&geth_dev(|c| {
        c.remove("bogotaTime");
        c.insert("amsterdamTime".into(), 0.into());
    }))
    .expect("geth's dev config with amsterdamTime");
    assert_eq!(spec.spec_id(0, 0), SpecId::AMSTERDAM);
    assert!(spec.is_amsterdam(0) && !spec.is_bal_devnet(0));
    // Named forks declare no blob entry: Prague's, as for Osaka.
    assert_eq!(spec.blob_params(0).expect("blob params").max_blob_count, 9);
    // geth's order: bpo2 < amsterdam < bpo3; Amsterdam before BPO2 is refused.
    let config = geth_dev(|c| {
        c.remove("bogotaTime");
        c.insert("bpo1Time".into(), 0.into());
        c.insert("bpo2Time".into(), 200.into());
        c.insert("amsterdamTime".into(), 100.into());
        c["blobSchedule"]["bpo1"] =
            serde_json::json!({"target": 10, "max": 15, "baseFeeUpdateFraction": 8346193});
        c["blobSchedule"]["bpo2"] =
            serde_json::json!({"target": 14, "max": 21, "baseFeeUpdateFraction": 11684671});
    });
    let err = ChainSpec::from_genesis_config(&config).expect_err("amsterdam before bpo2");
    assert!(matches!(err, GenesisConfigError::ForkOrder(_)), "{err}");
    // With the draft rules too: refused, the two are rule sets for the same blocks.
    let config = geth_dev(|c| {
        c.remove("bogotaTime");
        c.insert("amsterdamTime".into(), 0.into());
        c.insert("balDevnetTime".into(), 0.into());
    });
    assert_eq!(refused_key(ChainSpec::from_genesis_config(&config)), "balDevnetTime");
}

#[test]
fn geth_sepolia_chainspec_schedules_amsterdam() {
    // geth 1.17.10's params/chainspecs/sepolia.json: Glamsterdam at 1791294816, after BPO2.
    let spec = ChainSpec::from_genesis_config(&config(&geth_file("sepolia-chainspec.json")))
        .expect("geth's sepolia.json");
    assert_eq!(spec.chain_id, 11_155_111);
    assert_eq!(spec.spec_id(9_000_000, 1_791_294_815), SpecId::OSAKA);
    assert_eq!(spec.spec_id(9_000_000, 1_791_294_816), SpecId::AMSTERDAM);
    assert!(!spec.is_amsterdam(1_791_294_815) && spec.is_amsterdam(1_791_294_816));
    // Amsterdam keeps BPO2's blob parameters.
    assert_eq!(spec.blob_params(1_791_294_816).expect("blob params").max_blob_count, 21);
    // EIP-2124 fork ids as geth 1.17.10's core/forkid/forkid_test.go gives them for Sepolia
    // (genesis 0x25a5…6dd9 at 1633267481).
    let genesis = b256!("0x25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9");
    let id = |number, time| spec.fork_id(genesis, 1_633_267_481, number, time);
    let cases: [(u64, u64, u32, u64); 8] = [
        (0, 0, 0xfe3366e7, 1_735_371),
        (1_735_371, 0, 0xb96cbd13, 1_677_557_088),
        (1_735_372, 1_706_655_072, 0x88cf81d9, 1_741_159_776),
        (1_735_372, 1_760_427_360, 0xe2ae4999, 1_761_017_184),
        (1_735_372, 1_761_607_008, 0x268956b6, 1_791_294_816),
        (1_735_372, 1_791_294_815, 0x268956b6, 1_791_294_816),
        (1_735_372, 1_791_294_816, 0x6c1d9423, 0),
        (1_735_372, 2_000_000_000, 0x6c1d9423, 0),
    ];
    for (number, time, hash, next) in cases {
        let got = id(number, time);
        assert_eq!((got.hash.0, got.next), (hash.to_be_bytes(), next), "block {number} at {time}");
        // The filter at the same head announces the same id.
        let filter = spec.fork_filter(genesis, 1_633_267_481, number, time);
        assert_eq!(filter.current(), got, "block {number} at {time}");
    }
    // EIP-2124's rules at a head in BPO2, before Amsterdam: a peer already past Amsterdam is
    // accepted (we will follow), one at Osaka that knows BPO1 is next too (it can catch up),
    // one on an unknown fork or one that missed Amsterdam's activation is refused.
    let filter = spec.fork_filter(genesis, 1_633_267_481, 1_735_372, 1_761_607_008);
    let fork_id = |hash: u32, next| alloy_eip2124::ForkId {
        hash: alloy_eip2124::ForkHash(hash.to_be_bytes()),
        next,
    };
    assert!(filter.validate(fork_id(0x6c1d9423, 0)).is_ok());
    assert!(filter.validate(fork_id(0xe2ae4999, 1_761_017_184)).is_ok());
    assert!(filter.validate(fork_id(0xdeadbeef, 0)).is_err());
    assert!(filter.validate(fork_id(0x268956b6, 0)).is_ok());
    let after = spec.fork_filter(genesis, 1_633_267_481, 1_735_372, 1_791_294_900);
    assert!(after.validate(fork_id(0x268956b6, 0)).is_err(), "missed Amsterdam");
}

#[test]
fn bal_devnet_rules_have_their_own_key() {
    let spec = ChainSpec::from_genesis_config(&geth_dev(|c| {
        c.remove("bogotaTime");
        c.insert("balDevnetTime".into(), 100.into());
    }))
    .expect("balDevnetTime");
    assert_eq!(spec.bal_devnet_time, Some(100));
    assert!(!spec.is_bal_devnet(99) && spec.is_bal_devnet(100) && spec.is_amsterdam(100));
    // Before Osaka it is refused.
    let config = geth_dev(|c| {
        c.remove("bogotaTime");
        c.insert("osakaTime".into(), 200.into());
        c.insert("balDevnetTime".into(), 100.into());
    });
    assert_eq!(refused_key(ChainSpec::from_genesis_config(&config)), "balDevnetTime");
}
