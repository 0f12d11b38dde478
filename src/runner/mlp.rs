//! Headless runs of MLP posteriors: the networks and the SGD baseline stepped block by
//! block, evaluated on the data set after each block.

use super::printed_defects;
use crate::diagnostics::bounded::BoundedSeries;
use crate::diagnostics::mlp::{
    Evaluation, IDENTIFIABLE_NETWORKS, IdentifiableTraces, LayerSummary, MlpSeriesRow, MlpSummary,
    MlpTimings, evaluate,
};
use crate::engine::BackendChoice;
use crate::engine::create_mlp_engine;
use crate::engine::mlp::{MlpCpuEngine, MlpEngine};
use crate::preset::MlpPreset;
use std::time::Instant;

/// Networks averaged for the time series (the final evaluation uses all of them).
pub const SERIES_PREDICTIVE_CHAINS: u32 = 512;

/// Everything a finished MLP run produced.
#[derive(Clone, Debug)]
pub struct MlpOutcome {
    /// The statistics.
    pub summary: MlpSummary,
    /// The time series, one row per recorded block.
    pub series: Vec<MlpSeriesRow>,
    /// Why `auto` fell back to the CPU, if it did.
    pub notice: Option<String>,
}

/// Runs `preset` for its number of steps on `backend`. `progress` is called with the steps
/// done after every block.
pub fn run_mlp(
    preset: &MlpPreset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<MlpOutcome> {
    let (model, data) = preset.build().map_err(anyhow::Error::msg)?;
    // The SGD baseline is one network: on the CPU (a GPU would idle).
    let mut baseline =
        MlpCpuEngine::new(preset.baseline_model(&model), 1, &preset.init, preset.seed);
    let (mut engine, notice) = create_mlp_engine(
        backend,
        &mut None,
        model.clone(),
        preset.chains,
        &preset.init,
        preset.seed,
    )?;
    let mut series = BoundedSeries::new(super::MAX_SERIES_ROWS);
    let mut elapsed = 0.0;
    let mut done = 0;
    let mut report = engine.advance(0)?;
    let mut identifiable = IdentifiableTraces::default();
    while done < preset.steps {
        let block = preset.record_every.min(preset.steps - done);
        let start = Instant::now();
        report = engine.advance(block)?;
        elapsed += start.elapsed().as_secs_f64();
        baseline.advance(block)?;
        done += block;
        let ensemble = evaluate(engine.as_mut(), &data, SERIES_PREDICTIVE_CHAINS, 0)?;
        let traced = IDENTIFIABLE_NETWORKS.min(preset.chains);
        let weights = engine.read_weights(0, traced)?;
        let diverged: Vec<bool> = engine.read_parameter(0)?.diverged_at[..traced as usize]
            .iter()
            .map(|&d| d != 0)
            .collect();
        identifiable.record(&model.posterior, &data, &weights, &diverged);
        let sgd = evaluate(&mut baseline, &data, 1, 0)?.ensemble;
        series.push(MlpSeriesRow::new(
            &report,
            preset.sampler.kind,
            &ensemble,
            &sgd,
        ));
        progress(done);
    }
    let last = evaluate(engine.as_mut(), &data, preset.chains, 0)?;
    let sgd: Evaluation = evaluate(&mut baseline, &data, 1, 0)?.ensemble;
    let diverged_at = engine.read_parameter(0)?.diverged_at;
    let info = engine.backend();
    let gradients = f64::from(preset.chains) * f64::from(preset.steps);
    let alive = report.alive > 0;
    let summary = MlpSummary {
        kind: "mlp",
        name: preset.name.clone(),
        sampler: preset.sampler.kind.name().into(),
        network: model.posterior.arch.describe(),
        parameters: model.posterior.params(),
        data: data.name.clone(),
        train_points: data.train_x.len(),
        test_points: data.test_x.len(),
        chains: preset.chains,
        steps: preset.steps,
        seed: preset.seed,
        backend: info.kind.into(),
        printed_defects: printed_defects(&preset.sampler),
        diverged_fraction: report.diverged as f64 / f64::from(preset.chains),
        first_divergence_step: diverged_at.iter().copied().filter(|&d| d > 0).min(),
        // With every network diverged these statistics average nothing, and a sampler without
        // momentum (thermostat) has no kinetic temperature (ξ): null, not 0.
        kinetic_temperature: (alive && preset.sampler.kind.has_momentum())
            .then_some(report.overall.kinetic_temperature),
        mean_xi: (alive && preset.sampler.kind.has_thermostat()).then_some(report.overall.mean_xi),
        layers: report
            .layers
            .iter()
            .filter(|_| alive && preset.sampler.kind.has_momentum())
            .map(|l| LayerSummary {
                kinetic_temperature: l.kinetic_temperature,
                mean_xi: l.mean_xi,
            })
            .collect(),
        posterior_predictive: last.posterior_predictive().cloned(),
        single_network: (diverged_at.first() == Some(&0)).then_some(last.single),
        baseline_sgd: sgd,
        timings: MlpTimings {
            device: info.device,
            elapsed_s: elapsed,
            chain_gradients_per_s: if elapsed > 0.0 {
                gradients / elapsed
            } else {
                f64::NAN
            },
        },
        identifiable_rhat: identifiable.rhat(),
    };
    Ok(MlpOutcome {
        summary,
        series: series.into_vec(),
        notice,
    })
}
