//! `atmc-lab bench`: chain-steps per second of 2-D ATMC on the correlated Gaussian.

use crate::engine::gpu::{GpuContext, GpuEngine};
use crate::engine::{Engine, InitSpec, cpu::CpuEngine};
use crate::math::{SamplerKind, SamplerSpec, TargetSpec};
use crate::preset::Preset;
use crate::preset::ViewHints;
use std::time::Instant;

/// Options of the benchmark.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Number of chains.
    #[arg(long, default_value_t = 100_000)]
    chains: u32,
    /// Steps timed (after a short warm-up).
    #[arg(long, default_value_t = 200)]
    steps: u32,
    /// Measure the app instead: frames per second of the offscreen UI (rendered with wgpu)
    /// and engine ticks per second, with `--chains` chains and `--steps-per-frame` steps.
    #[arg(long)]
    ui: bool,
    /// Steps per frame for `--ui`.
    #[arg(long, default_value_t = 10)]
    steps_per_frame: u32,
    /// Seconds measured for `--ui`.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// With `--ui`: keep the engine paused, to time the UI alone.
    #[arg(long)]
    paused: bool,
    /// Engine backend for `--ui`.
    #[arg(long, value_enum, default_value = "auto")]
    backend: crate::engine::BackendChoice,
}

/// Frame rate of the app offscreen: the UI thread renders frames while the engine thread
/// ticks; both rates are reported (the animation advances once per engine tick).
fn bench_ui(args: &BenchArgs) -> anyhow::Result<()> {
    use crate::app::screenshot::harness;
    let mut preset = Preset::default_preset();
    preset.chains = args.chains;
    preset.view.steps_per_frame = args.steps_per_frame;
    let mut h = harness(preset, [1280, 720], 1.0, args.backend);
    let app = h.state().as_ref().expect("app started");
    app.session()
        .send(crate::app::session::Command::Play(!args.paused));
    // Warm-up: shader compilation and the first histograms.
    let warm = Instant::now();
    while warm.elapsed().as_secs_f64() < 2.0 {
        h.step();
        h.render().map_err(|e| anyhow::anyhow!(e))?;
    }
    let rows = |h: &crate::app::screenshot::AppHarness| {
        h.state()
            .as_ref()
            .map_or(0, |a| a.session().with_snapshot(|s| s.series.len()))
    };
    let (rows0, start) = (rows(&h), Instant::now());
    let mut frames = 0u64;
    let mut worst = 0.0f64;
    let (mut ui_time, mut render_time) = (0.0, 0.0);
    while start.elapsed().as_secs_f64() < args.seconds {
        let t = Instant::now();
        h.step();
        let t_ui = t.elapsed().as_secs_f64();
        h.render().map_err(|e| anyhow::anyhow!(e))?;
        let t_all = t.elapsed().as_secs_f64();
        ui_time += t_ui;
        render_time += t_all - t_ui;
        worst = worst.max(t_all);
        frames += 1;
    }
    eprintln!(
        "per frame: UI logic and tessellation {:.1} ms, GPU render and readback {:.1} ms",
        1e3 * ui_time / frames as f64,
        1e3 * render_time / frames as f64
    );
    let seconds = start.elapsed().as_secs_f64();
    let ticks = rows(&h).saturating_sub(rows0) as f64;
    let backend = h
        .state()
        .as_ref()
        .and_then(|a| a.session().with_snapshot(|s| s.backend.clone()))
        .map(|b| format!("{} ({})", b.kind, b.device))
        .unwrap_or_default();
    println!(
        "ui   {} chains, {} steps/frame on {backend}: UI {:.1} frames/s (worst frame {:.0} ms), engine {:.1} ticks/s = {:.2e} chain-steps/s",
        args.chains,
        args.steps_per_frame,
        frames as f64 / seconds,
        worst * 1e3,
        ticks / seconds,
        ticks * f64::from(args.steps_per_frame) * f64::from(args.chains) / seconds
    );
    println!(
        "{}",
        serde_json::json!({
            "chains": args.chains,
            "steps_per_frame": args.steps_per_frame,
            "backend": backend,
            "ui_frames_per_s": frames as f64 / seconds,
            "worst_frame_ms": worst * 1e3,
            "engine_ticks_per_s": ticks / seconds,
        })
    );
    Ok(())
}

fn bench_preset(chains: u32, steps: u32) -> Preset {
    Preset {
        name: "bench".into(),
        description: String::new(),
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

/// Runs the benchmark: the CPU engine at `--chains`, then the GPU engine (if an adapter is
/// found) at 1e4, 1e5, 1e6 chains and `--chains`, each with its ratio to the CPU figure.
pub fn bench(args: &BenchArgs) -> anyhow::Result<()> {
    if args.ui {
        return bench_ui(args);
    }
    let preset = bench_preset(args.chains, args.steps);
    let mut cpu = CpuEngine::new(preset.model(), preset.chains, &preset.init, preset.seed);
    let cpu_rate = time_engine(&mut cpu, args.steps)?;
    let cpu_device = cpu.backend().device;
    println!(
        "cpu  {:>9} chains × {} steps: {:.3e} chain-steps/s ({cpu_device})",
        args.chains, args.steps, cpu_rate
    );
    let mut gpu_rows = Vec::new();
    let mut adapter = None;
    match GpuContext::new() {
        Err(e) => println!("gpu  unavailable: {e:#}"),
        Ok(ctx) => {
            let mut sizes = vec![10_000u32, 100_000, 1_000_000];
            if !sizes.contains(&args.chains) {
                sizes.push(args.chains);
            }
            for chains in sizes {
                let p = bench_preset(chains, args.steps);
                let mut gpu =
                    GpuEngine::with_context(ctx.clone(), p.model(), chains, &p.init, p.seed)?;
                let rate = time_engine(&mut gpu, args.steps)?;
                println!(
                    "gpu  {chains:>9} chains × {} steps: {rate:.3e} chain-steps/s ({:.2}× the CPU at {} chains; {})",
                    args.steps,
                    rate / cpu_rate,
                    args.chains,
                    ctx.describe()
                );
                gpu_rows.push(serde_json::json!({
                    "chains": chains,
                    "chain_steps_per_s": rate,
                    "ratio_to_cpu": rate / cpu_rate,
                }));
            }
            adapter = Some(ctx.describe());
        }
    }
    println!(
        "{}",
        serde_json::json!({
            "steps": args.steps,
            "cpu": { "chains": args.chains, "chain_steps_per_s": cpu_rate, "device": cpu_device },
            "gpu": { "adapter": adapter, "runs": gpu_rows },
        })
    );
    Ok(())
}
