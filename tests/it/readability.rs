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
    let mut found = problems_here(h, what, min_px);
    // A view taller than the window scrolls: what lies below the fold is judged where a
    // reader scrolls it to.
    let below_fold = atmc_lab::app::plots::plot_frames(&h.ctx)
        .into_iter()
        .find(|f| f.visible != f.frame);
    if let Some(plot) = below_fold {
        h.event(egui::Event::PointerMoved(plot.visible.center()));
        h.event(egui::Event::MouseWheel {
            unit: egui::MouseWheelUnit::Point,
            delta: egui::vec2(0.0, -4000.0),
            modifiers: egui::Modifiers::NONE,
            phase: egui::TouchPhase::Move,
            source: egui::MouseWheelSource::Unknown,
        });
        h.run_steps(3);
        found.extend(
            problems_here(h, &format!("{what} scrolled down"), min_px)
                .into_iter()
                // What the scroll moved above the top of the view is scrolled, not cut.
                .filter(|p| !p.contains(" cut by its panel ")),
        );
        h.event(egui::Event::MouseWheel {
            unit: egui::MouseWheelUnit::Point,
            delta: egui::vec2(0.0, 4000.0),
            modifiers: egui::Modifiers::NONE,
            phase: egui::TouchPhase::Move,
            source: egui::MouseWheelSource::Unknown,
        });
        // The pointer leaves: no tooltip hangs over the next picture.
        h.event(egui::Event::PointerGone);
        h.run_steps(3);
    }
    found
}

fn problems_here(h: &mut AppHarness, what: &str, min_px: f32) -> Vec<String> {
    keep_picture(h, what);
    let frames = atmc_lab::app::plots::plot_frames(&h.ctx);
    let ppp = h.output().pixels_per_point;
    let texts = painted(h);
    let mut found = plot_problems_of(&texts, &frames, ppp, what);
    found.extend(problems_of(texts, what, min_px));
    found
}

/// The lowest a plot's data frame may be, in physical pixels: a legend of two entries and
/// a curve with visible shape need about this; the MLP lesson once drew 45 px plots whose
/// legends covered them whole.
const MIN_PLOT_PX: f32 = atmc_lab::app::plots::MIN_PLOT_FRAME_PX;

/// The most of a plot's data frame its texts (legend, annotations) may cover.
const MAX_PLOT_TEXT_COVER: f32 = 0.4;

/// What is wrong with the plots of one picture: a data frame lower than [`MIN_PLOT_PX`], a
/// text that starts inside a plot and runs out of it (a legend spilling onto its neighbour
/// or cut by the frame), texts covering more than [`MAX_PLOT_TEXT_COVER`] of a plot.
fn plot_problems_of(
    texts: &[Painted],
    frames: &[atmc_lab::app::plots::PlotFrame],
    ppp: f32,
    what: &str,
) -> Vec<String> {
    let mut found = Vec::new();
    for seen in frames {
        let frame = &seen.frame;
        if frame.height() * ppp < MIN_PLOT_PX - 0.5 {
            found.push(format!(
                "{what}: a plot {:.0} px high (at least {MIN_PLOT_PX}) at {frame:?}",
                frame.height() * ppp
            ));
        }
        // A y-axis title (turned, just left of the frame, beside it) longer than the frame
        // is cut at both ends by the plot ("etic temperature, mean ξ").
        for t in texts.iter().filter(|t| t.turned) {
            let beside = t.bounds.max.x <= frame.min.x + 2.0
                && t.bounds.min.x >= frame.min.x - 80.0
                && (frame.min.y..=frame.max.y).contains(&t.bounds.center().y);
            if beside && t.bounds.height() > frame.height() + 4.0 {
                found.push(format!(
                    "{what}: y-axis title {:?} ({:.0} pt) is longer than its plot ({:.0} pt)",
                    t.text.chars().take(40).collect::<String>(),
                    t.bounds.height(),
                    frame.height()
                ));
            }
        }
        // Its legend is judged where the whole plot is in view (one partly scrolled away
        // is judged once scrolled to).
        if seen.visible != seen.frame {
            continue;
        }
        let mut covered = 0.0;
        for t in texts.iter().filter(|t| !t.turned) {
            for row in &t.rows {
                let inside = row.intersect(*frame);
                // A row that only touches the frame's edge is an axis label beside it.
                if inside.width() <= 2.0 || inside.height() <= 2.0 {
                    continue;
                }
                covered += inside.area();
                // How much of the row lies outside the frame.
                if row.area() - inside.area() > 0.25 * row.area() {
                    found.push(format!(
                        "{what}: text {:?} runs out of its plot {frame:?} at {row:?}",
                        t.text.chars().take(40).collect::<String>()
                    ));
                }
            }
        }
        if covered > MAX_PLOT_TEXT_COVER * frame.area() {
            found.push(format!(
                "{what}: texts cover {:.0} % of a plot at {frame:?}",
                100.0 * covered / frame.area()
            ));
        }
    }
    found
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

/// Every lesson of every shipped lecture, its panel open, in `appearance` at `size`: the
/// problems of each (text smaller than `min_px`, cut, shortened or overlapping; plots too
/// flat or covered by their legends).
fn lesson_problems(
    size: [u32; 2],
    appearance: Appearance,
    min_px: f32,
    dir: &std::path::Path,
) -> Vec<String> {
    SHIPPED_LECTURES
        .iter()
        .flat_map(|&(name, text)| {
            let lecture = Lecture::parse(text, name).expect("shipped lecture parses");
            lecture_problems(name, lecture, size, appearance, min_px, dir)
        })
        .collect()
}

fn lecture_problems(
    name: &str,
    lecture: Lecture,
    size: [u32; 2],
    appearance: Appearance,
    min_px: f32,
    dir: &std::path::Path,
) -> Vec<String> {
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
            &format!("{name} lesson {} {mode} {w}×{hh}", k + 1),
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
    let found = lesson_problems(
        [1024, 600],
        Appearance::default(),
        atmc_lab::app::classroom::DESK_SMALL_TEXT,
        &dir,
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A projector at a small laptop's resolution: presentation mode at 1024×600.
#[test]
fn every_lesson_in_presentation_mode_at_1024x600_is_readable() {
    let dir = common::scratch("readability", "lessons-small-presentation");
    let appearance = Appearance {
        presentation: true,
        light: false,
    };
    // Presentation mode's zoom has its floor at 600 px (a larger zoom leaves a lesson no
    // room): text there is at least its 14 px type, not 16.
    let found = lesson_problems([1024, 600], appearance, 14.0, &dir);
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A large monitor at a desk (1920×1080) and a projector at 1920×1080.
#[test]
fn every_lesson_at_1920x1080_is_readable() {
    let dir = common::scratch("readability", "lessons-large");
    let mut found = lesson_problems(
        [1920, 1080],
        Appearance::default(),
        atmc_lab::app::classroom::DESK_SMALL_TEXT,
        &dir,
    );
    let appearance = Appearance {
        presentation: true,
        light: false,
    };
    found.extend(lesson_problems([1920, 1080], appearance, MIN_TEXT_PX, &dir));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A desk at 1280×720, out of presentation mode.
#[test]
fn every_lesson_at_a_desk_at_1280x720_is_readable() {
    let dir = common::scratch("readability", "lessons-desk");
    // At a desk no text is smaller than its small type (issue #44 item 11: 9 px lecture
    // names, column headers and goals).
    let found = lesson_problems(
        [1280, 720],
        Appearance::default(),
        atmc_lab::app::classroom::DESK_SMALL_TEXT,
        &dir,
    );
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

/// The plot checks name a plot too flat to read, a legend that runs out of its plot, texts
/// covering most of one and a y-axis title longer than its plot; a clean plot passes.
#[test]
fn the_plot_checks_catch_flat_plots_spilling_legends_and_long_titles() {
    use atmc_lab::app::plots::PlotFrame;
    let text = |text: &str, rect: Rect, turned: bool| Painted {
        text: text.into(),
        px: 20.0,
        bounds: rect,
        clip: Rect::EVERYTHING,
        elided: false,
        turned,
        rows: vec![rect],
    };
    let at = |x0: f32, y0: f32, x1: f32, y1: f32| {
        Rect::from_min_max(Pos2::new(x0, y0), Pos2::new(x1, y1))
    };
    let whole = |r: Rect| PlotFrame {
        frame: r,
        visible: r,
    };
    let flat = whole(at(100.0, 100.0, 400.0, 140.0));
    let plot = whole(at(100.0, 300.0, 400.0, 420.0));
    let texts = vec![
        // A legend entry that runs past the plot's right edge.
        text("held out: predicted", at(330.0, 310.0, 470.0, 330.0), false),
        // A block of legend covering most of the plot.
        text("covering", at(110.0, 335.0, 390.0, 415.0), false),
        // A y-axis title longer than the plot beside it.
        text(
            "kinetic temperature, mean ξ",
            at(80.0, 280.0, 96.0, 440.0),
            true,
        ),
    ];
    let found = plot_problems_of(&texts, &[flat, plot], 1.0, "probe").join("\n");
    assert!(found.contains("a plot 40 px high"), "{found}");
    assert!(
        found.contains("\"held out: predicted\" runs out of its plot"),
        "{found}"
    );
    assert!(found.contains("texts cover"), "{found}");
    assert!(
        found.contains("y-axis title \"kinetic temperature, mean ξ\""),
        "{found}"
    );
    let clean = vec![
        text("legend", at(110.0, 305.0, 180.0, 325.0), false),
        text("accuracy", at(80.0, 330.0, 96.0, 390.0), true),
    ];
    let none = plot_problems_of(&clean, &[plot], 1.0, "clean");
    assert!(none.is_empty(), "{none:?}");
}
