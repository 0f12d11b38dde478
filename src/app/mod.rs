//! The desktop app. [`AtmcApp`] is the shell: the menu bar with the tabs, the status bar,
//! file dialogs and picture export. Each tab is one [`View`] — a panel type that fills the
//! control panel and the central area and owns its worker thread. Panels only draw and edit
//! presets; the engines run in the workers and `diagnostics` computes what is drawn.

pub mod axes;
pub mod classroom;
pub mod colormap;
pub mod compare;
pub mod controls;
pub mod files;
pub mod fonts;
pub mod frame_clock;
pub mod mlp;
pub mod overlay;
pub mod plots;
pub mod portrait;
pub mod posterior;
pub mod record;
pub mod screenshot;
pub mod simulated;
pub mod sweep_view;
pub mod texture;
pub mod thermo_view;
pub mod training;
pub mod view;
pub mod worker;

use crate::engine::BackendChoice;
use crate::preset::story::SHIPPED_LECTURES;
use crate::preset::{AnyPreset, Comparison, Lecture, MlpPreset, Preset, SHIPPED};
use classroom::{Classroom, KeyCommand, LectureState, LessonRequest};
use egui::{Color32, RichText};
use files::{FileRequest, PickKind};
use view::{Action, Shell, Status, View};

// Ids of the shell's own file requests (see `Shell::pick`).
const OPEN_PRESET: &str = "open preset";
const OPEN_SWEEP: &str = "open sweep";
const SAVE_PRESET: &str = "save preset";
const EXPORT_CSV: &str = "export csv";
const EXPORT_PNG: &str = "export png";
const RECORD: &str = "record";

/// Where the S key puts its screenshots.
pub const SCREENSHOT_FOLDER: &str = "atmc-lab-screenshots";

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
    /// A statistic of a parameter sweep over its grid ([`sweep_view::SweepView`]).
    Sweep,
    /// The free energy of SGD over learning rates ([`thermo_view::ThermoView`]).
    Thermo,
}

impl Tab {
    /// Every tab, in menu order.
    pub const ALL: [Tab; 6] = [
        Tab::Posterior,
        Tab::Compare,
        Tab::Mlp,
        Tab::Training,
        Tab::Sweep,
        Tab::Thermo,
    ];

    /// The label in the menu bar.
    pub fn label(self) -> &'static str {
        match self {
            Tab::Posterior => "2-D posteriors",
            Tab::Compare => "Side by side",
            Tab::Mlp => "Bayesian MLPs",
            Tab::Training => "ResNet++ training",
            Tab::Sweep => "Sweeps",
            Tab::Thermo => "Thermodynamics",
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
            Tab::Sweep => {
                "A statistic over a grid of parameter values, one run per point; click a \
                 point to open it live"
            }
            Tab::Thermo => {
                "SGD as free-energy minimisation: U, S and two temperatures over learning \
                 rates, the Gibbs test, the sphere toy"
            }
        }
    }

    fn index(self) -> usize {
        Tab::ALL.iter().position(|&t| t == self).expect("listed")
    }

    /// The tab with this name (its label, lower case, or a short name: posterior, compare,
    /// mlp, training, sweeps, thermo).
    pub fn named(name: &str) -> Option<Tab> {
        let name = name.to_lowercase();
        Tab::ALL.into_iter().find(|t| {
            t.label().to_lowercase() == name
                || match t {
                    Tab::Posterior => name == "posterior",
                    Tab::Compare => name == "compare",
                    Tab::Mlp => name == "mlp",
                    Tab::Training => name == "training",
                    Tab::Sweep => name == "sweep",
                    Tab::Thermo => name == "thermo",
                }
        })
    }

    /// The tab that shows a kind of preset.
    pub fn of(preset: &AnyPreset) -> Tab {
        match preset {
            AnyPreset::Toy(_) => Tab::Posterior,
            AnyPreset::Comparison(_) => Tab::Compare,
            AnyPreset::Mlp(_) => Tab::Mlp,
            AnyPreset::Sphere(_) => Tab::Thermo,
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
            Tab::Sweep => Box::new(sweep_view::SweepView::new(backend)),
            Tab::Thermo => Box::new(thermo_view::ThermoView::new(backend)),
        }
    }
}

/// What the app opens on: a preset in its view, or a sweep in the Sweeps tab.
#[derive(Clone, Debug)]
pub enum Opening {
    /// A preset of any kind, shown in its view.
    Preset(Box<AnyPreset>),
    /// A sweep's results (`.jsonl`) or a sweep file (`.ron`, run in the background).
    Sweep(std::path::PathBuf),
    /// A preset in a chosen tab (a 2-D preset in the thermodynamics view).
    InTab(Tab, Box<AnyPreset>),
}

impl From<AnyPreset> for Opening {
    fn from(preset: AnyPreset) -> Self {
        Opening::Preset(Box::new(preset))
    }
}

impl From<Preset> for Opening {
    fn from(preset: Preset) -> Self {
        Opening::Preset(Box::new(preset.into()))
    }
}

impl From<MlpPreset> for Opening {
    fn from(preset: MlpPreset) -> Self {
        Opening::Preset(Box::new(preset.into()))
    }
}

impl From<Comparison> for Opening {
    fn from(preset: Comparison) -> Self {
        Opening::Preset(Box::new(preset.into()))
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
    /// `atmc-lab app --frame-stats`: the window's frame rate, measured.
    pub frame_clock: Option<frame_clock::FrameClock>,
    /// Offscreen pictures: leave out what depends on timing.
    reproducible: bool,
    /// The lesson panel, the keys overlay and presentation mode.
    pub classroom: Classroom,
    /// The control panel is shown (presentation mode may hide it).
    pub show_controls: bool,
    /// Screenshots taken with the S key so far (for their file names).
    shots: u32,
    recording: Option<LiveRecording>,
    writing: Option<Writing>,
    /// The panel and scale of an Export PNG waiting for its path.
    waiting_png: Option<(Option<usize>, u32)>,
    /// The panel of a recording waiting for its path.
    waiting_record: Option<Option<usize>>,
}

/// A recording in progress: a frame each time the view's step changes.
struct LiveRecording {
    output: record::Output,
    panel: Option<usize>,
    frames: Vec<image::RgbaImage>,
    last_step: Option<u32>,
    inbox: std::sync::Arc<std::sync::Mutex<Option<std::sync::Arc<egui::ColorImage>>>>,
    waiting: bool,
}

/// A finished recording being written on its own thread.
struct Writing {
    thread: std::thread::JoinHandle<anyhow::Result<()>>,
    progress: record::Progress,
    total: usize,
    path: std::path::PathBuf,
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
                // The text wraps in a column beside the button: the banner never pushes the
                // panels below it off the screen, however narrow the window.
                let button = 150.0;
                let text_width = (ui.available_width() - button).max(120.0);
                ui.allocate_ui_with_layout(
                    egui::vec2(text_width, 0.0),
                    egui::Layout::top_down(egui::Align::LEFT),
                    |ui| {
                        ui.set_max_width(text_width);
                        ui.add(
                            egui::Label::new(RichText::new(text).color(Color32::WHITE).strong())
                                .wrap(),
                        );
                    },
                );
                ui.button(reset_label).clicked()
            })
            .inner
        })
        .inner
}

/// Whether a file is a sweep's results (`.jsonl`) or a sweep file (`Sweep(...)` RON) rather
/// than a preset.
pub fn is_sweep_path(path: &std::path::Path) -> bool {
    match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl") => true,
        Some("ron") => std::fs::read_to_string(path)
            .is_ok_and(|text| crate::preset::sweep_file::is_sweep_text(&text)),
        _ => false,
    }
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
        let preset_story = preset
            .story()
            .map(|s| (preset.name().to_owned(), s.clone()));
        let view: Box<dyn View> = match preset {
            AnyPreset::Toy(p) => Box::new(posterior::PosteriorView::new(ctx, p, backend, playing)),
            AnyPreset::Mlp(p) => Box::new(mlp::MlpView::new(ctx, p, backend, playing)),
            AnyPreset::Comparison(p) => {
                Box::new(compare::CompareView::new(ctx, p, backend, playing))
            }
            sphere @ AnyPreset::Sphere(_) => {
                let mut view = thermo_view::ThermoView::new(backend);
                view.load(sphere);
                Box::new(view)
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
            frame_clock: None,
            reproducible: false,
            classroom: Classroom::default(),
            show_controls: true,
            shots: 0,
            recording: None,
            writing: None,
            waiting_png: None,
            waiting_record: None,
        }
        .with_lesson_of(&preset_story)
    }

    /// The app on a preset or a sweep ([`Opening`]); a sweep opens beside the default
    /// preset's paused view.
    pub fn open(
        ctx: &egui::Context,
        opening: Opening,
        backend: BackendChoice,
        playing: bool,
    ) -> Self {
        match opening {
            Opening::Preset(preset) => Self::new(ctx, *preset, backend, playing),
            Opening::Sweep(path) => {
                let mut app = Self::new(ctx, Preset::default_preset(), backend, false);
                app.open_sweep(ctx, &path);
                app
            }
            Opening::InTab(tab, preset) => {
                let mut app = Self::new(ctx, Preset::default_preset(), backend, false);
                app.switch_to(ctx, tab);
                if !app.view_mut(ctx, tab).load(*preset) {
                    app.shell.status = Some(Status::error("this view cannot load that preset"));
                }
                app
            }
        }
    }

    /// Shows the story of a preset just loaded in the lesson panel (or hides the panel when
    /// the preset has none and no lecture runs).
    fn with_lesson_of(mut self, story: &Option<(String, crate::preset::Story)>) -> Self {
        self.classroom.lesson = story.clone();
        self
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

    /// Loads any kind of preset into its view and shows it, with its story in the lesson
    /// panel.
    pub fn load_any(&mut self, ctx: &egui::Context, preset: AnyPreset) {
        let tab = Tab::of(&preset);
        self.classroom.lesson = preset
            .story()
            .map(|s| (preset.name().to_owned(), s.clone()));
        self.switch_to(ctx, tab);
        if !self.view_mut(ctx, tab).load(preset) {
            self.shell.status = Some(Status::error("this view cannot load that preset"));
        }
    }

    /// Opens a sweep's results (`.jsonl`) or runs a sweep file (`.ron`) in the Sweeps tab.
    pub fn open_sweep(&mut self, ctx: &egui::Context, path: &std::path::Path) {
        self.switch_to(ctx, Tab::Sweep);
        let view = self
            .view_mut(ctx, Tab::Sweep)
            .as_any_mut()
            .downcast_mut::<sweep_view::SweepView>()
            .expect("the Sweeps tab holds the sweep view");
        self.shell.status = Some(match view.open(path) {
            Ok(()) => Status::ok(format!("opened {}", path.display())),
            Err(e) => Status::error(e),
        });
    }

    /// Opens a file (dropped on the window, or picked): sweep results and sweep files in the
    /// Sweeps tab, presets in their view.
    pub fn open_file(&mut self, ctx: &egui::Context, path: &std::path::Path) {
        if is_sweep_path(path) {
            self.open_sweep(ctx, path);
            return;
        }
        match AnyPreset::load(&path.to_string_lossy()) {
            Ok(p) => {
                self.shell.status = Some(Status::ok(format!("loaded {}", path.display())));
                self.open_and_play(ctx, p);
            }
            Err(e) => self.shell.status = Some(Status::error(e.to_string())),
        }
    }

    /// Replaces the file dialog (tests use a stand-in for a desktop without one).
    pub fn set_file_dialog(&mut self, dialog: files::Dialog) {
        self.shell.dialog = dialog;
    }

    /// The status-bar message.
    pub fn status_message(&self) -> Option<&Status> {
        self.shell.status.as_ref()
    }

    /// The in-app path prompt, while one is open.
    pub fn path_prompt_mut(&mut self) -> Option<&mut files::Prompt> {
        self.shell.prompt.as_mut()
    }

    /// File → Save preset…: the dialog, or the in-app prompt where there is none.
    pub fn ask_save_preset(&mut self) {
        self.save_preset_dialog();
    }

    /// Loads a preset chosen from the Presets menu or a file, and runs it: every kind opens
    /// running, as lessons do (a sphere preset waits for its sweep to be started: that is
    /// minutes of work, not an animation).
    pub fn open_and_play(&mut self, ctx: &egui::Context, preset: AnyPreset) {
        let runs = !matches!(preset, AnyPreset::Sphere(_));
        self.load_any(ctx, preset);
        if runs {
            self.active_mut().act(Action::Play);
        }
    }

    /// Starts a lecture at its first lesson.
    pub fn start_lecture(&mut self, ctx: &egui::Context, lecture: Lecture) {
        self.classroom.lecture = Some(LectureState { lecture, step: 0 });
        self.go_to_lesson(ctx, 0);
    }

    /// Shows lesson `k` of the lecture (ignored past its end): its preset loads and runs.
    pub fn go_to_lesson(&mut self, ctx: &egui::Context, k: usize) {
        let Some(l) = &mut self.classroom.lecture else {
            return;
        };
        let Some(name) = l.lecture.steps.get(k).cloned() else {
            return;
        };
        l.step = k;
        match AnyPreset::load(&name) {
            Ok(p) => {
                self.load_any(ctx, p);
                self.active_mut().act(Action::Play);
            }
            Err(e) => self.shell.status = Some(Status::error(e.to_string())),
        }
    }

    /// Carries out the keys pressed this frame.
    fn handle_keys(&mut self, ctx: &egui::Context) {
        for command in classroom::key_commands(ctx) {
            match command {
                KeyCommand::TogglePlay => self.active_mut().act(Action::TogglePlay),
                KeyCommand::Step => self.active_mut().act(Action::Step),
                KeyCommand::Reset => self.active_mut().act(Action::Reset),
                KeyCommand::FlipSign => self.active_mut().act(Action::FlipSign),
                KeyCommand::Faster => self.active_mut().act(Action::Faster),
                KeyCommand::Slower => self.active_mut().act(Action::Slower),
                KeyCommand::Screenshot => self.quick_screenshot(ctx),
                KeyCommand::ToggleHelp => self.classroom.show_keys ^= true,
                KeyCommand::Lesson(k) => self.go_to_lesson(ctx, k),
                KeyCommand::FullScreen => self.toggle_full_screen(ctx),
                KeyCommand::Escape => {
                    self.classroom.show_keys = false;
                    ctx.send_viewport_cmd(egui::ViewportCommand::Fullscreen(false));
                }
            }
        }
        // A preset copied as text and pasted with Ctrl+V (outside any text field).
        if !ctx.egui_wants_keyboard_input() {
            let pasted = ctx.input(|i| {
                i.events.iter().find_map(|e| match e {
                    egui::Event::Paste(text) => Some(text.clone()),
                    _ => None,
                })
            });
            if let Some(text) = pasted {
                self.paste_preset(ctx, &text);
            }
        }
        let dropped: Vec<std::path::PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_owned())
                .collect()
        });
        if let Some(path) = dropped.last() {
            self.open_file(ctx, path);
        }
    }

    /// Applies a preset given as RON text (the clipboard's), or says why it cannot.
    pub fn paste_preset(&mut self, ctx: &egui::Context, text: &str) {
        match AnyPreset::parse(text, "pasted text") {
            Ok(p) => {
                self.shell.status = Some(Status::ok(format!("pasted preset: {}", p.name())));
                self.load_any(ctx, p);
            }
            Err(e) => self.shell.status = Some(Status::error(e.to_string())),
        }
    }

    /// Puts the shown view's preset on the clipboard as RON text.
    pub fn copy_preset(&mut self, ctx: &egui::Context) {
        match self.active().preset() {
            Some(p) => {
                ctx.copy_text(p.to_ron());
                self.shell.status = Some(Status::ok(format!(
                    "copied the preset \"{}\" to the clipboard as text",
                    p.name()
                )));
            }
            None => {
                self.shell.status = Some(Status::error("this view has no preset to copy"));
            }
        }
    }

    /// Starts recording the window (`panel` None) or one of the view's panels to `path`
    /// (`.gif`: an animated GIF; otherwise a folder of PNG frames), after checking that it can
    /// be written.
    pub fn start_recording(&mut self, path: std::path::PathBuf, panel: Option<usize>) {
        let output = record::Output::for_path(&path, 100);
        if let Err(e) = output.check() {
            self.shell.status = Some(Status::error(format!("{e:#}")));
            return;
        }
        self.recording = Some(LiveRecording {
            output,
            panel,
            frames: Vec::new(),
            last_step: None,
            inbox: Default::default(),
            waiting: false,
        });
        self.shell.status = Some(Status::ok(format!("recording to {}", path.display())));
    }

    /// Stops recording and writes the frames on a thread.
    pub fn stop_recording(&mut self) {
        let Some(r) = self.recording.take() else {
            return;
        };
        if r.frames.is_empty() {
            self.shell.status = Some(Status::error(
                "nothing recorded: the chains did not move (press play while recording)",
            ));
            return;
        }
        let progress = record::Progress::default();
        let total = r.frames.len();
        let path = r.output.path().to_owned();
        let worker_progress = progress.clone();
        let thread =
            std::thread::spawn(move || record::write(&r.frames, &r.output, &worker_progress));
        self.writing = Some(Writing {
            thread,
            progress,
            total,
            path,
        });
    }

    /// Whether a recording is running, with its frame count.
    pub fn recording_frames(&self) -> Option<usize> {
        self.recording.as_ref().map(|r| r.frames.len())
    }

    /// Takes a frame of the recording when the view has moved on.
    fn record_frame(&mut self, ctx: &egui::Context) {
        let step = self.active().step();
        let crop = self
            .recording
            .as_ref()
            .and_then(|r| r.panel)
            .and_then(|k| self.active().panels().get(k).map(|(_, rect)| *rect));
        let Some(r) = &mut self.recording else {
            return;
        };
        let arrived = r.inbox.lock().expect("record inbox").take();
        if let Some(image) = arrived {
            r.waiting = false;
            let [w, h] = image.size;
            let rgba: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
            if let Some(mut frame) = image::RgbaImage::from_raw(w as u32, h as u32, rgba) {
                if let Some(rect) = crop {
                    let ppp = ctx.pixels_per_point();
                    let x = ((rect.min.x * ppp).max(0.0) as u32).min(frame.width());
                    let y = ((rect.min.y * ppp).max(0.0) as u32).min(frame.height());
                    let cw = ((rect.width() * ppp) as u32).min(frame.width() - x).max(1);
                    let ch = ((rect.height() * ppp) as u32)
                        .min(frame.height() - y)
                        .max(1);
                    frame = image::imageops::crop_imm(&frame, x, y, cw, ch).to_image();
                }
                // A resized window changes the frame size: keep the first size.
                if r.frames
                    .first()
                    .is_none_or(|f| f.dimensions() == frame.dimensions())
                {
                    r.frames.push(frame);
                }
            }
            if r.frames.len() >= record::MAX_FRAMES {
                self.stop_recording();
                return;
            }
        }
        if !r.waiting && r.last_step != Some(step) {
            r.last_step = Some(step);
            r.waiting = true;
            let inbox = r.inbox.clone();
            let repaint = ctx.clone();
            ctx.request_screenshot(move |image| {
                *inbox.lock().expect("record inbox") = Some(image);
                repaint.request_repaint();
            });
        }
    }

    /// Reports a finished writer.
    fn poll_writer(&mut self) {
        if self
            .writing
            .as_ref()
            .is_some_and(|w| w.thread.is_finished())
        {
            let w = self.writing.take().expect("checked");
            let result = w
                .thread
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the recording writer failed")));
            self.shell.status = Some(match result {
                Ok(()) => Status::ok(format!("wrote {} ({} frames)", w.path.display(), w.total)),
                Err(e) => Status::error(format!("{e:#}")),
            });
        }
    }

    fn toggle_full_screen(&mut self, ctx: &egui::Context) {
        let on = ctx.input(|i| i.viewport().fullscreen.unwrap_or(false));
        ctx.send_viewport_cmd(egui::ViewportCommand::Fullscreen(!on));
    }

    /// A screenshot of the window into [`SCREENSHOT_FOLDER`], no dialog (the S key).
    fn quick_screenshot(&mut self, ctx: &egui::Context) {
        self.shots += 1;
        let name = format!(
            "{}-step{}-{}.png",
            self.tab.label().replace([' ', '+', '-'], "").to_lowercase(),
            self.active().step(),
            self.shots
        );
        let folder = std::path::PathBuf::from(SCREENSHOT_FOLDER);
        if let Err(e) = std::fs::create_dir_all(&folder) {
            self.shell.status = Some(Status::error(format!(
                "cannot create {}: {e}",
                folder.display()
            )));
            return;
        }
        self.request_window_picture(ctx, folder.join(name), None, 1);
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
        self.record_frame(ui.ctx());
        self.poll_writer();
        self.handle_keys(ui.ctx());
        self.path_prompt(ui.ctx());
        // Presentation mode scales everything for a projector; at a desk, a large window
        // (1920×1080) gets somewhat larger type too, rather than small text and empty space.
        let height = ui.ctx().content_rect().height() * ui.ctx().zoom_factor();
        let zoom = if self.classroom.presentation {
            classroom::presentation_zoom(height)
        } else {
            classroom::desk_zoom(height)
        };
        if (ui.ctx().zoom_factor() - zoom).abs() > 0.01 {
            ui.ctx().set_zoom_factor(zoom);
        }
        if self.classroom.show_keys {
            self.classroom.show_keys = Classroom::keys_overlay(ui.ctx());
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
        let mut request = None;
        if self.classroom.panel_shown() {
            let classroom = &self.classroom;
            egui::Panel::right("lesson")
                .frame(bar)
                .resizable(false)
                .show(ui, |ui| {
                    egui::ScrollArea::vertical().show(ui, |ui| request = classroom.panel(ui));
                });
        }
        if self.show_controls {
            egui::Panel::left("controls")
                .frame(bar)
                .exact_size(CONTROLS_WIDTH)
                .resizable(false)
                .show(ui, |ui| {
                    egui::ScrollArea::vertical().show(ui, |ui| view.controls(ui, shell));
                });
        }
        egui::CentralPanel::default()
            .frame(egui::Frame::central_panel(&style).fill(Color32::TRANSPARENT))
            .show(ui, |ui| view.central(ui, shell));
        // A view asked for a preset to be opened live (a sweep's point).
        if let Some(preset) = self.shell.open.take() {
            self.load_any(ui.ctx(), preset);
        }
        match request {
            Some(LessonRequest::Go(k)) => self.go_to_lesson(ui.ctx(), k),
            Some(LessonRequest::Close) => {
                self.classroom.lecture = None;
                self.classroom.lesson = None;
            }
            None => {}
        }
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
                        self.open_and_play(ui.ctx(), p);
                    }
                }
            });
            ui.menu_button("Lectures", |ui| {
                for (name, text) in SHIPPED_LECTURES {
                    match Lecture::parse(text, name) {
                        Ok(l) => {
                            if ui
                                .button(format!("{} ({} lessons)", l.name, l.steps.len()))
                                .on_hover_text(&l.description)
                                .clicked()
                            {
                                ui.close();
                                self.start_lecture(ui.ctx(), l);
                            }
                        }
                        Err(e) => {
                            ui.label(format!("{name}: {e}"));
                        }
                    }
                }
            });
            ui.menu_button("File", |ui| self.file_menu(ui));
            ui.menu_button("Edit", |ui| {
                if ui.button("Copy preset as text").clicked() {
                    ui.close();
                    self.copy_preset(ui.ctx());
                }
                if ui
                    .button("Paste preset")
                    .on_hover_text("Ctrl+V anywhere outside a text field does the same")
                    .clicked()
                {
                    ui.close();
                    match arboard::Clipboard::new().and_then(|mut c| c.get_text()) {
                        Ok(text) => self.paste_preset(ui.ctx(), &text),
                        Err(e) => {
                            self.shell.status = Some(Status::error(format!(
                                "cannot read the clipboard ({e}); press Ctrl+V instead"
                            )))
                        }
                    }
                }
            });
            ui.menu_button("View", |ui| self.view_menu(ui));
            ui.menu_button("Help", |ui| self.help_menu(ui));
            ui.separator();
            let mut tab = self.tab;
            for t in Tab::ALL {
                ui.selectable_value(&mut tab, t, t.label())
                    .on_hover_text(t.hover());
            }
            self.switch_to(ui.ctx(), tab);
        });
    }

    fn help_menu(&mut self, ui: &mut egui::Ui) {
        ui.set_max_width(460.0);
        ui.label(RichText::new(format!("atmc-lab {}", env!("CARGO_PKG_VERSION"))).strong());
        ui.label(
            "Stochastic-gradient MCMC made visible: ATMC as corrected and as printed, its \
             baselines, Bayesian MLPs, ResNet++, sweeps and the thermodynamics of SGD.",
        );
        ui.separator();
        ui.label(RichText::new("The views").strong());
        for t in Tab::ALL {
            ui.label(format!("{}: {}", t.label(), t.hover()));
        }
        ui.separator();
        if ui.button("Keys (?)").clicked() {
            ui.close();
            self.classroom.show_keys = true;
        }
        ui.separator();
        ui.label(RichText::new("Where things go").strong());
        let here = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_else(|_| ".".into());
        ui.label(format!(
            "S-key screenshots: {here}/{SCREENSHOT_FOLDER}/\nSweeps run here: \
             {here}/{}/\nExports and saved presets: where you choose (File menu).\n\
             Shipped presets are built in (Presets menu); their files are in presets/ of \
             the source, with the lectures and sweeps.",
            sweep_view::SWEEP_FOLDER
        ));
        ui.label(
            "The mathematics: docs/MATH.md; the code: ARCHITECTURE.md; the command line: \
             atmc-lab --help.",
        );
    }

    fn view_menu(&mut self, ui: &mut egui::Ui) {
        let c = &mut self.classroom;
        let mut a = classroom::Appearance {
            presentation: c.presentation,
            light: c.light,
        };
        let mut changed = ui
            .checkbox(&mut a.presentation, "Presentation mode")
            .on_hover_text("Large type and thick lines for a projector")
            .changed();
        changed |= ui.checkbox(&mut a.light, "Light theme").changed();
        if changed {
            self.set_appearance(ui.ctx(), a);
        }
        ui.checkbox(&mut self.show_controls, "Control panel");
        if ui.button("Full screen (F11)").clicked() {
            ui.close();
            self.toggle_full_screen(ui.ctx());
        }
        if ui.button("Keys (?)").clicked() {
            ui.close();
            self.classroom.show_keys = true;
        }
    }

    fn file_menu(&mut self, ui: &mut egui::Ui) {
        if ui.button("Open preset…").clicked() {
            ui.close();
            self.open_preset_dialog(ui.ctx());
        }
        if ui
            .button("Open sweep…")
            .on_hover_text("merged.jsonl from `atmc-lab sweep`, or a sweep file to run here")
            .clicked()
        {
            ui.close();
            self.open_sweep_dialog(ui.ctx());
        }
        let preset = self.active().preset();
        if ui
            .add_enabled(preset.is_some(), egui::Button::new("Save preset…"))
            .clicked()
        {
            ui.close();
            self.save_preset_dialog();
        }
        ui.separator();
        if ui.button("Export time series (CSV)…").clicked() {
            ui.close();
            self.export_csv_dialog();
        }
        match self.recording_frames() {
            Some(n) => {
                if ui
                    .button(format!("■ Stop recording ({n} frames)"))
                    .clicked()
                {
                    ui.close();
                    self.stop_recording();
                }
            }
            None => {
                ui.menu_button("Record", |ui| {
                    let mut targets: Vec<(String, Option<usize>)> =
                        vec![("the window".into(), None)];
                    targets.extend(
                        self.active()
                            .panels()
                            .into_iter()
                            .enumerate()
                            .map(|(k, (label, _))| (label, Some(k))),
                    );
                    for (label, panel) in targets {
                        if ui
                            .button(format!("{label}…"))
                            .on_hover_text(
                                "A frame each time the chains move; .gif for an animated \
                                 GIF, any other name for a folder of PNG frames",
                            )
                            .clicked()
                        {
                            ui.close();
                            self.record_dialog(panel);
                        }
                    }
                });
            }
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

    fn status_bar(&mut self, ui: &mut egui::Ui) {
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
            if let Some(r) = &self.recording {
                ui.label(
                    RichText::new(format!("● recording: {} frames", r.frames.len()))
                        .small()
                        .color(Color32::from_rgb(255, 90, 80)),
                );
            }
            if let Some(w) = &self.writing {
                let done = w.progress.done.load(std::sync::atomic::Ordering::Relaxed);
                ui.add(
                    egui::ProgressBar::new(done as f32 / w.total.max(1) as f32)
                        .desired_width(160.0)
                        .text(format!("writing {done}/{} frames", w.total)),
                );
                if ui.small_button("cancel").clicked() {
                    w.progress
                        .cancel
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
                ui.ctx()
                    .request_repaint_after(std::time::Duration::from_millis(100));
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

    /// Switches presentation mode and the theme.
    pub fn set_appearance(&mut self, ctx: &egui::Context, appearance: classroom::Appearance) {
        // Presentation leaves the room to the pictures: the control panel folds away (View →
        // Control panel brings it back).
        if appearance.presentation != self.classroom.presentation {
            self.show_controls = !appearance.presentation;
        }
        self.classroom.presentation = appearance.presentation;
        self.classroom.light = appearance.light;
        if !appearance.presentation {
            ctx.set_zoom_factor(1.0);
        }
        classroom::apply_style(ctx, &self.classroom);
    }

    /// Hides timing-dependent figures (frame time) so offscreen pictures are reproducible.
    pub fn set_reproducible(&mut self, on: bool) {
        self.reproducible = on;
        for view in self.views.iter_mut().flatten() {
            view.set_reproducible(on);
        }
    }

    fn open_preset_dialog(&mut self, ctx: &egui::Context) {
        let request = FileRequest::new("Open preset", PickKind::Open)
            .filter("atmc-lab preset", &["ron"])
            .directory("presets");
        if let Some(path) = self.shell.pick(OPEN_PRESET, request) {
            // A sweep file picked here opens in the Sweeps tab rather than failing as a preset.
            self.open_file(ctx, &path);
        }
    }

    fn open_sweep_dialog(&mut self, ctx: &egui::Context) {
        let request = FileRequest::new("Open sweep", PickKind::Open)
            .filter("sweep results or sweep file", &["jsonl", "ron"]);
        if let Some(path) = self.shell.pick(OPEN_SWEEP, request) {
            self.open_sweep(ctx, &path);
        }
    }

    fn save_preset_dialog(&mut self) {
        let request = FileRequest::new("Save preset", PickKind::Save)
            .filter("atmc-lab preset", &["ron"])
            .file_name("my-preset.ron");
        if let Some(path) = self.shell.pick(SAVE_PRESET, request) {
            self.save_preset(&path);
        }
    }

    fn save_preset(&mut self, path: &std::path::Path) {
        self.shell.status = Some(match self.active().preset() {
            Some(p) => Status::written(path, write_file(path, &p.to_ron())),
            None => Status::error("this view has no preset to save"),
        });
    }

    fn export_csv_dialog(&mut self) {
        let request = FileRequest::new("Export time series", PickKind::Save)
            .filter("CSV", &["csv"])
            .file_name("atmc-lab-series.csv");
        if let Some(path) = self.shell.pick(EXPORT_CSV, request) {
            self.export_csv(&path);
        }
    }

    fn export_csv(&mut self, path: &std::path::Path) {
        let csv = self.active().series_csv().unwrap_or_default();
        self.shell.status = Some(Status::written(path, write_file(path, &csv)));
    }

    fn export_png_dialog(&mut self, ctx: &egui::Context, panel: Option<usize>, scale: u32) {
        let request = FileRequest::new("Export PNG", PickKind::Save)
            .filter("PNG", &["png"])
            .file_name("atmc-lab.png");
        self.waiting_png = Some((panel, scale));
        if let Some(path) = self.shell.pick(EXPORT_PNG, request) {
            self.request_window_picture(ctx, path, panel, scale);
        }
    }

    fn record_dialog(&mut self, panel: Option<usize>) {
        let request = FileRequest::new("Record", PickKind::Save)
            .filter("GIF", &["gif"])
            .file_name("atmc-lab.gif");
        self.waiting_record = Some(panel);
        if let Some(path) = self.shell.pick(RECORD, request) {
            self.start_recording(path, panel);
        }
    }

    /// Draws the path prompt (while a native dialog is unavailable) and carries out what a
    /// typed path was for.
    fn path_prompt(&mut self, ctx: &egui::Context) {
        if let Some(prompt) = &mut self.shell.prompt
            && let Some(outcome) = prompt.show(ctx)
        {
            let id = prompt.id;
            self.shell.prompt = None;
            if let Some(path) = outcome {
                self.shell.answer = Some((id, path));
            }
        }
        let Some((id, _)) = &self.shell.answer else {
            return;
        };
        let id = *id;
        let path = match id {
            OPEN_PRESET | OPEN_SWEEP | SAVE_PRESET | EXPORT_CSV | EXPORT_PNG | RECORD => {
                self.shell.answer_for(id).expect("checked")
            }
            // A view's own dialog: the view takes its answer when it next draws.
            _ => return,
        };
        match id {
            OPEN_PRESET => self.open_file(ctx, &path),
            OPEN_SWEEP => self.open_sweep(ctx, &path),
            SAVE_PRESET => self.save_preset(&path),
            EXPORT_CSV => self.export_csv(&path),
            EXPORT_PNG => {
                let (panel, scale) = self.waiting_png.take().unwrap_or((None, 1));
                self.request_window_picture(ctx, path, panel, scale);
            }
            _ => {
                let panel = self.waiting_record.take().flatten();
                self.start_recording(path, panel);
            }
        }
    }

    /// Asks for a picture of the window (or of one of the view's panels) and writes it to
    /// `path` when it arrives.
    fn request_window_picture(
        &mut self,
        ctx: &egui::Context,
        path: std::path::PathBuf,
        panel: Option<usize>,
        scale: u32,
    ) {
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
        if let Some(report) = self
            .frame_clock
            .as_mut()
            .and_then(frame_clock::FrameClock::tick)
        {
            println!("{report}");
            self.frame_clock = None;
            ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
        }
        if self.frame_clock.is_some() {
            ui.ctx().request_repaint();
        }
    }

    fn clear_color(&self, visuals: &egui::Visuals) -> [f32; 4] {
        // The panels are transparent: the clear colour is their background.
        visuals.panel_fill.to_normalized_gamma_f32()
    }
}

/// Opens the desktop app on `preset`. Tries the wgpu renderer first and falls back to glow
/// (OpenGL) when it cannot start.
/// `frame_stats`: measure the frame rate for that many seconds, print it and close.
pub fn run_native(
    opening: Opening,
    backend: BackendChoice,
    frame_stats: Option<f64>,
) -> anyhow::Result<()> {
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
    let make = |opening: Opening| -> eframe::AppCreator<'static> {
        Box::new(move |cc| {
            cc.egui_ctx.set_visuals(egui::Visuals::dark());
            let mut app = AtmcApp::open(&cc.egui_ctx, opening, backend, true);
            app.frame_clock = frame_stats.map(frame_clock::FrameClock::new);
            Ok(Box::new(app))
        })
    };
    match eframe::run_native(
        "atmc-lab",
        options(eframe::Renderer::Wgpu),
        make(opening.clone()),
    ) {
        Ok(()) => Ok(()),
        Err(e) => {
            eprintln!("atmc-lab: the wgpu renderer failed ({e}); trying OpenGL");
            eframe::run_native("atmc-lab", options(eframe::Renderer::Glow), make(opening))
                .map_err(|e| anyhow::anyhow!("cannot open a window: {e}"))
        }
    }
}
