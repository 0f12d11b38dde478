//! The shell's file dialogs: each is a [`FileRequest`] that carries what its answer needs,
//! and [`AtmcApp::answer`] carries out every kind of answer, whether it came from the native
//! dialog at once or from the in-app prompt later.

use super::AtmcApp;
use super::files::{self, FileRequest};
use super::view::Status;
use std::path::{Path, PathBuf};

/// Writes a text file atomically, naming it in the error.
fn write_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    crate::fsutil::write_atomic(path, contents)
}

impl AtmcApp {
    /// Asks for a path and carries out the request once it comes (a cancelled dialog does
    /// nothing).
    pub(super) fn ask(&mut self, ctx: &egui::Context, request: FileRequest) {
        if let Some(path) = self.shell.pick(request) {
            self.answer(ctx, request, path);
        }
    }

    /// Carries out `request` with the path chosen for it.
    fn answer(&mut self, ctx: &egui::Context, request: FileRequest, path: PathBuf) {
        match request {
            // A sweep file picked as a preset opens in the Sweeps tab rather than failing.
            FileRequest::OpenPreset => self.open_file(ctx, &path),
            FileRequest::OpenSweep => self.open_sweep(ctx, &path),
            FileRequest::OpenLecture | FileRequest::OpenLectureFolder => {
                self.open_lecture(ctx, &path);
            }
            FileRequest::SavePreset => self.save_preset(&path),
            FileRequest::ExportCsv => self.export_csv(&path),
            FileRequest::ExportDraws => self.export_draws(&path),
            FileRequest::ExportPng { panel, scale } => {
                self.request_window_picture(ctx, path, panel, scale);
            }
            FileRequest::Record { panel } => self.start_recording(path, panel),
            // A view's own request: the view takes the answer when it next draws.
            FileRequest::LoadCsv
            | FileRequest::ExportDrawnCsv
            | FileRequest::DataFolder
            | FileRequest::CifarArchive
            | FileRequest::CheckpointFolder => self.shell.answer = Some((request, path)),
        }
    }

    /// Draws the path prompt (while a native dialog is unavailable) and carries out what a
    /// typed path was for.
    pub(super) fn path_prompt(&mut self, ctx: &egui::Context) {
        let Some(prompt) = &mut self.shell.prompt else {
            return;
        };
        let Some(outcome) = prompt.show(ctx) else {
            return;
        };
        let request = prompt.request;
        self.shell.prompt = None;
        if let Some(path) = outcome {
            self.answer(ctx, request, path);
        }
    }

    fn save_preset(&mut self, path: &Path) {
        let loaded = self.loaded_preset();
        let status = match self.active().preset() {
            Some(p) => {
                let p = match &loaded {
                    Some(loaded) => p.marked_modified(loaded),
                    None => p,
                };
                Status::written(path, write_file(path, &p.to_ron()))
            }
            None => Status::error("no preset saved: this view has no preset to save"),
        };
        self.report_export(status);
    }

    fn export_csv(&mut self, path: &Path) {
        let csv = self.active().series_csv().unwrap_or_default();
        self.report_export(Status::written(path, write_file(path, &csv)));
    }

    fn export_draws(&mut self, path: &Path) {
        let loaded = self.loaded_preset();
        let status = match self.active().export_draws(path, loaded.as_ref()) {
            // How to open it, where the user looks after exporting: ArviZ 0.x's from_zarr
            // refuses zarr ≥ 3, so the store is opened through xarray.
            Some(Ok(what)) => Status::ok(format!(
                "wrote {what} to {}. In Python: tree = xarray.open_datatree({:?}, \
                 engine=\"zarr\"); ArviZ 1.x takes tree as it is, ArviZ 0.x needs \
                 arviz.from_datatree(tree)",
                path.display(),
                path.display().to_string()
            )),
            Some(Err(e)) => Status::error(format!("no draws written: {e:#}")),
            None => Status::error("no draws written: this view keeps no draws"),
        };
        self.report_export(status);
    }

    /// File → Save preset…: the dialog, or the in-app prompt where there is none.
    pub fn ask_save_preset(&mut self) {
        // Saving needs no context: the answer only writes a file.
        if let Some(path) = self.shell.pick(FileRequest::SavePreset) {
            self.save_preset(&path);
        }
    }

    /// Replaces the file dialog (tests use a stand-in for a desktop without one).
    pub fn set_file_dialog(&mut self, dialog: files::Dialog) {
        self.shell.dialog = dialog;
    }

    /// The in-app path prompt, while one is open.
    pub fn path_prompt_mut(&mut self) -> Option<&mut files::Prompt> {
        self.shell.prompt.as_mut()
    }
}
