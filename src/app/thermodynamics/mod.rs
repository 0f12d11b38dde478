//! The thermodynamics view (MATH.md §5): a learning-rate sweep of SGD (or any 2-D sampler,
//! or the sphere toy) measured thermodynamically in the background, drawn as it fills: U,
//! S, the slope and Gibbs temperatures and the free energy over η; the Gibbs test of one
//! chosen η (the ensemble against the fitted exp(−L/T)/Z); on the sphere, the chains on a
//! globe and an equal-area map with the signal-to-noise ratio over time.

use super::colormap::Colormap;
use super::view::{Action, Shell, Status, View};
use crate::app::plots::Outlined;
use crate::diagnostics::thermodynamics::Histogram;
use crate::diagnostics::thermodynamics::{
    SLOPE_WINDOWS, VARIANT_DIVISORS, VARIANT_K, block_temperatures,
};
use crate::engine::BackendChoice;
use crate::math::SamplerKind;
use crate::preset::AnyPreset;
use crate::preset::sweep_file::Sweep;
use crate::sweep::background::{BackgroundSweep, Polled};
use crate::sweep::thermodynamics::{Row, Table, TableOptions, table_with};
use crate::sweep::{self, Merged};
use egui::{Color32, Rect, RichText, Ui};
use egui_plot::{Legend, Line, LineStyle, PlotImage, PlotPoint, PlotPoints, Points, VLine};
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
/// A trace's title without what its x axis already says (" over steps") or its unit.
fn short_label(label: &str) -> &str {
    label
        .split(" over steps")
        .next()
        .and_then(|l| l.split(" (").next())
        .unwrap_or(label)
}

/// The smallest height of the last row (the globe and its traces) before the view scrolls.
const MIN_LAST_ROW: f32 = 120.0;
/// The narrowest a curve over η is drawn four across, in points: its legend's widest entry
/// and its y-axis title side by side.
const MIN_CURVE_WIDTH: f32 = 220.0;
const EXCLUDED: Color32 = Color32::from_rgb(140, 140, 140);

/// One number of a table row.
type RowValue = fn(&Row) -> Option<f64>;

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
    /// The learning rate of a loaded lesson: the grid passes through it and the Gibbs test
    /// opens on its row.
    focus: Option<f64>,
    /// The entropy and slope window of the slopes, and the η* of the free-energy test.
    pub options: TableOptions,
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
            focus: None,
            options: TableOptions::default(),
            error: None,
            backend,
            folder,
            globe: (0.6, 0.5),
            textures: Vec::new(),
            texture_key: None,
            panels: Vec::new(),
        }
    }

    /// Drops the results of the problem shown until now (and stops its sweep): another
    /// problem's table must not stay on screen under the new problem's name.
    fn forget_results(&mut self) {
        self.cancel();
        self.run = None;
        self.table = None;
        self.selected = 0;
        self.focus = None;
        self.error = None;
        self.textures.clear();
        self.texture_key = None;
    }

    fn choose(&mut self, name: &str) {
        if let Ok(p) = AnyPreset::load(name) {
            self.forget_results();
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
        // A lesson's learning rate stays a row of the grid, however many rows were chosen.
        if let Some(eta) = self.focus {
            self.lr = crate::sweep::thermodynamics::ladder_through(self.lr, self.points, eta).0;
        }
        let folder = &self.folder;
        std::fs::create_dir_all(folder)
            .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
        // The base as edited here, written next to the sweep so the sweep file can name it.
        let base_file = folder.join(format!("thermo-{}-base.ron", self.problem));
        crate::fsutil::write_atomic(&base_file, self.base.to_ron())
            .map_err(|e| format!("{e:#}"))?;
        let base = std::fs::canonicalize(&base_file).map_err(|e| e.to_string())?;
        let spec = crate::sweep::thermodynamics::spec(
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
        match table_with(&merged, self.options) {
            Ok(t) => {
                // The Gibbs test starts at a loaded lesson's η, else in the middle of the
                // sweep (the ends have no slope).
                if self
                    .table
                    .as_ref()
                    .is_none_or(|old| old.rows.len() != t.rows.len())
                {
                    self.selected = match self.focus {
                        Some(eta) => t
                            .rows
                            .iter()
                            .enumerate()
                            .min_by(|(_, a), (_, b)| {
                                let off = |r: &Row| (r.point.eta / eta).ln().abs();
                                off(a).total_cmp(&off(b))
                            })
                            .map_or(0, |(k, _)| k),
                        None => t.rows.len() / 2,
                    };
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
        // Four across where each is wide enough for its legend ("held out: predicted" and
        // the y-axis title beside it); two by two below that, rather than legends that run
        // onto the next plot's axis.
        let spacing = ui.spacing().item_spacing.x;
        let across = if (width - 4.0 * spacing) / 4.0 >= MIN_CURVE_WIDTH {
            4.0
        } else {
            2.0
        };
        let w = (width - across * spacing) / across - 1.0;
        let plot = |ui: &Ui, id: &str, y: &[&str]| {
            super::axes::log_x(super::plots::fixed_plot(id, w, height))
                .legend(Legend::default().position(egui_plot::Corner::LeftTop))
                .x_axis_label("learning rate η (log)")
                .y_axis_label(super::axes::fit_title(ui, y, height))
        };
        ui.horizontal_wrapped(|ui| {
            ui.set_max_width(width);
            let r = plot(
                ui,
                "thermo U",
                &["U: mean training loss", "U: training loss", "U"],
            )
            .show_outlined(ui, |p| {
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
            let r = plot(ui, "thermo S", &["S: entropy (nats)", "S (nats)", "S"]).show_outlined(
                ui,
                |p| {
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
                    // Grey: the ensemble S of excluded points, and where its rule left it out of
                    // T_slope (a network ensemble whose quarter check failed), so the curve of
                    // what was measured stays visible when no window could be measured.
                    let grey: Vec<[f64; 2]> = t
                        .rows
                        .iter()
                        .filter(|r| {
                            r.point.excluded.is_some() || r.point.ensemble_entropy_note.is_some()
                        })
                        .filter_map(|r| r.point.s_knn.filter(|v| v.is_finite()).map(|v| [x(r), v]))
                        .collect();
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
                },
            );
            self.panels.push(("S(η) panel".into(), r.response.rect));
            let r = plot(ui, "thermo T", &["T: temperature", "T"]).show_outlined(ui, |p| {
                let theory = pick(&|r| r.point.t_theory, true);
                if !theory.is_empty() {
                    p.line(
                        Self::line(theory, "ησ²/(2 − ηλ)", THEORY)
                            .width(1.0)
                            .style(LineStyle::dashed_loose()),
                    );
                }
                // How much T_slope moves with k, N and the window: the band's edges.
                let low = pick(&|r| r.t_slope_spread.map(|s| s.0), true);
                if !low.is_empty() {
                    let edge = |pts, name: &str| {
                        Self::line(pts, name, SLOPE)
                            .width(1.0)
                            .color(SLOPE.gamma_multiply(0.5))
                            .style(LineStyle::dotted_dense())
                    };
                    p.line(edge(low, "slope: range over k, N, window"));
                    p.line(edge(pick(&|r| r.t_slope_spread.map(|s| s.1), true), ""));
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
            let test = t.free_energy_test.clone();
            // F rises steeply at the largest η: the legend goes top left, over the flat part.
            let r = plot(
                ui,
                "thermo F",
                &["F(η; T*) = U(η) − T*·S(η)", "F(η; T*)", "F"],
            )
            .show_outlined(ui, |p| {
                let Some(test) = &test else {
                    return;
                };
                p.vline(
                    VLine::new("η*", test.eta_star.log10())
                        .color(THEORY)
                        .style(LineStyle::dashed_loose()),
                );
                let gibbs = pick(&|r| r.f_gibbs_star, true);
                let slope = pick(&|r| r.f_slope_star, true);
                p.line(Self::line(gibbs.clone(), "T* = T_gibbs(η*)", GIBBS));
                p.points(Points::new("", gibbs).radius(2.5).color(GIBBS));
                p.line(
                    Self::line(slope.clone(), "T* = T_slope(η*)", SLOPE)
                        .style(LineStyle::dashed_dense()),
                );
                p.points(Points::new("", slope).radius(2.5).color(SLOPE));
                // The minima, ringed.
                let minima: [(Option<usize>, RowValue, Color32); 2] = [
                    (test.min_gibbs, |r| r.f_gibbs_star, GIBBS),
                    (test.min_slope, |r| r.f_slope_star, SLOPE),
                ];
                for (row, f, color) in minima {
                    if let Some(r) = row.and_then(|i| t.rows.get(i))
                        && let Some(v) = f(r)
                    {
                        p.points(
                            Points::new("minimum", vec![[x(r), v]])
                                .radius(7.0)
                                .filled(false)
                                .color(color),
                        );
                    }
                }
            });
            self.panels.push(("F(η; T*) panel".into(), r.response.rect));
        });
        if let Some(line) = self.free_energy_line() {
            ui.label(RichText::new(line).small());
        }
    }

    /// What the F(η; T*) panel shows, in a line: the test of the paper's central claim.
    fn free_energy_line(&self) -> Option<String> {
        let test = self.table.as_ref()?.free_energy_test.as_ref()?;
        let short = super::axes::short;
        let at = |eta: Option<f64>, off: Option<usize>| match (eta, off) {
            (Some(e), Some(0)) => format!("at η = {} (η* itself)", short(e)),
            (Some(e), Some(1)) => format!("at η = {} (one grid step from η*)", short(e)),
            (Some(e), Some(n)) => format!("at η = {} ({n} grid steps from η*)", short(e)),
            _ => "— (no temperature at η*)".into(),
        };
        let verdict = match test.claim_holds {
            Some(true) => "the claim holds here",
            Some(false) => "the claim fails here",
            None => "no test without T_gibbs(η*)",
        };
        Some(format!(
            "The paper's claim: F(η; T*) = U(η) − T*·S(η) with T* = T(η*) is smallest at η = η* = {}. \
             With T* = T_gibbs(η*) (measured without slopes) the minimum is {}: {verdict}. With \
             T* = T_slope(η*) (circular, as the paper does) it is {}.",
            short(test.eta_star),
            at(test.eta_min_gibbs, test.gibbs_steps_off),
            at(test.eta_min_slope, test.slope_steps_off),
        ))
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
        let (labels, x_label, y_labels) = if sphere {
            (
                ["ensemble (equal-area map)", "fitted exp(−L/T)/Z"],
                "longitude",
                vec!["z = cos(polar angle)", "z"],
            )
        } else {
            (
                ["ensemble histogram", "fitted exp(−L/T)/Z"],
                "θ₁",
                vec!["θ₂"],
            )
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
                        .y_axis_label(super::axes::fit_title(ui, &y_labels, side - 20.0))
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
                    "TV = {} (exact draws: mean {}, 95 % {})",
                    short(p.gibbs_tv),
                    short(p.gibbs_tv_baseline),
                    short(p.gibbs_tv_critical)
                ));
                if p.ks_distance.is_some() {
                    ui.label(format!(
                        "KS of L: D = {} (95 % {}, p = {})",
                        short(p.ks_distance),
                        short(p.ks_critical),
                        short(p.ks_p_value)
                    ));
                }
                if let Some((consistent, line)) = p.gibbs_verdict_line() {
                    let color = if consistent {
                        super::palette::good(ui.visuals())
                    } else {
                        super::palette::warning(ui.visuals())
                    };
                    ui.colored_label(color, line);
                }
                // The harmonic test of the longitudes, beside the verdict (not part of it).
                if let Some(longitude) = &p.longitude {
                    let color = if longitude.uniform() {
                        super::palette::good(ui.visuals())
                    } else {
                        super::palette::warning(ui.visuals())
                    };
                    ui.colored_label(color, longitude.line());
                }
                ui.label(format!(
                    "S: k-NN {} (quarters {}), histogram {}",
                    short(p.s_knn),
                    short(p.s_knn_quarter),
                    short(p.s_hist)
                ));
                if let Some(snr) = p.snr {
                    ui.label(format!("gradient SNR = {}", super::axes::short(snr)));
                }
                if let Some(f) = p.pole_fraction {
                    ui.label(format!(
                        "|z| > 0.99 (within 8.1° of a pole): {:.1} %",
                        100.0 * f
                    ));
                }
                if let Some(note) = &p.fold_note {
                    ui.label(RichText::new(note).small());
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
            // Wrapped to the globe's width: on one line it ran past the globe and was cut.
            let title = painter.layout(
                "chains on the sphere (drag to turn)".into(),
                super::fonts::painter_font(ui.style(), 13.0),
                Color32::WHITE,
                rect.width() - 8.0,
            );
            // A pole's label where the title is would cover it.
            let title_zone = title
                .rect
                .translate(rect.left_top().to_vec2() + egui::vec2(4.0, 4.0));
            for (pole, label) in [([0.0, 0.0, 1.0], "+z"), ([0.0, 0.0, -1.0], "−z")] {
                let (u, v, depth) = view(pole);
                let at = c + egui::vec2(u * r, -v * r);
                if depth <= 0.0 && !title_zone.expand(12.0).contains(at) {
                    painter.text(
                        at,
                        egui::Align2::CENTER_CENTER,
                        label,
                        super::fonts::painter_font(ui.style(), 12.0),
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
            painter.galley(
                rect.left_top() + egui::vec2(4.0, 4.0),
                title,
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

    /// η* of the free-energy test, and the entropy and window of the slope temperatures:
    /// each change recomputes the table's slopes and F(η; T*) (no rerun).
    fn free_energy_controls(&mut self, ui: &mut Ui) {
        let Some(t) = &mut self.table else {
            return;
        };
        if t.rows.is_empty() {
            return;
        }
        let n = t.rows.len();
        let etas: Vec<f64> = t.rows.iter().map(|r| r.point.eta).collect();
        let mut star = t.free_energy_test.as_ref().map_or(n / 2, |f| f.star);
        let before = star;
        crate::app::controls::bounded(ui, &mut star, 0..=n - 1, |s| {
            s.custom_formatter(move |v, _| super::axes::short(etas[v as usize]))
                .text("η* of F(η; T*)")
        })
        .on_hover_text("F(η; T*) = U(η) − T(η*)·S(η): the paper says it is smallest at η = η*");
        if star != before {
            t.set_eta_star(Some(star));
            self.options = t.options;
        }
        let mut options = self.options;
        let (k, divisor) = options.knn.unwrap_or((5, 1));
        let (mut k, mut divisor) = (k, divisor);
        ui.horizontal(|ui| {
            egui::ComboBox::from_id_salt("thermo knn k")
                .width(50.0)
                .selected_text(format!("k = {k}"))
                .show_ui(ui, |ui| {
                    for v in VARIANT_K {
                        ui.selectable_value(&mut k, v, format!("k = {v}"));
                    }
                });
            egui::ComboBox::from_id_salt("thermo knn n")
                .width(60.0)
                .selected_text(if divisor == 1 { "N".to_owned() } else { format!("N/{divisor}") })
                .show_ui(ui, |ui| {
                    for v in VARIANT_DIVISORS {
                        let label = if v == 1 { "N".to_owned() } else { format!("N/{v}") };
                        ui.selectable_value(&mut divisor, v, label);
                    }
                });
            ui.label("k-NN S");
        })
        .response
        .on_hover_text("The entropy the slopes and F use: neighbour rank k, on N chains (all alive up to 20,000) or every 4th or 16th of them (stored for each 2-D point)");
        ui.horizontal(|ui| {
            ui.label("slope fit over");
            for w in SLOPE_WINDOWS {
                ui.selectable_value(&mut options.window, w, format!("{w}"));
            }
            ui.label("points");
        });
        options.knn = (k, divisor).ne(&(5, 1)).then_some((k, divisor));
        if options != self.options {
            t.apply(options);
            self.options = t.options;
        }
    }

    /// The review's objections as experiments (MATH.md §5.6), for the plane: ΔU/ΔS per block
    /// along the chosen η's run (a width while the run relaxes, not a temperature), and
    /// T_slope with each slope window beside the Gibbs fit, with its range over k, N and
    /// windows.
    fn objection_panels(&mut self, ui: &mut Ui, width: f32, height: f32) {
        let (Some(row), Some(t)) = (self.selected_row(), self.table.clone()) else {
            return;
        };
        let p = &row.point;
        let info = (width * 0.25).clamp(220.0, 340.0);
        let w = (width - info - 36.0) / 2.0;
        let blocks = block_temperatures(&p.u_trace, &p.s_trace);
        let positive: Vec<[f64; 2]> = blocks
            .iter()
            .filter(|b| b.1 > 0.0)
            .map(|&(step, v)| [f64::from(step), v.log10()])
            .collect();
        let not_drawn = blocks.len() - positive.len();
        ui.horizontal(|ui| {
            let r = super::axes::log_y(super::plots::fixed_plot("thermo blocks", w, height))
                .legend(Legend::default().position(egui_plot::Corner::LeftBottom))
                .x_grid_spacer(crate::app::axes::x_marks)
                .x_axis_label("step")
                .include_x(0.0)
                .y_axis_label(super::axes::fit_title(
                    ui,
                    &["ΔU/ΔS per block (log)", "ΔU/ΔS (log)"],
                    height,
                ))
                .show_outlined(ui, |pl| {
                    for (v, name, color) in [
                        (p.t_theory, "known answer T", THEORY),
                        (p.t_gibbs, "T_gibbs (final ensemble)", GIBBS),
                    ] {
                        if let Some(v) = v.filter(|v| *v > 0.0) {
                            pl.hline(
                                egui_plot::HLine::new(name, v.log10())
                                    .color(color)
                                    .style(LineStyle::dashed_loose()),
                            );
                        }
                    }
                    pl.line(Self::line(positive.clone(), "ΔU/ΔS", SLOPE));
                    pl.points(Points::new("", positive).radius(2.5).color(SLOPE));
                });
            self.panels
                .push(("ΔU/ΔS per block panel".into(), r.response.rect));
            let x = |r: &Row| r.point.eta.log10();
            let series = |f: &dyn Fn(&Row) -> Option<f64>| -> Vec<[f64; 2]> {
                t.rows
                    .iter()
                    .filter(|r| r.group == row.group && r.point.excluded.is_none())
                    .filter_map(|r| f(r).filter(|v| *v > 0.0).map(|v| [x(r), v.log10()]))
                    .collect()
            };
            let r = super::axes::log_y(super::axes::log_x(super::plots::fixed_plot(
                "thermo windows",
                w,
                height,
            )))
            .legend(Legend::default().position(egui_plot::Corner::LeftTop))
            .x_axis_label("learning rate η (log)")
            .y_axis_label("T (log)")
            .show_outlined(ui, |pl| {
                pl.line(Self::line(series(&|r| r.point.t_gibbs), "Gibbs fit", GIBBS));
                let styles = [
                    LineStyle::dotted_dense(),
                    LineStyle::Solid,
                    LineStyle::dashed_dense(),
                ];
                for (k, window) in SLOPE_WINDOWS.iter().enumerate() {
                    pl.line(
                        Self::line(
                            series(&|r| r.t_slope_windows[k]),
                            &format!("slope, {window} points"),
                            SLOPE.gamma_multiply(0.55 + 0.15 * k as f32),
                        )
                        .width(1.5)
                        .style(styles[k]),
                    );
                }
            });
            self.panels
                .push(("slope windows panel".into(), r.response.rect));
            ui.vertical(|ui| {
                ui.set_max_width(info);
                let short = |v: Option<f64>| v.map_or("—".to_owned(), super::axes::short);
                ui.label(RichText::new("The review's objections").strong());
                ui.label(
                    RichText::new(format!(
                        "Left: ΔU/ΔS between block ends of the run at η = {}. While the \
                         ensemble relaxes it measures its width (on the quadratic started \
                         wide, λ·Var θ falls from λV₀ to T), not a temperature; at \
                         stationarity both differences are noise. Raise \"start width\" and \
                         lower η to see it.",
                        super::axes::short(p.eta)
                    ))
                    .small(),
                );
                if not_drawn > 0 {
                    ui.label(
                        RichText::new(format!("{not_drawn} blocks with ΔU/ΔS ≤ 0 not drawn"))
                            .small()
                            .color(EXCLUDED),
                    );
                }
                ui.label(
                    RichText::new(
                        "Right: T_slope with 3, 5 and 7 points in the fit, beside the Gibbs \
                         fit.",
                    )
                    .small(),
                );
                match row.t_slope_spread {
                    Some((lo, hi)) => ui.label(format!(
                        "T_slope at this η: {} (chosen); {} to {} over k ∈ {{2, 5, 10, 20}}, \
                         N/1, N/4, N/16 and 3, 5, 7 points",
                        short(row.t_slope),
                        short(Some(lo)),
                        short(Some(hi))
                    )),
                    None if p.s_knn_variants.is_empty() => ui.label(
                        RichText::new(
                            "This record stores no entropies for other k and N (written \
                             before they were): run the sweep again.",
                        )
                        .small(),
                    ),
                    None => ui.label("No slope at this η (an end of the sweep)."),
                };
            });
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
            .y_axis_label(super::axes::fit_title(ui, &[label, short_label(label)], h))
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
                             time ({} iterates) to {}, directions fitted on one half and S \
                             measured on the other; k = {}{}",
                            w.measured,
                            w.networks,
                            w.iterates,
                            w.every,
                            w.first_step,
                            short(w.autocorrelation),
                            w.kept,
                            w.k,
                            w.edge_ratio.map_or(String::new(), |ratio| format!(
                                "; {}th eigenvalue {} × the noise edge",
                                w.dims,
                                short(Some(ratio))
                            ))
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
                    if p.sampler.kind == SamplerKind::Sgd {
                        let mut mu = p.sampler.sgd_momentum;
                        crate::app::controls::bounded(ui, &mut mu, 0.0..=0.95, |s| s.text("momentum μ"))
                            .on_hover_text("Heavy-ball SGD: v ← μv − ηg̃, θ ← θ + v. On the quadratic the known answer is λ·Var θ = ησ²(1 + μ)/((1 − μ)(2(1 + μ) − ηλ))");
                        p.sampler.sgd_momentum = mu;
                    } else {
                        ui.label(RichText::new("The known answer is SGD's; for the others the question is open: does a monotone T(η) exist?").small());
                    }
                    crate::app::controls::bounded(ui, &mut p.init.scale, 0.01..=10.0, |s| s.logarithmic(true).text("start width"))
                        .on_hover_text("The chains start at N(centre, width²): started wide at a small η, the run relaxes, and ΔU/ΔS per block follows the width, not a temperature");
                    crate::app::controls::bounded(ui, &mut p.chains, 1000..=100_000, |s| s.logarithmic(true).text("chains"));
                    crate::app::controls::bounded(ui, &mut p.steps, 100..=20_000, |s| s.logarithmic(true).text("steps"));
                }
                AnyPreset::Mlp(p) => {
                    ui.label(RichText::new(format!("{} on networks with hidden layers {}", p.sampler.kind.name().to_uppercase(), p.network.hidden.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))).small());
                    crate::app::controls::bounded(ui, &mut p.network.batch_size, 1..=64, |s| s.logarithmic(true).text("batch size"))
                        .on_hover_text("A second temperature: a larger batch lowers the gradient noise at the same η");
                    crate::app::controls::bounded(ui, &mut p.chains, 64..=4096, |s| s.logarithmic(true).text("networks"));
                    crate::app::controls::bounded(ui, &mut p.steps, 100..=20_000, |s| s.logarithmic(true).text("steps"));
                }
                AnyPreset::Sphere(p) => {
                    crate::app::controls::bounded(ui, &mut p.sampler.momentum, 0.0..=0.95, |s| s.text("momentum μ"));
                    crate::app::controls::bounded(ui, &mut p.sampler.batch, 1..=16, |s| s.text("batch size"))
                        .on_hover_text("A second temperature: a larger batch lowers the gradient noise at the same η");
                    crate::app::controls::bounded(ui, &mut p.chains, 1000..=50_000, |s| s.logarithmic(true).text("chains"));
                    crate::app::controls::bounded(ui, &mut p.steps, 100..=20_000, |s| s.logarithmic(true).text("steps"));
                }
                _ => {}
            }
            // Typed entries (a drag would move η linearly across decades).
            crate::app::controls::typed(ui, &mut self.lr.0, 1e-6..=100.0, "η from");
            crate::app::controls::typed(ui, &mut self.lr.1, 1e-6..=100.0, "η to");
            crate::app::controls::bounded(ui, &mut self.points, 3..=40, |s| s.text("values of η"))
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
            crate::app::controls::bounded(ui, &mut self.selected, 0..=n - 1, |s| {
                s.custom_formatter(move |v, _| super::axes::short(etas[v as usize]))
                    .text(if matches!(self.base, AnyPreset::Mlp(_)) {
                        "details at η"
                    } else {
                        "Gibbs test at η"
                    })
            });
        }
        self.free_energy_controls(ui);
        let Some(t) = &self.table else {
            return;
        };
        // Each reason once, with the learning rates it applies to.
        let total = t.rows.len();
        let note = |ui: &mut Ui, text: String| {
            ui.label(RichText::new(text).small().color(EXCLUDED));
        };
        let left_out = t.left_out();
        if !left_out.is_empty() {
            ui.label(RichText::new("Left out of slopes and fits:").strong());
            for g in left_out {
                note(ui, g.text(total));
            }
        }
        for g in t.unmeasured_windows() {
            note(ui, format!("Windowed S not measured at {}.", g.text(total)));
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
            ui.colored_label(super::palette::error(ui.visuals()), e);
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
        // Three rows of panels, their separators and the free-energy line under the curves.
        // The Gibbs test's text can be taller than its row (the sphere's fold note, a narrow
        // window): the last row takes what is left, down to a size that can still be read;
        // below that (the control panel open in presentation mode) the rows scroll rather
        // than squeeze the globe to a dot or run the text over the row below.
        let h = (size.y - 126.0) / 3.0;
        egui::ScrollArea::vertical()
            .auto_shrink(false)
            .show(ui, |ui| {
                let width = ui.available_width();
                let top = ui.cursor().top();
                self.curves(ui, width, h);
                ui.separator();
                self.gibbs_test(ui, width, h);
                ui.separator();
                let left = size.y - (ui.cursor().top() - top) - 8.0;
                let last = h.min(left).max(MIN_LAST_ROW);
                if sphere {
                    self.sphere_panels(ui, width, last);
                } else {
                    self.objection_panels(ui, width, last);
                }
            });
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
                self.forget_results();
                self.lr = match &preset {
                    // A lesson's learning rate is a row of its sweep, and the Gibbs test
                    // opens there (free-energy 3 cites η = 0.02).
                    AnyPreset::Sphere(p) => {
                        self.focus = Some(p.sampler.h);
                        crate::sweep::thermodynamics::ladder_through(
                            (0.01, 1.0),
                            self.points,
                            p.sampler.h,
                        )
                        .0
                    }
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
        self.table.as_ref().map(crate::sweep::thermodynamics::csv)
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
