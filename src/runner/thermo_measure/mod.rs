//! One learning rate of a thermodynamics sweep (MATH.md §5): run the chains to the end in
//! blocks, judge whether the ensemble became stationary, and measure U, S (k-NN and
//! histogram), the Gibbs-fitted T with its distance to the ensemble, Var θ and the gradient
//! signal-to-noise ratio. The sweep over η, the slope temperature and the held-out prediction
//! are [`crate::sweep`]'s and [`crate::diagnostics::thermodynamics`]'s business.

mod mlp;

pub use mlp::{SNR_NETWORKS, parameterisation};

use crate::diagnostics::entropy::{histogram_entropy, knn_entropy, sphere_knn_entropy};
use crate::diagnostics::thermodynamics::{
    self, fit_temperature, plane_cells, plane_gibbs_on_grid, quadratic_temperature, sphere_cell,
    sphere_gibbs_on_grid, sphere_quadrature, total_variation,
};
use crate::engine::sphere::create_sphere_engine;
use crate::engine::{BackendChoice, create_engine};
use crate::math::sphere::{loss as sphere_loss, signal_and_noise};
use crate::math::{Grid2, NoiseSpec, SamplerKind, Target, TargetSpec};
use crate::preset::sphere::SpherePreset;
use crate::preset::{AnyPreset, Preset};
use glam::DVec3;
use serde::{Deserialize, Serialize};

/// Blocks a run is cut into: U is recorded at the end of each.
pub const BLOCKS: u32 = 16;

/// Neighbour rank of the k-NN entropy (MATH.md §5.2).
pub const KNN_K: usize = 5;

/// Cells per side of the stored ensemble histogram of a 2-D run.
pub const HISTOGRAM_CELLS: u32 = 40;

/// Longitude × height cells of the stored ensemble histogram on the sphere.
pub const SPHERE_HISTOGRAM: (u32, u32) = (72, 36);

/// Directions stored per sphere point, for pictures.
pub const SPHERE_SAMPLE: usize = 600;

/// Entropy below which an ensemble counts as collapsed: the k-th neighbours closer than
/// about 1e-6 (ln of the area π·10⁻¹² of such a disc). S then falls without bound and T → 0.
pub const COLLAPSED_S: f64 = -27.6;

/// Why a point is left out of slopes and fits: collapsed, or not stationary.
fn exclusion(s_knn: Option<f64>, trace: &[(u32, f64)], u_se: f64) -> (bool, Option<String>) {
    if s_knn.is_some_and(|s| s < COLLAPSED_S) {
        return (
            false,
            Some(
                "collapsed: the chains sit within 1e-6 of one another (S falls without bound, \
                 T → 0)"
                    .into(),
            ),
        );
    }
    stationarity(trace, u_se)
}

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
    /// Fraction of the chains with |z| > 0.99, within 8° of a pole ±(0, 0, 1) (the sphere).
    pub pole_fraction: Option<f64>,
}

/// Measures one preset: a 2-D preset through its engine, a sphere preset through the sphere
/// engine, an MLP preset through the MLP engine. Comparisons have no thermodynamics.
pub fn measure(
    preset: &AnyPreset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<ThermoPoint> {
    match preset {
        AnyPreset::Toy(p) => measure_plane(p, backend, progress),
        AnyPreset::Sphere(p) => measure_sphere(p, backend, progress),
        AnyPreset::Mlp(p) => mlp::measure_mlp(p, backend, progress),
        AnyPreset::Comparison(_) => {
            anyhow::bail!("the thermodynamics measure takes a 2-D, sphere or MLP preset")
        }
    }
}

/// Block end steps of a run of `steps` in [`BLOCKS`] blocks (fewer for short runs).
fn block_ends(steps: u32) -> Vec<u32> {
    let blocks = BLOCKS.min(steps.max(1));
    let mut ends: Vec<u32> = (1..=blocks).map(|b| b * steps / blocks).collect();
    ends.dedup();
    ends
}

/// Stationary when the mean U of the third quarter and of the last quarter of the blocks
/// agree within three standard errors of their difference plus 2 % (the slow drift a finite
/// run cannot resolve); otherwise the reason.
fn stationarity(trace: &[(u32, f64)], u_se: f64) -> (bool, Option<String>) {
    let n = trace.len();
    if n < 4 {
        return (false, Some("too few steps to judge stationarity".into()));
    }
    let q = n / 4;
    let mean = |r: &[(u32, f64)]| r.iter().map(|p| p.1).sum::<f64>() / r.len() as f64;
    let (third, last) = (mean(&trace[n - 2 * q..n - q]), mean(&trace[n - q..]));
    let allowed = 3.0 * std::f64::consts::SQRT_2 * u_se + 0.02 * last.abs();
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

fn mean_and_se(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
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

fn measure_plane(
    preset: &Preset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<ThermoPoint> {
    let model = preset.model();
    let target = model.target.clone();
    let (mut engine, _) = create_engine(backend, model, preset.chains, &preset.init, preset.seed)?;
    let loss = |t: [f64; 2]| target.neg_log_density(t);
    let alive_thetas = |engine: &mut dyn crate::engine::Engine| -> anyhow::Result<Vec<[f64; 2]>> {
        let states = engine.read_chains(0, preset.chains)?;
        Ok(states
            .chains
            .iter()
            .zip(&states.diverged_at)
            .filter(|(_, d)| **d == 0)
            .map(|(c, _)| [f64::from(c.theta[0]), f64::from(c.theta[1])])
            .collect())
    };
    let mut u_trace = Vec::new();
    let mut done = 0;
    for end in block_ends(preset.steps) {
        engine.advance(end - done, &[])?;
        done = end;
        progress(done);
        let thetas = alive_thetas(engine.as_mut())?;
        if !thetas.is_empty() {
            let losses: Vec<f64> = thetas.iter().map(|&t| loss(t)).collect();
            u_trace.push((done, mean_and_se(&losses).0));
        }
    }
    let thetas = alive_thetas(engine.as_mut())?;
    let known = theory(preset);
    let mut point = ThermoPoint {
        problem: preset.target.name().to_owned(),
        sampler: preset.sampler.kind.name().to_owned(),
        eta: preset.sampler.h,
        chains: preset.chains,
        steps: preset.steps,
        alive: thetas.len() as u32,
        u: f64::NAN,
        u_min: None,
        u_se: f64::NAN,
        var: Vec::new(),
        s_knn: None,
        s_hist: None,
        hist_outside: None,
        t_gibbs: None,
        gibbs_tv: None,
        gibbs_tv_baseline: None,
        t_theory: known.map(|(t, _)| t),
        var_theory: known.map(|(t, lambda)| t / lambda),
        s_theory: known.map(|(t, lambda)| {
            (2.0 * std::f64::consts::PI * std::f64::consts::E * t / lambda).ln()
        }),
        signal: None,
        noise: None,
        snr: None,
        stationary: false,
        excluded: None,
        u_trace,
        s_trace: Vec::new(),
        snr_trace: Vec::new(),
        histogram: None,
        sample: Vec::new(),
        pole_fraction: None,
    };
    if thetas.len() < 2 * KNN_K + 2 || thetas.len() * 2 < preset.chains as usize {
        point.excluded = Some(format!(
            "{} of {} chains diverged",
            preset.chains as usize - thetas.len(),
            preset.chains
        ));
        return Ok(point);
    }
    let losses: Vec<f64> = thetas.iter().map(|&t| loss(t)).collect();
    (point.u, point.u_se) = mean_and_se(&losses);
    let n = thetas.len() as f64;
    let mean = [0, 1].map(|k| thetas.iter().map(|t| t[k]).sum::<f64>() / n);
    point.var = (0..2)
        .map(|k| thetas.iter().map(|t| (t[k] - mean[k]).powi(2)).sum::<f64>() / (n - 1.0))
        .collect();
    point.s_knn = knn_entropy(&thetas, KNN_K);
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
    if let Some((s, outside)) = histogram_entropy(&thetas, &covering) {
        point.s_hist = Some(s);
        point.hist_outside = Some(outside);
    }
    // The Gibbs test: T by maximum likelihood, then the ensemble's histogram on a grid
    // around it against the fitted law's cell masses.
    let start = target.default_grid().with_resolution(160, 160);
    let t = fit_temperature(point.u, &|t| plane_cells(&loss, start, t).1);
    point.t_gibbs = Some(t);
    let (_, cells) = plane_cells(&loss, start, t);
    point.u_min = Some(cells.min_loss());
    let sd = [point.var[0].sqrt(), point.var[1].sqrt()];
    let grid = Grid2::new(
        [mean[0] - 4.0 * sd[0], mean[0] + 4.0 * sd[0]],
        [mean[1] - 4.0 * sd[1], mean[1] + 4.0 * sd[1]],
        HISTOGRAM_CELLS,
        HISTOGRAM_CELLS,
    );
    if sd[0] > 0.0 && sd[1] > 0.0 {
        let (counts, outside) = count_plane(&thetas, &grid);
        let probabilities = plane_gibbs_on_grid(&loss, &cells, t, &grid);
        let mut c = counts.clone();
        c.push(outside);
        let mut p = probabilities;
        p.push((1.0 - p.iter().sum::<f64>()).max(0.0));
        let (tv, baseline) = total_variation(&c, &p);
        (point.gibbs_tv, point.gibbs_tv_baseline) = (Some(tv), Some(baseline));
        point.histogram = Some(Histogram { grid, counts });
    }
    // Signal and noise of the gradient over the ensemble.
    let signal = (thetas
        .iter()
        .map(|&t| {
            let g = gradient(&target, t);
            g[0] * g[0] + g[1] * g[1]
        })
        .sum::<f64>()
        / n)
        .sqrt();
    let noise = thetas
        .iter()
        .map(|&t| noise_mean_square(&preset.noise, t))
        .sum::<Option<f64>>()
        .map(|s| (s / n).sqrt())
        .filter(|_| !matches!(preset.target, TargetSpec::Logistic { .. }));
    point.signal = Some(signal);
    point.noise = noise;
    point.snr = noise.filter(|v| *v > 0.0).map(|v| signal / v);
    (point.stationary, point.excluded) = exclusion(point.s_knn, &point.u_trace, point.u_se);
    Ok(point)
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

/// (T, λ) with T = ησ²/(2 − ηλ) for SGD on an isotropic Gaussian (ρ = 0, σ₁ = σ₂) with isotropic
/// additive noise and no schedule.
fn theory(preset: &Preset) -> Option<(f64, f64)> {
    if preset.sampler.kind != SamplerKind::Sgd {
        return None;
    }
    let NoiseSpec::Isotropic { sigma } = preset.noise else {
        return None;
    };
    let Target::Gaussian(g) = preset.target.build() else {
        return None;
    };
    let isotropic = g.precision[1] == 0.0 && (g.precision[0] - g.precision[2]).abs() < 1e-12;
    if !isotropic || preset.schedule != crate::math::ScheduleSpec::Constant {
        return None;
    }
    quadratic_temperature(preset.sampler.h, g.precision[0], sigma).map(|t| (t, g.precision[0]))
}

fn measure_sphere(
    preset: &SpherePreset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<ThermoPoint> {
    let (mut engine, _) = create_sphere_engine(
        backend,
        preset.problem,
        preset.sampler,
        preset.chains,
        preset.seed,
    )?;
    let objects = engine.objects().to_vec();
    let loss = |x: DVec3| sphere_loss(&objects, x);
    let snr_of = |xs: &[DVec3]| -> (f64, f64) {
        let (s, n) = xs.iter().fold((0.0, 0.0), |(s, n), &x| {
            let (a, b) = signal_and_noise(&objects, x);
            (s + a * a, n + b * b)
        });
        let k = xs.len() as f64;
        ((s / k).sqrt(), (n / k).sqrt())
    };
    let (mut u_trace, mut s_trace, mut snr_trace) = (Vec::new(), Vec::new(), Vec::new());
    let mut done = 0;
    for end in block_ends(preset.steps) {
        engine.advance(end - done)?;
        done = end;
        progress(done);
        let xs = engine.positions()?;
        let losses: Vec<f64> = xs.iter().map(|&x| loss(x)).collect();
        u_trace.push((done, mean_and_se(&losses).0));
        if let Some(s) =
            sphere_knn_entropy(&xs.iter().map(|x| x.to_array()).collect::<Vec<_>>(), KNN_K)
        {
            s_trace.push((done, s));
        }
        let (signal, noise) = snr_of(&xs);
        if noise > 0.0 {
            snr_trace.push((done, signal / noise));
        }
    }
    let xs = engine.positions()?;
    let points: Vec<[f64; 3]> = xs.iter().map(|x| x.to_array()).collect();
    let losses: Vec<f64> = xs.iter().map(|&x| loss(x)).collect();
    let (u, u_se) = mean_and_se(&losses);
    let n = xs.len() as f64;
    let mean = xs.iter().copied().sum::<DVec3>() / n;
    let var = (0..3)
        .map(|k| xs.iter().map(|x| (x[k] - mean[k]).powi(2)).sum::<f64>() / (n - 1.0))
        .collect();
    let (nl, nz) = SPHERE_HISTOGRAM;
    let mut counts = vec![0u32; (nl * nz) as usize];
    for &x in &xs {
        counts[sphere_cell(x, nl, nz)] += 1;
    }
    let area = 4.0 * std::f64::consts::PI / f64::from(nl * nz);
    let occupied = counts.iter().filter(|&&c| c > 0).count() as f64;
    let s_hist = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * (p / area).ln()
        })
        .sum::<f64>()
        + (occupied - 1.0) / (2.0 * n);
    let fine = sphere_quadrature(&loss);
    let t = fit_temperature(u, &|_| fine.cells.clone());
    let p = sphere_gibbs_on_grid(&fine, t, nl, nz);
    let (tv, baseline) = total_variation(&counts, &p);
    let (signal, noise) = snr_of(&xs);
    let s_knn = sphere_knn_entropy(&points, KNN_K);
    let (stationary, excluded) = exclusion(s_knn, &u_trace, u_se);
    let every = (xs.len() / SPHERE_SAMPLE).max(1);
    Ok(ThermoPoint {
        problem: format!("sphere {}", preset.problem.short()),
        sampler: if preset.sampler.momentum > 0.0 {
            "sgd+momentum".into()
        } else {
            "sgd".into()
        },
        eta: preset.sampler.h,
        chains: preset.chains,
        steps: preset.steps,
        alive: preset.chains,
        u,
        u_min: Some(fine.cells.min_loss()),
        u_se,
        var,
        s_knn,
        s_hist: Some(s_hist),
        hist_outside: Some(0.0),
        t_gibbs: Some(t),
        gibbs_tv: Some(tv),
        gibbs_tv_baseline: Some(baseline),
        t_theory: None,
        var_theory: None,
        s_theory: None,
        signal: Some(signal),
        noise: Some(noise),
        snr: (noise > 0.0).then(|| signal / noise),
        stationary,
        excluded,
        u_trace,
        s_trace,
        snr_trace,
        histogram: Some(Histogram {
            grid: Grid2::new([0.0, std::f64::consts::TAU], [-1.0, 1.0], nl, nz),
            counts,
        }),
        sample: xs
            .iter()
            .step_by(every)
            .take(SPHERE_SAMPLE)
            .map(|x| x.as_vec3().to_array())
            .collect(),
        pole_fraction: Some(xs.iter().filter(|x| x.z.abs() > 0.99).count() as f64 / n),
    })
}

/// The measured points of a sweep, ready for slopes: excluded points are kept but marked.
pub fn measured(points: &[ThermoPoint]) -> Vec<thermodynamics::Measured> {
    points
        .iter()
        .map(|p| thermodynamics::Measured {
            eta: p.eta,
            u: p.u,
            s: p.s_knn.unwrap_or(f64::NAN),
            u_min: p.u_min.unwrap_or(f64::NAN),
            included: p.excluded.is_none() && p.s_knn.is_some_and(f64::is_finite),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
