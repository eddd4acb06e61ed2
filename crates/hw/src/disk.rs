//! Random reads at queue depth 1..64: the raw disk (4 KiB `pread`s of a file written for the
//! purpose, `O_DIRECT` where the file system allows it), RocksDB (point reads of storage slots
//! through [`Storage::storage`], the node's own read path) and the files of an existing datadir
//! ([`files`]: the disk under a state written long before), each depth for a fixed time, as many
//! threads as the depth, each with one read in flight (what `fio --iodepth` does with
//! `--numjobs`). The datadir's files are also read in batches ([`files`] with
//! [`MULTI_GET_BATCH`]): each thread submits a batch of reads to io_uring at once and waits for
//! all of them, as RocksDB's `MultiGet` reads a table file's blocks.
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

/// Queue depths measured (threads, each with one read or one batch in flight).
pub const DEPTHS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Reads a thread submits together in the batched sweep: RocksDB's
/// `MultiGetContext::MAX_BATCH_SIZE`, the keys one step of a `MultiGet` looks up, whose blocks in
/// one table file its `MultiRead` submits to io_uring at once and waits for (RocksDB 11.8
/// `table/multiget_context.h`, `env/io_posix.cc`).
pub const MULTI_GET_BATCH: usize = 32;

/// Random reads at one queue depth.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct DepthPoint {
    /// Reads in flight: threads × [`ReadSweep::batch`].
    pub queue_depth: usize,
    /// Reads completed per second.
    pub iops: f64,
    /// Median read latency (microseconds; batched: a batch's, submission to its last
    /// completion).
    pub p50_us: f64,
    /// 99th-percentile read latency (microseconds; batched: a batch's).
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
    /// Reads each thread submits together and waits for (io_uring); 1: one `pread` at a time.
    /// Each point's queue depth is its threads times this.
    #[serde(default = "one")]
    pub batch: usize,
    /// One point per depth.
    pub points: Vec<DepthPoint>,
}

fn one() -> usize {
    1
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

/// Runs `threads` threads, each calling `read(thread, i)` (which makes `batch` reads) in a loop
/// for `time` or until `max_reads` reads are done in all, and summarizes; with the count of
/// calls that returned `false` (a failed or wrong read).
fn sweep_point(
    threads: usize,
    batch: usize,
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
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (stop, done, bad) = (&stop, &done, &bad);
                s.spawn(move || {
                    let mut lat = Vec::new();
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed)
                        && done.fetch_add(batch as u64, Ordering::Relaxed) < max_reads
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
    let reads = (latencies.len() * batch) as f64;
    let point = DepthPoint {
        queue_depth: threads * batch,
        iops: reads / elapsed,
        p50_us: at(0.5),
        p99_us: at(0.99),
        cpu_us_per_read: cpu.filter(|_| reads > 0.0).map(|c| c * 1e6 / reads),
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
        let (point, bad) = sweep_point(depth, 1, time, max_reads, &read);
        if bad > 0 {
            return Err(HwError::BadReads { target: "raw disk", bad });
        }
        points.push(point);
        tick();
    }
    drop(file);
    std::fs::remove_file(&path).map_err(io_err(&path))?;
    Ok(ReadSweep {
        target: "raw disk".into(),
        cold: is_direct || cold,
        direct: is_direct,
        batch: 1,
        points,
    })
}

/// Random 4 KiB reads of the files already in `dir` (a datadir: the state as it lies on the
/// disk, written long before), `time` per depth: each read picks a page of all the files'
/// pages at random, so a file gets reads in proportion to its size. Before each depth the files'
/// pages are dropped from the page cache (`posix_fadvise(DONTNEED)`, which needs no root) and,
/// as root, the whole page cache; at most a fifth of the pages are read per depth, so that
/// nearly every read misses.
///
/// `batch` 1: each thread reads with one `pread` at a time. More: each thread submits `batch`
/// reads to an io_uring of its own at once and waits for all of them, as RocksDB's multi-gets
/// do ([`MULTI_GET_BATCH`]; the ring made with RocksDB's flags, Linux 6.1+); a depth's point is
/// then at `batch` times its threads.
///
/// # Errors
/// [`HwError::Io`] when the folder cannot be listed or a file opened; [`HwError::NoFiles`]
/// when it holds no file of a page or more; [`HwError::IoUring`] when the kernel refuses the
/// ring; [`HwError::BadReads`] when reads fail.
pub fn files(
    dir: &Path,
    time: Duration,
    batch: usize,
    tick: &dyn Fn(),
) -> Result<ReadSweep, HwError> {
    let batch = batch.max(1);
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
    if batch > 1 {
        // Refused here, every thread's ring would be: one clear error instead of bad reads.
        Batched::new(batch).map_err(HwError::IoUring)?;
    }
    // The file and offset of page `mix(t, i)`.
    let place = |t: usize, i: u64| {
        let page = mix(t, i) % pages;
        let k = ends.partition_point(|&end| end <= page);
        let first = if k == 0 { 0 } else { ends[k - 1] };
        (&files[k], (page - first) * READ_BYTES as u64)
    };
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
            if batch == 1 {
                let (file, offset) = place(t, i);
                let mut buf = [0u8; READ_BYTES];
                return file.read_exact_at(&mut buf, offset).is_ok();
            }
            BATCHED.with(|cell| {
                let mut cell = cell.borrow_mut();
                if cell.as_ref().is_none_or(|b| b.batch != batch) {
                    *cell = Batched::new(batch).ok();
                }
                cell.as_mut().is_some_and(|b| {
                    b.read((0..batch as u64).map(|j| place(t, i * batch as u64 + j)))
                })
            })
        };
        let (point, bad) = sweep_point(depth, batch, time, (pages / 5).max(1), &read);
        if bad > 0 {
            return Err(HwError::BadReads { target: "datadir files", bad });
        }
        points.push(point);
        tick();
    }
    let how = if batch == 1 { String::new() } else { format!(", io_uring batches of {batch}") };
    Ok(ReadSweep {
        target: format!("files of {}{how}", dir.display()),
        cold,
        direct: false,
        batch,
        points,
    })
}

thread_local! {
    /// The sweeping thread's ring (each thread its own, as each RocksDB reader has).
    static BATCHED: std::cell::RefCell<Option<Batched>> = const { std::cell::RefCell::new(None) };
}

/// An io_uring and the pages its batch reads into.
struct Batched {
    ring: io_uring::IoUring,
    bufs: Vec<u8>,
    batch: usize,
}

impl Batched {
    /// A ring for `batch` reads, made as RocksDB 11.8 makes its own (`CreateIOUring`:
    /// `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN`).
    fn new(batch: usize) -> std::io::Result<Self> {
        let ring = io_uring::IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(batch.next_power_of_two() as u32)?;
        Ok(Self { ring, bufs: vec![0; batch * READ_BYTES], batch })
    }

    /// Reads a page at each `(file, offset)` (`batch` of them): all submitted at once, then
    /// waited for; `false` when one failed or came back short.
    fn read<'f>(&mut self, at: impl Iterator<Item = (&'f std::fs::File, u64)>) -> bool {
        use std::os::fd::AsRawFd;
        let mut submitted = 0;
        for (j, (file, offset)) in at.enumerate().take(self.batch) {
            let buf = self.bufs[j * READ_BYTES..].as_mut_ptr();
            let entry = io_uring::opcode::Read::new(
                io_uring::types::Fd(file.as_raw_fd()),
                buf,
                READ_BYTES as u32,
            )
            .offset(offset)
            .build()
            .user_data(j as u64);
            // SAFETY: the buffer (this struct's, one page per entry) and the file outlive the
            // wait below, which reaps every entry submitted before either can be dropped.
            if unsafe { self.ring.submission().push(&entry) }.is_err() {
                return false;
            }
            submitted += 1;
        }
        let mut ok = true;
        let mut reaped = 0;
        while reaped < submitted {
            match self.ring.submit_and_wait(submitted - reaped) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    // Reads may still be in flight into the buffers: leave those to them.
                    let len = self.bufs.len();
                    std::mem::forget(std::mem::replace(&mut self.bufs, vec![0; len]));
                    return false;
                }
            }
            for cqe in self.ring.completion() {
                ok &= cqe.result() == READ_BYTES as i32;
                reaped += 1;
            }
        }
        ok
    }
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
            let (point, bad) = sweep_point(depth, 1, time, max_reads, &read);
            if bad > 0 {
                return Err(HwError::BadReads { target: "RocksDB", bad });
            }
            points.push(point);
            tick();
        }
        let target = if cold { "RocksDB, cold" } else { "RocksDB, warm" };
        Ok(ReadSweep { target: target.into(), cold: all_cold, direct: false, batch: 1, points })
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
        let datadir = files(&files_dir, time, 1, &|| {}).unwrap();
        // Batched through io_uring where the kernel allows it (not in every sandbox).
        let batched = match files(&files_dir, time, 4, &|| {}) {
            Ok(sweep) => Some(sweep),
            Err(HwError::IoUring(e)) => {
                eprintln!("io_uring refused, batched sweep not tested: {e}");
                None
            }
            Err(e) => panic!("{e}"),
        };
        std::fs::remove_dir_all(&files_dir).unwrap();
        for s in [&raw, &warm, &cold, &datadir].into_iter().chain(batched.as_ref()) {
            let depths: Vec<usize> = s.points.iter().map(|p| p.queue_depth / s.batch).collect();
            assert_eq!(depths, DEPTHS, "{}", s.target);
            assert!(s.points.iter().all(|p| p.iops > 0.0 && p.p99_us >= p.p50_us), "{s:?}");
        }
        if let Some(b) = &batched {
            assert_eq!((b.batch, b.points[1].queue_depth), (4, 8), "{b:?}");
        }
        // Between measured depths the lower one counts.
        assert_eq!(warm.iops_at(3), warm.points[1].iops);
        assert_eq!(warm.iops_at(1000), warm.points[6].iops);
        // The scratch files are gone.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }
}
