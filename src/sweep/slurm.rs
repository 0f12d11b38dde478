//! SLURM job scripts for a sweep: a job array whose task k runs shard k of n, and a merge job
//! that runs after every task succeeded (`--dependency=afterok`).

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

/// The two scripts, as text.
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
         # atmc-lab sweep: task k of the array runs shard k (every {n}-th point); a task that\n\
         # is run again resumes its shard where it stopped.\n\
         #SBATCH --job-name=atmc-sweep\n\
         #SBATCH --array=0-{last}\n\
         #SBATCH --output={logs}/shard-%a.log\n\
         {task_directives}\
         set -euo pipefail\n\
         exec {bin} sweep {sweep} --out {out} --backend {backend} \\\n    \
         --shard \"$SLURM_ARRAY_TASK_ID/${{SLURM_ARRAY_TASK_COUNT:-{n}}}\"\n",
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
/// Without `sbatch` on the PATH, a clear error (never a hang).
pub fn submit(array: &Path, merge: &Path) -> anyhow::Result<(String, String)> {
    let array_id = sbatch(&[array.as_os_str().to_owned()])?;
    let merge_id = sbatch(&[
        format!("--dependency=afterok:{array_id}").into(),
        merge.as_os_str().to_owned(),
    ])?;
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
        assert!(array.contains("--shard \"$SLURM_ARRAY_TASK_ID/${SLURM_ARRAY_TASK_COUNT:-4}\""));
        assert!(merge.contains("sweep --merge /data/out --csv /data/out/merged.csv"));
        assert!(merge.contains("#SBATCH --partition=debug\n"));
        assert!(!merge.contains("cpus-per-task"));
    }
}
