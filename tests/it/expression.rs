//! Expression targets (docs/MATH.md §9) against the built-in targets they retype, and the GPU
//! engine against the CPU on formulas: same seed, same trajectories.

use crate::common;

use atmc_lab::engine::{Engine, cpu::CpuEngine};
use atmc_lab::math::{SamplerKind, Target, TargetSpec};
use atmc_lab::preset::Preset;
use common::preset;
use std::collections::BTreeMap;

fn expression(energy: &str, params: &[(&str, f64)]) -> TargetSpec {
    TargetSpec::Expression {
        energy: energy.into(),
        parameters: params
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect::<BTreeMap<_, _>>(),
        bounds: None,
        ranges: BTreeMap::new(),
    }
}

/// Built-in targets (by name) and the same energies typed as formulas.
fn retyped() -> Vec<(&'static str, TargetSpec)> {
    vec![
        ("gaussian", expression("(x^2 + y^2)/2", &[])),
        (
            "correlated",
            expression("(x^2 - 2*r*x*y + y^2)/(2*(1 - r^2))", &[("r", 0.8)]),
        ),
        (
            "banana",
            expression(
                "θ₁^2/(2*a^2) + (θ₂ - b*(θ₁^2 - a^2))^2/(2*s^2)",
                &[("a", 1.0), ("b", 0.5), ("s", 0.5)],
            ),
        ),
        (
            "donut",
            expression(
                "(sqrt(x^2 + y^2) - r)^2/(2*w^2)",
                &[("r", 2.0), ("w", 0.25)],
            ),
        ),
        (
            "funnel",
            expression("y^2/(2*sv^2) + x^2*exp(-y)/2 + y/2", &[("sv", 3.0)]),
        ),
    ]
}

fn worst_gap(a: &Preset, b: &Preset, steps: u32) -> f32 {
    let mut ea = CpuEngine::new(common::model(a), a.chains, &a.init, a.seed);
    let mut eb = CpuEngine::new(common::model(b), b.chains, &b.init, b.seed);
    ea.advance(steps, &[]).unwrap();
    eb.advance(steps, &[]).unwrap();
    let sa = ea.read_chains(0, a.chains).unwrap();
    let sb = eb.read_chains(0, b.chains).unwrap();
    assert_eq!(sa.diverged_at, sb.diverged_at);
    let mut worst = 0.0f32;
    for (x, y) in sa.chains.iter().zip(&sb.chains) {
        for c in 0..2 {
            worst = worst.max((x.theta[c] - y.theta[c]).abs() / (1.0 + x.theta[c].abs()));
        }
    }
    worst
}

/// With the same seed, a formula for the Gaussian, correlated Gaussian, banana, donut and
/// funnel follows the built-in target's trajectories up to float rounding (ATMC with gradient
/// noise, 2000 chains, 60 steps), and its truth (normaliser, mean, covariance) agrees.
#[test]
fn formulas_follow_the_built_in_targets() {
    for (name, spec) in retyped() {
        let mut builtin = preset(SamplerKind::Atmc, name, 1.0);
        builtin.chains = 2000;
        let mut typed = builtin.clone();
        typed.target = spec;
        typed.validate().unwrap();
        let gap = worst_gap(&builtin, &typed, 60);
        eprintln!("{name}: worst relative gap {gap:e}");
        assert!(gap < 1e-3, "{name}: trajectories differ by {gap}");

        let (b, t) = (
            builtin.target.build().unwrap(),
            typed.target.build().unwrap(),
        );
        let (lb, lt) = (b.log_normaliser().unwrap(), t.log_normaliser().unwrap());
        eprintln!("{name}: log Z {lb} vs {lt}");
        assert!((lb - lt).abs() < 2e-3, "{name}: log Z {lb} vs {lt}");
        let (mb, cb) = b.moments();
        let (mt, ct) = t.moments();
        eprintln!("{name}: moments {mb:?} {cb:?} vs {mt:?} {ct:?}");
        let sd = [cb[0].sqrt(), cb[2].sqrt()];
        for c in 0..2 {
            assert!(
                (mb[c] - mt[c]).abs() < 0.02 * sd[c],
                "{name}: mean {mb:?} vs {mt:?}"
            );
        }
        if name == "funnel" {
            // Var θ₁ = e^{σ²/2} = 90 lives in tails far beyond the truth's box (40.7 within
            // it): the moments come from a box grown until they settle (docs/MATH.md §9,
            // *Beyond the box*), to the tolerance of 1 % plus the strips' quadrature.
            for k in [0, 2] {
                assert!(
                    (ct[k] / cb[k] - 1.0).abs() < 0.02,
                    "{name}: {cb:?} vs {ct:?}"
                );
            }
            // The neck: the mass with θ₂ < −6 (where the neck is narrower than 0.05, far
            // below a cell) is Φ(−2) = 0.0228 for σ_v = 3.
            let grid = t.default_grid().with_resolution(64, 64);
            let (m, _) = t.cell_masses(&grid);
            let [_, dv] = grid.cell_size();
            let mut below = 0.0;
            for (i, mass) in m.iter().enumerate() {
                let v = grid.y[0] + ((i / 64) as f64 + 1.0) * dv;
                if v <= -6.0 {
                    below += mass;
                } else if v - dv < -6.0 {
                    below += mass * (-6.0 - (v - dv)) / dv;
                }
            }
            eprintln!("funnel: mass below v = −6: {below}");
            assert!((below - 0.02275).abs() < 1.5e-3, "funnel neck mass {below}");
        } else {
            for k in [0, 2] {
                assert!(
                    (ct[k] / cb[k] - 1.0).abs() < 0.01,
                    "{name}: {cb:?} vs {ct:?}"
                );
            }
            assert!(
                (ct[1] - cb[1]).abs() < 0.01 * sd[0] * sd[1],
                "{name}: {cb:?} vs {ct:?}"
            );
        }
        // Exact samples agree with the grid's moments.
        let s = t.exact_samples(100_000, 3);
        let n = (s.len() / 2) as f64;
        let m1 = s.iter().skip(1).step_by(2).sum::<f64>() / n;
        assert!(
            (m1 - mt[1]).abs() < 0.03 * sd[1] + 0.01,
            "{name}: sample mean {m1} vs {mt:?}"
        );
    }
}

/// Refusals before any work, with a message that says why; a preset carrying one does not
/// load.
#[test]
fn bad_formulas_are_refused_with_reasons() {
    for (energy, why) in [
        ("θ₁ + θ₂", "not normalisable"),
        ("-log(θ₁)", "NaN"),
        ("x^2 + foo", "unknown symbol 'foo'"),
        ("(x^2 + y^2", "')'"),
    ] {
        let e = expression(energy, &[]).check().unwrap_err();
        assert!(e.contains(why), "{energy}: {e}");
    }
    let e = expression("exp*x^2 + y^2", &[("exp", 1.0)])
        .check()
        .unwrap_err();
    assert!(e.contains("named like a function"), "{e}");
    let text = "Preset(name: \"t\", description: \"\", sampler: (kind: Sgld, h: 0.01), \
                target: Expression(energy: \"θ₁ + θ₂\"), chains: 10, steps: 10)";
    let e = Preset::parse(text, "test.ron").unwrap_err();
    assert!(e.message.contains("not normalisable"), "{e}");
}

/// Every gallery preset loads, and its target has truth.
#[test]
fn gallery_presets_load() {
    for name in [
        "expr-ring8",
        "expr-funnel",
        "expr-himmelblau",
        "expr-double-banana",
        "expr-sombrero",
    ] {
        let p = Preset::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let t = p.target.build().unwrap();
        let grid = t.default_grid();
        let (m, _) = t.cell_masses(&grid);
        let inside: f64 = m.iter().sum();
        assert!((inside - 1.0).abs() < 2e-3, "{name}: {inside}");
        assert!(matches!(t, Target::Expression(_)));
    }
}

/// The GPU runs the formula's generated WGSL: trajectories match the CPU's for five formulas
/// (a logsumexp mixture among them) within the tolerance of the built-in targets, and a
/// parameter change reuses the pipeline.
#[test]
fn gpu_matches_cpu_on_formulas() {
    for spec in engine_formulas() {
        let mut p = preset(SamplerKind::Atmc, "gaussian", 0.5);
        p.chains = 1000;
        p.sampler.h = 0.02;
        p.target = spec.clone();
        p.validate().unwrap();
        let mut cpu = common::cpu_engine(&p);
        let mut gpu = common::gpu_engine(&p);
        for round in 0..2 {
            cpu.advance(50, &[]).unwrap();
            gpu.advance(50, &[]).unwrap();
            let a = cpu.read_chains(0, p.chains).unwrap();
            let b = gpu.read_chains(0, p.chains).unwrap();
            let mut worst = 0.0f32;
            for (x, y) in a.chains.iter().zip(&b.chains) {
                for c in 0..2 {
                    worst = worst.max((x.theta[c] - y.theta[c]).abs() / (1.0 + x.theta[c].abs()));
                }
            }
            eprintln!("{spec:?} round {round}: worst gap {worst:e}");
            assert!(worst <= 1e-3, "{spec:?}: GPU and CPU differ by {worst}");
            assert_eq!(a.diverged_at, b.diverged_at);
            // A new parameter value: live, without a new pipeline.
            if let TargetSpec::Expression { parameters, .. } = &mut p.target
                && let Some(v) = parameters.values_mut().next()
            {
                *v *= 1.1;
            }
            p.validate().unwrap();
            cpu.set_model(common::model(&p));
            gpu.set_model(common::model(&p));
        }
    }
}

/// HMC on typed formulas: the GPU's generated `expression_energy` (f32) takes the same
/// Metropolis decisions as the CPU's f64 energy for all but a rare chain whose ΔH sits at the
/// threshold, and on the typed banana the pooled moments match the formula's own
/// (box-restricted) truth.
#[test]
fn hmc_runs_typed_formulas_on_both_engines() {
    for spec in engine_formulas() {
        let mut p = preset(SamplerKind::Hmc, "gaussian", 0.0);
        p.chains = 1000;
        // Large enough that many proposals are rejected: the decisions are what is compared.
        p.sampler.h = 0.5;
        p.target = spec.clone();
        p.validate().unwrap();
        let mut cpu = common::cpu_engine(&p);
        let mut gpu = common::gpu_engine(&p);
        // One proposal from the same starts: where h makes a trajectory unstable, f32
        // rounding grows along it, and a flipped decision is never recovered from.
        cpu.advance(1, &[]).unwrap();
        gpu.advance(1, &[]).unwrap();
        let a = cpu.read_chains(0, p.chains).unwrap();
        let b = gpu.read_chains(0, p.chains).unwrap();
        let same = a
            .chains
            .iter()
            .zip(&b.chains)
            .filter(|(x, y)| {
                (0..2).all(|c| (x.theta[c] - y.theta[c]).abs() <= 1e-3 * (1.0 + x.theta[c].abs()))
            })
            .count();
        let accepted = |s: &[atmc_lab::math::Chain2]| s.iter().filter(|c| c.xi[0] == 1.0).count();
        eprintln!(
            "{spec:?}: {same} of {} chains agree; accepted at the last step {} (CPU) {} (GPU)",
            p.chains,
            accepted(&a.chains),
            accepted(&b.chains)
        );
        assert!(
            same >= 995,
            "{spec:?}: only {same} of 1000 chains agree (1,000 of 1,000 measured)"
        );
        let rejected = p.chains as usize - accepted(&a.chains);
        assert!(
            rejected > 30,
            "{spec:?}: only {rejected} rejections to compare"
        );
    }
    let mut p = preset(SamplerKind::Hmc, "gaussian", 0.0);
    p.target = retyped().remove(2).1;
    p.chains = 4_000;
    p.steps = 600;
    p.sampler.h = 0.1;
    let s = common::run(&p, atmc_lab::engine::BackendChoice::Cpu).summary;
    for c in 0..2 {
        common::assert_rel("typed banana Var", s.cov[c][c], s.true_cov[c][c], 0.04);
    }
}

/// Typed energies with every kind of operation, for comparing the engines.
fn engine_formulas() -> [TargetSpec; 5] {
    [
        expression("(x^2 - 2*r*x*y + y^2)/(2*(1 - r^2))", &[("r", 0.8)]),
        expression(
            "θ₁^2/(2*a^2) + (θ₂ - b*(θ₁^2 - a^2))^2/(2*s^2)",
            &[("a", 1.0), ("b", 0.5), ("s", 0.5)],
        ),
        expression(
            "-logsumexp(-((x-2)^2 + y^2)/0.5, -((x+2)^2 + y^2)/0.5, -(x^2 + (y-2)^2)/0.5) + log1p(y^2)/10",
            &[],
        ),
        expression(
            "(x^2 + y^2 - r^2)^2/4 + tanh(x)*0.5 + abs(y)*0.1",
            &[("r", 2.0)],
        ),
        expression(
            "y^2/(2*sv^2) + x^2*exp(-y)/2 + y/2 + sinh(x/4)^2 + max(x, y)/10 - min(x, 0)/10",
            &[("sv", 1.5)],
        ),
    ]
}
