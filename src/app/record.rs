//! Recordings for slides: frames of the window or of one panel, written as an animated GIF
//! (one palette for all frames, so nothing flickers) or as numbered PNG files. Writing runs
//! on its own thread with progress and cancel; the headless `atmc-lab record` command and the
//! app's File → Record share it.

use crate::fsutil::{Committed, FolderWriter, OutputKind};
use anyhow::{Context, bail};
use image::RgbaImage;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Most frames a recording keeps (about 40 seconds at 10 frames per second).
pub const MAX_FRAMES: usize = 400;

/// The kind of folder a recording's PNG frames are ([`crate::fsutil::MANIFEST`]): written
/// whole, and replacing only an earlier folder of recorded frames.
pub const FRAMES: OutputKind = OutputKind {
    name: "recorded frames",
    example: "frames",
};

/// Where and how a recording is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// An animated GIF with this delay between frames, in milliseconds.
    Gif {
        /// The file.
        path: PathBuf,
        /// Delay between frames.
        delay_ms: u32,
    },
    /// Numbered PNG files `frame-0001.png`, … in a folder written whole: a new folder, an
    /// empty one or an earlier recording's ([`FolderWriter`]).
    Frames {
        /// The folder.
        dir: PathBuf,
    },
}

impl Output {
    /// The GIF or the folder of frames, told apart by the `.gif` ending.
    pub fn for_path(path: &Path, delay_ms: u32) -> Output {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("gif"))
        {
            Output::Gif {
                path: path.to_owned(),
                delay_ms,
            }
        } else {
            Output::Frames {
                dir: path.to_owned(),
            }
        }
    }

    /// Where the recording goes.
    pub fn path(&self) -> &Path {
        match self {
            Output::Gif { path, .. } => path,
            Output::Frames { dir } => dir,
        }
    }

    /// Checks, before any frame is taken, that the output can be written: the GIF's folder
    /// exists and the file can be created, or the frames' folder may be written
    /// ([`crate::fsutil::check_folder`]). Creates nothing.
    pub fn check(&self) -> anyhow::Result<()> {
        match self {
            Output::Gif { path, .. } => {
                let dir = path
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                if !dir.is_dir() {
                    bail!(
                        "cannot write {}: no folder {}",
                        path.display(),
                        dir.display()
                    );
                }
                // The temporary file beside it is created and removed: the final path is
                // written only with the whole GIF.
                crate::fsutil::AtomicFile::create(path).map(drop)
            }
            Output::Frames { dir } => crate::fsutil::check_folder(dir, FRAMES),
        }
    }

    /// Takes the output for writing: the GIF checked, or the frames' folder checked, locked
    /// against a second recorder and begun in a temporary folder beside it. Taken before the
    /// frames are rendered, a bad or busy output is refused before any work.
    pub fn begin(&self) -> anyhow::Result<Target> {
        match self {
            Output::Gif { path, delay_ms } => {
                self.check()?;
                Ok(Target::Gif {
                    path: path.clone(),
                    delay_ms: *delay_ms,
                })
            }
            Output::Frames { dir } => Ok(Target::Frames(FolderWriter::begin(dir, FRAMES)?)),
        }
    }
}

/// An output taken for writing ([`Output::begin`]).
#[derive(Debug)]
pub enum Target {
    /// An animated GIF, written under a temporary name and renamed when complete.
    Gif {
        /// The file.
        path: PathBuf,
        /// Delay between frames, in milliseconds.
        delay_ms: u32,
    },
    /// A folder of PNG frames being written whole.
    Frames(FolderWriter),
}

/// Progress of a writer: frames written so far, and a flag to cancel it.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Frames written.
    pub done: Arc<AtomicUsize>,
    /// Set to stop writing (the partial file is removed).
    pub cancel: Arc<AtomicBool>,
}

/// Writes `frames` (all the same size) to `output` ([`Output::begin`], then [`write_to`]).
pub fn write(
    frames: &[RgbaImage],
    output: &Output,
    progress: &Progress,
) -> anyhow::Result<Committed> {
    if frames.is_empty() {
        bail!("the recording has no frames");
    }
    write_to(frames, output.begin()?, progress)
}

/// Writes `frames` (all the same size) to `target`, counting them in `progress`. Returns an
/// error when cancelled. A GIF is written atomically and a folder of frames whole
/// ([`crate::fsutil`]): a cancelled, failed or killed recording leaves no partial GIF, no
/// partial folder and no stale frame of an earlier recording at a final path.
pub fn write_to(
    frames: &[RgbaImage],
    target: Target,
    progress: &Progress,
) -> anyhow::Result<Committed> {
    if frames.is_empty() {
        bail!("the recording has no frames");
    }
    match target {
        Target::Gif { path, delay_ms } => {
            write_gif(frames, &path, delay_ms, progress).map(|()| Committed::default())
        }
        Target::Frames(folder) => write_frames(frames, folder, progress),
    }
}

fn cancelled(progress: &Progress) -> anyhow::Result<()> {
    if progress.cancel.load(Ordering::Relaxed) {
        bail!("the recording was cancelled");
    }
    Ok(())
}

fn write_frames(
    frames: &[RgbaImage],
    mut folder: FolderWriter,
    progress: &Progress,
) -> anyhow::Result<Committed> {
    for (k, frame) in frames.iter().enumerate() {
        cancelled(progress)?;
        let name = format!("frame-{:04}.png", k + 1);
        folder.write(&name, super::screenshot::png_bytes(frame)?)?;
        progress.done.store(k + 1, Ordering::Relaxed);
    }
    folder.commit()
}

/// One palette of 256 colours for the whole recording (NeuQuant trained on a sample of the
/// frames), and every frame mapped onto it through a table of 15-bit colours: fast, and the
/// colours do not flicker from frame to frame as they would with a palette per frame.
fn write_gif(
    frames: &[RgbaImage],
    path: &Path,
    delay_ms: u32,
    progress: &Progress,
) -> anyhow::Result<()> {
    let (w, h) = frames[0].dimensions();
    if w > u32::from(u16::MAX) || h > u32::from(u16::MAX) {
        bail!("a GIF frame is at most 65535 pixels wide, this one is {w}×{h}");
    }
    if frames.iter().any(|f| f.dimensions() != (w, h)) {
        bail!("the frames of a recording must all be {w}×{h}");
    }
    let palette = Palette::train(frames);
    let file = crate::fsutil::AtomicFile::create(path)?;
    let mut encoder = gif::Encoder::new(file, w as u16, h as u16, &palette.rgb)
        .with_context(|| format!("cannot write {}", path.display()))?;
    encoder.set_repeat(gif::Repeat::Infinite)?;
    for (k, frame) in frames.iter().enumerate() {
        cancelled(progress)?;
        let indices: Vec<u8> = frame.pixels().map(|p| palette.index(p.0)).collect();
        let mut f = gif::Frame::from_indexed_pixels(w as u16, h as u16, indices, None);
        // GIF delays are in hundredths of a second.
        f.delay = (delay_ms / 10).max(2) as u16;
        encoder
            .write_frame(&f)
            .with_context(|| format!("cannot write {}", path.display()))?;
        progress.done.store(k + 1, Ordering::Relaxed);
    }
    // The trailer, then the rename: only a complete GIF reaches `path`.
    encoder
        .into_inner()
        .with_context(|| format!("cannot write {}", path.display()))?
        .commit()
}

/// A 256-colour palette and a table from 15-bit colours to its nearest entry.
struct Palette {
    rgb: Vec<u8>,
    table: Vec<u8>,
}

impl Palette {
    fn train(frames: &[RgbaImage]) -> Palette {
        // About a million pixels from frames spread over the recording.
        let stride = (frames.len() / 8).max(1);
        let mut sample = Vec::new();
        for f in frames.iter().step_by(stride) {
            let step = (f.pixels().len() / 150_000).max(1);
            for p in f.pixels().step_by(step) {
                sample.extend_from_slice(&[p.0[0], p.0[1], p.0[2], 255]);
            }
        }
        let nq = color_quant::NeuQuant::new(10, 256, &sample);
        let rgb = nq.color_map_rgb();
        let colours: Vec<[i32; 3]> = rgb
            .chunks_exact(3)
            .map(|c| [c[0].into(), c[1].into(), c[2].into()])
            .collect();
        let table = (0..1u32 << 15)
            .map(|c| {
                let q = [(c >> 10) & 31, (c >> 5) & 31, c & 31].map(|v| (v * 255 / 31) as i32);
                colours
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, p)| (0..3).map(|i| (p[i] - q[i]) * (p[i] - q[i])).sum::<i32>())
                    .map_or(0, |(i, _)| i as u8)
            })
            .collect();
        Palette { rgb, table }
    }

    fn index(&self, p: [u8; 4]) -> u8 {
        let c =
            (usize::from(p[0] >> 3) << 10) | (usize::from(p[1] >> 3) << 5) | usize::from(p[2] >> 3);
        self.table[c]
    }
}

/// Counts the frames of a GIF file and gives its size (for tests and the command's report).
pub fn gif_frames(path: &Path) -> anyhow::Result<(usize, u16, u16)> {
    let file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::Indexed);
    let mut decoder = options
        .read_info(std::io::BufReader::new(file))
        .with_context(|| format!("{} is not a GIF", path.display()))?;
    let (w, h) = (decoder.width(), decoder.height());
    let mut frames = 0;
    while decoder.read_next_frame()?.is_some() {
        frames += 1;
    }
    Ok((frames, w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gif_round_trip_counts_frames() {
        let dir = std::env::temp_dir().join(format!("atmc-record-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let frames: Vec<RgbaImage> = (0..5)
            .map(|k| {
                RgbaImage::from_fn(40, 30, |x, y| {
                    image::Rgba([(x * 6) as u8, (y * 8) as u8, (k * 50) as u8, 255])
                })
            })
            .collect();
        let path = dir.join("r.gif");
        let output = Output::for_path(&path, 100);
        output.check().unwrap();
        write(&frames, &output, &Progress::default()).unwrap();
        assert_eq!(gif_frames(&path).unwrap(), (5, 40, 30));
        // PNG frames into a folder.
        let frames_dir = dir.join("frames");
        write(
            &frames,
            &Output::for_path(&frames_dir, 100),
            &Progress::default(),
        )
        .unwrap();
        assert!(frames_dir.join("frame-0005.png").is_file());
        // A shorter recording into the same folder replaces it whole: no stale frame 4 or 5.
        write(
            &frames[..3],
            &Output::for_path(&frames_dir, 100),
            &Progress::default(),
        )
        .unwrap();
        assert!(frames_dir.join("frame-0003.png").is_file());
        assert!(!frames_dir.join("frame-0004.png").exists());
        // A cancelled recording leaves the earlier one whole.
        let cancel = Progress::default();
        cancel.cancel.store(true, Ordering::Relaxed);
        assert!(write(&frames, &Output::for_path(&frames_dir, 100), &cancel).is_err());
        assert!(frames_dir.join("frame-0003.png").is_file());
        // A folder holding a user's file is refused before anything is written.
        let user = dir.join("user");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(user.join("slides.pdf"), "mine").unwrap();
        let user_output = Output::for_path(&user, 100);
        assert!(user_output.check().is_err());
        assert!(write(&frames, &user_output, &Progress::default()).is_err());
        assert_eq!(std::fs::read_dir(&user).unwrap().count(), 1);
        // Cancelled: an error, the complete GIF already at the path left as it was, and no
        // half-written GIF anywhere (a new path stays absent, no temporary file remains).
        let progress = Progress::default();
        progress.cancel.store(true, Ordering::Relaxed);
        assert!(write(&frames, &output, &progress).is_err());
        assert_eq!(gif_frames(&path).unwrap(), (5, 40, 30));
        let fresh = dir.join("cancelled.gif");
        assert!(write(&frames, &Output::for_path(&fresh, 100), &progress).is_err());
        assert!(!fresh.exists());
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.ends_with(".tmp")),
            "a temporary file was left: {names:?}"
        );
        assert!(
            Output::for_path(&dir.join("no/such/dir/x.gif"), 100)
                .check()
                .is_err()
        );
        std::fs::remove_dir_all(dir).ok();
    }
}
