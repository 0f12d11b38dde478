//! `atmc-lab train`: ResNet++ on CIFAR-10 or Fashion-MNIST with ATMC or SGD, a progress bar,
//! a checkpoint after every epoch and a JSON summary as the last line of stdout.

use super::{Failure, progress_bar};
use crate::engine::BackendChoice;
use crate::train::checkpoint::{Checkpoint, FolderRefused, ensure_fresh, lock_checkpoint_folder};
use crate::train::data::{DatasetKind, load};
use crate::train::trainer::{EpochRow, OptimizerKind, TrainConfig, Trainer};
use anyhow::Context;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Options of `atmc-lab train`.
#[derive(Debug, clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct TrainArgs {
    /// The data: a folder (CIFAR-10 binary batches or Fashion-MNIST IDX files) or CIFAR-10's
    /// official cifar-10-binary.tar.gz [Fashion-MNIST default: /usr/share/datasets/fashion-mnist,
    /// where Debian's dataset-fashion-mnist installs it].
    #[arg(long)]
    data: Option<PathBuf>,
    /// Which data set [default: cifar10].
    #[arg(long, value_enum)]
    dataset: Option<DatasetKind>,
    /// Optimiser [default: atmc].
    #[arg(long, value_enum)]
    optimizer: Option<OptimizerKind>,
    /// Layers (6n + 2: 8, 14, 20, …, at most 110) [default: 8].
    #[arg(long, value_parser = super::whole::<usize>)]
    depth: Option<usize>,
    /// Channels of the first stage, 4 to 128 [default: 16].
    #[arg(long, value_parser = super::whole::<usize>)]
    width: Option<usize>,
    /// Passes over the training set, 1 to 10,000 [default: 3]; with --resume, extends or
    /// shortens the run.
    #[arg(long, value_parser = super::whole::<u32>)]
    epochs: Option<u32>,
    /// Images per minibatch, 1 to 4096 [default: 128].
    #[arg(long, value_parser = super::whole::<u32>)]
    batch_size: Option<u32>,
    /// Seed [default: 0].
    #[arg(long, value_parser = super::whole::<u64>)]
    seed: Option<u64>,
    /// ATMC step size h.
    #[arg(long)]
    h: Option<f64>,
    /// ATMC friction floor D (with --mass; by default m and D follow h and N: docs/training.md).
    #[arg(long = "D")]
    friction_floor: Option<f64>,
    /// ATMC mass m (with --D; by default m and D follow h and N).
    #[arg(long)]
    mass: Option<f64>,
    /// ATMC temperature T.
    #[arg(long)]
    temperature: Option<f64>,
    /// ATMC friction sign: +1 correct, −1 as printed.
    #[arg(long)]
    friction_sign: Option<f64>,
    /// ATMC thermostat update: accumulate (correct) or overwrite (as printed).
    #[arg(long, value_enum)]
    xi_update: Option<super::XiUpdateArg>,
    /// ATMC noise mass factor: with m (correct) or without (as printed).
    #[arg(long, value_enum)]
    noise_mass: Option<super::NoiseMassArg>,
    /// Hyperbolic kinetic energy with this speed limit c (default: Gaussian).
    #[arg(long)]
    speed: Option<f64>,
    /// Cycles of ATMC's cyclical step size (0: constant; samples at the end of each cycle).
    #[arg(long, value_parser = super::whole::<u32>)]
    cycles: Option<u32>,
    /// Prior standard deviation of every parameter [default: 1].
    #[arg(long)]
    prior_scale: Option<f64>,
    /// SGD's peak learning rate [default: 0.05].
    #[arg(long)]
    lr: Option<f64>,
    /// Only the first N training images (0: all).
    #[arg(long, value_parser = super::whole::<usize>)]
    train_limit: Option<usize>,
    /// Only the first N test images (0: all).
    #[arg(long, value_parser = super::whole::<usize>)]
    test_limit: Option<usize>,
    /// Train without random crops and flips.
    #[arg(long)]
    no_augment: bool,
    /// Folder of the checkpoint (created if missing; locked while the run lasts).
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Epochs between two checkpoints [default: 1]; may change on --resume.
    #[arg(long, value_parser = super::whole::<u32>)]
    checkpoint_every: Option<u32>,
    /// Continue the run in --checkpoint. Only --epochs, --data and --checkpoint-every may be
    /// given with it: everything else is the checkpoint's.
    #[arg(long)]
    resume: bool,
    /// Backend. Training runs on burn's CPU backend (flex); `gpu` is refused in this build.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
}

/// The checkpoint file in a folder.
fn checkpoint_file(dir: &std::path::Path) -> PathBuf {
    dir.join("train.ckpt")
}

/// `value` checked against `range`, as a usage error.
fn ranged(range: crate::math::ranges::Range, value: f64) -> Result<f64, Failure> {
    range.check(value).map_err(Failure::usage)
}

/// The options a resumed run may change; every other option belongs to the checkpoint.
fn refuse_on_resume(args: &TrainArgs) -> Result<(), Failure> {
    let given: [(&str, bool); 21] = [
        ("--dataset", args.dataset.is_some()),
        ("--optimizer", args.optimizer.is_some()),
        ("--depth", args.depth.is_some()),
        ("--width", args.width.is_some()),
        ("--batch-size", args.batch_size.is_some()),
        ("--seed", args.seed.is_some()),
        ("--h", args.h.is_some()),
        ("--D", args.friction_floor.is_some()),
        ("--mass", args.mass.is_some()),
        ("--temperature", args.temperature.is_some()),
        ("--friction-sign", args.friction_sign.is_some()),
        ("--xi-update", args.xi_update.is_some()),
        ("--noise-mass", args.noise_mass.is_some()),
        ("--speed", args.speed.is_some()),
        ("--cycles", args.cycles.is_some()),
        ("--prior-scale", args.prior_scale.is_some()),
        ("--lr", args.lr.is_some()),
        ("--train-limit", args.train_limit.is_some()),
        ("--test-limit", args.test_limit.is_some()),
        ("--no-augment", args.no_augment),
        ("--backend", args.backend != BackendChoice::Auto),
    ];
    let clashing: Vec<&str> = given.iter().filter(|(_, g)| *g).map(|(n, _)| *n).collect();
    if !clashing.is_empty() {
        return Err(Failure::usage(format!(
            "--resume continues the run as its checkpoint describes it: {} cannot change \
             (only --epochs, --data and --checkpoint-every can)",
            clashing.join(", ")
        )));
    }
    Ok(())
}

/// Runs `atmc-lab train`.
pub fn train(args: &TrainArgs) -> Result<(), Failure> {
    if args.backend == BackendChoice::Gpu {
        return Err(Failure::usage(
            "--backend gpu: this build trains on burn's CPU backend only (its wgpu backend adds \
             ~40 minutes to a clean build and runs slower than the CPU on software GPUs)",
        ));
    }
    let epochs = args
        .epochs
        .map(|e| {
            ranged(
                crate::math::ranges::Range::closed_range("epochs", 1.0, 1e4),
                f64::from(e),
            )
        })
        .transpose()?
        .map(|e| e as u32);
    let every = args
        .checkpoint_every
        .map(|e| {
            ranged(
                crate::math::ranges::Range::closed_range("epochs between checkpoints", 1.0, 1e4),
                f64::from(e),
            )
        })
        .transpose()?
        .map_or(1, |e| e as u32);
    if args.checkpoint_every.is_some() && args.checkpoint.is_none() {
        return Err(Failure::usage("--checkpoint-every needs --checkpoint DIR"));
    }
    if args.resume
        && let Some(dir) = &args.checkpoint
        && !checkpoint_file(dir).exists()
    {
        return Err(Failure::usage(format!(
            "--resume: {} holds no checkpoint to resume ({} is missing)",
            dir.display(),
            checkpoint_file(dir).display()
        )));
    }
    let lock = args
        .checkpoint
        .as_deref()
        .map(lock_checkpoint_folder)
        .transpose()
        .map_err(|e| {
            // A folder that cannot be used (or is held by another run) is bad input.
            if e.downcast_ref::<FolderRefused>().is_some() {
                Failure::usage(format!("{e:#}"))
            } else {
                Failure::from(e)
            }
        })?;
    let checkpoint = args.checkpoint.as_deref().map(checkpoint_file);
    let mut trainer = if args.resume {
        let path = checkpoint
            .as_deref()
            .ok_or_else(|| Failure::usage("--resume needs --checkpoint DIR"))?;
        refuse_on_resume(args)?;
        let saved = Checkpoint::read(path)?;
        let mut config: TrainConfig = serde_json::from_value(saved.header["config"].clone())
            .context("the checkpoint's configuration")
            .map_err(Failure::from)?;
        if let Some(data) = &args.data {
            config.data.clone_from(data);
        }
        let data = Arc::new(load(config.dataset, &config.data)?);
        note!(
            "resuming {} at epoch {}",
            path.display(),
            saved.header["epoch"]
        );
        if let Some(e) = epochs
            && e != config.epochs
            && config.cycles > 0
        {
            return Err(Failure::usage(format!(
                "--epochs {e}: this run's {} cycles are spread over its {} epochs; a cyclical \
                 run cannot be extended",
                config.cycles, config.epochs
            )));
        }
        let mut t = Trainer::resume_with(&saved, data, config)?;
        if let Some(e) = epochs {
            t.config.epochs = e;
        }
        t
    } else {
        if let Some(path) = &checkpoint {
            ensure_fresh(path).map_err(|e| Failure::usage(format!("{e:#}")))?;
        }
        let config = fresh_config(args, epochs)?;
        let started = Instant::now();
        let data = Arc::new(load(config.dataset, &config.data)?);
        note!(
            "{}: {} training and {} test images loaded in {:.1} s",
            config.data.display(),
            data.train.len(),
            data.test.len(),
            started.elapsed().as_secs_f64()
        );
        Trainer::new(config, data).map_err(|e| Failure::usage(format!("{e:#}")))?
    };
    let result = run(&mut trainer, checkpoint.as_deref(), every);
    drop(lock);
    result
}

/// The configuration of a fresh run: every option checked against its range before any data
/// is loaded.
fn fresh_config(args: &TrainArgs, epochs: Option<u32>) -> Result<TrainConfig, Failure> {
    use crate::math::ranges::{self, Range};
    let dataset = args.dataset.unwrap_or(DatasetKind::Cifar10);
    // Debian's dataset-fashion-mnist has a fixed home; CIFAR-10 has none.
    let installed = (dataset == DatasetKind::FashionMnist)
        .then(|| PathBuf::from(crate::train::data::DEBIAN_FASHION_MNIST))
        .filter(|p| p.is_dir());
    let data_path = args.data.clone().or(installed).ok_or_else(|| {
        Failure::usage(
            "--data DIR is needed (CIFAR-10: https://www.cs.toronto.edu/~kriz/cifar.html, the \
             binary version; Fashion-MNIST: apt-get install dataset-fashion-mnist)",
        )
    })?;
    let mut config = TrainConfig::new(
        dataset,
        data_path,
        args.optimizer.unwrap_or(OptimizerKind::Atmc),
    );
    if let Some(d) = args.depth {
        config.depth = d;
    }
    if let Some(w) = args.width {
        config.width = w;
    }
    crate::train::resnet::ResNetConfig {
        depth: config.depth,
        width: config.width,
        channels: 3,
        classes: 10,
    }
    .validate()
    .map_err(Failure::usage)?;
    config.epochs = epochs.unwrap_or(config.epochs);
    if let Some(b) = args.batch_size {
        config.batch_size =
            ranged(Range::closed_range("batch size", 1.0, 4096.0), f64::from(b))? as u32;
    }
    if let Some(v) = args.seed {
        config.seed = v;
    }
    if let Some(c) = args.cycles {
        config.cycles = ranged(ranges::CYCLES.with_min(0.0), f64::from(c))? as u32;
    }
    if let Some(v) = args.prior_scale {
        config.prior_scale = ranged(ranges::SIGMA, v)?;
    }
    if let Some(v) = args.lr {
        config.sgd_lr = ranged(Range::closed_range("learning rate", 1e-7, 10.0), v)? as f32;
    }
    config.train_limit = args.train_limit.unwrap_or(0);
    config.test_limit = args.test_limit.unwrap_or(0);
    config.augment = !args.no_augment;
    let s = &mut config.atmc;
    if let Some(v) = args.h {
        s.h = ranged(ranges::STEP_SIZE, v)?;
    }
    if let Some(v) = args.friction_floor {
        s.friction_floor = ranged(ranges::FRICTION_FLOOR, v)?;
    }
    if let Some(v) = args.mass {
        s.mass = ranged(ranges::MASS, v)?;
    }
    config.atmc_auto_scale = args.mass.is_none() && args.friction_floor.is_none();
    if let Some(v) = args.temperature {
        s.temperature = ranged(ranges::TEMPERATURE, v)?;
    }
    if let Some(v) = args.friction_sign {
        s.friction_sign = ranged(ranges::FRICTION_SIGN, v)?;
    }
    if let Some(v) = args.xi_update {
        s.xi_update = v.into();
    }
    if let Some(v) = args.noise_mass {
        s.noise_mass = v.into();
    }
    if let Some(c) = args.speed {
        s.kinetic = crate::math::Kinetic::Hyperbolic {
            c: ranged(ranges::SPEED, c)?,
        };
    }
    Ok(config)
}

fn run(
    trainer: &mut Trainer,
    checkpoint: Option<&std::path::Path>,
    every: u32,
) -> Result<(), Failure> {
    let c = trainer.config.clone();
    note!(
        "ResNet++ depth {} width {} ({} parameters) with {:?} on {} training images, burn's CPU \
         backend (flex)",
        c.depth,
        c.width,
        trainer.parameters(),
        c.optimizer,
        trainer.train_len()
    );
    let per_epoch = trainer.steps_per_epoch();
    let total = u64::from(per_epoch) * u64::from(c.epochs);
    let bar = progress_bar(total, "batches", "");
    bar.set_position(u64::from(trainer.step_count()).min(total));
    let started = Instant::now();
    let mut images = 0usize;
    while !trainer.finished() {
        bar.set_message(format!("epoch {}/{}", trainer.epoch + 1, c.epochs));
        let report = trainer.step()?;
        images += report.images;
        bar.inc(1);
        if report.epoch_done || trainer.finished() {
            if let Some(row) = trainer.history.last() {
                bar.suspend(|| note!("{}", describe(row)));
            }
            if let Some(path) = checkpoint
                && (trainer.epoch.is_multiple_of(every) || trainer.finished())
            {
                trainer.checkpoint().write(path)?;
            }
        }
    }
    bar.finish_and_clear();
    if let Some(step) = trainer.diverged_at {
        note!("the parameters diverged at step {step} (momentum explosion): stopped");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let last = trainer.history.last().cloned().unwrap_or_default();
    let summary = serde_json::json!({
        "kind": "train",
        "dataset": c.dataset,
        "optimizer": c.optimizer,
        "depth": c.depth,
        "width": c.width,
        "parameters": trainer.parameters(),
        "epochs": trainer.epoch,
        "steps": trainer.step_count(),
        "train_images": trainer.train_len(),
        "single": last.single,
        "ensemble": last.ensemble,
        "samples": last.samples,
        "train_loss": last.train_loss,
        "layers": last.layers,
        "diverged_at_step": trainer.diverged_at,
        "atmc_mass": (c.optimizer == OptimizerKind::Atmc).then_some(trainer.config.atmc.mass),
        "atmc_friction_floor": (c.optimizer == OptimizerKind::Atmc)
            .then_some(trainer.config.atmc.friction_floor),
        "sgd_equivalent": trainer.sgd_equivalent(),
        // Evaluations and checkpoints included: the run's wall time.
        "images_per_s": images as f64 / elapsed.max(1e-9),
        // The training steps alone (what another framework's training loop measures).
        "train_images_per_s": trainer.times.images_per_s(),
        "step_times_s": trainer.times,
        "elapsed_s": elapsed,
    });
    Ok(super::emit(summary)?)
}

/// One line per epoch.
pub fn describe(row: &EpochRow) -> String {
    let ensemble = row
        .ensemble
        .as_ref()
        .map(|e| {
            format!(
                "; posterior predictive ({} samples) {:.2}% / NLL {:.3} / ECE {:.3}",
                row.samples,
                100.0 * e.accuracy,
                e.nll,
                e.ece
            )
        })
        .unwrap_or_default();
    format!(
        "epoch {}: train loss {:.4}; test {:.2}% / NLL {:.3} / ECE {:.3}{ensemble}; {:.0} images/s",
        row.epoch,
        row.train_loss,
        100.0 * row.single.accuracy,
        row.single.nll,
        row.single.ece,
        row.images_per_s
    )
}
