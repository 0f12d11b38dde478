//! Sweeps as a researcher runs them: resumed after a kill, sharded and merged, refused when
//! malformed, and fanned out over a real single-node SLURM cluster.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
// Every call names the folder the binary runs in.
use crate::common::atmc_lab_in as atmc_lab;

fn scratch(name: &str) -> PathBuf {
    common::scratch("sweep", name)
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A small sweep file: 12 points of the default preset.
fn write_sweep(dir: &Path, chains: u32, steps: u32) -> PathBuf {
    let path = dir.join("small.ron");
    std::fs::write(
        &path,
        format!(
            "Sweep(name: \"small\", base: \"default\", set: {{\"chains\": {chains}, \"steps\": {steps}}},
               axes: [
                 (field: \"sampler.friction_sign\", values: List([-1.0, -0.2, 0.5, 1.0])),
                 (field: \"sampler.h\", values: Log(from: 0.01, to: 0.1, points: 3)),
               ])"
        ),
    )
    .unwrap();
    path
}

/// The records of a merged table, by index, as JSON values.
fn records(merged: &Path) -> Vec<Value> {
    std::fs::read_to_string(merged)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn run_ok(args: &[&str], dir: &Path) -> Output {
    let out = atmc_lab(args, dir);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_killed_sweep_resumes_and_writes_every_point_once_with_the_same_values() {
    let dir = scratch("resume");
    let sweep = write_sweep(&dir, 3000, 1500);
    run_ok(&["sweep", s(&sweep), "--out", "whole"], &dir);
    let whole = records(&dir.join("whole/merged.jsonl"));
    assert_eq!(whole.len(), 12);

    // Kill the second sweep with SIGKILL once a few points are written.
    let shard = dir.join("killed/shard-0-of-1.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args(["sweep", s(&sweep), "--out", "killed"])
        .current_dir(&dir)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let lines = std::fs::read_to_string(&shard).map_or(0, |t| t.lines().count());
        if lines >= 4 {
            break;
        }
        assert!(Instant::now() < deadline, "the sweep wrote nothing");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let written = std::fs::read_to_string(&shard).unwrap().lines().count() - 1;
    assert!(written < 12, "killed too late: {written} points");
    // A line cut by the kill is dropped on resume, its point runs again.
    let mut text = std::fs::read_to_string(&shard).unwrap();
    text.push_str("{\"index\": 11, \"coords\": [1.0, 0.");
    std::fs::write(&shard, text).unwrap();

    let resumed = run_ok(&["sweep", s(&sweep), "--out", "killed"], &dir);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(
        stderr.contains(&format!("{} already there", written)),
        "{stderr}"
    );
    let again = records(&dir.join("killed/merged.jsonl"));
    assert_eq!(
        again, whole,
        "the resumed sweep differs from the uninterrupted one"
    );
    // Every point once in the shard file itself.
    let mut indices: Vec<u64> = std::fs::read_to_string(&shard)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["index"]
                .as_u64()
                .unwrap()
        })
        .collect();
    indices.sort_unstable();
    assert_eq!(indices, (0..12).collect::<Vec<_>>());
}

#[test]
fn shards_merge_into_the_unsharded_table_and_bad_sets_are_refused() {
    let dir = scratch("shards");
    let sweep = write_sweep(&dir, 500, 200);
    run_ok(&["sweep", s(&sweep), "--out", "whole"], &dir);
    let whole = records(&dir.join("whole/merged.jsonl"));
    for i in 0..4 {
        run_ok(
            &[
                "sweep",
                s(&sweep),
                "--out",
                "parts",
                "--shard",
                &format!("{i}/4"),
            ],
            &dir,
        );
    }
    assert!(
        !dir.join("parts/merged.jsonl").exists(),
        "a shard does not merge"
    );
    let merged = run_ok(&["sweep", "--merge", "parts", "--csv", "parts.csv"], &dir);
    assert!(String::from_utf8_lossy(&merged.stderr).contains("merged 12 points"));
    assert_eq!(records(&dir.join("parts/merged.jsonl")), whole);
    let csv = std::fs::read_to_string(dir.join("parts.csv")).unwrap();
    assert_eq!(csv.lines().count(), 13);
    assert!(
        csv.starts_with("index,sampler.friction_sign,sampler.h,seed,"),
        "{csv}"
    );

    let fails = |what: &str, needle: &str| {
        let out = atmc_lab(&["sweep", "--merge", "parts"], &dir);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(err.contains(needle), "{what}: {err}");
    };
    // A missing point is named.
    let shard1 = dir.join("parts/shard-1-of-4.jsonl");
    let original = std::fs::read_to_string(&shard1).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    std::fs::write(
        &shard1,
        format!("{}\n{}\n", lines[0], lines[2..].join("\n")),
    )
    .unwrap();
    fails(
        "missing",
        "the first is point 1 (sampler.friction_sign = -1, sampler.h = 0.0316",
    );
    // A duplicated point is named.
    std::fs::write(&shard1, format!("{original}{}\n", lines[1])).unwrap();
    fails("duplicated", "point 1 (");
    std::fs::write(&shard1, &original).unwrap();
    // A shard of a sweep with another base preset is refused.
    std::fs::create_dir_all(dir.join("other")).unwrap();
    let other = write_sweep(&dir.join("other"), 600, 200);
    run_ok(
        &["sweep", s(&other), "--out", "foreign", "--shard", "2/4"],
        &dir,
    );
    std::fs::copy(
        dir.join("foreign/shard-2-of-4.jsonl"),
        dir.join("parts/shard-2-of-4.jsonl"),
    )
    .unwrap();
    fails("foreign", "different base preset");
}

/// The sweep-v1 fixture: shard files and a merged table written by the release before typed
/// sweep records (its README says how).
fn fixture_v1() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-v1")
}

#[test]
fn shard_folders_of_the_release_before_typed_records_resume_and_merge_into_its_table() {
    let fixture = fixture_v1();
    let dir = scratch("fixture-v1");
    for file in ["sweep.ron", "base.ron"] {
        std::fs::copy(fixture.join(file), dir.join(file)).unwrap();
    }
    let expected = std::fs::read_to_string(fixture.join("merged.jsonl")).unwrap();
    let read = |path: &str| std::fs::read_to_string(dir.join(path)).unwrap();
    let copy_shards = |out: &str, names: &[&str]| {
        std::fs::create_dir_all(dir.join(out)).unwrap();
        for name in names {
            std::fs::copy(fixture.join("shards").join(name), dir.join(out).join(name)).unwrap();
        }
    };

    // Shard 0 complete, shard 1 stopped after its first point: both resume.
    copy_shards("resumed", &["shard-0-of-2.jsonl", "shard-1-of-2.jsonl"]);
    let before = read("resumed/shard-1-of-2.jsonl");
    for (shard, said) in [
        ("0/2", "0 points run, 2 already there"),
        ("1/2", "1 points run, 1 already there"),
    ] {
        let out = run_ok(
            &["sweep", "sweep.ron", "--out", "resumed", "--shard", shard],
            &dir,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "shard {shard}: {err}");
    }
    assert!(
        read("resumed/shard-1-of-2.jsonl").starts_with(&before),
        "the earlier release's lines are kept as they were written"
    );
    run_ok(&["sweep", "--merge", "resumed"], &dir);
    assert_eq!(
        read("resumed/merged.jsonl"),
        expected,
        "the resumed folder merges into the earlier release's table, byte for byte"
    );

    // A shard the earlier release never started joins the folder under the folder's hash.
    copy_shards("joined", &["shard-0-of-2.jsonl"]);
    run_ok(
        &["sweep", "sweep.ron", "--out", "joined", "--shard", "1/2"],
        &dir,
    );
    run_ok(&["sweep", "--merge", "joined"], &dir);
    assert_eq!(read("joined/merged.jsonl"), expected);

    // A new folder carries the current hash and, that aside, the same bytes.
    run_ok(&["sweep", "sweep.ron", "--out", "fresh"], &dir);
    let fresh = read("fresh/merged.jsonl");
    let hash = |table: &str| -> String {
        let header: Value = serde_json::from_str(table.lines().next().unwrap()).unwrap();
        header["sweep_hash"].as_str().unwrap().to_owned()
    };
    assert_eq!(hash(&expected), "264668d29dbb57b2");
    assert!(hash(&fresh).starts_with("v2-"), "{}", hash(&fresh));
    assert_eq!(fresh.replace(&hash(&fresh), &hash(&expected)), expected);
}

#[test]
fn bad_sweep_files_are_refused_before_any_work() {
    let dir = scratch("bad");
    let cases = [
        (
            "(field: \"sampler.hh\", values: List([0.1]))",
            "unknown field sampler.hh",
        ),
        (
            "(field: \"sampler.h\", values: List([]))",
            "at least one value",
        ),
        (
            "(field: \"sampler.h\", values: Log(from: 0.001, to: 0.1, points: 1000000000))",
            "at most",
        ),
        (
            "(field: \"sampler.h\", values: Log(from: 0.001, to: 0.1, points: 40000)),
             (field: \"sampler.mass\", values: Log(from: 0.1, to: 10.0, points: 25000))",
            "1000000000 points",
        ),
        (
            "(field: \"sampler.h\", values: List([NaN]))",
            "not a finite",
        ),
    ];
    for (axes, needle) in cases {
        let path = dir.join("bad.ron");
        std::fs::write(&path, format!("Sweep(base: \"default\", axes: [{axes}])")).unwrap();
        let started = Instant::now();
        let out = atmc_lab(&["sweep", s(&path), "--out", "never"], &dir);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{axes}: {err}");
        assert!(
            err.contains("bad.ron:") && err.contains(needle),
            "{axes}: {err}"
        );
        assert!(started.elapsed() < Duration::from_secs(20));
        assert!(
            !dir.join("never").exists(),
            "{axes}: output created before the check"
        );
    }
    let out = atmc_lab(&["sweep", "--merge", "nowhere"], &dir);
    assert_eq!(out.status.code(), Some(2));
}

/// A single-node SLURM cluster for the duration of a test, stopped (by the pids it started)
/// when dropped. Shared with the reliability tests of `sweep --slurm`.
pub(crate) struct Cluster {
    dir: PathBuf,
    /// Its `slurm.conf`: `SLURM_CONF` of every SLURM command meant for it.
    pub(crate) conf: PathBuf,
}

impl Cluster {
    /// Starts the cluster in `dir` (panics, loudly, where SLURM cannot run).
    pub(crate) fn start(dir: PathBuf) -> Cluster {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-cluster");
        let out = Command::new(&script)
            .args(["start", s(&dir)])
            .output()
            .expect("scripts/slurm-cluster runs");
        // No SLURM here is a failure of the test set-up, said loudly: never a silent skip.
        assert!(
            out.status.success(),
            "cannot start the SLURM cluster (exit {:?}): {}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Cluster {
            conf: dir.join("slurm.conf"),
            dir,
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-cluster");
        let _ = Command::new(script).args(["stop", s(&self.dir)]).output();
    }
}

#[test]
fn a_sweep_sharded_over_a_real_slurm_cluster_merges_into_the_unsharded_table() {
    let dir = scratch("slurm");
    let sweep = write_sweep(&dir, 500, 200);
    run_ok(&["sweep", s(&sweep), "--out", "whole"], &dir);
    let whole = records(&dir.join("whole/merged.jsonl"));

    let cluster = Cluster::start(dir.join("cluster"));
    let submitted = Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args([
            "sweep",
            s(&sweep),
            "--out",
            "onslurm",
            "--slurm",
            "--tasks",
            "4",
            "--submit",
        ])
        .current_dir(&dir)
        .env("SLURM_CONF", &cluster.conf)
        .output()
        .unwrap();
    assert!(
        submitted.status.success(),
        "{}",
        String::from_utf8_lossy(&submitted.stderr)
    );
    let ids: Value = serde_json::from_slice(&submitted.stdout).unwrap();
    let merge_job = ids["merge_job"].as_str().unwrap().to_owned();
    let script = std::fs::read_to_string(dir.join("onslurm/sweep.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --array=0-3"), "{script}");

    // Wait (bounded) until the merge job has left the queue.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let queue = Command::new("squeue")
            .args(["-h", "-j", &merge_job])
            .env("SLURM_CONF", &cluster.conf)
            .output()
            .unwrap();
        if String::from_utf8_lossy(&queue.stdout).trim().is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the SLURM jobs did not finish in 3 minutes"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let merged = dir.join("onslurm/merged.jsonl");
    assert!(
        merged.exists(),
        "the merge job did not run; its log: {}",
        std::fs::read_to_string(dir.join("onslurm/logs/merge.log")).unwrap_or_default()
    );
    assert_eq!(
        records(&merged),
        whole,
        "the SLURM sweep differs from the unsharded one"
    );
    assert!(dir.join("onslurm/merged.csv").exists());
    for k in 0..4 {
        assert!(dir.join(format!("onslurm/shard-{k}-of-4.jsonl")).exists());
    }
    drop(cluster);
}

#[test]
fn submitting_without_slurm_says_so_at_once() {
    let dir = scratch("noslurm");
    let sweep = write_sweep(&dir, 100, 10);
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args(["sweep", s(&sweep), "--out", "o", "--slurm", "--submit"])
        .current_dir(&dir)
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot run sbatch") && err.contains("SLURM"),
        "{err}"
    );
    assert!(
        dir.join("o/sweep.sbatch").exists(),
        "the scripts are written anyway"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// The 50 % crossing of the diverged fraction along h (interpolated in log h), if any.
fn crossing(points: &[(f64, f64)]) -> Option<f64> {
    points.windows(2).find_map(|w| {
        let ((h0, f0), (h1, f1)) = (w[0], w[1]);
        (f0 < 0.5 && f1 >= 0.5).then(|| {
            let t = (0.5 - f0) / (f1 - f0);
            (h0.ln() + t * (h1.ln() - h0.ln())).exp()
        })
    })
}

#[test]
fn the_explosion_boundary_follows_h_sqrt_phi_as_the_thermostat_blowup_predicts() {
    let dir = scratch("boundary");
    let sweep = dir.join("boundary.ron");
    std::fs::write(
        &sweep,
        "Sweep(base: \"default\", set: {\"chains\": 1000, \"steps\": 400},
           axes: [
             (field: \"sampler.friction_sign\", values: List([-1.0, -0.5, -0.25, -0.1, 1.0])),
             (field: \"sampler.h\", values: Log(from: 0.001, to: 0.05, points: 15)),
           ])",
    )
    .unwrap();
    run_ok(&["sweep", s(&sweep), "--out", "out"], &dir);
    let records = records(&dir.join("out/merged.jsonl"));
    let row = |phi: f64| -> Vec<(f64, f64)> {
        records
            .iter()
            .filter(|r| r["coords"][0].as_f64() == Some(phi))
            .map(|r| {
                (
                    r["coords"][1].as_f64().unwrap(),
                    r["run"]["diverged_fraction"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let mut scaled = Vec::new();
    for phi in [-1.0, -0.5, -0.25, -0.1] {
        let h =
            crossing(&row(phi)).unwrap_or_else(|| panic!("φ {phi}: no crossing {:?}", row(phi)));
        let theory =
            atmc_lab::diagnostics::growth::thermostat_blowup_step_size(phi, 1.0, 400).unwrap();
        assert!(
            (0.5..=1.2).contains(&(h / theory)),
            "φ {phi}: boundary h {h:.4} vs the blow-up estimate {theory:.4}"
        );
        scaled.push(h * f64::abs(phi).sqrt());
    }
    let (lo, hi) = scaled
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(a, b), v| (a.min(*v), b.max(*v)));
    assert!(hi / lo < 1.5, "h·√|φ| along the boundary: {scaled:?}");
    // φ·h is far from constant along it (the per-step factor alone would predict that).
    assert!(scaled[0] / (scaled[3] / 0.1_f64.sqrt() * 0.1) > 2.0);
    assert!(
        row(1.0).iter().all(|&(_, f)| f == 0.0),
        "correct sign diverged: {:?}",
        row(1.0)
    );
}

#[cfg(feature = "gui")]
#[test]
fn the_sweep_view_shows_a_merged_sweep_and_a_click_opens_its_point_live() {
    use atmc_lab::app::screenshot::harness;
    use atmc_lab::app::sweep::SweepView;
    use atmc_lab::app::view::View;
    use atmc_lab::app::{Opening, Tab};
    use atmc_lab::engine::BackendChoice;
    use atmc_lab::preset::AnyPreset;

    let dir = scratch("view");
    let sweep = write_sweep(&dir, 200, 50);
    run_ok(&["sweep", s(&sweep), "--out", "out"], &dir);
    let merged = dir.join("out/merged.jsonl");
    let mut h = harness(
        Opening::Sweep(merged.clone()),
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
    );
    h.run_steps(3);
    let app = h.state().as_ref().unwrap();
    assert_eq!(app.tab, Tab::Sweep);
    let view = app.get::<SweepView>().unwrap();
    assert_eq!(view.table().unwrap().records.len(), 12);
    assert_eq!(view.statistic, "diverged_fraction");
    let (_, plot) = view.panels()[0].clone();

    // Click the middle of the map: the point under it opens in the 2-D view.
    let at = plot.center();
    h.hover_at(at);
    h.step();
    h.drag_at(at);
    h.step();
    h.drop_at(at);
    h.run_steps(3);
    let app = h.state().as_ref().unwrap();
    assert_eq!(app.tab, Tab::Posterior, "the click opened the point");
    let Some(AnyPreset::Toy(opened)) = app.active().preset() else {
        panic!("a 2-D preset is shown");
    };
    let view = app.get::<SweepView>().unwrap();
    let found =
        (0..12).any(|k| matches!(view.point_preset(k), Ok(AnyPreset::Toy(p)) if p == opened));
    assert!(
        found,
        "the opened preset is one of the sweep's points: {opened:?}"
    );
    assert!([-1.0, -0.2, 0.5, 1.0].contains(&opened.sampler.friction_sign));

    // Without divergences anywhere (the points of positive friction sign alone) the map
    // colours by a statistic that varies, not by a flat diverged fraction.
    let text = std::fs::read_to_string(&merged).unwrap();
    let calm: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(i, line)| *i == 0 || line.contains("\"diverged_fraction\":0.0,"))
        .map(|(_, line)| line)
        .collect();
    assert!(
        calm.len() > 2,
        "points without divergence: {}",
        calm.len() - 1
    );
    let calm_path = dir.join("calm.jsonl");
    std::fs::write(&calm_path, calm.join("\n") + "\n").unwrap();
    let mut calm_view = SweepView::new(BackendChoice::Cpu, dir.join("sweeps"));
    calm_view.open(&calm_path).unwrap();
    assert_ne!(calm_view.statistic, "diverged_fraction");
    assert!(!calm_view.statistic.is_empty());

    // A file that is not a sweep is refused with a message, and the view stays.
    std::fs::write(dir.join("bad.jsonl"), "not json\n").unwrap();
    let mut bad = SweepView::new(BackendChoice::Cpu, dir.join("sweeps"));
    assert!(bad.open(&dir.join("bad.jsonl")).is_err());
    assert!(atmc_lab::app::is_sweep_path(&merged));
    assert!(atmc_lab::app::is_sweep_path(&sweep));
    // From the crate's root: a test of this binary may have moved the working directory.
    assert!(!atmc_lab::app::is_sweep_path(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/presets/default.ron"
    ))));
}
