//! The Bayesian-MLP view: thousands of small networks on a 2-D classification set, the
//! posterior predictive over the plane and its uncertainty, one network's own decision map,
//! phase portraits of a chosen weight, and accuracy, NLL and ECE against one SGD-trained
//! network. Panels only draw and edit an [`MlpPreset`]; the networks run in [`session`].

pub mod draw;
pub mod session;

use super::colormap::Colormap;
use super::controls::{self, Actions, slider};
use super::files::FileRequest;
use super::overlay::OverlayImage;
use super::plots::{reliability_diagram, small_plot};
use super::simulated::{Simulated, SimulationHandle};
use super::texture::{CachedTexture, key_of};
use super::view::{Action, Shell, View};
use super::worker::Control;
use crate::app::plots::Outlined;
use crate::diagnostics::classification::ClassMetrics;
use crate::diagnostics::mlp::{Uncertainty, uncertainty};
use crate::diagnostics::views::Histogram;
use crate::engine::BackendChoice;
use crate::math::mlp::{Activation, Architecture, MAX_HIDDEN_LAYERS, MAX_WIDTH};
use crate::math::{DataSource, Dataset};
use crate::preset::fields::{self, Kind};
use crate::preset::{AnyPreset, MlpPreset};
use egui::{Color32, Rect, RichText, Sense, Slider, Ui, Vec2, pos2};
use egui_plot::{Bar, BarChart, HLine, Legend, Line, PlotPoints, Points, VLine};
use session::{MapData, MlpCommand, MlpSession, MlpSnapshot};

/// Class colours (colour-blind-safe first two: blue and orange).
const CLASS_COLORS: [Color32; 8] = [
    Color32::from_rgb(70, 140, 255),
    Color32::from_rgb(255, 150, 40),
    Color32::from_rgb(90, 200, 110),
    Color32::from_rgb(230, 80, 90),
    Color32::from_rgb(175, 120, 230),
    Color32::from_rgb(160, 110, 70),
    Color32::from_rgb(240, 130, 200),
    Color32::from_rgb(60, 200, 200),
];
const NEUTRAL: Color32 = Color32::from_rgb(38, 38, 44);
const ACCENT: Color32 = Color32::from_rgb(255, 170, 60);
const TRUTH: Color32 = Color32::from_rgb(120, 200, 255);
const SGD: Color32 = Color32::from_rgb(120, 200, 255);
const SINGLE: Color32 = Color32::from_rgb(190, 140, 255);

/// The MLP view's state.
pub struct MlpView {
    sim: Simulated<MlpCommand, MlpSnapshot>,
    /// The preset being edited (the controls' model).
    pub preset: MlpPreset,
    applied: MlpPreset,
    /// Each map with the data over it, composed on the CPU into one texture (one textured
    /// quad a map: on a software rasteriser a frame costs the pixels it covers).
    maps: [CachedTexture; 3],
    /// The data points at display resolution and the key of what they show, drawn once and
    /// laid over every new map.
    dots: Option<(u64, OverlayImage)>,
    uncertainty: Uncertainty,
    /// What the third map shows.
    pub third_map: ThirdMap,
    colormap: Colormap,
    /// Where the maps are on screen (for panel PNG export).
    panel_rects: Vec<Rect>,
    /// Draw mode's class and stroke.
    pub draw: draw::DrawState,
}

impl MlpView {
    /// The view on `preset`, with its engine on `backend`, running or paused.
    pub fn new(
        ctx: &egui::Context,
        preset: MlpPreset,
        backend: BackendChoice,
        playing: bool,
    ) -> Self {
        let repaint = ctx.clone();
        let session = MlpSession::start(preset.clone(), backend, playing, move || {
            repaint.request_repaint()
        });
        Self {
            sim: Simulated::new(session),
            applied: preset.clone(),
            preset,
            maps: Default::default(),
            dots: None,
            uncertainty: Uncertainty::Entropy,
            third_map: ThirdMap::Sgd,
            colormap: Colormap::inferno(),
            panel_rects: Vec::new(),
            draw: draw::DrawState::default(),
        }
    }

    /// The worker's handle.
    pub fn session(&self) -> &MlpSession {
        self.sim.session()
    }

    /// Loads a preset: the networks start over.
    pub fn load_preset(&mut self, preset: MlpPreset) {
        self.preset = preset;
        self.apply_changes(true);
    }

    /// Sends the edited preset to the worker when it changed (or, with `restart`, always);
    /// [`MlpPreset::change_from`] decides there whether the networks go on or start over.
    fn apply_changes(&mut self, restart: bool) {
        if self.preset == self.applied && !restart {
            return;
        }
        self.sim.command(MlpCommand::Apply {
            preset: Box::new(self.preset.clone()),
            restart,
        });
        self.applied = self.preset.clone();
    }

    /// The control panel.
    fn control_panel(&mut self, ui: &mut Ui, shell: &mut Shell) {
        let playing = self.sim.snapshot().playing;
        let train_points = self
            .sim
            .snapshot()
            .data
            .as_ref()
            .map(|d| d.train_x.len() as u32);
        let actions: Actions = controls::transport(ui, playing, "↺ Reset networks");
        if actions.toggle_play {
            self.act(Action::TogglePlay);
        }
        if actions.step {
            self.act(Action::Step);
        }
        if actions.reset {
            self.act(Action::Reset);
        }
        let p = &mut self.preset;
        crate::app::controls::bounded(ui, &mut p.view.steps_per_frame, 1..=200, |s| {
            s.logarithmic(true).text("steps / frame (speed)")
        });
        let mut chains = f64::from(p.chains);
        if ui
            .add(
                Slider::new(&mut chains, 16.0..=16_384.0)
                    .clamping(egui::SliderClamping::Edits)
                    .logarithmic(true)
                    .text("networks"),
            )
            .on_hover_text("Each network is one chain. Changing the number restarts them.")
            .changed()
        {
            p.chains = chains.round() as u32;
            p.view.focus_chain = p.view.focus_chain.min(p.chains - 1);
        }
        ui.horizontal(|ui| {
            ui.label("seed");
            ui.add(egui::DragValue::new(&mut p.seed))
                .on_hover_text("A new seed restarts the networks");
        });
        ui.separator();
        egui::CollapsingHeader::new(RichText::new("Sampler").strong())
            .default_open(true)
            .show(ui, |ui| {
                controls::sampler_controls_of(
                    ui,
                    &mut p.sampler,
                    &crate::math::mlp::NETWORK_SAMPLERS,
                    controls::Temperature::Tempering,
                )
            });
        egui::CollapsingHeader::new(RichText::new("Data set").strong())
            .default_open(true)
            .show(ui, |ui| {
                data_controls(ui, p, shell);
                if let Some(available) = train_points {
                    data_used_control(ui, &mut p.network.data_used, available);
                }
            });
        egui::CollapsingHeader::new(RichText::new("Network and prior").strong())
            .default_open(true)
            .show(ui, |ui| network_controls(ui, p));
        egui::CollapsingHeader::new(RichText::new("Step-size schedule").strong())
            .default_open(false)
            .show(ui, |ui| {
                controls::schedule_controls(ui, &mut p.schedule, p.steps)
            });
        egui::CollapsingHeader::new(RichText::new("SGD baseline").strong())
            .default_open(false)
            .show(ui, |ui| {
                slider(
                    ui,
                    &mut p.baseline.h,
                    const { fields::range(Kind::Mlp, "baseline.h") },
                    1e-5,
                    0.1,
                    true,
                    "learning rate h",
                );
                ui.small(
                    "One network trained by plain SGD on the same minibatches and prior \
                     (its MAP), compared with the posterior predictive.",
                );
            });
        egui::CollapsingHeader::new(RichText::new("View").strong())
            .default_open(true)
            .show(ui, |ui| {
                view_controls(ui, p, &mut self.uncertainty, &mut self.third_map)
            });
    }

    /// The maps, tables, portraits and plots (in Draw mode under the drawing tools).
    fn central_area(&mut self, ui: &mut Ui, shell: &mut Shell) {
        let snapshot = self.sim.snapshot().clone();
        if self.preset.view.draw {
            draw::toolbar(ui, &mut self.preset, &mut self.draw, shell);
            if snapshot.map.is_none() || snapshot.error.is_some() {
                // Nothing to draw over yet (too few points, or the networks start): the
                // canvas alone, its message above it.
                if let Some(notice) = &snapshot.notice {
                    ui.label(
                        RichText::new(format!("⚠ {notice}"))
                            .color(super::palette::warning(ui.visuals())),
                    );
                }
                if let Some(error) = snapshot.error.as_ref().filter(|_| {
                    draw::waiting(&self.preset).is_none()
                        && draw::drawn_points(&self.preset).is_none()
                }) {
                    ui.label(
                        RichText::new(format!("⚠ {error}"))
                            .color(super::palette::error(ui.visuals())),
                    );
                }
                let available = ui.available_size();
                let spacing = ui.spacing().item_spacing.x;
                let side = ((available.x - 3.0 * spacing) / 3.0)
                    .min(available.y * 0.6)
                    .max(110.0);
                draw::blank_canvas(ui, side, &mut self.preset, &mut self.draw);
                return;
            }
        }
        self.draw_central(ui, &snapshot);
    }

    fn draw_central(&mut self, ui: &mut Ui, s: &MlpSnapshot) {
        if let Some(error) = &s.error {
            ui.label(
                RichText::new(format!("⚠ {error}"))
                    .color(super::palette::error(ui.visuals()))
                    .strong(),
            );
            ui.label(
                "Fix the data set in the control panel (or load another CSV file, or draw \
                 points: ✏ Draw points).",
            );
            return;
        }
        if let Some(notice) = &s.notice {
            ui.label(
                RichText::new(format!("⚠ {notice}")).color(super::palette::warning(ui.visuals())),
            );
        }
        if s.report.diverged > 0 {
            self.explosion_banner(ui, s);
        }
        let Some(data) = s.data.clone() else {
            ui.label("starting the networks…");
            return;
        };
        self.panel_rects.clear();
        let spacing = ui.spacing().item_spacing.x;
        let available = ui.available_size();
        let table_width = metrics_table_width(ui);
        // The maps beside the table, or (a narrow window, the lesson panel open) across the
        // whole width with the table below them: whichever gives the larger maps, so they
        // never shrink to thumbnails.
        // Draw mode shows the maps large, the table beside or under them, and nothing else:
        // its tools take the place of the portraits, and drawing wants a large canvas.
        let drawing = self.preset.view.draw;
        // The largest share of the height a map may take, beside the table and across.
        let (beside_cap, across_cap) = if drawing { (0.55, 0.55) } else { (0.36, 0.3) };
        let beside =
            ((available.x - table_width - 4.0 * spacing) / 3.0).min(available.y * beside_cap);
        let across = ((available.x - 3.0 * spacing) / 3.0).min(available.y * across_cap);
        if beside >= 0.85 * across {
            let side = beside.max(110.0);
            ui.horizontal(|ui| {
                self.maps(ui, s, &data, side);
                ui.vertical(|ui| {
                    ui.set_width(table_width);
                    metrics_table(
                        ui,
                        s,
                        self.preset.view.focus_chain,
                        step0_name(&self.preset),
                    );
                    if let Some(e) = &s.evaluation {
                        reliability_diagram(
                            ui,
                            "mlp reliability",
                            &e.reliability,
                            table_width,
                            (side - 100.0).max(60.0),
                        );
                    }
                });
            });
        } else {
            let side = across.max(110.0);
            ui.horizontal(|ui| self.maps(ui, s, &data, side));
            ui.horizontal(|ui| {
                ui.vertical(|ui| {
                    ui.set_width(table_width);
                    metrics_table(
                        ui,
                        s,
                        self.preset.view.focus_chain,
                        step0_name(&self.preset),
                    );
                });
                if let Some(e) = &s.evaluation {
                    let width = (available.x - table_width - 2.0 * spacing).max(120.0);
                    reliability_diagram(ui, "mlp reliability", &e.reliability, width, 110.0);
                }
            });
        }
        if drawing {
            // The portraits and the time series come back when Draw mode is off.
            return;
        }
        let rest = ui.available_size();
        let row = ((rest.y - 2.0 * spacing) * 0.5).clamp(80.0, 220.0);
        ui.horizontal(|ui| self.parameter_views(ui, s, rest.x, row));
        let rest = ui.available_size();
        time_series(
            ui,
            s,
            &self.preset,
            rest.x,
            (rest.y - 4.0).clamp(70.0, 200.0),
        );
    }

    fn explosion_banner(&self, ui: &mut Ui, s: &MlpSnapshot) {
        let total = s.report.diverged + s.report.alive;
        let text = format!(
            "⚠ Momentum explosion: {} of {} networks diverged ({:.1}%), first seen at step {}. Diverged networks are frozen and left out of the posterior predictive.",
            s.report.diverged,
            total,
            100.0 * s.report.diverged as f64 / total.max(1) as f64,
            s.first_divergence.unwrap_or(s.step)
        );
        if super::explosion_banner(ui, &text, "↺ Reset networks") {
            self.sim.control(Control::Reset);
        }
    }

    fn maps(&mut self, ui: &mut Ui, s: &MlpSnapshot, data: &Dataset, side: f32) {
        let Some(map) = &s.map else {
            ui.allocate_exact_size(Vec2::new(3.0 * side, side), Sense::hover());
            return;
        };
        let ppp = ui.ctx().pixels_per_point();
        let pixels = (side * ppp).round().max(1.0) as usize;
        let dots_key = self.dots_layer(map, data, side, ppp, pixels);
        let dots = &self.dots.as_ref().expect("made by dots_layer").1;
        // The map's serial, not its step: a live change makes a new map at the same step.
        let key = key_of(&(map.serial, self.uncertainty, self.third_map, dots_key));
        // The three maps change together: their images are made once, if any is stale.
        let mut images: Option<[egui::ColorImage; 3]> = None;
        let mut textures = Vec::with_capacity(3);
        for (k, texture) in self.maps.iter_mut().enumerate() {
            let t = texture.show(
                ui.ctx(),
                &format!("mlp map {k}"),
                key_of(&(key, k)),
                egui::TextureOptions::NEAREST,
                || {
                    let maps = images.get_or_insert_with(|| {
                        map_images(map, self.uncertainty, self.third_map, &self.colormap)
                    });
                    let mut img = OverlayImage::filled(pixels, NEUTRAL);
                    let n = pixels as f32;
                    img.stretch(&maps[k], [0.0, 0.0, n, n]);
                    img.draw_over(dots);
                    img.into_image()
                },
            );
            textures.push(t.clone());
        }
        let used = map.prediction.chains_used;
        let total = s.chains;
        // The map averages a subset of the networks (the view's "predictive networks"); at
        // step 0 they are the starting networks: the prior's draws only with `from_prior`.
        let predictive = if map.step == 0 {
            format!(
                "{}: step 0 ({used} of {total} networks)",
                step0_name(&self.preset)
            )
        } else if used < total {
            format!("posterior predictive ({used} of {total} networks)")
        } else {
            format!("posterior predictive ({total} networks)")
        };
        let titles = [
            predictive,
            match self.uncertainty {
                Uncertainty::Entropy => "uncertainty: predictive entropy".to_owned(),
                Uncertainty::Spread => "uncertainty: spread across networks".to_owned(),
            },
            match self.third_map {
                ThirdMap::Sgd => "SGD network: one point estimate".to_owned(),
                ThirdMap::Network => format!(
                    "network #{} alone: one posterior sample",
                    self.preset.view.focus_chain
                ),
            },
        ];
        // As wide as the map: a long title folds onto a second line rather than pushing the
        // table out of the window; the maps stay level under titles of different lengths.
        let title_height = titles
            .iter()
            .map(|t| {
                super::fonts::wrapped_height(
                    ui,
                    RichText::new(t).small(),
                    side,
                    egui::TextStyle::Small,
                )
            })
            .fold(0.0, f32::max);
        for (k, title) in titles.iter().enumerate() {
            ui.vertical(|ui| {
                ui.set_max_width(side);
                ui.allocate_ui_with_layout(
                    Vec2::new(side, title_height),
                    egui::Layout::top_down(egui::Align::Min),
                    |ui| {
                        ui.set_min_height(title_height);
                        ui.add(egui::Label::new(RichText::new(title).small()).wrap());
                    },
                );
                let drawing = k == 0 && self.preset.view.draw;
                let response = map_view(ui, side, map, &textures[k], drawing);
                if drawing {
                    let g = &map.grid;
                    draw::canvas_input(ui, &response, [g.x, g.y], &mut self.preset, &mut self.draw);
                }
                self.panel_rects.push(response.rect);
            });
        }
    }

    /// Makes `self.dots`, the data over a map of `pixels` pixels a side (training points
    /// filled, test points as rings), and returns its key. The data do not change while the
    /// maps do: drawn once, and again only when the data, the grid or the size change (a
    /// thousand circles redrawn every frame were most of what a frame cost on a software
    /// rasteriser).
    fn dots_layer(
        &mut self,
        map: &MapData,
        data: &Dataset,
        side: f32,
        ppp: f32,
        pixels: usize,
    ) -> u64 {
        let g = &map.grid;
        let radius = (side / 110.0).clamp(1.5, 3.5) * ppp;
        let key = key_of(&(
            pixels,
            radius.to_bits(),
            g.x.map(f64::to_bits),
            g.y.map(f64::to_bits),
            data_key(data),
            self.preset.network.data_used,
        ));
        if self.dots.as_ref().is_none_or(|(k, _)| *k != key) {
            let n = pixels as f32;
            let to_pixel = |x: [f32; 2]| -> [f32; 2] {
                [
                    ((f64::from(x[0]) - g.x[0]) / (g.x[1] - g.x[0])) as f32 * n,
                    (1.0 - (f64::from(x[1]) - g.y[0]) / (g.y[1] - g.y[0])) as f32 * n,
                ]
            };
            let mut dots = OverlayImage::new(pixels);
            for (x, &y) in data.test_x.iter().zip(&data.test_y) {
                dots.ring(
                    to_pixel(*x),
                    radius,
                    ppp,
                    CLASS_COLORS[y as usize % CLASS_COLORS.len()],
                );
            }
            // Training points the likelihood leaves out (`data_used`) are faint, without the
            // black edge of the points in use.
            let used = self
                .preset
                .network
                .data_used
                .map_or(data.train_x.len(), |n| n as usize);
            for (i, (x, &y)) in data.train_x.iter().zip(&data.train_y).enumerate() {
                let p = to_pixel(*x);
                let colour = CLASS_COLORS[y as usize % CLASS_COLORS.len()];
                if i < used {
                    dots.disc(p, radius + 0.8 * ppp, Color32::BLACK);
                    dots.disc(p, radius, colour);
                } else {
                    dots.disc(p, 0.6 * radius, colour.gamma_multiply(0.45));
                }
            }
            self.dots = Some((key, dots));
        }
        key
    }

    fn parameter_views(&mut self, ui: &mut Ui, s: &MlpSnapshot, width: f32, height: f32) {
        let spacing = ui.spacing().item_spacing.x;
        let w = (width - 3.0 * spacing) / 3.0;
        let Some((param, states)) = &s.parameter else {
            return;
        };
        let name = Architecture::new(
            &self.preset.network.hidden,
            s.data.as_ref().map_or(2, |d| d.classes),
            self.preset.network.activation,
        )
        .map(|a| a.param_name(*param as usize))
        .unwrap_or_else(|_| format!("#{param}"));
        let alive: Vec<usize> = (0..states.theta.len())
            .filter(|&i| states.diverged_at[i] == 0)
            .collect();
        let pairs = |a: &[f32], b: &[f32]| -> PlotPoints<'static> {
            alive
                .iter()
                .map(|&i| [f64::from(a[i]), f64::from(b[i])])
                .collect()
        };
        let has_momentum = self.preset.sampler.kind.has_momentum();
        small_plot("mlp theta-p", w, height)
            .x_axis_label(format!("θ {name}"))
            .y_axis_label("p")
            .show_outlined(ui, |plot| {
                if has_momentum {
                    plot.points(
                        Points::new("networks", pairs(&states.theta, &states.p))
                            .color(ACCENT)
                            .radius(1.2),
                    );
                }
            });
        small_plot("mlp p-xi", w, height)
            .x_axis_label(format!("p {name}"))
            .y_axis_label("ξ")
            .show_outlined(ui, |plot| {
                if has_momentum {
                    plot.points(
                        Points::new("networks", pairs(&states.p, &states.xi))
                            .color(ACCENT)
                            .radius(1.2),
                    );
                }
            });
        let thetas: Vec<f64> = alive.iter().map(|&i| f64::from(states.theta[i])).collect();
        small_plot("mlp weight histogram", w, height)
            .x_axis_label(format!("θ {name} across networks"))
            .include_y(0.0)
            .show_outlined(ui, |plot| {
                if let Some(h) = Histogram::of(&thetas, 40) {
                    let bars = h
                        .density
                        .iter()
                        .enumerate()
                        .map(|(b, &d)| Bar::new(h.centre(b), d).width(h.width))
                        .collect();
                    plot.bar_chart(BarChart::new("posterior", bars).color(ACCENT));
                }
                if let Some(v) = s.baseline_parameter {
                    plot.vline(VLine::new("SGD network", f64::from(v)).color(SGD));
                }
            });
    }
}

/// Mixes the class colours by probability, fading to neutral where the classes are equally
/// likely.
fn class_mix(probs: &[f32]) -> Color32 {
    let k = probs.len().max(1) as f32;
    let (mut r, mut g, mut b) = (0.0, 0.0, 0.0);
    let mut top = 0.0f32;
    for (c, &p) in probs.iter().enumerate() {
        let col = CLASS_COLORS[c % CLASS_COLORS.len()];
        r += p * f32::from(col.r());
        g += p * f32::from(col.g());
        b += p * f32::from(col.b());
        top = top.max(p);
    }
    let confidence = ((top - 1.0 / k) / (1.0 - 1.0 / k)).clamp(0.0, 1.0);
    let t = 0.25 + 0.75 * confidence;
    let mix = |v: f32, n: u8| (f32::from(n) + t * (v - f32::from(n))).round() as u8;
    Color32::from_rgb(
        mix(r, NEUTRAL.r()),
        mix(g, NEUTRAL.g()),
        mix(b, NEUTRAL.b()),
    )
}

/// The three map images: predictive classes, uncertainty, the focus network's classes.
/// What the third map beside the predictive shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ThirdMap {
    /// The SGD baseline network: one point estimate on the same data and minibatches.
    Sgd,
    /// One sampled network (the view's focus network): one posterior sample.
    Network,
}

fn map_images(
    map: &MapData,
    kind: Uncertainty,
    third: ThirdMap,
    colormap: &Colormap,
) -> [egui::ColorImage; 3] {
    let (nx, ny) = (map.grid.nx as usize, map.grid.ny as usize);
    let p = &map.prediction;
    let k = p.classes.max(1);
    let spread = uncertainty(p, kind);
    let mut images = [
        egui::ColorImage::filled([nx, ny], NEUTRAL),
        egui::ColorImage::filled([nx, ny], NEUTRAL),
        egui::ColorImage::filled([nx, ny], NEUTRAL),
    ];
    for iy in 0..ny {
        for ix in 0..nx {
            let cell = iy * nx + ix;
            // Row 0 of the grid is the bottom of the plane, row 0 of an image the top.
            let pixel = (ny - 1 - iy) * nx + ix;
            let Some(mean) = p.mean.get(cell * k..(cell + 1) * k) else {
                continue;
            };
            images[0].pixels[pixel] = class_mix(mean);
            if let Some(&value) = spread.get(cell) {
                images[1].pixels[pixel] = colormap.color(value);
            }
            let own = match third {
                ThirdMap::Sgd => map.baseline.get(cell * k..(cell + 1) * k),
                ThirdMap::Network => p.focus.get(cell * k..(cell + 1) * k),
            };
            if let Some(own) = own {
                images[2].pixels[pixel] = class_mix(own);
            }
        }
    }
    images
}

/// A key of the data set's points and labels, for the overlay's texture.
fn data_key(data: &Dataset) -> u64 {
    use std::hash::{Hash, Hasher};
    // Hashed in place: asked every frame, and the points do not need copying for it.
    let mut h = std::hash::DefaultHasher::new();
    for (x, y) in [(&data.train_x, &data.train_y), (&data.test_x, &data.test_y)] {
        h.write_usize(x.len());
        h.write(bytemuck::cast_slice(x));
        y.hash(&mut h);
    }
    h.finish()
}

/// One map, its data drawn over it (see [`MlpView::dots_layer`]); in Draw mode (`drawing`)
/// the canvas that takes the pointer.
fn map_view(
    ui: &mut Ui,
    side: f32,
    map: &MapData,
    texture: &egui::TextureHandle,
    drawing: bool,
) -> egui::Response {
    let sense = if drawing {
        Sense::click_and_drag()
    } else {
        Sense::hover()
    };
    let (rect, response) = ui.allocate_exact_size(Vec2::splat(side), sense);
    if drawing {
        draw::name_canvas(&response);
    }
    ui.painter_at(rect).image(
        texture.id(),
        rect,
        Rect::from_min_max(pos2(0.0, 0.0), pos2(1.0, 1.0)),
        Color32::WHITE,
    );
    let g = &map.grid;
    response.on_hover_ui(|ui| {
        ui.label(format!(
            "x ∈ [{:.2}, {:.2}], y ∈ [{:.2}, {:.2}]\nfilled: training points, rings: test points",
            g.x[0], g.x[1], g.y[0], g.y[1]
        ));
        if drawing {
            ui.label(draw::HELP);
        }
    })
}

/// Accuracy, NLL and ECE of the posterior predictive, one network and the SGD network.
/// The width the metrics table needs at the current type size: its longest row name and
/// its widest numbers, measured, with the grid's spacing (the table is a grid of labels,
/// which cannot be measured before it is drawn).
fn metrics_table_width(ui: &Ui) -> f32 {
    let width = |text: &str, style: egui::TextStyle| {
        egui::WidgetText::from(RichText::new(text).text_style(style.clone()))
            .into_galley(ui, Some(egui::TextWrapMode::Extend), f32::INFINITY, style)
            .size()
            .x
    };
    let names = ["prior predictive (step 0)", "network #1023 (diverged)"]
        .map(|n| width(n, egui::TextStyle::Small))
        .into_iter()
        .fold(0.0, f32::max);
    let numbers = width("100.0% (100.0%)", egui::TextStyle::Monospace)
        + 2.0 * width("0.000", egui::TextStyle::Monospace);
    (names + numbers + 4.0 * ui.spacing().item_spacing.x + 8.0).max(300.0)
}

/// What the networks are at step 0: draws of the prior, or the scaled initialisation, which
/// is not the prior (N(0, scale²/fan-in) weights and zero biases; "start from the prior" in
/// the network controls says so).
fn step0_name(p: &MlpPreset) -> &'static str {
    if p.init.from_prior {
        "prior predictive"
    } else {
        "initial networks"
    }
}

fn metrics_table(ui: &mut Ui, s: &MlpSnapshot, focus: u32, step0: &str) {
    let focus_diverged = s
        .parameter
        .as_ref()
        .and_then(|(_, p)| p.diverged_at.get(focus as usize))
        .is_some_and(|&d| d != 0);
    let single = if focus_diverged {
        format!("network #{focus} (diverged)")
    } else {
        format!("network #{focus}")
    };
    ui.label(RichText::new("test set (train accuracy in brackets)").small());
    egui::Grid::new("mlp metrics")
        .striped(true)
        .num_columns(4)
        .show(ui, |ui| {
            ui.label("");
            ui.label(RichText::new("accuracy").small());
            ui.label(RichText::new("NLL").small());
            ui.label(RichText::new("ECE").small());
            ui.end_row();
            let row = |ui: &mut Ui,
                       name: &str,
                       color: Color32,
                       test: &ClassMetrics,
                       train: &ClassMetrics| {
                ui.label(RichText::new(name).color(color).small());
                ui.label(
                    RichText::new(format!(
                        "{:.1}% ({:.1}%)",
                        100.0 * test.accuracy,
                        100.0 * train.accuracy
                    ))
                    .small()
                    .monospace(),
                );
                ui.label(
                    RichText::new(format!("{:.3}", test.nll))
                        .small()
                        .monospace(),
                );
                ui.label(
                    RichText::new(format!("{:.3}", test.ece))
                        .small()
                        .monospace(),
                );
                ui.end_row();
            };
            if let Some(e) = &s.evaluation {
                if e.chains_used > 0 {
                    row(
                        ui,
                        // Before the first step the networks are the starting ones.
                        &if s.step == 0 {
                            format!("{step0} (step 0)")
                        } else {
                            "posterior predictive".into()
                        },
                        ACCENT,
                        &e.ensemble.test,
                        &e.ensemble.train,
                    );
                } else {
                    ui.label(RichText::new("posterior predictive").color(ACCENT).small());
                    ui.label(RichText::new("no alive networks").small());
                    ui.end_row();
                }
                row(ui, &single, SINGLE, &e.single.test, &e.single.train);
            }
            if let Some(b) = &s.baseline {
                row(ui, "SGD network", SGD, &b.test, &b.train);
            }
        });
    if let Some(r) = &s.identifiable {
        let fmt = |v: f64| {
            if v.is_finite() {
                format!("{v:.3}")
            } else {
                "—".to_owned()
            }
        };
        let predictive: Vec<String> = r
            .predictive
            .iter()
            .map(|v| fmt(v.unwrap_or(f64::NAN)))
            .collect();
        ui.label(
            RichText::new(format!(
                "R-hat across {} networks ({} draws): test log-likelihood {}, p(label) at 3 \
                 test points {}",
                r.networks,
                r.draws,
                fmt(r.test_log_likelihood),
                predictive.join(" / ")
            ))
            .small(),
        )
        .on_hover_text(format!(
            "{} Split R-hat over the second half of the evaluations; {}.",
            crate::diagnostics::mlp::WEIGHT_RHAT_NOTE,
            r.note
        ));
    }
}

/// Kinetic temperature and ξ, test accuracy, and test NLL over the steps.
fn time_series(ui: &mut Ui, s: &MlpSnapshot, preset: &MlpPreset, width: f32, height: f32) {
    use super::plots::legend_corner;
    let w = (width - 3.0 * ui.spacing().item_spacing.x) / 3.0;
    let rows = &s.series;
    let line = |f: &dyn Fn(&crate::diagnostics::mlp::MlpSeriesRow) -> f64| -> Vec<[f64; 2]> {
        super::plots::decimate(
            rows.iter()
                .filter(|r| f(r).is_finite())
                .map(|r| [f64::from(r.step), f(r)])
                .collect(),
            super::plots::SERIES_COLUMNS,
        )
    };
    // The posterior predictive exists once a network has been collected.
    let ensemble = |f: fn(&ClassMetrics) -> f64| {
        line(&move |r| {
            if r.ensemble_networks > 0 {
                f(&r.ensemble_test)
            } else {
                f64::NAN
            }
        })
    };
    // Steps from 0 to at least one evaluation: at step 0 a lone point would centre the axis
    // on it, with negative steps.
    let first_evaluation = f64::from(preset.view.map_every.max(1));
    let plot = |ui: &Ui, id: &str, y: &[&str], curves: &[Vec<[f64; 2]>]| {
        let y = super::axes::fit_title(ui, y, height);
        super::plots::fixed_plot(id, w, height)
            .include_x(0.0)
            .include_x(first_evaluation)
            .legend(Legend::default().position(legend_corner(curves)))
            .x_grid_spacer(crate::app::axes::x_marks)
            .x_axis_label("step")
            .y_axis_label(y)
    };
    ui.horizontal(|ui| {
        let (kt, xi) = (line(&|r| r.kinetic_temperature), line(&|r| r.mean_xi));
        let target = preset.sampler.temperature;
        let level: Vec<[f64; 2]> = kt
            .first()
            .zip(kt.last())
            .map_or(Vec::new(), |(a, b)| vec![[a[0], target], [b[0], target]]);
        plot(
            ui,
            "mlp temperature",
            &["kinetic temperature, mean ξ", "kinetic T, mean ξ", "T, ξ"],
            &[kt.clone(), xi.clone(), level],
        )
        .show_outlined(ui, |p| {
            p.line(Line::new("⟨p K'(p)⟩", PlotPoints::from(kt)).color(ACCENT));
            p.line(Line::new("mean ξ", PlotPoints::from(xi)).color(SINGLE));
            p.hline(HLine::new("target T", target).color(TRUTH));
        });
        let (e, one, sgd) = (
            ensemble(|m| m.accuracy),
            line(&|r| r.single_test.accuracy),
            line(&|r| r.baseline_test.accuracy),
        );
        plot(
            ui,
            "mlp accuracy",
            &["test accuracy", "accuracy"],
            &[e.clone(), one.clone(), sgd.clone()],
        )
        .show_outlined(ui, |p| {
            p.line(Line::new("posterior predictive", PlotPoints::from(e)).color(ACCENT));
            p.line(Line::new("one network", PlotPoints::from(one)).color(SINGLE));
            p.line(Line::new("SGD network", PlotPoints::from(sgd)).color(SGD));
        });
        let (e, one, sgd) = (
            ensemble(|m| m.nll),
            line(&|r| r.single_test.nll),
            line(&|r| r.baseline_test.nll),
        );
        plot(
            ui,
            "mlp nll",
            &["test NLL"],
            &[e.clone(), one.clone(), sgd.clone()],
        )
        .include_y(0.0)
        .show_outlined(ui, |p| {
            p.line(Line::new("posterior predictive", PlotPoints::from(e)).color(ACCENT));
            p.line(Line::new("one network", PlotPoints::from(one)).color(SINGLE));
            p.line(Line::new("SGD network", PlotPoints::from(sgd)).color(SGD));
        });
    });
}

fn data_controls(ui: &mut Ui, p: &mut MlpPreset, shell: &mut Shell) {
    ui.toggle_value(&mut p.view.draw, "✏ Draw points")
        .on_hover_text(format!(
            "Draw mode: the tools and the canvas (the first map) in the central area. {} \
             Points of the existing classes change the data live; a new class restarts the \
             networks.",
            draw::HELP
        ));
    let d = &mut p.network.data;
    egui::ComboBox::from_label("data set")
        .selected_text(d.source.name())
        .show_ui(ui, |ui| {
            for source in DataSource::GENERATED {
                let name = source.name();
                ui.selectable_value(&mut d.source, source, name);
            }
        });
    let asked = ui
        .button("Load CSV…")
        .on_hover_text("x,y,label per line (label 0–7); a header line and # comments are fine")
        .clicked();
    let picked = if asked {
        shell.pick(FileRequest::LoadCsv)
    } else {
        shell.answer_for(FileRequest::LoadCsv)
    };
    if let Some(path) = picked {
        d.source = DataSource::Csv {
            path: path.to_string_lossy().into_owned(),
        };
    }
    if let DataSource::Csv { path } = &d.source {
        ui.small(format!("file: {path}"));
    }
    if let DataSource::Drawn { classes, points } = &d.source {
        ui.small(format!(
            "{} drawn points, {classes} classes (saved in the preset)",
            points.len()
        ));
    }
    if let DataSource::Blobs { classes } = &mut d.source {
        crate::app::controls::bounded(ui, classes, 2..=8, |s| s.text("classes"));
    }
    if d.source.is_generated() {
        crate::app::controls::bounded(ui, &mut d.points, 20..=5000, |s| {
            s.logarithmic(true).text("points")
        });
        crate::app::controls::bounded(ui, &mut d.noise, 0.0..=1.0, |s| s.text("noise"));
    }
    crate::app::controls::bounded(ui, &mut d.test_fraction, 0.0..=0.9, |s| {
        s.text("test fraction")
    })
    .on_hover_text(
        "Held out as test points (rings). A drawn point's set depends on the point alone, so \
         drawing one moves at most one other point between the sets.",
    );
    ui.horizontal(|ui| {
        let label = ui.label("data seed");
        ui.add(egui::DragValue::new(&mut d.seed))
            .labelled_by(label.id)
            .on_hover_text("The data set's own seed: a new one draws new points");
    });
}

/// How many of the training points the likelihood uses (the first n of the same set), live:
/// a class watches the predictive contract where the data arrive.
fn data_used_control(ui: &mut Ui, used: &mut Option<u32>, available: u32) {
    if available == 0 {
        return;
    }
    let mut n = used.unwrap_or(available).min(available);
    crate::app::controls::bounded(ui, &mut n, 1..=available, |s| {
        s.logarithmic(true).text("points used")
    })
    .on_hover_text(
        "The likelihood uses the first n training points of this same set (the gradient scaled \
         to n); the others stay on the maps as faint dots. A new set comes from the points \
         slider or the data seed.",
    );
    *used = (n < available).then_some(n);
}

fn network_controls(ui: &mut Ui, p: &mut MlpPreset) {
    let n = &mut p.network;
    let mut layers = n.hidden.len();
    ui.horizontal(|ui| {
        ui.label("hidden layers");
        for k in 1..=MAX_HIDDEN_LAYERS {
            ui.selectable_value(&mut layers, k, k.to_string());
        }
    });
    if layers != n.hidden.len() {
        let last = n.hidden.last().copied().unwrap_or(16);
        n.hidden.resize(layers, last);
    }
    for (k, w) in n.hidden.iter_mut().enumerate() {
        crate::app::controls::bounded(ui, w, 1..=MAX_WIDTH as u32, |s| {
            s.text(format!("units in layer {}", k + 1))
        });
    }
    ui.horizontal(|ui| {
        ui.label("activation");
        for a in Activation::ALL {
            ui.selectable_value(&mut n.activation, a, a.name());
        }
    });
    slider(
        ui,
        &mut n.prior_scale,
        const { fields::range(Kind::Mlp, "network.prior_scale") },
        0.05,
        20.0,
        true,
        "prior σ",
    );
    ui.checkbox(&mut p.init.from_prior, "start from the prior")
        .on_hover_text(
            "Draw every weight and bias from N(0, σ_p²) at step 0, so the map starts as the prior \
             predictive and morphs into the posterior predictive. Off: the usual initialisation \
             (N(0, scale²/fan-in) weights, zero biases), which is not the prior. Restarts the \
             networks.",
        );
    crate::app::controls::bounded(ui, &mut n.batch_size, 0..=512, |s| {
        s.text("minibatch (0 = all)").logarithmic(true)
    })
    .on_hover_text(
        "Each network draws its own minibatch every step; the gradient is scaled by N/n",
    );
    ui.small("Changing the layers restarts the networks; prior, batch and data change live.");
}

fn view_controls(
    ui: &mut Ui,
    p: &mut MlpPreset,
    uncertainty: &mut Uncertainty,
    third_map: &mut ThirdMap,
) {
    let classes = p.network.data.source.classes().unwrap_or(2);
    if let Ok(arch) = Architecture::new(&p.network.hidden, classes, p.network.activation) {
        let max = arch.params() as u32 - 1;
        p.view.parameter = p.view.parameter.min(max);
        let name = arch.param_name(p.view.parameter as usize);
        crate::app::controls::bounded(ui, &mut p.view.parameter, 0..=max, |s| {
            s.text(format!("weight {name}"))
        })
        .on_hover_text("The parameter drawn in the θ–p and p–ξ portraits and the histogram");
    }
    crate::app::controls::bounded(ui, &mut p.view.focus_chain, 0..=p.chains - 1, |s| {
        s.text("network alone")
    })
    .on_hover_text("The sampled network whose own decision map the third map can show");
    let mut predictive = p.view.predictive_chains.min(p.chains);
    if ui
        .add(
            Slider::new(&mut predictive, 1..=p.chains)
                .clamping(egui::SliderClamping::Edits)
                .logarithmic(true)
                .text("in predictive"),
        )
        .on_hover_text("Networks averaged in the posterior predictive")
        .changed()
    {
        p.view.predictive_chains = predictive;
    }
    crate::app::controls::bounded(ui, &mut p.view.map_resolution, 16..=128, |s| {
        s.text("map resolution")
    });
    crate::app::controls::bounded(ui, &mut p.view.map_every, 1..=500, |s| {
        s.logarithmic(true).text("steps per map")
    })
    .on_hover_text("Steps between two computations of the maps");
    ui.horizontal(|ui| {
        ui.label("uncertainty");
        ui.selectable_value(uncertainty, Uncertainty::Entropy, "entropy");
        ui.selectable_value(uncertainty, Uncertainty::Spread, "spread");
    });
    ui.horizontal(|ui| {
        ui.label("third map");
        ui.selectable_value(third_map, ThirdMap::Sgd, "SGD network")
            .on_hover_text("The baseline trained by SGD on the same data: a point estimate");
        ui.selectable_value(third_map, ThirdMap::Network, "one sample")
            .on_hover_text("The network chosen above: one draw of the posterior");
    });
}

impl View for MlpView {
    fn refresh(&mut self) {
        self.sim.refresh();
    }

    fn simulation(&self) -> Option<&dyn SimulationHandle> {
        Some(&self.sim)
    }

    fn controls(&mut self, ui: &mut Ui, shell: &mut Shell) {
        self.control_panel(ui, shell);
        self.apply_changes(false);
    }

    fn central(&mut self, ui: &mut Ui, shell: &mut Shell) {
        self.central_area(ui, shell);
        // Draw mode edits the preset here, not in the control panel.
        self.apply_changes(false);
    }

    fn act(&mut self, action: Action) {
        if self.sim.transport(action) {
            return;
        }
        let spf = &mut self.preset.view.steps_per_frame;
        match action {
            Action::FlipSign => self.preset.sampler.flip_friction_sign(),
            Action::Faster => *spf = (*spf * 2).min(200),
            Action::Slower => *spf = (*spf / 2).max(1),
            _ => {}
        }
        self.apply_changes(false);
    }

    fn preset(&self) -> Option<AnyPreset> {
        Some(AnyPreset::Mlp(self.preset.clone()))
    }

    fn load(&mut self, preset: AnyPreset) -> bool {
        match preset {
            AnyPreset::Mlp(p) => {
                self.load_preset(p);
                true
            }
            _ => false,
        }
    }

    fn series_csv(&self) -> Option<String> {
        Some(crate::diagnostics::mlp::series_csv(
            &self.sim.snapshot().series,
        ))
    }

    /// A drawn set still short of points is no error: the view shows what it waits for
    /// (and a picture of that is a picture of the view).
    fn error(&self) -> Option<String> {
        if draw::waiting(&self.preset).is_some() {
            return None;
        }
        self.session().with_snapshot(|s| s.error.clone())
    }

    fn panels(&self) -> Vec<(String, Rect)> {
        [
            "posterior-predictive map",
            "uncertainty map",
            "one network's map",
        ]
        .iter()
        .zip(&self.panel_rects)
        .map(|(l, r)| (l.to_string(), *r))
        .collect()
    }

    /// The maps are evaluated at multiples of `map_every` and at the final step.
    fn settled_at(&mut self, step: u32) -> bool {
        self.session().with_snapshot(|s| {
            s.error.is_some()
                || (s.step >= step
                    && s.run_to.is_none()
                    && s.map.as_ref().is_some_and(|m| m.step == s.step))
        })
    }
}
