//! Lessons for a classroom: a preset can carry a [`Story`] (one paragraph and what to look
//! at), a [`Comparison`] runs two to four samplers side by side on the same target, seed and
//! gradient noise, and a [`Lecture`] is a list of such presets stepped through in order.

use super::{Preset, PresetError, parse_ron, pretty_ron};
use crate::math::SamplerSpec;
use serde::{Deserialize, Serialize};

/// A group of controls a lesson can hide to keep a projected screen simple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ControlGroup {
    /// Steps per frame and slow motion.
    Speed,
    /// Number of chains and the seed.
    Chains,
    /// The sampler and its parameters.
    Sampler,
    /// The target and its parameters.
    Target,
    /// The gradient-noise model.
    Noise,
    /// The step-size schedule.
    Schedule,
    /// View settings (coordinate, density scale, highlighted chains).
    View,
}

/// What a lesson says, shown beside the views in the lecture panel.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Story {
    /// One paragraph: what the lesson is about.
    pub text: String,
    /// What to look at on screen, one line each.
    #[serde(default)]
    pub look_at: Vec<String>,
    /// Control groups hidden while the lesson is shown.
    #[serde(default)]
    pub hide: Vec<ControlGroup>,
    /// The lesson starts running as it opens. By default it waits at step 0 for the
    /// lecturer (Space), so that its effect unfolds while the class watches.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub autoplay: bool,
}

impl Story {
    /// Whether there is no lesson (no text and nothing to look at).
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.look_at.is_empty() && self.hide.is_empty()
    }
}

/// One column of a comparison: a label, a sampler and, optionally, its own schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    /// Shown above the column.
    pub label: String,
    /// The sampler of this column (target, noise, seed are the base preset's).
    pub sampler: SamplerSpec,
    /// A step-size schedule of its own (the base's when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::math::ScheduleSpec>,
}

/// Two to four samplers on the same target, seed and gradient noise, run in lockstep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    /// Short title.
    #[serde(default)]
    pub name: String,
    /// What the comparison shows.
    #[serde(default)]
    pub description: String,
    /// The lesson, when the comparison is part of a lecture.
    #[serde(default, skip_serializing_if = "Story::is_empty")]
    pub story: Story,
    /// Target, noise, schedule, chains, steps, seed, initial state and view of every column;
    /// its own sampler is ignored.
    pub base: Preset,
    /// The samplers side by side.
    pub columns: Vec<Column>,
}

/// Columns a comparison may have.
pub const COMPARISON_COLUMNS: std::ops::RangeInclusive<usize> = 2..=4;

impl Comparison {
    /// Parses RON text; `origin` names the source in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Comparison, PresetError> {
        parse_ron(text, origin, Comparison::validate)
    }

    /// RON text that parses back to the same comparison.
    pub fn to_ron(&self) -> String {
        pretty_ron(self)
    }

    /// Checks the number of columns and every column's sampler.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !COMPARISON_COLUMNS.contains(&self.columns.len()) {
            return Err((
                "columns",
                format!(
                    "a comparison has 2 to 4 columns, this one has {}",
                    self.columns.len()
                ),
            ));
        }
        for c in &self.columns {
            c.sampler
                .validate()
                .map_err(|m| ("sampler", format!("column '{}': {m}", c.label)))?;
        }
        self.base.validate()
    }

    /// The side-by-side view's built-in comparison: the shipped `lesson-momentum`.
    pub fn default_comparison() -> Comparison {
        let (_, text) = super::SHIPPED
            .iter()
            .find(|(n, _)| *n == "lesson-momentum")
            .expect("lesson-momentum is shipped");
        Comparison::parse(text, "presets/lesson-momentum.ron")
            .expect("the shipped lesson-momentum parses")
    }

    /// The preset of column `k`: the base with that column's sampler.
    pub fn column_preset(&self, k: usize) -> Preset {
        let mut p = self.base.clone();
        p.sampler = self.columns[k].sampler;
        if let Some(schedule) = self.columns[k].schedule {
            p.schedule = schedule;
        }
        p.name = self.columns[k].label.clone();
        p.story = Story::default();
        p
    }
}

/// A lecture: presets (shipped names or files) stepped through in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lecture {
    /// Title.
    pub name: String,
    /// What the lecture is about.
    #[serde(default)]
    pub description: String,
    /// The lessons: shipped preset names or preset files.
    pub steps: Vec<String>,
}

impl Lecture {
    /// Parses RON text; `origin` names the source in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Lecture, PresetError> {
        parse_ron(text, origin, |l: &Lecture| {
            if l.steps.is_empty() {
                Err(("steps", "a lecture needs at least one step".into()))
            } else {
                Ok(())
            }
        })
    }
}

/// Lectures shipped in `presets/lectures/`, compiled in.
pub const SHIPPED_LECTURES: &[(&str, &str)] = &[
    ("atmc", include_str!("../../presets/lectures/atmc.ron")),
    (
        "cyclical",
        include_str!("../../presets/lectures/cyclical.ron"),
    ),
    (
        "free-energy",
        include_str!("../../presets/lectures/free-energy.ron"),
    ),
    (
        "bayesian-dl",
        include_str!("../../presets/lectures/bayesian-dl.ron"),
    ),
];
