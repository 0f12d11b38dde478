//! The real window's frame rate, for `atmc-lab app --frame-stats SECONDS`: the intervals
//! between frames after a warm-up, as a software rasteriser under Xvfb delivers them (the
//! offscreen `bench --ui` adds a readback a window does not have, and leaves out presenting),
//! and where each frame's time went.

use std::time::Instant;

/// Seconds ignored at the start (shader compilation, first histograms).
const WARM_UP: f64 = 3.0;

/// One frame's time by phase, milliseconds, as the window measures it.
#[derive(Clone, Copy, Debug, Default)]
pub struct FramePhases {
    /// The view's `refresh`: taking the engine's latest state (histograms, readouts).
    pub refresh_ms: f64,
    /// The view's central area: composing the portraits, uploading their textures, laying
    /// out the plots.
    pub central_ms: f64,
    /// All of `AtmcApp::ui` (the two above, the menu, status bar and control panel).
    pub ui_ms: f64,
    /// eframe's CPU time of the frame (the UI, tessellation and the renderer's calls, not
    /// the swap), when the integration reports it.
    pub cpu_ms: Option<f64>,
}

/// Frame intervals of a window over a fixed time, and their phases.
pub struct FrameClock {
    opened: Instant,
    seconds: f64,
    last: Option<Instant>,
    intervals_ms: Vec<f64>,
    /// Per measured frame: the phases of the frame the interval ended with.
    phases: Vec<FramePhases>,
    /// The view's step when measuring began, and the latest.
    steps: Option<(u32, u32)>,
    renderer: &'static str,
}

impl FrameClock {
    /// A clock that measures `seconds` after the warm-up.
    pub fn new(seconds: f64) -> Self {
        Self {
            opened: Instant::now(),
            seconds,
            last: None,
            intervals_ms: Vec::new(),
            phases: Vec::new(),
            steps: None,
            renderer: "unknown",
        }
    }

    /// Names the renderer drawing the window, for the report.
    pub fn set_renderer(&mut self, name: &'static str) {
        self.renderer = name;
    }

    /// Records a frame with its phases and the view's step; once the time is up, the report
    /// (one JSON line).
    pub fn tick(&mut self, phases: FramePhases, step: u32) -> Option<String> {
        let now = Instant::now();
        let since = now.duration_since(self.opened).as_secs_f64();
        if since < WARM_UP {
            return None;
        }
        if let Some(last) = self.last {
            self.intervals_ms
                .push(1e3 * now.duration_since(last).as_secs_f64());
            self.phases.push(phases);
        }
        self.last = Some(now);
        let first = self.steps.map_or(step, |(first, _)| first);
        self.steps = Some((first, step));
        (since >= WARM_UP + self.seconds && !self.intervals_ms.is_empty()).then(|| self.report())
    }

    fn report(&self) -> String {
        let total: f64 = self.intervals_ms.iter().sum();
        let interval = Summary::of(self.intervals_ms.iter().copied());
        let phase = |f: &dyn Fn(&FramePhases) -> Option<f64>| {
            Summary::of(self.phases.iter().filter_map(f)).json()
        };
        // eframe reports a frame's CPU time one frame late: frame i's interval ends with
        // frame i's UI, and its CPU time arrives with frame i + 1.
        let cpu_of = |i: usize| self.phases.get(i + 1).and_then(|p| p.cpu_ms);
        let paint: Vec<f64> = (0..self.phases.len())
            .filter_map(|i| Some((cpu_of(i)? - self.phases[i].ui_ms).max(0.0)))
            .collect();
        let present: Vec<f64> = (0..self.phases.len())
            .filter_map(|i| Some((self.intervals_ms.get(i + 1)? - cpu_of(i)?).max(0.0)))
            .collect();
        let steps = self
            .steps
            .map_or(0, |(first, last)| last.saturating_sub(first));
        serde_json::json!({
            "frames": self.intervals_ms.len(),
            "frames_per_s": 1e3 * self.intervals_ms.len() as f64 / total,
            "frame_ms": { "p50": interval.p50, "p90": interval.p90, "max": interval.max },
            "renderer": self.renderer,
            "engine_steps_per_s": 1e3 * f64::from(steps) / total,
            "phases_ms": {
                "refresh": phase(&|p| Some(p.refresh_ms)),
                "central": phase(&|p| Some(p.central_ms)),
                "ui": phase(&|p| Some(p.ui_ms)),
                "tessellate_and_paint": Summary::of(paint.into_iter()).json(),
                "present": Summary::of(present.into_iter()).json(),
            },
            "phases_note": "ui contains refresh and central; tessellate_and_paint is eframe's CPU time of the frame less ui; present is the rest of the interval (the swap: a software rasteriser's drawing, and waiting)",
        })
        .to_string()
    }
}

/// Median, 90th percentile, maximum and mean of a set of milliseconds.
struct Summary {
    p50: f64,
    p90: f64,
    max: f64,
    mean: f64,
}

impl Summary {
    fn of(values: impl Iterator<Item = f64>) -> Self {
        let mut v: Vec<f64> = values.collect();
        if v.is_empty() {
            return Self {
                p50: f64::NAN,
                p90: f64::NAN,
                max: f64::NAN,
                mean: f64::NAN,
            };
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[(q * (v.len() - 1) as f64).round() as usize];
        Self {
            p50: at(0.5),
            p90: at(0.9),
            max: at(1.0),
            mean: v.iter().sum::<f64>() / v.len() as f64,
        }
    }

    /// Missing values (a renderer that reports no CPU time) become `null`.
    fn json(&self) -> serde_json::Value {
        let n = |x: f64| x.is_finite().then_some(x);
        serde_json::json!({ "p50": n(self.p50), "p90": n(self.p90), "max": n(self.max), "mean": n(self.mean) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phases(ui_ms: f64, cpu_ms: f64) -> FramePhases {
        FramePhases {
            refresh_ms: 1.0,
            central_ms: ui_ms - 2.0,
            ui_ms,
            cpu_ms: Some(cpu_ms),
        }
    }

    #[test]
    fn the_report_reads_the_intervals_and_their_phases() {
        let mut c = FrameClock::new(1.0);
        c.intervals_ms = vec![10.0, 20.0, 30.0, 40.0];
        // Frame i's CPU time arrives with frame i + 1: 5, 8, 12 ms for frames 0, 1, 2.
        c.phases = vec![
            phases(4.0, 99.0),
            phases(6.0, 5.0),
            phases(7.0, 8.0),
            phases(9.0, 12.0),
        ];
        c.steps = Some((100, 200));
        c.set_renderer("glow");
        let r: serde_json::Value = serde_json::from_str(&c.report()).unwrap();
        assert_eq!(r["frames"], 4);
        assert_eq!(r["frames_per_s"], 40.0);
        assert_eq!(r["frame_ms"]["max"], 40.0);
        assert_eq!(r["renderer"], "glow");
        assert_eq!(r["engine_steps_per_s"], 1000.0);
        let p = &r["phases_ms"];
        assert_eq!(p["ui"]["mean"], 6.5);
        assert_eq!(p["refresh"]["p50"], 1.0);
        // Paint: 5 − 4, 8 − 6, 12 − 7; present: 20 − 5, 30 − 8, 40 − 12.
        assert_eq!(p["tessellate_and_paint"]["mean"], 8.0 / 3.0);
        assert_eq!(p["present"]["p50"], 22.0);
        assert_eq!(p["present"]["max"], 28.0);
        let quiet = FrameClock::new(1.0);
        assert!(Summary::of(quiet.intervals_ms.iter().copied()).json()["p50"].is_null());
    }

    #[test]
    fn nothing_is_reported_while_warming_up() {
        let mut c = FrameClock::new(1.0);
        assert!(c.tick(FramePhases::default(), 0).is_none());
        assert!(c.intervals_ms.is_empty());
    }
}
