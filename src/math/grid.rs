//! Regular 2-D grids: the display grid of histograms and the truth of target densities.
//!
//! The bin rule is written once here and mirrored by `bin_into` in `shaders/engine.wgsl`:
//! both compute `floor((x - x_min) * scale)` in f32 with the same precomputed `scale`, so CPU
//! and GPU histograms of the same state agree exactly.

use serde::{Deserialize, Serialize};

/// An axis-aligned grid of `nx × ny` equal cells over `[x_min, x_max) × [y_min, y_max)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Grid2 {
    /// Lower and upper bound of the first axis.
    pub x: [f64; 2],
    /// Lower and upper bound of the second axis.
    pub y: [f64; 2],
    /// Cells along the first axis.
    pub nx: u32,
    /// Cells along the second axis.
    pub ny: u32,
}

/// The f32 constants of the bin rule, shared by CPU and GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinRule {
    /// Lower bounds of both axes.
    pub origin: [f32; 2],
    /// Cells per unit along both axes.
    pub scale: [f32; 2],
    /// Cell counts along both axes.
    pub size: [u32; 2],
}

impl BinRule {
    /// The flat index `iy * nx + ix` of the cell holding (x, y), or `None` outside the grid
    /// (non-finite values are outside).
    #[inline(always)]
    pub fn bin(&self, x: f32, y: f32) -> Option<usize> {
        let fx = (x - self.origin[0]) * self.scale[0];
        let fy = (y - self.origin[1]) * self.scale[1];
        // The same cells as floor (WGSL's rule) without it: for u ≥ 0, ⌊u⌋ ≥ 0 always,
        // ⌊u⌋ < n exactly when u < n, and the cast truncates to ⌊u⌋ (f32::floor is a library
        // call on baseline x86-64, once per chain and histogram). Comparisons are false for
        // NaN, so NaN falls outside.
        if fx >= 0.0 && fy >= 0.0 && fx < self.size[0] as f32 && fy < self.size[1] as f32 {
            Some(fy as usize * self.size[0] as usize + fx as usize)
        } else {
            None
        }
    }
}

impl Grid2 {
    /// A grid over the given bounds.
    pub fn new(x: [f64; 2], y: [f64; 2], nx: u32, ny: u32) -> Self {
        Self { x, y, nx, ny }
    }

    /// The same bounds with another resolution.
    pub fn with_resolution(&self, nx: u32, ny: u32) -> Self {
        Self { nx, ny, ..*self }
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.nx as usize * self.ny as usize
    }

    /// Cell widths along both axes.
    pub fn cell_size(&self) -> [f64; 2] {
        [
            (self.x[1] - self.x[0]) / f64::from(self.nx),
            (self.y[1] - self.y[0]) / f64::from(self.ny),
        ]
    }

    /// Area of one cell.
    pub fn cell_area(&self) -> f64 {
        let [dx, dy] = self.cell_size();
        dx * dy
    }

    /// Centre of cell (ix, iy).
    pub fn cell_center(&self, ix: u32, iy: u32) -> [f64; 2] {
        let [dx, dy] = self.cell_size();
        [
            self.x[0] + (f64::from(ix) + 0.5) * dx,
            self.y[0] + (f64::from(iy) + 0.5) * dy,
        ]
    }

    /// The f32 bin rule of this grid.
    pub fn bin_rule(&self) -> BinRule {
        BinRule {
            origin: [self.x[0] as f32, self.y[0] as f32],
            scale: [
                (f64::from(self.nx) / (self.x[1] - self.x[0])) as f32,
                (f64::from(self.ny) / (self.y[1] - self.y[0])) as f32,
            ],
            size: [self.nx, self.ny],
        }
    }

    /// Counts of 2-D points (given as separate coordinate slices) per cell, and the number
    /// outside the grid.
    pub fn histogram(&self, xs: &[f32], ys: &[f32]) -> (Vec<u32>, u64) {
        let rule = self.bin_rule();
        let mut counts = vec![0u32; self.cells()];
        let mut outside = 0u64;
        for (&x, &y) in xs.iter().zip(ys) {
            match rule.bin(x, y) {
                Some(i) => counts[i] += 1,
                None => outside += 1,
            }
        }
        (counts, outside)
    }

    /// Integrates a density over every cell with an `s × s` midpoint rule inside each cell.
    /// Returns the cell masses (row-major, `iy * nx + ix`).
    pub fn integrate_cells(&self, sub: u32, density: impl Fn(f64, f64) -> f64 + Sync) -> Vec<f64> {
        use rayon::prelude::*;
        let [dx, dy] = self.cell_size();
        let (sx, sy) = (dx / f64::from(sub), dy / f64::from(sub));
        let weight = sx * sy;
        (0..self.cells())
            .into_par_iter()
            .map(|i| {
                let ix = (i % self.nx as usize) as f64;
                let iy = (i / self.nx as usize) as f64;
                let mut total = 0.0;
                for a in 0..sub {
                    for b in 0..sub {
                        let x = self.x[0] + ix * dx + (f64::from(a) + 0.5) * sx;
                        let y = self.y[0] + iy * dy + (f64::from(b) + 0.5) * sy;
                        total += density(x, y);
                    }
                }
                total * weight
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_rule_edges_and_nan() {
        let g = Grid2::new([-1.0, 1.0], [0.0, 4.0], 4, 2);
        let r = g.bin_rule();
        assert_eq!(r.bin(-1.0, 0.0), Some(0));
        assert_eq!(r.bin(0.99, 3.99), Some(7));
        assert_eq!(r.bin(1.0, 1.0), None);
        assert_eq!(r.bin(-1.001, 1.0), None);
        assert_eq!(r.bin(f32::NAN, 1.0), None);
        assert_eq!(r.bin(0.0, f32::INFINITY), None);
        assert_eq!(r.bin(0.1, 2.5), Some(4 + 2));
    }

    #[test]
    fn integrate_cells_of_uniform_density() {
        let g = Grid2::new([0.0, 2.0], [0.0, 1.0], 8, 4);
        let m = g.integrate_cells(3, |_, _| 0.5);
        assert!((m.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
