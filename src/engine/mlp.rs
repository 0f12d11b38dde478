//! Engines for Bayesian MLP posteriors: thousands of small networks, one per chain, stepped
//! by the same samplers as the 2-D chains. [`MlpCpuEngine`] runs `math::mlp` on every core
//! and is the oracle the GPU engine ([`super::mlp_gpu::MlpGpuEngine`]) is tested against.

use super::{
    BackendChoice, BackendInfo, fallback_notice, gpu::GpuContext, hardware_gpu, open_device,
};
use crate::math::mlp::{ChainSlices, MAX_CLASSES, MlpInit, MlpModel, Workspace};
use crate::math::rng::RngCounter;
use rayon::prelude::*;

/// Most weight layers whose statistics a report carries (3 hidden layers and the output).
pub const MAX_LAYERS: usize = 4;

/// Statistics of one weight layer over the alive chains.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerStats {
    /// Mean of p K'(p) over the layer's parameters: the kinetic temperature (target T).
    pub kinetic_temperature: f64,
    /// Mean thermostat ξ.
    pub mean_xi: f64,
}

/// What a caller gets after advancing the networks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MlpReport {
    /// Steps done since the start (or the last reset).
    pub step: u32,
    /// Chains still alive.
    pub alive: u64,
    /// Chains diverged (frozen).
    pub diverged: u64,
    /// Per weight layer, input side first.
    pub layers: Vec<LayerStats>,
    /// Over all parameters.
    pub overall: LayerStats,
}

impl MlpReport {
    /// Builds a report from per-layer sums (Σ heat, Σ ξ) over the alive chains.
    pub(crate) fn from_sums(
        step: u32,
        alive: u64,
        diverged: u64,
        sums: &[[f64; 2]],
        sizes: &[usize],
    ) -> Self {
        let mut layers = Vec::with_capacity(sizes.len());
        let (mut heat, mut xi, mut params) = (0.0, 0.0, 0.0);
        for (s, &n) in sums.iter().zip(sizes) {
            let count = (alive as f64 * n as f64).max(1.0);
            layers.push(LayerStats {
                kinetic_temperature: s[0] / count,
                mean_xi: s[1] / count,
            });
            heat += s[0];
            xi += s[1];
            params += n as f64;
        }
        let count = (alive as f64 * params).max(1.0);
        Self {
            step,
            alive,
            diverged,
            layers,
            overall: LayerStats {
                kinetic_temperature: heat / count,
                mean_xi: xi / count,
            },
        }
    }
}

/// θ, p and ξ of one parameter across all chains.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParameterStates {
    /// θ per chain.
    pub theta: Vec<f32>,
    /// p per chain.
    pub p: Vec<f32>,
    /// ξ per chain.
    pub xi: Vec<f32>,
    /// Step at which each chain diverged (0 while alive).
    pub diverged_at: Vec<u32>,
}

/// The posterior predictive at a list of points.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prediction {
    /// Classes per point.
    pub classes: usize,
    /// Mean class probabilities over the chains, row-major points × classes.
    pub mean: Vec<f32>,
    /// Mean squared class probabilities (their spread across chains is
    /// sqrt(mean_square − mean²)).
    pub mean_square: Vec<f32>,
    /// The focus chain's own class probabilities.
    pub focus: Vec<f32>,
    /// Chains averaged over (alive chains among the first requested).
    pub chains_used: u32,
}

impl Prediction {
    fn with_points(points: usize, classes: usize) -> Self {
        Self {
            classes,
            mean: vec![0.0; points * classes],
            mean_square: vec![0.0; points * classes],
            focus: vec![0.0; points * classes],
            chains_used: 0,
        }
    }
}

/// The interface both MLP backends implement.
pub trait MlpEngine: Send {
    /// The backend and its device.
    fn backend(&self) -> BackendInfo;
    /// Number of chains (networks).
    fn chains(&self) -> u32;
    /// Steps done since the start or the last reset.
    fn steps_done(&self) -> u32;
    /// The model the chains follow.
    fn model(&self) -> &MlpModel;
    /// Replaces the model without touching the chains (live slider changes). The
    /// architecture must stay; the data set may change.
    fn set_model(&mut self, model: MlpModel) -> anyhow::Result<()>;
    /// Advances every alive chain by `steps` steps (diverged chains stay frozen).
    fn advance(&mut self, steps: u32) -> anyhow::Result<MlpReport>;
    /// The stochastic gradient every chain would draw at its current θ for the next step,
    /// chain-major (chains × P). For testing the backends against each other.
    fn gradients(&mut self) -> anyhow::Result<Vec<f32>>;
    /// θ, p and ξ of parameter `param` across all chains.
    fn read_parameter(&mut self, param: usize) -> anyhow::Result<ParameterStates>;
    /// θ of every parameter of chains `first .. first + count` (clamped), chain-major.
    fn read_weights(&mut self, first: u32, count: u32) -> anyhow::Result<Vec<f32>>;
    /// Class probabilities at `points`, averaged over the alive chains among the first
    /// `chains`, and those of chain `focus` alone.
    fn predict(
        &mut self,
        points: &[[f32; 2]],
        chains: u32,
        focus: u32,
    ) -> anyhow::Result<Prediction>;
    /// Re-initialises every chain from `init` with `seed` and sets the step count to 0.
    fn reset(&mut self, init: &MlpInit, seed: u64) -> anyhow::Result<()>;
}

/// Creates an MLP engine for a choice of backend, sharing the GPU device the caller keeps
/// in `device`. Returns the engine and, when `auto` fell back to the CPU, the reason.
pub fn create_mlp_engine(
    choice: BackendChoice,
    device: &mut Option<GpuContext>,
    model: MlpModel,
    chains: u32,
    init: &MlpInit,
    seed: u64,
) -> anyhow::Result<(Box<dyn MlpEngine>, Option<String>)> {
    let gpu = |ctx, model| -> anyhow::Result<Box<dyn MlpEngine>> {
        Ok(Box::new(super::mlp_gpu::MlpGpuEngine::with_context(
            ctx, model, chains, init, seed,
        )?))
    };
    let cpu = |model| Box::new(MlpCpuEngine::new(model, chains, init, seed)) as Box<dyn MlpEngine>;
    match choice {
        BackendChoice::Cpu => Ok((cpu(model), None)),
        BackendChoice::Gpu => Ok((gpu(open_device(device)?, model)?, None)),
        BackendChoice::Auto => {
            let reason = match hardware_gpu(device) {
                Ok(ctx) => match gpu(ctx, model.clone()) {
                    Ok(engine) => return Ok((engine, None)),
                    Err(e) => format!("the GPU engine failed ({e:#})"),
                },
                Err(reason) => reason,
            };
            Ok((cpu(model), Some(fallback_notice(&reason))))
        }
    }
}

/// The multi-threaded CPU engine: each chain's θ, p and ξ contiguous, chains split across
/// threads.
pub struct MlpCpuEngine {
    model: MlpModel,
    chains: u32,
    seed: u64,
    step: u32,
    theta: Vec<f32>,
    p: Vec<f32>,
    xi: Vec<f32>,
    diverged_at: Vec<u32>,
}

impl MlpCpuEngine {
    /// `chains` networks initialised from `init` with `seed`.
    pub fn new(model: MlpModel, chains: u32, init: &MlpInit, seed: u64) -> Self {
        let n = model.posterior.params() * chains as usize;
        let mut engine = Self {
            model,
            chains,
            seed,
            step: 0,
            theta: vec![0.0; n],
            p: vec![0.0; n],
            xi: vec![0.0; n],
            diverged_at: vec![0; chains as usize],
        };
        engine.initialise(init, seed);
        engine
    }

    fn initialise(&mut self, init: &MlpInit, seed: u64) {
        self.seed = seed;
        self.step = 0;
        let params = self.model.posterior.params();
        let model = &self.model;
        self.theta
            .par_chunks_mut(params)
            .zip(self.p.par_chunks_mut(params))
            .zip(self.xi.par_chunks_mut(params))
            .enumerate()
            .for_each(|(chain, ((theta, p), xi))| {
                model.initial_state(init, seed, chain as u32, ChainSlices { theta, p, xi });
            });
        self.diverged_at.fill(0);
    }
}

/// The initial state of every chain in the GPU's layout: three regions (θ, p, ξ) of
/// P × chains with the chain index fastest.
pub(crate) fn initial_regions(
    model: &MlpModel,
    init: &MlpInit,
    seed: u64,
    chains: u32,
) -> Vec<f32> {
    let params = model.posterior.params();
    let per_chain: Vec<Vec<f32>> = (0..chains)
        .into_par_iter()
        .map(|chain| {
            let mut v = vec![0.0; 3 * params];
            let (theta, rest) = v.split_at_mut(params);
            let (p, xi) = rest.split_at_mut(params);
            model.initial_state(init, seed, chain, ChainSlices { theta, p, xi });
            v
        })
        .collect();
    let n = chains as usize;
    let mut out = vec![0.0; 3 * params * n];
    for (chain, v) in per_chain.iter().enumerate() {
        for (k, &value) in v.iter().enumerate() {
            out[k * n + chain] = value;
        }
    }
    out
}

impl MlpEngine for MlpCpuEngine {
    fn backend(&self) -> BackendInfo {
        BackendInfo {
            kind: "cpu",
            device: format!("{} threads", rayon::current_num_threads()),
        }
    }

    fn chains(&self) -> u32 {
        self.chains
    }

    fn steps_done(&self) -> u32 {
        self.step
    }

    fn model(&self) -> &MlpModel {
        &self.model
    }

    fn set_model(&mut self, model: MlpModel) -> anyhow::Result<()> {
        anyhow::ensure!(
            model.posterior.arch == self.model.posterior.arch,
            "the architecture changed: make a new engine"
        );
        self.model = model;
        Ok(())
    }

    fn advance(&mut self, steps: u32) -> anyhow::Result<MlpReport> {
        let params = self.model.posterior.params();
        let sizes = self.model.posterior.arch.layer_params();
        let (model, seed, step0) = (&self.model, self.seed, self.step);
        let sp = model.sampler;
        let (alive, diverged, sums) = self
            .theta
            .par_chunks_mut(params)
            .zip(self.p.par_chunks_mut(params))
            .zip(self.xi.par_chunks_mut(params))
            .zip(self.diverged_at.par_iter_mut())
            .enumerate()
            .map_init(
                || (Workspace::default(), vec![0.0f32; params]),
                |(ws, grad), (chain, (((theta, p), xi), diverged_at))| {
                    if *diverged_at == 0 {
                        for k in 0..steps {
                            let step = step0.wrapping_add(k);
                            let rng = RngCounter::new(seed, chain as u32, step);
                            let slices = ChainSlices {
                                theta: &mut *theta,
                                p: &mut *p,
                                xi: &mut *xi,
                            };
                            if model.advance(slices, &rng, ws, grad) {
                                *diverged_at = step + 1;
                                break;
                            }
                        }
                    }
                    let mut sums = [[0.0f64; 2]; MAX_LAYERS];
                    if *diverged_at != 0 {
                        return (0u64, 1u64, sums);
                    }
                    let mut offset = 0;
                    for (l, &n) in sizes.iter().enumerate() {
                        for i in offset..offset + n {
                            sums[l][0] += f64::from(sp.kinetic_heat(p[i]));
                            sums[l][1] += f64::from(xi[i]);
                        }
                        offset += n;
                    }
                    (1, 0, sums)
                },
            )
            .reduce(
                || (0, 0, [[0.0; 2]; MAX_LAYERS]),
                |a, b| {
                    let mut s = a.2;
                    for (x, y) in s.iter_mut().zip(&b.2) {
                        x[0] += y[0];
                        x[1] += y[1];
                    }
                    (a.0 + b.0, a.1 + b.1, s)
                },
            );
        self.step = self.step.wrapping_add(steps);
        Ok(MlpReport::from_sums(
            self.step,
            alive,
            diverged,
            &sums[..sizes.len()],
            &sizes,
        ))
    }

    fn gradients(&mut self) -> anyhow::Result<Vec<f32>> {
        let params = self.model.posterior.params();
        let mut out = vec![0.0; self.theta.len()];
        let (post, seed, step) = (&self.model.posterior, self.seed, self.step);
        out.par_chunks_mut(params)
            .zip(self.theta.par_chunks(params))
            .enumerate()
            .for_each_init(Workspace::default, |ws, (chain, (g, theta))| {
                let rng = RngCounter::new(seed, chain as u32, step);
                post.stochastic_gradient(theta, &rng, ws, g);
            });
        Ok(out)
    }

    fn read_parameter(&mut self, param: usize) -> anyhow::Result<ParameterStates> {
        let params = self.model.posterior.params();
        anyhow::ensure!(param < params, "parameter {param} of {params}");
        let column = |v: &[f32]| v.iter().skip(param).step_by(params).copied().collect();
        Ok(ParameterStates {
            theta: column(&self.theta),
            p: column(&self.p),
            xi: column(&self.xi),
            diverged_at: self.diverged_at.clone(),
        })
    }

    fn read_weights(&mut self, first: u32, count: u32) -> anyhow::Result<Vec<f32>> {
        let params = self.model.posterior.params();
        let start = first.min(self.chains) as usize;
        let end = first.saturating_add(count).min(self.chains) as usize;
        Ok(self.theta[start * params..end * params].to_vec())
    }

    fn predict(
        &mut self,
        points: &[[f32; 2]],
        chains: u32,
        focus: u32,
    ) -> anyhow::Result<Prediction> {
        let post = &self.model.posterior;
        let params = post.params();
        let k = post.arch.classes();
        let chains = chains.min(self.chains) as usize;
        let focus = focus.min(self.chains.saturating_sub(1)) as usize;
        let mut out = Prediction::with_points(points.len(), k);
        out.chains_used = self.diverged_at[..chains]
            .iter()
            .filter(|&&d| d == 0)
            .count() as u32;
        let inv = 1.0 / out.chains_used.max(1) as f32;
        let (theta, diverged_at) = (&self.theta, &self.diverged_at);
        out.mean
            .par_chunks_mut(k)
            .zip(out.mean_square.par_chunks_mut(k))
            .zip(out.focus.par_chunks_mut(k))
            .zip(points.par_iter())
            .for_each_init(Workspace::default, |ws, (((mean, square), own), &x)| {
                let mut probs = [0.0f32; MAX_CLASSES];
                for chain in (0..chains).filter(|&c| diverged_at[c] == 0) {
                    post.predict(&theta[chain * params..][..params], x, ws, &mut probs[..k]);
                    for c in 0..k {
                        mean[c] += probs[c];
                        square[c] += probs[c] * probs[c];
                    }
                }
                for c in 0..k {
                    mean[c] *= inv;
                    square[c] *= inv;
                }
                post.predict(&theta[focus * params..][..params], x, ws, own);
            });
        Ok(out)
    }

    fn reset(&mut self, init: &MlpInit, seed: u64) -> anyhow::Result<()> {
        self.initialise(init, seed);
        Ok(())
    }
}
