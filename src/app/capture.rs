//! Pictures of the running window: Export PNG and the S key's screenshots (one picture of
//! the window or of a panel, written when egui hands it over), and recordings (a frame each
//! time the view's step changes, written on a thread when stopped).
//!
//! Every export ends in a [`Notice`] over the window (and the status bar): where it wrote,
//! or why it could not. A picture asked for waits for the window's pixels, which come back
//! one or more frames later; each request keeps its own inbox, so a frame drawn before the
//! pixels arrive (or a second S pressed meanwhile) cannot lose it, and a picture the window
//! never delivers is reported after [`PICTURE_TIMEOUT`] seconds.

use super::view::Status;
use super::{AtmcApp, record, screenshot};
use egui::{Color32, RichText};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Where egui's screenshot callback leaves the picture for the next frame.
type Inbox = Arc<Mutex<Option<Arc<egui::ColorImage>>>>;

/// Seconds a picture may take to arrive before the notice says it never came.
const PICTURE_TIMEOUT: f64 = 10.0;

/// Seconds a notice of a written file stays up (a failure stays until closed).
const NOTICE_SECONDS: f64 = 8.0;

/// The pictures being taken, recorded or written.
#[derive(Default)]
pub(super) struct Capture {
    /// Pictures asked for, each with where it goes and the inbox its pixels arrive in.
    pending: Vec<ScreenshotRequest>,
    recording: Option<LiveRecording>,
    writing: Option<Writing>,
    /// What the latest export did, shown over the window.
    notice: Option<Notice>,
}

/// Whether the notice shown is a failure (it stays until closed).
fn notice_is_error(notice: &Option<Notice>) -> bool {
    notice.as_ref().is_some_and(|n| n.status.error)
}

/// A recording in progress: a frame each time the view's step changes.
struct LiveRecording {
    output: record::Output,
    panel: Option<usize>,
    frames: Vec<image::RgbaImage>,
    last_step: Option<u32>,
    inbox: Inbox,
    waiting: bool,
}

/// A finished recording being written on its own thread.
struct Writing {
    thread: std::thread::JoinHandle<anyhow::Result<crate::fsutil::Committed>>,
    progress: record::Progress,
    total: usize,
    path: PathBuf,
}

/// Where a picture goes.
enum PictureTarget {
    /// This file (chosen in a dialog, which asked before replacing it).
    File(PathBuf),
    /// A new file in `folder`, `STEM-1.png` or the first of `STEM-2.png`, … not taken yet
    /// (the S key: one file per press, never replacing one).
    NewIn { folder: PathBuf, stem: String },
}

impl PictureTarget {
    /// The path for messages (for a new file, the first name it may get).
    fn shown(&self) -> PathBuf {
        match self {
            PictureTarget::File(path) => path.clone(),
            PictureTarget::NewIn { folder, stem } => folder.join(shot_name(stem, 1)),
        }
    }
}

/// The `k`-th name the S key tries for a screenshot named `stem`.
fn shot_name(stem: &str, k: u32) -> String {
    format!("{stem}-{k}.png")
}

/// A picture of the window (or of one panel) to write to `target`.
struct ScreenshotRequest {
    target: PictureTarget,
    panel: Option<usize>,
    scale: u32,
    /// Where egui's callback leaves this picture's pixels.
    inbox: Inbox,
    /// When it was asked for (egui's clock, seconds).
    asked_at: f64,
}

/// What an export did, shown over the window where a lecturer sees it (the status bar's
/// small type is not read from the back of a room).
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    /// Where it wrote, or why it could not.
    pub status: Status,
    /// When it was first shown (egui's clock), set when first drawn.
    shown_at: Option<f64>,
}

impl AtmcApp {
    /// Asks for a picture of the window (or of one of the view's panels) and writes it to
    /// `path` when it arrives.
    pub(super) fn request_window_picture(
        &mut self,
        ctx: &egui::Context,
        path: PathBuf,
        panel: Option<usize>,
        scale: u32,
    ) {
        self.request_picture(ctx, PictureTarget::File(path), panel, scale);
    }

    fn request_picture(
        &mut self,
        ctx: &egui::Context,
        target: PictureTarget,
        panel: Option<usize>,
        scale: u32,
    ) {
        let inbox = Inbox::default();
        let arrived = inbox.clone();
        let repaint = ctx.clone();
        ctx.request_screenshot(move |image| {
            *arrived.lock().expect("screenshot inbox") = Some(image);
            repaint.request_repaint();
        });
        self.capture.pending.push(ScreenshotRequest {
            target,
            panel,
            scale,
            inbox,
            asked_at: ctx.input(|i| i.time),
        });
        self.shell.status = Some(Status::ok("taking a picture of the window…"));
    }

    /// Writes each picture asked for whose pixels have arrived (the others wait; one that
    /// never comes is reported).
    pub(super) fn handle_screenshot_events(&mut self, ctx: &egui::Context) {
        if self.capture.pending.is_empty() {
            return;
        }
        let now = ctx.input(|i| i.time);
        for request in std::mem::take(&mut self.capture.pending) {
            let image = request.inbox.lock().expect("screenshot inbox").take();
            let Some(image) = image else {
                if now - request.asked_at > PICTURE_TIMEOUT {
                    self.report_export(Status::error(format!(
                        "no picture written to {}: the window gave no pixels within {} s \
                         (its renderer may not support screenshots; `atmc-lab screenshot` \
                         renders offscreen)",
                        request.target.shown().display(),
                        PICTURE_TIMEOUT
                    )));
                } else {
                    self.capture.pending.push(request);
                    ctx.request_repaint_after(std::time::Duration::from_millis(100));
                }
                continue;
            };
            let crop = request
                .panel
                .and_then(|k| self.active().panels().get(k).map(|(_, r)| *r));
            let picture = screenshot::picture(&image, crop, ctx.pixels_per_point(), request.scale);
            let status = match request.target {
                PictureTarget::File(path) => {
                    Status::written(&path, picture.and_then(|p| screenshot::save_png(&p, &path)))
                }
                PictureTarget::NewIn { folder, stem } => {
                    let written =
                        picture
                            .and_then(|p| screenshot::png_bytes(&p))
                            .and_then(|bytes| {
                                crate::fsutil::write_new(&folder, |k| shot_name(&stem, k), bytes)
                            });
                    match written {
                        Ok(path) => Status::written(&path, Ok(())),
                        Err(e) => Status::written(&folder.join(shot_name(&stem, 1)), Err(e)),
                    }
                }
            };
            self.report_export(status);
        }
    }

    /// Says what an export did: in the status bar, in a notice over the window, and on
    /// stderr (where a script that drives the window reads it).
    pub(super) fn report_export(&mut self, status: Status) {
        note!(
            "atmc-lab: {}{}",
            if status.error { "error: " } else { "" },
            status.text
        );
        self.shell.status = Some(status.clone());
        self.capture.notice = Some(Notice {
            status,
            shown_at: None,
        });
    }

    /// The latest export's notice, while it is up.
    pub fn export_notice(&self) -> Option<&Status> {
        self.capture.notice.as_ref().map(|n| &n.status)
    }

    /// Draws the export notice at the bottom of the window in body type: green with the
    /// path written, red with why not. A success fades after [`NOTICE_SECONDS`]; a failure
    /// stays until closed.
    pub(super) fn notice_ui(&mut self, ctx: &egui::Context) {
        // Not over a picture being taken: its pixels are this frame's.
        if !self.capture.pending.is_empty() {
            return;
        }
        let Some(notice) = &mut self.capture.notice else {
            return;
        };
        let now = ctx.input(|i| i.time);
        let shown_at = *notice.shown_at.get_or_insert(now);
        if !notice.status.error && now - shown_at > NOTICE_SECONDS {
            self.capture.notice = None;
            return;
        }
        let (border, title) = if notice.status.error {
            (Color32::from_rgb(230, 80, 70), "Export failed")
        } else {
            (Color32::from_rgb(90, 190, 110), "Exported")
        };
        let text = notice.status.text.clone();
        let mut close = false;
        egui::Area::new(egui::Id::unique("export notice"))
            .order(egui::Order::Foreground)
            .anchor(egui::Align2::CENTER_BOTTOM, [0.0, -44.0])
            .interactable(true)
            .show(ctx, |ui| {
                egui::Frame::popup(ui.style())
                    .stroke(egui::Stroke::new(2.0, border))
                    .inner_margin(10.0)
                    .show(ui, |ui| {
                        ui.set_max_width((ctx.content_rect().width() - 80.0).max(200.0));
                        ui.horizontal(|ui| {
                            ui.label(RichText::new(title).strong().color(border));
                            ui.add(egui::Label::new(RichText::new(text)).wrap());
                            close = ui.button("×").on_hover_text("close").clicked();
                        });
                    });
            });
        if close {
            self.capture.notice = None;
        } else if !notice_is_error(&self.capture.notice) {
            ctx.request_repaint_after(std::time::Duration::from_millis(250));
        }
    }

    /// A screenshot of the window into the screenshots folder, no dialog (the S key): a new
    /// file each press, `TAB-stepN-K.png` with the first K not taken (no earlier screenshot,
    /// of this session or another, is replaced).
    pub(super) fn quick_screenshot(&mut self, ctx: &egui::Context) {
        let stem = format!(
            "{}-step{}",
            self.tab.label().replace([' ', '+', '-'], "").to_lowercase(),
            self.active().step(),
        );
        // Named in full in the notice: the lecturer learns where it is.
        let folder = self.folders.screenshots.clone();
        let folder = std::path::absolute(&folder).unwrap_or(folder);
        if let Err(e) = std::fs::create_dir_all(&folder) {
            self.report_export(Status::error(format!(
                "no screenshot: cannot create the folder {}: {e}",
                folder.display()
            )));
            return;
        }
        self.request_picture(ctx, PictureTarget::NewIn { folder, stem }, None, 1);
    }

    /// Starts recording the window (`panel` None) or one of the view's panels to `path`
    /// (`.gif`: an animated GIF; otherwise a folder of PNG frames), after checking that it can
    /// be written.
    pub fn start_recording(&mut self, path: PathBuf, panel: Option<usize>) {
        let output = record::Output::for_path(&path, 100);
        if let Err(e) = output.check() {
            self.report_export(Status::error(format!("cannot record: {e:#}")));
            return;
        }
        self.capture.recording = Some(LiveRecording {
            output,
            panel,
            frames: Vec::new(),
            last_step: None,
            inbox: Default::default(),
            waiting: false,
        });
        self.shell.status = Some(Status::ok(format!("recording to {}", path.display())));
    }

    /// Stops recording and writes the frames on a thread.
    pub fn stop_recording(&mut self) {
        let Some(r) = self.capture.recording.take() else {
            return;
        };
        if r.frames.is_empty() {
            self.report_export(Status::error(format!(
                "nothing recorded to {}: the chains did not move (press play while recording)",
                r.output.path().display()
            )));
            return;
        }
        let progress = record::Progress::default();
        let total = r.frames.len();
        let path = r.output.path().to_owned();
        let worker_progress = progress.clone();
        let thread =
            std::thread::spawn(move || record::write(&r.frames, &r.output, &worker_progress));
        self.capture.writing = Some(Writing {
            thread,
            progress,
            total,
            path,
        });
    }

    /// Whether a recording is running, with its frame count.
    pub fn recording_frames(&self) -> Option<usize> {
        self.capture.recording.as_ref().map(|r| r.frames.len())
    }

    /// Takes a frame of the recording when the view has moved on.
    pub(super) fn record_frame(&mut self, ctx: &egui::Context) {
        let step = self.active().step();
        let crop = self
            .capture
            .recording
            .as_ref()
            .and_then(|r| r.panel)
            .and_then(|k| self.active().panels().get(k).map(|(_, rect)| *rect));
        let Some(r) = &mut self.capture.recording else {
            return;
        };
        let arrived = r.inbox.lock().expect("record inbox").take();
        if let Some(image) = arrived {
            r.waiting = false;
            let [w, h] = image.size;
            let rgba: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
            if let Some(mut frame) = image::RgbaImage::from_raw(w as u32, h as u32, rgba) {
                if let Some(rect) = crop {
                    let ppp = ctx.pixels_per_point();
                    let x = ((rect.min.x * ppp).max(0.0) as u32).min(frame.width());
                    let y = ((rect.min.y * ppp).max(0.0) as u32).min(frame.height());
                    let cw = ((rect.width() * ppp) as u32).min(frame.width() - x).max(1);
                    let ch = ((rect.height() * ppp) as u32)
                        .min(frame.height() - y)
                        .max(1);
                    frame = image::imageops::crop_imm(&frame, x, y, cw, ch).to_image();
                }
                // A resized window changes the frame size: keep the first size.
                if r.frames
                    .first()
                    .is_none_or(|f| f.dimensions() == frame.dimensions())
                {
                    r.frames.push(frame);
                }
            }
            if r.frames.len() >= record::MAX_FRAMES {
                self.stop_recording();
                return;
            }
        }
        if !r.waiting && r.last_step != Some(step) {
            r.last_step = Some(step);
            r.waiting = true;
            let inbox = r.inbox.clone();
            let repaint = ctx.clone();
            ctx.request_screenshot(move |image| {
                *inbox.lock().expect("record inbox") = Some(image);
                repaint.request_repaint();
            });
        }
    }

    /// Reports a finished writer.
    pub(super) fn poll_writer(&mut self) {
        if self
            .capture
            .writing
            .as_ref()
            .is_some_and(|w| w.thread.is_finished())
        {
            let w = self.capture.writing.take().expect("checked");
            let result = w
                .thread
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the recording writer failed")));
            self.report_export(match result {
                Ok(committed) => Status::ok(format!(
                    "wrote {} ({} frames){}",
                    w.path.display(),
                    w.total,
                    committed
                        .notice()
                        .map(|n| format!("; {n}"))
                        .unwrap_or_default()
                )),
                Err(e) => Status::error(format!(
                    "the recording was not written to {}: {e:#}",
                    w.path.display()
                )),
            });
        }
    }

    /// The recording's frame count and the writer's progress, in the status bar.
    pub(super) fn capture_status(&self, ui: &mut egui::Ui) {
        if let Some(r) = &self.capture.recording {
            ui.label(
                RichText::new(format!("● recording: {} frames", r.frames.len()))
                    .small()
                    .color(super::palette::error(ui.visuals())),
            );
        }
        if let Some(w) = &self.capture.writing {
            let done = w.progress.done.load(Ordering::Relaxed);
            ui.add(
                egui::ProgressBar::new(done as f32 / w.total.max(1) as f32)
                    .desired_width(160.0)
                    .text(format!("writing {done}/{} frames", w.total)),
            );
            if ui.small_button("cancel").clicked() {
                w.progress.cancel.store(true, Ordering::Relaxed);
            }
            ui.ctx()
                .request_repaint_after(std::time::Duration::from_millis(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shot_name;

    /// Two presses of S where an earlier session left `posterior-step40-1.png`: two new
    /// files, the earlier one as it was.
    #[test]
    fn the_s_key_never_replaces_a_screenshot() {
        let dir = std::env::temp_dir().join(format!("atmc-capture-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let stem = "posterior-step40";
        std::fs::write(dir.join(shot_name(stem, 1)), "earlier").unwrap();
        let press =
            |bytes: &str| crate::fsutil::write_new(&dir, |k| shot_name(stem, k), bytes).unwrap();
        assert_eq!(press("a"), dir.join("posterior-step40-2.png"));
        assert_eq!(press("b"), dir.join("posterior-step40-3.png"));
        let read = |k| std::fs::read_to_string(dir.join(shot_name(stem, k))).unwrap();
        assert_eq!(
            (read(1), read(2), read(3)),
            ("earlier".into(), "a".into(), "b".into())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
