//! What the app's views draw, computed here so that the UI only draws: the target's
//! highest-density contours, marginals of the portrait histograms, histograms of values
//! across chains and the ranges the portraits follow.

use crate::engine::Moments;
use crate::math::Grid2;
use glam::DVec2;

/// A line segment in data coordinates.
pub type Segment = [DVec2; 2];

/// The contours of a gridded density at the density levels whose super-level sets hold the
/// given probability masses (e.g. 0.5, 0.9, 0.99): the highest-density regions. `masses` are
/// cell masses on `grid` (row-major from the bottom).
pub fn hpd_contours(grid: &Grid2, masses: &[f64], probabilities: &[f64]) -> Vec<Segment> {
    let area = grid.cell_area();
    let density: Vec<f64> = masses.iter().map(|m| m / area).collect();
    mass_levels(masses, area, probabilities)
        .into_iter()
        .filter(|&level| level > 0.0)
        .flat_map(|level| iso_lines(&density, grid, level))
        .collect()
}

/// Line segments where the grid values cross `level` (marching squares). `values` are
/// row-major (`iy * nx + ix`) at the cell centres of `grid`.
pub fn iso_lines(values: &[f64], grid: &Grid2, level: f64) -> Vec<Segment> {
    let (nx, ny) = (grid.nx as usize, grid.ny as usize);
    let origin = DVec2::new(grid.x[0], grid.y[0]);
    let cell = DVec2::from(grid.cell_size());
    // Data position of a point in cell units, measured from the first cell centre.
    let at = |p: DVec2| origin + (p + 0.5) * cell;
    let corners = [
        DVec2::new(0.0, 0.0),
        DVec2::new(1.0, 0.0),
        DVec2::new(1.0, 1.0),
        DVec2::new(0.0, 1.0),
    ];
    let mut out = Vec::new();
    for iy in 0..ny.saturating_sub(1) {
        for ix in 0..nx.saturating_sub(1) {
            // Corners counter-clockwise from the bottom left.
            let v = [
                values[iy * nx + ix],
                values[iy * nx + ix + 1],
                values[(iy + 1) * nx + ix + 1],
                values[(iy + 1) * nx + ix],
            ];
            let base = DVec2::new(ix as f64, iy as f64);
            // Crossing points on the four edges, in order.
            let mut points = Vec::with_capacity(4);
            for e in 0..4 {
                let (a, b) = (v[e], v[(e + 1) % 4]);
                if (a < level) != (b < level) {
                    let t = (level - a) / (b - a);
                    points.push(at(base + corners[e].lerp(corners[(e + 1) % 4], t)));
                }
            }
            // Two crossings: one segment; four (a saddle): pair them up in order.
            for pair in points.chunks_exact(2) {
                out.push([pair[0], pair[1]]);
            }
        }
    }
    out
}

/// Density levels whose super-level sets hold the given probability masses, from cell
/// masses of cells of area `cell_area`.
pub fn mass_levels(masses: &[f64], cell_area: f64, probabilities: &[f64]) -> Vec<f64> {
    let mut sorted: Vec<f64> = masses.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let total: f64 = sorted.iter().sum();
    probabilities
        .iter()
        .map(|&p| {
            let mut acc = 0.0;
            for &m in &sorted {
                acc += m;
                if acc >= p * total {
                    return m / cell_area;
                }
            }
            0.0
        })
        .collect()
}

/// The two marginals of a row-major `nx × ny` grid of weights (counts or masses): sums over
/// rows (one value per column) and over columns (one per row).
pub fn marginals(weights: &[f64], nx: usize, ny: usize) -> [Vec<f64>; 2] {
    let mut mx = vec![0.0; nx];
    let mut my = vec![0.0; ny];
    for (i, &w) in weights.iter().enumerate().take(nx * ny) {
        mx[i % nx] += w;
        my[i / nx] += w;
    }
    [mx, my]
}

/// A histogram of values as a density: bin `b` covers [lo + b·width, lo + (b+1)·width).
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// Left edge of the first bin.
    pub lo: f64,
    /// Bin width.
    pub width: f64,
    /// Density of each bin (integrates to 1).
    pub density: Vec<f64>,
}

impl Histogram {
    /// The finite values in `bins` equal bins over their range; None without finite values.
    pub fn of(values: &[f64], bins: usize) -> Option<Histogram> {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if finite.is_empty() || bins == 0 {
            return None;
        }
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let width = ((hi - lo) / bins as f64).max(1e-6);
        let mut counts = vec![0.0; bins];
        for v in &finite {
            let b = (((v - lo) / width) as usize).min(bins - 1);
            counts[b] += 1.0;
        }
        let norm = finite.len() as f64 * width;
        Some(Histogram {
            lo,
            width,
            density: counts.iter().map(|c| c / norm).collect(),
        })
    }

    /// Centre of bin `b`.
    pub fn centre(&self, b: usize) -> f64 {
        self.lo + (b as f64 + 0.5) * self.width
    }
}

/// The data ranges of the three portraits: θ₁–θ₂, θᵢ–pᵢ and pᵢ–ξᵢ, each as (x, y).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PortraitRanges {
    /// θ₁–θ₂.
    pub theta: ([f64; 2], [f64; 2]),
    /// θᵢ–pᵢ.
    pub phase: ([f64; 2], [f64; 2]),
    /// pᵢ–ξᵢ.
    pub thermostat: ([f64; 2], [f64; 2]),
}

/// The ranges the portraits follow: θ from the target's display grid (coordinate
/// `coordinate` for the phase portrait), p at least 4.5 standard deviations of N(0, m·T) and
/// ξ around zero; `extents` (robust quantiles of the chains, see
/// [`super::growth::Extents`]) widen every range that the bulk of the chains leaves. Means
/// are not used where extents exist: the kinetic temperature and the mean ξ are means over
/// every chain, and a few exploding chains (p at 10⁴–10⁶ while the bulk is at 1) carried
/// them, and with them the p and ξ ranges, out to where the bulk collapsed onto a line.
/// Chains beyond the ranges are marked at the portrait's edge. Without extents (no snapshot
/// yet) `moments` stand in: p from the kinetic temperature, ξ around its mean.
pub fn portrait_ranges(
    target_grid: &Grid2,
    coordinate: usize,
    mass: f64,
    temperature: f64,
    moments: Option<&Moments>,
    extents: Option<&super::growth::Extents>,
) -> PortraitRanges {
    // The hull of a range and a padded extent.
    let widen = |r: [f64; 2], e: Option<[f64; 2]>| match e {
        Some(e) if e[0].is_finite() && e[1].is_finite() => {
            let pad = 0.1 * (e[1] - e[0]).abs();
            [r[0].min(e[0] - pad), r[1].max(e[1] + pad)]
        }
        _ => r,
    };
    let theta_x = widen(target_grid.x, extents.map(|e| e.theta));
    let theta_y = widen(target_grid.y, extents.map(|e| e.theta));
    let theta_i = if coordinate == 0 { theta_x } else { theta_y };
    let m = mass.max(1e-6);
    let t = temperature.max(1e-3);
    let (kt, xi) = match extents {
        Some(_) => (t, 0.0),
        None => moments
            .filter(|s| s.alive > 0)
            .map(|s| (s.kinetic_temperature(), s.mean_xi()))
            .unwrap_or((t, 0.0)),
    };
    let kt = if kt.is_finite() { kt.clamp(t, 1e12) } else { t };
    let p_half = 4.5 * (m * kt).sqrt();
    let xi = if xi.is_finite() {
        xi.clamp(-1e9, 1e9)
    } else {
        0.0
    };
    let xi_half = 4.5 * t.sqrt().max(0.5) + 0.2 * xi.abs();
    let p_max = extents
        .map(|e| e.p[0].abs().max(e.p[1].abs()))
        .filter(|v| v.is_finite())
        .unwrap_or(0.0);
    let p_half = p_half.max(1.1 * p_max);
    let p = [-p_half, p_half];
    PortraitRanges {
        theta: (theta_x, theta_y),
        phase: (theta_i, p),
        thermostat: (
            p,
            widen([xi - xi_half, xi + xi_half], extents.map(|e| e.xi)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circle_contour_lies_on_the_circle() {
        let n = 64;
        let grid = Grid2::new([-2.0, 2.0], [-2.0, 2.0], n, n);
        let mut v = vec![0.0; (n * n) as usize];
        for iy in 0..n {
            for ix in 0..n {
                let c = grid.cell_center(ix, iy);
                v[(iy * n + ix) as usize] = c[0] * c[0] + c[1] * c[1];
            }
        }
        let segs = iso_lines(&v, &grid, 1.0);
        assert!(segs.len() > 50);
        for s in segs {
            for p in s {
                assert!((p.length() - 1.0).abs() < 0.01, "{p}");
            }
        }
    }

    #[test]
    fn mass_levels_of_a_uniform_block() {
        let masses = [0.25, 0.25, 0.25, 0.25, 0.0, 0.0];
        let l = mass_levels(&masses, 0.5, &[0.5, 0.99]);
        assert_eq!(l, vec![0.5, 0.5]);
    }

    #[test]
    fn marginals_sum_rows_and_columns() {
        // 3 columns × 2 rows, row 0 first.
        let [mx, my] = marginals(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3, 2);
        assert_eq!(mx, vec![5.0, 7.0, 9.0]);
        assert_eq!(my, vec![6.0, 15.0]);
    }

    #[test]
    fn histogram_is_a_density() {
        let h = Histogram::of(&[0.0, 1.0, 1.0, 2.0, f64::NAN], 4).unwrap();
        let total: f64 = h.density.iter().map(|d| d * h.width).sum();
        assert!((total - 1.0).abs() < 1e-12);
        assert_eq!(h.lo, 0.0);
        assert!(Histogram::of(&[f64::NAN], 4).is_none());
    }

    #[test]
    fn ranges_follow_the_kinetic_temperature() {
        let grid = Grid2::new([-3.0, 3.0], [-1.0, 5.0], 8, 8);
        let r = portrait_ranges(&grid, 1, 4.0, 1.0, None, None);
        assert_eq!(r.phase.0, [-1.0, 5.0]);
        assert!((r.phase.1[1] - 9.0).abs() < 1e-12);
        let hot = Moments {
            alive: 10,
            sum_heat: [40.0, 40.0],
            ..Moments::default()
        };
        let r = portrait_ranges(&grid, 0, 4.0, 1.0, Some(&hot), None);
        assert!((r.phase.1[1] - 18.0).abs() < 1e-12);
        // A bulk that moved far out widens the ranges it leaves.
        let far = crate::diagnostics::growth::Extents {
            theta: [-1.0, 50.0],
            p: [-1e6, 3.0],
            xi: [0.0, 1e3],
        };
        let r = portrait_ranges(&grid, 0, 4.0, 1.0, Some(&hot), Some(&far));
        assert!(r.theta.0[1] > 50.0 && r.theta.1[1] > 50.0);
        assert!(r.phase.1[0] < -1e6 && r.phase.1[1] > 1e6);
        assert!(r.thermostat.1[1] > 1e3);
    }

    /// A few exploding chains carry the means (kinetic temperature 10⁸, mean ξ 10⁵) but not
    /// the robust extents of the bulk: the p and ξ ranges follow the bulk, which then fills
    /// the portrait (lesson 5's spiral), instead of collapsing onto a line.
    #[test]
    fn a_few_exploding_chains_do_not_carry_the_ranges() {
        let grid = Grid2::new([-3.0, 3.0], [-3.0, 3.0], 8, 8);
        let carried = Moments {
            alive: 1000,
            sum_heat: [1e11, 1e11],
            sum_xi: [1e8, 1e8],
            ..Moments::default()
        };
        let bulk = crate::diagnostics::growth::Extents {
            theta: [-2.0, 2.0],
            p: [-3.0, 3.5],
            xi: [-0.5, 2.0],
        };
        let r = portrait_ranges(&grid, 0, 1.0, 1.0, Some(&carried), Some(&bulk));
        assert!(r.phase.1[1] < 5.0, "{:?}", r.phase);
        assert!(r.thermostat.1[1] < 10.0, "{:?}", r.thermostat);
        assert!(r.thermostat.1[1] > 2.0 && r.thermostat.1[0] < -0.5);
    }
}
