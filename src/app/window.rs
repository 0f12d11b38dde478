//! The desktop window: eframe drives [`AtmcApp`], drawn with OpenGL (glow) or wgpu, each
//! the other's fallback.

use super::{AtmcApp, Folders, Opening, frame_clock};
use crate::engine::BackendChoice;

impl eframe::App for AtmcApp {
    fn ui(&mut self, ui: &mut egui::Ui, frame: &mut eframe::Frame) {
        let start = std::time::Instant::now();
        AtmcApp::ui(self, ui);
        let Some(clock) = self.frame_clock.as_mut() else {
            return;
        };
        clock.set_renderer(if frame.gl().is_some() { "glow" } else { "wgpu" });
        let phases = frame_clock::FramePhases {
            ui_ms: 1e3 * start.elapsed().as_secs_f64(),
            cpu_ms: frame.info().cpu_usage.map(|s| 1e3 * f64::from(s)),
            ..self.phases
        };
        let step = self.views[self.tab.index()]
            .as_deref()
            .map_or(0, |view| view.step());
        if let Some(report) = clock.tick(phases, step) {
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

/// Which renderer draws the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RendererChoice {
    /// wgpu on a hardware GPU; OpenGL where wgpu's adapter is a software rasteriser.
    Auto,
    /// OpenGL through glow.
    Glow,
    /// wgpu (Vulkan, Metal or DX12).
    Wgpu,
}

impl RendererChoice {
    /// The renderer tried first; the other is the fallback. On a machine without a GPU,
    /// OpenGL through Mesa's llvmpipe draws this UI about twice as fast as wgpu on lavapipe
    /// (measured under Xvfb at 1280×720, 2 cores: the 2-D view at 10⁵ chains 60–62 frames/s
    /// against 29–30, two-moons 67–89 against 27), so `auto` asks wgpu for its adapter first.
    fn first(self) -> eframe::Renderer {
        match self {
            Self::Glow => eframe::Renderer::Glow,
            Self::Wgpu => eframe::Renderer::Wgpu,
            Self::Auto if crate::engine::only_software_gpu() => eframe::Renderer::Glow,
            Self::Auto => eframe::Renderer::Wgpu,
        }
    }
}

/// Opens the desktop app on `preset` with `renderer` (the other one when it cannot start).
/// `frame_stats`: measure the frame rate for that many seconds, print it and close.
pub fn run_native(
    opening: Opening,
    backend: BackendChoice,
    renderer: RendererChoice,
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
    let first = renderer.first();
    let second = match first {
        eframe::Renderer::Glow => eframe::Renderer::Wgpu,
        _ => eframe::Renderer::Glow,
    };
    match eframe::run_native("atmc-lab", options(first), make(opening.clone())) {
        Ok(()) => Ok(()),
        Err(e) => {
            note!("atmc-lab: the {first} renderer failed ({e}); trying {second}");
            eframe::run_native("atmc-lab", options(second), make(opening))
                .map_err(|e| anyhow::anyhow!("cannot open a window: {e}"))
        }
    }
}
