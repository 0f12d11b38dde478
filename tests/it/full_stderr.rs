//! A full standard error (`2>/dev/full`) never panics and never loses the result: every
//! message on stderr is a diagnostic, written through one fallible writer that gives up
//! quietly, while the result on stdout or in the output folder is whole.

use crate::common::scratch;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The binary with `args` in `dir`, its standard error the full device.
fn with_full_stderr(args: &[&str], dir: &Path) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full opens for writing");
    Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(full)
        .output()
        .expect("the binary runs")
}

#[test]
fn run_keeps_its_json() {
    let dir = scratch("full-stderr", "run");
    let o = with_full_stderr(
        &[
            "run",
            "default",
            "--chains",
            "200",
            "--steps",
            "100",
            "--backend",
            "cpu",
        ],
        &dir,
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the JSON whole");
    assert_eq!(json["sampler"], "atmc", "{json}");
    assert_eq!(json["steps"], 100, "{json}");
    assert!(json["diverged_fraction"].is_number(), "{json}");
}

#[test]
fn sweep_writes_its_merged_table() {
    let dir = scratch("full-stderr", "sweep");
    std::fs::write(
        dir.join("small.ron"),
        "Sweep(name: \"small\", base: \"default\", set: {\"chains\": 100, \"steps\": 20},
           axes: [(field: \"sampler.h\", values: List([0.01, 0.02]))])",
    )
    .unwrap();
    let o = with_full_stderr(
        &["sweep", "small.ron", "--out", "out", "--backend", "cpu"],
        &dir,
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let merged = std::fs::read_to_string(dir.join("out/merged.jsonl")).expect("merged.jsonl");
    assert!(merged.lines().count() >= 2, "{merged}");
}

#[cfg(feature = "gui")]
#[test]
fn handout_writes_every_picture() {
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lectures/small");
    let dir = scratch("full-stderr", "handout");
    let o = with_full_stderr(
        &[
            "handout",
            folder,
            "--out",
            "page",
            "--backend",
            "cpu",
            "--max-steps",
            "20",
            "--size",
            "640x400",
        ],
        &dir,
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let page = std::fs::read_to_string(dir.join("page/index.html")).expect("index.html");
    let lessons = atmc_lab::preset::Lecture::load(folder).unwrap().steps.len();
    for k in 0..lessons {
        let picture = format!("lesson-{:02}.png", k + 1);
        assert!(page.contains(&picture), "{picture} in the page");
        assert!(
            dir.join("page").join(&picture).is_file(),
            "{picture} written"
        );
    }
}
