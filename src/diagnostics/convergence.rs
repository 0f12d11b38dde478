//! Convergence instruments that run live beside the chains: split R̂ (bulk and tail) and ESS
//! on a window of recent draws of the first chains, nested R̂ over all chains from the
//! engines' superchain sums, and the kernel Stein discrepancy of a subsample against what
//! exact draws score. The app's diagnostics strip and `run`'s time series both read a
//! [`ConvergenceMonitor`].
//!
//! Sizes, and why: R̂ and ESS look at the last [`MONITOR_WINDOW`] draws (one per recorded
//! block) of the first [`MONITOR_CHAINS`] chains. Their rank normalisation sorts all
//! 64 × 256 × 2 draws, about 2 ms on one core, so they can be recomputed several times a
//! second without slowing the chains; 64 chains give 128 split halves, enough for a stable
//! between-chain variance, and a window (not the whole history) lets R̂ come down once the
//! chains forget their start. Nested R̂ needs no draws kept: the engines reduce one sum per
//! superchain over every chain. The KSD costs O(n²) kernel terms: [`KSD_POINTS`] = 256 points
//! keep it near a millisecond.

use super::mcmc;
use super::nested::{self, Undefined};
use super::stein::{Imq, ksd};
use super::{nan_max, nan_min};
use crate::engine::{ChainStates, SuperchainMoments};
use crate::math::Target;
use serde::Serialize;
use std::collections::VecDeque;

/// Chains whose recent draws feed the windowed R̂ and ESS.
pub const MONITOR_CHAINS: usize = 64;
/// Draws per chain in the window of R̂ and ESS.
pub const MONITOR_WINDOW: usize = 256;
/// Fewest draws per chain before R̂ and ESS are computed (split halves of 8).
pub const MIN_WINDOW: usize = 16;
/// Alive chains the kernel Stein discrepancy is computed on.
pub const KSD_POINTS: usize = 256;
/// Independent sets of exact draws behind the KSD baseline.
pub const KSD_BASELINE_DRAWS: usize = 8;
/// R̂ (split or nested) above this says the chains have not mixed (Vehtari et al. 2021).
pub const RHAT_THRESHOLD: f64 = 1.01;
/// Bulk and tail ESS below this many draws make quantiles unreliable (Vehtari et al. 2021:
/// 100 per chain for four chains; here a total over the monitored chains).
pub const ESS_FLOOR: f64 = 400.0;

/// One evaluation of the instruments. A number that could not be computed is NaN (an empty
/// CSV field, a JSON null).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ConvergenceRow {
    /// Steps done.
    pub step: u32,
    /// Draws per chain in the window.
    pub window: usize,
    /// Largest bulk split R̂ over the coordinates (window of the monitored chains).
    #[serde(serialize_with = "super::defined")]
    pub rhat_bulk: f64,
    /// Largest tail (folded) split R̂ over the coordinates.
    #[serde(serialize_with = "super::defined")]
    pub rhat_tail: f64,
    /// Smallest bulk ESS over the coordinates (draws of the monitored chains' window).
    #[serde(serialize_with = "super::defined")]
    pub ess_bulk: f64,
    /// Smallest tail ESS over the coordinates.
    #[serde(serialize_with = "super::defined")]
    pub ess_tail: f64,
    /// Bulk ESS per second of engine time, extrapolated from the monitored chains to all
    /// chains (they are independent and alike).
    #[serde(serialize_with = "super::defined")]
    pub ess_per_second: f64,
    /// Nested R̂ over all chains, one draw each (superchains only; NaN when undefined).
    #[serde(serialize_with = "super::defined")]
    pub nested_rhat: f64,
    /// Where nested R̂ settles once the chains are stationary: √(1 + 1/M).
    #[serde(serialize_with = "super::defined")]
    pub nested_rhat_level: f64,
    /// Kernel Stein discrepancy of up to [`KSD_POINTS`] alive chains.
    #[serde(serialize_with = "super::defined")]
    pub ksd: f64,
}

/// Rank histograms of the window's draws of one coordinate: flat when the groups mix.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankPlot {
    /// One label per group ("superchain 3", "chain 5").
    pub labels: Vec<String>,
    /// Per group, the count of its draws in each rank bin.
    pub counts: Vec<Vec<u32>>,
    /// What a flat histogram holds per bin: the group's draws / bins.
    pub expected: Vec<f64>,
}

/// What the app's diagnostics strip shows beside the time series: the latest evaluation
/// and what it is judged against.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvergenceSummary {
    /// The latest evaluation.
    pub latest: ConvergenceRow,
    /// Mean and standard deviation of the KSD of as many exact draws.
    pub ksd_baseline: (f64, f64),
    /// Superchains the chains started in.
    pub superchains: Option<u32>,
    /// Why nested R̂ is undefined, when it is (with superchains).
    pub nested_note: Option<String>,
    /// Split R̂ (the larger of bulk and tail, over both coordinates) of each superchain's
    /// own monitored chains: near 1 while nested R̂ is high means every superchain mixed
    /// inside while the superchains still disagree.
    pub superchain_rhats: Vec<f64>,
    /// Rank plots of θ₁ and θ₂ over the window.
    pub rank_plots: [RankPlot; 2],
    /// Monitored chains (alive) and draws each in the window.
    pub monitored: (usize, usize),
    /// The window's draws, for File → Export draws.
    pub draws: std::sync::Arc<super::draws::DrawRecorder>,
}

/// Bins of the rank plots.
pub const RANK_BINS: usize = 20;

/// One draw of the window.
#[derive(Clone, Debug)]
struct WindowDraw {
    step: u32,
    step_size: f64,
    seconds: f64,
    states: ChainStates,
}

/// The live instruments of one run of chains.
#[derive(Clone, Debug)]
pub struct ConvergenceMonitor {
    superchains: Option<u32>,
    chains: u32,
    /// The window, oldest first: per draw its step, the step size of its last step, the
    /// engine seconds at it and the monitored chains' full states (exported by File →
    /// Export draws).
    window: VecDeque<WindowDraw>,
    /// Per monitored chain, whether it diverged (its draws leave every statistic).
    diverged: Vec<bool>,
    kernel: Imq,
    ksd_baseline: (f64, f64),
    target: Target,
    last_nested: Result<f64, Undefined>,
}

impl ConvergenceMonitor {
    /// A monitor of `chains` chains on `target`, grouped in `superchains` when given. Computes
    /// the KSD baseline (a few milliseconds).
    pub fn new(target: &Target, chains: u32, superchains: Option<u32>) -> Self {
        let kernel = Imq::default();
        Self {
            superchains: superchains.filter(|&k| k >= 2),
            chains,
            window: VecDeque::with_capacity(MONITOR_WINDOW),
            diverged: Vec::new(),
            ksd_baseline: ksd_baseline(target, KSD_POINTS.min(chains as usize), kernel),
            kernel,
            target: target.clone(),
            last_nested: Err(Undefined::OneSuperchain),
        }
    }

    /// Superchains the chains started in.
    pub fn superchains(&self) -> Option<u32> {
        self.superchains
    }

    /// Mean and standard deviation of the KSD of as many exact draws as the monitor scores
    /// (its baseline: what a perfect sampler would show).
    pub fn ksd_baseline(&self) -> (f64, f64) {
        self.ksd_baseline
    }

    /// Where nested R̂ over all chains settles once they are stationary, √(1 + 1/M); NaN
    /// without superchains.
    pub fn nested_level(&self) -> f64 {
        self.superchains
            .map_or(f64::NAN, |k| nested::stationary_level(self.chains / k, 1))
    }

    /// Why nested R̂ is undefined at the last evaluation, if it is.
    pub fn nested_undefined(&self) -> Option<Undefined> {
        self.last_nested.err()
    }

    /// Forgets every draw (the chains restarted).
    pub fn clear(&mut self) {
        self.window.clear();
        self.diverged.clear();
    }

    /// Adds one draw of the first chains of `head` (the states after the block that ended at
    /// `step`, whose last step had size `step_size`), taken at `engine_seconds` of engine
    /// time since the start.
    pub fn observe(&mut self, head: &ChainStates, step: u32, step_size: f64, engine_seconds: f64) {
        let n = MONITOR_CHAINS.min(head.chains.len());
        if self.diverged.len() != n {
            self.diverged = vec![false; n];
            self.window.clear();
        }
        for i in 0..n {
            self.diverged[i] |= head.diverged_at[i] != 0;
        }
        if self.window.len() == MONITOR_WINDOW {
            self.window.pop_front();
        }
        self.window.push_back(WindowDraw {
            step,
            step_size,
            seconds: engine_seconds,
            states: ChainStates {
                chains: head.chains[..n].to_vec(),
                diverged_at: head.diverged_at[..n].to_vec(),
            },
        });
    }

    /// Draws per chain in the window.
    pub fn window(&self) -> usize {
        self.window.len()
    }

    /// The window's draws as an export ([`super::draws::DrawRecorder::write_zarr`]).
    pub fn draws(&self) -> super::draws::DrawRecorder {
        super::draws::DrawRecorder::from_window(
            self.window.iter().map(|d| (d.step, d.step_size, &d.states)),
        )
    }

    /// The window's draws of coordinate `c`, one `Vec` per monitored chain that never
    /// diverged, with its chain index.
    fn alive_draws(&self, c: usize) -> Vec<(usize, Vec<f64>)> {
        (0..self.diverged.len())
            .filter(|&i| !self.diverged[i])
            .map(|i| {
                let trace = self
                    .window
                    .iter()
                    .map(|d| f64::from(d.states.chains[i].theta[c]))
                    .collect();
                (i, trace)
            })
            .collect()
    }

    /// Evaluates every instrument after the block that ended at `step`: the window's R̂ and
    /// ESS, nested R̂ from the engine's `superchains` moments, the KSD of `head`'s alive
    /// chains.
    pub fn evaluate(
        &mut self,
        step: u32,
        superchains: &[SuperchainMoments],
        head: &ChainStates,
    ) -> ConvergenceRow {
        let window = self.window();
        let (mut rhat_bulk, mut rhat_tail) = (f64::NAN, f64::NAN);
        let (mut ess_bulk, mut ess_tail) = (f64::NAN, f64::NAN);
        if window >= MIN_WINDOW {
            for c in 0..2 {
                let draws: Vec<Vec<f64>> = self.alive_draws(c).into_iter().map(|d| d.1).collect();
                rhat_bulk = nan_max(rhat_bulk, mcmc::rhat_bulk_of(&draws));
                rhat_tail = nan_max(rhat_tail, mcmc::rhat_tail_of(&draws));
                ess_bulk = nan_min(ess_bulk, mcmc::ess_bulk(&draws));
                ess_tail = nan_min(ess_tail, mcmc::ess_tail(&draws));
            }
        }
        let seconds = match (self.window.front(), self.window.back()) {
            (Some(a), Some(b)) if b.seconds > a.seconds => b.seconds - a.seconds,
            _ => f64::NAN,
        };
        let monitored = self.diverged.iter().filter(|d| !**d).count().max(1) as f64;
        let ess_per_second = ess_bulk * f64::from(self.chains) / monitored / seconds;
        self.last_nested = if self.superchains.is_some() {
            nested::nested_rhat_of_moments(superchains)
        } else {
            Err(Undefined::OneSuperchain)
        };
        let nested_rhat_level = self.nested_level();
        ConvergenceRow {
            step,
            window,
            rhat_bulk,
            rhat_tail,
            ess_bulk,
            ess_tail,
            ess_per_second,
            nested_rhat: *self.last_nested.as_ref().unwrap_or(&f64::NAN),
            nested_rhat_level,
            ksd: self.ksd_of(head),
        }
    }

    /// The strip's summary after the evaluation `latest`.
    pub fn summary(&self, latest: ConvergenceRow) -> ConvergenceSummary {
        ConvergenceSummary {
            latest,
            ksd_baseline: self.ksd_baseline,
            superchains: self.superchains,
            nested_note: self
                .superchains
                .and(self.nested_undefined())
                .map(|u| u.to_string()),
            superchain_rhats: self.superchain_rhats(),
            rank_plots: [0, 1].map(|c| self.rank_plot(c, RANK_BINS)),
            monitored: (self.diverged.iter().filter(|d| !**d).count(), self.window()),
            draws: std::sync::Arc::new(self.draws()),
        }
    }

    /// Split R̂ of each superchain's own monitored chains (the larger of bulk and tail over
    /// both coordinates); empty without superchains or before [`MIN_WINDOW`] draws.
    pub fn superchain_rhats(&self) -> Vec<f64> {
        let Some(k) = self.superchains else {
            return Vec::new();
        };
        if self.window() < MIN_WINDOW {
            return Vec::new();
        }
        let per_coordinate = [0, 1].map(|c| self.alive_draws(c));
        (0..k as usize)
            .map(|s| {
                let mut worst = f64::NAN;
                for draws in &per_coordinate {
                    let mine: Vec<Vec<f64>> = draws
                        .iter()
                        .filter(|(i, _)| i % k as usize == s)
                        .map(|(_, d)| d.clone())
                        .collect();
                    worst = nan_max(worst, mcmc::split_rhat(&mine));
                }
                worst
            })
            .collect()
    }

    /// KSD of up to [`KSD_POINTS`] alive chains of `states`.
    pub fn ksd_of(&self, states: &ChainStates) -> f64 {
        ksd_of_points(&self.target, &alive_points(states, KSD_POINTS), self.kernel)
    }

    /// Rank histograms of coordinate `c` over the window, with `bins` bins: one per
    /// superchain (its monitored chains pooled, at most 16 superchains) or, without
    /// superchains, one per chain for the first eight. Empty before [`MIN_WINDOW`] draws.
    pub fn rank_plot(&self, c: usize, bins: usize) -> RankPlot {
        let draws = self.alive_draws(c);
        if self.window() < MIN_WINDOW || draws.is_empty() || bins == 0 {
            return RankPlot::default();
        }
        // Groups: superchains (at most 16 shown), or the first eight chains one by one.
        let (groups, modulus) = match self.superchains {
            Some(k) => ((k as usize).min(16), k as usize),
            None => (8, usize::MAX),
        };
        let group_of = |i: usize| Some(i % modulus).filter(|&g| g < groups);
        let labels: Vec<String> = (1..=groups)
            .map(|g| match self.superchains {
                Some(_) => format!("superchain {g}"),
                None => format!("chain {g}"),
            })
            .collect();
        let chains: Vec<Vec<f64>> = draws.iter().map(|d| d.1.clone()).collect();
        let ranks = mcmc::pooled_ranks(&chains);
        let total: usize = chains.iter().map(Vec::len).sum();
        let mut counts = vec![vec![0u32; bins]; labels.len()];
        let mut sizes = vec![0usize; labels.len()];
        for ((i, _), chain_ranks) in draws.iter().zip(&ranks) {
            let Some(g) = group_of(*i) else { continue };
            for &r in chain_ranks {
                // Rank r in 1..=total falls into bin ⌊(r − 1)·bins/total⌋.
                let b = (((r - 1.0) * bins as f64 / total as f64) as usize).min(bins - 1);
                counts[g][b] += 1;
                sizes[g] += 1;
            }
        }
        let expected = sizes.iter().map(|&s| s as f64 / bins as f64).collect();
        RankPlot {
            labels,
            counts,
            expected,
        }
    }
}

/// θ of up to `n` alive chains of `states`, flattened pairs.
pub fn alive_points(states: &ChainStates, n: usize) -> Vec<f64> {
    states
        .chains
        .iter()
        .zip(&states.diverged_at)
        .filter(|(_, d)| **d == 0)
        .take(n)
        .flat_map(|(c, _)| c.theta.map(f64::from))
        .collect()
}

/// The score ∇log p of `target` at θ by central differences of its exact −log density in
/// f64: one formula (the density) serves every target, the typed ones included, and the
/// difference error (about 1e-9 relative) is far below the KSD's sampling error.
pub fn score(target: &Target, t: [f64; 2]) -> [f64; 2] {
    [0, 1].map(|c| {
        let h = 1e-5 * (1.0 + t[c].abs());
        let (mut up, mut down) = (t, t);
        up[c] += h;
        down[c] -= h;
        -(target.neg_log_density(up) - target.neg_log_density(down)) / (2.0 * h)
    })
}

/// KSD of `points` (flattened pairs) under `target`.
pub fn ksd_of_points(target: &Target, points: &[f64], kernel: Imq) -> f64 {
    let scores: Vec<f64> = points
        .chunks_exact(2)
        .flat_map(|p| score(target, [p[0], p[1]]))
        .collect();
    ksd(points, &scores, 2, kernel)
}

/// Mean and standard deviation of the KSD of `n` exact draws over
/// [`KSD_BASELINE_DRAWS`] independent sets.
pub fn ksd_baseline(target: &Target, n: usize, kernel: Imq) -> (f64, f64) {
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let values: Vec<f64> = (0..KSD_BASELINE_DRAWS)
        .map(|b| {
            let samples = target.exact_samples(n, 0x5e1f + b as u64);
            ksd_of_points(target, &samples, kernel)
        })
        .collect();
    let k = values.len() as f64;
    let mean = values.iter().sum::<f64>() / k;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0);
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::SequentialRng;
    use crate::math::{Chain2, TargetSpec};
    use rand::{RngExt, SeedableRng};
    use rand_distr::StandardNormal;

    fn states(rng: &mut SequentialRng, n: usize, offset: impl Fn(usize) -> f32) -> ChainStates {
        ChainStates {
            chains: (0..n)
                .map(|i| Chain2 {
                    theta: [
                        offset(i) + rng.sample::<f32, _>(StandardNormal),
                        rng.sample::<f32, _>(StandardNormal),
                    ],
                    ..Chain2::default()
                })
                .collect(),
            diverged_at: vec![0; n],
        }
    }

    #[test]
    fn mixed_draws_give_flat_ranks_and_rhat_near_one() {
        let target = TargetSpec::from_name("gaussian").unwrap().build().unwrap();
        let mut monitor = ConvergenceMonitor::new(&target, 6400, Some(16));
        let mut rng = SequentialRng::seed_from_u64(1);
        for step in 0..300u32 {
            monitor.observe(&states(&mut rng, 64, |_| 0.0), step, 0.1, f64::from(step));
        }
        // The window keeps the last MONITOR_WINDOW draws only.
        assert_eq!(monitor.window(), MONITOR_WINDOW);
        let row = monitor.evaluate(300, &[], &states(&mut rng, 300, |_| 0.0));
        assert!(row.rhat_bulk < 1.01 && row.rhat_tail < 1.01, "{row:?}");
        assert!(row.ess_bulk > 0.5 * (64 * MONITOR_WINDOW) as f64, "{row:?}");
        // Independent exact draws score within the KSD baseline.
        let (base, sd) = monitor.ksd_baseline();
        assert!(row.ksd < base + 4.0 * sd, "{} vs {base} ± {sd}", row.ksd);
        let plot = monitor.rank_plot(0, RANK_BINS);
        assert_eq!(plot.counts.len(), 16);
        for (counts, expected) in plot.counts.iter().zip(&plot.expected) {
            // 4 chains × 256 draws in 20 bins: about 51 each, Poisson-like spread.
            let worst = counts
                .iter()
                .map(|&c| (f64::from(c) - expected).abs() / expected.sqrt())
                .fold(0.0, f64::max);
            assert!(worst < 5.0, "{counts:?} vs {expected}");
        }
        assert!(monitor.superchain_rhats().iter().all(|&r| r < 1.05));
    }

    #[test]
    fn chains_that_disagree_pile_up_in_their_ranks() {
        let target = TargetSpec::from_name("gaussian").unwrap().build().unwrap();
        let mut monitor = ConvergenceMonitor::new(&target, 6400, Some(16));
        let mut rng = SequentialRng::seed_from_u64(2);
        for step in 0..64u32 {
            // Each superchain offset by its index: they never meet.
            let head = states(&mut rng, 64, |i| (i % 16) as f32);
            monitor.observe(&head, step, 0.1, f64::from(step));
        }
        let row = monitor.evaluate(64, &[], &states(&mut rng, 64, |_| 0.0));
        assert!(row.rhat_bulk > 1.5, "{row:?}");
        let plot = monitor.rank_plot(0, RANK_BINS);
        // Superchain 1 sits lowest: its draws fill the first bins, none the last.
        assert!(plot.counts[0][0] > 0 && plot.counts[0][RANK_BINS - 1] == 0);
        // The exported window has every draw of every monitored chain.
        let draws = monitor.draws();
        assert_eq!((draws.chains(), draws.draws()), (64, 64));
    }
}
