//! Random reads at queue depth 1..64: the raw disk (4 KiB `pread`s of a file written for the
//! purpose, `O_DIRECT` where the file system allows it), RocksDB (point reads of storage slots
//! through [`Storage::storage`], the node's own read path) and the files of an existing datadir
//! ([`files`]: the disk under a state written long before), each depth for a fixed time, as many
//! threads as the depth, each with one read in flight (what `fio --iodepth` does with
//! `--numjobs`).
//!
//! Flow: write the file (or the store) → for each depth: drop the page cache where permitted,
//! run the threads for the time, gather latencies → IOPS, p50 and p99 per depth.

use crate::{error::io_err, probe::drop_page_cache, HwError};
use alloy_primitives::{keccak256, Address, B256, U256};
use gigagas_storage::{AccountRecord, BlockWriter, StateWriter, Storage};
use serde::{Deserialize, Serialize};
use std::{
    os::unix::fs::{FileExt, OpenOptionsExt},
    path::Path,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::{Duration, Instant},
};

/// Bytes per raw read (a page: what a random state read costs the disk).
pub const READ_BYTES: usize = 4096;

/// Queue depths measured.
pub const DEPTHS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Random reads at one queue depth.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct DepthPoint {
    /// Reads in flight (threads each with one read).
    pub queue_depth: usize,
    /// Reads completed per second.
    pub iops: f64,
    /// Median read latency (microseconds).
    pub p50_us: f64,
    /// 99th-percentile read latency (microseconds).
    pub p99_us: f64,
    /// CPU time the process spent per read, user and kernel (microseconds): what a read costs
    /// the cores besides its wait (a cold one: the system call, the block layer, the
    /// hypervisor's notification, the page cache's fill). `None` in sweeps saved before it was
    /// measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_us_per_read: Option<f64>,
}

/// A sweep of queue depths over one target.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReadSweep {
    /// What was read: `raw disk` or `RocksDB`, warm or cold.
    pub target: String,
    /// The page cache was dropped before each depth (root only); `false`: the figures include
    /// the page cache.
    pub cold: bool,
    /// Raw disk only: the file was read with `O_DIRECT` (no page cache at all).
    pub direct: bool,
    /// One point per depth.
    pub points: Vec<DepthPoint>,
}

impl ReadSweep {
    /// IOPS at queue depth `qd`: the measured point at or below it (depths between points
    /// take the lower one; beyond 64 the 64 point).
    pub fn iops_at(&self, qd: usize) -> f64 {
        self.points
            .iter()
            .filter(|p| p.queue_depth <= qd.max(1))
            .map(|p| p.iops)
            .next_back()
            .unwrap_or(0.0)
    }

    /// CPU per read at queue depth `qd` (microseconds), taken as [`ReadSweep::iops_at`] takes
    /// its point; `None` when the sweep did not measure it.
    pub fn cpu_us_per_read_at(&self, qd: usize) -> Option<f64> {
        self.points.iter().rfind(|p| p.queue_depth <= qd.max(1))?.cpu_us_per_read
    }
}

/// Runs `depth` threads, each calling `read(thread, i)` in a loop for `time` or until `max_reads`
/// reads are done in all, and summarizes; with the count of reads that returned `false` (a
/// failed or wrong read).
fn sweep_point(
    depth: usize,
    time: Duration,
    max_reads: u64,
    read: &(dyn Fn(usize, u64) -> bool + Sync),
) -> (DepthPoint, u64) {
    let bad = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let cpu_before = process_cpu_seconds();
    let start = Instant::now();
    let mut latencies: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..depth)
            .map(|t| {
                let (stop, done, bad) = (&stop, &done, &bad);
                s.spawn(move || {
                    let mut lat = Vec::new();
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed)
                        && done.fetch_add(1, Ordering::Relaxed) < max_reads
                    {
                        let t0 = Instant::now();
                        if !read(t, i) {
                            bad.fetch_add(1, Ordering::Relaxed);
                        }
                        lat.push(t0.elapsed().as_nanos() as u64);
                        i += 1;
                    }
                    lat
                })
            })
            .collect();
        let deadline = start + time;
        while Instant::now() < deadline && !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(2));
        }
        stop.store(true, Ordering::Relaxed);
        let lat: Vec<Vec<u64>> =
            handles.into_iter().map(|h| h.join().expect("reader thread")).collect();
        lat.into_iter().flatten().collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds().zip(cpu_before).map(|(after, before)| after - before);
    latencies.sort_unstable();
    let at = |q: f64| {
        if latencies.is_empty() {
            return 0.0;
        }
        let i = ((q * latencies.len() as f64) as usize).min(latencies.len() - 1);
        latencies[i] as f64 / 1e3
    };
    let point = DepthPoint {
        queue_depth: depth,
        iops: latencies.len() as f64 / elapsed,
        p50_us: at(0.5),
        p99_us: at(0.99),
        cpu_us_per_read: cpu
            .filter(|_| !latencies.is_empty())
            .map(|c| c * 1e6 / latencies.len() as f64),
    };
    (point, bad.into_inner())
}

/// This process's CPU time so far, user and kernel, all threads (seconds); `None` if the
/// kernel does not say.
fn process_cpu_seconds() -> Option<f64> {
    // SAFETY: `getrusage` only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

/// A xorshift step: the random offsets and keys (reproducible, no dependency).
fn mix(thread: usize, i: u64) -> u64 {
    let mut x = (thread as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ i.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 29)
}

/// Raw 4 KiB random reads of a `file_bytes` file written in `dir`, `time` per depth.
///
/// # Errors
/// [`HwError::Io`] when the file cannot be written or read.
pub fn raw_disk(
    dir: &Path,
    file_bytes: u64,
    time: Duration,
    tick: &dyn Fn(),
) -> Result<ReadSweep, HwError> {
    let path = dir.join("gigagas-hw-raw.bin");
    {
        let file = std::fs::File::create(&path).map_err(io_err(&path))?;
        let chunk: Vec<u8> = (0..1 << 20).map(|i: u32| (mix(0, u64::from(i)) >> 7) as u8).collect();
        for k in 0..file_bytes.div_ceil(chunk.len() as u64) {
            file.write_all_at(&chunk, k * chunk.len() as u64).map_err(io_err(&path))?;
        }
        file.sync_all().map_err(io_err(&path))?;
    }
    let pages = (file_bytes / READ_BYTES as u64).max(1);
    // O_DIRECT needs aligned buffers; a file system that refuses it is read through the page
    // cache, dropped before each depth.
    let direct = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .ok()
        .filter(|f| {
            let mut buf = AlignedPage::new();
            f.read_exact_at(buf.as_mut(), 0).is_ok()
        });
    let is_direct = direct.is_some();
    let file = match direct {
        Some(f) => f,
        None => std::fs::File::open(&path).map_err(io_err(&path))?,
    };
    let mut cold = true;
    let mut points = Vec::new();
    for depth in DEPTHS {
        if !is_direct {
            cold &= drop_page_cache();
        }
        let read = |t: usize, i: u64| {
            let mut buf = AlignedPage::new();
            let offset = mix(t, i) % pages * READ_BYTES as u64;
            file.read_exact_at(buf.as_mut(), offset).is_ok()
        };
        // Cold: at most a fifth as many reads as the file has pages, so that nearly every read
        // misses the page cache (with O_DIRECT there is none).
        let max_reads = if is_direct { u64::MAX } else { pages / 5 };
        let (point, bad) = sweep_point(depth, time, max_reads, &read);
        if bad > 0 {
            return Err(HwError::BadReads { target: "raw disk", bad });
        }
        points.push(point);
        tick();
    }
    drop(file);
    std::fs::remove_file(&path).map_err(io_err(&path))?;
    Ok(ReadSweep { target: "raw disk".into(), cold: is_direct || cold, direct: is_direct, points })
}

/// Random 4 KiB reads of the files already in `dir` (a datadir: the state as it lies on the
/// disk, written long before), `time` per depth: each read picks a page of all the files'
/// pages at random, so a file gets reads in proportion to its size. Before each depth the files'
/// pages are dropped from the page cache (`posix_fadvise(DONTNEED)`, which needs no root) and,
/// as root, the whole page cache; at most a fifth of the pages are read per depth, so that
/// nearly every read misses.
///
/// # Errors
/// [`HwError::Io`] when the folder cannot be listed or a file opened; [`HwError::NoFiles`]
/// when it holds no file of a page or more; [`HwError::BadReads`] when reads fail.
pub fn files(dir: &Path, time: Duration, tick: &dyn Fn()) -> Result<ReadSweep, HwError> {
    let mut found = Vec::new();
    list_files(dir, &mut found)?;
    let mut files = Vec::new();
    // Cumulative pages: file i holds the pages [ends[i-1], ends[i]).
    let mut ends = Vec::new();
    let mut pages = 0u64;
    for path in found {
        let file = std::fs::File::open(&path).map_err(io_err(&path))?;
        let len = file.metadata().map_err(io_err(&path))?.len();
        if len >= READ_BYTES as u64 {
            pages += len / READ_BYTES as u64;
            ends.push(pages);
            files.push(file);
        }
    }
    if files.is_empty() {
        return Err(HwError::NoFiles(dir.to_path_buf()));
    }
    let mut cold = true;
    let mut points = Vec::new();
    for depth in DEPTHS {
        for f in &files {
            use std::os::fd::AsRawFd;
            // SAFETY: a valid open descriptor; the call only advises the kernel.
            cold &=
                unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) } == 0;
        }
        drop_page_cache();
        let read = |t: usize, i: u64| {
            let page = mix(t, i) % pages;
            let k = ends.partition_point(|&end| end <= page);
            let first = if k == 0 { 0 } else { ends[k - 1] };
            let mut buf = [0u8; READ_BYTES];
            files[k].read_exact_at(&mut buf, (page - first) * READ_BYTES as u64).is_ok()
        };
        let (point, bad) = sweep_point(depth, time, (pages / 5).max(1), &read);
        if bad > 0 {
            return Err(HwError::BadReads { target: "datadir files", bad });
        }
        points.push(point);
        tick();
    }
    Ok(ReadSweep { target: format!("files of {}", dir.display()), cold, direct: false, points })
}

/// The regular files under `dir`, recursively.
fn list_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<(), HwError> {
    for entry in std::fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let kind = entry.file_type().map_err(io_err(&entry.path()))?;
        if kind.is_dir() {
            list_files(&entry.path(), out)?;
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
    Ok(())
}

/// One page, aligned for `O_DIRECT`.
#[repr(C, align(4096))]
struct AlignedPage([u8; READ_BYTES]);

impl AlignedPage {
    fn new() -> Box<Self> {
        Box::new(Self([0; READ_BYTES]))
    }
}

impl AsMut<[u8]> for Box<AlignedPage> {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

/// The contract whose slots the RocksDB sweep reads.
const CONTRACT: Address = Address::repeat_byte(0xd5);

fn slot_key(i: u64) -> U256 {
    U256::from_be_bytes(keccak256(B256::from(U256::from(i))).0)
}

/// RocksDB point reads of random slots among `slots` written into a fresh store in `dir`:
/// warm (the files in the page cache, as right after writing them) and cold (page cache
/// dropped and the store reopened before each depth), `time` per depth.
///
/// # Errors
/// [`HwError::Storage`] when the store fails.
pub fn rocksdb(
    dir: &Path,
    slots: u64,
    time: Duration,
    tick: &dyn Fn(),
) -> Result<(ReadSweep, ReadSweep), HwError> {
    let path = dir.join("gigagas-hw-rocksdb");
    if path.exists() {
        std::fs::remove_dir_all(&path).map_err(io_err(&path))?;
    }
    {
        let store = Storage::open(&path)?;
        let code_hash = keccak256([0x00u8]);
        let account = AccountRecord { nonce: 1, balance: U256::ZERO, code_hash };
        store.write_state(&[(CONTRACT, account)], &[], &[(code_hash, &[0x00][..])])?;
        let chunk = 250_000u64;
        for start in (0..slots).step_by(chunk as usize) {
            let batch: Vec<(Address, U256, U256)> = (start..(start + chunk).min(slots))
                .map(|i| (CONTRACT, slot_key(i), U256::from(i + 1)))
                .collect();
            store.write_state(&[], &batch, &[])?;
        }
        store.flush()?;
    }
    let sweep = |cold: bool| -> Result<ReadSweep, HwError> {
        let mut all_cold = cold;
        let mut points = Vec::new();
        let mut store = Storage::open(&path)?;
        for depth in DEPTHS {
            if cold {
                drop(store);
                all_cold &= drop_page_cache();
                store = Storage::open(&path)?;
            }
            let read = |t: usize, i: u64| {
                let k = mix(t, i) % slots.max(1);
                store.storage(&CONTRACT, &slot_key(k)).is_ok_and(|v| v == U256::from(k + 1))
            };
            // Cold: at most one read per 200 slots (about a fifth of the store's 4 KiB blocks),
            // so that nearly every read misses the page cache; warm: for the time.
            let max_reads = if cold { (slots / 200).max(1) } else { u64::MAX };
            let (point, bad) = sweep_point(depth, time, max_reads, &read);
            if bad > 0 {
                return Err(HwError::BadReads { target: "RocksDB", bad });
            }
            points.push(point);
            tick();
        }
        let target = if cold { "RocksDB, cold" } else { "RocksDB, warm" };
        Ok(ReadSweep { target: target.into(), cold: all_cold, direct: false, points })
    };
    let warm = sweep(false)?;
    let cold = sweep(true)?;
    std::fs::remove_dir_all(&path).map_err(io_err(&path))?;
    Ok((warm, cold))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_read_back_what_was_written_at_every_depth() {
        let dir = std::env::temp_dir().join(format!("gigagas-hw-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let time = Duration::from_millis(20);
        let raw = raw_disk(&dir, 4 << 20, time, &|| {}).unwrap();
        let (warm, cold) = rocksdb(&dir, 20_000, time, &|| {}).unwrap();
        // The sweep of files already there: nested, of any size (a file under a page is
        // skipped).
        let files_dir = dir.join("files");
        std::fs::create_dir_all(files_dir.join("nested")).unwrap();
        std::fs::write(files_dir.join("nested/a.bin"), vec![7u8; 64 * READ_BYTES]).unwrap();
        std::fs::write(files_dir.join("b.bin"), vec![9u8; 3 * READ_BYTES]).unwrap();
        std::fs::write(files_dir.join("tiny"), b"x").unwrap();
        let datadir = files(&files_dir, time, &|| {}).unwrap();
        std::fs::remove_dir_all(&files_dir).unwrap();
        for s in [&raw, &warm, &cold, &datadir] {
            let depths: Vec<usize> = s.points.iter().map(|p| p.queue_depth).collect();
            assert_eq!(depths, DEPTHS, "{}", s.target);
            assert!(s.points.iter().all(|p| p.iops > 0.0 && p.p99_us >= p.p50_us), "{s:?}");
        }
        // Between measured depths the lower one counts.
        assert_eq!(warm.iops_at(3), warm.points[1].iops);
        assert_eq!(warm.iops_at(1000), warm.points[6].iops);
        // The scratch files are gone.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }
}
