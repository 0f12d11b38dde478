//! Time series of the run and marginal histograms against the exact marginals.

use crate::diagnostics::{SeriesRow, exploration_intervals};
use egui::{Color32, Ui};
use egui_plot::{HLine, Legend, Line, Plot, PlotPoints, PlotUi, Span};

const ACCENT: Color32 = Color32::from_rgb(255, 170, 60);
const TRUTH: Color32 = Color32::from_rgb(120, 200, 255);

/// A plot of the given size that follows its data (no pan or zoom).
pub(crate) fn fixed_plot(id: &str, width: f32, height: f32) -> Plot<'static> {
    Plot::new(id.to_owned())
        .width(width)
        .height(height)
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .allow_boxed_zoom(false)
}

/// [`fixed_plot`] with a legend.
pub(crate) fn small_plot(id: &str, width: f32, height: f32) -> Plot<'static> {
    fixed_plot(id, width, height).legend(Legend::default())
}

fn series(rows: &[SeriesRow], f: impl Fn(&SeriesRow) -> f64) -> PlotPoints<'static> {
    rows.iter()
        .filter(|r| f(r).is_finite())
        .map(|r| [f64::from(r.step), f(r)])
        .collect()
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
pub fn time_series(
    ui: &mut Ui,
    rows: &[SeriesRow],
    temperature: f64,
    chains: u32,
    width: f32,
    height: f32,
) {
    let w = (width - 4.0 * ui.spacing().item_spacing.x) / 4.0;
    let explore = exploration_intervals(rows);
    ui.horizontal(|ui| {
        small_plot("kinetic temperature", w, height)
            .include_y(0.0)
            .show(ui, |p| {
                shade_exploration(p, &explore);
                p.line(
                    Line::new("⟨p K'(p)⟩", series(rows, |r| r.kinetic_temperature)).color(ACCENT),
                );
                p.hline(HLine::new("target T", temperature).color(TRUTH));
            });
        small_plot("mean xi", w, height).show(ui, |p| {
            shade_exploration(p, &explore);
            p.line(Line::new("mean ξ", series(rows, |r| r.mean_xi)).color(ACCENT));
        });
        small_plot("diverged and distance", w, height)
            .include_y(0.0)
            .show(ui, |p| {
                shade_exploration(p, &explore);
                let n = f64::from(chains.max(1));
                p.line(
                    Line::new(
                        "diverged %",
                        series(rows, |r| 100.0 * r.diverged as f64 / n),
                    )
                    .color(Color32::from_rgb(255, 90, 80)),
                );
                p.line(
                    Line::new(
                        "energy distance ×100",
                        series(rows, |r| 100.0 * r.energy_distance),
                    )
                    .color(TRUTH),
                );
            });
        small_plot("step size", w, height)
            .include_y(0.0)
            .show(ui, |p| {
                shade_exploration(p, &explore);
                p.line(
                    Line::new("step size h", series(rows, |r| r.step_size))
                        .color(Color32::from_rgb(190, 140, 255)),
                );
            });
    });
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
    small_plot(id, size.x, size.y).include_y(0.0).show(ui, |p| {
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
    let bars: Vec<egui_plot::Bar> = bins
        .iter()
        .filter(|b| b.count > 0)
        .map(|b| {
            egui_plot::Bar::new(0.5 * (b.lower + b.upper), b.accuracy)
                .width(b.upper - b.lower)
                .name(format!("{} examples", b.count))
        })
        .collect();
    fixed_plot(id, width, height)
        .include_x(0.0)
        .include_x(1.0)
        .include_y(0.0)
        .include_y(1.0)
        .x_axis_label("confidence (test set)")
        .y_axis_label("accuracy")
        .show(ui, |plot| {
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
