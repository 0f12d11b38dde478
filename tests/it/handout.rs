//! `atmc-lab handout`: a lecture as one HTML page with a picture of every lesson, and bad
//! lectures refused with their file:line:column before any work.
#![cfg(feature = "gui")]

use crate::common::{atmc_lab, scratch};
use atmc_lab::preset::Lecture;

/// The handout of a lecture folder (a shipped preset by name, a preset file, an inline
/// preset): the page lists every lesson in order, every picture it shows decodes at the size
/// asked for, formulas are raised, and the two challenges are listed as exercises.
#[test]
fn a_handout_lists_every_lesson_and_its_pictures_decode() {
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lectures/small");
    let out = scratch("handout", "small");
    let out_s = out.to_str().unwrap();
    let o = atmc_lab(&[
        "handout",
        folder,
        "--out",
        out_s,
        "--backend",
        "cpu",
        "--max-steps",
        "40",
        "--size",
        "800x500",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    let lecture = Lecture::load(folder).unwrap();
    let mut at = 0;
    for (k, step) in lecture.steps.iter().enumerate() {
        let heading = format!("<h2>{}. {}</h2>", k + 1, step.preset.name());
        let found = page[at..]
            .find(&heading)
            .unwrap_or_else(|| panic!("{heading} missing or out of order"));
        at += found;
        let file = format!("lesson-{:02}.png", k + 1);
        assert!(page.contains(&format!("src=\"{file}\"")), "{file}");
        let image = image::open(out.join(&file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        // At print resolution: two pixels per point by default.
        assert_eq!((image.width(), image.height()), (1600, 1000), "{file}");
    }
    // Exactly as many pictures as lessons, nothing dangling.
    let pngs = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "png")
        })
        .count();
    assert_eq!(pngs, lecture.steps.len());
    assert!(page.contains("e<sup>+βh</sup>"), "formulas are raised");
    assert!(page.contains("x<sub>k+1</sub>"), "formulas are lowered");
    assert!(page.contains("<h2>Exercises</h2>"));
    assert_eq!(page.matches("<div class=\"exercise\">").count(), 2);
    assert!(page.contains("from the sweep atmc-step-and-floor"));
    // Self-contained: nothing fetched from elsewhere.
    assert!(!page.contains("http://") && !page.contains("https://"));
}

/// A bad lecture is refused before any picture is rendered, with its file:line:column.
#[test]
fn a_bad_lecture_is_refused_with_its_place_and_nothing_is_written() {
    let dir = scratch("handout", "bad");
    let lecture = dir.join("bad.ron");
    std::fs::write(
        &lecture,
        "Lecture(\n    name: \"Bad\",\n    steps: [\n        \"lesson-langevin\",\n        \"no-such-preset\",\n    ],\n)\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = atmc_lab(&[
        "handout",
        lecture.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{}:5:9: ", lecture.display())) && err.contains("no-such-preset"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written for a bad lecture");
}

/// Issue #44 item 10: a handout's picture is a figure, the view alone: no menu bar, no
/// status line, no lesson or control panel (the lesson's text is on the page beside it).
#[test]
fn a_handout_picture_is_the_view_alone() {
    use atmc_lab::app::classroom::Appearance;
    use atmc_lab::app::screenshot::{harness_with, run_to_step};
    use atmc_lab::engine::BackendChoice;
    use egui_kittest::kittest::Queryable;
    let lesson = atmc_lab::preset::AnyPreset::load("lesson-explosion").unwrap();
    let mut h = harness_with(
        lesson,
        [1280, 720],
        1.0,
        BackendChoice::Cpu,
        Appearance::default(),
    );
    h.state_mut().as_mut().unwrap().figure = true;
    run_to_step(&mut h, 10).unwrap();
    for chrome in ["Presets", "File", "close the lesson panel"] {
        assert!(h.query_by_label(chrome).is_none(), "{chrome} in the figure");
    }
    assert!(h.query_by_label_contains("Paused at step").is_none());
    // The view is there: its plot choice above the plots.
    h.get_by_label("time series");
}
