//! Drawing for a software rasteriser (llvmpipe), where the triangles of a frame are what it
//! costs: egui tessellates every line segment and circle on its own, with an anti-aliasing
//! feather, and a portrait's trails (thousands of segments) or an MLP map's thousand data
//! points cost more than everything else on screen. [`OverlayImage`] draws them on the CPU
//! into an image instead, shown as one textured quad and uploaded again only when it changed
//! (see [`super::texture::CachedTexture`]).

use egui::Color32;

/// Anti-aliased discs, rings and line segments drawn into a square image on the CPU.
pub struct OverlayImage {
    side: usize,
    /// Premultiplied RGBA, row by row from the top.
    rgba: Vec<[f32; 4]>,
}

impl OverlayImage {
    /// A transparent square image `side` pixels wide.
    pub fn new(side: usize) -> Self {
        Self {
            side,
            rgba: vec![[0.0; 4]; side * side],
        }
    }

    /// An opaque square image `side` pixels wide in `background`: a panel drawn as this one
    /// image needs no background rectangle of its own beneath it (on a software rasteriser
    /// every pixel a frame covers twice costs twice).
    pub fn filled(side: usize, background: Color32) -> Self {
        let [r, g, b, a] = background.to_normalized_gamma_f32();
        Self {
            side,
            rgba: vec![[r, g, b, a]; side * side],
        }
    }

    /// Cuts the four corners round with `radius` pixels (anti-aliased), as egui rounds a
    /// rectangle's corners.
    pub fn round_corners(&mut self, radius: f32) {
        let reach = ceil_index(radius).min(self.side / 2);
        let side = self.side;
        for dy in 0..reach {
            for dx in 0..reach {
                // Distance of this pixel's centre from the corner circle's centre.
                let (u, v) = (radius - dx as f32 - 0.5, radius - dy as f32 - 0.5);
                if u <= 0.0 || v <= 0.0 {
                    continue;
                }
                let keep = (radius + 0.5 - (u * u + v * v).sqrt()).clamp(0.0, 1.0);
                for (x, y) in [
                    (dx, dy),
                    (side - 1 - dx, dy),
                    (dx, side - 1 - dy),
                    (side - 1 - dx, side - 1 - dy),
                ] {
                    for c in &mut self.rgba[y * side + x] {
                        *c *= keep;
                    }
                }
            }
        }
    }

    /// `image` (premultiplied, rows from the top) stretched over the pixel box
    /// `[x0, y0, x1, y1]` with bilinear filtering and clamped edges, as a GPU draws a LINEAR
    /// texture; pixels outside the box stay as they are.
    pub fn stretch(&mut self, image: &egui::ColorImage, bbox: [f32; 4]) {
        let [w, h] = image.size;
        if w == 0 || h == 0 || bbox[2] <= bbox[0] || bbox[3] <= bbox[1] {
            return;
        }
        let texels: Vec<[f32; 4]> = image
            .pixels
            .iter()
            .map(|c| [c.r(), c.g(), c.b(), c.a()].map(|v| f32::from(v) / 255.0))
            .collect();
        // Where a pixel centre lands between two texels along one axis: the lower texel, the
        // upper one (clamped) and the weight of the upper; None outside the box.
        let taps = |p: usize, lo: f32, hi: f32, n: usize| -> Option<(usize, usize, f32)> {
            let t = (p as f32 + 0.5 - lo) / (hi - lo);
            if !(0.0..=1.0).contains(&t) {
                return None;
            }
            let s = (t * n as f32 - 0.5).max(0.0);
            let i = floor_index(s);
            Some((i.min(n - 1), (i + 1).min(n - 1), s - i as f32))
        };
        // The columns' taps once for every row: the filter is separable.
        let columns: Vec<(usize, (usize, usize, f32))> = (floor_index(bbox[0]).min(self.side)
            ..ceil_index(bbox[2]).min(self.side))
            .filter_map(|x| Some((x, taps(x, bbox[0], bbox[2], w)?)))
            .collect();
        let mut row = vec![[0.0f32; 4]; w];
        for y in floor_index(bbox[1]).min(self.side)..ceil_index(bbox[3]).min(self.side) {
            let Some((y0, y1, fy)) = taps(y, bbox[1], bbox[3], h) else {
                continue;
            };
            // The two texel rows blended first, then each pixel between two of its texels.
            let (top, bottom) = (&texels[y0 * w..][..w], &texels[y1 * w..][..w]);
            for ((r, a), b) in row.iter_mut().zip(top).zip(bottom) {
                *r = std::array::from_fn(|k| a[k] + (b[k] - a[k]) * fy);
            }
            let pixels = &mut self.rgba[y * self.side..][..self.side];
            for &(x, (x0, x1, fx)) in &columns {
                let (a, b) = (row[x0], row[x1]);
                let src = std::array::from_fn(|k| a[k] + (b[k] - a[k]) * fx);
                Self::over_premultiplied(&mut pixels[x], src);
            }
        }
    }

    /// Lays `top` (the same size) over this image: "over" with premultiplied colours.
    pub fn draw_over(&mut self, top: &OverlayImage) {
        debug_assert_eq!(self.side, top.side);
        for (px, src) in self.rgba.iter_mut().zip(&top.rgba) {
            Self::over_premultiplied(px, *src);
        }
    }

    /// A colour as straight (not premultiplied) gamma-space RGB and alpha.
    fn straight(color: Color32) -> [f32; 4] {
        let [r, g, b, a] = color.to_normalized_gamma_f32();
        if a > 0.0 {
            [r / a, g / a, b / a, a]
        } else {
            [0.0; 4]
        }
    }

    /// "Over", premultiplied: the source is the colour times `k` (coverage × alpha).
    fn over(px: &mut [f32; 4], rgb: [f32; 3], k: f32) {
        Self::over_premultiplied(px, [rgb[0] * k, rgb[1] * k, rgb[2] * k, k]);
    }

    /// "Over" with a premultiplied source `src`.
    #[inline(always)]
    fn over_premultiplied(px: &mut [f32; 4], src: [f32; 4]) {
        for (c, s) in px.iter_mut().zip(src) {
            *c = s + *c * (1.0 - src[3]);
        }
    }

    /// Paints `color` over the pixels of the box `[x0, y0, x1, y1]` with coverage
    /// `cover(pixel centre)`.
    fn paint(&mut self, bbox: [f32; 4], color: Color32, cover: impl Fn([f32; 2]) -> f32) {
        let [r, g, b, a] = Self::straight(color);
        let range = |lo: f32, hi: f32| {
            let lo = floor_index(lo - 1.0);
            let hi = ceil_index(hi + 1.0).min(self.side);
            lo..hi
        };
        for y in range(bbox[1], bbox[3]) {
            for x in range(bbox[0], bbox[2]) {
                let k = cover([x as f32 + 0.5, y as f32 + 0.5]).clamp(0.0, 1.0) * a;
                if k > 0.0 {
                    Self::over(&mut self.rgba[y * self.side + x], [r, g, b], k);
                }
            }
        }
    }

    /// The box of radius `reach` around `c`.
    fn around(c: [f32; 2], reach: f32) -> [f32; 4] {
        [c[0] - reach, c[1] - reach, c[0] + reach, c[1] + reach]
    }

    fn distance(p: [f32; 2], c: [f32; 2]) -> f32 {
        ((p[0] - c[0]).powi(2) + (p[1] - c[1]).powi(2)).sqrt()
    }

    /// A filled disc of `radius` pixels.
    pub fn disc(&mut self, center: [f32; 2], radius: f32, color: Color32) {
        self.paint(Self::around(center, radius), color, |p| {
            radius + 0.5 - Self::distance(p, center)
        });
    }

    /// A ring of `radius` pixels, `width` wide.
    pub fn ring(&mut self, center: [f32; 2], radius: f32, width: f32, color: Color32) {
        self.paint(Self::around(center, radius + width), color, |p| {
            width / 2.0 + 0.5 - (Self::distance(p, center) - radius).abs()
        });
    }

    /// A segment from `a` to `b`, `width` wide: one pixel column (or row) at a time along
    /// its longer axis, each covering the few pixels across it by their distance to the line
    /// (a box around a long diagonal segment would test mostly empty pixels). Pixel centres
    /// in [start, end) along the axis, so a polyline paints each joint once.
    pub fn segment(&mut self, a: [f32; 2], b: [f32; 2], width: f32, color: Color32) {
        let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
        let length = (dx * dx + dy * dy).sqrt();
        if length == 0.0 {
            return;
        }
        // Along the major axis u, across it v.
        let (major, minor) = if dx.abs() >= dy.abs() { (0, 1) } else { (1, 0) };
        let (du, dv) = if major == 0 { (dx, dy) } else { (dy, dx) };
        let (lo, hi) = (a[major].min(b[major]), a[major].max(b[major]));
        let cos = du.abs() / length;
        let half = width / 2.0;
        let reach = (half + 1.0) / cos.max(1e-3);
        let [r, g, bl, alpha] = Self::straight(color);
        let first = ceil_index(lo - 0.5);
        let last = ceil_index(hi - 0.5).min(self.side);
        for u in first..last {
            let uc = u as f32 + 0.5;
            let vc = a[minor] + (uc - a[major]) * dv / du;
            let from = floor_index(vc - reach);
            let to = ceil_index(vc + reach).min(self.side);
            for v in from..to {
                let distance = (v as f32 + 0.5 - vc).abs() * cos;
                let k = (half + 0.5 - distance).clamp(0.0, 1.0) * alpha;
                if k > 0.0 {
                    let (x, y) = if major == 0 { (u, v) } else { (v, u) };
                    Self::over(&mut self.rgba[y * self.side + x], [r, g, bl], k);
                }
            }
        }
    }

    /// The image, for a texture.
    pub fn into_image(self) -> egui::ColorImage {
        // Not f32::round: without SSE4.1 (baseline x86-64) it is a library call per channel.
        let to = |v: f32| (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8;
        egui::ColorImage::new(
            [self.side, self.side],
            self.rgba
                .iter()
                .map(|p| Color32::from_rgba_premultiplied(to(p[0]), to(p[1]), to(p[2]), to(p[3])))
                .collect(),
        )
    }
}

/// ⌊x⌋ as an index, 0 for negative x (and NaN). Casts, not f32::floor: that is a library
/// call on baseline x86-64, and these run for every pixel of a portrait.
fn floor_index(x: f32) -> usize {
    x.max(0.0) as usize
}

/// ⌈x⌉ as an index, 0 for negative x (and NaN).
fn ceil_index(x: f32) -> usize {
    let i = floor_index(x);
    if (i as f32) < x {
        i.saturating_add(1)
    } else {
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlays_cover_discs_rings_and_segments_and_leave_the_rest_clear() {
        let mut img = OverlayImage::new(20);
        img.disc([10.0, 10.0], 3.0, Color32::RED);
        img.ring([3.0, 3.0], 2.0, 1.0, Color32::BLUE);
        img.segment([0.0, 18.5], [20.0, 18.5], 1.0, Color32::GREEN);
        let image = img.into_image();
        let at = |x: usize, y: usize| image.pixels[y * 20 + x];
        assert_eq!(at(10, 10), Color32::RED);
        assert_eq!(at(15, 14), Color32::TRANSPARENT);
        // The ring's centre stays clear, its circle is drawn.
        assert_eq!(at(2, 2).a(), 0);
        assert!(at(5, 2).a() > 100, "{:?}", at(5, 2));
        // The segment runs the width of the image, one pixel high.
        assert!((0..20).all(|x| at(x, 18) == Color32::GREEN));
        assert_eq!(at(10, 16).a(), 0);
        // A translucent colour keeps its hue (its alpha counts once).
        let mut img = OverlayImage::new(4);
        img.disc(
            [2.0, 2.0],
            1.5,
            Color32::from_rgba_unmultiplied(200, 100, 0, 128),
        );
        let c = img.into_image().pixels[2 * 4 + 2];
        assert_eq!(c.a(), 128);
        assert!(c.r().abs_diff(100) <= 1 && c.g().abs_diff(50) <= 1, "{c:?}");
        // A stretched 2×1 image: its texels' colours at their centres, blended between.
        let mut img = OverlayImage::new(8);
        let two = egui::ColorImage::new([2, 1], vec![Color32::RED, Color32::BLUE]);
        img.stretch(&two, [0.0, 0.0, 8.0, 8.0]);
        let image = img.into_image();
        assert_eq!(image.pixels[0], Color32::RED);
        assert_eq!(image.pixels[7], Color32::BLUE);
        let mid = image.pixels[4];
        assert!(mid.r() > 50 && mid.b() > 50, "{mid:?}");
        // A steep segment is drawn row by row, as wide as a flat one.
        let mut img = OverlayImage::new(10);
        img.segment([4.5, 0.0], [4.5, 10.0], 1.0, Color32::WHITE);
        let image = img.into_image();
        assert!((0..10).all(|y| image.pixels[y * 10 + 4] == Color32::WHITE));
        assert!((0..10).all(|y| image.pixels[y * 10 + 6].a() == 0));
    }

    #[test]
    fn a_filled_image_is_opaque_but_for_its_rounded_corners() {
        let mut img = OverlayImage::filled(16, Color32::from_rgb(8, 8, 16));
        img.round_corners(4.0);
        let image = img.into_image();
        let at = |x: usize, y: usize| image.pixels[y * 16 + x];
        assert_eq!(at(8, 8), Color32::from_rgb(8, 8, 16));
        for (x, y) in [(0, 0), (15, 0), (0, 15), (15, 15)] {
            assert_eq!(at(x, y).a(), 0, "corner ({x}, {y})");
        }
        // The edges between the corners stay, and so does the corner circle's inside.
        assert_eq!(at(8, 0).a(), 255);
        assert_eq!(at(0, 8).a(), 255);
        assert_eq!(at(3, 3).a(), 255);
        // A layer laid over it covers it where the layer is opaque and nowhere else.
        let mut base = OverlayImage::filled(8, Color32::from_rgb(8, 8, 16));
        let mut top = OverlayImage::new(8);
        top.disc([4.0, 4.0], 2.0, Color32::RED);
        base.draw_over(&top);
        let image = base.into_image();
        assert_eq!(image.pixels[4 * 8 + 4], Color32::RED);
        assert_eq!(image.pixels[0], Color32::from_rgb(8, 8, 16));
    }

    #[test]
    fn pixel_indices_round_like_floor_and_ceil_and_stop_at_zero() {
        assert_eq!([2.0, 2.7, -0.5, f32::NAN].map(floor_index), [2, 2, 0, 0]);
        assert_eq!([2.0, 2.1, -0.5, 0.0].map(ceil_index), [2, 3, 0, 0]);
        // Far beyond any image (a chain zoomed out of view): saturated, not wrapped to 0.
        assert_eq!([1e20, f32::INFINITY].map(ceil_index), [usize::MAX; 2]);
        assert_eq!(floor_index(f32::INFINITY), usize::MAX);
    }
}
