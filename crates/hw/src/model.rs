//! The sizing model: a block's validation time as the sum of its stages, each a cost per gas
//! measured on this machine, the parallel ones divided by a speedup measured here (and projected
//! past this machine's cores by the critical-path model).
//!
//! ```text
//! t(G, T, design) = G · rec · (1 − h) / R(T)         sender recovery (all cores; R measured;
//!                                                    h: the share of the block's transactions
//!                                                    whose sender the pool recovered before)
//!               + G · exec / S_design(T)             execution (S = 1 sequential; measured or
//!                                                    projected per block / as a megablock)
//!               + max(N_s / IOPS(q)                  cold reads (N in all, flat state and
//!                     + max(0, N_b / IOPS(q) − t_cpu),  trie nodes): those waited for (N_s:
//!                     N · c / C)                     sequential all, q = 1; parallel the
//!                                                    state's, read before execution, q = T),
//!                                                    those beside the CPU's work (N_b: the
//!                                                    trie nodes read ahead; t_cpu: every
//!                                                    other stage), or their own CPU if more
//!                                                    (c per read, C cores)
//!               + G · (root_design + commit · b + checks) state root (after execution on
//!                                                    the sequential engine; on the parallel one
//!                                                    what is waited for beside it), commit (in
//!                                                    the background, the node's default: b the
//!                                                    share of its time the next block was
//!                                                    measured to lose, b_here · C_here / C;
//!                                                    unmeasured 1/C; else b = 1), the rest of newPayload
//!                                                    (the payload's JSON parsed and converted;
//!                                                    serial stages)
//! ```
//!
//! `rec` comes from one-core recovery of the mainnet blocks (per transaction) times the chain's
//! transactions per gas, `R` from recovery measured at each thread count; `exec`, `root`,
//! `commit` and the reads per gas `N(G)/G` from a generated chain run through the engine (warm:
//! its store in the page cache); `S` per block from the same chain through the parallel engine
//! at each thread count this machine has, beyond it scaled by the critical-path projection of the
//! mainnet blocks (`S(T) = S(top) · P(T) / P(top)`); the megablock's gain over per-block from the
//! mainnet blocks (the engine runs blocks one by one); IOPS from the RocksDB sweep. Every term is linear in `G`, so the largest gas within a budget `B` is
//! `B / t(1, T, design)`. A faster core divides the CPU terms (all but the cold reads) by its
//! speed ratio.
//!
//! Cold, a read either holds up the work (sequential execution reads one key at a time; the
//! BAL prefetch reads the state before execution) or is made beside it (the trie read-ahead,
//! while the block executes), and each costs CPU of its own (the system call, the block layer,
//! the page cache's fill: measured by the disk sweep): [`cold_seconds`]. The reads are those
//! of the chain's state: a larger state adds the trie levels its paths cross
//! ([`crate::scale`] checks the term on states of 1M to 50M entries with the reads counted
//! there).

use crate::{disk::ReadSweep, exec::ExecMeasure, ChainMeasure};
use gigagas_trie::DEFAULT_TRIE_READ_THREADS;
use serde::Serialize;

/// How blocks are executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Design {
    /// One core, the sequential reference (`--engine.parallel false`; every pre-Amsterdam block).
    Sequential,
    /// The parallel executor driven by the block's BAL, block by block.
    Parallel,
    /// The parallel executor over megablocks (all consecutive blocks as one unit).
    Megablock,
}

impl Design {
    /// Every design, in the report's order.
    pub const ALL: [Self; 3] = [Self::Sequential, Self::Parallel, Self::Megablock];

    /// The name used in tables and `--json`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Parallel => "parallel",
            Self::Megablock => "megablock",
        }
    }
}

/// Costs per gas measured on this machine (nanoseconds per gas, reads per gas).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Costs {
    /// Sender recovery on one core.
    pub recovery_ns_per_gas: f64,
    /// Sequential execution with header checks, warm store.
    pub execution_ns_per_gas: f64,
    /// State root, computed after execution (the sequential engine).
    pub state_root_ns_per_gas: f64,
    /// The state root's share of `newPayload` on the parallel engine: what execution waits for
    /// the root computed from the BAL beside it (the mean over the parallel runs; the root's own
    /// time overlaps execution, whose measured time includes the contention); `None` without a
    /// parallel run (an Osaka chain): the sequential root is used.
    pub state_root_parallel_ns_per_gas: Option<f64>,
    /// Commit.
    pub commit_ns_per_gas: f64,
    /// What a commit in the background costs the next block, as a share of its own time,
    /// measured on this machine's cores ([`ChainMeasure::commit_beside_share`]); `None` when
    /// not measured: its CPU shared over the cores (1/C).
    pub commit_beside_share: Option<f64>,
    /// The rest of the tree's `newPayload` (checks, bookkeeping).
    #[serde(default)]
    pub checks_ns_per_gas: f64,
    /// The Engine API handler's payload parse, conversion and hash.
    #[serde(default)]
    pub payload_ns_per_gas: f64,
    /// Reads that go to the store (account, slot, code) per gas.
    pub store_reads_per_gas: f64,
    /// Trie nodes read from the store (not in its node cache) per gas.
    #[serde(default)]
    pub trie_node_reads_per_gas: f64,
    /// The node's RSS growth per gas of the blocks in flight (bytes per gas).
    pub rss_bytes_per_gas: f64,
    /// The node's RSS before the first block (bytes).
    pub rss_base_bytes: f64,
}

impl Costs {
    /// Reads a cold disk serves per gas: the flat-state reads and the trie-node reads that
    /// missed the node's caches.
    pub fn reads_per_gas(&self) -> f64 {
        self.store_reads_per_gas + self.trie_node_reads_per_gas
    }
}

/// The model of this machine.
#[derive(Debug, Clone)]
pub struct Model {
    /// Costs per gas.
    pub costs: Costs,
    /// The mainnet blocks: recovery scaling, projection, megablock gain.
    pub exec: ExecMeasure,
    /// The chain's parallel execution speedup over its sequential run: (threads, speedup).
    pub chain_speedup: Vec<(usize, f64)>,
    /// What the parallel engine's newPayload waited for the state root computed beside
    /// execution, per thread count measured: (threads, ns per gas). Other thread counts take
    /// [`Costs::state_root_parallel_ns_per_gas`], the mean.
    pub root_wait_by_threads: Vec<(usize, f64)>,
    /// RocksDB reads, warm.
    pub warm: Option<ReadSweep>,
    /// RocksDB reads, cold.
    pub cold: Option<ReadSweep>,
    /// This machine's cores.
    pub cores: usize,
    /// The datadir of the chain whose reads per gas were counted (bytes): the state size the
    /// cold term assumes (a larger state's paths cross more trie levels, so more trie-node
    /// reads per gas).
    pub reads_state_bytes: f64,
}

/// A block's modelled time by stage (seconds).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Breakdown {
    /// Sender recovery.
    pub recovery: f64,
    /// Execution.
    pub execution: f64,
    /// Cold reads: the disk's time for them beyond the CPU's time for every other stage.
    pub io: f64,
    /// State root.
    pub state_root: f64,
    /// Commit: what it adds to the block's time (in the background, its CPU shared with the
    /// next block over the cores; else all of it).
    pub commit: f64,
    /// The rest of `newPayload`: the tree's checks and the handler's payload decoding.
    pub checks: f64,
    /// The commit's own time when it runs in the background (beside the next block: not in
    /// [`Breakdown::total`] beyond [`Breakdown::commit`]); 0 otherwise.
    pub commit_beside: f64,
}

impl Breakdown {
    /// The whole block.
    pub fn total(&self) -> f64 {
        self.recovery + self.execution + self.io + self.state_root + self.commit + self.checks
    }

    /// What binds: `cpu (parallel stages)`, `cpu (serial stages)` or `disk IOPS`, by the
    /// largest share.
    pub fn binding(&self) -> &'static str {
        let parallel = self.recovery + self.execution;
        let serial = self.state_root + self.commit + self.checks;
        if self.io >= parallel && self.io >= serial {
            "disk IOPS (cold reads)"
        } else if serial >= parallel {
            "single-core speed (state root and commit are serial)"
        } else {
            "cores x single-core speed (execution and recovery)"
        }
    }
}

/// The machine a block runs on, relative to this one.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Threads of the parallel executor.
    pub threads: usize,
    /// Threads recovering senders (the node recovers on all cores).
    pub recovery_threads: usize,
    /// Single-core speed over this machine's (1.0 = this machine).
    pub core_speed: f64,
    /// Cold reads (page cache misses) or a warm store.
    pub cold: bool,
    /// The disk's IOPS at the design's queue depth instead of this machine's RocksDB sweep.
    pub iops: Option<f64>,
    /// Share of a block's transactions whose sender the node's pool recovered before the
    /// block arrived (0 to 1): those are not recovered during `newPayload`.
    pub pool_hits: f64,
    /// Blocks committed on the persistence thread while the next executes (the node's default,
    /// `--engine.persistence-background`) rather than inside the forkchoice update.
    pub commit_background: bool,
    /// The parallel engine's state root computed after execution (`--engine.state-root-beside
    /// false`) rather than beside it: its whole cost is on the critical path, as the
    /// sequential engine's.
    pub root_after: bool,
}

impl Target {
    /// A machine of `cores` cores of this machine's speed, its store warm.
    pub const fn machine(cores: usize) -> Self {
        Self {
            threads: cores,
            recovery_threads: cores,
            core_speed: 1.0,
            cold: false,
            iops: None,
            pool_hits: 0.0,
            commit_background: true,
            root_after: false,
        }
    }
}

impl Model {
    /// Builds the model from the measurements.
    pub fn new(
        exec: ExecMeasure,
        chain: &ChainMeasure,
        warm: Option<ReadSweep>,
        cold: Option<ReadSweep>,
        cores: usize,
    ) -> Self {
        let seq = chain.sequential();
        let gas = chain.gas.max(1) as f64;
        let per_tx_recovery = exec.recovery_single_s / exec.transactions.max(1) as f64;
        let rss_base = seq.blocks.first().map_or(0.0, |b| b.rss_bytes as f64);
        let rss_peak = seq.blocks.iter().map(|b| b.rss_bytes).max().unwrap_or(0) as f64;
        let max_block_gas = seq.blocks.iter().map(|b| b.gas_used).max().unwrap_or(1) as f64;
        // Commit and checks do not depend on the executor: the mean over every run. The state
        // root does: after execution on the sequential engine, beside it on the parallel one.
        let runs = chain.runs.len().max(1) as f64;
        let over_runs = |f: fn(&crate::chain::ChainBlock) -> f64| {
            chain.runs.iter().map(|r| r.sum(f)).sum::<f64>() / runs
        };
        let root_wait_by_threads: Vec<(usize, f64)> = chain
            .runs
            .iter()
            .filter(|r| r.parallel)
            .map(|r| (r.threads, r.sum(|b| b.state_root_s) / gas * 1e9))
            .collect();
        let root_parallel = (!root_wait_by_threads.is_empty()).then(|| {
            root_wait_by_threads.iter().map(|(_, ns)| ns).sum::<f64>()
                / root_wait_by_threads.len() as f64
        });
        let costs = Costs {
            recovery_ns_per_gas: per_tx_recovery * chain.transactions as f64 / gas * 1e9,
            execution_ns_per_gas: seq.sum(|b| b.execution_s + b.io_s) / gas * 1e9,
            state_root_ns_per_gas: seq.sum(|b| b.state_root_s) / gas * 1e9,
            state_root_parallel_ns_per_gas: root_parallel,
            commit_ns_per_gas: over_runs(|b| b.commit_s) / gas * 1e9,
            commit_beside_share: chain.commit_beside_share(),
            checks_ns_per_gas: over_runs(|b| b.checks_s) / gas * 1e9,
            payload_ns_per_gas: over_runs(|b| b.payload_s) / gas * 1e9,
            store_reads_per_gas: seq.sum(|b| b.store_reads as f64) / gas,
            trie_node_reads_per_gas: seq.sum(|b| b.trie_node_reads as f64) / gas,
            // The tree holds a block from newPayload to its commit: the RSS beyond the first
            // block's is charged to the block in flight.
            rss_bytes_per_gas: ((rss_peak - rss_base) / max_block_gas).max(0.0),
            rss_base_bytes: rss_base,
        };
        let sequential = seq.sum(|b| b.execution_s + b.io_s);
        let chain_speedup = chain
            .runs
            .iter()
            .filter(|r| r.parallel)
            .map(|r| (r.threads, sequential / r.sum(|b| b.execution_s + b.io_s).max(1e-12)))
            .collect();
        let reads_state_bytes = chain.datadir_bytes as f64;
        Self {
            costs,
            exec,
            chain_speedup,
            root_wait_by_threads,
            warm,
            cold,
            cores,
            reads_state_bytes,
        }
    }

    /// Execution speedup over the sequential reference at `threads` with `design`: on the
    /// chain where measured, beyond its largest measured count scaled by the mainnet blocks'
    /// projection; the megablock's gain over per-block from the mainnet blocks. Without parallel
    /// runs of the chain (no BALs), the mainnet blocks' speedups.
    pub fn speedup(&self, threads: usize, design: Design) -> f64 {
        let per_block = match self.chain_speedup.iter().find(|(t, _)| *t == threads) {
            _ if design == Design::Sequential => return 1.0,
            Some(&(_, s)) => s,
            None => match self
                .chain_speedup
                .iter()
                .filter(|(t, _)| *t <= threads)
                .max_by_key(|(t, _)| *t)
            {
                Some(&(top, s)) => {
                    s * self.exec.speedup(threads, false) / self.exec.speedup(top, false)
                }
                None => self.exec.speedup(threads, false),
            },
        };
        match design {
            Design::Megablock => {
                per_block * self.exec.speedup(threads, true) / self.exec.speedup(threads, false)
            }
            _ => per_block,
        }
    }

    /// The modelled time of a block of `gas` on `target` with `design`.
    pub fn block(&self, gas: f64, design: Design, target: Target) -> Breakdown {
        let c = &self.costs;
        let t = target.threads.max(1);
        let speedup = self.speedup(t, design);
        let qd = if design == Design::Sequential { 1 } else { t };
        let cpu = 1e-9 / target.core_speed.max(1e-6);
        // The commit's own time; in the background it runs beside the next block and delays it
        // by the share measured on this machine's cores, scaled to the target's (without that
        // measurement: its CPU time spread over the cores).
        let commit = gas * c.commit_ns_per_gas * cpu;
        let cores = target.recovery_threads.max(1);
        let beside = c.commit_beside_share.map_or(1.0 / cores as f64, |share| {
            (share * self.cores.max(1) as f64 / cores as f64).min(1.0)
        });
        let mut b = Breakdown {
            recovery: gas * c.recovery_ns_per_gas * cpu * (1.0 - target.pool_hits.clamp(0.0, 1.0))
                / self.exec.recovery_speedup(target.recovery_threads.max(1)),
            execution: gas * c.execution_ns_per_gas * cpu / speedup.max(1e-6),
            io: 0.0,
            state_root: gas * cpu * self.root_ns_per_gas(t, design, target.root_after),
            commit: commit * if target.commit_background { beside } else { 1.0 },
            checks: gas * (c.checks_ns_per_gas + c.payload_ns_per_gas) * cpu,
            commit_beside: if target.commit_background { commit } else { 0.0 },
        };
        if target.cold {
            let iops = target.iops.or_else(|| self.cold.as_ref().map(|s| s.iops_at(qd)));
            if let Some(iops) = iops.filter(|&i| i > 0.0) {
                // Sequential: every read waits, the state's one at a time, the state root's
                // level by level on the trie readers' threads. Parallel (`--engine.io
                // prefetch-parallel`): the state's reads before execution, the trie's read ahead
                // beside it.
                let (flat, trie) = (gas * c.store_reads_per_gas, gas * c.trie_node_reads_per_gas);
                let (when, rates) = match design {
                    Design::Sequential => {
                        let trie_iops = target
                            .iops
                            .or_else(|| {
                                self.cold.as_ref().map(|s| s.iops_at(DEFAULT_TRIE_READ_THREADS))
                            })
                            .filter(|&i| i > 0.0)
                            .unwrap_or(iops);
                        // One rate for both: the time each kind takes at its own.
                        let serial = (flat + trie) / (flat / iops + trie / trie_iops).max(1e-12);
                        (ColdReads { serial: flat + trie, beside: 0.0 }, ReadRates::same(serial))
                    }
                    _ => (ColdReads { serial: flat, beside: trie }, ReadRates::same(iops)),
                };
                let cpu_per_read = self.cold.as_ref().and_then(|s| s.cpu_us_per_read_at(qd));
                let total = b.total();
                // The warm block taken as keeping every core busy: the reads' CPU adds to it.
                let cold = cold_seconds(
                    total,
                    total * cores as f64,
                    when,
                    rates,
                    cpu_per_read.unwrap_or(0.0) * 1e-6,
                    cores,
                );
                b.io = cold - total;
            }
        }
        b
    }

    /// The state root's cost on the critical path per gas (ns) at `threads` with `design`: after
    /// execution on the sequential engine, or on the parallel one with `root_after`; otherwise
    /// the wait measured at that thread count, else the mean over the parallel runs (else the
    /// sequential root).
    fn root_ns_per_gas(&self, threads: usize, design: Design, root_after: bool) -> f64 {
        let c = &self.costs;
        if design == Design::Sequential || root_after {
            return c.state_root_ns_per_gas;
        }
        match self.root_wait_by_threads.iter().find(|(t, _)| *t == threads) {
            Some((_, ns)) => *ns,
            None => c.state_root_parallel_ns_per_gas.unwrap_or(c.state_root_ns_per_gas),
        }
    }

    /// The largest gas per block within `budget` seconds.
    pub fn max_gas(&self, budget: f64, design: Design, target: Target) -> f64 {
        let per_gas = self.block(1.0, design, target).total();
        if per_gas > 0.0 {
            budget / per_gas
        } else {
            0.0
        }
    }

    /// The node's RSS with a block of `gas` in flight (bytes).
    pub fn rss_bytes(&self, gas: f64) -> f64 {
        self.costs.rss_base_bytes + gas * self.costs.rss_bytes_per_gas
    }

    /// What a target of `gas` per block within `budget` needs, from the model.
    pub fn requirements(
        &self,
        gas: f64,
        budget: f64,
        design: Design,
        state_bytes: f64,
    ) -> Requirements {
        let here = Target::machine(self.cores);
        // Cores at this machine's single-core speed (warm state).
        let cores =
            (1..=256usize).find(|&t| self.block(gas, design, Target::machine(t)).total() <= budget);
        // Single-core speed at this machine's cores: every stage is CPU when warm.
        let at_here = self.block(gas, design, here).total();
        let core_speed = at_here / budget;
        // The disk works while the CPU does: the IOPS that serve every read within the budget.
        let reads = gas * self.costs.reads_per_gas();
        let iops = (budget > at_here).then(|| reads / budget);
        // RAM: the node's RSS, a cache holding the state, and the free headroom the sizing study
        // asks for (cache at most 35% of RAM).
        let rss = self.rss_bytes(gas);
        let ram = (rss + state_bytes).max(state_bytes / CACHE_SHARE) * HEADROOM;
        Requirements {
            gas,
            budget_s: budget,
            design,
            cores,
            core_speed_ratio: core_speed,
            sequential_mgas_per_s: core_speed * self.exec.sequential_mgas_per_s,
            iops_at_cores: iops,
            reads_per_gas: self.costs.reads_per_gas(),
            reads_state_bytes: self.reads_state_bytes,
            ram_bytes: ram,
            cache_bytes: state_bytes,
            rss_bytes: rss,
        }
    }
}

/// A block's cold reads (disk pages), by when its design makes them against its CPU work.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ColdReads {
    /// Reads on the critical path: nothing computes while they wait (sequential execution's and
    /// on-demand reads, each stream's one at a time; a prefetch before execution).
    pub serial: f64,
    /// Reads made beside the CPU's work (the trie read-ahead, a read-ahead beside execution):
    /// only what the disk takes beyond the CPU's time adds.
    pub beside: f64,
}

/// The rates (IOPS) [`ColdReads`]' two kinds of reads are served at: the disk's at the queue
/// depth each is made with.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadRates {
    /// The reads on the critical path.
    pub serial: f64,
    /// The reads beside the CPU's work.
    pub beside: f64,
}

impl ReadRates {
    /// Both kinds at `iops`.
    pub fn same(iops: f64) -> Self {
        Self { serial: iops, beside: iops }
    }
}

/// A cold block's time (seconds) from the same block warm: `warm_s` long, `warm_cpu_s` of CPU
/// on `cores`, its `reads` served at `iops` (the disk's rate at the queue depth each kind is
/// made with: queue depth / latency), each also costing `cpu_s_per_read` of CPU (the system call, the
/// block layer, the page cache's fill: [`crate::disk::DepthPoint::cpu_us_per_read`]).
///
/// The serial reads add their time, the reads beside add what the disk takes beyond the warm
/// block's, and the whole cannot take less than the warm block with the reads' CPU added,
/// spread over the cores as the warm block's own work is (`p = warm_cpu / warm`, between 1
/// and `cores`; all `cores` when `warm_cpu_s` is 0, unknown):
/// `max(serial / IOPS_serial + max(warm, beside / IOPS_beside), warm + reads · c / p)`.
pub fn cold_seconds(
    warm_s: f64,
    warm_cpu_s: f64,
    reads: ColdReads,
    iops: ReadRates,
    cpu_s_per_read: f64,
    cores: usize,
) -> f64 {
    let io = |n: f64, iops: f64| n / iops.max(1e-9);
    let timed = io(reads.serial, iops.serial) + warm_s.max(io(reads.beside, iops.beside));
    let cores = cores.max(1) as f64;
    let busy = if warm_cpu_s > 0.0 && warm_s > 0.0 {
        (warm_cpu_s / warm_s).clamp(1.0, cores)
    } else {
        cores
    };
    let cpu = warm_s + (reads.serial + reads.beside) * cpu_s_per_read / busy;
    timed.max(cpu)
}

/// The share of RAM the state cache may take: the sizing study found 30–35%, the rest kept for
/// the node, the consensus client and headroom against the OOM killer.
pub const CACHE_SHARE: f64 = 0.35;

/// Headroom on top of the RAM the node and its cache use (25%).
pub const HEADROOM: f64 = 1.25;

/// What a gas target needs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Requirements {
    /// Gas per block (gas).
    pub gas: f64,
    /// Budget per block (seconds).
    pub budget_s: f64,
    /// Execution design.
    pub design: Design,
    /// Smallest thread count at this machine's single-core speed (warm); `None`: no count does
    /// (the serial stages alone exceed the budget).
    pub cores: Option<usize>,
    /// Single-core speed needed at this machine's cores, over this machine's (warm).
    pub core_speed_ratio: f64,
    /// The same as single-core sequential Mgas/s on the mainnet blocks.
    pub sequential_mgas_per_s: f64,
    /// IOPS that serve every store and trie-node read cold within the budget (the disk works
    /// beside the CPU), at queue depth = cores; `None`: the CPU alone exceeds the budget here.
    pub iops_at_cores: Option<f64>,
    /// Flat-state and trie-node reads per gas the cold figures assume.
    pub reads_per_gas: f64,
    /// The state those reads were counted on (bytes on disk): the state size the cold figures
    /// assume.
    pub reads_state_bytes: f64,
    /// RAM (bytes).
    pub ram_bytes: f64,
    /// The cache that holds the state (bytes).
    pub cache_bytes: f64,
    /// The node's RSS (bytes).
    pub rss_bytes: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        chain::{ChainBlock, ChainMeasure, ChainRun},
        disk::DepthPoint,
        exec::ScalingPoint,
    };

    fn point(threads: usize, megablock: bool, speedup: f64) -> ScalingPoint {
        ScalingPoint { threads, megablock, mgas_per_s: 1000.0 * speedup, speedup }
    }

    /// 1 Ggas of mainnet blocks: 1,000 transactions recovered in 50 ms on one thread (25 ms on
    /// two), 1 s sequential; parallel measured at 1 and 2 threads, projected to 4.
    fn exec() -> ExecMeasure {
        ExecMeasure {
            blocks: 1,
            transactions: 1000,
            gas: 1_000_000_000,
            recovery_single_s: 0.05,
            recovery: vec![(1, 0.05), (2, 0.025)],
            sequential_s: 1.0,
            sequential_mgas_per_s: 1000.0,
            measured: vec![
                point(1, false, 0.9),
                point(1, true, 0.9),
                point(2, false, 1.6),
                point(2, true, 1.8),
            ],
            projected: vec![
                point(1, false, 1.0),
                point(1, true, 1.0),
                point(2, false, 2.0),
                point(2, true, 2.0),
                point(4, false, 3.0),
                point(4, true, 4.0),
            ],
        }
    }

    /// One 1-Ggas block of 10,000 transactions: execution 1 s sequential, 1/1.6 s on the
    /// parallel engine at 2 threads; root 0.5 s (0.1 s waited for beside the parallel engine),
    /// commit 0.25 s, a million store reads.
    fn chain() -> ChainMeasure {
        let block = ChainBlock {
            number: 1,
            gas_used: 1_000_000_000,
            transactions: 10_000,
            recovery_s: 0.3,
            io_s: 0.0,
            execution_s: 1.0,
            state_root_s: 0.5,
            commit_s: 0.25,
            store_reads: 1_000_000,
            trie_node_reads: 0,
            rss_bytes: 1 << 30,
            page_cache_bytes: 0,
            checks_s: 0.0,
            payload_s: 0.0,
        };
        let parallel = ChainBlock { io_s: 0.125, execution_s: 0.5, state_root_s: 0.1, ..block };
        ChainMeasure {
            chain: "test".into(),
            workload: "amsterdam mainnet".into(),
            gas: block.gas_used,
            transactions: block.transactions,
            recovery_threads: 2,
            datadir_bytes: 1 << 30,
            runs: vec![
                ChainRun { parallel: false, threads: 1, blocks: vec![block] },
                ChainRun { parallel: true, threads: 2, blocks: vec![parallel] },
            ],
            background: None,
        }
    }

    fn sweep(iops: f64) -> ReadSweep {
        let points = crate::disk::DEPTHS
            .iter()
            .map(|&queue_depth| DepthPoint {
                queue_depth,
                iops,
                p50_us: 1.0,
                p99_us: 1.0,
                cpu_us_per_read: None,
            })
            .collect();
        ReadSweep { target: "RocksDB".into(), cold: true, direct: false, batch: 1, points }
    }

    fn model() -> Model {
        Model::new(exec(), &chain(), Some(sweep(1e6)), Some(sweep(1e5)), 2)
    }

    const WARM: Target = Target::machine(2);

    #[test]
    fn a_block_is_the_sum_of_its_measured_stages() {
        let m = model();
        // Recovery: 50 µs a transaction, 10,000 transactions, twice as fast on 2 threads.
        let b = m.block(1e9, Design::Sequential, WARM);
        assert!((b.recovery - 0.25).abs() < 1e-9, "{b:?}");
        assert!((b.execution - 1.0).abs() < 1e-9);
        // Committed in the background (the default): half of its 0.25 s on 2 cores.
        assert!((b.state_root - 0.5).abs() < 1e-9 && (b.commit - 0.125).abs() < 1e-9);
        assert!((b.commit_beside - 0.25).abs() < 1e-9);
        assert_eq!(b.io, 0.0);
        assert!((b.total() - 1.875).abs() < 1e-9);
        // Committed inside the forkchoice update: all of it.
        let inline = m.block(1e9, Design::Sequential, Target { commit_background: false, ..WARM });
        assert!((inline.commit - 0.25).abs() < 1e-9 && inline.commit_beside == 0.0);
        assert!((inline.total() - 2.0).abs() < 1e-9);
        // Parallel at 2 threads: the chain's measured speedup (BAL reads and execution).
        let p = m.block(1e9, Design::Parallel, WARM);
        assert!((p.execution - 0.625).abs() < 1e-9);
        // The root's share on the parallel engine: what it waited for the root beside it.
        assert!((p.state_root - 0.1).abs() < 1e-9, "{p:?}");
        // With the root after execution: all of it, as on the sequential engine.
        let after = m.block(1e9, Design::Parallel, Target { root_after: true, ..WARM });
        assert!((after.state_root - 0.5).abs() < 1e-9, "{after:?}");
        // At 4 threads (not measured here): the chain's 1.6 at 2, times the mainnet blocks'
        // speedup from 2 to 4 (measured 1.6 at 2; projected 3.0 at 4, scaled by 1.6 / 2.0).
        let p4 = m.block(1e9, Design::Parallel, Target::machine(4));
        assert!((p4.execution - 1.0 / (1.6 * 2.4 / 1.6)).abs() < 1e-9, "{p4:?}");
        // A megablock gains over per-block what it gains on the mainnet blocks (1.8 / 1.6).
        let mega = m.block(1e9, Design::Megablock, WARM);
        assert!((mega.execution - 1.0 / (1.6 * 1.8 / 1.6)).abs() < 1e-9, "{mega:?}");
        // A core twice as fast halves every CPU stage.
        let fast = m.block(1e9, Design::Sequential, Target { core_speed: 2.0, ..WARM });
        assert!((fast.total() - 1.875 / 2.0).abs() < 1e-9);
        // 90 % of the senders known from the pool: a tenth of the recovery, nothing else.
        let pooled = m.block(1e9, Design::Sequential, Target { pool_hits: 0.9, ..WARM });
        assert!((pooled.recovery - 0.025).abs() < 1e-9, "{pooled:?}");
        assert!((pooled.total() - (1.875 - 0.225)).abs() < 1e-9);
    }

    /// The background run's `newPayload`s 0.1 s longer than the synchronous run's after a
    /// commit of 0.25 s: the commit costs the next block 0.4 of its time on these 2 cores, on 4
    /// half that, and the model charges that instead of 1/C.
    #[test]
    fn the_background_commit_costs_what_the_next_block_was_measured_to_lose() {
        let mut chain = chain();
        assert_eq!(chain.commit_beside_share(), None);
        // Two blocks of each run (the same per gas).
        chain.gas *= 2;
        chain.transactions *= 2;
        let seq = chain.runs[0].blocks[0];
        chain.runs[0].blocks = vec![seq, ChainBlock { number: 2, ..seq }];
        let sync = chain.runs[1].blocks[0];
        chain.runs[1].blocks = vec![sync, ChainBlock { number: 2, ..sync }];
        let slower = ChainBlock { number: 2, execution_s: sync.execution_s + 0.1, ..sync };
        chain.background =
            Some(ChainRun { parallel: true, threads: 2, blocks: vec![sync, slower] });
        let share = chain.commit_beside_share().expect("measured");
        assert!((share - 0.4).abs() < 1e-9, "{share}");
        let m = Model::new(exec(), &chain, None, None, 2);
        let b = m.block(1e9, Design::Sequential, WARM);
        assert!((b.commit - 0.25 * 0.4).abs() < 1e-9, "{b:?}");
        let b4 = m.block(1e9, Design::Sequential, Target::machine(4));
        assert!((b4.commit - 0.25 * 0.2).abs() < 1e-9, "{b4:?}");
    }

    #[test]
    fn cold_reads_cost_what_the_disk_takes_beyond_the_cpu() {
        let m = model();
        let cold = Target { cold: true, ..WARM };
        let b = m.block(1e9, Design::Sequential, cold);
        // 10^6 reads at 10^5 IOPS, each waited for: 10 s added to the CPU's 1.875 s.
        assert!((b.io - 10.0).abs() < 1e-6, "{b:?}");
        assert!((b.total() - 11.875).abs() < 1e-6);
        assert_eq!(b.binding(), "disk IOPS (cold reads)");
        // In parallel the state's reads come before execution: a disk of 2M IOPS adds 0.5 s.
        let given = m.block(1e9, Design::Parallel, Target { iops: Some(2e6), ..cold });
        let warm = m.block(1e9, Design::Parallel, WARM).total();
        assert!((given.io - 0.5).abs() < 1e-6, "{given:?}");
        // Trie-node reads: half a million more. Sequential, each waited for: 5 s more. In
        // parallel they are read ahead beside the CPU's work: at 2M IOPS (0.25 s) nothing more.
        let mut chain = chain();
        chain.runs[0].blocks[0].trie_node_reads = 500_000;
        let m = Model::new(exec(), &chain, Some(sweep(1e6)), Some(sweep(1e5)), 2);
        let b = m.block(1e9, Design::Sequential, cold);
        assert!((b.total() - 16.875).abs() < 1e-6, "{b:?}");
        let given = m.block(1e9, Design::Parallel, Target { iops: Some(2e6), ..cold });
        assert!((given.total() - warm - 0.5).abs() < 1e-6, "{given:?}");
        // The IOPS a target needs: every read within the budget.
        let q = m.requirements(1e9, 3.0, Design::Parallel, 0.0);
        assert!((q.iops_at_cores.unwrap() - 1.5e6 / 3.0).abs() < 1e-6, "{q:?}");
    }

    #[test]
    fn the_largest_gas_fills_the_budget_exactly() {
        let m = model();
        for design in Design::ALL {
            for budget in [3.0, 6.0, 12.0] {
                let g = m.max_gas(budget, design, WARM);
                assert!((m.block(g, design, WARM).total() - budget).abs() < 1e-6);
            }
        }
        assert!(m.max_gas(3.0, Design::Megablock, WARM) > m.max_gas(3.0, Design::Sequential, WARM));
    }

    #[test]
    fn requirements_name_the_smallest_machine() {
        let m = model();
        let q = m.requirements(1e9, 1.5, Design::Parallel, 4e9);
        let cores = q.cores.expect("some core count meets 1.5 s");
        let at = |t: usize| m.block(1e9, Design::Parallel, Target::machine(t)).total();
        assert!(at(cores) <= 1.5 && (cores == 1 || at(cores - 1) > 1.5), "{cores}");
        // At this machine's cores the block takes t; a core t/1.5 times as fast meets it.
        let t = m.block(1e9, Design::Parallel, WARM).total();
        assert!((q.core_speed_ratio - t / 1.5).abs() < 1e-9);
        // The cache may take at most 35% of RAM.
        assert!(q.ram_bytes >= 4e9 / CACHE_SHARE);
        // The serial stages alone (0.75 s a Ggas) exceed half a second at any core count.
        assert_eq!(m.requirements(1e9, 0.5, Design::Parallel, 0.0).cores, None);
    }
}
