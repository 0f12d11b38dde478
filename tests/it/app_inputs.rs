//! Numbers typed into the app, and state that must not outlive what it describes (#28).
#![cfg(feature = "gui")]

use crate::common::harness::{AppHarness, app};
use atmc_lab::app::posterior::PosteriorView;
use atmc_lab::app::screenshot::harness;
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::Preset;
use egui::Key;
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;

fn small() -> Preset {
    let mut p = Preset::default_preset();
    p.chains = 1000;
    p
}

fn step_size(h: &AppHarness) -> f64 {
    app(h).get::<PosteriorView>().unwrap().preset.sampler.h
}

/// Types `text` into the number field of the slider `label` one character a frame, as a
/// person does, then presses `finish`.
fn type_into(h: &mut AppHarness, label: &str, text: &str, finish: Key) {
    h.get_by_role_and_label(Role::SpinButton, label).click();
    h.run_steps(2);
    // The click selected the old number: the first character replaces it.
    for c in text.chars() {
        h.get_by_role_and_label(Role::SpinButton, label)
            .type_text(&c.to_string());
        h.run_steps(2);
    }
    h.key_press(finish);
    h.run_steps(3);
}

#[test]
fn a_number_is_read_when_typed_in_full() {
    let mut h = harness(small(), [1280, 720], 1.0, BackendChoice::Cpu);
    h.run_steps(3);
    let before = step_size(&h);
    assert_ne!(before, 0.02);
    // "0" on the way to "0.02" is out of range (h > 0); it must not be reverted mid-typing.
    type_into(&mut h, "step size h", "0.02", Key::Enter);
    assert_eq!(step_size(&h), 0.02);
    assert!(h.query_by_label_contains("refused").is_none());
}

#[test]
fn a_refused_number_says_why_and_keeps_the_old_value() {
    let mut h = harness(small(), [1280, 720], 1.0, BackendChoice::Cpu);
    h.run_steps(3);
    let before = step_size(&h);
    type_into(&mut h, "step size h", "0", Key::Enter);
    assert_eq!(step_size(&h), before);
    h.get_by_label_contains("refused: step size h = 0 is out of range");
    // An accepted value clears the reason.
    type_into(&mut h, "step size h", "0.2", Key::Enter);
    assert_eq!(step_size(&h), 0.2);
    assert!(h.query_by_label_contains("refused").is_none());
}

#[test]
fn every_slider_with_plain_bounds_refuses_instead_of_clamping() {
    let mut h = harness(small(), [1280, 720], 1.0, BackendChoice::Cpu);
    h.run_steps(3);
    let before = app(&h)
        .get::<PosteriorView>()
        .unwrap()
        .preset
        .sampler
        .friction_sign;
    type_into(&mut h, "friction sign φ", "5", Key::Enter);
    let after = app(&h)
        .get::<PosteriorView>()
        .unwrap()
        .preset
        .sampler
        .friction_sign;
    assert_eq!(after, before);
    h.get_by_label_contains("refused: 5 is outside -1 to 1");
}

/// A preset saved after a live change says so in its name and description.
#[test]
fn a_preset_changed_live_is_saved_as_modified() {
    use atmc_lab::app::files::{FileRequest, Picked};
    use atmc_lab::preset::AnyPreset;
    fn target() -> std::path::PathBuf {
        std::env::temp_dir().join(format!("atmc-modified-{}.ron", std::process::id()))
    }
    fn pick(_: &FileRequest) -> Picked {
        Picked::Path(target())
    }
    let mut h = harness(small(), [1280, 720], 1.0, BackendChoice::Cpu);
    h.run_steps(3);
    let name = app(&h).get::<PosteriorView>().unwrap().preset.name.clone();
    type_into(&mut h, "step size h", "0.02", Key::Enter);
    let shell = h.state_mut().as_mut().unwrap();
    shell.set_file_dialog(pick);
    shell.ask_save_preset();
    h.run_steps(2);
    let written = std::fs::read_to_string(target()).expect("the preset was written");
    let _ = std::fs::remove_file(target());
    let saved = AnyPreset::parse(&written, "saved").unwrap();
    assert_eq!(saved.name(), format!("{name} (modified)"));
    assert!(
        saved.description().starts_with("Changed in the app from"),
        "{}",
        saved.description()
    );
}

/// Closing the lesson panel folds it away; the lecture goes on and 2 opens its second lesson.
#[test]
fn keys_choose_lessons_after_the_lesson_panel_is_closed() {
    use atmc_lab::app::Tab;
    let mut h = harness(small(), [1280, 720], 1.0, BackendChoice::Cpu);
    h.get_by_label("Lectures").click();
    h.run_steps(3);
    h.get_by_label_contains("Adaptive thermostats").click();
    h.run_steps(3);
    h.get_by_label("lesson 1 of 10");
    h.get_by_label("close the lesson panel").click();
    h.run_steps(3);
    assert!(h.query_by_label("lesson 1 of 10").is_none());
    h.key_press(Key::Num2);
    h.run_steps(3);
    assert_eq!(app(&h).tab, Tab::Compare);
    h.get_by_label("lesson 2 of 10");
}

/// R during a replay of the steps before a divergence ends the replay: no "replaying step …"
/// label and no cursor over chains that no longer exist.
#[test]
fn reset_during_a_replay_ends_it() {
    use crate::common::harness::wait;
    let mut p = small();
    p.sampler.friction_sign = -1.0;
    let mut h = harness(p, [1280, 720], 1.0, BackendChoice::Cpu);
    h.get_by_label("▶ Play").click();
    wait(&mut h, 60, "a divergence", |a| {
        a.get::<PosteriorView>()
            .unwrap()
            .session()
            .with_snapshot(|s| s.moments.diverged > 0)
    });
    h.run_steps(3);
    h.get_by_label_contains("replay the").click();
    h.run_steps(2);
    h.get_by_label_contains("replaying step");
    h.key_press(Key::R);
    h.run_steps(2);
    wait(&mut h, 30, "the reset", |a| {
        a.get::<PosteriorView>()
            .unwrap()
            .session()
            .with_snapshot(|s| s.step == 0)
    });
    h.run_steps(3);
    assert!(h.query_by_label_contains("replaying step").is_none());
}

/// SGHMC with B̂ = C injects no noise: the far-from-target notice names that first.
#[test]
fn the_far_notice_names_the_knowable_cause_first() {
    use atmc_lab::app::screenshot::run_to_step;
    let preset = Preset::parse(
        "Preset(sampler: (kind: Sghmc, h: 0.1, sghmc_friction: 1.0, sghmc_noise_estimate: 1.0), \
         target: Gaussian(), chains: 2000, steps: 200)",
        "test",
    )
    .unwrap();
    let mut h = harness(preset, [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 150).unwrap();
    h.run_steps(3);
    h.get_by_label_contains("Far from the target");
    h.get_by_label_contains("(SGHMC with B̂ = C = 1 injects no noise");
}

/// Side by side: a column is added with its sampler and removed again in the UI.
#[test]
fn columns_are_added_and_removed_in_the_ui() {
    use atmc_lab::app::compare::CompareView;
    use atmc_lab::math::SamplerKind;
    use atmc_lab::preset::AnyPreset;
    let AnyPreset::Comparison(mut c) = AnyPreset::load("lesson-thermostat").unwrap() else {
        panic!("a comparison")
    };
    c.base.chains = 1000;
    let mut h = harness(c, [1280, 720], 1.0, BackendChoice::Cpu);
    h.run_steps(3);
    let columns = |h: &AppHarness| {
        app(h)
            .get::<CompareView>()
            .unwrap()
            .comparison
            .columns
            .clone()
    };
    assert_eq!(columns(&h).len(), 2);
    h.get_by_label("+ add a column").click();
    h.run_steps(3);
    h.get_by_label("SGLD").click();
    h.run_steps(3);
    let now = columns(&h);
    assert_eq!(now.len(), 3);
    assert_eq!(now[2].sampler.kind, SamplerKind::Sgld);
    assert_eq!(app(&h).get::<CompareView>().unwrap().sessions().count(), 3);
    h.get_by_label("3: SGLD").click();
    h.run_steps(3);
    h.get_by_label("remove this column").click();
    h.run_steps(3);
    assert_eq!(columns(&h).len(), 2);
    assert_eq!(app(&h).get::<CompareView>().unwrap().sessions().count(), 2);
}

/// Issue #44 item 6c: a column header that states η follows the value typed for it, and the
/// saved comparison, CSV and legend with it (they all read the label).
#[test]
fn a_column_label_follows_its_typed_step_size() {
    use atmc_lab::app::compare::CompareView;
    use atmc_lab::preset::AnyPreset;
    let AnyPreset::Comparison(mut c) = AnyPreset::load("free-energy-2-large-eta").unwrap() else {
        panic!("a comparison")
    };
    c.base.chains = 1000;
    let mut h = harness(c, [1280, 800], 1.0, BackendChoice::Cpu);
    h.run_steps(3);
    h.get_by_label("3: η = 1.8").click();
    h.run_steps(3);
    let label = |h: &AppHarness| {
        app(h).get::<CompareView>().unwrap().comparison.columns[2]
            .label
            .clone()
    };
    type_into(&mut h, "learning rate h", "2.1", Key::Enter);
    assert_eq!(label(&h), "η = 2.1");
    h.get_by_label("3: η = 2.1");
    assert!(h.query_by_label("3: η = 1.8").is_none());
    assert!(
        h.query_by_label("η = 1.8").is_none(),
        "no header keeps the old step"
    );
    // The other columns keep theirs.
    assert_eq!(
        app(&h).get::<CompareView>().unwrap().comparison.columns[1].label,
        "η = 1.0"
    );
}

/// Issue #44 item 6d: draws exported after a switch to a typed formula name that formula,
/// not the banana the window opened on, and the notice says how to open them.
#[test]
fn exported_draws_name_the_running_target() {
    use atmc_lab::app::files::{FileRequest, Picked};
    use atmc_lab::math::TargetSpec;
    use atmc_lab::preset::AnyPreset;
    fn store() -> std::path::PathBuf {
        std::env::temp_dir().join(format!("atmc-44d-{}.zarr", std::process::id()))
    }
    fn pick(_: &FileRequest) -> Picked {
        Picked::Path(store())
    }
    let mut h = harness(small(), [1280, 720], 1.0, BackendChoice::Cpu);
    h.run_steps(2);
    let ring = Preset::load("expr-ring8").unwrap().target;
    h.state_mut()
        .as_mut()
        .unwrap()
        .get_mut::<PosteriorView>()
        .unwrap()
        .preset
        .target = ring;
    // The test harness opens paused; Space plays, as a person would.
    h.key_press(Key::Space);
    crate::common::harness::wait(&mut h, 120, "draws of the formula", |a| {
        let v = a.get::<PosteriorView>().unwrap();
        v.session()
            .snapshot()
            .convergence
            .as_ref()
            .is_some_and(|c| c.draws.draws() >= 4)
            && matches!(v.preset.target, TargetSpec::Expression { .. })
    });
    h.state_mut().as_mut().unwrap().set_file_dialog(pick);
    h.get_by_label("File").click();
    h.run_steps(2);
    h.get_by_label("Export draws (Zarr, for ArviZ)…").click();
    h.run_steps(2);
    let attrs = std::fs::read_to_string(store().join(".zattrs")).expect("the store was written");
    let notice = app(&h).export_notice().map(|s| s.text.clone());
    let _ = std::fs::remove_dir_all(store());
    let attrs: serde_json::Value = serde_json::from_str(&attrs).unwrap();
    let preset = AnyPreset::parse(attrs["preset"].as_str().unwrap(), "store").unwrap();
    assert!(!preset.name().contains("banana"), "{}", preset.name());
    assert!(
        preset.name().starts_with("ATMC on U = "),
        "{}",
        preset.name()
    );
    let notice = notice.expect("an export notice");
    assert!(notice.contains("xarray.open_datatree("), "{notice}");
}
