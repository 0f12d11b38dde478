//! The desktop app: live phase portraits of thousands of chains, time series, controls,
//! presets and export. Panels only draw and edit; the engine runs in [`session`].

pub mod colormap;
pub mod contours;
pub mod controls;
pub mod fonts;
pub mod mlp;
pub mod plots;
pub mod portrait;
pub mod screenshot;
pub mod session;
pub mod training;
pub mod worker;

use crate::engine::{Axis, BackendChoice, HistogramSpec};
use crate::math::Grid2;
use crate::preset::{AnyPreset, MlpPreset, Preset, SHIPPED};
use colormap::Colormap;
use egui::{Color32, RichText};
use portrait::{PortraitData, ViewRange};
use session::{Command, Session, Snapshot};

/// Width of the control panel.
const CONTROLS_WIDTH: f32 = 290.0;

/// Where the views of the three portraits are.
#[derive(Clone, Copy, Debug)]
struct Views {
    theta: ViewRange,
    phase: ViewRange,
    thermostat: ViewRange,
}

/// Something the user exported or loaded, reported in the status bar.
#[derive(Clone, Debug)]
struct Status {
    text: String,
    error: bool,
}

/// Writes a text file, naming it in the error.
fn write_file(path: &std::path::Path, contents: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

impl Status {
    /// "wrote PATH" on success, the error otherwise.
    fn written(path: &std::path::Path, result: anyhow::Result<()>) -> Self {
        match result {
            Ok(()) => Status {
                text: format!("wrote {}", path.display()),
                error: false,
            },
            Err(e) => Status {
                text: format!("{e:#}"),
                error: true,
            },
        }
    }
}

/// The two halves of the lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workspace {
    /// 2-D toy posteriors: phase portraits of θ, p and ξ.
    Toy,
    /// Bayesian MLPs on 2-D classification data.
    Mlp,
    /// ResNet++ trained in the background.
    Training,
}

/// The app's state.
pub struct AtmcApp {
    session: Session,
    /// Which half of the lab is shown (the other one is paused).
    pub workspace: Workspace,
    /// The MLP view, created when first shown.
    pub mlp: Option<mlp::MlpPanel>,
    /// The ResNet++ panel, created when first shown; its run goes on in the background.
    pub training: Option<training::TrainingPanel>,
    backend: BackendChoice,
    /// The preset being edited (the controls' model).
    pub preset: Preset,
    applied: Preset,
    views: Views,
    textures: [Option<egui::TextureHandle>; 3],
    colormap: Colormap,
    contour_cache: Option<(crate::math::Grid2, Vec<[f64; 4]>)>,
    status: Option<Status>,
    pending_screenshot: Option<ScreenshotRequest>,
    screenshot_inbox: std::sync::Arc<std::sync::Mutex<Option<std::sync::Arc<egui::ColorImage>>>>,
    panel_rects: [egui::Rect; 3],
    sent_views: Vec<HistogramSpec>,
    /// The display grid of the applied target (auto-range of θ).
    target_grid: Grid2,
    /// Smoothed frame time of the UI, seconds.
    frame_time: f32,
    /// Offscreen pictures: leave out what depends on timing.
    reproducible: bool,
}

#[derive(Clone, Debug)]
struct ScreenshotRequest {
    path: std::path::PathBuf,
    panel: Option<usize>,
    scale: u32,
}

/// Ranges the portraits follow while auto-ranging.
struct AutoRanges {
    theta: ([f64; 2], [f64; 2]),
    phase: ([f64; 2], [f64; 2]),
    thermostat: ([f64; 2], [f64; 2]),
}

/// θ from the target's display grid; p from the kinetic temperature; ξ around its mean.
fn auto_ranges(target_grid: &Grid2, preset: &Preset, snapshot: Option<&Snapshot>) -> AutoRanges {
    let theta_i = if preset.view.coordinate == 0 {
        target_grid.x
    } else {
        target_grid.y
    };
    let m = preset.sampler.mass.max(1e-6);
    let t = preset.sampler.temperature.max(1e-3);
    let (kt, xi) = snapshot
        .filter(|s| s.moments.alive > 0)
        .map(|s| (s.moments.kinetic_temperature(), s.moments.mean_xi()))
        .unwrap_or((t, 0.0));
    let kt = if kt.is_finite() { kt.clamp(t, 1e12) } else { t };
    let p_half = 4.5 * (m * kt).sqrt();
    let xi = if xi.is_finite() {
        xi.clamp(-1e9, 1e9)
    } else {
        0.0
    };
    let xi_half = 4.5 * t.sqrt().max(0.5) + 0.2 * xi.abs();
    let p = [-p_half, p_half];
    AutoRanges {
        theta: (target_grid.x, target_grid.y),
        phase: (theta_i, p),
        thermostat: (p, [xi - xi_half, xi + xi_half]),
    }
}

/// The red banner of a momentum explosion with its reset button; true when it was clicked.
pub(crate) fn explosion_banner(ui: &mut egui::Ui, text: &str, reset_label: &str) -> bool {
    let frame = egui::Frame::new()
        .fill(Color32::from_rgb(120, 20, 20))
        .inner_margin(6.0)
        .corner_radius(4.0);
    frame
        .show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.label(RichText::new(text).color(Color32::WHITE).strong());
                ui.button(reset_label).clicked()
            })
            .inner
        })
        .inner
}

impl AtmcApp {
    /// The app on a preset, with the engine on `backend`, running or paused.
    pub fn new(ctx: &egui::Context, preset: Preset, backend: BackendChoice, playing: bool) -> Self {
        fonts::install_fonts(ctx);
        let repaint_ctx = ctx.clone();
        let session = Session::start(preset.clone(), backend, playing, move || {
            repaint_ctx.request_repaint()
        });
        let target_grid = preset.target.build().default_grid();
        let auto = auto_ranges(&target_grid, &preset, None);
        let views = Views {
            theta: ViewRange::auto(auto.theta.0, auto.theta.1),
            phase: ViewRange::auto(auto.phase.0, auto.phase.1),
            thermostat: ViewRange::auto(auto.thermostat.0, auto.thermostat.1),
        };
        let mut app = Self {
            session,
            workspace: Workspace::Toy,
            mlp: None,
            training: None,
            backend,
            applied: preset.clone(),
            preset,
            views,
            textures: [None, None, None],
            colormap: Colormap::inferno(),
            contour_cache: None,
            status: None,
            pending_screenshot: None,
            screenshot_inbox: Default::default(),
            panel_rects: [egui::Rect::NOTHING; 3],
            sent_views: Vec::new(),
            target_grid,
            frame_time: 0.0,
            reproducible: false,
        };
        app.send_views();
        app
    }

    /// The app on either kind of preset: an MLP preset opens the MLP view (the 2-D view
    /// waits, paused, on the default preset).
    pub fn with_preset(
        ctx: &egui::Context,
        preset: AnyPreset,
        backend: BackendChoice,
        playing: bool,
    ) -> Self {
        match preset {
            AnyPreset::Toy(p) => Self::new(ctx, p, backend, playing),
            AnyPreset::Mlp(p) => {
                let mut app = Self::new(ctx, Preset::default_preset(), backend, false);
                app.mlp = Some(mlp::MlpPanel::new(ctx, p, backend, playing));
                app.workspace = Workspace::Mlp;
                app
            }
        }
    }

    /// Shows one half of the lab and pauses the other, so they do not share the cores.
    pub fn switch_to(&mut self, ctx: &egui::Context, workspace: Workspace) {
        if workspace == self.workspace {
            return;
        }
        // The hidden simulation pauses (a training run goes on: it is meant to).
        match self.workspace {
            Workspace::Toy => self.session.send(Command::Play(false)),
            Workspace::Mlp => {
                if let Some(m) = &self.mlp {
                    m.session().send(mlp::session::MlpCommand::Play(false));
                }
            }
            Workspace::Training => {}
        }
        match workspace {
            Workspace::Training => {
                self.training
                    .get_or_insert_with(|| training::TrainingPanel::new(ctx));
            }
            Workspace::Mlp => {
                let backend = self.backend;
                self.mlp.get_or_insert_with(|| {
                    let preset = match AnyPreset::load("two-moons") {
                        Ok(AnyPreset::Mlp(p)) => p,
                        _ => MlpPreset::parse("MlpPreset(sampler: (kind: Atmc))", "built-in")
                            .expect("the minimal MLP preset parses"),
                    };
                    mlp::MlpPanel::new(ctx, preset, backend, false)
                });
            }
            Workspace::Toy => {}
        }
        self.workspace = workspace;
    }

    /// Loads an MLP preset into the MLP view and shows it.
    pub fn load_mlp_preset(&mut self, ctx: &egui::Context, preset: MlpPreset) {
        self.switch_to(ctx, Workspace::Mlp);
        match &mut self.mlp {
            Some(m) => m.load_preset(preset),
            None => self.mlp = Some(mlp::MlpPanel::new(ctx, preset, self.backend, false)),
        }
    }

    /// Loads either kind of preset into its view.
    pub fn load_any(&mut self, ctx: &egui::Context, preset: AnyPreset) {
        match preset {
            AnyPreset::Toy(p) => {
                self.switch_to(ctx, Workspace::Toy);
                self.load_preset(p);
            }
            AnyPreset::Mlp(p) => self.load_mlp_preset(ctx, p),
        }
    }

    /// The worker's handle (tests and the screenshot command wait on it).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The histograms the three portraits need.
    pub fn specs(&self) -> Vec<HistogramSpec> {
        let c = self.preset.view.coordinate as u8;
        let r = portrait::resolution(self.preset.chains);
        vec![
            HistogramSpec::theta(self.views.theta.grid(r)),
            HistogramSpec {
                grid: self.views.phase.grid(r),
                axes: [Axis::Theta(c), Axis::P(c)],
            },
            HistogramSpec {
                grid: self.views.thermostat.grid(r),
                axes: [Axis::P(c), Axis::Xi(c)],
            },
        ]
    }

    /// Tells the worker which histograms to bin, when they changed.
    fn send_views(&mut self) {
        let specs = self.specs();
        if specs != self.sent_views {
            self.session.send(Command::Views(specs.clone()));
            self.sent_views = specs;
        }
    }

    /// Loads a preset: the chains start over.
    pub fn load_preset(&mut self, preset: Preset) {
        self.preset = preset;
        self.apply_changes(true);
        self.views.theta.auto = true;
        self.views.phase.auto = true;
        self.views.thermostat.auto = true;
    }

    /// Sends the edited preset to the worker: chains, seed or initial state restart the
    /// chains (and `force_reset` does); everything else changes live.
    fn apply_changes(&mut self, force_reset: bool) {
        if self.preset == self.applied && !force_reset {
            return;
        }
        let reset = force_reset
            || self.preset.chains != self.applied.chains
            || self.preset.seed != self.applied.seed
            || self.preset.init != self.applied.init;
        if self.preset.target != self.applied.target {
            self.target_grid = self.preset.target.build().default_grid();
        }
        self.session.send(Command::Apply {
            preset: Box::new(self.preset.clone()),
            reset,
        });
        self.applied = self.preset.clone();
    }

    /// The whole UI, for eframe and for the offscreen harness alike.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        let dt = ui.input(|i| i.unstable_dt);
        self.frame_time = if self.frame_time == 0.0 {
            dt
        } else {
            0.9 * self.frame_time + 0.1 * dt
        };
        self.handle_screenshot_events(ui.ctx());
        match self.workspace {
            Workspace::Mlp if self.mlp.is_some() => self.mlp_ui(ui),
            Workspace::Training if self.training.is_some() => self.training_ui(ui),
            _ => self.toy_ui(ui),
        }
    }

    fn toy_ui(&mut self, ui: &mut egui::Ui) {
        let snapshot = self.session.snapshot();
        ui.ctx().input(|i| {
            if i.key_pressed(egui::Key::Space) {
                self.session.send(Command::Play(!snapshot.playing));
            }
        });
        // Panels leave their background to the window's clear colour (the same colour):
        // a software rasteriser spends most of a frame filling full-window rectangles.
        let style = ui.style().clone();
        let bar = egui::Frame::side_top_panel(&style).fill(Color32::TRANSPARENT);
        egui::Panel::top("menu")
            .frame(bar)
            .show(ui, |ui| self.menu_bar(ui, Some(&snapshot)));
        egui::Panel::bottom("status")
            .frame(bar)
            .show(ui, |ui| self.status_bar(ui, &snapshot));
        egui::Panel::left("controls")
            .frame(bar)
            .exact_size(CONTROLS_WIDTH)
            .resizable(false)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    let actions = controls::show(ui, &mut self.preset, snapshot.playing);
                    if actions.toggle_play {
                        self.session.send(Command::Play(!snapshot.playing));
                    }
                    if actions.step {
                        self.session.send(Command::Step);
                    }
                    if actions.reset {
                        self.session.send(Command::Reset);
                    }
                });
            });
        self.apply_changes(false);
        egui::CentralPanel::default()
            .frame(egui::Frame::central_panel(&style).fill(Color32::TRANSPARENT))
            .show(ui, |ui| self.central(ui, &snapshot));
    }

    fn training_ui(&mut self, ui: &mut egui::Ui) {
        let Some(panel) = self.training.as_ref() else {
            return;
        };
        let snapshot = panel.session().snapshot();
        let style = ui.style().clone();
        let bar = egui::Frame::side_top_panel(&style).fill(Color32::TRANSPARENT);
        egui::Panel::top("menu")
            .frame(bar)
            .show(ui, |ui| self.menu_bar(ui, None));
        egui::Panel::bottom("status").frame(bar).show(ui, |ui| {
            ui.horizontal(|ui| self.status_tail(ui));
        });
        let Some(panel) = self.training.as_mut() else {
            return;
        };
        egui::Panel::left("controls")
            .frame(bar)
            .exact_size(CONTROLS_WIDTH)
            .resizable(false)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| panel.controls(ui, &snapshot));
            });
        egui::CentralPanel::default()
            .frame(egui::Frame::central_panel(&style).fill(Color32::TRANSPARENT))
            .show(ui, |ui| panel.central(ui, &snapshot));
    }

    fn mlp_ui(&mut self, ui: &mut egui::Ui) {
        let Some(panel) = self.mlp.as_ref() else {
            return;
        };
        let snapshot = panel.session().snapshot();
        if ui.ctx().input(|i| i.key_pressed(egui::Key::Space)) {
            panel.toggle_play(&snapshot);
        }
        let style = ui.style().clone();
        let bar = egui::Frame::side_top_panel(&style).fill(Color32::TRANSPARENT);
        egui::Panel::top("menu")
            .frame(bar)
            .show(ui, |ui| self.menu_bar(ui, None));
        let status = self
            .mlp
            .as_ref()
            .map(|m| m.status_text(&snapshot))
            .unwrap_or_default();
        egui::Panel::bottom("status").frame(bar).show(ui, |ui| {
            ui.horizontal(|ui| {
                ui.label(RichText::new(status).small());
                self.status_tail(ui);
            });
        });
        let Some(panel) = self.mlp.as_mut() else {
            return;
        };
        egui::Panel::left("controls")
            .frame(bar)
            .exact_size(CONTROLS_WIDTH)
            .resizable(false)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| panel.controls(ui, &snapshot));
            });
        panel.apply_changes(false);
        egui::CentralPanel::default()
            .frame(egui::Frame::central_panel(&style).fill(Color32::TRANSPARENT))
            .show(ui, |ui| panel.central(ui, &snapshot));
    }

    fn menu_bar(&mut self, ui: &mut egui::Ui, snapshot: Option<&Snapshot>) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("Presets", |ui| {
                for (name, text) in SHIPPED {
                    if let Ok(p) = AnyPreset::parse(text, name) {
                        let (title, description) = match &p {
                            AnyPreset::Toy(t) => (&t.name, &t.description),
                            AnyPreset::Mlp(m) => (&m.name, &m.description),
                        };
                        if ui
                            .button(format!("{name}: {title}"))
                            .on_hover_text(description)
                            .clicked()
                        {
                            ui.close();
                            self.load_any(ui.ctx(), p);
                        }
                    }
                }
            });
            ui.menu_button("File", |ui| {
                if ui.button("Open preset…").clicked() {
                    ui.close();
                    self.open_preset_dialog(ui.ctx());
                }
                if ui
                    .add_enabled(
                        self.workspace != Workspace::Training,
                        egui::Button::new("Save preset…"),
                    )
                    .clicked()
                {
                    ui.close();
                    self.save_preset_dialog();
                }
                ui.separator();
                if ui.button("Export time series (CSV)…").clicked() {
                    ui.close();
                    self.export_csv_dialog(snapshot);
                }
                ui.menu_button("Export PNG", |ui| {
                    let panels: &[(&str, Option<usize>)] = match self.workspace {
                        Workspace::Toy => &[
                            ("window", None),
                            ("θ₁–θ₂ panel", Some(0)),
                            ("θᵢ–pᵢ panel", Some(1)),
                            ("pᵢ–ξᵢ panel", Some(2)),
                        ],
                        Workspace::Mlp => &[
                            ("window", None),
                            ("posterior-predictive map", Some(0)),
                            ("uncertainty map", Some(1)),
                            ("one network's map", Some(2)),
                        ],
                        Workspace::Training => &[("window", None)],
                    };
                    for (label, panel) in panels {
                        for scale in [1, 2, 3] {
                            if ui.button(format!("{label} at {scale}×…")).clicked() {
                                ui.close();
                                self.export_png_dialog(ui.ctx(), *panel, scale);
                            }
                        }
                    }
                });
            });
            ui.separator();
            let mut workspace = self.workspace;
            ui.selectable_value(&mut workspace, Workspace::Toy, "2-D posteriors")
                .on_hover_text(
                    "Thousands of chains on 2-D toy posteriors: phase portraits of θ, p, ξ",
                );
            ui.selectable_value(&mut workspace, Workspace::Mlp, "Bayesian MLPs")
                .on_hover_text("Thousands of small networks on 2-D classification data");
            ui.selectable_value(&mut workspace, Workspace::Training, "ResNet++ training")
                .on_hover_text(
                    "ResNet++ on CIFAR-10 or Fashion-MNIST with ATMC or SGD, in the background",
                );
            self.switch_to(ui.ctx(), workspace);
        });
    }

    fn status_bar(&self, ui: &mut egui::Ui, s: &Snapshot) {
        ui.horizontal(|ui| {
            let backend = s
                .backend
                .as_ref()
                .map(|b| format!("{} engine: {}", b.kind, b.device))
                .unwrap_or_else(|| "starting engine…".into());
            ui.label(RichText::new(backend).small());
            ui.separator();
            ui.label(RichText::new(format!("step {}", s.step)).small());
            ui.separator();
            if s.chain_steps_per_s.is_finite() && s.playing {
                ui.label(
                    RichText::new(format!("engine {:.2e} chain-steps/s", s.chain_steps_per_s))
                        .small(),
                );
                ui.separator();
            }
            self.status_tail(ui);
        });
    }

    /// A running ResNet++ run, the frame time and the last file written or loaded.
    fn status_tail(&self, ui: &mut egui::Ui) {
        if let Some(t) = &self.training {
            let text = t.session().with_snapshot(|s| {
                (s.status != training::session::TrainStatus::Idle).then(|| t.status_text(s))
            });
            if let Some(text) = text {
                ui.label(RichText::new(text).small());
                ui.separator();
            }
        }
        if self.frame_time > 0.0 && !self.reproducible {
            ui.label(RichText::new(format!("UI {:.0} ms/frame", 1e3 * self.frame_time)).small());
            ui.separator();
        }
        if let Some(status) = &self.status {
            let color = if status.error {
                Color32::from_rgb(255, 110, 90)
            } else {
                Color32::from_rgb(140, 220, 140)
            };
            ui.label(RichText::new(&status.text).small().color(color));
        }
    }

    fn central(&mut self, ui: &mut egui::Ui, s: &Snapshot) {
        if let Some(notice) = &s.notice {
            ui.label(RichText::new(format!("⚠ {notice}")).color(Color32::from_rgb(255, 200, 80)));
        }
        if s.moments.diverged > 0 {
            let total = s.moments.diverged + s.moments.alive;
            let text = format!(
                "⚠ Momentum explosion: {} of {} chains diverged ({:.1}%), first seen at step {}. Diverged chains are frozen and excluded from every statistic.",
                s.moments.diverged,
                total,
                100.0 * s.moments.diverged_fraction(),
                s.first_divergence.unwrap_or(s.step)
            );
            if explosion_banner(ui, &text, "↺ Reset chains") {
                self.session.send(Command::Reset);
            }
        }
        self.update_auto_views(s);
        let spacing = ui.spacing().item_spacing.x;
        let available = ui.available_size();
        let side = ((available.x - 3.0 * spacing) / 3.0 - 2.0)
            .min(available.y * 0.56)
            .max(120.0);
        let c = self.preset.view.coordinate as u8;
        let names = [
            (
                "θ₁ – θ₂ over the target".to_owned(),
                [Axis::Theta(0), Axis::Theta(1)],
            ),
            (
                format!(
                    "phase space {} – {}",
                    Axis::Theta(c).label(),
                    Axis::P(c).label()
                ),
                [Axis::Theta(c), Axis::P(c)],
            ),
            (
                format!(
                    "thermostat {} – {}",
                    Axis::P(c).label(),
                    Axis::Xi(c).label()
                ),
                [Axis::P(c), Axis::Xi(c)],
            ),
        ];
        let contours = self.contours(s);
        let empty: Vec<[f64; 4]> = Vec::new();
        ui.horizontal(|ui| {
            for (k, (title, axes)) in names.iter().enumerate() {
                let spec_ok = s.specs.get(k).is_some_and(|sp| sp.axes == *axes);
                let histogram = if spec_ok {
                    s.histograms
                        .get(k)
                        .map(|(counts, _)| (&s.specs[k].grid, counts.as_slice()))
                } else {
                    None
                };
                let data = PortraitData {
                    title: title.clone(),
                    axes: *axes,
                    histogram,
                    trails: &s.trails,
                    trail_diverged_at: &s.trail_diverged_at,
                    contours: if k == 0 { &contours } else { &empty },
                    log_scale: self.preset.view.log_scale,
                    note: (k > 0 && !self.preset.sampler.kind.has_momentum())
                        .then_some("this sampler has no momentum p\nand no thermostat ξ"),
                };
                let view = match k {
                    0 => &mut self.views.theta,
                    1 => &mut self.views.phase,
                    _ => &mut self.views.thermostat,
                };
                let response =
                    portrait::show(ui, side, view, &data, &mut self.textures[k], &self.colormap);
                self.panel_rects[k] = response.rect;
            }
        });
        self.send_views();
        let rest = ui.available_size();
        let plot_height = (rest.y - 40.0).clamp(80.0, 220.0);
        ui.horizontal(|ui| {
            let marginal_width = (rest.x * 0.28).max(120.0);
            ui.vertical(|ui| {
                self.marginals(ui, s, marginal_width, (plot_height - 8.0) / 2.0);
            });
            ui.vertical(|ui| {
                plots::time_series(
                    ui,
                    &s.series,
                    self.preset.sampler.temperature,
                    s.chains,
                    rest.x - marginal_width - 2.0 * spacing,
                    plot_height,
                );
            });
        });
    }

    fn marginals(&self, ui: &mut egui::Ui, s: &Snapshot, width: f32, height: f32) {
        let (Some(spec), Some((counts, _))) = (s.specs.first(), s.histograms.first()) else {
            return;
        };
        let g = spec.grid;
        let (nx, ny) = (g.nx as usize, g.ny as usize);
        let mut mx = vec![0.0; nx];
        let mut my = vec![0.0; ny];
        for iy in 0..ny {
            for ix in 0..nx {
                let c = f64::from(counts[iy * nx + ix]);
                mx[ix] += c;
                my[iy] += c;
            }
        }
        let (mut tx, mut ty) = (vec![0.0; nx], vec![0.0; ny]);
        if let Some((tg, masses)) = &s.view_truth
            && *tg == g
        {
            for iy in 0..ny {
                for ix in 0..nx {
                    tx[ix] += masses[iy * nx + ix];
                    ty[iy] += masses[iy * nx + ix];
                }
            }
        }
        plots::marginal(
            ui,
            "marginal 1",
            "θ₁",
            g.x,
            &mx,
            &tx,
            egui::vec2(width, height),
        );
        plots::marginal(
            ui,
            "marginal 2",
            "θ₂",
            g.y,
            &my,
            &ty,
            egui::vec2(width, height),
        );
    }

    fn contours(&mut self, s: &Snapshot) -> Vec<[f64; 4]> {
        let Some((grid, masses)) = &s.contour_truth else {
            return Vec::new();
        };
        if let Some((g, segs)) = &self.contour_cache
            && g == grid
        {
            return segs.clone();
        }
        let area = grid.cell_area();
        let density: Vec<f64> = masses.iter().map(|m| m / area).collect();
        let mut segs = Vec::new();
        for level in contours::mass_levels(masses, area, &[0.5, 0.9, 0.99]) {
            if level > 0.0 {
                segs.extend(contours::iso_lines(
                    &density,
                    grid.nx as usize,
                    grid.ny as usize,
                    grid.x,
                    grid.y,
                    level,
                ));
            }
        }
        self.contour_cache = Some((*grid, segs.clone()));
        segs
    }

    fn update_auto_views(&mut self, s: &Snapshot) {
        self.follow_views(s, 0.15);
    }

    fn follow_views(&mut self, s: &Snapshot, tolerance: f64) {
        let auto = auto_ranges(&self.target_grid, &self.preset, Some(s));
        self.views.theta.follow(auto.theta, tolerance);
        self.views.phase.follow(auto.phase, tolerance);
        self.views.thermostat.follow(auto.thermostat, tolerance);
    }

    /// Sets every auto-ranging view exactly to the range of the latest snapshot. Pictures of
    /// step N then do not depend on which intermediate snapshots the UI happened to see.
    pub fn settle_views(&mut self) {
        let s = self.session.snapshot();
        self.follow_views(&s, 0.0);
        self.send_views();
    }

    /// Hides timing-dependent figures (frame time) so offscreen pictures are reproducible.
    pub fn set_reproducible(&mut self, on: bool) {
        self.reproducible = on;
    }

    fn open_preset_dialog(&mut self, ctx: &egui::Context) {
        let Some(path) = rfd::FileDialog::new()
            .add_filter("atmc-lab preset", &["ron"])
            .set_directory("presets")
            .pick_file()
        else {
            return;
        };
        match AnyPreset::load(&path.to_string_lossy()) {
            Ok(p) => {
                self.status = Some(Status {
                    text: format!("loaded {}", path.display()),
                    error: false,
                });
                self.load_any(ctx, p);
            }
            Err(e) => {
                self.status = Some(Status {
                    text: e.to_string(),
                    error: true,
                })
            }
        }
    }

    fn save_preset_dialog(&mut self) {
        let Some(path) = rfd::FileDialog::new()
            .add_filter("atmc-lab preset", &["ron"])
            .set_file_name("my-preset.ron")
            .save_file()
        else {
            return;
        };
        let text = match (self.workspace, &self.mlp) {
            (Workspace::Mlp, Some(m)) => m.preset.to_ron(),
            _ => self.preset.to_ron(),
        };
        self.status = Some(Status::written(&path, write_file(&path, &text)));
    }

    fn export_csv_dialog(&mut self, s: Option<&Snapshot>) {
        let Some(path) = rfd::FileDialog::new()
            .add_filter("CSV", &["csv"])
            .set_file_name("atmc-lab-series.csv")
            .save_file()
        else {
            return;
        };
        let csv = match (s, self.workspace, &self.mlp, &self.training) {
            (Some(s), ..) => crate::diagnostics::series_csv(&s.series),
            (None, Workspace::Training, _, Some(t)) => t
                .session()
                .with_snapshot(|s| crate::train::trainer::history_csv(&s.history)),
            (None, _, Some(m), _) => m
                .session()
                .with_snapshot(|s| crate::diagnostics::mlp::series_csv(&s.series)),
            _ => String::new(),
        };
        self.status = Some(Status::written(&path, write_file(&path, &csv)));
    }

    fn export_png_dialog(&mut self, ctx: &egui::Context, panel: Option<usize>, scale: u32) {
        let Some(path) = rfd::FileDialog::new()
            .add_filter("PNG", &["png"])
            .set_file_name("atmc-lab.png")
            .save_file()
        else {
            return;
        };
        self.pending_screenshot = Some(ScreenshotRequest { path, panel, scale });
        let inbox = self.screenshot_inbox.clone();
        let repaint = ctx.clone();
        ctx.request_screenshot(move |image| {
            *inbox.lock().expect("screenshot inbox") = Some(image);
            repaint.request_repaint();
        });
    }

    fn handle_screenshot_events(&mut self, ctx: &egui::Context) {
        let image = self
            .screenshot_inbox
            .lock()
            .expect("screenshot inbox")
            .take();
        let (Some(image), Some(request)) = (image, self.pending_screenshot.take()) else {
            return;
        };
        let crop = request
            .panel
            .and_then(|k| match (self.workspace, &self.mlp) {
                (Workspace::Mlp, Some(m)) => m.panel_rects.get(k).copied(),
                _ => self.panel_rects.get(k).copied(),
            });
        let result = screenshot::save_color_image(
            &image,
            crop,
            ctx.pixels_per_point(),
            request.scale,
            &request.path,
        );
        self.status = Some(Status::written(&request.path, result));
    }
}

impl eframe::App for AtmcApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        AtmcApp::ui(self, ui);
    }

    fn clear_color(&self, visuals: &egui::Visuals) -> [f32; 4] {
        // The panels are transparent: the clear colour is their background.
        visuals.panel_fill.to_normalized_gamma_f32()
    }
}

/// Opens the desktop app on `preset`. Tries the wgpu renderer first and falls back to glow
/// (OpenGL) when it cannot start.
pub fn run_native(preset: AnyPreset, backend: BackendChoice) -> anyhow::Result<()> {
    // Drawn by tests/icon.rs, which also checks that it decodes.
    let icon = std::sync::Arc::new(
        eframe::icon_data::from_png_bytes(include_bytes!("../../assets/icon.png"))
            .expect("assets/icon.png is a PNG"),
    );
    let options = |renderer| eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("atmc-lab")
            .with_icon(icon.clone())
            .with_inner_size([1280.0, 720.0])
            .with_min_inner_size([960.0, 600.0]),
        renderer,
        ..Default::default()
    };
    let make = |preset: AnyPreset| -> eframe::AppCreator<'static> {
        Box::new(move |cc| {
            cc.egui_ctx.set_visuals(egui::Visuals::dark());
            Ok(Box::new(AtmcApp::with_preset(
                &cc.egui_ctx,
                preset,
                backend,
                true,
            )))
        })
    };
    match eframe::run_native(
        "atmc-lab",
        options(eframe::Renderer::Wgpu),
        make(preset.clone()),
    ) {
        Ok(()) => Ok(()),
        Err(e) => {
            eprintln!("atmc-lab: the wgpu renderer failed ({e}); trying OpenGL");
            eframe::run_native("atmc-lab", options(eframe::Renderer::Glow), make(preset))
                .map_err(|e| anyhow::anyhow!("cannot open a window: {e}"))
        }
    }
}
