//! ResNet++ training end to end on a small generated image set: it learns, ATMC samples, and
//! a run resumed from a checkpoint continues exactly.
#![cfg(feature = "train")]

use atmc_lab::math::rng::SequentialRng;
use atmc_lab::train::data::{DatasetKind, ImageData, ImageSet};
use atmc_lab::train::trainer::{OptimizerKind, TrainConfig, Trainer};
use rand::RngExt;
use rand_distr::StandardNormal;
use std::path::PathBuf;
use std::sync::Arc;

/// Two classes of 12×12 grey images: horizontal or vertical stripes of a random phase and
/// period, with pixel noise.
fn stripes(n: usize, seed: u64) -> ImageSet {
    let mut rng = SequentialRng::new(seed, 99);
    let (h, w) = (12, 12);
    let mut pixels = Vec::with_capacity(n * h * w);
    let mut labels = Vec::with_capacity(n);
    for i in 0..n {
        let label = (i % 2) as u8;
        let period = rng.random_range(2..5usize);
        let phase = rng.random_range(0..period);
        for y in 0..h {
            for x in 0..w {
                let k = if label == 0 { y } else { x };
                let on = (k + phase) % (2 * period) < period;
                let noise = (40.0 * rng.sample::<f64, _>(StandardNormal)) as i32;
                pixels.push((if on { 200 } else { 40 } + noise).clamp(0, 255) as u8);
            }
        }
        labels.push(label);
    }
    ImageSet {
        channels: 1,
        height: h,
        width: w,
        pixels,
        labels,
    }
}

/// The stripes as a data set: 1,024 training and 256 test images (also the ResNet++ lesson's).
pub(crate) fn data() -> Arc<ImageData> {
    Arc::new(ImageData {
        kind: DatasetKind::FashionMnist,
        train: stripes(1024, 1),
        test: stripes(256, 2),
        classes: vec!["horizontal".into(), "vertical".into()],
    })
}

/// A small, fast ResNet++ configuration that learns the stripes in four epochs.
pub(crate) fn config(optimizer: OptimizerKind) -> TrainConfig {
    let mut c = TrainConfig::new(
        DatasetKind::FashionMnist,
        PathBuf::from("generated"),
        optimizer,
    );
    c.depth = 8;
    c.width = 4;
    c.epochs = 4;
    c.batch_size = 32;
    c.burn_in_epochs = 0;
    c.sgd_lr = 0.1;
    c.atmc.h = 0.01;
    // m = 1, D = 10 instead of the SGD-equivalent scaling: with N = 1024 that moves like SGD
    // with learning rate 0.1 and momentum e^(−Dh) ≈ 0.9, fast enough for four short epochs.
    // D = 1 (momentum 0.99, an effective learning rate of 10) sat on the edge of stability:
    // it diverged for 15 of 18 (seed, data) pairs with the old draws and 16 of 18 with the
    // new ones; D = 10 diverged for none.
    c.atmc.mass = 1.0;
    c.atmc.friction_floor = 10.0;
    c.atmc_auto_scale = false;
    c
}

/// Runs a trainer to the end.
pub(crate) fn train(mut t: Trainer) -> Trainer {
    while !t.finished() {
        t.step().unwrap();
    }
    t
}

#[test]
fn sgd_and_atmc_learn_the_stripes() {
    for optimizer in [OptimizerKind::Sgd, OptimizerKind::Atmc] {
        let start = std::time::Instant::now();
        let t = train(Trainer::new(config(optimizer), data()).unwrap());
        let h = &t.history;
        println!(
            "{optimizer:?}: {} parameters, losses {:?}, test accuracy {:?}, ensemble {:?}, {:.1} s",
            t.parameters(),
            h.iter().map(|r| r.train_loss).collect::<Vec<_>>(),
            h.iter().map(|r| r.single.accuracy).collect::<Vec<_>>(),
            h.last().unwrap().ensemble.as_ref().map(|m| m.accuracy),
            start.elapsed().as_secs_f64()
        );
        let last = h.last().unwrap();
        assert_eq!(h.len(), 4);
        assert!(t.diverged_at.is_none());
        assert!(
            last.train_loss < 0.7 * h[0].train_loss,
            "the loss did not fall"
        );
        assert!(
            last.single.accuracy > 0.75,
            "accuracy {}",
            last.single.accuracy
        );
        if optimizer == OptimizerKind::Atmc {
            let e = last
                .ensemble
                .as_ref()
                .expect("posterior samples were collected");
            assert_eq!(last.samples, 4);
            assert!(e.accuracy > 0.75 && e.nll.is_finite());
            assert!(!last.layers.is_empty());
        } else {
            assert!(last.ensemble.is_none());
        }
    }
}

#[test]
fn printed_friction_sign_diverges() {
    let mut c = config(OptimizerKind::Atmc);
    c.atmc.friction_sign = -1.0;
    c.atmc.h = 0.05;
    c.epochs = 20;
    let t = train(Trainer::new(c, data()).unwrap());
    assert!(
        t.diverged_at.is_some(),
        "the printed integrator should explode"
    );
}

#[test]
fn a_resumed_run_continues_exactly() {
    let mut c = config(OptimizerKind::Atmc);
    c.epochs = 2;
    c.train_limit = 128;
    let mut a = Trainer::new(c.clone(), data()).unwrap();
    // Stop in the middle of the second epoch, as a killed process would after the epoch's
    // checkpoint; the checkpoint is written after epoch 1.
    while a.epoch < 1 {
        a.step().unwrap();
    }
    let dir = std::env::temp_dir().join(format!("atmc-lab-train-{}", std::process::id()));
    let path = dir.join("train.ckpt");
    a.checkpoint().write(&path).unwrap();
    let a = train(a);
    let saved = atmc_lab::train::checkpoint::Checkpoint::read(&path).unwrap();
    let b = train(Trainer::resume(&saved, data()).unwrap());
    assert_eq!(a.step_count(), b.step_count());
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(a.theta()),
        bits(b.theta()),
        "resumed parameters differ"
    );
    // The same rows, throughput aside (it is a timing).
    let rows = |t: &Trainer| {
        t.history
            .iter()
            .map(|r| atmc_lab::train::trainer::EpochRow {
                images_per_s: 0.0,
                ..r.clone()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&a), rows(&b));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cyclical_runs_sample_at_the_end_of_every_cycle() {
    // 4 epochs of 32 batches: 128 steps in 3 cycles of ⌈128/3⌉ = 43; the last one is short.
    let mut c = config(OptimizerKind::Atmc);
    c.cycles = 3;
    let t = train(Trainer::new(c, data()).unwrap());
    assert_eq!(t.step_count(), 128);
    assert_eq!(t.history.last().unwrap().samples, 3);
}

/// Test curves appear long before the first epoch ends: every PROGRESS_EVERY steps the
/// current network is evaluated on the first test images, and a checkpoint keeps those rows.
#[test]
fn progress_evaluations_come_before_the_first_epoch_ends_and_survive_a_resume() {
    use atmc_lab::train::trainer::PROGRESS_EVERY;
    let mut c = config(OptimizerKind::Sgd);
    c.epochs = 1;
    c.batch_size = 8;
    let mut t = Trainer::new(c, data()).unwrap();
    assert!(
        t.steps_per_epoch() > PROGRESS_EVERY,
        "the test needs a long epoch"
    );
    while t.step_count() < PROGRESS_EVERY {
        t.step().unwrap();
    }
    assert!(t.history.is_empty(), "no epoch has ended yet");
    assert_eq!(t.progress.len(), 1);
    let row = &t.progress[0];
    assert_eq!(row.step, PROGRESS_EVERY);
    assert!(row.epoch > 0.0 && row.epoch < 1.0);
    assert!((0.0..=1.0).contains(&row.accuracy) && row.nll.is_finite());
    let dir = std::env::temp_dir().join(format!("atmc-lab-progress-{}", std::process::id()));
    let path = dir.join("train.ckpt");
    t.checkpoint().write(&path).unwrap();
    let saved = atmc_lab::train::checkpoint::Checkpoint::read(&path).unwrap();
    let resumed = Trainer::resume(&saved, data()).unwrap();
    assert_eq!(resumed.progress, t.progress);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Test accuracy the defaults reach after 48 steps on Fashion-MNIST (first 1,000 test
/// images). Measured with seeds 0, 1, 2: SGD 38.0, 40.8, 35.2 %, ATMC 39.3, 28.9, 29.3 %;
/// before the initialisation fix SGD 23.9 % (on 2,000 test images) and ATMC 21.2 % (seed 0).
/// The test runs seed 0.
const SMALL_RUN_ACCURACY: f64 = 0.25;
/// Mean training loss of the third epoch (the same runs: at most 1.99 against 2.09 and 2.19
/// before; chance is ln 10 = 2.30).
const SMALL_RUN_LOSS: f64 = 2.05;

/// The defaults learn on a small real run: 2,000 Fashion-MNIST images × 3 epochs at batch 128
/// (48 steps), as the panel runs it with its training-image slider at 2,000. Before the
/// initialisation fix (weight normalisation's g = 0 in Fixup's zero layers, which left every
/// layer below the classifier without a gradient) both optimisers ended near 20 %.
/// Needs Debian's `dataset-fashion-mnist` (`scripts/test` installs it).
#[test]
fn defaults_learn_a_small_fashion_mnist_run() {
    use atmc_lab::train::data::{DEBIAN_FASHION_MNIST, load};
    let data = Arc::new(
        load(
            DatasetKind::FashionMnist,
            std::path::Path::new(DEBIAN_FASHION_MNIST),
        )
        .unwrap_or_else(|e| panic!("{e:#}")),
    );
    for optimizer in [OptimizerKind::Sgd, OptimizerKind::Atmc] {
        let start = std::time::Instant::now();
        let mut c = TrainConfig::new(
            DatasetKind::FashionMnist,
            PathBuf::from(DEBIAN_FASHION_MNIST),
            optimizer,
        );
        c.train_limit = 2000;
        c.test_limit = 1000;
        let t = train(Trainer::new(c, data.clone()).unwrap());
        let h = &t.history;
        let last = h.last().unwrap();
        println!(
            "{optimizer:?}: losses {:?}, test accuracy {:?}, {:.1} s",
            h.iter().map(|r| r.train_loss).collect::<Vec<_>>(),
            h.iter().map(|r| r.single.accuracy).collect::<Vec<_>>(),
            start.elapsed().as_secs_f64()
        );
        assert_eq!(t.step_count(), 48);
        assert!(t.diverged_at.is_none());
        assert!(
            last.single.accuracy >= SMALL_RUN_ACCURACY,
            "{optimizer:?}: test accuracy {} after 48 steps",
            last.single.accuracy
        );
        // Chance is ln 10 = 2.30.
        assert!(
            last.train_loss < SMALL_RUN_LOSS,
            "{optimizer:?}: training loss {}",
            last.train_loss
        );
    }
}
