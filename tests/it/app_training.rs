//! The ResNet++ panel driven as a user would, offscreen, on a small generated data set in
//! Fashion-MNIST's IDX format: start, watch it finish in the background, resume from the
//! checkpoint.
#![cfg(feature = "gui")]

use crate::common;
use crate::common::harness::AppHarness;
use atmc_lab::app::Tab;
use atmc_lab::app::screenshot::harness;
use atmc_lab::app::training::TrainingView;
use atmc_lab::app::training::session::TrainStatus;
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::Preset;
use egui_kittest::kittest::Queryable;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Writes gzipped IDX files of `n` images of Fashion-MNIST's shape (28×28; the loader refuses
/// any other): class 0 bright on the left, class 1 on the right.
fn write_idx(dir: &Path, stem: &str, n: usize) {
    let mut images = vec![0, 0, 8, 3];
    for v in [n as u32, 28, 28] {
        images.extend(v.to_be_bytes());
    }
    let mut labels = vec![0, 0, 8, 1];
    labels.extend((n as u32).to_be_bytes());
    for i in 0..n {
        let label = (i % 2) as u8;
        for _ in 0..28 {
            for x in 0..28 {
                let left = x < 14;
                images.push(if left == (label == 0) { 220 } else { 30 } + (i % 7) as u8);
            }
        }
        labels.push(label);
    }
    for (name, bytes) in [
        (format!("{stem}-images-idx3-ubyte.gz"), images),
        (format!("{stem}-labels-idx1-ubyte.gz"), labels),
    ] {
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(dir.join(name)).unwrap(),
            flate2::Compression::fast(),
        );
        e.write_all(&bytes).unwrap();
        e.finish().unwrap();
    }
}

fn run_until(h: &mut AppHarness, seconds: u64, what: &str, done: impl Fn(TrainStatus) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        h.step();
        let status = h
            .state()
            .as_ref()
            .and_then(|a| a.get::<TrainingView>())
            .map(|t| t.session().with_snapshot(|s| (s.status, s.message.clone())));
        if status.as_ref().is_some_and(|(s, _)| done(*s)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {status:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn train_in_the_background_and_resume_from_the_checkpoint() {
    let dir = common::scratch("app-training", "data");
    write_idx(&dir, "train", 256);
    write_idx(&dir, "t10k", 64);
    let checkpoint = dir.join("ckpt");

    // Tall enough that the checkpoint controls at the bottom of the panel are on screen.
    let mut h = harness(
        Preset::default_preset(),
        [1280, 1100],
        1.0,
        BackendChoice::Cpu,
    );
    h.get_by_label("ResNet++ training").click();
    h.run_steps(2);
    {
        let app = h.state_mut().as_mut().unwrap();
        assert_eq!(app.tab, Tab::Training);
        let panel = app.get_mut::<TrainingView>().unwrap();
        panel.config.data = dir.clone();
        panel.config.width = 4;
        panel.config.epochs = 2;
        panel.config.batch_size = 32;
        panel.config.atmc.h = 0.01;
        panel.checkpoint = checkpoint.display().to_string();
    }
    h.get_by_label("▶ Start training").click();
    run_until(&mut h, 120, "the run to finish", |s| {
        s == TrainStatus::Finished
    });
    h.run_steps(3);
    h.get_by_label_contains("after epoch 2");
    let s = h
        .state()
        .as_ref()
        .unwrap()
        .get::<TrainingView>()
        .as_ref()
        .unwrap()
        .session()
        .snapshot();
    assert_eq!(s.history.len(), 2);
    assert!(
        s.history[1].ensemble.is_some(),
        "ATMC collected posterior samples"
    );
    assert!(checkpoint.join("train.ckpt").is_file());

    // Another run into the same folder is refused: the checkpoint is not overwritten.
    h.get_by_label("▶ Start training").click();
    run_until(&mut h, 30, "the refusal", |s| s == TrainStatus::Failed);
    h.run_steps(2);
    h.get_by_label_contains("--resume");

    // Resuming the finished run loads it as it was.
    h.get_by_label("Resume from it").click();
    run_until(&mut h, 30, "the resumed run", |s| {
        s == TrainStatus::Finished
    });
    let resumed = h
        .state()
        .as_ref()
        .unwrap()
        .get::<TrainingView>()
        .as_ref()
        .unwrap()
        .session()
        .snapshot();
    assert_eq!(resumed.history, s.history);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Before the first evaluation the plots say so (no empty axes), and a run too short to learn
/// visibly says what it needs. `ATMC_TRAINING_PNG=FILE.png` keeps pictures of both
/// (FILE.png, FILE.short.png).
#[test]
fn plots_wait_for_the_first_evaluation_and_short_runs_say_what_they_need() {
    let dir = common::scratch("app-training", "waiting");
    // 4,096 images at batch 16: the first evaluation comes at step 100, seconds away.
    write_idx(&dir, "train", 4096);
    write_idx(&dir, "t10k", 64);
    let mut h = harness(
        Preset::default_preset(),
        [1280, 800],
        1.0,
        BackendChoice::Cpu,
    );
    h.get_by_label("ResNet++ training").click();
    h.run_steps(2);
    let set = |h: &mut AppHarness, f: &dyn Fn(&mut TrainingView)| {
        let app = h.state_mut().as_mut().unwrap();
        f(app.get_mut::<TrainingView>().unwrap());
    };
    // 500 images × 3 epochs at batch 128: 12 steps, too few.
    set(&mut h, &|p| {
        p.config.data = dir.clone();
        p.config.train_limit = 500;
    });
    h.run_steps(2);
    h.get_by_label_contains("12 optimiser steps");
    let picture = std::env::var("ATMC_TRAINING_PNG").ok();
    if let Some(path) = &picture {
        let short = Path::new(path).with_extension("short.png");
        atmc_lab::app::screenshot::save_png(&h.render().unwrap(), &short).unwrap();
    }
    set(&mut h, &|p| {
        p.config.train_limit = 0;
        p.config.width = 4;
        p.config.epochs = 1;
        p.config.batch_size = 16;
    });
    h.run_steps(2);
    assert!(h.query_by_label_contains("too few to learn").is_none());
    h.get_by_label("▶ Start training").click();
    run_until(&mut h, 60, "the run to start", |s| {
        s == TrainStatus::Running
    });
    // The frame that saw "running" may have been laid out while the run was loading: one
    // more frame draws its Pause button.
    h.run_steps(2);
    h.get_by_label("❚❚ Pause").click();
    run_until(&mut h, 30, "the pause", |s| s == TrainStatus::Paused);
    h.run_steps(3);
    let s = h
        .state()
        .as_ref()
        .unwrap()
        .get::<TrainingView>()
        .as_ref()
        .unwrap()
        .session()
        .snapshot();
    assert!(
        s.progress.is_empty() && s.history.is_empty(),
        "evaluated already"
    );
    // Accuracy and NLL wait for the first evaluation, the layer plots and the reliability
    // diagram for the end of the first epoch.
    assert_eq!(
        h.query_all_by_label_contains("waiting for the first evaluation")
            .count(),
        5
    );
    if let Some(path) = &picture {
        atmc_lab::app::screenshot::save_png(&h.render().unwrap(), Path::new(path)).unwrap();
    }
    h.get_by_label("■ Stop").click();
    run_until(&mut h, 30, "the stop", |s| s == TrainStatus::Stopped);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue #44 item 12: a limit of 0 means the whole set, and the field says so ("all", with
/// "all 60,000 training images" under it, not "0"); "all" typed reads back as 0, a count
/// with separators as the count.
#[test]
fn the_image_limits_say_all_rather_than_zero() {
    use egui::Key;
    use egui::accesskit::Role;
    use egui_kittest::kittest::NodeT;
    let mut h = harness(
        Preset::default_preset(),
        [1280, 1100],
        1.0,
        BackendChoice::Cpu,
    );
    h.get_by_label("ResNet++ training").click();
    h.run_steps(2);
    let shown = |h: &AppHarness, label: &str| {
        h.get_by_role_and_label(Role::SpinButton, label)
            .accesskit_node()
            .value()
            .map(|v| v.to_string())
    };
    let all_train = h
        .state()
        .as_ref()
        .unwrap()
        .get::<TrainingView>()
        .unwrap()
        .config
        .dataset
        .train_size();
    let grouped = |n: usize| {
        let s = n.to_string();
        format!("{},{}", &s[..s.len() - 3], &s[s.len() - 3..])
    };
    assert_eq!(shown(&h, "training images").as_deref(), Some("all"));
    assert_eq!(shown(&h, "test images").as_deref(), Some("all"));
    h.get_by_label(&format!("all {} training images", grouped(all_train)));
    h.get_by_label("all 10,000 test images");
    let limit = |h: &AppHarness| {
        h.state()
            .as_ref()
            .unwrap()
            .get::<TrainingView>()
            .unwrap()
            .config
            .train_limit
    };
    let type_into = |h: &mut AppHarness, text: &str| {
        h.get_by_role_and_label(Role::SpinButton, "training images")
            .click();
        h.run_steps(2);
        h.key_press_modifiers(egui::Modifiers::COMMAND, Key::A);
        h.run_steps(1);
        h.get_by_role_and_label(Role::SpinButton, "training images")
            .type_text(text);
        h.run_steps(2);
        h.key_press(Key::Enter);
        h.run_steps(3);
    };
    type_into(&mut h, "2,000");
    assert_eq!(limit(&h), 2000);
    assert_eq!(shown(&h, "training images").as_deref(), Some("2,000"));
    type_into(&mut h, "all");
    assert_eq!(limit(&h), 0);
}
