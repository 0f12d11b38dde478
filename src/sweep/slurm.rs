//! SLURM job scripts for a sweep: a job array whose task k runs shard k of n, and a merge job
//! that runs after every task succeeded (`--dependency=afterok`).
//!
//! Everything a script says is fixed when it is written: the shard count n is a literal (a
//! task started outside its array, `sbatch --array=2 sweep.sbatch`, still runs shard 2 of n,
//! not of the one task SLURM counts), and every value written into a directive (partition,
//! time limit, CPUs) is checked by [`partition`], [`time_limit`] and [`CPUS_PER_TASK`] before
//! any file is written, so a newline cannot smuggle a command into a script and a time limit
//! SLURM would not understand is refused here rather than on the cluster.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the scripts run and where.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// The atmc-lab binary (absolute: the compute nodes run it from the shared file system).
    pub binary: PathBuf,
    /// The sweep file (absolute).
    pub sweep: PathBuf,
    /// The output folder (absolute), shared by every task.
    pub out: PathBuf,
    /// Array tasks = shards.
    pub tasks: u32,
    /// Backend of every point.
    pub backend: String,
    /// `--partition`, if any.
    pub partition: Option<String>,
    /// `--time` limit per task, if any.
    pub time: Option<String>,
    /// `--cpus-per-task`, if any.
    pub cpus_per_task: Option<u32>,
}

/// The CPUs per task a script may ask for.
pub const CPUS_PER_TASK: std::ops::RangeInclusive<u32> = 1..=4096;

/// Checks a `--partition`: one SLURM partition name, or a comma-separated list of them
/// (letters, digits, `_`, `-`, `.`), as it will be written into `#SBATCH --partition=`.
pub fn partition(text: &str) -> Result<String, String> {
    let ok = |name: &str| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    };
    if text.split(',').all(ok) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "--partition {text:?}: not a partition name (letters, digits, '_', '-', '.'; \
             several separated by commas)"
        ))
    }
}

/// Checks a `--time` limit in one of SLURM's formats: `M`, `M:S`, `H:M:S`, `D-H`,
/// `D-H:M`, `D-H:M:S` (whole numbers), or `UNLIMITED`/`INFINITE`.
pub fn time_limit(text: &str) -> Result<String, String> {
    let number = |s: &str| !s.is_empty() && s.len() <= 9 && s.chars().all(|c| c.is_ascii_digit());
    let clock_ok = |s: &str, max_parts: usize| {
        let parts: Vec<&str> = s.split(':').collect();
        parts.len() <= max_parts && parts.iter().all(|p| number(p))
    };
    let ok = matches!(text, "UNLIMITED" | "INFINITE" | "unlimited" | "infinite")
        || match text.split_once('-') {
            Some((days, rest)) => number(days) && clock_ok(rest, 3),
            None => clock_ok(text, 3),
        };
    if ok {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "--time {text:?}: not a SLURM time limit; use minutes (90), M:S, H:M:S (1:30:00), \
             D-H, D-H:M, D-H:M:S (2-12:00:00) or UNLIMITED"
        ))
    }
}

impl JobSpec {
    /// Checks every value that is written into a script (the command line checks them as it
    /// parses; this keeps a `JobSpec` built in code to the same rules).
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(1..=MAX_TASKS).contains(&self.tasks) {
            bail!("--tasks {}: out of range [1, {MAX_TASKS}]", self.tasks);
        }
        if let Some(p) = &self.partition {
            partition(p).map_err(anyhow::Error::msg)?;
        }
        if let Some(t) = &self.time {
            time_limit(t).map_err(anyhow::Error::msg)?;
        }
        if let Some(c) = self.cpus_per_task
            && !CPUS_PER_TASK.contains(&c)
        {
            bail!(
                "--cpus-per-task {c}: out of range [{}, {}]",
                CPUS_PER_TASK.start(),
                CPUS_PER_TASK.end()
            );
        }
        Ok(())
    }
}

/// The most array tasks (shards) a script may have.
pub const MAX_TASKS: u32 = 10_000;

/// The two scripts, as text (for a [`JobSpec`] that passed [`JobSpec::validate`]).
pub fn scripts(job: &JobSpec) -> (String, String) {
    let mut directives = String::new();
    if let Some(p) = &job.partition {
        directives.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    if let Some(t) = &job.time {
        directives.push_str(&format!("#SBATCH --time={t}\n"));
    }
    let mut task_directives = directives.clone();
    if let Some(c) = job.cpus_per_task {
        task_directives.push_str(&format!("#SBATCH --cpus-per-task={c}\n"));
    }
    let quote = |p: &Path| shell_quote(&p.display().to_string());
    let logs = job.out.join("logs");
    let array = format!(
        "#!/bin/bash\n\
         # atmc-lab sweep: task k of the array runs shard k of {n} (every {n}-th point); a task\n\
         # that is run again resumes its shard where it stopped. The shard count is fixed here,\n\
         # so `sbatch --array=K` of this file reruns shard K of {n} alone.\n\
         #SBATCH --job-name=atmc-sweep\n\
         #SBATCH --array=0-{last}\n\
         #SBATCH --output={logs}/shard-%a.log\n\
         {task_directives}\
         set -euo pipefail\n\
         exec {bin} sweep {sweep} --out {out} --backend {backend} \\\n    \
         --shard \"$SLURM_ARRAY_TASK_ID/{n}\"\n",
        n = job.tasks,
        last = job.tasks - 1,
        logs = quote(&logs),
        bin = quote(&job.binary),
        sweep = quote(&job.sweep),
        out = quote(&job.out),
        backend = job.backend,
    );
    let merge = format!(
        "#!/bin/bash\n\
         # atmc-lab sweep: merges the shards once every array task succeeded.\n\
         #SBATCH --job-name=atmc-sweep-merge\n\
         #SBATCH --output={logs}/merge.log\n\
         {directives}\
         set -euo pipefail\n\
         exec {bin} sweep --merge {out} --csv {csv}\n",
        logs = quote(&logs),
        bin = quote(&job.binary),
        out = quote(&job.out),
        csv = quote(&job.out.join("merged.csv")),
    );
    (array, merge)
}

fn shell_quote(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Writes `sweep.sbatch` and `merge.sbatch` into the output folder (and its `logs/`).
/// Returns their paths.
pub fn write_scripts(job: &JobSpec) -> anyhow::Result<(PathBuf, PathBuf)> {
    job.validate()?;
    let logs = job.out.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let (array, merge) = scripts(job);
    let array_path = job.out.join("sweep.sbatch");
    let merge_path = job.out.join("merge.sbatch");
    for (path, text) in [(&array_path, array), (&merge_path, merge)] {
        crate::fsutil::write_atomic(path, text)?;
    }
    Ok((array_path, merge_path))
}

/// Submits the array, then the merge depending on it. Returns (array job id, merge job id).
/// Without `sbatch` on the PATH, a clear error (never a hang). `submitted` is told the array's
/// id as soon as it has one, before the merge is tried: a merge that fails to submit then
/// leaves the array's id printed, and the error says how to submit the merge alone (the
/// array must not be submitted twice).
pub fn submit(
    array: &Path,
    merge: &Path,
    submitted: &mut dyn FnMut(&str),
) -> anyhow::Result<(String, String)> {
    let array_id = sbatch(&[array.as_os_str().to_owned()])?;
    submitted(&array_id);
    let merge_id = sbatch(&[
        format!("--dependency=afterok:{array_id}").into(),
        merge.as_os_str().to_owned(),
    ])
    .with_context(|| {
        format!(
            "the array is submitted as job {array_id} (do not submit it again), but its merge \
             is not; submit the merge with: sbatch --dependency=afterok:{array_id} {}",
            shell_quote(&merge.display().to_string())
        )
    })?;
    Ok((array_id, merge_id))
}

fn sbatch(args: &[std::ffi::OsString]) -> anyhow::Result<String> {
    let output = Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot run sbatch ({e}): is SLURM installed and on the PATH? The scripts are \
                 written; submit them on the cluster with sbatch"
            )
        })?;
    if !output.status.success() {
        bail!(
            "sbatch failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    // `--parsable` prints "id" or "id;cluster".
    let text = String::from_utf8_lossy(&output.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_owned();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
        bail!("sbatch printed no job id: {}", text.trim());
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_run_the_shards_and_merge_after_them() {
        let job = JobSpec {
            binary: "/opt/atmc lab/atmc-lab".into(),
            sweep: "/data/s.ron".into(),
            out: "/data/out".into(),
            tasks: 4,
            backend: "cpu".into(),
            partition: Some("debug".into()),
            time: None,
            cpus_per_task: Some(2),
        };
        let (array, merge) = scripts(&job);
        assert!(array.contains("#SBATCH --array=0-3\n"), "{array}");
        assert!(array.contains("#SBATCH --cpus-per-task=2\n"));
        assert!(array.contains("'/opt/atmc lab/atmc-lab' sweep /data/s.ron --out /data/out"));
        assert!(array.contains("--shard \"$SLURM_ARRAY_TASK_ID/4\""));
        assert!(merge.contains("sweep --merge /data/out --csv /data/out/merged.csv"));
        assert!(merge.contains("#SBATCH --partition=debug\n"));
        assert!(!merge.contains("cpus-per-task"));
    }

    #[test]
    fn directive_values_are_checked() {
        assert!(partition("debug").is_ok() && partition("gpu,cpu-long").is_ok());
        for bad in ["", "debug\nhostname", "a b", "x;y", "a,,b"] {
            assert!(partition(bad).is_err(), "{bad:?}");
        }
        for good in ["90", "30:00", "1:00:00", "2-12", "2-12:30", "2-12:30:00", "UNLIMITED"] {
            assert!(time_limit(good).is_ok(), "{good}");
        }
        for bad in ["bogus", "", "1:2:3:4", "1h", "-1", "1:00:00\n#SBATCH", "2-"] {
            assert!(time_limit(bad).is_err(), "{bad:?}");
        }
    }
}
