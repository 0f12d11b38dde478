//! The commands that need the `gui` feature: `app` opens the window, `screenshot` and `record`
//! render the app offscreen.

use super::{Failure, in_range, load_preset, progress_bar, whole_in_range};
use crate::engine::BackendChoice;
use crate::math::ranges::{self, Range};
use std::path::PathBuf;

/// Options of `atmc-lab app`.
#[derive(Debug, clap::Args)]
pub struct AppArgs {
    /// Preset file (RON), shipped preset name, or a sweep (its merged.jsonl, or a sweep file
    /// to run in the Sweeps tab).
    #[arg(default_value = "default", conflicts_with = "lecture")]
    preset: String,
    /// Open a lecture at its first lesson: a shipped lecture's name (`atmc`), a lecture file,
    /// or a lecture folder (holding lecture.ron).
    #[arg(long, value_name = "LECTURE")]
    lecture: Option<String>,
    /// Backend of the engine.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Renderer of the window: `auto` takes wgpu on a hardware GPU and OpenGL where the only
    /// GPU is a software one (it draws this UI about twice as fast there).
    #[arg(long, value_enum, default_value = "auto")]
    renderer: Renderer,
    /// Measure the window's frame rate for SECONDS after 3 s of warm-up, print it as one
    /// JSON line with the time of each frame's phases (the app's UI, tessellation and
    /// paint, present), the renderer and the engine's steps per second, and close (a
    /// benchmark of the real window, e.g. under Xvfb).
    #[arg(long, value_name = "SECONDS", value_parser = in_range(FRAME_STATS_SECONDS))]
    frame_stats: Option<f64>,
}

/// `app --renderer`: see [`crate::app::RendererChoice`].
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Renderer {
    /// wgpu on a hardware GPU, OpenGL where the only GPU is a software one.
    Auto,
    /// OpenGL (glow).
    Glow,
    /// wgpu.
    Wgpu,
}

impl From<Renderer> for crate::app::RendererChoice {
    fn from(r: Renderer) -> Self {
        match r {
            Renderer::Auto => Self::Auto,
            Renderer::Glow => Self::Glow,
            Renderer::Wgpu => Self::Wgpu,
        }
    }
}

/// Steps between two frames of `record`: as many as a run may take.
const FRAME_EVERY: Range = Range::closed_range("steps between frames", 1.0, 4e9);

/// How long `app --frame-stats` may measure.
const FRAME_STATS_SECONDS: Range = Range::closed_range("seconds measured", 0.5, 3600.0);

/// How the app is rendered offscreen: the options `screenshot` and `record` share.
#[derive(Debug, clap::Args)]
struct RenderArgs {
    /// Steps to run: before the picture (`screenshot`), or recorded (`record`).
    #[arg(long, default_value_t = 200, value_parser = whole_in_range(ranges::STEPS))]
    steps: u32,
    /// Window size in points, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", value_name = "WIDTHxHEIGHT", value_parser = parse_size)]
    size: [u32; 2],
    /// Pixels per point (2 for slides).
    #[arg(long, default_value_t = 1.0, value_parser = in_range(SCALE))]
    scale: f64,
    /// Backend of the engine.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
    /// Presentation mode: large type and thick lines, as for a projector.
    #[arg(long)]
    presentation: bool,
    /// The light theme.
    #[arg(long)]
    light: bool,
}

/// Pixels per point of an offscreen picture.
pub(super) const SCALE: Range = Range::closed_range("pixels per point", 0.5, 4.0);

impl RenderArgs {
    /// The theme and type size asked for.
    fn appearance(&self) -> crate::app::classroom::Appearance {
        crate::app::classroom::Appearance {
            presentation: self.presentation,
            light: self.light,
        }
    }

    /// Pixels per point, checked with the size against the largest texture.
    fn checked_scale(&self) -> Result<f32, Failure> {
        let scale = self.scale as f32;
        crate::app::screenshot::check_picture_size(self.size, scale)
            .map_err(|e| Failure::usage(format!("{e:#}")))?;
        Ok(scale)
    }
}

/// Options of `atmc-lab screenshot`.
#[derive(Debug, clap::Args)]
pub struct ScreenshotArgs {
    /// Preset file (RON), shipped preset name, or a sweep's merged.jsonl (the Sweeps tab).
    preset: String,
    /// Output PNG file.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    render: RenderArgs,
    /// Show the preset in this tab instead of its own (e.g. `thermo`: a 2-D preset's
    /// learning-rate sweep, run to the end before the picture).
    #[arg(long)]
    tab: Option<String>,
}

/// Options of `atmc-lab record`.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// Preset file (RON) or shipped preset name.
    preset: String,
    /// Output: FILE.gif for an animated GIF, anything else is a folder of PNG frames.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    render: RenderArgs,
    /// Steps between two frames.
    #[arg(long, default_value_t = 10, value_parser = whole_in_range(FRAME_EVERY))]
    every: u32,
    /// Record one panel only, by its label in File → Export PNG (e.g. "θ₁–θ₂ panel").
    #[arg(long)]
    panel: Option<String>,
    /// Milliseconds between two frames of the GIF.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(20..=10_000))]
    delay_ms: u32,
}

/// `atmc-lab app` (and `atmc-lab` without a command: `args` is `None`).
pub fn open_app(args: Option<&AppArgs>) -> Result<(), Failure> {
    let (preset, backend, renderer, frame_stats) = args.map_or(
        (
            "default",
            BackendChoice::Auto,
            crate::app::RendererChoice::Auto,
            None,
        ),
        |a| {
            (
                a.preset.as_str(),
                a.backend,
                a.renderer.into(),
                a.frame_stats,
            )
        },
    );
    let opening = match args.and_then(|a| a.lecture.as_deref()) {
        Some(lecture) => crate::app::Opening::Lecture(Box::new(
            crate::preset::Lecture::load(lecture).map_err(|e| Failure::usage(e.to_string()))?,
        )),
        None => load_opening(preset)?,
    };
    crate::app::run_native(opening, backend, renderer, frame_stats).map_err(|e| {
        Failure::runtime(format!(
            "{e:#}\n(no display? run under `xvfb-run -a atmc-lab`, or use `atmc-lab run` headless)"
        ))
    })
}

/// A preset (see [`load_preset`]) or a sweep: its results (`.jsonl`) or a sweep file, checked
/// before the window opens.
fn load_opening(path: &str) -> Result<crate::app::Opening, Failure> {
    let file = std::path::Path::new(path);
    if crate::app::is_sweep_path(file) {
        if file.extension().and_then(|e| e.to_str()) == Some("jsonl") {
            crate::sweep::read_merged(file).map_err(|e| Failure::usage(format!("{e:#}")))?;
        } else {
            crate::preset::sweep_file::Sweep::load(file)
                .map_err(|e| Failure::usage(e.to_string()))?;
        }
        return Ok(crate::app::Opening::Sweep(file.to_owned()));
    }
    load_preset(path).map(crate::app::Opening::from)
}

/// The value parser of `--size`: WIDTHxHEIGHT, each side in [200, 8192].
pub(super) fn parse_size(text: &str) -> Result<[u32; 2], String> {
    let bad = || format!("--size '{text}': expected WIDTHxHEIGHT, e.g. 1280x720");
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    if !(200..=8192).contains(&w) || !(200..=8192).contains(&h) {
        return Err(format!("--size {w}x{h}: each side must be in [200, 8192]"));
    }
    Ok([w, h])
}

/// Checks before any rendering that `--out` can be written as a file: its folder exists, it
/// is not a folder itself, and it can be opened for writing. An existing file is opened
/// without being changed; a new one is created and removed at once, so that a failure later
/// leaves nothing behind. Anything else is bad input (exit 2), found before the work.
fn check_output_file(out: &std::path::Path) -> Result<(), Failure> {
    let refuse = |why: String| Failure::usage(format!("--out {}: {why}", out.display()));
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        return Err(refuse(format!("no folder {}", parent.display())));
    }
    if out.is_dir() {
        return Err(refuse("a folder, not a file".into()));
    }
    let existed = out.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(out)
        .map_err(|e| refuse(format!("cannot write it: {e}")))?;
    if !existed {
        std::fs::remove_file(out).map_err(|e| refuse(format!("cannot write it: {e}")))?;
    }
    Ok(())
}

/// `atmc-lab screenshot`.
pub fn screenshot(args: &ScreenshotArgs) -> Result<(), Failure> {
    let mut opening = load_opening(&args.preset)?;
    if let Some(name) = &args.tab {
        let tab = crate::app::Tab::named(name).ok_or_else(|| {
            Failure::usage(format!(
                "--tab {name}: one of posterior, compare, mlp, training, sweep, thermo"
            ))
        })?;
        let crate::app::Opening::Preset(preset) = opening else {
            return Err(Failure::usage("--tab takes a preset, not a sweep"));
        };
        opening = crate::app::Opening::InTab(tab, preset);
    }
    let render = &args.render;
    let scale = render.checked_scale()?;
    check_output_file(&args.out)?;
    let image = crate::app::screenshot::render_offscreen(
        opening,
        render.steps,
        render.size,
        scale,
        render.backend,
        render.appearance(),
    )?;
    crate::app::screenshot::save_png(&image, &args.out)?;
    note!(
        "wrote {} ({}×{} pixels, step {})",
        args.out.display(),
        image.width(),
        image.height(),
        render.steps
    );
    Ok(())
}

/// `atmc-lab record`.
pub fn record(args: &RecordArgs) -> Result<(), Failure> {
    use crate::app::record::{MAX_FRAMES, Output, Progress, gif_frames, write_to};
    let preset = load_preset(&args.preset)?;
    let render = &args.render;
    let scale = render.checked_scale()?;
    if args.every == 0 || render.steps == 0 {
        return Err(Failure::usage("--steps and --every must be at least 1"));
    }
    let frames = render.steps.div_ceil(args.every) as usize;
    if frames > MAX_FRAMES {
        return Err(Failure::usage(format!(
            "--steps {} --every {} makes {frames} frames: at most {MAX_FRAMES} (raise --every)",
            render.steps, args.every
        )));
    }
    let output = Output::for_path(&args.out, args.delay_ms);
    // Taken before any frame is rendered. A folder of frames is this recording's for its
    // lifetime (locked, written into a temporary folder beside it, moved into place whole); a
    // GIF needs no lock: each recorder writes its own temporary file and only a complete GIF
    // is renamed to the final path.
    let target = output
        .begin()
        .map_err(|e| Failure::usage(format!("{e:#}")))?;
    let bar = progress_bar(frames as u64, "frames", "recording");
    let images = crate::app::screenshot::record_offscreen(
        preset,
        render.steps,
        args.every,
        render.size,
        scale,
        args.panel.as_deref(),
        render.backend,
        render.appearance(),
        &mut |k| bar.set_position(k as u64),
    )
    .map_err(|e| {
        if e.is::<crate::app::screenshot::UnknownPanel>() {
            Failure::usage(format!("{e:#}"))
        } else {
            Failure::from(e)
        }
    })?;
    bar.finish_and_clear();
    let committed = write_to(&images, target, &Progress::default())?;
    let (w, h) = images[0].dimensions();
    match &output {
        Output::Gif { path, .. } => {
            let (n, _, _) = gif_frames(path)?;
            note!("wrote {} ({n} frames of {w}×{h} pixels)", path.display());
        }
        Output::Frames { dir } => note!(
            "wrote {} frames of {w}×{h} pixels into {}",
            images.len(),
            dir.display()
        ),
    }
    if let Some(notice) = committed.notice() {
        note!("note: {notice}");
    }
    Ok(())
}
