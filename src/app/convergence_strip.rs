//! The 2-D view's diagnostics strip: the convergence instruments of
//! [`crate::diagnostics::convergence`] as numbers with their meaning on hover, as time series
//! with their thresholds, or rank plots. The worker computes; this draws.

use super::palette;
use super::plots::{Outlined, SERIES_COLUMNS, decimate, series_plot, show_or_wait};
use crate::diagnostics::SeriesRow;
use crate::diagnostics::convergence::{
    ConvergenceSummary, ESS_FLOOR, KSD_POINTS, MONITOR_CHAINS, MONITOR_WINDOW, RankPlot, mixed,
};
use crate::diagnostics::verdict::{Instrument, Severity};
use egui::{Color32, RichText, Ui};
use egui_plot::{HLine, Line, LineStyle, PlotPoints, Span};

const BULK: Color32 = Color32::from_rgb(255, 170, 60);
const TAIL: Color32 = Color32::from_rgb(190, 140, 255);
const REFERENCE: Color32 = Color32::from_rgb(120, 200, 255);

/// What each instrument means, in one sentence (the hover texts).
pub const MEANINGS: [(&str, &str); 5] = [
    (
        "R-hat bulk",
        "Split, rank-normalised R-hat of the last draws of the first chains (the larger over θ₁ \
         and θ₂). Even stationary chains sit above 1 on a window this short: at √((n − 1)/(n − τ)) \
         for n draws a half-chain and autocorrelation time τ. Above that level by more than \
         noise (the limit shown), the chains still disagree about where the mass is.",
    ),
    (
        "R-hat tail",
        "The same R-hat on the folded draws |θ − median|, judged against its own stationary \
         level the same way: above its limit the chains disagree about how far the mass spreads.",
    ),
    (
        "nested R-hat",
        "Nested R-hat over every chain: whether superchains started far apart have forgotten their \
         starts. It settles at √(1 + 1/M) for M chains a superchain; above that level by more \
         than noise over the K superchains (the limit shown) they have not.",
    ),
    (
        "ESS/s",
        "Bulk effective sample size per second of engine time, measured on the first chains' \
         window and scaled to all chains: how many independent draws the run is worth each \
         second.",
    ),
    (
        "KSD",
        "Kernel Stein discrepancy of 256 chains, which needs only the gradient of log p (no \
         exact samples): compare it with the band, what as many exact draws score.",
    ),
];

fn meaning(name: &str) -> &'static str {
    MEANINGS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("", |(_, m)| m)
}

/// The numbers row: each instrument's latest value, coloured by its grade against its own
/// limit (which it shows: green fine, amber mild, red severe; plain when unjudged or when
/// its pass is overruled by what it cannot see), its meaning on hover; then which
/// instruments to trust when they disagree, and what cannot be trusted and why.
fn numbers(ui: &mut Ui, s: &ConvergenceSummary) {
    let v = ui.visuals().clone();
    let verdicts = &s.verdicts;
    let judged = |grade: Option<Severity>| match grade {
        Some(Severity::Fine) => palette::good(&v),
        Some(Severity::Mild) => palette::warning(&v),
        Some(Severity::Severe) => palette::error(&v),
        None => v.text_color(),
    };
    let grade = |i: Instrument| verdicts.of(i).filter(|_| !verdicts.is_blind(i));
    let c = &s.latest;
    let fmt = |x: f64, digits: usize| {
        if x.is_finite() {
            format!("{x:.digits$}")
        } else {
            "—".into()
        }
    };
    let judged_rhat = |value: f64, level: f64, limit: f64| {
        if value.is_finite() && limit.is_finite() {
            format!(
                "{} (stationary {}, limit {})",
                fmt(value, 3),
                fmt(level, 3),
                fmt(limit, 3)
            )
        } else if value.is_finite() {
            format!("{} (window too short to judge)", fmt(value, 3))
        } else {
            fmt(value, 3)
        }
    };
    ui.horizontal_wrapped(|ui| {
        let item = |ui: &mut Ui, name: &str, value: String, ok: Option<Severity>, extra: &str| {
            ui.label(RichText::new(format!("{name} {value}")).color(judged(ok)))
                .on_hover_text(format!("{}{extra}", meaning(name)));
        };
        item(
            ui,
            "R-hat bulk",
            judged_rhat(c.rhat_bulk, c.rhat_bulk_level, c.rhat_bulk_limit),
            grade(Instrument::RhatBulk),
            "",
        );
        item(
            ui,
            "R-hat tail",
            judged_rhat(c.rhat_tail, c.rhat_tail_level, c.rhat_tail_limit),
            grade(Instrument::RhatTail),
            "",
        );
        match (s.superchains, &s.nested_note) {
            (Some(k), None) => item(
                ui,
                "nested R-hat",
                format!(
                    "{} (stationary {}, limit {})",
                    fmt(c.nested_rhat, 4),
                    fmt(c.nested_rhat_level, 4),
                    fmt(c.nested_rhat_limit, 4)
                ),
                grade(Instrument::NestedRhat),
                &format!(" Here {k} superchains."),
            ),
            (Some(_), Some(note)) => item(ui, "nested R-hat", format!("— ({note})"), None, ""),
            (None, _) => item(
                ui,
                "nested R-hat",
                "— (start the chains in superchains: Initial state → superchains)".into(),
                None,
                "",
            ),
        }
        item(
            ui,
            "ESS/s",
            if c.ess_per_second.is_finite() {
                format!("{:.0}", c.ess_per_second)
            } else {
                "—".into()
            },
            c.ess_bulk
                .is_finite()
                .then_some(if c.ess_bulk >= ESS_FLOOR {
                    Severity::Fine
                } else {
                    Severity::Mild
                }),
            &format!(
                " The window holds {} draws of {} chains; bulk ESS {} and tail ESS {} there \
                 (below {ESS_FLOOR} quantiles are unreliable).",
                s.monitored.1,
                s.monitored.0,
                fmt(c.ess_bulk, 0),
                fmt(c.ess_tail, 0)
            ),
        );
        let (base, sd) = s.ksd_baseline;
        item(
            ui,
            "KSD",
            format!(
                "{} (exact draws {} ± {}){}",
                fmt(c.ksd, 3),
                fmt(base, 3),
                fmt(sd, 3),
                if verdicts.is_blind(Instrument::Ksd) {
                    ", blind to modes never reached"
                } else {
                    ""
                }
            ),
            grade(Instrument::Ksd),
            "",
        );
    });
    if let Some(trust) = &verdicts.trust {
        ui.label(
            RichText::new(format!("⚠ {trust}."))
                .small()
                .color(judged(verdicts.overall)),
        );
    }
    if !s.superchain_rhats.is_empty() {
        let worst = s
            .superchain_rhats
            .iter()
            .map(|r| r.0)
            .filter(|r| r.is_finite())
            .fold(f64::NAN, f64::max);
        let inside = s.superchain_rhats.iter().map(|r| r.1);
        let all_mixed = inside.clone().all(|v| v == Some(true));
        let some_not = inside.clone().any(|v| v == Some(false));
        let nested_mixed = mixed(c.nested_rhat, c.nested_rhat_limit);
        ui.label(
            RichText::new(format!(
                "Within each superchain the worst split R-hat is {}: {}",
                fmt(worst, 3),
                if all_mixed && nested_mixed == Some(false) {
                    "every superchain looks mixed on its own, yet they disagree with each other"
                } else if all_mixed {
                    "each superchain looks mixed"
                } else if some_not {
                    "some superchains have not mixed even inside"
                } else {
                    "too few draws inside a superchain to judge it"
                }
            ))
            .small(),
        )
        .on_hover_text(
            "Split R-hat of each superchain's own monitored chains. Chains that share a start can \
             agree with each other while still sitting where they began: that is what nested R-hat \
             catches and per-chain R-hat cannot.",
        );
    }
    for note in [&s.nested_resolution, &s.starts_note].into_iter().flatten() {
        ui.label(
            RichText::new(format!("⚠ {note}"))
                .small()
                .color(palette::warning(&v)),
        );
    }
}

/// A dashed horizontal reference line (a threshold, a floor, what exact draws score),
/// unnamed: the axis title says what it is, and a legend entry more would cover the small
/// plots' ticks in presentation mode.
fn reference(y: f64) -> HLine {
    HLine::new("", y)
        .color(REFERENCE)
        .style(LineStyle::dashed_loose())
}

/// A time series over the steps, for `curves`.
fn step_plot(
    id: &str,
    width: f32,
    height: f32,
    curves: &[Vec<[f64; 2]>],
) -> egui_plot::Plot<'static> {
    series_plot(id, width, height, curves)
        .x_grid_spacer(super::axes::x_marks)
        .x_axis_label("step")
}

/// Points of one quantity of the rows, finite ones only, thinned for drawing.
fn curve(rows: &[SeriesRow], f: impl Fn(&SeriesRow) -> f64) -> Vec<[f64; 2]> {
    decimate(
        rows.iter()
            .map(|r| [f64::from(r.step), f(r)])
            .filter(|p| p[1].is_finite())
            .collect(),
        SERIES_COLUMNS,
    )
}

/// The strip: the numbers, then either four time series with their thresholds or, while
/// `rank_plots` holds, the rank plots (the preset keeps the choice, so a screenshot can show
/// either).
pub fn strip(
    ui: &mut Ui,
    rows: &[SeriesRow],
    summary: Option<&ConvergenceSummary>,
    rank_plots: &mut bool,
    width: f32,
    height: f32,
) {
    let Some(s) = summary else {
        ui.label(
            RichText::new(format!(
                "Waiting for the first draws: the instruments need {} draws of the first \
                 chains.",
                crate::diagnostics::convergence::MIN_WINDOW
            ))
            .weak(),
        );
        return;
    };
    if rows.last().is_some_and(|r| r.exploring) {
        ui.label(
            RichText::new(format!(
                "Exploration stage: its states are kept out of every instrument; the numbers \
                 below are from step {}, the last sampling-stage evaluation.",
                s.latest.step
            ))
            .weak(),
        );
    }
    numbers(ui, s);
    ui.horizontal(|ui| {
        ui.selectable_value(rank_plots, false, "over time");
        ui.selectable_value(rank_plots, true, "rank plots")
            .on_hover_text(
                "Ranks of each group's draws among all the window's draws: flat bars mean the \
                 groups have mixed; bars piled at one end mean a group sits apart",
            );
    });
    if *rank_plots {
        egui::ScrollArea::vertical()
            .id_salt("rank plots")
            .max_height(height.max(120.0))
            .show(ui, |ui| {
                for (c, plot) in s.rank_plots.iter().enumerate() {
                    rank_row(ui, plot, ["θ₁", "θ₂"][c], width);
                }
            });
        return;
    }
    let spacing = ui.spacing().item_spacing;
    let panels: usize = 4;
    let per_row = if (width - panels as f32 * spacing.x) / panels as f32 > 190.0 {
        panels
    } else {
        2
    };
    let rows_of_plots = panels.div_ceil(per_row);
    let w = (width - per_row as f32 * spacing.x) / per_row as f32;
    let selector = ui.spacing().interact_size.y + spacing.y;
    let h = ((height - selector - 30.0) / rows_of_plots as f32 - spacing.y).max(90.0);
    let waiting = (s.latest.window < crate::diagnostics::convergence::MIN_WINDOW)
        .then_some("waiting for enough draws");
    ui.horizontal_wrapped(|ui| {
        ui.set_max_width(width);
        let bulk = curve(rows, |r| r.rhat_bulk);
        let tail = curve(rows, |r| r.rhat_tail);
        let (bulk_limit, tail_limit) = (s.latest.rhat_bulk_limit, s.latest.rhat_tail_limit);
        show_or_wait(
            step_plot("split rhat", w, h, &[bulk.clone(), tail.clone()])
                .y_axis_label(super::axes::fit_title(
                    ui,
                    &[
                        &format!("split R-hat (last {MONITOR_WINDOW} draws), dashed: limits"),
                        "split R-hat, dashed: limits",
                        "split R-hat",
                    ],
                    h,
                ))
                .include_y(1.0)
                .include_y(if bulk_limit.is_finite() {
                    bulk_limit.max(tail_limit) + 0.005
                } else {
                    1.02
                }),
            ui,
            waiting,
            move |p| {
                for (limit, color) in [(bulk_limit, BULK), (tail_limit, TAIL)] {
                    if limit.is_finite() {
                        p.hline(reference(limit).color(color));
                    }
                }
                p.line(Line::new("bulk", PlotPoints::from(bulk)).color(BULK));
                p.line(Line::new("tail", PlotPoints::from(tail)).color(TAIL));
            },
        );
        let nested = curve(rows, |r| r.nested_rhat);
        let (level, limit) = (s.latest.nested_rhat_level, s.latest.nested_rhat_limit);
        let nested_waiting = match (s.superchains, &s.nested_note) {
            (None, _) => Some("no superchains: set Initial state → superchains"),
            (Some(_), Some(_)) if nested.is_empty() => Some("nested R-hat is undefined here"),
            _ => None,
        };
        show_or_wait(
            step_plot("nested rhat", w, h, std::slice::from_ref(&nested))
                .y_axis_label(super::axes::fit_title(
                    ui,
                    &[
                        "nested R-hat, dashed its limit, dotted its level",
                        "nested R-hat, dashed its limit",
                        "nested R-hat",
                    ],
                    h,
                ))
                .include_y(1.0)
                .include_y(if limit.is_finite() {
                    limit + 0.005
                } else {
                    1.02
                }),
            ui,
            nested_waiting,
            move |p| {
                if limit.is_finite() {
                    p.hline(reference(limit));
                }
                if level.is_finite() {
                    p.hline(
                        HLine::new("", level)
                            .color(Color32::GRAY)
                            .style(LineStyle::dotted_dense()),
                    );
                }
                p.line(Line::new("nested R-hat", PlotPoints::from(nested)).color(BULK));
            },
        );
        let ess_bulk = curve(rows, |r| r.ess_bulk);
        let ess_tail = curve(rows, |r| r.ess_tail);
        show_or_wait(
            step_plot("ess", w, h, &[ess_bulk.clone(), ess_tail.clone()])
                .y_axis_label(super::axes::fit_title(
                    ui,
                    &[
                        &format!("ESS of {MONITOR_CHAINS} chains' window, dashed {ESS_FLOOR}"),
                        &format!("ESS, dashed {ESS_FLOOR}"),
                        "ESS",
                    ],
                    h,
                ))
                .include_y(0.0),
            ui,
            waiting,
            move |p| {
                p.hline(reference(ESS_FLOOR));
                p.line(Line::new("bulk ESS", PlotPoints::from(ess_bulk)).color(BULK));
                p.line(Line::new("tail ESS", PlotPoints::from(ess_tail)).color(TAIL));
            },
        );
        let ksd = curve(rows, |r| r.ksd);
        let (base, sd) = s.ksd_baseline;
        step_plot("ksd", w, h, std::slice::from_ref(&ksd))
            .y_axis_label(super::axes::fit_title(
                ui,
                &[
                    &format!("KSD ({KSD_POINTS} chains), band: exact draws"),
                    "KSD, band: exact draws",
                    "KSD",
                ],
                h,
            ))
            .include_y(0.0)
            .show_outlined(ui, move |p| {
                if base.is_finite() {
                    // The band unnamed (a span writes its name inside the plot); the line
                    // names it in the legend.
                    p.span(
                        Span::new("", (base - 2.0 * sd)..=(base + 2.0 * sd))
                            .axis(egui_plot::Axis::Y)
                            .fill(REFERENCE.gamma_multiply(0.25)),
                    );
                    p.hline(reference(base));
                }
                p.line(Line::new("KSD", PlotPoints::from(ksd)).color(BULK));
            });
    });
}

/// The height of one rank histogram: its label and its bars.
fn rank_cell_height(ui: &Ui) -> f32 {
    let font = super::fonts::painter_font(ui.style(), 11.0);
    46.0 + ui.fonts_mut(|f| f.row_height(&font))
}

/// One coordinate's rank histograms, at most eight to a line: bars of the counts per rank
/// bin, the flat level dashed.
fn rank_row(ui: &mut Ui, plot: &RankPlot, coordinate: &str, width: f32) {
    ui.label(RichText::new(coordinate).strong());
    if plot.counts.is_empty() {
        ui.label(RichText::new("waiting for enough draws").weak());
        return;
    }
    let spacing = ui.spacing().item_spacing.x;
    let per_line = plot.counts.len().min(8);
    let cell_w = ((width - 8.0) / per_line as f32 - spacing).max(40.0);
    let font = super::fonts::painter_font(ui.style(), 11.0);
    let cell_h = rank_cell_height(ui);
    let text_h = cell_h - 46.0;
    let stroke_color = ui.visuals().text_color();
    for line in (0..plot.counts.len()).collect::<Vec<_>>().chunks(per_line) {
        ui.horizontal(|ui| {
            for &g in line {
                let (rect, response) =
                    ui.allocate_exact_size(egui::vec2(cell_w, cell_h), egui::Sense::hover());
                let painter = ui.painter_at(rect);
                let counts = &plot.counts[g];
                let expected = plot.expected[g];
                let top = counts.iter().copied().max().unwrap_or(1).max(1) as f32;
                let scale = top.max(2.0 * expected as f32);
                let bars = egui::Rect::from_min_max(
                    rect.min + egui::vec2(2.0, text_h + 2.0),
                    rect.max - egui::vec2(2.0, 2.0),
                );
                let bw = bars.width() / counts.len() as f32;
                for (b, &n) in counts.iter().enumerate() {
                    let hgt = bars.height() * n as f32 / scale;
                    let x = bars.left() + b as f32 * bw;
                    painter.rect_filled(
                        egui::Rect::from_min_max(
                            egui::pos2(x + 0.5, bars.bottom() - hgt),
                            egui::pos2(x + bw - 0.5, bars.bottom()),
                        ),
                        0.0,
                        BULK.gamma_multiply(0.8),
                    );
                }
                let y = bars.bottom() - bars.height() * expected as f32 / scale;
                painter.add(egui::Shape::dashed_line(
                    &[egui::pos2(bars.left(), y), egui::pos2(bars.right(), y)],
                    egui::Stroke::new(1.0, stroke_color),
                    4.0,
                    3.0,
                ));
                painter.text(
                    rect.left_top(),
                    egui::Align2::LEFT_TOP,
                    &plot.labels[g],
                    font.clone(),
                    stroke_color,
                );
                response.on_hover_text(format!(
                    "{}: ranks of its draws of {coordinate} among all monitored draws, in {} \
                     bins; the dashed line is what a group that mixed with the others holds \
                     per bin",
                    plot.labels[g],
                    counts.len()
                ));
            }
        });
    }
}
