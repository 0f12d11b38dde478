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
//! - [`FolderWriter`]: a folder written whole (draws, handouts, recorded frames). Its files
//!   are written into a temporary sibling `.NAME.PID.tmp`, with a marker of atmc-lab's own
//!   ([`MANIFEST`]: the kind of output and every file written), and moved into place only when
//!   complete. It replaces only an absent destination, an empty folder or an earlier output
//!   of the same kind holding exactly what its manifest lists, and keeps that earlier output
//!   until the new one is whole; it never deletes a file its manifest does not name.
//! - [`read_text`]: a file the program reads as input (a preset, a lecture, a sweep file, a
//!   data set) is read only when it is a regular file within its kind's size limit
//!   ([`TEXT_FILES`], [`DATA_FILES`]), refused before reading otherwise: `/dev/zero`, a pipe
//!   or a 3 GB file named by mistake cannot exhaust the machine.
//! - [`inside`]: a path a shared file names (a lecture's steps and data) is resolved inside
//!   that file's folder, and refused when it is absolute or leads out of it.
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
    file: File,
    /// The lock file, removed on drop (still locked) when it sits outside the folder it
    /// guards ([`FolderWriter`]'s lock beside its destination).
    remove: Option<PathBuf>,
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Removed while the lock is held: a writer that opened it meanwhile finds it gone
        // once it gets the lock, and takes the file now at the path ([`lock_beside`]).
        if let Some(path) = self.remove.take() {
            let _ = std::fs::remove_file(path);
        }
    }
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
            Ok(Lock { file, remove: None })
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

/// Takes the lock `lock_path` like [`lock`], for a lock file that sits beside what it guards
/// and is removed when the lock is dropped: a lock file removed by its previous holder after
/// this process opened it is no lock, so the file now at the path is taken instead.
fn lock_beside(lock_path: &Path, what: &str) -> anyhow::Result<Lock> {
    loop {
        let mut held = lock(lock_path, what)?;
        if same_file(&held.file, lock_path) {
            held.remove = Some(lock_path.to_owned());
            return Ok(held);
        }
    }
}

/// Whether `path` still names the open `file` (so that removing it removes this lock).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, _path: &Path) -> bool {
    true
}

// ---------------------------------------------------------------------------------------------
// Folders written whole
// ---------------------------------------------------------------------------------------------

/// The marker atmc-lab writes into every folder it writes whole: a JSON object naming the
/// kind of output and listing every file atmc-lab wrote there. A folder without it, or
/// holding anything it does not list, is not atmc-lab's to replace.
pub const MANIFEST: &str = ".atmc-lab-output.json";

/// Foreign entries a refusal names (a folder of user files may hold thousands).
const FOREIGN_NAMED: usize = 5;

/// The largest manifest read: far more than any output lists (400 frames take 10 kB).
const MANIFEST_MAX_BYTES: u64 = 16 << 20;

/// What kind of output a folder written whole holds (its manifest's `atmc_lab_output`), and
/// how messages speak of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputKind {
    /// The kind, in the manifest and in messages ("draws", "handout", …).
    pub name: &'static str,
    /// A new folder's name to suggest when a destination is refused.
    pub example: &'static str,
}

/// The content of [`MANIFEST`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Manifest {
    /// The kind of output ([`OutputKind::name`]).
    atmc_lab_output: String,
    /// The program and version that wrote it.
    written_by: String,
    /// False while the folder is being written (a temporary folder left by a kill).
    complete: bool,
    /// Every file written, relative to the folder, `/`-separated.
    files: Vec<String>,
}

impl Manifest {
    fn new(kind: OutputKind) -> Self {
        Self {
            atmc_lab_output: kind.name.to_owned(),
            written_by: format!("atmc-lab {}", env!("CARGO_PKG_VERSION")),
            complete: false,
            files: Vec::new(),
        }
    }

    /// The manifest of `dir`, when it has one that reads as atmc-lab's.
    fn read(dir: &Path) -> Option<Self> {
        let path = dir.join(MANIFEST);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > MANIFEST_MAX_BYTES {
            return None;
        }
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// The folders that hold listed files (every prefix of a listed path).
    fn folders(&self) -> std::collections::BTreeSet<String> {
        let mut folders = std::collections::BTreeSet::new();
        for file in &self.files {
            let mut end = 0;
            while let Some(slash) = file[end..].find('/') {
                end += slash;
                folders.insert(file[..end].to_owned());
                end += 1;
            }
        }
        folders
    }
}

/// What a destination holds, when it may take an output.
#[derive(Debug)]
enum Destination {
    /// Nothing: its folder exists.
    Absent,
    /// An empty folder.
    Empty,
    /// An earlier output of the same kind, holding only what its manifest lists.
    Ours,
}

/// A refusal of `destination` for `kind`: the path, the cause, and what to do.
fn refuse_destination(destination: &Path, kind: OutputKind, why: &str) -> anyhow::Error {
    refused(format!(
        "{}: {why}; name a new folder for the {}, e.g. {}",
        destination.display(),
        kind.name,
        kind.example
    ))
}

/// The folder a destination lies in (`.` for a bare name).
fn parent_of(destination: &Path) -> &Path {
    destination
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Why `destination` cannot take `kind`, or what it holds: the rules of [`FolderWriter`].
/// Reads only; never follows a link at the destination itself.
fn inspect(destination: &Path, kind: OutputKind) -> anyhow::Result<Destination> {
    use std::path::Component;
    let refuse = |why: &str| refuse_destination(destination, kind, why);
    // `.`, `..`, `/` and `x/..` name a folder that holds other things (the working folder,
    // a parent, the root): never one to replace whole.
    match destination.components().next_back() {
        Some(Component::Normal(_)) => {}
        Some(Component::CurDir) => {
            return Err(refuse(
                "the working folder itself cannot be written as a whole: atmc-lab writes \
                 its outputs as a folder of their own",
            ));
        }
        _ => {
            return Err(refuse(
                "names no new folder (a parent folder or the root): atmc-lab writes its \
                 outputs as a folder of their own",
            ));
        }
    }
    let meta = match std::fs::symlink_metadata(destination) {
        Ok(meta) => meta,
        // Absent, or below a file (`a-file/x`): its folder says which.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            let parent = parent_of(destination);
            if !parent.is_dir() {
                let why = if parent.exists() {
                    "is not a folder"
                } else {
                    "does not exist"
                };
                return Err(refused(format!(
                    "cannot write {} to {}: its folder {} {why}; create it first or choose \
                     another place",
                    kind.name,
                    destination.display(),
                    parent.display()
                )));
            }
            return Ok(Destination::Absent);
        }
        Err(e) => return Err(refuse(&format!("cannot read it: {e}"))),
    };
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(destination)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "somewhere".to_owned());
        return Err(refuse(&format!(
            "is a symbolic link (to {target}), not a folder atmc-lab wrote"
        )));
    }
    if !meta.is_dir() {
        return Err(refused(format!(
            "{} is a file, not a folder for the {}: choose a new folder name, e.g. {}",
            destination.display(),
            kind.name,
            kind.example
        )));
    }
    // The working folder (however spelled), the home folder, or a folder holding the working
    // folder: a user's place, never replaced even when empty or atmc-lab's.
    if let Ok(canonical) = destination.canonicalize() {
        let home = std::env::var_os("HOME").and_then(|h| PathBuf::from(h).canonicalize().ok());
        if home.as_deref() == Some(canonical.as_path()) {
            return Err(refuse("is the home folder"));
        }
        if let Ok(cwd) = std::env::current_dir().and_then(|d| d.canonicalize())
            && cwd.starts_with(&canonical)
        {
            return Err(refuse(
                "is the working folder or holds it: atmc-lab writes its outputs as a folder \
                 of their own",
            ));
        }
    }
    let mut entries = sorted_entries(destination)
        .map_err(|e| refuse(&format!("cannot read it: {e}")))?
        .into_iter();
    let Some(first) = entries.next() else {
        return Ok(Destination::Empty);
    };
    let Some(manifest) = Manifest::read(destination) else {
        let mut named = vec![first];
        named.extend(entries.by_ref().take(FOREIGN_NAMED - 1));
        return Err(refuse(&format!(
            "holds files atmc-lab did not write ({}{}) and no marker {MANIFEST} of an earlier \
             output; atmc-lab writes only into a new folder, an empty one or one it wrote \
             before, and never deletes what it did not write",
            names(&named),
            if entries.next().is_some() {
                ", …"
            } else {
                ""
            }
        )));
    };
    if manifest.atmc_lab_output != kind.name {
        return Err(refuse(&format!(
            "holds atmc-lab's {}, not {}",
            manifest.atmc_lab_output, kind.name
        )));
    }
    let foreign = foreign_entries(destination, &manifest, FOREIGN_NAMED + 1);
    if !foreign.is_empty() {
        let more = foreign.len() > FOREIGN_NAMED;
        return Err(refuse(&format!(
            "an earlier {} of atmc-lab's now also holds files it did not write ({}{}); \
             move them out to replace it, or keep it",
            kind.name,
            names(&foreign[..foreign.len().min(FOREIGN_NAMED)]),
            if more { ", …" } else { "" }
        )));
    }
    Ok(Destination::Ours)
}

/// Names for a message, comma-separated.
fn names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names in `dir`, sorted (so a refusal names the same entries each time).
fn sorted_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut names = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| PathBuf::from(e.file_name())))
        .collect::<std::io::Result<Vec<_>>>()?;
    names.sort();
    Ok(names)
}

/// The first `limit` entries of `dir` (relative paths, in name order) that `manifest` does not
/// list: a file it does not name, a folder that holds none of its files, or anything that is
/// neither a file nor a folder (a link). Foreign folders are named, not entered.
fn foreign_entries(dir: &Path, manifest: &Manifest, limit: usize) -> Vec<PathBuf> {
    let files: std::collections::BTreeSet<&str> =
        manifest.files.iter().map(String::as_str).collect();
    let folders = manifest.folders();
    let mut foreign = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let Ok(entries) = sorted_entries(&dir.join(&relative)) else {
            foreign.push(relative);
            continue;
        };
        // In reverse onto the stack: visited in name order.
        for name in entries.into_iter().rev() {
            let path = relative.join(&name);
            let key = path
                .to_string_lossy()
                .replace(std::path::MAIN_SEPARATOR, "/");
            let Ok(meta) = std::fs::symlink_metadata(dir.join(&path)) else {
                continue;
            };
            let ours = if meta.is_file() {
                files.contains(key.as_str())
                    || (relative.as_os_str().is_empty() && is_manifest_name(&name))
            } else {
                meta.is_dir() && folders.contains(&key)
            };
            if !ours {
                foreign.push(path);
            } else if meta.is_dir() {
                pending.push(path);
            }
        }
        if foreign.len() >= limit {
            break;
        }
    }
    foreign.sort();
    foreign.truncate(limit);
    foreign
}

/// The manifest, or the temporary file it is written under ([`write_manifest`]).
fn is_manifest_name(name: &Path) -> bool {
    let name = name.to_string_lossy();
    name == MANIFEST || (name.starts_with(&format!(".{MANIFEST}.")) && name.ends_with(".tmp"))
}

/// Writes `manifest` into `dir` under a temporary name renamed over the final one; `sync`
/// for the final manifest (an in-progress one left by a power cut costs nothing).
fn write_manifest(dir: &Path, manifest: &Manifest, sync: bool) -> anyhow::Result<()> {
    let path = dir.join(MANIFEST);
    let bytes = serde_json::to_vec_pretty(manifest)?;
    if sync {
        return write_atomic(&path, bytes);
    }
    let temp = dir.join(format!(".{MANIFEST}.{}.tmp", std::process::id()));
    std::fs::write(&temp, bytes)
        .and_then(|()| std::fs::rename(&temp, &path))
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Removes from `dir` the files `manifest` lists (regular files only), the folders that held
/// them once empty, the manifest, and `dir` itself once empty. Returns what was left (paths
/// relative to `dir`): nothing atmc-lab did not write is removed.
fn remove_owned(dir: &Path, manifest: &Manifest) -> Vec<PathBuf> {
    for file in &manifest.files {
        let path = dir.join(file);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
            let _ = std::fs::remove_file(path);
        }
    }
    let mut folders: Vec<String> = manifest.folders().into_iter().collect();
    folders.sort_by_key(|f| std::cmp::Reverse(f.matches('/').count()));
    for folder in folders {
        // Fails, and leaves it, when it holds anything else.
        let _ = std::fs::remove_dir(dir.join(folder));
    }
    if let Ok(entries) = sorted_entries(dir) {
        for name in entries.iter().filter(|n| is_manifest_name(n)) {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => Vec::new(),
        Err(_) => sorted_entries(dir).unwrap_or_default(),
    }
}

/// A name beside `destination`: `.NAME.PID.SUFFIX`.
fn sibling(destination: &Path, pid: u32, suffix: &str) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(destination.file_name().unwrap_or_default());
    name.push(format!(".{pid}.{suffix}"));
    parent_of(destination).join(name)
}

/// The lock file of `destination` (beside it: the folder itself is swapped whole).
fn lock_path(destination: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(destination.file_name().unwrap_or_default());
    name.push(".lock");
    parent_of(destination).join(name)
}

/// Removes what killed writers of `destination` left beside it (`.NAME.PID.tmp` or `.old`
/// folders with atmc-lab's manifest), deleting only the files their manifests list. Called
/// with the destination's lock held: no live writer owns them.
fn clear_leftovers(destination: &Path) {
    let Some(name) = destination.file_name() else {
        return;
    };
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let prefix = prefix.as_encoded_bytes().to_vec();
    let Ok(entries) = std::fs::read_dir(parent_of(destination)) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let file_name = entry.file_name();
        let bytes = file_name.as_encoded_bytes();
        let Some(rest) = bytes.strip_prefix(prefix.as_slice()) else {
            continue;
        };
        let Some(pid) = rest
            .strip_suffix(b".tmp")
            .or_else(|| rest.strip_suffix(b".old"))
        else {
            continue;
        };
        let ours = !pid.is_empty()
            && pid.iter().all(u8::is_ascii_digit)
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if let Some(manifest) = ours.then(|| Manifest::read(&entry.path())).flatten() {
            remove_owned(&entry.path(), &manifest);
        }
    }
}

/// Checks, before any work, that `destination` may take an output of `kind` ([`FolderWriter`]'s
/// rules) and that its folder can be written. Creates and changes nothing. A refusal is a
/// [`Refused`] error.
pub fn check_folder(destination: &Path, kind: OutputKind) -> anyhow::Result<()> {
    inspect(destination, kind)?;
    let probe = sibling(destination, std::process::id(), "probe");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| {
            refused(format!(
                "cannot write {} to {}: its folder {} is not writable ({e})",
                kind.name,
                destination.display(),
                parent_of(destination).display()
            ))
        })?;
    let _ = std::fs::remove_file(probe);
    Ok(())
}

/// A folder written whole. [`FolderWriter::begin`] checks the destination, takes its lock and
/// makes the temporary folder; [`FolderWriter::write`] adds files; [`FolderWriter::commit`]
/// moves the whole folder into place. Dropped without a commit, it removes what it wrote.
///
/// The destination may be absent, an empty folder, or an earlier output of the same kind
/// holding exactly what its manifest lists; anything else is refused (a [`Refused`] error,
/// naming the first foreign entries), as are `.`, `..`, `/`, the home folder, a folder holding
/// the working folder and a symbolic link. An earlier output stays whole until the new one
/// is: the new folder is swapped in (on Linux atomically), then only the files the old
/// manifest lists are deleted. A kill leaves the destination as it was and, beside it, a
/// temporary folder that the next writer of the destination removes.
#[derive(Debug)]
pub struct FolderWriter {
    destination: PathBuf,
    kind: OutputKind,
    temp: PathBuf,
    manifest: Manifest,
    committed: bool,
    _lock: Lock,
}

/// What a commit left behind: entries of the replaced output that its manifest did not list
/// (put there while it was being replaced), kept in `folder`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Committed {
    /// The folder that keeps them (the earlier output's folder, under a hidden name).
    pub folder: Option<PathBuf>,
    /// The entries kept, relative to `folder`.
    pub kept: Vec<PathBuf>,
}

impl Committed {
    /// A sentence for the user when something was kept, else None.
    pub fn notice(&self) -> Option<String> {
        let folder = self.folder.as_ref()?;
        (!self.kept.is_empty()).then(|| {
            format!(
                "the replaced output also held {} that atmc-lab did not write: kept in {}",
                names(&self.kept),
                folder.display()
            )
        })
    }
}

impl FolderWriter {
    /// Checks `destination` for an output of `kind` (refused before anything is created),
    /// takes its lock (a second writer is refused, naming this process), checks again under
    /// the lock, clears what killed writers left, and makes the temporary folder.
    pub fn begin(destination: &Path, kind: OutputKind) -> anyhow::Result<Self> {
        check_folder(destination, kind)?;
        let lock = lock_beside(&lock_path(destination), &destination.display().to_string())?;
        inspect(destination, kind)?;
        clear_leftovers(destination);
        let temp = sibling(destination, std::process::id(), "tmp");
        std::fs::create_dir(&temp).map_err(|e| {
            refused(format!(
                "cannot write {} to {}: cannot create {} ({e})",
                kind.name,
                destination.display(),
                temp.display()
            ))
        })?;
        let writer = Self {
            destination: destination.to_owned(),
            kind,
            temp,
            manifest: Manifest::new(kind),
            committed: false,
            _lock: lock,
        };
        write_manifest(&writer.temp, &writer.manifest, false)?;
        Ok(writer)
    }

    /// Where the folder goes.
    pub fn destination(&self) -> &Path {
        &self.destination
    }

    /// The temporary folder being written.
    pub fn temporary(&self) -> &Path {
        &self.temp
    }

    /// Writes `bytes` to `relative` (a `/`-separated path inside the folder, its folders
    /// created), listed in the manifest before the file exists (so that a kill leaves
    /// nothing unlisted) and synced.
    pub fn write(&mut self, relative: &str, bytes: impl AsRef<[u8]>) -> anyhow::Result<()> {
        let valid = !relative.is_empty()
            && relative != MANIFEST
            && relative
                .split('/')
                .all(|part| !matches!(part, "" | "." | "..") && !part.contains('\\'));
        anyhow::ensure!(
            valid,
            "{relative}: not a file name inside the output folder"
        );
        let path = self.temp.join(relative);
        if !self.manifest.files.iter().any(|f| f == relative) {
            self.manifest.files.push(relative.to_owned());
            write_manifest(&self.temp, &self.manifest, false)?;
        }
        let shown = self.destination.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot write {}", shown.display()))?;
        }
        File::create(&path)
            .and_then(|mut f| f.write_all(bytes.as_ref()).and_then(|()| f.sync_all()))
            .with_context(|| format!("cannot write {}", shown.display()))
    }

    /// Moves the folder into place: the destination is checked again (it may have changed
    /// since [`Self::begin`]), then the new folder is renamed into place, or swapped with an
    /// earlier output whose listed files are then deleted. On failure the destination is
    /// left as it was.
    pub fn commit(mut self) -> anyhow::Result<Committed> {
        self.manifest.complete = true;
        self.manifest.files.sort();
        write_manifest(&self.temp, &self.manifest, true)?;
        sync_folder(&self.temp);
        let destination = self.destination.clone();
        let failed = |e: std::io::Error| {
            anyhow::anyhow!(
                "cannot move the new {} into {}: {e}",
                self.kind.name,
                destination.display()
            )
        };
        let committed = match inspect(&destination, self.kind)? {
            Destination::Absent => {
                rename_new(&self.temp, &destination).map_err(failed)?;
                Committed::default()
            }
            Destination::Empty => {
                // POSIX renames a folder over an empty one in one step (and fails if it is
                // no longer empty); elsewhere the empty folder goes first.
                #[cfg(unix)]
                std::fs::rename(&self.temp, &destination).map_err(failed)?;
                #[cfg(not(unix))]
                std::fs::remove_dir(&destination)
                    .and_then(|()| rename_new(&self.temp, &destination))
                    .map_err(failed)?;
                Committed::default()
            }
            Destination::Ours => {
                let old = swap_in(&self.temp, &destination).map_err(failed)?;
                // The manifest of the folder now swapped out, read again: it is the one
                // whose files are deleted.
                let kept = match Manifest::read(&old) {
                    Some(manifest) => remove_owned(&old, &manifest),
                    None => sorted_entries(&old).unwrap_or_default(),
                };
                Committed {
                    folder: (!kept.is_empty()).then_some(old),
                    kept,
                }
            }
        };
        self.committed = true;
        sync_folder(parent_of(&destination));
        Ok(committed)
    }
}

impl Drop for FolderWriter {
    fn drop(&mut self) {
        if !self.committed {
            remove_owned(&self.temp, &self.manifest);
        }
    }
}

/// Best effort: some file systems refuse to sync a folder.
fn sync_folder(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Renames `from` to `to`, failing if `to` exists (atomically on Linux).
fn rename_new(from: &Path, to: &Path) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        match renameat2(from, to, libc::RENAME_NOREPLACE) {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {}
            done => return done,
        }
    }
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "it appeared meanwhile",
        ));
    }
    std::fs::rename(from, to)
}

/// Swaps the new folder `new` with the earlier output at `destination`; returns where the
/// earlier output now is. On Linux one atomic exchange; elsewhere (or on a file system
/// without it) the earlier output is renamed aside first and put back if the new one cannot
/// take its place.
fn swap_in(new: &Path, destination: &Path) -> std::io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        match renameat2(new, destination, libc::RENAME_EXCHANGE) {
            Ok(()) => return Ok(new.to_owned()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {}
            Err(e) => return Err(e),
        }
    }
    let aside = sibling(destination, std::process::id(), "old");
    std::fs::rename(destination, &aside)?;
    if let Err(e) = std::fs::rename(new, destination) {
        let _ = std::fs::rename(&aside, destination);
        return Err(e);
    }
    Ok(aside)
}

#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let done = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Writes `bytes` to the first free name `name(1)`, `name(2)`, … in `dir`, never replacing a
/// file (the S key's screenshots: one file per press): the bytes are written and synced under
/// a temporary name, then linked to the first name not taken, which fails rather than
/// replace. Returns the path written.
pub fn write_new(
    dir: &Path,
    name: impl Fn(u32) -> String,
    bytes: impl AsRef<[u8]>,
) -> anyhow::Result<PathBuf> {
    let first = dir.join(name(1));
    let temp = dir.join(format!(".{}.{}.tmp", name(1), std::process::id()));
    std::fs::write(&temp, bytes.as_ref())
        .and_then(|()| File::open(&temp)?.sync_all())
        .with_context(|| format!("cannot write {}", first.display()))?;
    let result = (|| {
        for k in 1..=100_000 {
            let path = dir.join(name(k));
            match link_new(&temp, &path) {
                Ok(()) => return Ok(path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot write {}", path.display()));
                }
            }
        }
        anyhow::bail!(
            "cannot write {}: 100000 names like it are taken in {}",
            first.display(),
            dir.display()
        )
    })();
    let _ = std::fs::remove_file(&temp);
    result
}

/// Makes `to` name the file `from` without replacing anything at `to`: a hard link, or (where
/// the file system has none) the name claimed with `create_new`, then `from` renamed over it.
fn link_new(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(to)?;
            std::fs::rename(from, to)
        }
        done => done,
    }
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

    const KIND: OutputKind = OutputKind {
        name: "test output",
        example: "out",
    };

    /// A fresh scratch folder for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("atmc-lab-fsutil-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Every file under `dir` with its content, relative paths in order.
    fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut pending = vec![dir.to_owned()];
        while let Some(d) = pending.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    pending.push(path);
                } else {
                    let bytes = std::fs::read(&path).unwrap();
                    out.push((path.strip_prefix(dir).unwrap().to_owned(), bytes));
                }
            }
        }
        out.sort();
        out
    }

    fn write_output(destination: &Path, files: &[(&str, &str)]) -> anyhow::Result<Committed> {
        let mut writer = FolderWriter::begin(destination, KIND)?;
        for (name, text) in files {
            writer.write(name, text)?;
        }
        writer.commit()
    }

    fn refusal(result: anyhow::Result<impl std::fmt::Debug>) -> String {
        let e = result.unwrap_err();
        assert!(
            e.downcast_ref::<Refused>().is_some(),
            "not a refusal: {e:#}"
        );
        format!("{e:#}")
    }

    #[test]
    fn a_folder_is_written_whole_and_replaces_only_its_own() {
        let dir = scratch("whole");
        let out = dir.join("out");
        write_output(
            &out,
            &[("a.txt", "one"), ("sub/b.txt", "two"), ("c.txt", "3")],
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join("sub/b.txt")).unwrap(),
            "two"
        );
        let manifest = Manifest::read(&out).unwrap();
        assert!(manifest.complete);
        assert_eq!(manifest.files, ["a.txt", "c.txt", "sub/b.txt"]);
        // Only the folder is left beside it: no temporary folder, no lock file.
        assert_eq!(sorted_entries(&dir).unwrap(), [PathBuf::from("out")]);
        // An earlier output of its own is replaced whole: a file the new one does not write
        // (c.txt, a stale picture) is gone.
        let committed = write_output(&out, &[("a.txt", "new"), ("sub/b.txt", "new")]).unwrap();
        assert_eq!(committed, Committed::default());
        let names: Vec<PathBuf> = tree(&out).into_iter().map(|(p, _)| p).collect();
        assert_eq!(
            names,
            [PathBuf::from(MANIFEST), "a.txt".into(), "sub/b.txt".into()]
        );
        assert_eq!(sorted_entries(&dir).unwrap(), [PathBuf::from("out")]);
        // A file added into it by hand makes it the user's: refused, named, left as it was.
        std::fs::write(out.join("sub/notes.txt"), "mine").unwrap();
        let before = tree(&out);
        let message = refusal(write_output(&out, &[("a.txt", "third")]));
        assert!(message.contains("sub/notes.txt"), "{message}");
        assert!(message.contains("e.g. out"), "{message}");
        assert_eq!(tree(&out), before);
        assert_eq!(sorted_entries(&dir).unwrap(), [PathBuf::from("out")]);
        // Another kind of atmc-lab output is not this one's to replace.
        std::fs::remove_file(out.join("sub/notes.txt")).unwrap();
        let other = OutputKind {
            name: "other output",
            example: "x",
        };
        let message = refusal(FolderWriter::begin(&out, other));
        assert!(
            message.contains("holds atmc-lab's test output"),
            "{message}"
        );
        // An empty folder takes an output.
        let empty = dir.join("empty");
        std::fs::create_dir(&empty).unwrap();
        write_output(&empty, &[("a.txt", "one")]).unwrap();
        assert_eq!(std::fs::read_to_string(empty.join("a.txt")).unwrap(), "one");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn destinations_that_are_not_ours_are_refused_and_left_untouched() {
        let dir = scratch("refused");
        // A folder of user files shaped like an earlier export (no marker of atmc-lab's).
        let user = dir.join("user");
        std::fs::create_dir_all(user.join("posterior")).unwrap();
        std::fs::write(user.join(".zgroup"), "{}").unwrap();
        std::fs::write(user.join("precious.txt"), "keep").unwrap();
        let before = tree(&user);
        let message = refusal(FolderWriter::begin(&user, KIND));
        assert!(
            message.contains(".zgroup, posterior, precious.txt"),
            "{message}"
        );
        assert!(refusal(check_folder(&user, KIND)).contains("did not write"));
        // A link to it, a file, the working folder, parents and the root.
        let link = dir.join("link");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&user, &link).unwrap();
            assert!(refusal(FolderWriter::begin(&link, KIND)).contains("symbolic link"));
        }
        let file = dir.join("file.txt");
        std::fs::write(&file, "keep").unwrap();
        assert!(refusal(FolderWriter::begin(&file, KIND)).contains("is a file"));
        for path in [".", "./", "..", "/", "x/..", ""] {
            let message = refusal(check_folder(Path::new(path), KIND));
            assert!(message.contains("name a new folder"), "{path}: {message}");
        }
        let cwd = std::env::current_dir().unwrap();
        assert!(refusal(check_folder(&cwd, KIND)).contains("working folder"));
        let missing = dir.join("no/such/out");
        assert!(refusal(FolderWriter::begin(&missing, KIND)).contains("does not exist"));
        assert_eq!(tree(&user), before);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
        let mut left = sorted_entries(&dir).unwrap();
        left.retain(|n| n != "link");
        assert_eq!(left, [PathBuf::from("file.txt"), "user".into()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unfinished_output_leaves_the_earlier_one_whole() {
        let dir = scratch("unfinished");
        let out = dir.join("out");
        write_output(&out, &[("a.txt", "one"), ("b.txt", "two")]).unwrap();
        let before = tree(&out);
        // Dropped before its commit (a failed run): the earlier output as it was, the
        // temporary folder and the lock file gone.
        let mut writer = FolderWriter::begin(&out, KIND).unwrap();
        writer.write("a.txt", "half").unwrap();
        assert!(writer.temporary().join("a.txt").is_file());
        // A second writer of the same folder is refused while the first holds it.
        let message = refusal(FolderWriter::begin(&out, KIND));
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        drop(writer);
        assert_eq!(tree(&out), before);
        assert_eq!(sorted_entries(&dir).unwrap(), [PathBuf::from("out")]);
        // What a killed writer left beside it (its manifest lists its files) is cleared by
        // the next writer; a look-alike folder without atmc-lab's manifest is not touched.
        let killed = dir.join(".out.4000000.tmp");
        std::fs::create_dir_all(killed.join("sub")).unwrap();
        std::fs::write(killed.join("sub/x.bin"), "partial").unwrap();
        let mut manifest = Manifest::new(KIND);
        manifest.files.push("sub/x.bin".into());
        write_manifest(&killed, &manifest, false).unwrap();
        let lookalike = dir.join(".out.4000001.tmp");
        std::fs::create_dir(&lookalike).unwrap();
        std::fs::write(lookalike.join("mine.txt"), "keep").unwrap();
        write_output(&out, &[("a.txt", "three")]).unwrap();
        assert!(!killed.exists());
        assert_eq!(
            std::fs::read_to_string(lookalike.join("mine.txt")).unwrap(),
            "keep"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_new_file_never_replaces_one() {
        let dir = scratch("new");
        let name = |k: u32| format!("shot-{k}.png");
        std::fs::write(dir.join("shot-1.png"), "earlier").unwrap();
        assert_eq!(write_new(&dir, name, "a").unwrap(), dir.join("shot-2.png"));
        assert_eq!(write_new(&dir, name, "b").unwrap(), dir.join("shot-3.png"));
        assert_eq!(
            std::fs::read_to_string(dir.join("shot-1.png")).unwrap(),
            "earlier"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("shot-2.png")).unwrap(),
            "a"
        );
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            3,
            "no temporary file left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
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
