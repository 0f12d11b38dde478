//! Ensemble moments of the alive chains, reduced in one pass by every backend.

use crate::math::{Chain2, Model};

/// Sums over the alive chains at one instant, plus the diverged count.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moments {
    /// Chains still alive.
    pub alive: u64,
    /// Chains diverged so far.
    pub diverged: u64,
    /// Σ θ.
    pub sum_theta: [f64; 2],
    /// Σ θθᵀ as (xx, xy, yy).
    pub sum_theta_sq: [f64; 3],
    /// Σ p K'(p) per coordinate.
    pub sum_heat: [f64; 2],
    /// Σ ξ per coordinate.
    pub sum_xi: [f64; 2],
}

impl Moments {
    /// Adds one alive chain.
    #[inline(always)]
    pub fn add(&mut self, chain: &Chain2, model: &Model) {
        let [x, y] = chain.theta.map(f64::from);
        self.alive += 1;
        self.sum_theta[0] += x;
        self.sum_theta[1] += y;
        self.sum_theta_sq[0] += x * x;
        self.sum_theta_sq[1] += x * y;
        self.sum_theta_sq[2] += y * y;
        for c in 0..2 {
            self.sum_heat[c] += f64::from(model.kinetic_heat(chain.p[c]));
            self.sum_xi[c] += f64::from(chain.xi[c]);
        }
    }

    /// Combines two partial sums.
    pub fn merge(mut self, other: &Moments) -> Moments {
        self.alive += other.alive;
        self.diverged += other.diverged;
        for c in 0..2 {
            self.sum_theta[c] += other.sum_theta[c];
            self.sum_heat[c] += other.sum_heat[c];
            self.sum_xi[c] += other.sum_xi[c];
        }
        for c in 0..3 {
            self.sum_theta_sq[c] += other.sum_theta_sq[c];
        }
        self
    }

    /// Fraction of chains diverged.
    pub fn diverged_fraction(&self) -> f64 {
        let total = self.alive + self.diverged;
        if total == 0 {
            0.0
        } else {
            self.diverged as f64 / total as f64
        }
    }

    /// Mean of θ over alive chains.
    pub fn mean(&self) -> [f64; 2] {
        let n = self.alive as f64;
        [self.sum_theta[0] / n, self.sum_theta[1] / n]
    }

    /// Kinetic temperature ⟨p K'(p)⟩ over alive chains and coordinates.
    pub fn kinetic_temperature(&self) -> f64 {
        (self.sum_heat[0] + self.sum_heat[1]) / (2.0 * self.alive as f64)
    }

    /// Mean ξ over alive chains and coordinates.
    pub fn mean_xi(&self) -> f64 {
        (self.sum_xi[0] + self.sum_xi[1]) / (2.0 * self.alive as f64)
    }
}
