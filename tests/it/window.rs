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
