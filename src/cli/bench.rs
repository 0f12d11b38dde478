//! `atmc-lab bench`: chain-steps per second of 2-D ATMC on the correlated Gaussian.

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
    engine.advance(5, None)?;
    let start = Instant::now();
    engine.advance(steps, None)?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(f64::from(engine.chains()) * f64::from(steps) / seconds)
}

/// Runs the benchmark and prints one line per backend, then a JSON line.
pub fn bench(args: &BenchArgs) -> anyhow::Result<()> {
    let preset = bench_preset(args.chains, args.steps);
    let mut cpu = CpuEngine::new(preset.model(), preset.chains, &preset.init, preset.seed);
    let rate = time_engine(&mut cpu, args.steps)?;
    let device = cpu.backend().device;
    println!(
        "cpu  {:>9} chains × {} steps: {:.3e} chain-steps/s ({device})",
        args.chains, args.steps, rate
    );
    println!(
        "{}",
        serde_json::json!({
            "chains": args.chains,
            "steps": args.steps,
            "cpu": { "chain_steps_per_s": rate, "device": device },
        })
    );
    Ok(())
}
