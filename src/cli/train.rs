//! `atmc-lab train`: ResNet++ on CIFAR-10 or Fashion-MNIST with ATMC or SGD, a progress bar,
//! a checkpoint after every epoch and a JSON summary as the last line of stdout.

use crate::engine::BackendChoice;
use crate::train::checkpoint::{Checkpoint, ensure_fresh};
use crate::train::data::{DatasetKind, load};
use crate::train::trainer::{EpochRow, OptimizerKind, TrainConfig, Trainer};
use anyhow::{Context, bail};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Options of `atmc-lab train`.
#[derive(Debug, clap::Args)]
#[command(allow_negative_numbers = true)]
pub struct TrainArgs {
    /// The data: a folder (CIFAR-10 binary batches or Fashion-MNIST IDX files) or CIFAR-10's
    /// official cifar-10-binary.tar.gz.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Which data set.
    #[arg(long, value_enum, default_value = "cifar10")]
    dataset: DatasetKind,
    /// Optimiser.
    #[arg(long, value_enum, default_value = "atmc")]
    optimizer: OptimizerKind,
    /// Layers (6n + 2: 8, 14, 20, …).
    #[arg(long, default_value_t = 8)]
    depth: usize,
    /// Channels of the first stage.
    #[arg(long, default_value_t = 16)]
    width: usize,
    /// Passes over the training set.
    #[arg(long, default_value_t = 3)]
    epochs: u32,
    /// Images per minibatch.
    #[arg(long, default_value_t = 128)]
    batch_size: u32,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// ATMC step size h.
    #[arg(long)]
    h: Option<f64>,
    /// ATMC friction floor D (with --mass; by default m and D follow h and N: see README).
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
    #[arg(long, default_value_t = 0)]
    cycles: u32,
    /// Prior standard deviation of every parameter.
    #[arg(long, default_value_t = 1.0)]
    prior_scale: f64,
    /// SGD's peak learning rate.
    #[arg(long, default_value_t = 0.05)]
    lr: f32,
    /// Only the first N training images (0: all).
    #[arg(long, default_value_t = 0)]
    train_limit: usize,
    /// Only the first N test images (0: all).
    #[arg(long, default_value_t = 0)]
    test_limit: usize,
    /// Train without random crops and flips.
    #[arg(long)]
    no_augment: bool,
    /// Folder of the checkpoint (written after every epoch).
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Continue the run in --checkpoint.
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

/// Runs `atmc-lab train`. Errors of the input are returned as `Err` with a message.
pub fn train(args: &TrainArgs) -> anyhow::Result<()> {
    if args.backend == BackendChoice::Gpu {
        bail!(
            "--backend gpu: this build trains on burn's CPU backend only (its wgpu backend adds \
             ~40 minutes to a clean build and runs slower than the CPU on software GPUs)"
        );
    }
    let checkpoint = args.checkpoint.as_deref().map(checkpoint_file);
    let mut trainer = if args.resume {
        let path = checkpoint
            .as_deref()
            .context("--resume needs --checkpoint DIR")?;
        let saved = Checkpoint::read(path)?;
        let config: TrainConfig = serde_json::from_value(saved.header["config"].clone())
            .context("the checkpoint's configuration")?;
        let data = Arc::new(load(config.dataset, &config.data)?);
        eprintln!(
            "resuming {} at epoch {}",
            path.display(),
            saved.header["epoch"]
        );
        Trainer::resume(&saved, data)?
    } else {
        if let Some(path) = &checkpoint {
            ensure_fresh(path)?;
        }
        let data_path = args.data.clone().context(
            "--data DIR is needed (CIFAR-10: https://www.cs.toronto.edu/~kriz/cifar.html, the \
             binary version; Fashion-MNIST: apt-get install dataset-fashion-mnist)",
        )?;
        let mut config = TrainConfig::new(args.dataset, data_path, args.optimizer);
        config.depth = args.depth;
        config.width = args.width;
        config.epochs = args.epochs;
        config.batch_size = args.batch_size.max(1);
        config.seed = args.seed;
        config.cycles = args.cycles;
        config.prior_scale = args.prior_scale;
        config.sgd_lr = args.lr;
        config.train_limit = args.train_limit;
        config.test_limit = args.test_limit;
        config.augment = !args.no_augment;
        let s = &mut config.atmc;
        if let Some(v) = args.h {
            s.h = crate::math::ranges::STEP_SIZE
                .check(v)
                .map_err(anyhow::Error::msg)?;
        }
        if let Some(v) = args.friction_floor {
            s.friction_floor = crate::math::ranges::FRICTION_FLOOR
                .check(v)
                .map_err(anyhow::Error::msg)?;
        }
        if let Some(v) = args.mass {
            s.mass = crate::math::ranges::MASS
                .check(v)
                .map_err(anyhow::Error::msg)?;
        }
        config.atmc_auto_scale = args.mass.is_none() && args.friction_floor.is_none();
        if let Some(v) = args.temperature {
            s.temperature = crate::math::ranges::TEMPERATURE
                .check(v)
                .map_err(anyhow::Error::msg)?;
        }
        if let Some(v) = args.friction_sign {
            s.friction_sign = crate::math::ranges::FRICTION_SIGN
                .check(v)
                .map_err(anyhow::Error::msg)?;
        }
        if let Some(v) = args.xi_update {
            s.xi_update = v.into();
        }
        if let Some(v) = args.noise_mass {
            s.noise_mass = v.into();
        }
        if let Some(c) = args.speed {
            let c = crate::math::ranges::SPEED
                .check(c)
                .map_err(anyhow::Error::msg)?;
            s.kinetic = crate::math::Kinetic::Hyperbolic { c };
        }
        let started = Instant::now();
        let data = Arc::new(load(config.dataset, &config.data)?);
        eprintln!(
            "{}: {} training and {} test images loaded in {:.1} s",
            config.data.display(),
            data.train.len(),
            data.test.len(),
            started.elapsed().as_secs_f64()
        );
        Trainer::new(config, data)?
    };
    run(&mut trainer, checkpoint.as_deref())
}

fn run(trainer: &mut Trainer, checkpoint: Option<&std::path::Path>) -> anyhow::Result<()> {
    let c = trainer.config.clone();
    eprintln!(
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
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} epoch {msg} [{bar:30}] {pos}/{len} batches, eta {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_position(u64::from(trainer.step_count()).min(total));
    let started = Instant::now();
    let mut images = 0usize;
    while !trainer.finished() {
        bar.set_message(format!("{}/{}", trainer.epoch + 1, c.epochs));
        let report = trainer.step()?;
        images += report.images;
        bar.inc(1);
        if report.epoch_done || trainer.finished() {
            if let Some(row) = trainer.history.last() {
                bar.suspend(|| eprintln!("{}", describe(row)));
            }
            if let Some(path) = checkpoint {
                trainer.checkpoint().write(path)?;
            }
        }
    }
    bar.finish_and_clear();
    if let Some(step) = trainer.diverged_at {
        eprintln!("the parameters diverged at step {step} (momentum explosion): stopped");
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
        "images_per_s": images as f64 / elapsed.max(1e-9),
        "elapsed_s": elapsed,
    });
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{summary}");
    Ok(())
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
