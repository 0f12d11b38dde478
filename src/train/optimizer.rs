//! Optimisers over a network's parameters flattened into one vector: ATMC (MATH.md §1–2, the
//! per-coordinate updates of [`SamplerParams`] shared with the toy chains and the MLPs) and
//! SGD with momentum and a cosine schedule, the baseline.
//!
//! A network's gradient is computed at its current weights, so ATMC's splitting is run
//! "kick first": [`Atmc::step`] finishes step k with the gradient at the weights of step k's
//! midpoint and immediately starts step k + 1 (its θ and ξ half steps). The sequence of
//! operations on every number is the sampler core's, step for step.

use crate::math::rng::{RngCounter, Stream};
use crate::math::samplers::kinetic_derivatives;
use crate::math::{SamplerKind, SamplerParams, Schedule};
use serde::{Deserialize, Serialize};

/// ATMC's state: a momentum and a thermostat per parameter, and the step count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AtmcState {
    /// Momenta p.
    pub p: Vec<f32>,
    /// Thermostats ξ.
    pub xi: Vec<f32>,
    /// Steps finished.
    pub step: u32,
}

/// ATMC as an optimiser (any sampler kind with momentum and thermostat updates per
/// coordinate would fit; ATMC is the one trained here).
#[derive(Clone, Debug, PartialEq)]
pub struct Atmc {
    /// Sampler parameters (h, m, D, T, the printed switches, …).
    pub sampler: SamplerParams,
    /// Step-size schedule (constant or cyclical).
    pub schedule: Schedule,
    /// Seed of the injected noise.
    pub seed: u64,
    /// p, ξ and the step.
    pub state: AtmcState,
}

impl Atmc {
    /// ATMC over `theta`: p ~ N(0, mT) from the seed, ξ = `xi0`, and the first half of step 0
    /// applied to `theta`, ready for the first gradient.
    pub fn start(
        sampler: SamplerParams,
        schedule: Schedule,
        seed: u64,
        theta: &mut [f32],
        xi0: f32,
    ) -> Self {
        assert_eq!(
            sampler.kind,
            SamplerKind::Atmc,
            "the ATMC optimiser runs ATMC"
        );
        let mut p = vec![0.0; theta.len()];
        RngCounter::new(seed, 0, u32::MAX).fill_normals(Stream::Init, &mut p);
        let scale = (sampler.mass * sampler.temperature).sqrt();
        for v in &mut p {
            *v *= scale;
        }
        let mut atmc = Self {
            sampler,
            schedule,
            seed,
            state: AtmcState {
                p,
                xi: vec![xi0; theta.len()],
                step: 0,
            },
        };
        atmc.first_half(theta);
        atmc
    }

    /// Resumes from a saved state (θ as saved, mid-step).
    pub fn resume(sampler: SamplerParams, schedule: Schedule, seed: u64, state: AtmcState) -> Self {
        Self {
            sampler,
            schedule,
            seed,
            state,
        }
    }

    fn first_half(&mut self, theta: &mut [f32]) {
        let sp = self.sampler;
        let phase = sp.phase(&self.schedule, self.state.step);
        for ((th, p), xi) in theta.iter_mut().zip(&self.state.p).zip(&mut self.state.xi) {
            sp.atmc_first_half(th, *p, xi, phase);
        }
    }

    /// Finishes the current step with `grad` (the stochastic gradient of L at `theta`, the
    /// step's midpoint) and starts the next one.
    pub fn step(&mut self, theta: &mut [f32], grad: &[f32]) {
        self.finish(theta, grad);
        self.begin_next(theta);
    }

    /// The second half of the current step: `theta` is then the step's end point (where
    /// posterior samples are taken).
    pub fn finish(&mut self, theta: &mut [f32], grad: &[f32]) {
        assert_eq!(theta.len(), grad.len());
        let sp = self.sampler;
        let step = self.state.step;
        let phase = sp.phase(&self.schedule, step);
        let rng = RngCounter::new(self.seed, 0, step);
        let n = theta.len();
        for block in 0..n.div_ceil(4) {
            let z = rng.normal4(Stream::Injected, block as u32);
            for (lane, &zl) in z.iter().enumerate() {
                let i = block * 4 + lane;
                if i >= n {
                    break;
                }
                let p = &mut self.state.p[i];
                let s = kinetic_derivatives(*p, sp.mass, sp.inv_mass, sp.speed).2;
                sp.atmc_second_half(
                    &mut theta[i],
                    p,
                    &mut self.state.xi[i],
                    s,
                    grad[i],
                    zl,
                    phase,
                );
            }
        }
        self.state.step = step + 1;
    }

    /// The first half of the next step, before its gradient.
    pub fn begin_next(&mut self, theta: &mut [f32]) {
        self.first_half(theta);
    }

    /// Whether any parameter diverged (MATH.md §2).
    pub fn diverged(&self, theta: &[f32]) -> bool {
        theta
            .iter()
            .zip(&self.state.p)
            .zip(&self.state.xi)
            .any(|((t, p), x)| self.sampler.coordinate_diverged(*t, *p, *x))
    }

    /// Kinetic temperature and mean ξ over `range` of the parameters (a layer).
    pub fn temperature_and_xi(&self, range: std::ops::Range<usize>) -> (f64, f64) {
        let n = range.len().max(1) as f64;
        let heat: f64 = self.state.p[range.clone()]
            .iter()
            .map(|&p| f64::from(self.sampler.kinetic_heat(p)))
            .sum();
        let xi: f64 = self.state.xi[range].iter().map(|&x| f64::from(x)).sum();
        (heat / n, xi / n)
    }
}

/// SGD with (heavy-ball) momentum, weight decay and a cosine learning rate, the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SgdMomentum {
    /// Peak learning rate.
    pub lr: f32,
    /// Momentum μ.
    pub momentum: f32,
    /// Weight decay λ (added to the gradient as λθ).
    pub weight_decay: f32,
    /// Steps of the whole run (the cosine reaches 0 there).
    pub total_steps: u32,
    /// Velocities.
    pub velocity: Vec<f32>,
    /// Steps done.
    pub step: u32,
}

impl SgdMomentum {
    /// The learning rate at `step`: lr · (1 + cos(π step / total)) / 2.
    pub fn learning_rate(&self, step: u32) -> f32 {
        let r = (step as f32 / self.total_steps.max(1) as f32).min(1.0);
        0.5 * self.lr * (1.0 + (std::f32::consts::PI * r).cos())
    }

    /// v ← μ v + g + λθ; θ ← θ − lr_k v.
    pub fn step(&mut self, theta: &mut [f32], grad: &[f32]) {
        if self.velocity.len() != theta.len() {
            self.velocity = vec![0.0; theta.len()];
        }
        let lr = self.learning_rate(self.step);
        for ((t, v), g) in theta.iter_mut().zip(&mut self.velocity).zip(grad) {
            *v = self.momentum * *v + g + self.weight_decay * *t;
            *t -= lr * *v;
        }
        self.step += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{SamplerSpec, ScheduleSpec};

    fn sampler(sign: f64) -> SamplerParams {
        let mut s = SamplerSpec::new(SamplerKind::Atmc);
        s.h = 0.1;
        s.mass = 2.0;
        s.friction_floor = 0.7;
        s.friction_sign = sign;
        s.params()
    }

    /// The optimiser on L = Σ cᵢθᵢ²/2 against the sampler core's ATMC step written out:
    /// first half, gradient, second half, with the same random numbers.
    #[test]
    fn atmc_optimizer_matches_the_sampler_core() {
        for sign in [1.0, -1.0] {
            let sp = sampler(sign);
            let schedule = ScheduleSpec::Cyclical {
                total_steps: 40,
                cycles: 2,
                explore_fraction: 0.3,
                thermostat_while_exploring: crate::math::ExploringThermostat::Frozen,
            }
            .schedule();
            let curvature = [1.0f32, 0.5, 3.0, 2.0, 0.1, 1.5, 0.8];
            let n = curvature.len();
            let mut theta: Vec<f32> = (0..n).map(|i| 0.3 * i as f32 - 1.0).collect();
            let mut reference = theta.clone();
            let mut opt = Atmc::start(sp, schedule, 11, &mut theta, 0.2);
            // The reference: p as the optimiser drew it, then whole steps.
            let mut p = opt.state.p.clone();
            let mut xi = vec![0.2f32; n];
            let steps = 25;
            for k in 0..steps {
                let phase = sp.phase(&schedule, k);
                for i in 0..n {
                    sp.atmc_first_half(&mut reference[i], p[i], &mut xi[i], phase);
                }
                let g: Vec<f32> = (0..n).map(|i| curvature[i] * reference[i]).collect();
                let rng = RngCounter::new(11, 0, k);
                for i in 0..n {
                    let z = rng.normal(Stream::Injected, i as u32);
                    let s = kinetic_derivatives(p[i], sp.mass, sp.inv_mass, sp.speed).2;
                    sp.atmc_second_half(
                        &mut reference[i],
                        &mut p[i],
                        &mut xi[i],
                        s,
                        g[i],
                        z,
                        phase,
                    );
                }
                // The optimiser sees the gradient at its (mid-step) weights.
                let g: Vec<f32> = (0..n).map(|i| curvature[i] * theta[i]).collect();
                opt.step(&mut theta, &g);
            }
            // The optimiser has also started step `steps`: do the same to the reference.
            let phase = sp.phase(&schedule, steps);
            for i in 0..n {
                sp.atmc_first_half(&mut reference[i], p[i], &mut xi[i], phase);
            }
            // Bit for bit (the printed sign reaches NaN, which equals nothing).
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&theta), bits(&reference), "sign {sign}");
            assert_eq!(bits(&opt.state.p), bits(&p));
            assert_eq!(bits(&opt.state.xi), bits(&xi));
        }
    }

    #[test]
    fn printed_sign_diverges_and_corrected_does_not() {
        for (sign, should) in [(1.0, false), (-1.0, true)] {
            let sp = sampler(sign);
            let mut theta = vec![0.5f32; 64];
            let mut opt = Atmc::start(sp, ScheduleSpec::Constant.schedule(), 3, &mut theta, 0.0);
            for _ in 0..2000 {
                let g = theta.clone();
                opt.step(&mut theta, &g);
                if opt.diverged(&theta) {
                    break;
                }
            }
            assert_eq!(opt.diverged(&theta), should, "sign {sign}");
        }
    }

    #[test]
    fn sgd_follows_its_cosine_schedule() {
        let mut sgd = SgdMomentum {
            lr: 0.1,
            momentum: 0.9,
            weight_decay: 0.0,
            total_steps: 100,
            velocity: Vec::new(),
            step: 0,
        };
        assert_eq!(sgd.learning_rate(0), 0.1);
        assert!((sgd.learning_rate(50) - 0.05).abs() < 1e-7);
        assert!(sgd.learning_rate(100).abs() < 1e-7);
        let mut theta = vec![1.0f32];
        sgd.step(&mut theta, &[1.0]);
        assert!((theta[0] - 0.9).abs() < 1e-7);
        sgd.step(&mut theta, &[1.0]);
        // v = 0.9 + 1, lr(1) = 0.1 (1 + cos(π/100))/2.
        let lr1 = 0.05 * (1.0 + (std::f32::consts::PI / 100.0).cos());
        assert!((theta[0] - (0.9 - lr1 * 1.9)).abs() < 1e-6);
    }
}
