//! A typed energy (docs/MATH.md §9): the user's formula, compiled by `math::expr`, whose truth
//! (box, normaliser, cell masses, exact samples) was established when it was checked.

use super::{Density, Gradient, TARGET_PARAMS};
use crate::math::expr::ExprTarget;
use crate::math::grid::Grid2;
use crate::math::real::{Real, StepRng};
use std::sync::Arc;

/// A shared compiled formula is a target family of its own: `Target::Expression`.
impl Density for Arc<ExprTarget> {
    fn neg_log_density(&self, t: [f64; 2]) -> f64 {
        ExprTarget::energy(self, t)
    }

    fn log_normaliser(&self) -> Option<f64> {
        Some(self.log_normaliser)
    }

    fn display_box(&self) -> [[f64; 2]; 2] {
        self.bounds
    }

    /// Refined where U is steep across a cell (the sub-sampling is its own: `sub` is not
    /// used).
    fn cell_masses(&self, grid: &Grid2, _sub: u32) -> Vec<f64> {
        ExprTarget::cell_masses(self, grid)
    }

    /// Within the box grown until the moments settle (docs/MATH.md §9, *Beyond the box*), not
    /// only the display box.
    fn moments(&self) -> ([f64; 2], [f64; 3]) {
        ExprTarget::moments(self)
    }

    fn exact_samples(&self, n: usize, seed: u64) -> Vec<f64> {
        ExprTarget::exact_samples(self, n, seed)
    }
}

impl Gradient for Arc<ExprTarget> {
    /// A formula's constants are its parameters, in the order of their names: the generated
    /// WGSL reads them by position.
    const GPU_PARAMS: &'static [&'static str] = &[];

    fn gpu_constants(&self) -> [f32; TARGET_PARAMS] {
        self.values_f32
    }

    #[inline(always)]
    fn gradient<R: Real, G: StepRng<R>>(&self, t: [R; 2], _rng: &G) -> [R; 2] {
        self.formula.gradient(t, &self.values_f32)
    }
}
