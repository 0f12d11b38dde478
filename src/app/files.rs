//! File dialogs that never fail silently. The native dialog (rfd) needs, on Linux, a D-Bus
//! session with xdg-desktop-portal; where it cannot open, a user would otherwise click
//! "Export PNG…" and see nothing at all. Every dialog of the app goes through [`pick`]: when
//! the native dialog is unavailable it says so in the status bar and opens an in-app prompt
//! where a path can be typed, and the action goes on with that path.

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

/// A request for a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRequest {
    /// What the path is for, as the prompt's title ("Export PNG").
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

impl FileRequest {
    /// A request of `kind` titled `title`.
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
    #[cfg(target_os = "linux")]
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none()
        && !std::path::Path::new(&format!("/run/user/{}/bus", current_uid())).exists()
    {
        return Picked::Unavailable(
            "no D-Bus session: the native file dialogs need one (and xdg-desktop-portal)".into(),
        );
    }
    let mut dialog = rfd::FileDialog::new().set_title(&request.title);
    if let Some((name, extensions)) = &request.filter {
        dialog = dialog.add_filter(name, extensions);
    }
    if let Some(name) = &request.file_name {
        dialog = dialog.set_file_name(name);
    }
    if let Some(dir) = &request.directory {
        dialog = dialog.set_directory(dir);
    }
    let started = Instant::now();
    let path = match request.kind {
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
    /// Who asked (the answer is delivered under this id).
    pub id: &'static str,
    /// What was asked.
    pub request: FileRequest,
    /// Why the native dialog did not open.
    pub why: String,
    /// The path typed so far.
    pub text: String,
}

impl Prompt {
    /// A prompt for `request`, pre-filled with its suggested path.
    pub fn new(id: &'static str, request: FileRequest, why: String) -> Self {
        let dir = request
            .directory
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let text = match &request.file_name {
            Some(name) => dir.join(name),
            None => dir,
        }
        .display()
        .to_string();
        Self {
            id,
            request,
            why,
            text,
        }
    }

    /// Draws the prompt; Some(Some(path)) when confirmed, Some(None) when cancelled.
    pub fn show(&mut self, ctx: &egui::Context) -> Option<Option<PathBuf>> {
        let mut outcome = None;
        egui::Window::new(format!("{}: type a path", self.request.title))
            .collapsible(false)
            .resizable(false)
            .anchor(egui::Align2::CENTER_CENTER, egui::vec2(0.0, 0.0))
            .show(ctx, |ui| {
                ui.colored_label(egui::Color32::from_rgb(255, 170, 90), &self.why);
                ui.label(match self.request.kind {
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
