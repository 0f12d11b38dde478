//! The convergence instruments measured on real runs: nested R̂ catches superchains that
//! remember their starts while each superchain looks mixed on its own, falls to its
//! stationary level on a Gaussian, and the kernel Stein discrepancy separates a correct
//! sampler from the printed thermostat overwrite.

use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::Preset;
use atmc_lab::runner;

fn shipped(name: &str) -> Preset {
    Preset::load(name).expect("shipped preset")
}

/// The lesson's claim on gmm25 (SGLD, h = 0.01, 16 superchains): nR̂ > 1.1 at the end while
/// the split R̂ of every superchain's own monitored chains stays below 1.05.
#[test]
fn superchains_that_stay_in_their_modes_are_caught_by_nested_rhat_alone() {
    let mut p = shipped("convergence-gmm25");
    p.chains = 1600; // 16 superchains of 100: the claim does not need 10,000
    p.steps = 2000;
    let outcome = runner::run(&p, BackendChoice::Cpu, &mut |_| {}).unwrap();
    let s = &outcome.summary;
    let nested = s.nested_rhat.expect("nested R̂ defined");
    eprintln!(
        "gmm25: nR̂ {nested:.3} (level {:?}), R̂ of the 64 traced chains {:.3}",
        s.nested_rhat_level, s.rhat_max
    );
    assert!(nested > 1.1, "nR̂ = {nested}");
    assert!(nested > s.nested_rhat_limit.expect("superchains"));
    // The shipped starts are over-dispersed, and 100 chains a superchain resolve 1.01.
    assert!(
        !s.warnings
            .iter()
            .any(|w| w.contains("over-dispersed") || w.contains("chains a superchain")),
        "{:?}",
        s.warnings
    );
    // Per superchain, from the same monitor the app uses.
    let mut monitor = atmc_lab::diagnostics::convergence::ConvergenceMonitor::new(
        &crate::common::model(&p).target,
        p.chains,
        p.init.superchains,
    );
    let trajectories = runner::trajectories(&crate::common::validated(&p), 64);
    for step in (p.steps as usize / 2..=p.steps as usize).step_by(10) {
        let states = atmc_lab::engine::ChainStates {
            chains: trajectories
                .iter()
                .map(|t| t[step.min(t.len() - 1)])
                .collect(),
            diverged_at: vec![0; trajectories.len()],
        };
        monitor.observe(&states, step as u32, p.sampler.h, step as f64, false);
    }
    let per_superchain = monitor.superchain_rhats();
    eprintln!("split R̂ per superchain: {per_superchain:.3?}");
    assert_eq!(per_superchain.len(), 16);
    assert!(
        per_superchain
            .iter()
            .all(|&(r, mixed)| r < 1.05 && mixed == Some(true)),
        "{per_superchain:?}"
    );
}

/// On a Gaussian nested R̂ falls to its stationary level: below 1.01 and below its limit
/// within a few hundred steps.
#[test]
fn nested_rhat_settles_on_a_gaussian() {
    // The shipped 10,000 chains (625 a superchain), as the lessons cite its limit.
    let mut p = shipped("convergence-gaussian");
    p.steps = 600;
    let outcome = runner::run(&p, BackendChoice::Cpu, &mut |_| {}).unwrap();
    let s = &outcome.summary;
    let nested = s.nested_rhat.expect("defined");
    let level = s.nested_rhat_level.expect("superchains");
    eprintln!("Gaussian: nR̂ {nested:.5}, level {level:.5}");
    assert!((level - (1.0f64 + 1.0 / 625.0).sqrt()).abs() < 1e-12);
    assert!(nested < 1.01, "{nested}");
    assert!(
        nested <= s.nested_rhat_limit.expect("superchains"),
        "{nested}"
    );
    // The CSV's per-block column is filled and falls.
    let first = outcome
        .series
        .iter()
        .find(|r| r.nested_rhat.is_finite())
        .unwrap();
    assert!(
        first.nested_rhat > 1.5,
        "starts far apart: {}",
        first.nested_rhat
    );
    let limit = s.nested_rhat_limit.unwrap();
    let below = outcome
        .series
        .iter()
        .find(|r| r.nested_rhat <= limit)
        .map(|r| r.step);
    eprintln!("below its limit {limit:.4} from step {below:?}");
    // "Within a few hundred steps", as convergence-gaussian and lesson-convergence say.
    assert!(below.is_some_and(|step| step <= 300), "{below:?}");
}

/// KSD: corrected ATMC on the Gaussian with strong gradient noise scores within its
/// exact-draw baseline; the printed thermostat overwrite (ξ forgets the noise level) runs hot
/// and scores twice the baseline, several of its standard deviations above it.
#[test]
fn ksd_separates_a_correct_sampler_from_the_thermostat_overwrite() {
    let mut p = shipped("default");
    p.target = atmc_lab::math::TargetSpec::from_name("gaussian").unwrap();
    // Strong gradient noise: the overwritten ξ forgets it and the chains run hot.
    p.noise = atmc_lab::math::NoiseSpec::Isotropic { sigma: 3.0 };
    p.chains = 2000;
    p.steps = 2000;
    let good = runner::run(&p, BackendChoice::Cpu, &mut |_| {})
        .unwrap()
        .summary;
    let mut bad_preset = p.clone();
    bad_preset.sampler.xi_update = atmc_lab::math::XiUpdate::Overwrite;
    let bad = runner::run(&bad_preset, BackendChoice::Cpu, &mut |_| {})
        .unwrap()
        .summary;
    eprintln!(
        "KSD: correct {:.4}, overwrite {:.4}, exact draws {:.4} ± {:.4}",
        good.ksd, bad.ksd, good.ksd_baseline, good.ksd_baseline_sd
    );
    assert!(good.ksd < good.ksd_baseline + 4.0 * good.ksd_baseline_sd);
    // Measured: correct 0.063, overwrite 0.134, exact draws 0.065 ± 0.013 (1000 points).
    assert!(bad.ksd > 2.0 * good.ksd_baseline);
    assert!(bad.ksd > good.ksd_baseline + 4.0 * good.ksd_baseline_sd);
    assert!(good.nested_rhat.is_none() && good.nested_rhat_note.is_none());
}

/// The exported draws open in ArviZ (through xarray's Zarr reader), and ArviZ's R-hat, bulk
/// and tail ESS and nested R-hat of them agree with atmc-lab's within 1 %. Runs
/// scripts/check_draws.py with the Python of the pinned virtual environment scripts/test
/// makes (`ATMC_ARVIZ_PYTHON`, else `~/.cache/atmc-lab/venv-arviz`); fails, never skips,
/// when it is missing.
#[test]
fn exported_draws_agree_with_arviz() {
    let python = std::env::var("ATMC_ARVIZ_PYTHON").unwrap_or_else(|_| {
        format!(
            "{}/.cache/atmc-lab/venv-arviz/bin/python",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    assert!(
        std::path::Path::new(&python).exists(),
        "no Python with ArviZ at {python}: run scripts/test (it makes the virtual environment \
         from scripts/requirements-arviz.txt) or set ATMC_ARVIZ_PYTHON"
    );
    let dir = crate::common::scratch("convergence", "arviz");
    let store = dir.join("draws.zarr");
    let run = gaussian_run(&[
        "--steps",
        "800",
        "--draw-chains",
        "64",
        "--draws",
        crate::common::s(&store),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("64 chains × 80 draws"), "{stderr}");
    let check = std::process::Command::new(&python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/check_draws.py"
        ))
        .arg(&store)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    eprintln!("{out}{}", String::from_utf8_lossy(&check.stderr));
    assert!(check.status.success(), "ArviZ disagrees:\n{out}");
    assert!(out.contains("rhat_nested[theta 1]"), "{out}");
}

/// `atmc-lab run convergence-gaussian` on 1600 chains of the CPU, with `extra` arguments.
fn gaussian_run(extra: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args([
            "run",
            "convergence-gaussian",
            "--backend",
            "cpu",
            "--chains",
            "1600",
        ])
        .args(extra)
        .output()
        .unwrap()
}

/// Bad requests for draws are refused before any work, with the reason.
#[test]
fn bad_draw_requests_are_refused_before_the_run() {
    let dir = crate::common::scratch("convergence", "bad-draws");
    let file = dir.join("a-file");
    std::fs::write(&file, "keep me").unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--draw-chains", "5000"], "more than the preset's"),
        (&["--draw-every", "1000"], "only 0 draws"),
        (&["--draw-chains", "0"], "at least 1"),
        (&["--draws", "/nonexistent-dir/x.zarr"], "does not exist"),
        (&["--draws", file.to_str().unwrap()], "is a file"),
    ];
    for (extra, expected) in cases {
        let store = dir.join("d.zarr");
        let mut args = vec!["--steps", "200"];
        if !extra.contains(&"--draws") {
            args.extend_from_slice(&["--draws", crate::common::s(&store)]);
        }
        args.extend_from_slice(extra);
        let out = gaussian_run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
        assert!(!stderr.contains("chain-steps/s"), "{extra:?} ran: {stderr}");
        assert!(!dir.join("d.zarr").exists(), "{extra:?} wrote draws");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    // Superchains that do not divide the chains are refused when the preset is read.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args([
            "run",
            "convergence-gaussian",
            "--chains",
            "1000",
            "--backend",
            "cpu",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("does not divide"), "{stderr}");
}
