//! The command line as a user runs it.

use crate::common::{self, atmc_lab};

fn last_json(out: &std::process::Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().expect("stdout has a line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn run_default_preset_prints_the_json_line() {
    let out = atmc_lab(&[
        "run",
        "presets/default.ron",
        "--steps",
        "2000",
        "--backend",
        "cpu",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = last_json(&out);
    for key in [
        "sampler",
        "target",
        "chains",
        "steps",
        "seed",
        "backend",
        "diverged_fraction",
        "kinetic_temperature",
        "mean_xi",
        "mean",
        "cov",
        "energy_distance",
        "tv_histogram",
        "rhat_max",
        "ess_bulk_min",
        "elapsed_s",
        "chain_steps_per_s",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert_eq!(v["sampler"], "atmc");
    assert_eq!(v["target"], "banana");
    assert_eq!(v["steps"], 2000);
    assert_eq!(v["backend"], "cpu");
    assert_eq!(v["diverged_fraction"], 0.0);
    let kt = v["kinetic_temperature"].as_f64().unwrap();
    assert!((kt - 1.0).abs() < 0.03, "kinetic temperature {kt}");
}

#[test]
fn overrides_and_csv() {
    let dir = common::scratch("cli", "overrides");
    let csv = dir.join("series.csv");
    let out = atmc_lab(&[
        "run",
        "default",
        "--target",
        "correlated",
        "--sampler",
        "atmc",
        "--chains",
        "2000",
        "--steps",
        "300",
        "--friction-sign",
        "-1",
        "--xi-update",
        "overwrite",
        "--noise-mass",
        "without",
        "--backend",
        "cpu",
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = last_json(&out);
    assert_eq!(v["target"], "correlated");
    assert_eq!(v["chains"], 2000);
    assert!(v["diverged_fraction"].as_f64().unwrap() > 0.99);
    assert_eq!(v["printed_defects"].as_array().unwrap().len(), 3);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "step,step_size,kinetic_temperature,mean_xi,diverged,energy_distance,exploring,\
         rhat_bulk,rhat_tail,ess_bulk,ess_tail,nested_rhat,ksd"
    );
    assert_eq!(lines.count(), 30);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bad_input_exits_2_with_one_message() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "nope.ron"], "nope.ron:1:1: cannot read"),
        (
            &["run", "default", "--h", "-1"],
            "step size h = -1 is out of range",
        ),
        (
            &["run", "default", "--friction-sign", "2"],
            "allowed [-1, 1]",
        ),
        (
            &["run", "default", "--friction-sign", "minus"],
            "is not a number",
        ),
        (
            &["run", "default", "--sampler", "nuts"],
            "unknown sampler 'nuts'",
        ),
        (
            &["run", "default", "--target", "moon"],
            "unknown target 'moon'",
        ),
        (&["run", "default", "--chains", "0"], "chains = 0"),
        (
            &[
                "run",
                "default",
                "--sampler",
                "hmc",
                "--leapfrog-steps",
                "0",
            ],
            "leapfrog steps L = 0 is out of range: allowed [1, 200]",
        ),
        (
            &[
                "run",
                "default",
                "--sampler",
                "hmc",
                "--leapfrog-steps",
                "201",
            ],
            "leapfrog steps L = 201 is out of range",
        ),
        (
            &["run", "default", "--sampler", "hmc", "--temperature", "0"],
            "temperature T = 0 with HMC",
        ),
        (
            &["run", "two-moons", "--sampler", "hmc"],
            "Hmc is not available for networks yet",
        ),
    ];
    for (args, needle) in cases {
        let out = atmc_lab(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// `run PRESET` of an MLP preset on 64 networks for `steps` steps on the CPU: its JSON line,
/// checked to be an MLP run's.
fn run_mlp(preset: &str, steps: u32) -> serde_json::Value {
    let steps = steps.to_string();
    let out = atmc_lab(&[
        "run",
        preset,
        "--chains",
        "64",
        "--steps",
        &steps,
        "--backend",
        "cpu",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = last_json(&out);
    assert_eq!(v["kind"], "mlp");
    v
}

#[test]
fn run_an_mlp_preset_prints_its_json_line() {
    let v = run_mlp("two-moons", 200);
    assert_eq!(v["chains"], 64);
    assert_eq!(v["steps"], 200);
    assert_eq!(v["backend"], "cpu");
    let test = &v["posterior_predictive"]["test"];
    for key in ["accuracy", "nll", "ece"] {
        let x = test[key]
            .as_f64()
            .unwrap_or_else(|| panic!("posterior_predictive.test.{key} missing in {v}"));
        assert!(x.is_finite() && x >= 0.0, "{key} = {x}");
    }
    // 200 steps already separate the moons far better than chance.
    assert!(test["accuracy"].as_f64().unwrap() > 0.7, "{test}");
    let sgd = v["baseline_sgd"]["test"]["accuracy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&sgd), "{sgd}");

    // 2-D options are refused on an MLP preset, with the reason.
    let out = atmc_lab(&["run", "two-moons", "--target", "donut"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--target")
            && err.contains("belong to 2-D presets")
            && err.lines().count() == 1,
        "{err}"
    );
}

/// Drawn data run headless from the preset, and a drawn set below the minimum is refused
/// before any work, saying what it lacks.
#[test]
fn run_a_drawn_data_preset_and_refuse_one_too_small() {
    let v = run_mlp("drawn-xor", 300);
    let test = &v["posterior_predictive"]["test"];
    // 12 held-out points of four clean clusters.
    assert!(test["accuracy"].as_f64().unwrap() >= 0.75, "{test}");

    let dir = common::scratch("cli", "drawn");
    let path = dir.join("five.ron");
    let five = "MlpPreset(sampler: (kind: Atmc), network: (data: (source: Drawn(classes: 2, \
                points: [(1.0, 1.0, 1), (-1.0, 1.0, 0), (-1.0, -1.0, 1), (1.0, -1.0, 0), \
                (1.5, 1.5, 1)]))))";
    std::fs::write(&path, five).unwrap();
    let out = atmc_lab(&["run", common::s(&path), "--backend", "cpu"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("draw 3 more points") && err.contains("at least 8 points"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_mlp_run_with_every_network_diverged_reports_no_predictive() {
    let out = atmc_lab(&[
        "run",
        "spirals-printed",
        "--chains",
        "16",
        "--backend",
        "cpu",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = last_json(&out);
    assert_eq!(v["diverged_fraction"], 1.0);
    assert!(v["posterior_predictive"].is_null(), "{v}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no alive networks"), "{err}");
}

#[test]
fn presets_lists_every_shipped_preset() {
    let out = atmc_lab(&["presets"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "default",
        "printed",
        "thermostat-vs-noise",
        "cyclical-gmm25",
        "logistic",
        "two-moons",
        "spirals-printed",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(name)),
            "{name} missing:\n{text}"
        );
    }
}

#[test]
fn run_on_the_gpu_backend_names_the_adapter() {
    let out = atmc_lab(&[
        "run",
        "presets/default.ron",
        "--steps",
        "200",
        "--backend",
        "gpu",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = last_json(&out);
    assert_eq!(v["backend"], "gpu");
    assert!(!v["device"].as_str().unwrap().is_empty());
    assert_eq!(v["diverged_fraction"], 0.0);
}

#[cfg(feature = "gui")]
#[test]
fn screenshot_writes_a_png_of_the_whole_ui() {
    let dir = common::scratch("cli", "shot");
    let out = dir.join("shot.png");
    let o = atmc_lab(&[
        "screenshot",
        "default",
        "--steps",
        "50",
        "--out",
        out.to_str().unwrap(),
        "--size",
        "1024x640",
        "--scale",
        "1.5",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let img = image::open(&out).unwrap().to_rgba8();
    assert_eq!((img.width(), img.height()), (1536, 960));
    // Not a blank picture: the density images put bright, saturated pixels on screen.
    let bright = img
        .pixels()
        .filter(|p| p[0] > 200 && p[1] > 120 && p[2] < 120)
        .count();
    assert!(bright > 500, "only {bright} bright pixels");
    let bad = atmc_lab(&[
        "screenshot",
        "default",
        "--out",
        out.to_str().unwrap(),
        "--size",
        "huge",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    std::fs::remove_dir_all(dir).ok();
}

/// `record` writes a GIF whose frames are the steps asked for, at the size asked for, and
/// the same picture each time; bad requests are refused before any work.
#[cfg(feature = "gui")]
#[test]
fn record_writes_a_gif_of_the_ui() {
    let dir = common::scratch("cli", "record");
    let gif = dir.join("explosion.gif");
    let args = |out: &str| {
        vec![
            "record".to_string(),
            "lesson-explosion".into(),
            "--steps".into(),
            "60".into(),
            "--every".into(),
            "15".into(),
            "--size".into(),
            "800x500".into(),
            "--backend".into(),
            "cpu".into(),
            "--out".into(),
            out.into(),
        ]
    };
    let run = |a: Vec<String>| {
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        atmc_lab(&refs)
    };
    let out = run(args(gif.to_str().unwrap()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        atmc_lab::app::record::gif_frames(&gif).unwrap(),
        (4, 800, 500)
    );
    // One panel only, as PNG frames in a folder.
    let frames = dir.join("frames");
    let mut a = args(frames.to_str().unwrap());
    a.extend(["--panel".into(), "θ₁–θ₂ panel".into()]);
    let out = run(a);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = image::open(frames.join("frame-0001.png")).unwrap();
    assert!(first.width() < 400 && first.width() == first.height());
    assert!(frames.join("frame-0004.png").is_file());
    // Refused up front: too many frames, a folder that does not exist, a panel that does not.
    let mut a = args(gif.to_str().unwrap());
    a[5] = "1".into();
    a[3] = "100000".into();
    let out = run(a);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("frames"));
    let out = run(args("/nonexistent/folder/x.gif"));
    assert_eq!(out.status.code(), Some(2));
    let mut a = args(gif.to_str().unwrap());
    a.extend(["--panel".into(), "no such panel".into()]);
    let out = run(a);
    // An unknown panel is bad input (exit 2), and no file is left at the output.
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("θ₁–θ₂ panel"));
    std::fs::remove_dir_all(dir).ok();
}

/// A build without the `gui` and `train` features still knows the commands that need them
/// and refuses each with exit status 2 and one line naming the missing feature.
#[cfg(not(feature = "gui"))]
#[test]
fn a_headless_build_refuses_the_window_commands_naming_the_feature() {
    let train = (vec!["train", "--dataset", "fashion-mnist"], "`train`");
    let cases = [
        (vec![], "`gui`"),
        (vec!["app", "default"], "`gui`"),
        (vec!["screenshot", "default", "--out", "x.png"], "`gui`"),
        (vec!["record", "default", "--out", "x.gif"], "`gui`"),
        (vec!["handout", "atmc", "--out", "x"], "`gui`"),
        (vec!["bench", "--ui", "--seconds", "1"], "`gui`"),
    ]
    .into_iter()
    .chain((!cfg!(feature = "train")).then_some(train));
    for (args, feature) in cases {
        let out = atmc_lab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: atmc-lab was built without the ") && err.contains(feature),
            "{args:?}: {err}"
        );
        assert!(err.contains("cargo build --release"), "{args:?}: {err}");
    }
}

/// `--version` names the commit the binary was built from (this test runs in a checkout).
#[test]
fn version_names_the_commit() {
    let out = atmc_lab(&["--version"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git runs");
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    assert!(
        text.starts_with(&format!("atmc-lab {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    // The binary cargo just built for this test names this checkout's HEAD, even when
    // another checkout shares the target folder (build.rs reruns per checkout).
    let named = text
        .split("commit ")
        .nth(1)
        .and_then(|t| t.split([' ', ')', ',']).next())
        .unwrap_or("");
    assert_eq!(named.len(), 12, "{text}");
    assert!(named.chars().all(|c| c.is_ascii_hexdigit()), "{text}");
    assert!(!head.is_empty() && head.len() == 12, "git HEAD: {head}");
    assert_eq!(named, head, "{text}");
}

/// Completion scripts and the manual come from the clap definitions: every command is in
/// them.
#[test]
fn completions_and_man_pages_name_every_command() {
    let commands = [
        "run",
        "app",
        "screenshot",
        "handout",
        "sweep",
        "thermo",
        "completions",
        "man",
    ];
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = atmc_lab(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", common::stderr(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        for c in commands {
            assert!(script.contains(c), "{shell} completion lacks {c}");
        }
    }
    let bad = atmc_lab(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));

    let out = atmc_lab(&["man"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH atmc-lab 1"), "{page}");
    assert!(page.contains("commit"), "the page names the version built");
    for c in commands {
        assert!(page.contains(c), "the page lacks {c}");
    }
    let dir = common::scratch("cli", "man");
    let out = atmc_lab(&["man", "--dir", common::s(&dir.join("man1"))]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    for c in commands {
        let page = dir.join("man1").join(format!("atmc-lab-{c}.1"));
        assert!(page.is_file(), "{} missing", page.display());
    }
    assert!(dir.join("man1/atmc-lab.1").is_file());
}

/// Issue #44 item 10: a run on the GPU engine without a session's runtime folder (a headless
/// machine, CI, ssh) prints no "XDG_RUNTIME_DIR is invalid" lines from the Vulkan loader's
/// layers: stderr holds only what the app says.
#[test]
fn a_gpu_run_without_a_runtime_folder_prints_no_driver_noise() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args([
            "run",
            "presets/default.ron",
            "--steps",
            "20",
            "--chains",
            "1024",
            "--backend",
            "gpu",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("NODEVICE_SELECT")
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("XDG_RUNTIME_DIR"), "{stderr}");
}
