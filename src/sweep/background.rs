//! A sweep run on a background thread while a front end keeps drawing: the thread runs
//! [`super::run_shard_until`] (waiting for the shard's lock a while) into a shard file, and a [`super::Follower`] reads the records
//! back as they are appended. The app's Sweeps and Thermodynamics views run their sweeps
//! through it; it knows nothing of the UI.

use super::record::short_hash;
use super::{Follower, Merged, Shard, ShardReport, SweepHashes, run_shard_patiently};
use crate::engine::BackendChoice;
use crate::preset::sweep_file::Sweep;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A sweep running on a background thread, writing its shard file in a folder of the
/// front end's sweeps folder (resumed when the same sweep starts again).
pub struct BackgroundSweep {
    thread: Option<std::thread::JoinHandle<anyhow::Result<ShardReport>>>,
    cancel: Arc<AtomicBool>,
    progress: Arc<Mutex<(usize, usize)>>,
    /// The shard file it writes.
    pub file: PathBuf,
    /// Reads what the thread appends to `file`.
    follower: Follower,
    last_read: Instant,
}

/// What [`BackgroundSweep::poll`] found.
pub struct Polled {
    /// The table, when records were appended since the last poll.
    pub grown: Option<Merged>,
    /// Once, when the thread has ended: points done and total, or the error.
    pub finished: Option<Result<(usize, usize), String>>,
}

impl BackgroundSweep {
    /// The folder of `sweeps` a sweep named `name` runs in: named by its content too, so
    /// that an edited sweep starts afresh instead of being refused for holding another
    /// sweep's points.
    /// The folder an earlier release named by its hash is kept when it exists: it resumes.
    pub fn folder(sweeps: &Path, loaded: &Sweep, name: &str) -> PathBuf {
        let hashes = SweepHashes::of(loaded);
        let named = |hash: &str| sweeps.join(format!("{name}-{}", short_hash(hash)));
        let earlier = named(&hashes.v1);
        if earlier.is_dir() {
            earlier
        } else {
            named(&hashes.current)
        }
    }

    /// Starts `loaded` in its [folder](Self::folder) of `sweeps`.
    pub fn start(
        loaded: Sweep,
        sweeps: &Path,
        name: &str,
        backend: BackendChoice,
    ) -> Result<Self, String> {
        let dir = Self::folder(sweeps, &loaded, name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let cancel = Arc::new(AtomicBool::new(false));
        let progress = Arc::new(Mutex::new((0, loaded.points)));
        let (c, p) = (cancel.clone(), progress.clone());
        let worker_dir = dir.clone();
        let thread = std::thread::Builder::new()
            .name("sweep".into())
            .spawn(move || {
                // A restarted sweep waits (a while) for the previous run's thread, which
                // holds the shard's lock until the point in flight is written.
                let patience = Duration::from_secs(120);
                run_shard_patiently(
                    &loaded,
                    Shard::ALL,
                    &worker_dir,
                    backend,
                    patience,
                    &mut |d, t| {
                        *p.lock().expect("progress") = (d, t);
                        !c.load(Ordering::Relaxed)
                    },
                )
            })
            .map_err(|e| format!("cannot start the sweep: {e}"))?;
        let file = Shard::ALL.file(&dir);
        Ok(Self {
            thread: Some(thread),
            cancel,
            progress,
            follower: Follower::new(&file),
            file,
            last_read: Instant::now(),
        })
    }

    /// Reads what was appended to the file (every 400 ms, and once more at the end) and
    /// notices the thread's end.
    pub fn poll(&mut self) -> Polled {
        let finished = self.finished();
        let due = self.last_read.elapsed() > Duration::from_millis(400);
        let grown = (due || finished.is_some())
            .then(|| {
                self.last_read = Instant::now();
                self.follower.grown()
            })
            .flatten();
        Polled { grown, finished }
    }

    /// Asks the thread to stop after its current point.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// (points done, points) while it runs.
    pub fn progress(&self) -> Option<(usize, usize)> {
        self.thread
            .is_some()
            .then(|| *self.progress.lock().expect("progress"))
    }

    /// The thread's result once it has ended (once): points done and total, or the error.
    fn finished(&mut self) -> Option<Result<(usize, usize), String>> {
        if !self.thread.as_ref().is_some_and(|t| t.is_finished()) {
            return None;
        }
        let total = self.progress.lock().expect("progress").1;
        let result = self
            .thread
            .take()
            .expect("checked")
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the sweep thread failed")));
        Some(
            result
                .map(|r| (r.ran + r.skipped, total))
                .map_err(|e| format!("{e:#}")),
        )
    }
}

impl Drop for BackgroundSweep {
    fn drop(&mut self) {
        // The thread stops after its current point; its file keeps what was done.
        self.cancel();
    }
}
