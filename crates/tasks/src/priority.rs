//! Thread priorities: the work a node can postpone (JSON-RPC) runs on threads of a lower
//! priority than block validation, so that on a loaded machine the kernel gives validation the
//! cores first and RPC what is left (reth runs its engine on a raised-priority thread; lowering
//! the others needs no privilege).
//!
//! Flow: [`lower_runtime`] builds a Tokio runtime whose every thread (its workers and its
//! blocking pool, bounded) calls [`lower_current_thread`] when it starts.

/// The nice value RPC threads run at unless told otherwise: 10, a tenth of the CPU share of a
/// nice-0 thread when both want a core (Linux's CFS weights: 110 against 1,024).
pub const DEFAULT_RPC_NICE: i32 = 10;

/// Lowers the calling thread's priority to nice value `nice` (0..=19; Linux: per thread); a
/// thread already at a higher nice value keeps it (raising a priority needs a privilege).
///
/// # Errors
/// The OS's refusal (`setpriority`); on other systems nothing is done.
pub fn lower_current_thread(nice: i32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on the calling thread's own id.
        let target = nice.clamp(0, 19).max(current_thread_nice());
        let rc = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, target)
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
    Ok(())
}

/// The calling thread's nice value (Linux; 0 elsewhere).
pub fn current_thread_nice() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: as above; errno is cleared first since -1 is also a valid answer.
        unsafe {
            *libc::__errno_location() = 0;
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::getpriority(libc::PRIO_PROCESS, tid)
        }
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// A multi-threaded Tokio runtime named `name` with `workers` worker threads and at most
/// `max_blocking` blocking-pool threads (work beyond them waits in the pool's queue), every
/// thread at nice value `nice` (0: unchanged).
///
/// # Errors
/// The runtime's threads could not be made.
pub fn lower_runtime(
    name: &'static str,
    workers: usize,
    max_blocking: usize,
    nice: i32,
) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .max_blocking_threads(max_blocking.max(1))
        .thread_name(name)
        .on_thread_start(move || {
            if nice > 0 {
                if let Err(e) = lower_current_thread(nice) {
                    tracing::warn!(target: "tasks", runtime = name, nice, error = %e, "thread priority unchanged");
                }
            }
        })
        .enable_all()
        .build()
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_lowered_runtime_runs_its_tasks_and_blocking_work_at_the_nice_value() {
        let base = current_thread_nice();
        let rt = lower_runtime("test-low", 1, 2, 7).expect("runtime");
        let (worker, blocking) = rt.block_on(async {
            let worker = tokio::spawn(async { current_thread_nice() }).await.expect("task");
            let blocking =
                tokio::task::spawn_blocking(current_thread_nice).await.expect("blocking");
            (worker, blocking)
        });
        assert_eq!(worker, base.max(7));
        assert_eq!(blocking, worker);
        // The thread that built it is untouched.
        assert_eq!(current_thread_nice(), base);
    }
}
