//! Plot axes for quantities that span decades: a logarithmic axis for positive values and a
//! symmetric-log (asinh) axis for signed ones, chosen from the data shown, so that a value
//! that jumps to 3e9 does not flatten the rest of its history.

use egui_plot::{GridInput, GridMark, Plot};

/// How a plot's y axis maps values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// Values as they are.
    Linear,
    /// log₁₀ of positive values.
    Log,
    /// asinh(v/unit)/ln 10: linear within ±unit, logarithmic beyond, for either sign.
    SymLog {
        /// Where the axis turns logarithmic.
        unit: f64,
    },
}

/// Decades a quantity must span before its axis turns logarithmic.
const DECADES: f64 = 3.0;

impl Scale {
    /// Log when every finite value is positive and they span more than three decades;
    /// symmetric log when signed values reach three decades beyond their typical size;
    /// linear otherwise.
    pub fn for_values(values: impl Iterator<Item = f64>) -> Scale {
        let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
        if v.len() < 2 {
            return Scale::Linear;
        }
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        if lo > 0.0 {
            return if (hi / lo).log10() > DECADES {
                Scale::Log
            } else {
                Scale::Linear
            };
        }
        let largest = lo.abs().max(hi.abs());
        v.iter_mut().for_each(|x| *x = x.abs());
        v.sort_by(f64::total_cmp);
        // The typical size: the median magnitude, or the smallest non-zero one when most
        // values are zero.
        let smallest = v.iter().copied().find(|&x| x > 0.0).unwrap_or(1.0);
        let median = v[v.len() / 2];
        let typical = if median > 0.0 { median } else { smallest }.max(largest * 1e-30);
        if largest > 0.0 && (largest / typical).log10() > DECADES {
            Scale::SymLog { unit: typical }
        } else {
            Scale::Linear
        }
    }

    /// The plot coordinate of a value (NaN where the scale has none, e.g. v ≤ 0 on a log
    /// axis: such points are left out).
    pub fn to_plot(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log if v > 0.0 => v.log10(),
            Scale::Log => f64::NAN,
            Scale::SymLog { unit } => (v / unit).asinh() / std::f64::consts::LN_10,
        }
    }

    /// The value at a plot coordinate.
    pub fn from_plot(self, y: f64) -> f64 {
        match self {
            Scale::Linear => y,
            Scale::Log => 10f64.powf(y),
            Scale::SymLog { unit } => unit * (y * std::f64::consts::LN_10).sinh(),
        }
    }

    /// Applies the scale's grid and tick labels to the y axis of `plot`.
    pub fn apply<'a>(self, plot: Plot<'a>) -> Plot<'a> {
        match self {
            Scale::Linear => plot,
            Scale::Log => plot
                .y_grid_spacer(decade_marks)
                .y_axis_formatter(move |mark, _| {
                    if mark.step_size >= 1.0 {
                        short(self.from_plot(mark.value))
                    } else {
                        String::new()
                    }
                }),
            Scale::SymLog { unit } => plot
                .y_grid_spacer(move |input| symlog_marks(input, unit))
                .y_axis_formatter(move |mark, _| {
                    if mark.step_size >= 1.0 {
                        // Round away the float error of asinh/sinh: the marks are ±10^k, 0.
                        let v = self.from_plot(mark.value);
                        if v.abs() < unit * 1e-6 {
                            "0".into()
                        } else {
                            let k = v.abs().log10().round();
                            short(v.signum() * 10f64.powf(k))
                        }
                    } else {
                        String::new()
                    }
                }),
        }
    }

    /// A note for the axis title when the scale is not linear.
    pub fn note(self) -> &'static str {
        match self {
            Scale::Linear => "",
            Scale::Log => " (log scale)",
            Scale::SymLog { .. } => " (symmetric log scale)",
        }
    }
}

/// Grid marks at every decade (labelled) and its 2–9 multiples (thin), in plot coordinates
/// of a log axis; on a symmetric-log axis the same integers are decades away from the unit.
fn decade_marks(input: GridInput) -> Vec<GridMark> {
    let (lo, hi) = input.bounds;
    if !(lo.is_finite() && hi.is_finite()) || hi - lo > 400.0 {
        return Vec::new();
    }
    // Label every k-th decade, k such that labels stay ~4 grid spacings apart.
    let every = (4.0 * input.base_step_size).ceil().max(1.0) as i64;
    let mut marks = Vec::new();
    for d in (lo.floor() as i64)..=(hi.ceil() as i64) {
        if d % every == 0 {
            marks.push(GridMark {
                value: d as f64,
                step_size: every as f64,
            });
        }
        if every == 1 {
            for m in 2..10 {
                marks.push(GridMark {
                    value: d as f64 + f64::from(m).log10(),
                    step_size: 0.1,
                });
            }
        }
    }
    // Only marks in view: egui draws the label of a mark even beyond the plot's edge.
    marks.retain(|m| m.value >= lo && m.value <= hi);
    marks
}

/// Grid marks of a symmetric-log axis: 0 and ±10^k for the decades in view (every k-th
/// labelled so that about eight labels fit).
fn symlog_marks(input: GridInput, unit: f64) -> Vec<GridMark> {
    let scale = Scale::SymLog { unit };
    let (lo, hi) = input.bounds;
    if !(lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let largest = scale.from_plot(lo).abs().max(scale.from_plot(hi).abs());
    let top = largest.max(unit).log10().ceil() as i32;
    let bottom = (unit.log10().floor() as i32).min(top);
    // Label every k-th decade, k such that labels stay ~4 grid spacings apart.
    let every = ((4.0 * input.base_step_size).ceil() as i32).max(1);
    let mut marks = vec![GridMark {
        value: 0.0,
        step_size: f64::from(every),
    }];
    for k in bottom..=top {
        for sign in [-1.0, 1.0] {
            let value = scale.to_plot(sign * 10f64.powi(k));
            // Labelled on every k-th decade, unless it sits too close to 0's label (±unit on
            // an axis spanning many decades is a pixel or two from 0).
            let labelled = k % every == 0 && value.abs() >= 4.0 * input.base_step_size;
            let step_size = if labelled { f64::from(every) } else { 0.5 };
            if value >= lo && value <= hi {
                marks.push(GridMark { value, step_size });
            }
        }
    }
    marks
}

/// Round ticks in [lo, hi], about `about` of them: the smallest step of 1, 2, 2.5 or 5 times
/// a power of ten that is at least span/(about + 1), or the next smaller one when that would
/// leave fewer than two ticks.
pub fn round_ticks(lo: f64, hi: f64, about: f64) -> Vec<f64> {
    let span = (hi - lo).abs().max(1e-12);
    let raw = span / (about + 1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let steps: Vec<f64> = [0.5, 1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .collect();
    let first = steps
        .iter()
        .position(|s| *s >= raw)
        .unwrap_or(steps.len() - 1);
    let at = |step: f64| {
        let mut t = (lo / step).ceil() * step;
        let mut out = Vec::new();
        while t <= hi + 1e-9 * span {
            out.push(if t.abs() < 1e-12 * step { 0.0 } else { t });
            t += step;
        }
        out
    };
    let out = at(steps[first]);
    if out.len() < 2 && first > 0 {
        at(steps[first - 1])
    } else {
        out
    }
}

/// The smallest step of 1, 2, 2.5 or 5 times a power of ten that is at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-12))
        .unwrap_or(10.0 * mag)
}

/// Grid marks of a linear x axis (steps, θ): round values at least 70 px apart (egui_plot
/// paints an x label only when its neighbour is 60 px away and fades it in up to 80), none
/// within 16 px of the right edge, where the label would be centred half outside the plot.
/// They depend only on the bounds, so a growing series keeps its labels in place.
pub fn x_marks(input: GridInput) -> Vec<GridMark> {
    let (lo, hi) = input.bounds;
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo || input.base_step_size <= 0.0 {
        return Vec::new();
    }
    // `base_step_size` is the value spanned by egui_plot's smallest grid spacing, 8 px.
    let step = nice_step(70.0 / 8.0 * input.base_step_size);
    let mut marks = Vec::new();
    let mut k = (lo / step).ceil();
    // Half a wide label ("20000") of room at the right edge.
    let edge = hi - 16.0 / 8.0 * input.base_step_size;
    while k * step <= edge {
        let value = k * step;
        marks.push(GridMark {
            value: if value.abs() < 1e-9 * step {
                0.0
            } else {
                value
            },
            step_size: step,
        });
        k += 1.0;
    }
    marks
}

/// Grid marks of an axis drawn in log₁₀ coordinates (a learning rate from 0.18 to 1.8):
/// labels at round values — every decade's 1–9, or 1, 2 and 5, or 1 and 3, or 1, or every
/// k-th decade, the densest set whose neighbours stay `min_gap_px` apart — and thin unlabelled
/// lines at the decade's other multiples while those are 8 px apart. egui_plot paints a label
/// only when its mark's `step_size` spans 60 px (x) or 20 px (y), and fades it below 80 or
/// 30: a labelled mark carries its gap to the next label, at least `min_gap_px`. The labels
/// are values `10^mark` (see [`log_label`]).
pub fn log_marks(input: GridInput, min_gap_px: f64) -> Vec<GridMark> {
    let (lo, hi) = input.bounds;
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo || input.base_step_size <= 0.0 {
        return Vec::new();
    }
    if hi - lo > 400.0 {
        return Vec::new();
    }
    // `base_step_size` spans egui_plot's smallest grid spacing, 8 px.
    let unit_px = 8.0 / input.base_step_size;
    let at = |mantissas: &[f64], every: i64| -> Vec<f64> {
        let mut v = Vec::new();
        for d in (lo.floor() as i64)..=(hi.ceil() as i64) {
            if d.rem_euclid(every) != 0 {
                continue;
            }
            for m in mantissas {
                let x = d as f64 + m.log10();
                if x >= lo - 1e-9 && x <= hi + 1e-9 {
                    v.push(x);
                }
            }
        }
        v
    };
    let min_gap = |v: &[f64]| {
        v.windows(2)
            .map(|w| w[1] - w[0])
            .fold(f64::INFINITY, f64::min)
    };
    let all: [f64; 9] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
    let sets: [&[f64]; 5] = [&all, &[1.0, 2.0, 5.0], &[1.0, 3.0], &[1.0], &[]];
    let mut labelled = Vec::new();
    for set in sets {
        let v = if set.is_empty() {
            // Every k-th decade, k such that labels stay apart.
            let every = (min_gap_px / unit_px).ceil().max(1.0) as i64;
            at(&[1.0], every)
        } else {
            at(set, 1)
        };
        if v.len() >= 2 && min_gap(&v) * unit_px >= min_gap_px {
            labelled = v;
            break;
        }
        if v.len() == 1 && set.len() == 1 {
            // A lone decade in a span narrower than one gap: label it and keep looking no
            // further (a span under a decade with 1, 3 too close has no better round set).
            labelled = v;
            break;
        }
    }
    let label_step = (min_gap_px / unit_px).max(min_gap(&labelled).min(hi - lo));
    let mut marks: Vec<GridMark> = labelled
        .iter()
        .map(|&value| GridMark {
            value,
            step_size: label_step,
        })
        .collect();
    // Thin lines at the other multiples while they are 8 px apart (9 → 10 is the closest).
    if (10f64.log10() - 9f64.log10()) * unit_px >= 8.0 {
        for value in at(&all, 1) {
            if !labelled.iter().any(|l| (l - value).abs() < 1e-9) {
                marks.push(GridMark {
                    value,
                    step_size: input.base_step_size,
                });
            }
        }
    }
    marks
}

/// The tick label of a [`log_marks`] mark: its value 10^mark, rounded to the round value it
/// stands for; empty for the thin unlabelled lines (which egui_plot would not paint anyway).
pub fn log_label(mark: GridMark) -> String {
    let v = 10f64.powf(mark.value);
    let digits = v.log10().floor();
    let magnitude = 10f64.powf(digits);
    short((v / magnitude).round() * magnitude)
}

/// Points between x labels of a log axis: just over egui_plot's 60, below which it drops them.
const X_LABEL_GAP: f64 = 61.0;

/// Applies [`log_marks`] and [`log_label`] to the x axis of `plot`, whose x coordinates are
/// log₁₀ of the values.
pub fn log_x<'a>(plot: Plot<'a>) -> Plot<'a> {
    // egui_plot paints an x label only where labels are more than 60 points apart: a set
    // spaced closer (0.001, 0.003, 0.01 at 57 points) would be chosen and then not drawn.
    plot.x_grid_spacer(|input| log_marks(input, X_LABEL_GAP))
        .x_axis_formatter(|mark, _| log_label(mark))
}

/// Applies [`log_marks`] and [`log_label`] to the y axis of `plot`, whose y coordinates are
/// log₁₀ of the values.
pub fn log_y<'a>(plot: Plot<'a>) -> Plot<'a> {
    plot.y_grid_spacer(|input| log_marks(input, 26.0))
        .y_axis_formatter(|mark, _| log_label(mark))
}

/// The first of `titles` (longest first) that fits along an axis `length` points long at
/// the body size, or the last: a plot's y-axis title is turned along its axis and cut at
/// both ends when longer than the plot is high (short plots in presentation mode).
pub fn fit_title(ui: &egui::Ui, titles: &[&str], length: f32) -> String {
    // The x axis (ticks and its title) takes about three lines of the plot's height.
    let room = length - 3.0 * ui.text_style_height(&egui::TextStyle::Body);
    titles
        .iter()
        .find(|t| {
            egui::WidgetText::from(**t)
                .into_galley(
                    ui,
                    Some(egui::TextWrapMode::Extend),
                    f32::INFINITY,
                    egui::TextStyle::Body,
                )
                .size()
                .x
                <= room
        })
        .or(titles.last())
        .map_or_else(String::new, |t| (*t).to_owned())
}

/// A compact number: 0.01, 5, 300, 1e6, −2e9.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e4).contains(&a) {
        let e = a.log10().round() as i32;
        let m = v / 10f64.powi(e);
        let sign = if v < 0.0 { "−" } else { "" };
        if (m.abs() - 1.0).abs() < 0.05 {
            format!("{sign}1e{e}")
        } else {
            format!("{sign}{:.1}e{e}", m.abs())
        }
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0')
            .trim_end_matches('.')
            .replace('-', "−")
    }
}

/// Decimals that tell every tick of spacing `step` apart: the fewest with which `step` is
/// written exactly (2.5 needs one, 0.25 two, 500 none). egui_plot's own formatter rounds the
/// step's logarithm instead, which labels ticks 2.5 apart "-5, -2, 0, 2" and 0.005 apart
/// "-0.01, -0.01, 0.00".
pub fn tick_decimals(step: f64) -> usize {
    if !(step.is_finite() && step > 0.0) {
        return 0;
    }
    (0..=12)
        .find(|&d| {
            let x = step * 10f64.powi(d as i32);
            (x - x.round()).abs() <= 1e-6 * x.abs().max(1.0)
        })
        .unwrap_or(12)
}

/// A linear axis's tick label: the value with [`tick_decimals`] of its spacing, "0" rather
/// than "-0".
pub fn tick_text(value: f64, step: f64) -> String {
    let d = tick_decimals(step);
    // Very fine or very large spacings read better in powers of ten.
    if d > 5 || value.abs() >= 1e6 {
        return short(value).replace('−', "-");
    }
    let text = format!("{value:.d$}");
    match text.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_owned(),
        _ => text,
    }
}

/// [`tick_text`] as egui_plot's axis formatter (every linear axis of the app's plots).
pub fn tick_label(mark: GridMark, _range: &std::ops::RangeInclusive<f64>) -> String {
    tick_text(mark.value, mark.step_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_tell_every_tick_apart() {
        let labels = |lo: i32, hi: i32, step: f64| -> Vec<String> {
            (lo..=hi)
                .map(|k| tick_text(f64::from(k) * step, step))
                .collect()
        };
        // The 25-mode marginals: ticks 2.5 apart.
        assert_eq!(labels(-2, 1, 2.5), ["-5.0", "-2.5", "0.0", "2.5"]);
        // An empty plot's ticks 0.005 apart.
        assert_eq!(
            labels(-2, 2, 0.005),
            ["-0.010", "-0.005", "0.000", "0.005", "0.010"]
        );
        assert_eq!(labels(0, 2, 0.25), ["0.00", "0.25", "0.50"]);
        assert_eq!(labels(-1, 1, 500.0), ["-500", "0", "500"]);
        assert_eq!(labels(1, 3, 0.1), ["0.1", "0.2", "0.3"]);
        assert_eq!(tick_text(-1e-17, 0.5), "0.0");
        for step in [1e-4, 2e-3, 2.5e-2, 0.5, 1.0, 2.0, 2.5, 5.0, 25.0, 2e4] {
            let ticks: Vec<String> = (-4..=4)
                .map(|k| tick_text(f64::from(k) * step, step))
                .collect();
            let mut distinct = ticks.clone();
            distinct.dedup();
            assert_eq!(distinct, ticks, "step {step}: {ticks:?}");
        }
    }

    #[test]
    fn ticks_are_round_and_inside() {
        assert_eq!(round_ticks(-1.0, 1.0, 5.0), vec![-1.0, -0.5, 0.0, 0.5, 1.0]);
        let t = round_ticks(0.03, 7.9, 5.0);
        assert_eq!(t, vec![2.0, 4.0, 6.0]);
        // The banana's view: more than a lone 0.
        assert_eq!(round_ticks(-4.7, 4.7, 5.0), vec![-4.0, -2.0, 0.0, 2.0, 4.0]);
        // A small portrait gets fewer.
        assert_eq!(round_ticks(-4.7, 4.7, 2.0), vec![-2.5, 0.0, 2.5]);
    }

    #[test]
    fn x_marks_stay_put_and_clear_of_the_right_edge() {
        // A 400 px plot: 8 px of grid spacing span hi/50.
        let marks = |hi: f64| -> Vec<f64> {
            x_marks(GridInput {
                bounds: (0.0, hi),
                base_step_size: 20_000.0 / 50.0,
            })
            .iter()
            .map(|m| m.value)
            .collect()
        };
        assert_eq!(marks(20_000.0), vec![0.0, 5000.0, 10_000.0, 15_000.0]);
        // The series grows by a few steps: the same labels.
        assert_eq!(marks(20_400.0), marks(20_000.0));
        let narrow = x_marks(GridInput {
            bounds: (0.0, 3000.0),
            base_step_size: 3000.0 / 17.0,
        });
        // A 140 px plot: two labels, 70 px or more apart.
        assert_eq!(
            narrow.iter().map(|m| m.value).collect::<Vec<_>>(),
            vec![0.0, 2000.0]
        );
    }

    #[test]
    fn symlog_labels_keep_apart_on_an_axis_of_many_decades() {
        let scale = Scale::SymLog { unit: 1.0 };
        let input = GridInput {
            bounds: (scale.to_plot(-10.0), scale.to_plot(1e21)),
            base_step_size: 0.2,
        };
        let mut labelled: Vec<f64> = symlog_marks(input, 1.0)
            .into_iter()
            .filter(|m| m.step_size >= 1.0)
            .map(|m| m.value)
            .collect();
        labelled.sort_by(f64::total_cmp);
        assert!(labelled.contains(&0.0), "{labelled:?}");
        assert!(labelled.len() >= 3, "{labelled:?}");
        for pair in labelled.windows(2) {
            assert!(pair[1] - pair[0] >= 0.8 - 1e-9, "{labelled:?}");
        }
    }

    #[test]
    fn scales_follow_the_span_of_the_data() {
        assert_eq!(
            Scale::for_values([1.0, 2.0, 3.0].into_iter()),
            Scale::Linear
        );
        assert_eq!(Scale::for_values([1.0, 3e9].into_iter()), Scale::Log);
        match Scale::for_values([0.1, -0.2, 0.3, 0.0, 5e7].into_iter()) {
            Scale::SymLog { unit } => assert!((unit - 0.2).abs() < 1e-12),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            Scale::for_values([-1.0, 2.0, -3.0].into_iter()),
            Scale::Linear
        );
    }

    #[test]
    fn scales_round_trip() {
        for s in [Scale::Linear, Scale::Log, Scale::SymLog { unit: 0.5 }] {
            for v in [0.3, 7.0, 2e8] {
                assert!(
                    (s.from_plot(s.to_plot(v)) - v).abs() < 1e-9 * v.max(1.0),
                    "{s:?} {v}"
                );
            }
        }
        assert!(Scale::Log.to_plot(-1.0).is_nan());
        assert_eq!(Scale::Log.to_plot(1000.0), 3.0);
    }

    /// The labels of a log axis over `bounds` (log₁₀ coordinates) on a plot `px` wide.
    fn log_labels(bounds: (f64, f64), px: f64, min_gap: f64) -> Vec<String> {
        let input = GridInput {
            bounds,
            base_step_size: (bounds.1 - bounds.0) * 8.0 / px,
        };
        let unit_px = 8.0 / input.base_step_size;
        let mut marks = log_marks(input, min_gap);
        marks.sort_by(|a, b| a.value.total_cmp(&b.value));
        marks
            .into_iter()
            // What egui_plot paints on an x axis: a mark whose step spans over 60 points.
            .filter(|m| m.step_size * unit_px > 60.0)
            .map(log_label)
            .collect()
    }

    #[test]
    fn a_log_axis_over_one_decade_has_several_round_labels() {
        // The thermodynamics view's η axis: 0.18 to 1.8 (with a margin) on a 230 px plot.
        let bounds = (0.15f64.log10(), 2.0f64.log10());
        assert_eq!(
            log_labels(bounds, 230.0, X_LABEL_GAP),
            ["0.2", "0.5", "1", "2"]
        );
        assert_eq!(
            log_labels(bounds, 900.0, X_LABEL_GAP),
            ["0.2", "0.5", "1", "2"]
        );
        // A very wide plot labels all of the decade.
        assert_eq!(
            log_labels(bounds, 2000.0, X_LABEL_GAP),
            [
                "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1", "2"
            ]
        );
        // An MLP sweep's η, 0.001 to 0.03, on the narrow plots of the top row: still labelled.
        let mlp = (0.0008f64.log10(), 0.037f64.log10());
        assert_eq!(log_labels(mlp, 200.0, X_LABEL_GAP), ["0.001", "0.01"]);
        assert_eq!(log_labels(mlp, 160.0, X_LABEL_GAP), ["0.001", "0.01"]);
        // Six decades on a narrow plot: decades only, apart.
        let wide = log_labels((-4.2, 1.3), 230.0, X_LABEL_GAP);
        assert_eq!(wide, ["1e-4", "0.01", "1"]);
        // The labels stand for round values despite float error.
        assert_eq!(
            log_label(GridMark {
                value: 0.3f64.log10(),
                step_size: 1.0
            }),
            "0.3"
        );
        assert_eq!(
            log_label(GridMark {
                value: 2e-5f64.log10(),
                step_size: 1.0
            }),
            "2.0e-5"
        );
    }

    #[test]
    fn short_numbers() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(1e6), "1e6");
        assert_eq!(short(-2e9), "−2.0e9");
        assert_eq!(short(250.0), "250");
        assert_eq!(short(0.125), "0.125");
    }
}
