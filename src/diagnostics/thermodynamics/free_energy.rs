//! The paper's free energy at a fixed temperature (MATH.md §5.1): F(η; T*) = U(η) − T*·S(η)
//! over the measured learning rates, with T* the temperature of one chosen learning rate η*.
//! Since dF/dη = (dU/dS − T*)·dS/dη, F is smallest where the slope temperature equals T*,
//! i.e. at η* itself when T(η) rises with η. That is the paper's central claim. Taking T* as
//! the slope temperature T_slope(η*) makes it true by construction (circular, as the paper
//! does); taking the Gibbs-fitted T_gibbs(η*), measured without any slope, makes it a test.

use super::Measured;
use serde::{Deserialize, Serialize};

/// F(η; T*) along a sweep for one temperature T*, and where it is smallest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FreeEnergyCurve {
    /// The fixed temperature T*.
    pub t_star: f64,
    /// F(η; T*) = U(η) − T*·S(η) at each point (None where the point is left out).
    pub values: Vec<Option<f64>>,
    /// Index of the smallest F among the included points.
    pub argmin: Option<usize>,
}

/// F(η; `t_star`) at every included point of `points` and the index of its minimum.
pub fn free_energy_curve(points: &[Measured], t_star: f64) -> FreeEnergyCurve {
    let values: Vec<Option<f64>> = points
        .iter()
        .map(|p| {
            let f = p.u - t_star * p.s;
            (p.included && f.is_finite()).then_some(f)
        })
        .collect();
    let argmin = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.map(|v| (i, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    FreeEnergyCurve {
        t_star,
        values,
        argmin,
    }
}

/// The test of the paper's claim at one learning rate η* of a sweep: F(η; T*) with
/// T* = T_slope(η*) (circular) and with T* = T_gibbs(η*) (independent), and their minima.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FreeEnergyTest {
    /// Index of η* among the points.
    pub star: usize,
    /// η*.
    pub eta_star: f64,
    /// F with T* = T_slope(η*): None where η* has no slope temperature.
    pub slope: Option<FreeEnergyCurve>,
    /// F with T* = T_gibbs(η*): None where η* has no Gibbs fit.
    pub gibbs: Option<FreeEnergyCurve>,
}

impl FreeEnergyTest {
    /// How many grid steps the minimum of F(η; T_gibbs(η*)) lies from η* (None without it).
    pub fn gibbs_steps_off(&self) -> Option<usize> {
        self.gibbs
            .as_ref()
            .and_then(|c| c.argmin)
            .map(|i| i.abs_diff(self.star))
    }

    /// Same for F(η; T_slope(η*)).
    pub fn slope_steps_off(&self) -> Option<usize> {
        self.slope
            .as_ref()
            .and_then(|c| c.argmin)
            .map(|i| i.abs_diff(self.star))
    }
}

/// The test at point `star` of `points` (in order of η), with that point's slope and Gibbs
/// temperatures.
pub fn free_energy_test(
    points: &[Measured],
    star: usize,
    t_slope: Option<f64>,
    t_gibbs: Option<f64>,
) -> FreeEnergyTest {
    let curve = |t: Option<f64>| {
        t.filter(|t| t.is_finite() && *t > 0.0)
            .map(|t| free_energy_curve(points, t))
    };
    FreeEnergyTest {
        star,
        eta_star: points.get(star).map_or(f64::NAN, |p| p.eta),
        slope: curve(t_slope),
        gibbs: curve(t_gibbs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the quadratic's exact curves (U = T, S = ln T + c along T = aη/(1 − bη)), F(η; T*)
    /// is smallest at the η whose T is T*: for every η* of the grid, exactly there.
    #[test]
    fn the_free_energy_at_a_fixed_temperature_is_smallest_at_its_own_learning_rate() {
        let (a, b) = (0.5, 0.5);
        let t = |eta: f64| a * eta / (1.0 - b * eta);
        let points: Vec<Measured> = (0..12)
            .map(|k| {
                let eta = 0.18 * 1.23f64.powi(k);
                Measured {
                    eta,
                    u: t(eta),
                    s: t(eta).ln() + 2.0,
                    u_min: 0.0,
                    included: true,
                }
            })
            .collect();
        for star in 0..points.len() {
            let test = free_energy_test(&points, star, None, Some(t(points[star].eta)));
            assert_eq!(test.gibbs_steps_off(), Some(0), "η* index {star}");
            assert_eq!(test.slope, None);
        }
        // A point left out is never the minimum.
        let mut gapped = points.clone();
        gapped[5].included = false;
        let test = free_energy_test(&gapped, 5, Some(t(points[5].eta)), None);
        assert_eq!(test.slope_steps_off(), Some(1));
        assert_eq!(test.slope.unwrap().values[5], None);
    }
}
