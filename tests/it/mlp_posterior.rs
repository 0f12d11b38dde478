//! Bayesian MLP posteriors end to end through `run_mlp`, on the CPU engine: the corrected
//! ATMC's posterior predictive against one SGD network, ATMC as printed exploding its
//! networks, and what a run reports when no network is left.

use atmc_lab::diagnostics::mlp::series_csv;
use atmc_lab::engine::BackendChoice;
use atmc_lab::math::{NoiseMass, XiUpdate};
use atmc_lab::preset::{AnyPreset, MlpPreset};
use atmc_lab::runner::mlp::{MlpOutcome, run_mlp};

fn shipped(name: &str) -> MlpPreset {
    match AnyPreset::load(name).unwrap_or_else(|e| panic!("{e}")) {
        AnyPreset::Mlp(p) => p,
        _ => panic!("{name} is not an MLP preset"),
    }
}

fn run(preset: &MlpPreset) -> MlpOutcome {
    run_mlp(preset, BackendChoice::Cpu, &mut |_| {}).expect("run completes")
}

#[test]
fn two_moons_posterior_predictive_beats_the_sgd_network_on_nll() {
    let mut preset = shipped("two-moons");
    // 256 networks instead of 1024 keep the 2000 steps to seconds on two cores.
    preset.chains = 256;
    let outcome = run(&preset);
    let s = &outcome.summary;
    let pp = &s
        .posterior_predictive
        .as_ref()
        .expect("alive networks give a posterior predictive")
        .test;
    let sgd = &s.baseline_sgd.test;
    let kinetic = s
        .kinetic_temperature
        .expect("alive networks have a temperature");
    println!(
        "two moons, {} networks × {} steps: posterior predictive test accuracy {:.4}, NLL {:.4}, \
         ECE {:.4}; SGD network accuracy {:.4}, NLL {:.4}, ECE {:.4}; kinetic temperature {:.4}; \
         diverged {}",
        s.chains,
        s.steps,
        pp.accuracy,
        pp.nll,
        pp.ece,
        sgd.accuracy,
        sgd.nll,
        sgd.ece,
        kinetic,
        s.diverged_fraction
    );
    assert_eq!(s.diverged_fraction, 0.0);
    assert_eq!(s.first_divergence_step, None);
    assert!(
        (kinetic - 1.0).abs() < 0.05,
        "kinetic temperature {kinetic}"
    );
    assert_eq!(pp.count as usize, s.test_points);
    assert!(
        (pp.accuracy - sgd.accuracy).abs() <= 0.02,
        "posterior predictive accuracy {} vs SGD {}",
        pp.accuracy,
        sgd.accuracy
    );
    // Averaging over the posterior hedges where the networks disagree: better calibrated
    // probabilities than one point estimate at about the same accuracy.
    assert!(
        pp.nll < sgd.nll,
        "posterior predictive NLL {} is not below SGD's {}",
        pp.nll,
        sgd.nll
    );
    let rows = (preset.steps / preset.record_every) as usize;
    assert_eq!(outcome.series.len(), rows);
    assert!(outcome.series.iter().all(|r| r.ensemble_networks == 256));
}

#[test]
fn spirals_as_printed_explode_and_corrected_sample() {
    let mut preset = shipped("spirals-printed");
    preset.chains = 64;
    let printed = run(&preset).summary;
    println!(
        "spirals as printed, {} networks × {} steps: diverged {}, first at step {:?}",
        printed.chains, printed.steps, printed.diverged_fraction, printed.first_divergence_step
    );
    assert_eq!(
        printed.printed_defects.len(),
        3,
        "{:?}",
        printed.printed_defects
    );
    assert!(
        printed.diverged_fraction >= 0.95,
        "only {} of the networks diverged",
        printed.diverged_fraction
    );
    let first = printed
        .first_divergence_step
        .expect("the first divergence is reported");
    assert!((1..=preset.steps).contains(&first), "{first}");

    // The same run with the three switches corrected.
    preset.sampler.friction_sign = 1.0;
    preset.sampler.xi_update = XiUpdate::Accumulate;
    preset.sampler.noise_mass = NoiseMass::With;
    preset.steps = 300;
    let corrected = run(&preset).summary;
    let pp = &corrected
        .posterior_predictive
        .as_ref()
        .expect("a posterior predictive")
        .test;
    println!(
        "spirals corrected, {} networks × {} steps: diverged {}, test accuracy {:.4}, NLL {:.4}",
        corrected.chains, corrected.steps, corrected.diverged_fraction, pp.accuracy, pp.nll
    );
    assert!(corrected.printed_defects.is_empty());
    assert_eq!(corrected.diverged_fraction, 0.0);
    assert_eq!(corrected.first_divergence_step, None);
    // Two balanced classes: chance is 50%.
    assert!(pp.accuracy > 0.8, "test accuracy {}", pp.accuracy);
}

#[test]
fn with_every_network_diverged_there_is_no_posterior_predictive() {
    let mut preset = shipped("spirals-printed");
    preset.chains = 16;
    let outcome = run(&preset);
    let s = &outcome.summary;
    assert_eq!(
        s.diverged_fraction, 1.0,
        "the setup must lose every network"
    );
    assert!(
        s.posterior_predictive.is_none(),
        "{:?}",
        s.posterior_predictive
    );
    let json = serde_json::to_value(s).unwrap();
    // Nothing alive to average: no made-up numbers anywhere.
    for key in [
        "posterior_predictive",
        "single_network",
        "kinetic_temperature",
        "mean_xi",
    ] {
        assert!(json[key].is_null(), "{key}: {json}");
    }
    assert_eq!(json["layers"].as_array().map(Vec::len), Some(0), "{json}");
    // The baseline is one SGD network, unaffected by the sampler.
    assert!(json["baseline_sgd"]["test"]["accuracy"].as_f64().unwrap() > 0.0);

    // The last rows of the series have no ensemble either, and their CSV fields are empty.
    let last = outcome.series.last().expect("rows");
    assert_eq!(last.ensemble_networks, 0);
    let csv = series_csv(&outcome.series);
    let fields: Vec<&str> = csv.lines().last().unwrap().split(',').collect();
    assert_eq!(fields.len(), 12, "{fields:?}");
    assert_eq!(&fields[4..7], &["", "", ""], "{fields:?}");
    // The first row (50 steps, before the first divergence) still has one.
    let first = &outcome.series[0];
    assert_eq!(first.ensemble_networks, 16);
    assert!(first.ensemble_test.accuracy > 0.0);
}
