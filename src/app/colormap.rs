//! Perceptual colormaps for density images.

use egui::Color32;

/// Key colours of matplotlib's "inferno" (dark to bright, perceptually uniform), at equal
/// spacing; intermediate values are interpolated linearly.
const INFERNO: [[u8; 3]; 9] = [
    [0, 0, 4],
    [31, 12, 72],
    [85, 15, 109],
    [136, 34, 106],
    [186, 54, 85],
    [227, 89, 51],
    [249, 140, 10],
    [249, 201, 50],
    [252, 255, 164],
];

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
    /// The inferno colormap.
    pub fn inferno() -> Self {
        let n = INFERNO.len() - 1;
        let lut = (0..256)
            .map(|i| {
                let x = i as f32 / 255.0 * n as f32;
                let k = (x.floor() as usize).min(n - 1);
                let t = x - k as f32;
                let a = INFERNO[k];
                let b = INFERNO[k + 1];
                let mix =
                    |u: u8, v: u8| (f32::from(u) + t * (f32::from(v) - f32::from(u))).round() as u8;
                Color32::from_rgb(mix(a[0], b[0]), mix(a[1], b[1]), mix(a[2], b[2]))
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
    fn inferno_runs_dark_to_bright() {
        let m = Colormap::inferno();
        let luma =
            |c: Color32| 0.3 * f32::from(c.r()) + 0.59 * f32::from(c.g()) + 0.11 * f32::from(c.b());
        let mut last = -1.0;
        for i in 0..=10 {
            let l = luma(m.color(i as f32 / 10.0));
            assert!(l > last, "not monotone at {i}");
            last = l;
        }
        let img = m.density_image(&[0, 1, 4, 9], 2, 2, true);
        assert_eq!(img.pixels[2], Color32::TRANSPARENT); // count 0 at the bottom left
        assert_eq!(img.pixels[1], m.color(1.0)); // the largest count at the top right
    }
}
