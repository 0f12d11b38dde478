//! Target posteriors (MATH.md §7): −log density, gradient, normalised density on a grid and
//! exact samples, so that every sampler is judged against truth.
//!
//! Gradients run in f32, as on the GPU (`shaders/targets.wgsl` mirrors [`Target::gradient`]);
//! densities, cell masses and exact samples are host-side f64.

use super::grid::Grid2;
use super::real::{Real, StepRng};
use super::rng::{RngCounter, SequentialRng, Stream, index_below};
use super::special::normal_cdf;
use glam::{DMat2, DVec2};
use rand::RngExt;
use rand::distr::weighted::WeightedIndex;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A target as written in a preset or on the command line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum TargetSpec {
    /// Bivariate Gaussian with standard deviations σ₁, σ₂ and correlation ρ.
    Gaussian {
        /// Mean.
        #[serde(default, deserialize_with = "crate::math::ranges::de_location")]
        mean: [f64; 2],
        /// Standard deviation of θ₁.
        #[serde(default = "one", deserialize_with = "crate::math::ranges::de_sigma")]
        sigma1: f64,
        /// Standard deviation of θ₂.
        #[serde(default = "one", deserialize_with = "crate::math::ranges::de_sigma")]
        sigma2: f64,
        /// Correlation.
        #[serde(default, deserialize_with = "crate::math::ranges::de_rho")]
        rho: f64,
    },
    /// Rosenbrock-like banana: θ₁ ~ N(0, a²), θ₂ | θ₁ ~ N(b (θ₁² − a²), s²).
    Banana {
        /// Scale of θ₁.
        #[serde(default = "one", deserialize_with = "crate::math::ranges::de_sigma")]
        a: f64,
        /// Curvature.
        #[serde(
            default = "half",
            deserialize_with = "crate::math::ranges::de_curvature"
        )]
        b: f64,
        /// Conditional spread of θ₂.
        #[serde(default = "half", deserialize_with = "crate::math::ranges::de_sigma")]
        s: f64,
    },
    /// Ring: L = (|θ| − radius)² / (2 width²).
    Donut {
        /// Ring radius.
        #[serde(default = "two", deserialize_with = "crate::math::ranges::de_radius")]
        radius: f64,
        /// Radial standard deviation.
        #[serde(
            default = "quarter",
            deserialize_with = "crate::math::ranges::de_sigma"
        )]
        width: f64,
    },
    /// Equal mixture of 25 Gaussians centred on {−2s, −s, 0, s, 2s}² with covariance v·I.
    Gmm25 {
        /// Spacing s of the centres.
        #[serde(default = "two", deserialize_with = "crate::math::ranges::de_radius")]
        spacing: f64,
        /// Variance v of each component.
        #[serde(
            default = "gmm_variance",
            deserialize_with = "crate::math::ranges::de_variance"
        )]
        variance: f64,
    },
    /// Neal's funnel in 2-D: v = θ₂ ~ N(0, σ_v²), θ₁ | v ~ N(0, e^v).
    Funnel {
        /// Standard deviation of the log-scale v.
        #[serde(
            default = "three",
            deserialize_with = "crate::math::ranges::de_funnel_sigma"
        )]
        sigma_v: f64,
    },
    /// Double well: L = barrier ((θ₁/μ)² − 1)² + θ₂²/2.
    DoubleWell {
        /// Position μ of the wells.
        #[serde(
            default = "one_and_half",
            deserialize_with = "crate::math::ranges::de_radius"
        )]
        separation: f64,
        /// Barrier height in units of the temperature.
        #[serde(
            default = "three",
            deserialize_with = "crate::math::ranges::de_barrier"
        )]
        barrier: f64,
    },
    /// Bayesian logistic regression on 2 weights (no intercept) from a synthetic data set.
    Logistic {
        /// Number of data points N.
        #[serde(
            default = "n_data",
            deserialize_with = "crate::math::ranges::de_data_points"
        )]
        data_points: u32,
        /// Minibatch size n (0 or ≥ N: full batch).
        #[serde(default = "batch", deserialize_with = "crate::math::ranges::de_batch")]
        batch_size: u32,
        /// Weights that generated the labels.
        #[serde(
            default = "true_weights",
            deserialize_with = "crate::math::ranges::de_true_weights"
        )]
        true_weights: [f64; 2],
        /// Standard deviation of the Gaussian prior on each weight.
        #[serde(default = "two", deserialize_with = "crate::math::ranges::de_sigma")]
        prior_scale: f64,
        /// Seed of the synthetic data set.
        #[serde(default = "one_u64")]
        data_seed: u64,
    },
    /// A typed energy U(θ₁, θ₂) = −log density up to a constant (docs/MATH.md §9), in the
    /// language of `math::expr`, with named parameters and an optional box for its truth
    /// (found by growing when left out).
    Expression {
        /// The formula, e.g. `"(θ₁^2 + θ₂^2)/2"`.
        energy: String,
        /// Parameter values by name (at most 8), in the order the GPU receives them.
        #[serde(default, deserialize_with = "super::ranges::de_unique_map")]
        parameters: BTreeMap<String, f64>,
        /// The box (θ₁ range, θ₂ range) the truth lives on.
        #[serde(default, rename = "box")]
        bounds: Option<[[f64; 2]; 2]>,
        /// Slider ranges of the app's parameter sliders by name (low, high); a parameter
        /// left out gets a range around its value.
        #[serde(
            default,
            skip_serializing_if = "BTreeMap::is_empty",
            deserialize_with = "super::ranges::de_unique_map"
        )]
        ranges: BTreeMap<String, [f64; 2]>,
    },
}

/// A slider range must belong to a parameter and run from low to high.
fn check_slider_ranges(
    parameters: &BTreeMap<String, f64>,
    ranges: &BTreeMap<String, [f64; 2]>,
) -> Result<(), String> {
    for (name, [lo, hi]) in ranges {
        if !parameters.contains_key(name) {
            return Err(format!(
                "ranges: '{name}' is not a parameter of the formula (parameters: {})",
                parameters.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(format!(
                "ranges: the range of '{name}' must run from a low to a higher finite number, \
                 not {lo} to {hi}"
            ));
        }
    }
    Ok(())
}

fn one() -> f64 {
    1.0
}
fn half() -> f64 {
    0.5
}
fn quarter() -> f64 {
    0.25
}
fn two() -> f64 {
    2.0
}
fn three() -> f64 {
    3.0
}
fn one_and_half() -> f64 {
    1.5
}
fn gmm_variance() -> f64 {
    0.03
}
fn n_data() -> u32 {
    100
}
fn batch() -> u32 {
    10
}
fn true_weights() -> [f64; 2] {
    [1.5, -1.0]
}
fn one_u64() -> u64 {
    1
}

/// Names accepted on the command line, with a one-line description each.
pub const TARGET_NAMES: &[(&str, &str)] = &[
    ("gaussian", "standard normal (set σ₁, σ₂, ρ in a preset)"),
    ("correlated", "Gaussian, unit variances, ρ = 0.8"),
    ("aniso", "Gaussian, variances 4 and 0.25"),
    ("banana", "Rosenbrock-like banana"),
    ("donut", "ring of radius 2"),
    ("gmm25", "25 Gaussians on {−4,−2,0,2,4}², variance 0.03"),
    ("funnel", "Neal's funnel, σ_v = 3"),
    ("double-well", "two wells at ±1.5, barrier 3"),
    (
        "logistic",
        "Bayesian logistic regression, 2 weights, minibatches",
    ),
];

impl TargetSpec {
    /// The target with its default parameters for a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        let gaussian = |sigma1, sigma2, rho| TargetSpec::Gaussian {
            mean: [0.0; 2],
            sigma1,
            sigma2,
            rho,
        };
        Some(match name {
            "gaussian" => gaussian(1.0, 1.0, 0.0),
            "correlated" => gaussian(1.0, 1.0, 0.8),
            "aniso" => gaussian(2.0, 0.5, 0.0),
            "banana" => TargetSpec::Banana {
                a: 1.0,
                b: 0.5,
                s: 0.5,
            },
            "donut" => TargetSpec::Donut {
                radius: 2.0,
                width: 0.25,
            },
            "gmm25" => TargetSpec::Gmm25 {
                spacing: 2.0,
                variance: 0.03,
            },
            "funnel" => TargetSpec::Funnel { sigma_v: 3.0 },
            "double-well" => TargetSpec::DoubleWell {
                separation: 1.5,
                barrier: 3.0,
            },
            "logistic" => TargetSpec::Logistic {
                data_points: 100,
                batch_size: 10,
                true_weights: [1.5, -1.0],
                prior_scale: 2.0,
                data_seed: 1,
            },
            _ => return None,
        })
    }

    /// The command-line name of this target's family.
    pub fn name(&self) -> &'static str {
        match self {
            TargetSpec::Gaussian {
                sigma1,
                sigma2,
                rho,
                ..
            } => {
                if *rho != 0.0 {
                    "correlated"
                } else if sigma1 != sigma2 {
                    "aniso"
                } else {
                    "gaussian"
                }
            }
            TargetSpec::Banana { .. } => "banana",
            TargetSpec::Donut { .. } => "donut",
            TargetSpec::Gmm25 { .. } => "gmm25",
            TargetSpec::Funnel { .. } => "funnel",
            TargetSpec::DoubleWell { .. } => "double-well",
            TargetSpec::Logistic { .. } => "logistic",
            TargetSpec::Expression { .. } => "expression",
        }
    }

    /// Checks what deserialising cannot: an expression compiles, is finite in its box and
    /// is normalisable (its truth is cached for [`Self::build`]). The message says why not.
    /// Other targets are whole once their numbers are in range: nothing is built (building a
    /// logistic posterior costs a quadrature over all its data, which the run pays once).
    pub fn check(&self) -> Result<(), String> {
        match self {
            TargetSpec::Expression { .. } => self.try_build().map(|_| ()),
            _ => Ok(()),
        }
    }

    /// How many modes the diagnostics count visits of ([`Target::modes`]); `None` for a
    /// target without listed modes (a challenge to visit modes cannot be judged on it).
    pub fn countable_modes(&self) -> Option<usize> {
        match self {
            TargetSpec::Gmm25 { .. } => Some(25),
            _ => None,
        }
    }

    /// [`Self::build`], or why an expression target cannot be built.
    pub fn try_build(&self) -> Result<Target, String> {
        match self {
            TargetSpec::Expression {
                energy,
                parameters,
                bounds,
                ranges,
            } => {
                check_slider_ranges(parameters, ranges)?;
                Ok(Target::Expression(super::expr::ExprTarget::cached(
                    energy, parameters, *bounds,
                )?))
            }
            _ => Ok(self.build()),
        }
    }

    /// Builds the runtime target (generates the data set of data-based targets). An
    /// expression target must have passed [`Self::check`] (presets check on loading).
    pub fn build(&self) -> Target {
        match *self {
            TargetSpec::Expression { .. } => self
                .try_build()
                .unwrap_or_else(|m| panic!("an unchecked expression target: {m}")),
            TargetSpec::Gaussian {
                mean,
                sigma1,
                sigma2,
                rho,
            } => Target::Gaussian(Gaussian::new(mean, sigma1, sigma2, rho)),
            TargetSpec::Banana { a, b, s } => Target::Banana { a, b, s },
            TargetSpec::Donut { radius, width } => Target::Donut { radius, width },
            TargetSpec::Gmm25 { spacing, variance } => Target::Gmm25 { spacing, variance },
            TargetSpec::Funnel { sigma_v } => Target::Funnel { sigma_v },
            TargetSpec::DoubleWell {
                separation,
                barrier,
            } => Target::DoubleWell {
                separation,
                barrier,
            },
            TargetSpec::Logistic {
                data_points,
                batch_size,
                true_weights,
                prior_scale,
                data_seed,
            } => Target::Logistic(Logistic::generate(
                data_points,
                batch_size,
                true_weights,
                prior_scale,
                data_seed,
            )),
        }
    }
}

/// Bivariate Gaussian with precomputed precision matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Gaussian {
    /// Mean.
    pub mean: [f64; 2],
    /// Standard deviations.
    pub sigma: [f64; 2],
    /// Correlation.
    pub rho: f64,
    /// Precision matrix entries (p11, p12, p22).
    pub precision: [f64; 3],
}

impl Gaussian {
    /// A Gaussian from its mean, standard deviations and correlation (|ρ| < 1).
    pub fn new(mean: [f64; 2], sigma1: f64, sigma2: f64, rho: f64) -> Self {
        // Σ = S R S with S = diag(σ), so Σ⁻¹ = S⁻¹ R⁻¹ S⁻¹: the only determinant is R's,
        // 1 − ρ², which keeps full precision as |ρ| → 1 (Σ's own would cancel).
        let correlation = DMat2::from_cols_array(&[1.0, rho, rho, 1.0]);
        let s_inv = DMat2::from_diagonal(DVec2::new(sigma1, sigma2).recip());
        let p = s_inv * correlation.inverse() * s_inv;
        Self {
            mean,
            sigma: [sigma1, sigma2],
            rho,
            precision: [p.x_axis.x, p.x_axis.y, p.y_axis.y],
        }
    }

    /// The lower Cholesky factor L of the covariance (Σ = L Lᵀ): θ = μ + L z for z ~ N(0, I).
    fn cholesky(&self) -> DMat2 {
        let [s1, s2] = self.sigma;
        let c = (1.0 - self.rho * self.rho).sqrt();
        DMat2::from_cols(DVec2::new(s1, self.rho * s2), DVec2::new(0.0, c * s2))
    }
}

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
    fn sampling_masses(&self, grid: &Grid2) -> &[f64] {
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

/// A box scaled by `factor` about its centre.
fn widened(bounds: [[f64; 2]; 2], factor: f64) -> [[f64; 2]; 2] {
    bounds.map(|[lo, hi]| {
        let (centre, half) = (0.5 * (lo + hi), 0.5 * factor * (hi - lo));
        [centre - half, centre + half]
    })
}

/// Mean and covariance (c11, c12, c22) of cell masses on a grid, from the cell centres.
fn grid_moments(grid: &Grid2, m: &[f64]) -> ([f64; 2], [f64; 3]) {
    let total: f64 = m.iter().sum();
    let mut mean = [0.0; 2];
    let mut second = [0.0; 3];
    for iy in 0..grid.ny {
        for ix in 0..grid.nx {
            let w = m[(iy * grid.nx + ix) as usize] / total;
            let c = grid.cell_center(ix, iy);
            mean[0] += w * c[0];
            mean[1] += w * c[1];
            second[0] += w * c[0] * c[0];
            second[1] += w * c[0] * c[1];
            second[2] += w * c[1] * c[1];
        }
    }
    (
        mean,
        [
            second[0] - mean[0] * mean[0],
            second[1] - mean[0] * mean[1],
            second[2] - mean[1] * mean[1],
        ],
    )
}

/// One standard normal draw in f64 (rand_distr's ziggurat).
fn normal(rng: &mut SequentialRng) -> f64 {
    StandardNormal.sample(rng)
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

/// The kind of a [`Target`], as the shaders number it (the override constant
/// `SPECIALISED_TARGET`, the generated WGSL `TARGET_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum TargetKind {
    /// [`Target::Gaussian`].
    Gaussian,
    /// [`Target::Banana`].
    Banana,
    /// [`Target::Donut`].
    Donut,
    /// [`Target::Gmm25`].
    Gmm25,
    /// [`Target::Funnel`].
    Funnel,
    /// [`Target::DoubleWell`].
    DoubleWell,
    /// [`Target::Logistic`].
    Logistic,
    /// [`Target::Expression`]: the gradient is a generated WGSL function, one pipeline per
    /// formula.
    Expression,
}

impl TargetKind {
    /// Every kind, in code order.
    pub const ALL: [TargetKind; 8] = [
        TargetKind::Gaussian,
        TargetKind::Banana,
        TargetKind::Donut,
        TargetKind::Gmm25,
        TargetKind::Funnel,
        TargetKind::DoubleWell,
        TargetKind::Logistic,
        TargetKind::Expression,
    ];

    /// The code the shaders switch on.
    pub const fn gpu_code(self) -> u32 {
        self as u32
    }
}

/// The number of f32 constants a target passes to the shaders ([`Target::gpu_constants`]).
pub const TARGET_PARAMS: usize = 8;

/// Where [`Target::gpu_constants`] puts each constant of a target: the host writes by these
/// positions and `shaders/targets.wgsl` reads `target_param(PARAM_*)` with the constants
/// generated from them (`src/engine/shader_interface.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetParam {
    /// Gaussian: mean, coordinate 0.
    GaussianMean0,
    /// Gaussian: mean, coordinate 1.
    GaussianMean1,
    /// Gaussian: precision matrix, entry (0, 0).
    GaussianPrecision00,
    /// Gaussian: precision matrix, entry (0, 1) = (1, 0).
    GaussianPrecision01,
    /// Gaussian: precision matrix, entry (1, 1).
    GaussianPrecision11,
    /// Banana: a.
    BananaA,
    /// Banana: b.
    BananaB,
    /// Banana: s.
    BananaS,
    /// Donut: the radius.
    DonutRadius,
    /// Donut: the squared width.
    DonutWidthSq,
    /// 25-Gaussian mixture: the spacing of the components.
    Gmm25Spacing,
    /// 25-Gaussian mixture: the variance of each component.
    Gmm25Variance,
    /// Funnel: σ_v².
    FunnelSigmaVSq,
    /// Double well: the squared separation μ².
    DoubleWellSeparationSq,
    /// Double well: the barrier height.
    DoubleWellBarrier,
    /// Logistic regression: the prior precision 1/s².
    LogisticPriorPrecision,
}

impl TargetParam {
    /// Every position, by target.
    pub const ALL: [TargetParam; 16] = [
        TargetParam::GaussianMean0,
        TargetParam::GaussianMean1,
        TargetParam::GaussianPrecision00,
        TargetParam::GaussianPrecision01,
        TargetParam::GaussianPrecision11,
        TargetParam::BananaA,
        TargetParam::BananaB,
        TargetParam::BananaS,
        TargetParam::DonutRadius,
        TargetParam::DonutWidthSq,
        TargetParam::Gmm25Spacing,
        TargetParam::Gmm25Variance,
        TargetParam::FunnelSigmaVSq,
        TargetParam::DoubleWellSeparationSq,
        TargetParam::DoubleWellBarrier,
        TargetParam::LogisticPriorPrecision,
    ];

    /// The target whose constant this is.
    pub const fn target(self) -> TargetKind {
        match self {
            TargetParam::GaussianMean0
            | TargetParam::GaussianMean1
            | TargetParam::GaussianPrecision00
            | TargetParam::GaussianPrecision01
            | TargetParam::GaussianPrecision11 => TargetKind::Gaussian,
            TargetParam::BananaA | TargetParam::BananaB | TargetParam::BananaS => {
                TargetKind::Banana
            }
            TargetParam::DonutRadius | TargetParam::DonutWidthSq => TargetKind::Donut,
            TargetParam::Gmm25Spacing | TargetParam::Gmm25Variance => TargetKind::Gmm25,
            TargetParam::FunnelSigmaVSq => TargetKind::Funnel,
            TargetParam::DoubleWellSeparationSq | TargetParam::DoubleWellBarrier => {
                TargetKind::DoubleWell
            }
            TargetParam::LogisticPriorPrecision => TargetKind::Logistic,
        }
    }

    /// The constant's index among its target's [`TARGET_PARAMS`].
    pub const fn position(self) -> usize {
        match self {
            TargetParam::GaussianMean0
            | TargetParam::BananaA
            | TargetParam::DonutRadius
            | TargetParam::Gmm25Spacing
            | TargetParam::FunnelSigmaVSq
            | TargetParam::DoubleWellSeparationSq
            | TargetParam::LogisticPriorPrecision => 0,
            TargetParam::GaussianMean1
            | TargetParam::BananaB
            | TargetParam::DonutWidthSq
            | TargetParam::Gmm25Variance
            | TargetParam::DoubleWellBarrier => 1,
            TargetParam::GaussianPrecision00 | TargetParam::BananaS => 2,
            TargetParam::GaussianPrecision01 => 3,
            TargetParam::GaussianPrecision11 => 4,
        }
    }
}

/// A target ready to evaluate.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// See [`TargetSpec::Gaussian`].
    Gaussian(Gaussian),
    /// See [`TargetSpec::Banana`].
    Banana {
        /// Scale of θ₁.
        a: f64,
        /// Curvature.
        b: f64,
        /// Conditional spread of θ₂.
        s: f64,
    },
    /// See [`TargetSpec::Donut`].
    Donut {
        /// Ring radius.
        radius: f64,
        /// Radial standard deviation.
        width: f64,
    },
    /// See [`TargetSpec::Gmm25`].
    Gmm25 {
        /// Spacing of the centres.
        spacing: f64,
        /// Component variance.
        variance: f64,
    },
    /// See [`TargetSpec::Funnel`].
    Funnel {
        /// Standard deviation of v.
        sigma_v: f64,
    },
    /// See [`TargetSpec::DoubleWell`].
    DoubleWell {
        /// Well position.
        separation: f64,
        /// Barrier height.
        barrier: f64,
    },
    /// See [`TargetSpec::Logistic`].
    Logistic(Logistic),
    /// See [`TargetSpec::Expression`].
    Expression(Arc<super::expr::ExprTarget>),
}

impl Target {
    /// Dimension of θ.
    pub fn dim(&self) -> usize {
        2
    }

    /// −log density up to an additive constant (the constant of [`Self::log_normaliser`]).
    pub fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        match self {
            Target::Gaussian(g) => {
                let (d0, d1) = (t[0] - g.mean[0], t[1] - g.mean[1]);
                let p = g.precision;
                0.5 * (p[0] * d0 * d0 + 2.0 * p[1] * d0 * d1 + p[2] * d1 * d1)
            }
            Target::Banana { a, b, s } => {
                let r = t[1] - b * (t[0] * t[0] - a * a);
                t[0] * t[0] / (2.0 * a * a) + r * r / (2.0 * s * s)
            }
            Target::Donut { radius, width } => {
                let r = (t[0] * t[0] + t[1] * t[1]).sqrt() - radius;
                r * r / (2.0 * width * width)
            }
            Target::Gmm25 { spacing, variance } => {
                let mut terms = [0.0f64; 25];
                for (k, term) in terms.iter_mut().enumerate() {
                    let c = gmm_centre(k, *spacing);
                    let d = (t[0] - c[0]).powi(2) + (t[1] - c[1]).powi(2);
                    *term = -d / (2.0 * variance);
                }
                let m = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                -(m + terms.iter().map(|v| (v - m).exp()).sum::<f64>().ln())
            }
            Target::Funnel { sigma_v } => {
                let v = t[1];
                v * v / (2.0 * sigma_v * sigma_v) + 0.5 * t[0] * t[0] * (-v).exp() + 0.5 * v
            }
            Target::DoubleWell {
                separation,
                barrier,
            } => {
                let q = (t[0] / separation).powi(2) - 1.0;
                barrier * q * q + 0.5 * t[1] * t[1]
            }
            Target::Logistic(l) => l.neg_log_posterior(t),
            Target::Expression(e) => e.energy(t),
        }
    }

    /// log of the normalising constant of exp(−[`Self::neg_log_density`]) where it is known
    /// in closed form.
    pub fn log_normaliser(&self) -> Option<f64> {
        use std::f64::consts::{PI, TAU};
        match self {
            Target::Gaussian(g) => {
                Some((TAU * g.sigma[0] * g.sigma[1] * (1.0 - g.rho * g.rho).sqrt()).ln())
            }
            Target::Banana { a, s, .. } => Some((TAU * a * s).ln()),
            Target::Donut { radius, width } => {
                let (r, w) = (*radius, *width);
                let radial = w * w * (-r * r / (2.0 * w * w)).exp()
                    + r * w * (2.0 * PI).sqrt() * normal_cdf(r / w);
                Some((TAU * radial).ln())
            }
            Target::Gmm25 { variance, .. } => Some((25.0 * TAU * variance).ln()),
            Target::Funnel { sigma_v } => Some((TAU * sigma_v).ln()),
            Target::DoubleWell {
                separation,
                barrier,
            } => {
                let (_, cdf) = double_well_cdf(*separation, *barrier);
                Some((cdf.last().copied().unwrap_or(0.0) * (2.0 * PI).sqrt()).ln())
            }
            Target::Logistic(_) => None,
            Target::Expression(e) => Some(e.log_normaliser),
        }
    }

    /// The display grid: it holds at least 99.9% of the mass for every parameter in range
    /// (tested at the corners of the ranges).
    pub fn default_grid(&self) -> Grid2 {
        let (x, y) = match self {
            Target::Gaussian(g) => (
                [g.mean[0] - 5.0 * g.sigma[0], g.mean[0] + 5.0 * g.sigma[0]],
                [g.mean[1] - 5.0 * g.sigma[1], g.mean[1] + 5.0 * g.sigma[1]],
            ),
            Target::Banana { a, b, s } => {
                // θ₂ is centred on b (θ₁² − a²): −b a² at θ₁ = 0, b (θ₁² − a²) out on the arms,
                // above the centre for b > 0 and below it for b < 0.
                let x = 4.5 * a;
                let centre = -b * a * a;
                let arms = b * (x * x * 0.8 - a * a);
                (
                    [-x, x],
                    [centre.min(arms) - 4.5 * s, centre.max(arms) + 4.5 * s],
                )
            }
            Target::Donut { radius, width } => {
                let r = radius + 5.0 * width;
                ([-r, r], [-r, r])
            }
            Target::Gmm25 { spacing, variance } => {
                let r = 2.0 * spacing + 5.0 * variance.sqrt();
                ([-r, r], [-r, r])
            }
            Target::Funnel { sigma_v } => {
                // The mouth is wide: θ₁'s tails are a scale mixture of normals.
                let x = funnel_x_quantile(*sigma_v, 2.5e-4);
                ([-x, x], [-3.7 * sigma_v, 3.7 * sigma_v])
            }
            Target::DoubleWell {
                separation,
                barrier,
            } => {
                let x = double_well_extent(*separation, *barrier, 2.5e-4).max(2.2 * separation);
                ([-x, x], [-4.5, 4.5])
            }
            Target::Logistic(l) => (l.display_box[0], l.display_box[1]),
            Target::Expression(e) => (e.bounds[0], e.bounds[1]),
        };
        Grid2::new(x, y, 64, 64)
    }

    /// Probability mass of every cell of `grid` (row-major) and the mass outside it.
    ///
    /// Uses the analytic normaliser where one exists (so the outside mass is real); the
    /// logistic posterior is normalised by quadrature on a grid around its mode. The funnel's
    /// neck is narrower than any display cell, so its masses come from the exact conditional
    /// CDF instead of a midpoint rule.
    pub fn cell_masses(&self, grid: &Grid2) -> (Vec<f64>, f64) {
        self.cell_masses_with(grid, 6)
    }

    /// [`Self::cell_masses`] with `sub × sub` midpoint samples per cell: a cheaper preview for
    /// displays (the funnel's exact masses ignore `sub`).
    pub fn cell_masses_with(&self, grid: &Grid2, sub: u32) -> (Vec<f64>, f64) {
        let masses = match self {
            Target::Funnel { sigma_v } => funnel_cell_masses(grid, *sigma_v),
            // Refined where U is steep across a cell (the sub-sampling is its own).
            Target::Expression(e) => e.cell_masses(grid),
            Target::Logistic(l) => {
                // Normalised over three times the display grid (once, when the data set was
                // generated), so that the mass the display grid misses shows up as outside
                // mass instead of being assumed away. Each density costs a pass over the
                // data: a fine grid (more than 256 × 256 cells) takes its cells' midpoints,
                // since its cells are already far smaller than the posterior's width.
                let l_mode = l.neg_log_posterior(l.mode);
                let z = l.normaliser;
                let sub = if grid.cells() > 256 * 256 {
                    1
                } else {
                    sub.min(4)
                };
                grid.integrate_cells(sub, |x, y| (l_mode - l.neg_log_posterior([x, y])).exp() / z)
            }
            _ => {
                let log_z = self.log_normaliser().expect("closed-form normaliser");
                grid.integrate_cells(sub, |x, y| (-self.neg_log_density([x, y]) - log_z).exp())
            }
        };
        let inside: f64 = masses.iter().sum();
        (masses, (1.0 - inside).max(0.0))
    }

    /// The |θ| beyond which a chain counts as diverged: a thousand times the largest
    /// coordinate of the display grid, which holds 99.9% of the mass.
    pub fn theta_bound(&self) -> f32 {
        let g = self.default_grid();
        let scale = [g.x[0], g.x[1], g.y[0], g.y[1]]
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        (1e3 * scale).min(f64::from(f32::MAX)) as f32
    }

    /// The modes of a mixture target with their radius — the disc holding 99% of a
    /// component's mass, √(−2 ln 0.01) ≈ 3.03 standard deviations: where a chain counts as
    /// having visited a mode. None for other targets.
    pub fn modes(&self) -> Option<(Vec<[f64; 2]>, f64)> {
        match self {
            Target::Gmm25 { spacing, variance } => Some((
                (0..25).map(|k| gmm_centre(k, *spacing)).collect(),
                (-2.0 * 0.01f64.ln()).sqrt() * variance.sqrt(),
            )),
            _ => None,
        }
    }

    /// Mean and covariance (c11, c12, c22) of the target, exact where known in closed form and
    /// otherwise from a fine quadrature grid.
    pub fn moments(&self) -> ([f64; 2], [f64; 3]) {
        match self {
            Target::Gaussian(g) => (
                g.mean,
                [
                    g.sigma[0] * g.sigma[0],
                    g.rho * g.sigma[0] * g.sigma[1],
                    g.sigma[1] * g.sigma[1],
                ],
            ),
            Target::Banana { a, b, s } => ([0.0; 2], [a * a, 0.0, 2.0 * b * b * a.powi(4) + s * s]),
            Target::Gmm25 { spacing, variance } => {
                let v = variance + 2.0 * spacing * spacing;
                ([0.0; 2], [v, 0.0, v])
            }
            Target::Funnel { sigma_v } => (
                [0.0; 2],
                [(sigma_v * sigma_v / 2.0).exp(), 0.0, sigma_v * sigma_v],
            ),
            // The sampling grid's masses, integrated once for the exact samples too: each
            // density costs a pass over all the data.
            Target::Logistic(l) => {
                let grid = self.sampling_grid();
                grid_moments(&grid, l.sampling_masses(&grid))
            }
            _ => {
                let grid = self.default_grid().with_resolution(400, 400);
                let (m, _) = self.cell_masses(&grid);
                grid_moments(&grid, &m)
            }
        }
    }

    /// `n` exact samples (flattened pairs), seeded.
    pub fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SequentialRng::new(seed, Stream::Exact as u32);
        let mut out = Vec::with_capacity(2 * n);
        match self {
            Target::Gaussian(g) => {
                let (mean, l) = (DVec2::from_array(g.mean), g.cholesky());
                for _ in 0..n {
                    let z = DVec2::new(normal(&mut rng), normal(&mut rng));
                    out.extend((mean + l * z).to_array());
                }
            }
            Target::Banana { a, b, s } => {
                for _ in 0..n {
                    let x = a * normal(&mut rng);
                    out.push(x);
                    out.push(b * (x * x - a * a) + s * normal(&mut rng));
                }
            }
            Target::Donut { radius, width } => {
                // Radius density ∝ ρ exp(−(ρ − r)²/(2w²)): propose ρ ~ N(r, w²) on ρ > 0,
                // accept with probability ρ / ρ_max.
                let rho_max = radius + 10.0 * width;
                while out.len() < 2 * n {
                    let rho = radius + width * normal(&mut rng);
                    if rho <= 0.0 || rho > rho_max || !rng.random_bool(rho / rho_max) {
                        continue;
                    }
                    let phi = rng.random_range(0.0..std::f64::consts::TAU);
                    out.push(rho * phi.cos());
                    out.push(rho * phi.sin());
                }
            }
            Target::Gmm25 { spacing, variance } => {
                let sd = variance.sqrt();
                for _ in 0..n {
                    let c = gmm_centre(rng.random_range(0..25), *spacing);
                    out.push(c[0] + sd * normal(&mut rng));
                    out.push(c[1] + sd * normal(&mut rng));
                }
            }
            Target::Funnel { sigma_v } => {
                for _ in 0..n {
                    let v = sigma_v * normal(&mut rng);
                    out.push((0.5 * v).exp() * normal(&mut rng));
                    out.push(v);
                }
            }
            Target::Expression(e) => out = e.exact_samples(n, seed),
            Target::DoubleWell { .. } | Target::Logistic(_) => {
                // A cell of a fine grid drawn by its mass, then a uniform point inside it.
                let grid = self.sampling_grid();
                let m = match self {
                    Target::Logistic(l) => l.sampling_masses(&grid).to_vec(),
                    _ => self.cell_masses(&grid).0,
                };
                let cells = WeightedIndex::new(&m).expect("cell masses are finite, not all zero");
                let [dx, dy] = grid.cell_size();
                for _ in 0..n {
                    let i = cells.sample(&mut rng) as u32;
                    let (ix, iy) = (i % grid.nx, i / grid.nx);
                    let (ux, uy): (f64, f64) = (rng.random(), rng.random());
                    out.push(grid.x[0] + (f64::from(ix) + ux) * dx);
                    out.push(grid.y[0] + (f64::from(iy) + uy) * dy);
                }
            }
        }
        out
    }

    fn sampling_grid(&self) -> Grid2 {
        match self {
            Target::DoubleWell {
                separation,
                barrier,
            } => {
                let lim = double_well_limit(*separation, *barrier);
                Grid2::new([-lim, lim], [-6.0, 6.0], 1000, 600)
            }
            _ => self.default_grid().with_resolution(600, 600),
        }
    }

    /// The target's kind and the f32 constants its gradient uses, exactly as
    /// [`Self::gradient`] computes them, each at its [`TargetParam::position`], for
    /// `shaders/targets.wgsl`.
    pub fn gpu_constants(&self) -> (TargetKind, [f32; TARGET_PARAMS]) {
        use TargetParam as P;
        let mut c = [0.0f32; TARGET_PARAMS];
        let mut set = |param: P, value: f32| c[param.position()] = value;
        let kind = match self {
            Target::Gaussian(g) => {
                set(P::GaussianMean0, g.mean[0] as f32);
                set(P::GaussianMean1, g.mean[1] as f32);
                set(P::GaussianPrecision00, g.precision[0] as f32);
                set(P::GaussianPrecision01, g.precision[1] as f32);
                set(P::GaussianPrecision11, g.precision[2] as f32);
                TargetKind::Gaussian
            }
            Target::Banana { a, b, s } => {
                set(P::BananaA, *a as f32);
                set(P::BananaB, *b as f32);
                set(P::BananaS, *s as f32);
                TargetKind::Banana
            }
            Target::Donut { radius, width } => {
                set(P::DonutRadius, *radius as f32);
                set(P::DonutWidthSq, (width * width) as f32);
                TargetKind::Donut
            }
            Target::Gmm25 { spacing, variance } => {
                set(P::Gmm25Spacing, *spacing as f32);
                set(P::Gmm25Variance, *variance as f32);
                TargetKind::Gmm25
            }
            Target::Funnel { sigma_v } => {
                set(P::FunnelSigmaVSq, (sigma_v * sigma_v) as f32);
                TargetKind::Funnel
            }
            Target::DoubleWell {
                separation,
                barrier,
            } => {
                set(P::DoubleWellSeparationSq, (separation * separation) as f32);
                set(P::DoubleWellBarrier, *barrier as f32);
                TargetKind::DoubleWell
            }
            Target::Logistic(l) => {
                set(
                    P::LogisticPriorPrecision,
                    1.0 / (l.prior_scale * l.prior_scale) as f32,
                );
                TargetKind::Logistic
            }
            Target::Expression(e) => return (TargetKind::Expression, e.values_f32),
        };
        (kind, c)
    }

    /// Stochastic gradient of −log density at θ in f32, for one chain or lanes of chains
    /// (minibatched for data targets; the synthetic gradient noise of MATH.md §4 is added by
    /// the caller).
    #[inline(always)]
    pub fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], rng: &G) -> [R; 2] {
        match self {
            Target::Gaussian(g) => {
                let d0 = t[0] - g.mean[0] as f32;
                let d1 = t[1] - g.mean[1] as f32;
                let p = g.precision.map(|v| v as f32);
                [d0 * p[0] + d1 * p[1], d0 * p[1] + d1 * p[2]]
            }
            Target::Banana { a, b, s } => {
                let (a, b, s) = (*a as f32, *b as f32, *s as f32);
                let r = (t[1] - (t[0] * t[0] - a * a) * b) / (s * s);
                [t[0] / (a * a) - t[0] * r * (2.0 * b), r]
            }
            Target::Donut { radius, width } => {
                let norm = (t[0] * t[0] + t[1] * t[1]).sqrt();
                // The ring's gradient is undefined at the origin; 0 there is the symmetric choice.
                let f = (norm - *radius as f32) / (norm * (*width * *width) as f32);
                let f = norm.select_lt(R::splat(1e-20), R::splat(0.0), f);
                [f * t[0], f * t[1]]
            }
            Target::Gmm25 { spacing, variance } => {
                gmm_gradient(t, *spacing as f32, *variance as f32)
            }
            Target::Funnel { sigma_v } => {
                let s2 = (*sigma_v * *sigma_v) as f32;
                let e = (-t[1]).exp();
                [t[0] * e, t[1] / s2 - t[0] * t[0] * e * 0.5 + 0.5]
            }
            Target::DoubleWell {
                separation,
                barrier,
            } => {
                let mu2 = (*separation * *separation) as f32;
                let q = t[0] * t[0] / mu2 - 1.0;
                [q * (4.0 * *barrier as f32) * t[0] / mu2, t[1]]
            }
            Target::Logistic(l) => {
                // Each chain gathers its own minibatch: one lane at a time.
                let mut lanes = [[0.0f32; 2]; MAX_LANES];
                assert!(R::LANES <= MAX_LANES);
                for (k, slot) in lanes.iter_mut().enumerate().take(R::LANES) {
                    *slot = logistic_gradient(l, [t[0].lane(k), t[1].lane(k)], &rng.lane(k));
                }
                [R::from_fn(|k| lanes[k][0]), R::from_fn(|k| lanes[k][1])]
            }
            Target::Expression(e) => e.formula.gradient(t, &e.values_f32),
        }
    }
}

/// Most lanes a gradient evaluation handles.
const MAX_LANES: usize = 16;

/// Centre of component k of the 25-Gaussian mixture.
fn gmm_centre(k: usize, spacing: f64) -> [f64; 2] {
    [
        (k % 5) as f64 * spacing - 2.0 * spacing,
        (k / 5) as f64 * spacing - 2.0 * spacing,
    ]
}

/// Gradient of −log Σₖ exp(−|θ − μₖ|²/(2v)): responsibilities by a stable log-sum-exp.
#[inline(always)]
fn gmm_gradient<R: Real>(t: [R; 2], spacing: f32, variance: f32) -> [R; 2] {
    let mut d_min = R::splat(f32::INFINITY);
    for k in 0..25 {
        let cx = (k % 5) as f32 * spacing - 2.0 * spacing;
        let cy = (k / 5) as f32 * spacing - 2.0 * spacing;
        let d = ((t[0] - cx) * (t[0] - cx) + (t[1] - cy) * (t[1] - cy)) / (2.0 * variance);
        d_min = d_min.min(d);
    }
    let (mut w_sum, mut gx, mut gy) = (R::splat(0.0), R::splat(0.0), R::splat(0.0));
    for k in 0..25 {
        let cx = (k % 5) as f32 * spacing - 2.0 * spacing;
        let cy = (k / 5) as f32 * spacing - 2.0 * spacing;
        let d = ((t[0] - cx) * (t[0] - cx) + (t[1] - cy) * (t[1] - cy)) / (2.0 * variance);
        let w = (d_min - d).exp();
        w_sum += w;
        gx += w * (t[0] - cx);
        gy += w * (t[1] - cy);
    }
    [gx / (w_sum * variance), gy / (w_sum * variance)]
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

/// Beyond ±this the double well's θ₁ factor exp(−barrier ((θ₁/μ)² − 1)²) is below e^{−36}:
/// where barrier · q² = 36 with q = (θ₁/μ)² − 1. Small barriers reach far (22 μ at 1e-4).
fn double_well_limit(separation: f64, barrier: f64) -> f64 {
    separation * (1.0 + 6.0 / barrier.sqrt()).sqrt()
}

/// The double well's θ₁ factor integrated by Simpson's rule over ±[`double_well_limit`]:
/// every other node and the cumulative integral up to it (unnormalised).
fn double_well_cdf(separation: f64, barrier: f64) -> (Vec<f64>, Vec<f64>) {
    let lim = double_well_limit(separation, barrier);
    let n = 20_000;
    let dx = 2.0 * lim / n as f64;
    let f = |x: f64| {
        let q = (x / separation).powi(2) - 1.0;
        (-barrier * q * q).exp()
    };
    let nodes: Vec<f64> = (0..=n).map(|i| -lim + i as f64 * dx).collect();
    // Cumulative Simpson over pairs of intervals, in units of dx.
    let mut cdf = vec![0.0];
    let mut acc = 0.0;
    for i in (0..n).step_by(2) {
        acc += (f(nodes[i]) + 4.0 * f(nodes[i + 1]) + f(nodes[i + 2])) / 3.0;
        cdf.push(acc);
    }
    let pair_nodes: Vec<f64> = nodes.iter().step_by(2).copied().collect();
    (pair_nodes, cdf.iter().map(|c| c * dx).collect())
}

/// The smallest x with at most `tail` of the double well's θ₁ mass beyond ±x.
fn double_well_extent(separation: f64, barrier: f64, tail: f64) -> f64 {
    let (x, cdf) = double_well_cdf(separation, barrier);
    let total = cdf.last().copied().unwrap_or(1.0);
    // The factor is even: the mass below −x is half of the mass beyond ±x.
    let i = cdf.partition_point(|&c| c / total <= 0.5 * tail);
    x[i.saturating_sub(1)].abs()
}

/// The |θ₁| beyond which the funnel has probability `tail`: θ₁ = e^{v/2} z with
/// v ~ N(0, σ_v²), so P(|θ₁| > x) = E_v[2 Φ(−x e^{−v/2})] (Simpson over ±8 σ_v, bisection on
/// log x).
fn funnel_x_quantile(sigma_v: f64, tail: f64) -> f64 {
    let tail_at = |x: f64| {
        let n = 400;
        let h = 16.0 * sigma_v / f64::from(n);
        let f = |v: f64| {
            let pv = (-v * v / (2.0 * sigma_v * sigma_v)).exp()
                / (sigma_v * (2.0 * std::f64::consts::PI).sqrt());
            pv * 2.0 * normal_cdf(-x * (-0.5 * v).exp())
        };
        let mut s = f(-8.0 * sigma_v) + f(8.0 * sigma_v);
        for k in 1..n {
            s += f(-8.0 * sigma_v + f64::from(k) * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
        }
        s * h / 3.0
    };
    let (mut lo, mut hi) = (1e-3f64.ln(), 1e12f64.ln());
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if tail_at(mid.exp()) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi.exp()
}

/// Exact cell masses of the funnel: ∫ N(v; 0, σ²) [Φ(x₁ e^{−v/2}) − Φ(x₀ e^{−v/2})] dv over
/// each cell's v-range, by composite Simpson's rule.
fn funnel_cell_masses(grid: &Grid2, sigma_v: f64) -> Vec<f64> {
    use rayon::prelude::*;
    let [dx, dv] = grid.cell_size();
    let sub = 16;
    (0..grid.cells())
        .into_par_iter()
        .map(|i| {
            let ix = (i % grid.nx as usize) as f64;
            let iv = (i / grid.nx as usize) as f64;
            let x0 = grid.x[0] + ix * dx;
            let x1 = x0 + dx;
            let v0 = grid.y[0] + iv * dv;
            let h = dv / f64::from(sub);
            let f = |v: f64| {
                let pv = (-v * v / (2.0 * sigma_v * sigma_v)).exp()
                    / (sigma_v * (2.0 * std::f64::consts::PI).sqrt());
                let e = (-0.5 * v).exp();
                pv * (normal_cdf(x1 * e) - normal_cdf(x0 * e))
            };
            let mut s = f(v0) + f(v0 + dv);
            for k in 1..sub {
                s += f(v0 + f64::from(k) * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
            }
            s * h / 3.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_targets() -> Vec<Target> {
        TARGET_NAMES
            .iter()
            .map(|(n, _)| TargetSpec::from_name(n).unwrap().build())
            .collect()
    }

    #[test]
    fn analytic_gradients_match_finite_differences() {
        let rng = RngCounter::new(0, 0, 0);
        for target in all_targets() {
            if let Target::Logistic(_) = target {
                continue; // checked with the full batch below
            }
            for point in [[0.3f64, -0.7], [1.1, 0.4], [-1.7, 1.3]] {
                let g = target.gradient([point[0] as f32, point[1] as f32], &rng);
                for c in 0..2 {
                    let eps = 1e-5;
                    let mut a = point;
                    let mut b = point;
                    a[c] += eps;
                    b[c] -= eps;
                    let fd = (target.neg_log_density(a) - target.neg_log_density(b)) / (2.0 * eps);
                    let tol = 1e-3 * (1.0 + fd.abs());
                    assert!(
                        (f64::from(g[c]) - fd).abs() < tol,
                        "{target:?} at {point:?}: {} vs {fd}",
                        g[c]
                    );
                }
            }
        }
    }

    #[test]
    fn logistic_full_batch_gradient_and_unbiased_minibatch() {
        let Target::Logistic(mut l) = TargetSpec::from_name("logistic").unwrap().build() else {
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

    /// Every grid density integrates to 1 within 1e-3 against the closed-form normaliser
    /// (the display grids hold all but < 1e-3 of the mass); the funnel's exact cell masses are
    /// checked against its inside mass computed independently.
    #[test]
    fn grid_densities_integrate_to_one() {
        for target in all_targets() {
            let grid = target.default_grid();
            let (m, outside) = target.cell_masses(&grid);
            let inside: f64 = m.iter().sum();
            match target {
                Target::Funnel { sigma_v } => {
                    // P(|x| < X, |v| < V) by 1-D quadrature over v.
                    let n = 4000;
                    let (lo, hi) = (grid.y[0], grid.y[1]);
                    let h = (hi - lo) / n as f64;
                    let mut p = 0.0;
                    for k in 0..n {
                        let v = lo + (k as f64 + 0.5) * h;
                        let pv = (-v * v / (2.0 * sigma_v * sigma_v)).exp()
                            / (sigma_v * (2.0 * std::f64::consts::PI).sqrt());
                        let e = (-0.5 * v).exp();
                        p += pv * (normal_cdf(grid.x[1] * e) - normal_cdf(grid.x[0] * e)) * h;
                    }
                    assert!((inside - p).abs() < 1e-4, "funnel {inside} vs {p}");
                    assert!((inside + outside - 1.0).abs() < 1e-12);
                }
                _ => assert!((inside - 1.0).abs() < 1e-3, "{target:?}: {inside}"),
            }
        }
    }

    /// Exact samples histogrammed on a coarse grid agree with the cell masses up to the
    /// sampling noise floor of total variation.
    #[test]
    fn exact_samples_match_grid_density() {
        for target in all_targets() {
            let grid = target.default_grid().with_resolution(24, 24);
            let (m, outside) = target.cell_masses(&grid);
            let n = 200_000;
            let s = target.exact_samples(n, 17);
            let xs: Vec<f32> = s.iter().step_by(2).map(|&v| v as f32).collect();
            let ys: Vec<f32> = s.iter().skip(1).step_by(2).map(|&v| v as f32).collect();
            let (counts, out) = grid.histogram(&xs, &ys);
            let nf = n as f64;
            let mut tv = (out as f64 / nf - outside).abs();
            let mut floor = (2.0 * outside * (1.0 - outside) / (std::f64::consts::PI * nf)).sqrt();
            for (c, p) in counts.iter().zip(&m) {
                tv += (f64::from(*c) / nf - p).abs();
                floor += (2.0 * p * (1.0 - p) / (std::f64::consts::PI * nf)).sqrt();
            }
            let (tv, floor) = (tv / 2.0, floor / 2.0);
            assert!(
                tv < 1.3 * floor + 2e-3,
                "{target:?}: TV {tv} vs noise floor {floor}"
            );
        }
    }

    #[test]
    fn moments_agree_with_exact_samples() {
        for target in all_targets() {
            let (mean, cov) = target.moments();
            let s = target.exact_samples(400_000, 5);
            let n = (s.len() / 2) as f64;
            let m0 = s.iter().step_by(2).sum::<f64>() / n;
            let m1 = s.iter().skip(1).step_by(2).sum::<f64>() / n;
            let v0 = s.iter().step_by(2).map(|x| (x - m0).powi(2)).sum::<f64>() / n;
            let v1 = s
                .iter()
                .skip(1)
                .step_by(2)
                .map(|x| (x - m1).powi(2))
                .sum::<f64>()
                / n;
            if let Target::Funnel { .. } = target {
                continue; // e^{σ²/2} has an infinite-variance estimator at σ = 3
            }
            let tol0 = 0.02 * cov[0].sqrt();
            let tol1 = 0.02 * cov[2].sqrt();
            assert!(
                (m0 - mean[0]).abs() < tol0 + 0.01,
                "{target:?} mean0 {m0} {mean:?}"
            );
            assert!(
                (m1 - mean[1]).abs() < tol1 + 0.01,
                "{target:?} mean1 {m1} {mean:?}"
            );
            assert!(
                (v0 / cov[0] - 1.0).abs() < 0.03,
                "{target:?} var0 {v0} {cov:?}"
            );
            assert!(
                (v1 / cov[2] - 1.0).abs() < 0.03,
                "{target:?} var1 {v1} {cov:?}"
            );
        }
    }

    /// The display grid holds ≥ 99.9% of the mass at the corners of every target's parameter
    /// ranges, both signs of the banana's curvature and the double well's smallest barrier
    /// included: measured with exact samples drawn independently of the grid (the logistic
    /// posterior by its cell masses, normalised over three times the grid).
    #[test]
    fn display_grids_hold_the_mass_at_range_corners() {
        let mut cases: Vec<Target> = Vec::new();
        for (s1, s2, rho, mean) in [
            (1e-3, 1e3, 0.999, [0.0, 0.0]),
            (1e3, 1e-3, -0.999, [5.0, -5.0]),
            (1.0, 1.0, 0.0, [0.0, 0.0]),
        ] {
            cases.push(Target::Gaussian(Gaussian::new(mean, s1, s2, rho)));
        }
        for a in [1e-3, 1.0, 1e3] {
            for b in [-10.0, -0.5, 0.0, 0.5, 10.0] {
                for s in [1e-3, 0.5, 1e3] {
                    cases.push(Target::Banana { a, b, s });
                }
            }
        }
        for radius in [0.01, 2.0, 100.0] {
            for width in [1e-3, 0.25, 1e3] {
                cases.push(Target::Donut { radius, width });
            }
        }
        for spacing in [0.01, 2.0, 100.0] {
            for variance in [1e-3, 0.03, 100.0] {
                cases.push(Target::Gmm25 { spacing, variance });
            }
        }
        for sigma_v in [0.01, 1.0, 3.0, 6.0] {
            cases.push(Target::Funnel { sigma_v });
        }
        for separation in [0.01, 1.5, 100.0] {
            for barrier in [1e-3, 0.1, 3.0, 100.0] {
                cases.push(Target::DoubleWell {
                    separation,
                    barrier,
                });
            }
        }
        for target in cases {
            let grid = target.default_grid();
            let n = 100_000;
            let samples = target.exact_samples(n, 99);
            let inside = samples
                .chunks_exact(2)
                .filter(|p| {
                    (grid.x[0]..=grid.x[1]).contains(&p[0])
                        && (grid.y[0]..=grid.y[1]).contains(&p[1])
                })
                .count();
            let fraction = inside as f64 / n as f64;
            assert!(fraction >= 0.999, "{target:?}: {fraction} inside {grid:?}");
        }
        for n in [2, 200] {
            for prior_scale in [0.1, 100.0] {
                for w in [[2.0, -1.0], [-6.0, 6.0]] {
                    let target = Target::Logistic(Logistic::generate(n, 0, w, prior_scale, 3));
                    let (masses, outside) = target.cell_masses(&target.default_grid());
                    let inside: f64 = masses.iter().sum();
                    assert!(
                        inside >= 0.999,
                        "logistic n = {n}, σ = {prior_scale}, w = {w:?}: {inside} (outside {outside})"
                    );
                }
            }
        }
    }
}
