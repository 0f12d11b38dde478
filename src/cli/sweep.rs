//! `atmc-lab sweep`: run a sweep (or one shard of it), merge shards, or write and submit
//! SLURM job scripts.

use super::{Failure, progress_bar, whole_in_range};
use crate::engine::BackendChoice;
use crate::math::ranges::Range;
use crate::preset::sweep_file::Sweep;
use crate::sweep::{self, Shard, slurm};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where a sweep's records go, how its points run, and the merge of its shards: the options
/// `sweep` and `thermo` share.
#[derive(Debug, clap::Args)]
pub(super) struct SweepOutput {
    /// Output folder: the shard files `shard-I-of-N.jsonl` and `merged.jsonl` [default: the
    /// sweep file's name without extension; `thermo`: thermo-PRESET].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only shard I of N (every N-th point, starting at I), e.g. `--shard 2/8`.
    #[arg(long, allow_hyphen_values = true)]
    pub shard: Option<Shard>,
    /// Also write the table as CSV (after the last point of an unsharded run, or with
    /// --merge).
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Backend of every point. The default is `cpu`, not the `auto` of the other commands: a
    /// record is then a pure function of the sweep and the point's index, whichever machine
    /// runs its shard. Run every shard of a sweep on the same backend.
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: BackendChoice,
    /// Merge the shard files in this folder into `merged.jsonl`, checking every point is
    /// there exactly once (`thermo`: and print the table).
    #[arg(long, value_name = "DIR", conflicts_with = "shard")]
    pub merge: Option<PathBuf>,
}

impl SweepOutput {
    /// `--merge DIR`: the shards in DIR merged into `merged.jsonl`, the CSV checked first.
    pub(super) fn merge_shards(&self, dir: &Path) -> Result<sweep::Merged, Failure> {
        if !dir.is_dir() {
            return Err(Failure::usage(format!(
                "--merge {}: not a folder",
                dir.display()
            )));
        }
        if let Some(csv) = &self.csv {
            check_writable(csv)?;
        }
        let merged = sweep::merge(dir)
            // A missing, duplicated or foreign shard is a problem of the input.
            .map_err(|e| Failure::usage(format!("{e:#}")))?;
        note!(
            "merged {} points into {}",
            merged.records.len(),
            dir.join("merged.jsonl").display()
        );
        Ok(merged)
    }

    /// The output folder (`--out`, else `default`), refused when it is a file.
    pub(super) fn folder(&self, default: impl FnOnce() -> PathBuf) -> Result<PathBuf, Failure> {
        let out = self.out.clone().unwrap_or_else(default);
        if out.exists() && !out.is_dir() {
            return Err(Failure::usage(format!(
                "--out {}: not a folder",
                out.display()
            )));
        }
        Ok(out)
    }

    /// The shard to run, after the checks of its outputs: the CSV (written only for a whole
    /// sweep) can be written, and the output folder is created.
    pub(super) fn prepare(&self, out: &Path) -> Result<Shard, Failure> {
        let shard = self.shard.unwrap_or(Shard::ALL);
        if let Some(csv) = &self.csv {
            if shard != Shard::ALL {
                return Err(Failure::usage(
                    "--csv with --shard: the table is written by --merge once every shard is done",
                ));
            }
            check_writable(csv)?;
        }
        std::fs::create_dir_all(out).map_err(|e| {
            Failure::usage(format!("--out {}: cannot create it: {e}", out.display()))
        })?;
        sweep::check_merge_target(out)?;
        Ok(shard)
    }

    /// Runs `shard` of the sweep into `out` with a progress bar named `name`; the report and
    /// the wall-clock seconds.
    pub(super) fn run(
        &self,
        loaded: &Sweep,
        shard: Shard,
        out: &Path,
        name: &str,
    ) -> Result<(sweep::ShardReport, f64), Failure> {
        let bar = progress_bar(0, "points", name);
        let started = Instant::now();
        let report = sweep::run_shard(loaded, shard, out, self.backend, &mut |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
        bar.finish_and_clear();
        Ok((report, started.elapsed().as_secs_f64()))
    }
}

/// `--tasks` of `--slurm`: the array's tasks (shards).
const SLURM_TASKS: Range = Range::closed_range("--tasks", 1.0, slurm::MAX_TASKS as f64);
/// `--cpus-per-task` of `--slurm`.
const SLURM_CPUS: Range = Range::closed_range(
    "--cpus-per-task",
    *slurm::CPUS_PER_TASK.start() as f64,
    *slurm::CPUS_PER_TASK.end() as f64,
);

/// Options of `atmc-lab sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// The sweep file (RON): a base preset, axes over its numeric fields, what to keep.
    #[arg(conflicts_with = "merge")]
    sweep: Option<PathBuf>,
    #[command(flatten)]
    output: SweepOutput,
    /// Write SLURM scripts (a job array of --tasks shards and a dependent merge job) into the
    /// output folder instead of running.
    #[arg(long, conflicts_with = "merge")]
    slurm: bool,
    /// With --slurm: submit them with sbatch.
    #[arg(long, requires = "slurm")]
    submit: bool,
    /// With --slurm: array tasks (shards) [default: 4], written into the script as the shard
    /// count.
    #[arg(long, requires = "slurm", value_parser = whole_in_range(SLURM_TASKS))]
    tasks: Option<u32>,
    /// With --slurm: partition (a name, or several separated by commas).
    #[arg(long, requires = "slurm", value_parser = slurm::partition)]
    partition: Option<String>,
    /// With --slurm: time limit per task (SLURM syntax: minutes, M:S, H:M:S, D-H, D-H:M,
    /// D-H:M:S, e.g. 1:00:00).
    #[arg(long, requires = "slurm", value_parser = slurm::time_limit)]
    time: Option<String>,
    /// With --slurm: CPUs per task.
    #[arg(long, requires = "slurm", value_parser = whole_in_range(SLURM_CPUS))]
    cpus_per_task: Option<u32>,
}

/// Runs `atmc-lab sweep`.
pub fn sweep(args: &SweepArgs) -> Result<(), Failure> {
    let output = &args.output;
    if let Some(dir) = &output.merge {
        let merged = output.merge_shards(dir)?;
        if let Some(csv) = &output.csv {
            write_csv(csv, &merged)?;
        }
        return Ok(());
    }
    let path = args
        .sweep
        .as_deref()
        .ok_or_else(|| Failure::usage("sweep: give a sweep file, or --merge DIR"))?;
    let loaded = Sweep::load(path).map_err(|e| Failure::usage(e.to_string()))?;
    let out =
        output.folder(|| PathBuf::from(path.file_stem().unwrap_or_default()).with_extension(""))?;
    if args.slurm {
        return write_slurm(args, path, &out);
    }
    let shard = output.prepare(&out)?;
    let name = crate::math::ranges::printable(&if loaded.spec.name.is_empty() {
        path.display().to_string()
    } else {
        loaded.spec.name.clone()
    });
    let (report, wall) = output.run(&loaded, shard, &out, &name)?;
    note!(
        "{}: {} points run, {} already there; {:.1} s, of which the runs {:.1} s (sweep \
         overhead {:.1}%)",
        shard.file(&out).display(),
        report.ran,
        report.skipped,
        wall,
        report.run_s,
        if wall > 0.0 {
            100.0 * (wall - report.run_s) / wall
        } else {
            0.0
        }
    );
    if shard == Shard::ALL {
        let merged = sweep::merge(&out)?;
        if let Some(csv) = &output.csv {
            write_csv(csv, &merged)?;
        }
        note!("wrote {}", out.join("merged.jsonl").display());
    }
    Ok(())
}

/// Checks that a CSV output can be written, before any work: its temporary file is created
/// and removed, and the final path is not touched.
fn check_writable(csv: &Path) -> Result<(), Failure> {
    crate::fsutil::AtomicFile::create(csv)
        .map(drop)
        .map_err(|e| Failure::usage(format!("--csv {}: cannot write it: {e:#}", csv.display())))
}

fn write_csv(csv: &Path, merged: &sweep::Merged) -> Result<(), Failure> {
    crate::fsutil::write_atomic(csv, sweep::csv_table(merged))?;
    note!("wrote {}", csv.display());
    Ok(())
}

fn write_slurm(args: &SweepArgs, sweep_path: &Path, out: &Path) -> Result<(), Failure> {
    let tasks = args.tasks.unwrap_or(4);
    std::fs::create_dir_all(out)
        .map_err(|e| Failure::usage(format!("--out {}: cannot create it: {e}", out.display())))?;
    let absolute = |p: &Path| {
        std::fs::canonicalize(p).map_err(|e| Failure::usage(format!("{}: {e}", p.display())))
    };
    let job = slurm::JobSpec {
        binary: std::env::current_exe()
            .map_err(|e| Failure::runtime(format!("the path of this program: {e}")))?,
        sweep: absolute(sweep_path)?,
        out: absolute(out)?,
        tasks,
        backend: format!("{:?}", args.output.backend).to_lowercase(),
        partition: args.partition.clone(),
        time: args.time.clone(),
        cpus_per_task: args.cpus_per_task,
    };
    // The values were checked as the command line was parsed; a refusal here is still bad
    // input, before any file is written.
    job.validate()
        .map_err(|e| Failure::usage(format!("{e:#}")))?;
    let (array, merge) = slurm::write_scripts(&job)?;
    note!("wrote {} and {}", array.display(), merge.display());
    if args.submit {
        // The array's id is printed the moment it exists: whatever fails after it (the
        // merge's submission, standard output), the user knows what is queued.
        let (array_id, merge_id) = slurm::submit(&array, &merge, &mut |id| {
            note!("submitted the array as job {id}")
        })?;
        note!("submitted the merge as job {merge_id} (after job {array_id} succeeds)");
        super::emit(serde_json::json!({"array_job": array_id, "merge_job": merge_id}))?;
    } else {
        note!(
            "submit with: sbatch {}  (then the merge with --dependency=afterok:<its id>), or rerun with --submit",
            array.display()
        );
    }
    Ok(())
}
