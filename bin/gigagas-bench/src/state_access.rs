//! Which existing keys the `spread` mix of `gen-chain` touches: a hot set and a long cold tail
//! over the state a `--state-by-chain` plan created ([`crate::state_growth`]).
//!
//! Flow: each draw first picks hot (`hot_share` percent of draws) or cold. An account draw
//! takes one of the plan's accounts: hot, among the first `hot_fraction` of them (percent); cold,
//! uniformly among all. A slot draw takes a contract with probability proportional to the
//! slots it holds (the large contracts are the most used, as mainnet's token contracts are),
//! then two consecutive keys of it: hot, among its first `hot_fraction` of slots; cold, anywhere
//! in it. So a block reads a small set again and again (hit in the node's caches after the
//! first blocks) and spreads the rest over the whole state (cold on disk).

use crate::{
    rng::Rng,
    state_growth::{contract_shares, first_key, state_account, state_contract},
};
use alloy_primitives::{Address, U256};

/// Slots one slot-update call of the spread mix overwrites (a token transfer's two balances).
pub const UPDATE_SLOTS: u64 = 2;

/// The keys the spread mix draws from: the accounts and contract slots a plan created.
#[derive(Debug)]
pub struct StateAccess {
    seed: u64,
    accounts: u64,
    /// Slots of each contract (contract k at index k - 1).
    shares: Vec<u64>,
    /// Running sums of `shares`: contract k holds slots `cumulative[k-2]..cumulative[k-1]`.
    cumulative: Vec<u64>,
    /// Percent of draws from the hot set.
    hot_share: u64,
    /// Percent of the accounts, and of each contract's slots, that form the hot set.
    hot_fraction: f64,
}

impl StateAccess {
    /// The keys of `seed`'s plan of `accounts` accounts and `slots` slots over `contracts`
    /// contracts, drawn hot `hot_share` percent of the time from the first `hot_fraction`
    /// percent.
    pub fn new(
        seed: u64,
        accounts: u64,
        slots: u64,
        contracts: u64,
        hot_share: u64,
        hot_fraction: f64,
    ) -> Self {
        let contracts = contracts.clamp(1, slots.max(1));
        let shares = if slots > 0 { contract_shares(contracts, slots) } else { Vec::new() };
        let cumulative = shares
            .iter()
            .scan(0u64, |sum, s| {
                *sum += s;
                Some(*sum)
            })
            .collect();
        Self { seed, accounts, shares, cumulative, hot_share, hot_fraction }
    }

    fn hot(&self, rng: &mut Rng) -> bool {
        rng.below(100) < self.hot_share
    }

    /// Index below `n`: among the first `hot_fraction` percent when `hot`, else anywhere.
    fn index(&self, rng: &mut Rng, n: u64, hot: bool) -> u64 {
        let range = if hot {
            ((n as f64 * self.hot_fraction / 100.0) as u64).clamp(1, n.max(1))
        } else {
            n
        };
        rng.below(range)
    }

    /// An existing account (`None` when the plan created none).
    pub fn account(&self, rng: &mut Rng) -> Option<Address> {
        if self.accounts == 0 {
            return None;
        }
        let hot = self.hot(rng);
        Some(state_account(self.seed, self.index(rng, self.accounts, hot)))
    }

    /// A contract, the first of up to [`UPDATE_SLOTS`] consecutive keys it holds, and how many
    /// (fewer when the contract holds fewer); `None` when the plan created no slots.
    pub fn slots(&self, rng: &mut Rng) -> Option<(Address, U256, u64)> {
        let total = *self.cumulative.last()?;
        let hot = self.hot(rng);
        let draw = rng.below(total);
        let k = self.cumulative.partition_point(|&sum| sum <= draw) as u64 + 1;
        let share = self.shares[(k - 1) as usize];
        let count = UPDATE_SLOTS.min(share);
        let offset = self.index(rng, share, hot).min(share - count);
        Some((state_contract(self.seed, k), first_key(self.seed, k) + U256::from(offset), count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_growth::{StateCall, StatePlan};
    use std::collections::HashSet;

    /// Every key drawn is one the plan created, and the hot share holds: with 50 % hot over the
    /// first 1 %, about half the account draws land in the first 1 % of accounts.
    #[test]
    fn draws_only_created_keys_with_the_hot_share_asked() {
        let (seed, accounts, slots, contracts) = (7, 6_400, 20_000, 50);
        let mut plan = StatePlan::new(seed, accounts, slots, contracts);
        let (mut created_accounts, mut created_slots) = (HashSet::new(), HashSet::new());
        let mut i = 0u64;
        while let Some(call) = plan.next({
            i += 1;
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % plan.left().max(1)
        }) {
            match call {
                StateCall::Accounts { first, count } => {
                    for j in first..first + count {
                        created_accounts.insert(j);
                    }
                }
                StateCall::Slots { k, start, count } => {
                    for j in 0..count {
                        created_slots.insert((state_contract(seed, k), start + U256::from(j)));
                    }
                }
            }
        }
        assert_eq!(created_accounts.len() as u64, accounts);
        let by_address: std::collections::HashMap<Address, u64> =
            (0..accounts).map(|i| (state_account(seed, i), i)).collect();
        let access = StateAccess::new(seed, accounts, slots, contracts, 50, 1.0);
        let mut rng = Rng(3);
        let (mut hot, draws) = (0, 10_000);
        for _ in 0..draws {
            let account = access.account(&mut rng).unwrap();
            let i = by_address[&account];
            assert!(created_accounts.contains(&i));
            if i < accounts / 100 {
                hot += 1;
            }
            let (contract, start, count) = access.slots(&mut rng).unwrap();
            for j in 0..count {
                let key = (contract, start + U256::from(j));
                assert!(created_slots.contains(&key), "{key:?} not created");
            }
        }
        // 50 % hot, plus the cold draws that land in the first 1 % (0.5 %).
        assert!((4_800..=5_300).contains(&hot), "{hot} of {draws} hot");
    }
}
