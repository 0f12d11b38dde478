//! A ResNet++ training run: minibatches through the network on burn's CPU backend, ATMC (or
//! SGD with momentum, the baseline) over the flattened parameters, posterior samples
//! collected into the test set's predictive, and checkpoints that resume exactly.

use super::augment::{Pipeline, epoch_order};
use super::checkpoint::Checkpoint;
use super::data::{DatasetKind, ImageData, ImageSet};
use super::optimizer::{Atmc, AtmcState, SgdMomentum};
use super::params::{Layout, flat_gradients, flatten, unflatten};
use super::resnet::{ResNetConfig, ResNetPP};
use crate::diagnostics::classification::{ClassMetrics, ClassificationAccumulator, ReliabilityBin};
use crate::math::{SamplerKind, SamplerSpec, ScheduleSpec, ranges};
use anyhow::{Context, bail};
use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData, activation};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// Which optimiser trains the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// ATMC sampling the posterior (per-parameter p and ξ).
    Atmc,
    /// SGD with momentum and a cosine learning rate.
    Sgd,
}

/// Everything that defines a training run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// The data set.
    pub dataset: DatasetKind,
    /// Where it is (folder, or CIFAR-10's .tar.gz).
    pub data: PathBuf,
    /// The optimiser.
    pub optimizer: OptimizerKind,
    /// Layers (6n + 2).
    pub depth: usize,
    /// Channels of the first stage.
    pub width: usize,
    /// Passes over the training set.
    pub epochs: u32,
    /// Images per minibatch.
    pub batch_size: u32,
    /// Seed of the initial weights, the shuffles, the augmentation and ATMC's noise.
    pub seed: u64,
    /// ATMC's parameters (h, m, D, T, the printed switches).
    pub atmc: SamplerSpec,
    /// Cycles of ATMC's cyclical step size over the run (0: constant h).
    pub cycles: u32,
    /// Fraction of each cycle without injected noise (exploration).
    pub explore_fraction: f64,
    /// Prior standard deviation σ of every parameter (ATMC's posterior).
    pub prior_scale: f64,
    /// SGD's peak learning rate.
    pub sgd_lr: f32,
    /// SGD's momentum.
    pub sgd_momentum: f32,
    /// SGD's weight decay.
    pub sgd_weight_decay: f32,
    /// Without cycles: epochs before the first posterior sample, then one sample per epoch.
    pub burn_in_epochs: u32,
    /// Use only the first images of the training set (quick runs; 0: all).
    pub train_limit: usize,
    /// Use only the first images of the test set (0: all).
    pub test_limit: usize,
    /// Random crops and flips.
    pub augment: bool,
    /// Set ATMC's mass and friction floor from h and the number of training images N so that,
    /// thermostat aside, ATMC moves like SGD with momentum [`ATMC_EQUIVALENT_MOMENTUM`] at
    /// learning rate [`ATMC_EQUIVALENT_LR`] on the mean loss ([`SgdEquivalent::atmc_mass_and_friction`]).
    /// (With m = 1 the N-scaled gradient makes any usable h explode the network.) The run
    /// records the values.
    #[serde(default)]
    pub atmc_auto_scale: bool,
}

/// The SGD learning rate ATMC's automatic scaling imitates (see
/// [`TrainConfig::atmc_auto_scale`]).
pub const ATMC_EQUIVALENT_LR: f64 = 0.02;
/// The SGD momentum ATMC's automatic scaling imitates.
pub const ATMC_EQUIVALENT_MOMENTUM: f64 = 0.9;

/// SGD with heavy-ball momentum on the mean loss (v ← μ v − η ∇ℓ, θ ← θ + v) that ATMC with
/// step h, mass m and friction floor D moves like on the N-scaled posterior gradient, noise and
/// thermostat aside (MATH.md §8): μ = e^{−Dh} and η = h N (1 − μ)/(D m) (h² N/m at D = 0).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SgdEquivalent {
    /// Learning rate η.
    pub lr: f64,
    /// Momentum μ.
    pub momentum: f64,
}

impl SgdEquivalent {
    /// The SGD that ATMC (h, m, D) on N training examples imitates.
    pub fn of_atmc(h: f64, mass: f64, friction_floor: f64, n: f64) -> Self {
        let x = friction_floor * h;
        let momentum = (-x).exp();
        // h (1 − e^{−Dh})/(Dh), written with expm1 so that D → 0 is exact.
        let decay_over_d = if x == 0.0 {
            h
        } else {
            -(-x).exp_m1() / friction_floor
        };
        Self {
            lr: h * n * decay_over_d / mass,
            momentum,
        }
    }

    /// The mass and friction floor that make ATMC with step `h` on `n` examples move like
    /// this SGD: m = h² N (1 − μ)/(η (−ln μ)), D = −ln μ / h (for 0 < μ < 1).
    pub fn atmc_mass_and_friction(&self, h: f64, n: f64) -> (f64, f64) {
        let log_mu = -self.momentum.ln();
        let mass = h * h * n * (1.0 - self.momentum) / (self.lr * log_mu);
        (mass, log_mu / h)
    }
}

impl TrainConfig {
    /// The defaults of `atmc-lab train` for a data set at `data`.
    pub fn new(dataset: DatasetKind, data: PathBuf, optimizer: OptimizerKind) -> Self {
        let mut atmc = SamplerSpec::new(SamplerKind::Atmc);
        atmc.h = 0.01;
        Self {
            dataset,
            data,
            optimizer,
            depth: 8,
            width: 16,
            epochs: 3,
            batch_size: 128,
            seed: 0,
            atmc,
            cycles: 0,
            explore_fraction: 0.8,
            prior_scale: 1.0,
            sgd_lr: 0.05,
            sgd_momentum: 0.9,
            sgd_weight_decay: 5e-4,
            burn_in_epochs: 1,
            train_limit: 0,
            test_limit: 0,
            augment: true,
            atmc_auto_scale: true,
        }
    }
}

/// Optimiser steps a run needs to learn visibly. Measured on Fashion-MNIST with the defaults
/// (seed 0, first 1,000 test images): 12 steps (500 images × 3 epochs at batch 128) ended at
/// 21 % (SGD) and 22 % (ATMC) test accuracy, 48 steps (2,000 images) at 38 % and 39 % (29–41 %
/// over seeds 0–2).
pub const VISIBLE_LEARNING_STEPS: u64 = 48;

impl TrainConfig {
    /// Training images the run will use: the limit, or the whole training set.
    pub fn train_images(&self) -> usize {
        let all = self.dataset.train_size();
        if self.train_limit == 0 {
            all
        } else {
            self.train_limit.min(all)
        }
    }

    /// Optimiser steps of the whole run.
    pub fn total_steps(&self) -> u64 {
        let per_epoch = self
            .train_images()
            .div_ceil(self.batch_size.max(1) as usize);
        per_epoch as u64 * u64::from(self.epochs)
    }

    /// For a run too short to learn visibly, what it needs (None: long enough).
    pub fn too_short(&self) -> Option<String> {
        short_run_note(self.total_steps())
    }
}

/// What a run of `steps` optimiser steps needs to learn visibly (None: it has enough).
pub fn short_run_note(steps: u64) -> Option<String> {
    (steps < VISIBLE_LEARNING_STEPS).then(|| {
        format!(
            "{steps} optimiser steps (images / batch size × epochs) are too few to learn \
             much: on Fashion-MNIST, 12 steps (500 images × 3 epochs at batch 128) reached \
             about 21 % test accuracy, {VISIBLE_LEARNING_STEPS} steps (2,000 images) 29–41 %. \
             Use more images or epochs, or a smaller batch."
        )
    })
}

/// Steps between two progress evaluations (within an epoch).
pub const PROGRESS_EVERY: u32 = 100;

/// Test images a progress evaluation looks at (the first ones of the test set).
pub const PROGRESS_IMAGES: usize = 1000;

/// The current network on a subset of the test set, every [`PROGRESS_EVERY`] steps: curves
/// that appear within a minute, long before the first epoch ends.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgressRow {
    /// Steps done.
    pub step: u32,
    /// Epochs done, fractional.
    pub epoch: f64,
    /// Accuracy on the first [`PROGRESS_IMAGES`] test images.
    pub accuracy: f64,
    /// NLL on them.
    pub nll: f64,
}

/// Metrics after an epoch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EpochRow {
    /// Epochs done.
    pub epoch: u32,
    /// Optimiser steps done.
    pub step: u32,
    /// Mean training loss (cross-entropy) over the epoch's batches.
    pub train_loss: f64,
    /// The current network on the test set.
    pub single: ClassMetrics,
    /// The posterior predictive (average of the collected samples' softmax); absent before
    /// the first sample and for SGD.
    pub ensemble: Option<ClassMetrics>,
    /// Posterior samples collected so far.
    pub samples: u32,
    /// Per layer group: (name, kinetic temperature, mean ξ), ATMC only.
    pub layers: Vec<(String, f64, f64)>,
    /// Images per second of training in this epoch.
    pub images_per_s: f64,
}

/// What one step reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepReport {
    /// Cross-entropy of the batch.
    pub loss: f64,
    /// Images in the batch.
    pub images: usize,
    /// Whether this step finished an epoch.
    pub epoch_done: bool,
    /// Test images this step put through the network (a posterior sample, a progress
    /// evaluation, the evaluation at an epoch's end) and the seconds that took.
    pub evaluated_images: u64,
    /// See [`Self::evaluated_images`].
    pub evaluation_s: f64,
}

/// Where the training steps' time went, in seconds summed over the steps of this process
/// (a resumed run starts again at zero; evaluations and checkpoints are not included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StepTimes {
    /// Steps timed.
    pub steps: u64,
    /// Images through those steps.
    pub images: u64,
    /// The minibatch: indices, augmentation, normalisation, labels.
    pub batch: f64,
    /// The flat parameters into the network's tensors, and the inputs into a tensor.
    pub upload: f64,
    /// Forward pass and loss.
    pub forward: f64,
    /// Backward pass and the gradients out of the tensors into one flat vector.
    pub backward: f64,
    /// The optimiser's update of the flat parameters (and ATMC's next half step).
    pub update: f64,
}

impl StepTimes {
    /// Seconds of all phases together.
    pub fn total(&self) -> f64 {
        self.batch + self.upload + self.forward + self.backward + self.update
    }

    /// Training images per second over the timed steps (0 before the first).
    pub fn images_per_s(&self) -> f64 {
        let total = self.total();
        if total > 0.0 {
            self.images as f64 / total
        } else {
            0.0
        }
    }
}

enum Opt {
    Atmc(Atmc),
    Sgd(SgdMomentum),
}

/// A training run in progress.
pub struct Trainer {
    /// The run's definition.
    pub config: TrainConfig,
    data: Arc<ImageData>,
    train: ImageSet,
    test: ImageSet,
    pipeline: Pipeline,
    device: Device,
    model: Option<ResNetPP>,
    layout: Layout,
    theta: Vec<f32>,
    opt: Opt,
    /// Epochs finished.
    pub epoch: u32,
    batch: u32,
    order: Vec<u32>,
    loss_sum: f64,
    loss_batches: u32,
    epoch_seconds: f64,
    predictive: Vec<f32>,
    samples: u32,
    /// Test images evaluated in this process (see [`StepReport::evaluated_images`]).
    evaluated: u64,
    /// One row per finished epoch.
    pub history: Vec<EpochRow>,
    /// Progress evaluations within epochs.
    pub progress: Vec<ProgressRow>,
    /// Step at which the parameters diverged (the printed integrator, or SGD with too large a
    /// learning rate), if they did.
    pub diverged_at: Option<u32>,
    /// Reliability diagram of the latest evaluation (ensemble when there is one).
    pub reliability: Vec<ReliabilityBin>,
    /// Where the training steps' time went.
    pub times: StepTimes,
}

fn cross_entropy(logits: Tensor<2>, labels: &[u8], device: &Device) -> Tensor<1> {
    let n = labels.len();
    let targets = Tensor::<2, Int>::from_data(
        TensorData::new(labels.iter().map(|&l| i64::from(l)).collect(), [n, 1]),
        device,
    );
    activation::log_softmax(logits, 1)
        .gather(1, targets)
        .mean()
        .neg()
}

impl Trainer {
    /// A fresh run on `data` (already loaded; see [`super::data::load`]).
    pub fn new(mut config: TrainConfig, data: Arc<ImageData>) -> anyhow::Result<Self> {
        let limit = |set: &ImageSet, n: usize| {
            if n == 0 {
                set.clone()
            } else {
                set.truncated(n)
            }
        };
        let train = limit(&data.train, config.train_limit);
        let test = limit(&data.test, config.test_limit);
        if train.is_empty() || test.is_empty() {
            bail!("no training or test images");
        }
        if config.atmc_auto_scale {
            let target = SgdEquivalent {
                lr: ATMC_EQUIVALENT_LR,
                momentum: ATMC_EQUIVALENT_MOMENTUM,
            };
            let (mass, friction_floor) =
                target.atmc_mass_and_friction(config.atmc.h, train.len() as f64);
            config.atmc.mass = mass;
            config.atmc.friction_floor = friction_floor;
            config.atmc_auto_scale = false;
        }
        if config.optimizer == OptimizerKind::Atmc {
            // What a checkpoint stores must parse back: the same ranges as presets.
            let a = &config.atmc;
            for (range, v) in [
                (ranges::MASS, a.mass),
                (ranges::FRICTION_FLOOR, a.friction_floor),
                (ranges::TEMPERATURE, a.temperature),
                (ranges::STEP_SIZE, a.h),
            ] {
                range.check(v).map_err(|m| {
                    anyhow::anyhow!("{m} (m and D follow h and N unless set: choose another h)")
                })?;
            }
        }
        let model_config = ResNetConfig {
            depth: config.depth,
            width: config.width,
            channels: train.channels,
            classes: data.classes.len(),
        };
        model_config.validate().map_err(anyhow::Error::msg)?;
        let device = Device::flex().autodiff();
        let model = ResNetPP::new(&model_config, &device, config.seed);
        let (mut theta, layout) = flatten(&model);
        let steps_per_epoch = train.len().div_ceil(config.batch_size as usize) as u32;
        let total = steps_per_epoch * config.epochs;
        let opt = match config.optimizer {
            OptimizerKind::Atmc => {
                if config.atmc.kind != SamplerKind::Atmc {
                    bail!("the ATMC optimiser needs sampler kind Atmc");
                }
                let schedule = if config.cycles > 0 {
                    ScheduleSpec::Cyclical {
                        total_steps: total.max(1),
                        cycles: config.cycles,
                        explore_fraction: config.explore_fraction,
                        thermostat_while_exploring: crate::math::ExploringThermostat::Frozen,
                    }
                } else {
                    ScheduleSpec::Constant
                };
                schedule.validate().map_err(|(_, m)| {
                    anyhow::anyhow!(
                        "{m} ({steps_per_epoch} steps per epoch × {} epochs)",
                        config.epochs
                    )
                })?;
                Opt::Atmc(Atmc::start(
                    config.atmc.params(),
                    schedule.schedule(),
                    config.seed,
                    &mut theta,
                    0.0,
                ))
            }
            OptimizerKind::Sgd => Opt::Sgd(SgdMomentum {
                lr: config.sgd_lr,
                momentum: config.sgd_momentum,
                weight_decay: config.sgd_weight_decay,
                total_steps: total,
                velocity: vec![0.0; theta.len()],
                step: 0,
            }),
        };
        let pipeline = Pipeline::for_training(&train, config.augment);
        let order = epoch_order(train.len(), config.seed, 0);
        let classes = data.classes.len();
        Ok(Self {
            predictive: vec![0.0; test.len() * classes],
            config,
            data,
            train,
            test,
            pipeline,
            device,
            model: Some(model),
            layout,
            theta,
            opt,
            epoch: 0,
            batch: 0,
            order,
            loss_sum: 0.0,
            loss_batches: 0,
            epoch_seconds: 0.0,
            samples: 0,
            evaluated: 0,
            history: Vec::new(),
            progress: Vec::new(),
            diverged_at: None,
            reliability: Vec::new(),
            times: StepTimes::default(),
        })
    }

    /// Parameters of the network.
    pub fn parameters(&self) -> usize {
        self.theta.len()
    }

    /// The flat parameters (for tests and checkpoints).
    pub fn theta(&self) -> &[f32] {
        &self.theta
    }

    /// Optimiser steps done.
    pub fn step_count(&self) -> u32 {
        match &self.opt {
            Opt::Atmc(a) => a.state.step,
            Opt::Sgd(s) => s.step,
        }
    }

    /// Minibatches per epoch.
    pub fn steps_per_epoch(&self) -> u32 {
        self.train.len().div_ceil(self.config.batch_size as usize) as u32
    }

    /// Training images.
    pub fn train_len(&self) -> usize {
        self.train.len()
    }

    /// The SGD with momentum that this ATMC run moves like (None for SGD runs).
    pub fn sgd_equivalent(&self) -> Option<SgdEquivalent> {
        let a = &self.config.atmc;
        (self.config.optimizer == OptimizerKind::Atmc)
            .then(|| SgdEquivalent::of_atmc(a.h, a.mass, a.friction_floor, self.train.len() as f64))
    }

    /// Whether all epochs are done.
    pub fn finished(&self) -> bool {
        self.epoch >= self.config.epochs || self.diverged_at.is_some()
    }

    /// The class names.
    pub fn classes(&self) -> &[String] {
        &self.data.classes
    }

    /// One minibatch: forward, backward, optimiser step. At the end of an epoch it also
    /// evaluates on the test set (and collects a posterior sample when one is due).
    pub fn step(&mut self) -> anyhow::Result<StepReport> {
        if self.finished() {
            bail!("the run is finished");
        }
        let start = std::time::Instant::now();
        let mut clock = start;
        let mut lap = || {
            let now = std::time::Instant::now();
            let seconds = (now - clock).as_secs_f64();
            clock = now;
            seconds
        };
        let bs = self.config.batch_size as usize;
        let first = self.batch as usize * bs;
        let indices = self.order[first..(first + bs).min(self.order.len())].to_vec();
        let images = indices.len();
        let mut inputs = Vec::new();
        self.pipeline.batch(
            &self.train,
            &indices,
            self.config.seed,
            self.epoch,
            &mut inputs,
        );
        let labels: Vec<u8> = indices
            .iter()
            .map(|&i| self.train.labels[i as usize])
            .collect();
        self.times.batch += lap();
        let (c, h, w) = (self.train.channels, self.train.height, self.train.width);
        let model = unflatten(
            self.model.take().expect("model"),
            &self.theta,
            &self.device,
            true,
        );
        let x = Tensor::<4>::from_data(
            TensorData::new(inputs, [indices.len(), c, h, w]),
            &self.device,
        );
        self.times.upload += lap();
        let loss = cross_entropy(model.forward(x), &labels, &self.device);
        let loss_value = f64::from(loss.clone().into_scalar::<f32>());
        self.times.forward += lap();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let mut grad = flat_gradients(&model, &grads);
        self.model = Some(model);
        self.times.backward += lap();
        match &mut self.opt {
            Opt::Atmc(atmc) => {
                // The posterior over the whole training set: N × the mean loss's gradient,
                // plus the Gaussian prior's θ/σ².
                let n = self.train.len() as f32;
                let precision = (1.0 / (self.config.prior_scale * self.config.prior_scale)) as f32;
                for (g, t) in grad.iter_mut().zip(&self.theta) {
                    *g = n * *g + precision * t;
                }
                atmc.finish(&mut self.theta, &grad);
                if atmc.diverged(&self.theta) || !loss_value.is_finite() {
                    self.diverged_at = Some(atmc.state.step);
                }
            }
            Opt::Sgd(sgd) => {
                sgd.step(&mut self.theta, &grad);
                // SGD blows up too when its learning rate is too large: stop the same way.
                if !loss_value.is_finite() || self.theta.iter().any(|t| !t.is_finite()) {
                    self.diverged_at = Some(sgd.step);
                }
            }
        }
        self.times.update += lap();
        self.times.steps += 1;
        self.times.images += images as u64;
        self.loss_sum += loss_value;
        self.loss_batches += 1;
        self.batch += 1;
        self.epoch_seconds += start.elapsed().as_secs_f64();
        // Samples and evaluations see θ at the end of the step, before the next step's half
        // step (which, at a cycle's start, moves at the largest h).
        let (evaluation_start, evaluated_before) = (std::time::Instant::now(), self.evaluated);
        if self.cycle_ends() && self.diverged_at.is_none() {
            self.collect_sample()?;
        }
        let mut epoch_done = false;
        if self.batch != self.steps_per_epoch()
            && self.diverged_at.is_none()
            && self.step_count().is_multiple_of(PROGRESS_EVERY)
        {
            self.progress_evaluation()?;
        }
        if self.batch == self.steps_per_epoch() {
            self.end_epoch()?;
            epoch_done = true;
        } else if self.diverged_at.is_some() {
            self.end_epoch()?;
        }
        let evaluation_s = evaluation_start.elapsed().as_secs_f64();
        let evaluated_images = self.evaluated - evaluated_before;
        if let Opt::Atmc(atmc) = &mut self.opt {
            let begun = std::time::Instant::now();
            atmc.begin_next(&mut self.theta);
            let seconds = begun.elapsed().as_secs_f64();
            self.times.update += seconds;
            self.epoch_seconds += seconds;
        }
        Ok(StepReport {
            loss: loss_value,
            images,
            epoch_done,
            evaluated_images,
            evaluation_s,
        })
    }

    /// Test images the rest of the run will put through the network, step by step as
    /// [`Self::step`] does (a short last cycle's sample aside): a posterior sample at each
    /// cycle's end (at each epoch's end after burn-in with a constant step), a progress
    /// evaluation every [`PROGRESS_EVERY`] steps within an epoch, the whole test set at each
    /// epoch's end. The ETA weighs them with the run's measured evaluation pace.
    pub fn images_to_evaluate(&self) -> u64 {
        let per_epoch = self.steps_per_epoch().max(1);
        let total = per_epoch * self.config.epochs;
        let test = self.test.len() as u64;
        let progress = self.test.len().min(PROGRESS_IMAGES) as u64;
        let (atmc, cycle_len) = match &self.opt {
            Opt::Atmc(a) => (true, a.schedule.cycle_len),
            Opt::Sgd(_) => (false, 0),
        };
        let mut images = 0;
        for step in self.step_count() + 1..=total {
            if cycle_len > 0 && step.is_multiple_of(cycle_len) {
                images += test;
            }
            if step.is_multiple_of(per_epoch) {
                let sampled =
                    atmc && cycle_len == 0 && step / per_epoch > self.config.burn_in_epochs;
                images += if sampled { 2 * test } else { test };
            } else if step.is_multiple_of(PROGRESS_EVERY) {
                images += progress;
            }
        }
        images
    }

    /// Whether the step just done ended a cycle of ATMC's cyclical step size.
    fn cycle_ends(&self) -> bool {
        match &self.opt {
            Opt::Atmc(a) => {
                // ⌈K/M⌉ steps per cycle: the last cycle may end with the run, short.
                let len = a.schedule.cycle_len;
                let total = self.steps_per_epoch() * self.config.epochs;
                // A short last cycle is sampled at the run's end only if that step samples.
                let run_end =
                    a.state.step == total && total > 0 && !a.schedule.at(a.sampler.h, total - 1).1;
                len > 0 && (a.state.step.is_multiple_of(len) || run_end)
            }
            Opt::Sgd(_) => false,
        }
    }

    fn end_epoch(&mut self) -> anyhow::Result<()> {
        self.epoch += 1;
        self.batch = 0;
        let constant = match &self.opt {
            Opt::Atmc(a) => a.schedule.cycle_len == 0,
            Opt::Sgd(_) => false,
        };
        if constant && self.epoch > self.config.burn_in_epochs && self.diverged_at.is_none() {
            self.collect_sample()?;
        }
        let single = self.evaluate_current()?;
        self.evaluated += self.test.len() as u64;
        let (single_metrics, bins) = single;
        let ensemble = self.ensemble_metrics();
        self.reliability = match &ensemble {
            Some((_, b)) => b.clone(),
            None => bins,
        };
        let images = self.loss_batches as f64 * self.config.batch_size as f64;
        let row = EpochRow {
            epoch: self.epoch,
            step: self.step_count(),
            train_loss: self.loss_sum / f64::from(self.loss_batches.max(1)),
            single: single_metrics,
            ensemble: ensemble.map(|(m, _)| m),
            samples: self.samples,
            layers: self.layer_statistics(),
            images_per_s: images.min(self.train.len() as f64) / self.epoch_seconds.max(1e-9),
        };
        self.history.push(row);
        self.loss_sum = 0.0;
        self.loss_batches = 0;
        self.epoch_seconds = 0.0;
        self.order = epoch_order(self.train.len(), self.config.seed, self.epoch);
        Ok(())
    }

    /// Kinetic temperature and mean ξ per layer group (stem, each block, head).
    pub fn layer_statistics(&self) -> Vec<(String, f64, f64)> {
        let Opt::Atmc(atmc) = &self.opt else {
            return Vec::new();
        };
        self.layout
            .groups(|path| {
                let mut parts = path.split('.');
                match parts.next() {
                    Some("blocks") => format!("block {}", parts.next().unwrap_or("?")),
                    Some("stem") => "stem".into(),
                    _ => "head".into(),
                }
            })
            .into_iter()
            .map(|(name, range)| {
                let (t, xi) = atmc.temperature_and_xi(range);
                (name, t, xi)
            })
            .collect()
    }

    /// Softmax of the current network on the test set (row-major test × classes).
    fn test_probabilities(&self) -> anyhow::Result<Vec<f32>> {
        self.test_probabilities_of(self.test.len())
    }

    /// Softmax of the current network on the first `n` test images.
    fn test_probabilities_of(&self, n: usize) -> anyhow::Result<Vec<f32>> {
        let inner = Device::flex();
        let model = self.model.as_ref().context("model")?.valid();
        let model = unflatten(model, &self.theta, &inner, false);
        let eval = self.pipeline.evaluation();
        let (c, h, w) = (self.test.channels, self.test.height, self.test.width);
        let mut probs = Vec::with_capacity(n * self.data.classes.len());
        let mut inputs = Vec::new();
        let all: Vec<u32> = (0..n as u32).collect();
        for chunk in all.chunks(500) {
            eval.batch(&self.test, chunk, self.config.seed, 0, &mut inputs);
            let x = Tensor::<4>::from_data(
                TensorData::new(inputs.clone(), [chunk.len(), c, h, w]),
                &inner,
            );
            let p = activation::softmax(model.forward(x), 1);
            probs.extend(p.into_data().try_to_vec::<f32>().expect("f32"));
        }
        Ok(probs)
    }

    /// Evaluates the current network on the first [`PROGRESS_IMAGES`] test images.
    fn progress_evaluation(&mut self) -> anyhow::Result<()> {
        let n = self.test.len().min(PROGRESS_IMAGES);
        let probs = self.test_probabilities_of(n)?;
        self.evaluated += n as u64;
        let acc = ClassificationAccumulator::from_batch(
            &probs,
            &labels_u32(&self.test.labels[..n]),
            self.data.classes.len(),
        );
        let m = acc.metrics();
        let step = self.step_count();
        self.progress.push(ProgressRow {
            step,
            epoch: f64::from(step) / f64::from(self.steps_per_epoch().max(1)),
            accuracy: m.accuracy,
            nll: m.nll,
        });
        Ok(())
    }

    fn evaluate_current(&self) -> anyhow::Result<(ClassMetrics, Vec<ReliabilityBin>)> {
        let probs = self.test_probabilities()?;
        let acc = ClassificationAccumulator::from_batch(
            &probs,
            &labels_u32(&self.test.labels),
            self.data.classes.len(),
        );
        Ok((acc.metrics(), acc.bins()))
    }

    /// Adds the current network's test predictions to the posterior predictive.
    pub fn collect_sample(&mut self) -> anyhow::Result<()> {
        if matches!(self.opt, Opt::Sgd(_)) {
            return Ok(());
        }
        let probs = self.test_probabilities()?;
        self.evaluated += self.test.len() as u64;
        for (s, p) in self.predictive.iter_mut().zip(&probs) {
            *s += p;
        }
        self.samples += 1;
        Ok(())
    }

    fn ensemble_metrics(&self) -> Option<(ClassMetrics, Vec<ReliabilityBin>)> {
        if self.samples == 0 {
            return None;
        }
        let inv = 1.0 / self.samples as f32;
        let mean: Vec<f32> = self.predictive.iter().map(|v| v * inv).collect();
        let acc = ClassificationAccumulator::from_batch(
            &mean,
            &labels_u32(&self.test.labels),
            self.data.classes.len(),
        );
        Some((acc.metrics(), acc.bins()))
    }

    /// Everything needed to continue exactly: parameters, optimiser state, position in the
    /// run, the collected predictions and the history.
    pub fn checkpoint(&self) -> Checkpoint {
        let mut arrays = vec![
            ("theta".to_owned(), self.theta.clone()),
            ("predictive".to_owned(), self.predictive.clone()),
        ];
        let (step, opt_kind) = match &self.opt {
            Opt::Atmc(a) => {
                arrays.push(("p".into(), a.state.p.clone()));
                arrays.push(("xi".into(), a.state.xi.clone()));
                (a.state.step, "atmc")
            }
            Opt::Sgd(s) => {
                arrays.push(("velocity".into(), s.velocity.clone()));
                (s.step, "sgd")
            }
        };
        Checkpoint {
            header: serde_json::json!({
                "config": self.config,
                "optimizer": opt_kind,
                "step": step,
                "epoch": self.epoch,
                "batch": self.batch,
                "samples": self.samples,
                "loss_sum": self.loss_sum,
                "loss_batches": self.loss_batches,
                // RON keeps the NaN of a diverged run, which JSON cannot.
                "history": ron::to_string(&self.history).expect("history serialises"),
                "progress": ron::to_string(&self.progress).expect("progress serialises"),
                "diverged_at": self.diverged_at,
                "reliability": self.reliability,
            }),
            arrays,
        }
    }

    /// Continues a run from a checkpoint (the data loaded again from its config).
    pub fn resume(checkpoint: &Checkpoint, data: Arc<ImageData>) -> anyhow::Result<Self> {
        let config: TrainConfig = serde_json::from_value(checkpoint.header["config"].clone())
            .context("checkpoint config")?;
        Self::resume_with(checkpoint, data, config)
    }

    /// [`Self::resume`] with the checkpoint's configuration as the caller adjusted it (a
    /// moved data folder, more epochs).
    pub fn resume_with(
        checkpoint: &Checkpoint,
        data: Arc<ImageData>,
        config: TrainConfig,
    ) -> anyhow::Result<Self> {
        let h = &checkpoint.header;
        let mut t = Self::new(config, data)?;
        let theta = checkpoint.array("theta")?;
        if theta.len() != t.theta.len() {
            bail!(
                "the checkpoint has {} parameters, the configured network {}",
                theta.len(),
                t.theta.len()
            );
        }
        t.theta = theta.to_vec();
        t.predictive = checkpoint.array("predictive")?.to_vec();
        let step = h["step"].as_u64().context("step")? as u32;
        match &mut t.opt {
            Opt::Atmc(a) => {
                a.state = AtmcState {
                    p: checkpoint.array("p")?.to_vec(),
                    xi: checkpoint.array("xi")?.to_vec(),
                    step,
                };
            }
            Opt::Sgd(s) => {
                s.velocity = checkpoint.array("velocity")?.to_vec();
                s.step = step;
            }
        }
        t.epoch = h["epoch"].as_u64().context("epoch")? as u32;
        t.batch = h["batch"].as_u64().context("batch")? as u32;
        t.samples = h["samples"].as_u64().context("samples")? as u32;
        t.loss_sum = h["loss_sum"].as_f64().unwrap_or(0.0);
        t.loss_batches = h["loss_batches"].as_u64().unwrap_or(0) as u32;
        t.history = ron::from_str(h["history"].as_str().context("history")?)
            .context("the checkpoint's history")?;
        // Checkpoints written before progress evaluations existed have none.
        t.progress = match h["progress"].as_str() {
            Some(text) => ron::from_str(text).context("the checkpoint's progress")?,
            None => Vec::new(),
        };
        t.diverged_at = serde_json::from_value(h["diverged_at"].clone()).unwrap_or(None);
        t.reliability = serde_json::from_value(h["reliability"].clone()).unwrap_or_default();
        t.order = epoch_order(t.train.len(), t.config.seed, t.epoch);
        Ok(t)
    }
}

/// One line of [`history_csv`].
#[derive(Serialize)]
struct CsvRow {
    epoch: u32,
    step: u32,
    train_loss: f64,
    test_accuracy: f64,
    test_nll: f64,
    test_ece: f64,
    samples: u32,
    ensemble_accuracy: Option<f64>,
    ensemble_nll: Option<f64>,
    ensemble_ece: Option<f64>,
    images_per_s: f64,
}

/// Header of [`history_csv`]: the field names of [`CsvRow`].
const CSV_HEADER: [&str; 11] = [
    "epoch",
    "step",
    "train_loss",
    "test_accuracy",
    "test_nll",
    "test_ece",
    "samples",
    "ensemble_accuracy",
    "ensemble_nll",
    "ensemble_ece",
    "images_per_s",
];

/// The epoch rows as CSV text (empty ensemble fields before the first sample).
pub fn history_csv(rows: &[EpochRow]) -> String {
    let rows = rows.iter().map(|r| CsvRow {
        epoch: r.epoch,
        step: r.step,
        train_loss: r.train_loss,
        test_accuracy: r.single.accuracy,
        test_nll: r.single.nll,
        test_ece: r.single.ece,
        samples: r.samples,
        ensemble_accuracy: r.ensemble.as_ref().map(|m| m.accuracy),
        ensemble_nll: r.ensemble.as_ref().map(|m| m.nll),
        ensemble_ece: r.ensemble.as_ref().map(|m| m.ece),
        images_per_s: r.images_per_s,
    });
    crate::diagnostics::csv_text(&CSV_HEADER, rows)
}

fn labels_u32(labels: &[u8]) -> Vec<u32> {
    labels.iter().map(|&l| u32::from(l)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_csv_leaves_the_ensemble_empty_before_the_first_sample() {
        let before = EpochRow {
            epoch: 1,
            step: 390,
            train_loss: 1.5,
            ..EpochRow::default()
        };
        let after = EpochRow {
            ensemble: Some(ClassMetrics {
                accuracy: 0.75,
                ..ClassMetrics::default()
            }),
            samples: 3,
            ..before.clone()
        };
        let text = history_csv(&[before, after]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(history_csv(&[]), format!("{}\n", lines[0]));
        assert_eq!(lines[0], CSV_HEADER.join(","));
        assert_eq!(lines[1], "1,390,1.5,0.0,0.0,0.0,0,,,,0.0");
        assert_eq!(lines[2], "1,390,1.5,0.0,0.0,0.0,3,0.75,0.0,0.0,0.0");
    }
}
