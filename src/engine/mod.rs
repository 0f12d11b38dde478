//! Chain engines: N chains advanced K steps at a time behind one interface, on the CPU
//! ([`cpu::CpuEngine`], the reference) or on a GPU.

pub mod cpu;
pub mod gpu;
pub mod mlp;
pub mod moments;
pub mod shader_interface;
pub mod sphere;

pub use moments::{Moments, SuperchainMoments};

use crate::math::{Chain2, Grid2, InitSpec, Model};
use serde::{Deserialize, Serialize};

/// Loop iterations one GPU invocation may run, for every engine: llvmpipe (lavapipe) ends an
/// invocation after 65,535 loop iterations in all (LP_MAX_TGSI_LOOP_ITERATIONS, shared by
/// every loop of the shader), silently. Dispatches are cut to stay below it.
pub const LOOP_BUDGET: u32 = 50_000;

/// Which backend runs the chains, and on what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BackendInfo {
    /// `"cpu"` or `"gpu"`.
    pub kind: &'static str,
    /// Human description: thread count or adapter name.
    pub device: String,
}

/// One coordinate of the chain state, as an axis of a histogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Axis {
    /// θᵢ.
    Theta(u8),
    /// pᵢ.
    P(u8),
    /// ξᵢ.
    Xi(u8),
}

impl Axis {
    /// Index into (θ₀, θ₁, p₀, p₁, ξ₀, ξ₁), as the shaders number the axes.
    pub fn index(self) -> u32 {
        match self {
            Axis::Theta(c) => u32::from(c),
            Axis::P(c) => 2 + u32::from(c),
            Axis::Xi(c) => 4 + u32::from(c),
        }
    }

    /// The value of this coordinate in a chain.
    #[inline(always)]
    pub fn value(self, chain: &Chain2) -> f32 {
        match self {
            Axis::Theta(c) => chain.theta[usize::from(c)],
            Axis::P(c) => chain.p[usize::from(c)],
            Axis::Xi(c) => chain.xi[usize::from(c)],
        }
    }

    /// A short label (θ₁, p₂, ξ₁, 1-based as in the UI).
    pub fn label(self) -> String {
        let sub = |c: u8| ["₁", "₂"][usize::from(c.min(1))];
        match self {
            Axis::Theta(c) => format!("θ{}", sub(c)),
            Axis::P(c) => format!("p{}", sub(c)),
            Axis::Xi(c) => format!("ξ{}", sub(c)),
        }
    }
}

/// A 2-D histogram of two state coordinates over the alive chains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HistogramSpec {
    /// Grid over (first axis, second axis).
    pub grid: Grid2,
    /// The coordinates binned.
    pub axes: [Axis; 2],
}

impl HistogramSpec {
    /// A histogram of (θ₁, θ₂).
    pub fn theta(grid: Grid2) -> Self {
        Self {
            grid,
            axes: [Axis::Theta(0), Axis::Theta(1)],
        }
    }

    /// Bins the alive chains (`diverged_at == 0`) on the CPU: the CPU engine's histograms and
    /// the reference the GPU's are tested against.
    pub fn bin(&self, chains: &[Chain2], diverged_at: &[u32]) -> (Vec<u32>, u64) {
        let rule = self.grid.bin_rule();
        let mut counts = vec![0u32; self.grid.cells()];
        let mut outside = 0;
        for (c, &d) in chains.iter().zip(diverged_at) {
            if d != 0 {
                continue;
            }
            match rule.bin(self.axes[0].value(c), self.axes[1].value(c)) {
                Some(i) => counts[i] += 1,
                None => outside += 1,
            }
        }
        (counts, outside)
    }
}

/// Most histograms one `advance` can fill.
pub const MAX_HISTOGRAMS: usize = 3;

/// What a caller gets after advancing the chains.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Steps done since the start (or the last reset).
    pub step: u32,
    /// Moments of the alive chains after the last step.
    pub moments: Moments,
    /// One histogram per requested spec: row-major counts and the count outside the grid.
    pub histograms: Vec<(Vec<u32>, u64)>,
    /// Per superchain (when the chains started in superchains, see
    /// [`InitSpec::superchains`]), the moments of its alive chains; empty otherwise.
    pub superchains: Vec<SuperchainMoments>,
}

/// Full state of a range of chains, read back on request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChainStates {
    /// Chain states.
    pub chains: Vec<Chain2>,
    /// For each chain, the step count at which it diverged (0 while alive).
    pub diverged_at: Vec<u32>,
}

/// The interface every backend implements.
pub trait Engine: Send {
    /// The backend and its device.
    fn backend(&self) -> BackendInfo;
    /// Number of chains.
    fn chains(&self) -> u32;
    /// Steps done since the start or the last reset.
    fn steps_done(&self) -> u32;
    /// The model the chains follow.
    fn model(&self) -> &Model;
    /// Replaces the model without touching the chains (live slider changes). The target's
    /// dimension must not change.
    fn set_model(&mut self, model: Model);
    /// Advances every alive chain by `steps` steps (diverged chains stay frozen), then bins the
    /// alive chains into up to [`MAX_HISTOGRAMS`] histograms.
    fn advance(&mut self, steps: u32, histograms: &[HistogramSpec]) -> anyhow::Result<Report>;
    /// Reads back the states of chains `first .. first + count` (clamped to the ensemble).
    fn read_chains(&mut self, first: u32, count: u32) -> anyhow::Result<ChainStates>;
    /// Overwrites chains `first ..` with `states` (clamped to the ensemble): restores a saved
    /// state, and lets tests plant a chain in a given state.
    fn write_chains(&mut self, first: u32, states: &ChainStates) -> anyhow::Result<()>;
    /// Re-initialises every chain from `init` with `seed` and sets the step count to 0.
    fn reset(&mut self, init: &InitSpec, seed: u64);
}

/// The first `count` chains, and when many of them diverged, further chains until `count`
/// alive ones are in (or every chain is): the distances to truth compare alive chains.
pub fn read_alive_head(
    engine: &mut dyn Engine,
    count: u32,
    alive: u64,
) -> anyhow::Result<ChainStates> {
    let mut states = engine.read_chains(0, count)?;
    let total = engine.chains();
    let mut next = states.chains.len() as u32;
    let wanted = u64::from(count).min(alive) as usize;
    while states.diverged_at.iter().filter(|&&d| d == 0).count() < wanted && next < total {
        let more = engine.read_chains(next, count)?;
        next += more.chains.len() as u32;
        for (c, d) in more.chains.into_iter().zip(more.diverged_at) {
            if d == 0 {
                states.chains.push(c);
                states.diverged_at.push(d);
            }
        }
    }
    Ok(states)
}

/// Which backend a run asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// The multi-threaded CPU engine.
    Cpu,
    /// A GPU adapter (fails if there is none).
    Gpu,
    /// A hardware GPU if one is found, else the CPU with a notice (a software rasteriser
    /// such as llvmpipe counts as none: the CPU engine outruns it).
    Auto,
}

/// Creates the engine for a choice of backend. Returns the engine and, when `auto` fell back
/// to the CPU, the reason (one line, for stderr or the app's notice).
pub fn create_engine(
    choice: BackendChoice,
    model: Model,
    chains: u32,
    init: &InitSpec,
    seed: u64,
) -> anyhow::Result<(Box<dyn Engine>, Option<String>)> {
    create_engine_reusing(choice, &mut None, model, chains, init, seed)
}

/// [`create_engine`] that opens the GPU device once: `device` keeps it for the next engine
/// (the app reallocates when the number of chains changes).
pub fn create_engine_reusing(
    choice: BackendChoice,
    device: &mut Option<gpu::GpuContext>,
    model: Model,
    chains: u32,
    init: &InitSpec,
    seed: u64,
) -> anyhow::Result<(Box<dyn Engine>, Option<String>)> {
    let gpu_engine = |ctx: gpu::GpuContext, model| -> anyhow::Result<Box<dyn Engine>> {
        Ok(Box::new(gpu::GpuEngine::with_context(
            ctx, model, chains, init, seed,
        )?))
    };
    let cpu_engine = |model| Box::new(cpu::CpuEngine::new(model, chains, init, seed));
    match choice {
        BackendChoice::Cpu => Ok((cpu_engine(model), None)),
        BackendChoice::Gpu => Ok((gpu_engine(open_device(device)?, model)?, None)),
        BackendChoice::Auto => {
            let reason = match hardware_gpu(device) {
                Ok(ctx) => match gpu_engine(ctx, model.clone()) {
                    Ok(engine) => return Ok((engine, None)),
                    Err(e) => format!("the GPU engine failed ({e:#})"),
                },
                Err(reason) => reason,
            };
            Ok((cpu_engine(model), Some(fallback_notice(&reason))))
        }
    }
}

/// The device kept in `device`, opened on first use.
pub(crate) fn open_device(device: &mut Option<gpu::GpuContext>) -> anyhow::Result<gpu::GpuContext> {
    match device {
        Some(ctx) => Ok(ctx.clone()),
        None => Ok(device.insert(gpu::GpuContext::new()?).clone()),
    }
}

/// Creates an MLP engine for a choice of backend, sharing the GPU device the caller keeps
/// in `device`. Returns the engine and, when `auto` fell back to the CPU, the reason.
pub fn create_mlp_engine(
    choice: BackendChoice,
    device: &mut Option<gpu::GpuContext>,
    model: crate::math::mlp::MlpModel,
    chains: u32,
    init: &crate::math::mlp::MlpInit,
    seed: u64,
) -> anyhow::Result<(Box<dyn mlp::MlpEngine>, Option<String>)> {
    let gpu = |ctx, model| -> anyhow::Result<Box<dyn mlp::MlpEngine>> {
        Ok(Box::new(mlp::gpu::MlpGpuEngine::with_context(
            ctx, model, chains, init, seed,
        )?))
    };
    let cpu = |model| {
        Box::new(mlp::MlpCpuEngine::new(model, chains, init, seed)) as Box<dyn mlp::MlpEngine>
    };
    match choice {
        BackendChoice::Cpu => Ok((cpu(model), None)),
        BackendChoice::Gpu => Ok((gpu(open_device(device)?, model)?, None)),
        BackendChoice::Auto => {
            let reason = match hardware_gpu(device) {
                Ok(ctx) => match gpu(ctx, model.clone()) {
                    Ok(engine) => return Ok((engine, None)),
                    Err(e) => format!("the GPU engine failed ({e:#})"),
                },
                Err(reason) => reason,
            };
            Ok((cpu(model), Some(fallback_notice(&reason))))
        }
    }
}

/// For `auto`: the device when it is a hardware GPU, otherwise why the CPU engine runs
/// instead. A software rasteriser (llvmpipe, SwiftShader, WARP) runs the shaders on the same
/// cores as the CPU engine, several times slower than its SIMD lanes.
pub(crate) fn hardware_gpu(
    device: &mut Option<gpu::GpuContext>,
) -> Result<gpu::GpuContext, String> {
    match open_device(device) {
        Ok(ctx) if ctx.adapter.device_type == wgpu::DeviceType::Cpu => Err(format!(
            "only a software GPU ({}) was found; the CPU engine is faster here \
             (--backend gpu forces it)",
            ctx.adapter.name
        )),
        Ok(ctx) => Ok(ctx),
        Err(e) => Err(format!("no usable GPU ({e:#})")),
    }
}

/// Whether the adapter wgpu picks by default is a software rasteriser, or there is none: the
/// window then draws with OpenGL (`app::RendererChoice`).
pub fn only_software_gpu() -> bool {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
        .map_or(true, |a| a.get_info().device_type == wgpu::DeviceType::Cpu)
}

/// The one-line notice of an `auto` fallback.
pub(crate) fn fallback_notice(reason: &str) -> String {
    format!("{reason}: running on the CPU engine")
}
