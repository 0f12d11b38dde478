//! The Rosenbrock-like banana (MATH.md §7): θ₁ ~ N(0, a²), θ₂ | θ₁ ~ N(b (θ₁² − a²), s²), a
//! curved ridge whose width changes along it.

use super::{Density, Gradient, Parameter, TARGET_PARAMS, exact_rng, gpu_constants, normal};
use crate::math::ranges;
use crate::math::real::{Real, StepRng};

/// The banana: scale `a` of θ₁, curvature `b`, conditional spread `s` of θ₂.
#[derive(Clone, Debug, PartialEq)]
pub struct Banana {
    /// Scale of θ₁.
    pub a: f64,
    /// Curvature.
    pub b: f64,
    /// Conditional spread of θ₂.
    pub s: f64,
}

/// The sliders of `TargetSpec::Banana`.
pub const PARAMETERS: &[Parameter] = &[
    Parameter::new("a", "a (scale of θ₁)", ranges::SIGMA, [0.1, 5.0], true),
    Parameter::new("b", "b (curvature)", ranges::CURVATURE, [-3.0, 3.0], false),
    Parameter::new("s", "s (spread of θ₂)", ranges::SIGMA, [0.05, 5.0], true),
];

impl Density for Banana {
    fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        let Banana { a, b, s } = *self;
        let r = t[1] - b * (t[0] * t[0] - a * a);
        t[0] * t[0] / (2.0 * a * a) + r * r / (2.0 * s * s)
    }

    fn log_normaliser(&self) -> Option<f64> {
        Some((std::f64::consts::TAU * self.a * self.s).ln())
    }

    fn display_box(&self) -> [[f64; 2]; 2] {
        let Banana { a, b, s } = *self;
        // θ₂ is centred on b (θ₁² − a²): −b a² at θ₁ = 0, b (θ₁² − a²) out on the arms,
        // above the centre for b > 0 and below it for b < 0.
        let x = 4.5 * a;
        let centre = -b * a * a;
        let arms = b * (x * x * 0.8 - a * a);
        [
            [-x, x],
            [centre.min(arms) - 4.5 * s, centre.max(arms) + 4.5 * s],
        ]
    }

    fn moments(&self) -> ([f64; 2], [f64; 3]) {
        let Banana { a, b, s } = *self;
        ([0.0; 2], [a * a, 0.0, 2.0 * b * b * a.powi(4) + s * s])
    }

    fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        let Banana { a, b, s } = *self;
        let mut rng = exact_rng(seed);
        let mut out = Vec::with_capacity(2 * n);
        for _ in 0..n {
            let x = a * normal(&mut rng);
            out.push(x);
            out.push(b * (x * x - a * a) + s * normal(&mut rng));
        }
        out
    }
}

impl Gradient for Banana {
    const GPU_PARAMS: &'static [&'static str] = &["A", "B", "S"];

    fn gpu_constants(&self) -> [f32; TARGET_PARAMS] {
        gpu_constants(&[self.a as f32, self.b as f32, self.s as f32])
    }

    #[inline(always)]
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], _rng: &G) -> [R; 2] {
        let (a, b, s) = (self.a as f32, self.b as f32, self.s as f32);
        let r = (t[1] - (t[0] * t[0] - a * a) * b) / (s * s);
        [t[0] / (a * a) - t[0] * r * (2.0 * b), r]
    }
}
