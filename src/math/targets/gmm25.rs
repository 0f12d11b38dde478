//! The mixture of 25 Gaussians (MATH.md §7): equal components centred on {−2s, −s, 0, s, 2s}²
//! with covariance v·I, the test of whether chains travel between modes.

use super::{Density, Gradient, Parameter, TARGET_PARAMS, exact_rng, gpu_constants, normal};
use crate::math::ranges;
use crate::math::real::{Real, StepRng};
use rand::RngExt;

/// The 25-Gaussian mixture: the spacing of its centres and each component's variance.
#[derive(Clone, Debug, PartialEq)]
pub struct Gmm25 {
    /// Spacing of the centres.
    pub spacing: f64,
    /// Component variance.
    pub variance: f64,
}

/// The sliders of `TargetSpec::Gmm25`.
pub const PARAMETERS: &[Parameter] = &[
    Parameter::new("spacing", "spacing", ranges::RADIUS, [0.5, 5.0], false),
    Parameter::new("variance", "variance", ranges::VARIANCE, [0.005, 1.0], true),
];

/// How many modes the mixture has (the diagnostics count visits of each).
pub const MODES: usize = 25;

/// Centre of component k.
fn centre(k: usize, spacing: f64) -> [f64; 2] {
    [
        (k % 5) as f64 * spacing - 2.0 * spacing,
        (k / 5) as f64 * spacing - 2.0 * spacing,
    ]
}

impl Density for Gmm25 {
    fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        let mut terms = [0.0f64; MODES];
        for (k, term) in terms.iter_mut().enumerate() {
            let c = centre(k, self.spacing);
            let d = (t[0] - c[0]).powi(2) + (t[1] - c[1]).powi(2);
            *term = -d / (2.0 * self.variance);
        }
        let m = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        -(m + terms.iter().map(|v| (v - m).exp()).sum::<f64>().ln())
    }

    fn log_normaliser(&self) -> Option<f64> {
        Some((MODES as f64 * std::f64::consts::TAU * self.variance).ln())
    }

    fn display_box(&self) -> [[f64; 2]; 2] {
        let r = 2.0 * self.spacing + 5.0 * self.variance.sqrt();
        [[-r, r], [-r, r]]
    }

    /// The disc holding 99% of a component's mass, √(−2 ln 0.01) ≈ 3.03 standard
    /// deviations, around each centre.
    fn modes(&self) -> Option<(Vec<[f64; 2]>, f64)> {
        Some((
            (0..MODES).map(|k| centre(k, self.spacing)).collect(),
            (-2.0 * 0.01f64.ln()).sqrt() * self.variance.sqrt(),
        ))
    }

    fn moments(&self) -> ([f64; 2], [f64; 3]) {
        let v = self.variance + 2.0 * self.spacing * self.spacing;
        ([0.0; 2], [v, 0.0, v])
    }

    fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = exact_rng(seed);
        let sd = self.variance.sqrt();
        let mut out = Vec::with_capacity(2 * n);
        for _ in 0..n {
            let c = centre(rng.random_range(0..MODES), self.spacing);
            out.push(c[0] + sd * normal(&mut rng));
            out.push(c[1] + sd * normal(&mut rng));
        }
        out
    }
}

impl Gradient for Gmm25 {
    const GPU_PARAMS: &'static [&'static str] = &["SPACING", "VARIANCE"];

    fn gpu_constants(&self) -> [f32; TARGET_PARAMS] {
        gpu_constants(&[self.spacing as f32, self.variance as f32])
    }

    /// Gradient of −log Σₖ exp(−|θ − μₖ|²/(2v)): responsibilities by a stable log-sum-exp
    /// (`gmm_gradient` in `shaders/targets.wgsl`).
    #[inline(always)]
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], _rng: &G) -> [R; 2] {
        let (spacing, variance) = (self.spacing as f32, self.variance as f32);
        let mut d_min = R::splat(f32::INFINITY);
        for k in 0..MODES {
            let cx = (k % 5) as f32 * spacing - 2.0 * spacing;
            let cy = (k / 5) as f32 * spacing - 2.0 * spacing;
            let d = ((t[0] - cx) * (t[0] - cx) + (t[1] - cy) * (t[1] - cy)) / (2.0 * variance);
            d_min = d_min.min(d);
        }
        let (mut w_sum, mut gx, mut gy) = (R::splat(0.0), R::splat(0.0), R::splat(0.0));
        for k in 0..MODES {
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
}
