//! The sequential reference reproduces every header.

use crate::common::data;
use gigagas_executor::validate_header;

#[test]
fn sequential_reference_matches_all_52_headers() {
    let d = data();
    let mut receipts_root_checked = 0;
    for (b, outcome) in d.blocks.iter().zip(&d.reference) {
        let check = validate_header(&d.chain, &b.block, outcome, outcome.bal.as_deref().unwrap())
            .unwrap_or_else(|e| panic!("{e}"));
        receipts_root_checked += check.receipts_root as usize;
        assert_eq!(outcome.tx_gas_used.iter().sum::<u64>(), outcome.gas_used);
    }
    assert_eq!(d.reference.len(), 52);
    // 12 blocks predate Byzantium (status-code receipts), see ../shared/data/README.md.
    assert_eq!(receipts_root_checked, 40);
}

#[test]
fn sequential_without_bal_builder_executes_identically() {
    let d = data();
    for ((b, s), reference) in d.blocks.iter().zip(&d.senders).zip(&d.reference) {
        let outcome = gigagas_executor::sequential::execute_sequential_without_bal(
            &d.chain,
            &b.block,
            s,
            &b.pre_state,
        )
        .unwrap();
        let number = b.block.number();
        assert!(outcome.bal.is_none(), "block {number}");
        assert_eq!(outcome.tx_gas_used, reference.tx_gas_used, "block {number}");
        assert_eq!(outcome.receipts, reference.receipts, "block {number}");
        assert_eq!(outcome.post_state, reference.post_state, "block {number}");
    }
}

/// Prewarming workers beside the in-order run change nothing in the outcome (they only read
/// the pre-block state), and they do run: speculative transactions ahead of the in-order run.
/// With their results reused (optimistic execution) the outcome is still the reference's —
/// receipts, post-state and BAL on every mainnet block — and results are reused.
#[test]
fn prewarmed_sequential_run_executes_identically() {
    let d = data();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for reuse in [false, true] {
        let (mut speculative, mut reused) = (0, 0);
        for ((b, s), reference) in d.blocks.iter().zip(&d.senders).zip(&d.reference) {
            let (outcome, stats) = gigagas_executor::prewarm::execute_sequential_prewarmed(
                &d.chain,
                &b.block,
                s,
                &b.pre_state,
                Some(&pool),
                2,
                reuse,
            );
            let outcome = outcome.unwrap();
            let number = b.block.number();
            assert_eq!(outcome.tx_gas_used, reference.tx_gas_used, "block {number} {reuse}");
            assert_eq!(outcome.receipts, reference.receipts, "block {number} {reuse}");
            assert_eq!(outcome.post_state, reference.post_state, "block {number} {reuse}");
            assert_eq!(outcome.deleted, reference.deleted, "block {number} {reuse}");
            assert_eq!(outcome.wiped, reference.wiped, "block {number} {reuse}");
            assert_eq!(outcome.bal, reference.bal, "block {number} {reuse}");
            assert_eq!(outcome.requests, reference.requests, "block {number} {reuse}");
            assert!(stats.executed + stats.rejected <= b.block.transactions.len() as u64 * 2);
            assert!(stats.reused <= stats.executed, "block {number}");
            speculative += stats.executed;
            reused += stats.reused;
        }
        assert!(speculative > 0, "no transaction was executed speculatively");
        assert_eq!(reused > 0, reuse, "speculative results reused: {reused}");
    }
}
