//! The double well (MATH.md §7): U = barrier ((θ₁/μ)² − 1)² + θ₂²/2, two modes behind a
//! barrier whose height is counted in units of the temperature.

use super::{Density, Gradient, Parameter, TARGET_PARAMS, gpu_constants};
use crate::math::grid::Grid2;
use crate::math::ranges;
use crate::math::real::{Real, StepRng};

/// The double well: the wells' position μ and the barrier's height.
#[derive(Clone, Debug, PartialEq)]
pub struct DoubleWell {
    /// Well position.
    pub separation: f64,
    /// Barrier height.
    pub barrier: f64,
}

/// The sliders of `TargetSpec::DoubleWell`.
pub const PARAMETERS: &[Parameter] = &[
    Parameter::new(
        "separation",
        "well position μ",
        ranges::RADIUS,
        [0.2, 5.0],
        false,
    ),
    Parameter::new(
        "barrier",
        "barrier height",
        ranges::BARRIER,
        [0.0, 20.0],
        false,
    ),
];

impl DoubleWell {
    /// Beyond ±this the θ₁ factor exp(−barrier ((θ₁/μ)² − 1)²) is below e^{−36}: where
    /// barrier · q² = 36 with q = (θ₁/μ)² − 1. Small barriers reach far (22 μ at 1e-4).
    fn limit(&self) -> f64 {
        self.separation * (1.0 + 6.0 / self.barrier.sqrt()).sqrt()
    }

    /// The θ₁ factor integrated by Simpson's rule over ±[`Self::limit`]: every other node
    /// and the cumulative integral up to it (unnormalised).
    fn cdf(&self) -> (Vec<f64>, Vec<f64>) {
        let DoubleWell {
            separation,
            barrier,
        } = *self;
        let lim = self.limit();
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

    /// The smallest x with at most `tail` of the θ₁ mass beyond ±x.
    fn extent(&self, tail: f64) -> f64 {
        let (x, cdf) = self.cdf();
        let total = cdf.last().copied().unwrap_or(1.0);
        // The factor is even: the mass below −x is half of the mass beyond ±x.
        let i = cdf.partition_point(|&c| c / total <= 0.5 * tail);
        x[i.saturating_sub(1)].abs()
    }
}

impl Density for DoubleWell {
    fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        let q = (t[0] / self.separation).powi(2) - 1.0;
        self.barrier * q * q + 0.5 * t[1] * t[1]
    }

    fn log_normaliser(&self) -> Option<f64> {
        let (_, cdf) = self.cdf();
        let theta1 = cdf.last().copied().unwrap_or(0.0);
        Some((theta1 * (2.0 * std::f64::consts::PI).sqrt()).ln())
    }

    fn display_box(&self) -> [[f64; 2]; 2] {
        let x = self.extent(2.5e-4).max(2.2 * self.separation);
        [[-x, x], [-4.5, 4.5]]
    }

    /// A fine grid over the whole reach of the θ₁ factor (its exact samples are drawn by
    /// cell).
    fn sampling_grid(&self) -> Grid2 {
        let lim = self.limit();
        Grid2::new([-lim, lim], [-6.0, 6.0], 1000, 600)
    }
}

impl Gradient for DoubleWell {
    const GPU_PARAMS: &'static [&'static str] = &["SEPARATION_SQ", "BARRIER"];

    fn gpu_constants(&self) -> [f32; TARGET_PARAMS] {
        gpu_constants(&[
            (self.separation * self.separation) as f32,
            self.barrier as f32,
        ])
    }

    #[inline(always)]
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], _rng: &G) -> [R; 2] {
        let mu2 = (self.separation * self.separation) as f32;
        let q = t[0] * t[0] / mu2 - 1.0;
        [q * (4.0 * self.barrier as f32) * t[0] / mu2, t[1]]
    }
}
