//! The colours of notices: amber for a warning, red for an error, green for a pass, one set per theme so both
//! stay readable. A bright amber on the dark theme's panels is 4.5× darker than on the light
//! theme's, where it all but vanishes; WCAG AA asks a contrast of 4.5:1 for text.

use egui::{Color32, Visuals};

/// Amber for a warning (a notice, the far-from-target line, diverged chains) on `visuals`'
/// panels.
pub fn warning(visuals: &Visuals) -> Color32 {
    if visuals.dark_mode {
        Color32::from_rgb(255, 200, 80)
    } else {
        Color32::from_rgb(140, 80, 0)
    }
}

/// Red for an error (a refused input, a failed run, a momentum explosion) on `visuals`'
/// panels.
pub fn error(visuals: &Visuals) -> Color32 {
    if visuals.dark_mode {
        Color32::from_rgb(255, 110, 90)
    } else {
        Color32::from_rgb(185, 30, 20)
    }
}

/// Green for a check that passed (a consistent Gibbs test, an export done) on `visuals`'
/// panels.
pub fn good(visuals: &Visuals) -> Color32 {
    if visuals.dark_mode {
        Color32::from_rgb(140, 220, 140)
    } else {
        Color32::from_rgb(20, 110, 40)
    }
}

/// The relative luminance of `c` (WCAG 2: linearised sRGB, weighted by the eye's response).
fn luminance(c: Color32) -> f64 {
    let linear = |v: u8| {
        let v = f64::from(v) / 255.0;
        if v <= 0.040_45 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * linear(c.r()) + 0.7152 * linear(c.g()) + 0.0722 * linear(c.b())
}

/// The WCAG contrast ratio of two colours, from 1 (the same) to 21 (black on white).
pub fn contrast(a: Color32, b: Color32) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contrast_matches_the_wcag_examples() {
        assert!((contrast(Color32::BLACK, Color32::WHITE) - 21.0).abs() < 1e-9);
        assert!((contrast(Color32::WHITE, Color32::WHITE) - 1.0).abs() < 1e-9);
        // #767676 on white is the lightest grey that passes AA (4.54:1).
        let grey = Color32::from_gray(0x76);
        assert!((contrast(grey, Color32::WHITE) - 4.54).abs() < 0.01);
    }

    #[test]
    fn notices_keep_aa_contrast_in_both_themes() {
        for visuals in [Visuals::dark(), Visuals::light()] {
            // Notices sit on the panels, on windows (dialogs) and on the faint fill of a
            // banner; each background must leave the text at 4.5:1 or more.
            for background in [
                visuals.panel_fill,
                visuals.window_fill,
                // Premultiplied (light: an additive tint): as seen over a panel.
                visuals.panel_fill.blend(visuals.faint_bg_color),
                visuals.extreme_bg_color,
            ] {
                for (name, colour) in [
                    ("warning", warning(&visuals)),
                    ("error", error(&visuals)),
                    ("good", good(&visuals)),
                ] {
                    let c = contrast(colour, background);
                    assert!(
                        c >= 4.5,
                        "{name} {colour:?} on {background:?} (dark: {}): {c:.2}:1",
                        visuals.dark_mode
                    );
                }
            }
        }
        // The bright amber of the dark theme fails on the light one: why there are two.
        assert!(contrast(warning(&Visuals::dark()), Visuals::light().panel_fill) < 2.0);
    }
}
