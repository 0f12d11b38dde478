//! Shared helpers of the integration tests.
#![allow(dead_code)]

use atmc_lab::engine::{BackendChoice, InitSpec};
use atmc_lab::math::{NoiseSpec, SamplerKind, SamplerSpec, ScheduleSpec, TargetSpec};
use atmc_lab::preset::{Preset, ViewHints};
use atmc_lab::runner::{self, RunOutcome};

/// A preset on `target` with the corrected sampler's defaults (h = 0.05, m = D = T = 1).
pub fn preset(kind: SamplerKind, target: &str, sigma: f64) -> Preset {
    Preset {
        name: "test".into(),
        description: String::new(),
        sampler: SamplerSpec::new(kind),
        target: TargetSpec::from_name(target).expect("known target"),
        noise: if sigma == 0.0 {
            NoiseSpec::None
        } else {
            NoiseSpec::Isotropic { sigma }
        },
        schedule: ScheduleSpec::Constant,
        chains: 10_000,
        steps: 2_000,
        seed: 12345,
        record_every: 10,
        init: InitSpec::default(),
        view: ViewHints::default(),
    }
}

/// Runs a preset to the end on a backend.
pub fn run(p: &Preset, backend: BackendChoice) -> RunOutcome {
    runner::run(p, backend, &mut |_| {}).expect("run completes")
}

/// Asserts |a − b| ≤ tol · |b|.
pub fn assert_rel(what: &str, a: f64, b: f64, tol: f64) {
    assert!(
        (a - b).abs() <= tol * b.abs(),
        "{what}: {a} is not within {:.1}% of {b}",
        tol * 100.0
    );
}
