//! The thermodynamics lab in the plane (MATH.md §5.3, §5.6): the paper's free energy
//! F(η; T*) at a fixed temperature, SGD with heavy-ball momentum against its known answer
//! (and the GPU engine against the CPU one for it), and the review's objections as
//! experiments (ΔU/ΔS per block of a run started wide, T_slope over k, N and windows).

use crate::common;
use crate::common::atmc_lab_in as atmc_lab;
use atmc_lab::diagnostics::thermodynamics::{
    block_temperatures, known_answer, quadratic_temperature_with_momentum,
};
use atmc_lab::engine::Engine;
use atmc_lab::engine::cpu::CpuEngine;
use atmc_lab::math::{NoiseSpec, SamplerKind, ScheduleSpec};

use crate::thermo::json;

/// MATH.md §5.1: on the quadratic, F(η; T*) = U(η) − T*·S(η) with T* = T_gibbs(η*) (fitted
/// without any slope) is smallest within one grid step of η*, for η* low, in the middle and
/// high on the grid; the table's CSV and JSON carry both curves (T* from the slope too).
#[test]
fn the_free_energy_at_the_gibbs_temperature_of_eta_star_is_smallest_there() {
    let dir = common::scratch("thermo_plane", "free_energy");
    let sweep = [
        &crate::thermo::QUADRATIC_DECADE[..],
        &["--points", "12", "--chains", "10000", "--out", "q"],
    ]
    .concat();
    let first = json(&atmc_lab(&sweep, &dir));
    assert_eq!(first["included"], 12, "{first}");
    for eta_star in ["0.3", "0.6", "1.2"] {
        let summary = json(&atmc_lab(
            &[
                "thermo",
                "--merge",
                "q",
                "--eta-star",
                eta_star,
                "--csv",
                "q.csv",
            ],
            &dir,
        ));
        let test = &summary["free_energy_test"];
        let asked: f64 = eta_star.parse().unwrap();
        let star = test["eta_star"].as_f64().unwrap();
        assert!(
            (star / asked).ln().abs() < 0.11,
            "nearest η to {asked}: {star}"
        );
        let off = test["gibbs_steps_off"].as_u64().expect("a Gibbs minimum");
        assert!(off <= 1, "η* {star}: {test}");
        assert_eq!(test["claim_holds"], true, "{test}");
        assert!(test["t_slope_star"].as_f64().is_some(), "{test}");
        let mut csv = csv::Reader::from_path(dir.join("q.csv")).unwrap();
        let header = csv.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let (gibbs, slope) = (col("F_gibbs_star"), col("F_slope_star"));
        let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
        assert!(
            rows.iter()
                .all(|r| !r[gibbs].is_empty() && !r[slope].is_empty())
        );
    }
}

/// MATH.md §5.3: SGD with heavy-ball momentum μ on L = |θ|²/2 with noise σ = 1 at η = 0.5 is
/// stationary at λ·Var θ = ησ²(1 + μ)/((1 − μ)(2(1 + μ) − ηλ)): 0.6 at μ = 0.5 and 2.879 at
/// μ = 0.9 (1/3 without momentum), within 3 % over 20,000 chains of the CPU engine.
#[test]
fn sgd_with_momentum_has_the_known_variance_on_a_quadratic() {
    for (mu, expected) in [(0.5, 0.6), (0.9, 0.95 / 0.33)] {
        let t = quadratic_temperature_with_momentum(0.5, 1.0, 1.0, mu).unwrap();
        assert!((t / expected - 1.0).abs() < 1e-12, "μ {mu}: formula {t}");
        let mut p = common::preset(SamplerKind::Sgd, "gaussian", 1.0);
        p.sampler.h = 0.5;
        p.sampler.sgd_momentum = mu;
        p.chains = 20_000;
        let model = common::model(&p);
        let known = known_answer(
            SamplerKind::Sgd,
            &ScheduleSpec::Constant,
            &model.target,
            &NoiseSpec::Isotropic { sigma: 1.0 },
            0.5,
            mu,
        )
        .expect("a known answer");
        assert!((known.t / expected - 1.0).abs() < 1e-12);
        let mut engine = CpuEngine::new(model, p.chains, &p.init, p.seed);
        // |eigenvalue|² = μ per step: 300 steps forget the start; four snapshots 60 steps
        // apart are nearly independent.
        engine.advance(300, &[]).unwrap();
        let mut sum = 0.0;
        for _ in 0..4 {
            engine.advance(60, &[]).unwrap();
            let states = engine.read_chains(0, p.chains).unwrap();
            assert!(states.diverged_at.iter().all(|&d| d == 0));
            let n = 2.0 * states.chains.len() as f64;
            sum += states
                .chains
                .iter()
                .flat_map(|c| c.theta)
                .map(|x| f64::from(x) * f64::from(x))
                .sum::<f64>()
                / n;
        }
        let var = sum / 4.0;
        eprintln!("μ {mu}: λ·Var θ {var:.4} vs known {expected:.4}");
        assert!(
            (var / expected - 1.0).abs() < 0.03,
            "μ {mu}: {var} vs {expected}"
        );
    }
}

/// SGD with momentum on the GPU follows the CPU oracle's trajectories (θ and the velocity in
/// p) for 50 steps, and plain SGD still leaves p alone on both.
#[test]
fn gpu_matches_cpu_for_sgd_with_momentum() {
    for mu in [0.0, 0.9] {
        let mut p = common::preset(SamplerKind::Sgd, "banana", 1.0);
        p.chains = 2000;
        p.sampler.h = 0.01;
        p.sampler.sgd_momentum = mu;
        let mut cpu = common::cpu_engine(&p);
        let mut gpu = common::gpu_engine(&p);
        cpu.advance(50, &[]).unwrap();
        gpu.advance(50, &[]).unwrap();
        let a = cpu.read_chains(0, p.chains).unwrap();
        let b = gpu.read_chains(0, p.chains).unwrap();
        assert_eq!(a.diverged_at, b.diverged_at);
        let mut worst = 0.0f32;
        for (x, y) in a.chains.iter().zip(&b.chains) {
            for c in 0..2 {
                worst = worst.max((x.theta[c] - y.theta[c]).abs() / (1.0 + x.theta[c].abs()));
                worst = worst.max((x.p[c] - y.p[c]).abs() / (1.0 + x.p[c].abs()));
                if mu == 0.0 {
                    assert_eq!((x.p[c], y.p[c]), (0.0, 0.0), "plain SGD keeps p = 0");
                }
            }
        }
        eprintln!("μ {mu}: worst relative deviation {worst:e}");
        assert!(worst <= 1e-3, "μ {mu}: {worst}");
        if mu > 0.0 {
            assert!(
                a.chains.iter().any(|c| c.p[0] != 0.0),
                "the velocity lives in p"
            );
        }
    }
}

/// The review's first objection as an experiment: the quadratic started wide (V₀ = 100) at a
/// small η. ΔU/ΔS per block falls with the ensemble's width, from near λV₀ to the stationary
/// T: early blocks read a "temperature" a hundred times the real one.
#[test]
fn delta_u_over_delta_s_along_a_relaxing_run_measures_a_width() {
    use atmc_lab::engine::BackendChoice;
    use atmc_lab::preset::AnyPreset;
    use atmc_lab::runner::thermodynamics::measure;
    let AnyPreset::Toy(mut p) = AnyPreset::load("thermo-quadratic").unwrap() else {
        panic!("a 2-D preset")
    };
    p.sampler.h = 0.02;
    p.init.scale = 10.0;
    p.chains = 4000;
    p.steps = 800;
    let point = measure(&AnyPreset::Toy(p), BackendChoice::Cpu, &mut |_| {}).unwrap();
    let t = point.t_theory.unwrap();
    let blocks = block_temperatures(&point.u_trace, &point.s_trace);
    eprintln!("T {t:.4}; ΔU/ΔS per block {blocks:?}");
    assert_eq!(point.s_trace.len(), 16, "S at every block end");
    assert!(
        blocks[0].1 > 100.0 * t,
        "the first block reads the width: {blocks:?}"
    );
    let later: Vec<f64> = blocks.iter().map(|b| b.1).take(4).collect();
    assert!(
        later.windows(2).all(|w| w[1] < w[0]),
        "it falls while the ensemble relaxes: {later:?}"
    );
    // Every point stores its entropy for other k and N, for the table's stability check.
    assert_eq!(point.s_knn_variants.len(), 12, "{:?}", point.s_knn_variants);
}

/// The view on the quadratic: the F(η; T*) panel with its test, ΔU/ΔS per block and the
/// slope windows are drawn inside the window; moving η* and the slope window recomputes the
/// table without a rerun.
#[cfg(feature = "gui")]
#[test]
fn the_view_draws_the_free_energy_test_and_the_objections() {
    use atmc_lab::app::screenshot::{harness_in, run_to_step};
    use atmc_lab::app::thermodynamics::ThermoView;
    use atmc_lab::app::view::View;
    use atmc_lab::app::{Folders, Opening, Tab};
    use atmc_lab::engine::BackendChoice;
    use atmc_lab::preset::AnyPreset;
    let dir = common::scratch("thermo_plane", "view");
    let AnyPreset::Toy(mut p) = AnyPreset::load("thermo-quadratic").unwrap() else {
        panic!("a 2-D preset")
    };
    p.chains = 2000;
    p.steps = 200;
    let mut h = harness_in(
        Opening::InTab(Tab::Thermo, Box::new(AnyPreset::Toy(p))),
        [1280, 800],
        1.0,
        BackendChoice::Cpu,
        Folders::under(&dir),
    );
    h.state_mut()
        .as_mut()
        .unwrap()
        .get_mut::<ThermoView>()
        .unwrap()
        .points = 6;
    run_to_step(&mut h, 1).unwrap();
    let view = h
        .state_mut()
        .as_mut()
        .unwrap()
        .get_mut::<ThermoView>()
        .unwrap();
    let labels: Vec<String> = view.panels().into_iter().map(|(l, _)| l).collect();
    for wanted in [
        "F(η; T*) panel",
        "ΔU/ΔS per block panel",
        "slope windows panel",
    ] {
        assert!(labels.iter().any(|l| l == wanted), "{wanted} in {labels:?}");
    }
    for (label, rect) in view.panels() {
        assert!(
            rect.min.x >= 0.0 && rect.min.y >= 0.0 && rect.max.x <= 1280.0 && rect.max.y <= 800.0,
            "{label} at {rect:?}"
        );
    }
    let table = view.table.as_mut().unwrap();
    assert_eq!(table.free_energy_test.as_ref().unwrap().star, 3);
    table.set_eta_star(Some(2));
    let test = table.free_energy_test.as_ref().unwrap();
    assert_eq!(test.star, 2);
    assert!(test.gibbs_steps_off.is_some(), "{test:?}");
    let before: Vec<Option<f64>> = table.rows.iter().map(|r| r.t_slope).collect();
    let mut options = table.options;
    options.window = 3;
    table.apply(options);
    let after: Vec<Option<f64>> = table.rows.iter().map(|r| r.t_slope).collect();
    assert_ne!(before, after, "another window, other slopes");
    assert_eq!(table.free_energy_test.as_ref().unwrap().star, 2, "η* kept");
}
