//! The GPU engine for MLP posteriors: `shaders/mlp.wgsl`. The gradient, nearly all of a
//! step's work, runs one workgroup of [`MLP_NET_WORKGROUP`] invocations per network
//! ([`MlpKernel::PerNetwork`]) where the device has the workgroup memory, else one invocation
//! per network ([`MlpKernel::PerChain`]); the sampler's halves run one invocation per network.
//!
//! Sampler parameters travel in the same uniform block as the 2-D engine's
//! (`GpuSamplerParams`), the network's in a block of its own (`GpuMlpParams`), so a slider
//! change is one small write. A step is a first-half dispatch, the minibatch in slices and a
//! second-half dispatch (the shader says why: llvmpipe's loop limit); one submission carries
//! many steps, each dispatch finding its step and slice at a dynamic uniform offset. An
//! advance reads back per-workgroup layer statistics only; predictions, single parameters and
//! weights are read on request.

use super::{MlpEngine, MlpReport, ParameterStates, Prediction};
use crate::engine::BackendInfo;
use crate::engine::gpu::{
    Features, GpuContext, Readback, ShaderProgram, bind_group, uniform_buffer,
};
use crate::engine::shader_interface::{
    self, GpuMlpParams, GpuSamplerParams, MLP_NET_WORKGROUP, MLP_NET_WORKGROUP_BYTES, MLP_PARTIALS,
    MLP_WORKGROUP, MlpBinding, MlpPartial, MlpRegion, MlpSlice as Slice, Program,
    SPECIALISED_ACTIVATION, SPECIALISED_SAMPLER,
};
use crate::math::mlp::{Architecture, ChainSlices, MlpInit, MlpModel};
use anyhow::{bail, ensure};
use bytemuck::Zeroable;
use rayon::prelude::*;
use std::sync::LazyLock;
use wgpu::util::DeviceExt;

/// The WGSL of the MLP engine: the generated prelude of [`shader_interface`], then the files
/// that mirror `src/math`.
pub static MLP_SHADER_SOURCE: LazyLock<String> =
    LazyLock::new(|| shader_interface::compose(Program::Mlp, &[]));

/// Partial sums per workgroup (`partials` in `shaders/mlp.wgsl`).
const PARTIAL_FIELDS: usize = MLP_PARTIALS as usize;
/// Steps per submission: short submissions keep display watchdogs and the UI's queue happy.
const STEPS_PER_SUBMISSION: u32 = 16;
/// [`LOOP_BUDGET`] as the sizes here count.
const LOOP_BUDGET: usize = crate::engine::LOOP_BUDGET as usize;

impl Slice {
    fn whole(step: u32) -> Self {
        Self {
            step,
            ..Self::zeroed()
        }
    }
}

/// How the GPU engine computes the minibatch gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlpKernel {
    /// One invocation per network, looping over its weights and examples (`mlp_accumulate`):
    /// for devices with less workgroup memory than the other needs.
    PerChain,
    /// One workgroup of [`MLP_NET_WORKGROUP`] invocations per network (`mlp_net_accumulate`):
    /// examples and parameters shared out among them, θ in workgroup memory.
    PerNetwork,
}

impl MlpKernel {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            MlpKernel::PerChain => "per-chain",
            MlpKernel::PerNetwork => "per-network",
        }
    }

    /// Invocations that work on one network's gradient.
    pub fn invocations_per_network(self) -> u32 {
        match self {
            MlpKernel::PerChain => 1,
            MlpKernel::PerNetwork => MLP_NET_WORKGROUP,
        }
    }

    /// Whether `device` can run this kernel.
    pub fn fits(self, device: &wgpu::Device) -> bool {
        let limits = device.limits();
        match self {
            MlpKernel::PerChain => true,
            MlpKernel::PerNetwork => {
                limits.max_compute_workgroup_storage_size >= MLP_NET_WORKGROUP_BYTES
                    && limits.max_compute_invocations_per_workgroup >= MLP_NET_WORKGROUP
                    && limits.max_compute_workgroup_size_x >= MLP_NET_WORKGROUP
            }
        }
    }

    /// The faster kernel `device` can run.
    pub fn best_for(device: &wgpu::Device) -> Self {
        if MlpKernel::PerNetwork.fits(device) {
            MlpKernel::PerNetwork
        } else {
            MlpKernel::PerChain
        }
    }
}

/// The entry points of `shaders/mlp.wgsl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    FirstHalf,
    Accumulate,
    NetAccumulate,
    SecondHalf,
    ClearGradient,
    AccumulateAll,
    NetAccumulateAll,
    FinishGradient,
    Statistics,
    Predict,
}

impl Entry {
    const ALL: [Entry; 10] = [
        Entry::FirstHalf,
        Entry::Accumulate,
        Entry::NetAccumulate,
        Entry::SecondHalf,
        Entry::ClearGradient,
        Entry::AccumulateAll,
        Entry::NetAccumulateAll,
        Entry::FinishGradient,
        Entry::Statistics,
        Entry::Predict,
    ];

    /// Whether the entry runs one workgroup per network (else one invocation per item).
    fn per_network(self) -> bool {
        matches!(self, Entry::NetAccumulate | Entry::NetAccumulateAll)
    }

    fn name(self) -> &'static str {
        match self {
            Entry::FirstHalf => "mlp_first_half",
            Entry::Accumulate => "mlp_accumulate",
            Entry::NetAccumulate => "mlp_net_accumulate",
            Entry::SecondHalf => "mlp_second_half",
            Entry::ClearGradient => "mlp_clear_gradient",
            Entry::AccumulateAll => "mlp_accumulate_all",
            Entry::NetAccumulateAll => "mlp_net_accumulate_all",
            Entry::FinishGradient => "mlp_finish_gradient",
            Entry::Statistics => "mlp_statistics",
            Entry::Predict => "mlp_predict",
        }
    }
}

/// Loop iterations of one forward pass in `forward_into` and `softmax_at` (an upper bound).
fn forward_iterations(arch: &Architecture) -> usize {
    let (mut outputs, mut products) = (0, 0);
    for l in 0..arch.layers() {
        let layout = arch.layer(l);
        outputs += layout.outputs;
        products += layout.outputs * layout.inputs;
    }
    arch.layers() + outputs + products + 4 * arch.classes()
}

/// Loop iterations of one example in `accumulate_example`, with its Philox draw.
fn example_iterations(arch: &Architecture) -> usize {
    let layers = arch.layers();
    let (mut inputs, mut outputs, mut products) = (0, 0, 0);
    for l in 0..layers {
        let layout = arch.layer(l);
        inputs += layout.inputs;
        outputs += layout.outputs;
        products += layout.outputs * layout.inputs;
    }
    // Forward; backward (biases and weights, the δ of the layer below); layer offsets; Philox.
    forward_iterations(arch) + layers + outputs + 2 * products + inputs + layers * layers + 10
}

/// Loop iterations of one invocation of `mlp_net_accumulate` (an upper bound): per dispatch
/// (θ copied in, the owned gradient sums in and out) and per tile of [`MLP_NET_WORKGROUP`]
/// examples (the invocation's example forward, its errors, and the tile's examples added to
/// each owned sum, layer by layer).
fn net_iterations(arch: &Architecture) -> (usize, usize) {
    let w = MLP_NET_WORKGROUP as usize;
    let layers = arch.layers();
    let owned: usize = arch.layer_params().iter().map(|p| p.div_ceil(w)).sum();
    let per_dispatch = arch.params().div_ceil(w) + 2 * (owned + layers);
    let (mut stores, mut back) = (0, 0);
    for l in 0..layers {
        let layout = arch.layer(l);
        stores += layout.inputs + layout.outputs;
        if l > 0 {
            back += layout.inputs * (layout.outputs + 1);
        }
    }
    // Logits offset, forward and softmax, errors of the logits, Philox; per layer: the loop,
    // the stores, the error below, the slot base, and each owned sum over the tile.
    let per_tile = layers
        + forward_iterations(arch)
        + arch.classes()
        + 10
        + layers
        + stores
        + back
        + layers * layers
        + owned * (w + 1);
    (per_dispatch, per_tile)
}

/// The GPU backend for MLP posteriors.
pub struct MlpGpuEngine {
    ctx: GpuContext,
    kernel: MlpKernel,
    pipelines: Vec<(Entry, wgpu::ComputePipeline)>,
    program: ShaderProgram,
    sampler_params: wgpu::Buffer,
    mlp_params: wgpu::Buffer,
    slices: wgpu::Buffer,
    slice_capacity: u64,
    slice_stride: u64,
    state: wgpu::Buffer,
    diverged_at: wgpu::Buffer,
    data: wgpu::Buffer,
    partials: wgpu::Buffer,
    points: wgpu::Buffer,
    predictions: wgpu::Buffer,
    point_capacity: u32,
    bind_group: wgpu::BindGroup,
    readback: Readback,
    model: MlpModel,
    chains: u32,
    seed: u64,
    step: u32,
}

fn storage_buffer(device: &wgpu::Device, label: &str, size: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size.max(16),
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// The buffers of the bind group, in the order of [`MlpBinding`] but for the slices, which
/// come last.
struct Bound<'a> {
    sampler_params: &'a wgpu::Buffer,
    mlp_params: &'a wgpu::Buffer,
    state: &'a wgpu::Buffer,
    diverged_at: &'a wgpu::Buffer,
    data: &'a wgpu::Buffer,
    partials: &'a wgpu::Buffer,
    points: &'a wgpu::Buffer,
    predictions: &'a wgpu::Buffer,
    slices: &'a wgpu::Buffer,
}

impl MlpGpuEngine {
    /// Every entry point compiled for the model's sampler, activation and [`Features`] (the
    /// shader's override constants): their switches sit in the innermost loops, and llvmpipe
    /// would run every branch of a switch it cannot prove uniform.
    fn specialised(
        program: &ShaderProgram,
        ctx: &GpuContext,
        model: &MlpModel,
        kernel: MlpKernel,
    ) -> anyhow::Result<Vec<(Entry, wgpu::ComputePipeline)>> {
        let mut constants = vec![
            (
                SPECIALISED_SAMPLER,
                f64::from(model.sampler.kind.gpu_code()),
            ),
            (
                SPECIALISED_ACTIVATION,
                f64::from(model.posterior.arch.activation.gpu_code()),
            ),
        ];
        constants.extend(Features::of(&model.sampler, &model.schedule).constants());
        // The workgroup kernel only where it fits: its workgroup memory fails validation
        // elsewhere.
        Entry::ALL
            .iter()
            .filter(|e| kernel == MlpKernel::PerNetwork || !e.per_network())
            .map(|&e| Ok((e, program.pipeline(ctx, e.name(), &constants)?)))
            .collect()
    }

    /// `chains` networks on an existing device, with the faster gradient kernel it can run.
    pub fn with_context(
        ctx: GpuContext,
        model: MlpModel,
        chains: u32,
        init: &MlpInit,
        seed: u64,
    ) -> anyhow::Result<Self> {
        let kernel = MlpKernel::best_for(&ctx.device);
        Self::with_kernel(ctx, model, chains, init, seed, kernel)
    }

    /// `chains` networks on an existing device with the gradient kernel `kernel` (for
    /// comparing the kernels; an error where the device cannot run it).
    pub fn with_kernel(
        ctx: GpuContext,
        model: MlpModel,
        chains: u32,
        init: &MlpInit,
        seed: u64,
        kernel: MlpKernel,
    ) -> anyhow::Result<Self> {
        ensure!(
            kernel.fits(&ctx.device),
            "{} cannot run the {} MLP kernel ({} bytes of workgroup memory, {} invocations)",
            ctx.describe(),
            kernel.name(),
            MLP_NET_WORKGROUP_BYTES,
            MLP_NET_WORKGROUP
        );
        let device = &ctx.device;
        let params_count = model.posterior.params() as u64;
        let state_bytes = 4 * MlpRegion::ALL.len() as u64 * params_count * u64::from(chains);
        let limit = device.limits().max_storage_buffer_binding_size;
        if state_bytes > limit {
            bail!(
                "{chains} networks of {params_count} parameters need {} MiB of GPU state; \
                 {} allows {} MiB: use fewer chains or a smaller network",
                state_bytes >> 20,
                ctx.describe(),
                limit >> 20
            );
        }
        let slice_size = std::mem::size_of::<Slice>() as u64;
        let program = ShaderProgram::new::<MlpBinding>(&ctx, "MLP", MLP_SHADER_SOURCE.as_str())?;
        let pipelines = Self::specialised(&program, &ctx, &model, kernel)?;
        let sampler_params = uniform_buffer(
            device,
            "mlp sampler params",
            size_of::<GpuSamplerParams>() as u64,
        );
        let mlp_params = uniform_buffer(device, "mlp params", size_of::<GpuMlpParams>() as u64);
        let slice_stride =
            u64::from(device.limits().min_uniform_buffer_offset_alignment).max(slice_size);
        let slice_capacity = 64;
        let slices = uniform_buffer(device, "mlp slices", slice_capacity * slice_stride);
        let state = storage_buffer(device, "mlp state", state_bytes);
        let diverged_at = storage_buffer(device, "mlp diverged", 4 * u64::from(chains));
        let data = Self::data_buffer(device, &model);
        let groups = u64::from(chains.div_ceil(MLP_WORKGROUP));
        let partials = storage_buffer(device, "mlp partials", 4 * PARTIAL_FIELDS as u64 * groups);
        let points = storage_buffer(device, "mlp points", 8);
        let predictions = storage_buffer(device, "mlp predictions", 4 * 25);
        let bind_group = Self::bind_group(
            device,
            &program.layout,
            Bound {
                sampler_params: &sampler_params,
                mlp_params: &mlp_params,
                state: &state,
                diverged_at: &diverged_at,
                data: &data,
                partials: &partials,
                points: &points,
                predictions: &predictions,
                slices: &slices,
            },
        );
        let mut engine = Self {
            ctx,
            kernel,
            pipelines,
            program,
            sampler_params,
            mlp_params,
            slices,
            slice_capacity,
            slice_stride,
            state,
            diverged_at,
            data,
            partials,
            points,
            predictions,
            point_capacity: 1,
            bind_group,
            readback: Readback::default(),
            model,
            chains,
            seed,
            step: 0,
        };
        engine.reset(init, seed)?;
        Ok(engine)
    }

    fn data_buffer(device: &wgpu::Device, model: &MlpModel) -> wgpu::Buffer {
        let post = &model.posterior;
        let rows: Vec<[f32; 4]> = post
            .inputs
            .iter()
            .zip(&post.labels)
            .map(|(x, &y)| [x[0], x[1], y as f32, 0.0])
            .collect();
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("mlp data"),
            contents: bytemuck::cast_slice(&rows),
            usage: wgpu::BufferUsages::STORAGE,
        })
    }

    fn bind_group(
        device: &wgpu::Device,
        layout: &wgpu::BindGroupLayout,
        bound: Bound<'_>,
    ) -> wgpu::BindGroup {
        bind_group(device, layout, "mlp", |b| match b {
            MlpBinding::Sampler => bound.sampler_params,
            MlpBinding::Params => bound.mlp_params,
            MlpBinding::State => bound.state,
            MlpBinding::DivergedAt => bound.diverged_at,
            MlpBinding::Data => bound.data,
            MlpBinding::Partials => bound.partials,
            MlpBinding::Points => bound.points,
            MlpBinding::Predictions => bound.predictions,
            MlpBinding::Slice => bound.slices,
        })
    }

    fn rebind(&mut self) {
        self.bind_group = Self::bind_group(
            &self.ctx.device,
            &self.program.layout,
            Bound {
                sampler_params: &self.sampler_params,
                mlp_params: &self.mlp_params,
                state: &self.state,
                diverged_at: &self.diverged_at,
                data: &self.data,
                partials: &self.partials,
                points: &self.points,
                predictions: &self.predictions,
                slices: &self.slices,
            },
        );
    }

    /// The uniform blocks shared by the dispatches of one submission: the sampler's and the
    /// network's (no prediction requested).
    fn gpu_params(&self) -> (GpuSamplerParams, GpuMlpParams) {
        let m = &self.model;
        let post = &m.posterior;
        let mut sizes = [[0u32; 4]; 2];
        let flat: &mut [u32] = bytemuck::cast_slice_mut(&mut sizes);
        for (s, &n) in flat.iter_mut().zip(&post.arch.sizes) {
            *s = n as u32;
        }
        let sampler =
            GpuSamplerParams::for_sampler(&m.sampler, &m.schedule, self.seed, self.chains);
        let mlp = GpuMlpParams {
            data_n: post.inputs.len() as u32,
            batch_size: post.batch_size,
            layers: post.arch.layers() as u32,
            param_count: post.params() as u32,
            prior_precision: post.prior_precision,
            sizes,
            ..Zeroable::zeroed()
        };
        (sampler, mlp)
    }

    /// Writes the uniform blocks `params`, then runs `dispatches` (entry point, slice,
    /// invocations, or networks for a per-network entry) in order in one submission, each
    /// seeing its own slice at a dynamic offset.
    fn submit(
        &mut self,
        params: &(GpuSamplerParams, GpuMlpParams),
        dispatches: &[(Entry, Slice, u32)],
    ) {
        let needed = dispatches.len() as u64;
        if needed > self.slice_capacity {
            self.slice_capacity = needed.next_power_of_two();
            self.slices = uniform_buffer(
                &self.ctx.device,
                "mlp slices",
                self.slice_capacity * self.slice_stride,
            );
            self.rebind();
        }
        let stride = self.slice_stride as usize;
        let max_x = self
            .ctx
            .device
            .limits()
            .max_compute_workgroups_per_dimension;
        let mut bytes = vec![0u8; dispatches.len() * stride];
        for (i, (_, slice, _)) in dispatches.iter().enumerate() {
            bytes[i * stride..][..std::mem::size_of::<Slice>()]
                .copy_from_slice(bytemuck::bytes_of(slice));
        }
        let queue = &self.ctx.queue;
        queue.write_buffer(&self.sampler_params, 0, bytemuck::bytes_of(&params.0));
        queue.write_buffer(&self.mlp_params, 0, bytemuck::bytes_of(&params.1));
        queue.write_buffer(&self.slices, 0, &bytes);
        let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for (i, (entry, _, invocations)) in dispatches.iter().enumerate() {
                let pipeline = &self
                    .pipelines
                    .iter()
                    .find(|(e, _)| e == entry)
                    .expect("every entry has a pipeline")
                    .1;
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, &self.bind_group, &[(i * stride) as u32]);
                if entry.per_network() {
                    // A workgroup per network, on a 2-D grid beyond one dimension's limit.
                    let x = (*invocations).clamp(1, max_x);
                    pass.dispatch_workgroups(x, invocations.div_ceil(x).max(1), 1);
                } else {
                    pass.dispatch_workgroups(invocations.div_ceil(MLP_WORKGROUP).max(1), 1, 1);
                }
            }
        }
        queue.submit([encoder.finish()]);
    }

    /// The minibatch slots of one step in slices that keep each invocation within the loop
    /// budget (whole tiles for the per-network kernel).
    fn batch_slices(&self, step: u32) -> impl Iterator<Item = Slice> + use<> {
        let post = &self.model.posterior;
        let per = match self.kernel {
            MlpKernel::PerChain => (LOOP_BUDGET / example_iterations(&post.arch)).max(1) as u32,
            MlpKernel::PerNetwork => {
                let (fixed, tile) = net_iterations(&post.arch);
                let tiles = (LOOP_BUDGET.saturating_sub(fixed) / tile).max(1) as u32;
                tiles * MLP_NET_WORKGROUP
            }
        };
        let batch = post.batch_size;
        (0..batch).step_by(per as usize).map(move |first| Slice {
            step,
            first,
            end: (first + per).min(batch),
            with_focus: 0,
        })
    }

    /// The entry point that adds a slice of the minibatch's gradient: of the alive networks,
    /// or of all of them (`all`, for [`MlpEngine::gradients`]).
    fn accumulate_entry(&self, all: bool) -> Entry {
        match (self.kernel, all) {
            (MlpKernel::PerChain, false) => Entry::Accumulate,
            (MlpKernel::PerChain, true) => Entry::AccumulateAll,
            (MlpKernel::PerNetwork, false) => Entry::NetAccumulate,
            (MlpKernel::PerNetwork, true) => Entry::NetAccumulateAll,
        }
    }

    /// The gradient kernel this engine runs.
    pub fn kernel(&self) -> MlpKernel {
        self.kernel
    }

    /// Where region `region` of parameter `param` lies in the state buffer, across chains:
    /// (offset, size) in bytes.
    fn region_range(&self, region: MlpRegion, param: u64) -> (u64, u64) {
        let n = u64::from(self.chains);
        let params = self.model.posterior.params() as u64;
        (
            4 * (u64::from(region.gpu_code()) * params + param) * n,
            4 * n,
        )
    }

    /// A whole region, transposed to chain-major.
    fn read_region_chain_major(&mut self, region: MlpRegion) -> anyhow::Result<Vec<f32>> {
        let n = self.chains as usize;
        let params = self.model.posterior.params();
        let bytes = 4 * (params * n) as u64;
        let offset = u64::from(region.gpu_code()) * bytes;
        let raw = self
            .readback
            .read(&self.ctx, &[(&self.state, offset, bytes)])?;
        let flat: &[f32] = bytemuck::cast_slice(&raw[0]);
        let mut out = vec![0.0; params * n];
        for (i, column) in flat.chunks_exact(n).enumerate() {
            for (chain, &v) in column.iter().enumerate() {
                out[chain * params + i] = v;
            }
        }
        Ok(out)
    }
}

impl MlpEngine for MlpGpuEngine {
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

    fn model(&self) -> &MlpModel {
        &self.model
    }

    fn set_model(&mut self, model: MlpModel) -> anyhow::Result<()> {
        ensure!(
            model.posterior.arch == self.model.posterior.arch,
            "the architecture changed: make a new engine"
        );
        if model.sampler.kind != self.model.sampler.kind
            || Features::of(&model.sampler, &model.schedule)
                != Features::of(&self.model.sampler, &self.model.schedule)
        {
            self.pipelines = Self::specialised(&self.program, &self.ctx, &model, self.kernel)?;
        }
        let data_changed = model.posterior.inputs != self.model.posterior.inputs
            || model.posterior.labels != self.model.posterior.labels;
        self.model = model;
        if data_changed {
            self.data = Self::data_buffer(&self.ctx.device, &self.model);
            self.rebind();
        }
        Ok(())
    }

    fn advance(&mut self, steps: u32) -> anyhow::Result<MlpReport> {
        let chains = self.chains;
        let params = self.gpu_params();
        let mut done = 0;
        loop {
            let n = (steps - done).min(STEPS_PER_SUBMISSION);
            let mut dispatches = Vec::new();
            for k in 0..n {
                let step = self.step.wrapping_add(done + k);
                dispatches.push((Entry::FirstHalf, Slice::whole(step), chains));
                for slice in self.batch_slices(step) {
                    dispatches.push((self.accumulate_entry(false), slice, chains));
                }
                dispatches.push((Entry::SecondHalf, Slice::whole(step), chains));
            }
            done += n;
            let last = done == steps;
            if last {
                dispatches.push((Entry::Statistics, Slice::zeroed(), chains));
            }
            self.submit(&params, &dispatches);
            if last {
                break;
            }
        }
        self.step = self.step.wrapping_add(steps);
        let raw = self
            .readback
            .read(&self.ctx, &[(&self.partials, 0, self.partials.size())])?;
        let partials: &[f32] = bytemuck::cast_slice(&raw[0]);
        let arch = &self.model.posterior.arch;
        let layers = arch.layers();
        let (mut alive, mut diverged) = (0u64, 0u64);
        let mut sums = vec![[0.0f64; 2]; layers];
        for p in partials.chunks_exact(PARTIAL_FIELDS) {
            alive += p[MlpPartial::Alive.slot(0)] as u64;
            diverged += p[MlpPartial::Diverged.slot(0)] as u64;
            for (l, s) in sums.iter_mut().enumerate() {
                let first = MlpPartial::Layers.slot(l);
                s[0] += f64::from(p[first]);
                s[1] += f64::from(p[first + 1]);
            }
        }
        let sizes = arch.layer_params();
        Ok(MlpReport::from_sums(
            self.step, alive, diverged, &sums, &sizes,
        ))
    }

    fn gradients(&mut self) -> anyhow::Result<Vec<f32>> {
        let params = self.gpu_params();
        let whole = Slice::whole(self.step);
        let mut dispatches = vec![(Entry::ClearGradient, whole, self.chains)];
        for slice in self.batch_slices(self.step) {
            dispatches.push((self.accumulate_entry(true), slice, self.chains));
        }
        dispatches.push((Entry::FinishGradient, whole, self.chains));
        self.submit(&params, &dispatches);
        self.read_region_chain_major(MlpRegion::Gradient)
    }

    fn read_parameter(&mut self, param: usize) -> anyhow::Result<ParameterStates> {
        let params = self.model.posterior.params();
        ensure!(param < params, "parameter {param} of {params}");
        let [theta, p, xi] = [MlpRegion::Theta, MlpRegion::P, MlpRegion::Xi]
            .map(|region| self.region_range(region, param as u64));
        let raw = self.readback.read(
            &self.ctx,
            &[
                (&self.state, theta.0, theta.1),
                (&self.state, p.0, p.1),
                (&self.state, xi.0, xi.1),
                (&self.diverged_at, 0, 4 * u64::from(self.chains)),
            ],
        )?;
        let floats = |bytes: &[u8]| bytemuck::cast_slice::<u8, f32>(bytes).to_vec();
        Ok(ParameterStates {
            theta: floats(&raw[0]),
            p: floats(&raw[1]),
            xi: floats(&raw[2]),
            diverged_at: bytemuck::cast_slice(&raw[3]).to_vec(),
        })
    }

    fn read_weights(&mut self, first: u32, count: u32) -> anyhow::Result<Vec<f32>> {
        let params = self.model.posterior.params();
        let start = first.min(self.chains) as usize;
        let end = first.saturating_add(count).min(self.chains) as usize;
        let all = self.read_region_chain_major(MlpRegion::Theta)?;
        Ok(all[start * params..end * params].to_vec())
    }

    fn predict(
        &mut self,
        points: &[[f32; 2]],
        chains: u32,
        focus: u32,
    ) -> anyhow::Result<Prediction> {
        let k = self.model.posterior.arch.classes();
        let count = points.len() as u32;
        if count == 0 {
            return Ok(Prediction {
                classes: k,
                ..Default::default()
            });
        }
        let stride = 3 * k + 1;
        let bytes = 4 * (stride * count as usize) as u64;
        if count > self.point_capacity {
            let device = &self.ctx.device;
            self.points = storage_buffer(device, "mlp points", 8 * u64::from(count));
            self.predictions = storage_buffer(device, "mlp predictions", bytes);
            self.point_capacity = count;
            self.rebind();
        }
        let queue = &self.ctx.queue;
        queue.write_buffer(&self.points, 0, bytemuck::cast_slice(points));
        let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
        encoder.clear_buffer(&self.predictions, 0, Some(bytes));
        queue.submit([encoder.finish()]);
        let mut params = self.gpu_params();
        params.1.points = count;
        params.1.focus_chain = focus.min(self.chains.saturating_sub(1));
        let chains = chains.min(self.chains);
        let per = (LOOP_BUDGET / forward_iterations(&self.model.posterior.arch)).max(1) as u32;
        let mut dispatches: Vec<_> = (0..chains)
            .step_by(per as usize)
            .map(|first| {
                let slice = Slice {
                    step: self.step,
                    first,
                    end: (first + per).min(chains),
                    with_focus: 0,
                };
                (Entry::Predict, slice, count)
            })
            .collect();
        // One dispatch also draws the focus chain's own map (a dispatch of its own when no
        // chains are averaged).
        if dispatches.is_empty() {
            dispatches.push((Entry::Predict, Slice::whole(self.step), count));
        }
        if let Some((_, slice, _)) = dispatches.last_mut() {
            slice.with_focus = 1;
        }
        self.submit(&params, &dispatches);
        let raw = self
            .readback
            .read(&self.ctx, &[(&self.predictions, 0, bytes)])?;
        let flat: &[f32] = bytemuck::cast_slice(&raw[0]);
        let mut out = Prediction {
            classes: k,
            chains_used: flat[3 * k] as u32,
            ..Default::default()
        };
        // Sums to means as the CPU engine does: times 1/count.
        let inv = 1.0 / out.chains_used.max(1) as f32;
        for row in flat.chunks_exact(stride) {
            out.mean.extend(row[..k].iter().map(|v| v * inv));
            out.mean_square
                .extend(row[k..2 * k].iter().map(|v| v * inv));
            out.focus.extend_from_slice(&row[2 * k..3 * k]);
        }
        Ok(out)
    }

    fn reset(&mut self, init: &MlpInit, seed: u64) -> anyhow::Result<()> {
        self.seed = seed;
        self.step = 0;
        let regions = initial_regions(&self.model, init, seed, self.chains);
        let queue = &self.ctx.queue;
        queue.write_buffer(&self.state, 0, bytemuck::cast_slice(&regions));
        let zeros = vec![0u32; self.chains as usize];
        queue.write_buffer(&self.diverged_at, 0, bytemuck::cast_slice(&zeros));
        Ok(())
    }
}

/// The initial state of every chain in the GPU's layout: the regions θ, p and ξ of
/// P × chains with the chain index fastest, from the start of the state buffer.
fn initial_regions(model: &MlpModel, init: &MlpInit, seed: u64, chains: u32) -> Vec<f32> {
    // The order of `ChainSlices` below.
    const WRITTEN: [MlpRegion; 3] = [MlpRegion::Theta, MlpRegion::P, MlpRegion::Xi];
    let params = model.posterior.params();
    let per_chain: Vec<Vec<f32>> = (0..chains)
        .into_par_iter()
        .map(|chain| {
            let mut v = vec![0.0; 3 * params];
            let (theta, rest) = v.split_at_mut(params);
            let (p, xi) = rest.split_at_mut(params);
            model.initial_state(init, seed, chain, ChainSlices { theta, p, xi });
            v
        })
        .collect();
    let n = chains as usize;
    let regions = WRITTEN
        .iter()
        .map(|r| r.gpu_code() as usize + 1)
        .max()
        .unwrap_or(0);
    let mut out = vec![0.0; regions * params * n];
    for (chain, v) in per_chain.iter().enumerate() {
        for (region, values) in WRITTEN.iter().zip(v.chunks_exact(params)) {
            let first = region.gpu_code() as usize * params;
            for (i, &value) in values.iter().enumerate() {
                out[(first + i) * n + chain] = value;
            }
        }
    }
    out
}
