//! The desktop window: eframe drives [`AtmcApp`], with the wgpu renderer or, when that
//! cannot start, OpenGL.

use super::{AtmcApp, Folders, Opening, frame_clock};
use crate::engine::BackendChoice;

impl eframe::App for AtmcApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        AtmcApp::ui(self, ui);
        if let Some(report) = self
            .frame_clock
            .as_mut()
            .and_then(frame_clock::FrameClock::tick)
        {
            println!("{report}");
            self.frame_clock = None;
            ui.ctx().send_viewport_cmd(egui::ViewportCommand::Close);
        }
        if self.frame_clock.is_some() {
            ui.ctx().request_repaint();
        }
    }

    fn clear_color(&self, visuals: &egui::Visuals) -> [f32; 4] {
        // The panels are transparent: the clear colour is their background.
        visuals.panel_fill.to_normalized_gamma_f32()
    }
}

/// Opens the desktop app on `preset`. Tries the wgpu renderer first and falls back to glow
/// (OpenGL) when it cannot start.
/// `frame_stats`: measure the frame rate for that many seconds, print it and close.
pub fn run_native(
    opening: Opening,
    backend: BackendChoice,
    frame_stats: Option<f64>,
) -> anyhow::Result<()> {
    // Drawn by tests/it/icon.rs, which also checks that it decodes.
    let icon = std::sync::Arc::new(
        eframe::icon_data::from_png_bytes(include_bytes!("../../assets/icon.png"))
            .expect("assets/icon.png is a PNG"),
    );
    let options = |renderer| eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("atmc-lab")
            // The window's class (X11) and app id (Wayland): the desktop entry
            // assets/atmc-lab.desktop matches it.
            .with_app_id("atmc-lab")
            .with_icon(icon.clone())
            .with_inner_size([1280.0, 720.0])
            .with_min_inner_size([960.0, 600.0]),
        renderer,
        ..Default::default()
    };
    let make = |opening: Opening| -> eframe::AppCreator<'static> {
        Box::new(move |cc| {
            cc.egui_ctx.set_visuals(egui::Visuals::dark());
            // Screenshots and sweeps go into the working directory, where the app started.
            let mut app = AtmcApp::open(&cc.egui_ctx, opening, backend, Folders::default(), true);
            app.frame_clock = frame_stats.map(frame_clock::FrameClock::new);
            Ok(Box::new(app))
        })
    };
    match eframe::run_native(
        "atmc-lab",
        options(eframe::Renderer::Wgpu),
        make(opening.clone()),
    ) {
        Ok(()) => Ok(()),
        Err(e) => {
            note!("atmc-lab: the wgpu renderer failed ({e}); trying OpenGL");
            eframe::run_native("atmc-lab", options(eframe::Renderer::Glow), make(opening))
                .map_err(|e| anyhow::anyhow!("cannot open a window: {e}"))
        }
    }
}
