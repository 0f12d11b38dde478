//! The app in an offscreen harness, as the UI tests drive it.

use atmc_lab::app::AtmcApp;
pub use atmc_lab::app::screenshot::AppHarness;
use std::time::{Duration, Instant};

/// The app inside a harness.
pub fn app(h: &AppHarness) -> &AtmcApp {
    h.state().as_ref().expect("app started")
}

/// Steps the UI until `done` holds, or fails after `seconds` naming `what`.
pub fn wait(h: &mut AppHarness, seconds: u64, what: &str, done: impl Fn(&AtmcApp) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        h.step();
        if done(app(h)) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How close a snapshot must be to its reference in `tests/snapshots/`, which is found from
/// the crate's root (egui_kittest's default is relative to the working directory, which a
/// test of this binary may have moved).
pub fn snapshot_options() -> egui_kittest::SnapshotOptions {
    // Anti-aliasing and float rounding differ a little between software and hardware
    // rasterisers; a few hundred pixels may differ, the picture may not.
    egui_kittest::SnapshotOptions::new()
        .threshold(3.0)
        .max_failed_pixels(2000)
        .output_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"))
}

/// What the layout and readability tests open in `tab`: the view's showcase preset (the
/// thermodynamics view on a small sphere sweep that settles in seconds).
pub fn opening(tab: atmc_lab::app::Tab) -> atmc_lab::app::Opening {
    use atmc_lab::app::{Opening, Tab};
    use atmc_lab::preset::AnyPreset;
    let preset = |name: &str| AnyPreset::load(name).expect("shipped");
    match tab {
        Tab::Posterior => Opening::from(preset("default")),
        Tab::Compare => Opening::from(preset("lesson-defects")),
        Tab::Mlp => Opening::from(preset("two-moons")),
        Tab::Thermo => {
            let AnyPreset::Sphere(mut small) = preset("sphere-op") else {
                unreachable!("sphere-op is a sphere preset")
            };
            (small.chains, small.steps) = (500, 200);
            Opening::from(AnyPreset::Sphere(small))
        }
        other => Opening::InTab(other, Box::new(preset("default"))),
    }
}
