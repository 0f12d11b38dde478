//! Issue #41, a typed target's truth and the checks in the engines' precision (classes 2, 5
//! and 6): a sweep computes each distinct truth once, what f32 cannot hold is refused by name
//! before any run, a box is checked for the mass and for U around it, a challenge goal is
//! checked against its target, and `--draw-chains` needs `--draws`. The truth's own messages
//! and its work limit are tested beside it (`src/math/expr/tests.rs`).

use crate::common;
use atmc_lab::engine::BackendChoice;
use atmc_lab::math::expr::truth;
use atmc_lab::preset::sweep_file::Sweep;
use atmc_lab::preset::{AnyPreset, Preset};
use atmc_lab::sweep::{Shard, run_shard};
use std::collections::BTreeMap;

fn scratch(name: &str) -> std::path::PathBuf {
    common::scratch("reliability-truth", name)
}

/// A sweep over a parameter of a typed target (two values × two step sizes): each distinct
/// target's truth is computed once, when the sweep is loaded and its points checked, and reused
/// when the points run.
#[test]
fn a_sweep_computes_each_distinct_truth_once() {
    let dir = scratch("sweep-once");
    // A formula of this test alone: the cache is the process's.
    let energy = "(x^2 + y^2)/(2*s^2) + 0.000417*x";
    std::fs::write(
        dir.join("base.ron"),
        format!(
            "Preset(name: \"t\", description: \"\", sampler: (kind: Sgld, h: 0.01), \
             target: Expression(energy: \"{energy}\", parameters: {{\"s\": 1.0}}), \
             chains: 10, steps: 4, record_every: 2)"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("once.ron"),
        "Sweep(name: \"once\", base: \"base.ron\", axes: [
            (field: \"target.parameters.s\", values: List([0.5, 1.0])),
            (field: \"sampler.h\", values: List([0.01, 0.02]))])",
    )
    .unwrap();
    let computed =
        |s: f64| truth::times_computed(energy, &BTreeMap::from([("s".to_owned(), s)]), None);
    let sweep = Sweep::load(&dir.join("once.ron")).unwrap();
    assert_eq!(sweep.points, 4);
    assert_eq!((computed(0.5), computed(1.0)), (1, 1));
    let report = run_shard(
        &sweep,
        Shard::ALL,
        &dir.join("out"),
        BackendChoice::Cpu,
        &mut |_, _| {},
    )
    .unwrap();
    assert_eq!(report.ran, 4);
    assert_eq!((computed(0.5), computed(1.0)), (1, 1));
}

/// A parameter of 1e39 was checked in f64 and infinite on the engines (every chain diverged
/// at step 1, exit 0, nothing named it): refused before the run, by name, with exit 2.
#[test]
fn a_parameter_beyond_f32_is_refused_by_name() {
    let out = common::atmc_lab(&[
        "run",
        "default",
        "--energy=a*(x^2 + y^2)",
        "--param",
        "a=1e39",
        "--chains",
        "10",
        "--steps",
        "1",
        "--backend",
        "cpu",
    ]);
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("parameter a = 1e39 is beyond the range of f32"),
        "{err}"
    );
}

/// A preset's box is checked before the run: one without the target's mass (N(0, I) on
/// [10, 11]²) and one around an energy undefined where chains go (x − log x cut at 0.01)
/// are refused with exit 2, saying why and where.
#[test]
fn a_box_is_checked_for_mass_and_for_u_around_it() {
    let dir = scratch("boxes");
    for (name, energy, bounds, why) in [
        (
            "massless.ron",
            "(x^2 + y^2)/2",
            "((10.0, 11.0), (10.0, 11.0))",
            "misses the mass of exp(−U)",
        ),
        (
            "log.ron",
            "x - log(x) + y^2/2",
            "((0.01, 20.0), (-5.0, 5.0))",
            "within the chains' reach",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "Preset(name: \"t\", description: \"\", sampler: (kind: Sgld, h: 0.01), \
                 target: Expression(energy: \"{energy}\", box: Some({bounds})), chains: 10, \
                 steps: 1)"
            ),
        )
        .unwrap();
        let out = common::atmc_lab_in(&["run", name, "--backend", "cpu"], &dir);
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(why) && err.contains(name), "{name}: {err}");
    }
}

/// A challenge to visit modes on a target without listed modes could never pass: refused
/// where it is written, in a preset and in a comparison (lectures load both).
#[test]
fn a_modes_challenge_on_a_one_mode_target_is_refused() {
    let story = "story: (text: \"One Gaussian.\", challenge: (task: \"Visit 3 modes.\", \
                 goal: ModesPerChain(modes: 3), steps: 100, hint: \"Try a hotter chain.\"))";
    let preset = format!(
        "Preset(name: \"t\", description: \"\", {story}, sampler: (kind: Sgld, h: 0.01), \
         target: Gaussian(), chains: 10, steps: 10)"
    );
    let e = Preset::parse(&preset, "one-mode.ron")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("one-mode.ron:1:") && e.contains("lists none") && e.contains("gaussian"),
        "{e}"
    );
    let comparison = format!(
        "Comparison(name: \"c\", description: \"\", {story}, base: (sampler: (kind: Sgld), \
         target: Banana(a: 3.0, b: 0.2, s: 0.3), chains: 10, steps: 10), columns: [\
         (label: \"SGLD\", sampler: (kind: Sgld, h: 0.01)), \
         (label: \"SGHMC\", sampler: (kind: Sghmc, h: 0.01))])"
    );
    let e = AnyPreset::parse(&comparison, "compare.ron")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("compare.ron:1:") && e.contains("lists none"),
        "{e}"
    );
    // On the mixture it counts: at most its 25 modes.
    let gmm = preset.replace("target: Gaussian()", "target: Gmm25()");
    assert!(Preset::parse(&gmm, "gmm.ron").is_ok());
    let e = Preset::parse(&gmm.replace("modes: 3", "modes: 30"), "gmm.ron")
        .unwrap_err()
        .to_string();
    assert!(e.contains("allowed 1 to 25"), "{e}");
}

/// `--draw-chains` and `--draw-every` shape `--draws`: given without it they were ignored
/// silently; now the command is refused (exit 2) naming `--draws`.
#[test]
fn draw_options_without_draws_are_refused() {
    for option in [["--draw-chains", "5"], ["--draw-every", "2"]] {
        let out = common::atmc_lab(&[
            "run",
            "default",
            option[0],
            option[1],
            "--chains",
            "10",
            "--steps",
            "1",
            "--backend",
            "cpu",
        ]);
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("--draws"), "{err}");
    }
}
