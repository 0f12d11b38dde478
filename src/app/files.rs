//! File dialogs that never fail silently. The native dialog (rfd) needs, on Linux, a D-Bus
//! session with xdg-desktop-portal; where it cannot open, a user would otherwise click
//! "Export PNG…" and see nothing at all. Every dialog of the app is a [`FileRequest`] and goes
//! through [`Shell::pick`](super::view::Shell::pick): when the native dialog is unavailable
//! it says so in the status bar and opens an in-app prompt where a path can be typed, and
//! the request is carried out with that path.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a dialog picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickKind {
    /// An existing file.
    Open,
    /// A file to write.
    Save,
    /// A folder.
    Folder,
}

/// What a path is asked for, with what the asker needs to carry out the answer. Every
/// dialog of the app is one of these: the shell carries out its own when the path comes
/// back (at once from the native dialog, or later from the in-app prompt), and hands a
/// view's own back to the view shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRequest {
    /// File → Open preset (a sweep file picked here opens in the Sweeps tab).
    OpenPreset,
    /// File → Open sweep, or the Sweeps tab's open button: results or a sweep file.
    OpenSweep,
    /// File → Open lecture: a lecture file.
    OpenLecture,
    /// File → Open lecture folder: a folder holding `lecture.ron`.
    OpenLectureFolder,
    /// File → Save preset.
    SavePreset,
    /// File → Export time series (CSV).
    ExportCsv,
    /// File → Export draws (a Zarr folder ArviZ opens).
    ExportDraws,
    /// File → Export PNG of the window (`panel` None) or of one of the view's panels,
    /// upscaled `scale` times.
    ExportPng {
        /// The view's panel, by its index in [`super::view::View::panels`].
        panel: Option<usize>,
        /// Integer upscaling.
        scale: u32,
    },
    /// File → Record the window (`panel` None) or one of the view's panels.
    Record {
        /// The view's panel, by its index in [`super::view::View::panels`].
        panel: Option<usize>,
    },
    /// The MLP view's data set from a CSV file (the view takes the answer).
    LoadCsv,
    /// The MLP view's drawn points written as a CSV file (the view takes the answer).
    ExportDrawnCsv,
    /// The training view's data folder (the view takes the answer).
    DataFolder,
    /// The training view's CIFAR-10 archive (the view takes the answer).
    CifarArchive,
    /// The training view's checkpoint folder (the view takes the answer).
    CheckpointFolder,
}

impl FileRequest {
    /// The dialog that asks for this path.
    pub fn dialog(self) -> DialogSpec {
        use PickKind::{Folder, Open, Save};
        match self {
            FileRequest::OpenPreset => DialogSpec::new("Open preset", Open)
                .filter("atmc-lab preset", &["ron"])
                .directory("presets"),
            FileRequest::OpenLecture => DialogSpec::new("Open lecture", Open)
                .filter("atmc-lab lecture", &["ron"])
                .directory("presets/lectures"),
            FileRequest::OpenLectureFolder => DialogSpec::new("Open lecture folder", Folder),
            FileRequest::OpenSweep => DialogSpec::new("Open sweep", Open)
                .filter("sweep results or sweep file", &["jsonl", "ron"]),
            FileRequest::SavePreset => DialogSpec::new("Save preset", Save)
                .filter("atmc-lab preset", &["ron"])
                .file_name("my-preset.ron"),
            FileRequest::ExportCsv => DialogSpec::new("Export time series", Save)
                .filter("CSV", &["csv"])
                .file_name("atmc-lab-series.csv"),
            FileRequest::ExportDraws => {
                DialogSpec::new("Export draws", Save).file_name("atmc-lab-draws.zarr")
            }
            FileRequest::ExportPng { .. } => DialogSpec::new("Export PNG", Save)
                .filter("PNG", &["png"])
                .file_name("atmc-lab.png"),
            FileRequest::Record { .. } => DialogSpec::new("Record", Save)
                .filter("GIF", &["gif"])
                .file_name("atmc-lab.gif"),
            FileRequest::LoadCsv => {
                DialogSpec::new("Load CSV", Open).filter("CSV", &["csv", "txt", "tsv"])
            }
            FileRequest::ExportDrawnCsv => DialogSpec::new("Export drawn points", Save)
                .filter("CSV", &["csv"])
                .file_name("drawn-points.csv"),
            FileRequest::DataFolder => DialogSpec::new("Data folder", Folder),
            FileRequest::CifarArchive => {
                DialogSpec::new("CIFAR-10 archive", Open).filter("tar.gz", &["gz", "tgz"])
            }
            FileRequest::CheckpointFolder => DialogSpec::new("Checkpoint folder", Folder),
        }
    }
}

/// What a dialog looks like: its title, what it picks, its filter and where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DialogSpec {
    /// What the path is for, as the dialog's and the prompt's title ("Export PNG").
    pub title: String,
    /// File, file to write, or folder.
    pub kind: PickKind,
    /// Name of a filter and its extensions.
    pub filter: Option<(String, Vec<String>)>,
    /// The suggested file name (Save).
    pub file_name: Option<String>,
    /// The folder the dialog opens in.
    pub directory: Option<PathBuf>,
}

impl DialogSpec {
    /// A dialog of `kind` titled `title`.
    pub fn new(title: &str, kind: PickKind) -> Self {
        Self {
            title: title.to_owned(),
            kind,
            filter: None,
            file_name: None,
            directory: None,
        }
    }

    /// With a filter.
    pub fn filter(mut self, name: &str, extensions: &[&str]) -> Self {
        self.filter = Some((
            name.to_owned(),
            extensions.iter().map(|e| (*e).to_owned()).collect(),
        ));
        self
    }

    /// With a suggested file name.
    pub fn file_name(mut self, name: &str) -> Self {
        self.file_name = Some(name.to_owned());
        self
    }

    /// Opening in a folder.
    pub fn directory(mut self, dir: &str) -> Self {
        self.directory = Some(PathBuf::from(dir));
        self
    }
}

/// What came back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Picked {
    /// A path.
    Path(PathBuf),
    /// The user closed the dialog.
    Cancelled,
    /// No dialog could open, and why.
    Unavailable(String),
}

/// A dialog implementation: the native one, or a stand-in (tests).
pub type Dialog = fn(&FileRequest) -> Picked;

/// A native dialog that returns within this time without a path did not open (a person
/// takes longer to cancel one).
const TOO_FAST: Duration = Duration::from_millis(250);

/// The native dialog (rfd).
pub fn native(request: &FileRequest) -> Picked {
    let spec = request.dialog();
    #[cfg(target_os = "linux")]
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none()
        && !std::path::Path::new(&format!("/run/user/{}/bus", current_uid())).exists()
    {
        return Picked::Unavailable(
            "no D-Bus session: the native file dialogs need one (and xdg-desktop-portal)".into(),
        );
    }
    let mut dialog = rfd::FileDialog::new().set_title(&spec.title);
    if let Some((name, extensions)) = &spec.filter {
        dialog = dialog.add_filter(name, extensions);
    }
    if let Some(name) = &spec.file_name {
        dialog = dialog.set_file_name(name);
    }
    if let Some(dir) = &spec.directory {
        dialog = dialog.set_directory(dir);
    }
    let started = Instant::now();
    let path = match spec.kind {
        PickKind::Open => dialog.pick_file(),
        PickKind::Save => dialog.save_file(),
        PickKind::Folder => dialog.pick_folder(),
    };
    match path {
        Some(p) => Picked::Path(p),
        None if started.elapsed() < TOO_FAST => Picked::Unavailable(
            "the native file dialog did not open (on Linux it needs xdg-desktop-portal)".into(),
        ),
        None => Picked::Cancelled,
    }
}

/// The user id, from the owner of /proc/self (no libc call needed).
#[cfg(target_os = "linux")]
fn current_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map_or(0, |m| m.uid())
}

/// An in-app prompt for a path, shown when the native dialog is unavailable.
#[derive(Clone, Debug)]
pub struct Prompt {
    /// What was asked (the answer goes where the request says).
    pub request: FileRequest,
    /// The dialog that could not open.
    pub spec: DialogSpec,
    /// Why the native dialog did not open.
    pub why: String,
    /// The path typed so far.
    pub text: String,
}

impl Prompt {
    /// A prompt for `request`, pre-filled with its suggested path.
    pub fn new(request: FileRequest, why: String) -> Self {
        let spec = request.dialog();
        let dir = spec
            .directory
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let text = match &spec.file_name {
            Some(name) => dir.join(name),
            None => dir,
        }
        .display()
        .to_string();
        Self {
            request,
            spec,
            why,
            text,
        }
    }

    /// Draws the prompt; Some(Some(path)) when confirmed, Some(None) when cancelled.
    pub fn show(&mut self, ctx: &egui::Context) -> Option<Option<PathBuf>> {
        let mut outcome = None;
        egui::Window::new(format!("{}: type a path", self.spec.title))
            .collapsible(false)
            .resizable(false)
            .anchor(egui::Align2::CENTER_CENTER, egui::vec2(0.0, 0.0))
            .show(ctx, |ui| {
                ui.colored_label(super::palette::warning(ui.visuals()), &self.why);
                ui.label(match self.spec.kind {
                    PickKind::Open => "The file to open:",
                    PickKind::Save => "The file to write:",
                    PickKind::Folder => "The folder:",
                });
                let edit = ui.add(
                    egui::TextEdit::singleline(&mut self.text)
                        .desired_width(420.0)
                        .id_salt("path prompt"),
                );
                let enter = edit.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                ui.horizontal(|ui| {
                    if ui.button("OK").clicked() || enter {
                        outcome = Some(Some(PathBuf::from(self.text.trim())));
                    }
                    if ui.button("Cancel").clicked() {
                        outcome = Some(None);
                    }
                });
            });
        outcome
    }
}
