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
    pub challenge: Option<Box<ChallengeSpec>>,
    /// Steps the handout's picture of this lesson is taken after (the preset's own steps,
    /// capped by `handout --max-steps`, when absent).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present",
        serialize_with = "inner"
    )]
    pub handout_steps: Option<u32>,
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
            && self.handout_steps.is_none()
    }

    /// Checks the challenge, if any (a lesson with a challenge needs a text to go with it).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if let Some(n) = self.handout_steps {
            crate::math::ranges::STEPS
                .check(f64::from(n))
                .map_err(|m| ("handout_steps", m))?;
        }
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

    /// Refuses a challenge on a preset whose runs the challenges cannot judge yet (the
    /// sphere): they are judged on 2-D presets, comparisons and (divergence only) networks.
    pub fn only_judged_on_2d(&self) -> Result<(), (&'static str, String)> {
        match self.challenge {
            Some(_) => Err((
                "challenge",
                "challenges are judged on 2-D presets (Preset), comparisons and networks \
                 (MlpPreset) only"
                    .into(),
            )),
            None => Ok(()),
        }
    }

    /// Refuses a challenge on networks other than a divergence goal: a network's run has no
    /// exact samples to measure a distance against and no modes to count.
    pub fn only_divergence_on_networks(&self) -> Result<(), (&'static str, String)> {
        match self.challenge.as_deref() {
            Some(c) if !matches!(c.goal, crate::math::challenge::Goal::Diverge { .. }) => Err((
                "challenge",
                "on networks (MlpPreset) a challenge's goal is Diverge(share: …): they have no \
                 exact samples to measure a distance against and no modes to count"
                    .into(),
            )),
            Some(c) if c.column != 0 => Err((
                "challenge",
                "a network preset has one run: the challenge's column is 0".into(),
            )),
            _ => Ok(()),
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

    /// Checks the number of columns and every column's sampler and schedule (a column's own
    /// schedule replaces the base's, so the base's check does not cover it).
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
            if let Some(schedule) = &c.schedule {
                schedule
                    .validate()
                    .map_err(|(field, m)| (field, format!("column '{}': {m}", c.label)))?;
            }
        }
        self.story.validate()?;
        // The challenge is judged on the base's target.
        if let Some(c) = &self.story.challenge {
            let target = &self.base.target;
            c.check_target(target.countable_modes(), target.name())?;
        }
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

/// A lecture: lessons stepped through in order, each a preset with a story. Every step is
/// resolved and checked when the lecture is read, so a bad step is refused before anything
/// runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Lecture {
    /// Title.
    pub name: String,
    /// What the lecture is about.
    pub description: String,
    /// The lessons, in order.
    pub steps: Vec<Step>,
}

/// One lesson of a lecture: where it came from and its preset.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// As written: a shipped preset's name, a file path (relative to the lecture file), or
    /// `inline preset k` for one written into the lecture.
    pub source: String,
    /// The lesson's preset.
    pub preset: super::AnyPreset,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

/// The lecture file as written: its steps kept as raw RON, each resolved on its own.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename = "Lecture")]
struct LectureFile<'a> {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(borrow)]
    steps: Vec<&'a ron::value::RawValue>,
}

/// The file a lecture folder is read from.
pub const LECTURE_FILE: &str = "lecture.ron";

impl Lecture {
    /// Parses a shipped lecture's RON text: its steps name shipped presets or hold them
    /// inline. `origin` names the source in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Lecture, PresetError> {
        Self::parse_in(text, origin, None)
    }

    /// Parses a lecture's RON text; a step that is a path is read relative to `folder` (the
    /// lecture file's), and a file there wins over a shipped preset of the same name. Steps
    /// and data files stay inside `folder`: an absolute path, a `..` out of it or a link to a
    /// place outside is refused, so a lecture shared with a class reads nothing else.
    pub fn parse_in(
        text: &str,
        origin: &str,
        folder: Option<&std::path::Path>,
    ) -> Result<Lecture, PresetError> {
        let text = super::without_bom(text);
        let at = |offset: usize, message: String| {
            let (line, column) = line_column(text, offset);
            PresetError {
                file: origin.to_owned(),
                line,
                column,
                message,
            }
        };
        let file: LectureFile = parse_ron(text, origin, |l: &LectureFile| {
            if l.steps.is_empty() {
                Err((
                    "steps",
                    "a lecture needs at least one step (a lesson)".into(),
                ))
            } else {
                Ok(())
            }
        })?;
        let mut steps = Vec::with_capacity(file.steps.len());
        for (k, raw) in file.steps.iter().enumerate() {
            let raw = raw.trim();
            let ron = raw.get_ron();
            // Where the step starts in the lecture text: the raw value borrows from it.
            let offset = (ron.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
            let (source, preset) = if let Ok(name) = raw.into_rust::<String>() {
                let preset = resolve_step(&name, folder).map_err(|m| at(offset, m))??;
                (name, preset)
            } else {
                // An inline preset: its problems are located in the lecture file.
                let in_lecture = |e: PresetError| {
                    let (line, column) = line_column(text, offset);
                    PresetError {
                        line: line + e.line - 1,
                        column: if e.line == 1 {
                            column + e.column - 1
                        } else {
                            e.column
                        },
                        ..e
                    }
                };
                let mut preset = super::AnyPreset::parse(ron, origin).map_err(in_lecture)?;
                if let Some(folder) = folder {
                    let place = super::data::Place::Lecture {
                        folder,
                        sub: std::path::Path::new(""),
                    };
                    super::data::resolve(&mut preset, place).map_err(|message| {
                        let (line, column) = super::locate(ron, "path");
                        in_lecture(PresetError {
                            file: origin.to_owned(),
                            line,
                            column,
                            message,
                        })
                    })?;
                }
                (format!("inline preset {}", k + 1), preset)
            };
            let has_text = preset.story().is_some_and(|s| !s.text.trim().is_empty());
            if !has_text {
                return Err(at(
                    offset,
                    format!(
                        "lesson {} ({source}) has no text: its preset needs story: (text: \"…\")",
                        k + 1
                    ),
                ));
            }
            steps.push(Step { source, preset });
        }
        Ok(Lecture {
            name: file.name,
            description: file.description,
            steps,
        })
    }

    /// Reads a lecture: a shipped one by name (`atmc`), a lecture file, or a lecture folder
    /// (a folder holding `lecture.ron` with its presets and data beside it).
    pub fn load(path: &str) -> Result<Lecture, PresetError> {
        let p = std::path::Path::new(path);
        if !p.exists()
            && let Some((name, text)) = SHIPPED_LECTURES.iter().find(|(n, _)| *n == path)
        {
            return Lecture::parse(text, &format!("presets/lectures/{name}.ron"));
        }
        let file = if p.is_dir() {
            p.join(LECTURE_FILE)
        } else {
            p.to_owned()
        };
        let text = crate::fsutil::read_text(&file, crate::fsutil::TEXT_FILES).map_err(|e| {
            PresetError {
                file: file.display().to_string(),
                line: 1,
                column: 1,
                message: format!(
                    "cannot read the lecture: {} (a lecture is a .ron file, a folder holding \
                     {LECTURE_FILE}, or a shipped lecture: {})",
                    e.reason(),
                    SHIPPED_LECTURES
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        })?;
        let folder = file.parent().map(std::path::Path::to_owned);
        Lecture::parse_in(&text, &file.display().to_string(), folder.as_deref())
    }
}

/// The preset a step names: a file inside the lecture's folder when one exists there, else a
/// shipped preset. The outer error is the step's own (located at the step by the caller), the
/// inner one a problem inside the preset file (located in that file). A step that leads out
/// of the folder is refused by its name alone: nothing outside is read, so no message can
/// quote what a file there holds.
fn resolve_step(
    name: &str,
    folder: Option<&std::path::Path>,
) -> Result<Result<super::AnyPreset, PresetError>, String> {
    if let Some(folder) = folder {
        let file = crate::fsutil::inside(folder, name).map_err(|e| {
            format!("step {e} (a lecture's steps are shipped presets or files in its folder)")
        })?;
        // A device or a pipe is refused by the reader, by what it is; a folder is no step.
        if std::fs::metadata(&file).is_ok_and(|m| !m.is_dir()) {
            let sub = std::path::Path::new(name)
                .parent()
                .unwrap_or(std::path::Path::new(""));
            return Ok(load_step(&file, folder, sub));
        }
    }
    // The shipped preset itself: a file of that name in the working directory is not the
    // lecture's to read.
    if let Some((_, text)) = super::SHIPPED.iter().find(|(n, _)| *n == name) {
        return Ok(super::AnyPreset::parse(
            text,
            &format!("presets/{name}.ron"),
        ));
    }
    let shown = crate::math::ranges::printable(name);
    let looked = match folder {
        Some(f) => format!("no file {} and ", f.join(name).display()),
        None => String::new(),
    };
    Err(format!(
        "step \"{shown}\": {looked}no shipped preset of that name ({})",
        super::shipped_names(name)
    ))
}

/// A step's preset file `file` in the lecture's folder `folder`, at `sub` in it: read within
/// the limit of preset files, its data path resolved inside the folder.
fn load_step(
    file: &std::path::Path,
    folder: &std::path::Path,
    sub: &std::path::Path,
) -> Result<super::AnyPreset, PresetError> {
    let origin = file.display().to_string();
    let text =
        crate::fsutil::read_text(file, crate::fsutil::TEXT_FILES).map_err(|e| PresetError {
            file: origin.clone(),
            line: 1,
            column: 1,
            message: format!("cannot read the step: {}", e.reason()),
        })?;
    let mut preset = super::AnyPreset::parse(&text, &origin)?;
    super::data::resolve(&mut preset, super::data::Place::Lecture { folder, sub }).map_err(
        |message| {
            let (line, column) = super::locate(&text, "path");
            PresetError {
                file: origin.clone(),
                line,
                column,
                message,
            }
        },
    )?;
    Ok(preset)
}

/// Line and column (1-based) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    (line, column)
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
            && let Some(c) = after
                .chars()
                .next()
                .filter(|c| !c.is_whitespace() && *c != '{')
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
    use super::{Lecture, Script, script_runs};

    fn refused(text: &str) -> String {
        Lecture::parse(text, "l.ron").unwrap_err().to_string()
    }

    #[test]
    fn a_bad_lecture_is_refused_at_its_line_and_column() {
        // An empty lecture.
        let e = refused("Lecture(\n  name: \"x\",\n  steps: [],\n)");
        assert!(
            e.starts_with("l.ron:3:3: ") && e.contains("at least one step"),
            "{e}"
        );
        // A preset that is not shipped.
        let e = refused("Lecture(name: \"x\", steps: [\n    \"lesson-langevin\",\n    \"nope\"])");
        assert!(
            e.starts_with("l.ron:3:5: ") && e.contains("\"nope\""),
            "{e}"
        );
        // A lesson without text: a shipped preset that has no story.
        let e = refused("Lecture(name: \"x\", steps: [\"default\"])");
        assert!(
            e.starts_with("l.ron:1:28: ") && e.contains("no text"),
            "{e}"
        );
        // A mistake inside an inline preset is located in the lecture.
        let e = refused(
            "Lecture(name: \"x\", steps: [\n  Preset(\n    story: (text: \"t\"),\n    \
             sampler: (kind: Atmc, h: -1.0),\n    target: Gaussian())])",
        );
        assert!(e.starts_with("l.ron:4:") && e.contains("step size"), "{e}");
        // An unknown field of the lecture itself.
        let e = refused("Lecture(name: \"x\", stepz: [])");
        assert!(e.starts_with("l.ron:1:"), "{e}");
    }

    #[test]
    fn a_lecture_folder_reads_names_files_and_inline_presets() {
        let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/lectures/small");
        let l = Lecture::load(folder).unwrap_or_else(|e| panic!("{e}"));
        let sources: Vec<_> = l.steps.iter().map(|s| s.source.as_str()).collect();
        assert_eq!(
            sources,
            ["lesson-langevin", "presets/step.ron", "inline preset 3"]
        );
        assert!(l.steps.iter().all(|s| s.preset.story().is_some()));
        // The same lecture as a file; a missing file is named.
        assert_eq!(Lecture::load(&format!("{folder}/lecture.ron")).unwrap(), l);
        let e = Lecture::load(&format!("{folder}/none.ron")).unwrap_err();
        assert!(e.to_string().contains("cannot read the lecture"), "{e}");
        assert_eq!(Lecture::load("atmc").unwrap().steps.len(), 10);
    }

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
