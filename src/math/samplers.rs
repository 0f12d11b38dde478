//! The samplers of MATH.md §1–3 on one shared chain state (θ, p, ξ per coordinate).
//!
//! The per-coordinate updates live in [`SamplerParams`]; `shaders/samplers.wgsl` mirrors them
//! function by function. [`Model::step`] advances one 2-D chain by one step (`model_step` in
//! `shaders/chain2.wgsl` mirrors it) and is the oracle the GPU engine is tested against.

// Index loops over the two coordinates mirror the WGSL line by line.
#![allow(clippy::needless_range_loop)]

use super::noise::NoiseModel;
use super::real::{Lanes, Real, StepRng};
use super::rng::{RngCounter, Stream};
use super::schedule::Schedule;
use super::targets::Target;
use serde::{Deserialize, Serialize};

/// Which sampler moves the chains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SamplerKind {
    /// Adaptive Thermostat Monte Carlo (Heek & Kalchbrenner 2019), MATH.md §1–2.
    Atmc,
    /// Stochastic gradient Langevin dynamics (Welling & Teh 2011).
    Sgld,
    /// Stochastic gradient Hamiltonian Monte Carlo (Chen et al. 2014).
    Sghmc,
    /// Stochastic gradient Nosé–Hoover thermostat (Ding et al. 2014).
    Sgnht,
    /// Plain SGD with a fixed learning rate.
    Sgd,
    /// Hamiltonian Monte Carlo with a Metropolis correction (Duane et al. 1987; Neal 2011):
    /// exact, the reference the stochastic-gradient samplers are compared with (MATH.md §10).
    Hmc,
}

impl SamplerKind {
    /// Every sampler with its command-line name.
    pub const ALL: [(SamplerKind, &'static str); 6] = [
        (SamplerKind::Atmc, "atmc"),
        (SamplerKind::Sgld, "sgld"),
        (SamplerKind::Sghmc, "sghmc"),
        (SamplerKind::Sgnht, "sgnht"),
        (SamplerKind::Sgd, "sgd"),
        (SamplerKind::Hmc, "hmc"),
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(k, _)| *k == self).unwrap().1
    }

    /// The code of the override constant `SPECIALISED_SAMPLER` and of the generated WGSL
    /// `SAMPLER_*` (declaration order).
    pub const fn gpu_code(self) -> u32 {
        self as u32
    }

    /// Parses a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }

    /// Whether the sampler has a momentum (and so a kinetic temperature).
    pub fn has_momentum(self) -> bool {
        matches!(
            self,
            SamplerKind::Atmc | SamplerKind::Sghmc | SamplerKind::Sgnht | SamplerKind::Hmc
        )
    }

    /// Whether the sampler accepts or rejects its proposals (HMC): each chain's ξ then holds
    /// whether its last proposal was accepted (1) or not (0), so the engines' mean ξ is the
    /// acceptance rate.
    pub fn has_acceptance(self) -> bool {
        self == SamplerKind::Hmc
    }

    /// Whether the sampler has a thermostat ξ.
    pub fn has_thermostat(self) -> bool {
        matches!(self, SamplerKind::Atmc | SamplerKind::Sgnht)
    }
}

/// Kinetic energy K(p).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Kinetic {
    /// K(p) = p²/(2m).
    Gaussian,
    /// K(p) = m c² sqrt(1 + p²/(m²c²)): every update |Δθ| ≤ c h.
    Hyperbolic {
        /// Speed limit c.
        #[serde(deserialize_with = "crate::math::ranges::de_speed")]
        c: f64,
    },
}

/// ATMC's thermostat update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum XiUpdate {
    /// ξ ← ξ + (h/2) m (K'(p)² − T K''(p)) (correct).
    Accumulate,
    /// ξ ← h m (K'(p)² − T K''(p)) (as printed in Algorithm 1).
    Overwrite,
}

/// Whether ATMC's injected noise carries the mass factor m.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NoiseMass {
    /// Variance (α/β) m T (1 − e^{−2βh}) (correct).
    With,
    /// Variance without m (as printed).
    Without,
}

/// Sampler settings as written in a preset. Fields a sampler does not use are ignored.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplerSpec {
    /// Which sampler.
    pub kind: SamplerKind,
    /// Step size h (learning rate for SGD); the peak of a cyclical schedule.
    #[serde(
        default = "d_h",
        deserialize_with = "crate::math::ranges::de_step_size"
    )]
    pub h: f64,
    /// Mass m.
    #[serde(default = "d_one", deserialize_with = "crate::math::ranges::de_mass")]
    pub mass: f64,
    /// ATMC's friction floor D.
    #[serde(
        default = "d_one",
        deserialize_with = "crate::math::ranges::de_friction_floor"
    )]
    pub friction_floor: f64,
    /// Temperature T (1 samples the posterior).
    #[serde(
        default = "d_one",
        deserialize_with = "crate::math::ranges::de_temperature"
    )]
    pub temperature: f64,
    /// Kinetic energy of ATMC.
    #[serde(default = "d_kinetic")]
    pub kinetic: Kinetic,
    /// ATMC's friction sign φ: +1 correct, −1 as printed, 0 friction-free.
    #[serde(
        default = "d_one",
        deserialize_with = "crate::math::ranges::de_friction_sign"
    )]
    pub friction_sign: f64,
    /// ATMC's thermostat update.
    #[serde(default = "d_xi_update")]
    pub xi_update: XiUpdate,
    /// ATMC's noise mass factor.
    #[serde(default = "d_noise_mass")]
    pub noise_mass: NoiseMass,
    /// SGHMC friction C.
    #[serde(
        default = "d_one",
        deserialize_with = "crate::math::ranges::de_friction"
    )]
    pub sghmc_friction: f64,
    /// SGHMC gradient-noise estimate B̂ (0 ≤ B̂ ≤ C).
    #[serde(default, deserialize_with = "crate::math::ranges::de_friction")]
    pub sghmc_noise_estimate: f64,
    /// SGNHT diffusion A.
    #[serde(
        default = "d_one",
        deserialize_with = "crate::math::ranges::de_friction"
    )]
    pub sgnht_diffusion: f64,
    /// SGNHT with one ξ shared by all coordinates (the paper) instead of one per coordinate.
    #[serde(default)]
    pub sgnht_shared_xi: bool,
    /// SGD's heavy-ball momentum μ ∈ [0, 1) (0: plain SGD): v ← μv − h g̃, θ ← θ + v, with the
    /// velocity v kept in the chain's p (MATH.md §5.3).
    /// Left out of the serialised preset at 0, so that a sweep's hash (over its serialised
    /// base) is what it was before momentum existed and half-run sweeps resume.
    #[serde(
        default,
        deserialize_with = "crate::math::ranges::de_momentum",
        skip_serializing_if = "is_zero"
    )]
    pub sgd_momentum: f64,
    /// HMC's leapfrog steps L per proposal (MATH.md §10). Left out of the serialised preset
    /// at its default, as `sgd_momentum` is, so that sweeps hashed before HMC resume.
    #[serde(
        default = "d_leapfrog_steps",
        deserialize_with = "crate::math::ranges::de_leapfrog_steps",
        skip_serializing_if = "is_default_leapfrog_steps"
    )]
    pub leapfrog_steps: u32,
    /// HMC: adapt h during the warm-up (the first half of the steps, whose draws are not
    /// used) by dual averaging toward this acceptance rate, then freeze it (MATH.md §10).
    /// Absent: h as given.
    #[serde(
        default,
        deserialize_with = "crate::math::ranges::de_target_acceptance",
        skip_serializing_if = "Option::is_none"
    )]
    pub target_acceptance: Option<f64>,
    /// A chain diverges when |p| exceeds this (or anything is non-finite).
    #[serde(
        default = "d_bound",
        deserialize_with = "crate::math::ranges::de_divergence_bound"
    )]
    pub divergence_bound: f64,
}

fn d_h() -> f64 {
    0.05
}

/// Whether a serialised number is 0 (serde's `skip_serializing_if`).
fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// HMC draws each proposal's step size uniformly in h (1 ± this) (Neal 2011, §5.4.2.2).
pub const HMC_STEP_JITTER: f32 = 0.2;

/// An HMC trajectory whose H grew by more than this (or is not finite) counts as divergent
/// (MATH.md §10); the test rejects it in any case.
pub const HMC_DIVERGENCE: f32 = 1000.0;

/// HMC's default number of leapfrog steps.
pub const DEFAULT_LEAPFROG_STEPS: u32 = 10;

fn d_leapfrog_steps() -> u32 {
    DEFAULT_LEAPFROG_STEPS
}

fn is_default_leapfrog_steps(v: &u32) -> bool {
    *v == DEFAULT_LEAPFROG_STEPS
}

fn d_one() -> f64 {
    1.0
}
fn d_kinetic() -> Kinetic {
    Kinetic::Gaussian
}
fn d_xi_update() -> XiUpdate {
    XiUpdate::Accumulate
}
fn d_noise_mass() -> NoiseMass {
    NoiseMass::With
}
fn d_bound() -> f64 {
    1e6
}

impl Default for SamplerSpec {
    fn default() -> Self {
        Self::new(SamplerKind::Atmc)
    }
}

impl SamplerSpec {
    /// The defaults of a sampler: corrected ATMC settings, h = 0.05, m = D = T = 1.
    pub fn new(kind: SamplerKind) -> Self {
        Self {
            kind,
            h: d_h(),
            mass: 1.0,
            friction_floor: 1.0,
            temperature: 1.0,
            kinetic: Kinetic::Gaussian,
            friction_sign: 1.0,
            xi_update: XiUpdate::Accumulate,
            noise_mass: NoiseMass::With,
            sghmc_friction: 1.0,
            sghmc_noise_estimate: 0.0,
            sgnht_diffusion: 1.0,
            sgnht_shared_xi: false,
            sgd_momentum: 0.0,
            leapfrog_steps: DEFAULT_LEAPFROG_STEPS,
            target_acceptance: None,
            divergence_bound: d_bound(),
        }
    }

    /// Checks constraints between fields that single ranges cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.kind == SamplerKind::Sghmc && self.sghmc_noise_estimate > self.sghmc_friction {
            return Err(format!(
                "sghmc_noise_estimate B̂ = {} exceeds sghmc_friction C = {}: SGHMC needs 0 ≤ B̂ ≤ C",
                self.sghmc_noise_estimate, self.sghmc_friction
            ));
        }
        if self.kind == SamplerKind::Hmc && self.temperature <= 0.0 {
            return Err(format!(
                "temperature T = {} with HMC: its Metropolis test divides by T, which must be > 0 \
                 (T = 0 is optimisation, not sampling: choose SGD)",
                self.temperature
            ));
        }
        Ok(())
    }

    /// Flips ATMC's friction sign between +1 (correct) and −1 (as printed); an intermediate
    /// φ goes to −1.
    pub fn flip_friction_sign(&mut self) {
        self.friction_sign = if self.friction_sign > 0.0 { -1.0 } else { 1.0 };
    }

    /// What the kinetic temperature ⟨p K'(p)⟩ settles at: T for the samplers that inject noise
    /// at temperature T, but 1 for HMC, whose temperature divides U and leaves the momentum
    /// N(0, m) (MATH.md §10).
    pub fn kinetic_target(&self) -> f64 {
        if self.kind == SamplerKind::Hmc {
            1.0
        } else {
            self.temperature
        }
    }

    /// Whether any of ATMC's printed defects is switched on.
    pub fn has_printed_defect(&self) -> bool {
        self.kind == SamplerKind::Atmc
            && (self.friction_sign != 1.0
                || self.xi_update == XiUpdate::Overwrite
                || self.noise_mass == NoiseMass::Without)
    }

    /// The runtime parameters.
    pub fn params(&self) -> SamplerParams {
        SamplerParams {
            kind: self.kind,
            h: self.h as f32,
            mass: self.mass as f32,
            inv_mass: (1.0 / self.mass) as f32,
            friction_floor: self.friction_floor as f32,
            temperature: self.temperature as f32,
            // Only ATMC offers the hyperbolic kinetic energy.
            speed: match (self.kind, self.kinetic) {
                (SamplerKind::Atmc, Kinetic::Hyperbolic { c }) => c as f32,
                _ => 0.0,
            },
            friction_sign: self.friction_sign as f32,
            xi_overwrite: self.xi_update == XiUpdate::Overwrite,
            noise_mass: if self.noise_mass == NoiseMass::With {
                self.mass as f32
            } else {
                1.0
            },
            sghmc_friction: self.sghmc_friction as f32,
            sghmc_noise_estimate: self.sghmc_noise_estimate as f32,
            sgnht_diffusion: self.sgnht_diffusion as f32,
            sgnht_shared_xi: self.sgnht_shared_xi,
            // Only SGD has a heavy-ball momentum: another sampler's p is its own.
            sgd_momentum: if self.kind == SamplerKind::Sgd {
                self.sgd_momentum as f32
            } else {
                0.0
            },
            leapfrog_steps: self.leapfrog_steps,
            divergence_bound: self.divergence_bound as f32,
            theta_bound: f32::MAX,
        }
    }
}

/// What one step of a schedule does (MATH.md §3): its step size, the temperature the
/// thermostat aims at, the temperature of the injected noise, and whether the thermostat is
/// frozen. Both engines compute it from the same integers (`step_phase` in the WGSL).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepPhase {
    /// Step size h of this step.
    pub h: f32,
    /// Temperature the thermostats drive the kinetic temperature to: T, or 0 while a cyclical
    /// schedule explores with its thermostat running (the ratchet of MATH.md §3.1).
    pub temperature: f32,
    /// Temperature of the injected noise: T while sampling, 0 while a cyclical schedule
    /// explores.
    pub noise_temperature: f32,
    /// A cyclical schedule's exploration stage: no injected noise.
    pub exploring: bool,
    /// The thermostat ξ is not updated: while exploring, unless the schedule lets it run.
    pub thermostat_frozen: bool,
}

/// Sampler parameters in the f32 form both engines use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplerParams {
    /// Which sampler.
    pub kind: SamplerKind,
    /// Peak step size h₀.
    pub h: f32,
    /// Mass m.
    pub mass: f32,
    /// 1/m: multiplications keep divisions off the step's critical path.
    pub inv_mass: f32,
    /// Friction floor D.
    pub friction_floor: f32,
    /// Temperature T.
    pub temperature: f32,
    /// Speed limit c of the hyperbolic kinetic energy; 0 selects the Gaussian one.
    pub speed: f32,
    /// Friction sign φ.
    pub friction_sign: f32,
    /// Thermostat overwrite (printed) instead of accumulate.
    pub xi_overwrite: bool,
    /// The mass factor of ATMC's injected noise: m (correct) or 1 (printed).
    pub noise_mass: f32,
    /// SGHMC C.
    pub sghmc_friction: f32,
    /// SGHMC B̂.
    pub sghmc_noise_estimate: f32,
    /// SGNHT A.
    pub sgnht_diffusion: f32,
    /// SGNHT with a shared ξ.
    pub sgnht_shared_xi: bool,
    /// SGD's heavy-ball momentum μ (0 for the other samplers).
    pub sgd_momentum: f32,
    /// HMC's leapfrog steps L per proposal.
    pub leapfrog_steps: u32,
    /// Divergence bound on |p|.
    pub divergence_bound: f32,
    /// Divergence bound on |θ|: a thousand times the target's own scale, set with the target
    /// ([`crate::math::Target::theta_bound`]), so that a chain running away in position is
    /// caught even while its momentum stays below the bound.
    pub theta_bound: f32,
}

impl SamplerParams {
    /// The step size, temperatures and thermostat state at global step `step` (MATH.md §3):
    /// in a cyclical schedule's exploration stage no noise is injected and the thermostat is
    /// frozen. With [`Schedule::thermostat_running`] the thermostat instead keeps running
    /// toward the stage's temperature 0, which ratchets ξ up every cycle (MATH.md §3.1: the
    /// switch shows what goes wrong).
    #[inline(always)]
    pub fn phase(&self, schedule: &Schedule, step: u32) -> StepPhase {
        let (h, exploring) = schedule.at(self.h, step);
        let running = exploring && schedule.thermostat_running;
        StepPhase {
            h,
            temperature: if running { 0.0 } else { self.temperature },
            noise_temperature: if exploring { 0.0 } else { self.temperature },
            exploring,
            thermostat_frozen: exploring && !schedule.thermostat_running,
        }
    }

    /// ATMC's splitting (MATH.md §1) up to the gradient, for one coordinate: half a θ step
    /// and half a thermostat step. Returns the relativistic factor s at the old p, which the
    /// O-step freezes (1 for Gaussian K).
    #[inline(always)]
    pub fn atmc_first_half<R: Real>(&self, theta: &mut R, p: R, xi: &mut R, phase: StepPhase) -> R {
        let (k1, k2, s) = kinetic_derivatives(p, self.mass, self.inv_mass, self.speed);
        *theta += k1 * (0.5 * phase.h);
        *xi = self.thermostat_half_step(*xi, k1, k2, phase);
        s
    }

    /// ATMC after the gradient g̃, for one coordinate: the exact OU momentum step with the
    /// friction sign φ (MATH.md §2) and noise z ~ N(0, 1), then half a thermostat step and
    /// half a θ step.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn atmc_second_half<R: Real>(
        &self,
        theta: &mut R,
        p: &mut R,
        xi: &mut R,
        s: R,
        g: R,
        z: R,
        phase: StepPhase,
    ) {
        let (h, t) = (phase.h, phase.noise_temperature);
        let beta = xi.max(R::splat(self.friction_floor));
        let alpha = (-*xi + self.friction_floor).max(R::splat(0.0));
        // Exact OU step with friction φβ/s (s frozen over the step for hyperbolic K).
        let mut x = beta * (self.friction_sign * h);
        if self.speed != 0.0 {
            x = x / s;
        }
        let decay = (-x).exp();
        let drift = one_minus_exp_neg_over_x(x, decay) * h;
        let variance = alpha
            * (2.0 * self.noise_mass * t * h)
            * one_minus_exp_neg_over_x(x * 2.0, decay * decay);
        *p = decay * *p - drift * g + variance.sqrt() * z;
        let (k1, k2, _) = kinetic_derivatives(*p, self.mass, self.inv_mass, self.speed);
        *xi = self.thermostat_half_step(*xi, k1, k2, phase);
        *theta += k1 * (0.5 * h);
    }

    /// Half a thermostat step, ξ += (h/2) m (K'² − T K''), or the printed overwrite
    /// ξ = h m (K'² − T K''); ξ unchanged while the phase freezes the thermostat.
    #[inline(always)]
    fn thermostat_half_step<R: Real>(&self, xi: R, k1: R, k2: R, phase: StepPhase) -> R {
        if phase.thermostat_frozen {
            return xi;
        }
        let heat = (k1 * k1 - k2 * phase.temperature) * self.mass;
        if self.xi_overwrite {
            heat * phase.h
        } else {
            xi + heat * (0.5 * phase.h)
        }
    }

    /// The friction β = max(D, ξ) that ATMC's next O-step applies to a coordinate in state
    /// (p, ξ): ξ after the step's first half thermostat step (constant schedule).
    pub fn o_step_friction(&self, p: f32, xi: f32) -> f32 {
        let phase = StepPhase {
            h: self.h,
            temperature: self.temperature,
            noise_temperature: self.temperature,
            exploring: false,
            thermostat_frozen: false,
        };
        let (mut theta, mut xi) = (0.0f32, xi);
        self.atmc_first_half(&mut theta, p, &mut xi, phase);
        xi.max(self.friction_floor)
    }

    /// SGLD: θ ← θ − h g̃ + sqrt(2hT) z.
    #[inline(always)]
    pub fn sgld_update<R: Real>(&self, theta: &mut R, g: R, z: R, phase: StepPhase) {
        let (h, t) = (phase.h, phase.noise_temperature);
        *theta += g * -h + z * (2.0 * h * t).sqrt();
    }

    /// SGHMC: p ← p − h g̃ − h C p/m + sqrt(2(C − B̂) h T) z; θ ← θ + h p/m.
    #[inline(always)]
    pub fn sghmc_update<R: Real>(&self, theta: &mut R, p: &mut R, g: R, z: R, phase: StepPhase) {
        let (h, t) = (phase.h, phase.noise_temperature);
        let scale = (2.0 * (self.sghmc_friction - self.sghmc_noise_estimate) * h * t)
            .max(0.0)
            .sqrt();
        let old = *p;
        *p = old - g * h - old * (h * self.sghmc_friction) * self.inv_mass + z * scale;
        *theta += *p * h * self.inv_mass;
    }

    /// SGNHT's momentum and position: p ← p − h g̃ − h ξ p + sqrt(2AhT) z; θ ← θ + h p/m.
    /// Returns this coordinate's heat p²/m − T for [`Self::sgnht_thermostat`] (averaged
    /// first when ξ is shared).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn sgnht_update<R: Real>(
        &self,
        theta: &mut R,
        p: &mut R,
        xi: R,
        g: R,
        z: R,
        phase: StepPhase,
    ) -> R {
        let h = phase.h;
        let scale = (2.0 * self.sgnht_diffusion * h * phase.noise_temperature).sqrt();
        let old = *p;
        *p = old - g * h - xi * h * old + z * scale;
        *theta += *p * h * self.inv_mass;
        *p * *p * self.inv_mass - phase.temperature
    }

    /// SGNHT's thermostat: ξ ← ξ + h · heat; unchanged while the phase freezes it.
    #[inline(always)]
    pub fn sgnht_thermostat<R: Real>(&self, xi: R, heat: R, phase: StepPhase) -> R {
        if phase.thermostat_frozen {
            xi
        } else {
            xi + heat * phase.h
        }
    }

    /// Plain SGD: θ ← θ − h g̃.
    #[inline(always)]
    pub fn sgd_update<R: Real>(&self, theta: &mut R, g: R, phase: StepPhase) {
        *theta -= g * phase.h;
    }

    /// SGD with heavy-ball momentum μ (MATH.md §5.3): v ← μv − h g̃, θ ← θ + v, the velocity
    /// v held in p (it starts at 0: SGD has no momentum draw). At μ = 0 the callers take
    /// [`Self::sgd_update`] instead, so plain SGD leaves p alone and stays bit for bit as it was.
    #[inline(always)]
    pub fn sgd_momentum_update<R: Real>(&self, theta: &mut R, v: &mut R, g: R, phase: StepPhase) {
        *v = *v * self.sgd_momentum - g * phase.h;
        *theta += *v;
    }

    /// Whether one coordinate is diverged: non-finite ξ, |p| above its bound or |θ| above
    /// its bound (non-finite values included).
    #[inline(always)]
    pub fn coordinate_diverged(&self, theta: f32, p: f32, xi: f32) -> bool {
        // `<=` is false for NaN.
        !(p.abs() <= self.divergence_bound && theta.abs() <= self.theta_bound && xi.is_finite())
    }

    /// p K'(p) for one coordinate: its mean is the kinetic temperature.
    #[inline(always)]
    pub fn kinetic_heat(&self, p: f32) -> f32 {
        p * kinetic_derivatives(p, self.mass, self.inv_mass, self.speed).0
    }
}

/// State of a 2-D chain, or of lanes of chains when `R` is [`Lanes`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ChainOf<R> {
    /// Position θ.
    pub theta: [R; 2],
    /// Momentum p.
    pub p: [R; 2],
    /// Thermostat ξ.
    pub xi: [R; 2],
}

/// State of one 2-D chain.
pub type Chain2 = ChainOf<f32>;

impl<const N: usize> ChainOf<Lanes<N>> {
    /// Lane `l` as a single chain.
    #[inline(always)]
    pub fn get(&self, l: usize) -> Chain2 {
        Chain2 {
            theta: self.theta.map(|v| v.0[l]),
            p: self.p.map(|v| v.0[l]),
            xi: self.xi.map(|v| v.0[l]),
        }
    }

    /// Sets lane `l` to a single chain.
    #[inline(always)]
    pub fn set(&mut self, l: usize, c: &Chain2) {
        for k in 0..2 {
            self.theta[k].0[l] = c.theta[k];
            self.p[k].0[l] = c.p[k];
            self.xi[k].0[l] = c.xi[k];
        }
    }
}

/// (1 − e^{−x})/x given e^{−x}, accurate for small |x| (a Taylor series where 1 − e^{−x}
/// would cancel), and 1 at x = 0: the friction-free limit. Written without `expm1` because
/// WGSL has none; the shader uses the same selection and coefficients.
#[inline(always)]
pub fn one_minus_exp_neg_over_x<R: Real>(x: R, exp_neg_x: R) -> R {
    // 1 − x/2 + x²/6 − x³/24 + x⁴/120 − x⁵/720 + x⁶/5040: error < x⁷/40320 < 2e-9.
    let series = x
        * (x * (x
            * (x * (x * (x * (1.0 / 5040.0) + (-1.0 / 720.0)) + 1.0 / 120.0) + (-1.0 / 24.0))
            + 1.0 / 6.0)
            + (-1.0 / 2.0))
        + 1.0;
    let closed = (-exp_neg_x + 1.0) / x;
    x.abs().select_lt(R::splat(0.25), series, closed)
}

/// K'(p) and K''(p) for the kinetic energy with speed limit `speed` (0: Gaussian), and the
/// relativistic factor s = sqrt(1 + p²/(m²c²)) (1 for Gaussian).
#[inline(always)]
pub fn kinetic_derivatives<R: Real>(p: R, mass: f32, inv_mass: f32, speed: f32) -> (R, R, R) {
    if speed == 0.0 {
        (p * inv_mass, R::splat(inv_mass), R::splat(1.0))
    } else {
        let q = p / (mass * speed);
        let s = (q * q + 1.0).sqrt();
        (p / (s * mass), R::splat(1.0) / (s * mass * s * s), s)
    }
}

/// The positions one HMC proposal passed through, its start first, and the test's verdict.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeapfrogPath {
    /// θ at the start and after each leapfrog step.
    pub points: Vec<[f32; 2]>,
    /// Whether the Metropolis test kept the end point.
    pub accepted: bool,
}

/// The runtime model: sampler, target, gradient noise and schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// Sampler parameters.
    pub sampler: SamplerParams,
    /// Target posterior.
    pub target: Target,
    /// Synthetic gradient noise.
    pub noise: NoiseModel,
    /// Step-size schedule.
    pub schedule: Schedule,
}

impl Model {
    /// g̃ = ∇L(θ) (minibatched for data targets) + synthetic noise (MATH.md §4).
    #[inline(always)]
    pub fn stochastic_gradient<R: Real, G: StepRng<R>>(&self, theta: [R; 2], rng: &G) -> [R; 2] {
        let mut g = self.target.gradient(theta, rng);
        if self.noise.is_active() {
            let z = rng.normal2(Stream::GradientNoise, 0);
            let s = self.noise.sigma_at(theta);
            g[0] += s[0] * z[0];
            g[1] += s[1] * z[1];
        }
        g
    }

    /// Advances one chain by one step (global step index `rng.step`). Returns `true` when
    /// the chain diverged during this step (MATH.md §2): the caller freezes it.
    #[inline(always)]
    pub fn step(&self, chain: &mut Chain2, rng: &RngCounter) -> bool {
        self.advance(chain, rng);
        self.is_diverged(chain)
    }

    /// One step of one chain or of lanes of chains. The formulas live in the per-coordinate
    /// updates of [`SamplerParams`], shared with the MLP posteriors; this only orders them
    /// around the stochastic gradient. Divergence is the caller's to check.
    #[inline(always)]
    pub fn advance<R: Real, G: StepRng<R>>(&self, chain: &mut ChainOf<R>, rng: &G) {
        let sp = &self.sampler;
        let phase = sp.phase(&self.schedule, rng.step());
        let c = chain;
        match sp.kind {
            SamplerKind::Atmc => {
                let mut s = [R::splat(1.0); 2];
                for k in 0..2 {
                    s[k] = sp.atmc_first_half(&mut c.theta[k], c.p[k], &mut c.xi[k], phase);
                }
                let g = self.stochastic_gradient(c.theta, rng);
                let z = rng.normal2(Stream::Injected, 0);
                for k in 0..2 {
                    let (theta, p, xi) = (&mut c.theta[k], &mut c.p[k], &mut c.xi[k]);
                    sp.atmc_second_half(theta, p, xi, s[k], g[k], z[k], phase);
                }
            }
            SamplerKind::Sgld => {
                let g = self.stochastic_gradient(c.theta, rng);
                let z = rng.normal2(Stream::Injected, 0);
                for k in 0..2 {
                    sp.sgld_update(&mut c.theta[k], g[k], z[k], phase);
                }
            }
            SamplerKind::Sghmc => {
                let g = self.stochastic_gradient(c.theta, rng);
                let z = rng.normal2(Stream::Injected, 0);
                for k in 0..2 {
                    sp.sghmc_update(&mut c.theta[k], &mut c.p[k], g[k], z[k], phase);
                }
            }
            SamplerKind::Sgnht => {
                let g = self.stochastic_gradient(c.theta, rng);
                let z = rng.normal2(Stream::Injected, 0);
                let mut heat = [R::splat(0.0); 2];
                for k in 0..2 {
                    heat[k] =
                        sp.sgnht_update(&mut c.theta[k], &mut c.p[k], c.xi[k], g[k], z[k], phase);
                }
                if sp.sgnht_shared_xi {
                    let mean = (heat[0] + heat[1]) * 0.5;
                    heat = [mean, mean];
                }
                for k in 0..2 {
                    c.xi[k] = sp.sgnht_thermostat(c.xi[k], heat[k], phase);
                }
            }
            SamplerKind::Hmc => self.hmc_iteration(c, rng, |_| {}),
            SamplerKind::Sgd => {
                let g = self.stochastic_gradient(c.theta, rng);
                for k in 0..2 {
                    if sp.sgd_momentum == 0.0 {
                        sp.sgd_update(&mut c.theta[k], g[k], phase);
                    } else {
                        sp.sgd_momentum_update(&mut c.theta[k], &mut c.p[k], g[k], phase);
                    }
                }
            }
        }
    }

    /// One HMC iteration (MATH.md §10): a fresh momentum p ~ N(0, m), L leapfrog steps of a
    /// size drawn uniformly in h (1 ± [`HMC_STEP_JITTER`]) on H = U/T + |p|²/(2m), and the
    /// Metropolis test on H. `visit` sees the position after each leapfrog step (the app
    /// draws the trajectory). A rejected proposal leaves θ where it was with the fresh
    /// momentum. ξ₀ records the outcome (1 accepted, 0 rejected) and ξ₁ whether the
    /// trajectory diverged (H not finite or grown by more than [`HMC_DIVERGENCE`]): the
    /// engines' mean ξ per coordinate are the acceptance and divergence rates.
    ///
    /// The preset gives HMC the full-batch gradient without synthetic noise
    /// ([`crate::preset::Preset::model_on`]); were the force noisy, the same noise would
    /// enter every leapfrog step of an iteration (the counter has no leapfrog index), so the
    /// map would stay reversible and the test exact.
    #[inline(always)]
    pub fn hmc_iteration<R: Real, G: StepRng<R>>(
        &self,
        c: &mut ChainOf<R>,
        rng: &G,
        mut visit: impl FnMut(&[R; 2]),
    ) {
        let sp = &self.sampler;
        let [u_accept, u_jitter] = rng.uniform2(Stream::Metropolis, 0);
        // The step size is drawn before the trajectory and independently of the state: the
        // proposal stays reversible, and no fixed trajectory length hL can resonate with the
        // target's own period (which mixes a Gaussian direction not at all at ωhL = 2π).
        let jitter = (u_jitter * 2.0 - 1.0) * HMC_STEP_JITTER + 1.0;
        let h = jitter * sp.phase(&self.schedule, rng.step()).h;
        let z = rng.normal2(Stream::Injected, 0);
        let sd = sp.mass.sqrt();
        let p0 = [z[0] * sd, z[1] * sd];
        let (mut theta, mut p) = (c.theta, p0);
        // The force of U/T: the half kick carries the 1/T.
        let (half, drift) = (h * (0.5 / sp.temperature), h * sp.inv_mass);
        let mut g = self.stochastic_gradient(theta, rng);
        for _ in 0..sp.leapfrog_steps {
            for k in 0..2 {
                p[k] -= g[k] * half;
                theta[k] += p[k] * drift;
            }
            g = self.stochastic_gradient(theta, rng);
            for k in 0..2 {
                p[k] -= g[k] * half;
            }
            visit(&theta);
        }
        let kinetic = |p: &[R; 2]| (p[0] * p[0] + p[1] * p[1]) * (0.5 * sp.inv_mass);
        let delta_h = self.energy_change(c.theta, theta) * (1.0 / sp.temperature) + kinetic(&p)
            - kinetic(&p0);
        // Accept when ln u < −ΔH: a NaN ΔH compares false and is rejected.
        let ln_u = u_accept.ln();
        let (one, zero) = (R::splat(1.0), R::splat(0.0));
        for k in 0..2 {
            c.theta[k] = ln_u.select_lt(-delta_h, theta[k], c.theta[k]);
            c.p[k] = ln_u.select_lt(-delta_h, p[k], p0[k]);
        }
        c.xi[0] = ln_u.select_lt(-delta_h, one, zero);
        // Divergent unless ΔH is finite and at most the bound (NaN and ∞ fail the test).
        c.xi[1] = delta_h.select_lt(R::splat(HMC_DIVERGENCE), zero, one);
    }

    /// U(to) − U(from) per lane, from the target's f64 energy (the GPU's `target_energy`
    /// computes it in f32: a rare test near its threshold may go the other way there).
    #[inline(always)]
    fn energy_change<R: Real>(&self, from: [R; 2], to: [R; 2]) -> R {
        R::from_fn(|l| {
            let u = |t: [R; 2]| {
                self.target
                    .neg_log_density([f64::from(t[0].lane(l)), f64::from(t[1].lane(l))])
            };
            (u(to) - u(from)) as f32
        })
    }

    /// One HMC iteration's leapfrog trajectory for a chain at its state before step
    /// `rng.step`, and whether the test accepted it: the picture of HMC the app draws for
    /// highlighted chains.
    pub fn leapfrog_path(&self, chain: &Chain2, rng: &RngCounter) -> LeapfrogPath {
        let mut points = vec![chain.theta];
        let mut c = *chain;
        self.hmc_iteration(&mut c, rng, |t| points.push(*t));
        LeapfrogPath {
            points,
            accepted: c.xi[0] == 1.0,
        }
    }

    /// Replays `steps` steps of chain `index` from `chain` at global step `step0` (the same
    /// random numbers as the engines draw), calling `visit` with the step count and the
    /// state after every step; stops at a divergence and returns its step count. The engines
    /// advance many steps per call; this gives the states in between for a few chains.
    pub fn replay(
        &self,
        chain: &mut Chain2,
        seed: u64,
        index: u32,
        step0: u32,
        steps: u32,
        mut visit: impl FnMut(u32, &Chain2),
    ) -> Option<u32> {
        for k in 0..steps {
            let step = step0.wrapping_add(k);
            let diverged = self.step(chain, &RngCounter::new(seed, index, step));
            visit(step + 1, chain);
            if diverged {
                return Some(step + 1);
            }
        }
        None
    }

    /// A chain is diverged when anything is non-finite or |p| exceeds the bound.
    #[inline(always)]
    pub fn is_diverged(&self, chain: &Chain2) -> bool {
        (0..2).any(|c| {
            self.sampler
                .coordinate_diverged(chain.theta[c], chain.p[c], chain.xi[c])
        })
    }

    /// p K'(p) per coordinate: its mean over chains is the kinetic temperature.
    #[inline(always)]
    pub fn kinetic_heat(&self, p: f32) -> f32 {
        self.sampler.kinetic_heat(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HMC's temperature divides U: its momentum stays N(0, m), so its kinetic temperature
    /// settles at 1 where the noise-injecting samplers' settles at T.
    #[test]
    fn the_kinetic_temperature_target_is_one_for_hmc_and_t_otherwise() {
        for (kind, want) in [(SamplerKind::Hmc, 1.0), (SamplerKind::Atmc, 0.25)] {
            let mut s = SamplerSpec::new(kind);
            s.temperature = 0.25;
            assert_eq!(s.kinetic_target(), want, "{kind:?}");
        }
    }

    /// MATH.md §3: while a cyclical schedule explores, every thermostat keeps its value and
    /// no sampler injects noise (the update does not depend on z); while it samples, both act.
    #[test]
    fn exploration_freezes_the_thermostat_and_injects_no_noise() {
        let schedule = crate::math::ScheduleSpec::Cyclical {
            total_steps: 100,
            cycles: 2,
            explore_fraction: 0.5,
            thermostat_while_exploring: crate::math::ExploringThermostat::Frozen,
        }
        .schedule();
        for kind in [
            SamplerKind::Atmc,
            SamplerKind::Sgld,
            SamplerKind::Sghmc,
            SamplerKind::Sgnht,
        ] {
            let sp = SamplerSpec::new(kind).params();
            for (step, exploring) in [(3, true), (30, false)] {
                let phase = sp.phase(&schedule, step);
                assert_eq!(phase.exploring, exploring);
                assert!(phase.h > 0.0);
                // One coordinate with a hot momentum, stepped with two noise draws.
                let run = |z: f32| {
                    let (mut theta, mut p, mut xi) = (0.4f32, 2.5f32, 0.3f32);
                    match kind {
                        SamplerKind::Atmc => {
                            let s = sp.atmc_first_half(&mut theta, p, &mut xi, phase);
                            sp.atmc_second_half(&mut theta, &mut p, &mut xi, s, 0.7, z, phase);
                        }
                        SamplerKind::Sgld => sp.sgld_update(&mut theta, 0.7, z, phase),
                        SamplerKind::Sghmc => {
                            sp.sghmc_update(&mut theta, &mut p, 0.7, z, phase);
                        }
                        _ => {
                            let heat = sp.sgnht_update(&mut theta, &mut p, xi, 0.7, z, phase);
                            xi = sp.sgnht_thermostat(xi, heat, phase);
                        }
                    }
                    (theta, p, xi)
                };
                let (a, b) = (run(1.0), run(-1.0));
                assert_eq!(
                    a == b,
                    exploring,
                    "{kind:?} at step {step}: noise {a:?} {b:?}"
                );
                if kind.has_thermostat() {
                    assert_eq!(a.2 == 0.3, exploring, "{kind:?} at step {step}: ξ {}", a.2);
                }
            }
        }
    }

    /// MATH.md §3.1: with the thermostat left running while exploring, ξ still moves in the
    /// exploration stage, toward temperature 0, so it can only grow (the ratchet); no noise
    /// is injected either way, and the sampling stage is unchanged by the switch.
    #[test]
    fn a_running_thermostat_ratchets_up_while_exploring() {
        use crate::math::ExploringThermostat;
        let spec = |thermostat_while_exploring| crate::math::ScheduleSpec::Cyclical {
            total_steps: 100,
            cycles: 2,
            explore_fraction: 0.5,
            thermostat_while_exploring,
        };
        let running = spec(ExploringThermostat::Running).schedule();
        let frozen = spec(ExploringThermostat::Frozen).schedule();
        for kind in [SamplerKind::Atmc, SamplerKind::Sgnht] {
            let sp = SamplerSpec::new(kind).params();
            for (step, exploring) in [(3, true), (30, false)] {
                let phase = sp.phase(&running, step);
                assert_eq!(phase.exploring, exploring);
                assert!(!phase.thermostat_frozen);
                assert_eq!(phase.temperature, if exploring { 0.0 } else { 1.0 });
                if !exploring {
                    assert_eq!(phase, sp.phase(&frozen, step));
                }
                // A cold momentum (p² < T): a thermostat aiming at T = 1 would lower ξ.
                let run = |z: f32| {
                    let (mut theta, mut p, mut xi) = (0.4f32, 0.5f32, 0.3f32);
                    if kind == SamplerKind::Atmc {
                        let s = sp.atmc_first_half(&mut theta, p, &mut xi, phase);
                        sp.atmc_second_half(&mut theta, &mut p, &mut xi, s, 0.7, z, phase);
                    } else {
                        let heat = sp.sgnht_update(&mut theta, &mut p, xi, 0.7, z, phase);
                        xi = sp.sgnht_thermostat(xi, heat, phase);
                    }
                    (theta, p, xi)
                };
                let (a, b) = (run(1.0), run(-1.0));
                assert_eq!(a == b, exploring, "{kind:?} at step {step}");
                assert_eq!(a.2 > 0.3, exploring, "{kind:?} at step {step}: ξ {}", a.2);
            }
        }
    }

    #[test]
    fn series_and_closed_form_agree_at_the_switch() {
        for x in [0.2499f32, 0.2501, -0.2499, -0.2501] {
            let v = one_minus_exp_neg_over_x(x, (-x).exp());
            let exact = (-f64::from(x)).exp_m1() / -f64::from(x);
            assert!((f64::from(v) - exact).abs() < 2e-7, "{x}: {v} vs {exact}");
        }
        assert_eq!(one_minus_exp_neg_over_x(0.0, 1.0), 1.0);
        let x = 1e-6f32;
        assert!((one_minus_exp_neg_over_x(x, (-x).exp()) - (1.0 - 5e-7)).abs() < 1e-7);
    }

    #[test]
    fn hyperbolic_velocity_is_bounded() {
        for p in [0.0f32, 1.0, 1e3, 1e8] {
            let (k1, k2, s) = kinetic_derivatives(p, 2.0, 0.5, 0.5);
            assert!(k1 <= 0.5 + 1e-6 && k2 > 0.0 && s >= 1.0);
        }
        assert_eq!(kinetic_derivatives(3.0, 2.0, 0.5, 0.0), (1.5, 0.5, 1.0));
    }
}
