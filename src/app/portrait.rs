//! One phase portrait: the engine's density histogram as an image, the highlighted chains
//! with fading trails, optional contours of the target, pan and zoom.

use super::axes::round_ticks;
use super::colormap::Colormap;
use super::overlay::OverlayImage;
use super::texture::CachedTexture;
use crate::diagnostics::growth::Extents;
use crate::diagnostics::views::{PortraitRanges, Segment, hpd_contours, portrait_ranges};
use crate::engine::Axis;
use crate::engine::Moments;
use crate::math::samplers::LeapfrogPath;
use crate::math::{Chain2, Grid2, SamplerSpec, TargetSpec};
use egui::{Color32, Pos2, Rect, Sense, Shape, Stroke, Vec2, pos2};
use glam::DVec2;
use std::collections::VecDeque;

/// Histogram cells along each axis for an ensemble of `chains`: about six chains per cell
/// in a full view, so the density reads as a picture and not as scattered dots.
pub fn resolution(chains: u32) -> u32 {
    let r = (f64::from(chains) / 6.0).sqrt();
    ((r / 16.0).round() as u32 * 16).clamp(32, 256)
}

/// Up to this many chains in a portrait are drawn as dots (one per occupied histogram cell)
/// rather than as a density: a few hundred survivors of an explosion on cells sized for
/// 10⁵ chains were large blurry squares that did not match the chains' own dots.
pub const POINTS_BELOW: u64 = 2_000;

/// Cells along each axis when the portraits draw dots: fine enough that a cell is about a
/// pixel or two of a portrait, so each dot sits where its chain is.
pub const POINT_RESOLUTION: u32 = 256;

/// [`resolution`] for an ensemble of `chains` of which `alive` are alive (`None` before the
/// first snapshot): the finest grid once few enough are left to draw as dots.
pub fn resolution_for(chains: u32, alive: Option<u64>) -> u32 {
    match alive {
        Some(a) if a <= POINTS_BELOW => POINT_RESOLUTION,
        _ => resolution(chains),
    }
}

/// What the θ₁–θ₂ portraits of one target are drawn over, built once per target: its
/// display grid (from which the portraits auto-range) and the HPD contours of the exact
/// masses a worker computed. Building a target can be costly (the logistic one generates its
/// data, fits a Laplace approximation and integrates up to ten 192² grids), so a view keeps
/// one `Backdrop` and rebuilds it only when the target changes.
#[derive(Debug)]
pub struct Backdrop {
    target: TargetSpec,
    grid: Grid2,
    contours: Option<(Grid2, Vec<Segment>)>,
}

impl Backdrop {
    /// The backdrop of `target`; a typed formula that fails its checks (the formula panel
    /// runs none such) gets a plain box about the origin.
    pub fn new(target: &TargetSpec) -> Self {
        let grid = match target.build() {
            Ok(built) => built.default_grid(),
            Err(_) => Grid2::new([-5.0, 5.0], [-5.0, 5.0], 64, 64),
        };
        Self {
            target: target.clone(),
            grid,
            contours: None,
        }
    }

    /// Follows an edited target (rebuilt only when it changed and builds).
    pub fn set_target(&mut self, target: &TargetSpec) {
        if *target != self.target && target.build().is_ok() {
            *self = Self::new(target);
        }
    }

    /// The target's display grid.
    pub fn grid(&self) -> &Grid2 {
        &self.grid
    }

    /// Auto-ranges of the portraits over this target (see [`portrait_ranges`]).
    pub fn ranges(
        &self,
        coordinate: usize,
        sampler: &SamplerSpec,
        moments: Option<&Moments>,
        extents: Option<&Extents>,
    ) -> PortraitRanges {
        portrait_ranges(
            &self.grid,
            coordinate,
            sampler.mass,
            sampler.temperature,
            moments,
            extents,
        )
    }

    /// The 50/90/99% HPD contours of the exact masses `truth` (traced again only when their
    /// grid changes).
    pub fn contours(&mut self, truth: Option<&(Grid2, Vec<f64>)>) -> &[Segment] {
        let Some((grid, masses)) = truth else {
            return &[];
        };
        if self.contours.as_ref().is_none_or(|(g, _)| g != grid) {
            self.contours = Some((*grid, hpd_contours(grid, masses, &[0.5, 0.9, 0.99])));
        }
        self.contours.as_ref().map_or(&[], |(_, segments)| segments)
    }
}

/// The visible data range of a portrait.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ViewRange {
    /// Horizontal data range.
    pub x: [f64; 2],
    /// Vertical data range.
    pub y: [f64; 2],
    /// Follow the ensemble (auto-range) until the user pans or zooms.
    pub auto: bool,
}

impl ViewRange {
    /// An auto-ranging view.
    pub fn auto(x: [f64; 2], y: [f64; 2]) -> Self {
        Self { x, y, auto: true }
    }

    /// The map from this view's data coordinates to `rect` on screen (y up).
    pub fn transform(&self, rect: Rect) -> ViewTransform {
        let min = DVec2::new(self.x[0], self.y[0]);
        let span = DVec2::new(self.x[1] - self.x[0], self.y[1] - self.y[0]);
        ViewTransform {
            origin: DVec2::new(f64::from(rect.left()), f64::from(rect.bottom())),
            scale: DVec2::new(f64::from(rect.width()), -f64::from(rect.height())) / span,
            min,
        }
    }

    /// The histogram grid of this view with `resolution` cells per axis.
    pub fn grid(&self, resolution: u32) -> Grid2 {
        Grid2::new(self.x, self.y, resolution, resolution)
    }

    /// Moves an auto-ranging view to `wanted` when it differs by more than `tolerance` of
    /// its width (a tolerance avoids jitter while the ensemble moves; 0 settles exactly).
    pub fn follow(&mut self, wanted: ([f64; 2], [f64; 2]), tolerance: f64) {
        if !self.auto {
            return;
        }
        let off = |a: [f64; 2], b: [f64; 2]| {
            let w = (b[1] - b[0]).abs().max(1e-12);
            ((a[0] - b[0]).abs() + (a[1] - b[1]).abs()) / w
        };
        if off(self.x, wanted.0) > tolerance || off(self.y, wanted.1) > tolerance {
            self.x = wanted.0;
            self.y = wanted.1;
        }
    }
}

/// Data coordinates to screen points for one view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ViewTransform {
    origin: DVec2,
    scale: DVec2,
    min: DVec2,
}

impl ViewTransform {
    /// The screen point of a data point.
    pub fn to_screen(&self, p: DVec2) -> Pos2 {
        let q = self.origin + (p - self.min) * self.scale;
        pos2(q.x as f32, q.y as f32)
    }

    /// The data point under a screen point.
    pub fn to_data(&self, p: Pos2) -> DVec2 {
        (DVec2::new(f64::from(p.x), f64::from(p.y)) - self.origin) / self.scale + self.min
    }
}

/// A portrait's background.
const BACKGROUND: Color32 = Color32::from_rgb(8, 8, 16);
/// The radius of a portrait's rounded corners, in points.
const CORNER_RADIUS: f32 = 4.0;

/// What one portrait draws this frame.
pub struct PortraitData<'a> {
    /// Panel title.
    pub title: String,
    /// Axes shown.
    pub axes: [Axis; 2],
    /// The histogram and the grid it was binned on (it may lag the view by a tick).
    pub histogram: Option<(&'a Grid2, &'a [u32])>,
    /// Highlighted chains' recent states, oldest first.
    pub trails: &'a [VecDeque<Chain2>],
    /// Which highlighted chains diverged.
    pub trail_diverged_at: &'a [u32],
    /// Contour segments in data coordinates.
    pub contours: &'a [Segment],
    /// Logarithmic colour scale.
    pub log_scale: bool,
    /// A note drawn in the middle of an empty panel (e.g. SGLD has no momentum).
    pub note: Option<&'a str>,
    /// HMC's last proposals of a few highlighted chains, drawn on the θ₁–θ₂ portrait.
    pub leapfrog: &'a [LeapfrogPath],
}

/// The texture a portrait keeps between frames: its density, contours and trails composed.
#[derive(Default)]
pub struct PortraitTextures {
    overlay: CachedTexture,
}

/// Where a portrait's pieces go on screen this frame: the inputs of its composed image
/// (density, contours, trails) in pixels, and the marks drawn over it.
struct Scene<'a> {
    /// Side of the image in pixels.
    pixels: usize,
    /// Physical pixels per point.
    ppp: f32,
    /// Contour segments in pixels.
    contours: Vec<[[f32; 2]; 2]>,
    /// The trails of the highlighted chains that did not diverge, in pixels.
    alive: Vec<Vec<[f32; 2]>>,
    /// A red mark per diverged highlighted chain, in the strip along the top edge.
    marks: Vec<Pos2>,
    /// The histogram, its grid and the pixels it covers (min x, min y, max x, max y).
    density: Option<(&'a Grid2, &'a [u32], [f32; 4])>,
}

/// The height of the strip of diverged chains' marks, below the title.
fn strip_y(rect: Rect) -> f32 {
    rect.top() + 34.0
}

impl<'a> Scene<'a> {
    /// Lays out `data` in `rect` (a square of side `side`) through `transform`.
    fn lay_out(
        rect: Rect,
        side: f32,
        ppp: f32,
        transform: &ViewTransform,
        data: &PortraitData<'a>,
    ) -> Self {
        let to_screen = |x: f64, y: f64| transform.to_screen(DVec2::new(x, y));
        // A panel whose axes the sampler does not have (SGLD has no p and no ξ) shows only its
        // note: a histogram of the never-moving zeros would look like data.
        let empty = data.note.is_some();
        let pixels = (side * ppp).round().max(1.0) as usize;
        let to_pixel = |p: Pos2| -> [f32; 2] {
            let d = p - rect.min;
            [d.x * ppp, d.y * ppp]
        };
        let contours: Vec<[[f32; 2]; 2]> = data
            .contours
            .iter()
            .map(|[a, b]| [a, b].map(|q| to_pixel(transform.to_screen(*q))))
            .collect();
        // Diverged chains are drawn apart: a red mark each in a strip along the top edge, in
        // chain order.
        let n_trails = data.trails.len().max(1) as f32;
        let mut marks = Vec::new();
        let trails = if empty { &[][..] } else { data.trails };
        let mut alive: Vec<Vec<[f32; 2]>> = Vec::with_capacity(trails.len());
        for (i, trail) in trails.iter().enumerate() {
            if data.trail_diverged_at.get(i).copied().unwrap_or(0) != 0 {
                marks.push(pos2(
                    rect.left() + 10.0 + (rect.width() - 20.0) * i as f32 / n_trails,
                    strip_y(rect),
                ));
                continue;
            }
            alive.push(
                trail
                    .iter()
                    .map(|c| {
                        to_pixel(to_screen(
                            f64::from(data.axes[0].value(c)),
                            f64::from(data.axes[1].value(c)),
                        ))
                    })
                    .collect(),
            );
        }
        let density = data.histogram.filter(|_| !empty).map(|(grid, counts)| {
            let r = Rect::from_two_pos(
                to_screen(grid.x[0], grid.y[1]),
                to_screen(grid.x[1], grid.y[0]),
            );
            let (a, b) = (to_pixel(r.min), to_pixel(r.max));
            (grid, counts, [a[0], a[1], b[0], b[1]])
        });
        Self {
            pixels,
            ppp,
            contours,
            alive,
            marks,
            density,
        }
    }

    /// What the composed image depends on: it is uploaded again only when this changes. It
    /// hashes the screen positions as they are, without copying them.
    fn key(&self, data: &PortraitData<'_>, colormap: &Colormap) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        self.density
            .map(|(g, counts, bbox)| (counts, g.nx, g.ny, bbox.map(f32::to_bits)))
            .hash(&mut h);
        (data.log_scale, colormap.fingerprint(), self.pixels).hash(&mut h);
        h.write(bytemuck::cast_slice(&self.contours));
        for trail in &self.alive {
            h.write_usize(trail.len());
            h.write(bytemuck::cast_slice(trail));
        }
        h.finish()
    }

    /// The density, the contours, the trails and their heads composed into one image.
    fn compose(&self, data: &PortraitData<'_>, colormap: &Colormap) -> egui::ColorImage {
        let (pixels, ppp, density) = (self.pixels, self.ppp, self.density);
        let (contours, alive) = (&self.contours, &self.alive);
        // The panel's background is in the image (no rectangle beneath it to fill).
        let mut img = OverlayImage::filled(pixels, BACKGROUND);
        if let Some((grid, counts, bbox)) = density {
            let cells =
                colormap.density_image(counts, grid.nx as usize, grid.ny as usize, data.log_scale);
            let shown: u64 = counts.iter().map(|&c| u64::from(c)).sum();
            if shown <= POINTS_BELOW {
                // Few chains: a dot at each occupied cell, in the density's colour.
                let (nx, ny) = (grid.nx as usize, grid.ny as usize);
                let cell = [
                    (bbox[2] - bbox[0]) / nx as f32,
                    (bbox[3] - bbox[1]) / ny as f32,
                ];
                for row in 0..ny {
                    for ix in 0..nx {
                        let color = cells.pixels[row * nx + ix];
                        if color.a() > 0 {
                            let centre = [
                                bbox[0] + (ix as f32 + 0.5) * cell[0],
                                bbox[1] + (row as f32 + 0.5) * cell[1],
                            ];
                            img.disc(centre, 1.6 * ppp, color);
                        }
                    }
                }
            } else {
                img.stretch(&cells, bbox);
            }
        }
        let contour = Color32::from_rgba_unmultiplied(120, 200, 255, 150);
        for [a, b] in contours {
            img.segment(*a, *b, ppp, contour);
        }
        // Trails fade from transparent (oldest) to opaque (newest).
        for trail in alive {
            let n = trail.len();
            for (k, w) in trail.windows(2).enumerate() {
                let alpha = (20.0 + 150.0 * (k + 1) as f32 / n as f32) as u8;
                img.segment(
                    w[0],
                    w[1],
                    ppp,
                    Color32::from_rgba_unmultiplied(140, 255, 170, alpha),
                );
            }
            if let Some(head) = trail.last() {
                img.disc(*head, 2.0 * ppp, Color32::from_rgb(190, 255, 205));
            }
        }
        img.round_corners(CORNER_RADIUS * ppp);
        img.into_image()
    }
}

/// Draws a portrait in a square of side `side` and handles pan (drag), zoom (scroll) and
/// auto-range (double-click). Returns the response.
pub fn show(
    ui: &mut egui::Ui,
    side: f32,
    view: &mut ViewRange,
    data: &PortraitData<'_>,
    textures: &mut PortraitTextures,
    colormap: &Colormap,
) -> egui::Response {
    let (rect, response) = ui.allocate_exact_size(Vec2::splat(side), Sense::click_and_drag());
    let painter = ui.painter_at(rect);
    let style = ui.style().clone();
    let transform = view.transform(rect);
    // The density, the contours, the trails and their heads are composed on the CPU into one
    // image (see `super::overlay`), uploaded again only when something in it changed: as
    // egui shapes and two textures they were half of what a frame cost on a software
    // rasteriser.
    let scene = Scene::lay_out(rect, side, ui.ctx().pixels_per_point(), &transform, data);
    let t = textures.overlay.show(
        ui.ctx(),
        &format!("portrait overlay {}", data.title),
        scene.key(data, colormap),
        // One texel per pixel: NEAREST samples one texel where LINEAR blends four.
        egui::TextureOptions::NEAREST,
        || scene.compose(data, colormap),
    );
    painter.image(
        t.id(),
        rect,
        Rect::from_min_max(pos2(0.0, 0.0), pos2(1.0, 1.0)),
        Color32::WHITE,
    );
    draw_marks(&painter, rect, &scene);
    if data.axes == [Axis::Theta(0), Axis::Theta(1)] {
        draw_leapfrog(&painter, &style, rect, &transform, data.leapfrog);
    }
    if let Some(note) = data.note {
        painter.text(
            rect.center(),
            egui::Align2::CENTER_CENTER,
            note,
            super::fonts::painter_font(&style, 14.0),
            Color32::from_gray(170),
        );
    }
    let diverged = scene.marks.len();
    draw_axes(&painter, &style, rect, view, &transform, diverged);
    draw_titles(&painter, &style, rect, view, data, diverged);
    interact(ui, &response, rect, view, &transform);
    response
}

/// Colours of an accepted and a rejected HMC proposal.
const ACCEPTED: Color32 = Color32::from_rgb(110, 215, 255);
const REJECTED: Color32 = Color32::from_rgb(255, 110, 90);

/// HMC's proposals: each leapfrog trajectory as a polyline with a dot per leapfrog step from
/// a ring at its start, ending in a disc where the test accepted it and a cross where it did
/// not (the chain stayed at the ring), with a one-line key.
fn draw_leapfrog(
    painter: &egui::Painter,
    style: &egui::Style,
    rect: Rect,
    transform: &ViewTransform,
    paths: &[LeapfrogPath],
) {
    if paths.is_empty() {
        return;
    }
    let screen = |p: &[f32; 2]| transform.to_screen(DVec2::new(f64::from(p[0]), f64::from(p[1])));
    for path in paths {
        let colour = if path.accepted { ACCEPTED } else { REJECTED };
        let points: Vec<Pos2> = path
            .points
            .iter()
            .map(screen)
            .filter(|p| p.x.is_finite() && p.y.is_finite())
            .collect();
        let (Some(&start), Some(&end)) = (points.first(), points.last()) else {
            continue;
        };
        for &p in &points[1..points.len() - 1] {
            painter.circle_filled(p, 1.8, colour);
        }
        painter.add(Shape::line(points, Stroke::new(1.5, colour)));
        painter.circle_stroke(start, 4.5, Stroke::new(1.5, Color32::WHITE));
        if path.accepted {
            painter.circle_filled(end, 4.0, colour);
        } else {
            let d = 4.0;
            let stroke = Stroke::new(2.0, colour);
            painter.line_segment([end + Vec2::new(-d, -d), end + Vec2::new(d, d)], stroke);
            painter.line_segment([end + Vec2::new(-d, d), end + Vec2::new(d, -d)], stroke);
        }
    }
    // The key, on a dark plate: rejected trajectories fly across the panel's top.
    let font = super::fonts::painter_font(style, 12.0);
    let kept = painter.layout_no_wrap("● kept".into(), font.clone(), ACCEPTED);
    let rejected = painter.layout_no_wrap("✕ rejected (last proposal)".into(), font, REJECTED);
    let at = pos2(rect.left() + 8.0, strip_y(rect) + 10.0);
    let gap = 10.0;
    let size = Vec2::new(
        kept.size().x + gap + rejected.size().x,
        kept.size().y.max(rejected.size().y),
    );
    painter.rect_filled(
        Rect::from_min_size(at, size).expand(3.0),
        3.0,
        Color32::from_black_alpha(190),
    );
    let right = at.x + kept.size().x + gap;
    painter.galley(at, kept, ACCEPTED);
    painter.galley(pos2(right, at.y), rejected, REJECTED);
}

/// The diverged chains' marks in their strip, and an arrow at the edge for each highlighted
/// chain beyond the ranges.
fn draw_marks(painter: &egui::Painter, rect: Rect, scene: &Scene<'_>) {
    let (ppp, alive) = (scene.ppp, &scene.alive);
    for &mark in &scene.marks {
        painter.circle_filled(mark, 2.5, Color32::from_rgb(255, 80, 60));
    }
    // Highlighted chains beyond the ranges (the first to explode, which the ranges no longer
    // follow) are marked at the edge, pointing the way they went.
    let inner = rect.shrink(5.0);
    let beyond = Color32::from_rgb(255, 170, 60);
    for head in alive.iter().filter_map(|t| t.last()) {
        let at = rect.min + Vec2::new(head[0], head[1]) / ppp;
        if !(at.x.is_finite() && at.y.is_finite()) || rect.contains(at) {
            continue;
        }
        let edge = at.clamp(inner.min, inner.max);
        let out = (at - rect.center()).normalized();
        let across = Vec2::new(-out.y, out.x);
        painter.add(Shape::convex_polygon(
            vec![
                edge + out * 4.0,
                edge - out * 3.0 + across * 4.0,
                edge - out * 3.0 - across * 4.0,
            ],
            beyond,
            Stroke::NONE,
        ));
    }
}

/// Ticks and labels inside the frame.
fn draw_axes(
    painter: &egui::Painter,
    style: &egui::Style,
    rect: Rect,
    view: &ViewRange,
    transform: &ViewTransform,
    diverged: usize,
) {
    let to_screen = |x: f64, y: f64| transform.to_screen(DVec2::new(x, y));
    let strip_y = strip_y(rect);
    let label_color = Color32::from_gray(190);
    let font = super::fonts::painter_font(style, 12.0);
    // Labels keep clear of the corner where the two axes meet and of the title.
    // About one round tick per 50 points, two to five per axis (four left most views with a
    // lone "0"; five crowd a small side-by-side portrait).
    let about = (rect.width() / 50.0).clamp(2.0, 5.0) as f64;
    for t in round_ticks(view.x[0], view.x[1], about) {
        let p = to_screen(t, view.y[0]);
        let label = format!("{t}");
        // Centred on its tick: one near the right edge would be cut by the frame.
        let half = painter
            .layout_no_wrap(label.clone(), font.clone(), label_color)
            .size()
            .x
            / 2.0;
        if p.x < rect.left() + 22.0 || p.x + half > rect.right() - 2.0 {
            continue;
        }
        painter.line_segment([p, p - Vec2::new(0.0, 5.0)], Stroke::new(1.0, label_color));
        painter.text(
            p - Vec2::new(0.0, 6.0),
            egui::Align2::CENTER_BOTTOM,
            label,
            font.clone(),
            label_color,
        );
    }
    // Below the title, and below the line about diverged chains when there is one.
    let labels_top = if diverged > 0 {
        strip_y + 26.0
    } else {
        rect.top() + 28.0
    };
    for t in round_ticks(view.y[0], view.y[1], about) {
        let p = to_screen(view.x[0], t);
        // Above the band of the x labels (their height grows with presentation mode's type).
        if p.y > rect.bottom() - 8.0 - 1.5 * font.size || p.y < labels_top {
            continue;
        }
        painter.line_segment([p, p + Vec2::new(5.0, 0.0)], Stroke::new(1.0, label_color));
        painter.text(
            p + Vec2::new(7.0, 0.0),
            egui::Align2::LEFT_CENTER,
            format!("{t}"),
            font.clone(),
            label_color,
        );
    }
}

/// The title (or only its axes), the line about diverged chains, the auto-range hint and the
/// frame.
fn draw_titles(
    painter: &egui::Painter,
    style: &egui::Style,
    rect: Rect,
    view: &ViewRange,
    data: &PortraitData<'_>,
    diverged: usize,
) {
    let font = super::fonts::painter_font(style, 12.0);
    let strip_y = strip_y(rect);
    // The title, or only its axes where a small portrait (side by side, a narrow window)
    // would cut it.
    let title_font = super::fonts::painter_font(style, 15.0);
    let title = [
        data.title.clone(),
        format!("{} – {}", data.axes[0].label(), data.axes[1].label()),
    ]
    .into_iter()
    .map(|text| painter.layout_no_wrap(text, title_font.clone(), Color32::WHITE))
    .reduce(|fits, shorter| {
        if fits.size().x <= rect.width() - 12.0 {
            fits
        } else {
            shorter
        }
    })
    .expect("two wordings");
    painter.galley(rect.left_top() + Vec2::new(8.0, 6.0), title, Color32::WHITE);
    if diverged > 0 {
        // The longest wording that fits the portrait (small ones side by side cut it off).
        let color = Color32::from_rgb(255, 110, 90);
        let room = rect.width() - 16.0;
        let galley = [
            format!("{diverged} highlighted chains diverged: frozen, shown apart"),
            format!("{diverged} diverged: frozen, shown apart"),
            format!("{diverged} diverged"),
        ]
        .into_iter()
        .map(|text| painter.layout_no_wrap(text, font.clone(), color))
        .reduce(|fits, shorter| if fits.size().x <= room { fits } else { shorter })
        .expect("three wordings");
        painter.galley(pos2(rect.left() + 8.0, strip_y + 6.0), galley, color);
    }
    if !view.auto {
        // Right-aligned above the band of the x labels, which it covered.
        painter.text(
            rect.right_bottom() + Vec2::new(-6.0, -10.0 - 1.5 * font.size),
            egui::Align2::RIGHT_BOTTOM,
            "double-click: auto-range",
            font,
            Color32::from_gray(140),
        );
    }
    painter.add(Shape::rect_stroke(
        rect,
        CORNER_RADIUS,
        Stroke::new(1.0, Color32::from_gray(70)),
        egui::StrokeKind::Inside,
    ));
}

/// Pan (drag), zoom about the pointer (scroll) and auto-range (double-click).
fn interact(
    ui: &egui::Ui,
    response: &egui::Response,
    rect: Rect,
    view: &mut ViewRange,
    transform: &ViewTransform,
) {
    if response.double_clicked() {
        view.auto = true;
        // The next auto-range update moves the view.
        view.x = [view.x[0] - 1e6, view.x[1] + 1e6];
    } else if response.dragged() {
        let d = response.drag_delta();
        let dx = -f64::from(d.x / rect.width()) * (view.x[1] - view.x[0]);
        let dy = f64::from(d.y / rect.height()) * (view.y[1] - view.y[0]);
        view.x = [view.x[0] + dx, view.x[1] + dx];
        view.y = [view.y[0] + dy, view.y[1] + dy];
        view.auto = false;
    }
    if response.hovered() {
        let scroll = ui.input(|i| i.smooth_scroll_delta.y);
        if scroll != 0.0
            && let Some(pointer) = response.hover_pos()
        {
            // Zoom about the data point under the pointer.
            let factor = f64::from((-scroll * 0.003).exp());
            let c = transform.to_data(pointer);
            let min = c + (DVec2::new(view.x[0], view.y[0]) - c) * factor;
            let max = c + (DVec2::new(view.x[1], view.y[1]) - c) * factor;
            view.x = [min.x, max.x];
            view.y = [min.y, max.y];
            view.auto = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The target is built once per target, and the contours traced once per grid of exact
    /// masses: a frame that draws them again reuses both.
    #[test]
    fn a_backdrop_is_rebuilt_only_for_a_new_target() {
        let gaussian = |sigma2| TargetSpec::Gaussian {
            mean: [0.0; 2],
            sigma1: 1.0,
            sigma2,
            rho: 0.3,
        };
        let mut backdrop = Backdrop::new(&gaussian(2.0));
        let grid = *backdrop.grid();
        assert_eq!(grid, gaussian(2.0).build().unwrap().default_grid());
        assert!(backdrop.contours(None).is_empty());
        let (masses, _) = gaussian(2.0).build().unwrap().cell_masses(&grid);
        let truth = (grid, masses);
        let traced = backdrop.contours(Some(&truth)).as_ptr();
        assert!(!backdrop.contours(Some(&truth)).is_empty());
        assert_eq!(
            backdrop.contours(Some(&truth)).as_ptr(),
            traced,
            "traced again"
        );
        backdrop.set_target(&gaussian(2.0));
        assert_eq!(backdrop.contours(Some(&truth)).as_ptr(), traced, "rebuilt");
        backdrop.set_target(&gaussian(3.0));
        assert_ne!(*backdrop.grid(), grid, "the new target's grid");
        assert!(
            backdrop.contours.is_none(),
            "the old target's contours are dropped"
        );
    }

    #[test]
    fn few_survivors_are_drawn_as_dots_on_the_finest_grid() {
        assert_eq!(resolution_for(100_000, None), resolution(100_000));
        assert_eq!(resolution_for(100_000, Some(50_000)), resolution(100_000));
        assert_eq!(resolution_for(100_000, Some(300)), POINT_RESOLUTION);
        assert_eq!(
            resolution_for(100_000, Some(POINTS_BELOW)),
            POINT_RESOLUTION
        );
    }

    #[test]
    fn resolution_grows_with_the_ensemble() {
        assert_eq!(resolution(100), 32);
        assert_eq!(resolution(10_000), 48);
        assert_eq!(resolution(100_000), 128);
        assert_eq!(resolution(1_000_000), 256);
    }

    #[test]
    fn transform_round_trips() {
        let v = ViewRange::auto([-2.0, 6.0], [1.0, 3.0]);
        let rect = Rect::from_min_max(pos2(10.0, 20.0), pos2(110.0, 70.0));
        let t = v.transform(rect);
        assert_eq!(t.to_screen(DVec2::new(-2.0, 1.0)), pos2(10.0, 70.0));
        assert_eq!(t.to_screen(DVec2::new(6.0, 3.0)), pos2(110.0, 20.0));
        let back = t.to_data(pos2(60.0, 45.0));
        assert!((back - DVec2::new(2.0, 2.0)).length() < 1e-9);
    }

    #[test]
    fn follow_ignores_small_moves() {
        let mut v = ViewRange::auto([-1.0, 1.0], [-1.0, 1.0]);
        v.follow(([-1.05, 1.0], [-1.0, 1.0]), 0.15);
        assert_eq!(v.x, [-1.0, 1.0]);
        v.follow(([-3.0, 3.0], [-1.0, 1.0]), 0.15);
        assert_eq!(v.x, [-3.0, 3.0]);
        v.follow(([-3.05, 3.0], [-1.0, 1.0]), 0.0);
        assert_eq!(v.x, [-3.05, 3.0]);
    }
}
