//! atmc-lab: the dynamics of stochastic-gradient MCMC samplers made visible.
//!
//! Layers, with dependencies pointing one way:
//! [`math`] (samplers, targets, RNG, schedules; pure Rust) → [`engine`] (CPU and GPU
//! backends behind one interface) → [`diagnostics`] (statistics against exact truth) →
//! [`runner`] and [`cli`] (headless runs), [`app`] (the egui desktop app). [`preset`]
//! describes a run in RON. [`train`] holds the image-classification data and input pipeline
//! for the ResNet++ runs.

pub mod app;
pub mod cli;
pub mod diagnostics;
pub mod engine;
pub mod math;
pub mod preset;
pub mod runner;
pub mod train;
