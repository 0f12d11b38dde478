//! The multi-threaded CPU engine of the MLP posteriors: the reference backend.

use super::{MAX_LAYERS, MlpEngine, MlpReport, ParameterStates, Prediction};
use crate::engine::BackendInfo;
use crate::engine::cpu::{SimdPath, simd_path};
use crate::math::mlp::{ChainSlices, MAX_CLASSES, MlpInit, MlpModel, MlpPosterior, Workspace};
use crate::math::rng::RngCounter;
use rayon::prelude::*;

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
        let path = simd_path();
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
                        let job = ChainJob {
                            model,
                            seed,
                            chain: chain as u32,
                            step0,
                            steps,
                        };
                        let slices = ChainSlices {
                            theta: &mut *theta,
                            p: &mut *p,
                            xi: &mut *xi,
                        };
                        *diverged_at = run_chain_on(path, job, slices, ws, grad);
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
            .collect::<Vec<_>>()
            .into_iter()
            // Summed in chain order: bit-identical sums however many threads ran.
            .fold((0, 0, [[0.0; 2]; MAX_LAYERS]), |a, b| {
                let mut s = a.2;
                for (x, y) in s.iter_mut().zip(&b.2) {
                    x[0] += y[0];
                    x[1] += y[1];
                }
                (a.0 + b.0, a.1 + b.1, s)
            });
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
        let path = simd_path();
        out.par_chunks_mut(params)
            .zip(self.theta.par_chunks(params))
            .enumerate()
            .for_each_init(Workspace::default, |ws, (chain, (g, theta))| {
                let rng = RngCounter::new(seed, chain as u32, step);
                gradient_on(path, post, theta, &rng, ws, g);
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

/// What one chain's run of steps needs besides its state.
#[derive(Clone, Copy)]
struct ChainJob<'a> {
    model: &'a MlpModel,
    seed: u64,
    chain: u32,
    step0: u32,
    steps: u32,
}

/// Runs `job.steps` steps of one chain; returns the step after which it diverged, or 0.
#[inline(always)]
fn run_chain(job: ChainJob, c: ChainSlices<'_>, ws: &mut Workspace, grad: &mut [f32]) -> u32 {
    for k in 0..job.steps {
        let step = job.step0.wrapping_add(k);
        let rng = RngCounter::new(job.seed, job.chain, step);
        let slices = ChainSlices {
            theta: &mut *c.theta,
            p: &mut *c.p,
            xi: &mut *c.xi,
        };
        if job.model.advance(slices, &rng, ws, grad) {
            return step + 1;
        }
    }
    0
}

/// [`run_chain`] compiled for AVX2 + FMA.
///
/// # Safety
/// The CPU must have AVX2 and FMA ([`SimdPath::detect`] checks).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_chain_avx2(
    job: ChainJob,
    c: ChainSlices<'_>,
    ws: &mut Workspace,
    grad: &mut [f32],
) -> u32 {
    run_chain(job, c, ws, grad)
}

/// [`run_chain`] compiled for AVX-512.
///
/// # Safety
/// The CPU must have AVX-512 F/VL/DQ, AVX2 and FMA ([`SimdPath::detect`] checks).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn run_chain_avx512(
    job: ChainJob,
    c: ChainSlices<'_>,
    ws: &mut Workspace,
    grad: &mut [f32],
) -> u32 {
    run_chain(job, c, ws, grad)
}

/// [`run_chain`] on `path` (one this machine has). Every path rounds the same way (fused
/// multiply-adds are `mul_add` on each), so the trajectories are the same to the bit.
fn run_chain_on(
    path: SimdPath,
    job: ChainJob,
    c: ChainSlices<'_>,
    ws: &mut Workspace,
    grad: &mut [f32],
) -> u32 {
    match path {
        // SAFETY: `simd_path` chose the path from what the CPU reports.
        #[cfg(target_arch = "x86_64")]
        SimdPath::Avx512 => unsafe { run_chain_avx512(job, c, ws, grad) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        SimdPath::Avx2 => unsafe { run_chain_avx2(job, c, ws, grad) },
        _ => run_chain(job, c, ws, grad),
    }
}

/// The stochastic gradient of one chain on `path`.
fn gradient_on(
    path: SimdPath,
    post: &MlpPosterior,
    theta: &[f32],
    rng: &RngCounter,
    ws: &mut Workspace,
    grad: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    {
        /// # Safety
        /// The CPU must have AVX2 and FMA.
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2(
            post: &MlpPosterior,
            theta: &[f32],
            rng: &RngCounter,
            ws: &mut Workspace,
            grad: &mut [f32],
        ) {
            post.stochastic_gradient(theta, rng, ws, grad)
        }
        /// # Safety
        /// The CPU must have AVX-512 F/VL/DQ, AVX2 and FMA.
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
        unsafe fn avx512(
            post: &MlpPosterior,
            theta: &[f32],
            rng: &RngCounter,
            ws: &mut Workspace,
            grad: &mut [f32],
        ) {
            post.stochastic_gradient(theta, rng, ws, grad)
        }
        match path {
            // SAFETY: `simd_path` chose the path from what the CPU reports.
            SimdPath::Avx512 => return unsafe { avx512(post, theta, rng, ws, grad) },
            // SAFETY: as above.
            SimdPath::Avx2 => return unsafe { avx2(post, theta, rng, ws, grad) },
            SimdPath::Baseline => {}
        }
    }
    post.stochastic_gradient(theta, rng, ws, grad)
}
