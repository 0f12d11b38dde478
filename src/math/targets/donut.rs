//! The ring (MATH.md §7): U = (|θ| − radius)² / (2 width²), a mode that is a whole circle.

use super::{Density, Gradient, Parameter, TARGET_PARAMS, exact_rng, gpu_constants, normal};
use crate::math::ranges;
use crate::math::real::{Real, StepRng};
use crate::math::special::normal_cdf;
use rand::RngExt;

/// The ring: its radius and radial standard deviation.
#[derive(Clone, Debug, PartialEq)]
pub struct Donut {
    /// Ring radius.
    pub radius: f64,
    /// Radial standard deviation.
    pub width: f64,
}

/// The sliders of `TargetSpec::Donut`.
pub const PARAMETERS: &[Parameter] = &[
    Parameter::new("radius", "radius", ranges::RADIUS, [0.1, 10.0], true),
    Parameter::new("width", "width", ranges::SIGMA, [0.02, 2.0], true),
];

impl Density for Donut {
    fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        let r = (t[0] * t[0] + t[1] * t[1]).sqrt() - self.radius;
        r * r / (2.0 * self.width * self.width)
    }

    fn log_normaliser(&self) -> Option<f64> {
        use std::f64::consts::{PI, TAU};
        let (r, w) = (self.radius, self.width);
        let radial =
            w * w * (-r * r / (2.0 * w * w)).exp() + r * w * (2.0 * PI).sqrt() * normal_cdf(r / w);
        Some((TAU * radial).ln())
    }

    fn display_box(&self) -> [[f64; 2]; 2] {
        let r = self.radius + 5.0 * self.width;
        [[-r, r], [-r, r]]
    }

    fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        let Donut { radius, width } = *self;
        let mut rng = exact_rng(seed);
        let mut out = Vec::with_capacity(2 * n);
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
        out
    }
}

impl Gradient for Donut {
    const GPU_PARAMS: &'static [&'static str] = &["RADIUS", "WIDTH_SQ"];

    fn gpu_constants(&self) -> [f32; TARGET_PARAMS] {
        gpu_constants(&[self.radius as f32, (self.width * self.width) as f32])
    }

    #[inline(always)]
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], _rng: &G) -> [R; 2] {
        let norm = (t[0] * t[0] + t[1] * t[1]).sqrt();
        // The ring's gradient is undefined at the origin; 0 there is the symmetric choice.
        let f = (norm - self.radius as f32) / (norm * (self.width * self.width) as f32);
        let f = norm.select_lt(R::splat(1e-20), R::splat(0.0), f);
        [f * t[0], f * t[1]]
    }
}
