//! Training behind a window: a thread pool of its own whose threads the scheduler serves
//! after everything else.
//!
//! The trainer parallelises over rayon (images of a batch, GEMM panels). On rayon's global
//! pool it would compete on equal terms with the chains of the 2-D view, which share that
//! pool, and with the UI thread, so the view loses frames while a network trains. Here it
//! gets a pool as wide as the machine, so it runs at full speed when the chains are paused,
//! but every one of its threads runs at a lower priority (nice [`NICENESS`] on Linux), so
//! while the window and the chains want the cores, they get them first.

/// The niceness of the training threads: weight 110 against 1024 for a thread at the
/// default 0 (Linux's CFS), so a busy UI or chain thread gets about nine tenths of a core
/// it shares with training.
pub const NICENESS: i32 = 10;

/// A pool for background training: one thread per core, each at niceness [`NICENESS`]
/// where the system supports per-thread priorities (Linux). Run the trainer inside it with
/// [`rayon::ThreadPool::install`].
pub fn background_pool() -> anyhow::Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(std::thread::available_parallelism().map_or(1, |n| n.get()))
        .thread_name(|i| format!("atmc-lab training {i}"))
        .start_handler(|_| lower_this_thread())
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the training threads: {e}"))
}

/// Lowers the calling thread's scheduling priority. Best effort: a system that refuses
/// leaves training at normal priority, which is slower for the window but still correct.
#[cfg(target_os = "linux")]
fn lower_this_thread() {
    // On Linux, PRIO_PROCESS with a thread id sets that thread's niceness alone (a
    // documented deviation from POSIX, where it would apply to the whole process).
    // SAFETY: gettid and setpriority take no pointers and only change this thread.
    // A thread never gains priority here: a process already started nicer keeps its niceness.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, current.max(NICENESS));
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_this_thread() {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Work run in the pool sees the pool's threads, all at the lowered priority: the
    /// trainer's parallel loops (which ask rayon for the current pool) stay inside it.
    #[test]
    fn the_pool_runs_its_work_at_a_lower_priority() {
        let pool = background_pool().unwrap();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (inside, nice) = pool.install(|| {
            let nice = niceness_of_this_thread();
            (rayon::current_num_threads(), nice)
        });
        assert_eq!(inside, threads);
        if cfg!(target_os = "linux") {
            assert_eq!(nice, NICENESS.max(niceness_of_process()));
        }
    }

    #[cfg(target_os = "linux")]
    fn niceness_of_this_thread() -> i32 {
        // SAFETY: plain system calls on the calling thread.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[cfg(not(target_os = "linux"))]
    fn niceness_of_this_thread() -> i32 {
        0
    }

    fn niceness_of_process() -> i32 {
        #[cfg(target_os = "linux")]
        // SAFETY: a plain system call.
        unsafe {
            libc::getpriority(libc::PRIO_PROCESS, 0)
        }
        #[cfg(not(target_os = "linux"))]
        0
    }
}
