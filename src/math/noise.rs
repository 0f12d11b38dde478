//! Synthetic gradient noise of toy targets (MATH.md §4): g̃ = ∇L(θ) + ε, with ε drawn per
//! step, chain and coordinate from the gradient-noise stream.

use super::real::Real;
use serde::{Deserialize, Serialize};

/// The gradient-noise model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum NoiseSpec {
    /// Exact gradients (data-based targets still have their minibatch noise).
    None,
    /// ε ~ N(0, σ² I): the paper's assumption of a constant diagonal covariance.
    Isotropic {
        /// Standard deviation σ.
        #[serde(deserialize_with = "crate::math::ranges::de_noise_sigma")]
        sigma: f64,
    },
    /// ε ~ N(0, diag(σ₁², σ₂²)).
    Anisotropic {
        /// Standard deviation of the first coordinate.
        #[serde(deserialize_with = "crate::math::ranges::de_noise_sigma")]
        sigma1: f64,
        /// Standard deviation of the second coordinate.
        #[serde(deserialize_with = "crate::math::ranges::de_noise_sigma")]
        sigma2: f64,
    },
    /// σ(θ) = σ (1 + κ |θ|): breaks the constant-covariance assumption on purpose.
    StateDependent {
        /// Base standard deviation σ.
        #[serde(deserialize_with = "crate::math::ranges::de_noise_sigma")]
        sigma: f64,
        /// Growth κ with the distance from the origin.
        #[serde(deserialize_with = "crate::math::ranges::de_noise_kappa")]
        kappa: f64,
    },
}

/// Runtime form: per-coordinate base σ and the state dependence κ (0 for constant noise).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseModel {
    /// Base standard deviation of each of the two coordinates.
    pub sigma: [f32; 2],
    /// State dependence κ.
    pub kappa: f32,
}

impl NoiseSpec {
    /// The runtime model.
    pub fn model(&self) -> NoiseModel {
        let (sigma, kappa) = match *self {
            NoiseSpec::None => ([0.0, 0.0], 0.0),
            NoiseSpec::Isotropic { sigma } => ([sigma, sigma], 0.0),
            NoiseSpec::Anisotropic { sigma1, sigma2 } => ([sigma1, sigma2], 0.0),
            NoiseSpec::StateDependent { sigma, kappa } => ([sigma, sigma], kappa),
        };
        NoiseModel {
            sigma: sigma.map(|v| v as f32),
            kappa: kappa as f32,
        }
    }

    /// A short human description.
    pub fn describe(&self) -> String {
        match *self {
            NoiseSpec::None => "none".into(),
            NoiseSpec::Isotropic { sigma } => format!("isotropic σ = {sigma}"),
            NoiseSpec::Anisotropic { sigma1, sigma2 } => {
                format!("anisotropic σ = ({sigma1}, {sigma2})")
            }
            NoiseSpec::StateDependent { sigma, kappa } => {
                format!("state-dependent σ(1 + κ|θ|), σ = {sigma}, κ = {kappa}")
            }
        }
    }
}

impl NoiseModel {
    /// Whether any noise is drawn at all (lets the samplers skip the Philox call).
    #[inline(always)]
    pub fn is_active(&self) -> bool {
        self.sigma[0] != 0.0 || self.sigma[1] != 0.0
    }

    /// Standard deviations of the noise at θ.
    #[inline(always)]
    pub fn sigma_at<R: Real>(&self, theta: [R; 2]) -> [R; 2] {
        let factor = (theta[0] * theta[0] + theta[1] * theta[1]).sqrt() * self.kappa + 1.0;
        [factor * self.sigma[0], factor * self.sigma[1]]
    }
}
