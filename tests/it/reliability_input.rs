//! Issue #41, input that could exhaust the machine or reach outside its folder (classes 1 and
//! 7) and errors that did not help (class 8). One test per class; each fails on the code
//! before its fix.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use atmc_lab::preset::sweep_file::Sweep;
use atmc_lab::preset::{AnyPreset, Lecture};

use crate::common;
use crate::common::{s, stderr};

fn scratch(name: &str) -> PathBuf {
    common::scratch("reliability-input", name)
}

/// `atmc-lab args` in `dir`, killed (and the test failed) after `seconds`: a hang is a
/// failure, not a slow pass.
fn atmc_lab_within(args: &[&str], dir: &Path, seconds: u64) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    crate::reliability_io::wait_child(&mut child, seconds, &format!("{args:?}"));
    child.wait_with_output().expect("its output")
}

/// Asserts a refusal of bad input: exit 2 and one `error:` line holding every one of
/// `needles`, no panic.
fn assert_refused(out: &Output, needles: &[&str]) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    for needle in needles {
        assert!(errors[0].contains(needle), "{needle:?} not in {err}");
    }
    errors[0].to_owned()
}

/// An MLP preset reading `path`, small enough to run in a moment.
fn csv_preset(path: &str) -> String {
    format!(
        "MlpPreset(sampler: (kind: Atmc, h: 0.001), chains: 2, steps: 2, record_every: 1,
           network: (data: (source: Csv(path: {path:?})), hidden: [2]))"
    )
}

/// Eight points of two classes, as CSV.
const POINTS: &str = "x,y,label\n0,0,0\n1,0,1\n0,1,1\n1,1,0\n2,0,0\n0,2,1\n2,2,0\n3,1,1\n";

/// Class 1: `/dev/zero` as a data file grew to 22 GB; now it is refused by what it is, before
/// a byte is read (exit 2, at once). A file over the limit of data files likewise, by its size
/// (a sparse file: nothing is written to disk).
#[test]
fn a_device_or_an_oversized_data_file_is_refused_before_reading() {
    let dir = scratch("bounded");
    std::fs::write(dir.join("zero.ron"), csv_preset("/dev/zero")).unwrap();
    let out = atmc_lab_within(&["run", "zero.ron", "--backend", "cpu"], &dir, 60);
    assert_refused(&out, &["zero.ron:", "/dev/zero is not a regular file"]);

    let big = std::fs::File::create(dir.join("big.csv")).unwrap();
    big.set_len(65_000_000).unwrap();
    drop(big);
    std::fs::write(dir.join("big.ron"), csv_preset("big.csv")).unwrap();
    let out = atmc_lab_within(&["run", "big.ron", "--backend", "cpu"], &dir, 60);
    assert_refused(&out, &["big.csv is 65 MB; data files are limited to 64 MB"]);
    // A preset file over its own limit, and a pipe named as a preset, are refused the same way.
    let huge = std::fs::File::create(dir.join("huge.ron")).unwrap();
    huge.set_len(5_000_000).unwrap();
    drop(huge);
    let out = atmc_lab_within(&["run", "huge.ron"], &dir, 60);
    assert_refused(
        &out,
        &["huge.ron is 5 MB; preset, lecture and sweep files are limited to 4 MB"],
    );
    let out = atmc_lab_within(&["run", "/dev/zero"], &dir, 60);
    assert_refused(&out, &["/dev/zero is not a regular file"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A lecture folder with a secret file beside it (outside the folder).
fn lecture_beside_a_secret(name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let secret = dir.join("secret.ron");
    std::fs::write(&secret, "TOPSECRET(password: \"hunter2\")").unwrap();
    let folder = dir.join("lecture");
    std::fs::create_dir_all(folder.join("presets")).unwrap();
    std::os::unix::fs::symlink(&secret, folder.join("presets/link.ron")).unwrap();
    (folder, secret)
}

fn write_lecture(folder: &Path, steps: &str) -> PathBuf {
    let file = folder.join("lecture.ron");
    std::fs::write(&file, format!("Lecture(name: \"l\", steps: [{steps}])")).unwrap();
    file
}

/// Class 7: a lecture's step outside its folder (absolute, `..`, a link) was read and the
/// error quoted its first token; now it is refused by its name, and nothing outside is read.
#[test]
fn a_lecture_step_outside_its_folder_is_refused_without_quoting_the_file() {
    let (folder, secret) = lecture_beside_a_secret("outside");
    for (step, why) in [
        (secret.to_str().unwrap(), "is an absolute path"),
        ("../secret.ron", "leads out of"),
        ("presets/../../secret.ron", "leads out of"),
        ("presets/link.ron", "through a link"),
    ] {
        write_lecture(&folder, &format!("{step:?}"));
        let e = Lecture::load(s(&folder)).unwrap_err().to_string();
        assert!(e.contains(why), "{step}: {e}");
        assert!(e.contains("lecture's steps"), "{step}: {e}");
        assert!(
            !e.contains("TOPSECRET") && !e.contains("hunter2"),
            "{step}: {e}"
        );
    }
    // A data file outside the folder is refused the same way, from an inline preset and from
    // a step file.
    let inline = format!(
        "MlpPreset(story: (text: \"t\"), sampler: (kind: Atmc),
           network: (data: (source: Csv(path: {:?}))))",
        "../secret.ron"
    );
    write_lecture(&folder, &inline);
    let e = Lecture::load(s(&folder)).unwrap_err().to_string();
    assert!(
        e.contains("leads out of") && !e.contains("TOPSECRET"),
        "{e}"
    );
    std::fs::write(
        folder.join("presets/step.ron"),
        inline.replace("../secret.ron", "../../secret.ron"),
    )
    .unwrap();
    write_lecture(&folder, "\"presets/step.ron\"");
    let e = Lecture::load(s(&folder)).unwrap_err().to_string();
    assert!(
        e.contains("step.ron:") && e.contains("leads out of") && !e.contains("TOPSECRET"),
        "{e}"
    );
    #[cfg(feature = "gui")]
    {
        write_lecture(&folder, &format!("{:?}", secret.to_str().unwrap()));
        let out = atmc_lab_within(&["handout", s(&folder), "--out", "out"], &folder, 60);
        let line = assert_refused(&out, &["is an absolute path"]);
        assert!(!line.contains("TOPSECRET"), "{line}");
    }
    let _ = std::fs::remove_dir_all(folder.parent().unwrap());
}

/// Class 7: a preset's `Csv(path:)` was read from the working directory (accepted on
/// loading, exit 1 when it ran); now it is read relative to the preset file, or to the
/// lecture file for an inline preset.
#[test]
fn a_data_path_is_read_relative_to_the_file_that_names_it() {
    let dir = scratch("relative");
    std::fs::create_dir_all(dir.join("course/presets")).unwrap();
    std::fs::write(dir.join("course/points.csv"), POINTS).unwrap();
    std::fs::write(dir.join("course/net.ron"), csv_preset("points.csv")).unwrap();
    let out = atmc_lab_within(&["run", "course/net.ron", "--backend", "cpu"], &dir, 120);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The same file from elsewhere, by an absolute path.
    let file = dir.join("course/net.ron");
    let out = atmc_lab_within(&["run", s(&file), "--backend", "cpu"], Path::new("/"), 120);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // In a lecture: an inline preset's path starts at the lecture's folder, a step file's at
    // its own folder.
    let story = "story: (text: \"t\"), ";
    std::fs::write(
        dir.join("course/presets/step.ron"),
        csv_preset("../points.csv").replacen("MlpPreset(", &format!("MlpPreset({story}"), 1),
    )
    .unwrap();
    let inline = csv_preset("points.csv").replacen("MlpPreset(", &format!("MlpPreset({story}"), 1);
    write_lecture(
        &dir.join("course"),
        &format!("\"presets/step.ron\", {inline}"),
    );
    let lecture = Lecture::load(s(&dir.join("course"))).unwrap_or_else(|e| panic!("{e}"));
    for step in &lecture.steps {
        let AnyPreset::Mlp(p) = &step.preset else {
            panic!("{step}");
        };
        let (_, data) = p.build().unwrap_or_else(|e| panic!("{step}: {e}"));
        assert_eq!(data.len(), 8, "{step}");
    }
    // A missing data file is refused when the preset is loaded, at the `path:` field.
    std::fs::write(dir.join("course/gone.ron"), csv_preset("gone.csv")).unwrap();
    let out = atmc_lab_within(&["run", "course/gone.ron"], &dir, 60);
    assert_refused(&out, &["course/gone.ron:2:", "course/gone.csv"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 2-D preset with `edit` spliced in before its closing parenthesis.
fn toy_with(edit: &str) -> String {
    format!("Preset(sampler: (kind: Atmc), target: Gaussian(), {edit})")
}

fn refused_text(text: &str) -> String {
    AnyPreset::parse(text, "probe.ron").unwrap_err().to_string()
}

/// Class 8, in preset files: RON's advice to programmers, a byte-order mark, an optional
/// field without its `Some`, a whole number of the wrong type, a 170 kB line, a terminal's
/// escape sequences, a value that is zero in f32, a name given twice, a sweep's name as a
/// base: each message names the cause and what to write, on one short line.
#[test]
fn preset_errors_name_the_cause_on_one_short_line() {
    // A lecture's steps are read as any RON value, brackets within brackets.
    let deep = format!("Lecture(name: \"x\", steps: [{}])", "[".repeat(300));
    let e = Lecture::parse(&deep, "l.ron").unwrap_err().to_string();
    assert!(
        e.contains("nested more than 128 levels deep") && !e.contains("serde_stacker"),
        "{e}"
    );
    // A byte-order mark is skipped, for every kind of preset.
    let with_bom = format!("\u{feff}{}", toy_with("chains: 10"));
    assert!(matches!(
        AnyPreset::parse(&with_bom, "bom.ron"),
        Ok(AnyPreset::Toy(_))
    ));
    let mlp = "\u{feff}MlpPreset(sampler: (kind: Atmc))";
    assert!(matches!(
        AnyPreset::parse(mlp, "bom.ron"),
        Ok(AnyPreset::Mlp(_))
    ));
    let e = refused_text(&toy_with("init: (superchains: 16), chains: 64"));
    assert!(e.contains("superchains: Some(16)"), "{e}");
    let e = refused_text(&toy_with("chains: 1.5"));
    assert!(e.contains("chains takes a whole number, not 1.5"), "{e}");
    // A whole number beyond its type, set by a sweep: the type's range, not "expected u32";
    // chains, a field of the override table, is given its own range, as `--chains` is.
    let sweep_setting = |set: &str| {
        Sweep::parse(
            &format!(
                "Sweep(base: \"default\", set: {{{set}}}, axes: [(field: \"sampler.h\", \
                 values: List([0.1]))])"
            ),
            "s.ron",
            Path::new("."),
        )
        .unwrap_err()
        .to_string()
    };
    let e = sweep_setting("\"record_every\": 5e9");
    assert!(
        e.contains("a whole number from 0 to 4294967295 (u32)"),
        "{e}"
    );
    let e = sweep_setting("\"chains\": 5e9");
    assert!(
        e.contains("chains = 5000000000 is out of range: allowed [1, 1.6777216e7]"),
        "{e}"
    );
    // A 170 kB name in a place RON quotes it: cut, with its length.
    let e = refused_text(&toy_with(&format!("noise: {}", "N".repeat(170_000))));
    assert!(
        e.len() < 1500 && e.contains("… (170000 characters)"),
        "{}",
        e.len()
    );
    let e = refused_text(&toy_with("name: \"ok\", sampler: (kind: Atmc)"));
    assert!(!e.contains('\n'), "{e}");
    // A value inside (0, 100] that is 0 in f32 is not called out of (0, 100].
    let e = refused_text("Preset(sampler: (kind: Atmc), target: Donut(radius: 1e-46))");
    assert!(e.contains("smallest positive normal f32"), "{e}");
    // A formula's parameter given twice: the last no longer wins silently.
    let e = refused_text(
        "Preset(sampler: (kind: Atmc), target: Expression(energy: \"(x^2+y^2)/(2*s^2)\",
           parameters: {\"s\": 1.0, \"s\": 2.0}))",
    );
    assert!(e.contains("\"s\" is given twice"), "{e}");
    // A lecture step's name with a terminal's escape sequence: echoed escaped.
    let e = Lecture::parse("Lecture(name: \"x\", steps: [\"\u{1b}[2Jnope\"])", "l.ron")
        .unwrap_err()
        .to_string();
    assert!(e.contains("\\u{1b}[2Jnope") && !e.contains('\u{1b}'), "{e}");
    // A shipped sweep's name as a sweep's base.
    let e = Sweep::parse(
        "Sweep(base: \"friction-sign-explosion\", axes: [(field: \"sampler.h\", values: \
         List([0.1]))])",
        "s.ron",
        Path::new("."),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("is the name of a shipped sweep, not of a preset"),
        "{e}"
    );
}

/// Class 8, on the command line: a formula that starts with a minus, `--shard` with a
/// negative index, escape sequences in arguments, a shipped sweep's name given as a preset,
/// and a folder holding another sweep (exit 2 in `sweep` as in `thermo`).
#[test]
fn command_line_errors_name_the_cause() {
    let dir = scratch("cli");
    let run = |args: &[&str]| atmc_lab_within(args, &dir, 120);
    let out = run(&[
        "run",
        "default",
        "--energy",
        "-(-(x^2+y^2)/2)",
        "--chains",
        "16",
        "--steps",
        "2",
        "--backend",
        "cpu",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::write(
        dir.join("one.ron"),
        "Sweep(base: \"default\", set: {\"chains\": 16, \"steps\": 2},
           axes: [(field: \"sampler.h\", values: List([0.01, 0.02]))])",
    )
    .unwrap();
    assert_refused(
        &run(&["sweep", "one.ron", "--shard", "-1/4"]),
        &["0 ≤ I < N"],
    );
    let line = assert_refused(&run(&["run", "\u{1b}[2Jnope"]), &["\\u{1b}[2Jnope"]);
    assert!(!line.contains('\u{1b}'), "{line}");
    let out = run(&["run", "default", "--sampler", "\u{1b}]0;owned\u{7}"]);
    let line = assert_refused(&out, &["unknown sampler"]);
    assert!(
        !line.contains('\u{1b}') && !line.contains('\u{7}'),
        "{line}"
    );
    assert_refused(
        &run(&["run", "friction-sign-explosion"]),
        &[
            "is the name of a shipped sweep",
            "atmc-lab sweep friction-sign-explosion",
        ],
    );
    // A folder that holds another sweep's shard.
    let out = run(&["sweep", "one.ron", "--out", "results"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::write(
        dir.join("two.ron"),
        "Sweep(base: \"default\", set: {\"chains\": 16, \"steps\": 2},
           axes: [(field: \"sampler.h\", values: List([0.03, 0.04]))])",
    )
    .unwrap();
    assert_refused(
        &run(&["sweep", "two.ron", "--out", "results"]),
        &["holds points of another sweep"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}
