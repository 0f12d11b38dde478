//! The two file-system mechanisms every writer in the crate uses, so that no final path is
//! ever left partial and no two processes write the same files:
//!
//! - [`AtomicFile`] / [`write_atomic`]: a final path is written under a temporary name in the
//!   same folder, synced, and renamed over the final name only when complete. A failure, a
//!   kill or a full disk leaves the final path as it was (absent, or the previous complete
//!   file); a failure removes the temporary file, a kill may leave a hidden `.NAME.PID.tmp`.
//! - [`Lock`]: an advisory lock (`flock`) on a lock file, held for a writer's lifetime and
//!   released by the operating system when the process ends, however it ends. The holder's
//!   pid and host are written into the lock file, so a refused writer can name it. A refusal
//!   is a [`Refused`] error, which the command line reports with exit status 2.
//!
//! On network file systems: `flock` is advisory. On Linux NFS (v4, and v3 with NLM) it is
//! emulated with POSIX byte-range locks and holds between machines; on NFS mounted with
//! `nolock` or `local_lock=flock|all`, and on Lustre mounted with `localflock`, it is local
//! to one machine, so two machines can both take it. Lustre mounted with `flock` holds
//! between machines. Atomic renames hold on all of them.
//!
//! This module uses nothing else in the crate, so every layer may use it.

use anyhow::Context;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// A file or folder is being written by another process (or cannot be locked): a problem of
/// the input, which the command line reports with exit status 2.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// An advisory lock held until it is dropped or the process ends.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// This machine's host name, for the lock file (`unknown host` when none can be read).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown host".to_owned())
}

/// Takes the lock `lock_path` (created if needed, its folder too) for `what` (a phrase such as
/// "--out results, shard 1 of 4"), or refuses at once when another process holds it, naming
/// that process as its lock file says.
pub fn lock(lock_path: &Path, what: &str) -> anyhow::Result<Lock> {
    if let Some(dir) = lock_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| refused(format!("{what}: cannot create {}: {e}", dir.display())))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(lock_path)
        .map_err(|e| refused(format!("{what}: cannot write {}: {e}", lock_path.display())))?;
    match file.try_lock() {
        Ok(()) => {
            // The holder's name, for a refused writer to report; the lock is the flock, not
            // this text, so a stale text after a kill misleads nobody.
            let holder = format!("pid {} on host {}\n", std::process::id(), host_name());
            file.set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| file.write_all(holder.as_bytes()))
                .and_then(|()| file.sync_data())
                .with_context(|| format!("cannot write {}", lock_path.display()))?;
            Ok(Lock { _file: file })
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            // The holder writes its name right after taking the lock: a refusal in between
            // reads an empty file.
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let holder = if holder.is_empty() {
                "another process".to_owned()
            } else {
                format!("another process ({holder})")
            };
            Err(refused(format!(
                "{what}: {holder} is writing there (it holds the lock {}); wait for it to end, or \
                 choose another output",
                lock_path.display()
            )))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(refused(format!(
            "{what}: cannot lock {}: {e} (a file system without locks: choose a local output \
             folder)",
            lock_path.display()
        ))),
    }
}

fn refused(message: String) -> anyhow::Error {
    anyhow::Error::new(Refused(message))
}

/// A file written under a temporary name and renamed to its final path by
/// [`AtomicFile::commit`]; dropped without a commit, it removes the temporary file.
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<std::io::BufWriter<File>>,
    temp: PathBuf,
    path: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary file `.NAME.PID.tmp` beside `path` (the pid keeps two writers'
    /// temporary files apart). Fails when the folder cannot be written, before any work.
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = path
            .file_name()
            .with_context(|| format!("{}: not a file name", path.display()))?;
        let temp = dir.join(format!(
            ".{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        let file =
            File::create(&temp).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Self {
            file: Some(std::io::BufWriter::new(file)),
            temp,
            path: path.to_owned(),
        })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes and syncs the temporary file and renames it over the final path (and syncs the
    /// folder, so the rename survives a power cut). On failure the temporary file is removed
    /// and the final path is left as it was.
    pub fn commit(mut self) -> anyhow::Result<()> {
        let writer = self.file.take().expect("committed once");
        let file = writer
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all().map(|()| f))
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        drop(file);
        std::fs::rename(&self.temp, &self.path)
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty())
            && let Ok(d) = File::open(dir)
        {
            // Best effort: some file systems refuse to sync a folder.
            let _ = d.sync_all();
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.as_mut().expect("not committed").write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().expect("not committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Writes `bytes` to `path` atomically ([`AtomicFile`]).
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes.as_ref())
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_and_lock() {
        let dir = std::env::temp_dir().join(format!("atmc-lab-fsutil-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.txt");
        write_atomic(&path, "one").unwrap();
        // An uncommitted file leaves the final path as it was, and no temporary file.
        let mut f = AtomicFile::create(&path).unwrap();
        f.write_all(b"partial").unwrap();
        drop(f);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // A second lock on the same file is refused and names the holder.
        let held = lock(&dir.join(".lock"), "test").unwrap();
        let e = lock(&dir.join(".lock"), "test").unwrap_err();
        let message = e.to_string();
        assert!(e.downcast_ref::<Refused>().is_some(), "{message}");
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        drop(held);
        lock(&dir.join(".lock"), "test").unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
