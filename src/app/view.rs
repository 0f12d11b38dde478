//! One view of the lab is one panel type implementing [`View`]. The app's shell
//! ([`super::AtmcApp`]) draws the skeleton every view shares — menu bar with the tabs,
//! status bar, the control panel on the left and the central area — and asks the active view
//! to fill the control panel and the central area. A new view is one new type and one row
//! of [`super::tabs::TABS`].

use super::files::FileRequest;
use super::simulated::SimulationHandle;
use super::worker::Control;
use crate::preset::AnyPreset;
use egui::{Rect, Ui};
use std::any::Any;
use std::path::{Path, PathBuf};

/// What the shell asks of a view from the keyboard and the menu.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Play when paused, pause when playing.
    TogglePlay,
    /// Play (a lesson starts running as it opens).
    Play,
    /// Pause (a lesson waits at step 0 for the lecturer).
    Pause,
    /// Advance one tick while paused.
    Step,
    /// Start the chains over.
    Reset,
    /// Flip ATMC's friction sign between +1 (correct) and −1 (as printed).
    FlipSign,
    /// Run twice as fast.
    Faster,
    /// Run half as fast (down to one step per second).
    Slower,
}

impl Action {
    /// The worker message of a transport action for a simulation that is `playing` or not;
    /// None for the actions that edit the preset instead.
    pub fn control(self, playing: bool) -> Option<Control> {
        match self {
            Action::TogglePlay => Some(Control::Play(!playing)),
            Action::Play => Some(Control::Play(true)),
            Action::Pause => Some(Control::Play(false)),
            Action::Step => Some(Control::Step),
            Action::Reset => Some(Control::Reset),
            Action::FlipSign | Action::Faster | Action::Slower => None,
        }
    }
}

/// The status line of a simulation view: backend, step and, while running, its speed
/// (`rate` in `unit`, e.g. chain-steps/s).
pub fn simulation_status(
    backend: Option<&crate::engine::BackendInfo>,
    step: u32,
    playing: bool,
    rate: f64,
    unit: &str,
) -> String {
    let mut parts = vec![
        backend
            .map(|b| format!("{} engine: {}", b.kind, b.device))
            .unwrap_or_else(|| "starting engine…".into()),
        format!("step {step}"),
    ];
    if rate.is_finite() && playing {
        parts.push(format!("{rate:.2e} {unit}"));
    }
    parts.join("  |  ")
}

/// A message for the status bar: something written, loaded or failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    /// The message.
    pub text: String,
    /// Shown as an error.
    pub error: bool,
}

impl Status {
    /// A success message.
    pub fn ok(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            error: false,
        }
    }

    /// An error message.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            error: true,
        }
    }

    /// "wrote PATH" on success, the error otherwise (naming PATH).
    pub fn written(path: &std::path::Path, result: anyhow::Result<()>) -> Self {
        match result {
            Ok(()) => Self::ok(format!("wrote {}", path.display())),
            Err(e) => {
                let why = format!("{e:#}");
                if why.contains(&path.display().to_string()) {
                    Self::error(why)
                } else {
                    Self::error(format!("could not write {}: {why}", path.display()))
                }
            }
        }
    }
}

/// What the shell lends a view while it draws: the place to report to the status bar, and
/// the file dialogs.
#[derive(Debug)]
pub struct Shell {
    /// The latest message for the status bar.
    pub status: Option<Status>,
    /// A preset to open live in its view after this frame (a sweep's point clicked).
    pub open: Option<AnyPreset>,
    /// The file dialog: the native one, or a stand-in (tests).
    pub dialog: super::files::Dialog,
    /// The in-app path prompt, while a native dialog is unavailable.
    pub prompt: Option<super::files::Prompt>,
    /// A path typed into the prompt for one of the view's own requests, until the view
    /// takes it ([`Shell::answer_for`]).
    pub answer: Option<(FileRequest, PathBuf)>,
    /// A view asked for File → Save preset… (its formula panel's button).
    pub save_preset: bool,
}

impl Default for Shell {
    fn default() -> Self {
        Self {
            status: None,
            open: None,
            dialog: super::files::native,
            prompt: None,
            answer: None,
            save_preset: false,
        }
    }
}

impl Shell {
    /// Asks for a path. The native dialog's choice comes back at once; when no dialog can
    /// open, the status bar says why and an in-app prompt opens, whose answer the shell
    /// carries out later (a view's own request: the view takes it from
    /// [`Shell::answer_for`]).
    pub fn pick(&mut self, request: FileRequest) -> Option<PathBuf> {
        use super::files::{Picked, Prompt};
        match (self.dialog)(&request) {
            Picked::Path(path) => Some(path),
            Picked::Cancelled => None,
            Picked::Unavailable(why) => {
                self.status = Some(Status::error(format!(
                    "{why}: type the path in the window instead"
                )));
                self.prompt = Some(Prompt::new(request, why));
                None
            }
        }
    }

    /// The path typed into the prompt for `request`, once.
    pub fn answer_for(&mut self, request: FileRequest) -> Option<PathBuf> {
        if self
            .answer
            .as_ref()
            .is_some_and(|(asked, _)| *asked == request)
        {
            self.answer.take().map(|(_, path)| path)
        } else {
            None
        }
    }
}

/// A view of the lab. A simulation view names its worker in [`View::simulation`], and the
/// defaults drive it (status, step, pause when hidden, transport, run to a step); without
/// one (Sweeps, Training, Thermodynamics) there is nothing to pause, export or run to.
/// (`Any` lets tests reach a concrete view through trait upcasting, see
/// [`super::AtmcApp::get`]; the shell itself asks views only through this trait.)
pub trait View: Any {
    /// Takes the worker's latest snapshot; called once a frame before anything is drawn, so
    /// the controls and the central area agree on what they show.
    fn refresh(&mut self) {}
    /// Fills the control panel on the left.
    fn controls(&mut self, ui: &mut Ui, shell: &mut Shell);
    /// Fills the central area.
    fn central(&mut self, ui: &mut Ui, shell: &mut Shell);
    /// The worker the view simulates with, if it has one.
    fn simulation(&self) -> Option<&dyn SimulationHandle> {
        None
    }
    /// Whether the view's chains are running (None for a view without a simulation).
    fn playing(&self) -> Option<bool> {
        self.simulation().map(|s| s.playing())
    }
    /// One line for the status bar: backend, step, speed.
    fn status(&self) -> String {
        self.simulation().map(|s| s.status()).unwrap_or_default()
    }
    /// Steps done by the view's chains at the latest snapshot.
    fn step(&self) -> u32 {
        self.simulation().map_or(0, |s| s.step())
    }
    /// Shown or hidden. A hidden simulation pauses so that the views never share the cores
    /// (a training run goes on: it is meant to).
    fn set_visible(&mut self, visible: bool) {
        if let Some(s) = self.simulation()
            && !visible
        {
            s.control(Control::Play(false));
        }
    }
    /// Play, pause, single steps, reset, the friction sign and the speed (from the keyboard
    /// or the menu).
    fn act(&mut self, action: Action) {
        if let Some(s) = self.simulation() {
            s.transport(action);
        }
    }
    /// The preset the view runs, for Save preset (None when the view has no preset).
    fn preset(&self) -> Option<AnyPreset> {
        None
    }
    /// Loads a preset of the view's kind (the chains start over); false for another kind.
    fn load(&mut self, _preset: AnyPreset) -> bool {
        false
    }
    /// The time series as CSV text, for Export CSV.
    fn series_csv(&self) -> Option<String> {
        None
    }
    /// Writes the draws behind the view's convergence instruments to `path` (File → Export
    /// draws): `None` when the view keeps no draws, else what was written or why not.
    /// `loaded` is the view's preset as it was loaded: the preset stored with the draws is
    /// marked as changed live from it, as File → Save preset marks one.
    fn export_draws(
        &self,
        _path: &std::path::Path,
        _loaded: Option<&AnyPreset>,
    ) -> Option<anyhow::Result<String>> {
        None
    }
    /// The panels that can be exported as PNG: label and where they were drawn last.
    fn panels(&self) -> Vec<(String, Rect)> {
        Vec::new()
    }
    /// Runs to `step` and pauses there (offscreen pictures).
    fn run_to(&mut self, step: u32) {
        if let Some(s) = self.simulation() {
            s.control(Control::RunTo(step));
        }
    }
    /// Whether the picture of step `step` is complete: the worker is paused there and every
    /// panel has what it draws. May adjust auto-ranging views to settle them.
    fn settled_at(&mut self, _step: u32) -> bool {
        true
    }
    /// What keeps the view from running its preset (a data file that cannot be read), if
    /// anything: a picture of it must not pass for a result.
    fn error(&self) -> Option<String> {
        None
    }
    /// Hides what depends on timing so offscreen pictures are reproducible.
    fn set_reproducible(&mut self, _on: bool) {}
    /// A line for the status bar of the other tabs while the view is hidden and goes on
    /// working (a training run); None when it has nothing to say there.
    fn background_status(&self) -> Option<String> {
        None
    }
    /// Opens a file the view reads itself (the Sweeps tab: a sweep's results or a sweep
    /// file); an error for a view that opens no files.
    fn open_file(&mut self, _path: &Path) -> Result<(), String> {
        Err("this view opens no files".into())
    }
}

/// The red banner of a momentum explosion with its reset button; true when it was clicked.
pub(crate) fn explosion_banner(ui: &mut egui::Ui, text: &str, reset_label: &str) -> bool {
    let frame = egui::Frame::new()
        .fill(egui::Color32::from_rgb(120, 20, 20))
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
                            egui::Label::new(
                                egui::RichText::new(text)
                                    .color(egui::Color32::WHITE)
                                    .strong(),
                            )
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
