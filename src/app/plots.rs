//! Time series of the run and marginal histograms against the exact marginals.

use super::axes::Scale;
use super::posterior::session::History;
use crate::diagnostics::growth::{GrowthRate, GrowthRow};
use crate::diagnostics::{SeriesRow, exploration_intervals};
use crate::math::{Chain2, SamplerParams};
use egui::{Color32, Ui};
use egui_plot::{Corner, HLine, Legend, Line, LineStyle, Plot, PlotPoints, PlotUi, Span, VLine};

const ACCENT: Color32 = Color32::from_rgb(255, 170, 60);
const TRUTH: Color32 = Color32::from_rgb(120, 200, 255);

/// A plot of the given size that follows its data (no pan or zoom).
pub(crate) fn fixed_plot(id: &str, width: f32, height: f32) -> Plot<'static> {
    Plot::new(id.to_owned())
        .width(width)
        .height(height)
        // Labels with the decimals their spacing needs (a log or symmetric-log axis, or a
        // category axis, sets its own formatter afterwards).
        .x_axis_formatter(super::axes::tick_label)
        .y_axis_formatter(super::axes::tick_label)
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_boxed_zoom(false)
        .show_background(false)
}

/// Shows a plot with the outline egui_plot draws with its background, but not the filled
/// background itself ([`fixed_plot`] turns it off): on a software rasteriser a frame costs
/// the pixels its shapes cover, and the backgrounds of the six plots under the portraits
/// were a sixth of them. The window's colour shows through instead.
pub(crate) trait Outlined<'a> {
    /// [`Plot::show`], then the outline of the plot's frame.
    fn show_outlined<R>(
        self,
        ui: &mut Ui,
        build: impl FnOnce(&mut PlotUi<'a>) -> R + 'a,
    ) -> egui_plot::PlotResponse<R>;
}

impl<'a> Outlined<'a> for Plot<'a> {
    fn show_outlined<R>(
        self,
        ui: &mut Ui,
        build: impl FnOnce(&mut PlotUi<'a>) -> R + 'a,
    ) -> egui_plot::PlotResponse<R> {
        // The whole widget may grow so that its data frame keeps a readable height: the
        // x axis's ticks and title (larger in presentation mode) come out of the height a
        // layout gives, and a squeezed plot was all legend. The axis takes about two rows
        // of text; a plot without one gets a little more than it needs.
        let axis = 2.0 * ui.text_style_height(&egui::TextStyle::Body) + 10.0;
        let least = MIN_PLOT_FRAME_PX / ui.ctx().pixels_per_point() + axis;
        let response = self.min_size(egui::vec2(1.0, least)).show(ui, build);
        let frame = *response.transform.frame();
        ui.painter().rect_stroke(
            frame,
            2.0,
            ui.visuals().widgets.noninteractive.bg_stroke,
            egui::StrokeKind::Inside,
        );
        remember_frame(ui, frame);
        response
    }
}

/// The lowest a plot's data frame (inside its axes) is drawn, in physical pixels: a curve
/// with a visible shape and a legend of two entries beside it need about this.
pub const MIN_PLOT_FRAME_PX: f32 = 80.0;

/// The data frames of the plots shown in the latest pass, visible part only, in points.
#[derive(Clone, Default)]
struct PlotFrames {
    pass: u64,
    frames: Vec<PlotFrame>,
}

/// Where a plot's data frame was drawn, in points.
#[derive(Clone, Copy, Debug)]
pub struct PlotFrame {
    /// The whole frame, part of it maybe scrolled out of view.
    pub frame: egui::Rect,
    /// What of it is visible.
    pub visible: egui::Rect,
}

/// Notes where a plot's data frame was shown this pass (what a reader sees of it, clipped by
/// its panel), for [`plot_frames`].
fn remember_frame(ui: &Ui, frame: egui::Rect) {
    let visible = frame.intersect(ui.clip_rect());
    if !visible.is_positive() {
        return;
    }
    let pass = ui.ctx().cumulative_pass_nr();
    ui.ctx().data_mut(|d| {
        let seen =
            d.get_temp_mut_or_default::<PlotFrames>(egui::Id::unique("atmc-lab plot frames"));
        if seen.pass != pass {
            *seen = PlotFrames {
                pass,
                frames: Vec::new(),
            };
        }
        seen.frames.push(PlotFrame { frame, visible });
    });
}

/// The data frames (the area inside the axes) of every plot the latest pass showed, and
/// what of each a reader sees, in points: the layout tests check that no plot is too flat to
/// read and that no legend spills out of its plot.
pub fn plot_frames(ctx: &egui::Context) -> Vec<PlotFrame> {
    let pass = ctx.cumulative_pass_nr();
    ctx.data(|d| {
        d.get_temp::<PlotFrames>(egui::Id::unique("atmc-lab plot frames"))
            .filter(|seen| seen.pass + 1 >= pass)
            .map(|seen| seen.frames)
            .unwrap_or_default()
    })
}

/// Shows `plot` with `build`, or, while `waiting` holds a message (no data yet), an empty
/// frame without axes or grid with the message centred in it: empty axes would show
/// egui_plot's default range (−0.5…0.5 or so), which reads like data.
pub(crate) fn show_or_wait<'a>(
    plot: Plot<'a>,
    ui: &mut Ui,
    waiting: Option<&str>,
    build: impl FnOnce(&mut PlotUi<'a>) + 'a,
) {
    match waiting {
        None => {
            plot.show_outlined(ui, build);
        }
        Some(text) => {
            let response = plot
                .show_axes(false)
                .show_grid(false)
                .show_outlined(ui, |_| {});
            let frame = *response.transform.frame();
            ui.place(
                frame,
                egui::Label::new(egui::RichText::new(text).weak()).wrap(),
            );
        }
    }
}

/// [`fixed_plot`] with a legend.
pub(crate) fn small_plot(id: &str, width: f32, height: f32) -> Plot<'static> {
    fixed_plot(id, width, height).legend(Legend::default())
}

/// The corner for a legend that leaves the newest fifth of every curve visible: the left
/// side (time runs to the right), at the top or the bottom, whichever holds fewer of the
/// points in the left two fifths of the plot.
pub(crate) fn legend_corner(curves: &[Vec<[f64; 2]>]) -> Corner {
    let points = || {
        curves
            .iter()
            .flatten()
            .filter(|p| p[0].is_finite() && p[1].is_finite())
    };
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for p in points() {
        (x0, x1, y0, y1) = (x0.min(p[0]), x1.max(p[0]), y0.min(p[1]), y1.max(p[1]));
    }
    let (mut top, mut bottom) = (0usize, 0usize);
    for p in points().filter(|p| p[0] <= x0 + 0.4 * (x1 - x0)) {
        if p[1] > 0.5 * (y0 + y1) {
            top += 1;
        } else {
            bottom += 1;
        }
    }
    if top <= bottom {
        Corner::LeftTop
    } else {
        Corner::LeftBottom
    }
}

/// A time series over steps: [`fixed_plot`] from step 0, with its legend where it leaves the
/// newest part of `curves` visible. Before `curves` span any steps (a run at step 0) it has
/// no axes or grid: egui_plot would label a made-up range around the one value
/// ("−0.01, −0.01, 0.00, 0.01, 0.01"), which reads like data.
pub(crate) fn series_plot(
    id: &str,
    width: f32,
    height: f32,
    curves: &[Vec<[f64; 2]>],
) -> Plot<'static> {
    let shown = spans_steps(curves);
    // Every run starts at step 0: the axis does too, so a narrow plot still labels it.
    fixed_plot(id, width, height)
        .legend(Legend::default().position(legend_corner(curves)))
        .include_x(0.0)
        .show_axes(shown)
        .show_grid(shown)
}

/// Whether `curves` hold finite points at two or more different steps: something a time
/// series can show on labelled axes.
pub(crate) fn spans_steps(curves: &[Vec<[f64; 2]>]) -> bool {
    let mut steps = curves
        .iter()
        .flatten()
        .filter(|p| p[0].is_finite() && p[1].is_finite())
        .map(|p| p[0]);
    steps.next().is_some_and(|first| steps.any(|x| x != first))
}

/// Columns a time series is thinned to: more than any series plot is pixels wide.
pub(crate) const SERIES_COLUMNS: usize = 640;

/// A curve of many points thinned for drawing: the x range cut into `columns` equal
/// columns, each keeping its lowest and highest point in their order (a spike survives, as
/// it would on screen). A series of 8192 rows is otherwise 8192 feathered segments a frame.
pub(crate) fn decimate(points: Vec<[f64; 2]>, columns: usize) -> Vec<[f64; 2]> {
    if points.len() <= 2 * columns || columns == 0 {
        return points;
    }
    let (x0, x1) = (points[0][0], points[points.len() - 1][0]);
    let width = (x1 - x0) / columns as f64;
    if width.is_nan() || width <= 0.0 {
        return points;
    }
    let mut out = Vec::with_capacity(2 * columns + 2);
    let mut start = 0;
    while start < points.len() {
        let column = ((points[start][0] - x0) / width).floor();
        let end = start
            + points[start..]
                .iter()
                .take_while(|p| ((p[0] - x0) / width).floor() <= column)
                .count()
                .max(1);
        let slice = &points[start..end];
        let (lo, hi) = slice.iter().enumerate().fold((0, 0), |(lo, hi), (i, p)| {
            (
                if p[1] < slice[lo][1] { i } else { lo },
                if p[1] > slice[hi][1] { i } else { hi },
            )
        });
        out.push(slice[lo.min(hi)]);
        if lo != hi {
            out.push(slice[lo.max(hi)]);
        }
        start = end;
    }
    // The newest value, where the eye looks.
    let last = points[points.len() - 1];
    if out.last() != Some(&last) {
        out.push(last);
    }
    out
}

/// Points of one quantity of the rows on an axis of the given scale, thinned for drawing.
fn series<T>(
    rows: &[T],
    scale: Scale,
    step: impl Fn(&T) -> u32,
    f: impl Fn(&T) -> f64,
) -> Vec<[f64; 2]> {
    decimate(
        rows.iter()
            .map(|r| [f64::from(step(r)), scale.to_plot(f(r))])
            .filter(|p| p[1].is_finite())
            .collect(),
        SERIES_COLUMNS,
    )
}

/// The scale for the quantities `fs` of the rows together.
fn scale_of<T>(rows: &[T], fs: &[&dyn Fn(&T) -> f64]) -> Scale {
    Scale::for_values(rows.iter().flat_map(|r| fs.iter().map(move |f| f(r))))
}

/// Shades a cyclical schedule's exploration stages (their states are not pooled).
fn shade_exploration(p: &mut PlotUi<'_>, intervals: &[[f64; 2]]) {
    for &[from, to] in intervals {
        p.span(
            Span::new("exploration stage", from..=to)
                .fill(Color32::from_rgba_unmultiplied(120, 120, 170, 56)),
        );
    }
}

/// The row of time-series plots: kinetic temperature against T, mean ξ, diverged fraction,
/// distance to truth and the step size.
#[allow(clippy::too_many_arguments)]
pub fn time_series(
    ui: &mut Ui,
    rows: &[SeriesRow],
    temperature: f64,
    chains: u32,
    (has_momentum, has_thermostat): (bool, bool),
    width: f32,
    height: f32,
) {
    // Only the plots of quantities the sampler has: SGLD's missing p and ξ leave their
    // width to the others rather than to empty frames.
    let panels = 2 + usize::from(has_momentum) + usize::from(has_thermostat);
    let spacing = ui.spacing().item_spacing;
    // Plots narrower than their legends fold onto two rows (the control panel open in
    // presentation mode) rather than run a legend over the next plot.
    let per_row = if (width - panels as f32 * spacing.x) / (panels as f32) < 190.0 && panels > 2 {
        panels.div_ceil(2)
    } else {
        panels
    };
    let w = (width - per_row as f32 * spacing.x) / per_row as f32;
    let height = if per_row < panels {
        (height - spacing.y) / 2.0
    } else {
        height
    };
    let explore = exploration_intervals(rows);
    let at = |r: &SeriesRow| r.step;
    let n = f64::from(chains.max(1));
    let kt = |r: &SeriesRow| r.kinetic_temperature;
    let xi = |r: &SeriesRow| r.mean_xi;
    let diverged = |r: &SeriesRow| 100.0 * r.diverged as f64 / n;
    let distance = |r: &SeriesRow| 100.0 * r.energy_distance;
    let step_size = |r: &SeriesRow| r.step_size;
    // A constant line across the steps shown, for placing legends.
    let level = |v: f64| -> Vec<[f64; 2]> {
        match (rows.first(), rows.last()) {
            (Some(a), Some(b)) => vec![[f64::from(a.step), v], [f64::from(b.step), v]],
            _ => Vec::new(),
        }
    };
    ui.horizontal_wrapped(|ui| {
        ui.set_max_width(width);
        if has_momentum {
            let scale = scale_of(rows, &[&kt]);
            let curve = series(rows, scale, at, kt);
            let target = scale.to_plot(temperature);
            scale
                .apply(series_plot(
                    "kinetic temperature",
                    w,
                    height,
                    &[curve.clone(), level(target)],
                ))
                .x_grid_spacer(crate::app::axes::x_marks)
                .x_axis_label("step")
                .y_axis_label(super::axes::fit_title(
                    ui,
                    &[
                        &format!("kinetic temperature{}", scale.note()),
                        &format!("kinetic T{}", scale.note()),
                        "kinetic T",
                    ],
                    height,
                ))
                .include_y(scale.to_plot(0.0).max(0.0).min(target))
                .show_outlined(ui, |p| {
                    shade_exploration(p, &explore);
                    p.line(Line::new("⟨p K'(p)⟩", PlotPoints::from(curve)).color(ACCENT));
                    p.hline(HLine::new("target T", target).color(TRUTH));
                });
        }
        if has_thermostat {
            let scale = scale_of(rows, &[&xi]);
            let curve = series(rows, scale, at, xi);
            scale
                .apply(series_plot(
                    "mean xi",
                    w,
                    height,
                    std::slice::from_ref(&curve),
                ))
                .x_grid_spacer(crate::app::axes::x_marks)
                .x_axis_label("step")
                .y_axis_label(format!("mean ξ{}", scale.note()))
                .show_outlined(ui, |p| {
                    shade_exploration(p, &explore);
                    p.line(Line::new("mean ξ", PlotPoints::from(curve)).color(ACCENT));
                });
        }
        let (d, e) = (
            series(rows, Scale::Linear, at, diverged),
            series(rows, Scale::Linear, at, distance),
        );
        series_plot(
            "diverged and distance",
            w,
            height,
            &[d.clone(), e.clone(), level(0.0)],
        )
        .x_grid_spacer(crate::app::axes::x_marks)
        .x_axis_label("step")
        .include_y(0.0)
        .show_outlined(ui, |p| {
            shade_exploration(p, &explore);
            p.line(
                Line::new("diverged %", PlotPoints::from(d)).color(Color32::from_rgb(255, 90, 80)),
            );
            p.line(Line::new("energy dist. ×100", PlotPoints::from(e)).color(TRUTH));
        });
        let h = series(rows, Scale::Linear, at, step_size);
        series_plot("step size", w, height, &[h.clone(), level(0.0)])
            .x_grid_spacer(crate::app::axes::x_marks)
            .x_axis_label("step")
            .include_y(0.0)
            .show_outlined(ui, |p| {
                shade_exploration(p, &explore);
                p.line(
                    Line::new("step size h", PlotPoints::from(h))
                        .color(Color32::from_rgb(190, 140, 255)),
                );
            });
    });
}

/// One growth plot: its id, its axis title, the value of a chain, the quantiles of a row,
/// and whether the predicted tangents are drawn.
type GrowthQuantity = (
    &'static str,
    &'static str,
    fn(&Chain2) -> f64,
    fn(&GrowthRow) -> [f64; 3],
    bool,
);

/// The colour of the growth plots' q-th quantile line (median, 90%, 99%).
fn quantile_color(q: usize) -> Color32 {
    [
        ACCENT,
        Color32::from_rgb(230, 110, 60),
        Color32::from_rgb(200, 60, 70),
    ][q.min(2)]
}

/// Colours of the tracked chains' lines in the growth plots.
const CHAIN_LINE: Color32 = Color32::from_rgba_premultiplied(120, 200, 150, 150);
/// Tracked chains drawn one by one in the growth plots (the quantiles stand for the rest).
const GROWTH_LINES: usize = 12;
/// Steps over which a tangent of the predicted slope is drawn.
const TANGENT_STEPS: u32 = crate::app::posterior::session::GROWTH_WINDOW as u32;

/// The explosion in slow motion: |p|, |θ| and ξ of the tracked chains and the ensemble's
/// quantiles against the step, on axes that turn logarithmic when the values span decades;
/// with the printed friction sign, each chain's predicted slope βh per step as a dashed
/// tangent. `cursor` marks the step a replay shows.
#[allow(clippy::too_many_arguments)]
pub fn growth(
    ui: &mut Ui,
    history: &History,
    rows: &[GrowthRow],
    sampler: Option<&SamplerParams>,
    rate: Option<&GrowthRate>,
    cursor: Option<u32>,
    width: f32,
    height: f32,
) {
    let w = (width - 3.0 * ui.spacing().item_spacing.x) / 3.0;
    fn norm(v: [f32; 2]) -> f64 {
        f64::from(v[0]).hypot(f64::from(v[1]))
    }
    let quantities: [GrowthQuantity; 3] = [
        (
            "growth p",
            "|p|",
            |c| norm(c.p),
            |r| r.log_p.map(|v| 10f64.powf(v)),
            true,
        ),
        (
            "growth theta",
            "|θ|",
            |c| norm(c.theta),
            |r| r.log_theta.map(|v| 10f64.powf(v)),
            false,
        ),
        ("growth xi", "ξ", |c| f64::from(c.xi[0]), |r| r.xi, false),
    ];
    if let (Some(rate), Some(sp)) = (rate, sampler)
        && sp.friction_sign < 0.0
    {
        ui.label(
            egui::RichText::new(format!(
                "ln|p| grows {:.4} per step over the last {TANGENT_STEPS} steps before divergence; \
                 the printed O-step predicts βh = {:.4} (median of {} tracked chains)",
                rate.measured, rate.predicted, rate.chains
            ))
            .small(),
        );
    }
    // Folds onto a second row in a narrow window rather than running past its edge.
    ui.horizontal_wrapped(|ui| {
        let item = |ui: &mut Ui, color: Color32, text: &str| {
            ui.label(egui::RichText::new("━━").color(color));
            ui.label(egui::RichText::new(text).small());
        };
        item(ui, CHAIN_LINE, "tracked chains");
        for (q, name) in ["median", "90%", "99%"].iter().enumerate() {
            item(ui, quantile_color(q), &format!("ensemble {name}"));
        }
        if sampler.is_some_and(|sp| sp.friction_sign < 0.0) {
            item(
                ui,
                ui.visuals().strong_text_color(),
                "- - predicted eᵝʰ per step",
            );
        }
    });
    ui.horizontal(|ui| {
        for (id, label, of_chain, of_row, tangents) in quantities {
            let values = history
                .paths
                .iter()
                .flat_map(|p| p.iter().map(|(_, c)| of_chain(c)))
                .chain(rows.iter().flat_map(of_row));
            let scale = Scale::for_values(values);
            scale
                .apply(fixed_plot(id, w, height))
                .x_grid_spacer(crate::app::axes::x_marks)
                .x_axis_label("step")
                .y_axis_label(format!("{label}{}", scale.note()))
                .show_outlined(ui, |p| {
                    for (k, path) in history.paths.iter().take(GROWTH_LINES).enumerate() {
                        let points: PlotPoints<'static> = path
                            .iter()
                            .map(|(s, c)| [f64::from(*s), scale.to_plot(of_chain(c))])
                            .filter(|q| q[1].is_finite())
                            .collect();
                        let name = if k == 0 { "tracked chains" } else { "" };
                        p.line(Line::new(name, points).color(CHAIN_LINE).width(1.0));
                    }
                    for (q, name) in ["median", "90%", "99%"].iter().enumerate() {
                        p.line(
                            Line::new(
                                format!("ensemble {name}"),
                                series(rows, scale, |r| r.step, |r| of_row(r)[q]),
                            )
                            .color(quantile_color(q))
                            .width(2.0),
                        );
                    }
                    if tangents && let Some(sp) = sampler.filter(|sp| sp.friction_sign < 0.0) {
                        predicted_tangents(p, history, sp, scale);
                    }
                    if let Some(c) = cursor {
                        p.vline(VLine::new("replay", f64::from(c)).color(TRUTH));
                    }
                });
        }
    });
}

/// For each tracked chain drawn, a dashed tangent ending at its last state with the slope the
/// printed O-step predicts: |p| × e^{−φβh} per step, β = max(D, ξ).
fn predicted_tangents(p: &mut PlotUi<'_>, history: &History, sp: &SamplerParams, scale: Scale) {
    for (k, path) in history.paths.iter().take(GROWTH_LINES).enumerate() {
        let Some((step, c)) = path
            .iter()
            .rev()
            .find(|(_, c)| c.p.iter().chain(&c.xi).all(|v| v.is_finite()))
        else {
            continue;
        };
        let i = usize::from(c.p[1].abs() > c.p[0].abs());
        let size = f64::from(c.p[0]).hypot(f64::from(c.p[1]));
        let beta = f64::from(sp.o_step_friction(c.p[i], c.xi[i]));
        let rate = -f64::from(sp.friction_sign) * beta * f64::from(sp.h);
        if !(rate.is_finite() && rate > 0.0) {
            continue;
        }
        // At most three decades long, so that a steep tangent does not stretch the axis.
        let back = f64::from(TANGENT_STEPS).min(3.0 * std::f64::consts::LN_10 / rate);
        let start = size * (-rate * back).exp();
        let name = if k == 0 {
            "predicted eᵝʰ per step"
        } else {
            ""
        };
        p.line(
            Line::new(
                name,
                PlotPoints::from(vec![
                    [f64::from(*step) - back, scale.to_plot(start)],
                    [f64::from(*step), scale.to_plot(size)],
                ]),
            )
            .color(Color32::WHITE)
            .style(LineStyle::dashed_loose())
            .width(1.5),
        );
    }
}

/// A marginal histogram of the chains (as a normalised density) against the exact marginal.
/// `counts` are per bin over `range`; `truth` the exact probability per bin.
pub fn marginal(
    ui: &mut Ui,
    id: &str,
    label: &str,
    range: [f64; 2],
    counts: &[f64],
    truth: &[f64],
    size: egui::Vec2,
) {
    let n = counts.len().max(1);
    let dx = (range[1] - range[0]) / n as f64;
    let total: f64 = counts.iter().sum::<f64>().max(1.0);
    let steps = |values: &[f64], norm: f64| -> PlotPoints<'static> {
        let mut pts = Vec::with_capacity(2 * values.len());
        for (i, v) in values.iter().enumerate() {
            let x0 = range[0] + i as f64 * dx;
            pts.push([x0, v / (norm * dx)]);
            pts.push([x0 + dx, v / (norm * dx)]);
        }
        pts.into()
    };
    let truth_total: f64 = truth.iter().sum::<f64>();
    small_plot(id, size.x, size.y)
        .include_y(0.0)
        .x_grid_spacer(crate::app::axes::x_marks)
        .show_outlined(ui, |p| {
            p.line(Line::new(format!("chains {label}"), steps(counts, total)).color(ACCENT));
            if truth_total > 0.0 {
                // The exact marginal restricted to the view, normalised like the histogram.
                p.line(Line::new("exact", steps(truth, truth_total)).color(TRUTH));
            }
        });
}

/// A reliability diagram: accuracy per confidence bin (bins without examples left out)
/// against the diagonal of perfect calibration. No legend: it is small and says what it is.
pub(crate) fn reliability_diagram(
    ui: &mut Ui,
    id: &str,
    bins: &[crate::diagnostics::classification::ReliabilityBin],
    width: f32,
    height: f32,
) {
    reliability_diagram_or_wait(ui, id, bins, width, height, None);
}

/// [`reliability_diagram`], or the message `waiting` in an empty frame (see [`show_or_wait`]).
pub(crate) fn reliability_diagram_or_wait(
    ui: &mut Ui,
    id: &str,
    bins: &[crate::diagnostics::classification::ReliabilityBin],
    width: f32,
    height: f32,
    waiting: Option<&str>,
) {
    let bars: Vec<egui_plot::Bar> = bins
        .iter()
        .filter(|b| b.count > 0)
        .map(|b| {
            egui_plot::Bar::new(0.5 * (b.lower + b.upper), b.accuracy)
                .width(b.upper - b.lower)
                .name(format!("{} examples", b.count))
        })
        .collect();
    let plot = fixed_plot(id, width, height)
        .include_x(0.0)
        .include_x(1.0)
        .include_y(0.0)
        .include_y(1.0)
        .x_axis_label("confidence (test set)")
        .y_axis_label("accuracy");
    show_or_wait(plot, ui, waiting, |plot| {
        plot.bar_chart(egui_plot::BarChart::new("accuracy", bars).color(ACCENT));
        plot.line(
            Line::new(
                "perfect calibration",
                PlotPoints::from(vec![[0.0, 0.0], [1.0, 1.0]]),
            )
            .color(TRUTH),
        );
    });
}

#[cfg(test)]
mod legend_tests {
    use super::*;

    #[test]
    fn decimation_keeps_spikes_and_ends() {
        let mut pts: Vec<[f64; 2]> = (0..8192).map(|i| [f64::from(i), 0.0]).collect();
        pts[5000][1] = 7.0;
        let thin = decimate(pts.clone(), 100);
        assert!(thin.len() <= 202, "{}", thin.len());
        assert_eq!(thin.first(), pts.first());
        assert_eq!(thin.last(), pts.last());
        assert!(thin.contains(&[5000.0, 7.0]));
        assert!(thin.windows(2).all(|w| w[0][0] < w[1][0]));
        assert_eq!(decimate(pts[..150].to_vec(), 100).len(), 150);
    }

    /// The legend goes to the left, where the newest fifth of a curve never is, and to the
    /// half of the left side the curve leaves free.
    #[test]
    fn legends_keep_clear_of_the_newest_part_of_the_curves() {
        let rising: Vec<[f64; 2]> = (0..100).map(|k| [f64::from(k), f64::from(k)]).collect();
        assert_eq!(legend_corner(&[rising]), Corner::LeftTop);
        // A transient spike at the start, settling low: the top-left is crowded.
        let spike: Vec<[f64; 2]> = (0..100)
            .map(|k| [f64::from(k), if k < 30 { 10.0 } else { 1.0 }])
            .collect();
        assert_eq!(legend_corner(&[spike]), Corner::LeftBottom);
        assert_eq!(legend_corner(&[]), Corner::LeftTop);
    }
}

#[cfg(test)]
mod tests {
    use super::spans_steps;

    /// A time series gets axes once it has points at two steps; one point (a run at step 0),
    /// points at one step, or values that are not finite leave it without.
    #[test]
    fn only_curves_over_two_steps_get_axes() {
        assert!(!spans_steps(&[]));
        assert!(!spans_steps(&[
            vec![[0.0, 1.0]],
            vec![[0.0, 2.0], [0.0, 1.0]]
        ]));
        assert!(!spans_steps(&[vec![[0.0, 1.0], [10.0, f64::NAN]]]));
        assert!(spans_steps(&[vec![[0.0, 1.0]], vec![[10.0, 1.0]]]));
        assert!(spans_steps(&[vec![[0.0, 0.0], [10.0, 0.0]]]));
    }
}
