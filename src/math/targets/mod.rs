//! Target posteriors (MATH.md §7): −log density, gradient, normalised density on a grid and
//! exact samples, so that every sampler is judged against truth.
//!
//! One module per family, each holding everything about it: its runtime type with the
//! [`Density`] (host-side truth, f64) and [`Gradient`] (f32, as on the GPU, mirrored in
//! `shaders/targets.wgsl`; its constants named in `GPU_PARAMS`) implementations, and its
//! slider [`Parameter`]s. [`spec`] holds how targets are written in files (one RON variant
//! per family) and the list below makes the [`Target`] enum and its dispatch: adding a family
//! is its file, its variant in `spec.rs` and one line in [`families!`].

mod banana;
mod donut;
mod double_well;
mod expression;
mod funnel;
mod gaussian;
mod gmm25;
mod logistic;
mod spec;
mod student_t;

pub use banana::Banana;
pub use donut::Donut;
pub use double_well::DoubleWell;
pub use funnel::Funnel;
pub use gaussian::Gaussian;
pub use gmm25::Gmm25;
pub use logistic::Logistic;
pub use spec::{TARGET_NAMES, TargetSpec};
pub use student_t::StudentT;

use super::expr::ExprTarget;
use super::grid::Grid2;
use super::ranges::Range;
use super::real::{Real, StepRng};
use super::rng::{SequentialRng, Stream};
use rand::RngExt;
use rand::distr::weighted::WeightedIndex;
use rand_distr::{Distribution, StandardNormal};
use std::borrow::Cow;
use std::sync::Arc;

/// The number of f32 constants a target passes to the shaders ([`Target::gpu_constants`]).
pub const TARGET_PARAMS: usize = 8;

/// A continuous parameter of a target family, as a slider shows it: the field of its
/// [`TargetSpec`] variant, a label, the range a preset file is checked against, the span a
/// slider usually covers and whether it moves on a log scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parameter {
    /// The field's name in the preset file.
    pub field: &'static str,
    /// How a slider labels it.
    pub label: &'static str,
    /// What a file may hold (the same range reading the file checks).
    pub range: Range,
    /// The span a slider covers (a typed value may go anywhere in `range`).
    pub usual: [f64; 2],
    /// Whether the slider moves on a log scale.
    pub log: bool,
}

impl Parameter {
    /// A parameter (for the families' tables).
    pub const fn new(
        field: &'static str,
        label: &'static str,
        range: Range,
        usual: [f64; 2],
        log: bool,
    ) -> Self {
        Self {
            field,
            label,
            range,
            usual,
            log,
        }
    }
}

/// The host-side truth of a target family, in f64: what the diagnostics judge samplers
/// against. The defaults integrate a closed-form density on grids; a family overrides what
/// it knows better (closed-form moments, exact samplers, exact cell masses).
pub trait Density: Sync {
    /// −log density up to an additive constant (the constant of [`Self::log_normaliser`]).
    fn neg_log_density(&self, t: [f64; 2]) -> f64;

    /// log of the normalising constant of exp(−[`Self::neg_log_density`]) where it is known
    /// in closed form.
    fn log_normaliser(&self) -> Option<f64>;

    /// The box (θ₁ range, θ₂ range) of the display grid: it holds at least 99.9% of the mass
    /// for every parameter in range (tested at the corners of the ranges).
    fn display_box(&self) -> [[f64; 2]; 2];

    /// Probability mass of every cell of `grid` (row-major) with `sub × sub` midpoint samples
    /// per cell; by default from the closed-form normaliser, so that the mass outside the grid
    /// is real.
    fn cell_masses(&self, grid: &Grid2, sub: u32) -> Vec<f64> {
        let log_z = self
            .log_normaliser()
            .expect("a family without a closed-form normaliser integrates its own cells");
        grid.integrate_cells(sub, |x, y| (-self.neg_log_density([x, y]) - log_z).exp())
    }

    /// The modes a chain counts as having visited, with the radius of the disc around each
    /// (None: the family lists none).
    fn modes(&self) -> Option<(Vec<[f64; 2]>, f64)> {
        None
    }

    /// Mean and covariance (c11, c12, c22), by default from a 400 × 400 quadrature of the
    /// display box.
    fn moments(&self) -> ([f64; 2], [f64; 3]) {
        let grid = default_grid(self).with_resolution(400, 400);
        grid_moments(&grid, &self.cell_masses(&grid, 6))
    }

    /// The fine grid exact samples are drawn from by cell, when the family has no sampler of
    /// its own.
    fn sampling_grid(&self) -> Grid2 {
        default_grid(self).with_resolution(600, 600)
    }

    /// The cell masses of [`Self::sampling_grid`] (a family may keep them once integrated).
    fn sampling_masses(&self, grid: &Grid2) -> Cow<'_, [f64]> {
        Cow::Owned(self.cell_masses(grid, 6))
    }

    /// `n` exact samples (flattened pairs), seeded; by default a cell of the sampling grid
    /// drawn by its mass, then a uniform point inside it.
    fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        let grid = self.sampling_grid();
        let masses = self.sampling_masses(&grid);
        let cells =
            WeightedIndex::new(masses.iter()).expect("cell masses are finite, not all zero");
        let mut rng = exact_rng(seed);
        let [dx, dy] = grid.cell_size();
        let mut out = Vec::with_capacity(2 * n);
        for _ in 0..n {
            let i = cells.sample(&mut rng) as u32;
            let (ix, iy) = (i % grid.nx, i / grid.nx);
            let (ux, uy): (f64, f64) = (rng.random(), rng.random());
            out.push(grid.x[0] + (f64::from(ix) + ux) * dx);
            out.push(grid.y[0] + (f64::from(iy) + uy) * dy);
        }
        out
    }
}

/// The stochastic gradient of a family in f32, for one chain or lanes of chains, as the GPU
/// computes it from the same constants.
pub trait Gradient {
    /// The names of the f32 constants its WGSL gradient reads, in position order: generated
    /// as `PARAM_<FAMILY>_<NAME>` for `target_param` in `shaders/targets.wgsl`.
    const GPU_PARAMS: &'static [&'static str];

    /// The constants at their positions in `GPU_PARAMS`, exactly as [`Self::gradient`]
    /// computes them.
    fn gpu_constants(&self) -> [f32; TARGET_PARAMS];

    /// ∇(−log density) at θ (minibatched for data targets; the synthetic gradient noise of
    /// MATH.md §4 is added by the caller).
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], rng: &G) -> [R; 2];
}

/// Makes [`Target`] (one variant per family), [`TargetKind`] (the shaders' numbering, in
/// list order) and their dispatch from one list: `Variant(runtime type)`.
macro_rules! families {
    ($($(#[$doc:meta])* $family:ident($runtime:ty)),+ $(,)?) => {
        /// A target ready to evaluate.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Target {
            $($(#[$doc])* $family($runtime),)+
        }

        /// The family of a [`Target`], as the shaders number it (the override constant
        /// `SPECIALISED_TARGET`, the generated WGSL `TARGET_*`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u32)]
        pub enum TargetKind {
            $($(#[$doc])* $family,)+
        }

        impl TargetKind {
            /// Every kind, in code order.
            pub const ALL: [TargetKind; [$(stringify!($family)),+].len()] =
                [$(TargetKind::$family),+];

            /// The names of the family's GPU constants ([`Gradient::GPU_PARAMS`]).
            pub fn gpu_params(self) -> &'static [&'static str] {
                match self {
                    $(TargetKind::$family => <$runtime as Gradient>::GPU_PARAMS,)+
                }
            }
        }

        impl Target {
            /// The target's family.
            pub fn kind(&self) -> TargetKind {
                match self {
                    $(Target::$family(_) => TargetKind::$family,)+
                }
            }

            fn density(&self) -> &dyn Density {
                match self {
                    $(Target::$family(family) => family,)+
                }
            }

            /// The target's kind and the f32 constants its gradient uses, exactly as
            /// [`Self::gradient`] computes them, for `shaders/targets.wgsl`.
            pub fn gpu_constants(&self) -> (TargetKind, [f32; TARGET_PARAMS]) {
                match self {
                    $(Target::$family(family) => (TargetKind::$family, family.gpu_constants()),)+
                }
            }

            /// Stochastic gradient of −log density at θ in f32, for one chain or lanes of
            /// chains (minibatched for data targets; the synthetic gradient noise of MATH.md
            /// §4 is added by the caller).
            #[inline(always)]
            pub fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], rng: &G) -> [R; 2] {
                match self {
                    $(Target::$family(family) => family.gradient(t, rng),)+
                }
            }
        }
    };
}

families! {
    /// Bivariate Gaussian ([`TargetSpec::Gaussian`]).
    Gaussian(Gaussian),
    /// Rosenbrock-like banana ([`TargetSpec::Banana`]).
    Banana(Banana),
    /// Ring ([`TargetSpec::Donut`]).
    Donut(Donut),
    /// Mixture of 25 Gaussians ([`TargetSpec::Gmm25`]).
    Gmm25(Gmm25),
    /// Neal's funnel ([`TargetSpec::Funnel`]).
    Funnel(Funnel),
    /// Double well ([`TargetSpec::DoubleWell`]).
    DoubleWell(DoubleWell),
    /// Bayesian logistic regression ([`TargetSpec::Logistic`]).
    Logistic(Logistic),
    /// Bivariate Student-t ([`TargetSpec::StudentT`]).
    StudentT(StudentT),
    /// A typed formula ([`TargetSpec::Expression`]): the gradient is a generated WGSL
    /// function, one pipeline per formula.
    Expression(Arc<ExprTarget>),
}

impl TargetKind {
    /// The code the shaders switch on.
    pub const fn gpu_code(self) -> u32 {
        self as u32
    }
}

impl Target {
    /// Dimension of θ.
    pub fn dim(&self) -> usize {
        2
    }

    /// Makes a data target's gradient full batch (HMC's exact gradient); other targets have
    /// no minibatch.
    pub fn use_full_batch(&mut self) {
        if let Target::Logistic(l) = self {
            l.batch_size = l.inputs.len() as u32;
        }
    }

    /// −log density up to an additive constant (the constant of [`Self::log_normaliser`]).
    pub fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        self.density().neg_log_density(t)
    }

    /// log of the normalising constant of exp(−[`Self::neg_log_density`]) where it is known
    /// in closed form.
    pub fn log_normaliser(&self) -> Option<f64> {
        self.density().log_normaliser()
    }

    /// The display grid: it holds at least 99.9% of the mass for every parameter in range
    /// (tested at the corners of the ranges).
    pub fn default_grid(&self) -> Grid2 {
        default_grid(self.density())
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
        let masses = self.density().cell_masses(grid, sub);
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
    /// component's mass: where a chain counts as having visited a mode. None for other
    /// targets.
    pub fn modes(&self) -> Option<(Vec<[f64; 2]>, f64)> {
        self.density().modes()
    }

    /// Mean and covariance (c11, c12, c22) of the target, exact where known in closed form and
    /// otherwise from a fine quadrature grid.
    pub fn moments(&self) -> ([f64; 2], [f64; 3]) {
        self.density().moments()
    }

    /// `n` exact samples (flattened pairs), seeded.
    pub fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        self.density().exact_samples(n, seed)
    }
}

/// The display grid of a family: 64 × 64 cells over its display box.
fn default_grid<D: Density + ?Sized>(density: &D) -> Grid2 {
    let [x, y] = density.display_box();
    Grid2::new(x, y, 64, 64)
}

/// The random stream of exact samples.
fn exact_rng(seed: u64) -> SequentialRng {
    SequentialRng::new(seed, Stream::Exact as u32)
}

/// One standard normal draw in f64 (rand_distr's ziggurat).
fn normal(rng: &mut SequentialRng) -> f64 {
    StandardNormal.sample(rng)
}

/// A family's GPU constants at their positions, zero beyond them.
fn gpu_constants(values: &[f32]) -> [f32; TARGET_PARAMS] {
    let mut out = [0.0; TARGET_PARAMS];
    out[..values.len()].copy_from_slice(values);
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::RngCounter;

    fn all_targets() -> Vec<Target> {
        TARGET_NAMES
            .iter()
            .map(|(n, _)| TargetSpec::from_name(n).unwrap().build().unwrap())
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

    /// Every grid density integrates to 1 within 1e-3 against the closed-form normaliser
    /// (the display grids hold all but < 1e-3 of the mass); the funnel's exact cell masses
    /// are checked against its inside mass computed independently in `funnel`.
    #[test]
    fn grid_densities_integrate_to_one() {
        for target in all_targets() {
            let grid = target.default_grid();
            let (m, outside) = target.cell_masses(&grid);
            let inside: f64 = m.iter().sum();
            if let Target::Funnel(_) = target {
                // Its exact masses are checked against its inside mass in `funnel`.
                assert!((inside + outside - 1.0).abs() < 1e-12);
            } else {
                assert!((inside - 1.0).abs() < 1e-3, "{target:?}: {inside}");
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
            if let Target::Funnel(_) = target {
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
                    cases.push(Target::Banana(Banana { a, b, s }));
                }
            }
        }
        for radius in [0.01, 2.0, 100.0] {
            for width in [1e-3, 0.25, 1e3] {
                cases.push(Target::Donut(Donut { radius, width }));
            }
        }
        for spacing in [0.01, 2.0, 100.0] {
            for variance in [1e-3, 0.03, 100.0] {
                cases.push(Target::Gmm25(Gmm25 { spacing, variance }));
            }
        }
        for sigma_v in [0.01, 1.0, 3.0, 6.0] {
            cases.push(Target::Funnel(Funnel { sigma_v }));
        }
        for separation in [0.01, 1.5, 100.0] {
            for barrier in [1e-3, 0.1, 3.0, 100.0] {
                cases.push(Target::DoubleWell(DoubleWell {
                    separation,
                    barrier,
                }));
            }
        }
        for dof in [2.5, 5.0, 100.0] {
            for scale in [1e-3, 1.0, 1e3] {
                cases.push(Target::StudentT(StudentT { dof, scale }));
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
