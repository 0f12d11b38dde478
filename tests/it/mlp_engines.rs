//! The MLP engines: the GPU engine against its oracle, the CPU engine, for gradients,
//! trajectories and predictions. GPU tests run on whatever adapter wgpu finds (lavapipe in
//! CI) and fail loudly when there is none.

use crate::common;
use atmc_lab::engine::mlp::gpu::{MlpGpuEngine, MlpKernel};
use atmc_lab::engine::mlp::{MlpCpuEngine, MlpEngine};
use atmc_lab::math::mlp::{Activation, MlpInit, MlpModel, MlpSpec, Workspace};
use atmc_lab::math::{DataSource, DataSpec, RngCounter, SamplerKind, SamplerSpec, ScheduleSpec};

fn model(kind: SamplerKind, activation: Activation, batch: u32) -> MlpModel {
    model_of(kind, activation, &[16, 16], batch, 120)
}

/// A network of `hidden` units on `points` two-moons points (three quarters for training).
fn model_of(
    kind: SamplerKind,
    activation: Activation,
    hidden: &[u32],
    batch: u32,
    points: u32,
) -> MlpModel {
    let spec = MlpSpec {
        data: DataSpec {
            source: DataSource::TwoMoons,
            points,
            noise: 0.2,
            test_fraction: 0.25,
            seed: 4,
        },
        hidden: hidden.to_vec(),
        activation,
        prior_scale: 1.0,
        batch_size: batch,
        data_used: None,
    };
    let (posterior, _) = atmc_lab::preset::data::build_network(&spec).expect("two moons");
    let mut sampler = SamplerSpec::new(kind);
    // SGLD moves θ by h·g̃ directly (the others by ~h²): a smaller h keeps the comparison
    // away from the chaotic regime where f32 rounding grows.
    sampler.h = if kind == SamplerKind::Sgld {
        0.002
    } else {
        0.01
    };
    MlpModel {
        sampler: sampler.params(),
        schedule: ScheduleSpec::Constant.schedule(),
        posterior,
    }
}

fn gpu(model: MlpModel, chains: u32) -> MlpGpuEngine {
    MlpGpuEngine::with_context(common::gpu().clone(), model, chains, &MlpInit::default(), 7)
        .expect("engine")
}

/// A GPU engine with the gradient kernel `kernel` (seed 7).
fn gpu_with(model: MlpModel, chains: u32, kernel: MlpKernel) -> MlpGpuEngine {
    let ctx = common::gpu().clone();
    MlpGpuEngine::with_kernel(ctx, model, chains, &MlpInit::default(), 7, kernel).expect("engine")
}

/// Largest |a − b| relative to max(|b|, floor · max|b|) over all entries.
fn worst_relative(a: &[f32], b: &[f32], floor: f32) -> f32 {
    let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / y.abs().max(floor * scale))
        .fold(0.0, f32::max)
}

/// Both gradient kernels against the CPU engine's batched gradient.
#[test]
fn gpu_gradients_match_cpu() {
    for (kernel, activation) in [MlpKernel::PerNetwork, MlpKernel::PerChain]
        .into_iter()
        .flat_map(|k| Activation::ALL.map(|a| (k, a)))
    {
        for batch in [0, 16] {
            let m = model(SamplerKind::Atmc, activation, batch);
            let chains = 256;
            let mut cpu = MlpCpuEngine::new(m.clone(), chains, &MlpInit::default(), 7);
            let mut gpu = gpu_with(m, chains, kernel);
            assert_eq!(
                cpu.read_weights(0, chains).unwrap(),
                gpu.read_weights(0, chains).unwrap(),
                "initial weights differ"
            );
            let a = gpu.gradients().unwrap();
            let b = cpu.gradients().unwrap();
            // Relative to each entry, with a floor of 1e-3 of the largest gradient where an
            // entry is a sum that cancels to almost nothing.
            let worst = worst_relative(&a, &b, 1e-3);
            println!(
                "{kernel:?} {activation:?}, batch {batch}: max relative gradient error {worst:.2e}"
            );
            assert!(
                worst <= 1e-4,
                "{kernel:?} {activation:?}, batch {batch}: {worst:e}"
            );
        }
    }
}

/// The per-network kernel against its Rust twin, `stochastic_gradient_per_example` (the same
/// running sum over the minibatch slots for every entry; MATH.md §7), for every activation,
/// depth 1–3, full batches and minibatches. 450 training points: every batch spans several
/// tiles of `MLP_NET_WORKGROUP` examples, and the deep network's full batch two dispatches.
#[test]
fn per_network_gradients_follow_their_twin() {
    for activation in Activation::ALL {
        for hidden in [&[16u32][..], &[16, 5], &[32, 32, 32]] {
            for batch in [0, 37, 200] {
                let m = model_of(SamplerKind::Atmc, activation, hidden, batch, 600);
                let chains = 24;
                let mut gpu = gpu_with(m.clone(), chains, MlpKernel::PerNetwork);
                let theta = gpu.read_weights(0, chains).unwrap();
                let a = gpu.gradients().unwrap();
                let post = &m.posterior;
                let params = post.params();
                let mut b = vec![0.0; a.len()];
                let mut ws = Workspace::default();
                for (chain, (g, t)) in b
                    .chunks_exact_mut(params)
                    .zip(theta.chunks_exact(params))
                    .enumerate()
                {
                    let rng = RngCounter::new(7, chain as u32, 0);
                    post.stochastic_gradient_per_example(t, &rng, &mut ws, g);
                }
                // Relative to the largest entry (a floor of all of it).
                let worst = worst_relative(&a, &b, 1.0);
                println!("{activation:?} {hidden:?} batch {batch}: {worst:.2e}");
                assert!(
                    worst <= 2e-6,
                    "{activation:?} {hidden:?} batch {batch}: {worst:e}"
                );
            }
        }
    }
}

/// The per-network kernel's full-batch gradient against central differences of L(θ), for
/// every activation and depth 1–3 (as `analytic_gradient_matches_finite_differences` checks
/// the CPU's), skipping parameters whose ±ε moves a ReLU or SELU unit across its kink.
#[test]
fn per_network_gradients_match_finite_differences() {
    for activation in Activation::ALL {
        for hidden in [&[8u32][..], &[8, 6], &[6, 5, 4]] {
            let m = model_of(SamplerKind::Atmc, activation, hidden, 0, 60);
            let chains = 2;
            let mut gpu = gpu_with(m.clone(), chains, MlpKernel::PerNetwork);
            let theta = gpu.read_weights(0, chains).unwrap();
            let grad = gpu.gradients().unwrap();
            let post = &m.posterior;
            let params = post.params();
            // ReLU's kinks, and SELU's in its derivative, want a small step (fewer meet one).
            let eps = if activation == Activation::Tanh {
                1e-2f32
            } else {
                1e-3
            };
            let (mut worst, mut kinks) = (0.0f64, 0);
            for (t, g) in theta.chunks_exact(params).zip(grad.chunks_exact(params)) {
                let scale = g.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                for i in 0..params {
                    let (mut plus, mut minus) = (t.to_vec(), t.to_vec());
                    plus[i] += eps;
                    minus[i] -= eps;
                    if activation != Activation::Tanh
                        && post.hidden_signs(&plus) != post.hidden_signs(&minus)
                    {
                        kinks += 1;
                        continue;
                    }
                    let fd = (post.neg_log_posterior(&plus) - post.neg_log_posterior(&minus))
                        / (2.0 * f64::from(eps));
                    worst = worst.max((fd - f64::from(g[i])).abs() / f64::from(scale));
                }
            }
            println!("{activation:?} {hidden:?}: {worst:.1e}, {kinks} skipped at kinks");
            assert!(kinks * 3 < chains as usize * params, "{kinks} kinks");
            assert!(worst < 5e-4, "{activation:?} {hidden:?}: {worst:e}");
        }
    }
}

/// Every sampler the networks run (all but HMC), and SGD with heavy-ball momentum (its
/// velocity in p).
#[test]
fn gpu_trajectories_match_cpu_for_every_sampler() {
    let cases = atmc_lab::math::mlp::NETWORK_SAMPLERS
        .iter()
        .map(|&(kind, _)| (kind, 0.0))
        .chain([(SamplerKind::Sgd, 0.9)]);
    for (kind, momentum) in cases {
        let mut m = model(kind, Activation::Tanh, 16);
        m.sampler.sgd_momentum = momentum;
        // Momentum μ multiplies the step by 1/(1 − μ): the same effective step as plain SGD's
        // keeps the comparison out of the chaotic regime.
        m.sampler.h *= 1.0 - momentum;
        let chains = 128;
        let mut cpu = MlpCpuEngine::new(m.clone(), chains, &MlpInit::default(), 7);
        let mut gpu = gpu(m, chains);
        let rc = cpu.advance(50).unwrap();
        let rg = gpu.advance(50).unwrap();
        assert_eq!(
            (rc.alive, rc.diverged),
            (rg.alive, rg.diverged),
            "{kind:?} μ {momentum}"
        );
        let a = gpu.read_weights(0, chains).unwrap();
        let b = cpu.read_weights(0, chains).unwrap();
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        println!("{kind:?} μ {momentum}: max |θ_gpu − θ_cpu| after 50 steps {worst:.2e}");
        assert!(worst <= 1e-3, "{kind:?} μ {momentum}: {worst:e}");
        let t = (rc.overall.kinetic_temperature - rg.overall.kinetic_temperature).abs();
        assert!(
            t <= 1e-3 * rc.overall.kinetic_temperature.max(1.0),
            "{kind:?}: {t}"
        );
    }
}

/// The GPU pipelines are compiled for one sampler: changing the sampler live (as the app's
/// controls do) recompiles them, and both engines keep stepping the same networks.
#[test]
fn gpu_follows_a_live_sampler_change() {
    let chains = 64;
    let first = model(SamplerKind::Sgld, Activation::Tanh, 16);
    let mut cpu = MlpCpuEngine::new(first.clone(), chains, &MlpInit::default(), 7);
    let mut gpu = gpu(first, chains);
    cpu.advance(20).unwrap();
    gpu.advance(20).unwrap();
    let second = model(SamplerKind::Atmc, Activation::Tanh, 16);
    cpu.set_model(second.clone()).unwrap();
    gpu.set_model(second).unwrap();
    cpu.advance(20).unwrap();
    gpu.advance(20).unwrap();
    let (a, b) = (
        gpu.read_weights(0, chains).unwrap(),
        cpu.read_weights(0, chains).unwrap(),
    );
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-3, "{worst:e}");
}

#[test]
fn gpu_predictions_match_cpu() {
    let m = model(SamplerKind::Atmc, Activation::Selu, 16);
    let chains = 200;
    let mut cpu = MlpCpuEngine::new(m.clone(), chains, &MlpInit::default(), 7);
    let mut gpu = gpu(m, chains);
    cpu.advance(20).unwrap();
    gpu.advance(20).unwrap();
    let points: Vec<[f32; 2]> = (0..300)
        .map(|i| [(i % 20) as f32 * 0.3 - 3.0, (i / 20) as f32 * 0.4 - 3.0])
        .collect();
    let a = gpu.predict(&points, 150, 3).unwrap();
    let b = cpu.predict(&points, 150, 3).unwrap();
    assert_eq!(a.chains_used, b.chains_used);
    assert_eq!(a.chains_used, 150);
    for (x, y) in [
        (&a.mean, &b.mean),
        (&a.mean_square, &b.mean_square),
        (&a.focus, &b.focus),
    ] {
        let worst = x
            .iter()
            .zip(y)
            .map(|(p, q)| (p - q).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-3, "{worst}");
    }
    for row in a.mean.chunks(2) {
        assert!((row[0] + row[1] - 1.0).abs() < 1e-5);
    }
}

#[test]
fn printed_friction_sign_explodes_networks() {
    let mut m = model(SamplerKind::Atmc, Activation::Tanh, 16);
    m.sampler.friction_sign = -1.0;
    let mut cpu = MlpCpuEngine::new(m, 64, &MlpInit::default(), 7);
    let report = cpu.advance(300).unwrap();
    assert!(
        report.diverged >= 60,
        "only {} of 64 networks diverged",
        report.diverged
    );
    // Frozen networks stay frozen.
    let before = cpu.read_weights(0, 64).unwrap();
    cpu.advance(10).unwrap();
    let after = cpu.read_weights(0, 64).unwrap();
    let params = cpu.model().posterior.params();
    let p = cpu.read_parameter(0).unwrap();
    for (chain, &d) in p.diverged_at.iter().enumerate() {
        if d != 0 {
            let r = chain * params..(chain + 1) * params;
            assert_eq!(
                before[r.clone()]
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>(),
                after[r].iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            );
        }
    }
}

/// `from_prior` starts every weight and bias from N(0, σ_p²): the starting networks are prior
/// draws (variance σ_p², biases too); the usual initialisation has zero biases and weights of
/// variance 1/fan-in, which is not the prior.
#[test]
fn a_start_from_the_prior_draws_every_parameter_from_it() {
    let mut m = model(SamplerKind::Atmc, Activation::Tanh, 16);
    m.posterior.prior_precision = 1.0 / (2.5f32 * 2.5);
    let p = m.posterior.arch.params();
    let draw = |init: &MlpInit| {
        let mut all = Vec::new();
        for chain in 0..200 {
            let (mut theta, mut mom, mut xi) = (vec![0.0; p], vec![0.0; p], vec![0.0; p]);
            m.initial_state(
                init,
                7,
                chain,
                atmc_lab::math::mlp::ChainSlices {
                    theta: &mut theta,
                    p: &mut mom,
                    xi: &mut xi,
                },
            );
            all.extend(theta);
        }
        all
    };
    let prior = draw(&MlpInit {
        from_prior: true,
        ..MlpInit::default()
    });
    let var = prior.iter().map(|t| f64::from(*t).powi(2)).sum::<f64>() / prior.len() as f64;
    assert!(
        (var - 6.25).abs() < 0.1 * 6.25,
        "variance {var}, prior 6.25"
    );
    let usual = draw(&MlpInit::default());
    let zeros = usual.iter().filter(|t| **t == 0.0).count();
    assert!(zeros > 0, "the usual initialisation has zero biases");
    assert_eq!(prior.iter().filter(|t| **t == 0.0).count(), 0);
}

/// `data_used` keeps the first n training points of the same set in the likelihood (the
/// gradient then scales by n) and the whole set in the data; more than the set has is refused
/// with the count.
#[test]
fn the_likelihood_uses_the_first_points_of_the_same_set() {
    let mut spec = atmc_lab::math::mlp::MlpSpec::default();
    let (all, data) = atmc_lab::preset::data::build_network(&spec).unwrap();
    spec.data_used = Some(10);
    let (few, same) = atmc_lab::preset::data::build_network(&spec).unwrap();
    assert_eq!(few.inputs.len(), 10);
    assert_eq!(few.inputs[..], all.inputs[..10]);
    assert_eq!(
        same.train_x, data.train_x,
        "the data set itself is the same"
    );
    assert!(few.batch_size <= 10);
    spec.data_used = Some(data.train_x.len() as u32 + 1);
    let e = atmc_lab::preset::data::build_network(&spec).unwrap_err();
    assert!(
        e.contains("data_used") && e.contains("training points"),
        "{e}"
    );
}
