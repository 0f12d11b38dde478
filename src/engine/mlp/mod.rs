//! Engines for Bayesian MLP posteriors: thousands of small networks, one per chain, stepped
//! by the same samplers as the 2-D chains, behind one interface. [`cpu::MlpCpuEngine`] runs
//! `math::mlp` on every core and is the oracle the GPU engine ([`gpu::MlpGpuEngine`]) is
//! tested against; [`super::create_mlp_engine`] picks one.

pub mod cpu;
pub mod gpu;

pub use cpu::MlpCpuEngine;

use super::BackendInfo;
use crate::math::mlp::{MlpInit, MlpModel};

/// Most weight layers whose statistics a report carries (3 hidden layers and the output).
pub const MAX_LAYERS: usize = 4;

/// Statistics of one weight layer over the alive chains.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerStats {
    /// Mean of p K'(p) over the layer's parameters: the kinetic temperature (target T).
    pub kinetic_temperature: f64,
    /// Mean thermostat ξ.
    pub mean_xi: f64,
}

/// What a caller gets after advancing the networks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MlpReport {
    /// Steps done since the start (or the last reset).
    pub step: u32,
    /// Chains still alive.
    pub alive: u64,
    /// Chains diverged (frozen).
    pub diverged: u64,
    /// Per weight layer, input side first.
    pub layers: Vec<LayerStats>,
    /// Over all parameters.
    pub overall: LayerStats,
}

impl MlpReport {
    /// Builds a report from per-layer sums (Σ heat, Σ ξ) over the alive chains.
    pub(crate) fn from_sums(
        step: u32,
        alive: u64,
        diverged: u64,
        sums: &[[f64; 2]],
        sizes: &[usize],
    ) -> Self {
        let mut layers = Vec::with_capacity(sizes.len());
        let (mut heat, mut xi, mut params) = (0.0, 0.0, 0.0);
        for (s, &n) in sums.iter().zip(sizes) {
            let count = (alive as f64 * n as f64).max(1.0);
            layers.push(LayerStats {
                kinetic_temperature: s[0] / count,
                mean_xi: s[1] / count,
            });
            heat += s[0];
            xi += s[1];
            params += n as f64;
        }
        let count = (alive as f64 * params).max(1.0);
        Self {
            step,
            alive,
            diverged,
            layers,
            overall: LayerStats {
                kinetic_temperature: heat / count,
                mean_xi: xi / count,
            },
        }
    }
}

/// θ, p and ξ of one parameter across all chains.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParameterStates {
    /// θ per chain.
    pub theta: Vec<f32>,
    /// p per chain.
    pub p: Vec<f32>,
    /// ξ per chain.
    pub xi: Vec<f32>,
    /// Step at which each chain diverged (0 while alive).
    pub diverged_at: Vec<u32>,
}

/// The posterior predictive at a list of points.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prediction {
    /// Classes per point.
    pub classes: usize,
    /// Mean class probabilities over the chains, row-major points × classes.
    pub mean: Vec<f32>,
    /// Mean squared class probabilities (their spread across chains is
    /// sqrt(mean_square − mean²)).
    pub mean_square: Vec<f32>,
    /// The focus chain's own class probabilities.
    pub focus: Vec<f32>,
    /// Chains averaged over (alive chains among the first requested).
    pub chains_used: u32,
}

impl Prediction {
    fn with_points(points: usize, classes: usize) -> Self {
        Self {
            classes,
            mean: vec![0.0; points * classes],
            mean_square: vec![0.0; points * classes],
            focus: vec![0.0; points * classes],
            chains_used: 0,
        }
    }
}

/// The interface both MLP backends implement.
pub trait MlpEngine: Send {
    /// The backend and its device.
    fn backend(&self) -> BackendInfo;
    /// Number of chains (networks).
    fn chains(&self) -> u32;
    /// Steps done since the start or the last reset.
    fn steps_done(&self) -> u32;
    /// The model the chains follow.
    fn model(&self) -> &MlpModel;
    /// Replaces the model without touching the chains (live slider changes). The
    /// architecture must stay; the data set may change.
    fn set_model(&mut self, model: MlpModel) -> anyhow::Result<()>;
    /// Advances every alive chain by `steps` steps (diverged chains stay frozen).
    fn advance(&mut self, steps: u32) -> anyhow::Result<MlpReport>;
    /// The stochastic gradient every chain would draw at its current θ for the next step,
    /// chain-major (chains × P). For testing the backends against each other.
    fn gradients(&mut self) -> anyhow::Result<Vec<f32>>;
    /// θ, p and ξ of parameter `param` across all chains.
    fn read_parameter(&mut self, param: usize) -> anyhow::Result<ParameterStates>;
    /// θ of every parameter of chains `first .. first + count` (clamped), chain-major.
    fn read_weights(&mut self, first: u32, count: u32) -> anyhow::Result<Vec<f32>>;
    /// Class probabilities at `points`, averaged over the alive chains among the first
    /// `chains`, and those of chain `focus` alone.
    fn predict(
        &mut self,
        points: &[[f32; 2]],
        chains: u32,
        focus: u32,
    ) -> anyhow::Result<Prediction>;
    /// Re-initialises every chain from `init` with `seed` and sets the step count to 0.
    fn reset(&mut self, init: &MlpInit, seed: u64) -> anyhow::Result<()>;
}
