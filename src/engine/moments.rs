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

    /// Covariance (c11, c12, c22) of the alive chains' θ at this instant.
    pub fn covariance(&self) -> [f64; 3] {
        let n = self.alive as f64;
        let mean = self.mean();
        let s = self.sum_theta_sq;
        [
            s[0] / n - mean[0] * mean[0],
            s[1] / n - mean[0] * mean[1],
            s[2] / n - mean[1] * mean[1],
        ]
    }

    /// "Var θ₁ 0.333 · Var θ₂ 1.24": the alive chains' variance of each coordinate at this
    /// instant, three significant digits; None while no chain is alive. The readout lessons
    /// cite ("Var θ settles at 1/3").
    pub fn variances_text(&self) -> Option<String> {
        (self.alive > 1).then(|| {
            let c = self.covariance();
            format!(
                "Var θ₁ {} · Var θ₂ {}",
                three_digits(c[0]),
                three_digits(c[2])
            )
        })
    }

    /// Kinetic temperature ⟨p K'(p)⟩ over alive chains and coordinates.
    pub fn kinetic_temperature(&self) -> f64 {
        (self.sum_heat[0] + self.sum_heat[1]) / (2.0 * self.alive as f64)
    }

    /// Mean ξ over alive chains and coordinates.
    pub fn mean_xi(&self) -> f64 {
        (self.sum_xi[0] + self.sum_xi[1]) / (2.0 * self.alive as f64)
    }

    /// HMC's acceptance and divergence rates of the last step: its chains keep whether their
    /// proposal was accepted in ξ₀ and whether it diverged in ξ₁ (`Model::hmc_iteration`).
    pub fn hmc_rates(&self) -> [f64; 2] {
        self.sum_xi.map(|s| s / self.alive as f64)
    }
}

/// One superchain's alive chains at one instant, per coordinate of θ: what nested R̂ over
/// all chains needs (one draw per chain), reduced by every backend without reading the
/// chains back.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SuperchainMoments {
    /// Alive chains of the superchain.
    pub alive: u64,
    /// Mean θ of its alive chains (0 when none is alive).
    pub mean: [f64; 2],
    /// Σ (θ − mean)² over its alive chains: centred, so that no large mean cancels it.
    pub centred_sq: [f64; 2],
}

/// Invocations that share one superchain's reduction, here and in
/// `reduce_superchains` (`shaders/engine.wgsl`): lane j sums the superchain's chains j, j + L,
/// j + 2L, … (chain index k + K·m for member m), then the lanes are added pairwise as a tree.
pub const SUPERCHAIN_LANES: usize = 256;

/// The moments of every superchain (`k` of them; chain i belongs to superchain i mod k) of
/// the alive (`diverged_at == 0`) chains, in the GPU kernel's summation order (lanes, then a
/// tree), in f64: the CPU engine's reduction and the oracle the GPU's is tested against.
pub fn superchain_moments(
    chains: &[Chain2],
    diverged_at: &[u32],
    k: u32,
) -> Vec<SuperchainMoments> {
    use rayon::prelude::*;
    let k = k as usize;
    if k == 0 {
        return Vec::new();
    }
    (0..k)
        .into_par_iter()
        .map(|s| {
            // The members of superchain s, each summed into its lane.
            let lanes = |value: &dyn Fn(&Chain2) -> [f64; 3]| -> [f64; 3] {
                let mut lane = [[0.0f64; 3]; SUPERCHAIN_LANES];
                for (m, i) in (s..chains.len()).step_by(k).enumerate() {
                    if diverged_at[i] == 0 {
                        let v = value(&chains[i]);
                        let acc = &mut lane[m % SUPERCHAIN_LANES];
                        for f in 0..3 {
                            acc[f] += v[f];
                        }
                    }
                }
                tree_sum(&mut lane)
            };
            let [alive, sx, sy] = lanes(&|c| [1.0, f64::from(c.theta[0]), f64::from(c.theta[1])]);
            let mean = if alive > 0.0 {
                [sx / alive, sy / alive]
            } else {
                [0.0; 2]
            };
            let [_, qx, qy] = lanes(&|c| {
                let d = [0, 1].map(|j| f64::from(c.theta[j]) - mean[j]);
                [0.0, d[0] * d[0], d[1] * d[1]]
            });
            SuperchainMoments {
                alive: alive as u64,
                mean,
                centred_sq: [qx, qy],
            }
        })
        .collect()
}

/// Adds lanes pairwise, halving the stride, as a workgroup's tree reduction does.
fn tree_sum(lane: &mut [[f64; 3]; SUPERCHAIN_LANES]) -> [f64; 3] {
    let mut stride = SUPERCHAIN_LANES / 2;
    while stride > 0 {
        let (low, high) = lane.split_at_mut(stride);
        for (a, b) in low.iter_mut().zip(&high[..stride]) {
            for f in 0..3 {
                a[f] += b[f];
            }
        }
        stride /= 2;
    }
    lane[0]
}

/// `v` to three significant digits, without an exponent for the values a variance readout
/// meets (0.00123 … 99,900).
fn three_digits(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    let decimals = if a == 0.0 {
        0
    } else {
        (2 - a.log10().floor() as i32).clamp(0, 6) as usize
    };
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod variance_tests {
    use super::{Moments, three_digits};

    #[test]
    fn the_variance_readout_has_three_significant_digits() {
        assert_eq!(three_digits(1.0 / 3.0), "0.333");
        assert_eq!(three_digits(1.2449), "1.24");
        assert_eq!(three_digits(9.051), "9.05");
        assert_eq!(three_digits(0.1111), "0.111");
        assert_eq!(three_digits(123.4), "123");
        // Two chains at (0, 0) and (2, 4): Var θ₁ = 1, Var θ₂ = 4 (population variance).
        let m = Moments {
            alive: 2,
            sum_theta: [2.0, 4.0],
            sum_theta_sq: [4.0, 8.0, 16.0],
            ..Moments::default()
        };
        assert_eq!(m.covariance(), [1.0, 2.0, 4.0]);
        assert_eq!(m.variances_text().unwrap(), "Var θ₁ 1.00 · Var θ₂ 4.00");
        assert_eq!(Moments::default().variances_text(), None);
    }
}
