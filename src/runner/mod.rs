//! Headless runs: a preset driven through an engine block by block, recorded by the
//! diagnostics. The command line's `run` and the tests share this.

use crate::diagnostics::challenge::{Attempt, Verdict, judge};
use crate::diagnostics::movement::{MOVEMENT_CHAINS, Movement};
use crate::diagnostics::{
    ModeVisits, RunInfo, RunRecorder, SeriesRow, Summary, TRACE_CHAINS, TRUTH_SAMPLES,
};
use crate::diagnostics::{SERIES_DISTANCE_CHAINS, Truth};
use crate::engine::ChainStates;
use crate::engine::{BackendChoice, HistogramSpec, create_engine};
use crate::math::adapt::DualAveraging;
use crate::math::challenge::ChallengeSpec;
use crate::math::{NoiseMass, SamplerSpec, XiUpdate};
use crate::preset::{AnyPreset, Preset, Validated};
use std::time::Instant;

/// Everything a finished run produced.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The statistics.
    pub summary: Summary,
    /// The time series, one row per recorded block.
    pub series: Vec<SeriesRow>,
    /// Why `auto` fell back to the CPU, if it did.
    pub notice: Option<String>,
}

pub mod mlp;
pub mod thermodynamics;

pub use crate::diagnostics::draws::{DrawRecorder, DrawSpec};

/// Runs every column of a comparison for the base's number of steps, one after the other
/// (each column is an independent run with the same target, seed and noise). `progress` is
/// called with the column index and its steps done.
pub fn run_comparison(
    comparison: &crate::preset::Comparison,
    backend: BackendChoice,
    progress: &mut dyn FnMut(usize, u32),
) -> anyhow::Result<Vec<(String, RunOutcome)>> {
    (0..comparison.columns.len())
        .map(|k| {
            let preset = comparison.column_preset(k);
            let outcome = run(&preset, backend, &mut |done| progress(k, done))?;
            Ok((comparison.columns[k].label.clone(), outcome))
        })
        .collect()
}

/// The run a challenge judges: a 2-D run (a 2-D preset, or a comparison's column) or a
/// network preset's.
#[derive(Clone, Debug)]
pub enum ChallengeRun {
    /// A 2-D preset as the student set it.
    Chains(Box<Preset>),
    /// Networks as the student set them (divergence goals only).
    Networks(Box<crate::preset::MlpPreset>),
}

impl ChallengeRun {
    /// Runs the attempt for the challenge's budget on `backend` and judges it.
    pub fn attempt(
        &self,
        challenge: &ChallengeSpec,
        backend: BackendChoice,
    ) -> anyhow::Result<(Attempt, Verdict)> {
        match self {
            ChallengeRun::Chains(p) => attempt(p, challenge, backend),
            ChallengeRun::Networks(p) => attempt_networks(p, challenge, backend),
        }
    }
}

/// The run a challenge judges in `preset`: a 2-D preset itself, a comparison's column named
/// by the challenge, a network preset; None for the sphere or a preset without a challenge.
pub fn challenge_run(preset: &AnyPreset) -> Option<(ChallengeRun, ChallengeSpec)> {
    Some(match preset {
        AnyPreset::Toy(p) => (
            ChallengeRun::Chains(Box::new(p.clone())),
            *p.story.challenge.clone()?,
        ),
        AnyPreset::Comparison(c) => {
            let challenge = *c.story.challenge.clone()?;
            (
                ChallengeRun::Chains(Box::new(c.column_preset(challenge.column))),
                challenge,
            )
        }
        AnyPreset::Mlp(p) => (
            ChallengeRun::Networks(Box::new(p.clone())),
            *p.story.challenge.clone()?,
        ),
        AnyPreset::Sphere(_) => return None,
    })
}

/// An attempt at `challenge`: `preset` as the student set it, run for the challenge's budget
/// of steps on `backend`, measured and judged by the diagnostics.
pub fn attempt(
    preset: &Preset,
    challenge: &ChallengeSpec,
    backend: BackendChoice,
) -> anyhow::Result<(Attempt, Verdict)> {
    let mut p = preset.clone();
    p.steps = challenge.steps;
    let s = run(&p, backend, &mut |_| {})?.summary;
    let measured = Attempt {
        steps: p.steps,
        h: p.sampler.h,
        diverged_fraction: s.diverged_fraction,
        energy_distance: s.energy_distance,
        energy_distance_baseline: s.energy_distance_baseline,
        modes_per_chain: s.modes_per_chain,
    };
    let verdict = judge(challenge, &measured);
    Ok((measured, verdict))
}

/// An attempt at `challenge` on networks: `preset` as the student set it, run for the
/// challenge's budget; only the share of diverged networks is measured (the goals a network
/// preset may carry are divergence goals, checked when it loads).
pub fn attempt_networks(
    preset: &crate::preset::MlpPreset,
    challenge: &ChallengeSpec,
    backend: BackendChoice,
) -> anyhow::Result<(Attempt, Verdict)> {
    let mut p = preset.clone();
    p.steps = challenge.steps;
    let s = mlp::run_mlp(&p, backend, &mut |_| {})?.summary;
    let measured = Attempt {
        steps: p.steps,
        h: p.sampler.h,
        diverged_fraction: s.diverged_fraction,
        energy_distance: f64::NAN,
        energy_distance_baseline: f64::NAN,
        modes_per_chain: Vec::new(),
    };
    let verdict = judge(challenge, &measured);
    Ok((measured, verdict))
}

/// The first `chains` chains of `preset` at every step of its run, replayed on the CPU (the
/// same random numbers as every engine draws); a path stops at its divergence, the
/// non-finite or out-of-bound state included.
pub fn trajectories(preset: &Validated<Preset>, chains: u32) -> Vec<Vec<crate::math::Chain2>> {
    use rayon::prelude::*;
    let model = preset.model();
    (0..chains.min(preset.chains))
        .into_par_iter()
        .map(|i| {
            let mut chain = preset.init.chain(&model, preset.seed, i);
            let mut path = vec![chain];
            model.replay(&mut chain, preset.seed, i, 0, preset.steps, |_, c| {
                path.push(*c)
            });
            path
        })
        .collect()
}

/// Names of ATMC's printed defects switched on in a sampler.
/// The convergence instruments of a finished run graded together
/// ([`crate::diagnostics::verdict::judge`]): split R̂ of the last window against its limits,
/// nested R̂, the KSD and the energy distance against their exact-draw baselines, and the
/// modes reached on a mixture.
fn run_verdicts(
    summary: &crate::diagnostics::Summary,
    last: Option<&crate::diagnostics::convergence::ConvergenceRow>,
    modes: Option<crate::diagnostics::ModeCoverage>,
) -> crate::diagnostics::verdict::Verdicts {
    use crate::diagnostics::verdict::{Baselined, Instruments, Limited, judge};
    judge(&Instruments {
        rhat_bulk: last.map(|c| Limited {
            value: c.rhat_bulk,
            limit: c.rhat_bulk_limit,
        }),
        rhat_tail: last.map(|c| Limited {
            value: c.rhat_tail,
            limit: c.rhat_tail_limit,
        }),
        nested_rhat: summary
            .nested_rhat
            .zip(summary.nested_rhat_limit)
            .map(|(value, limit)| Limited { value, limit }),
        ksd: Some(Baselined {
            value: summary.ksd,
            mean: summary.ksd_baseline,
            sd: summary.ksd_baseline_sd,
        }),
        energy_distance: Some(Baselined {
            value: summary.energy_distance,
            mean: summary.energy_distance_baseline,
            sd: summary.energy_distance_baseline_sd,
        }),
        modes,
    })
}

pub fn printed_defects(s: &SamplerSpec) -> Vec<String> {
    let mut out = Vec::new();
    if !s.has_printed_defect() {
        return out;
    }
    if s.friction_sign != 1.0 {
        out.push(format!("friction sign {}", s.friction_sign));
    }
    if s.xi_update == XiUpdate::Overwrite {
        out.push("thermostat overwrite".into());
    }
    if s.noise_mass == NoiseMass::Without {
        out.push("noise without mass factor".into());
    }
    out
}

/// Runs `preset` for its number of steps on `backend`; statistics use the second half.
/// `progress` is called with the steps done after every block.
pub fn run(
    preset: &Preset,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
) -> anyhow::Result<RunOutcome> {
    let preset = validated(preset.clone())?;
    run_streaming(&preset, backend, progress, &mut |_| Ok(()))
}

/// `preset` checked, or what is wrong with it as an error: the runner's door for presets
/// that come without proof (a student's edit, a column of a comparison).
pub fn validated(preset: Preset) -> anyhow::Result<Validated<Preset>> {
    preset
        .validated()
        .map_err(|(field, message)| anyhow::anyhow!("{field}: {message}"))
}

/// [`run`] that hands every time-series row to `row` as it is recorded (the command line
/// streams them into the CSV file, so that no row is lost and memory stays bounded however
/// long the run: the outcome's own series is thinned to at most [`MAX_SERIES_ROWS`] rows).
///
/// Statistics leave out the whole history of every chain that diverged: when some chains
/// diverged after the statistics window opened, a second pass runs the survivors alone (they
/// are independent and draw the same random numbers, so their trajectories are the same) and
/// pools only them.
pub fn run_streaming(
    preset: &Validated<Preset>,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
    row: &mut dyn FnMut(&SeriesRow) -> anyhow::Result<()>,
) -> anyhow::Result<RunOutcome> {
    let truth = Truth::new(&preset.model().target);
    run_against(preset, &truth, backend, progress, row)
}

/// [`run_streaming`] against a given truth (of the preset's target): a sweep over one target
/// computes its exact samples and baselines once.
pub fn run_against(
    preset: &Validated<Preset>,
    truth: &Truth,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
    row: &mut dyn FnMut(&SeriesRow) -> anyhow::Result<()>,
) -> anyhow::Result<RunOutcome> {
    run_keeping(
        preset,
        truth,
        backend,
        progress,
        row,
        DrawRecorder::default(),
    )
    .map(|r| r.0)
}

/// [`run_streaming`] that also keeps the draws `spec` asks for (`run --draws`, File → Export
/// draws); check the spec with [`DrawSpec::check`] before.
pub fn run_with_draws(
    preset: &Validated<Preset>,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
    row: &mut dyn FnMut(&SeriesRow) -> anyhow::Result<()>,
    spec: DrawSpec,
) -> anyhow::Result<(RunOutcome, DrawRecorder)> {
    let truth = Truth::new(&preset.model().target);
    run_keeping(
        preset,
        &truth,
        backend,
        progress,
        row,
        DrawRecorder::new(spec),
    )
}

/// Recorded blocks of a run of `preset` (what a [`DrawSpec`] thins).
pub fn recorded_blocks(preset: &Preset) -> usize {
    block_ends(preset.steps, preset.record_every).len()
}

fn run_keeping(
    preset: &Validated<Preset>,
    truth: &Truth,
    backend: BackendChoice,
    progress: &mut dyn FnMut(u32),
    row: &mut dyn FnMut(&SeriesRow) -> anyhow::Result<()>,
    draws: DrawRecorder,
) -> anyhow::Result<(RunOutcome, DrawRecorder)> {
    // The truth's target is the preset's, built once (see `Preset::model_on`).
    let model = preset.model_on(truth.target.clone());
    let truth = truth.clone();
    let (mut engine, notice) = create_engine(
        backend,
        model.clone(),
        preset.chains,
        &preset.init,
        preset.seed,
    )?;
    let starts = engine.read_chains(0, preset.chains.min(MOVEMENT_CHAINS))?;
    let stats_from = preset.steps / 2;
    let mut first = Pass::new(&model, preset, truth.clone(), stats_from, true);
    first.draws = draws;
    let start = Instant::now();
    first.run(engine.as_mut(), &mut *progress, &mut *row)?;
    let mut elapsed = start.elapsed().as_secs_f64();
    let all = engine.read_chains(0, preset.chains)?;
    let diverged_in_window = all.diverged_at.iter().any(|&d| d > stats_from);
    let survivors = all.diverged_at.iter().filter(|&&d| d == 0).count();
    let (pooled, final_states) = if diverged_in_window && survivors > 0 {
        // Second pass: the chains that diverged are frozen from the start.
        engine.reset(&preset.init, preset.seed);
        let mut start_states = engine.read_chains(0, preset.chains)?;
        start_states.diverged_at.clone_from(&all.diverged_at);
        engine.write_chains(0, &start_states)?;
        let mut second = Pass::new(&model, preset, truth, stats_from, false);
        let start = Instant::now();
        second.run(engine.as_mut(), &mut |_| {}, &mut |_| Ok(()))?;
        elapsed += start.elapsed().as_secs_f64();
        (second.recorder, second.final_states)
    } else {
        (first.recorder.clone(), first.final_states.take())
    };
    let final_states = final_states.unwrap_or_default();
    let last = all.diverged_at.iter().filter(|&&d| d != 0).count();
    let info = engine.backend();
    let chain_steps = f64::from(preset.chains) * f64::from(preset.steps);
    let mut summary = pooled.summary(
        RunInfo {
            sampler: preset.sampler.kind.name().into(),
            target: preset.target.name().into(),
            chains: preset.chains,
            steps: preset.steps,
            seed: preset.seed,
            backend: info.kind.into(),
            device: info.device,
            printed_defects: printed_defects(&preset.sampler),
            diverged_fraction: last as f64 / f64::from(preset.chains),
            has_momentum: preset.sampler.kind.has_momentum(),
            has_thermostat: preset.sampler.kind.has_thermostat(),
            has_acceptance: preset.sampler.kind.has_acceptance(),
            elapsed_s: elapsed,
            chain_steps_per_s: if elapsed > 0.0 {
                chain_steps / elapsed
            } else {
                f64::NAN
            },
        },
        &final_states,
    );
    summary.first_divergence_step = all.diverged_at.iter().copied().filter(|&d| d > 0).min();
    summary.adapted_step_size = first.adapted_step_size;
    summary.modes_visited = first.modes.as_ref().map(ModeVisits::mean);
    summary.modes_per_chain = first
        .modes
        .as_ref()
        .map_or_else(Vec::new, ModeVisits::per_chain);
    summary.modes_visited_ensemble = first.modes.as_ref().map(|m| m.ensemble() as f64);
    let movement = Movement::between(
        &starts,
        &all,
        pooled.truth().cov,
        preset.sampler.h,
        preset.steps,
    );
    let coverage = first.modes.as_ref().map(ModeVisits::coverage);
    summary.warnings = crate::diagnostics::warnings::run_warnings(
        &preset.sampler,
        &summary,
        pooled.truth(),
        movement,
        coverage,
        preset.gradient_noise(),
    );
    // The instruments graded together: a pass that cannot see a severe failure is said so.
    summary.verdicts = run_verdicts(&summary, pooled.last_convergence(), coverage);
    summary.warnings.extend(summary.verdicts.trust.clone());
    summary
        .warnings
        .extend(crate::diagnostics::convergence::starts_note(
            &preset.init,
            &pooled.truth().target,
        ));
    if let Some(k) = summary.superchains {
        summary
            .warnings
            .extend(crate::diagnostics::convergence::nested_resolution_note(
                preset.chains,
                k,
            ));
    }
    Ok((
        RunOutcome {
            summary,
            series: first.recorder.series.into_vec(),
            notice,
        },
        first.draws,
    ))
}

/// Rows of a run's in-memory time series; older rows are thinned, never dropped.
pub const MAX_SERIES_ROWS: usize = 8192;

/// One pass over a run's blocks.
struct Pass<'a> {
    model: &'a crate::math::Model,
    preset: &'a Preset,
    recorder: RunRecorder,
    /// Whether this pass keeps the time series, counts modes and reports progress (the
    /// first); the second only pools.
    primary: bool,
    modes: Option<ModeVisits>,
    final_states: Option<ChainStates>,
    /// The draws kept for export (none unless asked for).
    draws: DrawRecorder,
    /// HMC with a target acceptance: the step size its warm-up adapted and froze.
    adapted_step_size: Option<f64>,
}

impl<'a> Pass<'a> {
    fn new(
        model: &'a crate::math::Model,
        preset: &'a Preset,
        truth: Truth,
        stats_from: u32,
        primary: bool,
    ) -> Self {
        let modes = if primary {
            ModeVisits::for_target(&model.target)
        } else {
            None
        };
        let mut recorder = RunRecorder::new(truth, stats_from, preset.sampler.kind)
            .with_convergence(
                preset.chains,
                &preset.init,
                block_ends(preset.steps, preset.record_every).len(),
            );
        recorder.set_max_rows(MAX_SERIES_ROWS);
        Self {
            model,
            preset,
            recorder,
            primary,
            modes,
            final_states: None,
            draws: DrawRecorder::default(),
            adapted_step_size: None,
        }
    }

    fn run(
        &mut self,
        engine: &mut dyn crate::engine::Engine,
        progress: &mut dyn FnMut(u32),
        row: &mut dyn FnMut(&SeriesRow) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let (model, preset) = (self.model, self.preset);
        let head = SERIES_DISTANCE_CHAINS.max(TRACE_CHAINS);
        let ends = block_ends(preset.steps, preset.record_every);
        // The distance to truth uses the last pooled (sampling-stage) state; with a constant
        // schedule that is the end of the run.
        let recorder = &self.recorder;
        let last_pooled = ends
            .iter()
            .rev()
            .copied()
            .find(|&end| recorder.pools(end, model.schedule.at(model.sampler.h, end - 1).1));
        // On a mixture, the modes the first chains visit are counted at every step: the
        // states between two blocks are replayed on the CPU from the block's first state.
        let mut tracked = if self.modes.is_some() {
            engine.read_chains(0, SERIES_DISTANCE_CHAINS)?
        } else {
            ChainStates::default()
        };
        let mut done = 0u32;
        let mut engine_seconds = 0.0;
        // HMC's warm-up adapts h one step at a time (the ensemble's acceptance of each step
        // is a precise statistic) until the statistics window opens, then freezes h̄.
        let mut live = model.clone();
        let warm_up = preset.steps / 2;
        let mut adapting = preset
            .sampler
            .target_acceptance
            .filter(|_| model.sampler.kind == crate::math::SamplerKind::Hmc && warm_up > 0)
            .map(|target| DualAveraging::new(f64::from(model.sampler.h), target));
        for end in ends {
            let started = Instant::now();
            if let Some(adapt) = adapting.as_mut() {
                let until = end.min(warm_up);
                while done < until {
                    if let Some(modes) = &mut self.modes {
                        replay_modes(&live, preset.seed, done, 1, &mut tracked, modes);
                    }
                    let report = engine.advance(1, &[])?;
                    done += 1;
                    live.sampler.h = adapt.update(report.moments.hmc_rates()[0]) as f32;
                    engine.set_model(live.clone());
                }
                if done == warm_up {
                    let h = adapt.final_step_size();
                    live.sampler.h = h as f32;
                    engine.set_model(live.clone());
                    self.adapted_step_size = Some(h);
                    adapting = None;
                }
            }
            let model = &live;
            let (h, exploring) = model.schedule.at(model.sampler.h, end - 1);
            let histograms: Vec<HistogramSpec> = if self.recorder.pools(end, exploring) {
                vec![HistogramSpec::theta(self.recorder.truth().grid)]
            } else {
                Vec::new()
            };
            if let Some(modes) = &mut self.modes {
                replay_modes(model, preset.seed, done, end - done, &mut tracked, modes);
            }
            let report = engine.advance(end - done, &histograms)?;
            engine_seconds += started.elapsed().as_secs_f64();
            self.recorder.set_engine_seconds(engine_seconds);
            done = end;
            let states = crate::engine::read_alive_head(engine, head, report.moments.alive)?;
            self.recorder
                .record(&report, &states, f64::from(h), exploring);
            let wanted = self.draws.chains_wanted();
            if wanted > 0 {
                // The first chains of `states` are chains 0, 1, … (further alive ones follow).
                if wanted <= head {
                    self.draws.record(end, f64::from(h), &states);
                } else {
                    let kept = engine.read_chains(0, wanted)?;
                    self.draws.record(end, f64::from(h), &kept);
                }
            }
            if self.primary
                && let Some(r) = self.recorder.series.last()
            {
                row(r)?;
            }
            if self.modes.is_some() {
                tracked = engine.read_chains(0, SERIES_DISTANCE_CHAINS)?;
            }
            if Some(end) == last_pooled {
                self.final_states = Some(crate::engine::read_alive_head(
                    engine,
                    TRUTH_SAMPLES as u32,
                    report.moments.alive,
                )?);
            }
            if self.primary {
                progress(done);
            }
        }
        Ok(())
    }
}

/// Replays `steps` steps from `step0` of the tracked chains (the first ones, whose states at
/// `step0` are `tracked`) and records the modes they visit after every sampling-stage step.
fn replay_modes(
    model: &crate::math::Model,
    seed: u64,
    step0: u32,
    steps: u32,
    tracked: &mut ChainStates,
    modes: &mut ModeVisits,
) {
    use rayon::prelude::*;
    let n = tracked.chains.len().min(SERIES_DISTANCE_CHAINS as usize);
    // Per chain, the states after every step (NaN-free: a diverged chain stops).
    let paths: Vec<Vec<crate::math::Chain2>> = (0..n)
        .into_par_iter()
        .map(|i| {
            let mut path = Vec::with_capacity(steps as usize);
            if tracked.diverged_at[i] == 0 {
                let mut c = tracked.chains[i];
                model.replay(&mut c, seed, i as u32, step0, steps, |_, s| path.push(*s));
            }
            path
        })
        .collect();
    for k in 0..steps as usize {
        // A state after an exploration-stage step is a transit, not a draw: the modes a
        // chain samples are counted in the sampling stages only.
        if model.schedule.at(model.sampler.h, step0 + k as u32).1 {
            continue;
        }
        let states = ChainStates {
            chains: paths
                .iter()
                .enumerate()
                .map(|(i, p)| p.get(k).copied().unwrap_or(tracked.chains[i]))
                .collect(),
            diverged_at: paths.iter().map(|p| u32::from(p.len() <= k)).collect(),
        };
        modes.record(&states);
    }
}

/// The steps at which a run of `steps` steps records a block: every `record_every` steps
/// and at the end.
pub fn block_ends(steps: u32, record_every: u32) -> Vec<u32> {
    let every = record_every.max(1);
    let mut ends: Vec<u32> = (1..=steps / every).map(|k| k * every).collect();
    if !steps.is_multiple_of(every) {
        ends.push(steps);
    }
    ends
}
