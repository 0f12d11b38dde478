//! The MLP view's Draw mode: points placed by hand on the first map, kept in the preset as
//! a [`DataSource::Drawn`] set. The view only edits the preset; the worker takes the new
//! data as it takes any data change ([`crate::preset::MlpPreset::change_from`]): points of
//! the existing classes change the data live under the running networks, a point of a new
//! class changes the output layer and restarts them (the worker's notice says so), and
//! below [`MIN_DRAWN_POINTS`] points of two classes nothing runs and the view says what it
//! waits for.

use super::CLASS_COLORS;
use crate::app::files::FileRequest;
use crate::app::view::{Shell, Status};
use crate::math::DataSource;
use crate::math::datasets::{
    DrawnPoint, MAX_DRAWN_CLASSES, MAX_DRAWN_POINTS, MIN_DRAWN_POINTS, drawn_canvas, drawn_csv,
    drawn_shortfall,
};
use crate::preset::MlpPreset;
use egui::{Color32, PointerButton, Pos2, Rect, Response, RichText, Sense, Ui, Vec2};

/// Plane units between two points of one drag: a 30th of the canvas, so a stroke across
/// it paints a few dozen points, not one a frame.
pub const STROKE_SPACING: f32 = 0.2;
/// Radius of the eraser around the pointer, in screen points.
const ERASER_RADIUS: f32 = 14.0;
/// Drawn coordinates are rounded to hundredths (a pixel of a 300-point canvas is 0.02), so
/// a saved preset reads `(1.25, -0.4, 0)`.
const QUANTUM: f32 = 0.01;

/// How the canvas is used, as its hover text says it.
pub const HELP: &str = "Draw mode. Click: a point of the chosen class. Right-click: a point of \
                        the next class. Drag: paint points (one every 0.2 units). Shift + click \
                        or drag: remove the points near the pointer.";

/// What the view keeps of Draw mode between frames.
#[derive(Clone, Debug, Default)]
pub struct DrawState {
    /// The class a click draws.
    pub class: u32,
    /// Where the current drag painted its last point.
    stroke: Option<[f32; 2]>,
    /// What the last edit could not do (too many points, a set that cannot be drawn over).
    pub message: Option<String>,
}

/// The drawn points of `preset`, when its data set is drawn.
pub fn drawn_points(preset: &MlpPreset) -> Option<&[DrawnPoint]> {
    match &preset.network.data.source {
        DataSource::Drawn { points, .. } => Some(points),
        _ => None,
    }
}

/// What a drawn set below the minimum waits for, as the view says it.
pub fn waiting(preset: &MlpPreset) -> Option<String> {
    drawn_shortfall(drawn_points(preset)?).map(|lack| {
        format!(
            "Waiting for data: {lack}. The networks run on at least {MIN_DRAWN_POINTS} points of \
             at least two classes."
        )
    })
}

/// The tools above the maps: the class picker (the classes there are and one new class),
/// "Start from these points", "Clear", "Export CSV…", then what the set is or waits for.
pub fn toolbar(ui: &mut Ui, preset: &mut MlpPreset, state: &mut DrawState, shell: &mut Shell) {
    let classes = preset.network.data.source.classes().unwrap_or(2);
    let offered = (classes + 1).min(MAX_DRAWN_CLASSES);
    state.class = state.class.min(offered - 1);
    let mut export = false;
    ui.horizontal_wrapped(|ui| {
        ui.label(RichText::new("✏ Draw").strong())
            .on_hover_text(HELP);
        ui.label("class");
        for k in 0..offered {
            let text = RichText::new(format!("● {k}"))
                .color(CLASS_COLORS[k as usize])
                .strong();
            let hover = if k < classes {
                format!("Draw points of class {k} (label {k} in the CSV)")
            } else {
                format!(
                    "A new class {k}: its first point adds an output to the networks, which \
                     start over"
                )
            };
            if ui
                .selectable_label(state.class == k, text)
                .on_hover_text(hover)
                .clicked()
            {
                state.class = k;
            }
        }
        if drawn_points(preset).is_none()
            && ui
                .button("Start from these points")
                .on_hover_text("Take the current data set over as drawn points, to edit by hand")
                .clicked()
        {
            start_from_current(preset, state);
        }
        if ui
            .button("Clear")
            .on_hover_text("Start an empty drawn set of two classes (test fraction at most 25 %)")
            .clicked()
        {
            let data = &mut preset.network.data;
            data.source = DataSource::Drawn {
                classes: 2,
                points: Vec::new(),
            };
            data.test_fraction = data.test_fraction.min(0.25);
            state.class = 0;
            state.message = None;
        }
        if drawn_points(preset).is_some() {
            export = ui
                .button("Export CSV…")
                .on_hover_text("The drawn points as x,y,label lines (Load CSV… reads them back)")
                .clicked();
        }
    });
    let path = if export {
        shell.pick(FileRequest::ExportDrawnCsv)
    } else {
        shell.answer_for(FileRequest::ExportDrawnCsv)
    };
    if let (Some(path), Some(points)) = (path, drawn_points(preset)) {
        let written = crate::fsutil::write_atomic(&path, drawn_csv(points));
        shell.status = Some(Status::written(&path, written));
    }
    if let Some(wait) = waiting(preset) {
        ui.label(RichText::new(wait).color(crate::app::palette::warning(ui.visuals())));
    } else if let Some(points) = drawn_points(preset) {
        ui.label(
            RichText::new(format!(
                "{} drawn points in {classes} classes; {:.0} % held out as test points (rings)",
                points.len(),
                100.0 * preset.network.data.test_fraction
            ))
            .small(),
        );
    } else {
        ui.label(
            RichText::new(format!(
                "The {} set is generated: the first point drawn takes it over as drawn points",
                preset.network.data.source.name()
            ))
            .small(),
        );
    }
    if let Some(message) = &state.message {
        ui.label(RichText::new(message).color(crate::app::palette::error(ui.visuals())));
    }
}

/// Replaces a generated or CSV data set by the same points drawn, or says why it cannot.
fn start_from_current(preset: &mut MlpPreset, state: &mut DrawState) -> bool {
    let data = &mut preset.network.data;
    match crate::preset::data::build_dataset(data).and_then(|d| DataSource::drawn_from(&d)) {
        Ok(source) => {
            data.source = source;
            state.message = None;
            true
        }
        Err(e) => {
            state.message = Some(e);
            false
        }
    }
}

/// Carries out what the pointer does on the canvas at `rect`, which shows the plane's
/// `bounds` (`[[x_min, x_max], [y_min, y_max]]`): adds, paints or removes points of
/// `preset`'s drawn set (a generated set is first taken over as drawn points).
pub fn canvas_input(
    ui: &Ui,
    response: &Response,
    bounds: [[f64; 2]; 2],
    preset: &mut MlpPreset,
    state: &mut DrawState,
) {
    let rect = response.rect;
    // (Asked before `ui.input` below: a response's own questions lock the context too.)
    let secondary_click = response.secondary_clicked();
    let pressed = response.is_pointer_button_down_on() || response.clicked() || secondary_click;
    let Some(pos) = response
        .interact_pointer_pos()
        .filter(|p| rect.contains(*p))
    else {
        state.stroke = None;
        return;
    };
    if !pressed {
        state.stroke = None;
        return;
    }
    // A click's own events carry its modifiers (a press and a release in one frame may
    // leave none held by the end of the frame).
    let (shift, secondary) = ui.input(|i| {
        let press = i.events.iter().find_map(|e| match e {
            egui::Event::PointerButton {
                pressed: true,
                modifiers,
                button,
                ..
            } => Some((*modifiers, *button)),
            _ => None,
        });
        (
            i.modifiers.shift || press.is_some_and(|(m, _)| m.shift),
            i.pointer.button_down(PointerButton::Secondary)
                || press.is_some_and(|(_, b)| b == PointerButton::Secondary)
                || secondary_click,
        )
    });
    let here = to_plane(pos, rect, bounds);
    if shift {
        let radius = ERASER_RADIUS / rect.width() * (bounds[0][1] - bounds[0][0]) as f32;
        erase(preset, here, radius);
        return;
    }
    if state
        .stroke
        .is_some_and(|last| (here[0] - last[0]).hypot(here[1] - last[1]) < STROKE_SPACING)
    {
        return;
    }
    let classes = preset.network.data.source.classes().unwrap_or(2);
    let label = if secondary {
        (state.class + 1) % classes.max(state.class + 1)
    } else {
        state.class
    };
    if drawn_points(preset).is_none() && !start_from_current(preset, state) {
        return;
    }
    if add(preset, here, label, state) {
        state.stroke = Some(here);
    }
}

/// The plane point under `pos`, rounded to [`QUANTUM`].
fn to_plane(pos: Pos2, rect: Rect, b: [[f64; 2]; 2]) -> [f32; 2] {
    let u = f64::from((pos.x - rect.left()) / rect.width());
    let v = f64::from((pos.y - rect.top()) / rect.height());
    let quantise = |x: f64| ((x / f64::from(QUANTUM)).round() * f64::from(QUANTUM)) as f32;
    [
        quantise(b[0][0] + u * (b[0][1] - b[0][0])),
        quantise(b[1][1] - v * (b[1][1] - b[1][0])),
    ]
}

/// Adds a point of class `label` (a new class widens the set's classes); false, with a
/// message, when the set is full.
fn add(preset: &mut MlpPreset, at: [f32; 2], label: u32, state: &mut DrawState) -> bool {
    let DataSource::Drawn { classes, points } = &mut preset.network.data.source else {
        return false;
    };
    if points.len() >= MAX_DRAWN_POINTS {
        state.message = Some(format!(
            "a drawn data set has at most {MAX_DRAWN_POINTS} points: remove some first"
        ));
        return false;
    }
    *classes = (*classes).max(label + 1).min(MAX_DRAWN_CLASSES);
    points.push((at[0], at[1], label.min(*classes - 1)));
    state.message = None;
    true
}

/// Removes the drawn points within `radius` of `at`.
fn erase(preset: &mut MlpPreset, at: [f32; 2], radius: f32) {
    if let DataSource::Drawn { points, .. } = &mut preset.network.data.source {
        points.retain(|&(x, y, _)| (x - at[0]).hypot(y - at[1]) > radius);
    }
}

/// Names the canvas for screen readers and tests: "drawing canvas".
pub fn name_canvas(response: &Response) {
    response.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Canvas, true, "drawing canvas"));
}

/// The canvas while no map is drawn (the set waits for points, or the networks start):
/// the drawn points on the plain background, the canvas taking input as the map does.
pub fn blank_canvas(ui: &mut Ui, side: f32, preset: &mut MlpPreset, state: &mut DrawState) {
    let points = drawn_points(preset).unwrap_or(&[]);
    let bounds = drawn_canvas(points).map(|a| a.map(f64::from));
    let (rect, response) = ui.allocate_exact_size(Vec2::splat(side), Sense::click_and_drag());
    let response = response.on_hover_text(HELP);
    name_canvas(&response);
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 0.0, super::NEUTRAL);
    let radius = (side / 110.0).clamp(1.5, 3.5);
    for &(x, y, label) in points {
        let u = (f64::from(x) - bounds[0][0]) / (bounds[0][1] - bounds[0][0]);
        let v = (bounds[1][1] - f64::from(y)) / (bounds[1][1] - bounds[1][0]);
        let centre = rect.min + Vec2::new(u as f32 * rect.width(), v as f32 * rect.height());
        painter.circle_filled(centre, radius + 0.8, Color32::BLACK);
        painter.circle_filled(centre, radius, CLASS_COLORS[label as usize]);
    }
    canvas_input(ui, &response, bounds, preset, state);
}
