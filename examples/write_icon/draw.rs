//! The drawing of the app icon, `assets/icon.png`: three phase-space spirals, chains of a
//! damped oscillator winding into the mode, as a density in the app's inferno colormap on a
//! dark rounded square. Deterministic (no random numbers), so the file is reproducible.
//!
//! One source for both users: `examples/write_icon/main.rs` writes the file, and
//! `tests/it/icon.rs` includes this module to check that the committed icon is this drawing.

use atmc_lab::app::colormap::Colormap;
use std::f64::consts::{PI, TAU};

/// Width and height in pixels.
pub const SIZE: u32 = 256;
/// The committed file, found from the crate's root whatever the working directory.
pub const ICON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/icon.png");

/// The icon's pixels, RGBA, row by row from the top.
pub fn draw() -> Vec<u8> {
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
