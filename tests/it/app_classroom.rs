//! The classroom driven as a lecturer would: the keyboard, lectures, the side-by-side view,
//! presets through the clipboard, recordings.
#![cfg(feature = "gui")]

use crate::common::harness::{AppHarness, app, wait};
use atmc_lab::app::compare::CompareView;
use atmc_lab::app::posterior::PosteriorView;
use atmc_lab::app::screenshot::{harness, harness_as_window, run_to_step};
use atmc_lab::app::view::View;
use atmc_lab::app::{AtmcApp, Tab};
use atmc_lab::engine::BackendChoice;
use atmc_lab::preset::{AnyPreset, Preset};
use egui::Key;
use egui_kittest::kittest::Queryable;

fn posterior(h: &AppHarness) -> &PosteriorView {
    app(h).get::<PosteriorView>().expect("the 2-D view")
}

fn small(p: &mut Preset) {
    p.chains = 2000;
}

#[test]
fn keys_drive_the_view() {
    let mut p = Preset::default_preset();
    small(&mut p);
    let mut h = harness(p, [1280, 720], 1.0, BackendChoice::Cpu);
    run_to_step(&mut h, 10).unwrap();
    let playing = |a: &AtmcApp| {
        a.get::<PosteriorView>()
            .unwrap()
            .session()
            .with_snapshot(|s| s.playing)
    };
    // Space plays and pauses.
    h.key_press(Key::Space);
    wait(&mut h, 30, "play", playing);
    h.key_press(Key::Space);
    wait(&mut h, 30, "pause", |a| !playing(a));
    // → advances exactly one tick of steps_per_frame steps.
    let before = posterior(&h).session().with_snapshot(|s| s.step);
    let per_tick = posterior(&h).preset.view.steps_per_frame;
    h.key_press(Key::ArrowRight);
    wait(&mut h, 30, "one step", |a| {
        a.get::<PosteriorView>()
            .unwrap()
            .session()
            .with_snapshot(|s| s.step == before + per_tick)
    });
    // F flips the friction sign, live.
    h.key_press(Key::F);
    h.run_steps(2);
    assert_eq!(posterior(&h).preset.sampler.friction_sign, -1.0);
    wait(&mut h, 30, "the flipped sign in the engine", |a| {
        a.get::<PosteriorView>()
            .unwrap()
            .session()
            .with_snapshot(|s| s.sampler.is_some_and(|sp| sp.friction_sign == -1.0))
    });
    h.key_press(Key::F);
    h.run_steps(2);
    assert_eq!(posterior(&h).preset.sampler.friction_sign, 1.0);
    // + and − change the speed, down to slow motion.
    let speed = posterior(&h).preset.view.speed();
    h.key_press(Key::Plus);
    h.run_steps(2);
    assert_eq!(posterior(&h).preset.view.speed(), 2.0 * speed);
    for _ in 0..12 {
        h.key_press(Key::Minus);
    }
    h.run_steps(2);
    assert_eq!(
        posterior(&h).preset.view.speed(),
        1.0,
        "down to one step per second"
    );
    assert!(posterior(&h).preset.view.steps_per_second > 0.0);
    // R resets the chains to step 0.
    h.key_press(Key::R);
    wait(&mut h, 30, "the reset", |a| {
        a.get::<PosteriorView>()
            .unwrap()
            .session()
            .with_snapshot(|s| s.step == 0)
    });
    // ? shows the keys.
    h.key_press_modifiers(egui::Modifiers::SHIFT, Key::Questionmark);
    h.run_steps(3);
    h.get_by_label("play / pause");
    h.key_press(Key::Escape);
    h.run_steps(3);
    assert!(h.query_by_label("play / pause").is_none());
}

#[test]
fn a_lecture_steps_through_its_lessons_with_the_number_keys() {
    let mut p = Preset::default_preset();
    small(&mut p);
    let mut h = harness(p, [1280, 720], 1.0, BackendChoice::Cpu);
    h.get_by_label("Lectures").click();
    h.run_steps(3);
    h.get_by_label_contains("Adaptive thermostats").click();
    h.run_steps(3);
    assert_eq!(app(&h).tab, Tab::Posterior);
    // The lesson waits at step 0 for the lecturer, and says so over the pictures.
    h.run_steps(10);
    let at_start = |a: &AtmcApp| {
        a.get::<PosteriorView>()
            .unwrap()
            .session()
            .with_snapshot(|s| (s.playing, s.step))
    };
    assert_eq!(at_start(app(&h)), (false, 0));
    h.get_by_label_contains("press Space to start");
    // Space starts it; the badge goes.
    h.key_press(Key::Space);
    wait(&mut h, 30, "lesson 1 to run", |a| {
        a.get::<PosteriorView>()
            .unwrap()
            .session()
            .with_snapshot(|s| s.playing && s.step > 0)
    });
    h.run_steps(2);
    assert!(h.query_by_label_contains("Paused at step").is_none());
    h.get_by_label_contains("Lesson 1: Langevin");
    h.get_by_label("lesson 1 of 10");
    // 2 opens the second lesson: a comparison, side by side, also waiting at step 0.
    h.key_press(Key::Num2);
    h.run_steps(3);
    assert_eq!(app(&h).tab, Tab::Compare);
    assert_eq!(app(&h).get::<CompareView>().unwrap().step(), 0);
    h.get_by_label_contains("press Space to start");
    h.get_by_label("lesson 2 of 10");
    h.get_by_label_contains("Lesson 2: why momentum");
    // "next ▶" goes on to the third.
    h.get_by_label("next ▶").click();
    h.run_steps(3);
    h.get_by_label("lesson 3 of 10");
    let c = app(&h).get::<CompareView>().unwrap();
    assert_eq!(c.comparison.columns.len(), 2);
    assert!(c.comparison.name.starts_with("Lesson 3"));
}

#[test]
fn side_by_side_runs_in_lockstep() {
    let AnyPreset::Comparison(mut c) = AnyPreset::load("lesson-thermostat").unwrap() else {
        panic!("a comparison")
    };
    c.base.chains = 2000;
    c.base.view.steps_per_frame = 7;
    let mut h = harness(c, [1280, 720], 1.0, BackendChoice::Cpu);
    assert_eq!(app(&h).tab, Tab::Compare);
    h.get_by_label("▶ Play").click();
    let steps = |a: &AtmcApp| -> Vec<u32> {
        a.get::<CompareView>()
            .unwrap()
            .sessions()
            .map(|s| s.with_snapshot(|s| s.step))
            .collect()
    };
    wait(&mut h, 60, "100 steps in every column", |a| {
        steps(a).iter().all(|&s| s >= 100)
    });
    h.key_press(Key::Space);
    h.run_steps(2);
    // Paused: after the last targets are reached every column is at the same step.
    wait(&mut h, 30, "the columns to agree", |a| {
        let s = steps(a);
        s.iter().all(|&x| x == s[0])
    });
    let s = steps(app(&h));
    assert_eq!(
        s[0] % 7,
        0,
        "lockstep targets are multiples of the tick: {s:?}"
    );
    // Both columns are on screen with their state.
    assert!(h.get_all_by_label("SGHMC (C = 1, B̂ = 0)").next().is_some());
    assert!(h.get_all_by_label("ATMC (thermostat)").next().is_some());
    assert_eq!(app(&h).active().panels().len(), 4);
}

#[test]
fn presets_travel_through_the_clipboard() {
    let mut p = Preset::default_preset();
    small(&mut p);
    let mut h = harness(p, [1280, 720], 1.0, BackendChoice::Cpu);
    // Copy: the preset goes out as RON text.
    h.get_by_label("Edit").click();
    h.run_steps(2);
    h.get_by_label("Copy preset as text").click();
    h.step();
    let copied = h
        .output()
        .platform_output
        .commands
        .iter()
        .find_map(|c| match c {
            egui::OutputCommand::CopyText(t) => Some(t.clone()),
            _ => None,
        })
        .expect("a copy command");
    assert_eq!(
        AnyPreset::parse(&copied, "clipboard").unwrap(),
        AnyPreset::Toy(posterior(&h).preset.clone())
    );
    // Paste: Ctrl+V with another preset's text applies it.
    let printed = Preset::load("printed").unwrap();
    h.event(egui::Event::Paste(printed.to_ron()));
    h.run_steps(2);
    assert_eq!(posterior(&h).preset, printed);
    // Text that is no preset says why and changes nothing.
    h.event(egui::Event::Paste("not a preset".into()));
    h.run_steps(2);
    assert_eq!(posterior(&h).preset, printed);
    h.get_by_label_contains("pasted text:1:");
}

/// A lesson's challenge in the panel: Check runs the lesson as set now and shows the verdict;
/// a failed attempt shows the hint, and after the friction sign is flipped (F) Check passes.
#[test]
fn a_challenge_is_checked_with_its_verdict_and_hint() {
    let AnyPreset::Comparison(mut c) = AnyPreset::load("lesson-thermostat").unwrap() else {
        panic!("a comparison")
    };
    // Fewer chains keep the attempts short; the verdicts are the same.
    c.base.chains = 1000;
    let mut h = harness(c, [1280, 800], 1.0, BackendChoice::Cpu);
    h.run_steps(3);
    h.get_by_label("Challenge");
    h.get_by_label_contains("at least 90% of the chains diverge within 400 steps");
    assert!(h.query_by_label("Hint").is_none());
    h.get_by_label("Check").click();
    h.run_steps(2);
    wait(&mut h, 300, "the first verdict", |a| !a.checking());
    h.run_steps(2);
    h.get_by_label_contains("✖ 0% of the chains diverged within 400 steps");
    h.get_by_label("Hint");
    h.get_by_label_contains("Which sign of φ");
    // The printed sign: the chains explode, and the verdict says so.
    h.key_press(Key::F);
    h.run_steps(2);
    h.get_by_label("Check").click();
    h.run_steps(2);
    wait(&mut h, 300, "the second verdict", |a| !a.checking());
    h.run_steps(2);
    h.get_by_label_contains("✔");
    assert!(h.query_by_label("Hint").is_none());
}

/// Page Down and N go to the next lesson, Page Up and P back: lessons past nine are
/// reachable from the keyboard.
#[test]
fn page_keys_reach_every_lesson() {
    let mut p = Preset::default_preset();
    small(&mut p);
    let mut h = harness(p, [1280, 720], 1.0, BackendChoice::Cpu);
    let lecture = atmc_lab::preset::Lecture::load("atmc").unwrap();
    let n = lecture.steps.len();
    let ctx = h.ctx.clone();
    h.state_mut().as_mut().unwrap().start_lecture(&ctx, lecture);
    h.run_steps(2);
    for k in 1..n {
        h.key_press(if k % 2 == 0 { Key::PageDown } else { Key::N });
        h.run_steps(2);
        h.get_by_label(&format!("lesson {} of {n}", k + 1));
    }
    // Past the end nothing happens; back with P and Page Up.
    h.key_press(Key::PageDown);
    h.run_steps(2);
    h.get_by_label(&format!("lesson {n} of {n}"));
    h.key_press(Key::P);
    h.run_steps(2);
    h.key_press(Key::PageUp);
    h.run_steps(2);
    h.get_by_label(&format!("lesson {} of {n}", n - 2));
    // A bad lecture file is refused with its place, and the lecture shown stays.
    let bad = crate::common::scratch("app_classroom", "bad-lecture").join("bad.ron");
    std::fs::write(&bad, "Lecture(\n    name: \"Bad\",\n    steps: [],\n)\n").unwrap();
    let before = app(&h).classroom.lecture.clone();
    h.state_mut().as_mut().unwrap().open_lecture(&ctx, &bad);
    h.run_steps(2);
    assert_eq!(app(&h).classroom.lecture, before);
    let status = app(&h).status_message().unwrap();
    assert!(
        status.error && status.text.contains(&format!("{}:3:5: ", bad.display())),
        "{}",
        status.text
    );
    h.get_by_label(&format!("lesson {} of {n}", n - 2));
}

/// "A lesson opens paused at step 0" however it is opened: by a key or Page Down from a
/// lesson playing in the same view, by a number key from another view, and from the Presets
/// menu over a running preset. Opening a preset that is no lesson of the lecture leaves it.
#[test]
fn a_lesson_opens_paused_however_it_is_opened() {
    let mut p = Preset::default_preset();
    small(&mut p);
    let mut h = harness(p, [1280, 720], 1.0, BackendChoice::Cpu);
    let ctx = h.ctx.clone();
    let paused_at_start = |a: &AtmcApp| {
        let view = a.active();
        view.playing() == Some(false) && view.step() == 0
    };
    let play = |h: &mut AppHarness| {
        h.key_press(Key::Space);
        wait(h, 60, "the lesson to run", |a| {
            a.active().playing() == Some(true) && a.active().step() > 0
        });
    };
    let lecture = atmc_lab::preset::Lecture::load("atmc").unwrap();
    h.state_mut().as_mut().unwrap().start_lecture(&ctx, lecture);
    h.run_steps(3);
    wait(&mut h, 60, "lesson 1 waits", paused_at_start);
    // Lessons 2 and 3 are both side by side: the third opens paused over a playing second.
    h.key_press(Key::Num2);
    h.run_steps(3);
    assert_eq!(app(&h).tab, Tab::Compare);
    wait(&mut h, 60, "lesson 2 waits", paused_at_start);
    play(&mut h);
    h.key_press(Key::PageDown);
    h.run_steps(3);
    h.get_by_label("lesson 3 of 10");
    wait(
        &mut h,
        60,
        "Page Down over a playing lesson: it waits",
        paused_at_start,
    );
    play(&mut h);
    h.key_press(Key::N);
    h.run_steps(3);
    wait(
        &mut h,
        60,
        "N over a playing lesson: it waits",
        paused_at_start,
    );
    // A number key back to a lesson of another view.
    h.key_press(Key::Num1);
    h.run_steps(3);
    assert_eq!(app(&h).tab, Tab::Posterior);
    wait(&mut h, 60, "lesson 1 again: it waits", paused_at_start);
    // The Presets menu: a plain preset plays and leaves the lecture ...
    h.state_mut()
        .as_mut()
        .unwrap()
        .open_and_play(&ctx, AnyPreset::load("default").unwrap());
    h.run_steps(3);
    assert!(app(&h).classroom.lecture.is_none(), "the lecture is left");
    wait(&mut h, 60, "the default preset to run", |a| {
        a.active().playing() == Some(true)
    });
    // ... and a lesson opened from it over the running view waits.
    h.state_mut()
        .as_mut()
        .unwrap()
        .open_and_play(&ctx, AnyPreset::load("lesson-langevin").unwrap());
    h.run_steps(3);
    wait(&mut h, 60, "a lesson from the menu waits", paused_at_start);
    // Number keys no longer reach a lecture that was left.
    h.key_press(Key::Num2);
    h.run_steps(3);
    assert_eq!(app(&h).tab, Tab::Posterior);
}

/// Issue #44: the window opened on a lesson (`atmc-lab app lesson-state-noise`) waits at
/// step 0 like every other way of opening one; the same window on a plain preset plays.
#[test]
fn the_window_opens_a_lesson_paused_and_a_plain_preset_playing() {
    let mut lesson = Preset::load("lesson-state-noise").expect("shipped");
    small(&mut lesson);
    assert!(!lesson.story.autoplay);
    let mut h = harness_as_window(lesson, [1280, 720]);
    // A second of frames: a playing view would have stepped by then.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while std::time::Instant::now() < until {
        h.step();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(app(&h).active().playing(), Some(false));
    assert_eq!(app(&h).active().step(), 0);
    let mut plain = Preset::default_preset();
    small(&mut plain);
    let mut h = harness_as_window(plain, [1280, 720]);
    wait(&mut h, 60, "the plain preset to play", |a| {
        a.active().playing() == Some(true) && a.active().step() > 0
    });
}

/// Issue #44 item 6: a preset pasted during a lecture leaves it: no "lesson 9 of 10" over an
/// empty panel, and 2 no longer jumps back into the lecture.
#[test]
fn a_pasted_preset_leaves_the_lecture() {
    let mut p = Preset::default_preset();
    small(&mut p);
    let mut h = harness(p.clone(), [1280, 720], 1.0, BackendChoice::Cpu);
    let ctx = h.ctx.clone();
    let lecture = atmc_lab::preset::Lecture::load("atmc").unwrap();
    h.state_mut().as_mut().unwrap().start_lecture(&ctx, lecture);
    h.run_steps(3);
    h.key_press(Key::Num9);
    h.run_steps(3);
    h.get_by_label("lesson 9 of 10");
    // `default` has no story.
    h.event(egui::Event::Paste(p.to_ron()));
    h.run_steps(3);
    assert!(app(&h).classroom.lecture.is_none(), "the lecture is left");
    assert!(!app(&h).classroom.panel_shown(), "no empty lesson panel");
    assert!(h.query_by_label_contains("of 10").is_none());
    h.key_press(Key::Num2);
    h.run_steps(3);
    assert_eq!(app(&h).tab, Tab::Posterior);
    h.get_by_label_contains("no lecture is running");
}

/// Issue #44 item 11: on a small laptop (1024×600) the verdict and the hint of a failed
/// attempt land below the fold of a long lesson: the panel scrolls them into view.
#[test]
fn a_challenges_verdict_and_hint_are_scrolled_into_view() {
    let AnyPreset::Comparison(mut c) = AnyPreset::load("lesson-thermostat").unwrap() else {
        panic!("a comparison")
    };
    c.base.chains = 1000;
    let mut h = harness(c, [1024, 600], 1.0, BackendChoice::Cpu);
    h.run_steps(3);
    h.get_by_label("Check").scroll_to_me();
    h.run_steps(2);
    h.get_by_label("Check").click();
    h.run_steps(2);
    wait(&mut h, 300, "the verdict", |a| !a.checking());
    h.run_steps(4);
    let screen = h.ctx.content_rect();
    for label in ["Hint", "Which sign of φ"] {
        let r = h.get_by_label_contains(label).rect();
        assert!(
            screen.contains_rect(r),
            "{label} at {r:?}, below the window {screen:?}"
        );
    }
}
