//! The momentum explosion measured: how |p|, |θ| and ξ grow over the ensemble, how fast the
//! tracked chains' log|p| climbs against the rate the printed O-step predicts, and robust
//! extents that let the portraits follow exploding chains.
//!
//! With the friction sign φ, ATMC's O-step multiplies p by e^{−φβh} (β = max(D, ξ)), so at
//! φ = −1 log|p| grows by βh per step where the friction dominates the force (docs/MATH.md
//! §2); the thermostat feeds β through ξ, which grows with p², so the climb steepens.

use crate::engine::ChainStates;
use crate::math::{Chain2, SamplerParams};
use serde::Serialize;

/// Quantiles (median, 90%, 99%) of the ensemble's magnitudes at one step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GrowthRow {
    /// Steps done.
    pub step: u32,
    /// Quantiles of log₁₀|p| (|p| the Euclidean norm over both coordinates).
    pub log_p: [f64; 3],
    /// Quantiles of log₁₀|θ|.
    pub log_theta: [f64; 3],
    /// Quantiles of ξ (both coordinates pooled).
    pub xi: [f64; 3],
}

/// The quantile levels of a [`GrowthRow`].
pub const GROWTH_QUANTILES: [f64; 3] = [0.5, 0.9, 0.99];

/// Quantiles of the alive chains in `states` at `step`; None when none is alive.
pub fn growth_row(step: u32, states: &ChainStates) -> Option<GrowthRow> {
    let alive: Vec<&Chain2> = states
        .chains
        .iter()
        .zip(&states.diverged_at)
        .filter(|(_, d)| **d == 0)
        .map(|(c, _)| c)
        .collect();
    if alive.is_empty() {
        return None;
    }
    let log_norm = |v: [f32; 2]| {
        let n = f64::from(v[0]).hypot(f64::from(v[1]));
        n.max(1e-30).log10()
    };
    let mut log_p: Vec<f64> = alive.iter().map(|c| log_norm(c.p)).collect();
    let mut log_theta: Vec<f64> = alive.iter().map(|c| log_norm(c.theta)).collect();
    let mut xi: Vec<f64> = alive
        .iter()
        .flat_map(|c| c.xi.map(f64::from))
        .filter(|v| v.is_finite())
        .collect();
    Some(GrowthRow {
        step,
        log_p: quantiles(&mut log_p),
        log_theta: quantiles(&mut log_theta),
        xi: quantiles(&mut xi),
    })
}

/// The [`GROWTH_QUANTILES`] of `values` (sorted in place); NaN when empty.
fn quantiles(values: &mut [f64]) -> [f64; 3] {
    values.sort_by(f64::total_cmp);
    GROWTH_QUANTILES.map(|q| quantile_sorted(values, q))
}

/// The q-quantile of sorted values (nearest rank); NaN when empty.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// The growth of ln|p| per step over a window of steps, measured on tracked chains and
/// predicted from the O-step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct GrowthRate {
    /// Median over the chains of the measured increase of ln|pᵢ| per step.
    pub measured: f64,
    /// Median over the chains of the predicted increase, the mean of −φ·max(D, ξᵢ)·h over
    /// the same steps, with ξᵢ as the O-step sees it, after the step's first half thermostat
    /// step (coordinate i the one with the larger |p| at the end).
    pub predicted: f64,
    /// Chains that entered the medians.
    pub chains: usize,
}

/// The growth rate over the last `window` steps of every path (the states of one chain after
/// consecutive steps, ending before it diverged), for the sampler `sampler` at step size
/// `h`. Paths shorter than `window + 1` states are left out; None when none is left.
pub fn growth_rate(
    paths: &[Vec<Chain2>],
    sampler: &SamplerParams,
    window: usize,
) -> Option<GrowthRate> {
    let mut measured = Vec::new();
    let mut predicted = Vec::new();
    for path in paths {
        let finite: Vec<&Chain2> = path
            .iter()
            .take_while(|c| {
                c.p.iter()
                    .chain(&c.theta)
                    .chain(&c.xi)
                    .all(|v| v.is_finite())
            })
            .collect();
        if finite.len() < window + 1 {
            continue;
        }
        let end = finite.len() - 1;
        let start = end - window;
        let last = finite[end];
        let i = if last.p[0].abs() >= last.p[1].abs() {
            0
        } else {
            1
        };
        let (p0, p1) = (f64::from(finite[start].p[i]), f64::from(last.p[i]));
        if p0 == 0.0 || p1 == 0.0 {
            continue;
        }
        measured.push((p1.abs().ln() - p0.abs().ln()) / window as f64);
        // The O-step of step k uses ξ after the step's first half thermostat step.
        let beta_h: f64 = finite[start..end]
            .iter()
            .map(|c| f64::from(sampler.o_step_friction(c.p[i], c.xi[i])) * f64::from(sampler.h))
            .sum::<f64>()
            / window as f64;
        predicted.push(-f64::from(sampler.friction_sign) * beta_h);
    }
    if measured.is_empty() {
        return None;
    }
    let chains = measured.len();
    measured.sort_by(f64::total_cmp);
    predicted.sort_by(f64::total_cmp);
    Some(GrowthRate {
        measured: quantile_sorted(&measured, 0.5),
        predicted: quantile_sorted(&predicted, 0.5),
        chains,
    })
}

/// Robust ranges of the alive chains' coordinates: the central `coverage` of each of θ, p and
/// ξ (both coordinates pooled). Chains outside them (the first to explode) are not included:
/// the portraits follow the bulk and mark those chains at their edge.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Extents {
    /// Range of θ.
    pub theta: [f64; 2],
    /// Range of p.
    pub p: [f64; 2],
    /// Range of ξ.
    pub xi: [f64; 2],
}

impl Extents {
    /// The extents of the alive chains of `states`; None when no chain is alive.
    pub fn of(states: &ChainStates, coverage: f64) -> Option<Extents> {
        let alive: Vec<&Chain2> = states
            .chains
            .iter()
            .zip(&states.diverged_at)
            .filter(|(_, d)| **d == 0)
            .map(|(c, _)| c)
            .collect();
        if alive.is_empty() {
            return None;
        }
        let tail = 0.5 * (1.0 - coverage);
        let range = |pick: &dyn Fn(&Chain2) -> [f32; 2]| -> [f64; 2] {
            let mut v: Vec<f64> = alive
                .iter()
                .flat_map(|c| pick(c).map(f64::from))
                .filter(|v| v.is_finite())
                .collect();
            v.sort_by(f64::total_cmp);
            [quantile_sorted(&v, tail), quantile_sorted(&v, 1.0 - tail)]
        };
        Some(Extents {
            theta: range(&|c| c.theta),
            p: range(&|c| c.p),
            xi: range(&|c| c.xi),
        })
    }
}

/// The step size at which `steps` steps of ATMC with friction sign φ < 0 (MATH.md §2) last
/// as long as the thermostat takes to blow the momentum up, at temperature T.
///
/// With φ < 0 the O-step is an anti-friction |φ|β that grows with ξ, and ξ grows with p²:
/// once ξ ≫ D and p² ≫ mT, x = ln(p²/(mT)) obeys x' = 2|φ|ξ and ξ' = p²/m − T ≈ T eˣ, so
/// x'' = 2|φ|T eˣ, which from a thermal start (x = 0, x' = 0) reaches infinity at
/// t* = ∫₀^∞ dx/√(4|φ|T(eˣ − 1)) = π/(2√(|φ|T)). A run of K steps of size h lasts hK: chains
/// explode within it when h > t*/K, a boundary where h√|φ| is constant. Fluctuations (chains
/// that start hotter than mT) explode somewhat earlier. None for φ ≥ 0 or T = 0.
pub fn thermostat_blowup_step_size(
    friction_sign: f64,
    temperature: f64,
    steps: u32,
) -> Option<f64> {
    if friction_sign >= 0.0 || temperature <= 0.0 || steps == 0 {
        return None;
    }
    let blowup = std::f64::consts::PI / (2.0 * (-friction_sign * temperature).sqrt());
    Some(blowup / f64::from(steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed form agrees with integrating x'' = 2|φ|T eˣ from rest until x = 60, and
    /// the boundary scales as 1/(K√|φ|).
    #[test]
    fn thermostat_blowup_time_matches_its_ode() {
        for (phi, temperature) in [(-1.0, 1.0), (-0.25, 1.0), (-0.5, 2.0)] {
            let a = 2.0 * f64::abs(phi) * temperature;
            let (mut x, mut v, mut t) = (0.0_f64, 0.0_f64, 0.0_f64);
            while x < 60.0 {
                // Steps that shrink as the solution speeds up.
                let dt = 1e-4 / (1.0 + v.abs());
                v += dt * a * x.exp();
                x += dt * v;
                t += dt;
            }
            let closed = thermostat_blowup_step_size(phi, temperature, 1).unwrap();
            assert!(
                (t / closed - 1.0).abs() < 0.01,
                "φ {phi}: ODE {t}, closed form {closed}"
            );
        }
        let h = |phi, k| thermostat_blowup_step_size(phi, 1.0, k).unwrap();
        assert!((h(-0.25, 100) / h(-1.0, 100) - 2.0).abs() < 1e-12);
        assert!((h(-1.0, 100) / h(-1.0, 400) - 4.0).abs() < 1e-12);
        assert_eq!(thermostat_blowup_step_size(0.0, 1.0, 100), None);
        assert_eq!(thermostat_blowup_step_size(0.5, 1.0, 100), None);
        assert_eq!(thermostat_blowup_step_size(-1.0, 0.0, 100), None);
    }
    use crate::math::{SamplerKind, SamplerSpec};

    fn states(chains: Vec<Chain2>) -> ChainStates {
        let n = chains.len();
        ChainStates {
            chains,
            diverged_at: vec![0; n],
        }
    }

    #[test]
    fn quantiles_of_magnitudes() {
        let chains = (1..=100)
            .map(|k| Chain2 {
                theta: [k as f32, 0.0],
                p: [0.0, 10f32.powi(k % 10)],
                xi: [k as f32, k as f32],
            })
            .collect();
        let row = growth_row(7, &states(chains)).unwrap();
        assert_eq!(row.step, 7);
        assert!((row.log_theta[0] - 50f64.log10()).abs() < 1e-9);
        assert_eq!(row.xi[2], 99.0);
        assert!((row.log_p[1] - 8.0).abs() < 1e-6);
    }

    /// A chain whose |p| is multiplied by e^{βh} per step: measured = predicted = βh, with β
    /// from ξ after the half thermostat step (ξ = 3, a large mass keeps p²/m ≈ 0, so
    /// β = 3 − h/2 · T).
    #[test]
    fn growth_rate_of_a_pure_exponential() {
        let mut sp = SamplerSpec::new(SamplerKind::Atmc);
        sp.friction_sign = -1.0;
        sp.h = 0.05;
        sp.mass = 1e8;
        let sampler = sp.params();
        let beta_h = 0.05 * (3.0 - 0.025);
        let path: Vec<Chain2> = (0..40)
            .map(|k| Chain2 {
                theta: [0.0, 0.0],
                p: [(beta_h as f32 * k as f32).exp(), 0.1],
                xi: [3.0, 3.0],
            })
            .collect();
        let rate = growth_rate(&[path], &sampler, 20).unwrap();
        assert!((rate.measured - beta_h).abs() < 1e-4, "{rate:?}");
        assert!((rate.predicted - beta_h).abs() < 1e-4, "{rate:?}");
        assert!(growth_rate(&[vec![Chain2::default(); 5]], &sampler, 20).is_none());
    }

    /// One chain at p = 10⁹ among a thousand does not move the extents: the portraits follow
    /// the bulk and mark that chain at their edge.
    #[test]
    fn extents_follow_the_bulk_not_its_first_exploding_chain() {
        let mut chains: Vec<Chain2> = (0..1000)
            .map(|k| Chain2 {
                p: [(k % 10) as f32, 0.0],
                ..Chain2::default()
            })
            .collect();
        chains[0].p = [1e9, -5.0];
        let e = Extents::of(&states(chains), 0.99).unwrap();
        assert!(e.p[1] <= 9.0 && e.p[0] >= 0.0, "{:?}", e.p);
        assert_eq!(e.theta, [0.0, 0.0]);
    }
}
