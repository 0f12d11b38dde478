//! The Gibbs test's critical values (MATH.md §5.6). The fitted law exp(−L/T)/Z is compared
//! with the ensemble twice: by the total variation of their histograms (which sees where the
//! chains are) and by a one-sample Kolmogorov–Smirnov test of the chains' loss values against
//! the law's distribution of L (which sees the radial shape that a histogram whose top band
//! holds nearly all the mass cannot). Since T is fitted to the same data, the textbook
//! Kolmogorov critical value would be too lenient a yardstick for neither: both critical
//! values come from [`CALIBRATION_DRAWS`] simulated ensembles of the fitted law, each with
//! its own refitted T for the KS distance (a parametric bootstrap).

use super::Cells;
use crate::math::rng::SequentialRng;
use rand::RngExt;
use rayon::prelude::*;

/// Simulated ensembles per calibration: 199, so that the 5 % critical value is one of them
/// (the 10th largest) and a Monte-Carlo test that rejects beyond it has level exactly 5 %
/// (the observed ensemble, if it is a draw of the law, ranks uniformly among the 200). The
/// critical value itself is then known to about ±1.5 percentage points of level; more
/// draws would cost a second per learning rate of a 10⁵-chain sweep for little.
pub const CALIBRATION_DRAWS: usize = 199;

/// The seed of the simulated ensembles (one Philox stream per ensemble): a verdict is
/// reproducible.
pub const CALIBRATION_SEED: u64 = 24;

/// Level of the Gibbs test's two parts.
pub const TEST_LEVEL: f64 = 0.05;

/// Cells whose Gibbs weight falls below this fraction of the largest are left out of a
/// [`LossLaw`] (together far below any resolvable probability, also at a refitted T a few
/// per cent away).
const NEGLIGIBLE_WEIGHT: f64 = 1e-14;

/// Bins of the density of states of a [`LossLaw`]: fine enough (the kept losses span about
/// 32 T) that the law within a bin is linear to far below what 10⁶ chains could resolve.
const LOSS_BINS: usize = 20_000;

/// The distribution of L under the Gibbs law on quadrature cells at temperatures near one
/// fitted T, through the density of states: each cell's area is spread evenly over the
/// losses the cell covers, its [`Cells::loss_range`] (without ranges: over the losses between
/// the midpoints to its neighbours in order of loss), and summed into fine bins of L; a bin
/// then weighs its area times exp(−L/T) at its middle, and the CDF is linear within bins (the
/// CDF interpolated within cells). Spreading each cell's mass at its centre loss alone would
/// not do where many cells share a loss, as the rings of the sphere's quadrature and the
/// symmetric cells of a plane grid nearly do: the CDF would climb in steps.
#[derive(Clone, Debug)]
pub struct LossLaw {
    /// The bins' edges, ascending (`LOSS_BINS + 1`).
    edges: Vec<f64>,
    /// The area of the cells' parts whose loss falls in each bin.
    area: Vec<f64>,
}

impl LossLaw {
    /// The law of L of `cells`, pruned to where exp(−L/t) lives.
    pub fn new(cells: &Cells, t: f64) -> Self {
        let min = cells.min_loss();
        let ranged = cells.loss_range.len() == cells.loss.len();
        let mut kept: Vec<usize> = (0..cells.loss.len())
            .filter(|&k| {
                cells.area[k] > 0.0 && (-(cells.loss[k] - min) / t).exp() >= NEGLIGIBLE_WEIGHT
            })
            .collect();
        kept.sort_by(|&a, &b| cells.loss[a].total_cmp(&cells.loss[b]));
        let losses: Vec<f64> = kept.iter().map(|&k| cells.loss[k]).collect();
        let j = losses.len();
        let ranges: Vec<[f64; 2]> = (0..j)
            .map(|i| {
                let l = losses[i];
                if ranged {
                    let [lo, hi] = cells.loss_range[kept[i]];
                    [lo.min(l), hi.max(l)]
                } else {
                    // Half-way to the neighbours in order of loss (mirrored at the ends).
                    let below = if i > 0 {
                        losses[i - 1]
                    } else {
                        2.0 * l - losses.get(1).copied().unwrap_or(l)
                    };
                    let above = if i + 1 < j {
                        losses[i + 1]
                    } else {
                        2.0 * l - below
                    };
                    [0.5 * (below + l), 0.5 * (l + above)]
                }
            })
            .collect();
        let lo = ranges.iter().map(|r| r[0]).fold(f64::INFINITY, f64::min);
        let hi = ranges
            .iter()
            .map(|r| r[1])
            .fold(f64::NEG_INFINITY, f64::max);
        if !(lo.is_finite() && hi.is_finite()) {
            return Self {
                edges: vec![0.0, 1.0],
                area: vec![1.0],
            };
        }
        let hi = hi.max(lo + 1e-12 * lo.abs().max(1e-300));
        let width = (hi - lo) / LOSS_BINS as f64;
        let edges: Vec<f64> = (0..=LOSS_BINS).map(|k| lo + width * k as f64).collect();
        // Each cell's area spread evenly over its range: a density that is a sum of boxes,
        // integrated over each bin through a difference array of its slope in bin units.
        let bin_at = |x: f64| ((x - lo) / width).clamp(0.0, LOSS_BINS as f64);
        let mut area = vec![0.0; LOSS_BINS];
        let mut slope_change = vec![0.0; LOSS_BINS + 2];
        let mut add_ramp = |from: f64, density: f64, area: &mut Vec<f64>| {
            // The box's cumulative area rises at `density` per bin from position `from`.
            let k = from.floor() as usize;
            if k < LOSS_BINS {
                area[k] += density * (k as f64 + 1.0 - from);
                slope_change[k + 1] += density;
            }
        };
        for (i, r) in ranges.iter().enumerate() {
            let a = cells.area[kept[i]];
            let (b0, b1) = (bin_at(r[0]), bin_at(r[1]));
            if b1 - b0 < 1e-9 {
                area[(b0 as usize).min(LOSS_BINS - 1)] += a;
                continue;
            }
            let density = a / (b1 - b0);
            add_ramp(b0, density, &mut area);
            add_ramp(b1, -density, &mut area);
        }
        let mut density = 0.0;
        for (k, bin) in area.iter_mut().enumerate() {
            density += slope_change[k];
            *bin += density;
        }
        for bin in &mut area {
            *bin = bin.max(0.0);
        }
        Self { edges, area }
    }

    /// The middle of each bin, minus the lowest edge.
    fn middles(&self) -> impl Iterator<Item = f64> + '_ {
        let l0 = self.edges[0];
        self.edges.windows(2).map(move |w| 0.5 * (w[0] + w[1]) - l0)
    }

    /// The CDF at each edge at `t`: 0 at the first, 1 at the last.
    fn cdf_at_knots(&self, t: f64) -> Vec<f64> {
        let mut c = Vec::with_capacity(self.edges.len());
        let mut total = 0.0;
        c.push(0.0);
        for (x, a) in self.middles().zip(&self.area) {
            total += a * (-x / t).exp();
            c.push(total);
        }
        c.iter().map(|v| v / total).collect()
    }

    /// The CDF of L at `t` at each of the ascending `losses` (one walk along the knots).
    fn cdf_sorted(&self, t: f64, losses: &[f64]) -> Vec<f64> {
        let c = self.cdf_at_knots(t);
        let b = &self.edges;
        let mut j = 0;
        losses
            .iter()
            .map(|&l| {
                if b.is_empty() || l <= b[0] {
                    return 0.0;
                }
                while j + 1 < b.len() && b[j + 1] < l {
                    j += 1;
                }
                if j + 1 >= b.len() {
                    return 1.0;
                }
                let width = b[j + 1] - b[j];
                let f = if width > 0.0 { (l - b[j]) / width } else { 1.0 };
                c[j] + f * (c[j + 1] - c[j])
            })
            .collect()
    }

    /// The one-sample Kolmogorov–Smirnov distance sup |F_N − F| between ascending `losses`
    /// and the law at `t`.
    pub fn ks_distance(&self, t: f64, losses: &[f64]) -> f64 {
        let n = losses.len() as f64;
        self.cdf_sorted(t, losses)
            .iter()
            .enumerate()
            .map(|(i, f)| ((i as f64 + 1.0) / n - f).max(f - i as f64 / n))
            .fold(0.0, f64::max)
    }

    /// The losses at ascending probabilities `u` (the inverse CDF at `t`), ascending.
    fn quantiles(&self, t: f64, u: &[f64]) -> Vec<f64> {
        let c = self.cdf_at_knots(t);
        let b = &self.edges;
        let mut j = 0;
        u.iter()
            .map(|&p| {
                while j + 2 < c.len() && c[j + 1] <= p {
                    j += 1;
                }
                let mass = c[j + 1] - c[j];
                let f = if mass > 0.0 {
                    ((p - c[j]) / mass).clamp(0.0, 1.0)
                } else {
                    0.5
                };
                b[j] + f * (b[j + 1] - b[j])
            })
            .collect()
    }

    /// The temperature near `t0` at which this law's mean loss is `mean` (the
    /// maximum-likelihood T of an ensemble with that mean, as [`super::fit_temperature`]
    /// finds it on the cells' centres): Newton's method in ln T, with
    /// dE_T[L]/d ln T = Var_T[L]/T.
    pub fn refit(&self, t0: f64, mean: f64) -> f64 {
        let l0 = self.edges[0];
        let mut ln_t = t0.ln();
        for _ in 0..40 {
            let t = ln_t.exp();
            let (mut z, mut s1, mut s2) = (0.0, 0.0, 0.0);
            for (x, a) in self.middles().zip(&self.area) {
                let w = a * (-x / t).exp();
                z += w;
                s1 += w * x;
                s2 += w * x * x;
            }
            let e = s1 / z;
            let var = (s2 / z - e * e).max(0.0);
            let miss = e - (mean - l0);
            if var <= 0.0 || !miss.is_finite() {
                break;
            }
            let step = (miss * t / var).clamp(-1.0, 1.0);
            ln_t -= step;
            if step.abs() < 1e-12 {
                break;
            }
        }
        ln_t.exp()
    }
}

/// `n` sorted uniform numbers on (0, 1): normalised partial sums of n + 1 exponential
/// spacings, in O(n) without a sort.
fn sorted_uniforms(n: usize, rng: &mut SequentialRng) -> Vec<f64> {
    let mut sums = Vec::with_capacity(n + 1);
    let mut total = 0.0;
    for _ in 0..=n {
        total += -(1.0 - rng.random::<f64>()).ln();
        sums.push(total);
    }
    sums.pop();
    sums.into_iter().map(|s| s / total).collect()
}

/// The Gibbs test of one ensemble, with its calibrated critical values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibrated {
    /// The KS distance between the ensemble's losses and the fitted law's distribution of L.
    pub ks_distance: f64,
    /// Its 5 % critical value over simulated ensembles of the fitted law, each refitted.
    pub ks_critical: f64,
    /// Its Monte-Carlo p-value, (1 + #{simulated ≥ observed}) / (draws + 1).
    pub ks_p_value: f64,
    /// The 5 % critical value of the histogram's total variation over the same simulated
    /// ensembles (None without histogram probabilities).
    pub tv_critical: Option<f64>,
}

/// The 5 % critical value of [`CALIBRATION_DRAWS`] simulated statistics: the 10th largest.
fn critical(mut simulated: Vec<f64>) -> f64 {
    simulated.sort_by(f64::total_cmp);
    let rank = ((simulated.len() + 1) as f64 * TEST_LEVEL).round() as usize;
    simulated[simulated.len().saturating_sub(rank.max(1))]
}

/// The Gibbs test's distances of an ensemble whose loss values are `losses`, against the law
/// at the fitted `t` on `cells`: the KS distance with its critical value, and the critical
/// value of the total variation between counts on the histogram's cells and their
/// probabilities `cell_probabilities` (summing to 1, the outside included where there is
/// one). Each simulated ensemble has the ensemble's size, draws its losses from the law at
/// `t` and refits T to them for its KS distance; its histogram counts come from the same
/// uniforms through the cells' cumulative probabilities (not refitted: the total variation
/// then errs towards "consistent").
pub fn calibrate(
    cells: &Cells,
    t: f64,
    losses: &[f64],
    cell_probabilities: Option<&[f64]>,
) -> Calibrated {
    let law = LossLaw::new(cells, t);
    let mut sorted = losses.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    // The observed distance with T refitted as each simulated one is (on the law's cell
    // means): the two fits differ by the quadrature's resolution, which would otherwise
    // shift the observed distance and not the simulated ones.
    let mean = sorted.iter().sum::<f64>() / n as f64;
    let observed = law.ks_distance(law.refit(t, mean), &sorted);
    let cumulative: Option<Vec<f64>> = cell_probabilities.map(|p| {
        p.iter()
            .scan(0.0, |s, v| {
                *s += v;
                Some(*s)
            })
            .collect()
    });
    let simulated: Vec<(f64, Option<f64>)> = (0..CALIBRATION_DRAWS)
        .into_par_iter()
        .map(|r| {
            let mut rng = SequentialRng::new(CALIBRATION_SEED, r as u32);
            let u = sorted_uniforms(n, &mut rng);
            let draws = law.quantiles(t, &u);
            let mean = draws.iter().sum::<f64>() / n as f64;
            let ks = law.ks_distance(law.refit(t, mean), &draws);
            let tv = cumulative.as_ref().zip(cell_probabilities).map(|(c, p)| {
                let mut counts = vec![0u32; c.len()];
                let mut k = 0;
                for &x in &u {
                    while k + 1 < c.len() && c[k] <= x {
                        k += 1;
                    }
                    counts[k] += 1;
                }
                super::total_variation(&counts, p).0
            });
            (ks, tv)
        })
        .collect();
    let exceeding = simulated.iter().filter(|s| s.0 >= observed).count();
    Calibrated {
        ks_distance: observed,
        ks_critical: critical(simulated.iter().map(|s| s.0).collect()),
        ks_p_value: (1 + exceeding) as f64 / (CALIBRATION_DRAWS + 1) as f64,
        tv_critical: cell_probabilities
            .map(|_| critical(simulated.iter().filter_map(|s| s.1).collect())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// L uniform on [0, 1] (cells of equal area at evenly spaced losses, T huge): the CDF is
    /// the identity, the quantiles invert it, and the KS distance of a known sample is exact.
    #[test]
    fn the_law_of_l_interpolates_within_cells_and_inverts() {
        let j = 1000;
        let cells = Cells {
            loss: (0..j).map(|i| (i as f64 + 0.5) / j as f64).collect(),
            area: vec![1.0; j],
            ..Cells::default()
        };
        let law = LossLaw::new(&cells, 1e12);
        let xs = [0.1, 0.25, 0.5, 0.9];
        for (x, f) in xs.iter().zip(law.cdf_sorted(1e12, &xs)) {
            assert!((f - x).abs() < 1e-9, "F({x}) = {f}");
        }
        let q = law.quantiles(1e12, &xs);
        for (x, y) in xs.iter().zip(&q) {
            assert!((x - y).abs() < 1e-9);
        }
        // One point at 0.5: F_N jumps from 0 to 1 there, D = ½.
        assert!((law.ks_distance(1e12, &[0.5]) - 0.5).abs() < 1e-9);
        // The refit finds the T whose mean is asked for: E_T[L] of an exponential law
        // truncated to [0, 1] at T = 0.1 is T − e^{−1/T}/(1 − e^{−1/T}).
        let t = 0.1f64;
        let mean = t - (-1.0 / t).exp() / (1.0 - (-1.0 / t).exp());
        let refit = law.refit(0.12, mean);
        assert!((refit / t - 1.0).abs() < 1e-3, "{refit}");
    }

    /// Exact draws of the law pass; a 50/50 mixture of the laws at T/3 and 5T/3 (the same
    /// mean loss, so the same fitted T) fails at N = 4,000; the calibrated critical value
    /// lies below the textbook one (1.36/√N), since T is refitted.
    #[test]
    fn the_calibrated_ks_test_passes_the_law_and_rejects_a_mixture_of_temperatures() {
        // L = |θ|²/2 in 2-D: the law of L at T is exponential with mean T.
        let j = 20_000;
        let cells = Cells {
            loss: (0..j).map(|i| 20.0 * (i as f64 + 0.5) / j as f64).collect(),
            area: vec![1.0; j],
            ..Cells::default()
        };
        let n = 4000;
        let mut rng = SequentialRng::new(5, 0);
        for mixture in [false, true] {
            let losses: Vec<f64> = (0..n)
                .map(|i| {
                    let t = match (mixture, i % 2) {
                        (false, _) => 1.0,
                        (true, 0) => 1.0 / 3.0,
                        (true, _) => 5.0 / 3.0,
                    };
                    -t * (1.0 - rng.random::<f64>()).ln()
                })
                .collect();
            let consistent = !mixture;
            let mean = losses.iter().sum::<f64>() / n as f64;
            let law = LossLaw::new(&cells, 1.0);
            let t = law.refit(1.0, mean);
            let c = calibrate(&cells, t, &losses, None);
            let textbook = 1.36 / (n as f64).sqrt();
            assert!(c.ks_critical < textbook, "{c:?} vs {textbook}");
            assert_eq!(c.ks_distance <= c.ks_critical, consistent, "{c:?}");
        }
    }

    /// The distribution of L that the plane's Gibbs test uses, built from the quadrature as
    /// the test builds it, against the exact one: on the isotropic quadratic L = |θ|²/2 the
    /// law of L at T is exponential with mean T. At T = 0.18, 0.43 and 1.5 (the learning rates
    /// 0.3, 0.6 and 1.2 of `thermo-quadratic`) it missed by 0.006 near the minimum, so 10⁵
    /// exact chains failed the KS test (critical value 0.0036); it must now be far below that.
    #[test]
    fn the_plane_law_of_l_matches_the_exponential_law_of_the_quadratic() {
        use crate::diagnostics::thermodynamics::{plane_cells, plane_cells_with_ranges};
        use crate::math::Grid2;
        let loss = |t: [f64; 2]| 0.5 * (t[0] * t[0] + t[1] * t[1]);
        let start = Grid2::new([-4.0, 4.0], [-4.0, 4.0], 160, 160);
        for t in [0.177, 0.43, 1.5] {
            let (grid, _) = plane_cells(&loss, start, t);
            // The grid covers where exp(−L/T) exceeds about 1e-14 of its top, no more: r up to
            // √(2T·ln 10¹⁴) plus a cell or two.
            let reach = (2.0 * t * 1e14f64.ln()).sqrt();
            assert!(
                grid.x[1] > reach && grid.x[1] < 1.1 * reach,
                "{grid:?} at T = {t}"
            );
            let law = LossLaw::new(&plane_cells_with_ranges(&loss, &grid), t);
            let xs: Vec<f64> = (1..2000).map(|k| t * f64::from(k) * 0.005).collect();
            let worst = xs
                .iter()
                .zip(law.cdf_sorted(t, &xs))
                .map(|(x, f)| (f - (1.0 - (-x / t).exp())).abs())
                .fold(0.0, f64::max);
            assert!(worst < 5e-4, "T = {t}: the law of L misses by {worst}");
        }
    }
}
