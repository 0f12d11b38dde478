//! Property tests over hostile input: mutated preset text must parse into a clear located
//! error or into a preset that runs without a panic, and arbitrary argument vectors must end
//! the command line with 0, 1 or 2 and, on failure, an `error:` line, never a panic.
//!
//! Budgets: `ATMC_FUZZ_PRESETS` (default 200) mutated presets and `ATMC_FUZZ_COMMANDS`
//! (default 60) command lines, a few seconds of CI. Raise them for a longer hunt;
//! `ATMC_FUZZ_BINARY` runs the command lines against another build.

use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::{AnyPreset, SHIPPED};
use atmc_lab::runner;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestRunner};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn budget(variable: &str, default: u32) -> u32 {
    std::env::var(variable)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        // Failures print their input; no regression files are written into the source tree.
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

/// Values that break naive parsers and engines.
const NASTY_NUMBERS: &[&str] = &[
    "NaN",
    "inf",
    "-inf",
    "1e30",
    "-1e30",
    "1e-50",
    "0",
    "-0.0",
    "1e308",
    "4294967296",
    "-1",
    "0.5",
    "3",
    "1e999",
    "0x10",
    "1_000",
    "",
];

/// Tokens spliced into preset text.
const NASTY_TOKENS: &[&str] = &[
    "(",
    ")",
    ",",
    ":",
    "\"",
    "[",
    "]",
    "Some(",
    "None",
    "kind: Sgd,",
    "kind: Atmc,",
    "target: Funnel(),",
    "schedule: Cyclical(total_steps: 10, cycles: 7),",
    "chains: 0,",
    "steps: 1,",
    "\u{0}",
    "é",
    "//",
    "/*",
    "h: NaN,",
    "uniform: true,",
    "Hyperbolic(c: 1e-3)",
];

/// Byte offsets where a number starts (a digit not inside a name).
fn number_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len())
        .filter(|&i| {
            bytes[i].is_ascii_digit()
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'.'))
        })
        .collect()
}

fn number_end(text: &str, start: usize) -> usize {
    text[start..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '+'))
        .map_or(text.len(), |n| start + n)
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// One edit of preset text.
#[derive(Clone, Debug)]
enum Edit {
    /// Replace the k-th number with a nasty one.
    Number(usize, usize),
    /// Insert a token at a fraction of the text.
    Insert(u16, usize),
    /// Delete up to `len` bytes at a fraction of the text.
    Delete(u16, u8),
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut text = text.to_owned();
    for edit in edits {
        match *edit {
            Edit::Number(k, v) => {
                let starts = number_starts(&text);
                if !starts.is_empty() {
                    let start = starts[k % starts.len()];
                    let end = number_end(&text, start);
                    text.replace_range(start..end, NASTY_NUMBERS[v % NASTY_NUMBERS.len()]);
                }
            }
            Edit::Insert(at, t) => {
                let i = floor_boundary(&text, usize::from(at) * text.len() / 65536);
                text.insert_str(i, NASTY_TOKENS[t % NASTY_TOKENS.len()]);
            }
            Edit::Delete(at, len) => {
                let i = floor_boundary(&text, usize::from(at) * text.len() / 65536);
                let j = floor_boundary(&text, i + usize::from(len));
                text.replace_range(i..j, "");
            }
        }
    }
    text
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (any::<usize>(), any::<usize>()).prop_map(|(k, v)| Edit::Number(k, v)),
        1 => (any::<u16>(), any::<usize>()).prop_map(|(a, t)| Edit::Insert(a, t)),
        1 => (any::<u16>(), 1u8..24).prop_map(|(a, l)| Edit::Delete(a, l)),
    ]
}

/// Runs what parsed, kept small: the point is that whatever passes validation runs.
fn run_small(preset: AnyPreset) {
    match preset {
        AnyPreset::Toy(mut p) => {
            p.chains = p.chains.min(64);
            p.steps = p.steps.min(60);
            p.record_every = p.record_every.min(p.steps);
            if p.validate().is_ok() {
                let outcome = runner::run(&p, BackendChoice::Cpu, &mut |_| {}).unwrap();
                let s = &outcome.summary;
                assert!((0.0..=1.0).contains(&s.diverged_fraction));
            }
        }
        AnyPreset::Mlp(mut p) => {
            p.chains = p.chains.min(8);
            p.steps = p.steps.min(10);
            p.record_every = p.record_every.min(p.steps);
            if p.validate().is_ok() && p.build().is_ok() {
                runner::mlp::run_mlp(&p, BackendChoice::Cpu, &mut |_| {}).unwrap();
            }
        }
        AnyPreset::Comparison(mut c) => {
            c.base.chains = c.base.chains.min(32);
            c.base.steps = c.base.steps.min(30);
            c.base.record_every = c.base.record_every.min(c.base.steps);
            if c.validate().is_ok() {
                runner::run_comparison(&c, BackendChoice::Cpu, &mut |_, _| {}).unwrap();
            }
        }
        AnyPreset::Sphere(mut p) => {
            p.chains = p.chains.min(64);
            p.steps = p.steps.min(60);
            let point = runner::thermodynamics::measure(
                &AnyPreset::Sphere(p),
                BackendChoice::Cpu,
                &mut |_| {},
            )
            .unwrap();
            assert!(point.u.is_finite() && point.u >= 0.0);
        }
    }
}

#[test]
fn mutated_presets_give_a_located_error_or_a_run() {
    let cases = budget("ATMC_FUZZ_PRESETS", 200);
    let mut runner = TestRunner::new(config(cases));
    let strategy = (0..SHIPPED.len(), prop::collection::vec(edit(), 1..4));
    runner
        .run(&strategy, |(which, edits)| {
            let (name, original) = SHIPPED[which];
            let text = apply(original, &edits);
            match AnyPreset::parse(&text, "fuzz.ron") {
                Err(e) => {
                    let message = e.to_string();
                    prop_assert!(message.starts_with("fuzz.ron:"), "{name}: {message}");
                    prop_assert!(e.line >= 1 && e.column >= 1);
                    prop_assert!(!message.contains('\n') || message.len() < 2000);
                }
                Ok(preset) => run_small(preset),
            }
            Ok(())
        })
        .unwrap();
}

const SUBCOMMANDS: &[&str] = &["run", "bench", "screenshot", "record", "train", "presets"];

/// Flags with values drawn from small pools (valid, edge and garbage), sized so that a valid
/// combination runs in well under a second.
const FLAGS: &[(&str, &[&str])] = &[
    (
        "--steps",
        &["1", "5", "0", "-3", "abc", "1e3", "4294967296"],
    ),
    ("--chains", &["1", "16", "0", "abc", "16777217", "-1"]),
    ("--h", &["0.05", "10", "1e-50", "NaN", "-1", "1e300", "inf"]),
    ("--D", &["1", "0", "-1", "1e9"]),
    ("--m", &["1", "1e-9", "0", "1e5"]),
    ("--temperature", &["1", "0", "-1", "1e4"]),
    ("--noise", &["0", "2", "-2", "1e5", "NaN"]),
    ("--friction-sign", &["1", "-1", "0.5", "2", "minus"]),
    ("--leapfrog-steps", &["10", "0", "1", "200", "201", "2.5"]),
    (
        "--sampler",
        &["atmc", "sgld", "sghmc", "sgnht", "sgd", "hmc", ""],
    ),
    (
        "--target",
        &["gaussian", "funnel", "gmm25", "logistic", "moon"],
    ),
    ("--seed", &["0", "18446744073709551615", "-1", "x"]),
    ("--backend", &["cpu", "gpu", "auto", "tpu"]),
    (
        "--size",
        &["320x200", "0x0", "9000x10", "x", "100000x100000", "64x64"],
    ),
    ("--scale", &["1", "0", "4", "100", "NaN"]),
    ("--every", &["1", "0", "100"]),
    ("--depth", &["8", "9", "1000000", "0"]),
    ("--width", &["4", "0", "100000"]),
    ("--epochs", &["0", "-1", "x"]),
    ("--batch-size", &["0", "99999999"]),
    ("--seconds", &["0", "0.1", "-1", "NaN"]),
    ("--steps-per-frame", &["1", "0", "1e9"]),
    ("--xi-update", &["accumulate", "overwrite", "x"]),
    ("--panel", &["θ₁", "nope", ""]),
    ("--delay-ms", &["0", "10", "-1"]),
];

const PRESETS: &[&str] = &[
    "default",
    "two-moons",
    "lesson-defects",
    "nope",
    "",
    "presets/default.ron",
    "/dev/null",
    "presets",
];

const SWITCHES: &[&str] = &[
    "--presentation",
    "--light",
    "--mlp",
    "--ui",
    "--paused",
    "--resume",
    "--bogus",
];

#[derive(Clone, Debug)]
struct CommandLine(Vec<String>);

fn command_line() -> impl Strategy<Value = CommandLine> {
    (
        0..SUBCOMMANDS.len(),
        0..PRESETS.len(),
        prop::collection::vec((0..FLAGS.len(), any::<usize>()), 0..5),
        prop::collection::vec(0..SWITCHES.len(), 0..2),
        any::<bool>(),
    )
        .prop_map(|(sub, preset, flags, switches, with_preset)| {
            let sub = SUBCOMMANDS[sub];
            let mut args = vec![sub.to_owned()];
            if with_preset && matches!(sub, "run" | "screenshot" | "record") {
                args.push(PRESETS[preset].to_owned());
            }
            for (f, v) in flags {
                let (flag, values) = FLAGS[f];
                args.push(flag.to_owned());
                args.push(values[v % values.len()].to_owned());
            }
            args.extend(switches.iter().map(|&s| SWITCHES[s].to_owned()));
            // Outputs go to a scratch folder; a training run never finds data (it would
            // otherwise train for minutes).
            match sub {
                "screenshot" => args.extend(["--out".into(), "fuzz.png".into()]),
                "record" => args.extend(["--out".into(), "fuzz.gif".into()]),
                "train" => args.extend(["--data".into(), "no-such-data".into()]),
                _ => {}
            }
            // Keep every run short: at most 200 steps and 64 chains unless a pool value is
            // itself out of range.
            if matches!(sub, "run" | "bench") && !args.iter().any(|a| a == "--chains") {
                args.extend(["--chains".into(), "64".into()]);
            }
            if matches!(sub, "run" | "bench" | "screenshot" | "record")
                && !args.iter().any(|a| a == "--steps")
            {
                args.extend(["--steps".into(), "20".into()]);
            }
            if sub == "bench" && !args.iter().any(|a| a == "--seconds") {
                args.extend(["--seconds".into(), "0.1".into()]);
            }
            CommandLine(args)
        })
}

#[test]
fn arbitrary_command_lines_end_well() {
    let cases = budget("ATMC_FUZZ_COMMANDS", 60);
    let scratch = crate::common::scratch("fuzz", "commands");
    // `ATMC_FUZZ_BINARY` points the hunt at another build (an older one, to see it fail).
    let binary = std::env::var("ATMC_FUZZ_BINARY")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_atmc-lab").to_owned());
    let mut runner = TestRunner::new(config(cases));
    runner
        .run(&command_line(), |CommandLine(args)| {
            let mut child = Command::new(&binary)
                .args(&args)
                .current_dir(&scratch)
                .env("XDG_RUNTIME_DIR", std::env::temp_dir())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let started = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if started.elapsed() > Duration::from_secs(120) {
                    let _ = child.kill();
                    prop_assert!(false, "{args:?} still running after 120 s");
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            prop_assert!(!err.contains("panicked"), "{args:?}: {err}");
            let code = status.code();
            prop_assert!(
                matches!(code, Some(0..=2)),
                "{args:?} exited {code:?}: {err}"
            );
            if code != Some(0) {
                let first = err
                    .lines()
                    .find(|l| !l.contains("XDG_RUNTIME_DIR") && !l.trim().is_empty());
                prop_assert!(
                    first.is_some_and(|l| l.starts_with("error:")),
                    "{args:?}: {err}"
                );
            }
            Ok(())
        })
        .unwrap();
    let _ = std::fs::remove_dir_all(&scratch);
}

// ---------------------------------------------------------------------------------------------
// Issue #31 (file system): writers raced into one folder, signalled at seeded random moments,
// and cut off from their stdout. Whatever happens, no final path is left partial.
// Budget: `ATMC_FUZZ_SIGNALS` (default 8) cases, seed `ATMC_FUZZ_SEED` (default 31).
// ---------------------------------------------------------------------------------------------

/// SplitMix64: the seeded moments, signals and commands of the race below.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// A CSV at a final path is absent or whole: it ends with a newline and every row has the
/// header's number of fields.
fn csv_whole(path: &std::path::Path) -> Result<(), String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let fields = |l: &str| l.split(',').count();
    let header = text.lines().next().ok_or("an empty CSV")?;
    if !text.ends_with('\n') || text.lines().any(|l| fields(l) != fields(header)) {
        return Err(format!("a partial CSV: {} bytes", text.len()));
    }
    Ok(())
}

/// A GIF at a final path is absent or whole: its signature and its trailer byte.
fn gif_whole(path: &std::path::Path) -> Result<(), String> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(());
    };
    if !bytes.starts_with(b"GIF89a") || bytes.last() != Some(&0x3B) {
        return Err(format!("a partial GIF: {} bytes", bytes.len()));
    }
    Ok(())
}

/// A merged table is absent or whole, every point once; the shard's complete lines hold
/// every point at most once.
fn sweep_whole(dir: &std::path::Path, points: usize) -> Result<(), String> {
    if let Ok(text) = std::fs::read_to_string(dir.join("merged.jsonl"))
        && (text.lines().count() != points + 1 || !text.ends_with('\n'))
    {
        return Err(format!(
            "a partial merged.jsonl: {} lines",
            text.lines().count()
        ));
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("shard-0-of-1.jsonl")) {
        let mut seen = std::collections::BTreeSet::new();
        for line in text
            .split_inclusive('\n')
            .skip(1)
            .filter(|l| l.ends_with('\n'))
        {
            let record: serde_json::Value =
                serde_json::from_str(line).map_err(|e| format!("{e}: {line}"))?;
            if !seen.insert(record["index"].as_u64()) {
                return Err(format!("point {} written twice", record["index"]));
            }
        }
    }
    Ok(())
}

#[test]
fn raced_signalled_and_cut_off_writers_leave_no_partial_final_path() {
    let cases = budget("ATMC_FUZZ_SIGNALS", 8);
    let mut rng = Seeded(u64::from(budget("ATMC_FUZZ_SEED", 31)));
    let dir = crate::common::scratch("fuzz", "signals");
    std::fs::write(
        dir.join("small.ron"),
        "Sweep(name: \"small\", base: \"default\", set: {\"chains\": 4000, \"steps\": 800},
           axes: [(field: \"sampler.h\", values: Log(from: 0.01, to: 0.1, points: 12))])",
    )
    .unwrap();
    let start = |args: &[&str], close_stdout: bool| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
            .args(args)
            .current_dir(&dir)
            .env("XDG_RUNTIME_DIR", std::env::temp_dir())
            .stdout(if close_stdout {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The reading end closed at once: the result line meets a closed pipe.
        drop(child.stdout.take());
        child
    };
    let finish = |child: &mut std::process::Child, what: &str| {
        crate::reliability_io::wait_child(child, 120, what)
    };
    for case in 0..cases {
        let kind = rng.below(if cfg!(feature = "gui") { 3 } else { 2 });
        let sig = ["INT", "TERM"][rng.below(2) as usize];
        let delay = Duration::from_millis(rng.below(1500));
        let close_stdout = rng.below(2) == 0;
        let what = format!(
            "case {case}: kind {kind}, SIG{sig} after {delay:?}, stdout closed {close_stdout}"
        );
        match kind {
            0 => {
                let csv = dir.join(format!("run-{case}.csv"));
                let mut child = start(
                    &[
                        "run",
                        "default",
                        "--backend",
                        "cpu",
                        "--chains",
                        "5000",
                        "--steps",
                        "3000",
                        "--csv",
                        csv.to_str().unwrap(),
                    ],
                    close_stdout,
                );
                std::thread::sleep(delay);
                crate::reliability_io::signal(&child, sig);
                let status = finish(&mut child, &what);
                csv_whole(&csv).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(
                    !status.success() || csv.exists(),
                    "{what}: exit 0 without its CSV"
                );
            }
            1 => {
                // Two writers raced into one folder; the first is signalled.
                let args = ["sweep", "small.ron", "--out", "race", "--backend", "cpu"];
                let mut a = start(&args, close_stdout);
                let mut b = start(&args, false);
                std::thread::sleep(delay);
                crate::reliability_io::signal(&a, sig);
                let status_b = finish(&mut b, &what);
                finish(&mut a, &what);
                assert!(
                    matches!(status_b.code(), Some(0 | 2)),
                    "{what}: the second writer exited {status_b:?}"
                );
                sweep_whole(&dir.join("race"), 12).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
            _ => {
                let gif = dir.join(format!("record-{case}.gif"));
                let mut child = start(
                    &[
                        "record",
                        "default",
                        "--steps",
                        "60",
                        "--every",
                        "10",
                        "--size",
                        "320x240",
                        "--out",
                        gif.to_str().unwrap(),
                    ],
                    close_stdout,
                );
                std::thread::sleep(delay);
                crate::reliability_io::signal(&child, sig);
                let status = finish(&mut child, &what);
                gif_whole(&gif).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert!(
                    !status.success() || gif.exists(),
                    "{what}: exit 0 without its GIF"
                );
            }
        }
    }
    // After all that, the raced folder resumes into a whole sweep, every point once.
    let out = crate::common::atmc_lab_in(&["sweep", "small.ron", "--out", "race"], &dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sweep_whole(&dir.join("race"), 12).unwrap();
    assert!(dir.join("race/merged.jsonl").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

// ---- Issue #31, class 4: standard output closed at a seeded moment ----

/// Commands whose result goes to standard output, each short.
const STDOUT_COMMANDS: &[&[&str]] = &[
    &["presets"],
    &[
        "run",
        "default",
        "--chains",
        "64",
        "--steps",
        "20",
        "--backend",
        "cpu",
    ],
    &[
        "run",
        "thermostat-vs-noise",
        "--chains",
        "64",
        "--steps",
        "20",
        "--backend",
        "cpu",
    ],
];

/// Reading a seeded number of bytes of a command's standard output and then closing it (0:
/// closed before the command writes anything) ends the command with exit 0 (all of it was
/// written before the close) or 1 with one `error:` line naming standard output: never a
/// panic (exit 101) and never a lost result passed off as success.
#[test]
fn stdout_closed_at_a_seeded_moment_ends_well() {
    let cases = budget("ATMC_FUZZ_COMMANDS", 60).min(24);
    let scratch = crate::common::scratch("fuzz", "stdout");
    let binary = std::env::var("ATMC_FUZZ_BINARY")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_atmc-lab").to_owned());
    let mut runner = TestRunner::new(config(cases));
    let strategy = (
        0..STDOUT_COMMANDS.len(),
        prop_oneof![Just(0usize), 1usize..300],
    );
    runner
        .run(&strategy, |(which, keep)| {
            let args = STDOUT_COMMANDS[which];
            let mut child = Command::new(&binary)
                .args(args)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .env("XDG_RUNTIME_DIR", std::env::temp_dir())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdout = child.stdout.take().unwrap();
            let mut read = 0;
            let mut buffer = [0u8; 64];
            while read < keep {
                let want = (keep - read).min(buffer.len());
                match std::io::Read::read(&mut stdout, &mut buffer[..want]) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => read += n,
                }
            }
            drop(stdout);
            let started = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if started.elapsed() > Duration::from_secs(120) {
                    let _ = child.kill();
                    prop_assert!(false, "{args:?} still running after 120 s");
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            prop_assert!(
                !err.contains("panicked"),
                "{args:?} closed after {keep}: {err}"
            );
            let code = status.code();
            prop_assert!(
                matches!(code, Some(0 | 1)),
                "{args:?} closed after {keep} bytes exited {code:?}: {err}"
            );
            if code == Some(1) {
                let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
                prop_assert!(
                    errors.len() == 1 && errors[0].contains("standard output"),
                    "{args:?} closed after {keep} bytes: {err}"
                );
            }
            Ok(())
        })
        .unwrap();
    let _ = std::fs::remove_dir_all(&scratch);
}

// ---------------------------------------------------------------------------------------------
// Issue #41 (input): hostile lectures (steps and data files outside the folder, devices,
// pipes, huge or binary files, deep nesting, escape sequences) and hostile typed formulas.
// Budgets: `ATMC_FUZZ_LECTURES` (default 40) lectures, `ATMC_FUZZ_FORMULAS` (default 24)
// formulas.
// ---------------------------------------------------------------------------------------------

/// What a fuzzed lecture's step (or its data file) may name. The folder holds `points.csv`,
/// `fifo` (a named pipe), `big.csv` and `big.ron` (sparse, over their limits), `binary.ron`,
/// `deep.ron`, `escape.ron` and links out of it; `../secret.ron` lies beside it.
const HOSTILE_PATHS: &[&str] = &[
    "/etc/passwd",
    "/dev/zero",
    "/proc/self/environ",
    "/",
    "../secret.ron",
    "presets/../../secret.ron",
    "./..",
    "link-out.ron",
    "link-zero",
    "link-root/etc/hostname",
    "fifo",
    "big.ron",
    "big.csv",
    "binary.ron",
    "deep.ron",
    "escape.ron",
    "points.csv",
    "presets",
    "",
    "lesson-langevin",
    "\u{1b}[2J\u{1b}]0;title\u{7}",
    "nul\u{0}byte",
];

/// One step of a fuzzed lecture: a path as a step, or an inline network preset whose data
/// file is that path.
fn hostile_step(path: usize, inline: bool) -> String {
    let path = HOSTILE_PATHS[path % HOSTILE_PATHS.len()];
    if inline {
        format!(
            "MlpPreset(story: (text: \"t\"), sampler: (kind: Atmc), chains: 2, \
             network: (data: (source: Csv(path: {path:?}))))"
        )
    } else {
        format!("{path:?}")
    }
}

/// The folder the fuzzed lectures are written into, with the files they name.
fn hostile_lecture_folder(dir: &std::path::Path) -> std::path::PathBuf {
    let folder = dir.join("lecture");
    std::fs::create_dir_all(folder.join("presets")).unwrap();
    std::fs::write(dir.join("secret.ron"), "TOPSECRET(password: \"hunter2\")").unwrap();
    let points: String = (0..8)
        .map(|i| format!("{i},{},{}\n", i % 3, i % 2))
        .collect();
    std::fs::write(folder.join("points.csv"), points).unwrap();
    for (name, size) in [("big.ron", 5_000_000), ("big.csv", 65_000_000)] {
        std::fs::File::create(folder.join(name))
            .unwrap()
            .set_len(size)
            .unwrap();
    }
    std::fs::write(folder.join("binary.ron"), [0xff, 0xfe, 0x00, 0x1b, 0x80]).unwrap();
    std::fs::write(folder.join("deep.ron"), "(".repeat(100_000)).unwrap();
    std::fs::write(
        folder.join("escape.ron"),
        "Preset(name: \"\u{1b}[2J\", story: (text: \"\u{1b}]0;x\u{7}\"), sampler: (kind: \
         \u{1b}), target: Gaussian())",
    )
    .unwrap();
    let status = Command::new("mkfifo")
        .arg(folder.join("fifo"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    std::os::unix::fs::symlink(dir.join("secret.ron"), folder.join("link-out.ron")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", folder.join("link-zero")).unwrap();
    std::os::unix::fs::symlink("/", folder.join("link-root")).unwrap();
    folder
}

/// Lectures of one to three hostile steps (a byte-order mark in front at times), edited like
/// the presets above, load into a lecture or a one-line located error, within a minute each,
/// never a panic; nothing outside the folder is read, so no message quotes it, and no
/// message carries a raw escape sequence.
#[test]
fn hostile_lectures_load_or_are_refused_on_one_line() {
    let cases = budget("ATMC_FUZZ_LECTURES", 40);
    let dir = crate::common::scratch("fuzz", "lectures");
    let folder = hostile_lecture_folder(&dir);
    let strategy = (
        prop::collection::vec((any::<usize>(), any::<bool>()), 1..4),
        any::<bool>(),
        prop::collection::vec(edit(), 0..2),
    );
    let mut runner = TestRunner::new(config(cases));
    runner
        .run(&strategy, |(steps, bom, edits)| {
            let steps: Vec<String> = steps
                .iter()
                .map(|&(path, inline)| hostile_step(path, inline))
                .collect();
            let text = apply(
                &format!("Lecture(name: \"fuzz\", steps: [{}])", steps.join(", ")),
                &edits,
            );
            let text = if bom { format!("\u{feff}{text}") } else { text };
            std::fs::write(folder.join("lecture.ron"), &text).unwrap();
            // On a thread of its own, so that a hang fails the case instead of the suite.
            let (tx, rx) = std::sync::mpsc::channel();
            let path = folder.display().to_string();
            std::thread::spawn(move || {
                let loaded = std::panic::catch_unwind(|| {
                    atmc_lab::preset::Lecture::load(&path).map_err(|e| e.to_string())
                });
                let _ = tx.send(loaded);
            });
            let loaded = rx
                .recv_timeout(Duration::from_secs(60))
                .map_err(|_| TestCaseError::fail(format!("{text:?}: no answer within 60 s")))?;
            let loaded = loaded.map_err(|_| TestCaseError::fail(format!("{text:?}: a panic")))?;
            if let Err(message) = loaded {
                // Located in the lecture's folder: its file or one of its step files.
                prop_assert!(
                    message.starts_with(&folder.display().to_string()),
                    "{text:?}: {message}"
                );
                prop_assert!(
                    !message.contains('\n') && message.chars().count() < 1500,
                    "{text:?}: {message}"
                );
                prop_assert!(
                    !message.contains("TOPSECRET") && !message.contains("hunter2"),
                    "{text:?}: {message}"
                );
                prop_assert!(
                    !message.contains(['\u{1b}', '\u{7}', '\u{0}']),
                    "{text:?}: {message}"
                );
            }
            Ok(())
        })
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Pieces spliced into a typed energy: symbols, numbers out of f32, unknown names, a minus in
/// front (taken for a flag before), control characters, unbalanced brackets. Oscillating
/// functions are left out: their truth is a question of the truth's work limit, not of the
/// input's handling.
const FORMULA_PIECES: &[&str] = &[
    "x",
    "y",
    "θ₁",
    "t2",
    "2",
    "0",
    "0.5",
    "1e999",
    "1e-999",
    "-",
    "-",
    "+",
    "*",
    "/",
    "(",
    ")",
    "^",
    "abs(",
    "exp(",
    "log(",
    "sqrt(",
    "pi",
    "s",
    "nan",
    "inf",
    ",",
    "=",
    "é",
    "²",
    "'",
    "\"",
    "\\",
    "[",
    "{",
    "\u{1b}[2J",
    "\u{7}",
    "\u{202e}",
    "\t",
    "--energy",
    "-x^2",
];

/// A hostile formula: `(x^2+y^2)/2` with pieces spliced in, a leading minus at times, and at
/// times a run of one piece (deep brackets, a long name).
fn hostile_formula() -> impl Strategy<Value = String> {
    (
        prop::collection::vec((any::<u16>(), 0..FORMULA_PIECES.len()), 0..4),
        any::<bool>(),
        prop::option::of((0..FORMULA_PIECES.len(), 1usize..3000)),
    )
        .prop_map(|(pieces, minus, run)| {
            let mut text = "(x^2+y^2)/2".to_owned();
            for (at, piece) in pieces {
                let i = floor_boundary(&text, usize::from(at) * text.len() / 65536);
                text.insert_str(i, FORMULA_PIECES[piece]);
            }
            if let Some((piece, count)) = run {
                text.push_str(&FORMULA_PIECES[piece].repeat(count));
            }
            if minus {
                text.insert(0, '-');
            }
            text
        })
}

/// `run --energy FORMULA` ends with 0 or 2 and, on a refusal, one `error:` line without a
/// raw control character; never a panic, never a hang (2 minutes each).
#[test]
fn hostile_formulas_end_well() {
    let cases = budget("ATMC_FUZZ_FORMULAS", 24);
    let scratch = crate::common::scratch("fuzz", "formulas");
    let binary = std::env::var("ATMC_FUZZ_BINARY")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_atmc-lab").to_owned());
    let mut runner = TestRunner::new(config(cases));
    runner
        .run(&hostile_formula(), |formula| {
            let args = [
                "run",
                "default",
                "--energy",
                &formula,
                "--chains",
                "16",
                "--steps",
                "2",
                "--backend",
                "cpu",
            ];
            let mut child = Command::new(&binary)
                .args(args)
                .current_dir(&scratch)
                .env("XDG_RUNTIME_DIR", std::env::temp_dir())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut err = String::new();
            let mut pipe = child.stderr.take().unwrap();
            let reader = std::thread::spawn(move || {
                let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
                err
            });
            let started = Instant::now();
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                if started.elapsed() > Duration::from_secs(120) {
                    let _ = child.kill();
                    prop_assert!(false, "{formula:?} still running after 120 s");
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let err = reader.join().unwrap();
            prop_assert!(!err.contains("panicked"), "{formula:?}: {err}");
            let code = status.code();
            prop_assert!(
                matches!(code, Some(0 | 2)),
                "{formula:?} exited {code:?}: {err}"
            );
            prop_assert!(
                !err.contains(['\u{1b}', '\u{7}', '\u{202e}']),
                "{formula:?}: {err}"
            );
            if code == Some(2) {
                let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
                prop_assert!(errors.len() == 1, "{formula:?}: {err}");
                prop_assert!(
                    err.lines().next().is_some_and(|l| l.starts_with("error:")),
                    "{formula:?}: {err}"
                );
            }
            Ok(())
        })
        .unwrap();
    let _ = std::fs::remove_dir_all(&scratch);
}

// ---- Issue #41: hostile destinations of `--draws` ----

/// A folder of what a user may point `--draws` at by mistake: a project (an ArviZ-shaped
/// store beside data and notes), a file, an empty home folder, a link to the project, another
/// kind of atmc-lab output, and an earlier export a user put a file into.
fn hostile_destinations(root: &std::path::Path) {
    use atmc_lab::fsutil::{FolderWriter, OutputKind};
    crate::export_safety::user_project(&root.join("project"));
    std::fs::write(root.join("a-file"), "keep").unwrap();
    std::fs::create_dir(root.join("home")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("project"), root.join("link")).unwrap();
    for (folder, name) in [("handout", "handout"), ("export", "draws")] {
        let kind = OutputKind { name, example: "x" };
        let mut writer = FolderWriter::begin(&root.join(folder), kind).unwrap();
        writer.write("index.html", "<html>").unwrap();
        writer.commit().unwrap();
    }
    std::fs::write(root.join("export/analysis.ipynb"), "{}").unwrap();
}

/// Destinations a user might give `--draws` by mistake, each refused before any work with
/// exit 2 and a message naming the cause, and nothing changed: the working folder of a
/// project (`.`, `./`, `..`, its absolute path), a file, a device, a folder of user files
/// shaped like an ArviZ store, a link to it, a path inside a missing folder or a file, a
/// folder that cannot be written, the root, the home folder (even empty), another kind of
/// atmc-lab output, an earlier export holding a user's file, and an empty path. Each case
/// gets a fresh copy of [`hostile_destinations`]; the failures are listed together.
/// `ATMC_FUZZ_BINARY` runs them against another build.
#[test]
fn hostile_draws_destinations_are_refused_before_work() {
    use crate::export_safety::snapshot;
    let binary = std::env::var("ATMC_FUZZ_BINARY")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_atmc-lab").to_owned());
    let dir = crate::common::scratch("fuzz", "draws");
    // (working folder below the case's root, destination, what the message names); `ROOT`
    // stands for the case's root.
    let mut cases: Vec<(&str, &str, &str)> = vec![
        ("project", ".", "working folder"),
        ("project", "./", "working folder"),
        ("project/notes", "..", "name a new folder"),
        ("project", "ROOT/project", "working folder"),
        ("", "a-file", "is a file"),
        ("", "/dev/null", "is a file"),
        ("", "project", "precious.txt"),
        ("", "missing/x.zarr", "does not exist"),
        ("", "a-file/x.zarr", "is not a folder"),
        ("", "/", "name a new folder"),
        ("", "ROOT/home", "home folder"),
        ("", "handout", "handout"),
        ("", "export", "analysis.ipynb"),
        ("", "", "a value is required"),
    ];
    #[cfg(unix)]
    cases.extend([("", "link", "symbolic link"), ("", "link/", "precious.txt")]);
    // A folder no process can write in, even as root.
    #[cfg(target_os = "linux")]
    cases.push(("", "/proc/atmc-lab-draws.zarr", "not writable"));
    let mut mishandled = Vec::new();
    let mut unclear = Vec::new();
    for (k, (cwd, destination, needle)) in cases.iter().enumerate() {
        let root = dir.join(format!("case-{k}"));
        std::fs::create_dir(&root).unwrap();
        hostile_destinations(&root);
        let before = snapshot(&root);
        let destination = destination.replace("ROOT", root.to_str().unwrap());
        let out = Command::new(&binary)
            .args([
                "run",
                "default",
                "--backend",
                "cpu",
                "--chains",
                "200",
                "--steps",
                "100",
                "--draws",
                &destination,
            ])
            .current_dir(root.join(cwd))
            .env("HOME", root.join("home"))
            .env("XDG_RUNTIME_DIR", std::env::temp_dir())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        // "draws: N chains × M draws, about …" is printed once the destination is taken,
        // just before the run.
        let ran = err.contains(" draws, about ") || err.contains("chain-steps/s");
        let changed = snapshot(&root) != before;
        if out.status.code() != Some(2) || ran || changed {
            mishandled.push(format!(
                "--draws '{destination}' in {cwd:?}: exit {:?}, ran {ran}, files changed \
                 {changed}: {}",
                out.status.code(),
                err.trim()
            ));
        } else if !err.contains(needle) {
            unclear.push(format!(
                "--draws '{destination}': no '{needle}' in: {}",
                err.trim()
            ));
        }
    }
    assert!(
        mishandled.is_empty() && unclear.is_empty(),
        "{} of {} hostile destinations mishandled:\n{}\nunclear messages:\n{}",
        mishandled.len(),
        cases.len(),
        mishandled.join("\n"),
        unclear.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
