//! The app driven as a user would, offscreen (egui_kittest on wgpu; lavapipe in CI).
#![cfg(feature = "gui")]

use crate::common::harness::{AppHarness, app, snapshot_options, wait};
use atmc_lab::app::posterior::PosteriorView;
use atmc_lab::app::screenshot::{harness, run_to_step};
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::Preset;
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;

fn view(h: &AppHarness) -> &PosteriorView {
    app(h).get::<PosteriorView>().expect("the 2-D view")
}

/// Steps the UI until `done` holds for the latest snapshot, or fails after `seconds`.
fn run_until(
    h: &mut AppHarness,
    seconds: u64,
    what: &str,
    done: impl Fn(&atmc_lab::app::posterior::session::Snapshot) -> bool,
) {
    wait(h, seconds, what, |a| {
        a.get::<PosteriorView>()
            .expect("the 2-D view")
            .session()
            .with_snapshot(&done)
    });
}

#[test]
fn flipping_the_friction_sign_explodes_the_chains() {
    let mut preset = Preset::default_preset();
    preset.chains = 4000;
    let mut h = harness(preset, [1280, 720], 1.0, BackendChoice::Auto);
    run_to_step(&mut h, 20).unwrap();
    assert_eq!(view(&h).session().snapshot().moments.diverged, 0);
    h.get_by_label("▶ Play").click();
    h.get_by_role_and_label(Role::Slider, "friction sign φ")
        .set_value_accesskit(-1.0);
    h.step();
    assert_eq!(view(&h).preset.sampler.friction_sign, -1.0);
    run_until(&mut h, 60, "the explosion", |s| s.moments.diverged >= 3960);
    h.step();
    h.step();
    // The banner is there (the query panics when no such label exists).
    h.get_by_label_contains("Momentum explosion");
    let s = view(&h).session().snapshot();
    assert!(s.first_divergence.is_some());
    // One click resets the chains (paused first: with φ = −1 they explode again within a
    // few frames of playing).
    h.get_by_label("❚❚ Pause").click();
    h.step();
    h.get_all_by_label("↺ Reset chains").next().unwrap().click();
    run_until(&mut h, 30, "the reset", |s| {
        s.moments.diverged == 0 && s.step == 0
    });
}

#[test]
fn changing_d_is_live_and_keeps_the_chains() {
    let mut preset = Preset::default_preset();
    preset.chains = 2000;
    let mut h = harness(preset, [1280, 720], 1.0, BackendChoice::Auto);
    run_to_step(&mut h, 100).unwrap();
    h.get_by_role_and_label(Role::Slider, "friction floor D")
        .set_value_accesskit(2.5);
    h.step();
    run_until(&mut h, 30, "the new D in the engine", |s| {
        s.sampler.is_some_and(|p| p.friction_floor == 2.5)
    });
    // No reset: the step count carried on from 100.
    let s = view(&h).session().snapshot();
    assert!(s.step >= 100, "step {}", s.step);
    assert_eq!(
        s.series.first().map(|r| r.step),
        Some(0),
        "the time series was not restarted"
    );
}

#[test]
fn loading_a_preset_from_the_menu() {
    let mut h = harness(
        Preset::default_preset(),
        [1280, 720],
        1.0,
        BackendChoice::Auto,
    );
    h.get_by_label("Presets").click();
    h.run_steps(3);
    // The presets are grouped by family, each group a submenu.
    h.get_by_label("2-D targets").click();
    h.run_steps(3);
    h.get_by_label_contains("printed: ATMC as printed").click();
    h.run_steps(2);
    let printed = Preset::load("printed").unwrap();
    assert_eq!(view(&h).preset, printed);
    run_until(&mut h, 30, "the printed preset in the engine", |s| {
        s.sampler
            .is_some_and(|p| p.friction_sign == -1.0 && p.xi_overwrite)
            && s.chains == printed.chains
    });
}

#[test]
fn snapshot_of_the_default_preset() {
    let mut h = harness(
        Preset::default_preset(),
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
    );
    run_to_step(&mut h, 300).unwrap();
    h.snapshot_options("default_preset", &snapshot_options());
}

#[test]
fn snapshot_of_the_printed_preset() {
    let mut h = harness(
        Preset::load("printed").unwrap(),
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
    );
    run_to_step(&mut h, 40).unwrap();
    h.snapshot_options("printed_preset", &snapshot_options());
    // Every highlighted chain diverged: each has its red mark in the strip along the top of
    // every portrait, over the portrait's image.
    let image = h.render().unwrap();
    for (label, rect) in app(&h).active().panels() {
        let y = (rect.top() + 34.0).round() as u32;
        let red = (rect.left() as u32..rect.right() as u32)
            .filter(|&x| {
                let p = image.get_pixel(x, y);
                // The marks' colour (255, 80, 60), not the density's orange.
                p[0] > 240 && p[1].abs_diff(80) < 12 && p[2].abs_diff(60) < 12
            })
            .count();
        assert!(
            red > 100,
            "{label}: {red} red pixels in the strip of diverged chains"
        );
    }
}

#[test]
fn values_beyond_a_sliders_ends_are_kept_and_the_far_warning_shows() {
    // h = 1.5 is beyond the step-size slider's usual end (1) and 50 chains below the chains
    // slider's (100): drawing the controls must not clamp them, which would quietly change
    // the run. SGLD at h = 1.5 samples Var θ ≈ 4 on N(0, I): the view says so.
    let preset = Preset::parse(
        "Preset(sampler: (kind: Sgld, h: 1.5), target: Gaussian(), chains: 50, steps: 100)",
        "test",
    )
    .unwrap();
    let mut h = harness(preset, [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 80).unwrap();
    h.run_steps(3);
    assert_eq!(view(&h).preset.sampler.h, 1.5);
    assert_eq!(view(&h).preset.chains, 50);
    assert_eq!(view(&h).session().snapshot().sampler.unwrap().h, 1.5);
    // Fewer than 100 alive chains are too few to judge; 50 chains are not warned about.
    assert!(view(&h).session().snapshot().far_from_target.is_none());
    let many = Preset::parse(
        "Preset(sampler: (kind: Sgld, h: 1.5), target: Gaussian(), chains: 4000, steps: 100)",
        "test",
    )
    .unwrap();
    let mut h = harness(many, [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 80).unwrap();
    h.run_steps(3);
    let far = view(&h).session().snapshot().far_from_target.clone();
    assert!(
        far.as_deref().is_some_and(|f| f.contains("Var θ")),
        "{far:?}"
    );
    // Chains that spread wider than the target point at the large step first.
    assert!(
        far.as_deref()
            .is_some_and(|f| f.contains("(a step size too large for the target")),
        "{far:?}"
    );
    h.get_by_label_contains("Far from the target");
}

/// On a desktop where no file dialog can open, File → Save preset says so in the status bar
/// and opens an in-app prompt; the typed path is used.
#[test]
fn a_file_dialog_that_cannot_open_says_so_and_the_typed_path_is_used() {
    use atmc_lab::app::files::{FileRequest, Picked};
    fn unavailable(_: &FileRequest) -> Picked {
        Picked::Unavailable("no file dialog on this desktop".into())
    }
    let mut h = harness(
        Preset::default_preset(),
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
    );
    let shell_app = h.state_mut().as_mut().unwrap();
    shell_app.set_file_dialog(unavailable);
    shell_app.ask_save_preset();
    h.run_steps(2);
    let status = app_status(&h);
    assert!(
        status.error && status.text.contains("no file dialog on this desktop"),
        "{status:?}"
    );
    // Said twice: in the status bar and in the prompt window.
    assert_eq!(
        h.query_all_by_label_contains("no file dialog on this desktop")
            .count(),
        2
    );
    let target = std::env::temp_dir().join(format!("atmc-prompt-{}.ron", std::process::id()));
    h.state_mut()
        .as_mut()
        .unwrap()
        .path_prompt_mut()
        .expect("the prompt is open")
        .text = target.display().to_string();
    h.get_by_label("OK").click();
    h.run_steps(3);
    let written = std::fs::read_to_string(&target).expect("the preset was written");
    assert!(atmc_lab::preset::AnyPreset::parse(&written, "written").is_ok());
    assert!(app(&h).status_message().is_some_and(|s| !s.error));
    // The notice over the window names the file written, beside the status bar's line.
    let wrote = format!("wrote {}", target.display());
    assert_eq!(
        app(&h).export_notice().map(|s| s.text.as_str()),
        Some(wrote.as_str())
    );
    assert!(h.query_all_by_label_contains("Exported").count() >= 1);
    assert_eq!(h.query_all_by_label_contains(&wrote).count(), 2);
    let _ = std::fs::remove_file(target);
}

fn app_status(h: &AppHarness) -> atmc_lab::app::view::Status {
    app(h).status_message().cloned().expect("a status message")
}

/// A preset loaded from the menu never shows the old preset's chains on its axes: the view
/// says it is loading until the worker answers for the new one.
#[test]
fn a_loaded_preset_shows_a_loading_state_until_its_chains_arrive() {
    let mut h = harness(
        Preset::default_preset(),
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
    );
    h.run_steps(2);
    let printed = Preset::load("printed").unwrap();
    let ctx = h.ctx.clone();
    let app = h.state_mut().as_mut().unwrap();
    app.load_any(&ctx, printed.into());
    assert!(app.get::<PosteriorView>().unwrap().loading());
    wait(&mut h, 60, "the new preset", |a| {
        !a.get::<PosteriorView>().expect("the 2-D view").loading()
    });
    assert!(view(&h).session().with_snapshot(|s| s.step == 0));
}

/// A preset chosen from the menu runs at once, whatever its kind (an MLP preset used to open
/// paused while a 2-D one kept the previous state).
#[test]
fn presets_from_the_menu_open_running_whatever_their_kind() {
    use atmc_lab::app::mlp::MlpView;
    let mut h = harness(
        Preset::default_preset(),
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
    );
    h.run_steps(2);
    let ctx = h.ctx.clone();
    let moons = atmc_lab::preset::AnyPreset::load("two-moons").unwrap();
    h.state_mut().as_mut().unwrap().open_and_play(&ctx, moons);
    wait(&mut h, 60, "the MLP preset to run", |a| {
        a.get::<MlpView>()
            .is_some_and(|v| v.session().with_snapshot(|s| s.playing))
    });
}

/// Issue #44 item 6: a status line belongs to the tab that set it ("thermodynamics sweep
/// done" had followed the lecturer into the MLP lecture).
#[test]
fn a_status_line_stays_with_its_tab() {
    let mut h = harness(
        Preset::default_preset(),
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
    );
    let ctx = h.ctx.clone();
    h.state_mut().as_mut().unwrap().copy_preset(&ctx);
    h.run_steps(2);
    h.get_by_label_contains("copied the preset");
    h.get_by_label("Side by side").click();
    h.run_steps(3);
    assert!(h.query_by_label_contains("copied the preset").is_none());
    assert!(app(&h).status_message().is_none());
    h.get_by_label("2-D posteriors").click();
    h.run_steps(3);
    h.get_by_label_contains("copied the preset");
}
