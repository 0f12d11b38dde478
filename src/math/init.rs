//! How chains start: a preset's initial state and the pure function of (seed, chain) that
//! draws it.

use super::rng::{RngCounter, Stream, uniform_from_bits};
use super::samplers::{Chain2, Model};
use serde::{Deserialize, Serialize};

/// How chains start.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitSpec {
    /// Centre of the initial θ.
    #[serde(default, deserialize_with = "crate::math::ranges::de_location")]
    pub center: [f64; 2],
    /// Standard deviation of the initial θ around the centre.
    #[serde(
        default = "one",
        deserialize_with = "crate::math::ranges::de_init_scale"
    )]
    pub scale: f64,
    /// Initial thermostat ξ of every coordinate.
    #[serde(default, deserialize_with = "crate::math::ranges::de_init_xi")]
    pub xi: f64,
    /// θ uniform on the square centre ± scale instead of N(centre, scale²) (chains spread
    /// over the whole plane, e.g. to find the modes of a mixture).
    #[serde(default)]
    pub uniform: bool,
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
            uniform: false,
        }
    }
}

impl InitSpec {
    /// The initial state of `chain`: θ ~ N(centre, scale²) (or uniform on centre ± scale),
    /// p ~ N(0, m T) for samplers with a momentum (0 otherwise), ξ as given for samplers
    /// with a thermostat (0 otherwise). A pure function of (seed, chain), like everything
    /// random here.
    pub fn chain(&self, model: &Model, seed: u64, chain: u32) -> Chain2 {
        let rng = RngCounter::new(seed, chain, 0);
        let z = rng.normal4(Stream::Init, 0);
        let offset = if self.uniform {
            let bits = rng.bits4(Stream::Init, 1);
            [0, 1].map(|c| 2.0 * uniform_from_bits(bits[c]) - 1.0)
        } else {
            [z[0], z[1]]
        };
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
                self.center[0] as f32 + self.scale as f32 * offset[0],
                self.center[1] as f32 + self.scale as f32 * offset[1],
            ],
            p: [p_scale * z[2], p_scale * z[3]],
            xi: [xi, xi],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{NoiseSpec, SamplerKind, SamplerSpec, ScheduleSpec, TargetSpec};

    #[test]
    fn uniform_start_fills_the_square() {
        let model = Model {
            sampler: SamplerSpec::new(SamplerKind::Sgld).params(),
            target: TargetSpec::from_name("gmm25").unwrap().build(),
            noise: NoiseSpec::None.model(),
            schedule: ScheduleSpec::Constant.schedule(),
        };
        let init = InitSpec {
            center: [1.0, -1.0],
            scale: 10.0,
            uniform: true,
            ..InitSpec::default()
        };
        let chains: Vec<Chain2> = (0..4000).map(|i| init.chain(&model, 3, i)).collect();
        for c in 0..2 {
            let v: Vec<f32> = chains.iter().map(|x| x.theta[c]).collect();
            let lo = v.iter().copied().fold(f32::INFINITY, f32::min);
            let hi = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let centre = [1.0, -1.0][c];
            assert!(lo >= centre - 10.0 && hi <= centre + 10.0);
            assert!(lo < centre - 9.9 && hi > centre + 9.9, "{lo} {hi}");
            let mean = v.iter().sum::<f32>() / v.len() as f32;
            assert!((mean - centre).abs() < 0.4, "mean {mean}");
        }
        assert_eq!(chains[0].p, [0.0, 0.0], "SGLD has no momentum");
    }
}
