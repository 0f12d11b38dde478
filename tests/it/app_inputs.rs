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
    let before = app(&h).get::<PosteriorView>().unwrap().preset.sampler.friction_sign;
    type_into(&mut h, "friction sign φ", "5", Key::Enter);
    let after = app(&h).get::<PosteriorView>().unwrap().preset.sampler.friction_sign;
    assert_eq!(after, before);
    h.get_by_label_contains("refused: 5 is outside -1 to 1");
}
