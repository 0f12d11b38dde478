//! The app icon, `assets/icon.png`: the committed file is what `examples/write_icon` draws,
//! decodes as the window icon, and the desktop entry names it. After a change to the drawing,
//! write the file again with
//!
//! ```text
//! cargo run --release --example write_icon   # rewrites assets/icon.png
//! ```
#![cfg(feature = "gui")]

#[path = "../../examples/write_icon/draw.rs"]
mod draw;

use draw::{ICON, SIZE, draw};

/// The committed icon decodes as the window icon and is what `draw` draws (up to one
/// level of rounding: the maths library may differ in the last bit).
#[test]
fn icon_is_the_drawing_and_decodes() {
    let bytes = std::fs::read(ICON).expect("assets/icon.png");
    let icon = eframe::icon_data::from_png_bytes(&bytes).expect("a PNG");
    assert_eq!((icon.width, icon.height), (SIZE, SIZE));
    let drawn = draw();
    let worst = icon
        .rgba
        .iter()
        .zip(&drawn)
        .map(|(a, b)| a.abs_diff(*b))
        .max();
    assert_eq!(icon.rgba.len(), drawn.len());
    assert!(
        worst <= Some(1),
        "assets/icon.png is not what examples/write_icon/draw.rs draws (off by {worst:?}); write it again with `cargo run --release --example write_icon`"
    );
}

/// The desktop entry (assets/atmc-lab.desktop) launches the app and names the icon that
/// docs/install.md installs as `atmc-lab.png`.
#[test]
fn the_desktop_entry_opens_the_app_with_the_icon() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/atmc-lab.desktop");
    let text = std::fs::read_to_string(path).expect("assets/atmc-lab.desktop");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("[Desktop Entry]"));
    let entry: std::collections::HashMap<&str, &str> = lines
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            l.split_once('=')
                .unwrap_or_else(|| panic!("not key=value: {l}"))
        })
        .collect();
    for key in ["Type", "Name", "Exec", "Icon", "Categories"] {
        assert!(entry.contains_key(key), "{key} missing");
    }
    assert_eq!(entry["Type"], "Application");
    assert_eq!(entry["Icon"], "atmc-lab");
    assert!(entry["Categories"].ends_with(';'));
    // The command it runs exists: `atmc-lab app` with the file field code.
    let exec: Vec<&str> = entry["Exec"].split_whitespace().collect();
    assert_eq!(exec[..2], ["atmc-lab", "app"]);
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_atmc-lab"))
        .args(["app", "--help"])
        .output()
        .expect("atmc-lab runs");
    assert!(help.status.success());
    let icon = image::open(ICON).expect("the icon decodes");
    assert_eq!((icon.width(), icon.height()), (SIZE, SIZE));
}
