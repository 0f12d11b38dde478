//! Issue #31, the classes of the file system: concurrent writers (one lock per file a process
//! writes, the holder named), partial files at a final path (every final path written under a
//! temporary name and renamed when complete), and results lost with exit 0. One test per
//! class; each races or signals processes with bounded waits only.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, atmc_lab_in};
use crate::common::{s, stderr};

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    common::scratch("reliability-io", name)
}

/// Starts `atmc-lab args` in `dir`, stdout and stderr discarded.
pub(crate) fn spawn(args: &[&str], dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("binary runs")
}

/// Waits (at most `seconds`, polling) until `done` holds; panics naming `what` otherwise.
pub(crate) fn wait_until(seconds: u64, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not after {seconds} s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits for a child at most `seconds`, killing it (and failing) after that.
pub(crate) fn wait_child(child: &mut Child, seconds: u64, what: &str) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {seconds} s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sends `signal` ("INT", "TERM", "KILL") to a child through kill(1).
pub(crate) fn signal(child: &Child, signal: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill(1) runs");
}

/// Whether `dir` holds a file whose name contains `part`.
fn holds(dir: &Path, part: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().contains(part))
    })
}

/// A sweep of 12 points of the default preset, each `chains` × `steps`.
fn write_sweep(dir: &Path, chains: u32, steps: u32, keep: &str) -> PathBuf {
    let path = dir.join("small.ron");
    std::fs::write(
        &path,
        format!(
            "Sweep(name: \"small\", base: \"default\", set: {{\"chains\": {chains}, \"steps\": {steps}}},
               axes: [
                 (field: \"sampler.friction_sign\", values: List([-1.0, -0.2, 0.5, 1.0])),
                 (field: \"sampler.h\", values: Log(from: 0.01, to: 0.1, points: 3)),
               ],
               keep: [{keep}])"
        ),
    )
    .unwrap();
    path
}

/// The record indices of a shard file (its complete lines after the header).
fn indices(shard: &Path) -> Vec<u64> {
    std::fs::read_to_string(shard)
        .unwrap()
        .split_inclusive('\n')
        .skip(1)
        .filter(|l| l.ends_with('\n'))
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["index"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

#[test]
fn a_second_writer_of_a_sweep_shard_is_refused_naming_the_holder() {
    let dir = scratch("writers");
    let sweep = write_sweep(&dir, 20_000, 2_000, "");
    let shard = dir.join("out/shard-0-of-1.jsonl");
    let mut first = spawn(&["sweep", s(&sweep), "--out", "out"], &dir);
    wait_until(120, "the first sweep's first record", || {
        std::fs::read_to_string(&shard).is_ok_and(|t| t.lines().count() >= 2)
    });
    // The same shard: refused at once, exit 2, naming the first process.
    let second = atmc_lab_in(&["sweep", s(&sweep), "--out", "out"], &dir);
    let err = stderr(&second);
    let still_running = first.try_wait().unwrap().is_none();
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("pid {} on host", first.id())),
        "the refusal names the holder: {err}"
    );
    // Another shard of the same folder (a SLURM array's task) is written side by side.
    let side = atmc_lab_in(
        &["sweep", s(&sweep), "--out", "out", "--shard", "11/12"],
        &dir,
    );
    assert!(side.status.success(), "{}", stderr(&side));
    // A merge while a shard is being written is refused, naming its writer.
    if still_running && first.try_wait().unwrap().is_none() {
        let merge = atmc_lab_in(&["sweep", "--merge", "out"], &dir);
        assert_eq!(merge.status.code(), Some(2), "{}", stderr(&merge));
        assert!(stderr(&merge).contains("on host"), "{}", stderr(&merge));
    }
    signal(&first, "KILL");
    wait_child(&mut first, 60, "the killed sweep");
    // Every point the first sweep wrote is there once: the second wrote nothing into it.
    let mut found = indices(&shard);
    let n = found.len();
    found.sort_unstable();
    found.dedup();
    assert_eq!(found.len(), n, "a point written twice: {found:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_final_path_is_left_partial() {
    let dir = scratch("partial");
    // SIGTERM during `run --csv`: no CSV cut mid-number at the final path.
    let csv = dir.join("series.csv");
    let mut run = spawn(
        &[
            "run",
            "default",
            "--backend",
            "cpu",
            "--chains",
            "20000",
            "--steps",
            "20000",
            "--csv",
            s(&csv),
        ],
        &dir,
    );
    // Rows are being written (under whatever name) once the folder holds a file.
    wait_until(60, "the run's CSV", || holds(&dir, "series.csv"));
    std::thread::sleep(Duration::from_millis(300));
    signal(&run, "TERM");
    let status = wait_child(&mut run, 60, "the signalled run");
    assert!(!status.success(), "the run ended before the signal");
    assert!(
        !csv.exists(),
        "a killed run left {} ({} bytes)",
        csv.display(),
        std::fs::metadata(&csv).map_or(0, |m| m.len())
    );

    // A shard left empty by a full disk during its header is written afresh, not refused
    // until deleted by hand; a damaged header is refused saying what to do.
    let sweep = write_sweep(&dir, 200, 50, "");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    std::fs::write(dir.join("empty/shard-0-of-1.jsonl"), "").unwrap();
    let out = atmc_lab_in(&["sweep", s(&sweep), "--out", "empty"], &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(indices(&dir.join("empty/shard-0-of-1.jsonl")).len(), 12);
    std::fs::create_dir_all(dir.join("damaged")).unwrap();
    std::fs::write(dir.join("damaged/shard-0-of-1.jsonl"), "{\"sweep\": 1}\n").unwrap();
    let out = atmc_lab_in(&["sweep", s(&sweep), "--out", "damaged"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("move it away"), "{}", stderr(&out));

    // An unknown --panel: exit 2 and no file at all, not an empty GIF.
    #[cfg(feature = "gui")]
    {
        let gif = dir.join("panel.gif");
        let out = atmc_lab_in(
            &[
                "record",
                "default",
                "--steps",
                "2",
                "--every",
                "1",
                "--size",
                "320x240",
                "--panel",
                "no such panel",
                "--out",
                s(&gif),
            ],
            &dir,
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("--panel"), "{}", stderr(&out));
        assert!(!gif.exists(), "an unknown panel left {}", gif.display());
    }
    // No temporary file is left by the failures above (a kill may leave one; they did not).
    assert!(!holds(&dir.join("empty"), ".tmp"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_result_is_lost_with_exit_0() {
    let dir = scratch("lost");
    // A misspelled statistic in `keep`: refused, not every record stored as "run": {}.
    let sweep = write_sweep(&dir, 200, 50, "\"rhat_maxx\"");
    let out = atmc_lab_in(&["sweep", s(&sweep), "--out", "keep"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("rhat_maxx") && stderr(&out).contains("rhat_max,"),
        "{}",
        stderr(&out)
    );
    let shard = dir.join("keep/shard-0-of-1.jsonl");
    assert!(!shard.exists() || indices(&shard).is_empty());

    // `thermo` into a folder of another grid: refused before thermo.ron is rewritten.
    let thermo = |points: &str| {
        atmc_lab_in(
            &[
                "thermo",
                "thermo-quadratic",
                "--lr-min",
                "0.01",
                "--lr-max",
                "0.1",
                "--points",
                points,
                "--chains",
                "200",
                "--steps",
                "200",
                "--out",
                "grid",
            ],
            &dir,
        )
    };
    let out = thermo("2");
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(dir.join("grid/thermo.ron")).unwrap();
    let out = thermo("3");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("another sweep"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("grid/thermo.ron")).unwrap(),
        written,
        "thermo.ron no longer matches the shards beside it"
    );

    // A --csv whose folder is removed during the run: exit 1, not 0 and no CSV.
    let gone = dir.join("gone");
    std::fs::create_dir_all(&gone).unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args([
            "run",
            "default",
            "--backend",
            "cpu",
            "--chains",
            "20000",
            "--steps",
            "4000",
            "--csv",
            "gone/series.csv",
        ])
        .current_dir(&dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(60, "the run's CSV", || holds(&gone, "series.csv"));
    std::fs::remove_dir_all(&gone).unwrap();
    let status = wait_child(&mut run, 120, "the run");
    let mut err = String::new();
    std::io::Read::read_to_string(run.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("series.csv"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
