//! The GPU engine: chains stepped in WGSL compute shaders (`shaders/`), one invocation per
//! chain with its state in registers for all K steps of a dispatch.
//!
//! Parameters live in two uniform blocks (`GpuSamplerParams`, written once per advance, and
//! `GpuChain2Params`, a few hundred bytes written before every dispatch), so a slider change
//! needs no pipeline rebuild and no reset. Moments are
//! reduced per workgroup on the GPU and the alive chains are binned there into up to
//! [`MAX_HISTOGRAMS`] atomic histograms of two state coordinates each, so a frame reads back
//! kilobytes, not the chains; full state is read only on request.

use super::shader_interface::{
    self, BindingSpace, CHAIN_PARTIALS, CHAIN_WORKGROUP, Chain2Binding, ChainPartial,
    FLAG_SGNHT_SHARED, FLAG_THERMOSTAT_RUNNING, FLAG_XI_OVERWRITE, GpuChain, GpuChain2Params,
    GpuSamplerParams, HIST_AXIS_SHIFT, MAY_BE_CYCLICAL, MAY_BE_HYPERBOLIC, MAY_HAVE_GRADIENT_NOISE,
    MAY_OVERWRITE_XI, Program, ProgramBindings, SPECIALISED_SAMPLER, SPECIALISED_TARGET,
    SUPERCHAIN_FIELDS,
};
use super::{
    BackendInfo, ChainStates, Engine, HistogramSpec, InitSpec, LOOP_BUDGET, MAX_HISTOGRAMS,
    Moments, Report, SuperchainMoments,
};
use crate::math::init::MAX_SUPERCHAINS;
use crate::math::{Chain2, Model, SamplerKind, SamplerParams, Schedule, Target};
use anyhow::{Context, anyhow, bail};
use bytemuck::Zeroable;
use std::sync::LazyLock;
use wgpu::util::DeviceExt;

/// The WGSL of the engine: the generated prelude of [`shader_interface`], then the files that
/// mirror `src/math` one to one.
/// The built-in targets' program carries a stub in place of an expression's gradient.
pub static SHADER_SOURCE: LazyLock<String> =
    LazyLock::new(|| engine_source(crate::math::expr::wgsl::STUB));

/// The engine's WGSL with `expression` (a function `expression_gradient`, written by
/// `math::expr::wgsl`) in front of the target code that calls it.
pub fn engine_source(expression: &str) -> String {
    shader_interface::compose(Program::Chain2, &[("expression (generated)", expression)])
}

/// Parses and validates WGSL with naga, as wgpu would, so that a generated shader is refused
/// with naga's message before any pipeline is made.
pub fn validate_wgsl(source: &str) -> anyhow::Result<()> {
    use wgpu::naga;
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| anyhow!("the WGSL does not parse: {}", e.emit_to_string(source)))?;
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module)
    .map_err(|e| anyhow!("the WGSL does not validate: {}", e.emit_to_string(source)))?;
    Ok(())
}

/// Partial sums per workgroup ([`ChainPartial`], `partials` in `shaders/engine.wgsl`).
const PARTIAL_FIELDS: usize = CHAIN_PARTIALS as usize;
/// Longest dispatch: keeps each submission short enough for display watchdogs.
const MAX_STEPS_PER_DISPATCH: u32 = 1024;

/// An upper bound on the loop iterations of one step of `model`: Philox rounds, the mixture's
/// components, the logistic minibatch with its Philox draws. An expression target's gradient
/// is straight-line code (no loops: logsumexp, min and max are unrolled when compiled), so
/// it adds none.
fn loop_iterations_per_step(model: &Model) -> u32 {
    let (batch, data) = match &model.target {
        // Each example: the likelihood term and its own Philox call of 10 rounds.
        Target::Logistic(l) => (11 * l.batch_size, l.inputs.len() as u32),
        _ => (0, 0),
    };
    // Two loops over 25 components and the minibatch.
    let gradient = 50 + batch;
    match model.sampler.kind {
        // L + 1 gradients, two energies (25 components or all N examples), four Philox calls.
        SamplerKind::Hmc => {
            40 + (model.sampler.leapfrog_steps + 1) * (gradient + 10) + 2 * (25 + data)
        }
        // Three Philox calls of 10 rounds, slack.
        _ => 30 + gradient + 10,
    }
}

impl GpuSamplerParams {
    /// The sampler block of `chains` chains of a run seeded `seed`.
    pub(crate) fn for_sampler(
        sp: &SamplerParams,
        schedule: &Schedule,
        seed: u64,
        chains: u32,
    ) -> Self {
        Self {
            seed_lo: seed as u32,
            seed_hi: (seed >> 32) as u32,
            chains,
            flags: (if sp.xi_overwrite {
                FLAG_XI_OVERWRITE
            } else {
                0
            }) | (if sp.sgnht_shared_xi {
                FLAG_SGNHT_SHARED
            } else {
                0
            }) | (if schedule.thermostat_running {
                FLAG_THERMOSTAT_RUNNING
            } else {
                0
            }),
            h: sp.h,
            mass: sp.mass,
            friction_floor: sp.friction_floor,
            temperature: sp.temperature,
            speed: sp.speed,
            friction_sign: sp.friction_sign,
            noise_mass: sp.noise_mass,
            divergence_bound: sp.divergence_bound,
            sghmc_friction: sp.sghmc_friction,
            sghmc_noise_estimate: sp.sghmc_noise_estimate,
            sgnht_diffusion: sp.sgnht_diffusion,
            cycle_len: schedule.cycle_len,
            explore_fraction: schedule.explore_fraction,
            inv_mass: sp.inv_mass,
            theta_bound: sp.theta_bound,
            sgd_momentum: sp.sgd_momentum,
        }
    }
}

impl From<Chain2> for GpuChain {
    fn from(c: Chain2) -> Self {
        Self {
            theta: c.theta,
            p: c.p,
            xi: c.xi,
        }
    }
}

impl From<GpuChain> for Chain2 {
    fn from(c: GpuChain) -> Self {
        Self {
            theta: c.theta,
            p: c.p,
            xi: c.xi,
        }
    }
}

/// A wgpu device and queue with the adapter that made them.
#[derive(Clone, Debug)]
pub struct GpuContext {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The adapter's description.
    pub adapter: wgpu::AdapterInfo,
}

impl GpuContext {
    /// Opens the adapter chosen by the environment: `WGPU_BACKEND` (vulkan, metal, dx12, gl)
    /// limits the backends, `WGPU_ADAPTER_NAME` picks an adapter by a part of its name,
    /// otherwise the high-performance adapter wgpu prefers. Fails with a clear message when
    /// there is none or it cannot run compute shaders.
    pub fn new() -> anyhow::Result<Self> {
        pollster::block_on(Self::open())
    }

    async fn open() -> anyhow::Result<Self> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
            Ok(wanted) => {
                let wanted = wanted.to_lowercase();
                let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
                let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
                adapters
                    .into_iter()
                    .find(|a| a.get_info().name.to_lowercase().contains(&wanted))
                    .ok_or_else(|| {
                        anyhow!(
                            "WGPU_ADAPTER_NAME={wanted} matches no adapter (found: {})",
                            names.join(", ")
                        )
                    })?
            }
            Err(_) => instance
                .request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::HighPerformance,
                    ..Default::default()
                })
                .await
                .context("no GPU adapter found")?,
        };
        let info = adapter.get_info();
        let limits = adapter.limits();
        if limits.max_compute_workgroup_size_x < CHAIN_WORKGROUP
            || limits.max_compute_invocations_per_workgroup < CHAIN_WORKGROUP
        {
            bail!(
                "adapter {} ({:?}) cannot run compute shaders of {CHAIN_WORKGROUP} invocations",
                info.name,
                info.backend
            );
        }
        // Ask for what the adapter has: the defaults cap storage buffers below a million chains.
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("atmc-lab engine"),
                required_limits: limits,
                ..Default::default()
            })
            .await
            .with_context(|| format!("cannot open a device on {}", info.name))?;
        Ok(Self {
            device,
            queue,
            adapter: info,
        })
    }

    /// Copies `size` bytes at `offset` of `source` back to the host through a staging buffer
    /// of its own (engines keep a [`Readback`] instead).
    pub fn read_buffer(
        &self,
        source: &wgpu::Buffer,
        offset: u64,
        size: u64,
    ) -> anyhow::Result<Vec<u8>> {
        let mut bytes = Readback::default().read(self, &[(source, offset, size)])?;
        Ok(bytes.remove(0))
    }

    /// A one-line description: adapter name, type and backend.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?})",
            self.adapter.name, self.adapter.device_type, self.adapter.backend
        )
    }
}

/// A host-visible staging buffer that GPU results are copied into and read from, kept for an
/// engine's lifetime and grown when a read needs more (a buffer per read cost two
/// allocations per `advance`).
#[derive(Debug, Default)]
pub struct Readback {
    staging: Option<wgpu::Buffer>,
}

impl Readback {
    /// Copies each `(source, offset, size)` (sizes a multiple of 4) into the staging buffer in
    /// one submission, maps it once and returns the bytes of each read in order.
    pub fn read(
        &mut self,
        ctx: &GpuContext,
        reads: &[(&wgpu::Buffer, u64, u64)],
    ) -> anyhow::Result<Vec<Vec<u8>>> {
        // Each read starts at a multiple of the map alignment.
        let align = |x: u64| x.next_multiple_of(wgpu::MAP_ALIGNMENT);
        let total: u64 = reads.iter().map(|&(_, _, size)| align(size)).sum();
        if total == 0 {
            return Ok(vec![Vec::new(); reads.len()]);
        }
        let device = &ctx.device;
        if self.staging.as_ref().is_none_or(|b| b.size() < total) {
            self.staging = Some(device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("readback"),
                size: total.next_power_of_two(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        let staging = self.staging.as_ref().expect("allocated above");
        let mut encoder = device.create_command_encoder(&Default::default());
        let mut at = 0;
        for &(source, offset, size) in reads {
            if size > 0 {
                encoder.copy_buffer_to_buffer(source, offset, staging, at, size);
            }
            at += align(size);
        }
        ctx.queue.submit([encoder.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, ..total, move |r| {
            let _ = tx.send(r);
        });
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| anyhow!("GPU device lost while reading back: {e}"))?;
        rx.recv()
            .context("readback callback dropped")?
            .map_err(|e| anyhow!("cannot map the readback buffer: {e}"))?;
        let bytes = {
            let mapped = staging
                .get_mapped_range(..total)
                .map_err(|e| anyhow!("cannot read the readback buffer: {e:?}"))?;
            let mut at = 0;
            reads
                .iter()
                .map(|&(_, _, size)| {
                    let part = mapped[at as usize..(at + size) as usize].to_vec();
                    at += align(size);
                    part
                })
                .collect()
        };
        staging.unmap();
        Ok(bytes)
    }
}

/// Buffers that depend on the number of chains.
struct ChainBuffers {
    chains: wgpu::Buffer,
    diverged_at: wgpu::Buffer,
    partials: wgpu::Buffer,
    /// [`SUPERCHAIN_FIELDS`] floats per superchain (at least one superchain's room).
    superchain_sums: wgpu::Buffer,
    groups: [u32; 2],
}

/// The GPU backend.
pub struct GpuEngine {
    ctx: GpuContext,
    program: ShaderProgram,
    /// One program per expression formula (by [`PipelineKey::formula`]), over the same bind
    /// group layout as `program`.
    expression_programs: std::collections::HashMap<u64, ShaderProgram>,
    /// One pipeline per [`PipelineKey`], compiled when first stepped: the shader is
    /// specialised through its override constants, so the branches the preset cannot take
    /// are compiled out (llvmpipe runs every branch of a switch it cannot prove uniform).
    pipelines: std::collections::HashMap<PipelineKey, wgpu::ComputePipeline>,
    sampler_params: wgpu::Buffer,
    chain2_params: wgpu::Buffer,
    histogram: wgpu::Buffer,
    histogram_slots: u32,
    data: wgpu::Buffer,
    buffers: ChainBuffers,
    bind_group: wgpu::BindGroup,
    readback: Readback,
    model: Model,
    seed: u64,
    step: u32,
    chains: u32,
    /// Superchains reduced after every advance (0: none), from the last reset's init.
    superchains: u32,
    /// The `reduce_superchains` pipeline, made when first needed.
    superchain_pipeline: Option<wgpu::ComputePipeline>,
}

/// The bind group layout entries of a program, one per binding of its table.
pub(crate) fn layout_entries<B: ProgramBindings>() -> Vec<wgpu::BindGroupLayoutEntry> {
    B::ALL
        .iter()
        .map(|&b| {
            let (ty, has_dynamic_offset, min_binding_size) = match b.decl().space {
                BindingSpace::Uniform { size, dynamic } => (
                    wgpu::BufferBindingType::Uniform,
                    dynamic,
                    wgpu::BufferSize::new(size as u64),
                ),
                BindingSpace::Storage { read_only } => {
                    (wgpu::BufferBindingType::Storage { read_only }, false, None)
                }
            };
            wgpu::BindGroupLayoutEntry {
                binding: b.index(),
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty,
                    has_dynamic_offset,
                    min_binding_size,
                },
                count: None,
            }
        })
        .collect()
}

/// The bind group of a program: `buffer(b)` at every binding `b` of its table, whole, but for
/// a dynamic uniform, which binds one block of its buffer at a time.
pub(crate) fn bind_group<'a, B: ProgramBindings>(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    label: &str,
    buffer: impl Fn(B) -> &'a wgpu::Buffer,
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry<'_>> = B::ALL
        .iter()
        .map(|&b| wgpu::BindGroupEntry {
            binding: b.index(),
            resource: match b.decl().space {
                BindingSpace::Uniform {
                    size,
                    dynamic: true,
                } => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: buffer(b),
                    offset: 0,
                    size: wgpu::BufferSize::new(size as u64),
                }),
                _ => buffer(b).as_entire_binding(),
            },
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &entries,
    })
}

/// A uniform buffer for one block of `size` bytes, written by the host.
pub(crate) fn uniform_buffer(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// What a sampler step may meet besides its sampler: the override constants `MAY_*` that
/// shaders/samplers.wgsl reads. A pipeline built with a feature off has that feature's branch
/// compiled out and runs only presets without it; the engines key their pipelines by it.
/// llvmpipe runs both sides of a branch on a value it cannot prove uniform: a cyclical
/// schedule's cosine and the hyperbolic kinetic energy's square roots cost every step of
/// every preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Features {
    cyclical: bool,
    hyperbolic: bool,
    xi_overwrite: bool,
}

/// 1.0 or 0.0: a boolean override constant.
fn flag(on: bool) -> f64 {
    if on { 1.0 } else { 0.0 }
}

impl Features {
    /// The features of a sampler and schedule, the same tests the WGSL makes at run time.
    pub(crate) fn of(sp: &SamplerParams, schedule: &Schedule) -> Self {
        Self {
            cyclical: schedule.cycle_len != 0,
            hyperbolic: sp.speed != 0.0,
            xi_overwrite: sp.xi_overwrite,
        }
    }

    /// The override constants.
    pub(crate) fn constants(self) -> [(&'static str, f64); 3] {
        [
            (MAY_BE_CYCLICAL, flag(self.cyclical)),
            (MAY_BE_HYPERBOLIC, flag(self.hyperbolic)),
            (MAY_OVERWRITE_XI, flag(self.xi_overwrite)),
        ]
    }
}

/// What a 2-D pipeline is specialised on: the sampler and target codes, the [`Features`],
/// and whether there is synthetic gradient noise (`MAY_HAVE_GRADIENT_NOISE`, read in chain2.wgsl:
/// without it the second Philox block and its Box–Muller pair are compiled out; with all of
/// it the kernel ran 2× faster on llvmpipe).
/// An expression target's pipelines are also keyed by its formula (a hash of its gradient's
/// WGSL): its parameters are uniforms, so a new value reuses the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct PipelineKey {
    sampler: u32,
    target: u32,
    features: Features,
    gradient_noise: bool,
    formula: u64,
}

/// The WGSL of an expression target's gradient and its hash (none for built-in targets).
fn expression_wgsl(model: &Model) -> Option<(u64, String)> {
    use std::hash::{Hash, Hasher};
    let Target::Expression(e) = &model.target else {
        return None;
    };
    let source = e.formula.wgsl().to_owned();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    source.hash(&mut h);
    Some((h.finish().max(1), source))
}

impl PipelineKey {
    fn of(model: &Model) -> Self {
        Self {
            sampler: model.sampler.kind.gpu_code(),
            target: model.target.gpu_constants().0.gpu_code(),
            features: Features::of(&model.sampler, &model.schedule),
            gradient_noise: model.noise.is_active(),
            formula: expression_wgsl(model).map_or(0, |(h, _)| h),
        }
    }

    fn constants(self) -> Vec<(&'static str, f64)> {
        let mut constants = vec![
            (SPECIALISED_SAMPLER, f64::from(self.sampler)),
            (SPECIALISED_TARGET, f64::from(self.target)),
            (MAY_HAVE_GRADIENT_NOISE, flag(self.gradient_noise)),
        ];
        constants.extend(self.features.constants());
        constants
    }
}

/// A compiled shader module with its bind group layout, from which compute pipelines are made
/// (one per entry point, and for the 2-D engine one per value of its override constants).
pub(crate) struct ShaderProgram {
    what: String,
    module: wgpu::ShaderModule,
    /// The layout of the one bind group.
    pub(crate) layout: wgpu::BindGroupLayout,
    pipeline_layout: wgpu::PipelineLayout,
}

impl ShaderProgram {
    /// Compiles `source` over one bind group layout of the bindings `B`. Fails naming `what`
    /// and the device when the WGSL does not validate there.
    pub(crate) fn new<B: ProgramBindings>(
        ctx: &GpuContext,
        what: &str,
        source: &str,
    ) -> anyhow::Result<Self> {
        let entries = &layout_entries::<B>();
        let layout = ctx
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(what),
                entries,
            });
        Self::with_layout(ctx, what, source, layout)
    }

    /// [`Self::new`] over an existing bind group layout (an expression target's program
    /// binds the engine's bind group).
    pub(crate) fn with_layout(
        ctx: &GpuContext,
        what: &str,
        source: &str,
        layout: wgpu::BindGroupLayout,
    ) -> anyhow::Result<Self> {
        let device = &ctx.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(what),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(what),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            bail!(
                "the {what} shaders do not compile on {}: {e}",
                ctx.describe()
            );
        }
        Ok(Self {
            what: what.to_owned(),
            module,
            layout,
            pipeline_layout,
        })
    }

    /// The pipeline of `entry` with the override `constants` set.
    pub(crate) fn pipeline(
        &self,
        ctx: &GpuContext,
        entry: &str,
        constants: &[(&str, f64)],
    ) -> anyhow::Result<wgpu::ComputePipeline> {
        let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&self.pipeline_layout),
                module: &self.module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants,
                    ..Default::default()
                },
                cache: None,
            });
        if let Some(e) = pollster::block_on(scope.pop()) {
            bail!(
                "the {} shaders do not compile on {}: {e}",
                self.what,
                ctx.describe()
            );
        }
        Ok(pipeline)
    }
}

/// Compiles `source` and makes one compute pipeline per entry point over one bind group
/// layout of the bindings `B`.
pub(crate) fn compute_pipelines<B: ProgramBindings>(
    ctx: &GpuContext,
    what: &str,
    source: &str,
    entry_points: &[&str],
) -> anyhow::Result<(wgpu::BindGroupLayout, Vec<wgpu::ComputePipeline>)> {
    let program = ShaderProgram::new::<B>(ctx, what, source)?;
    let pipelines = entry_points
        .iter()
        .map(|entry| program.pipeline(ctx, entry, &[]))
        .collect::<anyhow::Result<_>>()?;
    Ok((program.layout, pipelines))
}

impl GpuEngine {
    /// An engine on a newly opened device.
    pub fn new(model: Model, chains: u32, init: &InitSpec, seed: u64) -> anyhow::Result<Self> {
        Self::with_context(GpuContext::new()?, model, chains, init, seed)
    }

    /// An engine on an existing device (the app's workers keep theirs across reallocations,
    /// see [`super::create_engine_reusing`]).
    pub fn with_context(
        ctx: GpuContext,
        model: Model,
        chains: u32,
        init: &InitSpec,
        seed: u64,
    ) -> anyhow::Result<Self> {
        let program = ShaderProgram::new::<Chain2Binding>(&ctx, "engine", SHADER_SOURCE.as_str())?;
        let device = &ctx.device;
        let sampler_params = uniform_buffer(
            device,
            "sampler params",
            size_of::<GpuSamplerParams>() as u64,
        );
        let chain2_params =
            uniform_buffer(device, "chain2 params", size_of::<GpuChain2Params>() as u64);
        let histogram = Self::histogram_buffer(device, 1);
        let data = Self::data_buffer(device, &model.target);
        let buffers = Self::chain_buffers(&ctx, chains)?;
        let bind_group = Self::bind_group(
            device,
            &program.layout,
            [&sampler_params, &chain2_params, &histogram, &data],
            &buffers,
        );
        let mut engine = Self {
            ctx,
            program,
            expression_programs: std::collections::HashMap::new(),
            pipelines: std::collections::HashMap::new(),
            sampler_params,
            chain2_params,
            histogram,
            histogram_slots: 1,
            data,
            buffers,
            bind_group,
            readback: Readback::default(),
            model,
            seed,
            step: 0,
            chains,
            superchains: 0,
            superchain_pipeline: None,
        };
        engine.reset(init, seed);
        Ok(engine)
    }

    /// The device this engine runs on.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    fn histogram_buffer(device: &wgpu::Device, slots: u32) -> wgpu::Buffer {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("histograms"),
            size: 4 * u64::from(slots.max(1)),
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    fn data_buffer(device: &wgpu::Device, target: &Target) -> wgpu::Buffer {
        let mut rows: Vec<[f32; 4]> = match target {
            Target::Logistic(l) => l
                .inputs
                .iter()
                .zip(&l.labels)
                .map(|(x, &y)| [x[0], x[1], y, 0.0])
                .collect(),
            _ => Vec::new(),
        };
        if rows.is_empty() {
            rows.push([0.0; 4]); // bindings cannot be empty
        }
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("data"),
            contents: bytemuck::cast_slice(&rows),
            usage: wgpu::BufferUsages::STORAGE,
        })
    }

    fn chain_buffers(ctx: &GpuContext, chains: u32) -> anyhow::Result<ChainBuffers> {
        let device = &ctx.device;
        let bytes = u64::from(chains) * std::mem::size_of::<GpuChain>() as u64;
        let limits = device.limits();
        if bytes > limits.max_storage_buffer_binding_size || bytes > limits.max_buffer_size {
            bail!(
                "{chains} chains need {bytes} bytes of state, more than {} allows",
                ctx.describe()
            );
        }
        let groups_total = chains.div_ceil(CHAIN_WORKGROUP).max(1);
        let max_x = limits.max_compute_workgroups_per_dimension;
        let groups = [groups_total.min(max_x), groups_total.div_ceil(max_x)];
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let make = |label, size| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: storage,
                mapped_at_creation: false,
            })
        };
        Ok(ChainBuffers {
            chains: make("chains", bytes.max(24)),
            diverged_at: make("diverged_at", 4 * u64::from(chains).max(1)),
            partials: make(
                "partials",
                (PARTIAL_FIELDS * 4) as u64 * u64::from(groups[0] * groups[1]),
            ),
            superchain_sums: make(
                "superchain_sums",
                u64::from(SUPERCHAIN_FIELDS * 4 * MAX_SUPERCHAINS),
            ),
            groups,
        })
    }

    /// The bind group of the uniform blocks, the histograms and the data (in that order)
    /// and the chain buffers.
    fn bind_group(
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        [sampler_params, chain2_params, histogram, data]: [&wgpu::Buffer; 4],
        buffers: &ChainBuffers,
    ) -> wgpu::BindGroup {
        bind_group(device, layout, "engine", |b| match b {
            Chain2Binding::Sampler => sampler_params,
            Chain2Binding::Params => chain2_params,
            Chain2Binding::Chains => &buffers.chains,
            Chain2Binding::DivergedAt => &buffers.diverged_at,
            Chain2Binding::Partials => &buffers.partials,
            Chain2Binding::Histogram => histogram,
            Chain2Binding::Data => data,
            Chain2Binding::SuperchainSums => &buffers.superchain_sums,
        })
    }

    fn rebind(&mut self) {
        self.bind_group = Self::bind_group(
            &self.ctx.device,
            &self.program.layout,
            [
                &self.sampler_params,
                &self.chain2_params,
                &self.histogram,
                &self.data,
            ],
            &self.buffers,
        );
    }

    /// The 2-D block of a dispatch of `steps` steps from `step0`.
    fn chain2_params(
        &self,
        step0: u32,
        steps: u32,
        histograms: &[HistogramSpec],
    ) -> GpuChain2Params {
        let (_, target_params) = self.model.target.gpu_constants();
        let (data_n, batch_size) = match &self.model.target {
            Target::Logistic(l) => (l.inputs.len() as u32, l.batch_size),
            _ => (0, 0),
        };
        let mut hist_f = [[0.0f32; 4]; MAX_HISTOGRAMS];
        let mut hist_u = [[0u32; 4]; MAX_HISTOGRAMS];
        let mut offset = 0u32;
        for (i, spec) in histograms.iter().enumerate() {
            let rule = spec.grid.bin_rule();
            hist_f[i] = [rule.origin[0], rule.origin[1], rule.scale[0], rule.scale[1]];
            hist_u[i] = [
                rule.size[0],
                rule.size[1],
                spec.axes[0].index() | (spec.axes[1].index() << HIST_AXIS_SHIFT),
                offset,
            ];
            offset += spec.grid.cells() as u32 + 1;
        }
        GpuChain2Params {
            step0,
            steps,
            groups_x: self.buffers.groups[0],
            hist_count: histograms.len() as u32,
            data_n,
            batch_size,
            noise_kappa: self.model.noise.kappa,
            noise_sigma0: self.model.noise.sigma[0],
            noise_sigma1: self.model.noise.sigma[1],
            target_params: bytemuck::cast(target_params),
            superchains: self.superchains,
            leapfrog_steps: self.model.sampler.leapfrog_steps,
            hist_f,
            hist_u,
            ..Zeroable::zeroed()
        }
    }
}

impl GpuEngine {
    /// Everything `advance` needs before it dispatches: the histogram buffer large enough,
    /// the pipeline of the model's sampler, target and features (an expression target's
    /// shader compiled once per formula), the superchains' reduction. Returns the pipeline's
    /// key and the histograms' slots.
    fn prepare(&mut self, histograms: &[HistogramSpec]) -> anyhow::Result<(PipelineKey, u32)> {
        if histograms.len() > MAX_HISTOGRAMS {
            bail!("at most {MAX_HISTOGRAMS} histograms per advance");
        }
        // Each histogram's cells, then its outside count.
        let slots: u32 = histograms.iter().map(|h| h.grid.cells() as u32 + 1).sum();
        if slots > self.histogram_slots {
            self.histogram = Self::histogram_buffer(&self.ctx.device, slots);
            self.histogram_slots = slots;
            self.rebind();
        }
        let key = PipelineKey::of(&self.model);
        if !self.pipelines.contains_key(&key) {
            let program = match expression_wgsl(&self.model) {
                None => &self.program,
                Some((hash, wgsl)) => {
                    if !self.expression_programs.contains_key(&hash) {
                        let source = engine_source(&wgsl);
                        validate_wgsl(&source).context("an expression target's shader")?;
                        let program = ShaderProgram::with_layout(
                            &self.ctx,
                            "expression engine",
                            &source,
                            self.program.layout.clone(),
                        )?;
                        self.expression_programs.insert(hash, program);
                    }
                    &self.expression_programs[&hash]
                }
            };
            let pipeline = program.pipeline(&self.ctx, "advance", &key.constants())?;
            self.pipelines.insert(key, pipeline);
        }
        let per_step = loop_iterations_per_step(&self.model);
        if per_step > LOOP_BUDGET {
            bail!(
                "one step of {} on this target needs about {per_step} loop iterations in one GPU \
                 invocation, more than the GPU's budget of {LOOP_BUDGET}: use fewer leapfrog \
                 steps (L = {}), a smaller minibatch, or the CPU engine",
                self.model.sampler.kind.name().to_uppercase(),
                self.model.sampler.leapfrog_steps
            );
        }
        if self.superchains > 0 {
            // Each lane loops twice over its share of a superchain's chains.
            let members = self.chains.div_ceil(self.superchains);
            let iterations = 2 * members.div_ceil(CHAIN_WORKGROUP) + 32;
            if iterations > LOOP_BUDGET {
                bail!(
                    "{} superchains of {members} chains are too large for the GPU's loop \
                     budget: use more superchains",
                    self.superchains
                );
            }
        }
        if self.superchains > 0 && self.superchain_pipeline.is_none() {
            self.superchain_pipeline = Some(self.program.pipeline(
                &self.ctx,
                "reduce_superchains",
                &key.constants(),
            )?);
        }
        Ok((key, slots))
    }

    /// Writes the parameters and submits the steps in dispatches cut to the loop budget; the
    /// last one bins the histograms and reduces the superchains.
    fn encode(&mut self, key: &PipelineKey, steps: u32, histograms: &[HistogramSpec]) {
        let per_dispatch =
            (LOOP_BUDGET / loop_iterations_per_step(&self.model)).clamp(1, MAX_STEPS_PER_DISPATCH);
        let chunks = steps.div_ceil(per_dispatch).max(1);
        let sampler = GpuSamplerParams::for_sampler(
            &self.model.sampler,
            &self.model.schedule,
            self.seed,
            self.chains,
        );
        self.ctx
            .queue
            .write_buffer(&self.sampler_params, 0, bytemuck::bytes_of(&sampler));
        let mut done = 0;
        for chunk in 0..chunks {
            let n = (steps - done).min(per_dispatch);
            let last = chunk + 1 == chunks;
            let params = self.chain2_params(
                self.step.wrapping_add(done),
                n,
                if last { histograms } else { &[] },
            );
            self.ctx
                .queue
                .write_buffer(&self.chain2_params, 0, bytemuck::bytes_of(&params));
            let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
            if last && !histograms.is_empty() {
                encoder.clear_buffer(&self.histogram, 0, None);
            }
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(&self.pipelines[key]);
                pass.set_bind_group(0, &self.bind_group, &[]);
                let [gx, gy] = self.buffers.groups;
                pass.dispatch_workgroups(gx, gy, 1);
            }
            if last && self.superchains > 0 {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(self.superchain_pipeline.as_ref().expect("made above"));
                pass.set_bind_group(0, &self.bind_group, &[]);
                pass.dispatch_workgroups(self.superchains, 1, 1);
            }
            self.ctx.queue.submit([encoder.finish()]);
            done += n;
        }
        self.step = self.step.wrapping_add(steps);
    }

    /// Reads the partial sums, the histograms and the superchains' sums back in one copy and
    /// one map, and sums them into the report.
    fn decode(&mut self, histograms: &[HistogramSpec], slots: u32) -> anyhow::Result<Report> {
        // The partial sums, the histograms and the superchains' sums in one copy and one map.
        let superchain_bytes = u64::from(4 * SUPERCHAIN_FIELDS * self.superchains);
        let raw = self.readback.read(
            &self.ctx,
            &[
                (&self.buffers.partials, 0, self.buffers.partials.size()),
                (&self.histogram, 0, 4 * u64::from(slots)),
                (&self.buffers.superchain_sums, 0, superchain_bytes),
            ],
        )?;
        // Copied out: the bytes of an empty read need not be aligned for f32.
        let superchains = bytemuck::pod_collect_to_vec::<u8, f32>(&raw[2])
            .chunks_exact(SUPERCHAIN_FIELDS as usize)
            .map(|f| SuperchainMoments {
                alive: f[0] as u64,
                mean: [f64::from(f[1]), f64::from(f[2])],
                centred_sq: [f64::from(f[3]), f64::from(f[4])],
            })
            .collect();
        let partials: &[f32] = bytemuck::cast_slice(&raw[0]);
        let mut moments = Moments::default();
        for p in partials.chunks_exact(PARTIAL_FIELDS) {
            let v = |slot: ChainPartial| f64::from(p[slot.slot()]);
            moments.alive += v(ChainPartial::Alive) as u64;
            moments.diverged += v(ChainPartial::Diverged) as u64;
            moments.sum_theta[0] += v(ChainPartial::Theta0);
            moments.sum_theta[1] += v(ChainPartial::Theta1);
            moments.sum_theta_sq[0] += v(ChainPartial::Theta00);
            moments.sum_theta_sq[1] += v(ChainPartial::Theta01);
            moments.sum_theta_sq[2] += v(ChainPartial::Theta11);
            moments.sum_heat[0] += v(ChainPartial::Heat0);
            moments.sum_heat[1] += v(ChainPartial::Heat1);
            moments.sum_xi[0] += v(ChainPartial::Xi0);
            moments.sum_xi[1] += v(ChainPartial::Xi1);
        }
        let mut result = Vec::with_capacity(histograms.len());
        if slots > 0 {
            let counts: &[u32] = bytemuck::cast_slice(&raw[1]);
            let mut offset = 0;
            for spec in histograms {
                let cells = spec.grid.cells();
                result.push((
                    counts[offset..offset + cells].to_vec(),
                    u64::from(counts[offset + cells]),
                ));
                offset += cells + 1;
            }
        }
        Ok(Report {
            step: self.step,
            moments,
            histograms: result,
            superchains,
        })
    }
}

impl Engine for GpuEngine {
    fn backend(&self) -> BackendInfo {
        BackendInfo {
            kind: "gpu",
            device: self.ctx.describe(),
        }
    }

    fn chains(&self) -> u32 {
        self.chains
    }

    fn steps_done(&self) -> u32 {
        self.step
    }

    fn model(&self) -> &Model {
        &self.model
    }

    fn set_model(&mut self, model: Model) {
        let data_changed = self.model.target != model.target;
        self.model = model;
        if data_changed {
            self.data = Self::data_buffer(&self.ctx.device, &self.model.target);
            self.rebind();
        }
    }

    fn advance(&mut self, steps: u32, histograms: &[HistogramSpec]) -> anyhow::Result<Report> {
        // As the wgpu examples keep setup apart from per-frame work: buffers and pipelines
        // once (and again only when the model or the histograms outgrow them), then the
        // dispatches, then one readback decoded into the report.
        let (key, slots) = self.prepare(histograms)?;
        self.encode(&key, steps, histograms);
        self.decode(histograms, slots)
    }

    fn read_chains(&mut self, first: u32, count: u32) -> anyhow::Result<ChainStates> {
        let start = first.min(self.chains);
        let end = start.saturating_add(count).min(self.chains);
        if end == start {
            return Ok(ChainStates::default());
        }
        let size = std::mem::size_of::<GpuChain>() as u64;
        let raw = self.readback.read(
            &self.ctx,
            &[
                (
                    &self.buffers.chains,
                    u64::from(start) * size,
                    u64::from(end - start) * size,
                ),
                (
                    &self.buffers.diverged_at,
                    4 * u64::from(start),
                    4 * u64::from(end - start),
                ),
            ],
        )?;
        let chains: &[GpuChain] = bytemuck::cast_slice(&raw[0]);
        Ok(ChainStates {
            chains: chains.iter().map(|&c| c.into()).collect(),
            diverged_at: bytemuck::cast_slice(&raw[1]).to_vec(),
        })
    }

    fn write_chains(&mut self, first: u32, states: &ChainStates) -> anyhow::Result<()> {
        if states.chains.len() != states.diverged_at.len() {
            bail!("chain states and divergence steps differ in length");
        }
        let start = first.min(self.chains);
        let count = (states.chains.len() as u32).min(self.chains - start) as usize;
        if count == 0 {
            return Ok(());
        }
        let chains: Vec<GpuChain> = states.chains[..count].iter().map(|&c| c.into()).collect();
        let size = std::mem::size_of::<GpuChain>() as u64;
        let queue = &self.ctx.queue;
        queue.write_buffer(
            &self.buffers.chains,
            u64::from(start) * size,
            bytemuck::cast_slice(&chains),
        );
        queue.write_buffer(
            &self.buffers.diverged_at,
            4 * u64::from(start),
            bytemuck::cast_slice(&states.diverged_at[..count]),
        );
        Ok(())
    }

    fn reset(&mut self, init: &InitSpec, seed: u64) {
        self.seed = seed;
        self.step = 0;
        self.superchains = init.superchains.unwrap_or(0);
        let model = &self.model;
        let states: Vec<GpuChain> = {
            use rayon::prelude::*;
            (0..self.chains)
                .into_par_iter()
                .map(|i| init.chain(model, seed, i).into())
                .collect()
        };
        let queue = &self.ctx.queue;
        queue.write_buffer(&self.buffers.chains, 0, bytemuck::cast_slice(&states));
        let zeros = vec![0u32; self.chains as usize];
        queue.write_buffer(&self.buffers.diverged_at, 0, bytemuck::cast_slice(&zeros));
    }
}
