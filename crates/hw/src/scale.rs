//! The model's cold term checked at scale: against the cold imports of `make state-scale`
//! (`testing/state_scale.py`), on states of 1M to 50M entries that do not fit the page cache.
//!
//! Flow: read `state-scale.json` → per state size and design, the sweep of the datadir's files
//! ([`crate::disk::files`]) the script took before that design's runs (else the size's) → from
//! the design's **warm** run only: its time and CPU, and the reads a fresh process makes (the
//! flat-state reads that missed the node's cache and the trie nodes it read from the store;
//! the same cold or warm) → the disk reads those become: the count of the design's traced run
//! (the script's `strace` of its table-file reads, replayed against an empty page cache), or
//! without one [`disk_reads`]'s estimate (repeated pages served by the page cache once read,
//! pages drawn uniformly) → split by when the design makes them ([`cold_reads`]: on the
//! critical path, or beside the CPU's work) → each kind's rate: reads made one at a time at the
//! sweep's IOPS for the threads that make them; reads made in multi-gets, where the run read
//! them through io_uring, at the batched sweep's for those threads (each thread a batch in
//! flight, [`multi_get_reads`]) → the cold time as the model has it ([`cold_seconds`]: the
//! serial reads' time added, the others' beyond the warm time, and never less than the warm
//! run with the reads' own CPU added at the warm run's parallelism) → against the measured cold
//! run.

use crate::{
    disk::{ReadSweep, READ_BYTES},
    error::io_err,
    model::{cold_seconds, ColdReads, ReadRates},
    HwError,
};
use gigagas_trie::DEFAULT_TRIE_READ_THREADS;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One design at one state size: the cold run predicted from its warm run and the disk sweep.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleCheckRow {
    /// Accounts plus slots in the state.
    pub entries: u64,
    /// The design (`seq`, `par-ondemand`, `par-bal-qdN`, `par-beside-qdN`).
    pub design: String,
    /// Threads making the reads on the critical path (or, where none is, beside it).
    pub queue_depth: usize,
    /// The rate of those reads (IOPS): the sweep's at that depth, or the batched sweep's at
    /// that many threads where `io_uring`.
    pub iops: f64,
    /// The reads' CPU per read (microseconds, averaged over both kinds; 0 when the sweep did
    /// not measure it).
    pub cpu_us_per_read: f64,
    /// The run's multi-gets read through io_uring and are predicted from the batched sweep.
    pub io_uring: bool,
    /// Flat-state and trie-node reads of the run (counted by the node, warm run).
    pub reads: u64,
    /// Disk reads the model expects: those of the design's traced run when it was traced
    /// (`traced`), else [`disk_reads`]'s estimate from `reads`.
    pub disk_reads_predicted: f64,
    /// Whether `disk_reads_predicted` is the traced run's count.
    pub traced: bool,
    /// Disk reads the cold run made (`/proc/diskstats`).
    pub disk_reads_measured: u64,
    /// The warm run (Mgas/s).
    pub warm_mgas_per_s: f64,
    /// The model's cold Mgas/s.
    pub predicted_mgas_per_s: f64,
    /// The cold run (Mgas/s).
    pub measured_mgas_per_s: f64,
    /// predicted / measured − 1.
    pub error: f64,
}

/// Distinct pages read when `reads` random reads fall on a state of `state_bytes`: a page read
/// twice is served by the page cache the second time, so `P (1 − e^(−reads/P))` of its `P`
/// pages (`reads` when the state is far larger than the reads).
pub fn disk_reads(reads: f64, state_bytes: f64) -> f64 {
    let pages = (state_bytes / READ_BYTES as f64).max(1.0);
    pages * -(-reads / pages).exp_m1()
}

/// The reads in flight of a design of `state_scale.py`: `seq` 2 (execution, and the previous
/// block's root beside it in the import pipeline), `par-ondemand` the workers and the root,
/// `par-bal-qdN` and `par-beside-qdN` their N read threads (N = 0: the executor's `threads`,
/// among which the node splits the BAL's reads without threads of their own); `None` for
/// another (geth).
pub fn queue_depth(design: &str, threads: usize) -> Option<usize> {
    match design.strip_suffix("-walk").unwrap_or(design) {
        "seq" => Some(2),
        "par-ondemand" => Some(threads + 1),
        d => d
            .strip_prefix("par-bal-qd")
            .or_else(|| d.strip_prefix("par-beside-qd"))
            .and_then(|n| n.parse().ok())
            .map(|n: usize| if n == 0 { threads } else { n }),
    }
}

#[derive(Deserialize)]
struct ScaleJson {
    sizes: Vec<SizeJson>,
}

/// Which of [`cold_reads`]' two kinds a design reads in multi-gets (a thread's keys looked up
/// together, their blocks in one io_uring submission per table file where the run had it),
/// `(serial, beside)`: the BAL's reads (`par-bal`, `par-beside`) and the trie nodes read level
/// by level or ahead (all but the `-walk` designs, whose roots read one node at a time); the
/// reads execution makes as it meets a key (`seq`, `par-ondemand`) are single.
pub fn multi_get_reads(design: &str) -> (bool, bool) {
    let bal = design.starts_with("par-bal-qd") || design.starts_with("par-beside-qd");
    (bal, !design.ends_with("-walk"))
}

#[derive(Deserialize)]
struct SizeJson {
    entries: u64,
    gigagas_bytes: Option<f64>,
    sweep: Option<ReadSweep>,
    /// The sweep in io_uring batches ([`crate::disk::MULTI_GET_BATCH`]).
    sweep_batched: Option<ReadSweep>,
    #[serde(default)]
    runs: Vec<RunJson>,
}

#[derive(Deserialize)]
struct RunJson {
    design: String,
    cold: bool,
    mgas_per_s: f64,
    seconds: Option<f64>,
    gas: Option<f64>,
    store_reads: Option<u64>,
    trie_node_reads: Option<u64>,
    disk_reads: Option<u64>,
    /// The disk reads `state_scale.py`'s traced run of the design replayed against an empty
    /// page cache (its table-file reads, a request per run of pages not read before).
    disk_reads_traced: Option<u64>,
    /// The sweep taken by the invocation that made this run (else the size's).
    sweep: Option<ReadSweep>,
    /// Its batched sweep (else the size's).
    sweep_batched: Option<ReadSweep>,
    /// The run's multi-gets read their blocks through io_uring (`gigagas import --json`'s
    /// `batched_reads_io_uring`; absent in runs saved before it was reported: `pread`).
    batched_reads_io_uring: Option<bool>,
    /// The process's CPU time (seconds) over `wall_s`.
    cpu_s: Option<f64>,
    wall_s: Option<f64>,
}

/// When a design of `state_scale.py` makes its `flat` (state) and `trie` (node) disk reads:
/// `seq` and `par-ondemand` wait for each state read, and read the trie nodes in their state
/// roots, level by level on the trie readers' threads, beside the next block's execution (the
/// import's pipeline; [`trie_queue_depth`]); `seq-walk` and `par-ondemand-walk`, whose roots
/// read them one at a time, wait for every read; `par-bal-qdN` reads the state before
/// execution and the trie nodes ahead, beside it; `par-beside-qdN` reads both beside
/// execution. `None` for another (geth).
pub fn cold_reads(design: &str, flat: f64, trie: f64) -> Option<ColdReads> {
    match design {
        "seq" | "par-ondemand" => Some(ColdReads { serial: flat, beside: trie }),
        "seq-walk" | "par-ondemand-walk" => Some(ColdReads { serial: flat + trie, beside: 0.0 }),
        d if d.starts_with("par-bal-qd") => Some(ColdReads { serial: flat, beside: trie }),
        d if d.starts_with("par-beside-qd") => Some(ColdReads { serial: 0.0, beside: flat + trie }),
        _ => None,
    }
}

/// The reads in flight of the trie-node reads `cold_reads` puts beside the CPU's work: the
/// trie readers' ([`DEFAULT_TRIE_READ_THREADS`]) for `seq`, `par-ondemand` and `par-bal-qd0`
/// (without read threads of its own the node reads no trie path ahead: the root reads them),
/// else the design's own ([`queue_depth`]).
pub fn trie_queue_depth(design: &str, threads: usize) -> Option<usize> {
    match design {
        "seq" | "par-ondemand" | "par-bal-qd0" => Some(DEFAULT_TRIE_READ_THREADS),
        d => queue_depth(d, threads),
    }
}

/// The model's cold prediction of every design of `state-scale.json` at `path` that has a
/// sweep (its warm run's own, else its size's) and whose warm run counted its trie-node reads,
/// on a machine of `threads` cores.
///
/// # Errors
/// [`HwError::Io`] when the file cannot be read, [`HwError::Saved`] when it is not a
/// `state_scale.py` report.
pub fn check(path: &Path, threads: usize) -> Result<Vec<ScaleCheckRow>, HwError> {
    let bytes = std::fs::read(path).map_err(io_err(path))?;
    let report: ScaleJson = serde_json::from_slice(&bytes)
        .map_err(|e| HwError::Saved { path: path.to_path_buf(), reason: e.to_string() })?;
    let mut rows = Vec::new();
    for size in &report.sizes {
        let Some(state_bytes) = size.gigagas_bytes else { continue };
        for warm in size.runs.iter().filter(|r| !r.cold) {
            let Some(sweep) = warm.sweep.as_ref().or(size.sweep.as_ref()) else { continue };
            let Some(cold) = size.runs.iter().find(|r| r.cold && r.design == warm.design) else {
                continue;
            };
            let (Some(qd), Some(seconds), Some(gas), Some(flat), Some(trie)) = (
                queue_depth(&warm.design, threads),
                warm.seconds,
                warm.gas,
                warm.store_reads,
                warm.trie_node_reads,
            ) else {
                continue;
            };
            let reads = flat + trie;
            let traced = warm.disk_reads_traced;
            let disk = traced.map_or_else(|| disk_reads(reads as f64, state_bytes), |n| n as f64);
            let share = |n: u64| if reads == 0 { 0.0 } else { disk * n as f64 / reads as f64 };
            let Some(when) = cold_reads(&warm.design, share(flat), share(trie)) else { continue };
            let batched = if warm.batched_reads_io_uring == Some(true) {
                warm.sweep_batched.as_ref().or(size.sweep_batched.as_ref())
            } else {
                None
            };
            // The rate and CPU per read of reads made by `threads` threads, in multi-gets or not.
            let rate = |threads: usize, multi: bool| match (multi, batched) {
                (true, Some(b)) => {
                    let qd = threads * b.batch;
                    (b.iops_at(qd), b.cpu_us_per_read_at(qd).unwrap_or(0.0))
                }
                _ => (sweep.iops_at(threads), sweep.cpu_us_per_read_at(threads).unwrap_or(0.0)),
            };
            let (serial_multi, beside_multi) = multi_get_reads(&warm.design);
            let (iops, serial_cpu_us) = rate(qd, serial_multi);
            let (beside_iops, beside_cpu_us) =
                rate(trie_queue_depth(&warm.design, threads).unwrap_or(qd), beside_multi);
            let cpu_us = if when.serial + when.beside > 0.0 {
                (when.serial * serial_cpu_us + when.beside * beside_cpu_us)
                    / (when.serial + when.beside)
            } else {
                serial_cpu_us
            };
            // The process's CPU over the import's own time (the wall time adds its start).
            let cpu = match (warm.cpu_s, warm.wall_s) {
                (Some(cpu), Some(wall)) if wall > 0.0 => cpu * (seconds / wall).min(1.0),
                _ => 0.0,
            };
            let rates = ReadRates { serial: iops, beside: beside_iops };
            let predicted_s = cold_seconds(seconds, cpu, when, rates, cpu_us * 1e-6, threads);
            let predicted = gas / predicted_s / 1e6;
            rows.push(ScaleCheckRow {
                entries: size.entries,
                design: warm.design.clone(),
                queue_depth: qd,
                iops,
                cpu_us_per_read: cpu_us,
                io_uring: batched.is_some(),
                reads,
                disk_reads_predicted: disk,
                traced: traced.is_some(),
                disk_reads_measured: cold.disk_reads.unwrap_or(0),
                warm_mgas_per_s: warm.mgas_per_s,
                predicted_mgas_per_s: predicted,
                measured_mgas_per_s: cold.mgas_per_s,
                error: predicted / cold.mgas_per_s - 1.0,
            });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn designs_read_at_their_queue_depths() {
        assert_eq!(queue_depth("seq", 2), Some(2));
        assert_eq!(queue_depth("par-ondemand-walk", 2), Some(3));
        assert_eq!(queue_depth("par-bal-qd16", 2), Some(16));
        // Without read threads of its own the BAL's reads go on the executor's.
        assert_eq!(queue_depth("par-bal-qd0", 2), Some(2));
        assert_eq!(trie_queue_depth("par-bal-qd0", 2), Some(DEFAULT_TRIE_READ_THREADS));
        assert_eq!(trie_queue_depth("par-bal-qd8", 2), Some(8));
        assert_eq!(queue_depth("geth", 2), None);
    }

    #[test]
    fn repeated_pages_are_read_once() {
        // Far fewer reads than pages: nearly every read a page of its own.
        let big = 1e12;
        assert!((disk_reads(1e5, big) - 1e5).abs() / 1e5 < 1e-3);
        // As many reads as pages: 1 − 1/e of them distinct.
        let pages = 1e6;
        let d = disk_reads(pages, pages * READ_BYTES as f64);
        assert!((d / pages - (1.0 - (-1.0f64).exp())).abs() < 1e-9, "{d}");
        // Never more pages than the state has.
        assert!(disk_reads(1e9, pages * READ_BYTES as f64) <= pages);
    }

    #[test]
    fn a_cold_run_is_predicted_from_its_warm_run_and_the_sweep() {
        let dir = std::env::temp_dir().join(format!("gigagas-scale-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let points: Vec<_> = crate::disk::DEPTHS
            .iter()
            .map(|&q| {
                format!(
                    r#"{{"queue_depth":{q},"iops":{},"p50_us":1,"p99_us":1,"cpu_us_per_read":50}}"#,
                    q * 1000
                )
            })
            .collect();
        // A 4 TB state (reads all distinct), 32,000 IOPS at depth 32, 50 µs of CPU a read.
        // par-bal-qd32, its traced run reading 32,000 pages of its 64,000 reads (the rest
        // repeats), split as the reads are: 20,000 state reads before execution (0.625 s), 12,000
        // trie reads beside the warm 1 s: 1.625 s; but the warm run's 2 cores busy and the reads'
        // 1.6 s of CPU over them take 1.8 s: 555.6 Mgas/s, measured 500. seq at depth 2
        // (untraced, its warm CPU unknown: all cores): its 15,000 state reads at 2,000 IOPS,
        // 7.5 s added to 1 s, its 5,000 trie reads at depth 16 (16,000 IOPS) beside them; as
        // seq-walk, whose root reads them one at a time: 20,000 reads, 10 s added to 1 s.
        // par-beside-qd32: all 64,000 beside (2 s), but the warm run's 2 cores and the
        // reads' 3.2 s over them take 2.6 s: 384.6 Mgas/s. par-beside-qd16 keeps one core busy
        // warm, and its own sweep (another invocation's) measured 100 µs a read: the reads'
        // CPU on that core, 7.4 s. geth is not predicted; a run without its trie-node
        // count is not either.
        let json = format!(
            r#"{{"sizes":[{{"entries":50000000,"gigagas_bytes":4e12,
              "sweep":{{"target":"files","cold":true,"direct":false,"points":[{}]}},
              "runs":[
               {{"design":"par-bal-qd32","cold":false,"mgas_per_s":1000,"seconds":1,"gas":1e9,
                 "store_reads":40000,"trie_node_reads":24000,"disk_reads":3,
                 "disk_reads_traced":32000,"cpu_s":2,"wall_s":1}},
               {{"design":"par-bal-qd32","cold":true,"mgas_per_s":500,"seconds":2,"gas":1e9,
                 "store_reads":40000,"trie_node_reads":24000,"disk_reads":33000}},
               {{"design":"seq","cold":false,"mgas_per_s":1000,"seconds":1,"gas":1e9,
                 "store_reads":15000,"trie_node_reads":5000}},
               {{"design":"seq","cold":true,"mgas_per_s":100,"gas":1e9}},
               {{"design":"seq-walk","cold":false,"mgas_per_s":1000,"seconds":1,"gas":1e9,
                 "store_reads":15000,"trie_node_reads":5000}},
               {{"design":"seq-walk","cold":true,"mgas_per_s":100,"gas":1e9}},
               {{"design":"par-beside-qd32","cold":false,"mgas_per_s":1000,"seconds":1,
                 "gas":1e9,"store_reads":40000,"trie_node_reads":24000,"cpu_s":2,"wall_s":1}},
               {{"design":"par-beside-qd32","cold":true,"mgas_per_s":400,"gas":1e9}},
               {{"design":"par-beside-qd16","cold":false,"mgas_per_s":1000,"seconds":1,
                 "gas":1e9,"store_reads":40000,"trie_node_reads":24000,"cpu_s":1,"wall_s":1,
                 "sweep":{{"target":"files","cold":true,"direct":false,"points":[
                  {{"queue_depth":16,"iops":1e6,"p50_us":1,"p99_us":1,"cpu_us_per_read":100}}]}}}},
               {{"design":"par-beside-qd16","cold":true,"mgas_per_s":250,"gas":1e9}},
               {{"design":"par-ondemand","cold":false,"mgas_per_s":1000,"seconds":1,"gas":1e9,
                 "store_reads":15000}},
               {{"design":"par-ondemand","cold":true,"mgas_per_s":100}},
               {{"design":"geth","cold":false,"mgas_per_s":50}},
               {{"design":"geth","cold":true,"mgas_per_s":40}}]}},
              {{"entries":1000,"runs":[]}}]}}"#,
            points.join(",")
        );
        let path = dir.join("state-scale.json");
        std::fs::write(&path, json).unwrap();
        let rows = check(&path, 2).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(rows.len(), 5, "{rows:?}");
        let bal = &rows[0];
        assert_eq!((bal.design.as_str(), bal.queue_depth, bal.reads), ("par-bal-qd32", 32, 64_000));
        assert!(bal.traced && bal.disk_reads_predicted == 32_000.0, "{bal:?}");
        assert!((bal.predicted_mgas_per_s - 1000.0 / 1.8).abs() < 0.1, "{bal:?}");
        assert!((bal.error - 0.1111).abs() < 1e-3 && bal.disk_reads_measured == 33_000);
        let seq = &rows[1];
        assert_eq!((seq.queue_depth, seq.iops, seq.traced), (2, 2000.0, false));
        assert!((seq.disk_reads_predicted - 20_000.0).abs() < 1.0, "{seq:?}");
        assert!((seq.predicted_mgas_per_s - 1000.0 / 8.5).abs() < 0.1, "{seq:?}");
        let walk = &rows[2];
        assert_eq!((walk.design.as_str(), walk.queue_depth, walk.iops), ("seq-walk", 2, 2000.0));
        assert!((walk.predicted_mgas_per_s - 1000.0 / 11.0).abs() < 0.1, "{walk:?}");
        let beside = &rows[3];
        assert_eq!((beside.design.as_str(), beside.cpu_us_per_read), ("par-beside-qd32", 50.0));
        assert!((beside.predicted_mgas_per_s - 1000.0 / 2.6).abs() < 0.1, "{beside:?}");
        let one_core = &rows[4];
        assert_eq!(one_core.design, "par-beside-qd16");
        assert_eq!((one_core.iops, one_core.cpu_us_per_read), (1e6, 100.0));
        assert!((one_core.predicted_mgas_per_s - 1000.0 / 7.4).abs() < 0.1, "{one_core:?}");
    }

    #[test]
    fn multi_gets_through_io_uring_are_predicted_from_the_batched_sweep() {
        assert_eq!(multi_get_reads("seq"), (false, true));
        assert_eq!(multi_get_reads("par-bal-qd0"), (true, true));
        assert_eq!(multi_get_reads("par-beside-qd8"), (true, true));
        assert_eq!(multi_get_reads("par-ondemand-walk"), (false, false));
        let dir = std::env::temp_dir().join(format!("gigagas-scale-uring-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let points = |per_thread: usize, batch: usize, cpu: f64| {
            let p: Vec<_> = crate::disk::DEPTHS
                .iter()
                .map(|&t| {
                    format!(
                        r#"{{"queue_depth":{},"iops":{},"p50_us":1,"p99_us":1,"cpu_us_per_read":{cpu}}}"#,
                        t * batch,
                        t * per_thread
                    )
                })
                .collect();
            format!(
                r#"{{"target":"files","cold":true,"direct":false,"batch":{batch},"points":[{}]}}"#,
                p.join(",")
            )
        };
        // One read at a time: 1,000 IOPS a thread, 50 µs of CPU a read; batches of 32: 10,000
        // IOPS a thread, 10 µs. A 4 TB state (every read a page of its own), 20,000 BAL reads
        // and 16,000 trie-node reads, warm 1 s on one busy core.
        let size = |entries: u64, io_uring: bool, design: &str| {
            format!(
                r#"{{"entries":{entries},"gigagas_bytes":4e12,"sweep":{},"sweep_batched":{},
                  "runs":[
                   {{"design":"{design}","cold":false,"mgas_per_s":1000,"seconds":1,"gas":1e9,
                     "store_reads":20000,"trie_node_reads":16000,"cpu_s":1,"wall_s":1,
                     "batched_reads_io_uring":{io_uring}}},
                   {{"design":"{design}","cold":true,"mgas_per_s":500,"gas":1e9}}]}}"#,
                points(1000, 1, 50.0),
                points(10_000, 32, 10.0)
            )
        };
        let json = format!(
            r#"{{"sizes":[{},{},{}]}}"#,
            size(1, true, "par-bal-qd0"),
            size(2, false, "par-bal-qd0"),
            size(3, true, "seq")
        );
        let path = dir.join("state-scale.json");
        std::fs::write(&path, json).unwrap();
        let rows = check(&path, 2).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        // io_uring: the BAL's reads on the executor's 2 threads at 20,000 IOPS (1 s before
        // execution), the trie's on 16 readers at 160,000 beside the warm 1 s: 2 s; their CPU
        // (0.36 s) within it. 500 Mgas/s.
        let uring = &rows[0];
        assert!(uring.io_uring && uring.queue_depth == 2 && uring.iops == 20_000.0, "{uring:?}");
        assert!((uring.cpu_us_per_read - 10.0).abs() < 1e-9, "{uring:?}");
        assert!((uring.predicted_mgas_per_s - 500.0).abs() < 0.1, "{uring:?}");
        // pread: 2,000 IOPS on 2 threads (10 s), the trie's 16,000 at 16,000 (1 s): 11 s.
        let pread = &rows[1];
        assert!(!pread.io_uring && pread.iops == 2_000.0, "{pread:?}");
        assert!((pread.predicted_mgas_per_s - 1000.0 / 11.0).abs() < 0.1, "{pread:?}");
        // seq reads its state one key at a time (2,000 IOPS, 10 s) whatever the build; only its
        // root's trie reads are batched (0.1 s beside the warm 1 s): 11 s; CPU a read the two
        // kinds' average.
        let seq = &rows[2];
        assert!(seq.io_uring && seq.iops == 2_000.0, "{seq:?}");
        assert!(
            (seq.cpu_us_per_read - (20_000.0 * 50.0 + 16_000.0 * 10.0) / 36_000.0).abs() < 1e-9
        );
        assert!((seq.predicted_mgas_per_s - 1000.0 / 11.0).abs() < 0.1, "{seq:?}");
    }
}
