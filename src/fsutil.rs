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
//! - [`read_text`]: a file the program reads as input (a preset, a lecture, a sweep file, a
//!   data set) is read only when it is a regular file within its kind's size limit
//!   ([`TEXT_FILES`], [`DATA_FILES`]), refused before reading otherwise: `/dev/zero`, a pipe
//!   or a 3 GB file named by mistake cannot exhaust the machine.
//! - [`inside`]: a path a shared file names (a lecture's steps and data) is resolved inside
//!   that file's folder, and refused when it is absolute or leads out of it.
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

/// A kind of input file and the most bytes the program reads of one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputLimit {
    /// The kind, plural, as messages name it ("data files").
    pub what: &'static str,
    /// The largest size read, in bytes.
    pub bytes: u64,
}

/// Presets, lectures and sweep files (RON text): at most 4 MB. The largest preset the app
/// writes, a drawn data set of 5,000 points, is about 150 kB; 4 MB leaves room for a lecture
/// of many inline presets.
pub const TEXT_FILES: InputLimit = InputLimit {
    what: "preset, lecture and sweep files",
    bytes: 4_000_000,
};

/// Data files of MLP presets (CSV, `x,y,label` lines): at most 64 MB, some three million
/// points, far more than a network posterior on two inputs runs on interactively.
pub const DATA_FILES: InputLimit = InputLimit {
    what: "data files",
    bytes: 64_000_000,
};

/// Why an input file was not read.
#[derive(Debug)]
pub struct InputError {
    /// The path as given.
    pub path: PathBuf,
    /// What is wrong with it.
    pub kind: InputErrorKind,
}

/// What is wrong with an input file.
#[derive(Debug)]
pub enum InputErrorKind {
    /// It cannot be opened or read (missing, no permission): the system's reason.
    Io(std::io::Error),
    /// It is no regular file (a folder, a device, a pipe, a socket); the name of what it is.
    NotRegular(&'static str),
    /// It is larger than its kind's limit.
    TooLarge {
        /// Its size in bytes, when known before reading (a `/proc` file says 0 and is then
        /// found larger by reading up to the limit).
        bytes: Option<u64>,
        /// The limit it exceeds.
        limit: InputLimit,
    },
    /// It is not UTF-8 text; the offset of the first byte that is not.
    NotText(usize),
}

impl InputError {
    /// Whether the file does not exist (a caller may then look elsewhere, e.g. for a shipped
    /// preset of that name).
    pub fn is_not_found(&self) -> bool {
        matches!(&self.kind, InputErrorKind::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }

    /// The message for a caller that names the path already (`x.ron:1:1: cannot read the
    /// preset: …`): the system's reason alone for a file that cannot be read, else the
    /// whole message, which reads as a sentence about the path.
    pub fn reason(&self) -> String {
        match &self.kind {
            InputErrorKind::Io(e) => e.to_string(),
            _ => self.to_string(),
        }
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = shown(&self.path.to_string_lossy());
        match &self.kind {
            InputErrorKind::Io(e) => write!(f, "cannot read {path}: {e}"),
            InputErrorKind::NotRegular(what) => {
                write!(f, "{path} is not a regular file (it is {what})")
            }
            InputErrorKind::TooLarge { bytes, limit } => write!(
                f,
                "{path} {}; {} are limited to {}",
                match bytes {
                    Some(bytes) => format!("is {}", byte_size(*bytes)),
                    None => format!("holds more than {}", byte_size(limit.bytes)),
                },
                limit.what,
                byte_size(limit.bytes)
            ),
            InputErrorKind::NotText(at) => {
                write!(f, "{path} is not UTF-8 text (byte {at} is not)")
            }
        }
    }
}

impl std::error::Error for InputError {}

/// A size for a message, in decimal units: `12 bytes`, `950 kB`, `3.1 GB`.
pub fn byte_size(bytes: u64) -> String {
    const UNITS: [(&str, f64); 4] = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)];
    let b = bytes as f64;
    for (unit, size) in UNITS {
        if b >= size {
            let v = b / size;
            return if v < 10.0 && v.fract() != 0.0 {
                format!("{v:.1} {unit}")
            } else {
                format!("{v:.0} {unit}")
            };
        }
    }
    format!("{bytes} bytes")
}

/// A path or name as echoed in a message: control characters (a terminal's escape
/// sequences, a newline) escaped, and a very long one cut with an ellipsis, so that the
/// message is one readable line.
fn shown(text: &str) -> String {
    // Real paths are far shorter; a longer one would fill the screen.
    const SHOWN: usize = 1000;
    let mut out: String = text
        .chars()
        .take(SHOWN)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_debug().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if text.chars().count() > SHOWN {
        out.push('…');
    }
    out
}

/// What a file that is not a regular one is, for a message.
fn file_kind(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_fifo() {
            return "a named pipe";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a folder"
    } else {
        "neither a file nor a folder"
    }
}

/// Reads the text of the input file `path` when it is a regular file of at most
/// `limit.bytes` bytes; a folder, a device (`/dev/zero`), a pipe or a larger file is
/// refused before a byte is read, naming the path, what it is and the limit. Links are
/// followed. The file is opened without waiting on a pipe swapped in after the check, and
/// read no further than the limit (a file that grows, or a `/proc` file whose size says 0).
/// A leading UTF-8 byte-order mark is kept (the parsers skip it).
pub fn read_text(path: &Path, limit: InputLimit) -> Result<String, InputError> {
    let refuse = |kind| InputError {
        path: path.to_owned(),
        kind,
    };
    let check = |meta: &std::fs::Metadata| {
        if !meta.is_file() {
            Err(refuse(InputErrorKind::NotRegular(file_kind(
                meta.file_type(),
            ))))
        } else if meta.len() > limit.bytes {
            Err(refuse(InputErrorKind::TooLarge {
                bytes: Some(meta.len()),
                limit,
            }))
        } else {
            Ok(meta.len())
        }
    };
    check(&std::fs::metadata(path).map_err(|e| refuse(InputErrorKind::Io(e)))?)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| refuse(InputErrorKind::Io(e)))?;
    let size = check(&file.metadata().map_err(|e| refuse(InputErrorKind::Io(e)))?)?;
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit.bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(InputErrorKind::Io(e)))?;
    if bytes.len() as u64 > limit.bytes {
        return Err(refuse(InputErrorKind::TooLarge { bytes: None, limit }));
    }
    String::from_utf8(bytes)
        .map_err(|e| refuse(InputErrorKind::NotText(e.utf8_error().valid_up_to())))
}

/// `relative`, a path written in a file that is shared (a lecture's step or data file),
/// resolved inside `folder`: refused when it is absolute, when its `..` lead out of the
/// folder, or when it is (or passes through) a link to a place outside it. A path that does
/// not exist is returned resolved; reading it then says what is missing. The messages name
/// the path, never what a file outside holds.
pub fn inside(folder: &Path, relative: &str) -> Result<PathBuf, String> {
    use std::path::Component;
    let written = Path::new(relative);
    let name = shown(relative);
    let place = shown(&folder.to_string_lossy());
    let place = if place.is_empty() { ".".into() } else { place };
    if written.has_root() || written.is_absolute() {
        return Err(format!(
            "\"{name}\" is an absolute path: give a path relative to {place}, inside it"
        ));
    }
    let mut depth = 0usize;
    for component in written.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir if depth > 0 => depth -= 1,
            _ => {
                return Err(format!(
                    "\"{name}\" leads out of {place}: give a path inside it"
                ));
            }
        }
    }
    let joined = folder.join(written);
    // The working directory is the folder `""` names, which `canonicalize` does not take.
    let root = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    if let (Ok(root), Ok(target)) = (root.canonicalize(), root.join(written).canonicalize())
        && !target.starts_with(&root)
    {
        return Err(format!(
            "\"{name}\" leads out of {place} through a link: give a file inside it"
        ));
    }
    Ok(joined)
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

    /// A scratch folder of this process for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("atmc-lab-fsutil-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn input_files_are_regular_and_within_their_limit_or_refused_before_reading() {
        let dir = scratch("read");
        let small = InputLimit {
            what: "test files",
            bytes: 10,
        };
        let file = dir.join("ok.txt");
        std::fs::write(&file, "\u{feff}text").unwrap();
        assert_eq!(read_text(&file, small).unwrap(), "\u{feff}text");
        // A device: refused by what it is, before reading (reading /dev/zero never ends).
        let e = read_text(Path::new("/dev/zero"), DATA_FILES).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero is not a regular file (it is a character device)"
        );
        // A folder, a missing file, a file over the limit, bytes that are not text.
        let e = read_text(&dir, small).unwrap_err().to_string();
        assert!(e.ends_with("is not a regular file (it is a folder)"), "{e}");
        let e = read_text(&dir.join("none"), small).unwrap_err();
        assert!(e.is_not_found(), "{e}");
        let big = dir.join("big.txt");
        std::fs::write(&big, "x".repeat(3_100)).unwrap();
        let e = read_text(&big, small).unwrap_err().to_string();
        assert!(
            e.ends_with("big.txt is 3.1 kB; test files are limited to 10 bytes"),
            "{e}"
        );
        let binary = dir.join("binary");
        std::fs::write(&binary, b"ab\xff").unwrap();
        let e = read_text(&binary, small).unwrap_err().to_string();
        assert!(e.ends_with("is not UTF-8 text (byte 2 is not)"), "{e}");
        // A named pipe is refused, not waited on. (Made in this process: a child process
        // forked now would hold, until it execs, the lock another test here takes.)
        let fifo = dir.join("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `name` is a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let e = read_text(&fifo, small).unwrap_err().to_string();
        assert!(e.ends_with("(it is a named pipe)"), "{e}");
        // A /proc file says it is empty; it is read no further than the limit.
        let e = read_text(Path::new("/proc/self/maps"), small)
            .unwrap_err()
            .to_string();
        assert!(e.contains("test files are limited to 10 bytes"), "{e}");
        assert_eq!(byte_size(64_000_000), "64 MB");
        assert_eq!(byte_size(3_100_000_000), "3.1 GB");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn paths_are_resolved_inside_their_folder_or_refused() {
        let dir = scratch("inside");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a.ron"), "x").unwrap();
        assert_eq!(inside(&dir, "sub/a.ron").unwrap(), dir.join("sub/a.ron"));
        assert_eq!(
            inside(&dir, "sub/../sub/./a.ron").unwrap(),
            dir.join("sub/../sub/./a.ron")
        );
        // Missing files are resolved; reading them says what is missing.
        assert_eq!(inside(&dir, "none.ron").unwrap(), dir.join("none.ron"));
        let e = inside(&dir, "/etc/passwd").unwrap_err();
        assert!(e.starts_with("\"/etc/passwd\" is an absolute path"), "{e}");
        let e = inside(&dir, "sub/../../x.ron").unwrap_err();
        assert!(e.starts_with("\"sub/../../x.ron\" leads out of"), "{e}");
        // A link inside that points outside, to a file or through a folder.
        std::os::unix::fs::symlink("/etc/hostname", dir.join("link.ron")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
        for name in ["link.ron", "etc/hostname"] {
            let e = inside(&dir, name).unwrap_err();
            assert!(e.contains("through a link"), "{e}");
        }
        // Control characters are escaped in the message.
        let e = inside(&dir, "/\u{1b}[2J").unwrap_err();
        assert!(e.contains("\\u{1b}[2J") && !e.contains('\u{1b}'), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
