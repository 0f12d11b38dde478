//! A lesson's challenge as written in RON: a goal, a budget of steps, a hint. The spec lives
//! here, beside the other specs, because both the presets (which carry it) and the
//! diagnostics (which judge a run against it) read it, and neither may use the other.

use super::ranges::{self, Range};
use serde::{Deserialize, Serialize};

/// What a run must achieve within the challenge's budget of steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Goal {
    /// At least `share` (0–1) of the chains diverge within the budget: "find the friction sign
    /// at which the chains explode".
    Diverge {
        /// Fraction of all chains that must have diverged.
        share: f64,
    },
    /// At least `share` (0–1) of the tracked chains each visit at least `modes` distinct modes
    /// of a mixture target (per chain, not the ensemble's coverage).
    ModesPerChain {
        /// Distinct modes each chain must visit.
        modes: u32,
        /// Fraction of the tracked chains that must do so.
        #[serde(default = "all")]
        share: f64,
    },
    /// The largest step size h at which the energy distance to exact samples stays within
    /// `ratio` × the exact-sample baseline: passes when the distance is within that bound and
    /// h is within `tolerance` (relative) of `reference`, the answer a shipped sweep found, so
    /// that a tiny h does not pass.
    LargestStep {
        /// The bound on the energy distance, in multiples of its exact-sample baseline.
        ratio: f64,
        /// The reference answer for h.
        reference: f64,
        /// Relative tolerance around the reference (0.25: ±25%).
        tolerance: f64,
        /// Where the reference comes from (a shipped sweep's name), shown with the verdict.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        sweep: String,
    },
}

fn all() -> f64 {
    1.0
}

/// A challenge: a task in words, a goal judged by the diagnostics, a budget of steps and a
/// hint shown after a failed attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChallengeSpec {
    /// The task as the student reads it.
    pub task: String,
    /// What is measured and the bar it must reach.
    pub goal: Goal,
    /// The budget: an attempt runs the preset as the student set it for this many steps.
    pub steps: u32,
    /// Shown after a failed attempt.
    pub hint: String,
    /// In a comparison: the column judged (0-based).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub column: usize,
}

fn is_zero(k: &usize) -> bool {
    *k == 0
}

/// Fractions of chains.
const SHARE: Range = Range::closed_range("share", 0.0, 1.0);
/// Bounds in multiples of a baseline.
const RATIO: Range = Range::closed_range("ratio", 1.0, 1e6);
/// Relative tolerances.
const TOLERANCE: Range = Range::closed_range("tolerance", 0.0, 1.0);

impl ChallengeSpec {
    /// Checks the task, the hint, the budget and the goal's numbers. Returns the field to
    /// point at and the message.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.task.trim().is_empty() {
            return Err(("task", "a challenge needs a task (what to do)".into()));
        }
        if self.hint.trim().is_empty() {
            return Err((
                "hint",
                "a challenge needs a hint (shown after a failed attempt)".into(),
            ));
        }
        ranges::STEPS
            .check(f64::from(self.steps))
            .map_err(|m| ("steps", format!("challenge budget: {m}")))?;
        match self.goal {
            Goal::Diverge { share } => {
                SHARE.check(share).map_err(|m| ("share", m))?;
            }
            Goal::ModesPerChain { modes, share } => {
                SHARE.check(share).map_err(|m| ("share", m))?;
                Range::closed_range("modes", 1.0, 64.0)
                    .check(f64::from(modes))
                    .map_err(|m| ("modes", m))?;
            }
            Goal::LargestStep {
                ratio,
                reference,
                tolerance,
                ..
            } => {
                RATIO.check(ratio).map_err(|m| ("ratio", m))?;
                ranges::STEP_SIZE
                    .check(reference)
                    .map_err(|m| ("reference", format!("reference {m}")))?;
                TOLERANCE.check(tolerance).map_err(|m| ("tolerance", m))?;
            }
        }
        Ok(())
    }

    /// Checks the goal against the target it is judged on (`target` by name): a goal to visit
    /// modes needs a target whose modes the diagnostics count (`modes` of them, see
    /// `Target::modes`; `None`: it lists none), and at most that many per chain.
    pub fn check_target(
        &self,
        modes: Option<usize>,
        target: &str,
    ) -> Result<(), (&'static str, String)> {
        let Goal::ModesPerChain { modes: wanted, .. } = self.goal else {
            return Ok(());
        };
        match modes {
            None => Err((
                "goal",
                format!(
                    "ModesPerChain counts the visits of a mixture's listed modes, and the target \
                     {target} lists none (gmm25 lists its 25): the challenge could never pass. \
                     Use Diverge or LargestStep here, or the gmm25 target"
                ),
            )),
            Some(n) if wanted as usize > n => Err((
                "modes",
                format!(
                    "ModesPerChain asks each chain to visit {wanted} modes, and the target \
                     {target} has {n}: allowed 1 to {n}"
                ),
            )),
            Some(_) => Ok(()),
        }
    }
}
