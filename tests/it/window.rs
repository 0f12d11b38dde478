//! The desktop app in a real window under Xvfb, driven by xdotool: what the offscreen
//! harness cannot show. A real window's picture comes back from the renderer one or more
//! frames after it was asked for (the harness hands it over at once), so the S key's
//! screenshot is tested here, as a lecturer presses it.
//!
//! Needs `xvfb-run` (package xvfb, with xauth) and `xdotool`; `scripts/test` installs both.
//! Without them the test fails and names what is missing: it never skips.

#![cfg(feature = "gui")]

use crate::common::{s, scratch};
use std::path::Path;
use std::process::Command;

/// Fails loudly when a program the test drives the window with is missing.
fn require(program: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "`{program}` is missing: install the `{package}` package (scripts/test installs it); \
         the real-window tests do not skip"
    );
}

/// Opens the app on `preset` under Xvfb at 1280×720 in `dir`, waits for its window, focuses
/// it, presses `keys` (xdotool key names) one by one, waits until `done` (a shell test) holds
/// or 90 s pass, closes the app and returns its stderr with the script's own lines.
fn drive_window(dir: &Path, preset: &str, keys: &[&str], done: &str) -> String {
    require("xvfb-run", "xvfb");
    require("xdotool", "xdotool");
    let script = format!(
        r#"
"$ATMC" app {preset} --backend cpu 2>app.log &
app=$!
wid=
for i in $(seq 1 240); do
    wid=$(xdotool search --name '^atmc-lab$' 2>/dev/null | head -n 1)
    [ -n "$wid" ] && break
    kill -0 $app 2>/dev/null || break
    sleep 0.5
done
if [ -z "$wid" ]; then echo "script: no atmc-lab window appeared"; kill $app 2>/dev/null; exit 3; fi
# The first frames (fonts, the engine's first tick) before any key.
sleep 4
xdotool mousemove --window "$wid" 640 360
xdotool windowfocus --sync "$wid"
for key in {keys}; do xdotool key --clearmodifiers "$key"; sleep 0.5; done
ok=0
for i in $(seq 1 180); do
    if {done}; then ok=1; break; fi
    sleep 0.5
done
sleep 1
kill $app 2>/dev/null
wait $app 2>/dev/null
echo "script: done=$ok"
"#,
        keys = keys.join(" "),
    );
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x720x24", "sh", "-c", &script])
        .current_dir(dir)
        .env("ATMC", env!("CARGO_BIN_EXE_atmc-lab"))
        .env("XDG_RUNTIME_DIR", dir)
        .output()
        .expect("xvfb-run starts");
    let log = std::fs::read_to_string(dir.join("app.log")).unwrap_or_default();
    format!(
        "{}{}\n--- app stderr ---\n{log}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_s_key_writes_a_screenshot_of_the_real_window_and_says_where() {
    let dir = scratch("window", "s_key");
    let folder = dir.join(atmc_lab::app::SCREENSHOT_FOLDER);
    let report = drive_window(
        &dir,
        "default",
        &["s"],
        "ls atmc-lab-screenshots/*.png >/dev/null 2>&1",
    );
    let pngs: Vec<_> = std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{} was not created ({e}):\n{report}", s(&folder)))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "png"))
        .collect();
    assert_eq!(pngs.len(), 1, "one screenshot in {}:\n{report}", s(&folder));
    let picture = image::open(&pngs[0])
        .unwrap_or_else(|e| panic!("{} does not decode ({e}):\n{report}", s(&pngs[0])))
        .to_rgba8();
    assert_eq!(picture.dimensions(), (1280, 720), "{report}");
    // A picture of the UI, not a blank frame: many distinct colours.
    let mut colours: Vec<[u8; 4]> = picture.pixels().map(|p| p.0).collect();
    colours.sort_unstable();
    colours.dedup();
    assert!(colours.len() > 50, "{} colours:\n{report}", colours.len());
    // The app said where it wrote (the same text as the notice over the window).
    let name = pngs[0]
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a name");
    assert!(
        report.contains("atmc-lab: wrote") && report.contains(name),
        "the app did not say where it wrote:\n{report}"
    );
}

#[test]
fn frame_stats_measure_the_real_window_and_split_its_frames_into_phases() {
    require("xvfb-run", "xvfb");
    let dir = scratch("window", "frame_stats");
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 1280x720x24"])
        .arg(env!("CARGO_BIN_EXE_atmc-lab"))
        .args(["app", "two-moons", "--backend", "cpu", "--frame-stats", "1"])
        .current_dir(&dir)
        .env("XDG_RUNTIME_DIR", &dir)
        .output()
        .expect("xvfb-run starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{report}");
    let line = stdout
        .lines()
        .rfind(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line:\n{report}"));
    let r: serde_json::Value = serde_json::from_str(line).expect("JSON");
    assert!(r["frames"].as_u64().unwrap() > 2, "{report}");
    // No GPU here: `auto` draws with OpenGL, the faster renderer on a software rasteriser.
    assert_eq!(r["renderer"], "glow", "{report}");
    let p = &r["phases_ms"];
    let median = |phase: &str| {
        p[phase]["p50"]
            .as_f64()
            .unwrap_or_else(|| panic!("no {phase}:\n{report}"))
    };
    // The phases are parts of the frame: the UI holds the view's central area, and the UI,
    // painting and presenting together make up the interval.
    assert!(median("central") <= median("ui"), "{report}");
    assert!(median("tessellate_and_paint") > 0.0, "{report}");
    let sum = p["ui"]["mean"].as_f64().unwrap()
        + p["tessellate_and_paint"]["mean"].as_f64().unwrap()
        + p["present"]["mean"].as_f64().unwrap();
    let frame = 1e3 / r["frames_per_s"].as_f64().unwrap();
    assert!(
        (sum - frame).abs() < 0.25 * frame,
        "phases {sum} ms against frames of {frame} ms:\n{report}"
    );
    assert!(r["engine_steps_per_s"].as_f64().unwrap() > 0.0, "{report}");
}
