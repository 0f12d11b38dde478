//! Every view at the three window sizes a classroom meets (a small laptop, a projector, a
//! full-HD screen): no control or text is cut off at the window's edges, and every panel a
//! view exports lies inside the window.
#![cfg(feature = "gui")]

use crate::common;
use crate::common::harness::opening;
use atmc_lab::app::screenshot::{harness_in, run_to_step};
use atmc_lab::app::{Folders, Tab};
use atmc_lab::engine::BackendChoice;
use egui::accesskit::Role;
use egui_kittest::kittest::{By, NodeT, Queryable};

const SIZES: [[u32; 2]; 3] = [[1024, 600], [1280, 720], [1920, 1080]];

/// The roles of controls a user operates, and of the text beside them.
const CONTROLS: [Role; 8] = [
    Role::Label,
    Role::Button,
    Role::Slider,
    Role::CheckBox,
    Role::ComboBox,
    Role::TextInput,
    Role::SpinButton,
    Role::RadioButton,
];

/// The app opened on `tab` at `size`, run until the view has everything it draws (the
/// thermodynamics view runs its sweep; training and sweeps only need a few frames).
fn settled(tab: Tab, size: [u32; 2], dir: &std::path::Path) -> crate::common::harness::AppHarness {
    let mut harness = harness_in(
        opening(tab),
        size,
        1.0,
        BackendChoice::Cpu,
        Folders::under(dir),
    );
    if matches!(tab, Tab::Training | Tab::Sweep) {
        harness.run_steps(4);
    } else {
        run_to_step(&mut harness, 0).expect("the view settles");
    }
    harness
}

#[test]
fn no_control_is_cut_off_and_every_panel_is_inside_the_window_at_three_sizes() {
    // The thermodynamics view writes its sweep: into a scratch folder.
    let dir = common::scratch("layout", "sweeps");
    let mut problems = Vec::new();
    for tab in Tab::ALL {
        for [w, h] in SIZES {
            let harness = settled(tab, [w, h], &dir);
            let app = harness.state().as_ref().expect("app started");
            assert_eq!(app.tab, tab, "{tab:?} opened");
            for node in harness.query_all(By::new().predicate(|n| CONTROLS.contains(&n.role()))) {
                let r = node.rect();
                // Below the fold is fine (the control panel scrolls); cut at a side is not.
                if r.min.x < -0.5 || r.max.x > w as f32 + 0.5 {
                    problems.push(format!(
                        "{tab:?} at {w}×{h}: {:?} {:?} spans x {:.0}..{:.0}",
                        node.accesskit_node().role(),
                        node.accesskit_node().label(),
                        r.min.x,
                        r.max.x
                    ));
                }
            }
            let app = harness.state().as_ref().expect("app started");
            // Below the fold is fine here too: the central view scrolls (a plot is kept at a
            // readable height rather than squeezed to fit); cut at a side or above is not.
            for (label, r) in app.active().panels() {
                if r.min.x < -0.5 || r.min.y < -0.5 || r.max.x > w as f32 + 0.5 {
                    problems.push(format!("{tab:?} at {w}×{h}: panel {label} at {r:?}"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every text and control of the control panel ends inside it at 1280×720: a label past its
/// right edge is cut mid-word ("network shown alo…"), where the panel's scroll area clips it.
#[test]
fn no_label_of_the_control_panel_runs_past_its_edge() {
    let dir = common::scratch("layout", "panel_edge");
    let edge = atmc_lab::app::CONTROLS_WIDTH;
    let mut problems = Vec::new();
    for tab in Tab::ALL {
        let harness = settled(tab, [1280, 720], &dir);
        for node in harness.query_all(By::new().predicate(|n| CONTROLS.contains(&n.role()))) {
            let r = node.rect();
            // The panel's rows: below the menu bar, above the status bar.
            let in_panel = r.min.y > 30.0 && r.max.y < 690.0;
            if in_panel && r.min.x < edge - 20.0 && r.max.x > edge + 0.5 {
                problems.push(format!(
                    "{tab:?}: {:?} {:?} spans x {:.0}..{:.0}, past the panel's edge at {edge}",
                    node.accesskit_node().role(),
                    node.accesskit_node()
                        .label()
                        .or(node.accesskit_node().value()),
                    r.min.x,
                    r.max.x
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
