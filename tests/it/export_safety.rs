//! Issue #41, an export that writes only what it owns: `--draws DIR` (and every folder the
//! program writes whole) refuses a folder holding anything atmc-lab did not write, before any
//! work; replaces only an earlier output of its own, keeping it whole until the new one is;
//! and a kill mid-export leaves the earlier export as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{self, atmc_lab_in, s, stderr};
use crate::reliability_io::{signal, spawn, wait_child, wait_until};

/// A fresh scratch folder for one test.
fn scratch(name: &str) -> PathBuf {
    common::scratch("export-safety", name)
}

/// Every file under `dir` with its bytes, and every folder and link (links are not followed):
/// what must survive a refused command unchanged.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(dir).unwrap().to_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(
                    relative,
                    format!("link to {}", target.display()).into_bytes(),
                );
            } else if meta.is_dir() {
                out.insert(relative, b"folder".to_vec());
                pending.push(path);
            } else {
                out.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// A user's project folder: an ArviZ-shaped store (what `to_zarr` writes) beside data, notes
/// and a precious file.
pub(crate) fn user_project(dir: &Path) {
    std::fs::create_dir_all(dir.join("posterior/theta")).unwrap();
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(dir.join(".zgroup"), "{\"zarr_format\": 2}").unwrap();
    std::fs::write(dir.join("posterior/.zgroup"), "{\"zarr_format\": 2}").unwrap();
    std::fs::write(dir.join("posterior/theta/0.0.0"), [1u8, 2, 3, 4]).unwrap();
    std::fs::write(dir.join("data.csv"), "x,y\n1,2\n").unwrap();
    std::fs::write(dir.join("notes/thesis.tex"), "\\chapter{Results}").unwrap();
    std::fs::write(dir.join("precious.txt"), "a year of work").unwrap();
}

/// `atmc-lab run default` on 200 chains × 100 steps of the CPU with `--draws destination`,
/// in `dir`.
fn run_draws(dir: &Path, destination: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "run",
        "default",
        "--backend",
        "cpu",
        "--chains",
        "200",
        "--steps",
        "100",
        "--draws",
        destination,
    ];
    args.extend_from_slice(extra);
    atmc_lab_in(&args, dir)
}

/// Asserts a refusal before any work: exit 2, an `error:` naming `needle`, no run.
fn assert_refused(out: &Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error:") && err.contains(needle), "{err}");
    assert!(
        !err.contains(" draws, about ") && !err.contains("chain-steps/s"),
        "it ran: {err}"
    );
}

/// The marker of atmc-lab's own output in a folder.
fn manifest(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(atmc_lab::fsutil::MANIFEST)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The example: `--draws .` in a project folder that holds an ArviZ-shaped store.
/// Refused before the run, with what to do; every file as it was.
#[test]
fn draws_into_the_working_folder_are_refused_and_nothing_changes() {
    let project = scratch("dot");
    user_project(&project);
    let before = snapshot(&project);
    let out = run_draws(&project, ".", &[]);
    assert_refused(&out, "working folder");
    assert!(stderr(&out).contains("draws.zarr"), "{}", stderr(&out));
    assert_eq!(snapshot(&project), before);
    // Spelled as its absolute path: the same folder, the same refusal.
    let out = run_draws(&project, s(&project), &[]);
    assert_refused(&out, "working folder");
    assert_eq!(snapshot(&project), before);
}

/// An ArviZ store that atmc-lab did not write (no marker of its own), with a user's file in
/// it: refused, naming what it holds; nothing created beside it.
#[test]
fn a_store_atmc_lab_did_not_write_is_refused_and_left_untouched() {
    let dir = scratch("foreign");
    let store = dir.join("store");
    user_project(&store);
    let before = snapshot(&dir);
    let out = run_draws(&dir, "store", &[]);
    assert_refused(&out, "did not write");
    assert!(stderr(&out).contains("precious.txt"), "{}", stderr(&out));
    assert_eq!(snapshot(&dir), before);
}

/// An earlier export is replaced whole by the next; a file the user put into it makes it
/// theirs: the next export is refused, naming the file, and changes nothing.
#[test]
fn an_earlier_export_is_replaced_but_not_once_it_holds_a_users_file() {
    let dir = scratch("replace");
    let first = run_draws(&dir, "draws.zarr", &["--seed", "1"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let store = dir.join("draws.zarr");
    let marker = manifest(&store);
    assert_eq!(marker["atmc_lab_output"], "draws");
    assert!(
        marker["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "posterior/theta/0.0.0"),
        "{marker}"
    );
    let theta = std::fs::read(store.join("posterior/theta/0.0.0")).unwrap();
    let second = run_draws(&dir, "draws.zarr", &["--seed", "2"]);
    assert!(second.status.success(), "{}", stderr(&second));
    assert_ne!(
        std::fs::read(store.join("posterior/theta/0.0.0")).unwrap(),
        theta,
        "the second export replaced the first"
    );
    // Only the store beside it: no temporary folder, no lock file left.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["draws.zarr"]);
    std::fs::write(store.join("posterior/my-notes.txt"), "mine").unwrap();
    let before = snapshot(&dir);
    let third = run_draws(&dir, "draws.zarr", &[]);
    assert_refused(&third, "posterior/my-notes.txt");
    assert_eq!(snapshot(&dir), before);
}

/// SIGKILL while an export is being made leaves the earlier export whole (every file and its
/// manifest as they were); the next export clears what the killed one left.
#[test]
fn a_killed_export_leaves_the_earlier_one_whole() {
    let dir = scratch("killed");
    let first = run_draws(&dir, "draws.zarr", &[]);
    assert!(first.status.success(), "{}", stderr(&first));
    let store = dir.join("draws.zarr");
    let before = snapshot(&store);
    // A run long enough to be killed while it holds the export (its draws would take 5 MB);
    // the temporary folder is made before the run, so the kill always finds it.
    let mut child = spawn(
        &[
            "run",
            "default",
            "--backend",
            "cpu",
            "--chains",
            "1000",
            "--steps",
            "20000",
            "--draw-chains",
            "64",
            "--draws",
            "draws.zarr",
        ],
        &dir,
    );
    let temporary = |name: &std::ffi::OsStr| {
        let name = name.to_string_lossy();
        name.starts_with(".draws.zarr.") && name.ends_with(".tmp")
    };
    // Killed once its temporary folder exists (or, where the export is not written whole,
    // once the earlier export has changed: then the assertion below says so).
    wait_until(120, "the export's temporary folder", || {
        std::fs::read_dir(&dir)
            .unwrap()
            .any(|e| temporary(&e.unwrap().file_name()))
            || snapshot(&store) != before
    });
    signal(&child, "KILL");
    wait_child(&mut child, 30, "the killed export");
    assert_eq!(snapshot(&store), before, "the earlier export changed");
    assert_eq!(manifest(&store)["complete"], true);
    // The next export replaces it and removes the killed one's temporary folder.
    let next = run_draws(&dir, "draws.zarr", &[]);
    assert!(next.status.success(), "{}", stderr(&next));
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["draws.zarr"]);
}

/// `handout --out` is taken before any picture is rendered: a folder of user files is
/// refused untouched, and a second writer of one folder is refused, naming the holder.
#[cfg(feature = "gui")]
#[test]
fn handout_folders_are_refused_before_rendering() {
    let lecture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lectures/small");
    let dir = scratch("handout");
    let site = dir.join("site");
    user_project(&site);
    let before = snapshot(&dir);
    let out = atmc_lab_in(&["handout", lecture, "--out", "site"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("did not write"), "{}", stderr(&out));
    assert_eq!(snapshot(&dir), before);
    let out = atmc_lab_in(&["handout", lecture, "--out", "."], &site);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(snapshot(&dir), before);
    // This process writes a handout into `new`: a second handout there is refused at once.
    let handout = atmc_lab::fsutil::OutputKind {
        name: "handout",
        example: "handout",
    };
    let held = atmc_lab::fsutil::FolderWriter::begin(&dir.join("new"), handout).unwrap();
    let out = atmc_lab_in(&["handout", lecture, "--out", "new"], &dir);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "the holder is not named: {err}"
    );
    assert!(!err.contains("lesson 1"), "it rendered: {err}");
    drop(held);
    assert!(!dir.join("new").exists());
}

/// A sweep's output folder that holds a user's `merged.jsonl` or `thermo.ron` (files of the
/// names atmc-lab writes there) is refused before any point runs, and nothing in it changes.
#[test]
fn sweep_folders_never_replace_a_users_file_of_the_same_name() {
    let dir = scratch("sweep-foreign");
    std::fs::write(
        dir.join("small.ron"),
        "Sweep(name: \"small\", base: \"default\", set: {\"chains\": 100, \"steps\": 20},
           axes: [(field: \"sampler.h\", values: List([0.01, 0.02]))])",
    )
    .unwrap();
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("merged.jsonl"), "my own notes\n").unwrap();
    let before = snapshot(&out);
    let o = atmc_lab_in(
        &["sweep", "small.ron", "--out", "out", "--backend", "cpu"],
        &dir,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("merged.jsonl exists and is not a file atmc-lab wrote"));
    assert_eq!(snapshot(&out), before, "the folder is as it was");
    // The same for the sweep file `thermo` keeps in its folder.
    let thermo = dir.join("thermo-out");
    std::fs::create_dir_all(&thermo).unwrap();
    std::fs::write(thermo.join("thermo.ron"), "my own thermo notes\n").unwrap();
    let before = snapshot(&thermo);
    let o = atmc_lab_in(
        &[
            "thermo",
            "thermo-quadratic",
            "--out",
            "thermo-out",
            "--points",
            "3",
            "--lr-min",
            "0.01",
            "--lr-max",
            "0.1",
            "--chains",
            "100",
            "--steps",
            "20",
        ],
        &dir,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("thermo.ron exists and is not a file atmc-lab wrote"));
    // The refusal comes under the folder's lock, whose file may stay; the user's are as they
    // were.
    let after = snapshot(&thermo);
    for (path, bytes) in &before {
        assert_eq!(after.get(path), Some(bytes), "{} unchanged", path.display());
    }
    assert!(
        after
            .keys()
            .all(|p| before.contains_key(p) || p.as_os_str() == ".lock")
    );
}
