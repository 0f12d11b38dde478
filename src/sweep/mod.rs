//! Running sweeps: every grid point of a [`Sweep`] is an independent, deterministic run whose
//! record is appended to its shard's file as one JSON line, so that a sweep can be sharded
//! over any scheduler (`--shard i/n`), interrupted and resumed (points already written are
//! skipped), and merged ([`merge`]) into one table checked point by point.
//!
//! A shard file (`shard-I-of-N.jsonl`) starts with a header line describing the sweep (its
//! hash, the base preset, the axes) and holds one [`Record`] per line after it.

pub mod background;
pub mod record;
pub mod slurm;
pub mod thermodynamics;

pub use record::{BaseKind, Header, Record, SweepHashes, header};

use crate::diagnostics::Truth;
use crate::engine::BackendChoice;
use crate::preset::AnyPreset;
use crate::preset::sweep_file::{Measure, Sweep};
use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Which of `count` shards this process runs: points `index`, `index + count`, ….
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 0-based shard number.
    pub index: u32,
    /// Number of shards.
    pub count: u32,
}

impl Shard {
    /// The whole sweep in one shard.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// The points of this shard among `points`.
    pub fn indices(self, points: usize) -> impl Iterator<Item = usize> {
        (self.index as usize..points).step_by(self.count as usize)
    }

    /// The shard's file in `dir`.
    pub fn file(self, dir: &Path) -> PathBuf {
        dir.join(format!("shard-{}-of-{}.jsonl", self.index, self.count))
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `i/n` with 0 ≤ i < n.
    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("--shard {text}: expected I/N with 0 ≤ I < N, e.g. 0/4");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// Whether a sweep's points are measured thermodynamically.
pub fn is_thermo(sweep: &Sweep) -> bool {
    sweep.spec.measure == Measure::Thermo || matches!(sweep.base, AnyPreset::Sphere(_))
}

/// 64-bit FNV-1a, as 16 hex digits: a stable fingerprint (not a security hash).
fn hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Exact truths by target, shared by the points of a sweep.
#[derive(Default)]
pub struct TruthCache(HashMap<String, Truth>);

/// Truths a [`TruthCache`] keeps: a typed target's holds its 400 × 400 cell masses (1.3 MB),
/// and a sweep over its parameters has one per point.
const TRUTHS_KEPT: usize = 64;

impl TruthCache {
    fn get(&mut self, preset: &crate::preset::Validated<crate::preset::Preset>) -> &Truth {
        let key = serde_json::to_string(&preset.target).expect("targets serialise");
        if self.0.len() >= TRUTHS_KEPT && !self.0.contains_key(&key) {
            self.0.clear();
        }
        self.0
            .entry(key)
            .or_insert_with(|| Truth::new(&preset.model().target))
    }
}

/// Runs one point. Returns its record and the seconds the run took (engine and statistics,
/// everything `atmc-lab run` would do for this preset).
pub fn run_point(
    sweep: &Sweep,
    index: usize,
    backend: BackendChoice,
    truths: &mut TruthCache,
) -> anyhow::Result<(Record, f64)> {
    let point = sweep.point(index);
    // The statistics as JSON without the run's timings (where and how fast it ran), its
    // kinetic temperature, and the seconds it took.
    let (mut run, kinetic_temperature, seconds) = match &point.preset {
        preset if is_thermo(sweep) => {
            let started = Instant::now();
            let measured = crate::runner::thermodynamics::measure(preset, backend, &mut |_| {})?;
            let seconds = started.elapsed().as_secs_f64();
            (serde_json::to_value(&measured)?, None, seconds)
        }
        AnyPreset::Toy(p) => {
            let p = &crate::runner::validated(p.clone())?;
            let truth = truths.get(p).clone();
            let started = Instant::now();
            let outcome =
                crate::runner::run_against(p, &truth, backend, &mut |_| {}, &mut |_| Ok(()))?;
            let seconds = started.elapsed().as_secs_f64();
            let s = &outcome.summary;
            let run = without(serde_json::to_value(s)?, &s.timings)?;
            (run, s.kinetic_temperature, seconds)
        }
        AnyPreset::Mlp(p) => {
            let started = Instant::now();
            let outcome = crate::runner::mlp::run_mlp(p, backend, &mut |_| {})?;
            let seconds = started.elapsed().as_secs_f64();
            let s = &outcome.summary;
            let run = without(serde_json::to_value(s)?, &s.timings)?;
            (run, s.kinetic_temperature, seconds)
        }
        AnyPreset::Comparison(_) | AnyPreset::Sphere(_) => {
            bail!("a comparison cannot be swept")
        }
    };
    if let Value::Object(map) = &mut run {
        // How far the kinetic temperature is from the target's, relative: a map over T
        // compares like with like (null, as in the JSON, when it is not finite).
        if let (Some(kt), Some(t)) = (
            kinetic_temperature.filter(|kt| kt.is_finite()),
            record::kinetic_target(&point.preset).filter(|t| *t > 0.0),
        ) {
            map.insert(
                "kinetic_temperature_error".into(),
                serde_json::json!((kt / t - 1.0).abs()),
            );
        }
        if !sweep.spec.keep.is_empty() {
            // A misspelled name would keep nothing of any point: refuse it at the first point,
            // before its record is written.
            if let Some(unknown) = sweep.spec.keep.iter().find(|f| !map.contains_key(*f)) {
                let mut known: Vec<&str> = map.keys().map(String::as_str).collect();
                known.sort_unstable();
                return Err(anyhow::Error::new(crate::fsutil::Refused(format!(
                    "keep: `{unknown}` is no statistic of this sweep's runs; they have: {}",
                    known.join(", ")
                ))));
            }
            map.retain(|k, _| sweep.spec.keep.iter().any(|f| f == k));
        }
    }
    Ok((
        Record {
            index,
            coords: point.coords,
            seed: record::seed_of(&point.preset),
            run,
        },
        seconds,
    ))
}

/// `statistics` without the fields `part` serialises to (flattened into them).
fn without(mut statistics: Value, part: &impl Serialize) -> anyhow::Result<Value> {
    if let (Value::Object(map), Value::Object(left_out)) =
        (&mut statistics, serde_json::to_value(part)?)
    {
        for key in left_out.keys() {
            map.remove(key);
        }
    }
    Ok(statistics)
}

/// What a shard run did.
#[derive(Clone, Copy, Debug, Default)]
pub struct ShardReport {
    /// Points run now.
    pub ran: usize,
    /// Points found already written (a resumed run skips them).
    pub skipped: usize,
    /// Wall-clock seconds of the points run now.
    pub wall_s: f64,
    /// Seconds the runs themselves took (what `atmc-lab run` of each point would take, less
    /// process start): the rest of `wall_s` is the sweep's own overhead.
    pub run_s: f64,
}

/// Runs the points of `shard` that `dir` does not hold yet, appending each record as it is
/// done (one write and an fsync per line). `progress` gets (points done in this shard,
/// points in this shard).
pub fn run_shard(
    sweep: &Sweep,
    shard: Shard,
    dir: &Path,
    backend: BackendChoice,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<ShardReport> {
    run_shard_until(sweep, shard, dir, backend, &mut |done, total| {
        progress(done, total);
        true
    })
}

/// [`run_shard`] that stops after the point in flight as soon as `progress` (told the points
/// done and the shard's total after each one) returns false; what was done stays on disk
/// and a later run resumes from it.
pub fn run_shard_until(
    sweep: &Sweep,
    shard: Shard,
    dir: &Path,
    backend: BackendChoice,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> anyhow::Result<ShardReport> {
    run_shard_patiently(sweep, shard, dir, backend, Duration::ZERO, progress)
}

/// [`run_shard_until`] that waits up to `patience` for the shard's lock (polling, and giving
/// up when `progress` says stop) instead of refusing at once: a front end that restarts a
/// sweep waits for its previous run's thread to finish the point in flight.
pub(crate) fn run_shard_patiently(
    sweep: &Sweep,
    shard: Shard,
    dir: &Path,
    backend: BackendChoice,
    patience: Duration,
    progress: &mut dyn FnMut(usize, usize) -> bool,
) -> anyhow::Result<ShardReport> {
    let hashes = SweepHashes::of(sweep);
    let header = Header {
        sweep_hash: folder_hash(dir, &hashes),
        ..header(sweep, shard)
    };
    let path = shard.file(dir);
    let total = shard.indices(sweep.points).count();
    // Held until the last record is written: a second writer of this shard is refused (the
    // shards of a SLURM array, each its own file, are written side by side).
    let deadline = Instant::now() + patience;
    let _lock = loop {
        match lock_shard(&path) {
            Err(e)
                if e.downcast_ref::<crate::fsutil::Refused>().is_some()
                    && Instant::now() < deadline =>
            {
                if !progress(0, total) {
                    return Ok(ShardReport::default());
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            locked => break locked?,
        }
    };
    let done = open_shard(&path, &header, &hashes)?;
    let todo: Vec<usize> = shard
        .indices(sweep.points)
        .filter(|i| !done.contains(i))
        .collect();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot append to {}", path.display()))?;
    let mut report = ShardReport {
        skipped: done.len(),
        ..ShardReport::default()
    };
    let mut truths = TruthCache::default();
    if !progress(report.skipped, total) {
        return Ok(report);
    }
    for index in todo {
        let started = Instant::now();
        let (record, run_s) = run_point(sweep, index, backend, &mut truths)
            .with_context(|| format!("point {index} ({})", sweep.describe(&sweep.coords(index))))?;
        let mut line = serde_json::to_string(&record)?;
        line.push('\n');
        // One write per line: a kill leaves whole lines and at most one partial last line,
        // which a resumed run drops.
        file.write_all(line.as_bytes())
            .and_then(|()| file.sync_data())
            .with_context(|| format!("cannot write {}", path.display()))?;
        report.ran += 1;
        report.wall_s += started.elapsed().as_secs_f64();
        report.run_s += run_s;
        if !progress(report.skipped + report.ran, total) {
            break;
        }
    }
    Ok(report)
}

/// The lock of a file the sweep writes: `.NAME.lock` beside it.
fn lock_path(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.lock"))
}

/// Takes the lock of a shard file for this process's lifetime, or refuses at once (a
/// [`crate::fsutil::Refused`] naming the holder).
fn lock_shard(path: &Path) -> anyhow::Result<crate::fsutil::Lock> {
    crate::fsutil::lock(&lock_path(path), &path.display().to_string())
}

/// Takes the lock of the folder's shared files (`merged.jsonl`, `thermo.ron`, …), or refuses
/// at once naming the holder. Held only while they are written.
pub fn lock_folder(dir: &Path) -> anyhow::Result<crate::fsutil::Lock> {
    crate::fsutil::lock(&dir.join(".lock"), &dir.display().to_string())
}

/// Whether a shard file holds no complete header line (empty, or cut by a kill or a full disk
/// while a version before atomic headers wrote it): nothing in it can be a record.
fn header_incomplete(path: &Path) -> anyhow::Result<bool> {
    let mut first = Vec::new();
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    std::io::BufReader::new(file)
        .read_until(b'\n', &mut first)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(!first.ends_with(b"\n"))
}

/// Creates the shard file with its header (written atomically: a kill or a full disk leaves no
/// shard rather than an empty one), or checks an existing one's header and returns the indices
/// it already holds (dropping a partial last line): one whose header carries any of the
/// sweep's `hashes` is the sweep's. A shard without a complete header holds no record and is
/// written afresh; a damaged header is refused with what to do.
fn open_shard(path: &Path, header: &Header, hashes: &SweepHashes) -> anyhow::Result<Vec<usize>> {
    if !path.exists() || header_incomplete(path)? {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let mut line = serde_json::to_string(header)?;
        line.push('\n');
        crate::fsutil::write_atomic(path, line)?;
        return Ok(Vec::new());
    }
    let (found, records, valid_bytes) = read_shard(path).map_err(|e| {
        anyhow::Error::new(crate::fsutil::Refused(format!(
            "{e:#}; the shard is damaged: move it away (its points run again) or restore it"
        )))
    })?;
    if !hashes.accepts(&found.sweep_hash) {
        return Err(crate::fsutil::Refused(format!(
            "{} holds points of another sweep (base {} vs {}): choose another --out",
            path.display(),
            found.base_hash,
            header.base_hash
        ))
        .into());
    }
    let length = std::fs::metadata(path)?.len();
    if valid_bytes < length {
        // The last line was cut by a kill: drop it, its point runs again.
        let file = std::fs::OpenOptions::new().write(true).open(path)?;
        file.set_len(valid_bytes)?;
        file.sync_all()?;
    }
    Ok(records.iter().map(|r| r.index).collect())
}

/// The shard files (`shard-*.jsonl`) in `dir`, sorted by name.
fn shard_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut shards: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("shard-") && n.ends_with(".jsonl"))
        })
        .collect();
    shards.sort();
    Ok(shards)
}

/// The first line of a file (its header, for a shard file), without its line end.
fn first_line(path: &Path) -> anyhow::Result<String> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut line = String::new();
    std::io::BufReader::new(file)
        .read_line(&mut line)
        .with_context(|| format!("cannot read {}", path.display()))?;
    line.truncate(line.trim_end().len());
    Ok(line)
}

/// The hash a new shard file in `dir` carries: the earlier release's when a shard file of the
/// folder already carries it (a folder's shards merge only under one hash), else the current
/// one.
fn folder_hash(dir: &Path, hashes: &SweepHashes) -> String {
    /// Only the hash of a header: no base preset decoded for it.
    #[derive(Deserialize)]
    struct HashOnly {
        sweep_hash: String,
    }
    let carries_v1 = shard_files(dir).unwrap_or_default().iter().any(|path| {
        first_line(path)
            .ok()
            .and_then(|line| serde_json::from_str::<HashOnly>(&line).ok())
            .is_some_and(|found| found.sweep_hash == hashes.v1)
    });
    if carries_v1 {
        hashes.v1.clone()
    } else {
        hashes.current.clone()
    }
}

/// Refuses a folder whose shard files belong to another sweep than `sweep` (another grid,
/// base or kept fields), before a shared file of the folder (`thermo.ron`) is rewritten to
/// describe `sweep`: the shards would no longer match it. Shards without a complete header
/// hold nothing and are passed over.
pub fn check_folder(sweep: &Sweep, dir: &Path) -> anyhow::Result<()> {
    let Ok(shards) = shard_files(dir) else {
        return Ok(());
    };
    let hashes = SweepHashes::of(sweep);
    for path in shards {
        if header_incomplete(&path)? {
            continue;
        }
        let found = serde_json::from_str::<Header>(&first_line(&path)?).ok();
        if found
            .as_ref()
            .is_none_or(|h| !hashes.accepts(&h.sweep_hash))
        {
            return Err(anyhow::Error::new(crate::fsutil::Refused(format!(
                "{} holds {}: its files were left as they are; choose another --out, or move \
                 them away to start over",
                dir.display(),
                match found {
                    Some(h) => format!(
                        "points of another sweep ({}: {} points over {})",
                        path.display(),
                        h.points,
                        h.fields.join(", ")
                    ),
                    None => format!("a damaged shard ({})", path.display()),
                }
            ))));
        }
    }
    Ok(())
}

/// Reads a shard file: its header, its complete records, and the bytes they span (a partial
/// last line is left out).
pub fn read_shard(path: &Path) -> anyhow::Result<(Header, Vec<Record>, u64)> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = String::new();
    let mut bytes = 0u64;
    reader.read_line(&mut line)?;
    let header: Header = serde_json::from_str(line.trim_end())
        .with_context(|| format!("{}:1: not a sweep shard header", path.display()))?;
    header
        .check()
        .map_err(|e| anyhow::anyhow!("{}:1: impossible sweep header: {e}", path.display()))?;
    bytes += line.len() as u64;
    let mut records = Vec::new();
    let mut number = 1;
    loop {
        line.clear();
        let n = reader.read_line(&mut line)?;
        number += 1;
        if n == 0 {
            break;
        }
        if !line.ends_with('\n') {
            // Only the last line can be partial: a writer killed mid-line.
            break;
        }
        let record = serde_json::from_str::<Record>(line.trim_end())
            .with_context(|| format!("{}:{number}: not a sweep record", path.display()))?;
        record
            .check(&header)
            .map_err(|e| anyhow::anyhow!("{}:{number}: {e}", path.display()))?;
        records.push(record);
        bytes += n as u64;
    }
    Ok((header, records, bytes))
}

/// A merged sweep: the header (shard set to all) and one record per point, in index order.
#[derive(Clone, Debug)]
pub struct Merged {
    /// The sweep.
    pub header: Header,
    /// Every point's record.
    pub records: Vec<Record>,
}

/// Merges the shard files in `dir`: every point present exactly once, every shard of the
/// same sweep. Writes `dir/merged.jsonl` and returns the table.
pub fn merge(dir: &Path) -> anyhow::Result<Merged> {
    // The merge is the folder's: a second merge is refused, and so is a merge while a shard is
    // still being written (its lock is held).
    let _folder = lock_folder(dir)?;
    let shards = shard_files(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if shards.is_empty() {
        bail!(
            "{}: no shard files (shard-I-of-N.jsonl) to merge",
            dir.display()
        );
    }
    let mut header: Option<(Header, PathBuf)> = None;
    let mut slots: Vec<Option<(Record, PathBuf)>> = Vec::new();
    let mut _shard_locks = Vec::with_capacity(shards.len());
    for path in &shards {
        _shard_locks.push(lock_shard(path)?);
        let (h, records, _) = read_shard(path)?;
        match &header {
            None => {
                slots = vec![None; h.points];
                header = Some((h, path.clone()));
            }
            Some((first, first_path)) => {
                if h.base_hash != first.base_hash {
                    bail!(
                        "{} comes from a different base preset than {} (base hash {} vs {})",
                        path.display(),
                        first_path.display(),
                        h.base_hash,
                        first.base_hash
                    );
                }
                if h.sweep_hash != first.sweep_hash {
                    bail!(
                        "{} belongs to a different sweep than {} (other axes, seeds or kept \
                         fields)",
                        path.display(),
                        first_path.display()
                    );
                }
            }
        }
        let (first, _) = header.as_ref().expect("set above");
        for r in records {
            let describe = || describe_point(first, &r);
            let Some(slot) = slots.get_mut(r.index) else {
                bail!(
                    "{}: point {} is beyond the sweep",
                    path.display(),
                    describe()
                );
            };
            if let Some((_, other)) = slot {
                bail!(
                    "point {} is in {} and in {}",
                    describe(),
                    other.display(),
                    path.display()
                );
            }
            *slot = Some((r, path.clone()));
        }
    }
    let (mut header, _) = header.expect("at least one shard");
    let missing: Vec<usize> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(i, _)| i)
        .collect();
    if let Some(&first) = missing.first() {
        let coords = header.coords(first);
        bail!(
            "{} of {} points are missing, the first is point {first} ({}): run its shard again \
             (it resumes where it stopped)",
            missing.len(),
            header.points,
            header
                .fields
                .iter()
                .zip(&coords)
                .map(|(f, v)| format!("{f} = {}", crate::math::ranges::short_number(*v)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    header.shard = Shard::ALL;
    let records: Vec<Record> = slots.into_iter().flatten().map(|(r, _)| r).collect();
    let merged = Merged { header, records };
    write_merged(&merged, &dir.join("merged.jsonl"))?;
    Ok(merged)
}

fn describe_point(header: &Header, record: &Record) -> String {
    let coords: Vec<String> = header
        .fields
        .iter()
        .zip(&record.coords)
        .map(|(f, v)| format!("{f} = {}", crate::math::ranges::short_number(*v)))
        .collect();
    format!("{} ({})", record.index, coords.join(", "))
}

/// Refuses to replace `path` when it exists and is not a file atmc-lab wrote there (`ours`
/// judges it): an output folder may hold a user's file of the same name, and it is never
/// overwritten.
pub fn refuse_foreign(path: &Path, ours: impl FnOnce(&Path) -> bool) -> anyhow::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.is_file() && ours(path) {
        return Ok(());
    }
    Err(anyhow::Error::new(crate::fsutil::Refused(format!(
        "{} exists and is not a file atmc-lab wrote: it was left as it is; move it away or \
         choose another --out",
        path.display()
    ))))
}

/// Refuses, before any point runs, an output folder whose `merged.jsonl` is no sweep table:
/// the merge at the end would have to replace a user's file.
pub fn check_merge_target(dir: &Path) -> anyhow::Result<()> {
    refuse_foreign(&dir.join("merged.jsonl"), is_sweep_table)
}

/// Whether `path` starts with a sweep header (a merged table or a shard file).
fn is_sweep_table(path: &Path) -> bool {
    first_line(path).is_ok_and(|line| serde_json::from_str::<Header>(&line).is_ok())
}

/// Writes a merged table atomically (a temporary file renamed over the target), never over
/// a file that is no sweep table.
fn write_merged(merged: &Merged, path: &Path) -> anyhow::Result<()> {
    refuse_foreign(path, is_sweep_table)?;
    let mut text = serde_json::to_string(&merged.header)?;
    text.push('\n');
    for r in &merged.records {
        text.push_str(&serde_json::to_string(r)?);
        text.push('\n');
    }
    crate::fsutil::write_atomic(path, text)
}

/// Reads a merged table (`merged.jsonl`, or a single complete shard file).
pub fn read_merged(path: &Path) -> anyhow::Result<Merged> {
    let (header, records, _) = read_shard(path)?;
    Ok(Merged { header, records })
}

/// Follows a results file a run is appending to: each [`Follower::poll`] parses only the
/// lines added since the last one (whole lines: one being written waits for the next poll),
/// so a view that polls every few hundred milliseconds does not parse a 100,000-point file
/// again each time. A file that became shorter (rewritten) is read again from the start.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    offset: u64,
    line: usize,
    merged: Option<Merged>,
}

impl Follower {
    /// A follower of `path`, which need not exist yet.
    pub fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            offset: 0,
            line: 0,
            merged: None,
        }
    }

    /// The header and records read so far.
    pub fn merged(&self) -> Option<&Merged> {
        self.merged.as_ref()
    }

    /// [`Follower::poll`], then the table when it grew (a read error counts as no growth:
    /// the run's own end reports errors).
    pub fn grown(&mut self) -> Option<Merged> {
        if self.poll().unwrap_or(false) {
            self.merged.clone()
        } else {
            None
        }
    }

    /// Reads what was appended since the last call; true when the header or records were
    /// added.
    pub fn poll(&mut self) -> anyhow::Result<bool> {
        use std::io::{Seek, SeekFrom};
        let path = &self.path;
        let mut file =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        if file.metadata()?.len() < self.offset {
            (self.offset, self.line, self.merged) = (0, 0, None);
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut reader = std::io::BufReader::new(file);
        let mut line = String::new();
        let mut grew = false;
        loop {
            line.clear();
            let n = reader.read_line(&mut line)?;
            if n == 0 || !line.ends_with('\n') {
                break;
            }
            self.line += 1;
            let text = line.trim_end();
            match &mut self.merged {
                None => {
                    let header: Header = serde_json::from_str(text).with_context(|| {
                        format!("{}:1: not a sweep shard header", path.display())
                    })?;
                    header.check().map_err(|e| {
                        anyhow::anyhow!("{}:1: impossible sweep header: {e}", path.display())
                    })?;
                    self.merged = Some(Merged {
                        header,
                        records: Vec::new(),
                    });
                }
                Some(m) => {
                    let record: Record = serde_json::from_str(text).with_context(|| {
                        format!("{}:{}: not a sweep record", path.display(), self.line)
                    })?;
                    record
                        .check(&m.header)
                        .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), self.line))?;
                    m.records.push(record);
                }
            }
            self.offset += n as u64;
            grew = true;
        }
        Ok(grew)
    }
}

/// The records as CSV: index, the axes, the seed, then every scalar of the run JSON (arrays
/// flattened as `mean.0`, `cov.0.1`; nulls empty).
pub fn csv_table(merged: &Merged) -> String {
    let mut columns: Vec<String> = Vec::new();
    let flat: Vec<Vec<(String, String)>> = merged
        .records
        .iter()
        .map(|r| {
            let mut cells = Vec::new();
            flatten("", &r.run, &mut cells);
            for (name, _) in &cells {
                if !columns.contains(name) {
                    columns.push(name.clone());
                }
            }
            cells
        })
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut head = vec!["index".to_owned()];
    head.extend(merged.header.fields.iter().cloned());
    head.push("seed".into());
    head.extend(columns.iter().cloned());
    w.write_record(&head).expect("in memory");
    for (r, cells) in merged.records.iter().zip(&flat) {
        let mut row = vec![r.index.to_string()];
        row.extend(r.coords.iter().map(|c| c.to_string()));
        row.push(r.seed.to_string());
        for c in &columns {
            row.push(
                cells
                    .iter()
                    .find(|(n, _)| n == c)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
            );
        }
        w.write_record(&row).expect("in memory");
    }
    String::from_utf8(w.into_inner().expect("in memory")).expect("utf-8")
}

fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    let name = |key: &str| {
        if prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{prefix}.{key}")
        }
    };
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| flatten(&name(k), v, out)),
        Value::Array(items) if items.iter().all(|v| !v.is_object()) || !prefix.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                flatten(&name(&i.to_string()), v, out);
            }
        }
        Value::Array(_) => {}
        Value::Null => out.push((prefix.to_owned(), String::new())),
        Value::Bool(b) => out.push((prefix.to_owned(), b.to_string())),
        Value::Number(n) => out.push((prefix.to_owned(), n.to_string())),
        Value::String(s) => out.push((prefix.to_owned(), s.clone())),
    }
}

/// A statistic of a record as a number (`None` when it is missing or null), by a dotted name
/// as in [`csv_table`] (`diverged_fraction`, `mean.0`, `posterior_predictive.test.accuracy`).
pub fn statistic(record: &Record, name: &str) -> Option<f64> {
    let mut node = &record.run;
    for part in name.split('.') {
        node = match node {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    node.as_f64()
}

/// What a statistic's dotted name means, in words a reader of the map knows ("min bulk
/// ESS", not `ess_bulk_min`): the known names of `run`'s and the MLP runs' JSON, others with
/// their underscores as spaces and their dots as "›".
pub fn statistic_label(name: &str) -> String {
    const KNOWN: &[(&str, &str)] = &[
        ("rhat_max", "max split R-hat (bulk or tail)"),
        ("rhat_bulk_max", "max bulk R-hat"),
        ("rhat_tail_max", "max tail R-hat"),
        ("ess_bulk_min", "min bulk ESS"),
        ("ess_tail_min", "min tail ESS"),
        ("nested_rhat", "nested R-hat"),
        ("nested_rhat_level", "nested R-hat stationary level"),
        ("superchains", "superchains"),
        ("ksd", "kernel Stein discrepancy"),
        ("ksd_baseline", "KSD of exact draws"),
        ("ksd_baseline_sd", "KSD of exact draws, sd"),
        ("diverged_fraction", "diverged fraction"),
        ("first_divergence_step", "first divergence step"),
        ("kinetic_temperature", "kinetic temperature"),
        ("mean_xi", "mean ξ"),
        ("mean.0", "mean θ₁"),
        ("mean.1", "mean θ₂"),
        ("cov.0.0", "var θ₁"),
        ("cov.0.1", "cov θ₁θ₂"),
        ("cov.1.0", "cov θ₁θ₂"),
        ("cov.1.1", "var θ₂"),
        ("energy_distance", "energy distance"),
        ("energy_distance_baseline", "energy distance of exact draws"),
        ("tv_histogram", "histogram total variation"),
        ("modes_visited", "modes visited per chain"),
        (
            "modes_visited_ensemble",
            "modes visited by all chains together",
        ),
        ("chain_steps_per_s", "chain-steps per second"),
        ("elapsed_s", "seconds"),
        ("pooled_states", "pooled states"),
        ("truth_outside_mass", "mass outside the truth's box"),
    ];
    if let Some((_, label)) = KNOWN.iter().find(|(n, _)| *n == name) {
        return (*label).to_owned();
    }
    name.split('.')
        .map(|part| part.replace('_', " "))
        .collect::<Vec<_>>()
        .join(" › ")
}

/// The numeric statistics the records carry, by dotted name (for the app's picker).
pub fn statistics(merged: &Merged) -> Vec<String> {
    let mut names = Vec::new();
    for r in merged.records.iter().take(50) {
        let mut cells = Vec::new();
        flatten("", &r.run, &mut cells);
        for (name, _) in cells {
            if !names.contains(&name) && statistic(r, &name).is_some() {
                names.push(name);
            }
        }
    }
    names
}

/// A statistic over two axes of a merged sweep, the other axes held at chosen values: what a
/// heatmap shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Slice2d {
    /// Values of the horizontal axis.
    pub x_values: Vec<f64>,
    /// Values of the vertical axis.
    pub y_values: Vec<f64>,
    /// The statistic per cell, row by row from the lowest y (None: no record, or null).
    pub values: Vec<Option<f64>>,
    /// The record of each cell, by position in the merged table.
    pub records: Vec<Option<usize>>,
}

/// The statistic `name` over axes `x` and `y`; every other axis k at its value
/// `slice[k]` (an index into its values).
pub fn slice2d(merged: &Merged, name: &str, x: usize, y: usize, slice: &[usize]) -> Slice2d {
    let axes = &merged.header.axis_values;
    let (nx, ny) = (axes[x].len(), axes[y].len());
    let mut out = Slice2d {
        x_values: axes[x].clone(),
        y_values: axes[y].clone(),
        values: vec![None; nx * ny],
        records: vec![None; nx * ny],
    };
    for (k, r) in merged.records.iter().enumerate() {
        let held = (0..axes.len())
            .filter(|&a| a != x && a != y)
            .all(|a| slice.get(a).and_then(|&i| axes[a].get(i)) == Some(&r.coords[a]));
        if !held {
            continue;
        }
        let ix = axes[x].iter().position(|v| *v == r.coords[x]);
        let iy = axes[y].iter().position(|v| *v == r.coords[y]);
        if let (Some(ix), Some(iy)) = (ix, iy) {
            out.values[iy * nx + ix] = statistic(r, name);
            out.records[iy * nx + ix] = Some(k);
        }
    }
    out
}

/// Whether the axis values are spaced evenly in log rather than linearly (for the axis
/// labels and for placing curves between cells).
pub fn is_log_spaced(values: &[f64]) -> bool {
    if values.len() < 3 || values.iter().any(|v| *v <= 0.0) {
        return false;
    }
    let ratio = values[1] / values[0];
    values
        .windows(2)
        .all(|w| ((w[1] / w[0]) / ratio - 1.0).abs() < 1e-6)
        && (ratio - 1.0).abs() > 1e-9
}

/// The fractional cell position of `value` among an axis's values (0 at the first cell's
/// centre), interpolating in log for a log-spaced axis; None outside the axis.
pub fn cell_position(values: &[f64], value: f64) -> Option<f64> {
    let log = is_log_spaced(values);
    let f = |v: f64| if log { v.ln() } else { v };
    let t = f(value);
    values.windows(2).enumerate().find_map(|(i, w)| {
        let (a, b) = (f(w[0]), f(w[1]));
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        (lo <= t && t <= hi).then(|| i as f64 + (t - a) / (b - a))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_have_names_a_reader_knows() {
        assert_eq!(statistic_label("ess_bulk_min"), "min bulk ESS");
        assert_eq!(statistic_label("nested_rhat"), "nested R-hat");
        assert_eq!(
            statistic_label("posterior_predictive.test.accuracy"),
            "posterior predictive › test › accuracy"
        );
    }

    #[test]
    fn shards_parse_and_partition_the_points() {
        let s: Shard = "1/3".parse().unwrap();
        assert_eq!(s.indices(8).collect::<Vec<_>>(), vec![1, 4, 7]);
        for bad in ["3/3", "1", "a/b", "0/0", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let all: Vec<usize> = (0..3)
            .flat_map(|i| Shard { index: i, count: 3 }.indices(10))
            .collect();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn cells_are_placed_in_log_on_log_axes() {
        let log = [0.01, 0.1, 1.0];
        assert!(is_log_spaced(&log));
        assert!((cell_position(&log, 0.0316227766).unwrap() - 0.5).abs() < 1e-6);
        let lin = [0.0, 0.5, 1.0];
        assert!(!is_log_spaced(&lin));
        assert_eq!(cell_position(&lin, 0.75), Some(1.5));
        assert_eq!(cell_position(&lin, 2.0), None);
    }

    #[test]
    fn a_follower_reads_whole_appended_lines_once() {
        let dir = std::env::temp_dir().join(format!("atmc-follow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("shard.jsonl");
        let sweep = Sweep::parse(
            "Sweep(base: \"default\", axes: [(field: \"seed\", values: List([0, 1, 2]))])",
            "s.ron",
            Path::new("."),
        )
        .unwrap();
        let header = serde_json::to_string(&header(&sweep, Shard::ALL)).unwrap();
        let record = |i: usize| format!(r#"{{"index":{i},"coords":[{i}.0],"seed":1,"run":{{}}}}"#);
        let mut follower = Follower::new(&path);
        assert!(follower.poll().is_err(), "no file yet");
        let r1 = record(1);
        let (first, rest) = r1.split_at(10);
        std::fs::write(&path, format!("{header}\n{}\n{first}", record(0))).unwrap();
        assert!(follower.poll().unwrap());
        assert_eq!(
            follower.merged().unwrap().records.len(),
            1,
            "the partial line waits"
        );
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        writeln!(f, "{rest}\n{}", record(2)).unwrap();
        assert!(follower.poll().unwrap());
        assert!(!follower.poll().unwrap(), "nothing new");
        let m = follower.merged().unwrap();
        assert_eq!(
            m.records.iter().map(|r| r.index).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(m.records.len(), read_merged(&path).unwrap().records.len());
        // Rewritten shorter: read again from the start.
        std::fs::write(&path, format!("{header}\n{}\n", record(0))).unwrap();
        assert!(follower.poll().unwrap());
        assert_eq!(follower.merged().unwrap().records.len(), 1);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn fnv_hash_is_stable() {
        assert_eq!(hash(""), "cbf29ce484222325");
        assert_eq!(hash("a"), "af63dc4c8601ec8c");
    }
}
