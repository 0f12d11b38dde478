//! Pictures of the running window: Export PNG and the S key's screenshots (one picture of
//! the window or of a panel, written when egui hands it over), and recordings (a frame each
//! time the view's step changes, written on a thread when stopped).

use super::view::Status;
use super::{AtmcApp, record, screenshot};
use egui::{Color32, RichText};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Where egui's screenshot callback leaves the picture for the next frame.
type Inbox = Arc<Mutex<Option<Arc<egui::ColorImage>>>>;

/// The pictures being taken, recorded or written.
#[derive(Default)]
pub(super) struct Capture {
    /// A picture asked for and where it goes.
    pending: Option<ScreenshotRequest>,
    inbox: Inbox,
    /// Screenshots taken with the S key so far (for their file names).
    shots: u32,
    recording: Option<LiveRecording>,
    writing: Option<Writing>,
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
    thread: std::thread::JoinHandle<anyhow::Result<()>>,
    progress: record::Progress,
    total: usize,
    path: PathBuf,
}

/// A picture of the window (or of one panel) to write to `path`.
#[derive(Clone, Debug)]
struct ScreenshotRequest {
    path: PathBuf,
    panel: Option<usize>,
    scale: u32,
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
        self.capture.pending = Some(ScreenshotRequest { path, panel, scale });
        let inbox = self.capture.inbox.clone();
        let repaint = ctx.clone();
        ctx.request_screenshot(move |image| {
            *inbox.lock().expect("screenshot inbox") = Some(image);
            repaint.request_repaint();
        });
    }

    /// Writes the picture asked for, once it has arrived.
    pub(super) fn handle_screenshot_events(&mut self, ctx: &egui::Context) {
        let image = self.capture.inbox.lock().expect("screenshot inbox").take();
        let (Some(image), Some(request)) = (image, self.capture.pending.take()) else {
            return;
        };
        let crop = request
            .panel
            .and_then(|k| self.active().panels().get(k).map(|(_, r)| *r));
        let result = screenshot::save_color_image(
            &image,
            crop,
            ctx.pixels_per_point(),
            request.scale,
            &request.path,
        );
        self.shell.status = Some(Status::written(&request.path, result));
    }

    /// A screenshot of the window into the screenshots folder, no dialog (the S key).
    pub(super) fn quick_screenshot(&mut self, ctx: &egui::Context) {
        self.capture.shots += 1;
        let name = format!(
            "{}-step{}-{}.png",
            self.tab.label().replace([' ', '+', '-'], "").to_lowercase(),
            self.active().step(),
            self.capture.shots
        );
        let folder = self.folders.screenshots.clone();
        if let Err(e) = std::fs::create_dir_all(&folder) {
            self.shell.status = Some(Status::error(format!(
                "cannot create {}: {e}",
                folder.display()
            )));
            return;
        }
        self.request_window_picture(ctx, folder.join(name), None, 1);
    }

    /// Starts recording the window (`panel` None) or one of the view's panels to `path`
    /// (`.gif`: an animated GIF; otherwise a folder of PNG frames), after checking that it can
    /// be written.
    pub fn start_recording(&mut self, path: PathBuf, panel: Option<usize>) {
        let output = record::Output::for_path(&path, 100);
        if let Err(e) = output.check() {
            self.shell.status = Some(Status::error(format!("{e:#}")));
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
            self.shell.status = Some(Status::error(
                "nothing recorded: the chains did not move (press play while recording)",
            ));
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
            self.shell.status = Some(match result {
                Ok(()) => Status::ok(format!("wrote {} ({} frames)", w.path.display(), w.total)),
                Err(e) => Status::error(format!("{e:#}")),
            });
        }
    }

    /// The recording's frame count and the writer's progress, in the status bar.
    pub(super) fn capture_status(&self, ui: &mut egui::Ui) {
        if let Some(r) = &self.capture.recording {
            ui.label(
                RichText::new(format!("● recording: {} frames", r.frames.len()))
                    .small()
                    .color(Color32::from_rgb(255, 90, 80)),
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
