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

    /// Paints `color` over the pixels of the box `[x0, y0, x1, y1]` with coverage
    /// `cover(pixel centre)`.
    /// `image` (premultiplied, rows from the top) stretched over the pixel box
    /// `[x0, y0, x1, y1]` with bilinear filtering and clamped edges, as a GPU draws a LINEAR
    /// texture; pixels outside the box stay as they are.
    pub fn stretch(&mut self, image: &egui::ColorImage, bbox: [f32; 4]) {
        let [w, h] = image.size;
        if w == 0 || h == 0 || bbox[2] <= bbox[0] || bbox[3] <= bbox[1] {
            return;
        }
        let texel = |x: usize, y: usize| -> [f32; 4] {
            let c = image.pixels[y.min(h - 1) * w + x.min(w - 1)];
            [c.r(), c.g(), c.b(), c.a()].map(|v| f32::from(v) / 255.0)
        };
        let from = |lo: f32| (lo.floor().max(0.0) as usize).min(self.side);
        let to = |hi: f32| (hi.ceil().max(0.0) as usize).min(self.side);
        for y in from(bbox[1])..to(bbox[3]) {
            let v = (y as f32 + 0.5 - bbox[1]) / (bbox[3] - bbox[1]);
            if !(0.0..=1.0).contains(&v) {
                continue;
            }
            let ty = (v * h as f32 - 0.5).max(0.0);
            let (y0, fy) = (ty.floor() as usize, ty.fract());
            for x in from(bbox[0])..to(bbox[2]) {
                let u = (x as f32 + 0.5 - bbox[0]) / (bbox[2] - bbox[0]);
                if !(0.0..=1.0).contains(&u) {
                    continue;
                }
                let tx = (u * w as f32 - 0.5).max(0.0);
                let (x0, fx) = (tx.floor() as usize, tx.fract());
                let (a, b, c, d) = (
                    texel(x0, y0),
                    texel(x0 + 1, y0),
                    texel(x0, y0 + 1),
                    texel(x0 + 1, y0 + 1),
                );
                let src: [f32; 4] = std::array::from_fn(|k| {
                    (a[k] * (1.0 - fx) + b[k] * fx) * (1.0 - fy)
                        + (c[k] * (1.0 - fx) + d[k] * fx) * fy
                });
                let px = &mut self.rgba[y * self.side + x];
                // "Over" with a premultiplied source.
                for k in 0..4 {
                    px[k] = src[k] + px[k] * (1.0 - src[3]);
                }
            }
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
        for (c, s) in px.iter_mut().zip([rgb[0], rgb[1], rgb[2], 1.0]) {
            *c = s * k + *c * (1.0 - k);
        }
    }

    fn paint(&mut self, bbox: [f32; 4], color: Color32, cover: impl Fn([f32; 2]) -> f32) {
        let [r, g, b, a] = Self::straight(color);
        let range = |lo: f32, hi: f32| {
            let lo = (lo - 1.0).floor().max(0.0) as usize;
            let hi = ((hi + 1.0).ceil().max(0.0) as usize).min(self.side);
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
        let first = (lo - 0.5).ceil().max(0.0) as usize;
        let last = ((hi - 0.5).ceil().max(0.0) as usize).min(self.side);
        for u in first..last {
            let uc = u as f32 + 0.5;
            let vc = a[minor] + (uc - a[major]) * dv / du;
            let from = (vc - reach).floor().max(0.0) as usize;
            let to = ((vc + reach).ceil().max(0.0) as usize).min(self.side);
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
        let to = |v: f32| (v * 255.0).round().clamp(0.0, 255.0) as u8;
        egui::ColorImage::new(
            [self.side, self.side],
            self.rgba
                .iter()
                .map(|p| Color32::from_rgba_premultiplied(to(p[0]), to(p[1]), to(p[2]), to(p[3])))
                .collect(),
        )
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
}
