//! Judges a run against a lesson's challenge ([`ChallengeSpec`]): what was measured, the
//! goal, and whether the run met it. Pure: the runner measures, the app and the handout show.

use crate::math::challenge::{ChallengeSpec, Goal};
use crate::math::ranges::short_number;

/// What an attempt measured: the figures every kind of goal is judged on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attempt {
    /// Steps run.
    pub steps: u32,
    /// The step size h the attempt ran at.
    pub h: f64,
    /// Fraction of all chains diverged at the end.
    pub diverged_fraction: f64,
    /// Energy distance to exact samples over the second half of the run.
    pub energy_distance: f64,
    /// Its exact-sample baseline (what a perfect sampler scores).
    pub energy_distance_baseline: f64,
    /// Distinct modes each tracked chain visited (empty on a target without modes).
    pub modes_per_chain: Vec<u32>,
}

/// The verdict on an attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Whether the goal was met.
    pub passed: bool,
    /// What was measured, in words and numbers ("93% of the chains diverged").
    pub measured: String,
    /// The goal, in words and numbers ("goal: at least 90%").
    pub goal: String,
}

impl Verdict {
    /// One line: ✔ or ✖, the measured value and the goal.
    pub fn line(&self) -> String {
        format!(
            "{} {} ({})",
            if self.passed { "✔" } else { "✖" },
            self.measured,
            self.goal
        )
    }
}

fn percent(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

/// The goal and budget in words, for an exercise sheet ("at least 90% of the chains
/// diverge within 400 steps").
pub fn goal_text(challenge: &ChallengeSpec) -> String {
    let within = format!("within {} steps", challenge.steps);
    match &challenge.goal {
        Goal::Diverge { share } => {
            format!(
                "at least {} of the chains diverge {within}",
                percent(*share)
            )
        }
        Goal::ModesPerChain { modes, share } => format!(
            "at least {} of the chains each visit ≥ {modes} modes {within}",
            percent(*share)
        ),
        Goal::LargestStep {
            ratio,
            reference,
            tolerance,
            sweep,
        } => format!(
            "the energy distance within {ratio}× its exact-sample baseline over {} steps, at \
             the largest such h (judged against {}{} within ±{})",
            challenge.steps,
            short_number(*reference),
            if sweep.is_empty() {
                String::new()
            } else {
                format!(", from the sweep {sweep},")
            },
            percent(*tolerance)
        ),
    }
}

/// Judges `attempt` against `challenge`'s goal. An attempt of fewer steps than the budget
/// is judged as it stands (the app checks at the budget).
pub fn judge(challenge: &ChallengeSpec, attempt: &Attempt) -> Verdict {
    match challenge.goal {
        Goal::Diverge { share } => Verdict {
            passed: attempt.diverged_fraction >= share,
            measured: format!(
                "{} of the chains diverged within {} steps",
                percent(attempt.diverged_fraction),
                attempt.steps
            ),
            goal: format!("goal: at least {}", percent(share)),
        },
        Goal::ModesPerChain { modes, share } => {
            let n = attempt.modes_per_chain.len();
            let reached = attempt
                .modes_per_chain
                .iter()
                .filter(|&&m| m >= modes)
                .count();
            let fraction = if n == 0 {
                0.0
            } else {
                reached as f64 / n as f64
            };
            let mean = if n == 0 {
                0.0
            } else {
                attempt
                    .modes_per_chain
                    .iter()
                    .map(|&m| f64::from(m))
                    .sum::<f64>()
                    / n as f64
            };
            Verdict {
                passed: n > 0 && fraction >= share,
                measured: if n == 0 {
                    "the target has no modes to visit".to_owned()
                } else {
                    format!(
                        "{} of the chains visited ≥ {modes} modes each (a chain visited {mean:.1} \
                         on average) within {} steps",
                        percent(fraction),
                        attempt.steps
                    )
                },
                goal: format!("goal: at least {} of the chains", percent(share)),
            }
        }
        Goal::LargestStep {
            ratio,
            reference,
            tolerance,
            ref sweep,
        } => {
            let times = attempt.energy_distance / attempt.energy_distance_baseline;
            let within = times.is_finite() && times <= ratio;
            let near = (attempt.h / reference - 1.0).abs() <= tolerance;
            let source = if sweep.is_empty() {
                String::new()
            } else {
                format!(", from the sweep {sweep}")
            };
            Verdict {
                passed: within && near,
                measured: format!(
                    "h = {}: energy distance {}× its exact-sample baseline{}",
                    short_number(attempt.h),
                    if times.is_finite() {
                        format!("{times:.2}")
                    } else {
                        "∞".to_owned()
                    },
                    match (within, near) {
                        (true, false) if attempt.h < reference => {
                            " — within the bound, but a larger h also is".to_owned()
                        }
                        (true, false) => " — within the bound, but h is off the answer".to_owned(),
                        _ => String::new(),
                    }
                ),
                goal: format!(
                    "goal: ≤ {ratio}× at the largest such h, {} ± {}{source}",
                    short_number(reference),
                    percent(tolerance)
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(goal: Goal) -> ChallengeSpec {
        ChallengeSpec {
            task: "t".into(),
            goal,
            steps: 400,
            hint: "h".into(),
            column: 0,
        }
    }

    #[test]
    fn each_goal_passes_and_fails_on_its_measurement() {
        let diverge = spec(Goal::Diverge { share: 0.9 });
        let mut a = Attempt {
            steps: 400,
            diverged_fraction: 0.95,
            ..Attempt::default()
        };
        assert!(judge(&diverge, &a).passed);
        a.diverged_fraction = 0.0;
        let v = judge(&diverge, &a);
        assert!(!v.passed && v.line().starts_with('✖'), "{}", v.line());

        let modes = spec(Goal::ModesPerChain {
            modes: 20,
            share: 0.5,
        });
        a.modes_per_chain = vec![25, 21, 3, 2];
        assert!(judge(&modes, &a).passed);
        a.modes_per_chain = vec![25, 19, 3, 2];
        assert!(!judge(&modes, &a).passed);
        a.modes_per_chain.clear();
        assert!(!judge(&modes, &a).passed);

        let step = spec(Goal::LargestStep {
            ratio: 2.0,
            reference: 0.1,
            tolerance: 0.25,
            sweep: "s".into(),
        });
        a.energy_distance_baseline = 1.0;
        a.energy_distance = 1.5;
        a.h = 0.11;
        assert!(judge(&step, &a).passed);
        // A tiny h is within the bound but not the answer.
        a.h = 0.01;
        let v = judge(&step, &a);
        assert!(!v.passed && v.measured.contains("larger h"), "{}", v.line());
        // At the answer but out of the bound.
        a.h = 0.1;
        a.energy_distance = 2.5;
        assert!(!judge(&step, &a).passed);
        a.energy_distance = f64::NAN;
        assert!(!judge(&step, &a).passed);
    }
}
