//! What the integration tests share: the helpers they repeat, and the process-wide state
//! that one binary's tests meet from parallel threads.
//!
//! - **The GPU device**: [`gpu`] opens it once, on first use, for every engine test (those
//!   through the runner or a `BackendChoice` open their own); without an adapter every test
//!   that asks for it fails loudly (never a skip).
//! - **The working directory**: one per process, and no test changes it. Tests pass absolute
//!   paths: the app's output folders come from `Folders::under(scratch)`, the binary's
//!   children get their folder as `current_dir`, snapshots are found from the crate's root.
//! - **The environment**: no test sets a variable in this process; a child that needs one
//!   gets it on its own `Command`.

#[cfg(feature = "gui")]
pub mod harness;

use atmc_lab::engine::BackendChoice;
use atmc_lab::engine::gpu::GpuContext;
use atmc_lab::math::InitSpec;
use atmc_lab::math::{NoiseSpec, SamplerKind, SamplerSpec, ScheduleSpec, TargetSpec};
use atmc_lab::preset::{Preset, ViewHints};
use atmc_lab::runner::{self, RunOutcome};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// A preset on `target` with the corrected sampler's defaults (h = 0.05, m = D = T = 1).
pub fn preset(kind: SamplerKind, target: &str, sigma: f64) -> Preset {
    Preset {
        name: "test".into(),
        description: String::new(),
        story: Default::default(),
        sampler: SamplerSpec::new(kind),
        target: TargetSpec::from_name(target).expect("known target"),
        noise: if sigma == 0.0 {
            NoiseSpec::None
        } else {
            NoiseSpec::Isotropic { sigma }
        },
        schedule: ScheduleSpec::Constant,
        chains: 10_000,
        steps: 2_000,
        seed: 12345,
        record_every: 10,
        init: InitSpec::default(),
        view: ViewHints::default(),
    }
}

/// Runs a preset to the end on a backend.
pub fn run(p: &Preset, backend: BackendChoice) -> RunOutcome {
    runner::run(p, backend, &mut |_| {}).expect("run completes")
}

/// Asserts |a − b| ≤ tol · |b|.
pub fn assert_rel(what: &str, a: f64, b: f64, tol: f64) {
    assert!(
        (a - b).abs() <= tol * b.abs(),
        "{what}: {a} is not within {:.1}% of {b}",
        tol * 100.0
    );
}

/// Runs `entry` — WGSL that defines `fn check(bits: u32) -> u32` using the functions in
/// `library` — over `inputs` on the GPU and returns its outputs. The check's own buffers sit
/// at bindings 14 and 15 of group 0, clear of the library's. Panics (no silent skip) when no
/// adapter exists.
pub fn run_wgsl_check(library: &str, entry: &str, inputs: &[u32]) -> Vec<u32> {
    use wgpu::util::DeviceExt;
    let ctx = gpu();
    let device = &ctx.device;
    let source = format!(
        "{library}\n{entry}\n\
         @group(0) @binding(14) var<storage, read> check_in: array<u32>;\n\
         @group(0) @binding(15) var<storage, read_write> check_out: array<u32>;\n\
         @compute @workgroup_size(64)\n\
         fn run_check(@builtin(global_invocation_id) id: vec3<u32>) {{\n\
             if (id.x < arrayLength(&check_in)) {{ check_out[id.x] = check(check_in[id.x]); }}\n\
         }}\n"
    );
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("wgsl check"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("wgsl check"),
        layout: None,
        module: &module,
        entry_point: Some("run_check"),
        compilation_options: Default::default(),
        cache: None,
    });
    let n = inputs.len() as u64;
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("check in"),
        contents: bytemuck::cast_slice(inputs),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("check out"),
        size: 4 * n,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 14,
                resource: input.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 15,
                resource: output.as_entire_binding(),
            },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups((n as u32).div_ceil(64), 1, 1);
    }
    ctx.queue.submit([encoder.finish()]);
    let bytes = ctx.read_buffer(&output, 0, 4 * n).expect("read back");
    bytemuck::cast_slice(&bytes).to_vec()
}

/// The GPU device of this test binary, opened by the first test that asks for it and shared
/// by all that ask (one per engine cost each GPU test its own instance, adapter enumeration
/// and device). Panics when there is no usable adapter, in every test that asks: a skipped
/// GPU test would hide exactly the failures it exists to catch.
pub fn gpu() -> &'static GpuContext {
    static DEVICE: OnceLock<GpuContext> = OnceLock::new();
    DEVICE.get_or_init(|| {
        GpuContext::new().unwrap_or_else(|e| {
            panic!(
                "no usable GPU adapter: {e:#}\n\
                 install Mesa's software Vulkan (apt-get install mesa-vulkan-drivers libvulkan1)"
            )
        })
    })
}

/// A GPU engine on the binary's shared device (which panics when there is no adapter), for
/// `p` as the runner would build it.
pub fn gpu_engine(p: &atmc_lab::preset::Preset) -> atmc_lab::engine::gpu::GpuEngine {
    atmc_lab::engine::gpu::GpuEngine::with_context(
        gpu().clone(),
        model(p),
        p.chains,
        &p.init,
        p.seed,
    )
    .expect("engine")
}

/// The CPU engine for `p`, beside [`gpu_engine`]'s.
pub fn cpu_engine(p: &atmc_lab::preset::Preset) -> atmc_lab::engine::cpu::CpuEngine {
    atmc_lab::engine::cpu::CpuEngine::new(model(p), p.chains, &p.init, p.seed)
}

/// Runs the `atmc-lab` binary with `args` in the crate's root, where `presets/` is.
pub fn atmc_lab(args: &[&str]) -> Output {
    atmc_lab_in(args, Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// Runs the `atmc-lab` binary with `args` in `dir`, with a runtime folder of its own (GPU
/// drivers warn without one).
pub fn atmc_lab_in(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args(args)
        .current_dir(dir)
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("binary runs")
}

/// A fresh, empty scratch folder for one test of a suite (named by both: the tests of one
/// binary share a process id).
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atmc-{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A path as a command-line argument (the tests' paths are UTF-8).
pub fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A command's standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The last line of a command's standard output, parsed as the JSON object it must be.
pub fn last_json(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().expect("stdout has a line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// The runtime model of a test's preset, checked first (what the app and the runner do).
pub fn model(preset: &atmc_lab::preset::Preset) -> atmc_lab::math::Model {
    preset
        .clone()
        .validated()
        .unwrap_or_else(|(field, m)| panic!("the test's preset: {field}: {m}"))
        .model()
}

/// A test's preset, checked (what the runner takes).
pub fn validated(
    preset: &atmc_lab::preset::Preset,
) -> atmc_lab::preset::Validated<atmc_lab::preset::Preset> {
    preset
        .clone()
        .validated()
        .unwrap_or_else(|(field, m)| panic!("the test's preset: {field}: {m}"))
}
