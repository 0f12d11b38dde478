//! The menu bar (presets, lectures, File, Edit, View, Help and the tabs) and the status bar.

use super::AtmcApp;
use super::classroom;
use super::files::FileRequest;
use super::tabs::Tab;
use super::view::Status;
use crate::preset::story::SHIPPED_LECTURES;
use crate::preset::{AnyPreset, Lecture, SHIPPED};
use egui::RichText;

impl AtmcApp {
    pub(super) fn menu_bar(&mut self, ui: &mut egui::Ui) {
        egui::MenuBar::new().ui(ui, |ui| {
            ui.menu_button("Presets", |ui| {
                // Grouped by family, each group a submenu that scrolls: the whole list (48
                // presets) is taller than a 600-point window.
                let max_height = (ui.ctx().content_rect().height() - 80.0).max(120.0);
                for (group, names) in preset_groups() {
                    ui.menu_button(group, |ui| {
                        egui::ScrollArea::vertical()
                            .max_height(max_height)
                            .show(ui, |ui| {
                                for (name, text) in names {
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
                    });
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
        ui.label(RichText::new(format!("atmc-lab {}", crate::VERSION)).strong());
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
        let shown = |folder: &std::path::Path| {
            std::path::absolute(folder)
                .unwrap_or_else(|_| folder.to_owned())
                .display()
                .to_string()
        };
        ui.label(format!(
            "S-key screenshots: {}/\nSweeps run here: {}/\nExports and saved presets: where \
             you choose (File menu).\nShipped presets are built in (Presets menu); their \
             files are in presets/ of the source, with the lectures and sweeps.",
            shown(&self.folders.screenshots),
            shown(&self.folders.sweeps),
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
        if self.classroom.has_panel() {
            let mut shown = !self.classroom.panel_closed;
            if ui.checkbox(&mut shown, "Lesson panel").changed() {
                self.classroom.panel_closed = !shown;
            }
        }
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
            self.ask(ui.ctx(), FileRequest::OpenPreset);
        }
        if ui
            .button("Open lecture…")
            .on_hover_text("A lecture file (.ron): its lessons by name, by file or inline")
            .clicked()
        {
            ui.close();
            self.ask(ui.ctx(), FileRequest::OpenLecture);
        }
        if ui
            .button("Open lecture folder…")
            .on_hover_text("A folder holding lecture.ron with its presets and data")
            .clicked()
        {
            ui.close();
            self.ask(ui.ctx(), FileRequest::OpenLectureFolder);
        }
        if ui
            .button("Open sweep…")
            .on_hover_text("merged.jsonl from `atmc-lab sweep`, or a sweep file to run here")
            .clicked()
        {
            ui.close();
            self.ask(ui.ctx(), FileRequest::OpenSweep);
        }
        let preset = self.active().preset();
        if ui
            .add_enabled(preset.is_some(), egui::Button::new("Save preset…"))
            .clicked()
        {
            ui.close();
            self.ask(ui.ctx(), FileRequest::SavePreset);
        }
        ui.separator();
        if ui.button("Export time series (CSV)…").clicked() {
            ui.close();
            self.ask(ui.ctx(), FileRequest::ExportCsv);
        }
        if ui
            .button("Export draws (Zarr, for ArviZ)…")
            .on_hover_text(
                "The draws behind the convergence instruments: θ, p, ξ and per-draw statistics \
                 of the first 64 chains over the last 256 frames, in a Zarr folder. Open it in \
                 Python with arviz.from_datatree(xarray.open_datatree(PATH, engine=\"zarr\")) \
                 (ArviZ 0.x's from_zarr refuses zarr ≥ 3). `atmc-lab run --draws` exports a \
                 whole run.",
            )
            .clicked()
        {
            ui.close();
            self.ask(ui.ctx(), FileRequest::ExportDraws);
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
                    for (label, panel) in self.picture_targets("the window") {
                        if ui
                            .button(format!("{label}…"))
                            .on_hover_text(
                                "A frame each time the chains move; .gif for an animated \
                                 GIF, any other name for a folder of PNG frames",
                            )
                            .clicked()
                        {
                            ui.close();
                            self.ask(ui.ctx(), FileRequest::Record { panel });
                        }
                    }
                });
            }
        }
        ui.menu_button("Export PNG", |ui| {
            for (label, panel) in self.picture_targets("window") {
                for scale in [1, 2, 3] {
                    if ui.button(format!("{label} at {scale}×…")).clicked() {
                        ui.close();
                        self.ask(ui.ctx(), FileRequest::ExportPng { panel, scale });
                    }
                }
            }
        });
    }

    /// What a picture can show: the window (labelled `window`), or one of the view's panels
    /// by its index.
    fn picture_targets(&self, window: &str) -> Vec<(String, Option<usize>)> {
        let panels = self.active().panels().into_iter().enumerate();
        std::iter::once((window.to_owned(), None))
            .chain(panels.map(|(k, (label, _))| (label, Some(k))))
            .collect()
    }

    pub(super) fn status_bar(&mut self, ui: &mut egui::Ui) {
        // A lesson waits for the lecturer, and presentation mode shows whether the run
        // moves: both say so in large type at the right, drawn first so that the lines at
        // the left wrap in the room it leaves instead of running under it.
        let transport = (self.classroom.panel_shown() || self.classroom.presentation)
            .then(|| self.view(self.tab))
            .flatten()
            .and_then(|v| v.playing().map(|playing| (playing, v.step())));
        ui.horizontal(|ui| match transport {
            Some((playing, step)) => {
                ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), |ui| {
                    super::classroom::transport_badge(ui, playing, step);
                    ui.with_layout(
                        egui::Layout::left_to_right(egui::Align::Center).with_main_wrap(true),
                        |ui| self.status_lines(ui),
                    );
                });
            }
            None => self.status_lines(ui),
        });
    }

    /// The status bar's lines: the view's, what runs in the background, captures, the
    /// frame time and the latest message.
    fn status_lines(&mut self, ui: &mut egui::Ui) {
        if let Some(view) = self.view(self.tab) {
            ui.label(RichText::new(view.status()).small());
            ui.separator();
        }
        // What goes on in the background (a training run): say so from every tab.
        for tab in Tab::ALL.into_iter().filter(|&t| t != self.tab) {
            if let Some(text) = self.view(tab).and_then(|v| v.background_status()) {
                ui.label(RichText::new(text).small());
                ui.separator();
            }
        }
        self.capture_status(ui);
        if self.frame_time > 0.0 && !self.reproducible {
            ui.label(RichText::new(format!("UI {:.0} ms/frame", 1e3 * self.frame_time)).small());
            ui.separator();
        }
        if let Some(status) = self.status_message().cloned() {
            let color = if status.error {
                super::palette::error(ui.visuals())
            } else {
                super::palette::good(ui.visuals())
            };
            ui.label(RichText::new(&status.text).small().color(color));
        }
    }
}

/// The groups of the Presets menu, in order: each shipped preset in the first group whose
/// name prefix it has ("" takes the rest).
const PRESET_GROUPS: [(&str, &[&str]); 7] = [
    ("Lessons (ATMC lecture)", &["lesson-"]),
    ("Cyclical lecture", &["cyclical-"]),
    ("Free-energy lecture", &["free-energy-"]),
    ("Bayesian DL lecture", &["bayesian-dl-"]),
    ("Typed formulas", &["expr-"]),
    (
        "Networks and spheres",
        &["mlp-", "sphere-", "two-moons", "spirals", "drawn-"],
    ),
    ("2-D targets", &[""]),
];

/// The shipped presets grouped for the Presets menu ([`PRESET_GROUPS`]), empty groups left out.
pub fn preset_groups() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    let mut groups: Vec<_> = PRESET_GROUPS
        .iter()
        .map(|(g, _)| (*g, Vec::new()))
        .collect();
    for &(name, text) in SHIPPED {
        let k = PRESET_GROUPS
            .iter()
            .position(|(_, prefixes)| prefixes.iter().any(|p| name.starts_with(p)))
            .expect("the last group takes every name");
        groups[k].1.push((name, text));
    }
    groups.retain(|(_, names)| !names.is_empty());
    groups
}
