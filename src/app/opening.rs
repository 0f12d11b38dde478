//! What the app opens on and where it writes unasked: [`Opening`] (a preset, a sweep, a
//! lecture) and [`Folders`] (screenshots, sweeps).

use super::{SCREENSHOT_FOLDER, SWEEP_FOLDER, Tab};
use crate::preset::{AnyPreset, Comparison, Lecture, MlpPreset, Preset};
use std::path::{Path, PathBuf};

/// Where the app writes what it makes without asking for a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Folders {
    /// The S key's screenshots.
    pub screenshots: PathBuf,
    /// The sweeps run by the Sweeps and the Thermodynamics tabs (each in a folder of its
    /// own, resumed when the same sweep starts again).
    pub sweeps: PathBuf,
}

impl Folders {
    /// [`SCREENSHOT_FOLDER`] and [`SWEEP_FOLDER`] under `root` (tests: a scratch folder).
    pub fn under(root: &Path) -> Self {
        Self {
            screenshots: root.join(SCREENSHOT_FOLDER),
            sweeps: root.join(SWEEP_FOLDER),
        }
    }
}

impl Default for Folders {
    /// [`SCREENSHOT_FOLDER`] and [`SWEEP_FOLDER`] in the working directory.
    fn default() -> Self {
        Self::under(Path::new(""))
    }
}

/// What the app opens on: a preset in its view, or a sweep in the Sweeps tab.
#[derive(Clone, Debug)]
pub enum Opening {
    /// A preset of any kind, shown in its view.
    Preset(Box<AnyPreset>),
    /// A sweep's results (`.jsonl`) or a sweep file (`.ron`, run in the background).
    Sweep(PathBuf),
    /// A preset in a chosen tab (a 2-D preset in the thermodynamics view).
    InTab(Tab, Box<AnyPreset>),
    /// A lecture, at its first lesson.
    Lecture(Box<Lecture>),
}

impl From<AnyPreset> for Opening {
    fn from(preset: AnyPreset) -> Self {
        Opening::Preset(Box::new(preset))
    }
}

impl From<Preset> for Opening {
    fn from(preset: Preset) -> Self {
        Opening::Preset(Box::new(preset.into()))
    }
}

impl From<MlpPreset> for Opening {
    fn from(preset: MlpPreset) -> Self {
        Opening::Preset(Box::new(preset.into()))
    }
}

impl From<Comparison> for Opening {
    fn from(preset: Comparison) -> Self {
        Opening::Preset(Box::new(preset.into()))
    }
}

/// Whether a file is a sweep's results (`.jsonl`) or a sweep file (`Sweep(...)` RON) rather
/// than a preset.
pub fn is_sweep_path(path: &Path) -> bool {
    match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl") => true,
        Some("ron") => crate::fsutil::read_text(path, crate::fsutil::TEXT_FILES)
            .is_ok_and(|text| crate::preset::sweep_file::is_sweep_text(&text)),
        _ => false,
    }
}
