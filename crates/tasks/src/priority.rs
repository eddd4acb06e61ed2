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

/// Moves the calling thread to Linux's `SCHED_IDLE` policy: it runs only on a core no other
/// thread of a normal policy wants (any such thread that wakes preempts it at once), the
/// strongest priority below the others' that needs no privilege.
///
/// # Errors
/// The OS's refusal (`sched_setscheduler`); on other systems nothing is done.
pub fn idle_current_thread() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: a plain system call on the calling thread (pid 0) with a valid parameter.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether the calling thread runs under `SCHED_IDLE` (Linux; false elsewhere).
pub fn current_thread_is_idle() -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: a plain system call on the calling thread.
    return unsafe { libc::sched_getscheduler(0) } == libc::SCHED_IDLE;
    #[cfg(not(target_os = "linux"))]
    false
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
/// thread at nice value `nice` (0: unchanged) and, with `sched_idle`, under `SCHED_IDLE`
/// ([`idle_current_thread`]).
///
/// # Errors
/// The runtime's threads could not be made.
pub fn lower_runtime(
    name: &'static str,
    workers: usize,
    max_blocking: usize,
    nice: i32,
    sched_idle: bool,
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
            if sched_idle {
                if let Err(e) = idle_current_thread() {
                    tracing::warn!(target: "tasks", runtime = name, error = %e, "thread policy unchanged");
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
        let rt = lower_runtime("test-low", 1, 2, 7, false).expect("runtime");
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

    #[test]
    fn an_idle_runtime_runs_its_tasks_and_blocking_work_under_sched_idle() {
        let rt = lower_runtime("test-idle", 1, 2, 0, true).expect("runtime");
        let (worker, blocking) = rt.block_on(async {
            let worker = tokio::spawn(async { current_thread_is_idle() }).await.expect("task");
            let blocking =
                tokio::task::spawn_blocking(current_thread_is_idle).await.expect("blocking");
            (worker, blocking)
        });
        assert!(worker && blocking);
        assert!(!current_thread_is_idle(), "the thread that built it is untouched");
    }
}
