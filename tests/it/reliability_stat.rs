//! Issue #31, the statistical classes: a pass for runs that never moved (6), unbounded work
//! behind a valid input (7) and bad data accepted (8). One test per class.

use atmc_lab::diagnostics::thermodynamics::diverged_note;
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::Preset;
use atmc_lab::runner;
use std::path::Path;
use std::process::Output;

use crate::common::{self, atmc_lab};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn last_json(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().expect("stdout has a line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Class 6: chains that barely left their start get no pass. The example (before:
/// every point "stationary: yes", T_gibbs 1.0009 against 0.0001, the Gibbs test passed) is
/// excluded as never moved and fails the Gibbs test; `run` warns of the same, and of an
/// energy distance far from what exact samples score; a left-out point names its true
/// reason; an MLP without a test set reports no test metrics rather than zeros.
#[test]
fn a_run_that_never_moved_gets_no_pass_and_an_empty_test_set_no_accuracy() {
    let dir = common::scratch("reliability-stat", "never-moved");
    let out = dir.join("thermo");
    let result = atmc_lab(&[
        "thermo",
        "thermo-quadratic",
        "--lr-min",
        "1e-4",
        "--lr-max",
        "1e-3",
        "--points",
        "3",
        "--chains",
        "2000",
        "--steps",
        "50",
        "--out",
        s(&out),
    ]);
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(0), "{err}");
    let summary = last_json(&result);
    assert_eq!(summary["included"], 0, "{summary}");
    let excluded = summary["excluded"].as_array().unwrap();
    assert_eq!(excluded.len(), 3, "{summary}");
    for e in excluded {
        assert!(e["why"].as_str().unwrap().contains("never moved"), "{e}");
    }
    assert!(!err.contains(" yes"), "{err}");
    let records = std::fs::read_to_string(out.join("shard-0-of-1.jsonl")).unwrap();
    let points: Vec<serde_json::Value> = records
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("run").cloned())
        .filter(|v| v.get("gibbs_consistent").is_some())
        .collect();
    assert_eq!(points.len(), 3, "{records}");
    for p in &points {
        assert_eq!(p["gibbs_consistent"], false, "{p}");
        assert_eq!(p["stationary"], false, "{p}");
    }

    // `run`: SGLD at h = 1e-5 for 20 steps barely leaves its start.
    let preset = |text: &str| Preset::parse(text, "test").unwrap_or_else(|e| panic!("{e}"));
    let run = |p: &Preset| runner::run(p, BackendChoice::Cpu, &mut |_| {}).unwrap();
    let stuck = run(&preset(
        "Preset(sampler: (kind: Sgld, h: 1e-5), target: Gaussian(), chains: 500, steps: 20)",
    ));
    let warnings = stuck.summary.warnings.join("; ");
    assert!(warnings.contains("never moved"), "{warnings}");
    // SGLD at h = 1.5 samples a law far wider than N(0, I): the energy distance says so too.
    let wide = run(&preset(
        "Preset(sampler: (kind: Sgld, h: 1.5), target: Gaussian(), chains: 1000, steps: 1000)",
    ));
    let warnings = wide.summary.warnings.join("; ");
    assert!(warnings.contains("energy distance"), "{warnings}");
    assert!(!warnings.contains("never moved"), "{warnings}");

    // One chain run, none diverged: not "0 of 1 chains diverged".
    let one = diverged_note(1, 1, "chains");
    assert!(
        !one.contains("diverged") && one.contains("too few"),
        "{one}"
    );
    assert_eq!(diverged_note(3, 10, "chains"), "7 of 10 chains diverged");

    // An MLP preset without a test set.
    let file = dir.join("no-test.ron");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/two-moons.ron"),
    )
    .unwrap()
    .replace("points: 1000", "points: 200")
    .replace("test_fraction: 0.8", "test_fraction: 0.0")
    .replace("chains: 1024", "chains: 16")
    .replace("steps: 2000", "steps: 20")
    .replace("record_every: 100", "record_every: 10");
    std::fs::write(&file, text).unwrap();
    let result = atmc_lab(&["run", s(&file)]);
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(0), "{err}");
    assert!(err.contains("no test set"), "{err}");
    assert!(!err.contains("test accuracy"), "{err}");
    let summary = last_json(&result);
    let test = &summary["posterior_predictive"]["test"];
    assert_eq!(test["count"], 0, "{summary}");
    for metric in ["accuracy", "nll", "ece"] {
        assert!(test[metric].is_null(), "{metric}: {summary}");
        assert!(
            summary["baseline_sgd"]["test"][metric].is_null(),
            "{summary}"
        );
    }
    assert!(summary["posterior_predictive"]["train"]["accuracy"].is_number());
}
