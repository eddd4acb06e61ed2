//! What the machine is: cores, CPU model, memory and page cache (`/proc`), this process's RSS,
//! and dropping the page cache for cold measurements.

use serde::{Deserialize, Serialize};

/// The machine as `/proc` describes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    /// Hardware threads this process may run on (`available_parallelism`).
    pub cores: usize,
    /// `model name` of the first CPU in `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// `MemTotal` (bytes).
    pub mem_total_bytes: u64,
    /// `MemAvailable` when probed (bytes).
    pub mem_available_bytes: u64,
    /// `Cached`: the page cache when probed (bytes).
    pub page_cache_bytes: u64,
}

/// Probes the machine.
pub fn probe() -> Machine {
    Machine {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model: cpu_model(),
        mem_total_bytes: meminfo_bytes("MemTotal:").unwrap_or(0),
        mem_available_bytes: meminfo_bytes("MemAvailable:").unwrap_or(0),
        page_cache_bytes: meminfo_bytes("Cached:").unwrap_or(0),
    }
}

/// The model name of the first CPU in `/proc/cpuinfo`.
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string())
}

/// A `/proc/meminfo` line's value (`key` with its colon, e.g. `"Cached:"`), in bytes.
pub fn meminfo_bytes(key: &str) -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    kb_field(&info, key)
}

/// This process's resident set (`VmRSS`, bytes).
pub fn rss_bytes() -> Option<u64> {
    kb_field(&std::fs::read_to_string("/proc/self/status").ok()?, "VmRSS:")
}

/// This process's peak resident set (`VmHWM`, bytes).
pub fn peak_rss_bytes() -> Option<u64> {
    kb_field(&std::fs::read_to_string("/proc/self/status").ok()?, "VmHWM:")
}

fn kb_field(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Writes dirty pages and drops the page cache (`/proc/sys/vm/drop_caches`, root only): `false`
/// when that is not permitted here (then "cold" figures are not cold, and the report says so).
pub fn drop_page_cache() -> bool {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", b"3").is_ok()
}
