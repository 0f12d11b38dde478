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

/// The distribution of L under the Gibbs law on quadrature cells at temperatures near one
/// fitted T. Each cell's Gibbs mass (its area times exp(−L/T) at its centre) is spread evenly
/// over the losses the cell covers, its [`Cells::loss_range`] (the CDF interpolated within
/// cells); without ranges, over the losses between the midpoints to its neighbours in order
/// of loss. The CDF is then continuous and piecewise linear. (Spreading over the sorted
/// neighbours alone would not do where many cells share a loss, as the rings of the sphere's
/// quadrature nearly do: the CDF would climb in steps of a ring's mass.)
#[derive(Clone, Debug)]
pub struct LossLaw {
    /// The loss at each kept cell's centre.
    losses: Vec<f64>,
    /// Each kept cell's area.
    areas: Vec<f64>,
    /// Each kept cell's range of losses, at least a sliver wide.
    ranges: Vec<[f64; 2]>,
    /// Where each cell's range starts and ends, ascending: (loss, cell, +1 start or −1 end).
    events: Vec<(f64, u32, bool)>,
    /// The knots of the CDF: the events' losses.
    knots: Vec<f64>,
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
        let areas: Vec<f64> = kept.iter().map(|&k| cells.area[k]).collect();
        let j = losses.len();
        let ranges: Vec<[f64; 2]> = (0..j)
            .map(|i| {
                let [lo, hi] = if ranged {
                    cells.loss_range[kept[i]]
                } else {
                    // Half-way to the neighbours in order of loss.
                    let below = if i > 0 {
                        losses[i - 1]
                    } else {
                        2.0 * losses[0] - losses.get(1).copied().unwrap_or(losses[0])
                    };
                    let above = if i + 1 < j {
                        losses[i + 1]
                    } else {
                        2.0 * losses[i] - below.min(losses[i])
                    };
                    [0.5 * (below + losses[i]), 0.5 * (losses[i] + above)]
                };
                let sliver = 1e-12 * losses[i].abs().max(1e-300);
                [lo.min(losses[i]), hi.max(losses[i]).max(lo + sliver)]
            })
            .collect();
        let mut events: Vec<(f64, u32, bool)> = ranges
            .iter()
            .enumerate()
            .flat_map(|(i, r)| [(r[0], i as u32, true), (r[1], i as u32, false)])
            .collect();
        events.sort_by(|a, b| a.0.total_cmp(&b.0));
        let knots = events.iter().map(|e| e.0).collect();
        Self {
            losses,
            areas,
            ranges,
            events,
            knots,
        }
    }

    /// The probability of each kept cell at `t`.
    fn masses(&self, t: f64) -> Vec<f64> {
        let l0 = self.losses.first().copied().unwrap_or(0.0);
        let w: Vec<f64> = self
            .losses
            .iter()
            .zip(&self.areas)
            .map(|(l, a)| a * (-(l - l0) / t).exp())
            .collect();
        let z: f64 = w.iter().sum();
        w.into_iter().map(|v| v / z).collect()
    }

    /// The CDF at each knot at `t`: a sweep along the knots, the slope rising by a cell's
    /// mass over its width where its range starts and falling where it ends (and set back to
    /// exactly 0 where no range is open, so rounding cannot pile up).
    fn cdf_at_knots(&self, t: f64) -> Vec<f64> {
        let masses = self.masses(t);
        let mut c = Vec::with_capacity(self.knots.len());
        let (mut f, mut slope, mut open) = (0.0, 0.0, 0usize);
        let mut last = self.knots.first().copied().unwrap_or(0.0);
        for &(at, cell, starts) in &self.events {
            f += slope * (at - last);
            last = at;
            c.push(f);
            let r = self.ranges[cell as usize];
            let s = masses[cell as usize] / (r[1] - r[0]);
            if starts {
                slope += s;
                open += 1;
            } else {
                slope -= s;
                open -= 1;
                if open == 0 {
                    slope = 0.0;
                }
            }
        }
        let total = c.last().copied().unwrap_or(1.0);
        c.iter().map(|v| (v / total).clamp(0.0, 1.0)).collect()
    }

    /// The CDF of L at `t` at each of the ascending `losses` (one walk along the knots).
    fn cdf_sorted(&self, t: f64, losses: &[f64]) -> Vec<f64> {
        let c = self.cdf_at_knots(t);
        let b = &self.knots;
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
        let b = &self.knots;
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

    /// The temperature near `t0` whose mean loss is `mean` (the maximum-likelihood T of an
    /// ensemble with that mean, as [`super::fit_temperature`] finds it): Newton's method in
    /// ln T, with dE_T[L]/d ln T = Var_T[L]/T.
    pub fn refit(&self, t0: f64, mean: f64) -> f64 {
        let Some(&l0) = self.losses.first() else {
            return t0;
        };
        let mut ln_t = t0.ln();
        for _ in 0..40 {
            let t = ln_t.exp();
            let (mut z, mut s1, mut s2) = (0.0, 0.0, 0.0);
            for (l, a) in self.losses.iter().zip(&self.areas) {
                let x = l - l0;
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
    let observed = law.ks_distance(t, &sorted);
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
}
