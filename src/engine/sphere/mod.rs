//! The sphere toy's engines (MATH.md §5.4): N chains of projected SGD on the unit sphere,
//! each chain's minibatches addressed by (seed, chain, step) like every other chain of the
//! lab. Two backends behind [`SphereEngine`]: [`cpu::CpuSphereEngine`] (f64, the oracle) and
//! [`gpu::GpuSphereEngine`] (f32, `shaders/sphere.wgsl`), which draws the same minibatches.

pub mod cpu;
pub mod gpu;

use super::{BackendChoice, BackendInfo, fallback_notice, hardware_gpu, open_device};
use crate::math::sphere::{SphereOptimizer, SphereProblem};
use glam::DVec3;

/// Chains of projected SGD on the sphere, advanced in steps and read back as directions.
pub trait SphereEngine: Send {
    /// Which backend runs, on which device.
    fn backend(&self) -> BackendInfo;

    /// The objects of the problem.
    fn objects(&self) -> &[DVec3];

    /// Steps done so far.
    fn steps_done(&self) -> u32;

    /// Changes the learning rate, momentum or batch for the steps to come.
    fn set_optimizer(&mut self, optimizer: SphereOptimizer);

    /// Advances every chain `steps` steps.
    fn advance(&mut self, steps: u32) -> anyhow::Result<()>;

    /// The chains' directions, in chain order.
    fn positions(&mut self) -> anyhow::Result<Vec<DVec3>>;
}

/// Creates a sphere engine for a choice of backend: `auto` takes a hardware GPU when there is
/// one and otherwise the CPU, returning why it fell back.
pub fn create_sphere_engine(
    choice: BackendChoice,
    problem: SphereProblem,
    optimizer: SphereOptimizer,
    chains: u32,
    seed: u64,
) -> anyhow::Result<(Box<dyn SphereEngine>, Option<String>)> {
    let cpu = || Box::new(cpu::CpuSphereEngine::new(problem, optimizer, chains, seed));
    let mut device = None;
    match choice {
        BackendChoice::Cpu => Ok((cpu(), None)),
        BackendChoice::Gpu => Ok((
            Box::new(gpu::GpuSphereEngine::with_context(
                open_device(&mut device)?,
                problem,
                optimizer,
                chains,
                seed,
            )?),
            None,
        )),
        BackendChoice::Auto => {
            let reason = match hardware_gpu(&mut device) {
                Ok(ctx) => {
                    match gpu::GpuSphereEngine::with_context(ctx, problem, optimizer, chains, seed)
                    {
                        Ok(engine) => return Ok((Box::new(engine), None)),
                        Err(e) => format!("the GPU engine failed ({e:#})"),
                    }
                }
                Err(reason) => reason,
            };
            Ok((cpu(), Some(fallback_notice(&reason))))
        }
    }
}
