//! The harmonic test of a sphere ensemble's longitudes (MATH.md §5.6): where the fitted Gibbs
//! law is uniform in longitude (the loss is symmetric about the z axis), each harmonic k of
//! the chains' longitudes φ gives Z_k = (2/n)[(Σ cos kφ)² + (Σ sin kφ)²], χ² with two degrees
//! of freedom under the uniform law; the test takes the largest of k = 1, …,
//! [`LONGITUDE_HARMONICS`] with a Bonferroni correction. TV on a coarse grid and KS of the
//! losses (which do not depend on φ at all when the loss is symmetric) cannot see a pattern
//! in longitude; this test can.

use serde::{Deserialize, Serialize};

/// Harmonics tested: k = 1, …, 6 (the toy's three objects imprint k = 3 and its multiples).
pub const LONGITUDE_HARMONICS: u32 = 6;

/// The test's level: longitudes count as uniform when the corrected p-value is at least this.
pub const LONGITUDE_LEVEL: f64 = 0.05;

/// The harmonic test of one ensemble's longitudes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LongitudeHarmonics {
    /// Z_k for k = 1, …, [`LONGITUDE_HARMONICS`] (index k − 1); each χ²₂ under a uniform law.
    pub statistics: Vec<f64>,
    /// The harmonic k with the largest Z_k.
    pub strongest: u32,
    /// The amplitude a of a density ∝ 1 + a cos(k(φ − φ₀)) at that harmonic, √(2 Z_k / n)
    /// (its estimate, biased up by the noise: about √(4/n) at a = 0).
    pub amplitude: f64,
    /// The Bonferroni-corrected p-value: min(1, K · e^{−max Z_k / 2}).
    pub p_value: f64,
}

impl LongitudeHarmonics {
    /// Whether the longitudes are consistent with a uniform law at [`LONGITUDE_LEVEL`].
    pub fn uniform(&self) -> bool {
        self.p_value >= LONGITUDE_LEVEL
    }

    /// One line for the views.
    pub fn line(&self) -> String {
        let k = self.strongest;
        let z = self
            .statistics
            .get(k as usize - 1)
            .copied()
            .unwrap_or(f64::NAN);
        if self.uniform() {
            format!(
                "harmonic test: longitudes uniform, as the Gibbs law's (harmonics k = 1–{LONGITUDE_HARMONICS}: \
                 largest Z_{k} = {z:.1}, p = {:.2})",
                self.p_value
            )
        } else {
            format!(
                "harmonic test: longitudes not uniform (the Gibbs law's are): a cos {k}φ pattern of amplitude \
                 {:.3} (Z_{k} = {z:.1}, p = {:.1e}, Bonferroni over k = 1–{LONGITUDE_HARMONICS})",
                self.amplitude, self.p_value
            )
        }
    }
}

/// The harmonic test of longitudes `phi` (radians). None with fewer than two.
pub fn longitude_harmonics(phi: &[f64]) -> Option<LongitudeHarmonics> {
    if phi.len() < 2 {
        return None;
    }
    let n = phi.len() as f64;
    let statistics: Vec<f64> = (1..=LONGITUDE_HARMONICS)
        .map(|k| {
            let k = f64::from(k);
            let (c, s) = phi.iter().fold((0.0, 0.0), |(c, s), &p| {
                let (sin, cos) = (k * p).sin_cos();
                (c + cos, s + sin)
            });
            2.0 / n * (c * c + s * s)
        })
        .collect();
    let (index, &largest) = statistics
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .expect("six harmonics");
    Some(LongitudeHarmonics {
        strongest: index as u32 + 1,
        amplitude: (2.0 * largest / n).sqrt(),
        p_value: (f64::from(LONGITUDE_HARMONICS) * (-largest / 2.0).exp()).min(1.0),
        statistics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::rng::SequentialRng;
    use rand::RngExt;
    use std::f64::consts::TAU;

    /// Longitudes of density ∝ 1 + a cos 3φ on [0, 2π), by rejection.
    fn modulated(a: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SequentialRng::new(seed, 0);
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let phi = TAU * rng.random::<f64>();
            if (1.0 + a) * rng.random::<f64>() < 1.0 + a * (3.0 * phi).cos() {
                out.push(phi);
            }
        }
        out
    }

    /// Uniform longitudes pass; over 400 ensembles of 1,000 the test rejects about 5 % of
    /// them (Bonferroni over nearly independent harmonics: a little under 5 %).
    #[test]
    fn uniform_longitudes_pass_at_the_tests_level() {
        let test = longitude_harmonics(&modulated(0.0, 20_000, 1)).unwrap();
        assert!(test.uniform(), "{test:?}");
        assert!(test.line().starts_with("harmonic test: longitudes uniform"));
        let rejected = (0..400)
            .filter(|&seed| {
                !longitude_harmonics(&modulated(0.0, 1000, 100 + seed))
                    .unwrap()
                    .uniform()
            })
            .count();
        eprintln!("{rejected} of 400 uniform ensembles rejected");
        assert!((8..=32).contains(&rejected), "{rejected} of 400 rejected");
    }

    /// A small 3-fold pattern, density ∝ 1 + 0.1 cos 3φ, is caught at k = 3 by 20,000
    /// longitudes (Z₃ ≈ n a²/2 = 100), with its amplitude.
    #[test]
    fn a_small_cos_three_phi_pattern_is_caught_at_k_three() {
        let test = longitude_harmonics(&modulated(0.1, 20_000, 2)).unwrap();
        eprintln!("{test:?}");
        assert!(!test.uniform());
        assert_eq!(test.strongest, 3);
        assert!(test.p_value < 1e-10, "{test:?}");
        assert!((test.amplitude - 0.1).abs() < 0.02, "{test:?}");
        assert!(test.line().contains("cos 3φ"), "{}", test.line());
    }
}
