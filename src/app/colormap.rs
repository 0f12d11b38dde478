//! Perceptual colormaps for density images: matplotlib's inferno and viridis, from the
//! `colorous` crate, sampled into a lookup table.

use egui::Color32;

/// A 256-entry lookup table.
#[derive(Clone, Debug)]
pub struct Colormap {
    lut: Vec<Color32>,
}

impl Default for Colormap {
    fn default() -> Self {
        Self::inferno()
    }
}

impl Colormap {
    /// A fingerprint of the colours, for knowing when a texture drawn with them is stale.
    pub fn fingerprint(&self) -> u64 {
        super::texture::key_of(&self.lut)
    }

    /// matplotlib's "inferno": black through purple and orange to pale yellow, perceptually
    /// uniform. Dark at 0, so faint densities fade into a dark background.
    pub fn inferno() -> Self {
        Self::from_gradient(colorous::INFERNO)
    }

    /// matplotlib's "viridis": dark blue through green to yellow, perceptually uniform and
    /// readable with the common colour-vision deficiencies.
    pub fn viridis() -> Self {
        Self::from_gradient(colorous::VIRIDIS)
    }

    fn from_gradient(gradient: colorous::Gradient) -> Self {
        let lut = (0..256)
            .map(|i| {
                let c = gradient.eval_continuous(f64::from(i) / 255.0);
                Color32::from_rgb(c.r, c.g, c.b)
            })
            .collect();
        Self { lut }
    }

    /// Colour of a value in [0, 1] (clamped).
    pub fn color(&self, v: f32) -> Color32 {
        let i = (v.clamp(0.0, 1.0) * 255.0).round() as usize;
        self.lut[i]
    }

    /// An image of histogram counts (row-major, row 0 at the bottom of the plot), scaled by
    /// the largest count, logarithmically or linearly. Empty cells are transparent so the
    /// background (and the target's contours) show through.
    pub fn density_image(
        &self,
        counts: &[u32],
        nx: usize,
        ny: usize,
        log: bool,
    ) -> egui::ColorImage {
        let max = counts.iter().copied().max().unwrap_or(0).max(1) as f32;
        let scale = |c: u32| {
            if log {
                (1.0 + c as f32).ln() / (1.0 + max).ln()
            } else {
                c as f32 / max
            }
        };
        let mut pixels = vec![Color32::TRANSPARENT; nx * ny];
        for iy in 0..ny {
            // Images run top to bottom; the histogram's y axis runs bottom to top.
            let row = ny - 1 - iy;
            for ix in 0..nx {
                let c = counts[iy * nx + ix];
                if c > 0 {
                    pixels[row * nx + ix] = self.color(0.3 + 0.7 * scale(c));
                }
            }
        }
        egui::ColorImage::new([nx, ny], pixels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colormaps_run_dark_to_bright() {
        let luma =
            |c: Color32| 0.3 * f32::from(c.r()) + 0.59 * f32::from(c.g()) + 0.11 * f32::from(c.b());
        for (name, m) in [
            ("inferno", Colormap::inferno()),
            ("viridis", Colormap::viridis()),
        ] {
            let mut last = -1.0;
            for i in 0..=10 {
                let l = luma(m.color(i as f32 / 10.0));
                assert!(l > last, "{name} not monotone at {i}");
                last = l;
            }
        }
        // matplotlib's end points.
        let m = Colormap::inferno();
        assert_eq!(m.color(0.0), Color32::from_rgb(0, 0, 4));
        assert_eq!(m.color(1.0), Color32::from_rgb(252, 255, 164));
        assert_eq!(m.color(-1.0), m.color(0.0));
        let v = Colormap::viridis();
        assert_eq!(v.color(0.0), Color32::from_rgb(68, 1, 84));
        assert_eq!(v.color(1.0), Color32::from_rgb(253, 231, 37));

        let img = m.density_image(&[0, 1, 4, 9], 2, 2, true);
        assert_eq!(img.pixels[2], Color32::TRANSPARENT); // count 0 at the bottom left
        assert_eq!(img.pixels[1], m.color(1.0)); // the largest count at the top right
    }
}
