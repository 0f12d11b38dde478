//! The progress of a typed target's truth on stderr: `math::expr::truth` tells its observer,
//! the command line prints (a hard formula's truth can take a minute; silence looks like a
//! hang). No line in a command's first 2 s, then at most one a second, and the end of a truth
//! whose progress was shown.

use crate::math::expr::truth::{self, Stage, TruthProgress};
use std::io::Write;
use std::time::{Duration, Instant};

/// How long a command runs before the first progress line.
const QUIET: Duration = Duration::from_secs(2);
/// Least time between two lines.
const EVERY: Duration = Duration::from_secs(1);

/// Which progress reports become lines.
struct ProgressLines {
    /// When the command started.
    started: Instant,
    /// When the last line was printed.
    last: Option<Instant>,
    /// Whether the truth in progress had a line (its end gets one too).
    shown: bool,
}

impl ProgressLines {
    fn new(started: Instant) -> Self {
        Self {
            started,
            last: None,
            shown: false,
        }
    }

    /// The line for `progress` at `now`, if it gets one.
    fn line(&mut self, progress: &TruthProgress, now: Instant) -> Option<String> {
        if matches!(progress.stage, Stage::Finished { .. }) {
            return std::mem::take(&mut self.shown).then(|| progress.to_string());
        }
        let quiet = now.duration_since(self.started) < QUIET;
        let recent = self.last.is_some_and(|t| now.duration_since(t) < EVERY);
        if quiet || recent {
            return None;
        }
        self.last = Some(now);
        self.shown = true;
        Some(progress.to_string())
    }
}

/// From now on, prints the progress of the truth computations of this thread to stderr.
pub(super) fn print_to_stderr() {
    let mut lines = ProgressLines::new(Instant::now());
    truth::set_observer(Some(Box::new(move |progress| {
        if let Some(line) = lines.line(progress, Instant::now()) {
            // A full or closed stderr loses the line, never the command's result.
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    })));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(stage: Stage, evaluations: u64) -> TruthProgress {
        TruthProgress {
            target: "sin(x) + cos(y)".into(),
            stage,
            evaluations,
            limit: truth::WORK_LIMIT,
            elapsed: Duration::ZERO,
        }
    }

    /// Quiet for 2 s, then a line a second, and the end of a truth that had lines; a truth
    /// that ends unseen ends silently.
    #[test]
    fn lines_after_two_seconds_at_most_one_a_second() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut lines = ProgressLines::new(t0);
        let box_round = Stage::FindingBox {
            round: 3,
            bounds: [[-4.0, 12.0], [-4.0, 4.0]],
        };
        assert_eq!(lines.line(&report(box_round, 1), at(1900)), None);
        let first = lines.line(&report(box_round, 2_500_000), at(2100)).unwrap();
        assert!(
            first.contains("sin(x) + cos(y)")
                && first.contains("finding the box (round 3: θ₁ ∈ [-4, 12]")
                && first.contains("2.5 M of ")
                && first.contains("evaluations of U"),
            "{first}"
        );
        assert_eq!(lines.line(&report(Stage::Normalising, 3), at(2600)), None);
        assert!(
            lines
                .line(&report(Stage::Normalising, 4), at(3200))
                .is_some()
        );
        let end = report(Stage::Finished { accepted: false }, 5);
        assert!(lines.line(&end, at(3300)).unwrap().contains("refused"));
        // The next truth ends before its first line: nothing.
        let end = report(Stage::Finished { accepted: true }, 6);
        assert_eq!(lines.line(&end, at(3400)), None);
    }
}
