//! Lessons for a classroom: a preset can carry a [`Story`] (one paragraph and what to look
//! at), a [`Comparison`] runs two to four samplers side by side on the same target, seed and
//! gradient noise, and a [`Lecture`] is a list of such presets stepped through in order.

use super::{Preset, PresetError, parse_ron, pretty_ron};
use crate::math::SamplerSpec;
use crate::math::challenge::ChallengeSpec;
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
    /// Something for the students to do and check: a goal with a budget of steps, judged by
    /// the diagnostics, with a hint after a failed attempt.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present",
        serialize_with = "inner"
    )]
    pub challenge: Option<ChallengeSpec>,
}

/// Writes an optional field as its value, the way [`present`] reads it.
fn inner<S: serde::Serializer, T: Serialize>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) => x.serialize(s),
        None => s.serialize_none(),
    }
}

/// An optional field written without `Some(…)`: a lecturer writes `challenge: (…)`.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl Story {
    /// Whether there is no lesson (no text and nothing to look at).
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
            && self.look_at.is_empty()
            && self.hide.is_empty()
            && self.challenge.is_none()
    }

    /// Checks the challenge, if any (a lesson with a challenge needs a text to go with it).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if let Some(c) = &self.challenge {
            if self.text.trim().is_empty() {
                return Err((
                    "challenge",
                    "a lesson with a challenge needs a text (story: (text: \"…\", …))".into(),
                ));
            }
            c.validate()?;
        }
        Ok(())
    }

    /// Refuses a challenge on a preset whose runs the challenges cannot judge yet (a network,
    /// the sphere): they are judged on 2-D presets and comparisons.
    pub fn only_judged_on_2d(&self) -> Result<(), (&'static str, String)> {
        match self.challenge {
            Some(_) => Err((
                "challenge",
                "challenges are judged on 2-D presets (Preset) and comparisons only".into(),
            )),
            None => Ok(()),
        }
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
        self.story.validate()?;
        if let Some(c) = &self.story.challenge
            && c.column >= self.columns.len()
        {
            return Err((
                "column",
                format!(
                    "the challenge judges column {} (0-based), the comparison has {}",
                    c.column,
                    self.columns.len()
                ),
            ));
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
pub const SHIPPED_LECTURES: &[(&str, &str)] =
    &[("atmc", include_str!("../../presets/lectures/atmc.ron"))];

/// How a run of lesson text sits on the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Script {
    /// On the line.
    Normal,
    /// Raised: `^{…}` or `^x`.
    Super,
    /// Lowered: `_{…}`.
    Sub,
}

/// Splits lesson text into runs on, above and below the line: `^{…}` raises what the braces
/// hold, `^x` one character, `_{…}` lowers what the braces hold (a lone `_` stays, as in
/// `friction_sign`). Unclosed braces are kept as written. The app draws the runs with a
/// smaller raised or lowered font, the handout as `<sup>` and `<sub>`.
pub fn script_runs(text: &str) -> Vec<(String, Script)> {
    let mut runs: Vec<(String, Script)> = Vec::new();
    let mut push = |s: &str, script: Script| {
        if s.is_empty() {
            return;
        }
        match runs.last_mut() {
            Some((last, k)) if *k == script => last.push_str(s),
            _ => runs.push((s.to_owned(), script)),
        }
    };
    let mut rest = text;
    while let Some(i) = rest.find(['^', '_']) {
        let (before, at) = rest.split_at(i);
        push(before, Script::Normal);
        let script = if at.starts_with('^') {
            Script::Super
        } else {
            Script::Sub
        };
        let after = &at[1..];
        if let Some(inner) = after.strip_prefix('{')
            && let Some(end) = inner.find('}')
        {
            push(&inner[..end], script);
            rest = &inner[end + 1..];
        } else if script == Script::Super
            && let Some(c) = after.chars().next().filter(|c| !c.is_whitespace() && *c != '{')
        {
            push(&after[..c.len_utf8()], script);
            rest = &after[c.len_utf8()..];
        } else {
            push(&at[..1], Script::Normal);
            rest = after;
        }
    }
    push(rest, Script::Normal);
    runs
}

#[cfg(test)]
mod tests {
    use super::{Script, script_runs};

    #[test]
    fn scripts_are_raised_and_lowered_and_the_rest_stays() {
        let runs = script_runs("e^{+βh}, x_{k+1}, p^2, friction_sign, a^{open");
        let expect = [
            ("e", Script::Normal),
            ("+βh", Script::Super),
            (", x", Script::Normal),
            ("k+1", Script::Sub),
            (", p", Script::Normal),
            ("2", Script::Super),
            (", friction_sign, a^{open", Script::Normal),
        ];
        let got: Vec<_> = runs.iter().map(|(s, k)| (s.as_str(), *k)).collect();
        assert_eq!(got, expect);
        assert_eq!(script_runs(""), vec![]);
        assert_eq!(script_runs("x^"), vec![("x^".to_owned(), Script::Normal)]);
    }
}
