//! Issue #31, the statistical classes: a pass for runs that never moved (6), unbounded work
//! behind a valid input (7) and bad data accepted (8). One test per class.

use atmc_lab::diagnostics::thermodynamics::diverged_note;
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::Preset;
use atmc_lab::runner;
use std::path::Path;

use crate::common::{self, atmc_lab};
use crate::common::{last_json, s, stderr};

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

/// Writes Fashion-MNIST's four IDX files into `dir`: `train` and `test` images of
/// (n, rows, cols), uncompressed.
#[cfg(feature = "train")]
fn write_idx(dir: &Path, train: (usize, usize, usize), test: (usize, usize, usize)) {
    let images = |(n, rows, cols): (usize, usize, usize)| {
        let mut b = vec![0, 0, 8, 3];
        for v in [n, rows, cols] {
            b.extend((v as u32).to_be_bytes());
        }
        b.extend((0..n * rows * cols).map(|i| (i % 256) as u8));
        b
    };
    let labels = |n: usize| {
        let mut b = vec![0, 0, 8, 1];
        b.extend((n as u32).to_be_bytes());
        b.extend((0..n).map(|i| (i % 10) as u8));
        b
    };
    for (stem, shape) in [("train", train), ("t10k", test)] {
        std::fs::write(dir.join(format!("{stem}-images-idx3-ubyte")), images(shape)).unwrap();
        std::fs::write(
            dir.join(format!("{stem}-labels-idx1-ubyte")),
            labels(shape.0),
        )
        .unwrap();
    }
}

/// Class 8: data that cannot be what it claims is refused where it is read, naming the file
/// and what was expected: images of 0×0 (a panic before), 1×1 or 1×784 and train and test
/// sets of different shapes; a shard header claiming 1e15 points (an allocation abort
/// before); a record whose coordinates lie on no axis of its sweep (merged silently before).
#[test]
fn data_that_cannot_be_what_it_claims_is_refused_where_it_is_read() {
    let dir = common::scratch("reliability-stat", "bad-data");
    #[cfg(feature = "train")]
    {
        use atmc_lab::train::data::{DatasetKind, load};
        for (train, test, needle) in [
            ((4, 0, 0), (2, 28, 28), "0×0"),
            ((4, 1, 1), (2, 1, 1), "1×1×1"),
            ((4, 1, 784), (2, 1, 784), "1×1×784"),
            (
                (4, 28, 28),
                (2, 1, 784),
                "t10k-images-idx3-ubyte: images of 1×1×784",
            ),
            ((0, 28, 28), (2, 28, 28), "no images"),
        ] {
            let folder = dir.join(format!("idx-{}-{}-{}", train.0, train.1, test.2));
            std::fs::create_dir_all(&folder).unwrap();
            write_idx(&folder, train, test);
            let e = format!(
                "{:#}",
                load(DatasetKind::FashionMnist, &folder).expect_err(needle)
            );
            assert!(e.contains(needle), "{needle}: {e}");
            if needle != "no images" {
                assert!(e.contains("1×28×28"), "{e}");
            }
        }
        let good = dir.join("idx-good");
        std::fs::create_dir_all(&good).unwrap();
        write_idx(&good, (4, 28, 28), (2, 28, 28));
        load(DatasetKind::FashionMnist, &good).unwrap();
    }

    // A real sweep's shard, then damaged copies of it.
    let sweep = dir.join("sweep");
    let out = atmc_lab(&[
        "thermo",
        "thermo-quadratic",
        "--lr-min",
        "0.2",
        "--lr-max",
        "0.4",
        "--points",
        "2",
        "--chains",
        "200",
        "--steps",
        "40",
        "--out",
        s(&sweep),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shard = std::fs::read_to_string(sweep.join("shard-0-of-1.jsonl")).unwrap();
    let mut lines: Vec<serde_json::Value> = shard
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let damaged = |name: &str, lines: &[serde_json::Value], needle: &str| {
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(folder.join("shard-0-of-1.jsonl"), text).unwrap();
        let out = atmc_lab(&["thermo", "--merge", s(&folder)]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(needle), "{name}: wanted '{needle}' in {err}");
        assert!(
            !err.contains("panicked") && !err.contains("memory"),
            "{err}"
        );
    };
    let eta = lines[1]["coords"][0].clone();
    lines[1]["coords"][0] = serde_json::json!(0.3);
    damaged(
        "off-axis",
        &lines,
        "shard-0-of-1.jsonl:2: point 0 has coordinates (sampler.h = 0.3)",
    );
    lines[1]["coords"][0] = eta;
    lines[0]["points"] = serde_json::json!(1e15 as u64);
    damaged(
        "huge",
        &lines,
        "shard-0-of-1.jsonl:1: impossible sweep header: 1000000000000000 points: a sweep has \
         1 to 100000",
    );
    lines[0]["points"] = serde_json::json!(3);
    damaged(
        "miscounted",
        &lines,
        "3 points, but axes of [2] values give 2",
    );
}
