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
