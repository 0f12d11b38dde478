//! Every lesson of the shipped lecture loads, runs headless and reaches the state its story
//! promises.
#![cfg(feature = "gui")]

use atmc_lab::app::posterior::session::GROWTH_WINDOW;
use atmc_lab::diagnostics::growth::growth_rate;
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::{AnyPreset, Comparison, Preset};
use atmc_lab::runner::{self, RunOutcome};

pub(crate) fn toy(name: &str) -> Preset {
    match AnyPreset::load(name).unwrap_or_else(|e| panic!("{e}")) {
        AnyPreset::Toy(p) => p,
        other => panic!("{name} is not a 2-D preset: {other:?}"),
    }
}

pub(crate) fn comparison(name: &str) -> Comparison {
    match AnyPreset::load(name).unwrap_or_else(|e| panic!("{e}")) {
        AnyPreset::Comparison(c) => c,
        other => panic!("{name} is not a comparison: {other:?}"),
    }
}

pub(crate) fn run(p: &Preset) -> RunOutcome {
    runner::run(p, BackendChoice::Cpu, &mut |_| {}).expect("run completes")
}

pub(crate) fn run_columns(c: &Comparison) -> Vec<RunOutcome> {
    runner::run_comparison(c, BackendChoice::Cpu, &mut |_, _| {})
        .expect("runs complete")
        .into_iter()
        .map(|(_, o)| o)
        .collect()
}

/// Most tracked chains are still alive after 60 steps: the explosion unfolds slowly enough
/// to watch (at 20 steps per second).
fn rate_chains_ok(paths: &[Vec<atmc_lab::math::Chain2>]) -> bool {
    paths.iter().filter(|p| p.len() > 60).count() >= paths.len() * 9 / 10
}

/// Lesson 5: with only the printed sign, log|p| climbs at the rate e^{βh} per step that the
/// O-step predicts from each chain's own β = max(D, ξ), within 10%, in the last steps before
/// the chains diverge.
#[test]
fn explosion_grows_at_the_predicted_rate() {
    let p = toy("lesson-explosion");
    let paths = runner::trajectories(&crate::common::validated(&p), 64);
    let diverged = paths
        .iter()
        .filter(|path| path.len() <= p.steps as usize)
        .count();
    assert!(
        diverged >= 60,
        "only {diverged} of 64 tracked chains diverged"
    );
    assert!(rate_chains_ok(&paths));
    let rate = growth_rate(&paths, &p.sampler.params(), GROWTH_WINDOW).expect("growth measured");
    eprintln!("{rate:?}");
    assert!(
        (rate.measured / rate.predicted - 1.0).abs() < 0.1,
        "measured {} vs predicted {}",
        rate.measured,
        rate.predicted
    );
}

pub(crate) fn mlp(name: &str) -> atmc_lab::preset::MlpPreset {
    match AnyPreset::load(name).unwrap_or_else(|e| panic!("{e}")) {
        AnyPreset::Mlp(p) => p,
        other => panic!("{name} is not an MLP preset: {other:?}"),
    }
}

/// The lecture lists ten lessons, each a shipped preset with a story.
#[test]
fn the_lecture_has_ten_lessons_with_stories() {
    use atmc_lab::preset::Lecture;
    use atmc_lab::preset::story::SHIPPED_LECTURES;
    let (name, text) = SHIPPED_LECTURES[0];
    assert_eq!(Lecture::parse(text, name).unwrap().steps.len(), 10);
    crate::lessons_course::lessons_have_stories(name, 10);
}

/// Lesson 1: SGLD's chains fill the correlated Gaussian: the distance to exact samples falls
/// to within the spread exact samples themselves show, and the covariance is right.
#[test]
fn langevin_fills_the_posterior() {
    let s = run(&toy("lesson-langevin")).summary;
    assert!(
        s.energy_distance < s.energy_distance_baseline + 3.0 * s.energy_distance_baseline_sd,
        "{} vs {} ± {}",
        s.energy_distance,
        s.energy_distance_baseline,
        s.energy_distance_baseline_sd
    );
    assert!((s.cov[0][1] - 0.8).abs() < 0.05, "{:?}", s.cov);
}

/// Lesson 2: with the same step size and gradients, SGHMC reaches the truth on the long
/// banana while SGLD is still far from it.
#[test]
fn momentum_gets_further() {
    let runs = run_columns(&comparison("lesson-momentum"));
    let (sgld, sghmc) = (&runs[0].summary, &runs[1].summary);
    assert!(
        sghmc.energy_distance
            < sghmc.energy_distance_baseline + 4.0 * sghmc.energy_distance_baseline_sd,
        "SGHMC {} vs exact {}",
        sghmc.energy_distance,
        sghmc.energy_distance_baseline
    );
    assert!(
        sgld.energy_distance > 10.0 * sghmc.energy_distance,
        "SGLD {} vs SGHMC {}",
        sgld.energy_distance,
        sghmc.energy_distance
    );
}

/// Lesson 3: under gradient noise σ = 3, SGHMC runs hot; ATMC holds T = 1 and its ξ learns
/// hσ²/2.
#[test]
fn the_thermostat_learns_the_noise() {
    let runs = run_columns(&comparison("lesson-thermostat"));
    let (sghmc, atmc) = (&runs[0].summary, &runs[1].summary);
    assert!(sghmc.kinetic_temperature.unwrap() > 1.15, "{sghmc:?}");
    assert!(sghmc.cov[0][0] > 1.15, "{:?}", sghmc.cov);
    assert!((atmc.kinetic_temperature.unwrap() - 1.0).abs() < 0.03);
    assert!((atmc.cov[0][0] - 1.0).abs() < 0.03, "{:?}", atmc.cov);
    let xi = atmc.mean_xi.unwrap();
    eprintln!("ATMC's mean ξ {xi}");
    // The story cites the column's mean ξ as hσ²/2 = 0.225 (0.2256 measured).
    assert!((xi / 0.225 - 1.0).abs() < 0.03, "mean ξ {xi}");
}

/// Lesson 4: as printed and with the sign alone every chain explodes; overwrite alone runs
/// hot; without the mass factor (m = 4) the samples are right and only ξ ≈ D(1 − m) + hσ²/2m
/// shows the defect.
#[test]
fn each_printed_defect_shows_its_face() {
    let runs = run_columns(&comparison("lesson-defects"));
    let s: Vec<_> = runs.iter().map(|r| &r.summary).collect();
    assert!(s[0].diverged_fraction > 0.99 && s[1].diverged_fraction > 0.99);
    assert!(s[2].diverged_fraction == 0.0 && s[2].kinetic_temperature.unwrap() > 1.15);
    assert!(s[2].cov[0][0] > 1.15, "{:?}", s[2].cov);
    assert!(s[3].diverged_fraction == 0.0);
    assert!((s[3].cov[0][0] - 1.0).abs() < 0.04, "{:?}", s[3].cov);
    let xi = s[3].mean_xi.unwrap();
    eprintln!("without m: mean ξ {xi}");
    // The story cites −2.8 (−2.81 measured; the first-order estimate above says −2.94).
    assert!((-2.9..-2.7).contains(&xi), "mean ξ {xi}");
}

/// Lesson 6: noise that grows with |θ| makes ATMC's samples too wide (Var θ ≈ 1.24) although
/// its kinetic temperature is exactly T.
#[test]
fn state_dependent_noise_breaks_the_assumption() {
    let s = run(&toy("lesson-state-noise")).summary;
    // The lesson cites "Var θ₁ and Var θ₂ about 1.24".
    for v in [s.cov[0][0], s.cov[1][1]] {
        assert!((1.18..1.32).contains(&v), "{:?}", s.cov);
    }
    assert!((s.kinetic_temperature.unwrap() - 1.0).abs() < 0.03);
    // The histogram is far from the exact density (exact samples score ≈ 0.01 here).
    assert!(s.tv_histogram > 0.08, "TV {}", s.tv_histogram);
}

/// Lesson 6's marginals are peakier than the exact Gaussian, not flatter: taller at the
/// centre with longer tails (kurtosis above the Gaussian's 3, mass beyond ±2.5 several times
/// the exact 1.24 %), as the lesson says (it once said "flatter and wider").
#[test]
fn state_dependent_noise_makes_the_marginals_peaky_with_long_tails() {
    use atmc_lab::engine::Engine;
    use atmc_lab::engine::cpu::CpuEngine;
    let p = toy("lesson-state-noise");
    let mut engine = CpuEngine::new(crate::common::model(&p), 4000, &p.init, p.seed);
    engine.advance(p.steps, &[]).unwrap();
    let states = engine.read_chains(0, 4000).unwrap();
    for c in 0..2 {
        let x: Vec<f64> = states
            .chains
            .iter()
            .map(|s| f64::from(s.theta[c]))
            .collect();
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        let m2 = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let m4 = x.iter().map(|v| (v - mean).powi(4)).sum::<f64>() / n;
        let kurtosis = m4 / (m2 * m2);
        let tails = x.iter().filter(|v| v.abs() > 2.5).count() as f64 / n;
        assert!(kurtosis > 3.5, "θ{}: kurtosis {kurtosis}", c + 1);
        assert!(tails > 2.0 * 0.0124, "θ{}: {tails} beyond ±2.5", c + 1);
    }
}

/// Lesson 7: from a uniform start on [−10, 10]², the average chain samples about 15 of the 25
/// modes under the cyclical schedule (h₀ = 0.07, 30 cycles in 20,000 steps; sampling-stage
/// states only, one mode per cycle: 15.0 measured, 17.7 if each cycle landed uniformly at
/// random, docs/MATH.md §3.1) and ≤ 3 under
/// SGLD at h = 0.01; all tracked chains together cover all 25 modes in both columns, so only
/// the per-chain number separates them (the story says so).
#[test]
fn cyclical_sgmcmc_visits_the_modes() {
    let c = comparison("lesson-cyclical");
    assert_eq!(c.base.steps, 20_000);
    let runs = run_columns(&c);
    let cyclical = runs[0].summary.modes_visited.unwrap();
    let sgld = runs[1].summary.modes_visited.unwrap();
    assert!(
        (13.0..=17.7).contains(&cyclical),
        "cyclical SGLD visited {cyclical}"
    );
    assert!(sgld <= 3.0, "SGLD visited {sgld}");
    for run in &runs {
        assert_eq!(run.summary.modes_visited_ensemble, Some(25.0));
    }
    // On screen only the 64 highlighted chains are counted: SGLD's cover 15 or more modes.
    let mut highlighted = c.column_preset(1);
    highlighted.chains = c.base.view.highlighted_chains;
    let sgld_on_screen = run(&highlighted).summary.modes_visited_ensemble.unwrap();
    eprintln!("SGLD, the 64 highlighted chains together: {sgld_on_screen} modes");
    assert!(sgld_on_screen >= 15.0, "{sgld_on_screen}");
}

/// Lesson 8: on the funnel, Gaussian kinetic energy runs away (its kinetic temperature and
/// spread blow up) while hyperbolic K (c = 1) stays at T and never moves θ by more than c·h.
#[test]
fn hyperbolic_momentum_bounds_the_update() {
    let c = comparison("lesson-hyperbolic");
    let runs = run_columns(&c);
    let (gauss, hyper) = (&runs[0].summary, &runs[1].summary);
    assert!(
        gauss.diverged_fraction > 0.0 || gauss.kinetic_temperature.unwrap() > 10.0,
        "{gauss:?}"
    );
    assert_eq!(hyper.diverged_fraction, 0.0);
    assert!(
        (hyper.kinetic_temperature.unwrap() - 1.0).abs() < 0.1,
        "{hyper:?}"
    );
    // Every step of the tracked hyperbolic chains moves θ by at most c·h per coordinate.
    let preset = c.column_preset(1);
    let limit = 1.0 * preset.sampler.h as f32 * 1.0001;
    for path in runner::trajectories(&crate::common::validated(&preset), 32) {
        for w in path.windows(2) {
            for k in 0..2 {
                let step = (w[1].theta[k] - w[0].theta[k]).abs();
                assert!(step <= limit, "a step of {step} > c·h = {limit}");
            }
        }
    }
}

/// Lesson 9: far from the data the posterior predictive is uncertain while the SGD network
/// is as sure as anywhere.
#[test]
fn bayesian_mlp_knows_where_it_has_no_data() {
    use atmc_lab::diagnostics::mlp::{Uncertainty, uncertainty};
    use atmc_lab::engine::mlp::{MlpCpuEngine, MlpEngine};
    let mut p = mlp("lesson-mlp");
    p.chains = 256;
    let (model, _) = p.build().unwrap();
    let mut networks = MlpCpuEngine::new(model.clone(), p.chains, &p.init, p.seed);
    let mut sgd = MlpCpuEngine::new(p.baseline_model(&model), 1, &p.init, p.seed);
    networks.advance(p.steps).unwrap();
    sgd.advance(p.steps).unwrap();
    // Points well away from the two moons (x ∈ [−1, 2], y ∈ [−0.5, 1]).
    let far = [
        [-3.5f32, 3.0],
        [4.5, 3.0],
        [-3.5, -3.0],
        [4.5, -3.0],
        [0.5, 4.0],
        [0.5, -4.0],
    ];
    let mean = |v: Vec<f32>| v.iter().sum::<f32>() / v.len() as f32;
    let ensemble = mean(uncertainty(
        &networks.predict(&far, p.chains, 0).unwrap(),
        Uncertainty::Entropy,
    ));
    let single = mean(uncertainty(
        &sgd.predict(&far, 1, 0).unwrap(),
        Uncertainty::Entropy,
    ));
    assert!(
        ensemble > 0.3,
        "posterior predictive entropy far away {ensemble}"
    );
    assert!(
        single < 0.5 * ensemble,
        "SGD network {single} vs posterior {ensemble}"
    );
}

/// Lesson 10: with SGLD every superchain of gmm25 mixes inside its mode while nested R-hat
/// stays far above 1.01 (tests/it/convergence.rs measures both); the cyclical schedule the
/// story proposes brings nested R-hat down to its stationary level.
#[test]
fn lesson_10_cyclical_steps_let_the_superchains_forget_their_starts() {
    let mut p = toy("lesson-convergence");
    p.chains = 1600;
    let sgld = run(&p).summary;
    let stuck = sgld.nested_rhat.expect("defined");
    p.sampler.h = 0.07;
    p.steps = 6000;
    p.schedule = atmc_lab::math::ScheduleSpec::Cyclical {
        total_steps: 6000,
        cycles: 10,
        explore_fraction: 0.8,
        thermostat_while_exploring: atmc_lab::math::ExploringThermostat::Frozen,
    };
    let cyclical = run(&p).summary;
    let mixed = cyclical.nested_rhat.expect("defined");
    let level = cyclical.nested_rhat_level.expect("superchains");
    eprintln!("nested R-hat: SGLD {stuck:.3}, cyclical {mixed:.4} (level {level:.4})");
    assert!(stuck > 1.1, "{stuck}");
    assert!(mixed < 1.01, "{mixed}");
}

/// Lesson 3's challenge, judged headless as the app's Check does: the shipped sign (+1)
/// keeps ATMC's chains bounded and fails with the hint's lesson; the printed sign (−1) makes
/// at least 90% of them diverge within the 400-step budget and passes.
#[test]
fn the_friction_sign_challenge_passes_only_with_the_exploding_sign() {
    let mut c = comparison("lesson-thermostat");
    // Fewer chains than the lesson's 10,000 keep the test short; the verdict is the same.
    c.base.chains = 1000;
    let (preset, challenge) =
        runner::challenge_run(&AnyPreset::Comparison(c.clone())).expect("a challenge");
    assert_eq!(challenge.steps, 400);
    assert!(challenge.hint.contains("sign"));
    let (attempt, verdict) = preset.attempt(&challenge, BackendChoice::Cpu).unwrap();
    assert!(!verdict.passed, "{}", verdict.line());
    assert_eq!(attempt.diverged_fraction, 0.0);
    assert!(verdict.line().starts_with('✖'));
    for column in &mut c.columns {
        column.sampler.flip_friction_sign();
    }
    let (preset, challenge) = runner::challenge_run(&AnyPreset::Comparison(c)).unwrap();
    let (attempt, verdict) = preset.attempt(&challenge, BackendChoice::Cpu).unwrap();
    assert!(verdict.passed, "{}", verdict.line());
    assert!(attempt.diverged_fraction >= 0.9 && attempt.steps == 400);
}

/// The step-size challenge of the test lecture is judged against the shipped sweep
/// `atmc-step-and-floor`: its reference is the largest h of the sweep's grid at D = 1 whose
/// energy distance stays within 2× the exact-sample baseline; an attempt there passes, the
/// grid's next larger h fails the bound, and the next smaller h (safe, but not the largest)
/// fails with the reason.
#[test]
fn the_step_size_challenge_is_judged_against_the_shipped_sweep() {
    use atmc_lab::math::challenge::Goal;
    use atmc_lab::preset::Lecture;
    use atmc_lab::preset::sweep_file::{SHIPPED_SWEEPS, Sweep};
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lectures/small");
    let lecture = Lecture::load(folder).unwrap();
    let AnyPreset::Toy(p) = &lecture.steps[1].preset else {
        panic!("a 2-D preset")
    };
    let challenge = p.story.challenge.as_deref().unwrap().clone();
    let Goal::LargestStep {
        ratio,
        reference,
        ref sweep,
        ..
    } = challenge.goal
    else {
        panic!("a step-size challenge")
    };
    let (_, text) = SHIPPED_SWEEPS.iter().find(|(n, _)| n == sweep).unwrap();
    let sweep = Sweep::parse(text, sweep, std::path::Path::new(".")).unwrap();
    // The sweep's run at D = 1 is the challenge's preset.
    let AnyPreset::Toy(base) = &sweep.base else {
        panic!("a 2-D base")
    };
    assert!(sweep.axis_values[1].iter().any(|&d| (d - 1.0).abs() < 1e-9));
    assert_eq!((p.chains, p.steps, p.seed), (4000, 2000, base.seed));
    assert_eq!(
        (p.target.clone(), p.noise),
        (base.target.clone(), base.noise)
    );
    let at = |h: f64| {
        let mut q = p.clone();
        q.sampler.h = h;
        runner::attempt(&q, &challenge, BackendChoice::Cpu).unwrap()
    };
    let hs = &sweep.axis_values[0];
    let best = hs
        .iter()
        .rposition(|&h| (h / reference - 1.0).abs() < 1e-3)
        .expect("the reference is a point of the sweep");
    let (a, v) = at(hs[best]);
    assert!(v.passed, "{}", v.line());
    assert!(a.energy_distance <= ratio * a.energy_distance_baseline);
    let (a, v) = at(hs[best + 1]);
    assert!(!v.passed, "{}", v.line());
    assert!(a.energy_distance > ratio * a.energy_distance_baseline);
    let (a, v) = at(hs[best - 1]);
    assert!(a.energy_distance <= ratio * a.energy_distance_baseline);
    assert!(
        !v.passed && v.measured.contains("a larger h also is"),
        "{}",
        v.line()
    );
}
