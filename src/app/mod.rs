//! The desktop app. [`AtmcApp`] is the shell: the menu bar with the tabs, the status bar,
//! file dialogs and picture export. Each tab is one [`View`] — a panel type that fills the
//! control panel and the central area and owns its worker thread. Panels only draw and edit
//! presets; the engines run in the workers and `diagnostics` computes what is drawn.
//!
//! The shell's rooms: [`tabs`] (the table of tabs), `menus` (menu and status bars),
//! `dialogs` (what each [`files::FileRequest`] does with its path) and `capture`
//! (screenshots and recordings of the window).

pub mod axes;
mod capture;
pub mod classroom;
pub mod colormap;
pub mod compare;
pub mod controls;
pub mod convergence_strip;
mod dialogs;
pub mod files;
pub mod fonts;
pub mod formula;
pub mod frame_clock;
mod menus;
pub mod mlp;
mod opening;
pub mod overlay;
pub mod palette;
pub mod plots;
pub mod portrait;
pub mod posterior;
pub mod record;
pub mod screenshot;
pub mod simulated;
pub mod sweep;
pub mod tabs;
pub mod texture;
pub mod thermodynamics;
pub mod training;
pub mod view;
mod window;
pub mod worker;

use crate::engine::BackendChoice;
use crate::preset::{AnyPreset, Preset};
use classroom::{AttemptState, Classroom, LessonRequest};
use egui::Color32;
pub use menus::preset_groups;
pub use opening::{Folders, Opening, is_sweep_path};
use std::path::Path;
pub use tabs::Tab;
pub(crate) use view::explosion_banner;
use view::{Action, Shell, Status, View};
pub use window::{RendererChoice, run_native};

/// Where the S key puts its screenshots, in the working directory by default.
pub const SCREENSHOT_FOLDER: &str = "atmc-lab-screenshots";

/// Where sweeps started from the app run, in the working directory by default.
pub const SWEEP_FOLDER: &str = "atmc-lab-sweeps";

/// Width of the control panel.
pub const CONTROLS_WIDTH: f32 = 290.0;

/// Below this window width (points) a lecture folds the control panel away: with it and the
/// lesson panel open, the pictures would have under 450 points.
pub const NARROW_FOR_LESSONS: f32 = 1100.0;

/// The control panel's width for `style`: [`CONTROLS_WIDTH`] at egui's body size (13
/// points), wider in proportion where presentation mode sets larger type, so a slider's
/// label keeps its room beside the slider.
pub fn controls_width(style: &egui::Style) -> f32 {
    let body = style
        .text_styles
        .get(&egui::TextStyle::Body)
        .map_or(13.0, |f| f.size);
    (CONTROLS_WIDTH * body / 13.0).ceil()
}

/// Whether `preset` is a lesson that waits for the lecturer at step 0 however it is opened
/// (menu, key, lecture, file, the command line): one whose story does not ask to play at once.
fn waits_for_lecturer(preset: &AnyPreset) -> bool {
    preset.story().is_some_and(|s| !s.autoplay)
}

/// The app's state: the views (created when first shown) and what the shell itself shows.
pub struct AtmcApp {
    /// The view of every tab, by its place in [`tabs::TABS`], once opened.
    views: Vec<Option<Box<dyn View>>>,
    /// The preset of every view as it was loaded, to tell a saved preset that was changed
    /// live from the one loaded ([`AnyPreset::marked_modified`]).
    loaded: Vec<Option<AnyPreset>>,
    /// The tab shown (the others are paused).
    pub tab: Tab,
    backend: BackendChoice,
    folders: Folders,
    shell: Shell,
    /// Each tab's latest status message, by its place in [`Tab::ALL`]: a message belongs to
    /// the tab shown when it was set and is shown only while that tab is.
    statuses: Vec<Option<Status>>,
    capture: capture::Capture,
    /// Smoothed frame time of the UI, seconds.
    frame_time: f32,
    /// `atmc-lab app --frame-stats`: the window's frame rate, measured.
    pub frame_clock: Option<frame_clock::FrameClock>,
    /// The latest frame's time in the view's refresh and central area, for the frame clock.
    pub phases: frame_clock::FramePhases,
    /// Offscreen pictures: leave out what depends on timing.
    reproducible: bool,
    /// The lesson panel, the keys overlay and presentation mode.
    pub classroom: Classroom,
    /// The control panel is shown (presentation mode may hide it).
    pub show_controls: bool,
    /// A figure for print (a handout's picture): the view alone, without the menu bar, the
    /// status bar, the lesson and control panels.
    pub figure: bool,
    /// The verdict of a challenge's attempt running in the background, when one runs.
    attempt:
        Option<std::sync::mpsc::Receiver<Result<crate::diagnostics::challenge::Verdict, String>>>,
}

impl AtmcApp {
    /// The app on any kind of preset, with the engines on `backend`, writing what it makes
    /// unasked into `folders`, running or paused. The preset's tab is shown; the other tabs
    /// start when first opened.
    pub fn new(
        ctx: &egui::Context,
        preset: impl Into<AnyPreset>,
        backend: BackendChoice,
        folders: Folders,
        playing: bool,
    ) -> Self {
        fonts::install_fonts(ctx);
        let preset = preset.into();
        // A lesson waits at step 0 also when the window opens on it (`atmc-lab app LESSON`).
        let playing = playing && !waits_for_lecturer(&preset);
        let tab = Tab::of(&preset);
        let preset_story = preset
            .story()
            .map(|s| (preset.name().to_owned(), s.clone()));
        let view = (tab.spec().create)(tabs::ViewStart {
            ctx,
            backend,
            folders: &folders,
            preset: Some(preset),
            playing,
        });
        let mut views: Vec<Option<Box<dyn View>>> = Tab::ALL.iter().map(|_| None).collect();
        let mut loaded: Vec<Option<AnyPreset>> = Tab::ALL.iter().map(|_| None).collect();
        loaded[tab.index()] = view.preset();
        views[tab.index()] = Some(view);
        Self {
            views,
            loaded,
            tab,
            backend,
            folders,
            shell: Shell::default(),
            statuses: Tab::ALL.iter().map(|_| None).collect(),
            capture: Default::default(),
            frame_time: 0.0,
            frame_clock: None,
            phases: Default::default(),
            reproducible: false,
            figure: false,
            classroom: Classroom::default(),
            show_controls: true,
            attempt: None,
        }
        .with_lesson_of(&preset_story)
    }

    /// The app on a preset or a sweep ([`Opening`]); a sweep opens beside the default
    /// preset's paused view.
    pub fn open(
        ctx: &egui::Context,
        opening: Opening,
        backend: BackendChoice,
        folders: Folders,
        playing: bool,
    ) -> Self {
        match opening {
            Opening::Preset(preset) => Self::new(ctx, *preset, backend, folders, playing),
            Opening::Sweep(path) => {
                let mut app = Self::new(ctx, Preset::default_preset(), backend, folders, false);
                app.open_sweep(ctx, &path);
                app
            }
            Opening::Lecture(lecture) => {
                let mut app = Self::new(ctx, Preset::default_preset(), backend, folders, false);
                app.start_lecture(ctx, *lecture);
                app
            }
            Opening::InTab(tab, preset) => {
                let mut app = Self::new(ctx, Preset::default_preset(), backend, folders, false);
                app.switch_to(ctx, tab);
                if !app.view_mut(ctx, tab).load(*preset) {
                    app.shell.status = Some(Status::error("this view cannot load that preset"));
                }
                app.loaded[tab.index()] = app.view(tab).and_then(|v| v.preset());
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

    /// The view of `tab`, created (paused, on the tab's default) when it does not exist yet.
    pub fn view_mut(&mut self, ctx: &egui::Context, tab: Tab) -> &mut dyn View {
        let i = tab.index();
        if self.views[i].is_none() {
            let view = (tab.spec().create)(tabs::ViewStart {
                ctx,
                backend: self.backend,
                folders: &self.folders,
                preset: None,
                playing: false,
            });
            self.loaded[i] = view.preset();
            self.views[i] = Some(view);
        }
        self.views[i].as_deref_mut().expect("created above")
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

    /// A view by its type, if it has been opened: for tests, which look inside a view. (The
    /// shell asks views only through [`View`].)
    pub fn get<V: View>(&self) -> Option<&V> {
        self.views
            .iter()
            .flatten()
            .find_map(|v| (v.as_ref() as &dyn std::any::Any).downcast_ref::<V>())
    }

    /// A view by its type, if it has been opened: for tests, which drive a view directly.
    pub fn get_mut<V: View>(&mut self) -> Option<&mut V> {
        self.views
            .iter_mut()
            .flatten()
            .find_map(|v| (v.as_mut() as &mut dyn std::any::Any).downcast_mut::<V>())
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
    /// panel. It leaves a lecture: the panel's "lesson k of n" and keys 1–9 belong to the
    /// lecture's lessons, and this preset is none of them (menu, file, paste, a sweep's point).
    pub fn load_any(&mut self, ctx: &egui::Context, preset: AnyPreset) {
        self.classroom.lecture = None;
        self.load_lesson(ctx, preset);
    }

    /// [`Self::load_any`] without leaving the lecture: a lesson of the lecture being given.
    pub(crate) fn load_lesson(&mut self, ctx: &egui::Context, preset: AnyPreset) {
        let tab = Tab::of(&preset);
        // A new lesson: an attempt at the old one's challenge is no longer wanted.
        self.attempt = None;
        self.classroom.attempt = AttemptState::None;
        self.classroom.lesson = preset
            .story()
            .map(|s| (preset.name().to_owned(), s.clone()));
        if self.classroom.lesson.is_some() {
            self.classroom.panel_closed = false;
        }
        // A lesson waits for the lecturer at step 0, also when it loads into a view that was
        // playing the lesson before. Paused before the load, so that the view's worker never
        // steps the new lesson while still playing, and again after, for a view whose load
        // sets its own transport.
        let waits = waits_for_lecturer(&preset);
        self.switch_to(ctx, tab);
        // A new preset starts with a clean status line in its tab (a message set for this
        // load is still pending and is filed next frame).
        self.statuses[tab.index()] = None;
        let view = self.view_mut(ctx, tab);
        if waits {
            view.act(Action::Pause);
        }
        if !view.load(preset) {
            self.shell.status = Some(Status::error("this view cannot load that preset"));
        } else if waits {
            view.act(Action::Pause);
        }
        self.loaded[tab.index()] = self.view(tab).and_then(|v| v.preset());
    }

    /// Opens a sweep's results (`.jsonl`) or runs a sweep file (`.ron`) in the Sweeps tab.
    pub fn open_sweep(&mut self, ctx: &egui::Context, path: &Path) {
        self.switch_to(ctx, Tab::Sweep);
        self.shell.status = Some(match self.view_mut(ctx, Tab::Sweep).open_file(path) {
            Ok(()) => Status::ok(format!("opened {}", path.display())),
            Err(e) => Status::error(e),
        });
    }

    /// Opens a file (dropped on the window, or picked): sweep results and sweep files in the
    /// Sweeps tab, presets in their view.
    pub fn open_file(&mut self, ctx: &egui::Context, path: &Path) {
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

    /// The shown view's preset as it was loaded (before any live change).
    pub fn loaded_preset(&self) -> Option<AnyPreset> {
        self.loaded[self.tab.index()].clone()
    }

    /// The status-bar message of the tab shown: one set since the last frame first.
    pub fn status_message(&self) -> Option<&Status> {
        self.shell
            .status
            .as_ref()
            .or(self.statuses[self.tab.index()].as_ref())
    }

    /// Files the message set since the last frame under the tab shown now. Called first in a
    /// frame: nothing switches tabs between frames, and a load that switched tabs set its
    /// message for the tab it switched to.
    fn file_status(&mut self) {
        if let Some(status) = self.shell.status.take() {
            self.statuses[self.tab.index()] = Some(status);
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

    fn toggle_full_screen(&mut self, ctx: &egui::Context) {
        let on = ctx.input(|i| i.viewport().fullscreen.unwrap_or(false));
        ctx.send_viewport_cmd(egui::ViewportCommand::Fullscreen(!on));
    }

    /// The whole UI, for eframe and for the offscreen harness alike.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        self.file_status();
        let dt = ui.input(|i| i.unstable_dt);
        self.frame_time = if self.frame_time == 0.0 {
            dt
        } else {
            0.9 * self.frame_time + 0.1 * dt
        };
        self.handle_screenshot_events(ui.ctx());
        let refresh = std::time::Instant::now();
        self.active_mut().refresh();
        self.phases.refresh_ms = 1e3 * refresh.elapsed().as_secs_f64();
        self.record_frame(ui.ctx());
        self.poll_writer();
        self.poll_attempt();
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
        if !self.figure {
            egui::Panel::top("menu")
                .frame(bar)
                .show(ui, |ui| self.menu_bar(ui));
            egui::Panel::bottom("status")
                .frame(bar)
                .show(ui, |ui| self.status_bar(ui));
        }
        let tab = self.tab;
        let Some(view) = self.views[tab.index()].as_deref_mut() else {
            return;
        };
        let shell = &mut self.shell;
        let mut request = None;
        let mut central_ms = 0.0;
        if self.classroom.panel_shown() && !self.figure {
            let classroom = &self.classroom;
            egui::Panel::right("lesson")
                .frame(bar)
                .resizable(false)
                .show(ui, |ui| {
                    egui::ScrollArea::vertical().show(ui, |ui| request = classroom.panel(ui));
                });
        }
        if self.show_controls && !self.figure {
            egui::Panel::left("controls")
                .frame(bar)
                .exact_size(controls_width(&style))
                .resizable(false)
                .show(ui, |ui| {
                    egui::ScrollArea::vertical().show(ui, |ui| view.controls(ui, shell));
                });
        }
        egui::CentralPanel::default()
            .frame(egui::Frame::central_panel(&style).fill(Color32::TRANSPARENT))
            .show(ui, |ui| {
                // A view taller than the window (a small laptop, presentation mode's larger
                // type, plots kept at a readable height) scrolls instead of being cut.
                let central = std::time::Instant::now();
                egui::ScrollArea::vertical()
                    .id_salt("central view")
                    .auto_shrink(false)
                    .show(ui, |ui| view.central(ui, shell));
                central_ms = 1e3 * central.elapsed().as_secs_f64();
            });
        self.phases.central_ms = central_ms;
        // A view asked for a preset to be opened live (a sweep's point).
        if let Some(preset) = self.shell.open.take() {
            self.load_any(ui.ctx(), preset);
        }
        if std::mem::take(&mut self.shell.save_preset) {
            self.ask_save_preset();
        }
        self.notice_ui(ui.ctx());
        match request {
            Some(LessonRequest::Go(k)) => self.go_to_lesson(ui.ctx(), k),
            Some(LessonRequest::Check) => self.check_challenge(ui.ctx()),
            Some(LessonRequest::Close) => {
                self.classroom.panel_closed = true;
                if self.classroom.lecture.is_some() {
                    self.shell.status = Some(Status::ok(
                        "lesson panel closed: keys 1–9 still choose the lecture's lessons \
                         (View → Lesson panel shows it again)",
                    ));
                }
            }
            None => {}
        }
    }

    /// Hides timing-dependent figures (frame time) so offscreen pictures are reproducible.
    pub fn set_reproducible(&mut self, on: bool) {
        self.reproducible = on;
        for view in self.views.iter_mut().flatten() {
            view.set_reproducible(on);
        }
    }
}
