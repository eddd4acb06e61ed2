//! Helpers the lab's commands share: progress bars, medians, thread pools, sender recovery,
//! the load clients' priority.

use alloy_primitives::Address;
use gigagas_executor::ExecutionError;
use gigagas_primitives::ChainSpec;
use gigagas_state::mainnet::MainnetBlock;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::time::Duration;

/// The median of `xs` (the upper one for an even count; zero when empty).
pub(crate) fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort_unstable();
    xs.get(xs.len() / 2).copied().unwrap_or_default()
}

/// A progress bar of `len` steps labelled `msg`.
pub(crate) fn bar(len: u64, msg: &'static str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} {elapsed}")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb.set_message(msg);
    pb
}

/// A rayon pool of `threads` workers.
pub(crate) fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("build thread pool")
}

/// Recovers all senders on `pool`.
pub(crate) fn recover_all(
    pool: &rayon::ThreadPool,
    chain: &ChainSpec,
    data: &[MainnetBlock],
) -> Result<Vec<Vec<Address>>, ExecutionError> {
    pool.install(|| {
        data.par_iter().map(|b| b.block.par_recover(chain).map_err(Into::into)).collect()
    })
}

/// Lowers the calling load-client thread to nice value `nice` (0: unchanged), so that on a
/// machine of few cores the node keeps the CPU remote clients would leave it.
pub(crate) fn lower(nice: i32) {
    if nice > 0 {
        if let Err(e) = gigagas_tasks::priority::lower_current_thread(nice) {
            eprintln!("rpc-load: client thread priority unchanged: {e}");
        }
    }
}
