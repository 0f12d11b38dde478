//! The app icon, `assets/icon.png`, and the program that draws it: three phase-space spirals,
//! chains of a damped oscillator winding into the mode, as a density in the app's inferno
//! colormap on a dark rounded square. Deterministic (no random numbers), so the file is
//! reproducible:
//!
//! ```text
//! cargo test --release --test it icon:: -- --ignored   # rewrites assets/icon.png
//! ```
#![cfg(feature = "gui")]

use atmc_lab::app::colormap::Colormap;
use std::f64::consts::{PI, TAU};

/// Width and height in pixels.
const SIZE: u32 = 256;
const ICON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/icon.png");

/// The icon's pixels, RGBA, row by row from the top.
fn draw() -> Vec<u8> {
    let n = SIZE as usize;
    let centre = 0.5 * f64::from(SIZE);
    // Density: Gaussian splats along three spiral arms, brighter as they wind in, and a round
    // glow at the centre, the target's mode.
    let mut density = vec![0.0f64; n * n];
    let sigma = 2.0;
    let reach = 7i64;
    let turns = 5.0 * PI;
    for k in 0..3 {
        let phase = TAU * f64::from(k) / 3.0;
        let mut t = 0.0;
        while t < turns {
            // Underdamped oscillator: the radius decays as e^(−γt) while the angle turns.
            let r = 112.0 * (-0.16 * t).exp();
            let weight = 0.3 + 0.7 * t / turns;
            let (s, c) = (t + phase).sin_cos();
            let (x, y) = (centre + r * c, centre + 0.85 * r * s);
            let (ix, iy) = (x.round() as i64, y.round() as i64);
            for py in iy - reach..=iy + reach {
                for px in ix - reach..=ix + reach {
                    if (0..n as i64).contains(&px) && (0..n as i64).contains(&py) {
                        let d2 = (px as f64 - x).powi(2) + (py as f64 - y).powi(2);
                        density[py as usize * n + px as usize] +=
                            weight * (-d2 / (2.0 * sigma * sigma)).exp();
                    }
                }
            }
            // Equal steps of arc length (half a pixel), so the arms are evenly bright.
            t += 0.5 / r;
        }
    }
    // An arm's peak is about √(2π) σ / 0.5 ≈ 10 times its weight: scale that to 1.
    let peak = TAU.sqrt() * sigma / 0.5;
    for (i, d) in density.iter_mut().enumerate() {
        let (x, y) = ((i % n) as f64 + 0.5 - centre, (i / n) as f64 + 0.5 - centre);
        *d = (*d + 1.1 * peak * (-(x * x + y * y) / (2.0 * 20.0 * 20.0)).exp()) / peak;
    }

    let inferno = Colormap::inferno();
    let background = [20.0, 16.0, 36.0];
    let mut pixels = Vec::with_capacity(4 * n * n);
    for (i, &d) in density.iter().enumerate() {
        let v = d.clamp(0.0, 1.0).powf(0.8);
        let c = inferno.color(v as f32);
        // Fade the colormap's dark end into the background.
        let a = (3.0 * v).min(1.0);
        let rgb = [c.r(), c.g(), c.b()]
            .map(f64::from)
            .iter()
            .zip(background)
            .map(|(&fg, bg)| bg + a * (fg - bg))
            .collect::<Vec<_>>();
        // Rounded square with anti-aliased edges: coverage from the signed distance.
        let (x, y) = ((i % n) as f64 + 0.5, (i / n) as f64 + 0.5);
        let (half, radius) = (0.5 * f64::from(SIZE) - 4.0, 44.0);
        let qx = (x - centre).abs() - (half - radius);
        let qy = (y - centre).abs() - (half - radius);
        let outside = qx.max(0.0).hypot(qy.max(0.0)) + qx.max(qy).min(0.0) - radius;
        let coverage = (0.5 - outside).clamp(0.0, 1.0);
        pixels.extend(rgb.iter().map(|v| v.round() as u8));
        pixels.push((255.0 * coverage).round() as u8);
    }
    pixels
}

#[test]
#[ignore = "rewrites assets/icon.png"]
fn write_icon() {
    image::RgbaImage::from_raw(SIZE, SIZE, draw())
        .expect("SIZE² RGBA pixels")
        .save(ICON)
        .expect("write assets/icon.png");
}

/// The committed icon decodes as the window icon and is what the program draws (up to one
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
        "assets/icon.png is not what tests/it/icon.rs draws (off by {worst:?}); rerun it with --ignored"
    );
}

/// The desktop entry (assets/atmc-lab.desktop) launches the app and names the icon that
/// README installs as `atmc-lab.png`.
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
