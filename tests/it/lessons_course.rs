//! The course's lectures beyond the ATMC one (`cyclical`, `free-energy`, `bayesian-dl`):
//! every lesson loads, runs headless and reaches the state its story promises. Runs are cut
//! to a few hundred chains where a lesson's claim is about the tracked chains (the first
//! 500), so that the whole file stays cheap enough for CI.
#![cfg(feature = "gui")]

use crate::lessons::{comparison, mlp, run, run_columns, toy};
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::story::SHIPPED_LECTURES;
use atmc_lab::preset::{AnyPreset, Lecture};
use atmc_lab::runner::{self, RunOutcome};

fn lecture(name: &str) -> Lecture {
    let (_, text) = SHIPPED_LECTURES
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("lecture {name} is not shipped"));
    Lecture::parse(text, name).unwrap()
}

/// Every lesson of a lecture is a shipped preset with a story: a paragraph and something to
/// look at.
pub(crate) fn lessons_have_stories(name: &str, at_least: usize) {
    let lecture = lecture(name);
    assert!(
        lecture.steps.len() >= at_least,
        "{name}: {:?}",
        lecture.steps
    );
    for step in &lecture.steps {
        let story = step
            .preset
            .story()
            .unwrap_or_else(|| panic!("{step} has no story"));
        assert!(
            story.text.len() > 100 && !story.look_at.is_empty(),
            "{step}"
        );
    }
}

/// (per-chain, ensemble) modes visited by the tracked chains.
fn coverage(o: &RunOutcome) -> (f64, f64) {
    (
        o.summary.modes_visited.expect("a mixture"),
        o.summary.modes_visited_ensemble.expect("a mixture"),
    )
}

#[test]
fn the_cyclical_lecture_has_six_lessons_or_more_with_stories() {
    lessons_have_stories("cyclical", 6);
}

/// Cyclical 1: SGLD at h = 0.01 started in one mode visits that mode only, per chain and as an
/// ensemble, and the distance to exact samples stays far above theirs.
#[test]
fn cyclical_1_a_small_step_stays_in_its_mode() {
    let mut p = toy("cyclical-1-stuck");
    p.chains = 300;
    let o = run(&p);
    let (per_chain, ensemble) = coverage(&o);
    let s = &o.summary;
    eprintln!(
        "per chain {per_chain}, ensemble {ensemble}, distance {} (exact {})",
        s.energy_distance, s.energy_distance_baseline
    );
    assert_eq!(per_chain, 1.0);
    assert_eq!(ensemble, 1.0);
    assert!(s.energy_distance > 100.0 * s.energy_distance_baseline);
    // The warning's Var θ₁, which the look-at line cites as about 0.036: SGLD's stationary
    // variance in one mode of curvature λ = 1/0.03 with gradient noise σ = 1,
    // (2 + hσ²)/(λ(2 − hλ)) = 0.0362 at h = 0.01.
    eprintln!("Var θ {:?}", s.cov);
    assert!((s.cov[0][0] / 0.0362 - 1.0).abs() < 0.05, "{:?}", s.cov);
}

/// Cyclical 2: the large constant step carries every chain through (nearly) all 25 modes but
/// its histogram is far from the exact one; the small step stays in one mode; the cyclical
/// schedule's histogram is the closest of the three and its chains sample a new mode in most of
/// its 10 cycles (7.7 modes each, counting sampling-stage states; 8.4 if each cycle landed
/// uniformly at random);
/// the energy distance, blind to the within-mode shape, scores the haze as well as the
/// cyclical cloud.
#[test]
fn cyclical_2_a_large_step_explores_a_small_step_samples() {
    let mut c = comparison("cyclical-2-large-small");
    c.base.chains = 300;
    let runs = run_columns(&c);
    for (col, o) in c.columns.iter().zip(&runs) {
        eprintln!(
            "{}: coverage {:?}, TV {:.3}, distance {:.4} (exact {:.4}), diverged {}",
            col.label,
            coverage(o),
            o.summary.tv_histogram,
            o.summary.energy_distance,
            o.summary.energy_distance_baseline,
            o.summary.diverged_fraction
        );
    }
    let (small, large, cyclical) = (&runs[0], &runs[1], &runs[2]);
    assert_eq!(coverage(small), (1.0, 1.0));
    assert!(coverage(large).0 >= 24.0, "{:?}", coverage(large));
    assert!(large.summary.tv_histogram > 0.8);
    assert!(
        (6.5..=10.0).contains(&coverage(cyclical).0),
        "{:?}",
        coverage(cyclical)
    );
    assert!(cyclical.summary.tv_histogram < 0.5 * large.summary.tv_histogram);
    assert!(cyclical.summary.tv_histogram < small.summary.tv_histogram);
    assert!(runs.iter().all(|o| o.summary.diverged_fraction == 0.0));
    // What the columns' headers show ("distance to truth", the last row's, as the lesson
    // cites it): the haze and the cyclical cloud under 0.2 (0.060 and 0.155 measured at the
    // end; their order swings from frame to frame), the stuck small step about 7 (7.39).
    let header = |o: &atmc_lab::runner::RunOutcome| {
        o.series
            .iter()
            .rev()
            .map(|r| r.energy_distance)
            .find(|d| d.is_finite())
            .expect("a distance to truth")
    };
    let (small_d, large_d, cyclical_d) = (header(small), header(large), header(cyclical));
    eprintln!("headers: small {small_d:.4}, large {large_d:.4}, cyclical {cyclical_d:.4}");
    assert!((6.5..7.5).contains(&small_d), "{small_d}");
    assert!(large_d < 0.2 && cyclical_d < 0.2, "{large_d} {cyclical_d}");
}

/// Cyclical 3: the recorded step sizes follow h = (h₀/2)(cos πr + 1) with r the phase in the
/// cycle, and a step explores exactly while r < 0.8.
#[test]
fn cyclical_3_the_step_size_follows_the_cosine() {
    let mut p = toy("cyclical-3-stages");
    p.chains = 100;
    let atmc_lab::math::ScheduleSpec::Cyclical {
        total_steps,
        cycles,
        explore_fraction,
        ..
    } = p.schedule
    else {
        panic!("cyclical-3-stages has a cyclical schedule")
    };
    let o = run(&p);
    let len = total_steps.div_ceil(cycles);
    let (mut exploring, mut sampling) = (0, 0);
    for row in &o.series {
        // The row after `step` steps shows the last step, index step − 1.
        let r = f64::from((row.step - 1) % len) / f64::from(len);
        let h = 0.5 * p.sampler.h * ((std::f64::consts::PI * r).cos() + 1.0);
        assert!(
            (row.step_size - h).abs() < 1e-5,
            "step {}: {} vs {h}",
            row.step,
            row.step_size
        );
        assert_eq!(row.exploring, r < explore_fraction, "step {}", row.step);
        if row.exploring {
            exploring += 1;
        } else {
            sampling += 1;
        }
    }
    eprintln!("{exploring} exploring rows, {sampling} sampling rows");
    assert!(exploring > 3 * sampling && sampling > 0);
}

/// Cyclical 4: with the thermostat frozen while exploring, cyclical ATMC samples N(0, I) at
/// T = 1 under gradient noise σ = 3; left running, the sampling-stage states are too cold
/// (Var θ about 0.46, kinetic temperature about 0.5) with several times the frozen mean ξ; and with an
/// exploration fraction of 0.8, ξ at the cycle ends ratchets up past 10 and the samples
/// collapse (Var θ < 0.05).
#[test]
fn cyclical_4_a_running_thermostat_ratchets() {
    let mut c = comparison("cyclical-4-thermostat");
    c.base.chains = 1000;
    let runs = run_columns(&c);
    let (f, r) = (&runs[0].summary, &runs[1].summary);
    for (name, s) in [("frozen", f), ("running", r)] {
        eprintln!(
            "{name}: var θ {:?}, kinetic T {:?}, mean ξ {:?}",
            s.cov, s.kinetic_temperature, s.mean_xi
        );
    }
    assert!((f.cov[0][0] - 1.0).abs() < 0.1, "{:?}", f.cov);
    assert!((f.kinetic_temperature.unwrap() - 1.0).abs() < 0.1);
    // The story's "Var θ about 0.46" and "kinetic temperature about 0.5" (0.455 and 0.528
    // measured with 1,000 chains).
    for k in 0..2 {
        assert!((r.cov[k][k] / 0.46 - 1.0).abs() < 0.05, "{:?}", r.cov);
    }
    assert!((0.45..0.55).contains(&r.kinetic_temperature.unwrap()));
    assert!(r.mean_xi.unwrap() > 3.0 * f.mean_xi.unwrap());
    // A short sampling stage: the ratchet.
    let mut short = c.column_preset(1);
    let atmc_lab::math::ScheduleSpec::Cyclical {
        explore_fraction,
        cycles,
        total_steps,
        ..
    } = &mut short.schedule
    else {
        panic!("a cyclical schedule")
    };
    *explore_fraction = 0.8;
    let len = total_steps.div_ceil(*cycles);
    let o = run(&short);
    let ends: Vec<f64> = o
        .series
        .iter()
        .filter(|row| row.step % len == 0)
        .map(|row| row.mean_xi)
        .collect();
    eprintln!(
        "exploration fraction 0.8, running: mean ξ at the cycle ends {ends:.2?}, {:?}",
        o.summary.cov
    );
    assert!(
        ends.windows(2).filter(|w| w[1] > w[0]).count() + 2 >= ends.len(),
        "{ends:?}"
    );
    assert!(*ends.last().unwrap() > 10.0);
    assert!(o.summary.cov[0][0] < 0.05, "{:?}", o.summary.cov);
}

/// Cyclical 6: at an equal budget of 5,000 steps, modes visited per chain grow with the number
/// of cycles (2, 10, 50: 1.9, 7.7 and 19 sampled modes, one per cycle until landings repeat),
/// and the tracked chains together always cover more than one chain.
#[test]
fn cyclical_6_more_cycles_more_modes_per_chain() {
    let mut c = comparison("cyclical-6-cycles");
    c.base.chains = 300;
    let runs = run_columns(&c);
    let cov: Vec<_> = runs.iter().map(coverage).collect();
    eprintln!("coverage (per chain, ensemble) at 2, 10, 50 cycles: {cov:?}");
    // The story's numbers, each within 5% (1.93, 7.71 and 18.9 measured with 300 chains).
    for (&(per_chain, _), cited) in cov.iter().zip([1.9, 7.7, 19.0]) {
        assert!((per_chain / cited - 1.0).abs() < 0.05, "{cov:?}");
    }
    assert!(cov.iter().all(|(one, all)| all > one));
}

/// Cyclical 8: with the cyclical schedule nested R-hat of 16 superchains falls below 1.01;
/// with the constant step h = 0.01 that its look-at line suggests it stays far above.
#[test]
fn cyclical_8_superchains_forget_their_starts() {
    let mut p = toy("cyclical-8-nested");
    let s = run(&p).summary;
    p.schedule = atmc_lab::math::ScheduleSpec::Constant;
    p.sampler.h = 0.01;
    let constant = run(&p).summary;
    eprintln!(
        "nested R-hat {:?} (level {:?}); constant h = 0.01: {:?}",
        s.nested_rhat, s.nested_rhat_level, constant.nested_rhat
    );
    assert!(s.nested_rhat.expect("defined") < 1.01);
    assert!(constant.nested_rhat.expect("defined") > 1.1);
}

#[test]
fn the_free_energy_lecture_has_six_lessons_or_more_with_stories() {
    lessons_have_stories("free-energy", 6);
}

/// ησ²/(2 − ηλ) at λ = 1: the stationary Var θ and temperature of SGD on the quadratic.
fn quadratic_t(eta: f64, sigma: f64) -> f64 {
    eta * sigma * sigma / (2.0 - eta)
}

/// Free energy 1: SGD at η = 0.5 on the quadratic settles at Var θ = T = 1/3 in both
/// coordinates (within 3%).
#[test]
fn free_energy_1_sgd_on_a_quadratic_has_the_known_variance() {
    let p = toy("free-energy-1-quadratic");
    let o = run(&p);
    let s = &o.summary;
    let t = quadratic_t(p.sampler.h, 1.0);
    eprintln!("Var θ {:?} against T = {t}", s.cov);
    for k in 0..2 {
        assert!((s.cov[k][k] / t - 1.0).abs() < 0.03, "{:?}", s.cov);
    }
    // "Settles into that Gaussian within a few steps": the readout's Var θ (of the chains at
    // that instant) is within 3% of T in both coordinates from then on (from step 5 measured:
    // Var θ − T shrinks by (1 − η)² = 1/4 a step).
    use atmc_lab::engine::{Engine, cpu::CpuEngine};
    let mut engine = CpuEngine::new(crate::common::model(&p), p.chains, &p.init, p.seed);
    let mut settled = None;
    for _ in 0..60 {
        let report = engine.advance(1, &[]).unwrap();
        let c = report.moments.covariance();
        let close = [c[0], c[2]].iter().all(|v| (v / t - 1.0).abs() < 0.03);
        match (close, settled) {
            (true, None) => settled = Some(report.step),
            (false, _) => settled = None,
            _ => {}
        }
    }
    eprintln!("Var θ within 3% of T from step {settled:?}");
    assert!(settled.is_some_and(|step| step <= 8), "{settled:?}");
}

/// Free energy 2: at η = 0.2, 1 and 1.8 Var θ follows ησ²/(2 − η) within 5%; at η = 1.8 it
/// is more than 8 times the naive ησ²/2.
#[test]
fn free_energy_2_the_naive_temperature_fails_at_large_eta() {
    let mut c = comparison("free-energy-2-large-eta");
    c.base.chains = 4000;
    let runs = run_columns(&c);
    for (col, o) in c.columns.iter().zip(&runs) {
        let eta = col.sampler.h;
        let var = 0.5 * (o.summary.cov[0][0] + o.summary.cov[1][1]);
        let t = quadratic_t(eta, 1.0);
        eprintln!(
            "η {eta}: Var θ {var:.4}, exact {t:.4}, naive {:.4}",
            eta / 2.0
        );
        assert!((var / t - 1.0).abs() < 0.05, "η {eta}: {var} vs {t}");
        if eta > 1.5 {
            assert!(var > 8.0 * eta / 2.0);
        }
    }
}

fn sphere(name: &str) -> atmc_lab::preset::sphere::SpherePreset {
    match AnyPreset::load(name).unwrap_or_else(|e| panic!("{e}")) {
        AnyPreset::Sphere(p) => p,
        other => panic!("{name} is not a sphere preset: {other:?}"),
    }
}

fn thermo_point(p: AnyPreset) -> atmc_lab::diagnostics::thermodynamics::ThermoPoint {
    atmc_lab::runner::thermodynamics::measure(&p, BackendChoice::Cpu, &mut |_| {}).unwrap()
}

/// Free energy 3: at η = 0.02 the folded ensemble on the underparameterised sphere comes close
/// to its Gibbs law: histogram TV within twice its exact-draw baseline (though above its
/// calibrated 95 % level) and KS below its critical value; its longitudes carry the objects'
/// 3-fold pattern (MATH.md §5.6), which the story states.
#[test]
fn free_energy_3_the_sphere_passes_ks_and_shows_a_longitude_pattern_at_small_eta() {
    let p = thermo_point(AnyPreset::Sphere(sphere("free-energy-3-gibbs")));
    let (tv, baseline) = (p.gibbs_tv.unwrap(), p.gibbs_tv_baseline.unwrap());
    let (ks, critical) = (p.ks_distance.unwrap(), p.ks_critical.unwrap());
    eprintln!(
        "T {:?}, TV {tv:.4} (exact {baseline:.4}), KS {ks:.4} / {critical:.4}",
        p.t_gibbs
    );
    assert!(tv <= 2.0 * baseline);
    assert!(ks <= critical);
    // The panel's verdict stands: the run is stationary and in the fits (no "run more
    // steps" under it).
    assert!(p.stationary && p.excluded.is_none(), "{:?}", p.excluded);
    // Measured when the story was written: TV 0.068 against 0.061, Z₃ = 23, p = 5·10⁻⁵.
    assert!(tv > p.gibbs_tv_critical.unwrap(), "TV {tv}");
    let longitude = p.longitude.as_ref().unwrap();
    assert!(
        !longitude.uniform() && longitude.strongest == 3,
        "{longitude:?}"
    );
}

/// Free energy 4: on the overparameterised sphere the chains collapse onto the poles, the
/// entropy keeps falling and the fitted temperature is essentially 0; the gradient's
/// signal-to-noise ratio stays positive.
#[test]
fn free_energy_4_overparameterised_sgd_collapses() {
    let p = thermo_point(AnyPreset::Sphere(sphere("free-energy-4-collapse")));
    let s = |i: usize| p.s_trace[i].1;
    eprintln!(
        "poles {:?}, S {:?}, T {:?}, SNR {:?}",
        p.pole_fraction, p.s_trace, p.t_gibbs, p.snr
    );
    assert!(p.pole_fraction.unwrap() > 0.99);
    assert!(s(p.s_trace.len() - 1) < s(3) - 5.0);
    assert!(p.t_gibbs.unwrap() < 1e-6);
    assert!(p.snr.unwrap() > 0.3);
}

/// Free energy 5: at η = 0.2 batch 1 has about four times the fitted temperature of batch 4
/// (between 3 and 5 times).
#[test]
fn free_energy_5_batch_size_is_a_second_temperature() {
    let b4 = sphere("free-energy-5-batch");
    let mut b1 = b4.clone();
    b1.sampler.batch = 1;
    let t4 = thermo_point(AnyPreset::Sphere(b4)).t_gibbs.unwrap();
    let t1 = thermo_point(AnyPreset::Sphere(b1)).t_gibbs.unwrap();
    eprintln!("T batch 1 {t1:.5}, batch 4 {t4:.5}, ratio {:.2}", t1 / t4);
    assert!((3.0..5.0).contains(&(t1 / t4)), "{t1} / {t4}");
}

/// Free energy 6, as the story cites it: the lesson's own run at η = 0.5 settles at
/// Var θ = T = 1/3 (within 3%); the Thermodynamics tab's sweep of the quadratic (its defaults:
/// twelve learning rates from 0.18 to 1.8, the preset's chains and steps) has the Gibbs-fitted
/// and the slope temperature within 5% of ησ²/(2 − η) at every learning rate, and at the row
/// the Gibbs test opens on (the middle one, η = 0.632, T = 0.462) both within 2%.
#[test]
fn free_energy_6_two_independent_temperatures_meet_the_known_answer() {
    let s = run(&toy("free-energy-6-circular")).summary;
    let t = quadratic_t(0.5, 1.0);
    eprintln!("Var θ {:?} against T {t:.4}", s.cov);
    for k in 0..2 {
        assert!((s.cov[k][k] / t - 1.0).abs() < 0.03, "{:?}", s.cov);
    }
    let dir = crate::common::scratch("lessons", "free-energy-6");
    let out = crate::common::atmc_lab_in(
        &[
            &crate::thermo::QUADRATIC_DECADE[..],
            &["--out", "q", "--csv", "q.csv"],
        ]
        .concat(),
        &dir,
    );
    let summary = crate::thermo::json(&out);
    eprintln!("{summary}");
    for key in [
        "max_rel_error_t_gibbs_vs_theory",
        "max_rel_error_t_slope_vs_theory",
    ] {
        assert!(summary[key].as_f64().unwrap() < 0.05, "{key}: {summary}");
    }
    let rows = crate::thermo::csv_rows(&dir.join("q.csv"));
    assert_eq!(rows.len(), 12);
    let middle = &rows[rows.len() / 2];
    let num = |k: &str| middle[k].parse::<f64>().unwrap();
    assert!((num("eta") - 0.632).abs() < 5e-4, "{middle:?}");
    let known = quadratic_t(num("eta"), 1.0);
    assert!((known - 0.462).abs() < 5e-4);
    for k in ["T_gibbs", "T_slope"] {
        assert!((num(k) / known - 1.0).abs() < 0.02, "{k}: {middle:?}");
    }
}

/// For each of `chains` chains: the test NLL of its network at the end of the run, and of the
/// average of its networks at `snapshots` evenly spaced times (the cycle ends). Returns the
/// mean over chains of (NLL of one network − NLL of the chain's own average).
fn gain_of_averaging_one_chain(
    p: &atmc_lab::preset::MlpPreset,
    chains: u32,
    snapshots: u32,
) -> f64 {
    use atmc_lab::diagnostics::classification::classification_metrics;
    use atmc_lab::engine::mlp::{MlpCpuEngine, MlpEngine};
    let (model, data) = p.build().unwrap();
    let k = data.classes as usize;
    let mut engine = MlpCpuEngine::new(model, chains, &p.init, p.seed);
    let mut sums = vec![vec![0.0f32; data.test_x.len() * k]; chains as usize];
    let mut last = Vec::new();
    for _ in 0..snapshots {
        engine.advance(p.steps / snapshots).unwrap();
        last.clear();
        for (c, sum) in sums.iter_mut().enumerate() {
            let probs = engine.predict(&data.test_x, 1, c as u32).unwrap().focus;
            for (s, q) in sum.iter_mut().zip(&probs) {
                *s += q / snapshots as f32;
            }
            last.push(probs);
        }
    }
    let nll = |probs: &[f32]| classification_metrics(probs, &data.test_y, k).nll;
    let gain: f64 = sums
        .iter()
        .zip(&last)
        .map(|(avg, one)| nll(one) - nll(avg))
        .sum();
    gain / f64::from(chains)
}

/// Cyclical 7 (and Bayesian DL 4): averaging one chain's six cycle-end networks lowers its
/// test NLL against its last network alone by more than 0.05 (over 32 chains); a
/// constant-step ATMC chain (h = 0.02, lesson 2's) gains more from the same averaging, as the
/// story says, so the gain is not specific to cycles on this network.
#[test]
fn cyclical_7_one_chain_makes_an_ensemble_over_its_cycles() {
    let p = mlp("cyclical-7-mlp");
    let atmc_lab::math::ScheduleSpec::Cyclical { cycles, .. } = p.schedule else {
        panic!("cyclical-7-mlp has a cyclical schedule")
    };
    let cyclical = gain_of_averaging_one_chain(&p, 32, cycles);
    let mut constant = p.clone();
    constant.schedule = atmc_lab::math::ScheduleSpec::Constant;
    constant.sampler.h = 0.02;
    let constant = gain_of_averaging_one_chain(&constant, 32, cycles);
    eprintln!(
        "test NLL gain of averaging one chain's {cycles} networks: cyclical {cyclical:.4}, \
         constant {constant:.4}"
    );
    assert!(cyclical > 0.05, "{cyclical}");
    assert!(constant > cyclical, "{cyclical} vs {constant}");
}

#[test]
fn the_bayesian_dl_lecture_has_five_lessons_or_more_with_stories() {
    lessons_have_stories("bayesian-dl", 5);
}

fn run_mlp(p: &atmc_lab::preset::MlpPreset) -> atmc_lab::diagnostics::mlp::MlpSummary {
    runner::mlp::run_mlp(p, BackendChoice::Cpu, &mut |_| {})
        .expect("run completes")
        .summary
}

/// Bayesian DL 2: with 256 of the preset's networks, the posterior predictive's test NLL is
/// at most 0.9 times the SGD network's and half a single sampled network's, and its ECE is
/// below both; the three accuracies are within 3 points of each other, each about 95%.
#[test]
fn bayesian_dl_2_the_posterior_predictive_is_better_calibrated() {
    let mut p = mlp("bayesian-dl-2-calibration");
    p.chains = 256;
    let s = run_mlp(&p);
    let post = s.posterior_predictive.expect("networks alive").test;
    let one = s.single_network.expect("network 0 alive").test;
    let sgd = s.baseline_sgd.test;
    eprintln!("test: posterior {post:?}\n one network {one:?}\n SGD {sgd:?}");
    assert!(post.nll < 0.9 * sgd.nll && post.nll < 0.5 * one.nll);
    assert!(post.ece < sgd.ece && post.ece < one.ece);
    let accuracies = [post.accuracy, one.accuracy, sgd.accuracy];
    let spread = accuracies.iter().cloned().fold(0.0, f64::max)
        - accuracies.iter().cloned().fold(1.0, f64::min);
    assert!(spread < 0.03, "{accuracies:?}");
    // "About 95%", as the story says (94.6, 95.3 and 94.9% measured).
    assert!(
        accuracies.iter().all(|a| (0.93..0.97).contains(a)),
        "{accuracies:?}"
    );
}

/// Bayesian DL 3: the printed ATMC loses every network (256 of them) within the run; the
/// corrected sampler on the same network and data loses none.
#[test]
fn bayesian_dl_3_the_printed_sampler_explodes_on_a_network() {
    let mut p = mlp("bayesian-dl-3-printed");
    p.chains = 256;
    let printed = run_mlp(&p);
    p.sampler = atmc_lab::math::SamplerSpec {
        h: p.sampler.h,
        ..atmc_lab::math::SamplerSpec::new(atmc_lab::math::SamplerKind::Atmc)
    };
    let corrected = run_mlp(&p);
    eprintln!(
        "printed: diverged {} (first at {:?}); corrected: diverged {}",
        printed.diverged_fraction, printed.first_divergence_step, corrected.diverged_fraction
    );
    assert_eq!(printed.diverged_fraction, 1.0);
    assert_eq!(corrected.diverged_fraction, 0.0);
}

/// Bayesian DL 5: ResNet++ (depth 8, width 4) on a CI-sized image set (horizontal against
/// vertical stripes, 1,024 images, 4 epochs): SGD and ATMC both learn it perfectly, and SGD's
/// network (ECE ≈ 0) is better calibrated than ATMC's posterior predictive of 4 samples.
#[cfg(feature = "train")]
#[test]
fn bayesian_dl_5_resnet_atmc_against_sgd_calibration_on_a_ci_sized_run() {
    use crate::train::{config, data, train};
    use atmc_lab::train::trainer::{OptimizerKind, Trainer};
    let sgd = train(Trainer::new(config(OptimizerKind::Sgd), data()).unwrap());
    let atmc = train(Trainer::new(config(OptimizerKind::Atmc), data()).unwrap());
    let sgd = sgd.history.last().unwrap().single.clone();
    let last = atmc.history.last().unwrap();
    let ensemble = last.ensemble.clone().expect("samples collected");
    eprintln!(
        "SGD {sgd:?}\nATMC one network {:?}\nATMC posterior predictive of {} samples {ensemble:?}",
        last.single, last.samples
    );
    // Both learn the stripes perfectly; SGD's sure network is then better calibrated than
    // ATMC's posterior predictive, which the story says: no benefit shows on a task this easy.
    assert!(sgd.accuracy > 0.99 && ensemble.accuracy > 0.99);
    assert!(
        sgd.ece < 0.01 && ensemble.ece > sgd.ece,
        "{sgd:?} {ensemble:?}"
    );
}

/// The shipped `cyclical-gmm25` (h₀ = 0.05, below the modes' stability limit 0.06): every
/// tracked chain keeps one mode, while the tracked chains together cover several, as its
/// name and description say.
#[test]
fn cyclical_gmm25_keeps_one_mode_per_chain() {
    let mut p = toy("cyclical-gmm25");
    p.chains = 500;
    let (per_chain, ensemble) = coverage(&run(&p));
    eprintln!("cyclical-gmm25: per chain {per_chain}, ensemble {ensemble}");
    assert_eq!(per_chain, 1.0);
    assert!(ensemble > 1.0);
}

/// The challenge of a lesson and the run it judges, as the app's Check button finds them.
fn challenge_of(
    preset: AnyPreset,
) -> (
    runner::ChallengeRun,
    atmc_lab::math::challenge::ChallengeSpec,
) {
    runner::challenge_run(&preset).expect("the lesson carries a challenge")
}

/// Cyclical 1's challenge: as shipped (SGLD at h = 0.01) no chain leaves its mode and the
/// attempt fails with the hint; cyclical SGLD with h₀ = 0.07 and 100 cycles passes. Modes are
/// counted in sampling stages only (a transit during exploration is no visit), so each cycle
/// adds at most about one mode: 50 cycles reach 18 modes in 80 % of the chains (short of the
/// goal) and 10 cycles in none.
#[test]
fn the_modes_per_chain_challenge_needs_restarts() {
    let mut p = toy("cyclical-1-stuck");
    // The judged chains are the first 500 tracked ones.
    p.chains = 500;
    let (run, challenge) = challenge_of(AnyPreset::Toy(p.clone()));
    let (_, verdict) = run.attempt(&challenge, BackendChoice::Cpu).unwrap();
    assert!(!verdict.passed, "{}", verdict.line());
    assert!(verdict.line().starts_with('✖'));
    p.sampler.h = 0.07;
    p.schedule = atmc_lab::math::ScheduleSpec::Cyclical {
        total_steps: 5000,
        cycles: 100,
        explore_fraction: 0.8,
        thermostat_while_exploring: Default::default(),
    };
    let (run, challenge) = challenge_of(AnyPreset::Toy(p.clone()));
    let (attempt, verdict) = run.attempt(&challenge, BackendChoice::Cpu).unwrap();
    eprintln!("{}", verdict.line());
    assert!(verdict.passed, "{}", verdict.line());
    assert_eq!(attempt.modes_per_chain.len(), 500);
    // Not a formality: fifty cycles in the same budget restart too rarely once exploration
    // transits no longer count.
    if let atmc_lab::math::ScheduleSpec::Cyclical { cycles, .. } = &mut p.schedule {
        *cycles = 50;
    }
    let (run, challenge) = challenge_of(AnyPreset::Toy(p));
    let (_, verdict) = run.attempt(&challenge, BackendChoice::Cpu).unwrap();
    eprintln!("{}", verdict.line());
    assert!(!verdict.passed, "{}", verdict.line());
}

/// Free energy 2's challenge: η = 1.8 (as shipped) is stable and fails; past 2/λ SGD's
/// chains diverge and the attempt passes.
#[test]
fn the_largest_learning_rate_challenge_passes_past_two_over_lambda() {
    let mut c = comparison("free-energy-2-large-eta");
    c.base.chains = 1000;
    let (run, challenge) = challenge_of(AnyPreset::Comparison(c.clone()));
    let (attempt, verdict) = run.attempt(&challenge, BackendChoice::Cpu).unwrap();
    assert!(!verdict.passed, "{}", verdict.line());
    assert_eq!(attempt.diverged_fraction, 0.0);
    c.columns[2].sampler.h = 2.5;
    let (run, challenge) = challenge_of(AnyPreset::Comparison(c));
    let (attempt, verdict) = run.attempt(&challenge, BackendChoice::Cpu).unwrap();
    assert!(verdict.passed, "{}", verdict.line());
    assert!(attempt.h == 2.5 && attempt.diverged_fraction >= 0.9);
}

/// Bayesian DL 2's challenge, judged on networks: the corrected sampler loses none and
/// fails; the printed friction sign alone makes the networks diverge and passes.
#[test]
fn the_printed_defect_challenge_is_judged_on_networks() {
    let mut p = mlp("bayesian-dl-2-calibration");
    p.chains = 256;
    let (run, challenge) = challenge_of(AnyPreset::Mlp(p.clone()));
    let (attempt, verdict) = run.attempt(&challenge, BackendChoice::Cpu).unwrap();
    assert!(!verdict.passed, "{}", verdict.line());
    assert_eq!(attempt.diverged_fraction, 0.0);
    p.sampler.friction_sign = -1.0;
    let (run, challenge) = challenge_of(AnyPreset::Mlp(p));
    let (attempt, verdict) = run.attempt(&challenge, BackendChoice::Cpu).unwrap();
    eprintln!("{}", verdict.line());
    assert!(verdict.passed, "{}", verdict.line());
    assert!(attempt.diverged_fraction >= 0.9);
}

/// A network preset carries divergence goals only: any other is refused where it is written.
#[test]
fn a_network_challenge_other_than_divergence_is_refused() {
    let text = atmc_lab::preset::SHIPPED
        .iter()
        .find(|(n, _)| *n == "bayesian-dl-2-calibration")
        .unwrap()
        .1
        .replace("goal: Diverge(share: 0.9)", "goal: ModesPerChain(modes: 3)");
    let e = AnyPreset::parse(&text, "bad.ron").unwrap_err().to_string();
    assert!(e.contains("Diverge") && e.contains("bad.ron:"), "{e}");
}
