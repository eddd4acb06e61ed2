//! The state-root stage alone, over a synthetic chain shaped like `gen-chain`'s 300M `mainnet`
//! mix: 7,500 funded accounts and two token contracts of 15,000 slots at genesis, then per block
//! 500 existing accounts changed, 1,000 new ones and 1,300 slots written in each token. Every
//! block's root is computed twice over the same stored nodes (an in-memory pool): from the
//! parent's root alone (`update_state_root`) and on the trie kept from the block before
//! (`PreservedTrie`); the two must agree. Prints the median milliseconds per block of each
//! after 10 blocks of warm-up (`--json` for a JSON line).
//!
//! `cargo run --release -p gigagas-trie --example state_root_blocks [-- --blocks N] [--json]`

use alloy_primitives::{Address, B256, U256};
use gigagas_trie::{update_state_root, AccountUpdate, PreservedTrie, ProofNodes};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::{collections::BTreeMap, time::Instant};

fn account(n: u64) -> Address {
    Address::from_word(B256::from(U256::from(n)))
}

fn funded(address: Address, nonce: u64, balance: U256) -> AccountUpdate {
    AccountUpdate {
        address,
        info: Some((nonce, balance, B256::ZERO)),
        wiped: false,
        storage: vec![],
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let blocks: u64 = args
        .iter()
        .position(|a| a == "--blocks")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(40);
    let mut rng = StdRng::seed_from_u64(1);
    let tokens = [Address::repeat_byte(0xaa), Address::repeat_byte(0xbb)];
    let token = |address, storage| AccountUpdate {
        address,
        info: Some((1, U256::ZERO, B256::repeat_byte(1))),
        wiped: false,
        storage,
    };
    let mut accounts: Vec<Address> = (1..=7_500).map(account).collect();
    let mut genesis: Vec<AccountUpdate> =
        accounts.iter().map(|a| funded(*a, 0, U256::from(10u64.pow(18)))).collect();
    for t in tokens {
        genesis.push(token(
            t,
            (0..15_000u64).map(|k| (U256::from(k * 7 + 1), U256::from(k + 1))).collect(),
        ));
    }
    genesis.sort_by_key(|u| u.address);
    let mut store = ProofNodes::default();
    let first = update_state_root(alloy_trie::EMPTY_ROOT_HASH, &genesis, &store).expect("genesis");
    store.extend(first.nodes.into_iter().map(|(_, rlp)| rlp));
    let mut root = first.root;
    let kept = PreservedTrie::default();
    let (mut fresh_ms, mut kept_ms) = (Vec::new(), Vec::new());
    for b in 0..blocks {
        let mut block: BTreeMap<Address, AccountUpdate> = BTreeMap::new();
        for _ in 0..500 {
            let a = accounts[rng.random_range(0..accounts.len())];
            block.insert(a, funded(a, b + 1, U256::from(rng.random::<u64>())));
        }
        for _ in 0..1_000 {
            let a = account(accounts.len() as u64 + 1);
            accounts.push(a);
            block.insert(a, funded(a, 0, U256::from(5u64)));
        }
        for t in tokens {
            let slots: BTreeMap<U256, U256> = (0..1_300)
                .map(|_| {
                    (
                        U256::from(rng.random_range(0..20_000u64) * 7 + 1),
                        U256::from(rng.random::<u64>() | 1),
                    )
                })
                .collect();
            block.insert(t, token(t, slots.into_iter().collect()));
        }
        let updates: Vec<AccountUpdate> = block.into_values().collect();
        let start = Instant::now();
        let fresh = update_state_root(root, &updates, &store).expect("fresh root");
        let fresh_time = start.elapsed();
        let start = Instant::now();
        let on_kept = kept.update_state_root(root, &updates, &(), &store).0.expect("kept root");
        let kept_time = start.elapsed();
        assert_eq!(fresh.root, on_kept.root, "block {b}");
        if b >= 10 {
            fresh_ms.push(fresh_time.as_secs_f64() * 1e3);
            kept_ms.push(kept_time.as_secs_f64() * 1e3);
        }
        store.extend(fresh.nodes.into_iter().map(|(_, rlp)| rlp));
        root = fresh.root;
    }
    let (fresh, kept_ms) = (median(fresh_ms), median(kept_ms));
    let (accounts_decoded, storage_decoded, _) = kept.take(root).0.decoded_nodes();
    let kept = kept_ms;
    let threads = rayon::current_num_threads();
    if json {
        println!(
            "{{\"blocks\":{},\"threads\":{threads},\"fresh_ms\":{fresh:.3},\"kept_ms\":{kept:.3},\
             \"kept_nodes\":{},\"node_bytes\":{},\"branch_bytes\":{}}}",
            blocks - 10,
            accounts_decoded + storage_decoded,
            std::mem::size_of::<gigagas_trie::Node>(),
            std::mem::size_of::<gigagas_trie::mpt::Branch>()
        );
    } else {
        println!(
            "state root per block, median of {} blocks on {threads} threads: from the parent's root {fresh:.2} ms, on the kept trie {kept:.2} ms ({:.2}x)",
            blocks - 10,
            fresh / kept
        );
        println!(
            "kept between blocks: {accounts_decoded} account-trie and {storage_decoded} storage-trie nodes decoded ({} bytes a slot, {} a branch)",
            std::mem::size_of::<gigagas_trie::Node>(),
            std::mem::size_of::<gigagas_trie::mpt::Branch>()
        );
    }
}
