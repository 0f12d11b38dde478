//! The thermodynamics view (MATH.md §5): a learning-rate sweep of SGD (or any 2-D sampler,
//! or the sphere toy) measured thermodynamically in the background, drawn as it fills: U,
//! S, the slope and Gibbs temperatures and the free energy over η; the Gibbs test of one
//! chosen η (the ensemble against the fitted exp(−L/T)/Z); on the sphere, the chains on a
//! globe and an equal-area map with the signal-to-noise ratio over time.

use super::colormap::Colormap;
use super::view::{Action, Shell, Status, View};
use crate::app::plots::Outlined;
use crate::diagnostics::thermodynamics::Histogram;
use crate::engine::BackendChoice;
use crate::math::SamplerKind;
use crate::preset::AnyPreset;
use crate::preset::sweep_file::Sweep;
use crate::sweep::background::{BackgroundSweep, Polled};
use crate::sweep::thermo_table::{Row, Table, table};
use crate::sweep::{self, Merged};
use egui::{Color32, Rect, RichText, Ui};
use egui_plot::{Legend, Line, LineStyle, PlotImage, PlotPoint, PlotPoints, Points};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The problems offered, by shipped preset name.
const PROBLEMS: [(&str, &str); 7] = [
    ("thermo-quadratic", "Quadratic (known answer)"),
    ("default", "Banana, noise σ = 2"),
    ("logistic", "Logistic regression"),
    ("sphere-op", "Sphere, overparameterised"),
    ("sphere-up", "Sphere, underparameterised"),
    ("mlp-up", "MLP, underparameterised"),
    ("mlp-op", "MLP, overparameterised"),
];

/// The learning rates first offered for an MLP (in the lab's units: the step on the summed
/// loss, so η × training points is the per-example learning rate).
const MLP_LR: (f64, f64) = (1e-3, 3e-2);

const SLOPE: Color32 = Color32::from_rgb(255, 170, 60);
const GIBBS: Color32 = Color32::from_rgb(120, 200, 255);
const THEORY: Color32 = Color32::from_rgb(200, 200, 200);
const HELD_OUT: Color32 = Color32::from_rgb(230, 110, 230);
const EXCLUDED: Color32 = Color32::from_rgb(140, 140, 140);

/// The thermodynamics view.
pub struct ThermoView {
    /// The preset swept (its sampler runs at every learning rate).
    pub base: AnyPreset,
    problem: String,
    /// Smallest and largest learning rate.
    pub lr: (f64, f64),
    /// Learning rates on the grid.
    pub points: u32,
    run: Option<BackgroundSweep>,
    /// The table drawn.
    pub table: Option<Table>,
    /// The row of the Gibbs test.
    pub selected: usize,
    error: Option<String>,
    backend: BackendChoice,
    /// Where the sweeps run (each in a folder of its own, with the base preset beside).
    folder: PathBuf,
    globe: (f32, f32),
    textures: Vec<egui::TextureHandle>,
    texture_key: Option<(usize, usize)>,
    panels: Vec<(String, Rect)>,
}

impl ThermoView {
    /// The view on the quadratic's known answer, not yet run; its sweeps run in `folder`.
    pub fn new(backend: BackendChoice, folder: PathBuf) -> Self {
        let base = AnyPreset::load("thermo-quadratic").expect("a shipped preset");
        Self {
            base,
            problem: "thermo-quadratic".into(),
            lr: (0.18, 1.8),
            points: 12,
            run: None,
            table: None,
            selected: 0,
            error: None,
            backend,
            folder,
            globe: (0.6, 0.5),
            textures: Vec::new(),
            texture_key: None,
            panels: Vec::new(),
        }
    }

    fn choose(&mut self, name: &str) {
        if let Ok(p) = AnyPreset::load(name) {
            let (lr, sampler) = match &p {
                AnyPreset::Sphere(_) => ((0.01, 1.0), None),
                AnyPreset::Mlp(_) => (MLP_LR, None),
                AnyPreset::Toy(t) if name == "thermo-quadratic" => {
                    ((0.18, 1.8), Some(t.sampler.kind))
                }
                _ => ((0.002, 0.2), Some(SamplerKind::Sgd)),
            };
            self.base = p;
            if let (AnyPreset::Toy(t), Some(kind)) = (&mut self.base, sampler) {
                t.sampler.kind = kind;
            }
            self.lr = lr;
            self.problem = name.to_owned();
        }
    }

    /// Starts the sweep in the background (resuming one with the same settings).
    pub fn start(&mut self) -> Result<(), String> {
        self.cancel();
        let folder = &self.folder;
        std::fs::create_dir_all(folder)
            .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
        // The base as edited here, written next to the sweep so the sweep file can name it.
        let base_file = folder.join(format!("thermo-{}-base.ron", self.problem));
        crate::fsutil::write_atomic(&base_file, self.base.to_ron())
            .map_err(|e| format!("{e:#}"))?;
        let base = std::fs::canonicalize(&base_file).map_err(|e| e.to_string())?;
        let spec = crate::sweep::thermo_table::spec(
            &base.display().to_string(),
            self.lr,
            self.points,
            None,
            None,
        );
        let text =
            ron::ser::to_string_pretty(&spec, ron::ser::PrettyConfig::new().struct_names(true))
                .map_err(|e| e.to_string())?;
        let loaded = Sweep::parse(&text, "thermodynamics sweep", Path::new("."))
            .map_err(|e| e.to_string())?;
        let header = sweep::header(&loaded, sweep::Shard::ALL);
        let run = BackgroundSweep::start(
            loaded,
            folder,
            &format!("thermo-{}", self.problem),
            self.backend,
        )?;
        self.run = Some(run);
        self.show(Merged {
            header,
            records: Vec::new(),
        });
        Ok(())
    }

    fn cancel(&mut self) {
        if let Some(r) = &self.run {
            r.cancel();
        }
    }

    /// (done, total) learning rates while the sweep runs.
    pub fn running(&self) -> Option<(usize, usize)> {
        self.run.as_ref().and_then(BackgroundSweep::progress)
    }

    fn show(&mut self, merged: Merged) {
        match table(&merged) {
            Ok(t) => {
                // The Gibbs test starts in the middle of the sweep (the ends have no slope).
                if self
                    .table
                    .as_ref()
                    .is_none_or(|old| old.rows.len() != t.rows.len())
                {
                    self.selected = t.rows.len() / 2;
                }
                self.table = Some(t);
                self.error = None;
            }
            Err(e) => self.error = Some(format!("{e:#}")),
        }
        self.texture_key = None;
    }

    fn poll(&mut self, shell: &mut Shell) {
        let Some(run) = &mut self.run else {
            return;
        };
        let Polled { grown, finished } = run.poll();
        if let Some(m) = grown {
            self.show(m);
        }
        let Some(result) = finished else {
            return;
        };
        shell.status = Some(match result {
            Ok((done, total)) if done == total => {
                Status::ok(format!("thermodynamics sweep done: {done} learning rates"))
            }
            Ok((done, total)) => Status::ok(format!(
                "stopped after {done} of {total} learning rates (run again to go on)"
            )),
            Err(e) => Status::error(e),
        });
        self.run = None;
    }

    /// The row chosen for the details below the curves.
    fn selected_row(&self) -> Option<Row> {
        self.table.as_ref()?.rows.get(self.selected).cloned()
    }

    fn line(points: Vec<[f64; 2]>, name: &str, color: Color32) -> Line<'static> {
        Line::new(name.to_owned(), PlotPoints::from(points))
            .color(color)
            .width(2.0)
    }

    /// The four curves over η: U, S, T and F.
    fn curves(&mut self, ui: &mut Ui, width: f32, height: f32) {
        let Some(t) = &self.table else {
            return;
        };
        let x = |r: &Row| r.point.eta.log10();
        let pick = |f: &dyn Fn(&Row) -> Option<f64>, included: bool| -> Vec<[f64; 2]> {
            t.rows
                .iter()
                .filter(|r| r.point.excluded.is_none() == included)
                .filter_map(|r| f(r).filter(|v| v.is_finite()).map(|v| [x(r), v]))
                .collect()
        };
        let excluded_u = pick(&|r| Some(r.point.u), false);
        let w = (width - 24.0) / 4.0;
        let plot = |id: &str, y: &str| {
            super::plots::fixed_plot(id, w, height)
                .legend(Legend::default().position(egui_plot::Corner::LeftTop))
                .x_axis_label("learning rate η (log)")
                .y_axis_label(y.to_owned())
                .x_axis_formatter(|m, _| super::axes::short(10f64.powf(m.value)))
        };
        ui.horizontal(|ui| {
            let r = plot("thermo U", "U: mean training loss").show_outlined(ui, |p| {
                p.line(Self::line(pick(&|r| Some(r.point.u), true), "U", GIBBS));
                p.points(
                    Points::new("", pick(&|r| Some(r.point.u), true))
                        .radius(3.0)
                        .color(GIBBS),
                );
                if !excluded_u.is_empty() {
                    p.points(left_out(excluded_u.clone()));
                }
                p.points(held_out(pick(&|r| r.u_predicted, true)));
            });
            self.panels.push(("U(η) panel".into(), r.response.rect));
            let r = plot("thermo S", "S: entropy (nats)").show_outlined(ui, |p| {
                // The known answer first and thin, so the measurements show on top of it.
                let theory = pick(&|r| r.point.s_theory, true);
                if !theory.is_empty() {
                    p.line(
                        Self::line(theory, "known answer", THEORY)
                            .width(1.0)
                            .style(LineStyle::dashed_loose()),
                    );
                }
                // The ensemble's k-NN S where it counts; in weight space, where it does not
                // (its record says why), the windowed S of the networks' own iterates instead.
                let counted = |r: &Row| {
                    r.point
                        .s_knn
                        .filter(|_| r.point.ensemble_entropy_note.is_none())
                };
                p.line(Self::line(pick(&counted, true), "k-NN", GIBBS));
                let grey = pick(&counted, false);
                if !grey.is_empty() {
                    p.points(left_out(grey));
                }
                let windowed = |r: &Row| r.point.window.as_ref().and_then(|w| w.s);
                let label = t
                    .rows
                    .iter()
                    .find_map(|r| r.point.window.as_ref())
                    .map(|w| format!("windows ({} directions)", w.dims));
                if let Some(label) = label {
                    p.line(Self::line(pick(&windowed, true), &label, SLOPE));
                    let grey = pick(&windowed, false);
                    if !grey.is_empty() {
                        p.points(left_out(grey));
                    }
                }
                p.line(
                    Self::line(pick(&|r| r.point.s_hist, true), "histogram", SLOPE)
                        .style(LineStyle::dashed_dense()),
                );
                p.points(held_out(pick(&|r| r.s_predicted, true)));
            });
            self.panels.push(("S(η) panel".into(), r.response.rect));
            let r = plot("thermo T", "T: temperature").show_outlined(ui, |p| {
                let theory = pick(&|r| r.point.t_theory, true);
                if !theory.is_empty() {
                    p.line(
                        Self::line(theory, "ησ²/(2 − ηλ)", THEORY)
                            .width(1.0)
                            .style(LineStyle::dashed_loose()),
                    );
                }
                p.line(Self::line(pick(&|r| r.t_slope, true), "slope dU/dS", SLOPE));
                p.line(Self::line(
                    pick(&|r| r.point.t_gibbs, true),
                    "Gibbs fit",
                    GIBBS,
                ));
                let grey = pick(&|r| r.point.t_gibbs, false);
                if !grey.is_empty() {
                    p.points(left_out(grey));
                }
                p.points(held_out(pick(&|r| r.t_predicted, true)));
            });
            self.panels.push(("T(η) panel".into(), r.response.rect));
            let r = plot("thermo F", "F = U − T·S (slope T)")
                .legend(Legend::default().position(egui_plot::Corner::RightTop))
                .show_outlined(ui, |p| {
                    p.line(Self::line(pick(&|r| r.free_energy, true), "F", GIBBS));
                    p.points(
                        Points::new("", pick(&|r| r.free_energy, true))
                            .radius(3.0)
                            .color(GIBBS),
                    );
                });
            self.panels.push(("F(η) panel".into(), r.response.rect));
        });
    }

    /// Images of the chosen row: the ensemble's histogram and the fitted Gibbs law its
    /// record stores (`p`, on the histogram's grid).
    fn gibbs_images(
        &mut self,
        ctx: &egui::Context,
        row: &Row,
        hist: &Histogram,
        p: &[f64],
    ) -> Option<()> {
        let key = (row.record, self.table.as_ref()?.rows.len());
        if self.texture_key == Some(key) && self.textures.len() == 2 {
            return Some(());
        }
        let grid = hist.grid;
        let n: f64 = hist.counts.iter().map(|&c| f64::from(c)).sum();
        let expected: Vec<u32> = p.iter().map(|v| (v * n * 1000.0).round() as u32).collect();
        let map = Colormap::inferno();
        let (nx, ny) = (grid.nx as usize, grid.ny as usize);
        self.textures = [hist.counts.as_slice(), expected.as_slice()]
            .iter()
            .enumerate()
            .map(|(k, c)| {
                ctx.load_texture(
                    format!("gibbs {k}"),
                    map.density_image(c, nx, ny, false),
                    egui::TextureOptions::NEAREST,
                )
            })
            .collect();
        self.texture_key = Some(key);
        Some(())
    }

    fn gibbs_test(&mut self, ui: &mut Ui, width: f32, height: f32) {
        let Some(row) = self.selected_row() else {
            return;
        };
        let Some(hist) = row.point.histogram.clone() else {
            ui.label("No histogram for this point (every chain diverged).");
            return;
        };
        let Some(fitted) = &row.point.gibbs_probabilities else {
            ui.label(
                "This record holds no fitted Gibbs law (it was written before records stored \
                 it): run the sweep again to see the Gibbs test.",
            );
            return;
        };
        if self.gibbs_images(ui.ctx(), &row, &hist, fitted).is_none() {
            ui.label("The Gibbs fit is not available for this point.");
            return;
        }
        let sphere = row.point.problem.starts_with("sphere");
        let g = hist.grid;
        let (labels, x_label, y_label) = if sphere {
            (
                ["ensemble (equal-area map)", "fitted exp(−L/T)/Z"],
                "longitude",
                "z = cos(polar angle)",
            )
        } else {
            (["ensemble histogram", "fitted exp(−L/T)/Z"], "θ₁", "θ₂")
        };
        let side = (width / 4.0 - 12.0).min(height);
        ui.horizontal(|ui| {
            for (k, label) in labels.iter().enumerate() {
                let texture = self.textures[k].id();
                // The title above the picture, so it never covers the density.
                let r = ui
                    .vertical(|ui| {
                        ui.label(RichText::new(*label).strong());
                        super::plots::fixed_plot(
                            &format!("gibbs image {k}"),
                            side * if sphere { 1.6 } else { 1.0 },
                            side - 20.0,
                        )
                        .x_axis_label(x_label)
                        .y_axis_label(y_label)
                        .show_grid(false)
                        .include_x(g.x[0])
                        .include_x(g.x[1])
                        .include_y(g.y[0])
                        .include_y(g.y[1])
                        .show_outlined(ui, |p| {
                            p.image(PlotImage::new(
                                *label,
                                texture,
                                PlotPoint::new((g.x[0] + g.x[1]) / 2.0, (g.y[0] + g.y[1]) / 2.0),
                                egui::vec2((g.x[1] - g.x[0]) as f32, (g.y[1] - g.y[0]) as f32),
                            ));
                        })
                    })
                    .inner;
                self.panels
                    .push((format!("Gibbs test: {label}"), r.response.rect));
            }
            ui.vertical(|ui| {
                let p = &row.point;
                let short = |v: Option<f64>| v.map_or("—".to_owned(), super::axes::short);
                ui.label(RichText::new(format!("η = {}", super::axes::short(p.eta))).strong());
                ui.label(format!("T (Gibbs fit) = {}", short(p.t_gibbs)));
                ui.label(format!("T (slope dU/dS) = {}", short(row.t_slope)));
                if p.t_theory.is_some() {
                    ui.label(format!("T (known answer) = {}", short(p.t_theory)));
                }
                ui.label(format!(
                    "distance: TV = {} (exact draws: {})",
                    short(p.gibbs_tv),
                    short(p.gibbs_tv_baseline)
                ));
                let verdict = match p.gibbs_consistent {
                    Some(true) => (
                        "Gibbs at this T: consistent",
                        Color32::from_rgb(140, 220, 140),
                    ),
                    Some(false) => ("not a Gibbs law at any T", Color32::from_rgb(255, 140, 100)),
                    None => ("", Color32::GRAY),
                };
                ui.colored_label(verdict.1, verdict.0);
                ui.label(format!(
                    "S: k-NN {}, histogram {}",
                    short(p.s_knn),
                    short(p.s_hist)
                ));
                if let Some(snr) = p.snr {
                    ui.label(format!("gradient SNR = {}", super::axes::short(snr)));
                }
                if let Some(f) = p.pole_fraction {
                    ui.label(format!("within 0.01 of a pole: {:.1} %", 100.0 * f));
                }
                if let Some(why) = &p.excluded {
                    ui.colored_label(EXCLUDED, why);
                }
            });
        });
    }

    /// The sphere: a globe (drag to turn it) and S, SNR over time for the chosen η.
    fn sphere_panels(&mut self, ui: &mut Ui, width: f32, height: f32) {
        let Some(row) = self.selected_row() else {
            return;
        };
        if row.point.sample.is_empty() {
            return;
        }
        ui.horizontal(|ui| {
            let side = height.min(width / 3.0);
            let (rect, response) =
                ui.allocate_exact_size(egui::vec2(side, side), egui::Sense::drag());
            if response.dragged() {
                let d = response.drag_delta();
                self.globe.0 += d.x * 0.01;
                self.globe.1 = (self.globe.1 + d.y * 0.01).clamp(-1.5, 1.5);
            }
            let painter = ui.painter_at(rect);
            let c = rect.center();
            let r = side / 2.0 - 6.0;
            painter.circle_stroke(c, r, egui::Stroke::new(1.0, Color32::GRAY));
            let (yaw, pitch) = self.globe;
            let view = |x: [f32; 3]| -> (f32, f32, f32) {
                let (sy, cy) = yaw.sin_cos();
                let (sp, cp) = pitch.sin_cos();
                let x1 = cy * x[0] - sy * x[1];
                let y1 = sy * x[0] + cy * x[1];
                let z1 = x[2];
                let y2 = cp * y1 - sp * z1;
                let z2 = sp * y1 + cp * z1;
                (x1, z2, y2)
            };
            // Equator and the poles for orientation.
            let ring: Vec<egui::Pos2> = (0..=64)
                .filter_map(|k| {
                    let a = std::f32::consts::TAU * k as f32 / 64.0;
                    let (u, v, depth) = view([a.cos(), a.sin(), 0.0]);
                    (depth <= 0.0).then(|| c + egui::vec2(u * r, -v * r))
                })
                .collect();
            for pair in ring.windows(2) {
                painter.line_segment(
                    [pair[0], pair[1]],
                    egui::Stroke::new(1.0, Color32::from_gray(90)),
                );
            }
            for (pole, label) in [([0.0, 0.0, 1.0], "+z"), ([0.0, 0.0, -1.0], "−z")] {
                let (u, v, depth) = view(pole);
                if depth <= 0.0 {
                    painter.text(
                        c + egui::vec2(u * r, -v * r),
                        egui::Align2::CENTER_CENTER,
                        label,
                        egui::FontId::proportional(12.0),
                        Color32::LIGHT_GRAY,
                    );
                }
            }
            for &x in &row.point.sample {
                let (u, v, depth) = view(x);
                let color = if depth <= 0.0 {
                    Color32::from_rgb(255, 190, 80)
                } else {
                    Color32::from_rgba_unmultiplied(255, 190, 80, 40)
                };
                painter.circle_filled(c + egui::vec2(u * r, -v * r), 1.8, color);
            }
            painter.text(
                rect.left_top() + egui::vec2(4.0, 4.0),
                egui::Align2::LEFT_TOP,
                "chains on the sphere (drag to turn)",
                egui::FontId::proportional(13.0),
                Color32::WHITE,
            );
            self.panels.push(("globe".into(), rect));
            let w = (width - side - 24.0) / 2.0;
            self.trace_plot(
                ui,
                ("sphere S", "S over steps (nats)", GIBBS),
                &row.point.s_trace,
                (w, side),
            );
            self.trace_plot(
                ui,
                ("sphere SNR", "gradient SNR over steps", SLOPE),
                &row.point.snr_trace,
                (w, side),
            );
        });
    }

    /// A quantity of the chosen η over the steps of its run.
    fn trace_plot(
        &mut self,
        ui: &mut Ui,
        (id, label, color): (&str, &str, Color32),
        trace: &[(u32, f64)],
        (w, h): (f32, f32),
    ) {
        let pts: Vec<[f64; 2]> = trace.iter().map(|&(s, v)| [f64::from(s), v]).collect();
        let r = super::plots::fixed_plot(id, w, h)
            .x_grid_spacer(crate::app::axes::x_marks)
            .x_axis_label("step")
            .include_x(0.0)
            .y_axis_label(label)
            .show_outlined(ui, |p| p.line(Self::line(pts, label, color)));
        self.panels.push((label.to_owned(), r.response.rect));
    }

    /// An MLP: U, S and the gradient SNR of the chosen η over its run, and what they say.
    /// There is no Gibbs test: its normaliser would be an integral over every weight.
    fn mlp_panels(&mut self, ui: &mut Ui, width: f32, height: f32) {
        let Some(row) = self.selected_row() else {
            return;
        };
        let info = (width * 0.25).clamp(200.0, 320.0);
        let w = (width - info - 36.0) / 3.0;
        let p = &row.point;
        ui.horizontal(|ui| {
            self.trace_plot(
                ui,
                ("mlp U", "U over steps (loss per example)", GIBBS),
                &p.u_trace,
                (w, height),
            );
            self.trace_plot(
                ui,
                ("mlp S", "ensemble S over steps (k-NN, nats)", SLOPE),
                &p.s_trace,
                (w, height),
            );
            self.trace_plot(
                ui,
                ("mlp SNR", "gradient SNR over steps", HELD_OUT),
                &p.snr_trace,
                (w, height),
            );
            ui.vertical(|ui| {
                ui.set_max_width(info);
                let short = |v: Option<f64>| v.map_or("—".to_owned(), super::axes::short);
                ui.label(RichText::new(format!("η = {}", super::axes::short(p.eta))).strong());
                ui.label(RichText::new(&p.problem).small());
                ui.label(format!("U = {}", super::axes::short(p.u)));
                ui.label(format!("T (slope dU/dS) = {}", short(row.t_slope)));
                ui.label(format!(
                    "S (ensemble k-NN{}) = {}",
                    p.knn_networks
                        .map_or(String::new(), |n| format!(", {n} networks")),
                    short(p.s_knn)
                ));
                if let Some(w) = &p.window {
                    ui.label(format!(
                        "S (windows, {} directions) = {} ± {}",
                        w.dims,
                        short(w.s),
                        short(w.s_se)
                    ));
                    ui.label(
                        RichText::new(format!(
                            "{} of {} networks measured, each from its last {} iterates \
                             (every {} steps after step {}), thinned by their autocorrelation \
                             time ({} iterates) to {}; k = {}",
                            w.measured,
                            w.networks,
                            w.iterates,
                            w.every,
                            w.first_step,
                            short(w.autocorrelation),
                            w.kept,
                            w.k
                        ))
                        .small(),
                    );
                    if let Some(note) = &w.note {
                        ui.colored_label(EXCLUDED, RichText::new(note).small());
                    }
                }
                ui.label(format!("gradient SNR = {}", short(p.snr)));
                ui.label(format!("{} of {} networks alive", p.alive, p.chains));
                if let Some(why) = &p.excluded {
                    ui.colored_label(EXCLUDED, why);
                }
                if let Some(why) = &p.ensemble_entropy_note {
                    ui.colored_label(EXCLUDED, RichText::new(why).small());
                }
                ui.label(
                    RichText::new(
                        "No Gibbs fit here: its normaliser would be an integral over every \
                         weight. The windowed S is each network's own spread on its widest \
                         directions; a slope against it is not T, so there is none.",
                    )
                    .small(),
                );
            });
        });
    }
}

/// A loaded preset's name cut to fit the problem list's button (egui would otherwise widen
/// the button and squeeze its label into a column of letters).
fn short_name(name: &str) -> String {
    const MAX: usize = 24;
    if name.chars().count() <= MAX {
        name.to_owned()
    } else {
        let cut: String = name.chars().take(MAX - 1).collect();
        format!("{}…", cut.trim_end())
    }
}

/// The held-out predictions (diamonds).
fn held_out(points: Vec<[f64; 2]>) -> Points<'static> {
    Points::new("held out: predicted", points)
        .radius(4.0)
        .shape(egui_plot::MarkerShape::Diamond)
        .color(HELD_OUT)
}

/// The points left out of slopes and fits (grey).
fn left_out(points: Vec<[f64; 2]>) -> Points<'static> {
    Points::new("left out", points).radius(3.0).color(EXCLUDED)
}

impl View for ThermoView {
    fn controls(&mut self, ui: &mut Ui, shell: &mut Shell) {
        ui.heading("Thermodynamics of SGD");
        ui.label(
            RichText::new(
                "Run the chains to stationarity at each learning rate; measure U, S and the \
                 temperature two ways: the slope dU/dS (as the paper does) and a Gibbs fit \
                 exp(−L/T)/Z (the test it does not make).",
            )
            .small(),
        );
        ui.separator();
        let idle = self.running().is_none();
        ui.add_enabled_ui(idle, |ui| {
            let mut problem = self.problem.clone();
            egui::ComboBox::from_label("problem")
                .width(170.0)
                // One line, cut short: a long name must not stretch the panel.
                .wrap_mode(egui::TextWrapMode::Truncate)
                .selected_text(PROBLEMS.iter().find(|p| p.0 == problem).map_or_else(|| short_name(self.base.name()), |p| p.1.to_owned()))
                .show_ui(ui, |ui| {
                    for (name, label) in PROBLEMS {
                        ui.selectable_value(&mut problem, name.to_owned(), label);
                    }
                });
            if problem != self.problem {
                self.choose(&problem);
            }
            match &mut self.base {
                AnyPreset::Toy(p) => {
                    egui::ComboBox::from_label("optimiser")
                        .selected_text(p.sampler.kind.name())
                        .show_ui(ui, |ui| {
                            for kind in [SamplerKind::Sgd, SamplerKind::Sghmc, SamplerKind::Atmc, SamplerKind::Sgld] {
                                ui.selectable_value(&mut p.sampler.kind, kind, kind.name());
                            }
                        });
                    if p.sampler.kind != SamplerKind::Sgd {
                        ui.label(RichText::new("The known answer is SGD's; for the others the question is open: does a monotone T(η) exist?").small());
                    }
                    ui.add(egui::Slider::new(&mut p.chains, 1000..=100_000).logarithmic(true).text("chains"));
                    ui.add(egui::Slider::new(&mut p.steps, 100..=20_000).logarithmic(true).text("steps"));
                }
                AnyPreset::Mlp(p) => {
                    ui.label(RichText::new(format!("{} on networks with hidden layers {}", p.sampler.kind.name().to_uppercase(), p.network.hidden.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))).small());
                    ui.add(egui::Slider::new(&mut p.network.batch_size, 1..=64).logarithmic(true).text("batch size"))
                        .on_hover_text("A second temperature: a larger batch lowers the gradient noise at the same η");
                    ui.add(egui::Slider::new(&mut p.chains, 64..=4096).logarithmic(true).text("networks"));
                    ui.add(egui::Slider::new(&mut p.steps, 100..=20_000).logarithmic(true).text("steps"));
                }
                AnyPreset::Sphere(p) => {
                    ui.add(egui::Slider::new(&mut p.sampler.momentum, 0.0..=0.95).text("momentum μ"));
                    ui.add(egui::Slider::new(&mut p.sampler.batch, 1..=16).text("batch size"))
                        .on_hover_text("A second temperature: a larger batch lowers the gradient noise at the same η");
                    ui.add(egui::Slider::new(&mut p.chains, 1000..=50_000).logarithmic(true).text("chains"));
                    ui.add(egui::Slider::new(&mut p.steps, 100..=20_000).logarithmic(true).text("steps"));
                }
                _ => {}
            }
            ui.horizontal(|ui| {
                // Typed entry (a drag would move η linearly across decades).
                let from = ui.label("η from");
                ui.add(egui::DragValue::new(&mut self.lr.0).speed(0.0).range(1e-6..=100.0).custom_formatter(|v, _| super::axes::short(v)))
                    .labelled_by(from.id);
                let to = ui.label("to");
                ui.add(egui::DragValue::new(&mut self.lr.1).speed(0.0).range(1e-6..=100.0).custom_formatter(|v, _| super::axes::short(v)))
                    .labelled_by(to.id);
            });
            ui.add(egui::Slider::new(&mut self.points, 3..=40).text("values of η"))
                .on_hover_text("Learning rates on a log grid between the two ends");
        });
        ui.horizontal(|ui| {
            if idle {
                if ui.button("▶ Run the sweep").clicked() {
                    let valid = self.lr.0 > 0.0 && self.lr.0 < self.lr.1;
                    let result = if valid {
                        self.start()
                    } else {
                        Err("the smallest learning rate must be below the largest".into())
                    };
                    if let Err(e) = result {
                        shell.status = Some(Status::error(e));
                    }
                }
            } else if ui.button("■ Stop").clicked() {
                self.cancel();
            }
        });
        if let Some((done, total)) = self.running() {
            ui.add(
                egui::ProgressBar::new(done as f32 / total.max(1) as f32)
                    .text(format!("{done} of {total} learning rates")),
            );
            ui.ctx().request_repaint_after(Duration::from_millis(300));
        }
        let Some(t) = &self.table else {
            return;
        };
        ui.separator();
        if !t.rows.is_empty() {
            let n = t.rows.len();
            let etas: Vec<f64> = t.rows.iter().map(|r| r.point.eta).collect();
            ui.add(
                egui::Slider::new(&mut self.selected, 0..=n - 1)
                    .custom_formatter(move |v, _| super::axes::short(etas[v as usize]))
                    .text(if matches!(self.base, AnyPreset::Mlp(_)) {
                        "details at η"
                    } else {
                        "Gibbs test at η"
                    }),
            );
        }
        let excluded: Vec<String> = t
            .rows
            .iter()
            .filter_map(|r| {
                let eta = super::axes::short(r.point.eta);
                match (&r.point.excluded, &r.point.ensemble_entropy_note) {
                    (Some(w), _) => Some(format!("η = {eta}: {w}")),
                    (None, Some(_)) => Some(format!(
                        "η = {eta}: no T_slope, the ensemble S does not count in weight space \
                         (details at η)"
                    )),
                    (None, None) => None,
                }
            })
            .collect();
        if !excluded.is_empty() {
            ui.label(RichText::new("Left out of slopes and fits:").strong());
            for e in excluded {
                ui.label(RichText::new(e).small().color(EXCLUDED));
            }
        }
        if let Some((a, b)) = t.law {
            ui.label(RichText::new(format!(
                "Held out: T(η) = aη/(1 − bη) fitted on every other η (a = {}, b = {}) predicts the rest (diamonds).",
                super::axes::short(a),
                super::axes::short(b)
            )).small());
        }
    }

    fn central(&mut self, ui: &mut Ui, shell: &mut Shell) {
        self.poll(shell);
        self.panels.clear();
        if let Some(e) = &self.error {
            ui.colored_label(Color32::from_rgb(255, 120, 120), e);
        }
        if self.table.as_ref().is_none_or(|t| t.rows.is_empty()) {
            ui.centered_and_justified(|ui| {
                ui.label(if self.running().is_some() {
                    "Running the first learning rate…"
                } else {
                    "Choose a problem and press ▶ Run the sweep: each learning rate runs its chains to stationarity."
                });
            });
            return;
        }
        let size = ui.available_size();
        if matches!(self.base, AnyPreset::Mlp(_)) {
            let h = (size.y - 60.0) / 2.0;
            self.curves(ui, size.x, h);
            ui.separator();
            self.mlp_panels(ui, size.x, h);
            return;
        }
        let sphere = matches!(self.base, AnyPreset::Sphere(_));
        let rows = if sphere { 3.0 } else { 2.0 };
        let h = (size.y - 30.0 * rows) / rows;
        self.curves(ui, size.x, h);
        ui.separator();
        self.gibbs_test(ui, size.x, h);
        if sphere {
            ui.separator();
            self.sphere_panels(ui, size.x, h);
        }
    }

    fn status(&self) -> String {
        match (&self.table, self.running()) {
            (_, Some((done, total))) => format!("thermodynamics: {done} of {total} learning rates"),
            (Some(t), None) => format!("thermodynamics: {} learning rates", t.rows.len()),
            (None, None) => "thermodynamics: not run yet".into(),
        }
    }

    fn step(&self) -> u32 {
        self.table.as_ref().map_or(0, |t| t.rows.len() as u32)
    }

    fn act(&mut self, action: Action) {
        match action {
            Action::Reset => self.cancel(),
            Action::Play | Action::TogglePlay if self.running().is_none() => {
                if let Err(e) = self.start() {
                    self.error = Some(e);
                }
            }
            _ => {}
        }
    }

    fn preset(&self) -> Option<AnyPreset> {
        Some(self.base.clone())
    }

    fn load(&mut self, preset: AnyPreset) -> bool {
        match preset {
            AnyPreset::Sphere(_) | AnyPreset::Toy(_) | AnyPreset::Mlp(_) => {
                self.cancel();
                self.lr = match preset {
                    AnyPreset::Sphere(_) => (0.01, 1.0),
                    AnyPreset::Mlp(_) => MLP_LR,
                    _ => self.lr,
                };
                // A shipped problem keeps its name (and its entry in the list).
                self.problem = PROBLEMS
                    .iter()
                    .find(|(name, _)| AnyPreset::load(name).is_ok_and(|p| p == preset))
                    .map_or("loaded", |(name, _)| name)
                    .to_owned();
                self.base = preset;
                true
            }
            _ => false,
        }
    }

    fn series_csv(&self) -> Option<String> {
        self.table.as_ref().map(crate::sweep::thermo_table::csv)
    }

    fn panels(&self) -> Vec<(String, Rect)> {
        self.panels.clone()
    }

    /// Starts the sweep (offscreen pictures run it to the end).
    fn run_to(&mut self, _step: u32) {
        if self.run.is_none()
            && self.table.as_ref().is_none_or(|t| t.rows.is_empty())
            && let Err(e) = self.start()
        {
            self.error = Some(e);
        }
    }

    fn settled_at(&mut self, _step: u32) -> bool {
        if self.run.is_some() {
            self.poll(&mut Shell::default());
        }
        self.run.is_none()
    }

    fn error(&self) -> Option<String> {
        self.error.clone()
    }
}
