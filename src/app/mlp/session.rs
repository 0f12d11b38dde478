//! The worker behind the MLP view: a thread that owns the networks' engine and the SGD
//! baseline, advances them tick by tick and publishes what the views draw. As for the 2-D
//! chains, every random number is a function of (seed, chain, step), and evaluations happen
//! at fixed step counts, so the pictures at step N do not depend on timing.

use crate::app::worker::{Latest, Message, Simulation, Transport, WorkerHandle};
use crate::diagnostics::bounded::BoundedSeries;
use crate::diagnostics::mlp::{
    EnsembleEvaluation, Evaluation, IDENTIFIABLE_NETWORKS, IdentifiableRhat, IdentifiableTraces,
    MlpSeriesRow, evaluate_with,
};
use crate::engine::mlp::{MlpCpuEngine, MlpEngine, MlpReport, ParameterStates, Prediction};
use crate::engine::{BackendChoice, BackendInfo, create_mlp_engine, gpu::GpuContext};
use crate::math::{Dataset, Grid2};
use crate::preset::{Change, MlpPreset};
use std::sync::Arc;
use std::time::Instant;

/// Rows of the time series kept; older rows are thinned, never dropped.
const MAX_SERIES_ROWS: usize = 4096;

/// The posterior predictive on the map's grid.
#[derive(Clone, Debug)]
pub struct MapData {
    /// Cell centres of the map: `grid.nx × grid.ny`, row-major from the bottom.
    pub grid: Grid2,
    /// Predictions at the cell centres.
    pub prediction: Prediction,
    /// The SGD baseline network's class probabilities at the cell centres (points ×
    /// classes): the point estimate the lesson sets beside the predictive.
    pub baseline: Vec<f32>,
    /// The step they were computed at.
    pub step: u32,
    /// Which of the worker's maps this is: a new map has a new number even at the same step
    /// (after a live change of the focus network, the predictive networks or the seed).
    pub serial: u64,
}

/// What the MLP views draw, replaced after every tick.
#[derive(Clone, Debug, Default)]
pub struct MlpSnapshot {
    /// Steps done.
    pub step: u32,
    /// Statistics of the last tick.
    pub report: MlpReport,
    /// One row per evaluation.
    pub series: Vec<MlpSeriesRow>,
    /// The predictive maps.
    pub map: Option<Arc<MapData>>,
    /// The latest evaluation of the ensemble (and of the focus network).
    pub evaluation: Option<EnsembleEvaluation>,
    /// The latest evaluation of the SGD baseline.
    pub baseline: Option<Evaluation>,
    /// The SGD baseline's value of the shown parameter.
    pub baseline_parameter: Option<f32>,
    /// θ, p, ξ of the shown parameter across networks.
    pub parameter: Option<(u32, ParameterStates)>,
    /// The data set the networks are trained on.
    pub data: Option<Arc<Dataset>>,
    /// Step at which the first network diverged.
    pub first_divergence: Option<u32>,
    /// Backend and device.
    pub backend: Option<BackendInfo>,
    /// Why `auto` fell back to the CPU, or what failed.
    pub notice: Option<String>,
    /// A problem with the preset (for example an unreadable CSV file): nothing runs.
    pub error: Option<String>,
    /// Whether the worker is running.
    pub playing: bool,
    /// Step the worker is running to, when set.
    pub run_to: Option<u32>,
    /// Network-gradient evaluations per second of the last ticks.
    pub gradients_per_s: f64,
    /// Number of networks.
    pub chains: u32,
    /// R-hat of what the first networks identify (never of their weights).
    pub identifiable: Option<IdentifiableRhat>,
}

impl crate::app::simulated::Progress for MlpSnapshot {
    fn step(&self) -> u32 {
        self.step
    }

    fn playing(&self) -> bool {
        self.playing
    }

    fn backend(&self) -> Option<&BackendInfo> {
        self.backend.as_ref()
    }

    fn rate(&self) -> (f64, &'static str) {
        (self.gradients_per_s, "network-gradients/s")
    }
}

/// The MLP view's commands (transport is [`crate::app::worker::Control`]).
#[derive(Clone, Debug)]
pub enum MlpCommand {
    /// Apply an edited preset; [`MlpPreset::change_from`] decides what it does to the
    /// networks. `restart` starts them over whatever changed (a newly loaded preset).
    Apply {
        /// The new preset.
        preset: Box<MlpPreset>,
        /// Start the networks over in any case.
        restart: bool,
    },
}

/// The UI's handle on the worker.
pub type MlpSession = WorkerHandle<Message<MlpCommand>, MlpSnapshot>;

impl MlpSession {
    /// Starts a worker on `preset`. `repaint` is called after every tick.
    pub fn start(
        preset: MlpPreset,
        backend: BackendChoice,
        playing: bool,
        repaint: impl Fn() + Send + 'static,
    ) -> Self {
        let initial = MlpSnapshot {
            playing,
            chains: preset.chains,
            ..MlpSnapshot::default()
        };
        WorkerHandle::spawn_paced("atmc-lab mlp engine", initial, move |rx, latest, pacing| {
            crate::app::worker::run(
                &mut Worker::new(preset, backend, playing, latest, repaint),
                rx,
                &pacing,
            );
        })
    }
}

/// The networks, the baseline and the data they run on.
struct Engines {
    networks: Box<dyn MlpEngine>,
    baseline: MlpCpuEngine,
    data: Arc<Dataset>,
}

struct Worker<R: Fn()> {
    preset: MlpPreset,
    backend: BackendChoice,
    device: Option<GpuContext>,
    engines: Option<Engines>,
    error: Option<String>,
    notice: Option<String>,
    transport: Transport,
    latest: Arc<Latest<MlpSnapshot>>,
    repaint: R,
    series: BoundedSeries<MlpSeriesRow>,
    first_divergence: Option<u32>,
    map: Option<Arc<MapData>>,
    /// Maps made so far (the next map's serial).
    maps_made: u64,
    /// What the first networks predict, traced for R-hat.
    identifiable: IdentifiableTraces,
    identifiable_rhat: Option<IdentifiableRhat>,
    evaluation: Option<EnsembleEvaluation>,
    baseline_eval: Option<Evaluation>,
    report: MlpReport,
    rate: f64,
}

impl<R: Fn()> Worker<R> {
    fn new(
        preset: MlpPreset,
        backend: BackendChoice,
        playing: bool,
        latest: Arc<Latest<MlpSnapshot>>,
        repaint: R,
    ) -> Self {
        let mut w = Self {
            preset,
            backend,
            device: None,
            engines: None,
            error: None,
            notice: None,
            transport: Transport::new(playing),
            latest,
            repaint,
            series: BoundedSeries::new(MAX_SERIES_ROWS),
            first_divergence: None,
            map: None,
            maps_made: 0,
            identifiable: IdentifiableTraces::default(),
            identifiable_rhat: None,
            evaluation: None,
            baseline_eval: None,
            report: MlpReport::default(),
            rate: f64::NAN,
        };
        w.allocate();
        w
    }

    /// (Re)creates the engines for the current preset; a preset that cannot be built (a bad
    /// CSV file) leaves no engines and an error for the UI.
    fn allocate(&mut self) {
        self.engines = None;
        self.clear_history();
        let (model, data) = match self.preset.build() {
            Ok(built) => built,
            Err(e) => {
                self.error = Some(e);
                return;
            }
        };
        self.error = None;
        let p = &self.preset;
        // The SGD baseline is one network: on the CPU (a GPU would idle).
        let baseline = MlpCpuEngine::new(p.baseline_model(&model), 1, &p.init, p.seed);
        let created = create_mlp_engine(
            self.backend,
            &mut self.device,
            model.clone(),
            p.chains,
            &p.init,
            p.seed,
        );
        let networks = match created {
            Ok((engine, notice)) => {
                if notice.is_some() {
                    // `auto` found no GPU: do not probe again on every reallocation.
                    self.backend = BackendChoice::Cpu;
                }
                self.notice = notice;
                engine
            }
            Err(e) => {
                self.notice = Some(format!("{e:#}: running on the CPU engine"));
                self.backend = BackendChoice::Cpu;
                Box::new(MlpCpuEngine::new(model, p.chains, &p.init, p.seed))
            }
        };
        self.engines = Some(Engines {
            networks,
            baseline,
            data: Arc::new(data),
        });
    }

    fn clear_history(&mut self) {
        self.series.clear();
        self.identifiable = IdentifiableTraces::default();
        self.identifiable_rhat = None;
        self.first_divergence = None;
        self.map = None;
        self.evaluation = None;
        self.baseline_eval = None;
        self.report = MlpReport::default();
    }

    /// Carries out what [`MlpPreset::change_from`] decided.
    fn apply_preset(&mut self, preset: MlpPreset, restart: bool) {
        let mut change = preset.change_from(&self.preset);
        if restart {
            change = change.max(Change::Restart);
        }
        self.preset = preset;
        if self.engines.is_none() && change != Change::None {
            // Nothing runs yet (say a CSV file could not be read, or a drawn set is still too
            // small): try again from scratch.
            change = Change::Reallocate;
        }
        let old_classes = self.engines.as_ref().map(|e| e.data.classes);
        match change {
            Change::None => {}
            Change::Reallocate => {
                self.allocate();
                self.note_new_classes(old_classes);
            }
            Change::Live | Change::Restart => {
                if let Err(e) = self.update_models() {
                    // A data set with another number of classes changes the output layer
                    // (a CSV file's classes are known only now): start over with new
                    // networks. A data set that cannot be built leaves none (the error).
                    self.allocate();
                    if self.engines.is_some() {
                        self.notice = Some(format!("{e}: the networks started over"));
                        self.note_new_classes(old_classes);
                    }
                } else if change == Change::Restart {
                    self.reset_networks();
                } else {
                    // Same networks, new parameters: re-evaluate what is drawn.
                    self.map = None;
                }
            }
        }
    }

    /// After a rebuild: when the data set's classes changed (a new class drawn, another
    /// generated set), the notice the view shows says so, since the networks started over.
    fn note_new_classes(&mut self, old: Option<u32>) {
        let new = self.engines.as_ref().map(|e| e.data.classes);
        if let (Some(old), Some(new)) = (old, new)
            && old != new
        {
            self.notice = Some(format!(
                "the data set now has {new} classes (it had {old}): the output layer changed, \
                 so the networks started over"
            ));
        }
    }

    /// Live changes: sampler, schedule, prior, minibatch and data set (same architecture).
    fn update_models(&mut self) -> Result<(), String> {
        let (model, data) = self.preset.build()?;
        let baseline = self.preset.baseline_model(&model);
        let e = self.engines.as_mut().expect("engines");
        e.networks.set_model(model).map_err(|e| e.to_string())?;
        e.baseline.set_model(baseline).map_err(|e| e.to_string())?;
        if *e.data != data {
            e.data = Arc::new(data);
        }
        Ok(())
    }

    fn reset_networks(&mut self) {
        let (init, seed) = (self.preset.init, self.preset.seed);
        if let Some(e) = self.engines.as_mut() {
            let _ = e.networks.reset(&init, seed);
            let _ = e.baseline.reset(&init, seed);
        }
        self.clear_history();
    }

    fn step_count(&self) -> u32 {
        self.engines.as_ref().map_or(0, |e| e.networks.steps_done())
    }

    fn advance(&mut self, steps: u32, changed: bool) -> anyhow::Result<()> {
        let Some(e) = self.engines.as_mut() else {
            self.publish();
            return Ok(());
        };
        let start = Instant::now();
        if steps > 0 || changed {
            self.report = e.networks.advance(steps)?;
            e.baseline.advance(steps)?;
        }
        if steps > 0 {
            let chains = f64::from(e.networks.chains());
            self.rate = chains * f64::from(steps) / start.elapsed().as_secs_f64();
        }
        let step = self.report.step;
        let arrived = self.transport.arrived(step);
        if self.report.diverged > 0 && self.first_divergence.is_none() {
            self.first_divergence = Some(step);
        }
        let every = self.preset.view.map_every.max(1);
        let stale = self.map.as_ref().is_none_or(|m| m.step != step);
        let due = step.is_multiple_of(every) && stale;
        // A run that stops (at a run-to target, or a single step while paused) shows the maps
        // of the step it stopped at, whatever `map_every` is.
        let stopped = stale && (arrived || (steps > 0 && !self.transport.playing));
        if due || stopped || self.map.is_none() || (changed && !self.transport.playing) {
            self.evaluate()?;
        }
        self.publish();
        Ok(())
    }

    /// The maps and the metrics of the ensemble, its focus network and the baseline.
    fn evaluate(&mut self) -> anyhow::Result<()> {
        let view = self.preset.view;
        let e = self.engines.as_mut().expect("engines");
        let b = e.data.bounds();
        let grid = Grid2::new(
            [f64::from(b[0][0]), f64::from(b[0][1])],
            [f64::from(b[1][0]), f64::from(b[1][1])],
            view.map_resolution,
            view.map_resolution,
        );
        let centres: Vec<[f32; 2]> = (0..grid.ny)
            .flat_map(|iy| (0..grid.nx).map(move |ix| (ix, iy)))
            .map(|(ix, iy)| {
                let c = grid.cell_center(ix, iy);
                [c[0] as f32, c[1] as f32]
            })
            .collect();
        let focus = view.focus_chain.min(e.networks.chains().saturating_sub(1));
        let (evaluation, prediction) = evaluate_with(
            e.networks.as_mut(),
            &e.data,
            view.predictive_chains,
            focus,
            &centres,
        )?;
        let (baseline, baseline_map) = evaluate_with(&mut e.baseline, &e.data, 1, 0, &centres)?;
        let step = self.report.step;
        if self.series.last().is_none_or(|r| r.step != step) {
            let traced = IDENTIFIABLE_NETWORKS.min(e.networks.chains());
            let weights = e.networks.read_weights(0, traced)?;
            let diverged: Vec<bool> = e.networks.read_parameter(0)?.diverged_at[..traced as usize]
                .iter()
                .map(|&d| d != 0)
                .collect();
            let posterior = e.networks.model().posterior.clone();
            self.identifiable
                .record(&posterior, &e.data, &weights, &diverged);
            self.identifiable_rhat = Some(self.identifiable.rhat()).filter(|r| r.draws >= 4);
        }
        let row = MlpSeriesRow::new(
            &self.report,
            self.preset.sampler.kind,
            &evaluation,
            &baseline.ensemble,
        );
        if self.series.last().is_none_or(|r| r.step != step) {
            self.series.push(row);
        } else {
            self.series.replace_last(row);
        }
        self.maps_made += 1;
        self.map = Some(Arc::new(MapData {
            grid,
            prediction,
            baseline: baseline_map.mean,
            step,
            serial: self.maps_made,
        }));
        self.evaluation = Some(evaluation);
        self.baseline_eval = Some(baseline.ensemble);
        Ok(())
    }

    fn publish(&mut self) {
        let parameter = self.preset.view.parameter;
        let (states, baseline_parameter, backend, data) = match self.engines.as_mut() {
            Some(e) => (
                e.networks.read_parameter(parameter as usize).ok(),
                e.baseline
                    .read_parameter(parameter as usize)
                    .ok()
                    .and_then(|s| s.theta.first().copied()),
                Some(e.networks.backend()),
                Some(e.data.clone()),
            ),
            None => (None, None, None, None),
        };
        self.latest.publish(MlpSnapshot {
            step: self.report.step,
            report: self.report.clone(),
            series: self.series.to_vec(),
            map: self.map.clone(),
            evaluation: self.evaluation.clone(),
            baseline: self.baseline_eval.clone(),
            baseline_parameter,
            parameter: states.map(|st| (parameter, st)),
            data,
            first_divergence: self.first_divergence,
            backend,
            notice: self.notice.clone(),
            error: self.error.clone(),
            playing: self.transport.playing,
            run_to: self.transport.run_to,
            gradients_per_s: self.rate,
            chains: self.preset.chains,
            identifiable: self.identifiable_rhat.clone(),
        });
        (self.repaint)();
    }
}

impl<R: Fn()> Simulation for Worker<R> {
    type Command = MlpCommand;

    fn command(&mut self, command: MlpCommand) {
        match command {
            MlpCommand::Apply { preset, restart } => self.apply_preset(*preset, restart),
        }
    }

    fn reset(&mut self) {
        self.reset_networks();
    }

    fn transport(&mut self) -> &mut Transport {
        &mut self.transport
    }

    /// The frame's steps, cut at the next evaluation so evaluations fall on the same step
    /// counts however ticks fall.
    fn steps_this_tick(&mut self) -> u32 {
        if self.engines.is_none() {
            return 0;
        }
        let step = self.step_count();
        let every = self.preset.view.map_every.max(1);
        let to_eval = every - step % every;
        // Run to a step (a handout's or a screenshot's picture) goes from evaluation to
        // evaluation: nobody watches the frames in between, and a tick per frame's steps
        // made a picture of 300 steps take 96 s where the headless run takes 1.
        let per_tick = if self.transport.run_to.is_some() {
            to_eval
        } else {
            self.preset.view.steps_per_frame.min(to_eval)
        };
        self.transport.steps(step, per_tick)
    }

    fn tick(&mut self, steps: u32, changed: bool) -> anyhow::Result<()> {
        self.advance(steps, changed)
    }

    fn fail(&mut self, message: String) {
        self.notice = Some(message);
        self.publish();
    }
}
