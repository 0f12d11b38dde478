//! Side by side: two to four samplers (or one sampler under different switches) on the same
//! target, seed and gradient noise, each with its θ₁–θ₂ and θᵢ–pᵢ portraits and its distance
//! to truth, advanced in lockstep. Each column is a 2-D worker ([`crate::app::posterior`]);
//! the view hands out the same step targets to all of them.

use super::axes::Scale;
use super::colormap::Colormap;
use super::controls;
use super::portrait::{self, Backdrop, PortraitData, ViewRange};
use super::posterior::session::{Command, Session, Snapshot};
use super::simulated::{Simulated, SimulationHandle};
use super::view::{Action, Shell, View};
use super::worker::Control;
use crate::app::plots::Outlined;
use crate::diagnostics::views::Segment;
use crate::engine::{Axis, BackendChoice, HistogramSpec};
use crate::math::{SamplerKind, SamplerSpec};
use crate::preset::story::COMPARISON_COLUMNS;
use crate::preset::{AnyPreset, Column, Comparison};
use egui::{Color32, RichText, Ui};
use egui_plot::{Line, PlotPoints};

/// Line colours of the columns in the shared plots.
pub const COLUMN_COLORS: [Color32; 4] = [
    Color32::from_rgb(255, 170, 60),
    Color32::from_rgb(120, 200, 255),
    Color32::from_rgb(190, 140, 255),
    Color32::from_rgb(120, 220, 140),
];

/// One column: its worker and what it draws.
struct ColumnState {
    sim: Simulated<Command, Snapshot>,
    views: [ViewRange; 2],
    textures: [portrait::PortraitTextures; 2],
    rects: [egui::Rect; 2],
    sent: Vec<HistogramSpec>,
}

/// Where the columns and their portraits go in the window.
#[derive(Clone, Copy, Debug)]
struct Arrangement {
    /// Columns in one row.
    per_row: usize,
    /// Portraits side by side within a column (1: stacked).
    across: usize,
    /// Portraits per column: θ₁–θ₂, and θ–p where some column has momentum.
    portraits: usize,
    /// The side of one portrait, in points.
    side: f32,
}

impl Arrangement {
    /// The width of one column with `spacing` between its portraits.
    fn column_width(&self, spacing: f32) -> f32 {
        self.across as f32 * self.side + (self.across - 1) as f32 * spacing
    }
}

/// The side-by-side view's state.
pub struct CompareView {
    /// The comparison being shown (the controls edit its base).
    pub comparison: Comparison,
    applied: Comparison,
    columns: Vec<ColumnState>,
    backend: BackendChoice,
    repaint: egui::Context,
    /// Lockstep: running, and the step every column is sent to next.
    playing: bool,
    target_step: u32,
    /// When the last lockstep target was handed out (slow motion paces them).
    targeted_at: std::time::Instant,
    colormap: Colormap,
    /// The target's display grid and contours, built once per target (not once a frame: the
    /// logistic target generates its data and integrates grids when it is built).
    backdrop: Backdrop,
}

impl CompareView {
    /// The view on `comparison`, running or paused.
    pub fn new(
        ctx: &egui::Context,
        comparison: Comparison,
        backend: BackendChoice,
        playing: bool,
    ) -> Self {
        let mut view = Self {
            backdrop: Backdrop::new(&comparison.base.target),
            applied: comparison.clone(),
            comparison,
            columns: Vec::new(),
            backend,
            repaint: ctx.clone(),
            playing,
            target_step: 0,
            targeted_at: std::time::Instant::now(),
            colormap: Colormap::inferno(),
        };
        view.start_columns();
        view
    }

    /// Starts one worker per column, all paused at step 0.
    fn start_columns(&mut self) {
        let c = &self.comparison;
        self.backdrop.set_target(&c.base.target);
        self.columns = (0..c.columns.len())
            .map(|k| {
                let preset = c.column_preset(k);
                let repaint = self.repaint.clone();
                let r = self.backdrop.ranges(
                    preset.view.coordinate as usize,
                    &preset.sampler,
                    None,
                    None,
                );
                let session = Session::start(preset, self.backend, false, move || {
                    repaint.request_repaint()
                });
                ColumnState {
                    sim: Simulated::new(session),
                    views: [
                        ViewRange::auto(r.theta.0, r.theta.1),
                        ViewRange::auto(r.phase.0, r.phase.1),
                    ],
                    textures: Default::default(),
                    rects: [egui::Rect::NOTHING; 2],
                    sent: Vec::new(),
                }
            })
            .collect();
        self.target_step = 0;
    }

    /// The workers of the columns (tests wait on them).
    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.columns.iter().map(|c| c.sim.session())
    }

    /// Loads a comparison: every column starts over.
    pub fn load_comparison(&mut self, comparison: Comparison) {
        self.comparison = comparison;
        self.applied = self.comparison.clone();
        self.start_columns();
    }

    /// Sends the edited base to every column (live where [`crate::preset::Preset::change_from`]
    /// allows it); a new number of columns restarts them all.
    fn apply_changes(&mut self) {
        if self.comparison == self.applied {
            return;
        }
        if self.comparison.columns.len() != self.columns.len() {
            self.load_comparison(self.comparison.clone());
            return;
        }
        let restart = self.comparison.base.seed != self.applied.base.seed
            || self.comparison.base.chains != self.applied.base.chains
            || self.comparison.base.init != self.applied.base.init;
        self.backdrop.set_target(&self.comparison.base.target);
        for (k, column) in self.columns.iter().enumerate() {
            column.sim.command(Command::Apply {
                preset: Box::new(self.comparison.column_preset(k)),
                restart: false,
                generation: 0,
            });
        }
        if restart {
            // Lockstep from step 0 again.
            self.target_step = 0;
        }
        self.applied = self.comparison.clone();
    }

    /// The step every column has reached (the smallest).
    pub fn common_step(&self) -> u32 {
        self.columns
            .iter()
            .map(|c| c.sim.snapshot().step)
            .min()
            .unwrap_or(0)
    }

    /// Lockstep: when every column has arrived at the target, hand out the next one.
    fn drive(&mut self) {
        let arrived = self.columns.iter().all(|c| {
            c.sim.snapshot().step >= self.target_step && c.sim.snapshot().run_to.is_none()
        });
        let view = &self.comparison.base.view;
        let per_tick = view.steps_per_frame.max(1);
        // Slow motion: hand out the next target only when its time has come.
        let due = view.steps_per_second <= 0.0
            || self.targeted_at.elapsed().as_secs_f64()
                >= f64::from(per_tick) / view.steps_per_second;
        if !(self.playing && arrived) {
            return;
        }
        if !due {
            let wait = f64::from(per_tick) / view.steps_per_second
                - self.targeted_at.elapsed().as_secs_f64();
            self.repaint
                .request_repaint_after(std::time::Duration::from_secs_f64(wait.max(0.0)));
            return;
        }
        self.targeted_at = std::time::Instant::now();
        self.target_step = self.common_step() + per_tick;
        for c in &self.columns {
            c.sim.control(Control::RunTo(self.target_step));
        }
    }

    fn specs(&self, k: usize) -> Vec<HistogramSpec> {
        let coordinate = self.comparison.base.view.coordinate as u8;
        let m = self.columns[k].sim.snapshot().moments;
        let r = portrait::resolution_for(
            self.comparison.base.chains,
            (m.alive + m.diverged > 0).then_some(m.alive),
        );
        let v = &self.columns[k].views;
        vec![
            HistogramSpec::theta(v[0].grid(r)),
            HistogramSpec {
                grid: v[1].grid(r),
                axes: [Axis::Theta(coordinate), Axis::P(coordinate)],
            },
        ]
    }

    fn follow(&mut self, tolerance: f64) {
        let coordinate = self.comparison.base.view.coordinate as usize;
        for (k, column) in self.columns.iter_mut().enumerate() {
            let s = column.sim.snapshot();
            let r = self.backdrop.ranges(
                coordinate,
                &self.comparison.columns[k].sampler,
                Some(&s.moments),
                s.extents.as_ref(),
            );
            column.views[0].follow(r.theta, tolerance);
            column.views[1].follow(r.phase, tolerance);
        }
        for k in 0..self.columns.len() {
            let specs = self.specs(k);
            let column = &mut self.columns[k];
            if specs != column.sent {
                column.sim.command(Command::Views(specs.clone()));
                column.sent = specs;
            }
        }
    }

    /// The lines above column `k`'s portraits: its label, diverged chains or distance to
    /// truth, and the thermostat's state (what gives the hidden defects away).
    fn header(&self, k: usize, alarm: Color32) -> Vec<RichText> {
        let column = &self.comparison.columns[k];
        let (has_momentum, has_thermostat) = (
            column.sampler.kind.has_momentum(),
            column.sampler.kind.has_thermostat(),
        );
        let s = self.columns[k].sim.snapshot();
        let mut lines = vec![
            RichText::new(&column.label)
                .strong()
                .color(COLUMN_COLORS[k]),
        ];
        let total = s.moments.alive + s.moments.diverged;
        lines.push(if s.moments.diverged > 0 {
            RichText::new(format!(
                "⚠ {} of {total} diverged ({:.1}%)",
                s.moments.diverged,
                100.0 * s.moments.diverged_fraction()
            ))
            .color(alarm)
            .small()
        } else {
            let distance = s
                .series
                .iter()
                .rev()
                .map(|r| r.energy_distance)
                .find(|d| d.is_finite());
            RichText::new(match distance {
                Some(d) => format!("distance to truth {d:.4}"),
                None => "distance to truth …".to_owned(),
            })
            .small()
        });
        let mut state = Vec::new();
        if has_momentum && s.moments.alive > 0 {
            state.push(format!(
                "kinetic temperature {}",
                super::axes::short(s.moments.kinetic_temperature())
            ));
        }
        if has_thermostat && s.moments.alive > 0 {
            state.push(format!(
                "mean ξ {}",
                super::axes::short(s.moments.mean_xi())
            ));
        }
        if let Some(variances) = s.moments.variances_text() {
            state.push(variances);
        }
        if let Some(coverage) = s.modes_visited {
            state.push(coverage.to_string());
        }
        lines.push(RichText::new(state.join(" · ")).small());
        lines
    }

    fn column(
        &mut self,
        ui: &mut Ui,
        k: usize,
        header: Vec<RichText>,
        layout: Arrangement,
        contours: &[Segment],
    ) {
        let has_momentum = self.comparison.columns[k].sampler.kind.has_momentum();
        let log_scale = self.comparison.base.view.log_scale;
        let coordinate = self.comparison.base.view.coordinate as u8;
        let side = layout.side;
        let column = &mut self.columns[k];
        let s = column.sim.snapshot().clone();
        ui.vertical(|ui| {
            // The column is as wide as its portraits: long lines fold, never widening the
            // column past the window.
            ui.set_max_width(layout.column_width(ui.spacing().item_spacing.x));
            for line in header {
                ui.add(egui::Label::new(line).wrap());
            }
            let mut draw = |ui: &mut Ui| {
                for (p, axes) in [
                    [Axis::Theta(0), Axis::Theta(1)],
                    [Axis::Theta(coordinate), Axis::P(coordinate)],
                ]
                .into_iter()
                .enumerate()
                .take(layout.portraits)
                {
                    let histogram =
                        s.specs
                            .get(p)
                            .filter(|spec| spec.axes == axes)
                            .and_then(|spec| {
                                s.histograms.get(p).map(|(c, _)| (&spec.grid, c.as_slice()))
                            });
                    let data = PortraitData {
                        title: if p == 0 {
                            "θ₁ – θ₂".to_owned()
                        } else {
                            format!("{} – {}", axes[0].label(), axes[1].label())
                        },
                        axes,
                        histogram,
                        trails: &s.trails,
                        trail_diverged_at: &s.trail_diverged_at,
                        contours: if p == 0 { contours } else { &[] },
                        log_scale,
                        note: (p == 1 && !has_momentum).then_some("no momentum p"),
                        leapfrog: &[],
                    };
                    let response = portrait::show(
                        ui,
                        side,
                        &mut column.views[p],
                        &data,
                        &mut column.textures[p],
                        &self.colormap,
                    );
                    column.rects[p] = response.rect;
                }
                for rect in column.rects.iter_mut().skip(layout.portraits) {
                    *rect = egui::Rect::NOTHING;
                }
            };
            if layout.across > 1 {
                ui.horizontal(|ui| draw(ui));
            } else {
                draw(ui);
            }
        });
    }

    /// Distance to truth and kinetic temperature of every column over the steps; without a
    /// column whose sampler has momentum (SGLD, SGD), the distance alone, full width: a
    /// kinetic temperature plot would be an empty frame.
    fn shared_plots(&self, ui: &mut Ui, width: f32, height: f32) {
        let momentum = |k: usize| self.comparison.columns[k].sampler.kind.has_momentum();
        let any_momentum = (0..self.columns.len()).any(momentum);
        let w = if any_momentum {
            (width - ui.spacing().item_spacing.x) / 2.0
        } else {
            width
        };
        type Pick = fn(&crate::diagnostics::SeriesRow) -> f64;
        let distance: Pick = |r| r.energy_distance;
        let temperature: Pick = |r| r.kinetic_temperature;
        // Each quantity on an axis that turns logarithmic when an explosion spans decades.
        let scale = |f: Pick, shown: &dyn Fn(usize) -> bool| {
            Scale::for_values(
                (0..self.columns.len())
                    .filter(|&k| shown(k))
                    .flat_map(|k| self.columns[k].sim.snapshot().series.iter().map(f)),
            )
        };
        let line = |k: usize, f: Pick, scale: Scale| {
            let points: PlotPoints<'static> = self.columns[k]
                .sim
                .snapshot()
                .series
                .iter()
                .map(|r| [f64::from(r.step), scale.to_plot(f(r))])
                .filter(|p| p[1].is_finite())
                .collect();
            Line::new(self.comparison.columns[k].label.clone(), points).color(COLUMN_COLORS[k])
        };
        // No axes before the series span two steps (egui_plot labels a made-up range).
        let shown = self
            .columns
            .iter()
            .any(|c| c.sim.snapshot().series.len() >= 2);
        ui.horizontal(|ui| {
            let s = scale(distance, &|_| true);
            s.apply(super::plots::fixed_plot("compare distance", w, height))
                // No legend over the curves: each line has its column's colour, as the
                // column titles above do.
                .x_grid_spacer(crate::app::axes::x_marks)
                .show_axes(shown)
                .show_grid(shown)
                .x_axis_label("step")
                .y_axis_label(super::axes::fit_title(
                    ui,
                    &[
                        &format!("energy distance to truth{}", s.note()),
                        &format!("distance to truth{}", s.note()),
                        "distance",
                    ],
                    height,
                ))
                .show_outlined(ui, |p| {
                    for k in 0..self.columns.len() {
                        p.line(line(k, distance, s));
                    }
                });
            if !any_momentum {
                return;
            }
            let s = scale(temperature, &momentum);
            s.apply(super::plots::fixed_plot("compare temperature", w, height))
                // No legend over the curves: each line has its column's colour, as the
                // column titles above do.
                .x_grid_spacer(crate::app::axes::x_marks)
                .show_axes(shown)
                .show_grid(shown)
                .x_axis_label("step")
                .y_axis_label(super::axes::fit_title(
                    ui,
                    &[
                        &format!("kinetic temperature{}", s.note()),
                        "kinetic temperature",
                        "kinetic T",
                    ],
                    height,
                ))
                .show_outlined(ui, |p| {
                    for k in 0..self.columns.len() {
                        if momentum(k) {
                            p.line(line(k, temperature, s));
                        }
                    }
                });
        });
    }
}

impl View for CompareView {
    fn refresh(&mut self) {
        for c in &mut self.columns {
            c.sim.refresh();
        }
        self.drive();
    }

    fn controls(&mut self, ui: &mut Ui, shell: &mut Shell) {
        let actions = controls::transport(ui, self.playing, "↺ Reset chains");
        if actions.toggle_play {
            self.act(Action::TogglePlay);
        }
        if actions.step {
            self.act(Action::Step);
        }
        if actions.reset {
            self.act(Action::Reset);
        }
        ui.separator();
        ui.label(RichText::new("Columns").strong());
        let count = self.comparison.columns.len();
        let can_remove = count > *COMPARISON_COLUMNS.start();
        let mut remove = None;
        for (k, column) in self.comparison.columns.iter_mut().enumerate() {
            egui::CollapsingHeader::new(
                RichText::new(format!("{}: {}", k + 1, column.label)).color(COLUMN_COLORS[k]),
            )
            .id_salt(("column", k))
            .default_open(false)
            .show(ui, |ui| {
                let before = column.sampler;
                controls::sampler_controls(ui, &mut column.sampler);
                // A label that only named the sampler follows it.
                if column.sampler.kind != before.kind
                    && column.label.eq_ignore_ascii_case(before.kind.name())
                {
                    column.label = column.sampler.kind.name().to_uppercase();
                }
                // A label that states the step size follows it ("η = 1.8" → "η = 2.1"), so the
                // header, legend, CSV and a saved preset never name a step that no longer runs.
                if column.sampler.h != before.h
                    && let Some(label) = label_with_step(&column.label, before.h, column.sampler.h)
                {
                    column.label = label;
                }
                if ui
                    .add_enabled(can_remove, egui::Button::new("remove this column"))
                    .on_disabled_hover_text(format!(
                        "a comparison has {} to {} columns",
                        COMPARISON_COLUMNS.start(),
                        COMPARISON_COLUMNS.end()
                    ))
                    .clicked()
                {
                    remove = Some(k);
                }
            });
        }
        if let Some(k) = remove {
            self.comparison.columns.remove(k);
        }
        if count < *COMPARISON_COLUMNS.end() {
            ui.menu_button("+ add a column", |ui| {
                for (kind, name) in SamplerKind::ALL {
                    if ui.button(name.to_uppercase()).clicked() {
                        self.comparison.columns.push(Column {
                            label: name.to_uppercase(),
                            sampler: SamplerSpec {
                                kind,
                                ..SamplerSpec::default()
                            },
                            schedule: None,
                        });
                        ui.close();
                    }
                }
            });
        }
        ui.separator();
        ui.label(RichText::new("Shared by every column").strong());
        shell.save_preset |= controls::shared_controls(ui, &mut self.comparison.base);
        self.apply_changes();
    }

    fn central(&mut self, ui: &mut Ui, _shell: &mut Shell) {
        self.follow(0.15);
        let columns = self.columns.len().max(1);
        let spacing = ui.spacing().item_spacing;
        let available = ui.available_size();
        // The θ–p portrait only where some column has momentum: SGLD and SGD beside each
        // other give all the room to θ.
        let portraits: usize = if self
            .comparison
            .columns
            .iter()
            .any(|c| c.sampler.kind.has_momentum())
        {
            2
        } else {
            1
        };
        let plots = (available.y * 0.3).clamp(90.0, 260.0);
        // Each column's header lines, made once a frame; long lines fold, so the tallest
        // header's height depends on the column width each arrangement would give.
        let alarm = super::palette::error(ui.visuals());
        let headers: Vec<Vec<RichText>> = (0..self.columns.len())
            .map(|k| self.header(k, alarm))
            .collect();
        let header_height = |width: f32| {
            headers
                .iter()
                .map(|lines| {
                    lines
                        .iter()
                        .map(|line| {
                            super::fonts::wrapped_height(
                                ui,
                                line.clone(),
                                width,
                                egui::TextStyle::Body,
                            ) + spacing.y
                        })
                        .sum::<f32>()
                })
                .fold(0.0, f32::max)
        };
        let side_for = |per_row: usize, across: usize| {
            let rows = columns.div_ceil(per_row);
            let down = portraits.div_ceil(across);
            let cells = (per_row * across) as f32;
            let width = (available.x - cells * spacing.x) / cells;
            let height_left = |header: f32| {
                (available.y - plots - rows as f32 * (header + 2.0 * spacing.y))
                    / (rows * down) as f32
            };
            // The header folds to the column's width, which depends on the side: measured
            // at the widest the side can be, then again at the side that leaves.
            let first = width.min(height_left(header_height(across as f32 * width)));
            let header = header_height(across as f32 * first + (across - 1) as f32 * spacing.x);
            Arrangement {
                per_row,
                across,
                portraits,
                side: width.min(height_left(header)).max(60.0),
            }
        };
        // All columns in one row or (three or four) in two rows; each column's portraits
        // stacked or side by side: whichever gives the largest portraits in this window (two
        // columns in a wide window put their portraits side by side).
        let mut options = vec![side_for(columns, 1)];
        if columns > 2 {
            options.push(side_for(2, 1));
        }
        if portraits > 1 {
            options.push(side_for(columns, 2));
            if columns > 2 {
                options.push(side_for(2, 2));
            }
        }
        let layout = options
            .into_iter()
            .reduce(|best, o| if o.side > best.side + 0.5 { o } else { best })
            .expect("at least one arrangement");
        let rows = columns.div_ceil(layout.per_row);
        let truth = self
            .columns
            .first()
            .and_then(|c| c.sim.snapshot().contour_truth.clone());
        let contours = self.backdrop.contours(truth.as_deref()).to_vec();
        // Columns in order, row by row: each takes its header.
        let mut headers = headers.into_iter().enumerate();
        for _ in 0..rows {
            ui.horizontal(|ui| {
                for (k, header) in headers.by_ref().take(layout.per_row) {
                    self.column(ui, k, header, layout, &contours);
                }
            });
        }
        let rest = ui.available_size();
        // The plots take what the portraits leave (portraits limited by the width leave more).
        self.shared_plots(ui, rest.x, (rest.y - 4.0).max(80.0));
    }

    fn status(&self) -> String {
        format!(
            "{} samplers in lockstep  |  step {}",
            self.columns.len(),
            self.common_step()
        )
    }

    fn playing(&self) -> Option<bool> {
        Some(self.playing)
    }

    fn step(&self) -> u32 {
        self.common_step()
    }

    fn set_visible(&mut self, visible: bool) {
        if !visible {
            self.playing = false;
        }
    }

    fn act(&mut self, action: Action) {
        match action {
            Action::TogglePlay => self.playing = !self.playing,
            Action::Play => self.playing = true,
            Action::Pause => self.playing = false,
            Action::Step => {
                self.playing = false;
                let per_tick = self.comparison.base.view.steps_per_frame.max(1);
                self.target_step = self.common_step() + per_tick;
                for c in &self.columns {
                    c.sim.control(Control::RunTo(self.target_step));
                }
            }
            Action::Reset => {
                for c in &self.columns {
                    c.sim.control(Control::Reset);
                }
                self.target_step = 0;
            }
            Action::FlipSign => {
                for c in &mut self.comparison.columns {
                    c.sampler.flip_friction_sign();
                }
                self.apply_changes();
            }
            Action::Faster | Action::Slower => {
                let v = &mut self.comparison.base.view;
                let factor = if action == Action::Faster { 2.0 } else { 0.5 };
                v.set_speed(factor * v.speed());
                self.apply_changes();
            }
        }
    }

    fn preset(&self) -> Option<AnyPreset> {
        Some(AnyPreset::Comparison(self.comparison.clone()))
    }

    fn load(&mut self, preset: AnyPreset) -> bool {
        match preset {
            AnyPreset::Comparison(c) => {
                self.load_comparison(c);
                true
            }
            _ => false,
        }
    }

    fn series_csv(&self) -> Option<String> {
        let mut out = String::new();
        for (k, c) in self.columns.iter().enumerate() {
            out.push_str(&format!("# {}\n", self.comparison.columns[k].label));
            out.push_str(&crate::diagnostics::series_csv(&c.sim.snapshot().series));
        }
        Some(out)
    }

    fn panels(&self) -> Vec<(String, egui::Rect)> {
        self.columns
            .iter()
            .enumerate()
            .flat_map(|(k, c)| {
                let label = &self.comparison.columns[k].label;
                [
                    (format!("{label}: θ₁–θ₂"), c.rects[0]),
                    (format!("{label}: θᵢ–pᵢ"), c.rects[1]),
                ]
            })
            .collect()
    }

    fn run_to(&mut self, step: u32) {
        self.playing = false;
        self.target_step = step;
        for c in &self.columns {
            c.sim.control(Control::RunTo(step));
        }
    }

    fn error(&self) -> Option<String> {
        self.sessions()
            .find_map(|session| session.with_snapshot(|s| s.failed.clone()))
    }

    fn settled_at(&mut self, step: u32) -> bool {
        self.refresh();
        let arrived = self
            .columns
            .iter()
            .all(|c| c.sim.snapshot().step >= step && c.sim.snapshot().run_to.is_none());
        if !arrived {
            return false;
        }
        self.follow(0.0);
        (0..self.columns.len()).all(|k| {
            let specs = self.specs(k);
            self.columns[k]
                .sim
                .session()
                .with_snapshot(|s| s.histograms.len() == 2 && s.specs == specs)
        })
    }
}

/// `label` with the step size it states ("η = 1.8", "large step h = 0.07") set to `after`,
/// when the value it states is `before` as the axes write it (so a label follows a knob
/// dragged through values it rounds); None when it states no step size, or another number
/// ("c = 1", "m = 4") that is not the step.
fn label_with_step(label: &str, before: f64, after: f64) -> Option<String> {
    use super::axes::short;
    for key in ["η = ", "h = "] {
        let Some(at) = label.find(key) else { continue };
        // "h" as a word: not the end of "depth = 3".
        if label[..at]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
        {
            continue;
        }
        let start = at + key.len();
        let end = label[start..]
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | '-')))
            .map_or(label.len(), |n| start + n);
        let stated: f64 = label[start..end].parse().ok()?;
        if short(stated) == short(before) {
            return Some(format!(
                "{}{}{}",
                &label[..start],
                short(after),
                &label[end..]
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::label_with_step;

    #[test]
    fn a_label_that_states_the_step_follows_it_and_no_other_does() {
        let follow = |l: &str, b, a| label_with_step(l, b, a);
        assert_eq!(follow("η = 1.8", 1.8, 2.1).as_deref(), Some("η = 2.1"));
        assert_eq!(follow("η = 1.0", 1.0, 1.5).as_deref(), Some("η = 1.5"));
        assert_eq!(
            follow("large step h = 0.07", 0.07, 0.1).as_deref(),
            Some("large step h = 0.1")
        );
        assert_eq!(
            follow("h = 0.07 (cyclical)", 0.07, 0.05).as_deref(),
            Some("h = 0.05 (cyclical)")
        );
        assert_eq!(follow("depth = 3", 3.0, 4.0), None);
        assert_eq!(
            follow("η = 1.8", 0.5, 2.0),
            None,
            "a number that is not the step"
        );
        assert_eq!(follow("SGLD", 0.01, 0.02), None);
    }
}
