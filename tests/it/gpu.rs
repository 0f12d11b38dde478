//! The GPU engine against its oracle, the CPU engine. These tests run on whatever adapter
//! wgpu finds (lavapipe in CI) and fail loudly when there is none: a skipped GPU test would
//! hide exactly the failures it exists to catch.

use crate::common;

use atmc_lab::engine::{Axis, Engine, HistogramSpec, cpu::CpuEngine};
use atmc_lab::math::{Grid2, SamplerKind, TargetSpec};
use common::preset;

use common::gpu_engine;

/// The largest deviation, relative to 1 + |CPU value|, of θ and of a second field (p or ξ)
/// between the CPU's chains `a` and the GPU's `b`, over both coordinates of every chain.
fn worst_relative_deviation(
    a: &[atmc_lab::math::Chain2],
    b: &[atmc_lab::math::Chain2],
    second: fn(&atmc_lab::math::Chain2) -> [f32; 2],
) -> f32 {
    let relative = |x: f32, y: f32| (x - y).abs() / (1.0 + x.abs());
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| {
            let (sx, sy) = (second(x), second(y));
            (0..2).map(move |c| relative(x.theta[c], y.theta[c]).max(relative(sx[c], sy[c])))
        })
        .fold(0.0f32, f32::max)
}

/// Same seed, same trajectories: 100 steps of corrected ATMC on the correlated Gaussian over
/// 10,000 chains agree to 1e-3 (the RNG streams agree bit for bit; only float rounding of
/// exp/log/sin/cos differs).
#[test]
fn gpu_trajectories_match_cpu() {
    let mut p = preset(SamplerKind::Atmc, "correlated", 3.0);
    p.chains = 10_000;
    let mut cpu = CpuEngine::new(common::model(&p), p.chains, &p.init, p.seed);
    let mut gpu = gpu_engine(&p);
    let start_cpu = cpu.read_chains(0, p.chains).unwrap();
    let start_gpu = gpu.read_chains(0, p.chains).unwrap();
    assert_eq!(start_cpu, start_gpu, "initial states differ");
    let rc = cpu.advance(100, &[]).unwrap();
    let rg = gpu.advance(100, &[]).unwrap();
    let a = cpu.read_chains(0, p.chains).unwrap();
    let b = gpu.read_chains(0, p.chains).unwrap();
    let mut worst = 0.0f32;
    for (x, y) in a.chains.iter().zip(&b.chains) {
        for c in 0..2 {
            worst = worst.max((x.theta[c] - y.theta[c]).abs());
            worst = worst.max((x.p[c] - y.p[c]).abs() / 10.0);
        }
    }
    eprintln!("max |θ_gpu − θ_cpu| (and |p_gpu − p_cpu|/10) after 100 steps: {worst:e}");
    assert!(worst <= 1e-3, "max |θ_gpu − θ_cpu| = {worst}");
    assert_eq!(a.diverged_at, b.diverged_at);
    assert_eq!(rc.moments.alive, rg.moments.alive);
    let (mc, mg) = (rc.moments.mean(), rg.moments.mean());
    assert!((mc[0] - mg[0]).abs() < 1e-4 && (mc[1] - mg[1]).abs() < 1e-4);
    assert!((rc.moments.kinetic_temperature() - rg.moments.kinetic_temperature()).abs() < 1e-4);
    assert!((rc.moments.mean_xi() - rg.moments.mean_xi()).abs() < 1e-4);
}

/// Every sampler and target (with printed switches and schedules) stays on the CPU's
/// trajectories for 50 steps.
#[test]
fn gpu_matches_cpu_for_every_sampler_and_target() {
    let mut problems = Vec::new();
    for (kind, name) in SamplerKind::ALL {
        for (target, _) in atmc_lab::math::targets::TARGET_NAMES {
            let mut p = preset(kind, target, 0.5);
            p.chains = 1000;
            p.sampler.h = 0.01;
            p.sampler.sgnht_shared_xi = name == "sgnht";
            if *target == "banana" {
                p.sampler.kinetic = atmc_lab::math::Kinetic::Hyperbolic { c: 2.0 };
                p.sampler.xi_update = atmc_lab::math::XiUpdate::Overwrite;
            }
            if *target == "donut" {
                p.schedule = atmc_lab::math::ScheduleSpec::Cyclical {
                    total_steps: 50,
                    cycles: 2,
                    explore_fraction: 0.5,
                    thermostat_while_exploring: atmc_lab::math::ExploringThermostat::Frozen,
                };
                p.noise = atmc_lab::math::NoiseSpec::StateDependent {
                    sigma: 0.5,
                    kappa: 0.3,
                };
            }
            let mut cpu = CpuEngine::new(common::model(&p), p.chains, &p.init, p.seed);
            let mut gpu = gpu_engine(&p);
            cpu.advance(50, &[]).unwrap();
            gpu.advance(50, &[]).unwrap();
            let a = cpu.read_chains(0, p.chains).unwrap();
            let b = gpu.read_chains(0, p.chains).unwrap();
            let mut worst = 0.0f32;
            for (x, y) in a.chains.iter().zip(&b.chains).zip(&a.diverged_at) {
                let ((x, y), d) = (x, y);
                if *d != 0 {
                    continue;
                }
                for c in 0..2 {
                    let scale = 1.0 + x.theta[c].abs();
                    worst = worst.max((x.theta[c] - y.theta[c]).abs() / scale);
                    worst = worst.max((x.xi[c] - y.xi[c]).abs() / (1.0 + x.xi[c].abs()));
                }
            }
            if worst > 1e-3 || a.diverged_at != b.diverged_at {
                problems.push(format!(
                    "{name} on {target}: worst relative deviation {worst}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The switch "thermostat while exploring: running" (MATH.md §3.1) reaches the WGSL: ATMC and
/// SGNHT under a cyclical schedule with the thermostat left running stay on the CPU's
/// trajectories (ξ included) over three cycles, and their ξ differs from the frozen run's, so
/// a GPU that ignored the switch would fail.
#[test]
fn gpu_matches_cpu_with_the_thermostat_running_while_exploring() {
    use atmc_lab::math::{ExploringThermostat, ScheduleSpec};
    let mut problems = Vec::new();
    for kind in [SamplerKind::Atmc, SamplerKind::Sgnht] {
        let mut xi_means = Vec::new();
        for thermostat_while_exploring in
            [ExploringThermostat::Running, ExploringThermostat::Frozen]
        {
            let mut p = preset(kind, "gaussian", 1.0);
            p.chains = 1000;
            p.sampler.h = 0.05;
            p.schedule = ScheduleSpec::Cyclical {
                total_steps: 90,
                cycles: 3,
                explore_fraction: 0.5,
                thermostat_while_exploring,
            };
            let mut cpu = CpuEngine::new(common::model(&p), p.chains, &p.init, p.seed);
            let mut gpu = gpu_engine(&p);
            cpu.advance(90, &[]).unwrap();
            gpu.advance(90, &[]).unwrap();
            let a = cpu.read_chains(0, p.chains).unwrap();
            let b = gpu.read_chains(0, p.chains).unwrap();
            let worst = worst_relative_deviation(&a.chains, &b.chains, |c| c.xi);
            if worst > 1e-3 || a.diverged_at != b.diverged_at {
                problems.push(format!(
                    "{kind:?}, thermostat {thermostat_while_exploring:?}: worst relative deviation {worst}"
                ));
            }
            let mean_xi = |chains: &[atmc_lab::math::Chain2]| {
                chains
                    .iter()
                    .map(|c| f64::from(c.xi[0] + c.xi[1]))
                    .sum::<f64>()
                    / (2 * chains.len()) as f64
            };
            xi_means.push((mean_xi(&a.chains), mean_xi(&b.chains)));
        }
        let ((running_cpu, running_gpu), (frozen_cpu, frozen_gpu)) = (xi_means[0], xi_means[1]);
        eprintln!(
            "{kind:?} mean ξ after 3 cycles: running CPU {running_cpu:.4} GPU {running_gpu:.4}, \
             frozen CPU {frozen_cpu:.4} GPU {frozen_gpu:.4}"
        );
        if running_gpu <= frozen_gpu + 0.1 {
            problems.push(format!(
                "{kind:?}: the running thermostat's ξ {running_gpu} is not above the frozen one's {frozen_gpu} on the GPU"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// One GPU engine follows live changes of the features its pipelines are specialised on
/// (gradient noise, hyperbolic kinetic energy, overwritten thermostat, cyclical schedule: each
/// compiled out when off), switching each on and off again, in step with the CPU engine.
#[test]
fn gpu_follows_live_changes_of_every_specialised_feature() {
    use atmc_lab::math::{Kinetic, NoiseSpec, ScheduleSpec, XiUpdate};
    let mut p = preset(SamplerKind::Atmc, "gaussian", 0.0);
    p.chains = 2000;
    p.sampler.h = 0.01;
    let mut cpu = CpuEngine::new(common::model(&p), p.chains, &p.init, p.seed);
    let mut gpu = gpu_engine(&p);
    let plain = p.clone();
    type Change = fn(&mut atmc_lab::preset::Preset);
    let changes: [(&str, Change); 4] = [
        ("gradient noise", |p| {
            p.noise = NoiseSpec::Isotropic { sigma: 1.0 };
        }),
        ("hyperbolic kinetic energy", |p| {
            p.sampler.kinetic = Kinetic::Hyperbolic { c: 2.0 };
        }),
        ("overwritten thermostat", |p| {
            p.sampler.xi_update = XiUpdate::Overwrite;
        }),
        ("cyclical schedule", |p| {
            p.schedule = ScheduleSpec::Cyclical {
                total_steps: 40,
                cycles: 2,
                explore_fraction: 0.5,
                thermostat_while_exploring: atmc_lab::math::ExploringThermostat::Frozen,
            };
        }),
    ];
    let mut problems = Vec::new();
    for (name, change) in changes {
        for on in [true, false] {
            let mut q = plain.clone();
            if on {
                change(&mut q);
            }
            cpu.set_model(common::model(&q));
            gpu.set_model(common::model(&q));
            cpu.advance(20, &[]).unwrap();
            gpu.advance(20, &[]).unwrap();
            let a = cpu.read_chains(0, p.chains).unwrap();
            let b = gpu.read_chains(0, p.chains).unwrap();
            let worst = worst_relative_deviation(&a.chains, &b.chains, |c| c.p);
            if worst > 1e-3 {
                problems.push(format!(
                    "{name} {}: worst relative deviation {worst}",
                    if on { "on" } else { "off again" }
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// GPU histograms of (θ₁, θ₂), (θ₂, p₂) and (p₂, ξ₂) equal the CPU's binning of the
/// read-back state exactly (same bin rule), and the CPU engine's own histograms too.
#[test]
fn gpu_histograms_equal_cpu_binning_of_read_back_state() {
    let mut p = preset(SamplerKind::Atmc, "banana", 1.0);
    p.chains = 50_000;
    let mut gpu = gpu_engine(&p);
    let mut cpu = CpuEngine::new(common::model(&p), p.chains, &p.init, p.seed);
    let grid = TargetSpec::from_name("banana")
        .unwrap()
        .build()
        .unwrap()
        .default_grid();
    let specs = [
        HistogramSpec::theta(grid),
        HistogramSpec {
            grid: Grid2::new([-3.0, 3.0], [-3.0, 3.0], 50, 40),
            axes: [Axis::Theta(1), Axis::P(1)],
        },
        HistogramSpec {
            grid: Grid2::new([-3.0, 3.0], [-1.0, 2.0], 30, 30),
            axes: [Axis::P(1), Axis::Xi(1)],
        },
    ];
    let report = gpu.advance(30, &specs).unwrap();
    let cpu_report = cpu.advance(30, &specs).unwrap();
    let state = gpu.read_chains(0, p.chains).unwrap();
    assert_eq!(report.histograms.len(), 3);
    for (spec, (counts, outside)) in specs.iter().zip(&report.histograms) {
        let (cpu_counts, cpu_outside) = spec.bin(&state.chains, &state.diverged_at);
        assert_eq!(counts, &cpu_counts, "{:?}", spec.axes);
        assert_eq!(*outside, cpu_outside);
        assert_eq!(
            counts.iter().map(|&c| u64::from(c)).sum::<u64>() + outside,
            50_000
        );
    }
    // The CPU engine bins its own state with the same rule.
    let cpu_state = cpu.read_chains(0, p.chains).unwrap();
    for (spec, h) in specs.iter().zip(&cpu_report.histograms) {
        assert_eq!(h, &spec.bin(&cpu_state.chains, &cpu_state.diverged_at));
    }
}

/// The printed friction sign explodes on the GPU as on the CPU, and diverged chains stay
/// frozen and excluded.
#[test]
fn gpu_freezes_diverged_chains() {
    let mut p = preset(SamplerKind::Atmc, "gaussian", 0.0);
    p.sampler.friction_sign = -1.0;
    p.chains = 4096;
    let mut gpu = gpu_engine(&p);
    let r = gpu.advance(200, &[]).unwrap();
    assert!(
        r.moments.diverged as f64 >= 0.99 * 4096.0,
        "{}",
        r.moments.diverged
    );
    let before = gpu.read_chains(0, 4096).unwrap();
    let r2 = gpu.advance(50, &[]).unwrap();
    let after = gpu.read_chains(0, 4096).unwrap();
    assert_eq!(r2.moments.diverged, r.moments.diverged);
    for ((a, b), d) in before
        .chains
        .iter()
        .zip(&after.chains)
        .zip(&before.diverged_at)
    {
        if *d != 0 {
            assert!(
                a.theta
                    .iter()
                    .zip(&b.theta)
                    .all(|(x, y)| x.to_bits() == y.to_bits())
            );
        }
    }
}

/// Non-finite values are recognised from their bit pattern in WGSL (MATH.md §2): ±inf and
/// NaNs of any payload are not finite, the largest finite and the subnormal values are.
#[test]
fn wgsl_is_finite_reads_the_bit_pattern() {
    // `is_finite` is in shaders/common.wgsl, part of every program's prelude; the sphere's
    // declares no override constant that the check's pipeline would have to set.
    let library = atmc_lab::engine::shader_interface::prelude(
        atmc_lab::engine::shader_interface::Program::Sphere,
    );
    let entry =
        "fn check(bits: u32) -> u32 { return select(0u, 1u, is_finite(bitcast<f32>(bits))); }";
    let values = [
        0.0f32,
        -0.0,
        1.0,
        f32::MIN,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
    ];
    let mut bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
    bits.push(0x7fc0_0001); // a quiet NaN with a payload
    bits.push(0x7f80_0001); // a signalling NaN
    let out = common::run_wgsl_check(&library, entry, &bits);
    for (b, o) in bits.iter().zip(&out) {
        let v = f32::from_bits(*b);
        assert_eq!(*o == 1, v.is_finite(), "{v} ({b:#010x})");
    }
}

/// Chains planted with ±inf or NaN in θ, p or ξ diverge at their first step on the GPU
/// exactly as on the CPU; the others do not.
#[test]
fn gpu_detects_planted_non_finite_chains() {
    use atmc_lab::engine::ChainStates;
    use atmc_lab::math::Chain2;
    let mut p = preset(SamplerKind::Atmc, "gaussian", 0.0);
    p.chains = 64;
    let mut planted = Vec::new();
    for (field, value) in [
        (0, f32::INFINITY),
        (0, f32::NAN),
        (1, f32::NEG_INFINITY),
        (1, f32::NAN),
        (2, f32::INFINITY),
        (2, f32::NAN),
    ] {
        let mut c = Chain2 {
            theta: [0.1, -0.2],
            p: [0.3, 0.4],
            xi: [0.0, 0.0],
        };
        match field {
            0 => c.theta[1] = value,
            1 => c.p[0] = value,
            _ => c.xi[1] = value,
        }
        planted.push(c);
    }
    let states = ChainStates {
        diverged_at: vec![0; planted.len()],
        chains: planted.clone(),
    };
    let mut gpu = gpu_engine(&p);
    let mut cpu = CpuEngine::new(common::model(&p), p.chains, &p.init, p.seed);
    for engine in [&mut gpu as &mut dyn Engine, &mut cpu] {
        engine.write_chains(10, &states).unwrap();
        let report = engine.advance(1, &[]).unwrap();
        let after = engine.read_chains(0, p.chains).unwrap();
        for (i, d) in after.diverged_at.iter().enumerate() {
            let expected = u32::from((10..10 + planted.len()).contains(&i));
            assert_eq!(*d, expected, "{}: chain {i}", engine.backend().kind);
        }
        assert_eq!(report.moments.diverged, planted.len() as u64);
    }
}

/// The sphere engine's WGSL twin draws the same minibatches as the f64 oracle: after 300
/// steps of projected SGD with momentum and batch 2 on the UP problem, 4,096 chains sit within
/// 1e-5 of their CPU positions (float rounding only), and the OP problem collapses onto the
/// poles on both.
#[test]
fn gpu_sphere_chains_match_the_cpu_oracle() {
    use atmc_lab::engine::BackendChoice;
    use atmc_lab::engine::sphere::create_sphere_engine;
    use atmc_lab::math::sphere::{SphereOptimizer, SphereProblem};
    let opt = SphereOptimizer {
        h: 0.1,
        momentum: 0.5,
        batch: 2,
    };
    for (problem, steps) in [
        (SphereProblem::Underparameterised, 300),
        (SphereProblem::Overparameterised, 2000),
    ] {
        let engine = |choice| {
            create_sphere_engine(choice, problem, opt, 4096, 11)
                .unwrap_or_else(|e| panic!("no usable GPU adapter: {e:#}"))
                .0
        };
        let (mut cpu, mut gpu) = (engine(BackendChoice::Cpu), engine(BackendChoice::Gpu));
        assert_eq!(gpu.backend().kind, "gpu");
        // Split differently: dispatch boundaries must not matter.
        cpu.advance(steps).unwrap();
        gpu.advance(steps / 3).unwrap();
        gpu.advance(steps - steps / 3).unwrap();
        assert_eq!(gpu.steps_done(), steps);
        let (a, b) = (cpu.positions().unwrap(), gpu.positions().unwrap());
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| x.distance(*y))
            .fold(0.0f64, f64::max);
        eprintln!("{problem:?}: max |x_gpu − x_cpu| after {steps} steps: {worst:e}");
        assert!(worst < 1e-5, "{problem:?}: {worst}");
        if problem == SphereProblem::Overparameterised {
            for x in &b {
                assert!(x.z.abs() > 0.999, "an OP chain off the poles: {x}");
            }
        }
    }
}

/// The superchains' moments (nested R̂ over all chains) reduced on the GPU agree with the CPU
/// engine's (the same lanes and tree, f32 there, f64 here), diverged chains left out of their
/// superchain; and nested R̂ from them agrees.
#[test]
fn gpu_superchain_moments_match_cpu() {
    use atmc_lab::diagnostics::nested::nested_rhat_of_moments;
    let mut p = preset(SamplerKind::Atmc, "gmm25", 1.0);
    p.chains = 12_288; // not a multiple of the 256 lanes per superchain: ragged lanes
    p.init.scale = 6.0;
    p.init.uniform = true;
    p.init.superchains = Some(16);
    let mut cpu = CpuEngine::new(common::model(&p), p.chains, &p.init, p.seed);
    let mut gpu = gpu_engine(&p);
    // A few planted diverged chains in different superchains.
    for engine in [&mut cpu as &mut dyn Engine, &mut gpu] {
        let mut head = engine.read_chains(0, 40).unwrap();
        for i in [3, 17, 18, 35] {
            head.diverged_at[i] = 1;
        }
        engine.write_chains(0, &head).unwrap();
    }
    let (rc, rg) = (cpu.advance(20, &[]).unwrap(), gpu.advance(20, &[]).unwrap());
    assert_eq!(rc.superchains.len(), 16);
    assert_eq!(rg.superchains.len(), 16);
    for (k, (c, g)) in rc.superchains.iter().zip(&rg.superchains).enumerate() {
        assert_eq!(c.alive, g.alive, "superchain {k}");
        for j in 0..2 {
            assert!(
                (c.mean[j] - g.mean[j]).abs() < 1e-3,
                "superchain {k}: {c:?} {g:?}"
            );
            let rel = (c.centred_sq[j] - g.centred_sq[j]).abs() / c.centred_sq[j];
            assert!(rel < 1e-3, "superchain {k}: {c:?} {g:?}");
        }
    }
    // Chains 3 and 35 are in superchain 3, 17 in 1, 18 in 2 (chain i in superchain i mod 16).
    assert_eq!(rc.superchains[3].alive, 768 - 2);
    assert_eq!(rc.superchains[1].alive, 768 - 1);
    assert_eq!(rc.superchains[2].alive, 768 - 1);
    assert_eq!(rc.superchains[0].alive, 768);
    let (nc, ng) = (
        nested_rhat_of_moments(&rc.superchains).unwrap(),
        nested_rhat_of_moments(&rg.superchains).unwrap(),
    );
    assert!((nc - ng).abs() < 1e-4 * nc, "{nc} {ng}");
    // 20 steps from 16 starts spread over the plane: the superchains remember them.
    assert!(nc > 1.1, "{nc}");
}
