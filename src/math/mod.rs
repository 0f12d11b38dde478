//! The mathematics of MATH.md in pure Rust: samplers, targets, gradient noise, schedules and
//! the counter-based RNG. No GPU, no UI: the CPU engine runs this code and the WGSL shaders
//! mirror it function by function.

pub mod adapt;
pub mod challenge;
pub mod datasets;
pub mod expr;
pub mod grid;
pub mod init;
pub mod mlp;
pub mod noise;
pub mod ranges;
pub mod real;
pub mod rng;
pub mod samplers;
pub mod schedule;
pub mod special;
pub mod sphere;
pub mod targets;

pub use datasets::{DataSource, DataSpec, Dataset};
pub use grid::Grid2;
pub use init::InitSpec;
pub use noise::{NoiseModel, NoiseSpec};
pub use real::{Lanes, Real, RngLanes, StepRng};
pub use rng::{RngCounter, Stream};
pub use samplers::{
    Chain2, ChainOf, Kinetic, Model, NoiseMass, SamplerKind, SamplerParams, SamplerSpec, StepPhase,
    XiUpdate,
};
pub use schedule::{ExploringThermostat, Schedule, ScheduleSpec};
pub use targets::{Target, TargetSpec};
