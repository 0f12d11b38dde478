//! Issue #31, the command line's classes: SLURM submission (class 2), a closed or full
//! standard output (class 4) and errors that do not help (class 9). One test per class; each
//! fails on the code before its fix.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use crate::common::{s, stderr};
use crate::sweep::Cluster;

fn scratch(name: &str) -> PathBuf {
    common::scratch("reliability-cli", name)
}

/// A sweep of 8 small points of the default preset (2 per shard of 4).
fn write_sweep(dir: &Path) -> PathBuf {
    let path = dir.join("small.ron");
    std::fs::write(
        &path,
        "Sweep(name: \"small\", base: \"default\", set: {\"chains\": 100, \"steps\": 20},
           axes: [(field: \"sampler.h\",
                   values: List([0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08]))])",
    )
    .unwrap();
    path
}

/// The binary with `args` in `dir`, with a runtime folder of its own.
fn binary(args: &[&str], dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_atmc-lab"));
    command
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir());
    command
}

/// Writes an executable shell script `name` into `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `PATH` with `dir` in front.
fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Where a command's standard output goes.
#[derive(Clone, Copy, Debug)]
enum Sink {
    /// `/dev/full`: every write fails with ENOSPC.
    Full,
    /// A pipe whose reading end is closed before the command starts: EPIPE.
    Closed,
}

/// Runs `command` with its standard output on `sink`.
fn run_into(mut command: Command, sink: Sink) -> Output {
    match sink {
        Sink::Full => {
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .expect("/dev/full");
            command.stdout(full);
        }
        Sink::Closed => {
            let (reader, writer) = std::io::pipe().expect("a pipe");
            drop(reader);
            command.stdout(writer);
        }
    }
    command
        .stderr(Stdio::piped())
        .output()
        .expect("binary runs")
}

/// Asserts the failure of a result that could not be written: exit 1, one `error:` line
/// naming standard output, no panic.
fn assert_lost_output(what: &str, sink: Sink, out: &Output) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{what} into {sink:?}: exit {:?}\n{err}",
        out.status.code()
    );
    assert!(!err.contains("panicked"), "{what} into {sink:?}: {err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{what} into {sink:?}: {err}");
    assert!(
        errors[0].contains("standard output"),
        "{what} into {sink:?}: {err}"
    );
}

/// Class 4: every command whose result goes to standard output fails with exit 1 and one
/// `error:` line when that output is a closed pipe or a full disk, never with a panic (exit
/// 101) or exit 0; `sweep --slurm --submit` has said which jobs it submitted before.
#[test]
fn a_closed_or_full_stdout_fails_every_command_with_one_error_line() {
    let dir = scratch("stdout");
    let thermo = [
        "thermo",
        "thermo-quadratic",
        "--lr-min",
        "1e-3",
        "--lr-max",
        "1e-2",
        "--points",
        "3",
        "--chains",
        "200",
        "--steps",
        "100",
        "--out",
        "th",
    ];
    // The thermodynamics folder, made once with a readable output; the reruns below find
    // every point done and only print.
    let made = binary(&thermo, &dir).output().unwrap();
    assert!(made.status.success(), "{}", stderr(&made));
    let sweep = write_sweep(&dir);
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    script(&bin, "sbatch", "echo 4242");
    let commands: Vec<(&str, Vec<&str>)> = vec![
        ("presets", vec!["presets"]),
        (
            "run",
            vec!["run", "default", "--chains", "100", "--steps", "20"],
        ),
        ("bench", vec!["bench", "--chains", "1000", "--steps", "2"]),
        ("thermo", thermo.to_vec()),
        ("thermo --merge", vec!["thermo", "--merge", "th"]),
        (
            "sweep --slurm --submit",
            vec!["sweep", s(&sweep), "--out", "o", "--slurm", "--submit"],
        ),
    ];
    for sink in [Sink::Full, Sink::Closed] {
        for (what, args) in &commands {
            let mut command = binary(args, &dir);
            command.env("PATH", path_with(&bin));
            let out = run_into(command, sink);
            assert_lost_output(what, sink, &out);
            if what.starts_with("sweep") {
                assert!(
                    stderr(&out).contains("submitted the array as job 4242"),
                    "the submitted jobs are named before the failure: {}",
                    stderr(&out)
                );
            }
        }
    }
}

/// Waits (bounded) until `job` has left the queue of `cluster`.
fn wait_for_job(cluster: &Cluster, job: &str) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let queue = Command::new("squeue")
            .args(["-h", "-j", job])
            .env("SLURM_CONF", &cluster.conf)
            .output()
            .unwrap();
        if String::from_utf8_lossy(&queue.stdout).trim().is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "SLURM job {job} did not finish in 3 minutes"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Class 2: the values written into job scripts are checked before a script is written; the
/// shard count is fixed in the script, so a task started outside its array (`sbatch
/// --array=2`) runs shard 2 of 4 on a real cluster; and a merge that fails to submit leaves
/// the array's job id printed with the line that submits the merge alone.
#[test]
fn slurm_scripts_take_checked_values_a_fixed_shard_count_and_name_the_submitted_array() {
    let dir = scratch("slurm");
    let sweep = write_sweep(&dir);
    for (flag, value, needle) in [
        ("--partition", "debug\nhostname", "--partition"),
        ("--partition", "a b", "--partition"),
        ("--time", "bogus", "not a SLURM time limit"),
        ("--cpus-per-task", "0", "[1, 4096]"),
        ("--tasks", "-3", "[1, 10000]"),
    ] {
        let out = binary(
            &[
                "sweep",
                s(&sweep),
                "--out",
                "refused",
                "--slurm",
                flag,
                value,
            ],
            &dir,
        )
        .output()
        .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flag} {value:?}: {err}");
        assert!(err.contains(needle), "{flag} {value:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(
            !dir.join("refused/sweep.sbatch").exists(),
            "{flag} {value:?}: a script was written"
        );
    }

    let cluster = Cluster::start(dir.join("cluster"));
    // A task started alone, outside its array: shard 2 of the 4 the script was written for.
    let out = binary(
        &[
            "sweep",
            s(&sweep),
            "--out",
            "alone",
            "--slurm",
            "--tasks",
            "4",
        ],
        &dir,
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let submitted = Command::new("sbatch")
        .args(["--parsable", "--array=2", "alone/sweep.sbatch"])
        .current_dir(&dir)
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap();
    assert!(submitted.status.success(), "{}", stderr(&submitted));
    let job = String::from_utf8_lossy(&submitted.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    wait_for_job(&cluster, &job);
    let shard = dir.join("alone/shard-2-of-4.jsonl");
    assert!(
        shard.exists(),
        "the task did not run shard 2/4; its log: {}",
        std::fs::read_to_string(dir.join("alone/logs/shard-2.log")).unwrap_or_default()
    );
    let lines = std::fs::read_to_string(&shard).unwrap().lines().count();
    assert_eq!(lines, 1 + 2, "a header and the 2 points of shard 2 of 4");

    // The merge's submission fails (a wrapper refuses any job with a dependency); the array
    // is submitted to the real cluster, and its id is named with the way forward.
    let real = Command::new("sh")
        .args(["-c", "command -v sbatch"])
        .output()
        .unwrap();
    let real = String::from_utf8_lossy(&real.stdout).trim().to_owned();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    script(
        &bin,
        "sbatch",
        &format!(
            "case \"$*\" in *--dependency*) echo 'sbatch: error: Batch job submission failed: \
             simulated' >&2; exit 1;; esac\nexec {real} \"$@\""
        ),
    );
    let out = binary(
        &["sweep", s(&sweep), "--out", "half", "--slurm", "--submit"],
        &dir,
    )
    .env("PATH", path_with(&bin))
    .env("SLURM_CONF", &cluster.conf)
    .output()
    .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let id = err
        .split("submitted the array as job ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the array's id is not printed: {err}"));
    assert!(id.chars().all(|c| c.is_ascii_digit()), "{err}");
    assert!(
        err.contains(&format!("sbatch --dependency=afterok:{id}")),
        "the error says how to submit the merge alone: {err}"
    );
    drop(cluster);
}

/// Class 9: every refusal names the value and the allowed range, shortened, exit 2, before
/// any work: negative numbers are values in every command, whole numbers too large for their
/// type name the type's range, a 300-digit number is shown short, a lecture is named as one,
/// an output folder named like a shipped preset does not hide it, and `--panel`/`--out` are
/// refused before rendering.
#[test]
fn refusals_name_the_value_and_range_shortly_before_any_work() {
    let dir = scratch("refusals");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let huge = "9".repeat(300);
    std::fs::write(
        dir.join("huge.ron"),
        "Sweep(name: \"huge\", base: \"default\", axes: [(field: \"sampler.h\", values: \
         List([1e300]))])",
    )
    .unwrap();
    std::fs::write(
        dir.join("big.ron"),
        "Preset(name: \"big\", chains: 99999999999999999999)",
    )
    .unwrap();
    let lecture = root.join("presets/lectures/atmc.ron");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        // A negative value of a command without a range of its own for it.
        (
            vec![
                "thermo",
                "thermo-quadratic",
                "--lr-min",
                "-1",
                "--lr-max",
                "1",
            ],
            vec!["-1", "(0, 100]"],
        ),
        (
            vec!["thermo", "thermo-quadratic", "--chains", "-5"],
            vec!["-5", "[0, 4294967295]"],
        ),
        (
            vec!["bench", "--chains", "-2"],
            vec!["-2", "[0, 4294967295]"],
        ),
        (
            vec!["run", "default", "--steps", &huge],
            vec!["[0, 4294967295]"],
        ),
        (vec!["sweep", "huge.ron"], vec!["1e300", "(0, 10]"]),
        (vec!["run", "big.ron"], vec!["big.ron:1:", "4294967295"]),
        (
            vec!["run", s(&lecture)],
            vec!["a lecture", "Lectures menu", "lesson-langevin"],
        ),
        (
            vec![
                "record", "default", "--out", "r.gif", "--steps", "2", "--every", "1", "--panel",
                "nonesuch",
            ],
            vec!["--panel 'nonesuch'", "choose one of"],
        ),
        (
            vec!["screenshot", "default", "--out", ".", "--steps", "1"],
            vec!["--out .", "a folder"],
        ),
    ];
    for (args, needles) in &cases {
        let started = Instant::now();
        let out = common::atmc_lab_in(args, &dir);
        let err = stderr(&out);
        let shown: Vec<&str> = args.iter().map(|a| &a[..a.len().min(30)]).collect();
        assert_eq!(out.status.code(), Some(2), "{shown:?}: {err}");
        assert!(!err.contains("panicked"), "{shown:?}: {err}");
        for needle in needles {
            assert!(err.contains(needle), "{shown:?}: no {needle:?} in {err}");
        }
        // Numbers are shortened: no run of 40 digits anywhere.
        let longest_digits = err
            .split(|c: char| !c.is_ascii_digit())
            .map(str::len)
            .max()
            .unwrap_or(0);
        assert!(
            longest_digits < 40,
            "{shown:?}: a number of {longest_digits} digits in {err}"
        );
        // Refused before the work: no frame of the recording was rendered.
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{shown:?}: took {:?}",
            started.elapsed()
        );
    }
    // A folder named like a shipped preset (a sweep's output, say) does not hide it.
    std::fs::create_dir_all(dir.join("default")).unwrap();
    let out = common::atmc_lab_in(
        &[
            "run",
            "default",
            "--chains",
            "100",
            "--steps",
            "10",
            "--backend",
            "cpu",
        ],
        &dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // Any other folder is named as a folder.
    std::fs::create_dir_all(dir.join("results")).unwrap();
    let out = common::atmc_lab_in(&["run", "results"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("a folder, not a preset file"),
        "{}",
        stderr(&out)
    );
}
