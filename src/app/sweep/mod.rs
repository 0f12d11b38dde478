//! The sweep view: a statistic of a merged sweep as a heatmap over two of its axes (a line
//! over one), hover values, and a click that opens the grid point's preset live. A sweep file
//! can also run here, in the background, filling the map as its points finish.

use super::colormap::Colormap;
use super::view::{Action, Shell, Status, View};
use crate::app::plots::Outlined;
use crate::diagnostics::growth::thermostat_blowup_step_size;
use crate::engine::BackendChoice;
use crate::preset::AnyPreset;
use crate::preset::fields::{self, Number};
use crate::preset::sweep_file::{SHIPPED_SWEEPS, Sweep};
use crate::sweep::background::{BackgroundSweep, Polled};
use crate::sweep::{self, Merged, Shard, Slice2d};
use egui::{Color32, Rect, RichText, Ui};
use egui_plot::{Line, Plot, PlotImage, PlotPoint, PlotPoints, Points};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Statistics offered first, when the records have them.
const PREFERRED: [&str; 8] = [
    "diverged_fraction",
    "t_gibbs",
    "s_knn",
    "energy_distance",
    "kinetic_temperature_error",
    "mean_xi",
    "posterior_predictive.test.accuracy",
    "posterior_predictive.test.nll",
];

/// The sweep view.
pub struct SweepView {
    /// The shard or merged file shown (followed while a local run fills it).
    file: Option<PathBuf>,
    table: Option<Merged>,
    statistics: Vec<String>,
    /// The statistic coloured.
    pub statistic: String,
    /// Whether the user chose the statistic (else the view picks one that varies, again as
    /// a running sweep's points arrive).
    statistic_picked: bool,
    /// The horizontal and vertical axes.
    pub axes: (usize, usize),
    /// The value index at which each other axis is held.
    slice: Vec<usize>,
    log_colour: bool,
    run: Option<BackgroundSweep>,
    error: Option<String>,
    colormap: Colormap,
    plot_rect: Option<Rect>,
    texture: Option<(egui::TextureHandle, Vec<Option<f64>>)>,
    slice_cache: Option<(SliceKey, Slice2d)>,
    /// The shipped sweeps, parsed once (each point checked): for the buttons and their hover.
    shipped: Vec<(&'static str, Result<Sweep, String>)>,
    backend: BackendChoice,
    /// Where sweeps run here write their points.
    folder: PathBuf,
}

/// What a slice of the table depends on.
#[derive(Clone, Debug, PartialEq)]
struct SliceKey {
    statistic: String,
    axes: (usize, usize),
    held: Vec<usize>,
    records: usize,
}

impl SweepView {
    /// An empty view (a sweep is opened from the controls or the File menu) that runs
    /// sweeps in `folder`.
    pub fn new(backend: BackendChoice, folder: PathBuf) -> Self {
        Self {
            file: None,
            table: None,
            statistics: Vec::new(),
            statistic: String::new(),
            statistic_picked: false,
            axes: (0, 1),
            slice: Vec::new(),
            log_colour: false,
            run: None,
            error: None,
            colormap: Colormap::viridis(),
            plot_rect: None,
            texture: None,
            slice_cache: None,
            shipped: Vec::new(),
            backend,
            folder,
        }
    }

    /// Opens a sweep's results: a merged table or a shard file (`.jsonl`), or a sweep file
    /// (`.ron`), which then runs here into the view's folder (resuming what an earlier run of
    /// it left).
    pub fn open(&mut self, path: &Path) -> Result<(), String> {
        if path.extension().and_then(|e| e.to_str()) == Some("ron") {
            let loaded = Sweep::load(path).map_err(|e| e.to_string())?;
            let name = path
                .file_stem()
                .and_then(|n| n.to_str())
                .unwrap_or("sweep")
                .to_owned();
            return self.start(loaded, &name);
        }
        let table = sweep::read_merged(path).map_err(|e| format!("{e:#}"))?;
        self.cancel();
        self.run = None;
        self.file = Some(path.to_owned());
        self.show(table);
        Ok(())
    }

    /// Runs a sweep here, in the background (see [`BackgroundSweep`]).
    pub fn start(&mut self, loaded: Sweep, name: &str) -> Result<(), String> {
        self.cancel();
        let header = sweep::header(&loaded, Shard::ALL);
        let run = BackgroundSweep::start(loaded, &self.folder, name, self.backend)?;
        self.file = Some(run.file.clone());
        self.run = Some(run);
        // The header is written before the first point: show the empty map at once.
        self.show(Merged {
            header,
            records: Vec::new(),
        });
        self.statistic.clear();
        self.statistic_picked = false;
        Ok(())
    }

    fn cancel(&mut self) {
        if let Some(run) = &self.run {
            run.cancel();
        }
    }

    /// Whether a local run is going on, with (done, total) points.
    pub fn running(&self) -> Option<(usize, usize)> {
        self.run.as_ref().and_then(BackgroundSweep::progress)
    }

    /// The table shown.
    pub fn table(&self) -> Option<&Merged> {
        self.table.as_ref()
    }

    fn show(&mut self, table: Merged) {
        let axes = table.header.axis_values.len();
        if self.slice.len() != axes {
            self.slice = vec![0; axes];
            self.axes = (0, 1.min(axes.saturating_sub(1)));
        }
        self.statistics = sweep::statistics(&table);
        let varies = |p: &str| {
            let mut values = table.records.iter().filter_map(|r| sweep::statistic(r, p));
            values
                .next()
                .is_some_and(|first| values.any(|v| v != first))
        };
        // A statistic the view picked itself is picked again while it is flat: a running
        // sweep's first points may not vary in it yet.
        if !self.statistics.contains(&self.statistic)
            || (!self.statistic_picked && !varies(&self.statistic))
        {
            // The first preferred statistic that varies over the table (a map of zeros says
            // nothing), else the first preferred one there.
            let present: Vec<&str> = PREFERRED
                .iter()
                .copied()
                .filter(|p| self.statistics.iter().any(|s| s == p))
                .collect();
            self.statistic = present
                .iter()
                .find(|p| varies(p))
                .or(present.first())
                .map(|s| (*s).to_owned())
                .or_else(|| self.statistics.first().cloned())
                .unwrap_or_default();
            self.log_colour = spans_decades(&table, &self.statistic);
        }
        self.table = Some(table);
        self.texture = None;
        self.error = None;
    }

    /// Shows what a local run appended, and notices its end.
    fn poll(&mut self, shell: &mut Shell) {
        let Some(run) = &mut self.run else {
            return;
        };
        let Polled { grown, finished } = run.poll();
        if let Some(table) = grown {
            self.show(table);
        }
        let Some(result) = finished else {
            return;
        };
        shell.status = Some(match result {
            Ok((done, total)) if done == total => Status::ok(format!("sweep done: {done} points")),
            Ok((done, total)) => Status::ok(format!(
                "sweep stopped after {done} of {total} points (open it again to go on)"
            )),
            Err(e) => Status::error(e),
        });
        self.run = None;
    }

    /// The preset of record `k` of the table (the base with the point's coordinates).
    pub fn point_preset(&self, k: usize) -> Result<AnyPreset, String> {
        let table = self.table.as_ref().ok_or("no sweep open")?;
        let record = table.records.get(k).ok_or("no such point")?;
        let header = &table.header;
        // The point's coordinates and its seed, as the sweep ran it.
        let assignments: Vec<(&str, Number)> = header
            .fields
            .iter()
            .map(String::as_str)
            .zip(record.coords.iter().map(|&v| Number::Real(v)))
            .chain([("seed", Number::Whole(record.seed))])
            .collect();
        fields::set(&header.base, &assignments, None)
    }

    /// The slice shown, recomputed only when the statistic, the axes, the held values or
    /// the number of records change: a sweep of 100,000 points is not walked every frame.
    fn slice(&mut self) -> Option<Slice2d> {
        let table = self.table.as_ref()?;
        let key = SliceKey {
            statistic: self.statistic.clone(),
            axes: self.axes,
            held: self.slice.clone(),
            records: table.records.len(),
        };
        if self.slice_cache.as_ref().is_none_or(|(k, _)| *k != key) {
            let (x, y) = self.axes;
            let slice = sweep::slice2d(table, &self.statistic, x, y, &self.slice);
            self.slice_cache = Some((key, slice));
        }
        self.slice_cache.as_ref().map(|(_, s)| s.clone())
    }

    fn open_dialog(&mut self, shell: &mut Shell) {
        // A path typed into the prompt instead comes back through the shell's File → Open
        // sweep, which opens it here.
        if let Some(path) = shell.pick(super::files::FileRequest::OpenSweep) {
            self.open_reporting(&path, shell);
        }
    }

    fn open_reporting(&mut self, path: &Path, shell: &mut Shell) {
        shell.status = Some(match self.open(path) {
            Ok(()) => Status::ok(format!("opened {}", path.display())),
            Err(e) => Status::error(e),
        });
    }

    fn axis_controls(&mut self, ui: &mut Ui) {
        let Some(table) = &self.table else {
            return;
        };
        let fields = table.header.fields.clone();
        let values = table.header.axis_values.clone();
        if fields.len() >= 2 {
            let (mut x, mut y) = self.axes;
            egui::ComboBox::from_label("horizontal")
                .selected_text(&fields[x])
                .show_ui(ui, |ui| {
                    for (k, f) in fields.iter().enumerate() {
                        ui.selectable_value(&mut x, k, f);
                    }
                });
            egui::ComboBox::from_label("vertical")
                .selected_text(&fields[y])
                .show_ui(ui, |ui| {
                    for (k, f) in fields.iter().enumerate() {
                        ui.selectable_value(&mut y, k, f);
                    }
                });
            if x == y {
                // Picking the other axis's field swaps them.
                if x != self.axes.0 {
                    y = self.axes.0;
                } else {
                    x = self.axes.1;
                }
            }
            if (x, y) != self.axes {
                self.axes = (x, y);
                self.texture = None;
            }
        }
        for (k, field) in fields.iter().enumerate() {
            if k == self.axes.0 || (fields.len() >= 2 && k == self.axes.1) {
                continue;
            }
            let n = values[k].len();
            let mut i = self.slice[k].min(n - 1);
            let column = values[k].clone();
            crate::app::controls::bounded(ui, &mut i, 0..=n - 1, move |s| {
                s.custom_formatter(move |v, _| {
                    column
                        .get(v as usize)
                        .map_or_else(|| format!("{v}"), |x| super::axes::short(*x))
                })
                .text(format!("{field} (held)"))
            });
            if i != self.slice[k] {
                self.slice[k] = i;
                self.texture = None;
            }
        }
    }

    fn heatmap(&mut self, ui: &mut Ui, shell: &mut Shell) {
        let Some(slice) = self.slice() else {
            return;
        };
        let Some(table) = &self.table else {
            return;
        };
        let (x, y) = self.axes;
        let fields = table.header.fields.clone();
        let (nx, ny) = (slice.x_values.len(), slice.y_values.len());
        let finite: Vec<f64> = slice.values.iter().flatten().copied().collect();
        let log = self.log_colour && finite.iter().all(|v| *v > 0.0);
        let map = |v: f64| if log { v.log10() } else { v };
        let (lo, hi) = finite
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(map(*v)), b.max(map(*v)))
            });
        let span = if hi > lo { hi - lo } else { 1.0 };
        let stale = self
            .texture
            .as_ref()
            .is_none_or(|(_, shown)| *shown != slice.values);
        if stale {
            // One texel per grid point, nearest filtering: crisp cells at any size. Missing
            // points (not run yet, or null) are grey.
            let mut image = egui::ColorImage::filled([nx, ny], Color32::from_gray(60));
            for iy in 0..ny {
                for ix in 0..nx {
                    if let Some(v) = slice.values[iy * nx + ix] {
                        // Row 0 of the image is the top: the highest y.
                        image[(ix, ny - 1 - iy)] =
                            self.colormap.color(((map(v) - lo) / span) as f32);
                    }
                }
            }
            let texture =
                ui.ctx()
                    .load_texture("sweep heatmap", image, egui::TextureOptions::NEAREST);
            self.texture = Some((texture, slice.values.clone()));
        }
        let texture = self.texture.as_ref().expect("made above").0.id();
        let x_log = sweep::is_log_spaced(&slice.x_values);
        let y_log = sweep::is_log_spaced(&slice.y_values);
        let (xv, yv) = (slice.x_values.clone(), slice.y_values.clone());
        let label = |values: &[f64], at: f64| -> String {
            let i = at.round();
            if (at - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < values.len() {
                super::axes::short(values[i as usize])
            } else {
                String::new()
            }
        };
        let available = ui.available_size();
        let bar = 70.0;
        let side_x = (available.x - bar - 20.0).max(200.0);
        let side_y = (available.y - 30.0).max(200.0);
        let theory = self.theory_curve(&slice);
        let mut clicked = None;
        ui.horizontal(|ui| {
            let response = Plot::new("sweep heatmap")
                .width(side_x)
                .height(side_y)
                .allow_scroll(false)
                .allow_zoom(false)
                .allow_drag(false)
                .allow_boxed_zoom(false)
                .show_grid(false)
                .x_axis_label(format!(
                    "{}{}",
                    fields[x],
                    if x_log { " (log)" } else { "" }
                ))
                .y_axis_label(format!(
                    "{}{}",
                    fields[y],
                    if y_log { " (log)" } else { "" }
                ))
                .x_grid_spacer(move |_| index_marks(xv.len()))
                .y_grid_spacer(move |_| index_marks(yv.len()))
                .x_axis_formatter({
                    let v = slice.x_values.clone();
                    move |m, _| label(&v, m.value)
                })
                .y_axis_formatter({
                    let v = slice.y_values.clone();
                    move |m, _| label(&v, m.value)
                })
                .label_formatter(|_| None)
                .include_x(-0.5)
                .include_x(nx as f64 - 0.5)
                .include_y(-0.5)
                .include_y(ny as f64 - 0.5)
                .show(ui, |p| {
                    p.image(PlotImage::new(
                        "cells",
                        texture,
                        PlotPoint::new((nx as f64 - 1.0) / 2.0, (ny as f64 - 1.0) / 2.0),
                        egui::vec2(nx as f32, ny as f32),
                    ));
                    if let Some((points, name)) = &theory {
                        p.line(
                            Line::new(name.clone(), PlotPoints::from(points.clone()))
                                .color(Color32::from_rgb(255, 90, 90))
                                .width(2.5),
                        );
                    }
                    let pointer = p.pointer_coordinate();
                    let cell = pointer.and_then(|c| {
                        let (ix, iy) = (c.x.round(), c.y.round());
                        (ix >= 0.0 && iy >= 0.0 && (ix as usize) < nx && (iy as usize) < ny)
                            .then_some((ix as usize, iy as usize))
                    });
                    if let Some((ix, iy)) = cell {
                        p.points(
                            Points::new("", vec![[ix as f64, iy as f64]])
                                .radius(4.0)
                                .color(Color32::WHITE),
                        );
                    }
                    cell
                });
            self.plot_rect = Some(response.response.rect);
            if let Some((ix, iy)) = response.inner {
                let value = slice.values[iy * nx + ix];
                let text = format!(
                    "{} = {}\n{} = {}\n{} = {}\n\nclick: open this point live",
                    fields[x],
                    super::axes::short(slice.x_values[ix]),
                    fields[y],
                    super::axes::short(slice.y_values[iy]),
                    sweep::statistic_label(&self.statistic),
                    value.map_or("—".to_owned(), super::axes::short)
                );
                let response = response.response.on_hover_text_at_pointer(text);
                if response.clicked() {
                    clicked = slice.records[iy * nx + ix];
                }
            }
            self.colour_bar(ui, lo, hi, log, bar, side_y);
        });
        if let Some((_, name)) = &theory {
            ui.label(
                RichText::new(format!("red: {name}"))
                    .small()
                    .color(super::palette::error(ui.visuals())),
            );
        }
        if let Some(k) = clicked {
            match self.point_preset(k) {
                Ok(preset) => shell.open = Some(preset),
                Err(e) => shell.status = Some(Status::error(e)),
            }
        }
    }

    /// The thermostat blow-up boundary of MATH.md §2 on a (friction sign, h) map, in cell
    /// coordinates, with its name.
    fn theory_curve(&self, slice: &Slice2d) -> Option<(Vec<[f64; 2]>, String)> {
        let table = self.table.as_ref()?;
        let fields = &table.header.fields;
        let (x, y) = self.axes;
        let (phi_on_x, phi_values, h_values) = match (fields[x].as_str(), fields[y].as_str()) {
            ("sampler.friction_sign", "sampler.h") => (true, &slice.x_values, &slice.y_values),
            ("sampler.h", "sampler.friction_sign") => (false, &slice.y_values, &slice.x_values),
            _ => return None,
        };
        let temperature = sweep::record::sampler_temperature(&table.header.base)?;
        let steps = table.header.base.steps();
        let (lo, hi) = (
            phi_values.iter().copied().fold(f64::INFINITY, f64::min),
            phi_values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        let points: Vec<[f64; 2]> = (0..=200)
            .filter_map(|k| {
                let phi = lo + (hi - lo) * f64::from(k) / 200.0;
                let h = thermostat_blowup_step_size(phi, temperature, steps)?;
                let (cp, ch) = (
                    sweep::cell_position(phi_values, phi)?,
                    sweep::cell_position(h_values, h)?,
                );
                Some(if phi_on_x { [cp, ch] } else { [ch, cp] })
            })
            .collect();
        (points.len() >= 2).then(|| {
            (
                points,
                format!(
                    "thermostat blow-up within {steps} steps: h = π/(2·{steps}·√(|φ|T)) \
                     (MATH.md §2)"
                ),
            )
        })
    }

    fn colour_bar(&self, ui: &mut Ui, lo: f64, hi: f64, log: bool, width: f32, height: f32) {
        let (rect, _) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
        let painter = ui.painter_at(rect);
        let bar = Rect::from_min_size(
            rect.min + egui::vec2(4.0, 10.0),
            egui::vec2(14.0, height - 40.0),
        );
        let steps = 64;
        for k in 0..steps {
            let t = k as f32 / (steps - 1) as f32;
            let y0 = bar.bottom() - t * bar.height();
            painter.rect_filled(
                Rect::from_min_max(
                    egui::pos2(bar.left(), y0 - bar.height() / steps as f32 - 0.5),
                    egui::pos2(bar.right(), y0),
                ),
                0.0,
                self.colormap.color(t),
            );
        }
        let text = |v: f64| {
            let v = if log { 10f64.powf(v) } else { v };
            if v.is_finite() {
                super::axes::short(v)
            } else {
                "—".into()
            }
        };
        let font = super::fonts::painter_font(ui.style(), 12.0);
        let colour = ui.visuals().text_color();
        // A constant statistic has one value to name, not three.
        let marks: &[(f64, f32)] = if hi > lo {
            &[
                (hi, bar.top()),
                ((lo + hi) / 2.0, bar.center().y),
                (lo, bar.bottom()),
            ]
        } else {
            &[(lo, bar.bottom())]
        };
        for &(v, y) in marks {
            painter.text(
                egui::pos2(bar.right() + 4.0, y),
                egui::Align2::LEFT_CENTER,
                text(v),
                font.clone(),
                colour,
            );
        }
    }

    fn line_plot(&mut self, ui: &mut Ui) {
        let Some(table) = &self.table else {
            return;
        };
        let values = &table.header.axis_values[0];
        let points: Vec<[f64; 2]> = table
            .records
            .iter()
            .filter_map(|r| Some([r.coords[0], sweep::statistic(r, &self.statistic)?]))
            .collect();
        let log = sweep::is_log_spaced(values);
        let field = table.header.fields[0].clone();
        let size = ui.available_size();
        let response = super::plots::fixed_plot("sweep line", size.x, size.y - 30.0)
            .x_axis_label(if log {
                format!("log₁₀ {field}")
            } else {
                field
            })
            .y_axis_label(sweep::statistic_label(&self.statistic))
            .show_outlined(ui, |p| {
                let pts: Vec<[f64; 2]> = points
                    .iter()
                    .map(|&[x, v]| [if log { x.log10() } else { x }, v])
                    .collect();
                p.line(Line::new(
                    sweep::statistic_label(&self.statistic),
                    PlotPoints::from(pts.clone()),
                ));
                p.points(Points::new("", pts).radius(3.0));
            });
        self.plot_rect = Some(response.response.rect);
    }
}

/// Whether a statistic is positive and spans more than 1.5 decades over the table: then a
/// log colour scale shows its structure, where a linear one shows only its largest cell.
fn spans_decades(table: &Merged, name: &str) -> bool {
    let values: Vec<f64> = table
        .records
        .iter()
        .filter_map(|r| sweep::statistic(r, name))
        .collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(a, b), v| (a.min(*v), b.max(*v)));
    values.iter().all(|v| *v > 0.0) && lo.is_finite() && hi / lo > 10f64.powf(1.5)
}

/// Grid marks at every cell centre (thinned to about ten labels).
fn index_marks(n: usize) -> Vec<egui_plot::GridMark> {
    let every = n.div_ceil(10).max(1);
    (0..n)
        .step_by(every)
        .map(|i| egui_plot::GridMark {
            value: i as f64,
            step_size: every as f64,
        })
        .collect()
}

impl View for SweepView {
    fn controls(&mut self, ui: &mut Ui, shell: &mut Shell) {
        ui.heading("Sweep");
        if ui
            .button("Open results or sweep file…")
            .on_hover_text(
                "merged.jsonl (or a shard file) from `atmc-lab sweep`, or a sweep file (.ron) \
                 to run here",
            )
            .clicked()
        {
            self.open_dialog(shell);
        }
        ui.label(RichText::new("Run a shipped sweep here:").small());
        if self.shipped.is_empty() {
            self.shipped = SHIPPED_SWEEPS
                .iter()
                .map(|(name, text)| {
                    let parsed = Sweep::parse(text, name, Path::new("."));
                    (*name, parsed.map_err(|e| e.to_string()))
                })
                .collect();
        }
        let mut chosen = None;
        for (name, parsed) in &self.shipped {
            let hover = match parsed {
                Ok(s) => s.spec.description.clone(),
                Err(e) => e.clone(),
            };
            if ui
                .button(format!("▶ {name}"))
                .on_hover_text(hover)
                .clicked()
            {
                chosen = Some((*name, parsed.clone()));
            }
        }
        if let Some((name, parsed)) = chosen
            && let Err(e) = parsed.and_then(|s| self.start(s, name))
        {
            shell.status = Some(Status::error(e));
        }
        if let Some((done, total)) = self.running() {
            ui.separator();
            ui.add(
                egui::ProgressBar::new(done as f32 / total.max(1) as f32)
                    .text(format!("{done} of {total} points")),
            );
            if ui.button("■ Stop (resumes when opened again)").clicked() {
                self.cancel();
            }
            ui.ctx().request_repaint_after(Duration::from_millis(300));
        }
        let Some(table) = &self.table else {
            ui.separator();
            ui.label(
                "A sweep runs a preset over a grid of parameter values, one independent run \
                 per point. Run one here, or on a cluster with `atmc-lab sweep FILE --slurm`, \
                 and open its merged.jsonl.",
            );
            return;
        };
        ui.separator();
        let header = &table.header;
        if !header.sweep.is_empty() {
            ui.label(RichText::new(&header.sweep).strong());
        }
        if !header.description.is_empty() {
            ui.label(RichText::new(&header.description).small());
        }
        ui.label(format!(
            "{} of {} points",
            table.records.len(),
            header.points
        ));
        if let Some(file) = &self.file {
            ui.label(RichText::new(file.display().to_string()).small().weak());
        }
        ui.separator();
        let statistics = self.statistics.clone();
        egui::ComboBox::from_label("colour by")
            .selected_text(sweep::statistic_label(&self.statistic))
            .width(180.0)
            .show_ui(ui, |ui| {
                for s in &statistics {
                    if ui
                        .selectable_value(&mut self.statistic, s.clone(), sweep::statistic_label(s))
                        .on_hover_text(format!("`{s}` in the sweep's JSON and CSV"))
                        .changed()
                    {
                        self.texture = None;
                        self.statistic_picked = true;
                        self.log_colour = self.table.as_ref().is_some_and(|t| spans_decades(t, s));
                    }
                }
            });
        if ui
            .checkbox(&mut self.log_colour, "log colour scale")
            .changed()
        {
            self.texture = None;
        }
        self.axis_controls(ui);
    }

    fn central(&mut self, ui: &mut Ui, shell: &mut Shell) {
        self.poll(shell);
        if let Some(e) = &self.error {
            ui.colored_label(super::palette::error(ui.visuals()), e);
        }
        let Some(table) = &self.table else {
            ui.centered_and_justified(|ui| {
                ui.label("Open a sweep, or run a shipped one, from the panel on the left.");
            });
            return;
        };
        if table.header.axis_values.len() >= 2
            && table
                .header
                .axis_values
                .iter()
                .map(Vec::len)
                .product::<usize>()
                == table.header.points
        {
            self.heatmap(ui, shell);
        } else {
            self.line_plot(ui);
        }
    }

    fn status(&self) -> String {
        match (&self.table, self.running()) {
            (Some(_), Some((done, total))) => format!("sweep running: {done} of {total} points"),
            (Some(t), None) => format!("sweep: {} of {} points", t.records.len(), t.header.points),
            (None, _) => "no sweep open".into(),
        }
    }

    fn step(&self) -> u32 {
        self.table.as_ref().map_or(0, |t| t.records.len() as u32)
    }

    fn act(&mut self, action: Action) {
        if action == Action::Reset {
            self.cancel();
        }
    }

    fn series_csv(&self) -> Option<String> {
        self.table.as_ref().map(sweep::csv_table)
    }

    fn panels(&self) -> Vec<(String, Rect)> {
        self.plot_rect
            .map(|r| vec![("sweep map".to_owned(), r)])
            .unwrap_or_default()
    }

    /// Settled when no local run is going on (every point is in).
    fn settled_at(&mut self, _step: u32) -> bool {
        if self.run.as_ref().is_some_and(|r| r.progress().is_some()) {
            self.poll(&mut Shell::default());
        }
        self.run.is_none()
    }

    fn error(&self) -> Option<String> {
        self.error.clone()
    }

    fn open_file(&mut self, path: &Path) -> Result<(), String> {
        self.open(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of the shipped friction-sign sweep with these (diverged fraction, energy
    /// distance) points.
    fn table(points: &[(f64, f64)]) -> Merged {
        let loaded = Sweep::load(Path::new("friction-sign-explosion")).expect("shipped sweep");
        Merged {
            header: sweep::header(&loaded, Shard::ALL),
            records: points
                .iter()
                .enumerate()
                .map(|(index, &(diverged, energy))| sweep::Record {
                    index,
                    coords: vec![0.5, 0.01],
                    seed: 1,
                    run: serde_json::json!({
                        "diverged_fraction": diverged,
                        "energy_distance": energy,
                    }),
                })
                .collect(),
        }
    }

    #[test]
    fn the_view_picks_again_while_its_own_pick_is_flat_but_keeps_the_users() {
        let mut view = SweepView::new(BackendChoice::Cpu, PathBuf::new());
        // A running sweep's first point: nothing varies yet.
        view.show(table(&[(0.0, 0.1)]));
        assert_eq!(view.statistic, "diverged_fraction");
        view.show(table(&[(0.0, 0.1), (0.0, 0.3)]));
        assert_eq!(view.statistic, "energy_distance");
        // What the user chose stays, flat or not.
        view.statistic = "diverged_fraction".to_owned();
        view.statistic_picked = true;
        view.show(table(&[(0.0, 0.1), (0.0, 0.3), (0.0, 0.2)]));
        assert_eq!(view.statistic, "diverged_fraction");
    }
}
