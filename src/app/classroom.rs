//! The app as a lecture instrument: the lesson panel beside the views (a preset's story and
//! the steps of a lecture), the keyboard, presentation mode (large type, thick lines, light
//! or dark, full screen) and the overlay that lists the keys.

use super::NARROW_FOR_LESSONS;
use super::view::{Action, Status};
use crate::diagnostics::challenge::Verdict;
use crate::engine::BackendChoice;
use crate::preset::story::{Script, script_runs};
use crate::preset::{AnyPreset, Lecture, Story};
use egui::{Key, Modifiers, RichText, Ui};
use std::path::{Path, PathBuf};

/// Width of the lesson panel.
const LESSON_WIDTH: f32 = 300.0;

/// What a key asks the app to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyCommand {
    /// Space: play or pause.
    TogglePlay,
    /// →: one step.
    Step,
    /// R: reset the chains.
    Reset,
    /// F: flip the friction sign.
    FlipSign,
    /// + or =: faster.
    Faster,
    /// −: slower.
    Slower,
    /// S: a screenshot of the window into the screenshot folder.
    Screenshot,
    /// ?: show or hide the list of keys.
    ToggleHelp,
    /// 1–9: lesson k of the lecture (0-based).
    Lesson(usize),
    /// Page Down or N: the next lesson (every lesson of a long lecture is reachable).
    NextLesson,
    /// Page Up or P: the previous lesson.
    PreviousLesson,
    /// F11: full screen.
    FullScreen,
    /// Escape: close the overlay, leave full screen.
    Escape,
}

/// The keys and what they do, for the overlay and the Help menu.
pub const KEYS: [(&str, &str); 12] = [
    ("Space", "play / pause"),
    ("→", "one step (while paused)"),
    ("R", "reset the chains"),
    ("F", "flip the friction sign (+1 correct ↔ −1 as printed)"),
    ("+ / −", "faster / slower, down to one step per second"),
    ("1 – 9", "jump to a lesson of the lecture"),
    (
        "PgDn / N, PgUp / P",
        "next / previous lesson (any number of lessons)",
    ),
    ("S", "screenshot of the window"),
    ("?", "show or hide this list"),
    ("F11", "full screen"),
    ("Esc", "close this list, leave full screen"),
    ("Ctrl+V", "paste a preset copied as text"),
];

/// The key commands of this frame; none while a text field or a widget being typed into has
/// the keyboard, and none with Ctrl or Cmd held (those belong to copy, paste and zoom).
pub fn key_commands(ctx: &egui::Context) -> Vec<KeyCommand> {
    if ctx.egui_wants_keyboard_input() {
        return Vec::new();
    }
    const DIGITS: [Key; 9] = [
        Key::Num1,
        Key::Num2,
        Key::Num3,
        Key::Num4,
        Key::Num5,
        Key::Num6,
        Key::Num7,
        Key::Num8,
        Key::Num9,
    ];
    ctx.input_mut(|i| {
        let mut out = Vec::new();
        let mut key = |k: Key| i.consume_key(Modifiers::NONE, k);
        let table = [
            (Key::Space, KeyCommand::TogglePlay),
            (Key::ArrowRight, KeyCommand::Step),
            (Key::R, KeyCommand::Reset),
            (Key::F, KeyCommand::FlipSign),
            (Key::Plus, KeyCommand::Faster),
            (Key::Equals, KeyCommand::Faster),
            (Key::Minus, KeyCommand::Slower),
            (Key::S, KeyCommand::Screenshot),
            (Key::Questionmark, KeyCommand::ToggleHelp),
            (Key::F11, KeyCommand::FullScreen),
            (Key::Escape, KeyCommand::Escape),
            (Key::PageDown, KeyCommand::NextLesson),
            (Key::N, KeyCommand::NextLesson),
            (Key::PageUp, KeyCommand::PreviousLesson),
            (Key::P, KeyCommand::PreviousLesson),
        ];
        for (k, command) in table {
            if key(k) {
                out.push(command);
            }
        }
        for (n, d) in DIGITS.into_iter().enumerate() {
            if key(d) {
                out.push(KeyCommand::Lesson(n));
            }
        }
        // "?" is Shift+/ on many layouts.
        if i.modifiers.shift && i.key_pressed(Key::Slash) {
            out.push(KeyCommand::ToggleHelp);
        }
        out
    })
}

/// A lecture in progress.
#[derive(Clone, Debug, PartialEq)]
pub struct LectureState {
    /// The lecture.
    pub lecture: Lecture,
    /// The lesson shown (0-based).
    pub step: usize,
}

/// What the lesson panel shows and how the app presents itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Classroom {
    /// The lecture being given, if any.
    pub lecture: Option<LectureState>,
    /// The story of the preset shown (title and lesson), if it has one.
    pub lesson: Option<(String, Story)>,
    /// The overlay that lists the keys.
    pub show_keys: bool,
    /// Presentation mode: large type and thick lines for a projector.
    pub presentation: bool,
    /// Light theme (dark otherwise).
    pub light: bool,
    /// The lesson panel was closed: the lecture goes on (keys 1–9 still choose its lessons
    /// and show the panel again), only the panel is folded away.
    pub panel_closed: bool,
    /// The challenge of the lesson shown: an attempt being checked, or its verdict.
    pub attempt: AttemptState,
}

/// Where the lesson's challenge stands.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum AttemptState {
    /// Not checked yet (or the lesson changed).
    #[default]
    None,
    /// An attempt runs in the background.
    Checking,
    /// The verdict of the last attempt.
    Done(Verdict),
    /// The attempt could not run.
    Failed(String),
}

/// How the app looks: presentation mode and theme (for the menu, the command line's
/// pictures and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Appearance {
    /// Presentation mode: large type and thick lines.
    pub presentation: bool,
    /// Light theme.
    pub light: bool,
}

/// What the lesson panel asks of the app.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LessonRequest {
    /// Show lesson k of the lecture.
    Go(usize),
    /// Fold the panel away (the lecture goes on: keys 1–9 still choose its lessons).
    Close,
    /// Check the lesson's challenge on the run as it is set now.
    Check,
}

impl Classroom {
    /// Whether the lesson panel is shown.
    pub fn panel_shown(&self) -> bool {
        !self.panel_closed && self.has_panel()
    }

    /// Whether there is a lecture or a lesson for the panel to show.
    pub fn has_panel(&self) -> bool {
        self.lecture.is_some() || self.lesson.is_some()
    }

    /// The lesson panel: the lecture's place, the story, what to look at.
    pub fn panel(&self, ui: &mut Ui) -> Option<LessonRequest> {
        let mut request = None;
        ui.set_width(LESSON_WIDTH - 16.0);
        if let Some(l) = &self.lecture {
            ui.label(RichText::new(&l.lecture.name).small());
            ui.horizontal_wrapped(|ui| {
                if ui
                    .add_enabled(l.step > 0, egui::Button::new("◀ previous"))
                    .clicked()
                {
                    request = Some(LessonRequest::Go(l.step - 1));
                }
                ui.label(format!(
                    "lesson {} of {}",
                    l.step + 1,
                    l.lecture.steps.len()
                ));
                if ui
                    .add_enabled(
                        l.step + 1 < l.lecture.steps.len(),
                        egui::Button::new("next ▶"),
                    )
                    .clicked()
                {
                    request = Some(LessonRequest::Go(l.step + 1));
                }
            });
            ui.separator();
        }
        if let Some((title, story)) = &self.lesson {
            ui.label(RichText::new(title).heading().strong());
            ui.add_space(4.0);
            ui.label(formula_text(ui, self.presentation, &story.text));
            if !story.look_at.is_empty() {
                ui.add_space(6.0);
                ui.label(RichText::new("What to look at").strong());
                for line in &story.look_at {
                    ui.horizontal_wrapped(|ui| {
                        ui.label("•");
                        ui.label(formula_text(ui, self.presentation, line));
                    });
                }
            }
            if story.challenge.is_some() && self.challenge_panel(ui, story) {
                request = Some(LessonRequest::Check);
            }
        }
        ui.add_space(8.0);
        let close = ui.small_button("close the lesson panel");
        let close = if self.lecture.is_some() {
            close.on_hover_text(
                "The lecture goes on: keys 1–9 choose its lessons and bring the panel back \
                 (View → Lesson panel)",
            )
        } else {
            close
        };
        if close.clicked() {
            request = Some(LessonRequest::Close);
        }
        request
    }

    /// The challenge of `story` (it has one): the task, the Check button, the verdict and,
    /// after a failed attempt, the hint. True when Check was clicked.
    fn challenge_panel(&self, ui: &mut Ui, story: &Story) -> bool {
        let Some(c) = &story.challenge else {
            return false;
        };
        ui.add_space(8.0);
        let mut check = false;
        let group = egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.label(RichText::new("Challenge").strong());
            ui.label(formula_text(ui, self.presentation, &c.task));
            ui.label(
                RichText::new(format!(
                    "Goal: {}",
                    crate::diagnostics::challenge::goal_text(c)
                ))
                .small(),
            );
            ui.horizontal_wrapped(|ui| {
                let checking = self.attempt == AttemptState::Checking;
                check = ui
                    .add_enabled(!checking, egui::Button::new("Check"))
                    .on_hover_text(format!(
                        "Runs the lesson as it is set now for {} steps in the background and \
                         judges it",
                        c.steps
                    ))
                    .clicked();
                if checking {
                    ui.spinner();
                    ui.label(format!("running {} steps…", c.steps));
                }
            });
            match &self.attempt {
                AttemptState::Done(v) => {
                    let color = if v.passed {
                        super::palette::good(ui.visuals())
                    } else {
                        super::palette::error(ui.visuals())
                    };
                    ui.label(RichText::new(v.line()).color(color).strong());
                    if !v.passed {
                        ui.label(RichText::new("Hint").strong());
                        ui.label(formula_text(ui, self.presentation, &c.hint));
                    }
                }
                AttemptState::Failed(e) => {
                    ui.label(RichText::new(e).color(super::palette::error(ui.visuals())));
                }
                AttemptState::None | AttemptState::Checking => {}
            }
        });
        // A new verdict (and the hint after a failed attempt) is scrolled into view once:
        // below a long lesson on a small screen it landed under the fold, unseen.
        let id = egui::Id::unique("atmc-lab verdict shown");
        if self.attempt == AttemptState::Checking {
            // The next verdict is new, even if it reads as the last one did.
            ui.ctx().data_mut(|d| d.remove::<String>(id));
        }
        if let AttemptState::Done(v) = &self.attempt {
            let line = v.line();
            let seen = ui.ctx().data(|d| d.get_temp::<String>(id));
            if seen.as_deref() != Some(line.as_str()) {
                group.response.scroll_to_me(Some(egui::Align::Max));
                ui.ctx().data_mut(|d| d.insert_temp(id, line));
            }
        }
        check
    }

    /// The overlay that lists the keys; false once the user closed it.
    pub fn keys_overlay(ctx: &egui::Context) -> bool {
        let mut open = true;
        egui::Window::new("Keys")
            .collapsible(false)
            .resizable(false)
            .anchor(egui::Align2::CENTER_CENTER, egui::Vec2::ZERO)
            .open(&mut open)
            .show(ctx, |ui| {
                egui::Grid::new("keys").num_columns(2).show(ui, |ui| {
                    for (key, what) in KEYS {
                        ui.label(RichText::new(key).strong().monospace());
                        ui.label(what);
                        ui.end_row();
                    }
                });
            });
        open
    }
}

/// Lesson text with its formulas set: `^{…}` raised and `_{…}` lowered in a smaller font
/// ([`script_runs`]), the rest in the body font of `ui`. In presentation mode no glyph may
/// shrink below the size a back row reads: a raised run keeps the full size and is lifted
/// in a taller line, a lowered one stays on the line.
pub fn formula_text(ui: &Ui, presentation: bool, text: &str) -> egui::text::LayoutJob {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let color = ui.visuals().text_color();
    // At a desk scripts are set smaller, but never below the desk's small type.
    let script_size = if presentation {
        font.size
    } else {
        (0.7 * font.size).max(DESK_SMALL_TEXT)
    };
    let small = egui::FontId::new(script_size, font.family.clone());
    let mut job = egui::text::LayoutJob::default();
    for (run, script) in script_runs(text) {
        let format = match script {
            Script::Normal => egui::TextFormat::simple(font.clone(), color),
            Script::Super => egui::TextFormat {
                valign: egui::Align::TOP,
                // A taller line centres the run in it while the rest sits at the bottom.
                line_height: presentation.then_some(1.8 * font.size),
                ..egui::TextFormat::simple(small.clone(), color)
            },
            Script::Sub if presentation => egui::TextFormat::simple(font.clone(), color),
            Script::Sub => egui::TextFormat {
                valign: egui::Align::BOTTOM,
                ..egui::TextFormat::simple(small.clone(), color)
            },
        };
        job.append(&run, 0.0, format);
    }
    job
}

/// The words of the pause badge at `step`: a lesson waiting at its start asks for Space.
pub fn paused_text(step: u32) -> String {
    if step == 0 {
        "Paused at step 0 · press Space to start".to_owned()
    } else {
        format!("Paused at step {step} · press Space to go on")
    }
}

/// The words of the badge while a run plays.
pub const PLAYING_TEXT: &str = "Playing · Space pauses";

/// Draws the transport badge at the right of the status bar: paused (and how to go on) or
/// playing, in large type, so a lecturer and the class see whether the run moves. A label in
/// a frame, so that it is also text for assistive tools and tests. It keeps the same height
/// playing or paused: the pictures above do not jump when Space is pressed. (Drawn over the
/// pictures, it covered their titles.)
pub fn transport_badge(ui: &mut Ui, playing: bool, step: u32) {
    let visuals = ui.visuals().clone();
    let (text, stroke, color) = if playing {
        (
            PLAYING_TEXT.to_owned(),
            visuals.widgets.noninteractive.bg_stroke.color,
            visuals.text_color(),
        )
    } else {
        (
            paused_text(step),
            visuals.selection.bg_fill,
            visuals.strong_text_color(),
        )
    };
    let size = 1.4 * ui.text_style_height(&egui::TextStyle::Body).max(13.0);
    egui::Frame::new()
        .fill(visuals.extreme_bg_color)
        .stroke(egui::Stroke::new(1.5, stroke))
        .corner_radius(8.0)
        .inner_margin(egui::Margin::symmetric(12, 2))
        .show(ui, |ui| {
            ui.add(egui::Label::new(RichText::new(text).size(size).color(color)).extend());
        });
}

/// The zoom factor of presentation mode for a window `height` points tall at zoom 1: the
/// layout then sees about 620 points of height (1280×720 → 1.16, 1920×1080 → 1.74).
pub fn presentation_zoom(height: f32) -> f32 {
    (height / 620.0).clamp(1.0, 3.0)
}

/// The zoom outside presentation mode: 1 up to a window 860 points high (1280×720 and
/// 1280×800 stay as designed), then growing with the height up to 1.5 (1.26 at 1080).
pub fn desk_zoom(height: f32) -> f32 {
    (height / 860.0).clamp(1.0, 1.5)
}

/// The text size of presentation mode, in points, for every text style but headings: at
/// 1280×720 its zoom (1.16) makes 14 points 16.3 pixels, what a back row reads; egui's own
/// small text (9 points, 10.5 pixels) and body (13, 15.1) stay at a desk.
pub const PRESENTATION_TEXT: f32 = 14.0;

/// The text styles of presentation mode: one readable size, headings larger.
fn presentation_text_styles() -> std::collections::BTreeMap<egui::TextStyle, egui::FontId> {
    let mut styles = egui::style::default_text_styles();
    for (style, font) in &mut styles {
        font.size = match style {
            egui::TextStyle::Heading => 20.0,
            _ => PRESENTATION_TEXT,
        };
    }
    styles
}

/// The smallest type at a desk, in points: egui's 9-point small text (lecture names, column
/// headers, a challenge's goal, the status line) was too small to read at 1280×720.
pub const DESK_SMALL_TEXT: f32 = 11.0;

/// egui's type at a desk, its small text raised to [`DESK_SMALL_TEXT`].
fn desk_text_styles() -> std::collections::BTreeMap<egui::TextStyle, egui::FontId> {
    let mut styles = egui::style::default_text_styles();
    if let Some(small) = styles.get_mut(&egui::TextStyle::Small) {
        small.size = DESK_SMALL_TEXT;
    }
    styles
}

/// Applies the theme, and the type and stroke widths of presentation mode, to every style.
pub fn apply_style(ctx: &egui::Context, classroom: &Classroom) {
    ctx.set_theme(if classroom.light {
        egui::Theme::Light
    } else {
        egui::Theme::Dark
    });
    let width = if classroom.presentation { 1.5 } else { 1.0 };
    let text_styles = if classroom.presentation {
        presentation_text_styles()
    } else {
        desk_text_styles()
    };
    ctx.all_styles_mut(|s| {
        s.text_styles = text_styles.clone();
        s.visuals.widgets.noninteractive.fg_stroke.width = width;
        s.visuals.widgets.noninteractive.bg_stroke.width = width;
    });
}

/// The shell's lecture and challenge actions: opening lessons (each opens paused at step 0
/// unless its story plays at once, however it is opened), the keys, and a challenge's attempt
/// in the background.
impl super::AtmcApp {
    /// Loads a preset chosen from the Presets menu or a file, and runs it: every kind opens
    /// running, as lessons do (a sphere preset waits for its sweep to be started: that is
    /// minutes of work, not an animation).
    pub fn open_and_play(&mut self, ctx: &egui::Context, preset: AnyPreset) {
        // A preset opened from the menu or a file leaves the lecture (`load_any` does).
        // A lesson waits for the lecturer unless its story says otherwise.
        let runs =
            !matches!(preset, AnyPreset::Sphere(_)) && preset.story().is_none_or(|s| s.autoplay);
        self.load_any(ctx, preset);
        if runs {
            self.active_mut().act(Action::Play);
        }
    }

    /// Starts a lecture at its first lesson.
    pub fn start_lecture(&mut self, ctx: &egui::Context, lecture: Lecture) {
        self.classroom.lecture = Some(LectureState { lecture, step: 0 });
        // A small window cannot hold the control panel, the lesson and the pictures: the
        // control panel folds away (the lesson is what the class reads), and says so.
        let width = ctx.content_rect().width();
        if self.show_controls && width < NARROW_FOR_LESSONS {
            self.show_controls = false;
            self.shell.status = Some(Status::ok(
                "control panel folded to make room for the lesson (View → Control panel \
                 shows it again)",
            ));
        }
        self.go_to_lesson(ctx, 0);
    }

    /// Shows lesson `k` of the lecture (ignored past its end): its preset loads, paused at
    /// step 0 unless its story plays at once.
    pub fn go_to_lesson(&mut self, ctx: &egui::Context, k: usize) {
        let Some(l) = &mut self.classroom.lecture else {
            return;
        };
        // Every step was read and checked when the lecture was: nothing can fail here.
        let Some(step) = l.lecture.steps.get(k) else {
            return;
        };
        let p = step.preset.clone();
        l.step = k;
        self.classroom.panel_closed = false;
        // It opens at step 0 and waits for Space, unless its story plays at once.
        let runs = p.story().is_some_and(|s| s.autoplay);
        self.load_lesson(ctx, p);
        if runs {
            self.active_mut().act(Action::Play);
        }
    }

    /// Opens a lecture file or folder ([`Lecture::load`]) at its first lesson; a bad one is
    /// refused with its file:line:column in the status bar, and what was shown stays.
    pub fn open_lecture(&mut self, ctx: &egui::Context, path: &Path) {
        match Lecture::load(&path.to_string_lossy()) {
            Ok(lecture) => {
                self.shell.status = Some(Status::ok(format!(
                    "opened the lecture \"{}\" ({} lessons)",
                    lecture.name,
                    lecture.steps.len()
                )));
                self.start_lecture(ctx, lecture);
            }
            Err(e) => self.shell.status = Some(Status::error(e.to_string())),
        }
    }

    /// The lesson `delta` away from the one shown (next: +1, previous: −1), when a lecture
    /// runs and that lesson exists.
    fn lesson_by(&self, delta: isize) -> Option<usize> {
        let l = self.classroom.lecture.as_ref()?;
        l.step
            .checked_add_signed(delta)
            .filter(|&k| k < l.lecture.steps.len())
    }

    /// Carries out the keys pressed this frame.
    pub(super) fn handle_keys(&mut self, ctx: &egui::Context) {
        for command in key_commands(ctx) {
            match command {
                KeyCommand::TogglePlay => self.active_mut().act(Action::TogglePlay),
                KeyCommand::Step => self.active_mut().act(Action::Step),
                KeyCommand::Reset => self.active_mut().act(Action::Reset),
                KeyCommand::FlipSign => self.active_mut().act(Action::FlipSign),
                KeyCommand::Faster => self.active_mut().act(Action::Faster),
                KeyCommand::Slower => self.active_mut().act(Action::Slower),
                KeyCommand::Screenshot => self.quick_screenshot(ctx),
                KeyCommand::ToggleHelp => self.classroom.show_keys ^= true,
                KeyCommand::Lesson(k) if self.classroom.lecture.is_none() => {
                    self.shell.status = Some(Status::error(format!(
                        "key {}: no lecture is running (Lectures menu); keys 1–9 choose its \
                         lessons",
                        k + 1
                    )));
                }
                KeyCommand::Lesson(k) => self.go_to_lesson(ctx, k),
                KeyCommand::NextLesson | KeyCommand::PreviousLesson => {
                    let delta = if command == KeyCommand::NextLesson {
                        1
                    } else {
                        -1
                    };
                    if let Some(k) = self.lesson_by(delta) {
                        self.go_to_lesson(ctx, k);
                    }
                }
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
        let dropped: Vec<PathBuf> = ctx.input(|i| {
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

    /// Starts an attempt at the shown lesson's challenge: the shown view's preset as it is
    /// set now, run headless on the CPU for the challenge's budget in the background, then
    /// judged by the diagnostics ([`crate::runner::attempt`]).
    pub fn check_challenge(&mut self, ctx: &egui::Context) {
        let Some((preset, challenge)) = self
            .active()
            .preset()
            .as_ref()
            .and_then(crate::runner::challenge_run)
        else {
            self.classroom.attempt =
                AttemptState::Failed("this view's run has no challenge to check".into());
            return;
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let ctx = ctx.clone();
        std::thread::spawn(move || {
            let verdict = preset
                .attempt(&challenge, BackendChoice::Cpu)
                .map(|(_, v)| v)
                .map_err(|e| format!("the attempt could not run: {e}"));
            // The lesson may have changed meanwhile: then nobody listens, and that is fine.
            let _ = tx.send(verdict);
            ctx.request_repaint();
        });
        self.attempt = Some(rx);
        self.classroom.attempt = AttemptState::Checking;
    }

    /// Takes the verdict of a finished attempt.
    pub(super) fn poll_attempt(&mut self) {
        let Some(rx) = &self.attempt else {
            return;
        };
        match rx.try_recv() {
            Ok(result) => {
                self.classroom.attempt = match result {
                    Ok(v) => AttemptState::Done(v),
                    Err(e) => AttemptState::Failed(e),
                };
                self.attempt = None;
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => {}
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                self.classroom.attempt = AttemptState::Failed("the attempt stopped".into());
                self.attempt = None;
            }
        }
    }

    /// Whether an attempt at a challenge is running (tests wait for its verdict).
    pub fn checking(&self) -> bool {
        self.attempt.is_some()
    }

    /// Switches presentation mode and the theme.
    pub fn set_appearance(&mut self, ctx: &egui::Context, appearance: Appearance) {
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
        apply_style(ctx, &self.classroom);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_fits_the_window() {
        assert_eq!(presentation_zoom(600.0), 1.0);
        assert_eq!(desk_zoom(720.0), 1.0);
        assert_eq!(desk_zoom(800.0), 1.0);
        assert!((desk_zoom(1080.0) - 1.256).abs() < 1e-3);
        assert!((presentation_zoom(720.0) - 1.161).abs() < 1e-3);
        assert!((presentation_zoom(1080.0) - 1.742).abs() < 1e-3);
    }
}
