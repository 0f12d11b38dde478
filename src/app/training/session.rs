//! The training worker: a thread that owns a ResNet++ [`Trainer`], steps it minibatch by
//! minibatch while running, writes a checkpoint after every epoch and publishes progress. It
//! keeps running while the user explores the other views.

use crate::app::worker::{Latest, QuitCommand, WorkerHandle};
use crate::diagnostics::classification::ReliabilityBin;
use crate::train::background::background_pool;
use crate::train::checkpoint::{Checkpoint, ensure_fresh};
use crate::train::checkpoint::{FolderLock, lock_checkpoint_folder};
use crate::train::data::load;
use crate::train::trainer::{EpochRow, StepReport, TrainConfig, Trainer};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Where a run is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrainStatus {
    /// Nothing started yet.
    #[default]
    Idle,
    /// Reading the data set.
    Loading,
    /// Training.
    Running,
    /// Paused by the user (resume continues exactly).
    Paused,
    /// All epochs done.
    Finished,
    /// Stopped by the user.
    Stopped,
    /// The parameters diverged (the printed integrator).
    Diverged,
    /// Something failed: see the message.
    Failed,
}

/// What the training panel draws.
#[derive(Clone, Debug, Default)]
pub struct TrainSnapshot {
    /// Where the run is.
    pub status: TrainStatus,
    /// The run's configuration.
    pub config: Option<TrainConfig>,
    /// Parameters of the network.
    pub parameters: usize,
    /// Epochs finished.
    pub epoch: u32,
    /// Optimiser steps done.
    pub step: u32,
    /// Minibatches per epoch.
    pub steps_per_epoch: u32,
    /// Images per second over the whole run so far, while it runs and once it stopped: one
    /// definition. Paused time and the first step (the warm-up that compiles kernels) are
    /// left out.
    pub images_per_s: f64,
    /// Seconds left: the steps to go at the run's training pace so far, plus the test images
    /// still to evaluate (samples, progress and epoch-end evaluations) at its evaluation pace
    /// (a rate over the last seconds of minibatches alone promised a third of the time a run
    /// took; one pace for both ran 15% short, the final evaluation unpriced).
    pub eta_s: Option<f64>,
    /// One row per finished epoch.
    pub history: Vec<EpochRow>,
    /// Progress evaluations within epochs.
    pub progress: Vec<crate::train::trainer::ProgressRow>,
    /// (step, training loss) of every minibatch.
    pub losses: Vec<[f64; 2]>,
    /// The latest reliability diagram (posterior predictive when there is one).
    pub reliability: Vec<ReliabilityBin>,
    /// Step at which the parameters diverged.
    pub diverged_at: Option<u32>,
    /// The SGD with momentum an ATMC run moves like (MATH.md §8).
    pub sgd_equivalent: Option<crate::train::trainer::SgdEquivalent>,
    /// Errors and notices.
    pub message: Option<String>,
    /// Where the checkpoint is written.
    pub checkpoint: Option<PathBuf>,
}

/// Instructions for the worker.
#[derive(Clone, Debug)]
pub enum TrainCommand {
    /// Start a new run (the checkpoint folder, if any, must not hold a checkpoint yet).
    Start(Box<TrainConfig>, Option<PathBuf>),
    /// Continue the run saved in a checkpoint folder.
    ResumeFrom(PathBuf),
    /// Pause or continue.
    Pause(bool),
    /// Stop the run (its last checkpoint stays).
    Stop,
    /// End the thread.
    Quit,
}

impl QuitCommand for TrainCommand {
    fn quit() -> Self {
        TrainCommand::Quit
    }
}

/// The UI's handle on the training worker.
pub type TrainSession = WorkerHandle<TrainCommand, TrainSnapshot>;

impl TrainSession {
    /// Starts an idle worker. It trains in a pool of its own at a lower priority
    /// ([`background_pool`]), so the window and the chains keep their frames while a
    /// network trains.
    pub fn start(repaint: impl Fn() + Send + 'static) -> Self {
        WorkerHandle::spawn(
            "atmc-lab training",
            TrainSnapshot::default(),
            move |rx, latest| {
                let mut worker = Worker {
                    trainer: None,
                    checkpoint: None,
                    lock: None,
                    status: TrainStatus::Idle,
                    message: None,
                    losses: Vec::new(),
                    latest,
                    repaint,
                    pace: Pace::start(),
                };
                match background_pool() {
                    Ok(pool) => pool.install(move || worker.run(rx)),
                    Err(e) => {
                        // Training still works on the shared pool, only the window may stutter.
                        worker.message = Some(format!("{e:#}; training at normal priority"));
                        worker.run(rx)
                    }
                }
            },
        )
    }
}

struct Worker<R: Fn()> {
    trainer: Option<Trainer>,
    checkpoint: Option<PathBuf>,
    /// The checkpoint folder held while a run writes there.
    lock: Option<FolderLock>,
    status: TrainStatus,
    message: Option<String>,
    losses: Vec<[f64; 2]>,
    latest: Arc<Latest<TrainSnapshot>>,
    repaint: R,
    /// The pace of the run since it was installed.
    pace: Pace,
}

/// A run's pace since its first step, paused time left out: steps, images and seconds of
/// training, evaluations included. The ETA and the images/s shown come from it.
#[derive(Clone, Copy, Debug)]
struct Pace {
    /// When the current stretch of running began (None while paused or stopped).
    running_since: Option<Instant>,
    /// Seconds of the stretches before it.
    seconds: f64,
    steps: u32,
    images: u64,
    /// Seconds of those steps spent evaluating test images, and how many they evaluated:
    /// evaluations come in lumps (the whole test set at an epoch's end), so the ETA prices
    /// the ones still to come at their own pace rather than folding them into a step's.
    evaluation_s: f64,
    evaluated: u64,
    /// Whether the first step, the warm-up, is behind it.
    warmed: bool,
}

impl Pace {
    fn start() -> Self {
        Self {
            running_since: Some(Instant::now()),
            seconds: 0.0,
            steps: 0,
            images: 0,
            evaluation_s: 0.0,
            evaluated: 0,
            warmed: false,
        }
    }

    /// Counts one finished step of `images`. The first step after a start is left out with
    /// its time: it compiles kernels and moves the data, several times a later step's work,
    /// and an ETA extrapolated from it promised many times the time a short run took.
    fn record(&mut self, report: &StepReport) {
        if !self.warmed {
            self.warmed = true;
            self.seconds = 0.0;
            if self.running_since.is_some() {
                self.running_since = Some(Instant::now());
            }
            return;
        }
        self.steps += 1;
        self.images += report.images as u64;
        self.evaluation_s += report.evaluation_s;
        self.evaluated += report.evaluated_images;
    }

    fn stop(&mut self) {
        if let Some(t) = self.running_since.take() {
            self.seconds += t.elapsed().as_secs_f64();
        }
    }

    fn resume(&mut self) {
        self.running_since.get_or_insert_with(Instant::now);
    }

    fn seconds(&self) -> f64 {
        self.seconds
            + self
                .running_since
                .map_or(0.0, |t| t.elapsed().as_secs_f64())
    }

    /// Images per second over the whole run.
    fn images_per_s(&self) -> f64 {
        let s = self.seconds();
        if s > 0.0 { self.images as f64 / s } else { 0.0 }
    }

    /// Seconds for `remaining` more steps and `to_evaluate` more test images, each at the
    /// run's pace so far. Until an evaluation has been timed, a test image is taken to cost a
    /// third of a training image (one forward pass against a forward and a backward pass).
    fn eta(&self, remaining: u32, to_evaluate: u64) -> Option<f64> {
        (self.steps > 0).then(|| {
            let training = (self.seconds() - self.evaluation_s).max(0.0);
            let per_step = training / f64::from(self.steps);
            let per_test_image = if self.evaluated > 0 {
                self.evaluation_s / self.evaluated as f64
            } else {
                training / self.images.max(1) as f64 / 3.0
            };
            per_step * f64::from(remaining) + per_test_image * to_evaluate as f64
        })
    }
}

fn checkpoint_file(dir: &std::path::Path) -> PathBuf {
    dir.join("train.ckpt")
}

impl<R: Fn()> Worker<R> {
    fn run(&mut self, rx: Receiver<TrainCommand>) {
        loop {
            let command = if self.status == TrainStatus::Running {
                rx.try_recv().ok()
            } else {
                match rx.recv_timeout(Duration::from_millis(250)) {
                    Ok(c) => Some(c),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            };
            if let Some(c) = command {
                if !self.apply(c) {
                    return;
                }
                self.publish();
            }
            if self.status == TrainStatus::Running {
                self.step();
                self.publish();
            }
            // A run that is over lets go of its folder (another run, or the command line's
            // --resume, may take it).
            if !matches!(
                self.status,
                TrainStatus::Running | TrainStatus::Paused | TrainStatus::Loading
            ) {
                self.lock = None;
            }
        }
    }

    fn fail(&mut self, e: anyhow::Error) {
        self.status = TrainStatus::Failed;
        self.message = Some(format!("{e:#}"));
    }

    fn apply(&mut self, command: TrainCommand) -> bool {
        match command {
            TrainCommand::Start(config, dir) => {
                self.begin(TrainStatus::Loading);
                let checkpoint = dir.as_deref().map(checkpoint_file);
                let result = (|| -> anyhow::Result<Trainer> {
                    self.lock = dir.as_deref().map(lock_checkpoint_folder).transpose()?;
                    if let Some(path) = &checkpoint {
                        ensure_fresh(path)?;
                    }
                    let data = Arc::new(load(config.dataset, &config.data)?);
                    Trainer::new(*config, data)
                })();
                self.install(result, checkpoint);
            }
            TrainCommand::ResumeFrom(dir) => {
                self.begin(TrainStatus::Loading);
                let path = checkpoint_file(&dir);
                let result = (|| -> anyhow::Result<Trainer> {
                    self.lock = Some(lock_checkpoint_folder(&dir)?);
                    let saved = Checkpoint::read(&path)?;
                    let config: TrainConfig =
                        serde_json::from_value(saved.header["config"].clone())?;
                    let data = Arc::new(load(config.dataset, &config.data)?);
                    Trainer::resume(&saved, data)
                })();
                self.install(result, Some(path));
            }
            TrainCommand::Pause(on) => match (on, self.status) {
                (true, TrainStatus::Running) => {
                    self.status = TrainStatus::Paused;
                    self.pace.stop();
                }
                (false, TrainStatus::Paused) => {
                    self.status = TrainStatus::Running;
                    self.pace.resume();
                }
                _ => {}
            },
            TrainCommand::Stop => {
                if matches!(self.status, TrainStatus::Running | TrainStatus::Paused) {
                    self.status = TrainStatus::Stopped;
                    self.pace.stop();
                }
            }
            TrainCommand::Quit => return false,
        }
        true
    }

    fn begin(&mut self, status: TrainStatus) {
        self.lock = None;
        self.trainer = None;
        self.losses.clear();
        self.message = None;
        self.status = status;
        self.publish();
    }

    fn install(&mut self, result: anyhow::Result<Trainer>, checkpoint: Option<PathBuf>) {
        match result {
            Ok(t) => {
                self.losses = t
                    .history
                    .iter()
                    .map(|r| [f64::from(r.step), r.train_loss])
                    .collect();
                self.status = if t.diverged_at.is_some() {
                    TrainStatus::Diverged
                } else if t.finished() {
                    TrainStatus::Finished
                } else {
                    TrainStatus::Running
                };
                self.trainer = Some(t);
                self.checkpoint = checkpoint;
                self.pace = Pace::start();
            }
            Err(e) => self.fail(e),
        }
    }

    fn step(&mut self) {
        let Some(t) = self.trainer.as_mut() else {
            self.status = TrainStatus::Idle;
            return;
        };
        match t.step() {
            Ok(report) => {
                self.losses.push([f64::from(t.step_count()), report.loss]);
                self.pace.record(&report);
                if (report.epoch_done || t.finished())
                    && let Some(path) = &self.checkpoint
                    && let Err(e) = t.checkpoint().write(path)
                {
                    self.message = Some(format!("{e:#}"));
                }
                if t.diverged_at.is_some() {
                    self.status = TrainStatus::Diverged;
                } else if t.finished() {
                    self.status = TrainStatus::Finished;
                }
                if self.status != TrainStatus::Running {
                    self.pace.stop();
                }
            }
            Err(e) => self.fail(e),
        }
    }

    fn publish(&self) {
        self.latest.update(|s| {
            s.status = self.status;
            s.message.clone_from(&self.message);
            s.checkpoint.clone_from(&self.checkpoint);
            s.images_per_s = self.pace.images_per_s();
            if let Some(t) = &self.trainer {
                let total = t.steps_per_epoch() * t.config.epochs;
                s.config = Some(t.config.clone());
                s.parameters = t.parameters();
                s.epoch = t.epoch;
                s.step = t.step_count();
                s.steps_per_epoch = t.steps_per_epoch();
                s.eta_s = (self.status == TrainStatus::Running)
                    .then(|| {
                        self.pace
                            .eta(total.saturating_sub(t.step_count()), t.images_to_evaluate())
                    })
                    .flatten();
                if s.progress.len() != t.progress.len() {
                    s.progress.clone_from(&t.progress);
                }
                if s.history.len() != t.history.len() {
                    s.history.clone_from(&t.history);
                    s.reliability.clone_from(&t.reliability);
                }
                if s.losses.len() != self.losses.len() {
                    s.losses.clone_from(&self.losses);
                }
                s.diverged_at = t.diverged_at;
                s.sgd_equivalent = t.sgd_equivalent();
            } else {
                s.sgd_equivalent = None;
                s.config = None;
                s.history.clear();
                s.progress.clear();
                s.losses.clear();
                s.reliability.clear();
                s.diverged_at = None;
                s.eta_s = None;
            }
        });
        (self.repaint)();
    }
}

#[cfg(test)]
mod tests {
    use super::{Pace, StepReport};
    use std::time::{Duration, Instant};

    /// A step of 128 images that evaluated `evaluated` test images in `evaluation_s` seconds.
    fn step(evaluated: u64, evaluation_s: f64) -> StepReport {
        StepReport {
            loss: 1.0,
            images: 128,
            epoch_done: false,
            evaluated_images: evaluated,
            evaluation_s,
        }
    }

    /// The ETA extrapolates the whole run's pace, paused time left out.
    #[test]
    fn the_pace_counts_running_time_only() {
        let mut pace = Pace {
            running_since: None,
            seconds: 30.0,
            steps: 10,
            images: 1280,
            warmed: true,
            ..Pace::start()
        };
        assert_eq!(pace.eta(20, 0), Some(60.0));
        assert!((pace.images_per_s() - 1280.0 / 30.0).abs() < 1e-9);
        pace.running_since = Some(Instant::now() - Duration::from_secs(10));
        let eta = pace.eta(20, 0).unwrap();
        assert!((80.0..81.0).contains(&eta), "{eta}");
        pace.stop();
        let frozen = pace.seconds();
        assert!((40.0..41.0).contains(&frozen), "{frozen}");
        assert_eq!(pace.seconds(), frozen);
        assert_eq!(Pace::start().eta(5, 0), None);
    }

    /// The warm-up step is left out of the pace, its time with it: no ETA from it alone.
    #[test]
    fn the_first_step_is_warm_up_and_not_counted() {
        let mut pace = Pace {
            running_since: Some(Instant::now() - Duration::from_secs(50)),
            ..Pace::start()
        };
        pace.record(&step(0, 0.0));
        assert_eq!(pace.eta(10, 0), None, "no pace from the warm-up step");
        assert!(pace.seconds() < 1.0, "{}", pace.seconds());
        assert_eq!(pace.images_per_s(), 0.0);
        pace.running_since = Some(Instant::now() - Duration::from_secs(2));
        pace.record(&step(0, 0.0));
        pace.record(&step(0, 0.0));
        let eta = pace.eta(10, 0).unwrap();
        assert!((9.9..10.5).contains(&eta), "{eta}: 1 s a step, not 26");
        assert!(
            (pace.images_per_s() - 128.0).abs() < 2.0,
            "{}",
            pace.images_per_s()
        );
    }

    /// The evaluations still to come are priced at the evaluations' own pace, not at a
    /// step's: 10 s of training for 10 steps and 5 s for 1,000 test images make 20 steps and
    /// 4,000 test images 20 + 20 s; before any evaluation, a test image costs a third of a
    /// training image.
    #[test]
    fn evaluations_to_come_are_priced_at_their_own_pace() {
        let mut pace = Pace {
            running_since: None,
            seconds: 15.0,
            steps: 10,
            images: 1280,
            warmed: true,
            ..Pace::start()
        };
        let before = pace.eta(20, 4000).unwrap();
        let per_image = 15.0 / 1280.0 / 3.0;
        assert!(
            (before - (30.0 + 4000.0 * per_image)).abs() < 1e-9,
            "{before}"
        );
        pace.evaluation_s = 5.0;
        pace.evaluated = 1000;
        let eta = pace.eta(20, 4000).unwrap();
        assert!((eta - 40.0).abs() < 1e-9, "{eta}");
        pace.running_since = Some(Instant::now());
        pace.record(&step(500, 1.0));
        assert_eq!((pace.evaluated, pace.evaluation_s), (1500, 6.0));
    }
}
