//! `atmc-lab sweep`: run a sweep (or one shard of it), merge shards, or write and submit
//! SLURM job scripts.

use super::{Failure, usage};
use crate::engine::BackendChoice;
use crate::preset::sweep_file::Sweep;
use crate::sweep::{self, Shard, slurm};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of `atmc-lab sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// The sweep file (RON): a base preset, axes over its numeric fields, what to keep.
    sweep: Option<PathBuf>,
    /// Output folder: shard files `shard-I-of-N.jsonl` (and `merged.jsonl`) [default: the
    /// sweep file's name without extension].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run only shard I of N (every N-th point, starting at I), e.g. `--shard 2/8`.
    #[arg(long)]
    shard: Option<Shard>,
    /// Also write the table as CSV (after the last point of an unsharded sweep, or with
    /// --merge).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Backend of every point.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: BackendChoice,
    /// Merge the shard files in this folder into `merged.jsonl`, checking every point is
    /// there exactly once.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["sweep", "shard", "slurm"])]
    merge: Option<PathBuf>,
    /// Write SLURM scripts (a job array of --tasks shards and a dependent merge job) into the
    /// output folder instead of running.
    #[arg(long)]
    slurm: bool,
    /// With --slurm: submit them with sbatch.
    #[arg(long, requires = "slurm")]
    submit: bool,
    /// With --slurm: array tasks (shards) [default: 4].
    #[arg(long, requires = "slurm")]
    tasks: Option<u32>,
    /// With --slurm: partition.
    #[arg(long, requires = "slurm")]
    partition: Option<String>,
    /// With --slurm: time limit per task (SLURM syntax, e.g. 1:00:00).
    #[arg(long, requires = "slurm")]
    time: Option<String>,
    /// With --slurm: CPUs per task.
    #[arg(long, requires = "slurm")]
    cpus_per_task: Option<u32>,
}

/// A failure during the work (exit 1).
pub(super) fn failure(e: anyhow::Error) -> Failure {
    Failure {
        code: 1,
        message: format!("{e:#}"),
    }
}

/// Runs `atmc-lab sweep`.
pub fn sweep(args: &SweepArgs) -> Result<(), Failure> {
    if let Some(dir) = &args.merge {
        return merge(dir, args.csv.as_deref());
    }
    let path = args
        .sweep
        .as_deref()
        .ok_or_else(|| usage("sweep: give a sweep file, or --merge DIR"))?;
    let loaded = Sweep::load(path).map_err(|e| usage(e.to_string()))?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(path.file_stem().unwrap_or_default()).with_extension(""));
    if out.exists() && !out.is_dir() {
        return Err(usage(format!("--out {}: not a folder", out.display())));
    }
    if args.slurm {
        return write_slurm(args, path, &out);
    }
    let shard = args.shard.unwrap_or(Shard::ALL);
    if let Some(csv) = &args.csv {
        if shard != Shard::ALL {
            return Err(usage(
                "--csv with --shard: the table is written by --merge once every shard is done",
            ));
        }
        check_writable(csv)?;
    }
    std::fs::create_dir_all(&out)
        .map_err(|e| usage(format!("--out {}: cannot create it: {e}", out.display())))?;
    let bar = progress_bar(&if loaded.spec.name.is_empty() {
        path.display().to_string()
    } else {
        loaded.spec.name.clone()
    });
    let started = Instant::now();
    let report = sweep::run_shard(&loaded, shard, &out, args.backend, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })
    .map_err(failure)?;
    bar.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    eprintln!(
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
        let merged = sweep::merge(&out).map_err(failure)?;
        if let Some(csv) = &args.csv {
            write_csv(csv, &merged)?;
        }
        eprintln!("wrote {}", out.join("merged.jsonl").display());
    }
    Ok(())
}

/// The progress bar of a sweep: points done of the shard's, with an ETA.
pub(super) fn progress_bar(name: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] {pos}/{len} points, eta {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(name.to_owned());
    bar
}

/// Checks that a CSV output can be written, before any work.
pub(super) fn check_writable(csv: &Path) -> Result<(), Failure> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(csv)
        .map(drop)
        .map_err(|e| usage(format!("--csv {}: cannot write it: {e}", csv.display())))
}

fn write_csv(csv: &Path, merged: &sweep::Merged) -> Result<(), Failure> {
    std::fs::write(csv, sweep::csv_table(merged)).map_err(|e| Failure {
        code: 1,
        message: format!("cannot write {}: {e}", csv.display()),
    })?;
    eprintln!("wrote {}", csv.display());
    Ok(())
}

fn merge(dir: &Path, csv: Option<&Path>) -> Result<(), Failure> {
    if !dir.is_dir() {
        return Err(usage(format!("--merge {}: not a folder", dir.display())));
    }
    if let Some(csv) = csv {
        check_writable(csv)?;
    }
    let merged = sweep::merge(dir).map_err(|e| Failure {
        // A missing, duplicated or foreign shard is a problem of the input.
        code: 2,
        message: format!("{e:#}"),
    })?;
    eprintln!(
        "merged {} points into {}",
        merged.records.len(),
        dir.join("merged.jsonl").display()
    );
    if let Some(csv) = csv {
        write_csv(csv, &merged)?;
    }
    Ok(())
}

fn write_slurm(args: &SweepArgs, sweep_path: &Path, out: &Path) -> Result<(), Failure> {
    let tasks = args.tasks.unwrap_or(4);
    if !(1..=10_000).contains(&tasks) {
        return Err(usage(format!("--tasks {tasks}: allowed 1 to 10000")));
    }
    std::fs::create_dir_all(out)
        .map_err(|e| usage(format!("--out {}: cannot create it: {e}", out.display())))?;
    let absolute =
        |p: &Path| std::fs::canonicalize(p).map_err(|e| usage(format!("{}: {e}", p.display())));
    let job = slurm::JobSpec {
        binary: std::env::current_exe().map_err(|e| failure(e.into()))?,
        sweep: absolute(sweep_path)?,
        out: absolute(out)?,
        tasks,
        backend: format!("{:?}", args.backend).to_lowercase(),
        partition: args.partition.clone(),
        time: args.time.clone(),
        cpus_per_task: args.cpus_per_task,
    };
    let (array, merge) = slurm::write_scripts(&job).map_err(failure)?;
    eprintln!("wrote {} and {}", array.display(), merge.display());
    if args.submit {
        let (array_id, merge_id) = slurm::submit(&array, &merge).map_err(|e| Failure {
            code: 1,
            message: format!("{e:#}"),
        })?;
        eprintln!("submitted the array as job {array_id} and the merge as job {merge_id}");
        println!("{{\"array_job\":\"{array_id}\",\"merge_job\":\"{merge_id}\"}}");
    } else {
        eprintln!(
            "submit with: sbatch {}  (then the merge with --dependency=afterok:<its id>), or rerun with --submit",
            array.display()
        );
    }
    Ok(())
}
