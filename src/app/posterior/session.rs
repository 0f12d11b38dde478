//! The 2-D view's worker: a thread that owns the chain engine, advances it tick by tick and
//! publishes what the portraits and plots draw. A preset run to step N gives the same state
//! every time, however the ticks fell.

use crate::app::worker::{Latest, Message, Simulation, Transport, WorkerHandle};
use crate::diagnostics::bounded::BoundedSeries;
use crate::diagnostics::convergence::{ConvergenceMonitor, ConvergenceRow, ConvergenceSummary};
use crate::diagnostics::growth::{Extents, GrowthRate, GrowthRow, growth_rate, growth_row};
use crate::diagnostics::warnings::{instant_far_with_causes, should_sample};
use crate::diagnostics::{ModeVisits, SERIES_DISTANCE_CHAINS, SeriesRow, Truth};
use crate::engine::{
    BackendChoice, BackendInfo, ChainStates, Engine, HistogramSpec, Moments, create_engine,
    create_engine_reusing, gpu::GpuContext, read_alive_head,
};
use crate::math::rng::RngCounter;
use crate::math::samplers::LeapfrogPath;
use crate::math::{Chain2, Grid2, SamplerKind, SamplerParams, Target};
use crate::preset::{Change, Preset, Validated};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Positions kept per highlighted chain.
pub const TRAIL_LENGTH: usize = 24;
/// Ticks between two energy-distance evaluations of the time series.
const DISTANCE_EVERY: u32 = 8;
/// Cells per axis of the grid the target's contours are traced on.
const CONTOUR_RESOLUTION: u32 = 160;
/// Rows of the time series kept; older rows are thinned, never dropped.
const MAX_SERIES_ROWS: usize = 8192;
/// Highlighted chains whose every step is kept (replayed on the CPU between ticks).
pub const TRACKED_CHAINS: usize = 64;
/// Steps kept per tracked chain; a chain's history stops growing when it diverges, so the
/// steps before a divergence stay for the replay.
pub const HISTORY_STEPS: usize = 600;

/// Ticks between two evaluations of the convergence instruments: each costs about 15 ms of
/// the worker's time at 64 chains × 256 draws (every 4th tick cost the 2-D view about 7 % of
/// its frames at 1e5 chains); the window gains a draw every tick regardless.
pub const CONVERGENCE_EVERY: u32 = 8;

/// Steps over which the growth rate of the tracked chains is measured.
pub const GROWTH_WINDOW: usize = 10;

/// The tracked chains' states at every step, oldest first.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Per tracked chain: (step, state after that step), at most [`HISTORY_STEPS`].
    pub paths: Vec<VecDeque<(u32, Chain2)>>,
    /// Per tracked chain, the step at which it diverged (0 while alive).
    pub diverged_at: Vec<u32>,
    /// HMC: the last proposal of each of the first [`LEAPFROG_PATHS`] tracked chains.
    pub leapfrog: Vec<LeapfrogPath>,
}

/// How many highlighted chains show their last HMC proposal: a few trajectories read as
/// the picture of HMC; dozens would be a tangle.
pub const LEAPFROG_PATHS: usize = 4;

/// What the views draw, replaced after every tick.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The view's count of loaded presets this snapshot belongs to (see
    /// [`Command::Apply`]): an older one is the previous preset's.
    pub generation: u64,
    /// Steps done.
    pub step: u32,
    /// Moments of the alive chains.
    pub moments: Moments,
    /// Histograms for the requested views, in the order of [`Snapshot::specs`].
    pub histograms: Vec<(Vec<u32>, u64)>,
    /// The specs the histograms were binned with.
    pub specs: Vec<HistogramSpec>,
    /// Recent states of the highlighted chains, oldest first.
    pub trails: Vec<VecDeque<Chain2>>,
    /// For each highlighted chain, the step at which it diverged (0 while alive).
    pub trail_diverged_at: Vec<u32>,
    /// The time series, one row per tick.
    pub series: Vec<SeriesRow>,
    /// Step at which the first chain diverged.
    pub first_divergence: Option<u32>,
    /// Backend and device.
    pub backend: Option<BackendInfo>,
    /// Why `auto` fell back to the CPU, or why the engine failed.
    pub notice: Option<String>,
    /// Why the engine failed and the run stopped (cleared when the engine is made again).
    pub failed: Option<String>,
    /// Whether the worker is running.
    pub playing: bool,
    /// Measured engine throughput of the last ticks.
    pub chain_steps_per_s: f64,
    /// Number of chains.
    pub chains: u32,
    /// Step the worker is running to, when set.
    pub run_to: Option<u32>,
    /// Exact cell masses of the target on the first view's grid (for contours and marginals).
    pub view_truth: Option<Arc<(Grid2, Vec<f64>)>>,
    /// The sampler parameters the engine runs with.
    pub sampler: Option<SamplerParams>,
    /// Exact cell masses on a fine grid over the first view (for smooth contours).
    pub contour_truth: Option<Arc<(Grid2, Vec<f64>)>>,
    /// Every step of the tracked (first highlighted) chains: the growth plot and the replay.
    pub history: Arc<History>,
    /// Quantiles of |p|, |θ| and ξ over the ensemble, one row per tick.
    pub growth: Arc<Vec<GrowthRow>>,
    /// Robust extents of the chains (with the highlighted ones): portraits follow them.
    pub extents: Option<Extents>,
    /// On a mixture: how many modes the tracked chains have visited, per chain and together.
    pub modes_visited: Option<crate::diagnostics::ModeCoverage>,
    /// How fast ln|p| of the tracked chains grew before they diverged, against the O-step's
    /// prediction.
    pub growth_rate: Option<GrowthRate>,
    /// For a sampler meant to sample the target, past the preset's burn-in (half its steps):
    /// the moment of the alive chains that misses the target's, described, with its causes
    /// ordered by the evidence of the same moments.
    pub far_from_target: Option<String>,
    /// The convergence instruments' latest summary (the diagnostics strip).
    pub convergence: Option<Arc<ConvergenceSummary>>,
}

impl crate::app::simulated::Progress for Snapshot {
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
        (self.chain_steps_per_s, "chain-steps/s")
    }
}

/// The 2-D view's commands (transport is [`crate::app::worker::Control`]).
#[derive(Clone, Debug)]
pub enum Command {
    /// Apply an edited preset; [`Preset::change_from`] decides what it does to the chains.
    /// `restart` starts them over whatever changed (a newly loaded preset).
    Apply {
        /// The new preset.
        preset: Box<Preset>,
        /// Start the chains over in any case.
        restart: bool,
        /// The view's count of presets loaded, echoed in the snapshots from now on.
        generation: u64,
    },
    /// Histograms to bin after each tick (at most three).
    Views(Vec<HistogramSpec>),
}

/// The UI's handle on the worker.
pub type Session = WorkerHandle<Message<Command>, Snapshot>;

impl Session {
    /// Starts a worker on `preset` with the given backend. `repaint` is called after every
    /// tick (the app passes `egui::Context::request_repaint`).
    pub fn start(
        preset: Preset,
        backend: BackendChoice,
        playing: bool,
        repaint: impl Fn() + Send + 'static,
    ) -> Self {
        let initial = Snapshot {
            playing,
            chains: preset.chains,
            ..Snapshot::default()
        };
        WorkerHandle::spawn_paced("atmc-lab engine", initial, move |rx, latest, pacing| {
            crate::app::worker::run(
                &mut Worker::new(preset, backend, playing, latest, repaint),
                rx,
                &pacing,
            );
        })
    }
}

struct Worker<R: Fn()> {
    preset: Validated<Preset>,
    backend: BackendChoice,
    device: Option<GpuContext>,
    engine: Option<Box<dyn Engine>>,
    truth: Truth,
    target: Target,
    views: Vec<HistogramSpec>,
    view_truth: Option<Arc<(Grid2, Vec<f64>)>>,
    contour_truth: Option<Arc<(Grid2, Vec<f64>)>>,
    transport: Transport,
    ticks: u32,
    /// Ticks that ended in a sampling stage: the instruments' cadence counts only these,
    /// since exploration-stage states are kept out of them.
    sampling_ticks: u32,
    /// The latest [`Command::Apply`]'s generation.
    generation: u64,
    latest: Arc<Latest<Snapshot>>,
    repaint: R,
    trails: Vec<VecDeque<Chain2>>,
    series: BoundedSeries<SeriesRow>,
    history: History,
    /// The tracked chains at the start of the next tick (replayed from there).
    tracked: ChainStates,
    growth: BoundedSeries<GrowthRow>,
    modes: Option<ModeVisits>,
    first_divergence: Option<u32>,
    last_distance: f64,
    notice: Option<String>,
    failed: Option<String>,
    rate: f64,
    /// The live convergence instruments of the running chains.
    monitor: ConvergenceMonitor,
    /// Engine seconds since the chains started (ESS per second).
    engine_seconds: f64,
    /// The instruments' latest summary.
    convergence: Option<Arc<ConvergenceSummary>>,
}

impl<R: Fn()> Worker<R> {
    fn new(
        preset: Preset,
        backend: BackendChoice,
        playing: bool,
        latest: Arc<Latest<Snapshot>>,
        repaint: R,
    ) -> Self {
        // The app sends checked presets; one that fails its checks all the same is refused
        // with a notice instead of being run, and the lab opens on the default.
        let (preset, refused) = match preset.validated() {
            Ok(preset) => (preset, None),
            Err((_, message)) => (
                Preset::default_preset()
                    .validated()
                    .unwrap_or_else(|(_, m)| unreachable!("the shipped default is valid: {m}")),
                Some(format!("the preset was not run: {message}")),
            ),
        };
        let target = preset.model().target;
        let truth = Truth::new(&target);
        let (target_for_monitor, chains, superchains, init_for_monitor) = (
            target.clone(),
            preset.chains,
            preset.init.superchains,
            preset.init,
        );
        let mut w = Self {
            preset,
            backend,
            device: None,
            engine: None,
            truth,
            target,
            views: Vec::new(),
            view_truth: None,
            contour_truth: None,
            transport: Transport::new(playing),
            ticks: 0,
            sampling_ticks: 0,
            generation: 0,
            latest,
            repaint,
            trails: Vec::new(),
            series: BoundedSeries::new(MAX_SERIES_ROWS),
            history: History::default(),
            tracked: ChainStates::default(),
            growth: BoundedSeries::new(MAX_SERIES_ROWS),
            modes: None,
            first_divergence: None,
            last_distance: f64::NAN,
            notice: None,
            failed: None,
            rate: f64::NAN,
            monitor: ConvergenceMonitor::new(&target_for_monitor, chains, superchains)
                .with_starts(&init_for_monitor),
            engine_seconds: 0.0,
            convergence: None,
        };
        w.allocate();
        if refused.is_some() {
            w.notice = refused;
        }
        w
    }

    /// (Re)creates the engine for the current preset.
    fn allocate(&mut self) {
        self.failed = None;
        let p = &self.preset;
        match create_engine_reusing(
            self.backend,
            &mut self.device,
            p.model(),
            p.chains,
            &p.init,
            p.seed,
        ) {
            Ok((engine, notice)) => {
                if notice.is_some() {
                    // `auto` found no GPU: do not probe again on every reallocation.
                    self.backend = BackendChoice::Cpu;
                }
                self.engine = Some(engine);
                self.notice = notice;
            }
            Err(e) => {
                // The GPU was asked for explicitly and failed: keep the lab usable on the CPU.
                self.notice = Some(format!("{e:#}: running on the CPU engine"));
                self.backend = BackendChoice::Cpu;
                let (engine, _) =
                    create_engine(BackendChoice::Cpu, p.model(), p.chains, &p.init, p.seed)
                        .expect("the CPU engine always starts");
                self.engine = Some(engine);
            }
        }
        self.clear_history();
    }

    fn clear_history(&mut self) {
        self.trails.clear();
        self.series.clear();
        self.history = History::default();
        self.tracked = ChainStates::default();
        self.growth.clear();
        self.modes = ModeVisits::for_target(&self.target);
        self.first_divergence = None;
        self.last_distance = f64::NAN;
        self.ticks = 0;
        self.restart_monitor();
    }

    /// A fresh monitor for the current target, chains and superchains.
    fn restart_monitor(&mut self) {
        let p = &self.preset;
        self.monitor = ConvergenceMonitor::new(&self.target, p.chains, p.init.superchains)
            .with_starts(&p.init);
        self.sampling_ticks = 0;
        self.engine_seconds = 0.0;
        self.convergence = None;
    }

    fn engine(&mut self) -> &mut dyn Engine {
        self.engine.as_deref_mut().expect("engine allocated")
    }

    /// Carries out what [`Preset::change_from`] decided.
    fn apply_preset(&mut self, preset: Preset, restart: bool) {
        let preset = match preset.validated() {
            Ok(preset) => preset,
            Err((_, message)) => {
                self.notice = Some(format!("the edit was not applied: {message}"));
                return;
            }
        };
        let mut change = preset.change_from(&self.preset);
        if restart {
            change = change.max(Change::Restart);
        }
        if preset.target != self.preset.target {
            self.target = preset.model().target;
            self.truth = Truth::new(&self.target);
            self.view_truth = None;
            self.modes = ModeVisits::for_target(&self.target);
            self.preset = preset;
            // The scores the KSD uses are the new target's.
            self.restart_monitor();
        } else {
            self.preset = preset;
        }
        self.update_view_truth();
        match change {
            Change::None => {}
            Change::Reallocate => self.allocate(),
            Change::Live | Change::Restart => {
                let model = self.preset.model();
                self.engine().set_model(model);
                if change == Change::Restart {
                    self.reset_chains();
                }
            }
        }
    }

    /// Exact masses on the first view's grid, recomputed only when that grid changes.
    fn update_view_truth(&mut self) {
        let Some(spec) = self.views.first() else {
            return;
        };
        if self
            .view_truth
            .as_ref()
            .is_some_and(|truth| truth.0 == spec.grid)
        {
            return;
        }
        let (masses, _) = self.target.cell_masses_with(&spec.grid, 2);
        self.view_truth = Some(Arc::new((spec.grid, masses)));
        let fine = spec
            .grid
            .with_resolution(CONTOUR_RESOLUTION, CONTOUR_RESOLUTION);
        let (masses, _) = self.target.cell_masses_with(&fine, 2);
        self.contour_truth = Some(Arc::new((fine, masses)));
    }

    fn reset_chains(&mut self) {
        let (init, seed) = (self.preset.init, self.preset.seed);
        self.engine().reset(&init, seed);
        self.clear_history();
    }

    fn advance(&mut self, steps: u32) -> anyhow::Result<()> {
        let views = self.views.clone();
        if self.tracked.chains.is_empty() {
            self.tracked = self.engine().read_chains(0, TRACKED_CHAINS as u32)?;
        }
        let step0 = self.engine().steps_done();
        let start = Instant::now();
        let report = self.engine().advance(steps, &views)?;
        self.transport.arrived(report.step);
        if steps > 0 {
            let chains = f64::from(self.engine().chains());
            let seconds = start.elapsed().as_secs_f64();
            self.rate = chains * f64::from(steps) / seconds;
            self.engine_seconds += seconds;
        }
        let highlighted = self.preset.view.highlighted_chains;
        let head_count = highlighted.max(SERIES_DISTANCE_CHAINS);
        let head = self.engine().read_chains(0, head_count)?;
        // Trails and the time series grow once per new step count, however many commands
        // made the worker republish: the pictures at step N do not depend on timing.
        let new_step = self.series.last().is_none_or(|r| r.step != report.step);
        if new_step {
            self.update_trails(&head, highlighted as usize);
            if steps > 0 {
                self.replay_tracked(step0, steps);
            }
            if let Some(row) = growth_row(report.step, &head) {
                self.growth.push(row);
            }
        }
        self.tracked = ChainStates {
            chains: head.chains.iter().take(TRACKED_CHAINS).copied().collect(),
            diverged_at: head
                .diverged_at
                .iter()
                .take(TRACKED_CHAINS)
                .copied()
                .collect(),
        };
        let extents = Extents::of(&head, 0.99);
        if report.moments.diverged > 0 && self.first_divergence.is_none() {
            self.first_divergence = Some(report.step);
        }
        if new_step && self.ticks.is_multiple_of(DISTANCE_EVERY) {
            let alive_in_head = head.diverged_at.iter().filter(|&&d| d == 0).count() as u64;
            let wanted = u64::from(SERIES_DISTANCE_CHAINS).min(report.moments.alive);
            // The distance compares alive chains: when the first ones diverged, read on.
            let alive_head = if alive_in_head < wanted {
                read_alive_head(self.engine(), SERIES_DISTANCE_CHAINS, report.moments.alive)?
            } else {
                head.clone()
            };
            self.last_distance = self
                .truth
                .energy_distance(&alive_head, SERIES_DISTANCE_CHAINS as usize);
        }
        let model = self.engine().model().clone();
        let last_step = report.step.saturating_sub(1);
        let (h, exploring) = model.schedule.at(model.sampler.h, last_step);
        let m = &report.moments;
        let judged = should_sample(&self.preset.sampler)
            && !exploring
            && report.step >= self.preset.steps / 2;
        let far_from_target = judged
            .then(|| {
                instant_far_with_causes(
                    m,
                    &self.truth,
                    &self.preset.sampler,
                    self.modes.as_ref().map(ModeVisits::coverage),
                    self.preset.gradient_noise(),
                )
            })
            .flatten();
        let mut convergence = None;
        if new_step {
            self.monitor.observe(
                &head,
                report.step,
                f64::from(h),
                self.engine_seconds,
                exploring,
            );
            if !exploring {
                if self.sampling_ticks.is_multiple_of(CONVERGENCE_EVERY)
                    && let Some(row) =
                        self.monitor
                            .evaluate(report.step, &report.superchains, &head)
                {
                    self.convergence = Some(Arc::new(self.monitor.summary(row)));
                    convergence = Some(row);
                }
                self.sampling_ticks += 1;
            }
            self.ticks += 1;
            self.record_row(
                report.step,
                f64::from(h),
                exploring,
                m,
                convergence.as_ref(),
            );
        }
        let backend = self.engine().backend();
        let chains = self.engine().chains();
        // The growth plot's data change once per new step count; republishing reuses them.
        let previous = self.latest.get();
        let (history, growth, growth_rate) = if new_step {
            let paths: Vec<Vec<Chain2>> = self
                .history
                .paths
                .iter()
                .map(|p| p.iter().map(|(_, c)| *c).collect())
                .collect();
            (
                Arc::new(self.history.clone()),
                Arc::new(self.growth.to_vec()),
                growth_rate(&paths, &model.sampler, GROWTH_WINDOW),
            )
        } else {
            (
                previous.history.clone(),
                previous.growth.clone(),
                previous.growth_rate,
            )
        };
        drop(previous);
        self.latest.publish(Snapshot {
            generation: self.generation,
            step: report.step,
            moments: report.moments,
            histograms: report.histograms,
            specs: views,
            trails: self.trails.clone(),
            trail_diverged_at: head.diverged_at[..head.diverged_at.len().min(highlighted as usize)]
                .to_vec(),
            series: self.series.to_vec(),
            first_divergence: self.first_divergence,
            backend: Some(backend),
            notice: self.notice.clone(),
            failed: self.failed.clone(),
            playing: self.transport.playing,
            chain_steps_per_s: self.rate,
            chains,
            run_to: self.transport.run_to,
            view_truth: self.view_truth.clone(),
            sampler: Some(model.sampler),
            contour_truth: self.contour_truth.clone(),
            history,
            growth,
            extents,
            modes_visited: self.modes.as_ref().map(ModeVisits::coverage),
            growth_rate,
            far_from_target,
            convergence: self.convergence.clone(),
        });
        (self.repaint)();
        Ok(())
    }

    /// Replays the tracked chains through the steps of the last tick on the CPU (the same
    /// random numbers as the engine), so that every step of them is kept, and counts the
    /// modes they visit in sampling stages.
    fn replay_tracked(&mut self, step0: u32, steps: u32) {
        let model = self.engine().model().clone();
        let seed = self.preset.seed;
        let n = self.tracked.chains.len();
        self.history.paths.resize_with(n, VecDeque::new);
        self.history.diverged_at.resize(n, 0);
        let hmc = model.sampler.kind == SamplerKind::Hmc;
        self.history.leapfrog.clear();
        for i in 0..n {
            if self.tracked.diverged_at[i] != 0 || self.history.diverged_at[i] != 0 {
                continue;
            }
            let mut chain = self.tracked.chains[i];
            let path = &mut self.history.paths[i];
            let modes = &mut self.modes;
            // The state before the tick's last step: where its HMC proposal started.
            let (mut before, mut before_last) = (chain, chain);
            let diverged = model.replay(&mut chain, seed, i as u32, step0, steps, |step, c| {
                before_last = before;
                before = *c;
                if path.len() == HISTORY_STEPS {
                    path.pop_front();
                }
                path.push_back((step, *c));
                // Modes are counted in the sampling stages only: a state after an
                // exploration-stage step is a transit (the run's count agrees).
                let explored = model.schedule.at(model.sampler.h, step - 1).1;
                if let Some(m) = modes.as_mut().filter(|_| !explored) {
                    m.record_one(i, c);
                }
            });
            if let Some(d) = diverged {
                self.history.diverged_at[i] = d;
            }
            if hmc && i < LEAPFROG_PATHS {
                let last = RngCounter::new(seed, i as u32, step0 + steps - 1);
                self.history
                    .leapfrog
                    .push(model.leapfrog_path(&before_last, &last));
            }
        }
    }

    fn record_row(
        &mut self,
        step: u32,
        step_size: f64,
        exploring: bool,
        m: &Moments,
        convergence: Option<&ConvergenceRow>,
    ) {
        let mut row = SeriesRow::of_moments(
            step,
            step_size,
            m,
            self.preset.sampler.kind,
            self.last_distance,
            exploring,
        );
        if let Some(c) = convergence {
            row = row.with_convergence(c);
        }
        self.series.push(row);
    }

    fn publish_notice(&self) {
        self.latest.update(|s| {
            s.notice.clone_from(&self.notice);
            s.failed.clone_from(&self.failed);
            s.playing = self.transport.playing;
            s.run_to = self.transport.run_to;
        });
        (self.repaint)();
    }

    fn update_trails(&mut self, head: &ChainStates, highlighted: usize) {
        let n = highlighted.min(head.chains.len());
        self.trails.resize_with(n, VecDeque::new);
        for (trail, chain) in self.trails.iter_mut().zip(&head.chains) {
            if trail.len() == TRAIL_LENGTH {
                trail.pop_front();
            }
            trail.push_back(*chain);
        }
    }
}

impl<R: Fn()> Simulation for Worker<R> {
    type Command = Command;

    fn command(&mut self, command: Command) {
        match command {
            Command::Apply {
                preset,
                restart,
                generation,
            } => {
                self.generation = generation;
                self.apply_preset(*preset, restart);
            }
            Command::Views(views) => {
                self.views = views;
                self.update_view_truth();
            }
        }
    }

    fn reset(&mut self) {
        self.reset_chains();
    }

    fn transport(&mut self) -> &mut Transport {
        &mut self.transport
    }

    fn steps_this_tick(&mut self) -> u32 {
        let step = self.engine.as_ref().map_or(0, |e| e.steps_done());
        self.transport.steps(step, self.preset.view.steps_per_frame)
    }

    fn tick(&mut self, steps: u32, _changed: bool) -> anyhow::Result<()> {
        self.advance(steps)
    }

    /// Slow motion: ticks of `steps_per_frame` steps at `steps_per_second`.
    fn tick_interval(&self) -> Duration {
        let rate = self.preset.view.steps_per_second;
        if rate > 0.0 {
            Duration::from_secs_f64(f64::from(self.preset.view.steps_per_frame) / rate)
                .max(crate::app::worker::MIN_TICK)
        } else {
            crate::app::worker::MIN_TICK
        }
    }

    fn fail(&mut self, message: String) {
        self.failed = Some(message.clone());
        self.notice = Some(message);
        self.publish_notice();
    }
}
