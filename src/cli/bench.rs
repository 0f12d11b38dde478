//! `atmc-lab bench`: chain-steps per second of 2-D ATMC on the correlated Gaussian, or with
//! `--mlp` whole-network stochastic gradients per second of Bayesian MLPs, or with `--ui` (the
//! `gui` feature) the app's frame rate offscreen.

use super::{Failure, in_range, whole_in_range};
use crate::engine::gpu::{GpuContext, GpuEngine};
use crate::engine::mlp::gpu::{MlpGpuEngine, MlpKernel};
use crate::engine::mlp::{MlpCpuEngine, MlpEngine};
use crate::engine::{Engine, cpu::CpuEngine};
use crate::math::InitSpec;
use crate::math::mlp::{Activation, MlpInit, MlpModel, MlpSpec};
use crate::math::{DataSource, DataSpec, SamplerKind, SamplerSpec, TargetSpec, ranges};
#[cfg(feature = "gui")]
use crate::preset::AnyPreset;
use crate::preset::ViewHints;
use crate::preset::{Preset, Validated};
use std::time::Instant;

/// Options of the benchmark.
#[derive(Debug, clap::Args)]
// Without the `gui` feature the options of `--ui` are parsed but never read.
#[cfg_attr(not(feature = "gui"), allow(dead_code))]
pub struct BenchArgs {
    /// Number of chains [default: 100000; 4096 networks with --mlp].
    #[arg(long, value_parser = super::whole::<u32>)]
    chains: Option<u32>,
    /// Steps timed, after a warm-up [default: 200; 20 with --mlp].
    #[arg(long, value_parser = whole_in_range(STEPS_TIMED))]
    steps: Option<u32>,
    /// Measure Bayesian MLPs instead: whole-network stochastic gradients per second of ATMC
    /// on `--chains` 2-16-16-2 tanh networks, full batch on 256 two-moons points, CPU and GPU;
    /// on the CPU also 2-32-32-32-2 and the two-moons preset's minibatch of 32, with FLOP/s
    /// and the share of the cores' issue roof (with `--backend gpu`, those shapes on the GPU
    /// with both gradient kernels instead).
    #[arg(long, conflicts_with = "ui")]
    mlp: bool,
    /// Measure expression targets instead: ATMC chain-steps/s on the built-in banana and on
    /// the same energy typed as a formula (docs/MATH.md §9), CPU and GPU, with their ratio.
    #[arg(long, conflicts_with_all = ["ui", "mlp"])]
    expression: bool,
    /// Measure the app instead: frames per second of the offscreen UI (rendered with wgpu)
    /// and engine ticks per second, with `--chains` chains and `--steps-per-frame` steps.
    #[arg(long)]
    ui: bool,
    /// Steps per frame for `--ui`.
    #[arg(long, default_value_t = 10, value_parser = whole_in_range(ranges::STEPS_PER_FRAME))]
    steps_per_frame: u32,
    /// Seconds measured for `--ui`.
    #[arg(long, default_value_t = 10.0, value_parser = in_range(SECONDS_MEASURED))]
    seconds: f64,
    /// With `--ui`: keep the engine paused, to time the UI alone.
    #[arg(long)]
    paused: bool,
    /// Engine backend for `--ui`; with `--mlp`, `cpu` skips the GPU figure and `gpu` the
    /// CPU's deeper and minibatch shapes (running every shape on the GPU instead, with the
    /// per-network and the per-chain gradient kernel).
    #[arg(long, value_enum, default_value = "auto")]
    backend: crate::engine::BackendChoice,
    /// With `--ui`: the view measured.
    #[arg(long, value_enum, default_value = "posterior")]
    view: UiView,
}

/// Steps a benchmark may time.
const STEPS_TIMED: ranges::Range = ranges::Range::closed_range("steps timed", 1.0, 1e6);
/// Seconds `bench --ui` may measure.
const SECONDS_MEASURED: ranges::Range =
    ranges::Range::closed_range("seconds measured", 0.5, 3600.0);

/// Which view `bench --ui` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum UiView {
    /// The 2-D posterior view (the default preset at `--chains` chains).
    Posterior,
    /// Side by side (the `lesson-defects` comparison at `--chains` chains per column).
    Compare,
    /// The Bayesian MLP view (the `two-moons` preset with its own number of networks).
    Mlp,
    /// All three, one after the other.
    All,
}

#[cfg(feature = "gui")]
/// What one view's frames cost.
struct FrameReport {
    view: &'static str,
    frames: u64,
    seconds: f64,
    /// Frame times (UI logic, tessellation, render and readback), milliseconds, sorted.
    frame_ms: Vec<f64>,
    ui_ms: f64,
    render_ms: f64,
    vertices: f64,
    triangles: f64,
    /// Pixels inside the frame's triangles (overdraw counted), each shaded by the rasteriser.
    shaded_pixels: f64,
    texture_uploads: f64,
    texture_bytes: f64,
    ticks_per_s: f64,
    chain_steps_per_s: f64,
    backend: String,
}

#[cfg(feature = "gui")]
impl FrameReport {
    fn percentile(&self, q: f64) -> f64 {
        let n = self.frame_ms.len();
        self.frame_ms[((q * (n - 1) as f64).round() as usize).min(n - 1)]
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "view": self.view,
            "ui_frames_per_s": self.frames as f64 / self.seconds,
            "frame_ms": {
                "p50": self.percentile(0.5),
                "p90": self.percentile(0.9),
                "max": self.percentile(1.0),
            },
            "ui_logic_ms": self.ui_ms,
            "render_and_readback_ms": self.render_ms,
            "vertices_per_frame": self.vertices,
            "triangles_per_frame": self.triangles,
            "shaded_pixels_per_frame": self.shaded_pixels,
            "texture_uploads_per_frame": self.texture_uploads,
            "texture_bytes_per_frame": self.texture_bytes,
            "engine_ticks_per_s": self.ticks_per_s,
            "chain_steps_per_s": self.chain_steps_per_s,
            "backend": self.backend,
        })
    }
}

#[cfg(feature = "gui")]
/// The preset a view is measured on.
fn ui_preset(view: UiView, chains: u32, steps_per_frame: u32) -> (&'static str, AnyPreset) {
    match view {
        UiView::Mlp => {
            let mut p = AnyPreset::load("two-moons").expect("a shipped preset");
            if let AnyPreset::Mlp(m) = &mut p {
                m.view.steps_per_frame = steps_per_frame;
            }
            ("mlp", p)
        }
        UiView::Compare => {
            let mut p = AnyPreset::load("lesson-defects").expect("a shipped preset");
            if let AnyPreset::Comparison(c) = &mut p {
                c.base.chains = chains;
                c.base.view.steps_per_frame = steps_per_frame;
            }
            ("compare", p)
        }
        UiView::Posterior | UiView::All => {
            let mut preset = Preset::default_preset();
            preset.chains = chains;
            preset.view.steps_per_frame = steps_per_frame;
            ("posterior", AnyPreset::Toy(preset))
        }
    }
}

#[cfg(feature = "gui")]
/// Frame rate of the app offscreen for one view: the UI thread renders frames while the
/// engine thread ticks; both rates are reported (the animation advances once per engine
/// tick), with the frame-time distribution and what every frame hands the renderer
/// (vertices and triangles after tessellation, texture uploads), counted on every fifth
/// frame outside the timing.
fn bench_view(args: &BenchArgs, view: UiView, chains: u32) -> anyhow::Result<FrameReport> {
    use crate::app::screenshot::harness;
    let (name, preset) = ui_preset(view, chains, args.steps_per_frame);
    let per_tick = match &preset {
        AnyPreset::Mlp(m) => f64::from(m.chains),
        AnyPreset::Comparison(c) => (c.columns.len() as u32 * chains).into(),
        _ => f64::from(chains),
    } * f64::from(args.steps_per_frame);
    let mut h = harness(preset, [1280, 720], 1.0, args.backend);
    if !args.paused {
        let app = h.state_mut().as_mut().expect("app started");
        app.active_view_mut()
            .act(crate::app::view::Action::TogglePlay);
    }
    // Warm-up: shader compilation and the first histograms.
    let warm = Instant::now();
    while warm.elapsed().as_secs_f64() < 2.0 {
        h.step();
        h.render().map_err(|e| anyhow::anyhow!(e))?;
    }
    let step = |h: &crate::app::screenshot::AppHarness| {
        h.state().as_ref().map_or(0, |a| a.active().step())
    };
    let (step0, start) = (step(&h), Instant::now());
    let mut frame_ms = Vec::new();
    let (mut ui_time, mut render_time) = (0.0, 0.0);
    let (mut counted, mut vertices, mut triangles) = (0u64, 0usize, 0usize);
    let mut shaded = 0.0f64;
    let uploads0 = crate::app::texture::uploads();
    let mut untimed = 0.0;
    while start.elapsed().as_secs_f64() - untimed < args.seconds {
        let t = Instant::now();
        h.step();
        let t_ui = t.elapsed().as_secs_f64();
        h.render().map_err(|e| anyhow::anyhow!(e))?;
        let t_all = t.elapsed().as_secs_f64();
        ui_time += t_ui;
        render_time += t_all - t_ui;
        frame_ms.push(1e3 * t_all);
        let out = h.output();
        if frame_ms.len() % 5 == 0 {
            let t = Instant::now();
            for prim in h.ctx.tessellate(out.shapes.clone(), out.pixels_per_point) {
                if let egui::epaint::Primitive::Mesh(mesh) = prim.primitive {
                    vertices += mesh.vertices.len();
                    triangles += mesh.indices.len() / 3;
                    let mut a = 0.0;
                    for t in mesh.indices.chunks_exact(3) {
                        let p = [0, 1, 2].map(|k| mesh.vertices[t[k] as usize].pos);
                        a += f64::from(clipped_area(p, prim.clip_rect));
                    }
                    shaded += a;
                }
            }
            counted += 1;
            untimed += t.elapsed().as_secs_f64();
        }
    }
    let seconds = start.elapsed().as_secs_f64() - untimed;
    let frames = frame_ms.len() as u64;
    let uploads1 = crate::app::texture::uploads();
    let (uploads, upload_bytes) = (uploads1.0 - uploads0.0, uploads1.1 - uploads0.1);
    frame_ms.sort_by(f64::total_cmp);
    let ticks = f64::from(step(&h).saturating_sub(step0)) / f64::from(args.steps_per_frame);
    let backend = h
        .state()
        .as_ref()
        .map(|a| a.active().status())
        .unwrap_or_default();
    let counted = counted.max(1) as f64;
    Ok(FrameReport {
        view: name,
        frames,
        seconds,
        frame_ms,
        ui_ms: 1e3 * ui_time / frames as f64,
        render_ms: 1e3 * render_time / frames as f64,
        vertices: vertices as f64 / counted,
        triangles: triangles as f64 / counted,
        shaded_pixels: shaded / counted,
        texture_uploads: uploads as f64 / frames as f64,
        texture_bytes: upload_bytes as f64 / frames as f64,
        ticks_per_s: ticks / seconds,
        chain_steps_per_s: ticks * per_tick / seconds,
        backend,
    })
}

#[cfg(feature = "gui")]
/// `bench --ui`: each chosen view in turn, one line each and a JSON line with all of them.
fn bench_ui(args: &BenchArgs, chains: u32) -> anyhow::Result<()> {
    let views = match args.view {
        UiView::All => vec![UiView::Posterior, UiView::Compare, UiView::Mlp],
        v => vec![v],
    };
    let mut reports = Vec::new();
    for view in views {
        let r = bench_view(args, view, chains)?;
        super::emit(format_args!(
            "ui   {:<9} {:.1} frames/s (frame p50 {:.0} ms, p90 {:.0} ms, max {:.0} ms; UI logic {:.1} ms, render and readback {:.1} ms), {:.0} vertices and {:.0} triangles covering {:.2e} pixels per frame, {:.2} texture uploads ({:.0} kB) per frame; engine {:.1} ticks/s = {:.2e} chain-steps/s on {}",
            r.view,
            r.frames as f64 / r.seconds,
            r.percentile(0.5),
            r.percentile(0.9),
            r.percentile(1.0),
            r.ui_ms,
            r.render_ms,
            r.vertices,
            r.triangles,
            r.shaded_pixels,
            r.texture_uploads,
            r.texture_bytes / 1e3,
            r.ticks_per_s,
            r.chain_steps_per_s,
            r.backend
        ))?;
        reports.push(r);
    }
    super::emit(format_args!(
        "{}",
        serde_json::json!({
            "chains": chains,
            "steps_per_frame": args.steps_per_frame,
            "views": reports.iter().map(FrameReport::json).collect::<Vec<_>>(),
        })
    ))?;
    Ok(())
}

fn bench_preset(chains: u32, steps: u32) -> Preset {
    Preset {
        name: "bench".into(),
        description: String::new(),
        story: Default::default(),
        sampler: SamplerSpec::new(SamplerKind::Atmc),
        target: TargetSpec::from_name("correlated").expect("known target"),
        noise: crate::math::NoiseSpec::None,
        schedule: crate::math::ScheduleSpec::Constant,
        chains,
        steps,
        seed: 1,
        record_every: steps,
        init: InitSpec::default(),
        view: ViewHints::default(),
    }
}

/// Times one engine: a warm-up block, then `steps` steps in one call.
fn time_engine(engine: &mut dyn Engine, steps: u32) -> anyhow::Result<f64> {
    engine.advance(5, &[])?;
    let start = Instant::now();
    engine.advance(steps, &[])?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(f64::from(engine.chains()) * f64::from(steps) / seconds)
}

/// Runs `atmc-lab bench`: the number of chains (or networks, with `--mlp`) is checked
/// against its range before any work.
pub fn bench(args: &BenchArgs) -> Result<(), Failure> {
    let chains_range = if args.mlp {
        ranges::MLP_CHAINS
    } else {
        ranges::CHAINS
    };
    if let Some(c) = args.chains {
        chains_range.check(f64::from(c)).map_err(Failure::usage)?;
    }
    if args.mlp {
        return Ok(bench_mlp(
            args.chains.unwrap_or(MLP_BENCH_NETWORKS),
            args.steps.unwrap_or(MLP_BENCH_STEPS),
            args.backend,
        )?);
    }
    let chains = args.chains.unwrap_or(100_000);
    if args.expression {
        return Ok(bench_expression(chains, args.steps.unwrap_or(200))?);
    }
    if args.ui {
        #[cfg(feature = "gui")]
        return Ok(bench_ui(args, chains)?);
        #[cfg(not(feature = "gui"))]
        return Err(Failure::missing_feature("gui", "bench --ui"));
    }
    Ok(bench_engines(chains, args.steps.unwrap_or(200))?)
}

/// The CPU engine at `chains`, then the GPU engine (if an adapter is found) at 1e4, 1e5, 1e6
/// chains and `chains`, each with its ratio to the CPU figure.
fn bench_engines(chains: u32, steps: u32) -> anyhow::Result<()> {
    let preset = crate::runner::validated(bench_preset(chains, steps))?;
    let mut cpu = CpuEngine::new(preset.model(), preset.chains, &preset.init, preset.seed);
    let cpu_rate = time_engine(&mut cpu, steps)?;
    let cpu_device = cpu.backend().device;
    super::emit(format_args!(
        "cpu  {:>9} chains × {} steps: {:.3e} chain-steps/s ({cpu_device})",
        chains, steps, cpu_rate
    ))?;
    let mut gpu_rows = Vec::new();
    let mut adapter = None;
    match GpuContext::new() {
        Err(e) => super::emit(format_args!("gpu  unavailable: {e:#}"))?,
        Ok(ctx) => {
            let mut sizes = vec![10_000u32, 100_000, 1_000_000];
            if !sizes.contains(&chains) {
                sizes.push(chains);
            }
            for n in sizes {
                let p = crate::runner::validated(bench_preset(n, steps))?;
                let mut gpu = GpuEngine::with_context(ctx.clone(), p.model(), n, &p.init, p.seed)?;
                let rate = time_engine(&mut gpu, steps)?;
                super::emit(format_args!(
                    "gpu  {n:>9} chains × {steps} steps: {rate:.3e} chain-steps/s ({:.2}× the CPU at {chains} chains; {})",
                    rate / cpu_rate,
                    ctx.describe()
                ))?;
                gpu_rows.push(serde_json::json!({
                    "chains": n,
                    "chain_steps_per_s": rate,
                    "ratio_to_cpu": rate / cpu_rate,
                }));
            }
            adapter = Some(ctx.describe());
        }
    }
    super::emit(format_args!(
        "{}",
        serde_json::json!({
            "steps": steps,
            "cpu": { "chains": chains, "chain_steps_per_s": cpu_rate, "device": cpu_device },
            "gpu": { "adapter": adapter, "runs": gpu_rows },
        })
    ))?;
    Ok(())
}

/// Makes an engine for a checked preset (the CPU's or the GPU's).
type EngineMaker<'a> = dyn Fn(&Validated<Preset>) -> anyhow::Result<Box<dyn Engine>> + 'a;

/// The built-in banana's energy typed as a formula (a = 1, b = 0.5, s = 0.5).
pub const BANANA_FORMULA: &str = "θ₁^2/(2*a^2) + (θ₂ - b*(θ₁^2 - a^2))^2/(2*s^2)";

/// `bench --expression`: the built-in banana against [`BANANA_FORMULA`] on the CPU at
/// `chains` and on the GPU (if an adapter is found) at `chains`, each pair with its ratio.
fn bench_expression(chains: u32, steps: u32) -> anyhow::Result<()> {
    let builtin = {
        let mut p = bench_preset(chains, steps);
        p.target = TargetSpec::from_name("banana").expect("known target");
        crate::runner::validated(p)?
    };
    let typed = {
        let mut p = builtin.clone().into_inner();
        p.target = TargetSpec::Expression {
            energy: BANANA_FORMULA.into(),
            parameters: [("a", 1.0), ("b", 0.5), ("s", 0.5)]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            bounds: None,
            ranges: Default::default(),
        };
        crate::runner::validated(p)?
    };
    let mut rows = Vec::new();
    let mut measure = |backend: &str, make: &EngineMaker<'_>| -> anyhow::Result<()> {
        let mut rates = [0.0; 2];
        for (rate, p) in rates.iter_mut().zip([&builtin, &typed]) {
            let mut engine = make(p)?;
            *rate = time_engine(engine.as_mut(), steps)?;
        }
        super::emit(format_args!(
            "{backend}  {chains:>9} chains × {steps} steps: built-in banana {:.3e}, expression \
             banana {:.3e} chain-steps/s: {:.0}%",
            rates[0],
            rates[1],
            100.0 * rates[1] / rates[0]
        ))?;
        rows.push(serde_json::json!({
            "backend": backend,
            "builtin_chain_steps_per_s": rates[0],
            "expression_chain_steps_per_s": rates[1],
            "ratio": rates[1] / rates[0],
        }));
        Ok(())
    };
    measure("cpu", &|p| {
        Ok(Box::new(CpuEngine::new(
            p.model(),
            p.chains,
            &p.init,
            p.seed,
        )))
    })?;
    match GpuContext::new() {
        Err(e) => super::emit(format_args!("gpu  unavailable: {e:#}"))?,
        Ok(ctx) => measure("gpu", &|p| {
            Ok(Box::new(GpuEngine::with_context(
                ctx.clone(),
                p.model(),
                p.chains,
                &p.init,
                p.seed,
            )?))
        })?,
    }
    super::emit(format_args!(
        "{}",
        serde_json::json!({ "chains": chains, "steps": steps, "expression": rows })
    ))?;
    Ok(())
}

/// Networks of `bench --mlp` unless `--chains` says otherwise.
const MLP_BENCH_NETWORKS: u32 = 4096;
/// Timed steps of `bench --mlp` unless `--steps` says otherwise: every step is a full-batch
/// gradient of every network, so 20 already take seconds.
const MLP_BENCH_STEPS: u32 = 20;
/// Training points of `bench --mlp`, all of them in every gradient.
const MLP_BENCH_POINTS: u32 = 256;

/// One network shape `bench --mlp` measures.
struct MlpShape {
    /// What the figure is called.
    label: &'static str,
    hidden: &'static [u32],
    data: DataSpec,
    /// Minibatch size (0: full batch).
    batch_size: u32,
    prior_scale: f64,
}

/// The shapes of `bench --mlp`: the default 2-16-16-2 network on a full batch of 256 points
/// (the figure compared with the JAX peer and the GPU), a deeper 2-32-32-32-2 network on the
/// same points, and the shipped `two-moons` preset's network with its minibatch of 32.
fn mlp_shapes() -> [MlpShape; 3] {
    let full = DataSpec {
        source: DataSource::TwoMoons,
        points: MLP_BENCH_POINTS,
        noise: 0.2,
        test_fraction: 0.0,
        seed: 1,
    };
    [
        MlpShape {
            label: "default",
            hidden: &[16, 16],
            data: full.clone(),
            batch_size: 0,
            prior_scale: 1.0,
        },
        MlpShape {
            label: "deep",
            hidden: &[32, 32, 32],
            data: full,
            batch_size: 0,
            prior_scale: 1.0,
        },
        // `presets/two-moons.ron`: 200 training points, minibatches of 32.
        MlpShape {
            label: "two-moons minibatch",
            hidden: &[16, 16],
            data: DataSpec {
                source: DataSource::TwoMoons,
                points: 1000,
                noise: 0.3,
                test_fraction: 0.8,
                seed: 1,
            },
            batch_size: 32,
            prior_scale: 3.0,
        },
    ]
}

/// The benchmarked posterior of `shape`: ATMC with a step small enough that no network
/// diverges (a frozen network costs nothing and would inflate the rate).
fn bench_mlp_model(shape: &MlpShape) -> anyhow::Result<MlpModel> {
    let spec = MlpSpec {
        data: shape.data.clone(),
        hidden: shape.hidden.to_vec(),
        activation: Activation::Tanh,
        prior_scale: shape.prior_scale,
        batch_size: shape.batch_size,
        data_used: None,
    };
    let (posterior, _) = crate::preset::data::build_network(&spec).map_err(anyhow::Error::msg)?;
    let mut sampler = SamplerSpec::new(SamplerKind::Atmc);
    sampler.h = 0.01;
    Ok(MlpModel {
        sampler: sampler.params(),
        schedule: crate::math::ScheduleSpec::Constant.schedule(),
        posterior,
    })
}

/// Floating-point operations of one network-gradient, counted as the matrix products do
/// them: per example and weight layer of `i` inputs and `o` outputs, 2·i·o for the forward
/// product, 2·i·o for the weight gradient and, above the first layer, 2·i·o for the error
/// sent back (one multiply and one add per weight each). Biases, activations, the softmax
/// and the sampler's update are not counted: the figure is the work a GEMM would report.
pub fn mlp_gradient_flop(model: &MlpModel) -> f64 {
    let post = &model.posterior;
    let sizes = &post.arch.sizes;
    let per_example: f64 = (0..sizes.len() - 1)
        .map(|l| {
            let products = if l == 0 { 2.0 } else { 3.0 };
            2.0 * products * (sizes[l] * sizes[l + 1]) as f64
        })
        .sum();
    per_example * f64::from(post.batch_size)
}

/// The issue roof of this machine's CPU cores in f32 FLOP/s: lanes per vector of the
/// instruction set the engine dispatched to × 2 (a fused multiply-add is two operations) ×
/// FMA pipes per core × cores × clock. Returns the roof and how each factor was found.
fn cpu_roof() -> (Option<f64>, serde_json::Value) {
    use crate::engine::cpu::{SimdPath, simd_path};
    let path = simd_path();
    let lanes = match path {
        SimdPath::Avx512 => 16.0,
        SimdPath::Avx2 => 8.0,
        SimdPath::Baseline => 4.0,
    };
    // Not visible to software: two FMA pipes, as on the server cores of the last decade
    // (Intel Skylake-SP and later with AVX-512, AMD Zen); one without FMA.
    let pipes = if path == SimdPath::Baseline { 1.0 } else { 2.0 };
    let cores = rayon::current_num_threads() as f64;
    // The clock Linux reports for the first core (a virtual machine reports its base or
    // TSC clock); none elsewhere.
    let mhz = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("cpu MHz"))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse::<f64>().ok())
    });
    let roof = mhz.map(|m| lanes * 2.0 * pipes * cores * m * 1e6);
    (
        roof,
        serde_json::json!({
            "flop_per_s": roof,
            "simd": path.name(),
            "lanes": lanes,
            "fma_pipes": pipes,
            "cores": cores,
            "clock_mhz": mhz,
            "how": "lanes × 2 × FMA pipes × threads × the clock of /proc/cpuinfo; pipes assumed 2 with FMA",
        }),
    )
}

/// One backend's figure.
struct MlpTiming {
    seconds: f64,
    rate: f64,
    diverged: u64,
}

impl MlpTiming {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "seconds": self.seconds,
            "chain_gradients_per_s": self.rate,
            "diverged": self.diverged,
        })
    }
}

/// Times `steps` steps of one engine after a one-step warm-up (the GPU's first dispatch
/// compiles its pipelines). Every step of every network is one full stochastic gradient.
fn time_mlp_engine(engine: &mut dyn MlpEngine, steps: u32) -> anyhow::Result<MlpTiming> {
    engine.advance(1)?;
    let start = Instant::now();
    // `advance` reads the layer statistics back, so the GPU's work is done when it returns.
    let report = engine.advance(steps)?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(MlpTiming {
        seconds,
        rate: f64::from(engine.chains()) * f64::from(steps) / seconds,
        diverged: report.diverged,
    })
}

/// `bench --mlp`: network-gradients per second of the CPU engine on each of [`mlp_shapes`]
/// (with FLOP/s and the share of the CPU's issue roof), then of the GPU engine on the
/// default shape; a GPU that cannot be opened (or fails) is reported, not fatal.
/// `--backend cpu` skips the GPU, `--backend gpu` the CPU's other shapes.
fn bench_mlp(
    networks: u32,
    steps: u32,
    backend: crate::engine::BackendChoice,
) -> anyhow::Result<()> {
    use crate::engine::BackendChoice;
    let (init, seed) = (MlpInit::default(), 1);
    let (roof, roof_json) = cpu_roof();
    let shapes = mlp_shapes();
    let default_model = bench_mlp_model(&shapes[0])?;
    let default_flop = mlp_gradient_flop(&default_model);
    let line = |backend: &str, what: &str, t: &MlpTiming, extra: &str| {
        note!(
            "{backend}  {what}: {:.2} s, {:.3e} network-gradients/s{}{extra}",
            t.seconds,
            t.rate,
            if t.diverged > 0 {
                format!(" ({} networks diverged and were skipped)", t.diverged)
            } else {
                String::new()
            }
        );
    };
    let describe = |model: &MlpModel, steps: u32| {
        let post = &model.posterior;
        format!(
            "{networks:>5} networks {} × {steps} steps, batch {} of {} points",
            post.arch.describe(),
            post.batch_size,
            post.inputs.len()
        )
    };

    let mut shape_json = Vec::new();
    let mut cpu_default = None;
    for (k, shape) in shapes.iter().enumerate() {
        if k > 0 && backend == BackendChoice::Gpu {
            break;
        }
        let model = if k == 0 {
            default_model.clone()
        } else {
            bench_mlp_model(shape)?
        };
        let flop = mlp_gradient_flop(&model);
        // About the same work per shape: fewer steps of a bigger network.
        let shape_steps = ((f64::from(steps) * default_flop / flop).round() as u32).max(2);
        let mut engine = MlpCpuEngine::new(model.clone(), networks, &init, seed);
        let device = engine.backend().device;
        let t = time_mlp_engine(&mut engine, shape_steps)?;
        drop(engine);
        let flops = t.rate * flop;
        let share = roof.map(|r| flops / r);
        line(
            "cpu",
            &describe(&model, shape_steps),
            &t,
            &format!(
                " ({device}); {:.2e} FLOP/s{}",
                flops,
                share.map_or(String::new(), |s| format!(
                    ", {:.1}% of the roof",
                    100.0 * s
                ))
            ),
        );
        let mut j = t.json();
        j["shape"] = shape.label.into();
        j["network"] = model.posterior.arch.describe().into();
        j["parameters"] = model.posterior.params().into();
        j["batch_size"] = model.posterior.batch_size.into();
        j["train_points"] = model.posterior.inputs.len().into();
        j["steps"] = shape_steps.into();
        j["device"] = device.into();
        j["flop_per_gradient"] = flop.into();
        j["flop_per_s"] = flops.into();
        j["roof_share"] = share.into();
        if k == 0 {
            cpu_default = Some(j.clone());
        }
        shape_json.push(j);
    }
    if let Some(roof) = roof {
        note!(
            "cpu  issue roof {roof:.3e} FLOP/s = {} lanes ({}) × 2 FLOP per FMA × {} FMA pipes \
             (assumed) × {} threads × {} MHz (/proc/cpuinfo)",
            roof_json["lanes"],
            roof_json["simd"],
            roof_json["fma_pipes"],
            roof_json["cores"],
            roof_json["clock_mhz"]
        );
    }

    let cpu_rate = cpu_default
        .as_ref()
        .and_then(|j| j["chain_gradients_per_s"].as_f64());
    let gpu = if backend == BackendChoice::Cpu {
        Err(anyhow::anyhow!("skipped (--backend cpu)"))
    } else {
        GpuContext::new()
    };
    let mut gpu_json = serde_json::json!({});
    let mut gpu_shapes = Vec::new();
    match &gpu {
        Ok(ctx) => {
            // With `--backend gpu` every shape and both gradient kernels (the per-chain one
            // for comparison); otherwise the default shape with the kernel the engine picks.
            let best = MlpKernel::best_for(&ctx.device);
            let mut kernels = vec![best];
            if backend == BackendChoice::Gpu && best != MlpKernel::PerChain {
                kernels.push(MlpKernel::PerChain);
            }
            let software = ctx.adapter.device_type == wgpu::DeviceType::Cpu;
            for (k, shape) in shapes.iter().enumerate() {
                if k > 0 && backend != BackendChoice::Gpu {
                    break;
                }
                let model = bench_mlp_model(shape)?;
                let flop = mlp_gradient_flop(&model);
                let shape_steps = ((f64::from(steps) * default_flop / flop).round() as u32).max(2);
                for &kernel in &kernels {
                    let timed = MlpGpuEngine::with_kernel(
                        ctx.clone(),
                        model.clone(),
                        networks,
                        &init,
                        seed,
                        kernel,
                    )
                    .and_then(|mut engine| time_mlp_engine(&mut engine, shape_steps));
                    let t = match timed {
                        Ok(t) => t,
                        Err(e) => {
                            note!("gpu  no GPU figure ({}): {e:#}", kernel.name());
                            gpu_json = serde_json::json!({ "error": format!("{e:#}") });
                            continue;
                        }
                    };
                    let flops = t.rate * flop;
                    // llvmpipe runs on these cores: its share of their roof.
                    let share = roof.filter(|_| software).map(|r| flops / r);
                    let ratio = cpu_rate.filter(|_| k == 0).map(|c| t.rate / c);
                    line(
                        "gpu",
                        &describe(&model, shape_steps),
                        &t,
                        &format!(
                            " ({} kernel, {} invocations per network; {}{}); {flops:.2e} FLOP/s{}",
                            kernel.name(),
                            kernel.invocations_per_network(),
                            ratio.map_or(String::new(), |r| format!("{r:.2}× the CPU; ")),
                            ctx.describe(),
                            share.map_or(String::new(), |s| format!(
                                ", {:.1}% of the CPU's roof",
                                100.0 * s
                            ))
                        ),
                    );
                    let mut v = t.json();
                    v["shape"] = shape.label.into();
                    v["network"] = model.posterior.arch.describe().into();
                    v["steps"] = shape_steps.into();
                    v["kernel"] = kernel.name().into();
                    v["invocations_per_network"] = kernel.invocations_per_network().into();
                    v["adapter"] = ctx.describe().into();
                    v["ratio_to_cpu"] = ratio.into();
                    v["flop_per_s"] = flops.into();
                    v["cpu_roof_share"] = share.into();
                    if k == 0 && kernel == best {
                        gpu_json = v.clone();
                    }
                    gpu_shapes.push(v);
                }
            }
        }
        Err(e) => {
            note!("gpu  no GPU figure: {e:#}");
            gpu_json = serde_json::json!({ "error": format!("{e:#}") });
        }
    }
    let gpu_rate = gpu_json["chain_gradients_per_s"].as_f64();
    let post = &default_model.posterior;
    super::emit(format_args!(
        "{}",
        serde_json::json!({
            "kind": "mlp",
            "sampler": "atmc",
            "network": post.arch.describe(),
            "parameters": post.params(),
            "train_points": post.inputs.len(),
            "batch_size": post.batch_size,
            "networks": networks,
            "steps": steps,
            "cpu": cpu_default,
            "gpu": gpu_json,
            "gpu_to_cpu": gpu_rate.zip(cpu_rate).map(|(g, c)| g / c),
            "shapes": shape_json,
            "gpu_shapes": gpu_shapes,
            "roof": roof_json,
        })
    ))?;
    Ok(())
}

#[cfg(feature = "gui")]
/// The area in pixels of the triangle `t` inside `clip` (Sutherland–Hodgman against the
/// four edges, then the shoelace formula).
fn clipped_area(t: [egui::Pos2; 3], clip: egui::Rect) -> f32 {
    let mut poly: Vec<egui::Pos2> = t.to_vec();
    let edges: [(usize, f32, bool); 4] = [
        (0, clip.min.x, true),
        (0, clip.max.x, false),
        (1, clip.min.y, true),
        (1, clip.max.y, false),
    ];
    for (axis, bound, keep_above) in edges {
        let inside = |p: &egui::Pos2| {
            if keep_above {
                p[axis] >= bound
            } else {
                p[axis] <= bound
            }
        };
        let mut out = Vec::with_capacity(poly.len() + 2);
        for i in 0..poly.len() {
            let (a, b) = (poly[i], poly[(i + 1) % poly.len()]);
            if inside(&a) {
                out.push(a);
            }
            if inside(&a) != inside(&b) {
                let s = (bound - a[axis]) / (b[axis] - a[axis]);
                out.push(a + (b - a) * s);
            }
        }
        poly = out;
        if poly.is_empty() {
            return 0.0;
        }
    }
    let mut twice = 0.0;
    for i in 0..poly.len() {
        let (a, b) = (poly[i], poly[(i + 1) % poly.len()]);
        twice += a.x * b.y - b.x * a.y;
    }
    twice.abs() / 2.0
}

#[cfg(feature = "gui")]
#[cfg(test)]
mod tests {
    use super::clipped_area;
    use egui::{Rect, pos2};

    #[test]
    fn a_triangle_counts_the_pixels_inside_its_clip_rectangle() {
        let clip = Rect::from_min_max(pos2(0.0, 0.0), pos2(10.0, 10.0));
        let inside = [pos2(0.0, 0.0), pos2(10.0, 0.0), pos2(0.0, 10.0)];
        assert!((clipped_area(inside, clip) - 50.0).abs() < 1e-4);
        // Half of a right triangle hangs out to the left: a quarter of its area is kept.
        let across = [pos2(-10.0, 0.0), pos2(10.0, 0.0), pos2(-10.0, 20.0)];
        assert!(
            (clipped_area(across, clip) - 50.0).abs() < 1e-4,
            "{}",
            clipped_area(across, clip)
        );
        let outside = [pos2(20.0, 0.0), pos2(30.0, 0.0), pos2(20.0, 10.0)];
        assert_eq!(clipped_area(outside, clip), 0.0);
    }
}
