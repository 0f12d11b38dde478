//! Cheap drawing for a software rasteriser (llvmpipe), where vertices are what a frame costs.
//! egui tessellates every line segment and circle on its own with an anti-aliasing feather,
//! about eight vertices a segment and some forty a small outlined circle. [`FlatMesh`] gathers
//! a portrait's thousands of trail segments into one strip per trail, two vertices a point
//! without the feather (at 1.3 px a line stays continuous at every angle); [`DotImage`] draws
//! points that do not move (an MLP map's thousand data points) into an image once.

use egui::epaint::{Mesh, Vertex, WHITE_UV};
use egui::{Color32, Pos2, Shape, Vec2};

/// Lines collected for one draw call.
#[derive(Default)]
pub struct FlatMesh(Mesh);

impl FlatMesh {
    /// The unit normal of a → b (zero for a repeated point).
    fn normal(a: Pos2, b: Pos2) -> Vec2 {
        let d = b - a;
        let len = d.length();
        if len > 0.0 {
            Vec2::new(-d.y, d.x) / len
        } else {
            Vec2::ZERO
        }
    }

    fn vertex(&mut self, pos: Pos2, color: Color32) {
        self.0.vertices.push(Vertex {
            pos,
            uv: WHITE_UV,
            color,
        });
    }

    /// A polyline `width` wide whose point `k` has colour `color(k)`; consecutive segments
    /// share their vertices (two per point, the offset along the mean of the neighbouring
    /// segments' normals).
    pub fn polyline(&mut self, points: &[Pos2], width: f32, color: impl Fn(usize) -> Color32) {
        let n = points.len();
        if n < 2 {
            return;
        }
        let first = self.0.vertices.len() as u32;
        let mut previous = Vec2::ZERO;
        for k in 0..n {
            let before = if k > 0 {
                Self::normal(points[k - 1], points[k])
            } else {
                Vec2::ZERO
            };
            let after = if k + 1 < n {
                Self::normal(points[k], points[k + 1])
            } else {
                Vec2::ZERO
            };
            // A chain that turns back flips the normal: keep each side of the strip on its
            // side, or the quad would twist into a bow tie with a gap in the line.
            let after = if after.dot(before) < 0.0 {
                -after
            } else {
                after
            };
            let mean = before + after;
            let mut offset = if mean.length() > 1e-6 {
                mean.normalized()
            } else if before != Vec2::ZERO {
                before
            } else {
                after
            } * (width / 2.0);
            if offset.dot(previous) < 0.0 {
                offset = -offset;
            }
            if offset != Vec2::ZERO {
                previous = offset;
            }
            let c = color(k);
            self.vertex(points[k] + offset, c);
            self.vertex(points[k] - offset, c);
        }
        for k in 0..n as u32 - 1 {
            let i = first + 2 * k;
            self.0
                .indices
                .extend([i, i + 1, i + 2, i + 1, i + 3, i + 2]);
        }
    }

    /// A separate segment `width` wide.
    pub fn segment(&mut self, a: Pos2, b: Pos2, width: f32, color: Color32) {
        self.polyline(&[a, b], width, |_| color);
    }

    /// Vertices so far.
    pub fn vertex_count(&self) -> usize {
        self.0.vertices.len()
    }

    /// The shape to paint (one draw call).
    pub fn into_shape(self) -> Shape {
        Shape::mesh(self.0)
    }
}

/// Small anti-aliased discs and rings drawn into an image on the CPU, for points that stay
/// put while what is under them changes: one textured quad a frame instead of a mesh.
pub struct DotImage {
    side: usize,
    /// Premultiplied RGBA, row by row from the top.
    rgba: Vec<[f32; 4]>,
}

impl DotImage {
    /// A transparent square image `side` pixels wide.
    pub fn new(side: usize) -> Self {
        Self {
            side,
            rgba: vec![[0.0; 4]; side * side],
        }
    }

    /// Paints `color` over the pixels around `center` with coverage `cover(distance)`.
    fn paint(&mut self, center: [f32; 2], reach: f32, color: Color32, cover: impl Fn(f32) -> f32) {
        let [r, g, b, a] = color.to_normalized_gamma_f32();
        let range = |c: f32| {
            let lo = (c - reach - 1.0).floor().max(0.0) as usize;
            let hi = ((c + reach + 1.0).ceil().max(0.0) as usize).min(self.side);
            lo..hi
        };
        for y in range(center[1]) {
            for x in range(center[0]) {
                let d = ((x as f32 + 0.5 - center[0]).powi(2)
                    + (y as f32 + 0.5 - center[1]).powi(2))
                .sqrt();
                let k = cover(d).clamp(0.0, 1.0) * a;
                if k > 0.0 {
                    let px = &mut self.rgba[y * self.side + x];
                    // "Over", premultiplied: the source is colour × coverage.
                    for (c, s) in px.iter_mut().zip([r, g, b, 1.0]) {
                        *c = s * k + *c * (1.0 - k);
                    }
                }
            }
        }
    }

    /// A filled disc of `radius` pixels.
    pub fn disc(&mut self, center: [f32; 2], radius: f32, color: Color32) {
        self.paint(center, radius, color, |d| radius + 0.5 - d);
    }

    /// A ring of `radius` pixels, `width` wide.
    pub fn ring(&mut self, center: [f32; 2], radius: f32, width: f32, color: Color32) {
        self.paint(center, radius + width, color, |d| {
            width / 2.0 + 0.5 - (d - radius).abs()
        });
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
    use egui::pos2;

    #[test]
    fn a_polyline_is_two_vertices_a_point_and_two_triangles_a_segment() {
        let mut m = FlatMesh::default();
        m.polyline(
            &[pos2(0.0, 0.0), pos2(10.0, 0.0), pos2(10.0, 10.0)],
            2.0,
            |k| Color32::from_gray(k as u8),
        );
        assert_eq!(m.vertex_count(), 6);
        assert_eq!(m.0.indices.len(), 12);
        // The straight start: one unit either side of the line.
        assert_eq!(m.0.vertices[0].pos, pos2(0.0, 1.0));
        assert_eq!(m.0.vertices[1].pos, pos2(0.0, -1.0));
        // Turning back keeps the sides: the vertices after the turn lie on the same side.
        let mut back = FlatMesh::default();
        back.polyline(
            &[pos2(0.0, 0.0), pos2(0.0, 10.0), pos2(0.0, 0.0)],
            2.0,
            |_| Color32::WHITE,
        );
        let v = &back.0.vertices;
        assert_eq!((v[0].pos.x, v[2].pos.x, v[4].pos.x), (-1.0, -1.0, -1.0));
        // A repeated point leaves no gap and no NaN.
        m.polyline(
            &[pos2(1.0, 1.0), pos2(1.0, 1.0), pos2(2.0, 1.0)],
            1.0,
            |_| Color32::WHITE,
        );
        assert!(
            m.0.vertices
                .iter()
                .all(|v| v.pos.x.is_finite() && v.pos.y.is_finite())
        );
    }

    #[test]
    fn dot_images_cover_discs_and_leave_the_rest_clear() {
        let mut img = DotImage::new(20);
        img.disc([10.0, 10.0], 3.0, Color32::RED);
        img.ring([3.0, 3.0], 2.0, 1.0, Color32::BLUE);
        let image = img.into_image();
        let at = |x: usize, y: usize| image.pixels[y * 20 + x];
        assert_eq!(at(10, 10), Color32::RED);
        assert_eq!(at(18, 18), Color32::TRANSPARENT);
        // The ring's centre stays clear, its circle is drawn.
        assert_eq!(at(2, 2).a(), 0);
        assert!(at(5, 2).a() > 100, "{:?}", at(5, 2));
    }
}
