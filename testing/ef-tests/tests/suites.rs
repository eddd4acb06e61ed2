//! The conformance suites in ../shared/data run through the pipeline, and tampered fixtures are
//! rejected.

use gigagas_ef_tests::{
    fixture::read_file, run_path, run_test, summarize, CaseResult, CaseStatus, RunOptions, SkipList,
};
use std::path::PathBuf;

fn data_dir(suite: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data").join(suite);
    assert!(
        dir.is_dir(),
        "{} is missing: these tests need the shared conformance data (../shared/data beside \
         the repository, see ../shared/data/README.md)",
        dir.display()
    );
    dir
}

fn skip_list() -> SkipList {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/skip.txt")).unwrap();
    SkipList::parse(&text).unwrap()
}

/// Fails naming the count and the first failed case, if any case failed.
fn assert_no_failures(results: &[CaseResult]) {
    let failures: Vec<String> = results
        .iter()
        .filter_map(|r| match &r.status {
            CaseStatus::Failed(reason) => Some(format!("{}: {}: {reason}", r.file, r.name)),
            _ => None,
        })
        .collect();
    assert!(failures.is_empty(), "{} failures, first: {}", failures.len(), failures[0]);
}

#[test]
fn ethereum_tests_pass_in_full() {
    let dir = data_dir("ethereum-tests/BlockchainTests");
    let results = run_path(&dir, &skip_list(), &RunOptions::default(), &|_| {}).unwrap();
    assert_no_failures(&results);
    let summary = summarize(&results);
    let passed: usize = summary.iter().map(|s| s.passed).sum();
    // 3,902 cases in the snapshot (../shared/data/ethereum-tests/SOURCE.txt), none skipped.
    assert_eq!(passed, 3902);
    // The EIP-7610 storage collisions (a creation onto an account with storage but no code
    // and nonce 0), which revm's own check lets through, each ran and passed.
    let collisions: Vec<&CaseResult> = results
        .iter()
        .filter(|r| {
            r.file.contains("InitCollisionParis")
                || r.file.contains("dynamicAccountOverwriteEmpty_Paris")
        })
        .collect();
    assert_eq!(collisions.len(), 5);
    assert!(collisions.iter().all(|r| matches!(r.status, CaseStatus::Passed)), "{collisions:?}");
}

fn example() -> gigagas_ef_tests::fixture::BlockchainTest {
    let file = data_dir("ethereum-tests/BlockchainTests/ValidBlocks/bcExample")
        .join("basefeeExample.json");
    read_file(&file).unwrap().into_values().next().unwrap()
}

#[test]
fn wrong_post_state_is_reported_with_the_account() {
    let mut test = example();
    assert_eq!(run_test(&test, &RunOptions::default()), Ok(()));
    let post = test.post_state.as_mut().unwrap();
    let (address, account) = post.iter_mut().next().unwrap();
    let address = *address;
    account.balance += alloy_primitives::U256::from(1);
    let err = run_test(&test, &RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains(&address.to_string()) && err.contains("balance"), "{err}");
}

#[test]
fn block_with_wrong_state_root_is_rejected() {
    let mut test = example();
    // The header's stateRoot is the 4th field of the header list: flip one byte of it.
    let mut block: alloy_consensus::Block<alloy_consensus::TxEnvelope> =
        alloy_rlp::Decodable::decode(&mut test.blocks[0].rlp.as_ref()).unwrap();
    block.header.state_root.0[0] ^= 1;
    test.blocks[0].rlp = alloy_rlp::encode(&block).into();
    let err = run_test(&test, &RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("block 0: rejected: state root"), "{err}");

    // The same block marked as invalid passes: it must be rejected, and the head is genesis.
    test.blocks[0].expect_exception = Some("BlockException.INVALID_STATE_ROOT".into());
    let err = run_test(&test, &RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("was not imported") || err.contains("post state"), "{err}");
}

#[test]
fn malformed_fixture_names_file_and_field() {
    let dir = tempfile_dir();
    let file = dir.join("bad.json");
    std::fs::write(&file, r#"{"t": {"network": "Cancun", "genesisRLP": "0xzz"}}"#).unwrap();
    let err = read_file(&file).unwrap_err().to_string();
    assert!(err.contains("bad.json") && err.contains("t.genesisRLP"), "{err}");
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gigagas-ef-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn eest_amsterdam_bal_fixtures_all_pass() {
    let dir = data_dir("eest-amsterdam");
    let results = run_path(&dir, &skip_list(), &RunOptions::default(), &|_| {}).unwrap();
    assert_no_failures(&results);
    let passed = results.iter().filter(|r| r.status == CaseStatus::Passed).count();
    assert_eq!(results.len(), 120);
    assert_eq!(passed, 120, "every EIP-7928 case passes, none skipped");
    // The cases the bal-devnet rules decide: EIP-7778 block gas before refunds, EIP-7708 logs
    // of transfers to the same account, EXTCODESIZE / EXTCODECOPY at Osaka's static gas.
    for case in [
        "test_bal_7702_delegation_update[fork_Amsterdam-blockchain_test-self_funded]",
        "test_bal_self_transfer[fork_Amsterdam-blockchain_test]",
        "test_bal_callcode_nested_value_transfer[fork_Amsterdam-blockchain_test]",
        "test_bal_extcodesize_and_oog[fork_Amsterdam-blockchain_test-successful_extcodesize]",
    ] {
        assert!(
            results.iter().any(|r| r.name.contains(case) && r.status == CaseStatus::Passed),
            "{case}"
        );
    }
    // The four invalid-BAL files are among the passes: their blocks were rejected.
    for file in ["test_bal_invalid_account.json", "test_bal_invalid_duplicate_account.json"] {
        assert!(results.iter().any(|r| r.file == file && r.status == CaseStatus::Passed), "{file}");
    }
}

#[test]
fn amsterdam_block_with_a_wrong_bal_is_rejected() {
    let file = data_dir("eest-amsterdam").join("test_bal_4788_empty_block.json");
    let mut test = read_file(&file).unwrap().into_values().next().unwrap();
    assert_eq!(run_test(&test, &RunOptions::default()), Ok(()));
    let bal = test.blocks[0].block_access_list.as_mut().unwrap();
    bal[0].storage_reads.pop();
    let err = run_test(&test, &RunOptions::default()).unwrap_err().to_string();
    assert!(err.contains("block access list differs"), "{err}");
}

#[test]
fn execution_apis_chain_imports_with_every_root_verified() {
    let dir = data_dir("execution-apis/tests");
    let results = run_path(&dir, &skip_list(), &RunOptions::default(), &|_| {}).unwrap();
    assert_eq!(results.len(), 54, "54 blocks in chain.rlp");
    for r in &results {
        assert_eq!(r.status, CaseStatus::Passed, "{}", r.name);
    }
    // The chain crosses every fork from Frontier rules to Osaka and BPO2.
    assert!(results.last().unwrap().name.starts_with("block 54 "), "{}", results[53].name);
}
