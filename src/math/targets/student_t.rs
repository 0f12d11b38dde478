//! The bivariate Student-t (docs/MATH.md §7): an isotropic density with polynomial tails,
//! L = (ν + 2)/2 · log(1 + |θ|²/(ν s²)). Where a Gaussian's tails fall off faster than any
//! step size matters, these reach far: a sampler tuned on the bulk meets gradients that
//! vanish out there (|∇L| ≈ (ν + 2)/|θ|) and must still come back.

use super::{Density, Gradient, Parameter, TARGET_PARAMS, exact_rng, gpu_constants, normal};
use crate::math::ranges;
use crate::math::real::{Real, StepRng};
use rand_distr::{ChiSquared, Distribution};

/// The Student-t: its degrees of freedom ν and scale s.
#[derive(Clone, Debug, PartialEq)]
pub struct StudentT {
    /// Degrees of freedom ν (heavier tails the smaller).
    pub dof: f64,
    /// Scale s.
    pub scale: f64,
}

/// The sliders of `TargetSpec::StudentT`.
pub const PARAMETERS: &[Parameter] = &[
    Parameter::new(
        "dof",
        "degrees of freedom ν",
        ranges::DEGREES_OF_FREEDOM,
        [2.5, 30.0],
        true,
    ),
    Parameter::new("scale", "scale s", ranges::SIGMA, [0.1, 5.0], true),
];

impl Density for StudentT {
    fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        let StudentT { dof, scale } = *self;
        let r2 = t[0] * t[0] + t[1] * t[1];
        0.5 * (dof + 2.0) * (r2 / (dof * scale * scale)).ln_1p()
    }

    /// In two dimensions Γ((ν + 2)/2) / Γ(ν/2) = ν/2, so Z = 2π s².
    fn log_normaliser(&self) -> Option<f64> {
        Some((std::f64::consts::TAU * self.scale * self.scale).ln())
    }

    /// The square around the disc outside which lies 2.5e-4 of the mass: P(|θ| > R) =
    /// (1 + R²/(ν s²))^(−ν/2).
    fn display_box(&self) -> [[f64; 2]; 2] {
        let StudentT { dof, scale } = *self;
        let r = scale * (dof * (2.5e-4f64.powf(-2.0 / dof) - 1.0)).sqrt();
        [[-r, r], [-r, r]]
    }

    /// Var θ_c = s² ν/(ν − 2) (ν > 2, as the range requires).
    fn moments(&self) -> ([f64; 2], [f64; 3]) {
        let v = self.scale * self.scale * self.dof / (self.dof - 2.0);
        ([0.0; 2], [v, 0.0, v])
    }

    /// θ = s z / √(w/ν) with z ~ N(0, I) and w ~ χ²_ν.
    fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = exact_rng(seed);
        let chi2 = ChiSquared::new(self.dof).expect("ν is positive");
        let mut out = Vec::with_capacity(2 * n);
        for _ in 0..n {
            let stretch = self.scale / (chi2.sample(&mut rng) / self.dof).sqrt();
            out.push(stretch * normal(&mut rng));
            out.push(stretch * normal(&mut rng));
        }
        out
    }
}

impl Gradient for StudentT {
    const GPU_PARAMS: &'static [&'static str] = &["DOF_SCALE_SQ", "DOF_PLUS_TWO"];

    fn gpu_constants(&self) -> [f32; TARGET_PARAMS] {
        gpu_constants(&[
            (self.dof * self.scale * self.scale) as f32,
            (self.dof + 2.0) as f32,
        ])
    }

    /// ∇L = (ν + 2) θ / (ν s² + |θ|²).
    #[inline(always)]
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], _rng: &G) -> [R; 2] {
        let dof_scale_sq = (self.dof * self.scale * self.scale) as f32;
        let dof_plus_two = (self.dof + 2.0) as f32;
        let f = R::splat(dof_plus_two) / ((t[0] * t[0] + t[1] * t[1]) + dof_scale_sq);
        [f * t[0], f * t[1]]
    }
}
