//! The ResNet++ panel: configure a run on CIFAR-10 or Fashion-MNIST, start, pause, resume
//! and stop it, and watch it train in the background: progress, speed, the loss, test
//! accuracy and NLL of the current network and of the posterior predictive, per-layer
//! kinetic temperature and ξ, and the reliability diagram.

pub mod session;

use super::controls::slider;
use super::files::FileRequest;
use super::plots::{reliability_diagram_or_wait, show_or_wait, small_plot};
use super::view::{Action, Shell, View};
use crate::math::{Kinetic, NoiseMass, XiUpdate, ranges};
use crate::train::data::{DEBIAN_FASHION_MNIST, DatasetKind};
use crate::train::trainer::{OptimizerKind, PROGRESS_EVERY, TrainConfig, short_run_note};
use egui::{Color32, RichText, Ui};
use egui_plot::{HLine, Line, PlotPoints};
use session::{TrainCommand, TrainSession, TrainSnapshot, TrainStatus};
use std::path::PathBuf;

const ACCENT: Color32 = Color32::from_rgb(255, 170, 60);
const SINGLE: Color32 = Color32::from_rgb(190, 140, 255);
const TRUTH: Color32 = Color32::from_rgb(120, 200, 255);
const WARNING: Color32 = Color32::from_rgb(255, 200, 90);

/// The training view's state.
pub struct TrainingView {
    session: TrainSession,
    snapshot: std::sync::Arc<TrainSnapshot>,
    /// The configuration being edited.
    pub config: TrainConfig,
    /// Folder of the checkpoint (empty: none).
    pub checkpoint: String,
}

impl TrainingView {
    /// An idle panel, ready for Fashion-MNIST where Debian installs it.
    pub fn new(ctx: &egui::Context) -> Self {
        let repaint = ctx.clone();
        let config = TrainConfig::new(
            DatasetKind::FashionMnist,
            PathBuf::from(DEBIAN_FASHION_MNIST),
            OptimizerKind::Atmc,
        );
        Self {
            session: TrainSession::start(move || repaint.request_repaint()),
            snapshot: Default::default(),
            config,
            checkpoint: String::new(),
        }
    }

    /// The worker's handle.
    pub fn session(&self) -> &TrainSession {
        &self.session
    }

    /// Starts a run with the edited configuration.
    pub fn start(&self) {
        let dir =
            (!self.checkpoint.trim().is_empty()).then(|| PathBuf::from(self.checkpoint.trim()));
        self.session
            .send(TrainCommand::Start(Box::new(self.config.clone()), dir));
    }

    /// One line for the status bar.
    pub fn status_text(s: &TrainSnapshot) -> String {
        let mut parts = vec![format!("training: {:?}", s.status).to_lowercase()];
        if let Some(c) = &s.config {
            parts.push(format!("epoch {}/{}", s.epoch, c.epochs));
        }
        if s.images_per_s > 0.0 && s.status == TrainStatus::Running {
            parts.push(format!("{:.0} images/s", s.images_per_s));
        }
        parts.join("  |  ")
    }

    /// The control panel.
    fn control_panel(&mut self, ui: &mut Ui, s: &TrainSnapshot, shell: &mut Shell) {
        let busy = matches!(
            s.status,
            TrainStatus::Running | TrainStatus::Paused | TrainStatus::Loading
        );
        ui.horizontal(|ui| {
            if ui
                .add_enabled(!busy, egui::Button::new("▶ Start training"))
                .clicked()
            {
                self.start();
            }
            let pause = match s.status {
                TrainStatus::Running => Some((true, "❚❚ Pause")),
                TrainStatus::Paused => Some((false, "▶ Continue")),
                _ => None,
            };
            if let Some((on, label)) = pause
                && ui.button(label).clicked()
            {
                self.session.send(TrainCommand::Pause(on));
            }
            if ui.add_enabled(busy, egui::Button::new("■ Stop")).clicked() {
                self.session.send(TrainCommand::Stop);
            }
        });
        ui.add_enabled_ui(!busy, |ui| self.configuration(ui, shell));
    }

    fn configuration(&mut self, ui: &mut Ui, shell: &mut Shell) {
        // Paths typed into the prompt where no file dialog could open.
        if let Some(dir) = shell.answer_for(FileRequest::DataFolder) {
            self.config.data = dir;
        }
        if let Some(file) = shell.answer_for(FileRequest::CifarArchive) {
            self.config.data = file;
            self.config.dataset = DatasetKind::Cifar10;
        }
        if let Some(dir) = shell.answer_for(FileRequest::CheckpointFolder) {
            self.checkpoint = dir.display().to_string();
        }
        self.data_controls(ui, shell);
        network_controls(ui, &mut self.config);
        optimiser_controls(ui, &mut self.config);
        self.checkpoint_controls(ui, shell);
    }

    /// The data set, its folder or archive, the limits and augmentation.
    fn data_controls(&mut self, ui: &mut Ui, shell: &mut Shell) {
        let c = &mut self.config;
        ui.separator();
        ui.label(RichText::new("Data").strong());
        ui.horizontal(|ui| {
            ui.selectable_value(&mut c.dataset, DatasetKind::FashionMnist, "Fashion-MNIST");
            ui.selectable_value(&mut c.dataset, DatasetKind::Cifar10, "CIFAR-10");
        });
        ui.horizontal(|ui| {
            if ui.button("Data folder…").clicked()
                && let Some(dir) = shell.pick(FileRequest::DataFolder)
            {
                c.data = dir;
            }
            if ui
                .button("CIFAR-10 .tar.gz…")
                .on_hover_text("The official cifar-10-binary.tar.gz, read as it is")
                .clicked()
                && let Some(file) = shell.pick(FileRequest::CifarArchive)
            {
                c.data = file;
                c.dataset = DatasetKind::Cifar10;
            }
        });
        ui.small(c.data.display().to_string());
        // 0 stands for the whole set: say how many that is, not "0".
        let (train_all, test_all) = (c.dataset.train_size(), TEST_IMAGES);
        crate::app::controls::bounded(ui, &mut c.train_limit, 0..=60_000, |s| {
            limit_field(s, "training images", train_all)
        })
        .on_hover_text("Images of the training set used; 0 or \"all\" = the whole set");
        ui.small(images_used(c.train_limit, train_all, "training"));
        crate::app::controls::bounded(ui, &mut c.test_limit, 0..=10_000, |s| {
            limit_field(s, "test images", test_all)
        })
        .on_hover_text("Images of the test set used; 0 or \"all\" = the whole set");
        ui.small(images_used(c.test_limit, test_all, "test"));
        ui.checkbox(&mut c.augment, "random crops and flips");
    }

    /// The checkpoint folder, and resuming from it.
    fn checkpoint_controls(&mut self, ui: &mut Ui, shell: &mut Shell) {
        ui.separator();
        ui.label(RichText::new("Checkpoint").strong());
        ui.horizontal(|ui| {
            let label = ui.label("folder");
            // As wide as the panel leaves, not egui's default 280 points (past its edge).
            ui.add(
                egui::TextEdit::singleline(&mut self.checkpoint)
                    .desired_width(ui.available_width()),
            )
            .labelled_by(label.id)
            .on_hover_text("Written after every epoch (atomically); empty: no checkpoint");
        });
        ui.horizontal(|ui| {
            if ui.button("Choose…").clicked()
                && let Some(dir) = shell.pick(FileRequest::CheckpointFolder)
            {
                self.checkpoint = dir.display().to_string();
            }
            if ui
                .add_enabled(
                    !self.checkpoint.trim().is_empty(),
                    egui::Button::new("Resume from it"),
                )
                .clicked()
            {
                self.session.send(TrainCommand::ResumeFrom(PathBuf::from(
                    self.checkpoint.trim(),
                )));
            }
        });
    }

    /// The views.
    fn central_area(&mut self, ui: &mut Ui, s: &TrainSnapshot) {
        if let Some(m) = &s.message {
            ui.label(RichText::new(format!("⚠ {m}")).color(super::palette::error(ui.visuals())));
        }
        if let Some(step) = s.diverged_at {
            let text = format!(
                "⚠ Momentum explosion: the network's parameters diverged at step {step}; the run stopped. Set the friction sign back to +1 and start again."
            );
            if super::explosion_banner(ui, &text, "↺ Start again") {
                self.start();
            }
        }
        let Some(c) = &s.config else {
            ui.label(match s.status {
                TrainStatus::Loading => "loading the data…",
                _ => "Configure a run on the left and press Start. Training runs in the background: the other views stay live.",
            });
            return;
        };
        progress_header(ui, s, c);
        let spacing = ui.spacing().item_spacing.x;
        let available = ui.available_size();
        let w = (available.x - 2.0 * spacing) / 3.0;
        let h = ((available.y - 3.0 * spacing - 60.0) / 2.0).clamp(80.0, 300.0);
        // Until a plot has data, it says when the data comes instead of showing empty axes.
        let waiting = plot_waits(s, c);
        metric_plots(ui, s, [w, h], &waiting);
        layer_plots(ui, s, c, [w, h], &waiting);
        summary_line(ui, s);
    }
}

/// The progress bar with the status, speed and ETA, the SGD that ATMC's settings move like,
/// and a warning when the run is too short for what it shows.
fn progress_header(ui: &mut Ui, s: &TrainSnapshot, c: &TrainConfig) {
    let total = s.steps_per_epoch * c.epochs;
    let progress = f64::from(s.step) / f64::from(total.max(1));
    ui.horizontal(|ui| {
        ui.add(
            egui::ProgressBar::new(progress as f32)
                .desired_width(ui.available_width() * 0.5)
                .text(format!(
                    "epoch {}/{} · step {}/{}",
                    s.epoch.min(c.epochs),
                    c.epochs,
                    s.step,
                    total
                )),
        );
        ui.label(format!(
            "{:?} · {} parameters · {:.0} images/s{}",
            s.status,
            s.parameters,
            s.images_per_s,
            s.eta_s
                .map(|e| format!(" · ETA {}", eta(e)))
                .unwrap_or_default()
        ));
    });
    if let Some(e) = &s.sgd_equivalent {
        ui.label(
            RichText::new(format!(
                "ATMC with h = {}, m = {:.4}, D = {:.4} moves like SGD with learning rate \
                     {:.4} and momentum {:.3} (noise and thermostat aside)",
                c.atmc.h, c.atmc.mass, c.atmc.friction_floor, e.lr, e.momentum
            ))
            .small(),
        );
    }
    if let Some(needs) = short_run_note(u64::from(total)).filter(|_| total > 0) {
        ui.label(RichText::new(needs).small().color(WARNING));
    }
}

/// Epoch curve of a per-epoch figure: (epoch, value) where the value is finite.
fn epoch_curve(
    s: &TrainSnapshot,
    f: &dyn Fn(&crate::train::trainer::EpochRow) -> Option<f64>,
) -> PlotPoints<'static> {
    s.history
        .iter()
        .filter_map(|r| {
            f(r).filter(|v| v.is_finite())
                .map(|v| [f64::from(r.epoch), v])
        })
        .collect()
}

/// Every PROGRESS_EVERY steps, the current network on the first test images: curves long
/// before the first epoch ends.
fn progress_curve(
    s: &TrainSnapshot,
    f: fn(&crate::train::trainer::ProgressRow) -> f64,
) -> PlotPoints<'static> {
    s.progress
        .iter()
        .filter(|r| f(r).is_finite())
        .map(|r| [r.epoch, f(r)])
        .collect()
}

/// The first row of plots: training loss, test accuracy and test NLL.
fn metric_plots(ui: &mut Ui, s: &TrainSnapshot, [w, h]: [f32; 2], waiting: &PlotWaits) {
    let curve = |f: &dyn Fn(&crate::train::trainer::EpochRow) -> Option<f64>| epoch_curve(s, f);
    let progress = |f: fn(&crate::train::trainer::ProgressRow) -> f64| progress_curve(s, f);
    let progress_label = format!(
        "current network, first {} test images",
        crate::train::trainer::PROGRESS_IMAGES
    );
    ui.horizontal(|ui| {
        let plot = small_plot("train loss", w, h)
            .x_grid_spacer(crate::app::axes::x_marks)
            .x_axis_label("step")
            .y_axis_label("training loss (minibatch)")
            .include_y(0.0);
        let losses = s.losses.clone();
        show_or_wait(plot, ui, waiting.loss.as_deref(), |p| {
            p.line(Line::new("training loss", PlotPoints::from(losses)).color(ACCENT));
        });
        let plot = small_plot("test accuracy", w, h)
            .legend(egui_plot::Legend::default().position(egui_plot::Corner::RightBottom))
            .x_axis_label("epoch")
            .y_axis_label("test accuracy");
        show_or_wait(plot, ui, waiting.evaluation.as_deref(), |p| {
            p.line(
                Line::new(progress_label.clone(), progress(|r| r.accuracy))
                    .color(SINGLE)
                    .style(egui_plot::LineStyle::dashed_dense()),
            );
            p.line(Line::new("current network", curve(&|r| Some(r.single.accuracy))).color(SINGLE));
            p.line(
                Line::new(
                    "posterior predictive",
                    curve(&|r| r.ensemble.as_ref().map(|e| e.accuracy)),
                )
                .color(ACCENT),
            );
        });
        let plot = small_plot("test nll", w, h)
            .x_axis_label("epoch")
            .y_axis_label("test NLL")
            .include_y(0.0);
        show_or_wait(plot, ui, waiting.evaluation.as_deref(), |p| {
            p.line(
                Line::new(progress_label.clone(), progress(|r| r.nll))
                    .color(SINGLE)
                    .style(egui_plot::LineStyle::dashed_dense()),
            );
            p.line(Line::new("current network NLL", curve(&|r| Some(r.single.nll))).color(SINGLE));
            p.line(
                Line::new(
                    "posterior predictive NLL",
                    curve(&|r| r.ensemble.as_ref().map(|e| e.nll)),
                )
                .color(ACCENT),
            );
        });
    });
}

/// The second row: each layer group's kinetic temperature and mean ξ, and the reliability
/// diagram.
fn layer_plots(
    ui: &mut Ui,
    s: &TrainSnapshot,
    c: &TrainConfig,
    [w, h]: [f32; 2],
    waiting: &PlotWaits,
) {
    let curve = |f: &dyn Fn(&crate::train::trainer::EpochRow) -> Option<f64>| epoch_curve(s, f);
    ui.horizontal(|ui| {
        // One curve per layer group: (name, kinetic temperature, mean ξ) of each row.
        let layer_lines =
            |p: &mut egui_plot::PlotUi<'_>, prefix: &str, pick: fn(&(String, f64, f64)) -> f64| {
                let Some(last) = s.history.last() else {
                    return;
                };
                for (l, (name, _, _)) in last.layers.iter().enumerate() {
                    p.line(Line::new(
                        format!("{prefix} {name}"),
                        curve(&|r| r.layers.get(l).map(pick)),
                    ));
                }
            };
        let plot = small_plot("layer temperature", w, h).x_axis_label("epoch");
        let target = c.atmc.temperature;
        show_or_wait(plot, ui, waiting.layers.as_deref(), move |p| {
            layer_lines(p, "⟨pK'⟩", |x| x.1);
            p.hline(HLine::new("target T", target).color(TRUTH));
        });
        let plot = small_plot("layer xi", w, h).x_axis_label("epoch");
        show_or_wait(plot, ui, waiting.layers.as_deref(), move |p| {
            layer_lines(p, "ξ", |x| x.2)
        });
        reliability_diagram_or_wait(
            ui,
            "train reliability",
            &s.reliability,
            w,
            h,
            waiting.reliability.as_deref(),
        );
    });
}

/// The last epoch's figures in one line.
fn summary_line(ui: &mut Ui, s: &TrainSnapshot) {
    if let Some(last) = s.history.last() {
        let ensemble = last
            .ensemble
            .as_ref()
            .map(|e| {
                format!(
                    " · posterior predictive ({} samples): {:.2}%, NLL {:.3}, ECE {:.3}",
                    last.samples,
                    100.0 * e.accuracy,
                    e.nll,
                    e.ece
                )
            })
            .unwrap_or_default();
        ui.label(format!(
            "after epoch {}: current network {:.2}%, NLL {:.3}, ECE {:.3}{ensemble}",
            last.epoch,
            100.0 * last.single.accuracy,
            last.single.nll,
            last.single.ece
        ));
    }
}

/// Test images of both data sets (CIFAR-10's and Fashion-MNIST's test sets are 10,000).
const TEST_IMAGES: usize = 10_000;

/// What a limit of a training or test set means in images: "all 60,000 training images",
/// "2,000 of 60,000 training images".
pub fn images_used(limit: usize, all: usize, which: &str) -> String {
    if limit == 0 || limit >= all {
        format!("all {} {which} images", grouped(all))
    } else {
        format!("{} of {} {which} images", grouped(limit), grouped(all))
    }
}

/// `60000` → `60,000`.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A limit on the images used, whose 0 means the whole set of `all`: the field says "all"
/// rather than "0" (the line under it says how many that is; the field stays narrow enough
/// for its label to fit the panel), writes other counts with thousands separators, and
/// reads "all" back as 0 and numbers with or without separators.
fn limit_field<'a>(slider: egui::Slider<'a>, label: &str, all: usize) -> egui::Slider<'a> {
    slider
        .text(label)
        .logarithmic(true)
        .custom_formatter(move |v, _| {
            if v <= 0.0 || v >= all as f64 {
                "all".to_owned()
            } else {
                grouped(v.round() as usize)
            }
        })
        .custom_parser(|s| {
            let t = s.trim();
            if t.is_empty() || t.starts_with("all") {
                Some(0.0)
            } else {
                t.replace(',', "").parse().ok()
            }
        })
}

/// Depth, width, epochs, batch size and seed.
fn network_controls(ui: &mut Ui, c: &mut TrainConfig) {
    ui.separator();
    ui.label(RichText::new("Network").strong());
    ui.horizontal(|ui| {
        ui.label("depth");
        for d in [8, 14, 20] {
            ui.selectable_value(&mut c.depth, d, d.to_string());
        }
    });
    crate::app::controls::bounded(ui, &mut c.width, 4..=64, |s| s.text("width"));
    crate::app::controls::bounded(ui, &mut c.epochs, 1..=100, |s| s.text("epochs"));
    crate::app::controls::bounded(ui, &mut c.batch_size, 16..=512, |s| {
        s.logarithmic(true).text("batch size")
    });
    ui.horizontal(|ui| {
        let label = ui.label("seed");
        ui.add(egui::DragValue::new(&mut c.seed))
            .labelled_by(label.id);
    });
    if let Some(needs) = c.too_short() {
        ui.label(RichText::new(needs).small().color(WARNING));
    }
}

/// The optimiser and its settings: ATMC's (step size, m and D or their automatic scale,
/// temperature, the printed defects, the kinetic energy, the prior, cycles) or SGD's.
fn optimiser_controls(ui: &mut Ui, c: &mut TrainConfig) {
    ui.separator();
    ui.label(RichText::new("Optimiser").strong());
    ui.horizontal(|ui| {
        ui.selectable_value(&mut c.optimizer, OptimizerKind::Atmc, "ATMC");
        ui.selectable_value(&mut c.optimizer, OptimizerKind::Sgd, "SGD + momentum");
    });
    match c.optimizer {
        OptimizerKind::Atmc => {
            let s = &mut c.atmc;
            slider(
                ui,
                &mut s.h,
                ranges::STEP_SIZE,
                1e-5,
                0.05,
                true,
                "step size h",
            );
            ui.checkbox(
                &mut c.atmc_auto_scale,
                "m and D from h and N (like SGD at lr 0.02, momentum 0.9)",
            );
            let s = &mut c.atmc;
            if !c.atmc_auto_scale {
                slider(ui, &mut s.mass, ranges::MASS, 0.01, 1e4, true, "mass m");
                slider(
                    ui,
                    &mut s.friction_floor,
                    ranges::FRICTION_FLOOR,
                    0.0,
                    100.0,
                    true,
                    "friction floor D",
                );
            }
            slider(
                ui,
                &mut s.temperature,
                ranges::TEMPERATURE,
                0.0,
                2.0,
                false,
                "temperature T",
            );
            crate::app::controls::bounded(ui, &mut s.friction_sign, -1.0..=1.0, |s| {
                s.text("friction sign φ").step_by(0.05)
            })
            .on_hover_text("+1 correct, −1 as printed in the paper");
            ui.horizontal(|ui| {
                ui.label("thermostat");
                ui.selectable_value(&mut s.xi_update, XiUpdate::Accumulate, "accumulate");
                ui.selectable_value(&mut s.xi_update, XiUpdate::Overwrite, "overwrite");
            });
            ui.horizontal(|ui| {
                ui.label("noise mass");
                ui.selectable_value(&mut s.noise_mass, NoiseMass::With, "with m");
                ui.selectable_value(&mut s.noise_mass, NoiseMass::Without, "without m");
            });
            let mut hyperbolic = matches!(s.kinetic, Kinetic::Hyperbolic { .. });
            ui.checkbox(&mut hyperbolic, "hyperbolic kinetic energy (|θ̇| ≤ c)");
            match (&mut s.kinetic, hyperbolic) {
                (Kinetic::Hyperbolic { c }, true) => {
                    slider(ui, c, ranges::SPEED, 1e-3, 10.0, true, "speed limit c");
                }
                (Kinetic::Gaussian, true) => s.kinetic = Kinetic::Hyperbolic { c: 0.1 },
                (Kinetic::Hyperbolic { .. }, false) => s.kinetic = Kinetic::Gaussian,
                (Kinetic::Gaussian, false) => {}
            }
            slider(
                ui,
                &mut c.prior_scale,
                ranges::SIGMA,
                0.01,
                10.0,
                true,
                "prior σ",
            );
            crate::app::controls::bounded(ui, &mut c.cycles, 0..=20, |s| s.text("cycles"))
                .on_hover_text("Cycles of the cyclical step size; 0 = a constant h");
            ui.small(
                "The gradient is N × the minibatch mean plus θ/σ²: the posterior over the \
                     whole training set. Samples: every epoch after the first (constant h) or \
                     at the end of each cycle.",
            );
        }
        OptimizerKind::Sgd => {
            crate::app::controls::bounded(ui, &mut c.sgd_lr, 0.001..=1.0, |s| {
                s.logarithmic(true).text("learning rate")
            })
            .on_hover_text("The initial learning rate of the cosine schedule");
            crate::app::controls::bounded(ui, &mut c.sgd_momentum, 0.0..=0.99, |s| {
                s.text("momentum")
            });
        }
    }
}

/// What each plot of the panel says while it has no data (None: it has some).
#[derive(Debug, Default, PartialEq)]
pub struct PlotWaits {
    /// The training loss (from the first minibatch on).
    pub loss: Option<String>,
    /// Test accuracy and NLL (from the first progress evaluation or epoch end on).
    pub evaluation: Option<String>,
    /// Per-layer temperature and ξ (ATMC, from the first epoch end on).
    pub layers: Option<String>,
    /// The reliability diagram (from the first epoch end on).
    pub reliability: Option<String>,
}

/// The messages of the plots without data, each saying at which step its data comes.
pub fn plot_waits(s: &TrainSnapshot, c: &TrainConfig) -> PlotWaits {
    const WAITING: &str = "waiting for the first evaluation";
    let total = s.steps_per_epoch * c.epochs;
    let epoch_end = format!(
        "{WAITING}\n(end of epoch 1: step {} of {total})",
        s.steps_per_epoch
    );
    let first_evaluation = PROGRESS_EVERY.min(s.steps_per_epoch);
    PlotWaits {
        loss: s
            .losses
            .is_empty()
            .then(|| "waiting for the first minibatch".to_owned()),
        evaluation: (s.progress.is_empty() && s.history.is_empty())
            .then(|| format!("{WAITING}\n(step {first_evaluation} of {total})")),
        layers: if c.optimizer == OptimizerKind::Sgd {
            Some("ATMC only: SGD has no thermostats".to_owned())
        } else {
            s.history
                .last()
                .is_none_or(|r| r.layers.is_empty())
                .then(|| epoch_end.clone())
        },
        reliability: s.reliability.is_empty().then_some(epoch_end),
    }
}

/// `2 hours`, `89 seconds`, `12 seconds`: indicatif's rounding to the nearest whole number of
/// one unit, which moves to the next smaller unit below 1.5 of the larger one (so an estimate
/// of 1 h 55 min reads `2 hours`, not `1 hour`).
fn eta(seconds: f64) -> String {
    // The cast saturates (NaN → 0), so no value makes `Duration` panic.
    let d = std::time::Duration::from_secs(seconds.max(0.0) as u64);
    indicatif::HumanDuration(d).to_string()
}

impl View for TrainingView {
    fn refresh(&mut self) {
        self.snapshot = self.session.snapshot();
    }

    fn controls(&mut self, ui: &mut Ui, shell: &mut Shell) {
        let snapshot = self.snapshot.clone();
        self.control_panel(ui, &snapshot, shell);
    }

    fn central(&mut self, ui: &mut Ui, _shell: &mut Shell) {
        let snapshot = self.snapshot.clone();
        self.central_area(ui, &snapshot);
    }

    fn status(&self) -> String {
        Self::status_text(&self.snapshot)
    }

    fn background_status(&self) -> Option<String> {
        // Hidden, the view does not refresh: read the session's latest snapshot.
        self.session
            .with_snapshot(|s| (s.status != TrainStatus::Idle).then(|| Self::status_text(s)))
    }

    fn step(&self) -> u32 {
        self.snapshot.step
    }

    fn act(&mut self, action: Action) {
        if matches!(action, Action::TogglePlay | Action::Play) {
            match self.snapshot.status {
                TrainStatus::Running if action == Action::TogglePlay => {
                    self.session.send(TrainCommand::Pause(true))
                }
                TrainStatus::Paused => self.session.send(TrainCommand::Pause(false)),
                _ => {}
            }
        }
    }

    fn series_csv(&self) -> Option<String> {
        Some(crate::train::trainer::history_csv(&self.snapshot.history))
    }
}

#[cfg(test)]
mod tests {
    use super::{PlotWaits, eta, images_used, plot_waits};
    use crate::app::training::session::TrainSnapshot;
    use crate::diagnostics::classification::ReliabilityBin;
    use crate::train::data::DatasetKind;
    use crate::train::trainer::{EpochRow, OptimizerKind, ProgressRow, TrainConfig};

    #[test]
    fn limits_are_said_in_images() {
        assert_eq!(
            images_used(0, 60_000, "training"),
            "all 60,000 training images"
        );
        assert_eq!(
            images_used(2000, 60_000, "training"),
            "2,000 of 60,000 training images"
        );
        assert_eq!(
            images_used(10_000, 10_000, "test"),
            "all 10,000 test images"
        );
        assert_eq!(images_used(999, 1000, "test"), "999 of 1,000 test images");
    }

    #[test]
    fn plots_wait_for_their_first_data() {
        let mut c = TrainConfig::new(DatasetKind::FashionMnist, "x".into(), OptimizerKind::Atmc);
        c.epochs = 3;
        let mut s = TrainSnapshot {
            steps_per_epoch: 16,
            ..TrainSnapshot::default()
        };
        let w = plot_waits(&s, &c);
        assert_eq!(w.loss.as_deref(), Some("waiting for the first minibatch"));
        let evaluation = w.evaluation.unwrap();
        assert!(evaluation.starts_with("waiting for the first evaluation"));
        assert!(evaluation.contains("step 16 of 48"), "{evaluation}");
        assert!(w.layers.unwrap().contains("end of epoch 1"));
        assert!(w.reliability.unwrap().contains("end of epoch 1"));
        // A loss, then a progress evaluation, then an epoch's end: every plot has data.
        s.losses.push([1.0, 2.3]);
        s.progress.push(ProgressRow::default());
        let w = plot_waits(&s, &c);
        assert!(w.loss.is_none() && w.evaluation.is_none() && w.layers.is_some());
        s.history.push(EpochRow {
            layers: vec![("stem".into(), 1.0, 0.0)],
            ..EpochRow::default()
        });
        s.reliability.push(ReliabilityBin {
            lower: 0.0,
            upper: 1.0,
            count: 1,
            mean_confidence: 0.5,
            accuracy: 1.0,
        });
        assert_eq!(plot_waits(&s, &c), PlotWaits::default());
        // SGD has no thermostats to plot, ever.
        c.optimizer = OptimizerKind::Sgd;
        assert!(plot_waits(&s, &c).layers.unwrap().contains("ATMC only"));
    }

    #[test]
    fn short_runs_say_what_they_need() {
        let mut c = TrainConfig::new(DatasetKind::FashionMnist, "x".into(), OptimizerKind::Sgd);
        assert!(c.too_short().is_none(), "the whole training set");
        c.train_limit = 2000;
        assert_eq!(c.total_steps(), 48);
        assert!(c.too_short().is_none());
        c.train_limit = 500;
        let note = c.too_short().unwrap();
        assert!(note.starts_with("12 optimiser steps"), "{note}");
        c.batch_size = 32;
        assert!(c.too_short().is_none(), "16 batches × 3 epochs");
    }

    #[test]
    fn eta_rounds_to_one_unit() {
        assert_eq!(eta(12.4), "12 seconds");
        assert_eq!(eta(89.0), "89 seconds");
        assert_eq!(eta(200.0), "3 minutes");
        assert_eq!(eta(2.0 * 3600.0 + 1000.0), "2 hours");
        assert_eq!(eta(-5.0), "0 seconds");
        assert_eq!(eta(f64::NAN), "0 seconds");
    }
}
