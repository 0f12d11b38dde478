//! The thermodynamics of SGD (MATH.md §5): the Gibbs test (fit T so that exp(−L/T)/Z(T)
//! describes the stationary ensemble), its two distances to the ensemble with critical
//! values calibrated on simulated ensembles (`calibration.rs`), the slope temperature
//! dU/dS along a learning-rate sweep, the free energy, and a held-out prediction. `point.rs`
//! measures one learning rate into its record, [`ThermoPoint`]; `longitude.rs` tests a sphere
//! ensemble's longitudes against the uniform law of an axisymmetric loss; `window.rs` the
//! entropy of networks from windows of their own iterates, and when the ensemble's estimate
//! counts.
//!
//! Densities are integrated on quadrature cells: a list of (loss at the cell, cell area).
//! The 2-D targets use a grid that zooms to where exp(−L/T) lives; the sphere an equal-area
//! (longitude, z) grid.

mod calibration;
mod free_energy;
mod longitude;
mod objections;
mod point;
mod window;

pub use calibration::{
    CALIBRATION_DRAWS, CALIBRATION_SEED, Calibrated, LossLaw, TEST_LEVEL, calibrate,
};
pub use free_energy::{FreeEnergyCurve, FreeEnergyTest, free_energy_curve, free_energy_test};
pub use longitude::{
    LONGITUDE_HARMONICS, LONGITUDE_LEVEL, LongitudeHarmonics, longitude_harmonics,
};
pub use objections::{
    DEFAULT_SLOPE_WINDOW, KnnVariant, SLOPE_WINDOWS, VARIANT_DIVISORS, VARIANT_K,
    block_temperatures, knn_variants, slope_spread, variant_entropy,
};

pub use point::{
    COLLAPSED_LN_WIDTH, HISTOGRAM_CELLS, Histogram, KNN_K, KnownAnswer, NetworkEntropies,
    SPHERE_HISTOGRAM, SPHERE_SAMPLE, ThermoPoint, collapsed, diverged_note, enough_alive,
    entropy_drift_note, fold_note, gibbs_verdict, known_answer, legacy_gibbs_consistent,
    mean_and_se, measured, network_point, plane_point, sphere_entropy, sphere_loss_is_even,
    sphere_point, sphere_signal_and_noise, stationarity,
};
pub use window::{
    ENSEMBLE_ENTROPY_NETWORKS, EnsembleEntropyCheck, NoiseEdge, SMALL_DIMS, Trajectory,
    WINDOW_DIMS, WINDOW_ITERATES, WINDOW_KEPT, WINDOW_KNN_K, WINDOW_MEMORY, WINDOW_NETWORKS,
    WindowEntropy, WindowPlan, WindowRecorder, autocorrelation_time, ensemble_entropy_check,
    noise_edge, principal_coordinates, symmetric_eigen, trajectory_entropy, windowed_entropy,
};

use crate::math::{Grid2, Target};
use glam::DVec3;
use serde::{Deserialize, Serialize};

/// Quadrature cells: the loss at each cell's centre and its area.
#[derive(Clone, Debug, Default)]
pub struct Cells {
    /// Loss L at each cell.
    pub loss: Vec<f64>,
    /// Area of each cell.
    pub area: Vec<f64>,
    /// The smallest and largest loss over each cell's centre and corners, where known
    /// (empty otherwise): the distribution of L spreads each cell's mass over this range.
    pub loss_range: Vec<[f64; 2]>,
}

impl Cells {
    /// The smallest loss of the cells.
    pub fn min_loss(&self) -> f64 {
        self.loss.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// The Gibbs probabilities of the cells at temperature `t` (summing to 1).
    pub fn gibbs(&self, t: f64) -> Vec<f64> {
        let min = self.min_loss();
        let w: Vec<f64> = self
            .loss
            .iter()
            .zip(&self.area)
            .map(|(l, a)| a * (-(l - min) / t).exp())
            .collect();
        let z: f64 = w.iter().sum();
        w.into_iter().map(|v| v / z).collect()
    }

    /// E_T[L] under the Gibbs law at `t`.
    pub fn mean_loss(&self, t: f64) -> f64 {
        self.gibbs(t)
            .iter()
            .zip(&self.loss)
            .map(|(p, l)| p * l)
            .sum()
    }

    /// Differential entropy (nats) of the Gibbs law at `t`, cell by cell.
    pub fn entropy(&self, t: f64) -> f64 {
        self.gibbs(t)
            .iter()
            .zip(&self.area)
            .filter(|(p, _)| **p > 0.0)
            .map(|(p, a)| -p * (p / a).ln())
            .sum()
    }
}

/// Cells per side of the grid a 2-D Gibbs quadrature starts from ([`plane_cells`]).
pub const PLANE_QUADRATURE_CELLS: u32 = 160;

/// The grid a 2-D target's Gibbs quadrature starts from: its default view at
/// [`PLANE_QUADRATURE_CELLS`] per side. The measurement and the held-out prediction both
/// start here, so they integrate the same law.
pub fn plane_quadrature_start(target: &Target) -> Grid2 {
    target
        .default_grid()
        .with_resolution(PLANE_QUADRATURE_CELLS, PLANE_QUADRATURE_CELLS)
}

/// A cell whose Gibbs weight exceeds this fraction of the largest marks mass at the grid's
/// edge (the grid doubles).
const EDGE_WEIGHT: f64 = 1e-12;

/// A shrunk grid keeps the cells above this fraction of the largest weight, plus one cell:
/// a hundred times below [`EDGE_WEIGHT`], so its own edge cells no longer count as mass at
/// the edge. With one threshold for both, the shrunk grid's edge cells sat right at it, the
/// grid doubled again, and the quadrature ended twice as coarse as it needed to be (±9.75
/// instead of ±5.3 for the quadratic at T = 0.43): its distribution of L then missed by 0.006
/// near the minimum, twice the KS test's critical value at 10⁵ chains.
const KEPT_WEIGHT: f64 = 1e-14;

/// Quadrature cells of a 2-D loss where exp(−L/T) lives: starting from the grid `start`,
/// the grid doubles while mass reaches its edges, then shrinks (twice) to the cells that hold
/// all but about 1e-14 of the mass, so densities much wider or narrower than `start` are
/// resolved.
pub fn plane_cells(
    loss: &(dyn Fn([f64; 2]) -> f64 + Sync),
    start: Grid2,
    t: f64,
) -> (Grid2, Cells) {
    let mut grid = start;
    let mut cells = grid_cells(loss, &grid);
    let mut shrunk = 0;
    for _ in 0..12 {
        let p = cells.gibbs(t);
        let max = p.iter().copied().fold(0.0, f64::max);
        let at = |ix: u32, iy: u32| p[(iy * grid.nx + ix) as usize];
        let edge = (0..grid.nx)
            .any(|ix| at(ix, 0) > EDGE_WEIGHT * max || at(ix, grid.ny - 1) > EDGE_WEIGHT * max)
            || (0..grid.ny)
                .any(|iy| at(0, iy) > EDGE_WEIGHT * max || at(grid.nx - 1, iy) > EDGE_WEIGHT * max);
        if edge {
            let (cx, cy) = (0.5 * (grid.x[0] + grid.x[1]), 0.5 * (grid.y[0] + grid.y[1]));
            let (wx, wy) = (grid.x[1] - grid.x[0], grid.y[1] - grid.y[0]);
            grid = Grid2::new([cx - wx, cx + wx], [cy - wy, cy + wy], grid.nx, grid.ny);
            cells = grid_cells(loss, &grid);
            continue;
        }
        if shrunk == 2 {
            break;
        }
        shrunk += 1;
        let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
        let [dx, dy] = grid.cell_size();
        for iy in 0..grid.ny {
            for ix in 0..grid.nx {
                if at(ix, iy) > KEPT_WEIGHT * max {
                    let c = grid.cell_center(ix, iy);
                    lo = [lo[0].min(c[0] - dx), lo[1].min(c[1] - dy)];
                    hi = [hi[0].max(c[0] + dx), hi[1].max(c[1] + dy)];
                }
            }
        }
        if !(lo[0] < hi[0] && lo[1] < hi[1]) {
            break;
        }
        grid = Grid2::new([lo[0], hi[0]], [lo[1], hi[1]], grid.nx, grid.ny);
        cells = grid_cells(loss, &grid);
    }
    (grid, cells)
}

/// Sub-cells per side of each quadrature cell in the distribution of L
/// ([`plane_cells_with_ranges`]).
pub const LOSS_LAW_SUBCELLS: u32 = 4;

/// The cells of `grid`, each cut into [`LOSS_LAW_SUBCELLS`]² sub-cells, with the range of the
/// loss over each sub-cell (its centre and corners), for the distribution of L ([`LossLaw`]).
/// Spreading a cell's area evenly over its range of L is exact only where L is linear across
/// it; near the minimum it is not (a square with the minimum at a corner holds a quarter
/// disc, whose area grows with L at π/2 where the even spread gives 1), and the distribution
/// missed by up to 0.7 × (the central cell's loss above the minimum)/T. Sixteen times finer
/// in L there makes that a few 10⁻⁴, below what 10⁶ chains resolve; corners are shared, so
/// the cost is about two loss evaluations per sub-cell.
pub fn plane_cells_with_ranges(loss: &(dyn Fn([f64; 2]) -> f64 + Sync), grid: &Grid2) -> Cells {
    use rayon::prelude::*;
    let fine = grid.with_resolution(grid.nx * LOSS_LAW_SUBCELLS, grid.ny * LOSS_LAW_SUBCELLS);
    let (nx, ny) = (fine.nx as usize, fine.ny as usize);
    let [dx, dy] = fine.cell_size();
    let corner =
        |ix: usize, iy: usize| loss([fine.x[0] + dx * ix as f64, fine.y[0] + dy * iy as f64]);
    let corners: Vec<Vec<f64>> = (0..=ny)
        .into_par_iter()
        .map(|iy| (0..=nx).map(|ix| corner(ix, iy)).collect())
        .collect();
    let rows: Vec<Vec<(f64, [f64; 2])>> = (0..ny)
        .into_par_iter()
        .map(|iy| {
            (0..nx)
                .map(|ix| {
                    let l = loss(fine.cell_center(ix as u32, iy as u32));
                    let mut range = [l; 2];
                    for (cx, cy) in [(ix, iy), (ix + 1, iy), (ix, iy + 1), (ix + 1, iy + 1)] {
                        let c = corners[cy][cx];
                        range = [range[0].min(c), range[1].max(c)];
                    }
                    (l, range)
                })
                .collect()
        })
        .collect();
    let area = fine.cell_area();
    let mut cells = Cells::default();
    for (l, range) in rows.into_iter().flatten() {
        cells.loss.push(l);
        cells.area.push(area);
        cells.loss_range.push(range);
    }
    cells
}

fn grid_cells(loss: &(dyn Fn([f64; 2]) -> f64 + Sync), grid: &Grid2) -> Cells {
    let area = grid.cell_area();
    let mut cells = Cells::default();
    for iy in 0..grid.ny {
        for ix in 0..grid.nx {
            cells.loss.push(loss(grid.cell_center(ix, iy)));
            cells.area.push(area);
        }
    }
    cells
}

/// The equal-area cell (longitude index, z index) of a unit vector on a `n_lon × n_z` grid.
pub fn sphere_cell(x: DVec3, n_lon: u32, n_z: u32) -> usize {
    let lon = x.y.atan2(x.x).rem_euclid(std::f64::consts::TAU);
    let i = ((lon / std::f64::consts::TAU * f64::from(n_lon)) as u32).min(n_lon - 1);
    let j = (((x.z + 1.0) / 2.0 * f64::from(n_z)) as u32).min(n_z - 1);
    (j * n_lon + i) as usize
}

/// A unit vector folded by the antipodal symmetry onto the upper hemisphere: sign(z)·x
/// (MATH.md §5.6).
pub fn fold(x: DVec3) -> DVec3 {
    if x.z < 0.0 { -x } else { x }
}

/// The equal-area cell (longitude index, z index) of a unit vector's fold on a
/// `n_lon × n_z` grid of the upper hemisphere z ∈ [0, 1] (the cells of [`sphere_cell`] on a
/// grid twice as tall).
pub fn hemisphere_cell(x: DVec3, n_lon: u32, n_z: u32) -> usize {
    let x = fold(x);
    let lon = x.y.atan2(x.x).rem_euclid(std::f64::consts::TAU);
    let i = ((lon / std::f64::consts::TAU * f64::from(n_lon)) as u32).min(n_lon - 1);
    let j = ((x.z * f64::from(n_z)) as u32).min(n_z - 1);
    (j * n_lon + i) as usize
}

/// The centre of an equal-area cell.
pub fn sphere_cell_center(i: u32, j: u32, n_lon: u32, n_z: u32) -> DVec3 {
    let lon = std::f64::consts::TAU * (f64::from(i) + 0.5) / f64::from(n_lon);
    let z = -1.0 + 2.0 * (f64::from(j) + 0.5) / f64::from(n_z);
    let r = (1.0 - z * z).max(0.0).sqrt();
    DVec3::new(r * lon.cos(), r * lon.sin(), z)
}

/// Quadrature of the unit sphere for Gibbs laws as narrow as T ~ 1e-10 at the poles: rings
/// of polar angle every 0.5°, and within 0.05 rad of both poles rings 7 % apart down to
/// 1e-6 rad (where
/// the problems' minima lie and where equal-area cells would be coarsest), times 360
/// longitudes; each cell's loss is taken at its centre.
#[derive(Clone, Debug, Default)]
pub struct SphereQuadrature {
    /// Loss and area of each cell.
    pub cells: Cells,
    /// Each cell's centre.
    pub centers: Vec<DVec3>,
}

impl SphereQuadrature {
    /// The cells of the upper hemisphere z > 0. For a loss even under x → −x, the Gibbs law
    /// on them is the law folded by that symmetry (MATH.md §5.6): each cell gets its own
    /// mass and its mirror's. The rings end at the equator, so no cell straddles it.
    pub fn folded(&self) -> SphereQuadrature {
        let mut q = SphereQuadrature::default();
        for (k, &x) in self.centers.iter().enumerate() {
            if x.z > 0.0 {
                q.cells.loss.push(self.cells.loss[k]);
                q.cells.area.push(self.cells.area[k]);
                q.cells.loss_range.push(self.cells.loss_range[k]);
                q.centers.push(x);
            }
        }
        q
    }
}

/// [`SphereQuadrature`] of a loss.
pub fn sphere_quadrature(loss: &dyn Fn(DVec3) -> f64) -> SphereQuadrature {
    use std::f64::consts::PI;
    let mut edges: Vec<f64> = (0..=360).map(|k| PI * f64::from(k) / 360.0).collect();
    for k in 0..160 {
        let a = 1e-6 * (0.05f64 / 1e-6).powf(f64::from(k) / 160.0);
        edges.push(a);
        edges.push(PI - a);
    }
    edges.sort_by(f64::total_cmp);
    edges.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    let n_lon = 360;
    let d_lon = 2.0 * PI / f64::from(n_lon);
    let at = |a: f64, lon: f64| DVec3::new(a.sin() * lon.cos(), a.sin() * lon.sin(), a.cos());
    let mut q = SphereQuadrature::default();
    for ring in edges.windows(2) {
        let (a0, a1) = (ring[0], ring[1]);
        let area = d_lon * (a0.cos() - a1.cos());
        let a = 0.5 * (a0 + a1);
        for i in 0..n_lon {
            let lon = d_lon * (f64::from(i) + 0.5);
            let x = at(a, lon);
            let l = loss(x);
            let mut range = [l; 2];
            for (ca, cl) in [(a0, lon - 0.5 * d_lon), (a1, lon + 0.5 * d_lon)] {
                for cl in [cl, 2.0 * lon - cl] {
                    let corner = loss(at(ca, cl));
                    range = [range[0].min(corner), range[1].max(corner)];
                }
            }
            q.cells.loss.push(l);
            q.cells.area.push(area);
            q.cells.loss_range.push(range);
            q.centers.push(x);
        }
    }
    q
}

/// The Gibbs law's probability of each cell of `grid` at temperature `t`, normalised over
/// the whole plane by `cells`, the quadrature at that temperature ([`plane_cells`]).
pub fn plane_gibbs_on_grid(
    loss: &(dyn Fn([f64; 2]) -> f64 + Sync),
    cells: &Cells,
    t: f64,
    grid: &Grid2,
) -> Vec<f64> {
    let l0 = cells.min_loss();
    let z: f64 = cells
        .loss
        .iter()
        .zip(&cells.area)
        .map(|(l, a)| a * (-(l - l0) / t).exp())
        .sum();
    grid.integrate_cells(6, |x, y| (-(loss([x, y]) - l0) / t).exp())
        .into_iter()
        .map(|m| m / z)
        .collect()
}

/// The Gibbs law at `t` on the coarse `nl × nz` equal-area grid of the sphere (each
/// quadrature cell counted in the coarse cell of its centre).
pub fn sphere_gibbs_on_grid(q: &SphereQuadrature, t: f64, nl: u32, nz: u32) -> Vec<f64> {
    let mut p = vec![0.0; (nl * nz) as usize];
    for (pi, &x) in q.cells.gibbs(t).iter().zip(&q.centers) {
        p[sphere_cell(x, nl, nz)] += pi;
    }
    p
}

/// [`sphere_gibbs_on_grid`] of the folded law on the `nl × nz` grid of the upper
/// hemisphere ([`hemisphere_cell`]); `q` is the quadrature of the whole sphere or
/// [`SphereQuadrature::folded`].
pub fn hemisphere_gibbs_on_grid(q: &SphereQuadrature, t: f64, nl: u32, nz: u32) -> Vec<f64> {
    let mut p = vec![0.0; (nl * nz) as usize];
    for (pi, &x) in q.cells.gibbs(t).iter().zip(&q.centers) {
        p[hemisphere_cell(x, nl, nz)] += pi;
    }
    p
}

/// Lowest and highest temperature the Gibbs fit considers.
pub const T_RANGE: [f64; 2] = [1e-9, 1e4];

/// The maximum-likelihood temperature of exp(−L/T)/Z(T) for an ensemble whose mean loss is
/// `mean_loss`: the T with E_T[L] = mean_loss (the likelihood's only stationary point, since
/// E_T[L] rises with T). `cells_at(T)` gives the quadrature at a trial T. Bisection in log T;
/// the ends of [`T_RANGE`] when the ensemble lies beyond them.
pub fn fit_temperature(mean_loss: f64, cells_at: &dyn Fn(f64) -> Cells) -> f64 {
    let (mut lo, mut hi) = (T_RANGE[0].ln(), T_RANGE[1].ln());
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        let t = mid.exp();
        if cells_at(t).mean_loss(t) < mean_loss {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).exp()
}

/// The total-variation distance between an ensemble's cell counts and cell probabilities,
/// with what N exact draws would score on average (½ Σ √(2pᵢ(1 − pᵢ)/(πN)), the mean
/// absolute deviation of a binomial count, to first order).
pub fn total_variation(counts: &[u32], probabilities: &[f64]) -> (f64, f64) {
    let n: f64 = counts.iter().map(|&c| f64::from(c)).sum();
    if n == 0.0 {
        return (f64::NAN, f64::NAN);
    }
    let tv = 0.5
        * counts
            .iter()
            .zip(probabilities)
            .map(|(&c, p)| (f64::from(c) / n - p).abs())
            .sum::<f64>();
    let baseline = 0.5
        * probabilities
            .iter()
            .map(|p| (2.0 * p * (1.0 - p) / (std::f64::consts::PI * n)).sqrt())
            .sum::<f64>();
    (tv, baseline)
}

/// The stationary temperature of SGD on L = λθ²/2 with additive gradient noise of standard
/// deviation σ per coordinate (MATH.md §5.3): ησ²/(2 − ηλ); None outside 0 < ηλ < 2.
pub fn quadratic_temperature(eta: f64, lambda: f64, sigma: f64) -> Option<f64> {
    let el = eta * lambda;
    (el > 0.0 && el < 2.0).then(|| eta * sigma * sigma / (2.0 - el))
}

/// The stationary temperature λ·Var θ of SGD with heavy-ball momentum μ (v ← μv − ηg̃,
/// θ ← θ + v) on L = λθ²/2 with additive noise of standard deviation σ (MATH.md §5.3):
/// ησ²(1 + μ)/((1 − μ)(2(1 + μ) − ηλ)); at μ = 0 it is [`quadratic_temperature`]'s. None
/// outside the stable range 0 < ηλ < 2(1 + μ), 0 ≤ μ < 1.
pub fn quadratic_temperature_with_momentum(
    eta: f64,
    lambda: f64,
    sigma: f64,
    momentum: f64,
) -> Option<f64> {
    let (el, mu) = (eta * lambda, momentum);
    (el > 0.0 && el < 2.0 * (1.0 + mu) && (0.0..1.0).contains(&mu))
        .then(|| eta * sigma * sigma * (1.0 + mu) / ((1.0 - mu) * (2.0 * (1.0 + mu) - el)))
}

/// One measured learning rate of a sweep, as the table needs it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Learning rate η.
    pub eta: f64,
    /// Mean training loss U.
    pub u: f64,
    /// Entropy S (k-NN).
    pub s: f64,
    /// The smallest loss (NaN when unknown).
    pub u_min: f64,
    /// Whether it counts (stationary, enough alive chains).
    pub included: bool,
}

/// [`slope_temperatures_with`] over windows of [`DEFAULT_SLOPE_WINDOW`] points.
pub fn slope_temperatures(points: &[Measured]) -> Vec<Option<f64>> {
    slope_temperatures_with(points, DEFAULT_SLOPE_WINDOW)
}

/// The slope temperature dU/dS at each point from the included points around it. The excess
/// loss E = U − min L is fitted in logarithm, ln E as a quadratic in S, over a window of up to
/// `window` (at least 3) neighbouring included points (in order of η), centred on the point
/// where the ends allow, and differentiated at the point:
/// T = E · d ln E/dS. Near a minimum E ∝ T and S = ln T + const, so ln E is nearly linear
/// in S and the fit has almost no curvature to get wrong where T climbs steeply (ηλ → 2); the
/// window smooths the Monte-Carlo noise a two-point difference would double. Without a known
/// minimum, U itself is fitted. None at the first and last included points (a slope there
/// would extrapolate) and with fewer than three.
pub fn slope_temperatures_with(points: &[Measured], window: usize) -> Vec<Option<f64>> {
    let window = window.max(3);
    let included: Vec<usize> = (0..points.len()).filter(|&i| points[i].included).collect();
    let mut out = vec![None; points.len()];
    let n = included.len();
    if n < 3 {
        return out;
    }
    for (k, &i) in included.iter().enumerate().take(n - 1).skip(1) {
        let lo = k.saturating_sub(window / 2).min(n.saturating_sub(window));
        let hi = (lo + window).min(n);
        let fitted: Vec<&Measured> = included[lo..hi].iter().map(|&j| &points[j]).collect();
        let xs: Vec<f64> = fitted.iter().map(|p| p.s - points[i].s).collect();
        let excess: Vec<f64> = fitted.iter().map(|p| p.u - p.u_min).collect();
        out[i] = if excess.iter().all(|e| *e > 0.0 && e.is_finite()) {
            let logs: Vec<f64> = excess.iter().map(|e| e.ln()).collect();
            quadratic_slope_at_zero(&xs, &logs).map(|d| d * (points[i].u - points[i].u_min))
        } else {
            let ys: Vec<f64> = fitted.iter().map(|p| p.u).collect();
            quadratic_slope_at_zero(&xs, &ys)
        }
        .filter(|t| t.is_finite());
    }
    out
}

/// The derivative at x = 0 of the least-squares quadratic through (xs, ys): at least three
/// points (three give the exact parabola).
fn quadratic_slope_at_zero(xs: &[f64], ys: &[f64]) -> Option<f64> {
    // Normal equations of y = a + b x + c x², solved for b by Cramer's rule.
    let (mut s, mut t) = ([0.0f64; 5], [0.0f64; 3]);
    for (&x, &y) in xs.iter().zip(ys) {
        let mut p = 1.0;
        for (k, sk) in s.iter_mut().enumerate() {
            *sk += p;
            if k < 3 {
                t[k] += p * y;
            }
            p *= x;
        }
    }
    let m = [[s[0], s[1], s[2]], [s[1], s[2], s[3]], [s[2], s[3], s[4]]];
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(m);
    if xs.len() < 3 || d.abs() < 1e-300 {
        return None;
    }
    let mut mb = m;
    for r in 0..3 {
        mb[r][1] = t[r];
    }
    Some(det(mb) / d)
}

/// T(η) = aη/(1 − bη), the form of the quadratic's law (a = σ²/2, b = λ/2), fitted by least
/// squares of η/T = 1/a − (b/a)η on the given (η, T) pairs. None with fewer than two.
pub fn fit_temperature_law(pairs: &[(f64, f64)]) -> Option<(f64, f64)> {
    let pts: Vec<(f64, f64)> = pairs
        .iter()
        .filter(|(e, t)| *e > 0.0 && *t > 0.0 && t.is_finite())
        .map(|&(e, t)| (e, e / t))
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let n = pts.len() as f64;
    let (mx, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let intercept = my - slope * mx;
    (intercept > 0.0).then(|| (1.0 / intercept, -slope / intercept))
}

/// The law of [`fit_temperature_law`] at η; None where 1 − bη ≤ 0.
pub fn temperature_law(law: (f64, f64), eta: f64) -> Option<f64> {
    let d = 1.0 - law.1 * eta;
    (d > 0.0).then(|| law.0 * eta / d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gibbs_quadrature_of_a_quadratic_has_the_known_moments() {
        // L = λ|θ|²/2 in 2-D: E_T[L] = T, entropy log(2πe T/λ).
        let lambda = 4.0;
        let loss = move |t: [f64; 2]| 0.5 * lambda * (t[0] * t[0] + t[1] * t[1]);
        let start = Grid2::new([-10.0, 10.0], [-10.0, 10.0], 200, 200);
        for t in [1e-4, 0.01, 1.0, 30.0] {
            let (_, cells) = plane_cells(&loss, start, t);
            assert!((cells.mean_loss(t) / t - 1.0).abs() < 2e-3, "T {t}");
            let exact = (2.0 * std::f64::consts::PI * std::f64::consts::E * t / lambda).ln();
            assert!((cells.entropy(t) - exact).abs() < 5e-3, "T {t}");
            let fitted = fit_temperature(t, &|tt| plane_cells(&loss, start, tt).1);
            assert!((fitted / t - 1.0).abs() < 5e-3, "T {t}: fitted {fitted}");
        }
    }

    #[test]
    fn the_sphere_quadrature_covers_the_sphere_and_resolves_narrow_laws_at_a_pole() {
        let q = sphere_quadrature(&|_| 0.0);
        let total: f64 = q.cells.area.iter().sum();
        assert!((total - 4.0 * std::f64::consts::PI).abs() < 1e-9);
        // A uniform law: the entropy is log 4π.
        assert!((q.cells.entropy(1.0) - (4.0 * std::f64::consts::PI).ln()).abs() < 1e-6);
        // L = (1 − z) ≈ α²/2 near +z: E_T[L] → T (two quadratic directions) as T → 0, at
        // every temperature the adaptive rings resolve.
        let pole = sphere_quadrature(&|x| 1.0 - x.z);
        for t in [1e-8, 1e-5, 1e-3] {
            assert!(
                (pole.cells.mean_loss(t) / t - 1.0).abs() < 0.01,
                "T {t}: {}",
                pole.cells.mean_loss(t) / t
            );
            let fitted = fit_temperature(t, &|_| pole.cells.clone());
            assert!((fitted / t - 1.0).abs() < 0.01, "T {t}: {fitted}");
        }
        let x = DVec3::new(0.2, -0.3, 0.9).normalize();
        let k = sphere_cell(x, 72, 36);
        let c = sphere_cell_center(k as u32 % 72, k as u32 / 72, 72, 36);
        assert!(c.distance(x) < 0.1);
        let coarse = sphere_gibbs_on_grid(&q, 1.0, 72, 36);
        assert!((coarse.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn slopes_and_the_temperature_law_recover_a_known_curve() {
        // U = T, S = log T + c along T = aη/(1 − bη): dU/dS = T.
        let (a, b) = (2.0, 0.5);
        let etas: Vec<f64> = (0..20).map(|k| 0.01 * 1.2f64.powi(k)).collect();
        let points: Vec<Measured> = etas
            .iter()
            .map(|&eta| {
                let t = a * eta / (1.0 - b * eta);
                Measured {
                    eta,
                    u: t,
                    s: t.ln() + 3.0,
                    u_min: 0.0,
                    included: true,
                }
            })
            .collect();
        // With the minimum known, ln(U − min) is linear in S: exact. Without, the quadratic
        // fit of U(S) = e^(S−3) keeps a small curvature error.
        let unknown: Vec<Measured> = points
            .iter()
            .map(|p| Measured {
                u_min: f64::NAN,
                ..*p
            })
            .collect();
        for window in SLOPE_WINDOWS {
            let slopes = slope_temperatures_with(&points, window);
            for (p, s) in points.iter().zip(&slopes).skip(1).take(18) {
                assert!(
                    (s.unwrap() / p.u - 1.0).abs() < 1e-9,
                    "window {window}, η {}",
                    p.eta
                );
            }
        }
        for (set, tolerance) in [(&points, 1e-9), (&unknown, 0.03)] {
            let slopes = slope_temperatures(set);
            assert_eq!((slopes[0], slopes[19]), (None, None));
            for (p, s) in set.iter().zip(&slopes).skip(1).take(18) {
                let error = (s.unwrap() / p.u - 1.0).abs();
                assert!(error < tolerance, "η {}: {} vs {}", p.eta, s.unwrap(), p.u);
            }
        }
        let pairs: Vec<(f64, f64)> = points.iter().map(|p| (p.eta, p.u)).collect();
        let law = fit_temperature_law(&pairs).unwrap();
        assert!((law.0 - a).abs() < 1e-9 && (law.1 - b).abs() < 1e-9);
        assert_eq!(quadratic_temperature(1.0, 2.0, 1.0), None);
        assert_eq!(quadratic_temperature(0.5, 2.0, 2.0), Some(2.0));
        let (tv, base) = total_variation(&[50, 50], &[0.5, 0.5]);
        assert_eq!(tv, 0.0);
        assert!(base > 0.0);
    }
}
