//! Readable from the back row: in presentation mode at 1280×720 (a projector) every text the
//! app paints is at least 16 physical pixels high (plot tick labels at least 14) and none is
//! cut by the panel that holds it or shortened to "…"; amber and red notices keep a WCAG AA
//! contrast in both themes. The texts are read from what the last frame painted, so a label
//! drawn with the painter (portrait titles, plot ticks) is checked as well as a widget.
#![cfg(feature = "gui")]

use crate::common;
use crate::common::harness::{AppHarness, opening};
use atmc_lab::app::classroom::Appearance;
use atmc_lab::app::screenshot::{harness_with_in, run_to_step};
use atmc_lab::app::{Folders, Tab};
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::story::{Lecture, SHIPPED_LECTURES};
use egui::epaint::Shape;
use egui::{Pos2, Rect};

/// The smallest text in physical pixels, and the smallest plot tick label.
const MIN_TEXT_PX: f32 = 16.0;

/// A text the last frame painted, where it is and what holds it.
#[derive(Debug)]
struct Painted {
    text: String,
    /// Font size in physical pixels.
    px: f32,
    /// The glyphs' bounds, in points.
    bounds: Rect,
    /// The clip rectangle of its layer or panel, in points.
    clip: Rect,
    /// Shortened with "…" to fit.
    elided: bool,
    /// Turned (a plot's y-axis title): cut at its ends if longer than its plot is high.
    turned: bool,
    /// Each row's inked bounds, in points: a wrapped text's rows, not its whole box, are
    /// what may cover another (a bullet sits inside the box of the paragraph that wraps
    /// under it), and their glyphs, not their line height (a plot's lowest y label reaches
    /// into the line of its x labels without touching one).
    rows: Vec<Rect>,
}

/// The screen bounds of `rect` (relative to a text's origin) once the text is turned by
/// `angle` about its origin `pos`, as egui paints it (a plot's y-axis title is turned by
/// −90°).
fn rotated(rect: Rect, angle: f32, pos: Pos2) -> Rect {
    let rot = egui::emath::Rot2::from_angle(angle);
    Rect::from_points(
        &[
            rect.left_top(),
            rect.right_top(),
            rect.left_bottom(),
            rect.right_bottom(),
        ]
        .map(|c| pos + rot * c.to_vec2()),
    )
}

fn collect(shape: &Shape, clip: Rect, ppp: f32, out: &mut Vec<Painted>) {
    match shape {
        Shape::Vec(shapes) => shapes.iter().for_each(|s| collect(s, clip, ppp, out)),
        Shape::Text(t) if t.opacity_factor > 0.0 => {
            let g = &t.galley;
            // The smallest visible section sets the galley's size.
            let px = g
                .job
                .sections
                .iter()
                .filter(|section| {
                    let range = section.byte_range.start.0..section.byte_range.end.0;
                    !g.job.text[range].trim().is_empty() && section.format.color.a() > 0
                })
                .map(|section| section.format.font_id.size * ppp)
                .reduce(f32::min);
            if let Some(px) = px {
                out.push(Painted {
                    text: g.job.text.clone(),
                    px,
                    bounds: rotated(g.mesh_bounds, t.angle, t.pos),
                    clip,
                    elided: g.elided,
                    turned: t.angle != 0.0,
                    rows: g
                        .rows
                        .iter()
                        .filter(|r| !r.glyphs.is_empty())
                        .map(|r| {
                            rotated(
                                r.visuals.mesh_bounds.translate(r.pos.to_vec2()),
                                t.angle,
                                t.pos,
                            )
                        })
                        .collect(),
                });
            }
        }
        _ => {}
    }
}

/// Every visible text of the last frame (texts wholly outside their clip rectangle, such as
/// rows scrolled out of view, are not on screen and are left out).
fn painted(h: &AppHarness) -> Vec<Painted> {
    painted_in(h.output())
}

fn painted_in(output: &egui::FullOutput) -> Vec<Painted> {
    let mut out = Vec::new();
    for clipped in &output.shapes {
        collect(
            &clipped.shape,
            clipped.clip_rect,
            output.pixels_per_point,
            &mut out,
        );
    }
    out.retain(|p| p.bounds.intersects(p.clip));
    out
}

/// Saves the picture when `READABILITY_PNG` names a folder: what the test judged, to look at.
fn keep_picture(h: &mut AppHarness, what: &str) {
    if let Some(dir) = std::env::var_os("READABILITY_PNG") {
        let image = h.render().expect("offscreen rendering");
        let name = what.replace([' ', '×'], "-");
        image
            .save(std::path::Path::new(&dir).join(format!("{name}.png")))
            .expect("PNG written");
    }
}

/// What is wrong with the texts of one picture, each with where it was seen: text below
/// `min_px` physical pixels, cut by its panel or shortened, or painted over another text.
fn problems(h: &mut AppHarness, what: &str, min_px: f32) -> Vec<String> {
    // Two more frames, as a window paints them 16 ms later: egui_plot sizes its axes from
    // the frame before, so a plot's first frame is not what anyone sees.
    h.run_steps(2);
    keep_picture(h, what);
    problems_of(painted(h), what, min_px)
}

fn problems_of(texts: Vec<Painted>, what: &str, min_px: f32) -> Vec<String> {
    let mut found = Vec::new();
    for (i, a) in texts.iter().enumerate() {
        for b in &texts[i + 1..] {
            // Both visible where they cross, and crossing by more than a glyph's antialiased
            // edge: one covers the other.
            let covers = a.rows.iter().any(|ra| {
                b.rows.iter().any(|rb| {
                    let overlap = ra.intersect(*rb).intersect(a.clip).intersect(b.clip);
                    overlap.width() > 2.0 && overlap.height() > 2.0
                })
            });
            if covers {
                found.push(format!(
                    "{what}: text {:?} overlaps {:?}",
                    a.text.chars().take(40).collect::<String>(),
                    b.text.chars().take(40).collect::<String>()
                ));
            }
        }
    }
    for p in texts {
        let short = p.text.chars().take(48).collect::<String>();
        if p.px < min_px - 0.01 {
            found.push(format!("{what}: {:.1} px text {short:?}", p.px));
        }
        // Cut at a side by its panel (a row cut at the bottom of a scrolling list is only
        // scrolled; one cut sideways cannot be read by scrolling).
        let cut = p.bounds.min.x < p.clip.min.x - 1.0
            || p.bounds.max.x > p.clip.max.x + 1.0
            // A turned title longer than its plot runs out at both ends; its lower end may
            // also be below the fold of a scrolling view, so the top end tells.
            || (p.turned && p.bounds.min.y < p.clip.min.y - 1.0);
        if cut {
            found.push(format!(
                "{what}: text {short:?} at {:?} cut by its panel {:?}",
                p.bounds, p.clip
            ));
        }
        if p.elided {
            found.push(format!("{what}: text shortened to {short:?}"));
        }
    }
    found
}

fn presentation(tab: Tab, light: bool, dir: &std::path::Path) -> AppHarness {
    let mut h = harness_with_in(
        opening(tab),
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
        Appearance {
            presentation: true,
            light,
        },
        Folders::under(dir),
    );
    if matches!(tab, Tab::Training | Tab::Sweep) {
        h.run_steps(4);
    } else {
        run_to_step(&mut h, 20).expect("the view settles");
    }
    h
}

#[test]
fn every_view_in_presentation_mode_has_large_uncut_text() {
    let dir = common::scratch("readability", "views");
    let mut found = Vec::new();
    for tab in Tab::ALL {
        let mut h = presentation(tab, false, &dir);
        found.extend(problems(&mut h, &format!("{tab:?}"), MIN_TEXT_PX));
        // A lecturer may open the control panel in front of the class.
        h.state_mut().as_mut().expect("app started").show_controls = true;
        h.run_steps(3);
        found.extend(problems(
            &mut h,
            &format!("{tab:?} with controls"),
            MIN_TEXT_PX,
        ));
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Draw mode (its tools above the maps) and a drawn set waiting for points, in presentation
/// mode, with and without the control panel.
#[test]
fn draw_mode_in_presentation_mode_has_large_uncut_text() {
    use atmc_lab::app::Opening;
    use atmc_lab::math::DataSource;
    use atmc_lab::preset::AnyPreset;
    let dir = common::scratch("readability", "draw");
    let Ok(AnyPreset::Mlp(xor)) = AnyPreset::load("drawn-xor") else {
        unreachable!("drawn-xor is an MLP preset")
    };
    let mut waiting = xor.clone();
    if let DataSource::Drawn { points, .. } = &mut waiting.network.data.source {
        points.truncate(5);
    }
    let mut found = Vec::new();
    for (what, preset) in [("draw mode", xor), ("draw mode waiting", waiting)] {
        let mut h = harness_with_in(
            Opening::from(AnyPreset::Mlp(preset)),
            [1280, 720],
            1.0,
            BackendChoice::Cpu,
            Appearance {
                presentation: true,
                light: false,
            },
            Folders::under(&dir),
        );
        run_to_step(&mut h, 20).expect("the view settles");
        found.extend(problems(&mut h, what, MIN_TEXT_PX));
        h.state_mut().as_mut().expect("app started").show_controls = true;
        h.run_steps(3);
        found.extend(problems(
            &mut h,
            &format!("{what} with controls"),
            MIN_TEXT_PX,
        ));
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Every lesson of the shipped lecture, its panel open, in `appearance` at `size`: the
/// problems of each (text smaller than `min_px`, cut, shortened or overlapping).
fn lesson_problems(
    size: [u32; 2],
    appearance: Appearance,
    min_px: f32,
    dir: &std::path::Path,
) -> Vec<String> {
    let (name, text) = SHIPPED_LECTURES[0];
    let lecture = Lecture::parse(text, name).expect("shipped lecture parses");
    let lessons = lecture.steps.len();
    let mut h = harness_with_in(
        opening(Tab::Posterior),
        size,
        1.0,
        BackendChoice::Cpu,
        appearance,
        Folders::under(dir),
    );
    run_to_step(&mut h, 0).expect("the view settles");
    let ctx = h.ctx.clone();
    h.state_mut()
        .as_mut()
        .expect("app started")
        .start_lecture(&ctx, lecture);
    let mut found = Vec::new();
    for k in 0..lessons {
        let ctx = h.ctx.clone();
        h.state_mut()
            .as_mut()
            .expect("app started")
            .go_to_lesson(&ctx, k);
        run_to_step(&mut h, 20).expect("the lesson settles");
        let [w, hh] = size;
        let mode = if appearance.presentation {
            "presentation"
        } else {
            "desk"
        };
        found.extend(problems(
            &mut h,
            &format!("lesson {} {mode} {w}×{hh}", k + 1),
            min_px,
        ));
    }
    found
}

#[test]
fn every_lesson_in_presentation_mode_has_large_uncut_text() {
    let dir = common::scratch("readability", "lessons");
    let appearance = Appearance {
        presentation: true,
        light: false,
    };
    let found = lesson_problems([1280, 720], appearance, MIN_TEXT_PX, &dir);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A small laptop (1024×600) with the lesson panel open: the smallest room a lesson gets.
/// No size floor at a desk, but nothing cut, shortened or painted over another text.
#[test]
fn every_lesson_at_1024x600_has_no_cut_or_overlapping_text() {
    let dir = common::scratch("readability", "lessons-small");
    let found = lesson_problems([1024, 600], Appearance::default(), 0.0, &dir);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn painted_text_is_found_with_its_size_and_clip() {
    // The walk itself: a frame with a known label reports it at its size × zoom.
    let dir = common::scratch("readability", "walk");
    let h = presentation(Tab::Posterior, false, &dir);
    let texts = painted(&h);
    let zoom = h.ctx.zoom_factor();
    assert!(zoom > 1.1, "presentation mode zooms at 1280×720 ({zoom})");
    let menu = texts
        .iter()
        .find(|p| p.text == "File")
        .expect("the File menu is painted");
    let button = h.ctx.global_style().text_styles[&egui::TextStyle::Button].size;
    assert!((menu.px - button * zoom).abs() < 0.01, "{menu:?}");
    assert!(
        menu.clip
            .contains(Pos2::new(menu.bounds.center().x, menu.bounds.center().y))
    );
}

#[test]
fn the_checks_catch_small_cut_and_overlapping_text() {
    // A frame with one of each fault: the checks must name all three (and a clean frame none).
    let mut h = egui_kittest::Harness::new_ui(|ui| {
        ui.label(egui::RichText::new("tiny words").size(9.0));
        let painter = ui.painter();
        let font = egui::FontId::proportional(20.0);
        let colour = egui::Color32::WHITE;
        painter.text(
            Pos2::new(100.0, 100.0),
            egui::Align2::LEFT_TOP,
            "first",
            font.clone(),
            colour,
        );
        painter.text(
            Pos2::new(110.0, 104.0),
            egui::Align2::LEFT_TOP,
            "second",
            font.clone(),
            colour,
        );
        let narrow = Rect::from_min_size(Pos2::new(100.0, 200.0), egui::vec2(40.0, 40.0));
        ui.painter_at(narrow).text(
            Pos2::new(100.0, 200.0),
            egui::Align2::LEFT_TOP,
            "a long title cut by its frame",
            font,
            colour,
        );
    });
    h.run();
    let found = problems_of(painted_in(h.output()), "probe", MIN_TEXT_PX).join("\n");
    assert!(found.contains("px text \"tiny words\""), "{found}");
    assert!(found.contains("\"first\" overlaps \"second\""), "{found}");
    assert!(
        found.contains("\"a long title cut by its frame\" at"),
        "{found}"
    );
    let mut clean = egui_kittest::Harness::new_ui(|ui| {
        ui.label(egui::RichText::new("large words").size(20.0));
        ui.label(egui::RichText::new("more large words").size(20.0));
    });
    clean.run();
    let none = problems_of(painted_in(clean.output()), "clean", MIN_TEXT_PX);
    assert!(none.is_empty(), "{none:?}");
}
