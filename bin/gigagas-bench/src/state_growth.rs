//! The state a `gen-chain --state-by-chain` chain creates: `--state-accounts` new accounts and
//! `--state-slots` new slots over `--state-contracts` contracts, made by transactions rather
//! than written into the genesis (a client then holds it by importing the chain, as a node
//! that followed the network holds mainnet's).
//!
//! Flow: the genesis gets the fan-out contract ([`FANOUT`], funded) and the state contracts
//! (the slot writer's code, 64 distinct codes among them, no storage) → [`StatePlan::next`]
//! hands out the calls that create the state, accounts and slots interleaved in proportion to
//! what is left: a fan-out call sends 1 wei to [`FANOUT_ACCOUNTS`] fresh addresses
//! (`keccak256(seed ‖ i)`'s low 20 bytes), a writer call stores [`FILL_SLOTS`] consecutive new
//! keys of one contract; contract k (from 1) gets a share ∝ 1/k of the slots (Zipf, as
//! mainnet's storage is heavy-tailed: a few contracts with millions of slots, most with a
//! handful) → [`StatePlan::sample`] names accounts and slots the chain created, for
//! comparing `eth_getProof` answers after a sync (`sample.json`).

use alloy_primitives::{keccak256, Address, B256, U256};
use serde_json::{json, Value};

/// The fan-out contract: for `i < count`, `CALL(0, keccak256(seed ‖ i), 1 wei)`; calldata
/// `seed ‖ count` (two words). Each call creates one account (the stipend of a value call runs
/// no code at an empty address).
pub const FANOUT: Address = Address::repeat_byte(0x74);
/// [`FANOUT`]'s code.
pub const FANOUT_CODE: &str =
    "60003560005260203560005b81811015603057806020526000600060006000600160406000206000f150600101600b565b00";
/// Accounts one fan-out call creates.
pub const FANOUT_ACCOUNTS: u64 = 64;
/// Slots one writer call stores.
pub const FILL_SLOTS: u64 = 100;
/// The slot writer's code (`gen_chain`'s `WRITER`): `SSTORE(start + i, count - i)` for
/// `i < count`; calldata `start ‖ count`.
pub const WRITER_CODE: &str = "6000356020355b8015601b578082559060010190600190036006565b00";

/// The slots of contract `k` (from 1) of `contracts` holding `total` slots: a share ∝ 1/k,
/// at least one.
pub fn zipf_slots(k: u64, contracts: u64, total: u64) -> u64 {
    let harmonic: f64 = (1..=contracts).map(|i| 1.0 / i as f64).sum();
    ((total as f64 / (k as f64 * harmonic)).round() as u64).max(1)
}

/// One call of the plan: (contract, calldata, new entries it creates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateCall {
    /// A fan-out call creating `count` accounts from `first`.
    Accounts {
        /// Index of the first account it creates.
        first: u64,
        /// Accounts it creates.
        count: u64,
    },
    /// A writer call storing `count` new slots of contract `k` from key `start`.
    Slots {
        /// The contract (from 1).
        k: u64,
        /// The first key it stores.
        start: U256,
        /// Consecutive keys it stores.
        count: u64,
    },
}

impl StateCall {
    /// The called contract and its calldata.
    pub fn call(self, seed: u64) -> (Address, Vec<u8>) {
        match self {
            StateCall::Accounts { first, count } => {
                let mut input = fanout_seed(seed, first).to_vec();
                input.extend_from_slice(&U256::from(count).to_be_bytes::<32>());
                (FANOUT, input)
            }
            StateCall::Slots { k, start, count } => {
                let mut input = start.to_be_bytes::<32>().to_vec();
                input.extend_from_slice(&U256::from(count).to_be_bytes::<32>());
                (state_contract(seed, k), input)
            }
        }
    }
}

/// The fan-out seed of the call creating accounts `first..`: the accounts of one call are
/// `keccak256(seed ‖ j)` for `j < count`, so each call gets its own seed word.
fn fanout_seed(seed: u64, first: u64) -> B256 {
    keccak256([b"fanout".as_slice(), &seed.to_be_bytes(), &first.to_be_bytes()].concat())
}

/// Account `j` created by the fan-out call of `call_seed`.
fn fanout_account(call_seed: B256, j: u64) -> Address {
    let word = keccak256([call_seed.as_slice(), &U256::from(j).to_be_bytes::<32>()].concat());
    Address::from_slice(&word[12..])
}

/// Account `i` (from 0) of those the plan of `seed` creates: the calls hand out
/// [`FANOUT_ACCOUNTS`] accounts each, in order.
pub fn state_account(seed: u64, i: u64) -> Address {
    let first = i / FANOUT_ACCOUNTS * FANOUT_ACCOUNTS;
    fanout_account(fanout_seed(seed, first), i % FANOUT_ACCOUNTS)
}

/// State contract `k` (from 1) of `seed`.
pub fn state_contract(seed: u64, k: u64) -> Address {
    let word = keccak256(
        [&seed.to_be_bytes()[..], b"growth-contract", &k.to_be_bytes(), &0u64.to_be_bytes()]
            .concat(),
    );
    Address::from_slice(&word[12..])
}

/// The first key contract `k` stores at (its keys are consecutive from there).
pub fn first_key(seed: u64, k: u64) -> U256 {
    let word = keccak256([&seed.to_be_bytes()[..], b"growth-slot", &k.to_be_bytes()].concat());
    // The top bit cleared: `start + i` never wraps.
    U256::from_be_bytes(word.0) >> 1
}

/// The state contracts' genesis entries (code, no storage): contract k's code is the writer
/// followed, past its `STOP`, by one byte of k mod 64 (64 distinct code hashes).
pub fn genesis_entries(seed: u64, contracts: u64) -> impl Iterator<Item = (Address, Value)> {
    (1..=contracts).map(move |k| {
        let code = format!("0x{WRITER_CODE}60{:02x}", k % 64);
        (state_contract(seed, k), json!({ "balance": "0x0", "code": code }))
    })
}

/// The calls creating the state, handed out in an interleaving drawn from the seed.
#[derive(Debug)]
pub struct StatePlan {
    seed: u64,
    accounts_left: u64,
    next_account: u64,
    contracts: u64,
    slots_total: u64,
    /// Each contract's slots ([`contract_shares`]).
    shares: Vec<u64>,
    /// The contract being filled, its share and what of it is stored.
    k: u64,
    share: u64,
    stored: u64,
    slots_left: u64,
}

/// The slots each of `contracts` contracts (index k - 1 for contract k) holds of `total`:
/// [`zipf_slots`], at least one each, the last taking what is left so that they add up.
pub fn contract_shares(contracts: u64, total: u64) -> Vec<u64> {
    let mut left = total;
    (1..=contracts)
        .map(|k| {
            let rest = contracts - k;
            let share = if rest == 0 {
                left
            } else {
                zipf_slots(k, contracts, total).min(left.saturating_sub(rest)).max(1)
            };
            left = left.saturating_sub(share);
            share
        })
        .collect()
}

impl StatePlan {
    /// A plan creating `accounts` accounts and `slots` slots over `contracts` contracts.
    pub fn new(seed: u64, accounts: u64, slots: u64, contracts: u64) -> Self {
        let contracts = contracts.clamp(1, slots.max(1));
        let mut plan = Self {
            seed,
            accounts_left: accounts,
            next_account: 0,
            contracts,
            slots_total: slots,
            shares: if slots > 0 { contract_shares(contracts, slots) } else { Vec::new() },
            k: 0,
            share: 0,
            stored: 0,
            slots_left: slots,
        };
        plan.next_contract();
        plan
    }

    /// Moves to the next contract with slots to store.
    fn next_contract(&mut self) {
        while self.slots_left > 0 && self.stored >= self.share {
            self.k += 1;
            self.stored = 0;
            self.share = self.shares[(self.k - 1) as usize];
        }
    }

    /// Entries (accounts plus slots) still to create.
    pub fn left(&self) -> u64 {
        self.accounts_left + self.slots_left
    }

    /// The next call, accounts or slots drawn in proportion to what is left of each (`draw`
    /// uniform in `0..left()`); `None` when all is created.
    pub fn next(&mut self, draw: u64) -> Option<StateCall> {
        if self.left() == 0 {
            return None;
        }
        if draw < self.accounts_left {
            let count = self.accounts_left.min(FANOUT_ACCOUNTS);
            let call = StateCall::Accounts { first: self.next_account, count };
            self.next_account += count;
            self.accounts_left -= count;
            return Some(call);
        }
        let count = (self.share - self.stored).min(FILL_SLOTS);
        let call = StateCall::Slots {
            k: self.k,
            start: first_key(self.seed, self.k) + U256::from(self.stored),
            count,
        };
        self.stored += count;
        self.slots_left -= count;
        self.next_contract();
        Some(call)
    }

    /// Accounts and slots the plan creates, to compare proofs at: the first `n` accounts of the
    /// first fan-out call, and for each of `n` contracts spread over the tail (1, then every
    /// `contracts / n`-th) its first slot. As `sample.json`: `[{"address", "slot"}]`.
    pub fn sample(&self, accounts: u64, n: u64) -> Value {
        let mut out = Vec::new();
        if accounts > 0 {
            let seed = fanout_seed(self.seed, 0);
            for j in 0..n.min(accounts).min(FANOUT_ACCOUNTS) {
                out.push(json!({ "address": fanout_account(seed, j), "slot": B256::ZERO }));
            }
        }
        if self.slots_total > 0 {
            let step = (self.contracts / n.max(1)).max(1);
            for k in (1..=self.contracts).step_by(step as usize).take(n as usize) {
                let slot = B256::from(first_key(self.seed, k));
                out.push(json!({ "address": state_contract(self.seed, k), "slot": slot }));
            }
        }
        Value::Array(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan creates exactly the accounts and slots asked for, each slot key once, and
    /// contract 1 holds the largest share.
    #[test]
    fn plan_creates_what_was_asked() {
        let mut plan = StatePlan::new(3, 1_000, 50_000, 100);
        let (mut accounts, mut per_contract) = (0, std::collections::BTreeMap::new());
        // Draws from a fixed sequence (a multiplicative hash of the call's index).
        let mut i = 0u64;
        let mut draw = |left: u64| {
            i += 1;
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % left.max(1)
        };
        let mut keys = std::collections::HashSet::new();
        while let Some(call) = plan.next(draw(plan.left())) {
            match call {
                StateCall::Accounts { count, .. } => accounts += count,
                StateCall::Slots { k, start, count } => {
                    *per_contract.entry(k).or_insert(0u64) += count;
                    for i in 0..count {
                        assert!(keys.insert((k, start + U256::from(i))));
                    }
                }
            }
        }
        assert_eq!(accounts, 1_000);
        assert_eq!(per_contract.values().sum::<u64>(), 50_000);
        assert_eq!(per_contract.len(), 100);
        let first = per_contract[&1];
        assert!(per_contract.values().all(|v| *v <= first), "{per_contract:?}");
        assert!(first > 50_000 / 10, "{first}");
    }

    /// The heavy tail: the first contract holds about a tenth of 1M slots over 10,000
    /// contracts, the 1,000th about a hundred, the last about ten; the shares add up.
    #[test]
    fn zipf_shares_are_heavy_tailed_and_add_up() {
        let (contracts, total) = (10_000, 1_000_000);
        assert!((100_000..=105_000).contains(&zipf_slots(1, contracts, total)));
        assert!((100..=105).contains(&zipf_slots(1000, contracts, total)));
        assert!((10..=11).contains(&zipf_slots(contracts, contracts, total)));
        let sum: u64 = (1..=contracts).map(|k| zipf_slots(k, contracts, total)).sum();
        assert!(sum.abs_diff(total) < total / 100, "{sum}");
    }

    /// The fan-out code's bytes: the jumps land on `JUMPDEST`s.
    #[test]
    fn fanout_code_jumps_to_jumpdests() {
        let code = alloy_primitives::hex::decode(FANOUT_CODE).unwrap();
        assert_eq!(code[0x0b], 0x5b);
        assert_eq!(code[0x30], 0x5b);
        assert_eq!(code[0x11], 0x30);
        assert_eq!(code[0x2e], 0x0b);
    }
}
