//! One learning rate of a thermodynamics sweep (MATH.md §5): run the chains to the end in
//! blocks and read the ensemble back at each block end. What is measured on it (U, S, the
//! Gibbs test, stationarity, the gradient's signal-to-noise ratio) is
//! [`crate::diagnostics::thermodynamics`]'s business, as are the sweep's slopes and held-out
//! prediction (with [`crate::sweep::thermodynamics`]).

mod mlp;

pub use mlp::{EntropyCost, SNR_NETWORKS, measure_mlp_costed, parameterisation};

use crate::diagnostics::entropy::knn_entropy;
use crate::diagnostics::movement::Movement;
use crate::diagnostics::thermodynamics::{
    KNN_K, ThermoPoint, known_answer, mean_and_se, plane_point, sphere_entropy, sphere_point,
    sphere_signal_and_noise,
};
use crate::engine::sphere::create_sphere_engine;
use crate::engine::{BackendChoice, create_engine};
use crate::math::sphere::loss as sphere_loss;
use crate::preset::sphere::SpherePreset;
use crate::preset::{AnyPreset, Preset};

/// Blocks a run is cut into: U is recorded at the end of each.
pub const BLOCKS: u32 = 16;

/// Most chains the k-NN entropy of a 2-D run's S trace uses at a block end (a strided
/// subsample; the final S uses every alive chain).
pub const TRACE_CHAINS: usize = 4_000;

/// Measures one preset: a 2-D preset through its engine, a sphere preset through the sphere
/// engine, an MLP preset through the MLP engine. Comparisons have no thermodynamics.
pub fn measure(
    preset: &AnyPreset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<ThermoPoint> {
    match preset {
        AnyPreset::Toy(p) => measure_plane(p, backend, progress),
        AnyPreset::Sphere(p) => measure_sphere(p, backend, progress),
        AnyPreset::Mlp(p) => mlp::measure_mlp(p, backend, progress),
        AnyPreset::Comparison(_) => {
            anyhow::bail!("the thermodynamics measure takes a 2-D, sphere or MLP preset")
        }
    }
}

/// Block end steps of a run of `steps` in [`BLOCKS`] blocks (fewer for short runs).
fn block_ends(steps: u32) -> Vec<u32> {
    let blocks = BLOCKS.min(steps.max(1));
    let mut ends: Vec<u32> = (1..=blocks).map(|b| b * steps / blocks).collect();
    ends.dedup();
    ends
}

fn measure_plane(
    preset: &Preset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<ThermoPoint> {
    let model = super::validated(preset.clone())?.model();
    let target = model.target.clone();
    let (mut engine, _) = create_engine(backend, model, preset.chains, &preset.init, preset.seed)?;
    let loss = |t: [f64; 2]| target.neg_log_density(t);
    let starts = engine.read_chains(0, preset.chains)?;
    let alive_thetas = |engine: &mut dyn crate::engine::Engine| -> anyhow::Result<Vec<[f64; 2]>> {
        let states = engine.read_chains(0, preset.chains)?;
        Ok(states
            .chains
            .iter()
            .zip(&states.diverged_at)
            .filter(|(_, d)| **d == 0)
            .map(|(c, _)| [f64::from(c.theta[0]), f64::from(c.theta[1])])
            .collect())
    };
    let (mut u_trace, mut s_trace) = (Vec::new(), Vec::new());
    let mut done = 0;
    for end in block_ends(preset.steps) {
        engine.advance(end - done, &[])?;
        done = end;
        progress(done);
        let thetas = alive_thetas(engine.as_mut())?;
        if !thetas.is_empty() {
            let losses: Vec<f64> = thetas.iter().map(|&t| loss(t)).collect();
            u_trace.push((done, mean_and_se(&losses).0));
            // S at every block end, for ΔU/ΔS along the run (MATH.md §5.6), on at most
            // TRACE_CHAINS chains: every block of a 100,000-chain sweep would otherwise cost
            // a full k-NN estimate.
            let every = thetas.len().div_ceil(TRACE_CHAINS);
            let sub: Vec<[f64; 2]> = thetas.iter().step_by(every).copied().collect();
            if let Some(s) = knn_entropy(&sub, KNN_K) {
                s_trace.push((done, s));
            }
        }
    }
    // The final ensemble, and whether its chains ever left their start.
    let ends = engine.read_chains(0, preset.chains)?;
    let movement = Movement::between(
        &starts,
        &ends,
        target.moments().1,
        preset.sampler.h,
        preset.steps,
    );
    let thetas = alive_thetas(engine.as_mut())?;
    let point = ThermoPoint {
        u_trace,
        s_trace,
        ..ThermoPoint::unmeasured(
            preset.target.name().to_owned(),
            // Named as the sphere names it.
            if preset.sampler.kind == crate::math::SamplerKind::Sgd
                && preset.sampler.sgd_momentum > 0.0
            {
                "sgd+momentum".to_owned()
            } else {
                preset.sampler.kind.name().to_owned()
            },
            preset.sampler.h,
            preset.chains,
            preset.steps,
        )
    };
    let known = known_answer(
        preset.sampler.kind,
        &preset.schedule,
        &target,
        &preset.noise,
        preset.sampler.h,
        preset.sampler.sgd_momentum,
    );
    Ok(plane_point(
        point,
        &thetas,
        &target,
        &preset.noise,
        known,
        movement,
    ))
}

fn measure_sphere(
    preset: &SpherePreset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<ThermoPoint> {
    let (mut engine, _) = create_sphere_engine(
        backend,
        preset.problem,
        preset.sampler,
        preset.chains,
        preset.seed,
    )?;
    let objects = engine.objects().to_vec();
    let (mut u_trace, mut s_trace, mut snr_trace) = (Vec::new(), Vec::new(), Vec::new());
    let mut done = 0;
    for end in block_ends(preset.steps) {
        engine.advance(end - done)?;
        done = end;
        progress(done);
        let xs = engine.positions()?;
        let losses: Vec<f64> = xs.iter().map(|&x| sphere_loss(&objects, x)).collect();
        u_trace.push((done, mean_and_se(&losses).0));
        if let Some(s) = sphere_entropy(&objects, &xs) {
            s_trace.push((done, s));
        }
        let (signal, noise) = sphere_signal_and_noise(&objects, &xs);
        if noise > 0.0 {
            snr_trace.push((done, signal / noise));
        }
    }
    let xs = engine.positions()?;
    let point = ThermoPoint {
        u_trace,
        s_trace,
        snr_trace,
        ..ThermoPoint::unmeasured(
            format!("sphere {}", preset.problem.short()),
            if preset.sampler.momentum > 0.0 {
                "sgd+momentum".into()
            } else {
                "sgd".into()
            },
            preset.sampler.h,
            preset.chains,
            preset.steps,
        )
    };
    Ok(sphere_point(point, &xs, &objects))
}
