//! How chains start: a preset's initial state and the pure function of (seed, chain) that
//! draws it.

use super::rng::{RngCounter, Stream};
use super::samplers::{Chain2, Model};
use serde::{Deserialize, Serialize};

/// How chains start.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitSpec {
    /// Centre of the initial θ.
    #[serde(default)]
    pub center: [f64; 2],
    /// Standard deviation of the initial θ around the centre.
    #[serde(
        default = "one",
        deserialize_with = "crate::math::ranges::de_init_scale"
    )]
    pub scale: f64,
    /// Initial thermostat ξ of every coordinate.
    #[serde(default)]
    pub xi: f64,
}

fn one() -> f64 {
    1.0
}

impl Default for InitSpec {
    fn default() -> Self {
        Self {
            center: [0.0; 2],
            scale: 1.0,
            xi: 0.0,
        }
    }
}

impl InitSpec {
    /// The initial state of `chain`: θ ~ N(centre, scale²), p ~ N(0, m T) for samplers with
    /// a momentum (0 otherwise), ξ as given for samplers with a thermostat (0 otherwise).
    /// A pure function of (seed, chain), like everything random here.
    pub fn chain(&self, model: &Model, seed: u64, chain: u32) -> Chain2 {
        let z = RngCounter::new(seed, chain, 0).normal4(Stream::Init, 0);
        let sp = &model.sampler;
        let p_scale = if sp.kind.has_momentum() {
            (sp.mass * sp.temperature).sqrt()
        } else {
            0.0
        };
        let xi = if sp.kind.has_thermostat() {
            self.xi as f32
        } else {
            0.0
        };
        Chain2 {
            theta: [
                self.center[0] as f32 + self.scale as f32 * z[0],
                self.center[1] as f32 + self.scale as f32 * z[1],
            ],
            p: [p_scale * z[2], p_scale * z[3]],
            xi: [xi, xi],
        }
    }
}
