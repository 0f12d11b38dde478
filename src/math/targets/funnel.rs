//! Neal's funnel in 2-D (MATH.md §7): v = θ₂ ~ N(0, σ_v²), θ₁ | v ~ N(0, e^v), a neck
//! narrower than any step size that suits its mouth.

use super::{Density, Gradient, Parameter, TARGET_PARAMS, exact_rng, gpu_constants, normal};
use crate::math::grid::Grid2;
use crate::math::ranges;
use crate::math::real::{Real, StepRng};
use crate::math::special::normal_cdf;

/// The funnel: the standard deviation of its log-scale v.
#[derive(Clone, Debug, PartialEq)]
pub struct Funnel {
    /// Standard deviation of v.
    pub sigma_v: f64,
}

/// The sliders of `TargetSpec::Funnel`.
pub const PARAMETERS: &[Parameter] = &[Parameter::new(
    "sigma_v",
    "σ_v",
    ranges::FUNNEL_SIGMA,
    [0.5, 6.0],
    false,
)];

/// The density of v ~ N(0, σ_v²).
fn v_density(v: f64, sigma_v: f64) -> f64 {
    (-v * v / (2.0 * sigma_v * sigma_v)).exp() / (sigma_v * (2.0 * std::f64::consts::PI).sqrt())
}

impl Funnel {
    /// The |θ₁| beyond which the funnel has probability `tail`: θ₁ = e^{v/2} z with
    /// v ~ N(0, σ_v²), so P(|θ₁| > x) = E_v[2 Φ(−x e^{−v/2})] (Simpson over ±8 σ_v,
    /// bisection on log x).
    fn x_quantile(&self, tail: f64) -> f64 {
        let sigma_v = self.sigma_v;
        let tail_at = |x: f64| {
            let n = 400;
            let h = 16.0 * sigma_v / f64::from(n);
            let f = |v: f64| v_density(v, sigma_v) * 2.0 * normal_cdf(-x * (-0.5 * v).exp());
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
}

impl Density for Funnel {
    fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        let v = t[1];
        v * v / (2.0 * self.sigma_v * self.sigma_v) + 0.5 * t[0] * t[0] * (-v).exp() + 0.5 * v
    }

    fn log_normaliser(&self) -> Option<f64> {
        Some((std::f64::consts::TAU * self.sigma_v).ln())
    }

    fn display_box(&self) -> [[f64; 2]; 2] {
        // The mouth is wide: θ₁'s tails are a scale mixture of normals.
        let x = self.x_quantile(2.5e-4);
        let v = 3.7 * self.sigma_v;
        [[-x, x], [-v, v]]
    }

    /// Exact cell masses: ∫ N(v; 0, σ²) [Φ(x₁ e^{−v/2}) − Φ(x₀ e^{−v/2})] dv over each
    /// cell's v-range by composite Simpson's rule, since the neck is narrower than any
    /// display cell (`sub` is not used).
    fn cell_masses(&self, grid: &Grid2, _sub: u32) -> Vec<f64> {
        use rayon::prelude::*;
        let sigma_v = self.sigma_v;
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
                    let e = (-0.5 * v).exp();
                    v_density(v, sigma_v) * (normal_cdf(x1 * e) - normal_cdf(x0 * e))
                };
                let mut s = f(v0) + f(v0 + dv);
                for k in 1..sub {
                    s += f(v0 + f64::from(k) * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
                }
                s * h / 3.0
            })
            .collect()
    }

    fn moments(&self) -> ([f64; 2], [f64; 3]) {
        let s2 = self.sigma_v * self.sigma_v;
        ([0.0; 2], [(s2 / 2.0).exp(), 0.0, s2])
    }

    fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = exact_rng(seed);
        let mut out = Vec::with_capacity(2 * n);
        for _ in 0..n {
            let v = self.sigma_v * normal(&mut rng);
            out.push((0.5 * v).exp() * normal(&mut rng));
            out.push(v);
        }
        out
    }
}

impl Gradient for Funnel {
    const GPU_PARAMS: &'static [&'static str] = &["SIGMA_V_SQ"];

    fn gpu_constants(&self) -> [f32; TARGET_PARAMS] {
        gpu_constants(&[(self.sigma_v * self.sigma_v) as f32])
    }

    #[inline(always)]
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], _rng: &G) -> [R; 2] {
        let s2 = (self.sigma_v * self.sigma_v) as f32;
        let e = (-t[1]).exp();
        [t[0] * e, t[1] / s2 - t[0] * t[0] * e * 0.5 + 0.5]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact cell masses add up to the inside mass computed independently: P(|x| < X,
    /// |v| < V) by 1-D quadrature over v.
    #[test]
    fn cell_masses_add_up_to_the_inside_mass() {
        let funnel = Funnel { sigma_v: 3.0 };
        let grid = super::super::default_grid(&funnel);
        let inside: f64 = funnel.cell_masses(&grid, 6).iter().sum();
        let n = 4000;
        let (lo, hi) = (grid.y[0], grid.y[1]);
        let h = (hi - lo) / n as f64;
        let mut p = 0.0;
        for k in 0..n {
            let v = lo + (k as f64 + 0.5) * h;
            let e = (-0.5 * v).exp();
            p += v_density(v, 3.0) * (normal_cdf(grid.x[1] * e) - normal_cdf(grid.x[0] * e)) * h;
        }
        assert!((inside - p).abs() < 1e-4, "funnel {inside} vs {p}");
    }
}
