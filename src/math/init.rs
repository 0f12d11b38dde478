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
    /// K superchains for nested R̂: chain i belongs to superchain i mod K, and every chain of
    /// a superchain starts at its superchain's θ (drawn as a chain's θ would be, so a wide
    /// `scale` over-disperses the K starts). The momenta stay each chain's own. `None`: every
    /// chain draws its own start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superchains: Option<u32>,
}

/// Most superchains a preset may ask for (the GPU engine reduces one workgroup per
/// superchain, and the live diagnostics keep a sum per superchain).
pub const MAX_SUPERCHAINS: u32 = 4096;

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
            superchains: None,
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
        let offset = match self.superchains {
            // Blocks 2 and 3 of counter (seed, k, 0): never a chain's own blocks 0 and 1.
            Some(k) if k > 0 => self.offset(&RngCounter::new(seed, chain % k, 0), 2),
            _ => self.offset(&rng, 0),
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

    /// The superchain chain `chain` belongs to, when there are superchains.
    pub fn superchain_of(&self, chain: u32) -> Option<u32> {
        self.superchains.filter(|&k| k > 0).map(|k| chain % k)
    }

    /// The standardised offset of a start from the centre: normal, or uniform on [−1, 1]²,
    /// from blocks `block` (normal) and `block + 1` (uniform) of `rng`'s init stream.
    fn offset(&self, rng: &RngCounter, block: u32) -> [f32; 2] {
        if self.uniform {
            let bits = rng.bits4(Stream::Init, block + 1);
            [0, 1].map(|c| 2.0 * uniform_from_bits(bits[c]) - 1.0)
        } else {
            let z = rng.normal4(Stream::Init, block);
            [z[0], z[1]]
        }
    }

    /// Checks the superchains against the number of chains: at least two, at least two chains
    /// each, dividing the chains evenly, at most [`MAX_SUPERCHAINS`].
    pub fn validate(&self, chains: u32) -> Result<(), String> {
        let Some(k) = self.superchains else {
            return Ok(());
        };
        if k < 2 {
            return Err(format!(
                "superchains: {k} compares nothing: nested R̂ needs at least 2 superchains \
                 (leave the field out for independent starts)"
            ));
        }
        if k > MAX_SUPERCHAINS {
            return Err(format!(
                "superchains: {k} is more than the {MAX_SUPERCHAINS} the engines reduce"
            ));
        }
        if k > chains / 2 {
            return Err(format!(
                "superchains: {k} with {chains} chains leaves fewer than 2 chains a superchain \
                 (at most {} superchains)",
                chains / 2
            ));
        }
        if !chains.is_multiple_of(k) {
            return Err(format!(
                "superchains: {k} does not divide the {chains} chains evenly (nested R̂ \
                 compares superchains of equal size: try {} or {} chains)",
                chains / k * k,
                (chains / k + 1) * k
            ));
        }
        Ok(())
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
            target: TargetSpec::from_name("gmm25").unwrap().build().unwrap(),
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

    #[test]
    fn superchains_share_their_start_and_keep_their_own_momenta() {
        let model = Model {
            sampler: SamplerSpec::new(SamplerKind::Atmc).params(),
            target: TargetSpec::from_name("gaussian").unwrap().build().unwrap(),
            noise: NoiseSpec::None.model(),
            schedule: ScheduleSpec::Constant.schedule(),
        };
        let plain = InitSpec::default();
        let grouped = InitSpec {
            scale: 5.0,
            superchains: Some(4),
            ..InitSpec::default()
        };
        let chains: Vec<Chain2> = (0..16).map(|i| grouped.chain(&model, 9, i)).collect();
        for i in 0..16 {
            assert_eq!(grouped.superchain_of(i as u32), Some(i as u32 % 4));
            assert_eq!(chains[i].theta, chains[i % 4].theta, "chain {i}");
            // The momentum is the chain's own: the same as without superchains.
            assert_eq!(chains[i].p, plain.chain(&model, 9, i as u32).p);
        }
        assert_ne!(chains[0].theta, chains[1].theta);
        assert_ne!(chains[0].p, chains[4].p);
        // Without superchains nothing changes.
        assert_eq!(plain.superchain_of(3), None);
    }

    #[test]
    fn bad_superchains_are_refused_with_the_reason() {
        let with = |k| InitSpec {
            superchains: Some(k),
            ..InitSpec::default()
        };
        assert!(with(1).validate(100).unwrap_err().contains("at least 2"));
        assert!(with(0).validate(100).unwrap_err().contains("at least 2"));
        assert!(
            with(7)
                .validate(100)
                .unwrap_err()
                .contains("does not divide")
        );
        assert!(
            with(101)
                .validate(100)
                .unwrap_err()
                .contains("fewer than 2")
        );
        assert!(
            with(100)
                .validate(100)
                .unwrap_err()
                .contains("fewer than 2")
        );
        assert!(with(5000).validate(20_000).unwrap_err().contains("4096"));
        assert!(with(4).validate(100).is_ok());
        assert!(InitSpec::default().validate(7).is_ok());
    }
}
