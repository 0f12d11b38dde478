//! The bivariate Gaussian (MATH.md §7): closed-form everything, the baseline every sampler
//! must get right.

use super::{Density, Gradient, Parameter, TARGET_PARAMS, exact_rng, gpu_constants, normal};
use crate::math::ranges;
use crate::math::real::{Real, StepRng};
use glam::{DMat2, DVec2};

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

/// The sliders of `TargetSpec::Gaussian` (the mean is set in the file).
pub const PARAMETERS: &[Parameter] = &[
    Parameter::new("sigma1", "σ₁", ranges::SIGMA, [0.05, 10.0], true),
    Parameter::new("sigma2", "σ₂", ranges::SIGMA, [0.05, 10.0], true),
    Parameter::new("rho", "ρ", ranges::RHO, [-0.999, 0.999], false),
];

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

impl Density for Gaussian {
    fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        let (d0, d1) = (t[0] - self.mean[0], t[1] - self.mean[1]);
        let p = self.precision;
        0.5 * (p[0] * d0 * d0 + 2.0 * p[1] * d0 * d1 + p[2] * d1 * d1)
    }

    fn log_normaliser(&self) -> Option<f64> {
        let tau = std::f64::consts::TAU;
        Some((tau * self.sigma[0] * self.sigma[1] * (1.0 - self.rho * self.rho).sqrt()).ln())
    }

    fn display_box(&self) -> [[f64; 2]; 2] {
        [0, 1].map(|c| {
            let r = 5.0 * self.sigma[c];
            [self.mean[c] - r, self.mean[c] + r]
        })
    }

    fn moments(&self) -> ([f64; 2], [f64; 3]) {
        let [s1, s2] = self.sigma;
        (self.mean, [s1 * s1, self.rho * s1 * s2, s2 * s2])
    }

    fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = exact_rng(seed);
        let (mean, l) = (DVec2::from_array(self.mean), self.cholesky());
        let mut out = Vec::with_capacity(2 * n);
        for _ in 0..n {
            let z = DVec2::new(normal(&mut rng), normal(&mut rng));
            out.extend((mean + l * z).to_array());
        }
        out
    }
}

impl Gradient for Gaussian {
    const GPU_PARAMS: &'static [&'static str] = &[
        "MEAN0",
        "MEAN1",
        "PRECISION00",
        "PRECISION01",
        "PRECISION11",
    ];

    fn gpu_constants(&self) -> [f32; TARGET_PARAMS] {
        let [m0, m1] = self.mean;
        let [p00, p01, p11] = self.precision;
        gpu_constants(&[m0, m1, p00, p01, p11].map(|v| v as f32))
    }

    #[inline(always)]
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], _rng: &G) -> [R; 2] {
        let d0 = t[0] - self.mean[0] as f32;
        let d1 = t[1] - self.mean[1] as f32;
        let p = self.precision.map(|v| v as f32);
        [d0 * p[0] + d1 * p[1], d0 * p[1] + d1 * p[2]]
    }
}
