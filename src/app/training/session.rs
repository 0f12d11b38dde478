//! The training worker: a thread that owns a ResNet++ [`Trainer`], steps it minibatch by
//! minibatch while running, writes a checkpoint after every epoch and publishes progress. It
//! keeps running while the user explores the other views.

use crate::app::worker::{Latest, QuitCommand, WorkerHandle};
use crate::diagnostics::classification::ReliabilityBin;
use crate::train::background::background_pool;
use crate::train::checkpoint::{Checkpoint, ensure_fresh};
use crate::train::checkpoint::{FolderLock, lock_checkpoint_folder};
use crate::train::data::load;
use crate::train::trainer::{EpochRow, TrainConfig, Trainer};
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
    /// Images per second over the last seconds of training.
    pub images_per_s: f64,
    /// Seconds left at the current speed.
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
                    speed: (Instant::now(), 0),
                    images_per_s: 0.0,
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
    /// Start of the speed window and images since.
    speed: (Instant, usize),
    images_per_s: f64,
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
                (true, TrainStatus::Running) => self.status = TrainStatus::Paused,
                (false, TrainStatus::Paused) => {
                    self.status = TrainStatus::Running;
                    self.speed = (Instant::now(), 0);
                }
                _ => {}
            },
            TrainCommand::Stop => {
                if matches!(self.status, TrainStatus::Running | TrainStatus::Paused) {
                    self.status = TrainStatus::Stopped;
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
                self.speed = (Instant::now(), 0);
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
                self.speed.1 += report.images;
                let elapsed = self.speed.0.elapsed().as_secs_f64();
                if elapsed > 2.0 {
                    self.images_per_s = self.speed.1 as f64 / elapsed;
                    self.speed = (Instant::now(), 0);
                }
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
            }
            Err(e) => self.fail(e),
        }
    }

    fn publish(&self) {
        self.latest.update(|s| {
            s.status = self.status;
            s.message.clone_from(&self.message);
            s.checkpoint.clone_from(&self.checkpoint);
            s.images_per_s = self.images_per_s;
            if let Some(t) = &self.trainer {
                let total = t.steps_per_epoch() * t.config.epochs;
                s.config = Some(t.config.clone());
                s.parameters = t.parameters();
                s.epoch = t.epoch;
                s.step = t.step_count();
                s.steps_per_epoch = t.steps_per_epoch();
                s.eta_s =
                    (self.images_per_s > 0.0 && self.status == TrainStatus::Running).then(|| {
                        f64::from(total.saturating_sub(t.step_count()))
                            * f64::from(t.config.batch_size)
                            / self.images_per_s
                    });
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
