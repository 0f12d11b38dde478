//! Pictures of the app: the offscreen renderer behind `atmc-lab screenshot` (egui_kittest on
//! wgpu, no window or display needed) and the PNG writer behind the app's export menu.

use super::classroom::Appearance;
use super::{AtmcApp, Folders, Opening};
use crate::engine::BackendChoice;
use anyhow::{Context, anyhow, bail};
use std::path::Path;

/// Renders the full UI offscreen after the preset has run `steps` steps, at `size` logical
/// points and `pixels_per_point`. Deterministic: the chains at step N do not depend on timing.
pub fn render_offscreen(
    opening: impl Into<Opening>,
    steps: u32,
    size: [u32; 2],
    pixels_per_point: f32,
    backend: BackendChoice,
    appearance: Appearance,
) -> anyhow::Result<image::RgbaImage> {
    render(
        opening.into(),
        steps,
        size,
        pixels_per_point,
        backend,
        appearance,
        false,
    )
}

/// Renders the view alone as a figure (no menu bar, status bar, lesson or control panel:
/// [`AtmcApp::figure`]) after the preset has run `steps` steps, at `size` logical points and
/// `pixels_per_point`: a handout's picture. Deterministic like [`render_offscreen`].
pub fn render_figure(
    opening: impl Into<Opening>,
    steps: u32,
    size: [u32; 2],
    pixels_per_point: f32,
    backend: BackendChoice,
    appearance: Appearance,
) -> anyhow::Result<image::RgbaImage> {
    render(
        opening.into(),
        steps,
        size,
        pixels_per_point,
        backend,
        appearance,
        true,
    )
}

/// [`render_offscreen`], or [`render_figure`] when `figure` holds.
fn render(
    opening: Opening,
    steps: u32,
    size: [u32; 2],
    pixels_per_point: f32,
    backend: BackendChoice,
    appearance: Appearance,
    figure: bool,
) -> anyhow::Result<image::RgbaImage> {
    check_picture_size(size, pixels_per_point)?;
    let mut harness = harness_with(opening, size, pixels_per_point, backend, appearance);
    harness
        .state_mut()
        .as_mut()
        .context("app not started")?
        .figure = figure;
    run_to_step(&mut harness, steps)?;
    harness
        .render()
        .map_err(|e| anyhow!("offscreen rendering failed: {e}"))
}

/// Records the UI offscreen: one frame every `every` steps up to `steps`, the whole window
/// or the view's panel labelled `panel`. Deterministic like [`render_offscreen`]. `frame`
/// is called after every frame with its number.
#[allow(clippy::too_many_arguments)]
pub fn record_offscreen(
    opening: impl Into<Opening>,
    steps: u32,
    every: u32,
    size: [u32; 2],
    pixels_per_point: f32,
    panel: Option<&str>,
    backend: BackendChoice,
    appearance: Appearance,
    frame: &mut dyn FnMut(usize),
) -> anyhow::Result<Vec<image::RgbaImage>> {
    check_picture_size(size, pixels_per_point)?;
    let mut harness = harness_with(opening, size, pixels_per_point, backend, appearance);
    // The panel is looked up in the laid-out view before any step is run or frame rendered:
    // an unknown label is bad input, refused at once (not after the recording's work).
    if let Some(label) = panel {
        let app = harness.state().as_ref().context("app not started")?;
        let names: Vec<String> = app.active().panels().into_iter().map(|(l, _)| l).collect();
        if !names.iter().any(|l| l == label) {
            return Err(UnknownPanel {
                label: label.to_owned(),
                names,
            }
            .into());
        }
    }
    let mut frames = Vec::new();
    let mut step = 0;
    while step < steps {
        step = (step + every.max(1)).min(steps);
        run_to_step(&mut harness, step)?;
        let mut image = harness
            .render()
            .map_err(|e| anyhow!("offscreen rendering failed: {e}"))?;
        if let Some(label) = panel {
            let app = harness.state().as_ref().context("app not started")?;
            let panels = app.active().panels();
            let rect = panels
                .iter()
                .find(|(l, _)| l == label)
                .map(|(_, r)| *r)
                .ok_or_else(|| {
                    // Found at the first frame, before the rest is rendered; bad input
                    // (exit 2), and nothing is written.
                    let names: Vec<&str> = panels.iter().map(|(l, _)| l.as_str()).collect();
                    anyhow::Error::new(crate::fsutil::Refused(format!(
                        "--panel '{label}': no such panel in this view: choose one of {}",
                        names.join(", ")
                    )))
                })?;
            image = crop(&image, rect, pixels_per_point)?;
        }
        frames.push(image);
        frame(frames.len());
    }
    Ok(frames)
}

/// A `--panel` label the recorded view does not have (bad input: the command line refuses it
/// with exit status 2, before any frame is rendered).
#[derive(Debug)]
pub struct UnknownPanel {
    /// The label asked for.
    pub label: String,
    /// The labels of the view's panels.
    pub names: Vec<String>,
}

impl std::fmt::Display for UnknownPanel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.names.is_empty() {
            write!(
                f,
                "--panel '{}': this view has no panels to record alone",
                self.label
            )
        } else {
            write!(
                f,
                "--panel '{}': no such panel in this view; choose one of {}",
                self.label,
                self.names.join(", ")
            )
        }
    }
}

impl std::error::Error for UnknownPanel {}

/// The largest side of a picture in pixels: every wgpu adapter renders textures this large.
pub const MAX_PICTURE_SIDE: u32 = 8192;

/// Checks that `size` points at `pixels_per_point` fit in a texture of every adapter.
pub fn check_picture_size(size: [u32; 2], pixels_per_point: f32) -> anyhow::Result<()> {
    for (side, name) in size.iter().zip(["width", "height"]) {
        let pixels = *side as f32 * pixels_per_point;
        if pixels > MAX_PICTURE_SIDE as f32 {
            bail!(
                "the picture would be {pixels:.0} pixels in {name} ({side} × scale \
                 {pixels_per_point}); at most {MAX_PICTURE_SIDE}: lower --size or --scale"
            );
        }
    }
    Ok(())
}

/// The part of `image` under `rect` (in points).
fn crop(
    image: &image::RgbaImage,
    rect: egui::Rect,
    pixels_per_point: f32,
) -> anyhow::Result<image::RgbaImage> {
    let (w, h) = image.dimensions();
    let x = ((rect.min.x * pixels_per_point).max(0.0) as u32).min(w);
    let y = ((rect.min.y * pixels_per_point).max(0.0) as u32).min(h);
    let cw = ((rect.width() * pixels_per_point) as u32).min(w - x);
    let ch = ((rect.height() * pixels_per_point) as u32).min(h - y);
    if cw == 0 || ch == 0 {
        bail!("the panel is not on screen");
    }
    Ok(image::imageops::crop_imm(image, x, y, cw, ch).to_image())
}

/// The app in an offscreen harness (created on the first frame).
pub type AppHarness = egui_kittest::Harness<'static, Option<AtmcApp>>;

/// The app in an offscreen harness, paused at step 0, writing what it makes unasked into
/// the working directory (as the window does).
pub fn harness(
    opening: impl Into<Opening>,
    size: [u32; 2],
    pixels_per_point: f32,
    backend: BackendChoice,
) -> AppHarness {
    harness_in(opening, size, pixels_per_point, backend, Folders::default())
}

/// [`harness`] writing what the app makes unasked (screenshots, sweeps) into `folders`
/// instead of the working directory.
pub fn harness_in(
    opening: impl Into<Opening>,
    size: [u32; 2],
    pixels_per_point: f32,
    backend: BackendChoice,
    folders: Folders,
) -> AppHarness {
    build(
        opening,
        size,
        pixels_per_point,
        backend,
        Appearance::default(),
        folders,
        false,
    )
}

/// [`harness`] in presentation mode or the light theme. Like the window, it runs its sweeps
/// in the working directory (`atmc-lab screenshot --tab thermo`).
pub fn harness_with(
    opening: impl Into<Opening>,
    size: [u32; 2],
    pixels_per_point: f32,
    backend: BackendChoice,
    appearance: Appearance,
) -> AppHarness {
    build(
        opening,
        size,
        pixels_per_point,
        backend,
        appearance,
        Folders::default(),
        false,
    )
}

/// [`harness_with`] writing into `folders` (tests that look at the thermodynamics view in
/// presentation mode keep its sweeps out of the working directory).
pub fn harness_with_in(
    opening: impl Into<Opening>,
    size: [u32; 2],
    pixels_per_point: f32,
    backend: BackendChoice,
    appearance: Appearance,
    folders: Folders,
) -> AppHarness {
    build(
        opening,
        size,
        pixels_per_point,
        backend,
        appearance,
        folders,
        false,
    )
}

/// The app in an offscreen harness opened as the window opens it (`atmc-lab app PRESET`):
/// asked to play, so a plain preset runs at once while a lesson waits at step 0.
pub fn harness_as_window(opening: impl Into<Opening>, size: [u32; 2]) -> AppHarness {
    build(
        opening,
        size,
        1.0,
        BackendChoice::Cpu,
        Appearance::default(),
        Folders::default(),
        true,
    )
}

fn build(
    opening: impl Into<Opening>,
    size: [u32; 2],
    pixels_per_point: f32,
    backend: BackendChoice,
    appearance: Appearance,
    folders: Folders,
    playing: bool,
) -> AppHarness {
    let opening = opening.into();
    let mut harness = egui_kittest::Harness::builder()
        .with_size(egui::vec2(size[0] as f32, size[1] as f32))
        .with_pixels_per_point(pixels_per_point)
        .with_theme(egui::Theme::Dark)
        .wgpu()
        .build_ui_state(
            move |ui, app: &mut Option<AtmcApp>| {
                let app = app.get_or_insert_with(|| {
                    let mut app =
                        AtmcApp::open(ui.ctx(), opening.clone(), backend, folders.clone(), playing);
                    app.set_reproducible(true);
                    app.set_appearance(ui.ctx(), appearance);
                    app
                });
                // kittest lays a UI out inside an 8-point margin over a transparent clear; the
                // window has neither, and its clear colour (the panel fill, see
                // `AtmcApp::clear_color`) is the app's background. Paint that background over
                // the whole picture and give the app all of it, as the window does.
                let screen = ui.ctx().content_rect();
                ui.painter().with_clip_rect(screen).rect_filled(
                    screen,
                    0.0,
                    ui.visuals().panel_fill,
                );
                let mut window = ui.new_child(egui::UiBuilder::new().max_rect(screen));
                window.set_clip_rect(screen);
                app.ui(&mut window);
            },
            None,
        );
    // Two frames: the first builds the app, the second lays out with its appearance.
    harness.step();
    harness.step();
    harness
}

/// Runs the harnessed app's shown view to `steps` and lets the UI draw the final snapshot.
/// The work is deterministic, so there is no time limit: a slow machine makes it slower,
/// never a failure. It ends when the view has settled at the step or reports why it cannot
/// run (a failed engine, unreadable data).
pub fn run_to_step(harness: &mut AppHarness, steps: u32) -> anyhow::Result<()> {
    harness
        .state_mut()
        .as_mut()
        .context("app not started")?
        .active_view_mut()
        .run_to(steps);
    loop {
        harness.step();
        let app = harness.state_mut().as_mut().context("app not started")?;
        if app.active_view_mut().settled_at(steps) {
            break;
        }
        if let Some(error) = app.active().error() {
            bail!("the view cannot run this preset: {error}");
        }
        // The worker gets the machine between frames.
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    for _ in 0..3 {
        harness.step();
    }
    // A picture of an error message must not pass for a picture of the run.
    if let Some(error) = harness
        .state()
        .as_ref()
        .context("app not started")?
        .active()
        .error()
    {
        bail!("the view cannot run this preset: {error}");
    }
    Ok(())
}

/// Writes an egui screenshot as PNG ([`picture`]).
pub fn save_color_image(
    image: &egui::ColorImage,
    crop: Option<egui::Rect>,
    pixels_per_point: f32,
    scale: u32,
    path: &Path,
) -> anyhow::Result<()> {
    save_png(&picture(image, crop, pixels_per_point, scale)?, path)
}

/// An egui screenshot as an image: optionally cropped to `crop` (in points), upscaled by an
/// integer `scale` (nearest neighbour, so pixels stay crisp on slides).
pub fn picture(
    image: &egui::ColorImage,
    crop: Option<egui::Rect>,
    pixels_per_point: f32,
    scale: u32,
) -> anyhow::Result<image::RgbaImage> {
    let [w, h] = image.size;
    let rgba: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
    let mut img =
        image::RgbaImage::from_raw(w as u32, h as u32, rgba).context("screenshot size")?;
    if let Some(r) = crop {
        img = self::crop(&img, r, pixels_per_point)?;
    }
    if scale > 1 {
        img = image::imageops::resize(
            &img,
            img.width() * scale,
            img.height() * scale,
            image::imageops::FilterType::Nearest,
        );
    }
    Ok(img)
}

/// Writes an image as PNG, creating nothing but the file, atomically (encoded in memory,
/// then [`crate::fsutil::write_atomic`]): no partial PNG at `path`.
pub fn save_png(img: &image::RgbaImage, path: &Path) -> anyhow::Result<()> {
    let bytes = png_bytes(img).with_context(|| format!("cannot write {}", path.display()))?;
    crate::fsutil::write_atomic(path, bytes)
}

/// An image encoded as PNG, in memory.
pub fn png_bytes(img: &image::RgbaImage) -> anyhow::Result<Vec<u8>> {
    let mut bytes = std::io::Cursor::new(Vec::new());
    img.write_to(&mut bytes, image::ImageFormat::Png)
        .context("cannot encode the picture as PNG")?;
    Ok(bytes.into_inner())
}
