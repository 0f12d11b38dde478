//! One learning rate of a thermodynamics sweep, judged (MATH.md §5.6). [`ThermoPoint`] is
//! the record a sweep stores. This file computes its statistics: U as mean ± standard
//! error, stationarity, the entropies and whether they converged, the Gibbs test (the fitted
//! T, the fitted law on the histogram's grid, the total variation and the Kolmogorov–Smirnov
//! distance of the losses with their calibrated critical values, and the verdict), the fold
//! of the sphere by its symmetry, and the known answer of SGD on an isotropic quadratic. The runner drives the engines and reads the ensembles back; it hands
//! them to [`plane_point`], [`sphere_point`] and [`network_point`].

use super::{
    Calibrated, Measured, calibrate, fit_temperature, hemisphere_cell, hemisphere_gibbs_on_grid,
    plane_cells, plane_cells_with_ranges, plane_gibbs_on_grid, plane_quadrature_start,
    quadratic_temperature_with_momentum, sphere_cell, sphere_gibbs_on_grid, sphere_quadrature,
    total_variation,
};
use crate::diagnostics::entropy::{
    KnnEstimate, SubsampleCheck, histogram_entropy, knn, plug_in_entropy, sphere_knn,
    subsample_check,
};
use crate::diagnostics::movement::Movement;
use crate::math::sphere::{loss as sphere_loss, signal_and_noise};
use crate::math::{Grid2, NoiseSpec, SamplerKind, ScheduleSpec, Target};
use glam::DVec3;
use serde::{Deserialize, Serialize};

/// Neighbour rank of the k-NN entropy (MATH.md §5.2).
pub const KNN_K: usize = 5;

/// Cells per side of the stored ensemble histogram of a 2-D run.
pub const HISTOGRAM_CELLS: u32 = 40;

/// Longitude × height cells of the stored ensemble histogram on the whole sphere
/// (z ∈ [−1, 1]). The toy's losses are even, so its ensembles are folded onto the upper
/// hemisphere and counted on the top half of these cells, 72 × 18 over z ∈ [0, 1].
pub const SPHERE_HISTOGRAM: (u32, u32) = (72, 36);

/// Directions stored per sphere point, for pictures.
pub const SPHERE_SAMPLE: usize = 600;

/// The k-NN entropy per dimension, S/d, below which an ensemble counts as collapsed: ln 10⁻⁶,
/// the law's entropy width e^{S/d} (the side of a square of uniform law with the same
/// entropy) below a millionth (MATH.md §5.6). S then falls without bound and T → 0. The
/// threshold is on S, which estimates a property of the law, and not on the mean ln εᵢ of
/// the neighbour distances, which for the same law shifts by −ψ(N)/d with the number of
/// chains N (Kozachenko–Leonenko).
pub const COLLAPSED_LN_WIDTH: f64 = -13.815_510_557_964_274;

/// JSON has no NaN: serde_json writes a NaN (a point whose chains diverged has no U) as
/// null, and this reads it back as NaN, so a results file with such a point still loads.
fn null_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// [`null_as_nan`] for the values of a trace.
fn trace_nulls_as_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<(u32, f64)>, D::Error> {
    Ok(Vec::<(u32, Option<f64>)>::deserialize(d)?
        .into_iter()
        .map(|(s, v)| (s, v.unwrap_or(f64::NAN)))
        .collect())
}

/// A histogram of the ensemble on a grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// The grid (for the sphere: longitude [0, 2π) × z [−1, 1]).
    pub grid: Grid2,
    /// Counts, row by row from the lowest y.
    pub counts: Vec<u32>,
}

/// What one learning rate measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThermoPoint {
    /// The target, or "sphere OP"/"sphere UP".
    pub problem: String,
    /// The sampler.
    pub sampler: String,
    /// Learning rate (step size) η.
    pub eta: f64,
    /// Chains run.
    pub chains: u32,
    /// Steps run.
    pub steps: u32,
    /// Chains alive at the end (the others diverged and are left out).
    pub alive: u32,
    /// Mean training loss over the final ensemble.
    #[serde(deserialize_with = "null_as_nan")]
    pub u: f64,
    /// The smallest loss of the problem (over the quadrature cells): U − u_min is the excess
    /// loss.
    pub u_min: Option<f64>,
    /// Its standard error (the chains are independent).
    #[serde(deserialize_with = "null_as_nan")]
    pub u_se: f64,
    /// Var of each coordinate of the final ensemble.
    pub var: Vec<f64>,
    /// Kozachenko–Leonenko entropy (geodesic on the sphere).
    pub s_knn: Option<f64>,
    /// Histogram entropy (Miller–Madow corrected).
    pub s_hist: Option<f64>,
    /// Fraction of the ensemble outside the histogram's grid (which it cannot see).
    pub hist_outside: Option<f64>,
    /// The temperature whose Gibbs law exp(−L/T)/Z best fits the ensemble (maximum
    /// likelihood).
    pub t_gibbs: Option<f64>,
    /// Total variation between the ensemble's histogram and that Gibbs law.
    pub gibbs_tv: Option<f64>,
    /// What exact draws of the Gibbs law would score (sampling noise alone).
    pub gibbs_tv_baseline: Option<f64>,
    /// The Gibbs law at `t_gibbs`: the probability of each cell of `histogram`'s grid, row
    /// by row as its counts (in the plane the mass outside the grid is left out). None where
    /// there is no fit, and in records written before it was stored.
    #[serde(default)]
    pub gibbs_probabilities: Option<Vec<f64>>,
    /// The 95th percentile of the total variation over simulated ensembles of the fitted
    /// law (its 5 % critical value; None in records written before it was stored).
    #[serde(default)]
    pub gibbs_tv_critical: Option<f64>,
    /// The Kolmogorov–Smirnov distance between the chains' loss values and the fitted law's
    /// distribution of L.
    #[serde(default)]
    pub ks_distance: Option<f64>,
    /// Its 5 % critical value, calibrated on simulated ensembles of the fitted law each with
    /// a refitted T.
    #[serde(default)]
    pub ks_critical: Option<f64>,
    /// Its Monte-Carlo p-value.
    #[serde(default)]
    pub ks_p_value: Option<f64>,
    /// The Gibbs test's verdict ([`gibbs_verdict`]): whether both the total variation and the
    /// KS distance lie within their critical values (in records written before the KS test:
    /// the total variation within twice its baseline, [`legacy_gibbs_consistent`]). None
    /// where there is no fit.
    #[serde(default)]
    pub gibbs_consistent: Option<bool>,
    /// On the sphere, where the loss (so the fitted Gibbs law) is symmetric about the z axis:
    /// the harmonic test of the chains' longitudes, folded as the rest (MATH.md §5.6). It is
    /// reported beside the Gibbs verdict, not part of it. None elsewhere and in older records.
    #[serde(default)]
    pub longitude: Option<super::LongitudeHarmonics>,
    /// On the sphere: the line that says the ensemble was folded by the loss's symmetry
    /// x → −x before S, the histogram and the Gibbs test, with the chains' split between the
    /// hemispheres. None where nothing was folded.
    #[serde(default)]
    pub fold_note: Option<String>,
    /// The k-NN entropy's mean over four disjoint quarters of the chains, to compare with
    /// `s_knn` on all of them (MATH.md §5.6).
    #[serde(default)]
    pub s_knn_quarter: Option<f64>,
    /// The standard error of `s_knn_quarter`, from the spread of the four.
    #[serde(default)]
    pub s_knn_quarter_se: Option<f64>,
    /// The known answer where there is one: SGD on an isotropic quadratic with additive
    /// isotropic noise, T = ησ²/(2 − ηλ) (MATH.md §5.3).
    pub t_theory: Option<f64>,
    /// Var θ per coordinate the known answer gives (T/λ).
    pub var_theory: Option<f64>,
    /// The entropy the known answer gives, log(2πe T/λ) in the plane.
    pub s_theory: Option<f64>,
    /// Gradient signal |∇L| over the ensemble (root mean square).
    pub signal: Option<f64>,
    /// Gradient noise (root mean square of the per-step gradient's deviation).
    pub noise: Option<f64>,
    /// signal / noise.
    pub snr: Option<f64>,
    /// Whether U stopped moving over the last half of the run.
    pub stationary: bool,
    /// Why the point is left out of slopes and fits, if it is.
    pub excluded: Option<String>,
    /// (step, U) at each block end.
    #[serde(deserialize_with = "trace_nulls_as_nan")]
    pub u_trace: Vec<(u32, f64)>,
    /// (step, S) at each block end (the sphere; the plane records it at the end only).
    #[serde(deserialize_with = "trace_nulls_as_nan")]
    pub s_trace: Vec<(u32, f64)>,
    /// (step, SNR) at each block end (the sphere).
    #[serde(deserialize_with = "trace_nulls_as_nan")]
    pub snr_trace: Vec<(u32, f64)>,
    /// The final ensemble's histogram.
    pub histogram: Option<Histogram>,
    /// A few hundred final directions (the sphere), for pictures.
    pub sample: Vec<[f32; 3]>,
    /// Fraction of the chains with |z| > 0.99, i.e. within 8.1° (arccos 0.99) of a pole
    /// ±(0, 0, 1) (the sphere).
    pub pole_fraction: Option<f64>,
    /// S by k-NN for other neighbour ranks k and ensemble sizes N ([`super::knn_variants`],
    /// the plane), so the table can show how T_slope depends on them. Empty in records
    /// written before it was stored.
    #[serde(default)]
    pub s_knn_variants: Vec<super::KnnVariant>,
    /// Networks the ensemble's k-NN entropy used (the first alive ones, at most
    /// [`super::ENSEMBLE_ENTROPY_NETWORKS`]); None outside weight space and in older records.
    #[serde(default)]
    pub knn_networks: Option<u32>,
    /// Why the ensemble's k-NN S is left out of T_slope although the point is not
    /// excluded: in weight space it counts only where [`super::EnsembleEntropyCheck`] says it
    /// means something. Set by the measurement; the view only shows it.
    #[serde(default)]
    pub ensemble_entropy_note: Option<String>,
    /// Networks: the entropy of each network's own window of iterates, averaged over a
    /// subset (MATH.md §5.6). None outside weight space and in older records.
    #[serde(default)]
    pub window: Option<super::WindowEntropy>,
}

impl ThermoPoint {
    /// A point of `problem` run by `sampler` at learning rate `eta`, nothing measured yet
    /// (U and its standard error NaN).
    pub fn unmeasured(problem: String, sampler: String, eta: f64, chains: u32, steps: u32) -> Self {
        Self {
            problem,
            sampler,
            eta,
            chains,
            steps,
            u: f64::NAN,
            u_se: f64::NAN,
            ..Self::default()
        }
    }

    /// A stored record read back. One written before the verdict was stored gets the verdict
    /// of its time from its distance and baseline; its fitted probabilities (a new fit) stay
    /// absent. A network's record written before the ensemble rule (no window) gets the rule's
    /// verdict for weight space: its ensemble S was never checked, so it does not enter T_slope.
    pub fn from_record(record: serde_json::Value) -> serde_json::Result<Self> {
        let mut point: Self = serde_json::from_value(record)?;
        if point.gibbs_consistent.is_none() {
            point.gibbs_consistent =
                legacy_gibbs_consistent(point.gibbs_tv, point.gibbs_tv_baseline);
        }
        if point.problem.starts_with("MLP")
            && point.window.is_none()
            && point.ensemble_entropy_note.is_none()
        {
            point.ensemble_entropy_note = Some(
                "ensemble S not used for T_slope: recorded before the subsample check, and in \
                 weight space the k-th neighbours are other networks (MATH.md §5.6)"
                    .into(),
            );
        }
        Ok(point)
    }

    /// The Gibbs test's verdict as one line for the view: whether the ensemble is consistent
    /// with the fitted law, and which part fails. None where there is no fit.
    pub fn gibbs_verdict_line(&self) -> Option<(bool, String)> {
        let consistent = self.gibbs_consistent?;
        let Some((ks, ks_critical)) = self.ks_distance.zip(self.ks_critical) else {
            return Some((
                consistent,
                if consistent {
                    "consistent by TV alone (a record from before the KS test)".into()
                } else {
                    "not a Gibbs law at any T (TV alone: a record from before the KS test)".into()
                },
            ));
        };
        let tv_fails = self
            .gibbs_tv
            .zip(self.gibbs_tv_critical)
            .is_some_and(|(tv, c)| tv > c);
        let ks_fails = ks > ks_critical;
        // A run still moving has no stationary law to test yet: passing now says nothing
        // (the panel once said "consistent" two lines above "not stationary … run more
        // steps").
        if consistent && !self.stationary {
            return Some((
                false,
                "no verdict yet: TV and KS pass, but U is still moving (not stationary); run \
                 more steps"
                    .to_owned(),
            ));
        }
        let line = match (consistent, tv_fails, ks_fails) {
            (true, ..) => "Gibbs at this T: consistent (TV and KS both pass)".to_owned(),
            (false, true, true) => "not a Gibbs law at any T: TV and KS both reject".to_owned(),
            (false, true, false) => {
                "not a Gibbs law at any T: TV rejects where the chains sit; KS of the loss passes"
                    .to_owned()
            }
            (false, false, true) => {
                "not a Gibbs law at any T: KS rejects the distribution of L".to_owned()
            }
            (false, false, false) => "not a Gibbs law: the chains never moved".to_owned(),
        };
        Some((consistent, line))
    }
}

/// The verdict of records written before the KS test: consistent when the total variation
/// lies within twice what exact draws of the law score on average. None without a distance.
pub fn legacy_gibbs_consistent(tv: Option<f64>, baseline: Option<f64>) -> Option<bool> {
    tv.zip(baseline).map(|(tv, b)| tv <= 2.0 * b)
}

/// The Gibbs test's verdict (MATH.md §5.6): consistent with the fitted law when the total
/// variation of the histograms and the KS distance of the losses both lie within their 5 %
/// critical values over [`super::CALIBRATION_DRAWS`] simulated ensembles of that law.
pub fn gibbs_verdict(tv: f64, calibrated: &Calibrated) -> bool {
    calibrated.tv_critical.is_some_and(|c| tv <= c)
        && calibrated.ks_distance <= calibrated.ks_critical
}

/// Stores the Gibbs test's distances, critical values and verdict in `point`.
fn record_gibbs_test(point: &mut ThermoPoint, tv: f64, baseline: f64, calibrated: &Calibrated) {
    point.gibbs_tv = Some(tv);
    point.gibbs_tv_baseline = Some(baseline);
    point.gibbs_tv_critical = calibrated.tv_critical;
    point.ks_distance = Some(calibrated.ks_distance);
    point.ks_critical = Some(calibrated.ks_critical);
    point.ks_p_value = Some(calibrated.ks_p_value);
    point.gibbs_consistent = Some(gibbs_verdict(tv, calibrated));
}

/// Mean and standard error of independent values.
pub fn mean_and_se(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

/// Stationary when the mean U of the third quarter and of the last quarter of the blocks
/// agree within three standard errors of their difference plus 2 % of the excess loss
/// U − `u_min` (the slow drift a finite run cannot resolve; a share of U itself would exceed
/// the whole excess where the minimum is far from 0); otherwise the reason. Where the
/// minimum is not known, `u_min` is a lower bound of the loss (0 for a network's).
pub fn stationarity(trace: &[(u32, f64)], u_se: f64, u_min: f64) -> (bool, Option<String>) {
    let n = trace.len();
    if n < 4 {
        return (false, Some("too few steps to judge stationarity".into()));
    }
    let q = n / 4;
    let mean = |r: &[(u32, f64)]| r.iter().map(|p| p.1).sum::<f64>() / r.len() as f64;
    let (third, last) = (mean(&trace[n - 2 * q..n - q]), mean(&trace[n - q..]));
    let allowed = 3.0 * std::f64::consts::SQRT_2 * u_se + 0.02 * (last - u_min).abs();
    if (last - third).abs() <= allowed && last.is_finite() {
        (true, None)
    } else {
        (
            false,
            Some(format!(
                "not stationary: U {} from {third:.4e} to {last:.4e} over the last half \
                 (allowed {allowed:.2e}); run more steps",
                if last < third { "fell" } else { "rose" }
            )),
        )
    }
}

/// Whether the stationary ensemble is stationary, and why a point is left out of slopes and
/// fits: collapsed, not stationary, or an entropy that moves with the number of chains.
fn exclusion(
    knn: Option<KnnEstimate>,
    check: Option<SubsampleCheck>,
    (trace, u_se, u_min): (&[(u32, f64)], f64, f64),
    chains: usize,
) -> (bool, Option<String>) {
    // The plane and the sphere are both 2-dimensional.
    if let Some(k) = knn.filter(|k| collapsed(k, 2)) {
        return (
            false,
            Some(format!(
                "collapsed: the chains' law is {:.0e} wide (e^(S/2), below 1e-6; k-th \
                 neighbours {:.0e} apart): S falls without bound, T → 0",
                (k.entropy / 2.0).exp(),
                k.mean_ln_distance.exp()
            )),
        );
    }
    let (stationary, why) = stationarity(trace, u_se, u_min);
    if why.is_some() {
        return (stationary, why);
    }
    (
        stationary,
        check
            .filter(SubsampleCheck::drifts)
            .map(|c| entropy_drift_note(&c, chains)),
    )
}

/// Whether an ensemble counts as collapsed (MATH.md §5.6), from its k-NN estimate in `dim`
/// dimensions: S/d below [`COLLAPSED_LN_WIDTH`]. For a law with a density the verdict does not
/// depend on the number of points (the estimate converges to the law's entropy).
pub fn collapsed(estimate: &KnnEstimate, dim: usize) -> bool {
    estimate.entropy / (dim as f64) < COLLAPSED_LN_WIDTH
}

/// The reason a point whose entropy moves with N is left out (MATH.md §5.6).
pub fn entropy_drift_note(check: &SubsampleCheck, chains: usize) -> String {
    format!(
        "entropy not converged — the stationary law may have no density: S = {:.2} ± {:.2} \
         on quarters of the chains, {:.2} on all {chains}",
        check.quarter, check.quarter_se, check.full
    )
}

/// Whether enough of `chains` are alive to measure: at least half of them, and enough for
/// the k-NN entropy.
pub fn enough_alive(alive: usize, chains: u32) -> bool {
    alive >= 2 * KNN_K + 2 && 2 * alive >= chains as usize
}

/// Why a point with too few alive chains (networks, …: `what`) is left out: most of them
/// diverged, or (with at least half alive) too few were run or survived for the k-NN
/// entropy. One chain run is not "0 of 1 chains diverged".
pub fn diverged_note(alive: usize, chains: u32, what: &str) -> String {
    let diverged = (chains as usize).saturating_sub(alive);
    if 2 * alive < chains as usize {
        format!("{diverged} of {chains} {what} diverged")
    } else if diverged == 0 {
        format!(
            "too few {what}: {chains} run, the k-NN entropy needs at least {}",
            2 * KNN_K + 2
        )
    } else {
        format!(
            "too few {what} alive: {alive} of {chains} ({diverged} diverged), the k-NN entropy \
             needs at least {}",
            2 * KNN_K + 2
        )
    }
}

/// The known answer of MATH.md §5.3: the stationary temperature T = ησ²/(2 − ηλ) of SGD on
/// an isotropic quadratic of curvature λ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KnownAnswer {
    /// The temperature.
    pub t: f64,
    /// The curvature λ.
    pub lambda: f64,
}

/// The known answer for SGD at learning rate `eta` with heavy-ball `momentum` μ (0: plain
/// SGD) on an isotropic Gaussian (ρ = 0, σ₁ = σ₂) with isotropic additive noise and no
/// schedule; None for anything else.
pub fn known_answer(
    sampler: SamplerKind,
    schedule: &ScheduleSpec,
    target: &Target,
    noise: &NoiseSpec,
    eta: f64,
    momentum: f64,
) -> Option<KnownAnswer> {
    if sampler != SamplerKind::Sgd {
        return None;
    }
    let NoiseSpec::Isotropic { sigma } = *noise else {
        return None;
    };
    let Target::Gaussian(g) = target else {
        return None;
    };
    let isotropic = g.precision[1] == 0.0 && (g.precision[0] - g.precision[2]).abs() < 1e-12;
    if !isotropic || *schedule != ScheduleSpec::Constant {
        return None;
    }
    quadratic_temperature_with_momentum(eta, g.precision[0], sigma, momentum).map(|t| KnownAnswer {
        t,
        lambda: g.precision[0],
    })
}

/// The gradient noise's mean square at θ for the preset's synthetic noise (None when the
/// noise is a minibatch's, whose size the formula does not know).
fn noise_mean_square(noise: &NoiseSpec, theta: [f64; 2]) -> Option<f64> {
    match *noise {
        NoiseSpec::None => Some(0.0),
        NoiseSpec::Isotropic { sigma } => Some(2.0 * sigma * sigma),
        NoiseSpec::Anisotropic { sigma1, sigma2 } => Some(sigma1 * sigma1 + sigma2 * sigma2),
        NoiseSpec::StateDependent { sigma, kappa } => {
            let r = (theta[0] * theta[0] + theta[1] * theta[1]).sqrt();
            Some(2.0 * (sigma * (1.0 + kappa * r)).powi(2))
        }
    }
}

/// ∇L by central differences of the target's −log density.
fn gradient(target: &Target, t: [f64; 2]) -> [f64; 2] {
    let e = 1e-5 * (1.0 + t[0].abs().max(t[1].abs()));
    let d = |k: usize| {
        let (mut a, mut b) = (t, t);
        a[k] += e;
        b[k] -= e;
        (target.neg_log_density(a) - target.neg_log_density(b)) / (2.0 * e)
    };
    [d(0), d(1)]
}

/// Counts of points per cell of `grid`, and how many fall outside.
fn count_plane(points: &[[f64; 2]], grid: &Grid2) -> (Vec<u32>, u32) {
    let rule = grid.bin_rule();
    let mut counts = vec![0u32; grid.cells()];
    let mut outside = 0;
    for p in points {
        match rule.bin(p[0] as f32, p[1] as f32) {
            Some(c) => counts[c] += 1,
            None => outside += 1,
        }
    }
    (counts, outside)
}

/// Measures the final ensemble `thetas` (the alive chains) of a 2-D run of `target` with
/// `gradient_noise`: U, Var θ, both entropies, the Gibbs test, the gradient's signal
/// and noise, stationarity (from `point.u_trace`), and `known` where there is a known answer.
/// A run whose chains never left their start (`movement`, [`Movement::never_moved`]) is
/// neither stationary nor a Gibbs law: it is excluded and fails the Gibbs test, whatever its
/// U trace and histogram say.
pub fn plane_point(
    mut point: ThermoPoint,
    thetas: &[[f64; 2]],
    target: &Target,
    gradient_noise: &NoiseSpec,
    known: Option<KnownAnswer>,
    movement: Option<Movement>,
) -> ThermoPoint {
    point.alive = thetas.len() as u32;
    if let Some(KnownAnswer { t, lambda }) = known {
        point.t_theory = Some(t);
        point.var_theory = Some(t / lambda);
        point.s_theory = Some((2.0 * std::f64::consts::PI * std::f64::consts::E * t / lambda).ln());
    }
    if !enough_alive(thetas.len(), point.chains) {
        point.excluded = Some(diverged_note(thetas.len(), point.chains, "chains"));
        return point;
    }
    let loss = |t: [f64; 2]| target.neg_log_density(t);
    let losses: Vec<f64> = thetas.iter().map(|&t| loss(t)).collect();
    (point.u, point.u_se) = mean_and_se(&losses);
    let n = thetas.len() as f64;
    let mean = [0, 1].map(|k| thetas.iter().map(|t| t[k]).sum::<f64>() / n);
    point.var = (0..2)
        .map(|k| thetas.iter().map(|t| (t[k] - mean[k]).powi(2)).sum::<f64>() / (n - 1.0))
        .collect();
    point.s_knn_variants = super::knn_variants(thetas);
    let estimate = knn(thetas, KNN_K);
    point.s_knn = estimate.map(|e| e.entropy);
    let check = estimate.and_then(|e| {
        subsample_check(e.entropy, thetas.len(), &|indices| {
            let part: Vec<[f64; 2]> = indices.iter().map(|&i| thetas[i]).collect();
            knn(&part, KNN_K).map(|e| e.entropy)
        })
    });
    (point.s_knn_quarter, point.s_knn_quarter_se) =
        (check.map(|c| c.quarter), check.map(|c| c.quarter_se));
    // The histogram covers the ensemble (mean ± 5 sd), with about four points per cell in the
    // bulk: finer cells leave most of them empty (the plug-in estimate then drops), coarser
    // ones blur the density.
    let side = ((n.sqrt() / 2.0) as u32).clamp(10, 400);
    let spread = [0, 1].map(|k| 5.0 * point.var[k].sqrt().max(1e-12));
    let covering = Grid2::new(
        [mean[0] - spread[0], mean[0] + spread[0]],
        [mean[1] - spread[1], mean[1] + spread[1]],
        side,
        side,
    );
    if let Some((s, outside)) = histogram_entropy(thetas, &covering) {
        point.s_hist = Some(s);
        point.hist_outside = Some(outside);
    }
    // The Gibbs test: T by maximum likelihood, then the ensemble's histogram on a grid
    // around it against the fitted law's cell masses.
    let start = plane_quadrature_start(target);
    let t = fit_temperature(point.u, &|t| plane_cells(&loss, start, t).1);
    point.t_gibbs = Some(t);
    let (quadrature_grid, cells) = plane_cells(&loss, start, t);
    point.u_min = Some(cells.min_loss());
    let sd = [point.var[0].sqrt(), point.var[1].sqrt()];
    let grid = Grid2::new(
        [mean[0] - 4.0 * sd[0], mean[0] + 4.0 * sd[0]],
        [mean[1] - 4.0 * sd[1], mean[1] + 4.0 * sd[1]],
        HISTOGRAM_CELLS,
        HISTOGRAM_CELLS,
    );
    if sd[0] > 0.0 && sd[1] > 0.0 {
        let (counts, outside) = count_plane(thetas, &grid);
        let probabilities = plane_gibbs_on_grid(&loss, &cells, t, &grid);
        // The outside of the grid is one more cell on both sides.
        let mut c = counts.clone();
        c.push(outside);
        let mut p = probabilities.clone();
        p.push((1.0 - p.iter().sum::<f64>()).max(0.0));
        let (tv, baseline) = total_variation(&c, &p);
        let ranged = plane_cells_with_ranges(&loss, &quadrature_grid);
        let calibrated = calibrate(&ranged, t, &losses, Some(&p));
        record_gibbs_test(&mut point, tv, baseline, &calibrated);
        point.gibbs_probabilities = Some(probabilities);
        point.histogram = Some(Histogram { grid, counts });
    }
    // Signal and noise of the gradient over the ensemble.
    let signal = (thetas
        .iter()
        .map(|&t| {
            let g = gradient(target, t);
            g[0] * g[0] + g[1] * g[1]
        })
        .sum::<f64>()
        / n)
        .sqrt();
    let noise = thetas
        .iter()
        .map(|&t| noise_mean_square(gradient_noise, t))
        .sum::<Option<f64>>()
        .map(|s| (s / n).sqrt())
        .filter(|_| !matches!(target, Target::Logistic(_)));
    point.signal = Some(signal);
    point.noise = noise;
    point.snr = noise.filter(|v| *v > 0.0).map(|v| signal / v);
    (point.stationary, point.excluded) = exclusion(
        estimate,
        check,
        (&point.u_trace, point.u_se, cells.min_loss()),
        thetas.len(),
    );
    if let Some(why) = movement.and_then(|m| m.never_moved()) {
        point.stationary = false;
        point.excluded = Some(why);
        point.gibbs_consistent = point.gibbs_consistent.map(|_| false);
    }
    point
}

/// Root mean square gradient signal and noise (MATH.md §5.4) over directions `xs` of the
/// sphere toy with `objects`.
pub fn sphere_signal_and_noise(objects: &[DVec3], xs: &[DVec3]) -> (f64, f64) {
    let (s, n) = xs.iter().fold((0.0, 0.0), |(s, n), &x| {
        let (a, b) = signal_and_noise(objects, x);
        (s + a * a, n + b * b)
    });
    let k = xs.len() as f64;
    ((s / k).sqrt(), (n / k).sqrt())
}

/// Measures the final directions `xs` of a sphere run with `objects`: U, Var x, both
/// entropies on the sphere and whether the k-NN one converged, the Gibbs test on the
/// equal-area grid, signal and noise, stationarity (from `point.u_trace`), the poles' share
/// and a sample for pictures. The toy's losses are even under x → −x, so the ensemble and the
/// Gibbs law are folded by that symmetry first (MATH.md §5.6): which hemisphere a chain ends
/// in is settled in its first steps and never revisited (the barrier is far above T), while
/// the Gibbs law puts half in each, so unfolded the split would dominate TV and add a mixing
/// entropy set by the start.
pub fn sphere_point(point: ThermoPoint, xs: &[DVec3], objects: &[DVec3]) -> ThermoPoint {
    let loss = |x: DVec3| sphere_loss(objects, x);
    let whole = sphere_quadrature(&loss);
    let folded = sphere_loss_is_even(objects);
    let fine = if folded { whole.folded() } else { whole };
    let points: Vec<[f64; 3]> = xs.iter().map(|x| x.to_array()).collect();
    let losses: Vec<f64> = xs.iter().map(|&x| loss(x)).collect();
    let (u, u_se) = mean_and_se(&losses);
    let n = xs.len() as f64;
    let mean = xs.iter().copied().sum::<DVec3>() / n;
    let var = (0..3)
        .map(|k| xs.iter().map(|x| (x[k] - mean[k]).powi(2)).sum::<f64>() / (n - 1.0))
        .collect();
    // The histogram: the top half of the equal-area grid when folded, else all of it.
    let (nl, nz) = SPHERE_HISTOGRAM;
    let cell: fn(DVec3, u32, u32) -> usize = if folded { hemisphere_cell } else { sphere_cell };
    let (nz, z_range) = if folded {
        (nz / 2, [0.0, 1.0])
    } else {
        (nz, [-1.0, 1.0])
    };
    let mut counts = vec![0u32; (nl * nz) as usize];
    for &x in xs {
        counts[cell(x, nl, nz)] += 1;
    }
    let area = (z_range[1] - z_range[0]) * std::f64::consts::TAU / f64::from(nl * nz);
    let s_hist = plug_in_entropy(&counts, area, n);
    let t = fit_temperature(u, &|_| fine.cells.clone());
    let p = if folded {
        hemisphere_gibbs_on_grid(&fine, t, nl, nz)
    } else {
        sphere_gibbs_on_grid(&fine, t, nl, nz)
    };
    let (tv, baseline) = total_variation(&counts, &p);
    let calibrated = calibrate(&fine.cells, t, &losses, Some(&p));
    let (signal, noise) = sphere_signal_and_noise(objects, xs);
    let estimate = sphere_knn(&points, KNN_K, folded);
    let check = estimate.and_then(|e| {
        subsample_check(e.entropy, points.len(), &|indices| {
            let part: Vec<[f64; 3]> = indices.iter().map(|&i| points[i]).collect();
            sphere_knn(&part, KNN_K, folded).map(|e| e.entropy)
        })
    });
    let u_min = fine.cells.min_loss();
    let (stationary, excluded) =
        exclusion(estimate, check, (&point.u_trace, u_se, u_min), xs.len());
    // Longitudes of the folded directions (x → −x adds π), tested where the law is uniform in
    // them.
    let longitude = sphere_loss_is_axisymmetric(objects)
        .then(|| {
            let phi: Vec<f64> = xs
                .iter()
                .map(|&x| if folded && x.z < 0.0 { -x } else { x })
                .map(|x| x.y.atan2(x.x))
                .collect();
            super::longitude_harmonics(&phi)
        })
        .flatten();
    let every = (xs.len() / SPHERE_SAMPLE).max(1);
    let upper = xs.iter().filter(|x| x.z > 0.0).count() as f64 / n;
    let mut measured = ThermoPoint {
        alive: point.chains,
        u,
        u_min: Some(u_min),
        u_se,
        var,
        s_knn: estimate.map(|e| e.entropy),
        s_knn_quarter: check.map(|c| c.quarter),
        s_knn_quarter_se: check.map(|c| c.quarter_se),
        s_hist: Some(s_hist),
        hist_outside: Some(0.0),
        t_gibbs: Some(t),
        gibbs_probabilities: Some(p),
        fold_note: folded.then(|| fold_note(upper)),
        longitude,
        signal: Some(signal),
        noise: Some(noise),
        snr: (noise > 0.0).then(|| signal / noise),
        stationary,
        excluded,
        histogram: Some(Histogram {
            grid: Grid2::new([0.0, std::f64::consts::TAU], z_range, nl, nz),
            counts,
        }),
        sample: xs
            .iter()
            .step_by(every)
            .take(SPHERE_SAMPLE)
            .map(|x| x.as_vec3().to_array())
            .collect(),
        pole_fraction: Some(xs.iter().filter(|x| x.z.abs() > 0.99).count() as f64 / n),
        ..point
    };
    record_gibbs_test(&mut measured, tv, baseline, &calibrated);
    measured
}

/// Whether the sphere toy's loss with `objects` is even under x → −x, checked at 1,000
/// directions spread over the sphere (a Fibonacci lattice). Losses (a·x)² always are; the
/// check keeps the fold honest should another loss be added.
pub fn sphere_loss_is_even(objects: &[DVec3]) -> bool {
    let n = 1000;
    (0..n).all(|i| {
        let z = 1.0 - (2.0 * f64::from(i) + 1.0) / f64::from(n);
        let lon = f64::from(i) * std::f64::consts::PI * (3.0 - 5f64.sqrt());
        let r = (1.0 - z * z).sqrt();
        let x = DVec3::new(r * lon.cos(), r * lon.sin(), z);
        let (a, b) = (sphere_loss(objects, x), sphere_loss(objects, -x));
        (a - b).abs() <= 1e-12 * (1.0 + a.abs())
    })
}

/// Whether the sphere toy's loss with `objects` is symmetric about the z axis, so that its
/// Gibbs law is uniform in longitude (MATH.md §5.6): unchanged by three rotations about z at
/// the 1,000 directions of [`sphere_loss_is_even`]. True for `sphere-up` (M = meanᵢ aᵢaᵢᵀ is
/// diagonal with equal x and y entries), false for `sphere-op`.
pub fn sphere_loss_is_axisymmetric(objects: &[DVec3]) -> bool {
    let n = 1000;
    (0..n).all(|i| {
        let z = 1.0 - (2.0 * f64::from(i) + 1.0) / f64::from(n);
        let lon = f64::from(i) * std::f64::consts::PI * (3.0 - 5f64.sqrt());
        let r = (1.0 - z * z).sqrt();
        let at = |lon: f64| sphere_loss(objects, DVec3::new(r * lon.cos(), r * lon.sin(), z));
        let a = at(lon);
        [0.7, 2.1, 4.0]
            .iter()
            .all(|turn| (at(lon + turn) - a).abs() <= 1e-12 * (1.0 + a.abs()))
    })
}

/// The k-NN entropy of directions `xs` of the sphere toy with `objects`, folded by x → −x
/// where the loss is even, as [`sphere_point`] measures it (for its trace over a run).
pub fn sphere_entropy(objects: &[DVec3], xs: &[DVec3]) -> Option<f64> {
    let points: Vec<[f64; 3]> = xs.iter().map(|x| x.to_array()).collect();
    sphere_knn(&points, KNN_K, sphere_loss_is_even(objects)).map(|e| e.entropy)
}

/// The line that says a sphere ensemble was folded, with the share `upper` of its chains
/// that ended in z > 0.
pub fn fold_note(upper: f64) -> String {
    format!(
        "folded by x → −x (the loss is even): {:.0} % of the chains ended in z > 0; S, the \
         histogram, TV and KS are of the folded law on z ≥ 0",
        100.0 * upper
    )
}

/// What a network point's entropies came to (MATH.md §5.6): the ensemble's subsample check
/// over the networks its k-NN estimate used, and the windowed entropy.
#[derive(Clone, Debug, Default)]
pub struct NetworkEntropies {
    /// Networks the ensemble's k-NN estimate used.
    pub knn_networks: u32,
    /// The ensemble's subsample check (None with too few networks).
    pub check: Option<super::EnsembleEntropyCheck>,
    /// The windowed entropy.
    pub window: Option<super::WindowEntropy>,
}

/// Measures networks' final weights (`params` per network, network-major), their
/// per-example `losses` and the gradient's `signal` and `noise` (MATH.md §5.6): U, Var θ
/// averaged over the weights, the SNR, and stationarity (from `point.u_trace`); S is the last
/// of `point.s_trace`, the windowed S and the ensemble rule's verdict come with `entropies`.
/// No Gibbs fit, histogram or known answer in weight space.
pub fn network_point(
    point: ThermoPoint,
    weights: &[f32],
    params: usize,
    losses: &[f64],
    (signal, noise): (f64, f64),
    entropies: NetworkEntropies,
) -> ThermoPoint {
    let alive = weights.len() / params;
    let (u, u_se) = mean_and_se(losses);
    // Var θ averaged over the weights: one number for the spread of the ensemble.
    let nets = weights.chunks_exact(params);
    let mean: Vec<f64> = (0..params)
        .map(|j| nets.clone().map(|w| f64::from(w[j])).sum::<f64>() / alive as f64)
        .collect();
    let mean_var = (0..params)
        .map(|j| {
            nets.clone()
                .map(|w| (f64::from(w[j]) - mean[j]).powi(2))
                .sum::<f64>()
                / (alive as f64 - 1.0).max(1.0)
        })
        .sum::<f64>()
        / params as f64;
    // The summed loss (cross-entropies and the weights' Gaussian prior) is never below 0.
    let (stationary, excluded) = stationarity(&point.u_trace, u_se, 0.0);
    let ensemble_entropy_note = match &entropies.check {
        Some(check) => check.note(),
        None => Some(format!(
            "ensemble S not used for T_slope: {} networks are too few for its subsample check",
            entropies.knn_networks
        )),
    };
    ThermoPoint {
        alive: alive as u32,
        knn_networks: Some(entropies.knn_networks),
        ensemble_entropy_note,
        window: entropies.window,
        u,
        u_se,
        var: vec![mean_var],
        s_knn: point.s_trace.last().map(|p| p.1),
        signal: Some(signal),
        noise: Some(noise),
        snr: (noise > 0.0).then(|| signal / noise),
        stationary,
        excluded,
        ..point
    }
}

/// The measured points of a sweep, ready for slopes: excluded points, and points whose
/// ensemble S does not count ([`ThermoPoint::ensemble_entropy_note`]), are kept but marked.
pub fn measured(points: &[ThermoPoint]) -> Vec<Measured> {
    points
        .iter()
        .map(|p| Measured {
            eta: p.eta,
            u: p.u,
            s: p.s_knn.unwrap_or(f64::NAN),
            u_min: p.u_min.unwrap_or(f64::NAN),
            included: p.excluded.is_none()
                && p.ensemble_entropy_note.is_none()
                && p.s_knn.is_some_and(f64::is_finite),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MATH.md §5.6: the collapse rule judges a law, not a sample size. The same 2-D Gaussian
    /// (standard deviation s, centred away from 0) drawn 256 and 4,096 times gets the same
    /// verdict: not collapsed at ln s = −12 (the old threshold on the mean ln εᵢ, which moves
    /// by −ψ(N)/d, called it collapsed at 4,096 only), not collapsed 0.3 nats per dimension
    /// above the threshold on S/d, collapsed 0.3 below it and far below it.
    #[test]
    fn the_collapse_verdict_of_a_law_does_not_depend_on_the_number_of_chains() {
        let target = crate::math::TargetSpec::Gaussian {
            mean: [0.0; 2],
            sigma1: 1.0,
            sigma2: 1.0,
            rho: 0.0,
        }
        .build()
        .unwrap();
        // S/2 of N(0, s² I) is ln s + ½ ln(2πe).
        let half_ln_2pie = 0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E).ln();
        let at_threshold = COLLAPSED_LN_WIDTH - half_ln_2pie;
        for (ln_s, expected) in [
            (-12.0, false),
            (at_threshold + 0.3, false),
            (at_threshold - 0.3, true),
            (-25.0, true),
        ] {
            let verdicts: Vec<bool> = [256, 4096]
                .into_iter()
                .map(|n| {
                    let draws = target.exact_samples(n, 3);
                    let thetas: Vec<[f64; 2]> = draws
                        .chunks_exact(2)
                        .map(|c| [0.3 + ln_s.exp() * c[0], -0.2 + ln_s.exp() * c[1]])
                        .collect();
                    let estimate = knn(&thetas, KNN_K).unwrap();
                    eprintln!(
                        "ln s {ln_s:.2}, N {n}: mean ln ε {:.2}, S/2 {:.2}",
                        estimate.mean_ln_distance,
                        estimate.entropy / 2.0
                    );
                    collapsed(&estimate, 2)
                })
                .collect();
            assert_eq!(verdicts, [expected; 2], "ln s = {ln_s}");
        }
    }

    /// A left-out point has no U: it is written as null and read back, so the sweep's table
    /// still loads (it failed with "invalid type: null, expected f64").
    #[test]
    fn a_point_without_u_survives_its_results_file() {
        let point = ThermoPoint {
            u: f64::NAN,
            u_se: f64::NAN,
            u_trace: vec![(10, f64::INFINITY), (20, 1.5)],
            excluded: Some("64 of 64 networks diverged".into()),
            ..ThermoPoint::default()
        };
        let text = serde_json::to_string(&point).unwrap();
        let back: ThermoPoint = serde_json::from_str(&text).unwrap();
        assert!(back.u.is_nan() && back.u_se.is_nan());
        assert!(back.u_trace[0].1.is_nan() && back.u_trace[1].1 == 1.5);
        assert_eq!(back.excluded, point.excluded);
    }

    /// Exact draws (16,000) of the quadratic's Gibbs law at T = 1 pass the Gibbs test, and the record
    /// carries what the view draws: the fitted law on the histogram's grid and the verdict.
    #[test]
    fn exact_draws_of_a_gibbs_law_are_judged_consistent_and_the_law_is_stored() {
        let target = crate::math::TargetSpec::Gaussian {
            mean: [0.0; 2],
            sigma1: 1.0,
            sigma2: 1.0,
            rho: 0.0,
        }
        .build()
        .unwrap();
        let noise = NoiseSpec::Isotropic { sigma: 1.0 };
        // SGD at η = 1 on λ = 1 with σ = 1: T = ησ²/(2 − ηλ) = 1, the law of the draws.
        let known = known_answer(
            SamplerKind::Sgd,
            &ScheduleSpec::Constant,
            &target,
            &noise,
            1.0,
            0.0,
        );
        assert_eq!(
            known,
            Some(KnownAnswer {
                t: 1.0,
                lambda: 1.0
            })
        );
        let n = 16_000;
        let draws = target.exact_samples(n, 7);
        let thetas: Vec<[f64; 2]> = draws.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
        let point = ThermoPoint {
            u_trace: (1..=16).map(|b| (b * 10, 1.0)).collect(),
            ..ThermoPoint::unmeasured("gaussian".into(), "sgd".into(), 1.0, n as u32, 160)
        };
        let point = plane_point(point, &thetas, &target, &noise, known, None);
        assert_eq!(point.alive, n as u32);
        let t = point.t_gibbs.unwrap();
        assert!((t - 1.0).abs() < 0.03, "T_gibbs {t}");
        assert!((point.var[0] - 1.0).abs() < 0.05, "{:?}", point.var);
        assert_eq!(
            point.gibbs_consistent,
            Some(true),
            "TV {:?} / {:?}, KS {:?} / {:?}",
            point.gibbs_tv,
            point.gibbs_tv_critical,
            point.ks_distance,
            point.ks_critical
        );
        let (tv, baseline) = (point.gibbs_tv.unwrap(), point.gibbs_tv_baseline.unwrap());
        assert!(tv <= 2.0 * baseline, "TV {tv} vs {baseline}");
        // Both calibrated parts pass; the TV's 95th percentile lies a little above its mean.
        let tv_critical = point.gibbs_tv_critical.unwrap();
        assert!(tv <= tv_critical && tv_critical > baseline && tv_critical < 1.3 * baseline);
        assert!(point.ks_distance.unwrap() <= point.ks_critical.unwrap());
        assert!((point.s_knn_quarter.unwrap() - point.s_knn.unwrap()).abs() < 0.1);
        let cells = point.histogram.as_ref().unwrap().counts.len();
        let p = point.gibbs_probabilities.as_ref().unwrap();
        assert_eq!(p.len(), cells);
        // ± 4 standard deviations hold all but about 1e-4 of the law.
        let inside: f64 = p.iter().sum();
        assert!(inside > 0.999 && inside <= 1.0 + 1e-9, "{inside}");
        assert!((point.s_theory.unwrap() - point.s_knn.unwrap()).abs() < 0.05);
        assert!(point.stationary, "{:?}", point.excluded);
    }

    /// A sphere ensemble of `xs` measured as a stationary run (a flat U trace).
    fn sphere_draws_point(objects: &[DVec3], xs: &[DVec3]) -> ThermoPoint {
        let u = xs.iter().map(|&x| sphere_loss(objects, x)).sum::<f64>() / xs.len() as f64;
        let point = ThermoPoint {
            u_trace: (1..=16).map(|b| (b * 10, u)).collect(),
            ..ThermoPoint::unmeasured(
                "sphere UP".into(),
                "exact".into(),
                0.0,
                xs.len() as u32,
                160,
            )
        };
        sphere_point(point, xs, objects)
    }

    /// The temperature `sphere-up` reaches near η = 0.2 (T_gibbs = 0.0085 there with 4,000
    /// chains), where the top band of the equal-area grid holds 99.5 % of the law.
    const SPHERE_UP_T: f64 = 0.0087;

    /// Exact draws of the sphere's Gibbs law at N = 16,000 pass both parts of the Gibbs
    /// test, folded, and their k-NN entropy is the folded law's (ln 2 below the whole
    /// sphere's) and converged.
    #[test]
    fn exact_draws_on_the_sphere_pass_the_folded_gibbs_test_at_sixteen_thousand() {
        use crate::math::sphere::{SphereProblem, gibbs_samples};
        let objects = SphereProblem::Underparameterised.objects();
        let xs = gibbs_samples(&objects, SPHERE_UP_T, 16_000, 11);
        let point = sphere_draws_point(&objects, &xs);
        let t = point.t_gibbs.unwrap();
        assert!((t / SPHERE_UP_T - 1.0).abs() < 0.03, "T_gibbs {t}");
        assert!(point.fold_note.is_some());
        let (ks, ks_critical) = (point.ks_distance.unwrap(), point.ks_critical.unwrap());
        let (tv, tv_critical) = (point.gibbs_tv.unwrap(), point.gibbs_tv_critical.unwrap());
        eprintln!("exact: KS {ks:.4} / {ks_critical:.4}, TV {tv:.4} / {tv_critical:.4}");
        assert!(ks <= ks_critical && tv <= tv_critical);
        assert_eq!(point.gibbs_consistent, Some(true));
        // The Gibbs law is uniform in longitude, and so are its draws.
        let longitude = point.longitude.as_ref().unwrap();
        assert!(longitude.uniform(), "{longitude:?}");
        // The textbook Kolmogorov value 1.36/√N is looser than the calibrated one.
        assert!(ks_critical < 1.36 / (16_000f64).sqrt());
        let whole = sphere_quadrature(&|x| sphere_loss(&objects, x));
        let folded_entropy = whole.folded().cells.entropy(t);
        assert!((whole.cells.entropy(t) - folded_entropy - 2f64.ln()).abs() < 1e-9);
        let s = point.s_knn.unwrap();
        assert!(
            (s - folded_entropy).abs() < 0.05,
            "S_knn {s} vs {folded_entropy}"
        );
        assert_eq!(point.excluded, None);
        // The histogram covers the upper hemisphere only, with every chain in it.
        let hist = point.histogram.as_ref().unwrap();
        assert_eq!((hist.grid.y, hist.grid.ny), ([0.0, 1.0], 18));
        assert_eq!(hist.counts.iter().sum::<u32>(), 16_000);
    }

    /// A 50/50 mixture of the Gibbs laws at T/3 and 5T/3 has the mean loss of T, so the same
    /// fitted T; on the equal-area grid nearly all of both sits in the top band, so the total
    /// variation stays within twice its baseline (the verdict before the KS test: consistent;
    /// against its calibrated 95th percentile it is borderline, 0.065 against 0.065), while
    /// the KS distance of the losses is eight times its critical value.
    #[test]
    fn a_mixture_of_two_temperatures_passes_tv_but_fails_ks_on_the_sphere() {
        use crate::math::sphere::{SphereProblem, gibbs_samples};
        let objects = SphereProblem::Underparameterised.objects();
        let n = 4000;
        let mut xs = gibbs_samples(&objects, SPHERE_UP_T / 3.0, n / 2, 12);
        xs.extend(gibbs_samples(&objects, 5.0 * SPHERE_UP_T / 3.0, n / 2, 13));
        let point = sphere_draws_point(&objects, &xs);
        let t = point.t_gibbs.unwrap();
        assert!((t / SPHERE_UP_T - 1.0).abs() < 0.05, "T_gibbs {t}");
        let (tv, baseline) = (point.gibbs_tv.unwrap(), point.gibbs_tv_baseline.unwrap());
        let (ks, ks_critical) = (point.ks_distance.unwrap(), point.ks_critical.unwrap());
        eprintln!(
            "mixture: TV/baseline {:.2}, TV critical {:.4}, KS {ks:.4} / {ks_critical:.4} (p {})",
            tv / baseline,
            point.gibbs_tv_critical.unwrap(),
            point.ks_p_value.unwrap()
        );
        assert_eq!(
            legacy_gibbs_consistent(Some(tv), Some(baseline)),
            Some(true)
        );
        assert!(ks > ks_critical, "KS {ks} vs {ks_critical}");
        assert_eq!(point.gibbs_consistent, Some(false));
        let line = point.gibbs_verdict_line().unwrap().1;
        assert!(line.contains("KS"), "{line}");
    }

    /// Exact Gibbs draws pass both tests and read "consistent"; the same point from a run
    /// whose U is still moving gets no verdict (issue #44 item 7: free-energy 3 said
    /// "consistent" beside "not stationary … run more steps").
    #[test]
    fn a_run_not_yet_stationary_gets_no_gibbs_verdict() {
        use crate::math::sphere::{SphereProblem, gibbs_samples};
        let objects = SphereProblem::Underparameterised.objects();
        let xs = gibbs_samples(&objects, SPHERE_UP_T, 4000, 12);
        let mut point = sphere_draws_point(&objects, &xs);
        point.stationary = true;
        assert_eq!(point.gibbs_consistent, Some(true));
        let (good, line) = point.gibbs_verdict_line().unwrap();
        assert!(good && line.contains("consistent"), "{line}");
        point.stationary = false;
        let (good, line) = point.gibbs_verdict_line().unwrap();
        assert!(!good, "{line}");
        assert!(
            !line.contains("consistent") && line.contains("not stationary"),
            "{line}"
        );
    }

    /// MATH.md §5.6: a 3-fold pattern in longitude, exact Gibbs draws of `sphere-up` thinned
    /// to a density ∝ e^{−L/T}(1 + 0.1 cos 3φ) in the folded longitude φ, keeps the losses'
    /// law (L depends on z alone), so KS passes; the harmonic test finds the pattern at k = 3.
    /// `sphere-op`'s loss is not symmetric about z: no harmonic test there.
    #[test]
    fn the_harmonic_test_sees_a_longitude_pattern_that_the_losses_cannot_show() {
        use crate::math::sphere::{SphereProblem, gibbs_samples};
        let objects = SphereProblem::Underparameterised.objects();
        assert!(sphere_loss_is_axisymmetric(&objects));
        assert!(!sphere_loss_is_axisymmetric(
            &SphereProblem::Overparameterised.objects()
        ));
        use rand::RngExt;
        let mut rng = crate::math::rng::SequentialRng::new(22, 0);
        // Thinning by the folded longitude (x → −x adds π, which flips cos 3φ): keep a draw
        // with probability (1 + 0.1 cos 3φ)/1.1.
        let xs: Vec<DVec3> = gibbs_samples(&objects, SPHERE_UP_T, 16_000, 21)
            .into_iter()
            .filter(|&x| {
                let f = if x.z < 0.0 { -x } else { x };
                1.1 * rng.random::<f64>() < 1.0 + 0.1 * (3.0 * f.y.atan2(f.x)).cos()
            })
            .collect();
        let point = sphere_draws_point(&objects, &xs);
        let longitude = point.longitude.clone().unwrap();
        eprintln!(
            "{} draws: KS {:.4} / {:.4}, TV {:.4} / {:.4}, {}",
            xs.len(),
            point.ks_distance.unwrap(),
            point.ks_critical.unwrap(),
            point.gibbs_tv.unwrap(),
            point.gibbs_tv_critical.unwrap(),
            longitude.line()
        );
        assert!(point.ks_distance.unwrap() <= point.ks_critical.unwrap());
        assert!(!longitude.uniform());
        assert_eq!(longitude.strongest, 3);
        assert!(longitude.p_value < 1e-6, "{longitude:?}");
    }

    /// A record written before the law and the verdict were stored still opens: the verdict
    /// comes from its distance and baseline, the law stays absent (the view says so).
    #[test]
    fn an_older_record_opens_with_its_verdict_and_without_the_fitted_law() {
        let mut record = serde_json::to_value(ThermoPoint {
            gibbs_tv: Some(0.05),
            gibbs_tv_baseline: Some(0.02),
            gibbs_probabilities: Some(vec![0.5, 0.5]),
            gibbs_consistent: Some(false),
            ..ThermoPoint::unmeasured("banana".into(), "sgd".into(), 0.1, 100, 10)
        })
        .unwrap();
        let fields = record.as_object_mut().unwrap();
        fields.remove("gibbs_probabilities");
        fields.remove("gibbs_consistent");
        fields.remove("s_knn_variants");
        let old = ThermoPoint::from_record(record.clone()).unwrap();
        assert_eq!(old.gibbs_probabilities, None);
        assert_eq!(old.gibbs_consistent, Some(false));
        record["gibbs_tv"] = serde_json::json!(0.03);
        let close = ThermoPoint::from_record(record).unwrap();
        assert_eq!(close.gibbs_consistent, Some(true));
        assert_eq!(legacy_gibbs_consistent(None, Some(0.1)), None);
    }
}
