//! Claim order of transactions for the parallel executor (and its projection).

use std::{fmt, str::FromStr};

/// The order in which free workers claim transactions.
///
/// Tasks are `(block, tx)` pairs over a whole batch (megablock); each free worker takes the next
/// one. Ties keep natural order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Scheduler {
    /// Ordered list ("OLS"): natural block and transaction order.
    Ols,
    /// Heaviest first by transaction gas limit (known before execution); the default, as the
    /// node's `--engine.scheduler`.
    #[default]
    GasLimit,
    /// Heaviest first by gas used, as recorded by a previous (sequential) run.
    GasUsed,
}

impl Scheduler {
    /// All schedulers, in the order the bench reports them.
    pub const ALL: [Self; 3] = [Self::Ols, Self::GasLimit, Self::GasUsed];

    /// The CLI / JSON name: `ols`, `gas-limit`, `gas-used`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ols => "ols",
            Self::GasLimit => "gas-limit",
            Self::GasUsed => "gas-used",
        }
    }
}

impl fmt::Display for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scheduler {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|x| x.name() == s)
            .ok_or_else(|| format!("unknown scheduler `{s}` (expected ols, gas-limit or gas-used)"))
    }
}

/// The claim order of all transactions of a batch.
///
/// `weights[b][i]` is the weight of transaction `i` of block `b` (its gas limit for
/// [`Scheduler::GasLimit`], its gas used for [`Scheduler::GasUsed`]; ignored by
/// [`Scheduler::Ols`]). Returns `(block, tx)` pairs.
pub fn task_order(scheduler: Scheduler, weights: &[&[u64]]) -> Vec<(u32, u32)> {
    let mut tasks: Vec<(u32, u32)> = weights
        .iter()
        .enumerate()
        .flat_map(|(b, w)| (0..w.len()).map(move |i| (b as u32, i as u32)))
        .collect();
    if scheduler != Scheduler::Ols {
        tasks.sort_by_key(|&(b, i)| std::cmp::Reverse(weights[b as usize][i as usize]));
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heaviest_first_is_stable() {
        let a = [5, 9, 5];
        let b = [9, 1];
        let w: [&[u64]; 2] = [&a, &b];
        assert_eq!(task_order(Scheduler::Ols, &w), vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]);
        assert_eq!(
            task_order(Scheduler::GasUsed, &w),
            vec![(0, 1), (1, 0), (0, 0), (0, 2), (1, 1)]
        );
        assert_eq!("gas-limit".parse::<Scheduler>().unwrap(), Scheduler::GasLimit);
        assert!("fifo".parse::<Scheduler>().is_err());
    }
}
