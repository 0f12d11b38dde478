//! The thermodynamics view driven offscreen: a small sphere sweep runs in the background and
//! the view draws its curves, the Gibbs test and the globe; an MLP sweep draws its curves and
//! the traces of U, S and the SNR. The view writes its sweeps into a scratch folder.
#![cfg(feature = "gui")]

use crate::common;
use atmc_lab::app::screenshot::{AppHarness, harness_in, run_to_step};
use atmc_lab::app::thermodynamics::ThermoView;
use atmc_lab::app::view::View;
use atmc_lab::app::{Folders, Opening, Tab};
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::AnyPreset;
use std::path::Path;

/// A harness showing the Thermodynamics tab on `preset`, its sweep of four learning rates run
/// to the end in folders under `dir`.
fn swept(preset: AnyPreset, size: [u32; 2], dir: &Path) -> AppHarness {
    let mut h = harness_in(
        Opening::InTab(Tab::Thermo, Box::new(preset)),
        size,
        1.0,
        BackendChoice::Cpu,
        Folders::under(dir),
    );
    h.state_mut()
        .as_mut()
        .unwrap()
        .get_mut::<ThermoView>()
        .unwrap()
        .points = 4;
    run_to_step(&mut h, 1).unwrap();
    h
}

#[test]
fn the_thermodynamics_view_runs_a_sweep_and_draws_every_panel() {
    let dir = common::scratch("app-thermo", "sweeps");
    let AnyPreset::Sphere(mut sphere) = AnyPreset::load("sphere-up").unwrap() else {
        panic!("sphere-up is a sphere preset");
    };
    sphere.chains = 1000;
    sphere.steps = 300;
    let mut h = swept(AnyPreset::Sphere(sphere), [1280, 800], &dir);
    let app = h.state().as_ref().unwrap();
    assert_eq!(app.tab, Tab::Thermo);
    let view = app.get::<ThermoView>().unwrap();
    let table = view.table.as_ref().unwrap();
    assert_eq!(table.rows.len(), 4);
    let labels: Vec<String> = view.panels().into_iter().map(|(l, _)| l).collect();
    for wanted in ["U(η) panel", "T(η) panel", "globe"] {
        assert!(labels.iter().any(|l| l == wanted), "{wanted} in {labels:?}");
    }
    assert!(
        labels.iter().any(|l| l.starts_with("Gibbs test")),
        "{labels:?}"
    );
    // Every panel lies within the window's width and starts on screen (the view scrolls
    // for the rest rather than squeeze its plots).
    for (label, rect) in view.panels() {
        assert!(
            rect.min.x >= 0.0 && rect.min.y >= 0.0 && rect.max.x <= 1280.0 && rect.min.y < 800.0,
            "{label} at {rect:?}"
        );
    }
    assert!(dir.join("atmc-lab-sweeps").is_dir());

    // Another problem drops these results: no sphere-UP table under the new problem's name.
    {
        use egui_kittest::kittest::Queryable;
        h.get_by_role_and_label(egui::accesskit::Role::ComboBox, "problem")
            .click();
        h.run_steps(3);
        h.get_by_label("Sphere, overparameterised").click();
        h.run_steps(3);
        let view = h.state().as_ref().unwrap().get::<ThermoView>().unwrap();
        assert!(
            view.table.is_none(),
            "the old problem's table is still shown"
        );
        h.get_by_label_contains("Choose a problem");
    }

    // Networks: the same curves, then U, S and the SNR over the steps (no Gibbs test).
    let AnyPreset::Mlp(mut mlp) = AnyPreset::load("mlp-up").unwrap() else {
        panic!("mlp-up is an MLP preset");
    };
    mlp.chains = 64;
    mlp.steps = 200;
    let h = swept(AnyPreset::Mlp(mlp), [1024, 600], &dir);
    let view = h.state().as_ref().unwrap().get::<ThermoView>().unwrap();
    let rows = &view.table.as_ref().unwrap().rows;
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(|r| r.point.problem.contains("UP")));
    let labels: Vec<String> = view.panels().into_iter().map(|(l, _)| l).collect();
    for wanted in [
        "U(η) panel",
        "S(η) panel",
        "U over steps (loss per example)",
        "gradient SNR over steps",
    ] {
        assert!(labels.iter().any(|l| l == wanted), "{wanted} in {labels:?}");
    }
    for (label, rect) in view.panels() {
        assert!(
            rect.min.x >= 0.0 && rect.min.y >= 0.0 && rect.max.x <= 1024.0 && rect.min.y < 600.0,
            "{label} at {rect:?}"
        );
    }
}

/// Issue #44 item 7: free-energy 3 cites η = 0.02; its sweep passes through 0.02 (the plain
/// grid 0.01 … 1 does not) and the Gibbs test opens on that row.
#[test]
fn a_lessons_learning_rate_is_a_row_of_its_sweep_and_the_gibbs_test_opens_there() {
    let dir = common::scratch("app-thermo", "lesson-eta");
    let AnyPreset::Sphere(mut lesson) = AnyPreset::load("free-energy-3-gibbs").unwrap() else {
        panic!("free-energy-3-gibbs is a sphere preset");
    };
    assert_eq!(lesson.sampler.h, 0.02);
    lesson.chains = 500;
    lesson.steps = 200;
    let h = swept(AnyPreset::Sphere(lesson), [1280, 800], &dir);
    let view = h.state().as_ref().unwrap().get::<ThermoView>().unwrap();
    let rows = &view.table.as_ref().unwrap().rows;
    assert_eq!(rows.len(), 4);
    let eta = rows[view.selected].point.eta;
    assert!(
        (eta / 0.02 - 1.0).abs() < 1e-9,
        "the Gibbs test opens at η = {eta}"
    );
}
