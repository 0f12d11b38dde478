//! The desktop app. [`AtmcApp`] is the shell: the menu bar with the tabs, the status bar,
//! file dialogs and picture export. Each tab is one [`View`] — a panel type that fills the
//! control panel and the central area and owns its worker thread. Panels only draw and edit
//! presets; the engines run in the workers and `diagnostics` computes what is drawn.

pub mod colormap;
pub mod compare;
pub mod controls;
pub mod fonts;
pub mod mlp;
pub mod plots;
pub mod portrait;
pub mod posterior;
pub mod screenshot;
pub mod training;
pub mod view;
pub mod worker;

use crate::engine::BackendChoice;
use crate::preset::{AnyPreset, Comparison, MlpPreset, Preset, SHIPPED};
use egui::{Color32, RichText};
use view::{Shell, Status, Transport, View};

/// Width of the control panel.
const CONTROLS_WIDTH: f32 = 290.0;

/// The tabs of the lab, in menu order. A new view is a new panel type and one variant here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    /// 2-D toy posteriors: phase portraits of θ, p, ξ ([`posterior::PosteriorView`]).
    Posterior,
    /// Two to four samplers side by side in lockstep ([`compare::CompareView`]).
    Compare,
    /// Bayesian MLPs on 2-D classification data ([`mlp::MlpView`]).
    Mlp,
    /// ResNet++ trained in the background ([`training::TrainingView`]).
    Training,
}

impl Tab {
    /// Every tab, in menu order.
    pub const ALL: [Tab; 4] = [Tab::Posterior, Tab::Compare, Tab::Mlp, Tab::Training];

    /// The label in the menu bar.
    pub fn label(self) -> &'static str {
        match self {
            Tab::Posterior => "2-D posteriors",
            Tab::Compare => "Side by side",
            Tab::Mlp => "Bayesian MLPs",
            Tab::Training => "ResNet++ training",
        }
    }

    /// What the tab shows, on hover.
    pub fn hover(self) -> &'static str {
        match self {
            Tab::Posterior => {
                "Thousands of chains on 2-D toy posteriors: phase portraits of θ, p, ξ"
            }
            Tab::Compare => {
                "Two to four samplers on the same target, seed and gradient noise, in lockstep"
            }
            Tab::Mlp => "Thousands of small networks on 2-D classification data",
            Tab::Training => {
                "ResNet++ on CIFAR-10 or Fashion-MNIST with ATMC or SGD, in the background"
            }
        }
    }

    fn index(self) -> usize {
        Tab::ALL.iter().position(|&t| t == self).expect("listed")
    }

    /// The tab that shows a kind of preset.
    pub fn of(preset: &AnyPreset) -> Tab {
        match preset {
            AnyPreset::Toy(_) => Tab::Posterior,
            AnyPreset::Comparison(_) => Tab::Compare,
            AnyPreset::Mlp(_) => Tab::Mlp,
        }
    }

    /// The view of this tab on its default preset, paused.
    fn create(self, ctx: &egui::Context, backend: BackendChoice) -> Box<dyn View> {
        match self {
            Tab::Posterior => Box::new(posterior::PosteriorView::new(
                ctx,
                Preset::default_preset(),
                backend,
                false,
            )),
            Tab::Compare => Box::new(compare::CompareView::new(
                ctx,
                Comparison::default_comparison(),
                backend,
                false,
            )),
            Tab::Mlp => Box::new(mlp::MlpView::new(
                ctx,
                MlpPreset::default_preset(),
                backend,
                false,
            )),
            Tab::Training => Box::new(training::TrainingView::new(ctx)),
        }
    }
}

/// The app's state: the views (created when first shown) and what the shell itself shows.
pub struct AtmcApp {
    views: Vec<Option<Box<dyn View>>>,
    /// The tab shown (the others are paused).
    pub tab: Tab,
    backend: BackendChoice,
    shell: Shell,
    pending_screenshot: Option<ScreenshotRequest>,
    screenshot_inbox: std::sync::Arc<std::sync::Mutex<Option<std::sync::Arc<egui::ColorImage>>>>,
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

/// Writes a text file, naming it in the error.
fn write_file(path: &std::path::Path, contents: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

impl AtmcApp {
    /// The app on either kind of preset, with the engines on `backend`, running or paused.
    /// The preset's tab is shown; the other tabs start when first opened.
    pub fn new(
        ctx: &egui::Context,
        preset: impl Into<AnyPreset>,
        backend: BackendChoice,
        playing: bool,
    ) -> Self {
        fonts::install_fonts(ctx);
        let preset = preset.into();
        let tab = Tab::of(&preset);
        let view: Box<dyn View> = match preset {
            AnyPreset::Toy(p) => Box::new(posterior::PosteriorView::new(ctx, p, backend, playing)),
            AnyPreset::Mlp(p) => Box::new(mlp::MlpView::new(ctx, p, backend, playing)),
            AnyPreset::Comparison(p) => {
                Box::new(compare::CompareView::new(ctx, p, backend, playing))
            }
        };
        let mut views: Vec<Option<Box<dyn View>>> = Tab::ALL.iter().map(|_| None).collect();
        views[tab.index()] = Some(view);
        Self {
            views,
            tab,
            backend,
            shell: Shell::default(),
            pending_screenshot: None,
            screenshot_inbox: Default::default(),
            frame_time: 0.0,
            reproducible: false,
        }
    }

    /// The view of `tab`, created (paused) when it does not exist yet.
    pub fn view_mut(&mut self, ctx: &egui::Context, tab: Tab) -> &mut dyn View {
        let backend = self.backend;
        self.views[tab.index()]
            .get_or_insert_with(|| tab.create(ctx, backend))
            .as_mut()
    }

    /// The view of `tab`, if it has been opened.
    pub fn view(&self, tab: Tab) -> Option<&dyn View> {
        self.views[tab.index()].as_deref()
    }

    /// The view shown.
    pub fn active(&self) -> &dyn View {
        self.view(self.tab).expect("the shown view exists")
    }

    /// The view shown, to drive it (tests and tools).
    pub fn active_view_mut(&mut self) -> &mut dyn View {
        self.active_mut()
    }

    fn active_mut(&mut self) -> &mut dyn View {
        self.views[self.tab.index()]
            .as_deref_mut()
            .expect("the shown view exists")
    }

    /// A view by its type, if it has been opened (tests and tools).
    pub fn get<V: View>(&self) -> Option<&V> {
        self.views
            .iter()
            .flatten()
            .find_map(|v| v.as_any().downcast_ref::<V>())
    }

    /// A view by its type, if it has been opened (tests and tools).
    pub fn get_mut<V: View>(&mut self) -> Option<&mut V> {
        self.views
            .iter_mut()
            .flatten()
            .find_map(|v| v.as_any_mut().downcast_mut::<V>())
    }

    /// The 2-D view (opened on demand).
    pub fn posterior(&mut self, ctx: &egui::Context) -> &mut posterior::PosteriorView {
        self.view_mut(ctx, Tab::Posterior)
            .as_any_mut()
            .downcast_mut()
            .expect("the 2-D tab holds the 2-D view")
    }

    /// Shows a tab and pauses the one hidden, so that they do not share the cores.
    pub fn switch_to(&mut self, ctx: &egui::Context, tab: Tab) {
        if tab == self.tab {
            return;
        }
        self.active_mut().set_visible(false);
        self.view_mut(ctx, tab).set_visible(true);
        self.tab = tab;
    }

    /// Loads either kind of preset into its view and shows it.
    pub fn load_any(&mut self, ctx: &egui::Context, preset: AnyPreset) {
        let tab = Tab::of(&preset);
        self.switch_to(ctx, tab);
        if !self.view_mut(ctx, tab).load(preset) {
            self.shell.status = Some(Status::error("this view cannot load that preset"));
        }
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
        self.active_mut().refresh();
        if ui.ctx().input(|i| i.key_pressed(egui::Key::Space)) && !ui.ctx().text_edit_focused() {
            self.active_mut().transport(Transport::TogglePlay);
        }
        // Panels leave their background to the window's clear colour (the same colour):
        // a software rasteriser spends most of a frame filling full-window rectangles.
        let style = ui.style().clone();
        let bar = egui::Frame::side_top_panel(&style).fill(Color32::TRANSPARENT);
        egui::Panel::top("menu")
            .frame(bar)
            .show(ui, |ui| self.menu_bar(ui));
        egui::Panel::bottom("status")
            .frame(bar)
            .show(ui, |ui| self.status_bar(ui));
        let tab = self.tab;
        let Some(view) = self.views[tab.index()].as_deref_mut() else {
            return;
        };
        let shell = &mut self.shell;
        egui::Panel::left("controls")
            .frame(bar)
            .exact_size(CONTROLS_WIDTH)
            .resizable(false)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| view.controls(ui, shell));
            });
        egui::CentralPanel::default()
            .frame(egui::Frame::central_panel(&style).fill(Color32::TRANSPARENT))
            .show(ui, |ui| view.central(ui, shell));
    }

    fn menu_bar(&mut self, ui: &mut egui::Ui) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("Presets", |ui| {
                for (name, text) in SHIPPED {
                    if let Ok(p) = AnyPreset::parse(text, name)
                        && ui
                            .button(format!("{name}: {}", p.name()))
                            .on_hover_text(p.description())
                            .clicked()
                    {
                        ui.close();
                        self.load_any(ui.ctx(), p);
                    }
                }
            });
            ui.menu_button("File", |ui| self.file_menu(ui));
            ui.separator();
            let mut tab = self.tab;
            for t in Tab::ALL {
                ui.selectable_value(&mut tab, t, t.label())
                    .on_hover_text(t.hover());
            }
            self.switch_to(ui.ctx(), tab);
        });
    }

    fn file_menu(&mut self, ui: &mut egui::Ui) {
        if ui.button("Open preset…").clicked() {
            ui.close();
            self.open_preset_dialog(ui.ctx());
        }
        let preset = self.active().preset();
        if ui
            .add_enabled(preset.is_some(), egui::Button::new("Save preset…"))
            .clicked()
        {
            ui.close();
            if let Some(p) = preset {
                self.save_preset_dialog(&p);
            }
        }
        ui.separator();
        if ui.button("Export time series (CSV)…").clicked() {
            ui.close();
            self.export_csv_dialog();
        }
        ui.menu_button("Export PNG", |ui| {
            let mut panels: Vec<(String, Option<usize>)> = vec![("window".into(), None)];
            panels.extend(
                self.active()
                    .panels()
                    .into_iter()
                    .enumerate()
                    .map(|(k, (label, _))| (label, Some(k))),
            );
            for (label, panel) in panels {
                for scale in [1, 2, 3] {
                    if ui.button(format!("{label} at {scale}×…")).clicked() {
                        ui.close();
                        self.export_png_dialog(ui.ctx(), panel, scale);
                    }
                }
            }
        });
    }

    fn status_bar(&self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            if let Some(view) = self.view(self.tab) {
                ui.label(RichText::new(view.status()).small());
                ui.separator();
            }
            // A training run goes on in the background: say so from every tab.
            if self.tab != Tab::Training
                && let Some(t) = self
                    .view(Tab::Training)
                    .and_then(|v| v.as_any().downcast_ref::<training::TrainingView>())
            {
                let text = t.session().with_snapshot(|s| {
                    (s.status != training::session::TrainStatus::Idle)
                        .then(|| training::TrainingView::status_text(s))
                });
                if let Some(text) = text {
                    ui.label(RichText::new(text).small());
                    ui.separator();
                }
            }
            if self.frame_time > 0.0 && !self.reproducible {
                ui.label(
                    RichText::new(format!("UI {:.0} ms/frame", 1e3 * self.frame_time)).small(),
                );
                ui.separator();
            }
            if let Some(status) = &self.shell.status {
                let color = if status.error {
                    Color32::from_rgb(255, 110, 90)
                } else {
                    Color32::from_rgb(140, 220, 140)
                };
                ui.label(RichText::new(&status.text).small().color(color));
            }
        });
    }

    /// Hides timing-dependent figures (frame time) so offscreen pictures are reproducible.
    pub fn set_reproducible(&mut self, on: bool) {
        self.reproducible = on;
        for view in self.views.iter_mut().flatten() {
            view.set_reproducible(on);
        }
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
                self.shell.status = Some(Status::ok(format!("loaded {}", path.display())));
                self.load_any(ctx, p);
            }
            Err(e) => self.shell.status = Some(Status::error(e.to_string())),
        }
    }

    fn save_preset_dialog(&mut self, preset: &AnyPreset) {
        let Some(path) = rfd::FileDialog::new()
            .add_filter("atmc-lab preset", &["ron"])
            .set_file_name("my-preset.ron")
            .save_file()
        else {
            return;
        };
        self.shell.status = Some(Status::written(&path, write_file(&path, &preset.to_ron())));
    }

    fn export_csv_dialog(&mut self) {
        let Some(path) = rfd::FileDialog::new()
            .add_filter("CSV", &["csv"])
            .set_file_name("atmc-lab-series.csv")
            .save_file()
        else {
            return;
        };
        let csv = self.active().series_csv().unwrap_or_default();
        self.shell.status = Some(Status::written(&path, write_file(&path, &csv)));
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
            .and_then(|k| self.active().panels().get(k).map(|(_, r)| *r));
        let result = screenshot::save_color_image(
            &image,
            crop,
            ctx.pixels_per_point(),
            request.scale,
            &request.path,
        );
        self.shell.status = Some(Status::written(&request.path, result));
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
    let options = |renderer| eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("atmc-lab")
            .with_inner_size([1280.0, 720.0])
            .with_min_inner_size([960.0, 600.0]),
        renderer,
        ..Default::default()
    };
    let make = |preset: AnyPreset| -> eframe::AppCreator<'static> {
        Box::new(move |cc| {
            cc.egui_ctx.set_visuals(egui::Visuals::dark());
            Ok(Box::new(AtmcApp::new(&cc.egui_ctx, preset, backend, true)))
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
