//! Bayesian logistic regression on 2 weights (MATH.md §7): a posterior from a synthetic data
//! set, with real minibatch gradient noise, and no closed form: its truth is a quadrature.

use super::{Density, Gradient, Parameter, TARGET_PARAMS, gpu_constants, normal, widened};
use crate::math::grid::Grid2;
use crate::math::ranges;
use crate::math::real::{Real, StepRng};
use crate::math::rng::{RngCounter, SequentialRng, Stream, index_below};
use glam::{DMat2, DVec2};
use rand::RngExt;
use std::borrow::Cow;
use std::sync::Arc;

/// The sliders of `TargetSpec::Logistic` with a continuous value (the data's size, batch and
/// seed are whole numbers).
pub const PARAMETERS: &[Parameter] = &[Parameter::new(
    "prior_scale",
    "prior scale",
    ranges::SIGMA,
    [0.1, 20.0],
    true,
)];

/// Logistic regression data set and prior.
#[derive(Clone, Debug, PartialEq)]
pub struct Logistic {
    /// Inputs, row-major N × 2.
    pub inputs: Vec<[f32; 2]>,
    /// Labels in {0, 1}.
    pub labels: Vec<f32>,
    /// Minibatch size (equal to N for full batch).
    pub batch_size: u32,
    /// Prior standard deviation.
    pub prior_scale: f64,
    /// Posterior mode (Newton's method), used to place the grid.
    pub mode: [f64; 2],
    /// Laplace standard deviations at the mode.
    pub laplace_sd: [f64; 2],
    /// The display box (θ₁ range, θ₂ range): all but ≤ 2.5e-4 of the posterior mass.
    pub display_box: [[f64; 2]; 2],
    /// The posterior's normaliser, as ∫ exp(l(mode) − l(θ)) dθ over three times the display
    /// box (l the −log posterior): computed once here, since every quadrature of the density
    /// needs it and each costs a pass over all the data at every point of a fine grid.
    pub normaliser: f64,
    /// The cell masses of the sampling grid, integrated once for the moments and every draw
    /// of exact samples (shared by clones).
    sampling_masses: SamplingMemo,
}

/// The masses of a logistic posterior's sampling grid, once integrated (a target's data
/// decide them: equal targets, equal masses).
#[derive(Clone, Debug, Default)]
struct SamplingMemo(Arc<std::sync::OnceLock<Vec<f64>>>);

impl PartialEq for SamplingMemo {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Logistic {
    /// Generates N inputs x ~ N(0, I) and labels y ~ Bernoulli(σ(w·x)), seeded.
    pub fn generate(n: u32, batch: u32, w: [f64; 2], prior_scale: f64, seed: u64) -> Self {
        let mut rng = SequentialRng::new(seed, 0x10_91_57);
        let mut inputs = Vec::with_capacity(n as usize);
        let mut labels = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let x = [normal(&mut rng), normal(&mut rng)];
            let prob = sigmoid(w[0] * x[0] + w[1] * x[1]);
            labels.push(if rng.random_bool(prob) { 1.0 } else { 0.0 });
            inputs.push([x[0] as f32, x[1] as f32]);
        }
        let batch_size = if batch == 0 || batch > n { n } else { batch };
        let mut target = Self {
            inputs,
            labels,
            batch_size,
            prior_scale,
            mode: [0.0; 2],
            laplace_sd: [1.0; 2],
            display_box: [[-1.0, 1.0]; 2],
            normaliser: 1.0,
            sampling_masses: SamplingMemo::default(),
        };
        target.fit_laplace();
        target.fit_display_box();
        target.fit_normaliser();
        target
    }

    /// [`Self::normaliser`] by the midpoint rule on 768 × 768 cells over three times the
    /// display box, so that the mass the display box misses shows up as outside mass (with
    /// few data points the posterior is far from smooth on coarser grids).
    fn fit_normaliser(&mut self) {
        let [x, y] = widened(self.display_box, 3.0);
        let l_mode = self.neg_log_posterior(self.mode);
        self.normaliser = Grid2::new(x, y, 768, 768)
            .integrate_cells(1, |x, y| (l_mode - self.neg_log_posterior([x, y])).exp())
            .iter()
            .sum();
    }

    /// The cell masses of `grid` (the target's sampling grid), integrated once.
    fn memo_masses(&self, grid: &Grid2) -> &[f64] {
        self.sampling_masses.0.get_or_init(|| {
            let l_mode = self.neg_log_posterior(self.mode);
            let z = self.normaliser;
            grid.integrate_cells(1, |x, y| {
                (l_mode - self.neg_log_posterior([x, y])).exp() / z
            })
        })
    }

    /// Grows the box mode ± 6 Laplace standard deviations until it holds all but 2.5e-4 of
    /// the posterior, judged on a grid over three times the box. With few data points and a
    /// wide prior the posterior is far from Gaussian (a half-line of separable solutions).
    fn fit_display_box(&mut self) {
        let mut bounds = [0, 1].map(|c| {
            let r = 6.0 * self.laplace_sd[c];
            [self.mode[c] - r, self.mode[c] + r]
        });
        let l_mode = self.neg_log_posterior(self.mode);
        for _ in 0..10 {
            let wide = widened(bounds, 3.0);
            let grid = Grid2::new(wide[0], wide[1], 192, 192);
            let masses =
                grid.integrate_cells(1, |x, y| (l_mode - self.neg_log_posterior([x, y])).exp());
            let total: f64 = masses.iter().sum();
            let (nx, ny) = (grid.nx as usize, grid.ny as usize);
            let mut marginals = [vec![0.0; nx], vec![0.0; ny]];
            for (i, m) in masses.iter().enumerate() {
                marginals[0][i % nx] += m / total;
                marginals[1][i / nx] += m / total;
            }
            let mut grown = bounds;
            for (c, marginal) in marginals.iter().enumerate() {
                let (lo, hi) = (wide[c][0], wide[c][1]);
                let cell = (hi - lo) / marginal.len() as f64;
                let mut acc = 0.0;
                let first = marginal.iter().position(|m| {
                    acc += m;
                    acc > 1.25e-4
                });
                let mut acc = 0.0;
                let last = marginal.iter().rposition(|m| {
                    acc += m;
                    acc > 1.25e-4
                });
                if let (Some(first), Some(last)) = (first, last) {
                    grown[c][0] = grown[c][0].min(lo + first as f64 * cell);
                    grown[c][1] = grown[c][1].max(lo + (last + 1) as f64 * cell);
                }
            }
            if grown == bounds {
                break;
            }
            bounds = grown;
        }
        self.display_box = bounds;
    }

    /// Full-data −log posterior (up to a constant), in f64.
    pub fn neg_log_posterior(&self, w: [f64; 2]) -> f64 {
        let prior = (w[0] * w[0] + w[1] * w[1]) / (2.0 * self.prior_scale * self.prior_scale);
        let lik: f64 = self
            .inputs
            .iter()
            .zip(&self.labels)
            .map(|(x, &y)| {
                let z = w[0] * f64::from(x[0]) + w[1] * f64::from(x[1]);
                softplus(z) - f64::from(y) * z
            })
            .sum();
        prior + lik
    }

    /// Newton's method for the mode and the Laplace standard deviations.
    fn fit_laplace(&mut self) {
        let inv_var = 1.0 / (self.prior_scale * self.prior_scale);
        let prior = DMat2::from_diagonal(DVec2::splat(inv_var));
        let mut w = DVec2::ZERO;
        let mut hess = prior;
        for _ in 0..50 {
            let mut g = w * inv_var;
            hess = prior;
            for (x, &y) in self.inputs.iter().zip(&self.labels) {
                let x = DVec2::new(f64::from(x[0]), f64::from(x[1]));
                let s = sigmoid(w.dot(x));
                g += (s - f64::from(y)) * x;
                // s (1 − s) x xᵀ
                hess += DMat2::from_cols(x * x.x, x * x.y) * (s * (1.0 - s));
            }
            let step = hess.inverse() * g;
            w -= step;
            if step.abs().element_sum() < 1e-12 {
                break;
            }
        }
        let cov = hess.inverse();
        self.mode = w.to_array();
        self.laplace_sd = [cov.x_axis.x.sqrt(), cov.y_axis.y.sqrt()];
    }
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

fn softplus(z: f64) -> f64 {
    if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

impl Density for Logistic {
    fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        self.neg_log_posterior(t)
    }

    fn log_normaliser(&self) -> Option<f64> {
        None
    }

    fn display_box(&self) -> [[f64; 2]; 2] {
        self.display_box
    }

    /// Normalised over three times the display grid (once, when the data set was generated),
    /// so that the mass the display grid misses shows up as outside mass instead of being
    /// assumed away. Each density costs a pass over the data: a fine grid (more than
    /// 256 × 256 cells) takes its cells' midpoints, since its cells are already far smaller
    /// than the posterior's width.
    fn cell_masses(&self, grid: &Grid2, sub: u32) -> Vec<f64> {
        let l_mode = self.neg_log_posterior(self.mode);
        let z = self.normaliser;
        let sub = if grid.cells() > 256 * 256 {
            1
        } else {
            sub.min(4)
        };
        grid.integrate_cells(sub, |x, y| {
            (l_mode - self.neg_log_posterior([x, y])).exp() / z
        })
    }

    fn sampling_masses(&self, grid: &Grid2) -> Cow<'_, [f64]> {
        Cow::Borrowed(self.memo_masses(grid))
    }

    /// From the sampling grid's masses, integrated once for the exact samples too: each
    /// density costs a pass over all the data.
    fn moments(&self) -> ([f64; 2], [f64; 3]) {
        let grid = Density::sampling_grid(self);
        super::grid_moments(&grid, self.memo_masses(&grid))
    }
}

/// Most lanes a gradient evaluation handles.
const MAX_LANES: usize = 16;

impl Gradient for Logistic {
    const GPU_PARAMS: &'static [&'static str] = &["PRIOR_PRECISION"];

    fn gpu_constants(&self) -> [f32; TARGET_PARAMS] {
        gpu_constants(&[1.0 / (self.prior_scale * self.prior_scale) as f32])
    }

    #[inline(always)]
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], rng: &G) -> [R; 2] {
        // Each chain gathers its own minibatch: one lane at a time.
        let mut lanes = [[0.0f32; 2]; MAX_LANES];
        assert!(R::LANES <= MAX_LANES);
        for (k, slot) in lanes.iter_mut().enumerate().take(R::LANES) {
            *slot = logistic_gradient(self, [t[0].lane(k), t[1].lane(k)], &rng.lane(k));
        }
        [R::from_fn(|k| lanes[k][0]), R::from_fn(|k| lanes[k][1])]
    }
}

/// ∇(−log prior) + (N/n) Σ_batch ∇(−log likelihood), each chain drawing its own batch with
/// replacement from the minibatch stream (four indices per Philox call).
#[inline(always)]
fn logistic_gradient(l: &Logistic, t: [f32; 2], rng: &RngCounter) -> [f32; 2] {
    let n = l.inputs.len() as u32;
    let inv_var = 1.0 / (l.prior_scale * l.prior_scale) as f32;
    let (mut g0, mut g1) = (0.0f32, 0.0f32);
    let full = l.batch_size >= n;
    for j in 0..l.batch_size {
        let i = if full {
            j
        } else {
            let bits = rng.bits4(Stream::Minibatch, j / 4);
            index_below(bits[(j % 4) as usize], n)
        } as usize;
        let x = l.inputs[i];
        let z = t[0] * x[0] + t[1] * x[1];
        let r = 1.0 / (1.0 + (-z).exp()) - l.labels[i];
        g0 += r * x[0];
        g1 += r * x[1];
    }
    let scale = n as f32 / l.batch_size as f32;
    [t[0] * inv_var + scale * g0, t[1] * inv_var + scale * g1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::TargetSpec;
    use crate::math::targets::Target;

    #[test]
    fn full_batch_gradient_and_unbiased_minibatch() {
        let Target::Logistic(mut l) = TargetSpec::from_name("logistic").unwrap().build().unwrap()
        else {
            unreachable!()
        };
        let w = [0.8f64, -0.4];
        let target = Target::Logistic(l.clone());
        let mut fd = [0.0; 2];
        for (c, slot) in fd.iter_mut().enumerate() {
            let mut a = w;
            let mut b = w;
            a[c] += 1e-5;
            b[c] -= 1e-5;
            *slot = (target.neg_log_density(a) - target.neg_log_density(b)) / 2e-5;
        }
        // Minibatch gradients average to the full gradient.
        let mut mean = [0.0f64; 2];
        let draws = 20_000;
        for chain in 0..draws {
            let g = target.gradient([w[0] as f32, w[1] as f32], &RngCounter::new(3, chain, 0));
            mean[0] += f64::from(g[0]) / f64::from(draws);
            mean[1] += f64::from(g[1]) / f64::from(draws);
        }
        for c in 0..2 {
            assert!(
                (mean[c] - fd[c]).abs() < 0.05 * (1.0 + fd[c].abs()),
                "{mean:?} {fd:?}"
            );
        }
        l.batch_size = l.inputs.len() as u32;
        let g = Target::Logistic(l).gradient([w[0] as f32, w[1] as f32], &RngCounter::new(0, 0, 0));
        for c in 0..2 {
            assert!((f64::from(g[c]) - fd[c]).abs() < 1e-3 * (1.0 + fd[c].abs()));
        }
    }
}
