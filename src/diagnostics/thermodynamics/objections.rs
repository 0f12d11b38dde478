//! The review's objections to the slope temperature, as experiments (MATH.md §5.6):
//!
//! - **ΔU/ΔS per block along one run.** Away from stationarity the ratio still has the units
//!   of a temperature, but it measures a width: on the quadratic started wide (Var θ = V₀),
//!   U = λV and S = ln(2πeV) + const per coordinate, so dU/dS = λV relaxes from λV₀ down to
//!   the stationary T. [`block_temperatures`] computes it from a run's U and S traces.
//! - **How stable is T_slope?** The same sweep's slope temperature from k-NN entropies with
//!   other neighbour ranks k, other ensemble sizes N (subsamples) and other slope windows
//!   (3, 5, 7 points). Each point stores its S for a few (k, N) at measurement time
//!   ([`knn_variants`]), so the table recomputes T_slope for any of them without a rerun.

use super::{Measured, slope_temperatures_with};
use crate::diagnostics::entropy::knn_entropy;
use serde::{Deserialize, Serialize};

/// Neighbour ranks k stored per point.
pub const VARIANT_K: [u32; 4] = [2, 5, 10, 20];

/// Ensemble sizes stored per point, as divisors of N, the alive chains up to
/// [`VARIANT_CHAINS`]: N, N/4, N/16.
pub const VARIANT_DIVISORS: [u32; 3] = [1, 4, 16];

/// Most chains the variants use (a strided subsample beyond): a 100,000-chain sweep would
/// otherwise spend more on them than on its runs.
pub const VARIANT_CHAINS: usize = 20_000;

/// Slope windows offered (points fitted around each learning rate).
pub const SLOPE_WINDOWS: [usize; 3] = [3, 5, 7];

/// The window of the slope fit unless another is chosen.
pub const DEFAULT_SLOPE_WINDOW: usize = 5;

/// The k-NN entropy of one point's ensemble with neighbour rank `k` on `n` of its chains.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnnVariant {
    /// Neighbour rank.
    pub k: u32,
    /// Chains used (every `divisor`-th alive chain).
    pub n: u32,
    /// Subsample divisor (1: all alive chains).
    pub divisor: u32,
    /// The estimate (nats).
    pub s: f64,
}

/// S by Kozachenko–Leonenko for every k of [`VARIANT_K`] on every subsample of
/// [`VARIANT_DIVISORS`] of at most [`VARIANT_CHAINS`] points (every d-th chain: the chains
/// are independent, so a strided subsample is a random one). Subsamples with fewer than 4k
/// points are skipped.
pub fn knn_variants(points: &[[f64; 2]]) -> Vec<KnnVariant> {
    use rayon::prelude::*;
    let every = points.len().div_ceil(VARIANT_CHAINS).max(1);
    let base: Vec<[f64; 2]> = points.iter().step_by(every).copied().collect();
    let jobs: Vec<(u32, u32)> = VARIANT_DIVISORS
        .iter()
        .flat_map(|&d| VARIANT_K.iter().map(move |&k| (d, k)))
        .collect();
    jobs.par_iter()
        .filter_map(|&(divisor, k)| {
            let sub: Vec<[f64; 2]> = base.iter().step_by(divisor as usize).copied().collect();
            if sub.len() < 4 * k as usize {
                return None;
            }
            knn_entropy(&sub, k as usize).map(|s| KnnVariant {
                k,
                n: sub.len() as u32,
                divisor,
                s,
            })
        })
        .collect()
}

/// The entropy a point stores for (`k`, `divisor`), if it does.
pub fn variant_entropy(variants: &[KnnVariant], k: u32, divisor: u32) -> Option<f64> {
    variants
        .iter()
        .find(|v| v.k == k && v.divisor == divisor)
        .map(|v| v.s)
}

/// ΔU/ΔS between consecutive block ends of one run, at the later block's step: the
/// "temperature" the slope construction reads off a trajectory (a width, while the run is
/// not stationary). Blocks whose S did not move (|ΔS| below 1e-9) give none.
pub fn block_temperatures(u_trace: &[(u32, f64)], s_trace: &[(u32, f64)]) -> Vec<(u32, f64)> {
    // Pair U and S by step (a diverged block may miss one of them).
    let pairs: Vec<(u32, f64, f64)> = s_trace
        .iter()
        .filter_map(|&(step, s)| {
            u_trace
                .iter()
                .find(|(t, _)| *t == step)
                .map(|&(_, u)| (step, u, s))
        })
        .collect();
    pairs
        .windows(2)
        .filter_map(|w| {
            let (du, ds) = (w[1].1 - w[0].1, w[1].2 - w[0].2);
            let t = du / ds;
            (ds.abs() > 1e-9 && t.is_finite()).then_some((w[1].0, t))
        })
        .collect()
}

/// The spread of T_slope at each point over every stored (k, N) and every window of
/// [`SLOPE_WINDOWS`]: (smallest, largest), None where no variant gives a slope. `points`
/// are the sweep's measurements (in order of η) and `variants` each point's stored S.
pub fn slope_spread(points: &[Measured], variants: &[&[KnnVariant]]) -> Vec<Option<(f64, f64)>> {
    let mut spread: Vec<Option<(f64, f64)>> = vec![None; points.len()];
    for divisor in VARIANT_DIVISORS {
        for k in VARIANT_K {
            let with: Vec<Measured> = points
                .iter()
                .zip(variants)
                .map(|(p, v)| {
                    let s = variant_entropy(v, k, divisor).unwrap_or(f64::NAN);
                    Measured {
                        s,
                        included: p.included && s.is_finite(),
                        ..*p
                    }
                })
                .collect();
            for window in SLOPE_WINDOWS {
                for (slot, t) in spread
                    .iter_mut()
                    .zip(slope_temperatures_with(&with, window))
                {
                    if let Some(t) = t {
                        *slot = Some(slot.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t))));
                    }
                }
            }
        }
    }
    spread
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Gaussian ensemble relaxing from a wide start: U = λV and S = ln(2πeV) per coordinate
    /// give ΔU/ΔS = λ·(the logarithmic mean of V over the block), far above the stationary T
    /// early on and equal to it at the end.
    #[test]
    fn the_block_temperature_of_a_relaxing_gaussian_is_its_width() {
        let (lambda, t_stationary, v0) = (1.0, 0.01, 25.0);
        let v = |step: u32| t_stationary / lambda + (v0 - t_stationary) * 0.98f64.powi(step as i32);
        let steps: Vec<u32> = (1..=16).map(|b| b * 40).collect();
        let u: Vec<(u32, f64)> = steps.iter().map(|&s| (s, lambda * v(s))).collect();
        let s: Vec<(u32, f64)> = steps
            .iter()
            .map(|&st| {
                (
                    st,
                    (2.0 * std::f64::consts::PI * std::f64::consts::E * v(st)).ln(),
                )
            })
            .collect();
        let blocks = block_temperatures(&u, &s);
        assert_eq!(blocks.len(), 15);
        for (w, &(step, t)) in steps.windows(2).zip(&blocks) {
            let (a, b) = (v(w[0]), v(w[1]));
            let log_mean = (a - b) / (a / b).ln();
            assert_eq!(step, w[1]);
            assert!(
                (t / (lambda * log_mean) - 1.0).abs() < 1e-9,
                "{t} vs {log_mean}"
            );
        }
        assert!(blocks[0].1 > 100.0 * t_stationary, "{blocks:?}");
        assert!(
            (blocks[14].1 / t_stationary - 1.0).abs() < 0.05,
            "{blocks:?}"
        );
    }
}
