//! Nested R̂ (Margossian, Hoffman, Sountsov, Riou-Durand, Vehtari & Gelman, "Nested R̂:
//! assessing the convergence of Markov chain Monte Carlo when running many short chains",
//! Bayesian Analysis 2024): chains grouped into K superchains of M chains that share a
//! starting point. With thousands of short chains the classic R̂ says little (each chain is
//! too short to compare halves); nested R̂ asks whether the superchains, started far apart,
//! have forgotten where they started.
//!
//! For one coordinate with draws θ[k][m][n] (superchain k, chain m, draw n):
//!
//! * B̂ν = the variance (divisor K − 1) of the superchain means,
//! * Ŵν = the mean over superchains of B̃ₖ + W̃ₖ, where B̃ₖ is the variance (divisor M − 1,
//!   0 when M = 1) of superchain k's chain means and W̃ₖ the mean of its chains' variances
//!   (divisor N − 1, 0 when N = 1),
//! * nR̂ = √(1 + B̂ν / Ŵν).
//!
//! Once the chains are stationary and independent, nR̂ sits at
//! √(1 + 1/M) with one draw per chain and at √(1 + 1/(M(N + 1))) with N ≥ 2 draws
//! ([`stationary_level`], derived in docs/MATH.md §6, "Nested R̂"); the threshold the paper proposes is
//! 1.01 (reach it with enough chains per superchain). When Ŵν = 0 (noise-free SGD: the
//! chains of a superchain are identical) nR̂ is undefined and reported as `None`.

use crate::engine::SuperchainMoments;

/// Sums of one superchain's draws for one coordinate, enough for nested R̂ without keeping
/// the draws: what an engine reduces over its chains.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SuperchainSums {
    /// Chains in the superchain (M).
    pub chains: u32,
    /// Draws per chain (N).
    pub draws: u32,
    /// Σₘ θ̄ₘ: the sum of the chain means.
    pub sum_of_means: f64,
    /// Σₘ θ̄ₘ²: the sum of the squared chain means.
    pub sum_of_squared_means: f64,
    /// Σₘ Σₙ (θₘₙ − θ̄ₘ)²: the within-chain sum of squares over all chains.
    pub within_sum_of_squares: f64,
}

impl SuperchainSums {
    /// The sums of one superchain from its chains' draws (`chains[m][n]`, all of one length).
    pub fn of(chains: &[Vec<f64>]) -> Self {
        let draws = chains.first().map_or(0, Vec::len);
        let mut sums = SuperchainSums {
            chains: chains.len() as u32,
            draws: draws as u32,
            ..Self::default()
        };
        for chain in chains {
            let mean = chain.iter().sum::<f64>() / draws as f64;
            sums.sum_of_means += mean;
            sums.sum_of_squared_means += mean * mean;
            sums.within_sum_of_squares += chain.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
        }
        sums
    }

    /// The sums of coordinate `coordinate` of an engine's superchain moments (one draw per
    /// chain: the chains' current states).
    pub fn of_moments(m: &SuperchainMoments, coordinate: usize) -> Self {
        let alive = m.alive as f64;
        let mean = m.mean[coordinate];
        SuperchainSums {
            chains: m.alive as u32,
            draws: 1,
            sum_of_means: alive * mean,
            sum_of_squared_means: m.centred_sq[coordinate] + alive * mean * mean,
            within_sum_of_squares: 0.0,
        }
    }

    /// The superchain's mean.
    fn mean(&self) -> f64 {
        self.sum_of_means / f64::from(self.chains)
    }

    /// B̃ₖ + W̃ₖ: the variance of the chain means plus the mean within-chain variance.
    fn within(&self) -> f64 {
        let m = f64::from(self.chains);
        let n = f64::from(self.draws);
        let between_chains = if self.chains > 1 {
            // Σ(x̄ₘ − x̄)² = Σx̄ₘ² − M x̄², clamped: rounding may leave it a hair below 0.
            (self.sum_of_squared_means - m * self.mean().powi(2)).max(0.0) / (m - 1.0)
        } else {
            0.0
        };
        let within_chains = if self.draws > 1 {
            self.within_sum_of_squares / (m * (n - 1.0))
        } else {
            0.0
        };
        between_chains + within_chains
    }
}

/// Why nested R̂ could not be computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undefined {
    /// Fewer than two superchains: there is nothing to compare.
    OneSuperchain,
    /// Chains of different lengths, or a superchain without chains or draws.
    Unequal,
    /// Ŵν = 0: every superchain's chains are identical and constant (noise-free dynamics).
    NoSpread,
    /// A sum is NaN or infinite (diverged chains).
    NotFinite,
}

impl std::fmt::Display for Undefined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Undefined::OneSuperchain => "needs at least two superchains",
            Undefined::Unequal => "the chains differ in length, or a superchain is empty",
            Undefined::NoSpread => {
                "undefined: the chains of each superchain are identical (no noise to tell them apart)"
            }
            Undefined::NotFinite => "a draw is not finite",
        })
    }
}

/// Nested R̂ of one coordinate from its superchains' sums.
pub fn nested_rhat_of(superchains: &[SuperchainSums]) -> Result<f64, Undefined> {
    let k = superchains.len();
    if k < 2 {
        return Err(Undefined::OneSuperchain);
    }
    // Superchains may hold different numbers of chains (diverged chains drop out of theirs):
    // each one's mean and spread are its own survivors'.
    let draws = superchains[0].draws;
    if draws == 0
        || superchains
            .iter()
            .any(|s| s.chains == 0 || s.draws != draws)
    {
        return Err(Undefined::Unequal);
    }
    let finite = superchains.iter().all(|s| {
        s.sum_of_means.is_finite()
            && s.sum_of_squared_means.is_finite()
            && s.within_sum_of_squares.is_finite()
    });
    if !finite {
        return Err(Undefined::NotFinite);
    }
    let means: Vec<f64> = superchains.iter().map(SuperchainSums::mean).collect();
    let grand = means.iter().sum::<f64>() / k as f64;
    let between = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (k as f64 - 1.0);
    let within = superchains.iter().map(SuperchainSums::within).sum::<f64>() / k as f64;
    if within <= 0.0 {
        return Err(Undefined::NoSpread);
    }
    Ok((1.0 + between / within).sqrt())
}

/// Nested R̂ of one coordinate from its draws, `draws[k][m][n]`.
pub fn nested_rhat(draws: &[Vec<Vec<f64>>]) -> Result<f64, Undefined> {
    let sums: Vec<SuperchainSums> = draws.iter().map(|s| SuperchainSums::of(s)).collect();
    nested_rhat_of(&sums)
}

/// Nested R̂ over all chains, one draw each, from an engine's superchain moments: the largest
/// over the two coordinates that have one (the first reason when neither has).
pub fn nested_rhat_of_moments(superchains: &[SuperchainMoments]) -> Result<f64, Undefined> {
    let per_coordinate = [0, 1].map(|c| {
        let sums: Vec<SuperchainSums> = superchains
            .iter()
            .map(|m| SuperchainSums::of_moments(m, c))
            .collect();
        nested_rhat_of(&sums)
    });
    match per_coordinate {
        [Ok(a), Ok(b)] => Ok(a.max(b)),
        [Ok(a), Err(_)] | [Err(_), Ok(a)] => Ok(a),
        [Err(e), Err(_)] => Err(e),
    }
}

/// Where nested R̂ settles for stationary, independent draws with M chains per superchain
/// and N draws per chain: √(1 + 1/M) for N = 1, √(1 + 1/(M(N + 1))) for N ≥ 2 (docs/MATH.md
/// §6, "Nested R̂"). Correlated draws sit higher: N counts effective draws.
pub fn stationary_level(chains_per_superchain: u32, draws_per_chain: u32) -> f64 {
    let m = f64::from(chains_per_superchain.max(1));
    let n = f64::from(draws_per_chain.max(1));
    if draws_per_chain <= 1 {
        (1.0 + 1.0 / m).sqrt()
    } else {
        (1.0 + 1.0 / (m * (n + 1.0))).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::SequentialRng;
    use rand::{RngExt, SeedableRng};
    use rand_distr::StandardNormal;

    #[test]
    fn a_small_example_computed_by_hand() {
        // K = 2 superchains of M = 2 chains with N = 2 draws.
        // Superchain 0: chains [0, 2] (mean 1, var 2) and [2, 4] (mean 3, var 2).
        // Superchain 1: chains [5, 5] (mean 5, var 0) and [6, 8] (mean 7, var 2).
        let draws = vec![
            vec![vec![0.0, 2.0], vec![2.0, 4.0]],
            vec![vec![5.0, 5.0], vec![6.0, 8.0]],
        ];
        // Superchain means 2 and 6: B̂ν = ((2−4)² + (6−4)²)/1 = 8.
        // B̃₀ = ((1−2)² + (3−2)²)/1 = 2, W̃₀ = (2 + 2)/2 = 2; B̃₁ = 2, W̃₁ = (0 + 2)/2 = 1.
        // Ŵν = (4 + 3)/2 = 3.5, nR̂ = √(1 + 8/3.5).
        let r = nested_rhat(&draws).unwrap();
        assert!((r - (1.0f64 + 8.0 / 3.5).sqrt()).abs() < 1e-12, "{r}");
    }

    fn iid(k: usize, m: usize, n: usize, seed: u64) -> Vec<Vec<Vec<f64>>> {
        let mut rng = SequentialRng::seed_from_u64(seed);
        (0..k)
            .map(|_| {
                (0..m)
                    .map(|_| (0..n).map(|_| rng.sample(StandardNormal)).collect())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn stationary_draws_sit_at_the_derived_level() {
        // Averaged over replications the ratio B̂ν/Ŵν is unbiased for its stationary value.
        for (m, n) in [(4, 1), (16, 1), (4, 10), (8, 50)] {
            let reps = 400;
            let mean_r2 = (0..reps)
                .map(|r| nested_rhat(&iid(64, m, n, r)).unwrap().powi(2))
                .sum::<f64>()
                / reps as f64;
            let level = stationary_level(m as u32, n as u32);
            let excess = mean_r2 - 1.0;
            let predicted = level * level - 1.0;
            assert!(
                (excess / predicted - 1.0).abs() < 0.05,
                "M = {m}, N = {n}: mean nR̂² − 1 = {excess:.5}, derived {predicted:.5}"
            );
            // One replication with many superchains is within 1 % of the level.
            let one = nested_rhat(&iid(4096, m, n, 9)).unwrap();
            assert!(
                (one / level - 1.0).abs() < 0.01,
                "M = {m}, N = {n}: {one} vs {level}"
            );
        }
    }

    #[test]
    fn superchains_that_remember_their_start_are_caught() {
        // Each superchain offset by its start, chains mixed within: nR̂ far above 1.01.
        let mut draws = iid(16, 64, 1, 3);
        for (k, s) in draws.iter_mut().enumerate() {
            for chain in s.iter_mut() {
                chain[0] += k as f64;
            }
        }
        assert!(nested_rhat(&draws).unwrap() > 2.0);
    }

    #[test]
    fn sums_agree_with_the_draws_and_undefined_cases_are_named() {
        let draws = iid(8, 5, 7, 4);
        let from_sums = nested_rhat_of(
            &draws
                .iter()
                .map(|s| SuperchainSums::of(s))
                .collect::<Vec<_>>(),
        );
        assert_eq!(from_sums, nested_rhat(&draws));
        // Noise-free: each superchain's chains identical and constant.
        let frozen = vec![vec![vec![1.0; 3]; 4], vec![vec![2.0; 3]; 4]];
        assert_eq!(nested_rhat(&frozen), Err(Undefined::NoSpread));
        assert_eq!(nested_rhat(&draws[..1]), Err(Undefined::OneSuperchain));
        // A superchain that lost a chain (diverged) still counts; chains of other lengths
        // do not.
        let mut fewer = draws.clone();
        fewer[1].pop();
        assert!(nested_rhat(&fewer).is_ok());
        let mut shorter = draws.clone();
        for chain in &mut shorter[1] {
            chain.pop();
        }
        assert_eq!(nested_rhat(&shorter), Err(Undefined::Unequal));
        let mut diverged = draws;
        diverged[2][0][0] = f64::INFINITY;
        assert_eq!(nested_rhat(&diverged), Err(Undefined::NotFinite));
    }

    #[test]
    fn engine_moments_give_the_one_draw_value() {
        use crate::engine::moments::superchain_moments;
        use crate::math::Chain2;
        // 4 superchains of 50 chains, chain i in superchain i mod 4, offset by its superchain.
        let mut rng = SequentialRng::seed_from_u64(7);
        let chains: Vec<Chain2> = (0..200)
            .map(|i| Chain2 {
                theta: [
                    (i % 4) as f32 + rng.sample::<f32, _>(StandardNormal),
                    rng.sample::<f32, _>(StandardNormal),
                ],
                ..Chain2::default()
            })
            .collect();
        let mut diverged = vec![0u32; 200];
        diverged[5] = 3; // superchain 1 loses a chain
        let moments = superchain_moments(&chains, &diverged, 4);
        assert_eq!(moments[1].alive, 49);
        let draws: Vec<Vec<Vec<f64>>> = (0..4)
            .map(|k| {
                (k..200)
                    .step_by(4)
                    .filter(|&i| diverged[i] == 0)
                    .map(|i| vec![f64::from(chains[i].theta[0])])
                    .collect()
            })
            .collect();
        let direct = nested_rhat(&draws).unwrap();
        let sums: Vec<SuperchainSums> = moments
            .iter()
            .map(|m| SuperchainSums::of_moments(m, 0))
            .collect();
        let from_moments = nested_rhat_of(&sums).unwrap();
        assert!(
            (direct - from_moments).abs() < 1e-12,
            "{direct} {from_moments}"
        );
        assert_eq!(
            nested_rhat_of_moments(&moments).unwrap(),
            from_moments.max(
                nested_rhat_of(
                    &moments
                        .iter()
                        .map(|m| SuperchainSums::of_moments(m, 1))
                        .collect::<Vec<_>>()
                )
                .unwrap()
            )
        );
    }
}
