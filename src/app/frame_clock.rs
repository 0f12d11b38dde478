//! The real window's frame rate, for `atmc-lab app --frame-stats SECONDS`: the intervals
//! between frames after a warm-up, as a software rasteriser under Xvfb delivers them (the
//! offscreen `bench --ui` adds a readback a window does not have, and leaves out presenting).

use std::time::Instant;

/// Seconds ignored at the start (shader compilation, first histograms).
const WARM_UP: f64 = 3.0;

/// Frame intervals of a window over a fixed time.
pub struct FrameClock {
    opened: Instant,
    seconds: f64,
    last: Option<Instant>,
    intervals_ms: Vec<f64>,
}

impl FrameClock {
    /// A clock that measures `seconds` after the warm-up.
    pub fn new(seconds: f64) -> Self {
        Self {
            opened: Instant::now(),
            seconds,
            last: None,
            intervals_ms: Vec::new(),
        }
    }

    /// Records a frame; once the time is up, the report (one JSON line).
    pub fn tick(&mut self) -> Option<String> {
        let now = Instant::now();
        let since = now.duration_since(self.opened).as_secs_f64();
        if since < WARM_UP {
            return None;
        }
        if let Some(last) = self.last {
            self.intervals_ms
                .push(1e3 * now.duration_since(last).as_secs_f64());
        }
        self.last = Some(now);
        (since >= WARM_UP + self.seconds && !self.intervals_ms.is_empty()).then(|| self.report())
    }

    fn report(&self) -> String {
        let mut v = self.intervals_ms.clone();
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
        let total: f64 = v.iter().sum();
        serde_json::json!({
            "frames": v.len(),
            "frames_per_s": 1e3 * v.len() as f64 / total,
            "frame_ms": { "p50": at(0.5), "p90": at(0.9), "max": at(1.0) },
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_reads_the_intervals() {
        let mut c = FrameClock::new(1.0);
        c.intervals_ms = vec![10.0, 20.0, 30.0, 40.0];
        let r: serde_json::Value = serde_json::from_str(&c.report()).unwrap();
        assert_eq!(r["frames"], 4);
        assert_eq!(r["frames_per_s"], 40.0);
        assert_eq!(r["frame_ms"]["max"], 40.0);
        assert!(c.tick().is_none(), "still warming up");
    }
}
