//! The MLP view driven as a user would, offscreen (egui_kittest on wgpu; lavapipe in CI).
#![cfg(feature = "gui")]

use crate::common::harness::{AppHarness, app, snapshot_options, wait};
use atmc_lab::app::Tab;
use atmc_lab::app::mlp::{MlpView, ThirdMap};
use atmc_lab::app::screenshot::{harness, run_to_step};
use atmc_lab::engine::BackendChoice;
use atmc_lab::math::DataSource;
use atmc_lab::preset::{AnyPreset, MlpPreset, Preset};
use egui::accesskit::Role;
use egui_kittest::kittest::Queryable;

fn two_moons(chains: u32) -> MlpPreset {
    match AnyPreset::load("two-moons").expect("shipped preset") {
        AnyPreset::Mlp(mut p) => {
            p.chains = chains;
            p.view.predictive_chains = chains;
            p
        }
        other => panic!("two-moons is not an MLP preset: {other:?}"),
    }
}

/// Steps the UI until `done` holds for the MLP view's latest snapshot.
fn run_until(
    h: &mut AppHarness,
    seconds: u64,
    what: &str,
    done: impl Fn(&atmc_lab::app::mlp::session::MlpSnapshot) -> bool,
) {
    wait(h, seconds, what, |a| {
        a.get::<MlpView>()
            .is_some_and(|m| m.session().with_snapshot(&done))
    });
}

#[test]
fn the_tab_opens_the_mlp_view_with_its_maps() {
    let mut h = harness(
        Preset::default_preset(),
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
    );
    assert_eq!(app(&h).tab, Tab::Posterior);
    h.get_by_label("Bayesian MLPs").click();
    h.run_steps(2);
    assert_eq!(app(&h).tab, Tab::Mlp);
    run_until(&mut h, 120, "the first maps", |s| s.map.is_some());
    h.run_steps(2);
    // At step 0 the map is the starting networks' predictive (the prior predictive with
    // `from_prior`); later the posterior predictive.
    assert!(
        h.query_all_by_label_contains("predictive (").count()
            + h.query_all_by_label_contains("networks: step 0").count()
            >= 1
    );
    // Back to the 2-D view: the MLP networks pause.
    h.get_by_label("2-D posteriors").click();
    h.run_steps(2);
    assert_eq!(app(&h).tab, Tab::Posterior);
    assert!(
        !app(&h)
            .get::<MlpView>()
            .unwrap()
            .session()
            .snapshot()
            .playing
    );
}

#[test]
fn printed_friction_sign_explodes_the_networks() {
    let mut h = harness(two_moons(128), [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 20).unwrap();
    let s = app(&h).get::<MlpView>().unwrap().session().snapshot();
    assert_eq!(s.report.diverged, 0);
    assert!(s.evaluation.is_some() && s.map.is_some());
    h.get_by_label("▶ Play").click();
    h.get_by_role_and_label(Role::Slider, "friction sign φ")
        .set_value_accesskit(-1.0);
    h.step();
    assert_eq!(
        app(&h)
            .get::<MlpView>()
            .unwrap()
            .preset
            .sampler
            .friction_sign,
        -1.0
    );
    run_until(&mut h, 120, "the explosion", |s| s.report.diverged >= 120);
    h.run_steps(2);
    h.get_by_label_contains("Momentum explosion");
    h.get_all_by_label("↺ Reset networks")
        .next()
        .unwrap()
        .click();
    run_until(&mut h, 60, "the reset", |s| s.report.diverged == 0);
}

#[test]
fn a_new_data_set_changes_live() {
    let mut h = harness(two_moons(64), [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 40).unwrap();
    h.get_by_role_and_label(Role::Slider, "noise")
        .set_value_accesskit(0.6);
    h.step();
    run_until(&mut h, 60, "the noisier data", |s| {
        s.data.as_ref().is_some_and(|d| d.name == "two moons") && s.map.is_some() && s.step >= 40
    });
    let p = &app(&h).get::<MlpView>().unwrap().preset;
    assert_eq!(p.network.data.noise, 0.6);
}

#[test]
fn snapshot_of_the_two_moons_preset() {
    let mut h = harness(two_moons(256), [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 200).unwrap();
    h.snapshot_options("two_moons_preset", &snapshot_options());
}

/// Paused, another focus network: the worker makes a new map at the same step, and the
/// third map (one network alone) shows the new network, not the old one kept under a key
/// that only named the step.
#[test]
fn a_new_focus_network_shows_its_own_map_while_paused() {
    let mut h = harness(two_moons(64), [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 40).unwrap();
    third_map_shows(&mut h, ThirdMap::Network);
    let before = third_map(&mut h);
    let serial = |s: &atmc_lab::app::mlp::session::MlpSnapshot| s.map.as_ref().map(|m| m.serial);
    let old = app(&h)
        .get::<MlpView>()
        .unwrap()
        .session()
        .with_snapshot(serial);
    h.state_mut()
        .as_mut()
        .unwrap()
        .get_mut::<MlpView>()
        .unwrap()
        .preset
        .view
        .focus_chain = 5;
    h.step();
    run_until(&mut h, 60, "the new network's map", |s| {
        serial(s).is_some_and(|n| Some(n) != old) && s.step == 40
    });
    h.run_steps(2);
    let after = third_map(&mut h);
    assert!(
        before
            .pixels()
            .zip(after.pixels())
            .filter(|(a, b)| a != b)
            .count()
            > 1000,
        "the map of network #5 looks like the map of network #0"
    );
}

/// The third map's pixels.
fn third_map(h: &mut AppHarness) -> image::RgbaImage {
    let image = h.render().unwrap();
    let rect = app(h)
        .active()
        .panels()
        .into_iter()
        .find(|(label, _)| label == "one network's map")
        .expect("the third map")
        .1;
    image::imageops::crop_imm(
        &image,
        rect.left() as u32,
        rect.top() as u32,
        rect.width() as u32,
        rect.height() as u32,
    )
    .to_image()
}

/// Sets what the third map shows and lets the view redraw.
fn third_map_shows(h: &mut AppHarness, which: ThirdMap) {
    h.state_mut()
        .as_mut()
        .unwrap()
        .get_mut::<MlpView>()
        .unwrap()
        .third_map = which;
    h.run_steps(3);
}

/// The map beside the predictive is the SGD network's own by default (#28: the lesson
/// compares the ensemble with one SGD network, not with one posterior sample), labelled so;
/// the sampled network is one click away and draws another map.
#[test]
fn the_third_map_is_the_sgd_network_by_default_and_says_so() {
    let mut h = harness(two_moons(64), [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 40).unwrap();
    h.run_steps(2);
    h.get_by_label("SGD network: one point estimate");
    let cells = app(&h)
        .get::<MlpView>()
        .unwrap()
        .session()
        .with_snapshot(|s| {
            s.map
                .as_ref()
                .map(|m| (m.baseline.len(), m.prediction.mean.len()))
        })
        .unwrap();
    assert_eq!(cells.0, cells.1, "the SGD network's map covers every cell");
    let sgd = third_map(&mut h);
    third_map_shows(&mut h, ThirdMap::Network);
    h.get_by_label("network #0 alone: one posterior sample");
    let sample = third_map(&mut h);
    assert!(
        sgd.pixels()
            .zip(sample.pixels())
            .filter(|(a, b)| a != b)
            .count()
            > 1000,
        "the SGD network's map looks like network #0's"
    );
}

/// The shipped hand-drawn XOR, in Draw mode, with `chains` networks.
fn drawn_xor(chains: u32) -> MlpPreset {
    match AnyPreset::load("drawn-xor").expect("shipped preset") {
        AnyPreset::Mlp(mut p) => {
            p.chains = chains;
            p.view.predictive_chains = chains;
            assert!(p.view.draw, "drawn-xor opens in Draw mode");
            p
        }
        other => panic!("drawn-xor is not an MLP preset: {other:?}"),
    }
}

/// The view's drawn points and class count.
fn drawn(h: &AppHarness) -> (u32, Vec<(f32, f32, u32)>) {
    match &app(h).get::<MlpView>().unwrap().preset.network.data.source {
        DataSource::Drawn { classes, points } => (*classes, points.clone()),
        other => panic!("not drawn: {other:?}"),
    }
}

/// Clicks on the canvas add points under the pointer: primary the chosen class, secondary
/// the next; the data change live under the running networks. A point of a new class
/// rebuilds them with another output and the view says so; Shift + click removes.
#[test]
fn drawing_adds_points_live_and_a_new_class_restarts_the_networks() {
    let mut h = harness(drawn_xor(64), [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 40).unwrap();
    assert_eq!(drawn(&h).1.len(), 48);
    h.get_by_label("drawing canvas").click();
    h.run_steps(2);
    let (classes, points) = drawn(&h);
    assert_eq!((classes, points.len()), (2, 49));
    let (x, y, label) = points[48];
    // The canvas is [-3, 3]²: its centre is the origin.
    assert!(
        x.abs() <= 0.05 && y.abs() <= 0.05 && label == 0,
        "{:?}",
        points[48]
    );
    h.get_by_label("drawing canvas").click_secondary();
    h.run_steps(2);
    assert_eq!(drawn(&h).1[49].2, 1);
    // Same classes: the networks go on from step 40 on the new data.
    run_until(&mut h, 60, "the new points under the networks", |s| {
        s.data.as_ref().is_some_and(|d| d.len() == 50) && s.map.is_some()
    });
    let s = app(&h).get::<MlpView>().unwrap().session().snapshot();
    assert_eq!(s.step, 40);
    assert!(s.notice.is_none(), "{:?}", s.notice);

    // A third class: new networks with three outputs, and the view says why.
    h.get_by_label("● 2").click();
    h.run_steps(1);
    h.get_by_label("drawing canvas").click();
    h.run_steps(2);
    assert_eq!(drawn(&h).0, 3);
    run_until(&mut h, 60, "networks with three outputs", |s| {
        s.data.as_ref().is_some_and(|d| d.classes == 3) && s.map.is_some()
    });
    let s = app(&h).get::<MlpView>().unwrap().session().snapshot();
    assert_eq!(s.step, 0, "the networks started over");
    assert!(
        s.notice
            .as_ref()
            .is_some_and(|n| n.contains("now has 3 classes")),
        "{:?}",
        s.notice
    );
    h.run_steps(2);
    h.get_by_label_contains("now has 3 classes");

    // Shift + click removes the three points at the centre.
    h.get_by_label("drawing canvas")
        .click_modifiers(egui::Modifiers::SHIFT);
    h.run_steps(2);
    let (classes, points) = drawn(&h);
    assert_eq!((classes, points.len()), (3, 48));
}

/// Below eight points the networks do not run and the view says what it waits for; the
/// eighth point starts them.
#[test]
fn a_drawn_set_below_the_minimum_waits_for_its_points() {
    let mut p = drawn_xor(64);
    let DataSource::Drawn { points, .. } = &mut p.network.data.source else {
        unreachable!()
    };
    points.truncate(5);
    let mut h = harness(p, [1280, 720], 1.0, BackendChoice::Cpu);
    run_until(&mut h, 60, "the refusal", |s| s.error.is_some());
    h.run_steps(2);
    h.get_by_label_contains("Waiting for data: draw 3 more points");
    let s = app(&h).get::<MlpView>().unwrap().session().snapshot();
    assert!(s.map.is_none() && s.data.is_none() && s.evaluation.is_none());
    for _ in 0..3 {
        h.get_by_label("drawing canvas").click();
        h.run_steps(1);
    }
    assert_eq!(drawn(&h).1.len(), 8);
    run_until(&mut h, 60, "networks on eight points", |s| {
        s.error.is_none() && s.map.is_some()
    });
    let s = app(&h).get::<MlpView>().unwrap().session().snapshot();
    let e = s.evaluation.as_ref().unwrap();
    assert!(e.ensemble.train.nll.is_finite(), "{:?}", e.ensemble.train);
    assert!(h.query_by_label_contains("Waiting for data").is_none());
}

/// "Start from these points" takes a generated set over as drawn points; "Clear" empties it.
#[test]
fn a_generated_set_is_taken_over_and_cleared() {
    let mut p = two_moons(64);
    p.view.draw = true;
    p.network.data.points = 100;
    let mut h = harness(p, [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 20).unwrap();
    h.get_by_label("Start from these points").click();
    h.run_steps(2);
    let (classes, points) = drawn(&h);
    assert_eq!((classes, points.len()), (2, 100));
    h.get_by_label("Clear").click();
    h.run_steps(2);
    assert_eq!(drawn(&h), (2, vec![]));
    run_until(&mut h, 60, "the wait", |s| s.error.is_some());
    h.run_steps(2);
    h.get_by_label_contains("draw 8 more points, at least one of a second class");
}

/// The networks' temperature reads as tempering (#42 item 5): a log slider, a T = 0 button
/// for "no noise", and a line saying what the value means, all live.
#[test]
fn the_temperature_says_what_it_means_and_reaches_zero() {
    let mut h = harness(two_moons(64), [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 2).unwrap();
    h.run_steps(2);
    h.get_by_label_contains("T = 1: the Bayes posterior");
    h.get_by_label("T = 0").click();
    h.run_steps(3);
    h.get_by_label_contains("no noise");
    let t = |h: &AppHarness| app(h).get::<MlpView>().unwrap().preset.sampler.temperature;
    assert_eq!(t(&h), 0.0);
    h.get_by_label("T = 0").click();
    h.run_steps(3);
    assert_eq!(t(&h), 1.0);
}
