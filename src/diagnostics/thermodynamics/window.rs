//! Entropy in a network's weight space (MATH.md §5.6, "Entropy of networks"). The ensemble's
//! k-NN estimate over thousands of weights measures how far apart the networks are (each
//! sits in its own basin, so the k-th neighbours are other networks), not the spread SGD
//! keeps around one of them. The paper's estimate is from a window of one trajectory; this
//! file does that for a subset of networks: each network's iterates over the last half of
//! the run ([`WindowPlan`], recorded by [`WindowRecorder`] in bounded memory), thinned by the
//! integrated autocorrelation time of its slowest direction to a fixed [`WINDOW_KEPT`]
//! iterates, split in two halves: the [`WINDOW_DIMS`] principal directions fitted on one half,
//! Kozachenko–Leonenko on the other half's coordinates along them, and the other way round.
//! Directions fitted on the iterates they then measure are those iterates' widest noise
//! directions, and read several nats too much. The Marchenko–Pastur edge ([`noise_edge`])
//! says whether those directions stand out of the noise at all. The mean over the networks is
//! [`WindowEntropy`]. The file also holds the rule that says when the ensemble estimate means
//! something ([`ensemble_entropy_check`]).

use crate::diagnostics::entropy::knn_entropy_dense;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Principal directions r each network's window is projected on: well below the iterates
/// each half of a thinned window holds ([`WINDOW_KEPT`] / 2 = 8 r), so that the k-NN balls
/// stay local.
pub const WINDOW_DIMS: usize = 8;

/// Neighbour rank k of the windowed estimate (the ensemble's, MATH.md §5.2).
pub const WINDOW_KNN_K: usize = 5;

/// Iterates recorded per network over the window (the last half of the run).
pub const WINDOW_ITERATES: u32 = 512;

/// Networks whose windows are recorded (the first ones; the diverged are dropped).
pub const WINDOW_NETWORKS: u32 = 16;

/// Iterates every measured window keeps after thinning, whatever its autocorrelation time:
/// two halves of 8 r = 64, one to fit the directions on and one to measure (MATH.md §5.6).
/// The k-NN estimate's bias depends on how many points it is given, so one count for every
/// η keeps that bias out of S(η); a window that cannot keep this many iterates at least an
/// autocorrelation time apart is not measured.
pub const WINDOW_KEPT: usize = 16 * WINDOW_DIMS;

/// Most bytes the recorded windows may hold. [`WindowPlan::new`] records fewer networks when
/// a network's window would exceed it; at the widest architecture (2,472 weights) 16 windows
/// of 512 iterates hold 81 MB, at `mlp-op`'s 1,218 weights 40 MB.
pub const WINDOW_MEMORY: usize = 128 << 20;

/// Networks the ensemble's k-NN estimate uses (the first alive ones): its cost grows with
/// the square of the networks (N²·d), so a run of 65,536 networks measures a subset.
pub const ENSEMBLE_ENTROPY_NETWORKS: usize = 512;

/// Dimensions up to which the ensemble estimate counts without the subsample check: the
/// plane and the sphere, where thousands of chains resolve the density.
pub const SMALL_DIMS: usize = 3;

/// Which iterates of a run the window records: `iterates` of them, `every` steps apart,
/// after step `first_step`; the last at the run's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowPlan {
    /// Networks recorded (the first ones).
    pub networks: u32,
    /// The window starts after this step.
    pub first_step: u32,
    /// Steps between recorded iterates.
    pub every: u32,
    /// Iterates recorded per network.
    pub iterates: u32,
}

impl WindowPlan {
    /// The window of a run of `steps` over `chains` networks of `params` weights: the last
    /// half of the run, at most [`WINDOW_ITERATES`] iterates of at most [`WINDOW_NETWORKS`]
    /// networks, within [`WINDOW_MEMORY`].
    pub fn new(steps: u32, chains: u32, params: usize) -> Self {
        let half = steps / 2;
        let iterates = WINDOW_ITERATES.min(half);
        let every = half.checked_div(iterates).unwrap_or(1);
        let per_network = iterates as usize * params.max(1) * std::mem::size_of::<f32>();
        let fit = (WINDOW_MEMORY / per_network.max(1)).max(1) as u32;
        Self {
            networks: WINDOW_NETWORKS.min(chains).min(fit),
            first_step: steps - every * iterates,
            every,
            iterates,
        }
    }

    /// Whether the iterate after `step` steps is recorded.
    pub fn records_at(&self, step: u32) -> bool {
        step > self.first_step
            && (step - self.first_step).is_multiple_of(self.every)
            && (step - self.first_step) / self.every <= self.iterates
    }

    /// The next recorded step after `done`, if any.
    pub fn next_after(&self, done: u32) -> Option<u32> {
        let last = self.first_step + self.every * self.iterates;
        if self.iterates == 0 || done >= last {
            return None;
        }
        if done < self.first_step {
            return Some(self.first_step + self.every);
        }
        Some(self.first_step + ((done - self.first_step) / self.every + 1) * self.every)
    }

    /// Bytes the recorded windows hold.
    pub fn bytes(&self, params: usize) -> usize {
        self.networks as usize * self.iterates as usize * params * std::mem::size_of::<f32>()
    }
}

/// The windows of [`WindowPlan::networks`] networks, filled iterate by iterate; its memory
/// ([`WindowPlan::bytes`]) is taken once, at the start.
#[derive(Clone, Debug)]
pub struct WindowRecorder {
    plan: WindowPlan,
    params: usize,
    /// Network-major: each network's iterates in order, each `params` weights.
    weights: Vec<f32>,
    recorded: usize,
}

impl WindowRecorder {
    /// An empty recorder for `plan` over networks of `params` weights.
    pub fn new(plan: WindowPlan, params: usize) -> Self {
        Self {
            plan,
            params,
            weights: vec![0.0; plan.bytes(params) / std::mem::size_of::<f32>()],
            recorded: 0,
        }
    }

    /// The plan it records.
    pub fn plan(&self) -> WindowPlan {
        self.plan
    }

    /// Records one iterate: `weights` of the plan's networks, network-major (as
    /// `read_weights(0, networks)` returns them). Ignored once the window is full.
    pub fn push(&mut self, weights: &[f32]) {
        let (p, n) = (self.params, self.plan.iterates as usize);
        if self.recorded >= n {
            return;
        }
        for (net, w) in weights
            .chunks_exact(p)
            .take(self.plan.networks as usize)
            .enumerate()
        {
            let at = (net * n + self.recorded) * p;
            self.weights[at..at + p].copy_from_slice(w);
        }
        self.recorded += 1;
    }

    /// Iterates recorded so far.
    pub fn recorded(&self) -> usize {
        self.recorded
    }

    /// The windowed entropy of the networks whose `alive` flag is set (one per recorded
    /// network; a network that diverged in the window is left out).
    pub fn estimate(&self, alive: &[bool]) -> WindowEntropy {
        let (p, n) = (self.params, self.plan.iterates as usize);
        let windows: Vec<&[f32]> = (0..self.plan.networks as usize)
            .filter(|&net| alive.get(net).copied().unwrap_or(false))
            .map(|net| &self.weights[net * n * p..(net * n + self.recorded) * p])
            .collect();
        let mut entropy = windowed_entropy(&windows, p, WINDOW_DIMS, WINDOW_KNN_K);
        entropy.networks = self.plan.networks;
        entropy.first_step = self.plan.first_step;
        entropy.every = self.plan.every;
        // A longer run helps windows that fluctuate too slowly, not windows that drift.
        if entropy.s.is_none()
            && entropy.kept > 0
            && (entropy.kept as usize) < WINDOW_KEPT
            && 2 * entropy.drifting < entropy.networks
            && let Some(tau) = entropy.autocorrelation
        {
            let steps = steps_for_window(tau * f64::from(self.plan.every.max(1)));
            entropy.steps_needed = Some(steps);
            if let Some(note) = &mut entropy.note {
                note.push_str(&format!("; run at least {steps} steps to measure it"));
            }
        }
        entropy
    }
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// The steps a run needs so that its window, the last half, holds [`WINDOW_KEPT`]
/// iterates `tau_steps` apart (the autocorrelation time in steps, which does not change with
/// the run's length), rounded up to two significant figures.
pub fn steps_for_window(tau_steps: f64) -> u32 {
    let steps = 2.0 * WINDOW_KEPT as f64 * tau_steps.max(1.0);
    let unit = 10f64.powi(steps.log10().floor() as i32 - 1).max(1.0);
    ((steps / unit).ceil() * unit).min(f64::from(u32::MAX)) as u32
}

/// The windowed entropy of networks in weight space (MATH.md §5.6): the mean over networks
/// of the k-NN entropy of one half of each one's thinned window on the principal directions
/// of the other half (both ways round).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowEntropy {
    /// Mean entropy (nats) over the networks measured, on `dims` principal directions; None
    /// when fewer than half the recorded networks could be measured (`note` says why).
    pub s: Option<f64>,
    /// Its standard error (the spread across networks over √networks).
    pub s_se: Option<f64>,
    /// Principal directions r of each window.
    pub dims: u32,
    /// Neighbour rank k.
    pub k: u32,
    /// Networks recorded.
    pub networks: u32,
    /// Networks measured (alive, with enough independent iterates).
    pub measured: u32,
    /// The window starts after this step.
    pub first_step: u32,
    /// Steps between recorded iterates.
    pub every: u32,
    /// Iterates recorded per network.
    pub iterates: u32,
    /// Integrated autocorrelation time of each window's top principal coordinate, in
    /// recorded iterates: the median over the networks (None where no window had one).
    pub autocorrelation: Option<f64>,
    /// Iterates each window keeps after thinning: the median over the networks;
    /// [`WINDOW_KEPT`] for every measured one (fewer where a window cannot reach it).
    pub kept: u32,
    /// Networks whose windows drift along their widest direction instead of fluctuating
    /// ([`drifts`]): no run length measures them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub drifting: u32,
    /// Where the windows held too few independent iterates: the steps a run needs so that
    /// its window (the last half) holds [`WINDOW_KEPT`] of them at the autocorrelation
    /// time measured, in steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_needed: Option<u32>,
    /// The r-th eigenvalue of a half window's covariance over the Marchenko–Pastur edge of
    /// its noise ([`noise_edge`]): the mean over the two halves, the median over the networks
    /// measured. Above 1 the r directions stand out of the noise (a spectral gap); below 1
    /// they are noise directions of the sample covariance, and `note` says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edge_ratio: Option<f64>,
    /// Why there is no estimate, or what limits it.
    pub note: Option<String>,
}

/// The windowed entropy of `windows` (each a network's iterates, iterate-major, `params`
/// weights each) on `dims` principal directions with neighbour rank `k` ([`trajectory_entropy`]
/// for each).
pub fn windowed_entropy(windows: &[&[f32]], params: usize, dims: usize, k: usize) -> WindowEntropy {
    let results: Vec<Trajectory> = windows
        .par_iter()
        .map(|w| trajectory_entropy(w, params, dims, k))
        .collect();
    let median = |mut v: Vec<f64>| -> Option<f64> {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let values: Vec<f64> = results.iter().filter_map(|t| t.entropy).collect();
    // The reason of the majority: drift, or too few independent iterates.
    let drifting = results.iter().filter(|t| t.drifting).count();
    let majority_drifts = 2 * drifting >= results.len();
    let why = results
        .iter()
        .filter(|t| t.drifting == majority_drifts)
        .chain(&results)
        .find_map(|t| t.why.clone())
        .unwrap_or_default();
    let mut entropy = WindowEntropy {
        dims: dims as u32,
        k: k as u32,
        networks: windows.len() as u32,
        measured: values.len() as u32,
        iterates: windows
            .first()
            .map_or(0, |w| (w.len() / params.max(1)) as u32),
        autocorrelation: median(results.iter().filter_map(|t| t.autocorrelation).collect()),
        kept: median(results.iter().map(|t| t.kept as f64).collect()).unwrap_or(0.0) as u32,
        drifting: drifting as u32,
        edge_ratio: median(
            results
                .iter()
                .filter(|t| t.entropy.is_some())
                .filter_map(|t| t.edge_ratio)
                .collect(),
        ),
        ..WindowEntropy::default()
    };
    if windows.is_empty() {
        entropy.note =
            Some("no network's window was recorded (too few steps or all diverged)".into());
        return entropy;
    }
    if 2 * values.len() < windows.len() || values.len() < 2 {
        entropy.note = Some(format!(
            "{} of {} windows measured: {why}",
            values.len(),
            windows.len()
        ));
        return entropy;
    }
    let (mean, se) = super::mean_and_se(&values);
    entropy.s = Some(mean);
    entropy.s_se = Some(se);
    let mut notes = Vec::new();
    if values.len() < windows.len() {
        notes.push(format!(
            "{} of {} windows measured; the others: {why}",
            values.len(),
            windows.len()
        ));
    }
    if let Some(ratio) = entropy.edge_ratio.filter(|&ratio| ratio < 1.0) {
        let above = median(
            results
                .iter()
                .filter(|t| t.entropy.is_some())
                .map(|t| t.above_edge as f64)
                .collect(),
        )
        .unwrap_or(0.0);
        notes.push(format!(
            "no spectral gap: the {dims}th eigenvalue of a half window's covariance is \
             {ratio:.2} of the Marchenko–Pastur edge of its noise ({above:.0} of {dims} \
             directions above it), so the {dims} principal directions are directions of the \
             noise and S is the entropy of {dims} arbitrary directions of the spread, not of \
             its widest"
        ));
    }
    entropy.note = (!notes.is_empty()).then(|| notes.join("; "));
    entropy
}

/// One network's windowed entropy and how it was thinned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trajectory {
    /// k-NN entropy (nats) on the principal directions; None when it cannot be measured.
    pub entropy: Option<f64>,
    /// Integrated autocorrelation time of the top principal coordinate (iterates); None for
    /// a window too short or that never moved.
    pub autocorrelation: Option<f64>,
    /// Iterates kept after thinning.
    pub kept: usize,
    /// Whether the window's top coordinate drifts rather than fluctuates ([`drifts`]).
    pub drifting: bool,
    /// The r-th eigenvalue of a half's covariance over its noise edge, the mean over the two
    /// halves ([`WindowEntropy::edge_ratio`]).
    pub edge_ratio: Option<f64>,
    /// Eigenvalues above the noise edge, the mean over the two halves (rounded down).
    pub above_edge: usize,
    /// Why there is no entropy.
    pub why: Option<String>,
}

/// Whether a series drifts rather than fluctuates about a level: its mean squared change
/// over a quarter of its length is more than 1.4 times that over an eighth. A fluctuation
/// whose autocorrelation time is well below an eighth of the window has forgotten its start
/// at both lags (ratio near 1); a random walk's squared change grows in proportion to the
/// lag (ratio near 2). One series' ratio is noisy (a walk of 512 steps scores above 1.4 four
/// times in five, an AR(1) series with τ = 39 one time in seven), so a point's windows are
/// judged by their majority. A drifting window has no autocorrelation time of its own, and a
/// longer run does not give it more independent iterates.
pub fn drifts(series: &[f64]) -> bool {
    let n = series.len();
    if n < 32 {
        return false;
    }
    let change = |lag: usize| {
        series
            .windows(lag + 1)
            .map(|w| (w[lag] - w[0]).powi(2))
            .sum::<f64>()
            / (n - lag) as f64
    };
    let eighth = change(n / 8);
    eighth > 0.0 && change(n / 4) > 1.4 * eighth
}

/// The entropy of one trajectory's `window` (iterates of `params` weights, in order): the
/// integrated autocorrelation time τ of its top principal coordinate sets the thinning,
/// [`WINDOW_KEPT`] iterates spread evenly over the window (so at least ⌈τ⌉ apart); the first
/// half of them and the second are each projected on the `dims` principal directions of the
/// other ([`HalfFit`]) and measured by k-NN (MATH.md §5.2), and the two estimates averaged.
/// Without an entropy, `why` says why: a window that never moved, one that drifts, or too few
/// independent iterates.
pub fn trajectory_entropy(window: &[f32], params: usize, dims: usize, k: usize) -> Trajectory {
    let n = window.len() / params.max(1);
    let half = WINDOW_KEPT / 2;
    let fail = |why: String| Trajectory {
        why: Some(why),
        ..Trajectory::default()
    };
    if dims == 0 || dims > params || dims >= half || k >= half {
        return fail(format!(
            "{dims} directions of {params} weights cannot be measured from halves of {half} \
             iterates with k = {k}"
        ));
    }
    if n < 4 {
        return fail(format!("a window of {n} iterates is too short"));
    }
    let all = centred(window, params, &(0..n).collect::<Vec<_>>());
    let top = principal_coordinates(&all, n, params, 1);
    if top.iter().all(|v| *v == 0.0) {
        return fail("the window never moved".into());
    }
    let tau = autocorrelation_time(&top);
    // Iterates ⌈τ⌉ apart the window can hold.
    let independent = (n - 1) / (tau.ceil() as usize).max(1) + 1;
    let mut result = Trajectory {
        autocorrelation: Some(tau),
        kept: independent.min(WINDOW_KEPT),
        drifting: drifts(&top),
        ..Trajectory::default()
    };
    if independent < WINDOW_KEPT && result.drifting {
        result.why = Some(format!(
            "the networks drift along their widest direction (their squared change keeps growing \
             with the lag; autocorrelation time {tau:.0} of {n} iterates): a longer run keeps \
             drifting, so no window of it measures a stationary spread"
        ));
        return result;
    }
    if independent < WINDOW_KEPT {
        result.why = Some(format!(
            "the window holds {independent} independent iterates (autocorrelation time \
             {tau:.0} of {n} iterates), {WINDOW_KEPT} needed"
        ));
        return result;
    }
    // Evenly spread: consecutive ones are at least (n − 1)/(WINDOW_KEPT − 1) ≥ ⌈τ⌉ apart.
    let kept: Vec<usize> = (0..WINDOW_KEPT)
        .map(|i| i * (n - 1) / (WINDOW_KEPT - 1))
        .collect();
    // Contiguous halves: interleaved ones would share the residual correlation of neighbours
    // τ apart, which the fit's overfitting in d ≫ n dimensions amplifies (MATH.md §5.6).
    let (early, late) = kept.split_at(half);
    let both = [(early, late), (late, early)].map(|(fit_rows, measured_rows)| {
        let fit = HalfFit::new(window, params, fit_rows, dims);
        let points = fit.project(window, params, measured_rows);
        (knn_entropy_dense(&points, dims, k), fit.edge)
    });
    let [(a, edge_a), (b, edge_b)] = both;
    result.entropy = a.zip(b).map(|(a, b)| (a + b) / 2.0);
    result.edge_ratio = Some((edge_a.ratio + edge_b.ratio) / 2.0);
    result.above_edge = (edge_a.above + edge_b.above) / 2;
    result
}

/// The principal directions of half a window, fitted on its own iterates, with its
/// covariance spectrum's noise edge.
struct HalfFit {
    /// The `dims` directions (unit vectors of `params` weights), in order of falling variance.
    directions: Vec<Vec<f64>>,
    /// Its noise edge and the `dims`-th eigenvalue against it.
    edge: NoiseEdge,
}

impl HalfFit {
    /// The fit on iterates `rows` of `window`: the eigenvectors of their n × n Gram matrix
    /// (n = `rows.len()` is far below the weights, so this is exact and cheaper than the d × d
    /// covariance), mapped back to weight space.
    fn new(window: &[f32], params: usize, rows: &[usize], dims: usize) -> Self {
        let n = rows.len();
        let x = centred(window, params, rows);
        let row = |i: usize| &x[i * params..(i + 1) * params];
        let mut gram = vec![0.0; n * n];
        for i in 0..n {
            for j in i..n {
                let dot: f64 = row(i)
                    .iter()
                    .zip(row(j))
                    .map(|(&a, &b)| f64::from(a) * f64::from(b))
                    .sum();
                gram[i * n + j] = dot;
                gram[j * n + i] = dot;
            }
        }
        let (values, vectors) = symmetric_eigen(gram, n);
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&i, &j| values[j].total_cmp(&values[i]));
        // The covariance (normalised by n − 1) has at most min(n − 1, d) nonzero eigenvalues.
        let eigenvalues: Vec<f64> = order
            .iter()
            .take((n - 1).min(params))
            .map(|&e| values[e].max(0.0) / (n - 1) as f64)
            .collect();
        let directions = order
            .iter()
            .take(dims)
            .map(|&e| {
                let mut u = vec![0.0; params];
                if values[e] > 0.0 {
                    let scale = values[e].sqrt();
                    for i in 0..n {
                        let weight = vectors[i * n + e] / scale;
                        u.iter_mut()
                            .zip(row(i))
                            .for_each(|(u, &a)| *u += weight * f64::from(a));
                    }
                }
                u
            })
            .collect();
        Self {
            directions,
            edge: noise_edge(&eigenvalues, n, params, dims),
        }
    }

    /// The coordinates (row-major, f32 as the k-NN estimate takes them) of iterates `rows` of
    /// `window`, centred on their own mean (k-NN distances do not see a shift), along the
    /// directions.
    fn project(&self, window: &[f32], params: usize, rows: &[usize]) -> Vec<f32> {
        let x = centred(window, params, rows);
        x.chunks_exact(params)
            .flat_map(|r| {
                self.directions.iter().map(move |u| {
                    r.iter()
                        .zip(u)
                        .map(|(&a, &b)| f64::from(a) * b)
                        .sum::<f64>() as f32
                })
            })
            .collect()
    }
}

/// Where the eigenvalues of a sample covariance stop being noise, and the r-th eigenvalue
/// against that edge (MATH.md §5.6).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NoiseEdge {
    /// The noise variance per weight σ², from the bulk of the spectrum.
    pub variance: f64,
    /// The Marchenko–Pastur edge σ²(1 + √(d/(n − 1)))²: the largest eigenvalue isotropic
    /// noise of that variance gives n iterates in d weights.
    pub edge: f64,
    /// Eigenvalues above the edge.
    pub above: usize,
    /// The r-th eigenvalue over the edge (0 where the covariance has fewer than r).
    pub ratio: f64,
}

/// The [`NoiseEdge`] of the nonzero `eigenvalues` (largest first) of the covariance of `rows`
/// centred iterates of `params` weights, normalised by `rows` − 1, and the `dims`-th
/// eigenvalue against it. σ² is the bulk's: the eigenvalues above the edge are set aside and
/// the rest, which hold the noise of `rows` − 1 − m samples in `params` − m weights, give
/// σ² = (n − 1) Σ_bulk λ / ((d − m)(n − 1 − m)); the edge moves with σ², so this is repeated
/// until no further eigenvalue crosses it (m grows at every round, so it ends).
pub fn noise_edge(eigenvalues: &[f64], rows: usize, params: usize, dims: usize) -> NoiseEdge {
    let (samples, d) = (rows.saturating_sub(1) as f64, params as f64);
    let spread = (1.0 + (d / samples.max(1.0)).sqrt()).powi(2);
    let nonzero = eigenvalues.len();
    let mut above = 0;
    let mut result = NoiseEdge::default();
    for _ in 0..=nonzero {
        let bulk: f64 = eigenvalues[above..].iter().sum();
        let m = above as f64;
        let variance = samples * bulk / ((d - m) * (samples - m)).max(f64::MIN_POSITIVE);
        let edge = variance * spread;
        let now = eigenvalues
            .iter()
            .take(nonzero.saturating_sub(1))
            .filter(|&&l| l > edge)
            .count();
        result = NoiseEdge {
            variance,
            edge,
            above: now,
            ratio: eigenvalues
                .get(dims.wrapping_sub(1))
                .map_or(0.0, |&l| if edge > 0.0 { l / edge } else { 0.0 }),
        };
        if now <= above {
            break;
        }
        above = now;
    }
    result
}

/// The iterates `rows` of `window` minus their mean, row-major (f32: a network's spread is
/// far above f32's resolution of its weights, which the engines store in f32 anyway).
fn centred(window: &[f32], params: usize, rows: &[usize]) -> Vec<f32> {
    let mut mean = vec![0.0f64; params];
    for &i in rows {
        for (m, &w) in mean.iter_mut().zip(&window[i * params..(i + 1) * params]) {
            *m += f64::from(w);
        }
    }
    mean.iter_mut().for_each(|m| *m /= rows.len() as f64);
    rows.iter()
        .flat_map(|&i| {
            window[i * params..(i + 1) * params]
                .iter()
                .zip(&mean)
                .map(|(&w, &m)| (f64::from(w) - m) as f32)
        })
        .collect()
}

/// Iterations of the subspace iteration in [`principal_coordinates`].
const SUBSPACE_ITERATIONS: usize = 12;

/// Extra directions the subspace iteration carries beyond the ones asked for (they speed
/// its convergence where the spectrum decays slowly).
const OVERSAMPLING: usize = 4;

/// The coordinates (n × `dims`, row-major, in order of falling variance) of the `n` centred
/// rows `x` (each `params` long) on their `dims` principal directions: subspace iteration
/// with XᵀX from a deterministic start (spread rows of x), then Rayleigh–Ritz.
pub fn principal_coordinates(x: &[f32], n: usize, params: usize, dims: usize) -> Vec<f64> {
    let b = (dims + OVERSAMPLING).min(n).min(params);
    let row = |i: usize| &x[i * params..(i + 1) * params];
    // Start: b rows spread over the window, plus a fixed pattern that breaks ties.
    let mut q: Vec<Vec<f64>> = (0..b)
        .map(|j| {
            let i = (j * n) / b + (n / b) / 2;
            row(i.min(n - 1))
                .iter()
                .enumerate()
                .map(|(a, &v)| f64::from(v) + 1e-9 * (((a * 7 + j * 13) % 17) as f64 - 8.0))
                .collect()
        })
        .collect();
    let times = |q: &[Vec<f64>]| -> Vec<Vec<f64>> {
        // x q: n × b, stored column by column.
        q.par_iter()
            .map(|v| {
                (0..n)
                    .map(|i| row(i).iter().zip(v).map(|(&a, b)| f64::from(a) * b).sum())
                    .collect()
            })
            .collect()
    };
    let transposed_times = |p: &[Vec<f64>]| -> Vec<Vec<f64>> {
        p.par_iter()
            .map(|c| {
                let mut v = vec![0.0; params];
                for (i, &ci) in c.iter().enumerate() {
                    for (vj, &a) in v.iter_mut().zip(row(i)) {
                        *vj += ci * f64::from(a);
                    }
                }
                v
            })
            .collect()
    };
    for _ in 0..SUBSPACE_ITERATIONS {
        orthonormalise(&mut q);
        q = transposed_times(&times(&q));
    }
    orthonormalise(&mut q);
    let p = times(&q);
    // Rayleigh–Ritz: the b × b covariance of the coordinates, its eigenvectors by Jacobi.
    let c: Vec<f64> = (0..b * b)
        .map(|ab| {
            let (a, bb) = (ab / b, ab % b);
            p[a].iter().zip(&p[bb]).map(|(x, y)| x * y).sum()
        })
        .collect();
    let (values, vectors) = symmetric_eigen(c, b);
    let mut order: Vec<usize> = (0..b).collect();
    order.sort_by(|&i, &j| values[j].total_cmp(&values[i]));
    let dims = dims.min(b);
    let mut out = vec![0.0; n * dims];
    for i in 0..n {
        for (k, &e) in order.iter().take(dims).enumerate() {
            out[i * dims + k] = (0..b).map(|a| p[a][i] * vectors[a * b + e]).sum();
        }
    }
    out
}

/// Modified Gram–Schmidt on the vectors `q` (a vector that falls to zero stays zero).
fn orthonormalise(q: &mut [Vec<f64>]) {
    for j in 0..q.len() {
        for i in 0..j {
            let (done, rest) = q.split_at_mut(j);
            let dot: f64 = done[i].iter().zip(&rest[0]).map(|(a, b)| a * b).sum();
            rest[0]
                .iter_mut()
                .zip(&done[i])
                .for_each(|(v, u)| *v -= dot * u);
        }
        let norm = q[j].iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 0.0 {
            q[j].iter_mut().for_each(|v| *v /= norm);
        }
    }
}

/// Eigenvalues and eigenvectors (column `e` of the row-major `n × n` result) of the
/// symmetric row-major matrix `a`, by cyclic Jacobi rotations.
pub fn symmetric_eigen(mut a: Vec<f64>, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0.0; n * n];
    (0..n).for_each(|i| v[i * n + i] = 1.0);
    for _ in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i * n + j].powi(2))
            .sum();
        let scale: f64 = (0..n).map(|i| a[i * n + i].powi(2)).sum();
        if off <= 1e-30 * scale.max(f64::MIN_POSITIVE) {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let sign = if theta >= 0.0 { 1.0 } else { -1.0 };
                let t = sign / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i * n + i]).collect(), v)
}

/// The integrated autocorrelation time τ = 1 + 2 Σₜ ρ(t) of a series, summed up to the
/// first lag t ≥ 5τ (Sokal's automatic window); at least 1. A series that stays correlated
/// over half its length returns the sum so far (large: few independent values).
pub fn autocorrelation_time(series: &[f64]) -> f64 {
    let n = series.len();
    let mean = series.iter().sum::<f64>() / n as f64;
    let var = series.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
    if n < 4 || var <= 0.0 {
        return 1.0;
    }
    let mut tau = 1.0;
    for t in 1..n / 2 {
        let rho = (0..n - t)
            .map(|i| (series[i] - mean) * (series[i + t] - mean))
            .sum::<f64>()
            / (n as f64 * var);
        tau += 2.0 * rho;
        if t as f64 >= 5.0 * tau {
            break;
        }
    }
    tau.max(1.0)
}

/// The subsample check of the ensemble's k-NN entropy: the estimate from all the points
/// against the mean of the estimates from four disjoint quarters of them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnsembleEntropyCheck {
    /// Points (networks) used.
    pub points: usize,
    /// Their dimension.
    pub dims: usize,
    /// S from all the points.
    pub full: f64,
    /// Mean S over the four quarters.
    pub quarter_mean: f64,
    /// Its standard error (the quarters' spread over √4).
    pub quarter_se: f64,
}

impl EnsembleEntropyCheck {
    /// Whether the estimate has converged in the number of points: S from a quarter of them
    /// agrees with S from all within three standard errors of the quarters' mean.
    pub fn converged(&self) -> bool {
        (self.full - self.quarter_mean).abs() <= 3.0 * self.quarter_se
    }

    /// Whether the ensemble estimate means something: the dimension is small
    /// ([`SMALL_DIMS`]) or the estimate has converged.
    pub fn meaningful(&self) -> bool {
        self.dims <= SMALL_DIMS || self.converged()
    }

    /// Why the ensemble's S is left out of T_slope, if it is.
    pub fn note(&self) -> Option<String> {
        (!self.meaningful()).then(|| {
            format!(
                "ensemble S not used for T_slope: in {} dimensions S from a quarter of the {} \
                 networks is {:.1} ± {:.1} nats against {:.1} from all of them (not converged; \
                 the k-th neighbours are other networks, so it measures how far apart they \
                 are). The windowed S measures each network's own spread.",
                self.dims, self.points, self.quarter_mean, self.quarter_se, self.full
            )
        })
    }
}

/// [`EnsembleEntropyCheck`] of `points` (point-major, `dims` each) with neighbour rank `k`;
/// None with fewer than 4(k + 1) points.
pub fn ensemble_entropy_check(
    points: &[f32],
    dims: usize,
    k: usize,
) -> Option<EnsembleEntropyCheck> {
    let n = points.len() / dims.max(1);
    let quarter = n / 4;
    if quarter <= k {
        return None;
    }
    let full = knn_entropy_dense(points, dims, k)?;
    let quarters: Vec<f64> = (0..4)
        .map(|q| {
            knn_entropy_dense(
                &points[q * quarter * dims..(q + 1) * quarter * dims],
                dims,
                k,
            )
        })
        .collect::<Option<_>>()?;
    let (quarter_mean, quarter_se) = super::mean_and_se(&quarters);
    Some(EnsembleEntropyCheck {
        points: n,
        dims,
        full,
        quarter_mean,
        quarter_se,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::SequentialRng;
    use rand_distr::{Distribution, StandardNormal};

    /// Random walks drift; AR(1) series with τ = 39 fluctuate. One series' verdict is noisy,
    /// so a point's windows are judged by their majority: here 16 of each kind.
    #[test]
    fn random_walks_drift_and_slow_fluctuations_do_not() {
        let flagged = |coefficient: f64| {
            (0..16)
                .filter(|&seed| {
                    let mut rng = SequentialRng::new(8, seed);
                    let mut x = vec![0.0f64];
                    for _ in 1..512 {
                        let z: f64 = StandardNormal.sample(&mut rng);
                        x.push(coefficient * x.last().unwrap() + z);
                    }
                    drifts(&x)
                })
                .count()
        };
        let (walks, fluctuations) = (flagged(1.0), flagged(0.95));
        eprintln!("drifting: {walks} of 16 walks, {fluctuations} of 16 AR(1)");
        assert!(walks > 8 && fluctuations < 8);
    }

    /// A window that holds too few independent iterates says how long a run would do: at
    /// τ = 157 recorded iterates 2 steps apart (mlp-up at 3,000 steps), 2 × 128 × 314 steps.
    #[test]
    fn a_short_window_says_how_many_steps_would_measure_it() {
        assert_eq!(steps_for_window(314.0), 81_000);
        assert_eq!(steps_for_window(0.2), 260);
        // The window of a run that long, at the same τ in steps, keeps enough iterates ⌈τ⌉
        // apart, as trajectory_entropy counts them.
        let plan = WindowPlan::new(81_000, 512, 1218);
        let tau_iterates = 314.0 / f64::from(plan.every);
        let independent = (plan.iterates as usize - 1) / tau_iterates.ceil() as usize + 1;
        assert!(independent >= WINDOW_KEPT, "{independent}");
    }

    #[test]
    fn the_plan_records_the_last_half_and_stays_within_its_memory() {
        let plan = WindowPlan::new(3000, 512, 1218);
        assert_eq!((plan.networks, plan.every, plan.iterates), (16, 2, 512));
        assert_eq!(plan.first_step, 3000 - 1024);
        let steps: Vec<u32> = (0..=3000).filter(|&s| plan.records_at(s)).collect();
        assert_eq!(steps.len(), 512);
        assert_eq!((steps[0], *steps.last().unwrap()), (1978, 3000));
        // next_after walks the same steps.
        let mut walked = Vec::new();
        let mut at = 0;
        while let Some(next) = plan.next_after(at) {
            walked.push(next);
            at = next;
        }
        assert_eq!(walked, steps);
        assert!(plan.bytes(1218) <= 40 << 20);
        // The widest network still fits; a short run records what it has.
        assert!(WindowPlan::new(20_000, 65_536, 2472).bytes(2472) <= WINDOW_MEMORY);
        let short = WindowPlan::new(100, 8, 12);
        assert_eq!((short.networks, short.iterates, short.every), (8, 50, 1));
        assert_eq!(WindowPlan::new(1, 8, 12).next_after(0), None);
    }

    /// Windows that never moved, or are too short, give no entropy and say why; the record
    /// has no NaN, so it survives JSON (which has none).
    #[test]
    fn windows_without_an_entropy_say_why_and_survive_their_record() {
        let still = vec![0.5f32; 100 * 6];
        let short = vec![0.5f32; 10 * 6];
        let entropy = windowed_entropy(&[&still, &still, &short], 6, 4, 5);
        assert_eq!(
            (entropy.s, entropy.measured, entropy.autocorrelation),
            (None, 0, None)
        );
        assert!(
            entropy.note.as_ref().unwrap().contains("never moved"),
            "{entropy:?}"
        );
        let text = serde_json::to_string(&entropy).unwrap();
        assert_eq!(
            serde_json::from_str::<WindowEntropy>(&text).unwrap(),
            entropy
        );
        let recorder = WindowRecorder::new(WindowPlan::new(4, 2, 6), 6);
        assert!(recorder.estimate(&[false, false]).note.is_some());
    }

    /// An AR(1) series with coefficient φ has τ = (1 + φ)/(1 − φ).
    #[test]
    fn the_autocorrelation_time_of_an_ar1_series_is_known() {
        let mut rng = SequentialRng::new(3, 1);
        for phi in [0.0, 0.5, 0.8] {
            let mut x = 0.0;
            let series: Vec<f64> = (0..100_000)
                .map(|_| {
                    let z: f64 = StandardNormal.sample(&mut rng);
                    x = phi * x + z;
                    x
                })
                .collect();
            let (tau, exact) = (autocorrelation_time(&series), (1.0 + phi) / (1.0 - phi));
            assert!(
                (tau - exact).abs() < 0.15 * exact,
                "φ {phi}: τ {tau} vs {exact}"
            );
        }
    }

    /// Jacobi recovers a known spectrum, and the principal coordinates of points with three
    /// known spreads in 50 dimensions have those spreads.
    #[test]
    fn principal_coordinates_find_the_widest_directions() {
        let a = vec![4.0, 1.0, 0.0, 1.0, 3.0, 0.0, 0.0, 0.0, 1.0];
        let (values, vectors) = symmetric_eigen(a.clone(), 3);
        for e in 0..3 {
            for i in 0..3 {
                let av: f64 = (0..3).map(|j| a[i * 3 + j] * vectors[j * 3 + e]).sum();
                assert!((av - values[e] * vectors[i * 3 + e]).abs() < 1e-12);
            }
        }
        let mut rng = SequentialRng::new(4, 1);
        let (n, d) = (400, 50);
        let spreads = |a: usize| match a {
            7 => 5.0,
            20 => 3.0,
            33 => 2.0,
            _ => 0.01,
        };
        let x: Vec<f32> = (0..n * d)
            .map(|i| {
                let z: f64 = StandardNormal.sample(&mut rng);
                (spreads(i % d) * z) as f32
            })
            .collect();
        let x = centred(&x, d, &(0..n).collect::<Vec<_>>());
        let y = principal_coordinates(&x, n, d, 3);
        for (k, sd) in [5.0, 3.0, 2.0].into_iter().enumerate() {
            let var = (0..n).map(|i| y[i * 3 + k].powi(2)).sum::<f64>() / n as f64;
            assert!(
                (var.sqrt() / sd - 1.0).abs() < 0.1,
                "{k}: {} vs {sd}",
                var.sqrt()
            );
        }
    }

    /// `iterates` iterates of a Gaussian AR(1) process with coefficient `phi` in `params`
    /// weights, stationary spread `sd(a)` along weight a (independent draws at φ = 0).
    fn ar_window(
        params: usize,
        iterates: usize,
        phi: f64,
        sd: impl Fn(usize) -> f64,
        seed: u64,
    ) -> Vec<f32> {
        let mut rng = SequentialRng::new(seed, 43);
        let mut normal = move || -> f64 { StandardNormal.sample(&mut rng) };
        let sd: Vec<f64> = (0..params).map(sd).collect();
        let innovation = (1.0 - phi * phi).sqrt();
        let mut x: Vec<f64> = sd.iter().map(|s| s * normal()).collect();
        let mut out = Vec::with_capacity(iterates * params);
        for _ in 0..iterates {
            for (v, s) in x.iter_mut().zip(&sd) {
                *v = phi * *v + innovation * s * normal();
            }
            out.extend(x.iter().map(|&v| v as f32));
        }
        out
    }

    /// The entropy of a Gaussian with standard deviations `sd`: Σ ½ ln(2πe sd²).
    fn gaussian_entropy(sd: impl IntoIterator<Item = f64>) -> f64 {
        sd.into_iter()
            .map(|s| 0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E * s * s).ln())
            .sum()
    }

    /// Eight wide directions (sd 1 down to 0.44) and the rest narrow (0.01).
    fn low_rank(a: usize) -> f64 {
        if a < 8 { 1.0 - 0.08 * a as f64 } else { 0.01 }
    }

    /// The audit's isotropic case (#43): i.i.d. N(0, I) iterates in `mlp-op`'s 1,218 weights,
    /// whose projection on any r orthonormal directions has entropy (r/2) ln(2πe) = 11.35.
    /// Directions fitted on the iterates they then measure are the sample's widest noise
    /// directions and read about 10 nats too much (20.96 before the split); directions fitted
    /// on the other half are independent of the half measured, which reads the truth within
    /// 1 nat. The r-th eigenvalue sits below the Marchenko–Pastur edge, and the note says so.
    #[test]
    fn the_windowed_entropy_of_isotropic_noise_is_its_known_entropy() {
        let (d, r) = (1218, WINDOW_DIMS);
        let truth = gaussian_entropy(vec![1.0; r]);
        let windows: Vec<Vec<f32>> = (0..4)
            .map(|seed| ar_window(d, 256, 0.0, |_| 1.0, seed))
            .collect();
        let views: Vec<&[f32]> = windows.iter().map(Vec::as_slice).collect();
        let entropy = windowed_entropy(&views, d, r, WINDOW_KNN_K);
        let s = entropy.s.unwrap();
        eprintln!(
            "isotropic: S {s:.2} ± {:.2} against {truth:.2}; {entropy:?}",
            entropy.s_se.unwrap()
        );
        assert!((s - truth).abs() < 1.0, "S {s} against {truth}");
        assert_eq!(entropy.kept as usize, WINDOW_KEPT);
        assert!(
            entropy.edge_ratio.is_some_and(|ratio| ratio < 1.0),
            "{entropy:?}"
        );
        assert!(
            entropy
                .note
                .as_ref()
                .is_some_and(|n| n.contains("no spectral gap")),
            "{entropy:?}"
        );
        // The record keeps the ratio through JSON; a record from before it reads None.
        let text = serde_json::to_string(&entropy).unwrap();
        assert_eq!(
            serde_json::from_str::<WindowEntropy>(&text).unwrap(),
            entropy
        );
        let old = text.replace(
            &format!(",\"edge_ratio\":{}", entropy.edge_ratio.unwrap()),
            "",
        );
        assert_eq!(
            serde_json::from_str::<WindowEntropy>(&old)
                .unwrap()
                .edge_ratio,
            None
        );
    }

    /// A window whose spread lies in 8 wide directions (sd 1 down to 0.44, the other 1,210
    /// weights 0.01) has a spectral gap: its 8th eigenvalue stands far above the noise edge,
    /// the note says nothing about a gap, and S is the entropy of the 8 wide directions.
    #[test]
    fn a_low_rank_signal_has_a_spectral_gap() {
        let d = 1218;
        let truth = gaussian_entropy((0..8).map(low_rank));
        let windows: Vec<Vec<f32>> = (0..2)
            .map(|seed| ar_window(d, 256, 0.0, low_rank, 10 + seed))
            .collect();
        let views: Vec<&[f32]> = windows.iter().map(Vec::as_slice).collect();
        let entropy = windowed_entropy(&views, d, WINDOW_DIMS, WINDOW_KNN_K);
        eprintln!("low rank: truth {truth:.2}; {entropy:?}");
        assert!(
            entropy.edge_ratio.is_some_and(|ratio| ratio > 5.0),
            "{entropy:?}"
        );
        assert_eq!(entropy.note, None);
        assert!((entropy.s.unwrap() - truth).abs() < 1.0, "{entropy:?}");
    }

    /// The estimator's bias depends on the number of points it is given, so every measured
    /// window keeps the same number whatever its autocorrelation time (τ = 1 and 3 here:
    /// before, 256 and 171), and reads the same entropy; a window too slow to keep that many
    /// (τ = 19) is not measured and says how many it needed.
    #[test]
    fn windows_keep_the_same_number_of_iterates_at_every_thinning() {
        let d = 1218;
        let truth = gaussian_entropy((0..8).map(low_rank));
        let measure = |phi: f64, seed: u64| {
            let window = ar_window(d, 512, phi, low_rank, seed);
            let t = trajectory_entropy(&window, d, WINDOW_DIMS, WINDOW_KNN_K);
            eprintln!(
                "φ {phi}: τ {:?}, kept {}, S {:?} (truth {truth:.2}), edge ratio {:?}",
                t.autocorrelation, t.kept, t.entropy, t.edge_ratio
            );
            t
        };
        let (fast, slow) = (measure(0.0, 20), measure(0.5, 21));
        assert_eq!((fast.kept, slow.kept), (WINDOW_KEPT, WINDOW_KEPT));
        for t in [&fast, &slow] {
            assert!((t.entropy.unwrap() - truth).abs() < 1.0, "{t:?}");
        }
        let slower = measure(0.9, 22);
        assert!(slower.entropy.is_none() && slower.kept < WINDOW_KEPT);
        assert!(
            slower
                .why
                .as_ref()
                .is_some_and(|why| why.contains(&format!("{WINDOW_KEPT} needed"))),
            "{slower:?}"
        );
    }

    /// The noise edge of a known spectrum: the bulk's variance is recovered once the spikes
    /// above the edge are set aside.
    #[test]
    fn the_noise_edge_sets_the_spikes_aside() {
        // 63 eigenvalues of 19.3 (noise σ² = 1 in 1,218 weights from 64 rows: the mean
        // nonzero eigenvalue is σ² d/(n − 1)) and two spikes.
        let mut values = vec![1000.0, 500.0];
        values.extend(vec![1218.0 / 63.0; 61]);
        let edge = noise_edge(&values, 64, 1218, 2);
        let exact = (1.0 + (1218.0f64 / 63.0).sqrt()).powi(2);
        assert_eq!(edge.above, 2);
        assert!((edge.variance - 1.0).abs() < 0.02, "{edge:?}");
        assert!((edge.edge / exact - 1.0).abs() < 0.02, "{edge:?}");
        assert!((edge.ratio - 500.0 / edge.edge).abs() < 1e-12);
    }
}
