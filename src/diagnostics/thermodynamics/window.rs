//! Entropy in a network's weight space (MATH.md §5.6, "Entropy of networks"). The ensemble's
//! k-NN estimate over thousands of weights measures how far apart the networks are (each
//! sits in its own basin, so the k-th neighbours are other networks), not the spread SGD
//! keeps around one of them. The paper's estimate is from a window of one trajectory; this
//! file does that for a subset of networks: each network's iterates over the last half of
//! the run ([`WindowPlan`], recorded by [`WindowRecorder`] in bounded memory), thinned by the
//! integrated autocorrelation time of its slowest direction, projected on the
//! [`WINDOW_DIMS`] principal directions of its own window, and measured there by
//! Kozachenko–Leonenko; the mean over the networks is [`WindowEntropy`]. It also holds the
//! rule that says when the ensemble estimate means something ([`ensemble_entropy_check`]).

use crate::diagnostics::entropy::knn_entropy_dense;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Principal directions r each network's window is projected on: well below the iterates a
/// window keeps after thinning ([`WINDOW_MIN_KEPT`] = 8 r), so that the k-NN balls stay local.
pub const WINDOW_DIMS: usize = 8;

/// Neighbour rank k of the windowed estimate (the ensemble's, MATH.md §5.2).
pub const WINDOW_KNN_K: usize = 5;

/// Iterates recorded per network over the window (the last half of the run).
pub const WINDOW_ITERATES: u32 = 512;

/// Networks whose windows are recorded (the first ones; the diverged are dropped).
pub const WINDOW_NETWORKS: u32 = 16;

/// Fewest iterates a network's window must keep after thinning to be measured.
pub const WINDOW_MIN_KEPT: usize = 8 * WINDOW_DIMS;

/// Most iterates a thinned window keeps (thinned further, evenly, beyond it).
pub const WINDOW_MAX_KEPT: usize = 256;

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
            && (entropy.kept as usize) < WINDOW_MIN_KEPT
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

/// The steps a run needs so that its window, the last half, holds [`WINDOW_MIN_KEPT`]
/// iterates `tau_steps` apart (the autocorrelation time in steps, which does not change with
/// the run's length), rounded up to two significant figures.
pub fn steps_for_window(tau_steps: f64) -> u32 {
    let steps = 2.0 * WINDOW_MIN_KEPT as f64 * tau_steps.max(1.0);
    let unit = 10f64.powi(steps.log10().floor() as i32 - 1).max(1.0);
    ((steps / unit).ceil() * unit).min(f64::from(u32::MAX)) as u32
}

/// The windowed entropy of networks in weight space (MATH.md §5.6): the mean over networks
/// of the k-NN entropy of each one's thinned window on its own principal directions.
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
    /// Iterates each window keeps after thinning: the median over the networks.
    pub kept: u32,
    /// Networks whose windows drift along their widest direction instead of fluctuating
    /// ([`drifts`]): no run length measures them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub drifting: u32,
    /// Where the windows held too few independent iterates: the steps a run needs so that
    /// its window (the last half) holds [`WINDOW_MIN_KEPT`] of them at the autocorrelation
    /// time measured, in steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_needed: Option<u32>,
    /// Why there is no estimate, or what limits it.
    pub note: Option<String>,
}

/// The windowed entropy of `windows` (each a network's iterates, iterate-major, `params`
/// weights each) on `dims` principal directions with neighbour rank `k`.
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
    if values.len() < windows.len() {
        entropy.note = Some(format!(
            "{} of {} windows measured; the others: {why}",
            values.len(),
            windows.len()
        ));
    }
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
/// integrated autocorrelation time τ of its top principal coordinate sets the thinning
/// (every ⌈τ⌉-th iterate, and evenly down to [`WINDOW_MAX_KEPT`]); the kept iterates are
/// projected on their `dims` principal directions and measured by k-NN (MATH.md §5.2).
/// Without an entropy, `why` says why: a window that never moved, or too few independent
/// iterates.
pub fn trajectory_entropy(window: &[f32], params: usize, dims: usize, k: usize) -> Trajectory {
    let n = window.len() / params.max(1);
    let min = WINDOW_MIN_KEPT.max(dims + k + 1);
    let fail = |why: String| Trajectory {
        why: Some(why),
        ..Trajectory::default()
    };
    if n < min {
        return fail(format!("a window of {n} iterates is too short"));
    }
    let all = centred(window, params, &(0..n).collect::<Vec<_>>());
    let top = principal_coordinates(&all, n, params, 1);
    if top.iter().all(|v| *v == 0.0) {
        return fail("the window never moved".into());
    }
    let tau = autocorrelation_time(&top);
    let stride = (tau.ceil() as usize)
        .max(n.div_ceil(WINDOW_MAX_KEPT))
        .max(1);
    let kept: Vec<usize> = (0..n).step_by(stride).collect();
    let mut result = Trajectory {
        autocorrelation: Some(tau),
        kept: kept.len(),
        drifting: drifts(&top),
        ..Trajectory::default()
    };
    if kept.len() < min && result.drifting {
        result.why = Some(format!(
            "the networks drift along their widest direction (their squared change keeps growing \
             with the lag; autocorrelation time {tau:.0} of {n} iterates): a longer run keeps \
             drifting, so no window of it measures a stationary spread"
        ));
        return result;
    }
    if kept.len() < min {
        result.why = Some(format!(
            "the window holds {} independent iterates (autocorrelation time {tau:.0} of {n} \
             iterates), {min} needed",
            kept.len()
        ));
        return result;
    }
    let x = centred(window, params, &kept);
    let coordinates = principal_coordinates(&x, kept.len(), params, dims);
    let points: Vec<f32> = coordinates.iter().map(|&v| v as f32).collect();
    result.entropy = knn_entropy_dense(&points, dims, k);
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
    /// τ = 157 recorded iterates 2 steps apart (mlp-up at 3,000 steps), 2 × 64 × 314 steps.
    #[test]
    fn a_short_window_says_how_many_steps_would_measure_it() {
        assert_eq!(steps_for_window(314.0), 41_000);
        assert_eq!(steps_for_window(0.2), 130);
        // The window of a run that long, at the same τ in steps, keeps enough iterates.
        let plan = WindowPlan::new(41_000, 512, 1218);
        let tau_iterates = 314.0 / f64::from(plan.every);
        assert!((f64::from(plan.iterates) / tau_iterates).floor() as usize >= WINDOW_MIN_KEPT);
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
}
