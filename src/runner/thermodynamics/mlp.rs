//! One learning rate of an MLP's thermodynamics (MATH.md §5.6): thousands of networks trained
//! by SGD on real minibatches, U the per-example training loss L(θ)/N (cross-entropy plus the
//! prior's weight decay, the loss SGD descends), S two ways, and the gradient signal-to-noise
//! ratio at each block end. S from the ensemble is the k-NN entropy in weight space over at
//! most [`ENSEMBLE_ENTROPY_NETWORKS`] networks, used for T_slope only where its subsample
//! check passes; S from windows is each of a few networks' own iterates over the last half
//! of the run, recorded as it goes ([`WindowRecorder`]). A network with fewer weights than
//! training points is underparameterised (UP), one with more is overparameterised (OP). There
//! is no Gibbs fit: its normaliser would be an integral over thousands of dimensions.

use super::block_ends;
use crate::diagnostics::entropy::knn_entropy_dense;
use crate::diagnostics::thermodynamics::{
    ENSEMBLE_ENTROPY_NETWORKS, KNN_K, NetworkEntropies, ThermoPoint, WindowPlan, WindowRecorder,
    diverged_note, enough_alive, ensemble_entropy_check, mean_and_se, network_point,
};
use crate::engine::mlp::MlpEngine;
use crate::engine::{BackendChoice, create_mlp_engine};
use crate::math::mlp::MlpPosterior;
use crate::preset::MlpPreset;
use rayon::prelude::*;
use std::time::Instant;

/// Networks whose gradient signal and noise are computed at each block end (each costs one
/// backward pass per training point).
pub const SNR_NETWORKS: usize = 64;

/// "UP" when the network has fewer weights than training points, "OP" otherwise.
pub fn parameterisation(weights: usize, points: usize) -> &'static str {
    if weights < points { "UP" } else { "OP" }
}

/// The weights of the alive networks, network-major, how many there are, and every
/// network's diverged flag.
fn alive_weights(
    engine: &mut dyn MlpEngine,
    params: usize,
) -> anyhow::Result<(Vec<f32>, usize, Vec<bool>)> {
    let chains = engine.chains();
    let all = engine.read_weights(0, chains)?;
    let diverged: Vec<bool> = engine
        .read_parameter(0)?
        .diverged_at
        .iter()
        .map(|&d| d != 0)
        .collect();
    let weights: Vec<f32> = all
        .chunks_exact(params)
        .zip(&diverged)
        .filter(|(_, d)| !**d)
        .flat_map(|(w, _)| w.iter().copied())
        .collect();
    let alive = weights.len() / params;
    Ok((weights, alive, diverged))
}

/// What a point's entropies cost (seconds of wall time, and bytes), for measurements of the
/// estimators themselves.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EntropyCost {
    /// Reading the windows' iterates back from the engine.
    pub window_readback_s: f64,
    /// Iterates read back for the windows (one call each).
    pub window_readbacks: u32,
    /// The windowed estimate from the recorded windows.
    pub window_estimate_s: f64,
    /// Memory the recorded windows hold.
    pub window_bytes: usize,
    /// The ensemble's k-NN estimates (every block) and its subsample check.
    pub ensemble_s: f64,
}

/// Root mean square signal and noise over the first [`SNR_NETWORKS`] networks.
fn signal_and_noise(posterior: &MlpPosterior, weights: &[f32], batch: u32) -> (f64, f64) {
    let nets: Vec<&[f32]> = weights
        .chunks_exact(posterior.params())
        .take(SNR_NETWORKS)
        .collect();
    // Per network in parallel, summed in network order (the same on any thread count).
    let squares: Vec<(f64, f64)> = nets
        .par_iter()
        .map(|w| posterior.gradient_signal_and_noise(w, batch))
        .map(|(s, n)| (s * s, n * n))
        .collect();
    let (s, n) = squares
        .iter()
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    let k = nets.len().max(1) as f64;
    ((s / k).sqrt(), (n / k).sqrt())
}

/// Measures one MLP preset (its sampler should be SGD, but any sampler runs).
pub(super) fn measure_mlp(
    preset: &MlpPreset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<ThermoPoint> {
    Ok(measure_mlp_costed(preset, backend, progress)?.0)
}

/// [`measure_mlp`], with what its entropies cost.
pub fn measure_mlp_costed(
    preset: &MlpPreset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<(ThermoPoint, EntropyCost)> {
    let (model, _) = preset.build().map_err(anyhow::Error::msg)?;
    let posterior = model.posterior.clone();
    let (mut engine, _) = create_mlp_engine(
        backend,
        &mut None,
        model,
        preset.chains,
        &preset.init,
        preset.seed,
    )?;
    let (d, points) = (posterior.params(), posterior.inputs.len());
    let batch = posterior.batch_size;
    let per_example = |w: &[f32]| posterior.neg_log_posterior(w) / points as f64;
    let (mut u_trace, mut s_trace, mut snr_trace) = (Vec::new(), Vec::new(), Vec::new());
    let plan = WindowPlan::new(preset.steps, preset.chains, d);
    let mut window = WindowRecorder::new(plan, d);
    let mut cost = EntropyCost {
        window_bytes: plan.bytes(d),
        ..EntropyCost::default()
    };
    let mut done = 0;
    // The last block's ensemble and what was measured on it: the point reports these.
    let mut last = None;
    for end in block_ends(preset.steps) {
        // Up to the block's end, stopping at each step the window records.
        while done < end {
            let next = plan.next_after(done).filter(|&s| s < end).unwrap_or(end);
            engine.advance(next - done)?;
            done = next;
            if plan.records_at(done) {
                let clock = Instant::now();
                window.push(&engine.read_weights(0, plan.networks)?);
                cost.window_readback_s += clock.elapsed().as_secs_f64();
                cost.window_readbacks += 1;
            }
        }
        progress(done);
        let (weights, alive, diverged) = alive_weights(engine.as_mut(), d)?;
        if alive == 0 {
            last = None;
            continue;
        }
        let losses: Vec<f64> = weights.par_chunks_exact(d).map(per_example).collect();
        u_trace.push((done, mean_and_se(&losses).0));
        // The ensemble estimate on a subset: its cost grows with the square of the networks.
        let subset = &weights[..alive.min(ENSEMBLE_ENTROPY_NETWORKS) * d];
        let clock = Instant::now();
        if let Some(s) = knn_entropy_dense(subset, d, KNN_K) {
            s_trace.push((done, s));
        }
        cost.ensemble_s += clock.elapsed().as_secs_f64();
        let (signal, noise) = signal_and_noise(&posterior, &weights, batch);
        if noise > 0.0 {
            snr_trace.push((done, signal / noise));
        }
        last = Some((weights, alive, losses, signal, noise, diverged));
    }
    let point = ThermoPoint {
        u_trace,
        s_trace,
        snr_trace,
        ..ThermoPoint::unmeasured(
            format!(
                "MLP {} ({d} weights, {points} points: {})",
                posterior.arch.describe(),
                parameterisation(d, points)
            ),
            preset.sampler.kind.name().into(),
            preset.sampler.h,
            preset.chains,
            preset.steps,
        )
    };
    // As in the plane: a point where more than half the networks diverged is left out.
    let Some((weights, alive, losses, signal, noise, diverged)) =
        last.filter(|l| enough_alive(l.1, preset.chains))
    else {
        let alive = alive_weights(engine.as_mut(), d)?.1;
        return Ok((
            ThermoPoint {
                alive: alive as u32,
                excluded: Some(diverged_note(alive, preset.chains, "networks")),
                ..point
            },
            cost,
        ));
    };
    let knn_networks = alive.min(ENSEMBLE_ENTROPY_NETWORKS);
    let clock = Instant::now();
    let check = ensemble_entropy_check(&weights[..knn_networks * d], d, KNN_K);
    cost.ensemble_s += clock.elapsed().as_secs_f64();
    let clock = Instant::now();
    let recorded_alive: Vec<bool> = diverged.iter().map(|d| !d).collect();
    let window_entropy = window.estimate(&recorded_alive);
    cost.window_estimate_s = clock.elapsed().as_secs_f64();
    let entropies = NetworkEntropies {
        knn_networks: knn_networks as u32,
        check,
        window: Some(window_entropy),
    };
    Ok((
        network_point(point, &weights, d, &losses, (signal, noise), entropies),
        cost,
    ))
}
