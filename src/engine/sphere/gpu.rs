//! The sphere engine on the GPU: `shaders/sphere.wgsl`, one invocation per chain with its
//! state in registers for all the steps of a dispatch, f32. Directions come back as f64 for
//! the measurements, which the CPU engine's f64 oracle checks (`tests/it/gpu.rs`).

use super::SphereEngine;
use crate::engine::gpu::{GpuContext, Readback, bind_group, compute_pipelines, uniform_buffer};
use crate::engine::shader_interface::{
    self, CHAIN_WORKGROUP, GpuSphereChain, GpuSphereParams, Program, SphereBinding,
};
use crate::engine::{BackendInfo, LOOP_BUDGET};
use crate::math::sphere::{SphereChain, SphereOptimizer, SphereProblem};
use anyhow::bail;
use glam::DVec3;
use std::sync::LazyLock;
use wgpu::util::DeviceExt;

/// The WGSL of the sphere engine: the generated prelude, Philox, the step.
pub static SPHERE_SHADER_SOURCE: LazyLock<String> =
    LazyLock::new(|| shader_interface::compose(Program::Sphere, &[]));

/// Longest dispatch, for display watchdogs on real GPUs.
const MAX_STEPS_PER_DISPATCH: u32 = 1024;

/// Loop iterations of one step: per minibatch slot the batch loop and a Philox call of ten
/// rounds, plus the step loop itself.
fn loop_iterations_per_step(batch: u32) -> u32 {
    11 * batch + 1
}

impl From<SphereChain> for GpuSphereChain {
    fn from(c: SphereChain) -> Self {
        let (x, v) = (c.x.as_vec3(), c.v.as_vec3());
        Self {
            x: x.extend(0.0).to_array(),
            v: v.extend(0.0).to_array(),
        }
    }
}

/// Projected SGD chains on the sphere, stepped in WGSL.
pub struct GpuSphereEngine {
    ctx: GpuContext,
    pipeline: wgpu::ComputePipeline,
    params: wgpu::Buffer,
    chain_buffer: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    readback: Readback,
    groups: [u32; 2],
    objects: Vec<DVec3>,
    optimizer: SphereOptimizer,
    chains: u32,
    seed: u64,
    steps_done: u32,
}

impl GpuSphereEngine {
    /// `chains` chains at the common start, at rest, on an open device.
    pub fn with_context(
        ctx: GpuContext,
        problem: SphereProblem,
        optimizer: SphereOptimizer,
        chains: u32,
        seed: u64,
    ) -> anyhow::Result<Self> {
        let device = &ctx.device;
        let bytes = u64::from(chains.max(1)) * std::mem::size_of::<GpuSphereChain>() as u64;
        let limits = device.limits();
        if bytes > limits.max_storage_buffer_binding_size || bytes > limits.max_buffer_size {
            bail!(
                "{chains} sphere chains need {bytes} bytes of state, more than {} allows",
                ctx.describe()
            );
        }
        let (layout, mut pipelines) = compute_pipelines::<SphereBinding>(
            &ctx,
            "sphere engine",
            SPHERE_SHADER_SOURCE.as_str(),
            &["advance_sphere"],
        )?;
        let pipeline = pipelines.remove(0);
        let params = uniform_buffer(device, "sphere params", size_of::<GpuSphereParams>() as u64);
        let start = vec![GpuSphereChain::from(SphereChain::at_start()); chains.max(1) as usize];
        let chain_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("sphere chains"),
            contents: bytemuck::cast_slice(&start),
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        });
        let objects = problem.objects();
        let rows: Vec<[f32; 4]> = objects
            .iter()
            .map(|a| a.as_vec3().extend(0.0).to_array())
            .collect();
        let object_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("sphere objects"),
            contents: bytemuck::cast_slice(&rows),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let bind_group = bind_group(device, &layout, "sphere engine", |b| match b {
            SphereBinding::Params => &params,
            SphereBinding::Chains => &chain_buffer,
            SphereBinding::Objects => &object_buffer,
        });
        let total = chains.div_ceil(CHAIN_WORKGROUP).max(1);
        let max_x = limits.max_compute_workgroups_per_dimension;
        let groups = [total.min(max_x), total.div_ceil(max_x)];
        Ok(Self {
            ctx,
            pipeline,
            params,
            chain_buffer,
            bind_group,
            readback: Readback::default(),
            groups,
            objects,
            optimizer,
            chains,
            seed,
            steps_done: 0,
        })
    }

    fn gpu_params(&self, step0: u32, steps: u32) -> GpuSphereParams {
        GpuSphereParams {
            seed_lo: self.seed as u32,
            seed_hi: (self.seed >> 32) as u32,
            step0,
            steps,
            chains: self.chains,
            groups_x: self.groups[0],
            data_n: self.objects.len() as u32,
            batch_size: self.optimizer.batch,
            h: self.optimizer.h as f32,
            momentum: self.optimizer.momentum as f32,
            pad1: 0,
            pad2: 0,
        }
    }
}

impl SphereEngine for GpuSphereEngine {
    fn backend(&self) -> BackendInfo {
        BackendInfo {
            kind: "gpu",
            device: self.ctx.describe(),
        }
    }

    fn objects(&self) -> &[DVec3] {
        &self.objects
    }

    fn steps_done(&self) -> u32 {
        self.steps_done
    }

    fn set_optimizer(&mut self, optimizer: SphereOptimizer) {
        self.optimizer = optimizer;
    }

    fn advance(&mut self, steps: u32) -> anyhow::Result<()> {
        let per_dispatch = (LOOP_BUDGET / loop_iterations_per_step(self.optimizer.batch))
            .clamp(1, MAX_STEPS_PER_DISPATCH);
        let mut done = 0;
        while done < steps {
            let n = (steps - done).min(per_dispatch);
            let params = self.gpu_params(self.steps_done + done, n);
            self.ctx
                .queue
                .write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
            let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(&self.pipeline);
                pass.set_bind_group(0, &self.bind_group, &[]);
                pass.dispatch_workgroups(self.groups[0], self.groups[1], 1);
            }
            self.ctx.queue.submit([encoder.finish()]);
            done += n;
        }
        self.steps_done += steps;
        Ok(())
    }

    fn positions(&mut self) -> anyhow::Result<Vec<DVec3>> {
        if self.chains == 0 {
            return Ok(Vec::new());
        }
        let size = u64::from(self.chains) * std::mem::size_of::<GpuSphereChain>() as u64;
        let raw = self
            .readback
            .read(&self.ctx, &[(&self.chain_buffer, 0, size)])?;
        let chains: &[GpuSphereChain] = bytemuck::cast_slice(&raw[0]);
        Ok(chains
            .iter()
            .map(|c| DVec3::new(c.x[0].into(), c.x[1].into(), c.x[2].into()).normalize())
            .collect())
    }
}
